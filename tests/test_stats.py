"""mixlinreg.stats: Wilson and Newcombe intervals against published values, the bootstrap fits
against plain references on the same draws, reproducibility from a seed, and the input errors."""

import doctest
import math

import numpy as np
import pytest
from scipy.stats import binomtest

import mixlinreg.stats as S
from mixlinreg.stats import (bootstrap, contraction_factor, linear_slope, loglog_slope,
                             newcombe_paired, paired_difference, semilog_slope, wilson_interval)

Z = 1.959963984540054  # the 97.5% normal quantile


def test_doctests():
    result = doctest.testmod(S, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0


# ------------------------------------------------------------------------------------ Wilson


def test_wilson_published_values():
    """Newcombe (1998), Two-sided confidence intervals for the single proportion, Statistics in
    Medicine 17, 857-872, method 3 (Wilson score without continuity correction), examples
    15/148, 0/20 and 1/29: (0.0624, 0.1605), (0, 0.1611), (0.0061, 0.1718) to 4 decimals, as
    transcribed in the test suite of the R package ratesci (tests/testthat/test3.R, "Single
    proportion, Newcombe examples"). 5/10: the textbook (0.2366, 0.7634)."""
    lo, hi = wilson_interval([15, 0, 1, 5], [148, 20, 29, 10])
    np.testing.assert_array_equal(np.round(lo, 4), [0.0624, 0.0, 0.0061, 0.2366])
    np.testing.assert_array_equal(np.round(hi, 4), [0.1605, 0.1611, 0.1718, 0.7634])


def test_wilson_is_exact_at_the_ends_and_matches_the_closed_form(global_random_seed):
    z2 = Z * Z
    lo, hi = wilson_interval([0, 10], [10, 10])
    assert lo[0] == 0.0 and hi[1] == 1.0  # exactly, not 1e-17 off
    np.testing.assert_allclose([hi[0], lo[1]], [z2 / (10 + z2), 10 / (10 + z2)], rtol=1e-12)
    # interior counts: the closed form (p + z^2/2n +- z sqrt(p q / n + z^2/4n^2)) / (1 + z^2/n);
    # 1e-12 relative: the two are the same formula arranged differently (a few ulps apart)
    rng = np.random.default_rng(global_random_seed)
    n = rng.integers(2, 500, 200)
    k = rng.integers(1, n)
    p = k / n
    c = (p + z2 / (2 * n)) / (1 + z2 / n)
    h = Z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo, hi = wilson_interval(k, n)
    np.testing.assert_allclose(lo, c - h, rtol=1e-12)
    np.testing.assert_allclose(hi, c + h, rtol=1e-12)


def test_wilson_broadcasts_and_scalars_stay_scalars():
    lo, hi = wilson_interval(3, 4)
    assert np.ndim(lo) == 0 and np.ndim(hi) == 0
    lo2, hi2 = wilson_interval(np.array([[3], [1]]), np.array([4, 8]))
    assert lo2.shape == (2, 2) and lo2[0, 0] == lo and hi2[0, 0] == hi
    ci = binomtest(1, 8).proportion_ci(0.9, method="wilson")
    lo3, hi3 = wilson_interval(1, 8, confidence=0.9)
    assert (lo3, hi3) == (ci.low, ci.high)


@pytest.mark.parametrize("call, match", [
    (lambda: wilson_interval(3, 2), r"successes must be in \[0, trials\], got successes=3 with "
                                    r"trials=2"),
    (lambda: wilson_interval(-1, 2), "successes must be integer counts >= 0, got -1"),
    (lambda: wilson_interval(1, 0), "trials must be integer counts >= 1, got 0"),
    (lambda: wilson_interval(1.5, 3), "successes must be integer counts >= 0, got 1.5"),
    (lambda: wilson_interval(True, 3), "successes must be integer counts"),
    (lambda: wilson_interval(1, 3, confidence=1.0), r"confidence must be in \(0, 1\), got 1.0"),
])
def test_wilson_errors_name_the_parameter_range_and_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------ Newcombe


def test_newcombe_published_worked_examples():
    """Newcombe's method 10 against published intervals (95%), each table as (a, b, c, d) =
    (both, first only, second only, neither):

    * (20, 12, 2, 16): Newcombe (1998), Improved confidence intervals for the difference between
      binomial proportions based on paired data, Statistics in Medicine 17, 2635-2650: method 10
      gives 0.0562 to 0.3292, method 8 (uncorrected phi) 0.0618 to 0.3242;
    * (1, 1, 7, 12): Fagerland, Lydersen and Laake (2014), Recommended tests and confidence
      intervals for paired binomial proportions, Statistics in Medicine 33, 2850-2875 (airway
      hyper-responsiveness, Bentur et al. 2009): -0.507 to -0.026;
    * (8, 3, 1, 2): the 2010 example of M.-L. Tang and co-authors (labelled "Tang(ML) RD 2010"
      in the source below): -0.1574 to 0.4136.

    The numbers are as transcribed, with these attributions, in the test suite of the R package
    ratesci by P. Laud (tests/testthat/test3.R, "paired methods examples"); the papers themselves
    were not available here to read."""
    d, lo, hi = newcombe_paired(20, 12, 2, 16)
    assert d == pytest.approx(0.2)
    assert (round(lo, 4), round(hi, 4)) == (0.0562, 0.3292)
    # the uncorrected phi (what figure2.paired_difference used) is Newcombe's method 8
    assert (round(lo, 4), round(hi, 4)) != (0.0618, 0.3242)
    d, lo, hi = newcombe_paired(1, 1, 7, 12)
    assert d == pytest.approx(-6 / 21)
    assert (round(lo, 3), round(hi, 3)) == (-0.507, -0.026)
    d, lo, hi = newcombe_paired(8, 3, 1, 2)
    assert (round(lo, 4), round(hi, 4)) == (-0.1574, 0.4136)


def _method8(a, b, c, d):
    """Square-and-add with the UNcorrected phi (Newcombe's method 8), written out independently;
    used only to show which published numbers each variant reproduces."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n)
    l2, u2 = wilson_interval(a + c, n)
    phi = (a * d - b * c) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    dl = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    du = math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return p1 - p2 - dl, p1 - p2 + du


def test_the_uncorrected_phi_gives_method_8_not_method_10():
    lo, hi = _method8(20, 12, 2, 16)
    assert (round(lo, 4), round(hi, 4)) == (0.0618, 0.3242)  # Newcombe's method 8 value
    lo, hi = _method8(1, 1, 7, 12)
    assert (round(lo, 3), round(hi, 3)) != (-0.507, -0.026)


def test_newcombe_limits_symmetry_and_vectorization():
    z2 = Z * Z
    # every pair succeeds twice: D = 0, half-width = 1 - Wilson lower bound of n/n = z^2/(n + z^2)
    d, lo, hi = newcombe_paired(40, 0, 0, 0)
    assert d == 0 and hi == pytest.approx(z2 / (40 + z2), rel=1e-12) and lo == -hi
    # swapping the two conditions mirrors the interval
    d1, lo1, hi1 = newcombe_paired(30, 9, 2, 19)
    d2, lo2, hi2 = newcombe_paired(30, 2, 9, 19)
    assert d1 == pytest.approx(7 / 60) and d2 == -d1
    assert lo2 == pytest.approx(-hi1, abs=1e-12) and hi2 == pytest.approx(-lo1, abs=1e-12)
    assert lo1 < d1 < hi1
    # vectorized = scalar
    dv, lov, hiv = newcombe_paired(np.array([30, 40]), np.array([9, 0]), np.array([2, 0]),
                                   np.array([19, 0]))
    np.testing.assert_allclose([lov[0], hiv[1]], [lo1, hi], rtol=1e-12)


def test_counts_and_arrays_are_one_implementation(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    for _ in range(20):
        n = int(rng.integers(1, 60))
        x = rng.random(n) < rng.random()
        y = rng.random(n) < rng.random()
        r = paired_difference(x, y, confidence=0.9)
        cnt = [int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y)), int(np.sum(~x & ~y))]
        d, lo, hi = newcombe_paired(*cnt, confidence=0.9)
        assert (r["b"], r["c"], r["n"]) == (cnt[1], cnt[2], n)
        assert r["diff"] == pytest.approx(d, abs=1e-15)
        assert (r["lo"], r["hi"]) == (lo, hi)
        assert r["p_first"] == x.mean() and r["p_second"] == y.mean()


def test_paired_difference_counts_and_mcnemar():
    x = np.array([1, 1, 1, 1, 1, 0, 0, 1, 0, 0])
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 0], bool)
    r = paired_difference(x, y)
    assert (r["b"], r["c"], r["n"]) == (3, 1, 10)
    assert r["diff"] == pytest.approx(0.2)
    assert r["lo"] < 0.2 < r["hi"]
    assert r["p_mcnemar"] == pytest.approx(binomtest(3, 4, 0.5).pvalue)
    assert paired_difference(x, x)["p_mcnemar"] == 1.0


@pytest.mark.parametrize("n, probs", [(40, (0.4, 0.2, 0.1, 0.3)), (300, (0.70, 0.05, 0.02, 0.23)),
                                      (300, (0.40, 0.15, 0.15, 0.30))])
def test_newcombe_coverage(n, probs, global_random_seed):
    """Monte Carlo coverage of the 95% interval. 4000 replicates: the standard error of a
    coverage near 0.95 is sqrt(0.95 * 0.05 / 4000) = 0.0034; Newcombe (1998) reports coverage
    close to nominal for method 10, so [0.93, 0.97] is a 6-standard-error band."""
    rng = np.random.default_rng(global_random_seed)
    counts = rng.multinomial(n, probs, size=4000)
    d, lo, hi = newcombe_paired(*counts.T)
    true = probs[1] - probs[2]
    cover = np.mean((lo <= true) & (true <= hi))
    assert 0.93 <= cover <= 0.97, cover


@pytest.mark.parametrize("call, match", [
    (lambda: newcombe_paired(1, -1, 0, 0), "n10 must be integer counts >= 0, got -1"),
    (lambda: newcombe_paired(1, 0, 0.5, 0), "n01 must be integer counts >= 0, got 0.5"),
    (lambda: newcombe_paired(0, 0, 0, 0), "n00 >= 1, got 0"),
    (lambda: newcombe_paired(1, 0, 0, 0, confidence=0), r"confidence must be in \(0, 1\)"),
    (lambda: paired_difference([1, 0, 1], [1, 0]), "paired"),
    (lambda: paired_difference([1, 2], [1, 0]), "first must hold 0/1 or bool outcomes"),
    (lambda: paired_difference([1, 0], [np.nan, 0]), "second must hold 0/1 or bool outcomes"),
    (lambda: paired_difference([1, 0], [1, 0], confidence=1.0), "confidence"),
])
def test_newcombe_errors_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------ bootstrap


def _pct(boot, est, confidence=0.95):
    boot = np.asarray(boot)
    boot = boot[np.isfinite(boot)]
    a = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return min(lo, est), max(hi, est)


def test_bootstrap_is_the_percentile_bootstrap_on_the_generators_draws(global_random_seed):
    """A plain reference: resample rows with ``Generator.integers(0, n, (n_boot, n))`` (the
    draws scipy makes), take the statistic per row and the 2.5% and 97.5% quantiles. 1e-12
    relative: the vectorized mean sums in a different order than the per-row one."""
    rng = np.random.default_rng(global_random_seed)
    x = rng.normal(size=25)
    fit = bootstrap(x, n_boot=500, rng=global_random_seed)
    idx = np.random.default_rng(global_random_seed).integers(0, 25, (500, 25))
    np.testing.assert_allclose([fit.lo, fit.hi], _pct(x[idx].mean(axis=1), x.mean()), rtol=1e-12)
    # replicates as rows (a ratio of two column means): the rows are resampled together
    v = rng.uniform(1, 2, size=(20, 2))
    fit = bootstrap(v, lambda a: a[:, 0].mean() / a[:, 1].mean(), n_boot=300, rng=7)
    idx = np.random.default_rng(7).integers(0, 20, (300, 20))
    ref = [v[i, 0].mean() / v[i, 1].mean() for i in idx]
    np.testing.assert_allclose([fit.lo, fit.hi], _pct(ref, fit.est), rtol=1e-12)


def test_bootstrap_reproducible_from_a_seed(global_random_seed):
    x = np.random.default_rng(global_random_seed).normal(size=30)
    a = bootstrap(x, rng=global_random_seed)
    assert a == bootstrap(x, rng=global_random_seed)
    assert a == bootstrap(x, rng=np.random.default_rng(global_random_seed))
    ss = np.random.SeedSequence(global_random_seed)
    assert a == bootstrap(x, rng=ss)
    assert (a.lo, a.hi) != (bootstrap(x, rng=global_random_seed + 1).lo,
                            bootstrap(x, rng=global_random_seed + 1).hi)
    xl = np.repeat([1.0, 2.0, 4.0], 4)
    yl = np.exp(np.random.default_rng(global_random_seed).normal(size=xl.size))
    assert loglog_slope(xl, yl, rng=3) == loglog_slope(xl, yl, rng=3)
    assert linear_slope(xl, yl, rng=3) == linear_slope(xl, yl, rng=3)


def test_linear_slope_against_a_pairs_bootstrap_reference(global_random_seed):
    """Pairs resampled with the Generator's draws, the slope by ``numpy.polyfit``, resamples
    with a single distinct x left out; 1e-9 relative: polyfit solves by least squares (SVD)."""
    rng = np.random.default_rng(global_random_seed)
    x = np.array([0.0, 1.0, 2.0, 3.0, 5.0])
    y = 2 * x + rng.normal(size=x.size)
    fit = linear_slope(x, y, n_boot=400, rng=global_random_seed)
    idx = np.random.default_rng(global_random_seed).integers(0, x.size, (400, x.size))
    ref = [np.polyfit(x[i], y[i], 1)[0] if np.ptp(x[i]) > 0 else np.nan for i in idx]
    np.testing.assert_allclose([fit.lo, fit.hi], _pct(ref, fit.est), rtol=1e-9)
    assert fit.est == pytest.approx(np.polyfit(x, y, 1)[0], rel=1e-9)


def test_stratified_slope_against_a_full_least_squares_reference(global_random_seed):
    """The stratified bootstrap resamples within each x level (scipy's multi-sample bootstrap,
    one sample per level with >= 2 replicates, in level order); the reference refits the full
    least-squares slope of log y on log x on each resampled data set. A level with a single
    replicate stays fixed. 1e-9 relative: polyfit against the weighted level means."""
    rng = np.random.default_rng(global_random_seed)
    x = np.r_[1.0, np.repeat([2.0, 4.0, 8.0], [3, 4, 2])]
    y = x ** -0.5 * np.exp(rng.normal(0, 0.1, x.size))
    fit = loglog_slope(x, y, n_boot=300, rng=global_random_seed)
    gen = np.random.default_rng(global_random_seed)
    lv = [np.flatnonzero(x == v) for v in (2.0, 4.0, 8.0)]
    draws = [g[gen.integers(0, g.size, (300, g.size))] for g in lv]
    ref = []
    for b in range(300):
        i = np.concatenate([[0]] + [d[b] for d in draws])
        ref.append(np.polyfit(np.log(x[i]), np.log(y[i]), 1)[0])
    np.testing.assert_allclose([fit.lo, fit.hi], _pct(ref, fit.est), rtol=1e-9)
    assert fit.est == pytest.approx(np.polyfit(np.log(x), np.log(y), 1)[0], rel=1e-9)
    # the semi-log slope uses the same resampling with x untransformed
    assert semilog_slope(x, y, rng=0).est == pytest.approx(np.polyfit(x, np.log(y), 1)[0],
                                                           rel=1e-9)


def test_contraction_factor_is_exp_of_the_bootstrap_of_run_means():
    e = np.exp(np.cumsum(np.random.default_rng(1).normal(-0.7, 0.05, (12, 8)), axis=1))
    fit = contraction_factor(e, n_boot=200, rng=5)
    per_run = np.diff(np.log(e), axis=1).mean(axis=1)
    ref = bootstrap(per_run, n_boot=200, rng=5)
    np.testing.assert_allclose([fit.est, fit.lo, fit.hi], np.exp([ref.est, ref.lo, ref.hi]),
                               rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: bootstrap([1.0]), "at least 2 replicates"),
    (lambda: bootstrap([1.0, 2.0], n_boot=10), "n_boot must be an integer >= 100, got 10"),
    (lambda: bootstrap([1.0, 2.0], n_boot=200.0), "n_boot must be an integer >= 100"),
    (lambda: bootstrap([1.0, 2.0], confidence=1.5), r"confidence must be in \(0, 1\), got 1.5"),
    (lambda: linear_slope([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), "at least 2 distinct values"),
    (lambda: linear_slope([1.0, 2.0], [1.0, 2.0]), "same length >= 3"),
    (lambda: semilog_slope([1.0, 2.0], [1.0, 0.0]), "y must be > 0"),
])
def test_bootstrap_errors_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
