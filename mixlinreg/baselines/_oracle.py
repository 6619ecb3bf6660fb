"""Oracle clustering: the true partition is known, least squares inside each cluster."""

from __future__ import annotations

import numpy as np

from ._common import check_data_rescaled, check_l2, check_loss, cluster_fit, stats_floats
from ._result import BaselineResult

__all__ = ["oracle"]


def _check_partition(labels, m):
    """``labels`` as int64 (m,) with values 0..k-1, every cluster used; returns (labels, k)."""
    arr = np.asarray(labels)
    if not (np.issubdtype(arr.dtype, np.integer) and not np.issubdtype(arr.dtype, np.bool_)):
        raise TypeError(f"labels must be an array of integer cluster labels, got dtype {arr.dtype}")
    if arr.shape != (m,):
        raise ValueError(f"labels must have shape ({m},) (one label per machine of X), "
                         f"got {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise ValueError(f"labels must be in [0, k-1], got a minimum of {arr.min()}")
    k = int(arr.max()) + 1
    missing = np.flatnonzero(np.bincount(arr, minlength=k) == 0)
    if missing.size:
        raise ValueError(f"labels must use every cluster 0..k-1 (k = max label + 1 = {k}), "
                         f"got no machine in cluster(s) {missing.tolist()}")
    return arr, k


def oracle(X, y, labels, *, l2=0.0, loss="squared"):
    r"""Per-cluster least squares with the true partition known.

    Cluster ``j`` pools the rows of all its machines, ``N_j = n |{i : labels_i = j}|`` of them,
    and fits ``theta_j``:

    * ``l2 == 0``: minimum-norm least squares (``numpy.linalg.lstsq``), so ``N_j < d`` still
      gives a unique answer, the minimum-norm interpolant;
    * ``l2 > 0``: ridge, the minimizer of ``(1/N_j) sum (y - x.theta)^2 + (l2/2) ||theta||^2``,
      i.e. the solution of ``(X_j^T X_j / N_j + (l2/2) I) theta = X_j^T y_j / N_j`` (the penalty
      convention of :func:`mixlinreg.ifca`).

    This is the yardstick of Section 5.1 of the paper: no algorithm that does not know the
    partition can do better (up to constants).

    Parameters
    ----------
    X : array_like, shape (m, n, d)
        Features of ``m`` machines with ``n`` rows each.
    y : array_like, shape (m, n)
        Responses.
    labels : array_like of int, shape (m,)
        True cluster of every machine, values ``0..k-1`` with every cluster used.
    l2 : float, default 0
        Ridge coefficient, ``>= 0``.
    loss : {"squared"}
        Only the squared loss (closed form); anything else raises ``ValueError``.

    Returns
    -------
    BaselineResult
        ``theta`` (k, d) in float64; ``labels`` the given labels; ``n_rounds = 1``;
        ``floats_sent_per_machine = d`` (each machine downloads its cluster's model);
        ``extra["cluster_sizes"]`` (k,) machines per cluster and
        ``extra["floats_sufficient_stats"] = d (d + 1) / 2 + d``, the upload an exact one-round
        computation would add (see :class:`BaselineResult`).

    Examples
    --------
    >>> import numpy as np, mixlinreg as mlr
    >>> from mixlinreg.baselines import oracle
    >>> mix = mlr.make_mixture(m=8, n=20, d=3, k=2, R=1.0, sigma=0.0, rng=0)
    >>> res = oracle(mix.X, mix.y, mix.labels)
    >>> res.theta.shape, res.n_rounds
    ((2, 3), 1)
    >>> bool(np.allclose(res.theta, mix.theta_star))  # noiseless data: exact recovery
    True

    References
    ----------
    Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
    IEEE Trans. Inf. Theory 2022 (long version), Section 5.1 (the oracle rate of the linear model).
    """
    X, y = check_data_rescaled(X, y)
    check_loss(loss)
    l2 = check_l2(l2)
    labels, k = _check_partition(labels, X.shape[0])
    theta, sizes = cluster_fit(X, y, labels, k, l2)
    d = X.shape[2]
    extra = {"cluster_sizes": sizes, "floats_sufficient_stats": stats_floats(d)}
    return BaselineResult(theta=theta, labels=labels, n_rounds=1,
                          floats_sent_per_machine=float(d), extra=extra)
