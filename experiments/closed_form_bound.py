"""How much could a closed-form finish (issue 9, item 3) save on one Figure 2 unit?

    python experiments/closed_form_bound.py fig2d paper m400_n50_d1000_k4_t0000 [more units ...]

A closed-form finish replaces the remaining Gram steps of a run whose partition is certified for
the rest of the horizon by ``theta(T) = theta_hat + V (I - c Lambda)^(T - t) V^T (theta(t) -
theta_hat)``, with ``A_j = V Lambda V^T`` the eigendecomposition of each cluster Gram it uses. So it
can save at most the time the unit spends in Gram steps (``path_stats["seconds"]["gram"]`` of the
certified-Gram path), and it costs at least one symmetric eigendecomposition of a ``d x d`` float64
matrix per distinct cluster Gram (the distinct cluster sets of the Grams the unit made, built or
composed). This script runs the
unit on the Gram path (``method="gram"``, as the store computes it), times ``numpy.linalg.eigh`` of
one of the unit's own kind of Gram (``X^T X`` over a quarter of the machines, float64) in the same
process with the same threads, and prints, per unit:

* the unit's seconds and the seconds of each phase of the path (certify, data sweep, Gram steps,
  Gram entries, final evaluation);
* the run-iterations of each kind (full, assigned, Gram);
* the Grams made, and the upper bound of the saving, ``gram_s - grams * eigh_s`` (negative: the
  eigendecompositions alone cost more than all the Gram steps they would replace), as a fraction of
  the unit.

The bound is generous to the closed form: it assumes every Gram step could be finished in closed
form (no certificate for the rest of the horizon fails) and counts nothing for forming
``theta_hat`` or for the certificate itself.
"""

import contextlib
import sys
import time

import numpy as np

import mixlinreg._gram as G
from mixlinreg.data import draw_trial
from mixlinreg.harness import load_config
from mixlinreg.harness.run import run_unit, unit_seeds


def eigh_seconds(exp, unit, repeats=3):
    """Best-of-``repeats`` seconds of ``numpy.linalg.eigh`` of a float64 Gram of the unit's data
    (``sum X_i^T X_i`` over the first quarter of its machines)."""
    data_ss, _ = unit_seeds(exp, unit)
    trial = draw_trial(unit.m, unit.n, unit.d, unit.k, rng=np.random.default_rng(data_ss),
                       dtype=np.dtype(exp.protocol["dtype"]))
    Xq = trial.X[: max(1, unit.m // 4)].reshape(-1, unit.d).astype(np.float64)
    A = Xq.T @ Xq
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.linalg.eigh(A)
        best = min(best, time.perf_counter() - t0)
    return best


@contextlib.contextmanager
def distinct_grams():
    """Within the block, record the cluster sets of the Grams the cache makes (a set dropped from
    the cache and made again counts once: a closed form would keep its eigendecomposition)."""
    made = set()
    acquire = G._GramCache.acquire

    def recording(self, mask):
        key = np.asarray(mask).tobytes()
        if np.asarray(mask).any() and key not in self.slot_of:
            made.add(key)
        return acquire(self, mask)

    G._GramCache.acquire = recording
    try:
        yield made
    finally:
        G._GramCache.acquire = acquire


def main(panel, preset, unit_ids):
    exp = load_config(panel, preset)
    units = {u.id: u for u in exp.units()}
    for uid in unit_ids:
        if uid not in units:
            raise SystemExit(f"unit: {uid!r} is not a unit of {panel} at preset {preset}")
        unit = units[uid]
        with distinct_grams() as made:
            _, info = run_unit(exp, unit, method="gram")
        st = info["path_stats"]
        sec = st["seconds"]
        e = eigh_seconds(exp, unit)
        grams = len(made)
        total = float(info["seconds"])
        bound = sec["gram"] - grams * e
        it = {key: int(st[f"{key}_iterations"]) for key in ("full", "assigned", "gram")}
        n_it = sum(it.values())
        print(f"{panel} {uid}: {info['runs']} runs, {total:.1f} s on the Gram path "
              f"(method {info['method']})")
        print("  seconds by phase: " + ", ".join(f"{key} {v:.1f}" for key, v in sec.items()))
        print("  run-iterations: " + ", ".join(f"{key} {v} ({100 * v / max(1, n_it):.1f}%)"
                                               for key, v in it.items()))
        print(f"  Grams made: {st['grams_built']} ({st['grams_composed']} composed), {grams} "
              f"distinct cluster sets; eigh of one d x d "
              f"float64 Gram: {e:.3f} s")
        print(f"  closed-form finish, upper bound of the saving: {sec['gram']:.1f} - {grams} x "
              f"{e:.3f} = {bound:.1f} s ({100 * bound / total:.1f}% of the unit)")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
