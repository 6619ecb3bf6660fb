"""Do two ways of computing the same units agree? One rule, one check: ``mixlinreg check-agreement``.

The reference is numba's direct path with the full iterations (``method="data"``, no early stop).
A candidate computes the same units another way: ``gram`` (the certified-Gram kernel path),
``early-stop`` (the optional early stop with a tolerance) or ``jax`` (the JAX backend). The rule
(:func:`unit_agreement`), row by row:

* the success flags under every rule (:data:`~mixlinreg.harness.success.RULES`) are identical;
* the divergence flags are identical;
* both final distances (``dist_nearest``, ``dist_matched``) agree to ``rel_tol`` relative
  (absolute where the reference distance is below ``floor``, where a relative change of a
  nearly-zero distance means nothing), for every run whose direct path reproduces itself under a
  different packing of the runs into matrix products. Runs that differ beyond that and that the
  direct path does not reproduce itself (re-run packed with the other differing runs and alone)
  are counted and listed, not failed: a run that never settles, whose last digits depend on how
  runs are packed, cannot agree with anything to 1e-3, not even with itself.

:func:`check_agreement` samples units of Figure 2 panels, runs both ways and applies the rule to
each; :func:`compare_rows` gives the per-unit summary counts (flags changed, largest changes).
This replaces the former ``check-gram`` and ``check-early-stop`` commands, which asked every
distance to agree, those of runs the direct path does not reproduce included.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .._validation import check_float, check_int
from .run import run_unit
from .success import RULES, trial_success

#: the candidates :func:`check_agreement` compares with numba's direct path
CANDIDATES = ("gram", "early-stop", "jax")


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


def distance_gap(ref, other, floor=1e-3):
    """Per run, how far ``other`` is from ``ref``: ``|other - ref| / |ref|`` where ``|ref| >=
    floor``, ``|other - ref|`` below it; 0 where both are equal (both NaN, or the same infinity)
    and ``inf`` where only one of them is finite."""
    a = np.asarray(ref, dtype=float)
    b = np.asarray(other, dtype=float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    fin = np.isfinite(a) & np.isfinite(b)
    gap = np.full(np.broadcast(a, b).shape, np.inf)
    scale = np.where(np.abs(a) >= floor, np.abs(a), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        gap[fin] = (np.abs(a - b) / scale)[fin]
    gap[same] = 0.0
    return gap


def sample_group_units(exp, per_group, rng):
    """``per_group`` distinct trials of every (m, n, d, k) group of ``exp``, drawn with ``rng``."""
    units = exp.units()
    chosen = []
    for g in exp.groups():
        cands = [u for u in units if (u.m, u.n, u.d, u.k) == g]
        pick = rng.choice(len(cands), size=min(per_group, len(cands)), replace=False)
        chosen += [cands[i] for i in sorted(pick)]
    return chosen


def sample_spread_units(exp, n_units, rng):
    """``n_units`` units of ``exp`` spread over its groups: one trial of the smallest and of the
    largest (m n) group first, then of other groups in an order drawn with ``rng``."""
    n_units = check_int("n_units", n_units, low=1)
    units = exp.units()
    groups = sorted({(u.m, u.n, u.d, u.k) for u in units}, key=lambda g: g[0] * g[1])
    order = [groups[0], groups[-1]] + [groups[i] for i in rng.permutation(len(groups))]
    chosen, seen = [], set()
    for g in order:
        if g in seen:
            continue
        seen.add(g)
        cands = [u for u in units if (u.m, u.n, u.d, u.k) == g]
        chosen.append(cands[int(rng.integers(len(cands)))])
        if len(chosen) == n_units:
            break
    return chosen


def unit_agreement(exp, unit, reference, rows, *, rel_tol=1e-3, floor=1e-3, max_reruns=300,
                   max_alone=20, n_threads=None):
    """Do ``rows`` (a candidate's result table of ``unit``) agree with ``reference`` (numba's direct
    path's table of the same unit under ``exp``'s protocol, e.g. the committed store's rows)?

    The rule (the module's): the success flags under every rule in :data:`RULES` and the
    divergence flags must be identical, and both final distances must agree (``rel_tol`` relative,
    absolute where the reference distance is below ``floor``; :func:`distance_gap`) for every run
    whose direct path reproduces itself under a different packing. Every run whose divergence
    flag or distances differ is re-run on numba's direct path packed with the other differing
    runs (without the unit's other runs) and, when there are at most ``max_alone`` of them, each
    alone; a run that some re-run moves off ``reference`` by the same test is *not reproducible*:
    counted and listed, not failed (but a changed divergence flag fails whatever the re-runs
    say). At most ``max_reruns`` runs are re-run; more such runs fail the rule. The distances of
    runs diverged in both tables are compared too (the models frozen at the first iterate beyond
    the divergence threshold), as they are for every other run.

    The runs that the direct path reproduces but ``rows`` does not are split, for diagnosis only,
    by one more re-run with one entry of their initial models moved by one unit in the last place
    (the first entry up, then the last entry down): ``ulp_sensitive`` if either change moves the
    run off ``reference`` (it depends on float rounding at its first step, so any other order of
    summation may end elsewhere), ``disagree`` otherwise. Both fail the rule.

    Returns a dict: the counts of :func:`compare_rows`; ``runs_beyond`` (the number of runs whose
    divergence flag or distances differ); ``diverged_runs`` (the row indices whose divergence flag
    differs); ``not_reproducible``, ``ulp_sensitive`` and ``disagree`` (row indices);
    ``max_gap_counted`` (the largest :func:`distance_gap` of a run not listed as not
    reproducible); ``runs`` (one dict per run beyond: its index, status, both tables' distances
    and divergence flags, the direct path's own values under each packing tried and their largest
    gap from the reference, ``direct_spread``); ``reruns_checked`` (False when more than
    ``max_reruns`` runs differ); ``agrees`` (the rule's verdict) and ``agrees_to_rounding`` (a
    diagnostic, not the rule: the verdict if one-ulp sensitive runs were also let pass).
    """
    rel_tol = check_float("rel_tol", rel_tol, low=0)
    floor = check_float("floor", floor, low=0)
    max_reruns = check_int("max_reruns", max_reruns, low=0)
    max_alone = check_int("max_alone", max_alone, low=0)
    out = compare_rows(reference, rows, exp.protocol["success_plus"], floor)
    ref_near = reference["dist_nearest"].to_numpy(dtype=float)
    ref_match = reference["dist_matched"].to_numpy(dtype=float)
    ref_div = reference["diverged"].to_numpy(dtype=bool)
    cand_near = rows["dist_nearest"].to_numpy(dtype=float)
    cand_match = rows["dist_matched"].to_numpy(dtype=float)
    cand_div = rows["diverged"].to_numpy(dtype=bool)

    def gap(sel, near, match):
        return np.maximum(distance_gap(ref_near[sel], near, floor),
                          distance_gap(ref_match[sel], match, floor))

    def moved(sel, near, match, div):
        """Runs ``sel`` whose result (near, match, div) is off the reference by the test."""
        return (ref_div[sel] != np.asarray(div, dtype=bool)) | (gap(sel, near, match) > rel_tol)

    everyone = np.arange(len(rows))
    cand_gap = gap(everyone, cand_near, cand_match)
    idx = np.flatnonzero(moved(everyone, cand_near, cand_match, cand_div))
    out["runs_beyond"] = int(idx.size)
    out["diverged_runs"] = [int(i) for i in np.flatnonzero(ref_div != cand_div)]
    checked = idx.size <= max_reruns
    direct = {int(i): [] for i in idx}  # the direct path's (near, match, diverged) per packing
    not_repro, sensitive, disagree = [], [], []
    if 0 < idx.size and checked:
        not_repro, sensitive, disagree = _rerun_direct(exp, unit, idx, moved, len(rows), direct,
                                                       max_alone, n_threads)
    out["not_reproducible"] = not_repro
    out["ulp_sensitive"] = sensitive
    out["disagree"] = disagree
    counted = np.ones(len(rows), dtype=bool)
    counted[not_repro] = False
    out["max_gap_counted"] = float(cand_gap[counted].max()) if counted.any() else 0.0
    status = {**{i: "not reproducible" for i in not_repro}, **{i: "one-ulp sensitive" for i in sensitive},
              **{i: "disagree" for i in disagree}}
    out["runs"] = [_run_detail(int(i), status, direct, (ref_near, ref_match, ref_div),
                               (cand_near, cand_match, cand_div), cand_gap, floor) for i in idx]
    flags_same = all(out[f"flags_changed_{r}"] == 0 for r in RULES)
    base = flags_same and out["diverged_changed"] == 0 and checked and not disagree
    out["reruns_checked"] = bool(checked)
    out["agrees"] = bool(base and not sensitive)
    out["agrees_to_rounding"] = bool(base)
    return out


def _rerun_direct(exp, unit, idx, moved, n_rows, direct, max_alone, n_threads):
    """Re-run the differing runs ``idx`` on numba's direct path, packed together and (at most
    ``max_alone`` of them) each alone, then the ones that stay put with a one-ulp change of their
    initial models. Fills ``direct``; returns ``(not reproducible, one-ulp sensitive, disagree)``."""
    from ..ifca import ifca
    from ..metrics import dist_matched_from_matrix, dist_nearest_from_matrix, pairwise_dist
    from .run import unit_job

    job = unit_job(exp, unit)
    p = exp.protocol

    def rerun(sel, init):
        res = ifca(job.X, job.Y, init, job.lr[sel], n_iter=p["n_iter"], y_index=job.y_index[sel],
                   early_stop=p["early_stop"], tol=p["tol"], dtype=job.X.dtype, method="data",
                   kernel="numba", n_threads=n_threads)
        D = pairwise_dist(res.theta, job.theta_star[job.y_index[sel]])
        return dist_nearest_from_matrix(D), dist_matched_from_matrix(D), res.diverged

    packings = [idx] + ([idx[j:j + 1] for j in range(idx.size)] if 1 < idx.size <= max_alone else [])
    off = np.zeros(n_rows, dtype=bool)
    for pk in packings:  # the runs that differ, without the unit's other runs
        near, match, div = rerun(pk, job.init[pk])
        off[pk] |= moved(pk, near, match, div)
        for j, i in enumerate(pk):
            direct[int(i)].append((float(near[j]), float(match[j]), bool(div[j])))
    not_repro = [int(i) for i in idx if off[i]]
    rest = np.array([i for i in idx if not off[i]], dtype=np.int64)
    moved_ulp = np.zeros(n_rows, dtype=bool)
    for entry, toward in ((0, np.inf), (-1, -np.inf)):
        if rest.size == 0:
            break
        init = job.init[rest].copy()
        flat = init.reshape(len(rest), -1)
        flat[:, entry] = np.nextafter(flat[:, entry], np.asarray(toward, dtype=init.dtype))
        moved_ulp[rest] |= moved(rest, *rerun(rest, init))
    return (not_repro, [int(i) for i in rest if moved_ulp[i]],
            [int(i) for i in rest if not moved_ulp[i]])


def _run_detail(i, status, direct, ref, cand, cand_gap, floor):
    """One differing run, for the report: both tables' values and the direct path's own."""
    own = direct[i]
    spread = max((max(distance_gap(ref[0][i], n, floor), distance_gap(ref[1][i], m, floor))
                  for n, m, _ in own), default=float("nan"))
    return dict(run=i, status=status.get(i, "not re-run"),
                ref_dist_nearest=float(ref[0][i]), cand_dist_nearest=float(cand[0][i]),
                ref_dist_matched=float(ref[1][i]), cand_dist_matched=float(cand[1][i]),
                ref_diverged=bool(ref[2][i]), cand_diverged=bool(cand[2][i]), gap=float(cand_gap[i]),
                direct_dist_nearest=[n for n, _, _ in own], direct_diverged=[d for _, _, d in own],
                direct_spread=float(spread))


def _candidate_run(candidate, tol):
    """(protocol change, run_unit keywords) of a candidate."""
    if candidate == "gram":
        return None, dict(method="gram", kernel="numba")
    if candidate == "early-stop":
        return tol, dict(method="data", kernel="numba")
    return None, dict(method="data", kernel="jax")


def _warm_up(dtype, candidate):
    """Compile (or load) the numba kernels for a unit's argument types, so no timing includes it."""
    from ..ifca import ifca

    gen = np.random.default_rng(0)
    X = gen.standard_normal((2, 3, 2)).astype(dtype)
    Y = gen.standard_normal((1, 2, 3)).astype(dtype)
    init = np.zeros((1, 2, 2), dtype=dtype)
    calls = [(False, "data")] + {"gram": [(False, "gram")], "early-stop": [(True, "data")]}.get(
        candidate, [])
    for es, meth in calls:
        ifca(X, Y, init, np.array([0.1]), n_iter=2, y_index=np.zeros(1, dtype=np.int64),
             early_stop=es, dtype=dtype, method=meth, kernel="numba")


def check_agreement(exps, candidate, *, trials=None, units=None, tol=None, rel_tol=1e-3, floor=1e-3,
                    seed=0, max_reruns=300, n_threads=None, progress=print):
    """Run sample units of each experiment on numba's direct path with the full iterations and on
    ``candidate`` (one of :data:`CANDIDATES`), and apply :func:`unit_agreement` to each unit.

    The units: ``trials`` trials of every (m, n, d, k) group of each experiment (the default, 2),
    or ``units`` units per experiment spread over its groups (:func:`sample_spread_units`), drawn
    with ``seed``. ``tol`` is the early-stop tolerance of the ``early-stop`` candidate (default
    1e-7; 0: exact) and is refused for the others.

    Returns ``(table, runs, verdict)``: one row per unit (the counts of :func:`compare_rows`, wall
    times and iteration counts of both ways, the counts and row indices of :func:`unit_agreement`
    and its verdict ``agrees``), one row per run whose divergence flag or distances differ (its
    unit, index, status, both tables' distances, the direct path's own spread), and True when
    every unit agrees.
    """
    from .earlystop import with_early_stop

    if not (isinstance(candidate, str) and candidate in CANDIDATES):
        raise ValueError(f"candidate must be one of {', '.join(CANDIDATES)}, got {candidate!r}")
    if trials is not None and units is not None:
        raise ValueError(f"give trials or units, not both; got trials={trials!r}, units={units!r}")
    if units is None:
        trials = check_int("trials", 2 if trials is None else trials, low=1)
    else:
        units = check_int("units", units, low=1)
    if tol is not None and candidate != "early-stop":
        raise ValueError(f"tol is the early-stop tolerance and applies only to candidate "
                         f"'early-stop', got tol={tol!r} with candidate {candidate!r}")
    if candidate == "early-stop":
        tol = check_float("tol", 1e-7 if tol is None else tol, low=0)
    rel_tol = check_float("rel_tol", rel_tol, low=0)
    floor = check_float("floor", floor, low=0)
    es_tol, run_kw = _candidate_run(candidate, tol)
    rng = np.random.default_rng(seed)
    rows, listed = [], []
    warmed = set()
    for exp in exps:
        ref_exp = with_early_stop(exp, None)  # the reference: the full iterations
        cand_exp = with_early_stop(exp, es_tol) if candidate == "early-stop" else ref_exp
        dtype = np.dtype(exp.protocol["dtype"])
        if dtype not in warmed:
            _warm_up(dtype, candidate)
            warmed.add(dtype)
        chosen = (sample_group_units(exp, trials, rng) if units is None
                  else sample_spread_units(exp, units, rng))
        for unit in chosen:
            t0 = time.perf_counter()
            ref, _ = run_unit(ref_exp, unit, n_threads=n_threads, method="data", kernel="numba")
            t1 = time.perf_counter()
            cand, _ = run_unit(cand_exp, unit, n_threads=n_threads, **run_kw)
            t2 = time.perf_counter()
            out = unit_agreement(ref_exp, unit, ref, cand, rel_tol=rel_tol, floor=floor,
                                 max_reruns=max_reruns, n_threads=n_threads)
            row = dict(experiment=exp.name, preset=exp.preset, unit=unit.id, runs=len(ref),
                       candidate=candidate, method_a=str(ref["method"].iloc[0]),
                       method_b=str(cand["method"].iloc[0]), tol=tol,
                       seconds_a=t1 - t0, seconds_b=t2 - t1,
                       iterations_a=int(ref["n_iter"].sum()), iterations_b=int(cand["n_iter"].sum()))
            row.update({k: v for k, v in out.items() if not isinstance(v, (list, bool))})
            for key in ("diverged_runs", "not_reproducible", "ulp_sensitive", "disagree"):
                row[key] = len(out[key])
                row[f"{key}_list"] = " ".join(map(str, out[key]))
            row["reruns_checked"] = out["reruns_checked"]
            row["agrees"] = out["agrees"]
            rows.append(row)
            for r in out["runs"]:
                listed.append(dict(experiment=exp.name, preset=exp.preset, unit=unit.id, **r))
            if progress is not None:
                progress(f"{exp.name}/{exp.preset} {unit.id}: {row['method_a']} {t1 - t0:.1f} s, "
                         f"{row['method_b']} {t2 - t1:.1f} s; flags changed "
                         f"{[row[f'flags_changed_{r}'] for r in RULES]}, divergence changed "
                         f"{row['diverged_changed']}, runs beyond {row['runs_beyond']} (not "
                         f"reproducible {out['not_reproducible']}, one-ulp sensitive "
                         f"{out['ulp_sensitive']}, disagree {out['disagree']}), largest gap of the "
                         f"other runs {row['max_gap_counted']:.2e}; "
                         + ("agrees" if out["agrees"] else "DISAGREES"))
    table = pd.DataFrame(rows)
    runs = pd.DataFrame(listed, columns=["experiment", "preset", "unit", "run", "status",
                                         "ref_dist_nearest", "cand_dist_nearest", "ref_dist_matched",
                                         "cand_dist_matched", "ref_diverged", "cand_diverged", "gap",
                                         "direct_dist_nearest", "direct_diverged", "direct_spread"])
    return table, runs, bool(len(table) and table["agrees"].all())
