"""Issue 41, the settings that were silently ignored or wrongly named (items 2-4): ``rng``
validated whether or not a call draws from it, ``use_kernel`` / ``use_backend`` as a statement
and as a context, one meaning for ``participation``, the data's scale refused where the losses
underflow, and a bad ``NUMBA_NUM_THREADS`` in one line."""

from __future__ import annotations

import numpy as np
import pytest

import mixlinreg as mlr


@pytest.fixture(scope="module")
def mix():
    return mlr.make_mixture(m=10, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=0)


# ----------------------------------------------------------------------------- rng
@pytest.mark.parametrize("bad", ["x", 1.5, object(), np.random.RandomState(0)])
def test_ifca_rng_checked_when_nothing_is_drawn(mix, bad):
    """``ifca(..., rng="x")`` without an int ``participation`` draws nothing; it was accepted."""
    with pytest.raises(TypeError, match="rng must be None, an int seed"):
        mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2, rng=bad)


def test_ifca_rng_same_draws_as_before(mix):
    """Checking ``rng`` up front changes no draw: an int seed, a SeedSequence and a Generator
    give the participation masks of the spawned children, as before."""
    init = np.random.default_rng(1).standard_normal((2, 2, 3))
    a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=20, participation=4, rng=7)
    b = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=20, participation=4,
                 rng=np.random.default_rng(7))
    c = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=20, participation=4,
                 rng=np.random.SeedSequence(7))
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.theta, c.theta)
    # the masks the runs were given: run r's s = 4 machines per iteration from child r of rng
    from mixlinreg._problem import _check_participation

    part, _ = _check_participation(4, 20, 2, 10, np.random.default_rng(7))
    kids = np.random.default_rng(7).spawn(2)
    want = np.zeros((20, 2, 10), dtype=bool)
    for r, g in enumerate(kids):
        for t in range(20):
            want[t, r, g.choice(10, size=4, replace=False)] = True
    assert np.array_equal(part, want)


# ----------------------------------------------------------------------------- use_kernel
@pytest.fixture
def kernel_restored():
    """The process default of the kernel put back after the test (a bare call changes it)."""
    from mixlinreg import _kernel_choice

    before = dict(_kernel_choice._process)
    yield
    _kernel_choice._process.update(before)


def _jax():
    return pytest.importorskip("jax")


def test_use_kernel_as_a_statement_sets_the_default(mix, kernel_restored):
    """``mlr.use_kernel("jax")`` as a statement (as ``matplotlib.use``) did nothing: later calls
    ran on numba. Now it is the default until changed, in this thread and in others."""
    _jax()
    import threading

    from mixlinreg._kernel_choice import current_kernel

    init = np.zeros((1, 2, 3))
    mlr.use_kernel("jax")
    assert current_kernel() == "jax"
    assert mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=2).method == "jax"
    seen = []
    t = threading.Thread(target=lambda: seen.append(current_kernel()))
    t.start()
    t.join()
    assert seen == ["jax"]  # a process default, not a context variable of this thread only
    assert mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=2, kernel="numba").method != "jax"
    mlr.use_kernel("numba")
    assert mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=2).method != "jax"


def test_use_backend_as_a_statement_too(mix, kernel_restored):
    _jax()
    from mixlinreg._kernel_choice import current_kernel

    with pytest.warns(FutureWarning, match="use_backend is renamed use_kernel"):
        mlr.use_backend("jax")
    assert current_kernel() == "jax"


def test_use_kernel_as_a_context_restores_on_exit(mix, kernel_restored):
    """In a ``with`` block the kernel holds inside only: on leaving (normally or by an exception)
    it is what it was, whether that was the first default or a bare call's."""
    _jax()
    from mixlinreg._kernel_choice import current_kernel

    init = np.zeros((1, 2, 3))
    with mlr.use_kernel("jax") as k:
        assert k == "jax" and mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=2).method == "jax"
    assert current_kernel() == "numba"
    mlr.use_kernel("jax")
    with mlr.use_kernel("numba"):
        assert current_kernel() == "numba"
        with mlr.use_kernel("jax"):
            assert current_kernel() == "jax"
        assert current_kernel() == "numba"
    assert current_kernel() == "jax"
    with pytest.raises(RuntimeError, match="inside"):
        with mlr.use_kernel("numba"):
            raise RuntimeError("inside")
    assert current_kernel() == "jax"


def test_use_kernel_without_jax_is_one_error_and_changes_nothing(monkeypatch, kernel_restored):
    import sys

    from mixlinreg._kernel_choice import current_kernel

    monkeypatch.setitem(sys.modules, "jax", None)  # "import jax" now raises ImportError
    for call in (lambda: mlr.use_kernel("jax"), lambda: mlr.use_kernel("jax").__enter__()):
        with pytest.raises(ImportError, match=r"pip install 'mixlinreg\[jax\]'"):
            call()
        assert current_kernel() == "numba"
    with pytest.raises(ValueError, match=r"kernel must be one of \['jax', 'numba'\], got 'cuda'"):
        mlr.use_kernel("cuda")
    assert current_kernel() == "numba"


# ----------------------------------------------------------------------------- NUMBA_NUM_THREADS
def _with_threads(value, argv):
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_NUM_THREADS": value}
    return subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True,
                          timeout=300)


BAD_THREADS = ["0", "-1", "abc", "1.5", str(10 * (__import__("os").cpu_count() or 1) + 1)]


@pytest.mark.parametrize("value", BAD_THREADS)
def test_bad_numba_num_threads_is_one_line_in_the_command(value):
    """``NUMBA_NUM_THREADS=0 mixlinreg --help`` was numba's traceback at import (for every
    command); a non-integer, numba's warning with a traceback; 100000, a segmentation fault."""
    p = _with_threads(value, ["-m", "mixlinreg.cli", "--help"])
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "NUMBA_NUM_THREADS must be a whole number from 1 to" in lines[0]
    assert f"got {value!r}" in lines[0]


@pytest.mark.parametrize("value", ["0", "abc"])
def test_bad_numba_num_threads_is_a_value_error_at_import(value):
    p = _with_threads(value, ["-c", "import mixlinreg"])
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: NUMBA_NUM_THREADS must be a whole number from 1 to")
    assert f"got {value!r}" in last
    assert "site-packages/numba" not in p.stderr  # refused before numba, not numba's traceback


@pytest.mark.parametrize("value", ["1", " 1 ", ""])
def test_good_numba_num_threads_still_work(value):
    p = _with_threads(value, ["-c", "import mixlinreg, numba; print(numba.config.NUMBA_NUM_THREADS)"])
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.strip()) >= 1 and (value.strip() == "" or int(p.stdout) == int(value))


def test_numba_threads_problem_bounds():
    from mixlinreg._env import numba_threads_problem

    assert numba_threads_problem(None) is None and numba_threads_problem("  ") is None
    assert numba_threads_problem("4", cpus=4) is None and numba_threads_problem("1", cpus=4) is None
    for bad in ("0", "5", "x", "2.0", "-3"):
        assert "from 1 to 4" in numba_threads_problem(bad, cpus=4)

