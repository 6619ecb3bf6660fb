"""Every committed study record is exactly what its analysis makes of its committed table.

For each ``figures/checks/<ID>_paper.json``, the study's ``analyze`` is run on the committed table
(``<ID>_paper.csv`` or ``.csv.gz``: the units' rows, as the run wrote them) with the config's
paper preset and the record's seed, and must give the record's verdict, numbers, summary, scope
and caveats (sensitivity lines included), and the tables the record's run wrote next to it. Only
the analysis runs: nothing is recomputed, so a change to a decision rule, a margin or a summary
that would change a committed verdict fails here (issue 25, class 10), as D1's record already
does in ``tests/test_theory_figure2.py`` (D1 is remade here the same way, by ``rebuild_d1``).

Four studies replaced the units' rows by their own table (``Verdict.tables[".csv"]``), so their
units' rows are put back together from what was committed (C2T, CFLC5, CFLR6; L1's grid values
are snapped to the config's): ``mixlinreg.theory.records.committed_units``, which
``mixlinreg check --reanalyse`` uses too.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from mixlinreg.theory.records import _UNITS as UNITS, committed_units, read_table
from mixlinreg.theory.study import StudyResult, unit_rng
from mixlinreg.theory.studies import get

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "figures" / "checks"
RECORDS = sorted(CHECKS.glob("*_paper.json"))


def _read(name):
    """A committed table by name, plain or gzipped (as ``Context.write_table`` wrote it)."""
    return read_table(CHECKS, name)


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
    table = committed_units(rec, CHECKS, params)
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
