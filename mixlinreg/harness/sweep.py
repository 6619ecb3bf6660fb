"""A Figure 2 panel on the one runner (:mod:`mixlinreg.runner`): loky processes, an existing Dask
cluster, or (JAX on a GPU) threads."""

from __future__ import annotations

import resource
from functools import partial

from .. import _numerics
from .._env import usable_cores
from .._validation import check_bool
from ..runner import Units, Workload, check_backend, run
from ._sizing import largest_device_unit, largest_unit
from .experiment import GROUP_AXES
from .run import run_unit
from .store import ResultStore


def _jax_workers():
    """Units the JAX harness runs at once, in threads: on a GPU several (one unit's host work,
    drawing, validating and tabulating, overlaps the others' device work; waiting on the device
    releases the GIL); on JAX's CPU backend one (the computation already uses every core)."""
    from .._jax import import_jax

    if import_jax().default_backend() == "cpu":
        return 1
    return max(1, min(usable_cores(), _numerics.JAX_WORKERS))


def _compute(exp, method, kernel, unit_id, seed_sequence):
    """One unit of a Figure 2 panel, for the runner (numba threads: the worker's setting)."""
    return run_unit(exp, exp.unit(unit_id), method=method, kernel=kernel,
                    seed_sequence=seed_sequence)


def _seed_key(exp, unit_id):
    return exp.unit(unit_id).spawn_key


def _open_store(exp, root, clean):
    return ResultStore(root, exp, clean=clean).units


def workload(exp, *, method="auto", kernel="numba"):
    """A Figure 2 panel as a :class:`~mixlinreg.runner.Workload`: one unit per trial of each
    (m, n, d, k) group, seeded by ``SeedSequence(protocol seed, spawn_key=(m, n, d, k, trial))``,
    stored in ``<root>/<panel>-<preset>-<hash>/units`` (:class:`~mixlinreg.harness.store.ResultStore`).
    Its units are named on demand (:class:`~mixlinreg.runner.Units`: a grid of any size starts at
    once) and its largest unit's memory is estimated from the config
    (:func:`~mixlinreg.harness._sizing.largest_unit`), so that a unit that cannot fit is refused
    before any unit runs."""
    for a in GROUP_AXES:
        vals = list(exp.grid[a])
        if len(set(vals)) != len(vals):
            raise ValueError(f"workload {exp.name}: unit names must be unique, but grid.{a} lists "
                             f"a value twice ({vals})")
    units = exp.units()
    return Workload(name=exp.name, preset=exp.preset, key=exp.canonical(),
                    units=Units(len(units), units.id_at, units.find),
                    compute=partial(_compute, exp, method, kernel), seed=exp.protocol["seed"],
                    seed_key=partial(_seed_key, exp), open_store=partial(_open_store, exp),
                    to_csv_kw=dict(float_format="%.17g"),
                    memory=partial(largest_unit, exp, method, kernel or "numba"),
                    device_memory=partial(largest_device_unit, exp) if kernel == "jax" else None)


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
    records the path that computed it, and ``mixlinreg check-agreement --candidate gram`` measures
    that the paths agree.
    ``kernel`` is :func:`mixlinreg.ifca`'s kernel (``"numba"``, ``"jax"``; ``None``: the context's,
    see :func:`mixlinreg.use_kernel`): with ``"jax"`` the units run in this process on JAX's
    device (``n_jobs`` must be 1: worker processes would each claim the GPU's memory), on a GPU
    several at once in threads (``_numerics.JAX_WORKERS``), or on the Dask cluster's workers.

    Several processes may run the same experiment on one store at once: each unit is claimed
    before it is computed (see :class:`~mixlinreg.runner.store.UnitStore`), a unit claimed by
    another live process is not computed twice, and this call returns once every unit is done
    (waiting, polling every ``poll`` seconds, for units other processes are computing; a unit whose
    process died is taken over). A damaged unit file is set aside and recomputed.
    """
    progress = check_bool("progress", progress)
    n_jobs = check_backend(n_jobs, backend)
    from .._kernel_choice import check_jax_method, resolve_kernel

    kernel = resolve_kernel(kernel)
    workers = 1
    if kernel == "jax":
        from .._jax import import_jax

        import_jax()  # a missing extra is reported before any work
        check_jax_method(method, "kernel='jax'")
        if backend == "loky" and n_jobs > 1:
            raise ValueError(f"n_jobs must be 1 with kernel='jax' (the units run in this process on "
                             f"JAX's device; worker processes would each claim it), got {n_jobs}")
        if backend in ("loky", "sequential"):
            workers = _jax_workers()
    _, s = run(workload(exp, method=method, kernel=kernel), out_dir, n_jobs=n_jobs,
               backend=backend, scheduler=scheduler, progress=progress, max_units=max_units,
               poll=poll, thread_workers=workers, collect=False)
    infos = s["infos"]
    peak = max([i["peak_rss_mb"] for i in infos] +
               [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0])
    summary = dict(experiment=exp.name, preset=exp.preset, seconds=s["seconds"],
                   units_run=s["units_run"], units_total=s["units_total"],
                   units_skipped=s["units_skipped"], units_by_others=s["units_by_others"],
                   runs=sum(i["runs"] for i in infos), diverged=sum(i["diverged"] for i in infos),
                   iterations=sum(i["iterations"] for i in infos), peak_rss_mb=peak,
                   n_jobs=s["n_jobs"], threads_per_job=s["threads_per_job"], backend=backend,
                   kernel=kernel)
    if kernel == "jax":
        from .._jax import device_info

        summary["device"] = device_info()
    return ResultStore(out_dir, exp), summary


def format_summary(s):
    return (f"{s['experiment']}/{s['preset']}: {s['units_run']} units run "
            f"({s['units_skipped']} already done, "
            + (f"{s['units_by_others']} by another process, " if s.get('units_by_others') else "")
            + f"{s['units_total']} in all) in {s['seconds']:.1f} s; "
            f"{s['runs']} runs, {s['diverged']} diverged, {s['iterations']} iterations; "
            f"peak resident memory {s['peak_rss_mb']:.0f} MB per process; "
            f"{s['n_jobs']} jobs x {s['threads_per_job']} threads ({s['backend']})"
            + (f"; kernel: JAX on {s['device']}" if s.get("kernel") == "jax" else ""))
