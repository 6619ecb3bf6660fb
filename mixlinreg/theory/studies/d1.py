"""Reproducibility note D1: do the text of Section 6.1 and the authors' code describe the same
experiment?

D1 is not a claim of the paper (its record has ``kind = "note"`` and a note's outcome: "same
results", "results differ" or "undetermined"). Three differences are measured as paired moves of
the success probability per grid point, code convention minus text convention:

* (2) distance and (3) threshold: re-scored on the raw rows of the Figure 2 stores of panels a, b,
  c and d at ``params.figure2_preset`` (found by their configs under ``params.figure2_store``,
  through :func:`~mixlinreg.theory.study.figure2_store`; a missing panel is left out and a caveat
  names the command that makes it): the four combinations of {nearest, matched} x {code threshold,
  text threshold}, paired by trial. One unit per panel, named by the digest of the store's
  finished units, so a store that grew is read again;
* (1) the scaling of the true parameters: the Figure 2(a) grid at ``params.config_preset``
  (``params.R``, ``params.sigma``: a subset of its grid) run with :func:`mixlinreg.harness.run_unit`
  under ``theta_scale="code"`` and ``"norm"`` with the same seeds (same X, patterns, noise and
  initializations), one unit per scaling and trial; also the whole text experiment (norm scaling,
  text rule) against the whole code experiment.

The separations ``Delta`` of both scalings come from the trials' true parameters and from the
exact expectation (:func:`mixlinreg.theory.d1.expected_sq_separation`). ``analyze`` makes the
paired moves (:func:`_compare`: Newcombe intervals, simultaneous over a comparison's grid points,
Bonferroni at ``margins.alpha``: the measurements), the note's table ``D1_<preset>.csv``, and reads
it back: :func:`decide` (a pure function of that table and ``margins.margin``) gives the outcome,
:func:`mixlinreg.theory.d1.d1_note` the description, exactly as ``python -m mixlinreg.theory.d1``
reads the committed one; the sensitivity lines call :func:`decide` at the neighbouring margins and
levels. Config: ``mixlinreg/configs/studies/D1.toml``.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
Section 6.1 (both versions); the authors' public code (github jichan3751/ifca, synthetic/), as
summarised in the project's digest, section 4.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io

import numpy as np
import pandas as pd

from ...config import Spec
from ...geometry import min_separation
from ...harness import load_config, run_unit, success_table, trial_success, unit_seeds
from ...metrics import success_authors, success_text
from ...stats import paired_difference, wilson_interval
from ..study import NOTE, PRESETS
from ..d1 import QUESTION, d1_decision, d1_note, expected_sq_separation
from ..study import Decision, MissingInput, Study, Verdict, figure2_store
from ..words import sensitivity_lines, words

#: the note's prose: d1.md beside this module
WORDS = words(__file__)

_PRESET = Spec("str", choices=PRESETS)
SCHEMA = {
    "params": {
        "config_preset": _PRESET,
        # absent: the fig2a grid's own values at config_preset
        "R": Spec("list[float]", low=0, open="low", required=False),
        "sigma": Spec("list[float]", low=0, required=False),
        "trials": Spec("int", low=1),
        "figure2_preset": _PRESET, "figure2_store": Spec("str"),
    },
    "margins": {
        "margin": Spec("float", low=0), "margin_neighbours": Spec("list[float]", low=0),
        "alpha": Spec("float", low=0, high=0.5, open="both"),
        "alpha_neighbours": Spec("list[float]", low=0, high=0.5, open="both"),
    },
}

_CELL = ["m", "n", "d", "k", "R", "sigma"]
#: grid keys of the Figure 2 panels: R-sigma panels (a, b) and m-n panels (c, d)
_KEYS = {"a": ["R", "sigma"], "b": ["R", "sigma"], "c": ["R", "sigma", "m", "n"],
         "d": ["R", "sigma", "m", "n"]}
_RULES = ["nearest_code", "nearest_text", "matched_code", "matched_text"]
_CELL_TYPES = {"m": int, "n": int, "d": int, "k": int, "R": float, "sigma": float, "trial": int}
#: the columns of each kind of unit (its name's first word), in order, with their types: the
#: study's table stacks them, so a column one kind lacks is empty in the others' rows
_PARTS = {
    "rules": {"panel": str, "source": str, "read": str, **_CELL_TYPES, **{r: bool for r in _RULES}},
    "missing": {"panel": str, "why": str},
    "scale": {**_CELL_TYPES, "theta_scale": str, "authors": bool, "text": bool},
    "separation": {"trial": int, "R": float, "d": int, "theta_scale": str, "delta": float,
                   "rms_exact": float},
}


def _digest(text):
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _store_digest(store, done):
    h = hashlib.sha256()
    for u in sorted(done):
        h.update(u.encode())
        h.update(store.unit_path(u).read_bytes())
    return h.hexdigest()[:12]


def _harness_seed(rng, config_seed):
    """The seed of D1's harness runs: the fig2a config's own at the root seed 0 (so the code arm's
    runs are fig2a's trials, seed for seed), else ``SeedSequence(root, spawn_key=(crc32("D1"),
    1))``'s first word, as D1 has always drawn it.

    The root seed is the entropy of every generator the driver hands a study
    (:func:`~mixlinreg.theory.study.unit_rng`: ``SeedSequence(root, spawn_key=(crc32(ID), ...))``).
    """
    ss = rng.bit_generator.seed_seq
    if int(ss.entropy) == 0:
        return config_seed
    return int(np.random.SeedSequence(ss.entropy, spawn_key=(ss.spawn_key[0], 1))
               .generate_state(1)[0])


def _experiments(params, rng=None):
    """``{"code": exp, "norm": exp}``: the fig2a grid under both scalings (with ``rng``, the seed of
    :func:`_harness_seed`; without, the config's, enough to list the units)."""
    p = params["params"]
    base = load_config("fig2a", p["config_preset"])
    grid = dict(base.grid)
    for key in ("R", "sigma"):
        if p[key] is not None:
            grid[key] = [float(v) for v in p[key]]
    proto = dict(base.protocol, trials=int(p["trials"]))
    if rng is not None:
        proto["seed"] = _harness_seed(rng, proto["seed"])
    return {scale: dataclasses.replace(base, name=f"D1-fig2a-{scale}", grid=grid,
                                       protocol=dict(proto, theta_scale=scale))
            for scale in ("code", "norm")}


def reads(params):
    """The stores this note reads: every panel's, none required (a missing panel is left out)."""
    p = params["params"]
    return tuple((f"fig2{x}", p["figure2_preset"], p["figure2_store"], False) for x in "abcd")


def units(params):
    """Per panel a-d: ``rules_<store>_<N>units_<digest>`` (its finished units) or, with no runs to
    read, ``missing_<panel>_<digest of why>``; per scaling and trial, ``scale_<scaling>_<unit>``;
    and ``separation``."""
    p = params["params"]
    out = []
    for panel in "abcd":
        try:
            store = figure2_store(f"fig2{panel}", p["figure2_preset"], p["figure2_store"])
        except MissingInput as exc:
            out.append((f"missing_{panel}_{_digest(str(exc))}",
                        {"part": "missing", "panel": panel, "why": str(exc)}))
            continue
        done = sorted(store.done(warn=False))
        sha = _store_digest(store, done)
        out.append((f"rules_{store.path.name}_{len(done)}units_{sha}",
                    {"part": "rules", "panel": panel, "units": done, "sha256": sha}))
    for scale, exp in _experiments(params).items():
        out += [(f"scale_{scale}_{u.id}", {"part": "scale", "scale": scale, "unit": u.id})
                for u in exp.units()]
    return out + [("separation", {"part": "separation"})]


def _rules_from_rows(rows, plus):
    """Per (cell, trial): success under {nearest, matched} x {code, text} thresholds."""
    s = rows["sigma"].to_numpy(float)
    near = rows["dist_nearest"].to_numpy(float)
    matched = rows["dist_matched"].to_numpy(float)
    df = rows[_CELL + ["trial"]].copy()
    df["nearest_code"] = success_authors(near, s, plus=plus)
    df["nearest_text"] = success_text(near, s)
    df["matched_code"] = success_authors(matched, s, plus=plus)
    df["matched_text"] = success_text(matched, s)
    return df.groupby(_CELL + ["trial"], as_index=False).any()


def _rules(spec, p):
    store = figure2_store(f"fig2{spec['panel']}", p["figure2_preset"], p["figure2_store"])
    done, of = len(spec["units"]), len(store.exp.units())
    rows = pd.concat([store.units.read(u) for u in spec["units"]], ignore_index=True)
    rules = _rules_from_rows(rows, float(store.exp.protocol["success_plus"]))
    source = (f"{store.path.name} ({p['figure2_preset']} preset, {done} of {of} units"
              f"{'' if done == of else ', not complete yet'})")
    read = (f"panel {spec['panel']}: {store.path.name} under {p['figure2_store']}, {done} of {of} "
            f"units (sha256 of the units {spec['sha256']})")
    return rules.assign(panel=spec["panel"], source=source, read=read)


def _separations(exp):
    from ...data import draw_trial

    rows = []
    for unit in exp.units():
        data_ss, _ = unit_seeds(exp, unit)
        # B is the first thing drawn from the trial's generator (draw_trial's documented order),
        # so a trial with m = k machines and n = 1 point has the same true parameters
        tr = draw_trial(unit.k, 1, unit.d, unit.k, rng=np.random.default_rng(data_ss),
                        dtype=np.dtype(exp.protocol["dtype"]))
        for R in exp.grid["R"]:
            for scale in ("code", "norm"):
                exact = float(np.sqrt(expected_sq_separation(R, unit.d, scale)))
                rows.append(dict(trial=unit.trial, R=float(R), d=unit.d, theta_scale=scale,
                                 delta=min_separation(tr.theta_star(R, scale)), rms_exact=exact))
    return pd.DataFrame(rows)


def compute(spec, params, rng, shared):
    p, part = params["params"], spec["part"]
    if part == "missing":
        return pd.DataFrame({"panel": [spec["panel"]], "why": [spec["why"]]})
    if part == "rules":
        return _rules(spec, p)
    exps = _experiments(params, rng)
    if part == "separation":
        return _separations(exps["code"])
    exp = exps[spec["scale"]]
    unit = exp.unit(spec["unit"])
    rows, _ = run_unit(exp, unit)
    per = trial_success(rows, exp.protocol["success_plus"]).assign(theta_scale=spec["scale"])
    return per[list(_PARTS["scale"])]


# ------------------------------------------------------------------------------ the note


def _parts(table):
    """The study's table split by kind of unit, each with its own columns and types."""
    kind = table["unit"].str.split("_", n=1).str[0]
    return {name: table[kind == name].reindex(columns=list(cols)).astype(cols)
            .reset_index(drop=True) for name, cols in _PARTS.items()}


def _compare(per, first, second, family, panel, source, keys, alpha):
    """Paired moves per grid point, with pointwise and simultaneous (Bonferroni) intervals at
    ``1 - alpha``."""
    groups = list(per.groupby(keys, sort=True))
    conf_sim = 1 - alpha / max(len(groups), 1)
    rows = []
    for key, g in groups:
        g = g.sort_values("trial")
        r = paired_difference(g[first].to_numpy(), g[second].to_numpy(), 1 - alpha)
        s = paired_difference(g[first].to_numpy(), g[second].to_numpy(), conf_sim)
        key = key if isinstance(key, tuple) else (key,)
        row = dict(family=family, panel=panel, source=source, first=first, second=second)
        row.update({c: v for c, v in zip(keys, key)})
        row.update(trials=r["n"], p_first=r["p_first"], p_second=r["p_second"], diff=r["diff"],
                   lo95=r["lo"], hi95=r["hi"], lo=s["lo"], hi=s["hi"], confidence=conf_sim,
                   only_first=r["b"], only_second=r["c"], p_mcnemar=r["p_mcnemar"])
        row["moved"] = bool(row["lo"] > 0 or row["hi"] < 0)
        rows.append(row)
    return pd.DataFrame(rows)


def _moves(parts, per_scale, exp, p, alpha):
    """The note's table: per comparison and grid point, the paired move and its intervals."""
    moves = []
    rules = parts["rules"]
    for panel in sorted(rules["panel"].unique()):  # (2) + (3): the panels' runs, re-scored
        g = rules[rules["panel"] == panel]
        src, keys = g["source"].iloc[0], _KEYS[panel]
        moves.append(_compare(g, "nearest_code", "matched_code", "distance", panel, src, keys,
                              alpha))
        moves.append(_compare(g, "nearest_code", "nearest_text", "threshold", panel, src, keys,
                              alpha))
        moves.append(_compare(g, "nearest_code", "matched_text", "rule", panel, src, keys, alpha))
    # (1): the scaling of theta*, the new runs paired by trial
    wide = per_scale.pivot_table(index=_CELL + ["trial"], columns="theta_scale",
                                 values=["authors", "text"], aggfunc="first")
    wide.columns = [f"{rule}_{scale}" for rule, scale in wide.columns]
    wide = wide.reset_index()
    src = WORDS.text("moves.source", subset=WORDS.text("moves.subset") + " " if p["R"] else "",
                     preset=exp.preset, n_init=exp.protocol["n_init"],
                     early_stop=exp.protocol["early_stop"])
    for first, second, family in (("authors_code", "authors_norm", "theta_scale"),
                                  ("text_code", "text_norm", "theta_scale_text_rule"),
                                  ("authors_code", "text_norm", "experiment")):
        moves.append(_compare(wide, first, second, family, "a", src, ["R", "sigma"], alpha))
    return pd.concat(moves, ignore_index=True)


def _as_read_back(df):
    """``df`` as ``pandas.read_csv`` reads it from the CSV the study writes (the note is made from
    that, as :func:`mixlinreg.theory.d1.rebuild_d1` makes it from the committed table)."""
    return pd.read_csv(io.StringIO(df.to_csv(index=False)))


def _cross_check_quick(per_scale, exp, root):
    """Does the code arm reproduce the fig2a quick store under ``root`` (same seeds)?

    Possible when the arm runs the quick protocol with at least as many trials as that store's
    config: its first trials are then the store's, cell by cell. Returns a sentence, or "".
    """
    quick = load_config("fig2a", "quick")
    same = {k: v for k, v in exp.protocol.items() if k != "trials"} == {
        k: v for k, v in quick.protocol.items() if k != "trials"}
    T = quick.protocol["trials"]
    if not same or exp.protocol["trials"] < T:
        return ""
    try:
        store = figure2_store("fig2a", "quick", root)
    except MissingInput:
        return ""
    summ = success_table(store.table(), quick.protocol["success_plus"])
    code = per_scale[(per_scale["theta_scale"] == "code") & (per_scale["trial"] < T)]
    got = code.groupby(["R", "sigma"]).agg(authors=("authors", "sum"), text=("text", "sum"))
    want = summ.set_index(["R", "sigma"])[["succ_authors", "succ_text"]]
    joined = got.join(want, how="inner")
    ok = int(((joined["authors"] == joined["succ_authors"])
              & (joined["text"] == joined["succ_text"])).sum())
    return WORDS.text("caveats.cross-check", trials=T, store=store.path.name, ok=ok,
                      points=len(joined))


def decide(moves, params) -> Decision:
    """D1's outcome from the moves table (``moves``: per comparison ``family``, ``panel`` and grid
    point, its ``sigma`` and the simultaneous interval ``lo, hi`` of the paired move, made at the
    config's ``alpha``) at the config's ``margin``.

    On the sigma > 0 points only (:func:`~mixlinreg.theory.d1.d1_decision`): a comparison's
    outcome is *results differ* if some interval excludes 0, *same results* if its widest bound
    ``max |lo|, |hi|`` is ``<= margin``, *undetermined* otherwise
    (:func:`~mixlinreg.theory.d1.move_outcome`); the note's outcome is the strongest of them
    (differ > undetermined > same), *undetermined* with no sigma > 0 point.
    """
    return d1_decision(moves, params["margins"]["margin"])


def _caveats(parts, per_scale, exp, root):
    """The run's own caveats: panels left out, runs read, the cross-check, the protocol."""
    caveats = [WORDS.text("caveats.missing panel", panel=r.panel, why=r.why)
               for r in parts["missing"].sort_values("panel").itertuples()]
    read = parts["rules"].drop_duplicates("panel").sort_values("panel")["read"]
    if len(read):
        caveats.append(WORDS.text("caveats.runs read", runs="; ".join(read)))
    check = _cross_check_quick(per_scale, exp, root)
    if check:
        caveats.append(check)
    caveats.append(WORDS.text("caveats.protocol", preset=exp.preset,
                              n_init=exp.protocol["n_init"], tol=exp.protocol["tol"],
                              trials=exp.protocol["trials"]))
    return caveats


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    parts = _parts(table)
    exp = _experiments(params, rng("seed"))["code"]
    per_scale = parts["scale"].sort_values(["theta_scale"] + _CELL + ["trial"], kind="stable",
                                           ignore_index=True)
    seps = parts["separation"]
    # the measurements: the paired moves with their simultaneous intervals, as the CSV reads back
    moves = _moves(parts, per_scale, exp, p, mg["alpha"])
    decision = decide(_as_read_back(moves), params)
    _, numbers, summary, caveats = d1_note(_as_read_back(moves), seps, margin=mg["margin"],
                                           run_caveats=_caveats(parts, per_scale, exp,
                                                                p["figure2_store"]))

    def verdict_at(q, key):  # the same runs, the margin or the level moved
        a = q["margins"]["alpha"]
        mv = moves if a == mg["alpha"] else _moves(parts, per_scale, exp, p, a)
        return decide(_as_read_back(mv), q).verdict

    sens = sensitivity_lines(WORDS, params, verdict_at)
    return Verdict(decision.verdict, numbers, summary, caveats=caveats, sensitivity=sens,
                   tables={".csv": moves, "_trials.csv": per_scale, "_separation.csv": seps})


# ------------------------------------------------------------------------------ the figure


def figure(table, verdict, params):
    import seaborn as sns
    from matplotlib.figure import Figure

    per_scale, seps = verdict.tables["_trials.csv"], verdict.tables["_separation.csv"]
    moves, margin = verdict.tables[".csv"], params["margins"]["margin"]
    rules = _parts(table)["rules"]
    rules_a = rules[rules["panel"] == "a"]
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=(16, 4.8), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw=dict(width_ratios=[1, 1, 1.3]))
        # (A) theta_scale: success vs R under both scalings (authors' rule)
        sigmas = sorted(per_scale["sigma"].unique())
        pal = sns.color_palette("viridis", len(sigmas))
        for scale, ls in (("code", "-"), ("norm", "--")):
            for s, col in zip(sigmas, pal):
                g = per_scale[(per_scale["theta_scale"] == scale) & (per_scale["sigma"] == s)]
                agg = g.groupby("R")["authors"].agg(["sum", "count"]).reset_index()
                lo, hi = wilson_interval(agg["sum"], agg["count"])
                ax1.plot(agg["R"], agg["sum"] / agg["count"], "o" + ls, color=col,
                         label=f"{scale}, sigma = {s:g}")
                ax1.fill_between(agg["R"], lo, hi, color=col, alpha=0.1)
        sep = seps.groupby(["theta_scale", "R"])["delta"].mean()
        Rmax = seps["R"].max()
        ax1.set_title(f"theta* scaling, Fig. 2(a) grid (authors' rule)\n"
                      f"mean Delta at R = {Rmax:g}: code {sep.loc[('code', Rmax)]:.3g}, "
                      f"norm {sep.loc[('norm', Rmax)]:.3g}",
                      fontsize=9)
        ax1.set_xlabel("R")
        ax1.set_ylabel("success probability (Wilson 95%)")
        ax1.legend(fontsize=7)
        # (B) rules on the panel-(a) rows read
        if len(rules_a):
            pal2 = sns.color_palette("tab10", 4)
            for i, (combo, col, mk) in enumerate(zip(_RULES, pal2, "osD^")):
                for zero, ls in ((True, ":"), (False, "-")):
                    g = rules_a[(rules_a["sigma"] == 0) == zero]
                    if not len(g):
                        continue
                    agg = g.groupby("R")[combo].agg(["sum", "count"]).reset_index()
                    # small offsets so that coinciding combinations stay visible
                    ax2.plot(agg["R"] + 0.008 * (i - 1.5), agg["sum"] / agg["count"], mk + ls,
                             color=col, ms=5, alpha=0.85,
                             label=f"{combo}, " + ("sigma = 0" if zero else "sigma > 0 pooled"))
            ax2.set_title("distance x threshold on the committed Fig. 2(a) paper rows\n"
                          "(nearest/matched distance, code/text threshold)", fontsize=9)
            ax2.set_ylabel("success probability")
            ax2.set_xlabel("R")
            ax2.legend(fontsize=6.5)
        # (C) paired moves with simultaneous intervals
        fams = list(dict.fromkeys(zip(moves["family"], moves["panel"])))
        for y, (family, panel) in enumerate(fams):
            g = moves[(moves["family"] == family) & (moves["panel"] == panel)]
            jit = np.linspace(-0.3, 0.3, len(g)) if len(g) > 1 else np.zeros(1)
            col = np.where(g["moved"], "tab:red", "tab:gray")
            ax3.errorbar(g["diff"], y + jit, xerr=[g["diff"] - g["lo"], g["hi"] - g["diff"]],
                         fmt="none", ecolor=list(col), alpha=0.5, lw=0.8)
            ax3.scatter(g["diff"], y + jit, c=list(col), s=10, zorder=3)
        ax3.set_yticks(range(len(fams)))
        ax3.set_yticklabels([f"{f} ({p})" for f, p in fams], fontsize=8)
        for xv, ls in ((0, "-"), (-margin, ":"), (margin, ":")):
            ax3.axvline(xv, color="k", ls=ls, lw=0.8)
        ax3.set_xlabel("success(code) - success(text), per grid point (simultaneous interval)")
        ax3.set_title("paired moves (red: interval excludes 0)", fontsize=9)
        fig.suptitle("D1: do the text and the authors' code describe the same experiment?",
                     fontsize=11)
    return fig


STUDY = Study(
    id="D1", order=90, words=WORDS, claim=QUESTION,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, kind=NOTE,
    decide=decide, reads=reads)
