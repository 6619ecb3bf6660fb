"""What every theory study shares: the verdict vocabulary, the result record, seeds and a
resumable per-unit store.

A study (a record: :mod:`mixlinreg.theory.study`) splits its work into *units* (one grid point, one
seed, ...); the driver computes each unit through :meth:`Context.unit`, which writes the unit's
tidy rows atomically to ``<store>/<ID>-<preset>-<hash>/<unit>.csv`` and reads them back on a rerun,
so an interrupted ``mixlinreg check`` resumes without redoing finished units. The driver then
writes the study's tidy table and figure under ``<out>`` and returns a :class:`StudyResult` with
the verdict. A study's values, presets among them, live in its config, never here.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_bool
from ..harness.store import UnitStore
from .._paths import atomic_write, plain_name
from ..config import PRESETS
from ..stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED

VERDICTS = (HOLDS, CAVEAT, NOT_SUPPORTED, INCONCLUSIVE)

# A record is a claim of the paper (with a verdict) or a reproducibility note: a comparison that is
# not a claim of the paper (the text against the authors' code, say), with its own outcomes.
CLAIM, NOTE = "claim", "note"
KINDS = (CLAIM, NOTE)
SAME = "same results"  # every paired interval inside the stated margin
DIFFER = "results differ"  # some paired interval excludes no change
UNDETERMINED = "undetermined"  # neither: too few trials to tell
NOTE_OUTCOMES = (SAME, DIFFER, UNDETERMINED)

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

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
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
        return json.dumps(d, indent=1, default=_json_default)

    @classmethod
    def from_json(cls, text: str) -> "StudyResult":
        d = json.loads(text)
        num = d.pop("numbers")
        d["numbers"] = pd.DataFrame(num["data"], columns=num["columns"])
        return cls(**d)


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def _study_code(study_id: str) -> int:
    return zlib.crc32(study_id.encode())


def params_hash(params: dict) -> str:
    """Short stable hash of a study's parameters (JSON, sorted keys)."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass
class Context:
    """Where and how a study runs.

    Parameters
    ----------
    study_id : str
    preset : {"smoke", "quick", "paper"}
        ``smoke`` is for the test suite (seconds), ``quick`` for ``mixlinreg check --preset quick``
        (all 12 IDs in about 4 minutes on two cores once numba has compiled, measured for the
        README), ``paper`` as large as the verdicts need (``"full"``, its former name, is read as
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
        h = params_hash({"id": self.study_id, "preset": self.preset, "seed": int(self.seed),
                         "params": self.params})
        return self.store / f"{self.study_id}-{self.preset}-{h}"

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
        df, computed = UnitStore(folder).get_or_compute(name, compute)
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
        if "location" not in kw:  # the registry's (mixlinreg.theory.location), both versions
            from . import location

            kw["location"] = location(self.study_id)
        kw.setdefault("command", f"mixlinreg check {self.study_id} --preset {self.preset}"
                      + (f" --seed {self.seed}" if self.seed else "")
                      + ("" if self.out == Path("results/checks") else f" --out {self.out}"))
        for key in ("table", "figure"):
            if key in kw and kw[key]:
                kw[key] = str(kw[key])
        return StudyResult(**kw)
