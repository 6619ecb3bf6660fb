"""Run an experiment's units in parallel (joblib: loky processes, or an existing Dask cluster)."""

from __future__ import annotations

import resource
import time

from .. import _config
from .._env import numba_threads, usable_cores
from .._validation import check_bool
from .run import run_unit
from .store import ResultStore


def _work(exp, unit, store_path_parent, threads, method="auto", kernel=None, pin_blas=True):
    """Worker: claim the unit, pin BLAS/numba threads, run it, write it to the store, report.

    A unit claimed by another process (or finished by one meanwhile) is skipped: the info says
    ``skipped="claimed"`` or ``"done"``.
    """
    from threadpoolctl import threadpool_limits

    store = ResultStore(store_path_parent, exp)
    if not store.units.claim(unit.id):
        return dict(unit=unit.id, skipped="claimed")
    try:
        if store.units.is_done(unit.id, warn=False):
            return dict(unit=unit.id, skipped="done")
        store.units.set_aside(unit.id)  # a damaged file is kept aside, never deleted
        if pin_blas:  # (threads of one process share the limit: their caller sets it once)
            with threadpool_limits(limits=1):
                rows, info = run_unit(exp, unit, n_threads=threads, method=method, kernel=kernel)
        else:
            rows, info = run_unit(exp, unit, n_threads=threads, method=method, kernel=kernel)
        store.write(unit.id, rows)
    finally:
        store.units.release(unit.id)
    return info


def _jax_workers():
    """Units the JAX harness runs at once, in threads: on a GPU several (one unit's host work,
    drawing, validating and tabulating, overlaps the others' device work; waiting on the device
    releases the GIL); on JAX's CPU backend one (the computation already uses every core)."""
    from .._jax import import_jax

    if import_jax().default_backend() == "cpu":
        return 1
    return max(1, min(usable_cores(), _config.JAX_WORKERS))


def _run_units(exp, todo, store, threads, n_jobs, backend, method, kernel):
    """Yield the workers' infos for the units ``todo`` (in completion order)."""
    import joblib

    workers = 1
    if kernel == "jax" and (backend == "sequential" or (backend == "loky" and n_jobs == 1)):
        workers = _jax_workers()
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from threadpoolctl import threadpool_limits

        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            with threadpool_limits(limits=1):
                futures = [pool.submit(_work, exp, u, store.path.parent, threads, method, kernel,
                                       False) for u in todo]
                for fut in as_completed(futures):
                    yield fut.result()
        finally:  # on an error or Ctrl-C, units not started are not started
            pool.shutdown(wait=True, cancel_futures=True)
        return
    if backend == "sequential" or (backend == "loky" and n_jobs == 1):
        for u in todo:
            yield _work(exp, u, store.path.parent, threads, method, kernel)
        return
    tasks = (joblib.delayed(_work)(exp, u, store.path.parent, threads, method, kernel) for u in todo)
    if backend == "dask":
        cfg = joblib.parallel_config(backend="dask")
    else:
        cfg = joblib.parallel_config(backend="loky", inner_max_num_threads=threads)
    with cfg:
        par = joblib.Parallel(n_jobs=n_jobs if backend == "loky" else -1,
                              return_as="generator_unordered")
        yield from par(tasks)


def run_experiment(exp, out_dir="results", *, n_jobs=1, backend="loky", scheduler=None,
                   progress=True, max_units=None, poll=2.0, method="auto", kernel=None):
    """Run every unit of ``exp`` that the store does not hold yet; return ``(store, summary)``.

    ``n_jobs`` worker processes each get ``cores // n_jobs`` numba threads (BLAS single-threaded),
    so workers x threads never exceed the cores; the usable cores and numba's pool size are read
    from the environment (CPU affinity, cgroup quota, ``OMP_NUM_THREADS``, ``NUMBA_NUM_THREADS``;
    see :func:`mixlinreg._env.usable_cores`); loky never starts more workers than usable cores or
    units left (the summary reports the workers used). ``backend="dask"`` sends the units to the Dask
    cluster at ``scheduler`` (an address such as ``tcp://host:8786``, or a ``Client``).
    ``max_units`` stops after that many new units (for sampling or tests). Results do not depend on
    ``n_jobs``, the backend or the completion order. ``method`` is the kernel path of
    :func:`mixlinreg.ifca` (``"auto"``: the certified-Gram path where it applies); every row
    records the path that computed it, and ``mixlinreg check-gram`` measures that the paths agree.
    ``kernel`` is :func:`mixlinreg.ifca`'s backend (``"numba"``, ``"jax"``; ``None``: the context's,
    see :func:`mixlinreg.use_backend`): with ``"jax"`` the units run in this process on JAX's
    device (``n_jobs`` must be 1: worker processes would each claim the GPU's memory), on a GPU
    several at once in threads (``_config.JAX_WORKERS``), or on the Dask cluster's workers.

    Several processes may run the same experiment on one store at once: each unit is claimed
    before it is computed (see :class:`~mixlinreg.harness.store.UnitStore`), a unit claimed by
    another live process is not computed twice, and this call returns once every unit is done
    (waiting, polling every ``poll`` seconds, for units other processes are computing; a unit whose
    process died is taken over). A damaged unit file is set aside and recomputed.
    """
    from tqdm.auto import tqdm

    progress = check_bool("progress", progress)
    store = ResultStore(out_dir, exp, clean=True)
    done = store.done()
    units = exp.units()
    todo = [u for u in units if u.id not in done]
    if max_units is not None:
        todo = todo[:max_units]
    if backend not in ("loky", "dask", "sequential"):
        raise ValueError(f"backend must be 'loky', 'dask' or 'sequential', got {backend!r}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    from ..ifca import _resolve_backend, check_jax_method

    kernel = _resolve_backend(kernel)
    if kernel == "jax":
        from .._jax import import_jax

        import_jax()  # a missing extra is reported before any work
        check_jax_method(method, "kernel='jax'")
        if backend == "loky" and n_jobs > 1:
            raise ValueError(f"n_jobs must be 1 with kernel='jax' (the units run in this process on "
                             f"JAX's device; worker processes would each claim it), got {n_jobs}")
    if backend == "loky":  # never more local workers than usable cores or units to run
        n_jobs = max(1, min(n_jobs, usable_cores(), len(todo)))
    threads = numba_threads(n_jobs) if backend != "dask" else 1
    t0 = time.perf_counter()
    infos = []
    by_others = set()
    bar = tqdm(total=len(units), initial=len(units) - len(todo), unit="unit",
               desc=f"{exp.name}/{exp.preset}", disable=not progress)
    client = None
    try:
        if backend == "dask" and todo:
            from dask.distributed import Client

            client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        while todo:
            waiting = []
            for info in _run_units(exp, todo, store, threads, n_jobs, backend, method, kernel):
                if info.get("skipped") == "claimed":
                    waiting.append(info["unit"])
                    continue
                if info.get("skipped") == "done":
                    by_others.add(info["unit"])
                else:
                    infos.append(info)
                bar.update(1)
            # units claimed by another live process: wait for them, or take them over if it dies
            todo = [u for u in todo if u.id in waiting]
            while todo:
                time.sleep(poll)
                finished = {u.id for u in todo if store.units.is_done(u.id, warn=False)}
                by_others |= finished
                bar.update(len(finished))
                todo = [u for u in todo if u.id not in finished]
                if any(store.units.holder(u.id) is None for u in todo):
                    todo = [u for u in todo if store.units.holder(u.id) is None]
                    break
    finally:
        bar.close()
        if client is not None and not (scheduler is not None and client is scheduler):
            client.close()
    elapsed = time.perf_counter() - t0
    peak = max([i["peak_rss_mb"] for i in infos] +
               [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0])
    summary = dict(experiment=exp.name, preset=exp.preset, seconds=elapsed,
                   units_run=len(infos), units_total=len(units),
                   units_skipped=sum(u.id in done for u in units),
                   units_by_others=len(by_others),
                   runs=sum(i["runs"] for i in infos), diverged=sum(i["diverged"] for i in infos),
                   iterations=sum(i["iterations"] for i in infos), peak_rss_mb=peak,
                   n_jobs=n_jobs, threads_per_job=threads, backend=backend, kernel=kernel)
    if kernel == "jax":
        from .._jax import device_info

        summary["device"] = device_info()
    return store, summary


def format_summary(s):
    return (f"{s['experiment']}/{s['preset']}: {s['units_run']} units run "
            f"({s['units_skipped']} already done, "
            + (f"{s['units_by_others']} by another process, " if s.get('units_by_others') else "")
            + f"{s['units_total']} in all) in {s['seconds']:.1f} s; "
            f"{s['runs']} runs, {s['diverged']} diverged, {s['iterations']} iterations; "
            f"peak resident memory {s['peak_rss_mb']:.0f} MB per process; "
            f"{s['n_jobs']} jobs x {s['threads_per_job']} threads ({s['backend']})"
            + (f"; kernel: JAX on {s['device']}" if s.get("kernel") == "jax" else ""))
