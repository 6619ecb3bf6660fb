"""A study's committed record, read back and analysed again without recomputing anything.

:func:`committed_units` puts a record's units' rows back together from the tables its run wrote
(most studies write them as they are; four replace them by a table of their own, from which the
rows are remade). :func:`reanalyse` runs the study's current ``analyze`` on them, and on its
control's table, and rewrites the record's words (title, claim, location, summary, caveats,
scope, the count of hard cells, the control's summary) where the current code words them otherwise. It refuses when the
outcome would change: a different verdict or a different number means the rule changed, and a
rule changed after data is a new ``version`` of the study, to be run again
(:mod:`mixlinreg.theory.controls`). So a reworded sentence or a newly counted statistic reaches
the committed records without a recomputation, and a changed rule cannot.

``tests/test_committed_records.py`` uses the same functions to check that every committed
record is what its analysis makes of its tables.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["read_table", "committed_units", "reanalyse", "RuleChanged"]


class RuleChanged(ValueError):
    """Analysing a record's tables again gives another verdict or other numbers: the rule (or
    its config) changed since the record was made, which needs a new version of the study."""


def read_table(out, name) -> pd.DataFrame:
    """The table ``name`` in folder ``out``, plain or gzipped (as the study's run wrote it)."""
    path = Path(out) / name
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    if not path.exists():
        raise FileNotFoundError(f"{Path(out) / name}(.gz) does not exist: the record's table "
                                f"is needed to analyse it again")
    return pd.read_csv(path, low_memory=False)


def _units_cflc5(out, rec, params):
    return pd.concat([read_table(out, f"CFLC5_{rec.preset}.csv"),
                      read_table(out, f"CFLC5_{rec.preset}_cfl.csv")], ignore_index=True)


def _units_c2t(out, rec, params):
    return pd.concat([read_table(out, f"C2T_{rec.preset}{s}.csv") for s in ("", "_runs", "_traces")],
                     ignore_index=True)


def _units_cflr6(out, rec, params):
    """One row per trial and measure, ``ok_<measure>`` 1 for ``successes`` of ``trials`` (what
    ``cflr6.cell_counts`` counts back), and the population rows."""
    counts = read_table(out, f"CFLR6_{rec.preset}.csv")
    keys = ["geometry", "k", "sigma", "nd", "n", "rho"]
    reps = counts["trials"].to_numpy()
    rows = counts.loc[counts.index.repeat(reps), keys + ["measure"]].reset_index(drop=True)
    first = np.repeat(np.cumsum(reps) - reps, reps)
    ok = (np.arange(len(rows)) - first < np.repeat(counts["successes"].to_numpy(), reps))
    for measure in counts["measure"].unique():
        rows[f"ok_{measure}"] = np.where(rows["measure"] == measure, ok.astype(float), np.nan)
    trials = rows.drop(columns="measure").assign(part="trial", unit="trials")
    return pd.concat([read_table(out, f"CFLR6_{rec.preset}_population.csv"), trials],
                     ignore_index=True)


def _snap_l1(table, params):
    """L1's table with its (alpha, rho) grid values snapped to the config's: a committed table
    was written where ``np.geomspace`` rounded two of them one ulp differently, and the analysis
    looks the grid up by exact value (see the issue 25 report)."""
    from .studies import l1

    p = params["params"]
    for col, want in (("alpha", l1._alphas(p)), ("rho", l1._rhos(p))):
        v = table[col].to_numpy(dtype=float)
        i = np.abs(v[:, None] - want[None, :]).argmin(axis=1)
        near = np.isclose(v, want[i], rtol=1e-12, atol=0)
        if not np.all(near | ~np.isin(table["part"], ["grid"])):
            raise ValueError(f"L1: the table's {col} values are off the config's grid")
        table[col] = np.where(near, want[i], v)
    return table


def _units_l1(out, rec, params):
    return _snap_l1(read_table(out, f"L1_{rec.preset}.csv"), params)


#: the studies whose run replaced (or rounded) the units' rows: how to put them back
_UNITS = {"C2T": _units_c2t, "CFLC5": _units_cflc5, "CFLR6": _units_cflr6, "L1": _units_l1}


def committed_units(rec, out, params) -> pd.DataFrame:
    """The units' rows of record ``rec`` (a :class:`~mixlinreg.theory.study.StudyResult`), read
    from the tables in folder ``out``, as its study's ``analyze`` takes them (``params``: the
    config's values for the record's preset)."""
    if rec.id in _UNITS:
        return _UNITS[rec.id](out, rec, params)
    return read_table(out, f"{rec.id}_{rec.preset}.csv")


def _numbers(df) -> pd.DataFrame:
    """``numbers`` as a record stores them (JSON, 15 digits) and reads them back."""
    d = json.loads(df.to_json(orient="split", index=False, double_precision=15))
    return pd.DataFrame(d["data"], columns=d["columns"])


def _same_numbers(a, b) -> bool:
    try:
        pd.testing.assert_frame_equal(_numbers(a), b, check_dtype=False)
    except AssertionError:
        return False
    return True


def _analysed(study, table, params, seed):
    from .study import unit_rng

    return study.analyze(table, params, lambda key: unit_rng(seed, study.id, "analyze_" + key))


def reanalyse(study_id, *, preset="paper", out="figures/checks", write=True):
    """Analyse record ``<out>/<ID>_<preset>.json`` again from its committed tables with the
    current code and config, and rewrite its words.

    Returns ``(record, changed)``: the record as it now reads and the names of the fields that
    changed (empty: the record was already what its analysis says). The control's table
    (``<ID>_<preset>_control.csv``) is analysed too, with the control's values, where it holds
    the units' rows (not for CFLC5 and CFLR6, whose control table is their own: kept as recorded).
    Nothing is computed again and no table or figure is rewritten.

    Raises :class:`RuleChanged` when the verdict or the numbers (the study's or its control's)
    would change, or when the config's registration differs from the record's: that is a new
    version of the study (``version`` in its config), which must be run again. D1 (a note
    rebuilt from its own tables) is remade by ``python -m mixlinreg.theory.d1 --write``.
    """
    from .._paths import atomic_write
    from .controls import control_values, registration
    from .studies import _check_ids, get
    from .study import _CONTROL_CAVEAT, StudyResult, canonical_preset

    from .._validation import check_bool

    write = check_bool("write", write)
    (study_id,) = _check_ids([study_id])
    preset = canonical_preset(preset)
    if study_id == "D1":
        raise ValueError("D1 is a note remade from its own tables: run "
                         "`python -m mixlinreg.theory.d1 --write`, not a re-analysis")
    path = Path(out) / f"{study_id}_{preset}.json"
    if not path.exists():
        raise FileNotFoundError(f"no record {path}: run `mixlinreg check {study_id} --preset "
                                f"{preset} --out {out}` first")
    text = path.read_text()
    rec = StudyResult.from_json(text)
    study = get(study_id)
    cfg = study.config(preset)
    params = cfg.values
    reg = registration(cfg.raw, preset)
    if rec.registration and rec.registration != reg:
        raise RuleChanged(f"study {study_id}: its config changed since the record was made "
                          f"(registration {rec.registration}, now {reg}): that is a new version; "
                          f"run the study again, not a re-analysis")
    if rec.version != cfg.extras["version"]:
        raise RuleChanged(f"study {study_id}: the record is version {rec.version} and the config "
                          f"version {cfg.extras['version']}: run the study again")
    v = _analysed(study, committed_units(rec, out, params), params, rec.seed)
    rule = rec.rule_verdict or rec.verdict
    if v.verdict != rule or not _same_numbers(v.numbers, rec.numbers):
        raise RuleChanged(f"study {study_id}: analysed again, its tables give "
                          f"{'verdict ' + repr(v.verdict) if v.verdict != rule else 'other numbers'}"
                          f" (the record: {rule!r}): the rule changed since the record was made; "
                          f"that is a new version of the study, to be run again")
    new = copy.deepcopy(rec)
    new.title, new.claim, new.location = study.title, study.claim, study.location
    new.summary, new.scope, new.cells = v.summary, v.scope, dict(v.cells)
    kept = [c for c in rec.caveats if c.startswith(_CONTROL_CAVEAT)]
    new.caveats = kept + list(v.caveats) + [f"Sensitivity: {line}" for line in v.sensitivity]
    control, c = rec.control, None
    # a control whose table is the study's own table (C2T, CFLC5, CFLR6: not the units' rows)
    # cannot be analysed again; it is kept as recorded (`check ID --control-only` remakes it)
    if control.get("verdict") and control.get("table"):
        cparams = control_values(params, control)
        ctable = read_table(out, Path(control["table"]).name.removesuffix(".gz"))
        if study_id == "L1":
            ctable = _snap_l1(ctable, cparams)
        c = None if study_id in _UNITS and study_id != "L1" else _analysed(
            study, ctable, cparams, rec.seed)
    if c is not None:
        if c.verdict != control["verdict"] or not _same_numbers(
                c.numbers, pd.DataFrame(control["numbers"]["data"],
                                        columns=control["numbers"]["columns"])):
            raise RuleChanged(f"study {study_id}: its control analysed again gives "
                              f"{c.verdict!r} or other numbers (the record: "
                              f"{control['verdict']!r}): the rule changed; run the study again")
        new.control = {**control, "summary": c.summary}
    changed = [f for f in ("title", "claim", "location", "summary", "scope", "cells", "caveats",
                           "control")
               if getattr(new, f) != getattr(rec, f)]
    if write and changed:
        atomic_write(path, new.to_json())
    return new, changed
