"""The multinomial logistic loss in the kernel (``ifca(..., loss="multinomial")``).

A model is a d x C matrix ``W`` and a machine's loss is the mean softmax cross-entropy of its rows'
logits ``W^T x`` plus ``(l2 / 2) ||W||_F^2``. The kernel holds the matrix as C vectors side by side
(``mixlinreg._problem.to_vectors``); everything here compares it with the plain reference
``naive.naive_ifca``, which loops over runs, iterations, machines and models with the matrix as is.
Tolerances as in ``tests/test_kernel.py``: rtol 1e-10 in float64, TEST_RTOL in float32; integer
outputs and flags must be equal.
"""

import zlib

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

from naive import naive_ifca
from mixlinreg import ifca
from mixlinreg._numerics import TEST_RTOL
from mixlinreg._problem import from_vectors, to_vectors
from mixlinreg.losses import multinomial_derivative, multinomial_value

RTOL64 = TEST_RTOL[np.dtype(np.float64)]
RTOL32 = TEST_RTOL[np.dtype(np.float32)]

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


def _close(got, want, rtol, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    fin = np.isfinite(want)
    assert_array_equal(np.isfinite(got), fin, err_msg=f"{what}: finiteness differs")
    scale = np.max(np.abs(want[fin])) if fin.any() else 0.0
    assert_allclose(got[fin], want[fin], rtol=rtol, atol=rtol * scale, err_msg=what)


def _matches(res, ref, rtol=RTOL64):
    for name in ("n_iter", "diverged", "converged", "labels"):
        assert_array_equal(getattr(res, name), ref[name], err_msg=name)
    _close(res.theta, ref["theta"], rtol, "theta")
    _close(res.loss, ref["loss"], rtol, "loss")
    assert_array_equal(res.trace.labels, ref["trace_labels"], err_msg="trace.labels")
    _close(res.trace.loss, ref["trace_loss"], rtol, "trace.loss")
    _close(res.trace.dist, ref["trace_dist"], rtol, "trace.dist")


def _problem(seed, m=None, n=None, d=None, k=None, C=None, R=None):
    """A mixture of multinomial logistic regressions: machine i of cluster i % k draws its rows'
    classes from softmax(W_{i % k}^T x) (Gumbel-max), the models separated by a scale of 2."""
    rng = np.random.default_rng(seed)
    m = m or int(rng.integers(6, 11))
    n = n or int(rng.integers(8, 25))
    d = d or int(rng.integers(2, 6))
    k = k or int(rng.integers(2, 4))
    C = C or int(rng.integers(2, 5))
    R = R or int(rng.integers(2, 4))
    X = rng.standard_normal((m, n, d))
    W = 2.0 * rng.standard_normal((k, d, C))
    Z = np.einsum("mnd,mdc->mnc", X, W[np.arange(m) % k])
    y = np.argmax(Z + rng.gumbel(size=Z.shape), axis=-1).astype(np.float64)
    init = W[None] + 0.7 * rng.standard_normal((R, k, d, C))
    init[R // 2:] = rng.standard_normal((R - R // 2, k, d, C))  # half near the truth, half random
    lr = rng.uniform(0.1, 0.8, size=R)
    return X, y, W, init, lr


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())


def _grid():
    for resample in (False, True):
        for avg in ("gradient", "model1", "model3"):
            for part in ("all", "mask"):
                yield pytest.param(resample, avg, part,
                                   id=f"{'resample' if resample else 'full'}-{avg}-{part}")


@pytest.mark.parametrize("resample, avg, part", list(_grid()))
def test_kernel_equals_naive_float64(resample, avg, part, global_random_seed):
    seed = _seed(global_random_seed, "multinomial", resample, avg, part)
    X, y, W, init, lr = _problem(seed, n=48 if resample else None)
    R, m = init.shape[0], X.shape[0]
    T = 4 if resample else 8
    kw = dict(n_iter=T, resample=resample, theta_star=W, loss="multinomial", l2=0.03)
    if avg != "gradient":
        kw.update(averaging="model", local_steps=int(avg[-1]))
    mask = np.random.default_rng(seed + 1).random((T, R, m)) < 0.6 if part == "mask" else None
    res = ifca(X, y, init, lr, trace=True, participation=mask, **kw)
    ref = naive_ifca(X, y, init, lr, participation_mask=mask, **kw)
    assert res.method == "data" and res.theta.shape == init.shape
    assert not ref["diverged"].any()
    _matches(res, ref)


def test_float32_close_to_float64(global_random_seed):
    X, y, W, init, lr = _problem(_seed(global_random_seed, "multinomial-f32"))
    X32, init32 = X.astype(np.float32), init.astype(np.float32)
    res = ifca(X32, y.astype(np.float32), init32, lr, n_iter=8, loss="multinomial", l2=0.02,
               trace=True, theta_star=W.astype(np.float32))
    assert res.theta.dtype == np.float32
    ref = naive_ifca(X32.astype(np.float64), y, init32.astype(np.float64),
                     lr.astype(np.float32).astype(np.float64), n_iter=8, loss="multinomial",
                     l2=0.02, theta_star=W.astype(np.float32).astype(np.float64))
    _matches(res, ref, rtol=RTOL32)


def test_several_response_variants_and_threads():
    # y (V, m, n) with one variant per run, as the Figure 2 harness passes several cells at once;
    # the result does not depend on the number of threads
    X, y, W, init, lr = _problem(3, R=4)
    rng = np.random.default_rng(4)
    y2 = np.stack([y, rng.integers(0, W.shape[2], size=y.shape).astype(float)])
    yi = np.array([0, 1, 1, 0])
    star = np.stack([W, W[::-1]])
    res = ifca(X, y2, init, lr, n_iter=6, loss="multinomial", y_index=yi, theta_star=star,
               trace=True)
    ref = naive_ifca(X, y2, init, lr, n_iter=6, loss="multinomial", y_index=yi, theta_star=star)
    _matches(res, ref)
    one = ifca(X, y2, init, lr, n_iter=6, loss="multinomial", y_index=yi, n_threads=1)
    assert_array_equal(one.theta, res.theta)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_ties_nan_divergence_and_early_stop():
    X, y, W, init, lr = _problem(5, k=3, R=3)
    init[0, 2] = init[0, 0]  # bitwise equal models: the lower index wins every tie
    # logits of +-inf give NaN losses (inf - inf), which never win over a finite loss
    init[1, 0, :, 0], init[1, 0, :, 1:] = 1e308, -1e308
    res = ifca(X, y, init, lr, n_iter=0, loss="multinomial")
    ref = naive_ifca(X, y, init, lr, n_iter=0, loss="multinomial")
    assert_array_equal(res.labels, ref["labels"])
    assert not (res.labels[0] == 2).any() and not (res.labels[1] == 0).any()
    # a step far too large diverges: frozen and flagged like the reference, not a crash
    big = ifca(X, y, init[2:], 1e9, n_iter=30, loss="multinomial", diverge_threshold=1e6)
    ref = naive_ifca(X, y, init[2:], 1e9, n_iter=30, loss="multinomial", diverge_threshold=1e6)
    assert big.diverged[0] and ref["diverged"][0] and big.n_iter[0] == ref["n_iter"][0]
    # early stop: the same iteration as the reference
    es = ifca(X, y, init[2:], 0.5, n_iter=200, loss="multinomial", l2=0.5, early_stop=True,
              tol=1e-6)
    ref = naive_ifca(X, y, init[2:], 0.5, n_iter=200, loss="multinomial", l2=0.5,
                     early_stop=True, tol=1e-6)
    assert es.converged[0] and ref["converged"][0]
    assert es.n_iter[0] == ref["n_iter"][0] < 200
    _close(es.theta, ref["theta"], RTOL64, "theta")


def test_recovers_a_separated_mixture():
    # a real check that the update is a descent on the right objective: from near the truth the
    # clusters are found exactly and the models move towards the generating ones
    X, y, W, init, lr = _problem(7, m=40, n=200, d=4, k=2, C=3, R=1)
    start = W[None] + 0.3 * np.random.default_rng(8).standard_normal(W.shape)
    res = ifca(X, y, start, 1.0, n_iter=300, loss="multinomial", trace=True, theta_star=W)
    assert_array_equal(res.labels[0], np.arange(40) % 2)
    d_match = res.trace.dist[:, 0, [0, 1], [0, 1]]  # model j against the true model j
    assert res.trace.loss[-1, 0] < res.trace.loss[0, 0]
    assert np.all(d_match[-1] < 0.5 * np.linalg.norm(W.reshape(2, -1), axis=1))


def test_loss_functions_against_scipy():
    rng = np.random.default_rng(0)
    Z = 30 * rng.standard_normal((50, 4))  # large logits: the shifted form must not overflow
    y = rng.integers(0, 4, size=50)
    assert_allclose(multinomial_value(Z, y), logsumexp(Z, axis=1) - Z[np.arange(50), y],
                    rtol=1e-13, atol=1e-13)
    assert_allclose(multinomial_derivative(Z, y), softmax(Z, axis=1) - np.eye(4)[y], atol=1e-15)
    # the kernel's per-row loss is the same function: a one-row machine's loss at n_iter = 0
    X = rng.standard_normal((5, 1, 3))
    Wm = rng.standard_normal((1, 3, 4))
    yy = rng.integers(0, 4, size=(5, 1)).astype(float)
    res = ifca(X, yy, Wm, 1.0, n_iter=0, loss="multinomial")
    want = multinomial_value(np.einsum("mnd,dc->mnc", X, Wm[0])[:, 0], yy[:, 0]).mean()
    assert_allclose(res.loss[0], want, rtol=1e-14)


def test_layout_round_trip():
    W = np.arange(2 * 3 * 5 * 4, dtype=float).reshape(2, 3, 5, 4)
    V = to_vectors(W)
    assert V.shape == (2, 12, 5) and V.flags.c_contiguous
    assert_array_equal(V[1, 2 * 4 + 3], W[1, 2, :, 3])  # model 2, class 3
    assert_array_equal(from_vectors(V, 4), W)


@pytest.mark.parametrize("kw, match", [
    (dict(y=np.full((4, 6), 0.5)), r"integers in \[0, 2\].*got 0.5"),
    (dict(y=np.full((4, 6), 3.0)), r"integers in \[0, 2\].*got 3.0"),
    (dict(y=np.full((4, 6), -1.0)), r"integers in \[0, 2\].*got -1.0"),
    (dict(init=np.zeros((2, 5, 3))), r"init must have d = 4 to match X \(shape \(R, k, d, C\) or \(k, d, C\)\)"),
    (dict(init=np.zeros((2, 4))), r"init must have 3 or 4 dimensions"),
    (dict(init=np.zeros((2, 4, 1))), r"C >= 2 classes"),
    (dict(theta_star=np.zeros((2, 4, 2))), r"theta_star must have shape \(k', 4, 3\)"),
    (dict(method="gram"), r"method='gram' needs loss='squared'"),
    (dict(method="stats"), r"method='stats' needs loss='squared'"),
])
def test_bad_input_is_named(kw, match):
    rng = np.random.default_rng(0)
    args = dict(X=rng.standard_normal((4, 6, 4)), y=rng.integers(0, 3, (4, 6)).astype(float),
                init=np.zeros((2, 4, 3)))
    args.update({k: kw.pop(k) for k in list(kw) if k in args})
    with pytest.raises(ValueError, match=match):
        ifca(args["X"], args["y"], args["init"], 0.1, n_iter=2, loss="multinomial", **kw)


def test_estimator_refuses_multinomial_clearly():
    import mixlinreg as mlr

    X, y, *_ = _problem(0)
    with pytest.raises(ValueError, match="loss='multinomial' is not supported by the IFCA estimator"):
        mlr.IFCA(n_clusters=2, loss="multinomial").fit(X, y)
