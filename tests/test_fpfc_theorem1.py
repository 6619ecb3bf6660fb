"""Study FPTH1 (FPFC's Theorem 1, mixlinreg/theory/studies/fpth1.py): the Lagrangian that
Algorithm 1 is the method of (local step, dual step, theta step, to rounding), the G mapping's
bound, the region's constants on a hand example, ``decide`` at and around its thresholds, the
sensitivity lines against ``decide``, the smoke record and refused configs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixlinreg as mlr
from mixlinreg.baselines import fpfc
from mixlinreg.baselines._common import loss_gradient, smoothness
from mixlinreg.stats import Fit
from mixlinreg.theory.study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS, run,
                                    unit_rng)
from mixlinreg.theory.studies import fpth1, get, run_study

ROOT = Path(__file__).resolve().parents[1]
LAM, A, XI = 0.5, 3.7, 0.01


def _states(rho=3.0, local_steps=1, rounds=4, m=6, participation=1.0):
    mix = mlr.make_mixture(m=m, n=20, d=3, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=3)
    states = []
    res = fpfc(mix.X, mix.y, lam=LAM, a=A, xi=XI, rho=rho, local_steps=local_steps,
               n_rounds=rounds, participation=participation, rng=0,
               callback=lambda k, s: states.append(s))
    grad = loss_gradient(mix.X, mix.y, 0.0, "squared", 1.0, (3,))
    return mix, states, res.extra["lr"], grad, fpth1.incidence(states[0]["pairs"], m)


def _L_rho(mix, w, theta, v, rho, D):
    """The augmented Lagrangian written out (smoothed SCAD, pair terms over i < j scaled 1/m)."""
    from mixlinreg.baselines._fpfc import _scad_smooth

    m, n = mix.X.shape[:2]
    f = sum(np.sum((mix.X[i] @ w[i] - mix.y[i]) ** 2) / n for i in range(m))
    r = D @ w - theta
    pair = _scad_smooth(np.linalg.norm(theta, axis=1), LAM, A, XI) + np.sum(v * r, axis=1) \
        + 0.5 * rho * np.sum(r * r, axis=1)
    return f + pair.sum() / m


def _smooth_scad_grad(theta):
    """grad of P~_a(||theta||) per row."""
    t = np.linalg.norm(theta, axis=1)
    d = np.where(t <= XI, LAM / XI * t, np.where(t <= LAM, LAM, np.where(
        t <= A * LAM, (A * LAM - t) / (A - 1.0), 0.0)))
    return np.divide(d, t, out=np.zeros_like(t), where=t > 0)[:, None] * theta


# ------------------------------------------------------------------------------ the Lagrangian


def test_grad_omega_is_the_gradient_of_the_written_out_lagrangian():
    rho = 3.0
    mix, states, _, grad, D = _states(rho)
    s = states[1]
    g = fpth1.grad_omega(grad(np.arange(6), s["omega"]), s, D, rho)
    h = 1e-6
    num = np.zeros_like(g)
    for i in range(6):
        for q in range(3):
            e = np.zeros_like(s["omega"])
            e[i, q] = h
            num[i, q] = (_L_rho(mix, s["omega"] + e, s["theta"], s["v"], rho, D)
                         - _L_rho(mix, s["omega"] - e, s["theta"], s["v"], rho, D)) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6)


def test_local_step_is_gradient_descent_on_L_rho():
    rho = 3.0
    mix, states, lr, grad, D = _states(rho, local_steps=1)
    every = np.arange(6)
    for k in range(len(states) - 1):  # one local step: w^{k+1} = w^k - lr grad_w L_rho(x^k)
        s = states[k]
        step = fpth1.grad_omega(grad(every, s["omega"]), s, D, rho)
        np.testing.assert_allclose(states[k + 1]["omega"], s["omega"] - lr * step, atol=1e-12)
        # the algorithm's direction grad f_i + rho (w_i - zeta_i) is the same vector
        np.testing.assert_allclose(grad(every, s["omega"]) + rho * (s["omega"] - s["zeta"]), step,
                                   atol=1e-12)
    # later local steps move w_i alone (the others at w^k): grad f_i(w) + rho (w - zeta_i) is
    # grad_{w_i} L_rho there plus (rho/m) (w - w_i^k), gradient descent on L_rho plus that prox term
    s = states[1]
    w = s["omega"] + np.random.default_rng(0).normal(size=s["omega"].shape)
    lhs = grad(every, w) + rho * (w - s["zeta"])
    for i in range(6):
        moved = np.array(s["omega"])
        moved[i] = w[i]
        g_i = fpth1.grad_omega(grad(every, moved), dict(s, omega=moved), D, rho)[i]
        np.testing.assert_allclose(lhs[i], g_i + rho / 6 * (w[i] - s["omega"][i]), atol=1e-12)
        assert not np.allclose(lhs[i], g_i)


def test_dual_step_is_ascent_and_theta_step_minimizes():
    rho = 3.0
    _, states, _, _, D = _states(rho, local_steps=3)
    m = 6
    for k in range(len(states) - 1):
        a, b = states[k], states[k + 1]
        grad_v = (D @ b["omega"] - b["theta"]) / m  # grad_v L_rho at (w^{k+1}, theta^{k+1})
        np.testing.assert_allclose(b["v"], a["v"] + rho * m * grad_v, atol=1e-12)
        # the theta step leaves v^{k+1} = grad P~(theta^{k+1}): the smoothed L_rho is stationary
        np.testing.assert_allclose(b["v"], _smooth_scad_grad(b["theta"]), atol=1e-10)


def test_g_mapping_bound_is_the_supremum():
    t_star = LAM * XI / (LAM + XI)
    theta = np.array([[t_star, 0.0], [0.3 * XI, 0.0], [0.6 * XI, 0.0], [0.2, 0.1], [1.0, 0.5]])
    v = _smooth_scad_grad(theta)
    G = np.linalg.norm(fpth1.g_mapping(theta, theta + v, LAM, A), axis=1)
    np.testing.assert_allclose(G[0], t_star, rtol=1e-12)  # attained at ||theta|| = t*
    assert np.all(G[1:3] < t_star)
    np.testing.assert_allclose(G[3:], 0.0, atol=1e-12)  # outside the xi ball: stationary
    assert fpth1.g_bound(7, LAM, XI) == pytest.approx(49 * t_star ** 2)
    # on the iterates (partial participation too) ||G||^2 over ordered pairs stays below it
    for part in (1.0, 0.5):
        _, states, _, grad, D = _states(50.0, local_steps=3, rounds=6, participation=part)
        for s in states:
            meas = fpth1.stationarity(grad(np.arange(6), s["omega"]), s, D, 50.0, LAM, A)
            assert meas["G_lagrangian"] <= fpth1.g_bound(6, LAM, XI) * (1 + 1e-12)


def test_scad_prox_is_the_minimizer():
    grid = np.linspace(0.0, 4.0, 400001)
    pen = np.asarray(
        mlr.baselines._fpfc._scad_smooth(grid, LAM, A, 1e-300), dtype=float)  # P_a itself
    for step in (1.0, 0.3):
        for t in (0.1, 0.45, 0.7, 1.2, 1.7, 3.0):
            best = grid[np.argmin(pen + (grid - t) ** 2 / (2 * step))]
            assert fpth1.scad_prox(t, LAM, A, step) == pytest.approx(best, abs=2e-5)


# ------------------------------------------------------------------------------ the region


def test_region_constants_hand_example():
    r = fpth1.region(2.0, 10.0, 1 / 22, 5, LAM, XI, A)
    c = 61 / 121  # 1 - (1/22) 2 * 10 * 12 / 22
    assert r["c"] == pytest.approx(c, rel=1e-14)
    assert r["T_min"] == math.floor(-2 * math.log(2) / math.log(c)) + 1 == 3
    assert r["alpha_max"] == pytest.approx(1 / 22)
    assert r["rho_terms"]["L_f/(1-2c^(T/2))"] == pytest.approx(2 / (1 - 2 * c ** 2.5))
    assert r["rho_lower"] == pytest.approx(100.0)
    assert r["violated"] == ["rho > 2 lam/xi"] and not r["inside"]
    inside = fpth1.region(2.0, 110.0, 1 / 222, 5, LAM, XI, A)
    assert inside["inside"] and inside["violated"] == []
    bad = fpth1.region(4.0, 0.5, 1 / 5, 2, LAM, XI, A)  # c = 0.82, 2/(a-1) = 0.74
    assert set(bad["violated"]) == {"T > -2 log 2/log c", "rho > L_f/(1-2c^(T/2))",
                                    "rho > 2 lam/xi", "rho > 2/(a-1)"}
    assert fpth1.region(2.0, 110.0, 2 / 222, 5, LAM, XI, A)["violated"] == [
        "alpha <= 1/(L_f + 2 rho - L_-)"]
    with pytest.raises(ValueError, match="c = "):
        fpth1.region(2.0, 10.0, 1.0, 5, LAM, XI, A)


# ------------------------------------------------------------------------------ decide

LIMIT = -0.875  # margin 0.125


def _setting(region="inside", part=1.0, slope_hi=-0.9, slope_lo=None, g_max=0.5, g_lo=0.4,
             aug_g_max=0.5, diverged=0):
    lo = slope_hi - 0.1 if slope_lo is None else slope_lo
    fit = Fit((lo + slope_hi) / 2, lo, slope_hi, 8)
    worst = Fit(max(g_lo, 0.0) + 0.01, g_lo, g_lo + 0.02, 8)
    return {"region": region, "participation": part, "diverged": diverged, "rho": 110.0,
            "slopes": {"omega_lagrangian": fit, "omega_augmented": fit, "v": fit},
            "g": {"lagrangian": {"max": g_max, "worst": worst, "K_worst": 1},
                  "augmented": {"max": aug_g_max, "worst": worst, "K_worst": 1}}}


def _params(reading="lagrangian", margin=0.125, g_tol=0.0):
    return {"params": {"reading": reading}, "margins": {"slope_margin": margin, "g_tol": g_tol}}


def _v(**kw):
    return fpth1.decide({"a": _setting(**kw)}, _params()).verdict


def test_decide_slope_at_and_around_its_threshold():
    eps = 2.0 ** -30
    assert _v(slope_hi=LIMIT) == HOLDS
    assert _v(slope_hi=LIMIT + eps) == INCONCLUSIVE
    assert _v(slope_hi=LIMIT + 0.1, slope_lo=LIMIT + eps) == NOT_SUPPORTED
    assert _v(slope_hi=LIMIT + 0.1, slope_lo=LIMIT) == INCONCLUSIVE
    assert _v(diverged=1) == NOT_SUPPORTED
    d = fpth1.decide({"a": _setting()}, _params())
    assert d.numbers["slope_limit"] == LIMIT and d.numbers["g_limit"] == 1.0


def test_decide_g_at_and_around_its_threshold():
    eps = 2.0 ** -30
    assert _v(g_max=1.0) == HOLDS
    assert _v(g_max=1.0 + eps) == NOT_SUPPORTED  # deterministic run: a counterexample
    assert _v(g_max=1.0 + eps, part=0.5, g_lo=0.5) == INCONCLUSIVE
    assert _v(g_max=1.0 + eps, part=0.5, g_lo=1.0) == INCONCLUSIVE
    assert _v(g_max=1.0 + eps, part=0.5, g_lo=1.0 + eps) == NOT_SUPPORTED
    p = _params(g_tol=0.5)
    assert fpth1.decide({"a": _setting(g_max=1.5)}, p).verdict == HOLDS
    assert fpth1.decide({"a": _setting(g_max=1.5 + eps)}, p).verdict == NOT_SUPPORTED


def test_decide_readings_and_regions():
    meas = {"in": _setting(aug_g_max=600.0), "out": _setting("outside", slope_hi=0.0,
                                                            slope_lo=-0.1, g_max=9.0)}
    d = fpth1.decide(meas, _params())
    assert d.verdict == CAVEAT  # holds under the chosen reading, not under the other
    assert d.numbers["by_reading"] == {"lagrangian": HOLDS, "augmented": NOT_SUPPORTED}
    assert d.numbers["rules"]["out"]["lagrangian"]["omega"] == NOT_SUPPORTED  # described only
    assert fpth1.decide(meas, _params("augmented")).verdict == NOT_SUPPORTED
    assert fpth1.decide({"in": _setting()}, _params()).verdict == HOLDS
    with pytest.raises(ValueError, match="inside"):
        fpth1.decide({"out": _setting("outside")}, _params())


# ------------------------------------------------------------------------------ the study


def _table(tmp_path):
    path = tmp_path / "FPTH1_smoke.csv"
    return pd.read_csv(path if path.exists() else path.with_name(path.name + ".gz"))


def test_smoke_record_and_sensitivity_lines(tmp_path):
    r = run_study("FPTH1", preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS and r.paper == "FPFC" and r.kind == "claim"
    assert r.location == get("FPTH1").location and "Theorem 1" in r.location
    for suffix in (".png", ".json", "_runs.csv"):
        assert (tmp_path / f"FPTH1_smoke{suffix}").exists()
    json.loads((tmp_path / "FPTH1_smoke.json").read_text())
    params = get("FPTH1").config("smoke").values
    p = params["params"]
    table = _table(tmp_path)
    assert {"setting", "seed", "K", "mean_omega_lagrangian", "mean_v", "g_lagrangian",
            "g_augmented", "rounds_to_cluster", "c", "rho_lower", "inside"} <= set(table.columns)
    n_settings = len(p["rhos"]) * len(p["participations"])
    assert len(r.numbers) == n_settings
    assert table.groupby("setting")["seed"].nunique().eq(p["seeds"]).all()
    assert table["inside"].eq(table["region"] == "inside").all()
    assert "C_1" in r.summary and "outside" in r.summary.lower()
    # the sensitivity lines read decide at the neighbours on the same measurements
    meas = fpth1.measure(table, p, lambda key: unit_rng(0, "FPTH1", "analyze_" + key))
    mg = params["margins"]
    for what, key in (("slope margin", "slope_margin"), ("G tolerance", "g_tol")):
        (line,) = [c for c in r.caveats if c.startswith(f"Sensitivity: {what} (chosen ")]
        values = sorted(set(mg[f"{key}_neighbours"]) | {mg[key]})
        expected = "; ".join(
            f"{v:g} -> {fpth1.decide(meas, fpth1._at(params, **{key: v})).verdict}"
            for v in values)
        assert line.endswith(f"(chosen {mg[key]:g}): {expected}"), (line, expected)
    assert fpth1.decide(meas, params).verdict == r.verdict


def _bad(tmp_path, old, new):
    src = (ROOT / "mixlinreg" / "configs" / "studies" / "FPTH1.toml").read_text()
    assert old in src
    bad = tmp_path / "FPTH1.toml"
    bad.write_text(src.replace(old, new))
    return bad


@pytest.mark.parametrize("old, new, match", [
    ('regions = ["inside", "outside", "outside"]', 'regions = ["inside", "inside", "outside"]',
     r"params.rhos\[1\] = 10.0 is declared inside"),
    ('regions = ["inside", "outside", "outside"]', 'regions = ["inside", "outside"]',
     "params.rhos and params.regions must have the same length"),
    ('regions = ["inside", "outside", "outside"]', 'regions = ["outside", "outside", "outside"]',
     "at least one rho 'inside'"),
    ('reading = "lagrangian"', 'reading = "lagrange"', "reading"),
    ("slope_margin = 0.1 ", "slope_margin = -0.1 ", "slope_margin"),
])
def test_bad_config_refused(tmp_path, old, new, match):
    with pytest.raises(ValueError, match=match):
        run(get("FPTH1"), preset="smoke", out=tmp_path, store=None,
            config_path=_bad(tmp_path, old, new))


def test_setting_declared_outside_but_inside_is_refused():
    params = get("FPTH1").config("smoke").values
    p = dict(params["params"], rhos=[110.0, 120.0], regions=["inside", "outside"])
    mix = mlr.make_mixture(p["m"], p["n"], p["d"], p["k"], p["R"], p["sigma"],
                           theta_scale="norm", rng=0)
    assert fpth1.region(smoothness(mix.X, "squared", 0.0), 120.0, 1 / (smoothness(
        mix.X, "squared", 0.0) + 240.0), p["local_steps"], LAM, XI, A)["inside"]
    with pytest.raises(ValueError, match="params.regions says rho = 120 is outside"):
        fpth1._run_setting(mix, 120.0, "outside", 1.0, p, np.random.default_rng(0))


def test_step_mult_default_changes_nothing_and_is_validated(tmp_path):
    """The control's step_mult (issue 37): absent it is 1 (the committed record's runs are the
    theorem's alpha, rows equal to an explicit 1); 6 changes the runs; 0 is refused by name."""
    import tomllib

    params = get("FPTH1").config("smoke").values
    p = dict(params["params"], rhos=[110.0], regions=["inside"], rounds=40, grid_points=10)
    raw = tomllib.loads((ROOT / "mixlinreg" / "configs" / "studies" / "FPTH1.toml").read_text())
    assert p["step_mult"] == 1.0 and "step_mult" not in raw["params"]
    mix = mlr.make_mixture(p["m"], p["n"], p["d"], p["k"], p["R"], p["sigma"],
                           theta_scale="norm", rng=0)
    one = fpth1._run_setting(mix, 110.0, "inside", 1.0, p, np.random.default_rng(0))
    again = fpth1._run_setting(mix, 110.0, "inside", 1.0, dict(p, step_mult=1.0),
                               np.random.default_rng(0))
    assert pd.DataFrame(one).equals(pd.DataFrame(again)) and not one[0]["diverged"]
    six = fpth1._run_setting(mix, 110.0, "inside", 1.0, dict(p, step_mult=6.0),
                             np.random.default_rng(0))
    assert not pd.DataFrame(six)["mean_v"].equals(pd.DataFrame(one)["mean_v"])
    with pytest.raises(ValueError, match=r"params\.step_mult"):
        run(get("FPTH1"), preset="smoke", out=tmp_path, store=None,
            config_path=_bad(tmp_path, "seeds = 16 ", "step_mult = 0.0\nseeds = 16 "))
