"""First use: say once that numba compiled a kernel, and how long that took.

numba compiles the IFCA kernel on its first call for each argument-type signature (about 40 s per
working dtype) and caches the machine code next to the package (``cache=True``); later processes
load it in well under a second. :func:`announce_compile` wraps a jitted dispatcher so that a call
which had to *compile* (a numba cache miss: a cold cache, or a new signature) logs one message on
the ``mixlinreg`` logger, at WARNING level so that it shows without any logging set-up. A call
served from the cache, or from code already compiled in this process, says nothing.
"""

from __future__ import annotations

import functools
import logging
import time

logger = logging.getLogger("mixlinreg")

__all__ = ["announce_compile", "announce_compile_path", "dispatchers_of"]


def _misses(dispatcher):
    stats = getattr(dispatcher, "stats", None)
    return None if stats is None else sum(stats.cache_misses.values())


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
                           "(first use; cached in %s, later runs load it at once)",
                           what, time.perf_counter() - t0, dispatcher.stats.cache_path)
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
        t0 = time.perf_counter()
        out = func(*args, **kwargs)
        new = [d for d, (n_sig, miss) in zip(watched, before)
               if len(d.signatures) != n_sig and _misses(d) != miss]
        if new:
            logger.warning("mixlinreg: numba compiled %s (%d kernel%s) for a new argument "
                           "signature; the call took %.1f s with compilation (first use; cached "
                           "in %s, later runs load it at once)", what, len(new),
                           "" if len(new) == 1 else "s", time.perf_counter() - t0,
                           new[0].stats.cache_path)
        return out

    return call
