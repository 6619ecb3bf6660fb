"""The pieces of studies A0 and RS (mixlinreg.theory.initialization, mixlinreg.theory.restarts):
formulas and verdict rules. The study records' smoke runs are in test_theory_a0_rs.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mixlinreg.baselines import oracle
from mixlinreg.data import init_close
from mixlinreg.geometry import simplex_centers
from mixlinreg.theory import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED
from mixlinreg.theory import initialization as ini

# ------------------------------------------------------------------------------ A0 geometry


@pytest.mark.parametrize("k", [2, 4])
def test_simplex_centers_equidistant(k, global_random_seed):
    gen = np.random.default_rng(global_random_seed)
    ts = simplex_centers(k, 12, 1.7, gen, haar=False)  # A0's centres
    D = np.linalg.norm(ts[:, None] - ts[None], axis=2)
    off = D[~np.eye(k, dtype=bool)]
    np.testing.assert_allclose(off, 1.7, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(ts, axis=1), 1.7 / math.sqrt(2), rtol=1e-12)


@pytest.mark.parametrize("k", [2, 4])
def test_init_mixed_geometry(k, global_random_seed):
    gen = np.random.default_rng(global_random_seed)
    ts = simplex_centers(k, 15, 1.0, gen, haar=False)
    a = 0.05
    init = ini.init_mixed(ts, a, gen)
    # every model exactly at (1/2 - alpha0) Delta from its truth: Assumption 1's boundary
    np.testing.assert_allclose(np.linalg.norm(init - ts, axis=1), 0.5 - a, rtol=1e-12)
    # model 0 moved orthogonally to the span of the centers
    q, _ = np.linalg.qr(ts.T)
    np.testing.assert_allclose(q.T @ (init[0] - ts[0]), 0.0, atol=1e-12)
    # the others are the adversarial placement of init_close
    adv = init_close(ts, a, 1, direction="adversarial")[0]
    np.testing.assert_allclose(init[1:], adv[1:], rtol=1e-12)
    # cluster 0's population losses differ by exactly 2 alpha0 Delta^2 against some model j >= 1
    pop = np.linalg.norm(init - ts[0], axis=1) ** 2
    assert np.isclose(pop[1:].min() - pop[0], 2 * a, rtol=1e-9)


def test_init_mixed_bad_input():
    ts = np.eye(2, 5)
    with pytest.raises(ValueError, match="alpha0"):
        ini.init_mixed(ts, 0.5, 0)
    with pytest.raises(ValueError, match="alpha0"):
        ini.init_mixed(ts, 0.0, 0)
    with pytest.raises(ValueError, match="d > k"):
        ini.init_mixed(np.eye(2), 0.1, 0)
    with pytest.raises(ValueError, match="direction"):
        ini.a0_inits(ts, [0.1], ["sideways"], np.random.default_rng(0))


def test_oracle_theta_matches_baseline(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.standard_normal((6, 30, 5))
    y = rng.standard_normal((6, 30))
    labels = np.array([0, 1, 0, 1, 1, 0])
    np.testing.assert_allclose(ini.oracle_theta(X, y, labels, 2), oracle(X, y, labels).theta,
                               rtol=1e-9, atol=1e-12)


def test_known_cluster_gd_matches_ifca_when_clusters_are_obvious(global_random_seed):
    """With Delta = 20 and sigma = 0.1 no machine is ever misclassified, so IFCA's resampled run
    started at theta* is exactly the known-cluster gradient descent (independent code paths)."""
    from mixlinreg.ifca import ifca
    from mixlinreg.metrics import dist_matched

    gen = np.random.default_rng(global_random_seed)
    k, d, mpc, n_prime, T = 2, 5, 6, 8, 4
    ts = simplex_centers(k, d, 20.0, gen, haar=False)
    labels = np.repeat(np.arange(k), mpc)
    X = gen.standard_normal((k * mpc, 2 * T * n_prime, d))
    y = np.einsum("ind,id->in", X, ts[labels]) + 0.1 * gen.standard_normal(X.shape[:2])
    res = ifca(X, y, ts, k / 4, n_iter=T, resample=True, trace=True, theta_star=ts, n_threads=1)
    assert (res.trace.labels[:T] == labels).all()
    got = ini.known_cluster_gd(X, y, labels, ts, n_prime=n_prime, n_iter=T, lr=k / 4)
    assert got == pytest.approx(float(dist_matched(res.theta[0], ts)), rel=1e-9)
    assert got > 0
    # noise-free data: theta* is a fixed point
    y0 = np.einsum("ind,id->in", X, ts[labels])
    assert ini.known_cluster_gd(X, y0, labels, ts, n_prime=n_prime, n_iter=T, lr=k / 4) < 1e-12
    with pytest.raises(ValueError, match="n_prime"):
        ini.known_cluster_gd(X, y, labels, ts, n_prime=n_prime + 1, n_iter=T, lr=0.5)


def test_a0_trial_is_reproducible():
    kw = dict(k=2, trial=0, d=6, n_prime=4, n_iter=3, m_per_cluster=4, sigma=0.2, delta=1.0,
              alphas=(0.05, 0.3), directions=ini.A0_DIRECTIONS, gamma_p=0.25, success_sigmas=0.6)
    a = ini.a0_trial_rows(np.random.default_rng(5), **kw)
    b = ini.a0_trial_rows(np.random.default_rng(5), **kw)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 2 * 3 * 2  # resample x direction x alpha0
    assert a["success"].dtype == bool


# ------------------------------------------------------------------------------ A0 verdict


def _a0_rows(succ):
    """Rows with ``succ[(k, resample, direction)]`` successes out of ``trials`` at two alpha0s."""
    rows = []
    for (k, resample, direction), (s, n) in succ.items():
        for a in (0.01, 0.2):
            for t in range(n):
                rows.append(dict(k=k, resample=resample, direction=direction, alpha0=a, trial=t,
                                 success=t < s if a == 0.01 else True, misclass0=0.0, t_hit=2.0))
    return pd.DataFrame(rows)


def _a0_case(res, plain, n=60):
    succ = {}
    for d, s in zip(ini.A0_DIRECTIONS, res):
        succ[(2, True, d)] = (s, n)
    for d, s in zip(ini.A0_DIRECTIONS, plain):
        succ[(2, False, d)] = (s, n)
    return ini.a0_verdict(ini.a0_summary(_a0_rows(succ)), target=0.9, floor=0.5)[0]


def test_a0_verdict_rules():
    # every direction 60/60: Wilson lower bound 0.94 >= 0.9
    assert _a0_case((60, 60, 60), (60, 60, 60)) == HOLDS
    # a deliberately false claim: one direction fails most of the time at the smallest alpha0
    assert _a0_case((60, 60, 12), (60, 60, 60)) == NOT_SUPPORTED
    # holds in the theory's (resampled) setting but clearly not without resampling
    assert _a0_case((60, 60, 60), (60, 60, 40)) == CAVEAT
    # holds only for some directions, the other clearly below 0.9 (but above 0.5)
    assert _a0_case((60, 60, 42), (60, 60, 60)) == CAVEAT
    # too few trials to decide
    assert _a0_case((4, 4, 4), (4, 4, 4), n=4) == INCONCLUSIVE
    # the verdict reads the smallest alpha0: failures at a larger alpha0 alone do not decide it
    v, info = ini.a0_verdict(ini.a0_summary(_a0_rows({(2, True, "random"): (60, 60)})),
                             target=0.9, floor=0.5)
    assert v == HOLDS and info["alpha0"] == 0.01


def test_a0_summary_wilson():
    s = ini.a0_summary(_a0_rows({(2, True, "random"): (30, 40)}))
    r = s[s["alpha0"] == 0.01].iloc[0]
    assert (r.successes, r.trials) == (30, 40)
    # Wilson 95% interval of 30/40, computed by hand: center (p + z^2/2n)/(1 + z^2/n)
    z = 1.959963984540054
    p, n = 0.75, 40
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert r.lo == pytest.approx(c - h, abs=1e-12) and r.hi == pytest.approx(c + h, abs=1e-12)


def _cmp_cells(cases, alphas=(0.01, 0.4)):
    """Cells for a0_compare_verdict: ``cases[(setting, resample, direction)] = (n11, n10, n01,
    n00)`` counts of the smallest alpha0 against the largest one (k = 2)."""
    rows = []
    for (setting, resample, direction), cnt in cases.items():
        n = sum(cnt)
        s_ref = cnt[0] + cnt[1]
        rows.append(dict(setting=setting, k=2, resample=resample, direction=direction,
                         alpha0=alphas[0], n_both=cnt[0], n_ref_only=cnt[1], n_this_only=cnt[2],
                         n_neither=cnt[3]))
        rows.append(dict(setting=setting, k=2, resample=resample, direction=direction,
                         alpha0=alphas[1], n_both=s_ref, n_ref_only=0, n_this_only=0,
                         n_neither=n - s_ref))
    return pd.DataFrame(rows)


def test_a0_compare_verdict_rules():
    easy = {("easy", True, d): (1000, 0, 0, 0) for d in ini.A0_DIRECTIONS}
    # equal success at both alpha0 (75%, discordant pairs in both directions): holds
    same = {**easy, **{("hard", True, d): (720, 30, 30, 220) for d in ini.A0_DIRECTIONS}}
    v, info = ini.a0_compare_verdict(_cmp_cells(same), margin=0.1)
    assert v == HOLDS
    assert (info["cases"]["hi"] <= 0.1).all() and info["cases"]["informative"].all()
    # a deliberately false claim: the smallest alpha0 succeeds far less often (75% -> 50%)
    worse = dict(same)
    worse[("hard", True, "mixed")] = (480, 270, 20, 230)
    v, info = ini.a0_compare_verdict(_cmp_cells(worse), margin=0.1)
    assert v == NOT_SUPPORTED and "hard, resampled, mixed" in info["reason"]
    # the same true drop with only 20 trials: the interval straddles the margin
    v, _ = ini.a0_compare_verdict(_cmp_cells({("hard", True, "mixed"): (10, 5, 0, 5)}), margin=0.1)
    assert v == INCONCLUSIVE
    # a small but clear drop (lower bound > 0, upper bound <= 0.1) is not "materially worse"
    v, info = ini.a0_compare_verdict(_cmp_cells({("hard", True, "random"): (700, 50, 10, 240)}),
                                     margin=0.1)
    assert v == HOLDS and info["cases"]["lo"].iloc[0] > 0
    # nothing succeeds even at the largest alpha0: no drop could be seen, so nothing is decided
    v, info = ini.a0_compare_verdict(_cmp_cells({("hard", True, "random"): (0, 0, 0, 1000)}),
                                     margin=0.1)
    assert v == INCONCLUSIVE and "informative" in info["reason"]
    with pytest.raises(ValueError, match="margin"):
        ini.a0_compare_verdict(_cmp_cells(same), margin=0.0)
    with pytest.raises(ValueError, match="k=4"):
        ini.a0_compare_verdict(_cmp_cells(same), margin=0.1, k=4)


def test_a0_cells_pairs_by_trial():
    # alpha0 = 0.2 always succeeds; alpha0 = 0.01 succeeds in trials 0..29 of 40
    s = ini.a0_cells(_a0_rows({(2, True, "random"): (30, 40)}).assign(
        dist_matched=0.1, sigma=0.25, diverged=False))
    r = s[s["alpha0"] == 0.01].iloc[0]
    assert (r.n_both, r.n_ref_only, r.n_this_only, r.n_neither) == (30, 10, 0, 0)
    assert r["diff"] == pytest.approx(0.25) and r["diff_lo"] < 0.25 < r["diff_hi"]
    assert r.dist_med == pytest.approx(0.4)
    ref = s[s["alpha0"] == 0.2].iloc[0]
    assert (ref["n_both"], ref["diff"]) == (40, 0.0)
    rows = _a0_rows({(2, True, "random"): (30, 40)}).assign(dist_matched=0.1, sigma=0.25,
                                                             diverged=False)
    with pytest.raises(ValueError, match="every alpha0"):
        ini.a0_cells(rows.iloc[1:])


# ------------------------------------------------------------------------------ RS formula


def test_restart_success_exact_values():
    N = 10
    assert ini.restart_success(0, N, 10) == 0.0
    assert ini.restart_success(N, N, 1) == 1.0
    assert ini.restart_success(1, N, 10) == 1.0
    assert ini.restart_success(3, N, 2) == pytest.approx(1 - 21 / 45, abs=1e-15)
    # r > N - s: every draw of r contains a success
    assert ini.restart_success(4, N, 7) == 1.0
    s = np.arange(N + 1)
    np.testing.assert_allclose(ini.restart_success(s, N, 1), s / N)


def test_restart_success_monte_carlo(global_random_seed):
    """Sampling r of N initializations without replacement, s of them successful.

    200,000 draws per (s, r): the standard error of a frequency is <= sqrt(0.25 / 2e5) = 0.0011,
    so a tolerance of 0.006 is more than 5 standard errors.
    """
    rng = np.random.default_rng(global_random_seed)
    N, draws = 10, 200_000
    keys = rng.random((draws, N)).argsort(axis=1)  # uniform random permutations
    for s in (1, 3, 6):
        good = keys < s  # the first s indices are the successful initializations
        for r in (1, 2, 5, 9):
            mc = good[:, :r].any(axis=1).mean()
            assert abs(mc - ini.restart_success(s, N, r)) < 0.006, (s, r)


def test_restart_success_bad_input():
    with pytest.raises(ValueError, match="s must be"):
        ini.restart_success(11, 10, 1)
    with pytest.raises(ValueError, match="r must be"):
        ini.restart_success(1, 10, 0)
    with pytest.raises(ValueError, match="r must be"):
        ini.restart_success(1, 10, 1.5)
    with pytest.raises(ValueError, match="n_init"):
        ini.restart_success(1, 0, 1)


def test_restart_curves_needed_restarts():
    curve, need = ini.restart_curves(np.full(12, 10), 10, target=0.9, rng=0)
    assert need.est == need.lo == need.hi == 1
    np.testing.assert_allclose(curve["p"], 1.0)
    curve, need = ini.restart_curves(np.zeros(12, dtype=int), 10, target=0.9, rng=0)
    assert need.est == 11  # not within 10
    # s = 1 in every trial: P(r) = r / 10, first >= 0.9 at r = 9
    curve, need = ini.restart_curves(np.ones(15, dtype=int), 10, target=0.9, rng=0)
    assert need.est == need.lo == need.hi == 9
    np.testing.assert_allclose(curve["p"], np.arange(1, 11) / 10)


# ------------------------------------------------------------------------------ RS verdict


def _per_init(cells):
    """Per-init rows: ``cells[(panel, R, sigma)] = list of successes per trial`` (10 inits each)."""
    rows = []
    for (panel, R, sigma), counts in cells.items():
        for t, s in enumerate(counts):
            for i in range(10):
                rows.append(dict(panel=panel, R=R, sigma=sigma, trial=t, init=i, ok=i < s,
                                 ok_text=i < s))
    return pd.DataFrame(rows)


def _rs(cells):
    c, _ = ini.rs_cell_stats(_per_init(cells), target=0.9, n_boot=500)
    return ini.rs_verdict(c, target=0.9, p1_substantial=0.25, min_trials=10)


def test_rs_verdict_holds():
    v, info = _rs({("a", 0.5, 0.1): [5] * 20, ("a", 1.0, 0.1): [8] * 20})
    assert v == HOLDS
    assert info["r_star"][("a", 0.1)] == 0.5


def test_rs_verdict_not_supported():
    # a deliberately false claim: half the trials succeed with every init, the other half never,
    # so the single-init success is 0.5 but 10 restarts do not get above ~0.5 either
    v, info = _rs({("a", 1.0, 0.1): [10] * 10 + [0] * 10})
    assert v == NOT_SUPPORTED
    assert "restarts stay below" in info["reason"]


def test_rs_verdict_caveat_small_separation():
    # small R: rare successes, 10 restarts reach only ~0.5 (single-init success small, so this is
    # "holds only above a separation", not a contradiction); larger R holds
    v, info = _rs({("a", 0.1, 0.1): [1] * 10 + [0] * 10, ("a", 0.5, 0.1): [4] * 20,
                   ("a", 1.0, 0.1): [9] * 20})
    assert v == CAVEAT
    assert info["r_star"][("a", 0.1)] == 0.5


def test_rs_verdict_inconclusive():
    # too few trials: context only
    v, _ = _rs({("a", 1.0, 0.1): [9] * 3})
    assert v == INCONCLUSIVE
    # even the largest R does not reach 0.9 decisively
    v, info = _rs({("a", 0.5, 0.1): [1] * 10 + [0] * 10, ("a", 1.0, 0.1): [1] * 10 + [0] * 10})
    assert v == INCONCLUSIVE and info["r_star"][("a", 0.1)] is None


def test_rs_cell_stats_columns_and_errors():
    c, curves = ini.rs_cell_stats(_per_init({("b", 0.5, 0.1): [3, 4, 5]}), target=0.9, n_boot=200)
    assert c.iloc[0]["p1"] == pytest.approx(0.4)
    assert c.iloc[0]["pN"] == 1.0
    assert list(curves.columns) == ["panel", "R", "sigma", "r", "p", "lo", "hi"]
    with pytest.raises(ValueError, match="missing"):
        ini.rs_cell_stats(pd.DataFrame({"panel": ["a"]}), target=0.9)


def test_rs_cell_stats_streams_are_keyed_by_cell_name():
    """A cell's bootstrap depends on its name only: adding another cell changes nothing."""
    from mixlinreg.theory import restarts

    one = _per_init({("a", 0.5, 0.1): [1, 3, 0, 6, 2]})
    two = _per_init({("a", 0.5, 0.1): [1, 3, 0, 6, 2], ("a", 0.25, 0.1): [0, 1, 0, 2, 0]})
    c1, _ = ini.rs_cell_stats(one, target=0.9, n_boot=300)
    c2, _ = ini.rs_cell_stats(two, target=0.9, n_boot=300)
    pd.testing.assert_series_equal(c1.iloc[0], c2[c2["R"] == 0.5].iloc[0], check_names=False)
    seen = []

    def rng(name):
        seen.append(name)
        return np.random.default_rng(0)

    ini.rs_cell_stats(two, target=0.9, n_boot=300, rng=rng)
    assert sorted(seen) == ["a_R=0.25_sigma=0.1", "a_R=0.5_sigma=0.1"]
    assert ini.rs_verdict is restarts.rs_verdict  # re-exported where it used to live
