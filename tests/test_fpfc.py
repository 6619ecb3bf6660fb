"""Tests of mixlinreg.baselines.fpfc (FPFC, Yu, Liu, Sun, Wang, AAAI 2023).

Problems are tiny (m <= 32, n = 50, d <= 5) and runs short, so the file takes a few seconds.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import mixlinreg as mlr
from mixlinreg.baselines import BaselineResult, fpfc
from mixlinreg.baselines._fpfc import _scad_smooth, _scad_threshold

fpfc_mod = importlib.import_module("mixlinreg.baselines._fpfc")


def _mix(m, k, seed, sigma=0.1, d=5):
    return mlr.make_mixture(m=m, n=50, d=d, k=k, R=3.0, sigma=sigma, theta_scale="norm", rng=seed)


def _local_ls(X, y):
    return np.stack([np.linalg.lstsq(X[i], y[i], rcond=None)[0] for i in range(X.shape[0])])


# --------------------------------------------------------------------------------------------------
# recovery without k


@pytest.mark.parametrize("m, k, seed", [(20, 2, 0), (24, 3, 1), (32, 4, 3)])
def test_finds_clusters_without_k(m, k, seed):
    mix = _mix(m, k, seed)
    # near or above a * lam = 1.85, where SCAD stops penalizing (its slope at 1.81 is only 0.015)
    assert mix.separation > 1.8
    res = fpfc(mix.X, mix.y, n_rounds=100)
    assert isinstance(res, BaselineResult)
    assert res.extra["n_clusters"] == k
    assert res.theta.shape == (k, 5) and res.labels.shape == (m,)
    assert res.labels.dtype == np.int64
    assert float(mlr.metrics.adjusted_rand(mix.labels, res.labels)) == 1.0
    # cluster model = mean of its omegas; close to the truth
    for c in range(k):
        assert_allclose(res.theta[c], res.extra["omega"][res.labels == c].mean(axis=0))
    assert mlr.dist_matched(res.theta, mix.theta_star) < 0.05
    assert res.n_rounds == 100 and res.floats_sent_per_machine == 2 * 5 * 100
    assert res.extra["history"].shape == (100,) and res.extra["objective"].shape == (100,)
    assert res.extra["history"][-1] < 1e-3  # primal residual omega_i - omega_j - theta_ij
    assert not res.extra["diverged"]
    # labels are numbered in order of first appearance
    _, first = np.unique(res.labels, return_index=True)
    assert np.all(np.diff(first) > 0)


def test_partial_participation_recovers_and_is_reproducible():
    mix = _mix(24, 3, 1)
    r1 = fpfc(mix.X, mix.y, n_rounds=150, participation=0.5, rng=7)
    r2 = fpfc(mix.X, mix.y, n_rounds=150, participation=0.5, rng=np.random.default_rng(7))
    r3 = fpfc(mix.X, mix.y, n_rounds=150, participation=0.5, rng=8)
    assert_array_equal(r1.extra["omega"], r2.extra["omega"])
    assert_array_equal(r1.extra["history"], r2.extra["history"])
    assert_array_equal(r1.labels, r2.labels)
    assert not np.array_equal(r1.extra["history"], r3.extra["history"])
    assert float(mlr.metrics.adjusted_rand(mix.labels, r1.labels)) == 1.0
    # 12 of 24 machines per round: on average half the floats of full participation
    assert r1.extra["floats_sent_mean"] == pytest.approx(0.5 * r1.floats_sent_per_machine)


# --------------------------------------------------------------------------------------------------
# no penalty: no fusion


def test_lam_zero_gives_local_least_squares():
    mix = _mix(10, 2, 0)
    res = fpfc(mix.X, mix.y, lam=0.0, nu=0.0, n_rounds=100)
    assert_allclose(res.extra["omega"], _local_ls(mix.X, mix.y), atol=1e-8)
    assert res.extra["n_clusters"] == 10
    assert_array_equal(res.labels, np.arange(10))
    assert_allclose(res.theta, res.extra["omega"])


def test_lam_zero_noisy_machines_stay_apart_with_default_nu():
    # sigma = 1: local models of one cluster are ~0.45 apart, far above nu = 0.1
    mix = _mix(8, 2, 5, sigma=1.0)
    ls = _local_ls(mix.X, mix.y)
    gaps = np.linalg.norm(ls[:, None] - ls[None], axis=2)[np.triu_indices(8, 1)]
    assert gaps.min() > 0.1
    res = fpfc(mix.X, mix.y, lam=0.0, n_rounds=100)
    assert res.extra["n_clusters"] == 8
    assert_allclose(res.extra["omega"], ls, atol=1e-8)


def test_zero_rounds():
    mix = _mix(6, 2, 0)
    res = fpfc(mix.X, mix.y, n_rounds=0)
    assert res.n_rounds == 0 and res.floats_sent_per_machine == 0.0
    assert res.extra["n_clusters"] == 1  # theta_ij = 0: everything linked
    assert_array_equal(res.extra["omega"], 0.0)


# --------------------------------------------------------------------------------------------------
# the SCAD pieces


def test_scad_threshold_branches():
    # lam = 1, a = 3.7, xi = 0.1, rho = 2
    # knots: xi + lam/rho = 0.6, lam + lam/rho = 1.5, a lam = 3.7
    lam, a, xi, rho = 1.0, 3.7, 0.1, 2.0
    t = np.array([0.0, 0.3, 1.0, 2.0, 5.0])
    expected = np.array([
        0.0,
        0.3 / (1.0 + 1.0 / (2.0 * 0.1)),          # quadratic piece: 0.05
        1.0 - 0.5,                                # soft threshold: 0.5
        (2.0 * 2.7 * 2.0 - 3.7) / (2.0 * 2.7 - 1.0),  # SCAD: 7.1 / 4.4
        5.0,                                      # flat piece: no shrinkage
    ])
    assert_allclose(_scad_threshold(t, lam, a, xi, rho), expected, rtol=1e-14)
    assert_allclose(expected[1:4], [0.05, 0.5, 7.1 / 4.4])
    assert_array_equal(_scad_threshold(t, 0.0, a, xi, rho), t)


def test_scad_threshold_is_the_minimizer():
    lam, a, xi, rho = 1.0, 3.7, 0.1, 2.0
    grid = np.linspace(0.0, 6.0, 60001)
    for t in [0.05, 0.6, 0.9, 1.5, 2.5, 3.7, 4.5]:
        h = _scad_smooth(grid, lam, a, xi) + 0.5 * rho * (grid - t) ** 2
        s = float(_scad_threshold(np.array([t]), lam, a, xi, rho)[0])
        assert abs(s - grid[np.argmin(h)]) < 2e-4


def test_scad_smooth_values():
    lam, a, xi = 1.0, 3.7, 0.1
    t = np.array([0.0, 0.1, 0.5, 2.0, 5.0])
    expected = [0.05, 0.1, 0.5, (3.7 * 2.0 - 0.5 * (4.0 + 1.0)) / 2.7, 0.5 * 4.7]
    assert_allclose(_scad_smooth(t, lam, a, xi), expected, rtol=1e-14)


# --------------------------------------------------------------------------------------------------
# guards and validation


def test_memory_guard():
    mix = _mix(10, 2, 0)
    with pytest.raises(ValueError, match="max_pair_floats"):
        fpfc(mix.X, mix.y, max_pair_floats=44 * 5)  # P d = 45 * 5
    fpfc(mix.X, mix.y, n_rounds=1, max_pair_floats=45 * 5)


@pytest.mark.parametrize("kwargs, match", [
    ({"lam": -1.0}, "lam"),
    ({"a": 2.0}, "^a must"),
    ({"xi": 0.0}, "xi"),
    ({"xi": 0.5, "lam": 0.5}, "xi"),
    ({"rho": 0.3}, "rho"),
    ({"rho": 0.0}, "rho"),
    ({"lr": 0.0}, "lr"),
    ({"local_steps": 0}, "local_steps"),
    ({"n_rounds": -1}, "n_rounds"),
    ({"nu": -0.1}, "nu"),
    ({"participation": 0.0}, "participation"),
    ({"participation": 1.5}, "participation"),
    ({"l2": -1.0}, "l2"),
    ({"loss": "absolute"}, "loss"),
    ({"max_pair_floats": -1.0}, "max_pair_floats"),
])
def test_validation(kwargs, match):
    mix = _mix(6, 2, 0)
    with pytest.raises(ValueError, match=match):
        fpfc(mix.X, mix.y, **kwargs)


def test_validation_types_and_shapes():
    mix = _mix(6, 2, 0)
    with pytest.raises(TypeError, match="local_steps"):
        fpfc(mix.X, mix.y, local_steps=2.5)
    with pytest.raises(TypeError, match="rng"):
        fpfc(mix.X, mix.y, participation=0.5, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="y"):
        fpfc(mix.X, mix.y[:, :-1])
    with pytest.raises(ValueError, match="X"):
        fpfc(mix.X[0], mix.y)


def test_docstring_example():
    result = doctest.testmod(fpfc_mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------------------------------
# FPFC-l1 (the convex penalty) and the losses of mixlinreg.losses


def test_l1_threshold_is_the_group_soft_threshold_minimizer():
    t = np.linspace(0.0, 3.0, 61)
    lam, rho = 0.4, 1.3
    s = fpfc_mod._threshold(t, lam, 3.7, 0.01, rho, "l1")
    grid = np.linspace(0.0, 3.5, 70001)
    for ti, si in zip(t, s):
        obj = lam * grid + 0.5 * rho * (grid - ti) ** 2
        assert abs(si - grid[np.argmin(obj)]) < 1e-4
    assert_allclose(fpfc_mod._penalty_value(t, lam, 3.7, 0.01, "l1"), lam * t)


def test_l1_fuses_everything_at_a_large_lam_and_nothing_at_zero():
    mix = _mix(10, 2, 3)
    one = fpfc(mix.X, mix.y, penalty="l1", lam=50.0, n_rounds=400)
    assert one.extra["n_clusters"] == 1
    none = fpfc(mix.X, mix.y, penalty="l1", lam=0.0, n_rounds=200, nu=1e-6)
    assert none.extra["n_clusters"] == 10
    # l1 takes any rho > 0 (SCAD needs rho > 1 / (a - 1)); xi >= lam is allowed (unused)
    fpfc(mix.X, mix.y, penalty="l1", rho=0.1, xi=1.0, lam=0.5, n_rounds=2)


@pytest.mark.parametrize("loss", ["logistic", "huber", "multinomial"])
def test_lam_zero_fits_each_machine_for_every_loss(loss):
    """With no fusion each machine converges to the minimizer of its own f_i (gradient ~ 0)."""
    from mixlinreg.baselines._common import loss_gradient

    rng = np.random.default_rng(4)
    m, n, d, C = 5, 40, 3, 3
    X = rng.standard_normal((m, n, d))
    kw = {"l2": 0.1}
    if loss == "multinomial":
        y = rng.integers(0, C, (m, n)).astype(float)
        kw["n_classes"] = C
        shape = (d, C)
    else:
        y = (rng.random((m, n)) < 0.5).astype(float) if loss == "logistic" \
            else rng.standard_normal((m, n))
        shape = (d,)
    res = fpfc(X, y, lam=0.0, n_rounds=300, loss=loss, **kw)
    assert res.extra["omega"].shape == (m,) + shape
    assert res.theta.shape[1:] == shape
    g = loss_gradient(X, y, 0.1, loss, 1.0, shape)(np.arange(m), res.extra["omega"].reshape(m, -1))
    assert np.abs(g).max() < 1e-8


def test_multinomial_fpfc_finds_permuted_label_clusters():
    rng = np.random.default_rng(0)
    m, n, d, C = 10, 150, 4, 3
    W = 3.0 * rng.standard_normal((d, C))
    X = rng.standard_normal((m, n, d))
    y = np.argmax(X @ W + rng.gumbel(size=(m, n, C)), axis=-1)
    truth = np.repeat([0, 1], m // 2)
    y[truth == 1] = np.array([1, 2, 0])[y[truth == 1]]
    res = fpfc(X, y.astype(float), loss="multinomial", n_classes=C, lam=0.3, xi=0.01, nu=0.15,
               n_rounds=300, l2=1e-3)
    assert res.extra["n_clusters"] == 2
    assert mlr.metrics.adjusted_rand(truth, res.labels) == 1.0


@pytest.mark.parametrize("kwargs, match", [
    ({"penalty": "mcp"}, "penalty"),
    ({"loss": "multinomial"}, "n_classes"),
    ({"n_classes": 3}, "only for loss='multinomial'"),
    ({"loss": "huber", "huber_delta": -1.0}, "huber_delta"),
])
def test_validation_of_the_new_options(kwargs, match):
    mix = _mix(6, 2, 0)
    with pytest.raises(ValueError, match=match):
        fpfc(mix.X, mix.y, **kwargs)


def test_n_samples_machines_of_unequal_sizes():
    """lam = 0: each machine fits its own rows only (padding ignored); a cluster's model is the
    n_i-weighted mean; equal counts equal the truncated data."""
    from mixlinreg.baselines._common import loss_gradient, sample_weights

    rng = np.random.default_rng(3)
    m, n, d = 5, 40, 3
    X = rng.standard_normal((m, n, d))
    y = rng.standard_normal((m, n))
    counts = np.array([40, 10, 25, 7, 33])
    for i, c in enumerate(counts):
        X[i, c:], y[i, c:] = 50.0, -50.0
    res = fpfc(X, y, lam=0.0, n_rounds=400, nu=1e9, n_samples=counts)
    w, _ = sample_weights(counts, m, n)
    g = loss_gradient(X, y, 0.0, "squared", 1.0, (d,), w)(np.arange(m), res.extra["omega"])
    assert np.abs(g).max() < 1e-8
    assert res.extra["n_clusters"] == 1  # nu huge: one cluster, the n_i-weighted mean
    assert_allclose(res.theta[0], counts @ res.extra["omega"] / counts.sum(), rtol=1e-12)
    same = fpfc(X, y, n_rounds=30, n_samples=np.full(m, 7))
    trunc = fpfc(X[:, :7], y[:, :7], n_rounds=30)
    assert_allclose(same.extra["omega"], trunc.extra["omega"], rtol=1e-10, atol=1e-12)


def test_callback_sees_every_round_and_changes_nothing():
    mix = _mix(8, 2, 1)
    seen = []
    res = fpfc(mix.X, mix.y, n_rounds=20, callback=lambda k, st: seen.append((k, st)))
    ref = fpfc(mix.X, mix.y, n_rounds=20)
    assert_array_equal(res.extra["omega"], ref.extra["omega"])
    assert [k for k, _ in seen] == list(range(1, 21))
    last = seen[-1][1]
    assert_array_equal(last["omega"], res.extra["omega"])
    assert last["theta"].shape == (28, 5) and last["pairs"].shape == (28, 2)
    assert not last["v"].flags.writeable
    with pytest.raises(TypeError, match="callback"):
        fpfc(mix.X, mix.y, callback=1)
