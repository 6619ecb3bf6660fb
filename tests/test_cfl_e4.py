"""Study CFLE4 (CFL eq. (3)-(4)): the closed forms it checks (k = 2, simplices, a line), the
finite-n rows (the pooled fit is the stationary point; eq. (3) on the clusters' mean gradients),
its pure decision at and around every threshold on made-up measurements, the sensitivity lines
against that decision, and the smoke preset end to end.

The thresholds of the made-up measurements are binary fractions (0.125, 0.75, ...) so that "exactly
at" is exact in floating point.
"""

from __future__ import annotations

import copy
import doctest

import numpy as np
import pandas as pd
import pytest

from mixlinreg.theory.cfl_linear import (client_gradients, cosine_similarities, draw_clients,
                                         population_gradients, stationary_point)
from mixlinreg.theory.studies import cfle4, get
from mixlinreg.theory.study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, run,
                                    unit_rng)

PARAMS = get("CFLE4").config("smoke").values


def up(x):
    return float(np.nextafter(x, np.inf))


def down(x):
    return float(np.nextafter(x, -np.inf))


def with_margins(params, **kw):
    return {**params, "margins": {**params["margins"], **kw}}


def test_the_study_is_registered_as_a_cfl_claim():
    s = get("CFLE4")
    assert s.decide is cfle4.decide and s.paper == "CFL" and s.order == 200 and s.kind == "claim"
    assert "short" in s.location and "(3)-(4)" in s.location
    for preset in ("smoke", "quick", "paper"):
        mg = s.config(preset).values["margins"]
        for key in ("pop_tol", "min_slope", "fit_from", "near", "gap_frac"):
            assert mg[f"{key}_neighbours"], key  # every threshold has neighbours


def test_doctests():
    result = doctest.testmod(cfle4, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0


# ------------------------------------------------------------------------------ closed forms


@pytest.mark.parametrize("k", [2, 3, 4, 5, 10])
def test_equidistant_equal_weights_give_minus_one_over_k_minus_one(k):
    C = cfle4.simplex_cosines(np.ones(k))
    off = ~np.eye(k, dtype=bool)
    # the formula is a few flops of numbers of size 1: rounding only
    np.testing.assert_allclose(C[off], -1.0 / (k - 1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.diag(C), 1.0, rtol=0, atol=1e-14)


def test_two_clusters_are_opposite_for_any_weights(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    for a1 in (0.01, 0.3, 0.5, 0.9):
        # ||a||^2 - a1 - a2 = -2 a1 a2 cancels numbers of size 1: error ~ eps / (a1 a2)
        assert cfle4.simplex_cosines([a1, 1 - a1])[0, 1] == pytest.approx(-1.0, abs=1e-12)
        for d in (1, 3, 50):
            ts = rng.standard_normal((2, d))
            G = population_gradients(ts, [a1, 1 - a1])
            # eq. (3): grad R1 = -(a2/a1) grad R2, to rounding of O(1) numbers
            np.testing.assert_allclose(G[0], -(1 - a1) / a1 * G[1], rtol=1e-12, atol=1e-12)
            assert cosine_similarities(G)[0, 1] == pytest.approx(-1.0, abs=1e-12)


def test_simplex_formula_matches_rotated_shifted_centers_with_any_weights(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    for k in (3, 4, 6):
        a = rng.dirichlet(np.ones(k))
        row = cfle4._population_multi(k, "simplex", a, 1, rng)
        assert row["err_cos"] < 1e-12 and row["err_stationary"] < 1e-12  # rounding only
        assert -1 < row["across_min"] <= row["across_max"] < 1


def test_centers_on_a_line_can_have_across_cosine_plus_one():
    C = cfle4.line_cosines(cfle4.LINE, [1, 1, 1])
    assert C.tolist() == [[1, 1, -1], [1, 1, -1], [-1, -1, 1]]
    ts = cfle4.centers("line3", 2.0, 4)
    G = population_gradients(ts, [1, 1, 1])
    np.testing.assert_allclose(cosine_similarities(G), C, atol=1e-14)


def test_centers_are_at_distance_R():
    for lay, k in (("simplex2", 2), ("simplex3", 3), ("simplex5", 5)):
        ts = cfle4.centers(lay, 0.7, 6)
        dist = np.linalg.norm(ts[:, None] - ts[None], axis=-1)[~np.eye(k, dtype=bool)]
        np.testing.assert_allclose(dist, 0.7, rtol=1e-14)
    assert cfle4.centers("simplex2", 1.0, 1).shape == (2, 1)
    with pytest.raises(ValueError, match="needs d >= 4"):
        cfle4.centers("simplex4", 1.0, 3)


def test_stationarity_error_sees_a_wrong_stationary_point(monkeypatch, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    ts = rng.standard_normal((2, 5))
    assert cfle4.stationarity_error(ts, [0.3, 0.7], rng) < 1e-13
    # with the unweighted mean in place of the weighted one, F is not stationary there
    monkeypatch.setattr(cfle4, "population_stationary_point", lambda t, a: t.mean(axis=0))
    assert cfle4.stationarity_error(ts, [0.3, 0.7], rng) > 1e-3


def test_population_rows_cover_the_grid():
    p = PARAMS["params"]
    df = cfle4.population_rows(p, np.random.default_rng(0))
    k2 = df[df["k"] == 2]
    assert len(k2) == len(p["pop_weights"]) * len(p["pop_R"]) * len(p["pop_d"]) * p["pop_draws"]
    assert k2[["err_cos", "err_ratio", "err_stationary"]].to_numpy().max() < 1e-12
    eq = df[df["err_formula"].notna()]
    assert set(eq["k"]) == set(p["pop_k"]) and eq["err_formula"].max() < 1e-14


# ------------------------------------------------------------------------------ finite n


def test_the_pooled_fit_zeroes_the_clients_gradient_sum(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    ts = cfle4.centers("simplex2", 1.0, 4)
    X, y, labels = draw_clients(ts, [3, 5], 6, 0.5, rng)
    G = client_gradients(X, y, stationary_point(X, y))
    # lstsq solves the normal equations to rounding: the sum is ~1e-15 of the gradients' size
    assert np.linalg.norm(G.sum(axis=0)) < 1e-10 * np.linalg.norm(G, axis=1).sum()
    m1, m2 = G[labels == 0].mean(axis=0), G[labels == 1].mean(axis=0)
    np.testing.assert_allclose(m1, -(5 / 3) * m2, rtol=1e-9, atol=1e-12)  # eq. (3), a = (3, 5)/8


def test_finite_rows_one_row_per_cluster_pair_and_data_set():
    p = dict(PARAMS["params"], reps=2)
    spec = dict(part="finite", cond="c", layout="simplex3", sizes=[3, 3, 3], sigma=0.1, R=1.0,
                nd=2.0)
    df = cfle4.finite_rows(spec, p, np.random.default_rng(1))
    assert len(df) == 2 * 6 and set(zip(df["j"], df["l"])) == {
        (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)}
    same = df["j"] == df["l"]
    assert (df.loc[same, "n_pairs"] == 3).all() and (df.loc[~same, "n_pairs"] == 9).all()
    assert (df["cos_min"] <= df["cos_mean"]).all() and (df["cos_mean"] <= df["cos_max"]).all()
    np.testing.assert_allclose(df.loc[~same, "pop_cos"], -0.5, atol=1e-14)
    assert df["stat_err"].max() < 1e-10
    reps = cfle4.per_rep(df)
    assert len(reps) == 2 and reps["within_min"].le(reps["within_mean"]).all()


def test_the_first_order_prediction_follows_the_measurement():
    """Large n/d: measured 1 - mean within-cosine within 30% of the first-order prediction."""
    p = dict(PARAMS["params"], reps=20, d=10)
    spec = dict(part="finite", cond="c", layout="simplex2", sizes=[4, 4], sigma=0.5, R=1.0,
                nd=50.0)
    reps = cfle4.per_rep(cfle4.finite_rows(spec, p, np.random.default_rng(2)))
    meas, pred = 1 - reps["within_mean"].mean(), 1 - reps["pred_within"].mean()
    assert 0.7 < meas / pred < 1.3, (meas, pred)


def test_units_check_their_params():
    names = [n for n, _ in cfle4.units(PARAMS)]
    assert names[0] == "population" and len(set(names)) == len(names)
    bad = copy.deepcopy(PARAMS)
    bad["params"]["small_fraction"] = [0.1]  # round(0.1 * 8) = 1 client
    with pytest.raises(ValueError, match="fewer than 2 clients"):
        cfle4.units(bad)
    bad = copy.deepcopy(PARAMS)
    bad["params"]["d"], bad["params"]["multi"] = 3, ["simplex4"]
    with pytest.raises(ValueError, match="needs d >= 4"):
        cfle4.units(bad)


# ------------------------------------------------------------------------------ decide

MG = dict(pop_tol=2.0**-30, min_slope=0.5, near=0.125, gap_frac=0.75)


def _meas(pop=0.0, hi=-0.75, lo=-1.25, first=(0.5, -0.5), last_gap=1.0, k3_hi=0.5):
    """Two k = 2 conditions (the first with the given slope interval and levels; the second
    always fine) and a k = 3 condition that must not count."""
    fits, levels = [], []
    for cond, h, l_, f, g in (("a", hi, lo, first, last_gap), ("b", -0.9, -1.1, (0.9, -0.9), 1.0)):
        for which in ("within", "across"):
            est = (h + l_) / 2 if np.isfinite(h) else np.nan
            fits.append(dict(cond=cond, k=2, which=which, est=est, lo=l_, hi=h, n=30))
        levels += [dict(cond=cond, k=2, nd=0.5, within_mean=f[0], across_mean=f[1], gap_frac=0.0),
                   dict(cond=cond, k=2, nd=64.0, within_mean=0.99, across_mean=-0.99,
                        gap_frac=g)]
    fits.append(dict(cond="m", k=3, which="within", est=k3_hi, lo=k3_hi, hi=k3_hi, n=30))
    levels += [dict(cond="m", k=3, nd=0.5, within_mean=0.0, across_mean=0.5, gap_frac=0.0),
               dict(cond="m", k=3, nd=64.0, within_mean=0.0, across_mean=0.5, gap_frac=0.0)]
    return {"pop": {"max": pop}, "fits": pd.DataFrame(fits), "levels": pd.DataFrame(levels)}


def _decide(meas, **kw):
    return cfle4.decide(meas, {"margins": {**MG, **kw}})


def test_decide_holds_when_everything_is_inside_and_reports_its_numbers():
    d = _decide(_meas(first=(0.875, -0.875)))
    assert isinstance(d, Decision) and d.verdict == HOLDS
    assert d.numbers["population"] == HOLDS and d.numbers["min_slope"] == 0.5
    assert set(d.numbers["slopes"]) == {"a within", "a across", "b within", "b across"}
    assert d.numbers["far at the smallest n/d"] == []
    assert d.numbers["no gap at the largest n/d"] == []


@pytest.mark.parametrize("pop, expected", [
    (MG["pop_tol"], CAVEAT), (down(MG["pop_tol"]), CAVEAT), (up(MG["pop_tol"]), NOT_SUPPORTED)])
def test_decide_population_tolerance(pop, expected):
    d = _decide(_meas(pop=pop))
    assert d.verdict == expected and d.numbers["population error"] == pop


@pytest.mark.parametrize("lo, hi, expected", [
    (-1.0, -0.5, CAVEAT),              # the interval's upper end at -min_slope
    (-1.0, down(-0.5), CAVEAT),
    (-1.0, up(-0.5), INCONCLUSIVE),    # straddles -min_slope
    (-0.5, -0.25, INCONCLUSIVE),       # lower end at -min_slope: not entirely above
    (up(-0.5), -0.25, NOT_SUPPORTED),  # entirely above: decays slower than (n/d)^-0.5
    (np.nan, np.nan, INCONCLUSIVE),    # unmeasured (fewer than 2 levels)
])
def test_decide_slope_against_min_slope(lo, hi, expected):
    d = _decide(_meas(lo=lo, hi=hi))
    assert d.verdict == expected
    assert d.numbers["slopes"]["b within"] == HOLDS


@pytest.mark.parametrize("first, expected", [
    ((0.875, -0.875), HOLDS),                # exactly near from +/-1: not far
    ((down(0.875), -0.875), CAVEAT),
    ((0.875, up(-0.875)), CAVEAT),
])
def test_decide_near_makes_the_caveat(first, expected):
    d = _decide(_meas(first=first))
    assert d.verdict == expected
    assert d.numbers["far at the smallest n/d"] == ([] if expected == HOLDS else ["a"])


@pytest.mark.parametrize("gap, expected", [(0.75, HOLDS), (up(0.75), HOLDS), (down(0.75), CAVEAT)])
def test_decide_gap_fraction_at_the_largest_n_over_d(gap, expected):
    d = _decide(_meas(first=(0.875, -0.875), last_gap=gap))
    assert d.verdict == expected


def test_decide_ignores_k_above_two():
    # a k = 3 condition whose within-slope would be not supported and whose levels are far
    assert _decide(_meas(first=(0.875, -0.875), k3_hi=5.0)).verdict == HOLDS


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("cfle4")
    r = run(get("CFLE4"), preset="smoke", out=out, store=out / "store")
    return r, out


def test_smoke_run_writes_a_complete_record(smoke):
    r, out = smoke
    assert r.paper == "CFL" and r.kind == "claim"
    assert r.verdict in (HOLDS, CAVEAT, INCONCLUSIVE, NOT_SUPPORTED)
    assert r.scope.startswith("k = 2 (the statement): ") and "k > 2" in r.scope
    for suffix in (".png", "_levels.csv", "_fits.csv", "_pairs.csv"):
        assert (out / f"CFLE4_smoke{suffix}").exists(), suffix
    conds = list(cfle4._conditions(PARAMS["params"]))
    assert list(r.numbers["condition"]) == conds
    for what in ("population tolerance pop_tol", "required decay slope min_slope",
                 "slope fitted from n/d fit_from", "far from +/-1 at the smallest n/d, near",
                 "fraction with a gap at the largest n/d, gap_frac"):
        assert sum(c.startswith(f"Sensitivity: {what} (chosen ") for c in r.caveats) == 1, what
    # the population part of the verdict and eq. (3) on the clusters' means hold to rounding
    assert "holds" in r.summary.split("Finite n")[0]
    assert r.numbers["eq. (3) on cluster means, max error"].max() < 1e-10
    again = run(get("CFLE4"), preset="smoke", out=out, store=out / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict  # resumed, same verdict


def test_sensitivity_lines_are_decide_at_the_neighbours(smoke):
    r, out = smoke
    table = pd.read_csv(out / "CFLE4_smoke.csv")
    params = PARAMS
    rng = (lambda key: unit_rng(0, "CFLE4", "analyze_" + key))
    meas = cfle4.measure(table, params, rng)
    v = cfle4.analyze(table, params, rng)
    assert v.verdict == cfle4.decide(meas, params).verdict == r.verdict
    mg = params["margins"]
    for key, what in (("pop_tol", "population tolerance pop_tol"),
                      ("min_slope", "required decay slope min_slope"),
                      ("fit_from", "slope fitted from n/d fit_from"),
                      ("near", "far from +/-1 at the smallest n/d, near"),
                      ("gap_frac", "fraction with a gap at the largest n/d, gap_frac")):
        (line,) = [s for s in v.sensitivity if s.startswith(what + " (chosen ")]
        for value in sorted(set(mg[f"{key}_neighbours"]) | {mg[key]}):
            if key == "fit_from":
                expected = cfle4.decide(cfle4.measure(table, params, rng, value), params).verdict
            else:
                expected = cfle4.decide(meas, with_margins(params, **{key: value})).verdict
            assert f"{value:g} -> {expected}" in line, (line, value, expected)
