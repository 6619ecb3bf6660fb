"""Study A0: for ``k = 2`` a start only slightly better than random (small ``alpha0``) suffices.

Resampled and plain IFCA (:func:`mixlinreg.ifca`, squared loss, float64, step ``gamma p``) on the
linear model of Section 5.1 with equidistant centres, from starts at distance exactly
``(1/2 - alpha0) Delta`` of the truths in three placements
(:func:`~mixlinreg.theory.initialization.a0_inits`: random, adversarial, and the study's "mixed"
start), for every ``alpha0`` of a grid; one trial draws centres, data and starts and runs every
(``alpha0``, placement, mode) on the same data
(:func:`~mixlinreg.theory.initialization.a0_trial_rows`), so the runs at two ``alpha0`` pair by
trial.

Two settings: an easy one where every run succeeds (the absolute check: success at the smallest
``alpha0``, :func:`~mixlinreg.theory.initialization.a0_verdict`) and a hard one where noisy cluster
estimates make part of the runs fail from every start (the comparison: the smallest ``alpha0``
must not be materially worse than the largest, by Newcombe's paired interval,
:func:`~mixlinreg.theory.initialization.a0_compare_verdict`). The verdict is the weaker of the two.
``k = 4`` is context. The analysis is in three steps: :func:`measure` (the counts, cells and
summaries), :func:`decide` (pure: the counts held to the margin, target, floor and confidence; the
verdict and its deciding numbers) and :func:`analyze` (the description; its sensitivity lines call
:func:`decide` at the neighbouring thresholds). Config: ``mixlinreg/configs/studies/A0.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import wilson_interval
from ..study import HOLDS, combine
from ..initialization import (A0_DIRECTIONS, a0_cells, a0_compare_verdict, a0_summary,
                              a0_trial_rows, a0_verdict)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: a0.md beside this module
WORDS = words(__file__)

_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "settings": Spec("list[str]"), "d": Spec("list[int]", low=3),
        "n_prime": Spec("list[int]", low=1), "n_iter": Spec("list[int]", low=1),
        "m_per_cluster": Spec("list[int]", low=1),
        "sigma": Spec("list[float]", low=0, open="low"),
        "delta": Spec("list[float]", low=0, open="low"),
        "absolute_setting": Spec("str"), "ks": Spec("list[int]", low=2),
        "alphas": Spec("list[float]", low=0, high=0.5, open="both"),
        "directions": Spec("list[str]"), "trials": Spec("int", low=2),
        "chunk": Spec("int", low=1), "gamma_p": Spec("float", low=0, open="low"),
        "success_sigmas": Spec("float", low=0, open="low"),
        "floor_share": Spec("float", low=0, high=1, open="low"),
    },
    "margins": {
        "margin": Spec("float", **_OPEN01), "margin_neighbours": Spec("list[float]", **_OPEN01),
        "target": Spec("float", **_OPEN01), "target_neighbours": Spec("list[float]", **_OPEN01),
        "floor": Spec("float", **_OPEN01), "floor_neighbours": Spec("list[float]", **_OPEN01),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
    },
}
_SETTING_KEYS = ("d", "n_prime", "n_iter", "m_per_cluster", "sigma", "delta")


def settings_of(params) -> dict:
    """``{setting: {d, n_prime, n_iter, m_per_cluster, sigma, delta}}`` from the config's lists."""
    p = params["params"]
    lens = {key: len(p[key]) for key in ("settings",) + _SETTING_KEYS}
    if len(set(lens.values())) != 1:
        raise ValueError(f"study A0: params.settings, {', '.join(_SETTING_KEYS)} must have the "
                         f"same length, got {lens}")
    if len(set(p["settings"])) != len(p["settings"]):
        raise ValueError(f"study A0: params.settings must be distinct, got {p['settings']}")
    if p["absolute_setting"] not in p["settings"]:
        raise ValueError(f"study A0: params.absolute_setting must be one of {p['settings']}, got "
                         f"{p['absolute_setting']!r}")
    return {name: {key: p[key][i] for key in _SETTING_KEYS}
            for i, name in enumerate(p["settings"])}


def units(params):
    p = params["params"]
    settings = settings_of(params)
    bad = [d for d in p["directions"] if d not in A0_DIRECTIONS]
    if bad:
        raise ValueError(f"study A0: params.directions must be among {list(A0_DIRECTIONS)}, "
                         f"got {bad}")
    if 2 not in p["ks"]:
        raise ValueError(f"study A0: params.ks must contain 2 (the claim), got {p['ks']}")
    if len(set(p["alphas"])) < 2:
        raise ValueError(f"study A0: params.alphas needs two values or more, got {p['alphas']}")
    for name, cfg in settings.items():
        if cfg["d"] <= max(p["ks"]):
            raise ValueError(f"study A0: setting {name!r} needs d > max(ks) for the mixed start, "
                             f"got d = {cfg['d']}")
    out = []
    for name in settings:
        for k in p["ks"]:
            for start in range(0, p["trials"], p["chunk"]):
                stop = min(p["trials"], start + p["chunk"])
                out.append((f"{name}_k{k}_t{start:04d}-{stop:04d}",
                            {"setting": name, "k": k, "start": start, "stop": stop}))
    return out


def _g6(x):
    """Six significant digits: the stored rows stay small (the success flag is exact)."""
    return np.vectorize(lambda v: float(f"{v:.6g}"), otypes=[float])(np.asarray(x, dtype=float))


def compute(spec, params, rng, shared):
    """One unit: trials ``start..stop-1`` of a (setting, k), one child stream of ``rng`` each."""
    from threadpoolctl import threadpool_limits

    p = params["params"]
    cfg = settings_of(params)[spec["setting"]]
    start, stop = spec["start"], spec["stop"]
    # one BLAS thread: the small Gram/matmul calls of a trial otherwise fight over the cores
    with threadpool_limits(limits=1, user_api="blas"):
        rows = pd.concat([a0_trial_rows(gen, k=spec["k"], trial=t, alphas=p["alphas"],
                                        directions=p["directions"], gamma_p=p["gamma_p"],
                                        success_sigmas=p["success_sigmas"], **cfg)
                          for t, gen in zip(range(start, stop), rng.spawn(stop - start))],
                         ignore_index=True)
    rows = rows[["k", "trial", "resample", "direction", "alpha0", "success", "diverged",
                 "misclass0", "t_hit", "dist_matched", "sigma", "oracle_all", "oracle_block",
                 "oracle_gd"]].copy()
    for col in ("misclass0", "dist_matched", "oracle_all", "oracle_block", "oracle_gd"):
        rows[col] = _g6(rows[col])
    rows.insert(0, "setting", spec["setting"])
    return rows


# ------------------------------------------------------------------------------ the verdict


def _runs(table):
    runs = table.copy()
    for col in ("resample", "success", "diverged"):
        runs[col] = runs[col].astype(bool)
    return runs


def measure(table, params):
    """The measured quantities (deterministic): ``runs`` (the rows, flags as bools), ``cells``
    (:func:`~mixlinreg.theory.initialization.a0_cells`: per (setting, k, resample, direction,
    alpha0) the successes and the 2 x 2 counts paired against the largest alpha0), ``summary``
    (:func:`~mixlinreg.theory.initialization.a0_summary`) and ``per_trial`` (the known-cluster
    errors); intervals at the config's confidence (:func:`decide` recomputes the ones it holds to
    the thresholds from the counts, at the confidence it is given)."""
    conf = params["margins"]["confidence"]
    runs = _runs(table)
    per_trial = runs.drop_duplicates(["setting", "k", "trial"])[
        ["setting", "k", "trial", "sigma", "oracle_all", "oracle_block", "oracle_gd"]].copy()
    for col in ("oracle_all", "oracle_block", "oracle_gd"):
        per_trial[col + "_over_sigma"] = (per_trial[col] / per_trial["sigma"]).round(4)
        per_trial = per_trial.drop(columns=col)
    return dict(runs=runs, cells=a0_cells(runs, conf), summary=a0_summary(runs, conf),
                per_trial=per_trial)


def _absolute_rows(cells, setting, confidence):
    """The absolute setting's success counts per (k, resample, direction, alpha0) with their
    Wilson interval at ``confidence``: the rows :func:`a0_verdict` reads (as from a0_summary)."""
    a = cells[cells["setting"] == setting][["k", "resample", "direction", "alpha0", "trials",
                                             "successes"]].reset_index(drop=True)
    lo, hi = wilson_interval(a["successes"].to_numpy(), a["trials"].to_numpy(), confidence)
    return a.assign(p=a["successes"] / a["trials"], lo=lo, hi=hi)


def decide(m, params) -> Decision:
    """The verdict of A0 from the cell counts ``m["cells"]`` (columns ``setting, k, resample,
    direction, alpha0, trials, successes, n_both, n_ref_only, n_this_only, n_neither``, as from
    :func:`~mixlinreg.theory.initialization.a0_cells`) and the config's ``margin``, ``target``,
    ``floor`` and ``confidence`` (the intervals are made from the counts at that confidence); pure.

    The weaker of two parts, both k = 2:

    * comparison (:func:`~mixlinreg.theory.initialization.a0_compare_verdict`), per (setting,
      resample, direction): the paired difference P(largest alpha0) - P(smallest alpha0), Newcombe
      interval [lo, hi]: some lo > margin -> not supported; no case informative (P(largest) Wilson
      lower bound > margin) -> inconclusive; every hi <= margin -> holds; else inconclusive;
    * absolute (:func:`~mixlinreg.theory.initialization.a0_verdict`), the absolute setting at the
      smallest alpha0 with resampling, per direction: some Wilson hi < floor -> not supported;
      every lo >= target -> holds (a caveat if some direction without resampling has hi <
      target); some lo >= target and the others hi < target -> caveat; else inconclusive.
    """
    mg, setting = params["margins"], params["params"]["absolute_setting"]
    margin, target, floor, conf = mg["margin"], mg["target"], mg["floor"], mg["confidence"]
    v_cmp, cinfo = a0_compare_verdict(m["cells"], k=2, margin=margin, confidence=conf)
    cases = cinfo["cases"]
    v_abs, ainfo = a0_verdict(_absolute_rows(m["cells"], setting, conf), k=2, target=target,
                              floor=floor)
    rs, pl = ainfo["resampled"], ainfo["plain"]
    numbers = {
        "margin": margin, "confidence": conf,
        "largest difference lo": float(cases["lo"].max()),
        "largest difference hi": float(cases["hi"].max()),
        "largest P(largest alpha0) lo": float(cases["p_ref_lo"].max()),
        "verdict comparison": v_cmp,
        "target": target, "floor": floor,
        "smallest success lo, resampled": float(rs["lo"].min()),
        "smallest success hi, resampled": float(rs["hi"].min()),
        "smallest success hi, no resampling": float(pl["hi"].min()) if len(pl) else np.nan,
        "verdict absolute": v_abs}
    return Decision(combine([v_cmp, v_abs]), numbers)


def _rho(cfg):
    return cfg["delta"] ** 2 / cfg["sigma"] ** 2


def _details(m, params):
    """The two parts' case tables and one-sentence reasons, for the description (the verdicts
    are :func:`decide`'s; these are the same rules' accounts of them)."""
    mg, setting = params["margins"], params["params"]["absolute_setting"]
    _, cinfo = a0_compare_verdict(m["cells"], k=2, margin=mg["margin"],
                                  confidence=mg["confidence"])
    _, ainfo = a0_verdict(_absolute_rows(m["cells"], setting, mg["confidence"]), k=2,
                          target=mg["target"], floor=mg["floor"])
    return cinfo, ainfo


def _floors(m, settings):
    """Per setting: the k = 2 known-cluster resampled GD errors / sigma, one per trial."""
    per_trial = m["per_trial"]
    return {name: per_trial[(per_trial["setting"] == name) & (per_trial["k"] == 2)]
            for name in settings}


def _numbers(cinfo, floors, sig):
    """The record's table: the k = 2 paired differences and the known-cluster floors."""
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]
    rows = []
    for r in cinfo["cases"].itertuples(index=False):
        rows.append(dict(
            quantity=WORDS.text("numbers.difference", a_ref=a_ref, a_min=a_min),
            setting=r.setting,
            resample="yes" if r.resample else "no", direction=r.direction, estimate=r.diff,
            lo=r.lo, hi=r.hi, trials=r.trials,
            detail=WORDS.text("numbers.difference detail", a_ref=a_ref, a_min=a_min,
                              p_ref=r.p_ref, p_min=r.p_min, n_ref_only=r.n_ref_only,
                              n_this_only=r.n_this_only)))
    for name, o in floors.items():
        v = o["oracle_gd_over_sigma"].to_numpy()
        rows.append(dict(
            quantity=WORDS.text("numbers.floor"), setting=name, resample="yes",
            direction="(known clusters)", estimate=float(v.mean()),
            lo=float(np.quantile(v, 0.05)), hi=float(np.quantile(v, 0.95)), trials=int(v.size),
            detail=WORDS.text("numbers.floor detail", max=v.max(), sig=sig,
                              share=(v <= sig).mean(),
                              oracle_all=o["oracle_all_over_sigma"].mean())))
    return pd.DataFrame(rows)


def _d_fmt(r):
    return WORDS.text("difference", diff=r["diff"], lo=r["lo"], hi=r["hi"])


def _hard_texts(m, cinfo, others):
    """The comparison's cases in the other settings, and the first estimate's misclassification
    there (mixed placement, resampled) at the smallest and the largest alpha0."""
    summary, cases = m["summary"], cinfo["cases"]
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]
    hard_txt, mis_txt = [], []
    for name in others:
        c = cases[(cases["setting"] == name) & cases["resample"].astype(bool)]
        hard_txt.append(WORDS.text("hard", setting=name, cases="; ".join(
            WORDS.text("hard.case", direction=r["direction"], a_ref=a_ref, p_ref=r["p_ref"],
                       a_min=a_min, p_min=r["p_min"], difference=_d_fmt(r))
            for _, r in c.iterrows())))
    for name in others:
        mis = summary[(summary["setting"] == name) & (summary["k"] == 2)
                      & summary["resample"].astype(bool) & (summary["direction"] == "mixed")]
        if len(mis):
            m_min = float(mis[np.isclose(mis["alpha0"], a_min)]["misclass0"].iloc[0])
            m_ref = float(mis[np.isclose(mis["alpha0"], a_ref)]["misclass0"].iloc[0])
            mis_txt.append(WORDS.text("misclassification", setting=name, m_min=m_min,
                                      a_min=a_min, m_ref=m_ref, a_ref=a_ref))
    return hard_txt, mis_txt


def _context_text(m, cinfo, settings):
    """k other than 2 (context, no claim): the resampled success ranges over the directions."""
    cells = m["cells"]
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]
    ctx_txt = []
    for k in [k for k in sorted(set(cells["k"])) if k != 2]:
        kc = cells[(cells["k"] == k) & cells["resample"].astype(bool)]
        for name in settings:
            c = kc[kc["setting"] == name]
            if c.empty:
                continue
            cr = c[np.isclose(c["alpha0"], c["alpha_ref"])]
            cm = c[np.isclose(c["alpha0"], c["alpha0"].min())]
            ctx_txt.append(WORDS.text(
                "context", k=k, setting=name, a_ref=a_ref, p_ref_min=cr["p"].min(),
                p_ref_max=cr["p"].max(), a_min=a_min, p_min_min=cm["p"].min(),
                p_min_max=cm["p"].max(), diff_min=cm["diff"].min(), diff_max=cm["diff"].max()))
    return ctx_txt


def _describe(name, cfg):
    return WORDS.text("setting", setting=name, sigma=cfg["sigma"], rho=_rho(cfg),
                      delta=cfg["delta"], d=cfg["d"], n_iter=cfg["n_iter"],
                      n_prime=cfg["n_prime"], n=2 * cfg["n_iter"] * cfg["n_prime"],
                      m_per_cluster=cfg["m_per_cluster"])


def _summary(m, d, cinfo, ainfo, params, settings, floors):
    p, mg, n = params["params"], params["margins"], d.numbers
    summary, cases = m["summary"], cinfo["cases"]
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]
    margin, target, floor, sig = mg["margin"], mg["target"], mg["floor"], p["success_sigmas"]
    absolute, v_cmp, v_abs = p["absolute_setting"], n["verdict comparison"], n["verdict absolute"]
    others = [s for s in settings if s != absolute]
    hard_txt, mis_txt = _hard_texts(m, cinfo, others)
    ctx_txt = _context_text(m, cinfo, settings)

    def p_fmt(direction):
        r = summary[(summary["setting"] == absolute) & (summary["k"] == 2)
                    & summary["resample"].astype(bool) & (summary["direction"] == direction)
                    & np.isclose(summary["alpha0"], ainfo["alpha0"])].iloc[0]
        return WORDS.text("absolute", direction=direction, successes=r.successes,
                          trials=r.trials, p=r.p, lo=r.lo, hi=r.hi)

    worst = cases.loc[cases["hi"].idxmax()]
    fl = {s: o["oracle_gd_over_sigma"].to_numpy() for s, o in floors.items()}
    floor_txt = "; ".join(WORDS.text("floor", setting=s, mean=v.mean(), max=v.max(), sig=sig,
                                     share=(v <= sig).mean()) for s, v in fl.items())
    share = p["floor_share"]
    floor_ok = all((v <= sig).mean() >= share for v in fl.values())
    detectably = (WORDS.text("summary.detectably", detectable=int((cases["lo"] > 0).sum()),
                             cases=len(cases), largest=cases["diff"].max()) + " "
                  if (cases["lo"] > 0).any() and v_cmp == HOLDS else "")
    start_matters = (WORDS.text("summary.start matters", misclassification="; ".join(mis_txt))
                     + " " if mis_txt else "")
    floor_end = (WORDS.text("summary.floor below", sig=sig) if floor_ok else
                 WORDS.text("summary.floor misses", sig=sig, share=1 - share)) + " "
    context = WORDS.text("summary.context", context="; ".join(ctx_txt)) if ctx_txt else ""
    return WORDS.text(
        "summary", sig=sig, gamma_p=p["gamma_p"], trials=p["trials"],
        settings="; ".join(_describe(s, settings[s]) for s in settings), cases=len(cases),
        a_ref=a_ref, a_min=a_min, confidence_pct=100 * mg["confidence"], margin=margin,
        absolute=absolute, target=target, alpha0=ainfo["alpha0"], floor=floor, v_cmp=v_cmp,
        cmp_reason=cinfo["reason"], hard=". ".join(hard_txt), worst=_d_fmt(worst),
        worst_setting=worst["setting"],
        worst_resample=WORDS.text(f"resampled.{bool(worst['resample'])}"),
        worst_direction=worst["direction"], detectably=detectably, v_abs=v_abs,
        abs_reason=ainfo["reason"], abs_cases=", ".join(p_fmt(dd) for dd in p["directions"]),
        overall=WORDS.text(f"overall.{d.verdict}"), start_matters=start_matters,
        floors=floor_txt, floor_end=floor_end, context=context)


def _caveats(cinfo, params, settings):
    p, margin = params["params"], params["margins"]["margin"]
    a_min, a_ref = cinfo["alpha_min"], cinfo["alpha_ref"]
    others = [s for s in settings if s != p["absolute_setting"]]
    caveats = WORDS.items("caveats", others=", ".join(others)
                          or WORDS.text("caveats.no other setting"),
                          a_ref=a_ref, a_min=a_min, margin=margin)
    for name, cfg in settings.items():
        rho = _rho(cfg)
        req = ((rho + 1) / (a_min * rho)) ** 2 * math.log(2 * cfg["m_per_cluster"])
        caveats.append(WORDS.text("caveats.assumption 2", a_min=a_min, req=req, setting=name,
                                  n_prime=cfg["n_prime"]))
    return caveats + WORDS.items("caveats.end", gamma_p=p["gamma_p"])


def sensitivity(m, params):
    """The sensitivity lines: :func:`decide` on the same counts with one threshold moved."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(m, q).verdict,
                             absolute=params["params"]["absolute_setting"])


def analyze(table, params, rng):
    settings = settings_of(params)
    m = measure(table, params)
    d = decide(m, params)
    cinfo, ainfo = _details(m, params)
    floors = _floors(m, settings)
    return Verdict(d.verdict, _numbers(cinfo, floors, params["params"]["success_sigmas"]),
                   _summary(m, d, cinfo, ainfo, params, settings, floors),
                   caveats=_caveats(cinfo, params, settings), sensitivity=sensitivity(m, params),
                   tables={"_cells.csv": m["cells"].round(6), "_summary.csv": m["summary"],
                           "_trials.csv": m["per_trial"]},
                   cells=_hard_cells(m, cinfo, params))


def _hard_cells(m, cinfo, params):
    """The judged cells (the comparison's cases, the absolute part's directions) and those not
    decided by saturation: a case whose both arms succeed in every trial (or in none) has a
    paired difference of exactly 0 whatever the rule; a direction at 0 or all successes
    likewise sits at a bound of its interval."""
    cases = cinfo["cases"]
    p_ref, p_min = cases["p_ref"].to_numpy(float), cases["p_min"].to_numpy(float)
    saturated = ((p_ref == 1) & (p_min == 1)) | ((p_ref == 0) & (p_min == 0))
    a = _absolute_rows(m["cells"], params["params"]["absolute_setting"],
                       params["margins"]["confidence"])
    a = a[(a["k"] == 2) & a["resample"].astype(bool) & (a["alpha0"] == a["alpha0"].min())]
    inner = (a["successes"] > 0) & (a["successes"] < a["trials"])
    return {"hard": int((~saturated).sum() + inner.sum()), "total": int(len(cases) + len(a)),
            "rule": WORDS.text("cells rule")}


# ------------------------------------------------------------------------------ the figure


def _difference_panel(ax, cases, colors, markers, margin, confidence):
    """The figure's panel of the verdict's k = 2 paired differences, with the margin."""
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
    ax.set_title(f"k = 2: paired difference, Newcombe {100 * confidence:g}% (dashed red: "
                 f"margin {margin:g})\nrs = resampled (filled), all = no resampling (open)",
                 fontsize=8.5)
    ax.grid(alpha=0.3)


def figure(table, verdict, params):
    """Success against alpha0, one panel per (setting, k), lines per direction (color) and mode
    (line style), Wilson bands; bottom row: the paired differences of the verdict (k = 2) and the
    first estimate's misclassification rate (k = 2, resampled)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    p, mg = params["params"], params["margins"]
    settings = settings_of(params)
    directions = p["directions"]
    margin = mg["margin"]
    summary = verdict.tables["_summary.csv"]
    cases = a0_compare_verdict(verdict.tables["_cells.csv"], k=2, margin=margin,
                               confidence=mg["confidence"])[1]["cases"]
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
            ax.axhline(mg["target"], ls="--", color="0.5", lw=0.8)
            ax.set_xscale("log")
            ax.set_ylim(-0.03, 1.03)
            n = int(s["trials"].max()) if len(s) else 0
            ax.set_title(f"{name}: k = {k}, sigma = {cfg['sigma']:g} (rho = {_rho(cfg):.3g}), "
                         f"n' = {cfg['n_prime']}, {cfg['m_per_cluster']} machines/cluster, "
                         f"{n} trials", fontsize=8.5)
            ax.set_ylabel(rf"P(matched dist $\leq {p['success_sigmas']:g}\sigma$)")
            ax.set_xlabel(r"$\alpha_0$ (init at distance $(1/2-\alpha_0)\Delta$)")
            ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colors[d], marker=markers[d], ms=sizes[d],
                      mfc="none" if d == "random" else None, label=d) for d in directions]
    handles += [Line2D([], [], color="0.3", ls="-", label="resampled (theory)"),
                Line2D([], [], color="0.3", ls=":", label="no resampling")]
    axes[0, 0].legend(handles=handles, loc="lower right", fontsize=7)

    _difference_panel(axes[-1, 0], cases, colors, markers, margin, mg["confidence"])

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
    fig.suptitle(f"A0: success against closeness alpha0 (Wilson {100 * mg['confidence']:g}% bands)")
    fig.tight_layout()
    return fig


STUDY = Study(
    id="A0", order=40, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
