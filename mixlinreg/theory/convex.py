"""Strongly convex losses (Section 5.2): the shared pieces of studies T2 and C2.

The studies themselves are records, :mod:`mixlinreg.theory.studies.t2` and
:mod:`mixlinreg.theory.studies.c2`; their configs are ``mixlinreg/configs/studies/T2.toml`` and
``C2.toml``.

Two losses, each with a fixed pair of generating parameters ``theta*_1 = R e_1``,
``theta*_2 = R e_2`` in ``d = 5`` dimensions and ``x ~ N(0, I_d)``:

* ``logistic``: ``y ~ Bernoulli(sigmoid(<x, theta*_j>))`` (the convention of
  :func:`mixlinreg.data.make_logistic_mixture`), kernel loss ``"logistic"`` with a ridge ``l2``;
* ``huber``: ``y = <x, theta*_j> + sigma eps`` with unit-variance Student t noise (``df = 5``, the
  convention of :func:`mixlinreg.data.make_student_t_mixture`), kernel loss ``"huber"`` with a
  ridge ``l2``.

The data are drawn here (not through ``make_*``) so that ``theta*`` and hence ``Delta`` are fixed
across seeds. With ``l2 > 0`` the population minimizers ``theta_pop_j`` differ from ``theta*_j``;
every distance is measured to ``theta_pop_j`` (:mod:`mixlinreg.theory.constants`) and ``Delta`` is
their smallest distance. ``lambda`` and ``L`` are the extreme Hessian eigenvalues of the population
losses on the ball of radius ``r`` around the ``theta_pop_j``, with ``r`` the largest radius (found
by bisection) such that ``r <= (1/2 - alpha0) sqrt(lambda(r) / L(r)) Delta``: an initialization at
distance ``r`` then satisfies Theorem 2's condition with the constants of the region it starts in.

**T2** (Theorem 2): resampled IFCA (``resample=True``), step ``1/L`` (the kernel divides the summed
gradients by ``m``, as Algorithm 2 does), initialized at distance ``r`` from every
``theta_pop_j`` in random directions. The per-step contraction ``e_{t+1} / e_t`` of each cluster's
error is measured in the transient (steps whose next error is still above ``5x`` the run's floor,
so the additive ``eps0`` is at most a fifth of it) and compared with ``1 - p lambda / (8 L)``:
"holds" if the whole bootstrap interval is below it, "not supported" if the whole interval is
above.

**C2** (Corollary 2): the final error ``max_j ||theta_j^(T) - theta_pop_j||`` against ``n'`` (fixed
``m``) and ``m`` (fixed ``n'``), several seeds per level, with the known-cluster oracle (the same
resampled gradient iterations run per true cluster, ``k = 1`` on that cluster's machines, step
``p_j / L`` so that its update equals IFCA's with correct labels). The bound
``a / sqrt(m n') + b / n'`` (times ``log(m n')`` factors) decays at least like ``n'^{-1/2}`` and has
an ``m``-slope between ``-1/2`` and ``0``; the allowance for the log factors is their largest local
slope over the design, ``1 / log(min m n')``.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (arXiv long
version), Section 5.2: Assumptions 3-6, Theorem 2 (proof in Appendix C) and Corollary 2
(Appendix D).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from .._validation import check_float, check_int
from ..data import draw_rows
from ..geometry import min_separation
from ..stats import verdict_at_most
from . import bounds
from .constants import LOSSES, loss_constants, population_minimizers

__all__ = ["LOSS_SETUPS", "bisect_radius", "draw_cluster_data", "init_at_distance", "transient_mask",
           "theorem2_radius", "constants_piece", "t2_verdict", "nnls_rate", "log_allowance", "c2_verdicts"]

D = 5
K = 2
ALPHA0 = 0.1
FLOOR_MULT = 5.0

#: Loss settings of both studies (``R`` is the norm of every generating parameter).
LOSS_SETUPS = {
    "logistic": {"R": 3.0, "l2": 0.05, "sigma": None, "df": None, "huber_delta": 1.0},
    "huber": {"R": 1.0, "l2": 0.1, "sigma": 1.0, "df": 5.0, "huber_delta": 1.0},
}


# ------------------------------------------------------------------------------ data and inits


def theta_star_of(R, k=K, d=D):
    """Generating parameters ``R e_1, ..., R e_k`` (rows), shape (k, d)."""
    ts = np.zeros((k, d))
    ts[np.arange(k), np.arange(k)] = R
    return ts


def draw_cluster_data(loss, theta_star, sizes, n, rng, *, sigma=None, df=None):
    """Data of ``m = sum(sizes)`` machines with ``n`` rows each, contiguous clusters.

    :func:`mixlinreg.data.draw_rows` with labels from ``sizes``.

    Parameters
    ----------
    loss : {"logistic", "huber", "squared"}
        ``"logistic"``: ``y ~ Bernoulli(sigmoid(x.theta*))`` drawn as ``u < sigmoid`` (as
        :func:`mixlinreg.data.make_logistic_mixture`); otherwise ``y = x.theta* + sigma eps``,
        ``eps`` standard normal (``df=None``) or ``t_df sqrt((df - 2)/df)`` (as
        :func:`mixlinreg.data.make_student_t_mixture`).
    theta_star : array (k, d)
    sizes : sequence of k ints >= 1
    n : int >= 1
    rng : numpy.random.Generator

    Returns
    -------
    X : (m, n, d), y : (m, n), labels : (m,) int
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    ts = np.asarray(theta_star, dtype=float)
    sizes = [check_int("sizes[j]", s, low=1) for s in sizes]
    if len(sizes) != ts.shape[0]:
        raise ValueError(f"sizes must have k = {ts.shape[0]} entries, got {len(sizes)}")
    labels = np.repeat(np.arange(ts.shape[0]), sizes)
    X, y = draw_rows(labels, ts, n, loss=loss, sigma=sigma, df=df, rng=rng)
    return X, y, labels


def init_at_distance(centers, radius, n_runs, rng):
    """``n_runs`` initializations, model j at distance exactly ``radius`` from ``centers[j]`` in a
    uniformly random direction; shape (n_runs, k, d)."""
    c = np.asarray(centers, dtype=float)
    w = rng.standard_normal((n_runs,) + c.shape)
    w /= np.linalg.norm(w, axis=2, keepdims=True)
    return c[None] + radius * w


def transient_mask(errors, mult=FLOOR_MULT, tail=5):
    """Steps ``t -> t + 1`` of the transient: every error up to ``e_{t+1}`` is above ``mult`` times
    the run's floor (the mean of its last ``tail`` errors).

    Parameters
    ----------
    errors : array (runs, T + 1), > 0
    mult : float > 1
    tail : int >= 1

    Returns
    -------
    mask : bool array (runs, T)
    floor : array (runs,)

    Examples
    --------
    >>> import numpy as np
    >>> e = np.array([[8.0, 4.0, 2.0, 1.0, 1.0, 1.0]])
    >>> transient_mask(e, mult=1.5, tail=3)[0].tolist()
    [[True, True, False, False, False]]
    """
    e = np.asarray(errors, dtype=float)
    if e.ndim != 2 or e.shape[1] < 2:
        raise ValueError(f"errors must have shape (runs, T + 1) with T >= 1, got {e.shape}")
    mult = check_float("mult", mult, low=1.0, low_open=True)
    tail = check_int("tail", tail, low=1, high=e.shape[1])
    floor = e[:, -tail:].mean(axis=1)
    above = e[:, 1:] > mult * floor[:, None]
    return np.cumprod(above, axis=1).astype(bool), floor


# ------------------------------------------------------------------------------ constants


def bisect_radius(at, valid, other, n_bisect, *, phi_above):
    """Bisection on a ball's radius ``r`` for a decreasing ``phi(r)``: the one loop of
    :func:`theorem2_radius` and of the A6 and L3 studies' balls.

    ``at(r) -> (constants, phi(r))``; ``valid = (r, constants, phi)`` is the end that satisfies the
    condition (``phi(r) >= r`` with ``phi_above``, else ``phi(r) <= r``) and ``other`` the other
    end's radius. Each of ``n_bisect`` steps evaluates the midpoint ``(r + other) / 2`` and moves
    whichever end it may; returns the valid end ``(r, constants, phi)``.
    """
    r, c, phi = valid
    for _ in range(n_bisect):
        mid = 0.5 * (r + other)
        c_mid, phi_mid = at(mid)
        if (phi_mid >= mid) if phi_above else (phi_mid <= mid):
            r, c, phi = mid, c_mid, phi_mid
        else:
            other = mid
    return r, c, phi


def theorem2_radius(loss, theta_star, *, alpha0=ALPHA0, n_bisect=4, sigma=None, df=None, l2=0.0,
                    huber_delta=1.0, n_samples=100_000, n_line=1_000_000, n_points=16, seed=0):
    """Largest radius ``r`` (bisection) with ``r <= (1/2 - alpha0) sqrt(lambda(r)/L(r)) Delta``.

    ``lambda(r), L(r)`` are the constants of :func:`mixlinreg.theory.constants.loss_constants` on
    the balls of radius ``r`` around the population minimizers, every call on the same Monte Carlo
    sample (same ``seed``). Since ``lambda/L`` shrinks as the ball grows, ``phi(r) = (1/2 - alpha0)
    sqrt(lambda(r)/L(r)) Delta`` decreases: ``phi((1/2 - alpha0) Delta)`` is a valid radius and the
    bisection keeps a valid lower end.

    Returns
    -------
    constants : LossConstants
        At the returned radius (``constants.radius``).
    phi : float
        ``phi(radius) >= radius``.
    alpha_eff : float
        ``1/2 - radius / (sqrt(lambda/L) Delta) >= alpha0``: the closeness parameter of an
        initialization at that radius.

    References
    ----------
    Ghosh et al., Assumption 6 and Theorem 2 (Section 5.2).
    """
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True, high_open=True)
    n_bisect = check_int("n_bisect", n_bisect, low=0)
    kw = dict(sigma=sigma, df=df, l2=l2, huber_delta=huber_delta)
    centers, _ = population_minimizers(loss, theta_star, method="monte_carlo", n_line=n_line,
                                       n_samples=n_samples, rng=seed, **kw)

    def at(r):
        c = loss_constants(loss, theta_star, radius=r, centers=centers, n_samples=n_samples,
                           n_line=n_line, n_points=n_points, rng=seed + 1, **kw)
        return c, (0.5 - alpha0) * math.sqrt(c.lam / c.L) * c.delta

    delta = min_separation(centers)
    if not np.isfinite(delta):
        raise ValueError("theta_star must have at least 2 clusters to define Delta")
    _, lo = at((0.5 - alpha0) * delta)
    c_lo, phi_lo = at(lo)
    for _ in range(20):  # Monte Carlo noise could break monotonicity: shrink until valid
        if phi_lo >= lo:
            break
        lo = phi_lo
        c_lo, phi_lo = at(lo)
    lo, c_lo, phi_lo = bisect_radius(at, (lo, c_lo, phi_lo), phi_lo, n_bisect, phi_above=True)
    alpha_eff = 0.5 - lo / (math.sqrt(c_lo.lam / c_lo.L) * c_lo.delta)
    return c_lo, phi_lo, alpha_eff


# ------------------------------------------------------------------------------ verdict rules


def constants_piece(loss, p):
    """The shared piece of studies T2 and C2 for ``loss``: ``compute(rng) -> DataFrame``.

    One row per cluster with the loss's constants on Theorem 2's ball
    (:func:`theorem2_radius` at the setting :data:`LOSS_SETUPS` ``[loss]``, Monte Carlo sizes and
    ``alpha0`` from the study's params ``p``), the ball's radius and the population minimizers
    (``center_0 ... center_{D-1}``); the seed of the Monte Carlo is drawn from ``rng``.
    """
    setup = LOSS_SETUPS[loss]

    def compute(rng):
        c, phi, alpha_eff = theorem2_radius(
            loss, theta_star_of(setup["R"]), alpha0=p["alpha0"], sigma=setup["sigma"],
            df=setup["df"], l2=setup["l2"], huber_delta=setup["huber_delta"],
            seed=int(rng.integers(2**31)), n_samples=p["n_samples"], n_line=p["n_line"],
            n_points=p["n_points"], n_bisect=p["n_bisect"])
        rows = []
        for j in range(K):
            row = {"loss": loss, "cluster": j, "lam": c.lam, "L": c.L, "eta2": c.eta2, "v2": c.v2,
                   "delta": c.delta, "radius": c.radius, "phi_radius": phi,
                   "alpha_eff": alpha_eff, "n_samples": c.n_samples, "n_line": c.n_line,
                   "n_points": c.n_points}
            row.update({f"center_{q}": float(c.centers[j, q]) for q in range(D)})
            rows.append(row)
        return pd.DataFrame(rows)

    return compute


def t2_verdict(fit, p, lam, L, margin=0.0):
    """Theorem 2's rule: is the measured contraction factor at most ``1 - p lambda / (8 L)``
    (plus ``margin``)? Study T2's ``decide`` (:mod:`mixlinreg.theory.studies.t2`) makes the same
    comparison, against the bound its measurement computed with the same ``theorem2_factor``.

    >>> from mixlinreg.stats import Fit
    >>> t2_verdict(Fit(0.6, 0.58, 0.62, 8), 0.5, 0.1, 0.25)
    'holds'
    >>> t2_verdict(Fit(0.995, 0.99, 0.999, 8), 0.5, 0.1, 0.25)
    'not supported'
    """
    return verdict_at_most(fit, float(bounds.theorem2_factor(p, lam, L)), margin)


def log_allowance(m, n_prime):
    """Largest local log-log slope of the ``log(m n')`` factors over a design: ``1/log(min m n')``.

    ``d log(log(m n')) / d log(n') = 1 / log(m n')``; Corollary 2's terms carry ``log(m n')``, so
    on the design they can make a log-log slope larger by at most this much.

    >>> round(log_allowance([100], [10]), 4)
    0.1448
    """
    mn = np.asarray(m, dtype=float) * np.asarray(n_prime, dtype=float)
    if np.any(mn <= 1):
        raise ValueError(f"m * n_prime must be > 1 everywhere, got min {mn.min()!r}")
    return float(1.0 / np.log(mn.min()))


def c2_verdicts(n_slope, m_slopes, allowance):
    """Corollary 2's falsifiable shape rules.

    * in ``n'`` (fixed ``m``) the bound decays at least like ``n'^{-1/2}``: "holds" if the slope's
      interval is below ``-1/2 + allowance``, "not supported" if entirely above;
    * in ``m`` (fixed ``n'``) the bound's slope is between ``-1/2`` and ``0``: same with ``0``.

    Parameters
    ----------
    n_slope : Fit
    m_slopes : list of Fit
    allowance : float >= 0
        Margin for the ``log(m n')`` factors (:func:`log_allowance`).

    Returns
    -------
    list of str
        One verdict per rule (``n'`` first).

    >>> from mixlinreg.stats import Fit
    >>> c2_verdicts(Fit(-0.6, -0.7, -0.5, 30), [Fit(-0.45, -0.6, -0.3, 30)], 0.1)
    ['holds', 'holds']
    >>> c2_verdicts(Fit(0.0, -0.05, 0.05, 30), [Fit(0.5, 0.4, 0.6, 30)], 0.1)
    ['not supported', 'not supported']
    """
    allowance = check_float("allowance", allowance, low=0.0)
    out = [verdict_at_most(n_slope, -0.5, allowance)]
    out += [verdict_at_most(f, 0.0, allowance) for f in m_slopes]
    return out


def nnls_rate(m, n_prime, err, weights=None):
    """Non-negative least squares fit of ``err ~ a / sqrt(m n') + b / n'``.

    Parameters
    ----------
    m, n_prime, err : arrays of the same length (cell means), ``err > 0``
    weights : array, optional
        Row weights; default ``1 / err`` (relative errors, so small errors count as much as large).

    Returns
    -------
    a, b : float (both >= 0)

    Examples
    --------
    >>> import numpy as np
    >>> m = np.array([10, 100, 100, 100.]); n = np.array([10, 10, 40, 160.])
    >>> a, b = nnls_rate(m, n, 2 / np.sqrt(m * n) + 0.5 / n)
    >>> round(a, 6), round(b, 6)
    (2.0, 0.5)
    """
    m = np.asarray(m, dtype=float)
    n_prime = np.asarray(n_prime, dtype=float)
    err = np.asarray(err, dtype=float)
    if not (m.shape == n_prime.shape == err.shape) or m.ndim != 1 or m.size < 2:
        raise ValueError(f"m, n_prime, err must be 1-D of the same length >= 2, got {m.shape}, "
                         f"{n_prime.shape}, {err.shape}")
    if np.any(err <= 0) or np.any(m <= 0) or np.any(n_prime <= 0):
        raise ValueError("m, n_prime and err must be > 0")
    w = 1.0 / err if weights is None else np.asarray(weights, dtype=float)
    A = np.column_stack([1.0 / np.sqrt(m * n_prime), 1.0 / n_prime]) * w[:, None]
    coef, _ = nnls(A, err * w)
    return float(coef[0]), float(coef[1])
