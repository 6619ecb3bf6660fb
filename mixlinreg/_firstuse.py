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

__all__ = ["announce_compile"]


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
