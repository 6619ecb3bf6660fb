"""D1, a reproducibility note: the conventions of the synthetic experiment, text against code.

D1 is not a claim of the paper. It asks whether the text of Section 6.1 (the synthetic figure:
Figure 3 of the long version, Figure 2 of the NeurIPS version) and the authors' public code describe
the same experiment, and answers with a note's outcome (:data:`~mixlinreg.theory._study.NOTE_OUTCOMES`:
"same results", "results differ", "undetermined"), never with a paper-claim verdict.

:func:`run_d1` makes D1's tables (the runs and the paired moves, from the Figure 2 stores found by
their configs and from new runs of the panel-(a) grid under both scalings); the rest of this module
reads them: :func:`d1_note` is the whole analysis, from the moves table (one row per
comparison and grid point, with its simultaneous interval) and the separations table alone, so the
note can be remade from the committed tables without rerunning anything (:func:`rebuild_d1`,
``python -m mixlinreg.theory.d1``). It reports sigma = 0 apart: there the text's success rule is
``dist <= 0.6 sigma = 0``, which a floating-point run never meets, so a move at sigma = 0 measures
that rule, not a difference between the experiments; the outcome is decided on sigma > 0.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
Section 6.1 (both versions); the authors' public code (github jichan3751/ifca, synthetic/), as
summarised in the project's digest, section 4.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

from ..geometry import min_separation
from ..harness.config import load_config
from ..harness.store import ResultStore
from ..harness.success import success_table, trial_success
from ..metrics import success_authors, success_text
from ..stats import Fit, paired_difference, wilson_interval
from ._study import DIFFER, NOTE, SAME, UNDETERMINED, StudyResult, combine_outcomes, pick

__all__ = ["QUESTION", "FAMILIES", "ALPHA", "MOVE_MARGIN", "move_outcome", "sigma_strata",
           "d1_numbers", "d1_note", "rebuild_d1", "run_d1", "expected_sq_separation"]

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


def move_outcome(moves, margin) -> str:
    """The outcome of one comparison from its paired intervals (columns ``lo``, ``hi``).

    "results differ" if some interval excludes 0; "same results" if every interval lies inside
    ``[-margin, margin]``; "undetermined" otherwise (or with no grid point).

    >>> move_outcome(pd.DataFrame({"lo": [-0.1, -0.05], "hi": [0.1, 0.12]}), 0.2)
    'same results'
    >>> move_outcome(pd.DataFrame({"lo": [-0.1, 0.3], "hi": [0.1, 0.9]}), 0.2)
    'results differ'
    >>> move_outcome(pd.DataFrame({"lo": [-0.5], "hi": [0.5]}), 0.2)
    'undetermined'
    """
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")
    if len(moves) == 0:
        return UNDETERMINED
    lo, hi = moves["lo"].to_numpy(float), moves["hi"].to_numpy(float)
    if np.any((lo > 0) | (hi < 0)):
        return DIFFER
    if np.all((lo >= -margin) & (hi <= margin)):
        return SAME
    return UNDETERMINED


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

    The outcome is decided on the sigma > 0 points; sigma = 0 is reported apart (the text's
    threshold ``dist <= 0`` cannot hold in floating point there).
    """
    numbers = d1_numbers(moves, margin, fixed_sigma)
    pos = numbers[numbers["sigma"].str.startswith(">")]
    zero = numbers[numbers["sigma"] == "0"]
    unknown = numbers[numbers["sigma"] == "unknown"]
    outcome = combine_outcomes(pos["outcome"]) if len(pos) else UNDETERMINED
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
    sep = seps.groupby(["theta_scale", "R"]).agg(mean=("delta", "mean"), lo=("delta", "min"),
                                                  hi=("delta", "max"),
                                                  exact=("rms_exact", "first"))
    Rmax = float(seps["R"].max())
    dc, dn = sep.loc[("code", Rmax)], sep.loc[("norm", Rmax)]
    d = int(seps["d"].iloc[0])
    summary = (
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
        + f"Separation Delta = ||theta*_1 - theta*_2|| at R = {Rmax:g}, d = {d}: code "
        f"{dc['mean']:.3g} (range {dc['lo']:.3g}-{dc['hi']:.3g} over trials; exact rms "
        f"{dc['exact']:.4g} = R sqrt(d/2) up to 2^-d), text {dn['mean']:.3g} (range "
        f"{dn['lo']:.3g}-{dn['hi']:.3g}; exact rms {dn['exact']:.4g}): a factor "
        f"{dc['mean'] / dn['mean']:.3g} apart at the same R.")
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
    caveats = [
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
    assert all(c.startswith(_ANALYSIS_CAVEATS) for c in caveats)
    return outcome, numbers, summary, caveats + list(run_caveats)


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
    Panels whose rows carry no sigma (c, d: their grid fixes it) take it from their config. With
    ``write``, the record is written back.
    """
    from . import location
    from .._validation import check_bool
    from ..harness.store import _atomic_write_text

    write = check_bool("write", write)
    path = Path(out) / f"D1_{preset}.json"
    old = StudyResult.from_json(path.read_text())
    moves = _read_table(out, f"D1_{preset}.csv")
    seps = _read_table(out, f"D1_{preset}_separation.csv")
    run_caveats = [c for c in old.caveats if not c.startswith(_ANALYSIS_CAVEATS)]
    outcome, numbers, summary, caveats = d1_note(moves, seps, margin=MOVE_MARGIN,
                                                 run_caveats=run_caveats,
                                                 fixed_sigma=_fixed_sigma(moves))
    new = dataclasses.replace(old, kind=NOTE, claim=QUESTION, location=location("D1"),
                              verdict=outcome, numbers=numbers, summary=summary, caveats=caveats)
    if write:
        _atomic_write_text(path, new.to_json())
    return new


# ------------------------------------------------------------------------------ the runs

_CELL = ["m", "n", "d", "k", "R", "sigma"]
#: every comparison's significance level (pointwise; simultaneous over a comparison's grid points)
ALPHA = 0.05
#: "same results" only if every paired interval excludes moves larger than this
MOVE_MARGIN = 0.2
#: grid keys of the Figure 2 panels: R-sigma panels (a, b) and m-n panels (c, d)
_KEYS = {"a": ["R", "sigma"], "b": ["R", "sigma"], "c": ["R", "sigma", "m", "n"],
         "d": ["R", "sigma", "m", "n"]}


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


def _panel_store(root, panel, preset):
    """``(store, None)`` for Figure 2 panel ``panel``'s store (:func:`~mixlinreg.theory.study.
    figure2_store`), or ``(None, why)`` naming the command that makes it."""
    from .study import MissingInput, figure2_store

    try:
        return figure2_store(f"fig2{panel}", preset, root), None
    except MissingInput as exc:
        return None, str(exc)


def _store_digest(store, done):
    h = hashlib.sha256()
    for u in sorted(done):
        h.update(u.encode())
        h.update(store.unit_path(u).read_bytes())
    return h.hexdigest()[:12]


def _d1_experiments(ctx, spec):
    base = load_config("fig2a", spec["config_preset"])
    grid = dict(base.grid)
    for key in ("R", "sigma"):
        if spec.get(key) is not None:
            grid[key] = [float(v) for v in spec[key]]
    proto = dict(base.protocol)
    proto["trials"] = int(spec["trials"])
    if ctx.seed:
        proto["seed"] = int(ctx.seed_sequence(1).generate_state(1)[0])
    exps = {}
    for scale in ("code", "norm"):
        p = dict(proto, theta_scale=scale)
        exps[scale] = dataclasses.replace(base, name=f"D1-fig2a-{scale}", grid=grid, protocol=p)
    return exps


def _run_scale(exp, out_dir, n_jobs, ctx=None):
    from ..harness.sweep import run_experiment

    if ctx is not None:  # harness units finished by an earlier run count as resumed
        before = len(ResultStore(out_dir, exp).done())
        ctx.units_resumed += before
        ctx.units_computed += len(exp.units()) - before
    store, _ = run_experiment(exp, out_dir, n_jobs=n_jobs, progress=False)
    per = trial_success(store.table(), exp.protocol["success_plus"])
    per["theta_scale"] = exp.protocol["theta_scale"]
    return per[_CELL + ["trial", "theta_scale", "authors", "text"]]


def _separations(exp):
    from ..data import draw_trial
    from ..harness.run import unit_seeds

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


def _compare(per, first, second, family, panel, source, keys):
    """Paired moves per grid point, with pointwise 95% and simultaneous (Bonferroni) intervals."""
    groups = list(per.groupby(keys, sort=True))
    G = len(groups)
    conf_sim = 1 - ALPHA / max(G, 1)
    rows = []
    for key, g in groups:
        g = g.sort_values("trial")
        r = paired_difference(g[first].to_numpy(), g[second].to_numpy(), 1 - ALPHA)
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
    store, _ = _panel_store(root, "a", "quick")
    if store is None:
        return ""
    summ = success_table(store.table(), quick.protocol["success_plus"])
    code = per_scale[(per_scale["theta_scale"] == "code") & (per_scale["trial"] < T)]
    got = code.groupby(["R", "sigma"]).agg(authors=("authors", "sum"), text=("text", "sum"))
    want = summ.set_index(["R", "sigma"])[["succ_authors", "succ_text"]]
    joined = got.join(want, how="inner")
    ok = int(((joined["authors"] == joined["succ_authors"])
              & (joined["text"] == joined["succ_text"])).sum())
    return (f"Cross-check: the code-scaling runs (first {T} trials) reproduce the success counts "
            f"of the fig2a quick store ({store.path.name}) in {ok} of {len(joined)} grid points "
            f"(both rules).")


def _plot_d1(per_scale, rules_a, moves, seps):
    import seaborn as sns
    from matplotlib.figure import Figure

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
        # (B) rules on the committed panel-(a) rows
        if rules_a is not None and len(rules_a):
            combos = ["nearest_code", "nearest_text", "matched_code", "matched_text"]
            pal2 = sns.color_palette("tab10", 4)
            for i, (combo, col, mk) in enumerate(zip(combos, pal2, "osD^")):
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
        for xv, ls in ((0, "-"), (-MOVE_MARGIN, ":"), (MOVE_MARGIN, ":")):
            ax3.axvline(xv, color="k", ls=ls, lw=0.8)
        ax3.set_xlabel("success(code) - success(text), per grid point (simultaneous interval)")
        ax3.set_title("paired moves (red: interval excludes 0)", fontsize=9)
        fig.suptitle("D1: do the text and the authors' code describe the same experiment?",
                      fontsize=11)
    return fig



def run_d1(ctx):
    """D1: do the paper's text and the authors' code describe the same Figure 2 experiment?

    Three differences are measured as paired moves of the success probability per grid point:

    * (2) distance and (3) threshold: re-scored on the raw rows of the Figure 2 paper-preset
      stores of panels a, b, c and d (found by their configs under ``figures/stores``, as
      ``mixlinreg reproduce ... --out figures/stores`` makes them; a missing panel is left out and
      the caveats name the command): the four combinations of {nearest, matched} x {code
      threshold, text threshold}, paired by trial;
    * (1) the scaling of the true parameters: the Figure 2(a) grid (``quick``: a subset) run under
      ``theta_scale="code"`` and ``"norm"`` with the same seeds (same X, patterns, noise and
      initializations), through the harness; also the whole text experiment (norm scaling, text
      rule) against the whole code experiment.

    The separations ``Delta`` of both scalings are computed from the trials' true parameters and
    from the exact expectation (:func:`expected_sq_separation`).

    D1 is a reproducibility note, not a claim of the paper: its outcome ("same results", "results
    differ", "undetermined") comes from :func:`d1_note`, which reads only the tables written here
    (so ``python -m mixlinreg.theory.d1`` remakes it from the committed ones): per comparison
    :func:`move_outcome` on simultaneous (Bonferroni over the grid points of the comparison)
    Newcombe intervals, sigma = 0 reported apart, the outcome decided on sigma > 0.

    References
    ----------
    Section 6.1 of the paper; the authors' public code (github jichan3751/ifca, synthetic/), as
    summarised in the project's digest, section 4.
    """
    spec = pick(ctx.preset,
                smoke=dict(config_preset="smoke", R=None, sigma=None, trials=2,
                           figure2_preset="smoke", figure2_store="figures/stores"),
                quick=dict(config_preset="quick", R=[0.25, 0.5, 1.0], sigma=[0.1], trials=4,
                           figure2_preset="paper", figure2_store="figures/stores"),
                paper=dict(config_preset="quick", R=None, sigma=None, trials=10,
                           figure2_preset="paper", figure2_store="figures/stores"))
    exps = _d1_experiments(ctx, spec)
    root, fpreset = spec["figure2_store"], spec["figure2_preset"]
    sources, stores, caveats = {}, {}, []
    for p in "abcd":
        store, why = _panel_store(root, p, fpreset)
        if store is None:
            caveats.append(f"Panel {p} is left out of the distance and threshold comparisons: "
                           f"{why}.")
            continue
        done = store.done(warn=False)
        stores[p] = store
        sources[p] = {"store": store.path.name, "units": len(done),
                      "of": len(store.exp.units()), "sha256": _store_digest(store, done)}
    # the store key: what the note asks of its inputs, not their current contents (a store that
    # grew is re-read through the rules units, named by the store's digest, below)
    ctx.params = {"figure2_store": root, "figure2_preset": fpreset, "alpha": ALPHA,
                  "margin": MOVE_MARGIN, "experiments": {s: e.canonical() for s, e in exps.items()}}
    if sources:
        caveats.append("Runs read: " + "; ".join(
            f"panel {p}: {src['store']} under {root}, {src['units']} of {src['of']} units "
            f"(sha256 of the units {src['sha256']})" for p, src in sources.items()) + ".")

    # (2) + (3): re-scoring the existing runs of each panel, trial by trial
    moves, rules = [], {}
    for p, store in stores.items():
        plus = float(store.exp.protocol["success_plus"])
        src = sources[p]
        tag = f"{src['store']}_{src['units']}units_{src['sha256']}"  # a grown store is re-read
        rules[p] = ctx.unit(f"rules_{tag}", lambda store=store, plus=plus: _rules_from_rows(
            store.table(), plus))
        label = (f"{src['store']} ({fpreset} preset, {src['units']} of {src['of']} units"
                 f"{'' if src['units'] == src['of'] else ', not complete yet'})")
        keys = _KEYS[p]
        moves.append(_compare(rules[p], "nearest_code", "matched_code", "distance", p, label, keys))
        moves.append(_compare(rules[p], "nearest_code", "nearest_text", "threshold", p, label,
                              keys))
        moves.append(_compare(rules[p], "nearest_code", "matched_text", "rule", p, label, keys))

    # (1): the scaling of theta*, new runs through the harness
    tmp = None
    if ctx.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="mixlinreg-D1-")
        harness_dir = Path(tmp.name)
    else:
        harness_dir = Path(ctx.store) / f"{ctx.study_id}-harness"
    try:
        per_scale = pd.concat([ctx.unit(f"scale={s}", lambda e=e: _run_scale(e, harness_dir,
                                                                            ctx.n_jobs, ctx))
                               for s, e in exps.items()], ignore_index=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    seps = ctx.unit("separation", lambda: _separations(exps["code"]))
    wide = per_scale.pivot_table(index=_CELL + ["trial"], columns="theta_scale",
                                 values=["authors", "text"], aggfunc="first")
    wide.columns = [f"{rule}_{scale}" for rule, scale in wide.columns]
    wide = wide.reset_index()
    e = exps["code"]
    src = (f"new runs, Fig. 2(a) grid {'subset ' if spec['R'] else ''}({e.preset} protocol: "
           f"{e.protocol['n_init']} inits, early stop {e.protocol['early_stop']})")
    keys = ["R", "sigma"]
    moves.append(_compare(wide, "authors_code", "authors_norm", "theta_scale", "a", src, keys))
    moves.append(_compare(wide, "text_code", "text_norm", "theta_scale_text_rule", "a", src, keys))
    moves.append(_compare(wide, "authors_code", "text_norm", "experiment", "a", src, keys))
    moves = pd.concat(moves, ignore_index=True)
    check = _cross_check_quick(per_scale, exps["code"], root)
    if check:
        caveats.append(check)
    caveats.append(
        f"The theta* comparison uses the {e.preset} protocol of fig2a ({e.protocol['n_init']} "
        f"initializations instead of 10, early stop tol {e.protocol['tol']:g}, validated for the "
        f"code scaling only) and {e.protocol['trials']} trials: absolute success probabilities "
        "are lower than the paper preset's, the comparison is paired and fair.")
    table = ctx.write_table(moves)
    ctx.write_table(per_scale, "_trials.csv")
    sep_path = ctx.write_table(seps, "_separation.csv")
    # the note is read back from the tables written, as python -m mixlinreg.theory.d1 reads them
    outcome, numbers, summary, caveats = d1_note(pd.read_csv(table), pd.read_csv(sep_path),
                                                 margin=MOVE_MARGIN, run_caveats=caveats)
    figure = ctx.save_figure(_plot_d1(per_scale, rules.get("a"), moves, seps))
    return ctx.result(
        title="Text vs code: conventions of the Figure 2 experiment", claim=QUESTION, kind=NOTE,
        verdict=outcome, summary=summary, numbers=numbers, caveats=caveats, table=table,
        figure=figure)


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
