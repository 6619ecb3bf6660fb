"""The direct path in chunks of iterations, so that Ctrl-C reaches a long :func:`mixlinreg.ifca` call.

While numba runs a kernel, Python cannot raise ``KeyboardInterrupt``: the signal handler only sets
a flag that the interpreter reads when the kernel returns. :func:`run_direct` therefore runs the
iterations of :func:`mixlinreg._kernels._ifca_kernel` in chunks, returning to Python between them,
with the kernel's whole state (the models, assignments of this and the previous iteration, frozen
flags, sweep buffers) kept across chunks. Each iteration is the one of the kernel, at the same
absolute index ``it`` (the resampling block, the participation mask's row, the trace's row and the
early stop's ``it >= 1`` all read it), so the result is bit-for-bit the one uninterrupted call's;
``tests/test_api_reliability.py`` checks it over a grid of options in float64 and float32.

The chunk length comes from the measured time per iteration (:class:`_Pacer`): the first chunk
is one iteration, each later one as many as fit in :data:`CHUNK_SECONDS` at the slowest pace seen
(on a loaded machine one iteration can take 100 times longer than the next), but at least
:data:`MIN_CHUNK_SECONDS` at the fastest pace, so that the dispatch of a chunk (tens of
microseconds) stays below about 1% of the time; ``experiments/bench_chunks.py`` measures the
overhead. The final evaluation on all rows, one iteration's work unless ``resample=True`` (whose
iterations read ``2 n'`` rows), is split into groups of machines when it would outlast a chunk:
each machine's losses do not depend on the others, and the last group's call adds them all up.

The certified-Gram path (:mod:`mixlinreg._gram`) is a Python loop over iterations that keeps its
bounds and Gram cache between them, so it needs no chunks: Ctrl-C arrives between two iterations
(one iteration that builds a large cluster Gram can take longer). The JAX backend stays one call.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ._progress import report
from ._kernels import (_final_eval, _ifca_kernel, _iterations, _padded, _run_state,
                       _sweep_buffers)

__all__ = ["run_direct", "CHUNK_SECONDS", "CHUNK_ITERATIONS", "FINAL_GROUPS"]

#: Target wall time of one chunk of iterations, in seconds: well under the second within which
#: Ctrl-C should stop a call, and long against the ~20-50 microseconds a chunk costs to dispatch.
CHUNK_SECONDS = 0.2
#: The shortest chunk at the fastest pace seen: keeps the dispatches below ~1% of the time when the
#: pace varies (a loaded machine can make one iteration 100x slower than the next).
MIN_CHUNK_SECONDS = 0.003
#: A chunk is at most this many times longer (in iterations) than the one before.
GROWTH = 8
#: Iterations per chunk: ``None`` chooses them from the measured time (the default); a positive
#: int fixes them (tests); ``0`` runs the whole call as one kernel call (no chunks, no Ctrl-C).
CHUNK_ITERATIONS = None
#: Groups of machines the final evaluation is split into: ``None`` from the measured pace (more
#: than one only when it would outlast a chunk, e.g. with ``resample=True``, whose iterations read
#: ``2 n'`` rows of each machine and the final evaluation all ``n``); an int fixes it (tests).
FINAL_GROUPS = None


class _Pacer:
    """Chooses the next chunk's length from the times of the chunks so far.

    A chunk is ``CHUNK_SECONDS`` long at the slowest pace seen after the first chunk (which pays
    for warm-up, and for compiling on first use), but never shorter than ``MIN_CHUNK_SECONDS`` at
    the fastest pace seen, and at most ``GROWTH`` times the previous chunk (so one fast outlier
    cannot launch a long chunk)."""

    def __init__(self):
        self.size = CHUNK_ITERATIONS or 1
        self.fast = self.slow = None
        self.chunks = 0

    def record(self, iters, seconds):
        pace = max(seconds, 1e-9) / iters
        self.fast = pace if self.fast is None else min(self.fast, pace)
        if self.chunks:
            self.slow = pace if self.slow is None else max(self.slow, pace)
        self.chunks += 1
        if CHUNK_ITERATIONS:
            return
        slow = self.slow if self.slow is not None else pace
        size = max(1, math.ceil(MIN_CHUNK_SECONDS / self.fast), int(CHUNK_SECONDS / slow))
        self.size = min(size, GROWTH * self.size)

    def final_groups(self, m, cost):
        """Machine ranges of the final evaluation, which costs ``cost`` iterations."""
        if FINAL_GROUPS:
            g = FINAL_GROUPS
        elif self.fast is None:  # no iteration timed (n_iter = 0)
            g = 1
        else:
            g = math.ceil(cost * (self.slow or self.fast) / CHUNK_SECONDS)
        g = max(1, min(g, m))
        return (np.arange(g + 1, dtype=np.int64) * m) // g


def run_direct(data, loss, upd, n_iter, resample, n_sub, stop, chunk_lo, pad, tr, theta, res):
    """The direct (and sufficient-statistics) path of :func:`mixlinreg.ifca`: the arguments and
    effect of :func:`mixlinreg._kernels._ifca_kernel` (``theta``, ``res`` and the trace filled in
    place), run in chunks of iterations (see the module's docstring)."""
    if CHUNK_ITERATIONS == 0:
        _ifca_kernel(data, loss, upd, n_iter, resample, n_sub, stop, chunk_lo, pad, tr, theta, res)
        return
    m, n, d = data.X.shape
    R = theta.shape[0]
    nout = loss.nout
    k = theta.shape[1] // nout
    Rp = _padded(R, pad)
    # the state _ifca_kernel makes before its loop
    buf = _sweep_buffers(chunk_lo.shape[0] - 1, n, d, Rp, k, nout, data.use_stats, theta)
    st = _run_state(theta, res)
    act = np.empty(R, dtype=np.int64)
    nrm = np.zeros((min(d, 8), Rp, k, 3), dtype=np.float64)
    ctot = np.zeros((Rp, k), dtype=np.int64)
    res.n_iter[:] = n_iter
    pacer = _Pacer()
    it = 0
    while it < n_iter:
        stop_at = min(n_iter, it + pacer.size)
        t0 = time.perf_counter()
        reached = _iterations(it, stop_at, data, loss, upd, resample, n_sub, stop, chunk_lo, pad, tr,
                              buf, st, act, nrm, ctot)
        if reached < stop_at:  # every run frozen
            break
        pacer.record(stop_at - it, time.perf_counter() - t0)
        it = stop_at
        report(it)  # a verbose caller's bar (mixlinreg._progress)
    # the final evaluation of every machine, in groups of machines when it would be long: each
    # machine's losses and label do not depend on the others, and the last call adds them all up
    # (and alone fills the trace's tail)
    bounds = pacer.final_groups(m, n / (2 * n_sub) if resample else 1)
    nchunks = chunk_lo.shape[0] - 1
    last = bounds.size - 2
    for g in range(last + 1):
        i0, i1 = int(bounds[g]), int(bounds[g + 1])
        p = min(nchunks, i1 - i0)
        lo = chunk_lo if last == 0 else i0 + (np.arange(p + 1, dtype=np.int64) * (i1 - i0)) // p
        _final_eval(lo, data, loss, upd, pad, n_iter, buf, st, tr if g == last else tr._replace(on=False),
                    res)
