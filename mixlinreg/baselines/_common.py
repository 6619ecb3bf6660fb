"""Validation and least-squares helpers shared by the baselines (private)."""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_choice, check_float

#: The only loss the closed-form baselines support.
_LOSSES = ("squared",)


def check_data(X, y):
    """``X`` (m, n, d) and ``y`` (m, n) as finite C-contiguous float64 arrays."""
    X = check_array("X", X, ndim=3, dtype=np.float64)
    m, n, d = X.shape
    if min(m, n, d) < 1:
        raise ValueError(f"X must have m, n, d >= 1, got shape {X.shape}")
    y = check_array("y", y, shape=(m, n), dtype=np.float64)
    return X, y


def check_loss(loss):
    """Only ``"squared"``: the baselines solve least squares in closed form."""
    return check_choice("loss", loss, _LOSSES)


def check_l2(l2):
    return check_float("l2", l2, low=0.0)


def stats_floats(d):
    """Floats one machine uploads for exact pooled least squares: upper triangle of X^T X, X^T y."""
    return float(d * (d + 1) // 2 + d)


def pooled_fit(Xc, yc, l2):
    """Least squares on the rows ``Xc`` (N, d), ``yc`` (N,).

    ``l2 == 0``: minimum-norm least squares (``numpy.linalg.lstsq``), unique even when N < d or the
    rows are rank deficient. ``l2 > 0``: the minimizer of
    ``(1/N) ||yc - Xc theta||^2 + (l2/2) ||theta||^2``, i.e. the solution of
    ``(Xc^T Xc / N + (l2/2) I) theta = Xc^T yc / N``.
    """
    if l2 == 0.0:
        return np.linalg.lstsq(Xc, yc, rcond=None)[0]
    N, d = Xc.shape
    A = Xc.T @ Xc / N
    A[np.diag_indices(d)] += 0.5 * l2
    return np.linalg.solve(A, Xc.T @ yc / N)


def cluster_fit(X, y, labels, k, l2):
    """Pooled least squares of each cluster ``0..k-1``; a cluster without machines gets NaN.

    Returns ``theta`` (k, d) and the number of machines of each cluster (k,).
    """
    d = X.shape[2]
    theta = np.full((k, d), np.nan)
    sizes = np.bincount(labels, minlength=k)
    for j in range(k):
        if sizes[j]:
            mask = labels == j
            theta[j] = pooled_fit(X[mask].reshape(-1, d), y[mask].reshape(-1), l2)
    return theta, sizes
