"""Probe cases of issue 11, classes 2-5: result stores, several processes, names, output folders.

``cases_store_paths()`` returns ``[(class, name, callable), ...]``; each callable runs its case in a
fresh temporary folder and returns one of ``"clear error"``, ``"correct result"``, ``"unclear"``,
``"silent wrong"``, ``"crash"``, ``"lost"`` (judged from what it observes: the table against a clean
run, the warning or error text, the files written). The probe script of issue 11 imports it; run
alone it prints the outcome of every case and a table per class::

    python probes/probe_cases_store.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections import Counter
from pathlib import Path

import pandas as pd

from mixlinreg.harness._tiny import tiny_text, write_tiny

CLASSES = {2: "result store proves its units", 3: "several processes on one store",
           4: "names never become paths", 5: "one output folder, checked first"}


@contextlib.contextmanager
def _sandbox():
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="mlr-probe-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


def _cfg(folder, name="tiny", trials=3, seed=1, fname="tiny.toml", extra=""):
    return write_tiny(Path(folder) / fname, name=name, trials=trials, seed=seed, extra=extra)


def _exp(folder, **kw):
    from mixlinreg.harness import load_config

    return load_config(_cfg(folder, **kw), "paper")


_CLEAN = {}


def _clean_table(trials=3, seed=1):
    """The table of an uninterrupted run of the tiny config (computed once per process)."""
    from mixlinreg.harness import run_experiment

    key = (trials, seed)
    if key not in _CLEAN:
        with tempfile.TemporaryDirectory(prefix="mlr-probe-clean-") as d:
            store, _ = run_experiment(_exp(d, trials=trials, seed=seed), Path(d) / "s",
                                      progress=False)
            _CLEAN[key] = store.table()
    return _CLEAN[key]


def _cli(argv):
    """Run the CLI in-process: (status, stderr text, exception or None)."""
    from mixlinreg.cli import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(argv)
    except SystemExit as exc:
        return exc.code, err.getvalue(), None
    except Exception as exc:  # noqa: BLE001 - classified by the caller
        return None, err.getvalue(), exc
    return rc, err.getvalue(), None


def _user_error(argv, *needles):
    """'clear error' if the CLI refuses with a message holding every needle, else what it did."""
    rc, err, exc = _cli(argv)
    text = err if exc is None else f"{type(exc).__name__}: {exc}"
    if exc is not None and not isinstance(exc, (ValueError, TypeError, FileNotFoundError)):
        return "crash"
    if exc is None and rc in (0, None):
        return "silent wrong"
    return "clear error" if all(n in text for n in needles) else "unclear"


# ------------------------------------------------------------------------------ class 2
def _damage_cases():
    def cut_half(p):
        b = p.read_bytes()
        p.write_bytes(b[: len(b) // 2])

    def cut_last_line(p):
        p.write_bytes(b"".join(p.read_bytes().splitlines(keepends=True)[:-1]))

    def empty(p):
        p.write_bytes(b"")

    def garbage(p):
        p.write_bytes(os.urandom(500))

    def text_garbage(p):
        p.write_text("hello\nworld\n")

    def wrong_columns(p):
        h, rest = p.read_text().split("\n", 1)
        p.write_text(h.replace("dist_nearest", "dist") + "\n" + rest)

    def dropped_column(p):
        df = pd.read_csv(p, dtype=str)
        p.write_text(df.drop(columns="loss").to_csv(index=False))

    def extra_row(p):
        lines = p.read_bytes().splitlines(keepends=True)
        p.write_bytes(b"".join(lines + [lines[-1]]))

    def other_unit(p):
        shutil.copy(sorted(q for q in p.parent.glob("*.csv") if q != p)[0], p)

    def changed_value(p):
        df = pd.read_csv(p, dtype=str)
        df.loc[0, "dist_nearest"] = "0.5"
        p.write_text(df.to_csv(index=False))

    def nul_bytes(p):
        b = bytearray(p.read_bytes())
        b[len(b) // 3: len(b) // 3 + 64] = b"\0" * 64
        p.write_bytes(bytes(b))

    kinds = dict(cut_half=cut_half, cut_last_line=cut_last_line, empty=empty, garbage=garbage,
                 text_garbage=text_garbage, wrong_columns=wrong_columns,
                 dropped_column=dropped_column, extra_row=extra_row, other_unit=other_unit,
                 changed_value=changed_value, nul_bytes=nul_bytes)
    cases = []
    for kind, fn in kinds.items():
        for legacy in (False, True):
            if kind == "changed_value" and legacy:
                continue  # a unit without checksum is checked by shape and config only
            cases.append((2, f"unit {kind}" + (" (legacy, no record)" if legacy else ""),
                          lambda fn=fn, legacy=legacy: _harness_damage(fn, legacy)))
    return cases


def _harness_damage(damage, legacy):
    from mixlinreg.harness import run_experiment, success_table
    from mixlinreg.runner.store import DamagedUnitWarning

    clean = _clean_table()
    with _sandbox() as d:
        exp = _exp(d)
        store, _ = run_experiment(exp, d / "s", progress=False)
        path = store.unit_path(exp.units()[1].id)
        if legacy:
            for r in store.units_dir.glob("*.check.json"):
                r.unlink()
        damage(path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store, summary = run_experiment(exp, d / "s", progress=False)
        named = any(issubclass(w.category, DamagedUnitWarning) and path.name in str(w.message)
                    for w in caught)
        table = store.table()
        same = table.equals(clean)
        trials_ok = (success_table(table, exp.protocol["success_plus"])["trials"] == 3).all()
        if same and trials_ok:
            return "correct result" if named else "unclear"
        return "silent wrong"


def _manifest_damage():
    from mixlinreg.harness import run_experiment

    with _sandbox() as d:
        exp = _exp(d, trials=1)
        store, _ = run_experiment(exp, d / "s", progress=False)
        (store.path / "manifest.json").write_text("{")
        try:
            run_experiment(exp, d / "s", progress=False)
        except RuntimeError as exc:
            return "clear error" if "manifest.json" in str(exc) else "unclear"
        return "silent wrong"


def _record_damage(kind):
    from mixlinreg.harness import run_experiment

    clean = _clean_table()
    with _sandbox() as d:
        exp = _exp(d)
        store, _ = run_experiment(exp, d / "s", progress=False)
        rec = store.units_dir / f"{exp.units()[0].id}.check.json"
        if kind == "garbage":
            rec.write_text("{{{")
        elif kind == "other tag":
            r = json.loads(rec.read_text())
            r["tag"] = "0" * 64
            rec.write_text(json.dumps(r))
        elif kind == "other rows":
            r = json.loads(rec.read_text())
            r["rows"] += 1
            rec.write_text(json.dumps(r))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store, _ = run_experiment(exp, d / "s", progress=False)
        named = any(rec.name.replace(".check.json", ".csv") in str(w.message) for w in caught)
        if store.table().equals(clean):
            return "correct result" if named else "unclear"
        return "silent wrong"


def _other_config_unit(with_record):
    from mixlinreg.harness import run_experiment

    clean = _clean_table()
    with _sandbox() as d:
        exp, other = _exp(d, seed=1), _exp(d, seed=2, fname="o.toml")
        a, _ = run_experiment(exp, d / "a", progress=False)
        b, _ = run_experiment(other, d / "b", progress=False)
        u = exp.units()[0].id
        shutil.copy(b.units_dir / f"{u}.csv", a.units_dir / f"{u}.csv")
        if with_record:
            shutil.copy(b.units_dir / f"{u}.check.json", a.units_dir / f"{u}.check.json")
        else:
            (a.units_dir / f"{u}.check.json").unlink()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a, _ = run_experiment(exp, d / "a", progress=False)
        named = any(f"{u}.csv" in str(w.message) for w in caught)
        if a.table().equals(clean):
            return "correct result" if named else "unclear"
        return "silent wrong"


def _study_damage(kind):
    from mixlinreg.runner.store import DamagedUnitWarning
    from mixlinreg.theory import Context

    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [0.1, 0.2, 0.3], "y": ["a", "b", "c"]})

    with _sandbox() as d:
        first = Context("L1", preset="smoke", store=d, params={"p": 1}).unit("u", compute)
        (path,) = d.rglob("u.csv")
        if kind == "cut":
            path.write_bytes(path.read_bytes()[:-9])
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "ragged (legacy)":
            path.with_name("u.check.json").unlink()
            path.write_text("x,y\n1,2,3\n4\n")
        elif kind == "changed value":
            path.write_text(path.read_text().replace("0.2", "0.7"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = Context("L1", preset="smoke", store=d, params={"p": 1}).unit("u", compute)
        named = any(issubclass(w.category, DamagedUnitWarning) and "u.csv" in str(w.message)
                    for w in caught)
        if again.equals(first) and len(calls) == 2:
            return "correct result" if named else "unclear"
        return "silent wrong"


def _compare_damage():
    import mixlinreg.compare as cmp
    from mixlinreg.runner.store import DamagedUnitWarning

    with _sandbox() as d:
        sc = cmp.scenarios("smoke")[:1]
        first = cmp.run_compare("smoke", n_seeds=1, scenario_list=sc, store=d)
        (path,) = d.rglob("*_s0000.csv")
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = cmp.run_compare("smoke", n_seeds=1, scenario_list=sc, store=d)
        named = any(issubclass(w.category, DamagedUnitWarning) and path.name in str(w.message)
                    for w in caught)
        cols = [c for c in first.columns if c != "wall_time_s"]
        if again[cols].equals(first[cols]):
            return "correct result" if named else "unclear"
        return "silent wrong"


def _committed_store():
    from mixlinreg.harness.store import ResultStore

    root = Path(__file__).resolve().parents[1] / "figures" / "stores"
    dirs = sorted(root.glob("fig2a-paper-*"))
    if not dirs:
        return "unclear"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = ResultStore.open(dirs[0])
        ok = len(store.done()) == len(store.exp.units()) and not store.units.damaged()
    return "correct result" if ok else "silent wrong"


# ------------------------------------------------------------------------------ class 3
def _n_reproduce_processes(n):
    from mixlinreg.harness import ResultStore, run_experiment

    clean = _clean_table(trials=4)
    with _sandbox() as d:
        cfg = _cfg(d, trials=4)
        exp = _exp(d, trials=4)
        run_experiment(exp, d / "s", progress=False, max_units=1)
        args = [sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", str(cfg),
                "--preset", "paper", "--out", str(d / "s"), "--no-progress", "--backend",
                "sequential"]
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, cwd=d) for _ in range(n)]
        outs = [p.communicate(timeout=600)[0] for p in procs]
        if any(p.returncode != 0 for p in procs) or any("Traceback" in o for o in outs):
            return "crash"
        runs = sum(int(o.split(" units run")[0].rsplit(" ", 1)[-1]) for o in outs)
        store = ResultStore(d / "s", exp)
        if not store.table().equals(clean):
            return "silent wrong"
        leftovers = list(store.units_dir.glob("*.lock")) + list(store.units_dir.glob(".*.tmp"))
        return "correct result" if runs == len(exp.units()) - 1 and not leftovers else "unclear"


_WORKER = textwrap.dedent("""
    import os, sys, time
    import pandas as pd
    from mixlinreg.runner.store import UnitStore
    store = UnitStore(sys.argv[1])
    for i in range(5):
        def compute(i=i):
            with open(sys.argv[2], "a") as fh:
                fh.write(f"{i}\\n")
            time.sleep(0.1)
            return pd.DataFrame({"i": [i] * 2, "x": [i / 3, i / 7]})
        store.get_or_compute(f"u{i}", compute, poll=0.05)
""")


def _unit_store_processes(n):
    with _sandbox() as d:
        procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(d / "u"), str(d / "log")],
                                  stderr=subprocess.PIPE, text=True) for _ in range(n)]
        errs = [p.communicate(timeout=300)[1] for p in procs]
        if any(p.returncode for p in procs):
            return "crash" if any("Traceback" in e for e in errs) else "unclear"
        computed = sorted((d / "log").read_text().split())
        return "correct result" if computed == [str(i) for i in range(5)] else "unclear"


def _two_check_processes():
    with _sandbox() as d:
        def args(out):
            return [sys.executable, "-m", "mixlinreg.cli", "check", "T1", "--preset", "smoke",
                    "--out", str(out), "--no-progress"]

        procs = [subprocess.Popen(args(d / "shared"), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=600)[0] for p in procs]
        if any(p.returncode for p in procs) or any("Traceback" in o for o in outs):
            return "crash"
        subprocess.run(args(d / "alone"), check=True, capture_output=True)
        shared = json.loads((d / "shared" / "T1_smoke.json").read_text())
        alone = json.loads((d / "alone" / "T1_smoke.json").read_text())
        if shared["numbers"] != alone["numbers"] or shared["verdict"] != alone["verdict"]:
            return "silent wrong"
        # one store per run of the study's units: the study's and (T1 has one) its control's;
        # each shared store holds the same units as the single run's, and nothing half-done
        shared_stores = sorted(f.name for f in (d / "shared").glob("T1-smoke-*"))
        alone_stores = sorted(f.name for f in (d / "alone").glob("T1-smoke-*"))
        if not shared_stores or shared_stores != alone_stores:
            return "unclear"
        for name in shared_stores:
            got = sorted(f.name for f in (d / "shared" / name).glob("*.csv"))
            want = sorted(f.name for f in (d / "alone" / name).glob("*.csv"))
            folder = d / "shared" / name
            if got != want or list(folder.glob("*.lock")) + list(folder.glob(".*.tmp")):
                return "unclear"
        return "correct result"


def _stale_lock(kind):
    from mixlinreg.harness import run_experiment
    from mixlinreg.runner.store import _HOST

    clean = _clean_table()
    with _sandbox() as d:
        exp = _exp(d)
        store, _ = run_experiment(exp, d / "s", progress=False, max_units=1)
        lock = store.units_dir / f"{exp.units()[1].id}.lock"
        if kind == "dead pid":
            p = subprocess.Popen(["true"])
            p.wait()
            lock.write_text(json.dumps(dict(host=_HOST, pid=p.pid, time=0, token="t")))
        elif kind == "old, other host":
            lock.write_text(json.dumps(dict(host="elsewhere", pid=1, time=0, token="t")))
            os.utime(lock, (time.time() - 3 * 86400,) * 2)
        elif kind == "empty, old":
            lock.write_text("")
            os.utime(lock, (time.time() - 3600,) * 2)
        store, _ = run_experiment(exp, d / "s", progress=False, poll=0.1)
        if not store.table().equals(clean):
            return "silent wrong"
        return "correct result" if not lock.exists() else "unclear"


def _sigkill_resume():
    import signal

    from mixlinreg.harness import ResultStore

    clean = _clean_table(trials=4)
    with _sandbox() as d:
        cfg = _cfg(d, trials=4)
        exp = _exp(d, trials=4)
        args = [sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", str(cfg),
                "--preset", "paper", "--out", str(d / "s"), "--no-progress", "--backend",
                "sequential"]
        units = ResultStore(d / "s", exp).units_dir
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        while time.time() < deadline and not list(units.glob("*.check.json")):
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode:
            return "crash"
        return "correct result" if ResultStore(d / "s", exp).table().equals(clean) else "lost"


def _live_temp_file_survives():
    from mixlinreg.harness import ResultStore
    from mixlinreg.runner.store import _HOST

    with _sandbox() as d:
        exp = _exp(d)
        store = ResultStore(d / "s", exp)
        live = store.units_dir / f".x.csv.{_HOST}.{os.getpid()}.abc.tmp"
        live.write_text("partial")
        ResultStore(d / "s", exp, clean=True)
        return "correct result" if live.exists() else "lost"


# ------------------------------------------------------------------------------ class 4
BAD_NAMES = ["mygrids/conc", "../../x", "..", ".", "/abs/x", "a b", "x\\y", ".hidden", "-dash",
             "a/../b", "x" * 101, ""]


def _bad_config_name(name):
    with _sandbox() as d:
        (d / "cfg").mkdir()
        cfg = _cfg(d / "cfg", name=name)
        out = d / "a" / "out"
        res = _user_error(["reproduce", "--config", str(cfg), "--preset", "paper", "--out",
                           str(out), "--no-progress"], "plain name")
        written = [p for p in d.rglob("*") if p.is_file() and p.parent != d / "cfg"]
        outside = [p for p in d.rglob("*") if not str(p).startswith(str(d / "a")) and
                   not str(p).startswith(str(d / "cfg"))]
        if written or outside:
            return "silent wrong"
        return res


def _bad_preset(name):
    with _sandbox() as d:
        cfg = _cfg(d, extra=f'\n[presets."{name}"]\ntrials = 1\n')
        return _user_error(["reproduce", "--config", str(cfg), "--preset", name, "--out",
                            str(d / "out"), "--no-progress"], "preset")


def _bad_study_id(sid):
    with _sandbox() as d:
        res = _user_error(["check", sid, "--out", str(d / "out"), "--preset", "smoke"], "unknown")
        from mixlinreg.theory import Context

        try:
            Context(sid, store=d)
        except ValueError as exc:
            return res if "plain name" in str(exc) else "unclear"
        return "silent wrong"


def _stem_not_plain():
    with _sandbox() as d:
        p = d / "two words.toml"
        p.write_text(tiny_text(name="x", trials=1, seed=1).replace('name = "x"', ""))
        return _user_error(["reproduce", "--config", str(p), "--out", str(d / "o"),
                            "--preset", "paper"], "set name")


def _handmade_experiment(name):
    from mixlinreg.harness import ResultStore
    from mixlinreg.harness.experiment import Experiment

    with _sandbox() as d:
        e = _exp(d)
        bad = Experiment(name=name, description="", layout="R-sigma", preset="paper", grid=e.grid,
                         protocol=e.protocol)
        try:
            ResultStore(d / "out", bad)
        except ValueError as exc:
            return "clear error" if "plain name" in str(exc) else "unclear"
        return "silent wrong"


# ------------------------------------------------------------------------------ class 5
def _command_output(argv, module, func, opt, bad):
    """The command must refuse the bad output before its work function runs."""
    import importlib

    mod = importlib.import_module(module)
    real = getattr(mod, func)
    started = []

    def spy(*a, **k):
        started.append(1)
        raise RuntimeError("work started")

    setattr(mod, func, spy)
    try:
        with _sandbox() as d:
            f = d / "a_file"
            f.write_text("x")
            (d / "a_dir").mkdir()
            target = {"a file": f, "under a file": f / "sub" / "x.csv", "a folder": d / "a_dir"}[bad]
            args = [str(target) if a == "OUT" else str(d / "good") if a == "GOOD" else a
                    for a in argv]
            res = _user_error(args, opt)
            if started:
                return "lost"  # work ran before the output was checked
            return res
    finally:
        setattr(mod, func, real)


COMMANDS = {
    "reproduce --out": (["reproduce", "fig2a", "--preset", "smoke", "--out", "OUT"],
                        "mixlinreg.harness", "run_experiment", "--out", ("a file", "under a file")),
    "reproduce --figures": (["reproduce", "fig2a", "--preset", "smoke", "--out", "GOOD",
                             "--figures", "OUT"], "mixlinreg.harness", "run_experiment",
                            "--figures", ("a file", "under a file")),
    "check --out": (["check", "L1", "--preset", "smoke", "--out", "OUT"], "mixlinreg.theory",
                    "run_study", "--out", ("a file", "under a file")),
    "check --store": (["check", "L1", "--preset", "smoke", "--out", "GOOD", "--store", "OUT"],
                      "mixlinreg.theory", "run_study", "--store", ("a file", "under a file")),
    "check --write": (["check", "L1", "--preset", "smoke", "--out", "GOOD", "--write", "OUT"],
                      "mixlinreg.theory", "run_study", "--write", ("a folder", "under a file")),
    "compare --out": (["compare", "--preset", "smoke", "--out", "OUT"], "mixlinreg.compare",
                      "run_compare", "--out", ("a file", "under a file")),
    "compare --store": (["compare", "--preset", "smoke", "--out", "GOOD", "--store", "OUT"],
                        "mixlinreg.compare", "run_compare", "--store", ("a file",)),
    "digits --out": (["digits", "--out", "OUT"], "mixlinreg.digits", "run_digits", "--out",
                     ("a file", "under a file")),
    "check-agreement --csv": (["check-agreement", "fig2a", "--candidate", "early-stop", "--csv",
                               "OUT"], "mixlinreg.harness.agreement", "check_agreement", "--csv",
                              ("a folder", "under a file")),
    "bench --csv": (["bench", "--quick", "--csv", "OUT"], "mixlinreg.bench", "run_benchmark",
                    "--csv", ("a folder", "under a file")),
}


def _reproduce_out_holds_everything():
    with _sandbox() as d:
        cfg = _cfg(d, trials=1)
        rc, err, exc = _cli(["reproduce", "--config", str(cfg), "--preset", "paper", "--out", "res",
                             "--no-progress", "--backend", "sequential"])
        if exc is not None or rc != 0:
            return "crash"
        top = sorted(p.name for p in d.iterdir())
        made = {p.name for p in (d / "res").iterdir()}
        ok = top == ["res", "tiny.toml"] and {"tiny_paper.png", "tiny_paper_summary.csv"} <= made
        return "correct result" if ok else "silent wrong"


def _resume(which):
    calls = []
    if which == "compare":
        import mixlinreg.compare as mod

        name, real = "_run_one", mod._run_one
    else:
        import mixlinreg.digits as mod

        name, real = "_one_seed", mod._one_seed

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    setattr(mod, name, counting)
    try:
        with _sandbox() as d:
            if which == "compare":
                sc = mod.scenarios("smoke")[:1]
                a = mod.run_compare("smoke", n_seeds=1, scenario_list=sc, store=d)
                n = len(calls)
                b = mod.run_compare("smoke", n_seeds=1, scenario_list=sc, store=d)
                cols = [c for c in a.columns if c != "wall_time_s"]
                same = a[cols].equals(b[cols])
            else:
                kw = dict(m=8, n=10, tau=1, rounds=2, store=d)
                a, _ = mod.run_digits(1, **kw)
                n = len(calls)
                b, _ = mod.run_digits(1, **kw)
                same = a.drop(columns="seconds").equals(b.drop(columns="seconds"))
            if not same:
                return "silent wrong"
            return "correct result" if len(calls) == n and list(d.rglob("*.check.json")) \
                else "unclear"
    finally:
        setattr(mod, name, real)


# ------------------------------------------------------------------------------ the list
def cases_store_paths():
    """``[(class, name, callable)]`` for issue 11 classes 2-5 (see the module docstring)."""
    cases = _damage_cases()
    cases += [(2, "manifest.json garbage", _manifest_damage)]
    cases += [(2, f"checksum record {k}", lambda k=k: _record_damage(k))
              for k in ("garbage", "other tag", "other rows")]
    cases += [(2, "unit of another config" + (" with its record" if r else " (legacy)"),
               lambda r=r: _other_config_unit(r)) for r in (True, False)]
    cases += [(2, f"study unit {k}", lambda k=k: _study_damage(k))
              for k in ("cut", "empty", "ragged (legacy)", "changed value")]
    cases += [(2, "compare unit cut in half", _compare_damage),
              (2, "committed panel-(a) store proven without recomputing", _committed_store)]
    cases += [(3, f"{n} reproduce processes resume one store", lambda n=n: _n_reproduce_processes(n))
              for n in (2, 4)]
    cases += [(3, "4 processes on one unit store (check/compare/digits path)",
               lambda: _unit_store_processes(4)),
              (3, "2 check processes on one store (T1 smoke)", _two_check_processes)]
    cases += [(3, f"stale lock: {k}", lambda k=k: _stale_lock(k))
              for k in ("dead pid", "old, other host", "empty, old")]
    cases += [(3, "SIGKILL mid-run, rerun", _sigkill_resume),
              (3, "a live process's temporary file survives the start-up cleaning",
               _live_temp_file_survives)]
    cases += [(4, f"config name {n!r}", lambda n=n: _bad_config_name(n)) for n in BAD_NAMES]
    cases += [(4, f"preset {p!r}", lambda p=p: _bad_preset(p)) for p in ("../up", "a/b")]
    cases += [(4, f"study ID {s!r}", lambda s=s: _bad_study_id(s)) for s in ("../L1", "L1/x", "..")]
    cases += [(4, "config file stem with a space, no name", _stem_not_plain)]
    cases += [(4, f"hand-made Experiment name {n!r}", lambda n=n: _handmade_experiment(n))
              for n in ("../x", "a/b")]
    for label, (argv, module, func, opt, bads) in COMMANDS.items():
        for bad in bads:
            cases.append((5, f"{label} is {bad}",
                          lambda argv=argv, module=module, func=func, opt=opt, bad=bad:
                          _command_output(argv, module, func, opt, bad)))
    cases += [(5, "reproduce --out DIR: store, summaries and figures all in DIR",
               _reproduce_out_holds_everything),
              (5, "compare resumes from its store", lambda: _resume("compare")),
              (5, "digits resumes from its store", lambda: _resume("digits"))]
    return cases


OUTCOMES = ("clear error", "correct result", "unclear", "silent wrong", "crash", "lost")


def run_cases(cases=None, verbose=True):
    """Run the cases; returns a DataFrame (class, case, outcome, seconds, detail)."""
    rows = []
    for cls, name, fn in (cases or cases_store_paths()):
        t0 = time.perf_counter()
        detail = ""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome = fn()
        except Exception as exc:  # noqa: BLE001 - an unexpected exception is a crash
            outcome, detail = "crash", f"{type(exc).__name__}: {exc}"
        rows.append(dict(cls=cls, case=name, outcome=outcome,
                         seconds=round(time.perf_counter() - t0, 2), detail=detail))
        if verbose:
            print(f"[{cls}] {name}: {outcome} {detail}", flush=True)
    return pd.DataFrame(rows)


def table(results):
    """class | cases tried | one column per outcome."""
    lines = ["| class | cases tried | " + " | ".join(OUTCOMES) + " |",
             "|---|---|" + "---|" * len(OUTCOMES)]
    for cls, g in results.groupby("cls"):
        c = Counter(g["outcome"])
        lines.append(f"| {cls}. {CLASSES[cls]} | {len(g)} | "
                     + " | ".join(str(c.get(o, 0)) for o in OUTCOMES) + " |")
    c = Counter(results["outcome"])
    lines.append(f"| all | {len(results)} | " + " | ".join(str(c.get(o, 0)) for o in OUTCOMES)
                 + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    res = run_cases()
    print()
    print(table(res))
    sys.exit(0 if not res["outcome"].isin(["silent wrong", "crash", "lost"]).any() else 1)
