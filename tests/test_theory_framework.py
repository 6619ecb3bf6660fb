"""The theory-check framework: verdict rules on inputs with a known answer, the resumable unit
store, the records and the generated report."""

import json

import numpy as np
import pandas as pd
import pytest

from mixlinreg.cli import main
from mixlinreg.theory import STUDIES, run_study, write_report
from mixlinreg.theory import bounds
from mixlinreg.theory.study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Context,
                                     StudyResult, combine)
from mixlinreg.theory.report import load_results, markdown_table
from mixlinreg.stats import (Fit, bootstrap, contraction_factor, loglog_slope, semilog_slope,
                             verdict_at_least, verdict_at_most, verdict_equal)


# ------------------------------------------------------------------ verdict logic, known answers


def _noisy_decay(rate, runs, T, noise, rng):
    """Errors e_t = e_0 * rate^t with multiplicative log-normal noise per step."""
    steps = rate * np.exp(rng.normal(0.0, noise, size=(runs, T)))
    e0 = rng.uniform(0.5, 2.0, size=(runs, 1))
    return np.concatenate([e0, e0 * np.cumprod(steps, axis=1)], axis=1)


@pytest.mark.parametrize("rate", [0.3, 0.5, 0.8])
def test_contraction_factor_recovers_a_planted_rate(rate, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    e = _noisy_decay(rate, runs=40, T=12, noise=0.05, rng=rng)
    fit = contraction_factor(e, rng=global_random_seed)
    # geometric mean of 480 log-normal steps: the interval is ~1% wide, the truth must be inside
    # a 5% band around it
    assert fit.lo <= fit.est <= fit.hi
    assert abs(fit.est - rate) < 0.05 * rate
    assert fit.hi - fit.lo < 0.1 * rate


def test_contraction_verdict_holds_for_a_factor_below_the_claim_and_fails_above(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    good = contraction_factor(_noisy_decay(0.4, 30, 10, 0.05, rng), rng=1)
    bad = contraction_factor(_noisy_decay(0.7, 30, 10, 0.05, rng), rng=2)
    assert verdict_at_most(good, 0.5) == HOLDS
    assert verdict_at_most(bad, 0.5) == NOT_SUPPORTED


def test_contraction_factor_mask_keeps_only_the_transient():
    e = np.array([[1.0, 0.5, 0.25, 0.25, 0.25], [2.0, 1.0, 0.5, 0.5, 0.5]])
    mask = e[:, :-1] > 1.5 * e[:, -1:]  # steps that start well above the plateau
    assert contraction_factor(e, mask, rng=0).est == pytest.approx(0.5, rel=1e-12)
    assert contraction_factor(e, rng=0).est > 0.5  # the plateau steps pull it toward 1


def test_planted_exponent_holds_and_a_wrong_one_is_not_supported(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    x = np.repeat([25.0, 50.0, 100.0, 200.0, 400.0], 8)
    y = 2.0 * x**-0.5 * np.exp(rng.normal(0.0, 0.05, x.size))
    fit = loglog_slope(x, y, rng=global_random_seed)
    assert verdict_equal(fit, -0.5, margin=0.1) == HOLDS
    assert verdict_equal(fit, -1.0, margin=0.1) == NOT_SUPPORTED  # a deliberately wrong exponent
    assert verdict_equal(fit, 0.0, margin=0.1) == NOT_SUPPORTED


def test_wide_interval_is_inconclusive(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    x = np.repeat([1.0, 2.0], 3)
    y = x**-0.5 * np.exp(rng.normal(0.0, 1.0, x.size))  # noise swamps the trend
    fit = loglog_slope(x, y, rng=0)
    assert fit.hi - fit.lo > 0.5
    assert verdict_equal(fit, -0.5, margin=0.1) == INCONCLUSIVE


def test_semilog_slope_recovers_an_exponential_rate():
    n = np.repeat([100.0, 200.0, 400.0, 800.0], 3)
    y = 3.0 * np.exp(-0.02 * n)
    assert semilog_slope(n, y, rng=0).est == pytest.approx(-0.02, rel=1e-10)


def test_verdict_rules_edges():
    f = Fit(0.5, 0.45, 0.55, 10)
    assert verdict_at_most(f, 0.55) == HOLDS
    assert verdict_at_most(f, 0.5) == INCONCLUSIVE
    assert verdict_at_most(f, 0.4) == NOT_SUPPORTED
    assert verdict_at_most(f, 0.4, margin=0.2) == HOLDS
    assert verdict_at_least(f, 0.45) == HOLDS
    assert verdict_at_least(f, 0.6) == NOT_SUPPORTED
    assert verdict_at_least(f, 0.5) == INCONCLUSIVE
    assert verdict_equal(f, 0.5, 0.05) == HOLDS
    assert verdict_equal(f, 0.5, 0.04) == INCONCLUSIVE


def test_combine_takes_the_weakest():
    assert combine([HOLDS, HOLDS]) == HOLDS
    assert combine([HOLDS, CAVEAT]) == CAVEAT
    assert combine([CAVEAT, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([HOLDS, NOT_SUPPORTED, INCONCLUSIVE]) == NOT_SUPPORTED
    with pytest.raises(ValueError, match="verdict must be one of"):
        combine(["fine"])
    with pytest.raises(ValueError, match="at least one"):
        combine([])


def test_bootstrap_interval_covers_the_mean():
    fit = bootstrap(np.arange(20.0), rng=0)
    assert fit.lo < 9.5 < fit.hi and fit.est == 9.5


@pytest.mark.parametrize("call, match", [
    (lambda: Fit(np.nan, 0, 1, 2), "Fit.est must be finite"),
    (lambda: Fit(0.5, 1.0, 0.0, 2), "lo <= hi"),
    (lambda: bootstrap([1.0]), "at least 2 replicates"),
    (lambda: bootstrap([1.0, np.nan]), "finite"),
    (lambda: bootstrap([1.0, 2.0], n_boot=10), "n_boot must be an integer >= 100"),
    (lambda: bootstrap([1.0, 2.0], confidence=1.5), r"confidence must be in \(0, 1\)"),
    (lambda: loglog_slope([1, 1, 1], [1, 2, 3]), "at least 2 distinct values"),
    (lambda: loglog_slope([1, 2], [1, -2]), "y must be > 0"),
    (lambda: loglog_slope([0, 2], [1, 2]), "x must be > 0"),
    (lambda: contraction_factor(np.ones(4)), r"shape \(runs, T \+ 1\)"),
    (lambda: verdict_equal(Fit(0, 0, 0, 1), 0, -1), "margin must be finite and >= 0"),
    (lambda: verdict_at_most(0.5, 0.5), "fit must be a Fit"),
])
def test_stats_errors_name_the_parameter(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ------------------------------------------------------------------ bounds


def test_bounds_shapes_and_errors():
    assert bounds.lemma1_exponent_form(0.25, np.inf) == pytest.approx(0.0625)
    assert bounds.statistical_term(sigma=1.0, p=0.5, d=4, m=1, n_prime=1) == pytest.approx(4.0)
    assert bounds.theorem2_factor(1.0, 2.0, 2.0) == pytest.approx(1 - 1 / 8)
    assert bounds.corollary1_iterations(4.0, 1.0) == pytest.approx(2.0)
    assert bounds.lemma1_bound(1e6, 0.25, 1.0, c1=1.0, c2=1.0) == 0.0
    assert bounds.corollary2_rate(4, 4, a=1.0, b=0.0) == pytest.approx(0.25)
    # each constant of the first term of Corollary 1 enters with the tabulated exponent
    base = dict(sigma=0.5, p=0.5, d=20, m=100, n_prime=50)
    for name, expo in bounds.COROLLARY1_EXPONENTS.items():
        hi = dict(base, **{name: base[name] * (1.5 if name == "p" else 2.0)})
        ratio = bounds.statistical_term(**hi) / bounds.statistical_term(**base)
        assert np.log(ratio) / np.log(1.5 if name == "p" else 2.0) == pytest.approx(expo)
    for call, match in [
        (lambda: bounds.lemma1_exponent_form(0.5, 1.0), r"alpha must be in \(0, 0.5\)"),
        (lambda: bounds.lemma1_bound(10, 0.2, 1.0, c1=-1, c2=1), "c1 must be finite and > 0"),
        (lambda: bounds.theorem2_factor(1.5, 1.0, 2.0), r"p must be in \(0, 1\]"),
        (lambda: bounds.theorem2_factor(0.5, 3.0, 2.0), "lam must be <= L"),
        (lambda: bounds.minimax_rate(sigma=1, d=1, p=1, m=1, n_prime=1, delta=1, eps=1),
         "Delta > 4 eps"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()


def test_bounds_need_their_constants():
    with pytest.raises(TypeError):
        bounds.lemma1_bound(10, 0.2, 1.0)  # no invented default constants


# ------------------------------------------------------------------ context and store


def test_unit_store_resumes_without_recomputing(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [1.0, 2.0], "flag": [True, False]})

    ctx = Context("L1", preset="smoke", out=tmp_path / "out", store=tmp_path / "store")
    ctx.params = {"a": 1}
    first = ctx.unit("u0", compute)
    ctx2 = Context("L1", preset="smoke", out=tmp_path / "out", store=tmp_path / "store",
                   params={"a": 1})
    again = ctx2.unit("u0", compute)
    assert len(calls) == 1
    assert (ctx.units_computed, ctx.units_resumed) == (1, 0)
    assert (ctx2.units_computed, ctx2.units_resumed) == (0, 1)
    r = ctx2.result(title="t", claim="c", location="l", verdict=HOLDS, summary="s",
                    numbers=pd.DataFrame())
    assert r.units_resumed == 1
    pd.testing.assert_frame_equal(first, again)
    # other params: another folder, computed again
    Context("L1", preset="smoke", store=tmp_path / "store", params={"a": 2}).unit("u0", compute)
    assert len(calls) == 2
    assert len(list((tmp_path / "store").iterdir())) == 2
    # no store: always computed
    Context("L1", preset="smoke", store=None).unit("u0", compute)
    assert len(calls) == 3


def test_unit_store_is_atomic_leaves_nothing_on_failure(tmp_path):
    ctx = Context("L1", preset="smoke", store=tmp_path)

    def boom():
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        ctx.unit("u1", boom)
    assert not list(tmp_path.rglob("*.csv"))


def test_seeds_are_per_study_and_per_key():
    a = Context("T1", seed=3).rng(1, 2).random()
    assert a == Context("T1", seed=3).rng(1, 2).random()
    assert a != Context("C1", seed=3).rng(1, 2).random()
    assert a != Context("T1", seed=3).rng(1, 3).random()
    assert a != Context("T1", seed=4).rng(1, 2).random()


@pytest.mark.parametrize("kw, match", [
    (dict(preset="huge"), "preset must be one of"),
    (dict(seed=-1), "seed must be an integer >= 0"),
    (dict(n_jobs=0), "n_jobs must be an integer >= 1"),
])
def test_context_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        Context("L1", **kw)


def test_unit_name_and_return_type_are_checked(tmp_path):
    ctx = Context("L1", store=tmp_path)
    with pytest.raises(ValueError, match="unit name"):
        ctx.unit("a/b", lambda: pd.DataFrame())
    with pytest.raises(TypeError, match="must return a pandas DataFrame"):
        ctx.unit("ok", lambda: [1, 2])


def test_former_preset_name():
    assert Context("L1", preset="full").preset == "paper"  # the former name of "paper"
    with pytest.raises(ValueError, match="former name 'full'"):
        Context("L1", preset="huge")


# ------------------------------------------------------------------ records and report


def _fake(ctx, verdict=HOLDS):
    table = ctx.write_table(pd.DataFrame({"a": [1, 2]}))
    return ctx.result(title="t", claim="c.", location="Lemma 1, Appendix A", verdict=verdict,
                      summary="first line\nmore", numbers=pd.DataFrame({"q": [0.5], "lo": [0.4]}),
                      caveats=["a caveat"], table=table, figure=ctx.path(".png"))


def test_result_json_round_trip(tmp_path):
    r = _fake(Context("L1", out=tmp_path))
    back = StudyResult.from_json(r.to_json())
    assert back.verdict == r.verdict and back.caveats == r.caveats
    pd.testing.assert_frame_equal(back.numbers, r.numbers)
    with pytest.raises(ValueError, match="verdict must be one of"):
        StudyResult(id="x", title="t", claim="c", location="l", verdict="fine", summary="s",
                    numbers=pd.DataFrame())


def test_report_picks_the_requested_preset_then_the_largest(tmp_path):
    out = tmp_path / "checks"
    for preset, verdict in [("quick", HOLDS), ("paper", NOT_SUPPORTED)]:
        ctx = Context("L1", preset=preset, out=out)
        (out / f"L1_{preset}.json").write_text(_fake(ctx, verdict).to_json())
    assert load_results(out, preset="paper")["L1"].verdict == NOT_SUPPORTED
    assert load_results(out, preset="full")["L1"].verdict == NOT_SUPPORTED  # its former name
    assert load_results(out, preset="quick")["L1"].verdict == HOLDS
    path = write_report(tmp_path / "paper_checks.md", out, preset="paper")
    text = path.read_text()
    assert "Do not edit by hand" in text
    assert "| [L1](#l1) |" in text and "**not supported**" in text
    assert "![L1](checks/L1_paper.png)" in text  # links relative to the report
    assert "- a caveat" in text
    for sid in set(STUDIES) - {"L1"}:  # the others are listed as not run
        assert f"| {sid} |" in text and "not run" in text


def test_markdown_table_formats_numbers():
    md = markdown_table(pd.DataFrame({"x": [0.123456, 1e-7, np.nan], "s": ["a|b", "c", "d"]}))
    assert "0.1235" in md and "1.000e-07" in md and "a\\|b" in md


def test_run_study_rejects_unknown_ids(tmp_path):
    with pytest.raises(ValueError, match="study IDs must be among"):
        run_study("Z9", out=tmp_path)


def test_cli_check_report_only_and_unknown_id(tmp_path, capsys):
    out = tmp_path / "checks"
    ctx = Context("L1", preset="quick", out=out)
    (out / "L1_quick.json").write_text(_fake(ctx).to_json())
    md = tmp_path / "paper_checks.md"
    assert main(["check", "L1", "--report-only", "--out", str(out), "--write", str(md)]) == 0
    assert "## L1" in md.read_text()
    assert main(["check", "Z9", "--report-only"]) == 2
    assert "unknown study IDs" in capsys.readouterr().err


def test_records_are_plain_json(tmp_path):
    r = _fake(Context("L1", out=tmp_path))
    d = json.loads(r.to_json())
    assert d["numbers"]["columns"] == ["q", "lo"]


def test_records_keep_tiny_numbers(tmp_path):
    ctx = Context("L1", out=tmp_path)
    r = ctx.result(title="t", claim="c", location="l", verdict=HOLDS, summary="s",
                   numbers=pd.DataFrame({"p": [9.96e-13, 0.123456789012]}))
    back = StudyResult.from_json(r.to_json())
    assert back.numbers["p"].tolist() == pytest.approx([9.96e-13, 0.123456789012], rel=1e-12)


def test_large_tables_are_gzipped_and_read_back(tmp_path, monkeypatch):
    import mixlinreg.theory.study as st

    ctx = Context("T1", preset="quick", out=tmp_path)
    df = pd.DataFrame({"x": np.arange(50.0)})
    small = ctx.write_table(df)
    assert small.name == "T1_quick.csv"
    monkeypatch.setattr(st, "GZIP_ABOVE", 10)
    big = ctx.write_table(df)
    assert big.name == "T1_quick.csv.gz" and not small.exists()
    pd.testing.assert_frame_equal(pd.read_csv(big), df)
    first = big.read_bytes()
    assert ctx.write_table(df).read_bytes() == first  # reproducible bytes (no timestamp)


def test_a_note_has_its_own_outcomes(tmp_path):
    from mixlinreg.theory.study import DIFFER, NOTE, SAME, UNDETERMINED, combine_outcomes

    kw = dict(id="D1", title="t", claim="q?", location="l", summary="s", numbers=pd.DataFrame())
    r = StudyResult(verdict=DIFFER, kind=NOTE, **kw)
    back = StudyResult.from_json(r.to_json())
    assert (back.kind, back.verdict) == (NOTE, DIFFER)
    with pytest.raises(ValueError, match="a note's outcome must be one of"):
        StudyResult(verdict=HOLDS, kind=NOTE, **kw)  # a note is never a paper-claim verdict
    with pytest.raises(ValueError, match="verdict must be one of"):
        StudyResult(verdict=SAME, **kw)
    with pytest.raises(ValueError, match="kind must be one of"):
        StudyResult(verdict=HOLDS, kind="remark", **kw)
    d = json.loads(StudyResult(verdict=HOLDS, **kw).to_json())
    del d["kind"]  # records written before notes existed are claims
    assert StudyResult.from_json(json.dumps(d)).kind == "claim"
    assert combine_outcomes([SAME, UNDETERMINED]) == UNDETERMINED
    assert combine_outcomes([SAME, DIFFER, UNDETERMINED]) == DIFFER
    with pytest.raises(ValueError, match="outcome must be one of"):
        combine_outcomes([HOLDS])


def test_report_keeps_notes_apart_from_the_verdicts(tmp_path):
    from mixlinreg.theory.study import DIFFER, NOTE

    out = tmp_path / "checks"
    for sid, verdict in [("L1", HOLDS), ("T1", NOT_SUPPORTED)]:
        (out / f"{sid}_paper.json").parent.mkdir(parents=True, exist_ok=True)
        r = _fake(Context(sid, preset="paper", out=out), verdict)
        # a holds stands only beside a control that failed (mixlinreg.theory.controls.judge)
        r.rule_verdict, r.control = verdict, {"what": "a broken variant", "verdict": NOT_SUPPORTED}
        (out / f"{sid}_paper.json").write_text(r.to_json())
    note = _fake(Context("D1", preset="paper", out=out), HOLDS)
    note.kind, note.verdict = NOTE, DIFFER
    (out / "D1_paper.json").write_text(note.to_json())
    text = write_report(tmp_path / "paper_checks.md", out, preset="paper", ids=["L1", "T1", "D1"]
                        ).read_text()
    assert "2 claims of the paper: 1 hold, 0 hold with a caveat, 1 not supported, 0 inconclusive." \
        in text
    assert "1 reproducibility note, not a claim of the paper and not counted among the verdicts: " \
        "D1 (results differ)." in text
    claims, notes = text.split("| ID | note | outcome | preset | seconds |")
    assert "| [D1](#d1) |" not in claims.split("## L1")[0]  # not in the verdict table
    assert "| [D1](#d1) |" in notes and "## Reproducibility notes" in notes
    section = notes.split("### D1", 1)[1]
    assert "*Question* (" in section and "*Outcome*: **results differ**" in section
    assert "*Verdict*" not in section


def test_cli_check_list_and_paper(tmp_path, capsys):
    """--list names every study with its paper; --paper picks one paper's studies; a bad --paper,
    or --paper with IDs, is refused before anything is written."""
    from mixlinreg.theory.studies import get, ids

    assert main(["check", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(ids())
    assert all(line.split()[1] == get(line.split()[0]).paper for line in listed)
    out = tmp_path / "o"
    assert main(["check", "--paper", "XY", "--out", str(out)]) == 2
    assert "--paper must be one of" in capsys.readouterr().err
    assert main(["check", "--paper", "IFCA", "L1", "--out", str(out)]) == 2
    assert "not both" in capsys.readouterr().err
    assert not out.exists()
    assert main(["check", "--paper", "IFCA", "--list"]) == 0
    assert {line.split()[1] for line in capsys.readouterr().out.splitlines()} == {"IFCA"}
