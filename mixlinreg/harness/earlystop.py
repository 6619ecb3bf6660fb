"""Does the optional early stop change any result? Run sample units both ways and compare.

The early stop freezes a run once its assignments did not change and its largest relative step is
at most ``tol``. With ``tol = 0`` it is exact (a run whose parameters stopped changing bitwise would
repeat the same iteration forever); with ``tol > 0`` a slowly moving run could be frozen a little
before its end point. This check measures, on sample units of every panel, whether that changes any
success flag (all three rules) and how much it moves the final distances.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pandas as pd

from .agreement import agrees, compare_rows
from .._validation import check_float, check_int
from .run import run_unit
from .success import RULES


def with_early_stop(exp, tol):
    """The same experiment with the early stop on (``tol``), or off (``tol=None``)."""
    if tol is None:
        protocol = dict(exp.protocol, early_stop=False)
    else:
        protocol = dict(exp.protocol, early_stop=True, tol=float(tol))
    return dataclasses.replace(exp, protocol=protocol)


def sample_units(exp, n_units, rng):
    """``n_units`` units spread over the experiment's groups (the smallest and largest first)."""
    n_units = check_int("n_units", n_units, low=1)
    units = exp.units()
    groups = sorted({(u.m, u.n, u.d, u.k) for u in units}, key=lambda g: g[0] * g[1])
    order = [groups[0], groups[-1]] + [groups[i] for i in rng.permutation(len(groups))]
    chosen, seen = [], set()
    for g in order:
        if g in seen:
            continue
        seen.add(g)
        cands = [u for u in units if (u.m, u.n, u.d, u.k) == g]
        chosen.append(cands[int(rng.integers(len(cands)))])
        if len(chosen) == n_units:
            break
    return chosen


def _warm_up(dtype):
    """Compile (or load) the kernel for a unit's argument types, so no timing includes it."""
    from ..ifca import ifca

    gen = np.random.default_rng(0)
    X = gen.standard_normal((2, 3, 2)).astype(dtype)
    Y = gen.standard_normal((1, 2, 3)).astype(dtype)
    init = np.zeros((1, 2, 2), dtype=dtype)
    for es in (False, True):
        ifca(X, Y, init, np.array([0.1]), n_iter=2, y_index=np.zeros(1, dtype=np.int64),
             early_stop=es, dtype=dtype)


def compare_unit(exp, unit, tol, floor=1e-3, n_threads=None):
    """Run a unit without and with early stop; return a dict of differences."""
    _warm_up(np.dtype(exp.protocol["dtype"]))
    t0 = time.perf_counter()
    full, _ = run_unit(with_early_stop(exp, None), unit, n_threads=n_threads)
    t1 = time.perf_counter()
    early, _ = run_unit(with_early_stop(exp, tol), unit, n_threads=n_threads)
    t2 = time.perf_counter()
    out = dict(experiment=exp.name, unit=unit.id, runs=len(full), tol=tol,
               seconds_full=t1 - t0, seconds_early=t2 - t1,
               iterations_full=int(full["n_iter"].sum()), iterations_early=int(early["n_iter"].sum()))
    out.update(compare_rows(full, early, exp.protocol["success_plus"], floor))
    return out


def check_early_stop(exps, tol=1e-7, units_per_exp=2, rel_tol=1e-3, floor=1e-3, seed=0,
                     progress=print):
    """Compare full and early-stopped runs on sample units of each experiment.

    Returns ``(table, verdict)``: one row per unit (:func:`~mixlinreg.harness.agreement.compare_rows`),
    and True when no success flag changed under any rule, no run diverged in one and not the other,
    and every final distance of at least ``floor`` moved by at most ``rel_tol`` relative.
    """
    units_per_exp = check_int("units_per_exp", units_per_exp, low=1)
    tol = check_float("tol", tol, low=0)
    rel_tol = check_float("rel_tol", rel_tol, low=0)
    floor = check_float("floor", floor, low=0)
    rng = np.random.default_rng(seed)
    rows = []
    for exp in exps:
        for unit in sample_units(exp, units_per_exp, rng):
            row = compare_unit(exp, unit, tol, floor=floor)
            rows.append(row)
            if progress is not None:
                progress(f"{exp.name}/{exp.preset} {unit.id}: iterations {row['iterations_full']} -> "
                         f"{row['iterations_early']}, time {row['seconds_full']:.1f} s -> "
                         f"{row['seconds_early']:.1f} s, flags changed "
                         f"{[row[f'flags_changed_{r}'] for r in RULES]}, max rel dist change "
                         f"{max(row['max_rel_dist_nearest'], row['max_rel_dist_matched']):.2e}")
    table = pd.DataFrame(rows)
    return table, agrees(table, rel_tol)
