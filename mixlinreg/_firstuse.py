"""First use: say once that numba compiled a kernel, and how long that took.

numba compiles the IFCA kernel on its first call for each argument-type signature (about 40 s per
working dtype) and caches the machine code next to the package (``cache=True``); later processes
load it in well under a second. :func:`announce_compile` wraps a jitted dispatcher so that a call
which had to *compile* (a numba cache miss: a cold cache, or a new signature) logs one message on
the ``mixlinreg`` logger, at WARNING level so that it shows without any logging set-up. A call
served from the cache, or from code already compiled in this process, says nothing.

:func:`compile_once_first` is the runner's first-use step: on a cold cache, local worker processes
would each compile the same kernels at once (and race to write the same cache index), so the first
unit runs in this process, compiling them once, before the workers start and load them.
"""

from __future__ import annotations

import functools
import logging
import time

logger = logging.getLogger("mixlinreg")

__all__ = ["announce_compile", "announce_compile_path", "dispatchers_of", "kernels_cold",
           "compile_once_first"]


def _misses(dispatcher):
    stats = getattr(dispatcher, "stats", None)
    return None if stats is None else sum(stats.cache_misses.values())


def _where(dispatcher):
    """Where the compiled code went, for the notice (numba reports no folder when uncached)."""
    path = dispatcher.stats.cache_path
    if path:
        return f"cached in {path}, later runs load it at once"
    return "not cached (no writable cache folder), so every process compiles it again"


def announce_compile(dispatcher, what):
    """Wrap ``dispatcher`` (a numba ``CPUDispatcher``) to log when a call compiled it.

    A plain Python function (``NUMBA_DISABLE_JIT=1``) is returned unchanged.
    """
    if _misses(dispatcher) is None:
        return dispatcher

    @functools.wraps(dispatcher.py_func)
    def call(*args, **kwargs):
        n_sig = len(dispatcher.signatures)
        before = _misses(dispatcher)
        t0 = time.perf_counter()
        out = dispatcher(*args, **kwargs)
        if len(dispatcher.signatures) != n_sig and _misses(dispatcher) != before:
            logger.warning("mixlinreg: numba compiled %s for a new argument signature in %.1f s "
                           "(first use; %s)", what, time.perf_counter() - t0,
                           _where(dispatcher))
        return out

    call.dispatcher = dispatcher
    return call


def dispatchers_of(*modules):
    """The numba dispatchers defined in or imported into ``modules`` (each once)."""
    seen = {}
    for mod in modules:
        for value in vars(mod).values():
            if _misses(value) is not None and hasattr(value, "signatures"):
                seen[id(value)] = value
    return list(seen.values())


def announce_compile_path(func, dispatchers, what):
    """Wrap the Python driver ``func`` of a kernel path that calls several ``dispatchers``.

    A call during which any of them compiled (a numba cache miss for a new signature) logs one
    message naming how many kernels compiled and how long the call took, compilation included.
    With no dispatchers (``NUMBA_DISABLE_JIT=1``) ``func`` is returned unchanged.
    """
    watched = [d for d in dispatchers if _misses(d) is not None]
    if not watched:
        return func

    @functools.wraps(func)
    def call(*args, **kwargs):
        before = [(len(d.signatures), _misses(d)) for d in watched]
        if not any(n_sig for n_sig, _ in before):  # nothing compiled or loaded in this process
            _say_before(watched, what)
        t0 = time.perf_counter()
        out = func(*args, **kwargs)
        new = [d for d, (n_sig, miss) in zip(watched, before)
               if len(d.signatures) != n_sig and _misses(d) != miss]
        if new:
            took = time.perf_counter() - t0
            logger.warning("mixlinreg: numba compiled %s (%d kernel%s) for a new argument "
                           "signature; the call took %.1f s with compilation (first use; %s)",
                           what, len(new), "" if len(new) == 1 else "s", took, _where(new[0]))
            _record_seconds(new[0].stats.cache_path, what, took)
        return out

    return call


#: The file in a kernel cache folder where each compile's duration is kept (by what compiled),
#: so that the notice before the next cold compile on this machine can say how long it took.
COMPILE_TIMES = "mixlinreg_compile_seconds.json"

#: What the notice says when this machine has no recorded compile yet: the measurement of
#: BENCHMARKS.md ("Cold start"), on the 2-core reference machine.
REFERENCE_COMPILE = ("on a 2-core machine this takes about 50 s (BENCHMARKS.md, "
                     "Cold start)")


def _index_empty(dispatcher):
    """Whether ``dispatcher`` has no machine code cached for its current source (True for an
    unreadable index; False where nothing is cached at all, the JIT's NullCache)."""
    index = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if index is None:
        return False
    try:
        return not index._load_index()
    except Exception:  # noqa: BLE001 - an unreadable index is a cold one
        return True


def _say_before(watched, what):
    """One line before a compile that is sure to come: every kernel of the path has an empty
    cache for its current source (a fresh clone, an edit or an upgrade). A compile for a new
    signature next to cached ones (another dtype) is only announced after it."""
    if not all(_index_empty(d) for d in watched):
        return
    folder = watched[0]._cache.cache_path
    took = _recorded_seconds(folder, what)
    how_long = (f"the last time it compiled here it took {took:.0f} s" if took is not None
                else REFERENCE_COMPILE)
    logger.warning("mixlinreg: compiling %s with numba before its first use (no machine code is "
                   "cached for this version of the package in %s); %s, once: later calls and "
                   "processes load the cached code", what, folder, how_long)


def _recorded_seconds(folder, what):
    import json
    import os

    try:
        with open(os.path.join(folder, COMPILE_TIMES), encoding="utf-8") as fh:
            value = json.load(fh).get(what)
        return float(value) if isinstance(value, (int, float)) and value > 0 else None
    except (OSError, ValueError, AttributeError):
        return None


def _record_seconds(folder, what, seconds):
    """Keep ``seconds`` for ``what`` in the cache folder (atomically; a folder that cannot be
    written is left alone: the notice then gives the reference figure)."""
    import json
    import os
    import tempfile

    if not folder:
        return
    try:
        path = os.path.join(folder, COMPILE_TIMES)
        try:
            with open(path, encoding="utf-8") as fh:
                times = json.load(fh)
            times = times if isinstance(times, dict) else {}
        except (OSError, ValueError):
            times = {}
        times[what] = round(float(seconds), 1)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".compile-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(times, fh)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass


def _entry_kernels():
    """The dispatchers that units call from Python: the IFCA kernel's loop (run in chunks) and the
    certified-Gram path's kernels (the others are compiled into them)."""
    from . import _gram, _kernels

    return [_kernels._iterations] + [d for d in dispatchers_of(_gram) if d is not _kernels._iterations]


def kernels_cold():
    """The cache folder of the first kernel that has no machine code cached for its current
    source (a fresh clone, an edited kernel, a new ``NUMBA_CACHE_DIR``), or None when every entry
    kernel has some. None too where compiling here would not help other processes: the JIT off,
    or kernels compiled without a cache."""
    for disp in _entry_kernels():
        cache = getattr(disp, "_cache", None)
        index = getattr(cache, "_cache_file", None)
        if index is None:  # numba's NullCache: nothing is shared between processes
            continue
        try:
            if not index._load_index():
                return cache.cache_path
        except Exception:  # noqa: BLE001 - an unreadable index is a cold one
            return cache.cache_path
    return None


def compile_once_first(fn, items, *, n_jobs, backend):
    """The runner's first-use step, a generator: ``rest = yield from compile_once_first(...)``.

    With local worker processes (``backend="loky"``, ``n_jobs > 1``) and a cold kernel cache
    (:func:`kernels_cold`), says so in one line, yields ``fn(first item)`` computed in this
    process (compiling the kernels once, into the cache) and returns the other items, for the
    workers, which then load the kernels; otherwise yields nothing and returns ``items``.
    """
    if backend != "loky" or n_jobs < 2:
        return items
    folder = kernels_cold()
    if folder is None:
        return items
    rest = iter(items)
    for first in rest:
        # some entry kernel is cold, not necessarily one this workload calls (a fresh clone's
        # second panel may find only another path's kernels missing): say no more than that
        logger.warning("mixlinreg: some kernels have no compiled code cached in %s yet: running "
                       "the first unit in this process so that numba compiles once any it needs, "
                       "then %d workers load them", folder, n_jobs)
        yield fn(first)
        break
    return rest
