"""Issue 25, classes 4, 7 and 8 in the API: Ctrl-C stops a long ``ifca`` call (which runs in chunks
of iterations, bit for bit the one-call kernel), overflow and underflow name their cause, and the
generators refuse or warn when ``d`` cannot give ``k`` distinct clusters."""

import hashlib
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import mixlinreg as mlr
from mixlinreg import _chunked
from mixlinreg.data import DuplicateClustersWarning
from mixlinreg.geometry import min_separation

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("theta", "labels", "loss", "diverged", "converged", "n_iter")


# ------------------------------------------------------------------ class 4: chunks, Ctrl-C
def _problem(dtype, kw):
    kw = dict(kw)
    mix = mlr.make_mixture(12, 40, 4, 2, 1.0, 0.3, rng=5, dtype=dtype)
    y = mix.y
    gen = np.random.default_rng(2)
    init = gen.standard_normal((3, 2, 4)).astype(dtype)
    if kw.get("loss") == "multinomial":
        y = np.digitize(mix.y, [-0.5, 0.5]).astype(dtype)
        init = gen.standard_normal((3, 2, 4, 3)).astype(dtype)
    elif kw.get("loss") == "logistic":
        y = (mix.y > 0).astype(dtype)
    if "shared" in kw:
        init = mlr.tie_shared(init, kw["shared"]).astype(dtype)
    if kw.pop("star", False):
        kw["theta_star"] = mix.theta_star
    if kw.pop("mask", False):
        kw["participation"] = np.random.default_rng(4).random((kw["n_iter"], 3, 12)) < 0.6
    return mix.X, y, init, kw


GRID = {
    "direct": dict(method="data"),
    "stats": dict(method="stats"),
    "resample": dict(resample=True, n_iter=20),
    "participation + trace": dict(participation=5, trace=True, star=True),
    "participation mask": dict(mask=True),
    "early stop, one run diverges": dict(early_stop=True, tol=1e-3, trace=True),
    "model averaging + shared": dict(averaging="model", local_steps=2, shared=[1]),
    "shared, gradient": dict(shared=[0, 2], trace=True),
    "multinomial + trace": dict(loss="multinomial", trace=True),
    "logistic + l2": dict(loss="logistic", l2=0.1),
    "huber": dict(loss="huber", huber_delta=0.5),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(GRID))
def test_chunked_equals_one_kernel_call(name, dtype, monkeypatch):
    kw = dict(GRID[name])
    kw.setdefault("n_iter", 21)
    X, y, init, kw = _problem(dtype, kw)
    lr = np.array([0.05, 0.2, 50.0])  # the last run diverges
    out = []
    for size, groups in ((0, None), (1, 3), (4, None), (None, 5)):
        monkeypatch.setattr(_chunked, "CHUNK_ITERATIONS", size)
        monkeypatch.setattr(_chunked, "FINAL_GROUPS", groups)
        out.append(mlr.ifca(X, y, init, lr, rng=3, n_threads=1, **kw))  # 1: no waits on a busy CPU
    ref = out[0]
    for res in out[1:]:
        for f in FIELDS:
            assert np.array_equal(getattr(res, f), getattr(ref, f), equal_nan=True), f
        if ref.trace is not None:
            for f in ("labels", "loss", "dist"):
                a, b = getattr(res.trace, f), getattr(ref.trace, f)
                assert (a is None) == (b is None)
                assert a is None or np.array_equal(a, b, equal_nan=True), f
    if kw.get("loss", "squared") == "squared":  # the grid holds a diverged run
        assert ref.diverged[2] and not ref.diverged[:2].any()
    if name.startswith("early stop"):  # a frozen run stays frozen across chunks
        assert ref.converged.any() and (ref.n_iter[ref.converged] < kw["n_iter"]).all()


def test_pacer_chunk_lengths(monkeypatch):
    monkeypatch.setattr(_chunked, "CHUNK_ITERATIONS", None)
    monkeypatch.setattr(_chunked, "FINAL_GROUPS", None)
    p = _chunked._Pacer()
    assert p.size == 1
    p.record(1, 5.0)  # first chunk, compiling: too slow to trust, but not the "slowest"
    assert p.size == 1 and p.slow is None
    p.record(1, 1e-3)
    assert p.size == _chunked.GROWTH  # growth is capped
    for _ in range(5):
        p.record(p.size, p.size * 1e-3)
    assert abs(p.size - _chunked.CHUNK_SECONDS / 1e-3) <= 1  # 0.2 s at 1 ms per iteration
    p.record(1, 0.1)  # a loaded machine: 100 times slower
    assert p.size == math.ceil(_chunked.MIN_CHUNK_SECONDS / p.fast)  # 3 ms at the fast pace
    assert p.size * 0.1 <= 1.0  # even at the slow pace a chunk ends within a second
    # the final evaluation: split when one pass over all rows outlasts a chunk
    assert p.final_groups(50, 1).tolist() == [0, 50]
    assert p.final_groups(50, 10).size - 1 == 5  # 10 iterations of 0.1 s, in 0.2 s groups


def test_a_small_call_makes_few_chunks(monkeypatch):
    calls = []
    inner = _chunked._iterations
    monkeypatch.setattr(_chunked, "_iterations", lambda *a: calls.append(a[:2]) or inner(*a))
    mix = mlr.make_mixture(20, 50, 5, 2, 1.0, 0.1, rng=0)
    res = mlr.ifca(mix.X, mix.y, np.zeros((2, 2, 5)), 0.1, n_iter=400, method="data", n_threads=1)
    assert res.n_iter.tolist() == [400, 400]
    assert calls[0] == (0, 1) and calls[-1][1] == 400
    assert all(a[1] == b[0] for a, b in zip(calls, calls[1:]))  # consecutive, no gap
    # chunks of many iterations (at least MIN_CHUNK_SECONDS each), not a dispatch per iteration
    assert len(calls) <= 100, [b - a for a, b in calls]


CHILD = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import mixlinreg as mlr
    mix = mlr.make_mixture(40, 100, 30, 2, 1.0, 0.5, rng=0)
    init = np.random.default_rng(1).standard_normal((4, 2, 30))
    for method in ("data", "gram"):
        mlr.ifca(mix.X, mix.y, init, 0.05, n_iter=3, method=method)  # load (or compile) the kernels
        # a watchdog over the long call only (compiling on a cold cache under load takes minutes):
        # if the test dies before it sends SIGINT, this child must not run on for hours
        watchdog = threading.Timer(60, os._exit, (3,))
        watchdog.daemon = True
        watchdog.start()
        print("START", method, flush=True)
        try:
            mlr.ifca(mix.X, mix.y, init, 0.05, n_iter=10**7, method=method)
            print("FINISHED", flush=True)
        except KeyboardInterrupt:
            print("INTERRUPTED %.6f" % time.monotonic(), flush=True)
        watchdog.cancel()
""")


def test_sigint_stops_a_long_ifca_call():
    """A long call answers Ctrl-C (SIGINT) with KeyboardInterrupt within 2 s, on the direct path
    (chunks) and the certified-Gram path (a Python loop over iterations)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # the child answers Ctrl-C as at a terminal, also when this test runs in a background job
    # (whose shell ignores SIGINT for it, and so for its children)
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for method in ("data", "gram"):
            line = proc.stdout.readline()
            assert line.split() == ["START", method], (line, proc.stderr.read() if not line else "")
            time.sleep(0.5)
            t_sig = time.monotonic()
            proc.send_signal(signal.SIGINT)
            line = proc.stdout.readline()
            assert line.startswith("INTERRUPTED"), (method, line, proc.stderr.read() if not line else "")
            assert float(line.split()[1]) - t_sig < 2.0, (method, float(line.split()[1]) - t_sig)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# ------------------------------------------------------------ class 7: overflow, underflow
@pytest.fixture(scope="module")
def mix():
    return mlr.make_mixture(8, 20, 3, 2, 1.0, 0.1, rng=1)


@pytest.mark.parametrize("case", ["y", "X", "init", "n_iter=0", "float32", "stats", "gram"])
def test_a_loss_that_overflows_at_the_start_is_an_overflow_error(mix, case):
    X, y, init, kw = mix.X, mix.y, np.ones((2, 2, 3)), dict(n_iter=5)
    if case == "y":
        y = y * 1e160
    elif case == "X":
        X = X * 1e160
    elif case == "init":
        init = init * 1e160
    elif case == "n_iter=0":
        y, kw = y * 1e160, dict(n_iter=0)
    elif case == "float32":  # the forward pass X theta overflows float32
        X, init, kw = X * 1e30, init * 1e10, dict(n_iter=5, dtype=np.float32)
    else:
        y, kw = y * 1e160, dict(n_iter=5, method=case)
    with pytest.raises(OverflowError, match=r"overflows float(32|64) at the starting models.*"
                                            r"max\|X\| = .*max\|y\| = .*max\|init\| = .*rescale"):
        mlr.ifca(X, y, init, 0.1, **kw)


def test_overflow_names_the_runs_and_reaches_the_estimator(mix):
    starts = np.stack([np.zeros((2, 3)), np.full((2, 3), 1e160)])
    with pytest.raises(OverflowError, match=r"run\(s\) \[1\] of 2"):
        mlr.ifca(mix.X, mix.y, starts, 0.1, n_iter=5)
    with pytest.raises(OverflowError, match=r"max\|y\| = \d\.\d+e\+160"):
        mlr.IFCA(2, n_init=2, n_iter=10, random_state=1).fit(mix.X, mix.y * 1e160)
    fitted = mlr.IFCA(2, n_init=2, n_iter=20, random_state=1).fit(mix.X, mix.y)
    with pytest.raises(OverflowError, match="max"):
        fitted.score(mix.X, mix.y * 1e160)


@pytest.mark.filterwarnings("ignore::mixlinreg.DataScaleWarning")
def test_a_divergence_is_a_warning_naming_lr_and_the_scale(mix):
    for X, lr in ((mix.X, 1e6), (mix.X * 1e100, 0.1)):
        with pytest.warns(mlr.ConvergenceWarning, match=r"smaller lr.*rms\(X\) = .*1 / rms\(X\)\^2"):
            est = mlr.IFCA(2, n_init=2, n_iter=30, lr=lr, random_state=1).fit(X, mix.y)
        assert est.result_.diverged.all() and (est.result_.n_iter >= 1).all()


def _plain_init_close(theta, alpha0, n_runs, rng, direction):
    """init_close's formula with unscaled distances (the code before issue 25)."""
    radius = (0.5 - alpha0) * min_separation(theta)
    k, d = theta.shape
    if direction == "random":
        u = np.random.default_rng(rng).standard_normal((n_runs, k, d))
        u /= np.linalg.norm(u, axis=2, keepdims=True)
    else:
        u = np.empty((k, d))
        for j in range(k):
            dist = np.linalg.norm(theta - theta[j], axis=1)
            dist[j] = np.inf
            near = int(np.argmin(dist))
            u[j] = (theta[near] - theta[j]) / dist[near]
    return np.broadcast_to(theta + radius * u, (n_runs, k, d))


def test_init_close_is_unchanged_where_distances_do_not_under_or_overflow():
    gen = np.random.default_rng(0)
    for t in range(60):
        k, d = int(gen.integers(2, 6)), int(gen.integers(1, 30))
        theta = gen.standard_normal((k, d)) * 10.0 ** gen.integers(-120, 120)
        if t % 3 == 0:
            theta = gen.integers(0, 2, (k, d)) * 0.37  # ties between distances
        if min_separation(theta) == 0:
            continue
        for direction in ("random", "adversarial"):
            got = mlr.init_close(theta, 0.3, 3, rng=5, direction=direction)
            assert np.array_equal(got, _plain_init_close(theta, 0.3, 3, 5, direction))


@pytest.mark.parametrize("theta, direction", [
    ([[1e-200, 0.0], [0.0, 1e-200]], "random"),       # the squared distance underflows
    ([[1e-200, 0.0], [0.0, 1e-200]], "adversarial"),
    ([[0.0], [5e-320]], "random"),                      # subnormal
    ([[1e200, 0.0], [0.0, 1e200]], "random"),           # the squared distance overflows
    ([[1e308], [-1e308]], "adversarial"),               # the distance itself overflows
])
def test_init_close_places_starts_at_any_scale(theta, direction):
    theta = np.asarray(theta)
    init = mlr.init_close(theta, 0.25, 3, rng=0, direction=direction)
    half = theta / 2
    delta_half = min(np.linalg.norm((half[j] - half[l]) / np.max(np.abs(half[j] - half[l])))
                     * np.max(np.abs(half[j] - half[l]))
                     for j in range(len(theta)) for l in range(j + 1, len(theta)))
    got = (init - theta) / 2
    top = np.max(np.abs(got), axis=2, keepdims=True)
    r_half = np.linalg.norm(got / top, axis=2) * top[..., 0]
    assert np.isfinite(init).all()
    np.testing.assert_allclose(r_half, 0.25 * delta_half, rtol=1e-9)


def test_init_close_refusals_name_the_cause():
    with pytest.raises(ValueError, match=r"theta_star must have distinct rows.*rows \[0, 1\] are equal"):
        mlr.init_close([[1e-200, 0.0], [1e-200, 0.0]], 0.25, 2, rng=0)
    with pytest.raises(ValueError, match=r"theta_star: rows Delta = 1e-170 apart.*resolution"):
        mlr.init_close([[1.0, 0.0], [1.0, 1e-170]], 0.25, 2, rng=0)
    assert mlr.data.Mixture(X=np.zeros((2, 1, 2)), y=np.zeros((2, 1)),
                            theta_star=np.array([[1e-200, 0.0], [0.0, 1e-200]]), labels=np.array([0, 1]),
                            R=1.0, sigma=0.0, theta_scale="code").separation == pytest.approx(
        np.sqrt(2) * 1e-200, rel=1e-12)


# ------------------------------------------------- class 8: generators that cannot deliver
@pytest.mark.parametrize("call", [
    lambda: mlr.make_mixture(4, 5, 1, 2, 1.0, 0.1, rng=0),
    lambda: mlr.make_mixture(8, 5, 3, 8, 1.0, 0.1, theta_scale="norm", rng=0),
    lambda: mlr.draw_trial(8, 5, 2, 4, rng=0),
    lambda: mlr.make_student_t_mixture(6, 5, 1, 3, 1.0, 0.1, rng=0),
    lambda: mlr.make_logistic_mixture(6, 5, 1, 3, 2.0, rng=0),
], ids=["make_mixture", "norm", "draw_trial", "student_t", "logistic"])
def test_generators_refuse_d_too_small_for_k(call):
    with pytest.raises(ValueError, match=r"k = \d clusters need k distinct .* d = \d allows only \d"):
        call()


@pytest.mark.parametrize("call, clusters", [
    (lambda: mlr.make_mixture(4, 5, 2, 2, 1.0, 0.1, rng=4), "0, 1"),
    (lambda: mlr.draw_trial(6, 5, 2, 3, rng=1), "1, 2"),
    (lambda: mlr.make_student_t_mixture(4, 5, 3, 2, 1.0, 0.1, rng=4), "0, 1"),
    (lambda: mlr.make_logistic_mixture(4, 5, 1, 2, 2.0, rng=1), "0, 1"),
], ids=["make_mixture", "draw_trial", "student_t", "logistic"])
def test_equal_patterns_warn_with_clusters_and_probability(call, clusters):
    with pytest.warns(DuplicateClustersWarning, match=rf"clusters {clusters} drew the same .*"
                                                      r"probability 0\.\d+") as rec:
        call()
    assert rec[0].filename == __file__  # attributed to the caller


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def test_distinct_patterns_give_the_same_numbers_as_before():
    """Digests made by the code before issue 25 (commit 1412b3b); no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateClustersWarning)
        m = mlr.make_mixture(12, 5, 2, 3, 1.0, 0.1, rng=0)
        assert _digest(m.X, m.y, m.theta_star, m.labels) == "9fc5f01363296c95"
        m = mlr.make_student_t_mixture(8, 5, 3, 2, 1.0, 0.1, rng=1)
        assert _digest(m.X, m.y, m.theta_star, m.labels) == "fa5971f9883b8c0b"
        m = mlr.make_logistic_mixture(8, 5, 1, 2, 2.0, rng=0)
        assert _digest(m.X, m.y, m.theta_star, m.labels) == "bc38b2a7dfbbb85f"
        t = mlr.draw_trial(10, 5, 1000, 2, rng=123, dtype=np.float32)
        assert _digest(t.X, t.B, t.z, t.labels) == "65cb146aa9ba2e69"
        assert mlr.make_mixture(3, 5, 1, 1, 1.0, 0.1, rng=0).k == 1
