"""One runner for every workload: units -> a resumable, claimable store -> rows.

A workload is a record (:class:`Workload`): its name and preset, the values that can change a
result (``key``), its units (plain names, in table order) and how one unit computes its rows
(``compute(unit, seed_sequence)``). :func:`run` computes the units the store does not hold yet and
returns every unit's rows. What it does is the same for every workload (the Figure 2 panels, the
theory studies, ``compare`` and ``digits``):

* **one seed rule**: unit ``u`` gets ``SeedSequence(workload.seed, spawn_key=workload.seed_key(u))``,
  keyed by names or the unit's coordinates, never by its position or the worker that runs it;
* **one store-key recipe**: the store folder is ``<root>/<name>-<preset>-<h>`` with ``h`` the first
  12 hex digits of the SHA-256 of ``key`` as compact, sorted JSON (:func:`store_key`); every unit
  file carries a checksum record tagged with the whole hash, so a unit of another config is
  never counted as done;
* **claims**: a unit is claimed (a lock file) before it is computed, so several processes (or
  machines sharing a folder) can run one workload at once without computing a unit twice; units
  claimed by another live process are waited for, and taken over if it dies;
* **where**: ``backend="loky"`` (``n_jobs`` local processes, each with ``cores // n_jobs`` numba
  threads and single-threaded BLAS), ``"dask"`` (an existing cluster: ``scheduler`` is its address
  or a ``dask.distributed.Client``) or ``"sequential"``; results do not depend on any of it;
* **progress**: one tqdm bar per workload;
* **sized first**: units may be named on demand (:class:`Units`: a grid of 1e9 units costs
  nothing until a unit runs), and a workload that can estimate its largest unit's memory
  (``memory``) is refused before any unit runs when that unit does not fit
  (:class:`~mixlinreg._memory.UnitMemoryError`, naming the setting and the estimate), or runs
  fewer units at once when only several at once do not fit.

A workload that reads another's results declares them in ``reads`` (a study of a Figure 2 panel
reads that panel's store); :func:`run` checks them before any work.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import resource
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .._firstuse import compile_once_first
from .._memory import UnitMemoryError, available_bytes, format_bytes
from .._paths import inside, is_unit_name, plain_name
from .._validation import check_bool

__all__ = ["Workload", "Units", "Numbered", "run", "store_key", "json_default", "BACKENDS", "UnitMemoryError"]

logger = logging.getLogger("mixlinreg")

#: where units can run
BACKENDS = ("loky", "dask", "sequential")


def json_default(obj):
    """JSON for numpy scalars and arrays and paths (``json.dumps(..., default=json_default)``):
    what a workload key or a study record may hold."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable (a key or record must hold plain values): "
                    f"{type(obj).__name__}")


def store_key(name: str, preset: str, key: dict) -> tuple:
    """``(folder name, tag)`` of a workload's store: ``<name>-<preset>-<first 12 of tag>``, the tag
    being the SHA-256 of ``key`` as compact JSON with sorted keys.

    >>> store_key("demo", "smoke", {"a": 1})[0]
    'demo-smoke-015abd7f5cc5'
    """
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"), default=json_default)
    tag = hashlib.sha256(blob.encode()).hexdigest()
    return f"{plain_name('workload name', name)}-{plain_name('preset', preset)}-{tag[:12]}", tag


def name_key(workload_name: str, unit: str) -> tuple:
    """The default seed key of a unit: ``(crc32(workload name), crc32(unit name))``."""
    return (zlib.crc32(workload_name.encode()), zlib.crc32(unit.encode()))


class Units(Sequence):
    """Unit names made on demand: ``count`` units, the i-th named ``name(i)``, found back by
    ``index(name)`` (an int, or ``None`` for a name that is not one of them). Holds no list, so
    a workload of any size is described in O(1) memory; ``name`` and ``index`` must be picklable
    (module-level functions, :func:`functools.partial` or bound methods of picklable objects) for
    worker processes. ``index(name(i)) == i`` must hold (names unique and plain, as for a tuple).
    """

    def __init__(self, count, name, index):
        self.count, self._name, self._index = int(count), name, index

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._name(j) for j in range(*i.indices(self.count))]
        i = int(i)
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(f"unit index {i} out of range (there are {self.count} units)")
        return self._name(i)

    def __iter__(self):
        return (self._name(i) for i in range(self.count))

    def __contains__(self, name):
        return isinstance(name, str) and self._index(name) is not None

    def index(self, name, *_):
        i = self._index(name) if isinstance(name, str) else None
        if i is None:
            raise ValueError(f"{name!r} is not one of the {self.count} units")
        return i


class Numbered(Units):
    """Units ``<prefix><i:04d>`` for each prefix in order and ``i < count`` (``compare``'s
    ``fig2_k2_s0000``, ``digits``' ``seed0000``), named on demand (no two prefixes may make the
    same name, e.g. ``"k2"`` and ``"k"``).

    >>> u = Numbered(["a_s", "b_s"], 3)
    >>> len(u), u[4], u.split("b_s0001"), "b_s1" in u
    (6, 'b_s0001', (1, 1), False)
    """

    def __init__(self, prefixes, count):
        self.prefixes, self.per = tuple(prefixes), int(count)
        self._at = {p: j for j, p in enumerate(self.prefixes)}
        super().__init__(len(self.prefixes) * self.per, self._name_of, self._index_of)

    def _name_of(self, i):
        j, k = divmod(i, self.per)
        return f"{self.prefixes[j]}{k:04d}"

    def split(self, name):
        """``(prefix position, number)`` of the unit ``name``, or ``None``."""
        if not isinstance(name, str):
            return None
        for cut in range(len(name) - 4, -1, -1):  # a prefix may end in a digit itself
            head, tail = name[:cut], name[cut:]
            if head in self._at and tail.isdigit() and f"{int(tail):04d}" == tail \
                    and int(tail) < self.per:
                return self._at[head], int(tail)
        return None

    def _index_of(self, name):
        jk = self.split(name)
        return None if jk is None else jk[0] * self.per + jk[1]

    def mapping(self, values):
        """``unit -> (values[prefix position], number)``, made on demand (picklable)."""
        return _NumberedMap(self, tuple(values))


class _NumberedMap:
    def __init__(self, units, values):
        self.units, self.values = units, values

    def __getitem__(self, name):
        jk = self.units.split(name)
        if jk is None:
            raise KeyError(name)
        return self.values[jk[0]], jk[1]


@dataclass(frozen=True)
class Workload:
    """A workload as a record.

    Attributes
    ----------
    name, preset : str
        Plain names; with ``key`` they name the store folder (:func:`store_key`).
    key : dict
        Everything that can change a result (config values, root seed), as plain JSON values.
    units : tuple of str or Units
        The units' names, in the order of the table (plain names, unique); a :class:`Units`
        names them on demand (a huge grid is never materialised).
    compute : callable
        ``compute(unit, seed_sequence) -> DataFrame`` or ``(DataFrame, info dict)``; must be
        picklable (a module-level function, or a :func:`functools.partial` of one) to run in
        worker processes or on a Dask cluster.
    seed : int
        The root seed of the seed rule.
    seed_key : callable, optional
        ``seed_key(unit) -> tuple of int``; default :func:`name_key` of the workload's name.
    open_store : callable, optional
        ``open_store(root, clean) -> UnitStore`` for a workload whose store checks more (the Figure
        2 panels: columns, row counts, a manifest); default a :class:`~mixlinreg.runner.store.UnitStore`
        at ``<root>/<folder>`` tagged with the key's hash.
    rows : callable, optional
        ``rows(unit) -> int``: the row count a stored unit must have (a unit with another count,
        say one stored before a method was added, is recomputed, never counted as done).
    to_csv_kw : dict
        How rows are written (``float_format="%.17g"`` keeps every bit of a float64).
    reads : tuple of callables
        Inputs from other workloads' stores, each ``check() -> None`` raising a
        ``FileNotFoundError`` that names the command that makes them.
    pin_blas : bool
        Run each unit with single-threaded BLAS (default): rows then do not depend on the number
        of workers. The theory studies keep BLAS as the caller has it when they run in this
        process (as they always have: their committed tables were made so; a BLAS thread count
        moves some of their numbers by about 1e-11 relative, never a verdict).
    former : tuple of (folder name, tag)
        The store's names under earlier store-key recipes: a store found under one of them (and
        not under the current name) is migrated (records retagged, folder renamed), never
        recomputed.
    memory : callable, optional
        ``memory() -> (bytes, what, hint)``: the estimated memory of the workload's largest unit,
        its setting in words and what to lower. :func:`run` refuses the run before any unit
        starts when that unit does not fit in the memory available, and runs fewer units at once
        when only that many fit.
    device_memory : callable, optional
        ``device_memory() -> (bytes, free bytes, device, what, hint) or None``: the same for an
        accelerator's memory (the JAX harness on a GPU): the run is refused before any unit
        starts when one unit does not fit there, and fewer units run at once (in threads) when
        only that many fit; ``None`` where the device does not report its memory.
    """

    name: str
    preset: str
    key: dict
    units: tuple
    compute: Callable
    seed: int = 0
    seed_key: Callable | None = None
    open_store: Callable | None = None
    rows: Callable | None = None
    to_csv_kw: dict = field(default_factory=dict)
    reads: tuple = ()
    pin_blas: bool = True
    former: tuple = ()
    memory: Callable | None = None
    device_memory: Callable | None = None

    def __post_init__(self):
        plain_name("workload name", self.name)
        plain_name("preset", self.preset)
        check_bool("pin_blas", self.pin_blas)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if isinstance(self.units, Units):
            return  # named on demand: checked as each unit is stored
        names = list(self.units)
        for u in names:  # a unit's name becomes a file name: never a path
            if not is_unit_name(u, 100):
                raise ValueError(f"workload {self.name}: unit names must start with a letter or "
                                 f"digit and use [A-Za-z0-9_.=-] (at most 100 characters), got {u!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"workload {self.name}: unit names must be unique")

    @property
    def folder(self) -> str:
        return store_key(self.name, self.preset, self.key)[0]

    @property
    def tag(self) -> str:
        return store_key(self.name, self.preset, self.key)[1]

    def seed_sequence(self, unit: str) -> np.random.SeedSequence:
        """The unit's SeedSequence: the one seed rule."""
        key = self.seed_key(unit) if self.seed_key is not None else name_key(self.name, unit)
        return np.random.SeedSequence(int(self.seed), spawn_key=tuple(int(k) for k in key))

    def store(self, root, *, clean=False):
        """The workload's store under ``root`` (created; ``clean``: remove temporary files left
        by dead processes of this host)."""
        clean = check_bool("clean", clean)
        if self.open_store is not None:
            return self.open_store(root, clean)
        from .store import UnitStore, clean_temporary_files

        folder = inside(root, Path(root) / self.folder)
        if not folder.exists():
            _migrate(root, folder, self.former, self.tag)
        store = UnitStore(folder, tag=self.tag, legacy_tags=(None,), rows=self.rows)
        if clean:
            clean_temporary_files(folder)
        return store

    def compute_unit(self, unit: str):
        """``(rows, info)`` of one unit, computed here."""
        t0 = time.perf_counter()
        try:
            out = self.compute(unit, self.seed_sequence(unit))
        except UnitMemoryError:
            raise
        except MemoryError as exc:  # numpy's _ArrayMemoryError included
            hint = self.memory()[2] if self.memory is not None else \
                "lower the problem size of its config"
            raise UnitMemoryError(
                f"{self.name}/{self.preset}: unit {unit} ran out of memory "
                f"({str(exc).splitlines()[0] if str(exc) else 'MemoryError'}); the units finished "
                f"before are kept: {hint}, or run fewer units at once (--n-jobs)") from None
        rows, info = out if isinstance(out, tuple) else (out, {})
        if not isinstance(rows, pd.DataFrame):
            raise TypeError(f"workload {self.name}: unit {unit!r} must return a pandas DataFrame, "
                            f"got {type(rows).__name__}")
        info = dict(info)
        info.setdefault("unit", unit)
        info.setdefault("seconds", time.perf_counter() - t0)
        info.setdefault("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
        return rows, info


def _migrate(root, folder, former, tag):
    """Move a store made under a former store-key recipe to ``folder``: its units' checksum
    records take the current ``tag`` (their data, checked by SHA-256, is untouched)."""
    from .._paths import atomic_write

    for name, old_tag in former:
        old = Path(root) / plain_name("former store", name)
        if not old.is_dir():
            continue
        for rec_path in old.glob("*.check.json"):
            try:
                rec = json.loads(rec_path.read_text())
            except (OSError, ValueError):
                continue  # an unreadable record: the unit is checked (and recomputed) as damaged
            if isinstance(rec, dict) and rec.get("tag") in (old_tag, None):
                rec["tag"] = tag
                if "store" in rec:  # the folder's new name
                    rec["store"] = folder.name
                atomic_write(rec_path, json.dumps(rec, indent=1, sort_keys=True))
        try:
            old.rename(folder)
        except FileNotFoundError:  # another process migrated it meanwhile
            pass
        return


def _work(workload, root, unit, threads, pin_blas=True):
    """Worker: claim the unit, run it with ``threads`` numba threads (BLAS single-threaded unless
    the caller pinned it), write it to the store, report. A unit claimed by another process (or
    finished by one meanwhile) is skipped: the info says ``skipped="claimed"`` or ``"done"``."""
    import numba
    from threadpoolctl import threadpool_limits

    store = workload.store(root)
    store.path(unit)  # a plain name (units named on demand are checked here)
    if not store.claim(unit):
        return dict(unit=unit, skipped="claimed")
    try:
        if store.is_done(unit, warn=False):
            return dict(unit=unit, skipped="done")
        store.set_aside(unit)  # a damaged file is kept aside, never deleted
        before = numba.get_num_threads()
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
        try:
            if pin_blas and workload.pin_blas:
                with threadpool_limits(limits=1):
                    rows, info = workload.compute_unit(unit)
            else:
                rows, info = workload.compute_unit(unit)
        finally:
            numba.set_num_threads(before)
        owner = _WATCHED.get("owner")
        if owner and not owner_alive(*owner):  # the dispatching process died meanwhile
            os._exit(70)
        store.write(unit, rows, **workload.to_csv_kw)
    finally:
        store.release(unit)
    return info


def _in_memory(workload, unit, threads):
    """Worker without a store: the unit's rows and info."""
    from threadpoolctl import threadpool_limits

    if workload.pin_blas:
        with threadpool_limits(limits=1):
            rows, info = workload.compute_unit(unit)
    else:
        rows, info = workload.compute_unit(unit)
    info["rows"] = rows
    return info


def _dispatch(fn, items, *, n_jobs, backend, threads, thread_workers=1):
    """Yield ``fn(item)``'s results in completion order on the chosen backend; ``items`` may be
    a generator (taken as the workers need them: a huge workload is never listed)."""
    import joblib

    if thread_workers > 1:  # e.g. JAX on a GPU: several units at once, in threads of this process
        yield from _in_threads(fn, items, thread_workers)
        return
    if backend == "sequential" or (backend == "loky" and n_jobs == 1):
        for it in items:
            yield fn(it)
        return
    items = yield from compile_once_first(fn, items, n_jobs=n_jobs, backend=backend)
    if backend == "loky":  # local workers end with this process (no orphans after a kill -9)
        fn = _Owned(fn)
    tasks = (joblib.delayed(fn)(it) for it in items)
    if backend == "dask":
        cfg = joblib.parallel_config(backend="dask")
    else:
        cfg = joblib.parallel_config(backend="loky", inner_max_num_threads=threads)
    with cfg:
        par = joblib.Parallel(n_jobs=n_jobs if backend == "loky" else -1,
                              return_as="generator_unordered")
        yield from par(tasks)


def _in_threads(fn, items, workers):
    """``fn(item, True)`` in ``workers`` threads, at most twice as many submitted at once."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from threadpoolctl import threadpool_limits

    pool = ThreadPoolExecutor(max_workers=workers)
    pending = set()
    try:
        with threadpool_limits(limits=1):
            for it in items:
                pending.add(pool.submit(fn, it, True))
                if len(pending) >= 2 * workers:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        yield fut.result()
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
    finally:  # on an error or Ctrl-C, units not started are not started
        pool.shutdown(wait=True, cancel_futures=True)


class _Owned:
    """``fn`` run in a local worker process (loky) that ends with the process that dispatched it:
    no orphan keeps computing and writing units after its parent was killed (``kill -9``)."""

    def __init__(self, fn):
        from .store import _proc_start

        self.fn = fn
        self.owner = (os.getpid(), _proc_start(os.getpid()))

    def __call__(self, item, *args):
        watch_owner(*self.owner)
        return self.fn(item, *args)


#: the owner this worker process watches (pid, start), once per process
_WATCHED = {}


def owner_alive(pid, start) -> bool:
    """Whether the process ``pid`` that started at ``start`` (``/proc`` clock ticks; None: not
    known) still runs and is not a zombie."""
    from .store import _pid_alive, _proc_start

    if not _pid_alive(pid):
        return False
    try:
        state = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except (OSError, IndexError):
        pass
    now = _proc_start(pid)
    return start is None or now is None or now == start


def watch_owner(pid, start, every=1.0):
    """In a worker process: end this process (exit status 70) within about ``every`` seconds of
    the death of the process ``(pid, start)`` that gave it work, or of a change of its parent
    (it was re-parented: its parent died). Nothing in that process itself, or once watching."""
    import threading

    if pid == os.getpid() or _WATCHED.get("owner") == (pid, start):
        return
    _WATCHED["owner"] = (pid, start)
    parent = os.getppid()

    def watch():
        while _WATCHED.get("owner") == (pid, start):
            time.sleep(every)
            if not owner_alive(pid, start) or (parent == pid and os.getppid() != parent):
                logger.warning("mixlinreg worker %d: the process that started it (pid %d) is gone; "
                               "stopping (its finished units are kept, an unfinished one is "
                               "computed again by the next run)", os.getpid(), pid)
                os._exit(70)

    threading.Thread(target=watch, daemon=True, name="mixlinreg-owner-watch").start()


class _Call:
    """A picklable ``item -> worker(workload, ..., item, ...)`` for joblib and Dask."""

    def __init__(self, worker, *args, **kw):
        self.worker, self.args, self.kw = worker, args, kw

    def __call__(self, item, in_thread=False):
        if self.worker is _work:
            workload, root, threads = self.args
            return _work(workload, root, item, threads, pin_blas=not in_thread)
        workload, threads = self.args
        return _in_memory(workload, item, threads)


def check_backend(n_jobs, backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    return int(n_jobs)


class _UnitBar:
    """The runner's tqdm bar, with an estimate of the time left that a slow first unit (one that
    compiled the kernels, say) cannot throw off: shown once two units of this run are finished,
    as the units left x the median seconds of a finished unit / the workers. tqdm's own estimate
    extrapolates the rate since the start, which after a first unit of minutes of compiling
    promised hours for a run of minutes."""

    FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
    #: seconds between two refreshes of the running unit's iteration count
    REFRESH = 0.5

    def __init__(self, bar, n_jobs):
        self.bar, self.n_jobs, self.seconds = bar, max(1, int(n_jobs)), []
        self.bar.set_postfix_str("time left: after 2 units", refresh=False)
        self._shown = -float("inf")

    def iteration(self, done):
        """A unit running in this process reports ``done`` iterations of its kernel call
        (:mod:`mixlinreg._progress`): the bar says so, so that it moves during the first unit
        (units in worker processes report nothing)."""
        now = time.perf_counter()
        if now - self._shown < self.REFRESH:
            return
        self._shown = now
        self.bar.set_postfix_str(f"{self.left(self.bar.n)}; running: iteration {int(done)} of a "
                                 f"kernel call", refresh=True)

    def update(self, n=1, info=None):
        if info is not None and isinstance(info.get("seconds"), (int, float)):
            self.seconds.append(float(info["seconds"]))
        self.bar.set_postfix_str(self.left(self.bar.n + n), refresh=False)
        self.bar.update(n)

    def left(self, done):
        """The estimate's words (the postfix) once ``done`` units are finished."""
        if len(self.seconds) < 2:
            return "time left: after 2 units"
        remaining = max(0, (self.bar.total or 0) - done)
        eta = remaining * float(np.median(self.seconds)) / self.n_jobs
        return f"about {self.bar.format_interval(eta)} left"

    def close(self):
        self.bar.close()


def _fill(workload, root, store, todo, go, poll, infos, by_others, report, bar):
    """Compute the units ``todo`` (any iterable) into ``store``; wait for those other processes
    hold, saying once per unit which unit, host and pid the wait is on and for how long, and
    take over a unit whose process died or whose claim went stale; a wait longer than
    :data:`~mixlinreg.runner.store.LONG_WAIT` and twice the longest unit so far says what to do
    if the claiming process is gone."""
    from .store import LONG_WAIT

    announced, long_said = {}, set()
    while True:
        waiting = []
        for info in _dispatch(_Call(_work, workload, root, go["threads"]), todo, **go):
            if info.get("skipped") == "claimed":
                waiting.append(info["unit"])
                continue
            if info.get("skipped") == "done":
                by_others.add(info["unit"])
            else:
                infos.append(info)
            report(info["unit"], info)
            bar.update(1, info)
        todo = waiting
        while todo:
            longest = max((i.get("seconds", 0.0) for i in infos), default=0.0)
            for u in todo:
                line = None if u in announced else store.wait_line(u)
                if line:
                    announced[u] = time.perf_counter()
                    logger.warning("%s/%s: %s", workload.name, workload.preset, line)
                elif u in announced and u not in long_said and time.perf_counter() - announced[u] \
                        > max(LONG_WAIT, 2 * longest):
                    long_said.add(u)
                    logger.warning("%s/%s: %s", workload.name, workload.preset,
                                   store.long_wait_line(u, time.perf_counter() - announced[u]))
            time.sleep(poll)
            finished = {u for u in todo if store.is_done(u, warn=False)}
            by_others |= finished
            for u in sorted(finished):
                report(u, {"unit": u, "skipped": "done"})
            bar.update(len(finished))
            todo = [u for u in todo if u not in finished]
            if any(store.holder(u) is None for u in todo):
                break  # dispatch again: a free unit is claimed, one still held comes back "claimed"
        if not todo:
            return


#: memory of a worker process before its unit (Python, numpy, numba, pandas)
_WORKER_BYTES = 300 * 2**20


def _fit_memory(workload, backend, n_jobs, thread_workers):
    """Refuse ``workload`` when its largest unit does not fit in the memory available (before
    any unit runs); run fewer units at once when only that many fit (saying so). Returns
    ``(n_jobs, thread_workers, bytes of the largest unit or None)``."""
    if backend == "dask":  # a cluster's workers: not this machine
        return n_jobs, thread_workers, None
    where = f"{workload.name}/{workload.preset}"
    thread_workers = _fit_device(workload, where, thread_workers)
    if workload.memory is None:
        return n_jobs, thread_workers, None
    need, what, hint = workload.memory()
    room = available_bytes()
    if room is None:
        return n_jobs, thread_workers, need
    if need > room:
        raise UnitMemoryError(f"{where}: a unit needs about {format_bytes(need)} ({what}) but "
                              f"{format_bytes(room)} are available: {hint}")
    procs = n_jobs if backend == "loky" else 1
    at_once = max(procs, thread_workers)
    each = need + (_WORKER_BYTES if procs > 1 else 0)
    fit = max(1, int(room // each))
    if at_once > fit:
        logger.warning("%s: %d units at once would need about %s (%s each) but %s are available: "
                       "running %d at once", where, at_once, format_bytes(at_once * each),
                       format_bytes(each), format_bytes(room), fit)
        n_jobs, thread_workers = min(n_jobs, fit), min(thread_workers, fit)
    return n_jobs, thread_workers, need


def _fit_device(workload, where, thread_workers):
    """Refuse ``workload`` when its largest unit does not fit in its accelerator's free memory;
    the units to run at once (in threads) that fit there."""
    dev = workload.device_memory() if workload.device_memory is not None else None
    if dev is None:
        return thread_workers
    need, room, device, what, hint = dev
    if need > room:
        raise UnitMemoryError(f"{where}: a unit needs about {format_bytes(need)} on the JAX device "
                              f"({device}; {what}) but {format_bytes(room)} are free there: {hint}")
    fit = max(1, int(room // max(need, 1)))
    if thread_workers > fit:
        logger.warning("%s: %d units at once would need about %s on the JAX device (%s) but %s are "
                       "free there: running %d at once", where, thread_workers,
                       format_bytes(thread_workers * need), device, format_bytes(room), fit)
        thread_workers = fit
    return thread_workers


def _in_order(units, names, lazy):
    """``names`` (a set of unit names) in the workload's unit order."""
    if lazy:
        return sorted(names, key=units.index)
    return [u for u in units if u in names]


def _stored(store, units, lazy):
    """The units of ``units`` that ``store`` holds, proven (the files present are listed once;
    a workload of a billion units is never walked)."""
    member = units.__contains__ if lazy else set(units).__contains__
    return {u for u in store.ids() if member(u) and store.is_done(u)}


def run(workload: Workload, root=None, *, n_jobs=1, backend="loky", scheduler=None, progress=False,
        max_units=None, poll=2.0, thread_workers=1, desc=None, collect=True, on_unit=None):
    """Compute the units of ``workload`` that its store under ``root`` does not hold yet.

    Returns ``(rows, summary)``: ``{unit: DataFrame}`` of every unit, in ``workload.units`` order
    (read back from the store, so the types are the same whether a unit was computed now or
    earlier; with ``root=None`` nothing is stored and every unit is computed), and a summary
    (``units_run``, ``units_skipped``, ``units_by_others``, ``units_total``, ``seconds``,
    ``n_jobs``, ``threads_per_job``, ``backend``, ``unit_memory_bytes`` and the units' ``infos``).
    ``max_units`` stops after that many new units (for sampling or tests; the rows then hold only
    finished units). ``collect=False`` returns ``None`` for the rows (a caller that reads its
    store itself); ``thread_workers > 1`` runs that many units at once in threads of this process
    (JAX on a GPU). ``on_unit(unit, info)`` is called in this process for every unit already
    stored (``info`` ``{"skipped": "done"}``) and then as each unit finishes, here or in a worker.

    A workload with a ``memory`` estimate is refused with a
    :class:`~mixlinreg._memory.UnitMemoryError` before anything is stored when its largest unit
    does not fit in the memory available; units are taken from ``workload.units`` as they are
    dispatched, so a huge workload starts its first unit at once.
    """
    from tqdm.auto import tqdm

    from .._env import numba_threads, usable_cores

    progress = check_bool("progress", progress)
    collect = check_bool("collect", collect)
    n_jobs = check_backend(n_jobs, backend)
    for check in workload.reads:
        check()
    n_jobs, thread_workers, unit_bytes = _fit_memory(workload, backend, n_jobs, thread_workers)
    units = workload.units
    lazy = isinstance(units, Units)
    store = None if root is None else workload.store(root, clean=True)
    done = set() if store is None else _stored(store, units, lazy)
    n_todo = len(units) - len(done)
    todo = (u for u in units if u not in done)
    if max_units is not None:
        n_todo = min(n_todo, max_units)
        todo = itertools.islice(todo, max_units)
    if backend == "loky":  # never more local workers than usable cores or units to run
        n_jobs = max(1, min(n_jobs, usable_cores(), max(1, n_todo)))
    threads = numba_threads(n_jobs) if backend != "dask" else 1
    t0 = time.perf_counter()
    infos, by_others, fresh = [], set(), {}
    report = on_unit if on_unit is not None else (lambda unit, info: None)
    for u in _in_order(units, done, lazy):
        report(u, {"unit": u, "skipped": "done"})
    bar = _UnitBar(tqdm(total=len(units), initial=len(units) - n_todo, unit="unit",
                        desc=desc or f"{workload.name}/{workload.preset}", disable=not progress,
                        bar_format=_UnitBar.FORMAT), n_jobs)
    client = None
    from .._progress import _HOOK

    hook = _HOOK.set(bar.iteration)  # units run in this process move the bar as they iterate
    try:
        if backend == "dask" and n_todo:
            from dask.distributed import Client

            client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        go = dict(n_jobs=n_jobs, backend=backend, threads=threads, thread_workers=thread_workers)
        if store is None:
            for info in _dispatch(_Call(_in_memory, workload, threads), todo, **go):
                fresh[info["unit"]] = info.pop("rows")
                infos.append(info)
                report(info["unit"], info)
                bar.update(1, info)
        else:
            _fill(workload, root, store, todo, go, poll, infos, by_others, report, bar)
    finally:
        _HOOK.reset(hook)
        bar.close()
        if client is not None and not (scheduler is not None and client is scheduler):
            client.close()
    if not collect:
        rows = None
    elif store is None:
        rows = {u: fresh[u] for u in _in_order(units, set(fresh), lazy)}
    else:
        names = _in_order(units, done | by_others | {i["unit"] for i in infos}, True) if lazy \
            else units
        rows = {u: store.read(u) for u in names if store.is_done(u, warn=False)}
    summary = dict(workload=workload.name, preset=workload.preset,
                   seconds=time.perf_counter() - t0, units_run=len(infos),
                   units_total=len(units), units_skipped=len(done), units_by_others=len(by_others),
                   n_jobs=n_jobs, threads_per_job=threads, backend=backend, infos=infos,
                   store=None if store is None else str(store.folder), unit_memory_bytes=unit_bytes)
    return rows, summary
