"""Studies F2a-F2d (Figure 2 trends) and the reproducibility note D1 (text vs code conventions):
verdict and outcome logic on known inputs, exactness of the formulas against independent
computations, D1's note remade from its committed tables, and one smoke run each."""

import itertools

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.stats import paired_difference
from mixlinreg.theory import VERDICTS, run_study
from mixlinreg.theory import d1
from mixlinreg.theory import figure2 as f2
from mixlinreg.theory.study import (CAVEAT, DIFFER, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, NOTE,
                                     NOTE_OUTCOMES, SAME, UNDETERMINED)

ROOT = Path(__file__).resolve().parents[1]


def _counts(succ, trials, levels=(0.1, 0.25, 0.5, 0.75, 1.0), strata=(0.1, 0.2)):
    """Counts table with the same successes in every stratum."""
    rows = [dict(R=R, sigma=s, trials=trials, succ_authors=int(k))
            for s in strata for R, k in zip(levels, succ)]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- trend verdicts


def test_trend_increasing_holds():
    t = f2.trend_test(_counts([2, 6, 10, 14, 18], 20), "R", ["sigma"])
    verdict, why = f2.trend_verdict(t)
    assert verdict == HOLDS, why
    assert t.iloc[-1]["p_increase"] < 1e-6


def test_trend_decreasing_not_supported():
    # the wrong claim "success rises with R" on data where it falls must be refuted
    t = f2.trend_test(_counts([18, 14, 10, 6, 2], 20), "R", ["sigma"])
    verdict, why = f2.trend_verdict(t)
    assert verdict == NOT_SUPPORTED, why


def test_trend_flat_few_trials_inconclusive():
    t = f2.trend_test(_counts([1, 1, 1, 1, 1], 2), "R", ["sigma"])
    assert f2.trend_verdict(t)[0] == INCONCLUSIVE


def test_trend_saturated_stratum_gives_caveat():
    df = pd.concat([_counts([2, 6, 10, 14, 18], 20, strata=(0.1,)),
                    _counts([20] * 5, 20, strata=(0.4,))], ignore_index=True)
    t = f2.trend_test(df, "R", ["sigma"])
    verdict, why = f2.trend_verdict(t)
    assert verdict == CAVEAT and "sigma=0.4" in why


def test_trend_one_stratum_falling_not_supported():
    # pooled still rises (three strata up) but one stratum falls significantly
    up = _counts([0, 5, 10, 15, 20], 20, strata=(0.1, 0.2, 0.3))
    down = _counts([20, 15, 10, 5, 0], 20, strata=(0.4,))
    t = f2.trend_test(pd.concat([up, down], ignore_index=True), "R", ["sigma"])
    assert t.iloc[-1]["p_increase"] < 0.05
    verdict, why = f2.trend_verdict(t)
    assert verdict == NOT_SUPPORTED and "sigma=0.4" in why


def _brute_force_pvalues(strata):
    """P(T >= t_obs), P(T <= t_obs) by enumerating every placement of each stratum's successes
    among its trials (all placements equally likely under no trend)."""
    laws, t_obs = [], 0
    for trials, succ in strata:
        scores = np.repeat(np.arange(len(trials)), trials)  # one score per trial
        S = sum(succ)
        t_obs += int(np.dot(np.arange(len(trials)), succ))
        vals = [int(scores[list(c)].sum()) for c in itertools.combinations(range(scores.size), S)]
        laws.append(np.bincount(vals, minlength=int(scores.sum()) + 1) / len(vals))
    law = laws[0]
    for other in laws[1:]:
        law = np.convolve(law, other)
    return law[t_obs:].sum(), law[:t_obs + 1].sum()


def test_trend_pvalues_match_brute_force():
    strata = [([2, 3, 2, 3], [0, 1, 2, 2]), ([3, 3, 3], [1, 0, 2])]
    rows = [dict(x=i, s=h, trials=n, succ_authors=k) for h, (ns, ks) in enumerate(strata)
            for i, (n, k) in enumerate(zip(ns, ks))]
    t = f2.trend_test(pd.DataFrame(rows), "x", ["s"])
    up, down = _brute_force_pvalues(strata)
    # both are sums of the same exact rational probabilities: only float rounding differs
    np.testing.assert_allclose(t.iloc[-1][["p_increase", "p_decrease"]].to_numpy(float),
                               [up, down], rtol=1e-10)
    for h, (ns, ks) in enumerate(strata):
        u, d = _brute_force_pvalues([(ns, ks)])
        np.testing.assert_allclose(t.iloc[h][["p_increase", "p_decrease"]].to_numpy(float),
                                   [u, d], rtol=1e-10)


def test_trend_test_rejects_bad_counts():
    bad = pd.DataFrame(dict(R=[1, 2], trials=[3, 3], succ_authors=[4, 1]))
    with pytest.raises(ValueError, match="succ_authors"):
        f2.trend_test(bad, "R")
    with pytest.raises(ValueError, match="columns"):
        f2.trend_test(bad, "m")
    with pytest.raises(ValueError, match="alpha"):
        f2.trend_verdict(f2.trend_test(bad.assign(succ_authors=[1, 2]), "R"), alpha=1.5)


# ----------------------------------------------------------------------------- paired moves


def test_move_outcome_rules():
    from mixlinreg.theory.studies import get

    m = get("D1").config("paper")["margins"]["margin"]
    assert d1.move_outcome(pd.DataFrame({"lo": [-0.1, -0.15], "hi": [0.1, 0.05]}), m) == SAME
    # a convention that moves success at one point by more than its interval: results differ
    assert d1.move_outcome(pd.DataFrame({"lo": [-0.1, 0.2], "hi": [0.1, 0.8]}), m) == DIFFER
    assert d1.move_outcome(pd.DataFrame({"lo": [-0.5], "hi": [0.4]}), m) == UNDETERMINED
    # identical conventions on real-looking data: intervals narrow enough with many trials
    x = np.r_[np.ones(150, bool), np.zeros(150, bool)]
    r = paired_difference(x, x, confidence=0.95)
    assert d1.move_outcome(pd.DataFrame([r]), m) == SAME
    with pytest.raises(ValueError, match="margin"):
        d1.move_outcome(pd.DataFrame([r]), margin=-1)


def _moves(family, panel, sigmas, lo, hi, trials=40, first="nearest_code", second="nearest_text",
           p_second=0.5):
    """A hand-made moves table: one row per sigma, simultaneous intervals at 95% family-wise."""
    G = len(sigmas)
    rows = []
    for s, a, b in zip(sigmas, lo, hi):
        rows.append(dict(family=family, panel=panel, source="hand-made", first=first,
                         second=second, R=0.5, sigma=s, trials=trials, p_first=0.5,
                         p_second=0.0 if s == 0 else p_second, diff=(a + b) / 2, lo=a, hi=b,
                         confidence=1 - 0.05 / G, only_first=0, only_second=0,
                         moved=bool(a > 0 or b < 0)))
    return pd.DataFrame(rows)


def _seps():
    return pd.DataFrame(dict(trial=[0, 0], R=[1.0, 1.0], d=[1000, 1000],
                             theta_scale=["code", "norm"], delta=[22.4, 1.0],
                             rms_exact=[22.36, 1.0]))


def test_d1_note_decides_on_sigma_above_zero_and_reports_zero_apart():
    # the text's threshold moves every sigma = 0 point (dist <= 0 never holds) and none above
    moves = _moves("threshold", "a", [0.0, 0.0, 0.1, 0.2, 0.4], [0.7, 0.7, -0.1, -0.1, -0.1],
                   [1.0, 1.0, 0.1, 0.1, 0.1])
    outcome, numbers, summary, caveats = d1.d1_note(moves, _seps(), margin=0.2,
                                                    run_caveats=["Cross-check: x"])
    assert outcome == SAME  # decided on sigma > 0, where no point moved
    pos = numbers[numbers["sigma"].str.startswith(">")].iloc[0]
    zero = numbers[numbers["sigma"] == "0"].iloc[0]
    assert (pos["moved"], pos["grid points"], pos["outcome"]) == (0, 3, SAME)
    assert pos["sigma"] == "> 0 (0.1, 0.2, 0.4)"
    assert (zero["moved"], zero["grid points"], zero["outcome"]) == (2, 2, DIFFER)
    assert "At sigma = 0, reported apart" in summary
    assert "succeeded in 0 of their 80 trials" in summary  # the text arm at sigma = 0
    assert caveats[-1] == "Cross-check: x"
    # a move above zero decides it
    moved = _moves("theta_scale", "a", [0.1], [0.3], [0.9], first="authors_code",
                   second="authors_norm")
    outcome, numbers, summary, _ = d1.d1_note(pd.concat([moves, moved]), _seps(), margin=0.2)
    assert outcome == DIFFER and "by theta_scale (a)" in summary


def test_d1_sigma_strata_fill_panels_that_fix_sigma():
    moves = pd.concat([_moves("rule", "a", [0.0, 0.1], [-0.1, -0.1], [0.1, 0.1]),
                       _moves("rule", "c", [np.nan], [-0.5], [0.5])], ignore_index=True)
    assert d1.sigma_strata(moves).tolist() == ["0", "> 0", "unknown"]
    assert d1.sigma_strata(moves, {"c": 0.1}).tolist() == ["0", "> 0", "> 0"]
    _, numbers, summary, _ = d1.d1_note(moves, _seps(), margin=0.2)
    assert "unknown" in set(numbers["sigma"]) and "Sigma unknown" in summary


def test_d1_committed_record_is_its_tables_analysis():
    """The committed D1 record is exactly what its analysis makes of its committed tables."""
    out = ROOT / "figures" / "checks"
    r = d1.rebuild_d1(out, "paper")
    assert r.to_json() == (out / "D1_paper.json").read_text()
    assert r.kind == NOTE and r.verdict in NOTE_OUTCOMES and r.verdict not in VERDICTS
    num = r.numbers.set_index(["comparison", "panel", "sigma"])
    # the audit's count: the threshold moves no point at sigma > 0 ...
    pos = num.loc[("threshold", "a", "> 0 (0.1, 0.2, 0.4)")]
    assert (pos["moved"], pos["grid points"]) == (0, 15)
    # ... and every point at sigma = 0, where dist <= 0 cannot hold
    zero = num.loc[("threshold", "a", "0")]
    assert (zero["moved"], zero["grid points"]) == (5, 5)
    assert set(r.numbers.loc[r.numbers["panel"].isin(["c", "d"]), "sigma"]) == {"> 0 (0.1)"}


def test_rebuild_d1_is_idempotent_and_keeps_the_run(tmp_path):
    import shutil

    src = ROOT / "figures" / "checks"
    for name in ("D1_paper.json", "D1_paper.csv", "D1_paper_separation.csv"):
        shutil.copy(src / name, tmp_path / name)
    before = d1.StudyResult.from_json((tmp_path / "D1_paper.json").read_text())
    first = d1.rebuild_d1(tmp_path, "paper", write=True)
    assert d1.rebuild_d1(tmp_path, "paper").to_json() == first.to_json()
    for key in ("command", "seed", "seconds", "table", "figure", "units_resumed"):
        assert getattr(first, key) == getattr(before, key)
    run = [c for c in before.caveats if c.startswith("The theta* comparison uses")]
    assert run and all(c in first.caveats for c in run)  # the run's caveats stay
    assert d1.main(["--out", str(tmp_path)]) == 0


def test_d1_code_arm_reproduces_the_committed_quick_summary():
    """D1's code-scaling runs are the fig2a quick preset's runs: same seeds, same success counts.

    D1 runs the fig2a grid with the quick protocol and the config's seed; its first trials are the
    quick preset's trials, so their successes must equal the committed quick summary cell by cell
    (this replaces the run-time cross-check D1 made when it read that summary by path)."""
    trials = pd.read_csv(ROOT / "figures" / "checks" / "D1_paper_trials.csv")
    summ = pd.read_csv(ROOT / "figures" / "fig2a_quick_summary.csv")
    T = int(summ["trials"].max())
    code = trials[(trials["theta_scale"] == "code") & (trials["trial"] < T)]
    got = code.groupby(["R", "sigma"]).agg(authors=("authors", "sum"), text=("text", "sum"))
    want = summ.set_index(["R", "sigma"])[["succ_authors", "succ_text"]]
    joined = got.join(want, how="inner")
    assert len(joined) == len(summ) == 20
    assert (joined["authors"] == joined["succ_authors"]).all()
    assert (joined["text"] == joined["succ_text"]).all()


# ----------------------------------------------------------------------------- separations


@pytest.mark.parametrize("d", [3, 30])
@pytest.mark.parametrize("scale", ["code", "norm"])
def test_expected_sq_separation_monte_carlo(global_random_seed, d, scale):
    # independent draw: Bernoulli(0.5) patterns, all-zero rows rejected (as draw_trial does);
    # 200,000 pairs, tolerance 5 Monte Carlo standard errors
    rng = np.random.default_rng(global_random_seed)
    B = rng.integers(0, 2, size=(400_000, d)).astype(float)
    B = B[B.any(axis=1)]
    B = B[: 2 * (B.shape[0] // 2)].reshape(-1, 2, d)
    if scale == "norm":
        B = B / np.linalg.norm(B, axis=2, keepdims=True)
    R = 0.7
    sq = R ** 2 * np.sum((B[:, 0] - B[:, 1]) ** 2, axis=1)
    se = sq.std() / np.sqrt(sq.size)
    assert abs(d1.expected_sq_separation(R, d, scale) - sq.mean()) < 5 * se


def test_expected_sq_separation_errors_and_patterns_shared():
    with pytest.raises(ValueError, match="theta_scale"):
        d1.expected_sq_separation(1.0, 10, "text")
    with pytest.raises(ValueError, match="d must"):
        d1.expected_sq_separation(1.0, 0, "code")
    # D1 draws a trial with m = k, n = 1 to get the patterns: they must be those of the full trial
    from mixlinreg.data import draw_trial

    ss = np.random.SeedSequence(5, spawn_key=(1, 2))
    small = draw_trial(2, 1, 7, 2, rng=np.random.default_rng(ss))
    full = draw_trial(6, 4, 7, 2, rng=np.random.default_rng(ss))
    np.testing.assert_array_equal(small.B, full.B)


# ----------------------------------------------------------------------------- smoke runs


def _f2_config(tmp_path, sid, store):
    src = Path(__file__).resolve().parents[1] / "mixlinreg" / "configs" / "studies" / f"{sid}.toml"
    cfg = tmp_path / f"{sid}.toml"
    cfg.write_text(src.read_text().replace('figure2_store = "figures/stores"',
                                           f'figure2_store = "{store}"'))
    return cfg


@pytest.mark.parametrize("sid", ["F2a", "F2c"])
def test_f2_smoke_reads_the_panel_store_by_config(tmp_path, sid):
    from mixlinreg.harness import load_config, run_experiment
    from mixlinreg.theory.studies import get
    from mixlinreg.theory.study import run

    store = tmp_path / "stores"
    run_experiment(load_config(f"fig2{sid[-1]}", "smoke"), store, progress=False)
    cfg = _f2_config(tmp_path, sid, store)
    r = run(get(sid), preset="smoke", out=tmp_path / "out", store=None, config_path=cfg)
    assert r.verdict in VERDICTS
    assert "Figure 3(" in r.location and "Figure 2(" in r.location
    assert "smoke preset" in r.summary and "config hash" in r.summary
    assert any(c.startswith("Sensitivity: significance level alpha (chosen 0.05)") for c in r.caveats)
    table = pd.read_csv(tmp_path / "out" / f"{sid}_smoke.csv")
    assert set(f2._TREND_COLUMNS) <= set(table.columns)
    assert (table["stratum"] == "pooled").any()
    summ = pd.read_csv(tmp_path / "out" / f"{sid}_smoke_summary.csv")
    assert (summ["trials"] == 2).all()


def test_f2_without_runs_is_no_verdict_and_says_how_to_make_them(tmp_path):
    from mixlinreg.theory.studies import get
    from mixlinreg.theory.study import MissingInput, run

    cfg = _f2_config(tmp_path, "F2c", tmp_path / "empty")
    with pytest.raises(MissingInput, match="mixlinreg reproduce fig2c --preset smoke --out"):
        run(get("F2c"), preset="smoke", out=tmp_path / "out", store=None, config_path=cfg)
    assert not (tmp_path / "empty").exists()  # reading never makes a store
    assert not (tmp_path / "out").exists()  # no record: nothing was measured


def test_d1_smoke(tmp_path):
    r = run_study("D1", preset="smoke", out=tmp_path, store=None)
    assert r.kind == NOTE and r.verdict in NOTE_OUTCOMES  # a note, not a paper-claim verdict
    for suffix in (".csv", ".png", "_trials.csv", "_separation.csv"):
        assert (tmp_path / f"D1_smoke{suffix}").exists()
    table = pd.read_csv(tmp_path / "D1_smoke.csv")
    assert {"family", "panel", "R", "trials", "diff", "lo", "hi", "moved"} <= set(table.columns)
    assert {"theta_scale", "experiment"} <= set(table["family"])
    assert set(table["panel"]) == set(table.dropna(subset=["sigma"])["panel"])  # sigma recorded
    assert len(r.numbers) <= 2 * len(d1.FAMILIES) * 4  # comparison x panel x sigma stratum
    # the record is its tables' analysis: remade from them alone, it is the same record
    assert d1.rebuild_d1(tmp_path, "smoke").to_json() == (tmp_path / "D1_smoke.json").read_text()
    assert any(c.startswith("Sensitivity: margin of a paired move (chosen 0.2)") for c in r.caveats)


def test_d1_config_holds_the_presets_d1_has_always_used():
    """D1's presets live in mixlinreg/configs/studies/D1.toml (they were a pick(...) in run_d1)."""
    from mixlinreg.theory.studies import get

    want = {"smoke": ("smoke", None, None, 2, "smoke"),
            "quick": ("quick", [0.25, 0.5, 1.0], [0.1], 4, "paper"),
            "paper": ("quick", None, None, 10, "paper")}
    for preset, values in want.items():
        cfg = get("D1").config(preset)
        p = cfg["params"]
        assert (p["config_preset"], p["R"], p["sigma"], p["trials"], p["figure2_preset"]) == values
        assert p["figure2_store"] == "figures/stores"
        assert (cfg["margins"]["margin"], cfg["margins"]["alpha"]) == (0.2, 0.05)


def test_d1_reads_the_panel_stores_by_config_and_leaves_missing_ones_out(tmp_path):
    from mixlinreg.harness import load_config, run_experiment
    from mixlinreg.theory.studies import get
    from mixlinreg.theory.study import run

    store = tmp_path / "stores"
    run_experiment(load_config("fig2a", "smoke"), store, progress=False)
    cfg = _f2_config(tmp_path, "D1", store)
    r = run(get("D1"), preset="smoke", out=tmp_path / "out", store=None, config_path=cfg)
    assert r.kind == NOTE and r.verdict in NOTE_OUTCOMES
    moves = pd.read_csv(tmp_path / "out" / "D1_smoke.csv")
    assert set(moves.loc[moves["family"] == "distance", "panel"]) == {"a"}
    assert any(c.startswith("Runs read: panel a: fig2a-smoke-") for c in r.caveats)
    for p in "bcd":
        assert any(c.startswith(f"Panel {p} is left out") and f"mixlinreg reproduce fig2{p} "
                   f"--preset smoke --out {store}" in c for c in r.caveats)
    assert len(list(store.iterdir())) == 1  # reading never makes a store


# ----------------------------------------------------------------------------- F2's control


def _f2_rows(panel):
    from mixlinreg.theory.study import figure2_store

    root = Path(__file__).resolve().parents[1] / "figures" / "stores"
    return figure2_store(f"fig2{panel}", "paper", str(root))


@pytest.mark.parametrize("panel", ["a", "c"])
def test_f2_shuffle_moves_trials_within_their_strata_only(panel):
    from mixlinreg.harness import success_table
    from mixlinreg.harness.success import trial_success
    from mixlinreg.theory.studies import _f2

    store = _f2_rows(panel)
    rows = store.table()
    plus = store.exp.protocol["success_plus"]
    out = _f2.shuffled(rows, panel, np.random.default_rng(np.random.SeedSequence(3)))
    assert len(out) == len(rows) and list(out.columns) == list(rows.columns)
    before, after = success_table(rows, plus), success_table(out, plus)
    keys = ["m", "n", "d", "k", "R", "sigma"]
    # the same grid points with the same number of trials each
    pd.testing.assert_frame_equal(before[keys + ["trials"]], after[keys + ["trials"]])
    # the same successes in every stratum (the unclaimed keys), moved between its grid points
    strata = ["sigma"] if panel == "a" else ["R"]
    pd.testing.assert_series_equal(before.groupby(strata)["succ_authors"].sum(),
                                   after.groupby(strata)["succ_authors"].sum())
    assert not (before["succ_authors"].to_numpy() == after["succ_authors"].to_numpy()).all()
    # every trial keeps its rows together: one outcome per (grid point, trial)
    assert len(trial_success(out, plus)) == int(before["trials"].sum())


def test_f2_shuffle_default_leaves_the_study_as_it_was_and_is_validated(tmp_path):
    from mixlinreg.theory.studies import get

    study = get("F2a")
    values = study.config("paper").values
    assert values["params"]["shuffle"] is False  # the default: the store's rows as they are
    src = Path(__file__).resolve().parents[1] / "mixlinreg" / "configs" / "studies" / "F2a.toml"
    bad = tmp_path / "F2a.toml"
    bad.write_text(src.read_text().replace('panel = "fig2a"', 'panel = "fig2a"\nshuffle = "yes"'))
    with pytest.raises((TypeError, ValueError), match="params.shuffle must be a bool"):
        study.config("paper", bad)
