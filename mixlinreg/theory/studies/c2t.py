"""Study C2T: Corollary 2's iteration counts, ``T = (8L/(p lambda)) log(2 Delta/eps)``, and the
burn-in ``T' = (8L/(p lambda)) log(4 sqrt(L/lambda))`` of its proof (Appendix D, eq. (37)).

Setting: the two strongly convex mixtures of :mod:`mixlinreg.theory.convex` (l2-regularized
logistic; Huber + ridge with Student t noise), ``k = 2`` clusters of ``round(p m)`` and the rest
of ``m`` machines (``p = min_j p_j``), ``lambda``, ``L``, ``Delta`` and the population minimizers
``theta_pop`` from the shared constants piece (:func:`~mixlinreg.theory.convex.constants_piece`:
the Hessian's extreme eigenvalues on Theorem 2's ball for the smallest ``alpha0`` of the config,
which contains every start). Resampled IFCA (:func:`mixlinreg.ifca`, ``resample=True``, step
``1/L``) starts with every model at distance ``(1/2 - alpha0) sqrt(lambda/L) Delta`` from its
``theta_pop_j`` (at most the ball's radius): in a random direction, and in the adversarial one
(each model moved straight toward the other cluster's minimizer), several ``alpha0``, all runs of
one data set sharing its rows.

Measured:

* ``T_hat(eps)``: the first iteration ``t`` with ``max_j ||theta_j^(t) - theta_pop_j|| <= eps``,
  on a geometric grid of ``eps`` from ``eps_hi_frac x Delta`` down to ``eps_lo_mult x`` the cell's
  error floor (calibrated beforehand on independent data sets: a shared piece per loss and
  ``p``), against ``T(eps)`` (:func:`mixlinreg.theory.bounds.corollary2_iterations`). A data
  set's runs go on for ``max(T(eps_min), T')`` iterations (capped by ``max_iters``), ending
  earlier only once every run has reached every ``eps`` and the burn-in level (``tail``
  iterations before): an ``eps`` a run never reaches is recorded as *not reached* (never as a
  number) and, the run having gone past ``T(eps)``, counts as ``T_hat > T(eps)``.
* the slope ``dT_hat / dlog(1/eps)`` over the transient (``eps`` below the start and at least
  ``floor_mult x`` the floor), a within-run least squares pooled over runs, bootstrap over data
  sets; the bound's slope is ``8L/(p lambda)``, the implied per-step factor ``exp(-1/slope)``
  against ``1 - p lambda/(8L)``.
* the burn-in: the first ``t`` with ``max_j`` error ``<= (1/4) sqrt(lambda/L) Delta`` against
  ``T'``, and its spread across ``alpha0`` (``T'`` does not depend on ``alpha0``).

The rows are resampled IFCA run in chunks of ``chunk`` iterations, each chunk on fresh rows,
continuing from the previous chunk's models (:func:`run_chunked`): resampled IFCA uses fresh rows
every iteration, so this is one run (tested equal, to rounding, to one call on the concatenated
rows).

Verdict (:func:`decide`, pure): each (``alpha0``, direction, ``eps``) and each burn-in is a test
over the data sets: the fraction of runs with ``T_hat > T(eps)`` (``> T'``), Wilson interval at
``confidence``. "not supported" if some lower end is above ``tol``; "holds" if every upper end is
at most ``tol``; "holds with a caveat" if it holds but the bound is loose by more than
``loose_factor`` (the bootstrap interval of the slope ratio ``(8L/(p lambda)) / slope``, or of
``T' / mean burn-in``, entirely above it); "inconclusive" otherwise. Config:
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
                         adversarial_init, burn_in_bound, eps_grid, first_hit, floor_piece,
                         iteration_bound, run_chunked, start_radius)

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
        "cal_seeds": Spec("int", low=1), "cal_T": Spec("int", low=2), "tail": Spec("int", low=1),
        "n_eps": Spec("int", low=2), "eps_hi_frac": Spec("float", low=0, high=1, open="low"),
        "eps_lo_mult": Spec("float", low=1, open="low"),
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
    for ps in p["p_small"]:
        _sizes(p["m"], ps)
    if mg is not None:
        lowest = min([mg["floor_mult"]] + list(mg["floor_mult_neighbours"]))
        if p["eps_lo_mult"] > lowest:
            raise ValueError(f"study C2T: params.eps_lo_mult ({p['eps_lo_mult']}) must be at most "
                             f"the smallest margins.floor_mult or neighbour ({lowest:g}): the grid "
                             "must reach every reachability limit tried")


def _all_reached(levels, tail):
    """The early end of a data set's runs: every run has reached every level (``eps`` grid and
    the burn-in's) at least ``tail`` iterations ago, so every ``T_hat`` is known and the last
    ``tail`` errors measure the run's floor."""
    def stop(dist):
        hits = first_hit(dist.max(axis=2), levels)
        return bool((hits >= 0).all() and hits.max() + tail <= dist.shape[0] - 1)

    return stop


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


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, ps = spec["loss"], spec["p_small"]
    sizes = _sizes(p["m"], ps)
    cons = _memo_shared(shared, f"constants_{loss}", constants_piece(loss, _constants_params(p)),
                        _constants_params(p))
    c = _cell_constants(cons, sizes)
    cal = _memo_shared(shared, f"floor_{loss}_p={ps:g}", floor_piece(loss, ps, cons, p),
                       {**p, "constants": cons.to_json(double_precision=15)})
    floor_cal = float(np.median(cal["floor"]))
    bnd = dict(L=c["L"], p=c["p"], lam=c["lam"], Delta=c["delta"])
    eps = eps_grid(c["delta"], floor_cal, p)
    t_eps = np.asarray(iteration_bound(eps, **bnd), dtype=float)
    t_prime = burn_in_bound(L=c["L"], p=c["p"], lam=c["lam"])
    t_max = int(min(p["max_iters"], math.ceil(max(t_eps.max(), t_prime))))
    quarter = 0.25 * c["scale"]
    kappa = 8.0 * c["L"] / (c["p"] * c["lam"])
    labels = np.repeat(np.arange(K), sizes)
    runs = [(a, kind) for a in p["alpha0"] for kind in KINDS]
    base = {"loss": loss, "p_small": ps, "p": c["p"], "m": p["m"], "n_prime": p["n_prime"],
            "lam": c["lam"], "L": c["L"], "delta": c["delta"], "kappa": kappa,
            "t_prime": t_prime, "quarter": quarter, "floor_cal": floor_cal, "t_max": t_max}
    rows = []
    for s, gen in enumerate(rng.spawn(spec["reps"])):
        seed = spec["first"] + s
        inits, starts = [], []
        for a, kind in runs:
            r, a_eff = start_radius(a, c)
            starts.append((r, a_eff))
            inits.append(init_at_distance(c["centers"], r, 1, gen)[0] if kind == "random"
                         else adversarial_init(c["centers"], r))
        levels = np.append(eps, quarter)
        dist, _, lab0, div = run_chunked(_drawer(loss, sizes, p["n_prime"], gen),
                                         np.array(inits), 1.0 / c["L"], t_max, p["chunk"],
                                         centers=c["centers"], stop=_all_reached(levels, p["tail"]),
                                         **_ifca_kw(loss))
        err = dist.max(axis=2)  # (t_run + 1, R)
        t_run = err.shape[0] - 1
        hits = first_hit(err, levels)
        for i, (a, kind) in enumerate(runs):
            run = {**base, "seed": seed, "alpha0": a, "alpha_start": starts[i][1], "kind": kind,
                   "start": float(err[0, i]), "t_run": t_run}
            burn = int(hits[i, -1])
            rows.append({**run, "part": "run", "burn_in": float(burn) if burn >= 0 else np.nan,
                         "floor_run": float(err[-p["tail"]:, i].mean()),
                         "mis0": float((lab0[i] != labels).mean()), "diverged": bool(div[i])})
            for q, (e, te) in enumerate(zip(eps, t_eps)):
                h = int(hits[i, q])
                rows.append({**run, "part": "eps", "eps_index": q, "eps": float(e),
                             "t_bound": float(te), "reached": h >= 0,
                             "t_hat": float(h) if h >= 0 else np.nan})
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


def _exceeds(t_hat, reached, bound, t_run):
    """Per run: ``T_hat > bound`` (counting an eps not reached in ``t_run >= floor(bound)``
    iterations), and *censored*: not reached but ``t_run < floor(bound)`` (undecided)."""
    bound_i = np.floor(np.asarray(bound, dtype=float))
    reached = np.asarray(reached, dtype=bool)
    t_run = np.asarray(t_run, dtype=float)
    over = np.where(reached, np.asarray(t_hat, dtype=float) > bound_i, t_run >= bound_i)
    return over & (reached | (t_run >= bound_i)), ~reached & (t_run < bound_i)


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


def measure(table, params, rng, floor_mult=None):
    """The measurements, ``{"tests": DataFrame, "cells": DataFrame}``.

    ``tests``: one row per cell (loss, ``p``), ``alpha0``, direction and ``eps`` (``what="eps"``)
    or burn-in (``what="burn-in"``): ``n`` data sets, ``exceed`` (runs with ``T_hat`` above the
    bound, an unreached ``eps`` counted once the run passed ``T(eps)``), ``censored`` (unreached,
    run shorter than the bound), ``reachable`` (``eps >= floor_mult x`` the calibrated floor;
    always true for the burn-in), the largest and median ``T_hat / T`` over reached runs.

    ``cells``: per cell the bound's slope ``8L/(p lambda)`` and ``T'``, the measured slope of
    ``T_hat`` in ``log(1/eps)`` over the transient (reached ``eps`` below the run's start and
    reachable), its bootstrap interval over data sets, the slope ratio and ``T' / mean burn-in``
    with intervals, the implied per-step factor, burn-in medians per ``alpha0`` and their spread.
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
            over, cens = _exceeds(g["t_hat"], g["reached"], g["t_bound"], g["t_run"])
            ratio = (g["t_hat"] / g["t_bound"])[g["reached"].astype(bool)]
            tests.append({**key, "what": "eps", "alpha0": a, "kind": kind, "eps_index": int(q),
                          "eps": float(g["eps"].iloc[0]), "bound": float(g["t_bound"].iloc[0]),
                          "reachable": bool(g["reachable"].iloc[0]), "n": len(g),
                          "exceed": int(over.sum()), "censored": int(cens.sum()),
                          "reached": int(g["reached"].astype(bool).sum()),
                          "below_start": int((g["eps"] < g["start"]).sum()),
                          "ratio_max": float(ratio.max()) if len(ratio) else np.nan,
                          "ratio_median": float(ratio.median()) if len(ratio) else np.nan,
                          "t_hat_median": float(g["t_hat"].median()) if len(ratio) else np.nan})
        tp = float(first["t_prime"])
        for (a, kind), g in gr.groupby(["alpha0", "kind"], sort=True):
            reached = g["burn_in"].notna()
            over, cens = _exceeds(g["burn_in"], reached, np.full(len(g), tp), g["t_run"])
            tests.append({**key, "what": "burn-in", "alpha0": a, "kind": kind, "eps_index": -1,
                          "eps": float(first["quarter"]), "bound": tp, "reachable": True,
                          "n": len(g), "exceed": int(over.sum()), "censored": int(cens.sum()),
                          "reached": int(reached.sum()), "below_start": len(g),
                          "ratio_max": float((g["burn_in"] / tp).max()) if reached.any()
                          else np.nan,
                          "ratio_median": float((g["burn_in"] / tp).median()) if reached.any()
                          else np.nan,
                          "t_hat_median": float(g["burn_in"].median()) if reached.any()
                          else np.nan})
        # the slope over the transient: reached, reachable, below the run's start
        tr = ge[ge["reached"].astype(bool) & ge["reachable"] & (ge["eps"] < ge["start"])]
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
        row = {**key, "lam": float(first["lam"]), "L": float(first["L"]),
               "delta": float(first["delta"]), "kappa": kappa, "t_prime": tp,
               "floor_cal": floor_cal, "floor_run_median": float(gr["floor_run"].median()),
               "reach_limit": reach_lim, "t_max": int(first["t_max"]),
               "t_run_max": int(gr["t_run"].max()), "t_run_median": float(gr["t_run"].median()),
               "bound_factor": float(bounds.theorem2_factor(float(first["p"]),
                                                            float(first["lam"]),
                                                            float(first["L"]))),
               "implied_factor": factor, "transient_points": len(tr),
               "burn_in_spread": float(med.max() - med.min()) if med.notna().any() else np.nan,
               "burn_in_by_alpha0": ";".join(f"{a:g}:{v:g}" for a, v in med.items()),
               "mis0_max": float(gr["mis0"].max()), "diverged": int(gr["diverged"].sum()),
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
    ``exceed``, ``censored``): Wilson interval of ``exceed / n`` at ``confidence``; *violated* if
    its lower end is above ``tol``, *certified* if its upper end is at most ``tol`` and nothing is
    censored, *undetermined* otherwise. Per cell (loss, ``p``): "not supported" if a test is
    violated; else "inconclusive" if one is undetermined or no reachable ``eps`` lies below some
    run's start (column ``below_start``: runs with ``eps`` below their start, ``n`` if absent;
    above every start ``T_hat = 0`` and the test says nothing);
    else "holds with a caveat" if the bound is *loose* (``cells``' ``slope_ratio_lo`` or
    ``burn_ratio_lo`` above ``loose_factor``), else "holds". The claim: the weakest cell.
    ``numbers``: the three margins and per cell its verdict, the counts of violated, undetermined
    and certified tests, the largest Wilson bounds, the looseness lower ends and ``loose``."""
    mg = params["margins"]
    tol, conf, lf = mg["tol"], mg["confidence"], mg["loose_factor"]
    tests, cells = meas["tests"], meas["cells"]
    out = {}
    for c in cells.itertuples():
        t = tests[(tests["loss"] == c.loss) & (tests["p_small"] == c.p_small) & tests["reachable"]]
        te = t[t["what"] == "eps"]
        below = te["below_start"] if "below_start" in te else te["n"]
        n_eps = len(te)
        n_informative = int((below > 0).sum())
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
            v = CAVEAT if loose else HOLDS
        out[_cell_name(c.loss, c.p_small)] = {
            "verdict": v, "violated": int(violated.sum()), "undetermined": int(undetermined.sum()),
            "certified": int(certified.sum()), "eps_tests": n_eps,
            "eps_tests_below_start": n_informative,
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


# ------------------------------------------------------------------------------ analyze


def _fmt(est, lo, hi, digits=3):
    if not np.isfinite(est):
        return WORDS.text("not measured")
    f = f"{{:.{digits}g}}"
    return f"{f.format(est)} [{f.format(lo)}, {f.format(hi)}]"


def _scope(meas, dec):
    parts = []
    for c in meas["cells"].itertuples():
        d = dec.numbers["cells"][_cell_name(c.loss, c.p_small)]
        t = meas["tests"]
        t = t[(t["loss"] == c.loss) & (t["p_small"] == c.p_small) & t["reachable"]]
        worst = t["ratio_max"].max()
        which = ("scope" if not np.isfinite(worst) else "scope.worst"
                 if not np.isfinite(c.slope_ratio) else "scope.worst and slope")
        parts.append(WORDS.text(which, cell=_cell_name(c.loss, c.p_small), verdict=d["verdict"],
                                worst=worst, slope_ratio=c.slope_ratio))
    return "; ".join(parts)


def _numbers(meas, dec):
    rows = []
    tests = meas["tests"]
    for c in meas["cells"].itertuples():
        d = dec.numbers["cells"][_cell_name(c.loss, c.p_small)]
        t = tests[(tests["loss"] == c.loss) & (tests["p_small"] == c.p_small) & tests["reachable"]]
        te = t[t["what"] == "eps"]
        tb = t[t["what"] == "burn-in"]
        rows.append({
            "loss": c.loss, "p": round(c.p, 4), "8L/(p lam)": round(c.kappa, 1),
            "T' (eq. 37)": round(c.t_prime, 1),
            "reachable eps": (WORDS.text("numbers.reachable eps", lo=te["eps"].min(),
                                         hi=te["eps"].max(), n=len(te))
                              if len(te) else WORDS.text("numbers.no reachable eps")),
            "runs over T(eps)": WORDS.text("numbers.runs over", exceed=int(te["exceed"].sum()),
                                           n=int(te["n"].sum()),
                                           below_start=int(te["below_start"].sum())),
            "max T_hat/T(eps)": round(float(te["ratio_max"].max()), 3) if len(te) else np.nan,
            "slope dT_hat/dlog(1/eps) [95% CI]": _fmt(c.slope, c.slope_lo, c.slope_hi),
            "bound slope / measured": _fmt(c.slope_ratio, c.slope_ratio_lo, c.slope_ratio_hi),
            "implied factor (bound)": (WORDS.text("numbers.implied factor",
                                                  implied_factor=c.implied_factor,
                                                  bound_factor=c.bound_factor)
                                       if np.isfinite(c.implied_factor)
                                       else WORDS.text("not measured")),
            "burn-in over T'": f"{int(tb['exceed'].sum())}/{int(tb['n'].sum())}",
            "mean burn-in [95% CI]": _fmt(c.burn_in_mean, c.burn_in_mean_lo, c.burn_in_mean_hi),
            "T'/mean burn-in": _fmt(c.burn_ratio, c.burn_ratio_lo, c.burn_ratio_hi),
            "burn-in median by alpha0": c.burn_in_by_alpha0,
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


def _summary(meas, dec, params):
    p, mg = params["params"], params["margins"]
    nb = dec.numbers
    parts = []
    for c in meas["cells"].itertuples():
        d = nb["cells"][_cell_name(c.loss, c.p_small)]
        t = meas["tests"]
        t = t[(t["loss"] == c.loss) & (t["p_small"] == c.p_small) & t["reachable"]]
        te = t[t["what"] == "eps"]
        parts.append(WORDS.text(
            "cell", cell=_cell_name(c.loss, c.p_small), lam=c.lam, L=c.L, delta=c.delta,
            kappa=c.kappa, t_prime=c.t_prime, floor_cal=c.floor_cal, reach_limit=c.reach_limit,
            exceed=int(te["exceed"].sum()), n=int(te["n"].sum()),
            below_start=int(te["below_start"].sum()), ratio_max=te["ratio_max"].max(),
            slope=_slope_words(c), burn_in=_fmt(c.burn_in_mean, c.burn_in_mean_lo,
                                                c.burn_in_mean_hi),
            by_alpha0=c.burn_in_by_alpha0, spread=c.burn_in_spread, verdict=d["verdict"]))
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
    spreads = cells["burn_in_spread"].dropna()
    if len(spreads):
        mono = all(_non_increasing(c.burn_in_by_alpha0) for c in cells.itertuples())
        tail.append(WORDS.text(
            "summary.alpha0", spread=spreads.max(), t_prime=cells["t_prime"].min(),
            trend=WORDS.text("trend.monotone" if mono else "trend.not monotone")))
    return WORDS.text("summary", confidence=mg["confidence"], tol=mg["tol"],
                      loose_factor=mg["loose_factor"], m=p["m"], n_prime=p["n_prime"],
                      seeds=p["seeds"], alpha0=p["alpha0"], cells=". ".join(parts),
                      tail="".join(" " + x for x in tail))


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
                                   t_run_max=c.t_run_max, t_max=c.t_max)
                        for c in cells.itertuples())
    return WORDS.items("caveats", floors=floors, mis=mis, alpha_starts=starts, seeds=p["seeds"],
                       max_iters=p["max_iters"], chunk=p["chunk"], tail=p["tail"],
                       longest=longest)


def analyze(table, params, rng):
    meas = measure(table, params, rng)
    dec = decide(meas, params)

    def verdict_at(q, key):  # floor_mult changes the measurement; the others only the decision
        return decide(measure(table, q, rng) if key == "floor_mult" else meas, q).verdict

    sens = sensitivity_lines(WORDS, params, verdict_at)
    tables = {".csv": _part(table, "eps"), "_runs.csv": _part(table, "run"),
              "_traces.csv": _part(table, "trace"), "_tests.csv": meas["tests"],
              "_cells.csv": meas["cells"]}
    return Verdict(dec.verdict, _numbers(meas, dec), _summary(meas, dec, params),
                   caveats=_caveats(meas, params), sensitivity=sens, tables=tables,
                   scope=_scope(meas, dec))


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
