"""Tests of mixlinreg.baselines.cfl (Clustered Federated Learning, Sattler et al.).

Tiny problems (m <= 20, n = 40, d <= 5): the whole file runs in well under a second of compute.
"""

from __future__ import annotations

import doctest
import importlib
import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import mixlinreg as mlr
from mixlinreg.baselines import BaselineResult, cfl
from mixlinreg.baselines._cfl import split_by_similarity


def _mix(k, m, d, seed):
    mx = mlr.make_mixture(m=m, n=40, d=d, k=k, R=3.0, sigma=0.1, theta_scale="norm", rng=seed)
    if k > 1:
        assert mx.separation > 1.0  # the seeds below draw distinct cluster models
    return mx


def _permuted(mx, seed):
    """X, y, true labels with the machines shuffled (clusters no longer contiguous)."""
    p = np.random.default_rng(seed).permutation(len(mx.labels))
    return mx.X[p], mx.y[p], mx.labels[p]


def _check_tree(res, m):
    """Splits name global indices: sides partition their parent, leaves are the final groups."""
    members = {0: np.arange(m)}
    next_id = 1
    for rnd, node, a, b in res.extra["splits"]:
        assert 1 <= rnd <= res.n_rounds
        assert a.dtype == np.int64 and b.dtype == np.int64
        assert_array_equal(np.sort(np.concatenate([a, b])), members[node])
        assert a.min() == members[node].min()
        members[next_id], members[next_id + 1] = a, b
        next_id += 2
    assert len(res.extra["nodes"]) == res.theta.shape[0]
    for j, node in enumerate(res.extra["nodes"]):
        assert_array_equal(np.flatnonzero(res.labels == j), members[node])


# --------------------------------------------------------------------------------------------------
# the split rule (6)


def test_split_hand_made():
    S = np.array([[1.0, 0.9, -0.5, -0.6],
                  [0.9, 1.0, -0.4, 0.1],
                  [-0.5, -0.4, 1.0, 0.8],
                  [-0.6, 0.1, 0.8, 1.0]])
    a, b = split_by_similarity(S)
    assert a.tolist() == [0, 1] and b.tolist() == [2, 3]
    # a chain 0-1-2-3-4 whose weakest link is 2-3: rule (6) cuts there (single linkage); complete
    # linkage on 1 - S, which merges by the least similar pair, does not give this cut
    S = np.full((5, 5), -1.0)
    for i, w in enumerate([0.9, 0.8, 0.2, 0.7]):
        S[i, i + 1] = S[i + 1, i] = w
    a, b = split_by_similarity(S)
    assert a.tolist() == [0, 1, 2] and b.tolist() == [3, 4]
    a, b = split_by_similarity(np.array([[1.0, 0.3], [0.3, 1.0]]))
    assert a.tolist() == [0] and b.tolist() == [1]


@pytest.mark.parametrize("seed", range(5))
def test_split_is_the_exact_minimizer(seed):
    g = 7
    A = np.random.default_rng(seed).normal(size=(g, g))
    S = (A + A.T) / 2
    a, b = split_by_similarity(S)
    value = S[np.ix_(a, b)].max()
    best = min(S[np.ix_(c1, [j for j in range(g) if j not in c1])].max()
               for r in range(1, g) for c1 in itertools.combinations(range(g), r))
    assert value == best
    assert sorted(np.concatenate([a, b]).tolist()) == list(range(g)) and 0 in a


# --------------------------------------------------------------------------------------------------
# clustering


def test_congruent_population_is_not_split():
    mx = _mix(1, 20, 3, 0)
    res = cfl(mx.X, mx.y)
    assert isinstance(res, BaselineResult)
    assert res.theta.shape == (1, 3) and res.theta.dtype == np.float64
    assert_array_equal(res.labels, np.zeros(20, dtype=np.int64))
    assert res.extra["splits"] == [] and res.extra["converged"] and not res.extra["diverged"]
    hist = res.extra["history"]
    assert hist["mean_update_norm"][-1] < 1e-3 and hist["max_update_norm"][-1] < 0.05
    # the group model is near the pooled least-squares fit (and theta*)
    pooled = np.linalg.lstsq(mx.X.reshape(-1, 3), mx.y.reshape(-1), rcond=None)[0]
    assert np.linalg.norm(res.theta[0] - pooled) < 0.01
    assert res.floats_sent_per_machine == 2 * 3 * res.n_rounds


def test_two_clusters_one_split():
    mx = _mix(2, 20, 3, 1)
    X, y, labels = _permuted(mx, 0)
    res = cfl(X, y)
    assert len(res.extra["splits"]) == 1 and res.extra["converged"]
    assert mlr.metrics.adjusted_rand(labels, res.labels) == 1.0
    assert mlr.dist_matched(res.theta, mx.theta_star) < 0.1
    _check_tree(res, 20)


@pytest.mark.parametrize("k, m, d, seed", [(3, 12, 3, 2), (4, 16, 5, 3)])
@pytest.mark.parametrize("permute", [False, True])
def test_several_splits_use_global_indices(k, m, d, seed, permute):
    mx = _mix(k, m, d, seed)
    X, y, labels = _permuted(mx, 1) if permute else (mx.X, mx.y, mx.labels)
    res = cfl(X, y)
    assert res.theta.shape == (k, d) and len(res.extra["splits"]) == k - 1
    assert res.extra["converged"]
    assert mlr.metrics.adjusted_rand(labels, res.labels) == 1.0
    # every side of every split is a union of true clusters, named by global machine indices
    for _, _, a, b in res.extra["splits"]:
        assert not set(labels[a]) & set(labels[b])
    _check_tree(res, m)
    hist = res.extra["history"]
    assert len(hist["max_update_norm"]) == len(hist["mean_update_norm"]) == res.n_rounds
    assert hist["n_active_groups"].max() >= 2
    assert res.extra["active_rounds"].max() == res.n_rounds


def test_min_group_and_max_rounds():
    mx = _mix(2, 20, 3, 1)
    res = cfl(mx.X, mx.y, min_group=21)  # incongruent, but too small to split
    assert res.extra["splits"] == [] and res.extra["converged"]
    assert res.extra["history"]["max_update_norm"][-1] >= 0.05
    res = cfl(mx.X, mx.y, max_rounds=0, init=np.ones(3))
    assert res.n_rounds == 0 and res.floats_sent_per_machine == 0.0
    assert_array_equal(res.theta, np.ones((1, 3)))
    assert not res.extra["converged"]


@pytest.mark.parametrize("n, d", [(40, 3), (4, 6)])  # Gram-matrix path and direct path
def test_one_round_is_a_fedavg_gradient_step(n, d):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, n, d)), rng.normal(size=(5, n))
    init = rng.normal(size=d)
    lr, l2 = 0.05, 0.3
    grads = [2 * X[i].T @ (X[i] @ init - y[i]) / n + l2 * init for i in range(5)]
    res = cfl(X, y, init=init, lr=lr, l2=l2, max_rounds=1)
    assert_allclose(res.theta[0], init - lr * np.mean(grads, axis=0), rtol=1e-12, atol=1e-12)
    # two local steps per round
    res2 = cfl(X, y, init=init, lr=lr, l2=l2, max_rounds=1, local_steps=2)
    locals_ = []
    for i in range(5):
        t = init - lr * grads[i]
        locals_.append(t - lr * (2 * X[i].T @ (X[i] @ t - y[i]) / n + l2 * t))
    assert_allclose(res2.theta[0], np.mean(locals_, axis=0), rtol=1e-12, atol=1e-12)


def test_divergence_is_flagged():
    mx = _mix(1, 4, 3, 0)
    res = cfl(mx.X, mx.y, lr=5.0)
    assert res.extra["diverged"] and not res.extra["converged"]
    assert res.n_rounds < 500


# --------------------------------------------------------------------------------------------------
# validation and docstrings


@pytest.mark.parametrize("kwargs, match", [
    ({"lr": 0.0}, "lr"), ({"eps1": -1.0}, "eps1"), ({"eps2": 0.0}, "eps2"),
    ({"max_rounds": -1}, "max_rounds"), ({"local_steps": 0}, "local_steps"),
    ({"min_group": 1}, "min_group"), ({"l2": -0.1}, "l2"), ({"loss": "abs"}, "loss"),
    ({"init": np.zeros(4)}, "init"), ({"eps1": np.nan}, "eps1"),
])
def test_validation(kwargs, match):
    X, y = np.ones((3, 4, 3)), np.ones((3, 4))
    with pytest.raises(ValueError, match=match):
        cfl(X, y, **kwargs)


def test_validation_types_and_data():
    with pytest.raises(TypeError, match="max_rounds"):
        cfl(np.ones((3, 4, 3)), np.ones((3, 4)), max_rounds=2.5)
    with pytest.raises(ValueError, match="X"):
        cfl(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="y"):
        cfl(np.ones((3, 4, 3)), np.ones((3, 5)))


def test_docstring_examples():
    mod = importlib.import_module("mixlinreg.baselines._cfl")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------------------------------
# the losses of mixlinreg.losses (logistic, Huber, multinomial)


@pytest.mark.parametrize("loss", ["logistic", "huber", "multinomial"])
def test_one_group_is_the_kernels_gradient_descent(loss):
    """With no split possible (eps2 huge) and no stop (eps1 tiny), CFL is federated gradient descent
    on the mean loss: the kernel's IFCA with k = 1, gradient averaging, the same step."""
    rng = np.random.default_rng(5)
    m, n, d, C = 6, 25, 3, 4
    X = rng.standard_normal((m, n, d))
    if loss == "multinomial":
        y = rng.integers(0, C, (m, n)).astype(float)
        init = 0.1 * rng.standard_normal((d, C))
        kw = {}
    else:
        y = (rng.random((m, n)) < 0.5).astype(float) if loss == "logistic" \
            else rng.standard_normal((m, n))
        init = 0.1 * rng.standard_normal(d)
        kw = {"huber_delta": 0.6}
    res = cfl(X, y, init=init, lr=0.3, eps1=1e-300, eps2=1e300, max_rounds=15, l2=0.05,
              loss=loss, **kw)
    assert res.n_rounds == 15 and not res.extra["converged"] and res.labels.tolist() == [0] * m
    ref = mlr.ifca(X, y, init[None], 0.3, n_iter=15, loss=loss, l2=0.05, **kw)
    assert_allclose(res.theta[0], ref.theta[0, 0], rtol=1e-10, atol=1e-12)
    p = init.size
    assert res.floats_sent_per_machine == 2 * p * 15


def test_multinomial_recovers_permuted_label_clusters():
    """Two clusters whose labels are permuted (the paper's Section 4 set-up, in miniature): the
    federated model stalls, CFL splits the clients by their permutation."""
    rng = np.random.default_rng(0)
    m, n, d, C = 8, 200, 4, 3
    W = 3.0 * rng.standard_normal((d, C))
    X = rng.standard_normal((m, n, d))
    y = np.argmax(X @ W + rng.gumbel(size=(m, n, C)), axis=-1)
    perm = np.array([1, 2, 0])
    truth = np.repeat([0, 1], m // 2)
    y[truth == 1] = perm[y[truth == 1]]
    res = cfl(X, y.astype(float), loss="multinomial", n_classes=C, lr=0.5, eps1=1e-3, eps2=0.1,
              l2=1e-3)
    assert res.theta.shape == (len(np.unique(res.labels)), d, C)
    assert mlr.metrics.adjusted_rand(truth, res.labels) == 1.0


@pytest.mark.parametrize("kw, match", [
    ({"loss": "hinge"}, "loss must be one of"),
    ({"loss": "multinomial"}, "needs n_classes"),
    ({"loss": "multinomial", "n_classes": 1}, "n_classes"),
    ({"loss": "multinomial", "n_classes": 2}, r"integers in \[0, 1\]"),
    ({"loss": "multinomial", "n_classes": 3, "init": np.zeros((3, 4))}, r"shape \(3, 3\)"),
    ({"loss": "multinomial", "init": np.zeros(3)}, r"shape \(3, C\)"),
    ({"loss": "squared", "n_classes": 3}, "only for loss='multinomial'"),
    ({"loss": "logistic"}, r"\[0, 1\]"),
    ({"loss": "huber", "huber_delta": 0.0}, "huber_delta"),
])
def test_losses_bad_input_names_the_parameter(kw, match):
    X = np.ones((4, 5, 3))
    y = np.tile([0.0, 1.0, 2.0, 0.0, 1.0], (4, 1))
    with pytest.raises(ValueError, match=match):
        cfl(X, y, **kw)


def test_callback_sees_every_round_and_changes_nothing():
    mx = _mix(3, 12, 3, 2)
    seen = []
    res = cfl(mx.X, mx.y, callback=lambda r, groups: seen.append((r, groups)))
    ref = cfl(mx.X, mx.y)
    assert_array_equal(res.theta, ref.theta) and res.n_rounds == ref.n_rounds
    assert [r for r, _ in seen] == list(range(1, res.n_rounds + 1))
    last = seen[-1][1]
    assert_array_equal(np.array([g[2] for g in last]), res.theta)
    assert [g[0] for g in last] == res.extra["nodes"].tolist()
    assert not last[0][2].flags.writeable
    with pytest.raises(TypeError, match="callback"):
        cfl(mx.X, mx.y, callback=3)


# --------------------------------------------------------------------------------------------------
# machines of unequal sizes (padded arrays, n_samples)


def _padded(loss, seed=7):
    rng = np.random.default_rng(seed)
    m, n, d = 6, 30, 3
    X = rng.standard_normal((m, n, d))
    y = (rng.random((m, n)) < 0.5).astype(float) if loss == "logistic" \
        else rng.standard_normal((m, n))
    counts = np.array([30, 5, 12, 30, 8, 20])
    for i, c in enumerate(counts):  # the padding: finite garbage, to be ignored
        X[i, c:] = 1e3
        y[i, c:] = 1.0 if loss == "logistic" else -1e3
    return X, y, counts


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_n_samples_one_round_is_the_size_weighted_fedavg(loss):
    X, y, counts = _padded(loss)
    init = np.array([0.3, -0.2, 0.1])
    res = cfl(X, y, init=init, lr=0.2, eps1=1e-300, eps2=1e300, max_rounds=1, loss=loss,
              n_samples=counts)
    grads = []
    for i, c in enumerate(counts):
        z = X[i, :c] @ init
        dz = 2 * (z - y[i, :c]) if loss == "squared" else 1 / (1 + np.exp(-z)) - y[i, :c]
        grads.append(X[i, :c].T @ dz / c)
    want = init - 0.2 * (counts / counts.sum()) @ np.array(grads)
    assert_allclose(res.theta[0], want, rtol=1e-12, atol=1e-14)


def test_n_samples_equal_counts_is_the_truncated_data():
    X, y, _ = _padded("squared")
    X, y = X.copy(), y.copy()
    X[:, 5:], y[:, 5:] = 7.0, 7.0
    a = cfl(X, y, n_samples=np.full(6, 5), max_rounds=50)
    b = cfl(X[:, :5], y[:, :5], max_rounds=50)
    assert_allclose(a.theta, b.theta, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="n_samples"):
        cfl(X, y, n_samples=np.full(6, 31))
    with pytest.raises(ValueError, match="n_samples"):
        cfl(X, y, n_samples=[5] * 5)
