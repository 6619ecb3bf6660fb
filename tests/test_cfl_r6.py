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


def test_decide_holds_when_every_covered_cell_s_lower_bound_reaches_the_threshold():
    d = cflr6.decide(_cells(GOOD), _params(threshold=LO80))
    assert d.verdict == HOLDS and d.numbers["evidence cells"] == 3
    assert cflr6.decide(_cells(GOOD), _params(threshold=LO80 + EPS)).verdict == INCONCLUSIVE


def test_decide_is_not_supported_when_a_covered_cell_s_upper_bound_is_below():
    hi = float(wilson_interval(60, 80, 0.95)[1])
    bad = GOOD + [("simplex", "tree", 1.0, 32.0, 0.5, 60, 80)]  # rho == rho_covered: covered
    assert cflr6.decide(_cells(bad), _params(threshold=hi + EPS)).verdict == NOT_SUPPORTED
    assert cflr6.decide(_cells(bad), _params(threshold=hi)).verdict == INCONCLUSIVE
    # just outside the covered region the failing cell no longer decides
    assert cflr6.decide(_cells(bad), _params(threshold=hi + EPS, rho_covered=0.5 - EPS)
                        ).verdict == HOLDS


def test_decide_caveats_on_the_collinear_geometry_and_on_end_to_end_cfl():
    for extra in (("collinear", "split", 0.5, 16.0, 0.25, 20, 80),
                  ("simplex", "cfl", 0.5, 16.0, 0.25, 20, 80)):
        d = cflr6.decide(_cells(GOOD + [extra]), _params(threshold=0.95))
        assert d.verdict == CAVEAT, extra
        uncovered = extra[:4] + (0.25 + 1.0,) + extra[5:]
        assert cflr6.decide(_cells(GOOD + [uncovered]), _params(threshold=0.95,
                                                                rho_covered=1.0)).verdict == HOLDS
    # an end-to-end cell whose interval still reaches the threshold is no caveat
    fine = ("simplex", "cfl", 0.5, 16.0, 0.25, 19, 20)
    assert cflr6.decide(_cells(GOOD + [fine]), _params(threshold=0.95)).verdict == HOLDS


def test_decide_without_a_covered_cell_is_inconclusive():
    d = cflr6.decide(_cells(GOOD), _params(rho_covered=0.2))
    assert d.verdict == INCONCLUSIVE and d.numbers["evidence cells"] == 0


def test_sensitivity_lines_are_decide_at_the_neighbours():
    params = _params()
    cells = _cells(GOOD + [("simplex", "split", 1.0, 16.0, 0.8, 70, 80)])
    lines = cflr6.sensitivity(cells, params)
    mg = params["margins"]
    for line, key in zip(lines, ("threshold", "rho_covered", "confidence")):
        values = sorted(set(mg[f"{key}_neighbours"]) | {mg[key]})
        want = "; ".join(f"{v:g} -> {cflr6.decide(cells, _params(**{key: v})).verdict}"
                         for v in values)
        assert line.endswith(f"(chosen {mg[key]:g}): {want}"), line


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
    assert sum(c.startswith("Sensitivity: ") for c in r.caveats) == 3
    for name in ("CFLR6_smoke.json", "CFLR6_smoke.csv", "CFLR6_smoke_population.csv",
                 "CFLR6_smoke.png"):
        assert (tmp_path / name).exists(), name
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
