"""Theory checks: one study per claim of the IFCA paper, each with a verdict.

>>> from mixlinreg.theory import STUDIES
>>> list(STUDIES)[:3]
['L1', 'T1', 'C1']

Run them with ``mixlinreg check [ID ...] --preset quick|full --write paper_checks.md`` or
:func:`run_study`. Each study writes a tidy table, a figure and a JSON record under
``figures/checks`` and returns a :class:`StudyResult`; :func:`write_report` turns the records into
``paper_checks.md``.
"""

from __future__ import annotations

from pathlib import Path

from ._study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, PRESETS, VERDICTS, Context,
                     StudyResult, canonical_preset, combine)

# ID -> (module, function, one-line title). Order is the order of paper_checks.md. Every study is
# a record (mixlinreg/theory/studies/<id>.py, found by run_study), so module and function are None
# (they named the function of a study written before the records).
STUDIES = {
    "L1": (None, None, "Lemma 1: misclassification probability"),
    "T1": (None, None, "Theorem 1: one-step contraction by 1/2"),
    "C1": (None, None, "Corollary 1: error floor and iteration count"),
    "A0": (None, None, "Assumption 1: slightly better than random suffices (k = 2)"),
    "T2": (None, None, "Theorem 2: contraction 1 - p lambda / (8 L)"),
    "C2": (None, None, "Corollary 2: error O~(1/sqrt(mn) + 1/n)"),
    "RS": (None, None, "Section 6: random initialization with a few restarts"),
    "F2a": (None, None, "Figure 2(a): success rises with R (k = 2)"),
    "F2b": (None, None, "Figure 2(b): success rises with R (k = 4)"),
    "F2c": (None, None, "Figure 2(c): success rises with m and n (k = 2)"),
    "F2d": (None, None, "Figure 2(d): success rises with m and n (k = 4)"),
    "D1": (None, None, "Text vs code: conventions of the Figure 2 experiment"),
}


def location(study_id) -> str:
    """Where the paper states study ``study_id``'s claim, in both versions.

    >>> "Figure 3(a) of the long version" in location("F2a")
    True
    """
    (study_id,) = _check_ids([study_id])
    from . import studies

    return studies.get(study_id).location


def _check_ids(ids):
    ids = list(STUDIES) if not ids else list(ids)
    bad = [i for i in ids if i not in STUDIES]
    if bad:
        raise ValueError(f"study IDs must be among {list(STUDIES)}, got {bad}")
    return ids


def run_study(study_id, *, preset="quick", out="figures/checks", store="results/checks", seed=0,
              n_jobs=1, progress=False) -> StudyResult:
    """Run one study, write its JSON record ``<out>/<ID>_<preset>.json`` and return its result.

    Parameters
    ----------
    study_id : str
        One of :data:`STUDIES`.
    preset : {"smoke", "quick", "paper"}
        (``"full"``, the former name of ``"paper"``, is read as ``"paper"``)
    out : path
        Folder for the table, figure and record.
    store : path or None
        Folder of resumable per-unit rows (``None``: recompute everything).
    seed, n_jobs, progress
        See :class:`mixlinreg.theory._study.Context`.
    """
    (study_id,) = _check_ids([study_id])
    preset = canonical_preset(preset)
    from ..harness.store import _atomic_write_text
    from . import studies
    from .study import run

    result = run(studies.get(study_id), preset=preset, out=out, store=store, seed=seed,
                 n_jobs=n_jobs, progress=progress)
    _atomic_write_text(Path(out) / f"{study_id}_{preset}.json", result.to_json())
    return result


from .report import load_results, write_report  # noqa: E402

__all__ = ["STUDIES", "location", "run_study", "write_report", "load_results", "StudyResult", "Context",
           "combine", "HOLDS", "CAVEAT", "NOT_SUPPORTED", "INCONCLUSIVE", "VERDICTS", "PRESETS"]
