"""Study L3: Lemma 3's misclassification bound ``c1 eta^2 / (alpha^2 lambda^2 Delta^4 n')`` for
strongly convex losses, against a Monte Carlo of one machine.

Lemma 3 (long version, Appendix C, inside the proof of Theorem 2; proof in Appendix C.1): for a
machine ``i`` of cluster ``j`` and models with ``||theta_j - theta*_j|| <= (1/2 - alpha)
sqrt(lambda/L) Delta`` for every ``j``, the event ``E_i^{j,j'} = {F_i(theta_j) >= F_i(theta_j')}``
on its ``n'`` fresh rows has ``P(E) <= c1 eta^2 / (alpha^2 lambda^2 Delta^4 n')``. The proof
makes ``c1`` explicit: ``P(E) <= P(F_i(theta_1) > t) + P(F_i(theta_j) <= t)`` with ``t`` the
midpoint of the population losses, the gap ``F^1(theta_j) - F^1(theta_1) >= alpha lambda Delta^2``
(strong convexity at ``theta_j``, which lies at distance ``>= (1/2 + alpha) Delta`` from
``theta*_1``, outside the ball where ``lambda`` and ``L`` are measured), and Chebyshev's
inequality for each term, ``<= 4 eta^2 / (alpha^2 lambda^2 Delta^4 n')``: ``c1 = 8``
(:data:`C1_PROOF`).

Setting (:data:`mixlinreg.theory.convex.LOSS_SETUPS`): the l2-regularized logistic mixture and the
Huber + ridge mixture with Student t noise, ``k = 2``, ``theta*_j = R e_j`` in ``d = 5``, with ``R``
the setting's value times each of ``params.R_factors`` (this varies ``Delta``). Distances are to the
population minimizers ``theta_pop_j`` and ``Delta = ||theta_pop_1 - theta_pop_2||``.

Constants (a shared piece per (loss, R), :func:`ball_constants`): ``lambda``, ``L``, ``eta^2``
(the largest ``Var f`` over the ball, Assumption 4 restricted to it) and ``v^2`` of
:func:`mixlinreg.theory.constants.loss_constants` on the balls of radius ``rho`` around the
``theta_pop_j``, with ``rho`` the upper end of a bisection for Theorem 2's fixed point ``rho =
(1/2 - alpha_min) sqrt(lambda(rho)/L(rho)) Delta`` at the grid's smallest ``alpha`` (every call on
the same Monte Carlo sample): ``phi(rho) <= rho``, so every placement of every ``alpha`` of the
grid lies inside the ball its constants were measured on (the minimizers are ``c R e_j`` with one
``c`` by symmetry; ``c`` is the mean of its two Monte Carlo estimates). The same constants serve
every ``alpha``, so the bound's ``alpha`` dependence is exactly ``alpha^-2``.

Placements (same shared piece): model ``j`` at distance exactly ``r = (1/2 - alpha) sqrt(lambda/L)
Delta`` from ``theta_pop_j`` in (a) the adversarial direction, each toward the other minimizer
(the gap between the models shrinks the most), and (b) ``n_random`` pairs of uniformly random
directions, the same directions for every ``alpha``. For each placement a Monte Carlo of
``n_pop`` rows of cluster 1 gives the population gap ``F^1(theta_2) - F^1(theta_1)`` (with its
standard error) and the variances ``Var f(theta_1; z)``, ``Var f(theta_2; z)`` under cluster 1.

Monte Carlo (units, one per (loss, R, block)): machines of cluster 1 with ``n'`` fresh rows each
(:func:`mixlinreg.theory.convex.draw_cluster_data`), ``min(machines, rows_per_cell // n')`` per
``n'`` split over the blocks; every placement is evaluated on the same machines
(:func:`machine_losses`, numpy, tested against the kernel's losses). A machine errs when
``F_i(theta_1) >= F_i(theta_2)`` (the paper's event, ties counted as errors); ties are also
counted on their own (the kernel would put a tied machine in the lowest index, here its own
cluster).

Measured per cell (:func:`measure`): the frequency with its Wilson interval against (i) the
bound with ``c1 = 8`` and the ball's ``eta^2``; (ii) the sharpest two-term Chebyshev bound with
the placement's actual variances and gap, ``(s_1^(2/3) + s_2^(2/3))^3 / (n' gap^2)`` (the proof's
split with the best ``t``; the midpoint ``t`` gives ``4 (s_1^2 + s_2^2) / (n' gap^2)``); (iii) the
proof's premise, the gap against ``alpha lambda Delta^2``. :func:`shapes` fits the decay in ``n'``,
``alpha`` and ``Delta``; :func:`decide` (pure) gives the verdict. Config:
``mixlinreg/configs/studies/L3.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import _ols_slope, wilson_interval
from ..convex import D, LOSS_SETUPS, draw_cluster_data
from ..study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict
from ..words import sensitivity_lines, words
# the model pieces (re-exported here: the study's API)
from ._l3_model import (ADVERSARIAL, C1_PROOF, CHUNK_ROWS, _setting, ball_constants,
                        chebyshev_bounds, lemma3_bound, machine_losses, misclassified,
                        per_sample_loss, placements, population_stats, setup_piece)

__all__ = ["STUDY", "SCHEMA", "units", "compute", "measure", "decide", "analyze", "figure",
           "C1_PROOF", "ADVERSARIAL", "per_sample_loss", "machine_losses", "misclassified",
           "lemma3_bound", "chebyshev_bounds", "ball_constants", "placements", "population_stats",
           "setup_piece"]

#: the study's prose: l3.md beside this module
WORDS = words(__file__)


_POS = dict(low=0, open="low")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "losses": Spec("list[str]", choices=tuple(LOSS_SETUPS)),
        "R_factors": Spec("list[float]", **_POS),
        "alphas": Spec("list[float]", low=0, high=0.5, open="both"),
        "n_prime": Spec("list[int]", low=1),
        "n_random": Spec("int", low=0),
        "machines": Spec("int", low=1),
        "rows_per_cell": Spec("int", low=1),
        "blocks": Spec("int", low=1),
        "n_pop": Spec("int", low=1000),
        "n_samples": Spec("int", low=1000), "n_line": Spec("int", low=1000),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
        "min_count": Spec("int", low=1),
        "slope_points": Spec("int", low=2),
        "n_boot": Spec("int", low=10),
        # the control's models outside the ball: the placements' distance times radius_scale
        # (1: the lemma's (1/2 - alpha) sqrt(lambda/L) Delta)
        "radius_scale": Spec("float", low=0, open="low", required=False, default=1.0),
    },
    "margins": {
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
        "premise_tol": Spec("float", low=0, high=1, open="high"),
        "premise_tol_neighbours": Spec("list[float]", low=0, high=1, open="high"),
        "vacuous_frac": Spec("float", low=0, high=1),
        "vacuous_frac_neighbours": Spec("list[float]", low=0, high=1),
        "cheb_tol": Spec("float", low=0),
        "cheb_tol_neighbours": Spec("list[float]", low=0),
    },
}


# ------------------------------------------------------------------------------ the losses


# ------------------------------------------------------------------------------ units

def machines_at(p, n_prime):
    """Machines at ``n'``: ``min(machines, rows_per_cell // n')``."""
    return min(p["machines"], p["rows_per_cell"] // n_prime)


def _block_share(total, blocks, b):
    return total // blocks + (1 if b < total % blocks else 0)


def units(params):
    p = params["params"]
    if len(set(p["losses"])) != len(p["losses"]) or not p["losses"]:
        raise ValueError(f"study L3: params.losses must be distinct names among "
                         f"{sorted(LOSS_SETUPS)}, got {p['losses']}")
    for key in ("R_factors", "alphas", "n_prime"):
        if len(set(p[key])) != len(p[key]):
            raise ValueError(f"study L3: params.{key} must not repeat a value, got {p[key]}")
    worst = min(machines_at(p, n) for n in p["n_prime"])
    if worst < max(p["blocks"], 10):
        raise ValueError(f"study L3: params.rows_per_cell ({p['rows_per_cell']}) and "
                         f"params.machines ({p['machines']}) leave {worst} machines at n' = "
                         f"{max(p['n_prime'])}: at least 10 and params.blocks ({p['blocks']}) "
                         "are needed")
    return [(f"{loss}_R={LOSS_SETUPS[loss]['R'] * f:g}_b={b}",
             {"loss": loss, "R": LOSS_SETUPS[loss]["R"] * f, "block": b})
            for loss in p["losses"] for f in p["R_factors"] for b in range(p["blocks"])]


SETUP_COLUMNS = ["alpha", "direction", "delta", "lam", "L", "eta2", "ball_radius", "r", "gap",
                 "gap_se", "var1", "var2", "dist_2_to_pop1"]


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, R = spec["loss"], spec["R"]
    setup = shared(f"setup_{loss}_R={R:g}", setup_piece(loss, R, p)).sort_values("placement")
    thetas = np.concatenate([setup[[f"theta1_{i}" for i in range(D)]].to_numpy()[:, None],
                             setup[[f"theta2_{i}" for i in range(D)]].to_numpy()[:, None]],
                            axis=1).reshape(-1, D)  # model pairs (theta_1, theta_2) in turn
    ts, kw = _setting(loss, R)
    l2, hd = kw.pop("l2"), kw.pop("huber_delta")
    P = len(setup)
    rows = []
    for n_prime, gen in zip(p["n_prime"], rng.spawn(len(p["n_prime"]))):
        total = _block_share(machines_at(p, n_prime), p["blocks"], spec["block"])
        errors, ties = np.zeros(P, dtype=np.int64), np.zeros(P, dtype=np.int64)
        step = max(1, CHUNK_ROWS // n_prime)
        for lo in range(0, total, step):
            M = min(step, total - lo)
            X, y, _ = draw_cluster_data(loss, ts[:1], [M], n_prime, gen, **kw)
            F = machine_losses(loss, X, y, thetas, l2, hd)
            e, t = misclassified(F[:, 0::2], F[:, 1::2])
            errors += e.sum(axis=0)
            ties += t.sum(axis=0)
        rows.append(pd.DataFrame({"loss": loss, "R": R, "block": spec["block"],
                                  "n_prime": n_prime, "placement": np.arange(P),
                                  "machines": total, "errors": errors, "ties": ties}))
    out = pd.concat(rows, ignore_index=True)
    return out.merge(setup[["placement"] + SETUP_COLUMNS], on="placement", how="left")


# ------------------------------------------------------------------------------ measure

def measure(table, params, confidence=None):
    """One row per cell (loss, R, placement, n'): machines and errors summed over the blocks,
    the frequency and its Wilson interval (at ``confidence``, default the config's), the bound
    (i) with ``c1 = 8`` and the ball's ``eta^2``, the Chebyshev bounds (ii) with the placement's
    variances, and the premise ratio (iii) ``gap / (alpha lambda Delta^2)`` with its standard
    error."""
    conf = params["margins"]["confidence"] if confidence is None else confidence
    keys = ["loss", "R", "placement", "n_prime"]
    agg = table.groupby(keys, sort=True).agg(
        machines=("machines", "sum"), errors=("errors", "sum"), ties=("ties", "sum"),
        **{c: (c, "first") for c in SETUP_COLUMNS}).reset_index()
    agg["freq"] = agg["errors"] / agg["machines"]
    lo, hi = wilson_interval(agg["errors"].to_numpy(), agg["machines"].to_numpy(), conf)
    agg["wilson_lo"], agg["wilson_hi"] = lo, hi
    agg["bound"] = lemma3_bound(agg["eta2"], agg["alpha"], agg["lam"], agg["delta"],
                                agg["n_prime"])
    agg["cheb_mid"], agg["cheb_opt"] = chebyshev_bounds(agg["var1"], agg["var2"], agg["gap"],
                                                        agg["n_prime"])
    scale = agg["alpha"] * agg["lam"] * agg["delta"] ** 2
    agg["premise_ratio"] = agg["gap"] / scale
    agg["premise_se"] = agg["gap_se"] / scale
    agg["eta2_ratio"] = np.maximum(agg["var1"], agg["var2"]) / agg["eta2"]
    agg["lo_over_bound"] = agg["wilson_lo"] / agg["bound"]
    agg["lo_over_cheb"] = agg["wilson_lo"] / agg["cheb_opt"]
    agg["adversarial"] = agg["direction"] == ADVERSARIAL
    return agg


# ------------------------------------------------------------------------------ decide

def decide(cells, params):
    """The verdict from the measured cells (:func:`measure`) and ``params["margins"]``.

    * "inconclusive" if some cell's Wilson lower limit exceeds the Chebyshev bound (ii) with the
      actual variances times ``1 + cheb_tol`` (Chebyshev's inequality cannot fail: the
      measurement, or the Monte Carlo of the variances and gap, is in doubt);
    * else "not supported" if some cell's Wilson lower limit exceeds the bound (i) (``c1 = 8``,
      the ball's ``eta^2``);
    * else "holds with a caveat" if the proof's premise fails at some placement (``gap / (alpha
      lambda Delta^2) < 1 - premise_tol``) or the bound is vacuous (``>= 1``) in more than
      ``vacuous_frac`` of the (loss, R, alpha, n') cells;
    * else "holds".

    ``numbers``: the counts, the worst ratios, the premise's smallest ratio and its placement,
    the vacuous fraction and the thresholds."""
    mg = params["margins"]
    lo = cells["wilson_lo"].to_numpy(dtype=float)
    cheb_bad = lo > cells["cheb_opt"].to_numpy(dtype=float) * (1.0 + mg["cheb_tol"])
    over = lo > cells["bound"].to_numpy(dtype=float)
    pl = cells.drop_duplicates(["loss", "R", "placement"])
    fails = pl[pl["premise_ratio"] < 1.0 - mg["premise_tol"]]
    grid = cells.drop_duplicates(["loss", "R", "alpha", "n_prime"])
    vac = float((grid["bound"] >= 1.0).mean())
    ratio = cells["lo_over_bound"]
    worst = int(ratio.idxmax())
    numbers = {"cells": len(cells), "over_bound": int(over.sum()),
               "over_chebyshev": int(cheb_bad.sum()),
               "worst_lo_over_bound": float(ratio.max()), "worst_cell": worst,
               "worst_lo_over_cheb": float(cells["lo_over_cheb"].max()),
               "placements": len(pl), "premise_fails": len(fails),
               "premise_min": float(pl["premise_ratio"].min()),
               "premise_min_placement": int(pl["premise_ratio"].idxmin()),
               "premise_fail_losses": sorted(set(fails["loss"])),
               "vacuous_share": vac, "bound_cells": len(grid),
               "nonvacuous_min_n": {loss: int(g.loc[g["bound"] < 1, "n_prime"].min())
                                    if (g["bound"] < 1).any() else None
                                    for loss, g in grid.groupby("loss")},
               "cheb_tol": mg["cheb_tol"], "premise_tol": mg["premise_tol"],
               "vacuous_frac": mg["vacuous_frac"]}
    if cheb_bad.any():
        return Decision(INCONCLUSIVE, numbers)
    if over.any():
        return Decision(NOT_SUPPORTED, numbers)
    if len(fails) or vac > mg["vacuous_frac"]:
        return Decision(CAVEAT, numbers)
    return Decision(HOLDS, numbers)


def _scope(cells, dec):
    nb = dec.numbers
    if dec.verdict == INCONCLUSIVE:
        return WORDS.text("scope.inconclusive", over=nb["over_chebyshev"])
    if dec.verdict == NOT_SUPPORTED:
        bad = cells[cells["wilson_lo"] > cells["bound"]]
        return WORDS.text("scope.not supported", where="; ".join(
            WORDS.text("scope.exceeded at", loss=loss, n_max=int(g["n_prime"].max()))
            for loss, g in bad.groupby("loss")))
    parts = []
    for loss, g in cells.groupby("loss"):
        grid = g.drop_duplicates(["R", "alpha", "n_prime"])
        non = grid[grid["bound"] < 1]
        where = (WORDS.text("scope.nonvacuous", n_min=int(non["n_prime"].min()),
                            pct=100 * len(non) / len(grid))
                 if len(non) else WORDS.text("scope.vacuous"))
        parts.append(WORDS.text("scope.loss", loss=loss, where=where))
    out = [WORDS.text("scope.holds", losses="; ".join(parts))]
    if nb["premise_fails"]:
        out.append(WORDS.text("scope.premise fails", fails=nb["premise_fails"],
                              placements=nb["placements"],
                              losses=", ".join(nb["premise_fail_losses"])))
    return "; ".join(out)


# ------------------------------------------------------------------------------ shapes

def _slope(x, y):
    return float(_ols_slope(np.log(np.asarray(x, float)), np.log(np.asarray(y, float))))


def shapes(cells, params, rng=None):
    """The measured decay of each curve (loss, R, placement): the log-log slope in ``n'`` over its
    largest ``slope_points`` usable ``n'`` (at least ``min_count`` errors), with a parametric
    bootstrap interval (counts redrawn as binomials at the measured frequency, ``n_boot`` times;
    ``rng`` None: no interval), the local slope between its last two usable ``n'``, and the bound's
    ``n'`` exponent (-1). Returns one row per curve."""
    p = params["params"]
    k, nb = p["slope_points"], p["n_boot"]
    rows = []
    for (loss, R, q), g in cells.groupby(["loss", "R", "placement"], sort=True):
        g = g.sort_values("n_prime")
        use = g[g["errors"] >= p["min_count"]].tail(k)
        row = {"loss": loss, "R": R, "placement": q, "alpha": g["alpha"].iloc[0],
               "direction": g["direction"].iloc[0], "delta": g["delta"].iloc[0],
               "n_used": len(use), "n_lo": np.nan, "n_hi": np.nan, "slope": np.nan,
               "slope_lo": np.nan, "slope_hi": np.nan, "local_slope": np.nan}
        if len(use) >= 2:
            x = use["n_prime"].to_numpy(float)
            row.update(n_lo=x.min(), n_hi=x.max(), slope=_slope(x, use["freq"]),
                       local_slope=_slope(x[-2:], use["freq"].to_numpy()[-2:]))
            if rng is not None and len(use) >= 3:
                m = use["machines"].to_numpy()
                sims = rng.binomial(m, use["freq"].to_numpy(), size=(nb, len(use))) / m
                ok = (sims > 0).all(axis=1)
                if ok.sum() >= 10:
                    s = _ols_slope(np.log(x)[None], np.log(sims[ok]), axis=-1)
                    row.update(slope_lo=float(np.quantile(s, 0.025)),
                               slope_hi=float(np.quantile(s, 0.975)))
        rows.append(row)
    return pd.DataFrame(rows)


def cross_slopes(cells, params):
    """Slopes across the grid at fixed ``n'``: in ``alpha`` (per loss, R, direction; the bound:
    -2) and in ``Delta`` along the ``R`` path (adversarial placements, per loss, alpha; with the
    bound's own slope on the same path, which carries the change of ``lambda`` and ``eta^2``, and
    -4 at fixed constants), over cells with at least ``min_count`` errors."""
    mc = params["params"]["min_count"]
    rows = []
    for (loss, R, d, n), g in cells.groupby(["loss", "R", "direction", "n_prime"], sort=True):
        u = g[g["errors"] >= mc]
        if u["alpha"].nunique() >= 2:
            rows.append({"kind": "alpha", "loss": loss, "R": R, "direction": d, "n_prime": n,
                         "alpha": np.nan, "points": len(u), "slope": _slope(u["alpha"], u["freq"]),
                         "bound_slope": _slope(u["alpha"], u["bound"])})
    adv = cells[cells["adversarial"]]
    for (loss, a, n), g in adv.groupby(["loss", "alpha", "n_prime"], sort=True):
        u = g[g["errors"] >= mc]
        if u["delta"].nunique() >= 2:
            rows.append({"kind": "delta", "loss": loss, "R": np.nan, "direction": ADVERSARIAL,
                         "n_prime": n, "alpha": a, "points": len(u),
                         "slope": _slope(u["delta"], u["freq"]),
                         "bound_slope": _slope(u["delta"], u["bound"])})
    cols = ["kind", "loss", "R", "direction", "n_prime", "alpha", "points", "slope",
            "bound_slope"]
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------------------ analyze

def _numbers(cells, curves, cross):
    rows = []
    for (loss, R), g in cells.groupby(["loss", "R"], sort=False):
        adv = g[g["adversarial"]]
        top = g[g["n_prime"] == g["n_prime"].max()]
        cv = curves[(curves["loss"] == loss) & (curves["R"] == R)]
        ca = cross[(cross["kind"] == "alpha") & (cross["loss"] == loss) & (cross["R"] == R)]
        first = adv[adv["n_prime"] == adv["n_prime"].min()]
        rows.append({
            "loss": loss, "R": R, "Delta": round(float(g["delta"].iloc[0]), 3),
            "lambda": round(float(g["lam"].iloc[0]), 4), "L": round(float(g["L"].iloc[0]), 4),
            "eta2 (ball)": round(float(g["eta2"].iloc[0]), 4),
            "max Var_1 f / eta2": round(float(g["eta2_ratio"].max()), 2),
            f"P(n'={int(first['n_prime'].iloc[0])}) adversarial": _rng_words(first["freq"]),
            "premise gap/(alpha lam Delta^2)": _rng_words(g.drop_duplicates("placement")
                                                          ["premise_ratio"], 3),
            "bound < 1": f"{int((g.drop_duplicates(['alpha', 'n_prime'])['bound'] < 1).sum())}/"
                         f"{len(g.drop_duplicates(['alpha', 'n_prime']))}",
            "max WilsonLo/bound": float(f"{g['lo_over_bound'].max():.3g}"),
            f"bound/WilsonHi at n'={int(top['n_prime'].iloc[0])}":
                _rng_words(top["bound"] / top["wilson_hi"], 3),
            "n'-slope adversarial": _rng_words(cv.loc[cv["direction"] == ADVERSARIAL, "slope"]),
            "n'-slope random": _rng_words(cv.loc[cv["direction"] != ADVERSARIAL, "slope"]),
            "alpha-slope adversarial": _rng_words(ca.loc[ca["direction"] == ADVERSARIAL,
                                                         "slope"]),
            "alpha-slope random": _rng_words(ca.loc[ca["direction"] != ADVERSARIAL, "slope"]),
            "ties": int(g["ties"].sum())})
    return pd.DataFrame(rows)


def _rng_words(x, digits=2):
    x = pd.Series(x, dtype=float).dropna()
    if x.empty:
        return "n/a"
    lo, hi = x.min(), x.max()
    if np.isclose(lo, hi, rtol=1e-3):
        return f"{lo:.{digits}g}"
    return f"{lo:.{digits}g} to {hi:.{digits}g}"


def analyze(table, params, rng):
    cells = measure(table, params)
    dec = decide(cells, params)
    curves = shapes(cells, params, rng("slopes"))
    cross = cross_slopes(cells, params)

    def verdict_at(q, key):  # the confidence re-measures the cells; the others re-decide them
        return decide(measure(table, q) if key == "confidence" else cells, q).verdict

    tables = {"_cells.csv": cells, "_curves.csv": curves, "_slopes.csv": cross}
    return Verdict(dec.verdict, _numbers(cells, curves, cross),
                   _summary(cells, curves, cross, dec, params), caveats=_caveats(cells, params),
                   sensitivity=sensitivity_lines(WORDS, params, verdict_at), tables=tables,
                   scope=_scope(cells, dec),
                   cells={"hard": int((cells["bound"].to_numpy(dtype=float) < 1.0).sum()),
                          "total": len(cells), "rule": WORDS.text("cells rule")})


def _summary(cells, curves, cross, dec, params):
    nb, mg, p = dec.numbers, params["margins"], params["params"]
    w = cells.loc[nb["worst_cell"]]
    top = cells[cells["n_prime"] == cells["n_prime"].max()]
    loose = top["bound"] / top["wilson_hi"]
    cv_adv = curves[curves["direction"] == ADVERSARIAL]["slope"].dropna()
    cv_all = curves["slope"].dropna()
    loc = curves["local_slope"].dropna()
    ca = cross[cross["kind"] == "alpha"]
    cd = cross[cross["kind"] == "delta"]
    pm = cells.loc[nb["premise_min_placement"]]
    out = [
        WORDS.text("summary.setting", machines_max=int(cells["machines"].max()),
                   machines_min=int(cells["machines"].min()), n_min=min(p["n_prime"]),
                   n_max=max(p["n_prime"]), alphas=p["alphas"], n_random=p["n_random"],
                   distance=(WORDS.text("distance.lemma") if p.get("radius_scale", 1.0) == 1.0
                             else WORDS.text("distance.scaled", scale=p["radius_scale"])),
                   cells=nb["cells"], settings=cells[["loss", "R"]].drop_duplicates().shape[0]),
        WORDS.text("summary.bound", confidence=mg["confidence"], over=nb["over_bound"],
                   worst=nb["worst_lo_over_bound"], loss=w["loss"], R=w["R"], alpha=w["alpha"],
                   direction=w["direction"], n_prime=int(w["n_prime"]),
                   vacuous_pct=100 * nb["vacuous_share"], bound_cells=nb["bound_cells"],
                   n_top=int(top["n_prime"].iloc[0]), loose_min=loose.min(),
                   loose_max=loose.max()),
        WORDS.text("summary.premise", held=nb["placements"] - nb["premise_fails"],
                   placements=nb["placements"], premise_min=nb["premise_min"], loss=pm["loss"],
                   R=pm["R"], alpha=pm["alpha"], direction=pm["direction"], se=pm["premise_se"]),
        WORDS.text("summary.chebyshev", worst=nb["worst_lo_over_cheb"])
        if not nb["over_chebyshev"] else
        WORDS.text("summary.chebyshev exceeded", over=nb["over_chebyshev"]),
        _alpha_words(cells, ca)]
    if len(cv_all):
        steepen = (curves["local_slope"] < curves["slope"])
        out.append(WORDS.text(
            "summary.n prime", slope_min=cv_all.min(), slope_max=cv_all.max(),
            slope_points=p["slope_points"], adversarial=_rng_words(cv_adv),
            local_min=loc.min(), local_max=loc.max(),
            shape=WORDS.text("summary.steeper") if cv_all.max() < -1 else
            WORDS.text("summary.not steeper", not_steeper=int((cv_all >= -1).sum()),
                       curves=len(cv_all)),
            steepen=WORDS.text("summary.steepen", steeper=int(steepen.sum()), curves=len(cv_all))
            if steepen.mean() > 0.5 else ""))
    if len(cd):
        out.append(WORDS.text("summary.delta", slopes=_rng_words(cd["slope"]),
                              bound_slopes=_rng_words(cd["bound_slope"])))
    out.append(WORDS.text("summary.ties", ties=int(cells["ties"].sum())))
    return " ".join(out)


def _alpha_words(cells, ca):
    """The alpha dependence in words: at the smallest n' the adversarial frequencies of all alphas
    (the same machines), and the fitted alpha-slopes."""
    n0 = cells["n_prime"].min()
    adv = cells[cells["adversarial"] & (cells["n_prime"] == n0)]
    spread = adv.groupby(["loss", "R"])["errors"].agg(lambda x: int(x.max() - x.min()))
    same = (WORDS.text("alpha.same") if spread.max() == 0 else
            WORDS.text("alpha.within", spread=spread.max()))
    return WORDS.text(
        "alpha", n0=n0, same=same, one_row=WORDS.text("alpha.one row") if n0 == 1 else "",
        adversarial=_rng_words(ca.loc[ca["direction"] == ADVERSARIAL, "slope"]),
        random=_rng_words(ca.loc[ca["direction"] != ADVERSARIAL, "slope"]))


def _caveats(cells, params):
    er = cells["eta2_ratio"]
    return WORDS.items("caveats", eta_min=er.min(), eta_max=er.max(),
                       se_max=cells["premise_se"].max())


# ------------------------------------------------------------------------------ figure

def figure(table, verdict, params):
    from matplotlib.figure import Figure

    cells = verdict.tables["_cells.csv"]
    losses = list(dict.fromkeys(cells["loss"]))
    Rs = {loss: sorted(cells.loc[cells["loss"] == loss, "R"].unique()) for loss in losses}
    ncol = max(len(v) for v in Rs.values())
    fig = Figure(figsize=(4.6 * ncol, 4.2 * len(losses)))
    axes = fig.subplots(len(losses), ncol, squeeze=False)
    alphas = sorted(cells["alpha"].unique())
    colours = {a: f"C{i}" for i, a in enumerate(alphas)}
    for i, loss in enumerate(losses):
        for j in range(ncol):
            ax = axes[i, j]
            if j >= len(Rs[loss]):
                ax.set_visible(False)
                continue
            R = Rs[loss][j]
            g = cells[(cells["loss"] == loss) & (cells["R"] == R)]
            for a in alphas:
                ga = g[g["alpha"] == a]
                adv = ga[ga["adversarial"]].sort_values("n_prime")
                col = colours[a]
                pos = adv[adv["errors"] > 0]
                ax.errorbar(pos["n_prime"], pos["freq"],
                            yerr=[pos["freq"] - pos["wilson_lo"], pos["wilson_hi"] - pos["freq"]],
                            color=col, marker="o", ms=3, lw=1, label=f"alpha = {a:g}")
                zero = adv[adv["errors"] == 0]
                ax.scatter(zero["n_prime"], zero["wilson_hi"], marker="v", color=col, s=12)
                for _, gr in ga[~ga["adversarial"]].groupby("placement"):
                    gr = gr[gr["errors"] > 0].sort_values("n_prime")
                    ax.plot(gr["n_prime"], gr["freq"], color=col, lw=0.6, ls=":")
                ax.plot(adv["n_prime"], adv["bound"], color=col, ls="--", lw=1)
                ax.plot(adv["n_prime"], np.minimum(adv["cheb_opt"], 1e6), color=col, ls="-.",
                        lw=0.6)
            ax.axhline(1.0, color="k", lw=0.6)
            ax.set_xscale("log")
            ax.set_yscale("log")
            lo = max(float(g["wilson_hi"].min()) / 3, 1e-7)
            ax.set_ylim(lo, 10 * max(1.0, float(g["bound"].min())))
            ax.set_xlabel("n' (rows per machine)")
            ax.set_ylabel("P(F_i(theta_1) >= F_i(theta_2))")
            ax.set_title(f"{loss}, R = {R:g} (Delta = {g['delta'].iloc[0]:.3g})", fontsize=9)
            if i == 0 and j == 0:
                ax.plot([], [], color="gray", ls="--", label="Lemma 3, c1 = 8")
                ax.plot([], [], color="gray", ls="-.", lw=0.6, label="Chebyshev, actual var")
                ax.plot([], [], color="gray", ls=":", lw=0.6, label="random directions")
                ax.scatter([], [], marker="v", color="gray", label="Wilson upper (0 errors)")
                ax.legend(fontsize=6, loc="lower left")
    fig.suptitle("L3 (Lemma 3): misclassification frequency of one machine, adversarial "
                 "placements (markers, nearly the same for every alpha) and random ones (dotted), "
                 "vs Lemma 3's bound (dashed) and Chebyshev with the actual variances (dash-dot)",
                 fontsize=9)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="L3", order=52, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
