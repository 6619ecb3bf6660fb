"""The constants of Section 5.2 (Assumptions 3-5) for the losses the IFCA kernel provides.

For a cluster with data distribution ``D_j`` and per-sample loss ``f(theta; z)``, the population
loss is ``F^j(theta) = E_{z ~ D_j} f(theta; z)``. Theorem 2 and Corollary 2 are stated with

* ``lambda`` and ``L``: strong convexity and smoothness of every ``F^j`` (Assumption 3), here the
  smallest and largest Hessian eigenvalue of ``F^j`` over a ball around its minimizer (the iterates
  of the theorem stay in such a ball; globally a logistic loss is only ``l2``-strongly convex);
* ``eta^2``: the largest variance ``Var f(theta; z)`` over that ball (Assumption 4);
* ``v^2``: the largest ``E ||grad f(theta; z) - grad F^j(theta)||^2`` over that ball (Assumption 5).

Conventions are the kernel's (see :func:`mixlinreg.ifca`): ``f = ell(<x, theta>, y) + (l2/2)
||theta||^2`` with ``ell`` = ``(z - y)^2`` (squared, no 1/2), ``log(1 + e^z) - y z`` (logistic,
``y`` in {0, 1}) or the Huber function of ``y - z`` with threshold ``huber_delta`` (``r^2/2``
inside, ``delta (|r| - delta/2)`` outside). Data: ``x ~ N(0, I_d)``; for squared and Huber losses
``y = <x, theta*_j> + sigma * eps`` with ``eps`` standard normal (``df=None``) or the unit-variance
Student t of :func:`mixlinreg.data.make_student_t_mixture` (``t_df * sqrt((df - 2) / df)``); for the
logistic loss ``y ~ Bernoulli(sigmoid(<x, theta*_j>))`` as in
:func:`mixlinreg.data.make_logistic_mixture`.

With ``l2 > 0`` the population minimizer ``theta_pop_j`` differs from the generating ``theta*_j``:
the constants are computed on balls around ``theta_pop_j``, and the separation ``Delta`` of
Section 5.2 is the smallest distance between the ``theta_pop_j``.

The squared loss with Gaussian noise has closed forms (:func:`loss_constants` with
``method="analytic"``): with ``e = theta - theta*``, ``F = ||e||^2 + sigma^2 + (l2/2)||theta||^2``,
Hessian ``(2 + l2) I`` so ``lambda = L = 2 + l2``; ``x.e - sigma eps ~ N(0, ||e||^2 + sigma^2)`` so
``Var f = 2 (||e||^2 + sigma^2)^2``; ``grad f - grad F = 2 (x x^T - I) e - 2 sigma eps x`` and
``E ||x||^2 (x.e)^2 = (d + 2) ||e||^2`` give ``E ||grad f - grad F||^2 = 4 ((d + 1) ||e||^2 +
d sigma^2)`` (the ridge term cancels). Everything else is Monte Carlo (``method="monte_carlo"``).

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (long
version), Section 5.2: Definitions 1-2, Assumptions 3-6, Theorem 2, Corollary 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from .. import losses as _losses
from .._validation import (as_generator, check_array, check_bool, check_choice, check_float,
                           check_int)
from ..data import draw_responses, draw_rows
from ..geometry import min_separation

__all__ = ["LossConstants", "loss_constants", "population_minimizers", "sample_cluster",
           "loss_parts", "squared_analytic", "LOSSES"]

#: The losses of a scalar prediction (the registry :data:`mixlinreg.losses.LOSSES`, whose
#: entries carry the constants' assumptions: strongly convex on a ball).
LOSSES = tuple(_losses.LOSSES)
METHODS = ("auto", "analytic", "monte_carlo")


@dataclass(frozen=True)
class LossConstants:
    """Constants of Assumptions 3-5 of one loss on balls around the population minimizers.

    Attributes
    ----------
    loss : str
        ``"squared"``, ``"logistic"`` or ``"huber"``.
    lam, L : float
        Smallest and largest Hessian eigenvalue of the population losses over the balls (all
        clusters).
    eta2 : float
        Largest ``Var f(theta; z)`` over the balls (Assumption 4's ``eta^2``).
    v2 : float
        Largest ``E ||grad f - grad F||^2`` over the balls (Assumption 5's ``v^2``).
    centers : ndarray (k, d)
        Population minimizers ``theta_pop_j`` (the balls' centers).
    theta_star : ndarray (k, d)
        Generating parameters.
    radius : float
        Radius of every ball.
    delta : float
        ``min_{j != j'} ||theta_pop_j - theta_pop_j'||`` (``inf`` for one cluster).
    l2, huber_delta, sigma, df
        The loss and noise settings (``sigma``/``df`` are ``nan`` where they do not apply).
    method : str
        ``"analytic"`` or ``"monte_carlo"``.
    n_samples : int
        Monte Carlo sample size per cluster for the Hessians and variances (0 if analytic).
    n_line : int
        Monte Carlo sample size per cluster of the minimizer's line search (0 if analytic or if
        the minimizer was found by the full-dimensional Newton method on ``n_samples`` points).
    n_points : int
        Points of every ball where the quantities were evaluated (center, axis and random boundary
        and interior points; 0 if analytic, where the suprema are exact).
    """

    loss: str
    lam: float
    L: float
    eta2: float
    v2: float
    centers: np.ndarray
    theta_star: np.ndarray
    radius: float
    delta: float
    l2: float
    huber_delta: float
    sigma: float
    df: float
    method: str
    n_samples: int
    n_line: int
    n_points: int
    per_cluster: list = field(default_factory=list)

    def as_dict(self) -> dict:
        """JSON-able summary (floats and lists)."""
        return {"loss": self.loss, "lam": float(self.lam), "L": float(self.L),
                "eta2": float(self.eta2), "v2": float(self.v2),
                "centers": np.asarray(self.centers).tolist(),
                "theta_star": np.asarray(self.theta_star).tolist(), "radius": float(self.radius),
                "delta": float(self.delta), "l2": float(self.l2),
                "huber_delta": float(self.huber_delta), "sigma": float(self.sigma),
                "df": float(self.df), "method": self.method, "n_samples": int(self.n_samples),
                "n_line": int(self.n_line), "n_points": int(self.n_points)}


# ----------------------------------------------------------------------------- per-sample losses


def loss_parts(loss, z, y, huber_delta=1.0):
    """Per-sample loss ``ell(z, y)`` and its first two derivatives in the prediction ``z``: the
    registry's array forms (:meth:`mixlinreg.losses.Loss.parts`), so the theory uses the kernel's
    own formulas.

    Parameters
    ----------
    loss : {"squared", "logistic", "huber"}
    z, y : arrays of the same shape
        Predictions ``<x, theta>`` and responses.
    huber_delta : float

    Returns
    -------
    ell, dell, ddell : ndarrays (float64)
        For the Huber loss ``ddell`` is the indicator ``|y - z| <= huber_delta`` (its a.e. second
        derivative, whose expectation is the population Hessian's weight).

    Examples
    --------
    >>> import numpy as np
    >>> [float(a[0]) for a in loss_parts("squared", np.array([1.0]), np.array([0.5]))]
    [0.25, 1.0, 2.0]
    """
    check_choice("loss", loss, LOSSES)
    return _losses.get(loss).parts(z, y, huber_delta)


def _derivs(loss, z, y, huber_delta):
    """``dell, ddell`` of :func:`loss_parts` without the loss itself (float64 arrays)."""
    code = _losses.get(loss).code
    return (_losses.derivative_array(z, y, code, huber_delta),
            _losses.second_array(z, y, code, huber_delta))


def sample_cluster(loss, theta_star_j, n, *, sigma=None, df=None, rng=None):
    """Draw ``n`` points ``(x, y)`` of one cluster in this module's data model.

    ``x ~ N(0, I_d)``; logistic: ``y ~ Bernoulli(sigmoid(x.theta*))``; squared and Huber:
    ``y = x.theta* + sigma eps`` with ``eps`` standard normal (``df=None``) or unit-variance Student
    t with ``df`` degrees of freedom (the convention of
    :func:`mixlinreg.data.make_student_t_mixture`): :func:`mixlinreg.data.draw_rows` for one
    machine.

    Returns
    -------
    X : ndarray (n, d)
    y : ndarray (n,)
    ymean : ndarray (n,) or None
        ``E[y | x]`` for the logistic loss (its loss is linear in ``y``, so population quantities
        that are expectations of the loss or its gradient can use it: less Monte Carlo noise).
    """
    th = np.asarray(theta_star_j, dtype=np.float64)
    X, y = draw_rows(np.zeros(1, dtype=np.int64), th[None], n, loss=loss, sigma=sigma, df=df,
                     rng=rng, summation="cluster")
    X, y = X[0], y[0]
    return X, y, (expit(X @ th) if loss == "logistic" else None)


# ----------------------------------------------------------------------------- validation


def _check_setup(loss, theta_star, sigma, df, l2, huber_delta):
    check_choice("loss", loss, LOSSES)
    ts = check_array("theta_star", theta_star, ndim=(1, 2), dtype=np.float64)
    ts = ts[None] if ts.ndim == 1 else ts
    if ts.shape[0] < 1 or ts.shape[1] < 1:
        raise ValueError(f"theta_star must have shape (k, d) with k, d >= 1, got {ts.shape}")
    if loss == "logistic":
        if sigma is not None:
            raise ValueError("sigma must be None for loss='logistic' (no additive noise), "
                             f"got {sigma!r}")
        if df is not None:
            raise ValueError(f"df must be None for loss='logistic', got {df!r}")
    else:
        if sigma is None:
            raise ValueError(f"sigma is required for loss={loss!r}: a finite number >= 0")
        sigma = check_float("sigma", sigma, low=0.0)
        if df is not None:
            df = check_float("df", df, low=2.0, low_open=True)
    l2 = check_float("l2", l2, low=0.0)
    huber_delta = check_float("huber_delta", huber_delta, low=0.0, low_open=True)
    return ts, sigma, df, l2, huber_delta


# ----------------------------------------------------------------------------- minimizers


def _line_minimizer(loss, R, n_line, gen, sigma, df, l2, huber_delta, chunk=1 << 20):
    """Minimizer ``c`` of ``phi(c) = E f(c u; z)`` on the line through ``theta* = R u``.

    Only ``g = <x, u> ~ N(0, 1)`` matters on that line; the sample-average ``phi'`` is monotone
    (each ``ell(c g, y)`` is convex in ``c``), so a safeguarded Newton method on a bracket finds its
    root.
    """
    g = gen.standard_normal(n_line)
    if loss == "logistic":
        y = expit(R * g)  # E[y | x]: the loss is linear in y
    else:
        y = draw_responses(R * g, loss, sigma=sigma, df=df, rng=gen)

    def dphi(c):
        s1 = s2 = 0.0
        for lo in range(0, n_line, chunk):
            gg = g[lo:lo + chunk]
            d1, d2 = _derivs(loss, c * gg, y[lo:lo + chunk], huber_delta)
            s1 += float(d1 @ gg)
            s2 += float(d2 @ (gg * gg))
        return s1 / n_line + l2 * c, s2 / n_line + l2

    a, b = -(abs(R) + 1.0), 2.0 * (abs(R) + 1.0)
    fa, fb = dphi(a)[0], dphi(b)[0]
    while fa > 0:
        a *= 2.0
        fa = dphi(a)[0]
    while fb < 0:
        b *= 2.0
        fb = dphi(b)[0]
    c = min(max(R, a), b)
    for _ in range(100):
        f1, f2 = dphi(c)
        if f1 == 0:
            break
        if f1 < 0:
            a = c
        else:
            b = c
        step = c - f1 / f2 if f2 > 0 else 0.5 * (a + b)
        new = step if a < step < b else 0.5 * (a + b)
        if abs(new - c) <= 1e-13 * (1.0 + abs(c)) or b - a <= 1e-13 * (1.0 + abs(c)):
            c = new
            break
        c = new
    return c


def _newton_minimizer(loss, X, y, start, l2, huber_delta, max_iter=100):
    """Damped Newton method on the sample-average loss (full dimension)."""
    n = X.shape[0]
    th = np.array(start, dtype=np.float64)

    def obj(t):
        ell, d1, d2 = loss_parts(loss, X @ t, y, huber_delta)
        return float(ell.mean()) + 0.5 * l2 * float(t @ t), d1, d2

    f, d1, d2 = obj(th)
    for _ in range(max_iter):
        grad = X.T @ d1 / n + l2 * th
        H = (X * d2[:, None]).T @ X / n + l2 * np.eye(th.size)
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            step = grad
        s = 1.0
        while True:
            cand = th - s * step
            fc, c1, c2 = obj(cand)
            if fc <= f - 1e-4 * s * float(grad @ step) or s < 1e-10:
                break
            s *= 0.5
        done = np.linalg.norm(cand - th) <= 1e-12 * (1.0 + np.linalg.norm(th))
        th, f, d1, d2 = cand, fc, c1, c2
        if done:
            break
    return th


def population_minimizers(loss, theta_star, *, sigma=None, df=None, l2=0.0, huber_delta=1.0,
                          method="auto", symmetric=True, n_line=2_000_000, n_samples=200_000,
                          rng=None):
    """Population minimizers ``theta_pop_j = argmin F^j`` of every cluster.

    Parameters
    ----------
    loss : {"squared", "logistic", "huber"}
    theta_star : array (k, d)
        Generating parameters.
    sigma, df : float or None
        Noise of the squared and Huber losses (``df=None``: Gaussian); must be None for logistic.
    l2 : float, default 0
    huber_delta : float, default 1
    method : {"auto", "analytic", "monte_carlo"}
        ``"analytic"`` only for the squared loss with Gaussian noise: ``2 theta* / (2 + l2)``.
        ``"auto"`` picks it when it applies.
    symmetric : bool, default True
        Monte Carlo route. ``x ~ N(0, I)`` and noise independent of ``x`` make ``F^j`` invariant
        under every rotation fixing ``theta*_j``; its minimizer is unique (strong convexity), hence
        on the line through ``theta*_j``: a one-dimensional root search on ``n_line`` draws (much
        smaller Monte Carlo error than ``n_samples`` points in ``d`` dimensions). ``False``: damped
        Newton method on ``n_samples`` full-dimensional draws.
    n_line, n_samples : int
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    centers : ndarray (k, d)
    method : str
        ``"analytic"`` or ``"monte_carlo"``.
    """
    symmetric = check_bool("symmetric", symmetric)
    ts, sigma, df, l2, huber_delta = _check_setup(loss, theta_star, sigma, df, l2, huber_delta)
    method = check_choice("method", method, METHODS)
    analytic_ok = loss == "squared" and df is None
    if method == "analytic" and not analytic_ok:
        raise ValueError("method='analytic' needs loss='squared' with Gaussian noise (df=None), "
                         f"got loss={loss!r}, df={df!r}")
    if method == "analytic" or (method == "auto" and analytic_ok):
        return 2.0 * ts / (2.0 + l2), "analytic"
    n_line = check_int("n_line", n_line, low=1000)
    n_samples = check_int("n_samples", n_samples, low=1000)
    gen = as_generator(rng)
    out = np.zeros_like(ts)
    for j, th in enumerate(ts):
        R = float(np.linalg.norm(th))
        if symmetric:
            if R == 0.0:
                continue  # symmetric noise and theta* = 0: the minimizer is 0
            out[j] = _line_minimizer(loss, R, n_line, gen, sigma, df, l2, huber_delta) * th / R
        else:
            X, y, ym = sample_cluster(loss, th, n_samples, sigma=sigma, df=df, rng=gen)
            out[j] = _newton_minimizer(loss, X, ym if ym is not None else y, th, l2, huber_delta)
    return out, "monte_carlo"


# ----------------------------------------------------------------------------- ball points


def _ball_points(center, anchor, radius, n_points, gen):
    """``center``, then ``+-radius`` along ``anchor - center`` (or theta*'s direction) and one
    orthogonal direction, then alternately random boundary and random interior points."""
    d = center.size
    u = anchor - center
    if np.linalg.norm(u) == 0:
        u = center.copy()
    if np.linalg.norm(u) == 0:
        u = np.eye(d)[0]
    u = u / np.linalg.norm(u)
    pts = [center]
    axes = [u]
    if d > 1:
        w = gen.standard_normal(d)
        w -= (w @ u) * u
        axes.append(w / np.linalg.norm(w))
    for a in axes:
        pts += [center + radius * a, center - radius * a]
    i = 0
    while len(pts) < n_points:
        w = gen.standard_normal(d)
        w /= np.linalg.norm(w)
        scale = radius if i % 2 == 0 else radius * gen.random() ** (1.0 / d)
        pts.append(center + scale * w)
        i += 1
    return np.array(pts[:max(n_points, 1)])


def _eval_point(loss, X, y, theta, l2, huber_delta):
    """Monte Carlo Hessian eigenvalues, Var f and E||grad f - grad F||^2 at ``theta``."""
    n = X.shape[0]
    z = X @ theta
    ell, d1, d2 = loss_parts(loss, z, y, huber_delta)  # (the logistic d2 does not involve y)
    H = (X * d2[:, None]).T @ X / n + l2 * np.eye(theta.size)
    ev = np.linalg.eigvalsh(H)
    G = X * d1[:, None]  # per-sample gradients without the ridge term (it cancels in the variance)
    gbar = G.mean(axis=0)
    v2 = float(np.mean(np.einsum("nd,nd->n", G, G)) - gbar @ gbar) * n / (n - 1)
    return float(ev[0]), float(ev[-1]), float(np.var(ell, ddof=1)), v2


def squared_analytic(theta_star, *, sigma, radius, l2=0.0):
    """Closed-form constants of the squared loss with Gaussian noise and ``x ~ N(0, I_d)``.

    ``lambda = L = 2 + l2``; with ``e_max = max_j ||theta_pop_j - theta*_j|| + radius`` (the largest
    ``||theta - theta*_j||`` on the balls), ``eta^2 = 2 (e_max^2 + sigma^2)^2`` and
    ``v^2 = 4 ((d + 1) e_max^2 + d sigma^2)``.

    Returns
    -------
    dict with ``lam, L, eta2, v2, centers, e_max``.

    Examples
    --------
    >>> import numpy as np
    >>> c = squared_analytic(np.zeros((1, 3)), sigma=1.0, radius=1.0)
    >>> c["lam"], c["eta2"], c["v2"]
    (2.0, 8.0, 28.0)
    """
    ts, sigma, _, l2, _ = _check_setup("squared", theta_star, sigma, None, l2, 1.0)
    radius = check_float("radius", radius, low=0.0)
    d = ts.shape[1]
    centers = 2.0 * ts / (2.0 + l2)
    e_max = float(np.max(np.linalg.norm(centers - ts, axis=1))) + radius
    return {"lam": 2.0 + l2, "L": 2.0 + l2, "eta2": 2.0 * (e_max**2 + sigma**2) ** 2,
            "v2": 4.0 * ((d + 1) * e_max**2 + d * sigma**2), "centers": centers, "e_max": e_max}


def loss_constants(loss, theta_star, *, radius, sigma=None, df=None, l2=0.0, huber_delta=1.0,
                   method="auto", centers=None, symmetric=True, n_samples=200_000,
                   n_line=2_000_000, n_points=24, rng=None) -> LossConstants:
    """``lambda``, ``L``, ``eta^2`` and ``v^2`` of a loss on balls around the population minimizers.

    Parameters
    ----------
    loss : {"squared", "logistic", "huber"}
    theta_star : array (k, d)
        Generating parameters of the k clusters.
    radius : float
        Radius of the ball around every population minimizer, ``>= 0``.
    sigma : float or None
        Noise scale (squared and Huber losses; None for logistic).
    df : float or None
        Student t degrees of freedom of the noise (``> 2``); None: Gaussian.
    l2 : float, default 0
        Ridge coefficient (penalty ``(l2/2) ||theta||^2``).
    huber_delta : float, default 1
    method : {"auto", "analytic", "monte_carlo"}
        ``"auto"``: analytic for the squared loss with Gaussian noise, Monte Carlo otherwise.
    centers : array (k, d), optional
        Population minimizers computed before (by :func:`population_minimizers` with the same
        settings); default: compute them.
    symmetric : bool, default True
        See :func:`population_minimizers`.
    n_samples : int, default 200000
        Monte Carlo points per cluster for Hessians and variances. The extreme eigenvalues of a
        Monte Carlo Hessian are biased outward by about ``sqrt(d / n_samples)`` relative.
    n_line : int, default 2000000
        Draws of the minimizer's line search.
    n_points : int, default 24
        Points per ball (center, ``+-radius`` along two axes, then random boundary and interior
        points); the suprema and infima are taken over them.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    LossConstants

    Raises
    ------
    ValueError
        Bad loss, shapes or ranges; ``method="analytic"`` where no closed form applies.

    Examples
    --------
    >>> import numpy as np
    >>> c = loss_constants("squared", np.eye(2), radius=0.5, sigma=1.0, l2=0.0)
    >>> c.method, c.lam, c.L
    ('analytic', 2.0, 2.0)

    References
    ----------
    Ghosh et al., Section 5.2: Assumptions 3 (lambda, L), 4 (eta^2), 5 (v^2).
    """
    symmetric = check_bool("symmetric", symmetric)
    ts, sigma, df, l2, huber_delta = _check_setup(loss, theta_star, sigma, df, l2, huber_delta)
    radius = check_float("radius", radius, low=0.0)
    method = check_choice("method", method, METHODS)
    analytic_ok = loss == "squared" and df is None
    if method == "analytic" and not analytic_ok:
        raise ValueError("method='analytic' needs loss='squared' with Gaussian noise (df=None), "
                         f"got loss={loss!r}, df={df!r}")
    nan = float("nan")
    common = dict(loss=loss, theta_star=ts, radius=radius, l2=l2, huber_delta=huber_delta,
                  sigma=nan if sigma is None else sigma, df=nan if df is None else df)
    if method == "analytic" or (method == "auto" and analytic_ok):
        a = squared_analytic(ts, sigma=sigma, radius=radius, l2=l2)
        return LossConstants(lam=a["lam"], L=a["L"], eta2=a["eta2"], v2=a["v2"],
                             centers=a["centers"], delta=min_separation(a["centers"]),
                             method="analytic", n_samples=0, n_line=0, n_points=0, **common)
    n_samples = check_int("n_samples", n_samples, low=1000)
    n_line = check_int("n_line", n_line, low=1000)
    n_points = check_int("n_points", n_points, low=1)
    gen = as_generator(rng)
    if centers is None:
        centers, _ = population_minimizers(loss, ts, sigma=sigma, df=df, l2=l2,
                                           huber_delta=huber_delta, method="monte_carlo",
                                           symmetric=symmetric, n_line=n_line,
                                           n_samples=n_samples, rng=gen)
    else:
        centers = check_array("centers", centers, shape=ts.shape, dtype=np.float64)
    per = []
    for j, th in enumerate(ts):
        X, y, _ = sample_cluster(loss, th, n_samples, sigma=sigma, df=df, rng=gen)
        pts = _ball_points(centers[j], th, radius, n_points, gen)
        vals = np.array([_eval_point(loss, X, y, p, l2, huber_delta) for p in pts])
        per.append({"cluster": j, "lam": float(vals[:, 0].min()), "L": float(vals[:, 1].max()),
                    "eta2": float(vals[:, 2].max()), "v2": float(vals[:, 3].max())})
    return LossConstants(lam=min(p["lam"] for p in per), L=max(p["L"] for p in per),
                         eta2=max(p["eta2"] for p in per), v2=max(p["v2"] for p in per),
                         centers=np.array(centers, dtype=np.float64),
                         delta=min_separation(centers),
                         method="monte_carlo", n_samples=n_samples,
                         n_line=n_line if symmetric else 0,
                         n_points=n_points, per_cluster=per, **common)
