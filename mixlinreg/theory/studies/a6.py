"""Study A6: Assumption 6 of the long version: Theorem 2's starts within ``(1/2 - alpha0)
sqrt(lambda/L) Delta`` with any ``alpha0 > 0``, at an ``n'`` growing like ``alpha0^-2``.

For the two strongly convex settings of :data:`mixlinreg.theory.convex.LOSS_SETUPS` (l2-regularized
logistic; Huber + ridge with Student t noise), ``k = 2`` equal clusters of ``m / 2`` machines,
resampled IFCA (:func:`mixlinreg.ifca`, ``resample=True``) with step ``1/L`` for ``T`` iterations.

**Constants: one ball for every alpha0.** ``lambda``, ``L`` (and ``eta^2``) are the extreme Hessian
eigenvalues (and the largest loss variance) of the Monte Carlo population losses on a ball around
the population minimizers ``theta_pop_j`` (:func:`mixlinreg.theory.constants.loss_constants`); they
depend on the ball's radius. This study takes the ball of the limit ``alpha0 -> 0``
(:func:`ball_constants`): the smallest radius ``b`` (bisection, keeping the valid end) with
``b >= r_A(b) = (1/2) sqrt(lambda(b)/L(b)) Delta``. Every start of the study at
``(1/2 - alpha0) sqrt(lambda/L) Delta = (1 - 2 alpha0) r_A`` lies in that ball, so Assumption 6
holds for it *with the constants it states* (for every ``alpha0`` of the grid at once; a smaller
ball for a larger ``alpha0`` would give a slightly larger ``lambda/L``: the starts here are at most
that much closer than the largest the assumption allows, and ``eta^2`` at most that much larger).

**Starts** (:func:`start_models`), each model ``j`` at distance exactly ``r`` from ``theta_pop_j``:
``"adversarial"`` (toward the other cluster's minimizer, the two models ``Delta - 2 r`` apart) and
``"random"`` (a uniformly random direction per model, drawn once per trial and shared by every
radius and ``n'`` of the trial: the curves of one trial are paired). Three families of radii:

* ``"ball"``: ``r = (1 - 2 alpha0) r_A`` for every ``alpha0`` of the grid (inside the assumption);
* ``"linear"``: ``r = (1/2 - alpha0) Delta``, the linear model's Assumption 1 without the
  ``sqrt(lambda/L)`` factor, for the ``alpha0`` of the grid where that is beyond ``r_A``;
* ``"far"``: ``r = rho Delta`` for the config's ``rho`` (up to and past the midpoint ``Delta/2``).

**n'** (rows per machine and iteration, ``n = 2 n' T``): the fixed levels ``n_fixed`` (every start)
and, for the ball's starts, the levels scaled like ``alpha0^-2`` (:func:`scaled_n`):
``n' = max(n_base, ceil(c k eta^2 / (alpha0^2 lambda^2 Delta^4)))`` for each ``c`` of ``c_levels``.
One data set per trial (``m`` machines, ``2 n'_max T`` rows each) serves every ``n'`` (a run at
``n'`` reads the first ``2 n' T`` rows of every machine: independent rows, in blocks of ``n'``).

**Success** of a run (:func:`measure`): every machine's final cluster estimate is its true cluster
(the starts are labelled: no permutation) and the final ``max_j ||theta_j - theta_pop_j||`` is at
most ``oracle_factor`` times the known-cluster oracle's on the same data (the same resampled
iterations run per true cluster, ``k = 1``, step ``p_j / L``, from the same start, as in study C2;
when IFCA assigned every machine correctly at every iteration the two updates are identical and the
oracle is not rerun).

**Claim check** (:func:`decide`, pure): the *claim cells* are the ball's starts whose ``n'`` meets
the condition with the config's constant, ``n' >= c_claim k eta^2/(alpha0^2 lambda^2 Delta^4)``,
and ``n' >= n_min`` (the ``alpha0``-free part of the theorem's requirements, whose constants are
unknown too). Every claim cell's Wilson lower bound ``>= target`` -> holds; some upper bound
``< target`` -> not supported (the cells named); otherwise inconclusive. A "holds" gets a caveat
when the ``alpha0^-2`` growth of ``n'`` is not needed (in every (loss, direction), a fixed ``n'``
below the condition at the smallest ``alpha0`` is certified at every ``alpha0``) or the evidence is
thin (some (loss, direction) has no claim cell at ``alpha0 <= alpha_small``). Outside the
assumption the radius where success falls below 1/2 is located (:func:`half_radius`) per loss,
direction and fixed ``n'``. Context: the population loss gap a machine's comparison sees at the
adversarial start, against the proof's lower bound ``alpha lambda Delta^2``
(:func:`population_gap`), and the first estimate's misclassification against the proof's Chebyshev
bound. Config: ``mixlinreg/configs/studies/A6.toml``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import wilson_interval
from ..convex import D, K, LOSS_SETUPS, draw_cluster_data, theta_star_of
from ..study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict,
                     with_margin)
from ..words import sensitivity_lines, words
# the model pieces (re-exported here: the study's API)
from ._a6_model import (DIRECTIONS, DIVERGE, FAMILIES, _constants_of, _g6, ball_constants,
                        constants_piece, needed_n, population_gap, run_starts, scaled_n,
                        start_models, start_plan)

#: the study's prose: a6.md beside this module
WORDS = words(__file__)

__all__ = ["STUDY", "SCHEMA", "units", "compute", "measure", "decide", "analyze", "figure",
           "DIRECTIONS", "DIVERGE", "FAMILIES", "ball_constants", "constants_piece", "needed_n",
           "population_gap", "run_starts", "scaled_n", "start_models", "start_plan"]
_OPEN01 = dict(low=0, high=1, open="both")
_POS = dict(low=0, open="low")
SCHEMA = {
    "params": {
        "losses": Spec("list[str]"), "m": Spec("int", low=4), "T": Spec("int", low=2),
        "alphas": Spec("list[float]", low=0, high=0.5, open="both"),
        "directions": Spec("list[str]"), "n_fixed": Spec("list[int]", low=1),
        "n_base": Spec("int", low=1), "c_levels": Spec("list[float]", **_POS),
        "far_rho": Spec("list[float]", **_POS), "linear": Spec("bool"),
        "trials": Spec("int", low=1), "chunk": Spec("int", low=1),
        "n_samples": Spec("int", low=1000), "n_line": Spec("int", low=1000),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
        "gap_samples": Spec("int", low=1000),
        # the control's starts outside the ball: the "ball" family's radius times ball_scale
        # (1: the assumption's (1/2 - alpha0) sqrt(lambda/L) Delta)
        "ball_scale": Spec("float", low=0, open="low", required=False, default=1.0),
    },
    "margins": {
        "target": Spec("float", **_OPEN01), "target_neighbours": Spec("list[float]", **_OPEN01),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
        "oracle_factor": Spec("float", low=1),
        "oracle_factor_neighbours": Spec("list[float]", low=1),
        "c_claim": Spec("float", **_POS), "c_claim_neighbours": Spec("list[float]", **_POS),
        "n_min": Spec("int", low=1), "n_min_neighbours": Spec("list[int]", low=1),
        "alpha_small": Spec("float", low=0, high=0.5, open="both"),
        "alpha_small_neighbours": Spec("list[float]", low=0, high=0.5, open="both"),
    },
}


# ------------------------------------------------------------------------------ the pieces


# ------------------------------------------------------------------------------ units


def _check(params):
    p = params["params"]
    for loss in p["losses"]:
        if loss not in LOSS_SETUPS:
            raise ValueError(f"study A6: params.losses must be among {sorted(LOSS_SETUPS)}, got "
                             f"{loss!r}")
    if not p["losses"] or len(set(p["losses"])) != len(p["losses"]):
        raise ValueError(f"study A6: params.losses must be distinct and not empty, got "
                         f"{p['losses']}")
    bad = [d for d in p["directions"] if d not in DIRECTIONS]
    if bad or not p["directions"] or len(set(p["directions"])) != len(p["directions"]):
        raise ValueError(f"study A6: params.directions must be distinct, among {list(DIRECTIONS)}"
                         f", got {p['directions']}")
    if len(set(p["alphas"])) != len(p["alphas"]) or len(p["alphas"]) < 2:
        raise ValueError(f"study A6: params.alphas needs two distinct values or more, got "
                         f"{p['alphas']}")
    if not p["n_fixed"] or len(set(p["n_fixed"])) != len(p["n_fixed"]):
        raise ValueError(f"study A6: params.n_fixed must be distinct and not empty, got "
                         f"{p['n_fixed']}")
    if len(set(p["c_levels"])) != len(p["c_levels"]):
        raise ValueError(f"study A6: params.c_levels must be distinct, got {p['c_levels']}")
    if p["m"] % K:
        raise ValueError(f"study A6: params.m must be even (two equal clusters), got {p['m']}")


def units(params):
    _check(params)
    p = params["params"]
    out = []
    for loss in p["losses"]:
        for start in range(0, p["trials"], p["chunk"]):
            stop = min(p["trials"], start + p["chunk"])
            out.append((f"a6_{loss}_t{start:04d}-{stop:04d}",
                        {"loss": loss, "start": start, "stop": stop}))
    return out


def compute(spec, params, rng, shared):
    """One unit: trials ``start..stop-1`` of one loss (one child stream of ``rng`` each); the
    first unit of a loss also carries the loss's constants and gap rows (the shared piece)."""
    p = params["params"]
    loss = spec["loss"]
    cdf = shared(f"constants_{loss}", constants_piece(loss, p))
    cons, centers = _constants_of(cdf)
    plan = start_plan(p, cons)
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    m, T = p["m"], p["T"]
    n_max = max(n for *_, n in plan)
    rows = []
    for trial, gen in zip(range(spec["start"], spec["stop"]), rng.spawn(spec["stop"]
                                                                         - spec["start"])):
        w = gen.standard_normal((K, D))  # the trial's random directions (every radius and n')
        X, y, labels = draw_cluster_data(loss, ts, [m // 2, m - m // 2], 2 * n_max * T, gen,
                                         sigma=s["sigma"], df=s["df"])
        for n_prime in sorted({n for *_, n in plan}):
            runs = [q for q in plan if q[4] == n_prime]
            inits = np.stack([start_models(centers, rho * cons["delta"], direction, w)
                              for _, direction, _, rho, _ in runs])
            outs = run_starts(loss, X, y, labels, centers, inits, n_prime, L=cons["L"], T=T)
            for (family, direction, a, rho, _), o in zip(runs, outs):
                rows.append({"kind": "run", "loss": loss, "trial": trial, "family": family,
                             "direction": direction, "alpha0": a, "rho": _g6(rho),
                             "n_prime": n_prime, **o})
    out = pd.DataFrame(rows)
    if spec["start"] == 0:
        out = pd.concat([cdf.drop(columns=[c for c in cdf.columns
                                           if re.fullmatch(r"c\d+_\d+", c)]), out],
                        ignore_index=True)
    return out


# ------------------------------------------------------------------------------ measure


_CELL_KEYS = ["loss", "family", "direction", "alpha0", "rho", "n_prime"]


def half_radius(rho, p, level=0.5):
    """Where a success curve falls below ``level``: ``(rho_half, status)``.

    ``rho`` sorted ascending; the first point with ``p < level`` and the one before it give the
    linear interpolation of the crossing (``status="crossed"``); ``(nan, "never")`` if no point is
    below, ``(rho[0], "at_start")`` if the first already is.

    >>> half_radius([0.4, 0.5, 0.6], [1.0, 0.75, 0.25])
    (0.55, 'crossed')
    >>> half_radius([0.4, 0.5], [1.0, 0.9])
    (nan, 'never')
    """
    rho, p = np.asarray(rho, dtype=float), np.asarray(p, dtype=float)
    below = np.flatnonzero(p < level)
    if not below.size:
        return float("nan"), "never"
    i = int(below[0])
    if i == 0:
        return float(rho[0]), "at_start"
    r0, r1, p0, p1 = rho[i - 1], rho[i], p[i - 1], p[i]
    return float(r0 + (p0 - level) / (p0 - p1) * (r1 - r0)), "crossed"


def _bool(col):
    return col.map(lambda v: v if isinstance(v, (bool, np.bool_)) else str(v) == "True").astype(bool)


def measure(table, params, oracle_factor=None):
    """The measured numbers: ``runs`` (flags as bools, ``success`` at ``oracle_factor``, default
    the config's), ``cells`` (per loss, family, direction, alpha0, rho, n'), ``constants`` (one row
    per loss), ``gaps`` and ``n_unit`` ``{loss: k eta^2/(lambda^2 Delta^4)}``; the cells'
    Wilson intervals at the config's confidence (:func:`decide` remakes the ones it uses)."""
    mg = params["margins"]
    factor = mg["oracle_factor"] if oracle_factor is None else oracle_factor
    runs = table[table["kind"] == "run"].copy()
    for col in ("labels_ok", "always_ok", "diverged"):
        runs[col] = _bool(runs[col])
    for col in ("trial", "n_prime"):
        runs[col] = runs[col].astype(int)
    runs["success"] = (runs["labels_ok"] & ~runs["diverged"]
                       & (runs["err_ifca"] <= factor * runs["err_oracle"]))
    runs["ratio"] = runs["err_ifca"] / runs["err_oracle"]
    cells = runs.groupby(_CELL_KEYS, dropna=False, sort=True).agg(
        trials=("success", "size"), successes=("success", "sum"),
        labels_ok=("labels_ok", "mean"), always_ok=("always_ok", "mean"),
        mis0=("mis0", "mean"), ratio_median=("ratio", "median"),
        diverged=("diverged", "sum")).reset_index()
    cells["successes"] = cells["successes"].astype(int)
    cells["p"] = cells["successes"] / cells["trials"]
    lo, hi = wilson_interval(cells["successes"].to_numpy(), cells["trials"].to_numpy(),
                             mg["confidence"])
    cells["lo"], cells["hi"] = np.atleast_1d(lo), np.atleast_1d(hi)
    constants = table[table["kind"] == "constants"].dropna(axis=1, how="all").set_index("loss")
    constants = constants[["lam", "L", "eta2", "v2", "delta", "ball", "r_A", "n_unit"]]
    gaps = table[table["kind"] == "gap"][["loss", "alpha0", "rho", "gap", "gap_bound",
                                          "sd_diff"]].reset_index(drop=True)
    return {"runs": runs, "cells": cells, "constants": constants, "gaps": gaps,
            "n_unit": {loss: float(r["n_unit"]) for loss, r in constants.iterrows()}}


# ------------------------------------------------------------------------------ decide


def _cell_name(r):
    return (f"{r['loss']}/{r['direction']}/alpha0={r['alpha0']:g}/n'={int(r['n_prime'])} "
            f"({int(r['successes'])}/{int(r['trials'])})")


def claim_cells(cells, n_unit, c_claim, n_min):
    """The ball's cells whose ``n'`` meets ``n' >= c_claim k eta^2/(alpha0^2 lambda^2 Delta^4)``
    and ``n' >= n_min``."""
    ball = cells[cells["family"] == "ball"]
    need = needed_n(ball["loss"].map(n_unit).to_numpy(dtype=float), ball["alpha0"], c_claim)
    n = ball["n_prime"].to_numpy(dtype=float)
    return ball[(n >= need) & (n >= n_min)]


def decide(m, params) -> Decision:
    """The verdict of A6 from the cell counts ``m["cells"]`` (columns ``loss, family,
    direction, alpha0, n_prime, trials, successes``) and ``m["n_unit"]`` (``{loss: k eta^2 /
    (lambda^2 Delta^4)}``), with the config's ``target``, ``confidence``, ``c_claim``, ``n_min``,
    ``alpha_small`` and ``params.n_fixed``; pure.

    The claim cells (:func:`claim_cells`), Wilson intervals at ``confidence``: none ->
    inconclusive; some upper bound ``< target`` -> not supported; some lower bound ``< target``
    (and no upper) -> inconclusive; else holds, with a caveat if (a) in every (loss, direction) of
    the ball some fixed ``n'`` below ``c_claim k eta^2/(alpha0_min^2 lambda^2 Delta^4)`` has every
    ``alpha0``'s lower bound ``>= target`` (the ``alpha0^-2`` growth of ``n'`` is not needed), or
    (b) some (loss, direction) of the ball has no claim cell at ``alpha0 <= alpha_small`` (thin
    evidence for "any alpha0 > 0")."""
    mg, p = params["margins"], params["params"]
    target, conf = mg["target"], mg["confidence"]
    c_claim, n_min, a_small = mg["c_claim"], mg["n_min"], mg["alpha_small"]
    cells, n_unit = m["cells"], m["n_unit"]
    numbers = {"target": target, "confidence": conf, "c_claim": c_claim, "n_min": n_min,
               "alpha_small": a_small}
    claim = claim_cells(cells, n_unit, c_claim, n_min).copy()
    numbers["claim_cells"] = len(claim)
    if claim.empty:
        return Decision(INCONCLUSIVE, numbers)
    lo, hi = wilson_interval(claim["successes"].to_numpy(), claim["trials"].to_numpy(), conf)
    claim["lo"], claim["hi"] = np.atleast_1d(lo), np.atleast_1d(hi)
    below = claim[claim["hi"] < target]
    unsure = claim[(claim["lo"] < target) & (claim["hi"] >= target)]
    worst = claim.loc[claim["lo"].idxmin()]
    numbers.update(below=[_cell_name(r) for _, r in below.iterrows()],
                   unsure=[_cell_name(r) for _, r in unsure.iterrows()],
                   worst=_cell_name(worst), worst_lo=float(worst["lo"]),
                   worst_p=float(worst["successes"] / worst["trials"]),
                   claim_trials_min=int(claim["trials"].min()))
    ball = cells[cells["family"] == "ball"]
    pairs = list(dict.fromkeys(zip(ball["loss"], ball["direction"])))
    smallest = {}
    for loss, direction in pairs:
        c = claim[(claim["loss"] == loss) & (claim["direction"] == direction)]
        smallest[f"{loss}/{direction}"] = float(c["alpha0"].min()) if len(c) else float("nan")
    numbers["smallest_alpha"] = smallest
    thin = [k for k, a in smallest.items() if not (a <= a_small)]
    numbers["thin"] = thin
    not_needed = {}
    for loss, direction in pairs:
        b = ball[(ball["loss"] == loss) & (ball["direction"] == direction)]
        a_min = float(b["alpha0"].min())
        need = float(needed_n(n_unit[loss], a_min, c_claim))
        found = None
        for n_f in sorted(p["n_fixed"]):
            f = b[b["n_prime"] == n_f]
            if n_f >= need or f["alpha0"].nunique() < b["alpha0"].nunique():
                continue
            flo, _ = wilson_interval(f["successes"].to_numpy(), f["trials"].to_numpy(), conf)
            if (np.atleast_1d(flo) >= target).all():
                found = {"n_fixed": int(n_f), "alpha0_min": a_min, "needed": need,
                         "lo_min": float(np.min(flo))}
                break
        not_needed[f"{loss}/{direction}"] = found
    numbers["not_needed"] = not_needed
    numbers["scaling_not_needed"] = bool(pairs) and all(v is not None
                                                         for v in not_needed.values())
    if len(below):
        return Decision(NOT_SUPPORTED, numbers)
    if len(unsure):
        return Decision(INCONCLUSIVE, numbers)
    if thin or numbers["scaling_not_needed"]:
        return Decision(CAVEAT, numbers)
    return Decision(HOLDS, numbers)


_at = with_margin  # params with one margin moved (the tests read it under this name)

#: the margins whose lines only re-decide (``oracle_factor`` re-measures), with their labels
_SENSITIVE = tuple((key, what) for key, what in WORDS.labels().items() if key != "oracle_factor")


def sensitivity(m, table, params):
    """The sensitivity lines: :func:`decide` with one threshold moved (the oracle factor
    re-measures the runs' success from ``table``)."""

    def verdict_at(q, key):
        again = (measure(table, params, oracle_factor=q["margins"]["oracle_factor"])
                 if key == "oracle_factor" else m)
        return decide(again, q).verdict

    return sensitivity_lines(WORDS, params, verdict_at)


# ------------------------------------------------------------------------------ analyze


def dropoffs(cells, constants, n_fixed):
    """Per loss, direction and fixed ``n'``: the success curve over every start radius (all three
    families) and where it falls below 1/2 (:func:`half_radius`), in ``r/Delta`` and in multiples
    of ``r_A`` (the assumption's largest radius)."""
    rows = []
    for (loss, direction), g in cells.groupby(["loss", "direction"], sort=False):
        delta, r_a = (float(constants.loc[loss, key]) for key in ("delta", "r_A"))
        for n_f in n_fixed:
            c = g[g["n_prime"] == n_f].sort_values("rho")
            if c.empty:
                continue
            rho_half, status = half_radius(c["rho"], c["p"])
            rows.append({"loss": loss, "direction": direction, "n_prime": int(n_f),
                         "rho_half": rho_half, "multiple_half": rho_half * delta / r_a,
                         "status": status, "rho_max": float(c["rho"].max()),
                         "p_at_rho_max": float(c["p"].iloc[-1]),
                         "rho_ball_edge": r_a / delta, "r_A": r_a, "delta": delta})
    return pd.DataFrame(rows)


def _drop_words(r):
    return WORDS.text(f"drop.{r['status']}", rho_max=r["rho_max"],
                      multiple_max=r["rho_max"] / r["rho_ball_edge"],
                      p_at_rho_max=r["p_at_rho_max"], rho_half=r["rho_half"],
                      multiple_half=r["multiple_half"])


def _level_n(level, n_unit, alpha0, p):
    kind, val = level
    return int(val) if kind == "fixed" else scaled_n(n_unit, alpha0, val, p["n_base"])


def _levels(p):
    return [("fixed", n) for n in p["n_fixed"]] + [("c", c) for c in p["c_levels"]]


def _level_name(level, p):
    kind, val = level
    return (f"n' = {val} (fixed)" if kind == "fixed" else
            f"n' = max({p['n_base']}, ceil({val:g} k eta^2/(alpha0^2 lambda^2 Delta^4)))")


def _series(cells, loss, direction, level, n_unit, p):
    """The ball's cells of one level (one row per alpha0, the n' of that level)."""
    b = cells[(cells["family"] == "ball") & (cells["loss"] == loss)
              & (cells["direction"] == direction)]
    parts = [b[(b["alpha0"] == a) & (b["n_prime"] == _level_n(level, n_unit, a, p))]
             for a in sorted(b["alpha0"].unique(), reverse=True)]
    return pd.concat(parts) if parts else b.iloc[:0]


def _numbers(ms, d, drops, p):
    cells, n_unit = ms["cells"], ms["n_unit"]
    mg_c = d.numbers["c_claim"]
    rows = []
    for loss in n_unit:
        for direction in p["directions"]:
            for level in _levels(p):
                s = _series(cells, loss, direction, level, n_unit[loss], p)
                if s.empty:
                    continue
                meets = (s["n_prime"] >= needed_n(n_unit[loss], s["alpha0"], mg_c)) & (
                    s["n_prime"] >= d.numbers["n_min"])
                last = s.iloc[-1]  # the smallest alpha0
                dr = drops[(drops["loss"] == loss) & (drops["direction"] == direction)
                           & (drops["n_prime"] == level[1])] if level[0] == "fixed" else []
                rows.append({
                    "loss": loss, "direction": direction, "n' level": _level_name(level, p),
                    "n' range": f"{int(s['n_prime'].min())}-{int(s['n_prime'].max())}",
                    "alpha0 of claim cells": (", ".join(f"{a:g}" for a in
                                                               s[meets]["alpha0"]) or "none"),
                    f"success at alpha0 = {last['alpha0']:g} [Wilson]":
                        f"{last['p']:.3f} [{last['lo']:.3f}, {last['hi']:.3f}]",
                    "lowest Wilson lo over alpha0": round(float(s["lo"].min()), 3),
                    "first-estimate misclassification (max over alpha0)":
                        round(float(s["mis0"].max()), 3),
                    "r/Delta where success < 1/2": (_drop_words(dr.iloc[0]) if len(dr)
                                                    else "")})
    return pd.DataFrame(rows)


def _span(values, fmt):
    """``"a"`` or ``"a-b"``: the range of ``values`` in format ``fmt``."""
    lo, hi = format(float(np.min(values)), fmt), format(float(np.max(values)), fmt)
    return lo if lo == hi else f"{lo}-{hi}"


def _scope(d, drops):
    nb = d.numbers
    if not nb["claim_cells"]:
        return ""
    a = min(v for v in nb["smallest_alpha"].values() if np.isfinite(v)) if any(
        np.isfinite(v) for v in nb["smallest_alpha"].values()) else float("nan")
    out = [WORDS.text("scope", head=WORDS.text(f"scope head.{d.verdict}"), alpha0=a,
                      n_min=nb["n_min"], c_claim=nb["c_claim"])]
    if nb["scaling_not_needed"]:
        out.append(WORDS.text("scope.not needed", n_fixed=max(v["n_fixed"] for v in
                                                               nb["not_needed"].values())))
    if len(drops):
        adv = drops[drops["direction"] == "adversarial"]
        ran = drops[drops["direction"] == "random"]
        if len(adv) and (adv["status"] == "crossed").all():
            out.append(WORDS.text("scope.adversarial", rho_half=_span(adv["rho_half"], ".2g"),
                                  multiple_half=_span(adv["multiple_half"], ".2f")))
        if len(ran):
            crossed = ran[ran["status"] == "crossed"]
            random = WORDS.text("scope.random")
            if len(crossed):
                random += " " + WORDS.text("scope.random below",
                                           rho_half=crossed["rho_half"].min())
            if (ran["status"] == "never").any():
                random += ", " + WORDS.text("scope.random above", rho_max=ran["rho_max"].max(),
                                            never=int((ran["status"] == "never").sum()),
                                            curves=len(ran))
            out.append(random)
    return "; ".join(out)


def _summary(ms, d, drops, p, mg):
    nb, cons, gaps = d.numbers, ms["constants"], ms["gaps"]
    const_txt = "; ".join(
        WORDS.text("constants", loss=loss, lam=c["lam"], L=c["L"],
                   sqrt_ratio=math.sqrt(c["lam"] / c["L"]), eta2=c["eta2"], delta=c["delta"],
                   ball=c["ball"], r_A=c["r_A"], r_A_delta=c["r_A"] / c["delta"],
                   n_unit=c["n_unit"])
        for loss, c in cons.iterrows())
    scale = p.get("ball_scale", 1.0)
    out = [WORDS.text("summary.setup", constants=const_txt, m=p["m"], T=p["T"],
                      oracle_factor=mg["oracle_factor"])]
    if not nb["claim_cells"]:
        return " ".join(out + [WORDS.text("summary.nothing to check")])
    out.append(WORDS.text(
        "summary.claim cells", n_min=nb["n_min"], c_claim=nb["c_claim"],
        starts=(WORDS.text("starts.ball") if scale == 1.0
                else WORDS.text("starts.scaled", scale=scale)),
        claim_cells=nb["claim_cells"], claim_trials_min=nb["claim_trials_min"],
        smallest=", ".join(WORDS.text("smallest alpha0", pair=k, alpha0=v)
                           for k, v in nb["smallest_alpha"].items()),
        worst=nb["worst"], worst_p=nb["worst_p"], worst_lo=nb["worst_lo"], target=nb["target"]))
    if nb["below"]:
        out.append(WORDS.text("summary.below", cells="; ".join(nb["below"])))
    if nb["unsure"]:
        out.append(WORDS.text("summary.unsure, first 8" if len(nb["unsure"]) > 8
                              else "summary.unsure", cells="; ".join(nb["unsure"][:8])))
    nn = [WORDS.text("fixed n", pair=k, n_fixed=v["n_fixed"], lo_min=v["lo_min"],
                     needed=v["needed"], alpha0_min=v["alpha0_min"], c_claim=nb["c_claim"],
                     per_c=v["needed"] / nb["c_claim"])
          for k, v in nb["not_needed"].items() if v is not None]
    if nn:
        out.append(WORDS.text("summary.not needed" if nb["scaling_not_needed"]
                              else "summary.fixed in part", fixed="; ".join(nn)))
    if nb["thin"]:
        out.append(WORDS.text("summary.thin", alpha_small=nb["alpha_small"],
                              pairs=", ".join(nb["thin"])))
    if len(gaps):
        a_min = gaps["alpha0"].min()
        g = gaps[gaps["alpha0"] == a_min]
        out.append(WORDS.text("summary.why" if scale == 1.0 else "summary.why outside",
                              scale=scale, gaps="; ".join(
            WORDS.text("gap", loss=r["loss"], gap=r["gap"], gap_bound=r["gap_bound"],
                       ratio=r["gap"] / r["gap_bound"], alpha0=a_min)
            for _, r in g.iterrows())))
    if len(drops):
        out.append(WORDS.text("summary.outside", drops="; ".join(
            WORDS.text("drop", loss=r["loss"], direction=r["direction"], n_prime=r["n_prime"],
                       words=_drop_words(r))
            for _, r in drops.iterrows())))
    out.append(WORDS.text("summary.verdict", verdict=WORDS.text(f"verdict.{d.verdict}")))
    return " ".join(out)


def _caveats(ms, p, mg):
    cons = ms["constants"]
    return WORDS.items(
        "caveats", alpha_min=min(p["alphas"]),
        n_big=", ".join(WORDS.text("n big", loss=loss, n=4 * c["n_unit"] / min(p["alphas"]) ** 2)
                        for loss, c in cons.iterrows()),
        n_units=", ".join(WORDS.text("n unit", loss=loss, n_unit=c["n_unit"])
                          for loss, c in cons.iterrows()),
        c_levels=", ".join(format(c, "g") for c in p["c_levels"]), n_base=p["n_base"],
        oracle_factor=mg["oracle_factor"],
        log_ratio=math.log(p["m"] * max(p["n_fixed"])) / p["m"])


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    ms = measure(table, params)
    d = decide(ms, params)
    drops = dropoffs(ms["cells"], ms["constants"], p["n_fixed"])
    cells = ms["cells"].copy()
    cells["n_needed_c_claim"] = np.where(
        cells["family"] == "ball",
        needed_n(cells["loss"].map(ms["n_unit"]).to_numpy(dtype=float), cells["alpha0"],
                 mg["c_claim"]), np.nan)
    cells["chebyshev_mis0"] = np.where(
        cells["family"] == "ball",
        np.minimum(1.0, 4 * cells["loss"].map(ms["n_unit"]).to_numpy(dtype=float)
                   / (cells["alpha0"] ** 2 * cells["n_prime"])), np.nan)
    return Verdict(d.verdict, _numbers(ms, d, drops, p), _summary(ms, d, drops, p, mg),
                   caveats=_caveats(ms, p, mg), sensitivity=sensitivity(ms, table, params),
                   tables={"_cells.csv": cells, "_dropoff.csv": drops,
                           "_constants.csv": ms["constants"].reset_index(),
                           "_gap.csv": ms["gaps"]},
                   scope=_scope(d, drops))


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    """Per loss: success against alpha0 on the ball (every n' level, both directions, Wilson
    bands), and against the start radius r/Delta at the fixed n' levels (every family)."""
    from matplotlib.figure import Figure

    p, mg = params["params"], params["margins"]
    cells = verdict.tables["_cells.csv"]
    cons = verdict.tables["_constants.csv"].set_index("loss")
    n_unit = {loss: float(c["n_unit"]) for loss, c in cons.iterrows()}
    losses = [l for l in p["losses"] if l in n_unit]
    fig = Figure(figsize=(12.0, 4.3 * max(len(losses), 1)))
    axes = fig.subplots(max(len(losses), 1), 2, squeeze=False)
    colors = {"adversarial": "tab:red", "random": "tab:blue"}
    styles = ["-", "--", "-.", ":", (0, (5, 1)), (0, (1, 3))]
    markers = ["o", "s", "^", "v", "D", "P"]
    shift = {"adversarial": 1.0, "random": 1.04}  # a small offset: overlapping curves stay visible
    for r, loss in enumerate(losses):
        ax = axes[r, 0]
        for direction in p["directions"]:
            for i, level in enumerate(_levels(p)):
                s = _series(cells, loss, direction, level, n_unit[loss], p).sort_values("alpha0")
                if s.empty:
                    continue
                ax.plot(s["alpha0"] * shift.get(direction, 1.0), s["p"],
                        ls=styles[i % len(styles)], marker=markers[i % len(markers)],
                        ms=7 - i, mfc="none", color=colors.get(direction, "k"),
                        label=f"{direction}, " + (f"n' = {level[1]}" if level[0] == "fixed"
                                                  else f"c = {level[1]:g}"))
                ax.fill_between(s["alpha0"] * shift.get(direction, 1.0), s["lo"], s["hi"],
                                color=colors.get(direction, "k"), alpha=0.05, lw=0)
        ax.axhline(mg["target"], color="0.5", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(r"$\alpha_0$ (start at $(1/2-\alpha_0)\sqrt{\lambda/L}\,\Delta$)")
        ax.set_ylabel("P(success)")
        c = cons.loc[loss]
        a_min = min(p["alphas"])
        scaled = ", ".join(f"c = {cl:g}: n' = {scaled_n(n_unit[loss], a_min, cl, p['n_base'])}"
                           for cl in p["c_levels"])
        ax.set_title(f"{loss}: inside Assumption 6 (r_A = {c['r_A']:.3g}, Delta = "
                     f"{c['delta']:.3g}); dashed grey: target\nat alpha0 = {a_min:g}: {scaled}",
                     fontsize=9)
        ax.legend(fontsize=6.5, ncol=2)
        ax.grid(alpha=0.3)
        ax = axes[r, 1]
        for direction in p["directions"]:
            for i, n_f in enumerate(p["n_fixed"]):
                s = cells[(cells["loss"] == loss) & (cells["direction"] == direction)
                          & (cells["n_prime"] == n_f)].sort_values("rho")
                ax.plot(s["rho"], s["p"], ls=styles[i % len(styles)],
                        marker=markers[i % len(markers)], ms=6 - i, mfc="none",
                        color=colors.get(direction, "k"), label=f"{direction}, n' = {n_f}")
                ax.fill_between(s["rho"], s["lo"], s["hi"], color=colors.get(direction, "k"),
                                alpha=0.08, lw=0)
        ax.axvline(c["r_A"] / c["delta"], color="tab:green", lw=1,
                   label="assumption's largest radius r_A")
        ax.axvline(0.5, color="0.3", ls=":", lw=1, label="midpoint Delta/2")
        ax.axhline(0.5, color="0.5", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("start radius r / Delta")
        ax.set_ylabel("P(success)")
        ax.set_title(f"{loss}: inside and beyond the assumption (fixed n')", fontsize=9)
        ax.legend(fontsize=6.5)
        ax.grid(alpha=0.3)
    fig.suptitle(f"A6: resampled IFCA, k = 2, m = {p['m']}, T = {p['T']}; Wilson "
                 f"{100 * mg['confidence']:g}% bands", fontsize=10)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="A6", order=64, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
