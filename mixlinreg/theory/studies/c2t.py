"""Study C2T, version 2: Corollary 2's iteration count ``T(eps) = (8L/(p lambda)) log(2 Delta/eps)``
and the burn-in ``T' = (8L/(p lambda)) log(4 sqrt(L/lambda))`` of its proof (Appendix D, eq. (37)),
judged by the error **at and after** the bound.

Setting: the two strongly convex mixtures of :mod:`mixlinreg.theory.convex` (l2-regularized
logistic; Huber + ridge with Student t noise), ``k = 2`` clusters of ``round(p m)`` and the rest
of ``m`` machines (``p = min_j p_j``), ``lambda``, ``L``, ``Delta`` and the population minimizers
``theta_pop`` from the shared constants piece (:func:`~mixlinreg.theory.convex.constants_piece`:
the Hessian's extreme eigenvalues on Theorem 2's ball for the smallest ``alpha0`` of the config,
which contains every start). Resampled IFCA (:func:`mixlinreg.ifca`, ``resample=True``: each
iteration on ``2 n'`` fresh rows per machine; step ``step_mult / L``, the corollary's ``1/L`` at
the default ``step_mult = 1``) starts with every model at distance ``(1/2 - alpha0)
sqrt(lambda/L) Delta`` from its ``theta_pop_j`` (at most the ball's radius): in a random
direction, and in the adversarial one (each model moved straight toward the other cluster's
minimizer), all runs of one data set sharing its rows.

Every run goes on for ``T_max = ceil(run_mult x max(T(eps_min), T'))`` iterations (no early end;
:func:`run_length`), so every level of the grid is watched from its bound to the end. Measured per
run and level (the ``eps`` grid, geometric from ``eps_hi_frac x Delta`` down to ``eps_lo_mult x``
the calibrated floor, and the burn-in level ``(1/4) sqrt(lambda/L) Delta`` with bound ``T'``), by
:func:`after_bound`: whether ``max_j ||theta_j^(t) - theta_pop_j|| <= eps`` at ``t = ceil(T)``
and at every ``t`` in ``[ceil(T), T_max]`` (*stays*), the iteration from which it stays (the last
passage), the largest error after the bound over ``eps``; and, as in version 1, the first passage
``T_hat(eps)`` with its slope in ``log(1/eps)`` against the bound's ``8L/(p lambda)`` and the
burn-in against ``T'`` (how loose the bound is).

The error floor of a cell is calibrated beforehand on independent data sets at the corollary's
step ``1/L`` (whatever ``step_mult``: the floor belongs to the statistical problem, not to the
run): an ``eps`` below ``floor_mult x`` the floor is *not reached* (the corollary's ``eps`` is at
least its floor, whose constants are unknown): not judged, and the verdict is at best "holds with
a caveat".

Verdict (:func:`decide`, pure): each reachable (``alpha0``, direction, level) is a test over the
data sets: the fraction of runs whose error does not stay at most the level from ``ceil(T)`` to
``T_max``, Wilson interval at ``confidence``. "not supported" if some lower end is above ``tol``;
"inconclusive" if some upper end is above ``tol``, a run was too short to judge a level, or no
reachable ``eps`` lies below some run's start; "holds with a caveat" if it holds but some ``eps``
of the grid was not reached or the bound is loose by more than ``loose_factor`` (the bootstrap
interval of ``(8L/(p lambda)) / slope``, or of ``T' / mean burn-in``, entirely above it); else
"holds". A test (*cell* of :attr:`Verdict.cells`) is *hard* when its outcome was not certain from
the construction: its ``eps`` within ``hard_floor_mult x`` the floor, or some run's last passage
at ``hard_ratio x T`` or later (or a censored run). The control (config) runs the same rule with
the step ``0.01/L`` and ``T(eps)``, ``T'`` still those of ``1/L``. Config:
``mixlinreg/configs/studies/C2T.toml``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import Fit, bootstrap, wilson_interval
from .. import bounds
from ..convex import K, LOSS_SETUPS, constants_piece, init_at_distance
from ..study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict,
                     combine, with_margin)
from ..words import sensitivity_lines, words
# the model pieces (re-exported here: the study's API)
from ._c2t_model import (_cell_constants, _constants_params, _drawer, _ifca_kw, _sizes,
                         adversarial_init, after_bound, burn_in_bound, check_iteration,
                         eps_grid, first_hit, floor_piece, iteration_bound, run_chunked,
                         run_length, start_radius)

#: the study's prose: c2t.md beside this module
WORDS = words(__file__)

KINDS = ("random", "adversarial")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "losses": Spec("list[str]"), "m": Spec("int", low=4), "n_prime": Spec("int", low=1),
        "p_small": Spec("list[float]", low=0, high=0.5, open="low"),
        "alpha0": Spec("list[float]", low=0, high=0.25, open="both"),
        "seeds": Spec("int", low=2), "blocks": Spec("int", low=1),
        "chunk": Spec("int", low=1), "max_iters": Spec("int", low=1),
        "run_mult": Spec("float", low=1),
        # the run's step is step_mult / L (the corollary's 1/L at the default 1); T(eps) and T'
        # are always those of 1/L: the control's small step leaves them far too short
        "step_mult": Spec("float", low=0, open="low", required=False, default=1.0),
        "cal_seeds": Spec("int", low=1), "cal_T": Spec("int", low=2), "tail": Spec("int", low=1),
        "n_eps": Spec("int", low=2), "eps_hi_frac": Spec("float", low=0, high=1, open="low"),
        "eps_lo_mult": Spec("float", low=1, open="low"),
        "hard_floor_mult": Spec("float", low=1), "hard_ratio": Spec("float", low=0, open="low"),
        "trace_seeds": Spec("int", low=0), "n_boot": Spec("int", low=100),
        "n_samples": Spec("int", low=100), "n_line": Spec("int", low=100),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
    },
    "margins": {
        "tol": Spec("float", **_OPEN01), "tol_neighbours": Spec("list[float]", **_OPEN01),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
        "loose_factor": Spec("float", low=1),
        "loose_factor_neighbours": Spec("list[float]", low=1),
        "floor_mult": Spec("float", low=1, open="low"),
        "floor_mult_neighbours": Spec("list[float]", low=1, open="low"),
    },
}


# ------------------------------------------------------------------------------ the bounds


def _check(p, mg=None):
    for loss in p["losses"]:
        if loss not in LOSS_SETUPS:
            raise ValueError(f"study C2T: params.losses must be among {sorted(LOSS_SETUPS)}, got "
                             f"{loss!r}")
    if p["seeds"] % p["blocks"]:
        raise ValueError(f"study C2T: params.seeds ({p['seeds']}) must be a multiple of "
                         f"params.blocks ({p['blocks']})")
    if p["tail"] > p["cal_T"]:
        raise ValueError(f"study C2T: params.tail ({p['tail']}) must be at most params.cal_T "
                         f"({p['cal_T']})")
    if p["trace_seeds"] > p["seeds"]:
        raise ValueError(f"study C2T: params.trace_seeds ({p['trace_seeds']}) must be at most "
                         f"params.seeds ({p['seeds']})")
    if len(set(p["alpha0"])) != len(p["alpha0"]):
        raise ValueError(f"study C2T: params.alpha0 must be distinct, got {p['alpha0']}")
    if not p.get("step_mult", 1.0) > 0:
        raise ValueError(f"study C2T: params.step_mult must be positive, got {p['step_mult']}")
    for ps in p["p_small"]:
        _sizes(p["m"], ps)
    if mg is not None:
        lowest = min([mg["floor_mult"]] + list(mg["floor_mult_neighbours"]))
        if p["eps_lo_mult"] > lowest:
            raise ValueError(f"study C2T: params.eps_lo_mult ({p['eps_lo_mult']}) must be at most "
                             f"the smallest margins.floor_mult or neighbour ({lowest:g}): the grid "
                             "must reach every reachability limit tried")


def units(params):
    p = params["params"]
    _check(p, params.get("margins"))
    reps = p["seeds"] // p["blocks"]
    return [(f"c2t_{loss}_p={ps:g}_b={b}", {"loss": loss, "p_small": ps, "first": b * reps,
                                            "reps": reps})
            for loss in p["losses"] for ps in p["p_small"] for b in range(p["blocks"])]


#: shared pieces already computed in this process, by (name, params, generator state): without a
#: store (``--no-store``) the runner computes a shared piece again for every unit that asks; the
#: rows depend only on the key, so they are reused (a copy)
_MEMO: dict = {}


def _memo_shared(shared, name, fn, params):
    def wrapped(rng):
        key = (name, repr(sorted(params.items())),
               json.dumps(rng.bit_generator.state, sort_keys=True, default=str))
        if key not in _MEMO:
            if len(_MEMO) > 64:
                _MEMO.clear()
            _MEMO[key] = fn(rng)
        return _MEMO[key].copy()

    return shared(name, wrapped)


def _floor_params(p):
    """The params the floor calibration depends on (it always runs at the corollary's 1/L)."""
    return {k: v for k, v in p.items() if k != "step_mult"}


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, ps = spec["loss"], spec["p_small"]
    sizes = _sizes(p["m"], ps)
    cons = _memo_shared(shared, f"constants_{loss}", constants_piece(loss, _constants_params(p)),
                        _constants_params(p))
    c = _cell_constants(cons, sizes)
    fp = _floor_params(p)
    cal = _memo_shared(shared, f"floor_{loss}_p={ps:g}", floor_piece(loss, ps, cons, fp),
                       {**fp, "constants": cons.to_json(double_precision=15)})
    floor_cal = float(np.median(cal["floor"]))
    bnd = dict(L=c["L"], p=c["p"], lam=c["lam"], Delta=c["delta"])
    eps = eps_grid(c["delta"], floor_cal, p)
    t_eps = np.asarray(iteration_bound(eps, **bnd), dtype=float)
    t_prime = burn_in_bound(L=c["L"], p=c["p"], lam=c["lam"])
    t_max = run_length(t_eps, t_prime, p["run_mult"], p["max_iters"])
    quarter = 0.25 * c["scale"]
    kappa = 8.0 * c["L"] / (c["p"] * c["lam"])
    labels = np.repeat(np.arange(K), sizes)
    runs = [(a, kind) for a in p["alpha0"] for kind in KINDS]
    step_mult = float(p.get("step_mult", 1.0))
    base = {"loss": loss, "p_small": ps, "p": c["p"], "m": p["m"], "n_prime": p["n_prime"],
            "lam": c["lam"], "L": c["L"], "delta": c["delta"], "kappa": kappa,
            "t_prime": t_prime, "quarter": quarter, "floor_cal": floor_cal, "t_max": t_max,
            "step_mult": step_mult}
    levels = np.append(eps, quarter)
    level_bounds = np.append(t_eps, t_prime)
    t_check = check_iteration(level_bounds)
    rows = []
    for s, gen in enumerate(rng.spawn(spec["reps"])):
        seed = spec["first"] + s
        inits, starts = [], []
        for a, kind in runs:
            r, a_eff = start_radius(a, c)
            starts.append((r, a_eff))
            inits.append(init_at_distance(c["centers"], r, 1, gen)[0] if kind == "random"
                         else adversarial_init(c["centers"], r))
        dist, _, lab0, div = run_chunked(_drawer(loss, sizes, p["n_prime"], gen),
                                         np.array(inits), step_mult / c["L"], t_max, p["chunk"],
                                         centers=c["centers"], **_ifca_kw(loss))
        err = dist.max(axis=2)  # (t_run + 1, R)
        t_run = err.shape[0] - 1
        hits = first_hit(err, levels)
        aft = after_bound(err, levels, level_bounds)
        for i, (a, kind) in enumerate(runs):
            run = {**base, "seed": seed, "alpha0": a, "alpha_start": starts[i][1], "kind": kind,
                   "start": float(err[0, i]), "t_run": t_run}

            def judged(q, prefix=""):
                chk = bool(aft["checked"][i, q])
                return {f"{prefix}t_check": int(t_check[q]), f"{prefix}checked": chk,
                        f"{prefix}at_T": bool(aft["at_T"][i, q]),
                        f"{prefix}stays": bool(aft["stays"][i, q]),
                        f"{prefix}t_stay": int(aft["t_stay"][i, q]),
                        f"{prefix}worst_after": float(aft["worst_after"][i, q])}

            burn = int(hits[i, -1])
            rows.append({**run, "part": "run", "burn_in": float(burn) if burn >= 0 else np.nan,
                         **judged(len(eps), "burn_"),
                         "floor_run": float(err[-p["tail"]:, i].mean()),
                         "mis0": float((lab0[i] != labels).mean()), "diverged": bool(div[i])})
            for q, (e, te) in enumerate(zip(eps, t_eps)):
                h = int(hits[i, q])
                rows.append({**run, "part": "eps", "eps_index": q, "eps": float(e),
                             "t_bound": float(te), "reached": h >= 0,
                             "t_hat": float(h) if h >= 0 else np.nan, **judged(q)})
            if seed < p["trace_seeds"]:
                rows.extend({**run, "part": "trace", "t": t, "err": float(v)}
                            for t, v in enumerate(err[:, i]))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ measure


#: columns a part keeps even when every value is missing (no eps reached, no burn-in reached)
_KEEP = {"eps": ("t_hat",), "run": ("burn_in",), "trace": ()}


def _part(table, part):
    """The rows of one part (``"eps"``, ``"run"``, ``"trace"``), without the other parts'
    columns."""
    rows = table[table["part"] == part]
    out = rows.dropna(axis=1, how="all")
    for col in _KEEP[part]:
        if col not in out:
            out = out.assign(**{col: np.nan})
    return out


def _bool(col):
    """A column of booleans as the record's CSV reads it back (``True``/``False`` or 1/0)."""
    return np.asarray(pd.Series(col).map(lambda v: v in (True, 1, 1.0, "True", "true")),
                      dtype=bool)


def stay_counts(checked, stays, at_t):
    """Per test: ``exceed`` (checked runs whose error does not stay at most the level from
    ``ceil(T)`` to the end), ``exceed_at_T`` (checked runs over the level at ``ceil(T)``),
    ``censored`` (runs too short to check).

    >>> stay_counts([True, True, True, False], [True, False, False, False],
    ...             [True, True, False, False])
    (2, 1, 1)
    """
    checked, stays, at_t = _bool(checked), _bool(stays), _bool(at_t)
    return (int((checked & ~stays).sum()), int((checked & ~at_t).sum()),
            int((~checked).sum()))


def pooled_slope(x, y, run):
    """Within-run least squares slope of ``y`` on ``x`` (each run its own intercept), pooled:
    ``(Sxy, Sxx)`` summed over runs (runs with one point add nothing).

    >>> pooled_slope([0, 1, 2, 0, 1], [1, 3, 5, 7, 9], [0, 0, 0, 1, 1])
    (5.0, 2.5)
    """
    df = pd.DataFrame({"x": np.asarray(x, dtype=float), "y": np.asarray(y, dtype=float),
                       "r": np.asarray(run)})
    g = df.groupby("r")
    dx = df["x"] - g["x"].transform("mean")
    dy = df["y"] - g["y"].transform("mean")
    return float((dx * dy).sum()), float((dx * dx).sum())


def _ratio_fit(num, den, n_boot, rng):
    """Bootstrap (over rows = data sets) of ``sum(num) / sum(den)``; None with < 2 rows or a zero
    denominator."""
    v = np.column_stack([num, den]).astype(float)
    if v.shape[0] < 2 or v[:, 1].sum() <= 0:
        return None
    return bootstrap(v, lambda a: a[:, 0].sum() / max(a[:, 1].sum(), 1e-300), n_boot=n_boot,
                     rng=rng)


def _hard(eps, floor_cal, stay_ratio_max, censored, p):
    """Whether a test's outcome was not certain from the construction (the registered rule):
    its level within ``hard_floor_mult x`` the calibrated floor, or some run's last passage
    above it at ``hard_ratio x`` its bound or later (never staying counts), or a censored run."""
    near_floor = bool(np.isfinite(floor_cal) and eps < p["hard_floor_mult"] * floor_cal)
    late = bool(not np.isfinite(stay_ratio_max) or stay_ratio_max >= p["hard_ratio"])
    return near_floor or late or censored > 0


def _test_row(key, g, *, what, level, bound, reachable, floor_cal, p, prefix=""):
    """One test's row from the runs ``g`` of one (alpha0, direction, level)."""
    chk = _bool(g[prefix + "checked"])
    exceed, exceed_t, cens = stay_counts(g[prefix + "checked"], g[prefix + "stays"],
                                         g[prefix + "at_T"])
    hat = g["t_hat"] if what == "eps" else g["burn_in"]
    reached = hat.notna().to_numpy()
    ratio = (hat / bound)[reached]
    t_stay = g[prefix + "t_stay"].to_numpy(dtype=float)
    t_run = g["t_run"].to_numpy(dtype=float)
    # the last passage over the bound: never settling (t_stay = t_run + 1) counts as infinite
    stay_ratio = np.where(t_stay > t_run, np.inf, t_stay / bound)
    sr_max = float(stay_ratio.max()) if len(g) else np.nan
    worst = g[prefix + "worst_after"].to_numpy(dtype=float)[chk]
    return {**key, "what": what, "alpha0": float(g["alpha0"].iloc[0]),
            "kind": g["kind"].iloc[0], "eps": float(level), "bound": float(bound),
            "t_check": int(g[prefix + "t_check"].iloc[0]), "reachable": bool(reachable),
            "n": len(g), "exceed": exceed, "exceed_at_T": exceed_t, "censored": cens,
            "reached": int(reached.sum()), "below_start": int((level < g["start"]).sum()),
            "ratio_max": float(ratio.max()) if len(ratio) else np.nan,
            "ratio_median": float(ratio.median()) if len(ratio) else np.nan,
            "t_hat_median": float(hat[reached].median()) if len(ratio) else np.nan,
            "stay_ratio_max": sr_max,
            "worst_after_max": float(worst.max()) if worst.size else np.nan,
            "hard": bool(reachable) and _hard(level, floor_cal, sr_max, cens, p)}


def measure(table, params, rng, floor_mult=None):
    """The measurements, ``{"tests": DataFrame, "cells": DataFrame}``.

    ``tests``: one row per cell (loss, ``p``), ``alpha0``, direction and ``eps`` (``what="eps"``)
    or burn-in level (``what="burn-in"``, bound ``T'``): ``n`` data sets, ``exceed`` (runs whose
    error does not stay at most the level from ``ceil(T)`` to the run's end), ``exceed_at_T``
    (over it at ``ceil(T)``), ``censored`` (run shorter than ``ceil(T)``), ``reachable``
    (``eps >= floor_mult x`` the calibrated floor; always true for the burn-in), ``hard``, the
    largest last passage over the bound, the largest error after the bound over the level, and
    (first passage) the largest and median ``T_hat / T``.

    ``cells``: per cell the bound's slope ``8L/(p lambda)`` and ``T'``, the measured slope of
    ``T_hat`` in ``log(1/eps)`` over the transient (reached ``eps`` below the run's start and
    reachable), its bootstrap interval over data sets, the slope ratio and ``T' / mean burn-in``
    with intervals, the implied per-step factor, burn-in medians per ``alpha0`` and their spread,
    the grid's ``eps`` not reached.
    """
    p, mg = params["params"], params["margins"]
    fm = mg["floor_mult"] if floor_mult is None else floor_mult
    ep, rn = _part(table, "eps"), _part(table, "run")
    tests, cells = [], []
    for (loss, ps), ge in ep.groupby(["loss", "p_small"], sort=False):
        gr = rn[(rn["loss"] == loss) & (rn["p_small"] == ps)]
        first = gr.iloc[0]
        floor_cal = float(first["floor_cal"])
        key = {"loss": loss, "p_small": ps, "p": float(first["p"])}
        reach_lim = fm * floor_cal
        ge = ge.assign(reachable=ge["eps"] >= reach_lim if np.isfinite(reach_lim) else False)
        for (a, kind, q), g in ge.groupby(["alpha0", "kind", "eps_index"], sort=True):
            tests.append({**_test_row(key, g, what="eps", level=float(g["eps"].iloc[0]),
                                      bound=float(g["t_bound"].iloc[0]),
                                      reachable=bool(g["reachable"].iloc[0]),
                                      floor_cal=floor_cal, p=p), "eps_index": int(q)})
        tp = float(first["t_prime"])
        for (a, kind), g in gr.groupby(["alpha0", "kind"], sort=True):
            tests.append({**_test_row(key, g, what="burn-in", level=float(first["quarter"]),
                                      bound=tp, reachable=True, floor_cal=floor_cal, p=p,
                                      prefix="burn_"), "eps_index": -1})
        # the slope over the transient: reached, reachable, below the run's start
        tr = ge[_bool(ge["reached"]) & ge["reachable"] & (ge["eps"] < ge["start"])]
        tr = tr.assign(x=np.log(1.0 / tr["eps"]), run=tr["seed"].astype(str) + "_"
                       + tr["alpha0"].astype(str) + "_" + tr["kind"])
        per_seed = [pooled_slope(g["x"], g["t_hat"], g["run"]) for _, g in tr.groupby("seed")]
        kappa = float(first["kappa"])
        tag = f"{loss}_{ps:g}_{fm:g}"
        slope = _ratio_fit([a for a, _ in per_seed], [b for _, b in per_seed], p["n_boot"],
                           rng(f"slope_{tag}"))
        sratio = None
        if slope is not None and slope.lo > 0:
            sratio = Fit(kappa / slope.est, kappa / slope.hi, kappa / slope.lo, slope.n)
        burn = gr.dropna(subset=["burn_in"]).groupby("seed")["burn_in"].agg(["sum", "count"])
        bfit = _ratio_fit(burn["sum"].to_numpy(), burn["count"].to_numpy(), p["n_boot"],
                          rng(f"burn_{tag}"))
        bratio = None
        if bfit is not None and bfit.lo > 0:
            bratio = Fit(tp / bfit.est, tp / bfit.hi, tp / bfit.lo, bfit.n)
        med = gr.groupby("alpha0")["burn_in"].median()
        factor = math.exp(-1.0 / slope.est) if slope is not None and slope.est > 0 else np.nan
        grid = ge.drop_duplicates("eps_index")
        row = {**key, "lam": float(first["lam"]), "L": float(first["L"]),
               "delta": float(first["delta"]), "kappa": kappa, "t_prime": tp,
               "floor_cal": floor_cal, "floor_run_median": float(gr["floor_run"].median()),
               "reach_limit": reach_lim, "t_max": int(first["t_max"]),
               "t_run_max": int(gr["t_run"].max()), "t_run_min": int(gr["t_run"].min()),
               "t_bound_max": float(grid["t_bound"].max()),
               "n_eps_grid": len(grid), "n_eps_not_reached": int((~grid["reachable"]).sum()),
               "step_mult": float(first["step_mult"]) if "step_mult" in first else 1.0,
               "bound_factor": float(bounds.theorem2_factor(float(first["p"]),
                                                            float(first["lam"]),
                                                            float(first["L"]))),
               "implied_factor": factor, "transient_points": len(tr),
               "burn_in_spread": float(med.max() - med.min()) if med.notna().any() else np.nan,
               "burn_in_by_alpha0": ";".join(f"{a:g}:{v:g}" for a, v in med.items()),
               "mis0_max": float(gr["mis0"].max()), "diverged": int(_bool(gr["diverged"]).sum()),
               "alpha_start_by_alpha0": ";".join(
                   f"{a:g}:{v:.3g}" for a, v in gr.groupby("alpha0")["alpha_start"].min().items())}
        for name, f in (("slope", slope), ("slope_ratio", sratio), ("burn_in_mean", bfit),
                        ("burn_ratio", bratio)):
            row.update({f"{name}": f.est if f else np.nan, f"{name}_lo": f.lo if f else np.nan,
                        f"{name}_hi": f.hi if f else np.nan})
        cells.append(row)
    return {"tests": pd.DataFrame(tests), "cells": pd.DataFrame(cells)}


# ------------------------------------------------------------------------------ decide


def _cell_name(loss, ps):
    return f"{loss} p={ps:g}"


def decide(meas, params):
    """The verdict from the measurements (:func:`measure`) with ``params["margins"]``' ``tol``,
    ``confidence`` and ``loose_factor``.

    Each reachable test (``tests``: columns ``loss``, ``p_small``, ``what``, ``reachable``, ``n``,
    ``exceed``, ``censored``): Wilson interval of ``exceed / n`` (runs not staying at most the
    level from ``ceil(T)`` on) at ``confidence``; *violated* if its lower end is above ``tol``,
    *certified* if its upper end is at most ``tol`` and nothing is censored, *undetermined*
    otherwise. Per cell (loss, ``p``): "not supported" if a test is violated; else
    "inconclusive" if one is undetermined or no reachable ``eps`` lies below some run's start
    (column ``below_start``: runs with ``eps`` below their start, ``n`` if absent; above every
    start the test says little); else "holds with a caveat" if some ``eps`` of the grid is not
    reached (a test with ``reachable`` false) or the bound is *loose* (``cells``'
    ``slope_ratio_lo`` or ``burn_ratio_lo`` above ``loose_factor``), else "holds". The claim:
    the weakest cell. ``numbers``: the three margins and per cell its verdict, the counts of
    violated, undetermined and certified tests, of tests not reached, the largest Wilson bounds,
    the looseness lower ends and ``loose``."""
    mg = params["margins"]
    tol, conf, lf = mg["tol"], mg["confidence"], mg["loose_factor"]
    tests, cells = meas["tests"], meas["cells"]
    out = {}
    for c in cells.itertuples():
        mine = tests[(tests["loss"] == c.loss) & (tests["p_small"] == c.p_small)]
        t = mine[mine["reachable"].astype(bool)]
        te = t[t["what"] == "eps"]
        below = te["below_start"] if "below_start" in te else te["n"]
        n_eps = len(te)
        n_informative = int((below > 0).sum())
        not_reached = int(((mine["what"] == "eps") & ~mine["reachable"].astype(bool)).sum())
        if len(t):
            lo, hi = wilson_interval(t["exceed"].to_numpy(), t["n"].to_numpy(), conf)
            lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
        else:
            lo = hi = np.array([])
        cens = t["censored"].to_numpy() > 0
        violated = lo > tol
        certified = (hi <= tol) & ~cens
        undetermined = ~violated & ~certified
        sl, bl = getattr(c, "slope_ratio_lo", np.nan), getattr(c, "burn_ratio_lo", np.nan)
        loose = bool((np.isfinite(sl) and sl > lf) or (np.isfinite(bl) and bl > lf))
        if violated.any():
            v = NOT_SUPPORTED
        elif undetermined.any() or n_informative == 0:
            v = INCONCLUSIVE
        else:
            v = CAVEAT if (loose or not_reached) else HOLDS
        out[_cell_name(c.loss, c.p_small)] = {
            "verdict": v, "violated": int(violated.sum()), "undetermined": int(undetermined.sum()),
            "certified": int(certified.sum()), "eps_tests": n_eps,
            "eps_tests_below_start": n_informative, "eps_not_reached": not_reached,
            "worst_lo": float(lo.max()) if lo.size else np.nan,
            "worst_hi": float(hi.max()) if hi.size else np.nan,
            "slope_ratio_lo": float(sl), "burn_ratio_lo": float(bl), "loose": loose}
    verdict = combine([c["verdict"] for c in out.values()]) if out else INCONCLUSIVE
    return Decision(verdict, {"tol": tol, "confidence": conf, "loose_factor": lf, "cells": out})


def _with(params, **margins):
    """``params`` with these margins set (kept for tests/test_corollary2_iterations.py)."""
    for key, value in margins.items():
        params = with_margin(params, key, value)
    return params


def hard_cells(meas, params):
    """``Verdict.cells``: of the reachable tests (the judged cells: loss x ``p`` x ``alpha0`` x
    direction x level), how many are hard (:func:`_hard`), and the rule in words."""
    p = params["params"]
    t = meas["tests"]
    t = t[t["reachable"].astype(bool)] if len(t) else t
    return {"hard": int(t["hard"].sum()) if len(t) else 0, "total": int(len(t)),
            "rule": WORDS.text("cells rule", hard_floor_mult=p["hard_floor_mult"],
                               hard_ratio=p["hard_ratio"])}


# ------------------------------------------------------------------------------ analyze


def _fmt(est, lo, hi, digits=3):
    if not np.isfinite(est):
        return WORDS.text("not measured")
    f = f"{{:.{digits}g}}"
    return f"{f.format(est)} [{f.format(lo)}, {f.format(hi)}]"


def _reach(meas, c):
    t = meas["tests"]
    return t[(t["loss"] == c.loss) & (t["p_small"] == c.p_small) & t["reachable"].astype(bool)]


def _scope(meas, dec):
    parts = []
    for c in meas["cells"].itertuples():
        d = dec.numbers["cells"][_cell_name(c.loss, c.p_small)]
        te = _reach(meas, c)
        te = te[te["what"] == "eps"]
        worst = te["worst_after_max"].max() if len(te) else np.nan
        parts.append(WORDS.text("scope" if not np.isfinite(worst) else "scope.worst",
                                cell=_cell_name(c.loss, c.p_small), verdict=d["verdict"],
                                exceed=int(te["exceed"].sum()), n=int(te["n"].sum()),
                                worst=worst))
    return "; ".join(parts)


def _stay_text(x):
    """The summary's words on the latest last passage over eps (``None``: no eps judged)."""
    if x is None:
        return WORDS.text("stay.none")
    return WORDS.text("stay.never") if not np.isfinite(x) else WORDS.text("stay.ratio", ratio=x)


def _ratio_text(x):
    return "never" if not np.isfinite(x) else f"{x:.3g}"


def _numbers(meas, dec):
    rows = []
    for c in meas["cells"].itertuples():
        d = dec.numbers["cells"][_cell_name(c.loss, c.p_small)]
        t = _reach(meas, c)
        te = t[t["what"] == "eps"]
        tb = t[t["what"] == "burn-in"]
        rows.append({
            "loss": c.loss, "p": round(c.p, 4), "8L/(p lam)": round(c.kappa, 1),
            "T' (eq. 37)": round(c.t_prime, 1), "T_max": int(c.t_max),
            "reachable eps": (WORDS.text("numbers.reachable eps", lo=te["eps"].min(),
                                         hi=te["eps"].max(), n=len(te),
                                         not_reached=int(c.n_eps_not_reached))
                              if len(te) else WORDS.text("numbers.no reachable eps")),
            "runs not staying <= eps from T(eps)": WORDS.text(
                "numbers.runs over", exceed=int(te["exceed"].sum()), n=int(te["n"].sum()),
                exceed_at_T=int(te["exceed_at_T"].sum()),
                below_start=int(te["below_start"].sum())),
            "max err after T(eps) / eps": (round(float(te["worst_after_max"].max()), 3)
                                           if len(te) else np.nan),
            "max last passage / T(eps)": (_ratio_text(float(te["stay_ratio_max"].max()))
                                          if len(te) else ""),
            "max T_hat/T(eps)": round(float(te["ratio_max"].max()), 3) if len(te) else np.nan,
            "slope dT_hat/dlog(1/eps) [95% CI]": _fmt(c.slope, c.slope_lo, c.slope_hi),
            "bound slope / measured": _fmt(c.slope_ratio, c.slope_ratio_lo, c.slope_ratio_hi),
            "burn-in not staying from T'": f"{int(tb['exceed'].sum())}/{int(tb['n'].sum())}",
            "mean burn-in [95% CI]": _fmt(c.burn_in_mean, c.burn_in_mean_lo, c.burn_in_mean_hi),
            "T'/mean burn-in": _fmt(c.burn_ratio, c.burn_ratio_lo, c.burn_ratio_hi),
            "hard tests": f"{int(t['hard'].sum())}/{len(t)}",
            "worst Wilson [lo, hi]": (f"[{d['worst_lo']:.3g}, {d['worst_hi']:.3g}]"
                                      if np.isfinite(d["worst_hi"]) else ""),
            "verdict": d["verdict"]})
    return pd.DataFrame(rows)


def _non_increasing(by_alpha):
    """Whether the medians ``"a:v;a:v"`` (ascending ``a``) never increase."""
    v = [float(x.split(":")[1]) for x in by_alpha.split(";") if x]
    return all(b <= a for a, b in zip(v, v[1:]))


def _slope_words(c):
    if not np.isfinite(c.slope):
        return WORDS.text("slope.not measured", kappa=c.kappa)
    return WORDS.text("slope", slope=_fmt(c.slope, c.slope_lo, c.slope_hi), kappa=c.kappa,
                      implied_factor=c.implied_factor, bound_factor=c.bound_factor)


def _summary(meas, dec, params, cells_count):
    p, mg = params["params"], params["margins"]
    nb = dec.numbers
    parts = []
    for c in meas["cells"].itertuples():
        d = nb["cells"][_cell_name(c.loss, c.p_small)]
        t = _reach(meas, c)
        te = t[t["what"] == "eps"]
        tb = t[t["what"] == "burn-in"]
        parts.append(WORDS.text(
            "cell", cell=_cell_name(c.loss, c.p_small), lam=c.lam, L=c.L, delta=c.delta,
            kappa=c.kappa, t_prime=c.t_prime, floor_cal=c.floor_cal, reach_limit=c.reach_limit,
            t_max=int(c.t_max), t_bound_max=c.t_bound_max,
            n_tests=len(te), not_reached=int(c.n_eps_not_reached),
            exceed=int(te["exceed"].sum()), exceed_at_T=int(te["exceed_at_T"].sum()),
            n=int(te["n"].sum()), below_start=int(te["below_start"].sum()),
            worst_after=te["worst_after_max"].max() if len(te) else np.nan,
            stay=_stay_text(float(te["stay_ratio_max"].max()) if len(te) else None),
            burn_exceed=int(tb["exceed"].sum()), burn_n=int(tb["n"].sum()),
            burn_worst=tb["worst_after_max"].max() if len(tb) else np.nan,
            ratio_max=te["ratio_max"].max() if len(te) else np.nan,
            slope=_slope_words(c), burn_in=_fmt(c.burn_in_mean, c.burn_in_mean_lo,
                                                c.burn_in_mean_hi),
            hard=int(t["hard"].sum()), total=len(t), verdict=d["verdict"]))
    loose = [k for k, v in nb["cells"].items() if v["loose"]]
    cells = meas["cells"]
    tail = []
    if loose:
        sr, br = cells["slope_ratio"].dropna(), cells["burn_ratio"].dropna()
        tail.append(WORDS.text(
            "summary.loose", cells=", ".join(loose),
            slope=(WORDS.text("loose.slope", lo=sr.min(), hi=sr.max()) if len(sr)
                   else WORDS.text("loose.no slope")),
            burn=(WORDS.text("loose.burn-in", lo=br.min(), hi=br.max()) if len(br)
                  else WORDS.text("loose.no burn-in"))))
    tail.append(WORDS.text("summary.hard", hard=cells_count["hard"],
                           total=cells_count["total"]))
    return WORDS.text("summary", confidence=mg["confidence"], tol=mg["tol"],
                      loose_factor=mg["loose_factor"], floor_mult=mg["floor_mult"], m=p["m"],
                      n_prime=p["n_prime"], seeds=p["seeds"], alpha0=p["alpha0"],
                      step_mult=float(p.get("step_mult", 1.0)), run_mult=p["run_mult"],
                      cells=". ".join(parts), tail="".join(" " + x for x in tail))


def _caveats(meas, params):
    p = params["params"]
    cells = meas["cells"]
    floors = ", ".join(WORDS.text("caveats.floor", cell=_cell_name(c.loss, c.p_small),
                                  floor=c.floor_cal, own=c.floor_run_median)
                       for c in cells.itertuples())
    mis = max(cells["mis0_max"]) if len(cells) else np.nan
    starts = "; ".join(WORDS.text("caveats.alpha start", loss=c.loss,
                                  alphas=c.alpha_start_by_alpha0)
                       for c in cells.drop_duplicates("loss").itertuples())
    longest = ", ".join(WORDS.text("caveats.longest", cell=_cell_name(c.loss, c.p_small),
                                   t_run=c.t_run_min, t_max=c.t_max, t_bound_max=c.t_bound_max,
                                   t_prime=c.t_prime)
                        for c in cells.itertuples())
    diverged = int(cells["diverged"].sum()) if len(cells) else 0
    return WORDS.items("caveats", floors=floors, mis=mis, alpha_starts=starts, seeds=p["seeds"],
                       max_iters=p["max_iters"], chunk=p["chunk"], tail=p["tail"],
                       cal_T=p["cal_T"], cal_seeds=p["cal_seeds"], run_mult=p["run_mult"],
                       longest=longest, diverged=diverged,
                       step_mult=float(p.get("step_mult", 1.0)))


def analyze(table, params, rng):
    meas = measure(table, params, rng)
    dec = decide(meas, params)

    def verdict_at(q, key):  # floor_mult changes the measurement; the others only the decision
        return decide(measure(table, q, rng) if key == "floor_mult" else meas, q).verdict

    sens = sensitivity_lines(WORDS, params, verdict_at)
    count = hard_cells(meas, params)
    tables = {".csv": _part(table, "eps"), "_runs.csv": _part(table, "run"),
              "_traces.csv": _part(table, "trace"), "_tests.csv": meas["tests"],
              "_cells.csv": meas["cells"]}
    return Verdict(dec.verdict, _numbers(meas, dec), _summary(meas, dec, params, count),
                   caveats=_caveats(meas, params), sensitivity=sens, tables=tables,
                   scope=_scope(meas, dec), cells=count)


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    cells = verdict.tables["_cells.csv"]
    tests = verdict.tables["_tests.csv"]
    tr = _part(table, "trace")
    fig = Figure(figsize=(11.0, 3.6 * max(len(cells), 1)))
    axes = fig.subplots(max(len(cells), 1), 2, squeeze=False)
    alphas = sorted(params["params"]["alpha0"])
    for r, c in enumerate(cells.itertuples()):
        ax = axes[r, 0]
        g = tr[(tr["loss"] == c.loss) & (tr["p_small"] == c.p_small)] if len(tr) else tr
        for i, a in enumerate(alphas):
            for kind, ls in zip(KINDS, ("-", "--")):
                h = g[(g["alpha0"] == a) & (g["kind"] == kind)] if len(g) else g
                for s, hs in (h.groupby("seed") if len(h) else []):
                    ax.plot(hs["t"] + 1, hs["err"], ls, color=f"C{i}", lw=0.8,
                            label=f"alpha0 = {a:g}, {kind}" if s == h["seed"].min() else None)
        tt = np.arange(0, c.t_max + 1)
        ax.plot(tt + 1, 2 * c.delta * np.exp(-tt / c.kappa), "k-", lw=1.2,
                label="bound: eps with T(eps) = t")
        quarter = float(table.loc[table["loss"] == c.loss, "quarter"].iloc[0])
        ax.axhline(quarter, color="gray", ls=":", lw=0.8, label="(1/4) sqrt(lam/L) Delta")
        ax.axvline(c.t_prime + 1, color="gray", ls="-.", lw=0.8, label=f"T' = {c.t_prime:.0f}")
        ax.axhline(c.reach_limit, color="r", ls=":", lw=0.8, label="floor_mult x floor")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iteration t + 1")
        ax.set_ylabel("max_j ||theta_j - theta_pop_j||")
        ax.set_title(f"{_cell_name(c.loss, c.p_small)}: error traces (first data sets)",
                     fontsize=9)
        ax.legend(fontsize=5.5, ncol=2, loc="lower left")
        ax = axes[r, 1]
        t = tests[(tests["loss"] == c.loss) & (tests["p_small"] == c.p_small)]
        te = t[(t["what"] == "eps")]
        for (a, kind), h in te.groupby(["alpha0", "kind"]):
            h = h[h["t_hat_median"].notna()]
            i = alphas.index(a) if a in alphas else 0
            ax.plot(np.log(1 / h["eps"]), h["t_hat_median"], "o" if kind == "random" else "x",
                    color=f"C{i}", ms=3, ls="-" if kind == "random" else "--", lw=0.6)
        x = np.log(1 / te["eps"].drop_duplicates().sort_values())
        ax.plot(x, c.kappa * (np.log(2 * c.delta) + x), "k-", lw=1.2,
                label=f"T(eps), slope {c.kappa:.1f}")
        base = te[te["reachable"] & (te["t_hat_median"] > 0)]
        if np.isfinite(c.slope) and len(base):
            # the measured slope through the centre of the transient medians
            xb = np.log(1 / base["eps"].to_numpy())
            xs = np.linspace(xb.min(), xb.max(), 20)
            ax.plot(xs, base["t_hat_median"].mean() + c.slope * (xs - xb.mean()), "r-", lw=2,
                    alpha=0.5, label=f"measured slope {c.slope:.2f}")
        ax.axvline(np.log(1 / c.reach_limit), color="r", ls=":", lw=0.8,
                   label="floor_mult x floor")
        ax.plot([np.log(1 / quarter)], [c.t_prime], "k^", ms=6, label="T' at the 1/4 level")
        if np.isfinite(c.burn_in_mean):
            ax.plot([np.log(1 / quarter)], [c.burn_in_mean], "rv", ms=6,
                    label="mean burn-in")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_xlabel("log(1/eps)")
        ax.set_ylabel("iterations (median T_hat over data sets)")
        ax.set_title(f"{_cell_name(c.loss, c.p_small)}: T_hat vs the bound (o random, x "
                     "adversarial)", fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="C2T", order=62, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
