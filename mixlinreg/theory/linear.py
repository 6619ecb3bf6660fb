"""The linear model of Section 5.1: its data, exact formulas and rules, and study C1.

**T1** (Theorem 1, eq. (1); the study record :mod:`mixlinreg.theory.studies.t1`) reads the
one-step contraction with :func:`t1_verdict` and :func:`t1_allowance` below. **C1** (Corollary 1)
measures the error floor IFCA reaches against ``sigma, d, m, n', p`` (log-log exponents against
those of ``(sigma/p) sqrt(d/(m n'))``), against the known-cluster least squares on the same data,
and the number of iterations it needs against ``log(Delta/eps)``.

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
import pandas as pd

from .._validation import check_float, check_int
from ..data import draw_rows
from ..geometry import simplex_centers  # noqa: F401 (re-exported: the studies' centres)
from ..stats import (Fit, bootstrap, linear_slope, loglog_slope, verdict_at_least,
                     verdict_at_most, verdict_equal)
from . import bounds
from ._study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Context, combine, pick

__all__ = [
    "simplex_centers", "cluster_labels", "linear_data", "one_step_factor", "stationary_rms",
    "oracle_rms", "oracle_theta", "ifca_oracle_ratio", "t1_allowance", "t1_verdict",
    "exponent_verdict", "p_exponent_verdict",
    "run_c1",
]

DELTA = 1.0          # separation of the centres in both studies
EXPONENT_MARGIN = 0.1
N_BOOT = 2000


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


def exponent_verdict(fit, predicted, margin=EXPONENT_MARGIN):
    """A measured log-log exponent against the bound's: :func:`verdict_equal` with ``margin``.

    >>> exponent_verdict(Fit(0.52, 0.47, 0.56, 20), 0.5)
    'holds'
    >>> exponent_verdict(Fit(0.52, 0.47, 0.56, 20), 1.0)
    'not supported'
    """
    return verdict_equal(fit, float(predicted), margin)


def p_exponent_verdict(fit, bound=-1.0, margin=EXPONENT_MARGIN):
    """Corollary 1's ``1/p``: error ``~ p^s`` must grow no faster than the bound as ``p`` shrinks.

    "not supported" if ``s < bound - margin`` (whole interval), "inconclusive" if the interval
    straddles that edge; otherwise "holds" when ``s`` also equals the bound within the margin, and
    "holds with a caveat" when it is clearly better (the bound is loose in ``p``).

    >>> p_exponent_verdict(Fit(-1.0, -1.05, -0.95, 20))
    'holds'
    >>> p_exponent_verdict(Fit(-0.5, -0.56, -0.44, 20))
    'holds with a caveat'
    >>> p_exponent_verdict(Fit(-1.6, -1.7, -1.5, 20))
    'not supported'

    References
    ----------
    Ghosh et al., long version, Corollary 1.
    """
    v = verdict_at_least(fit, bound, margin)
    if v != HOLDS:
        return v
    return HOLDS if verdict_equal(fit, bound, margin) == HOLDS else CAVEAT


def _exp_fit(values, rng) -> Fit:
    """Bootstrap (over replicates) of a mean of logs, returned on the original scale."""
    f = bootstrap(np.asarray(values, dtype=float), np.mean, n_boot=N_BOOT, rng=rng)
    return Fit(math.exp(f.est), math.exp(f.lo), math.exp(f.hi), f.n)


# ------------------------------------------------------------------------------------------------
# C1
# ------------------------------------------------------------------------------------------------

_C1_BASE = {"sigma": 0.1, "d": 20, "m": 96, "n_prime": 20, "k": 2}
_C1_LEVELS = {
    "sigma": (0.025, 0.05, 0.1, 0.2, 0.4),
    "d": (5, 10, 20, 40, 80),
    "m": (48, 96, 192, 384, 768),
    "n_prime": (5, 10, 20, 40, 80),
    "p": (2, 3, 4, 6, 8),   # k, equal clusters, p = 1/k
}
_C1_FACTORS = ("sigma", "d", "m", "n_prime", "p")


def _c1_levels(preset):
    if preset == "smoke":
        return {f: (lv[0], lv[2]) for f, lv in _C1_LEVELS.items()}
    return dict(_C1_LEVELS)


def _c1_point(factor, level):
    pt = dict(_C1_BASE)
    if factor == "p":
        pt["k"] = int(level)
    else:
        pt[factor] = level
    return pt


def _c1_unit(pt, n_iter, window, n_runs, alpha0, rng):
    """Plateau, oracle error and iterations to twice the plateau of one data set."""
    from ..data import init_close
    from ..ifca import ifca

    k, d, m, npr, sigma = pt["k"], pt["d"], pt["m"], pt["n_prime"], pt["sigma"]
    p = 1.0 / k
    theta_star = simplex_centers(k, d, DELTA, rng)
    labels = cluster_labels(m, [p] * k)
    X, y = linear_data(labels, theta_star, 2 * n_iter * npr, sigma, rng)
    init = init_close(theta_star, alpha0, n_runs, rng=rng, direction="random")
    res = ifca(X, y, init, 1.0 / (4.0 * p), n_iter=n_iter, resample=True, trace=True,
               theta_star=theta_star, dtype=np.float64, n_threads=1)
    err = np.einsum("trjj->trj", res.trace.dist)                  # (T+1, R, k)
    n_mis = (res.trace.labels != labels[None, None, :]).sum(-1)    # (T+1, R)
    last = err[n_iter - window + 1:]                               # last `window` iterates
    plateau_run = np.sqrt((last**2).mean(axis=(0, 2)))             # (R,)
    eps = float(np.sqrt((last**2).mean()))
    emax = err.max(axis=2)                                          # (T+1, R)
    hit = emax <= 2.0 * eps
    iters = np.where(hit.any(axis=0), hit.argmax(axis=0), -1)
    orc = oracle_theta(X, y, labels, k)
    orc_rms = float(np.sqrt(((orc - theta_star) ** 2).sum(axis=1).mean()))
    N = p * m * npr
    rows = []
    for r in range(n_runs):
        rows.append({"run": r, "plateau": float(plateau_run[r]), "plateau_unit": eps,
                     "final_err_max": float(emax[-1, r]), "iters_to_2eps": int(iters[r]),
                     "mis_window": int(n_mis[n_iter - window + 1:n_iter, r].sum()),
                     "mis_total": int(n_mis[:n_iter, r].sum()),
                     "diverged": bool(res.diverged[r]), "oracle_rms": orc_rms,
                     "stationary_pred": stationary_rms(0.25, sigma, d, N),
                     "oracle_pred": oracle_rms(sigma, d, 2 * n_iter * N)})
    return pd.DataFrame(rows)


def run_c1(ctx: Context):
    """Corollary 1: error floor ``(sigma/p) sqrt(d/(m n'))`` after ``2 + log(Delta/(4 eps))`` steps.

    One factor at a time around ``sigma = 0.1, d = 20, m = 96, n' = 20, k = 2`` (``Delta = 1``,
    ``rho = 100`` at the base; the smallest ``rho`` is ``Delta^2/0.4^2 = 6.25``), ``p = 1/k`` with
    equal clusters, step ``gamma = 1/(4p)``, ``alpha0 = 0.25`` random starts, resampled IFCA for
    ``T`` iterations (``n = 2 T n'``). Each (level, seed) is one data set (a unit). The plateau
    ``eps`` is the RMS error over the clusters and the last ``window`` iterates; its log-log slopes
    (stratified bootstrap over seeds) are compared with the exponents ``(1, 1/2, -1/2, -1/2, -1)``
    of the bound's first term (:data:`mixlinreg.theory.bounds.COROLLARY1_EXPONENTS`) and with the
    known-cluster least squares on all ``n`` rows (:func:`oracle_theta`, the estimate of
    :func:`mixlinreg.baselines.oracle` by the normal equations, several times cheaper). The second
    term ``exp(-c8 (rho/(rho+1))^2 n')`` is the misclassification term: the number of misclassified
    machines over the plateau window is reported (zero means that term contributes nothing). The
    iterations needed to reach ``2 eps`` are regressed on ``ln(Delta/eps)``.

    References
    ----------
    Ghosh et al., long version, Corollary 1 and the discussion after it, Section 5.1.
    """
    levels = _c1_levels(ctx.preset)
    n_seeds = pick(ctx.preset, smoke=2, quick=5, full=16)
    n_iter = pick(ctx.preset, smoke=12, quick=18, full=18)
    window = 6
    n_runs = 2
    alpha0 = 0.25
    ctx.params = {"base": _C1_BASE, "levels": {f: list(v) for f, v in levels.items()},
                  "n_seeds": n_seeds, "n_iter": n_iter, "window": window, "n_runs": n_runs,
                  "alpha0": alpha0, "delta": DELTA, "gamma": "1/(4p)", "n_boot": N_BOOT,
                  "margin": EXPONENT_MARGIN}
    parts = []
    for fi, factor in enumerate(_C1_FACTORS):
        for li, level in enumerate(levels[factor]):
            pt = _c1_point(factor, level)
            for s in range(n_seeds):
                lv_name = f"k{level}" if factor == "p" else f"{level:g}"
                df = ctx.unit(f"{factor}_{lv_name}_seed{s}",
                              lambda pt=pt, fi=fi, li=li, s=s: _c1_unit(
                                  pt, n_iter, window, n_runs, alpha0, ctx.rng(fi, li, s)))
                x = 1.0 / pt["k"] if factor == "p" else float(level)
                parts.append(df.assign(factor=factor, level=x, seed=s, sigma=pt["sigma"],
                                       d=pt["d"], m=pt["m"], n_prime=pt["n_prime"], k=pt["k"],
                                       p=1.0 / pt["k"], n_iter=n_iter))
    table = pd.concat(parts, ignore_index=True)
    table = table[["factor", "level", "seed", "run", "sigma", "d", "m", "n_prime", "k", "p",
                   "n_iter", "plateau", "plateau_unit", "final_err_max", "iters_to_2eps",
                   "mis_window", "mis_total", "diverged", "oracle_rms", "stationary_pred",
                   "oracle_pred"]]
    table_path = ctx.write_table(table)

    units = (table.groupby(["factor", "level", "seed"], sort=False)
             .agg(plateau=("plateau_unit", "first"), oracle=("oracle_rms", "first"),
                  stat_pred=("stationary_pred", "first"), orc_pred=("oracle_pred", "first"),
                  iters=("iters_to_2eps", "mean"), hit=("iters_to_2eps", "min"),
                  sigma=("sigma", "first"), d=("d", "first"), m=("m", "first"),
                  n_prime=("n_prime", "first"), p=("p", "first"))
             .reset_index())
    rows, verdicts, slopes = [], [], {}
    for fi, factor in enumerate(_C1_FACTORS):
        u = units[units["factor"] == factor]
        fit = loglog_slope(u["level"], u["plateau"], n_boot=N_BOOT, rng=ctx.rng(20_000, fi))
        ofit = loglog_slope(u["level"], u["oracle"], n_boot=N_BOOT, rng=ctx.rng(20_001, fi))
        pred = bounds.COROLLARY1_EXPONENTS[factor]
        opred = bounds.ORACLE_EXPONENTS[factor]
        v = p_exponent_verdict(fit, pred) if factor == "p" else exponent_verdict(fit, pred)
        verdicts.append(v)
        slopes[factor] = fit
        rows.append({"what": f"exponent of eps in {factor}", "estimate": fit.est, "lo": fit.lo,
                     "hi": fit.hi, "bound": pred, "oracle_exponent": opred,
                     "oracle_measured": ofit.fmt(), "verdict": v})

    # iterations to reach 2 eps against ln(Delta / eps)
    ok = units["hit"] >= 0
    x_it = np.log(DELTA / units.loc[ok, "plateau"].to_numpy())
    it_fit = linear_slope(x_it, units.loc[ok, "iters"].to_numpy(), rng=ctx.rng(20_002, 0))
    it_pred = 1.0 / math.log(2.0)
    v_it = verdict_at_most(it_fit, it_pred, EXPONENT_MARGIN)
    v_it_ln = verdict_at_most(it_fit, 1.0, EXPONENT_MARGIN)
    verdicts.append(v_it)
    rows.append({"what": "iterations to 2 eps per unit ln(Delta/eps)", "estimate": it_fit.est,
                 "lo": it_fit.lo, "hi": it_fit.hi, "bound": it_pred, "oracle_exponent": np.nan,
                 "oracle_measured": f"natural-log reading (slope <= 1): {v_it_ln}",
                 "verdict": v_it})
    t_meas = units.loc[ok, "iters"].to_numpy()
    eps2 = 2.0 * units.loc[ok, "plateau"].to_numpy()
    t_paper2 = 2.0 + np.log2(DELTA / (4.0 * eps2))
    t_paper_ln = 2.0 + np.log(DELTA / (4.0 * eps2))
    frac2 = float(np.mean(t_meas <= t_paper2))
    frac_ln = float(np.mean(t_meas <= t_paper_ln))
    n_missing = int((~ok).sum())

    # IFCA vs oracle and vs the exact correct-cluster floor
    ratio = units["plateau"] / units["oracle"]
    ratio_pred = units["stat_pred"] / units["orc_pred"]
    rel = np.log(ratio / ratio_pred)
    rel_fit = _exp_fit(rel.to_numpy(), ctx.rng(20_003, 0))
    floor_fit = _exp_fit(np.log(units["plateau"] / units["stat_pred"]).to_numpy(),
                         ctx.rng(20_004, 0))
    rows.append({"what": "IFCA plateau / oracle least squares (mean, range)",
                 "estimate": float(ratio.mean()), "lo": float(ratio.min()),
                 "hi": float(ratio.max()), "bound": float(ratio_pred.mean()),
                 "oracle_exponent": np.nan,
                 "oracle_measured": f"measured/predicted {rel_fit.fmt()}", "verdict": "info"})
    rows.append({"what": "IFCA plateau / exact correct-cluster floor",
                 "estimate": floor_fit.est, "lo": floor_fit.lo, "hi": floor_fit.hi, "bound": 1.0,
                 "oracle_exponent": np.nan, "oracle_measured": "", "verdict": "info"})
    c6 = units["plateau"] / bounds.statistical_term(sigma=units["sigma"], p=units["p"],
                                                     d=units["d"], m=units["m"],
                                                     n_prime=units["n_prime"])
    c6_by_p = c6.groupby(units["p"]).mean()
    rows.append({"what": "fitted c6 = eps / ((sigma/p) sqrt(d/(m n'))) (mean, range)",
                 "estimate": float(c6.mean()), "lo": float(c6.min()), "hi": float(c6.max()),
                 "bound": np.nan, "oracle_exponent": np.nan,
                 "oracle_measured": "by p: " + ", ".join(f"p={pp:.3g}: {cv:.3g}"
                                                          for pp, cv in c6_by_p.items()),
                 "verdict": "info"})
    base_N = 0.5 * _C1_BASE["m"] * _C1_BASE["n_prime"]
    d_lv = np.asarray(levels["d"], dtype=float)
    d_bend = abs(np.polyfit(np.log(d_lv), np.log([stationary_rms(0.25, 1.0, int(dd), base_N)
                                                  for dd in d_lv]), 1)[0] - 0.5)
    mis_window = int(table["mis_window"].sum())
    mis_total = int(table["mis_total"].sum())
    numbers = pd.DataFrame(rows)

    verdict = combine(verdicts)
    fs = {f: slopes[f].fmt() for f in _C1_FACTORS}
    v_by = dict(zip(_C1_FACTORS, verdicts[:len(_C1_FACTORS)]))
    v_p_oracle = verdict_equal(slopes["p"], bounds.ORACLE_EXPONENTS["p"], EXPONENT_MARGIN)
    p_txt = {HOLDS: "matches the bound's 1/p",
             CAVEAT: "is better than the bound's 1/p (the bound is loose in p)",
             NOT_SUPPORTED: "is worse than the bound's 1/p",
             INCONCLUSIVE: "cannot be told apart from the bound's 1/p edge"}[v_by["p"]]
    summary = (f"Plateau exponents, measured (bound; verdict): sigma {fs['sigma']} (1; "
               f"{v_by['sigma']}), d {fs['d']} (0.5; {v_by['d']}), m {fs['m']} (-0.5; "
               f"{v_by['m']}), n' {fs['n_prime']} (-0.5; {v_by['n_prime']}), p {fs['p']} (-1; "
               f"{v_by['p']}). The p exponent {p_txt}; against the known-cluster oracle's -0.5 "
               f"it is '{v_p_oracle}' (margin {EXPONENT_MARGIN:g}). Plateau / exact "
               "correct-cluster floor sigma sqrt(d/(3N-d-1)) (N = p m n', gamma p = 1/4) = "
               f"{floor_fit.fmt()}. "
               f"IFCA / oracle on all n rows = {ratio.mean():.3g} on average (predicted "
               f"sqrt((2TN-d-1)/(3N-d-1)) = {ratio_pred.mean():.3g} at T = {n_iter}: the paper's "
               f"log factor). Iterations to reach 2 eps grow by {it_fit.fmt()} per unit of "
               f"ln(Delta/eps) (1/ln 2 = {it_pred:.3g} for a factor 1/2 per step; {v_it}); the "
               f"count is within 2 + log2(Delta/(4 eps)) in {100 * frac2:.0f}% of the data sets "
               f"and within the natural-log reading 2 + ln(Delta/(4 eps)) in {100 * frac_ln:.0f}% "
               f"(slope <= 1: {v_it_ln}). Misclassified machines over the plateau windows: "
               f"{mis_window} (over all iterations: {mis_total}), so the exponential term plays "
               f"no part at the plateau{'' if mis_window == 0 else ' except in a few data sets'}.")
    caveats = [
        "The paper prints log without a base in T = 2 + log(Delta/(4 eps)); with the factor 1/2 "
        "of Theorem 1 it must be log2 (slope 1/ln 2 per unit of natural log); the natural-log "
        "reading is reported alongside.",
        "The plateau is the RMS over clusters and the last iterates of one data set, not the "
        "max over clusters of the corollary (the max adds a k-dependent factor that would "
        "confound the p exponent); the iteration count uses the max over clusters.",
        "p is varied only through equal clusters p = 1/k (k in 2..8) with gamma = 1/(4p); with "
        "unequal sizes gamma = c1/p breaks contraction of the largest cluster (see T1).",
        f"rho = Delta^2/sigma^2 >= {DELTA**2 / max(levels['sigma'])**2:.3g} everywhere, chosen "
        "so that the exponential term is negligible; the misclassification count in the summary "
        "says whether it was.",
        f"Exponent margin {EXPONENT_MARGIN:g}: the finite-sample factor (1 - (d+1)/(3N))^(-1/2) "
        f"of the exact floor bends the d slope by {d_bend:.2g} on this grid; the margin is the "
        "resolution at which power laws are told apart on 4- to 16-fold ranges.",
        "Constants c6, c7 are not known: only exponents are checked; the fitted c6 is reported.",
    ]
    if n_missing:
        caveats.append(f"{n_missing} data sets never reached 2 eps and are left out of the "
                       "iteration fit.")
    fig_path = ctx.save_figure(_c1_figure(units, slopes, it_fit, levels))
    return ctx.result(title="Corollary 1: error floor and iteration count",
                      claim="With gamma = c1/p, after T = 2 + log(Delta/(4 eps)) resampled IFCA "
                            "iterations every ||theta_j - theta*_j|| <= eps = c6 (sigma/p) "
                            "sqrt(d/(m n')) + c7 exp(-c8 (rho/(rho+1))^2 n'), near the "
                            "known-cluster rate sigma sqrt(d/(p m n' log(Delta/(4 eps)))).",
                      verdict=verdict, summary=summary, numbers=numbers, caveats=caveats,
                      table=table_path, figure=fig_path)


def _c1_figure(units, slopes, it_fit, levels):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 8.5))
    axes = fig.subplots(2, 3).ravel()
    names = {"sigma": "sigma", "d": "d", "m": "m", "n_prime": "n'", "p": "p = 1/k"}
    for ax, factor in zip(axes, _C1_FACTORS):
        u = units[units["factor"] == factor]
        ax.loglog(u["level"], u["plateau"], "o", color="C0", ms=3, alpha=0.5)
        ax.loglog(u["level"], u["oracle"], "s", color="C2", ms=3, alpha=0.5)
        med = u.groupby("level")[["plateau", "oracle", "stat_pred"]].median()
        ax.loglog(med.index, med["plateau"], "-", color="C0", label="IFCA plateau eps")
        ax.loglog(med.index, med["oracle"], "-", color="C2", label="oracle LS (all n rows)")
        ax.loglog(med.index, med["stat_pred"], ":", color="k", label="exact floor (g = 1/4)")
        x0 = float(np.exp(np.log(med.index.to_numpy()).mean()))
        y0 = float(np.exp(np.log(med["plateau"].to_numpy()).mean()))
        xs = np.array([med.index.min(), med.index.max()])
        e = bounds.COROLLARY1_EXPONENTS[factor]
        ax.loglog(xs, y0 * (xs / x0) ** e, "--", color="C3", label=f"bound shape x^{e:g}")
        ax.set(xlabel=names[factor], ylabel="error",
               title=f"{names[factor]}: slope {slopes[factor].fmt()}")
        ax.minorticks_off()
        ax.set_xticks(med.index.to_numpy())
        ax.set_xticklabels([f"{v:.3g}" for v in med.index])
        ax.legend(fontsize=7)
    ax = axes[5]
    ok = units["hit"] >= 0
    x = np.log(DELTA / units.loc[ok, "plateau"])
    ax.plot(x, units.loc[ok, "iters"], "o", ms=3, alpha=0.5)
    xs = np.array([x.min(), x.max()])
    b = float(units.loc[ok, "iters"].mean() - it_fit.est * x.mean())
    ax.plot(xs, b + it_fit.est * xs, "-", color="C0", label=f"fit: slope {it_fit.fmt()}")
    ax.plot(xs, 2 + np.log2(DELTA / (8 * np.exp(-xs))), "--", color="C3",
            label="2 + log2(Delta/(4*2eps))")
    ax.plot(xs, 2 + np.log(DELTA / (8 * np.exp(-xs))), ":", color="C1",
            label="2 + ln(Delta/(4*2eps))")
    ax.set(xlabel="ln(Delta / eps)", ylabel="iterations to reach 2 eps",
           title="iteration count")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
