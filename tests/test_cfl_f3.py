"""Study CFLF3 (mixlinreg/theory/studies/cflf3.py): the CFL paper's permuted-labels experiment
(Figure 3) on 8 x 8 digits. Its pure ``decide`` on made-up measurements at, just inside and just
outside each threshold; the sensitivity lines against ``decide`` at the neighbours; the smoke
preset's record; bad config values refused naming the parameter.

The made-up thresholds are binary fractions so that "exactly at" is exact in floating point.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.baselines import cosine_similarities
from mixlinreg.stats import Fit, wilson_interval
from mixlinreg.theory import VERDICTS, run_study
from mixlinreg.theory.studies import cflf3, get
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, run, unit_rng

ROOT = Path(__file__).resolve().parents[1]
EPS = 2.0**-30

MARGINS = {"stall_se": 1.0, "ratio_threshold": 2.0, "ceiling_frac": 0.25,
           "rate_target": 0.625, "rate_floor": 0.5, "near_zero_z": 2.0, "all_share": 0.875}
# the made-up design: n_test = 64 (stall threshold 1 x 0.5 / 8 = 0.0625), 4 clusters with a mean
# ceiling 0.5 (ceiling tolerance 0.25 x (1 - 1/2) = 0.125), groups of 5 in dim = 64 (near-zero
# band [-1/4 - 2/8, 2/8] = [-0.5, 0.25])
STALL, TOL, BAND = 0.0625, 0.125, (-0.5, 0.25)


def _params(**over):
    mg = dict(MARGINS, **over)
    mg.update({f"{k}_neighbours": [v / 2, v * 1.5] for k, v in MARGINS.items()})
    mg["ratio_threshold_neighbours"] = [1.5, 2.5]
    return {"params": {}, "margins": mg}


def _m(**over):
    """Measurements on which every rule holds and no caveat applies."""
    m = {"seeds": 10, "converged": 10, "stall": Fit(0.001, 0.0005, 0.002, 10),
         "n_test": 64, "k": 4, "group": 5, "dim": 64, "ceiling": Fit(0.5, 0.45, 0.55, 10),
         "ratio": Fit(3.0, 2.5, 3.5, 10), "min_client_ratio": np.full(10, 3.0),
         "ceiling_ratio": Fit(1.0, 0.95, 1.05, 10), "recovered": (10, 10), "gap": (10, 10),
         "final_within": Fit(0.0, -0.125, 0.125, 10)}
    m.update(over)
    return m


def _v(m=None, **margins):
    return cflf3.decide(_m() if m is None else m, _params(**margins)).verdict


def test_registered_and_located():
    study = get("CFLF3")
    assert study.decide is cflf3.decide and study.paper == "CFL" and study.order == 240
    assert "short" in study.location and "Figure 3" in study.location


def test_base_measurements_hold():
    assert _v() == HOLDS


def test_design_thresholds():
    assert cflf3.stall_threshold(1.0, 64) == STALL
    assert cflf3.stall_threshold(2.0, 359) == pytest.approx(1 / np.sqrt(359))
    assert cflf3.ceiling_tolerance(0.25, 4, 0.5) == TOL
    assert cflf3.ceiling_tolerance(1.0, 4, 0.25) == 0.0  # ceiling 1/k: the alternative is 1
    assert np.isnan(cflf3.ceiling_tolerance(0.5, 4, None))
    assert cflf3.near_zero_band(2.0, 5, 64) == BAND
    assert cflf3.update_dim() == 65 * 9
    # the band's lower edge is below the floor of a mean pairwise cosine of g unit vectors
    u = np.random.default_rng(0).normal(size=(5, 40))
    u -= u.mean(axis=0)  # summing to zero
    S = cosine_similarities(u)
    sims = S[np.triu_indices(5, 1)]
    assert sims.mean() >= -1 / 4 - 1e-12 and sims.mean() > cflf3.near_zero_band(2.0, 5, 64)[0]


def test_decide_reports_the_design_thresholds():
    d = cflf3.decide(_m(), _params())
    assert d.numbers["stall threshold"] == STALL and d.numbers["ceiling tol"] == TOL
    assert d.numbers["near zero band"] == BAND
    # they follow the design values: more test images, a tighter stall threshold
    assert cflf3.decide(_m(n_test=256), _params()).numbers["stall threshold"] == 0.03125


def test_stall_rule_at_its_margin():
    pm = STALL
    assert _v(_m(stall=Fit(0.01, 0.0, pm, 10))) == HOLDS
    assert _v(_m(stall=Fit(0.01, 0.0, pm + EPS, 10))) == INCONCLUSIVE
    assert _v(_m(stall=Fit(0.1, pm, 0.2, 10))) == INCONCLUSIVE  # lo at the margin: not above
    assert _v(_m(stall=Fit(0.1, pm + EPS, 0.2, 10))) == NOT_SUPPORTED
    assert _v(_m(stall=None)) == INCONCLUSIVE  # fewer than 2 seeds split


def test_doubling_rule_at_its_threshold():
    rt = MARGINS["ratio_threshold"]
    assert _v(_m(ratio=Fit(2.5, rt + EPS, 3.0, 10))) == HOLDS
    assert _v(_m(ratio=Fit(2.5, rt, 3.0, 10))) == INCONCLUSIVE  # "more than": strict
    assert _v(_m(ratio=Fit(1.5, 1.0, rt + EPS, 10))) == INCONCLUSIVE
    assert _v(_m(ratio=Fit(1.5, 1.0, rt, 10))) == NOT_SUPPORTED
    # a run that did not finish: (c) and (d) undecided whatever they measure
    assert _v(_m(converged=9)) == INCONCLUSIVE
    assert _v(_m(converged=9, ratio=Fit(1.5, 1.0, rt, 10))) == INCONCLUSIVE


@pytest.mark.parametrize("key", ["recovered", "gap"])
def test_rate_rules_at_target_and_floor(key):
    counts = (7, 10)
    lo, hi = (float(v) for v in wilson_interval(*counts))
    m = _m(**{key: counts})
    assert _v(m, rate_target=lo) == HOLDS
    assert _v(m, rate_target=lo + EPS) == INCONCLUSIVE
    assert _v(m, rate_target=0.9375, rate_floor=hi) == INCONCLUSIVE
    assert _v(m, rate_target=0.9375, rate_floor=hi + EPS) == NOT_SUPPORTED
    d = cflf3.decide(m, _params(rate_target=lo))
    assert d.numbers[f"{'recovery' if key == 'recovered' else 'gap'} lo"] == lo


def test_ceiling_caveat_at_its_tolerance():
    tol = TOL
    assert _v(_m(ceiling_ratio=Fit(1.0, 1 - tol, 1 + tol, 10))) == HOLDS
    assert _v(_m(ceiling_ratio=Fit(1.0, 1 - tol - EPS, 1.0, 10))) == CAVEAT
    assert _v(_m(ceiling_ratio=Fit(1.0, 1.0, 1 + tol + EPS, 10))) == CAVEAT
    assert _v(_m(ceiling_ratio=None)) == CAVEAT
    assert _v(_m(ceiling=None)) == CAVEAT  # no ceiling: no tolerance


def test_all_clients_caveat_at_its_share():
    rt = MARGINS["ratio_threshold"]
    mcr = np.array([3.0] * 6 + [rt, np.nan])  # a ratio exactly 2 did not "more than" double
    hi = float(wilson_interval(6, 8)[1])
    d = cflf3.decide(_m(min_client_ratio=mcr), _params(all_share=hi))
    assert d.verdict == HOLDS and d.numbers["all doubled"] == (6, 8)
    assert _v(_m(min_client_ratio=mcr), all_share=hi + EPS) == CAVEAT
    assert _v(_m(min_client_ratio=np.full(3, rt + EPS))) == HOLDS


def test_near_zero_caveat_at_its_band():
    lo, hi = BAND
    assert _v(_m(final_within=Fit(-0.2, lo, hi, 10))) == HOLDS
    assert _v(_m(final_within=Fit(-0.2, lo - EPS, 0.0, 10))) == CAVEAT
    assert _v(_m(final_within=Fit(0.2, 0.0, hi + EPS, 10))) == CAVEAT
    assert _v(_m(final_within=None)) == CAVEAT
    # a caveat never lifts a weaker verdict
    assert _v(_m(final_within=None, ratio=Fit(1.5, 1.0, 1.5, 10))) == NOT_SUPPORTED


def test_sensitivity_lines_are_decide_at_the_neighbours():
    m = _m(ratio=Fit(2.25, 2.125, 2.375, 10), recovered=(8, 10))
    params = _params()
    lines = cflf3.sensitivity(m, params)
    assert len(lines) == len(cflf3.MARGINS)
    for (key, words), line in zip(cflf3.MARGINS.items(), lines):
        mg = params["margins"]
        values = sorted(set(mg[f"{key}_neighbours"]) | {mg[key]})
        expected = "; ".join(
            f"{v:g} -> {cflf3.decide(m, _params(**{key: v})).verdict}" for v in values)
        assert line == f"{words} (chosen {mg[key]:g}): {expected}"
    # the doubling line moves: 2.5 is above the interval
    assert "2.5 -> not supported" in lines[1]


def test_cells_count_the_judged_checks():
    c = cflf3.count_cells(cflf3.decide(_m(), _params()).numbers)
    assert c["total"] == 7 and c["hard"] == 7 and "strictly inside" in c["rule"]
    # a band reaching past both ends of a cosine's range is not hard; nor is a ceiling tolerance
    # of at least 1 (its lower edge at or below 0, where a ratio of accuracies cannot go)
    n = dict(cflf3.decide(_m(), _params()).numbers)
    n["near zero band"] = (-1.5, 1.5)
    assert cflf3.count_cells(n)["hard"] == 6
    n["ceiling tol"] = 1.0
    assert cflf3.count_cells(n)["hard"] == 5


def test_reference_run_starts_at_the_split_model():
    p = {"clients": 4, "clusters": 2, "test_share": 0.2, "lr": 0.25, "local_steps": 2,
         "l2": 0.01}
    data = cflf3.make_clients(p, np.random.default_rng(3))
    W = np.zeros((65, 10))
    assert np.array_equal(cflf3.continue_fl(W, data, p, 0), W)
    W1 = cflf3.continue_fl(W, data, p, 1)
    expected = W + cflf3.client_updates(W, data["X"], data["y"], p).mean(axis=0).reshape(W.shape)
    assert np.allclose(W1, expected)
    # the accuracy of one model for every client: its clusters' mean (equal clusters)
    hits = np.argmax(data["X_test"] @ W1, axis=1)[None, :] == data["y_test"]
    assert cflf3.model_accuracy(W1, data) == pytest.approx(hits.mean())


def test_ceiling_and_label_share():
    perms = np.array([[0, 1, 2], [0, 2, 1], [1, 2, 0]])
    digits = np.array([0, 1, 2, 0])
    # digit 0: labels 0, 0, 1 -> 2/3; digit 1: 1, 2, 2 -> 2/3; digit 2: 2, 1, 0 -> 1/3
    assert cflf3.single_model_ceiling(perms, digits) == pytest.approx((2 + 2 + 1 + 2) / 12)
    assert cflf3.single_model_ceiling(np.array([[0, 1], [1, 0]]), [0, 1]) == 0.5
    share = cflf3.label_share(perms, digits)
    assert share.shape == (3,) and np.all((1 / 3 <= share) & (share <= 1))


def test_smoke_record_is_complete(tmp_path):
    r = run_study("CFLF3", preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS and r.paper == "CFL" and r.summary and r.claim
    assert len(r.numbers) > 0 and len(r.numbers) <= 16
    for suffix in (".png", ".json"):
        assert (tmp_path / f"CFLF3_smoke{suffix}").exists()
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == len(cflf3.MARGINS)
    # the summary quotes the record's numbers
    est = r.numbers.set_index("quantity")["estimate [95% CI]"]
    for q in ("final / federated accuracy (ratio of means)",
              "plateau / (ceiling x final accuracy)",
              "seeds recovering the 4 clusters exactly (ARI = 1)",
              "gain of mean client accuracy when plain FL continues 100 rounds past the first "
              "split (reference run, no split)",
              "within-cluster similarity after the final clustering"):
        assert est[q] in r.summary, q
    # the sensitivity lines are decide's at the neighbours on the stored rows
    table = pd.read_csv(next(tmp_path.glob("CFLF3_smoke.csv*")))
    params = get("CFLF3").config("smoke").values
    assert set(table["kind"]) == {"seed", "cluster", "split", "pair", "curve"}
    seeds = table[table["kind"] == "seed"]
    # the reference run's gain is its accuracy minus the one at the first split, in every seed
    assert np.allclose(seeds["ref_gain"], seeds["ref_acc"] - seeds["plateau_acc"])
    assert r.cells == cflf3.count_cells(cflf3.decide(
        cflf3.measure(table, params["params"],
                      lambda key: unit_rng(0, "CFLF3", "analyze_" + key)), params).numbers)
    assert r.version == 2
    m = cflf3.measure(table, params["params"],
                      lambda key: unit_rng(0, "CFLF3", "analyze_" + key))
    assert sens == [f"Sensitivity: {line}" for line in cflf3.sensitivity(m, params)]
    assert r.verdict == cflf3.decide(m, params).verdict
    splits = table[table["kind"] == "split"]
    assert len(splits) >= 2 and (splits["reproduced"] == 1).all()


@pytest.mark.parametrize("old, new, match", [
    ("clients = 20 ", "clients = 21 ", "params.clients must be a multiple of params.clusters"),
    ("test_share = 0.2 ", "test_share = 1.5 ", r"test_share.*\(0, 1\).*1\.5"),
    ("seeds = 2\n", "seeds = 1\n", r"params.seeds.*\[2, inf\).*got 1"),  # the smoke preset's
    ("clusters = 4 ", "clusters = 11 ", r"clusters.*\[2, 10\].*11"),
    ("plateau_window = 20 ", "plateau_window = 5000 ", "params.plateau_window"),
    ("continue_rounds = 100 ", "continue_rounds = 0 ", r"continue_rounds.*\[1, inf\).*got 0"),
    ("stall_se = 1.0 ", "stall_se = 0.0 ", r"stall_se"),
    ("rate_target_neighbours = [0.5, 0.8]", "rate_target_neighbours = []",
     "rate_target_neighbours must be a non-empty list"),
])
def test_bad_config_is_refused_naming_the_parameter(tmp_path, old, new, match):
    src = (ROOT / "mixlinreg" / "configs" / "studies" / "CFLF3.toml").read_text()
    assert old in src
    bad = tmp_path / "CFLF3.toml"
    bad.write_text(src.replace(old, new))
    with pytest.raises(ValueError, match=match):
        run(get("CFLF3"), preset="smoke", out=tmp_path, store=None, config_path=bad)
