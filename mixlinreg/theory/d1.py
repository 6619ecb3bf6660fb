"""D1, a reproducibility note: the conventions of the synthetic experiment, text against code.

D1 is not a claim of the paper. It asks whether the text of Section 6.1 (the synthetic figure:
Figure 3 of the long version, Figure 2 of the NeurIPS version) and the authors' public code describe
the same experiment, and answers with a note's outcome (:data:`~mixlinreg.theory.study.NOTE_OUTCOMES`:
"same results", "results differ", "undetermined"), never with a paper-claim verdict.

Its study record, :mod:`mixlinreg.theory.studies.d1` (config ``mixlinreg/configs/studies/D1.toml``),
makes D1's tables (the runs and the paired moves, from the Figure 2 stores found by their configs
and from new runs of the panel-(a) grid under both scalings); this module reads them:
:func:`d1_note` is the whole analysis, from the moves table (one row per comparison and grid point,
with its simultaneous interval) and the separations table alone (its outcome :func:`d1_decision`'s,
a pure function of the moves table and the margin), so the note can be remade from the
committed tables without rerunning anything (:func:`rebuild_d1`, ``python -m
mixlinreg.theory.d1``). It reports sigma = 0 apart: there the text's success rule is ``dist <= 0.6
sigma = 0``, which a floating-point run never meets, so a move at sigma = 0 measures that rule, not
a difference between the experiments; the outcome is decided on sigma > 0.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
Section 6.1 (both versions); the authors' public code (github jichan3751/ifca, synthetic/), as
summarised in the project's digest, section 4.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

from ..harness.experiment import load_config
from ..stats import Fit
from .study import (DIFFER, NOTE, SAME, UNDETERMINED, Decision, StudyResult, canonical_preset,
                     combine_outcomes)

__all__ = ["QUESTION", "FAMILIES", "move_numbers", "move_outcome", "d1_decision", "sigma_strata",
           "d1_numbers", "d1_note", "rebuild_d1", "expected_sq_separation"]

#: what D1 asks (the record's ``claim`` field; a note answers a question, it claims nothing)
QUESTION = ("Do the text of Section 6.1 and the authors' code describe the same experiment, i.e. do "
            "the scaling of theta*, the distance and the success threshold leave the success "
            "probabilities of the synthetic figure (Figure 3 of the long version, Figure 2 of the "
            "NeurIPS version) unchanged?")

#: the comparisons of the moves table (``family`` column), first (code) minus second (text)
FAMILIES = {
    "distance": "distance: nearest (code) vs matched (text), code threshold",
    "threshold": "threshold: < 0.6 sigma + plus (code) vs <= 0.6 sigma (text), nearest distance",
    "rule": "rule: code (nearest, < 0.6 sigma + plus) vs text (matched, <= 0.6 sigma)",
    "theta_scale": "theta*: R Bernoulli (code) vs norm R (text), authors' rule",
    "theta_scale_text_rule": "theta*: code vs text scaling, text rule",
    "experiment": "whole experiment: code (scale + rule) vs text (scale + rule)",
}

# the analysis's own caveats start so; a rebuild replaces them and keeps the run's (see rebuild_d1)
_ANALYSIS_CAVEATS = ("Comparisons (first minus second)", "The repository's Figure 2 uses",
                     "The Bernoulli initialization", "Moves of the code rule against the text rule",
                     "At sigma = 0 the text's threshold")


def move_numbers(moves) -> dict:
    """What :func:`move_outcome` compares: the grid points, how many intervals (``lo``, ``hi``)
    exclude 0, and the widest bound ``max |lo|, |hi|`` (held to the margin).

    >>> move_numbers(pd.DataFrame({"lo": [-0.1, 0.3], "hi": [0.1, 0.9]}))
    {'grid points': 2, 'intervals excluding 0': 1, 'widest |bound|': 0.9}
    """
    lo, hi = moves["lo"].to_numpy(float), moves["hi"].to_numpy(float)
    widest = float(np.max(np.abs(np.concatenate([lo, hi])))) if len(moves) else float("nan")
    return {"grid points": len(moves), "intervals excluding 0": int(np.sum((lo > 0) | (hi < 0))),
            "widest |bound|": widest}


def move_outcome(moves, margin) -> str:
    """The outcome of one comparison from its paired intervals (columns ``lo``, ``hi``).

    "results differ" if some interval excludes 0; "same results" if every interval lies inside
    ``[-margin, margin]``; "undetermined" otherwise (or with no grid point). The numbers compared
    are :func:`move_numbers`'s.

    >>> move_outcome(pd.DataFrame({"lo": [-0.1, -0.05], "hi": [0.1, 0.12]}), 0.2)
    'same results'
    >>> move_outcome(pd.DataFrame({"lo": [-0.1, 0.3], "hi": [0.1, 0.9]}), 0.2)
    'results differ'
    >>> move_outcome(pd.DataFrame({"lo": [-0.5], "hi": [0.5]}), 0.2)
    'undetermined'
    """
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")
    n = move_numbers(moves)
    if n["grid points"] == 0:
        return UNDETERMINED
    if n["intervals excluding 0"]:
        return DIFFER
    if n["widest |bound|"] <= margin:  # no interval excludes 0: every one inside +-margin
        return SAME
    return UNDETERMINED


def d1_decision(moves, margin, fixed_sigma=None) -> Decision:
    """D1's outcome alone, from the moves table, no prose: decided on the sigma > 0 points.

    Per comparison (``family``, ``panel``), on its sigma > 0 grid points, :func:`move_outcome`
    at ``margin``; the note's outcome is the strongest of them (:func:`combine_outcomes`: differ >
    undetermined > same), *undetermined* with no sigma > 0 point. ``numbers``: the margin and,
    per comparison (``"distance (a): ..."``), :func:`move_numbers` and its outcome. ``fixed_sigma``
    as in :func:`sigma_strata`.
    """
    pos = moves[sigma_strata(moves, fixed_sigma).to_numpy() == "> 0"]
    numbers, outcomes = {"margin": margin}, []
    for (family, panel), g in pos.groupby(["family", "panel"], sort=False):
        outcome = move_outcome(g, margin)
        numbers.update({f"{family} ({panel}): {k}": v for k, v in move_numbers(g).items()})
        numbers[f"{family} ({panel}): outcome"] = outcome
        outcomes.append(outcome)
    return Decision(combine_outcomes(outcomes) if outcomes else UNDETERMINED, numbers)


def sigma_strata(moves, fixed_sigma=None) -> pd.Series:
    """``"0"`` or ``"> 0"`` per row of the moves table, from its ``sigma`` column.

    A panel whose rows carry no sigma (its grid fixes it) takes ``fixed_sigma[panel]``; a row with
    neither is ``"unknown"``.

    >>> sigma_strata(pd.DataFrame({"panel": ["a", "a", "c"], "sigma": [0.0, 0.1, np.nan]}),
    ...              {"c": 0.1}).tolist()
    ['0', '> 0', '> 0']
    """
    sigma = _sigma(moves, fixed_sigma)
    out = np.where(sigma == 0, "0", np.where(sigma > 0, "> 0", "unknown"))
    return pd.Series(out, index=moves.index, name="sigma stratum")


def _sigma(moves, fixed_sigma):
    if "sigma" in moves.columns:
        sigma = moves["sigma"].astype(float).copy()
    else:
        sigma = pd.Series(np.nan, index=moves.index)
    for panel, value in (fixed_sigma or {}).items():
        sigma[(moves["panel"] == panel) & sigma.isna()] = float(value)
    return sigma


def _text_arms(row) -> list:
    """The arms of a comparison scored with the text's threshold (their names say ``text``)."""
    return [arm for arm in ("first", "second") if "text" in str(row[arm])]


def d1_numbers(moves, margin, fixed_sigma=None) -> pd.DataFrame:
    """One row per comparison, panel and sigma stratum: points moved, largest move, outcome.

    The intervals are the table's (simultaneous over the comparison's grid points, so they stay
    valid on any subset of them); nothing is recomputed but the grouping.
    """
    moves = moves.assign(_stratum=sigma_strata(moves, fixed_sigma).to_numpy(),
                         _sigma=_sigma(moves, fixed_sigma).to_numpy())
    rows = []
    order = {"> 0": 0, "0": 1, "unknown": 2}
    groups = sorted(moves.groupby(["family", "panel", "_stratum"], sort=False),
                    key=lambda kv: order[kv[0][2]])
    for (family, panel, stratum), g in groups:
        i = int(np.argmax(np.abs(g["diff"].to_numpy(float))))
        top = g.iloc[i]
        at = ", ".join(f"{c}={top[c]:g}" for c in ("R", "sigma", "m", "n")
                       if c in g.columns and pd.notna(top.get(c)) and g[c].nunique() > 1)
        if top["diff"] == 0:
            at = "(no point moved)"
        levels = ", ".join(f"{s:g}" for s in sorted(g["_sigma"].dropna().unique()))
        rows.append({"comparison": family, "panel": panel,
                     "sigma": stratum + (f" ({levels})" if stratum == "> 0" else ""),
                     "source": top["source"], "trials": int(g["trials"].max()),
                     "grid points": len(g), "moved": int(g["moved"].sum()),
                     "largest move": Fit(float(top["diff"]), float(top["lo"]), float(top["hi"]),
                                         int(top["trials"])).fmt(2),
                     "at": at, "widest |bound|": float(np.max(np.abs(g[["lo", "hi"]].to_numpy()))),
                     "outcome": move_outcome(g, margin)})
    return pd.DataFrame(rows)


def _family_txt(r):
    return (f"{r['comparison']} ({r['panel']}): {r['moved']} of {r['grid points']} grid points "
            f"moved, largest {r['largest move']}"
            + (f" at {r['at']}" if r["at"] and r["at"][0] != "(" else "") + f" ({r['outcome']})")


def d1_note(moves, seps, *, margin, run_caveats=(), fixed_sigma=None):
    """D1's note from its tables: ``(outcome, numbers, summary, caveats)``.

    Parameters
    ----------
    moves : DataFrame
        The moves table (``D1_<preset>.csv``): per comparison (``family``, ``panel``) and grid point
        the paired difference ``diff`` with its simultaneous interval ``lo, hi``, ``trials``,
        ``moved``, ``confidence``, the arms ``first, second`` and ``only_first, only_second``.
    seps : DataFrame
        The separations table (``D1_<preset>_separation.csv``).
    margin : float
        "same results" needs every interval inside ``[-margin, margin]``.
    run_caveats : sequence of str
        Facts of the run that made the tables (protocol, cross-checks), kept as they are.
    fixed_sigma : dict, optional
        ``{panel: sigma}`` for panels whose rows carry no sigma (their grid fixes it).

    The outcome is :func:`d1_decision`'s, decided on the sigma > 0 points; sigma = 0 is reported
    apart (the text's threshold ``dist <= 0`` cannot hold in floating point there).
    """
    numbers = d1_numbers(moves, margin, fixed_sigma)
    outcome = d1_decision(moves, margin, fixed_sigma).verdict
    summary = _note_summary(moves, seps, numbers, outcome, margin, fixed_sigma)
    caveats = _note_caveats(moves)
    assert all(c.startswith(_ANALYSIS_CAVEATS) for c in caveats)
    return outcome, numbers, summary, caveats + list(run_caveats)


def _note_summary(moves, seps, numbers, outcome, margin, fixed_sigma):
    pos = numbers[numbers["sigma"].str.startswith(">")]
    zero = numbers[numbers["sigma"] == "0"]
    unknown = numbers[numbers["sigma"] == "unknown"]
    drivers = [f"{r['comparison']} ({r['panel']})" for r in pos.to_dict("records")
               if r["outcome"] == outcome]
    g0 = moves[sigma_strata(moves, fixed_sigma).to_numpy() == "0"]
    text_succ = text_trials = 0
    for _, row in g0.iterrows():
        for arm in _text_arms(row):
            text_succ += int(round(row[f"p_{arm}"] * row["trials"]))
            text_trials += int(row["trials"])
    fam = moves.groupby(["family", "panel"])
    alpha_fw = float(((1 - fam["confidence"].first()) * fam.size()).max())
    return (
        "A reproducibility note, not a claim of the paper. Each difference between the text's and "
        "the code's conventions is a paired move of the success probability, code convention minus "
        "text convention, per grid point, with Newcombe intervals made simultaneous over the grid "
        f"points of each comparison (Bonferroni, {1 - alpha_fw:.0%} family-wise); a comparison's "
        f"outcome is *{DIFFER}* if some interval excludes 0, *{SAME}* if every interval lies "
        f"within +-{margin:g}, *{UNDETERMINED}* otherwise. Outcome: **{outcome}**, decided on the "
        "sigma > 0 points"
        + (f", by {', '.join(drivers)}" if drivers and outcome != SAME else "") + ".\n\n"
        + "At sigma > 0: " + "; ".join(_family_txt(r) for r in pos.to_dict("records")) + ".\n\n"
        + ("At sigma = 0, reported apart: the text's threshold is dist <= 0.6 sigma = 0, which a "
           "floating-point run never meets (float32 runs end near 1e-6); the arms scored with it "
           f"succeeded in {text_succ} of their {text_trials} trials there (summed over the "
           "comparisons that use it), so a comparison with such an arm measures that rule, not a "
           "difference between the experiments. "
           + "; ".join(_family_txt(r) for r in zero.to_dict("records")) + ".\n\n"
           if len(zero) else "")
        + ("Sigma unknown (not in the table, not given): "
           + "; ".join(_family_txt(r) for r in unknown.to_dict("records")) + ".\n\n"
           if len(unknown) else "")
        + _separation_txt(seps))


def _separation_txt(seps):
    sep = seps.groupby(["theta_scale", "R"]).agg(mean=("delta", "mean"), lo=("delta", "min"),
                                                  hi=("delta", "max"),
                                                  exact=("rms_exact", "first"))
    Rmax = float(seps["R"].max())
    dc, dn = sep.loc[("code", Rmax)], sep.loc[("norm", Rmax)]
    d = int(seps["d"].iloc[0])
    return (f"Separation Delta = ||theta*_1 - theta*_2|| at R = {Rmax:g}, d = {d}: code "
            f"{dc['mean']:.3g} (range {dc['lo']:.3g}-{dc['hi']:.3g} over trials; exact rms "
            f"{dc['exact']:.4g} = R sqrt(d/2) up to 2^-d), text {dn['mean']:.3g} (range "
            f"{dn['lo']:.3g}-{dn['hi']:.3g}; exact rms {dn['exact']:.4g}): a factor "
            f"{dc['mean'] / dn['mean']:.3g} apart at the same R.")


def _note_caveats(moves):
    rule_a = moves[(moves["family"] == "rule") & (moves["panel"] == "a")]
    nesting = ("Moves of the code rule against the text rule are one-sided by construction: "
               "dist_nearest <= dist_matched and the code's threshold is at least the text's, so a "
               "trial that succeeds under the text rule succeeds under the code rule (up to exact "
               "ties)")
    if len(rule_a):
        nesting += (f"; on the {int(rule_a['trials'].sum())} cell-trials of the panel-(a) rows the "
                    f"text rule succeeded without the code rule "
                    f"{int(rule_a['only_second'].sum())} times")
    rule_other = moves[(moves["family"] == "rule") & (moves["panel"] != "a")]
    if len(rule_other):
        nesting += (f"; on the {int(rule_other['trials'].sum())} cell-trials of panels "
                    f"{', '.join(sorted(rule_other['panel'].unique()))} it did so "
                    f"{int(rule_other['only_second'].sum())} times")
    return [
        "Comparisons (first minus second): "
        + "; ".join(f"{k} = {v}" for k, v in FAMILIES.items()) + ".",
        "The repository's Figure 2 uses the code's conventions (theta*_j = R Bernoulli(0.5)^d, "
        "distance to the nearest true parameter, threshold < 0.6 sigma + 0.001 in panels a, b and "
        "< 0.6 sigma in c, d): those are what produced the paper's published curves, so a "
        "reproduction of the figure must follow them; the text's conventions define another "
        "experiment.",
        "The Bernoulli initialization (entries 0 or 1, norm about sqrt(d/2)) is the same in both "
        "conventions, as the text and the code both say; under the text's scaling the true "
        "parameters have norm R <= 1, far below the initialization's scale. A text-scaled "
        "initialization would be a third experiment, not run here.",
        nesting + ".",
    ]


def _read_table(out, name):
    path = Path(out) / name
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    return pd.read_csv(path)


def _fixed_sigma(moves):
    """Sigma of the panels whose rows carry none: the single sigma of their config's grid."""
    sigma = moves["sigma"] if "sigma" in moves.columns else pd.Series(np.nan, index=moves.index)
    fixed = {}
    for panel in sorted(moves.loc[sigma.isna(), "panel"].unique()):
        values = load_config(f"fig2{panel}", "quick").grid["sigma"]
        if len(values) == 1:
            fixed[panel] = float(values[0])
    return fixed


def rebuild_d1(out="figures/checks", preset="paper", *, write=False) -> StudyResult:
    """D1's record remade from its committed tables: only the analysis is recomputed.

    Reads ``<out>/D1_<preset>.json`` and its tables ``D1_<preset>.csv`` (the paired moves) and
    ``D1_<preset>_separation.csv``; returns the record with the note's kind, question, location,
    outcome, numbers, summary and caveats from :func:`d1_note` (the run's own caveats, protocol and
    cross-checks, are kept), everything else (the command, seed, time, table and figure) as it was.
    The margin is the config's at ``preset`` (``mixlinreg/configs/studies/D1.toml``). Panels whose rows
    carry no sigma (c, d: their grid fixes it) take it from their config. With ``write``, the
    record is written back.
    """
    from .._validation import check_bool
    from .._paths import atomic_write
    from .studies import get

    write = check_bool("write", write)
    study = get("D1")
    margin = study.config(canonical_preset(preset)).values["margins"]["margin"]
    path = Path(out) / f"D1_{preset}.json"
    old = StudyResult.from_json(path.read_text())
    moves = _read_table(out, f"D1_{preset}.csv")
    seps = _read_table(out, f"D1_{preset}_separation.csv")
    run_caveats = [c for c in old.caveats if not c.startswith(_ANALYSIS_CAVEATS)]
    outcome, numbers, summary, caveats = d1_note(moves, seps, margin=margin,
                                                 run_caveats=run_caveats,
                                                 fixed_sigma=_fixed_sigma(moves))
    new = dataclasses.replace(old, kind=NOTE, claim=QUESTION, location=study.location,
                              verdict=outcome, numbers=numbers, summary=summary, caveats=caveats)
    if write:
        atomic_write(path, new.to_json())
    return new


# ------------------------------------------------------------------------------ the separations


def expected_sq_separation(R, d, theta_scale):
    """Exact ``E ||theta*_1 - theta*_2||^2`` of the Section 6.1 draw, under either convention.

    The patterns ``b_j`` are independent uniform on ``{0, 1}^d`` conditioned on ``b_j != 0`` (as
    :func:`mixlinreg.data.draw_trial` draws them). With ``q = (1/2) / (1 - 2^-d)`` the probability
    that a coordinate is 1:

    * ``"code"`` (``theta*_j = R b_j``): ``R^2 (2 d q - 2 d q^2)``, about ``R^2 d / 2``;
    * ``"norm"`` (``theta*_j = R b_j / ||b_j||``): ``R^2 (2 - 2 (E sqrt(s))^2 / d)`` with ``s =
      |b_j|`` binomial(d, 1/2) conditioned on ``s >= 1`` (``E[b_j / ||b_j||]`` has equal
      coordinates ``E sqrt(s) / d``), about ``R^2``.

    Parameters
    ----------
    R : float >= 0
    d : int >= 1
    theta_scale : {"code", "norm"}

    Examples
    --------
    >>> round(float(np.sqrt(expected_sq_separation(1.0, 1000, "code"))), 2)
    22.36
    >>> round(float(np.sqrt(expected_sq_separation(1.0, 1000, "norm"))), 3)
    1.0

    References
    ----------
    Section 6.1 of the paper ("rescale their l2 norm to R ... the separation ... is proportional to
    R"); digest section 4 (the authors' code does not rescale).
    """
    if not np.isfinite(R) or R < 0:
        raise ValueError(f"R must be finite and >= 0, got {R!r}")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if theta_scale == "code":
        q = 0.5 / (1.0 - 0.5 ** d)
        return float(R ** 2 * (2 * d * q - 2 * d * q * q))
    if theta_scale == "norm":
        s = np.arange(1, d + 1)
        pmf = binom.pmf(s, d, 0.5)
        e_sqrt = float(pmf @ np.sqrt(s) / pmf.sum())
        return float(R ** 2 * (2.0 - 2.0 * e_sqrt ** 2 / d))
    raise ValueError(f"theta_scale must be 'code' or 'norm', got {theta_scale!r}")




def main(argv=None) -> int:
    """``python -m mixlinreg.theory.d1 [--out DIR] [--preset P] [--write]``: print D1's numbers."""
    from .report import markdown_table

    ap = argparse.ArgumentParser(prog="python -m mixlinreg.theory.d1",
                                 description="Remake D1's note from its committed tables (no run): "
                                             "print its numbers by sigma stratum and its outcome.")
    ap.add_argument("--out", default="figures/checks", help="folder of the D1 record and tables")
    ap.add_argument("--preset", default="paper", help="the record's preset [paper]")
    ap.add_argument("--write", action="store_true", help="write the remade record back")
    args = ap.parse_args(argv)
    r = rebuild_d1(args.out, args.preset, write=args.write)
    cols = ["comparison", "panel", "sigma", "trials", "grid points", "moved", "largest move", "at",
            "outcome"]
    print(markdown_table(r.numbers[cols]))
    print(f"\noutcome: {r.verdict}" + (f"; wrote {Path(args.out) / f'D1_{args.preset}.json'}"
                                       if args.write else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
