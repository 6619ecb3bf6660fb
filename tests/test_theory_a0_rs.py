"""Studies A0 and RS as records (mixlinreg/theory/studies/{a0,rs}.py): configs, smoke runs,
sensitivity lines, and RS asking for the Figure 2(a) runs by config."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from mixlinreg.theory import INCONCLUSIVE, NOT_SUPPORTED, VERDICTS, run_study
from mixlinreg.theory.initialization import A0_DIRECTIONS
from mixlinreg.theory.studies import get

ROOT = Path(__file__).resolve().parents[1]


def _sensitivity(r, what):
    lines = [c for c in r.caveats if c.startswith(f"Sensitivity: {what} (chosen ")]
    assert len(lines) == 1, (what, r.caveats)
    return lines[0]


def _check_record(r, tmp_path, study_id):
    assert r.verdict in VERDICTS
    for suffix in (".csv", ".png", ".json"):
        assert (tmp_path / f"{study_id}_smoke{suffix}").exists()
    json.loads((tmp_path / f"{study_id}_smoke.json").read_text())
    assert "long version" in r.location and "NeurIPS version" in r.location
    assert 1 <= len(r.numbers) <= 16
    return pd.read_csv(tmp_path / f"{study_id}_smoke.csv")


# ------------------------------------------------------------------------------ A0


def test_a0_config_presets():
    study = get("A0")
    paper, quick, smoke = (study.config(p).values for p in ("paper", "quick", "smoke"))
    assert (paper["params"]["trials"], quick["params"]["trials"], smoke["params"]["trials"]) == \
        (1000, 300, 3)
    mg = paper["margins"]
    assert (mg["margin"], mg["target"], mg["floor"], mg["confidence"]) == (0.1, 0.9, 0.5, 0.95)
    assert mg["margin_neighbours"] == [0.05, 0.2]
    # the margins are declared once, in the config: no preset moves them
    assert quick["margins"] == mg and smoke["margins"] == mg


def test_a0_config_errors(tmp_path):
    from mixlinreg.theory.study import run

    src = (ROOT / "mixlinreg" / "configs" / "studies" / "A0.toml").read_text()
    bad = tmp_path / "A0.toml"
    bad.write_text(src.replace("sigma = [0.25, 0.7]", "sigma = [0.25]"))
    with pytest.raises(ValueError, match="same length"):
        run(get("A0"), preset="smoke", out=tmp_path, store=None, config_path=bad)
    bad.write_text(src.replace('directions = ["random", "adversarial", "mixed"]',
                               'directions = ["random", "sideways"]'))
    with pytest.raises(ValueError, match="sideways"):
        run(get("A0"), preset="smoke", out=tmp_path, store=None, config_path=bad)
    bad.write_text(src.replace('absolute_setting = "easy"', 'absolute_setting = "medium"'))
    with pytest.raises(ValueError, match="absolute_setting"):
        run(get("A0"), preset="smoke", out=tmp_path, store=None, config_path=bad)


def test_a0_smoke(tmp_path):
    r = run_study("A0", preset="smoke", out=tmp_path, store=None)
    p = get("A0").config("smoke").values["params"]
    runs = _check_record(r, tmp_path, "A0")
    assert {"setting", "k", "trial", "resample", "direction", "alpha0", "success", "misclass0",
            "t_hit", "dist_matched", "oracle_gd"} <= set(runs.columns)
    n_runs = len(p["settings"]) * len(p["ks"]) * p["trials"] * 2 * len(p["directions"]) * \
        len(p["alphas"])
    assert len(runs) == n_runs
    cells = pd.read_csv(tmp_path / "A0_smoke_cells.csv")
    assert {"setting", "k", "resample", "direction", "alpha0", "trials", "successes", "p", "lo",
            "hi", "n_both", "n_ref_only", "n_this_only", "n_neither", "diff", "diff_lo",
            "diff_hi", "misclass0", "dist_med"} <= set(cells.columns)
    assert set(cells["direction"]) == set(A0_DIRECTIONS)
    assert set(cells["k"]) == {2, 4}
    assert set(cells["setting"]) == set(p["settings"])
    assert len(cells) == n_runs // p["trials"]
    assert (cells["trials"] == 3).all()
    trials = pd.read_csv(tmp_path / "A0_smoke_trials.csv")
    assert {"oracle_gd_over_sigma", "oracle_all_over_sigma"} <= set(trials.columns)
    assert (tmp_path / "A0_smoke_summary.csv").exists()
    # 3 trials cannot give a difference interval within 0.1 nor a Wilson lower bound of 0.9
    assert r.verdict in (INCONCLUSIVE, NOT_SUPPORTED)
    assert "Assumption 1" in r.location and "Delta/4" in r.location
    line = _sensitivity(r, "margin for 'materially worse'")
    assert re.search(r"0\.05 -> .*; 0\.1 -> .*; 0\.2 -> ", line)
    for what in ("absolute rule's target in the easy setting",
                 "absolute rule's floor in the easy setting", "confidence of the intervals"):
        _sensitivity(r, what)


# ------------------------------------------------------------------------------ RS


def test_rs_config_presets():
    study = get("RS")
    paper, quick, smoke = (study.config(p).values for p in ("paper", "quick", "smoke"))
    assert paper["params"]["figure2_preset"] == quick["params"]["figure2_preset"] == "paper"
    assert smoke["params"]["figure2_preset"] == "smoke"
    assert paper["params"]["figure2_store"] == "figures/stores"
    mg = paper["margins"]
    assert (mg["target"], mg["p1_substantial"], mg["min_trials"]) == (0.9, 0.25, 10)
    assert mg["p1_substantial_neighbours"] == [0.15, 0.35]
    assert quick["margins"] == mg and smoke["margins"] == mg


def test_rs_never_reads_figures_by_path():
    """RS asks for the Figure 2 (a) and (b) runs by config; no library code names a store folder."""
    for path in (ROOT / "mixlinreg" / "theory").rglob("*.py"):
        text = path.read_text()
        assert "PANEL_A_STORE" not in text, path
        assert not re.search(r"fig2[abcd]-paper-[0-9a-f]{6}", text), path


@pytest.mark.parametrize("study_id, panel", [("RS", "fig2a"), ("F2a", "fig2a"), ("F2d", "fig2d")])
def test_a_study_without_its_figure2_runs_writes_no_record_and_says_how_to_make_them(
        tmp_path, monkeypatch, study_id, panel):
    """RS and F2a-F2d treat a missing store alike: no verdict, no record, the command named."""
    from mixlinreg.theory.study import MissingInput

    monkeypatch.chdir(tmp_path)  # figure2_store is relative to the working directory
    command = f"mixlinreg reproduce {panel} --preset smoke --out figures/stores"
    with pytest.raises(MissingInput) as err:
        run_study(study_id, preset="smoke", out=tmp_path / "out", store=None)
    assert command in str(err.value)
    assert not (tmp_path / "out" / f"{study_id}_smoke.json").exists()  # not a verdict
    assert not (tmp_path / "figures").exists()  # reading never makes a store
    # a store folder with no finished unit reads the same
    from mixlinreg.harness import ResultStore, load_config

    ResultStore(Path("figures/stores"), load_config(panel, "smoke"))  # made, nothing run
    with pytest.raises(MissingInput) as err:
        run_study(study_id, preset="smoke", out=tmp_path / "out2", store=None)
    assert "no finished unit" in str(err.value) and command in str(err.value)
    assert not (tmp_path / "out2" / f"{study_id}_smoke.json").exists()


def test_rs_smoke(tmp_path, monkeypatch):
    from mixlinreg.harness import ResultStore, load_config, run_experiment

    monkeypatch.chdir(tmp_path)
    run_experiment(load_config("fig2a", "smoke"), Path("figures/stores"), progress=False)
    # panel (b)'s store missing: no record, the command that makes it named
    from mixlinreg.theory.study import MissingInput

    with pytest.raises(MissingInput, match="mixlinreg reproduce fig2b --preset smoke --out "
                                           "figures/stores"):
        run_study("RS", preset="smoke", out=tmp_path / "no_b", store=None)
    assert not (tmp_path / "no_b" / "RS_smoke.json").exists()
    run_experiment(load_config("fig2b", "smoke"), Path("figures/stores"), progress=False)
    r = run_study("RS", preset="smoke", out=tmp_path, store=None)
    table = _check_record(r, tmp_path, "RS")
    assert {"panel", "R", "sigma", "trial", "init", "ok", "ok_text"} <= set(table.columns)
    assert set(table["panel"]) == {"a", "b"}
    assert sorted(table[table["panel"] == "a"]["R"].unique()) == [0.25, 1.0]  # fig2a smoke grid
    assert (table[table["panel"] == "a"].groupby(["R", "sigma", "trial"]).size() == 2).all()
    b = table[table["panel"] == "b"]
    assert sorted(b["R"].unique()) == [0.5, 1.0] and sorted(b["sigma"].unique()) == [0.0, 0.1]
    assert (b.groupby(["R", "sigma", "trial"]).size() == 2).all()  # fig2b smoke: 2 inits
    assert sorted(b["trial"].unique()) == [0, 1]
    # the rows are the store's runs, reduced: some step succeeds iff the store says so
    from mixlinreg.metrics import success_authors

    rows = ResultStore.find(Path("figures/stores"), load_config("fig2b", "smoke")).table()
    rows["ok"] = success_authors(rows["dist_nearest"].to_numpy(float),
                                 rows["sigma"].to_numpy(float), plus=0.001)
    want = rows.groupby(["R", "sigma", "trial", "init"])["ok"].any()
    got = b.set_index(["R", "sigma", "trial", "init"])["ok"].astype(bool)
    assert got.sort_index().equals(want.sort_index())
    cells = pd.read_csv(tmp_path / "RS_smoke_cells.csv")
    assert {"evidence", "holds", "contradicts", "r_need", "pN_hi"} <= set(cells.columns)
    assert (tmp_path / "RS_smoke_curves.csv").exists()
    assert r.verdict == INCONCLUSIVE  # 2 trials per cell: context only
    assert "smoke preset (config hash" in r.summary
    assert "Panel (a): the fig2a store" in r.summary and "Panel (b): the fig2b store" in r.summary
    assert "Figure 3" in r.location and "Figure 2" in r.location
    line = _sensitivity(r, "substantial single-init success")
    assert re.search(r"0\.15 -> .*; 0\.25 -> .*; 0\.35 -> ", line)
    for what in ("restart success target", "trials for an evidence cell",
                 "confidence of the intervals"):
        _sensitivity(r, what)


def _a0_runs(n=400, worse=(260, 30, 15, 95)):
    """Synthetic A0 runs at two alpha0: every case succeeds always except the hard, resampled,
    mixed one, whose (smallest, largest) pairs are ``worse = (both, only largest, only smallest,
    neither)``."""
    rows = []
    both, ref_only, this_only, _ = worse
    for setting in ("easy", "hard"):
        for resample in (True, False):
            for direction in A0_DIRECTIONS:
                hard = (setting, resample, direction) == ("hard", True, "mixed")
                for t in range(n):
                    for a in (0.01, 0.4):
                        if not hard:
                            ok = True
                        elif a == 0.4:
                            ok = t < both + ref_only
                        else:
                            ok = t < both or both + ref_only <= t < both + ref_only + this_only
                        rows.append(dict(setting=setting, k=2, trial=t, resample=resample,
                                         direction=direction, alpha0=a, success=ok,
                                         diverged=False, misclass0=0.0, t_hit=1.0,
                                         dist_matched=0.1, sigma=0.5, oracle_all=0.01,
                                         oracle_block=0.02, oracle_gd=0.05))
    return pd.DataFrame(rows)


def test_a0_sensitivity_lines_reread_the_same_runs():
    """Newcombe's interval of the hard case is about +0.037 [+0.004, +0.071]: within the chosen
    margin 0.1 and 0.2, not within 0.05, and the lines say so from the same table."""
    import numpy as np

    study = get("A0")
    params = study.config("paper").values
    params["params"]["trials"] = 400
    v = study.analyze(_a0_runs(), params, lambda name: np.random.default_rng(0))
    assert v.verdict == "holds"
    line = next(s for s in v.sensitivity if s.startswith("margin for 'materially worse'"))
    assert line.endswith("0.05 -> inconclusive; 0.1 -> holds; 0.2 -> holds")
    # a deliberately false claim: the smallest alpha0 far worse (0.73 -> 0.45) is not supported
    v = study.analyze(_a0_runs(worse=(170, 120, 10, 100)), params,
                      lambda name: np.random.default_rng(0))
    assert v.verdict == NOT_SUPPORTED


def test_rs_repeat_first_init_makes_every_restart_the_first():
    from mixlinreg.theory.restarts import reduce_runs
    from mixlinreg.theory.studies import rs
    from mixlinreg.theory.study import figure2_store

    root = Path(__file__).resolve().parents[1] / "figures" / "stores"
    store = figure2_store("fig2a", "paper", str(root))
    first_unit = sorted(store.done(warn=False))[0]
    per = reduce_runs(store.units.read(first_unit), "a",
                      float(store.exp.protocol["success_plus"]))
    out = rs.repeat_first_init(per)
    assert list(out.columns) == list(per.columns) and len(out) == len(per)
    keys = ["m", "n", "d", "k", "R", "sigma", "trial"]
    # every initialization of a trial now has the first one's outcome ...
    assert (out.groupby(keys)["ok"].nunique() == 1).all()
    first = per.sort_values(keys + ["init"]).groupby(keys).head(1).set_index(keys)["ok"]
    pd.testing.assert_series_equal(out.groupby(keys)["ok"].first(), first, check_names=False)
    # ... and the default leaves the store's independent initializations as they are
    assert get("RS").config("paper").values["params"]["repeat_first_init"] is False
    assert per.groupby(keys)["ok"].nunique().max() == 2  # the data do mix outcomes


def test_rs_repeat_first_init_is_validated(tmp_path):
    src = Path(__file__).resolve().parents[1] / "mixlinreg" / "configs" / "studies" / "RS.toml"
    bad = tmp_path / "RS.toml"
    bad.write_text(src.read_text().replace("n_boot = 2000", "n_boot = 2000\nrepeat_first_init = 1"))
    with pytest.raises((TypeError, ValueError), match="params.repeat_first_init must be a bool"):
        get("RS").config("paper", bad)
