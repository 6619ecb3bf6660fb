"""Study C2T's model pieces: Corollary 2's iteration count and burn-in, first passage, resampled
IFCA run in chunks of fresh rows, the starts and the floor calibration
(mixlinreg/theory/studies/c2t.py uses them)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...ifca import ifca
from .. import bounds
from ..convex import D, LOSS_SETUPS, draw_cluster_data, init_at_distance, theta_star_of



def iteration_bound(eps, *, L, p, lam, Delta):
    """Corollary 2's ``T(eps) = (8L/(p lambda)) log(2 Delta/eps)`` (long version, Section 5.2).

    >>> round(float(iteration_bound(0.5, L=1.0, p=0.5, lam=0.5, Delta=1.0)), 4)
    44.3614
    """
    return bounds.corollary2_iterations(L=L, p=p, lam=lam, Delta=Delta, eps=eps)


def burn_in_bound(*, L, p, lam):
    """The burn-in ``T' = (8L/(p lambda)) log(4 sqrt(L/lambda))`` of Appendix D, eq. (37) (long
    version): iterations after which ``alpha_t >= 1/4`` whatever ``alpha0``.

    >>> round(burn_in_bound(L=1.0, p=0.5, lam=1.0), 4)
    22.1807
    """
    if not (L > 0 and lam > 0 and 0 < p <= 1 and lam <= L):
        raise ValueError(f"burn_in_bound needs 0 < lam <= L and p in (0, 1], got L={L!r}, "
                         f"lam={lam!r}, p={p!r}")
    return 8.0 * L / (p * lam) * math.log(4.0 * math.sqrt(L / lam))


def first_hit(errors, eps):
    """``T_hat``: for each run (column of ``errors``, shape (T + 1, R)) and each ``eps``, the
    first ``t`` with ``errors[t] <= eps``; ``-1`` where it is never reached.

    >>> first_hit(np.array([[4.0], [2.0], [1.0]]), [5.0, 2.0, 1.5, 0.5]).tolist()
    [[0, 1, 2, -1]]
    """
    e = np.asarray(errors, dtype=float)
    eps = np.asarray(eps, dtype=float)
    below = e[:, :, None] <= eps[None, None, :]  # (T+1, R, E)
    hit = below.any(axis=0)
    return np.where(hit, below.argmax(axis=0), -1)


# ------------------------------------------------------------------------------ runs


#: divergence threshold of the kernel, fixed so that it does not recompute the data's scale on
#: every chunk: its "auto" value here would be ``1e10 x max(1, rms(y) / (rms(X) sqrt(d)),
#: max |init|)``, 1e10 to about 3e10 (``|y|`` of order 1, ``d = 5``, entries of the models below
#: 3); either is many orders of magnitude above any model of these runs
DIVERGE = 1e10


def _ifca_kw(loss):
    s = LOSS_SETUPS[loss]
    # one numba thread: these calls are small, and under CPU contention a parallel kernel waits on
    # descheduled threads; results do not depend on it
    return dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"], n_threads=1,
                diverge_threshold=DIVERGE)


def run_chunked(draw, init, lr, n_iter, chunk, *, centers, loss, l2=0.0, huber_delta=1.0,
                n_threads=1, diverge_threshold="auto", stop=None):
    """Resampled IFCA for ``n_iter`` iterations in chunks of at most ``chunk`` iterations.

    ``draw(c) -> (X, y)`` gives the rows of the next ``c`` iterations (``2 n' c`` per machine);
    each chunk is one :func:`mixlinreg.ifca` call (``resample=True``) from the previous chunk's
    models. Every iteration of resampled IFCA uses its own two blocks of fresh rows, so this is
    the same run as one call on the chunks' rows concatenated. ``stop(dist) -> bool``, if given,
    is asked after each chunk (with the distances so far) whether to end before ``n_iter``.

    Returns
    -------
    dist : array (t + 1, R, k)
        ``||theta_j^(t) - centers_j||`` for the ``t`` iterations run (``n_iter`` unless
        ``stop`` ended it at the end of an earlier chunk).
    theta : array (R, k, d)
        Final models.
    labels0 : array (R, m)
        The clusters chosen at iteration 0.
    diverged : bool array (R,)
    """
    theta = np.asarray(init, dtype=float)
    parts, labels0, t = [], None, 0
    diverged = np.zeros(theta.shape[0], dtype=bool)
    while t < n_iter:
        c = min(chunk, n_iter - t)
        X, y = draw(c)
        res = ifca(X, y, theta, lr, n_iter=c, loss=loss, l2=l2, huber_delta=huber_delta,
                   resample=True, trace=True, theta_star=centers, n_threads=n_threads,
                   diverge_threshold=diverge_threshold)
        d = np.stack([res.trace.dist[:, :, j, j] for j in range(theta.shape[1])], axis=-1)
        parts.append(d if t == 0 else d[1:])
        if labels0 is None:
            labels0 = res.trace.labels[0]
        diverged |= res.diverged
        theta = np.asarray(res.theta, dtype=float)
        t += c
        if stop is not None and t < n_iter and stop(np.concatenate(parts, axis=0)):
            break
    return np.concatenate(parts, axis=0), theta, labels0, diverged


def adversarial_init(centers, radius):
    """Each model at ``radius`` from its centre, moved straight toward the nearest other centre;
    shape (k, d)."""
    c = np.asarray(centers, dtype=float)
    out = np.empty_like(c)
    for j in range(c.shape[0]):
        dist = np.linalg.norm(c - c[j], axis=1)
        dist[j] = np.inf
        u = c[int(np.argmin(dist))] - c[j]
        out[j] = c[j] + radius * u / np.linalg.norm(u)
    return out


def _sizes(m, p_small):
    n1 = int(round(p_small * m))
    if n1 < 1 or n1 > m - 1:
        raise ValueError(f"study C2T: params.p_small {p_small} x m {m} leaves an empty cluster")
    return [n1, m - n1]


def _cell_constants(cons, sizes):
    """lambda, L, Delta, ball radius, the minimizers and ``p = min_j p_j`` of a cell."""
    cons = cons.sort_values("cluster")
    centers = cons[[f"center_{q}" for q in range(D)]].to_numpy()
    lam, L, delta, radius = (float(cons[c].iloc[0]) for c in ("lam", "L", "delta", "radius"))
    return {"lam": lam, "L": L, "delta": delta, "radius": radius, "centers": centers,
            "p": min(sizes) / sum(sizes), "scale": math.sqrt(lam / L) * delta}


def start_radius(alpha0, c):
    """Distance of the start ``(1/2 - alpha0) sqrt(lambda/L) Delta``, at most the ball's radius
    (the constants hold there), and the ``alpha`` it has: ``1/2 - radius / (sqrt(lambda/L) Delta)``.
    """
    r = min((0.5 - alpha0) * c["scale"], c["radius"])
    return r, 0.5 - r / c["scale"]


def _drawer(loss, sizes, n_prime, gen):
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])

    def draw(c):
        X, y, _ = draw_cluster_data(loss, ts, sizes, 2 * n_prime * c, gen, sigma=s["sigma"],
                                    df=s["df"])
        return X, y

    return draw


def _constants_params(p):
    return {"alpha0": min(p["alpha0"]), "n_samples": p["n_samples"], "n_line": p["n_line"],
            "n_points": p["n_points"], "n_bisect": p["n_bisect"]}


def floor_piece(loss, p_small, cons, p):
    """Shared piece of a cell (loss, ``p``): the error floor, ``cal_seeds`` independent data sets,
    one random start at the smallest ``alpha0``'s distance each, ``cal_T`` iterations; a row per
    data set with its floor (mean of the last ``tail`` values of ``max_j`` error) and its
    plateau ratio (that mean over the mean of the ``tail`` before, when there are)."""
    sizes = _sizes(p["m"], p_small)
    c = _cell_constants(cons, sizes)

    def compute(rng):
        rows = []
        r, _ = start_radius(min(p["alpha0"]), c)
        for s, gen in enumerate(rng.spawn(p["cal_seeds"])):
            init = init_at_distance(c["centers"], r, 1, gen)
            dist, _, _, div = run_chunked(_drawer(loss, sizes, p["n_prime"], gen), init,
                                          1.0 / c["L"], p["cal_T"], p["chunk"],
                                          centers=c["centers"], **_ifca_kw(loss))
            e = dist.max(axis=2)[:, 0]
            tail = p["tail"]
            last = float(e[-tail:].mean())
            before = e[-2 * tail:-tail]
            rows.append({"loss": loss, "p_small": p_small, "cal_seed": s, "floor": last,
                         "plateau_ratio": last / float(before.mean()) if before.size == tail
                         else np.nan, "diverged": bool(div[0])})
        return pd.DataFrame(rows)

    return compute


def eps_grid(delta, floor, p):
    """The ``eps`` grid of a cell: ``n_eps`` geometric values from ``eps_hi_frac x Delta`` down
    to ``eps_lo_mult x floor`` (``floor`` not finite: down to ``1e-3 x`` the top)."""
    hi = p["eps_hi_frac"] * delta
    lo = p["eps_lo_mult"] * floor if np.isfinite(floor) and floor > 0 else 1e-3 * hi
    return np.geomspace(hi, lo, p["n_eps"])


# ------------------------------------------------------------------------------ v2: at and after T


def check_iteration(bound):
    """The iteration at which a bound ``T`` (not an integer) is judged: ``ceil(T)``, the first
    whole number of iterations that is at least ``T`` (at least 0).

    >>> check_iteration([0.0, 2.1, 3.0, 95.2]).tolist()
    [0, 3, 3, 96]
    """
    return np.maximum(np.ceil(np.asarray(bound, dtype=float) - 1e-9), 0).astype(int)


def after_bound(errors, levels, bounds_):
    """For each run (column of ``errors``, shape (T + 1, R)) and level ``levels[q]`` with bound
    ``bounds_[q]``, what happens from iteration ``t_q = ceil(bounds_[q])`` to the run's end ``T``.

    Returns a dict of arrays of shape (R, Q):

    * ``checked``: ``t_q <= T`` (else the run is too short to say: censored);
    * ``at_T``: ``errors[t_q] <= level`` (False where not checked);
    * ``stays``: ``errors[t] <= level`` for every ``t`` in ``[t_q, T]`` (False where not
      checked);
    * ``t_stay``: the first ``t`` from which the error stays at most the level up to ``T``
      (``0``: never above it; ``T + 1``: above it at the end);
    * ``worst_after``: ``max_{t_q <= t <= T} errors[t] / level`` (NaN where not checked).

    >>> r = after_bound(np.array([[4.0], [2.0], [0.9], [1.2], [0.8]]), [1.0, 3.0], [1.5, 0.2])
    >>> [r[k].tolist() for k in ("checked", "at_T", "stays", "t_stay")]
    [[[True, True]], [[True, True]], [[False, True]], [[4, 1]]]
    >>> np.round(r["worst_after"], 3).tolist()
    [[1.2, 0.667]]
    """
    e = np.asarray(errors, dtype=float)
    lv = np.asarray(levels, dtype=float)
    t_end = e.shape[0] - 1
    tq = check_iteration(bounds_)
    checked = np.broadcast_to(tq <= t_end, (e.shape[1], lv.size)).copy()
    above = e[:, :, None] > lv[None, None, :]  # (T + 1, R, Q)
    # last t above the level, + 1 (0 where never above)
    rev = above[::-1].argmax(axis=0)
    t_stay = np.where(above.any(axis=0), t_end - rev + 1, 0)
    idx = np.minimum(tq, t_end)
    at_t = ~above[idx, :, np.arange(lv.size)].T & checked  # (R, Q)
    stays = (t_stay <= tq[None, :]) & checked
    worst = np.full((e.shape[1], lv.size), np.nan)
    for q in range(lv.size):
        if tq[q] <= t_end:
            worst[:, q] = e[tq[q]:].max(axis=0) / lv[q]
    return {"checked": checked, "at_T": at_t, "stays": stays, "t_stay": t_stay,
            "worst_after": worst}


def run_length(t_eps, t_prime, run_mult, max_iters):
    """The iterations of every run of a cell: ``ceil(run_mult x max(T(eps) over the grid, T'))``
    (so that each level's ``[T, T_max]`` has a tail of at least ``(run_mult - 1) x`` the largest
    bound), at most ``max_iters``.

    >>> run_length([10.0, 95.2], 30.0, 1.25, 3000)
    119
    >>> run_length([10.0, 95.2], 30.0, 1.25, 100)
    100
    """
    top = max(float(np.max(t_eps)), float(t_prime))
    return int(min(max_iters, math.ceil(run_mult * top - 1e-9)))
