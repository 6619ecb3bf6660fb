"""Run one unit of work (one trial of one (m, n, d, k) group) and return its tidy rows."""

from __future__ import annotations

import resource
import time
from collections import namedtuple

import numpy as np
import pandas as pd

from .. import __version__
from ..data import draw_trial, init_bernoulli, init_close
from ..ifca import ifca
from ..metrics import dist_matched_from_matrix, dist_nearest_from_matrix, pairwise_dist

#: columns of the result table, in order
COLUMNS = [
    "experiment", "preset", "config_hash", "unit", "m", "n", "d", "k", "R", "sigma", "alpha0",
    "trial", "init", "step", "dist_nearest", "dist_matched", "loss", "diverged", "converged",
    "n_iter", "seed_entropy", "spawn_key", "versions", "method",
]
#: earlier layouts still read from stores (before ``method``: every unit ran on the direct path)
LEGACY_COLUMNS = [COLUMNS[:-1]]


def _versions(jax=False):
    import numba
    import scipy

    text = f"mixlinreg={__version__};numpy={np.__version__};scipy={scipy.__version__};numba={numba.__version__}"
    if jax:
        from .._jax import device_info, import_jax

        text += f";jax={import_jax().__version__};device={device_info().replace(';', ',')}"
    return text


def unit_seeds(exp, unit, seed_sequence=None):
    """(data, init) SeedSequences of a unit: children of SeedSequence(seed, spawn_key=group+trial)
    (the runner's seed rule: :meth:`mixlinreg.runner.Workload.seed_sequence` hands it over)."""
    ss = np.random.SeedSequence(exp.protocol["seed"], spawn_key=unit.spawn_key) \
        if seed_sequence is None else seed_sequence
    if tuple(ss.spawn_key) != tuple(unit.spawn_key) or ss.entropy != exp.protocol["seed"]:
        raise ValueError(f"unit {unit.id}: its seed sequence must be SeedSequence("
                         f"{exp.protocol['seed']}, spawn_key={unit.spawn_key}), got one with "
                         f"entropy {ss.entropy} and spawn_key {ss.spawn_key}")
    return ss.spawn(2)


def run_unit(exp, unit, n_threads=None, method="auto", kernel=None, seed_sequence=None):
    """Draw the unit's trial, run every cell x initialization x step size in one kernel call.

    ``method`` is the kernel path and ``kernel`` the backend (``"numba"`` or ``"jax"``, ``None``:
    the context's, see :func:`mixlinreg.use_kernel`) of :func:`mixlinreg.ifca`; they are choices
    of how to compute, not part of the config, and every row records the path that computed it
    (``method`` ``"jax"`` for the JAX backend, whose ``versions`` name JAX and the device).

    Returns ``(rows, info)``: a DataFrame with one row per (cell, initialization, step size) and a
    dict with the unit's wall time, number of runs and diverged runs, and peak resident memory.
    """
    t0 = time.perf_counter()
    p = exp.protocol
    job = unit_job(exp, unit, seed_sequence)
    res = ifca(job.X, job.Y, job.init, job.lr, n_iter=p["n_iter"], y_index=job.y_index,
               early_stop=p["early_stop"], tol=p["tol"], dtype=job.X.dtype, n_threads=n_threads,
               method=method, kernel=kernel)
    rows = unit_rows(exp, unit, job, res)
    info = dict(unit=unit.id, seconds=time.perf_counter() - t0, runs=int(res.theta.shape[0]),
                diverged=int(res.diverged.sum()), iterations=int(res.n_iter.sum()),
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                method=res.method, path_stats=res.path_stats)
    return rows, info


#: The inputs of one unit's kernel call: shared data ``X`` (m, n, d), response variants ``Y``
#: (C, m, n), the runs' ``init`` (R, k, d), ``lr`` (R,) and ``y_index`` (R,), the true parameters
#: ``theta_star`` (C, k, d), the ``cells`` and the ``n_init`` and step sizes ``steps`` per cell.
UnitJob = namedtuple("UnitJob", "X Y init lr y_index theta_star cells n_init steps")


def unit_job(exp, unit, seed_sequence=None):
    """Draw the unit's trial and lay out its runs (order: cell, initialization, step size)."""
    p = exp.protocol
    dtype = np.dtype(p["dtype"])
    data_ss, init_ss = unit_seeds(exp, unit, seed_sequence)
    trial = draw_trial(unit.m, unit.n, unit.d, unit.k, rng=np.random.default_rng(data_ss), dtype=dtype)
    cells = unit.cells
    Rs = [(R, s) for R, s, _ in cells]
    Y, theta_star = trial.panel(Rs, theta_scale=p["theta_scale"])
    steps = np.asarray(p["steps"], dtype=float)
    n_init, S, C = p["n_init"], steps.size, len(cells)
    init_gen = np.random.default_rng(init_ss)
    if p["init"] == "bernoulli":
        # the same initializations for every cell of the trial (they share the data too)
        inits = np.broadcast_to(init_bernoulli(n_init, unit.k, unit.d, rng=init_gen, dtype=dtype),
                                (C, n_init, unit.k, unit.d))
    else:
        gens = init_gen.spawn(C)
        inits = np.stack([init_close(theta_star[c], cells[c][2], n_init, rng=gens[c], dtype=dtype)
                          for c in range(C)])
    # run order: cell, initialization, step size
    init_runs = np.repeat(inits.reshape(C * n_init, unit.k, unit.d), S, axis=0)
    lr_runs = np.tile(steps, C * n_init)
    y_index = np.repeat(np.arange(C), n_init * S)
    return UnitJob(trial.X, Y, init_runs, lr_runs, y_index, theta_star, cells, n_init, steps)


def unit_rows(exp, unit, job, res):
    """The result table of a unit from its job and the kernel's result (one row per run)."""
    p = exp.protocol
    cells, y_index, n_init, S, C = job.cells, job.y_index, job.n_init, job.steps.size, len(job.cells)
    lr_runs = job.lr
    D = pairwise_dist(res.theta, job.theta_star[y_index])
    near = dist_nearest_from_matrix(D)
    matched = dist_matched_from_matrix(D)
    cell_arr = np.asarray(cells, dtype=float)[y_index]
    rows = pd.DataFrame({
        "experiment": exp.name, "preset": exp.preset, "config_hash": exp.hash()[:16],
        "unit": unit.id, "m": unit.m, "n": unit.n, "d": unit.d, "k": unit.k,
        "R": cell_arr[:, 0], "sigma": cell_arr[:, 1], "alpha0": cell_arr[:, 2],
        "trial": unit.trial, "init": np.tile(np.repeat(np.arange(n_init), S), C),
        "step": lr_runs, "dist_nearest": near, "dist_matched": matched, "loss": res.loss,
        "diverged": res.diverged, "converged": res.converged, "n_iter": res.n_iter,
        "seed_entropy": str(p["seed"]), "spawn_key": "-".join(str(v) for v in unit.spawn_key),
        "versions": _versions(jax=res.method == "jax"), "method": res.method,
    }, columns=COLUMNS)
    return rows
