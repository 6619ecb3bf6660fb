"""Why does one run of a unit differ between the JAX backend and the numba rows? Its path, three ways.

    python experiments/jax_run_diagnosis.py PANEL PRESET UNIT RUN --out DIR

Runs the unit's run ``RUN`` (a row index of the unit's table) on the JAX backend in float32 within
the whole unit (the packing of ``experiments/gpu_check.py``) in float32 and float64, alone in float32
and float64,
and on the numba kernel alone in float32, each with a trace; prints each one's final nearest
distance, loss and the last iteration whose assignments changed, and the first iteration where each
path's assignments leave the numba path's. Saves the label traces in ``DIR/run_<RUN>.npz``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixlinreg import ifca  # noqa: E402
from mixlinreg.harness import load_config  # noqa: E402
from mixlinreg.harness.run import unit_job  # noqa: E402
from mixlinreg.metrics import dist_nearest_from_matrix, pairwise_dist  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("panel")
    ap.add_argument("preset")
    ap.add_argument("unit")
    ap.add_argument("run", type=int)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    exp = load_config(args.panel, preset=args.preset)
    job = unit_job(exp, exp.unit(args.unit))
    i, T = args.run, exp.protocol["n_iter"]
    star = job.theta_star[job.y_index[[i]]].astype(np.float64)
    paths = {}
    for name, runs, dt, backend in (("numba_alone_f32", [i], np.float32, "numba"),
                                    ("jax_unit_f32", slice(None), np.float32, "jax"),
                                    ("jax_unit_f64", slice(None), np.float64, "jax"),
                                    ("jax_alone_f32", [i], np.float32, "jax"),
                                    ("jax_alone_f64", [i], np.float64, "jax")):
        kw = dict(method="data") if backend == "numba" else {}
        res = ifca(job.X.astype(dt), job.Y.astype(dt), job.init[runs].astype(dt), job.lr[runs],
                   n_iter=T, y_index=job.y_index[runs], dtype=dt, backend=backend, trace=True, **kw)
        j = i if isinstance(runs, slice) else 0
        labels = res.trace.labels[:, j]
        moved = np.flatnonzero((labels[1:] != labels[:-1]).any(axis=1))
        D = pairwise_dist(res.theta[j:j + 1].astype(np.float64), star)
        paths[name] = labels
        print(f"{name}: dist {float(dist_nearest_from_matrix(D)[0]):.6g}, loss {res.loss[j]:.6g}, "
              f"diverged {bool(res.diverged[j])}, last assignment change at iteration "
              f"{int(moved.max()) + 1 if moved.size else 0}", flush=True)
    ref = paths["numba_alone_f32"]
    for name, labels in paths.items():
        off = np.flatnonzero((labels != ref).any(axis=1))
        first = int(off[0]) if off.size else None
        machines = int((labels[first] != ref[first]).sum()) if off.size else 0
        print(f"{name}: first iteration whose assignments differ from numba_alone_f32: "
              f"{first} ({machines} machines)")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    np.savez_compressed(Path(args.out) / f"run_{i}.npz", **paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
