"""The runner's result store: one CSV per finished unit, written atomically, proven on resume, safe
to share between processes.

:class:`UnitStore` is a folder of units. ``<id>.csv`` holds a unit's rows; ``<id>.check.json``
  (written atomically *after* the CSV) records its sha256, size, row count, columns, the unit it
  belongs to, the store's name and its tag (the config hash). On resume a unit counts as done only
  if its file matches its record and the record names this unit, this store and this config: a
  unit that is truncated, empty, garbage, has other columns or another row count, carries another
  config's tag, or was copied over another unit, swapped with one or copied in from another store
  is reported with a :class:`DamagedUnitWarning` (one line naming the file and why), moved aside
  (``<id>.csv.damaged-<time>``, never deleted) and recomputed. A unit without a record (or with a
  record of an older format that names no unit or no config) is recomputed the same way, unless
  the store can prove it from its rows (a Figure 2 store: every row names its unit and config
  hash): then its record is written (a one-time migration). Records written before the store's
  name was recorded are still read (their tag names the config).
Figure 2's store of one experiment, :class:`mixlinreg.harness.store.ResultStore`, is built on it.

Several processes (``mixlinreg reproduce`` or ``check`` started twice on one store, or workers on
several hosts) share a store safely: a process computes a unit only after *claiming* it with a lock
file ``<id>.lock`` created with ``O_CREAT | O_EXCL`` (holding host, pid, time and a random token);
another process skips a claimed unit, and waits for it at the end. A lock whose process is dead
(same host) or that is older than ``stale_after`` seconds (another host) is broken. Temporary files
carry host and pid in their name; only their owner removes them (or anyone, once the owner is
dead). Writes are ``os.replace`` of a fsynced temporary file, so a reader sees a whole file or none.
A process that waits on another's claim says once which unit, host and pid it waits on and for how
long (on the ``mixlinreg`` logger).

Faults end in one line (a :class:`StoreError`, a ``ValueError`` the CLI prints as one line) that
says what, where and how to resume, and keep the finished units: a damaged or foreign
``manifest.json``, a file where a folder is needed, a full disk while a unit is written
(:class:`StoreWriteError`, also an ``OSError``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import secrets
import time
import warnings
from pathlib import Path

import pandas as pd

from .. import _paths
from .._paths import atomic_write, inside, is_unit_name

#: a lock older than this (seconds) is stale even if its process cannot be checked (other host)
STALE_AFTER = 24 * 3600.0
_HOST = _paths.HOST
#: a wait on another process's claim longer than this (and than twice the longest unit computed
#: so far) says what to do if that process is gone
LONG_WAIT = 600.0
_LONG = "long"  # get_or_compute's state once the long-wait line was said
#: seconds a lock that cannot be read is given for its writer to finish it
_UNREADABLE_GRACE = 30.0
logger = logging.getLogger("mixlinreg")


class DamagedUnitWarning(UserWarning):
    """A stored unit failed its check: it is not counted as done and will be recomputed."""


class StoreError(RuntimeError, ValueError):
    """A store that cannot be used as it is (a damaged or foreign manifest, a file where a folder
    is needed): the message says what, where and how to resume; finished units are kept."""


class StoreWriteError(StoreError, OSError):
    """A unit (or a manifest) could not be written (a full disk, say): the units written before
    are kept and a rerun of the same command resumes."""


def _span(seconds) -> str:
    """``"12 s"``, ``"5 min"``, ``"23.9 h"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def make_folder(folder, what="result store") -> Path:
    """Create ``folder`` and its parents; a file in the way, or a folder that cannot be made, is
    a :class:`StoreError` naming it and how to go on."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()),
                       folder)
        raise StoreError(f"{what}: {blocker} is a file where a folder is needed (for {folder}): "
                         "move it away and run the same command again") from None
    except OSError as exc:
        raise StoreWriteError(f"{what}: cannot create the folder {folder} "
                              f"({exc.strerror or exc}): fix that and run the same command "
                              "again") from None
    return folder


def _write_error(what, where, exc, kept) -> StoreWriteError:
    """One line for a failed write: what, where, that the finished units are kept, how to go on."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    cause = "no space left on the disk (ENOSPC)" if exc.errno == errno.ENOSPC else \
        "the disk quota is exceeded (EDQUOT)" if full else f"{exc.strerror or exc}"
    done = "no unit was finished yet" if kept is None else \
        f"the units finished there ({kept}) are kept"
    err = StoreWriteError(f"result store: {cause} while writing {what} in {where}; {done}: "
                          f"{'free some space' if full else 'fix that'} and run the same command "
                          "again to resume")
    err.errno = exc.errno
    return err


_FILE_MODE = _paths._FILE_MODE


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:  # pragma: no cover
        return True
    return True


def _proc_start(pid: int):
    """When process ``pid`` started (clock ticks since boot: field 22 of ``/proc/<pid>/stat``), or
    ``None`` where that cannot be read (no ``/proc``, or no such process)."""
    try:
        data = Path(f"/proc/{int(pid)}/stat").read_text()
        return int(data.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


#: this machine's boot: a claim made under another boot is dead
_BOOT = _boot_id()
#: the tokens of the claims this process holds (any store object): a lock that names this
#: process's pid with another token was left by an earlier process that had the same pid
_HELD = set()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def clean_temporary_files(folder) -> list:
    """Remove temporary files in ``folder`` whose owner process (on this host) is dead.

    A temporary file of a live process, or of another host, is left alone. Returns the removed paths.
    """
    removed = []
    for p in Path(folder).glob(".*.tmp"):
        parts = p.name.split(".")
        # .<target name>.<host>.<pid>.<random>.tmp; the target name may contain dots
        try:
            host, pid = parts[-4], int(parts[-3])
        except (IndexError, ValueError):
            continue  # not one of ours (an older mixlinreg's): leave it
        if host == _HOST and not _pid_alive(pid):
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass
    return removed


class UnitStore:
    """A folder of units, each a CSV proven by a checksum record; claimable by several processes.

    Parameters
    ----------
    folder : path
        Where the unit files live (created).
    tag : str, optional
        Recorded with every unit and required on read (e.g. the config hash): a unit written for
        another configuration is never counted as done.
    columns : list of str, optional
        Columns every unit must have, in this order.
    legacy_columns : sequence of list of str
        Earlier column layouts that are also accepted (units written before a column was added).
    rows : callable, optional
        ``rows(unit_id) -> int``: the row count a unit must have.
    check : callable, optional
        ``check(unit_id, frame) -> str or None``: an extra check of a parsed unit (used for units
        without a record); returns why it fails, or ``None``.
    read_kw : dict, optional
        Keyword arguments for :func:`pandas.read_csv` when a unit is read.
    legacy_tags : sequence
        Tags of records written before ``tag`` was recorded (``None``) that are still accepted: the
        folder's name already carries the config's hash.
    stale_after : float
        Seconds after which a lock of another host counts as stale.
    name : str, optional
        The store's name, recorded with every unit and required on read (default: the folder's
        name); a unit copied in from another store is never counted as done.
    """

    SUFFIX = ".csv"
    RECORD = ".check.json"
    LOCK = ".lock"

    def __init__(self, folder, *, tag=None, columns=None, legacy_columns=(), rows=None, check=None,
                 read_kw=None, stale_after=STALE_AFTER, legacy_tags=(), name=None):
        self.folder = make_folder(folder)
        self.name = self.folder.name if name is None else str(name)
        self.tag = tag
        self.legacy_tags = tuple(legacy_tags)
        self.columns = None if columns is None else list(columns)
        self._layouts = [] if columns is None else [self.columns] + [list(c) for c in legacy_columns]
        self.rows = rows
        self.check = check
        self.read_kw = dict(read_kw or {})
        self.stale_after = float(stale_after)
        self._longest = 0.0  # seconds of the longest unit this object computed
        self._tokens = {}
        self._warned = set()

    # ------------------------------------------------------------------ paths
    def path(self, unit_id) -> Path:
        if not is_unit_name(unit_id, 200):
            raise ValueError(f"unit id must be non-empty, start with a letter or digit and use "
                             f"[A-Za-z0-9_.=-], got {unit_id!r}")
        return inside(self.folder, self.folder / f"{unit_id}{self.SUFFIX}")

    def record_path(self, unit_id) -> Path:
        return self.folder / f"{unit_id}{self.RECORD}"

    def lock_path(self, unit_id) -> Path:
        return self.folder / f"{unit_id}{self.LOCK}"

    def ids(self) -> list:
        """Ids of the unit files present (verified or not)."""
        return sorted(p.name[:-len(self.SUFFIX)] for p in self.folder.glob(f"*{self.SUFFIX}")
                      if not p.name.startswith("."))

    # ------------------------------------------------------------------ checks
    def _problem_of_frame(self, unit_id, df) -> str | None:
        if self.columns is not None and list(df.columns) not in self._layouts:
            return f"columns {list(df.columns)} instead of {self.columns}"
        if self.rows is not None:
            want = int(self.rows(unit_id))
            if len(df) != want:
                return f"{len(df)} rows instead of {want}"
        if self.check is not None:
            return self.check(unit_id, df)
        return None

    def _parse(self, data: bytes, unit_id):
        """Parse a unit without a record; returns (frame, problem)."""
        import io

        if not data.strip():
            return None, "the file is empty"
        if not data.endswith(b"\n"):
            return None, "the file does not end with a newline (cut off while written?)"
        try:
            text = data.decode()
        except UnicodeDecodeError:
            return None, "the file is not text"
        lines = text.splitlines()
        n_fields = lines[0].count(",")
        if self.columns is None and any(line.count(",") != n_fields for line in lines
                                        if '"' not in line):
            return None, "its lines have different numbers of fields"
        try:
            df = pd.read_csv(io.StringIO(text), **self.read_kw)
        except Exception as exc:  # noqa: BLE001 - any parse failure means damaged
            return None, f"it cannot be read as CSV ({type(exc).__name__}: {exc})"
        if self.columns is None and self.rows is None and len(df) == 0:
            return None, "it has no rows"
        return df, self._problem_of_frame(unit_id, df)

    def problem(self, unit_id, *, migrate=True) -> str | None:
        """Why the stored unit ``unit_id`` cannot be counted as done, or ``None`` if it is proven.

        ``"missing"`` when there is no file. A unit is proven by its checksum record when the
        record matches the file and names this unit, this store (when it names one) and this
        config. A unit without a record, or with an older record that names no unit or no config,
        is proven only by the store's ``check`` of its rows (then its record is written,
        ``migrate=True``); a store without ``check`` cannot tie it to the unit: recomputed.
        """
        path = self.path(unit_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return "missing"
        except IsADirectoryError:
            return "it is a folder, not a file"
        except OSError as exc:
            return f"it cannot be read ({exc.strerror or exc})"
        rec_path = self.record_path(unit_id)
        try:
            rec = json.loads(rec_path.read_text())
        except FileNotFoundError:
            rec = None
        except (ValueError, OSError):
            return f"its checksum record {rec_path.name} is unreadable"
        if rec is not None:
            why = self._record_problem(unit_id, rec, data)
            if why is not None or (rec.get("unit") is not None
                                   and (self.tag is None or rec.get("tag") is not None)):
                return why
        if self.check is None:
            return ("it has no checksum record, so nothing ties it to this unit and store (copied "
                    "in, or cut off between its two writes?)" if rec is None else
                    "its checksum record is of an older format that names no unit or no config")
        df, why = self._parse(data, unit_id)
        if why is not None:
            return why
        if migrate:
            self._write_record(unit_id, data, df)
        return None

    def _record_problem(self, unit_id, rec, data) -> str | None:
        """What is wrong with a unit's record ``rec`` for its bytes ``data`` (None: nothing)."""
        name = self.record_path(unit_id).name
        if not isinstance(rec, dict):
            return f"its checksum record {name} is unreadable"
        if rec.get("sha256") != _sha256(data) or rec.get("bytes") != len(data):
            return (f"its content does not match its checksum record ({len(data)} bytes, "
                    f"{rec.get('bytes')} recorded)")
        if rec.get("unit") is not None and rec.get("unit") != unit_id:
            return (f"its checksum record names unit {rec.get('unit')!r}, not {unit_id!r} (a unit "
                    "copied over another, or two swapped?)")
        if self.tag is not None and rec.get("tag") is not None and rec.get("tag") != self.tag \
                and rec.get("tag") not in self.legacy_tags:
            return f"it belongs to another config (tag {rec.get('tag')!r}, expected {self.tag!r})"
        if rec.get("store") is not None and rec.get("store") != self.name:
            return (f"its checksum record names store {rec.get('store')!r}, not {self.name!r} "
                    "(copied in from another store?)")
        if self.columns is not None and rec.get("columns") not in self._layouts:
            return f"columns {rec.get('columns')} instead of {self.columns}"
        if self.rows is not None and rec.get("rows") != int(self.rows(unit_id)):
            return f"{rec.get('rows')} rows instead of {int(self.rows(unit_id))}"
        return None

    def _write_record(self, unit_id, data: bytes, df):
        rec = dict(unit=unit_id, store=self.name, sha256=_sha256(data), bytes=len(data),
                   rows=int(len(df)), columns=[str(c) for c in df.columns], tag=self.tag)
        try:
            atomic_write(self.record_path(unit_id), json.dumps(rec, indent=1, sort_keys=True))
        except OSError as exc:
            raise _write_error(f"the checksum record of unit {unit_id}", self.folder, exc,
                               self._n_recorded()) from None

    def _n_recorded(self) -> int:
        return sum(1 for _ in self.folder.glob(f"*{self.RECORD}"))

    def _warn(self, unit_id, why):
        key = (unit_id, why)
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(f"result store: unit file {self.path(unit_id)} is damaged ({why}); it is not "
                      "counted as done and will be recomputed", DamagedUnitWarning, stacklevel=3)

    def is_done(self, unit_id, *, warn=True) -> bool:
        why = self.problem(unit_id)
        if why is None:
            return True
        if why != "missing" and warn and self.holder(unit_id) is None:  # (not one being written)
            self._warn(unit_id, why)
        return False

    def done(self, *, warn=True) -> set:
        """Ids of the units whose file is proven (damaged ones are reported, not counted)."""
        return {u for u in self.ids() if self.is_done(u, warn=warn)}

    def damaged(self) -> dict:
        """``{unit id: why}`` of the unit files present that fail their check."""
        out = {}
        for u in self.ids():
            why = self.problem(u, migrate=False)
            if why not in (None, "missing"):
                out[u] = why
        return out

    def set_aside(self, unit_id) -> Path | None:
        """Move a damaged unit file to ``<id>.csv.damaged-<time>-<pid>`` (never deleted); hold the
        unit's claim when calling this."""
        path = self.path(unit_id)
        dest = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        self.record_path(unit_id).unlink(missing_ok=True)
        try:
            os.replace(path, dest)
        except FileNotFoundError:
            return None
        return dest

    # ------------------------------------------------------------------ read / write
    def read(self, unit_id) -> pd.DataFrame:
        return pd.read_csv(self.path(unit_id), **self.read_kw)

    def write(self, unit_id, rows: pd.DataFrame, **to_csv_kw):
        """Write a unit (CSV first, then its checksum record, both atomically)."""
        if not isinstance(rows, pd.DataFrame):
            raise TypeError(f"a unit's rows must be a pandas DataFrame, got {type(rows).__name__}")
        why = self._problem_of_frame(unit_id, rows)
        if why is not None:
            raise ValueError(f"refusing to store unit {unit_id!r}: {why}")
        data = rows.to_csv(index=False, **to_csv_kw).encode()
        try:
            atomic_write(self.path(unit_id), data)
        except OSError as exc:
            raise _write_error(f"unit {unit_id}", self.folder, exc, self._n_recorded()) from None
        self._write_record(unit_id, data, rows)

    # ------------------------------------------------------------------ claims
    def _lock_info(self, unit_id):
        lock = self.lock_path(unit_id)
        try:
            return json.loads(lock.read_text())
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise StoreError(f"{lock} is a folder, where unit {unit_id}'s lock file belongs: "
                             f"move it out of the store (or remove it) and run again") from None
        except (ValueError, OSError):
            return {}  # being written, or damaged: judged by its age

    def _stale(self, info, lock: Path) -> bool:
        """Whether the claim ``info`` (read from ``lock``) is dead. On this host a claim is its
        process: the pid, that process's start time and the machine's boot. A claim naming this
        process's own pid but a token it does not hold was left by an earlier process with the same
        pid (a restarted container runs as pid 1 again): dead, never waited on. A live pid that
        started at another time is another process: dead. A claim without a start time (made by an
        older mixlinreg) whose pid is alive, and any claim of another host, is dead after
        ``stale_after`` seconds."""
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return False
        if not info:  # unreadable: give its writer a few seconds
            return age > _UNREADABLE_GRACE
        pid = info.get("pid")
        if info.get("host") == _HOST and isinstance(pid, int) and not isinstance(pid, bool):
            if pid == os.getpid():
                return info.get("token") not in _HELD
            if not _pid_alive(pid):
                return True
            if info.get("boot") and _BOOT and info["boot"] != _BOOT:
                return True  # made before this machine last booted
            start = info.get("start")
            if isinstance(start, int):
                now = _proc_start(pid)
                return now is not None and now != start
        return age > self.stale_after

    def claim(self, unit_id) -> bool:
        """Try to claim ``unit_id`` for this process (atomic); ``False`` if another live process
        holds it. A stale lock is broken first."""
        lock = self.lock_path(unit_id)
        for _ in range(3):
            token = secrets.token_hex(8)
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, _FILE_MODE)
            except FileExistsError:
                info = self._lock_info(unit_id)
                if info is None:
                    continue  # released meanwhile: try again
                if not self._stale(info, lock):
                    return False
                self._break(lock, info)
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(dict(host=_HOST, pid=os.getpid(), time=time.time(), token=token,
                               start=_proc_start(os.getpid()), boot=_BOOT), fh)
            self._tokens[unit_id] = token
            _HELD.add(token)
            return True
        return False

    def _break(self, lock: Path, info):
        """Break a stale lock: rename it away (atomic), then check that what was moved is the lock
        judged stale; a fresh lock moved by a race is put back."""
        aside = lock.with_name(f"{lock.name}.stale-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            os.rename(lock, aside)
        except FileNotFoundError:
            return
        try:
            moved = json.loads(aside.read_text())
        except (ValueError, OSError):
            moved = {}
        if info and moved.get("token") != info.get("token"):
            try:  # not the stale one: restore it unless a new lock exists already
                os.link(aside, lock)
            except OSError:
                pass
        aside.unlink(missing_ok=True)

    def release(self, unit_id):
        """Remove this process's lock on ``unit_id`` (a lock of another process is left alone)."""
        token = self._tokens.pop(unit_id, None)
        _HELD.discard(token)
        info = self._lock_info(unit_id)
        if token is not None and info and info.get("token") == token:
            self.lock_path(unit_id).unlink(missing_ok=True)

    def wait_line(self, unit_id) -> str | None:
        """One line on the claim another process holds on ``unit_id``: which unit, host and pid,
        since when, and how long a wait for it lasts at most (``None``: no live claim)."""
        lock = self.lock_path(unit_id)
        info = self._lock_info(unit_id)
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return None
        if info is None or self._stale(info, lock):
            return None
        if not info:
            return (f"unit {unit_id}: its lock {lock} is unreadable (being written, or damaged); "
                    f"waiting at most {_span(_UNREADABLE_GRACE - age)} more, then taking it over")
        who = f"pid {info.get('pid')} on host {info.get('host')}"
        if info.get("host") == _HOST and isinstance(info.get("start"), int):
            return (f"unit {unit_id} is being computed by {who} (this host), claimed "
                    f"{_span(age)} ago; waiting until it finishes (taken over at once if that "
                    "process ends)")
        if info.get("host") == _HOST:
            return (f"unit {unit_id} is claimed by {who} (this host; a claim of an older "
                    f"mixlinreg, without the process's start time), claimed {_span(age)} ago; "
                    f"waiting until it finishes, at most {_span(self.stale_after - age)} more "
                    f"(remove {lock} to take it over now)")
        return (f"unit {unit_id} is being computed by {who}, claimed {_span(age)} ago; waiting "
                f"until it finishes, at most {_span(self.stale_after - age)} more (a claim older "
                f"than {_span(self.stale_after)} is taken over; remove {lock} to take it over now)")

    def long_wait_line(self, unit_id, waited) -> str:
        """What to do about a wait on ``unit_id`` that has lasted ``waited`` seconds, longer than
        twice the longest unit this store computed in this process (and :data:`LONG_WAIT`)."""
        info = self._lock_info(unit_id) or {}
        return (f"still waiting for unit {unit_id} after {_span(waited)} (the longest unit computed "
                f"here took {_span(self._longest)}): if pid {info.get('pid')} on host "
                f"{info.get('host')} is not running mixlinreg any more, stop this run, remove "
                f"{self.lock_path(unit_id)} and run the same command again (finished units are "
                f"kept)")

    def holder(self, unit_id):
        """The live claim on ``unit_id`` (``{host, pid, time}``), or ``None``."""
        info = self._lock_info(unit_id)
        if info is None or self._stale(info, self.lock_path(unit_id)):
            return None
        return info

    # ------------------------------------------------------------------ compute once
    def get_or_compute(self, unit_id, compute, *, poll=0.5, to_csv_kw=None):
        """Rows of ``unit_id``: read if proven, else claim, ``compute()``, write, read back.

        If another process holds the claim, wait for it (polling every ``poll`` seconds) and read
        its result. Returns ``(frame, computed)``.
        """
        announced = False
        while True:
            if self.is_done(unit_id):
                return self.read(unit_id), False
            if self.claim(unit_id):
                try:
                    if self.is_done(unit_id, warn=False):  # finished by another process meanwhile
                        return self.read(unit_id), False
                    self.set_aside(unit_id)
                    t0 = time.perf_counter()
                    df = compute()
                    self._longest = max(self._longest, time.perf_counter() - t0)
                    if not isinstance(df, pd.DataFrame):
                        raise TypeError(f"unit {unit_id!r} must return a pandas DataFrame, "
                                        f"got {type(df).__name__}")
                    self.write(unit_id, df, **(to_csv_kw or {}))
                    return self.read(unit_id), True  # same types whether fresh or resumed
                finally:
                    self.release(unit_id)
            line = None if announced else self.wait_line(unit_id)
            if line:
                announced = True
                since = time.perf_counter()
                logger.warning("result store %s: %s", self.name, line)
            if announced and announced is not _LONG and time.perf_counter() - since > max(
                    LONG_WAIT, 2 * self._longest):
                announced = _LONG
                logger.warning("result store %s: %s", self.name, self.long_wait_line(
                    unit_id, time.perf_counter() - since))
            time.sleep(poll)
