"""Study CFLR6: CFL's bipartition rule (6) at the federated stationary point, in the linear model.

The claim (Sattler, Müller, Samek, Section 2): after federated learning has converged to a
stationary point ``theta*``, the cosine similarities of the clients' gradients (eq. (4)) tell the
clients apart by their hidden distribution, so the split of rule (6),
``c1, c2 = argmin max_{i in c1, j in c2} alpha_ij``, separates them, and splitting recursively
identifies "all groups of mutually congruent clients". The paper argues it with ``r_i = R_I(i)``
(infinitely many rows) and two distributions.

The setting is :mod:`mixlinreg.theory.cfl_linear`'s: ``k`` clusters of ``clients_per_cluster``
clients each, ``n`` rows per client, ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma eps``, the
stationary point the pooled least squares fit. Centres (``geometry``):

* ``"simplex"`` (the main one): a regular simplex, every pairwise distance exactly ``R``, rotated
  at random per trial (:func:`mixlinreg.geometry.simplex_centers`);
* ``"random"`` (the comparison): ``theta*_j = (R / sqrt 2) u_j``, ``u_j`` independent uniform unit
  vectors, so pairwise distances are about ``R`` (``R sqrt(1 - cos)``, ``cos ~ 1/sqrt d``);
* ``"collinear"`` (``k = 3`` only, the exception): ``-R e, 0, R e`` with equal sizes, so the
  middle cluster's centre *is* the stationary point and its population gradient is zero.

Per trial three outcomes (:func:`trial`), each a success or not:

* ``split``: rule (6) (:func:`mixlinreg.baselines.split_by_similarity` on
  :func:`~mixlinreg.baselines.cosine_similarities` of the gradients at the stationary point)
  *cuts no true cluster*: each side is a union of true clusters (for ``k = 2``: the split is the
  true split);
* ``tree``: recursive rule (6) with the truth as the stopping rule (:func:`recursive_split`):
  every group holding more than one true cluster is split at its own stationary point, and no
  split ever cuts a cluster (so the ``k - 1`` splits end at the true partition);
* ``cfl``: end-to-end :func:`mixlinreg.baselines.cfl` (FedAvg, one local step of size ``lr``,
  criterion (5) with thresholds :func:`cfl_thresholds` set from the known ``sigma`` and the
  separation, never from the outcome) converges with the true partition, adjusted Rand index 1.

The population case (:func:`population_cases`) is computed in closed form: with ``r_i =
R_I(i)`` the clients of one cluster have identical gradients ``2 (theta* - theta*_j)``, so every
bipartition is enumerated and the optimal ones (ties) counted.

The verdict (:func:`decide`): the paper's argument covers the cells where the empirical gradient
is close to the population one, measured by the nominal relative gradient error
``rho = sqrt(d/n) sqrt(1 + sigma^2/|v_k|^2)`` (``|v_k| = R sqrt((k-1)/(2k))``, the population
gradient's half-norm for the simplex): *holds* when, in every covered cell (``rho <=
rho_covered``) of the generic geometries, the Wilson lower bounds of ``split`` and ``tree`` are
``>= threshold``; *not supported* when some covered cell's upper bound is below it;
*inconclusive* otherwise; *holds with a caveat* when it holds but the collinear geometry or the
end-to-end CFL fails (upper bound below the threshold) in a covered cell. ``Verdict.scope``
names, per ``sigma/R``, the ``n/d`` from which the rule succeeds and where it fails.

Config: ``mixlinreg/configs/studies/CFLR6.toml``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from ...baselines import cfl, cosine_similarities, split_by_similarity
from ...config import Spec
from ...geometry import min_separation, simplex_centers
from ...metrics import adjusted_rand
from ...stats import wilson_interval
from .. import cfl_linear
from ..study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: cflr6.md beside this module
WORDS = words(__file__)

GEOMETRIES = ("simplex", "random", "collinear")
GENERIC = ("simplex", "random")  # centres in general position: no population gradient is zero
MEASURES = ("split", "tree", "cfl")
_OPEN01 = dict(low=0, high=1, open="both")

SCHEMA = {
    "params": {
        "d": Spec("int", low=2), "clients_per_cluster": Spec("int", low=2),
        "R": Spec("float", low=0, open="low"), "k_levels": Spec("list[int]", low=2),
        "sigma_levels": Spec("list[float]", low=0, open="low"),
        "nd_levels": Spec("list[float]", low=0, open="low"),
        "geometries": Spec("list[str]", choices=GEOMETRIES),
        "trials": Spec("int", low=1), "cfl_trials": Spec("int", low=0),
        "lr": Spec("float", low=0, open="low"), "eps1_ratio": Spec("float", **_OPEN01),
        "max_rounds": Spec("int", low=1), "population_clients": Spec("int", low=1, high=4),
        # the control's data without the structure (issue 37): every client draws from cluster
        # 0's centre (the labels and rho kept); false is the study as the paper has it
        "shared_centre": Spec("bool", required=False, default=False),
    },
    "margins": {
        "threshold": Spec("float", **_OPEN01),
        "threshold_neighbours": Spec("list[float]", **_OPEN01),
        "rho_covered": Spec("float", low=0, open="low"),
        "rho_covered_neighbours": Spec("list[float]", low=0, open="low"),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
    },
}


# ------------------------------------------------------------------------------ the pieces


def cuts_no_cluster(labels, side_a, side_b) -> bool:
    """Whether the bipartition ``side_a | side_b`` (positions into ``labels``) keeps every true
    cluster whole, i.e. each side is a union of true clusters.

    >>> cuts_no_cluster([0, 0, 1, 1, 2], [0, 1, 4], [2, 3]), cuts_no_cluster([0, 0, 1], [0], [1, 2])
    (True, False)
    """
    labels = np.asarray(labels)
    return not set(labels[np.asarray(side_a)].tolist()) & set(labels[np.asarray(side_b)].tolist())


def centers(geometry, k, d, R, rng):
    """The true parameters ``(k, d)`` of one trial (see the module docstring)."""
    if geometry == "simplex":
        return simplex_centers(k, d, R, rng)
    if geometry == "random":
        u = rng.standard_normal((k, d))
        return (R / math.sqrt(2.0)) * u / np.linalg.norm(u, axis=1, keepdims=True)
    if geometry == "collinear":
        if k != 3:
            raise ValueError(f"the collinear geometry has k = 3 clusters, got k = {k}")
        e = rng.standard_normal(d)
        return np.outer([-R, 0.0, R], e / np.linalg.norm(e))
    raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")


def nominal_rho(k, sigma, nd, R):
    """Nominal relative error of a client's gradient at the stationary point:
    ``sqrt(d/n) sqrt(1 + sigma^2 / |v|^2)`` with ``|v| = R sqrt((k-1)/(2k))`` the distance from a
    simplex vertex to the centroid (``E|(A_i - I) v|^2 ~ (d/n)|v|^2`` and the noise term
    ``E|2 sigma X_i^T eps_i / n|^2 = 4 sigma^2 d/n`` against ``|grad R_j| = 2|v|``).

    >>> round(nominal_rho(2, 0.5, 4.0, 1.0), 4)
    0.7071
    """
    v2 = R * R * (k - 1) / (2.0 * k)
    return math.sqrt((1.0 + sigma * sigma / v2) / nd)


def cfl_thresholds(sigma, d, n, separation, lr, eps1_ratio):
    """``(eps1, eps2)`` of criterion (5), set from the known noise level and separation.

    ``eps2 = lr sqrt(F S)``: the geometric mean of the congruent noise floor ``F = 2 sigma
    sqrt(d/n)`` (the typical gradient norm of a client at its own cluster's least squares fit) and
    the smallest incongruent signal ``S = separation`` (two equal clusters at that distance: each
    client's population gradient has norm ``2 S / 2``), times the step (updates are ``-lr``
    times the gradients); ``eps1 = eps1_ratio eps2``.

    >>> eps1, eps2 = cfl_thresholds(0.5, 20, 80, 1.0, 0.1, 0.02)
    >>> round(eps2, 6), round(eps1 / eps2, 6)
    (0.070711, 0.02)
    """
    floor = 2.0 * sigma * math.sqrt(d / n)
    eps2 = lr * math.sqrt(floor * separation)
    return eps1_ratio * eps2, eps2


def _split(grams, members):
    """Rule (6) on the clients ``members`` at their own stationary point: ``(side_a, side_b,
    value)`` (global indices; ``value`` the largest cross similarity of the cut)."""
    S = cosine_similarities(grams.gradients(members, grams.stationary_point(members)))
    a, b = split_by_similarity(S)
    return members[a], members[b], float(S[np.ix_(a, b)].max())


def recursive_split(grams, labels, first=None) -> bool:
    """Recursive rule (6) with the truth as the stopping rule: split every group that holds more
    than one true cluster at its own stationary point (``grams``: :class:`~mixlinreg.theory.cfl_linear.Grams` of the data);
    ``True`` if no split cuts a cluster. ``first`` is the top split when already computed,
    ``(side_a, side_b)``."""
    labels = np.asarray(labels)
    todo = [np.arange(labels.size)]
    while todo:
        g = todo.pop()
        if np.unique(labels[g]).size < 2:
            continue
        if first is not None:
            a, b = first
            first = None
        else:
            a, b, _ = _split(grams, g)
        if not cuts_no_cluster(labels, a, b):
            return False
        todo += [a, b]
    return True


def trial(geometry, k, n, sigma, p, rng, run_cfl):
    """One data set: ``{"ok_split", "ok_tree", "cut_value", "ok_cfl", ...}``."""
    theta_star = centers(geometry, k, p["d"], p["R"], rng)
    if p.get("shared_centre"):  # the control: one centre for every cluster (no structure)
        theta_star = np.repeat(theta_star[:1], k, axis=0)
    X, y, labels = cfl_linear.draw_clients(theta_star, [p["clients_per_cluster"]] * k, n, sigma,
                                           rng)
    grams = cfl_linear.Grams(X, y)
    a, b, value = _split(grams, np.arange(labels.size))
    ok = cuts_no_cluster(labels, a, b)
    row = {"ok_split": ok, "ok_tree": ok and recursive_split(grams, labels, (a, b)),
           "cut_value": value, "ok_cfl": np.nan, "cfl_converged": np.nan, "cfl_rounds": np.nan,
           "cfl_groups": np.nan}
    if run_cfl:
        eps1, eps2 = cfl_thresholds(sigma, p["d"], n, min_separation(theta_star), p["lr"],
                                    p["eps1_ratio"])
        res = cfl(X, y, lr=p["lr"], eps1=eps1, eps2=eps2, max_rounds=p["max_rounds"])
        conv = bool(res.extra["converged"])
        row.update(ok_cfl=bool(conv and adjusted_rand(labels, res.labels) == 1.0),
                   cfl_converged=conv, cfl_rounds=res.n_rounds, cfl_groups=res.theta.shape[0])
    return row


# ------------------------------------------------------------------------------ population


def _optimal_cuts(S, tol=1e-9):
    """Every bipartition's largest cross similarity (exhaustive; the side holding item 0 first):
    ``(value of rule (6)'s optimum, list of the optimal bipartitions)``."""
    g = S.shape[0]
    cuts = []
    for bits in itertools.product((False, True), repeat=g - 1):
        side_b = np.flatnonzero((False,) + bits)
        if 0 < side_b.size < g:
            side_a = np.setdiff1d(np.arange(g), side_b)
            cuts.append((float(S[np.ix_(side_a, side_b)].max()), side_a, side_b))
    best = min(c[0] for c in cuts)
    return best, [(a, b) for v, a, b in cuts if v <= best + tol]


def _population_configs(d, R, rng):
    """The closed-form cases: ``(name, centres, relative cluster sizes)``."""
    e = np.zeros(d)
    e[0] = 1.0
    f = np.zeros(d)
    f[1] = 1.0
    tri = R * np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])
    tri = np.vstack([tri, tri.mean(axis=0)])
    return ([(f"simplex k={k}", simplex_centers(k, d, R, rng), (1,) * k) for k in (2, 3, 4)]
            + [("collinear, two on one side (0, R, 3R)", np.outer([0.0, R, 3 * R], e), (1, 1, 1)),
               ("collinear, middle at the mean (-R, 0, R)", np.outer([-R, 0.0, R], e), (1, 1, 1)),
               ("collinear, sizes 2:1:1 put the mean on the middle (0, R, 3R)",
                np.outer([0.0, R, 3 * R], e), (2, 1, 1)),
               ("triangle and its centroid (k=4)", tri[:, :1] * e + tri[:, 1:] * f, (1, 1, 1, 1))])


def population_cases(d, R, clients, rng):
    """Rule (6) with ``r_i = R_I(i)``: per case, the cross-cluster cosines of the population
    gradients, the optimal bipartitions (all of them, by enumeration over ``clients`` clients per
    unit of size), how many of them cut a cluster, and whether
    :func:`~mixlinreg.baselines.split_by_similarity` returns one that does."""
    rows = []
    for name, ts, sizes in _population_configs(d, R, rng):
        sizes = np.asarray(sizes) * clients
        labels = np.repeat(np.arange(len(sizes)), sizes)
        G = cfl_linear.population_gradients(ts, sizes)
        C = cosine_similarities(G)
        S = C[np.ix_(labels, labels)]
        best, opt = _optimal_cuts(S)
        off = C[~np.eye(len(sizes), dtype=bool)]
        a, b = split_by_similarity(S)
        zero = np.flatnonzero(np.linalg.norm(G, axis=1) < 1e-12 * max(R, 1e-300))
        rows.append({"case": name, "k": len(sizes), "sizes": ":".join(map(str, sizes)),
                     "zero_gradients": len(zero), "max_cross_cos": float(off.max()),
                     "min_cross_cos": float(off.min()), "optimal_value": best,
                     "optimal_cuts": len(opt),
                     "optimal_cuts_cutting_a_cluster": sum(not cuts_no_cluster(labels, x, z)
                                                           for x, z in opt),
                     "rule6_cuts_a_cluster": not cuts_no_cluster(labels, a, b)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ units


def _cells(p):
    for geometry in p["geometries"]:
        for k in (p["k_levels"] if geometry != "collinear" else [3]):
            for sigma in p["sigma_levels"]:
                for nd in p["nd_levels"]:
                    yield geometry, k, sigma, nd


def units(params):
    p = params["params"]
    if p.get("shared_centre") and p["cfl_trials"]:
        raise ValueError(f"study CFLR6: params.cfl_trials must be 0 with shared_centre = true "
                         f"(CFL's thresholds need a separation), got {p['cfl_trials']}")
    if p["cfl_trials"] > p["trials"]:
        raise ValueError(f"study CFLR6: params.cfl_trials must be at most params.trials = "
                         f"{p['trials']}, got {p['cfl_trials']}")
    out = [("population", {"population": True})]
    out += [(f"{g}_k{k}_s{s:g}_nd{nd:g}", {"geometry": g, "k": k, "sigma": s, "nd": nd})
            for g, k, s, nd in _cells(p)]
    return out


def compute(spec, params, rng, shared):
    p = params["params"]
    if spec.get("population"):
        return population_cases(p["d"], p["R"], p["population_clients"], rng).assign(
            part="population")
    g, k, sigma, nd = spec["geometry"], spec["k"], spec["sigma"], spec["nd"]
    n = max(1, int(round(nd * p["d"])))
    rows = [dict(trial=t, **trial(g, k, n, sigma, p, rng, t < p["cfl_trials"]))
            for t in range(p["trials"])]
    return pd.DataFrame(rows).assign(part="trial", geometry=g, k=k, sigma=sigma, nd=n / p["d"],
                                     n=n, rho=nominal_rho(k, sigma, n / p["d"], p["R"]))


# ------------------------------------------------------------------------------ the verdict


def cell_counts(table):
    """Successes and trials per (geometry, k, sigma, nd, measure): the measurements."""
    t = table[table["part"] == "trial"]
    keys = ["geometry", "k", "sigma", "nd", "n", "rho"]
    out = []
    for measure in MEASURES:
        col = t[f"ok_{measure}"]
        ok = t.assign(ok=col.astype(float))[col.notna()]
        c = ok.groupby(keys, sort=True)["ok"].agg(["sum", "count"]).reset_index()
        out.append(c.rename(columns={"sum": "successes", "count": "trials"}).assign(
            measure=measure))
    cells = pd.concat(out, ignore_index=True)
    cells["successes"] = cells["successes"].round().astype(np.int64)
    cells["k"] = cells["k"].astype(np.int64)
    return cells


def _bounds(cells, confidence):
    lo, hi = wilson_interval(cells["successes"].to_numpy(), cells["trials"].to_numpy(), confidence)
    return cells.assign(rate=cells["successes"] / cells["trials"], lo=np.atleast_1d(lo),
                        hi=np.atleast_1d(hi))


def decide(cells, params) -> Decision:
    """CFLR6's verdict from the per-cell counts (``cells``: :func:`cell_counts`, columns
    ``geometry, k, sigma, nd, rho, measure, successes, trials``) at the config's ``threshold``,
    ``rho_covered`` and ``confidence``; pure.

    Covered cells are those with ``rho <= rho_covered``. Evidence: the covered cells of the
    generic geometries, measures ``split`` and ``tree``. *Not supported* if an evidence cell's
    Wilson upper bound is below ``threshold``; *inconclusive* if there is no evidence cell or one
    whose lower bound is below it; else *holds*, made *holds with a caveat* when a covered cell of
    the collinear geometry (``split``) or of end-to-end CFL (``cfl``, generic geometries) has its
    upper bound below ``threshold``.
    """
    mg = params["margins"]
    thr, rho_cov = mg["threshold"], mg["rho_covered"]
    c = _bounds(cells[cells["trials"] > 0], mg["confidence"])
    covered = c[c["rho"] <= rho_cov]
    ev = covered[covered["geometry"].isin(GENERIC) & covered["measure"].isin(("split", "tree"))]
    degenerate = covered[(covered["geometry"] == "collinear") & (covered["measure"] == "split")]
    ends = covered[covered["geometry"].isin(GENERIC) & (covered["measure"] == "cfl")]
    n_fail, n_hold = int((ev["hi"] < thr).sum()), int((ev["lo"] >= thr).sum())
    deg_fail, cfl_fail = int((degenerate["hi"] < thr).sum()), int((ends["hi"] < thr).sum())
    if not len(ev):
        verdict = INCONCLUSIVE
    elif n_fail:
        verdict = NOT_SUPPORTED
    elif n_hold < len(ev):
        verdict = INCONCLUSIVE
    else:
        verdict = CAVEAT if deg_fail or cfl_fail else HOLDS
    worst = ev.loc[ev["lo"].idxmin()] if len(ev) else None
    return Decision(verdict, {
        "threshold": thr, "rho_covered": rho_cov, "confidence": mg["confidence"],
        "evidence cells": len(ev), "evidence cells holding": n_hold,
        "evidence cells failing": n_fail,
        "lowest evidence lower bound": np.nan if worst is None else float(worst["lo"]),
        "collinear covered cells": len(degenerate), "collinear cells failing": deg_fail,
        "cfl covered cells": len(ends), "cfl cells failing": cfl_fail})


def holds_from(cells, thr, measures=("split", "tree"), geometries=GENERIC):
    """Per sigma: the smallest grid ``n/d`` from which every cell (all ``k``, ``measures``,
    ``geometries``) at that and every larger ``n/d`` has its lower bound ``>= thr`` (``nan``:
    none), and the largest ``n/d`` with some upper bound ``< thr`` (``nan``: none)."""
    c = cells[cells["measure"].isin(measures) & cells["geometry"].isin(geometries)]
    out = {}
    for sigma, g in c.groupby("sigma"):
        per_nd = g.groupby("nd").agg(lo=("lo", "min"), hi=("hi", "min")).sort_index()
        ok = (per_nd["lo"] >= thr).to_numpy()[::-1]
        run = int(np.argmin(ok)) if not ok.all() else ok.size  # holding n/d levels from the top
        start = float(per_nd.index[-run]) if run else np.nan
        fails = per_nd.index[(per_nd["hi"] < thr).to_numpy()]
        out[float(sigma)] = (start, float(fails.max()) if len(fails) else np.nan)
    return out


def scope_line(cells, thr, R):
    """``Verdict.scope``: where rule (6) succeeds, per ``sigma/R``, and where it fails."""
    hf = holds_from(cells, thr)
    parts, fails = [], []
    for sigma, (start, fail) in sorted(hf.items()):
        parts.append(WORDS.text("scope.from", start=start, sigma_R=sigma / R)
                     if np.isfinite(start) else WORDS.text("scope.none", sigma_R=sigma / R))
        if np.isfinite(fail):
            fails.append(WORDS.text("scope.fails at", fail=fail, sigma_R=sigma / R))
    generic = cells[cells["geometry"].isin(GENERIC)]
    pieces = [WORDS.text("scope", threshold=thr,
                         ks=", ".join(str(k) for k in sorted(generic["k"].unique())),
                         holds="; ".join(parts))]
    if fails:
        pieces.append(WORDS.text("scope.fails", fails="; ".join(fails)))
    col = cells[(cells["geometry"] == "collinear") & (cells["measure"] == "split")]
    if len(col):
        best = col.groupby("sigma")["rate"].max()
        pieces.append(WORDS.text("scope.collinear", rates=", ".join(f"{v:.2f}" for v in best),
                                 sigmas=", ".join(f"{v / R:g}" for v in best.index)))
    return "; ".join(pieces)


def _collinear_text(cells, R, lead):
    """The collinear geometry's split success at its largest n/d, per sigma ("" when not run)."""
    col = cells[(cells["geometry"] == "collinear") & (cells["measure"] == "split")]
    if not len(col):
        return ""
    top = col[col["nd"] == col["nd"].max()].sort_values("sigma")
    best = col.groupby("sigma")["rate"].max()
    return WORDS.text("collinear", lead=lead, nd=col["nd"].max(), rates=", ".join(
        WORDS.text("collinear.rate", rate=r.rate, best=best[r.sigma], sigma_R=r.sigma / R)
        for r in top.itertuples()))


# ------------------------------------------------------------------------------ the description


def _at(start):
    return f"{start:g}" if np.isfinite(start) else "none"


def _fmt_rate(r):
    return WORDS.text("rate", rate=r.rate, lo=r.lo, hi=r.hi, successes=int(r.successes),
                      trials=int(r.trials))


def _numbers(c, thr, rho_cov, R):
    """One row per (geometry, k, sigma): from which n/d each measure holds, and its success at the
    largest n/d."""
    rows = []
    for (geometry, k, sigma), g in c.groupby(["geometry", "k", "sigma"], sort=False):
        cov = g.loc[g["rho"] <= rho_cov, "nd"]
        row = {"geometry": geometry, "k": int(k), "sigma/R": sigma / R,
               f"covered (rho <= {rho_cov:g}) from n/d": float(cov.min()) if len(cov) else np.nan}
        for measure in MEASURES:
            hf = holds_from(g, thr, (measure,), (geometry,))
            row[f"{measure} holds from n/d"] = hf[float(sigma)][0] if hf else np.nan
        top = g[g["nd"] == g["nd"].max()].set_index("measure")
        for measure in ("split", "cfl"):
            row[f"{measure} at n/d = {g['nd'].max():g}"] = (_fmt_rate(top.loc[measure])
                                                            if measure in top.index else "")
        rows.append(row)
    return pd.DataFrame(rows)


def _population_text(pop):
    parts = []
    for r in pop.itertuples():
        n_opt, n_cut = int(r.optimal_cuts), int(r.optimal_cuts_cutting_a_cluster)
        if n_opt > 1:
            tie = WORDS.text("population.tie", n_opt=n_opt, value=r.optimal_value, n_cut=n_cut)
        else:
            tie = WORDS.text("population.one optimum cuts" if n_cut else "population.one optimum",
                             value=r.optimal_value)
        zero = int(r.zero_gradients)
        zeros = (WORDS.text("population.zero gradients" if zero > 1
                            else "population.zero gradient", zero=zero) if zero else "")
        parts.append(WORDS.text(
            "population.case", case=r.case, sizes=r.sizes, min_cos=r.min_cross_cos,
            max_cos=r.max_cross_cos, zeros=zeros, tie=tie,
            rule6=WORDS.text("population.cuts" if r.rule6_cuts_a_cluster else "population.keeps")))
    return "; ".join(parts)


def _summary(c, pop, d, p, mg):
    thr, rho_cov, R = mg["threshold"], mg["rho_covered"], p["R"]
    n = d.numbers
    cfl_from = holds_from(c, thr, ("cfl",), ("simplex",))
    both = c[c["measure"] == "split"].pivot_table(index=["k", "sigma", "nd"], columns="geometry",
                                                  values="rate")
    diff = (both["simplex"] - both["random"]).abs().max() if {"simplex", "random"} <= set(
        both.columns) else np.nan
    out = [WORDS.text(
        "summary", clients=p["clients_per_cluster"], d=p["d"], R=R, trials=p["trials"],
        cfl_trials=p["cfl_trials"], lr=p["lr"], eps1_ratio=p["eps1_ratio"], rho_covered=rho_cov,
        holding=n["evidence cells holding"], evidence=n["evidence cells"],
        confidence_pct=100 * mg["confidence"], threshold=thr,
        failing=n["evidence cells failing"], lowest=n["lowest evidence lower bound"],
        scope=scope_line(c, thr, R),
        cfl_from=", ".join(WORDS.text("summary.cfl from", start=_at(v[0]), sigma_R=s / R)
                           for s, v in sorted(cfl_from.items())),
        cfl_failing=n["cfl cells failing"], cfl_cells=n["cfl covered cells"],
        lowest_cfl=_worst_cfl(c, rho_cov, R))]
    if np.isfinite(diff):
        out.append(WORDS.text("summary.random", diff=diff))
    out.append(WORDS.text("summary.population", population=_population_text(pop)))
    # a collinear cell always has its split measure (every trial row has ok_split)
    collinear = _collinear_text(c, R, WORDS.text("summary.collinear lead"))
    if collinear:
        out.append(WORDS.text("summary.collinear", collinear=collinear))
    return " ".join(out)


def _worst_cfl(c, rho_cov, R):
    e = c[c["geometry"].isin(GENERIC) & (c["measure"] == "cfl") & (c["rho"] <= rho_cov)]
    if not len(e):
        return ""
    w = e.loc[e["lo"].idxmin()]
    return " " + WORDS.text("summary.lowest cfl", geometry=w["geometry"], k=int(w["k"]),
                            sigma_R=w["sigma"] / R, nd=w["nd"], rate=_fmt_rate(w))


def _caveats(p, mg):
    return WORDS.items("caveats", rho_covered=mg["rho_covered"], d=p["d"],
                       clients=p["clients_per_cluster"])


def sensitivity(cells, params):
    """The verdict of :func:`decide` at the neighbouring thresholds."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(cells, q).verdict)


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    counts = cell_counts(table)
    d = decide(counts, params)
    c = _bounds(counts, mg["confidence"])
    pop = table[table["part"] == "population"].dropna(axis=1, how="all").reset_index(drop=True)
    numbers = _numbers(c, mg["threshold"], mg["rho_covered"], p["R"])
    return Verdict(d.verdict, numbers, _summary(c, pop, d, p, mg), caveats=_caveats(p, mg),
                   sensitivity=sensitivity(counts, params),
                   scope=scope_line(c, mg["threshold"], p["R"]),
                   tables={".csv": c, "_population.csv": pop})


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    import matplotlib as mpl
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    p, mg = params["params"], params["margins"]
    c = verdict.tables[".csv"]
    ks = sorted(c["k"].unique())
    sigmas = sorted(c["sigma"].unique())
    cmap = mpl.colormaps["viridis"]
    color = {s: cmap(0.85 * i / max(1, len(sigmas) - 1)) for i, s in enumerate(sigmas)}
    fig = Figure(figsize=(5.2 * len(ks), 8.4))
    axes = fig.subplots(2, len(ks), squeeze=False)
    rows = ((0, (("simplex", "split", "-", 1.0), ("random", "split", "--", 0.5),
                 ("collinear", "split", ":", 0.8))),
            (1, (("simplex", "tree", "-", 1.0), ("simplex", "cfl", "-.", 0.8))))
    for col, k in enumerate(ks):
        for r, lines in rows:
            ax = axes[r][col]
            for geometry, measure, ls, alpha in lines:
                for s in sigmas:
                    g = c[(c["geometry"] == geometry) & (c["measure"] == measure) & (c["k"] == k)
                          & (c["sigma"] == s)].sort_values("nd")
                    if not len(g):
                        continue
                    err = [g["rate"] - g["lo"], g["hi"] - g["rate"]]
                    ax.errorbar(g["nd"], g["rate"], yerr=err, ls=ls, color=color[s], alpha=alpha,
                                lw=1.2, capsize=2, marker="o", ms=3)
                    cov = g[g["rho"] <= mg["rho_covered"]]
                    ax.plot(cov["nd"], cov["rate"], "o", color=color[s], ms=7, mfc="none",
                            alpha=alpha)
            ax.axhline(mg["threshold"], color="0.4", lw=0.8, ls="--")
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel("n / d (rows per client over dimension)")
            ax.grid(alpha=0.3)
            what = "first split cuts no cluster" if r == 0 else "recursive rule (6) / CFL ARI = 1"
            ax.set_title(f"k = {k}: {what}", fontsize=10)
        axes[0][col].set_ylabel("success rate (Wilson intervals)")
        axes[1][col].set_ylabel("success rate (Wilson intervals)")
    handles = [Line2D([], [], color=color[s], marker="o", ms=3, label=f"sigma/R = {s / p['R']:g}")
               for s in sigmas]
    handles += [Line2D([], [], color="0.3", ls=ls, label=lab) for ls, lab in
                (("-", "simplex centres"), ("--", "random centres (top)"),
                 (":", "collinear, centre at theta* (top, k = 3)"),
                 ("-.", "end-to-end CFL (bottom)"))]
    handles.append(Line2D([], [], color="0.3", marker="o", ms=7, mfc="none", ls="",
                          label=f"covered: rho <= {mg['rho_covered']:g}"))
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=5)
    fig.suptitle(f"CFLR6: rule (6) at the federated stationary point, d = {p['d']}, "
                 f"{p['clients_per_cluster']} clients per cluster, {p['trials']} data sets per "
                 f"cell ({p['cfl_trials']} with CFL)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


STUDY = Study(
    id="CFLR6", order=220, paper="CFL", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
