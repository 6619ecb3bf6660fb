"""Geometry of the true parameters: their separation ``Delta`` and centres with a given ``Delta``.

Every module that needs the minimum pairwise distance of a set of centres (the ``Delta`` of the
paper) or centres at an exact separation uses these two functions: :mod:`mixlinreg.data`
(``Mixture.separation``, ``init_close``), the studies of :mod:`mixlinreg.theory` and
:mod:`mixlinreg.teach`.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (long
version), Section 5.1 (the separation ``Delta``) and Section 5.2 (``Delta`` of the population
minimizers).
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import as_generator, check_array, check_bool, check_float, check_int

__all__ = ["min_separation", "simplex_centers", "placed_start", "PLACEMENTS"]

#: How :func:`placed_start` places two models around their centres.
PLACEMENTS = ("collinear", "orthogonal_opposite", "orthogonal_same", "random")


def min_separation(theta):
    """Minimum Euclidean distance between two rows of ``theta``: the separation ``Delta``.

    ``Delta = min_{j < l} ||theta_j - theta_l||_2``, computed in float64.

    Parameters
    ----------
    theta : array-like of shape (k, d)
        Finite real centres, ``k >= 1`` rows, ``d >= 1``.

    Returns
    -------
    float
        ``Delta``; ``inf`` when ``k == 1`` (no pair), ``0.0`` when two rows coincide.

    Raises
    ------
    ValueError
        If ``theta`` is not 2-dimensional, has no row or no column, or holds NaN or inf.
    TypeError
        If ``theta`` is not a real numeric array.

    Notes
    -----
    Each distance is ``np.linalg.norm(theta[l] - theta[j])`` over the rows ``l > j`` at once
    (``axis=1``), not ``scipy.spatial.distance.pdist``: the two sum the squares in a different
    order, so they can differ in the last bit, and the starts of the committed Figure 2 runs
    (:func:`mixlinreg.init_close` puts them at ``(1/2 - alpha0) Delta``) were made with this
    order.

    Examples
    --------
    >>> from mixlinreg.geometry import min_separation
    >>> min_separation([[0.0, 0.0], [3.0, 4.0], [0.0, 10.0]])
    5.0
    >>> min_separation([[1.0, 2.0]])
    inf

    References
    ----------
    Ghosh et al., long version, Section 5.1: ``Delta = min_{j != j'} ||theta*_j - theta*_j'||``.
    """
    theta = check_array("theta", theta, ndim=2, dtype=np.float64)
    k, d = theta.shape
    if k < 1 or d < 1:
        raise ValueError(f"theta must have shape (k, d) with k >= 1 and d >= 1, got {theta.shape}")
    best = math.inf
    for j in range(k - 1):
        best = min(best, float(np.linalg.norm(theta[j + 1:] - theta[j], axis=1).min()))
    return best


def simplex_centers(k, d, delta, rng=None, *, haar=True):
    """``k`` centres in ``R^d`` with every pairwise distance exactly ``delta``.

    ``theta*_j = (delta / sqrt 2) q_j`` with ``q_1, ..., q_k`` orthonormal, the columns of the QR
    factor of one ``d x k`` standard normal matrix drawn from ``rng``. Then
    ``||theta*_j - theta*_l|| = delta`` for ``j != l`` (up to rounding) and
    ``||theta*_j|| = delta / sqrt 2`` (``<~ 1`` as Assumption 2 asks, for ``delta <~ 1``).

    Parameters
    ----------
    k : int
        Number of centres, ``2 <= k <= d``.
    d : int
        Dimension, ``d >= k``.
    delta : float
        Separation ``Delta > 0``.
    rng : None, int, SeedSequence or Generator
        Source of the one ``(d, k)`` standard normal draw (``as_generator(rng)``).
    haar : bool, default True
        ``True``: the signs of the QR factor's columns are fixed by the signs of ``R``'s diagonal,
        so the ``q_j`` are the first ``k`` columns of a Haar-distributed orthogonal matrix (studies
        T1 and C1, :mod:`mixlinreg.teach`). ``False``: LAPACK's ``Q`` as it comes (study A0); the
        distances are the same, the signs of the centres may differ. Both draw the same numbers,
        so the generator is left in the same state.

    Returns
    -------
    ndarray of shape (k, d), float64

    Examples
    --------
    >>> import numpy as np
    >>> from mixlinreg.geometry import min_separation, simplex_centers
    >>> theta = simplex_centers(3, 5, 2.0, rng=0)
    >>> theta.shape, round(min_separation(theta), 12)
    ((3, 5), 2.0)

    References
    ----------
    Ghosh et al., long version, Section 5.1 (the separation ``Delta``, ``rho = Delta^2/sigma^2``);
    Mezzadri, How to generate random matrices from the classical compact groups, Notices of the
    AMS 54 (2007) (the sign fix that makes ``Q`` Haar-distributed).
    """
    k = check_int("k", k, low=2)
    d = check_int("d", d, low=k)
    delta = check_float("delta", delta, low=0.0, low_open=True)
    haar = check_bool("haar", haar)
    gen = as_generator(rng)
    q, r = np.linalg.qr(gen.standard_normal((d, k)))
    if haar:
        q = q * np.sign(np.diag(r))[None, :]
    return (delta / math.sqrt(2.0)) * q.T


def placed_start(theta_star, alpha0, kind, rng):
    """Both models at distance ``(1/2 - alpha0) Delta`` from their centres, placed by ``kind``.

    ``theta_j = theta*_j + (1/2 - alpha0) Delta v_j`` with ``u`` the unit vector from centre 1 to
    centre 2 and ``w`` a random unit vector perpendicular to it: ``"collinear"``: ``v = (u, -u)``
    (each model moved toward the other centre, :func:`mixlinreg.init_close`'s adversarial start);
    ``"orthogonal_opposite"``: ``(w, -w)``; ``"orthogonal_same"``: ``(w, w)``; ``"random"``: two
    independent uniform directions. The names are those of
    :func:`mixlinreg.theory.lemma1.placement`, seen from either cluster (used by study T1).

    >>> th = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    >>> placed_start(th, 0.25, "collinear", 0).tolist()
    [[0.25, 0.0, 0.0], [0.75, 0.0, 0.0]]
    """
    th = np.asarray(theta_star, dtype=float)
    if th.shape[0] != 2:
        raise ValueError(f"placed_start needs k = 2 centres, got shape {th.shape}")
    if kind not in PLACEMENTS:
        raise ValueError(f"kind must be one of {list(PLACEMENTS)}, got {kind!r}")
    gen = as_generator(rng)
    delta = float(np.linalg.norm(th[1] - th[0]))
    u = (th[1] - th[0]) / delta
    w = gen.standard_normal(th.shape[1])
    w -= (w @ u) * u
    w /= np.linalg.norm(w)
    if kind == "collinear":
        v = (u, -u)
    elif kind == "orthogonal_opposite":
        v = (w, -w)
    elif kind == "orthogonal_same":
        v = (w, w)
    else:
        z = gen.standard_normal((2, th.shape[1]))
        v = tuple(z / np.linalg.norm(z, axis=1, keepdims=True))
    return th + (0.5 - alpha0) * delta * np.stack(v)
