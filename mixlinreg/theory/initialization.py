"""How good must IFCA's initialization be? The pieces of study A0 (and, re-exported, of RS).

**A0** (Assumption 1 of the long version and its discussion, Section 5.1; the abstract): for
``k = 2`` it suffices that every initial model be within ``(1/2 - alpha0) Delta`` of its truth with
``alpha0`` small, "slightly better than random". The study
(:mod:`mixlinreg.theory.studies.a0`, config ``mixlinreg/configs/studies/A0.toml``) measures the success
probability of IFCA against ``alpha0`` for ``k = 2`` (the claim) and ``k = 4`` (context), with
and without resampling, for three placements of the initial models at distance exactly
``(1/2 - alpha0) Delta`` (:func:`a0_inits`):

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

Here: one trial's runs (:func:`a0_trial_rows`, with the known-cluster floor
:func:`known_cluster_gd`), the per-cell table paired by trial (:func:`a0_cells`,
:func:`a0_summary`) and the two rules (:func:`a0_compare_verdict`: a small ``alpha0`` must not be
materially worse than the largest, by Newcombe's paired interval; :func:`a0_verdict`: the absolute
success at the smallest ``alpha0``), every threshold an argument.

**RS**'s pieces (:func:`restart_success`, :func:`restart_curves`, :func:`rs_cell_stats`,
:func:`rs_verdict`) live in :mod:`mixlinreg.theory.restarts` and are re-exported here.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning (long
version): abstract; Assumption 1 and the discussion after Assumption 2 (Section 5.1); Lemma 1
(Appendix A); Section 6 (first paragraph) and Section 6.1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import as_generator, check_float, check_int
from ..data import draw_rows, init_close
from ..geometry import min_separation, simplex_centers  # noqa: F401 (simplex_centers re-exported)
from ..ifca import ifca
from ..metrics import dist_matched, dist_nearest
from ..stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, newcombe_paired, wilson_interval
from .linear import oracle_theta
from .restarts import restart_curves, restart_success, rs_cell_stats, rs_verdict  # noqa: F401

__all__ = ["A0_DIRECTIONS", "simplex_centers", "init_mixed", "a0_inits", "known_cluster_gd",
           "a0_trial_rows", "a0_summary", "a0_cells", "a0_compare_verdict", "a0_verdict",
           "restart_success", "restart_curves", "rs_cell_stats", "rs_verdict"]

#: the placements :func:`a0_inits` knows (the study's config picks among them)
A0_DIRECTIONS = ("random", "adversarial", "mixed")


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
    delta = min_separation(theta)
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
                  directions, gamma_p, success_sigmas):
    """One A0 trial: draw data and initializations, run IFCA with and without resampling.

    Data: ``theta*`` from :func:`mixlinreg.geometry.simplex_centers` (all separations ``delta``,
    ``haar=False``), :func:`mixlinreg.data.draw_rows` (squared loss), ``m = k *
    m_per_cluster`` machines with ``n = 2 n_iter n_prime`` rows ``x ~ N(0, I_d)``,
    ``y = <x, theta*_j> + sigma eps``. Step ``lr = gamma_p / p = gamma_p k`` in both modes
    (``gamma_p = 1/4``: the expected update halves the error, Theorem 1's factor 1/2); the
    resampled mode uses a fresh block of ``n_prime`` rows per estimate and per gradient, the other
    all ``n`` rows every iteration. Success is a final matched distance ``<= success_sigmas *
    sigma`` (0.6 is the paper's text rule, Section 6.1).

    Returns
    -------
    DataFrame
        One row per (resample, direction, alpha0) with the final matched and nearest distances,
        ``success``, ``misclass0`` (fraction of machines put in a wrong cluster by the first
        estimate), ``t_hit`` (first iteration at which the matched distance is ``<=
        success_sigmas * sigma``), ``diverged`` and the known-cluster errors: the oracle on all
        rows (``oracle_all``), on one block of ``n_prime`` rows per machine (``oracle_block``) and
        the resampled gradient steps with known clusters (``oracle_gd``,
        :func:`known_cluster_gd`), the floor of the resampled runs.
    """
    m = k * m_per_cluster
    n = 2 * n_iter * n_prime
    theta_star = simplex_centers(k, d, delta, gen, haar=False)
    labels = np.repeat(np.arange(k), m_per_cluster)
    X, y = draw_rows(labels, theta_star, n, sigma=sigma, rng=gen)
    init, meta = a0_inits(theta_star, alphas, directions, gen)
    orc_all = float(dist_matched(oracle_theta(X, y, labels, k), theta_star))
    blk = slice(n_prime, 2 * n_prime)  # the first gradient block of the resampled run
    orc_blk = float(dist_matched(oracle_theta(X[:, blk], y[:, blk], labels, k), theta_star))
    lr = check_float("gamma_p", gamma_p, low=0.0, low_open=True) * k
    orc_gd = known_cluster_gd(X, y, labels, theta_star, n_prime=n_prime, n_iter=n_iter, lr=lr)
    thr = check_float("success_sigmas", success_sigmas, low=0.0, low_open=True) * sigma
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
    distance in units of sigma, the median first hit of the success threshold and the number of
    diverged runs.

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


def a0_compare_verdict(cells, *, margin, k=2, confidence=0.95):
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
    margin : float
        The drop in success probability that counts as "materially worse" (A0's config:
        ``margins.margin``).
    k : int, default 2
    confidence : float, default 0.95
        Of Newcombe's and Wilson's intervals.

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


def a0_verdict(summary, *, target, floor, k=2):
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
    target : float
        The success probability the claim is read as ("converges with high probability"; A0's
        config: ``margins.target``).
    floor : float
        An upper Wilson bound below this contradicts the claim (``margins.floor``).
    k : int, default 2

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
