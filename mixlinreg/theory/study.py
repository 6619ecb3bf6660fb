"""Studies as records: one :class:`Study` per claim, driven the same way by :func:`run`.

A study is data (ID, title, the claim's sentence, where the paper states it in both versions, the
schema of its config) plus four functions:

``params`` is the study's checked config, ``{"params": {...}, "margins": {...}}``.

* ``units(params) -> [(name, spec), ...]``: the independent pieces of work (a grid point, a seed);
  ``name`` is a plain name, unique in the study, and keys both the unit's stored rows and its
  random stream;
* ``compute(spec, params, rng, shared) -> DataFrame``: the tidy rows of one unit (``rng`` is the
  unit's own generator, ``SeedSequence(seed, spawn_key=(crc32(ID), crc32(name)))``, so adding or
  removing a unit never changes another's draws); ``shared(name, fn)`` returns rows that several
  units need (a loss's constants, say), computed once as ``fn(rng)`` with the stream of
  ``"shared_" + name`` and kept in the store like a unit;
* ``analyze(table, params, rng) -> Verdict``: the verdict, its numbers and intervals, and the
  *sensitivity* lines: the verdict at the neighbouring values of every threshold and margin the
  config fixes (``rng(name)`` gives the named stream ``"analyze_" + name`` for a bootstrap);
* ``figure(table, verdict, params) -> matplotlib Figure``.

A study answers a claim of the paper with a verdict (``kind = "claim"``), or is a reproducibility
note (``kind = "note"``, D1) that answers a question with a note's outcome
(:data:`~mixlinreg.theory._study.NOTE_OUTCOMES`).

A study that reads another experiment's results (the Figure 2 stores) raises :class:`MissingInput`
from ``units`` when they are absent: :func:`run` then writes an *inconclusive* record whose
summary names the command that makes them (a note's: *undetermined*), and computes nothing.

:func:`run` loads ``mixlinreg/configs/studies/<ID>.toml`` (presets ``smoke``, ``quick``, ``paper``),
computes the units through the resumable store (:class:`mixlinreg.theory._study.Context`), writes
the table (the units' rows, or the verdict's ``".csv"`` table made from them), the extra tables of
the verdict and the figure under ``out``, and returns the
:class:`~mixlinreg.theory._study.StudyResult` whose JSON record ``paper_checks.md`` is made from.
Adding a study is one module under ``mixlinreg/theory/studies/`` and one config.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import config as _config
from .._paths import plain_name
from ._study import (CLAIM, INCONCLUSIVE, KINDS, NOTE_OUTCOMES, UNDETERMINED, VERDICTS, Context,
                     StudyResult)

__all__ = ["Study", "Verdict", "MissingInput", "figure2_store", "run", "unit_rng",
           "sensitivity_line"]


class MissingInput(FileNotFoundError):
    """The results a study reads are absent; the message names the command that makes them.

    Raised by a study's ``units``; :func:`run` turns it into an inconclusive record (nothing is
    computed, no store or figure is made).
    """


def figure2_store(panel, preset, root):
    """The store of Figure 2 panel ``panel`` (``"fig2a"``) at ``preset`` under ``root``, for reading.

    Found by the panel's config (its hash names the folder, as ``mixlinreg reproduce --out root``
    makes it); never made. Raises :class:`MissingInput` naming the command that makes the runs when
    the store is absent or holds no finished unit. Used by RS, F2a-F2d and D1.
    """
    from ..harness import ResultStore, load_config

    exp = load_config(panel, preset)
    try:
        store = ResultStore.find(root, exp)
    except FileNotFoundError as exc:
        raise MissingInput(str(exc)) from None
    if not store.done(warn=False):
        raise MissingInput(f"the {exp.name} store under {root} (preset {exp.preset}, config hash "
                           f"{exp.hash()[:12]}) has no finished unit: make them with `mixlinreg "
                           f"reproduce {exp.name} --preset {exp.preset} --out {root}`")
    return store


@dataclass
class Verdict:
    """What :meth:`Study.analyze` returns.

    Attributes
    ----------
    verdict : str
        One of :data:`~mixlinreg.theory.VERDICTS`; a note's outcome (one of
        :data:`~mixlinreg.theory._study.NOTE_OUTCOMES`) for a study of kind ``"note"``.
    numbers : pandas.DataFrame
        The measured numbers that decide it, with intervals.
    summary : str
        Why, in a few sentences, with the deciding numbers.
    caveats : list of str
    sensitivity : list of str
        The verdict at neighbouring values of each threshold or margin (see :func:`sensitivity_line`).
    tables : dict
        Extra tables to write, ``{suffix: DataFrame}`` (``"_factors.csv"`` ->
        ``<out>/<ID>_<preset>_factors.csv``); the suffix ``".csv"`` replaces the units' rows as the
        study's table ``<out>/<ID>_<preset>.csv`` (D1: the paired moves made from its units).
    """

    verdict: str
    numbers: pd.DataFrame
    summary: str
    caveats: list = field(default_factory=list)
    sensitivity: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS + NOTE_OUTCOMES:  # the record checks it against its kind
            raise ValueError(f"verdict must be one of {VERDICTS + NOTE_OUTCOMES}, got "
                             f"{self.verdict!r}")


@dataclass(frozen=True)
class Study:
    """One claim (or, with ``kind="note"``, one reproducibility note): metadata as data, and the
    four functions described in the module docstring."""

    id: str
    title: str
    claim: str
    location: str
    schema: dict
    units: Callable
    compute: Callable
    analyze: Callable
    figure: Callable
    kind: str = CLAIM

    def __post_init__(self):
        plain_name("study ID", self.id)
        if self.kind not in KINDS:
            raise ValueError(f"study {self.id}: kind must be one of {KINDS}, got {self.kind!r}")
        for key in ("params", "margins"):
            if key not in self.schema:
                raise ValueError(f"study {self.id}: schema needs a [{key}] table, got {sorted(self.schema)}")

    def config(self, preset="paper", path=None):
        """The study's checked config (``mixlinreg/configs/studies/<ID>.toml``, or ``path``)."""
        return _config.load(path or self.id, preset, kind="study", schema=self.schema,
                            sub="studies")


def unit_rng(seed: int, study_id: str, name: str) -> np.random.Generator:
    """The generator of unit ``name`` of a study: keyed by names, never by position."""
    key = (zlib.crc32(study_id.encode()), zlib.crc32(name.encode()))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))


def sensitivity_line(what: str, chosen, verdict_at: Callable, neighbours) -> str:
    """``"margin (chosen 0.1): 0.05 -> holds; 0.1 -> holds; 0.2 -> inconclusive"``.

    ``verdict_at(value)`` re-reads the same measurements with the threshold at ``value``.
    """
    values = sorted(set(list(neighbours) + [chosen]))
    parts = [f"{v:g} -> {verdict_at(v)}" for v in values]
    return f"{what} (chosen {chosen:g}): " + "; ".join(parts)


def _unit_rows(ctx, study, spec, params, seed, name):
    def shared(key, fn):
        key = "shared_" + key
        return ctx.unit(key, lambda: fn(unit_rng(seed, study.id, key)))

    return study.compute(spec, params, unit_rng(seed, study.id, name), shared)


def run(study: Study, *, preset="quick", out="figures/checks", store="results/checks", seed=0,
        n_jobs=1, progress=False, config_path=None) -> StudyResult:
    """Run ``study`` with its config's ``preset``; write its outputs and return its result.

    Units already in the store (same study, preset, seed and config values) are read back, the
    others computed (in ``n_jobs`` processes; the rows do not depend on it) and stored as they
    finish.
    """
    cfg = study.config(preset, config_path)
    params = cfg.values
    ctx = Context(study.id, preset=preset, out=out, store=store, seed=seed, n_jobs=n_jobs,
                  progress=progress)
    ctx.params = params
    try:
        units = list(study.units(params))
    except MissingInput as exc:
        Path(out).mkdir(parents=True, exist_ok=True)  # the record goes there
        return ctx.result(title=study.title, claim=study.claim, location=study.location,
                          verdict=INCONCLUSIVE if study.kind == CLAIM else UNDETERMINED,
                          summary=f"No results to read: {exc}", kind=study.kind,
                          numbers=pd.DataFrame({"missing input": [str(exc)]}), caveats=[])
    names = [n for n, _ in units]
    for n in names:  # the rule of Context.unit, checked before anything is computed
        if not isinstance(n, str) or not n or not n[0].isalnum() or any(
                not (c.isalnum() or c in "_.=-") for c in n):
            raise ValueError(f"study {study.id}: unit names must start with a letter or digit and "
                             f"use [A-Za-z0-9_.=-], got {n!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"study {study.id}: unit names must be unique")
    if n_jobs > 1 and len(units) > 1 and store is not None:
        from joblib import Parallel, delayed

        # compute the missing units in parallel; ctx.unit then reads every unit from the store
        from ..ifca import current_backend

        kernel = current_backend()  # worker processes compute with the caller's ifca backend
        Parallel(n_jobs=n_jobs)(delayed(_fill_unit)(study, preset, out, store, seed, params,
                                                    name, spec, kernel) for name, spec in units)
    parts = []
    for name, spec in units:
        df = ctx.unit(name, lambda spec=spec, name=name: _unit_rows(ctx, study, spec, params, seed,
                                                                   name))
        parts.append(df.assign(unit=name))
    table = pd.concat(parts, ignore_index=True)
    table_path = ctx.write_table(table)
    v = study.analyze(table, params, lambda key: unit_rng(seed, study.id, "analyze_" + key))
    for suffix, df in v.tables.items():
        path = ctx.write_table(df, suffix)
        if suffix == ".csv":  # the study's own table, made from the units' rows, replaces them
            table_path = path
    fig_path = ctx.save_figure(study.figure(table, v, params))
    caveats = list(v.caveats) + [f"Sensitivity: {line}" for line in v.sensitivity]
    return ctx.result(title=study.title, claim=study.claim, location=study.location,
                      verdict=v.verdict, summary=v.summary, numbers=v.numbers, caveats=caveats,
                      table=table_path, figure=fig_path, kind=study.kind)


def _fill_unit(study, preset, out, store, seed, params, name, spec, kernel="numba"):
    from ..ifca import use_backend

    ctx = Context(study.id, preset=preset, out=out, store=store, seed=seed)
    ctx.params = params
    with use_backend(kernel):
        ctx.unit(name, lambda: _unit_rows(ctx, study, spec, params, seed, name))
