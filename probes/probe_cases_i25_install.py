"""Probe cases of issue 25, classes 1 and 9: install folders the user cannot write, first use.

``cases()`` yields ``(class, name, callable)``; each callable runs its case (most in a subprocess,
as an unprivileged user where this process is root) and returns an outcome label of
``probes/probe_reliability.py`` (or ``(label, detail)``)::

    python probes/probe_reliability.py --only 101 109 -v

Class 101 (issue 25 class 1) runs the package from a read-only copy of it (numba cache included,
as a site-wide install that its administrator ran once), as user ``nobody`` when this process is
root, with HOME, ``NUMBA_CACHE_DIR``, ``XDG_CACHE_HOME`` and ``TMPDIR`` writable or not. Owed:
the import and a tiny fit work, and exactly one line on stderr names the folder that could not be
written and where the kernels are cached instead (no line where there is nothing to say).

Class 109 (issue 25 class 9) runs :func:`mixlinreg.runner.run` with two local workers on a cold
numba cache (an empty ``NUMBA_CACHE_DIR``): owed, the kernels compile once, in this process, before
the workers start (one line says so), and not at all on a warm cache. One case compiles the kernels
for real (about a minute of CPU); the others use a workload that records the process id of each
unit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {101: "install folders the user cannot write", 109: "first use compiles once"}
NOBODY = 65534
_STATE = {}


# ------------------------------------------------------------------------------------ set-up
def _scratch() -> Path:
    """A scratch folder that the unprivileged user can traverse (made once per process)."""
    if "tmp" not in _STATE:
        d = Path(tempfile.mkdtemp(prefix="mlr-i25-install-"))
        d.chmod(0o755)
        _STATE["tmp"] = d
    return _STATE["tmp"]


def _folder(name, mode=0o755, owner=None) -> Path:
    d = _scratch() / name
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(mode)
    if owner is not None and os.geteuid() == 0:
        os.chown(d, owner, owner)
    return d


def _read_only(path: Path):
    for dirpath, dirs, files in os.walk(path):
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o444)
        os.chmod(dirpath, 0o555)


def _site(name="site", *, pycache_only=False, edit=None) -> Path:
    """A copy of the package (its numba cache included) under ``scratch/name``, read-only
    (``pycache_only``: only its ``__pycache__`` is read-only, the package folder is writable by
    all); returns the folder to put on ``PYTHONPATH``."""
    key = ("site", name)
    if key not in _STATE:
        site = _scratch() / name
        shutil.copytree(ROOT / "mixlinreg", site / "mixlinreg")
        if edit is not None:
            edit(site / "mixlinreg")
        site.chmod(0o755)
        if pycache_only:
            for dirpath, dirs, files in os.walk(site / "mixlinreg"):
                os.chmod(dirpath, 0o777)
            _read_only(site / "mixlinreg" / "__pycache__")
        else:
            _read_only(site)
            site.chmod(0o755)
        _STATE[key] = site
    return _STATE[key]


def _as_nobody(argv):
    """``argv`` run as ``nobody`` (only when root, with ``setpriv``; otherwise as this user, whom
    the read-only modes stop as well)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return list(argv)
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def _py(code, *, site=None, env=None, cwd=None, args=(), timeout=400, nobody=True):
    """Run ``python -c code`` (or ``python args...``) with only ``site`` on PYTHONPATH and a
    plain environment (no NUMBA_/XDG_ variables unless ``env`` sets them)."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("NUMBA_", "XDG_", "PYTHON", "_MIXLINREG")) and k not in ("HOME", "TMPDIR")}
    base["HOME"] = str(_folder("home_ro", 0o555))
    base["PYTHONPATH"] = str(site if site is not None else ROOT)
    base.update(env or {})
    base = {k: v for k, v in base.items() if v is not None}
    argv = [sys.executable, *args] if args else [sys.executable, "-c", textwrap.dedent(code)]
    try:
        return subprocess.run(_as_nobody(argv) if nobody else argv, env=base,
                              cwd=str(cwd or _folder("cwd_ro", 0o555)), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


IMPORT = """
import mixlinreg, mixlinreg.cli
print("FILE", mixlinreg.__file__)
"""

FIT = """
import time
t0 = time.perf_counter()
import mixlinreg as mlr
print("FILE", mlr.__file__)
mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
res = mlr.ifca(mix.X, mix.y, mlr.init_close(mix.theta_star, 0.25, n_runs=2, rng=1), lr=0.1,
               n_iter=20)
print("THETA", repr(res.theta.ravel().tolist()))
print("SECONDS", round(time.perf_counter() - t0, 1))
"""


def _reference_theta():
    if "theta" not in _STATE:
        p = _py(FIT, nobody=False, env={"HOME": os.environ.get("HOME", "/tmp")})
        m = re.search(r"THETA (.*)", p.stdout) if p is not None else None
        if m is None:
            raise RuntimeError(f"reference fit failed: {p and p.stderr[-300:]}")
        _STATE["theta"] = m.group(1)
    return _STATE["theta"]


def _lines(text):
    """stderr lines that a user sees (numba's own NumbaWarning lines included)."""
    return [ln for ln in text.splitlines() if ln.strip()]


def _judge(p, site, *, line=True, needles=(), fit=False, where=None):
    """The outcome of a subprocess that must succeed: 'correct result' when it exits 0, ran the
    copy under ``site``, fitted the reference result (``fit``) and wrote exactly one stderr line
    holding every needle (``line``) or nothing (``not line``)."""
    if p is None:
        return "crash", "timeout"
    err = _lines(p.stderr)
    last = err[-1][:140] if err else ""
    if p.returncode != 0:
        return ("crash" if "Traceback" in p.stderr else "unclear"), f"status {p.returncode}: {last}"
    if site is not None and f"FILE {site}" not in p.stdout:
        return "crash", f"set-up: did not import the copy under {site}: {p.stdout[:120]}"
    secs = re.search(r"SECONDS (\S+)", p.stdout)
    took = f" ({secs.group(1)} s)" if secs else ""
    if fit:
        import numpy as np

        m = re.search(r"THETA (.*)", p.stdout)
        ref = np.array(json.loads(_reference_theta()))
        if m is None or not np.allclose(json.loads(m.group(1)), ref, rtol=1e-9, atol=1e-12):
            return "silent wrong", "fit differs from the reference"  # (no JIT: other rounding)
    if not line:
        return ("unclear", f"{len(err)} unexpected stderr lines: {last}") if err else \
            ("correct result", f"quiet{took}")
    if not err:
        return "unclear", f"worked, but no line says where it caches{took}"
    if len(err) > 1:
        return "unclear", f"{len(err)} stderr lines, last: {last}"
    missing = [n for n in needles if n not in err[0]]
    if missing:
        return "unclear", f"line does not name {missing}: {err[0][:140]}"
    if where is not None and not where(err[0]):
        return "silent wrong", f"the line names a folder that holds no cache: {err[0][:140]}"
    return "correct result", err[0][:150] + took


def _cache_named(line):
    """True when the folder the line says it caches in holds numba index files now."""
    m = re.search(r"in (/\S+?) instead", line)
    return m is not None and any(Path(m.group(1)).glob("*.nbi"))


# ------------------------------------------------------------------------------------ class 101
def cases_install():
    def case(name, code=IMPORT, *, site_name="site", env=None, line=True, needles=None,
             fit=False, where=None, args=(), pycache_only=False, prepare=None):
        def run():
            site = _site(site_name, pycache_only=pycache_only)
            extra = dict(env or {})
            if prepare is not None:
                extra.update(prepare())
            want = needles if needles is not None else (str(site / "mixlinreg" / "__pycache__"),)
            p = _py(code, site=site, env=extra, args=args)
            return _judge(p, site, line=line, needles=want, fit=fit, where=where)
        return 101, name, run

    home_w = lambda tag: {"HOME": str(_folder(f"home_w_{tag}", 0o777))}  # noqa: E731
    tmp_w = lambda tag: {"TMPDIR": str(_folder(f"tmp_{tag}", 0o1777))}  # noqa: E731
    yield case("import, read-only package, HOME read-only",
               prepare=lambda: tmp_w("a"), where=_cache_named)
    yield case("import, read-only package, HOME=/nonexistent (nobody's own)",
               prepare=lambda: {"HOME": "/nonexistent", **tmp_w("b")})
    yield case("tiny ifca fit, read-only package, HOME read-only", FIT, fit=True,
               prepare=lambda: tmp_w("c"), where=_cache_named)
    yield case("import, read-only package, HOME writable", prepare=lambda: home_w("d"),
               where=_cache_named)
    yield case("tiny ifca fit, read-only package, HOME writable", FIT, fit=True,
               prepare=lambda: home_w("e"), where=_cache_named)
    yield case("python -W error: import, read-only package, HOME read-only",
               args=("-W", "error", "-c", IMPORT), prepare=lambda: tmp_w("f"))
    ro_cache = lambda: {"NUMBA_CACHE_DIR": str(_folder("cache_ro", 0o555))}  # noqa: E731
    yield case("import, NUMBA_CACHE_DIR read-only, HOME read-only",
               prepare=lambda: {**ro_cache(), **tmp_w("g")}, needles=(str(_scratch() / "cache_ro"),))
    yield case("tiny ifca fit, NUMBA_CACHE_DIR read-only, HOME writable", FIT, fit=True,
               prepare=lambda: {**ro_cache(), **home_w("h")},
               needles=(str(_scratch() / "cache_ro"),), where=_cache_named)

    def file_cache():
        f = _scratch() / "cache_is_a_file"
        f.write_text("not a folder\n")
        f.chmod(0o644)
        return {"NUMBA_CACHE_DIR": str(f), **tmp_w("i")}

    yield case("import, NUMBA_CACHE_DIR is a file", prepare=file_cache,
               needles=(str(_scratch() / "cache_is_a_file"),))
    yield case("import, NUMBA_CACHE_DIR under /dev/null",
               prepare=lambda: {"NUMBA_CACHE_DIR": "/dev/null/numba", **tmp_w("j")},
               needles=("/dev/null/numba",))
    yield case("import, NUMBA_CACHE_DIR relative, working folder read-only",
               prepare=lambda: {"NUMBA_CACHE_DIR": "numba-cache", **tmp_w("k")},
               needles=("numba-cache",))
    yield case("import, NUMBA_CACHE_DIR='' (unset), read-only package, HOME read-only",
               prepare=lambda: {"NUMBA_CACHE_DIR": "", **tmp_w("l")})
    yield case("import, NUMBA_CACHE_DIR new folder under a writable one: quiet", line=False,
               prepare=lambda: {"NUMBA_CACHE_DIR": str(_folder("cache_parent", 0o777) / "new")})
    yield case("tiny ifca fit, NUMBA_CACHE_DIR writable (seeded): quiet", FIT, fit=True,
               line=False, prepare=lambda: {"NUMBA_CACHE_DIR": str(_seeded_cache())})
    yield case("import, XDG_CACHE_HOME read-only, HOME writable",
               prepare=lambda: {"XDG_CACHE_HOME": str(_folder("xdg_ro", 0o555)),
                                **home_w("m"), **tmp_w("m")})

    def shared_cache():
        d = _folder("shared_cache", 0o1777)
        sub = d / "blocked"  # a folder numba would need, made by another user
        sub.mkdir(exist_ok=True)
        return {"NUMBA_CACHE_DIR": str(d), **tmp_w("n"), "_PROBE_BLOCK": str(sub)}

    def shared_cache_blocked():
        env = shared_cache()
        d = Path(env.pop("_PROBE_BLOCK")).parent
        # the package copy's cache sub-folder of the shared folder, made by root, not writable
        probe = _py("import hashlib, os, mixlinreg.__init__ as m\n"
                    "p = os.path.dirname(os.path.abspath(m.__file__))\n"
                    "print(os.path.basename(p) + '_' + hashlib.sha1(p.encode()).hexdigest())",
                    site=_site("site"), nobody=False, env={"NUMBA_DISABLE_JIT": "1"})
        sub = d / probe.stdout.strip().splitlines()[-1]
        sub.mkdir(exist_ok=True)
        sub.chmod(0o755)
        return env

    yield case("import, shared NUMBA_CACHE_DIR whose mixlinreg sub-folder another user made",
               prepare=shared_cache_blocked, needles=(str(_scratch() / "shared_cache"),))

    def tmp_taken():
        t = _folder("tmp_taken", 0o1777)
        for uid in {os.geteuid(), NOBODY}:  # the per-user folder exists, made by someone else
            taken = t / f"mixlinreg-numba-{uid}"
            taken.mkdir(exist_ok=True)
            taken.chmod(0o777)
        return {"TMPDIR": str(t)}

    yield case("import, nothing writable but a /tmp whose folder another user made",
               prepare=tmp_taken, needles=(str(_site("site") / "mixlinreg" / "__pycache__"),
                                           "memory"))
    yield case("NUMBA_DISABLE_JIT=1: tiny fit, read-only package, HOME read-only, quiet", FIT,
               fit=True, line=False, prepare=lambda: {"NUMBA_DISABLE_JIT": "1"})
    yield case("import numba first, then mixlinreg, NUMBA_CACHE_DIR read-only",
               "import numba\n" + IMPORT, prepare=lambda: {**ro_cache(), **tmp_w("o")},
               needles=(str(_scratch() / "cache_ro"),))
    yield case("import, package writable but its __pycache__ read-only, HOME read-only",
               site_name="site_pycache", pycache_only=True, prepare=lambda: tmp_w("p"))
    yield _cli_case("CLI reproduce tiny config, read-only package, HOME read-only", 1, "q")
    yield _cli_case("CLI reproduce tiny config --n-jobs 2, read-only package, HOME read-only", 2,
                    "r")
    yield 101, "compile notice of a kernel compiled without a cache names no folder", \
        _uncached_notice


def _seeded_cache():
    """A writable NUMBA_CACHE_DIR holding the package copy's kernels (as a warm user cache)."""
    d = _folder("cache_seeded", 0o777)
    site = _site("site")
    probe = _py("import hashlib, os, mixlinreg.__init__ as m\n"
                "p = os.path.dirname(os.path.abspath(m.__file__))\n"
                "print(os.path.basename(p) + '_' + hashlib.sha1(p.encode()).hexdigest())",
                site=site, nobody=False, env={"NUMBA_DISABLE_JIT": "1"})
    sub = d / probe.stdout.strip().splitlines()[-1]
    if not sub.exists():
        shutil.copytree(site / "mixlinreg" / "__pycache__", sub)
        for dirpath, dirs, files in os.walk(d):
            os.chmod(dirpath, 0o777)
            for f in files:
                os.chmod(os.path.join(dirpath, f), 0o666)
    return d


def _nobody_can_spawn():
    """Whether ``nobody`` can start this interpreter from this interpreter (worker processes):
    not where the interpreter lies under a folder only root may enter (setpriv still can)."""
    if "spawn" not in _STATE:
        p = _py("import subprocess, sys\nsubprocess.run([sys.executable, '-c', '1'], check=True)",
                env={"NUMBA_DISABLE_JIT": "1"}, timeout=60)
        _STATE["spawn"] = p is not None and p.returncode == 0
    return _STATE["spawn"]


def _cli_case(name, n_jobs, tag):
    """``reproduce`` of the tiny config from the read-only copy, as ``nobody``; with worker
    processes that ``nobody`` cannot start here, as root with NUMBA_CACHE_DIR and HOME under
    /dev/null (what root cannot write) instead."""
    def run():
        from mixlinreg.harness._tiny import write_tiny

        site = _site("site")
        work = _folder(f"cli_{tag}", 0o777)
        cfg = write_tiny(work / "tiny.toml", trials=2)
        cfg.chmod(0o644)
        out = work / "out"
        args = ("-m", "mixlinreg.cli", "reproduce", "--config", str(cfg), "--preset", "paper",
                "--out", str(out), "--figures", str(work / "fig"), "--no-progress",
                "--n-jobs", str(n_jobs))
        env = {"TMPDIR": str(_folder(f"tmp_{tag}", 0o1777))}
        nobody = n_jobs == 1 or _nobody_can_spawn()
        needle = str(site / "mixlinreg" / "__pycache__")
        if not nobody:
            env.update(NUMBA_CACHE_DIR="/dev/null/numba", HOME="/dev/null")
            needle = "/dev/null/numba"
        p = _py(None, site=site, args=args, cwd=work, env=env, nobody=nobody)
        if p is None:
            return "crash", "timeout"
        err = [ln for ln in _lines(p.stderr) if ln.startswith("mixlinreg") and "cach" in ln]
        if p.returncode != 0:
            last = _lines(p.stderr)[-1][:140] if p.stderr.strip() else ""
            return ("crash" if "Traceback" in p.stderr else "unclear"), f"status {p.returncode}: {last}"
        if not list(out.rglob("*.csv*")):
            return "lost", f"exit 0 but no unit files under {out}"
        if len(err) != 1:
            return "unclear", f"{len(err)} lines about the cache: {err[:2]}"
        if needle not in err[0]:
            return "unclear", f"line does not name {needle}: {err[0][:120]}"
        return "correct result", ("" if nobody else "(as root) ") + err[0][:150]
    return 101, name, run


def _uncached_notice():
    """announce_compile on a kernel compiled without a cache (numba reports no cache path)."""
    import logging

    import numba

    from mixlinreg._firstuse import announce_compile

    f = announce_compile(numba.njit(lambda a, b: a * b + 1.0), "probe kernel")
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("mixlinreg")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.NOTSET)
    try:
        f(1.0, 2.0)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    msgs = [r.getMessage() for r in records]
    if len(msgs) != 1:
        return "silent wrong", f"{len(msgs)} notices"
    if "None" in msgs[0] or "cached in" in msgs[0]:
        return "silent wrong", f"claims a cache folder: {msgs[0][:120]}"
    return "correct result", msgs[0][:120]


# ------------------------------------------------------------------------------------ class 109
PIDS = """
import json, os, sys
import pandas as pd
from mixlinreg.runner import Workload, run

def compute(unit, ss):
    if unit == os.environ.get("PROBE_FAIL_UNIT"):
        raise ValueError(f"unit {unit} fails on purpose")
    return pd.DataFrame({"pid": [os.getpid()]})

if __name__ == "__main__":
    n_units, n_jobs, backend, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    wl = Workload("pidprobe", "p", {"v": 1}, tuple(f"u{i}" for i in range(n_units)), compute)
    rows, s = run(wl, None if root == "-" else root, n_jobs=n_jobs, backend=backend)
    print("RESULT", json.dumps({"parent": os.getpid(), "n_jobs": s["n_jobs"],
                                "pids": {u: int(r["pid"].iloc[0]) for u, r in rows.items()}}))
"""


def _pids(n_units=4, n_jobs=2, backend="loky", cache="cold", env=None, root="-"):
    work = _folder("pids", 0o755)
    script = work / "pidprobe.py"
    script.write_text(PIDS)
    extra = dict(env or {})
    if cache == "cold":
        extra["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="cold-", dir=work)
    extra["HOME"] = str(_folder("home_root", 0o755))
    extra["PYTHONPATH"] = f"{work}{os.pathsep}{ROOT}"
    p = _py(None, args=(str(script), str(n_units), str(n_jobs), backend, str(root)), env=extra,
            cwd=work, nobody=False)
    if p is None:
        return None, "timeout", []
    m = re.search(r"RESULT (.*)", p.stdout)
    if p.returncode != 0 or m is None:
        return None, p.stderr, _lines(p.stderr)
    return json.loads(m.group(1)), p.stderr, _lines(p.stderr)


def cases_first_use():
    def cold_workers():
        res, err, lines = _pids()
        if res is None:
            return "crash", (lines[-1] if lines else err)[:140]
        here = [u for u, pid in res["pids"].items() if pid == res["parent"]]
        said = [ln for ln in lines if "compile" in ln and "worker" in ln]
        if len(here) != 1 or len(res["pids"]) != 4:
            return "silent wrong", f"{len(here)} of 4 units ran in this process before the " \
                                   f"workers: each of {res['n_jobs']} workers compiles"
        if len(said) != 1 or len(lines) != 1:
            return "unclear", f"no single line says so: {lines[:2]}"
        return "correct result", said[0][:150]

    def quiet(**kw):
        def run():
            res, err, lines = _pids(**kw)
            if res is None:
                return "crash", (lines[-1] if lines else err)[:140]
            here = [u for u, pid in res["pids"].items() if pid == res["parent"]]
            workers = kw.get("backend", "loky") == "loky" and res["n_jobs"] > 1
            if workers and here:
                return "silent wrong", f"{len(here)} units ran here although nothing compiles"
            if lines:
                return "unclear", f"unexpected lines: {lines[:2]}"
            return "correct result", f"{len(res['pids'])} units, {res['n_jobs']} jobs, quiet"
        return run

    yield 109, "cold cache, 4 units, 2 loky workers: one unit here first, one line", cold_workers
    yield 109, "warm cache, 2 loky workers: all units in workers, quiet", quiet(cache="warm")
    yield 109, "cold cache, n_jobs=1: quiet (no workers)", quiet(n_jobs=1)
    yield 109, "cold cache, sequential backend: quiet", quiet(backend="sequential")
    yield 109, "cold cache, one unit, 2 jobs asked (1 used): quiet", quiet(n_units=1)
    yield 109, "cold cache, NUMBA_DISABLE_JIT=1: nothing compiles, quiet", \
        quiet(env={"NUMBA_DISABLE_JIT": "1"})

    def cold_store():
        root = tempfile.mkdtemp(prefix="store-", dir=_folder("pids", 0o755))
        res, err, lines = _pids(root=root)
        if res is None:
            return "crash", (lines[-1] if lines else err)[:140]
        again, err2, lines2 = _pids(root=root)
        if again is None or again["pids"] != res["pids"]:
            return "lost", "a rerun on the store recomputed units"
        here = [u for u, pid in res["pids"].items() if pid == res["parent"]]
        if len(here) != 1:
            return "silent wrong", f"{len(here)} of 4 units ran here first"
        return "correct result", "the unit run here first is stored; a rerun computes nothing"

    yield 109, "cold cache with a store: the unit run here is stored, rerun reads it", cold_store

    def cold_fail():
        res, err, lines = _pids(env={"PROBE_FAIL_UNIT": "u0"})
        if res is not None:
            return "silent wrong", "a failing unit did not fail the run"
        if "fails on purpose" in err:
            return "clear error", [ln for ln in lines if "fails on purpose" in ln][-1][:140]
        return "unclear", (lines[-1] if lines else "")[:140]

    yield 109, "cold cache, the first unit fails: its error, as with workers", cold_fail

    def stale_cache():
        def edit(pkg):
            k = pkg / "_kernels.py"
            k.write_text(k.read_text() + "\n# edited: the cached kernels are stale\n")

        site = _site("site_stale", edit=edit)
        work = _folder("pids", 0o755)
        (work / "pidprobe.py").write_text(PIDS)
        p = _py(None, site=f"{work}{os.pathsep}{site}", nobody=False, cwd=work,
                env={"HOME": str(_folder("home_root", 0o755)), "TMPDIR": str(_folder("tmp_s", 0o1777))},
                args=(str(work / "pidprobe.py"), "4", "2", "loky", "-"))
        m = re.search(r"RESULT (.*)", p.stdout) if p is not None else None
        if m is None:
            return "crash", (_lines(p.stderr)[-1] if p and p.stderr.strip() else "timeout")[:140]
        res = json.loads(m.group(1))
        here = [u for u, pid in res["pids"].items() if pid == res["parent"]]
        return ("correct result", "stale cache counts as cold") if len(here) == 1 else \
            ("silent wrong", f"{len(here)} units here: a stale cache is taken as warm")

    yield 109, "stale cache (kernel source edited since): counts as cold", stale_cache
    yield 109, "real cold compile: tiny Figure 2 run, 2 workers, kernels compile once", _real_cold


PID_LOG = """
import logging
_h = logging.StreamHandler()
_h.setFormatter(logging.Formatter("pid%(process)d %(message)s"))
logging.getLogger("mixlinreg").addHandler(_h)
"""


def _real_cold():
    """A tiny Figure 2 config on an empty NUMBA_CACHE_DIR with 2 workers: count the processes
    that compiled (the compile notices on stderr), and check the table against a warm run."""
    import pandas as pd

    from mixlinreg.harness._tiny import write_tiny

    work = _folder("real_cold", 0o755)
    cfg = write_tiny(work / "tiny.toml", trials=2)
    code = f"""
        import sys
        from mixlinreg.harness import load_config, run_experiment
        store, s = run_experiment(load_config({str(cfg)!r}, "paper"), sys.argv[1], n_jobs=int(sys.argv[2]),
                                  progress=False)
        store.table().to_csv(sys.argv[1] + ".csv", index=False)
        print("JOBS", s["n_jobs"])
    """
    script = work / "run_tiny.py"
    script.write_text(textwrap.dedent(code))
    (work / "sitecustomize.py").write_text(PID_LOG)  # every process's lines name its pid
    cache = tempfile.mkdtemp(prefix="cold-", dir=work)
    env = {"NUMBA_CACHE_DIR": cache, "HOME": str(_folder("home_root", 0o755)),
           "PYTHONPATH": f"{work}{os.pathsep}{ROOT}"}
    p = _py(None, args=(str(script), str(work / "cold"), "2"), env=env, cwd=work, nobody=False,
            timeout=900)
    if p is None:
        return "crash", "timeout"
    if p.returncode != 0:
        return ("crash" if "Traceback" in p.stderr else "unclear"), _lines(p.stderr)[-1][:140]
    warm = _py(None, args=(str(script), str(work / "warm"), "1"), nobody=False, cwd=work,
               env={"HOME": str(_folder("home_root", 0o755))})
    a = pd.read_csv(work / "cold.csv").sort_values("unit").reset_index(drop=True)
    b = pd.read_csv(work / "warm.csv").sort_values("unit").reset_index(drop=True)
    cols = ["unit", "dist_nearest", "dist_matched", "loss", "n_iter"]
    if warm is None or warm.returncode != 0 or not a[cols].equals(b[cols]):
        return "silent wrong", "the cold 2-worker table differs from a warm 1-job table"
    compiled = {ln.split()[0] for ln in _lines(p.stderr) if "numba compiled" in ln}
    told = [ln for ln in _lines(p.stderr) if "compile" in ln and "worker" in ln]
    if len(compiled) > 1:
        return "silent wrong", f"{len(compiled)} processes compiled the kernels (2 jobs)"
    if len(told) != 1:
        return "unclear", f"compiled once, but no single line says so ({len(told)})"
    return "correct result", f"compiled once; {told[0][:120]}"


def cases():
    yield from cases_install()
    yield from cases_first_use()


if __name__ == "__main__":
    from collections import Counter

    counts = Counter()
    for cls, name, fn in cases():
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 - a case that could not run is a crash
            out = ("crash", f"{type(exc).__name__}: {exc}")
        label, detail = (out, "") if isinstance(out, str) else out
        counts[cls, label] += 1
        print(f"[{label:>14}] {cls} | {name} | {detail}", flush=True)
    print(dict(counts))
