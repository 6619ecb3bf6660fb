"""Probe cases of issue 25, classes 2 and 5 and the store side of class 3 (numbered 102, 105, 103).

* 102 work sized before it starts: huge trial counts and grids must not be materialised before
  the first unit runs; a unit too large for memory is refused up front, naming the setting and the
  estimate (cases that could allocate much run in a subprocess under ``RLIMIT_AS``);
* 103 store faults end in one line: a damaged or foreign ``manifest.json``, a file where a folder is
  expected, a full disk while a unit is written, a fresh lock of another process (the run says
  which unit, host and pid it waits on, and for how long);
* 105 store records tied to their unit: swapped units, a unit copied over another or from another
  store, a record naming another unit or store, a unit without a record, for Figure 2, a study,
  ``compare`` and ``digits``; the committed Figure 2 stores resume without recomputing.

``cases()`` yields ``(class, name, callable)``; each callable returns a label of
``probes/probe_reliability.py`` or ``(label, detail)``. Run them with::

    python probes/probe_reliability.py --only 102 103 105 -v
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {102: "work sized before it starts", 103: "store faults end in one line",
           105: "store records tied to their unit"}
KINDS = ("fig2", "study", "compare", "digits")
_TMP = Path(tempfile.mkdtemp(prefix="mlr-i25-store-"))
_VOLATILE = ("wall_time_s", "seconds")  # timings: differ between a run and its rerun


@contextlib.contextmanager
def _sandbox():
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="mlr-i25-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


# ----------------------------------------------------------------------------- small workloads
def _tiny_exp(variant=0, trials=3, folder=None):
    from mixlinreg.harness import load_config
    from mixlinreg.harness._tiny import write_tiny

    folder = Path(folder or _TMP)
    path = write_tiny(folder / f"tiny{variant}_{trials}.toml", trials=trials, seed=1 + variant)
    return load_config(path, "paper")


def _study_wl(root, variant=0):
    from mixlinreg.theory import study as st
    from mixlinreg.theory.studies import get

    s = get("L1")
    return st.workload(s, "smoke", s.config("smoke").values, variant, root)


def _compare_args(variant=0):
    import mixlinreg.compare as cmp

    sc = cmp.scenarios("smoke")[:1]
    _, proto = cmp.load_preset("smoke")
    proto["n_seeds"] = 2
    return sc, proto, cmp.workload("smoke", sc, proto, variant)


_DIGITS = dict(m=8, n=10, tau=1, rounds=2)


def _run(kind, root, variant=0):
    """Run a small workload of ``kind`` into the store root ``root``.

    Returns ``(frame, unit folder, unit names)``: ``frame`` is every unit's rows in unit order
    (timings dropped), what a rerun must reproduce."""
    root = Path(root)
    if kind == "fig2":
        from mixlinreg.harness import run_experiment

        exp = _tiny_exp(variant)
        store, _ = run_experiment(exp, root, progress=False, backend="sequential")
        return store.table(), store.units_dir, [u.id for u in exp.units()]
    if kind == "study":
        from mixlinreg import runner

        wl = _study_wl(root, variant)
        rows, _ = runner.run(wl, root, backend="sequential")
        frame = pd.concat([rows[u].assign(unit=u) for u in wl.units], ignore_index=True)
        return frame, root / wl.folder, list(wl.units)
    if kind == "compare":
        import mixlinreg.compare as cmp

        sc, _, wl = _compare_args(variant)
        df = cmp.run_compare("smoke", n_seeds=2, scenario_list=sc, store=root, seed=variant,
                             backend="sequential")
        return df.drop(columns=[c for c in _VOLATILE if c in df]), root / wl.folder, list(wl.units)
    import mixlinreg.digits as dg

    rows, rec = dg.run_digits(2, store=root, seed=variant, **_DIGITS)
    wl = dg.workload(rows.attrs["config"], 2, variant, "paper")
    frame = pd.concat([rows.drop(columns="seconds"), rec], ignore_index=True)
    return frame, root / wl.folder, list(wl.units)


_TEMPLATES = {}


def _template(kind, variant=0):
    """A finished store of ``kind`` (made once per process): (root, frame, folder, units)."""
    key = (kind, variant)
    if key not in _TEMPLATES:
        root = _TMP / f"template-{kind}-{variant}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame, folder, units = _run(kind, root, variant)
        _TEMPLATES[key] = (root, frame, folder, units)
    return _TEMPLATES[key]


def _same(a, b):
    a = a.drop(columns=[c for c in _VOLATILE if c in a]).reset_index(drop=True)
    b = b.drop(columns=[c for c in _VOLATILE if c in b]).reset_index(drop=True)
    return a.shape == b.shape and a.equals(b)


class _Log(logging.Handler):
    """Collects the ``mixlinreg`` logger's messages."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def _listen():
    """``(log lines, warnings)`` seen while the block runs."""
    log = _Log()
    logger = logging.getLogger("mixlinreg")
    logger.addHandler(log)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield log.lines, caught
    finally:
        logger.removeHandler(log)


# ----------------------------------------------------------------------------- class 105
def _swap(a, b):
    tmp = a.with_name(a.name + ".swap")
    os.replace(a, tmp)
    os.replace(b, a)
    os.replace(tmp, b)


def _rec(folder, unit):
    return folder / f"{unit}.check.json"


def _csv(folder, unit):
    return folder / f"{unit}.csv"


def _op_swap(folder, a, b, other):
    _swap(_csv(folder, a), _csv(folder, b))
    _swap(_rec(folder, a), _rec(folder, b))
    return [a, b]


def _op_swap_files_only(folder, a, b, other):
    _swap(_csv(folder, a), _csv(folder, b))
    return [a, b]


def _op_copy_over(folder, a, b, other):
    shutil.copy(_csv(folder, a), _csv(folder, b))
    shutil.copy(_rec(folder, a), _rec(folder, b))
    return [b]


def _op_copy_over_no_record(folder, a, b, other):
    shutil.copy(_csv(folder, a), _csv(folder, b))
    _rec(folder, b).unlink()
    return [b]


def _op_record_names_other_unit(folder, a, b, other):
    rec = json.loads(_rec(folder, a).read_text())
    rec["unit"] = b
    _rec(folder, a).write_text(json.dumps(rec))
    return [a]


def _op_from_other_store(folder, a, b, other):
    shutil.copy(_csv(other, a), _csv(folder, a))
    shutil.copy(_rec(other, a), _rec(folder, a))
    return [a]


def _op_from_other_store_no_record(folder, a, b, other):
    shutil.copy(_csv(other, a), _csv(folder, a))
    _rec(folder, a).unlink()
    return [a]


def _op_no_record(folder, a, b, other):
    _rec(folder, a).unlink()
    return [a]


OPS = {"two units swapped (files and records)": _op_swap,
       "two unit files swapped, records kept": _op_swap_files_only,
       "a unit and its record copied over another": _op_copy_over,
       "a unit file copied over another, its record removed": _op_copy_over_no_record,
       "a record naming another unit": _op_record_names_other_unit,
       "a unit and record copied from another store": _op_from_other_store,
       "a unit copied from another store without its record": _op_from_other_store_no_record,
       "a unit without its record (data intact)": _op_no_record}


def _tamper_case(kind, op_name):
    """Tamper with a finished store, rerun: the rows must equal the untouched run's, and each
    affected unit be named by a one-line warning that says it is recomputed (a unit without a
    record that the store can prove from its rows, as Figure 2's, may be accepted silently)."""
    from mixlinreg.runner.store import DamagedUnitWarning

    troot, clean, tfolder, units = _template(kind)
    oroot, _, ofolder, _ = _template(kind, 1)
    with _sandbox() as d:
        root = d / "s"
        shutil.copytree(troot, root)
        folder = root / tfolder.relative_to(troot)
        affected = OPS[op_name](folder, units[0], units[1], ofolder)
        with _listen() as (_, caught):
            again, _, _ = _run(kind, root)
        if not _same(clean, again):
            return "silent wrong", "the rerun's rows differ from the untouched run's"
        msgs = [str(w.message) for w in caught if issubclass(w.category, DamagedUnitWarning)]
        provable = kind == "fig2" and op_name == "a unit without its record (data intact)"
        for u in affected:
            said = [m for m in msgs if f"{u}.csv" in m]
            if not said and not provable:
                return "unclear", f"{u} accepted or redone without a line saying so"
            if said and ("\n" in said[0] or not re.search(r"recomputed|refus", said[0])):
                return "unclear", f"not one line saying what happens: {said[0][:120]}"
        return "correct result", (msgs[0][:110] if msgs else "proven from its rows")


def _record_names_other_store():
    """A toy workload's record edited to name another store (same config tag)."""
    from mixlinreg import runner
    from mixlinreg.runner.store import DamagedUnitWarning
    from mixlinreg.runner import Workload

    wl = Workload(name="toy", preset="smoke", key={"a": 1}, units=("u0", "u1"), compute=_toy_rows,
                  seed=3)
    with _sandbox() as d:
        clean, _ = runner.run(wl, d, backend="sequential")
        rec_path = d / wl.folder / "u0.check.json"
        rec = json.loads(rec_path.read_text())
        if "store" not in rec:
            return "unclear", "the record does not name its store"
        rec["store"] = "toy-smoke-000000000000"
        rec_path.write_text(json.dumps(rec))
        with _listen() as (_, caught):
            again, s = runner.run(wl, d, backend="sequential")
        if not all(clean[u].equals(again[u]) for u in wl.units):
            return "silent wrong"
        said = any(issubclass(w.category, DamagedUnitWarning) and "u0.csv" in str(w.message)
                   for w in caught)
        return ("correct result", "") if said and s["units_run"] == 1 else \
            ("unclear", "a record naming another store was accepted")


def _toy_rows(unit, ss):
    import numpy as np

    return pd.DataFrame({"unit": [unit] * 2, "x": np.random.default_rng(ss).standard_normal(2)})


def _committed(panel):
    """A committed Figure 2 store (a copy) resumes without recomputing and without a warning."""
    import mixlinreg.harness.sweep as sweep
    from mixlinreg.harness import ResultStore, run_experiment

    (src,) = sorted((ROOT / "figures" / "stores").glob(f"{panel}-paper-*"))
    real = sweep.run_unit

    def fail(*a, **k):
        raise AssertionError("a committed unit was recomputed")

    with _sandbox() as d:
        shutil.copytree(src, d / src.name)
        exp = ResultStore.open(d / src.name).exp
        sweep.run_unit = fail
        try:
            with _listen() as (_, caught):
                _, s = run_experiment(exp, d, progress=False, backend="sequential")
        except AssertionError as exc:
            return "silent wrong", str(exc)
        finally:
            sweep.run_unit = real
        changed = [p.name for p in (d / src.name / "units").iterdir()
                   if not (src / "units" / p.name).exists()
                   or (src / "units" / p.name).read_bytes() != p.read_bytes()]
        if caught or changed or s["units_skipped"] != len(exp.units()):
            return "unclear", f"warnings {[str(w.message)[:80] for w in caught]}, changed {changed[:3]}"
        return "correct result", f"{s['units_skipped']} units proven"


# ----------------------------------------------------------------------------- class 103
def _cli(argv):
    """Run the CLI in this process: (status, stderr, exception or None)."""
    from mixlinreg.cli import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = main(argv)
    except SystemExit as exc:
        return exc.code, err.getvalue(), None
    except BaseException as exc:  # noqa: BLE001 - classified by the caller
        return None, err.getvalue(), exc
    return rc, err.getvalue(), None


_RESUME = re.compile(r"rerun|resume|run .* again|move (it|them) away|remove|free", re.I)


def _one_line(argv, needles):
    """'clear error': the CLI stops with status 2 and one line naming every needle and how to
    go on; 'crash': an exception (a traceback) escaped; 'silent wrong': it reported success."""
    rc, err, exc = _cli(argv)
    if exc is not None:
        return "crash", f"{type(exc).__name__}: {str(exc)[:110]}"
    lines = [ln for ln in err.splitlines() if ln.strip() and "%|" not in ln]
    if rc in (0, None):
        return "silent wrong", "exit status 0"
    last = lines[-1] if lines else ""
    if "Traceback" in err:
        return "crash", last[:120]
    if all(n in last for n in needles) and _RESUME.search(last):
        return "clear error", last[:400]
    return "unclear", f"{last[:400]} (wanted {needles} and how to go on)"


def _fig2_cli(d, cfg, out="s"):
    return ["reproduce", "--config", str(cfg), "--preset", "paper", "--out", str(d / out),
            "--no-progress", "--backend", "sequential"]


def _fig2_store(d, trials=3):
    """A tiny Figure 2 config in ``d`` and its finished store ``d/s``: (config, exp, store)."""
    from mixlinreg.harness import run_experiment
    from mixlinreg.harness._tiny import write_tiny

    cfg = write_tiny(d / "tiny.toml", trials=trials, seed=1)
    exp = _tiny_exp(0, trials, folder=d)
    store, _ = run_experiment(exp, d / "s", progress=False, backend="sequential")
    return cfg, exp, store


def _manifest_case(kind):
    with _sandbox() as d:
        cfg, exp, store = _fig2_store(d)
        man = store.path / "manifest.json"
        if kind == "garbage":
            man.write_text("{")
        elif kind == "empty":
            man.write_text("")
        elif kind == "a JSON list":
            man.write_text("[1, 2]")
        elif kind == "a folder":
            man.unlink()
            man.mkdir()
        elif kind == "of another config":
            other = json.loads(man.read_text())
            other["hash"] = "0" * 64
            man.write_text(json.dumps(other))
        elif kind == "without a hash":
            man.write_text(json.dumps({"note": "made by hand"}))
        n = len(list(store.units_dir.glob("*.check.json")))
        res = _one_line(_fig2_cli(d, cfg), ["manifest.json"])
        if len(list(store.units_dir.glob("*.check.json"))) < n:
            return "lost", "finished units were removed"
        return res


def _file_for_folder(where):
    """A file where the store (or part of it) must be a folder."""
    with _sandbox() as d:
        if where in ("fig2 store folder", "fig2 units folder", "fig2 unit file"):
            from mixlinreg.harness._tiny import write_tiny

            cfg = write_tiny(d / "tiny.toml", trials=3, seed=1)
            exp = _tiny_exp(0, 3, folder=d)
            folder = d / "s" / f"{exp.name}-{exp.preset}-{exp.hash()[:12]}"
            if where == "fig2 unit file":
                return _unit_path_is_folder(d, cfg, exp)
            target = folder if where == "fig2 store folder" else folder / "units"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("not a folder")
            return _one_line(_fig2_cli(d, cfg), [target.name])
        if where == "study store folder":
            target = d / "st" / _study_wl(d / "st").folder
            argv = ["check", "L1", "--preset", "smoke", "--out", str(d / "o"), "--store",
                    str(d / "st"), "--no-progress"]
        elif where == "compare store folder":
            import mixlinreg.compare as cmp

            _, proto = cmp.load_preset("smoke")
            target = d / "st" / cmp.workload("smoke", cmp.scenarios("smoke"), proto).folder
            argv = ["compare", "--preset", "smoke", "--seeds", "1", "--out", str(d / "o"),
                    "--store", str(d / "st"), "--no-progress", "--backend", "sequential"]
        else:
            target, argv = _digits_store_target(d)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("not a folder")
        return _one_line(argv, [target.name])


def _digits_store_target(d):
    import mixlinreg.digits as dg

    rows, _ = dg.run_digits(1, **_DIGITS)  # nothing stored: only for the config's folder name
    target = d / "st" / dg.workload(rows.attrs["config"], 1, 0, "paper").folder
    argv = ["digits", "--seeds", "1", "--m", "8", "--n", "10", "--tau", "1", "--rounds", "2",
            "--out", str(d / "o"), "--store", str(d / "st"), "--no-progress"]
    return target, argv


def _unit_path_is_folder(d, cfg, exp):
    from mixlinreg.harness import ResultStore

    clean = _template("fig2")[1]
    store = ResultStore(d / "s", exp)
    (store.units_dir / f"{exp.units()[0].id}.csv").mkdir()
    rc, err, exc = _cli(_fig2_cli(d, cfg))
    if exc is not None:
        return "crash", f"{type(exc).__name__}: {str(exc)[:110]}"
    if rc != 0:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        return ("clear error" if exp.units()[0].id in last and _RESUME.search(last)
                else "unclear"), last[:140]
    return ("correct result", "set aside and recomputed") \
        if ResultStore(d / "s", exp).table().equals(clean) else ("silent wrong", "table differs")


@contextlib.contextmanager
def _disk_full(match, after):
    """``os.fsync`` of the ``after``-th and later temporary files whose name holds ``match``
    raises ENOSPC (what a full disk does to a write)."""
    real = os.fsync
    seen = []

    def fsync(fd):
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if match in Path(name).name:
            seen.append(name)
            if len(seen) >= after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    os.fsync = fsync
    try:
        yield seen
    finally:
        os.fsync = real


def _disk_full_case(kind, match=".csv.", after=2):
    """The disk fills while a unit (or its record, or the manifest) is written: one line that
    says what, where and how to resume; the units finished before are kept, and a rerun (disk
    freed) completes the table."""
    with _sandbox() as d:
        if kind == "fig2":
            from mixlinreg.harness._tiny import write_tiny

            cfg = write_tiny(d / "tiny.toml", trials=3, seed=1)
            exp = _tiny_exp(0, 3, folder=d)
            argv = _fig2_cli(d, cfg)
            folder = d / "s" / f"{exp.name}-{exp.preset}-{exp.hash()[:12]}" / "units"
        elif kind == "study":
            argv = ["check", "L1", "--preset", "smoke", "--out", str(d / "o"), "--store",
                    str(d / "st"), "--no-progress", "--backend", "sequential"]
            folder = d / "st" / _study_wl(d / "st").folder
        elif kind == "compare":
            import mixlinreg.compare as cmp

            _, proto = cmp.load_preset("smoke")
            folder = d / "st" / cmp.workload("smoke", cmp.scenarios("smoke"), proto).folder
            argv = ["compare", "--preset", "smoke", "--seeds", "1", "--out", str(d / "o"),
                    "--store", str(d / "st"), "--no-progress", "--backend", "sequential"]
        else:
            target, argv = _digits_store_target(d)
            argv[argv.index("--seeds") + 1] = "3"
            folder = target  # the store key holds the config, not the number of seeds
        with _disk_full(match, after) as seen:
            res = _one_line(argv, [])
        if not seen:
            return "unclear", "the simulated full disk was never reached"
        kept = len(list(folder.glob("*.check.json")))
        if match == ".csv." and kept < after - 1:
            return "lost", f"{kept} finished units left, {after - 1} were written before"
        if res[0] == "clear error" and not re.search(r"disk|space|ENOSPC", res[1], re.I):
            return "unclear", res[1]
        if res[0] == "clear error" and not (str(folder.name) in res[1] or str(folder) in res[1]
                                           or str(folder.parent.name) in res[1]):
            return "unclear", f"does not say where: {res[1]}"
        if res[0] != "clear error":
            return res
        rc, err, exc = _cli(argv)  # disk freed: the rerun finishes from the kept units
        if exc is not None or rc != 0:
            return "lost", f"the rerun failed: {exc or err.strip()[-120:]}"
        return res


def _sleeper(seconds):
    """A live process for ``seconds``, reaped as soon as it ends (a zombie would look alive)."""
    proc = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc


def _lock_case(kind, who):
    """Another process holds a fresh claim on a unit; the run waits for it, says which unit,
    host and pid it waits on and for how long, then takes it over once the claim dies."""
    from mixlinreg.runner.store import _HOST, STALE_AFTER

    troot, clean, tfolder, units = _template(kind)
    with _sandbox() as d:
        root = d / "s"
        shutil.copytree(troot, root)
        folder = root / tfolder.relative_to(troot)
        u = units[1]
        _csv(folder, u).unlink()
        _rec(folder, u).unlink()
        lock = folder / f"{u}.lock"
        proc = None
        if who == "a live process of this host":
            proc = _sleeper(3)
            lock.write_text(json.dumps(dict(host=_HOST, pid=proc.pid, time=time.time(), token="t")))
            host, pid = _HOST, proc.pid
        elif who == "another host":
            lock.write_text(json.dumps(dict(host="elsewhere", pid=4242, time=time.time(), token="t")))
            old = time.time() - STALE_AFTER + 3  # goes stale 3 s from now
            os.utime(lock, (old, old))
            host, pid = "elsewhere", 4242
        else:  # unreadable, young: its writer is given 30 s
            lock.write_text("{")
            old = time.time() - 27
            os.utime(lock, (old, old))
            host, pid = None, None
        try:
            with _listen() as (lines, caught):
                again = _run_polling(kind, root)
        finally:
            if proc is not None:
                proc.wait()
        if not _same(clean, again):
            return "silent wrong", "rows differ after waiting"
        said = [m for m in lines + [str(w.message) for w in caught] if u in m and "wait" in m]
        if not said:
            return "unclear", "waited without saying on what"
        line = said[0]
        named = (host is None or (host in line and str(pid) in line))
        if not named or not re.search(r"\d+ ?(s|h|min)\b|until|unreadable", line):
            return "unclear", f"does not say host, pid and how long: {line[:140]}"
        return "correct result", line[:140]


def _run_polling(kind, root):
    """Rerun ``kind`` on ``root`` polling every 0.1 s (so a probe waits seconds, not minutes)."""
    from mixlinreg import runner

    real = runner.run

    def fast(*a, **k):
        k["poll"] = 0.1
        return real(*a, **k)

    runner.run = fast
    try:
        if kind == "fig2":
            from mixlinreg.harness import run_experiment

            store, _ = run_experiment(_tiny_exp(0), root, progress=False, backend="sequential",
                                      poll=0.1)
            return store.table()
        return _run(kind, root)[0]
    finally:
        runner.run = real


def _study_context_lock():
    """A study unit computed through ``Context.unit`` (``UnitStore.get_or_compute``) whose claim
    another live process holds."""
    from mixlinreg.runner.store import _HOST
    from mixlinreg.theory import Context

    def compute():
        return pd.DataFrame({"x": [1.0, 2.0]})

    with _sandbox() as d:
        ctx = Context("L1", preset="smoke", store=d, params={"p": 1})
        folder = ctx._unit_dir()
        folder.mkdir(parents=True)
        proc = _sleeper(2)
        (folder / "u.lock").write_text(json.dumps(dict(host=_HOST, pid=proc.pid, time=time.time(),
                                                       token="t")))
        try:
            with _listen() as (lines, caught):
                df = ctx.unit("u", compute)
        finally:
            proc.wait()
        if not df.equals(compute()):
            return "silent wrong"
        said = [m for m in lines + [str(w.message) for w in caught] if "wait" in m and "u" in m]
        if said and str(proc.pid) in said[0] and _HOST in said[0]:
            return "correct result", said[0][:140]
        return "unclear", "waited without saying on what"


# ----------------------------------------------------------------------------- class 102
_BIG = textwrap.dedent("""
    kind = "figure2"
    name = "big"
    layout = "R-sigma"
    [grid]
    m = {m}
    n = {n}
    d = {d}
    k = [2]
    R = {R}
    sigma = {sigma}
    [protocol]
    steps = [0.1]
    n_iter = 5
    n_init = 2
    trials = {trials}
    dtype = "{dtype}"
    seed = 1
""")


def _big_cfg(d, m="[8]", n="[10]", dd="[6]", R="[0.5, 1.0]", sigma="[0.1]", trials=3,
             dtype="float32"):
    p = Path(d) / "big.toml"
    p.write_text(_BIG.format(m=m, n=n, d=dd, R=R, sigma=sigma, trials=trials, dtype=dtype))
    return p


def _limited(code, limit_gb=3.0, timeout=90, cwd=None):
    """Run ``code`` in a fresh Python with its address space capped: (rc, stdout, stderr)."""
    lim = int(limit_gb * 2**30)

    def cap():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    env = dict(os.environ, PYTHONPATH=str(ROOT), MIXLINREG_TRACEBACK="")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, preexec_fn=cap, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "", "timeout"
    return r.returncode, r.stdout, r.stderr


def _huge_count_api(what):
    """A grid of about 1e9 units: the first unit runs within seconds, in bounded memory."""
    grids = {"trials = 1e9": dict(trials=10**9),
             "1e4 m values x 1e5 trials": dict(m=str(list(range(2, 20002, 2))), trials=10**5)}
    with _sandbox() as d:
        cfg = _big_cfg(d, **grids[what])
        code = textwrap.dedent(f"""
            from mixlinreg.harness import load_config, run_experiment
            exp = load_config({str(cfg)!r}, "paper")
            store, s = run_experiment(exp, {str(d / 's')!r}, progress=False, max_units=1,
                                      backend="sequential")
            print("RUN", s["units_run"], s["units_total"], len(store.done()))
        """)
        rc, out, err = _limited(code, timeout=120)
        return _judge_limited(rc, out, err, lambda o: "RUN 1 " in o and o.split()[-1] == "1")


def _judge_limited(rc, out, err, ok):
    if rc is None:
        return "crash", "no answer within the time limit (memory growing?)"
    if rc != 0:
        last = (err.strip().splitlines() or [""])[-1]
        return "crash", last[:140]
    return ("correct result", out.strip()[-100:]) if ok(out) else ("silent wrong", out[-140:])


def _huge_count_lookup():
    """len(units) and the last unit of a 1e9-unit grid, without building the list."""
    with _sandbox() as d:
        cfg = _big_cfg(d, trials=10**9)
        code = textwrap.dedent(f"""
            from mixlinreg.harness import load_config
            exp = load_config({str(cfg)!r}, "paper")
            units = exp.units()
            last = units[len(units) - 1]
            print("N", len(units), exp.unit(last.id).trial)
        """)
        rc, out, err = _limited(code, timeout=60)
        return _judge_limited(rc, out, err, lambda o: o.split()[-2:] == [str(10**9), str(10**9 - 1)])


def _first_unit_cli(argv_of, pattern, limit_gb=3.0, timeout=150):
    """A CLI run of a huge count: 'correct result' once its first unit is stored (then stopped)."""
    with _sandbox() as d:
        argv, store = argv_of(d)
        lim = int(limit_gb * 2**30)

        def cap():
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

        env = dict(os.environ, PYTHONPATH=str(ROOT))
        p = subprocess.Popen([sys.executable, "-m", "mixlinreg.cli"] + argv, cwd=d, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             preexec_fn=cap, start_new_session=True)
        t0 = time.time()
        try:
            while time.time() - t0 < timeout and p.poll() is None:
                if list(Path(store).rglob(pattern)):
                    return "correct result", f"first unit stored after {time.time() - t0:.0f} s"
                time.sleep(0.5)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
        if p.returncode not in (None, 0, -9):
            return "crash", (err.strip().splitlines() or [""])[-1][:140]
        return "crash", "no unit stored within the time limit"


def _cli_fig2_huge(d):
    cfg = _big_cfg(d, trials=10**9)
    return ["reproduce", "--config", str(cfg), "--preset", "paper", "--out", str(d / "s"),
            "--no-progress", "--backend", "sequential"], d / "s"


def _cli_compare_huge(d):
    return ["compare", "--preset", "smoke", "--seeds", str(10**9), "--out", str(d / "o"),
            "--no-progress", "--backend", "sequential"], d / "o"


def _cli_digits_huge(d):
    return ["digits", "--seeds", str(10**9), "--m", "8", "--n", "10", "--tau", "1", "--rounds",
            "2", "--out", str(d / "o"), "--no-progress"], d / "o"


def _too_large(what, via="api"):
    """A unit that cannot fit: refused before any unit runs, naming the setting and the
    estimate (in a process capped at 3 GiB, so that the probe cannot exhaust the machine)."""
    cfgs = {"m = 100000, n = 100, d = 1000, float32": dict(m="[100000]", n="[100]", dd="[1000]"),
            "m = 20000, n = 100, d = 1000, float64": dict(m="[20000]", n="[100]", dd="[1000]",
                                                          dtype="float64"),
            "1e6 (R, sigma) cells of m = 1000, n = 100": dict(
                m="[1000]", n="[100]", dd="[10]", R=str([round(0.001 * i, 3) for i in range(1, 1001)]),
                sigma=str([round(0.001 * i, 3) for i in range(1000)]), trials=1)}
    needles = {"m = 100000, n = 100, d = 1000, float32": ("m = 100000", "GiB"),
               "m = 20000, n = 100, d = 1000, float64": ("m = 20000", "GiB"),
               "1e6 (R, sigma) cells of m = 1000, n = 100": ("cells", "GiB")}[what]
    with _sandbox() as d:
        cfg = _big_cfg(d, **cfgs[what])
        if via == "cli":
            code = (f"import sys; from mixlinreg.cli import main; sys.exit(main("
                    f"{_fig2_cli(d, cfg)!r}))")
        else:
            code = textwrap.dedent(f"""
                from mixlinreg.harness import load_config, run_experiment
                exp = load_config({str(cfg)!r}, "paper")
                try:
                    run_experiment(exp, {str(d / 's')!r}, progress=False, backend="sequential")
                except BaseException as exc:
                    print("EXC", type(exc).__name__, isinstance(exc, (MemoryError, ValueError)),
                          "|", str(exc).splitlines()[0] if str(exc) else "")
            """)
        rc, out, err = _limited(code, timeout=120)
        written = list((d / "s").rglob("*.csv")) if (d / "s").exists() else []
        if rc is None:
            return "crash", "no answer within the time limit"
        if written:
            return "silent wrong", "a unit was written"
        if via == "cli":
            last = (err.strip().splitlines() or [""])[-1]
            if rc == 0:
                return "silent wrong", "exit status 0"
            if "Traceback" in err:
                return "crash", last[:140]
            return ("clear error" if all(n in last for n in needles) else "unclear"), last[:160]
        if "EXC" not in out:
            return ("crash", (err.strip().splitlines() or [""])[-1][:140]) if rc else \
                ("silent wrong", "no error")
        _, name, user, msg = re.match(r"EXC (\S+) (\S+) \| ?(.*)", out.strip().splitlines()[-1]) \
            .group(0, 1, 2, 3)
        if user != "True":
            return "crash", f"{name}: {msg[:120]}"
        return ("clear error" if all(n in msg for n in needles) else "unclear"), f"{name}: {msg[:150]}"


# ----------------------------------------------------------------------------- the list
def cases():
    for kind in KINDS:
        for op in OPS:
            yield 105, f"{kind}: {op}", (lambda kind=kind, op=op: _tamper_case(kind, op))
    yield 105, "toy workload: a record naming another store", _record_names_other_store
    for panel in ("fig2a", "fig2b", "fig2c", "fig2d"):
        yield 105, f"committed {panel} store resumes without recomputing", \
            (lambda panel=panel: _committed(panel))

    for kind in ("garbage", "empty", "a JSON list", "a folder", "of another config",
                 "without a hash"):
        yield 103, f"fig2: manifest.json {kind}", (lambda kind=kind: _manifest_case(kind))
    for where in ("fig2 store folder", "fig2 units folder", "fig2 unit file", "study store folder",
                  "compare store folder", "digits store folder"):
        name = ("a folder where a fig2 unit file must be" if where == "fig2 unit file"
                else f"a file where the {where} must be")
        yield 103, name, (lambda where=where: _file_for_folder(where))
    for kind in KINDS:
        yield 103, f"{kind}: disk full while writing a unit", \
            (lambda kind=kind: _disk_full_case(kind))
    yield 103, "fig2: disk full while writing a unit's record", \
        lambda: _disk_full_case("fig2", match=".check.json.", after=2)
    yield 103, "fig2: disk full while writing manifest.json", \
        lambda: _disk_full_case("fig2", match="manifest.json.", after=1)
    for kind in KINDS:
        yield 103, f"{kind}: a fresh lock of a live process of this host", \
            (lambda kind=kind: _lock_case(kind, "a live process of this host"))
    yield 103, "fig2: a fresh lock of another host", lambda: _lock_case("fig2", "another host")
    yield 103, "study: a fresh unreadable lock", lambda: _lock_case("study", "unreadable")
    yield 103, "study Context.unit: a fresh lock of a live process", _study_context_lock

    for what in ("trials = 1e9", "1e4 m values x 1e5 trials"):
        yield 102, f"fig2 API: {what}, first unit", (lambda what=what: _huge_count_api(what))
    yield 102, "fig2: len(units) and the last unit of 1e9 units", _huge_count_lookup
    yield 102, "fig2 CLI: trials = 1e9 starts its first unit", \
        lambda: _first_unit_cli(_cli_fig2_huge, "*.check.json")
    yield 102, "compare CLI: --seeds 1e9 starts its first unit", \
        lambda: _first_unit_cli(_cli_compare_huge, "*.check.json")
    yield 102, "digits CLI: --seeds 1e9 starts its first unit", \
        lambda: _first_unit_cli(_cli_digits_huge, "*.check.json")
    for what in ("m = 100000, n = 100, d = 1000, float32", "m = 20000, n = 100, d = 1000, float64",
                 "1e6 (R, sigma) cells of m = 1000, n = 100"):
        yield 102, f"fig2 API: a unit too large ({what})", (lambda what=what: _too_large(what))
    yield 102, "fig2 CLI: a unit too large (m = 100000, n = 100, d = 1000)", \
        lambda: _too_large("m = 100000, n = 100, d = 1000, float32", via="cli")


if __name__ == "__main__":
    for cls, name, fn in cases():
        t0 = time.time()
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001
            res = ("crash", f"{type(exc).__name__}: {exc}")
        print(f"[{cls}] {name}: {res} ({time.time() - t0:.1f} s)", flush=True)
