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


# ----------------------------------------------------------------------------- underflow
@pytest.fixture(scope="module")
def mix4():
    return mlr.make_mixture(m=20, n=30, d=4, k=2, R=2.0, sigma=0.1, rng=0)


@pytest.mark.parametrize("scale, dtype", [(1e-300, np.float64), (1e-170, np.float64),
                                          (1e-20, np.float32), (1e-300, np.float32)])
def test_ifca_refuses_data_whose_losses_underflow(mix4, scale, dtype):
    """Scaled by 1e-300 (or 1e-170: the squares underflow), ifca started at the true models put
    every machine on model 0 (ARI 0) without a word. In float32 the smallest normal is 1.2e-38;
    a float64 1e-300 is 0 once cast to float32, so the scale is read before the cast."""
    with pytest.raises(FloatingPointError) as info:
        mlr.ifca(mix4.X * scale, mix4.y * scale, mix4.theta_star[None] * 1.0, 0.1, n_iter=5,
                 dtype=dtype)
    msg = str(info.value)
    assert f"underflows {np.dtype(dtype).name}" in msg
    assert f"max|X| = {float(np.abs(mix4.X).max()) * scale:.3g}" in msg
    assert f"max|y| = {float(np.abs(mix4.y).max()) * scale:.3g}" in msg
    assert "rescale the data" in msg


@pytest.mark.parametrize("scale, dtype", [(1e-100, np.float64), (1e-140, np.float64),
                                          (1e-14, np.float32)])
def test_small_data_above_the_threshold_still_cluster(mix4, scale, dtype):
    """Not every small scale is refused: where the products stay normal numbers the
    assignments at the true models are the true clusters."""
    res = mlr.ifca((mix4.X * scale).astype(dtype), (mix4.y * scale).astype(dtype),
                   mix4.theta_star[None] * 1.0, 0.1, n_iter=0, dtype=dtype)
    assert mlr.adjusted_rand(mix4.labels, res.labels[0]) == 1.0


def test_underflow_rules_per_loss(mix4):
    """``max|y|^2`` counts for the squared and Huber losses (the loss of a model fitting such
    y underflows), not for the logistic loss (y in [0, 1]); features all 0 or y all 0 are not
    an underflow."""
    init = mix4.theta_star[None] * 1.0
    for loss in ("squared", "huber"):
        with pytest.raises(FloatingPointError, match=r"max\|y\|\^2"):
            mlr.ifca(mix4.X, mix4.y * 1e-170, init, 0.1, n_iter=0, loss=loss)
    labels01 = (mix4.y > 0).astype(float)
    mlr.ifca(mix4.X, labels01 * 1e-170, init, 0.1, n_iter=0, loss="logistic")
    with pytest.raises(FloatingPointError, match="logistic loss"):
        mlr.ifca(mix4.X * 1e-310, labels01, init, 0.1, n_iter=0, loss="logistic")
    mlr.ifca(np.zeros_like(mix4.X), mix4.y, init, 0.1, n_iter=0)
    mlr.ifca(mix4.X, np.zeros_like(mix4.y), init, 0.1, n_iter=0)


def test_estimator_refuses_underflow_instead_of_blaming_the_data(mix4):
    """``IFCA.fit`` on data scaled by 1e-300 returned its random start with only an
    EmptyClusterWarning blaming the data."""
    import warnings

    for dtype in (np.float64, np.float32):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no EmptyClusterWarning first
            with pytest.raises(FloatingPointError, match=r"IFCA.fit: the data's scale underflows"):
                mlr.IFCA(2, n_iter=5, random_state=0, dtype=dtype).fit(mix4.X * 1e-300,
                                                                       mix4.y * 1e-300)


ITERATIVE = [("cfl", {}), ("fpfc", dict(rng=0)), ("fedavg", {}), ("local_train", {}),
             ("per_fedavg", dict(alpha=0.1, beta=0.1)), ("soft_ifca", dict(temperature=1.0)),
             ("ifca_weighted", {})]


@pytest.mark.parametrize("name, kw", ITERATIVE, ids=[n for n, _ in ITERATIVE])
def test_iterative_baselines_refuse_underflow(mix4, name, kw):
    """cfl and fpfc returned one cluster (ARI 0) silently; fedavg and local_train a
    ZeroDivisionError (their default step 1 / L with L = 0)."""
    from mixlinreg import baselines

    args = (mix4.X * 1e-300, mix4.y * 1e-300)
    if name == "soft_ifca":
        args += (mix4.theta_star * 1.0,)
        kw = dict(kw, lr=0.1)
    if name == "ifca_weighted":
        args += (mix4.theta_star[None] * 1.0, 0.1)
    with pytest.raises(FloatingPointError, match=rf"{name}: the data's scale underflows float64"):
        getattr(baselines, name)(*args, **kw)


def test_closed_form_baselines_still_fit_tiny_data(mix4):
    """oracle and one_shot solve least squares with LAPACK, which rescales: on data scaled by
    1e-300 they find what they find on the data themselves, so they are not refused."""
    from mixlinreg import baselines

    s = 1e-300
    a = baselines.oracle(mix4.X, mix4.y, mix4.labels)
    b = baselines.oracle(mix4.X * s, mix4.y * s, mix4.labels)
    np.testing.assert_allclose(b.theta, a.theta, rtol=1e-10)
    one = baselines.one_shot(mix4.X * s, mix4.y * s, 2, rng=0)
    assert mlr.adjusted_rand(mix4.labels, one.labels) == 1.0


# ----------------------------------------------------------------------------- participation
@pytest.mark.parametrize("frac, count", [(0.5, 5), (1.0, 10), (np.float64(0.3), 3)])
def test_ifca_participation_is_a_count_and_a_fraction_is_refused_naming_it(mix, frac, count):
    """ifca's participation counts machines; fpfc's and digits' is a fraction. A float in ifca
    (1.0 would read as 'every machine' there, 1 is one machine here) is refused, naming the
    parameter, both meanings and the count it would be."""
    with pytest.raises(ValueError) as info:
        mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2, participation=frac, rng=0)
    msg = str(info.value)
    assert msg.startswith("participation must be None, an int in [1, 10] (the machines of each "
                          "iteration)")
    assert f"got the float {float(frac)!r}" in msg and f"pass participation={count}" in msg
    assert "in fpfc and digits it is the fraction" in msg


def test_ifca_participation_count_unchanged(mix):
    """The old calls still work, unwarned: an int (also a numpy int) and a mask."""
    import warnings

    init = np.zeros((1, 2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, participation=4, rng=1)
        b = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, participation=np.int64(4), rng=1)
        mask = np.ones((3, 1, 10), dtype=bool)
        c = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, participation=mask)
    d = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3)
    assert np.array_equal(a.theta, b.theta) and np.array_equal(c.theta, d.theta)


def test_fraction_participation_old_int_call_still_works_with_a_future_warning(mix):
    """fpfc(participation=1) and digits' participation=1 meant every machine (a fraction):
    still so, with a FutureWarning saying ints mean a count in ifca; 1.0 is unwarned."""
    import warnings

    from mixlinreg import baselines, digits

    with pytest.warns(FutureWarning, match=r"fpfc: participation=1 is an int, read as the "
                                           r"fraction 1.0 .*in ifca participation counts"):
        old = baselines.fpfc(mix.X, mix.y, participation=1, n_rounds=3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = baselines.fpfc(mix.X, mix.y, participation=1.0, n_rounds=3, rng=0)
        assert digits.participation_masks(10, 1.0, 2).all()
    np.testing.assert_array_equal(old.theta, new.theta)
    with pytest.warns(FutureWarning, match="participation_masks: participation=1 is an int"):
        assert digits.participation_masks(10, 1, 2).all()


@pytest.mark.parametrize("bad, err, words", [
    (3, ValueError, r"participation must be a fraction of the machines, a float in \(0, 1\], in "
                    r"fpfc, got the int 3 .*pass participation=s / m"),
    (0, ValueError, "got the int 0"),
    (1.5, ValueError, r"participation must be a finite number in \(0.0, 1.0\], got 1.5"),
    (True, TypeError, "participation must be a real number, got True"),
    ("half", TypeError, "participation must be a real number"),
])
def test_fpfc_participation_wrong_type_or_range_names_it(mix, bad, err, words):
    from mixlinreg import baselines

    with pytest.raises(err, match=words):
        baselines.fpfc(mix.X, mix.y, participation=bad, n_rounds=2, rng=0)


def test_digits_participation_refuses_a_count(mix):
    from mixlinreg import digits

    with pytest.raises(ValueError, match="in participation_masks, got the int 5"):
        digits.participation_masks(10, 5, 2)
    X = np.zeros((4, 3, 64))
    y = np.zeros((4, 3), dtype=int)
    with pytest.raises(ValueError, match="in digits, got the int 2"):
        digits.ifca_model_averaging(X, y, 2, rounds=1, participation=2)
