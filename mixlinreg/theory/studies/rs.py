"""Study RS: "random initialization with a few restarts is sufficient" (Section 6).

At the settings of Figure 2 (a) and (b) (the authors' protocol: Bernoulli initializations, three
step sizes, success if the mean distance of the models to their nearest true parameter is below
``0.6 sigma + plus``) it counts, per trial, how many of the ``N`` initializations succeed (with
some step size), and from that the probability that ``r`` restarts drawn without replacement
contain a success (:func:`mixlinreg.theory.restarts.restart_success`), per (panel, R, sigma) cell
(:func:`~mixlinreg.theory.restarts.rs_cell_stats`: the measurements), decided by :func:`decide`,
a pure function of those statistics and the config's thresholds (the rule of
:func:`~mixlinreg.theory.restarts.rs_decision`); ``analyze`` measures, calls it, and describes it
(at the neighbouring thresholds too, through it again).

Both panels read the runs of the Figure 2 experiment, asked of its store **by config** (the
``fig2a`` and ``fig2b`` configs at ``params.figure2_preset``, under the root
``params.figure2_store``, through :meth:`mixlinreg.harness.ResultStore.find`; never a path with a
hash in it); a missing store makes the record inconclusive, naming the command that makes the
runs. Nothing is computed here but the reduction and the verdict. Config:
``mixlinreg/configs/studies/RS.toml``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ...config import PRESETS, Spec
from ...harness import load_config
from ..restarts import reduce_runs, rs_cell_stats, rs_decision, rs_explain
from ..study import Decision, Study, Verdict, figure2_store, sensitivity_line

_PRESET = Spec("str", choices=PRESETS)
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "figure2_preset": _PRESET, "figure2_store": Spec("str"),
        "n_boot": Spec("int", low=100), "numbers_sigma": Spec("list[float]", low=0),
    },
    "margins": {
        "target": Spec("float", **_OPEN01), "target_neighbours": Spec("list[float]", **_OPEN01),
        "p1_substantial": Spec("float", **_OPEN01),
        "p1_substantial_neighbours": Spec("list[float]", **_OPEN01),
        "min_trials": Spec("int", low=1), "min_trials_neighbours": Spec("list[int]", low=1),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
    },
}


_PANELS = {"a": "fig2a", "b": "fig2b"}


def reads(params):
    """The stores this study reads: panels (a) and (b), both required."""
    p = params["params"]
    return tuple((name, p["figure2_preset"], p["figure2_store"], True) for name in _PANELS.values())


def _stores(p):
    """The Figure 2 (a) and (b) stores the study reads, by config (``figure2_store`` raises
    :class:`~mixlinreg.theory.study.MissingInput` naming the command when one is missing)."""
    return {panel: figure2_store(name, p["figure2_preset"], p["figure2_store"])
            for panel, name in _PANELS.items()}


def units(params):
    """One unit per panel: the reduction of the runs its store holds now, named by the store and
    a digest of its finished units (a store that grew is read again, never a stale table)."""
    out = []
    for panel, store in _stores(params["params"]).items():
        done = sorted(store.done(warn=False))
        digest = hashlib.sha256("\n".join(done).encode()).hexdigest()[:12]
        out.append((f"{panel}_{store.path.name}_{len(done)}units_{digest}",
                    {"panel": panel, "units": done}))
    return out


def compute(spec, params, rng, shared):
    p = params["params"]
    store = figure2_store(_PANELS[spec["panel"]], p["figure2_preset"], p["figure2_store"])
    rows = pd.concat([store.units.read(u) for u in spec["units"]], ignore_index=True)
    return reduce_runs(rows, spec["panel"], float(store.exp.protocol["success_plus"]))


# ------------------------------------------------------------------------------ the verdict


def _stats(table, params, rng, target, confidence):
    per_init = table.assign(ok=table["ok"].astype(bool), ok_text=table["ok_text"].astype(bool))
    return rs_cell_stats(per_init, target=target, n_boot=params["params"]["n_boot"],
                         confidence=confidence, rng=rng)


def _trials(cells, panel):
    """'40' or '38-40': the trials per cell of one panel."""
    t = cells.loc[cells["panel"] == panel, "trials"]
    if not len(t):
        return "0"
    return f"{t.min()}" if t.min() == t.max() else f"{t.min()}-{t.max()}"


def _fmt_need(r):
    n = int(r.n_init)

    def f(v):
        return f">{n}" if v > n else f"{int(v)}"

    return f"{f(r.r_need)} [{f(r.r_need_lo)}, {f(r.r_need_hi)}]"


def _with_margins(params, **margins):
    """``params`` with some margins moved (for the sensitivity lines)."""
    return {**params, "margins": {**params["margins"], **margins}}


def decide(cells, params) -> Decision:
    """RS's verdict from the per-cell statistics (``cells``: :func:`rs_cell_stats`'s, columns
    ``panel, R, sigma, trials, n_init, p1, pN, pN_hi, r_need_hi``, made at the config's
    ``target`` and ``confidence``) at the config's thresholds ``target``, ``p1_substantial`` and
    ``min_trials``.

    :func:`~mixlinreg.theory.restarts.rs_decision` compares, cell by cell, ``trials`` to
    ``min_trials`` (evidence), ``pN`` to ``target`` and ``r_need_hi`` to ``n_init`` (holds), ``p1``
    to ``p1_substantial`` and ``pN_hi`` to ``target`` (contradicts); then *not supported* if some
    cell contradicts, *holds* if every evidence cell holds, *holds with a caveat* if each (panel,
    sigma) holds from some R on, *inconclusive* otherwise or with no evidence cell.
    """
    mg = params["margins"]
    return rs_decision(cells, target=mg["target"], p1_substantial=mg["p1_substantial"],
                       min_trials=mg["min_trials"])


# ------------------------------------------------------------------------------ the description


def _numbers(c, numbers_sigma, target):
    show = c[c["sigma"].isin(numbers_sigma)]
    return pd.DataFrame({
        "panel": show["panel"], "R": show["R"], "sigma": show["sigma"], "trials": show["trials"],
        "P(1 init)": [f"{r.p1:.2f} [{r.p1_lo:.2f}, {r.p1_hi:.2f}]" for r in show.itertuples()],
        "inits": show["n_init"],
        "P(all inits)": [f"{r.pN:.2f} [{r.pN_lo:.2f}, {r.pN_hi:.2f}]" for r in show.itertuples()],
        f"restarts for {target:g}": [_fmt_need(r) for r in show.itertuples()],
        "evidence": np.where(show["evidence"], "yes", "context"),
    }).reset_index(drop=True)


def _context_text(ctx_cells, min_trials, target):
    if not len(ctx_cells):
        return ""
    if len(ctx_cells) > 6:
        return f" {len(ctx_cells)} cells have < {min_trials} trials (context only)."
    return (f" Context cells (< {min_trials} trials): "
            + "; ".join(f"panel {r.panel}, R = {r.R:g}, sigma = {r.sigma:g}: P(1) = {r.p1:.2f}, "
                        f"P({r.n_init}) = {r.pN:.2f}, restarts for {target:g}: {_fmt_need(r)} "
                        f"({r.trials} trials)" for r in ctx_cells.itertuples()) + ".")


def _summary(info, exps, plus, mg):
    target, p1s, min_trials, conf = (mg["target"], mg["p1_substantial"], mg["min_trials"],
                                     mg["confidence"])
    c = info["cells"]
    n_init = int(c["n_init"].max())
    n_txt = f"{int(c['n_init'].min())}-{n_init}" if c["n_init"].nunique() > 1 else f"{n_init}"
    ev = c[c["evidence"]]
    held = ev[ev["holds"]]
    parts = [f"panel {panel}, sigma = {sigma:g}: " + (f"R >= {r_star:g}" if r_star is not None
                                                       else "no R")
             for (panel, sigma), r_star in sorted(info["r_star"].items())]
    worst = held.loc[held["r_need"].idxmax()] if len(held) else None
    text_note = ""
    if "pN_text" in c.columns and len(held):
        pos = held[held["sigma"] > 0]
        if len(pos):
            text_note = (f" Under the paper's text rule (matched distance <= 0.6 sigma) the "
                         f"all-restart success at those cells with sigma > 0 is at least "
                         f"{pos['pN_text'].min():.2f}.")
    return (
        f"An initialization (theta_j^(0) ~ Bernoulli(0.5)^d) succeeds if one of the step sizes "
        f"gives mean distance to the nearest true parameter < 0.6 sigma + {plus:g} (the authors' "
        f"rule of Figure 2 a, b); with s of N = {n_txt} initializations successful in a trial, r "
        f"restarts succeed with probability 1 - C(N - s, r)/C(N, r), averaged over trials "
        f"(bootstrap over trials, {100 * conf:g}%). "
        + " ".join(f"Panel ({x}): the {e.name} store, {e.preset} preset (config hash "
                   f"{e.hash()[:12]}), {_trials(c, x)} trials x {(c['panel'] == x).sum()} cells."
                   for x, e in zip("ab", exps))
        + f" Rule: evidence cells have >= {min_trials} trials; a cell holds if all N restarts give "
        f">= {target:g} and the restarts needed for {target:g} have an upper bound <= N; not "
        f"supported if a cell with single-init success >= {p1s:g} stays below "
        f"{target:g} (Wilson upper bound) with all restarts. "
        + (f"{len(held)} of {len(ev)} evidence cells hold. " if len(ev) else "")
        + (f"The most restarts needed where it holds: {_fmt_need(worst)} (panel "
           f"{worst.panel}, R = {worst.R:g}, sigma = {worst.sigma:g}, single-init "
           f"success {worst.p1:.2f}). " if worst is not None else "")
        + ("Where it holds: " + "; ".join(parts) + ". " if parts else "")
        + f"{info['reason'][0].upper()}{info['reason'][1:]}." + text_note
        + _context_text(c[~c["evidence"]], min_trials, target))


def _caveats(exps, plus, mg):
    pa = exps[0].protocol
    return [
        f"A restart is one Bernoulli initialization with the paper's {len(pa['steps'])} step sizes "
        f"swept; {pa['n_init']} restarts are {pa['n_init'] * len(pa['steps'])} runs, as in the "
        f"paper's protocol.",
        "The authors' rule counts two models on the same true parameter as success (nearest, not "
        f"matched, distance); at sigma = 0 its threshold is {plus:g}.",
        "Restarts are drawn without replacement from the initializations actually run in each "
        "trial, so r = N is the paper's per-trial success and r < N is interpolated.",
        "Trials whose initializations all fail cap the restart curve below 1: more restarts of the "
        "same kind would not fix those data draws at small R.",
        "Both panels' rows come from the Figure 2 stores of the "
        + " and ".join(f"{e.name} {e.preset} preset (seed {e.protocol['seed']}, "
                       f"{e.protocol['n_iter']} iterations, "
                       f"{'early stop' if e.protocol['early_stop'] else 'no early stop'})"
                       for e in exps)
        + "; they do not change with --seed.",
        f"The thresholds (target {mg['target']:g}, substantial single-init success "
        f"{mg['p1_substantial']:g}, {mg['min_trials']} trials for evidence) are this study's "
        f"choices, not the paper's; the sensitivity lines give the verdict at their neighbours.",
    ]


def _sensitivity(table, params, rng, cells):
    """The verdict at the neighbours of each threshold: :func:`decide` on the same runs (the cell
    statistics measured again where the target or the confidence moves)."""
    mg = params["margins"]

    def at(**moved):
        p = _with_margins(params, **moved)
        same = all(p["margins"][k] == mg[k] for k in ("target", "confidence"))
        cc = cells if same else _stats(table, p, rng, p["margins"]["target"],
                                       p["margins"]["confidence"])[0]
        return decide(cc, p).verdict

    return [
        sensitivity_line("restart success target", mg["target"], lambda v: at(target=v),
                         mg["target_neighbours"]),
        sensitivity_line("substantial single-init success", mg["p1_substantial"],
                         lambda v: at(p1_substantial=v), mg["p1_substantial_neighbours"]),
        sensitivity_line("trials for an evidence cell", mg["min_trials"],
                         lambda v: at(min_trials=int(v)), mg["min_trials_neighbours"]),
        sensitivity_line("confidence of the intervals", mg["confidence"],
                         lambda v: at(confidence=v), mg["confidence_neighbours"]),
    ]


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    exps = tuple(load_config(_PANELS[x], p["figure2_preset"]) for x in "ab")
    plus_a, plus_b = (float(e.protocol["success_plus"]) for e in exps)
    if plus_a != plus_b:
        raise ValueError(f"study RS: panel (a) rows use success_plus = {plus_a}, panel (b) "
                         f"{plus_b}: the summary assumes one rule")
    # the measurements: per cell, single-init and all-restart success, restarts needed
    cells, curves = _stats(table, params, rng, mg["target"], mg["confidence"])
    decision = decide(cells, params)
    info = rs_explain(cells, decision.verdict, target=mg["target"],
                      p1_substantial=mg["p1_substantial"], min_trials=mg["min_trials"])
    c = info["cells"]
    return Verdict(decision.verdict, _numbers(c, p["numbers_sigma"], mg["target"]),
                   _summary(info, exps, plus_a, mg), caveats=_caveats(exps, plus_a, mg),
                   sensitivity=_sensitivity(table, params, rng, cells),
                   tables={"_cells.csv": c, "_curves.csv": curves})


def figure(table, verdict, params):
    import matplotlib as mpl
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    target = params["margins"]["target"]
    curves, cells = verdict.tables["_curves.csv"], verdict.tables["_cells.csv"]
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
        ax.axhline(target, ls="--", color="0.4", lw=1)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("restarts r (Bernoulli initializations, step size swept)")
        ax.set_ylabel("P(some restart succeeds), authors' rule")
        ax.set_title(f"Figure 2({panel}) settings (Figure 3({panel}) of the long version)")
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=7, loc="lower right")
    fig.suptitle(f"RS: success within r restarts (mean over trials, bootstrap "
                 f"{100 * params['margins']['confidence']:g}% bands)")
    return fig


STUDY = Study(
    id="RS", order=70,
    title="Section 6: random initialization with a few restarts",
    claim=("For linear models, random initialization with a few restarts is sufficient to "
           "ensure convergence of IFCA."),
    location=("Section 6, first paragraph, of both versions (the experiments of Section 6.1: "
              "Figure 3 of the long version, Figure 2 of the NeurIPS version), and the abstract "
              "and Section 1 of both, Section 7 of the long version; IFCA is Algorithm 2 of the "
              "long version, Algorithm 1 of the NeurIPS version"),
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide,
    reads=reads)
