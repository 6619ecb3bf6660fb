"""Study CFLF12 (CFL's Figures 1-2, the toys): its pure ``decide`` at and around every threshold,
the sensitivity lines against ``decide`` at the neighbours, the toys' formulas against closed
forms and finite differences, config errors, and a complete smoke record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.stats import Fit, wilson_interval
from mixlinreg.theory.study import HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS, run
from mixlinreg.theory.studies import cflf12, get, run_study

ROOT = Path(__file__).resolve().parents[1]
EPS = 2.0**-30

MARGINS = {"tol": 0.0625, "floor": 0.25, "cos_eps": 0.125, "rate_target": 0.875,
           "split_target": 0.875, "gain_margin": 0.25,
           "tol_neighbours": [0.03125], "floor_neighbours": [0.5], "cos_eps_neighbours": [0.25],
           "rate_target_neighbours": [0.75], "split_target_neighbours": [0.75],
           "gain_margin_neighbours": [0.5]}
N = 100  # 100/100 has Wilson lower end 0.963 (>= 0.875); 80/100 upper end 0.87 (< 0.875)


def _params(**changes):
    return {"params": {}, "margins": dict(MARGINS, **changes)}


def _meas(cmax=None, imin=None, icos=None, split=None, gain=Fit(0.5, 0.375, 0.625, 50)):
    """Made-up measurements: every start / replicate good unless given."""
    return {"congruent_max": np.zeros(N) if cmax is None else np.asarray(cmax, float),
            "incongruent_min": np.ones(N) if imin is None else np.asarray(imin, float),
            "incongruent_cos": -np.ones(N) if icos is None else np.asarray(icos, float),
            "cases": {"xor": {"split": np.ones(N, bool) if split is None else np.asarray(split),
                              "gain": gain}}}


def _parts(meas, **changes):
    return {k: v["verdict"] for k, v in cflf12.decide(meas, _params(**changes)).numbers[
        "parts"].items()}


def test_registry_and_metadata():
    study = get("CFLF12")
    assert study.decide is cflf12.decide and study.paper == "CFL" and study.order == 230
    assert "short (workshop) version" in study.location and "long version" not in study.location


def test_decide_all_good_holds():
    d = cflf12.decide(_meas(), _params())
    assert d.verdict == HOLDS
    assert set(d.numbers["parts"]) == {"Fig. 2 congruent", "Fig. 2 incongruent",
                                       "Fig. 1 xor: split", "Fig. 1 xor: gain"}
    assert d.numbers["parts"]["Fig. 2 congruent"]["k"] == N


def test_decide_congruent_tolerance_is_inclusive():
    at = np.full(N, 0.0625)
    assert _parts(_meas(cmax=at))["Fig. 2 congruent"] == HOLDS
    above = np.full(N, 0.0625 + EPS)
    assert _parts(_meas(cmax=above))["Fig. 2 congruent"] == NOT_SUPPORTED  # 0/100
    # 80 of 100 at the tolerance: the Wilson upper end 0.87 is below the target 0.875
    mixed = np.r_[np.zeros(80), np.ones(20)]
    assert wilson_interval(80, 100)[1] < 0.875
    assert _parts(_meas(cmax=mixed))["Fig. 2 congruent"] == NOT_SUPPORTED
    # 85 of 100: the interval straddles 0.875
    assert _parts(_meas(cmax=np.r_[np.zeros(85), np.ones(15)]))["Fig. 2 congruent"] == INCONCLUSIVE


def test_decide_incongruent_floor_and_cosine():
    assert _parts(_meas(imin=np.full(N, 0.25)))["Fig. 2 incongruent"] == HOLDS
    assert _parts(_meas(imin=np.full(N, 0.25 - EPS)))["Fig. 2 incongruent"] == NOT_SUPPORTED
    assert _parts(_meas(icos=np.full(N, -1 + 0.125)))["Fig. 2 incongruent"] == HOLDS
    assert _parts(_meas(icos=np.full(N, -1 + 0.125 + EPS)))["Fig. 2 incongruent"] == NOT_SUPPORTED
    # an undefined cosine (a zero gradient) never counts as opposite directions
    assert _parts(_meas(icos=np.full(N, np.nan)))["Fig. 2 incongruent"] == NOT_SUPPORTED


def test_decide_split_rate_and_gain():
    assert _parts(_meas(split=np.r_[np.ones(80), np.zeros(20)].astype(bool)))[
        "Fig. 1 xor: split"] == NOT_SUPPORTED
    assert _parts(_meas(split=np.r_[np.ones(85), np.zeros(15)].astype(bool)))[
        "Fig. 1 xor: split"] == INCONCLUSIVE
    assert _parts(_meas(gain=Fit(0.5, 0.25, 0.75, 50)))["Fig. 1 xor: gain"] == HOLDS
    assert _parts(_meas(gain=Fit(0.5, 0.25 - EPS, 0.75, 50)))["Fig. 1 xor: gain"] == INCONCLUSIVE
    assert _parts(_meas(gain=Fit(0.125, 0.0, 0.25 - EPS, 50)))["Fig. 1 xor: gain"] == NOT_SUPPORTED
    # the verdict is the weakest part
    assert cflf12.decide(_meas(gain=Fit(0.125, 0.0, 0.125, 50)), _params()).verdict == \
        NOT_SUPPORTED


def test_wilson_rate_rule_at_its_edges():
    lo, hi = wilson_interval(100, 100)
    assert cflf12.rate_verdict(100, 100, float(lo))[0] == HOLDS
    assert cflf12.rate_verdict(100, 100, float(lo) + EPS)[0] == INCONCLUSIVE
    lo, hi = wilson_interval(10, 100)
    assert cflf12.rate_verdict(10, 100, float(hi))[0] == INCONCLUSIVE
    assert cflf12.rate_verdict(10, 100, float(hi) + EPS)[0] == NOT_SUPPORTED


def test_sensitivity_lines_equal_decide_at_the_neighbours():
    meas = _meas(cmax=np.r_[np.zeros(95), np.full(5, 0.05)], imin=np.r_[np.ones(95),
                                                                          np.full(5, 0.3)])
    params = _params()
    lines = cflf12.sensitivity(meas, params)
    assert len(lines) == 6
    for key, line in zip(("tol", "floor", "cos_eps", "rate_target", "split_target",
                          "gain_margin"), lines):
        chosen, neigh = MARGINS[key], MARGINS[key + "_neighbours"]
        expected = "; ".join(f"{v:g} -> {cflf12.decide(meas, _params(**{key: v})).verdict}"
                             for v in sorted(set(neigh) | {chosen}))
        assert line.endswith(f"(chosen {chosen:g}): {expected}"), (line, expected)
    # the tolerance's neighbour 0.03125 drops the five congruent starts at 0.05: 95/100 still holds
    assert "0.03125 -> holds" in lines[0]
    # the floor's neighbour 0.5 drops five incongruent starts: 95/100, still holds
    assert "0.5 -> holds" in lines[1]


def test_scope_names_the_parts_that_differ():
    d = cflf12.decide(_meas(gain=Fit(0.125, 0.0, 0.125, 50)), _params())
    scope = cflf12._scope(d)
    assert scope.startswith("holds for Fig. 2 congruent") and "not supported for Fig. 1 xor: gain" \
        in scope
    assert cflf12._scope(cflf12.decide(_meas(), _params())) == ""


# ------------------------------------------------------------------------------ formulas


def _num_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_dead_zone_gradient_matches_finite_differences_and_is_zero_inside():
    A = cflf12.spd([1.0, 0.25], 30.0)
    np.testing.assert_allclose(np.linalg.eigvalsh(A), [0.25, 1.0])
    c = np.array([0.3, -0.2])
    for theta in (np.array([2.0, 1.0]), np.array([-1.0, 3.0])):
        _, g = cflf12.dead_zone(theta[None], c, A, 0.5)
        num = _num_grad(lambda t: cflf12.dead_zone(t[None], c, A, 0.5)[0][0], theta)
        np.testing.assert_allclose(g[0], num, atol=1e-7)
    r, g = cflf12.dead_zone(c[None] + 0.1, c, A, 0.5)
    assert r[0] == 0 and not g.any()
    # delta = 0: the least squares risk 1/2 (theta - c)^T A (theta - c)
    t = np.array([[1.0, 2.0]])
    r, g = cflf12.dead_zone(t, c, A, 0.0)
    np.testing.assert_allclose(r[0], 0.5 * (t[0] - c) @ A @ (t[0] - c))
    np.testing.assert_allclose(g[0], A @ (t[0] - c))


def test_fl_converges_to_the_quadratic_stationary_point_with_eq3():
    """delta = 0 (least squares): FL's fixed point is (a1 A1 + a2 A2)^-1 (a1 A1 c1 + a2 A2 c2), and
    there a1 grad R1 = -a2 grad R2 (the paper's eq. (3)), cosine -1, norm ratio a2 / a1."""
    A = np.stack([cflf12.spd([1.0, 0.25], 30.0), cflf12.spd([1.0, 0.25], -30.0)])
    c = np.array([[-1.5, 0.0], [1.5, 0.0]])
    w = np.array([0.7, 0.3])
    rows = cflf12.fl_paths(np.array([[2.0, 2.0], [-3.0, 0.5]]), c, A, 0.0, w, 1.0, 600, [600])
    star = np.linalg.solve(w[0] * A[0] + w[1] * A[1], w[0] * A[0] @ c[0] + w[1] * A[1] @ c[1])
    np.testing.assert_allclose(rows[["theta0", "theta1"]].to_numpy(), np.tile(star, (2, 1)),
                               atol=1e-10)
    np.testing.assert_allclose(rows["cos"], -1.0, atol=1e-12)
    np.testing.assert_allclose(rows["g1"] / rows["g2"], w[1] / w[0], rtol=1e-9)


def test_toy_overlap_and_the_configured_toys():
    A = np.stack([np.eye(2), np.eye(2)])
    assert cflf12.toy_overlap(np.array([[-0.25, 0.0], [0.25, 0.0]]), A, 0.5) == \
        pytest.approx(0.5, abs=0.01)
    p = get("CFLF12").config("paper").values["params"]
    assert cflf12.toy_overlap(*cflf12.toy(p, "incongruent")[:3]) > 1.1
    assert cflf12.toy_overlap(*cflf12.toy(p, "congruent")[:3]) < 0.9


def test_logistic_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    X, y, cluster = cflf12.xor_data("xor", 2, 20, 1.0, 0.35, rng)
    theta = np.array([0.4, -0.2, 0.1])

    def loss(t, i):
        z = X[i] @ t
        return np.mean(np.logaddexp(0, z) - y[i] * z) + 0.05 / 2 * t @ t

    G = cflf12.logistic_gradients(X, y, theta, 0.05)
    for i in range(X.shape[0]):
        np.testing.assert_allclose(G[i], _num_grad(lambda t: loss(t, i), theta), atol=1e-7)


@pytest.mark.parametrize("case", ["xor", "flip"])
def test_xor_data_layout(case):
    X, y, cluster = cflf12.xor_data(case, 3, 400, 1.0, 0.0, np.random.default_rng(0))
    assert X.shape == (6, 400, 3) and (X[..., 2] == 1).all() and cluster.tolist() == [0] * 3 + [1] * 3
    x1, x2 = X[..., 0], X[..., 1]
    own = np.where(cluster[:, None] == 0, x1 > 0, x1 < 0)  # each cluster: a linear rule
    assert ((y == 1) == own).all()
    if case == "xor":  # the union is the XOR y = [x1 x2 > 0]
        assert ((y == 1) == (x1 * x2 > 0)).all()
        assert (np.sign(x2) == np.where(cluster == 0, 1, -1)[:, None]).all()
    else:  # the same inputs, opposite labels
        assert set(np.unique(x2)) == {-1.0, 1.0}


def test_the_control_case_same_has_no_cluster_structure():
    """"same" (the control's case): every client holds cluster 0's data of "xor", one linear rule
    y = [x1 > 0] fits all; the paper's cases keep their draws (the default xor_cases has no
    "same", so the committed record's units are unchanged)."""
    X, y, cluster = cflf12.xor_data("same", 3, 400, 1.0, 0.0, np.random.default_rng(0))
    assert X.shape == (6, 400, 3) and cluster.tolist() == [0] * 3 + [1] * 3
    assert ((y == 1) == (X[..., 0] > 0)).all() and (X[..., 1] == 1.0).all()
    a = cflf12.xor_data("xor", 3, 50, 1.0, 0.35, np.random.default_rng(5))
    b = cflf12.xor_data("same", 3, 50, 1.0, 0.35, np.random.default_rng(5))
    np.testing.assert_array_equal(a[0][:3], b[0][:3])  # cluster 0: the very same draws
    p = get("CFLF12").config("paper").values["params"]
    assert p["xor_cases"] == ["xor", "flip"]
    assert not any("same" in name for name, _ in cflf12.units({"params": p}))


def test_config_errors(tmp_path):
    src = (ROOT / "mixlinreg" / "configs" / "studies" / "CFLF12.toml").read_text()
    bad = tmp_path / "CFLF12.toml"
    for old, new, match in [
        ("congruent_gap = 0.8 ", "congruent_gap = 2.5 ", r"params\.congruent_gap"),
        ("incongruent_gap = 3.0", "incongruent_gap = 1.0", r"params\.incongruent_gap"),
        ("fig2_lr = 1.0 ", "fig2_lr = 2.5 ", r"params\.fig2_lr.*\(0, 2\).*2\.5"),
        ('xor_cases = ["xor", "flip"]', 'xor_cases = ["xor", "xor"]', r"params\.xor_cases"),
        ('xor_cases = ["xor", "flip"]', 'xor_cases = ["xor", "circle"]', r"xor_cases.*circle"),
        ("fig2_eigs = [1.0, 0.25]", "fig2_eigs = [1.0, 0.25, 2.0]", r"params\.fig2_eigs"),
        ("eps1 = 1e-4", "eps1 = 0.5", r"params\.eps1"),
        ("\nlr = 1.0", "\nlr = 3.0", r"params\.lr must be in \(0, 2 / L\)"),
        ("xor_reps = 200 ", "xor_reps = 0 ", r"xor_reps.*\[2, inf\).*got 0"),
    ]:
        assert old in src, old
        bad.write_text(src.replace(old, new))
        with pytest.raises(ValueError, match=match):
            run(get("CFLF12"), preset="paper", out=tmp_path, store=None, config_path=bad)


# ------------------------------------------------------------------------------ smoke run


def test_smoke_record(tmp_path):
    r = run_study("CFLF12", preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS and r.paper == "CFL" and r.kind == "claim"
    assert len(r.numbers) > 0 and r.summary and r.claim
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 6
    assert (tmp_path / "CFLF12_smoke.png").exists()
    json.loads((tmp_path / "CFLF12_smoke.json").read_text())
    table = pd.read_csv(tmp_path / "CFLF12_smoke.csv")
    assert {"part", "case", "row", "rep", "round", "g1", "g2", "cos", "acc_fl", "acc_cfl",
            "split_correct"} <= set(table.columns)
    p = get("CFLF12").config("smoke").values["params"]
    assert (table["row"] == "rep").sum() == p["xor_reps"] * len(p["xor_cases"])
    # every interval and rate the summary quotes is in the numbers table
    cells = " ".join(r.numbers["estimate [95% CI]"].astype(str))
    quoted = re.findall(r"-?[\d.e+-]+ \[-?[\d.e+-]+, -?[\d.e+-]+\]", r.summary)
    assert len(quoted) >= 10
    for q in quoted:
        assert q in cells, q
    # the numbers agree with the table they come from
    reps = table[(table["row"] == "rep") & (table["case"] == "xor")]
    assert r.numbers["estimate [95% CI]"].str.contains(
        f"{reps['split_correct'].astype(bool).sum()}/{len(reps)} ", regex=False).any()
