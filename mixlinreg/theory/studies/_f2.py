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

import pandas as pd

from ...config import PRESETS, Spec
from ...harness import load_config, success_table
from ..figure2 import (_PANELS, STUDY_TITLES, _f2_numbers, _f2_tests, _plot_f2, trend_decision,
                       trend_reason)
from ..study import Decision, Study, Verdict, combine, figure2_store, sensitivity_line

SCHEMA = {
    "params": {"panel": Spec("str", choices=("fig2a", "fig2b", "fig2c", "fig2d")),
               "figure2_preset": Spec("str", choices=PRESETS),
               "figure2_store": Spec("str")},
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
    summ = success_table(store.table(), store.exp.protocol["success_plus"])
    tests = _f2_tests(summ, p["panel"][-1])
    # the summary travels with the tests (one row per grid point, marked), for the figure
    summ = summ.assign(role="summary", panel=p["panel"][-1])
    return pd.concat([tests, summ], ignore_index=True)


# ------------------------------------------------------------------------------ the verdict


def _axis_rows(tests, along, rule="authors"):
    """The trend tests of one claimed axis under one success rule (its strata and pooled row)."""
    return tests[(tests["axis"] == along) & (tests["rule"] == rule) & (tests["role"] == "claim")]


def _with_margins(params, **margins):
    """``params`` with some margins moved (for the sensitivity lines)."""
    return {**params, "margins": {**params["margins"], **margins}}


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
    summary = (
        f"Source: the {exp.name} store, {exp.preset} preset (config hash {exp.hash()[:12]}; "
        f"{tr} of {exp.protocol['trials']} trials per grid point, {len(summ)} grid points"
        f"{'' if full else ': the store is not complete yet'}). Exact stratified "
        f"Cochran-Armitage trend test on the authors' rule (the paper's curves), one-sided, "
        f"alpha = {alpha:g}: "
        + "; ".join(f"in {a}: {v} ({trend_reason(_axis_rows(tests, a), alpha, v)})"
                    for a, v in authors)
        + ". Text rule (shown, not deciding): "
        + "; ".join(f"in {a}: {trend_decision(g, alpha).verdict} (pooled p(increase) = "
                    f"{g[g['stratum'] == 'pooled']['p_increase'].iloc[0]:.3g})"
                    for a, g in text) + ".")
    if panel in "ab":
        g = tests[(tests["axis"] == "sigma") & (tests["rule"] == "authors")]
        pooled = g[g["stratum"] == "pooled"].iloc[0]
        summary += (f" In sigma (no claim in the paper; the threshold 0.6 sigma grows with sigma): "
                    f"pooled p(increase) = {pooled['p_increase']:.3g}, p(decrease) = "
                    f"{pooled['p_decrease']:.3g}.")
    return summary, tr


def _caveats(exp, summ, panel, tr):
    caveats = [
        "Trial-level successes are reconstructed from the summary's counts; the exact conditional "
        "test depends on the data only through them, so this loses nothing.",
        "Levels get rank scores 0, 1, ... within each stratum (equally spaced scores), so the test "
        "detects a monotone rise, not a particular shape.",
        "Strata where every trial failed or every trial succeeded are flat: they carry no "
        "information on the trend and appear in the caveat list rather than against the claim.",
    ]
    if exp.preset != "paper":
        caveats.append(f"The {exp.preset}-preset runs are much smaller than the paper's (here {tr} "
                       "trials per grid point and fewer initializations, against 40 trials and 10 "
                       "initializations): per-stratum tests have little power.")
    if panel in "cd":
        Rs = ", ".join(f"{v:g}" for v in sorted(summ["R"].unique()))
        caveats.append(f"This panel has one facet per R ({Rs}, as in the authors' code); the "
                       "strata are (R, n) for the m-trend and (R, m) for the n-trend.")
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
    sens = [sensitivity_line("significance level alpha", alpha,
                             lambda a: decide(tests, _with_margins(params, alpha=a)).verdict,
                             mg["alpha_neighbours"])]
    return Verdict(decision.verdict, _f2_numbers(tests, alpha), summary,
                   caveats=_caveats(exp, summ, panel, tr), sensitivity=sens,
                   tables={"_summary.csv": summ})


def figure(table, verdict, params):
    panel = params["params"]["panel"][-1]
    summ = verdict.tables["_summary.csv"]
    tests = table[table["role"] != "summary"].dropna(axis=1, how="all")
    exp = _experiment(params)
    return _plot_f2(summ, panel, tests, f"{STUDY_TITLES[panel]}: {exp.name} {exp.preset} store")


def make_study(panel):
    """The study record of Figure 2 panel ``panel`` (``"a"`` ... ``"d"``)."""
    k = _PANELS[panel][2]
    if panel in "ab":
        claim = (f"With k = {k}, the success probability of IFCA rises with the separation R "
                 "(at every noise level sigma).")
    else:
        claim = (f"With k = {k}, the success probability of IFCA rises with the number of machines "
                 "m and with the number of points per machine n.")
    return Study(
        id=f"F2{panel}", order=80 + "abcd".index(panel), title=STUDY_TITLES[panel], claim=claim,
        location=(f"Section 6.1, Figure 3({panel}) of the long version (the synthetic figure); "
                  f"Section 6.1, Figure 2({panel}) of the NeurIPS version"),
        schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
        decide=decide, reads=reads)
