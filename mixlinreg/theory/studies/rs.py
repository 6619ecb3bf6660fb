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
from ..study import Decision, Study, Verdict, figure2_store, with_margin
from ..words import sensitivity_lines, words

#: the study's prose: rs.md beside this module
WORDS = words(__file__)

_PRESET = Spec("str", choices=PRESETS)
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "figure2_preset": _PRESET, "figure2_store": Spec("str"),
        "n_boot": Spec("int", low=100), "numbers_sigma": Spec("list[float]", low=0),
        # the control's broken restarts: every restart of a trial repeats its first
        # initialization (False: the store's N independent initializations)
        "repeat_first_init": Spec("bool", required=False, default=False),
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
    out = reduce_runs(rows, spec["panel"], float(store.exp.protocol["success_plus"]))
    return repeat_first_init(out) if p["repeat_first_init"] else out


def repeat_first_init(per_init):
    """``per_init`` (:func:`~mixlinreg.theory.restarts.reduce_runs`'s rows) as if every restart of
    a trial repeated its first initialization (the lowest ``init``): each row takes that one's
    outcomes, so a trial's N initializations all succeed or all fail."""
    keys = ["panel", "m", "n", "d", "k", "R", "sigma", "trial"]
    cols = ["ok", "ok_text", "best_dist_nearest", "steps_diverged", "steps"]
    first = per_init.sort_values(keys + ["init"]).groupby(keys, sort=False).head(1)
    out = per_init.drop(columns=cols).merge(first[keys + cols], on=keys, how="left",
                                            validate="many_to_one")
    return out[per_init.columns]


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
        "evidence": np.where(show["evidence"], WORDS.text("numbers.evidence"),
                             WORDS.text("numbers.context")),
    }).reset_index(drop=True)


def _context_text(ctx_cells, min_trials, target):
    if not len(ctx_cells):
        return ""
    if len(ctx_cells) > 6:
        return " " + WORDS.text("context.many", n=len(ctx_cells), min_trials=min_trials)
    return " " + WORDS.text("context", min_trials=min_trials, cells="; ".join(
        WORDS.text("context.cell", panel=r.panel, R=r.R, sigma=r.sigma, p1=r.p1, n_init=r.n_init,
                   pN=r.pN, target=target, need=_fmt_need(r), trials=r.trials)
        for r in ctx_cells.itertuples()))


def _summary(info, exps, plus, mg):
    target, p1s, min_trials, conf = (mg["target"], mg["p1_substantial"], mg["min_trials"],
                                     mg["confidence"])
    c = info["cells"]
    n_init = int(c["n_init"].max())
    n_txt = f"{int(c['n_init'].min())}-{n_init}" if c["n_init"].nunique() > 1 else f"{n_init}"
    ev = c[c["evidence"]]
    held = ev[ev["holds"]]
    parts = [WORDS.text("where.from" if r_star is not None else "where.nowhere", panel=panel,
                        sigma=sigma, r_star=r_star)
             for (panel, sigma), r_star in sorted(info["r_star"].items())]
    worst = held.loc[held["r_need"].idxmax()] if len(held) else None
    text_note = ""
    if "pN_text" in c.columns and len(held):
        pos = held[held["sigma"] > 0]
        if len(pos):
            text_note = " " + WORDS.text("text note", pN_text=pos["pN_text"].min())
    findings = []
    if len(ev):
        findings.append(WORDS.text("held", held=len(held), evidence=len(ev)))
    if worst is not None:
        findings.append(WORDS.text("most restarts", need=_fmt_need(worst), panel=worst.panel,
                                   R=worst.R, sigma=worst.sigma, p1=worst.p1))
    if parts:
        findings.append(WORDS.text("where", parts="; ".join(parts)))
    findings.append(f"{info['reason'][0].upper()}{info['reason'][1:]}")
    panels = " ".join(WORDS.text("panel", panel=x, store=e.name, preset=e.preset,
                                 hash=e.hash()[:12], trials=_trials(c, x),
                                 cells=(c["panel"] == x).sum())
                      for x, e in zip("ab", exps))
    return WORDS.text("summary", plus=plus, n_init=n_txt, conf_pct=100 * conf, panels=panels,
                      min_trials=min_trials, target=target, p1_substantial=p1s,
                      findings=" ".join(findings), text_note=text_note,
                      context=_context_text(c[~c["evidence"]], min_trials, target))


def _caveats(exps, plus, mg):
    pa = exps[0].protocol
    stores = " and ".join(
        WORDS.text("caveats.store", store=e.name, preset=e.preset, seed=e.protocol["seed"],
                   n_iter=e.protocol["n_iter"],
                   stop=WORDS.text("caveats.early stop" if e.protocol["early_stop"]
                                   else "caveats.no early stop"))
        for e in exps)
    return WORDS.items("caveats", n_steps=len(pa["steps"]), n_init=pa["n_init"],
                       n_runs=pa["n_init"] * len(pa["steps"]), plus=plus, stores=stores,
                       target=mg["target"], p1_substantial=mg["p1_substantial"],
                       min_trials=mg["min_trials"])


def _sensitivity(table, params, rng, cells):
    """The verdict at the neighbours of each threshold: :func:`decide` on the same runs (the cell
    statistics measured again where the target or the confidence moves)."""
    mg = params["margins"]

    def verdict_at(p, key):
        if key == "min_trials":
            p = with_margin(p, key, int(p["margins"][key]))
        same = all(p["margins"][k] == mg[k] for k in ("target", "confidence"))
        cc = cells if same else _stats(table, p, rng, p["margins"]["target"],
                                       p["margins"]["confidence"])[0]
        return decide(cc, p).verdict

    return sensitivity_lines(WORDS, params, verdict_at)


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
                   tables={"_cells.csv": c, "_curves.csv": curves},
                   cells=_hard_cells(c, mg["target"]))


def _hard_cells(c, target):
    """The evidence cells (those judged) and those where one start does not already reach the
    target: there the restarts have something to do."""
    ev = c[c["evidence"].astype(bool)]
    return {"hard": int((ev["p1"] < target).sum()), "total": int(len(ev)),
            "rule": WORDS.text("cells rule")}


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
    id="RS", order=70, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide,
    reads=reads)
