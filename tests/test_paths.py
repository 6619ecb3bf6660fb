"""Names never become paths (issue 11, class 4) and every command checks its output folder before
it computes, and writes only there (class 5)."""

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mixlinreg.bench
import mixlinreg.compare
import mixlinreg.digits
import mixlinreg.harness
import mixlinreg.harness.agreement
import mixlinreg.theory
from mixlinreg._paths import output_dir, output_file, plain_name
from mixlinreg.cli import main
from mixlinreg.harness import ResultStore, load_config, run_experiment
from mixlinreg.harness._tiny import tiny_text
from mixlinreg.harness.experiment import Experiment
from mixlinreg.theory import Context

BAD_NAMES = ["mygrids/conc", "../../x", "..", ".", "", "/abs", "a b", "x\\y", ".hidden", "-x",
             "a/../b", "x" * 101, "é", 3, None]


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*"))


# ------------------------------------------------------------------------------ class 4: names
@pytest.mark.parametrize("name", BAD_NAMES)
def test_plain_name_refuses_what_could_be_a_path(name):
    with pytest.raises(ValueError, match="must be a plain name"):
        plain_name("name", name)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=30))
def test_a_name_that_passes_is_one_path_component(name):
    try:
        plain_name("name", name)
    except ValueError:
        return
    base = Path("/base")
    assert (base / name).parent == base and (base / name).name == name
    assert name not in (".", "..") and "/" not in name and "\\" not in name


@pytest.mark.parametrize("name", ["mygrids/conc", "../../x", "..", "a b"])
def test_a_config_name_that_is_a_path_is_refused_and_nothing_is_written(tmp_path, name):
    cfg = tmp_path / "cfg" / "c.toml"
    cfg.parent.mkdir()
    cfg.write_text(f'name = "{name}"\n' + tiny_text(trials=1, seed=1).replace('name = "tiny"', ""))
    with pytest.raises(ValueError, match="name must be a plain name"):
        load_config(cfg, "paper")
    out = tmp_path / "a" / "out"
    rc = _cli_error(["reproduce", "--config", str(cfg), "--preset", "paper", "--out", str(out)],
                    "plain name")
    assert rc
    assert _tree(tmp_path) in (["a", "a/out", "cfg", "cfg/c.toml"], ["cfg", "cfg/c.toml"])


def test_a_config_file_stem_or_preset_that_is_not_a_plain_name_is_refused(tmp_path):
    cfg = tmp_path / "two words.toml"
    cfg.write_text(tiny_text(trials=1, seed=1).replace('name = "tiny"', ""))
    with pytest.raises(ValueError, match="set name ="):
        load_config(cfg, "paper")
    cfg = tmp_path / "ok.toml"
    cfg.write_text(tiny_text(trials=1, seed=1) + '\n[presets."../up".protocol]\ntrials = 1\n')
    # presets are one fixed vocabulary (smoke, quick, paper): anything else is refused by name
    with pytest.raises(ValueError, match=r"preset must be one of \['smoke', 'quick', 'paper'\], got '../up'"):
        load_config(cfg, "../up")
    with pytest.raises(ValueError, match="preset names must be among"):
        load_config(cfg, "paper")


@pytest.mark.parametrize("name", ["../x", "a/b"])
def test_a_store_never_leaves_its_folder_even_for_a_hand_made_experiment(tmp_path, name):
    exp = load_config(_tiny_cfg(tmp_path), "paper")
    bad = Experiment(name=name, description="", layout="R-sigma", preset="paper", grid=exp.grid,
                     protocol=exp.protocol)
    with pytest.raises(ValueError, match="plain name"):
        ResultStore(tmp_path / "out", bad)
    bad = Experiment(name="ok", description="", layout="R-sigma", preset=name, grid=exp.grid,
                     protocol=exp.protocol)
    with pytest.raises(ValueError, match="plain name"):
        ResultStore(tmp_path / "out", bad)
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


@pytest.mark.parametrize("sid", ["../L1", "L1/x", ".."])
def test_study_ids_and_unit_names_are_plain(tmp_path, sid):
    with pytest.raises(ValueError, match="plain name"):
        Context(sid, store=tmp_path)
    with pytest.raises(ValueError, match="unit name"):
        Context("L1", store=tmp_path).unit("../u", lambda: pd.DataFrame({"a": [1]}))
    assert _cli_error(["check", sid, "--out", str(tmp_path / "o")], "unknown study")
    assert not list(tmp_path.parent.glob("L1*"))


# ------------------------------------------------------------------------- class 5: output folder
def _cli_error(argv, match):
    """A user error: either the ValueError itself or (with the CLI's error handling) status 2."""
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            rc = main(argv)
    except ValueError as exc:
        assert match in str(exc), str(exc)
        return True
    assert rc == 2 and match in err.getvalue(), err.getvalue()
    return True


def _tiny_cfg(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(tiny_text(trials=2, seed=1))
    return cfg


def _forbid(monkeypatch, module, name):
    def boom(*a, **k):
        raise AssertionError(f"{name} ran before the output folder was checked")

    monkeypatch.setattr(module, name, boom)


COMMANDS = {
    # command -> (argv with OUT placeholder, module and function that does the work)
    "reproduce": (["reproduce", "fig2a", "--preset", "smoke", "--out", "OUT"],
                  mixlinreg.harness, "run_experiment"),
    "reproduce-figures": (["reproduce", "fig2a", "--preset", "smoke", "--out", "GOOD",
                           "--figures", "OUT"], mixlinreg.harness, "run_experiment"),
    "check": (["check", "L1", "--preset", "smoke", "--out", "OUT"], mixlinreg.theory, "run_study"),
    "check-store": (["check", "L1", "--preset", "smoke", "--out", "GOOD", "--store", "OUT"],
                    mixlinreg.theory, "run_study"),
    "check-write": (["check", "L1", "--preset", "smoke", "--out", "GOOD", "--write", "OUT"],
                    mixlinreg.theory, "run_study"),
    "compare": (["compare", "--preset", "smoke", "--out", "OUT"], mixlinreg.compare, "run_compare"),
    "digits": (["digits", "--out", "OUT"], mixlinreg.digits, "run_digits"),
    "check-agreement": (["check-agreement", "fig2a", "--candidate", "early-stop", "--csv", "OUT"],
                        mixlinreg.harness.agreement, "check_agreement"),
    "bench": (["bench", "--quick", "--csv", "OUT"], mixlinreg.bench, "run_benchmark"),
}


def _bad_outs(tmp_path, wants_file):
    f = tmp_path / "a_file"
    f.write_text("x")
    d = tmp_path / "a_dir"
    d.mkdir(exist_ok=True)
    outs = {"under a file": f / "sub" / ("x.csv" if wants_file else "out")}
    if wants_file:
        outs["a folder"] = d
    else:
        outs["a file"] = f
    return outs


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_checks_its_output_before_any_work(tmp_path, monkeypatch, command):
    argv, module, func = COMMANDS[command]
    _forbid(monkeypatch, module, func)
    monkeypatch.chdir(tmp_path)
    wants_file = any(a in argv for a in ("--csv", "--write"))
    for what, out in _bad_outs(tmp_path, wants_file).items():
        args = [str(out) if a == "OUT" else str(tmp_path / "good") if a == "GOOD" else a
                for a in argv]
        opt = argv[argv.index("OUT") - 1]  # the message names the option
        assert _cli_error(args, opt), (what, opt)


def test_reproduce_out_holds_everything_and_figures_only_on_request(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = _tiny_cfg(tmp_path)
    assert main(["reproduce", "--config", str(cfg), "--preset", "paper", "--out", "res",
                 "--no-progress", "--backend", "sequential"]) == 0
    top = sorted(p.name for p in tmp_path.iterdir())
    assert top == ["res", "tiny.toml"]  # no ./figures
    made = sorted(p.name for p in (tmp_path / "res").iterdir())
    assert "tiny_paper_summary.csv" in made and "tiny_paper.png" in made
    assert any(n.startswith("tiny-paper-") for n in made)
    assert main(["reproduce", "--config", str(cfg), "--preset", "paper", "--out", "res",
                 "--figures", "figs", "--report-only"]) == 0
    assert (tmp_path / "figs" / "tiny_paper.png").exists()


def test_compare_writes_units_as_they_finish_and_resumes(tmp_path, monkeypatch):
    sc = [s for s in mixlinreg.compare.scenarios("smoke")][:1]
    calls = []
    real = mixlinreg.compare._run_one

    def counting(name, *a):
        calls.append(name)
        return real(name, *a)

    monkeypatch.setattr(mixlinreg.compare, "_run_one", counting)
    first = mixlinreg.compare.run_compare("smoke", n_seeds=2, scenario_list=sc, store=tmp_path)
    n = len(calls)
    assert n == 2 * len(mixlinreg.compare.METHODS)
    units = list(tmp_path.rglob("*.csv"))
    assert len(units) == 2 and len(list(tmp_path.rglob("*.check.json"))) == 2
    again = mixlinreg.compare.run_compare("smoke", n_seeds=3, scenario_list=sc, store=tmp_path)
    assert len(calls) == n + len(mixlinreg.compare.METHODS)  # only the new seed
    cols = [c for c in first.columns if c != "wall_time_s"]
    pd.testing.assert_frame_equal(again[cols].iloc[:len(first)].reset_index(drop=True),
                                  first[cols])


def test_digits_writes_units_as_they_finish_and_resumes(tmp_path, monkeypatch):
    calls = []
    real = mixlinreg.digits._one_seed

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(mixlinreg.digits, "_one_seed", counting)
    kw = dict(m=8, n=10, tau=1, rounds=3, store=tmp_path)
    rows, rec = mixlinreg.digits.run_digits(2, **kw)
    assert len(calls) == 2 and len(list(tmp_path.rglob("*.csv"))) == 2  # one unit per seed
    rows2, rec2 = mixlinreg.digits.run_digits(2, **kw)
    assert len(calls) == 2
    pd.testing.assert_frame_equal(rows.drop(columns="seconds"), rows2.drop(columns="seconds"))
    pd.testing.assert_frame_equal(rec, rec2)


def test_output_helpers(tmp_path):
    assert output_dir(tmp_path / "new" / "deep").is_dir()
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ValueError, match="--out must be a folder"):
        output_dir(f)
    with pytest.raises(ValueError, match="--csv must be a file name"):
        output_file(tmp_path, "--csv")
    with pytest.raises(ValueError, match="--csv: cannot write"):
        output_file(f / "x.csv", "--csv")
    if os.geteuid() != 0:  # root may write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            with pytest.raises(ValueError, match="cannot write"):
                output_dir(ro)
        finally:
            ro.chmod(0o700)
    assert not list(tmp_path.rglob(".write-probe-*"))
