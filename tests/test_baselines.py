"""Tests of mixlinreg.baselines: oracle, global, local, one-shot and soft IFCA.

All problems are small (m <= 40, n <= 50, d <= 10) so the whole file runs in a few seconds.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import mixlinreg as mlr
from mixlinreg.baselines import (
    BaselineResult,
    global_model,
    local_models,
    one_shot,
    oracle,
    soft_ifca,
)

SIGMA = 0.1


@pytest.fixture(scope="module")
def mix():
    """Well separated: R = 3 (rows of norm 3), sigma = 0.1. Seed 0 draws two different 0/1
    patterns (checked below), so the clusters are ~4.2 apart while a local model is off by
    ~sigma sqrt(d / n) = 0.03."""
    mx = mlr.make_mixture(m=40, n=50, d=5, k=2, R=3.0, sigma=SIGMA, theta_scale="norm", rng=0)
    assert mx.separation > 1.0
    return mx


def _pooled(X, y, machines):
    """The rows of the given machines stacked one machine after the other: (N, d), (N,)."""
    return (np.concatenate([X[i] for i in machines]), np.concatenate([y[i] for i in machines]))


def _ridge_gradient(Xc, yc, theta, l2):
    """Gradient of (1/N) ||yc - Xc theta||^2 + (l2/2) ||theta||^2."""
    return 2.0 * Xc.T @ (Xc @ theta - yc) / len(yc) + l2 * theta


# --------------------------------------------------------------------------------------------------
# oracle


def test_oracle_recovers_theta_star(mix):
    res = oracle(mix.X, mix.y, mix.labels)
    assert isinstance(res, BaselineResult)
    assert res.theta.shape == (2, 5) and res.theta.dtype == np.float64
    assert_array_equal(res.labels, mix.labels)
    # each coordinate of the pooled least-squares error has standard deviation close to
    # sigma / sqrt(N) (X^T X / N ~ I); 5 of them bound all 10 coordinates but with prob. ~1e-5
    N = 20 * 50
    assert np.abs(res.theta - mix.theta_star).max() < 5 * SIGMA / np.sqrt(N)
    assert res.n_rounds == 1 and res.floats_sent_per_machine == 5.0
    assert res.extra["floats_sufficient_stats"] == 5 * 6 / 2 + 5
    assert_array_equal(res.extra["cluster_sizes"], [20, 20])


def test_oracle_equals_pooled_lstsq(mix):
    # unequal, interleaved clusters: the pooling must follow the labels, not contiguous blocks
    labels = np.arange(40) % 3
    res = oracle(mix.X, mix.y, labels)
    for j in range(3):
        Xc, yc = _pooled(mix.X, mix.y, np.flatnonzero(labels == j))
        # the same LAPACK routine on the same numbers in the same order: equal up to the last
        # bits (1e-12 only leaves room for a different BLAS blocking of the same computation)
        assert_allclose(res.theta[j], np.linalg.lstsq(Xc, yc, rcond=None)[0], rtol=1e-12)


def test_oracle_min_norm_when_cluster_has_fewer_rows_than_d():
    mx = mlr.make_mixture(m=4, n=2, d=10, k=2, R=1.0, sigma=0.1, rng=3)
    res = oracle(mx.X, mx.y, mx.labels)
    for j in range(2):
        Xc, yc = _pooled(mx.X, mx.y, np.flatnonzero(mx.labels == j))  # N = 4 < d = 10
        # lstsq (gelsd) and pinv (gesdd) are different SVD routes to the same min-norm solution;
        # a 4 x 10 Gaussian matrix is well conditioned, so they agree to ~1e-14
        assert_allclose(res.theta[j], np.linalg.pinv(Xc) @ yc, rtol=1e-10, atol=1e-12)
        assert_allclose(Xc @ res.theta[j], yc, rtol=1e-10, atol=1e-12)  # it interpolates


def test_oracle_ridge_first_order_condition(mix):
    l2 = 0.5
    res = oracle(mix.X, mix.y, mix.labels, l2=l2)
    for j in range(2):
        Xc, yc = _pooled(mix.X, mix.y, np.flatnonzero(mix.labels == j))
        # the gradient of the ridge objective vanishes at its minimizer (up to rounding)
        assert_allclose(_ridge_gradient(Xc, yc, res.theta[j], l2), 0.0, atol=1e-12)
    # shrinkage: the ridge model is shorter than the least-squares one
    plain = oracle(mix.X, mix.y, mix.labels)
    assert np.all(np.linalg.norm(res.theta, axis=1) < np.linalg.norm(plain.theta, axis=1))


# --------------------------------------------------------------------------------------------------
# global and local


def test_global_model_equals_pooled_lstsq(mix):
    res = global_model(mix.X, mix.y)
    assert res.theta.shape == (1, 5)
    assert_array_equal(res.labels, np.zeros(40, dtype=np.int64))
    Xc, yc = _pooled(mix.X, mix.y, range(40))
    assert_allclose(res.theta[0], np.linalg.lstsq(Xc, yc, rcond=None)[0], rtol=1e-12)  # as above
    assert res.n_rounds == 1
    ridge = global_model(mix.X, mix.y, l2=0.3)
    assert_allclose(_ridge_gradient(Xc, yc, ridge.theta[0], 0.3), 0.0, atol=1e-12)


def test_local_models_equal_per_machine_lstsq(mix):
    res = local_models(mix.X, mix.y)
    assert res.theta.shape == (40, 5)
    assert_array_equal(res.labels, np.arange(40))
    assert res.n_rounds == 0 and res.floats_sent_per_machine == 0.0
    assert_array_equal(res.extra["rank"], 5)
    for i in (0, 17, 39):
        assert_allclose(res.theta[i], np.linalg.lstsq(mix.X[i], mix.y[i], rcond=None)[0],
                        rtol=1e-12)  # same routine, same numbers
    ridge = local_models(mix.X, mix.y, l2=0.2)
    for i in (0, 17, 39):
        assert_allclose(_ridge_gradient(mix.X[i], mix.y[i], ridge.theta[i], 0.2), 0.0, atol=1e-12)


def test_local_models_min_norm_when_n_below_d():
    mx = mlr.make_mixture(m=6, n=4, d=8, k=2, R=1.0, sigma=0.1, rng=2)
    res = local_models(mx.X, mx.y)
    assert_array_equal(res.extra["rank"], 4)  # the ERM is not unique: a 4-dim family of them
    for i in range(6):
        # see test_oracle_min_norm_when_cluster_has_fewer_rows_than_d for the tolerance
        assert_allclose(res.theta[i], np.linalg.pinv(mx.X[i]) @ mx.y[i], rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# one-shot


def test_one_shot_well_separated_matches_oracle(mix):
    res = one_shot(mix.X, mix.y, 2, rng=1)
    assert mlr.adjusted_rand(mix.labels, res.labels) == 1.0
    ora = oracle(mix.X, mix.y, mix.labels)
    # same partition -> same pooled rows in the same order -> the oracle's models, permuted
    perm = [res.labels[np.flatnonzero(mix.labels == j)[0]] for j in range(2)]
    assert_allclose(res.theta[perm], ora.theta, rtol=1e-12)
    assert abs(mlr.dist_matched(res.theta, mix.theta_star)
               - mlr.dist_matched(ora.theta, mix.theta_star)) < 1e-12
    assert res.n_rounds == 2 and res.floats_sent_per_machine == 10.0
    assert_allclose(res.extra["local_models"], local_models(mix.X, mix.y).theta, rtol=1e-12)
    assert res.extra["centers"].shape == (2, 5)
    assert_array_equal(np.sort(res.extra["cluster_sizes"]), [20, 20])


def test_one_shot_reproducible_and_small_n():
    mx = mlr.make_mixture(m=12, n=3, d=6, k=3, R=1.0, sigma=0.1, rng=4)  # n < d: min-norm ERMs
    a = one_shot(mx.X, mx.y, 3, n_init=2, rng=7)
    b = one_shot(mx.X, mx.y, 3, n_init=2, rng=np.random.default_rng(7))
    assert_array_equal(a.labels, b.labels)
    assert_array_equal(a.theta, b.theta)
    assert a.extra["random_state"] == b.extra["random_state"]
    assert a.theta.shape == (3, 6) and np.all(np.isfinite(a.theta))


# --------------------------------------------------------------------------------------------------
# soft IFCA


@pytest.mark.parametrize("l2", [0.0, 0.1])
def test_soft_ifca_zero_temperature_is_ifca(mix, l2):
    # a random init: 8 machines change cluster after the first step, so the path is not trivial
    init = np.random.default_rng(5).standard_normal((2, 5))
    soft = soft_ifca(mix.X, mix.y, init, 0.3, temperature=1e-8, n_iter=20, l2=l2)
    hard = mlr.ifca(mix.X, mix.y, init, 0.3, n_iter=20, l2=l2, dtype=np.float64, n_threads=1)
    # the losses differ by >> 1e-8 * 745, so exp(-dF / T) underflows to exactly 0: the weights are
    # exactly one-hot and both compute the same update; only the summation order differs (NumPy
    # GEMM vs the numba kernel), ~1e-16 relative per iteration: 1e-10 is the float64 tolerance of
    # the suite (mixlinreg._numerics.TEST_RTOL)
    assert_allclose(soft.theta, hard.theta[0], rtol=1e-10, atol=1e-12)
    assert_array_equal(soft.labels, hard.labels[0])
    assert_array_equal(soft.extra["weights"], np.eye(2)[soft.labels])
    assert_allclose(soft.extra["loss"], hard.loss[0], rtol=1e-10)
    assert soft.n_rounds == 20 and soft.floats_sent_per_machine == 2 * 2 * 5 * 20
    assert not soft.extra["diverged"]


def test_soft_ifca_large_temperature_averages(mix):
    init = np.random.default_rng(6).standard_normal((2, 5))
    lr = 0.5
    soft = soft_ifca(mix.X, mix.y, init, lr, temperature=1e12, n_iter=3)
    # weights 1/k up to exp(-F / 1e12) - 1 ~ 1e-11
    assert_allclose(soft.extra["weights"], 0.5, atol=1e-9)
    # ... so each model does plain gradient descent on the global loss with step lr / k
    Xc, yc = _pooled(mix.X, mix.y, range(40))
    theta = init.copy()
    for _ in range(3):
        for j in range(2):
            theta[j] -= (lr / 2) * _ridge_gradient(Xc, yc, theta[j], 0.0)
    assert_allclose(soft.theta, theta, rtol=1e-8)  # weights are 1/2 only up to ~1e-11
    # and both models end on the global least-squares model
    long = soft_ifca(mix.X, mix.y, init, lr, temperature=1e12, n_iter=150)
    assert_allclose(long.theta, np.repeat(global_model(mix.X, mix.y).theta, 2, axis=0), atol=1e-8)


def test_soft_ifca_intermediate_temperature_and_stability(mix):
    init = mlr.init_close(mix.theta_star, alpha0=0.3, n_runs=1, rng=0)[0]
    res = soft_ifca(mix.X, mix.y, init, 0.5, temperature=1e-3, n_iter=100)
    w = res.extra["weights"]
    assert np.all((w >= 0) & (w <= 1)) and np.all(np.isfinite(w))
    assert_allclose(w.sum(axis=1), 1.0, rtol=1e-14)
    assert mlr.adjusted_rand(mix.labels, res.labels) == 1.0
    # a tiny temperature with large losses must not overflow (stable softmax)
    far = soft_ifca(mix.X, mix.y, init * 1e3, 1e-6, temperature=1e-300, n_iter=1)
    assert np.all(np.isfinite(far.extra["weights"]))


def test_soft_ifca_divergence_is_flagged(mix):
    init = np.random.default_rng(0).standard_normal((2, 5))
    with np.errstate(all="raise"):  # no floating point warning escapes
        res = soft_ifca(mix.X, mix.y, init, 50.0, temperature=1.0, n_iter=100)
    assert res.extra["diverged"]
    assert res.n_rounds < 100


def test_soft_ifca_zero_iterations(mix):
    init = mix.theta_star.copy()
    res = soft_ifca(mix.X, mix.y, init, 0.1, temperature=1e-6, n_iter=0)
    assert_array_equal(res.theta, init)
    assert_array_equal(res.labels, mix.labels)
    assert res.n_rounds == 0 and res.floats_sent_per_machine == 0.0


# --------------------------------------------------------------------------------------------------
# validation


def _small():
    mx = mlr.make_mixture(m=6, n=5, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    return mx.X, mx.y, mx.labels


DATA_FUNCS = [
    lambda X, y, **kw: oracle(X, y, np.arange(X.shape[0]) % 2, **kw),
    lambda X, y, **kw: global_model(X, y, **kw),
    lambda X, y, **kw: local_models(X, y, **kw),
    lambda X, y, **kw: one_shot(X, y, 2, **kw),
    lambda X, y, **kw: soft_ifca(X, y, np.zeros((2, X.shape[-1])), 0.1, temperature=1.0,
                                 n_iter=1, **kw),
]
IDS = ["oracle", "global", "local", "one_shot", "soft_ifca"]


@pytest.mark.parametrize("func", DATA_FUNCS, ids=IDS)
def test_common_validation(func):
    X, y, _ = _small()
    with pytest.raises(ValueError, match="X must have 3 dimensions"):
        func(X[0], y)
    with pytest.raises(ValueError, match=r"y must have shape \(6, 5\)"):
        func(X, y[:, :4])
    Xn = X.copy()
    Xn[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X must contain only finite"):
        func(Xn, y)
    with pytest.raises(TypeError, match="y must be a numeric array"):
        func(X, y.astype(str))
    with pytest.raises(ValueError, match=r"l2 must be a finite number in \[0.0, inf\), got -1.0"):
        func(X, y, l2=-1.0)
    with pytest.raises(TypeError, match="l2 must be a real number"):
        func(X, y, l2="0")
    with pytest.raises(ValueError, match=r"loss must be one of \['squared'\], got 'logistic'"):
        func(X, y, loss="logistic")
    with pytest.raises(ValueError, match="X must have m, n, d >= 1"):
        func(np.zeros((6, 5, 0)), y)


def test_oracle_label_validation():
    X, y, labels = _small()
    with pytest.raises(TypeError, match="labels must be an array of integer cluster labels"):
        oracle(X, y, labels.astype(float))
    with pytest.raises(TypeError, match="labels must be an array of integer"):
        oracle(X, y, labels.astype(bool))
    with pytest.raises(ValueError, match=r"labels must have shape \(6,\)"):
        oracle(X, y, labels[:5])
    with pytest.raises(ValueError, match=r"labels must be in \[0, k-1\], got a minimum of -1"):
        oracle(X, y, labels - 1)
    with pytest.raises(ValueError, match=r"labels must use every cluster .* cluster\(s\) \[1\]"):
        oracle(X, y, np.array([0, 0, 2, 2, 0, 2]))


def test_one_shot_validation():
    X, y, _ = _small()
    with pytest.raises(ValueError, match=r"k must be in \[1, 6\], got 7"):
        one_shot(X, y, 7)
    with pytest.raises(ValueError, match=r"k must be in \[1, 6\], got 0"):
        one_shot(X, y, 0)
    with pytest.raises(TypeError, match="k must be an integer"):
        one_shot(X, y, 2.0)
    with pytest.raises(ValueError, match=r"n_init must be in \[1, inf\), got 0"):
        one_shot(X, y, 2, n_init=0)
    with pytest.raises(TypeError, match="rng must be None, an int seed"):
        one_shot(X, y, 2, rng=np.random.RandomState(0))


def test_soft_ifca_validation():
    X, y, _ = _small()
    init = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"init must have shape \(k, 3\)"):
        soft_ifca(X, y, np.zeros((2, 4)), 0.1, temperature=1.0)
    with pytest.raises(ValueError, match=r"init must have shape \(k, 3\)"):
        soft_ifca(X, y, np.zeros((0, 3)), 0.1, temperature=1.0)
    with pytest.raises(ValueError, match="init must have 2 dimensions"):
        soft_ifca(X, y, np.zeros((1, 2, 3)), 0.1, temperature=1.0)
    with pytest.raises(ValueError, match="init must contain only finite"):
        soft_ifca(X, y, np.full((2, 3), np.inf), 0.1, temperature=1.0)
    with pytest.raises(ValueError, match=r"lr must be a finite number in \(0.0, inf\), got 0.0"):
        soft_ifca(X, y, init, 0.0, temperature=1.0)
    with pytest.raises(TypeError, match="lr must be a real number"):
        soft_ifca(X, y, init, [0.1], temperature=1.0)
    with pytest.raises(ValueError,
                       match=r"temperature must be a finite number in \(0.0, inf\), got 0.0"):
        soft_ifca(X, y, init, 0.1, temperature=0.0)
    with pytest.raises(ValueError, match="temperature must be a finite number .* got inf"):
        soft_ifca(X, y, init, 0.1, temperature=np.inf)
    with pytest.raises(TypeError, match="temperature"):
        soft_ifca(X, y, init, 0.1)  # keyword only, no default
    with pytest.raises(ValueError, match=r"n_iter must be in \[0, inf\), got -1"):
        soft_ifca(X, y, init, 0.1, temperature=1.0, n_iter=-1)
    with pytest.raises(TypeError, match="n_iter must be an integer"):
        soft_ifca(X, y, init, 0.1, temperature=1.0, n_iter=2.5)


def test_result_is_frozen(mix):
    res = global_model(mix.X, mix.y)
    with pytest.raises(AttributeError):
        res.n_rounds = 3


# --------------------------------------------------------------------------------------------------
# docstring examples


@pytest.mark.parametrize("name", ["__init__", "_oracle", "_global_model", "_local_models",
                                  "_one_shot", "_soft_ifca"])
def test_docstring_examples(name):
    mod = importlib.import_module("mixlinreg.baselines" if name == "__init__"
                                  else f"mixlinreg.baselines.{name}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name, kw", [
    ("fedavg", dict(lr=50.0, n_rounds=50)), ("fpfc", dict(lr=50.0, n_rounds=50, rng=0)),
    ("cfl", dict(lr=50.0, max_rounds=50)), ("local_train", dict(lr=5000.0, n_steps=200)),
])
def test_a_diverged_baseline_warns_as_ifca_does(name, kw):
    import mixlinreg as mlr
    from mixlinreg import baselines

    mix = mlr.make_mixture(m=8, n=20, d=5, k=2, R=1.0, sigma=0.1, rng=3)
    with pytest.warns(mlr.ConvergenceWarning, match=f"{name} diverged"):
        res = getattr(baselines, name)(mix.X, mix.y, **kw)
    assert res.extra["diverged"]
