"""Study L3 (Lemma 3 of the long version: P(misclassification) <= c1 eta^2/(alpha^2 lambda^2
Delta^4 n'), c1 = 8 in its proof): the numpy losses against the kernel's, the bounds against their
definitions, the placements' geometry, the population Monte Carlo against direct computation, the
machines' misclassification frequency against a quadrature at n' = 1, the pure ``decide`` on
made-up cells at and around every threshold, config errors, and a complete smoke record whose
written tables reproduce its analysis (with the sensitivity lines read against ``decide``)."""

from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import expit

from mixlinreg import ifca
from mixlinreg.theory.convex import LOSS_SETUPS, draw_cluster_data, theta_star_of
from mixlinreg.theory.studies import _l3_model, get, l3, run_study
from mixlinreg.theory.study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS,
                                    unit_rng)

EPS = 2.0**-30


def test_the_study_is_registered_as_lemma_3():
    study = get("L3")
    assert study.decide is l3.decide and study.order == 52 and study.paper == "IFCA"
    assert study.kind == "claim"
    assert "Lemma 3" in study.location and "Appendix C.1" in study.location
    assert "NeurIPS" in study.location


def test_the_module_examples_run():
    from mixlinreg.theory.studies import _l3_model

    results = [doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
               for mod in (l3, _l3_model)]
    assert sum(r.attempted for r in results) >= 3 and not any(r.failed for r in results)


# ------------------------------------------------------------------------------ losses

def _setting(loss):
    s = LOSS_SETUPS[loss]
    return s["R"], s["l2"], s["huber_delta"], dict(sigma=s["sigma"], df=s["df"])


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_machine_losses_equal_the_kernels(loss):
    """``F_i`` of every machine at every model against ``ifca(..., n_iter=0)``: with both models
    of a run equal to theta, the run's loss is ``F_i(theta)``; with two models, the kernel's label
    is 1 exactly when ``F_i(theta_0) > F_i(theta_1)`` (ties to the lowest index)."""
    R, l2, hd, kw = _setting(loss)
    rng = np.random.default_rng(7)
    X, y, _ = draw_cluster_data(loss, theta_star_of(R)[:1], [6], 9, rng, **kw)
    thetas = rng.normal(0, R / 2, (8, 5))
    F = l3.machine_losses(loss, X, y, thetas, l2, hd)
    assert F.shape == (6, 8)
    same = np.repeat(thetas[:, None], 2, axis=1)
    for i in range(3):
        res = ifca(X[i:i + 1], y[i:i + 1], same, 0.1, n_iter=0, loss=loss, l2=l2,
                   huber_delta=hd, n_threads=1)
        np.testing.assert_allclose(res.loss, F[i], rtol=1e-12, atol=1e-14)
    pairs = thetas.reshape(4, 2, 5)
    res = ifca(X, y, pairs, 0.1, n_iter=0, loss=loss, l2=l2, huber_delta=hd, n_threads=1)
    err, tie = l3.misclassified(F[:, 0::2], F[:, 1::2])
    assert not tie.any()
    np.testing.assert_array_equal(res.labels.T == 1, err & ~tie)
    np.testing.assert_allclose(res.loss, np.minimum(F[:, 0::2], F[:, 1::2]).mean(axis=0),
                               rtol=1e-12)


def test_per_sample_losses_closed_forms():
    z, y = np.array([-2.0, 0.0, 0.5, 3.0]), np.array([1.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(l3.per_sample_loss("logistic", z, y),
                               np.log1p(np.exp(z)) - y * z, rtol=1e-14)
    r = y - z
    huber = np.where(np.abs(r) <= 0.7, r * r / 2, 0.7 * (np.abs(r) - 0.35))
    np.testing.assert_allclose(l3.per_sample_loss("huber", z, y, 0.7), huber, rtol=1e-14)
    np.testing.assert_allclose(l3.per_sample_loss("squared", z, y), (z - y) ** 2)
    with pytest.raises(ValueError, match="loss must be one of"):
        l3.per_sample_loss("hinge", z, y)
    a, t = l3.misclassified(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 1.0]))
    assert a.tolist() == [False, True, True] and t.tolist() == [False, True, False]


# ------------------------------------------------------------------------------ bounds

def test_lemma3_bound_is_the_proofs_two_chebyshev_terms():
    eta2, alpha, lam, delta, n = 0.3, 0.2, 0.5, 1.7, 37
    term = 4 * eta2 / (alpha**2 * lam**2 * delta**4 * n)  # Appendix C.1, each term
    assert l3.C1_PROOF == 8.0
    np.testing.assert_allclose(l3.lemma3_bound(eta2, alpha, lam, delta, n), 2 * term,
                               rtol=1e-15)
    # the midpoint Chebyshev bound with eta^2 for both variances and the premise's gap
    mid, _ = l3.chebyshev_bounds(eta2, eta2, alpha * lam * delta**2, n)
    np.testing.assert_allclose(mid, l3.lemma3_bound(eta2, alpha, lam, delta, n), rtol=1e-14)


@pytest.mark.parametrize("v1, v2", [(0.3, 1.9), (1.0, 1.0), (2.5, 0.01)])
def test_best_t_chebyshev_is_the_minimum_over_t(v1, v2):
    gap, n = 0.8, 5
    mid, opt = l3.chebyshev_bounds(v1, v2, gap, n)
    a = np.linspace(1e-4, gap - 1e-4, 200001)  # t - F(theta_1)
    brute = (v1 / a**2 + v2 / (gap - a) ** 2).min() / n
    np.testing.assert_allclose(opt, brute, rtol=1e-6)
    assert opt <= mid * (1 + 1e-12)
    np.testing.assert_allclose(mid, 4 * (v1 + v2) / (n * gap**2), rtol=1e-14)
    assert l3.chebyshev_bounds(v1, v2, -0.1, n)[1] == np.inf


# ------------------------------------------------------------------------------ placements

def _small(loss="logistic", **changes):
    p = dict(get("L3").config("smoke").values["params"])
    p.update(losses=[loss], **changes)
    return p


@pytest.fixture(scope="module")
def logistic_setup():
    p = _small("logistic", alphas=[0.1, 0.3, 0.45], n_random=2)
    R = LOSS_SETUPS["logistic"]["R"]
    return p, R, l3.setup_piece("logistic", R, p)(np.random.default_rng(3))


def test_placements_geometry_and_the_ball(logistic_setup):
    p, R, setup = logistic_setup
    c = setup.iloc[0]
    assert len(setup) == 3 * 3 and set(setup["direction"]) == {"adversarial", "random0",
                                                                  "random1"}
    want = (0.5 - setup["alpha"]) * np.sqrt(setup["lam"] / setup["L"]) * setup["delta"]
    np.testing.assert_allclose(setup["r"], want, rtol=1e-12)
    np.testing.assert_allclose(setup["r2"], want, rtol=1e-12)
    # every placement inside the ball the constants were measured on: phi(rho) <= rho
    assert c["phi_ball"] <= c["ball_radius"] and (setup["r"] <= c["ball_radius"]).all()
    assert c["ball_radius"] <= (0.5 - min(p["alphas"])) * c["delta"] * (1 + 1e-12)
    # the proof's distance ||theta_2 - theta_pop_1|| >= (1/2 + alpha) Delta
    assert (setup["dist_2_to_pop1"] >= (0.5 + setup["alpha"]) * setup["delta"]).all()
    # adversarial: theta_2 on the segment between the minimizers, at Delta - r from theta_pop_1
    adv = setup[setup["direction"] == "adversarial"]
    np.testing.assert_allclose(adv["dist_2_to_pop1"], adv["delta"] - adv["r"], rtol=1e-12)
    # the random directions are the same for every alpha
    t1 = setup[[f"theta1_{i}" for i in range(5)]].to_numpy()
    t2 = setup[[f"theta2_{i}" for i in range(5)]].to_numpy()
    i0 = adv.index[0]  # theta_pop_1 from the adversarial pair: theta_2 - theta_1 is along u
    u0 = (t2[i0] - t1[i0]) / np.linalg.norm(t2[i0] - t1[i0])
    centre = t1[i0] - adv["r"].iloc[0] * u0
    for name, g in setup.groupby("direction"):
        u = (t1[g.index] - centre) / g["r"].to_numpy()[:, None]
        np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-9)
        np.testing.assert_allclose(u, np.repeat(u[:1], len(u), axis=0), atol=1e-9)


def test_radius_scale_moves_the_models_out_and_defaults_to_the_ball(tmp_path):
    c = np.array([[0.0, 0.0], [2.0, 0.0]])
    base = _l3_model.placements(c, 0.25, 1.0, [0.1, 0.3], 0, np.random.default_rng(1))
    wide = _l3_model.placements(c, 0.25, 1.0, [0.1, 0.3], 0, np.random.default_rng(1), scale=3.0)
    for (a, d, t1, t2), (a2, d2, w1, w2) in zip(base, wide):
        assert (a, d) == (a2, d2)
        np.testing.assert_allclose(w1 - c[0], 3.0 * (t1 - c[0]))
        np.testing.assert_allclose(w2 - c[1], 3.0 * (t2 - c[1]))
    # the default is the lemma's ball: the study's placements as they were
    assert get("L3").config("paper").values["params"]["radius_scale"] == 1.0
    src = Path(l3.__file__).resolve().parents[2] / "configs" / "studies" / "L3.toml"
    bad = tmp_path / "L3.toml"
    bad.write_text(src.read_text().replace("n_boot = 400 ", "radius_scale = -1.0\nn_boot = 400 "))
    with pytest.raises(ValueError, match="params.radius_scale"):
        get("L3").config("paper", bad)


def test_ball_constants_upper_end_of_the_bisection():
    loss = "huber"
    R = LOSS_SETUPS[loss]["R"]
    c, phi = l3.ball_constants(loss, R, 0.1, n_samples=4000, n_line=40000, n_points=6,
                               n_bisect=3, seed=11)
    assert phi == pytest.approx((0.5 - 0.1) * math.sqrt(c.lam / c.L) * c.delta, rel=1e-12)
    assert phi <= c.radius <= (0.5 - 0.1) * c.delta * (1 + 1e-12)
    # no bisection: the starting radius (1/2 - alpha_min) Delta
    c0, phi0 = l3.ball_constants(loss, R, 0.1, n_samples=4000, n_line=40000, n_points=6,
                                 n_bisect=0, seed=11)
    assert c0.radius == pytest.approx(0.4 * c0.delta, rel=1e-12) and phi0 <= c0.radius


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_population_stats_against_direct_computation(loss, monkeypatch):
    R, l2, hd, kw = _setting(loss)
    ts = theta_star_of(R)[0]
    thetas = np.random.default_rng(1).normal(0, 1, (4, 5))
    monkeypatch.setattr(_l3_model, "CHUNK_ROWS", 700)  # chunks of 700, 700 and 600 rows
    F, var, cov = l3.population_stats(loss, ts, thetas, 2000, np.random.default_rng(5),
                                      l2=l2, huber_delta=hd, **kw)
    gen = np.random.default_rng(5)
    parts = [draw_cluster_data(loss, ts[None], [1], b, gen, **kw) for b in (700, 700, 600)]
    X = np.concatenate([q[0][0] for q in parts])
    y = np.concatenate([q[1][0] for q in parts])
    ell = l3.per_sample_loss(loss, X @ thetas.T, y[:, None], hd)
    np.testing.assert_allclose(F, ell.mean(axis=0) + 0.5 * l2 * (thetas**2).sum(axis=1),
                               rtol=1e-12)
    np.testing.assert_allclose(var, ell.var(axis=0, ddof=1), rtol=1e-9)
    np.testing.assert_allclose(cov, np.cov(ell.T), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------ the Monte Carlo

def _logistic_error_at_one_row(theta_star, theta1, theta2):
    """P(ell(z_1, y) >= ell(z_2, y)) for one logistic row when ||theta_1|| = ||theta_2||:
    ``y = 1`` errs iff ``w = x.(theta_2 - theta_1) >= 0``, ``y = 0`` iff ``w <= 0``; ``(s, w)``
    with ``s = x.theta*`` is bivariate normal, integrated by quadrature."""
    a = theta2 - theta1
    vs, vw, cv = theta_star @ theta_star, a @ a, theta_star @ a
    sw = math.sqrt(vw)
    tau = math.sqrt(vs - cv**2 / vw)
    h, wts = np.polynomial.hermite_e.hermegauss(80)
    wts = wts / wts.sum()

    def inner(t, y1):
        s = cv / vw * (sw * t) + tau * h
        p1 = float(wts @ expit(s))
        return (p1 if y1 else 1 - p1) * math.exp(-t * t / 2) / math.sqrt(2 * math.pi)

    return (integrate.quad(lambda t: inner(t, True), 0, 12)[0]
            + integrate.quad(lambda t: inner(t, False), -12, 0)[0])


def test_misclassification_frequency_at_one_row_matches_the_quadrature(logistic_setup):
    p, R, setup = logistic_setup
    params = {"params": dict(p, n_prime=[1], machines=30000, rows_per_cell=30000, blocks=1),
              "margins": get("L3").config("smoke").values["margins"]}
    rows = l3.compute({"loss": "logistic", "R": R, "block": 0}, params,
                      np.random.default_rng(9), lambda name, fn: setup)
    assert (rows["machines"] == 30000).all() and (rows["ties"] == 0).all()
    adv = rows[rows["direction"] == "adversarial"]
    # one row: the adversarial placement's error does not depend on alpha (same machines)
    assert adv["errors"].nunique() == 1
    q = adv["placement"].iloc[0]
    t1 = setup.loc[setup["placement"] == q, [f"theta1_{i}" for i in range(5)]].to_numpy()[0]
    t2 = setup.loc[setup["placement"] == q, [f"theta2_{i}" for i in range(5)]].to_numpy()[0]
    assert np.linalg.norm(t1) == pytest.approx(np.linalg.norm(t2), rel=1e-12)
    want = _logistic_error_at_one_row(theta_star_of(R)[0], t1, t2)
    freq = adv["errors"].iloc[0] / 30000
    assert abs(freq - want) < 5 * math.sqrt(want * (1 - want) / 30000), (freq, want)


def test_blocks_split_the_machines():
    p = _small(machines=1001, rows_per_cell=4004, blocks=3, n_prime=[1, 8])
    assert l3.machines_at(p, 1) == 1001 and l3.machines_at(p, 8) == 500
    for n in p["n_prime"]:
        shares = [l3._block_share(l3.machines_at(p, n), 3, b) for b in range(3)]
        assert sum(shares) == l3.machines_at(p, n) and max(shares) - min(shares) <= 1


# ------------------------------------------------------------------------------ decide

MARGINS = {"premise_tol": 0.125, "vacuous_frac": 0.5, "cheb_tol": 0.25}


def _params(**changes):
    return {"params": {}, "margins": dict(MARGINS, **changes)}


def _cells(rows):
    """Made-up cells: ``(placement, alpha, n', wilson_lo, bound, cheb_opt, premise_ratio)``."""
    df = pd.DataFrame([{"loss": "huber", "R": 1.0, "placement": q, "alpha": a, "n_prime": n,
                        "direction": "adversarial", "wilson_lo": lo, "bound": b, "cheb_opt": c,
                        "premise_ratio": pr} for q, a, n, lo, b, c, pr in rows])
    df["lo_over_bound"] = df["wilson_lo"] / df["bound"]
    df["lo_over_cheb"] = df["wilson_lo"] / df["cheb_opt"]
    return df


GOOD = [(0, 0.25, 1, 0.25, 4.0, 2.0, 1.5), (0, 0.25, 64, 0.0, 0.5, 0.25, 1.5),
        (1, 0.375, 1, 0.25, 2.0, 1.0, 1.25), (1, 0.375, 64, 0.0, 0.25, 0.125, 1.25)]


def _with(i, **kw):
    rows = [list(r) for r in GOOD]
    keys = ["placement", "alpha", "n_prime", "wilson_lo", "bound", "cheb_opt", "premise_ratio"]
    for k, v in kw.items():
        rows[i][keys.index(k)] = v
    if "premise_ratio" in kw:  # one value per placement
        for r in rows:
            if r[0] == rows[i][0]:
                r[6] = kw["premise_ratio"]
    return _cells([tuple(r) for r in rows])


def test_decide_holds_and_its_numbers():
    d = l3.decide(_cells(GOOD), _params())
    assert d.verdict == HOLDS
    nb = d.numbers
    assert (nb["cells"], nb["over_bound"], nb["over_chebyshev"], nb["premise_fails"]) == (4, 0, 0,
                                                                                        0)
    assert nb["vacuous_share"] == 0.5 and nb["premise_min"] == 1.25 and nb["placements"] == 2
    assert nb["nonvacuous_min_n"] == {"huber": 64} and nb["worst_lo_over_bound"] == 0.125


@pytest.mark.parametrize("cells, verdict", [
    (_with(1, wilson_lo=0.5, cheb_opt=0.5), HOLDS),       # at the bound: not above it
    (_with(1, wilson_lo=0.5 + EPS, cheb_opt=0.5), NOT_SUPPORTED),
    (_with(0, wilson_lo=4.0 + EPS, cheb_opt=4.0), NOT_SUPPORTED),
    (_with(1, wilson_lo=0.3125), HOLDS),                  # cheb 0.25 x (1 + 0.25): at it
    (_with(1, wilson_lo=0.3125 + EPS), INCONCLUSIVE),     # above Chebyshev's bound
    (_with(1, wilson_lo=0.5 + EPS), INCONCLUSIVE),        # above both: the measurement in doubt
    (_with(0, premise_ratio=0.875), HOLDS),               # at 1 - premise_tol
    (_with(0, premise_ratio=0.875 - EPS), CAVEAT),
    (_with(1, bound=1.0), CAVEAT),                        # 3 of 4 (alpha, n') cells vacuous
])
def test_decide_at_its_thresholds(cells, verdict):
    assert l3.decide(cells, _params()).verdict == verdict


def test_decide_vacuous_share_threshold():
    cells = _cells(GOOD)  # half the cells vacuous
    assert l3.decide(cells, _params(vacuous_frac=0.5)).verdict == HOLDS
    assert l3.decide(cells, _params(vacuous_frac=0.5 - EPS)).verdict == CAVEAT
    d = l3.decide(_with(0, premise_ratio=0.5), _params())
    assert d.numbers["premise_fails"] == 1 and d.numbers["premise_fail_losses"] == ["huber"]
    assert "premise gap >= alpha lambda Delta^2 fails at 1 of 2" in l3._scope(
        _with(0, premise_ratio=0.5), d)


# ------------------------------------------------------------------------------ config, smoke

def _raw_params(**changes):
    v = get("L3").config("smoke").values
    return {"params": dict(v["params"], **changes), "margins": v["margins"]}


@pytest.mark.parametrize("changes, match", [
    ({"alphas": [0.1, 0.1]}, "params.alphas must not repeat"),
    ({"losses": ["huber", "huber"]}, "params.losses must be distinct"),
    ({"rows_per_cell": 300}, "params.rows_per_cell"),
    ({"blocks": 50, "machines": 40}, "params.blocks"),
])
def test_units_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        l3.units(_raw_params(**changes))


@pytest.mark.parametrize("line, match", [
    ("alphas = [0.1, 0.5]", "alphas"), ("losses = [\"squared\"]", "losses"),
    ("n_prime = [0, 4]", "n_prime"), ("machines = 0", "machines"),
])
def test_config_errors_name_the_parameter(tmp_path, line, match):
    raw = (Path(l3.__file__).parents[2] / "configs" / "studies" / "L3.toml").read_text()
    raw = raw.replace("[params]\n", f"[params]\n{line}\n", 1)
    key = line.split(" = ")[0]
    raw = "\n".join(r for r in raw.splitlines() if not (r.startswith(key + " = ")
                                                      and r != line)) + "\n"
    path = tmp_path / "L3.toml"
    path.write_text(raw)
    with pytest.raises(ValueError, match=match):
        get("L3").config("paper", path)


def test_units_names_and_count():
    u = l3.units(_raw_params(blocks=2))
    assert [n for n, _ in u] == ["logistic_R=3_b=0", "logistic_R=3_b=1", "huber_R=1_b=0",
                                 "huber_R=1_b=1"]


def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("L3", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.kind == "claim" and r.paper == "IFCA"
    assert r.summary and r.scope and "c1 = 8" in r.summary
    rec = json.loads((tmp_path / "L3_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    params = get("L3").config("smoke").values
    table = pd.read_csv(tmp_path / "L3_smoke.csv")
    v = l3.analyze(table, params, lambda key: unit_rng(0, "L3", "analyze_" + key))
    assert v.verdict == r.verdict and v.summary == r.summary and v.scope == r.scope
    cells = pd.read_csv(tmp_path / "L3_smoke_cells.csv")
    pd.testing.assert_frame_equal(cells, v.tables["_cells.csv"], check_dtype=False)
    # the cells: every (loss, R, placement, n') once, with its Wilson interval around the frequency
    p = params["params"]
    assert len(cells) == len(p["losses"]) * len(p["R_factors"]) * len(p["alphas"]) * (
        1 + p["n_random"]) * len(p["n_prime"])
    assert ((cells["wilson_lo"] <= cells["freq"]) & (cells["freq"] <= cells["wilson_hi"])).all()
    assert (cells["machines"] == [l3.machines_at(p, n) for n in cells["n_prime"]]).all()
    # the Chebyshev bound with the actual variances is a theorem: never exceeded here
    assert (cells["wilson_lo"] <= cells["cheb_opt"]).all()
    # at n' = 1 the adversarial errors are the same for every alpha (same machines)
    one = cells[(cells["n_prime"] == 1) & (cells["direction"] == "adversarial")]
    assert (one.groupby("loss")["errors"].nunique() == 1).all()
    # every sensitivity line is decide() at the neighbouring value
    mg = params["margins"]
    for what, key in (("Wilson confidence", "confidence"),
                      ("premise tolerance premise_tol", "premise_tol"),
                      ("vacuous share vacuous_frac", "vacuous_frac"),
                      ("Chebyshev tolerance cheb_tol", "cheb_tol")):
        (line,) = [s for s in v.sensitivity if s.startswith(what + " (chosen ")]
        for val in sorted(set(mg[key + "_neighbours"]) | {mg[key]}):
            if key == "confidence":
                want = l3.decide(l3.measure(table, params, val), params).verdict
            else:
                want = l3.decide(l3.measure(table, params),
                                 {**params, "margins": {**mg, key: val}}).verdict
            assert f"{val:g} -> {want}" in line
    again = run_study("L3", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict
