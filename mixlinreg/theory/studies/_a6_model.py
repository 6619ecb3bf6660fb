"""Study A6's model pieces: the constants of the alpha0 -> 0 ball, the starts on its spheres and
beyond, the population loss gap and resampled IFCA's runs with their known-cluster oracle
(mixlinreg/theory/studies/a6.py uses them)."""

from __future__ import annotations

import math
import numpy as np
import pandas as pd

from ...ifca import ifca
from ..constants import loss_constants, loss_parts, population_minimizers, sample_cluster
from ..convex import D, K, LOSS_SETUPS, bisect_radius, theta_star_of

DIRECTIONS = ("adversarial", "random")
FAMILIES = ("ball", "linear", "far")
DIVERGE = 1e10  # the kernel's divergence threshold ("auto" is 1e10 on problems of this scale)


def _setup_kw(loss):
    s = LOSS_SETUPS[loss]
    return dict(sigma=s["sigma"], df=s["df"], l2=s["l2"], huber_delta=s["huber_delta"])


def ball_constants(loss, *, n_samples, n_line, n_points, n_bisect, seed):
    """The constants of the ``alpha0 -> 0`` ball of ``loss`` (a :data:`LOSS_SETUPS` setting).

    ``phi(r) = (1/2) sqrt(lambda(r)/L(r)) Delta`` decreases in ``r`` (``lambda/L`` shrinks as the
    ball grows); the ball's radius ``b`` is the smallest ``r`` with ``r >= phi(r)``, found by
    bisection from ``[phi(hi), hi]`` with ``hi = phi(0)`` (valid: ``phi(phi(0)) <= phi(0)``),
    keeping the valid upper end, every call on the same Monte Carlo sample (``seed + 1``). So
    ``r_A = phi(b) <= b``: a start at ``(1/2 - alpha0) sqrt(lambda/L) Delta <= r_A`` is in the
    ball where ``lambda``, ``L``, ``eta^2`` were measured, for every ``alpha0 > 0``.

    Returns
    -------
    dict
        ``lam, L, eta2, v2, delta`` (of the ball), ``ball`` (its radius ``b``), ``r_A``
        (``phi(b)``), ``n_unit`` (``k eta^2 / (lambda^2 Delta^4)``) and ``centers`` (k, d).
    """
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    kw = _setup_kw(loss)
    centers, _ = population_minimizers(loss, ts, method="monte_carlo", n_line=n_line,
                                       n_samples=n_samples, rng=seed, **kw)

    def at(r):
        c = loss_constants(loss, ts, radius=r, centers=centers, n_samples=n_samples,
                           n_line=n_line, n_points=n_points, rng=seed + 1, **kw)
        return c, 0.5 * math.sqrt(c.lam / c.L) * c.delta

    _, hi = at(0.0)
    c_hi, phi_hi = at(hi)
    for _ in range(20):  # Monte Carlo noise could break monotonicity: grow until valid
        if phi_hi <= hi:
            break
        hi = phi_hi
        c_hi, phi_hi = at(hi)
    else:
        raise RuntimeError(f"no ball with radius >= (1/2) sqrt(lambda/L) Delta found for {loss}")
    hi, c_hi, phi_hi = bisect_radius(at, (hi, c_hi, phi_hi), phi_hi, n_bisect, phi_above=False)
    return {"lam": float(c_hi.lam), "L": float(c_hi.L), "eta2": float(c_hi.eta2),
            "v2": float(c_hi.v2), "delta": float(c_hi.delta), "ball": float(hi),
            "r_A": float(phi_hi), "n_unit": K * c_hi.eta2 / (c_hi.lam ** 2 * c_hi.delta ** 4),
            "centers": np.array(c_hi.centers, dtype=np.float64)}


def start_models(centers, radius, direction, w=None):
    """Initial models, model ``j`` at distance exactly ``radius`` from ``centers[j]``.

    ``"adversarial"``: toward the nearest other center (lowest index on ties); ``"random"``: along
    the rows of ``w`` (k, d), normalized (draw them uniformly: standard normal rows).

    >>> start_models(np.array([[0.0, 0.0], [2.0, 0.0]]), 0.5, "adversarial").tolist()
    [[0.5, 0.0], [1.5, 0.0]]
    """
    c = np.asarray(centers, dtype=np.float64)
    if direction == "adversarial":
        out = np.empty_like(c)
        for j in range(c.shape[0]):
            dist = np.linalg.norm(c - c[j], axis=1)
            dist[j] = np.inf
            o = int(np.argmin(dist))
            out[j] = c[j] + radius * (c[o] - c[j]) / dist[o]
        return out
    if direction == "random":
        w = np.asarray(w, dtype=np.float64)
        return c + radius * w / np.linalg.norm(w, axis=1, keepdims=True)
    raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def scaled_n(n_unit, alpha0, c, n_base):
    """``max(n_base, ceil(c n_unit / alpha0^2))``: an ``n'`` meeting Assumption 6's
    ``n' >= c k eta^2/(alpha0^2 lambda^2 Delta^4)`` (``n_unit = k eta^2/(lambda^2 Delta^4)``).

    >>> scaled_n(1.5, 0.01, 0.01, 40), scaled_n(1.5, 0.4, 0.01, 40)
    (150, 40)
    """
    return max(int(n_base), int(math.ceil(c * n_unit / alpha0 ** 2)))


def needed_n(n_unit, alpha0, c):
    """Assumption 6's ``n'`` with constant ``c``: ``c n_unit / alpha0^2`` (elementwise)."""
    return c * np.asarray(n_unit, dtype=float) / np.asarray(alpha0, dtype=float) ** 2


def population_gap(loss, theta_star, starts, n, gen, *, sigma=None, df=None, l2=0.0,
                   huber_delta=1.0):
    """The population loss gap of the machines' comparison at ``starts`` (R, k, d): per start
    ``min_j min_{l != j} F^j(theta_l) - F^j(theta_j)`` (Monte Carlo, ``n`` points per cluster, the
    same points for every start) and the standard deviation of the per-sample difference at the
    minimizing pair. The proof of Theorem 2 bounds the gap below by ``alpha lambda Delta^2`` (long
    version, Appendix C.1, proof of Lemma 3)."""
    ts = np.asarray(theta_star, dtype=np.float64)
    S = np.asarray(starts, dtype=np.float64)
    R, k, _ = S.shape
    gap = np.full(R, np.inf)
    sd = np.full(R, np.nan)
    for j in range(k):
        X, y, _ = sample_cluster(loss, ts[j], n, sigma=sigma, df=df, rng=gen)
        ridge = 0.5 * l2 * np.einsum("rkd,rkd->rk", S, S)
        ell = np.stack([loss_parts(loss, X @ S[r].T, np.repeat(y[:, None], k, axis=1),
                                   huber_delta)[0] for r in range(R)])  # (R, n, k)
        for o in range(k):
            if o == j:
                continue
            diff = ell[:, :, o] - ell[:, :, j]
            g = diff.mean(axis=1) + ridge[:, o] - ridge[:, j]
            better = g < gap
            gap[better] = g[better]
            sd[better] = diff.std(axis=1, ddof=1)[better]
    return gap, sd


def constants_piece(loss, p):
    """The shared piece of one loss: ``compute(rng) -> DataFrame``, the ball's constants (one row,
    ``kind="constants"``, with the centers ``c{j}_{q}``) and the population gap at the
    adversarial ball starts (one row per ``alpha0``, ``kind="gap"``)."""
    def compute(rng):
        seed = int(rng.integers(2 ** 31))
        c = ball_constants(loss, n_samples=p["n_samples"], n_line=p["n_line"],
                           n_points=p["n_points"], n_bisect=p["n_bisect"], seed=seed)
        row = {"kind": "constants", "loss": loss}
        row.update({key: c[key] for key in ("lam", "L", "eta2", "v2", "delta", "ball", "r_A",
                                            "n_unit")})
        row.update({f"c{j}_{q}": float(c["centers"][j, q]) for j in range(K) for q in range(D)})
        alphas = list(p["alphas"])
        starts = np.stack([start_models(c["centers"], (1 - 2 * a) * c["r_A"], "adversarial")
                           for a in alphas])
        gap, sd = population_gap(loss, theta_star_of(LOSS_SETUPS[loss]["R"]), starts,
                                 p["gap_samples"], rng, **_setup_kw(loss))
        rows = [row] + [{"kind": "gap", "loss": loss, "alpha0": a,
                         "rho": (1 - 2 * a) * c["r_A"] / c["delta"], "gap": float(g),
                         "gap_bound": a * c["lam"] * c["delta"] ** 2, "sd_diff": float(s)}
                        for a, g, s in zip(alphas, gap, sd)]
        return pd.DataFrame(rows)

    return compute


def _constants_of(df):
    """``(constants dict, centers (k, d))`` from a constants piece's rows."""
    r = df[df["kind"] == "constants"].iloc[0]
    centers = np.array([[float(r[f"c{j}_{q}"]) for q in range(D)] for j in range(K)])
    return {key: float(r[key]) for key in ("lam", "L", "eta2", "v2", "delta", "ball", "r_A",
                                           "n_unit")}, centers


def start_plan(p, cons):
    """The starts of one trial: ``(family, direction, alpha0, rho, n_prime)`` tuples (``alpha0``
    NaN for the far family; ``rho = r / Delta``), distinct, in a fixed order. The ball family's
    radius is ``(1 - 2 alpha0) r_A`` times ``p["ball_scale"]`` (absent: 1, the assumption's ball;
    the control's larger scale puts those starts outside it)."""
    delta, r_a = cons["delta"], cons["r_A"]
    scale = p.get("ball_scale", 1.0)
    plan = []
    for direction in p["directions"]:
        for a in p["alphas"]:
            ns = set(p["n_fixed"]) | {scaled_n(cons["n_unit"], a, c, p["n_base"])
                                      for c in p["c_levels"]}
            plan += [("ball", direction, a, scale * (1 - 2 * a) * r_a / delta, n)
                     for n in sorted(ns)]
        radii = []
        if p["linear"]:
            radii += [("linear", a, 0.5 - a) for a in p["alphas"] if (0.5 - a) * delta > r_a]
        radii += [("far", np.nan, rho) for rho in p["far_rho"] if rho * delta > r_a]
        plan += [(fam, direction, a, rho, n) for fam, a, rho in radii for n in p["n_fixed"]]
    return plan


def _g6(x):
    """Six significant digits (the stored rows stay small; the flags are exact)."""
    return float(f"{x:.6g}") if np.isfinite(x) else float(x)


def run_starts(loss, X, y, labels, centers, inits, n_prime, *, L, T):
    """Resampled IFCA from ``inits`` (R, k, d) on the first ``2 n' T`` rows of every machine, with
    the known-cluster oracle; one dict per run: ``labels_ok`` (final estimates all true),
    ``always_ok`` (every iteration's), ``diverged``, ``mis0`` (fraction misassigned by the first
    estimate), ``err_ifca`` and ``err_oracle`` (final ``max_j`` distance to ``centers``).

    The oracle (``k = 1`` on each true cluster's machines, step ``p_j / L``, same start and
    blocks) is run only where it can decide a success: a run whose final estimates are not all
    true fails whatever the oracle (``err_oracle`` NaN), and a run that assigned every machine
    correctly at every iteration made exactly the oracle's updates (its own error is the
    oracle's)."""
    rows = 2 * n_prime * T
    Xn, yn = X[:, :rows], y[:, :rows]
    init = np.asarray(inits, dtype=np.float64)
    res = ifca(Xn, yn, init, 1.0 / L, n_iter=T, theta_star=centers, **_ifca_kw(loss))
    err = np.stack([res.trace.dist[T, :, j, j] for j in range(centers.shape[0])], axis=1)
    lab = res.trace.labels  # (T + 1, R, m): the estimates of every iteration, then the final
    always = (lab[:T] == labels).all(axis=(0, 2))
    final = (res.labels == labels).all(axis=1)
    err_o = np.where((final & always)[:, None], err, np.nan)
    need = np.flatnonzero(final & ~always & ~res.diverged)
    if need.size:
        m = labels.size
        for j in range(centers.shape[0]):
            sel = labels == j
            ro = ifca(Xn[sel], yn[sel], init[need, j:j + 1], sel.sum() / m / L, n_iter=T,
                      theta_star=centers[j:j + 1], **_ifca_kw(loss))
            err_o[need, j] = ro.trace.dist[T, :, 0, 0]
    return [{"labels_ok": bool(final[r]), "always_ok": bool(always[r]),
             "diverged": bool(res.diverged[r]), "mis0": float((lab[0, r] != labels).mean()),
             "err_ifca": _g6(err[r].max()), "err_oracle": _g6(err_o[r].max())}
            for r in range(init.shape[0])]


def _ifca_kw(loss):
    s = LOSS_SETUPS[loss]
    # the call of studies T2 and C2 (one compiled kernel for all); one numba thread: the calls
    # are small (results do not depend on it); the divergence threshold is the kernel's "auto"
    # value on these problems, fixed (its data scan costs more than the small runs)
    return dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"], resample=True, trace=True,
                n_threads=1, diverge_threshold=DIVERGE)
