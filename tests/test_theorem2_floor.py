"""Study T2F (Theorem 2's additive term eps0 in shape): the bound's terms and their exponents,
the excess and its pooled quantiles against direct computation, the slopes on made-up cells
following known power laws, the pure ``decide`` at and around its margin, config errors, one
unit's rows, and a complete smoke record whose written tables reproduce its analysis."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest

from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS
from mixlinreg.theory.studies import get, run_study, t2f

EPS = 2.0**-30


def _params(preset="smoke", **changes):
    p = get("T2F").config(preset).values
    return {"params": dict(p["params"], **changes), "margins": dict(p["margins"])}


def test_the_study_is_registered():
    study = get("T2F")
    assert study.id == "T2F" and study.order == 54 and study.paper == "IFCA"
    assert study.decide is t2f.decide and study.kind == "claim"
    assert "Appendix C" in study.location and "long version" in study.location
    assert "NeurIPS" in study.location
    assert "k^{3/2}" in study.claim and "delta^{3/2}" in study.claim


def test_the_module_examples_run():
    result = doctest.testmod(t2f, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 6 and result.failed == 0


# ------------------------------------------------------------------------------ the bound

def test_bound_terms_are_the_theorems_formula():
    kw = dict(v=0.7, L=2.0, lam=0.3, eta=0.5, alpha=0.2, delta=0.05, p=0.25, m=80, n_prime=30,
              k=3, Delta=1.3)
    A, B, C = t2f.bound_terms(**kw)
    np.testing.assert_allclose(A, 0.7 / (0.05 * 2.0 * np.sqrt(0.25 * 80 * 30)), rtol=1e-14)
    np.testing.assert_allclose(B, 0.25 / (0.05 * 0.04 * 0.09 * 1.3**4 * 30), rtol=1e-14)
    np.testing.assert_allclose(C, 0.7 * 0.5 * 3**1.5 / (0.05**1.5 * 0.2 * 0.3 * 2.0 * 1.3**2
                                                       * np.sqrt(80) * 30), rtol=1e-14)


@pytest.mark.parametrize("var, exps", [("p", (-0.5, 0, 0)), ("Delta", (0, -4, -2)),
                                       ("k", (0, 0, 1.5)), ("delta", (-1, -1, -1.5)),
                                       ("n_prime", (-0.5, -1, -1)), ("m", (-0.5, 0, -0.5))])
def test_term_slopes_are_the_exponents(var, exps):
    base = dict(v=1.0, L=1.0, lam=0.5, eta=0.8, alpha=0.2, delta=0.1, p=0.5, m=100, n_prime=50,
                k=2, Delta=1.0)
    x = np.array([1.0, 2.0, 4.0, 8.0]) * base[var]
    terms = np.array([t2f.bound_terms(**dict(base, **{var: v})) for v in x])
    for t, e in zip(terms.T, exps):
        assert t2f.ols_slope(x, t) == pytest.approx(e, abs=1e-12)
    assert np.isnan(t2f.ols_slope([1, 2], [1.0, -1.0]))


# ------------------------------------------------------------------------------ measurements

def test_excess_is_the_next_error_minus_rho_times_this_one_inside_the_ball():
    rng = np.random.default_rng(4)
    err = rng.uniform(0.1, 1.0, (3, 2, 6))
    inball = rng.uniform(size=err.shape) > 0.2
    got = t2f.excess_by_seed(err, inball, 0.9)
    for s in range(3):
        want = [err[s, r, t + 1] - 0.9 * err[s, r, t] for r in range(2) for t in range(5)
                if inball[s, r, t]]
        np.testing.assert_allclose(got[s], want, rtol=0, atol=1e-15)


def test_boot_quantiles_pool_the_resampled_seeds():
    rng = np.random.default_rng(5)
    by_seed = [rng.normal(size=12) for _ in range(5)]
    qs = [0.5, 0.9, 0.99]
    est, boot = t2f.boot_quantiles(by_seed, qs, 100, np.random.default_rng(7))
    np.testing.assert_allclose(est, np.quantile(np.concatenate(by_seed), qs), rtol=1e-15)
    idx = np.random.default_rng(7).integers(5, size=(100, 5))
    for b in (0, 57, 99):
        want = np.quantile(np.concatenate([by_seed[i] for i in idx[b]]), qs)
        np.testing.assert_allclose(boot[b], want, rtol=1e-14)
    # unequal lengths take the loop: same resamples, same values
    uneven = by_seed[:4] + [by_seed[4][:7]]
    est2, boot2 = t2f.boot_quantiles(uneven, qs, 100, np.random.default_rng(7))
    want = np.quantile(np.concatenate([uneven[i] for i in idx[3]]), qs)
    np.testing.assert_allclose(boot2[3], want, rtol=1e-14)


def _table(err, rho_parts, seeds=2, runs=1):
    """A hand-made table: one cell, one cluster, the given errors (seeds, runs, nt)."""
    lam, L, p = rho_parts
    nt = err.shape[2]
    meta = {"part": "cell", "loss": "huber", "cell": "c", "cluster": 0, "p": p, "R_mult": 1.0,
            "R": 1.0, "k": 2, "n_prime": 10, "m": 20, "size": 10, "p_j": p, "T": nt - 1,
            "burn": 0, "seeds": seeds, "runs": runs, "diverged_runs": 0, "lam": lam, "L": L,
            "eta2": 0.4, "v2": 2.0, "delta": 1.2, "radius": 0.5, "alpha_eff": 0.1,
            "center_norm": 0.85}
    steps = [{"part": "step", "loss": "huber", "cell": "c", "cluster": 0, "seed": s, "run": r,
              "t": t, "err": err[s, r, t], "mis": 0.0, "inball": bool(err[s, r, t] <= 0.5)}
             for s in range(seeds) for r in range(runs) for t in range(nt)]
    return pd.DataFrame([meta] + steps)


def test_measure_takes_the_pooled_quantile_of_the_excess():
    err = np.array([[[0.2, 0.3, 0.1, 0.6, 0.2]], [[0.1, 0.15, 0.25, 0.2, 0.3]]])
    table = _table(err, (0.4, 0.8, 0.5))
    params = _params(deltas=[0.5, 0.2, 0.1], delta_base=0.1, tail=2, n_boot=100)
    rows, boot = t2f.measure(table, params, lambda key: np.random.default_rng(0))
    r = rows.iloc[0]
    rho = 1 - 0.5 * 0.4 / (8 * 0.8)
    assert r["rho"] == pytest.approx(rho, rel=1e-15)
    # the step starting at 0.6 (outside the radius 0.5) is left out
    ex = [err[s, 0, t + 1] - rho * err[s, 0, t] for s in range(2) for t in range(4)
          if err[s, 0, t] <= 0.5]
    assert r["steps_used"] == 7 and r["steps_left_out"] == 1
    for d in (0.5, 0.2, 0.1):
        assert r[f"eps0_{d:g}"] == pytest.approx(np.quantile(ex, 1 - d), rel=1e-14)
    assert r["floor"] == pytest.approx(err[:, :, -2:].mean(), rel=1e-14)
    A, B, C = t2f.bound_terms(v=np.sqrt(2.0), L=0.8, lam=0.4, eta=np.sqrt(0.4), alpha=0.1,
                              delta=0.1, p=0.5, m=20, n_prime=10, k=2, Delta=1.2)
    assert r["shape"] == pytest.approx(A + B + C, rel=1e-14)
    assert r["final_bound"] == pytest.approx(r["eps0_0.1"] / (1 - rho), rel=1e-14)
    assert boot[("huber", "c", 0)].shape == (100, 3)


def _made_up_cells(params, exps, noise=0.0, seed=0):
    """Cells whose eps0_hat follow ``K p^a_p Delta^a_D k^a_k n'^a_n m^a_m delta^a_d`` exactly,
    with each cell's constants and terms, and bootstrap matrices (lognormal scatter ``noise``)."""
    p = params["params"]
    cs, _ = t2f.cells(p)
    rng = np.random.default_rng(seed)
    rows, boot = [], {}
    for name, c in cs.items():
        Delta = 1.2 * c["R_mult"] ** 1.1  # the separation grows with R
        lam, L, eta2, v2 = 0.5 / c["R_mult"], 0.9, 0.4 * c["R_mult"], 2.0
        A, B, C = t2f.bound_terms(v=np.sqrt(v2), L=L, lam=lam, eta=np.sqrt(eta2), alpha=0.1,
                                  delta=p["delta_base"], p=c["p"], m=c["m"],
                                  n_prime=c["n_prime"], k=c["k"], Delta=Delta)
        for j in (0, 1):
            e = {d: 0.01 * c["p"] ** exps["p"] * Delta ** exps["Delta"] * c["k"] ** exps["k"]
                 * c["n_prime"] ** exps["n_prime"] * c["m"] ** exps["m"] * d ** exps["delta"]
                 for d in p["deltas"]}
            rows.append({"loss": "huber", "cell": name, "cluster": j, "p": c["p"], "k": c["k"],
                         "n_prime": c["n_prime"], "m": c["m"], "delta": Delta, "A": A, "B": B,
                         "C": C, **{f"eps0_{d:g}": v for d, v in e.items()}})
            boot[("huber", name, j)] = np.array(list(e.values()))[None] * np.exp(
                noise * rng.standard_normal((200, len(e))))
    return pd.DataFrame(rows), boot


def test_slopes_recover_made_up_exponents_and_the_bounds_allowance():
    params = _params("quick")
    exps = {"p": 0.5, "Delta": -0.3, "k": -0.2, "delta": -0.25, "n_prime": -0.5, "m": -0.5}
    rows, boot = _made_up_cells(params, exps, noise=0.01)
    s = t2f.slopes(rows, boot, params).set_index(["cluster", "variable"])
    for var, e in exps.items():
        r = s.loc[(0, var)]
        want = e - exps["p"] if var == "k" else e  # along k, p = 1/k moves too
        assert r["slope"] == pytest.approx(want, abs=1e-12)
        assert r["slope_lo"] <= r["slope"] <= r["slope_hi"]
        assert r["growth"] == pytest.approx(t2f.VARIABLES[var] * want, abs=1e-12)
        assert r["growth_lo"] <= r["growth"] <= r["growth_hi"]
    # the allowance is the largest term growth in the hard direction
    assert s.loc[(0, "p"), "allowance"] == pytest.approx(0.5, abs=1e-12)
    assert s.loc[(0, "k"), "allowance"] == pytest.approx(1.5, abs=1e-12)
    assert s.loc[(0, "delta"), "allowance"] == pytest.approx(1.5, abs=1e-12)
    assert s.loc[(0, "n_prime"), "allowance"] == pytest.approx(1.0, abs=1e-12)
    assert s.loc[(0, "m"), "allowance"] == pytest.approx(0.5, abs=1e-12)
    # Delta: B ~ eta^2 / (lam^2 Delta^4) with eta^2 ~ R, lam ~ 1/R, Delta ~ R^1.1: R^(3 - 4.4)
    assert s.loc[(0, "Delta"), "slope_B"] == pytest.approx((3 - 4.4) / 1.1, abs=1e-12)
    assert s.loc[(0, "Delta"), "allowance"] == pytest.approx(1.4 / 1.1, abs=1e-12)
    # the delta fit leaves out delta = 0.5 (delta_fit_max = 0.2) unless told otherwise
    assert s.loc[(0, "delta"), "levels"] == 5
    wide = t2f.slopes(rows, boot, params, delta_fit_max=0.5).set_index(["cluster", "variable"])
    assert wide.loc[(0, "delta"), "levels"] == 6
    assert t2f.decide(s.reset_index(), params).verdict == HOLDS


def test_a_growth_faster_than_every_term_is_not_supported():
    params = _params("quick")
    exps = {"p": -1.5, "Delta": 0.0, "k": 0.0, "delta": -0.25, "n_prime": -0.5, "m": -0.5}
    rows, boot = _made_up_cells(params, exps, noise=0.01)
    checks = t2f.slopes(rows, boot, params)
    d = t2f.decide(checks, params)
    assert d.verdict == NOT_SUPPORTED
    assert d.numbers["by_variable"]["p"] == NOT_SUPPORTED
    assert d.numbers["by_variable"]["m"] == HOLDS
    assert checks.loc[d.numbers["closest"], "variable"] == "p"
    assert t2f._scope(d).startswith("p: not supported; Delta: holds")


# ------------------------------------------------------------------------------ decide

def _checks(rows):
    return pd.DataFrame([{"loss": "huber", "cluster": 0, "variable": v, "growth": g,
                          "growth_lo": lo, "growth_hi": hi, "allowance": a}
                         for v, g, lo, hi, a in rows])


M = 0.25


@pytest.mark.parametrize("rows, verdict", [
    ([("p", 0.5, 0.4, 0.5 + M, 0.5), ("m", 0.4, 0.3, 0.5, 0.5)], HOLDS),  # hi exactly at
    ([("p", 0.5, 0.4, 0.5 + M + EPS, 0.5)], CAVEAT),  # hi just above, estimate below
    ([("p", 0.5 + M + EPS, 0.4, 1.0, 0.5)], INCONCLUSIVE),  # estimate above, lo below
    ([("p", 1.0, 0.5 + M + EPS, 1.2, 0.5), ("m", 0.4, 0.3, 0.5, 0.5)], NOT_SUPPORTED),
    ([("p", 1.0, 0.5 + M, 1.2, 0.5)], INCONCLUSIVE),  # lo exactly at the threshold
    ([("p", np.nan, np.nan, np.nan, 0.5), ("m", 0.4, 0.3, 0.5, 0.5)], INCONCLUSIVE),
    ([("p", 0.5, 0.4, 0.9, 0.5), ("m", 0.9, 0.6, 1.0, 0.5)], INCONCLUSIVE),  # weakest wins
])
def test_decide(rows, verdict):
    params = _params()
    params["margins"]["slope_margin"] = M
    d = t2f.decide(_checks(rows), params)
    assert d.verdict == verdict
    assert d.numbers["margin"] == M and len(d.numbers["verdicts"]) == len(rows)


def test_decide_numbers_name_the_closest_check_and_each_variable():
    params = _params()
    params["margins"]["slope_margin"] = M
    checks = _checks([("p", 0.1, 0.0, 0.2, 0.5), ("k", 1.0, 0.9, 1.6, 1.5),
                      ("k", -0.5, -0.6, -0.4, 1.5)])
    d = t2f.decide(checks, params)
    assert d.numbers["closest"] == 1 and d.numbers["closest_gap"] == pytest.approx(0.1)
    assert d.numbers["by_variable"] == {"p": HOLDS, "k": HOLDS}
    params["margins"]["slope_margin"] = 0.0
    assert t2f.decide(checks, params).numbers["by_variable"]["k"] == CAVEAT


# ------------------------------------------------------------------------------ config, unit

@pytest.mark.parametrize("changes, match", [
    ({"p_levels": [0.3, 0.2]}, "p_levels must include the base value 0.5"),
    ({"R_mults": [0.5, 2.0]}, "R_mults must include the base value 1"),
    ({"k_levels": [2, 6]}, "k_levels must be <= d"),
    ({"m": 25, "m_levels": [25, 50]}, "p m must be a whole number"),
    ({"k_levels": [2, 5]}, "m must be a multiple of every k"),
    ({"burn": 10}, "burn must be < params.T"),
    ({"delta_base": 0.3}, "delta_base"),
    ({"losses": ["squared"]}, "params.losses must be among"),
    ({"n_prime_levels": [20, 20]}, "at least 2 distinct levels"),
])
def test_config_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        t2f.units(_params(**changes))


def test_too_few_deltas_for_the_fit_is_an_error():
    params = _params()
    params["margins"]["delta_fit_max"] = 0.15
    with pytest.raises(ValueError, match="delta_fit_max"):
        t2f.units(params)


def test_a_unit_starts_at_its_distance_and_records_every_step():
    params = _params(burn=0, T=4, seeds=2, runs=2, start_frac=0.25)
    cons = pd.DataFrame([{"lam": 0.6, "L": 0.9, "eta2": 0.4, "v2": 2.6, "delta": 1.24,
                          "radius": 0.4, "alpha_eff": 0.1, "center_norm": 0.88}])
    spec = {"loss": "huber", "cell": "c", "p": 1 / 3, "R_mult": 1.0, "k": 3, "n_prime": 8,
            "m": 12}
    out = t2f.compute(spec, params, np.random.default_rng(1), lambda name, fn: cons)
    meta, steps = out[out["part"] == "cell"], out[out["part"] == "step"]
    assert list(meta["size"]) == [4, 4, 4] and len(steps) == 3 * 2 * 2 * 5
    t0 = steps[steps["t"] == 0]
    np.testing.assert_allclose(t0["err"], 0.25 * 0.4, rtol=1e-5)  # 6 significant digits
    assert steps["mis"].between(0, 1).all()
    # a step is in the ball when every model of its run is within the radius
    worst = steps.groupby(["seed", "run", "t"])["err"].transform("max")
    assert (steps["inball"] == (worst <= 0.4)).all()


# ------------------------------------------------------------------------------ smoke

def _line(lines, what):
    (line,) = [s for s in lines if s.startswith(what + " (chosen ")]
    return line


def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("T2F", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.kind == "claim" and r.paper == "IFCA"
    assert r.scope.startswith("p: ") and "n': " in r.scope
    rec = json.loads((tmp_path / "T2F_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    table = pd.read_csv(tmp_path / "T2F_smoke.csv")
    params = get("T2F").config("smoke").values
    from mixlinreg.theory.study import unit_rng

    rng = lambda key: unit_rng(0, "T2F", "analyze_" + key)  # noqa: E731
    v = t2f.analyze(table, params, rng)
    assert v.verdict == r.verdict and v.summary == r.summary and v.scope == r.scope
    slopes = pd.read_csv(tmp_path / "T2F_smoke_slopes.csv")
    assert list(slopes["verdict"]) == list(v.tables["_slopes.csv"]["verdict"])
    np.testing.assert_allclose(slopes["growth"], v.tables["_slopes.csv"]["growth"], rtol=1e-12)
    assert len(slopes) == 6 * 2  # six variables, clusters 0 and 1, one loss
    # every sensitivity line is decide() at the neighbouring value
    cellrows, boot = t2f.measure(table, params, rng)
    checks = t2f.slopes(cellrows, boot, params)
    mis = t2f.mis_slopes(cellrows, boot, params)
    mg = params["margins"]
    assert v.cells == t2f.hard_cells(cellrows, params) and v.cells["total"] == len(
        cellrows.groupby(["loss", "cell"]))
    assert rec["cells"] == v.cells
    mis_csv = pd.read_csv(tmp_path / "T2F_smoke_mis.csv")
    assert list(mis_csv["verdict"]) == list(v.tables["_mis.csv"]["verdict"])
    assert len(mis_csv) == 2 * 2  # Delta and k, clusters 0 and 1, one loss
    for what, key, at in (
            ("slope margin", "slope_margin",
             lambda x: t2f.decide(checks, t2f._at(params, "slope_margin", x), mis).verdict),
            ("bootstrap confidence", "confidence",
             lambda x: t2f.decide(t2f.slopes(cellrows, boot, params, confidence=x), params,
                                  t2f.mis_slopes(cellrows, boot, params, confidence=x)).verdict),
            ("largest delta of the delta fit", "delta_fit_max",
             lambda x: t2f.decide(t2f.slopes(cellrows, boot, params, delta_fit_max=x),
                                  params, mis).verdict),
            ("smallest misassignment share of a judged cell", "share_min",
             lambda x: t2f.decide(checks, params,
                                  t2f.mis_slopes(cellrows, boot, params, share_min=x)).verdict)):
        line = _line(v.sensitivity, what)
        for x in sorted(set(mg[key + "_neighbours"]) | {mg[key]}):
            assert f"{x:g} -> {at(x)}" in line
    again = run_study("T2F", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict


# ------------------------------------------------------------------------------ version 2

def test_the_delta_and_k_sweeps_run_at_n_prime_hard():
    p = _params("paper")["params"]
    assert p["n_prime_hard"] == 10 and p["n_prime"] == 50
    cs, sweeps = t2f.cells(p)
    assert {cs[n]["n_prime"] for v in ("Delta", "k") for n in sweeps[v]} == {10}
    assert {cs[n]["n_prime"] for v in ("p", "delta", "m") for n in sweeps[v]} == {50}
    # the default (0, or absent) is the base n', as in version 1
    for q in (dict(p, n_prime_hard=0), {k: v for k, v in p.items() if k != "n_prime_hard"}):
        cs0, sw0 = t2f.cells(q)
        assert {cs0[n]["n_prime"] for v in ("Delta", "k") for n in sw0[v]} == {50}


def test_flip_defaults_leave_ifca_as_it_is():
    for preset in ("smoke", "quick", "paper"):
        p = _params(preset)["params"]
        assert all(t2f.flip_prob(p, r) == 0.0 for r in p["R_mults"])
    q = {"flip_ref": 0.02, "flip_power": 3.0, "flip_cap": 0.1}
    assert t2f.flip_prob(q, 1.0) == pytest.approx(0.02)
    assert t2f.flip_prob(q, 0.5) == pytest.approx(0.1)  # capped
    assert t2f.flip_prob(q, 2.0) == pytest.approx(0.02 / 8)


def _flip_problem(loss, k=3, T=6, npr=8, seed=3):
    from mixlinreg.theory.convex import LOSS_SETUPS, draw_cluster_data, init_at_distance, \
        theta_star_of

    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"], k=k)
    g = np.random.default_rng(seed)
    X, y, lab = draw_cluster_data(loss, ts, [4] * k, 2 * npr * T, g, sigma=s["sigma"],
                                  df=s["df"])
    init = init_at_distance(0.9 * ts, 0.6, 3, g)
    return X, y, lab, init, ts, dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"])


@pytest.mark.parametrize("loss", ["huber", "logistic"])
def test_ifca_flip_without_flips_is_ifca(loss):
    from mixlinreg.ifca import ifca

    X, y, lab, init, ts, kw = _flip_problem(loss)
    res = ifca(X, y, init, 0.7, n_iter=6, theta_star=ts, resample=True, trace=True,
               n_threads=1, **kw)
    dist, labels = t2f.ifca_flip(X, y, init, 0.7, 6, theta_star=ts, q=0.0, rng=None, **kw)
    np.testing.assert_allclose(dist, res.trace.dist, rtol=0, atol=1e-12)
    assert (labels == res.trace.labels).all()
    assert (labels[:6] != lab).any()  # the problem has misassignments: the argmin is compared


def test_ifca_flip_moves_each_estimate_to_another_cluster_at_the_rate():
    X, y, lab, init, ts, kw = _flip_problem("huber", T=40, npr=4)
    q = 0.3
    d0, l0 = t2f.ifca_flip(X, y, init, 0.0, 40, theta_star=ts, q=0.0, rng=None, **kw)
    d1, l1 = t2f.ifca_flip(X, y, init, 0.0, 40, theta_star=ts, q=q,
                           rng=np.random.default_rng(0), **kw)
    # lr = 0: the models never move, so the argmin is the same and only the flips differ
    np.testing.assert_array_equal(d0, d1)
    changed = l1[:40] != l0[:40]
    assert abs(changed.mean() - q) < 4 * np.sqrt(q * (1 - q) / changed.size)
    assert (l1[40] == l0[40]).all()  # the final evaluation is never flipped
    assert set(np.unique(l1)) <= {0, 1, 2}


def test_a_unit_runs_the_oracle_on_the_same_blocks():
    from mixlinreg.ifca import ifca
    from mixlinreg.theory.convex import LOSS_SETUPS, draw_cluster_data, init_at_distance, \
        theta_star_of

    params = _params(burn=0, T=4, seeds=2, runs=2, start_frac=0.25)
    cons = pd.DataFrame([{"lam": 0.6, "L": 0.9, "eta2": 0.4, "v2": 2.6, "delta": 1.24,
                          "radius": 0.4, "alpha_eff": 0.1, "center_norm": 0.88}])
    spec = {"loss": "huber", "cell": "c", "p": 0.5, "R_mult": 0.5, "k": 2, "n_prime": 3,
            "m": 8}
    out = t2f.compute(spec, params, np.random.default_rng(1), lambda name, fn: cons)
    steps = out[out["part"] == "step"]
    # the same draws as compute's: seed 0's data, its start and the oracle of cluster j
    s = LOSS_SETUPS["huber"]
    gen = np.random.default_rng(1).spawn(2)[0]
    X, y, labels = draw_cluster_data("huber", theta_star_of(0.5 * s["R"]), [4, 4], 2 * 3 * 4,
                                     gen, sigma=s["sigma"], df=s["df"])
    centers = 0.88 * np.eye(2, 5)
    init = init_at_distance(centers, 0.25 * 0.4, 2, gen)
    kw = dict(loss="huber", l2=s["l2"], huber_delta=s["huber_delta"], resample=True,
              trace=True, n_threads=1)
    res = ifca(X, y, init, 1 / 0.9, n_iter=4, theta_star=centers, **kw)
    assert (res.trace.labels[:4] != labels).any()  # seed 0 has a misassignment: oracle run
    for j in (0, 1):
        sel = labels == j
        ro = ifca(X[sel], y[sel], init[:, j:j + 1], 0.5 / 0.9, n_iter=4,
                  theta_star=centers[j:j + 1], **kw)
        got = steps[(steps["seed"] == 0) & (steps["cluster"] == j)].sort_values(["t", "run"])
        np.testing.assert_allclose(got["err_o"], ro.trace.dist[:, :, 0, 0].ravel(), rtol=1e-5)
        np.testing.assert_allclose(got["err"], res.trace.dist[:, :, j, j].ravel(), rtol=1e-5)
    mis_any = (res.trace.labels != labels).any(axis=2).ravel()
    got = steps[(steps["seed"] == 0) & (steps["cluster"] == 0)].sort_values(["t", "run"])
    assert list(got["mis_any"]) == list(mis_any)


def test_oracle_equals_ifca_when_no_machine_is_misassigned():
    # far apart clusters and many rows: no misassignment, the oracle's errors are IFCA's
    params = _params(burn=0, T=4, seeds=2, runs=2, start_frac=0.1)
    cons = pd.DataFrame([{"lam": 0.6, "L": 0.9, "eta2": 0.4, "v2": 2.6, "delta": 1.24,
                          "radius": 0.4, "alpha_eff": 0.1, "center_norm": 0.88}])
    spec = {"loss": "huber", "cell": "c", "p": 0.5, "R_mult": 1.0, "k": 2, "n_prime": 400,
            "m": 8}
    out = t2f.compute(spec, params, np.random.default_rng(2), lambda name, fn: cons)
    steps = out[out["part"] == "step"]
    assert not steps["mis_any"].any()
    np.testing.assert_array_equal(steps["err_o"], steps["err"])
    assert (out.loc[out["part"] == "cell", "oracle_seeds"] == 0).all()


def _mis_cells(params, shares, exps, noise=0.0, seed=0):
    """Made-up cells (:func:`_made_up_cells`) with an oracle: the misassignment excess
    ``eps0 - eps0_oracle = c x^a`` along Delta (x = Delta) and k (x = k) and the share per cell
    (``shares[var]``, in level order; the other sweeps' shares 0)."""
    p = params["params"]
    rows, boot = _made_up_cells(params, {v: 0.0 for v in t2f.VARIABLES}, noise=0.0, seed=seed)
    _, sweeps = t2f.cells(p)
    rng = np.random.default_rng(seed + 1)
    db = p["delta_base"]
    ib = list(p["deltas"]).index(db)
    rows["share"], rows["mis_excess"] = 0.0, 0.0
    # the two sweeps share their base cell (R_mult 1, k 2): the excess is one power law of both
    for var in ("Delta", "k"):
        for n, sh in zip(sweeps[var], shares[var]):
            for j in (0, 1):
                i = rows.index[(rows["cell"] == n) & (rows["cluster"] == j)][0]
                exc = 0.01 * rows.at[i, "delta"] ** exps["Delta"] * rows.at[i, "k"] ** exps["k"]
                e0 = exc / sh if sh > 0 else exc
                rows.at[i, f"eps0_{db:g}"] = e0
                rows.at[i, "share"] = sh
                rows.at[i, "mis_excess"] = exc
                b = np.full((200, len(p["deltas"])), e0) * np.exp(
                    noise * rng.standard_normal((200, 1)))
                bo = b.copy()
                bo[:, ib] = b[:, ib] - exc * np.exp(noise * rng.standard_normal(200))
                boot[("huber", n, j)], boot[("huber", n, j, "oracle")] = b, bo
    return rows, boot


def test_mis_slopes_judge_only_the_hard_cells_against_the_b_and_c_terms():
    params = _params("paper")
    _, sweeps = t2f.cells(params["params"])
    shares = {"Delta": [0.9, 0.8, 0.6, 0.3], "k": [0.6, 0.7, 0.8]}
    # the made-up B grows like Delta^{-1.4/1.1} (:func:`_made_up_cells`): a growth 1 holds
    rows, boot = _mis_cells(params, shares, {"Delta": -1.0, "k": 1.0}, noise=0.01)
    ms = t2f.mis_slopes(rows, boot, params).set_index(["cluster", "variable"])
    r = ms.loc[(0, "Delta")]
    # R_mults [0.5, 0.7, 1.0, 1.4]: the last cell (share 0.3 < 0.5) is not judged
    assert r["reached"] and r["levels"] == 3 and r["levels_total"] == 4
    assert r["slope"] == pytest.approx(-1.0, abs=1e-12) and r["growth"] == pytest.approx(1.0)
    assert r["growth_lo"] <= r["growth"] <= r["growth_hi"]
    hard = [n for n, sh in zip(sweeps["Delta"], shares["Delta"]) if sh >= 0.5]
    g = rows[(rows["cluster"] == 0) & rows["cell"].isin(hard)].set_index("cell").loc[hard]
    want = max(-t2f.ols_slope(g["delta"], g[t]) for t in ("B", "C"))
    assert r["allowance"] == pytest.approx(want, abs=1e-12)
    rk = ms.loc[(0, "k")]
    assert rk["reached"] and rk["levels"] == 3 and rk["growth"] == pytest.approx(1.0)
    # equal clusters p = 1/k: C ~ k^{3/2} is the steepest of B and C along k
    assert rk["allowance"] == pytest.approx(1.5, abs=1e-12)
    d = t2f.decide(t2f.slopes(rows, boot, params), params, ms.reset_index())
    assert d.numbers["mis_verdicts"] == [HOLDS] * 4 and d.numbers["not_reached"] == 0
    # share_min 0.7: one hard Delta cell less, 2 left; 0.95: none, not reached
    assert t2f.mis_slopes(rows, boot, params, share_min=0.7).set_index(
        ["cluster", "variable"]).loc[(0, "Delta"), "levels"] == 2
    none = t2f.mis_slopes(rows, boot, params, share_min=0.95)
    assert not none["reached"].any() and none["growth"].isna().all()


def test_a_misassignment_excess_growing_faster_than_b_and_c_is_not_supported():
    params = _params("paper")
    shares = {"Delta": [0.9, 0.9, 0.9, 0.9], "k": [0.9, 0.9, 0.9]}
    rows, boot = _mis_cells(params, shares, {"Delta": -9.0, "k": 1.0}, noise=0.01)
    checks = t2f.slopes(rows, boot, params)
    ms = t2f.mis_slopes(rows, boot, params)
    d = t2f.decide(checks, params, ms)
    assert d.verdict == NOT_SUPPORTED
    assert d.numbers["by_variable"]["Delta"] == NOT_SUPPORTED
    assert d.numbers["by_variable_mis"] == {"Delta": NOT_SUPPORTED, "k": HOLDS}


def test_a_check_not_reached_lowers_holds_to_a_caveat():
    params = _params("paper")
    shares = {"Delta": [0.9, 0.1, 0.1, 0.1], "k": [0.1, 0.9, 0.9]}  # R_mult 1 = k 2: 0.1
    rows, boot = _mis_cells(params, shares, {"Delta": -1.0, "k": 1.0}, noise=0.01)
    checks = t2f.slopes(rows, boot, params)
    assert t2f.decide(checks, params).verdict == HOLDS  # version 1's rule alone
    ms = t2f.mis_slopes(rows, boot, params)
    d = t2f.decide(checks, params, ms)
    assert d.verdict == CAVEAT and d.numbers["not_reached"] == 2
    assert d.numbers["mis_verdicts"] == [t2f.NOT_REACHED, HOLDS, t2f.NOT_REACHED, HOLDS]
    assert d.numbers["by_variable"]["Delta"] == CAVEAT and d.numbers["by_variable"]["k"] == HOLDS
    # a failing check is not hidden by one not reached
    bad = ms.copy()
    bad.loc[1, ["growth", "growth_lo", "growth_hi"]] = [5.0, 4.5, 5.5]
    assert t2f.decide(checks, params, bad).verdict == NOT_SUPPORTED


def test_hard_cells_count_the_pairs_hard_in_both_clusters():
    rows = pd.DataFrame({"loss": ["h"] * 6, "cell": ["a", "a", "b", "b", "c", "c"],
                         "cluster": [0, 1] * 3, "share": [0.6, 0.5, 0.9, 0.2, np.nan, 0.9]})
    params = {"params": {"delta_base": 0.1}, "margins": {"share_min": 0.5}}
    c = t2f.hard_cells(rows, params)
    assert (c["hard"], c["total"]) == (1, 3) and "0.5" in c["rule"]
    assert t2f.hard_cells(rows, params, share_min=0.1)["hard"] == 2
