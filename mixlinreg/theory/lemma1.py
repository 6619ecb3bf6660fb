"""Lemma 1's misclassification probability, computed exactly (study L1's mathematics).

Lemma 1 (Appendix A of the long version, used in Theorem 1) bounds the probability that a machine
of cluster ``j`` is put in cluster ``j'`` by ``c1 exp(-c2 n' (alpha rho / (rho + 1))^2)`` when every
model is within ``(1/2 - alpha) Delta`` of its truth. For the squared loss with Gaussian features
and noise this probability has a closed form (an F distribution function), and its exact
large-deviation rate per sample (the Chernoff exponent ``E``) has one too. Study L1
(:mod:`mixlinreg.theory.studies.l1`, config ``mixlinreg/configs/studies/L1.toml``) uses them:

1. it compares the exact probability with Monte Carlo machines for several placements of the
   models,
2. it finds the placement that minimizes ``E`` numerically on a grid of ``(alpha, rho)`` and
   compares ``E_worst`` with the paper's form ``(alpha rho / (rho + 1))^2``: the form is a valid
   shape iff the ratio stays bounded away from 0 (then ``c2`` can be its infimum, and ``c1 = 1``
   because the Chernoff bound ``P <= exp(-n' E)`` holds for every ``n'``),
3. it checks that ``E`` is the actual rate: the slope of ``log P`` against ``n'`` at large ``n'``.

Derivation. With ``a = theta*_j - theta_j`` and ``b = theta*_j - theta_j'`` the per-sample residuals
``u = <x, a> + eps`` and ``v = <x, b> + eps`` are jointly Gaussian with variances
``A = |a|^2 + sigma^2``, ``B = |b|^2 + sigma^2`` and covariance ``C = a.b + sigma^2``. The machine is
misclassified when ``Q = sum_{n'} (v^2 - u^2) < 0``. ``Q = lam1 chi2_{n'} + lam2 chi2'_{n'}`` with
independent chi-squares and ``lam1 < 0 < lam2`` the eigenvalues of ``diag(-1, 1) Sigma``
(``lam1 + lam2 = B - A``, ``lam1 lam2 = -(AB - C^2)``), so ``P = F(n', n').cdf(|lam1| / lam2)``.
``E exp(-s Q) = [(1 + 2 s lam1)(1 + 2 s lam2)]^{-n'/2}``; its minimum over ``s`` gives
``E = (1/2) log(1 + (B - A)^2 / (4 (AB - C^2)))``, where ``AB - C^2 = |a ^ b|^2 + sigma^2 |a - b|^2``.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (arXiv
long version), Lemma 1 and its proof (Appendix A, A.1); Theorem 1 (Section 5.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from .._validation import as_generator, check_bool
from ..data import draw_rows
from ..stats import Fit, log_f_cdf, positive_integers, verdict_at_least, verdict_at_most
from . import bounds
from .study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, combine

__all__ = ["PLACEMENTS", "residual_eigenvalues", "chernoff_exponent", "log_f_cdf",
           "misclassification_probability", "simulate_misclassification", "placement",
           "exponent_from_angles", "worst_placement", "form_edges", "form_edge_verdicts",
           "form_verdict", "FormVerdict", "mc_allowed_outside", "mc_agreement_verdict"]

PLACEMENTS = ("collinear", "orthogonal_same", "orthogonal_opposite", "random", "worst")



# ------------------------------------------------------------------------------ validation


def _vec(name, v):
    x = np.asarray(v, dtype=float)
    if x.ndim != 1 or x.size < 1 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be a finite 1-D vector, got shape {x.shape}")
    return x


def _ab(a, b):
    a, b = _vec("a", a), _vec("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.size} and {b.size}")
    return a, b


def _sigma(sigma):
    s = float(sigma)
    if not np.isfinite(s) or s < 0:
        raise ValueError(f"sigma must be finite and >= 0, got {sigma!r}")
    return s


def _nprime(n_prime):
    return positive_integers("n_prime", n_prime)


def _alpha_rho(alpha, rho):
    a, r = float(alpha), float(rho)
    if not 0 < a < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    if not (np.isfinite(r) and r > 0):
        raise ValueError(f"rho must be finite and > 0, got {rho!r}")
    return a, r


# ------------------------------------------------------------------------------ exact law


def _moments(a, b, sigma):
    """``(B - A, AB - C^2)`` computed without cancellation."""
    s = float((b - a) @ (b + a))
    nb2 = float(b @ b)
    if nb2 > 0:
        perp = a - (float(a @ b) / nb2) * b  # |a ^ b|^2 = |a_perp|^2 |b|^2
        wedge = float(perp @ perp) * nb2
    else:
        wedge = 0.0
    amb = a - b
    det = wedge + sigma**2 * float(amb @ amb)
    return s, max(det, 0.0)


def residual_eigenvalues(a, b, sigma):
    """Eigenvalues ``lam1 <= lam2`` of ``diag(-1, 1) Sigma`` for the residual pair ``(u, v)``.

    Parameters
    ----------
    a, b : array (d,)
        ``theta*_j - theta_j`` (own model) and ``theta*_j - theta_j'`` (other model).
    sigma : float >= 0
        Noise standard deviation.

    Returns
    -------
    lam1, lam2 : float
        ``lam1 + lam2 = B - A`` and ``lam1 lam2 = -(AB - C^2)``; ``lam1 <= 0 <= lam2``.

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version): the event ``F_i(theta_j') <= F_i(theta_j)``.
    """
    a, b = _ab(a, b)
    s, det = _moments(a, b, _sigma(sigma))
    root = np.hypot(s, 2.0 * np.sqrt(det))
    if s >= 0:
        lam2 = 0.5 * (s + root)
        lam1 = -det / lam2 if lam2 > 0 else 0.0
    else:
        lam1 = 0.5 * (s - root)
        lam2 = -det / lam1
    return float(lam1), float(lam2)


def chernoff_exponent(a, b, sigma):
    """Chernoff (= Cramer, exact large-deviation) rate per sample of the misclassification event.

    ``E = (1/2) log(1 + (B - A)^2 / (4 (AB - C^2)))`` if ``B > A``; ``0`` if ``B <= A``; ``inf`` if
    ``B > A`` and ``AB = C^2``. ``P(misclassified) <= exp(-n' E)`` for every ``n'`` and
    ``log P / n' -> -E``.

    Parameters
    ----------
    a, b : array (d,)
        ``theta*_j - theta_j`` and ``theta*_j - theta_j'``.
    sigma : float >= 0

    Returns
    -------
    float

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version), whose exponent is ``c2 (alpha rho/(rho+1))^2``.

    Examples
    --------
    >>> round(chernoff_exponent([0.0], [1.0], 1.0), 6)  # A = 1, B = 2, C = 1: (1/2) log(1 + 1/4)
    0.111572
    """
    a, b = _ab(a, b)
    s, det = _moments(a, b, _sigma(sigma))
    if s <= 0:
        return 0.0
    if det <= 0:
        return float("inf")
    return float(0.5 * np.log1p(s * s / (4.0 * det)))


def misclassification_probability(a, b, sigma, n_prime, *, log=False):
    """Exact probability that a machine is put in the other cluster (squared loss, Gaussian data).

    A machine with ``n'`` samples ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + eps``,
    ``eps ~ N(0, sigma^2)`` compares the empirical losses of its own cluster's model
    ``theta_j = theta*_j - a`` and another model ``theta_j' = theta*_j - b``; it is misclassified
    when the other loss is strictly smaller (ties, of probability 0 unless ``AB = C^2``, go to the
    own model). ``P = F(n', n').cdf(|lam1| / lam2)``.

    Parameters
    ----------
    a, b : array (d,)
        ``theta*_j - theta_j`` and ``theta*_j - theta_j'``.
    sigma : float >= 0
        Noise standard deviation.
    n_prime : int or array of int >= 1
        Samples per machine (vectorized).
    log : bool, default False
        Return ``log P`` (finite far below the smallest float) instead of ``P``.

    Returns
    -------
    ndarray, shape of ``n_prime``

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version).

    Examples
    --------
    >>> float(misclassification_probability([0.0], [1.0], 0.0, 3))  # no noise, own model exact
    0.0
    """
    log = check_bool("log", log)
    a, b = _ab(a, b)
    sigma = _sigma(sigma)
    n = _nprime(n_prime)
    s, det = _moments(a, b, sigma)
    if det <= 0:  # one residual is a multiple of the other: Q = (B - A) chi2, or Q = 0
        val = np.full(n.shape, 1.0 if s < 0 else 0.0)
        with np.errstate(divide="ignore"):
            return np.log(val) if log else val
    lam1, lam2 = residual_eigenvalues(a, b, sigma)
    q = -lam1 / lam2
    lp = log_f_cdf(q, n)
    return lp if log else np.exp(lp)


def simulate_misclassification(a, b, sigma, n_prime, n_machines, rng=None, *, chunk=2**21,
                               noise="gaussian"):
    """Monte Carlo: simulate machines and count those whose cluster estimate is not their own.

    Each machine draws ``n'`` samples ``x ~ N(0, I)``, ``y = <x, theta*> + eps`` with its truth
    ``theta* = 0``, computes the empirical squared losses of the models ``theta* - a`` (own, index 0)
    and ``theta* - b`` (other, index 1) and takes the argmin, ties to the lowest index. When
    ``d > 2`` the features are drawn in an orthonormal basis of ``span(a, b)``: the losses depend on
    ``x`` only through ``<x, a>`` and ``<x, b>``, and ``N(0, I)`` is rotation invariant, so this is
    the same law at a fraction of the cost.

    Parameters
    ----------
    a, b : array (d,)
    sigma : float >= 0
    n_prime : int >= 1
    n_machines : int >= 1
    rng : None, int, SeedSequence or Generator
    chunk : int
        Samples (machines x n') per batch. The draws are consumed batch by batch, so the exact
        counts depend on it: keep the default for reproducible numbers.
    noise : {"gaussian", "cauchy"}
        The law of ``eps``: ``N(0, sigma^2)`` (the lemma's; the default), or ``sigma`` times a
        standard Cauchy variable (outside the lemma: no finite variance, so the comparison of the
        two losses does not concentrate as ``n'`` grows; the draws of the Gaussian case are
        unchanged).

    Returns
    -------
    int
        Number of misclassified machines.

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version): the cluster estimation step of IFCA.
    """
    a, b = _ab(a, b)
    sigma = _sigma(sigma)
    if np.ndim(n_prime) != 0:
        raise ValueError(f"n_prime must be a single integer >= 1, got {n_prime!r}")
    n = int(_nprime(n_prime))
    if not isinstance(n_machines, (int, np.integer)) or n_machines < 1:
        raise ValueError(f"n_machines must be an integer >= 1, got {n_machines!r}")
    if noise not in ("gaussian", "cauchy"):
        raise ValueError(f"noise must be 'gaussian' or 'cauchy', got {noise!r}")
    gen = as_generator(rng)
    if a.size > 2:
        basis, _ = np.linalg.qr(np.stack([a, b], axis=1))
        a, b = basis.T @ a, basis.T @ b
    models = -np.stack([a, b])  # (2, d): theta* - a, theta* - b with theta* = 0
    per = max(1, int(chunk) // n)
    wrong = 0
    done = 0
    while done < n_machines:
        mm = min(per, n_machines - done)
        if noise == "gaussian":
            X, y = draw_rows(np.zeros(mm, dtype=np.int64), np.zeros((1, a.size)), n,
                             sigma=sigma, rng=gen)
        else:  # theta* = 0: y is the noise alone
            X = gen.standard_normal((mm, n, a.size))
            y = sigma * gen.standard_cauchy((mm, n))
        resid = y[:, :, None] - X @ models.T  # (mm, n, 2)
        loss = np.mean(resid**2, axis=1)  # (mm, 2)
        wrong += int(np.count_nonzero(np.argmin(loss, axis=1) != 0))
        done += mm
    return wrong


# ------------------------------------------------------------------------------ placements


def _unit(v):
    return v / np.linalg.norm(v)


def placement(kind, alpha, rho, *, delta=1.0, d=3, rng=None, angles=None, radii=(1.0, 1.0)):
    """Residual vectors ``(a, b, sigma)`` for a named placement of the two models.

    Centers ``theta*_j = 0`` (the machine's cluster) and ``theta*_j' = Delta e1``; own model
    ``theta_j = delta1``, other model ``theta_j' = Delta e1 + delta2`` with
    ``|delta1| = |delta2| = (1/2 - alpha) Delta`` (times ``radii``), ``sigma = Delta / sqrt(rho)``.

    Parameters
    ----------
    kind : {"collinear", "orthogonal_same", "orthogonal_opposite", "random", "angles"}
        ``collinear``: each model moved toward the other center. ``orthogonal_same`` /
        ``orthogonal_opposite``: both moved perpendicular to the line of centers, in the same or
        opposite directions. ``random``: independent uniform directions in ``R^d``. ``angles``:
        ``delta1 = r (cos phi1, sin phi1, 0)``, ``delta2 = r (cos phi2, sin phi2 cos psi,
        sin phi2 sin psi)`` (the parametrization searched by :func:`worst_placement`).
    alpha : float in (0, 1/2)
    rho : float > 0
        ``Delta^2 / sigma^2``.
    delta : float > 0
        Separation ``Delta``.
    d : int >= 3
    rng : None, int, SeedSequence or Generator
        For ``random``.
    angles : (phi1, phi2, psi)
        For ``angles``.
    radii : (t1, t2) in [0, 1]
        Fractions of the allowed distance ``(1/2 - alpha) Delta`` (default: exactly on it).

    Returns
    -------
    a, b : ndarray (d,)
    sigma : float

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version): the hypothesis
    ``||theta_j - theta*_j|| <= (1/2 - alpha) Delta`` for all ``j``.
    """
    alpha, rho = _alpha_rho(alpha, rho)
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be finite and > 0, got {delta!r}")
    if not isinstance(d, (int, np.integer)) or d < 3:
        raise ValueError(f"d must be an integer >= 3, got {d!r}")
    t1, t2 = (float(t) for t in radii)
    if not (0 <= t1 <= 1 and 0 <= t2 <= 1):
        raise ValueError(f"radii must be in [0, 1], got {radii!r}")
    r = (0.5 - alpha) * delta
    e = np.eye(d)
    if kind == "collinear":
        d1, d2 = r * e[0], -r * e[0]
    elif kind == "orthogonal_same":
        d1, d2 = r * e[1], r * e[1]
    elif kind == "orthogonal_opposite":
        d1, d2 = r * e[1], -r * e[1]
    elif kind == "random":
        gen = as_generator(rng)
        d1 = r * _unit(gen.standard_normal(d))
        d2 = r * _unit(gen.standard_normal(d))
    elif kind == "angles":
        if angles is None or len(angles) != 3:
            raise ValueError(f"angles must be (phi1, phi2, psi) for kind='angles', got {angles!r}")
        p1, p2, ps = (float(v) for v in angles)
        d1 = np.zeros(d)
        d2 = np.zeros(d)
        d1[:2] = r * np.array([np.cos(p1), np.sin(p1)])
        d2[:3] = r * np.array([np.cos(p2), np.sin(p2) * np.cos(ps), np.sin(p2) * np.sin(ps)])
    else:
        raise ValueError("kind must be one of ('collinear', 'orthogonal_same', "
                         f"'orthogonal_opposite', 'random', 'angles'), got {kind!r}")
    a = -t1 * d1
    b = -(delta * e[0] + t2 * d2)
    return a, b, float(delta / np.sqrt(rho))


def _s_det(alpha, rho, p1, p2, ps, t1=1.0, t2=1.0):
    """``(B - A, AB - C^2)`` for the angle parametrization with ``Delta = 1`` (vectorized)."""
    r = 0.5 - alpha
    sig2 = 1.0 / rho
    ax, ay = -r * t1 * np.cos(p1), -r * t1 * np.sin(p1)
    bx = -(1.0 + r * t2 * np.cos(p2))
    by = -r * t2 * np.sin(p2) * np.cos(ps)
    bz = -r * t2 * np.sin(p2) * np.sin(ps)
    s = bx * bx + by * by + bz * bz - ax * ax - ay * ay
    # |a x b|^2 with a = (ax, ay, 0)
    cx, cy, cz = ay * bz, -ax * bz, ax * by - ay * bx
    det = cx * cx + cy * cy + cz * cz + sig2 * ((ax - bx) ** 2 + (ay - by) ** 2 + bz * bz)
    return s, det


def exponent_from_angles(alpha, rho, phi1, phi2, psi, t1=1.0, t2=1.0):
    """Chernoff exponent ``E`` of the placement ``placement("angles", ...)`` (vectorized, Delta = 1).

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version).
    """
    alpha, rho = _alpha_rho(alpha, rho)
    s, det = _s_det(alpha, rho, *np.broadcast_arrays(*(np.asarray(v, float) for v in
                                                       (phi1, phi2, psi, t1, t2))))
    with np.errstate(divide="ignore", invalid="ignore"):
        e = 0.5 * np.log1p(s * s / (4.0 * det))
    return np.where(s > 0, e, 0.0)


def _log_obj(x, alpha, rho):
    s, det = _s_det(alpha, rho, *x)
    return float(2.0 * np.log(s) - np.log(det))  # E is increasing in s^2 / det (s > 0 here)


def worst_placement(alpha, rho, *, n_grid=41, n_starts=4, interior=True):
    """Placement of both models (each exactly ``(1/2 - alpha) Delta`` from its truth) minimizing E.

    WLOG ``theta*_j = 0``, ``theta*_j' = Delta e1``, own displacement in ``span(e1, e2)`` at angle
    ``phi1`` from ``e1`` and other displacement in ``span(e1, e2, e3)`` (polar angle ``phi2`` from
    ``e1``, azimuth ``psi``); all three in ``[0, pi]`` (the other cases are mirror images). A dense
    grid of ``n_grid^3`` angles, then L-BFGS-B from the ``n_starts`` best grid points. Nothing
    about the minimizer is assumed.

    Parameters
    ----------
    alpha : float in (0, 1/2)
    rho : float > 0
    n_grid : int >= 5
    n_starts : int >= 1
    interior : bool
        Also minimize over the distances (fractions ``t1, t2`` in ``[0, 1]`` of the allowed one),
        started from the boundary minimizer and from the middle, to check that the lemma's
        "``<=``" does not allow a smaller exponent than the boundary.

    Returns
    -------
    dict
        ``E``, ``phi1``, ``phi2``, ``psi``, ``E_grid`` (before polishing), and with ``interior``
        ``E_interior``, ``t1``, ``t2`` (the best found with free distances).

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version).
    """
    interior = check_bool("interior", interior)
    alpha, rho = _alpha_rho(alpha, rho)
    if not isinstance(n_grid, (int, np.integer)) or n_grid < 5:
        raise ValueError(f"n_grid must be an integer >= 5, got {n_grid!r}")
    if not isinstance(n_starts, (int, np.integer)) or n_starts < 1:
        raise ValueError(f"n_starts must be an integer >= 1, got {n_starts!r}")
    g = np.linspace(0.0, np.pi, n_grid)
    P1, P2, PS = np.meshgrid(g, g, g, indexing="ij")
    s, det = _s_det(alpha, rho, P1, P2, PS)
    obj = 2.0 * np.log(s) - np.log(det)
    flat = obj.ravel()
    order = np.argsort(flat, kind="stable")
    starts = []
    for idx in order:
        x = np.array([P1.flat[idx], P2.flat[idx], PS.flat[idx]])
        if all(np.max(np.abs(x - y)) > 2.5 * (g[1] - g[0]) for y in starts):
            starts.append(x)
        if len(starts) >= n_starts:
            break
    best_x, best_f = starts[0], float(flat[order[0]])
    e_grid = 0.5 * np.log1p(np.exp(best_f) / 4.0)
    for x0 in starts:
        res = optimize.minimize(_log_obj, x0, args=(alpha, rho), method="L-BFGS-B",
                                bounds=[(0.0, np.pi)] * 3, options={"ftol": 1e-15, "gtol": 1e-12})
        if res.fun < best_f:
            best_x, best_f = np.asarray(res.x), float(res.fun)
    out = {"E": float(0.5 * np.log1p(np.exp(best_f) / 4.0)), "phi1": float(best_x[0]),
           "phi2": float(best_x[1]), "psi": float(best_x[2]), "E_grid": float(e_grid)}
    if interior:
        f_int, x_int = best_f, np.r_[best_x, 1.0, 1.0]
        for x0 in (np.r_[best_x, 1.0, 1.0], np.r_[best_x, 0.5, 0.5], np.r_[starts[-1], 0.8, 0.8]):
            res = optimize.minimize(_log_obj, x0, args=(alpha, rho), method="L-BFGS-B",
                                    bounds=[(0.0, np.pi)] * 3 + [(0.0, 1.0)] * 2,
                                    options={"ftol": 1e-15, "gtol": 1e-12})
            if res.fun < f_int:
                f_int, x_int = float(res.fun), np.asarray(res.x)
        out.update(E_interior=float(0.5 * np.log1p(np.exp(f_int) / 4.0)), t1=float(x_int[3]),
                   t2=float(x_int[4]))
    return out


# ------------------------------------------------------------------------------ verdict logic


@dataclass
class FormVerdict:
    """Outcome of :func:`form_verdict`.

    Attributes
    ----------
    verdict : str
        ``holds`` (ratio bounded away from 0 and not clearly growing at any edge), ``holds with a
        caveat`` (bounded away from 0 but growing without bound toward an edge: the form is valid
        but loose there), ``not supported`` (the ratio still falls toward an edge: no universal
        ``c2``), ``inconclusive``.
    c2 : float
        Infimum of ``exponent / form`` over the grid (the largest valid ``c2`` on the grid).
    argmin : tuple (alpha, rho)
    spread : float
        ``max ratio / min ratio`` over the grid.
    edges : dict
        Edge name -> ``Fit`` of the local log-log slope of the minimal ratio toward that edge.
    edge_verdicts : dict
        Edge name -> verdict on "the ratio does not fall toward this edge".
    loose : list of str
        Edges where the ratio clearly grows (the form's exponent is too small there).
    """

    verdict: str
    c2: float
    argmin: tuple
    spread: float
    edges: dict = field(default_factory=dict)
    edge_verdicts: dict = field(default_factory=dict)
    loose: list = field(default_factory=list)


def _edge_fit(x, m, at_start):
    """Slope of ``log m`` vs ``log x`` on the two grid segments nearest an edge."""
    lx, lm = np.log(x), np.log(m)
    if at_start:
        s = [(lm[1] - lm[0]) / (lx[1] - lx[0]), (lm[2] - lm[1]) / (lx[2] - lx[1])]
    else:
        s = [(lm[-1] - lm[-2]) / (lx[-1] - lx[-2]), (lm[-2] - lm[-3]) / (lx[-2] - lx[-3])]
    return Fit(float(s[0]), float(min(s)), float(max(s)), 3)


def form_verdict(alpha, rho, exponent, form=None, *, tol=0.05):
    """Is ``exponent >= c2 * form`` on a grid with a universal ``c2 > 0``? Decided at the edges.

    The ratio ``exponent / form`` is minimized over ``rho`` for each ``alpha`` and over ``alpha``
    for each ``rho``; the local log-log slope of these minima over the two grid steps nearest each
    open edge (``alpha -> 0``, ``rho -> 0``, ``rho -> inf``) tells whether the ratio is still falling
    there. A slope beyond ``tol`` in the falling direction means no universal ``c2`` ("not
    supported"); the interval of a slope is the range of the two segment slopes (the computation
    is deterministic: the spread measures curvature, not noise), so a slope that is still bending
    gives "inconclusive". ``alpha -> 1/2`` is a closed end of the lemma's range and is not an edge.

    Parameters
    ----------
    alpha : array (n_alpha,), increasing, in (0, 1/2), n_alpha >= 3
    rho : array (n_rho,), increasing, > 0, n_rho >= 3
    exponent : array (n_alpha, n_rho), > 0
        The exponent per sample (e.g. the worst-placement Chernoff exponent).
    form : array (n_alpha, n_rho), optional
        Default ``(alpha rho / (rho + 1))^2`` (:func:`mixlinreg.theory.bounds.lemma1_exponent_form`).
    tol : float > 0
        Largest |slope| still read as flat.

    Returns
    -------
    FormVerdict

    References
    ----------
    Lemma 1 (Appendix A of the long version): ``P <= c1 exp(-c2 n' (alpha rho / (rho + 1))^2)``.

    Examples
    --------
    >>> import numpy as np
    >>> al, rh = np.geomspace(0.005, 0.45, 6), np.geomspace(0.01, 1000, 6)
    >>> A, R = np.meshgrid(al, rh, indexing="ij")
    >>> form_verdict(al, rh, 3 * (A * R / (R + 1)) ** 2).verdict
    'holds'
    >>> form_verdict(al, rh, (A * R / (R + 1)) ** 2 * A).verdict  # alpha^3: ratio -> 0
    'not supported'
    """
    m = form_edges(alpha, rho, exponent, form)
    v, ev, loose = form_edge_verdicts(m["edges"], tol)
    return FormVerdict(verdict=v, c2=m["c2"], argmin=m["argmin"], spread=m["spread"],
                       edges=m["edges"], edge_verdicts=ev, loose=loose)


def form_edges(alpha, rho, exponent, form=None):
    """The measurement of :func:`form_verdict` (same arguments, no ``tol``): ``{"c2", "argmin",
    "spread", "edges"}`` of the ratio ``exponent / form``, as in :class:`FormVerdict`."""
    al = np.asarray(alpha, dtype=float)
    rh = np.asarray(rho, dtype=float)
    if al.ndim != 1 or al.size < 3 or np.any(np.diff(al) <= 0) or al[0] <= 0 or al[-1] >= 0.5:
        raise ValueError(f"alpha must be an increasing 1-D grid of >= 3 values in (0, 0.5), got {alpha!r}")
    if rh.ndim != 1 or rh.size < 3 or np.any(np.diff(rh) <= 0) or rh[0] <= 0 or not np.all(np.isfinite(rh)):
        raise ValueError(f"rho must be an increasing 1-D grid of >= 3 finite values > 0, got {rho!r}")
    ex = np.asarray(exponent, dtype=float)
    if ex.shape != (al.size, rh.size) or not np.all(np.isfinite(ex)) or np.any(ex <= 0):
        raise ValueError(f"exponent must be finite and > 0 with shape {(al.size, rh.size)}, "
                         f"got shape {ex.shape}")
    if form is None:
        A, R = np.meshgrid(al, rh, indexing="ij")
        form = bounds.lemma1_exponent_form(A, R)
    fm = np.asarray(form, dtype=float)
    if fm.shape != ex.shape or not np.all(np.isfinite(fm)) or np.any(fm <= 0):
        raise ValueError(f"form must be finite and > 0 with shape {ex.shape}, got shape {fm.shape}")
    ratio = ex / fm
    i, j = np.unravel_index(np.argmin(ratio), ratio.shape)
    m_alpha = ratio.min(axis=1)
    m_rho = ratio.min(axis=0)
    edges = {"alpha->0": _edge_fit(al, m_alpha, True),
             "rho->0": _edge_fit(rh, m_rho, True),
             "rho->inf": _edge_fit(rh, m_rho, False)}
    return dict(c2=float(ratio[i, j]), argmin=(float(al[i]), float(rh[j])),
                spread=float(ratio.max() / ratio.min()), edges=edges)


def form_edge_verdicts(edges, tol):
    """The rule of :func:`form_verdict` on the edge slopes ``edges`` (from :func:`form_edges`):
    ``(verdict, edge_verdicts, loose)`` as in :class:`FormVerdict`."""
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be finite and > 0, got {tol!r}")
    # falling toward the edge: alpha->0 and rho->0 need slope <= tol, rho->inf needs slope >= -tol
    ev = {"alpha->0": verdict_at_most(edges["alpha->0"], tol),
          "rho->0": verdict_at_most(edges["rho->0"], tol),
          "rho->inf": verdict_at_least(edges["rho->inf"], -tol)}
    loose = [k for k, f in edges.items()
             if (f.hi < -tol if k in ("alpha->0", "rho->0") else f.lo > tol)]
    v = combine(list(ev.values()))
    if v == HOLDS and loose:
        v = CAVEAT
    return v, ev, loose


def mc_agreement_verdict(n_outside, n_compared, *, level=0.99, quantile=0.999):
    """Does the exact probability fall outside the Monte Carlo intervals no more than chance allows?

    Each of ``n_compared`` Wilson intervals at ``level`` misses the true value with probability
    about ``1 - level``; "holds" if ``n_outside`` is at most the ``quantile`` of
    ``Binomial(n_compared, 1 - level)``, "not supported" otherwise, "inconclusive" if nothing was
    compared.

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version): validates the exact formula used for it.

    >>> mc_agreement_verdict(1, 60), mc_agreement_verdict(20, 60)
    ('holds', 'not supported')
    """
    if n_compared < 1:
        return INCONCLUSIVE
    return HOLDS if n_outside <= mc_allowed_outside(n_compared, level, quantile) else NOT_SUPPORTED


def mc_allowed_outside(n_compared, level, quantile):
    """The misses :func:`mc_agreement_verdict` allows: the ``quantile`` of ``Binomial(n_compared,
    1 - level)`` (0 when nothing is compared)."""
    return int(stats.binom.ppf(quantile, n_compared, 1.0 - level)) if n_compared else 0
