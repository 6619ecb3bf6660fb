"""Study CFLR6 (CFL's rule (6) at the federated stationary point): its pieces on hand-made cases,
its pure decision on made-up counts at and around each threshold, its sensitivity lines against
``decide``, the closed-form population cases, and the smoke preset end to end."""

from __future__ import annotations

import copy
import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest

from mixlinreg.baselines import cosine_similarities, split_by_similarity
from mixlinreg.geometry import min_separation
from mixlinreg.stats import wilson_interval
from mixlinreg.theory import cfl_linear
from mixlinreg.theory.studies import cflr6, get
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS

EPS = 1e-9


def _params(**margins):
    params = copy.deepcopy(get("CFLR6").config("paper").values)
    params["margins"].update(margins)
    return params


# ------------------------------------------------------------------------------ the record


def test_the_record_is_cfl_s_and_registers_its_decide():
    study = get("CFLR6")
    assert study.decide is cflr6.decide and study.paper == "CFL" and study.order == 220
    assert "long version" in study.location and "NeurIPS" in study.location
    assert not re.search(r"Figure [23]", study.location)  # IFCA's figure numbering is not CFL's


# ------------------------------------------------------------------------------ the pieces


def test_success_means_each_side_is_a_union_of_true_clusters():
    labels = [0, 0, 1, 1, 2, 2]
    assert cflr6.cuts_no_cluster(labels, [0, 1], [2, 3, 4, 5])
    assert cflr6.cuts_no_cluster(labels, [0, 1, 4, 5], [2, 3])
    assert not cflr6.cuts_no_cluster(labels, [0], [1, 2, 3, 4, 5])
    # k = 2: the only bipartitions that cut no cluster are the true split
    two = [0, 0, 0, 1, 1]
    ok = [a for r in range(1, 5) for a in itertools.combinations(range(5), r)
          if 0 in a and cflr6.cuts_no_cluster(two, list(a), sorted(set(range(5)) - set(a)))]
    assert ok == [(0, 1, 2)]


@pytest.mark.parametrize("n", [5, 40])
def test_grams_give_cfl_linear_s_stationary_point_and_gradients(n):
    rng = np.random.default_rng(3)
    ts = cflr6.centers("simplex", 3, 10, 1.0, rng)
    X, y, labels = cfl_linear.draw_clients(ts, [4, 4, 4], n, 0.5, rng)
    grams = cfl_linear.Grams(X, y)
    for members in (np.arange(12), np.array([0, 1, 2, 3, 8, 9, 10, 11]), np.array([5, 6, 7, 4])):
        want = cfl_linear.stationary_point(X[members], y[members])
        got = grams.stationary_point(members)
        # well-conditioned normal equations against QR/SVD least squares: agree to rounding
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(grams.gradients(members, got),
                                   cfl_linear.client_gradients(X[members], y[members], want),
                                   rtol=1e-8, atol=1e-10)


def test_grams_fall_back_to_the_minimum_norm_fit_when_singular():
    rng = np.random.default_rng(0)
    X, y, _ = cfl_linear.draw_clients(np.ones((1, 12)), [1], 4, 0.3, rng)  # 4 rows in d = 12
    np.testing.assert_allclose(cfl_linear.Grams(X, y).stationary_point(np.array([0])),
                               cfl_linear.stationary_point(X, y), atol=1e-12)


def test_centres_of_each_geometry():
    rng = np.random.default_rng(1)
    s = cflr6.centers("simplex", 4, 9, 2.0, rng)
    assert math.isclose(min_separation(s), 2.0, rel_tol=1e-12)
    r = cflr6.centers("random", 3, 9, 2.0, rng)
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), 2.0 / math.sqrt(2.0), rtol=1e-12)
    c = cflr6.centers("collinear", 3, 9, 2.0, rng)
    np.testing.assert_allclose(c.mean(axis=0), c[1], atol=1e-15)  # the middle centre is the mean
    assert math.isclose(min_separation(c), 2.0, rel_tol=1e-12)
    with pytest.raises(ValueError, match="k = 3"):
        cflr6.centers("collinear", 4, 9, 2.0, rng)
    with pytest.raises(ValueError, match="geometry must be one of"):
        cflr6.centers("ring", 3, 9, 2.0, rng)


def test_nominal_rho_and_cfl_thresholds_are_their_formulas():
    # k = 3: |v|^2 = R^2 (k - 1)/(2k) = 1/3 at R = 1
    assert math.isclose(cflr6.nominal_rho(3, 1.0, 16.0, 1.0), math.sqrt(4.0 / 16.0))
    eps1, eps2 = cflr6.cfl_thresholds(0.5, 20, 80, 2.0, 0.1, 0.05)
    assert math.isclose(eps2, 0.1 * math.sqrt(2 * 0.5 * math.sqrt(20 / 80) * 2.0))
    assert math.isclose(eps1, 0.05 * eps2)


def test_noise_free_splits_recover_every_cluster():
    rng = np.random.default_rng(7)
    for geometry, k in (("simplex", 4), ("random", 3), ("simplex", 2)):
        p = {"d": 12, "R": 1.0, "clients_per_cluster": 3, "lr": 0.1, "eps1_ratio": 0.02,
             "max_rounds": 1000}
        row = cflr6.trial(geometry, k, 60, 0.01, p, rng, run_cfl=True)
        assert row["ok_split"] and row["ok_tree"] and row["ok_cfl"], (geometry, k, row)
        assert row["cut_value"] < 0  # the clusters' gradients point apart


def test_the_recursion_fails_as_soon_as_a_split_cuts_a_cluster():
    rng = np.random.default_rng(2)
    X, y, labels = cfl_linear.draw_clients(cflr6.centers("simplex", 3, 8, 1.0, rng), [2, 2, 2],
                                           40, 0.1, rng)
    grams = cfl_linear.Grams(X, y)
    assert cflr6.recursive_split(grams, labels)
    assert not cflr6.recursive_split(grams, labels, first=(np.array([0]), np.arange(1, 6)))


# ------------------------------------------------------------------------------ population


def test_the_exhaustive_optimum_is_rule_6_s_value():
    """split_by_similarity solves (6) exactly: its cut's value is the enumerated minimum."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        S = cosine_similarities(rng.standard_normal((7, 3)))
        a, b = split_by_similarity(S)
        best, opt = cflr6._optimal_cuts(S)
        assert math.isclose(S[np.ix_(a, b)].max(), best, abs_tol=1e-12)
        assert any(set(a.tolist()) in (set(x.tolist()), set(z.tolist())) for x, z in opt)


def test_population_cases_in_closed_form():
    pop = cflr6.population_cases(6, 1.0, 2, np.random.default_rng(0)).set_index("case")
    for k in (2, 3, 4):
        r = pop.loc[f"simplex k={k}"]
        # a regular simplex's centroid-to-vertex directions: cosine -1/(k-1) across clusters
        assert math.isclose(r["max_cross_cos"], -1.0 / (k - 1), abs_tol=1e-12)
        assert r["optimal_cuts_cutting_a_cluster"] == 0 and not r["rule6_cuts_a_cluster"]
        assert r["optimal_cuts"] == 2 ** (k - 1) - 1  # every grouping of whole clusters ties
    side = pop.loc["collinear, two on one side (0, R, 3R)"]
    assert math.isclose(side["max_cross_cos"], 1.0, abs_tol=1e-12)
    assert side["optimal_cuts"] == 1 and not side["rule6_cuts_a_cluster"]
    for case in ("collinear, middle at the mean (-R, 0, R)",
                 "collinear, sizes 2:1:1 put the mean on the middle (0, R, 3R)",
                 "triangle and its centroid (k=4)"):
        r = pop.loc[case]
        assert r["zero_gradients"] == 1 and r["optimal_value"] == 0.0
        assert r["optimal_cuts_cutting_a_cluster"] > 0 and r["rule6_cuts_a_cluster"], case


# ------------------------------------------------------------------------------ the decision


def _cells(rows):
    """Made-up counts: ``(geometry, measure, sigma, nd, rho, successes, trials)`` per row."""
    return pd.DataFrame([dict(geometry=g, k=2, sigma=s, nd=nd, n=int(nd * 20), rho=rho,
                              measure=m, successes=x, trials=t)
                         for g, m, s, nd, rho, x, t in rows])


GOOD = [("simplex", "split", 0.5, 16.0, 0.25, 80, 80), ("simplex", "tree", 0.5, 16.0, 0.25, 80, 80),
        ("random", "split", 0.5, 16.0, 0.25, 80, 80),
        ("simplex", "split", 0.5, 1.0, 2.0, 10, 80)]  # not covered: does not decide
LO80 = float(wilson_interval(80, 80, 0.95)[0])  # 0.954...


def _gamma(rows):
    """Made-up per-trial gamma measurements: ``(nd, ok_split, gamma_max, alpha_cross, cut_value,
    copies)`` per row, simplex, k = 2, sigma 0.5."""
    out = [dict(geometry="simplex", k=2, sigma=0.5, nd=nd, ok_split=ok, gamma_max=g,
                alpha_cross=a, cut_value=v)
           for nd, ok, g, a, v, copies in rows for _ in range(copies)]
    return pd.DataFrame(out)


# one hard cell: (A) holds (ratio 0.5) in 250 trials, all split correctly; it fails (ratio 1.5)
# in 150, 40 of which still split correctly
GAMMA_OK = [(1.0, True, 0.5, -1.0, -0.9, 250), (1.0, True, 1.5, -1.0, -0.9, 40),
            (1.0, False, 1.5, -1.0, 0.2, 110)]


def test_decide_holds_when_every_covered_cell_s_lower_bound_reaches_the_threshold():
    g = _gamma(GAMMA_OK)
    d = cflr6.decide(_cells(GOOD), _params(threshold=LO80), g)
    assert d.verdict == HOLDS and d.numbers["evidence cells"] == 3
    assert cflr6.decide(_cells(GOOD), _params(threshold=LO80 + EPS), g).verdict == INCONCLUSIVE


def test_decide_is_not_supported_when_a_covered_cell_s_upper_bound_is_below():
    hi = float(wilson_interval(60, 80, 0.95)[1])
    bad = GOOD + [("simplex", "tree", 1.0, 32.0, 0.5, 60, 80)]  # rho == rho_covered: covered
    g = _gamma(GAMMA_OK)
    assert cflr6.decide(_cells(bad), _params(threshold=hi + EPS), g).verdict == NOT_SUPPORTED
    assert cflr6.decide(_cells(bad), _params(threshold=hi), g).verdict == INCONCLUSIVE
    # just outside the covered region the failing cell no longer decides
    assert cflr6.decide(_cells(bad), _params(threshold=hi + EPS, rho_covered=0.5 - EPS), g
                        ).verdict == HOLDS


def test_decide_caveats_on_the_collinear_geometry_and_on_end_to_end_cfl():
    for extra in (("collinear", "split", 0.5, 16.0, 0.25, 20, 80),
                  ("simplex", "cfl", 0.5, 16.0, 0.25, 20, 80)):
        g = _gamma(GAMMA_OK)
        d = cflr6.decide(_cells(GOOD + [extra]), _params(threshold=0.95), g)
        assert d.verdict == CAVEAT, extra
        uncovered = extra[:4] + (0.25 + 1.0,) + extra[5:]
        assert cflr6.decide(_cells(GOOD + [uncovered]), _params(threshold=0.95,
                                                                rho_covered=1.0), g
                            ).verdict == HOLDS
    # an end-to-end cell whose interval still reaches the threshold is no caveat
    fine = ("simplex", "cfl", 0.5, 16.0, 0.25, 19, 20)
    assert cflr6.decide(_cells(GOOD + [fine]), _params(threshold=0.95), _gamma(GAMMA_OK)
                        ).verdict == HOLDS


def test_decide_without_a_covered_cell_is_inconclusive():
    d = cflr6.decide(_cells(GOOD), _params(rho_covered=0.2))
    assert d.verdict == INCONCLUSIVE and d.numbers["evidence cells"] == 0


def test_sensitivity_lines_are_decide_at_the_neighbours():
    params = _params()
    cells = _cells(GOOD + [("simplex", "split", 1.0, 16.0, 0.8, 70, 80)])
    g = _gamma(GAMMA_OK)
    lines = cflr6.sensitivity(cells, params, g)
    mg = params["margins"]
    keys = ("threshold", "rho_covered", "confidence", "gamma_margin", "hard_band",
            "min_condition_trials")
    assert len(lines) == len(keys)
    for line, key in zip(lines, keys):
        values = sorted(set(mg[f"{key}_neighbours"]) | {mg[key]})
        want = "; ".join(f"{v:g} -> {cflr6.decide(cells, _params(**{key: v}), g).verdict}"
                         for v in values)
        assert line.endswith(f"(chosen {mg[key]:g}): {want}"), line
    # min_condition_trials' neighbours straddle the 250 trials under (A): its line moves
    assert "1000 -> inconclusive" in lines[-1] and "50 -> holds" in lines[-1]


def test_scope_names_where_the_rule_succeeds_and_fails():
    rows = [(g, m, s, nd, 0.3, x, 80) for g in ("simplex", "random") for m in ("split", "tree")
            for s, nd, x in ((0.1, 1.0, 40), (0.1, 2.0, 80), (0.1, 4.0, 80),
                             (1.0, 1.0, 10), (1.0, 2.0, 70), (1.0, 4.0, 80))]
    rows += [("collinear", "split", 1.0, 4.0, 0.3, 20, 80)]
    cells = cflr6._bounds(_cells(rows), 0.95)
    assert cflr6.holds_from(cells, 0.95) == {0.1: (2.0, 1.0), 1.0: (4.0, 2.0)}
    line = cflr6.scope_line(cells, 0.95, 1.0)
    assert "n/d >= 2 at sigma/R = 0.1; n/d >= 4 at sigma/R = 1" in line
    assert "n/d <= 1 at sigma/R = 0.1; n/d <= 2 at sigma/R = 1" in line
    assert line.endswith("(collinear, k = 3) at most 0.25 at sigma/R = 1 (any n/d)")
    assert ("collinear, k = 3) the split succeeds at n/d = 4 in 0.25 (at most 0.25 at any n/d) "
            "at sigma/R = 1") in cflr6._collinear_text(cells, 1.0, "with")


# ------------------------------------------------------------------------------ end to end


def test_smoke_preset_makes_a_complete_record_and_resumes(tmp_path):
    from mixlinreg.theory import run_study

    r = run_study("CFLR6", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.paper == "CFL" and r.scope.startswith("rule (6)")
    assert sum(c.startswith("Sensitivity: ") for c in r.caveats) == 6
    for name in ("CFLR6_smoke.json", "CFLR6_smoke.csv", "CFLR6_smoke_population.csv",
                 "CFLR6_smoke_gamma.csv", "CFLR6_smoke.png"):
        assert (tmp_path / name).exists(), name
    assert r.version == 2 and set(r.cells) == {"hard", "total", "rule"}
    gc = pd.read_csv(tmp_path / "CFLR6_smoke_gamma.csv")
    assert r.cells["total"] == len(gc) and r.cells["hard"] == int(gc["hard"].sum())
    assert (gc["a_holds"] + gc["a_fails"] + gc["a_boundary"] == gc["trials"]).all()
    # the record is its committed tables' analysis, with the units' rows rebuilt as
    # tests/test_committed_records.py rebuilds them (mixlinreg.theory.records.committed_units:
    # the counts repeated per trial, and the population table whole, which holds the per-trial
    # gamma rows, part = "gamma")
    from mixlinreg.theory.records import committed_units
    from mixlinreg.theory.study import StudyResult, unit_rng

    rec = StudyResult.from_json((tmp_path / "CFLR6_smoke.json").read_text())
    params = get("CFLR6").config("smoke").values
    table = committed_units(rec, tmp_path, params)
    v = get("CFLR6").analyze(table, params,
                             lambda key: unit_rng(rec.seed, "CFLR6", "analyze_" + key))
    assert (v.verdict, v.summary, v.scope, v.cells) == (rec.rule_verdict, rec.summary, rec.scope,
                                                        rec.cells)
    assert [f"Sensitivity: {line}" for line in v.sensitivity] == rec.caveats[-6:]
    import json

    num = json.loads(v.numbers.to_json(orient="split", index=False, double_precision=15))
    pd.testing.assert_frame_equal(pd.DataFrame(num["data"], columns=num["columns"]), rec.numbers,
                                  check_dtype=False)
    cells = pd.read_csv(tmp_path / "CFLR6_smoke.csv")
    assert set(cells["measure"]) == {"split", "tree", "cfl"}
    assert (cells["successes"] <= cells["trials"]).all()
    again = run_study("CFLR6", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict and again.scope == r.scope


def test_docstring_examples():
    import doctest

    result = doctest.testmod(cflr6, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_shared_centre_default_changes_nothing_and_removes_the_structure():
    """The control's shared_centre (issue 37): absent it is false and a trial equals one with an
    explicit false (the committed record's draws); true gives every cluster the same centre, so
    rule (6)'s split is chance; with CFL trials it is refused by name."""
    p = dict(get("CFLR6").config("smoke").values["params"])
    assert p["shared_centre"] is False
    base = {k: v for k, v in p.items() if k != "shared_centre"}
    a = cflr6.trial("simplex", 2, 40, 0.1, base, np.random.default_rng(3), run_cfl=False)
    b = cflr6.trial("simplex", 2, 40, 0.1, dict(p), np.random.default_rng(3), run_cfl=False)
    assert a == b or all((x == y) or (x != x and y != y) for x, y in zip(a.values(), b.values()))
    ok = [cflr6.trial("simplex", 2, 320, 0.1, dict(p, shared_centre=True),
                      np.random.default_rng(s), run_cfl=False)["ok_split"] for s in range(20)]
    assert sum(ok) <= 5  # 6 clients: a random bipartition is the true one with prob. 1/31
    params = get("CFLR6").config("smoke").values
    params["params"].update(shared_centre=True, cfl_trials=2)
    with pytest.raises(ValueError, match=r"params\.cfl_trials must be 0 with shared_centre"):
        cflr6.units(params)


# ------------------------------------------------------------------------------ version 2: gamma


def test_gamma_stats_are_their_definition():
    """gamma_i = |g_i - grad R_I(i)| / |grad R_I(i)| with grad R_j(theta) = 2 (theta - theta*_j),
    alpha_cross_max the largest cosine between two clusters' true gradients: by brute force."""
    rng = np.random.default_rng(11)
    ts = cflr6.centers("simplex", 3, 6, 1.0, rng)
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    G, theta = rng.standard_normal((7, 6)), rng.standard_normal(6)
    gmax, alpha = cflr6.gamma_stats(G, theta, ts, labels)
    pop = [2 * (theta - ts[j]) for j in range(3)]
    want = max(np.linalg.norm(G[i] - pop[labels[i]]) / np.linalg.norm(pop[labels[i]])
               for i in range(7))
    cos = max(pop[j] @ pop[m] / np.linalg.norm(pop[j]) / np.linalg.norm(pop[m])
              for j in range(3) for m in range(3) if j != m)
    assert math.isclose(gmax, want, rel_tol=1e-12) and math.isclose(alpha, cos, rel_tol=1e-12)
    # a cluster whose true gradient is zero has gamma = inf; shared centres: alpha = 1
    g0, _ = cflr6.gamma_stats(G, ts[1], ts, labels)
    assert g0 == math.inf
    _, a1 = cflr6.gamma_stats(G, theta, np.repeat(ts[:1], 3, axis=0), labels)
    assert math.isclose(a1, 1.0, rel_tol=1e-12)


def test_the_trial_s_gamma_is_measured_at_the_stationary_point():
    p = {"d": 10, "R": 1.0, "clients_per_cluster": 4, "lr": 0.1, "eps1_ratio": 0.02,
         "max_rounds": 100}
    row = cflr6.trial("simplex", 2, 200, 0.1, p, np.random.default_rng(4), run_cfl=False)
    rng = np.random.default_rng(4)  # the same draws by hand
    ts = cflr6.centers("simplex", 2, 10, 1.0, rng)
    X, y, labels = cfl_linear.draw_clients(ts, [4, 4], 200, 0.1, rng)
    theta = cfl_linear.stationary_point(X, y)
    G = cfl_linear.client_gradients(X, y, theta)
    gmax, alpha = cflr6.gamma_stats(G, theta, ts, labels)
    assert math.isclose(row["gamma_max"], gmax, rel_tol=1e-8)
    assert math.isclose(row["alpha_cross"], alpha, rel_tol=1e-8)
    assert -1.0 < row["alpha_cross"] < -0.95  # two clusters: near, not at, -1 at the fit
    assert row["gamma_max"] == float(f"{row['gamma_max']:.10g}")  # stored to 10 digits


def test_conditions_b_and_c_guarantee_rule_6_and_a_does_not():
    """B and C are theorems (the docstring of condition_ratios): on random gradient sets near
    their clusters' true gradients, none has a counter-example; (A) has one in the plane."""
    rng = np.random.default_rng(8)
    held = {"B": 0, "C": 0}
    for _ in range(3000):
        k, per, d = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(2, 6))
        pop = rng.standard_normal((k, d))
        labels = np.repeat(np.arange(k), per)
        G = pop[labels] + rng.uniform(0.05, 0.9) * np.linalg.norm(pop[labels], axis=1)[:, None] \
            * rng.standard_normal((labels.size, d)) / math.sqrt(d)
        gam = max(np.linalg.norm(G[i] - pop[labels[i]]) / np.linalg.norm(pop[labels[i]])
                  for i in range(labels.size))
        C = cosine_similarities(pop)
        alpha = C[~np.eye(k, dtype=bool)].max()
        S = cosine_similarities(G)
        a, b = split_by_similarity(S)
        ok = cflr6.cuts_no_cluster(labels, a, b)
        _, rb, rc = cflr6.condition_ratios(gam, alpha, S[np.ix_(a, b)].max())
        for name, r in (("B", rb), ("C", rc)):
            if r < 1 - 1e-9:
                held[name] += 1
                assert ok, (name, k, per, d)
    assert held["B"] > 300 and held["C"] > 100  # the checks were exercised
    # (A) in the plane: clients at +-80 degrees from their cluster's gradient (+-e1)
    ang = np.deg2rad([80.0, -80.0, 100.0, -100.0])
    G = np.c_[np.cos(ang), np.sin(ang)] * math.cos(np.deg2rad(80.0))
    pop = np.array([[1.0, 0.0], [-1.0, 0.0]])
    labels = np.array([0, 0, 1, 1])
    gam = max(np.linalg.norm(G[i] - pop[labels[i]]) for i in range(4))
    assert math.isclose(gam, math.sin(np.deg2rad(80.0)), rel_tol=1e-12)  # 0.985 < 1
    ra, rb, rc = cflr6.condition_ratios(gam, -1.0, 0.0)
    assert ra < 1 and rc > 1
    a, b = split_by_similarity(cosine_similarities(G))
    assert not cflr6.cuts_no_cluster(labels, a, b)  # (A) holds, rule (6) cuts both clusters


def test_gamma_cells_count_the_margin_and_the_hard_cells():
    mg = _params()["margins"]
    m = mg["gamma_margin"]
    rows = [(1.0, True, 1 - 2 * m, -1.0, -0.9, 3),  # (A) holds (ratio below 1 - m)
            (1.0, False, 1.0, -1.0, -0.9, 2),  # on the boundary: neither, no counter-example
            (1.0, False, 1 + m, -1.0, -0.9, 1),  # fails (>= 1 + m)
            (2.0, True, 0.5, -1.0, -0.9, 10),  # all hold, all succeed: not hard
            (4.0, True, 1.5, -1.0, -0.9, 19), (4.0, False, 1.5, -1.0, -0.9, 1)]  # rate 0.95
    gc = cflr6.gamma_cells(_gamma(rows), mg).set_index("nd")
    assert gc.loc[1.0, ["a_holds", "a_boundary", "a_fails", "a_counter"]].tolist() == [3, 2, 1, 0]
    assert gc.loc[1.0, "hard"] and not gc.loc[2.0, "hard"]
    assert not gc.loc[4.0, "hard"]  # rate exactly 1 - hard_band: not strictly inside
    assert cflr6.gamma_cells(_gamma(rows), dict(mg, hard_band=0.04)).set_index("nd").loc[
        4.0, "hard"]
    d = cflr6.decide(_cells(GOOD), _params(), _gamma(rows))
    assert d.numbers["A counter-examples"] == 0 and d.numbers["hard cells"] == 1
    assert d.verdict == INCONCLUSIVE  # 3 trials under (A) in hard cells < 200


def test_one_counter_example_to_a_makes_the_verdict_not_supported():
    g = _gamma(GAMMA_OK + [(1.0, False, 0.99, -1.0, 0.3, 1)])  # (A) holds, the split cuts
    d = cflr6.decide(_cells(GOOD), _params(), g)
    assert d.verdict == NOT_SUPPORTED and d.numbers["A counter-examples"] == 1
    # the same trial within the margin of the bound is no counter-example
    near = _gamma(GAMMA_OK + [(1.0, False, 1 - 1e-10, -1.0, 0.3, 1)])
    assert cflr6.decide(_cells(GOOD), _params(), near).verdict == HOLDS
    assert cflr6.decide(_cells(GOOD), _params(gamma_margin=1e-12), near).verdict == NOT_SUPPORTED
    # without gamma measurements the check has no evidence
    assert cflr6.decide(_cells(GOOD), _params()).verdict == INCONCLUSIVE


def test_the_broken_split_makes_condition_a_fail_on_clustered_data():
    """split_rule = "norms" (a broken rule (6), blind to directions): where (A) holds it cuts
    clusters, so the counter-example rule fires on real draws; the default is rule (6)."""
    params = copy.deepcopy(get("CFLR6").config("smoke").values)
    p = params["params"]
    assert p["split_rule"] == "rule6" and p["cfl_nd_levels"]
    p.update(trials=30, cfl_trials=0, split_rule="norms", k_levels=[2], sigma_levels=[0.1],
             nd_levels=[16], geometries=["simplex"])
    t = cflr6.compute({"geometry": "simplex", "k": 2, "sigma": 0.1, "nd": 16}, params,
                      np.random.default_rng(0), None)
    gc = cflr6.gamma_cells(cflr6.gamma_trials(t), params["margins"])
    assert gc["a_holds"].sum() >= 20 and gc["a_counter"].sum() >= 5
    p["split_rule"] = "rule6"
    t6 = cflr6.compute({"geometry": "simplex", "k": 2, "sigma": 0.1, "nd": 16}, params,
                       np.random.default_rng(0), None)
    assert cflr6.gamma_cells(cflr6.gamma_trials(t6), params["margins"])["a_counter"].sum() == 0
    # the same draws: gamma does not depend on the split rule
    np.testing.assert_array_equal(t["gamma_max"], t6["gamma_max"])


def test_new_params_default_to_version_1_s_computation():
    """split_rule absent is rule (6) and cfl_nd_levels absent or empty runs CFL at every level;
    listed levels limit CFL to them."""
    p = dict(get("CFLR6").config("smoke").values["params"])
    base = {k: v for k, v in p.items() if k not in ("split_rule", "cfl_nd_levels")}
    a = cflr6.trial("simplex", 3, 30, 0.5, base, np.random.default_rng(5), run_cfl=False)
    b = cflr6.trial("simplex", 3, 30, 0.5, dict(p, split_rule="rule6"), np.random.default_rng(5),
                    run_cfl=False)
    assert all((x == y) or (x != x and y != y) for x, y in zip(a.values(), b.values()))
    params = copy.deepcopy(get("CFLR6").config("smoke").values)
    params["params"].update(trials=2, cfl_trials=1)
    spec = {"geometry": "simplex", "k": 2, "sigma": 0.1, "nd": 16}
    for levels, ran in (([], True), ([16], True), ([1], False)):
        params["params"]["cfl_nd_levels"] = levels
        t = cflr6.compute(spec, params, np.random.default_rng(0), None)
        assert t["ok_cfl"].notna().sum() == (1 if ran else 0), levels


def test_split_by_norms_is_blind_to_directions():
    G = np.array([[1.0, 0.0], [-1.05, 0.0], [0.0, 3.0], [0.0, -3.1]])
    a, b = cflr6.split_by_norms(G)
    assert a.tolist() == [0, 1] and b.tolist() == [2, 3]
