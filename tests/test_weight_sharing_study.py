"""Study WS, version 2 (weight sharing, Sections 4.3/4.1 and 6.3 of IFCA): the model's pieces
against direct computation (the control's data differ as intended and its defaults leave the
study's data unchanged), a unit's rows against direct ``ifca`` calls from the same starts, the
measurement against direct counts, the pure ``decide`` and ``overall`` on made-up measurements
(every verdict reachable), the hard cells, config errors, and a complete smoke record whose written
tables reproduce its analysis and sensitivity lines."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest

import mixlinreg
from mixlinreg.inits import init_bernoulli, tie_shared
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


def test_version_2_config_and_its_control():
    cfg = get("WS").config("paper")
    assert cfg.extras["version"] == 2
    p = cfg.values["params"]
    # the defaults of the control's params: the study's data
    assert p["shared_sep"] == 0.0 and p["part2_clusters"] == "k_true"
    assert p["inits"] == ["bernoulli", "pooled"] and p["starts"][0] == 1 and len(p["starts"]) > 1
    assert p["sep"] == p["sep2"] == [0.5, 1.0, 2.0] and p["extra"] == [1, 2]
    ctl = cfg.extras["control"]["params"]
    assert ctl["shared_sep"] > 0 and ctl["part2_clusters"] == "k_fit"


def test_the_module_examples_run():
    result = doctest.testmod(ws, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0


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


def test_the_controls_shared_sep_moves_only_the_shared_coordinates_and_zero_is_the_default():
    m, n, d, d_own, k, sep, sigma = 8, 6, 9, 3, 2, 1.0, 0.7
    base = ws.draw_problem(m, n, d, d_own, k, sep, sigma, np.random.default_rng(4))
    zero = ws.draw_problem(m, n, d, d_own, k, sep, sigma, np.random.default_rng(4), shared_sep=0.0)
    for a, b in zip(base, zero):  # the default: the study's data, draw for draw
        np.testing.assert_array_equal(a, b)
    X, y, theta, labels = ws.draw_problem(m, n, d, d_own, k, sep, sigma, np.random.default_rng(4),
                                          shared_sep=4.0)
    own, sh = ws.own_coords(d, d_own)
    np.testing.assert_array_equal(X, base[0])
    np.testing.assert_array_equal(labels, base[3])
    np.testing.assert_array_equal(theta[:, own], base[2][:, own])  # the own parts unchanged
    # the shared parts now differ: at distance 4 from each other, centred on the common draw
    np.testing.assert_allclose(np.linalg.norm(theta[0, sh] - theta[1, sh]), 4.0, rtol=1e-12)
    np.testing.assert_allclose(theta[:, sh].mean(axis=0), base[2][0, sh], atol=1e-12)
    # the same noise: y - X theta* is the study's
    res = y - np.einsum("ind,id->in", X, theta[labels])
    res0 = base[1] - np.einsum("ind,id->in", base[0], base[2][labels])
    np.testing.assert_allclose(res, res0, atol=1e-12)


def test_cluster_labels_are_contiguous_and_near_equal():
    for m, k in ((40, 2), (40, 3), (12, 4), (7, 3)):
        lab = ws.cluster_labels(m, k)
        sizes = np.bincount(lab)
        assert sizes.size == k and sizes.max() - sizes.min() <= 1 and (np.diff(lab) >= 0).all()
    np.testing.assert_array_equal(ws.cluster_labels(40, 2), np.repeat([0, 1], 20))


def test_the_starts_of_each_kind_are_the_direct_draws_tied_on_the_shared_coordinates():
    p = _params()["params"]
    d, d_own = 7, 3
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 9, d)), rng.normal(size=(5, 9))
    own, sh = ws.own_coords(d, d_own)
    bern = ws.make_starts("bernoulli", 4, 3, X, y, d_own, p, np.random.default_rng(5))
    np.testing.assert_array_equal(bern, tie_shared(init_bernoulli(4, 3, d, rng=np.random.default_rng(5)),
                                                   sh))
    assert set(np.unique(bern[:, :, own])) <= {0.0, 1.0}
    pooled = ws.make_starts("pooled", 4, 3, X, y, d_own, p, np.random.default_rng(5))
    fit = np.linalg.lstsq(X.reshape(-1, d), y.reshape(-1), rcond=None)[0]
    np.testing.assert_allclose(ws.pooled_fit(X, y), fit, rtol=1e-12)
    raw = fit + p["pooled_noise"] * np.random.default_rng(5).normal(size=(4, 3, d))
    np.testing.assert_allclose(pooled, tie_shared(raw, sh), rtol=1e-12)
    gauss = ws.make_starts("gaussian", 4, 3, X, y, d_own, p, np.random.default_rng(5))
    np.testing.assert_allclose(gauss, tie_shared(p["init_scale"] * np.random.default_rng(5).normal(
        size=(4, 3, d)), sh), rtol=1e-12)
    for init in (bern, pooled, gauss):
        np.testing.assert_array_equal(init[:, :, sh], np.broadcast_to(init[:, :1, sh], init[:, :, sh].shape))
    with pytest.raises(ValueError, match="unknown start kind"):
        ws.make_starts("zeros", 1, 2, X, y, d_own, p, rng)


def test_best_of_first_keeps_the_lowest_loss_among_the_first_s():
    loss = np.array([3.0, 1.0, 0.5, 2.0])
    div = np.array([False, False, True, False])
    assert [ws.best_of_first(loss, div, s) for s in (1, 2, 3, 4)] == [0, 1, 1, 1]


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


@pytest.mark.parametrize("shared_sep", [0.0, 3.0])
def test_a_part1_unit_is_the_direct_ifca_runs_from_the_same_starts(shared_sep):
    params = _params(shared_sep=shared_sep)
    p = params["params"]
    spec = {"part": 1, "sep": 2.0, "n": 30}
    rows = ws.compute(spec, params, np.random.default_rng(7), None)
    assert len(rows) == 2 * p["trials"] * len(p["inits"]) * len(p["starts"])
    assert set(rows["arm"]) == set(ws.ARMS) and set(rows["init"]) == set(p["inits"])
    gen = np.random.default_rng(7).spawn(p["trials"])[1]
    gdata, gstart = ws._streams(gen)
    X, y, theta, labels = ws.draw_problem(p["m"], 30, p["d"], p["d_own"], p["k"], 2.0, p["sigma"],
                                          gdata, shared_sep)
    sh = ws.own_coords(p["d"], p["d_own"])[1]
    if shared_sep:
        assert np.linalg.norm(theta[0, sh] - theta[1, sh]) == pytest.approx(shared_sep)
    runs = max(p["starts"])
    for i, kind in enumerate(p["inits"]):
        init = ws.make_starts(kind, runs, p["k"], X, y, p["d_own"], p, gstart[kind])
        for arm, shared in (("shared", sh), ("plain", None)):  # the same init for both arms
            res = mixlinreg.ifca(X, y, init, p["lr"], n_iter=p["max_iter"], early_stop=True,
                                 tol=p["tol"], n_threads=1, shared=shared)
            for s in p["starts"]:
                b = int(np.argmin(np.where(res.diverged[:s], np.inf, res.loss[:s])))
                row = rows[(rows["trial"] == 1) & (rows["arm"] == arm) & (rows["init"] == kind)
                           & (rows["starts"] == s)].iloc[0]
                # one call runs every kind's starts (independent runs): the same as this call's
                np.testing.assert_allclose(row["err"], dist_matched(res.theta[b], theta),
                                           rtol=1e-9)
                assert row["ari"] == adjusted_rand(labels, res.labels[b])
                assert row["iters"] == res.n_iter[b]
                if arm == "shared":  # one value on the shared coordinates in all k models
                    np.testing.assert_array_equal(res.theta[b][:, sh], np.broadcast_to(
                        res.theta[b][0, sh], (p["k"], sh.size)))


@pytest.mark.parametrize("clusters", ["k_true", "k_fit"])
def test_a_part2_unit_counts_the_models_that_machines_pick(clusters):
    params = _params(part2_clusters=clusters)
    p = params["params"]
    rows = ws.compute({"part": 2, "sep": 2.0, "k_fit": 3}, params, np.random.default_rng(3), None)
    assert len(rows) == 2 * p["trials2"] * len(p["inits"])
    k_data = 3 if clusters == "k_fit" else 2
    assert (rows["k_data"] == k_data).all() and (rows["k_true"] == 2).all()
    assert (rows["nonempty"] >= 1).all() and (rows["nonempty"] <= 3).all()
    for _, r in rows.iterrows():
        assert r["outcome"] == ws.outcome(r["nonempty"], 2)  # judged against k_true always
    assert [ws.outcome(v, 2) for v in (1, 2, 3)] == [ws.MERGED, ws.EMPTY, ws.SPLIT]
    # the data: k_data true clusters (the control's k_fit, else k_true), the study's draws
    gen = np.random.default_rng(3).spawn(p["trials2"])[0]
    gdata, gstart = ws._streams(gen)
    X, y, theta, labels = ws.draw_problem(p["m"], p["n2"], p["d"], p["d_own"], k_data, 2.0,
                                          p["sigma"], gdata)
    again = ws._streams(np.random.default_rng(3).spawn(p["trials2"])[0])[1]
    np.testing.assert_array_equal(ws.all_starts(p["inits"], 1, 3, X, y, p["d_own"], p, again),
                                  np.concatenate([ws.make_starts(kind, 1, 3, X, y, p["d_own"], p,
                                                                 gstart[kind])
                                                  for kind in p["inits"]]))
    gstart = ws._streams(np.random.default_rng(3).spawn(p["trials2"])[0])[1]
    init = ws.make_starts("pooled", 1, 3, X, y, p["d_own"], p, gstart["pooled"])
    res = mixlinreg.ifca(X, y, init, p["lr"], n_iter=p["max_iter"], early_stop=True,
                         tol=p["tol"], n_threads=1, shared=ws.own_coords(p["d"], p["d_own"])[1])
    row = rows[(rows["trial"] == 0) & (rows["init"] == "pooled") & (rows["arm"] == "shared")].iloc[0]
    assert row["nonempty"] == np.unique(res.labels[0]).size
    assert row["ari"] == adjusted_rand(labels, res.labels[0])


def test_measure_counts_and_differences_against_direct_computation():
    rng = np.random.default_rng(0)
    rows = []
    for s in (1, 5):
        for t in range(30):
            for arm in ws.ARMS:
                rec = bool(rng.random() < (0.8 if arm == "shared" else 0.5))
                rows.append({"part": 1, "init": "pooled", "sep": 1.0, "n": 20, "starts": s,
                             "trial": t, "arm": arm, "ari": float(rec), "recovered": rec,
                             "err": rng.random() + (arm == "plain"), "err_shared": rng.random(),
                             "err_own": rng.random(), "iters": t, "nonempty": 1 + (t % 2),
                             "converged": True})
    for t in range(10):
        for arm in ws.ARMS:
            used = 2 if t < (7 if arm == "shared" else 2) else (3 if t % 2 else 1)
            rows.append({"part": 2, "init": "bernoulli", "sep": 0.5, "k_true": 2, "k_data": 2,
                         "k_fit": 3, "trial": t, "arm": arm, "nonempty": used, "ari": 1.0,
                         "outcome": ws.outcome(used, 2)})
    table = pd.DataFrame(rows)
    meas = ws.measure(table, _params(), lambda key: np.random.default_rng(1))
    assert meas["cells"]["starts"].tolist() == [1, 5]
    c = meas["cells"].iloc[1]
    t1 = table[(table["part"] == 1) & (table["starts"] == 5)]
    a = t1[t1["arm"] == "shared"].set_index("trial")
    b = t1[t1["arm"] == "plain"].set_index("trial")
    ra, rb = a["recovered"].astype(bool), b["recovered"].astype(bool)
    assert (c["n11"], c["n10"], c["n01"], c["n00"]) == ((ra & rb).sum(), (ra & ~rb).sum(),
                                                         (~ra & rb).sum(), (~ra & ~rb).sum())
    np.testing.assert_allclose(c["diff"], (a["err"] - b["err"]).mean(), rtol=1e-12)
    assert c["diff_lo"] <= c["diff"] <= c["diff_hi"] < 0
    assert c["one_model_plain"] == (b["nonempty"] == 1).mean()
    both = ra & rb
    np.testing.assert_allclose(c["shared_part_ratio"], a.loc[both, "err_shared"].mean()
                               / b.loc[both, "err_shared"].mean(), rtol=1e-12)
    kf = meas["kfit"].set_index("arm")
    assert (kf.loc["shared", "empty"], kf.loc["plain", "empty"]) == (7, 2)
    assert (kf.loc["shared", "split"], kf.loc["shared", "merged"]) == (2, 1)


# ------------------------------------------------------------------------------ decide

def _meas(cells, kfit, rec_plain=0.0):
    """Made-up measurements: cells ``(n11, n10, n01, n00, diff_lo, diff_hi)``, k_fit rows
    ``(k_fit, empty, runs)`` with sharing (and plain rows with no empty run)."""
    c = pd.DataFrame([{"init": "pooled", "sep": 1.0 + i, "n": 20, "starts": 1, "n11": a,
                       "n10": b, "n01": e, "n00": f, "diff_lo": lo, "diff_hi": hi,
                       "rec_plain": rec_plain}
                      for i, (a, b, e, f, lo, hi) in enumerate(cells)])
    k = pd.DataFrame([{"init": "pooled", "sep": 1.0 + i, "k_fit": kf, "k_data": 2, "arm": arm,
                       "runs": r, "empty": e if arm == "shared" else 0,
                       "split": 0, "merged": r - e if arm == "shared" else r}
                      for i, (kf, e, r) in enumerate(kfit) for arm in ws.ARMS])
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
    ([GOOD, GOOD, FEW], [EMPTY_OK], CAVEAT, HOLDS, CAVEAT),
    ([GOOD, FLAT], [EMPTY_OK], INCONCLUSIVE, HOLDS, INCONCLUSIVE),
    ([GOOD, GOOD, HIGH], [EMPTY_OK], INCONCLUSIVE, HOLDS, INCONCLUSIVE),
    ([GOOD, HIGH, LOSE], [EMPTY_OK], NOT_SUPPORTED, HOLDS, NOT_SUPPORTED),
    ([GOOD, HIGH], [EMPTY_OK], INCONCLUSIVE, HOLDS, INCONCLUSIVE),
    ([FLAT, FEW], [EMPTY_OK], INCONCLUSIVE, HOLDS, INCONCLUSIVE),
    ([GOOD], [EMPTY_BAD, EMPTY_BAD], HOLDS, NOT_SUPPORTED, NOT_SUPPORTED),
    ([GOOD], [EMPTY_OK, EMPTY_BAD], HOLDS, INCONCLUSIVE, INCONCLUSIVE),
    ([GOOD], [EMPTY_OK, EMPTY_OK, EMPTY_MID], HOLDS, CAVEAT, CAVEAT),
    ([GOOD], [EMPTY_MID], HOLDS, INCONCLUSIVE, INCONCLUSIVE),
    ([GOOD], [EMPTY_MID, EMPTY_BAD, EMPTY_BAD], HOLDS, NOT_SUPPORTED, NOT_SUPPORTED),
])
def test_decide(cells, kfit, v1, v2, verdict):
    dec = ws.decide(_meas(cells, kfit), _params("paper"))
    assert (dec.numbers["part1"], dec.numbers["part2"], dec.verdict) == (v1, v2, verdict)


@pytest.mark.parametrize("statuses, want", [
    ([], INCONCLUSIVE), (["g"], HOLDS), (["g"] * 3, HOLDS), (["g", "g", "u"], CAVEAT),
    (["g", "u"], INCONCLUSIVE), (["g", "g", "g", "b"], INCONCLUSIVE), (["b", "b", "g"], NOT_SUPPORTED),
    (["b", "u"], INCONCLUSIVE), (["b", "b", "u", "u"], INCONCLUSIVE), (["b", "b", "b", "u", "g"], NOT_SUPPORTED),
    (["u", "u"], INCONCLUSIVE)])
def test_overall_is_the_registered_function_of_the_cells(statuses, want):
    assert ws.overall(statuses, "g", "b") == want


def test_decide_at_its_thresholds():
    mg = _params("paper")
    conf = mg["margins"]["confidence"]
    # the recovery margin: FEW's Newcombe lower bound decides "better" on each side of it
    lo = newcombe_paired(*FEW[:4], conf)[1]
    for margin, want in ((-lo + 1e-9, HOLDS), (-lo - 1e-9, CAVEAT)):
        p = {"params": mg["params"], "margins": dict(mg["margins"], rec_margin=margin)}
        assert ws.decide(_meas([GOOD, GOOD, FEW], [EMPTY_OK]), p).numbers["part1"] == want
    # the empty fraction: Wilson lower bound against empty_hold, upper against empty_refute
    wl, wh = (float(x) for x in wilson_interval(6, 10, conf))
    for hold, refute, want in ((wl, 0.1, HOLDS), (wl + 1e-9, 0.1, INCONCLUSIVE),
                               (0.99, wh + 1e-9, NOT_SUPPORTED), (0.99, wh, INCONCLUSIVE)):
        p = {"params": mg["params"], "margins": dict(mg["margins"], empty_hold=hold,
                                                     empty_refute=refute)}
        assert ws.decide(_meas([GOOD], [(3, 6, 10)]), p).numbers["part2"] == want


def test_hard_cells_follow_the_registered_rule():
    params = _params("paper")
    # GOOD is better at every neighbouring margin; NEAR's status changes with rec_margin (its
    # Newcombe lower bound is between -0.2 and -0.1); the empty fractions 190/200, 6/10, 10/200
    near = (57, 0, 3, 0, -2.0, -1.0)
    meas = _meas([GOOD, GOOD, near], [EMPTY_OK, (4, 6, 10), EMPTY_BAD])
    lo = newcombe_paired(*near[:4], 0.95)[1]
    assert -0.2 < lo < -0.1
    dec = ws.decide(meas, params)
    hard1, hard2, cells = ws.hard_cells(lambda conf: meas, dec, params)
    assert hard1.tolist() == [False, False, True]
    assert hard2.tolist() == [False, True, False]  # 0.95 is outside [0.1, 0.9], 0.05 too
    assert cells["hard"] == 2 and cells["total"] == 6 and "plain arm recovers" in cells["rule"]
    # a plain arm that recovers in half its trials makes every part-1 cell hard
    meas = _meas([GOOD, GOOD, FEW], [EMPTY_OK], rec_plain=0.5)
    hard1, _, cells = ws.hard_cells(lambda conf: meas, ws.decide(meas, params), params)
    assert hard1.all() and cells["hard"] == 3 and cells["total"] == 4


# ------------------------------------------------------------------------------ config, smoke

@pytest.mark.parametrize("changes, match", [
    ({"d_own": 8}, "d_own must be < params.d"),
    ({"m": 13}, "multiple of params.k"),
    ({"d_own": 1}, "must be >= params.k"),
    ({"sep": [2.0, 2.0]}, "params.sep must be distinct"),
    ({"sep2": [1.0, 1.0]}, "params.sep2 must be distinct"),
    ({"extra": [1, 1]}, "params.extra must be distinct"),
    ({"starts": [1, 1]}, "params.starts must be distinct"),
    ({"inits": ["bernoulli", "zeros"]}, "params.inits must be some of"),
    ({"part2_clusters": "k_fit", "extra": [2]}, "part2_clusters = 'k_fit'"),
    ({"shared_sep": 1.0, "d_own": 7}, "shared_sep > 0"),
])
def test_config_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        ws.units(_params(**changes))


def test_smoke_record_and_its_tables_reproduce_the_analysis(tmp_path):
    r = run_study("WS", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert r.verdict in VERDICTS and r.paper == "IFCA" and r.kind == "claim" and r.summary
    assert r.scope.startswith("sharing lowers the error") and "extra models empty out" in r.scope
    assert r.version == 2 and r.control["verdict"] in VERDICTS
    rec = json.loads((tmp_path / "WS_smoke.json").read_text())
    assert rec["verdict"] == r.verdict and rec["scope"] == r.scope
    table = pd.read_csv(tmp_path / "WS_smoke.csv")
    params = get("WS").config("smoke").values
    p = params["params"]
    n1 = 2 * p["trials"] * len(p["inits"]) * len(p["starts"]) * len(p["sep"]) * len(p["n"])
    n2 = 2 * p["trials2"] * len(p["inits"]) * len(p["sep2"]) * len(p["extra"])
    assert len(table) == n1 + n2
    # the control's part 2 has k_fit true clusters, its part 1 the study's shapes
    ctl = pd.read_csv(tmp_path / "WS_smoke_control.csv")
    assert len(ctl) == n1 + n2
    c2 = ctl[ctl["part"] == 2]
    assert (c2["k_data"] == c2["k_fit"]).all() and (table.loc[table["part"] == 2, "k_data"] == 2).all()
    from mixlinreg.theory.study import unit_rng

    rng = lambda key: unit_rng(0, "WS", "analyze_" + key)  # noqa: E731  (run's analyze streams)
    v = ws.analyze(table, params, rng)
    assert v.verdict == r.rule_verdict and v.summary == r.summary and v.scope == r.scope
    assert rec["cells"] == v.cells and v.cells["total"] == len(p["inits"]) * (
        len(p["starts"]) * len(p["sep"]) * len(p["n"]) + len(p["sep2"]) * len(p["extra"]))
    cells = pd.read_csv(tmp_path / "WS_smoke_cells.csv")
    np.testing.assert_allclose(cells["diff"], v.tables["_cells.csv"]["diff"], rtol=1e-9)
    assert cells["status"].tolist() == v.tables["_cells.csv"]["status"].tolist()
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
