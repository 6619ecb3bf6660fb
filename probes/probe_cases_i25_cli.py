"""Probe cases of issue 25, the command line and its configs: classes 3 (CLI side), 6 and 7 (TOML).

``cases()`` yields ``(class, name, callable)``; each callable runs its case in a fresh temporary
folder and returns one of the outcome labels of ``probes/probe_reliability.py`` (or
``(label, detail)``). Issue 25's class c is numbered 100 + c::

    python probes/probe_reliability.py --only 103 106 107 -v

* 103: a fault mid-run (Ctrl-C, a missing optional dependency, a closed pipe, a full disk, a killed
  worker, a bug) ends in one line with the right exit status (130 for Ctrl-C), says what was kept
  and how to resume; ``MIXLINREG_TRACEBACK=1`` still shows the traceback;
* 106: an option or config key that would be ignored, or would make the command do something else
  than asked, is refused in one line naming it (with the nearest known key for a typo); a local
  file that looks like a packaged config is never used silently; every run names the config file
  it read;
* 107: a TOML file that does not parse is named, with the word TOML and the line and column.

Cases that send a real signal run the command in a child process (``python -m mixlinreg.cli``
after a ``READY`` marker, so the signal never lands in the import); the others call
:func:`mixlinreg.cli.main` in this process.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {103: "faults mid-run end in one line (CLI)", 106: "the CLI never silently does something else",
           107: "a TOML file that does not parse is named"}

class _Tiny:
    """The harness's tiny config (``mixlinreg.harness._tiny``) with a smoke preset:
    ``TINY.format(trials=N)`` as the cases use it."""

    @staticmethod
    def format(trials):
        from mixlinreg.harness._tiny import tiny_text

        return tiny_text(trials=trials) + "[presets.smoke.protocol]\ntrials = 2\n"


TINY = _Tiny()


# ------------------------------------------------------------------------------------ helpers
@contextlib.contextmanager
def _sandbox():
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="mlr-cli-probe-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


@contextlib.contextmanager
def _patched(target, value):
    """Replace the attribute ``module.path:attr`` for the duration."""
    import importlib

    mod_name, attr = target.split(":")
    mod = importlib.import_module(mod_name)
    old = getattr(mod, attr)
    setattr(mod, attr, value)
    try:
        yield
    finally:
        setattr(mod, attr, old)


@contextlib.contextmanager
def _blocked(*modules):
    """Make ``import module`` fail as if the package were not installed."""
    old = {m: sys.modules.get(m, "absent") for m in modules}
    for m in modules:
        sys.modules[m] = None
    try:
        yield
    finally:
        for m, v in old.items():
            if v == "absent":
                sys.modules.pop(m, None)
            else:
                sys.modules[m] = v


@contextlib.contextmanager
def _env(**kw):
    old = {k: os.environ.get(k) for k in kw}
    os.environ.update({k: v for k, v in kw.items() if v is not None})
    for k, v in kw.items():
        if v is None:
            os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cli(argv):
    """Run the CLI in this process: (status, stdout, stderr, escaped exception or None)."""
    from mixlinreg.cli import main

    out, err = io.StringIO(), io.StringIO()
    exc = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
        except BaseException as e:  # noqa: BLE001 - what a user would see as a traceback
            code, exc = 1, e
    return code, out.getvalue(), err.getvalue(), exc


def _last(err):
    lines = [x for x in err.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def _one_line(code, err, exc, needles, codes=(2,), quiet_out=None):
    """The judgement of a command owed a one-line error with an exit status in ``codes``."""
    if exc is not None:
        return "crash", f"{type(exc).__name__} escaped main: {str(exc)[:100]}"
    if "Traceback" in err:
        return "crash", _last(err)[:110]
    if code == 0:
        return "silent wrong", "exit status 0"
    last = _last(err)
    if code in codes and all(re.search(n, last) for n in needles):
        return "clear error", f"[{code}] {last[:150]}"
    return "unclear", f"status {code}, wanted {codes} naming {needles}: {last[:120]}"


#: the functions that do a command's work: a refusal must come before any of them is called
WORK = ("mixlinreg.harness:run_experiment", "mixlinreg.theory:run_study",
        "mixlinreg.compare:run_compare", "mixlinreg.digits:run_digits",
        "mixlinreg.bench:run_benchmark", "mixlinreg.bench:bench_units",
        "mixlinreg.harness.agreement:check_agreement", "mixlinreg.teach:write_views")


class _Ran(Exception):
    pass


@contextlib.contextmanager
def _no_work(calls):
    """Replace every function of :data:`WORK` by one that records the call and stops."""
    with contextlib.ExitStack() as stack:
        for target in WORK:
            def ran(*a, _t=target, **k):
                calls.append(_t)
                raise _Ran(_t)
            stack.enter_context(_patched(target, ran))
        yield


def _cli_no_work(argv):
    calls = []
    with _no_work(calls):
        code, out, err, exc = _cli(argv)
    return code, out, err, exc, calls


def _refused(argv, *needles, codes=(2,), made=None):
    """A command owed a one-line refusal before any work (``made``: a path that must not exist)."""
    with _sandbox() as d:
        code, out, err, exc, calls = _cli_no_work(argv)
        if calls:
            return "silent wrong", f"not refused: went on to {calls[0]}"
        label, detail = _one_line(code, err, exc, needles, codes)
        if label == "clear error" and made is not None and (d / made).exists():
            return "unclear", f"refused, but {made} was made first: {detail}"
        return label, detail


def _tiny(folder, trials=2, extra="", text=None):
    p = Path(folder) / "tiny.toml"
    p.write_text((TINY.format(trials=trials) if text is None else text) + extra)
    return p


# ------------------------------------------------------------------------------ real signals
_READY = ("import sys, mixlinreg.cli; print('READY', file=sys.stderr, flush=True); "
          "sys.exit(mixlinreg.cli.main(sys.argv[1:]))")


def _spawn(argv, cwd, env=None, new_session=False, stdout=None):
    full = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = open(Path(cwd) / "stdout.txt", "w") if stdout is None else stdout
    err = open(Path(cwd) / "stderr.txt", "w")
    p = subprocess.Popen([sys.executable, "-c", _READY, *argv], cwd=cwd, env=full, stdout=out,
                         stderr=err, start_new_session=new_session)
    return p


def _wait_for(p, cwd, pattern, timeout=120):
    """Wait until stdout or stderr matches ``pattern`` (or, a callable, ``pattern(cwd)`` is true);
    False if the process ended first."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        text = (Path(cwd) / "stdout.txt").read_text() + (Path(cwd) / "stderr.txt").read_text()
        if pattern(Path(cwd)) if callable(pattern) else re.search(pattern, text):
            return True
        if p.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def _interrupt(argv, marker="READY", delay=0.5, group=False, env=None, after=None, cwd=None):
    """Start ``mixlinreg argv``, wait for ``marker`` and ``delay`` seconds, send SIGINT (to the
    process group, as Ctrl-C in a terminal does, when ``group``); judge what it ends with."""
    ctx = _sandbox() if cwd is None else contextlib.nullcontext(Path(cwd))
    with ctx as d:
        p = _spawn(argv, d, env=env, new_session=group)
        try:
            if not _wait_for(p, d, marker):
                p.wait(60)
                return "unclear", f"ended (status {p.returncode}) before the signal"
            time.sleep(delay)
            if p.poll() is not None:
                return "unclear", f"finished (status {p.returncode}) before the signal"
            if group:
                os.killpg(p.pid, signal.SIGINT)
            else:
                p.send_signal(signal.SIGINT)
            code = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "crash", "did not stop within 60 s of Ctrl-C"
        finally:
            if group:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        err = (d / "stderr.txt").read_text()
        out = (d / "stdout.txt").read_text()
        if env and env.get("MIXLINREG_TRACEBACK"):
            ok = code != 0 and "Traceback" in err and "KeyboardInterrupt" in err
            return ("correct result", "traceback kept for developers") if ok else \
                ("unclear", f"status {code}, no traceback with MIXLINREG_TRACEBACK=1")
        if "Traceback" in err:
            tb = err[err.index("Traceback"):].splitlines()
            exc = next((ln for ln in tb[1:] if ln and not ln.startswith(" ")), "?")
            return "crash", f"status {code}: a traceback ({exc[:90]}) before: {_last(err)[:80]}"
        last = _last(err)
        cmd = argv[0]
        if code == 130 and re.search(r"interrupt", last, re.I) and f"mixlinreg {cmd}" in last \
                and re.search(r"resume|rerun|run .* again", last):
            if after is not None:
                return after(d, last, out)
            return "clear error", f"[130] {last[:150]}"
        return "unclear", f"status {code}: {last[:130]}"


def _resumed(d, last, out):
    """After an interrupted tiny reproduce: finished units kept, and the printed command resumes."""
    import shlex

    kept = list((d / "o").rglob("units/*.csv"))
    if not kept:
        return "unclear", "no finished unit on disk after the interrupt"
    if "kept" not in last:
        return "unclear", f"{len(kept)} units kept but the line does not say so: {last[:100]}"
    m = re.search(r"(mixlinreg reproduce .*?)(;|$)", last[last.index("resume"):] if "resume" in last
                  else last)
    if not m:
        return "unclear", "no resume command in the line"
    argv = shlex.split(m.group(1))[1:]
    p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", *argv], cwd=d, capture_output=True,
                       text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if p.returncode != 0:
        return "lost", f"resume command failed: {_last(p.stderr)[:100]}"
    m2 = re.search(r"\((\d+) already done", p.stdout)
    if not m2 or int(m2.group(1)) == 0:
        return "lost", f"resume recomputed everything: {p.stdout[-120:]}"
    return "clear error", f"[130] kept {len(kept)} units, resumed {m2.group(1)}: {last[:90]}"


def _sigint_cases():
    c = []

    def tiny_reproduce(group=False, n_jobs="1", after=None, env=None):
        def run():  # Ctrl-C once the first units are stored
            with _sandbox() as d:
                _tiny(d, trials=40)
                return _interrupt(["reproduce", "--config", "tiny.toml", "--preset", "paper",
                                   "--out", "o", "--n-jobs", n_jobs, "--no-progress"],
                                  marker=lambda d: any((d / "o").rglob("units/*.csv")), delay=0.3,
                                  group=group, after=after, env=env, cwd=d)
        return run

    c.append((103, "Ctrl-C on reproduce (SIGINT to the process): kept, resumable",
              tiny_reproduce(after=_resumed)))
    c.append((103, "Ctrl-C on reproduce --n-jobs 2 (SIGINT to the whole process group)",
              tiny_reproduce(group=True, n_jobs="2")))
    c.append((103, "Ctrl-C on reproduce with MIXLINREG_TRACEBACK=1 shows the traceback",
              tiny_reproduce(env={"MIXLINREG_TRACEBACK": "1"})))
    for argv, marker, delay in (
            (["check", "L1", "--preset", "quick", "--out", "c", "--no-progress"], r"\[L1\]", 1.0),
            # compare's smoke preset ends about 3 s after READY on a quiet machine: 1 s is mid-run
            (["compare", "--preset", "smoke", "--out", "cm", "--no-progress"], "READY", 1.0),
            (["digits", "--preset", "quick", "--out", "dg", "--no-progress"], "READY", 1.0),
            (["teach", "--smoke", "--out", "t"], "READY", 1.0),
            (["bench", "--quick", "--threads", "1", "--repeats", "1"], "READY", 1.5),
            (["demo", "--n-init", "20"], "READY", 0.6),
            (["check-agreement", "fig2a", "--candidate", "gram", "--preset", "quick",
              "--units", "1"], "READY", 1.5)):
        c.append((103, f"Ctrl-C on {' '.join(argv[:2])}",
                  lambda a=argv, m=marker, dl=delay: _interrupt(a, marker=m, delay=dl)))
    return c


# ------------------------------------------------------------------------- other faults (103)
def _missing(argv, modules, *needles):
    def run():
        with _blocked(*modules):
            return _refused(argv, *needles, made="o")
    return run


def _raises(target, exc, argv, *needles, codes=(1, 2), pre=None):
    """``target`` (``module:attr``) raises ``exc`` mid-run: one line, the right status."""
    def boom(*a, **k):
        raise exc

    def run():
        with _sandbox() as d:
            if pre:
                pre(d)
            with _patched(target, boom):
                code, out, err, e = _cli(argv)
            return _one_line(code, err, e, needles, codes)
    return run


def _broken_pipe(argv):
    """stdout is a pipe whose reader is gone (``mixlinreg ... | head -1`` after head exited)."""
    def run():
        with _sandbox() as d:
            r, w = os.pipe()
            os.close(r)  # the reader has gone before the command writes
            with os.fdopen(w, "w") as wf:
                p = _spawn(argv, d, stdout=wf)
            try:
                code = p.wait(120)
            except subprocess.TimeoutExpired:
                p.kill()
                return "crash", "timeout"
            err = (d / "stderr.txt").read_text().replace("READY\n", "")
            if "Traceback" in err or "Exception ignored" in err or "BrokenPipe" in err:
                return "crash", f"status {code}: {_last(err)[:110]}"
            if err.strip():
                return "unclear", f"status {code}: {_last(err)[:110]}"
            return "correct result", f"quiet, status {code}"
    return run


def _disk_full_subprocess():
    """A file size limit (EFBIG, as a full disk gives ENOSPC) while writing results."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    with _sandbox() as d:
        _tiny(d, trials=2)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", "tiny.toml",
                            "--preset", "paper", "--out", "o", "--no-progress"], cwd=d, env=env,
                           capture_output=True, text=True, timeout=300, preexec_fn=limit)
        return _one_line(p.returncode, p.stderr, None, [r"File too large|space", r"resume|rerun|again"],
                         codes=(1,))


def _worker_killed():
    """A loky worker killed (as the OOM killer does) in the middle of a reproduce."""
    import psutil

    with _sandbox() as d:
        _tiny(d, trials=60)
        p = _spawn(["reproduce", "--config", "tiny.toml", "--preset", "paper", "--out", "o",
                    "--n-jobs", "2", "--no-progress"], d)
        try:
            if not _wait_for(p, d, r"units x"):
                return "unclear", "ended before the kill"
            deadline = time.time() + 60
            victim = None
            while time.time() < deadline and victim is None and p.poll() is None:
                kids = psutil.Process(p.pid).children(recursive=True)
                workers = [k for k in kids if "loky" in " ".join(k.cmdline())
                           and "resource_tracker" not in " ".join(k.cmdline())]
                victim = workers[0] if workers else None
                time.sleep(0.2)
            if victim is None:
                return "unclear", "no loky worker seen"
            time.sleep(0.5)
            victim.kill()
            code = p.wait(120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err = (d / "stderr.txt").read_text()
        if code == 0:
            return "correct result", "the runner recovered the unit"
        return _one_line(code, err, None, [r"worker", r"resume|rerun|again"], codes=(1,))


def _fault_cases():
    c = []
    dask = ("dask", "dask.distributed", "distributed")
    for argv in (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--backend", "dask"],
                 ["compare", "--preset", "smoke", "--out", "o", "--backend", "dask"],
                 ["check", "L1", "--preset", "smoke", "--out", "o", "--backend", "dask"]):
        c.append((103, f"{argv[0]} --backend dask without dask",
                  _missing(argv, dask, r"--backend dask", r"pip install 'mixlinreg\[dask\]'")))
    jax = ("jax", "jax.numpy", "jaxlib")
    c.append((103, "reproduce --kernel jax without jax",
              _missing(["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--kernel", "jax"],
                       jax, r"--kernel jax", r"mixlinreg\[jax\]")))
    c.append((103, "check-agreement --candidate jax without jax",
              _missing(["check-agreement", "fig2a", "--candidate", "jax", "--preset", "smoke"],
                       jax, r"--candidate jax", r"mixlinreg\[jax\]")))
    c.append((103, "an optional module missing mid-run names the extra",
              _raises("mixlinreg.harness:run_experiment",
                      ModuleNotFoundError("No module named 'distributed'", name="distributed"),
                      ["reproduce", "fig2a", "--preset", "smoke", "--out", "o"],
                      r"distributed", r"mixlinreg\[dask\]", codes=(2,))))
    for argv in (["check", "--list"], ["--help"], ["reproduce", "--help"],
                 ["reproduce", "fig2a", "--preset", "smoke", "--report-only", "--out", "o"]):
        c.append((103, f"mixlinreg {' '.join(argv)} | head (reader gone)", _broken_pipe(argv)))
    for target, argv in (
            ("mixlinreg.harness.report:write_panel_outputs",
             ["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--no-progress"]),
            ("mixlinreg.compare:write_outputs",
             ["compare", "--preset", "smoke", "--out", "o", "--seeds", "1", "--no-progress"]),
            ("mixlinreg.theory:run_study",
             ["check", "L1", "--preset", "smoke", "--out", "o", "--no-progress"]),
            ("mixlinreg.digits:write_digits_outputs",
             ["digits", "--preset", "smoke", "--out", "o", "--no-progress"]),
            ("mixlinreg.teach:write_views", ["teach", "lines", "--smoke", "--out", "o"])):
        full = OSError(errno.ENOSPC, "No space left on device", f"o/{argv[0]}_smoke.csv")
        c.append((103, f"disk full while {argv[0]} writes", _raises(
            target, full, argv, r"No space left on device", argv[0], codes=(1,))))
    c.append((103, "file size limit while reproduce writes (EFBIG, child process)",
              _disk_full_subprocess))
    c.append((103, "a worker killed mid-run (as by the OOM killer)", _worker_killed))
    c.append((103, "an internal error (a bug) ends in one line naming MIXLINREG_TRACEBACK",
              _raises("mixlinreg.harness:run_experiment", KeyError("cells"),
                      ["reproduce", "fig2a", "--preset", "smoke", "--out", "o"],
                      r"KeyError", r"MIXLINREG_TRACEBACK=1", codes=(1,))))

    def dev_traceback():
        def boom(*a, **k):
            raise KeyError("cells")

        with _sandbox(), _env(MIXLINREG_TRACEBACK="1"), \
                _patched("mixlinreg.harness:run_experiment", boom):
            code, out, err, exc = _cli(["reproduce", "fig2a", "--preset", "smoke", "--out", "o"])
        return ("correct result", "raised for developers") if isinstance(exc, KeyError) else \
            ("unclear", f"MIXLINREG_TRACEBACK=1 but {type(exc).__name__ if exc else code}")

    c.append((103, "MIXLINREG_TRACEBACK=1 keeps the traceback of a bug", dev_traceback))
    return c


# ---------------------------------------------------------------------------- options (106)
def _option_cases():
    c = []
    empties = [
        (["reproduce", "fig2a", "--preset", "smoke", "--out", ""], "--out"),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--figures", ""], "--figures"),
        (["reproduce", "--config", "", "--preset", "smoke", "--out", "o"], "--config"),
        (["check", "L1", "--preset", "smoke", "--out", ""], "--out"),
        (["check", "L1", "--preset", "smoke", "--out", "o", "--store", ""], "--store"),
        (["check", "L1", "--preset", "smoke", "--out", "o", "--write", ""], "--write"),
        (["compare", "--preset", "smoke", "--out", ""], "--out"),
        (["digits", "--preset", "smoke", "--out", ""], "--out"),
        (["teach", "lines", "--smoke", "--out", "  "], "--out"),
        (["bench", "--quick", "--csv", ""], "--csv"),
        (["check-agreement", "fig2a", "--candidate", "gram", "--preset", "smoke", "--csv", ""],
         "--csv"),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--backend", "dask",
          "--scheduler", ""], "--scheduler"),
    ]
    for argv, opt in empties:
        c.append((106, f"{argv[0]} {opt} ''", lambda a=argv, o=opt: _refused(a, re.escape(o),
                                                                             r"''|empty")))
    pairs = [
        (["reproduce", "fig2b", "--config", "tiny.toml", "--preset", "smoke", "--out", "o"],
         ["--config", "fig2b|panel"]),
        (["check", "L1", "--preset", "smoke", "--out", "o", "--store", "s", "--no-store"],
         ["--store", "--no-store"]),
        (["compare", "--preset", "smoke", "--out", "o", "--store", "s", "--no-store"],
         ["--store", "--no-store"]),
        (["digits", "--preset", "smoke", "--out", "o", "--store", "s", "--no-store"],
         ["--store", "--no-store"]),
        (["check", "--list", "--scheduler", "tcp://x:1"], ["--scheduler"]),
        (["check", "--list", "--preset", "smoke"], ["--list", "--preset"]),
        (["check", "--list", "--out", "o"], ["--list", "--out"]),
        (["check", "--report-only", "--out", "o"], ["--report-only", "--write"]),
        (["check", "--report-only", "--out", "o", "--write", "r.md", "--n-jobs", "2"],
         ["--report-only", "--n-jobs"]),
        (["check", "--report-only", "--out", "o", "--write", "r.md", "--kernel", "jax"],
         ["--report-only", "--kernel"]),
        (["check", "--migrate-records", "--out", "o", "--preset", "smoke"],
         ["--migrate-records", "--preset"]),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--report-only", "--n-jobs", "2"],
         ["--report-only", "--n-jobs"]),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--report-only", "--method",
          "gram"], ["--report-only", "--method"]),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--backend", "sequential",
          "--n-jobs", "2"], ["--n-jobs", "sequential"]),
        (["compare", "--preset", "smoke", "--out", "o", "--backend", "sequential", "--n-jobs", "2"],
         ["--n-jobs", "sequential"]),
        (["check", "L1", "--preset", "smoke", "--out", "o", "--backend", "dask", "--n-jobs", "2"],
         ["--n-jobs", "dask"]),
        (["reproduce", "fig2a", "--preset", "smoke", "--out", "o", "--kernel", "jax", "--method",
          "gram"], ["--method gram", "--kernel jax"]),
        (["bench", "--units", "fig2a", "--quick"], ["--units", "--quick"]),
        (["bench", "--units", "fig2a", "--threads", "1"], ["--units", "--threads"]),
        (["bench", "--units", "fig2a", "--n-iter", "5"], ["--units", "--n-iter"]),
        (["bench", "--quick", "--preset", "smoke"], ["--preset", "--units"]),
    ]
    for argv, needles in pairs:
        def run(a=argv, n=needles):
            with _sandbox() as d:
                _tiny(d)
                code, out, err, exc, calls = _cli_no_work(a)
                if calls:
                    return "silent wrong", f"not refused: went on to {calls[0]}"
                label, detail = _one_line(code, err, exc, n)
                if label == "clear error" and (d / "o").exists():
                    return "unclear", f"refused after making o/: {detail}"
                return label, detail
        c.append((106, " ".join(argv), run))

    def shadow(argv, local, packaged, patch=None):
        """``./local`` shadows the packaged config: not used, or used with a line naming it."""
        def run():
            with _sandbox() as d:
                src = ROOT / "mixlinreg" / "configs" / packaged
                (d / local).parent.mkdir(parents=True, exist_ok=True)
                (d / local).write_text(src.read_text().replace("trials", "trials_local_marker"))
                ctx = _patched(patch, _stop) if patch else contextlib.nullcontext()
                with ctx:
                    code, out, err, exc = _cli(argv)
                text = out + err
                if (exc is not None and not isinstance(exc, _Ran)) or "Traceback" in err:
                    return "crash", f"{type(exc).__name__ if exc else _last(err)}"
                if "trials_local_marker" in text:  # the local file was read (and refused)
                    return ("correct result", "used, named") if local in text else \
                        ("silent wrong", "the local file was used without a line naming it")
                if str(src) in text or f"configs/{packaged}" in text:
                    return "correct result", "names the packaged file it read" + \
                        (" and the local one it did not" if local in text else "")
                return "unclear", f"status {code}; the config file read is not named"
        return run

    c.append((106, "./experiments/fig2a.toml next to reproduce fig2a", shadow(
        ["reproduce", "fig2a", "--preset", "smoke", "--report-only", "--out", "o"],
        "experiments/fig2a.toml", "fig2a.toml")))
    c.append((106, "./experiments/compare.toml next to compare", shadow(
        ["compare", "--preset", "smoke", "--out", "o", "--no-progress"], "experiments/compare.toml",
        "compare.toml", patch="mixlinreg.compare:run_compare")))
    c.append((106, "./experiments/studies/L1.toml next to check L1", shadow(
        ["check", "L1", "--preset", "smoke", "--out", "o", "--no-progress"],
        "experiments/studies/L1.toml", "studies/L1.toml", patch="mixlinreg.theory:run_study")))
    for argv, patch, path in (
            (["check", "L1", "--preset", "smoke", "--out", "o", "--no-progress"],
             "mixlinreg.theory:run_study", "configs/studies/L1.toml"),
            (["digits", "--preset", "smoke", "--out", "o", "--no-progress"],
             "mixlinreg.digits:run_digits", "configs/digits.toml"),
            (["bench", "--quick"], "mixlinreg.bench:run_benchmark", "configs/bench.toml"),
            (["check-agreement", "fig2a", "--candidate", "gram", "--preset", "smoke"],
             "mixlinreg.harness.agreement:check_agreement", "configs/fig2a.toml")):
        def printed(a=argv, t=patch, p=path):
            with _sandbox():
                with _patched(t, _stop):
                    code, out, err, exc = _cli(a)
            if (exc is not None and not isinstance(exc, _Ran)) or "Traceback" in err:
                return "crash", f"{type(exc).__name__ if exc else _last(err)}"
            return ("correct result", "") if p in out else \
                ("unclear", f"the config file read ({p}) is not printed")
        c.append((106, f"{argv[0]} prints the config file it read", printed))
    return c


def _stop(*a, **k):
    """Stands in for the work: the probes above only look at what is printed before it."""
    raise _Ran("work")


# ------------------------------------------------------------------------------- TOML (106, 107)
def _toml_case(edit, *needles, base=None):
    """``reproduce --config`` a tiny config with ``edit`` (old, new) applied (or appended)."""
    def run():
        with _sandbox() as d:
            text = TINY.format(trials=2) if base is None else base
            if isinstance(edit, tuple):
                assert edit[0] in text, edit
                text = text.replace(*edit)
            else:
                text += edit
            _tiny(d, text=text)
            code, out, err, exc = _cli(["reproduce", "--config", "tiny.toml", "--preset", "smoke",
                                        "--out", "o", "--report-only"])
            return _one_line(code, err, exc, [r"tiny\.toml", *needles])
    return run


def _loader_case(loader, sub, edit, *needles):
    """A packaged config of another kind (study, compare, digits, bench) with ``edit``."""
    def run():
        with _sandbox() as d:
            src = ROOT / "mixlinreg" / "configs" / sub
            text = src.read_text()
            assert edit[0] in text, edit
            p = d / "c.toml"
            p.write_text(text.replace(*edit, 1))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    loader(p)
            except (ValueError, TypeError) as exc:
                msg = str(exc)
                ok = all(re.search(n, msg) for n in [r"c\.toml", *needles]) and "\n" not in msg
                return ("clear error" if ok else "unclear"), msg[:150]
            except Exception as exc:  # noqa: BLE001
                return "crash", f"{type(exc).__name__}: {exc}"[:120]
            return "silent wrong", "loaded"
    return run


def _toml_cases():
    c = []
    c.append((106, "top-level typo layut (suggests layout)", _toml_case(
        ('layout = "R-sigma"', 'layut = "m-n"'), r"layut", r"did you mean.*layout")))
    c.append((106, "top-level key that belongs in [protocol] (n_init)", _toml_case(
        ('layout = "R-sigma"', 'layout = "R-sigma"\nn_init = 5'), r"n_init", r"protocol")))
    c.append((106, "[grid] typo sigm (suggests sigma)", _toml_case(
        ("sigma = [0.1]", "sigm = [0.1]"), r"grid\.sigm\b", r"did you mean.*sigma")))
    c.append((106, "[protocol] typo n_iters (suggests n_iter)", _toml_case(
        ("n_iter = 15", "n_iters = 15"), r"n_iters", r"did you mean.*n_iter")))
    c.append((106, "[Grid] capitalised table (suggests grid)", _toml_case(
        ("[grid]", "[Grid]"), r"Grid", r"did you mean.*grid")))
    c.append((106, "[presets.smoke.protocol] typo trails (suggests trials)", _toml_case(
        ("[presets.smoke.protocol]\ntrials = 2", "[presets.smoke.protocol]\ntrails = 2"),
        r"presets\.smoke\.protocol\.trails", r"did you mean.*trials")))
    c.append((106, "[presets.smoke.protocl] (suggests protocol)", _toml_case(
        ("[presets.smoke.protocol]", "[presets.smoke.protocl]"), r"protocl",
        r"did you mean.*protocol")))
    c.append((106, "[presets.smoek.protocol] (suggests smoke)", _toml_case(
        "[presets.smoek.protocol]\ntrials = 1\n", r"smoek", r"did you mean.*smoke")))
    c.append((106, "typo in a preset not run (presets.quick, running smoke)", _toml_case(
        "[presets.quick.grid]\nsigmas = [0.2]\n", r"presets\.quick\.grid\.sigmas",
        r"did you mean.*sigma")))
    c.append((106, "a preset overriding a top-level value (presets.smoke.layout)", _toml_case(
        "[presets.smoke]\nlayout = \"m-n\"\n", r"presets\.smoke\.layout")))
    no_presets = TINY.format(trials=2).split("[presets.smoke.protocol]")[0]
    c.append((106, "presets = 3 (not a table)", _toml_case(
        ('layout = "R-sigma"', 'layout = "R-sigma"\npresets = 3'), r"presets", r"table",
        base=no_presets)))
    c.append((106, "grid = 3 (a table given as a value)", _toml_case(
        ("[grid]\nm = [8]\nn = [10]\nd = [6]\nk = [2]\nR = [0.5, 1.0]\nsigma = [0.1]", "grid = 3"),
        r"grid", r"table")))
    c.append((106, "presets.smoke = 5 (a preset that is not a table)", _toml_case(
        ("[presets.smoke.protocol]\ntrials = 2\n", "[presets]\nsmoke = 5\n"),
        r"presets\.smoke", r"table")))
    from mixlinreg import bench, compare, digits
    from mixlinreg.theory.studies import get

    c.append((106, "study config: [margins] typo (A0 margn)", _loader_case(
        lambda p: get("A0").config("paper", p), "studies/A0.toml",
        ("margin = 0.1", "margn = 0.1"), r"margins\.margn", r"did you mean.*margin")))
    c.append((106, "study config: [params] typo (A0 trails in presets.quick)", _loader_case(
        lambda p: get("A0").config("paper", p), "studies/A0.toml",
        ("[presets.quick.params]\ntrials", "[presets.quick.params]\ntrails"),
        r"presets\.quick\.params\.trails", r"did you mean.*trials")))
    c.append((106, "compare config: [scenarios] typo sigam", _loader_case(
        lambda p: compare.load_preset("paper", p), "compare.toml",
        ("sigma = 0.1", "sigam = 0.1"), r"scenarios\.sigam", r"did you mean.*sigma")))
    c.append((106, "digits config: unknown top-level key", _loader_case(
        lambda p: digits.defaults("paper", p), "digits.toml",
        ('kind = "digits"', 'kind = "digits"\nseeds = 5'), r"seeds", r"params")))
    c.append((106, "bench config: [shapes] typo dtype", _loader_case(
        lambda p: bench.load_shapes("paper", p), "bench.toml",
        ('dtypes = ["float32", "float64"]', 'dtype = ["float32", "float64"]'), r"shapes\.dtype\b", r"did you mean.*dtypes")))
    # class 7: files that are not TOML
    bad = [
        (("[grid]\nm = [8]", "[grid]\nm [8]"), "a key without '='"),
        (("n = [10]", "n = [10]\nn = [12]"), "a key given twice"),
        (('name = "tiny"', 'name = "tiny'), "an unterminated string"),
        (("[protocol]", "[protocol"), "an unclosed table header"),
        (("[presets.smoke.protocol]\ntrials = 2",
          "[presets.smoke.protocol]\ntrials = 2\n[presets.smoke.protocol]\nn_init = 1"),
         "a table given twice"),
        (("steps = [0.1]", "steps = [0.1,, 0.2]"), "a broken array"),
    ]
    for edit, what in bad:
        c.append((107, f"TOML with {what}", _toml_case(edit, r"TOML", r"line \d+")))

    def not_utf8():
        with _sandbox() as d:
            (d / "tiny.toml").write_bytes(TINY.format(trials=2).encode() + b"# caf\xe9\n")
            code, out, err, exc = _cli(["reproduce", "--config", "tiny.toml", "--preset", "smoke",
                                        "--out", "o"])
            return _one_line(code, err, exc, [r"tiny\.toml", r"UTF-8|utf-8"])

    def folder():
        with _sandbox() as d:
            (d / "tiny.toml").mkdir()
            code, out, err, exc = _cli(["reproduce", "--config", "tiny.toml", "--preset", "smoke",
                                        "--out", "o"])
            return _one_line(code, err, exc, [r"tiny\.toml", r"folder|directory"])

    def other_suffix():
        with _sandbox() as d:
            (d / "grid.cfg").write_text(TINY.format(trials=2))
            code, out, err, exc = _cli(["reproduce", "--config", "grid.cfg", "--preset", "smoke",
                                        "--out", "o"])
            return _one_line(code, err, exc, [r"grid\.cfg", r"\.toml"])

    c.append((107, "TOML config that is not UTF-8", not_utf8))
    c.append((107, "--config names a folder x.toml", folder))
    c.append((107, "--config file without the .toml suffix", other_suffix))
    return c


def cases():
    """``(class, name, callable)`` of classes 103, 106 and 107."""
    yield from _option_cases()
    yield from _toml_cases()
    yield from _fault_cases()
    yield from _sigint_cases()


if __name__ == "__main__":
    from collections import Counter

    seen = Counter()
    for cls, name, fn in cases():
        res = fn()
        label, detail = (res, "") if isinstance(res, str) else res
        seen[(cls, label)] += 1
        print(f"[{label:>14}] {cls} | {name} | {detail}", flush=True)
    print(seen)
