"""LOCAL, FedAvg, Per-FedAvg and size-weighted IFCA (:mod:`mixlinreg.baselines._federated`):
each against a direct computation on a tiny problem with machines of unequal sizes, IFCA equal
to :func:`mixlinreg.ifca` on equal sizes, FedAvg with one local step equal to gradient descent
on the size-weighted objective, and bad input refused naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

import mixlinreg as mlr
from mixlinreg.baselines._federated import (fedavg, ifca_weighted, local_train, machine_losses,
                                            per_fedavg)

C = 3


def _problem(loss, m=5, n=7, d=3, rng=0):
    """Padded data with unequal sizes (the padding rows random too: they must be ignored)."""
    g = np.random.default_rng(rng)
    X = g.normal(size=(m, n, d))
    if loss == "multinomial":
        y = g.integers(0, C, size=(m, n)).astype(float)
    else:
        y = g.normal(size=(m, n))
    sizes = g.integers(2, n + 1, size=m)
    sizes[0] = n
    return X, y, sizes


def _rows(X, y, sizes, i):
    return X[i, :sizes[i]], y[i, :sizes[i]]


def _grad(w, X, y, loss, l2):
    """Direct gradient of (1/n) sum_t ell + (l2/2)||w||^2 on one machine's rows."""
    if loss == "multinomial":
        Z = X @ w
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        P[np.arange(len(y)), y.astype(int)] -= 1.0
        return X.T @ P / len(y) + l2 * w
    return 2.0 * X.T @ (X @ w - y) / len(y) + l2 * w


def _value(w, X, y, loss, l2):
    if loss == "multinomial":
        Z = X @ w
        mx = Z.max(axis=1)
        lse = mx + np.log(np.exp(Z - mx[:, None]).sum(axis=1))
        return float(np.mean(lse - Z[np.arange(len(y)), y.astype(int)]) + 0.5 * l2 * np.sum(w * w))
    return float(np.mean((X @ w - y) ** 2) + 0.5 * l2 * np.sum(w * w))


def _kw(loss):
    return dict(loss=loss, n_classes=C if loss == "multinomial" else None)


def _zero(loss, d):
    return np.zeros((d, C)) if loss == "multinomial" else np.zeros(d)


LOSSES = ["squared", "multinomial"]


@pytest.mark.parametrize("loss", LOSSES)
def test_local_train_is_gradient_descent_on_each_machine(loss):
    X, y, sizes = _problem(loss)
    res = local_train(X, y, lr=0.1, n_steps=6, l2=0.05, n_samples=sizes, **_kw(loss))
    for i in range(len(sizes)):
        w = _zero(loss, X.shape[2])
        Xi, yi = _rows(X, y, sizes, i)
        for _ in range(6):
            w = w - 0.1 * _grad(w, Xi, yi, loss, 0.05)
        np.testing.assert_allclose(res.theta[i], w, rtol=1e-12, atol=1e-14)
        assert res.extra["loss"][i] == pytest.approx(_value(w, Xi, yi, loss, 0.05), rel=1e-12)
    assert res.labels.tolist() == list(range(len(sizes))) and res.n_rounds == 0


@pytest.mark.parametrize("loss", LOSSES)
def test_fedavg_one_local_step_is_gradient_descent_on_the_size_weighted_objective(loss):
    X, y, sizes = _problem(loss, rng=1)
    res = fedavg(X, y, lr=0.2, local_steps=1, n_rounds=5, l2=0.01, n_samples=sizes, **_kw(loss))
    Xp = np.concatenate([_rows(X, y, sizes, i)[0] for i in range(len(sizes))])
    yp = np.concatenate([_rows(X, y, sizes, i)[1] for i in range(len(sizes))])
    w = _zero(loss, X.shape[2])
    for _ in range(5):  # the pooled rows' mean loss = sum_i (n_i / N) F_i
        w = w - 0.2 * _grad(w, Xp, yp, loss, 0.01)
    np.testing.assert_allclose(res.theta[0], w, rtol=1e-11, atol=1e-13)
    assert res.extra["objective"] == pytest.approx(_value(w, Xp, yp, loss, 0.01), rel=1e-11)
    assert res.floats_sent_per_machine == 2 * w.size * 5


@pytest.mark.parametrize("weighting", ["size", "uniform"])
def test_fedavg_several_local_steps_against_a_direct_loop(weighting):
    X, y, sizes = _problem("multinomial", rng=2)
    res = fedavg(X, y, lr=0.3, local_steps=3, n_rounds=4, n_samples=sizes, weighting=weighting,
                 **_kw("multinomial"))
    p = sizes / sizes.sum() if weighting == "size" else np.full(len(sizes), 1 / len(sizes))
    w = _zero("multinomial", X.shape[2])
    for _ in range(4):
        locals_ = []
        for i in range(len(sizes)):
            wi = w.copy()
            for _ in range(3):
                wi = wi - 0.3 * _grad(wi, *_rows(X, y, sizes, i), "multinomial", 0.0)
            locals_.append(wi)
        w = np.tensordot(p, np.stack(locals_), axes=1)
    np.testing.assert_allclose(res.theta[0], w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", LOSSES)
def test_per_fedavg_first_order_against_a_direct_loop(loss):
    X, y, sizes = _problem(loss, rng=3)
    a, b = 0.1, 0.05
    res = per_fedavg(X, y, alpha=a, beta=b, local_steps=2, n_rounds=3, adapt_steps=2, l2=0.02,
                     n_samples=sizes, **_kw(loss))
    w = _zero(loss, X.shape[2])
    m = len(sizes)
    for _ in range(3):
        locals_ = []
        for i in range(m):
            wi = w.copy()
            Xi, yi = _rows(X, y, sizes, i)
            for _ in range(2):
                wi = wi - b * _grad(wi - a * _grad(wi, Xi, yi, loss, 0.02), Xi, yi, loss, 0.02)
            locals_.append(wi)
        w = np.mean(locals_, axis=0)  # uniform weights by default (Fallah et al.'s objective)
    np.testing.assert_allclose(res.extra["meta"], w, rtol=1e-12, atol=1e-14)
    for i in range(m):
        wi = w.copy()
        for _ in range(2):
            wi = wi - a * _grad(wi, *_rows(X, y, sizes, i), loss, 0.02)
        np.testing.assert_allclose(res.theta[i], wi, rtol=1e-12, atol=1e-14)


def _ifca_direct(X, y, sizes, init, lr, n_iter, loss, l2):
    """Size-weighted IFCA, one restart, machine by machine."""
    th = [t.copy() for t in init]
    q = sizes / sizes.sum()

    def assign(th):
        return [int(np.argmin([_value(t, *_rows(X, y, sizes, i), loss, l2) for t in th]))
                for i in range(len(sizes))]

    for _ in range(n_iter):
        a = assign(th)
        th = [t - lr * sum(q[i] * _grad(t, *_rows(X, y, sizes, i), loss, l2)
                           for i in range(len(sizes)) if a[i] == j)
              for j, t in enumerate(th)]
    return np.stack(th), np.array(assign(th))


@pytest.mark.parametrize("loss", LOSSES)
def test_ifca_weighted_against_a_direct_loop_with_unequal_sizes(loss):
    X, y, sizes = _problem(loss, m=6, rng=4)
    d = X.shape[2]
    g = np.random.default_rng(9)
    init = g.normal(size=(2, 2, d, C) if loss == "multinomial" else (2, 2, d))
    res = ifca_weighted(X, y, init, 0.3, n_iter=5, l2=0.01, loss=loss, n_samples=sizes)
    for r in range(2):
        th, lab = _ifca_direct(X, y, sizes, init[r], 0.3, 5, loss, 0.01)
        np.testing.assert_allclose(res.extra["theta_runs"][r], th, rtol=1e-11, atol=1e-13)
        np.testing.assert_array_equal(res.extra["labels_runs"][r], lab)
    kept = res.extra["kept"]
    assert kept == int(np.argmin(res.extra["loss_runs"]))
    np.testing.assert_array_equal(res.theta, res.extra["theta_runs"][kept])
    assert res.extra["n_clusters"] == np.unique(res.labels).size


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber", "multinomial"])
def test_ifca_weighted_equals_mixlinreg_ifca_on_equal_sizes(loss):
    g = np.random.default_rng(5)
    m, n, d, k, R = 8, 10, 3, 2, 3
    X = g.normal(size=(m, n, d))
    if loss == "multinomial":
        y = g.integers(0, C, size=(m, n)).astype(float)
        init = g.normal(size=(R, k, d, C))
    elif loss == "logistic":
        y = g.integers(0, 2, size=(m, n)).astype(float)
        init = g.normal(size=(R, k, d))
    else:
        y = g.normal(size=(m, n)) + np.repeat([0.0, 3.0], m // 2)[:, None]
        init = g.normal(size=(R, k, d))
    ref = mlr.ifca(X, y, init, 0.2, n_iter=15, loss=loss, l2=0.03, huber_delta=0.7,
                   method="data")
    res = ifca_weighted(X, y, init, 0.2, n_iter=15, loss=loss, l2=0.03, huber_delta=0.7,
                        n_samples=np.full(m, n))
    np.testing.assert_allclose(res.extra["theta_runs"], ref.theta, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(res.extra["labels_runs"], ref.labels)
    np.testing.assert_allclose(res.extra["loss_runs"], ref.loss, rtol=1e-10)


def test_padding_is_ignored_and_equal_counts_equal_the_truncated_data():
    X, y, _ = _problem("multinomial", rng=6)
    sizes = np.full(X.shape[0], 4)
    a = fedavg(X, y, lr=0.2, n_rounds=3, n_samples=sizes, **_kw("multinomial"))
    b = fedavg(X[:, :4], y[:, :4], lr=0.2, n_rounds=3, **_kw("multinomial"))
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-13)


def test_machine_losses_matches_a_direct_value():
    X, y, sizes = _problem("squared", rng=7)
    w = np.random.default_rng(1).normal(size=(len(sizes), X.shape[2]))
    weights = (np.arange(X.shape[1])[None] < sizes[:, None]) / sizes[:, None]
    got = machine_losses(X, y, w, weights, "squared", l2=0.1)
    want = [_value(w[i], *_rows(X, y, sizes, i), "squared", 0.1) for i in range(len(sizes))]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda X, y: local_train(X, y, lr=0.0), "lr"),
    (lambda X, y: local_train(X, y, n_steps=-1), "n_steps"),
    (lambda X, y: local_train(X, y, loss="hinge"), "loss"),
    (lambda X, y: local_train(X, y, n_samples=[1, 2]), "n_samples"),
    (lambda X, y: fedavg(X, y, local_steps=0), "local_steps"),
    (lambda X, y: fedavg(X, y, weighting="median"), "weighting"),
    (lambda X, y: fedavg(X, y, loss="multinomial"), "n_classes"),
    (lambda X, y: per_fedavg(X, y, alpha=-1.0, beta=0.1), "alpha"),
    (lambda X, y: per_fedavg(X, y, alpha=0.1, beta=0.0), "beta"),
    (lambda X, y: per_fedavg(X, y, alpha=0.1, beta=0.1, adapt_steps=-1), "adapt_steps"),
    (lambda X, y: ifca_weighted(X, y, np.zeros((1, 2, 5)), 0.1), "init"),
    (lambda X, y: ifca_weighted(X, y, np.zeros((1, 2, 3)), 0.0), "lr"),
    (lambda X, y: ifca_weighted(X, y, np.zeros((1, 2, 3)), 0.1, n_iter=-2), "n_iter"),
])
def test_bad_input_names_the_parameter(call, match):
    X, y, _ = _problem("squared")
    with pytest.raises((ValueError, TypeError), match=match):
        call(X, y)
