"""Do two ways of computing the same units agree? Per-row differences and sample-unit checks.

Used by ``mixlinreg check-early-stop`` (the optional early stop against the full 300 iterations,
:mod:`mixlinreg.harness.earlystop`) and ``mixlinreg check-gram`` (the certified-Gram kernel path
against the direct one, :func:`check_paths`). Both run the same units twice and compare, row by
row: the success flags under every rule (must not change), divergence and NaN (must not change),
the final distances (relative change, or absolute below ``floor`` where a relative change of a
nearly-zero distance means nothing) and the final training loss.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .run import run_unit
from .success import RULES, trial_success


def compare_rows(a: pd.DataFrame, b: pd.DataFrame, plus: float, floor: float = 1e-3) -> dict:
    """Differences between two result tables of the same unit(s), row for row."""
    if len(a) != len(b) or not (a["init"].to_numpy() == b["init"].to_numpy()).all():
        raise ValueError("compare_rows needs the same units' rows in the same order")
    out = {}
    sa, sb = trial_success(a, plus), trial_success(b, plus)
    for r in RULES:
        out[f"flags_changed_{r}"] = int((sa[r].to_numpy() != sb[r].to_numpy()).sum())
    out["diverged_changed"] = int((a["diverged"].to_numpy() != b["diverged"].to_numpy()).sum())
    for col in ("dist_nearest", "dist_matched"):
        x = a[col].to_numpy(dtype=float)
        y = b[col].to_numpy(dtype=float)
        out[f"nan_mismatch_{col}"] = int((np.isnan(x) != np.isnan(y)).sum())
        ok = ~np.isnan(x) & ~np.isnan(y)
        big = ok & (np.abs(x) >= floor)
        small = ok & (np.abs(x) < floor)
        rel = np.abs(x[big] - y[big]) / np.abs(x[big])
        out[f"max_rel_{col}"] = float(rel.max()) if rel.size else 0.0
        out[f"max_abs_small_{col}"] = float(np.abs(x[small] - y[small]).max()) if small.any() else 0.0
    la = a["loss"].to_numpy(dtype=float)
    lb = b["loss"].to_numpy(dtype=float)
    fin = np.isfinite(la) & np.isfinite(lb)
    out["max_abs_loss"] = float(np.abs(la[fin] - lb[fin]).max()) if fin.any() else 0.0
    out["max_rel_loss"] = float((np.abs(la[fin] - lb[fin]) / np.maximum(np.abs(la[fin]), 1e-300)).max()
                                if fin.any() else 0.0)
    return out


def agrees(table: pd.DataFrame, rel_tol: float) -> bool:
    """No flag, divergence or NaN changed and every distance >= floor moved by <= ``rel_tol``."""
    counts = [f"flags_changed_{r}" for r in RULES] + [
        "diverged_changed", "nan_mismatch_dist_nearest", "nan_mismatch_dist_matched"]
    return bool((table[counts].to_numpy() == 0).all()
                and (table[["max_rel_dist_nearest", "max_rel_dist_matched"]].to_numpy() <= rel_tol).all())


def sample_group_units(exp, per_group, rng):
    """``per_group`` distinct trials of every (m, n, d, k) group of ``exp``, drawn with ``rng``."""
    units = exp.units()
    chosen = []
    for g in exp.groups():
        cands = [u for u in units if (u.m, u.n, u.d, u.k) == g]
        pick = rng.choice(len(cands), size=min(per_group, len(cands)), replace=False)
        chosen += [cands[i] for i in sorted(pick)]
    return chosen


def check_paths(exps, per_group=2, methods=("data", "gram"), rel_tol=1e-3, floor=1e-3, seed=0,
                n_threads=None, progress=print):
    """Run sample units of each experiment on two kernel paths and compare them.

    ``per_group`` trials of every (m, n, d, k) group (an R-sigma panel has one group, so that is
    ``per_group`` trials with all its cells). Returns ``(table, verdict)``: one row per unit with
    the differences of :func:`compare_rows`, both wall times and the second path's step counts;
    the verdict is :func:`agrees`.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for exp in exps:
        for unit in sample_group_units(exp, per_group, rng):
            times = []
            tables = []
            for meth in methods:
                t0 = time.perf_counter()
                tab, _ = run_unit(exp, unit, n_threads=n_threads, method=meth)
                times.append(time.perf_counter() - t0)
                tables.append(tab)
            row = dict(experiment=exp.name, preset=exp.preset, unit=unit.id, runs=len(tables[0]),
                       method_a=str(tables[0]["method"].iloc[0]),
                       method_b=str(tables[1]["method"].iloc[0]),
                       seconds_a=times[0], seconds_b=times[1])
            row.update(compare_rows(tables[0], tables[1], exp.protocol["success_plus"], floor))
            rows.append(row)
            if progress is not None:
                progress(f"{exp.name}/{exp.preset} {unit.id}: {row['method_a']} {times[0]:.1f} s, "
                         f"{row['method_b']} {times[1]:.1f} s; flags changed "
                         f"{[row[f'flags_changed_{r}'] for r in RULES]}, max rel dist change "
                         f"{max(row['max_rel_dist_nearest'], row['max_rel_dist_matched']):.2e}, "
                         f"max loss change {row['max_abs_loss']:.2e}")
    table = pd.DataFrame(rows)
    return table, agrees(table, rel_tol)



def kernel_agreement(exp, unit, reference, rows, *, rel_tol=1e-3, floor=1e-3, max_reruns=300,
                     max_alone=20, n_threads=None):
    """Do ``rows`` (one kernel's result table of ``unit``) agree with ``reference`` (another's, e.g.
    the committed store's numba rows)?

    The criterion: the success flags under every rule (:data:`RULES`) must be identical, and every
    run whose divergence flag differs, or whose final distances differ (relative ``rel_tol``;
    absolute below ``floor``) while neither table has it diverged, must be one that the numba
    kernel does not reproduce itself when only the packing of runs changes. Those runs are re-run
    on numba's direct path packed together without the unit's other runs and, when there are at
    most ``max_alone`` of them, each alone; a run that some re-run also moves off ``reference`` by
    the same test (a run that never settles, or sits at the edge of the divergence threshold,
    whose last digits depend on how runs are packed into matrix products) is counted and listed,
    not failed; a run that every re-run reproduces but ``rows`` does not is a disagreement.
    Distances of runs diverged in both tables are not compared: they are the models frozen at
    the first iterate beyond the divergence threshold, and such a run fails every success rule
    whatever they are. At most ``max_reruns`` runs are re-run; more such runs make the verdict
    false.

    A second, weaker reading is reported beside it: the runs that numba reproduces under every
    packing tried are re-run once more with one entry of their initial models moved by one unit
    in the last place (the first entry up, then the last entry down); a run that either change
    moves off ``reference`` by the same test depends on float rounding at its first step, so any
    other order of summation (another BLAS, a GPU) may end elsewhere: it is listed as
    ``ulp_sensitive``. ``agrees_to_rounding`` then asks only that the success flags be identical
    and that every run that differs be not reproducible or one-ulp sensitive.

    Returns a dict: the counts of :func:`compare_rows`, ``runs_beyond`` (runs that differ by the
    test above), ``not_reproducible`` (their row indices that numba does not reproduce itself
    under another packing), ``ulp_sensitive``, ``disagree`` (the others), ``agrees`` (the
    verdict: no run outside ``not_reproducible``) and ``agrees_to_rounding``.
    """
    import numpy as np

    from ..ifca import ifca
    from ..metrics import dist_matched_from_matrix, dist_nearest_from_matrix, pairwise_dist
    from .run import unit_job

    out = compare_rows(reference, rows, exp.protocol["success_plus"], floor)
    ref_near = reference["dist_nearest"].to_numpy(dtype=float)
    ref_match = reference["dist_matched"].to_numpy(dtype=float)
    ref_div = reference["diverged"].to_numpy(dtype=bool)

    def differs(a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        nan = np.isnan(a) != np.isnan(b)
        both = ~np.isnan(a) & ~np.isnan(b)
        scale = np.where(both & (np.abs(a) >= floor), np.abs(a), 1.0)
        return nan | (both & (np.abs(a - b) / scale > rel_tol))

    def moved(sel, near, match, div):
        """Runs ``sel`` whose result (near, match, div) is off the reference by the test."""
        div = np.asarray(div, dtype=bool)
        dist = differs(ref_near[sel], near) | differs(ref_match[sel], match)
        return (ref_div[sel] != div) | (~ref_div[sel] & ~div & dist)

    everyone = np.arange(len(rows))
    idx = np.flatnonzero(moved(everyone, rows["dist_nearest"], rows["dist_matched"], rows["diverged"]))
    out["runs_beyond"] = int(idx.size)
    not_repro, sensitive, disagree = [], [], []
    if 0 < idx.size <= max_reruns:
        job = unit_job(exp, unit)
        p = exp.protocol
        packings = [idx] + ([idx[j:j + 1] for j in range(idx.size)]
                            if 1 < idx.size <= max_alone else [])
        off = np.zeros(len(rows), dtype=bool)
        for pk in packings:  # the runs that differ, without the unit's other runs
            res = ifca(job.X, job.Y, job.init[pk], job.lr[pk], n_iter=p["n_iter"],
                       y_index=job.y_index[pk], early_stop=p["early_stop"], tol=p["tol"],
                       dtype=job.X.dtype, method="data", backend="numba", n_threads=n_threads)
            D = pairwise_dist(res.theta, job.theta_star[job.y_index[pk]])
            off[pk] |= moved(pk, dist_nearest_from_matrix(D), dist_matched_from_matrix(D),
                             res.diverged)
        not_repro = [int(i) for i in idx if off[i]]
        rest = np.array([i for i in idx if not off[i]], dtype=np.int64)
        moved_ulp = np.zeros(len(rows), dtype=bool)
        for entry, toward in ((0, np.inf), (-1, -np.inf)):
            if rest.size == 0:
                break
            init = job.init[rest].copy()
            flat = init.reshape(len(rest), -1)
            flat[:, entry] = np.nextafter(flat[:, entry], np.asarray(toward, dtype=init.dtype))
            res = ifca(job.X, job.Y, init, job.lr[rest], n_iter=p["n_iter"],
                       y_index=job.y_index[rest], early_stop=p["early_stop"], tol=p["tol"],
                       dtype=job.X.dtype, method="data", backend="numba", n_threads=n_threads)
            D = pairwise_dist(res.theta, job.theta_star[job.y_index[rest]])
            moved_ulp[rest] |= moved(rest, dist_nearest_from_matrix(D),
                                     dist_matched_from_matrix(D), res.diverged)
        sensitive = [int(i) for i in rest if moved_ulp[i]]
        disagree = [int(i) for i in rest if not moved_ulp[i]]
    out["not_reproducible"] = not_repro
    out["ulp_sensitive"] = sensitive
    out["disagree"] = disagree
    flags_same = all(out[f"flags_changed_{r}"] == 0 for r in RULES)
    checked = idx.size <= max_reruns
    out["agrees"] = bool(flags_same and not sensitive and not disagree and checked)
    out["agrees_to_rounding"] = bool(flags_same and not disagree and checked)
    return out
