"""Studies FPTAB1 and FPSQ (the FPFC abstract's Table 1 and its squared-loss analogue): the pure
``decide`` on made-up measurements at and around each threshold, the sensitivity lines read
against ``decide`` at the neighbours, the smoke records complete, and bad configs refused before
anything is computed."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.stats import Fit, wilson_interval
from mixlinreg.theory.studies import fpsq, fptab1, get, run_study
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS

EPS = 2.0**-30
OTHERS = ["CFL", "LOCAL", "FPFC-l1", "IFCA", "Per-FedAvg", "FedAvg"]


def _params(**margins):
    mg = {"rate_target": 0.5, "rate_floor": 0.25, "ari_margin": 0.0, "acc_margin": 0.0,
          "pair_share": 0.75}
    mg.update(margins)
    for k in list(fptab1.MARGINS):
        mg.setdefault(f"{k}_neighbours", [mg[k] / 2])
    return {"margins": mg}


def _fit(lo, hi):
    return Fit((lo + hi) / 2, lo, hi, 10)


def _cond(exact=(10, 10), d_ari=(0.2, 0.4), d_num=(1.0, 2.0), d_acc=(0.01, 0.02),
          best=(0.01, 0.03), pairs_ok=21):
    """Made-up measurements of one condition: FPFC ahead of every method by ``best``, and
    ``pairs_ok`` of the paper's 21 ordered pairs confirmed (the others undecided)."""
    order = ["FPFC"] + OTHERS
    pairs = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            pairs[(a, b)] = _fit(0.05, 0.06) if len(pairs) < pairs_ok else _fit(-0.01, 0.01)
    bests = {o: _fit(*best) for o in OTHERS}
    for o in OTHERS:
        pairs[("FPFC", o)] = bests[o]
    return {"exact": exact, "d_ari": _fit(*d_ari), "d_num": _fit(*d_num),
            "d_acc": _fit(*d_acc), "best": bests, "pairs": pairs}


def _part(meas, params, part, cond="c"):
    return fptab1.decide(meas, params).numbers["conditions"][cond][part]


def test_registered_and_ordered():
    assert get("FPTAB1").decide is fptab1.decide and get("FPSQ").decide is fptab1.decide
    assert get("FPTAB1").paper == get("FPSQ").paper == "FPFC"
    assert (get("FPTAB1").order, get("FPSQ").order) == (300, 310)


def test_a_exact_recovery_rate_at_and_around_its_thresholds():
    lo, hi = wilson_interval(9, 10)
    meas = {"c": _cond(exact=(9, 10))}
    assert _part(meas, _params(rate_target=float(lo)), "a") == HOLDS  # exactly at: holds
    assert _part(meas, _params(rate_target=float(lo) + EPS), "a") == INCONCLUSIVE
    lo0, hi0 = wilson_interval(0, 10)
    meas0 = {"c": _cond(exact=(0, 10))}
    assert _part(meas0, _params(rate_floor=float(hi0)), "a") == INCONCLUSIVE  # not below
    assert _part(meas0, _params(rate_floor=float(hi0) + EPS), "a") == NOT_SUPPORTED


def test_b_l1_worse_at_and_around_its_margins():
    p = _params(ari_margin=0.25, acc_margin=0.0)
    assert _part({"c": _cond(d_ari=(0.25 + EPS, 0.5))}, p, "b") == HOLDS
    assert _part({"c": _cond(d_ari=(0.25, 0.5))}, p, "b") == INCONCLUSIVE  # lo at the margin
    assert _part({"c": _cond(d_ari=(0.0, 0.25))}, p, "b") == NOT_SUPPORTED  # hi at the margin
    assert _part({"c": _cond(d_acc=(-0.02, -EPS))}, p, "b") == NOT_SUPPORTED
    assert _part({"c": _cond(d_acc=(0.0, 0.01))}, p, "b") == INCONCLUSIVE
    # worse clustering and accuracy, but not by over-splitting: a caveat
    under = _cond(d_ari=(0.3, 0.5), d_num=(-1.0, 0.0))
    assert _part({"c": under}, p, "b") == CAVEAT
    assert fptab1.decide({"c": under}, p).numbers["conditions"]["c"]["oversplit"] is False


def test_c_ordering_at_and_around_its_thresholds():
    p = _params(acc_margin=0.01, pair_share=0.75)
    assert _part({"c": _cond(best=(0.01 + EPS, 0.03))}, p, "c") == HOLDS
    assert _part({"c": _cond(best=(0.01, 0.03))}, p, "c") == INCONCLUSIVE  # lo at the margin
    meas = _cond(best=(0.02, 0.03))
    meas["best"]["LOCAL"] = _fit(-0.03, -0.01 - EPS)  # LOCAL ahead of FPFC beyond the margin
    d = fptab1.decide({"c": meas}, p).numbers["conditions"]["c"]
    assert d["c"] == NOT_SUPPORTED and d["beaten_by"] == ["LOCAL"]
    meas["best"]["LOCAL"] = _fit(-0.03, -0.01)  # at the margin: not beaten, not beating
    assert _part({"c": meas}, p, "c") == INCONCLUSIVE
    # 15 of 21 pairs confirmed (share 0.714 < 0.75): a caveat; 16 (0.762): holds
    p0 = _params(acc_margin=0.0, pair_share=0.75)
    assert _part({"c": _cond(pairs_ok=15)}, p0, "c") == CAVEAT
    assert _part({"c": _cond(pairs_ok=16)}, p0, "c") == HOLDS


def test_verdict_is_the_weakest_and_scope_says_where_conditions_differ():
    p = _params()
    good, bad = _cond(), _cond(exact=(0, 20))
    d = fptab1.decide({"model": bad, "shared": good}, p)
    assert d.verdict == NOT_SUPPORTED
    per = d.numbers["conditions"]
    assert per["shared"]["verdict"] == HOLDS and per["model"]["verdict"] == NOT_SUPPORTED
    assert fptab1.scope_line(d) == "not supported for model; holds for shared"
    assert fptab1.scope_line(fptab1.decide({"model": good, "shared": good}, p)) == ""


def test_sensitivity_lines_read_decide_at_the_neighbours():
    meas = {"c": _cond(exact=(9, 10))}
    lo = float(wilson_interval(9, 10)[0])
    p = _params(rate_target=0.5)
    p["margins"]["rate_target_neighbours"] = [lo, lo + 0.01]
    lines = fptab1.sensitivity(meas, p)
    assert len(lines) == len(fptab1.MARGINS)
    (line,) = [s for s in lines if s.startswith(fptab1.MARGINS["rate_target"] + " (chosen ")]
    expected = "; ".join(f"{v:g} -> {fptab1.decide(meas, fptab1._at(p, 'rate_target', v)).verdict}"
                         for v in sorted({0.5, lo, lo + 0.01}))
    assert line.endswith(expected)
    assert f"{lo + 0.01:g} -> {INCONCLUSIVE}" in line and f"0.5 -> {HOLDS}" in line


def test_measure_pairs_seeds_and_counts_exact_recoveries():
    rows = []
    for seed in range(4):
        for method, acc, num, ari in (("FPFC", 0.9, 4, 1.0), ("FPFC-l1", 0.8, 6, 0.5),
                                      ("LOCAL", 0.85, np.nan, np.nan)):
            if method == "FPFC" and seed == 3:
                num, ari = 5, 0.9
            rows.append({"seed": seed, "cond": "x", "method": method, "acc": acc + 0.01 * seed,
                         "num": num, "ari": ari})
    params = {"params": {"L": 4, "n_boot": 200, "methods": ["LOCAL", "FPFC-l1", "FPFC"]},
              "reference": {"methods": ["FPFC", "LOCAL", "FPFC-l1"]}}
    ms = fptab1.measure(pd.DataFrame(rows), params, lambda k: np.random.default_rng(0))["x"]
    assert ms["exact"] == (3, 4)
    f = ms["d_acc"]  # a constant difference: its interval is the point
    assert (f.est, f.lo, f.hi, f.n) == pytest.approx((0.1, 0.1, 0.1, 4), abs=1e-12)
    assert set(ms["pairs"]) == {("FPFC", "LOCAL"), ("FPFC", "FPFC-l1"), ("LOCAL", "FPFC-l1")}
    assert ms["best"]["LOCAL"].est == pytest.approx(0.05)


@pytest.mark.parametrize("sid, score", [("FPTAB1", "acc"), ("FPSQ", "err")])
def test_smoke_record_complete(sid, score, tmp_path):
    r = run_study(sid, preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS and r.paper == "FPFC" and r.summary and r.claim
    assert "Table 1" in r.location
    for suffix in (".json", ".png", ".csv", "_table1.csv"):
        assert (tmp_path / f"{sid}_smoke{suffix}").exists(), suffix
    table = pd.read_csv(tmp_path / f"{sid}_smoke.csv")
    assert {"seed", "choice", "method", score, "num", "ari", "seconds"} <= set(table.columns)
    params = get(sid).config("smoke").values["params"]
    n_cond = len(params.get("cluster_choices", ["squared"]))
    assert len(table) == params["seeds"] * n_cond * len(fptab1.METHODS)
    clus = table["method"].isin(fptab1.CLUSTERING)
    assert table.loc[clus, ["num", "ari"]].notna().all().all()
    assert table.loc[~clus, ["num", "ari"]].isna().all().all()
    assert np.isfinite(table[score]).all()
    t1 = pd.read_csv(tmp_path / f"{sid}_smoke_table1.csv")
    assert len(t1) == n_cond * len(fptab1.METHODS)
    assert set(r.numbers["verdict"]) - {""} <= set(VERDICTS)
    assert sum(r.numbers["row"].str.startswith("(")) == 3 * n_cond
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == len(fptab1.MARGINS)


def _bad(sid, section, **changes):
    params = copy.deepcopy(get(sid).config("smoke").values)
    params[section].update(changes)
    return params


@pytest.mark.parametrize("sid, section, change, match", [
    ("FPTAB1", "params", dict(methods=["LOCAL", "FPFC", "FPFC-l1", "SVM"]), "params.methods"),
    ("FPTAB1", "params", dict(methods=["LOCAL", "FPFC"]), "must include"),
    ("FPTAB1", "params", dict(methods=["FPFC", "FPFC", "FPFC-l1"]), "distinct"),
    ("FPTAB1", "params", dict(cluster_choices=["model", "random"]), "cluster_choices"),
    ("FPTAB1", "params", dict(L=20), "params.L"),
    ("FPTAB1", "params", dict(xi=0.6), "params.xi"),
    ("FPTAB1", "params", dict(rho=0.3), "params.rho"),
    ("FPTAB1", "reference", dict(acc=[1.0, 2.0]), "reference.acc"),
    ("FPTAB1", "margins", dict(rate_floor=0.9), "rate_floor"),
    ("FPSQ", "params", dict(m=10), "multiple of params.L"),
    ("FPSQ", "params", dict(methods=["FPFC-l1"]), "must include"),
])
def test_bad_config_refused_naming_the_parameter(sid, section, change, match):
    study = get(sid)
    with pytest.raises(ValueError, match=match):
        study.units(_bad(sid, section, **change))


@pytest.mark.parametrize("old, new, match", [
    ("seeds = 10 ", "seeds = 1 ", "params.seeds"),
    ("\nlr = 0.02", "\nlr = 0.0", "params.lr"),
    ('cluster_choices = ["model", "shared"]', "cluster_choices = []", "cluster_choices"),
])
def test_bad_values_refused_by_the_loader(old, new, match, tmp_path):
    src = Path(fptab1.__file__).parents[2] / "configs" / "studies" / "FPTAB1.toml"
    text = src.read_text()
    assert old in text
    path = tmp_path / "FPTAB1.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=match):
        get("FPTAB1").config("paper", path)


def test_fpsq_units_and_fptab1_units_are_named_by_seed_and_choice():
    p = get("FPTAB1").config("smoke").values
    assert [n for n, _ in fptab1.units(p)] == ["seed00_model", "seed00_shared", "seed01_model",
                                               "seed01_shared"]
    q = get("FPSQ").config("smoke").values
    assert [n for n, _ in fpsq.units(q)] == ["seed00", "seed01"]
