"""The random draws every generator of :mod:`mixlinreg.data` is built from, and rows for given
true parameters.

This module holds the low-level pieces that touch the random generator or turn parameters into
signals: the nonzero patterns of the true parameters (:func:`_patterns`, :func:`_unit`), standard
normal arrays drawn in float64 slices (:func:`_normal`), the noise (:func:`_noise`), the noiseless
signal ``<x, theta*>`` (:func:`_signal`), the label and response-argument checks they share, and the
two public functions :func:`draw_responses` and :func:`draw_rows` (the rows of the theory studies).
The containers (:class:`~mixlinreg.data.Mixture`, :class:`~mixlinreg.data.Trial`) and the public
generators that assemble these draws live in :mod:`mixlinreg.data`, which re-exports
``draw_responses`` and ``draw_rows``: import them from there.

Every draw is made from the ``numpy.random.Generator`` the caller passes (or ``as_generator(rng)``)
in a fixed order; Gaussian draws are made in float64 and rounded to the requested ``dtype``. The
conventions (shapes, labels, scalings) are those of :mod:`mixlinreg.data`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import expit

from ._validation import (
    as_generator,
    check_array,
    check_choice,
    check_dtype,
    check_float,
    check_int,
)
from .losses import CODES

__all__ = ["draw_responses", "draw_rows", "DuplicateClustersWarning"]

# Gaussian arrays are drawn in float64 in slices of at most this many numbers, then rounded into the
# output, so a float32 data set never holds a full float64 copy in memory.
_CHUNK = 1 << 22


# --------------------------------------------------------------------------------------------------
# patterns, Gaussian arrays, signals
# --------------------------------------------------------------------------------------------------


class DuplicateClustersWarning(UserWarning):
    """Issued by the generators of :mod:`mixlinreg.data` when two clusters drew the same pattern,
    so their true parameters are equal (likely only when ``d`` is small: Bernoulli 0/1 patterns
    take ``2**d - 1`` values, the directions of the logistic family two when ``d = 1``)."""


def _n_directions(kind, d):
    """How many distinct directions a pattern row can take: ``2**d - 1`` nonzero 0/1 patterns
    (``"bernoulli"``, capped at 2**63), 2 Gaussian directions when ``d = 1``, else unbounded."""
    if kind == "bernoulli":
        return 2 ** min(d, 63) - 1
    return 2 if d == 1 else math.inf


def _check_distinct_possible(kind, k, d):
    """``ValueError`` when fewer than ``k`` distinct directions exist in dimension ``d``."""
    n_dir = _n_directions(kind, d)
    if k > n_dir:
        what = ("nonzero 0/1 patterns (2^d - 1)" if kind == "bernoulli"
                else "Gaussian directions (+1 and -1)")
        need = math.ceil(math.log2(k + 1)) if kind == "bernoulli" else 2
        raise ValueError(f"k = {k} clusters need k distinct true parameters, but d = {d} allows "
                         f"only {n_dir} {what}: use d >= {need} or k <= {n_dir}")


def _warn_duplicates(B, kind, stacklevel):
    """:class:`DuplicateClustersWarning` naming the clusters whose rows of ``B`` are equal (up to a
    positive factor: the directions), with the probability of such a draw."""
    k, d = B.shape
    unit = B / np.linalg.norm(B, axis=1, keepdims=True)
    groups = {}
    for j in range(k):
        groups.setdefault(unit[j].tobytes(), []).append(j)
    same = [g for g in groups.values() if len(g) > 1]
    if not same:
        return
    n_dir = _n_directions(kind, d)
    p_distinct = math.prod(1.0 - i / n_dir for i in range(k))
    names = "; ".join(", ".join(str(j) for j in g) for g in same)
    what = "0/1 pattern" if kind == "bernoulli" else "direction"
    warnings.warn(f"clusters {names} drew the same {what}, so their true parameters are equal (with "
                  f"d = {d} and k = {k} a draw repeats a {what} with probability "
                  f"{1.0 - p_distinct:.3g}); use a larger d or another seed",
                  DuplicateClustersWarning, stacklevel=stacklevel + 1)


def _patterns(gen, k, d, kind, stacklevel=1):
    """Raw (k, d) float64 patterns of the true parameters, every row nonzero.

    ``kind="bernoulli"``: coordinate-wise Bernoulli(0.5) 0/1 entries; ``"gaussian"``: standard normal
    entries. Rows that come out all zero are redrawn, in row order, from the same generator (the
    patterns are conditioned on being nonzero, so that they can be rescaled to a given norm).

    Raises ``ValueError`` before drawing when ``d`` cannot give ``k`` distinct directions, and
    warns (:class:`DuplicateClustersWarning`, attributed to the frame ``stacklevel`` above this
    one: 1 is the caller) when two rows drew the same direction; the draws are unchanged.
    """
    _check_distinct_possible(kind, k, d)

    def draw(shape):
        if kind == "bernoulli":
            return gen.integers(0, 2, size=shape).astype(np.float64)
        return gen.standard_normal(shape)

    B = draw((k, d))
    zero = ~B.any(axis=1)
    while zero.any():
        B[zero] = draw((int(zero.sum()), d))
        zero = ~B.any(axis=1)
    _warn_duplicates(B, kind, stacklevel + 1)
    return B


def _unit(B, theta_scale):
    """float64 directions with ``theta* = R * unit``: ``B`` itself (``"code"``) or rows of norm 1."""
    if theta_scale == "code":
        return B.astype(np.float64)
    return B / np.linalg.norm(B.astype(np.float64), axis=1, keepdims=True)


def _normal(gen, shape, dtype):
    """Standard normal array of ``shape`` in ``dtype``, drawn in float64 slices along axis 0.

    The stream is the one of a single ``gen.standard_normal(shape)`` call; only memory differs.
    """
    if dtype == np.float64:
        return gen.standard_normal(shape)
    out = np.empty(shape, dtype=dtype)
    per_row = max(1, math.prod(shape[1:]))
    step = max(1, _CHUNK // per_row)
    for start in range(0, shape[0], step):
        stop = min(shape[0], start + step)
        out[start:stop] = gen.standard_normal((stop - start,) + tuple(shape[1:]))
    return out


def _signal(X, labels, theta, summation="cluster"):
    """``S[i] = X[i] @ theta[labels[i]]`` in ``X``'s dtype, shape (m, n).

    Two summation orders, equal up to rounding, both kept because committed results depend on
    their last bits: ``"cluster"``, one matrix-vector product per cluster (the Figure 2
    generators; no (m, d) copy of ``theta``), and ``"machine"``, one ``einsum`` over the machines
    (the studies of :mod:`mixlinreg.theory`).
    """
    m, n, d = X.shape
    theta = np.asarray(theta, dtype=X.dtype)
    if summation == "machine":
        return np.einsum("ind,id->in", X, theta[labels])
    S = np.empty((m, n), dtype=X.dtype)
    for j in range(theta.shape[0]):
        idx = np.flatnonzero(labels == j)
        if idx.size == 0:
            continue
        if idx[-1] - idx[0] + 1 == idx.size:  # contiguous block: a view, one matrix-vector product
            block = slice(idx[0], idx[-1] + 1)
            S[block] = (X[block].reshape(-1, d) @ theta[j]).reshape(-1, n)
        else:
            S[idx] = (X[idx].reshape(-1, d) @ theta[j]).reshape(-1, n)
    return S


def _check_labels(name, labels, m, k):
    labels = np.asarray(labels)
    if labels.shape != (m,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of shape ({m},), got "
                         f"shape {labels.shape} and dtype {labels.dtype}")
    if m and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"{name} must take values in [0, {k - 1}], got values in "
                         f"[{labels.min()}, {labels.max()}]")
    return labels.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------------------------
# noise, responses and rows
# --------------------------------------------------------------------------------------------------


def _noise(gen, shape, df):
    """float64 standard noise: ``N(0, 1)`` (``df=None``) or Student t scaled to variance 1."""
    if df is None:
        return gen.standard_normal(shape)
    return gen.standard_t(df, size=shape) * math.sqrt((df - 2.0) / df)


def _check_response_args(loss, sigma, df):
    check_choice("loss", loss, tuple(CODES))
    if loss == "logistic":
        for name, value in (("sigma", sigma), ("df", df)):
            if value is not None:
                raise ValueError(f"{name} must be None for loss='logistic' (the labels are "
                                 f"Bernoulli, no additive noise), got {value!r}")
        return None, None
    if sigma is None:
        raise ValueError(f"sigma is required for loss={loss!r}: a finite number >= 0")
    sigma = check_float("sigma", sigma, low=0.0)
    if df is not None:
        df = check_float("df", df, low=2.0, low_open=True)
    return sigma, df


def draw_responses(signal, loss="squared", *, sigma=None, df=None, rng=None):
    """Responses for the noiseless signal ``z = <x, theta*>`` of each row, for a loss.

    ``"logistic"``: ``y = 1.0`` where ``u < sigmoid(z)`` with ``u = gen.random(z.shape)``, else
    ``0.0`` (``y ~ Bernoulli(sigmoid(z))``). ``"squared"`` and ``"huber"``: ``y = z + sigma *
    eps`` with ``eps = gen.standard_normal(z.shape)`` (``df=None``) or the unit-variance Student t
    ``gen.standard_t(df, size=z.shape) * sqrt((df - 2) / df)`` (as :func:`make_student_t_mixture`).

    Parameters
    ----------
    signal : ndarray of float64
        ``z``, any shape.
    loss : {"squared", "logistic", "huber"}
    sigma : float, optional
        Noise level ``>= 0``: required for ``"squared"``, ``"huber"``; ``None`` for ``"logistic"``.
    df : float, optional
        Student t degrees of freedom, finite and ``> 2``; ``None``: Gaussian noise (or logistic).
    rng : None, int, SeedSequence or Generator
        ``as_generator(rng)``: pass the caller's generator to continue its stream.

    Returns
    -------
    ndarray of float64, the shape of ``signal``

    Examples
    --------
    >>> import numpy as np
    >>> from mixlinreg.data import draw_responses
    >>> draw_responses(np.zeros(4), "logistic", rng=0).tolist()
    [0.0, 1.0, 1.0, 1.0]
    """
    sigma, df = _check_response_args(loss, sigma, df)
    signal = np.asarray(signal, dtype=np.float64)
    gen = as_generator(rng)
    if loss == "logistic":
        return (gen.random(signal.shape) < expit(signal)).astype(np.float64)
    return signal + sigma * _noise(gen, signal.shape, df)


def draw_rows(labels, theta_star, n, *, loss="squared", sigma=None, df=None, rng=None,
              dtype=np.float64, summation="machine"):
    """Rows of every machine for given true parameters: ``x ~ N(0, I_d)``, ``y`` for a loss.

    Draw order, all from ``as_generator(rng)``: ``X`` (m x n x d standard normal, made in float64
    and rounded to ``dtype``), then the noise or uniforms of :func:`draw_responses` (m x n).
    Machine ``i`` is in cluster ``labels[i]``. Used by the studies of :mod:`mixlinreg.theory` and
    by :func:`make_logistic_mixture` once it has drawn its parameters.

    Parameters
    ----------
    labels : int array of shape (m,)
        Cluster of every machine, values in ``[0, k)``, ``m >= 1``.
    theta_star : array-like of shape (k, d)
        Finite true parameters.
    n : int
        Rows per machine, ``>= 1``.
    loss, sigma, df
        As in :func:`draw_responses`.
    rng : None, int, SeedSequence or Generator
    dtype : numpy.float32 or numpy.float64
        Of ``X`` and ``y``; the responses are drawn in float64 and rounded.
    summation : {"machine", "cluster"}
        ``<x, theta*>`` as one ``einsum`` over the machines, or one matrix-vector product per
        cluster (:func:`make_logistic_mixture`, :func:`mixlinreg.theory.constants.sample_cluster`):
        equal up to rounding, both kept because committed results depend on their last bits.

    Returns
    -------
    X : ndarray of shape (m, n, d)
    y : ndarray of shape (m, n)

    Examples
    --------
    >>> import numpy as np
    >>> from mixlinreg.data import draw_rows
    >>> X, y = draw_rows(np.array([0, 0, 1]), [[1.0, 0.0], [0.0, 1.0]], 4, sigma=0.1, rng=0)
    >>> X.shape, y.shape
    ((3, 4, 2), (3, 4))

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning (long version),
    Sections 5.1 (linear model) and 5.2 (strongly convex losses).
    """
    theta = check_array("theta_star", theta_star, ndim=2, dtype=np.float64)
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size < 1:
        raise ValueError(f"labels must be a 1-d integer array of length m >= 1, got shape "
                         f"{labels.shape}")
    labels = _check_labels("labels", labels, labels.size, theta.shape[0])
    n = check_int("n", n, low=1)
    sigma, df = _check_response_args(loss, sigma, df)
    dtype = check_dtype("dtype", dtype)
    check_choice("summation", summation, ("machine", "cluster"))
    gen = as_generator(rng)
    X = _normal(gen, (labels.size, n, theta.shape[1]), dtype)
    z = _signal(X, labels, theta, summation).astype(np.float64)
    y = draw_responses(z, loss, sigma=sigma, df=df, rng=gen).astype(dtype, copy=False)
    return X, y
