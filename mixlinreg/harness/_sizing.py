"""The memory of one Figure 2 unit, estimated from its config before anything is drawn.

A unit holds its trial's data ``X`` (m, n, d) and responses ``Y`` (C, m, n) for its C cells, its
R = C x n_init x steps runs' models (k, d) and per-machine state, the kernel's per-chunk buffers,
the path's extra (the sufficient statistics' m d^2 Gram matrices, or the certified-Gram cache,
bounded by ``gram_memory``) and its result rows. :func:`largest_unit` gives the estimate of the
largest unit of an experiment (memory grows with each of m, n, d and k, so it is the unit of the
largest values), what it is, and what to lower; the runner refuses a run whose largest unit does
not fit before any unit starts (:func:`mixlinreg.runner.run`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _memory, _numerics
from .._problem import _choose_method

#: bytes per result row: the DataFrame (24 columns) and its CSV text. Measured (peak resident
#: memory of a unit less the process's before it): the data path 1.17-1.20 x the X array, which
#: the estimate's 1.25 x covers; the certified-Gram path fills its cache (counted whole) as it runs
_ROW_BYTES = 600
#: a float32 draw holds one float64 slice of at most this many numbers (``mixlinreg._draws``)
_DRAW_CHUNK = 1 << 22

_HINTS = {
    "data": "lower m, n or d",
    "cells": "use fewer R, sigma (or alpha0) values, or lower m or n",
    "runs": "use fewer cells, initializations (n_init) or step sizes, or lower m or d",
    "stats": "lower m or d, or use --method data (the statistics path holds m d^2 floats)",
    "gram": "lower d, or use --method data",
}


def unit_terms(exp, m, n, d, k, method="auto", kernel="numba") -> dict:
    """Bytes of one unit of group (m, n, d, k), by what holds them (``data``, ``cells``,
    ``runs``, and ``stats`` or ``gram`` for those kernel paths)."""
    p = exp.protocol
    dt = np.dtype(p["dtype"])
    s = dt.itemsize
    C = math.prod(len(exp.grid[a]) for a in ("R", "sigma", "alpha0") if a in exp.grid)
    n_init, S = int(p["n_init"]), len(p["steps"])
    R = C * n_init * S
    data = m * n * d * s * 5 // 4 + m * n * (k + 2) * 8  # X, and copies of parts of it
    if dt != np.float64:
        data += min(m * n * d, max(n * d, _DRAW_CHUNK)) * 8
    cells = C * m * n * s + C * k * d * s
    runs = R * k * d * 2 * s + R * m * 32 + R * _ROW_BYTES
    if p["init"] == "close":
        runs += C * n_init * k * d * s
    terms = {"data": data, "cells": cells, "runs": runs}
    if kernel == "jax":
        return terms
    pad = _numerics.SIMD_COLUMNS[dt]
    Rp = -(-R // pad) * pad
    chunks = min(m, _numerics.MAX_CHUNKS)
    terms["runs"] += chunks * Rp * ((max(n * (k + 1), d) + n + 2 * d) * s + d * k * 8)
    try:
        path = _choose_method(method, loss="squared", resample=False, averaging="gradient",
                              participation=None, trace=False, dt=dt,
                              gram_memory=_numerics.GRAM_MEMORY, R=R, m=m, n=n, d=d, k=k)
    except ValueError:  # a path that does not apply: the unit itself says so
        path = "data"
    if path == "stats":
        terms["stats"] = m * d * d * s + C * m * d * s
    elif path == "gram":
        slots = min(_numerics.GRAM_MEMORY // (8 * d * d), 2 * R * k)
        rows = max(n, (_numerics.GRAM_GATHER_ROWS // n) * n)
        terms["gram"] = (slots * d * d + _numerics.GRAM_BLOCKS * (2 * d * d + rows * d)
                         + d * d) * 8
    return terms


def _largest_group(exp):
    """``(m, n, d, k, setting in words)`` of the largest unit of ``exp`` (memory grows with each
    of m, n, d and k, so it is the unit of the largest values)."""
    m, n, d, k = (max(int(v) for v in exp.grid[a]) for a in ("m", "n", "d", "k"))
    p = exp.protocol
    C = math.prod(len(exp.grid[a]) for a in ("R", "sigma", "alpha0") if a in exp.grid)
    what = (f"m = {m}, n = {n}, d = {d}, k = {k}, {p['dtype']}; {C} cells x "
            f"{int(p['n_init']) * len(p['steps'])} runs each")
    return m, n, d, k, what


def largest_unit(exp, method="auto", kernel="numba"):
    """``(bytes, what, hint)`` of the largest unit of ``exp``: its estimated memory, its setting
    (``"m = 100000, n = 100, d = 1000, k = 2, float32; 20 cells x 30 runs each"``) and what to
    lower (for the part that holds most)."""
    m, n, d, k, what = _largest_group(exp)
    terms = unit_terms(exp, m, n, d, k, method, kernel)
    return sum(terms.values()), what, _HINTS[max(terms, key=terms.get)]


#: the device estimate's margin over the calibrated peak (``figures/gpu_check/gpu_memory.json``)
_DEVICE_MARGIN = 1.25


def device_terms(exp, m, n, d, k) -> dict:
    """Bytes that one unit of group (m, n, d, k) holds on the JAX device, by part: ``data`` (X
    and each run's responses), ``forward`` (every run's and model's predictions in the working
    dtype and one float64 copy) and ``backward`` (each machine's gradient at its model, in the
    working dtype and float64, and the derivative at the predictions).

    XLA does not hold the forward and backward passes at once: measured on an H200
    (``experiments/gpu_memory_check.py``, the largest unit of each Figure 2 panel and fig2b with
    120, 300 and 600 runs per call; in each the backward pass is the larger), ``data + backward``
    is 1.015 to 1.027 times the peak; :func:`largest_device_unit` takes ``1.25 x (data +
    max(forward, backward))``, 1.27 to 1.28 times the measured peaks. Units whose forward pass is
    the larger (small d, large k n) were not measured."""
    p = exp.protocol
    s = np.dtype(p["dtype"]).itemsize
    C = math.prod(len(exp.grid[a]) for a in ("R", "sigma", "alpha0") if a in exp.grid)
    R = C * int(p["n_init"]) * len(p["steps"])
    return {"data": m * n * d * s + R * m * n * s,
            "forward": m * n * R * k * (s + 8),
            "backward": m * R * d * (s + 8) + m * n * R * s}


def largest_device_unit(exp):
    """``(bytes, free bytes, device, what, hint)`` of the largest unit of ``exp`` on JAX's
    device, or ``None`` where the device does not report its memory (JAX's CPU backend: the host
    check of :func:`largest_unit` covers it)."""
    room = _memory.jax_device_room()
    if room is None:
        return None
    m, n, d, k, what = _largest_group(exp)
    terms = device_terms(exp, m, n, d, k)
    what += ", all in one device call"
    hint = ("lower m or d" if max(terms, key=terms.get) == "data" else
            "use fewer cells, initializations (n_init) or step sizes, or lower m or n")
    need = _DEVICE_MARGIN * (terms["data"] + max(terms["forward"], terms["backward"]))
    return int(need), room[0], room[1], what, hint
