"""Studies A0 and RS: how good must IFCA's initialization be?

**A0** (Assumption 1 of the long version and its discussion, Section 5.1; the abstract): for
``k = 2`` it suffices that every initial model be within ``(1/2 - alpha0) Delta`` of its truth with
``alpha0`` small, "slightly better than random". The study measures the success probability of IFCA
against ``alpha0`` for ``k = 2`` (the claim) and ``k = 4`` (context), with and without resampling,
for three placements of the initial models at distance exactly ``(1/2 - alpha0) Delta``:

* ``"random"``: uniform directions (:func:`mixlinreg.init_close`); in moderate dimension they are
  nearly orthogonal to the centers' differences, so the start is much better than the assumption's
  boundary suggests;
* ``"adversarial"``: each model points toward its nearest other center
  (:func:`mixlinreg.init_close`), the placement that minimizes the margin between the two closest
  models. For ``k = 2`` the two models are then only ``2 alpha0 Delta`` apart, so the *noise* of
  the loss difference a machine compares also shrinks with ``alpha0``: the first cluster estimate
  is not harder at small ``alpha0``;
* ``"mixed"`` (:func:`init_mixed`, defined here): model 0 in a random direction orthogonal to the
  centers, every other model toward its nearest other center. A machine of cluster 0 then compares
  two models whose expected losses differ by ``2 alpha0 Delta^2`` while the models are about
  ``0.7 Delta`` apart, so the first estimate is close to a coin flip at small ``alpha0``: the case
  where Lemma 1's ``alpha^2`` exponent is tight, the hardest start the assumption allows.

It does so in two settings (:data:`A0_SETTINGS`): an easy one where every run succeeds (the absolute
check: success at the smallest ``alpha0`` is high) and a hard one (``rho = Delta^2/sigma^2 = 2``,
``n' = 5``) where noisy cluster estimates make part of the runs fail even from ``alpha0 = 0.4``.
The verdict compares, per (setting, resample, direction) for ``k = 2``, the success at the
smallest ``alpha0`` with the success at the largest, paired by trial, with Newcombe's interval for
paired proportions (:func:`mixlinreg.stats.newcombe_paired`, :func:`a0_compare_verdict`): a small
``alpha0`` must not be materially (by more than 0.1) worse.

**RS** (Section 6, first paragraph; the abstract): "for linear models, random initialization with
a few restarts is sufficient to ensure convergence". At the settings of Figure 2 (a) and (b) (the
authors' protocol: Bernoulli initializations, three step sizes, 300 iterations, success if the mean
distance of the models to their nearest true parameter is below ``0.6 sigma + 0.001``) it measures,
per trial, how many of ``N = 10`` initializations succeed (with some step size), and from that the
probability that ``r`` restarts drawn without replacement contain a success,
``1 - C(N - s, r) / C(N, r)`` (:func:`restart_success`).

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (long
version): abstract; Assumption 1 and the discussion after Assumption 2 (Section 5.1); Lemma 1
(Appendix A); Section 6 (first paragraph) and Section 6.1 / Figure 2.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import as_generator, check_float, check_int
from ..data import init_close
from ..ifca import ifca
from ..metrics import dist_matched, dist_nearest, success_authors, success_text
from ..stats import Fit, newcombe_paired, wilson_interval
from ._study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Context, pick
from .linear import oracle_theta

__all__ = ["A0_ALPHAS", "A0_DIRECTIONS", "A0_SETTINGS", "A0_MARGIN", "simplex_centers",
           "init_mixed", "a0_inits", "known_cluster_gd", "a0_trial_rows",
           "a0_summary", "a0_cells", "a0_compare_verdict", "a0_verdict",
           "restart_success",
           "restart_curves", "rs_cell_stats", "rs_verdict", "run_a0", "run_rs"]

# ------------------------------------------------------------------------------------------ A0

#: closeness values of the A0 sweep (Assumption 1: 0 < alpha0 < 1/2)
A0_ALPHAS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4)
#: placements of the initial models at distance (1/2 - alpha0) Delta
A0_DIRECTIONS = ("random", "adversarial", "mixed")
#: success probability the claim is read as ("converges with high probability")
A0_TARGET = 0.9
#: an upper Wilson bound below this contradicts the claim
A0_FLOOR = 0.5
#: the paper's success threshold, in units of sigma (Section 6.1, text)
SUCCESS_SIGMAS = 0.6
#: a drop of success probability larger than this (small vs large alpha0) is "materially worse"
A0_MARGIN = 0.1
#: A0's settings: "easy" (every run succeeds: the absolute check) and "hard" (noisy cluster
#: estimates, so part of the resampled runs fail even from alpha0 = 0.4: the comparison)
A0_SETTINGS = {
    "easy": dict(d=40, n_prime=20, n_iter=10, m_per_cluster=20, sigma=0.25, delta=1.0),
    "hard": dict(d=40, n_prime=5, n_iter=10, m_per_cluster=16, sigma=0.7, delta=1.0),
}


def simplex_centers(gen, k, d, delta):
    """``k`` true parameters with every pairwise distance exactly ``delta``.

    ``theta*_j = (delta / sqrt 2) q_j`` with ``q_1..q_k`` orthonormal (QR of a Gaussian ``d x k``
    matrix), so ``||theta*_j - theta*_l|| = delta`` for ``j != l`` and
    ``||theta*_j|| = delta / sqrt 2``.

    Parameters
    ----------
    gen : numpy.random.Generator
    k : int
        Number of clusters, ``2 <= k <= d``.
    d : int
        Dimension.
    delta : float
        Separation ``Delta > 0``.

    Returns
    -------
    ndarray (k, d)

    References
    ----------
    Ghosh et al. (long version), Section 5.1: the separation ``Delta``, ``rho = Delta^2/sigma^2``.
    """
    k = check_int("k", k, low=2)
    d = check_int("d", d, low=k)
    delta = check_float("delta", delta, low=0.0, low_open=True)
    q, _ = np.linalg.qr(gen.standard_normal((d, k)))
    return (delta / math.sqrt(2.0)) * q.T


def _min_dist(theta):
    k = theta.shape[0]
    return min(float(np.linalg.norm(theta[j] - theta[l]))
               for j in range(k) for l in range(j + 1, k))


def init_mixed(theta_star, alpha0, gen):
    """The hardest start Assumption 1 allows: model 0 orthogonal, the others adversarial.

    ``theta_0^(0) = theta*_0 + (1/2 - alpha0) Delta w`` with ``w`` a uniformly random unit vector
    orthogonal to the span of the centers, and ``theta_j^(0)`` for ``j >= 1`` at the same distance
    from ``theta*_j`` in the direction of its nearest other center (lowest index on ties), as in
    ``init_close(..., direction="adversarial")``. Every model is within ``(1/2 - alpha0) Delta`` of
    its truth, so the assumption holds, but the machines of cluster 0 compare models whose expected
    losses differ by only ``2 alpha0 Delta^2`` (when a model ``j >= 1`` points at ``theta*_0``)
    while the models are far apart, so their empirical comparison is noisy (Lemma 1's worst case).

    Parameters
    ----------
    theta_star : array (k, d)
        Distinct true parameters, ``k >= 2``, and ``d > k`` (room for an orthogonal direction).
    alpha0 : float
        Closeness, in ``(0, 0.5)``.
    gen : numpy.random.Generator or seed

    Returns
    -------
    ndarray (k, d), float64

    References
    ----------
    Ghosh et al. (long version), Assumption 1 (Section 5.1) and Lemma 1 (Appendix A).
    """
    theta = np.asarray(theta_star, dtype=float)
    if theta.ndim != 2 or theta.shape[0] < 2 or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta_star must be a finite (k, d) array with k >= 2, got shape "
                         f"{theta.shape}")
    k, d = theta.shape
    if d <= k:
        raise ValueError(f"theta_star must have d > k for an orthogonal direction, got k={k}, "
                         f"d={d}")
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True, high_open=True)
    gen = as_generator(gen)
    init = init_close(theta, alpha0, 1, direction="adversarial", dtype=np.float64)[0]
    delta = _min_dist(theta)
    q, _ = np.linalg.qr(theta.T)  # orthonormal basis of the centers' span (d, k)
    w = gen.standard_normal(d)
    w -= q @ (q.T @ w)
    w /= np.linalg.norm(w)
    init[0] = theta[0] + (0.5 - alpha0) * delta * w
    return init


def a0_inits(theta_star, alphas, directions, gen):
    """Initial models for every (direction, alpha0) pair, in that order (direction-major).

    Returns
    -------
    init : ndarray (len(directions) * len(alphas), k, d)
    meta : DataFrame with columns ``direction``, ``alpha0`` (one row per run)
    """
    out, meta = [], []
    for direction in directions:
        for a in alphas:
            if direction == "mixed":
                out.append(init_mixed(theta_star, a, gen))
            elif direction in ("random", "adversarial"):
                out.append(init_close(theta_star, a, 1, rng=gen, direction=direction,
                                      dtype=np.float64)[0])
            else:
                raise ValueError(f"direction must be one of {A0_DIRECTIONS}, got {direction!r}")
            meta.append((direction, float(a)))
    return np.stack(out), pd.DataFrame(meta, columns=["direction", "alpha0"])


def _first_hit(dist_t, threshold):
    """First iteration index at which ``dist_t[:, r] <= threshold`` (NaN if never)."""
    hit = dist_t <= threshold
    first = np.argmax(hit, axis=0).astype(float)
    first[~hit.any(axis=0)] = np.nan
    return first


def known_cluster_gd(X, y, labels, theta_star, *, n_prime, n_iter, lr):
    """Final matched error of IFCA's resampled gradient steps when the clusters are known.

    The statistical floor of the resampled runs: the same step ``lr``, the same gradient blocks
    (iteration ``t`` uses rows ``[(2t + 1) n', (2t + 2) n')`` of every machine), the gradient of
    ``(x.theta - y)^2`` averaged over the rows of a block and summed over the machines of the
    cluster, divided by ``m`` (as in :func:`mixlinreg.ifca`), started from ``theta*`` itself and
    with every machine in its true cluster. Only the noise of the blocks moves the models, so its
    final distance is what a resampled run can reach at best with perfect cluster estimates.

    Parameters
    ----------
    X : array (m, n, d)
    y : array (m, n)
    labels : int array (m,)
        True clusters, values in ``0..k-1`` with ``k = len(theta_star)``.
    theta_star : array (k, d)
    n_prime : int
        Rows per block, ``2 n_iter n_prime <= n``.
    n_iter : int
    lr : float

    Returns
    -------
    float
        ``dist_matched`` of the final models (the mean over clusters of their distance).

    References
    ----------
    Ghosh et al. (long version), Algorithm 2 with resampling (Section 5); Theorem 1.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    theta_star = np.asarray(theta_star, dtype=float)
    labels = np.asarray(labels)
    m, n, d = X.shape
    n_prime = check_int("n_prime", n_prime, low=1)
    n_iter = check_int("n_iter", n_iter, low=0)
    if 2 * n_iter * n_prime > n:
        raise ValueError(f"n_prime must satisfy 2 n_iter n_prime <= n = {n}, got n_prime = "
                         f"{n_prime}, n_iter = {n_iter}")
    theta = theta_star.copy()
    for t in range(n_iter):
        blk = slice((2 * t + 1) * n_prime, (2 * t + 2) * n_prime)
        for j in range(theta.shape[0]):
            idx = np.flatnonzero(labels == j)
            Xb = X[idx, blk].reshape(-1, d)
            yb = y[idx, blk].reshape(-1)
            grad = (2.0 / n_prime) * (Xb.T @ (Xb @ theta[j] - yb)) / m
            theta[j] -= lr * grad
    return float(dist_matched(theta, theta_star))


def a0_trial_rows(gen, *, k, trial, d, n_prime, n_iter, m_per_cluster, sigma, delta, alphas,
                  directions):
    """One A0 trial: draw data and initializations, run IFCA with and without resampling.

    Data: ``theta*`` from :func:`simplex_centers` (all separations ``delta``), ``m = k *
    m_per_cluster`` machines with ``n = 2 n_iter n_prime`` rows ``x ~ N(0, I_d)``,
    ``y = <x, theta*_j> + sigma eps``. Step ``lr = 1 / (4 p) = k / 4`` (``gamma p = 1/4``: the
    expected update halves the error, Theorem 1's factor 1/2) in both modes; the resampled mode uses
    a fresh block of ``n_prime`` rows per estimate and per gradient, the other all ``n`` rows every
    iteration.

    Returns
    -------
    DataFrame
        One row per (resample, direction, alpha0) with the final matched and nearest distances,
        ``success`` (matched distance ``<= 0.6 sigma``), ``misclass0`` (fraction of machines put in
        a wrong cluster by the first estimate), ``t_hit`` (first iteration at which the matched
        distance is ``<= 0.6 sigma``), ``diverged`` and the known-cluster errors: the oracle on all
        rows (``oracle_all``), on one block of ``n_prime`` rows per machine (``oracle_block``) and
        the resampled gradient steps with known clusters (``oracle_gd``,
        :func:`known_cluster_gd`), the floor of the resampled runs.
    """
    m = k * m_per_cluster
    n = 2 * n_iter * n_prime
    theta_star = simplex_centers(gen, k, d, delta)
    X = gen.standard_normal((m, n, d))
    labels = np.repeat(np.arange(k), m_per_cluster)
    y = np.einsum("ind,id->in", X, theta_star[labels]) + sigma * gen.standard_normal((m, n))
    init, meta = a0_inits(theta_star, alphas, directions, gen)
    orc_all = float(dist_matched(oracle_theta(X, y, labels, k), theta_star))
    blk = slice(n_prime, 2 * n_prime)  # the first gradient block of the resampled run
    orc_blk = float(dist_matched(oracle_theta(X[:, blk], y[:, blk], labels, k), theta_star))
    lr = k / 4.0
    orc_gd = known_cluster_gd(X, y, labels, theta_star, n_prime=n_prime, n_iter=n_iter, lr=lr)
    thr = SUCCESS_SIGMAS * sigma
    frames = []
    for resample in (True, False):
        # one numba thread: many small calls, and results do not depend on the thread count
        res = ifca(X, y, init, lr, n_iter=n_iter, resample=resample, trace=True,
                   theta_star=theta_star, dtype=np.float64, n_threads=1)
        dm = dist_matched(res.theta, theta_star)
        dn = dist_nearest(res.theta, theta_star)
        mis0 = (res.trace.labels[0] != labels[None, :]).mean(axis=1)
        t_hit = _first_hit(res.trace.dist_matched()[:n_iter + 1], thr)
        f = meta.copy()
        f.insert(0, "resample", resample)
        f["dist_matched"] = dm
        f["dist_nearest"] = dn
        f["success"] = np.asarray(dm <= thr) & ~res.diverged
        f["misclass0"] = mis0
        f["t_hit"] = t_hit
        f["diverged"] = res.diverged
        frames.append(f)
    rows = pd.concat(frames, ignore_index=True)
    rows.insert(0, "trial", int(trial))
    rows.insert(0, "k", int(k))
    for name, value in (("m", m), ("n", n), ("n_prime", n_prime), ("d", d), ("T", n_iter),
                        ("sigma", sigma), ("delta", delta), ("lr", lr)):
        rows[name] = value
    rows["oracle_all"] = orc_all
    rows["oracle_block"] = orc_blk
    rows["oracle_gd"] = orc_gd
    return rows


def _setting_keys(rows):
    return (["setting"] if "setting" in rows.columns else []) + ["k", "resample", "direction"]


def a0_summary(rows, confidence=0.95):
    """Per (setting, k, resample, direction, alpha0): trials, successes, Wilson interval and
    diagnostics (``setting`` only when ``rows`` has that column)."""
    need = {"k", "resample", "direction", "alpha0", "trial", "success", "misclass0", "t_hit"}
    missing = need - set(rows.columns)
    if missing:
        raise ValueError(f"rows must have the columns {sorted(need)}, missing {sorted(missing)}")
    g = rows.groupby(_setting_keys(rows) + ["alpha0"], sort=True)
    out = g.agg(trials=("trial", "nunique"), successes=("success", "sum"),
                misclass0=("misclass0", "mean"), t_hit_median=("t_hit", "median")).reset_index()
    out["successes"] = out["successes"].astype(int)
    lo, hi = wilson_interval(out["successes"], out["trials"], confidence)
    out["p"] = out["successes"] / out["trials"]
    out["lo"] = lo
    out["hi"] = hi
    return out


def a0_cells(rows, confidence=0.95):
    """A0's tidy per-cell table: one row per (setting, k, resample, direction, alpha0).

    Besides the Wilson interval of the success probability, each cell holds its 2 x 2 table against
    the *largest* ``alpha0`` of its (setting, k, resample, direction), paired by trial (a trial's
    runs share the data): ``n_both``, ``n_ref_only`` (success only at the largest ``alpha0``),
    ``n_this_only``, ``n_neither``, and the difference ``diff = P(largest) - P(this)`` with
    Newcombe's paired interval ``diff_lo, diff_hi`` (:func:`mixlinreg.stats.newcombe_paired`). Also
    the mean first-estimate misclassification, the median and 90% quantile of the final matched
    distance in units of sigma, the median first hit of ``0.6 sigma`` and the number of diverged
    runs.

    Parameters
    ----------
    rows : DataFrame
        Per-run rows (:func:`a0_trial_rows`), with ``setting`` if there are several settings.

    Returns
    -------
    DataFrame
    """
    need = {"k", "resample", "direction", "alpha0", "trial", "success", "misclass0", "t_hit",
            "dist_matched", "sigma", "diverged"}
    missing = need - set(rows.columns)
    if missing:
        raise ValueError(f"rows must have the columns {sorted(need)}, missing {sorted(missing)}")
    keys = _setting_keys(rows)
    out = []
    for key, g in rows.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        wide = g.pivot_table(index="trial", columns="alpha0", values="success", aggfunc="first")
        if wide.isna().any().any():
            raise ValueError(f"cell {dict(zip(keys, key))} does not have every alpha0 in every "
                             f"trial: the pairing by trial needs a complete table")
        wide = wide.astype(bool)
        a_ref = float(wide.columns.max())
        ref = wide[a_ref].to_numpy()
        ds = g["dist_matched"].to_numpy(dtype=float) / g["sigma"].to_numpy(dtype=float)
        g = g.assign(_ds=ds)
        for a, h in g.groupby("alpha0", sort=True):
            this = wide[a].to_numpy()
            cnt = dict(n_both=int((ref & this).sum()), n_ref_only=int((ref & ~this).sum()),
                       n_this_only=int((~ref & this).sum()), n_neither=int((~ref & ~this).sum()))
            diff, dlo, dhi = newcombe_paired(cnt["n_both"], cnt["n_ref_only"],
                                             cnt["n_this_only"], cnt["n_neither"], confidence)
            succ = int(h["success"].sum())
            trials = int(h["trial"].nunique())
            lo, hi = wilson_interval(succ, trials, confidence)
            out.append(dict(zip(keys, key), alpha0=float(a), trials=trials, successes=succ,
                            p=succ / trials, lo=float(lo), hi=float(hi), alpha_ref=a_ref, **cnt,
                            diff=diff, diff_lo=dlo, diff_hi=dhi,
                            misclass0=float(h["misclass0"].mean()),
                            dist_med=float(np.median(h["_ds"])),
                            dist_q90=float(np.quantile(h["_ds"], 0.9)),
                            t_hit_median=float(h["t_hit"].median()),
                            diverged=int(h["diverged"].astype(bool).sum())))
    return pd.DataFrame(out)


def a0_compare_verdict(cells, k=2, margin=A0_MARGIN, confidence=0.95):
    """A0's comparison rule: is the smallest ``alpha0`` materially worse than the largest?

    For every (setting, resample, direction) of ``k``, the paired difference
    ``D = P(success | largest alpha0) - P(success | smallest alpha0)`` with Newcombe's interval
    ``[lo, hi]`` (recomputed from the counts).

    * "not supported" if some case has ``lo > margin``: a small ``alpha0`` is clearly worse;
    * "inconclusive" if no case is *informative* (the largest ``alpha0``'s success has a Wilson
      lower bound ``> margin``, so that a drop larger than ``margin`` could be seen at all), or if
      some case has ``hi > margin`` (the intervals do not exclude a material drop);
    * "holds" if every case has ``hi <= margin``.

    Parameters
    ----------
    cells : DataFrame
        With columns ``k, resample, direction, alpha0, n_both, n_ref_only, n_this_only,
        n_neither`` (and ``setting`` if any), as from :func:`a0_cells`: the counts of each cell
        against the largest ``alpha0`` of its (setting, k, resample, direction).
    k : int, default 2
    margin : float, default 0.1
        The drop in success probability that counts as "materially worse".

    Returns
    -------
    verdict : str
    info : dict
        ``cases`` (one row per case: the counts, ``p_ref``, ``p_ref_lo``, ``p_min``, ``diff``,
        ``lo``, ``hi``, ``worse``, ``equal``, ``informative``), ``alpha_min``, ``alpha_ref``,
        ``reason``.

    References
    ----------
    Ghosh et al. (long version), Assumption 1 and its discussion (Section 5.1): "slightly better
    than random" initialization suffices for k = 2.
    """
    need = {"k", "resample", "direction", "alpha0", "n_both", "n_ref_only", "n_this_only",
            "n_neither"}
    missing = need - set(cells.columns)
    if missing:
        raise ValueError(f"cells must have the columns {sorted(need)}, missing {sorted(missing)}")
    margin = check_float("margin", margin, low=0.0, high=1.0, low_open=True, high_open=True)
    sub = cells[cells["k"] == k]
    if sub.empty:
        raise ValueError(f"cells has no rows for k={k}")
    keys = (["setting"] if "setting" in sub.columns else []) + ["resample", "direction"]
    cases = []
    for key, g in sub.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        a_min, a_ref = float(g["alpha0"].min()), float(g["alpha0"].max())
        if a_min == a_ref:
            raise ValueError(f"case {dict(zip(keys, key))} has a single alpha0: nothing to compare")
        r = g[np.isclose(g["alpha0"], a_min)].iloc[0]
        cnt = [int(r[c]) for c in ("n_both", "n_ref_only", "n_this_only", "n_neither")]
        n = sum(cnt)
        diff, lo, hi = newcombe_paired(*cnt, confidence=confidence)
        s_ref = cnt[0] + cnt[1]
        p_lo, _ = wilson_interval(s_ref, n, confidence)
        cases.append(dict(zip(keys, key), alpha_min=a_min, alpha_ref=a_ref, trials=n,
                          n_both=cnt[0], n_ref_only=cnt[1], n_this_only=cnt[2], n_neither=cnt[3],
                          p_ref=s_ref / n, p_ref_lo=float(p_lo), p_min=(cnt[0] + cnt[2]) / n,
                          diff=diff, lo=lo, hi=hi))
    cases = pd.DataFrame(cases)
    cases["worse"] = cases["lo"] > margin
    cases["equal"] = cases["hi"] <= margin
    cases["informative"] = cases["p_ref_lo"] > margin
    info = dict(cases=cases, alpha_min=float(cases["alpha_min"].min()),
                alpha_ref=float(cases["alpha_ref"].max()), margin=margin)

    def name(r):
        parts = ([r["setting"]] if "setting" in cases.columns else []) + [
            "resampled" if bool(r["resample"]) else "no resampling", r["direction"]]
        return ", ".join(str(p) for p in parts)

    def listing(c, most=4):
        c = c.sort_values("hi", ascending=False)
        text = "; ".join(f"{name(r)} ({r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}])"
                         for _, r in c.head(most).iterrows())
        return text + (f"; and {len(c) - most} more" if len(c) > most else "")

    if cases["worse"].any():
        bad = cases[cases["worse"]]
        info["reason"] = ("the smallest alpha0 is clearly worse (difference lower bound > "
                          f"{margin:g}) in: " + listing(bad))
        return NOT_SUPPORTED, info
    if not cases["informative"].any():
        info["reason"] = ("no case is informative: the success at the largest alpha0 never has a "
                          f"Wilson lower bound above {margin:g}, so no drop could be seen")
        return INCONCLUSIVE, info
    if cases["equal"].all():
        info["reason"] = (f"every difference has an upper bound <= {margin:g} (largest "
                          f"{cases['hi'].max():+.3f}, {name(cases.loc[cases['hi'].idxmax()])})")
        return HOLDS, info
    und = cases[~cases["equal"]]
    info["reason"] = (f"the intervals do not exclude a drop larger than {margin:g} in "
                      f"{len(und)} of {len(cases)} cases: " + listing(und))
    return INCONCLUSIVE, info


def a0_verdict(summary, k=2, target=A0_TARGET, floor=A0_FLOOR):
    """A0's rule on the smallest ``alpha0`` of ``k`` (default 2).

    With resampling (the theory's setting), per direction: *holds* if the Wilson lower bound is
    ``>= target``, *below* if the upper bound is ``< target``, *unsure* otherwise.

    * "not supported" if some direction has its upper bound ``< floor``;
    * "holds" if every direction holds and, without resampling, no direction is below ``target``;
      "holds with a caveat" if every direction holds with resampling but some is below without;
    * "holds with a caveat" if some directions hold and the others are below (none unsure): it
      holds only for those directions;
    * "inconclusive" otherwise (some direction unsure, or none holds).

    Parameters
    ----------
    summary : DataFrame
        From :func:`a0_summary`.

    Returns
    -------
    verdict : str
    info : dict
        ``alpha0`` (the smallest), ``resampled`` and ``plain`` (per-direction rows of the summary),
        ``reason`` (one sentence).

    References
    ----------
    Ghosh et al. (long version), Assumption 1 and its discussion (Section 5.1).
    """
    sub = summary[summary["k"] == k]
    if sub.empty:
        raise ValueError(f"summary has no rows for k={k}")
    a_min = float(sub["alpha0"].min())
    sub = sub[np.isclose(sub["alpha0"], a_min)]
    rs = sub[sub["resample"].astype(bool)].set_index("direction")
    pl = sub[~sub["resample"].astype(bool)].set_index("direction")
    if rs.empty:
        raise ValueError("summary has no resampled rows: the verdict is read on resample=True")
    info = dict(alpha0=a_min, resampled=rs, plain=pl)
    hold = rs["lo"] >= target
    below = rs["hi"] < target
    if (rs["hi"] < floor).any():
        bad = ", ".join(rs.index[rs["hi"] < floor])
        info["reason"] = f"with resampling the success upper bound is below {floor:g} ({bad})"
        return NOT_SUPPORTED, info
    if hold.all():
        plain_below = pl.index[pl["hi"] < target].tolist() if not pl.empty else []
        if plain_below:
            info["reason"] = ("holds with resampling in every direction but not without resampling "
                              f"({', '.join(plain_below)})")
            return CAVEAT, info
        info["reason"] = f"the success lower bound is >= {target:g} in every direction"
        return HOLDS, info
    unsure = ~hold & ~below
    if hold.any() and not unsure.any():
        info["reason"] = (f"holds only for {', '.join(rs.index[hold])}; below {target:g} for "
                          f"{', '.join(rs.index[below])}")
        return CAVEAT, info
    undecided = ", ".join(rs.index[unsure]) or "none"
    info["reason"] = f"the Wilson intervals do not decide ({undecided} straddle {target:g})"
    return INCONCLUSIVE, info


def _rho(cfg):
    return cfg["delta"] ** 2 / cfg["sigma"] ** 2


def _a0_figure(summary, cases, settings, directions, margin):
    """Success against alpha0, one panel per (setting, k), lines per direction (color) and mode
    (line style), Wilson bands; bottom row: the paired differences of the verdict (k = 2) and the
    first estimate's misclassification rate (k = 2, resampled)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    names = [s for s in settings if s in set(summary["setting"])]
    ks = sorted(summary["k"].unique())
    ncol = max(2, len(ks))
    fig = Figure(figsize=(5.2 * ncol, 3.4 * (len(names) + 1)))
    axes = fig.subplots(len(names) + 1, ncol, squeeze=False)
    colors = dict(zip(A0_DIRECTIONS, ("tab:blue", "tab:red", "tab:purple")))
    markers = dict(zip(A0_DIRECTIONS, ("o", "s", "^")))
    sizes = dict(zip(A0_DIRECTIONS, (9, 6, 4)))
    styles = {True: "-", False: ":"}
    for i, name in enumerate(names):
        cfg = settings[name]
        for j, k in enumerate(ks):
            ax = axes[i, j]
            s = summary[(summary["setting"] == name) & (summary["k"] == k)]
            for resample in (True, False):
                for direction in directions:
                    c = s[(s["resample"].astype(bool) == resample)
                          & (s["direction"] == direction)].sort_values("alpha0")
                    if c.empty:
                        continue
                    # distinct marker sizes: lines on top of each other stay visible
                    ax.plot(c["alpha0"], c["p"], styles[resample], marker=markers.get(direction),
                            color=colors.get(direction), ms=sizes.get(direction, 4),
                            mfc="none" if direction == "random" else None, lw=1.2)
                    ax.fill_between(c["alpha0"], c["lo"], c["hi"], color=colors.get(direction),
                                    alpha=0.10 if resample else 0.05, lw=0)
            ax.axhline(A0_TARGET, ls="--", color="0.5", lw=0.8)
            ax.set_xscale("log")
            ax.set_ylim(-0.03, 1.03)
            n = int(s["trials"].max()) if len(s) else 0
            ax.set_title(f"{name}: k = {k}, sigma = {cfg['sigma']:g} (rho = {_rho(cfg):.3g}), "
                         f"n' = {cfg['n_prime']}, {cfg['m_per_cluster']} machines/cluster, "
                         f"{n} trials", fontsize=8.5)
            ax.set_ylabel(r"P(matched dist $\leq 0.6\sigma$)")
            ax.set_xlabel(r"$\alpha_0$ (init at distance $(1/2-\alpha_0)\Delta$)")
            ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colors[d], marker=markers[d], ms=sizes[d],
                      mfc="none" if d == "random" else None, label=d) for d in directions]
    handles += [Line2D([], [], color="0.3", ls="-", label="resampled (theory)"),
                Line2D([], [], color="0.3", ls=":", label="no resampling")]
    axes[0, 0].legend(handles=handles, loc="lower right", fontsize=7)

    # paired differences of the verdict
    ax = axes[-1, 0]
    c = cases.reset_index(drop=True)
    x = np.arange(len(c))
    for i, r in c.iterrows():
        color = colors.get(r["direction"], "k")
        ax.errorbar(x[i], r["diff"], yerr=[[r["diff"] - r["lo"]], [r["hi"] - r["diff"]]],
                    fmt=markers.get(r["direction"], "o"), color=color, capsize=3,
                    mfc="none" if not bool(r["resample"]) else color)
    ax.axhline(margin, ls="--", color="tab:red", lw=1)
    ax.axhline(0, color="0.4", lw=0.8)
    ax.axhline(-margin, ls=":", color="0.5", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['setting']}\n{'rs' if bool(r['resample']) else 'all'}"
                        for _, r in c.iterrows()], fontsize=7)
    a_min = cases["alpha_min"].min() if len(cases) else np.nan
    a_ref = cases["alpha_ref"].max() if len(cases) else np.nan
    ax.set_ylabel(f"P(alpha0 = {a_ref:g}) - P(alpha0 = {a_min:g})")
    ax.set_title(f"k = 2: paired difference, Newcombe 95% (dashed red: margin {margin:g})\n"
                 "rs = resampled (filled), all = no resampling (open)", fontsize=8.5)
    ax.grid(alpha=0.3)

    ax = axes[-1, 1]
    s = summary[(summary["k"] == 2) & summary["resample"].astype(bool)]
    for name, ls in zip(names, ("-", "--", "-.", ":")):
        for direction in directions:
            c2 = s[(s["setting"] == name) & (s["direction"] == direction)].sort_values("alpha0")
            ax.plot(c2["alpha0"], c2["misclass0"], ls, marker=markers.get(direction), ms=3,
                    color=colors.get(direction), label=f"{name}, {direction}")
    ax.set_xscale("log")
    ax.set_title("k = 2, resampled: machines misclassified by the first estimate", fontsize=9)
    ax.set_ylabel("fraction of machines")
    ax.set_xlabel(r"$\alpha_0$")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5, ncol=2)
    for ax in axes[-1, 2:]:
        ax.set_visible(False)
    fig.suptitle("A0: success against closeness alpha0 (Wilson 95% bands)")
    fig.tight_layout()
    return fig


def run_a0(ctx: Context):
    """Study A0: does a start only slightly better than random (small ``alpha0``) hurt IFCA?

    Two settings (:data:`A0_SETTINGS`), both with ``Delta = 1``, ``d = 40``, ``T = 10`` iterations
    (``n = 2 T n'`` rows per machine) and step ``gamma p = 1/4``:

    * ``"easy"``: ``sigma = 0.25`` (``rho = 16``), ``n' = 20``, 20 machines per cluster: every run
      succeeds, so it checks the absolute level (the former rule: success lower bound
      ``>= 0.9`` at the smallest ``alpha0`` with resampling, :func:`a0_verdict`);
    * ``"hard"``: ``sigma = 0.7`` (``rho = 2.04``), ``n' = 5``, 16 machines per cluster: the
      machines' cluster estimates are noisy at every iteration, so a part of the resampled runs fail
      even from ``alpha0 = 0.4`` while the known-cluster floor (:func:`known_cluster_gd`) stays
      below ``0.6 sigma``; a start that hurts would show here.

    The verdict compares, for ``k = 2``, the success at the smallest ``alpha0`` with the success at
    the largest, per (setting, resample, direction), paired by trial
    (:func:`a0_compare_verdict`), combined with the easy setting's absolute rule (the weaker of the
    two). ``k = 4`` is context. Trials are independent draws of centers, data and initializations
    (generator ``ctx.rng(k, trial)`` for the easy setting, ``ctx.rng(k, trial, 1)`` for the hard
    one), shared by all ``alpha0``, directions and both modes.

    References
    ----------
    Ghosh et al. (long version): abstract; Assumption 1 and its discussion (Section 5.1); Lemma 1.
    """
    from ._study import combine

    trials = pick(ctx.preset, smoke=3, quick=300, full=1000)
    settings = dict(A0_SETTINGS)
    seed_tag = {"easy": (), "hard": (1,)}
    ks = (2, 4)
    alphas = A0_ALPHAS
    directions = A0_DIRECTIONS
    chunk = 25
    margin = A0_MARGIN
    ctx.params = dict(settings=settings, trials=trials, ks=list(ks), alphas=list(alphas),
                      directions=list(directions), step="gamma p = 1/4 (lr = k/4)",
                      success=f"dist_matched <= {SUCCESS_SIGMAS} sigma", chunk=chunk,
                      seeds={s: ["k", "trial", *v] for s, v in seed_tag.items()},
                      margin=margin, target=A0_TARGET, floor=A0_FLOOR)

    def compute(name, k, start, stop):
        from threadpoolctl import threadpool_limits

        # one BLAS thread: the small Gram/matmul calls of a trial otherwise fight over the cores
        with threadpool_limits(limits=1, user_api="blas"):
            rows = pd.concat([a0_trial_rows(ctx.rng(k, t, *seed_tag[name]), k=k, trial=t,
                                            alphas=alphas, directions=directions,
                                            **settings[name])
                              for t in range(start, stop)], ignore_index=True)
        rows.insert(0, "setting", name)
        return rows

    frames = []
    for name in settings:
        for k in ks:
            for start in range(0, trials, chunk):
                stop = min(trials, start + chunk)
                frames.append(ctx.unit(f"{name}_k{k}_t{start:04d}-{stop:04d}",
                                       lambda n=name, k=k, a=start, b=stop: compute(n, k, a, b)))
    runs = pd.concat(frames, ignore_index=True)
    runs["resample"] = runs["resample"].astype(bool)
    runs["success"] = runs["success"].astype(bool)
    cells = a0_cells(runs)
    table_path = ctx.write_table(cells.round(6))
    summary = a0_summary(runs)
    ctx.write_table(summary, "_summary.csv")
    per_trial = runs.drop_duplicates(["setting", "k", "trial"])[
        ["setting", "k", "trial", "sigma", "oracle_all", "oracle_block", "oracle_gd"]].copy()
    for col in ("oracle_all", "oracle_block", "oracle_gd"):
        per_trial[col + "_over_sigma"] = (per_trial[col] / per_trial["sigma"]).round(4)
        per_trial = per_trial.drop(columns=col)
    ctx.write_table(per_trial, "_trials.csv")

    v_cmp, cinfo = a0_compare_verdict(cells, k=2, margin=margin)
    cases = cinfo["cases"]
    easy = summary[summary["setting"] == "easy"].drop(columns="setting")
    v_abs, ainfo = a0_verdict(easy, k=2)
    verdict = combine([v_cmp, v_abs])
    fig_path = ctx.save_figure(_a0_figure(summary, cases, settings, directions, margin))
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]

    # ---------------------------------------------------------------- deciding numbers
    rows = []
    for r in cases.itertuples(index=False):
        rows.append(dict(
            quantity=f"P(a0={a_ref:g}) - P(a0={a_min:g}), k=2", setting=r.setting,
            resample="yes" if r.resample else "no", direction=r.direction, estimate=r.diff,
            lo=r.lo, hi=r.hi, trials=r.trials,
            detail=(f"P({a_ref:g}) = {r.p_ref:.3f}, P({a_min:g}) = {r.p_min:.3f}; only "
                    f"{a_ref:g}: {r.n_ref_only}, only {a_min:g}: {r.n_this_only}")))
    floors = {}
    for name, cfg in settings.items():
        o = per_trial[(per_trial["setting"] == name) & (per_trial["k"] == 2)]
        v = o["oracle_gd_over_sigma"].to_numpy()
        floors[name] = v
        rows.append(dict(
            quantity="known-cluster resampled GD error / sigma, k=2", setting=name, resample="yes",
            direction="(known clusters)", estimate=float(v.mean()),
            lo=float(np.quantile(v, 0.05)), hi=float(np.quantile(v, 0.95)), trials=int(v.size),
            detail=(f"mean [5%, 95%] over trials; max {v.max():.3f}; <= {SUCCESS_SIGMAS:g} "
                    f"sigma in {(v <= SUCCESS_SIGMAS).mean():.3f} of trials; oracle on all rows "
                    f"{o['oracle_all_over_sigma'].mean():.3f}")))
    numbers = pd.DataFrame(rows)

    # ---------------------------------------------------------------- summary
    def p_cell(name, k, resample, direction, alpha):
        r = summary[(summary["setting"] == name) & (summary["k"] == k)
                    & (summary["resample"].astype(bool) == resample)
                    & (summary["direction"] == direction) & np.isclose(summary["alpha0"], alpha)]
        return r.iloc[0]

    def p_fmt(name, k, resample, direction, alpha):
        r = p_cell(name, k, resample, direction, alpha)
        return f"{r.successes}/{r.trials} = {r.p:.2f} [{r.lo:.2f}, {r.hi:.2f}]"

    def d_fmt(r):
        return f"{r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"

    def describe(name):
        cfg = settings[name]
        return (f"{name}: sigma = {cfg['sigma']:g} (rho = Delta^2/sigma^2 = {_rho(cfg):.3g}), "
                f"n' = {cfg['n_prime']} (n = {2 * cfg['n_iter'] * cfg['n_prime']}), "
                f"{cfg['m_per_cluster']} machines per cluster")

    hard_rs = cases[(cases["setting"] == "hard") & cases["resample"].astype(bool)]
    hard_txt = "; ".join(f"{r['direction']}: P({a_ref:g}) = {r['p_ref']:.2f}, P({a_min:g}) = "
                         f"{r['p_min']:.2f}, difference {d_fmt(r)}"
                         for _, r in hard_rs.iterrows())
    worst = cases.loc[cases["hi"].idxmax()]
    floor_txt = "; ".join(
        f"{n}: mean {v.mean():.3f} sigma, max {v.max():.3f} sigma, <= {SUCCESS_SIGMAS:g} sigma in "
        f"{(v <= SUCCESS_SIGMAS).mean():.1%} of the trials" for n, v in floors.items())
    floor_ok = all((v <= SUCCESS_SIGMAS).mean() >= 0.95 for v in floors.values())
    mis = summary[(summary["setting"] == "hard") & (summary["k"] == 2)
                  & summary["resample"].astype(bool) & (summary["direction"] == "mixed")]
    mis_min = float(mis[np.isclose(mis["alpha0"], a_min)]["misclass0"].iloc[0]) if len(mis) \
        else np.nan
    mis_ref = float(mis[np.isclose(mis["alpha0"], a_ref)]["misclass0"].iloc[0]) if len(mis) \
        else np.nan

    k4 = cells[(cells["k"] == 4) & cells["resample"].astype(bool)]
    k4_txt = []
    for name in settings:
        c = k4[k4["setting"] == name]
        if c.empty:
            continue
        cr = c[np.isclose(c["alpha0"], c["alpha_ref"])]
        cm = c[np.isclose(c["alpha0"], c["alpha0"].min())]
        k4_txt.append(f"{name}: P({a_ref:g}) {cr['p'].min():.2f}-{cr['p'].max():.2f}, "
                      f"P({a_min:g}) {cm['p'].min():.2f}-{cm['p'].max():.2f}, differences "
                      f"{cm['diff'].min():+.3f} to {cm['diff'].max():+.3f} over the directions")
    abs_txt = ", ".join(f"{d} {p_fmt('easy', 2, True, d, ainfo['alpha0'])}" for d in directions)
    verdict_expl = {
        HOLDS: "both parts hold",
        CAVEAT: "the comparison holds but the easy setting's absolute rule only with a caveat",
        INCONCLUSIVE: "at least one part does not decide",
        NOT_SUPPORTED: "at least one part contradicts the claim",
    }[verdict]
    summary_text = (
        f"Success = final one-to-one matched distance <= {SUCCESS_SIGMAS:g} sigma (the paper's "
        f"text rule) after T = 10 iterations, Delta = 1, d = 40, step gamma p = 1/4 in both "
        f"modes, {trials} independent trials per (setting, k), each trial's data shared by every "
        f"alpha0, direction and mode. Settings: {describe('easy')}; {describe('hard')}. "
        f"Rule (k = 2): in each of the {len(cases)} cases (setting x resample x direction) the "
        f"paired difference P(alpha0 = {a_ref:g}) - P(alpha0 = {a_min:g}) with Newcombe's 95% "
        f"interval; not supported if some lower bound is > {margin:g} (a small alpha0 clearly "
        f"worse), holds if every upper bound is <= {margin:g} and the easy setting's absolute rule "
        f"holds (Wilson lower bound >= {A0_TARGET:g} at alpha0 = {ainfo['alpha0']:g} with "
        f"resampling in every direction, not supported below {A0_FLOOR:g}), inconclusive if an "
        f"interval straddles {margin:g}; the verdict is the weaker of the two parts. "
        f"Comparison: {v_cmp} ({cinfo['reason']}). Hard setting, k = 2, resampled: {hard_txt}. "
        f"Largest upper bound over all cases: {d_fmt(worst)} ({worst['setting']}, "
        f"{'resampled' if bool(worst['resample']) else 'no resampling'}, {worst['direction']}). "
        + (f"The smallest alpha0 is detectably (lower bound > 0) but not materially worse in "
           f"{int((cases['lo'] > 0).sum())} of the {len(cases)} cases (largest difference "
           f"{cases['diff'].max():+.3f}). " if (cases["lo"] > 0).any() and v_cmp == HOLDS else "")
        + f"Absolute rule (easy, k = 2, resampled, alpha0 = {ainfo['alpha0']:g}): {v_abs} "
        f"({ainfo['reason']}; {abs_txt}). Overall: {verdict_expl}. "
        f"The start does matter at first: in the hard setting the first cluster estimate "
        f"(mixed placement, resampled) misclassifies {mis_min:.3f} of the machines at alpha0 = "
        f"{a_min:g} against {mis_ref:.3f} at {a_ref:g}. Known-cluster floor of the resampled runs "
        f"(same steps and blocks, true clusters): {floor_txt}"
        + (f", so the {SUCCESS_SIGMAS:g} sigma rule measures the cost of wrong cluster estimates, "
           f"not a statistical floor. " if floor_ok else
           f"; the floor itself misses {SUCCESS_SIGMAS:g} sigma in more than 5% of some "
           f"setting's trials, so failures there are partly statistical. ")
        + "Context, k = 4 (no claim in the paper), resampled: " + "; ".join(k4_txt) + "."
    )
    caveats = [
        f"The hard setting's failures come from noisy cluster estimates at every iteration (they "
        f"occur at alpha0 = {a_ref:g} too); the comparison asks whether a start at the "
        f"assumption's boundary adds to them. Its parameters were chosen by a few exploratory "
        f"runs so that P(alpha0 = {a_ref:g}) is clearly below 1 for k = 2 with resampling.",
        f"Paired by trial: the runs at alpha0 = {a_min:g} and {a_ref:g} of a trial share centers "
        f"and data (not the initial directions), so Newcombe's paired interval is used; the margin "
        f"{margin:g} for 'materially worse' is a choice of this study, not the paper's.",
    ]
    for name, cfg in settings.items():
        rho = _rho(cfg)
        req = ((rho + 1) / (a_min * rho)) ** 2 * math.log(2 * cfg["m_per_cluster"])
        caveats.append(
            f"Assumption 2 asks n' >~ ((rho + 1)/(alpha0 rho))^2 log m, whose constant-free value "
            f"at alpha0 = {a_min:g} is {req:.3g} in the {name} setting, against n' = "
            f"{cfg['n_prime']}: the runs are far outside the sufficient condition (up to its "
            "unknown constant), so they test whether it is needed, not the theorem's constants.")
    caveats += [
        "The 'mixed' placement (model 0 orthogonal, the others adversarial) is defined in this "
        "study, not by the paper: the adversarial placement of init_close keeps the two models "
        "2 alpha0 Delta apart, which makes the noise of the machines' comparison shrink with "
        "alpha0 as well, so it is not the hardest start for the first cluster estimate.",
        "Without resampling the step is the same gamma p = 1/4 (no step sweep as in Section 6); "
        "the hard setting then uses all n rows per machine and every run succeeds, so its "
        "no-resampling cases say little.",
        "k = 4 is context only; the paper's 'slightly better than random' remark is about k = 2. "
        "In the hard setting k = 4 fails from every start (the cluster estimates are too noisy "
        "with 3 competitors), so its differences carry no information.",
        "The table has one row per (setting, k, resample, direction, alpha0) with the counts "
        "paired against the largest alpha0; the per-run rows stay in the unit store, the "
        "per-trial oracle errors are in the _trials table.",
    ]
    return ctx.result(
        title="Assumption 1: slightly better than random suffices (k = 2)",
        claim=("For k = 2, IFCA converges from any initialization with "
               "||theta_j^(0) - theta*_j|| <= (1/2 - alpha0) Delta even for small alpha0, i.e. "
               "an initialization only slightly better than random suffices."),
        location="Assumption 1 and its discussion, Section 5.1; abstract",
        verdict=verdict, summary=summary_text, numbers=numbers, caveats=caveats,
        table=table_path, figure=fig_path)


# ------------------------------------------------------------------------------------------ RS

#: initializations per trial in the paper's protocol
RS_N_INIT = 10
#: restart success probability that counts as "ensures convergence"
RS_TARGET = 0.9
#: a single-init success at least this large is "substantial"
RS_P1_SUBSTANTIAL = 0.25
#: cells with fewer trials are context, not evidence
RS_MIN_TRIALS = 10
#: committed raw rows of the paper preset of Figure 2(a)
PANEL_A_STORE = (Path(__file__).resolve().parents[2] / "figures" / "stores"
                 / "fig2a-paper-03128fff867f")


def restart_success(s, n_init, r):
    """P(at least one success among ``r`` of ``n_init`` initializations drawn without replacement).

    ``1 - C(n_init - s, r) / C(n_init, r)`` when ``s`` of the ``n_init`` initializations succeed
    (``C(a, r) = 0`` for ``r > a``).

    Parameters
    ----------
    s : int or array of int
        Successful initializations, ``0 <= s <= n_init``.
    n_init : int
        Initializations per trial, ``>= 1``.
    r : int or array of int
        Restarts, ``1 <= r <= n_init``; broadcast against ``s``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> float(restart_success(1, 10, 1)), float(restart_success(1, 10, 10))
    (0.1, 1.0)
    >>> round(float(restart_success(3, 10, 2)), 6)  # 1 - C(7,2)/C(10,2) = 1 - 21/45
    0.533333

    References
    ----------
    Ghosh et al. (long version), Section 6 (random initialization with restarts), Section 6.1.
    """
    n_init = check_int("n_init", n_init, low=1)
    s_arr = np.asarray(s)
    r_arr = np.asarray(r)
    if not np.issubdtype(s_arr.dtype, np.integer) or np.any(s_arr < 0) or np.any(s_arr > n_init):
        raise ValueError(f"s must be integers in [0, {n_init}], got {s!r}")
    if not np.issubdtype(r_arr.dtype, np.integer) or np.any(r_arr < 1) or np.any(r_arr > n_init):
        raise ValueError(f"r must be integers in [1, {n_init}], got {r!r}")
    # (C(N, r) - C(N - s, r)) / C(N, r): one correctly rounded division of exact integers
    table = np.array([[(math.comb(n_init, ri) - math.comb(n_init - si, ri)) / math.comb(n_init, ri)
                       for ri in range(n_init + 1)] for si in range(n_init + 1)])
    out = table[s_arr, r_arr]
    return out if out.ndim else out[()]


def _r_needed(curve, target):
    """Smallest r (1-based) with ``curve[r-1] >= target``; ``len(curve) + 1`` if none."""
    ok = np.asarray(curve) >= target - 1e-12
    return np.where(ok.any(axis=-1), np.argmax(ok, axis=-1) + 1, ok.shape[-1] + 1)


def restart_curves(s, n_init, *, n_boot=2000, confidence=0.95, target=RS_TARGET, rng=None):
    """Mean over trials of :func:`restart_success`, r = 1..n_init, with a bootstrap over trials.

    Parameters
    ----------
    s : array of int (trials,)
        Successful initializations per trial.

    Returns
    -------
    curve : DataFrame
        ``r``, ``p`` (mean over trials), ``lo``, ``hi`` (percentile bootstrap over trials).
    r_needed : Fit
        Restarts needed for ``p >= target`` (``n_init + 1`` stands for "not within n_init"), with
        the percentile interval of the same quantity over the bootstrap replicates (integers).
    """
    s = np.asarray(s)
    if s.ndim != 1 or s.size < 1:
        raise ValueError(f"s must be a non-empty 1-D array of counts, got shape {s.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n_boot = check_int("n_boot", n_boot, low=100)
    r = np.arange(1, n_init + 1)
    P = restart_success(s[:, None], n_init, r[None, :])  # (trials, n_init)
    est = P.mean(axis=0)
    gen = as_generator(rng)
    idx = gen.integers(0, s.size, size=(n_boot, s.size))
    boot = P[idx].mean(axis=1)  # (n_boot, n_init)
    a = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [a, 1 - a], axis=0)
    curve = pd.DataFrame({"r": r, "p": est, "lo": np.minimum(lo, est), "hi": np.maximum(hi, est)})
    need = int(_r_needed(est, target))
    need_boot = _r_needed(boot, target)
    nlo = int(np.quantile(need_boot, a, method="lower"))
    nhi = int(np.quantile(need_boot, 1 - a, method="higher"))
    return curve, Fit(float(need), float(min(nlo, need)), float(max(nhi, need)), int(s.size))


def rs_cell_stats(per_init, *, n_boot=2000, target=RS_TARGET, seed_sequence=None):
    """Per (panel, R, sigma) cell: single-init and all-restart success, restarts for ``target``.

    Parameters
    ----------
    per_init : DataFrame
        One row per (panel, R, sigma, trial, init) with boolean ``ok`` (the initialization succeeded
        with some step size) and optionally ``ok_text``.
    seed_sequence : callable (int...) -> SeedSequence, optional
        Generator of each cell's bootstrap (keyed by the cell's position), for reproducibility.

    Returns
    -------
    cells : DataFrame
        ``panel, R, sigma, trials, n_init, s_mean, p1, p1_lo, p1_hi, pN, pN_lo, pN_hi`` (``pN``:
        fraction of trials with a success among all ``n_init``; Wilson interval), ``r_need``,
        ``r_need_lo``, ``r_need_hi`` (``n_init + 1`` = not within ``n_init``) and ``pN_text``.
    curves : DataFrame
        ``panel, R, sigma, r, p, lo, hi``.
    """
    need = {"panel", "R", "sigma", "trial", "init", "ok"}
    missing = need - set(per_init.columns)
    if missing:
        raise ValueError(f"per_init must have the columns {sorted(need)}, missing "
                         f"{sorted(missing)}")
    cells, curves = [], []
    keys = sorted(per_init.groupby(["panel", "R", "sigma"]).groups)
    for ci, (panel, R, sigma) in enumerate(keys):
        g = per_init[(per_init["panel"] == panel) & (per_init["R"] == R)
                     & (per_init["sigma"] == sigma)]
        counts = g.groupby("trial")["ok"].agg(["sum", "size"])
        n_init = int(counts["size"].iloc[0])
        if not (counts["size"] == n_init).all():
            raise ValueError(f"cell {(panel, R, sigma)} has trials with different numbers of "
                             f"initializations: {sorted(counts['size'].unique())}")
        s = counts["sum"].to_numpy().astype(int)
        rng = np.random.default_rng(seed_sequence(ci) if seed_sequence else ci)
        curve, r_need = restart_curves(s, n_init, n_boot=n_boot, target=target, rng=rng)
        p1 = curve.iloc[0]
        wins = int((s > 0).sum())
        wlo, whi = wilson_interval(wins, s.size)
        row = dict(panel=panel, R=float(R), sigma=float(sigma), trials=int(s.size), n_init=n_init,
                   s_mean=float(s.mean()), p1=float(p1.p), p1_lo=float(p1.lo), p1_hi=float(p1.hi),
                   pN=wins / s.size, pN_lo=float(wlo), pN_hi=float(whi), r_need=r_need.est,
                   r_need_lo=r_need.lo, r_need_hi=r_need.hi)
        if "ok_text" in g.columns:
            row["pN_text"] = float(g.groupby("trial")["ok_text"].any().mean())
        cells.append(row)
        curves.append(curve.assign(panel=panel, R=float(R), sigma=float(sigma)))
    curves = pd.concat(curves, ignore_index=True)[["panel", "R", "sigma", "r", "p", "lo", "hi"]]
    return pd.DataFrame(cells), curves


def rs_verdict(cells, *, target=RS_TARGET, p1_substantial=RS_P1_SUBSTANTIAL,
               min_trials=RS_MIN_TRIALS):
    """RS's rule on the per-cell statistics of :func:`rs_cell_stats`.

    Only cells with at least ``min_trials`` trials are evidence (the others are context). A cell
    *holds* when its ``n_init``-restart success is ``>= target`` and the restarts needed to reach
    ``target`` have an upper bound ``<= n_init``. A cell *contradicts* when its single-init success
    is substantial (``p1 >= p1_substantial``) and its ``n_init``-restart success has a Wilson upper
    bound ``< target``: restarts do not help where they should. Per (panel, sigma), ``R*`` is the
    smallest R from which every cell holds.

    * "not supported" if some cell contradicts;
    * "holds" if every cell holds;
    * "holds with a caveat" if every (panel, sigma) has an ``R*`` (it holds above a separation);
    * "inconclusive" otherwise (no evidence cell, or a (panel, sigma) where even the largest R
      does not hold).

    Returns
    -------
    verdict : str
    info : dict
        ``cells`` (with ``evidence``, ``holds``, ``contradicts`` columns), ``r_star``
        ({(panel, sigma): R* or None}), ``reason``.

    References
    ----------
    Ghosh et al. (long version), Section 6, first paragraph.
    """
    need = {"panel", "R", "sigma", "trials", "n_init", "p1", "pN", "pN_hi", "r_need_hi"}
    missing = need - set(cells.columns)
    if missing:
        raise ValueError(f"cells must have the columns {sorted(need)}, missing {sorted(missing)}")
    c = cells.copy()
    c["evidence"] = c["trials"] >= min_trials
    c["holds"] = c["evidence"] & (c["pN"] >= target) & (c["r_need_hi"] <= c["n_init"])
    c["contradicts"] = c["evidence"] & (c["p1"] >= p1_substantial) & (c["pN_hi"] < target)
    info = dict(cells=c, r_star={})
    ev = c[c["evidence"]]
    if ev.empty:
        info["reason"] = f"no cell has {min_trials} trials or more"
        return INCONCLUSIVE, info
    if c["contradicts"].any():
        bad = c[c["contradicts"]]
        info["reason"] = ("single-init success is substantial but 10 restarts stay below "
                          f"{target:g} at " + "; ".join(f"panel {r.panel}, R = {r.R:g}, sigma = "
                                                        f"{r.sigma:g}" for r in bad.itertuples()))
        return NOT_SUPPORTED, info
    for (panel, sigma), g in ev.groupby(["panel", "sigma"]):
        g = g.sort_values("R")
        ok = g["holds"].to_numpy()
        tail = np.flatnonzero(~ok)
        r_star = None if ok.size == 0 or not ok[-1] else float(g["R"].iloc[tail[-1] + 1 if tail.size
                                                                            else 0])
        info["r_star"][(panel, float(sigma))] = r_star
    if ev["holds"].all():
        info["reason"] = "every cell reaches the target within the restarts"
        return HOLDS, info
    if all(v is not None for v in info["r_star"].values()):
        info["reason"] = "it holds from some separation R on in every (panel, sigma)"
        return CAVEAT, info
    none = [k for k, v in info["r_star"].items() if v is None]
    info["reason"] = ("even the largest R does not decide at " +
                      "; ".join(f"panel {p}, sigma = {s:g}" for p, s in none))
    return INCONCLUSIVE, info


def _reduce_runs(rows, panel, success_plus):
    """Per (cell, trial, init): did some step size succeed (authors' rule; paper's text rule)?"""
    df = rows.copy()
    df["ok"] = success_authors(df["dist_nearest"].to_numpy(dtype=float),
                               df["sigma"].to_numpy(dtype=float), plus=success_plus)
    df["ok_text"] = success_text(df["dist_matched"].to_numpy(dtype=float),
                                 df["sigma"].to_numpy(dtype=float))
    keys = ["m", "n", "d", "k", "R", "sigma", "trial", "init"]
    out = df.groupby(keys).agg(ok=("ok", "any"), ok_text=("ok_text", "any"),
                               best_dist_nearest=("dist_nearest", "min"),
                               steps_diverged=("diverged", "sum"), steps=("step", "size"))
    out = out.reset_index()
    out.insert(0, "panel", panel)
    return out


def _panel_experiment(name, preset, grid_over, protocol_over):
    from ..harness.config import load_config

    exp = load_config(name, preset)
    grid = dict(exp.grid, **grid_over)
    protocol = dict(exp.protocol, **protocol_over)
    return dataclasses.replace(exp, grid=grid, protocol=protocol)


def _compute_panel(exp, trial, panel):
    from ..harness.config import Unit
    from ..harness.run import run_unit

    (m, n, d, k), = exp.groups()
    unit = Unit(m, n, d, k, trial, tuple(exp.cells()))
    rows, _ = run_unit(exp, unit)
    return _reduce_runs(rows, panel, exp.protocol["success_plus"])


def _rs_figure(curves, cells):
    import matplotlib as mpl
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = sorted(curves["panel"].unique())
    fig = Figure(figsize=(6 * len(panels), 4.4))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    Rs = sorted(curves["R"].unique())
    cmap = mpl.colormaps["viridis"]
    color = {R: cmap(i / max(1, len(Rs) - 1) * 0.9) for i, R in enumerate(Rs)}
    styles = ["-", "--", "-.", ":"]
    sig_all = sorted(curves["sigma"].unique())
    for ax, panel in zip(axes, panels):
        cp = curves[curves["panel"] == panel]
        for (R, sigma), g in cp.groupby(["R", "sigma"]):
            g = g.sort_values("r")
            ax.plot(g["r"], g["p"], styles[sig_all.index(sigma) % 4], color=color[R], marker="o",
                    ms=3)
            ax.fill_between(g["r"], g["lo"], g["hi"], color=color[R], alpha=0.08, lw=0)
        handles = [Line2D([], [], color=color[R], marker="o", ms=3, label=f"R = {R:g}")
                   for R in sorted(cp["R"].unique())]
        handles += [Line2D([], [], color="0.3", ls=styles[sig_all.index(sg) % 4],
                           label=f"sigma = {sg:g}") for sg in sorted(cp["sigma"].unique())]
        ntr = cells[cells["panel"] == panel]["trials"]
        handles.append(Line2D([], [], ls="", label=f"{ntr.min()}-{ntr.max()} trials per cell"
                              if ntr.min() != ntr.max() else f"{ntr.min()} trials per cell"))
        ax.axhline(RS_TARGET, ls="--", color="0.4", lw=1)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("restarts r (Bernoulli initializations, step size swept)")
        ax.set_ylabel("P(some restart succeeds), authors' rule")
        ax.set_title(f"Figure 2({panel}) settings")
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=7, loc="lower right")
    fig.suptitle("RS: success within r restarts (mean over trials, bootstrap 95% bands)")
    return fig


def run_rs(ctx: Context):
    """Study RS: how many random restarts IFCA needs at the settings of Figure 2 (a) and (b).

    Panel (a): the committed raw rows of the paper preset (``figures/stores/fig2a-paper-*``, exact
    protocol, no early stop), all 20 (R, sigma) cells; if they are absent, a few cells are computed.
    Panel (b): computed with the harness (:func:`mixlinreg.harness.run.run_unit`) at a few cells,
    the paper's protocol with the validated early stop (``tol = 1e-7``).

    References
    ----------
    Ghosh et al. (long version): abstract; Section 6, first paragraph; Section 6.1, Figure 2.
    """
    preset = ctx.preset
    files = []
    if (PANEL_A_STORE / "manifest.json").exists():
        from ..harness.store import ResultStore

        store_a = ResultStore.open(PANEL_A_STORE)  # proven units only (damaged ones warn)
        files = [store_a.unit_path(u) for u in sorted(store_a.done())]
    a_stored = bool(files)
    if a_stored:
        files = files[:pick(preset, smoke=3, quick=len(files), full=len(files))]
    seed_a = int(ctx.seed_sequence(1).generate_state(1)[0])
    seed_b = int(ctx.seed_sequence(2).generate_state(1)[0])
    early = dict(early_stop=True, tol=1e-7)
    exp_b = _panel_experiment(
        "fig2b", "smoke" if preset == "smoke" else "paper",
        dict(R=pick(preset, smoke=[1.0], quick=[0.5], full=[0.25, 0.5]), sigma=[0.1]),
        dict(trials=pick(preset, smoke=2, quick=3, full=10), n_init=RS_N_INIT, seed=seed_b,
             **early))
    exp_a = None
    if not a_stored:
        exp_a = _panel_experiment(
            "fig2a", "smoke" if preset == "smoke" else "paper",
            dict(R=[0.25, 0.5, 1.0], sigma=[0.1]),
            dict(trials=pick(preset, smoke=2, quick=3, full=10), n_init=RS_N_INIT, seed=seed_a,
                 **early))
    ctx.params = dict(
        panel_a=(dict(source="figures/stores/" + PANEL_A_STORE.name, files=[f.name for f in files])
                 if a_stored else dict(source="computed", experiment=exp_a.canonical())),
        panel_b=exp_b.canonical(), target=RS_TARGET, p1_substantial=RS_P1_SUBSTANTIAL,
        min_trials=RS_MIN_TRIALS, n_boot=2000)

    frames = []
    if a_stored:
        manifest = json.loads((PANEL_A_STORE / "manifest.json").read_text())
        plus_a = float(manifest["config"]["protocol"]["success_plus"])
        if plus_a != exp_b.protocol["success_plus"]:
            raise ValueError(f"panel (a) rows use success_plus = {plus_a}, panel (b) "
                             f"{exp_b.protocol['success_plus']}: the summary assumes one rule")
        for f in files:
            def load(f=f):
                return _reduce_runs(pd.read_csv(f), "a", plus_a)
            frames.append(ctx.unit(f"a_{f.stem}", load))
    else:
        for t in range(exp_a.protocol["trials"]):
            frames.append(ctx.unit(f"a_computed_t{t:04d}",
                                   lambda t=t: _compute_panel(exp_a, t, "a")))
    for t in range(exp_b.protocol["trials"]):
        frames.append(ctx.unit(f"b_t{t:04d}", lambda t=t: _compute_panel(exp_b, t, "b")))
    per_init = pd.concat(frames, ignore_index=True)
    table_path = ctx.write_table(per_init)

    cells, curves = rs_cell_stats(per_init, n_boot=2000,
                                  seed_sequence=lambda ci: ctx.seed_sequence(9, ci))
    verdict, info = rs_verdict(cells)
    c = info["cells"]
    ctx.write_table(c, "_cells.csv")
    ctx.write_table(curves, "_curves.csv")
    fig_path = ctx.save_figure(_rs_figure(curves, c))

    def fmt_need(r):
        n = int(r.n_init)
        f = lambda v: f">{n}" if v > n else f"{int(v)}"  # noqa: E731
        return f"{f(r.r_need)} [{f(r.r_need_lo)}, {f(r.r_need_hi)}]"

    show = c[(c["panel"] != "a") | c["sigma"].isin([0.1, 0.4])]
    numbers = pd.DataFrame({
        "panel": show["panel"], "R": show["R"], "sigma": show["sigma"], "trials": show["trials"],
        "P(1 init)": [f"{r.p1:.2f} [{r.p1_lo:.2f}, {r.p1_hi:.2f}]" for r in show.itertuples()],
        "P(10 inits)": [f"{r.pN:.2f} [{r.pN_lo:.2f}, {r.pN_hi:.2f}]" for r in show.itertuples()],
        "restarts for 0.9": [fmt_need(r) for r in show.itertuples()],
        "evidence": np.where(show["evidence"], "yes", "context"),
    }).reset_index(drop=True)

    ev = c[c["evidence"]]
    held = ev[ev["holds"]]
    parts = []
    for (panel, sigma), r_star in sorted(info["r_star"].items()):
        parts.append(f"panel {panel}, sigma = {sigma:g}: "
                     + (f"R >= {r_star:g}" if r_star is not None else "no R"))
    worst_need = held.loc[held["r_need"].idxmax()] if len(held) else None
    ctx_cells = c[~c["evidence"]]
    b = c[c["panel"] == "b"]
    text_note = ""
    if "pN_text" in c.columns and len(held):
        pos = held[held["sigma"] > 0]
        if len(pos):
            text_note = (f" Under the paper's text rule (matched distance <= 0.6 sigma) the "
                         f"10-restart success at those cells with sigma > 0 is at least "
                         f"{pos['pN_text'].min():.2f}.")
    summary_text = (
        f"An initialization (theta_j^(0) ~ Bernoulli(0.5)^d) succeeds if one of the step sizes "
        f"gives mean distance to the nearest true parameter < 0.6 sigma + "
        f"{exp_b.protocol['success_plus']:g} (the authors' rule of Figure 2 a, b); with s of "
        f"N = {RS_N_INIT} initializations successful in a trial, r "
        f"restarts succeed with probability 1 - C(N - s, r)/C(N, r), averaged over trials "
        f"(bootstrap over trials). Panel (a): "
        + (f"{c[c['panel'] == 'a']['trials'].max()} committed paper-preset trials x "
           f"{int((c['panel'] == 'a').sum())} cells" if a_stored else
           f"{c[c['panel'] == 'a']['trials'].max()} computed trials (stored rows absent)")
        + f"; panel (b): {b['trials'].max() if len(b) else 0} computed trials at R in "
        f"{sorted(b['R'].unique().tolist())}, sigma = 0.1. Rule: evidence cells have >= "
        f"{RS_MIN_TRIALS} trials; a cell holds if 10 restarts give >= {RS_TARGET:g} and the "
        f"restarts needed for {RS_TARGET:g} have an upper bound <= 10; not supported if a cell "
        f"with single-init success >= {RS_P1_SUBSTANTIAL:g} stays below {RS_TARGET:g} (Wilson "
        f"upper bound) with 10 restarts. "
        + (f"{len(held)} of {len(ev)} evidence cells hold. " if len(ev) else "")
        + (f"The most restarts needed where it holds: {fmt_need(worst_need)} (panel "
           f"{worst_need.panel}, R = {worst_need.R:g}, sigma = {worst_need.sigma:g}, single-init "
           f"success {worst_need.p1:.2f}). " if worst_need is not None else "")
        + ("Where it holds: " + "; ".join(parts) + ". " if parts else "")
        + f"{info['reason'][0].upper()}{info['reason'][1:]}." + text_note
        + (" Context cells (< " + str(RS_MIN_TRIALS) + " trials): "
           + "; ".join(f"panel {r.panel}, R = {r.R:g}, sigma = {r.sigma:g}: P(1) = {r.p1:.2f}, "
                       f"P(10) = {r.pN:.2f}, restarts for {RS_TARGET:g}: {fmt_need(r)} "
                       f"({r.trials} trials)" for r in ctx_cells.itertuples())
           + "." if 0 < len(ctx_cells) <= 6 else
           f" {len(ctx_cells)} cells have < {RS_MIN_TRIALS} trials (context only)."
           if len(ctx_cells) else "")
    )
    caveats = [
        "A restart is one Bernoulli initialization with the paper's three step sizes swept "
        "(3 runs); 10 restarts are 30 runs, as in the paper's protocol.",
        "The authors' rule counts two models on the same true parameter as success (nearest, not "
        "matched, distance); at sigma = 0 its threshold is 0.001.",
        "Restarts are drawn without replacement from the 10 initializations actually run in each "
        "trial, so r = 10 is the paper's per-trial success and r < 10 is interpolated.",
        "Trials whose 10 initializations all fail cap the restart curve below 1: more restarts of "
        "the same kind would not fix those data draws at small R.",
    ]
    if a_stored:
        caveats.append("Panel (a) rows come from the committed paper-preset store (seed 20201 of "
                       "the fig2a config, exact 300 iterations); they do not change with --seed.")
    caveats.append("Panel (b) uses the validated early stop (tol = 1e-7) and seeds derived from "
                   "the study seed; its trials are few, see the trial counts.")
    if preset == "smoke":
        caveats.append("Smoke preset: panel (b) at the fig2b smoke sizes (m = 40, n = 20, d = 40, "
                       "30 iterations), not the paper's.")
    return ctx.result(
        title="Section 6: random initialization with a few restarts",
        claim=("For linear models, random initialization with a few restarts is sufficient to "
               "ensure convergence of IFCA (Algorithm 2)."),
        location="Section 6, first paragraph (experiments of Section 6.1, Figure 2); abstract",
        verdict=verdict, summary=summary_text, numbers=numbers, caveats=caveats,
        table=table_path, figure=fig_path)
