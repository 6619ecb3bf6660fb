"""Measure the JAX kernel (``ifca(..., kernel="jax")``) on this machine's JAX device.

For one paper-preset unit of each Figure 2 panel (trial 0 of the group with the median ``m n``, the
units of ``mixlinreg bench --units``; for panels c and d also the group with the smallest ``m n``):

* the unit on JAX twice (the first call compiles; the second is the time reported), whether the two
  calls gave bitwise the same models, the useful floating-point operations per second and their
  fraction of the card's float32 matrix-product rate measured here (``--peak``), and JAX's peak
  device memory;
* its rows against the committed numba rows of ``figures/stores`` with the agreement criterion of
  :func:`mixlinreg.harness.agreement.unit_agreement` (success flags and divergences identical;
  distances to 1e-3 except runs the numba kernel does not reproduce itself under another packing);
* the numba kernel on the same unit with this machine's cores (``--numba-threads``);
* the whole paper grid projected from each panel's measured rate (every unit of the grid costs
  ``2 m n d R (k + 1)`` flop per iteration on JAX's dense path), and the per-unit speed-up over the
  2-core CPU path measured on the project's machine (``figures/bench_units_paper.csv``).

Run it with ``experiments/gpu_check.sh`` on a GPU machine (about 5 minutes on an H100-class card),
or here on the CPU with ``--quick`` (smoke-sized units against a fresh numba reference).
Writes ``gpu_check_units.csv`` and ``gpu_check.json`` under ``--out`` and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixlinreg import ifca  # noqa: E402
from mixlinreg.bench import median_unit  # noqa: E402
from mixlinreg.harness import ResultStore, load_config  # noqa: E402
from mixlinreg.harness.agreement import unit_agreement  # noqa: E402
from mixlinreg.harness.run import run_unit, unit_job, unit_rows  # noqa: E402

PANELS = ("fig2a", "fig2b", "fig2c", "fig2d")
#: float32 rate of an H100 / H200 SXM without tensor cores (vendor datasheet), for reference
DATASHEET_FP32_TFLOPS = {"H100": 67.0, "H200": 67.0}


def log(msg):
    print(msg, flush=True)


def measure_peak(jax, size):
    """float32 matrix-product rate at full precision (``Precision.HIGHEST``), TFLOP/s (median of
    10), and the relative error of that product and of the default-precision one against float64."""
    jnp = jax.numpy
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    A, B = jnp.asarray(a), jnp.asarray(b)
    hi = jax.jit(lambda x, y: jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST))
    lo = jax.jit(lambda x, y: jnp.dot(x, y))
    hi(A, B).block_until_ready()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        hi(A, B).block_until_ready()
        times.append(time.perf_counter() - t0)
    sec = float(np.median(times))
    n = min(size, 2048)
    ref = a[:n].astype(np.float64) @ b[:, :n].astype(np.float64)
    rel = {}
    for name, f in (("highest", hi), ("default", lo)):
        got = np.asarray(f(A[:n], B[:, :n]), dtype=np.float64)
        rel[name] = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return 2.0 * size ** 3 / sec / 1e12, rel


def pick_units(exp, quick):
    """Trial 0 of the median-``m n`` group (and, for m-n panels, of the smallest group)."""
    chosen = [median_unit(exp)]
    if exp.layout != "R-sigma" and not quick and median_unit(exp, group="smallest").id != chosen[0].id:
        chosen.append(median_unit(exp, group="smallest"))
    return chosen


def jax_flop(exp, unit, n_loop):
    """Floating-point operations of JAX's dense path for a unit: ``n_loop`` iterations of every
    run (forward pass of every model, gradient at the assigned one) and the final evaluation."""
    m, n, d, k = unit.m, unit.n, unit.d, unit.k
    R = exp.runs_per_unit
    return 2.0 * m * n * d * R * (k + 1) * n_loop + 2.0 * m * n * d * R * k


def reference_rows(exp, unit, stores):
    """The committed rows of the unit, or (no store) the numba kernel's rows computed now."""
    try:
        store = ResultStore.find(stores, exp)
        if store.units.is_done(unit.id, warn=False):
            return store.units.read(unit.id), "store"
    except FileNotFoundError:
        pass
    rows, _ = run_unit(exp, unit, kernel="numba")
    return rows, "numba now"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panels", nargs="+", default=list(PANELS), choices=PANELS)
    ap.add_argument("--quick", action="store_true", help="smoke-preset units (a CPU try-out)")
    ap.add_argument("--stores", default=str(ROOT / "figures" / "stores"),
                    help="committed numba result stores [figures/stores]")
    ap.add_argument("--cpu-baseline", default=str(ROOT / "figures" / "bench_units_paper.csv"),
                    help="per-unit seconds of the 2-core CPU path [figures/bench_units_paper.csv]")
    ap.add_argument("--peak", type=int, default=8192, help="size of the peak-rate product [8192]")
    ap.add_argument("--skip-numba", action="store_true", help="do not time the numba kernel here")
    ap.add_argument("--once", action="store_true",
                    help="one JAX call per unit (its time then includes the compilation)")
    ap.add_argument("--max-reruns", type=int, default=300,
                    help="runs beyond the distance tolerance re-run alone on numba, per unit [300]")
    ap.add_argument("--out", default="gpu_check_out", help="output folder [gpu_check_out]")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import jax
    import numba

    dev = jax.devices()[0]
    info = dict(jax=jax.__version__, device=f"{dev.platform} {getattr(dev, 'device_kind', '')}",
                cpu_count=os.cpu_count(), numba_threads=numba.config.NUMBA_NUM_THREADS,
                python=platform.python_version(), xla_flags=os.environ.get("XLA_FLAGS", ""))
    log(f"JAX {info['jax']} on {info['device']}; numba {numba.__version__} with "
        f"{info['numba_threads']} threads; {info['cpu_count']} CPUs")
    peak, rel = measure_peak(jax, args.peak if dev.platform == "gpu" else min(args.peak, 2048))
    info.update(peak_fp32_tflops=peak, matmul_rel_err_highest=rel["highest"],
                matmul_rel_err_default=rel["default"])
    log(f"float32 product at Precision.HIGHEST: {peak:.1f} TFLOP/s; relative error against float64 "
        f"{rel['highest']:.1e} (default precision: {rel['default']:.1e}; TF32 would be ~1e-4)")

    preset = "smoke" if args.quick else "paper"
    base = {}
    if Path(args.cpu_baseline).exists() and not args.quick:
        b = pd.read_csv(args.cpu_baseline)
        base = {r.unit: (r.seconds_gram, r.seconds_data) for r in b.itertuples()}
    rows, grid = [], []
    warmed = set()
    for panel in args.panels:
        exp = load_config(panel, preset=preset)
        p = exp.protocol
        for unit in pick_units(exp, args.quick):
            tag = f"{panel} {unit.id}"
            job = unit_job(exp, unit)
            kw = dict(n_iter=p["n_iter"], y_index=job.y_index, early_stop=p["early_stop"],
                      tol=p["tol"], dtype=job.X.dtype, kernel="jax")
            t0 = time.perf_counter()
            first = ifca(job.X, job.Y, job.init, job.lr, **kw)
            t_first = time.perf_counter() - t0
            res, t_jax = first, t_first
            if not args.once:
                t0 = time.perf_counter()
                res = ifca(job.X, job.Y, job.init, job.lr, **kw)
                t_jax = time.perf_counter() - t0
            same = bool(np.array_equal(first.theta, res.theta, equal_nan=True)
                        and np.array_equal(first.labels, res.labels))
            n_loop = int(res.n_iter.max())
            flop = jax_flop(exp, unit, n_loop)
            mem = (dev.memory_stats() or {}).get("peak_bytes_in_use", float("nan"))
            jrows = unit_rows(exp, unit, job, res)
            ref, ref_kind = reference_rows(exp, unit, args.stores)
            agree = unit_agreement(exp, unit, ref, jrows, max_reruns=args.max_reruns)
            row = dict(panel=panel, unit=unit.id, runs=len(jrows), n_loop=n_loop,
                       jax_first_s=t_first, jax_s=t_jax, bitwise_repeat=same,
                       tflops=flop / t_jax / 1e12, peak_fraction=flop / t_jax / 1e12 / peak,
                       peak_mem_gib=mem / 2**30, reference=ref_kind,
                       flags_changed=sum(agree[f"flags_changed_{r}"] for r in
                                         ("authors", "text", "best_loss")),
                       diverged_changed=agree["diverged_changed"],
                       runs_beyond_1e3=agree["runs_beyond"],
                       not_reproducible=len(agree["not_reproducible"]),
                       ulp_sensitive=len(agree["ulp_sensitive"]),
                       disagree=len(agree["disagree"]), agrees=agree["agrees"],
                       agrees_to_rounding=agree["agrees_to_rounding"],
                       not_reproducible_runs=" ".join(map(str, agree["not_reproducible"])),
                       ulp_sensitive_runs=" ".join(map(str, agree["ulp_sensitive"])),
                       disagree_runs=" ".join(map(str, agree["disagree"])),
                       max_rel_dist=max(agree["max_rel_dist_nearest"], agree["max_rel_dist_matched"]))
            if agree["runs_beyond"]:  # the rows, for a look elsewhere (e.g. with pandas)
                jrows.to_csv(out / f"{panel}_{unit.id}_rows.csv", index=False, float_format="%.17g")
            if not args.skip_numba:
                if panel not in warmed:  # compile numba's paths outside the timing
                    small = load_config(panel, preset="smoke")
                    for meth in ("data", "gram"):
                        run_unit(small, small.units()[0], kernel="numba", method=meth)
                    warmed.add(panel)
                t0 = time.perf_counter()
                nrows, ninfo = run_unit(exp, unit, kernel="numba")
                row["numba_s"] = time.perf_counter() - t0
                row["numba_method"] = ninfo["method"]
                row["speedup_vs_numba_here"] = row["numba_s"] / t_jax
            if unit.id in base:
                row["cpu2_gram_s"], row["cpu2_data_s"] = base[unit.id]
                row["speedup_vs_cpu2"] = row["cpu2_gram_s"] / t_jax
            rows.append(row)
            pd.DataFrame(rows).to_csv(out / "gpu_check_units.csv", index=False)  # as it goes
            log(f"{tag}: JAX {t_jax:.2f} s (first call {t_first:.1f} s), {row['tflops']:.1f} TFLOP/s "
                f"= {row['peak_fraction']:.0%} of peak, bitwise repeat {same}, peak memory "
                f"{row['peak_mem_gib']:.2f} GiB; vs {ref_kind}: flags changed {row['flags_changed']}, "
                f"diverged changed {row['diverged_changed']}, beyond 1e-3 {row['runs_beyond_1e3']} "
                f"(not reproducible by numba {row['not_reproducible']}, one-ulp sensitive "
                f"{row['ulp_sensitive']}, disagree {row['disagree']})"
                + (f"; numba here {row['numba_s']:.1f} s" if "numba_s" in row else ""))
        # the whole panel projected from the measured rates: each unit's flop over the rate of the
        # measured unit nearest in m n (the smallest group's rate for groups below it)
        measured = [(r["tflops"], next(u for u in exp.units() if u.id == r["unit"]))
                    for r in rows if r["panel"] == panel]
        secs = 0.0
        for u in exp.units():
            rate = min(measured, key=lambda mu: abs(mu[1].m * mu[1].n - u.m * u.n))[0]
            secs += jax_flop(exp, u, p["n_iter"]) / (rate * 1e12)
        grid.append(dict(panel=panel, units=len(exp.units()), projected_s=secs))
        log(f"{panel}: whole panel projected {secs:.0f} s over {len(exp.units())} units")

    table = pd.DataFrame(rows)
    table.to_csv(out / "gpu_check_units.csv", index=False)
    total = sum(g["projected_s"] for g in grid)
    info.update(grid=grid, grid_projected_min=total / 60.0, units=rows)
    (out / "gpu_check.json").write_text(json.dumps(info, indent=2, default=str))
    cols = [c for c in ("panel", "unit", "jax_s", "tflops", "peak_fraction", "peak_mem_gib",
                        "bitwise_repeat", "flags_changed", "diverged_changed", "runs_beyond_1e3",
                        "not_reproducible", "ulp_sensitive", "disagree", "agrees",
                        "agrees_to_rounding", "numba_s",
                        "speedup_vs_numba_here", "cpu2_gram_s", "speedup_vs_cpu2") if c in table]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        log(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    log(f"grid projected: {total / 60.0:.1f} min ("
        + ", ".join(f"{g['panel']} {g['projected_s']:.0f} s" for g in grid) + ")")
    return 0 if bool(table["agrees"].all()) else 1


if __name__ == "__main__":
    sys.exit(main())
