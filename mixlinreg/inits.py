"""Initializations of IFCA: the paper's Bernoulli starts and starts at an exact distance.

``init_bernoulli`` is the initialization of Section 6.1 and of the authors' code;
``init_close`` puts every model at distance exactly ``(1/2 - alpha0) Delta`` from its truth, the
boundary of Assumption 1 (``Delta`` from :func:`mixlinreg.geometry.min_separation`). Both are
re-exported by :mod:`mixlinreg.data` and :mod:`mixlinreg`. ``tie_shared`` makes any start fit
weight sharing (one value per shared coordinate, the mean of the k models').

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (long
version), Assumption 1 and Theorem 1 (Section 5.1), Section 6.1.
"""

from __future__ import annotations

import numpy as np

from ._validation import (as_generator, check_array, check_bool, check_choice, check_dtype,
                          check_float, check_int)
from .geometry import min_separation

__all__ = ["init_bernoulli", "init_close", "tie_shared"]

DIRECTIONS = ("random", "adversarial")


def init_bernoulli(n_runs, k, d, rng=None, dtype=np.float64):
    """Coordinate-wise Bernoulli(0.5) initializations, entries 0 or 1, not scaled.

    The initialization of the paper's Section 6.1 and of the authors' code, whatever ``R`` is.

    Parameters
    ----------
    n_runs, k, d : int
        Number of independent initializations, clusters, dimension; all ``>= 1``.
    rng : None, int, SeedSequence or Generator
    dtype : numpy.float32 or numpy.float64

    Returns
    -------
    ndarray of shape (n_runs, k, d)

    Examples
    --------
    >>> from mixlinreg.inits import init_bernoulli
    >>> init_bernoulli(10, 2, 1000, rng=0).shape
    (10, 2, 1000)

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Section 6.1.
    """
    n_runs = check_int("n_runs", n_runs, low=1)
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    dtype = check_dtype("dtype", dtype)
    gen = as_generator(rng)
    return gen.integers(0, 2, size=(n_runs, k, d)).astype(dtype)


def init_close(theta_star, alpha0, n_runs, rng=None, direction="random", dtype=None):
    """Initializations at distance exactly ``(1/2 - alpha0) * Delta`` from the truth.

    ``theta_j^(0) = theta*_j + (1/2 - alpha0) * Delta * u_j`` with ``||u_j|| = 1`` and ``Delta`` the
    minimum pairwise distance between rows of ``theta_star``: the boundary of Assumption 1 of the
    long version.

    Parameters
    ----------
    theta_star : array-like of shape (k, d)
        True parameters, ``k >= 2`` and distinct rows (``Delta > 0``).
    alpha0 : float
        Closeness, in ``(0, 0.5]``; ``0.5`` starts at the truth.
    n_runs : int
        Number of initializations, ``>= 1``.
    rng : None, int, SeedSequence or Generator
        Used only by ``direction="random"``.
    direction : {"random", "adversarial"}
        ``"random"``: ``u_j`` uniform on the unit sphere (normalized standard normal, shape
        ``(n_runs, k, d)`` drawn at once), independent across runs and models. ``"adversarial"``:
        ``u_j`` points from ``theta*_j`` to its nearest other center (lowest index on ties), the same
        for every run: the worst case of Assumption 1.
    dtype : numpy.float32 or numpy.float64, optional
        Default: the dtype of ``theta_star`` if it is float32 or float64, float64 otherwise. The
        computation is done in float64.

    Returns
    -------
    ndarray of shape (n_runs, k, d)

    Examples
    --------
    >>> import numpy as np
    >>> from mixlinreg.inits import init_close
    >>> theta = np.array([[0.0, 0.0], [2.0, 0.0]])
    >>> init = init_close(theta, alpha0=0.25, n_runs=1, direction="adversarial")
    >>> init[0].tolist()
    [[0.5, 0.0], [1.5, 0.0]]

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning (long version),
    Assumption 1 and Theorem 1.
    """
    theta = check_array("theta_star", theta_star, ndim=2)
    if dtype is None:
        dtype = theta.dtype if theta.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    dtype = check_dtype("dtype", dtype)
    k, d = theta.shape
    if k < 2:
        raise ValueError(f"theta_star must have at least 2 rows (k >= 2) to define Delta, got shape "
                         f"{theta.shape}")
    theta = theta.astype(np.float64)
    delta = min_separation(theta)
    if not delta > 0:
        raise ValueError(f"theta_star must have distinct rows (Delta > 0), got Delta = {delta!r}")
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True)
    n_runs = check_int("n_runs", n_runs, low=1)
    check_choice("direction", direction, DIRECTIONS)
    gen = as_generator(rng)
    radius = (0.5 - alpha0) * delta

    if direction == "random":
        u = gen.standard_normal((n_runs, k, d))
        norm = np.linalg.norm(u, axis=2, keepdims=True)
        while not norm.all():  # probability zero; kept so that ||u|| = 1 always holds
            bad = norm[..., 0] == 0
            u[bad] = gen.standard_normal((int(bad.sum()), d))
            norm = np.linalg.norm(u, axis=2, keepdims=True)
        u /= norm
    else:
        u = np.empty((k, d))
        for j in range(k):
            dist = np.linalg.norm(theta - theta[j], axis=1)
            dist[j] = np.inf
            near = int(np.argmin(dist))
            u[j] = (theta[near] - theta[j]) / dist[near]
        u = np.broadcast_to(u, (n_runs, k, d))
    return (theta + radius * u).astype(dtype)


def tie_shared(init, shared, *, matrix=False):
    """``init`` with its shared coordinates tied: each replaced by the mean over the k models.

    Weight sharing (``mixlinreg.ifca(..., shared=...)``) keeps one copy of the shared coordinates,
    so the k models of a run must start equal there; this is the start it takes from any other.

    Parameters
    ----------
    init : array (R, k, d) or (k, d); with ``matrix=True`` (R, k, d, C) or (k, d, C)
    shared : bool array (d,) or sequence of distinct ints in [0, d)
        The shared coordinates (feature rows of matrix models).
    matrix : bool, default False
        Models are d x C matrices (``loss="multinomial"``).

    Returns
    -------
    ndarray, a new array of init's shape and dtype (float64 unless init is float32).

    Examples
    --------
    >>> import numpy as np
    >>> tie_shared(np.array([[0.0, 1.0, 2.0], [4.0, 3.0, 2.0]]), [0, 1])
    array([[2., 2., 2.],
           [2., 2., 2.]])
    """
    from ._problem import check_shared

    arr = np.asarray(init)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    base = 3 if check_bool("matrix", matrix) else 2
    if arr.ndim not in (base, base + 1):
        shape = "(k, d, C) or (R, k, d, C)" if matrix else "(k, d) or (R, k, d)"
        raise ValueError(f"init must have shape {shape}, got shape {arr.shape}")
    full = arr[None] if arr.ndim == base else arr
    d = full.shape[2]
    mask, _ = check_shared(shared, d)
    out = np.array(full, copy=True)
    out[:, :, mask] = full[:, :, mask].mean(axis=1, keepdims=True)
    return out[0] if arr.ndim == base else out
