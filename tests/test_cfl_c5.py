"""Study CFLC5 (CFL's stopping criterion (5)): the model's pieces against direct computation and
closed forms, the certified band of eps2 at its edges, the pure ``decide`` on made-up cells, the
sensitivity lines against ``decide`` at the neighbours, config errors, and a complete smoke record
whose written tables reproduce its analysis."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest

from mixlinreg.stats import wilson_interval
from mixlinreg.theory.cfl_linear import client_gradients, draw_clients, stationary_point
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS
from mixlinreg.theory.studies import cflc5, get, run_study

SEP, OVL, UND = cflc5.SEPARATES, cflc5.OVERLAPS, cflc5.UNDETERMINED


def test_the_study_is_registered_as_cfl_criterion_5():
    study = get("CFLC5")
    assert study.decide is cflc5.decide and study.paper == "CFL" and study.order == 210
    assert "short" in study.location and "(5)" in study.location


def test_the_module_examples_run():
    result = doctest.testmod(cflc5, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


# ------------------------------------------------------------------------------ the model

@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_simplex_has_unit_edges_and_the_population_gradient_norm(k):
    V = cflc5.simplex(k, k + 2)
    D = np.linalg.norm(V[:, None] - V[None], axis=2)
    np.testing.assert_allclose(D[~np.eye(k, dtype=bool)], 1.0, rtol=1e-14)  # exact up to rounding
    np.testing.assert_allclose(V.mean(axis=0), 0.0, atol=1e-15)
    # grad R_j at the centre (the population stationary point, equal clusters) has norm
    # R sqrt(2 (k-1) / k): R for two clusters
    np.testing.assert_allclose(2 * np.linalg.norm(V, axis=1), np.sqrt(2 * (k - 1) / k), rtol=1e-14)


@pytest.mark.parametrize("n, R, sigma", [(30, 0.7, 0.2), (6, 2.0, 1.5)])
def test_gradients_are_signal_times_R_plus_noise_times_sigma(n, R, sigma):
    """The stored maxima rest on linearity: the direct gradients at the pooled fit of
    ``y = <x, R theta_j> + sigma eps`` equal ``R g^signal + sigma g^noise`` of the same draw."""
    m, d, ks = 8, 5, [2, 4]
    noise, signal = cflc5.replicate_gradients(n, m, d, ks, np.random.default_rng(3))
    X, eps, _ = draw_clients(np.zeros((1, d)), [m], n, 1.0, np.random.default_rng(3))
    for k in ks:
        labels = np.repeat(np.arange(k), m // k)
        y = np.einsum("ind,id->in", X, R * cflc5.simplex(k, d)[labels]) + sigma * eps
        g = client_gradients(X, y, stationary_point(X, y))
        # both sides solve the same least squares: agreement to rounding of lstsq
        np.testing.assert_allclose(g, R * signal[k] + sigma * noise, rtol=1e-9, atol=1e-12)
        mx, rms = cflc5.max_norms(signal[k], noise, [R / sigma])
        norms = np.linalg.norm(g, axis=1)
        np.testing.assert_allclose(sigma * mx[0], norms.max(), rtol=1e-9)
        np.testing.assert_allclose(sigma * rms[0], np.sqrt(np.mean(norms ** 2)), rtol=1e-9)
    # the congruent population's gradients are the noise part
    g1 = client_gradients(X, eps, stationary_point(X, eps))
    np.testing.assert_allclose(g1, noise, rtol=1e-12, atol=1e-14)


def test_congruent_client_norm_matches_its_prediction():
    """E ||g_i||^2 = 4 sigma^2 (d/n) (1 - (1 + (d+1)/n)/m) up to O(d/(m n)) (sigma = 1)."""
    n, m, d = 40, 10, 5
    rng = np.random.default_rng(11)
    sq = [np.mean(np.sum(cflc5.replicate_gradients(n, m, d, [], g)[0] ** 2, axis=1))
          for g in rng.spawn(400)]
    # the mean of 400 replicates' mean squares has relative sd 1.2%: its root is within 3% (5 sd)
    assert abs(np.sqrt(np.mean(sq)) / cflc5.predicted_rms(n, d, m) - 1) < 0.03


def test_predicted_congruent_max_limits_and_order():
    from scipy import stats

    d = 6
    # F(t)^m = p with F(t) = E_W chi2_d.cdf(t / W), W ~ chi2_n / n; the norm is 2 sqrt(kappa t / n)
    for n, p in [(10**7, 0.5), (10**7, 0.99), (20, 0.5), (20, 0.9)]:
        kappa = 1 - (1 + (d + 1) / n) / 2
        got = cflc5.predicted_congruent_max(n, d, 2, p)
        t = n * (got / 2) ** 2 / kappa
        if n > 10**6:  # W = 1 to 5e-4: chi2_d's sqrt(p)-quantile
            np.testing.assert_allclose(t, stats.chi2.ppf(np.sqrt(p), d), rtol=2e-3)
        else:  # against 400000 draws of the product (quantile error about 0.3%)
            rng = np.random.default_rng(5)
            w = rng.chisquare(n, 400_000) / n * rng.chisquare(d, 400_000)
            np.testing.assert_allclose(t, np.quantile(w, np.sqrt(p)), rtol=0.01)
    q = [cflc5.predicted_congruent_max(50, d, m, 0.99) for m in (4, 12, 48)]
    assert q[0] < q[1] < q[2]  # the maximum over more clients is larger
    assert cflc5.predicted_congruent_max(50, d, 12, 0.5) < q[1]
    # S_pred: the congruent quantile over the population norm R sqrt(2 (k-1)/k), in S units
    s2 = cflc5.predicted_threshold(50, d, 12, 2, 0.01)
    np.testing.assert_allclose(s2, q[1] / np.sqrt(d / 50), rtol=1e-12)
    np.testing.assert_allclose(cflc5.predicted_threshold(50, d, 12, 4, 0.01), s2 / np.sqrt(1.5),
                               rtol=1e-12)


# ------------------------------------------------------------------------------ the band

def test_allowed_counts_are_the_wilson_edges():
    for N, a, conf in [(1000, 0.01, 0.95), (400, 0.01, 0.95), (60, 0.1, 0.9), (2000, 0.02, 0.99)]:
        for bound, col in (("hi", 1), ("lo", 0)):
            c = cflc5._allowed(N, a, conf, bound)
            b = wilson_interval([c, c + 1], N, conf)[col]
            assert b[0] <= a < b[1], (N, a, conf, bound, c, b)
    assert cflc5._allowed(300, 0.01, 0.95, "hi") == -1  # 0 errors in 300: upper bound 0.0126


def test_band_edges_allow_exactly_the_certified_errors():
    rng = np.random.default_rng(0)
    C, I = rng.uniform(0, 1, 1000), rng.uniform(2, 3, 1000)
    C[:3] = [10.0, 11.0, 12.0]  # three congruent replicates far above the rest
    c = cflc5._allowed(1000, 0.01, 0.95, "hi")
    assert c >= 3
    status, lo, hi = cflc5.separating_band(C, I, 0.01, 0.95)
    assert status == SEP
    assert lo == np.sort(C)[-1 - c] and hi == np.sort(I)[c]  # same N: same allowed count
    # at an eps2 inside (lo, hi]: at most c congruent maxima >= eps2, at most c incongruent below
    for eps2 in (np.nextafter(lo, np.inf), hi):
        assert (C >= eps2).sum() <= c and (I < eps2).sum() <= c
    # just outside: one error too many on one side
    assert (C >= lo).sum() == c + 1 and (I < np.nextafter(hi, np.inf)).sum() == c + 1


def test_band_statuses():
    x = np.linspace(0, 1, 1000)
    assert cflc5.separating_band(x, x + 5, 0.01, 0.95)[0] == SEP
    assert cflc5.separating_band(x, x, 0.01, 0.95)[0] == OVL  # the same distribution
    # 50 replicates cannot certify 1% errors, nor refute a clean separation: undetermined
    y = np.linspace(0, 1, 50)
    status, lo, hi = cflc5.separating_band(y, y + 5, 0.01, 0.95)
    assert status == UND and np.isnan(lo) and np.isnan(hi)


# ------------------------------------------------------------------------------ decide

def _cells(rows):
    """Made-up cells: ``(S, status, band_lo, band_hi)`` each."""
    return pd.DataFrame([{"S": s, "status": st, "band_lo": lo, "band_hi": hi,
                          "k": 2, "m": 12, "n_over_d": 5.0, "sigma": 1.0, "R": s}
                         for s, st, lo, hi in rows])


NAN = np.nan


@pytest.mark.parametrize("rows, verdict", [
    ([(1, SEP, 0.5, 2), (5, SEP, 1, 3)], HOLDS),                       # all, common (1, 2]
    ([(1, SEP, 0.5, 1), (5, SEP, 1, 3)], CAVEAT),                      # all, bands only touch
    ([(0.5, OVL, NAN, NAN), (5, SEP, 1, 3)], CAVEAT),                  # a region
    ([(0.5, UND, NAN, NAN), (5, SEP, 1, 3), (9, SEP, 2, 4)], CAVEAT),
    ([(0.5, OVL, NAN, NAN), (5, OVL, NAN, NAN)], NOT_SUPPORTED),       # never separates
    ([(0.5, UND, NAN, NAN), (5, UND, NAN, NAN)], INCONCLUSIVE),        # nothing certain
    ([(0.5, OVL, NAN, NAN), (5, UND, NAN, NAN)], NOT_SUPPORTED),
    ([(1, SEP, 0.5, 2), (5, OVL, NAN, NAN)], NOT_SUPPORTED),           # fails at the largest S
    ([(1, SEP, 0.5, 2), (5, UND, NAN, NAN)], INCONCLUSIVE),            # undetermined at the top
    ([(1, SEP, 0.5, 2), (5, SEP, 1, 3), (5, UND, NAN, NAN)], INCONCLUSIVE),  # a tie at the top
])
def test_decide(rows, verdict):
    assert cflc5.decide(_cells(rows), {}).verdict == verdict


def test_decide_numbers_locate_the_region_and_the_witnesses():
    cells = _cells([(0.5, OVL, NAN, NAN), (2, SEP, 0.1, 0.2), (3, UND, NAN, NAN),
                    (4, SEP, 1, 3), (8, SEP, 2, 5), (8, SEP, 0.3, 9)])
    d = cflc5.decide(cells, {})
    nb = d.numbers
    assert d.verdict == CAVEAT
    assert (nb["cells"], nb["separates"], nb["overlaps"], nb["undetermined"]) == (6, 4, 1, 1)
    assert (nb["S_all"], nb["S_first"], nb["S_fail"]) == (4, 2, 3)
    assert (nb["common_lo"], nb["common_hi"], nb["universal"]) == (2, 0.2, False)
    assert (nb["low"], nb["high"]) == (1, 4)  # the band with the lowest top, the highest bottom
    scope = cflc5._scope(d)
    assert ">= 4 (every cell" in scope and "below 2" in scope and "no single eps2" in scope


# ------------------------------------------------------------------------------ config, smoke

def _params(**changes):
    p = get("CFLC5").config("smoke").values
    return {"params": dict(p["params"], **changes), "margins": p["margins"]}


@pytest.mark.parametrize("changes, match", [
    ({"d": 3}, "d must be >= every k"),
    ({"m": [6]}, "multiple of every k"),
    ({"cfl_m": 10}, "multiple of every k"),
    ({"blocks": 7}, "multiple of params.blocks"),
    ({"figure_m": 16}, "figure_m must be one of"),
    ({"figure_R": 0.3}, "figure_R must be one of"),
])
def test_config_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        cflc5.units(_params(**changes))


def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("CFLC5", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.paper == "CFL" and r.kind == "claim"
    assert r.claim and "(5)" in r.location and r.summary
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 2
    rec = json.loads((tmp_path / "CFLC5_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    # the written grid rows and CFL rows are the units' rows: the analysis again from them
    grid = pd.read_csv(tmp_path / "CFLC5_smoke.csv")
    demo = pd.read_csv(tmp_path / "CFLC5_smoke_cfl.csv")
    assert set(demo["k"]) == {1, 2, 4} and demo["correct"].all()  # a wide band at the demo cell
    table = pd.concat([grid, demo], ignore_index=True)
    params = get("CFLC5").config("smoke").values
    v = cflc5.analyze(table, params, lambda key: np.random.default_rng(0))
    assert v.verdict == r.verdict and v.summary == r.summary
    cells = pd.read_csv(tmp_path / "CFLC5_smoke_cells.csv")
    assert len(cells) == len(v.tables["_cells.csv"]) and list(cells["status"]) == list(
        v.tables["_cells.csv"]["status"])
    # every sensitivity line is decide() on the cells re-measured at the neighbouring value
    mg = params["margins"]
    for what, key in (("largest error rate max_error", "max_error"),
                      ("Wilson confidence", "confidence")):
        (line,) = [s for s in v.sensitivity if s.startswith(what + " (chosen ")]
        for val in sorted(set(mg[key + "_neighbours"]) | {mg[key]}):
            want = cflc5.decide(cflc5.measure(table, params, **{key: val}), params).verdict
            assert f"{val:g} -> {want}" in line
    again = run_study("CFLC5", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict
