"""Where does one run of a Figure 2 unit part between the certified-Gram path and the direct path?

    python experiments/diagnose_path_difference.py fig2a paper m100_n100_d1000_k2_t0033 321
    python experiments/diagnose_path_difference.py fig2b paper m400_n100_d1000_k4_t0012 worst

``mixlinreg check-agreement --candidate gram`` compares the final distances of every run of a unit
computed both ways. For a run whose distances differ, this script says why. It runs

1. the unit on the Gram path (``method="gram"``, the run in its batch, as the store computes it),
   recording for the chosen run, before each iteration, whether its assignments were certified,
   whether it held Grams, its partition, and the smallest relative gap between a machine's two
   lowest losses (float64 losses of the current models: a gap near float32's resolution, ~1e-7,
   is a tie the working precision decides);
2. the same run on the direct path (``method="data"``): in its unit's batch, alone (with a
   trace), and in a batch of the unit's first few runs, to show whether the direct path
   reproduces itself when only the packing of the runs into BLAS calls changes;

(``worst``: the run whose distance changes most between the two paths, as ``check-agreement``
measures it (:func:`mixlinreg.harness.agreement.distance_gap`), found by a first run of the unit
on the Gram path) and prints the final distances,
the first iteration whose partition differs between the two paths and the loss gap there, and whether the run ever took a certified step (if not, every one of
its iterations was the direct path's, computed with a different packing of the runs into BLAS
calls, so the paths differ by rounding only).
"""

import sys

import numpy as np

import mixlinreg._gram as G
from mixlinreg import ifca
from mixlinreg.data import draw_trial
from mixlinreg.harness import load_config
from mixlinreg.harness.agreement import distance_gap
from mixlinreg.harness.run import run_unit, unit_seeds
from mixlinreg.inits import init_bernoulli
from mixlinreg.metrics import dist_nearest_from_matrix, pairwise_dist


def _worst(a, b, floor=1e-3):
    """The row whose dist_nearest or dist_matched changes most (relative; absolute below floor)."""
    change = np.zeros(len(a))
    for col in ("dist_nearest", "dist_matched"):
        change = np.maximum(change, distance_gap(a[col].to_numpy(float), b[col].to_numpy(float), floor))
    return int(np.argmax(change)), float(change.max())


def main(panel, preset, unit_id, run):
    exp = load_config(panel, preset)
    p = exp.protocol
    unit = exp.unit(unit_id)
    direct, _ = run_unit(exp, unit, method="data")
    if run == "worst":
        plain, _ = run_unit(exp, unit, method="gram")
        run, change = _worst(direct, plain)
        print(f"largest relative change of a distance in the unit: {change:.3g}, at run {run}")
    run = int(run)
    log = []
    certified = G._CertifiedRuns.certified
    X64 = {}

    def watch(self, live):  # the Gram path's own certificate, plus a float64 look at the run
        ok = certified(self, live)
        if live[run]:
            th = self.theta[run].astype(np.float64)
            X = X64.setdefault("X", self.data.X.astype(np.float64))
            y = self.data.Y[self.data.yidx[run]].astype(np.float64)
            L = np.square(np.einsum("mnd,kd->mnk", X, th) - y[..., None]).mean(axis=1)
            s = np.sort(L, axis=1)
            gap = float(((s[:, 1] - s[:, 0]) / np.maximum(s[:, 0], 1e-300)).min())
            log.append((bool(ok[run]), bool(self.in_gram[run]), gap,
                        np.bincount(self.st.asg[run], minlength=self.k).tolist()))
        return ok

    G._CertifiedRuns.certified = watch
    try:
        rows, _ = run_unit(exp, unit, method="gram")
    finally:
        G._CertifiedRuns.certified = certified
    r = rows.iloc[run]
    print(f"run {run}: R = {r.R}, sigma = {r.sigma}, init {r.init}, step {r.step}")
    print(f"direct path, in its batch of {len(rows)}: dist_nearest "
          f"{direct.dist_nearest.iloc[run]:.6g}, diverged {direct.diverged.iloc[run]}")
    print(f"Gram path, in its batch of {len(rows)}: dist_nearest {r.dist_nearest:.6g}, "
          f"diverged {r.diverged}, iterations {r.n_iter}")
    print(f"  certified before {sum(e[0] for e in log)} of {len(log)} iterations, "
          f"held Grams in {sum(e[1] for e in log)}")

    # the direct path: the same run alone, with a trace, and in a small batch
    data_ss, init_ss = unit_seeds(exp, unit)
    trial = draw_trial(unit.m, unit.n, unit.d, unit.k, rng=np.random.default_rng(data_ss),
                       dtype=np.dtype(p["dtype"]))
    cell = [(r.R, r.sigma)]
    Y, ts = trial.panel(cell, theta_scale=p["theta_scale"])
    inits = init_bernoulli(p["n_init"], unit.k, unit.d, rng=np.random.default_rng(init_ss),
                           dtype=np.dtype(p["dtype"]))
    kw = dict(n_iter=p["n_iter"], dtype=np.dtype(p["dtype"]), method="data")
    alone = ifca(trial.X, Y[0], inits[int(r.init)][None], float(r.step), trace=True,
                 theta_star=ts[0], **kw)
    d_alone = float(dist_nearest_from_matrix(pairwise_dist(alone.theta, ts[0][None]))[0])
    batch = np.concatenate([inits[int(r.init)][None], inits[:4]])
    small = ifca(trial.X, Y[0], batch, float(r.step), **kw)
    d_small = float(dist_nearest_from_matrix(pairwise_dist(small.theta[:1], ts[0][None]))[0])
    print(f"direct path, alone: dist_nearest {d_alone:.6g}; in a batch of 5: {d_small:.6g}")

    # log[t] holds the assignments of iteration t - 1 (what iteration t's certificate is about)
    for t in range(1, len(log)):
        got = np.bincount(alone.trace.labels[t - 1, 0], minlength=unit.k).tolist()
        if got != log[t][3]:
            print(f"partitions first differ after iteration {t - 1}: direct {got}, Gram {log[t][3]}; "
                  f"smallest relative gap between a machine's two lowest losses before that "
                  f"iteration {log[t - 1][2]:.3g}")
            break
    else:
        print("the partitions never differ")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4])
