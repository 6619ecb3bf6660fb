"""Studies F2a-F2d: success rises with R (panels a, b) and with m and n (panels c, d).

Each reads the Figure 2 panel's runs from its store, found by config (the panel's TOML and the
study's ``[params] figure2_store`` root; never a path with a hash in it), summarizes them per grid
point with the harness's success rules, runs the exact stratified Cochran-Armitage trend test
(:func:`mixlinreg.theory.figure2.trend_test`) on the authors' rule (the rule behind the paper's
curves: the verdict) and the text rule (shown). :func:`decide` is the decision alone, a pure
function of the trend tests and the config's ``alpha``: the rule of
:func:`~mixlinreg.theory.figure2.trend_decision` per claimed axis; for panels c and d the
verdicts on m and on n are combined (the weakest wins). ``analyze`` measures, calls it, and
describes it (at the neighbouring ``alpha`` too, through it again). The direction in sigma
(panels a, b) is reported for information only: the paper claims nothing about it. Configs:
``mixlinreg/configs/studies/F2a.toml`` ... ``F2d.toml``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ...config import PRESETS, Spec
from ...harness import load_config, success_table
from ...harness.success import CELL_KEYS
from ..figure2 import (_PANELS, STUDY_TITLES, _f2_numbers, _f2_tests, _plot_f2, trend_decision,
                       trend_reason)
from ..study import Decision, Study, Verdict, combine, figure2_store
from ..words import sensitivity_lines, words

#: the words of the four studies: _f2.md beside this module (templates with the panel's values)
WORDS = words(__file__)

SCHEMA = {
    "params": {"panel": Spec("str", choices=("fig2a", "fig2b", "fig2c", "fig2d")),
               "figure2_preset": Spec("str", choices=PRESETS),
               "figure2_store": Spec("str"),
               # the control's data without the structure: each trial's outcome moved to a random
               # grid point of its stratum (False: the store's rows as they are)
               "shuffle": Spec("bool", required=False, default=False)},
    "margins": {"alpha": Spec("float", low=0, high=0.5, open="both"),
                "alpha_neighbours": Spec("list[float]", low=0, high=0.5, open="both")},
}


def reads(params):
    """The one store this study reads: its panel's, at ``figure2_preset`` under ``figure2_store``."""
    p = params["params"]
    return ((p["panel"], p["figure2_preset"], p["figure2_store"], True),)


def _experiment(params):
    p = params["params"]
    return load_config(p["panel"], p["figure2_preset"])


def units(params):
    """One unit: the trend tests of the rows the panel's store holds now (named by their digest,
    so a store that grew is read again, never a stale cached table)."""
    p = params["params"]
    store = figure2_store(p["panel"], p["figure2_preset"], p["figure2_store"])
    done = sorted(store.done(warn=False))
    digest = hashlib.sha256("\n".join(done).encode()).hexdigest()[:12]
    return [(f"trend_tests_{len(done)}units_{digest}", {"units": len(done)})]


def compute(spec, params, rng, shared):
    p = params["params"]
    store = figure2_store(p["panel"], p["figure2_preset"], p["figure2_store"])
    rows = store.table()
    if p["shuffle"]:
        rows = shuffled(rows, p["panel"][-1], rng)
    summ = success_table(rows, store.exp.protocol["success_plus"])
    tests = _f2_tests(summ, p["panel"][-1])
    # the summary travels with the tests (one row per grid point, marked), for the figure
    summ = summ.assign(role="summary", panel=p["panel"][-1])
    return pd.concat([tests, summ], ignore_index=True)


def shuffled(rows, panel, rng):
    """``rows`` with every trial's claimed-axis coordinates (R for panels a, b; m and n for c, d)
    permuted at random among the trials of its stratum (the same values of the other grid keys):
    the same trials, the same number per grid point, but success no longer depends on the claimed
    axes. Each trial keeps its rows together (its runs, step sizes); trials get new numbers, unique
    in their new grid point. ``rng``: the unit's generator."""
    claimed = [a for a, _ in _PANELS[panel][0]]
    others = [k for k in CELL_KEYS if k not in claimed]
    keys = CELL_KEYS + ["trial"]
    df = rows.copy()
    df["alpha0"] = df["alpha0"].fillna(-1.0)
    trials = df[keys].drop_duplicates().sort_values(keys).reset_index(drop=True)
    new = trials.copy()
    for _, idx in trials.groupby(others, sort=True).groups.items():
        idx = np.asarray(idx)
        perm = rng.permutation(len(idx))
        new.loc[idx, claimed] = trials.loc[idx[perm], claimed].to_numpy()
        new.loc[idx, "trial"] = np.arange(len(idx))
    mapping = trials.join(new[claimed + ["trial"]].add_suffix("_new"))
    df = df.merge(mapping, on=keys, how="left", validate="many_to_one")
    for c in claimed + ["trial"]:
        df[c] = df.pop(f"{c}_new").astype(rows[c].dtype)
    df["alpha0"] = df["alpha0"].replace(-1.0, np.nan)
    return df[rows.columns]


# ------------------------------------------------------------------------------ the verdict


def _axis_rows(tests, along, rule="authors"):
    """The trend tests of one claimed axis under one success rule (its strata and pooled row)."""
    return tests[(tests["axis"] == along) & (tests["rule"] == rule) & (tests["role"] == "claim")]


def decide(tests, params) -> Decision:
    """F2's verdict from the panel's trend tests (``tests``: the :func:`_f2_tests` rows, columns
    ``axis, rule, role, stratum, p_increase, p_decrease, flat``) at the config's ``alpha``.

    Per claimed axis of the panel (R for a, b; m and n for c, d), on the authors' rule (the
    paper's curves), :func:`~mixlinreg.theory.figure2.trend_decision`: *not supported* if the
    pooled ``p_decrease < alpha`` or some informative stratum's ``p_decrease < alpha / H``
    (Bonferroni over the ``H`` informative strata); *holds* if the pooled ``p_increase < alpha``
    and every stratum's too, none flat; *holds with a caveat* if only the pooled one is; else
    *inconclusive*. The weakest axis decides (:func:`~mixlinreg.theory.study.combine`).

    ``numbers``: ``alpha`` and, per axis (``"R: pooled p_increase"``, ...), the compared values,
    the Bonferroni level, the counts of strata and the axis's verdict.
    """
    alpha = params["margins"]["alpha"]
    numbers, verdicts = {"alpha": alpha}, []
    for along, _ in _PANELS[params["params"]["panel"][-1]][0]:
        d = trend_decision(_axis_rows(tests, along), alpha)
        verdicts.append(d.verdict)
        numbers.update({f"{along}: {k}": v for k, v in d.numbers.items() if k != "alpha"})
        numbers[f"{along}: verdict"] = d.verdict
    return Decision(combine(verdicts), numbers)


# ------------------------------------------------------------------------------ the description


def _summary(exp, summ, tests, decision, panel, alpha):
    claimed = _PANELS[panel][0]
    trials = summ["trials"]
    tr = f"{trials.min()}" if trials.min() == trials.max() else f"{trials.min()}-{trials.max()}"
    full = int(trials.min()) == exp.protocol["trials"] and int(trials.max()) == exp.protocol["trials"]
    authors = [(a, decision.numbers[f"{a}: verdict"]) for a, _ in claimed]
    text = [(a, _axis_rows(tests, a, "text")) for a, _ in claimed]
    summary = WORDS.text(
        "summary", store=exp.name, preset=exp.preset, config_hash=exp.hash()[:12], trials=tr,
        protocol_trials=exp.protocol["trials"], grid_points=len(summ),
        incomplete="" if full else WORDS.text("incomplete"), alpha=alpha,
        authors="; ".join(WORDS.text("authors axis", axis=a, verdict=v,
                                     reason=trend_reason(_axis_rows(tests, a), alpha, v))
                          for a, v in authors),
        text="; ".join(WORDS.text("text axis", axis=a, verdict=trend_decision(g, alpha).verdict,
                                  p_increase=g[g["stratum"] == "pooled"]["p_increase"].iloc[0])
                       for a, g in text))
    if panel in "ab":
        g = tests[(tests["axis"] == "sigma") & (tests["rule"] == "authors")]
        pooled = g[g["stratum"] == "pooled"].iloc[0]
        summary += " " + WORDS.text("summary.sigma", p_increase=pooled["p_increase"],
                                    p_decrease=pooled["p_decrease"])
    return summary, tr


def _caveats(exp, summ, panel, tr):
    caveats = WORDS.items("caveats")
    if exp.preset != "paper":
        caveats.append(WORDS.text("caveat.small preset", preset=exp.preset, trials=tr))
    if panel in "cd":
        caveats.append(WORDS.text("caveat.cd", Rs=", ".join(f"{v:g}"
                                                            for v in sorted(summ["R"].unique()))))
    return caveats


def analyze(table, params, rng):
    mg = params["margins"]
    panel = params["params"]["panel"][-1]
    exp = _experiment(params)
    # the measurements: the trend tests (computed with the unit) and the per-grid-point summary
    tests = table[table["role"] != "summary"].dropna(axis=1, how="all")
    summ = table[table["role"] == "summary"].dropna(axis=1, how="all").drop(columns=["role", "panel"])
    alpha = mg["alpha"]
    decision = decide(tests, params)
    summary, tr = _summary(exp, summ, tests, decision, panel, alpha)
    sens = sensitivity_lines(WORDS, params, lambda q, key: decide(tests, q).verdict)
    return Verdict(decision.verdict, _f2_numbers(tests, alpha), summary,
                   caveats=_caveats(exp, summ, panel, tr), sensitivity=sens,
                   tables={"_summary.csv": summ}, cells=_hard_cells(tests, panel))


def _hard_cells(tests, panel):
    """The judged strata (the claimed axes' strata on the authors' rule, the pooled test aside)
    and those not flat: a flat stratum (the same success at every level) cannot show a trend."""
    rows = pd.concat([_axis_rows(tests, along) for along, _ in _PANELS[panel][0]])
    rows = rows[rows["stratum"] != "pooled"]
    flat = rows["flat"].astype(str).str.lower().isin(["true", "1", "1.0"])
    return {"hard": int((~flat).sum()), "total": int(len(rows)), "rule": WORDS.text("cells rule")}


def figure(table, verdict, params):
    panel = params["params"]["panel"][-1]
    summ = verdict.tables["_summary.csv"]
    tests = table[table["role"] != "summary"].dropna(axis=1, how="all")
    exp = _experiment(params)
    return _plot_f2(summ, panel, tests, f"{STUDY_TITLES[panel]}: {exp.name} {exp.preset} store")


def make_study(panel):
    """The study record of Figure 2 panel ``panel`` (``"a"`` ... ``"d"``)."""
    k = _PANELS[panel][2]
    claim = WORDS.text("claim.ab" if panel in "ab" else "claim.cd", k=k)
    return Study(
        id=f"F2{panel}", order=80 + "abcd".index(panel), title=STUDY_TITLES[panel], claim=claim,
        location=WORDS.text("location", panel=panel),
        schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
        decide=decide, reads=reads)
