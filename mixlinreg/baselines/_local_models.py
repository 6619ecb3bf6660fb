"""Local models: every machine trains alone."""

from __future__ import annotations

import numpy as np

from ._common import check_data_rescaled, check_l2, check_loss
from ._result import BaselineResult

__all__ = ["local_models"]


def _local_fit(X, y, l2):
    """Per-machine least squares (min-norm when ``l2 == 0``, else ridge); (theta (m, d), rank)."""
    m, n, d = X.shape
    if l2 == 0.0:
        theta = np.empty((m, d))
        rank = np.empty(m, dtype=np.int64)
        for i in range(m):
            theta[i], _, rank[i], _ = np.linalg.lstsq(X[i], y[i], rcond=None)
        return theta, rank
    A = np.matmul(X.transpose(0, 2, 1), X) / n
    A[:, np.arange(d), np.arange(d)] += 0.5 * l2
    b = np.einsum("mnd,mn->md", X, y) / n
    return np.linalg.solve(A, b[:, :, None])[:, :, 0], None


def local_models(X, y, *, l2=0.0, loss="squared"):
    r"""Each machine fits its own model on its own ``n`` rows; nothing is communicated.

    When ``n < d`` (or ``X_i`` is rank deficient) the empirical risk minimizer of a machine is not
    unique: every ``theta`` with ``X_i theta = y_i`` interpolates. With ``l2 == 0`` this function
    returns the **minimum-norm** least-squares solution ``pinv(X_i) y_i`` (computed by
    ``numpy.linalg.lstsq``); with ``l2 > 0`` the unique ridge solution of
    ``(X_i^T X_i / n + (l2/2) I) theta = X_i^T y_i / n``.

    Parameters
    ----------
    X : array_like, shape (m, n, d)
    y : array_like, shape (m, n)
    l2 : float, default 0
        Ridge coefficient, ``>= 0``.
    loss : {"squared"}
        Only the squared loss.

    Returns
    -------
    BaselineResult
        ``theta`` (m, d), row ``i`` the model of machine ``i``; ``labels = arange(m)``;
        ``n_rounds = 0``; ``floats_sent_per_machine = 0``; ``extra["rank"]`` (m,) the rank of
        every ``X_i`` when ``l2 == 0`` (``rank < d`` means the ERM was not unique), else ``None``.

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.baselines import local_models
    >>> mix = mlr.make_mixture(m=4, n=3, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    >>> res = local_models(mix.X, mix.y)  # n < d: minimum-norm interpolants
    >>> res.theta.shape, res.extra["rank"].tolist()
    ((4, 5), [3, 3, 3, 3])

    References
    ----------
    Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
    IEEE Trans. Inf. Theory 2022 (long version), Section 6 (the "local model" baseline) and
    Section 4.1 (the local ERM that one-shot clustering sends).
    """
    X, y = check_data_rescaled(X, y)
    check_loss(loss)
    l2 = check_l2(l2)
    theta, rank = _local_fit(X, y, l2)
    m = X.shape[0]
    return BaselineResult(theta=theta, labels=np.arange(m, dtype=np.int64), n_rounds=0,
                          floats_sent_per_machine=0.0, extra={"rank": rank})
