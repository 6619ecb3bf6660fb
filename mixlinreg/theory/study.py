"""The study framework, in one module: studies as records, one :class:`Study` per claim, driven
the same way by :func:`run`; the verdict vocabulary, the result record (:class:`StudyResult`),
seeds, and the resumable per-unit store (:class:`Context`).

A study is data (ID, title, the claim's sentence, where the paper states it in both versions, the
schema of its config; the prose in its words file) plus four functions:

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
(:data:`NOTE_OUTCOMES`).

A study that reads another experiment's results (the Figure 2 stores) raises :class:`MissingInput`
from ``units`` when they are absent: :func:`run` passes it on, computes nothing and writes no
record (nothing was measured, so there is no verdict); ``mixlinreg check`` says which command
makes the missing store and ends with exit status 1.

:func:`run` loads ``mixlinreg/configs/studies/<ID>.toml`` (presets ``smoke``, ``quick``, ``paper``),
computes the units through the resumable store (:class:`Context`), writes
the table (the units' rows, or the verdict's ``".csv"`` table made from them), the extra tables of
the verdict and the figure under ``out``, and returns the
:class:`StudyResult` whose JSON record ``paper_checks.md`` is made from.

The store: :meth:`Context.unit` writes a unit's tidy rows atomically to
``<store>/<ID>-<preset>-<hash>/<unit>.csv`` and reads them back on a rerun, so an interrupted
``mixlinreg check`` resumes without redoing finished units. A study's values, presets among them,
live in its config, never here.

Adding a study is one module under ``mixlinreg/theory/studies/`` (found there by
:func:`mixlinreg.theory.studies.ids`; its ``order`` places it in the report), its words beside it
(``<module>.md``: the title, claim, location, summary templates, caveats and sensitivity labels,
read by :mod:`mixlinreg.theory.words`) and one config ``mixlinreg/configs/studies/<ID>.toml``;
nothing else to edit (``mixlinreg regenerate`` then remakes the derived documents).
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import config as _loader
from .._paths import atomic_write, plain_name
from .._validation import check_bool
from ..config import PRESETS
from ..runner.store import UnitStore
from ..runner import json_default
from ..stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED

__all__ = ["Study", "Verdict", "Decision", "MissingInput", "figure2_store", "run", "unit_rng",
           "sensitivity_line", "StudyResult", "Context", "combine", "combine_outcomes",
           "canonical_preset", "VERDICTS", "HOLDS", "CAVEAT", "NOT_SUPPORTED",
           "INCONCLUSIVE", "CLAIM", "NOTE", "KINDS", "SAME", "DIFFER", "UNDETERMINED",
           "NOTE_OUTCOMES", "FORMER_PRESETS", "PRESETS", "PAPERS"]

VERDICTS = (HOLDS, CAVEAT, NOT_SUPPORTED, INCONCLUSIVE)

# A record is a claim of the paper (with a verdict) or a reproducibility note: a comparison that is
# not a claim of the paper (the text against the authors' code, say), with its own outcomes.
CLAIM, NOTE = "claim", "note"
KINDS = (CLAIM, NOTE)
SAME = "same results"  # every paired interval inside the stated margin
DIFFER = "results differ"  # some paired interval excludes no change
UNDETERMINED = "undetermined"  # neither: too few trials to tell
NOTE_OUTCOMES = (SAME, DIFFER, UNDETERMINED)

#: The papers whose claims are checked: the record's ``paper`` field names one; each gets a section
#: of ``paper_checks.md`` (in this order) with the full reference.
PAPERS = {
    "IFCA": ("Ghosh, Chung, Yin, Ramchandran, *An Efficient Framework for Clustered Federated "
             "Learning*, in two versions whose numbering differs: the long (arXiv) version and the "
             "conference (NeurIPS 2020) version"),
    "CFL": ("Sattler, Müller, Samek, *Clustered Federated Learning* (the short workshop version: "
            "eq. (1)-(7), Algorithms 1-2, Figures 1-3; the long version is IEEE TNNLS 2021, "
            "arXiv 1910.01991)"),
    "FPFC": ("Yu, Liu, Sun, Wang, *Clustered Federated Learning for Heterogeneous Data* "
             "(AAAI 2023 student abstract)"),
}

#: former preset names, read as their new ones (records made with them: see report.migrate_records)
FORMER_PRESETS = {"full": "paper"}


def canonical_preset(preset) -> str:
    """``preset`` checked, its former name read as the new one (``"full"`` is ``"paper"``).

    >>> canonical_preset("full"), canonical_preset("quick")
    ('paper', 'quick')
    """
    preset = FORMER_PRESETS.get(preset, preset) if isinstance(preset, str) else preset
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS} (or the former name 'full' of "
                         f"'paper'), got {preset!r}")
    return preset
GZIP_ABOVE = 1_000_000  # bytes of CSV above which a table is written gzipped


def _weakest(values, allowed, order, fallback, what, func):
    """The first of ``order`` found in ``values`` (all of which must be in ``allowed``), else
    ``fallback``; ``what`` and ``func`` name the values and the caller in errors."""
    values = list(values)
    if not values:
        raise ValueError(f"{func} needs at least one {what}, got none")
    for v in values:
        if v not in allowed:
            raise ValueError(f"{what} must be one of {allowed}, got {v!r}")
    return next((v for v in order if v in values), fallback)


def combine(verdicts):
    """The weakest of several verdicts: not supported > inconclusive > caveat > holds.

    >>> combine(["holds", "holds with a caveat"])
    'holds with a caveat'
    >>> combine(["holds", "inconclusive", "not supported"])
    'not supported'
    """
    return _weakest(verdicts, VERDICTS, (NOT_SUPPORTED, INCONCLUSIVE, CAVEAT), HOLDS, "verdict",
                    "combine")


def combine_outcomes(outcomes):
    """The outcome of a reproducibility note from its parts: differ > undetermined > same.

    >>> combine_outcomes(["same results", "undetermined"])
    'undetermined'
    >>> combine_outcomes(["same results", "results differ", "undetermined"])
    'results differ'
    """
    return _weakest(outcomes, NOTE_OUTCOMES, (DIFFER, UNDETERMINED), SAME, "outcome",
                    "combine_outcomes")


@dataclass
class StudyResult:
    """Outcome of one study: what ``paper_checks.md`` shows for one claim.

    Attributes
    ----------
    id : str
        Claim ID (``"L1"``, ``"T1"``, ...).
    title : str
        A few words.
    claim : str
        The claim in one sentence.
    location : str
        Where in the paper, in both versions (long and NeurIPS) where their numbering differs.
    verdict : str
        One of :data:`VERDICTS` for a claim; for a note, its outcome, one of :data:`NOTE_OUTCOMES`.
    summary : str
        Why that verdict, in a few sentences, with the deciding numbers.
    numbers : pandas.DataFrame
        The measured numbers that decide the verdict (with intervals), shown as a table.
    caveats : list of str
    table : str
        Path of the tidy CSV (relative to the output folder's parent when written).
    figure : str
        Path of the PNG.
    preset, seed, seconds, command
        How it was made (``seconds``: wall time of the run that wrote the record).
    units_computed, units_resumed
        Units computed in that run and units read back from the resumable store (computed by an
        earlier, interrupted run, whose time ``seconds`` does not include).
    kind : {"claim", "note"}
        A claim of the paper, or a reproducibility note (not a claim of the paper: ``claim`` then
        holds the question it answers). ``paper_checks.md`` counts verdicts over claims only.
    paper : {"IFCA", "CFL", "FPFC"}
        The paper whose claim it checks (:data:`PAPERS`); ``paper_checks.md`` has a section and a
        verdict table per paper. Records written before the field existed are IFCA's.
    scope : str
        Where the verdict differs by condition, one line saying so (computed from the
        measurement), shown in the verdict table's row; empty otherwise.
    rule_verdict : str
        The verdict of the study's rule alone; ``verdict`` is it joined with the control's
        outcome (:func:`mixlinreg.theory.controls.judge`). Empty in records made before controls.
    control : dict
        The control (:mod:`mixlinreg.theory.controls`): ``{}`` when the study declares none (or
        the record predates controls), ``{"none": why}`` where none can exist, else its setting
        (``what``, ``params``), ``verdict``, ``summary``, ``numbers`` (as the record's), ``table``
        and ``seconds``.
    version : int
        The study's version (its config's ``version``): a threshold changed after data is a new
        version.
    registration : str
        The registration hash of the config that judged this record
        (:func:`~mixlinreg.theory.controls.registration`); empty in records made before it.
    registered_in : str
        The first commit holding a config with that hash (empty: not committed when the record was
        made, or no git checkout).
    cells : dict
        ``{"hard": h, "total": t, "rule": what makes a cell hard}``: how many of the judged cells
        were not already decided by the construction; empty when the study does not count them.
    """

    id: str
    title: str
    claim: str
    location: str
    verdict: str
    summary: str
    numbers: pd.DataFrame
    caveats: list = field(default_factory=list)
    table: str = ""
    figure: str = ""
    preset: str = ""
    seed: int = 0
    seconds: float = float("nan")
    command: str = ""
    units_computed: int = 0
    units_resumed: int = 0
    kind: str = CLAIM
    paper: str = "IFCA"
    scope: str = ""
    rule_verdict: str = ""
    control: dict = field(default_factory=dict)
    version: int = 1
    registration: str = ""
    registered_in: str = ""
    cells: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {tuple(PAPERS)}, got {self.paper!r}")
        allowed = VERDICTS if self.kind == CLAIM else NOTE_OUTCOMES
        if self.verdict not in allowed:
            what = "verdict" if self.kind == CLAIM else "a note's outcome"
            raise ValueError(f"{what} must be one of {allowed}, got {self.verdict!r}")
        if not isinstance(self.numbers, pd.DataFrame):
            raise TypeError(f"numbers must be a pandas DataFrame, got {type(self.numbers).__name__}")

    def to_json(self) -> str:
        d = asdict(self)
        d["numbers"] = json.loads(self.numbers.to_json(orient="split", index=False,
                                                       double_precision=15))
        for key in _LATER_FIELDS:  # a record made before these fields is written as it was
            if d[key] == _LATER_FIELDS[key]:
                del d[key]
        return json.dumps(d, indent=1, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> "StudyResult":
        d = json.loads(text)
        num = d.pop("numbers")
        d["numbers"] = pd.DataFrame(num["data"], columns=num["columns"])
        return cls(**d)


#: the fields added with controls and registration, and their empty values: left out of a record's
#: JSON while empty, so that records made before them stay byte-identical when rewritten
_LATER_FIELDS = {"rule_verdict": "", "control": {}, "version": 1, "registration": "",
                 "registered_in": "", "cells": {}}


def _study_code(study_id: str) -> int:
    return zlib.crc32(study_id.encode())


@dataclass
class Context:
    """Where and how a study runs.

    Parameters
    ----------
    study_id : str
    preset : {"smoke", "quick", "paper"}
        ``smoke`` is for the test suite (seconds), ``quick`` for ``mixlinreg check --preset quick``
        (minutes per paper on two cores; ``docs/theory_checks.md`` gives the measured times), ``paper`` as large
        as the verdicts need (``"full"``, its former name, is read as
        ``"paper"``).
    out : path
        Folder for tables, figures and the per-study JSON (``figures/checks``).
    store : path or None
        Folder for the resumable per-unit rows; ``None`` keeps nothing between runs.
    seed : int
        Root seed; unit generators are ``SeedSequence(seed, spawn_key=(crc32(ID), *key))``.
    n_jobs : int
        Worker processes a study may use for independent units (results do not depend on it).
    progress : bool
    """

    study_id: str
    preset: str = "quick"
    out: Path = Path("figures/checks")
    store: Path | None = None
    seed: int = 0
    n_jobs: int = 1
    progress: bool = False
    params: dict = field(default_factory=dict)
    units_computed: int = 0
    units_resumed: int = 0
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def __post_init__(self):
        check_bool("progress", self.progress)
        self.preset = canonical_preset(self.preset)
        plain_name("study ID", self.study_id)
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs < 1:
            raise ValueError(f"n_jobs must be an integer >= 1, got {self.n_jobs!r}")
        self.out = Path(self.out)
        self.store = None if self.store is None else Path(self.store)

    # ----------------------------------------------------------------- seeds
    def seed_sequence(self, *key) -> np.random.SeedSequence:
        """Child seed of this study for the integer key ``key`` (a unit's coordinates)."""
        key = tuple(int(k) for k in key)
        return np.random.SeedSequence(self.seed, spawn_key=(_study_code(self.study_id),) + key)

    def rng(self, *key) -> np.random.Generator:
        return np.random.default_rng(self.seed_sequence(*key))

    # ----------------------------------------------------------------- store
    def _unit_dir(self) -> Path | None:
        if self.store is None:
            return None
        return self.store / self._store_key()[0]

    def _store_key(self):
        from ..runner import store_key

        key = {"id": self.study_id, "preset": self.preset, "seed": int(self.seed),
               "params": self.params}
        return store_key(self.study_id, self.preset, key)

    def unit(self, name: str, compute) -> pd.DataFrame:
        """Rows of one unit: read from the store if already computed, else ``compute()`` and save.

        ``name`` must be unique within the study and made of ``[A-Za-z0-9_.=-]``; ``compute`` takes
        no argument and returns a DataFrame. The params given to the context are part of the store
        folder's name, so changing them never mixes old and new rows.
        """
        if not isinstance(name, str) or not name or any(not (c.isalnum() or c in "_.=-")
                                                        for c in name):
            raise ValueError(f"unit name must be non-empty and use [A-Za-z0-9_.=-], got {name!r}")
        folder = self._unit_dir()
        if folder is None:
            df = compute()
            self.units_computed += 1
            if not isinstance(df, pd.DataFrame):
                raise TypeError(f"unit {name!r} must return a pandas DataFrame, got "
                                f"{type(df).__name__}")
            return df
        # the harness's unit store: checksummed units, claims shared with other processes
        df, computed = UnitStore(folder, tag=self._store_key()[1],
                                 legacy_tags=(None,)).get_or_compute(name, compute)
        if computed:
            self.units_computed += 1
        else:
            self.units_resumed += 1
        return df

    # ----------------------------------------------------------------- outputs
    def path(self, suffix: str) -> Path:
        """``<out>/<ID>_<preset><suffix>``, e.g. ``ctx.path(".csv")``; creates ``out``."""
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out / f"{self.study_id}_{self.preset}{suffix}"

    def write_table(self, df: pd.DataFrame, suffix: str = ".csv") -> Path:
        """Write ``df`` as ``<out>/<ID>_<preset><suffix>``; over 1 MB of CSV, gzip it (``.csv.gz``).

        The gzip file is byte-for-byte reproducible (no timestamp); ``pandas.read_csv`` reads either.
        Returns the path written; a stale file of the other form is removed.
        """
        path = self.path(suffix)
        text = df.to_csv(index=False)
        gz = path.with_name(path.name + ".gz")
        if len(text) > GZIP_ABOVE:
            atomic_write(gz, gzip.compress(text.encode(), mtime=0))
            path.unlink(missing_ok=True)
            return gz
        atomic_write(path, text)
        gz.unlink(missing_ok=True)
        return path

    def save_figure(self, fig, suffix: str = ".png") -> Path:
        from ..plots import save_figure

        return save_figure(fig, self.path(suffix))

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def result(self, **kw) -> StudyResult:
        """A :class:`StudyResult` with this context's id, preset, seed and elapsed time filled in."""
        kw.setdefault("id", self.study_id)
        kw.setdefault("preset", self.preset)
        kw.setdefault("seed", int(self.seed))
        kw.setdefault("seconds", round(self.elapsed(), 1))
        kw.setdefault("units_computed", self.units_computed)
        kw.setdefault("units_resumed", self.units_resumed)
        from .._kernel_choice import current_kernel

        kernel = current_kernel()  # the record says who ran IFCA when it was not numba
        kw.setdefault("command", f"mixlinreg check {self.study_id} --preset {self.preset}"
                      + (f" --seed {self.seed}" if self.seed else "")
                      + ("" if kernel == "numba" else f" --kernel {kernel}")
                      + ("" if self.out == Path("results/checks") else f" --out {self.out}"))
        for key in ("table", "figure"):
            if key in kw and kw[key]:
                kw[key] = str(kw[key])
        return StudyResult(**kw)


class MissingInput(FileNotFoundError):
    """The results a study reads are absent; the message names the command that makes them.

    Raised by a study's ``units`` (or by :func:`figure2_store`) and passed on by :func:`run`:
    nothing is computed and no record, store or figure is made.
    """


#: the inputs opened during one :func:`run` (``{(panel, preset, root): store}``): a study's
#: declared stores are opened, checked and verified once per run, not once per use
_INPUTS = ContextVar("mixlinreg_study_inputs", default=None)


def figure2_store(panel, preset, root):
    """The store of Figure 2 panel ``panel`` (``"fig2a"``) at ``preset`` under ``root``, for reading.

    Found by the panel's config (its hash names the folder, as ``mixlinreg reproduce --out root``
    makes it); never made. Raises :class:`MissingInput` naming the command that makes the runs when
    the store is absent or holds no finished unit. Used by RS, F2a-F2d and D1, which declare these
    inputs on their records (``Study.reads``); within :func:`run` an input is opened once.
    """
    cache = _INPUTS.get()
    key = (panel, preset, str(root))
    if cache is not None and key in cache:
        return cache[key]
    store = _open_figure2_store(panel, preset, root)
    if cache is not None:
        cache[key] = store
    return store


def _open_figure2_store(panel, preset, root):
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
        :data:`NOTE_OUTCOMES`) for a study of kind ``"note"``.
    numbers : pandas.DataFrame
        The measured numbers that decide it, with intervals.
    summary : str
        Why, in a few sentences, with the deciding numbers.
    caveats : list of str
    sensitivity : list of str
        The verdict at neighbouring values of each threshold or margin (see :func:`sensitivity_line`).
    scope : str
        Where the verdict differs by condition, one line saying so, made from the numbers
        (``"holds for ...; not supported when ..."``): the report shows it in the table's row.
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
    scope: str = ""
    #: ``{"hard": h, "total": t, "rule": "..."}``: of the ``t`` cells the verdict judged, the
    #: ``h`` whose outcome was not already certain from the construction (``rule`` says how a
    #: cell counts as hard); empty when the study does not count them
    cells: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.cells:
            c = self.cells
            if set(c) != {"hard", "total", "rule"} or not (0 <= int(c["hard"]) <= int(c["total"])):
                raise ValueError(f"cells must be {{'hard': h, 'total': t, 'rule': str}} with "
                                 f"0 <= h <= t, got {c!r}")
        if self.verdict not in VERDICTS + NOTE_OUTCOMES:  # the record checks it against its kind
            raise ValueError(f"verdict must be one of {VERDICTS + NOTE_OUTCOMES}, got "
                             f"{self.verdict!r}")


@dataclass(frozen=True)
class Decision:
    """What a study's ``decide`` returns: the verdict (or a note's outcome) and the numbers that
    decided it (``{name: value}``, the deciding measurements and the thresholds they were held
    to); no prose. ``analyze`` describes it in words."""

    verdict: str
    numbers: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS + NOTE_OUTCOMES:
            raise ValueError(f"verdict must be one of {VERDICTS + NOTE_OUTCOMES}, got "
                             f"{self.verdict!r}")


@dataclass(frozen=True)
class Study:
    """One claim (or, with ``kind="note"``, one reproducibility note): metadata as data, and the
    four functions described in the module docstring."""

    id: str
    #: a few words, the claim's sentence and where the paper states it: given here, or read from
    #: the study's ``words`` (its ``title``, ``claim`` and ``location`` sections)
    title: str | None = None
    claim: str | None = None
    location: str | None = None
    schema: dict | None = None
    units: Callable | None = None
    compute: Callable | None = None
    analyze: Callable | None = None
    figure: Callable | None = None
    kind: str = CLAIM
    #: its place in ``paper_checks.md`` (ascending; ties by ID): the paper's order of claims
    order: int = 1000
    #: the stores it reads, declared: ``reads(params) -> ((panel, preset, root, required), ...)``
    #: (a Figure 2 study reads its panel's); :func:`run` opens each once and, when a required one
    #: is missing, writes an inconclusive record naming the command that makes it
    reads: Callable | None = None
    #: the pure decision ``decide(measurements, params) -> Decision`` that ``analyze`` calls (at the
    #: config's thresholds and, for the sensitivity lines, at neighbouring ones); unit-tested on
    #: made-up measurements at and around its thresholds
    decide: Callable | None = None
    #: the paper whose claim it checks, one of :data:`PAPERS`
    paper: str = "IFCA"
    #: the study's prose (:class:`~mixlinreg.theory.words.Words`, from the Markdown file beside
    #: its module): title, claim, location, summary templates, caveats, sensitivity labels
    words: object = None

    def __post_init__(self):
        plain_name("study ID", self.id)
        for key in ("title", "claim", "location"):
            if getattr(self, key) is None:
                if self.words is None or not self.words.has(key):
                    raise ValueError(f"study {self.id}: {key} is needed, given or as the section "
                                     f"'## {key}' of its words")
                object.__setattr__(self, key, self.words.text(key))
        for key in ("schema", "units", "compute", "analyze", "figure"):
            if getattr(self, key) is None:
                raise ValueError(f"study {self.id}: {key} is needed")
        if self.paper not in PAPERS:
            raise ValueError(f"study {self.id}: paper must be one of {tuple(PAPERS)}, got "
                             f"{self.paper!r}")
        if isinstance(self.order, bool) or not isinstance(self.order, int):
            raise ValueError(f"study {self.id}: order must be an integer, got {self.order!r}")
        if self.kind not in KINDS:
            raise ValueError(f"study {self.id}: kind must be one of {KINDS}, got {self.kind!r}")
        for key in ("params", "margins"):
            if key not in self.schema:
                raise ValueError(f"study {self.id}: schema needs a [{key}] table, got {sorted(self.schema)}")

    def config(self, preset="paper", path=None):
        """The study's checked config (``mixlinreg/configs/studies/<ID>.toml``, or ``path``);
        its ``extras`` hold the ``version`` and the ``control`` (:mod:`.controls`)."""
        from .controls import check_version, control_checker

        return _loader.load(path or self.id, preset, kind="study", schema=self.schema,
                            sub="studies", extras={"version": check_version,
                                                   "control": control_checker(self.schema)})


def unit_rng(seed: int, study_id: str, name: str) -> np.random.Generator:
    """The generator of unit ``name`` of a study: keyed by names, never by position."""
    key = (zlib.crc32(study_id.encode()), zlib.crc32(name.encode()))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))


def with_margin(params, key, value):
    """``params`` with ``params["margins"][key]`` set to ``value`` (a new dict; for re-reading a
    study's measurements at a neighbouring threshold)."""
    return {**params, "margins": {**params["margins"], key: value}}


def sensitivity_line(what: str, chosen, verdict_at: Callable, neighbours) -> str:
    """``"margin (chosen 0.1): 0.05 -> holds; 0.1 -> holds; 0.2 -> inconclusive"``.

    ``verdict_at(value)`` re-reads the same measurements with the threshold at ``value``.
    """
    values = sorted(set(list(neighbours) + [chosen]))
    parts = [f"{v:g} -> {verdict_at(v)}" for v in values]
    return f"{what} (chosen {chosen:g}): " + "; ".join(parts)


#: shared pieces of runs without a store, keyed by (the run's store tag, piece name): the tag
#: hashes the study, preset, seed and config values, so a key never meets other inputs
_SHARED_MEMO = {}


def _study_unit(study, params, seed, folder, tag, specs, kernel, unit, seed_sequence):
    """One unit of a study, for the runner: ``study.compute`` with the unit's generator and
    ``shared(name, fn)`` (rows several units need, computed once through the same store)."""
    from .._kernel_choice import use_kernel

    counts = {"shared_computed": 0, "shared_resumed": 0}

    def shared(key, fn):
        key = "shared_" + key

        def compute():
            df = fn(unit_rng(seed, study.id, key))
            if not isinstance(df, pd.DataFrame):
                raise TypeError(f"unit {key!r} must return a pandas DataFrame, got "
                                f"{type(df).__name__}")
            return df

        if folder is None:  # no store: computed once per process and run configuration
            memo = (tag, key)
            if memo not in _SHARED_MEMO:
                counts["shared_computed"] += 1
                if len(_SHARED_MEMO) >= 32:
                    _SHARED_MEMO.pop(next(iter(_SHARED_MEMO)))
                _SHARED_MEMO[memo] = compute()
            return _SHARED_MEMO[memo].copy()
        df, computed = UnitStore(folder, tag=tag, legacy_tags=(None,)).get_or_compute(key, compute)
        counts["shared_computed" if computed else "shared_resumed"] += 1
        return df

    with use_kernel(kernel):
        rows = study.compute(specs[unit], params, np.random.default_rng(seed_sequence), shared)
    return rows, counts


def workload(study: Study, preset, params, seed=0, store=None, kernel=None):
    """A study as a :class:`~mixlinreg.runner.Workload`: its units (from ``study.units``), each
    seeded by ``SeedSequence(seed, spawn_key=(crc32(ID), crc32(unit name)))``, stored under
    ``<store>/<ID>-<preset>-<hash of ID, preset, seed and params>``. A study that reads a Figure 2
    store raises :class:`MissingInput` from ``study.units`` when it is absent."""
    from .._kernel_choice import current_kernel
    from ..runner import Workload, store_key

    units = list(study.units(params))
    names = [n for n, _ in units]
    for n in names:  # the rule of Context.unit, checked before anything is computed
        if not isinstance(n, str) or not n or not n[0].isalnum() or any(
                not (c.isalnum() or c in "_.=-") for c in n):
            raise ValueError(f"study {study.id}: unit names must start with a letter or digit and "
                             f"use [A-Za-z0-9_.=-], got {n!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"study {study.id}: unit names must be unique")
    key = {"id": study.id, "preset": preset, "seed": int(seed), "params": params}
    folder_name, tag = store_key(study.id, preset, key)
    folder = None if store is None else Path(store) / folder_name
    return Workload(name=study.id, preset=preset, key=key, units=tuple(names),
                    compute=partial(_study_unit, study, params, int(seed), folder, tag,
                                    dict(units), kernel or current_kernel()),
                    seed=int(seed), pin_blas=False)


def run(study: Study, *, preset="quick", out="figures/checks", store="results/checks", seed=0,
        n_jobs=1, progress=False, config_path=None, backend="loky", scheduler=None,
        control_only=None, stores=None) -> StudyResult:
    """Run ``study`` with its config's ``preset``, then its control; write its outputs and return
    its result.

    The units run on the one runner (:func:`mixlinreg.runner.run`): those already in the store
    (same study, preset, seed and config values) are read back, the others computed (in
    ``n_jobs`` local processes, or on a Dask cluster with ``backend="dask"`` and ``scheduler``;
    the rows do not depend on it) and stored as they finish.

    The control (:mod:`mixlinreg.theory.controls`), when the config declares one, runs the same
    units with the control's overrides (their own store folder; the units keep their names, so
    their streams are the study's: a paired comparison) and is analysed by the same rule; its
    table is ``<out>/<ID>_<preset>_control.csv``. ``control_only`` (a :class:`StudyResult`, the
    study's existing record) runs only the control and returns that record with the control
    joined to it; the record's registration, when it has one, must be the config's.

    ``stores``: the folder of the Figure 2 stores a study reads (its config's
    ``params.figure2_store``, ``figures/stores`` as committed), for stores made elsewhere
    (``mixlinreg reproduce --out DIR``); where they are is not a threshold, so it is outside the
    registration. A required input that is missing raises :class:`MissingInput`.
    """
    from .controls import control_values, judge, registered_in, registration

    cfg = study.config(preset, config_path)
    params = cfg.values
    if stores is not None and "figure2_store" in params["params"]:
        params["params"]["figure2_store"] = str(stores)
    reg = registration(cfg.raw, preset)
    control = cfg.extras["control"]
    ctx = Context(study.id, preset=preset, out=out, store=store, seed=seed, n_jobs=n_jobs,
                  progress=progress)
    ctx.params = params
    if control_only is not None:
        if control_only.registration and control_only.registration != reg:
            raise ValueError(f"study {study.id}: its config changed since its record was made "
                             f"(registration {control_only.registration}, now {reg}): rerun the "
                             f"whole study, not only its control")
        result = control_only
    else:
        result = _measured(study, ctx, params, preset, seed, store, n_jobs, progress, backend,
                           scheduler)
        result.registration = reg
        result.registered_in = registered_in(cfg.path, reg, preset)
        result.version = cfg.extras["version"]
    rule = result.rule_verdict or result.verdict
    caveats = [c for c in result.caveats if not c.startswith(_CONTROL_CAVEAT)]
    if control and "none" not in control and study.kind == CLAIM:
        t0 = time.perf_counter()
        cctx = Context(study.id, preset=preset, out=out, store=store, seed=seed, n_jobs=n_jobs,
                       progress=progress)
        cparams = control_values(params, control)
        cctx.params = cparams
        c = _measured(study, cctx, cparams, preset, seed, store, n_jobs, progress, backend,
                      scheduler, suffix="_control")
        control = {**control, "verdict": c.verdict, "summary": c.summary,
                   "numbers": json.loads(c.numbers.to_json(orient="split", index=False,
                                                           double_precision=15)),
                   "table": c.table, "seconds": round(time.perf_counter() - t0, 1),
                   "registration": reg,
                   "registered_in": registered_in(cfg.path, reg, preset)}
    verdict, why = judge(rule, control, study.kind)
    if why:
        caveats.insert(0, f"{_CONTROL_CAVEAT} {why}")
    elif control.get("verdict"):
        caveats.insert(0, f"{_CONTROL_CAVEAT} the rule was seen to fail where the claim is false: "
                          f"its control ({control['what']}) came out '{control['verdict']}'.")
    elif "none" in control:
        caveats.insert(0, f"{_CONTROL_CAVEAT} no control can exist ({control['none']}): this "
                          f"verdict is not evidence that the rule can fail.")
    result.rule_verdict = rule if study.kind == CLAIM else ""
    result.verdict = verdict
    result.control = control
    result.caveats = caveats
    return result


#: the first words of the caveat that says how the control came out
_CONTROL_CAVEAT = "Control:"


def _measured(study, ctx, params, preset, seed, store, n_jobs, progress, backend, scheduler,
              suffix=""):
    token = _INPUTS.set({})
    try:
        return _run(study, ctx, params, preset, seed, store, n_jobs, progress, backend, scheduler,
                    suffix)
    finally:
        _INPUTS.reset(token)


def _open_inputs(study, params):
    """Open the study's declared inputs (raising :class:`MissingInput` for a required one)."""
    for panel, preset, root, required in (study.reads(params) if study.reads else ()):
        try:
            figure2_store(panel, preset, root)
        except MissingInput:
            if required:
                raise


def _run(study, ctx, params, preset, seed, store, n_jobs, progress, backend, scheduler,
         suffix=""):
    """The study measured at ``params``: its units run, analysed; ``suffix`` (``"_control"``)
    names a control's table, which is the only output a control writes."""
    from .. import runner

    _open_inputs(study, params)  # a missing input raises MissingInput: not a verdict
    wl = workload(study, preset, params, seed, store)
    rows, s = runner.run(wl, store, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                         progress=progress, desc=f"{study.id}/{preset}{suffix}")
    ctx.units_computed = s["units_run"] + sum(i.get("shared_computed", 0) for i in s["infos"])
    ctx.units_resumed = s["units_skipped"] + s["units_by_others"] + sum(
        i.get("shared_resumed", 0) for i in s["infos"])
    table = pd.concat([rows[u].assign(unit=u) for u in wl.units], ignore_index=True)
    v = study.analyze(table, params, lambda key: unit_rng(seed, study.id, "analyze_" + key))
    if suffix:  # a control: its table (the study's own, if it makes one), no figure
        own = v.tables.get(".csv", table)
        table_path = ctx.write_table(own, suffix + ".csv")
        return ctx.result(title=study.title, claim=study.claim, location=study.location,
                          verdict=v.verdict, summary=v.summary, numbers=v.numbers, caveats=[],
                          table=table_path, kind=study.kind, paper=study.paper, scope=v.scope)
    table_path = ctx.write_table(table)
    for name, df in v.tables.items():
        path = ctx.write_table(df, name)
        if name == ".csv":  # the study's own table, made from the units' rows, replaces them
            table_path = path
    fig_path = ctx.save_figure(study.figure(table, v, params))
    caveats = list(v.caveats) + [f"Sensitivity: {line}" for line in v.sensitivity]
    return ctx.result(title=study.title, claim=study.claim, location=study.location,
                      verdict=v.verdict, summary=v.summary, numbers=v.numbers, caveats=caveats,
                      table=table_path, figure=fig_path, kind=study.kind, paper=study.paper,
                      scope=v.scope, cells=dict(v.cells))
