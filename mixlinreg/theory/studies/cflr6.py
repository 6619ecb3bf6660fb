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

Version 2 adds the gamma condition, judged in every cell of the grid (the transition region
included). In every trial, at the federated stationary point ``theta_hat`` (the pooled fit), the
true risk gradients are in closed form, ``grad R_j(theta_hat) = 2 (theta_hat - theta*_j)``
(:mod:`~mixlinreg.theory.cfl_linear`), so :func:`gamma_stats` gives exactly ``gamma_i =
|grad r_i - grad R_I(i)| / |grad R_I(i)|`` and ``alpha_cross_max``, the largest cosine between the
true risk gradients of different clusters. Condition (A), the extended version's statement (IEEE
TNNLS 2021): rule (6) separates the clusters correctly if ``max_i gamma_i < sqrt((1 -
alpha_cross_max)/2)``. The claim judged: every trial where (A) holds (by the relative margin
``gamma_margin``) has a split that cuts no cluster; one counter-example makes it *not
supported*; it is evidence only when (A) holds in at least ``min_condition_trials`` trials of the
hard cells (a cell is hard when (A) holds in some of its trials and fails in others, or its split
success rate lies strictly between ``hard_band`` and ``1 - hard_band``). Two conditions that a
worst-case argument guarantees are counted beside it as checks of the computation (never
counter-examples unless the code is wrong, see :func:`condition_ratios`).

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
        # version 2: a broken variant of rule (6) for the tests of the verdict (the split at the
        # largest gap of the gradient norms); "rule6" is the study as the paper has it
        "split_rule": Spec("str", choices=("rule6", "norms"), required=False, default="rule6"),
        # version 2: the n/d levels where end-to-end CFL runs (its first cfl_trials trials); an
        # empty list (the default) is every level, as in version 1
        "cfl_nd_levels": Spec("list[float]", low=0, open="low", required=False, default=[]),
    },
    "margins": {
        "threshold": Spec("float", **_OPEN01),
        "threshold_neighbours": Spec("list[float]", **_OPEN01),
        "rho_covered": Spec("float", low=0, open="low"),
        "rho_covered_neighbours": Spec("list[float]", low=0, open="low"),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
        # version 2: the gamma condition (A) and the hard cells
        "gamma_margin": Spec("float", low=0, high=1, open="high"),
        "gamma_margin_neighbours": Spec("list[float]", low=0, high=1, open="high"),
        "hard_band": Spec("float", low=0, high=0.5, open="both"),
        "hard_band_neighbours": Spec("list[float]", low=0, high=0.5, open="both"),
        "min_condition_trials": Spec("int", low=1),
        "min_condition_trials_neighbours": Spec("list[int]", low=1),
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


def gamma_stats(G, theta, theta_star, labels):
    """``(max_i gamma_i, alpha_cross_max)`` at the point ``theta`` from the clients' gradients
    ``G`` (rows, clients in ``labels``' order) and the true centres ``theta_star`` (one row per
    cluster label): ``gamma_i = |G_i - grad R_I(i)| / |grad R_I(i)|`` with the closed form ``grad
    R_j(theta) = 2 (theta - theta*_j)`` (``inf`` when that gradient is zero), and
    ``alpha_cross_max`` the largest cosine between ``grad R_j`` and ``grad R_l`` of two different
    clusters present in ``labels`` (a zero gradient has cosine 0, as in
    :func:`~mixlinreg.baselines.cosine_similarities`).

    >>> G = np.array([[1.0, 0.1], [1.0, -0.2], [-1.0, 0.0]])
    >>> ts = np.array([[-0.5, 0.0], [0.5, 0.0]])
    >>> [round(v, 6) for v in gamma_stats(G, np.zeros(2), ts, [0, 0, 1])]
    [0.2, -1.0]
    """
    labels = np.asarray(labels)
    present = np.unique(labels)
    pop = 2.0 * (np.asarray(theta)[None, :] - np.asarray(theta_star)[present])
    norms = np.linalg.norm(pop, axis=1)
    where = np.searchsorted(present, labels)
    dev = np.linalg.norm(np.asarray(G) - pop[where], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gam = np.where(norms[where] > 0, dev / np.where(norms[where] > 0, norms[where], 1.0),
                       np.inf)
    C = cosine_similarities(pop)
    off = C[~np.eye(present.size, dtype=bool)]
    return float(gam.max()), (float(off.max()) if off.size else np.nan)


def condition_ratios(gamma_max, alpha_cross, cut_value):
    """``max gamma_i`` over the bound of three sufficient conditions (a ratio ``< 1``: the
    condition holds), element-wise:

    * ``A``: the extended version's ``sqrt((1 - alpha_cross_max)/2)``, ``alpha_cross_max`` from the
      true risk gradients (the claim judged);
    * ``B``: ``sqrt((1 - v)/2)`` with ``v`` rule (6)'s own value (the largest cross cosine of its
      split): every client's gradient is within the angle ``arcsin gamma_i`` of its cluster's, so
      two clients of one cluster have cosine ``>= 1 - 2 gamma_max^2``, and a split that cut a
      cluster would have a cross cosine above ``v``: guaranteed;
    * ``C``: ``sin(arccos(alpha_cross_max)/4)``: two clients of one cluster are within ``2
      arcsin gamma_max`` of each other and two of different clusters at least ``arccos
      alpha_cross_max - 2 arcsin gamma_max`` apart, so with ``gamma_max`` below it every split
      that keeps the clusters whole beats every split that cuts one: guaranteed.

    >>> [round(float(r), 6) for r in condition_ratios(0.5, -1.0, -0.5)]
    [0.5, 0.57735, 0.707107]
    """
    g = np.asarray(gamma_max, dtype=float)
    a = np.clip(np.asarray(alpha_cross, dtype=float), -1.0, 1.0)
    v = np.clip(np.asarray(cut_value, dtype=float), -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (g / np.sqrt((1.0 - a) / 2.0), g / np.sqrt((1.0 - v) / 2.0),
                g / np.sin(np.arccos(a) / 4.0))


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


def split_by_norms(G):
    """A broken variant of rule (6) (``split_rule = "norms"``, for tests of the verdict only):
    the bipartition at the largest gap of the sorted gradient norms, blind to their directions.

    >>> [s.tolist() for s in split_by_norms(np.array([[1.0, 0], [0, 1.1], [-3.0, 0], [0, -2.9]]))]
    [[0, 1], [2, 3]]
    """
    norms = np.linalg.norm(G, axis=1)
    order = np.argsort(norms, kind="stable")
    cut = int(np.argmax(np.diff(norms[order]))) + 1
    a, b = np.sort(order[:cut]), np.sort(order[cut:])
    return (a, b) if 0 in a else (b, a)


def _split(grams, members, full=False, rule="rule6"):
    """Rule (6) on the clients ``members`` at their own stationary point: ``(side_a, side_b,
    value)`` (global indices; ``value`` the largest cross similarity of the cut), and with
    ``full`` also the gradients and the point. ``rule = "norms"``: the broken variant
    :func:`split_by_norms` instead."""
    theta = grams.stationary_point(members)
    G = grams.gradients(members, theta)
    S = cosine_similarities(G)
    a, b = split_by_similarity(S) if rule == "rule6" else split_by_norms(G)
    out = (members[a], members[b], float(S[np.ix_(a, b)].max()))
    return out + (G, theta) if full else out


def _r10(x):
    """``x`` to 10 significant digits (the per-trial table's floats: the analysis reads the values
    the table holds, and the table stays small)."""
    return float(f"{x:.10g}")


def recursive_split(grams, labels, first=None, rule="rule6") -> bool:
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
            a, b, _ = _split(grams, g, rule=rule)
        if not cuts_no_cluster(labels, a, b):
            return False
        todo += [a, b]
    return True


def trial(geometry, k, n, sigma, p, rng, run_cfl):
    """One data set: ``{"ok_split", "ok_tree", "cut_value", "gamma_max", "alpha_cross", "ok_cfl",
    ...}`` (``gamma_max``, ``alpha_cross``: :func:`gamma_stats` at the stationary point, with the
    data's true centres)."""
    theta_star = centers(geometry, k, p["d"], p["R"], rng)
    if p.get("shared_centre"):  # the control: one centre for every cluster (no structure)
        theta_star = np.repeat(theta_star[:1], k, axis=0)
    X, y, labels = cfl_linear.draw_clients(theta_star, [p["clients_per_cluster"]] * k, n, sigma,
                                           rng)
    grams = cfl_linear.Grams(X, y)
    rule = p.get("split_rule", "rule6")
    a, b, value, G, theta = _split(grams, np.arange(labels.size), full=True, rule=rule)
    ok = cuts_no_cluster(labels, a, b)
    gamma_max, alpha_cross = gamma_stats(G, theta, theta_star, labels)
    row = {"ok_split": ok, "ok_tree": ok and recursive_split(grams, labels, (a, b), rule),
           "cut_value": _r10(value), "gamma_max": _r10(gamma_max),
           "alpha_cross": _r10(alpha_cross), "ok_cfl": np.nan, "cfl_converged": np.nan,
           "cfl_rounds": np.nan, "cfl_groups": np.nan}
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
    cfl_here = not p.get("cfl_nd_levels") or nd in p["cfl_nd_levels"]
    rows = [dict(trial=t, **trial(g, k, n, sigma, p, rng, cfl_here and t < p["cfl_trials"]))
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


KEYS = ["geometry", "k", "sigma", "nd"]


def gamma_trials(table):
    """The per-trial measurements of the gamma condition: ``geometry, k, sigma, nd, ok_split``
    (bool), ``gamma_max, alpha_cross, cut_value`` of every trial (empty when the table has none).

    They come from the rows with ``part == "gamma"`` when the table has some (a committed record:
    :func:`analyze` stores them beside the population rows, in ``<ID>_<preset>_population.csv``,
    the table that is read back whole with the per-cell counts), else from the trial rows (a run's
    units' rows, or a table without ``part``)."""
    cols = KEYS + ["ok_split", "gamma_max", "alpha_cross", "cut_value"]
    if "part" in table:
        t = table[table["part"] == "gamma"]
        if not len(t):
            t = table[table["part"] == "trial"]
    else:
        t = table
    if not len(t) or "gamma_max" not in t:
        return pd.DataFrame(columns=cols)
    t = t[cols].reset_index(drop=True)
    ok = t["ok_split"].map(lambda v: v is True or v == 1 or str(v) == "True")
    return t.assign(ok_split=ok.astype(bool), k=t["k"].astype(np.int64))


def gamma_cells(trials, margins):
    """Per cell (``geometry, k, sigma, nd``): the trials, where condition (A) holds (ratio ``< 1 -
    gamma_margin``), fails (``>= 1 + gamma_margin``) or is on the boundary (between: neither), the
    successes of rule (6) in each, the counter-examples (A holds and the split cuts a cluster),
    the same counts of the guaranteed conditions B and C (:func:`condition_ratios`), and whether
    the cell is hard (A holds in some trials and fails in others, or the split success rate lies
    strictly between ``hard_band`` and ``1 - hard_band``)."""
    eps, band = margins["gamma_margin"], margins["hard_band"]
    if not len(trials):
        return pd.DataFrame(columns=KEYS + ["trials", "successes", "a_holds", "a_fails",
                                            "a_boundary", "a_successes", "a_fail_successes",
                                            "a_counter", "b_holds", "b_counter", "c_holds",
                                            "c_counter", "hard", "rate", "a_share"])
    ok = trials["ok_split"].astype(bool).to_numpy()
    ra, rb, rc = condition_ratios(trials["gamma_max"], trials["alpha_cross"],
                                  trials["cut_value"])
    f = trials[KEYS].assign(
        trials=1, successes=ok.astype(int), a_holds=(ra < 1 - eps).astype(int),
        a_fails=(~(ra < 1 + eps)).astype(int))  # nan ratios (never) count as failing
    f = f.assign(a_boundary=1 - f["a_holds"] - f["a_fails"],
                 a_successes=(f["a_holds"] == 1) & ok, a_fail_successes=(f["a_fails"] == 1) & ok,
                 a_counter=(f["a_holds"] == 1) & ~ok,
                 b_holds=rb < 1 - eps, b_counter=(rb < 1 - eps) & ~ok,
                 c_holds=rc < 1 - eps, c_counter=(rc < 1 - eps) & ~ok)
    g = f.groupby(KEYS, sort=True).sum(numeric_only=True).reset_index()
    for col in g.columns[len(KEYS):]:
        g[col] = g[col].astype(np.int64)
    rate = g["successes"] / g["trials"]
    g["hard"] = (((g["a_holds"] > 0) & (g["a_fails"] > 0))
                 | ((rate > band) & (rate < 1 - band)))
    # the split success rate and (A)'s share of the trials: the lower bound (A) predicts for it
    return g.assign(rate=rate, a_share=g["a_holds"] / g["trials"])


def decide(cells, params, gamma=None) -> Decision:
    """CFLR6's verdict from the per-cell counts (``cells``: :func:`cell_counts`, columns
    ``geometry, k, sigma, nd, rho, measure, successes, trials``) and the per-trial gamma
    measurements (``gamma``: :func:`gamma_trials`; ``None``: none) at the config's margins; pure.

    Covered cells are those with ``rho <= rho_covered``. Evidence: the covered cells of the
    generic geometries, measures ``split`` and ``tree``, and condition (A) in every cell.
    *Not supported* if an evidence cell's Wilson upper bound is below ``threshold``, or if some
    trial where (A) holds has a split that cuts a cluster (a counter-example to a sufficient
    condition); *inconclusive* if there is no evidence cell or one whose lower bound is below
    ``threshold``, or if (A) holds in fewer than ``min_condition_trials`` trials of the hard
    cells; else *holds*, made *holds with a caveat* when a covered cell of the collinear geometry
    (``split``) or of end-to-end CFL (``cfl``, generic geometries) has its upper bound below
    ``threshold``.
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
    gc = gamma_cells(gamma if gamma is not None else gamma_trials(c.iloc[:0]), mg)
    hard = gc[gc["hard"].astype(bool).to_numpy()]
    counter, hard_a = int(gc["a_counter"].sum()), int(hard["a_holds"].sum())
    if not len(ev):
        verdict = INCONCLUSIVE
    elif n_fail or counter:
        verdict = NOT_SUPPORTED
    elif n_hold < len(ev) or hard_a < mg["min_condition_trials"]:
        verdict = INCONCLUSIVE
    else:
        verdict = CAVEAT if deg_fail or cfl_fail else HOLDS
    worst = ev.loc[ev["lo"].idxmin()] if len(ev) else None
    a_fails = int(gc["a_fails"].sum())
    return Decision(verdict, {
        "threshold": thr, "rho_covered": rho_cov, "confidence": mg["confidence"],
        "evidence cells": len(ev), "evidence cells holding": n_hold,
        "evidence cells failing": n_fail,
        "lowest evidence lower bound": np.nan if worst is None else float(worst["lo"]),
        "collinear covered cells": len(degenerate), "collinear cells failing": deg_fail,
        "cfl covered cells": len(ends), "cfl cells failing": cfl_fail,
        "gamma_margin": mg["gamma_margin"], "hard_band": mg["hard_band"],
        "min_condition_trials": mg["min_condition_trials"],
        "gamma trials": int(gc["trials"].sum()), "A holds": int(gc["a_holds"].sum()),
        "A successes": int(gc["a_successes"].sum()), "A counter-examples": counter,
        "A fails": a_fails, "A fails, successes": int(gc["a_fail_successes"].sum()),
        "A boundary": int(gc["a_boundary"].sum()),
        "cells": len(gc), "hard cells": len(hard), "A holds in hard cells": hard_a,
        "A successes in hard cells": int(hard["a_successes"].sum()),
        "B holds": int(gc["b_holds"].sum()), "B counter-examples": int(gc["b_counter"].sum()),
        "C holds": int(gc["c_holds"].sum()), "C counter-examples": int(gc["c_counter"].sum())})


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


def sensitivity(cells, params, gamma=None):
    """The verdict of :func:`decide` at the neighbouring thresholds."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(cells, q, gamma).verdict)


def _gamma_numbers(gc, R):
    """Per (geometry, k, sigma): condition (A)'s counts, joined to :func:`_numbers`' rows."""
    rows = []
    for (geometry, k, sigma), g in gc.groupby(["geometry", "k", "sigma"], sort=False):
        a, fails = int(g["a_holds"].sum()), int(g["a_fails"].sum())
        rows.append({"geometry": geometry, "k": int(k), "sigma/R": sigma / R,
                     "hard cells": int(g["hard"].sum()),
                     "(A) holds": f"{a}/{int(g['trials'].sum())}",
                     "split ok given (A)": f"{int(g['a_successes'].sum())}/{a}",
                     "split ok, (A) fails": f"{int(g['a_fail_successes'].sum())}/{fails}"})
    return pd.DataFrame(rows)


def _gamma_text(gc, d, mg):
    """The summary's sentence on condition (A) and the checks B and C."""
    n = d.numbers
    a, fails = n["A holds"], n["A fails"]
    trials = n["gamma trials"]
    return WORDS.text(
        "summary.gamma", trials=trials, a_holds=a, a_pct=100 * a / trials if trials else np.nan,
        a_successes=n["A successes"], counter=n["A counter-examples"], a_fails=fails,
        fail_successes=n["A fails, successes"],
        fail_pct=100 * n["A fails, successes"] / fails if fails else np.nan,
        boundary=n["A boundary"], margin=mg["gamma_margin"], hard=n["hard cells"],
        cells=n["cells"], band=mg["hard_band"], hard_a=n["A holds in hard cells"],
        hard_a_successes=n["A successes in hard cells"], min_trials=mg["min_condition_trials"],
        b_holds=n["B holds"], b_counter=n["B counter-examples"], c_holds=n["C holds"],
        c_counter=n["C counter-examples"])


def hard_rule(mg):
    """``Verdict.cells``' rule: what makes a cell hard."""
    return WORDS.text("hard rule", band=mg["hard_band"], upper=1 - mg["hard_band"],
                      margin=mg["gamma_margin"])


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    counts = cell_counts(table)
    gamma = gamma_trials(table)
    d = decide(counts, params, gamma)
    c = _bounds(counts, mg["confidence"])
    gc = gamma_cells(gamma, mg)
    pop = table[table["part"] == "population"].dropna(axis=1, how="all").reset_index(drop=True)
    numbers = _numbers(c, mg["threshold"], mg["rho_covered"], p["R"])
    if len(gc):
        numbers = numbers.merge(_gamma_numbers(gc, p["R"]), on=["geometry", "k", "sigma/R"],
                                how="left")
    summary = _summary(c, pop, d, p, mg) + " " + _gamma_text(gc, d, mg)
    # the per-cell counts replace the units' rows (as in version 1); the per-trial gamma rows go
    # with the population rows, which a committed record's analysis reads back whole
    pop_and_gamma = pd.concat([pop, gamma.assign(part="gamma")], ignore_index=True)
    return Verdict(d.verdict, numbers, summary, caveats=_caveats(p, mg),
                   sensitivity=sensitivity(counts, params, gamma),
                   scope=scope_line(c, mg["threshold"], p["R"]),
                   tables={".csv": c, "_gamma.csv": gc, "_population.csv": pop_and_gamma},
                   cells={"hard": int(d.numbers["hard cells"]), "total": int(d.numbers["cells"]),
                          "rule": hard_rule(mg)})


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    import matplotlib as mpl
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    p, mg = params["params"], params["margins"]
    c = verdict.tables[".csv"]
    gc = verdict.tables["_gamma.csv"]
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
            if r == 0 and len(gc):  # condition (A)'s share: the lower bound it predicts
                for s in sigmas:
                    g = gc[(gc["geometry"] == "simplex") & (gc["k"] == k)
                           & (gc["sigma"] == s)].sort_values("nd")
                    ax.plot(g["nd"], g["a_holds"] / g["trials"], color=color[s], lw=2.2,
                            alpha=0.35, ls="-")
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
    handles.append(Line2D([], [], color="0.3", lw=2.2, alpha=0.35,
                          label="simplex: share of trials where condition (A) holds (top)"))
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
