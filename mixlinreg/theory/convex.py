"""Strongly convex losses (Section 5.2): the shared pieces of studies T2 and C2, and study C2.

Study T2 itself is a record, :mod:`mixlinreg.theory.studies.t2`.

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
from ..ifca import ifca
from ..stats import Fit, bootstrap, loglog_slope, verdict_at_most
from . import bounds
from ._study import CAVEAT, HOLDS, Context, combine, pick
from .constants import LOSSES, loss_constants, population_minimizers

__all__ = ["LOSS_SETUPS", "draw_cluster_data", "init_at_distance", "transient_mask",
           "theorem2_radius", "t2_verdict", "nnls_rate", "log_allowance", "c2_verdicts",
           "run_c2"]

D = 5
K = 2
ALPHA0 = 0.1
FLOOR_MULT = 5.0

#: Loss settings of both studies (``R`` is the norm of every generating parameter).
LOSS_SETUPS = {
    "logistic": {"R": 3.0, "l2": 0.05, "sigma": None, "df": None, "huber_delta": 1.0},
    "huber": {"R": 1.0, "l2": 0.1, "sigma": 1.0, "df": 5.0, "huber_delta": 1.0},
}
_LOSS_CODE = {"logistic": 1, "huber": 2}


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
    hi = phi_lo
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        c_mid, phi_mid = at(mid)
        if phi_mid >= mid:
            lo, c_lo, phi_lo = mid, c_mid, phi_mid
        else:
            hi = mid
    alpha_eff = 0.5 - lo / (math.sqrt(c_lo.lam / c_lo.L) * c_lo.delta)
    return c_lo, phi_lo, alpha_eff


def _mc_sizes(preset):
    return pick(preset, smoke=dict(n_samples=4000, n_line=40_000, n_points=6, n_bisect=1),
                quick=dict(n_samples=100_000, n_line=1_000_000, n_points=16, n_bisect=3),
                full=dict(n_samples=400_000, n_line=4_000_000, n_points=32, n_bisect=5))


def _constants_unit(ctx, loss, key):
    """One unit: the loss's constants (rows per cluster with the centers' coordinates)."""
    setup = LOSS_SETUPS[loss]
    mc = _mc_sizes(ctx.preset)

    def compute():
        seed = int(ctx.rng(key, _LOSS_CODE[loss]).integers(2**31))
        c, phi, alpha_eff = theorem2_radius(
            loss, theta_star_of(setup["R"]), alpha0=ALPHA0, sigma=setup["sigma"], df=setup["df"],
            l2=setup["l2"], huber_delta=setup["huber_delta"], seed=seed, **mc)
        rows = []
        for j in range(K):
            row = {"loss": loss, "cluster": j, "lam": c.lam, "L": c.L, "eta2": c.eta2, "v2": c.v2,
                   "delta": c.delta, "radius": c.radius, "phi_radius": phi,
                   "alpha_eff": alpha_eff, "n_samples": c.n_samples, "n_line": c.n_line,
                   "n_points": c.n_points}
            row.update({f"center_{q}": float(c.centers[j, q]) for q in range(D)})
            rows.append(row)
        return pd.DataFrame(rows)

    df = ctx.unit(f"constants_{loss}", compute)
    centers = df.sort_values("cluster")[[f"center_{q}" for q in range(D)]].to_numpy()
    info = df.iloc[0].to_dict()
    return centers, info


def _ifca_kw(loss):
    s = LOSS_SETUPS[loss]
    # one numba thread: these calls are small, and under CPU contention a parallel kernel waits on
    # descheduled threads (several times slower); results do not depend on it
    return dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"], resample=True, trace=True,
                n_threads=1)


# ------------------------------------------------------------------------------ verdict rules


def t2_verdict(fit, p, lam, L, margin=0.0):
    """Theorem 2's rule: is the measured contraction factor at most ``1 - p lambda / (8 L)``
    (plus ``margin``)? Used by study T2 (:mod:`mixlinreg.theory.studies.t2`).

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


# ------------------------------------------------------------------------------ C2


def _c2_design(preset):
    return pick(preset,
                smoke=dict(T=12, seeds=2, m0=20, n_fixed=[10], m_levels=[10, 20],
                           n_levels=[5, 10], n_boot=200),
                quick=dict(T=20, seeds=8, m0=100, n_fixed=[10, 40],
                           m_levels=[20, 50, 100, 200, 400], n_levels=[5, 10, 20, 40, 80, 160],
                           n_boot=500),
                full=dict(T=20, seeds=16, m0=100, n_fixed=[10, 40],
                          m_levels=[20, 50, 100, 200, 400, 800],
                          n_levels=[5, 10, 20, 40, 80, 160], n_boot=1000))


def _c2_cells(des):
    cells = [(des["m0"], n) for n in des["n_levels"]]
    cells += [(m, n) for n in des["n_fixed"] for m in des["m_levels"]]
    return sorted(set(cells))


def _c2_unit(ctx, loss, m, n_prime, des, centers, cinfo):
    T = des["T"]
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    L, radius = cinfo["L"], cinfo["radius"]
    sizes = [m // 2, m - m // 2]

    def compute():
        rows = []
        for seed in range(des["seeds"]):
            gen = ctx.rng(_LOSS_CODE[loss], m, n_prime, seed)
            X, y, labels = draw_cluster_data(loss, ts, sizes, 2 * n_prime * T, gen,
                                             sigma=s["sigma"], df=s["df"])
            init = init_at_distance(centers, radius, 1, gen)
            res = ifca(X, y, init, 1.0 / L, n_iter=T, theta_star=centers, **_ifca_kw(loss))
            dj = np.stack([res.trace.dist[:, 0, j, j] for j in range(K)], axis=1)  # (T+1, k)
            lab = res.trace.labels[:T, 0]  # (T, m)
            mis_late = float((lab[T // 2:] != labels).mean())
            # With every machine correctly assigned at every iteration IFCA's update is the
            # oracle's (same blocks, step (1/L)(1/m) = (p_j/L)(1/m_j)): reuse it (checked in the
            # tests to agree to rounding); otherwise run the oracle.
            oracle_run = bool((lab != labels).any())
            if oracle_run:
                eo = []
                for j in range(K):
                    sel = labels == j
                    ro = ifca(X[sel], y[sel], init[:, j:j + 1], sizes[j] / m / L, n_iter=T,
                              theta_star=centers[j:j + 1], **_ifca_kw(loss))
                    eo.append(float(ro.trace.dist[T, 0, 0, 0]))
            else:
                eo = [float(v) for v in dj[T]]
            plateau = float(dj[T - 4:].mean() / dj[T - 9:T - 4].mean())
            rows.append({"loss": loss, "m": m, "n_prime": n_prime, "T": T, "seed": seed,
                         "err_ifca": float(dj[T].max()), "err_oracle": max(eo),
                         "err_ifca_mean": float(dj[T].mean()),
                         "err_oracle_mean": float(np.mean(eo)),
                         "mis_late": mis_late, "oracle_run": oracle_run,
                         "plateau_ratio": plateau, "L": L,
                         "lam": cinfo["lam"], "delta": cinfo["delta"]})
        return pd.DataFrame(rows)

    return ctx.unit(f"c2_{loss}_m={m}_n={n_prime}", compute)


def _nnls_boot(cells, n_boot, gen):
    """NNLS (a, b) on cell means of ``err_ifca`` and a bootstrap over seeds within cells."""
    groups = [g["err_ifca"].to_numpy() for _, g in cells]
    keys = [k for k, _ in cells]
    m = np.array([k[0] for k in keys], dtype=float)
    n = np.array([k[1] for k in keys], dtype=float)
    a, b = nnls_rate(m, n, np.array([g.mean() for g in groups]))
    boot = np.empty((n_boot, 2))
    for i in range(n_boot):
        means = np.array([g[gen.integers(0, g.size, g.size)].mean() for g in groups])
        boot[i] = nnls_rate(m, n, means)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    return Fit(a, min(lo[0], a), max(hi[0], a), len(keys)), Fit(b, min(lo[1], b),
                                                                 max(hi[1], b), len(keys))


def _fit_c2(table, des, ctx):
    out = {}
    for li, loss in enumerate(dict.fromkeys(table["loss"])):
        tl = table[table["loss"] == loss]
        ns = tl[(tl["m"] == des["m0"]) & tl["n_prime"].isin(des["n_levels"])]
        r = {"n_slope": loglog_slope(ns["n_prime"], ns["err_ifca"], n_boot=des["n_boot"] * 2,
                                     rng=ctx.rng(7, li, 0)),
             "n_slope_oracle": loglog_slope(ns["n_prime"], ns["err_oracle"],
                                            n_boot=des["n_boot"] * 2, rng=ctx.rng(7, li, 1)),
             "m_slopes": {}, "m_slopes_oracle": {}}
        mn = [(des["m0"], n) for n in des["n_levels"]]
        for q, nf in enumerate(des["n_fixed"]):
            ms = tl[(tl["n_prime"] == nf) & tl["m"].isin(des["m_levels"])]
            r["m_slopes"][nf] = loglog_slope(ms["m"], ms["err_ifca"], n_boot=des["n_boot"] * 2,
                                             rng=ctx.rng(7, li, 2 + 2 * q))
            r["m_slopes_oracle"][nf] = loglog_slope(ms["m"], ms["err_oracle"],
                                                    n_boot=des["n_boot"] * 2,
                                                    rng=ctx.rng(7, li, 3 + 2 * q))
            mn += [(m, nf) for m in des["m_levels"]]
        r["allowance"] = log_allowance([a for a, _ in mn], [b for _, b in mn])
        r["rules"] = c2_verdicts(r["n_slope"], list(r["m_slopes"].values()), r["allowance"])
        cells = list(tl.groupby(["m", "n_prime"]))
        r["a"], r["b"] = _nnls_boot(cells, des["n_boot"], ctx.rng(8, li))
        # IFCA over the oracle at the n' sweep's ends (ratio of means, bootstrap over seeds)
        for tag, nv in (("small", min(des["n_levels"])), ("large", max(des["n_levels"]))):
            c = ns[ns["n_prime"] == nv]
            r[f"ratio_{tag}"] = bootstrap(c[["err_ifca", "err_oracle"]].to_numpy(),
                                          lambda v: v[:, 0].mean() / v[:, 1].mean(),
                                          n_boot=des["n_boot"], rng=ctx.rng(9, li, nv))
            r[f"excess_{tag}"] = bootstrap((c["err_ifca"] - c["err_oracle"]).to_numpy(),
                                           n_boot=des["n_boot"], rng=ctx.rng(10, li, nv))
            r[f"n_{tag}"] = nv
        a, b = r["a"].est, r["b"].est
        r["crossover"] = (b / a) ** 2 * des["m0"] if a > 0 else math.inf
        # a bound looser than measured: the fitted b/n' term predicts an excess at the largest n'
        # that the IFCA - oracle difference does not show (misclassification decays faster)
        pred = b / r["n_large"]
        r["pred_excess_large"] = pred
        r["second_term_loose"] = bool(b == 0 or r["excess_large"].hi < 0.5 * pred)
        r["plateau"] = float(tl["plateau_ratio"].median())
        # measured split: cells where the IFCA - oracle excess (misclassification) is larger than
        # the oracle's error (statistical)
        cm = tl.groupby(["m", "n_prime"])[["err_ifca", "err_oracle"]].mean()
        big = cm[(cm["err_ifca"] - cm["err_oracle"]) > cm["err_oracle"]]
        r["excess_dominates"] = [(int(a), int(b)) for a, b in big.index]
        out[loss] = r
    return out


def _c2_figure(table, fits, des):
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    losses = list(fits)
    fig = Figure(figsize=(10.5, 4.0 * len(losses)))
    axes = fig.subplots(len(losses), 2, squeeze=False)
    for r, loss in enumerate(losses):
        tl = table[table["loss"] == loss]
        f = fits[loss]
        ax = axes[r, 0]
        ns = tl[(tl["m"] == des["m0"]) & tl["n_prime"].isin(des["n_levels"])]
        agg = ns.groupby("n_prime")[["err_ifca", "err_oracle"]].agg(["mean", "std", "count"])
        x = agg.index.to_numpy(dtype=float)
        for col, lab, mk in (("err_ifca", "IFCA", "o"), ("err_oracle", "oracle", "s")):
            se = agg[(col, "std")] / np.sqrt(agg[(col, "count")])
            ax.errorbar(x, agg[(col, "mean")], yerr=1.96 * se, fmt=mk + "-", ms=4, label=lab)
        xx = np.geomspace(x.min(), x.max(), 50)
        ax.loglog(xx, bounds.corollary2_rate(des["m0"], xx, a=f["a"].est, b=f["b"].est), "k--",
                  lw=0.8, label="NNLS a/sqrt(mn') + b/n'")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(des["n_levels"], [str(v) for v in des["n_levels"]])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("n'")
        ax.set_ylabel("final max_j error")
        ax.set_title(f"{loss}, m = {des['m0']}: slope {f['n_slope'].fmt(2)}", fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[r, 1]
        for nf in des["n_fixed"]:
            ms = tl[(tl["n_prime"] == nf) & tl["m"].isin(des["m_levels"])]
            agg = ms.groupby("m")[["err_ifca", "err_oracle"]].mean()
            line, = ax.loglog(agg.index, agg["err_ifca"], "o-", ms=4,
                              label=f"IFCA n'={nf}: slope {f['m_slopes'][nf].fmt(2)}")
            ax.loglog(agg.index, agg["err_oracle"], "s:", ms=3, color=line.get_color(),
                      label=f"oracle n'={nf}")
        ax.set_xticks(des["m_levels"], [str(v) for v in des["m_levels"]])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("m")
        ax.set_ylabel("final max_j error")
        ax.set_title(f"{loss}: error against m at fixed n'", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def run_c2(ctx: Context):
    """Corollary 2: the final error is ``O~(1/sqrt(m n) + 1/n)`` in ``m`` and ``n``.

    Final error of resampled IFCA (step ``1/L``, initialization at Theorem 2's radius, ``T``
    iterations, ``n = 2 n' T``) and of the known-cluster oracle for the two losses of
    :data:`LOSS_SETUPS`, against ``n'`` at fixed ``m`` and against ``m`` at two fixed ``n'``.
    Verdict from :func:`c2_verdicts` on the log-log slopes (bootstrap over seeds); the terms are
    sized by a non-negative least squares fit :func:`nnls_rate`.

    Parameters
    ----------
    ctx : Context

    Returns
    -------
    StudyResult

    References
    ----------
    Ghosh et al. (long version), Corollary 2 and the discussion after it, Section 5.2; proof in
    Appendix D.
    """
    des = _c2_design(ctx.preset)
    losses = ["logistic", "huber"]
    ctx.params = {"losses": {l: LOSS_SETUPS[l] for l in losses}, "d": D, "k": K,
                  "alpha0": ALPHA0, "mc": _mc_sizes(ctx.preset), **des}
    parts = []
    consts = {}
    for loss in losses:
        centers, info = _constants_unit(ctx, loss, 200)
        consts[loss] = info
        for m, n_prime in _c2_cells(des):
            parts.append(_c2_unit(ctx, loss, m, n_prime, des, centers, info))
    table = pd.concat(parts, ignore_index=True)
    table_path = ctx.write_table(table)
    fits = _fit_c2(table, des, ctx)
    fig_path = ctx.save_figure(_c2_figure(table, fits, des))

    rows, verdicts, loose = [], [], []
    for loss, f in fits.items():
        names = [f"n'-slope (m={des['m0']})"] + [f"m-slope (n'={nf})" for nf in des["n_fixed"]]
        bounds_txt = [f"<= -0.5 + {f['allowance']:.3f}"] + [f"<= 0 + {f['allowance']:.3f}"] * len(
            des["n_fixed"])
        fitsl = [f["n_slope"]] + list(f["m_slopes"].values())
        for name, bt, ft, v in zip(names, bounds_txt, fitsl, f["rules"]):
            rows.append({"loss": loss, "quantity": name + " IFCA", "estimate [95% CI]": ft.fmt(),
                         "rule": bt, "verdict": v})
        rows.append({"loss": loss, "quantity": f"n'-slope (m={des['m0']}) oracle",
                     "estimate [95% CI]": f["n_slope_oracle"].fmt(), "rule": "reference",
                     "verdict": ""})
        rows.append({"loss": loss, "quantity": "NNLS a, b of a/sqrt(mn') + b/n'",
                     "estimate [95% CI]": f"a = {f['a'].fmt()}, b = {f['b'].fmt()}",
                     "rule": "descriptive", "verdict": ""})
        rows.append({"loss": loss,
                     "quantity": f"IFCA/oracle at n'={f['n_small']}, n'={f['n_large']}",
                     "estimate [95% CI]": f"{f['ratio_small'].fmt()}; {f['ratio_large'].fmt()}",
                     "rule": "descriptive", "verdict": ""})
        verdicts += f["rules"]
        if f["second_term_loose"]:
            loose.append(loss)
    numbers = pd.DataFrame(rows)
    verdict = combine(verdicts)
    if verdict == HOLDS and loose:
        verdict = CAVEAT

    parts_txt = []
    for loss, f in fits.items():
        ms = ", ".join(f"{f['m_slopes'][nf].fmt(2)} at n' = {nf}" for nf in des["n_fixed"])
        cross = (f"the fitted 1/n' term is the larger for n' < {f['crossover']:.3g} at "
                 f"m = {des['m0']}" if np.isfinite(f["crossover"]) and f["b"].est > 0
                 else "no 1/n' term is fitted (b = 0)")
        dom = ", ".join(f"(m={a}, n'={b})" for a, b in f["excess_dominates"]) or "no cell"
        cross += f"; measured excess over the oracle larger than the oracle's error in {dom}"
        parts_txt.append(
            f"{loss}: n'-slope {f['n_slope'].fmt(2)} (oracle {f['n_slope_oracle'].fmt(2)}), "
            f"m-slopes {ms}; NNLS a = {f['a'].est:.3g}, b = {f['b'].est:.3g}: {cross}; IFCA/oracle "
            f"{f['ratio_small'].est:.2f} at n' = {f['n_small']} and {f['ratio_large'].est:.3f} at "
            f"n' = {f['n_large']}")
    allow_txt = ", ".join(f"{l}: {f['allowance']:.3f}" for l, f in fits.items())
    summary = ("Rules: n'-slope <= -1/2 and m-slope <= 0, each plus the log(mn') allowance "
               f"1/log(min mn') ({allow_txt}). " + ". ".join(parts_txt) + ".")
    if loose:
        summary += (" The bound's 1/n term is looser than measured for "
                    f"{', '.join(loose)}: at the largest n' the IFCA - oracle excess is below half "
                    "of the fitted b/n' (or no 1/n' term is fitted), i.e. the misclassification "
                    "term decays faster than 1/n'.")
    T = des["T"]
    t_cor = {l: float(bounds.corollary2_iterations(L=consts[l]["L"], p=0.5, lam=consts[l]["lam"],
                                                    Delta=consts[l]["delta"],
                                                    eps=float(table[table["loss"] == l]
                                                              ["err_ifca"].median())))
             for l in losses}
    tcor_txt = ", ".join(f"{l}: {t_cor[l]:.0f}" for l in losses)
    plat_txt = ", ".join(f"{l}: {fits[l]['plateau']:.2f}" for l in losses)
    caveats = [
        f"T = {T} iterations (n = 2 n' T) instead of Corollary 2's T = (8L/(p lambda)) "
        f"log(2 Delta/eps) ({tcor_txt} at the median error): the measured contraction is much "
        "faster than the bound's; the median ratio of the mean error over the last 5 iterates "
        f"to the 5 before is {plat_txt} (about 1: plateau reached).",
        "Constants, O~ factors and the failure probability delta of the corollary are unknown; "
        "only the shape in m and n' is checked (slopes), with the NNLS fit describing the terms.",
        "The oracle runs the same resampled gradient iterations with the true partition (step "
        "p_j/L on its cluster's machines = IFCA's update with correct labels); where no machine is "
        "misclassified the two coincide exactly.",
        "Errors are to the Monte Carlo population minimizers; their error (one-dimensional root "
        "search) is far below the smallest measured error.",
    ]
    return ctx.result(
        title="Corollary 2: error O~(1/sqrt(mn) + 1/n)",
        claim=("After T = (8L/(p lambda)) log(2 Delta/eps) iterations of resampled IFCA with step "
               "1/L, every ||theta_hat_j - theta*_j|| <= eps with eps = O~(1/sqrt(m n) + 1/n) in m "
               "and n "
               "(n and n' equal up to logs)."),
        verdict=verdict, summary=summary, numbers=numbers, caveats=caveats,
        table=table_path, figure=fig_path)
