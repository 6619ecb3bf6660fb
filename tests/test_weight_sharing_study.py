"""Study WS (weight sharing, Sections 4.3/4.1 and 6.3 of IFCA): the model's pieces against direct
computation, a unit's rows against direct ``ifca`` calls, the measurement against direct counts,
the pure ``decide`` on made-up measurements (every verdict reachable), config errors, and a
complete smoke record whose written tables reproduce its analysis and sensitivity lines."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest

import mixlinreg
from mixlinreg.metrics import adjusted_rand, dist_matched
from mixlinreg.stats import newcombe_paired, wilson_interval
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS
from mixlinreg.theory.studies import get, run_study, ws


def _params(preset="smoke", **changes):
    p = get("WS").config(preset).values
    return {"params": dict(p["params"], **changes), "margins": dict(p["margins"])}


def test_the_study_is_registered_with_both_versions_locations():
    study = get("WS")
    assert study.decide is ws.decide and study.paper == "IFCA" and study.order == 100
    for sec in ("4.3", "4.1", "6.3", "NeurIPS"):
        assert sec in study.location
    assert "remaining clusters are empty" in study.claim


def test_the_module_examples_run():
    result = doctest.testmod(ws, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


# ------------------------------------------------------------------------------ the model

@pytest.mark.parametrize("k, d_own", [(2, 2), (3, 4)])
def test_true_models_share_the_last_coordinates_and_sit_at_distance_sep(k, d_own):
    m, n, d, sep = 6 * k, 7, 9, 1.7
    X, y, theta, labels = ws.draw_problem(m, n, d, d_own, k, sep, 0.0, np.random.default_rng(1))
    own, sh = ws.own_coords(d, d_own)
    np.testing.assert_array_equal(theta[:, sh], np.broadcast_to(theta[0, sh], (k, sh.size)))
    D = np.linalg.norm(theta[:, None, own] - theta[None, :, own], axis=2)
    np.testing.assert_allclose(D[~np.eye(k, dtype=bool)], sep, rtol=1e-12)
    assert np.bincount(labels).tolist() == [m // k] * k
    # sigma = 0: y is exactly X theta*_{label}
    np.testing.assert_allclose(y, np.einsum("ind,id->in", X, theta[labels]), rtol=1e-12)
    assert X.shape == (m, n, d) and y.shape == (m, n)


def test_tied_starts_are_the_draw_with_shared_coordinates_averaged():
    d, d_own = 7, 3
    init = ws.tied_starts(4, 3, d, d_own, 2.0, np.random.default_rng(5))
    raw = 2.0 * np.random.default_rng(5).normal(size=(4, 3, d))
    own, sh = ws.own_coords(d, d_own)
    np.testing.assert_allclose(init[:, :, own], raw[:, :, own])
    np.testing.assert_allclose(init[:, :, sh], np.broadcast_to(raw[:, :, sh].mean(axis=1,
                                                                                 keepdims=True),
                                                               (4, 3, sh.size)))


def test_matched_errors_are_the_paper_distance_and_its_parts():
    rng = np.random.default_rng(2)
    for k in (2, 3):
        star = rng.normal(size=(k, 6))
        theta = star[::-1] + 0.1 * rng.normal(size=(k, 6))  # models in the reverse order
        tot, sh, own = ws.matched_errors(theta, star, 2)
        np.testing.assert_allclose(tot, dist_matched(theta, star), rtol=1e-12)
        diff = theta[::-1] - star  # the best matching undoes the reversal
        np.testing.assert_allclose(sh, np.linalg.norm(diff[:, 2:], axis=1).mean(), rtol=1e-12)
        np.testing.assert_allclose(own, np.linalg.norm(diff[:, :2], axis=1).mean(), rtol=1e-12)


def test_a_part1_unit_is_the_direct_ifca_runs():
    params = _params()
    p = params["params"]
    spec = {"part": 1, "sep": 2.0, "n": 30}
    rows = ws.compute(spec, params, np.random.default_rng(7), None)
    assert len(rows) == 2 * p["trials"] and set(rows["arm"]) == set(ws.ARMS)
    gen = np.random.default_rng(7).spawn(p["trials"])[1]
    X, y, theta, labels = ws.draw_problem(p["m"], 30, p["d"], p["d_own"], p["k"], 2.0, p["sigma"],
                                          gen)
    init = ws.tied_starts(p["starts"], p["k"], p["d"], p["d_own"], p["init_scale"], gen)
    sh = ws.own_coords(p["d"], p["d_own"])[1]
    for arm, shared in (("shared", sh), ("plain", None)):
        res = mixlinreg.ifca(X, y, init, p["lr"], n_iter=p["max_iter"], early_stop=True,
                             tol=p["tol"], n_threads=1, shared=shared)
        b = int(np.argmin(res.loss))
        row = rows[(rows["trial"] == 1) & (rows["arm"] == arm)].iloc[0]
        np.testing.assert_allclose(row["err"], dist_matched(res.theta[b], theta), rtol=1e-12)
        assert row["ari"] == adjusted_rand(labels, res.labels[b]) and row["iters"] == res.n_iter[b]
        if arm == "shared":  # one value on the shared coordinates in all k models
            np.testing.assert_array_equal(res.theta[b][:, sh], np.broadcast_to(
                res.theta[b][0, sh], (p["k"], sh.size)))


def test_a_part2_unit_counts_the_models_that_machines_pick():
    params = _params()
    rows = ws.compute({"part": 2, "k_fit": 3}, params, np.random.default_rng(3), None)
    assert len(rows) == 2 * params["params"]["trials2"]
    assert (rows["nonempty"] >= 1).all() and (rows["nonempty"] <= 3).all()
    for _, r in rows.iterrows():
        assert r["outcome"] == ws.outcome(r["nonempty"], 2)
    assert [ws.outcome(v, 2) for v in (1, 2, 3)] == [ws.MERGED, ws.EMPTY, ws.SPLIT]


def test_measure_counts_and_differences_against_direct_computation():
    rng = np.random.default_rng(0)
    rows = []
    for t in range(30):
        for arm in ws.ARMS:
            rec = bool(rng.random() < (0.8 if arm == "shared" else 0.5))
            rows.append({"part": 1, "sep": 1.0, "n": 20, "trial": t, "arm": arm, "ari": float(rec),
                         "recovered": rec, "err": rng.random() + (arm == "plain"),
                         "err_shared": rng.random(), "err_own": rng.random(), "iters": t,
                         "nonempty": 2,
                         "converged": True})
    for t in range(10):
        for arm in ws.ARMS:
            used = 2 if t < (7 if arm == "shared" else 2) else (3 if t % 2 else 1)
            rows.append({"part": 2, "k_true": 2, "k_fit": 3, "trial": t, "arm": arm,
                         "nonempty": used, "ari": 1.0, "outcome": ws.outcome(used, 2)})
    table = pd.DataFrame(rows)
    meas = ws.measure(table, _params(), lambda key: np.random.default_rng(1))
    c = meas["cells"].iloc[0]
    a = table[(table["part"] == 1) & (table["arm"] == "shared")].set_index("trial")
    b = table[(table["part"] == 1) & (table["arm"] == "plain")].set_index("trial")
    ra, rb = a["recovered"].astype(bool), b["recovered"].astype(bool)
    assert (c["n11"], c["n10"], c["n01"], c["n00"]) == ((ra & rb).sum(), (ra & ~rb).sum(),
                                                         (~ra & rb).sum(), (~ra & ~rb).sum())
    np.testing.assert_allclose(c["diff"], (a["err"] - b["err"]).mean(), rtol=1e-12)
    assert c["diff_lo"] <= c["diff"] <= c["diff_hi"] < 0
    both = ra & rb
    np.testing.assert_allclose(c["shared_part_ratio"], a.loc[both, "err_shared"].mean()
                               / b.loc[both, "err_shared"].mean(), rtol=1e-12)
    kf = meas["kfit"].set_index("arm")
    assert (kf.loc["shared", "empty"], kf.loc["plain", "empty"]) == (7, 2)
    assert kf.loc["shared", "split"] + kf.loc["shared", "merged"] == 3


# ------------------------------------------------------------------------------ decide

def _meas(cells, kfit):
    """Made-up measurements: cells ``(n11, n10, n01, n00, diff_lo, diff_hi)``, k_fit rows
    ``(k_fit, empty, runs)`` with sharing."""
    c = pd.DataFrame([{"sep": 1.0 + i, "n": 20, "n11": a, "n10": b, "n01": e, "n00": f,
                       "diff_lo": lo, "diff_hi": hi}
                      for i, (a, b, e, f, lo, hi) in enumerate(cells)])
    k = pd.DataFrame([{"k_fit": kf, "arm": "shared", "runs": r, "empty": e}
                      for kf, e, r in kfit])
    return {"cells": c, "kfit": k}


GOOD = (50, 10, 0, 0, -2.0, -1.0)        # lower error, recovery better
SAME = (60, 0, 0, 0, -2.0, -1.0)         # lower error, recovery equal and certified
FEW = (6, 0, 0, 0, -2.0, -1.0)           # lower error, recovery equal but not certified
HIGH = (60, 0, 0, 0, 0.5, 1.0)           # higher error
LOSE = (30, 0, 30, 0, -2.0, -1.0)        # recovery certainly worse
FLAT = (60, 0, 0, 0, -0.5, 0.5)          # error interval across 0
EMPTY_OK, EMPTY_BAD, EMPTY_MID = (3, 190, 200), (3, 10, 200), (4, 6, 10)


@pytest.mark.parametrize("cells, kfit, v1, v2, verdict", [
    ([GOOD, SAME], [EMPTY_OK, EMPTY_OK], HOLDS, HOLDS, HOLDS),
    ([GOOD, FEW], [EMPTY_OK], CAVEAT, HOLDS, CAVEAT),
    ([GOOD, FLAT], [EMPTY_OK], CAVEAT, HOLDS, CAVEAT),
    ([GOOD, HIGH], [EMPTY_OK], NOT_SUPPORTED, HOLDS, NOT_SUPPORTED),
    ([GOOD, LOSE], [EMPTY_OK], NOT_SUPPORTED, HOLDS, NOT_SUPPORTED),
    ([FLAT, FEW], [EMPTY_OK], INCONCLUSIVE, HOLDS, INCONCLUSIVE),
    ([GOOD], [EMPTY_BAD, EMPTY_BAD], HOLDS, NOT_SUPPORTED, NOT_SUPPORTED),
    ([GOOD], [EMPTY_OK, EMPTY_BAD], HOLDS, CAVEAT, CAVEAT),
    ([GOOD], [EMPTY_MID], HOLDS, INCONCLUSIVE, INCONCLUSIVE),
    ([GOOD], [EMPTY_MID, EMPTY_BAD], HOLDS, NOT_SUPPORTED, NOT_SUPPORTED),
])
def test_decide(cells, kfit, v1, v2, verdict):
    dec = ws.decide(_meas(cells, kfit), _params("paper"))
    assert (dec.numbers["part1"], dec.numbers["part2"], dec.verdict) == (v1, v2, verdict)


def test_decide_at_its_thresholds():
    mg = _params("paper")
    conf = mg["margins"]["confidence"]
    # the recovery margin: FEW's Newcombe lower bound decides "better" on each side of it
    lo = newcombe_paired(*FEW[:4], conf)[1]
    for margin, want in ((-lo + 1e-9, HOLDS), (-lo - 1e-9, CAVEAT)):
        p = {"params": mg["params"], "margins": dict(mg["margins"], rec_margin=margin)}
        assert ws.decide(_meas([GOOD, FEW], [EMPTY_OK]), p).numbers["part1"] == want
    # the empty fraction: Wilson lower bound against empty_hold, upper against empty_refute
    wl, wh = (float(x) for x in wilson_interval(6, 10, conf))
    for hold, refute, want in ((wl, 0.1, HOLDS), (wl + 1e-9, 0.1, INCONCLUSIVE),
                               (0.99, wh + 1e-9, NOT_SUPPORTED), (0.99, wh, INCONCLUSIVE)):
        p = {"params": mg["params"], "margins": dict(mg["margins"], empty_hold=hold,
                                                     empty_refute=refute)}
        assert ws.decide(_meas([GOOD], [(3, 6, 10)]), p).numbers["part2"] == want


# ------------------------------------------------------------------------------ config, smoke

@pytest.mark.parametrize("changes, match", [
    ({"d_own": 8}, "d_own must be < params.d"),
    ({"m": 13}, "multiple of params.k"),
    ({"d_own": 1}, "must be >= params.k"),
    ({"sep": [2.0, 2.0]}, "params.sep must be distinct"),
    ({"extra": [1, 1]}, "params.extra must be distinct"),
])
def test_config_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        ws.units(_params(**changes))


def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("WS", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.paper == "IFCA" and r.kind == "claim" and r.summary
    assert r.scope.startswith("sharing lowers the error") and "extra models empty out" in r.scope
    rec = json.loads((tmp_path / "WS_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    table = pd.read_csv(tmp_path / "WS_smoke.csv")
    params = get("WS").config("smoke").values
    assert len(table) == 2 * (params["params"]["trials"] + params["params"]["trials2"])
    from mixlinreg.theory.study import unit_rng

    rng = lambda key: unit_rng(0, "WS", "analyze_" + key)  # noqa: E731  (run's analyze streams)
    v = ws.analyze(table, params, rng)
    assert v.verdict == r.verdict and v.summary == r.summary and v.scope == r.scope
    cells = pd.read_csv(tmp_path / "WS_smoke_cells.csv")
    np.testing.assert_allclose(cells["diff"], v.tables["_cells.csv"]["diff"], rtol=1e-9)
    # every sensitivity line is decide() at the neighbouring value
    mg = params["margins"]
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 4
    meas = ws.measure(table, params, rng)
    for key in ("rec_margin", "empty_hold", "empty_refute", "confidence"):
        (line,) = [s for s in v.sensitivity if f" {key} (chosen " in s or
                   s.startswith(f"{key} (chosen ")]
        for val in sorted(set(mg[key + "_neighbours"]) | {mg[key]}):
            m = ws.measure(table, params, rng, confidence=val) if key == "confidence" else meas
            want = ws.decide(m, {"params": params["params"],
                                 "margins": dict(mg, **{key: val})}).verdict
            assert f"{val:g} -> {want}" in line
    again = run_study("WS", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict
