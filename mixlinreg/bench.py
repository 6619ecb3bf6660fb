"""Kernel benchmark: the batched numba kernel against a plain NumPy IFCA, measured in one run.

Reports, for each problem size, dtype and thread count:

* ``kernel_s_per_run``: seconds per run-equivalent of the batched kernel (``R`` runs of ``n_iter``
  iterations in one call, divided by ``R``), after a warm-up call that compiles it;
* ``numpy_s_per_run``: seconds per run of a plain vectorized NumPy implementation of the same update,
  one run at a time (timed over ``baseline_iter`` iterations and scaled to ``n_iter``: its cost per
  iteration is constant);
* ``speedup``: their ratio;
* ``useful_gflops``: useful flop of the kernel, ``2 m n d (k + 1)`` per run and iteration actually
  performed (frozen runs cost nothing and are not counted), per second;
* ``gemm_gflops``: the machine's BLAS GEMM throughput for the same shape ``(m n, d) @ (d, R k)``,
  measured in the same process with the same threads, and ``gemm_fraction`` = useful / gemm.

Ratios are what to compare across machines and days; absolute times on a shared machine are noisy.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from .data import draw_trial, init_bernoulli
from .ifca import ifca

#: the two shapes of Figure 2: (m, n, d, k) and the step sizes of the authors' protocol
def load_shapes(preset="paper", path=None):
    """``({(m, n, d, k): steps}, dtypes)`` of a preset of ``mixlinreg/configs/bench.toml``."""
    from . import config
    from .config import Spec

    pos = Spec("list[int]", low=1)
    schema = {"shapes": {"m": pos, "n": pos, "d": pos, "k": pos,
                         "dtypes": Spec("list[str]", choices=("float32", "float64"))},
              "steps": {"k2": Spec("list[float]", low=0, open="low"),
                        "k4": Spec("list[float]", low=0, open="low")}}
    cfg = config.load(path or "bench", preset, kind="bench", schema=schema)
    sh = cfg["shapes"]
    if len({len(sh[a]) for a in "mndk"}) != 1:
        raise ValueError(f"config {cfg.path}: shapes.m, n, d, k must have the same length")
    shapes = {}
    for m, n, d, k in zip(sh["m"], sh["n"], sh["d"], sh["k"]):
        if f"k{k}" not in cfg["steps"]:
            raise ValueError(f"config {cfg.path}: no step sizes for k = {k} (steps.k{k})")
        shapes[(m, n, d, k)] = tuple(cfg["steps"][f"k{k}"])
    return shapes, [np.dtype(t).type for t in sh["dtypes"]]


def numpy_ifca(X, y, theta0, lr, n_iter):
    """Plain vectorized NumPy IFCA (gradient averaging, squared loss), one run.

    The straightforward implementation a user would write: the forward pass of the k models on all
    machines, per-machine mean squared errors, the argmin, the gradient of every machine at its
    assigned model, and the per-cluster sums with divisor m. Used as the benchmark's baseline and
    as a second, independent reference in the tests.
    """
    theta = np.array(theta0, dtype=X.dtype)
    m, n, d = X.shape
    k = theta.shape[0]
    X2 = X.reshape(m * n, d)
    rows = np.arange(m)
    scale = np.asarray(2.0 / n, dtype=X.dtype)
    for _ in range(n_iter):
        err = (X2 @ theta.T).reshape(m, n, k) - y[:, :, None]  # one GEMM for all machines
        losses = np.mean(err * err, axis=1)  # (m, k)
        a = np.argmin(losses, axis=1)  # ties to the lowest index
        res = err[rows, :, a]  # (m, n): residual at the assigned model
        grads = scale * np.matmul(res[:, None, :], X)[:, 0, :]  # (m, d), batched X_i^T r_i
        for j in range(k):
            theta[j] -= (lr / m) * grads[a == j].sum(axis=0)
    return theta


def gemm_gflops(M, K, N, dtype, repeats=5, rng=None):
    """Best-of-``repeats`` GFLOP/s of ``(M, K) @ (K, N)`` with the current BLAS thread setting."""
    gen = np.random.default_rng(rng)
    A = gen.standard_normal((M, K)).astype(dtype)
    B = gen.standard_normal((N, K)).astype(dtype).T
    out = np.empty((M, N), dtype=dtype)
    np.matmul(A, B, out=out)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.matmul(A, B, out=out)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * M * K * N / best / 1e9


def _best_time(fn, repeats):
    best = np.inf
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_benchmark(configs=None, dtypes=(np.float32, np.float64), threads=(1, 2), n_iter=300,
                  n_init=10, baseline_iter=30, repeats=2, seed=0, R_sep=0.5, sigma=0.1,
                  early_stop=(False,), methods=("data", "gram"), progress=print):
    """Measure kernel, NumPy baseline and GEMM throughput; return a list of result rows (dicts).

    ``early_stop=(False, True)`` adds rows for the kernel with the optional early stop (a shortcut
    that freezes stationary runs; the default protocol is ``False``). ``methods``: the kernel paths
    timed (``"data"``: every machine's rows every iteration; ``"gram"``: certified assignments and
    shared cluster Grams); ``useful_gflops`` always counts the direct path's flop, so for the Gram
    path it is an effective rate.
    """
    configs = load_shapes()[0] if configs is None else configs
    rows = []
    for (m, n, d, k), steps in configs.items():
        for dtype in dtypes:
            dtype = np.dtype(dtype)
            ss = np.random.SeedSequence(seed)
            trial = draw_trial(m, n, d, k, rng=np.random.default_rng(ss), dtype=dtype)
            mix = trial.mixture(R_sep, sigma)
            init0 = init_bernoulli(n_init, k, d, rng=np.random.default_rng(ss.spawn(1)[0]), dtype=dtype)
            init = np.repeat(init0, len(steps), axis=0)
            lr = np.tile(np.asarray(steps, dtype=float), n_init)
            R = init.shape[0]
            ifca(mix.X, mix.y, init, lr, n_iter=2)  # compile / warm up
            for nt in threads:
                with threadpool_limits(limits=nt, user_api="blas"):
                    numpy_ifca(mix.X, mix.y, init[1], lr[1], 1)
                    t_np, _ = _best_time(
                        lambda: numpy_ifca(mix.X, mix.y, init[1], lr[1], baseline_iter), repeats)
                    gemm = gemm_gflops(m * n, d, R * k, dtype)
                np_per_run = t_np * n_iter / baseline_iter
                for es, meth in [(es, meth) for meth in methods for es in early_stop]:
                    t_kernel, res = _best_time(
                        lambda: ifca(mix.X, mix.y, init, lr, n_iter=n_iter, n_threads=nt,
                                     early_stop=es, method=meth), repeats)
                    useful = 2.0 * m * n * d * (k + 1) * float(res.n_iter.sum())
                    row = dict(m=m, n=n, d=d, k=k, dtype=dtype.name, threads=nt, runs=R,
                               n_iter=n_iter, early_stop=bool(es), diverged=int(res.diverged.sum()),
                               iters_done=int(res.n_iter.sum()), method=res.method,
                               kernel_s_per_run=t_kernel / R, numpy_s_per_run=np_per_run,
                               speedup=np_per_run / (t_kernel / R),
                               useful_gflops=useful / t_kernel / 1e9, gemm_gflops=gemm)
                    row["gemm_fraction"] = row["useful_gflops"] / gemm
                    rows.append(row)
                    if progress is not None:
                        progress(format_row(row))
    return rows


_COLUMNS = [("m", "{}"), ("n", "{}"), ("d", "{}"), ("k", "{}"), ("dtype", "{}"), ("threads", "{}"),
            ("runs", "{}"), ("method", "{}"), ("early_stop", "{}"), ("diverged", "{}"), ("iters_done", "{}"),
            ("kernel_s_per_run", "{:.4f}"),
            ("numpy_s_per_run", "{:.3f}"), ("speedup", "{:.1f}x"), ("useful_gflops", "{:.1f}"),
            ("gemm_gflops", "{:.1f}"), ("gemm_fraction", "{:.0%}")]


def format_row(row):
    return " | ".join(fmt.format(row[c]) for c, fmt in _COLUMNS)


def format_table(rows):
    """Markdown table of benchmark rows."""
    head = "| " + " | ".join(c for c, _ in _COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in _COLUMNS) + "|"
    return "\n".join([head, sep] + ["| " + format_row(r) + " |" for r in rows])


# ------------------------------------------------------------------------------------------------
# one paper-preset unit per panel, on both kernel paths, and the whole grid projected from them
# ------------------------------------------------------------------------------------------------
def median_unit(exp, trial=0, group="median"):
    """Trial ``trial`` of the group with the median ``m n`` (``group="smallest"``: the smallest)."""
    from ._validation import check_choice

    check_choice("group", group, {"median", "smallest"})
    groups = sorted(exp.groups(), key=lambda g: g[0] * g[1])
    g = groups[0] if group == "smallest" else groups[len(groups) // 2]
    return next(u for u in exp.units() if (u.m, u.n, u.d, u.k) == g and u.trial == trial)


def bench_units(panels=("fig2a", "fig2b", "fig2c", "fig2d"), preset="paper", methods=("data", "gram"),
                trial=0, progress=print):
    """Seconds of one unit of each panel on each kernel path (same process, same threads; the
    unit runs on the one runner, :func:`mixlinreg.runner.run`, in this process with nothing stored).

    The unit is trial ``trial`` of the group whose ``m n`` is the median of the panel's groups.
    The projected whole-grid time of a path sums, over the panel's groups, ``trials`` units of
    that time scaled by ``m n / (m_u n_u)``: the direct path's cost is proportional to ``m n``;
    for the Gram path that is an assumption (its Gram builds grow with ``m n`` as well, its Gram
    steps do not), stated in every row.
    """
    import dataclasses

    from .harness import load_config
    from .harness.sweep import workload
    from .runner import run

    rows = []
    for name in panels:
        exp = load_config(name, preset=preset)
        unit = median_unit(exp, trial)
        g = (unit.m, unit.n, unit.d, unit.k)
        scale = sum(gg[0] * gg[1] for gg in exp.groups()) * exp.protocol["trials"] / (g[0] * g[1])
        row = dict(panel=name, preset=preset, unit=unit.id, runs=exp.runs_per_unit,
                   units_in_grid=len(exp.units()), projection="linear in m n")
        for meth in methods:
            # the unit on the one runner, in this process, nothing stored; BLAS left as it is
            one = dataclasses.replace(workload(exp, method=meth), units=(unit.id,), pin_blas=False)
            t0 = time.perf_counter()
            out, _ = run(one, None, backend="sequential")
            sec = time.perf_counter() - t0
            tab = out[unit.id]
            row[f"seconds_{meth}"] = sec
            row[f"projected_hours_{meth}"] = sec * scale / 3600.0
            row[f"method_{meth}"] = str(tab["method"].iloc[0])
        if len(methods) == 2:
            row["speedup"] = row[f"seconds_{methods[0]}"] / row[f"seconds_{methods[1]}"]
        rows.append(row)
        if progress is not None:
            progress(" | ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                for k, v in row.items()))
    return rows
