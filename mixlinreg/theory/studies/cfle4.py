r"""Study CFLE4: eq. (3)-(4) of CFL (Sattler, Müller, Samek): at the federated stationary point
``theta*`` of a two-cluster mixture, ``grad R_1(theta*) = -(a2/a1) grad R_2(theta*)``, so the
clients' gradients have cosine +1 within a cluster and -1 across.

In the linear model (:mod:`mixlinreg.theory.cfl_linear`) the population risks are
``R_j(theta) = ||theta - theta*_j||^2 + sigma^2`` and the stationary point of ``sum_j a_j R_j`` is
``theta* = sum_j a_j theta*_j``, so ``grad R_j(theta*) = 2 (theta* - theta*_j)``:

* ``k = 2``: ``theta* - theta*_1 = a2 (theta*_2 - theta*_1)`` and ``theta* - theta*_2 =
  a1 (theta*_1 - theta*_2)``: cosine -1 and norm ratio ``a2 / a1`` exactly, eq. (3)-(4).
* ``k`` centers of a regular simplex (``theta*_j = (R/sqrt 2) e_j``), weights ``a``:
  ``<g_j, g_l> = (R^2/2) (||a||^2 - a_j - a_l + [j = l])``, so
  ``cos_jl = (||a||^2 - a_j - a_l) / sqrt((||a||^2 - 2 a_j + 1) (||a||^2 - 2 a_l + 1))``
  (:func:`simplex_cosines`); equal weights give ``-1/(k-1)`` (the ``k`` equal vectors to the
  centroid sum to zero: ``0 = k s^2 + k (k-1) c``), and ``k = 2`` gives -1 for any weights.
* Centers on a line at positions ``p_j``: ``g_j`` is a multiple of ``p_bar - p_j``, so every
  cosine is +1 or -1 (:func:`line_cosines`): at 0, 1, 3 with equal weights clusters 1 and 2 have
  cosine **+1** across (both left of ``p_bar = 4/3``).

Finite ``n``: the clients' gradients at the pooled least-squares fit
(:func:`~mixlinreg.theory.cfl_linear.stationary_point`) against ``n/d``; to first order
``grad r_i / 2 = v_j + e_i`` with ``v_j = theta* - theta*_j`` and
``E||e_i||^2 = rho_j^2 ||v_j||^2``,
``rho_j^2 = (d + 1 + sigma^2 d / ||v_j||^2) / n``, so a within-cosine is about ``1/(1 + rho_j^2)``
and an across-cosine about ``cos_jl / sqrt((1 + rho_j^2)(1 + rho_l^2))``: ``1 -/+ cos`` decays like
``(n/d)^-1`` once ``rho < 1``. The clusters' *mean* gradients satisfy eq. (3) exactly at any ``n``
(the pooled fit zeroes ``sum_i grad r_i``). :func:`measure` makes the measurements,
:func:`decide` (pure) the verdict. Config: ``mixlinreg/configs/studies/CFLE4.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Fit, loglog_slope, verdict_at_most
from ..cfl_linear import (client_gradients, cosine_similarities, draw_clients,
                          population_gradients, population_stationary_point, stationary_point)
from ..study import Decision, Study, Verdict, combine
from ..words import sensitivity_lines, words

#: the study's prose: cfle4.md beside this module
WORDS = words(__file__)

LAYOUTS = ("simplex3", "simplex4", "simplex5", "line3")
LINE = (0.0, 1.0, 3.0)  # the positions of the line layout, in units of its R

SCHEMA = {
    "params": {
        "d": Spec("int", low=1), "m": Spec("int", low=4),
        "small_fraction": Spec("list[float]", low=0, high=0.5, open="low"),
        "sigma": Spec("list[float]", low=0), "R": Spec("list[float]", low=0, open="low"),
        "nd": Spec("list[float]", low=0, open="low"), "reps": Spec("int", low=2),
        "multi": Spec("list[str]", choices=LAYOUTS), "multi_m": Spec("int", low=2),
        "multi_sigma": Spec("float", low=0), "multi_R": Spec("float", low=0, open="low"),
        "pop_weights": Spec("list[float]", low=0, high=1, open="both"),
        "pop_R": Spec("list[float]", low=0, open="low"), "pop_d": Spec("list[int]", low=1),
        "pop_k": Spec("list[int]", low=3), "pop_draws": Spec("int", low=1),
        "n_boot": Spec("int", low=100),
    },
    "margins": {
        "pop_tol": Spec("float", low=0, open="low"),
        "pop_tol_neighbours": Spec("list[float]", low=0, open="low"),
        "min_slope": Spec("float", low=0), "min_slope_neighbours": Spec("list[float]", low=0),
        "fit_from": Spec("float", low=0, open="low"),
        "fit_from_neighbours": Spec("list[float]", low=0, open="low"),
        "near": Spec("float", low=0, high=1, open="both"),
        "near_neighbours": Spec("list[float]", low=0, high=1, open="both"),
        "gap_frac": Spec("float", low=0, high=1),
        "gap_frac_neighbours": Spec("list[float]", low=0, high=1),
        "confidence": Spec("float", low=0, high=1, open="both"),
    },
}


# ------------------------------------------------------------------------------ closed forms


def simplex_cosines(weights):
    """Cosines between ``grad R_j`` and ``grad R_l`` at the stationary point, centers of a regular
    simplex, weights ``a`` (normalized): ``(||a||^2 - a_j - a_l + [j = l]) / norms``.

    >>> np.round(simplex_cosines([1, 1, 1]), 12).tolist()[0]
    [1.0, -0.5, -0.5]
    >>> round(float(simplex_cosines([0.2, 0.8])[0, 1]), 12)
    -1.0
    """
    a = np.asarray(weights, dtype=np.float64)
    a = a / a.sum()
    s = a @ a
    G = s - a[:, None] - a[None, :] + np.eye(a.size)
    nrm = np.sqrt(np.diag(G))
    return G / np.outer(nrm, nrm)


def line_cosines(positions, weights):
    """Cosines for centers on a line at ``positions``: ``sign((p_bar - p_j)(p_bar - p_l))``.

    >>> line_cosines([0, 1, 3], [1, 1, 1]).tolist()[0]
    [1.0, 1.0, -1.0]
    """
    p = np.asarray(positions, dtype=np.float64)
    a = np.asarray(weights, dtype=np.float64)
    g = (a / a.sum()) @ p - p
    return np.sign(np.outer(g, g))


def centers(layout, R, d):
    """``(k, d)`` centers: ``"simplexK"`` at ``(R/sqrt 2) e_j`` (pairwise distance ``R``; ``k = 2``:
    ``+/- (R/2) e_1``), ``"line3"``
    at ``(0, 1, 3) R e_1``. ``x`` is isotropic, so their placement is immaterial."""
    if layout == "simplex2":  # any d: +/- (R/2) e_1
        return np.outer([0.5, -0.5], np.eye(1, d)[0]) * R
    if layout.startswith("simplex"):
        k = int(layout[7:])
        if d < k:
            raise ValueError(f"study CFLE4: a simplex of {k} centers needs d >= {k}, got d = {d}")
        return np.eye(k, d) * (R / np.sqrt(2.0))
    return np.outer(LINE, np.eye(1, d)[0]) * R


def closed_cosines(layout, weights):
    return (simplex_cosines(weights) if layout.startswith("simplex")
            else line_cosines(LINE, weights))


# ------------------------------------------------------------------------------ units


def _conditions(p):
    """``{name: spec}`` of the finite-n conditions: k = 2 over sigma x R x a1, then the k > 2
    layouts."""
    out = {}
    for f in p["small_fraction"]:
        n1 = int(round(f * p["m"]))
        if n1 < 2:
            raise ValueError(f"study CFLE4: small_fraction {f:g} of m = {p['m']} leaves fewer than "
                             f"2 clients in cluster 1")
        for s in p["sigma"]:
            for R in p["R"]:
                out[f"k2_sigma={s:g}_R={R:g}_a1={n1 / p['m']:g}"] = dict(
                    layout="simplex2", sizes=[n1, p["m"] - n1], sigma=s, R=R)
    for lay in p["multi"]:
        k = 3 if lay == "line3" else int(lay[7:])
        out[f"{lay}_sigma={p['multi_sigma']:g}_R={p['multi_R']:g}"] = dict(
            layout=lay, sizes=[p["multi_m"]] * k, sigma=p["multi_sigma"], R=p["multi_R"])
    return out


def units(params):
    p = params["params"]
    out = [("population", {"part": "population"})]
    for cond, c in _conditions(p).items():
        centers(c["layout"], c["R"], p["d"])  # checks d against the layout
        out += [(f"{cond}_nd={nd:g}", dict(c, part="finite", cond=cond, nd=nd)) for nd in p["nd"]]
    return out


def compute(spec, params, rng, shared):
    if spec["part"] == "population":
        return population_rows(params["params"], rng)
    return finite_rows(spec, params["params"], rng)


def stationarity_error(ts, a, rng, n_dir=3):
    """``|F(theta* + h u) - F(theta* - h u)| / (2 h max_j ||grad R_j||)`` over ``n_dir`` random
    unit ``u``, ``h = max_j ||theta* - theta*_j||``, ``F = sum_j a_j ||theta - theta*_j||^2``: the
    directional derivative of ``F`` at ``theta*`` by a central difference (exact for a quadratic
    up to rounding), a route to stationarity that does not use the gradient formula."""
    a = np.asarray(a, dtype=np.float64) / np.sum(a)
    th = population_stationary_point(ts, a)
    gmax = np.linalg.norm(population_gradients(ts, a), axis=1).max()
    h = 0.5 * gmax

    def F(t):
        return float(a @ np.sum((t[None, :] - ts) ** 2, axis=1))

    errs = []
    for _ in range(n_dir):
        u = rng.standard_normal(ts.shape[1])
        u /= np.linalg.norm(u)
        errs.append(abs(F(th + h * u) - F(th - h * u)) / (2 * h) / gmax)
    return float(max(errs))


def population_rows(p, rng):
    """The closed forms checked numerically: k = 2 (drawn centers ``theta*_1 ~ N(0, I)``,
    ``theta*_2 = theta*_1 + R u``; two population clients per cluster: eq. (4)'s matrix and eq.
    (3)'s ratio) and k > 2 (rotated, shifted simplices; the line for k = 3)."""
    rows = []
    lab = np.array([0, 0, 1, 1])
    E = np.where(lab[:, None] == lab[None, :], 1.0, -1.0)
    for a1 in p["pop_weights"]:
        for R in p["pop_R"]:
            for d in p["pop_d"]:
                for draw in range(p["pop_draws"]):
                    t1 = rng.standard_normal(d)
                    u = rng.standard_normal(d)
                    ts = np.stack([t1, t1 + R * u / np.linalg.norm(u)])
                    a = np.array([a1, 1.0 - a1])
                    G = population_gradients(ts, a)
                    C = cosine_similarities(G[lab])
                    ratio = np.linalg.norm(G[0]) / np.linalg.norm(G[1])
                    rows.append(dict(part="population", k=2, layout="drawn", a1=a1, R=R, d=d,
                                     draw=draw, err_cos=float(np.abs(C - E).max()),
                                     err_ratio=abs(ratio / (a[1] / a[0]) - 1.0),
                                     err_stationary=stationarity_error(ts, a, rng)))
    for k in p["pop_k"]:
        for lay in ["simplex"] + (["line"] if k == 3 else []):
            for draw in range(p["pop_draws"] + 1):  # draw 0: equal weights
                a = np.full(k, 1.0 / k) if draw == 0 else rng.dirichlet(np.ones(k))
                rows.append(_population_multi(k, lay, a, draw, rng))
    return pd.DataFrame(rows)


def _population_multi(k, lay, a, draw, rng):
    d = k + 2
    base = centers(f"simplex{k}" if lay == "simplex" else "line3", 1.0, d)
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    ts = base @ Q.T + rng.standard_normal(d)  # rotated and shifted: the cosines do not change
    C = cosine_similarities(population_gradients(ts, a))
    closed = simplex_cosines(a) if lay == "simplex" else line_cosines(LINE, a)
    off = ~np.eye(k, dtype=bool)
    equal_simplex = lay == "simplex" and draw == 0
    return dict(part="population", k=k, layout=lay, draw=draw,
                weights="equal" if draw == 0 else "dirichlet",
                err_cos=float(np.abs(C - closed).max()),
                err_stationary=stationarity_error(ts, a, rng),
                across_min=float(C[off].min()), across_max=float(C[off].max()),
                err_formula=abs(closed[0, 1] + 1.0 / (k - 1)) if equal_simplex else np.nan)


def finite_rows(spec, p, rng):
    """One row per (data set, cluster pair ``j <= l``): the cosines' min, mean and max over the
    client pairs, the population value and the first-order prediction, and eq. (3) on the
    clusters' mean gradients."""
    d, sizes = p["d"], np.asarray(spec["sizes"])
    ts = centers(spec["layout"], spec["R"], d)
    k, m = len(sizes), int(sizes.sum())
    a = sizes / m
    n = max(1, int(round(spec["nd"] * d)))
    pop = closed_cosines(spec["layout"], a)
    v = np.linalg.norm(a @ ts - ts, axis=1)
    rho2 = (d + 1 + spec["sigma"] ** 2 * d / v ** 2) / n
    pred = pop / np.sqrt(np.outer(1 + rho2, 1 + rho2))
    np.fill_diagonal(pred, 1 / (1 + rho2))
    rows = []
    for rep, gen in enumerate(rng.spawn(p["reps"])):
        X, y, labels = draw_clients(ts, sizes, n, spec["sigma"], gen)
        G = client_gradients(X, y, stationary_point(X, y))
        C = cosine_similarities(G)
        means = np.stack([G[labels == j].mean(axis=0) for j in range(k)])
        stat = float(np.linalg.norm(G.sum(axis=0)) / np.linalg.norm(G, axis=1).sum())
        eq3 = stat
        if k == 2:
            cm = cosine_similarities(means)[0, 1]
            ratio = np.linalg.norm(means[0]) / np.linalg.norm(means[1])
            eq3 = max(abs(cm + 1.0), abs(ratio / (a[1] / a[0]) - 1.0))
        for j in range(k):
            for l in range(j, k):
                B = C[np.ix_(labels == j, labels == l)]
                vals = B[np.triu_indices(B.shape[0], 1)] if j == l else B.ravel()
                rows.append(dict(part="finite", cond=spec["cond"], layout=spec["layout"], k=k,
                                 sigma=spec["sigma"], R=spec["R"], a1=a[0], d=d, n=n, nd=n / d,
                                 rep=rep, j=j, l=l, same=j == l, n_pairs=vals.size,
                                 cos_min=vals.min(), cos_mean=vals.mean(), cos_max=vals.max(),
                                 pop_cos=pop[j, l], pred_cos=pred[j, l], eq3_err=eq3,
                                 stat_err=stat))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ measurements

_KEYS = ["cond", "k", "layout", "sigma", "R", "a1", "d", "n", "nd"]


def per_rep(fin):
    """One row per (condition, n/d, data set): within-cluster cosines (min over pairs, mean over
    all within pairs), across-cluster (max, mean), the gap, and the first-order predictions."""
    fin = fin.assign(same=fin["j"] == fin["l"], w=fin["n_pairs"] * fin["cos_mean"],
                     wp=fin["n_pairs"] * fin["pred_cos"])
    out = []
    for same, name in ((True, "within"), (False, "across")):
        g = fin[fin["same"] == same].groupby(_KEYS + ["rep"])
        agg = g.agg(w=("w", "sum"), wp=("wp", "sum"), pairs=("n_pairs", "sum"),
                    lo=("cos_min", "min"), hi=("cos_max", "max"), eq3=("eq3_err", "max"),
                    stat=("stat_err", "max"))
        out.append(pd.DataFrame({f"{name}_mean": agg["w"] / agg["pairs"],
                                 f"{name}_min": agg["lo"], f"{name}_max": agg["hi"],
                                 f"pred_{name}": agg["wp"] / agg["pairs"],
                                 "eq3_err": agg["eq3"], "stat_err": agg["stat"]}))
    reps = out[0].join(out[1].drop(columns=["eq3_err", "stat_err"])).reset_index()
    reps["gap"] = reps["within_min"] > reps["across_max"]
    return reps


def levels_of(reps):
    """One row per (condition, n/d): the per-data-set values averaged over the data sets (the
    within min and across max are each data set's, then averaged), the fraction with a gap."""
    g = reps.groupby(_KEYS, sort=False)
    lv = g.agg(within_mean=("within_mean", "mean"), within_min=("within_min", "mean"),
               within_min_worst=("within_min", "min"), across_mean=("across_mean", "mean"),
               across_max=("across_max", "mean"), across_max_worst=("across_max", "max"),
               pred_within=("pred_within", "mean"), pred_across=("pred_across", "mean"),
               gap_frac=("gap", "mean"), eq3_err=("eq3_err", "max"),
               stat_err=("stat_err", "max"), reps=("rep", "size")).reset_index()
    return lv.sort_values(["k", "cond", "nd"], kind="stable").reset_index(drop=True)


def _slope(x, y, n_boot, confidence, rng):
    if np.unique(x).size < 2 or np.any(y <= 0):
        return dict(est=np.nan, lo=np.nan, hi=np.nan, n=len(x))
    f = loglog_slope(x, y, n_boot=n_boot, confidence=confidence, rng=rng)
    return dict(est=f.est, lo=f.lo, hi=f.hi, n=f.n)


def fits_of(reps, fit_from, p, mg, rng):
    """Log-log slopes against n/d (levels >= ``fit_from``) of ``1 - within_mean`` (every
    condition) and ``1 + across_mean`` (k = 2), bootstrapped over the data sets within levels."""
    rows = []
    for cond, g in reps.groupby("cond", sort=False):
        g = g[g["nd"] >= fit_from]
        k = int(reps.loc[reps["cond"] == cond, "k"].iloc[0])
        for which in ("within", "across") if k == 2 else ("within",):
            y = 1 - g["within_mean"] if which == "within" else 1 + g["across_mean"]
            rows.append(dict(cond=cond, k=k, which=which, fit_from=fit_from,
                             levels=g["nd"].nunique(),
                             **_slope(g["nd"].to_numpy(), y.to_numpy(), p["n_boot"],
                                      mg["confidence"], rng(f"{cond}_{which}"))))
    return pd.DataFrame(rows)


def measure(table, params, rng, fit_from=None):
    """``{"pop": k = 2 population errors (max over the grid), "pop_multi": the k > 2 population
    rows, "reps", "levels", "fits", "pairs"}`` (``pairs``: k > 2, mean cosine of each cluster pair
    at the largest n/d against its population value)."""
    p, mg = params["params"], params["margins"]
    fit_from = mg["fit_from"] if fit_from is None else fit_from
    pop = table[table["part"] == "population"]
    p2 = pop[pop["k"] == 2]
    errs = {c: float(p2[c].max()) for c in ("err_cos", "err_ratio", "err_stationary")}
    fin = table[table["part"] == "finite"]
    reps = per_rep(fin)
    big = fin[(fin["k"] > 2) & (fin["j"] != fin["l"])]
    big = big[big["nd"] == big.groupby("cond")["nd"].transform("max")]
    pairs = big.groupby(["cond", "nd", "j", "l"], sort=False).agg(
        cos_mean=("cos_mean", "mean"), pop_cos=("pop_cos", "first"),
        pred_cos=("pred_cos", "first")).reset_index()
    worst = p2.loc[p2["err_ratio"].idxmax()]
    return {"pop": dict(errs, cases=len(p2), max=max(errs.values()),
                        worst=f"a1 = {worst['a1']:g}, R = {worst['R']:g}, d = {int(worst['d'])}"),
            "pop_multi": pop[pop["k"] > 2], "reps": reps, "levels": levels_of(reps),
            "fits": fits_of(reps, fit_from, p, mg, rng), "pairs": pairs}


def _first_from(lv, ok):
    """The smallest n/d from which ``ok`` holds at every larger level (NaN: not at the largest)."""
    ok = np.asarray(ok, dtype=bool)
    if not ok[-1]:
        return np.nan
    bad = np.flatnonzero(~ok)
    return float(lv["nd"].iloc[bad[-1] + 1 if bad.size else 0])


def decide(meas, params):
    """Eq. (3)-(4) for k = 2 from the measurements of :func:`measure` (``pop["max"]``, ``fits``,
    ``levels``) with ``params["margins"]``.

    Population: the largest error over the grid at most ``pop_tol``, else "not supported". Finite
    n, every k = 2 condition and each of ``1 - mean within-cos`` and ``1 + mean across-cos``: the
    log-log slope's interval at or below ``-min_slope`` "holds", entirely above "not supported",
    else (or unmeasured) "inconclusive". The claim: the weakest; "holds" becomes "holds with a
    caveat" when at the smallest n/d some condition is far from +/-1 (mean within < 1 - near or
    mean across > -1 + near) or at the largest n/d fewer than ``gap_frac`` of some condition's
    data sets show a gap. k > 2 is outside the statement and does not enter."""
    mg = params["margins"]
    pop = HOLDS if meas["pop"]["max"] <= mg["pop_tol"] else NOT_SUPPORTED
    fits = meas["fits"][meas["fits"]["k"] == 2]
    slopes = {f"{r.cond} {r.which}": (verdict_at_most(Fit(r.est, r.lo, r.hi, r.n), -mg["min_slope"])
                                      if np.isfinite(r.est) else INCONCLUSIVE)
              for r in fits.itertuples()}
    lv = meas["levels"][meas["levels"]["k"] == 2]
    first = lv.loc[lv.groupby("cond", sort=False)["nd"].idxmin()]
    last = lv.loc[lv.groupby("cond", sort=False)["nd"].idxmax()]
    far = first[(first["within_mean"] < 1 - mg["near"]) | (first["across_mean"] > -1 + mg["near"])]
    nogap = last[last["gap_frac"] < mg["gap_frac"]]
    verdict = combine([pop] + list(slopes.values()))
    if verdict == HOLDS and (len(far) or len(nogap)):
        verdict = CAVEAT
    return Decision(verdict, {
        "population": pop, "population error": meas["pop"]["max"], "pop_tol": mg["pop_tol"],
        "slopes": slopes, "min_slope": mg["min_slope"],
        "largest slope hi": float(fits["hi"].max()) if fits["hi"].notna().any() else np.nan,
        "far at the smallest n/d": list(far["cond"]), "near": mg["near"],
        "no gap at the largest n/d": list(nogap["cond"]), "gap_frac": mg["gap_frac"],
        "smallest-n/d within mean": float(first["within_mean"].min()),
        "smallest-n/d across mean": float(first["across_mean"].max())})


# ------------------------------------------------------------------------------ analysis


def _fmt_fit(fits, cond, which):
    r = fits[(fits["cond"] == cond) & (fits["which"] == which)]
    if not len(r) or not np.isfinite(r["est"].iloc[0]):
        return "n/a"
    r = r.iloc[0]
    return Fit(r["est"], r["lo"], r["hi"], int(r["n"])).fmt()


def _pairs_text(pairs, cond):
    g = pairs[pairs["cond"] == cond]
    return "; ".join(f"{int(r.j) + 1}-{int(r.l) + 1}: {r.cos_mean:.3f} (population "
                     f"{r.pop_cos:+.3f})"
                     for r in g.itertuples())


def numbers_table(meas, decision, mg):
    """The record's table: one row per condition (k = 2, then k > 2), n/d from smallest to
    largest, the slopes, where the values come within ``near`` of +/-1 and where the gap opens."""
    lv, fits, rows = meas["levels"], meas["fits"], []
    for cond, g in lv.groupby("cond", sort=False):
        g = g.reset_index(drop=True)
        f, l_ = g.iloc[0], g.iloc[-1]
        k = int(f["k"])
        close = (g["within_mean"] >= 1 - mg["near"]) & (
            (g["across_mean"] <= -1 + mg["near"]) if k == 2 else True)
        slopes = decision.numbers["slopes"]
        rows.append({
            "condition": cond, "k": k,
            "n/d": f"{f['nd']:g} -> {l_['nd']:g}",
            "mean within-cos": f"{f['within_mean']:.3f} -> {l_['within_mean']:.4f}",
            "min within-cos": f"{f['within_min']:.3f} -> {l_['within_min']:.4f}",
            "mean across-cos": (f"{f['across_mean']:.3f} -> {l_['across_mean']:.4f}" if k == 2
                                else _pairs_text(meas["pairs"], cond)),
            "max across-cos": f"{f['across_max']:.3f} -> {l_['across_max']:.4f}",
            "slope of 1 - within [95% CI]": _fmt_fit(fits, cond, "within"),
            "slope of 1 + across [95% CI]": _fmt_fit(fits, cond, "across") if k == 2 else "n/a",
            f"n/d from which within within {mg['near']:g} of +/-1": _first_from(g, close),
            f"n/d from which >= {mg['gap_frac']:g} show a gap": _first_from(
                g, g["gap_frac"] >= mg["gap_frac"]),
            "eq. (3) on cluster means, max error": float(g["eq3_err"].max()),
            "verdict": (combine([slopes[f"{cond} within"], slopes[f"{cond} across"]]) if k == 2
                        else "outside the statement (k > 2)")})
    return pd.DataFrame(rows)


def analyze(table, params, rng):
    mg = params["margins"]
    meas = measure(table, params, rng)
    decision = decide(meas, params)
    numbers = numbers_table(meas, decision, mg)

    def verdict_at(q, key):  # fit_from changes the measurement (the slopes); the rest the decision
        again = (measure(table, params, rng, q["margins"]["fit_from"]) if key == "fit_from"
                 else meas)
        return decide(again, q).verdict

    sens = sensitivity_lines(WORDS, params, verdict_at)
    return Verdict(decision.verdict, numbers, summary(meas, decision, numbers, mg),
                   caveats=caveats(meas, mg), sensitivity=sens, scope=scope(meas, decision),
                   tables={"_levels.csv": meas["levels"], "_fits.csv": meas["fits"],
                           "_pairs.csv": meas["pairs"]},
                   cells={"hard": len(decision.numbers["slopes"]),
                          "total": 1 + len(decision.numbers["slopes"]),
                          "rule": WORDS.text("cells rule")})


def _multi_text(meas):
    pm, pairs = meas["pop_multi"], meas["pairs"]
    eq = pm[pm["err_formula"].notna()]
    equal = "; ".join(WORDS.text("multi.equal", k=int(r.k), cos=r.across_max)
                      for r in eq.itertuples())
    dir_ = pm[(pm["weights"] == "dirichlet") & (pm["layout"] == "simplex")]
    pieces = [WORDS.text("multi", equal=equal, err_formula=eq["err_formula"].max(),
                         err_cos=pm["err_cos"].max())]
    if len(dir_):
        hi = dir_["across_max"].max()
        pieces.append(WORDS.text("multi.dirichlet, positive" if hi > 0 else "multi.dirichlet",
                                 lo=dir_["across_min"].min(), hi=hi))
    if (pm["layout"] == "line").any():
        pieces.append(WORDS.text("multi.line"))
    txt = "; ".join(pieces)
    if len(pairs):
        txt += ". " + WORDS.text("multi.measured",
                                 worst=(pairs["cos_mean"] - pairs["pop_cos"]).abs().max())
    return txt


def _needed(numbers, mg):
    """The range over the k = 2 conditions of the n/d from which the means are within ``near``
    of +/-1 and from which a gap shows, naming the extreme conditions."""
    nb = numbers[numbers["k"] == 2]
    out = []
    for col, what in ((f"n/d from which within within {mg['near']:g} of +/-1", "needed.near"),
                      (f"n/d from which >= {mg['gap_frac']:g} show a gap", "needed.gap")):
        v = nb[col].fillna(np.inf)
        lo, hi = nb.loc[v.idxmin()], nb.loc[v.idxmax()]
        out.append(WORDS.text(
            what, near=mg["near"], gap_frac=mg["gap_frac"], lo=lo[col], lo_cond=lo["condition"],
            hi=(WORDS.text("needed.beyond the grid") if not np.isfinite(v.max())
                else format(hi[col], "g")), hi_cond=hi["condition"]))
    return "; ".join(out) + "."


def summary(meas, decision, numbers, mg):
    n, lv = decision.numbers, meas["levels"]
    lv2 = lv[lv["k"] == 2]
    last = lv2.loc[lv2.groupby("cond", sort=False)["nd"].idxmax()]
    f2 = meas["fits"][meas["fits"]["k"] == 2]
    lvm = lv[lv["k"] > 2]
    lastm = lvm.loc[lvm.groupby("cond", sort=False)["nd"].idxmax()] if len(lvm) else lvm
    pop = meas["pop"]
    verdict = decision.verdict
    if verdict == CAVEAT:
        no_gap = n["no gap at the largest n/d"]
        verdict = WORDS.text("verdict.caveat, no gap" if no_gap else "verdict.caveat",
                             verdict=verdict, far=len(n["far at the smallest n/d"]),
                             conditions=len(last), near=mg["near"], gap_frac=mg["gap_frac"],
                             no_gap=", ".join(no_gap))
    k_more = _multi_text(meas)
    if len(lastm):
        gaps = ", ".join(WORDS.text("multi.gap", cond=c, gap=g)
                         for c, g in zip(lastm["cond"], lastm["gap_frac"]))
        k_more += "; " + WORDS.text("multi.rise", within_min=lastm["within_mean"].min(),
                                    within_max=lastm["within_mean"].max(), gaps=gaps)
    return WORDS.text(
        "summary", cases=pop["cases"], err_cos=pop["err_cos"], err_ratio=pop["err_ratio"],
        err_stationary=pop["err_stationary"], pop_tol=mg["pop_tol"], population=n["population"],
        within_low=n["smallest-n/d within mean"], across_high=n["smallest-n/d across mean"],
        nd_max=last["nd"].max(), within_min=last["within_mean"].min(),
        within_max=last["within_mean"].max(), across_min=last["across_mean"].min(),
        across_max=last["across_mean"].max(), fit_from=mg["fit_from"],
        slope_min=f2["est"].min(), slope_max=f2["est"].max(), slope_hi=n["largest slope hi"],
        min_slope=mg["min_slope"], needed=_needed(numbers, mg), eq3_err=lv2["eq3_err"].max(),
        verdict=verdict, k_more=k_more)


def scope(meas, decision):
    pairs = meas["pairs"]
    pos = pairs[pairs["pop_cos"] > -1 + 1e-9]
    if len(pos):
        return WORDS.text("scope.k > 2", verdict=decision.verdict, lo=pos["pop_cos"].min(),
                          hi=pos["pop_cos"].max())
    return WORDS.text("scope", verdict=decision.verdict)


def caveats(meas, mg):
    lv = meas["levels"][meas["levels"]["k"] == 2]
    first = lv[lv["nd"] == lv["nd"].min()]
    return WORDS.items("caveats", nd=first["nd"].min(), within_min=first["within_mean"].min(),
                       within_max=first["within_mean"].max(),
                       across_min=first["across_mean"].min(),
                       across_max=first["across_mean"].max(),
                       err_ratio=meas["pop"]["err_ratio"], worst=meas["pop"]["worst"])


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    lv = verdict.tables["_levels.csv"]
    lv2, lvm = lv[lv["k"] == 2], lv[lv["k"] > 2]
    panels = list(dict.fromkeys(zip(lv2["sigma"], lv2["R"])))
    multi = list(dict.fromkeys(lvm["cond"]))
    ncol = max(len(panels), 1 + len(multi))
    fig = Figure(figsize=(4.2 * ncol, 7.6))
    axes = fig.subplots(2, ncol, squeeze=False)
    for c, (s, R) in enumerate(panels):
        ax = axes[0, c]
        for ls, (a1, g) in zip(("-", "--", ":"), lv2[(lv2["sigma"] == s) & (lv2["R"] == R)]
                               .groupby("a1", sort=False)):
            lab = f"a1={a1:.2f}"
            ax.plot(g["nd"], g["within_mean"], ls, color="C0", label=f"within mean, {lab}")
            ax.plot(g["nd"], g["within_min"], ls, color="C0", alpha=0.4, label=f"within min, {lab}")
            ax.plot(g["nd"], g["across_mean"], ls, color="C1", label=f"across mean, {lab}")
            ax.plot(g["nd"], g["across_max"], ls, color="C1", alpha=0.4, label=f"across max, {lab}")
        _pm1(ax, f"k = 2, sigma = {s:g}, R = {R:g}")
        if c == 0:
            ax.legend(fontsize=6, loc="center right")
    ax = axes[1, 0]
    for i, (cond, g) in enumerate(lv2.groupby("cond", sort=False)):
        ax.loglog(g["nd"], 1 - g["within_mean"], "-o", ms=2, color=f"C{i}", label=cond)
        ax.loglog(g["nd"], 1 + g["across_mean"], "--", color=f"C{i}")
        ax.loglog(g["nd"], 1 - g["pred_within"], ":", color=f"C{i}", lw=0.8)
    x = np.array([params["margins"]["fit_from"], lv2["nd"].max()])
    y0 = float((1 - lv2.loc[lv2["nd"] == x[-1], "within_mean"]).median())
    ax.loglog(x, y0 * x[-1] / x, "k-", lw=0.6, label="slope -1")
    ax.axvline(params["margins"]["fit_from"], color="gray", lw=0.6)
    ax.set_title("k = 2: 1 - within (solid), 1 + across (dashed), first order (dotted)", fontsize=8)
    ax.set_xlabel("n/d")
    ax.legend(fontsize=5)
    fin = table[(table["part"] == "finite") & (table["k"] > 2)]
    for c, cond in enumerate(multi, start=1):
        _multi_panel(axes[1, c], lvm[lvm["cond"] == cond], fin[fin["cond"] == cond], cond)
    for r in range(2):
        for c in range(ncol):
            if not axes[r, c].has_data():
                axes[r, c].set_axis_off()
    fig.tight_layout()
    return fig


def _multi_panel(ax, g, fin, cond):
    """A k > 2 condition: within mean and min, and each cluster pair's mean across-cosine
    against n/d, with its population value dashed."""
    ax.plot(g["nd"], g["within_mean"], "-", color="C0", label="within mean")
    ax.plot(g["nd"], g["within_min"], "-", color="C0", alpha=0.4, label="within min")
    across = fin[fin["j"] != fin["l"]].groupby(["j", "l", "nd"])[["cos_mean", "pop_cos"]].mean()
    for i, ((j, l), pg) in enumerate(across.groupby(level=[0, 1])):
        col = f"C{i + 1}"
        ax.plot(pg.index.get_level_values("nd"), pg["cos_mean"], "-", color=col,
                label=f"across {int(j) + 1}-{int(l) + 1}")
        ax.axhline(pg["pop_cos"].iloc[0], color=col, ls="--", lw=0.8)
    lay = cond.split("_")[0]
    name = "centers on a line at 0, 1, 3" if lay == "line3" else f"{lay[7:]} equidistant centers"
    _pm1(ax, f"k > 2 (outside the statement): {name}\ndashed: population across-cosines")
    ax.legend(fontsize=6, loc="center right")


def _pm1(ax, title):
    ax.set_xscale("log")
    ax.axhline(1, color="k", lw=0.6)
    ax.axhline(-1, color="k", lw=0.6)
    ax.set_ylim(-1.08, 1.08)
    ax.set_xlabel("n/d")
    ax.set_ylabel("cosine of clients' gradients at theta*")
    ax.set_title(title, fontsize=8)


STUDY = Study(
    id="CFLE4", order=200, paper="CFL", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
