"""One module per claim of the paper, each defining ``STUDY`` (a :class:`~mixlinreg.theory.study.Study`).

The module of study ``ID`` is ``mixlinreg.theory.studies.<id in lower case>``; its config is
``mixlinreg/configs/studies/<ID>.toml``. :func:`get` returns the study; :func:`ported` says whether an
ID has a module here (every ID of :data:`mixlinreg.theory.STUDIES` has one, the reproducibility
note D1 among them).
"""

from __future__ import annotations

import importlib
import importlib.util

from ..._paths import plain_name


def _module(study_id):
    return f"{__name__}.{plain_name('study ID', study_id).lower()}"


def ported(study_id) -> bool:
    """Whether study ``study_id`` is defined as a record here."""
    return importlib.util.find_spec(_module(study_id)) is not None


def get(study_id):
    """The :class:`~mixlinreg.theory.study.Study` of ``study_id``."""
    if not ported(study_id):
        raise ValueError(f"study {study_id!r} has no module {_module(study_id)}")
    study = importlib.import_module(_module(study_id)).STUDY
    if study.id != study_id:
        raise ValueError(f"module {_module(study_id)} defines study {study.id!r}, not {study_id!r}")
    return study
