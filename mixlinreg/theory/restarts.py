"""Random restarts: how many of a trial's initializations must be tried (study RS).

With ``s`` of a trial's ``N`` initializations successful, ``r`` restarts drawn without replacement
contain a success with probability ``1 - C(N - s, r) / C(N, r)`` (:func:`restart_success`);
:func:`restart_curves` averages it over trials with a bootstrap, :func:`rs_cell_stats` does so per
Figure 2 cell, and :func:`rs_decision` is the study's rule (cell by cell :func:`rs_classify`), with
every threshold an argument (the values are in ``mixlinreg/configs/studies/RS.toml``);
:func:`rs_verdict` adds the sentence that explains it (:func:`rs_explain`). :func:`reduce_runs`
turns a Figure 2 store's rows (one per cell, initialization and step size) into one row per
initialization.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning: Section 6,
first paragraph, and Section 6.1 (Figure 3 of the long version, Figure 2 of the NeurIPS version).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd

from .._validation import as_generator, check_int
from ..metrics import success_authors, success_text
from ..stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Fit, wilson_interval
from .study import Decision

__all__ = ["restart_success", "restart_curves", "rs_cell_stats", "rs_classify", "rs_decision",
           "rs_explain", "rs_verdict", "reduce_runs"]


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


def restart_curves(s, n_init, *, target, n_boot=2000, confidence=0.95, rng=None):
    """Mean over trials of :func:`restart_success`, r = 1..n_init, with a bootstrap over trials.

    Parameters
    ----------
    s : array of int (trials,)
        Successful initializations per trial.
    n_init : int
    target : float
        The restart success that counts as enough (RS's config: ``margins.target``).

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


def rs_cell_stats(per_init, *, target, n_boot=2000, confidence=0.95, rng=None):
    """Per (panel, R, sigma) cell: single-init and all-restart success, restarts for ``target``.

    Parameters
    ----------
    per_init : DataFrame
        One row per (panel, R, sigma, trial, init) with boolean ``ok`` (the initialization succeeded
        with some step size) and optionally ``ok_text``.
    target : float
        The restart success the restarts needed are counted against.
    n_boot : int
    confidence : float
        Of the Wilson and bootstrap intervals.
    rng : callable (name) -> numpy.random.Generator, optional
        The bootstrap stream of each cell, keyed by the cell's name
        (``"<panel>_R=<R>_sigma=<sigma>"``); by default a generator seeded by that name's CRC32.

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
    for panel, R, sigma in keys:
        g = per_init[(per_init["panel"] == panel) & (per_init["R"] == R)
                     & (per_init["sigma"] == sigma)]
        counts = g.groupby("trial")["ok"].agg(["sum", "size"])
        n_init = int(counts["size"].iloc[0])
        if not (counts["size"] == n_init).all():
            raise ValueError(f"cell {(panel, R, sigma)} has trials with different numbers of "
                             f"initializations: {sorted(counts['size'].unique())}")
        s = counts["sum"].to_numpy().astype(int)
        name = f"{panel}_R={float(R):g}_sigma={float(sigma):g}"
        gen = rng(name) if rng is not None else np.random.default_rng(zlib.crc32(name.encode()))
        curve, r_need = restart_curves(s, n_init, n_boot=n_boot, confidence=confidence,
                                       target=target, rng=gen)
        p1 = curve.iloc[0]
        wins = int((s > 0).sum())
        wlo, whi = wilson_interval(wins, s.size, confidence)
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


def rs_classify(cells, *, target, p1_substantial, min_trials):
    """RS's rule, cell by cell: which cells are evidence, hold or contradict; R* per (panel, sigma).

    A cell is *evidence* with ``trials >= min_trials``; it *holds* when ``pN >= target`` and
    ``r_need_hi <= n_init``; it *contradicts* when ``p1 >= p1_substantial`` and ``pN_hi < target``
    (evidence cells only). ``R*`` of a (panel, sigma) is the smallest R of its evidence cells from
    which every cell holds (``None`` if its largest R does not).

    Returns
    -------
    cells : DataFrame
        ``cells`` with the boolean columns ``evidence``, ``holds``, ``contradicts``.
    r_star : dict
        ``{(panel, sigma): R* or None}`` over the (panel, sigma) of the evidence cells.
    """
    need = {"panel", "R", "sigma", "trials", "n_init", "p1", "pN", "pN_hi", "r_need_hi"}
    missing = need - set(cells.columns)
    if missing:
        raise ValueError(f"cells must have the columns {sorted(need)}, missing {sorted(missing)}")
    c = cells.copy()
    c["evidence"] = c["trials"] >= min_trials
    c["holds"] = c["evidence"] & (c["pN"] >= target) & (c["r_need_hi"] <= c["n_init"])
    c["contradicts"] = c["evidence"] & (c["p1"] >= p1_substantial) & (c["pN_hi"] < target)
    r_star = {}
    for (panel, sigma), g in c[c["evidence"]].groupby(["panel", "sigma"]):
        g = g.sort_values("R")
        ok = g["holds"].to_numpy()
        tail = np.flatnonzero(~ok)  # R* is the R after the last cell that does not hold
        r_star[(panel, float(sigma))] = (None if ok.size == 0 or not ok[-1] else
                                         float(g["R"].iloc[tail[-1] + 1 if tail.size else 0]))
    return c, r_star


def rs_decision(cells, *, target, p1_substantial, min_trials) -> Decision:
    """RS's verdict (the rule of :func:`rs_verdict`) and the numbers it compared, no prose.

    From :func:`rs_classify`'s cells: *inconclusive* with no evidence cell; *not supported* if
    some cell contradicts; *holds* if every evidence cell holds; *holds with a caveat* if every
    (panel, sigma) has an ``R*``; *inconclusive* otherwise. ``numbers``: the three thresholds, the
    evidence cells, those that hold and that contradict, and the (panel, sigma) with no ``R*``.
    """
    c, r_star = rs_classify(cells, target=target, p1_substantial=p1_substantial,
                            min_trials=min_trials)
    n = {"target": target, "p1_substantial": p1_substantial, "min_trials": min_trials,
         "evidence cells": int(c["evidence"].sum()),
         "evidence cells that hold": int((c["evidence"] & c["holds"]).sum()),
         "cells that contradict": int(c["contradicts"].sum()),
         "(panel, sigma)": len(r_star),
         "(panel, sigma) with no R*": sum(v is None for v in r_star.values())}
    if n["evidence cells"] == 0:
        verdict = INCONCLUSIVE
    elif n["cells that contradict"]:
        verdict = NOT_SUPPORTED
    elif n["evidence cells that hold"] == n["evidence cells"]:
        verdict = HOLDS
    elif n["(panel, sigma) with no R*"] == 0:
        verdict = CAVEAT
    else:
        verdict = INCONCLUSIVE
    return Decision(verdict, n)


def rs_explain(cells, verdict, *, target, p1_substantial, min_trials):
    """What :func:`rs_verdict` returns as ``info`` for ``verdict`` (:func:`rs_decision`'s): the
    classified cells, ``r_star`` (empty where no evidence cell or a contradiction decided) and
    the ``reason``, a sentence."""
    c, r_star = rs_classify(cells, target=target, p1_substantial=p1_substantial,
                            min_trials=min_trials)
    if not c["evidence"].any():
        return dict(cells=c, r_star={}, reason=f"no cell has {min_trials} trials or more")
    if verdict == NOT_SUPPORTED:
        bad = c[c["contradicts"]]
        return dict(cells=c, r_star={}, reason=(
            f"single-init success is >= {p1_substantial:g} but all restarts stay below "
            f"{target:g} at " + "; ".join(f"panel {r.panel}, R = {r.R:g}, sigma = {r.sigma:g}"
                                          for r in bad.itertuples())))
    if verdict == HOLDS:
        reason = "every cell reaches the target within the restarts"
    elif verdict == CAVEAT:
        reason = "it holds from some separation R on in every (panel, sigma)"
    else:
        reason = ("even the largest R does not decide at " +
                  "; ".join(f"panel {p}, sigma = {s:g}" for (p, s), v in r_star.items()
                            if v is None))
    return dict(cells=c, r_star=r_star, reason=reason)


def rs_verdict(cells, *, target, p1_substantial, min_trials):
    """RS's rule on the per-cell statistics of :func:`rs_cell_stats`.

    Only cells with at least ``min_trials`` trials are evidence (the others are context). A cell
    *holds* when its ``n_init``-restart success is ``>= target`` and the restarts needed to reach
    ``target`` have an upper bound ``<= n_init``. A cell *contradicts* when its single-init success
    is substantial (``p1 >= p1_substantial``) and its ``n_init``-restart success has a Wilson upper
    bound ``< target``: restarts do not help where they should. Per (panel, sigma), ``R*`` is the
    smallest R from which every cell holds (:func:`rs_classify`).

    * "not supported" if some cell contradicts;
    * "holds" if every cell holds;
    * "holds with a caveat" if every (panel, sigma) has an ``R*`` (it holds above a separation);
    * "inconclusive" otherwise (no evidence cell, or a (panel, sigma) where even the largest R
      does not hold).

    The verdict is :func:`rs_decision`'s, the ``info`` :func:`rs_explain`'s.

    Parameters
    ----------
    cells : DataFrame
        From :func:`rs_cell_stats` (computed with the same ``target``).
    target, p1_substantial : float
    min_trials : int
        The thresholds of RS's config (``margins``).

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
    kw = dict(target=target, p1_substantial=p1_substantial, min_trials=min_trials)
    verdict = rs_decision(cells, **kw).verdict
    return verdict, rs_explain(cells, verdict, **kw)


def reduce_runs(rows, panel, success_plus):
    """Per (cell, trial, init): did some step size succeed (authors' rule; paper's text rule)?

    Parameters
    ----------
    rows : DataFrame
        A Figure 2 store's rows (:data:`mixlinreg.harness.COLUMNS`): one per cell, initialization
        and step size.
    panel : str
        Label of the panel (``"a"``, ``"b"``), the first column of the result.
    success_plus : float
        The ``plus`` of :func:`mixlinreg.metrics.success_authors` (the panel's protocol).

    Returns
    -------
    DataFrame
        One row per (m, n, d, k, R, sigma, trial, init) with ``ok`` (authors' rule), ``ok_text``
        (matched distance ``<= 0.6 sigma``), ``best_dist_nearest``, ``steps_diverged``, ``steps``.
    """
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
