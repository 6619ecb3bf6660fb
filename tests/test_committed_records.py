"""Every committed study record is exactly what its analysis makes of its committed table.

For each ``figures/checks/<ID>_paper.json``, the study's ``analyze`` is run on the committed table
(``<ID>_paper.csv`` or ``.csv.gz``: the units' rows, as the run wrote them) with the config's
paper preset and the record's seed, and must give the record's verdict, numbers, summary, scope
and caveats (sensitivity lines included), and the tables the record's run wrote next to it. Only
the analysis runs: nothing is recomputed, so a change to a decision rule, a margin or a summary
that would change a committed verdict fails here (issue 25, class 10), as D1's record already
does in ``tests/test_theory_figure2.py`` (D1 is remade here the same way, by ``rebuild_d1``).

Four studies replaced the units' rows by their own table (``Verdict.tables[".csv"]``), so their
units' rows are put back together from what was committed: C2T (its ``eps``, ``_runs`` and
``_traces`` parts), CFLC5 (its grid rows, plus the
``_cfl.csv`` rows of the CFL demonstration), CFLR6 (one row per trial, remade from the committed
per-cell counts ``successes`` of ``trials``, plus the ``_population.csv`` rows) and D1.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.theory.study import StudyResult, unit_rng
from mixlinreg.theory.studies import get

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "figures" / "checks"
RECORDS = sorted(CHECKS.glob("*_paper.json"))


def _read(name):
    """A committed table by name, plain or gzipped (as ``Context.write_table`` wrote it)."""
    path = CHECKS / name
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    return pd.read_csv(path, low_memory=False)


def _units_cflc5(rec):
    return pd.concat([_read("CFLC5_paper.csv"), _read("CFLC5_paper_cfl.csv")], ignore_index=True)


def _units_c2t(rec):
    return pd.concat([_read(f"C2T_paper{s}.csv") for s in ("", "_runs", "_traces")],
                     ignore_index=True)


def _units_cflr6(rec):
    """One row per trial and measure, ``ok_<measure>`` 1 for ``successes`` of ``trials`` (what
    ``cflr6.cell_counts`` counts back), and the population rows."""
    counts = _read("CFLR6_paper.csv")
    keys = ["geometry", "k", "sigma", "nd", "n", "rho"]
    reps = counts["trials"].to_numpy()
    rows = counts.loc[counts.index.repeat(reps), keys + ["measure"]].reset_index(drop=True)
    first = np.repeat(np.cumsum(reps) - reps, reps)
    ok = (np.arange(len(rows)) - first < np.repeat(counts["successes"].to_numpy(), reps))
    for measure in counts["measure"].unique():
        rows[f"ok_{measure}"] = np.where(rows["measure"] == measure, ok.astype(float), np.nan)
    trials = rows.drop(columns="measure").assign(part="trial", unit="trials")
    return pd.concat([_read("CFLR6_paper_population.csv"), trials], ignore_index=True)


def _units_l1(rec):
    """L1's table with its (alpha, rho) grid values snapped to the config's: the committed table
    was written where ``np.geomspace`` rounded two of them one ulp differently, and the analysis
    looks the grid up by exact value (see the issue 25 report)."""
    from mixlinreg.theory.studies import l1

    table = _read("L1_paper.csv")
    p = get("L1").config(rec.preset).values["params"]
    for col, want in (("alpha", l1._alphas(p)), ("rho", l1._rhos(p))):
        v = table[col].to_numpy(dtype=float)
        i = np.abs(v[:, None] - want[None, :]).argmin(axis=1)
        near = np.isclose(v, want[i], rtol=1e-12, atol=0)
        assert np.all(near | ~np.isin(table["part"], ["grid"])), f"L1: {col} off the config's grid"
        table[col] = np.where(near, want[i], v)
    return table


UNITS = {"C2T": _units_c2t, "CFLC5": _units_cflc5, "CFLR6": _units_cflr6, "L1": _units_l1}


def _numbers(df):
    """``numbers`` as the record stores them (JSON, 15 digits) and reads them back."""
    d = json.loads(df.to_json(orient="split", index=False, double_precision=15))
    return pd.DataFrame(d["data"], columns=d["columns"])


@pytest.mark.parametrize("path", RECORDS, ids=[p.name.split("_")[0] for p in RECORDS])
def test_committed_record_is_its_tables_analysis(path):
    rec = StudyResult.from_json(path.read_text())
    if rec.id == "D1":
        from mixlinreg.theory.d1 import rebuild_d1

        assert rebuild_d1(CHECKS, rec.preset).to_json() == path.read_text()
        return
    study = get(rec.id)
    params = study.config(rec.preset).values
    table = UNITS[rec.id](rec) if rec.id in UNITS else _read(f"{rec.id}_{rec.preset}.csv")
    # the study's words (its Markdown beside the module) are the record's
    assert (study.title, study.claim, study.location) == (rec.title, rec.claim, rec.location)
    v = study.analyze(table, params, lambda key: unit_rng(rec.seed, rec.id, "analyze_" + key))
    # the rule's own verdict (a record with a control keeps it in rule_verdict; its verdict is
    # the join with the control's outcome, made by run, not by analyze)
    assert v.verdict == (rec.rule_verdict or rec.verdict)
    pd.testing.assert_frame_equal(_numbers(v.numbers), rec.numbers, check_dtype=False)
    assert v.summary == rec.summary
    assert v.scope == rec.scope
    # the record's caveats, less the one that says how its control came out (run adds it first)
    control = [c for c in rec.caveats if c.startswith("Control:")]
    assert control == ([rec.caveats[0]] if rec.control else [])
    assert (list(v.caveats) + [f"Sensitivity: {line}" for line in v.sensitivity]
            == rec.caveats[len(control):])
    for suffix, df in v.tables.items():  # the tables the run wrote from the same analysis
        if suffix == ".csv" and rec.id not in UNITS:
            continue
        name = f"{rec.id}_{rec.preset}{suffix}"
        if not (CHECKS / name).exists() and not (CHECKS / (name + ".gz")).exists():
            continue
        want = _read(name)
        got = pd.read_csv(io.StringIO(df.to_csv(index=False)), low_memory=False)
        assert sorted(got.columns) == sorted(want.columns), name
        # the order of columns follows the order the units' parts were put back together in
        pd.testing.assert_frame_equal(got[list(want.columns)], want, check_dtype=False, obj=name)
