"""Study L1: Lemma 1's exponent against the exact misclassification law.

Lemma 1 (Appendix A of the long version, used in Theorem 1) bounds the probability that a machine
of cluster ``j`` is put in cluster ``j'`` by ``c1 exp(-c2 n' (alpha rho / (rho + 1))^2)`` when every
model is within ``(1/2 - alpha) Delta`` of its truth. For the squared loss with Gaussian features
and noise that probability is exact (:func:`~mixlinreg.theory.lemma1.misclassification_probability`,
an F distribution function) and so is its large-deviation rate per sample, the Chernoff exponent
``E`` (:func:`~mixlinreg.theory.lemma1.chernoff_exponent`). The study has three parts:

1. exact ``P`` against ``n'`` for five placements at a few ``(alpha, rho)`` points, checked against
   Monte Carlo machines (:func:`~mixlinreg.theory.lemma1.simulate_misclassification`, Wilson
   intervals; :func:`~mixlinreg.theory.lemma1.mc_agreement_verdict`);
2. the worst-placement Chernoff exponent (:func:`~mixlinreg.theory.lemma1.worst_placement`) on an
   ``(alpha, rho)`` grid against ``(alpha rho / (rho + 1))^2``
   (:func:`~mixlinreg.theory.lemma1.form_verdict`);
3. the slope of ``log P`` against ``n'`` at large ``n'`` against ``-E``.

The analysis is in three steps: :func:`measure` turns the units' rows into the measured
quantities (deterministic), :func:`decide` (pure) holds them to the config's margins and returns the
verdict with its deciding numbers, and :func:`analyze` describes it (summary, caveats, and the
sensitivity lines, which call :func:`decide` at the neighbouring margins).

Units: one per ``(alpha, rho)`` point of parts 1 and 3 (``curves_...``; the random placements and
the Monte Carlo draw from the unit's own stream) and one per ``alpha`` of the grid (``grid_...``,
deterministic). Config: ``mixlinreg/configs/studies/L1.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from ...config import Spec
from ...stats import Fit, _ols_slope, verdict_equal, wilson_interval
from .. import bounds
from ..study import CAVEAT, HOLDS, NOT_SUPPORTED, combine
from ..lemma1 import (PLACEMENTS, chernoff_exponent, form_edge_verdicts, form_edges,
                      mc_agreement_verdict, mc_allowed_outside, misclassification_probability,
                      placement, simulate_misclassification, worst_placement)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: l1.md beside this module
WORDS = words(__file__)

_POS = dict(low=0, open="low")
SCHEMA = {
    "params": {
        "config_alpha": Spec("list[float]", low=0, high=0.5, open="both"),
        "config_rho": Spec("list[float]", **_POS),
        "n_grid_curves": Spec("int", low=5), "n_random": Spec("int", low=1),
        "d_random": Spec("int", low=3), "n_curve": Spec("int", low=2),
        "curve_nE": Spec("float", **_POS), "n_prime_max": Spec("int", low=64),
        "slope_nE_lo": Spec("float", **_POS), "slope_nE_hi": Spec("float", **_POS),
        "n_rate": Spec("int", low=4),
        "mc_machines": Spec("int", low=1), "mc_n_max": Spec("int", low=1, high=2**13),
        "mc_budget": Spec("float", **_POS), "p_mc_min": Spec("float", low=0, high=1),
        "alpha_min": Spec("float", low=0, high=0.5, open="both"),
        "alpha_max": Spec("float", low=0, high=0.5, open="both"),
        "n_alpha": Spec("int", low=3), "rho_min": Spec("float", **_POS),
        "rho_max": Spec("float", **_POS), "n_rho": Spec("int", low=3),
        "n_grid": Spec("int", low=5), "k_power": Spec("int", low=2),
        # the control's noise of the Monte Carlo machines: "cauchy" (outside the lemma) or the
        # lemma's "gaussian" (the default; the exact law is always the Gaussian one)
        "noise": Spec("str", choices=("gaussian", "cauchy"), required=False,
                      default="gaussian"),
    },
    "margins": {
        "tol": Spec("float", **_POS), "tol_neighbours": Spec("list[float]", **_POS),
        "rate_margin": Spec("float", low=0), "rate_margin_neighbours": Spec("list[float]", low=0),
        "mc_level": Spec("float", low=0, high=1, open="both"),
        "mc_level_neighbours": Spec("list[float]", low=0, high=1, open="both"),
        "mc_quantile": Spec("float", low=0, high=1, open="both"),
        "mc_quantile_neighbours": Spec("list[float]", low=0, high=1, open="both"),
        "chernoff_tol": Spec("float", low=0), "chernoff_tol_neighbours": Spec("list[float]", low=0),
        "worst_tol": Spec("float", low=0), "worst_tol_neighbours": Spec("list[float]", low=0),
        "interior_tol": Spec("float", low=0, high=1),
        "interior_tol_neighbours": Spec("list[float]", low=0, high=1),
        "collinear_tol": Spec("float", low=0), "collinear_tol_neighbours": Spec("list[float]", low=0),
    },
}

_NAMED = ("collinear", "orthogonal_same", "orthogonal_opposite")  # fixed placements
_C2_ROW = "c2 = min E_worst / (alpha rho/(rho+1))^2 on the grid"


# ------------------------------------------------------------------------------ configuration


def _configs(p):
    """The ``(alpha, rho)`` points of parts 1 and 3, in the config's order."""
    if len(p["config_alpha"]) != len(p["config_rho"]):
        raise ValueError(f"study L1: params.config_alpha and params.config_rho must have the same "
                         f"length, got {len(p['config_alpha'])} and {len(p['config_rho'])}")
    cfgs = list(zip(p["config_alpha"], p["config_rho"]))
    if len(set(cfgs)) != len(cfgs):
        raise ValueError(f"study L1: the (config_alpha, config_rho) points must differ, got {cfgs}")
    return cfgs


def _alphas(p):
    if not p["alpha_min"] < p["alpha_max"]:
        raise ValueError(f"study L1: params.alpha_min must be < alpha_max, got {p['alpha_min']} "
                         f"and {p['alpha_max']}")
    return np.geomspace(p["alpha_min"], p["alpha_max"], p["n_alpha"])


def _rhos(p):
    if not p["rho_min"] < p["rho_max"]:
        raise ValueError(f"study L1: params.rho_min must be < rho_max, got {p['rho_min']} and "
                         f"{p['rho_max']}")
    return np.geomspace(p["rho_min"], p["rho_max"], p["n_rho"])


def _g(x):  # a number in a unit name: [A-Za-z0-9_.=-] only
    return f"{x:.6g}".replace("+", "")


def units(params):
    p = params["params"]
    if not p["slope_nE_lo"] < p["slope_nE_hi"]:
        raise ValueError(f"study L1: params.slope_nE_lo must be < slope_nE_hi, got "
                         f"{p['slope_nE_lo']} and {p['slope_nE_hi']}")
    out = [(f"curves_alpha={_g(a)}_rho={_g(r)}", {"part": "curves", "config": ci, "alpha": a,
                                                  "rho": r})
           for ci, (a, r) in enumerate(_configs(p))]
    _rhos(p)
    out += [(f"grid_alpha={_g(a)}", {"part": "grid", "alpha": float(a)}) for a in _alphas(p)]
    return out


# ------------------------------------------------------------------------------ compute


def _placements(alpha, rho, p, gen):
    """(name, draw, a, b, sigma, extra) for one point; the random draws come from ``gen``."""
    out = []
    for kind in _NAMED:
        a, b, s = placement(kind, alpha, rho)
        out.append((kind, 0, a, b, s, {}))
    for r in range(p["n_random"]):
        a, b, s = placement("random", alpha, rho, d=p["d_random"], rng=gen)
        out.append(("random", r, a, b, s, {}))
    w = worst_placement(alpha, rho, n_grid=p["n_grid_curves"], interior=False)
    a, b, s = placement("angles", alpha, rho, angles=(w["phi1"], w["phi2"], w["psi"]))
    out.append(("worst", 0, a, b, s, {k: w[k] for k in ("phi1", "phi2", "psi")}))
    return out


def _curve_rows(ci, alpha, rho, p, rng):
    """Exact P on an n' grid, the rate window, and Monte Carlo at powers of two, for one point."""
    g_random, g_mc = rng.spawn(2)
    mc_streams = dict(zip(PLACEMENTS, g_mc.spawn(len(PLACEMENTS))))  # keyed by placement name
    pl = _placements(alpha, rho, p, g_random)
    e_worst = chernoff_exponent(pl[-1][2], pl[-1][3], pl[-1][4])
    n_max = int(min(p["n_prime_max"], max(64, np.ceil(p["curve_nE"] / e_worst))))
    n_curve = np.unique(np.round(np.geomspace(1, n_max, p["n_curve"])).astype(int))
    rows = []
    for name, draw, a, b, s, extra in pl:
        E = chernoff_exponent(a, b, s)
        lp = misclassification_probability(a, b, s, n_curve, log=True)
        for n, v in zip(n_curve, lp):
            rows.append(dict(part="curve", config=ci, alpha=alpha, rho=rho, placement=name,
                             draw=draw, n_prime=int(n), log_p=float(v), E=E, **extra))
        lo_n, hi_n = p["slope_nE_lo"] / E, p["slope_nE_hi"] / E
        n_fit = np.unique(np.round(np.linspace(lo_n, hi_n, p["n_rate"])).astype(int))
        lpf = misclassification_probability(a, b, s, n_fit, log=True)
        for n, v in zip(n_fit, lpf):
            rows.append(dict(part="rate", config=ci, alpha=alpha, rho=rho, placement=name,
                             draw=draw, n_prime=int(n), log_p=float(v), E=E, **extra))
    # Monte Carlo: machines split evenly over the random draws for the "random" placement
    mc_n = [2**k for k in range(0, 14) if 2**k <= p["mc_n_max"]]
    machines = p["mc_machines"]
    for name in dict.fromkeys(x[0] for x in pl):
        group = [x for x in pl if x[0] == name]
        gens = mc_streams[name].spawn(len(mc_n))
        for n, gen in zip(mc_n, gens):
            ps = [float(misclassification_probability(a, b, s, n)) for _, _, a, b, s, _ in group]
            p_exact = float(np.mean(ps))
            if p_exact < p["p_mc_min"] or n * machines > p["mc_budget"]:
                continue
            per = np.full(len(group), machines // len(group))
            per[: machines - per.sum()] += 1
            wrong = sum(simulate_misclassification(a, b, s, n, int(k), gen, noise=p["noise"])
                        for (_, _, a, b, s, _), k in zip(group, per))
            rows.append(dict(part="mc", config=ci, alpha=alpha, rho=rho, placement=name, draw=-1,
                             n_prime=int(n), log_p=float(np.log(p_exact)), p_exact=p_exact,
                             mc_wrong=int(wrong), mc_machines=int(machines),
                             mc_p=wrong / machines))
    return pd.DataFrame(rows)


def _grid_rows(alpha, rhos, p):
    rows = []
    for rho in rhos:
        w = worst_placement(alpha, rho, n_grid=p["n_grid"], interior=True)
        e_col = chernoff_exponent(*placement("collinear", alpha, rho))
        e_os = chernoff_exponent(*placement("orthogonal_same", alpha, rho))
        e_oo = chernoff_exponent(*placement("orthogonal_opposite", alpha, rho))
        form = float(bounds.lemma1_exponent_form(alpha, rho))
        rows.append(dict(part="grid", alpha=alpha, rho=float(rho), E_worst=w["E"],
                         E_worst_grid=w["E_grid"], phi1=w["phi1"], phi2=w["phi2"], psi=w["psi"],
                         E_interior=w["E_interior"], t1=w["t1"], t2=w["t2"],
                         E_collinear=e_col, E_orth_same=e_os, E_orth_opposite=e_oo,
                         form=form, ratio=w["E"] / form))
    return pd.DataFrame(rows)


def compute(spec, params, rng, shared):
    p = params["params"]
    if spec["part"] == "grid":
        return _grid_rows(spec["alpha"], _rhos(p), p)
    return _curve_rows(spec["config"], spec["alpha"], spec["rho"], p, rng)


# ------------------------------------------------------------------------------ analysis


def _power_fit(grid, axis, by, k, largest=False):
    """Local power of E_worst in ``axis`` over its ``k`` smallest (or largest) grid values."""
    slopes = []
    for _, g in grid.groupby(by):
        g = g.sort_values(axis)
        sel = slice(-k, None) if largest else slice(None, k)
        slopes.append(float(_ols_slope(np.log(g[axis].to_numpy()[sel]),
                                       np.log(g["E_worst"].to_numpy()[sel]))))
    s = np.array(slopes)
    return Fit(float(np.median(s)), float(s.min()), float(s.max()), s.size)


def rate_fits(curves):
    """Slope of exact ``log P`` against ``n'`` in the rate window, per point and placement draw.

    ``ratio = -slope / E`` should be 1; ``ratio_lo``/``ratio_hi`` span the slopes of the window's
    two halves.
    """
    rows = []
    rate = curves[curves["part"] == "rate"]
    for (ci, name, draw), g in rate.groupby(["config", "placement", "draw"], sort=True):
        n = g["n_prime"].to_numpy(float)
        lp = g["log_p"].to_numpy(float)
        E = float(g["E"].iloc[0])
        half = n.size // 2

        def sl(sel):
            return float(_ols_slope(n[sel], lp[sel]))

        s_all, s_lo, s_hi = sl(slice(None)), sl(slice(0, half + 1)), sl(slice(half, None))
        r = [-s / E for s in (s_all, s_lo, s_hi)]
        rows.append(dict(config=int(ci), alpha=float(g["alpha"].iloc[0]),
                         rho=float(g["rho"].iloc[0]), placement=name, draw=int(draw), E=E,
                         slope=s_all, ratio=r[0], ratio_lo=min(r), ratio_hi=max(r),
                         n_min=int(n.min()), n_max=int(n.max())))
    return pd.DataFrame(rows)


def measure(table, p):
    """What the verdict reads, before any threshold or margin (deterministic: no bootstrap): the
    parts of the table, the Monte Carlo counts, the Chernoff gap, the worst search's checks, the
    form's edge slopes (:func:`~mixlinreg.theory.lemma1.form_edges`) and the rate fits."""
    part = table["part"]
    grid = table[part == "grid"].dropna(axis=1, how="all").drop(columns="part") \
        .reset_index(drop=True)
    curves = table[part != "grid"].dropna(axis=1, how="all").reset_index(drop=True) \
        .astype({"config": int, "draw": int, "n_prime": int})
    alphas, rhos = _alphas(p), _rhos(p)
    # the grid by position, checked against the config's values (not looked up by exact float: a
    # committed table's np.geomspace values may be one ulp off another numpy's)
    piv = grid.pivot(index="alpha", columns="rho", values="E_worst").sort_index().sort_index(axis=1)
    if not (piv.shape == (len(alphas), len(rhos))
            and np.allclose(piv.index, np.sort(alphas), rtol=1e-12, atol=0)
            and np.allclose(piv.columns, np.sort(rhos), rtol=1e-12, atol=0)):
        raise ValueError("study L1: the table's (alpha, rho) grid is not the config's")
    rank_a, rank_r = np.argsort(np.argsort(alphas)), np.argsort(np.argsort(rhos))
    E = piv.to_numpy()[np.ix_(rank_a, rank_r)]  # in the config's order
    ex = curves[curves["part"].isin(["curve", "rate"])]
    col = grid.groupby("rho")["E_collinear"].agg(["min", "max"])
    named_min = grid[["E_collinear", "E_orth_same", "E_orth_opposite"]].min(axis=1)
    k = p["k_power"]
    rates = rate_fits(curves)
    # per placement: the mean ratio, its interval spanning every draw's two window halves
    rate_fit = {name: Fit(float(g["ratio"].mean()), float(g["ratio_lo"].min()),
                          float(g["ratio_hi"].max()), int(len(g)))
                for name, g in rates.groupby("placement", sort=False)}
    return dict(
        grid=grid, curves=curves, alphas=alphas, rhos=rhos,
        mc=curves[curves["part"] == "mc"].reset_index(drop=True),
        chern_gap=float(np.max(ex["log_p"] + ex["n_prime"] * ex["E"])),
        col_spread=float(((col["max"] - col["min"]) / col["max"]).max()),
        E_worst=grid["E_worst"].to_numpy(), named_min=named_min.to_numpy(),
        int_ratio=float((grid["E_interior"] / grid["E_worst"]).min()),
        k_rho=_power_fit(grid, "rho", "alpha", k), k_alpha=_power_fit(grid, "alpha", "rho", k),
        k_inf=_power_fit(grid, "rho", "alpha", k, largest=True),
        form=form_edges(alphas, rhos, E), rates=rates, rate_fit=rate_fit)


def _mc_table(mc, level):
    """The Monte Carlo rows with Wilson intervals at ``level`` and whether exact P is inside."""
    mc = mc.astype({"mc_wrong": int, "mc_machines": int}).copy()
    ci = [wilson_interval(int(w), int(n), confidence=level)
          for w, n in zip(mc["mc_wrong"], mc["mc_machines"])]
    mc["mc_lo"] = [float(lo) for lo, _ in ci]
    mc["mc_hi"] = [float(hi) for _, hi in ci]
    mc["inside"] = (mc["mc_lo"] <= mc["p_exact"]) & (mc["p_exact"] <= mc["mc_hi"])
    return mc


_EDGES = ("alpha->0", "rho->0", "rho->inf")


def decide(m, params) -> Decision:
    """The verdict of L1 from the measurements ``m`` (:func:`measure`: ``mc`` (the Monte Carlo
    counts ``mc_wrong, mc_machines, p_exact``), ``chern_gap``, ``form["edges"]`` and
    ``form["c2"]``, ``rate_fit``, ``E_worst``, ``named_min``, ``int_ratio``, ``col_spread``) and
    the config's margins; pure. Every part's verdict is in ``numbers`` (``verdict_...``)."""
    mg = params["margins"]
    level, quantile = mg["mc_level"], mg["mc_quantile"]
    # 1. exact P inside the Monte Carlo Wilson intervals at `level`: the misses may be at most the
    #    `quantile` of Binomial(comparisons, 1 - level)
    mc = _mc_table(m["mc"], level)
    n_cmp = int(len(mc))
    n_out = int((~mc["inside"].astype(bool)).sum()) if n_cmp else 0
    v_mc = mc_agreement_verdict(n_out, n_cmp, level=level, quantile=quantile)
    # 2. the Chernoff bound with c1 = 1: max over the computed points of log P + n' E <= tol
    v_chern = HOLDS if m["chern_gap"] <= mg["chernoff_tol"] else NOT_SUPPORTED
    # 3. the paper's form: the edge slopes of min E_worst / form must not fall beyond `tol`
    #    (alpha->0, rho->0: slope <= tol; rho->inf: slope >= -tol); clearly rising = loose (caveat)
    edges = m["form"]["edges"]
    v_form, v_edges, _ = form_edge_verdicts(edges, mg["tol"])
    # 4. the rate: -slope(log P vs n') / E equal to 1 within rate_margin, per placement
    v_rate = {name: verdict_equal(f, 1.0, mg["rate_margin"]) for name, f in m["rate_fit"].items()}
    # 5. the worst search: below every named placement (up to worst_tol), and letting the
    #    distances shrink finds nothing lower (interior / worst >= 1 - interior_tol)
    worst_below = bool(np.all(m["E_worst"] <= m["named_min"] * (1 + mg["worst_tol"])))
    v_worst = HOLDS if worst_below else NOT_SUPPORTED
    v_interior = HOLDS if m["int_ratio"] >= 1 - mg["interior_tol"] else CAVEAT
    # reported, not combined: the collinear exponent does not depend on alpha
    v_col = HOLDS if m["col_spread"] < mg["collinear_tol"] else NOT_SUPPORTED
    verdict = combine([v_mc, v_chern, v_form, *v_rate.values(), v_interior, v_worst])
    numbers = dict(
        n_outside=n_out, n_compared=n_cmp,
        allowed_outside=mc_allowed_outside(n_cmp, level, quantile), mc_level=level,
        mc_quantile=quantile, verdict_mc=v_mc,
        chern_gap=m["chern_gap"], chernoff_tol=mg["chernoff_tol"], verdict_chernoff=v_chern,
        c2=m["form"]["c2"], tol=mg["tol"], verdict_form=v_form,
        **{f"edge {e} {end}": getattr(edges[e], end) for e in _EDGES for end in ("lo", "hi")},
        **{f"verdict_edge {e}": v_edges[e] for e in _EDGES},
        **{f"rate {name} {end}": getattr(f, end) for name, f in m["rate_fit"].items()
           for end in ("lo", "hi")},
        rate_margin=mg["rate_margin"], **{f"verdict_rate {name}": v for name, v in v_rate.items()},
        worst_over_named_max=float(np.max(m["E_worst"] / m["named_min"])),
        worst_tol=mg["worst_tol"], verdict_worst=v_worst,
        int_ratio=m["int_ratio"], interior_tol=mg["interior_tol"], verdict_interior=v_interior,
        col_spread=m["col_spread"], collinear_tol=mg["collinear_tol"], verdict_collinear=v_col)
    return Decision(verdict, numbers)


def _row(q, fit_or_val, ref, v):
    if isinstance(fit_or_val, Fit):
        return dict(quantity=q, estimate=fit_or_val.est, lo=fit_or_val.lo, hi=fit_or_val.hi,
                    reference=ref, verdict=v)
    return dict(quantity=q, estimate=float(fit_or_val), lo=np.nan, hi=np.nan, reference=ref,
                verdict=v)


def _numbers(m, d, mg):
    """The record's table of numbers: the measurements and the part verdicts of ``d``."""
    n, form, tol = d.numbers, m["form"], mg["tol"]
    ea, er0, eri = (form["edges"][e] for e in _EDGES)
    return pd.DataFrame([
        _row(f"exact P outside MC Wilson {100 * mg['mc_level']:g}% ({n['n_compared']} "
             "comparisons)", n["n_outside"], f"<= {n['allowed_outside']}", n["verdict_mc"]),
        _row("max over computed points of log P + n' E", m["chern_gap"], "<= 0 (c1 = 1)",
             n["verdict_chernoff"]),
        _row(_C2_ROW, form["c2"], "> 0", n["verdict_form"]),
        _row("edge slope of min ratio, alpha -> 0", ea, f"<= {tol}", n["verdict_edge alpha->0"]),
        _row("edge slope of min ratio, rho -> 0", er0, f"<= {tol}", n["verdict_edge rho->0"]),
        _row("edge slope of min ratio, rho -> inf", eri, f">= {-tol}", n["verdict_edge rho->inf"]),
        _row("E_worst ~ rho^k at small rho: k", m["k_rho"], "paper form: 2", ""),
        _row("E_worst ~ alpha^k at small alpha: k", m["k_alpha"], "paper form: 2", ""),
        _row("E_worst ~ rho^k at large rho: k", m["k_inf"], "paper form: 0", ""),
        _row("max / min of E_worst / form on the grid", form["spread"], "1 if the form were tight",
             ""),
        *[_row(f"-slope(log P vs n') / E, {name}", f, "1", n[f"verdict_rate {name}"])
          for name, f in m["rate_fit"].items()],
        _row("collinear: max rel. spread of E over alpha", m["col_spread"], "0 (alpha cancels)",
             n["verdict_collinear"]),
        _row("min E (free distances <= bound) / E_worst (on bound)", m["int_ratio"], ">= 1",
             n["verdict_interior"]),
    ])


def _collinear_details(m, configs):
    """The collinear placement's checks for the caveats: (max relative difference to the closed
    form (1/2) log(1 + rho/4), max difference of exact log P over configs with the first rho)."""
    grid, curves = m["grid"], m["curves"]
    col_closed = float(np.max(np.abs(grid["E_collinear"] - 0.5 * np.log1p(grid["rho"] / 4.0))
                              / grid["E_collinear"]))
    cur_col = curves[(curves["part"] == "curve") & (curves["placement"] == "collinear")]
    cfg_same_rho = [ci for ci, c in enumerate(configs) if c[1] == configs[0][1]]
    piv = cur_col[cur_col["config"].isin(cfg_same_rho)].pivot_table(
        index="n_prime", columns="config", values="log_p").dropna()
    col_p_diff = float(np.max(np.abs(piv.max(axis=1) - piv.min(axis=1)))) if piv.shape[1] > 1 else 0.0
    return col_closed, col_p_diff


def _summary(m, d, mg, configs):
    n, form, rhos, alphas, rates = d.numbers, m["form"], m["rhos"], m["alphas"], m["rates"]
    grid, curves = m["grid"], m["curves"]
    ea, er0, eri = (form["edges"][e] for e in _EDGES)
    k_rho, k_alpha, k_inf = m["k_rho"], m["k_alpha"], m["k_inf"]
    c2, argmin = form["c2"], form["argmin"]
    # looseness at the smallest rho
    loose_small = float(grid[grid["rho"] == rhos[0]]["ratio"].min() / c2)
    # worst angles at the points of part 1
    worst_cfg = curves[(curves["part"] == "curve") & (curves["placement"] == "worst")] \
        .groupby("config")[["phi1", "phi2", "psi", "E"]].first()
    angles = [WORDS.text(
        "worst placement", alpha=configs[ci][0], rho=configs[ci][1],
        phi1=np.degrees(wc["phi1"]), phi2=np.degrees(wc["phi2"]), E=wc["E"],
        azimuth=(" " + WORDS.text("azimuth", psi=np.degrees(wc["psi"]))
                 if np.sin(wc["phi2"]) > 1e-6 else ""))
        for ci, wc in worst_cfg.iterrows()]
    return " ".join([WORDS.text(
        "summary", n_outside=n["n_outside"], n_compared=n["n_compared"],
        mc=WORDS.text("mc.agrees" if n["n_outside"] <= n["allowed_outside"] else "mc.disagrees"),
        chernoff=WORDS.text("chernoff.holds" if m["chern_gap"] <= 0 else "chernoff.fails"),
        mc_level_pct=100 * mg["mc_level"], allowed_outside=n["allowed_outside"],
        chern_gap=m["chern_gap"], ratio_min=rates["ratio"].min(), ratio_max=rates["ratio"].max(),
        alpha_lo=alphas[0], alpha_hi=alphas[-1], rho_lo=rhos[0], rho_hi=rhos[-1], c2=c2,
        argmin_alpha=argmin[0], argmin_rho=argmin[1], edge_alpha=ea.est, edge_rho0=er0.est,
        edge_rhoinf=eri.est, shape=WORDS.text(f"shape.{n['verdict_form']}"),
        k_alpha=k_alpha.est, k_rho=k_rho.est, k_inf=k_inf.est, loose_small=loose_small,
        spread=form["spread"])] + angles)


def _caveats(m, mg, configs):
    col_closed, col_p_diff = _collinear_details(m, configs)
    return WORDS.items("caveats", tol=mg["tol"], int_ratio=m["int_ratio"],
                       col_spread=m["col_spread"], col_closed=col_closed, col_p_diff=col_p_diff)


#: the margins and the words of their sensitivity lines (all re-read the same measurements)
_SENSITIVITY = tuple(WORDS.labels().items())


def sensitivity(m, params):
    """The sensitivity lines: :func:`decide` on the same measurements with one margin moved to
    each of its neighbours."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(m, q).verdict)


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    configs = _configs(p)
    m = measure(table, p)
    d = decide(m, params)
    mc_out = _mc_table(m["mc"], mg["mc_level"]).dropna(axis=1, how="all")
    return Verdict(d.verdict, _numbers(m, d, mg), _summary(m, d, mg, configs),
                   caveats=_caveats(m, mg, configs), sensitivity=sensitivity(m, params),
                   tables={"_grid.csv": m["grid"], "_mc.csv": mc_out, "_rates.csv": m["rates"]})


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    p = params["params"]
    configs = _configs(p)
    grid = verdict.tables["_grid.csv"]
    mc = verdict.tables["_mc.csv"]
    cur = table[table["part"] == "curve"]
    c2 = float(verdict.numbers.set_index("quantity").loc[_C2_ROW, "estimate"])
    fig = Figure(figsize=(5.33 * len(configs), 10), layout="constrained")
    axes = fig.subplots(2, max(3, len(configs)))
    colors = {"collinear": "C0", "orthogonal_same": "C1", "orthogonal_opposite": "C2",
              "random": "C4", "worst": "C3"}
    for ci, (al, rh) in enumerate(configs):
        ax = axes[0, ci]
        c = cur[cur["config"] == ci]
        for name, g in c.groupby("placement", sort=False):
            if name == "random":
                piv = g.pivot_table(index="n_prime", columns="draw", values="log_p")
                y = (special.logsumexp(piv.to_numpy(), axis=1) - np.log(piv.shape[1])) / np.log(10)
                ax.plot(piv.index, y, color=colors[name], label="random (mean of draws)")
            else:
                ax.plot(g["n_prime"], g["log_p"] / np.log(10), color=colors[name], label=name,
                        ls="--" if name == "collinear" else "-")
        m = mc[mc["config"] == ci]
        for name, g in m.groupby("placement", sort=False):
            pm = np.clip(g["mc_p"].to_numpy(), 1e-12, None)
            lo = np.clip(g["mc_lo"].to_numpy(), 1e-12, None)
            hi = g["mc_hi"].to_numpy()
            ax.errorbar(g["n_prime"], np.log10(pm), yerr=[np.log10(pm) - np.log10(lo),
                                                         np.log10(hi) - np.log10(pm)],
                        fmt="o", ms=3, color=colors[name], capsize=2)
        ax.set_xscale("log")
        ax.set_ylim(-12, 0.1)
        ax.set_xlabel("n' (samples per machine)")
        ax.set_ylabel("log10 P(misclassified)")
        ax.set_title(f"alpha = {al:g}, rho = {rh:g} (lines exact, dots MC "
                     f"{100 * params['margins']['mc_level']:g}%)", fontsize=10)
        if ci == 0:
            ax.legend(fontsize=8)
    for ax in axes[0, len(configs):]:
        ax.set_visible(False)
    al = np.sort(grid["alpha"].unique())
    rh = np.sort(grid["rho"].unique())
    ratio = grid.pivot(index="alpha", columns="rho", values="ratio").loc[al, rh].to_numpy()
    ax = axes[1, 0]
    im = ax.pcolormesh(np.log10(rh), np.log10(al), np.log10(ratio), shading="nearest", cmap="viridis")
    fig.colorbar(im, ax=ax, label="log10 E_worst / (alpha rho/(rho+1))^2")
    ax.set_xlabel("log10 rho")
    ax.set_ylabel("log10 alpha")
    ax.set_title(f"ratio to the paper's form; min (c2) = {c2:.3g}", fontsize=10)
    ax = axes[1, 1]
    for k, a in enumerate(al[:: max(1, al.size // 4)]):
        g = grid[grid["alpha"] == a].sort_values("rho")
        ax.plot(g["rho"], g["E_worst"], color=f"C{k}", label=f"alpha={a:.3g}")
        ax.plot(g["rho"], c2 * g["form"], color=f"C{k}", ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rho")
    ax.set_ylabel("exponent per sample")
    ax.set_title("E_worst (solid) vs c2 (alpha rho/(rho+1))^2 (dotted)", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1, 2]
    ax.plot(al, ratio.min(axis=1), "o-", label="min over rho, vs alpha")
    ax.plot(rh, ratio.min(axis=0), "s-", label="min over alpha, vs rho")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("alpha or rho")
    ax.set_ylabel("min ratio E_worst / form")
    ax.set_title("edges: a ratio falling toward an edge = no c2", fontsize=10)
    ax.legend(fontsize=8)
    for ax in axes[1, 3:]:
        ax.set_visible(False)
    fig.suptitle("L1 (Lemma 1): exact misclassification probability and its exponent")
    return fig


STUDY = Study(
    id="L1", order=10, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
