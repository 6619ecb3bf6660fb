"""Issue 25, classes 1 and 9: an install this user cannot write, and the kernels' first use.

Class 1: the package imports (and its kernels cache somewhere this user can write) when neither
its folder, nor HOME, nor ``NUMBA_CACHE_DIR`` can be written, with one line naming the folder that
could not be written and the one used instead (:mod:`mixlinreg._cache`). The import is tested as
an unprivileged user (``setpriv``/``runuser`` to ``nobody`` when the suite runs as root) on a
read-only copy of the package.

Class 9: with local worker processes and a cold kernel cache the runner runs the first unit in
this process, so that the kernels compile once (:func:`mixlinreg._firstuse.compile_once_first`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numba
import pytest

from mixlinreg import _cache, _firstuse

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mixlinreg"
NOBODY = 65534


@pytest.fixture
def scratch():
    """A scratch folder an unprivileged user can enter (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="mlr-test-install-"))
    d.chmod(0o755)
    yield d
    for dirpath, dirs, files in os.walk(d):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(d, ignore_errors=True)


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_", "XDG_", "PYTHON", "_MIXLINREG")) and k not in ("HOME", "TMPDIR")}
    env.update(extra)
    return env


def _unprivileged():
    """(argv prefix, description) that runs a command as a user who cannot write what root made
    read-only, or None. Not root: this user already is one."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return [], "this (non-root) user"
    for tool in (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"],
                 ["runuser", "-u", "nobody", "--"]):
        if shutil.which(tool[0]) is None:
            continue
        p = subprocess.run([*tool, sys.executable, "-c", "import numba, numpy"], env=_env(),
                           capture_output=True, text=True, cwd="/", timeout=120)
        if p.returncode == 0:
            return tool, f"user nobody via {tool[0]}"
    return None


def _read_only_copy(scratch):
    site = scratch / "site"
    shutil.copytree(PKG, site / "mixlinreg")
    for dirpath, dirs, files in os.walk(site):
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o444)
        os.chmod(dirpath, 0o555)
    return site


def _folder(path, mode):
    path.mkdir()
    path.chmod(mode)
    return path


# ------------------------------------------------------------------------------------ class 1
def test_import_as_a_user_who_cannot_write_the_package_or_home(scratch):
    """A read-only copy of the package, HOME read-only, NUMBA_CACHE_DIR unset: it imports, and
    one line names the package's cache folder and where the kernels cache instead (a private
    folder under TMPDIR, seeded with the kernels already compiled next to the package). Where
    no unprivileged user can run this interpreter, root gets what root cannot write either:
    NUMBA_CACHE_DIR and HOME under /dev/null."""
    site = _read_only_copy(scratch)
    home = _folder(scratch / "home", 0o555)
    tmp = _folder(scratch / "tmp", 0o1777)
    how = _unprivileged()
    env = _env(PYTHONPATH=str(site), HOME=str(home), TMPDIR=str(tmp))
    prefix, failed = [], str(site / "mixlinreg" / "__pycache__")
    if how is None:
        env.update(NUMBA_CACHE_DIR="/dev/null/numba", HOME="/dev/null")
        failed = "NUMBA_CACHE_DIR=/dev/null/numba"
    else:
        prefix = how[0]
    code = "import mixlinreg, mixlinreg.cli; print(mixlinreg.__file__)"
    p = subprocess.run([*prefix, sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, cwd=str(home), timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == str(site / "mixlinreg" / "__init__.py")
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    m = re.fullmatch(r"mixlinreg: cannot write numba's cache folder (\S+) \((.+)\); caching the "
                     r"compiled kernels in (\S+) instead", lines[0])
    assert m is not None, lines[0]
    assert m.group(1) == failed
    used = Path(m.group(3))
    assert used.is_dir()
    if how is not None:
        assert used.parent == tmp / f"mixlinreg-numba-{NOBODY if prefix else os.geteuid()}"
        if any((PKG / "__pycache__").glob("*.nbi")):  # seeded from the package's own cache
            assert {f.name for f in (PKG / "__pycache__").glob("*.nbi")} <= \
                {f.name for f in used.glob("*.nbi")}


def test_cache_folder_decision_in_every_case(tmp_path, monkeypatch):
    """choose(): the first folder numba would use; on failure the package's __pycache__ (after a
    failed NUMBA_CACHE_DIR), numba's user cache folder, a private temporary folder, or none.
    A file in the way makes a folder unwritable even for root."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    monkeypatch.setattr(_cache, "PACKAGE", pkg)
    monkeypatch.setattr(tempfile, "tempdir", str(_folder(tmp_path / "tmp", 0o700)))
    sub = _cache.cache_subfolder(pkg)
    blocker = tmp_path / "a_file"
    blocker.write_text("")

    ok = _cache.choose({})
    assert ok["failed"] is None and ok["folder"] == pkg / "__pycache__"
    user = _cache.choose({"NUMBA_CACHE_DIR": str(tmp_path / "c")})
    assert user["failed"] is None and user["folder"] == tmp_path / "c" / sub

    bad_user = _cache.choose({"NUMBA_CACHE_DIR": str(blocker)})
    assert bad_user["failed"] == f"NUMBA_CACHE_DIR={blocker}" and bad_user["why"]
    assert bad_user["folder"] == pkg / "__pycache__" and bad_user["env"] == ""

    (pkg / "__pycache__").rmdir()  # (made by the first choose)
    (pkg / "__pycache__").write_text("")  # the package's cache folder cannot be made
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    home = _cache.choose(xdg)
    assert home["failed"] == str(pkg / "__pycache__")
    assert home["folder"] == tmp_path / "xdg" / "numba" / sub
    assert home["env"] == str(tmp_path / "xdg" / "numba")

    tmp = _cache.choose({"XDG_CACHE_HOME": str(blocker)})
    private = tmp_path / "tmp" / f"mixlinreg-numba-{os.geteuid()}"
    assert tmp["folder"] == private / sub and tmp["env"] == str(private)
    assert private.stat().st_mode & 0o777 == 0o700

    private.chmod(0o777)  # another user could have planted code there: never used
    none = _cache.choose({"XDG_CACHE_HOME": str(blocker), "NUMBA_CACHE_DIR": str(blocker)})
    assert none["folder"] is None and none["env"] is None
    assert none["tried"] == [str(pkg / "__pycache__"), str(blocker / "numba" / sub)]


def test_subfolder_is_numbas(tmp_path):
    from numba.core.caching import _CacheLocator

    for source in (PKG / "_kernels.py", tmp_path / "x" / "m.py"):
        assert _cache.cache_subfolder(source.parent) == \
            _CacheLocator.get_suitable_cache_subpath(str(source))


def _clean_env(monkeypatch):
    """The variables setup() reads or writes: unset now, restored after the test."""
    for name in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "XDG_CACHE_HOME", _cache._SAID):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_setup_points_numba_and_workers_at_the_fallback_and_says_it_once(tmp_path, monkeypatch,
                                                                        caplog):
    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__pycache__" / "k.f-1.py311.nbi").write_bytes(b"index")
    (pkg / "__pycache__" / "k.f-1.py311.1.nbc").write_bytes(b"code")
    monkeypatch.setattr(_cache, "PACKAGE", pkg)
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    _clean_env(monkeypatch)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_cache, "writable",
                        lambda f: "Permission denied" if Path(f) == pkg / "__pycache__"
                        or str(f).startswith(str(blocker)) else None)
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        out = _cache.setup()
        again = _cache.setup()  # a worker: the environment now names a writable folder
    base = tmp_path / "xdg" / "numba"
    assert out["folder"] == base / _cache.cache_subfolder(pkg) and again["failed"] is None
    assert os.environ["NUMBA_CACHE_DIR"] == str(base) == numba.config.CACHE_DIR
    assert sorted(f.name for f in out["folder"].iterdir()) == ["k.f-1.py311.1.nbc", "k.f-1.py311.nbi"]
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and f"NUMBA_CACHE_DIR={blocker}" in msgs[0] and str(out["folder"]) in msgs[0]


def test_no_writable_folder_compiles_in_memory(tmp_path, monkeypatch, caplog):
    """Nothing writable: this package's kernels compile without a cache (every other package's
    cache is left alone), one line says so, and the first-use notice claims no folder."""
    from numba.core import caching, dispatcher

    monkeypatch.setattr(dispatcher.Dispatcher, "enable_caching", dispatcher.Dispatcher.enable_caching)
    monkeypatch.setattr(_cache, "choose", lambda environ=None: dict(
        folder=None, env=None, failed="/ro/__pycache__", why="Permission denied", tried=["/ro/x"]))
    _clean_env(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        _cache.setup()
    assert [r.getMessage() for r in caplog.records] == [
        "mixlinreg: cannot write numba's cache folder /ro/__pycache__ (Permission denied) nor "
        "/ro/x; the kernels compile in memory, again in every process (set NUMBA_CACHE_DIR to a "
        "writable folder to cache them)"]
    source = tmp_path / "kern.py"
    source.write_text("import numba\n@numba.njit(cache=True)\ndef f(a):\n    return a + 1.0\n")
    ours, theirs = {"__name__": "mixlinreg._probe"}, {"__name__": "elsewhere"}
    for g in (ours, theirs):
        exec(compile(source.read_text(), str(source), "exec"), g)
    assert isinstance(ours["f"]._cache, caching.NullCache)
    assert isinstance(theirs["f"]._cache, caching.FunctionCache)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        assert _firstuse.announce_compile(ours["f"], "probe")(1.0) == 2.0
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "not cached" in msg and "None" not in msg


def test_nothing_to_do_without_the_jit(monkeypatch):
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    monkeypatch.setattr(_cache, "choose", lambda environ=None: pytest.fail("no decision to make"))
    assert _cache.setup() == {}


# ------------------------------------------------------------------------------------ class 9
class _Index:
    def __init__(self, entries):
        self.entries = entries

    def _load_index(self):
        if isinstance(self.entries, Exception):
            raise self.entries
        return self.entries


class _Disp:
    def __init__(self, entries, path="/c"):
        from numba.core.caching import NullCache

        self._cache = NullCache() if entries is None else type(
            "C", (), {"_cache_file": _Index(entries), "cache_path": path})()


@pytest.mark.parametrize("entries, cold", [
    ([{"sig": "f"}, {"sig": "g"}], None),       # every entry kernel has machine code cached
    ([{"sig": "f"}, {}], "/c1"),                # one has none (a new or stale index): cold
    ([OSError("damaged"), {"sig": "g"}], "/c0"),  # an unreadable index is a cold one
    ([None, None], None),                       # compiled without a cache: nothing to share
])
def test_kernels_cold_reads_the_cache_indexes(monkeypatch, entries, cold):
    disps = [_Disp(e, f"/c{i}") for i, e in enumerate(entries)]
    monkeypatch.setattr(_firstuse, "_entry_kernels", lambda: disps)
    assert _firstuse.kernels_cold() == cold


def _drain(gen):
    out = []
    try:
        while True:
            out.append(next(gen))
    except StopIteration as stop:
        return out, stop.value


def test_compile_once_first_runs_the_first_unit_here_only_when_it_helps(monkeypatch, caplog):
    calls = []
    fn = lambda item: calls.append(item) or f"done {item}"  # noqa: E731
    monkeypatch.setattr(_firstuse, "kernels_cold", lambda: "/cache/mixlinreg_x")
    consumed = []

    def lazy():
        for i in range(5):
            consumed.append(i)
            yield i

    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        done, rest = _drain(_firstuse.compile_once_first(fn, lazy(), n_jobs=3, backend="loky"))
        assert done == ["done 0"] and consumed == [0]  # the rest stays lazy, for the workers
        assert list(rest) == [1, 2, 3, 4]
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "/cache/mixlinreg_x" in msg and "compiles once any it needs" in msg and "3 workers" in msg
    caplog.clear()
    items = ["a", "b"]
    for kw in (dict(n_jobs=1, backend="loky"), dict(n_jobs=2, backend="dask"),
               dict(n_jobs=2, backend="sequential")):
        assert _drain(_firstuse.compile_once_first(fn, items, **kw)) == ([], items)
    monkeypatch.setattr(_firstuse, "kernels_cold", lambda: None)
    assert _drain(_firstuse.compile_once_first(fn, items, n_jobs=2, backend="loky")) == ([], items)
    assert calls == [0] and not caplog.records


PIDS = """
import json, os, sys
import pandas as pd
from mixlinreg import _firstuse
from mixlinreg.runner import Workload, run

def compute(unit, ss):
    return pd.DataFrame({"pid": [os.getpid()]})

if __name__ == "__main__":
    wl = Workload("pidprobe", "p", {"v": 1}, ("u0", "u1", "u2", "u3"), compute)
    rows, s = run(wl, None, n_jobs=2)
    print(json.dumps({"parent": os.getpid(), "cold": _firstuse.kernels_cold(), "jobs": s["n_jobs"],
                      "pids": [int(r["pid"].iloc[0]) for r in rows.values()]}))
"""


def _widen_affinity(cores):
    try:
        os.sched_setaffinity(0, cores)
    except OSError:  # a cpuset that forbids some: the child keeps what it inherited
        pass


def test_runner_runs_the_first_unit_here_on_a_cold_cache(tmp_path):
    """The runner with 2 loky workers and an empty NUMBA_CACHE_DIR (a cold cache, nothing
    compiled): exactly one unit runs in this process, and one line says why."""
    from mixlinreg._env import cpu_limits

    # the machine's cores, not what this (possibly long-lived test worker) process was narrowed to
    cores = sorted(os.sched_getaffinity(0) | set(range(os.cpu_count() or 1)))
    if len(cores) < 2 or (cpu_limits()["cgroup"] or 2) < 2:
        pytest.skip(f"one usable core: the runner starts no workers ({cpu_limits()})")
    (tmp_path / "pidprobe.py").write_text(textwrap.dedent(PIDS))
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cold"), HOME=str(tmp_path),
               PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    env.pop("OMP_NUM_THREADS", None)
    p = subprocess.run([sys.executable, str(tmp_path / "pidprobe.py")], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=240,
                       preexec_fn=lambda: _widen_affinity(cores))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["jobs"] == 2 and out["cold"] and out["cold"].startswith(str(tmp_path / "cold"))
    assert out["pids"].count(out["parent"]) == 1, out
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "compiles once any it needs, then 2 workers load them" in lines[0], lines


@pytest.mark.slow
def test_a_cold_run_with_two_workers_compiles_the_kernels_once(tmp_path):
    """For real (about a minute of CPU): a tiny Figure 2 config, empty NUMBA_CACHE_DIR, 2 workers;
    one process compiles (one compile notice), and the table equals a warm one-job run."""
    import pandas as pd

    from mixlinreg.harness._tiny import write_tiny

    cfg = write_tiny(tmp_path / "tiny.toml", trials=2)
    code = textwrap.dedent(f"""
        import sys
        from mixlinreg.harness import load_config, run_experiment
        store, s = run_experiment(load_config({str(cfg)!r}, "paper"), sys.argv[1],
                                  n_jobs=int(sys.argv[2]), progress=False)
        store.table().to_csv(sys.argv[1] + ".csv", index=False)
    """)
    (tmp_path / "sitecustomize.py").write_text(  # every process's lines name its pid
        "import logging\n_h = logging.StreamHandler()\n"
        "_h.setFormatter(logging.Formatter('pid%(process)d %(message)s'))\n"
        "logging.getLogger('mixlinreg').addHandler(_h)\n")
    tables, errs = {}, {}
    for tag, jobs, cache in (("cold", 2, str(tmp_path / "cache")), ("warm", 1, None)):
        env = _env(HOME=str(tmp_path), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
        if cache:
            env["NUMBA_CACHE_DIR"] = cache
        p = subprocess.run([sys.executable, "-c", code, str(tmp_path / tag), str(jobs)], env=env,
                           capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-2000:]
        errs[tag] = p.stderr
        tables[tag] = pd.read_csv(tmp_path / f"{tag}.csv").sort_values(["unit", "init", "step"])
    assert len(set(re.findall(r"(pid\d+) mixlinreg: numba compiled", errs["cold"]))) == 1, errs["cold"]
    assert "compiles once any it needs" in errs["cold"]
    cols = ["unit", "dist_nearest", "dist_matched", "loss", "n_iter"]
    assert tables["cold"][cols].reset_index(drop=True).equals(tables["warm"][cols].reset_index(drop=True))
