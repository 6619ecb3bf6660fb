"""The linear model of Section 5.1: its data, exact formulas and the rules of studies T1 and C1.

**T1** (Theorem 1, eq. (1); the study record :mod:`mixlinreg.theory.studies.t1`) reads the
one-step contraction with :func:`t1_verdict` and :func:`t1_allowance` below. **C1** (Corollary 1;
the study record :mod:`mixlinreg.theory.studies.c1`) reads the log-log exponents of the error
floor with :func:`exponent_verdict` and :func:`p_exponent_verdict`.

Both use the variant the theorems analyse: :func:`mixlinreg.ifca` with ``resample=True`` (fresh
rows every iteration, clusters and gradient on disjoint blocks), gradient averaging over all ``m``
machines, squared loss, float64, Gaussian features ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma
eps`` and centres built here with an exact separation ``Delta`` (:func:`simplex_centers`).

The exact facts the studies compare with (correct clusters, effective step ``g = gamma p_j``):
:func:`one_step_factor`, :func:`stationary_rms`, :func:`oracle_rms` and
:func:`ifca_oracle_ratio`; their derivations are in their docstrings and they are checked by Monte
Carlo in ``tests/test_theory_linear.py``.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (arXiv long
version): Section 5 (resampling), Section 5.1 (Assumptions 1-2, Theorem 1, Corollary 1 and the
minimax comparison after it), Appendix A (proof of Theorem 1, eq. (2)).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_float, check_int
from ..data import draw_rows
from ..geometry import simplex_centers  # noqa: F401 (re-exported: the studies' centres)
from ..stats import Fit, verdict_at_least, verdict_at_most, verdict_equal  # noqa: F401 (Fit: doctests)
from .study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED

__all__ = [
    "simplex_centers", "cluster_labels", "linear_data", "one_step_factor", "stationary_rms",
    "oracle_rms", "oracle_theta", "ifca_oracle_ratio", "t1_allowance", "t1_verdict",
    "exponent_verdict", "p_exponent_verdict",
]


# ------------------------------------------------------------------------------------------------
# data and exact formulas
# ------------------------------------------------------------------------------------------------


def cluster_labels(m, sizes):
    """Cluster of every machine: ``p_j m`` machines in cluster ``j`` (consecutive machines).

    Parameters
    ----------
    m : int
        Number of machines, ``>= 2``.
    sizes : sequence of float
        Fractions ``p_j`` in ``(0, 1)``, summing to 1, with every ``p_j m`` an integer.

    Returns
    -------
    ndarray of shape (m,), int64

    References
    ----------
    Ghosh et al., long version, Section 5.1 (``p_j = |S*_j| / m``).
    """
    m = check_int("m", m, low=2)
    p = np.asarray(sizes, dtype=float)
    if p.ndim != 1 or p.size < 2 or not np.all(np.isfinite(p)) or np.any(p <= 0):
        raise ValueError(f"sizes must be at least 2 fractions in (0, 1), got {sizes!r}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"sizes must sum to 1, got {sizes!r} (sum {p.sum()!r})")
    counts = np.rint(p * m).astype(np.int64)
    if np.any(np.abs(counts - p * m) > 1e-6):
        raise ValueError(f"sizes times m must be integers (m = {m}), got {sizes!r}")
    return np.repeat(np.arange(p.size, dtype=np.int64), counts)


def linear_data(labels, theta_star, n, sigma, rng=None):
    """Rows of the linear model: ``x ~ N(0, I_d)``, ``y = <x, theta*_{label}> + sigma N(0, 1)``.

    :func:`mixlinreg.data.draw_rows` with the squared loss's Gaussian noise.

    Parameters
    ----------
    labels : int array (m,)
        Cluster of every machine, values in ``[0, k)``.
    theta_star : array (k, d)
    n : int
        Rows per machine, ``>= 1``.
    sigma : float
        Noise level, ``>= 0``.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    X : ndarray (m, n, d)
    y : ndarray (m, n)

    References
    ----------
    Ghosh et al., long version, Section 5.1 (the model).
    """
    return draw_rows(labels, theta_star, n, sigma=sigma, rng=rng)


def _check_g(g):
    return check_float("g", g, low=0.0, low_open=True)


def _check_dN(d, N):
    d = check_int("d", d, low=1)
    N = check_float("N", N, low=0.0, low_open=True)
    return d, N


def one_step_factor(g, d, N):
    r"""RMS one-step factor ``sqrt(E||e+||^2) / ||e||`` of a correctly clustered step, no noise.

    With every machine of cluster ``j`` in its cluster, the ``N = p_j m n'`` gradient rows of the
    step pooled in ``X (N, d)``, ``S = X^T X / N`` and ``e = theta_j - theta*_j``, one step of the
    kernel (divisor ``m``, squared loss without 1/2) is

    .. math::

        e^+ = e - \frac{\gamma}{m}\sum_{i} \frac{2}{n'} X_i^\top (X_i e - \epsilon_i)
            = (I - 2 g S)\, e + 2 g\, X^\top\epsilon / N, \qquad g = \gamma p_j .

    ``X^T X`` is Wishart ``W_d(N, I)``, so ``E[S] = I`` and ``E[S^2] = (1 + (d+1)/N) I``, hence

    .. math::

        E\|(I - 2gS) e\|^2 = \left[(1 - 2g)^2 + 4 g^2 (d+1)/N\right] \|e\|^2 .

    At ``g = 1/4`` (Theorem 1's factor 1/2 at the population level) this is
    ``(1/2) sqrt(1 + (d+1)/N)``: slightly above 1/2, by a term the theorem's constants absorb under
    ``p m n' >~ d``. With unequal sizes and ``gamma = 1/(4p)`` a cluster of fraction ``p_j`` has
    ``g = p_j / (4p)`` and population factor ``|1 - p_j/(2p)|``, above 1/2 once ``p_j > 3p``.

    Parameters
    ----------
    g : float
        Effective step ``gamma p_j > 0``.
    d : int
    N : float
        Gradient rows of the cluster in one step, ``> 0``.

    Returns
    -------
    float

    References
    ----------
    Ghosh et al., long version, Theorem 1 and Appendix A, eq. (2).
    """
    g = _check_g(g)
    d, N = _check_dN(d, N)
    return math.sqrt((1.0 - 2.0 * g) ** 2 + 4.0 * g * g * (d + 1) / N)


def stationary_rms(g, sigma, d, N):
    r"""Stationary RMS error of the correctly clustered resampled iteration.

    From :func:`one_step_factor`'s recursion with the independent noise term
    ``2 g X^T eps / N`` (``E||.||^2 = 4 g^2 sigma^2 d / N``, uncorrelated with the rest because each
    step uses fresh rows), ``v_{t+1} = [(1-2g)^2 + 4g^2 (d+1)/N] v_t + 4 g^2 sigma^2 d / N`` for
    ``v_t = E||e_t||^2``; its fixed point is

    .. math::

        v_\infty = \frac{g \sigma^2 d}{N\,(1 - g - g (d+1)/N)},

    which at ``g = 1/4`` is ``sigma^2 d / (3N - d - 1)``: the floor scales as
    ``sigma sqrt(d / (p m n'))`` (``p^{-1/2}``, not the ``1/p`` of Corollary 1's first term).

    Parameters
    ----------
    g : float
        Effective step ``gamma p_j``, ``> 0``; the recursion must contract
        (``g (1 + (d+1)/N) < 1``), otherwise there is no stationary error and a ValueError is
        raised.
    sigma : float
        Noise level, ``>= 0``.
    d : int
    N : float
        Gradient rows of the cluster per step.

    Returns
    -------
    float
        ``sqrt(v_inf)``.

    References
    ----------
    Ghosh et al., long version, Corollary 1 (the error floor ``eps``).
    """
    g = _check_g(g)
    sigma = check_float("sigma", sigma, low=0.0)
    d, N = _check_dN(d, N)
    den = 1.0 - g - g * (d + 1) / N
    if den <= 0:
        raise ValueError(f"g must satisfy g (1 + (d+1)/N) < 1 for a stationary error, got "
                         f"g = {g!r}, d = {d}, N = {N!r}")
    return math.sqrt(g * sigma**2 * d / (N * den))


def oracle_rms(sigma, d, N):
    r"""RMS error of least squares on ``N`` Gaussian rows: ``sqrt(sigma^2 d / (N - d - 1))``.

    ``E||(X^T X)^{-1} X^T eps||^2 = sigma^2 E tr((X^T X)^{-1}) = sigma^2 d / (N - d - 1)`` (mean
    of the inverse Wishart); needs ``N > d + 1``.

    References
    ----------
    Ghosh et al., long version, Section 5.1 (known-cluster rate after Corollary 1).
    """
    sigma = check_float("sigma", sigma, low=0.0)
    d, N = _check_dN(d, N)
    if N <= d + 1:
        raise ValueError(f"N must be > d + 1 = {d + 1}, got {N!r}")
    return math.sqrt(sigma**2 * d / (N - d - 1))


def oracle_theta(X, y, labels, k):
    """Known-cluster least squares on all rows, by the normal equations.

    The same estimate as :func:`mixlinreg.baselines.oracle` with ``l2 = 0`` whenever every cluster
    has full column rank (``N_j > d`` Gaussian rows, almost surely), at a fraction of the cost of
    its SVD-based ``lstsq`` (checked against it in the tests).

    Parameters
    ----------
    X : array (m, n, d)
    y : array (m, n)
    labels : int array (m,), values in ``[0, k)``, every cluster used
    k : int

    Returns
    -------
    ndarray (k, d)

    References
    ----------
    Ghosh et al., long version, Section 5.1 (the known-cluster rate after Corollary 1).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    labels = np.asarray(labels)
    if X.ndim != 3 or y.shape != X.shape[:2] or labels.shape != (X.shape[0],):
        raise ValueError(f"X must be (m, n, d), y (m, n) and labels (m,), got {X.shape}, "
                         f"{y.shape}, {labels.shape}")
    k = check_int("k", k, low=1)
    d = X.shape[2]
    out = np.empty((k, d))
    for j in range(k):
        sel = labels == j
        if not sel.any():
            raise ValueError(f"labels must use every cluster 0..{k - 1}, cluster {j} is empty")
        if sel.sum() * X.shape[1] < d:
            raise ValueError(f"cluster {j} has {sel.sum() * X.shape[1]} rows, fewer than d = {d}: "
                             "use mixlinreg.baselines.oracle (minimum-norm) instead")
        Xj = X[sel].reshape(-1, d)
        out[j] = np.linalg.solve(Xj.T @ Xj, Xj.T @ y[sel].reshape(-1))
    return out


def ifca_oracle_ratio(T, d, N):
    """Predicted ratio of IFCA's floor (``g = 1/4``) to the oracle on all ``2 T n'`` rows.

    ``stationary_rms(1/4, s, d, N) / oracle_rms(s, d, 2 T N) = sqrt((2TN - d - 1) / (3N - d - 1))``
    (independent of ``sigma``): about ``sqrt(2T/3)``, the logarithmic factor of the paper's
    comparison (``n = 2 n' T``, ``T ~ log(Delta / 4 eps)``).

    References
    ----------
    Ghosh et al., long version, Section 5.1 (discussion after Corollary 1).
    """
    T = check_int("T", T, low=1)
    d, N = _check_dN(d, N)
    return stationary_rms(0.25, 1.0, d, N) / oracle_rms(1.0, d, 2 * T * N)


# ------------------------------------------------------------------------------------------------
# verdict rules and fits
# ------------------------------------------------------------------------------------------------


def t1_verdict(fit, allowance, claimed=0.5, *, margin):
    """Theorem 1's rule for one measured contraction factor.

    "holds" if the whole interval is at most ``claimed`` (1/2); "holds with a caveat" if it is
    above 1/2 but at most ``allowance + margin``, the allowance being 1/2 plus the exact
    finite-sample excess of a correctly clustered step (:func:`t1_allowance`, a term ``O(d/N)``
    that the theorem's constants absorb) and the margin the resolution of the comparison (study
    T1 reads it from its config); "not supported" if the whole interval is above
    ``max(allowance, claimed) + margin``; "inconclusive" otherwise.

    >>> t1_verdict(Fit(0.49, 0.48, 0.499, 10), allowance=0.51, margin=0.01)
    'holds'
    >>> t1_verdict(Fit(0.512, 0.507, 0.517, 10), allowance=0.51, margin=0.01)
    'holds with a caveat'
    >>> t1_verdict(Fit(0.98, 0.95, 1.01, 10), allowance=0.51, margin=0.01)
    'not supported'

    References
    ----------
    Ghosh et al., long version, Theorem 1, eq. (1).
    """
    claimed = check_float("claimed", claimed, low=0.0, low_open=True)
    allowance = check_float("allowance", allowance, low=0.0, low_open=True)
    margin = check_float("margin", margin, low=0.0)
    if verdict_at_most(fit, claimed) == HOLDS:
        return HOLDS
    v = verdict_at_most(fit, max(allowance, claimed), margin)
    return {HOLDS: CAVEAT, NOT_SUPPORTED: NOT_SUPPORTED, INCONCLUSIVE: INCONCLUSIVE}[v]


def t1_allowance(g, d, N, sigma=0.0, err=np.inf):
    r"""1/2 plus the finite-sample excess of one correctly clustered step (vectorized).

    .. math::

        \tfrac12 + \sqrt{(1-2g)^2 + 4g^2\left(\frac{d+1}{N} + \frac{\sigma^2 d}{N e^2}\right)}
        - |1 - 2g|,

    the RMS factor of :func:`one_step_factor` with the noise of the step at error ``e`` (see
    :func:`stationary_rms`) minus its population value ``|1 - 2g|``, added to the claimed 1/2. At
    ``g = 1/4`` it is the exact RMS factor ``(1/2) sqrt(1 + (d+1)/N + sigma^2 d/(N e^2))``; at
    other ``g`` it grants the same kind of excess (larger for larger ``g``) but never a population
    factor above 1/2.

    >>> round(float(t1_allowance(0.25, 20, 1000)), 6) == round(0.5 * (1 + 21 / 1000) ** 0.5, 6)
    True

    References
    ----------
    Ghosh et al., long version, Theorem 1 and Appendix A, eq. (2).
    """
    g = np.asarray(g, dtype=float)
    d = np.asarray(d, dtype=float)
    N = np.asarray(N, dtype=float)
    if np.any(~(g > 0)) or np.any(~(d >= 1)) or np.any(~(N > 0)):
        raise ValueError(f"t1_allowance needs g > 0, d >= 1 and N > 0, got g={g!r}, d={d!r}, "
                         f"N={N!r}")
    with np.errstate(divide="ignore"):
        noise = np.asarray(sigma, dtype=float) ** 2 * d / (N * np.asarray(err, dtype=float) ** 2)
    a = np.abs(1.0 - 2.0 * g)
    return 0.5 + np.sqrt(a**2 + 4.0 * g**2 * ((d + 1.0) / N + noise)) - a


def exponent_verdict(fit, predicted, *, margin):
    """A measured log-log exponent against the bound's: :func:`verdict_equal` with ``margin``.

    ``margin`` is the resolution of the comparison (study C1 reads it from its config).

    >>> exponent_verdict(Fit(0.52, 0.47, 0.56, 20), 0.5, margin=0.1)
    'holds'
    >>> exponent_verdict(Fit(0.52, 0.47, 0.56, 20), 1.0, margin=0.1)
    'not supported'
    """
    margin = check_float("margin", margin, low=0.0)
    return verdict_equal(fit, float(predicted), margin)


def p_exponent_verdict(fit, bound=-1.0, *, margin):
    """Corollary 1's ``1/p``: error ``~ p^s`` must grow no faster than the bound as ``p`` shrinks.

    "not supported" if ``s < bound - margin`` (whole interval), "inconclusive" if the interval
    straddles that edge; otherwise "holds" when ``s`` also equals the bound within the margin, and
    "holds with a caveat" when it is clearly better (the bound is loose in ``p``). ``margin`` is
    the resolution of the comparison (study C1 reads it from its config).

    >>> p_exponent_verdict(Fit(-1.0, -1.05, -0.95, 20), margin=0.1)
    'holds'
    >>> p_exponent_verdict(Fit(-0.5, -0.56, -0.44, 20), margin=0.1)
    'holds with a caveat'
    >>> p_exponent_verdict(Fit(-1.6, -1.7, -1.5, 20), margin=0.1)
    'not supported'

    References
    ----------
    Ghosh et al., long version, Corollary 1.
    """
    margin = check_float("margin", margin, low=0.0)
    v = verdict_at_least(fit, bound, margin)
    if v != HOLDS:
        return v
    return HOLDS if verdict_equal(fit, bound, margin) == HOLDS else CAVEAT
