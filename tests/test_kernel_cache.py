"""No stale kernels: numba's cache is keyed by the source of everything the kernels compile.

numba judges a cached kernel fresh by its own source file only, so a kernel of ``_kernels.py``
that inlines a loss of ``losses.py`` would run the old loss after ``losses.py`` is edited (issue
36: a new loss ran as Huber). :mod:`mixlinreg._cache` adds a digest of :func:`kernel_sources` to
every package kernel's cache stamp. These tests edit a loss in a copy of the package and show that
the next call computes with the edited loss.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest

import mixlinreg
from mixlinreg import _cache

ROOT = Path(mixlinreg.__file__).resolve().parent
JIT_OFF = os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")


def _copy_package(tmp_path) -> Path:
    """A copy of the package (no compiled caches) under ``tmp_path/site``; returns the copy."""
    dest = tmp_path / "site" / "mixlinreg"
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return dest


def _child(site, code):
    """Run ``code`` with the copy first on the path, numba caching in the copy's own folders."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600, cwd=site)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not found once in {path}"
    path.write_text(text.replace(old, new))


#: Huber's value branches in ``losses.huber_value``, and the same loss doubled (an exact factor 2)
HUBER = ("        return 0.5 * r * r\n    return delta * (a - 0.5 * delta)\n",
         "        return r * r\n    return 2.0 * delta * (a - 0.5 * delta)\n")


def test_kernel_sources_are_the_jitted_modules_and_their_imports():
    names = {p.relative_to(ROOT).as_posix() for p in _cache.kernel_sources()}
    # the modules with numba functions, and what they import from the package
    assert {"_kernels.py", "_gram.py", "losses.py", "_numerics.py"} <= names
    # nothing that the kernels do not compile (an edit there must not cost a recompile): the chunk
    # driver _chunked.py calls the kernels from Python and holds no numba function of its own
    assert not names & {"__init__.py", "ifca.py", "estimator.py", "cli.py", "_cache.py",
                        "_chunked.py"}


def test_every_package_kernel_is_covered_by_the_digest():
    """Every numba dispatcher defined anywhere in the package has its source file hashed."""
    sources = set(_cache.kernel_sources())
    found = {}
    for info in pkgutil.walk_packages(mixlinreg.__path__, "mixlinreg."):
        if info.name.startswith("mixlinreg.teach._widgets"):
            continue  # ipywidgets only (the teach extra); no kernels
        try:
            mod = importlib.import_module(info.name)
        except ImportError:
            continue
        for value in vars(mod).values():
            if isinstance(value, numba.core.dispatcher.Dispatcher):
                found[id(value)] = Path(inspect.getfile(value.py_func)).resolve()
    assert len(found) >= 20
    assert set(found.values()) <= sources, set(found.values()) - sources


@pytest.mark.skipif(JIT_OFF, reason="no compiled kernels with the JIT off")
def test_package_kernels_carry_the_digest_and_others_do_not():
    from mixlinreg import _kernels

    stamp = _kernels._argmin._cache._impl.locator.get_source_stamp()
    assert stamp[1:] == ("mixlinreg kernel sources", _cache.kernel_digest())

    @numba.njit(cache=True)
    def elsewhere(x):  # a function of another package (this test file) keeps numba's own stamp
        return x + 1

    locator = elsewhere._cache._impl.locator
    assert not getattr(type(locator), "_mixlinreg_keyed", False)


def test_digest_follows_every_kernel_source(tmp_path):
    pkg = _copy_package(tmp_path)
    before = _cache.kernel_digest(pkg)
    assert before == _cache.kernel_digest(ROOT)
    (pkg / "cli.py").write_text((pkg / "cli.py").read_text() + "\n# an edit the kernels ignore\n")
    assert _cache.kernel_digest(pkg) == before
    for name in ("losses.py", "_numerics.py", "_gram.py"):
        path = pkg / name
        path.write_text(path.read_text() + "\n# edited\n")
        after = _cache.kernel_digest(pkg)
        assert after != before, name
        before = after
    # a new module with a kernel of its own joins the digest, and so do the modules it imports
    (pkg / "_extra.py").write_text("import numba\nfrom . import bench\n\n@numba.njit(cache=True)\n"
                                   "def f(x):\n    return x\n")
    names = {p.relative_to(pkg.resolve()).as_posix() for p in _cache.kernel_sources(pkg)}
    assert {"_extra.py", "bench.py"} <= names


# a kernel of another file than losses.py that inlines the registry's loss: the same structure as
# _kernels.py's, compiled in about a second
PROBE = ("import numba\nfrom .losses import CODES, ell\n\nHUBER = CODES['huber']\n\n\n"
         "@numba.njit(cache=True)\ndef huber_sum(r):\n    s = 0.0\n    for v in r:\n"
         "        s += ell(v, 0.0, HUBER, 1.0)\n    return s\n")
CALL = ("import numpy as np\nfrom mixlinreg import _probe_kernel as p\n"
        "print(repr(p.huber_sum(np.array([0.25, -0.5, 3.0]))), sum(p.huber_sum.stats.cache_hits.values()))")


@pytest.mark.skipif(JIT_OFF, reason="no compiled kernels with the JIT off")
def test_an_edited_loss_is_used_by_a_cached_kernel_of_another_file(tmp_path):
    pkg = _copy_package(tmp_path)
    (pkg / "_probe_kernel.py").write_text(PROBE)
    value, hits = _child(pkg.parent, CALL).split()
    assert float(value) == 0.5 * 0.25**2 + 0.5 * 0.5**2 + (3.0 - 0.5)
    assert _child(pkg.parent, CALL).split() == [value, "1"]  # cached: loaded, same value
    _edit(pkg / "losses.py", *HUBER)
    edited, hits = _child(pkg.parent, CALL).split()
    # numba's own rule would load the stale kernel (probe file unchanged) and print `value`
    assert float(edited) == 2 * float(value) and hits == "0"
    assert _child(pkg.parent, CALL).split() == [edited, "1"]  # and caches the new one


@pytest.mark.slow
@pytest.mark.skipif(JIT_OFF, reason="no compiled kernels with the JIT off")
def test_an_edited_loss_changes_ifca_on_the_next_call(tmp_path):
    """End to end through ``ifca``: about two kernel compiles (a minute or more each on 2 cores)."""
    pkg = _copy_package(tmp_path)
    code = ("import numpy as np, mixlinreg as mlr\nrng = np.random.default_rng(0)\n"
            "X = rng.standard_normal((6, 20, 3)); y = 3 * rng.standard_normal((6, 20))\n"
            "res = mlr.ifca(X, y, rng.standard_normal((1, 2, 3)), lr=0.1, n_iter=3, "
            "loss='huber', huber_delta=1.0)\nprint(repr(float(np.asarray(res.loss).ravel()[0])))\n")
    first = float(_child(pkg.parent, code))
    _edit(pkg / "losses.py", *HUBER)  # every loss doubled: same steps' choices, twice the loss
    second = float(_child(pkg.parent, code))
    assert second == pytest.approx(2 * first, rel=1e-12)
