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
    # Delta = f * 2**e (f in [0.5, 1)), from distances computed with scaling: rows whose squared
    # distance under- or overflows are told apart correctly, and otherwise Delta is bit for bit
    # mixlinreg.geometry.min_separation's
    f, e = _separation(theta)
    if f == 0:
        raise ValueError(f"theta_star must have distinct rows (Delta > 0), got Delta = 0.0 (rows "
                         f"{_equal_rows(theta)} are equal)")
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True)
    n_runs = check_int("n_runs", n_runs, low=1)
    check_choice("direction", direction, DIRECTIONS)
    gen = as_generator(rng)
    radius = np.ldexp((0.5 - alpha0) * f, e)  # (1/2 - alpha0) Delta, without forming Delta

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
            diff, scale = _scaled_differences(theta, j)
            keys = _distance_keys(diff, scale)
            keys[j] = (np.inf, 0.0)
            near = min(range(k), key=lambda l: keys[l])  # the first of equal distances
            # scale-free; the norm along axis 1 (a 1-d norm is a dot product: other roundings)
            u[j] = diff[near] / np.linalg.norm(diff[near:near + 1], axis=1)[0]
        u = np.broadcast_to(u, (n_runs, k, d))
    with np.errstate(over="ignore", invalid="ignore"):
        start = theta + radius * u
        out = start.astype(dtype)
    top = float(np.max(np.abs(theta)))
    if not np.all(np.isfinite(out)):
        raise OverflowError(f"init_close: theta_star of magnitude up to {top:.3g} with Delta = "
                            f"{np.ldexp(f, e):.3g} and alpha0 = {alpha0!r} gives starts that "
                            f"overflow {np.dtype(dtype).name}; rescale theta_star")
    if radius > 0:
        _check_placed(start, theta, radius, top, f, e)
    return out


def _check_placed(start, theta, radius, top, f, e):
    """``ValueError`` when rounding moved the float64 starts off the distance ``radius``: rows of
    ``theta_star`` closer than the float64 resolution of their entries (1e-170 apart at 1)."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = start - theta
        scale = np.frexp(np.max(np.abs(v), axis=-1, keepdims=True))[1]
        got = np.ldexp(np.linalg.norm(np.ldexp(v, -scale), axis=-1), scale[..., 0])
        off = np.max(np.abs(got / radius - 1.0))
    if off > 1e-3:  # rounding, never the draw: the directions have norm 1 to ~1e-16
        raise ValueError(f"theta_star: rows Delta = {np.ldexp(f, e):.3g} apart are too close for "
                         f"float64 to place starts at (1/2 - alpha0) Delta = {radius:.3g} from entries "
                         f"of size {top:.3g} (resolution {np.finfo(np.float64).eps * top:.3g}); "
                         "subtract a common row from theta_star (and add it back to the starts)")


def _scaled_differences(theta, j):
    """``theta - theta[j]`` as ``diff * 2**scale`` per row (``diff`` of entries at most 1), so that
    their norms neither under- nor overflow; exact where the plain difference is finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        raw = theta - theta[j]
        big = ~np.all(np.isfinite(raw), axis=1)
        raw[big] = theta[big] * 0.5 - theta[j] * 0.5  # halves of huge numbers are exact
    top = np.max(np.abs(raw), axis=1)
    scale = np.frexp(top)[1] + big  # top < 2**scale (halved rows: one more)
    diff = np.ldexp(raw, -(np.frexp(top)[1])[:, None])
    return diff, scale


def _distance_keys(diff, scale):
    """Each row's distance ``||diff|| * 2**scale`` as an exactly comparable key ``(exponent,
    mantissa)`` (``(-inf, 0)`` for zero)."""
    norms = np.linalg.norm(diff, axis=1)
    mant, ex = np.frexp(norms)
    return [(-np.inf, 0.0) if m == 0 else (int(x) + int(s), float(m))
            for m, x, s in zip(mant, ex, scale)]


def _separation(theta):
    """``Delta = min_{j < l} ||theta_j - theta_l||`` of float64 rows as ``(f, e)``, ``Delta = f *
    2**e`` with ``f`` in [0.5, 1) (``(0.0, 0)`` when two rows are equal, ``(inf, 0)`` for one row).

    The norms are taken of differences scaled by a power of two (:func:`_scaled_differences`), so
    rows closer than 1e-154 or farther than 1e154 (whose squared distance under- or overflows) get
    their true distance; otherwise the value is :func:`mixlinreg.geometry.min_separation`'s bit for
    bit (scaling by a power of two commutes with rounding).
    """
    k = theta.shape[0]
    best = (np.inf, 0.0)
    for j in range(k - 1):
        diff, scale = _scaled_differences(theta[j:], 0)
        keys = _distance_keys(diff[1:], scale[1:])
        best = min(best, min(keys))
    if best[0] == np.inf:
        return np.inf, 0
    if best[0] == -np.inf:
        return 0.0, 0
    return best[1], best[0]


def separation(theta):
    """``Delta`` of float64 rows (see :func:`_separation`): ``inf`` for one row, 0 for equal
    rows, and ``inf`` only when the distance itself exceeds the float64 range."""
    f, e = _separation(np.asarray(theta, dtype=np.float64))
    return float(np.ldexp(f, e)) if np.isfinite(f) else float(f)


def _equal_rows(theta):
    """The first pair of equal rows of ``theta``, as a list of two indices."""
    for j in range(theta.shape[0] - 1):
        same = np.flatnonzero(np.all(theta[j + 1:] == theta[j], axis=1))
        if same.size:
            return [j, j + 1 + int(same[0])]
    return []


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
