"""Study C2T, version 2 (Corollary 2's iteration counts and the burn-in T' of its proof, judged at
and after the bounds): the bounds against their closed forms and the proof's condition, the
measurement pieces against direct computation (first passage, at/after the bound, pooled slope,
counts, the run length, the hard-cell rule, starts), the chunked resampled run against one call on
the concatenated rows, the control's step_mult (default 1: the run unchanged), the pure ``decide``
on made-up measurements (every verdict), the sensitivity lines against ``decide`` at the
neighbours, config errors, and a complete smoke record whose written tables reproduce its
analysis."""

from __future__ import annotations

import doctest
import json
import math

import numpy as np
import pandas as pd
import pytest

from mixlinreg import ifca
from mixlinreg.stats import wilson_interval
from mixlinreg.theory import bounds
from mixlinreg.theory.convex import LOSS_SETUPS, draw_cluster_data, theta_star_of
from mixlinreg.theory.study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS,
                                    unit_rng)
from mixlinreg.theory.studies import _c2t_model, c2t, get, run_study


def _rng(key):
    """The analysis streams of a record made with seed 0 (as :func:`run` hands them)."""
    return unit_rng(0, "C2T", "analyze_" + key)


def test_the_study_is_registered_as_corollary_2_iterations():
    study = get("C2T")
    assert (study.id, study.order, study.paper, study.kind) == ("C2T", 62, "IFCA", "claim")
    assert study.decide is c2t.decide
    assert "Appendix D" in study.location and "(37)" in study.location
    assert "NeurIPS" in study.location and "log(Delta/(2 eps))" in study.location
    assert "log(2 Delta/eps)" in study.claim and "log(4 sqrt(L/lambda))" in study.claim


def test_the_module_examples_run():
    results = [doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
               for mod in (c2t, _c2t_model)]
    assert sum(r.attempted for r in results) >= 4 and not any(r.failed for r in results)


# ------------------------------------------------------------------------------ the bounds

@pytest.mark.parametrize("L, lam, p", [(0.264, 0.104, 0.5), (0.849, 0.593, 0.25), (1.0, 1.0, 1.0)])
def test_bounds_are_the_papers_closed_forms_and_meet_the_proofs_condition(L, lam, p):
    kappa = 8 * L / (p * lam)
    delta = 2.17
    for eps in (delta, 0.3, 0.01):
        assert c2t.iteration_bound(eps, L=L, p=p, lam=lam, Delta=delta) == pytest.approx(
            kappa * math.log(2 * delta / eps), rel=1e-14)
    tp = c2t.burn_in_bound(L=L, p=p, lam=lam)
    assert tp == pytest.approx(kappa * math.log(4 * math.sqrt(L / lam)), rel=1e-14)
    # Appendix D, condition (a): (1 - p lam/(8L))^T' <= (1/4) sqrt(lam/L), which eq. (37) ensures
    # through log(1 - x) <= -x; so (1/2 - alpha0) x that factor <= 1/8 for every alpha0 in (0, 1/2)
    factor = float(bounds.theorem2_factor(p, lam, L))
    assert factor ** tp <= 0.25 * math.sqrt(lam / L) * (1 + 1e-12)
    # T(eps) at eps = 1/4 sqrt(lam/L) Delta ... exceeds T': reaching that level is part of T(eps)
    assert c2t.iteration_bound(0.25 * math.sqrt(lam / L) * delta, L=L, p=p, lam=lam,
                               Delta=delta) > tp


def test_burn_in_bound_rejects_bad_constants():
    with pytest.raises(ValueError, match="lam <= L"):
        c2t.burn_in_bound(L=1.0, p=0.5, lam=2.0)
    with pytest.raises(ValueError, match="p in"):
        c2t.burn_in_bound(L=1.0, p=0.0, lam=0.5)


# ------------------------------------------------------------------------------ measurements

def test_first_hit_against_a_direct_loop():
    rng = np.random.default_rng(3)
    err = np.exp(np.cumsum(rng.normal(-0.2, 0.3, (40, 6)), axis=0))
    eps = np.geomspace(2.0, 1e-3, 9)
    got = c2t.first_hit(err, eps)
    for r in range(err.shape[1]):
        for q, e in enumerate(eps):
            below = [t for t in range(err.shape[0]) if err[t, r] <= e]
            assert got[r, q] == (below[0] if below else -1)
    assert (got == -1).any() and (got >= 0).any()  # both cases exercised


def test_pooled_slope_is_least_squares_with_one_intercept_per_run():
    rng = np.random.default_rng(5)
    run = np.repeat(np.arange(4), [5, 3, 6, 1])
    x = rng.normal(size=run.size)
    y = 2.5 * x + 3.0 * run + rng.normal(0, 0.1, run.size)
    sxy, sxx = c2t.pooled_slope(x, y, run)
    design = np.column_stack([x] + [(run == r).astype(float) for r in range(4)])
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    assert sxy / sxx == pytest.approx(coef[0], rel=1e-10)
    # a run with one point adds nothing
    assert c2t.pooled_slope([1.0], [7.0], [0]) == (0.0, 0.0)


def test_after_bound_against_a_direct_loop():
    rng = np.random.default_rng(4)
    err = np.exp(np.cumsum(rng.normal(-0.15, 0.4, (50, 5)), axis=0))
    levels = np.array([3.0, 1.0, 0.3, 0.05, 1e-4])
    bnds = np.array([0.0, 7.2, 20.0, 3.0, 60.0])  # the last: ceil 60 > 49 = the end
    got = c2t.after_bound(err, levels, bnds)
    t_end = err.shape[0] - 1
    for r in range(err.shape[1]):
        for q, (e, b) in enumerate(zip(levels, bnds)):
            tq = math.ceil(b)
            chk = tq <= t_end
            assert got["checked"][r, q] == chk
            assert got["at_T"][r, q] == (chk and err[tq, r] <= e)
            assert got["stays"][r, q] == (chk and all(err[t, r] <= e for t in range(tq, t_end + 1)))
            above = [t for t in range(t_end + 1) if err[t, r] > e]
            assert got["t_stay"][r, q] == (above[-1] + 1 if above else 0)
            if chk:
                assert got["worst_after"][r, q] == pytest.approx(err[tq:, r].max() / e, rel=1e-14)
            else:
                assert np.isnan(got["worst_after"][r, q])
    # every case exercised: staying, not staying but below at T, over at T, censored
    chk = got["checked"]
    assert got["stays"].any() and (got["at_T"] & ~got["stays"]).any()
    assert (chk & ~got["at_T"]).any() and (~chk).any()


def test_check_iteration_and_run_length():
    assert c2t.check_iteration([0.0, 1e-12, 2.1, 95.2]).tolist() == [0, 0, 3, 96]
    assert c2t.check_iteration([2.0 + 1e-12]).tolist() == [2]  # rounding, not a later iteration
    assert c2t.check_iteration([4.0]).tolist() == [4]
    # the run covers ceil(run_mult x the largest bound), so every level is checked with a tail
    assert c2t.run_length([10.0, 95.2], 30.0, 1.25, 3000) == math.ceil(1.25 * 95.2) == 119
    assert c2t.run_length([10.0, 20.0], 30.0, 1.0, 3000) == 30  # T' the largest
    assert c2t.run_length([10.0, 95.2], 30.0, 1.25, 50) == 50   # capped


def test_stay_counts_and_the_hard_rule():
    # checked runs that leave the level count, unchecked ones are censored (not counted)
    assert c2t.stay_counts([True, True, False], [False, True, False], [False, True, False]) == (
        1, 1, 1)
    # the record's CSV reads the booleans back as text or numbers: the same counts
    assert c2t.stay_counts(["True", "True", "False"], ["False", "True", "False"],
                           [1, 1, 0]) == (1, 0, 1)
    p = {"hard_floor_mult": 10.0, "hard_ratio": 0.5}
    assert not c2t._hard(1.0, 0.05, 0.2, 0, p)       # 20 x floor, settled at 0.2 T
    assert c2t._hard(0.4, 0.05, 0.2, 0, p)           # 8 x floor: near the floor
    assert c2t._hard(1.0, 0.05, 0.5, 0, p)           # last passage at half the bound
    assert c2t._hard(1.0, 0.05, np.inf, 0, p)        # never settles
    assert c2t._hard(1.0, 0.05, 0.1, 1, p)           # a censored run


def test_starts_adversarial_direction_and_clamp():
    centers = np.array([[3.0, 0, 0, 0, 0], [0, 3.0, 0, 0, 0]])
    init = c2t.adversarial_init(centers, 0.5)
    np.testing.assert_allclose(np.linalg.norm(init - centers, axis=1), 0.5, rtol=1e-14)
    # each model on the segment toward the other centre: distance Delta - r to it
    delta = np.linalg.norm(centers[0] - centers[1])
    np.testing.assert_allclose(np.linalg.norm(init[0] - centers[1]), delta - 0.5, rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(init[1] - centers[0]), delta - 0.5, rtol=1e-14)
    c = {"scale": 1.0, "radius": 0.42}
    assert c2t.start_radius(0.2, c) == pytest.approx((0.3, 0.2))
    r, a = c2t.start_radius(0.05, c)  # (1/2 - 0.05) = 0.45 > radius: clamped, alpha it has
    assert r == 0.42 and a == pytest.approx(0.08)


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_chunked_run_equals_one_call_on_the_concatenated_rows(loss):
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    rng = np.random.default_rng(11)
    sizes, n_prime, T, chunk = [5, 7], 4, 7, 3
    chunks = []

    def draw(c):
        X, y, _ = draw_cluster_data(loss, ts, sizes, 2 * n_prime * c, rng, sigma=s["sigma"],
                                    df=s["df"])
        chunks.append((X, y))
        return X, y

    init = ts[None] + 0.3 * np.random.default_rng(2).standard_normal((3, 2, ts.shape[1]))
    kw = dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"])
    dist, theta, lab0, div = c2t.run_chunked(draw, init, 0.7, T, chunk, centers=ts, **kw)
    assert [X.shape[1] for X, _ in chunks] == [2 * n_prime * c for c in (3, 3, 1)]
    X = np.concatenate([X for X, _ in chunks], axis=1)
    y = np.concatenate([y for _, y in chunks], axis=1)
    res = ifca(X, y, init, 0.7, n_iter=T, resample=True, trace=True, theta_star=ts,
               n_threads=1, **kw)
    one = np.stack([res.trace.dist[:, :, j, j] for j in range(2)], axis=-1)
    assert dist.shape == one.shape == (T + 1, 3, 2)
    np.testing.assert_allclose(dist, one, rtol=0, atol=1e-10)
    np.testing.assert_allclose(theta, res.theta, rtol=0, atol=1e-10)
    assert (lab0 == res.trace.labels[0]).all() and not div.any()
    # an early end after a chunk gives a prefix of the same run
    rng = np.random.default_rng(11)
    chunks.clear()
    part, _, _, _ = c2t.run_chunked(draw, init, 0.7, T, chunk, centers=ts,
                                    stop=lambda d: d.shape[0] - 1 >= 3, **kw)
    assert part.shape[0] == 4
    np.testing.assert_allclose(part, one[:4], rtol=0, atol=1e-10)


def _shared(name, fn):
    """A runner's shared piece without a store: the piece computed from its named stream."""
    return fn(unit_rng(0, "C2T", "shared_" + name))


def test_step_mult_default_leaves_the_run_unchanged_and_is_validated(tmp_path):
    """The control's step_mult (issue 37): absent it is 1 (the corollary's 1/L: the same rows as
    an explicit 1), 0.01 changes the runs but not the bounds, the floor or the eps grid (all of
    the step 1/L), and a step_mult of 0 is refused by name."""
    import tomllib

    from mixlinreg.config import find

    raw = tomllib.loads(find("C2T", "studies").read_text())
    assert "step_mult" not in raw["params"] and raw["control"]["params"]["step_mult"] == 0.01
    params = get("C2T").config("smoke").values
    assert params["params"]["step_mult"] == 1.0
    p = dict(params["params"], losses=["huber"], seeds=1, trace_seeds=0, n_eps=3)
    spec = {"loss": "huber", "p_small": 0.5, "first": 0, "reps": 1}

    def rows(**change):
        c2t._MEMO.clear()
        return c2t.compute(spec, {"params": dict(p, **change), "margins": params["margins"]},
                           unit_rng(0, "C2T", "unit"), _shared)

    one, again, small = rows(), rows(step_mult=1.0), rows(step_mult=0.01)
    pd.testing.assert_frame_equal(one, again)
    ep1, eps = one[one["part"] == "eps"], small[small["part"] == "eps"]
    for col in ("eps", "t_bound", "t_check", "floor_cal", "t_max"):
        np.testing.assert_array_equal(ep1[col].to_numpy(), eps[col].to_numpy())
    r1, rs = one[one["part"] == "run"], small[small["part"] == "run"]
    np.testing.assert_array_equal(r1["start"].to_numpy(), rs["start"].to_numpy())
    # the small step: the same starts, a slower descent (a larger error at the run's end)
    assert (rs["floor_run"].to_numpy() > r1["floor_run"].to_numpy()).all()
    assert set(one["step_mult"].dropna()) == {1.0} and set(small["step_mult"].dropna()) == {0.01}
    src = find("C2T", "studies").read_text()
    bad = tmp_path / "C2T.toml"
    bad.write_text(src.replace("run_mult = 1.25 ", "step_mult = 0.0\nrun_mult = 1.25 ", 1))
    with pytest.raises(ValueError, match=r"step_mult"):
        get("C2T").config("paper", bad)


def test_shared_pieces_are_reused_only_for_the_same_name_params_and_stream():
    calls = []

    def fn(rng):
        calls.append(1)
        return pd.DataFrame({"v": [rng.random()]})

    def shared(name, f):  # no store: the runner hands each unit a fresh generator of the name
        return f(unit_rng(0, "C2T", "shared_" + name))

    a = c2t._memo_shared(shared, "piece_x", fn, {"n": 1})
    a.loc[0, "v"] = -1.0  # a copy: the memo is not changed through it
    b = c2t._memo_shared(shared, "piece_x", fn, {"n": 1})
    assert len(calls) == 1 and b["v"].iloc[0] == fn(unit_rng(0, "C2T", "shared_piece_x"))["v"][0]
    c2t._memo_shared(shared, "piece_x", fn, {"n": 2})  # other params: computed again
    c2t._memo_shared(shared, "piece_y", fn, {"n": 1})  # other name (stream): computed again
    assert len(calls) == 4  # (one more: the direct call in the first assertion)


# ------------------------------------------------------------------------------ decide

MARGINS = {"tol": 0.1, "confidence": 0.95, "loose_factor": 2.0}


def _meas(tests, cells):
    """Made-up measurements: tests ``(cell, what, reachable, n, exceed, censored[, below])``
    (``below``: runs with eps below their start, default ``n``), cells ``(cell, slope_ratio_lo,
    burn_ratio_lo)``; a cell is ``(loss, p_small)``."""
    t = pd.DataFrame([{"loss": c[0], "p_small": c[1], "what": w, "reachable": r, "n": n,
                       "exceed": e, "censored": z, "below_start": rest[0] if rest else n}
                      for c, w, r, n, e, z, *rest in tests])
    c = pd.DataFrame([{"loss": k[0], "p_small": k[1], "slope_ratio_lo": s, "burn_ratio_lo": b}
                      for k, s, b in cells])
    return {"tests": t, "cells": c}


A, B = ("logistic", 0.5), ("huber", 0.25)
N = 40  # 0 of 40: Wilson 95% upper 0.0876 <= 0.1; 1 of 40: upper 0.129


@pytest.mark.parametrize("tests, cells, verdict", [
    ([(A, "eps", True, N, 0, 0), (A, "burn-in", True, N, 0, 0)], [(A, 1.5, 1.2)], HOLDS),
    ([(A, "eps", True, N, 0, 0), (A, "burn-in", True, N, 0, 0)], [(A, 2.5, 1.2)], CAVEAT),
    ([(A, "eps", True, N, 0, 0), (A, "burn-in", True, N, 0, 0)], [(A, 1.5, 9.0)], CAVEAT),
    ([(A, "eps", True, N, 0, 0)], [(A, np.nan, np.nan)], HOLDS),       # looseness not measured
    ([(A, "eps", True, N, 1, 0)], [(A, 1.5, 1.2)], INCONCLUSIVE),      # 1/40: not certified
    ([(A, "eps", True, N, 0, 1)], [(A, 1.5, 1.2)], INCONCLUSIVE),      # a censored run
    ([(A, "eps", True, N, 12, 0)], [(A, 1.5, 1.2)], NOT_SUPPORTED),    # 12/40: lower 0.18
    ([(A, "eps", True, N, 0, 0), (A, "burn-in", True, N, 12, 0)], [(A, 9, 9)], NOT_SUPPORTED),
    ([(A, "eps", False, N, 30, 0), (A, "burn-in", True, N, 0, 0)], [(A, 3, 3)], INCONCLUSIVE),
    ([(A, "eps", False, N, 30, 0), (A, "eps", True, N, 0, 0)], [(A, 3, 3)], CAVEAT),
    # an eps of the grid not reached (below floor_mult x floor): at best a caveat, never a failure
    ([(A, "eps", False, N, 40, 0), (A, "eps", True, N, 0, 0)], [(A, 1.5, 1.2)], CAVEAT),
    # every reachable eps above every start (T_hat = 0): nothing tested
    ([(A, "eps", True, N, 0, 0, 0), (A, "burn-in", True, N, 0, 0)], [(A, 3, 3)], INCONCLUSIVE),
    ([(A, "eps", True, N, 0, 0, 0), (A, "eps", True, N, 0, 0, 1)], [(A, 3, 3)], CAVEAT),
    # the weakest cell decides
    ([(A, "eps", True, N, 0, 0), (B, "eps", True, N, 12, 0)], [(A, 3, 3), (B, 3, 3)],
     NOT_SUPPORTED),
    ([(A, "eps", True, N, 0, 0), (B, "eps", True, N, 1, 0)], [(A, 3, 3), (B, 3, 3)],
     INCONCLUSIVE),
])
def test_decide(tests, cells, verdict):
    dec = c2t.decide(_meas(tests, cells), {"margins": MARGINS})
    assert dec.verdict == verdict
    assert set(dec.numbers["cells"]) == {c2t._cell_name(*k) for k, _, _ in cells}


def test_decide_numbers_and_the_wilson_edges():
    lo12, _ = wilson_interval(12, N, 0.95)
    _, hi0 = wilson_interval(0, N, 0.95)
    _, hi1 = wilson_interval(1, N, 0.95)
    assert lo12 > 0.1 and hi0 <= 0.1 < hi1  # the made-up counts sit where the table says
    meas = _meas([(A, "eps", True, N, 0, 0), (A, "eps", True, N, 12, 0),
                  (A, "burn-in", True, N, 1, 0)], [(A, 3.0, 1.0)])
    nb = c2t.decide(meas, {"margins": MARGINS}).numbers["cells"]["logistic p=0.5"]
    assert (nb["violated"], nb["undetermined"], nb["certified"], nb["eps_tests"],
            nb["eps_tests_below_start"], nb["eps_not_reached"]) == (1, 1, 1, 2, 2, 0)
    assert nb["worst_lo"] == pytest.approx(lo12) and nb["loose"]
    # at a tolerance above 12/40's upper end nothing is violated any more
    _, hi12 = wilson_interval(12, N, 0.95)
    looser = c2t.decide(meas, {"margins": dict(MARGINS, tol=float(hi12))})
    assert looser.verdict == CAVEAT


# ------------------------------------------------------------------------------ config errors

def _params(**changes):
    cfg = get("C2T").config("smoke").values
    return {"params": dict(cfg["params"], **changes), "margins": cfg["margins"]}


@pytest.mark.parametrize("changes, match", [
    ({"losses": ["squared"]}, "params.losses must be among"),
    ({"seeds": 5, "blocks": 2}, "multiple of params.blocks"),
    ({"tail": 41}, "params.tail"),
    ({"trace_seeds": 9}, "params.trace_seeds"),
    ({"alpha0": [0.1, 0.1]}, "params.alpha0 must be distinct"),
    ({"p_small": [0.005]}, "leaves an empty cluster"),
    ({"eps_lo_mult": 4.0}, "params.eps_lo_mult"),
])
def test_config_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        c2t.units(_params(**changes))


@pytest.mark.parametrize("line, match", [
    ("alpha0 = [0.05, 0.3]", "alpha0"),
    ("p_small = [0.6]", "p_small"),
    ("eps_hi_frac = 1.5", "eps_hi_frac"),
])
def test_out_of_range_config_values_are_rejected(tmp_path, line, match):
    from mixlinreg.config import find

    text = find("C2T", "studies").read_text()
    key = line.split(" = ")[0]
    lines = [ln for ln in text.splitlines() if not ln.startswith(key + " ")]
    out = "\n".join(lines).replace("[params]\n", f"[params]\n{line}\n", 1)
    path = tmp_path / "C2T.toml"
    path.write_text(out)
    with pytest.raises(ValueError, match=match):
        get("C2T").config("paper", path)


# ------------------------------------------------------------------------------ smoke record

def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("C2T", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.paper == "IFCA" and r.kind == "claim"
    assert r.claim and "Appendix D" in r.location and r.summary and r.scope
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 4
    rec = json.loads((tmp_path / "C2T_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    eps = pd.read_csv(tmp_path / "C2T_smoke.csv")
    runs = pd.read_csv(tmp_path / "C2T_smoke_runs.csv")
    traces = pd.read_csv(tmp_path / "C2T_smoke_traces.csv")
    params = get("C2T").config("smoke").values
    p = params["params"]
    n_runs = len(p["p_small"]) * len(p["losses"]) * p["seeds"] * len(p["alpha0"]) * 2
    assert len(runs) == n_runs and len(eps) == n_runs * p["n_eps"]
    # unreached eps are recorded as such, never as a number; reached ones as integers <= t_run
    assert eps.loc[~eps["reached"], "t_hat"].isna().all()
    reached = eps[eps["reached"]]
    assert (reached["t_hat"] == reached["t_hat"].round()).all()
    assert (reached["t_hat"] <= reached["t_run"]).all()
    # T(eps) is Corollary 2's closed form
    np.testing.assert_allclose(eps["t_bound"], 8 * eps["L"] / (eps["p"] * eps["lam"])
                               * np.log(2 * eps["delta"] / eps["eps"]), rtol=1e-12)
    # every run went its whole length: ceil(run_mult x the largest bound of its cell)
    for (loss, ps), g in eps.groupby(["loss", "p_small"]):
        rc = runs[(runs["loss"] == loss) & (runs["p_small"] == ps)]
        want = c2t.run_length(g["t_bound"], rc["t_prime"].iloc[0], p["run_mult"], p["max_iters"])
        assert (g["t_run"] == want).all() and (rc["t_run"] == want).all()
        assert (g["t_check"] == np.ceil(g["t_bound"] - 1e-9)).all() and g["checked"].all()
    # the traces give the stored first passage, burn-in and what follows each bound
    for (loss, ps, seed, a, kind), tr in traces.groupby(["loss", "p_small", "seed", "alpha0",
                                                          "kind"]):
        e = tr.sort_values("t")["err"].to_numpy()
        sel = eps[(eps["loss"] == loss) & (eps["p_small"] == ps) & (eps["seed"] == seed)
                  & (eps["alpha0"] == a) & (eps["kind"] == kind)].sort_values("eps_index")
        hits = c2t.first_hit(e[:, None], sel["eps"].to_numpy())[0]
        assert list(np.where(hits >= 0, hits, np.nan)) == pytest.approx(
            list(sel["t_hat"]), nan_ok=True)
        for row in sel.itertuples():
            after = e[int(row.t_check):]
            assert row.at_T == (after[0] <= row.eps)
            assert row.stays == bool((after <= row.eps).all())
            assert row.worst_after == pytest.approx(after.max() / row.eps, rel=1e-12)
        run = runs[(runs["loss"] == loss) & (runs["p_small"] == ps) & (runs["seed"] == seed)
                   & (runs["alpha0"] == a) & (runs["kind"] == kind)].iloc[0]
        assert e[0] == pytest.approx(run["start"]) and len(e) == run["t_run"] + 1
        hb = c2t.first_hit(e[:, None], [run["quarter"]])[0, 0]
        assert (hb if hb >= 0 else np.nan) == pytest.approx(run["burn_in"], nan_ok=True)
        assert run["burn_stays"] == bool((e[int(run["burn_t_check"]):] <= run["quarter"]).all())
    # the written rows reproduce the analysis
    table = pd.concat([eps, runs, traces], ignore_index=True)
    v = c2t.analyze(table, params, _rng)
    assert v.verdict == r.verdict and v.summary == r.summary and v.scope == r.scope
    tests = pd.read_csv(tmp_path / "C2T_smoke_tests.csv")
    assert tests["exceed"].tolist() == v.tables["_tests.csv"]["exceed"].tolist()
    # Verdict.cells: the reachable tests, the hard ones by the registered rule, in the record
    reach = tests[tests["reachable"]]
    assert v.cells["total"] == len(reach) > 0 and v.cells["hard"] == int(reach["hard"].sum())
    assert rec["cells"] == v.cells and "hard_floor_mult = 10" in v.cells["rule"]
    for t in reach.itertuples():
        floor = runs.loc[(runs["loss"] == t.loss) & (runs["p_small"] == t.p_small),
                         "floor_cal"].iloc[0]
        assert t.hard == c2t._hard(t.eps, floor, t.stay_ratio_max, t.censored, p)
    assert 0 < v.cells["hard"] < v.cells["total"]  # both kinds in the smoke run
    # every sensitivity line is decide() at the neighbouring value (floor_mult: re-measured)
    mg = params["margins"]
    meas = c2t.measure(table, params, _rng)
    for what, key in (("tolerance tol", "tol"), ("Wilson confidence", "confidence"),
                      ("looseness factor", "loose_factor"),
                      ("reachable eps floor_mult", "floor_mult")):
        (line,) = [s for s in v.sensitivity if s.startswith(what)]
        for val in sorted(set(mg[key + "_neighbours"]) | {mg[key]}):
            prm = c2t._with(params, **{key: val})
            m = c2t.measure(table, prm, _rng) if key == "floor_mult" else meas
            assert f"{val:g} -> {c2t.decide(m, prm).verdict}" in line
    # a run whose error leaves eps after T(eps) counts against the bound ...
    bad = table.copy()
    sel = (bad["part"] == "eps") & (bad["loss"] == "huber")
    bad.loc[sel, "stays"] = False
    dec = c2t.decide(c2t.measure(bad, params, _rng), params)
    assert dec.verdict == NOT_SUPPORTED
    assert dec.numbers["cells"]["huber p=0.5"]["violated"] > 0
    # ... and leaves the test undecided (censored) when the run stopped before T(eps)
    bad.loc[sel, "checked"] = False
    dec = c2t.decide(c2t.measure(bad, params, _rng), params)
    assert dec.numbers["cells"]["huber p=0.5"]["verdict"] == INCONCLUSIVE
    # the control (step 0.01/L, the bounds of 1/L): the rule fails it
    assert rec["control"]["params"]["step_mult"] == 0.01
    assert rec["control"]["verdict"] == NOT_SUPPORTED
    again = run_study("C2T", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict
