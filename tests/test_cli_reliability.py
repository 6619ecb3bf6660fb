"""The command line of issue 25: faults end in one line (class 3), options and config keys that
would be ignored are refused (class 6), a TOML file that does not parse is named (class 7).

The probe cases of the same classes: ``probes/probe_cases_i25_cli.py``.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import mixlinreg
from mixlinreg import config
from mixlinreg.cli import build_parser, main
from mixlinreg.harness._tiny import write_tiny

PKG_ROOT = str(Path(mixlinreg.__file__).absolute().parents[1])
WORK = {"reproduce": "mixlinreg.harness:run_experiment", "check": "mixlinreg.theory:run_study",
        "compare": "mixlinreg.compare:run_compare", "digits": "mixlinreg.digits:run_digits",
        "bench": "mixlinreg.bench:run_benchmark", "teach": "mixlinreg.teach:write_views",
        "check-agreement": "mixlinreg.harness.agreement:check_agreement"}
ARGV = {"reproduce": ["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--no-progress"],
        "check": ["check", "L1", "--preset", "smoke", "--out", "o", "--no-progress"],
        "compare": ["compare", "--preset", "smoke", "--out", "o", "--no-progress"],
        "digits": ["digits", "--preset", "smoke", "--out", "o", "--no-progress"],
        "bench": ["bench", "--quick"],
        "teach": ["teach", "lines", "--smoke", "--out", "o"],
        "check-agreement": ["check-agreement", "fig2a", "--candidate", "gram", "--preset", "smoke"]}


def _stub(monkeypatch, command, exc):
    """The work of ``command`` raises ``exc``; returns the list of calls."""
    import importlib

    calls = []
    mod, attr = WORK[command].split(":")

    def work(*a, **k):
        calls.append(a)
        raise exc

    monkeypatch.setattr(importlib.import_module(mod), attr, work)
    return calls


def _env():
    return dict(os.environ, PYTHONPATH=PKG_ROOT, PYTHONUNBUFFERED="1")


# ------------------------------------------------------------------------ class 3: faults
@pytest.mark.parametrize("command", sorted(WORK))
def test_ctrl_c_in_any_command_is_one_line_with_status_130(command, tmp_path, monkeypatch,
                                                              capsys):
    monkeypatch.chdir(tmp_path)
    calls = _stub(monkeypatch, command, KeyboardInterrupt())
    assert main(ARGV[command]) == 130 and calls
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    line = err.strip()
    assert line.startswith(f"mixlinreg {command}: interrupted (Ctrl-C)"), line
    resume = "mixlinreg " + " ".join(ARGV[command])
    if command in ("reproduce", "check", "compare", "digits"):  # they keep finished units
        assert "finished units are kept in " in line and line.endswith("resume with: " + resume)
    else:
        assert "nothing is kept" in line and line.endswith("run it again with: " + resume)


def test_no_store_says_nothing_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _stub(monkeypatch, "check", KeyboardInterrupt())
    assert main(ARGV["check"] + ["--no-store"]) == 130
    assert "during study L1 (smoke preset); nothing is kept" in capsys.readouterr().err


@pytest.mark.parametrize("sig, code_owed, said", [(signal.SIGINT, 130, "interrupted (Ctrl-C)"),
                                                  (signal.SIGTERM, 143, "stopped (SIGTERM)")])
def test_real_sigint_keeps_the_finished_units(tmp_path, sig, code_owed, said):
    """SIGINT (or SIGTERM) to a running reproduce: one line, 130 (143), the units finished
    before it on disk."""
    write_tiny(tmp_path / "tiny.toml", trials=30)
    argv = ["reproduce", "--config", "tiny.toml", "--preset", "paper", "--out", "o",
            "--no-progress"]
    with open(tmp_path / "err", "w") as err, open(tmp_path / "out", "w") as out:
        p = subprocess.Popen([sys.executable, "-m", "mixlinreg.cli", *argv], cwd=tmp_path,
                             env=_env(), stdout=out, stderr=err)
        try:
            t0 = time.time()
            while not list((tmp_path / "o").rglob("units/*.csv")) and time.time() - t0 < 120:
                assert p.poll() is None, (tmp_path / "err").read_text()
                time.sleep(0.05)
            p.send_signal(sig)
            code = p.wait(60)
        finally:
            if p.poll() is None:
                p.kill()
    text = (tmp_path / "err").read_text()
    assert code == code_owed and "Traceback" not in text, text
    assert text.strip().splitlines()[-1] == (
        f"mixlinreg reproduce: {said} during tiny (paper preset); finished units are "
        "kept in o; resume with: mixlinreg " + " ".join(argv))
    assert list((tmp_path / "o").rglob("units/*.csv"))


def test_ctrl_c_inside_numba_compiler_callback_is_raised_later(monkeypatch):
    """A KeyboardInterrupt raised in an llvmlite callback would be printed and ignored: the
    handler raises it again a moment later instead."""
    from mixlinreg import _cli_faults

    state = _cli_faults._Run([])
    old = _cli_faults._on_sigint(state)
    try:
        handler = signal.getsignal(signal.SIGINT)
        code = compile("f = sys._getframe()", "/x/llvmlite/binding/executionengine.py", "exec")
        ns = {"sys": sys}
        exec(code, ns)
        handler(signal.SIGINT, ns["f"])  # returns: nothing raised inside the callback
        assert state.interrupted
        with pytest.raises(KeyboardInterrupt):
            for _ in range(200):
                time.sleep(0.01)
    finally:
        signal.signal(signal.SIGINT, old)


_LOADING = textwrap.dedent("""
    import sys

    class CtrlC:  # Ctrl-C landing while the package imports its kernels
        def find_spec(self, name, path=None, target=None):
            if name == "mixlinreg.ifca":
                raise KeyboardInterrupt
            return None

    sys.meta_path.insert(0, CtrlC())
    sys.argv[0] = sys.argv[1]
    from mixlinreg.cli import main
    sys.exit(main([]))
""")


@pytest.mark.parametrize("argv0, command", [("/usr/local/bin/mixlinreg", True), ("job.py", False)])
def test_ctrl_c_while_the_package_loads(argv0, command):
    """In the mixlinreg command, a Ctrl-C during ``import mixlinreg`` is its one line and exit
    130; in a user's program the KeyboardInterrupt is theirs (re-raised, not an exit)."""
    res = subprocess.run([sys.executable, "-c", _LOADING, argv0], env=_env(), capture_output=True,
                         text=True, timeout=120)
    if command:
        assert res.returncode == 130, res.stderr
        assert res.stderr.strip() == "mixlinreg: interrupted (Ctrl-C) while loading; nothing was run"
    else:
        assert "Traceback" in res.stderr and res.stderr.strip().endswith("KeyboardInterrupt")


def test_ctrl_c_inside_a_finalizer_is_raised_after_it(tmp_path):
    """A Ctrl-C that lands in a ``__del__`` (the garbage collector runs them anywhere) would be
    printed as a traceback and ignored, and the command would go on: it ends the command right
    after the finalizer instead, in one line."""
    script = tmp_path / "del.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, threading, time
        from mixlinreg import _cli_faults

        class Slow:
            def __del__(self):
                t0 = time.time()
                while time.time() - t0 < 1.0:
                    pass

        def body(state):
            threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            s = Slow()
            del s             # the SIGINT lands inside __del__
            time.sleep(5)     # the command must not go on to here and finish
            print("went on", flush=True)
            return 0

        sys.exit(_cli_faults.run(["x"], body))
    """))
    res = subprocess.run([sys.executable, str(script)], env=_env(), capture_output=True, text=True,
                         timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert res.returncode == 130 and "Traceback" not in res.stderr, res.stderr
    assert "went on" not in res.stdout, res.stdout
    assert res.stderr.strip() == ("mixlinreg: interrupted (Ctrl-C); nothing is kept; run it again "
                                  "with: mixlinreg x")


@pytest.mark.parametrize("exc, code, needles", [
    (OSError(errno.ENOSPC, "No space left on device", "o/fig2a_smoke.png"), 1,
     ["error: No space left on device: o/fig2a_smoke.png (errno 28)", "finished units are kept in o",
      "resume with: mixlinreg reproduce fig2a"]),
    (type("TerminatedWorkerError", (Exception,), {})(
        "A worker process managed by the executor was unexpectedly terminated.\n\nThe exit codes "
        "of the workers are {SIGKILL(-9)}"), 1,
     ["a worker process died (exit codes {SIGKILL(-9)})", "fewer --n-jobs", "resume with"]),
    (__import__("mixlinreg.runner.store", fromlist=["StoreWriteError"]).StoreWriteError(
        "result store: no space left on the disk (ENOSPC) while writing unit u1"), 1,
     ["error: result store: no space left on the disk (ENOSPC)", "resume with"]),
    (__import__("mixlinreg.runner.store", fromlist=["StoreError"]).StoreError(
        "the store's manifest.json is damaged"), 1, ["error: the store's manifest.json is damaged"]),
    (KeyError("cells"), 1, ["internal error: KeyError: 'cells'", "MIXLINREG_TRACEBACK=1",
                            "resume with"]),
    (ModuleNotFoundError("No module named 'distributed'", name="distributed"), 2,
     ["optional dependency distributed", "pip install 'mixlinreg[dask]'"]),
    (ModuleNotFoundError("No module named 'jaxlib'", name="jaxlib"), 2,
     ["pip install 'mixlinreg[jax]'"]),
])
def test_faults_mid_run_are_one_line_with_their_status(exc, code, needles, tmp_path, monkeypatch,
                                                       capsys):
    monkeypatch.chdir(tmp_path)
    _stub(monkeypatch, "reproduce", exc)
    assert main(ARGV["reproduce"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mixlinreg reproduce: "), err
    for n in needles:
        assert n in err, (n, err)
    monkeypatch.setenv("MIXLINREG_TRACEBACK", "1")  # developers see the traceback
    with pytest.raises(type(exc)):
        main(ARGV["reproduce"])


@pytest.mark.parametrize("argv", [["reproduce", "fig2a", "--backend", "dask"],
                                  ["compare", "--backend", "dask"],
                                  ["check", "L1", "--backend", "dask"]])
def test_backend_dask_without_dask_names_the_extra_before_any_work(argv, tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    for m in ("dask", "dask.distributed", "distributed"):
        monkeypatch.setitem(sys.modules, m, None)
    calls = _stub(monkeypatch, argv[0], AssertionError("ran"))
    assert main(argv + ["--preset", "smoke", "--out", "o"]) == 2 and not calls
    err = capsys.readouterr().err
    assert "--backend dask needs the optional dependency dask" in err
    assert "pip install 'mixlinreg[dask]'" in err and not (tmp_path / "o").exists()


def test_closed_pipe_is_quiet(tmp_path):
    """``mixlinreg check --list | head -1`` once head has gone: no traceback, no message."""
    r, w = os.pipe()
    os.close(r)
    with os.fdopen(w, "w") as wf:
        p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "check", "--list"], cwd=tmp_path,
                           env=_env(), stdout=wf, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.stderr == "" and p.returncode == 141, p.stderr


# ------------------------------------------------------------- class 6: options and keys
def _text_options():
    """Every option that stores a string of the user's (no choices, no number type)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for cmd, sp in sub.choices.items():
        for act in sp._actions:
            if isinstance(act, argparse._StoreAction) and act.option_strings and act.nargs is None \
                    and act.choices is None and (act.type is None or hasattr(act.type, "text_arg")):
                yield cmd, act


def test_every_text_option_refuses_an_empty_value(capsys):
    """Every free-text option (a folder, a file, an address, a name) refuses ''."""
    seen = []
    for cmd, act in _text_options():
        opt = act.option_strings[0]
        assert act.type is not None, f"{cmd} {opt} takes any string, '' included"
        seen.append(opt)
        extra = ["--candidate", "gram"] if cmd == "check-agreement" else []
        with pytest.raises(SystemExit) as exc:
            main([cmd, *extra, opt, ""])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"argument {opt}: must be" in err and "''" in err, err
    assert {"--out", "--store", "--figures", "--config", "--csv", "--write", "--scheduler"} <= set(seen)


def test_rules_name_real_options():
    """Every option a rule of mixlinreg._cli_options refers to is one of its command's."""
    from mixlinreg._cli_options import RULES

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for cmd, rules in RULES.items():
        dests = {a.dest for a in sub.choices[cmd]._actions}
        for rule in rules:
            for cell in rule.__closure__ or ():
                v = cell.cell_contents
                names = v if isinstance(v, tuple) else (v,) if isinstance(v, str) and \
                    v.isidentifier() and v.islower() else ()
                assert set(names) <= dests, (cmd, names)


def test_given_sees_options_whatever_their_value():
    from mixlinreg._cli_options import given

    assert given(build_parser, ["reproduce", "--backend", "loky", "--report-only"]) == \
        {"backend", "report_only"}
    assert given(build_parser, ["reproduce", "fig2b", "--n-jobs", "1"]) == {"panel", "n_jobs"}
    assert given(build_parser, ["check", "--list"]) == {"list"}


@pytest.mark.parametrize("argv, names", [
    (["reproduce", "fig2b", "--config", "t.toml"], ["--config and a panel name 'fig2b' conflict"]),
    (["reproduce", "fig2a", "--report-only", "--n-jobs", "2"], ["--n-jobs", "--report-only"]),
    (["reproduce", "fig2a", "--report-only", "--backend", "loky"], ["--backend", "--report-only"]),
    (["reproduce", "fig2a", "--report-only", "--method", "gram"], ["--method", "--report-only"]),
    (["reproduce", "fig2a", "--backend", "sequential", "--n-jobs", "2"],
     ["--n-jobs 2", "--backend sequential"]),
    (["reproduce", "fig2a", "--scheduler", "tcp://x:1"], ["--scheduler is only used with"]),
    (["reproduce", "fig2a", "--kernel", "jax", "--method", "gram"],
     ["--method gram and --kernel jax conflict"]),
    (["check", "L1", "--store", "s", "--no-store"], ["--store and --no-store conflict"]),
    (["compare", "--store", "s", "--no-store"], ["--store and --no-store conflict"]),
    (["digits", "--store", "s", "--no-store"], ["--store and --no-store conflict"]),
    (["compare", "--backend", "dask", "--n-jobs", "3"], ["--n-jobs 3", "--backend dask"]),
    (["check", "--list", "--preset", "smoke"], ["--preset does nothing with --list"]),
    (["check", "--list", "--scheduler", "x"], ["--scheduler", "--list"]),
    (["check", "--list", "--out", "o", "--store", "s"], ["--out, --store do nothing with --list"]),
    (["check", "--report-only"], ["--report-only", "give --write"]),
    (["check", "--report-only", "--write", "r.md", "--seed", "3"], ["--seed", "--report-only"]),
    (["check", "--migrate-records", "--preset", "smoke"], ["--preset", "--migrate-records"]),
    (["check", "--migrate-records", "L1"], ["study IDs", "--migrate-records"]),
    (["check", "--paper", "IFCA", "L1"], ["study IDs or --paper, not both"]),
    (["bench", "--units", "fig2a", "--quick", "--threads", "1"], ["--quick, --threads do nothing"]),
    (["bench", "--preset", "smoke"], ["--preset is the Figure 2 preset of --units"]),
])
def test_conflicting_or_idle_options_are_refused_before_any_work(argv, names, tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.chdir(tmp_path)
    calls = []
    for cmd in WORK:
        calls.append(_stub(monkeypatch, cmd, AssertionError("ran")))
    args = argv + (["--preset", "smoke"] if argv[0] in ("compare", "digits") else [])
    assert main(args) == 2 and not any(calls)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mixlinreg {argv[0]}: error: "), err
    for n in names:
        assert n in err, (n, err)
    assert not (tmp_path / "o").exists() and not (tmp_path / "s").exists()


def test_every_command_prints_the_config_it_read_and_the_local_files_it_did_not(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments" / "studies").mkdir(parents=True)
    for name in ("fig2a", "compare", "digits", "bench", "studies/L1"):
        (tmp_path / "experiments" / f"{name}.toml").write_text("kind = 'x'\n")
    packaged = Path(config.find("fig2a")).parent
    for cmd, path in (("reproduce", "fig2a.toml"), ("check", "studies/L1.toml"),
                      ("compare", "compare.toml"), ("digits", "digits.toml"),
                      ("bench", "bench.toml"), ("check-agreement", "fig2a.toml")):
        _stub(monkeypatch, cmd, KeyboardInterrupt())
        main(ARGV[cmd])
        out = capsys.readouterr().out
        assert f"config: {packaged / path}" in out, (cmd, out)
        assert f"note: ./experiments/{path} is not read" in out, (cmd, out)


TINY = """kind = "figure2"
name = "tiny"
layout = "R-sigma"
[grid]
m = [8]
n = [10]
d = [6]
k = [2]
R = [0.5]
sigma = [0.1]
[protocol]
steps = [0.1]
trials = 2
[presets.smoke.protocol]
trials = 1
"""


@pytest.mark.parametrize("edit, message", [
    (('layout = "R-sigma"', 'layut = "m-n"'),
     r"unknown top-level key layut; allowed: \[.*\]; did you mean 'layout'\?"),
    (('layout = "R-sigma"', 'layout = "R-sigma"\ntrials = 3'),
     r"unknown top-level key trials; .*did you mean protocol.trials \(inside \[protocol\]\)\?"),
    (("[grid]", "[Grid]"), r"unknown table \[Grid\]; allowed: .*did you mean 'grid'\?"),
    (("sigma = [0.1]", "sigm = [0.1]"), r"unknown key grid.sigm; allowed: .*did you mean 'sigma'\?"),
    (("trials = 2", "seed = 2\ntrails = 2"), "unknown key protocol.trails; .*did you mean 'trials'"),
    (("[presets.smoke.protocol]\ntrials = 1", "[presets.smoke.protocol]\ntrails = 1"),
     "unknown key presets.smoke.protocol.trails; .*did you mean 'trials'"),
    (("[presets.smoke.protocol]", "[presets.smoke.protocl]"),
     r"unknown table \[presets.smoke.protocl\]; .*did you mean 'protocol'"),
    (("[presets.smoke.protocol]", "[presets.smoek.protocol]"),
     "unknown preset presets.smoek; .*did you mean 'smoke'"),
    (("[presets.smoke.protocol]", "[presets.quick.grid]\nsigmas = [1.0]\n[presets.smoke.protocol]"),
     "unknown key presets.quick.grid.sigmas; .*did you mean 'sigma'"),  # a preset not run
    (("[presets.smoke.protocol]", '[presets.smoke]\nlayout = "m-n"\n[presets.smoke.protocol]'),
     "presets.smoke.layout: a preset overrides values inside the tables"),
    (("[presets.smoke.protocol]\ntrials = 1", "[presets]\nsmoke = 5"),
     r"presets.smoke must be a table of overrides"),
    (("[presets.smoke.protocol]", "[presets.paper.protocol]"), r"\[presets.paper\] is not allowed"),
    (("[grid]\nm = [8]\nn = [10]\nd = [6]\nk = [2]\nR = [0.5]\nsigma = [0.1]", "grid = 3"),
     r"grid must be a table \(\[grid\]\), got 3"),
    (("[grid]", "description = 3\n[grid]"), "description must be a string, got 3"),
    (("[grid]\nm = [8]", "[grid]\nm [8]"), r"is not a valid TOML file: .*\(at line 5, column 3\)"),
    (("m = [8]", "m = [8]\nm = [9]"), r"is not a valid TOML file: .*\(at line \d+, column \d+\)"),
])
def test_every_level_of_a_toml_file_is_checked(edit, message, tmp_path):
    from mixlinreg.harness import load_config

    p = tmp_path / "c.toml"
    assert edit[0] in TINY
    p.write_text(TINY.replace(*edit))
    with pytest.raises(ValueError, match=message) as err:
        load_config(p, "smoke")
    assert str(err.value).startswith(f"config {p}") and "\n" not in str(err.value)


def test_a_config_path_is_a_toml_file(tmp_path):
    (tmp_path / "x.toml").mkdir()
    with pytest.raises(ValueError, match="is a folder, not a TOML file"):
        config.find(tmp_path / "x.toml")
    (tmp_path / "g.cfg").write_text(TINY)
    with pytest.raises(ValueError, match=r"g\.cfg: a config file of your own must end in \.toml"):
        config.find(tmp_path / "g.cfg")
    (tmp_path / "u.toml").write_bytes(TINY.encode() + b"# caf\xe9\n")
    with pytest.raises(ValueError, match=r"u\.toml is not a valid TOML file: it is not UTF-8"):
        config.load(tmp_path / "u.toml", kind="figure2", schema={})
