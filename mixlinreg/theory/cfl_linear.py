"""CFL's geometry in the linear model (Sattler, Müller, Samek, Section 2): the federated
stationary point, the clients' gradients there, and their population values in closed form.

The setting of the CFL studies: client ``i`` of cluster ``j`` holds ``n`` rows
``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma eps`` with standard normal ``eps``, and the loss
``r_i(theta) = (1/n) ||X_i theta - y_i||^2`` (that of :func:`mixlinreg.baselines.cfl`). With equal
``n`` on every client the federated objective is ``F = (1/m) sum_i r_i``, and plain federated
gradient descent (FedAvg with one local step) converges to its minimizer, the pooled least squares
fit: that is the stationary point ``theta*`` of the paper's eq. (2)-(3) here.

Population: ``R_j(theta) = ||theta - theta*_j||^2 + sigma^2``, ``grad R_j(theta) = 2 (theta -
theta*_j)``, and the stationary point of ``sum_j a_j R_j`` is ``sum_j a_j theta*_j``.

>>> import numpy as np
>>> ts = np.array([[1.0, 0.0], [-1.0, 0.0]])
>>> population_gradients(ts, [0.25, 0.75]).tolist()
[[-3.0, 0.0], [1.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_float, check_int
from ..baselines import cosine_similarities
from ..baselines._common import pooled_fit

__all__ = ["draw_clients", "stationary_point", "client_gradients", "population_gradients",
           "population_stationary_point", "cosine_similarities", "Grams"]


def draw_clients(theta_star, sizes, n, sigma, rng):
    """Data of ``sum(sizes)`` clients, ``sizes[j]`` of cluster ``j``, clients in cluster order.

    Parameters
    ----------
    theta_star : array_like, shape (k, d)
    sizes : sequence of int, length k, each >= 1
    n : int >= 1
        Rows per client.
    sigma : float >= 0
    rng : numpy.random.Generator

    Returns
    -------
    X : (m, n, d), y : (m, n), labels : (m,) int64
    """
    theta_star = check_array("theta_star", theta_star, ndim=2, dtype=np.float64)
    k, d = theta_star.shape
    sizes = [check_int("sizes", s, low=1) for s in sizes]
    if len(sizes) != k:
        raise ValueError(f"sizes must have one entry per row of theta_star ({k}), got {len(sizes)}")
    n = check_int("n", n, low=1)
    sigma = check_float("sigma", sigma, low=0.0)
    labels = np.repeat(np.arange(k, dtype=np.int64), sizes)
    m = labels.size
    X = rng.standard_normal((m, n, d))
    y = np.einsum("ind,id->in", X, theta_star[labels]) + sigma * rng.standard_normal((m, n))
    return X, y, labels


def stationary_point(X, y):
    """The federated stationary point: the minimizer of ``(1/m) sum_i r_i`` (equal ``n``), i.e.
    pooled least squares over every client's rows (minimum-norm when rank deficient)."""
    m, n, d = X.shape
    return pooled_fit(X.reshape(m * n, d), y.reshape(m * n), 0.0)


def client_gradients(X, y, theta):
    """``grad r_i(theta) = (2/n) X_i^T (X_i theta - y_i)`` of every client, shape (m, d)."""
    n = X.shape[1]
    res = np.einsum("ind,d->in", X, theta) - y
    return (2.0 / n) * np.einsum("ind,in->id", X, res)


def population_stationary_point(theta_star, weights):
    """``sum_j a_j theta*_j``: the stationary point of ``sum_j a_j R_j`` (weights normalized)."""
    theta_star = np.asarray(theta_star, dtype=np.float64)
    a = np.asarray(weights, dtype=np.float64)
    if a.shape != (theta_star.shape[0],) or np.any(a <= 0) or not np.all(np.isfinite(a)):
        raise ValueError(f"weights must be {theta_star.shape[0]} positive finite numbers, got {a}")
    return (a / a.sum()) @ theta_star


def population_gradients(theta_star, weights):
    """``grad R_j(theta*) = 2 (theta* - theta*_j)`` at the population stationary point, (k, d)."""
    theta_star = np.asarray(theta_star, dtype=np.float64)
    return 2.0 * (population_stationary_point(theta_star, weights)[None, :] - theta_star)


class Grams:
    """The clients' ``A_i = X_i^T X_i / n`` and ``b_i = X_i^T y_i / n``, computed once per data set:
    with equal ``n`` the stationary point of a group ``c`` (pooled least squares,
    :func:`~mixlinreg.theory.cfl_linear.stationary_point`) solves ``(sum_c A_i) theta =
    sum_c b_i``, and ``grad r_i(theta) = 2 (A_i theta - b_i)``
    (:func:`client_gradients`), at ``O(d^2)`` per client instead of a
    least squares over all the group's rows. A group whose pooled Gram matrix is (nearly) singular
    falls back to the minimum-norm fit of :func:`stationary_point`. For the many subgroups of a
    recursive split (study CFLR6)."""

    def __init__(self, X, y):
        self.X, self.y = X, y
        n = X.shape[1]
        Xt = X.transpose(0, 2, 1)
        self.A = np.matmul(Xt, X) / n
        self.b = np.matmul(Xt, y[:, :, None])[:, :, 0] / n

    def stationary_point(self, members):
        M = self.A[members].sum(axis=0)
        if np.linalg.cond(M) > 1e10:
            return stationary_point(self.X[members], self.y[members])
        return np.linalg.solve(M, self.b[members].sum(axis=0))

    def gradients(self, members, theta):
        return 2.0 * (self.A[members] @ theta - self.b[members])
