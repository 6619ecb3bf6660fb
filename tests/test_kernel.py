"""Compare the batched kernel ``mixlinreg.ifca`` with the slow reference ``naive.naive_ifca``.

Tolerances (see also mixlinreg/_numerics.py):
- float64: rtol 1e-10.  Kernel and reference do the same arithmetic in a different order (BLAS
  blocking, per-chunk partial sums, sufficient statistics X^T X, X^T y instead of rows, fused
  multiply-add).  Each iteration adds relative differences of a few 1e-16 times a modest condition
  number; over <= 8 well-conditioned iterations that stays around 1e-14..1e-13, so 1e-10 leaves
  three or more orders of magnitude of headroom while still catching any real difference (a
  different row block, a missing machine or a wrong divisor changes results at the 1e-2 level).
  Relative tolerances are applied to whole arrays: atol = rtol * max|expected|, since an entry
  that is near zero by cancellation carries the absolute rounding error of its array's scale.
- float32: TEST_RTOL[float32] = 2e-4 against the float64 reference on the same (float32-rounded)
  inputs: float32 has eps = 6e-8; sums over n * d <= 250 terms and <= 8 iterations amplify the
  per-operation error by at most a few hundred, giving ~1e-5, so 2e-4 is safe and still far below
  any algorithmic difference.
Integer outputs (labels, n_iter) and flags must be EQUAL: the test problems have no near ties.
"""

import zlib

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from naive import naive_ifca

ifca_mod = pytest.importorskip("mixlinreg.ifca")
from mixlinreg import ifca  # noqa: E402
from mixlinreg._numerics import TEST_RTOL  # noqa: E402

RTOL64 = 1e-10
RTOL32 = TEST_RTOL[np.dtype(np.float32)]
assert TEST_RTOL[np.dtype(np.float64)] == RTOL64

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _close(got, expect, rtol, what):
    got = np.asarray(got)
    expect = np.asarray(expect)
    assert got.shape == expect.shape, f"{what}: shape {got.shape} != {expect.shape}"
    finite = np.isfinite(expect)
    assert_array_equal(np.isfinite(got), finite, err_msg=f"{what}: finiteness differs")
    scale = np.max(np.abs(expect[finite])) if finite.any() else 0.0
    assert_allclose(got[finite], expect[finite], rtol=rtol, atol=rtol * scale, err_msg=what)


def assert_matches_naive(res, ref, rtol=RTOL64, trace=True):
    """Every output of the kernel result ``res`` against the reference dict ``ref``."""
    assert_array_equal(res.n_iter, ref["n_iter"], err_msg="n_iter")
    assert_array_equal(res.diverged, ref["diverged"], err_msg="diverged")
    assert_array_equal(res.converged, ref["converged"], err_msg="converged")
    assert_array_equal(res.labels, ref["labels"], err_msg="labels")
    _close(res.theta, ref["theta"], rtol, "theta")
    _close(res.loss, ref["loss"], rtol, "loss")
    if trace:
        assert res.trace is not None
        assert_array_equal(res.trace.labels, ref["trace_labels"], err_msg="trace.labels")
        _close(res.trace.loss, ref["trace_loss"], rtol, "trace.loss")
        if ref["trace_dist"] is None:
            assert res.trace.dist is None
        else:
            _close(res.trace.dist, ref["trace_dist"], rtol, "trace.dist")


def _kw_for_naive(kw):
    """Translate ifca keyword arguments to naive_ifca ones."""
    out = {key: val for key, val in kw.items()
           if key not in ("method", "participation", "trace", "n_threads", "rng")}
    if "participation" in kw:
        out["participation_mask"] = kw["participation"]
    return out


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())


# ---------------------------------------------------------------------------------------------
# the full grid against the reference, float64
# ---------------------------------------------------------------------------------------------
LOSSES = {
    "squared": dict(loss="squared", l2=0.0),
    "squared_l2": dict(loss="squared", l2=0.2),
    "logistic": dict(loss="logistic", l2=0.05),
    "huber": dict(loss="huber", l2=0.02, huber_delta=0.5),
}
AVERAGING = {
    "gradient": dict(averaging="gradient"),                    # method="auto"
    "gradient_stats": dict(averaging="gradient", method="stats"),
    "gradient_data": dict(averaging="gradient", method="data"),
    "model1": dict(averaging="model", local_steps=1),
    "model3": dict(averaging="model", local_steps=3),
}


def _grid():
    for loss in LOSSES:
        for resample in (False, True):
            for avg in AVERAGING:
                if avg.startswith("gradient_") and (not loss.startswith("squared") or resample):
                    continue  # stats / data methods: squared loss, no resampling
                for part in ("all", "mask"):
                    yield pytest.param(loss, resample, avg, part,
                                       id=f"{loss}-{'resample' if resample else 'full'}-{avg}-{part}")


def _grid_problem(seed, loss, resample, averaging, make_problem):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(6, 13))
    d = int(rng.integers(3, 8))
    k = int(rng.integers(2, 4))
    R = int(rng.integers(3, 5))
    if resample:
        n_iter = int(rng.integers(4, 7))
        n = 2 * n_iter * int(rng.integers(2, 4)) + int(rng.integers(0, 2))  # a spare row or not
    else:
        n_iter = int(rng.integers(4, 9))
        n = int(rng.integers(d + 1, 31))  # n > d (for the stats / data methods)
    X, y, theta_star, _ = make_problem(rng, m, n, d, k, LOSSES[loss]["loss"])
    # half of the runs start near the truth, half at random points
    init = rng.standard_normal((R, k, d))
    init[: R // 2] = theta_star + 0.5 * rng.standard_normal((R // 2, k, d))
    if averaging.startswith("model"):
        lr = rng.uniform(0.01, 0.06, size=R)
    else:
        lr = rng.uniform(0.05, 0.3, size=R)
    return X, y, theta_star, init, lr, n_iter


def grid_case(seed, loss, resample, avg, part, make_problem):
    """``(X, y, init, lr, kw)`` of one configuration of the grid (``kw``: ifca's keywords)."""
    X, y, ts, init, lr, T = _grid_problem(seed, loss, resample, avg, make_problem)
    R, m = init.shape[0], X.shape[0]
    kw = dict(n_iter=T, resample=resample, theta_star=ts, **LOSSES[loss], **AVERAGING[avg])
    if part == "mask":
        kw["participation"] = np.random.default_rng(seed + 1).random((T, R, m)) < 0.6
    return X, y, init, lr, kw


@pytest.mark.parametrize("loss, resample, avg, part", list(_grid()))
def test_kernel_equals_naive_float64(loss, resample, avg, part, make_problem,
                                     global_random_seed):
    seed = _seed(global_random_seed, loss, resample, avg, part)
    X, y, init, lr, kw = grid_case(seed, loss, resample, avg, part, make_problem)
    res = ifca(X, y, init, lr, trace=True, **kw)
    ref = naive_ifca(X, y, init, lr, **_kw_for_naive(kw))
    assert res.theta.dtype == np.float64
    assert not ref["diverged"].any()  # the grid is not meant to diverge
    assert_matches_naive(res, ref)
    if avg == "gradient_stats":
        assert res.method == "stats"
    if avg == "gradient_data" or not loss.startswith("squared") or resample or avg.startswith("model"):
        assert res.method == "data"


def test_auto_method_choice(make_problem):
    # "auto" picks "stats" when d*k < n*(k+1) and dtype is float64, for squared/full/gradient
    X, y, ts, _ = make_problem(0, 6, 20, 3, 2, "squared")
    init = np.zeros((2, 3))
    assert ifca(X, y, init, 0.1, n_iter=2).method == "stats"
    assert ifca(X.astype(np.float32), y, init, 0.1, n_iter=2).method == "data"
    X, y, ts, _ = make_problem(0, 6, 4, 12, 2, "squared")  # d*k = 24 >= n*(k+1) = 12
    assert ifca(X, y, np.zeros((2, 12)), 0.1, n_iter=2).method == "data"


# ---------------------------------------------------------------------------------------------
# float32
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("avg", ["gradient", "model3"])
@pytest.mark.parametrize("resample", [False, True])
def test_float32_close_to_float64(loss, avg, resample, make_problem, global_random_seed):
    seed = _seed(global_random_seed, "f32", loss, avg, resample)
    X, y, ts, init, lr, T = _grid_problem(seed, loss, resample, avg, make_problem)
    X32, y32, init32 = (a.astype(np.float32) for a in (X, y, init))
    kw = dict(n_iter=T, resample=resample, theta_star=ts, **LOSSES[loss], **AVERAGING[avg])
    res = ifca(X32, y32, init32, lr, trace=True, **kw)
    assert res.theta.dtype == np.float32
    # reference in float64 on the very same (float32-rounded) inputs
    ref = naive_ifca(X32.astype(np.float64), y32.astype(np.float64), init32.astype(np.float64),
                     lr.astype(np.float32).astype(np.float64),
                     **_kw_for_naive(dict(kw, theta_star=ts.astype(np.float32))))
    assert_matches_naive(res, ref, rtol=RTOL32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_outputs_keep_the_dtype(dtype, make_problem):
    # the models stay in the working dtype; losses and distances are accumulated and reported in
    # float64 whatever the working dtype (documented in ifca's Returns section)
    X, y, ts, _ = make_problem(0, 5, 10, 3, 2, "squared")
    X, y, ts = (a.astype(dtype) for a in (X, y, ts))
    res = ifca(X, y, np.zeros((2, 2, 3), dtype), 0.1, n_iter=2, trace=True, theta_star=ts)
    assert res.theta.dtype == dtype
    for name, arr in [("loss", res.loss), ("trace.loss", res.trace.loss),
                      ("trace.dist", res.trace.dist)]:
        assert arr.dtype == np.float64, f"{name}: {arr.dtype}"


# ---------------------------------------------------------------------------------------------
# ties, divergence, early stop
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", [dict(), dict(method="data"), dict(averaging="model"),
                                dict(loss="logistic"), dict(loss="huber", resample=True)],
                         ids=["auto", "data", "model", "logistic", "huber-resample"])
def test_identical_models_tie_to_lowest_index(dtype, kw, make_problem):
    loss = kw.get("loss", "squared")
    X, y, ts, _ = make_problem(11, 8, 24, 4, 2, loss)
    rng = np.random.default_rng(11)
    init = rng.standard_normal((3, 3, 4))
    init[0, 1] = init[0, 0]                      # run 0: models 0 and 1 identical
    init[1, 2] = init[1, 0] = init[1, 1]         # run 1: all three identical
    init[2, 2] = init[2, 1]                      # run 2: models 1 and 2 identical
    X, y, init = (a.astype(dtype) for a in (X, y, init))
    res = ifca(X, y, init, 0.05, n_iter=3, trace=True, **kw)
    a0 = res.trace.labels[0]
    assert not np.any(a0[0] == 1)
    assert_array_equal(a0[1], 0)
    assert not np.any(a0[2] == 2)
    # run 1: models 1 and 2 stay identical (nobody chooses either in iteration 0) and model 2
    # always loses the tie to model 1, so it is never chosen and keeps its value
    assert not np.any(res.trace.labels[:, 1] == 2)
    assert_array_equal(res.theta[1, 2], init[1, 2])
    if dtype == np.float64:
        ref = naive_ifca(X, y, init, 0.05, n_iter=3, **_kw_for_naive(kw))
        assert_matches_naive(res, ref)


def test_all_identical_models_everyone_picks_zero(make_problem):
    X, y, _, _ = make_problem(3, 6, 12, 3, 2, "squared")
    init = np.tile(np.random.default_rng(3).standard_normal(3), (1, 4, 1))
    for method in ("stats", "data"):
        res = ifca(X, y, init, 0.1, n_iter=1, trace=True, method=method)
        assert_array_equal(res.trace.labels[0], 0)
        assert_array_equal(res.theta[0, 1:], init[0, 1:])


def test_diverging_run_is_flagged_and_frozen(make_problem):
    X, y, ts, _ = make_problem(5, 8, 20, 4, 2, "squared")
    rng = np.random.default_rng(5)
    init = rng.standard_normal((3, 2, 4))
    lr = np.array([0.1, 1e3, 0.2])
    T = 8
    for method in ("stats", "data"):
        res = ifca(X, y, init, lr, n_iter=T, trace=True, theta_star=ts, method=method)
        assert res.diverged.tolist() == [False, True, False]
        assert 1 <= res.n_iter[1] < T
        assert np.max(np.abs(res.theta[1])) > 1e10
        assert np.all(np.isfinite(res.theta[1]))
        for t in range(res.n_iter[1], T + 1):  # frozen: final-evaluation entries
            assert_array_equal(res.trace.labels[t, 1], res.labels[1])
            assert res.trace.loss[t, 1] == res.loss[1]
            assert_array_equal(res.trace.dist[t, 1], res.trace.dist[T, 1])
        ref = naive_ifca(X, y, init, lr, n_iter=T, theta_star=ts)
        assert_matches_naive(res, ref)
        for r in (0, 2):
            solo = ifca(X, y, init[r], lr[r], n_iter=T, trace=True, theta_star=ts, method=method)
            assert not solo.diverged[0]
            # same arithmetic for run r whether or not it shares the batch: rounding only
            _close(res.theta[r], solo.theta[0], RTOL64, "theta")
            assert_array_equal(res.labels[r], solo.labels[0])
            _close(res.trace.loss[:, r], solo.trace.loss[:, 0], RTOL64, "trace.loss")
            assert_array_equal(res.trace.labels[:, r], solo.trace.labels[:, 0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("method", ["stats", "data"])
def test_non_finite_loss_freezes_at_current_theta(method):
    # threshold 1e300: theta stays finite while the squared loss overflows (step 2 of the spec)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 6, 2))
    y = rng.normal(size=(3, 6))
    init = np.ones((2, 1, 2))
    lr = np.array([1e8, 0.01])
    kw = dict(n_iter=40, diverge_threshold=1e300)
    res = ifca(X, y, init, lr, trace=True, method=method, **kw)
    ref = naive_ifca(X, y, init, lr, **kw)
    assert res.diverged.tolist() == [True, False]
    assert_array_equal(res.n_iter, ref["n_iter"])
    assert np.all(np.isfinite(res.theta))
    _close(res.theta, ref["theta"], RTOL64, "theta")
    assert not np.isfinite(res.loss[0])
    assert_array_equal(res.labels, ref["labels"])
    assert_array_equal(res.trace.labels, ref["trace_labels"])
    _close(res.trace.loss, ref["trace_loss"], RTOL64, "trace.loss")


@pytest.mark.parametrize("kw", [dict(), dict(method="data"), dict(averaging="model"),
                                dict(loss="logistic", l2=0.1)],
                         ids=["auto", "data", "model", "logistic"])
def test_early_stop(kw, make_problem):
    loss = kw.get("loss", "squared")
    X, y, ts, _ = make_problem(2, 8, 20, 3, 2, loss, sep=3.0)
    init = np.stack([ts + 0.3, ts - 0.2])
    lr = 0.05 if kw.get("averaging") == "model" else 0.3
    if loss == "logistic":
        lr = 2.0
    T, tol = 400, 1e-8
    full = ifca(X, y, init, lr, n_iter=T, trace=True, **kw)
    es = ifca(X, y, init, lr, n_iter=T, trace=True, early_stop=True, tol=tol, **kw)
    assert es.converged.all() and not full.converged.any()
    assert np.all(es.n_iter < T) and np.all(es.n_iter >= 2)
    assert_array_equal(es.labels, full.labels)
    # after the stop the remaining movement is a geometric tail of steps <= tol * ||theta||:
    # with contraction c <= 0.99 per step it is <= 100 tol ||theta|| = 1e-6 ||theta||
    scale = np.abs(full.theta).max()
    assert_allclose(es.theta, full.theta, rtol=0, atol=1e-6 * scale)
    # and the early stop itself agrees with the reference
    ref = naive_ifca(X, y, init, lr, n_iter=T, early_stop=True, tol=tol, **_kw_for_naive(kw))
    assert_matches_naive(es, ref)


# ---------------------------------------------------------------------------------------------
# closed form of one gradient-averaging step with the true partition
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["auto", "stats", "data"])
@pytest.mark.parametrize("k", [1, 3])
def test_one_step_with_true_partition_is_closed_form(k, method, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    m, n, d, lr = 9, 15, 4, 0.2
    clusters = np.arange(m) % k
    theta_star = 20.0 * rng.standard_normal((k, d))
    X = rng.standard_normal((m, n, d))
    y = np.einsum("ind,id->in", X, theta_star[clusters]) + 0.1 * rng.standard_normal((m, n))
    init = theta_star + 0.5 * rng.standard_normal((k, d))
    res = ifca(X, y, init, lr, n_iter=1, trace=True, method=method)
    assert_array_equal(res.trace.labels[0, 0], clusters)  # the true partition was kept
    expect = init.copy()
    for j in range(k):
        g = np.zeros(d)
        for i in np.flatnonzero(clusters == j):
            g += 2.0 / n * X[i].T @ (X[i] @ init[j] - y[i])
        expect[j] = init[j] - lr / m * g
    _close(res.theta[0], expect, RTOL64, "theta")


# ---------------------------------------------------------------------------------------------
# y variants, threads, participation as an int, shapes and dtypes
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(method="data"), dict(averaging="model", local_steps=2),
                                dict(loss="huber", resample=True)],
                         ids=["auto", "data", "model", "huber-resample"])
def test_y_variants_equal_separate_runs(kw, make_problem):
    loss = kw.get("loss", "squared")
    X, y, ts, _ = make_problem(7, 6, 16, 3, 2, loss, n_variants=3)
    rng = np.random.default_rng(7)
    init = rng.standard_normal((5, 2, 3))
    lr = rng.uniform(0.05, 0.1, size=5)
    y_index = np.array([2, 0, 1, 0, 2])
    res = ifca(X, y, init, lr, n_iter=4, y_index=y_index, theta_star=ts, trace=True, **kw)
    ref = naive_ifca(X, y, init, lr, n_iter=4, y_index=y_index, theta_star=ts,
                     **_kw_for_naive(kw))
    assert_matches_naive(res, ref)
    for r, c in enumerate(y_index):
        solo = ifca(X, y[c], init[r], lr[r], n_iter=4, theta_star=ts[c], trace=True, **kw)
        _close(res.theta[r], solo.theta[0], RTOL64, "theta")
        assert_array_equal(res.labels[r], solo.labels[0])
        _close(res.trace.dist[:, r], solo.trace.dist[:, 0], RTOL64, "trace.dist")
        assert_array_equal(res.trace.labels[:, r], solo.trace.labels[:, 0])


@pytest.mark.parametrize("kw", [dict(method="stats"), dict(method="data"),
                                dict(averaging="model", local_steps=3),
                                dict(loss="logistic", resample=True, dtype=np.float32)],
                         ids=["stats", "data", "model", "logistic-resample-f32"])
def test_threads_do_not_change_results(kw, make_problem):
    loss = kw.get("loss", "squared")
    # m = 40 machines: more than one machine chunk, so the chunked sums are exercised
    X, y, ts, _ = make_problem(9, 40, 16, 5, 3, loss)
    rng = np.random.default_rng(9)
    init = rng.standard_normal((4, 3, 5))
    P = rng.random((5, 4, 40)) < 0.7
    runs = [ifca(X, y, init, 0.05, n_iter=5, trace=True, theta_star=ts, participation=P,
                 n_threads=nt, **kw) for nt in (1, 2)]
    a, b = runs
    for name in ("theta", "labels", "loss", "diverged", "converged", "n_iter"):
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)  # bitwise
    for name in ("labels", "loss", "dist"):
        assert_array_equal(getattr(a.trace, name), getattr(b.trace, name), err_msg=name)


def test_participation_int(make_problem):
    X, y, _, _ = make_problem(1, 6, 12, 3, 2, "squared")
    init = np.random.default_rng(1).standard_normal((3, 2, 3))
    everyone = ifca(X, y, init, 0.1, n_iter=4, participation=6)
    none_given = ifca(X, y, init, 0.1, n_iter=4)
    _close(everyone.theta, none_given.theta, RTOL64, "theta")
    a = ifca(X, y, init, 0.1, n_iter=4, participation=2, rng=123)
    b = ifca(X, y, init, 0.1, n_iter=4, participation=2, rng=123)
    assert_array_equal(a.theta, b.theta)  # the draw comes from rng only
    assert not np.allclose(a.theta, none_given.theta)


def test_dtype_rules(make_problem):
    X, y, _, _ = make_problem(1, 5, 10, 3, 2, "squared")
    init = np.zeros((2, 3))
    assert ifca(X.astype(np.float32), y, init, 0.1, n_iter=2).theta.dtype == np.float32
    assert ifca(X, y.astype(np.float32), init, 0.1, n_iter=2).theta.dtype == np.float64
    assert ifca(X.astype(np.float32), y, init, 0.1, n_iter=2,
                dtype=np.float64).theta.dtype == np.float64
    Xi = np.round(3 * X).astype(np.int64)
    res = ifca(Xi, y, init, 0.1, n_iter=2)
    assert res.theta.dtype == np.float64
    ref = naive_ifca(Xi.astype(np.float64), y, init, 0.1, n_iter=2)
    _close(res.theta, ref["theta"], RTOL64, "theta")


def test_resample_needs_enough_rows(make_problem):
    X, y, _, _ = make_problem(1, 4, 7, 2, 2, "squared")
    with pytest.raises(ValueError):
        ifca(X, y, np.zeros((2, 2)), 0.1, n_iter=4, resample=True)  # 7 // 8 = 0


# hypothesis: random small shapes, both dtypes, outputs shaped and typed as the spec says, and in
# float64 equal to the reference.
try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(m=st.integers(1, 8), n=st.integers(1, 12), d=st.integers(1, 6), k=st.integers(1, 4),
           R=st.integers(1, 3), T=st.integers(1, 4),
           dtype=st.sampled_from([np.float32, np.float64]),
           loss=st.sampled_from(["squared", "logistic", "huber"]),
           averaging=st.sampled_from(["gradient", "model"]),
           resample=st.booleans(), single=st.booleans(), with_star=st.booleans(),
           with_mask=st.booleans(), seed=st.integers(0, 2**32 - 1))
    def test_shapes_and_dtypes(m, n, d, k, R, T, dtype, loss, averaging, resample, single,
                               with_star, with_mask, seed):
        rng = np.random.default_rng(seed)
        if resample and n < 2 * T:
            n = 2 * T
        X = rng.standard_normal((m, n, d)).astype(dtype)
        if loss == "logistic":
            y = (rng.random((m, n)) < 0.5).astype(dtype)
        else:
            y = rng.standard_normal((m, n)).astype(dtype)
        if single:
            R = 1
            init = rng.standard_normal((k, d)).astype(dtype)
        else:
            init = rng.standard_normal((R, k, d)).astype(dtype)
        ts = rng.standard_normal((k, d)).astype(dtype) if with_star else None
        P = rng.random((T, R, m)) < 0.5 if with_mask else None
        kw = dict(n_iter=T, loss=loss, averaging=averaging, resample=resample, theta_star=ts,
                  l2=0.1)
        res = ifca(X, y, init, 0.05, trace=True, participation=P, **kw)
        assert res.theta.shape == (R, k, d) and res.theta.dtype == dtype
        assert res.labels.shape == (R, m) and np.issubdtype(res.labels.dtype, np.integer)
        assert np.all((res.labels >= 0) & (res.labels < k))
        assert res.loss.shape == (R,)  # dtype: test_float_outputs_keep_the_dtype
        assert res.diverged.shape == (R,) and res.diverged.dtype == np.bool_
        assert res.converged.shape == (R,) and res.converged.dtype == np.bool_
        assert res.n_iter.shape == (R,) and np.issubdtype(res.n_iter.dtype, np.integer)
        assert np.all((res.n_iter >= 0) & (res.n_iter <= T))
        assert res.method in ("data", "stats")
        assert res.trace.labels.shape == (T + 1, R, m)
        assert res.trace.loss.shape == (T + 1, R)
        if with_star:
            assert res.trace.dist.shape == (T + 1, R, k, k)
        else:
            assert res.trace.dist is None
        assert_array_equal(res.trace.labels[T], res.labels)
        assert_array_equal(res.trace.loss[T], res.loss)
        if dtype == np.float64:
            ref = naive_ifca(X, y, init, 0.05, participation_mask=P, **kw)
            assert_matches_naive(res, ref)
        untraced = ifca(X, y, init, 0.05, participation=P, **kw)
        assert untraced.trace is None
        _close(untraced.theta, res.theta, TEST_RTOL[np.dtype(dtype)], "theta without trace")
