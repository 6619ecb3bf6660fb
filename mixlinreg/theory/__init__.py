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

#: The study IDs, in the order of paper_checks.md. Each is a record
#: (mixlinreg/theory/studies/<id>.py, with its title, claim and location as data).
STUDIES = ("L1", "T1", "C1", "A0", "T2", "C2", "RS", "F2a", "F2b", "F2c", "F2d", "D1")


def title(study_id) -> str:
    """The one-line title of study ``study_id`` (from its record).

    >>> title("T1")
    'Theorem 1: one-step contraction by 1/2'
    """
    (study_id,) = _check_ids([study_id])
    from . import studies

    return studies.get(study_id).title


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
    from .._paths import atomic_write
    from . import studies
    from .study import run

    result = run(studies.get(study_id), preset=preset, out=out, store=store, seed=seed,
                 n_jobs=n_jobs, progress=progress)
    atomic_write(Path(out) / f"{study_id}_{preset}.json", result.to_json())
    return result


from .report import load_results, write_report  # noqa: E402

__all__ = ["STUDIES", "location", "title", "run_study", "write_report", "load_results", "StudyResult", "Context",
           "combine", "HOLDS", "CAVEAT", "NOT_SUPPORTED", "INCONCLUSIVE", "VERDICTS", "PRESETS"]
