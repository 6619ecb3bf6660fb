"""The paper grid on one GPU, end to end: the kernel projection of ``experiments/gpu_check.py`` plus
what the harness adds, checked against the two panels run whole on the GPU.

    python experiments/gpu_projection.py [--check figures/gpu_check]

Per panel: the kernel seconds projected by ``gpu_check.py`` (``gpu_check.json``), plus one
compilation per (m, n) group (the mean first-call overhead ``jax_first_s - jax_s`` of the units
measured there), plus per unit the host work that does not overlap the device (the rows of the
unit: distances, the matched assignment of every run, and the store's write), timed here on one
unit of each panel with a result of the right shape. Panels a and b were run whole on the GPU
(``harness/reproduce.txt``): their measured seconds are printed beside the estimate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixlinreg.harness import ResultStore, load_config  # noqa: E402
from mixlinreg.harness.run import unit_job, unit_rows  # noqa: E402
from mixlinreg.ifca import IFCAResult  # noqa: E402


def host_seconds(exp, unit, repeats=3):
    """Seconds to make a unit's rows and write them to a store (median of ``repeats``)."""
    job = unit_job(exp, unit)
    R = len(job.lr)
    rng = np.random.default_rng(0)
    theta = (job.theta_star[job.y_index] + 0.1 * rng.standard_normal(job.init.shape)).astype(
        job.X.dtype)  # near the truth, as most runs end: the matched assignment is not trivial
    res = IFCAResult(theta=theta, labels=np.zeros((R, unit.m), dtype=np.int64), loss=np.ones(R),
                     diverged=np.zeros(R, dtype=bool), converged=np.zeros(R, dtype=bool),
                     n_iter=np.full(R, exp.protocol["n_iter"]), method="jax")
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp, exp)
        for _ in range(repeats):
            t0 = time.perf_counter()
            store.write(unit.id, unit_rows(exp, unit, job, res))
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", default=str(ROOT / "figures" / "gpu_check"),
                    help="folder of gpu_check.py's outputs [figures/gpu_check]")
    args = ap.parse_args(argv)
    folder = Path(args.check)
    info = json.loads((folder / "gpu_check.json").read_text())
    units = pd.read_csv(folder / "gpu_check_units.csv")
    compile_s = float((units["jax_first_s"] - units["jax_s"]).mean())
    measured = {}
    log = folder / "harness" / "reproduce.txt"
    if log.exists():
        for name, sec in re.findall(r"(fig2\w)/paper: \d+ units run .*? in ([\d.]+) s", log.read_text()):
            measured[name] = float(sec)
    print(f"{info['device']}: mean compilation {compile_s:.2f} s per (m, n) group "
          f"(first call less second call of the {len(units)} units of gpu_check)")
    total, misses, others = 0.0, [], 0
    for g in info["grid"]:
        exp = load_config(g["panel"], preset="paper")
        unit = exp.unit(str(units[units["panel"] == g["panel"]]["unit"].iloc[0]))
        host = host_seconds(exp, unit)
        groups = len(exp.groups())
        est = g["projected_s"] + groups * compile_s + g["units"] * host
        total += est
        seen = ""
        if g["panel"] in measured:
            misses.append((measured[g["panel"]] - est) / g["units"])
            seen = (f"; run whole on the GPU: {measured[g['panel']]:.1f} s, "
                    f"{misses[-1]:.3f} s per unit more than estimated")
        else:
            others += g["units"]
        print(f"{g['panel']}: kernel {g['projected_s']:.0f} s + {groups} compilations "
              f"{groups * compile_s:.0f} s + {g['units']} units x {host:.3f} s of rows and store "
              f"(this machine) {g['units'] * host:.0f} s = {est:.0f} s{seen}")
    print(f"whole grid, end to end: {total / 60:.1f} min estimated (kernel alone "
          f"{info['grid_projected_min']:.1f} min)")
    if misses:
        lo, hi = min(misses), max(misses)
        print(f"if what the estimate missed on the panels run whole ({lo:.3f} to {hi:.3f} s per unit) "
              f"recurs in each of the other {others} units: {(total + others * lo) / 60:.1f} to "
              f"{(total + others * hi) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
