"""The registry of studies: one module per claim of the paper, each defining ``STUDY`` (a
:class:`~mixlinreg.theory.study.Study`), found here by name.

Every module of this package whose name does not start with ``_`` is a study; the module of study
``ID`` is ``mixlinreg.theory.studies.<id in lower case>`` and its config is
``mixlinreg/configs/studies/<ID>.toml``. So adding a study is its module and its config, nothing
else: :func:`ids` finds it (in the report's order, the records' ``order``), ``mixlinreg check ID``
runs it, and the report lists it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from pathlib import Path

from ..._paths import plain_name

__all__ = ["ids", "get", "ported", "title", "location", "run_study"]


def _module(study_id):
    return f"{__name__}.{plain_name('study ID', study_id).lower()}"


def ported(study_id) -> bool:
    """Whether study ``study_id`` is defined as a record here."""
    return importlib.util.find_spec(_module(study_id)) is not None


@functools.lru_cache(maxsize=None)
def _records() -> tuple:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        study = importlib.import_module(f"{__name__}.{info.name}").STUDY
        if study.id.lower() != info.name:
            raise ValueError(f"module {__name__}.{info.name} defines study {study.id!r}; its "
                             f"module must be named {study.id.lower()!r}")
        found.append(study)
    return tuple(sorted(found, key=lambda s: (s.order, s.id)))


def ids() -> tuple:
    """Every study's ID, in the order of ``paper_checks.md``.

    >>> ids()[:3]
    ('L1', 'T1', 'C1')
    """
    return tuple(s.id for s in _records())


def _check_ids(study_ids):
    known = ids()
    study_ids = list(known) if not study_ids else list(study_ids)
    bad = [i for i in study_ids if i not in known]
    if bad:
        raise ValueError(f"study IDs must be among {list(known)}, got {bad}")
    return study_ids


def get(study_id):
    """The :class:`~mixlinreg.theory.study.Study` of ``study_id``."""
    if not ported(study_id):
        raise ValueError(f"study {study_id!r} has no module {_module(study_id)}; known: {list(ids())}")
    study = importlib.import_module(_module(study_id)).STUDY
    if study.id != study_id:
        raise ValueError(f"module {_module(study_id)} defines study {study.id!r}, not {study_id!r}")
    return study


def title(study_id) -> str:
    """The one-line title of study ``study_id`` (from its record).

    >>> title("T1")
    'Theorem 1: one-step contraction by 1/2'
    """
    (study_id,) = _check_ids([study_id])
    return get(study_id).title


def location(study_id) -> str:
    """Where the paper states study ``study_id``'s claim, in both versions.

    >>> "Figure 3(a) of the long version" in location("F2a")
    True
    """
    (study_id,) = _check_ids([study_id])
    return get(study_id).location


def run_study(study_id, *, preset="quick", out="figures/checks", store="results/checks", seed=0,
              n_jobs=1, progress=False, backend="loky", scheduler=None, control_only=False,
              stores=None):
    """Run one study, write its JSON record ``<out>/<ID>_<preset>.json`` and return its
    :class:`~mixlinreg.theory.study.StudyResult`.

    Parameters
    ----------
    study_id : str
        One of :func:`ids`.
    preset : {"smoke", "quick", "paper"}
        (``"full"``, the former name of ``"paper"``, is read as ``"paper"``)
    out : path
        Folder for the table, figure and record.
    store : path or None
        Folder of resumable per-unit rows (``None``: recompute everything).
    seed, n_jobs, progress
        See :class:`mixlinreg.theory.study.Context`.
    backend, scheduler
        Where the units run (:func:`mixlinreg.runner.run`): ``"loky"`` (``n_jobs`` local
        processes), ``"dask"`` (the cluster at ``scheduler``, an address or a
        ``dask.distributed.Client``) or ``"sequential"``; the result does not depend on it.
    control_only : bool
        Run only the study's control (:mod:`mixlinreg.theory.controls`) and join it to the
        existing record ``<out>/<ID>_<preset>.json`` (which must exist, made with the same
        config); the record's measurements are kept as they are.
    stores : path, optional
        Where the Figure 2 stores a study reads are (default: its config's, ``figures/stores``);
        a missing one raises :class:`~mixlinreg.theory.study.MissingInput` and no record is
        written.

    A record of an earlier ``version`` of the study (its config's ``version``) found at the
    record's path is moved to ``<out>/versions/<ID>_<preset>_v<version>.json`` first, so the
    report can show both versions' verdicts.
    """
    from ..._paths import atomic_write
    from ..._validation import check_bool
    from ..study import StudyResult, canonical_preset, run

    (study_id,) = _check_ids([study_id])
    control_only = check_bool("control_only", control_only)
    preset = canonical_preset(preset)
    path = Path(out) / f"{study_id}_{preset}.json"
    old = old_text = None
    if path.exists():
        try:
            old_text = path.read_text()
            old = StudyResult.from_json(old_text)
        except (ValueError, TypeError, KeyError) as exc:
            if control_only:
                raise ValueError(f"--control-only: the record {path} cannot be read ({exc}); "
                                 f"rerun the whole study") from None
    if control_only and old is None:
        raise ValueError(f"--control-only joins a control to an existing record, and {path} does "
                         f"not exist: run `mixlinreg check {study_id} --preset {preset}` first")
    result = run(get(study_id), preset=preset, out=out, store=store, seed=seed, n_jobs=n_jobs,
                 progress=progress, backend=backend, scheduler=scheduler,
                 control_only=old if control_only else None, stores=stores)
    if old is not None and old.version != result.version:
        keep = Path(out) / "versions" / f"{study_id}_{preset}_v{old.version}.json"
        keep.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(keep, old_text)
    atomic_write(path, result.to_json())
    return result
