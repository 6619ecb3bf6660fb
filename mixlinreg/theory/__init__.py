"""Theory checks: one study per claim of the IFCA paper, each with a verdict.

>>> from mixlinreg.theory import STUDIES
>>> list(STUDIES)[:3]
['L1', 'T1', 'C1']

Run them with ``mixlinreg check [ID ...] --preset smoke|quick|paper --write paper_checks.md`` or
:func:`run_study`. Each study writes a tidy table, a figure and a JSON record under
``figures/checks`` and returns a :class:`StudyResult`; :func:`write_report` turns the records into
``paper_checks.md``. The framework is :mod:`mixlinreg.theory.study`; the studies are found in
:mod:`mixlinreg.theory.studies` (:data:`STUDIES` is their IDs, in the report's order).
"""

from __future__ import annotations

from .report import load_results, write_report
from .studies import location, run_study, title
from .study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, PRESETS, VERDICTS, Context,
                    StudyResult, combine)

__all__ = ["STUDIES", "location", "title", "run_study", "write_report", "load_results", "StudyResult", "Context",
           "combine", "HOLDS", "CAVEAT", "NOT_SUPPORTED", "INCONCLUSIVE", "VERDICTS", "PRESETS"]


def __getattr__(name):
    # STUDIES is found, not written down: every module of mixlinreg/theory/studies/ (a new study
    # needs no edit here); computed on first use so that importing mixlinreg.theory stays light
    if name == "STUDIES":
        from .studies import ids

        return ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
