"""Study L3's model pieces: the losses of one machine, Lemma 3's bound and its Chebyshev form, the
placements of the models and the population statistics (mixlinreg/theory/studies/l3.py uses them)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...geometry import min_separation
from ..constants import loss_constants, population_minimizers
from ..convex import D, LOSS_SETUPS, bisect_radius, draw_cluster_data, theta_star_of

#: the proof's constant (Appendix C.1 of the long version): ``P(E) <= P(F_i(theta_1) > t) +
#: P(F_i(theta_j) <= t)``, each term ``<= 4 eta^2 / (alpha^2 lambda^2 Delta^4 n')`` by Chebyshev's
#: inequality with the gap ``alpha lambda Delta^2`` halved
C1_PROOF = 8.0
CHUNK_ROWS = 1 << 16  # rows evaluated at once (memory: rows x models doubles per temporary)
ADVERSARIAL = "adversarial"


def per_sample_loss(loss, z, y, huber_delta=1.0):
    """``ell(z, y)`` in numpy, written here independently of the kernel (the tests hold it to the
    kernel's losses): ``log(1 + e^z) - y z`` (logistic), the Huber function of ``y - z``
    (``r^2/2`` inside ``huber_delta``, ``delta (|r| - delta/2)`` outside, written as ``c (|r| -
    c/2)`` with ``c = min(|r|, delta)``), or ``(z - y)^2`` (squared). ``y`` broadcasts against
    ``z``.

    >>> per_sample_loss("huber", np.array([0.0, 3.0]), np.array([0.5, 0.0])).tolist()
    [0.125, 2.5]
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if loss == "logistic":
        return np.logaddexp(0.0, z) - y * z
    if loss == "huber":
        a = np.abs(y - z)
        c = np.minimum(a, huber_delta)
        return c * (a - 0.5 * c)
    if loss == "squared":
        return (z - y) ** 2
    raise ValueError(f"loss must be one of ('logistic', 'huber', 'squared'), got {loss!r}")


def machine_losses(loss, X, y, thetas, l2=0.0, huber_delta=1.0):
    """``F_i(theta) = (1/n') sum_t ell(<x_t, theta>, y_t) + (l2/2) ||theta||^2`` of every machine
    at every model: ``X`` (M, n', d), ``y`` (M, n'), ``thetas`` (P, d) -> (M, P)."""
    X = np.asarray(X, dtype=np.float64)
    th = np.asarray(thetas, dtype=np.float64)
    z = X @ th.T  # (M, n', P)
    ell = per_sample_loss(loss, z, np.asarray(y)[..., None], huber_delta)
    return ell.mean(axis=1) + 0.5 * l2 * np.einsum("pd,pd->p", th, th)


def misclassified(F_own, F_other):
    """The paper's event ``F_i(theta_own) >= F_i(theta_other)`` and the ties ``==`` (boolean
    arrays). The kernel breaks a tie toward the lowest index, so with the own model first a tied
    machine would keep its cluster there; the paper's event counts it as an error."""
    return F_own >= F_other, F_own == F_other


# ------------------------------------------------------------------------------ bounds

def lemma3_bound(eta2, alpha, lam, delta, n_prime, c1=C1_PROOF):
    """``c1 eta^2 / (alpha^2 lambda^2 Delta^4 n')``, elementwise (``c1 = 8``: Appendix C.1).

    >>> float(lemma3_bound(1.0, 0.25, 1.0, 1.0, 128))
    1.0
    """
    return c1 * np.asarray(eta2, float) / (np.asarray(alpha, float) ** 2 * np.asarray(lam, float)
                                           ** 2 * np.asarray(delta, float) ** 4
                                           * np.asarray(n_prime, float))


def chebyshev_bounds(var1, var2, gap, n_prime):
    """The proof's two Chebyshev terms with the actual variances and gap: at the midpoint ``t``,
    ``4 (var1 + var2) / (n' gap^2)``, and at the best ``t``, ``(var1^(1/3) + var2^(1/3))^3 /
    (n' gap^2)`` (minimizing ``var1/a^2 + var2/b^2`` over ``a + b = gap``). ``inf`` where
    ``gap <= 0`` (the split gives no bound).

    >>> [float(b) for b in chebyshev_bounds(1.0, 1.0, 2.0, 1)]
    [2.0, 2.0]
    """
    var1, var2, gap, n = (np.asarray(v, dtype=float) for v in (var1, var2, gap, n_prime))
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = np.where(gap > 0, 4.0 * (var1 + var2) / (n * gap ** 2), np.inf)
        opt = np.where(gap > 0, (np.cbrt(var1) + np.cbrt(var2)) ** 3 / (n * gap ** 2), np.inf)
    return mid, opt


# ------------------------------------------------------------------------------ the setting

def _setting(loss, R):
    s = LOSS_SETUPS[loss]
    return theta_star_of(R), dict(sigma=s["sigma"], df=s["df"], l2=s["l2"],
                                  huber_delta=s["huber_delta"])


def ball_constants(loss, R, alpha_min, *, n_samples, n_line, n_points, n_bisect, seed):
    """The constants of ``loss`` at scale ``R`` on a ball that holds every placement.

    ``phi(rho) = (1/2 - alpha_min) sqrt(lambda(rho)/L(rho)) Delta`` decreases in ``rho``; starting
    from ``rho = (1/2 - alpha_min) Delta`` (where ``phi <= rho`` since ``lambda <= L``) a bisection
    keeps an upper end with ``phi(rho) <= rho`` (all calls on one Monte Carlo sample), so every
    ``r(alpha) = (1/2 - alpha) sqrt(lambda/L) Delta`` with ``alpha >= alpha_min`` is at most
    ``rho``. Returns ``(LossConstants at rho, phi(rho))``.
    """
    ts, kw = _setting(loss, R)
    centers, _ = population_minimizers(loss, ts, method="monte_carlo", n_line=n_line,
                                       n_samples=n_samples, rng=seed, **kw)
    # theta*_j = R e_j and x ~ N(0, I): swapping coordinates 1 and 2 swaps the clusters, so the
    # minimizers are c R e_j with one c; its two Monte Carlo estimates are averaged (this keeps
    # the adversarial placement exactly symmetric)
    centers = np.linalg.norm(centers, axis=1).mean() * ts / np.linalg.norm(ts, axis=1)[:, None]
    delta = min_separation(centers)

    def at(r):
        c = loss_constants(loss, ts, radius=r, centers=centers, n_samples=n_samples,
                           n_line=n_line, n_points=n_points, rng=seed + 1, **kw)
        return c, (0.5 - alpha_min) * math.sqrt(c.lam / c.L) * delta

    hi = (0.5 - alpha_min) * delta
    c_hi, phi_hi = at(hi)
    hi, c_hi, phi_hi = bisect_radius(at, (hi, c_hi, phi_hi), phi_hi, n_bisect, phi_above=False)
    return c_hi, phi_hi


def placements(centers, lam, L, alphas, n_random, rng, scale=1.0):
    """``(alpha, direction, theta_1, theta_2)`` of every placement: model ``j`` at distance
    ``(1/2 - alpha) sqrt(lambda/L) Delta`` from ``centers[j]`` (times ``scale``: 1, the lemma's
    ball; the control's larger scale puts the models outside it), toward the other centre
    (``"adversarial"``) or along ``n_random`` pairs of uniform random directions
    (``"random0"``, ...; the same directions for every ``alpha``)."""
    c = np.asarray(centers, dtype=float)
    delta = float(np.linalg.norm(c[1] - c[0]))
    u = (c[1] - c[0]) / delta
    dirs = [(ADVERSARIAL, u, -u)]
    for i in range(n_random):
        w = rng.standard_normal((2, c.shape[1]))
        w /= np.linalg.norm(w, axis=1, keepdims=True)
        dirs.append((f"random{i}", w[0], w[1]))
    out = []
    for alpha in alphas:
        r = scale * (0.5 - alpha) * math.sqrt(lam / L) * delta
        for name, u1, u2 in dirs:
            out.append((float(alpha), name, c[0] + r * u1, c[1] + r * u2))
    return out


def population_stats(loss, theta_star_1, thetas, n_pop, rng, *, sigma=None, df=None, l2=0.0,
                     huber_delta=1.0):
    """Under cluster 1 (``theta_star_1``), from ``n_pop`` rows drawn in chunks: the population
    losses ``F^1(theta)`` (P,), the variances ``Var f(theta; z)`` (P,) of the given models, and
    the covariance matrix of ``f`` across models (P, P) (for standard errors of differences)."""
    th = np.asarray(thetas, dtype=float)
    P = th.shape[0]
    s1, s2, shift, n = np.zeros(P), np.zeros((P, P)), None, 0
    while n < n_pop:
        b = min(CHUNK_ROWS, n_pop - n)
        X, y, _ = draw_cluster_data(loss, np.asarray(theta_star_1, float)[None], [1], b, rng,
                                    sigma=sigma, df=df)
        ell = per_sample_loss(loss, X[0] @ th.T, y[0][:, None], huber_delta)
        if shift is None:
            shift = ell.mean(axis=0)
        e = ell - shift
        s1 += e.sum(axis=0)
        s2 += e.T @ e
        n += b
    mean = s1 / n
    cov = (s2 - n * np.outer(mean, mean)) / (n - 1)
    return shift + mean + 0.5 * l2 * np.einsum("pd,pd->p", th, th), np.diag(cov).copy(), cov


def setup_piece(loss, R, p):
    """The shared piece of (loss, R): ``compute(rng) -> DataFrame``, one row per placement with
    the constants (:func:`ball_constants`), the placement and its population numbers."""

    def compute(rng):
        ts, kw = _setting(loss, R)
        seed = int(rng.integers(2**31 - 2))
        c, phi = ball_constants(loss, R, min(p["alphas"]), n_samples=p["n_samples"],
                                n_line=p["n_line"], n_points=p["n_points"],
                                n_bisect=p["n_bisect"], seed=seed)
        pl = placements(c.centers, c.lam, c.L, p["alphas"], p["n_random"], rng,
                        scale=p.get("radius_scale", 1.0))
        thetas = np.concatenate([[t1, t2] for _, _, t1, t2 in pl])
        F, var, cov = population_stats(loss, ts[0], thetas, p["n_pop"], rng, **kw)
        rows = []
        for q, (alpha, name, t1, t2) in enumerate(pl):
            a, b = 2 * q, 2 * q + 1
            gap_var = cov[a, a] + cov[b, b] - 2 * cov[a, b]
            row = {"loss": loss, "R": R, "placement": q, "alpha": alpha, "direction": name,
                   "delta": c.delta, "lam": c.lam, "L": c.L, "eta2": c.eta2, "v2": c.v2,
                   "ball_radius": c.radius, "phi_ball": phi,
                   "r": float(np.linalg.norm(t1 - c.centers[0])),
                   "r2": float(np.linalg.norm(t2 - c.centers[1])),
                   "dist_2_to_pop1": float(np.linalg.norm(t2 - c.centers[0])),
                   "F1": F[a], "F2": F[b], "gap": F[b] - F[a],
                   "gap_se": math.sqrt(max(gap_var, 0.0) / p["n_pop"]),
                   "var1": var[a], "var2": var[b], "n_pop": p["n_pop"],
                   "n_samples": c.n_samples, "n_points": c.n_points}
            row.update({f"theta1_{i}": float(t1[i]) for i in range(D)})
            row.update({f"theta2_{i}": float(t2[i]) for i in range(D)})
            rows.append(row)
        return pd.DataFrame(rows)

    return compute
