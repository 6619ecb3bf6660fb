"""Study CFLC5: CFL's stopping criterion (5), ``max_{i in c} ||grad r_i(theta*)|| < eps2``, at the
federated stationary point of the linear model (Sattler, Müller, Samek, Section 2).

Setting (:mod:`mixlinreg.theory.cfl_linear`): ``m`` clients of ``n`` rows, ``x ~ N(0, I_d)``,
``y = <x, theta*_j> + sigma eps``; the ``k`` cluster models are the vertices of a regular simplex
of edge ``R`` (:func:`simplex`: every pair at distance ``R``), ``m / k`` clients each; ``k = 1`` is
the congruent population. The stationary point is pooled least squares
(:func:`~mixlinreg.theory.cfl_linear.stationary_point`), ``g_i`` the client gradients there.

Exact scaling. The stationary point and the gradients are linear in ``y``: with the same ``X`` and
``eps``, ``g_i = R g_i^signal + sigma g_i^noise`` (``g^signal`` at ``R = 1, sigma = 0``;
``g^noise`` at ``R = 0, sigma = 1``, which is also the congruent population's gradient). So
``max_i ||g_i|| = sigma M(rho)`` with ``rho = R / sigma``: a unit stores ``M`` (6 significant
digits) per replicate, ``k`` and ``rho`` (column ``max_over_sigma``; ``k = 1`` is the congruent
row), and every (sigma, R) cell of the config is read from it (cells of one ``rho`` share their
draws; sigma only rescales them).

Predictions (:func:`predicted_congruent_max`, :func:`predicted_threshold`). Congruent:
``g_i = -(2 sigma / n) X_i^T r_i`` with ``r`` the pooled residual, so ``E ||g_i||^2 = 4 sigma^2
(d/n) kappa``, ``kappa = 1 - (1 + (d+1)/n) / m`` (``(X^T X)^{-1}`` replaced by ``I / (m n)``);
``n ||g_i||^2 / (4 sigma^2 kappa)`` is taken as ``(chi2_n / n) chi2_d`` (the law of the leading
term ``X_i^T eps_i``), independent over clients, so the maximum's p-quantile solves ``F(t)^m = p``.
Incongruent: the population stationary point is the simplex centre and ``grad R_j = 2 (theta_bar -
theta*_j)`` has norm ``R sqrt(2 (k-1) / k)`` (``R`` for two clusters: ``theta_bar - theta*_j`` has
norm ``R / 2``); the clients add ``2 (A_i - I)(theta_bar - theta*_j)`` and the noise, so their
largest norm is above it. A band is predicted where that norm passes the predicted congruent upper
quantile: ``S = R / (sigma sqrt(d/n)) > S_pred``.

Separating range (the ``[margins]``, fixed before the data): an ``eps2`` separates a congruent and
an incongruent population when CFL's rule (split iff the maximum is ``>= eps2``) errs on at most
``max_error`` of each, certified: the Wilson upper bounds (at ``confidence``) of the fraction of
congruent replicates with maximum ``>= eps2`` and of incongruent ones below ``eps2`` are both
``<= max_error``. Those ``eps2`` form an interval (:func:`separating_band`); a cell *separates* when
it is not empty, *overlaps* when even the Wilson lower bounds leave none, and is *undetermined*
otherwise. :func:`measure` makes the cells, :func:`decide` (pure) the verdict. Optionally a unit
runs :func:`mixlinreg.baselines.cfl` with an ``eps2`` picked inside a band calibrated on its own
replicates, on fresh data. Config: ``mixlinreg/configs/studies/CFLC5.toml``.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ...config import Spec
from ...stats import wilson_interval
from ..cfl_linear import client_gradients, draw_clients, stationary_point
from ..study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: cflc5.md beside this module
WORDS = words(__file__)

SEPARATES, OVERLAPS, UNDETERMINED = "separates", "overlaps", "undetermined"
_POS = dict(low=0, open="low")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "d": Spec("int", low=2), "n": Spec("list[int]", low=1), "m": Spec("list[int]", low=2),
        "k": Spec("list[int]", low=2), "sigma": Spec("list[float]", **_POS),
        "R": Spec("list[float]", **_POS), "replicates": Spec("int", low=2),
        "blocks": Spec("int", low=1), "figure_R": Spec("float", **_POS),
        "figure_m": Spec("int", low=2),
        "cfl_n": Spec("int", low=1), "cfl_m": Spec("int", low=2),
        "cfl_sigma": Spec("float", **_POS),
        "cfl_R": Spec("float", **_POS), "cfl_runs": Spec("int", low=0),
        "cfl_lr": Spec("float", **_POS), "cfl_eps1_frac": Spec("float", **_OPEN01),
        "cfl_max_rounds": Spec("int", low=1),
    },
    "margins": {
        "max_error": Spec("float", low=0, high=0.5, open="both"),
        "max_error_neighbours": Spec("list[float]", low=0, high=0.5, open="both"),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
    },
}


# ------------------------------------------------------------------------------ the model

def simplex(k, d):
    """``(k, d)``: the vertices of a regular simplex with unit edges, centred at 0 (first ``k``
    coordinates; ``d >= k``).

    >>> V = simplex(3, 4)
    >>> round(float(np.linalg.norm(V[0] - V[2])), 12), float(abs(V.sum(axis=0)).max()) < 1e-15
    (1.0, True)
    """
    E = np.eye(k, d)
    return (E - E.mean(axis=0)) / np.sqrt(2.0)


def _canon(x):
    return float(f"{x:.10g}")


def _sig(x):
    """``x`` to 6 significant digits: the stored norms (the table stays small; the decisions
    compare quantiles, far coarser)."""
    return float(f"{x:.6g}")


def rhos(p):
    """The ratios ``R / sigma`` of the config's cells, sorted and unique."""
    return sorted({_canon(R / s) for R in p["R"] for s in p["sigma"]})


def replicate_gradients(n, m, d, ks, rng):
    """One draw of ``X`` and ``eps``: the client gradients at the pooled stationary point of the
    noise alone (``R = 0, sigma = 1``: the congruent population), and of the signal alone
    (``R = 1, sigma = 0``) for each ``k`` in ``ks`` (equal clusters in client order, simplex
    models). Returns ``noise`` (m, d) and ``{k: signal (m, d)}``."""
    X, eps, _ = draw_clients(np.zeros((1, d)), [m], n, 1.0, rng)
    noise = client_gradients(X, eps, stationary_point(X, eps))
    signal = {}
    for k in ks:
        ys = np.einsum("ind,id->in", X, simplex(k, d)[np.repeat(np.arange(k), m // k)])
        signal[k] = client_gradients(X, ys, stationary_point(X, ys))
    return noise, signal


def max_norms(signal, noise, rho):
    """``max_i ||rho signal_i + noise_i||`` and the root mean square over clients, for each
    ``rho`` (arrays of ``len(rho)``): the values at ``sigma = 1, R = rho``."""
    a, b, c = ((u * v).sum(axis=1) for u, v in ((signal, signal), (signal, noise), (noise, noise)))
    r = np.asarray(rho, dtype=np.float64)[:, None]
    sq = np.maximum(r * r * a + 2.0 * r * b + c, 0.0)
    return np.sqrt(sq.max(axis=1)), np.sqrt(sq.mean(axis=1))


def predicted_congruent_max(n, d, m, p, n_w=400):
    """Predicted ``p``-quantile of ``max_i ||grad r_i(theta*)|| / sigma`` over ``m`` congruent
    clients: ``2 sqrt(kappa t / n)`` with ``E_W[chi2_d.cdf(t / W)]^m = p``, ``W ~ chi2_n / n``."""
    kappa = 1.0 - (1.0 + (d + 1.0) / n) / m
    w = stats.chi2.ppf((np.arange(n_w) + 0.5) / n_w, n) / n
    target = p ** (1.0 / m)
    t = optimize.brentq(lambda t: stats.chi2.cdf(t / w, d).mean() - target, 0.0,
                        stats.chi2.ppf(target, d) * w.max())
    return 2.0 * np.sqrt(kappa * t / n)


def predicted_rms(n, d, m):
    """Predicted root mean square of ``||grad r_i(theta*)|| / sigma`` (congruent)."""
    return 2.0 * np.sqrt((1.0 - (1.0 + (d + 1.0) / n) / m) * d / n)


def predicted_threshold(n, d, m, k, max_error):
    """``S_pred``: the ``S = R / (sigma sqrt(d/n))`` where the population incongruent norm
    ``R sqrt(2 (k-1) / k)`` meets the predicted congruent ``1 - max_error`` quantile."""
    return (predicted_congruent_max(n, d, m, 1.0 - max_error) / np.sqrt(d / n)
            / np.sqrt(2.0 * (k - 1) / k))


# ------------------------------------------------------------------------------ the band

@functools.lru_cache(maxsize=None)
def _allowed(N, max_error, confidence, bound):
    """The largest count of ``N`` whose Wilson ``bound`` ("hi" or "lo") is ``<= max_error``
    (-1 if none): the errors a rule may make and still be certified (or not refuted)."""
    lo, hi = wilson_interval(np.arange(N + 1), N, confidence)
    ok = np.flatnonzero((hi if bound == "hi" else lo) <= max_error)
    return int(ok.max()) if ok.size else -1


def _edges(C, I, c, i):
    """``(lo, hi)``: every ``eps2`` in ``(lo, hi]`` has at most ``c`` of ``C`` at or above it and
    at most ``i`` of ``I`` below it."""
    C, I = np.sort(C), np.sort(I)
    return (-np.inf if c >= C.size else C[C.size - 1 - c]), (np.inf if i >= I.size else I[i])


def separating_band(congruent, incongruent, max_error, confidence):
    """The status of a cell and its certified band ``(lo, hi]`` of ``eps2`` (NaN unless it
    separates), from the largest client gradient norms of congruent and incongruent replicates.

    >>> separating_band(np.arange(100.0), 200 + np.arange(100.0), 0.05, 0.95)
    ('separates', 99.0, 200.0)
    """
    C, I = np.asarray(congruent, dtype=float), np.asarray(incongruent, dtype=float)
    c, i = (_allowed(x.size, max_error, confidence, "hi") for x in (C, I))
    if c >= 0 and i >= 0:
        lo, hi = _edges(C, I, c, i)
        if lo < hi:
            return SEPARATES, float(lo), float(hi)
    lo, hi = _edges(C, I, *(_allowed(x.size, max_error, confidence, "lo") for x in (C, I)))
    return (OVERLAPS if lo >= hi else UNDETERMINED), np.nan, np.nan


# ------------------------------------------------------------------------------ units

def units(params):
    p = params["params"]
    if max(p["k"]) > p["d"]:
        raise ValueError(f"study CFLC5: params.d must be >= every k (simplex models), got d = "
                         f"{p['d']} and k = {p['k']}")
    for m in p["m"] + [p["cfl_m"]]:
        if any(m % k for k in p["k"]):
            raise ValueError(f"study CFLC5: every m must be a multiple of every k (equal "
                             f"clusters), got m = {m} and k = {p['k']}")
    if p["replicates"] % p["blocks"]:
        raise ValueError(f"study CFLC5: params.replicates ({p['replicates']}) must be a multiple "
                         f"of params.blocks ({p['blocks']})")
    for key, grid in (("figure_m", "m"), ("figure_R", "R")):
        if p[key] not in p[grid]:
            raise ValueError(f"study CFLC5: params.{key} must be one of params.{grid} "
                             f"{p[grid]}, got {p[key]}")
    reps = p["replicates"] // p["blocks"]
    out = [(f"n={n}_m={m}_b={b}", {"part": "grid", "n": n, "m": m, "first": b * reps,
                                   "reps": reps})
           for n in p["n"] for m in p["m"] for b in range(p["blocks"])]
    return out + ([("cfl_demo", {"part": "cfl"})] if p["cfl_runs"] else [])


def compute(spec, params, rng, shared):
    if spec["part"] == "cfl":
        return _cfl_rows(params, rng)
    p = params["params"]
    n, m, d, ks = spec["n"], spec["m"], p["d"], p["k"]
    rho = np.array(rhos(p))
    rows = []
    for r, gen in enumerate(rng.spawn(spec["reps"])):
        noise, signal = replicate_gradients(n, m, d, ks, gen)
        c = np.linalg.norm(noise, axis=1)
        rep = spec["first"] + r
        rows.append((n, m, rep, 1, 0.0, _sig(c.max()), _sig(np.sqrt(np.mean(c * c)))))
        for k in ks:
            mx, rms = max_norms(signal[k], noise, rho)
            rows.extend((n, m, rep, k, float(q), _sig(a), _sig(s)) for q, a, s in zip(rho, mx, rms))
    return pd.DataFrame(rows, columns=["n", "m", "rep", "k", "rho", "max_over_sigma",
                                       "rms_over_sigma"]).assign(part="grid")


def _cfl_rows(params, rng):
    """CFL itself, with ``eps2 = lr x`` the geometric middle of the band shared by every ``k`` at
    the demo cell, calibrated on ``replicates`` draws of its own, then run on fresh data."""
    from ...baselines import cfl
    from ...metrics import adjusted_rand

    p, mg = params["params"], params["margins"]
    n, m, d, ks, sigma, R = p["cfl_n"], p["cfl_m"], p["d"], p["k"], p["cfl_sigma"], p["cfl_R"]
    cal, test = rng.spawn(2)
    C, I = [], {k: [] for k in ks}
    for gen in cal.spawn(p["replicates"]):
        noise, signal = replicate_gradients(n, m, d, ks, gen)
        C.append(sigma * np.linalg.norm(noise, axis=1).max())
        for k in ks:
            I[k].append(sigma * max_norms(signal[k], noise, [R / sigma])[0][0])
    bands = [separating_band(C, I[k], mg["max_error"], mg["confidence"]) for k in ks]
    lo, hi = max(b[1] for b in bands), min(b[2] for b in bands)
    eps2 = float(np.sqrt(lo * hi)) if lo < hi else np.nan  # NaN when some band is empty
    lr = p["cfl_lr"]
    rows = []
    for k, kgen in zip([1] + ks, test.spawn(len(ks) + 1)):
        centres = R * simplex(max(k, 2), d)[:k]
        for run, gen in enumerate(kgen.spawn(p["cfl_runs"])):
            row = {"part": "cfl", "n": n, "m": m, "k": k, "sigma": sigma, "R": R, "run": run,
                   "band_lo": lo, "band_hi": hi, "eps2_gradient": eps2, "lr": lr}
            if np.isfinite(eps2):
                X, y, labels = draw_clients(centres, [m // k] * k, n, sigma, gen)
                res = cfl(X, y, lr=lr, eps1=lr * eps2 * p["cfl_eps1_frac"], eps2=lr * eps2,
                          max_rounds=p["cfl_max_rounds"])
                row.update(groups=res.theta.shape[0], splits=len(res.extra["splits"]),
                           ari=float(adjusted_rand(labels, res.labels)), rounds=res.n_rounds,
                           converged=bool(res.extra["converged"]))
                row["correct"] = bool(row["groups"] == k and (k == 1 or row["ari"] == 1.0))
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ measure, decide

def measure(table, params, max_error=None, confidence=None):
    """One row per incongruent cell ``(k, m, n, sigma, R)``: the congruent and incongruent
    quantiles (``max_error`` and ``1 - max_error``, and medians) of the largest client gradient
    norm, the cell's status and certified band (:func:`separating_band`), ``S = R / (sigma
    sqrt(d/n))`` and the predicted ``S_pred``."""
    p, mg = params["params"], params["margins"]
    a = mg["max_error"] if max_error is None else max_error
    conf = mg["confidence"] if confidence is None else confidence
    grid = table[table["part"] == "grid"]
    vals = {(int(n), int(m), int(k), _canon(r)): g["max_over_sigma"].to_numpy()
            for (n, m, k, r), g in grid.groupby(["n", "m", "k", "rho"])}
    d, rows = p["d"], []
    for n in p["n"]:
        for m in p["m"]:
            C = vals[(n, m, 1, 0.0)]
            for k in p["k"]:
                s_pred = predicted_threshold(n, d, m, k, a)
                for sigma in p["sigma"]:
                    for R in p["R"]:
                        I = vals[(n, m, k, _canon(R / sigma))]
                        status, lo, hi = separating_band(C, I, a, conf)
                        rows.append({
                            "k": k, "m": m, "n": n, "n_over_d": n / d, "sigma": sigma, "R": R,
                            "S": R / (sigma * np.sqrt(d / n)), "S_pred": s_pred,
                            "replicates": min(C.size, I.size),
                            "cong_median": sigma * np.median(C),
                            "cong_hi": sigma * np.quantile(C, 1 - a),
                            "inc_lo": sigma * np.quantile(I, a),
                            "inc_median": sigma * np.median(I),
                            "inc_population": R * np.sqrt(2.0 * (k - 1) / k),
                            "status": status, "band_lo": sigma * lo, "band_hi": sigma * hi})
    return pd.DataFrame(rows)


def congruent_summary(table, params, max_error=None):
    """Per ``(n, m)``: the congruent largest gradient norm / sigma measured (median, ``1 -
    max_error`` quantile, client root mean square) against :func:`predicted_congruent_max` and
    :func:`predicted_rms`."""
    p = params["params"]
    a = params["margins"]["max_error"] if max_error is None else max_error
    cong = table[(table["part"] == "grid") & (table["k"] == 1)]
    rows = []
    for (n, m), g in cong.groupby(["n", "m"]):
        x, d = g["max_over_sigma"].to_numpy(), p["d"]
        row = {"n": int(n), "m": int(m), "n_over_d": n / d, "replicates": x.size,
               "median": np.median(x), "median_pred": predicted_congruent_max(n, d, m, 0.5),
               "q_hi": np.quantile(x, 1 - a),
               "q_hi_pred": predicted_congruent_max(n, d, m, 1 - a),
               "rms": np.sqrt(np.mean(g["rms_over_sigma"] ** 2)),
               "rms_pred": predicted_rms(n, d, m),
               "scale": 2 * np.sqrt(d / n)}
        for q in ("median", "q_hi", "rms"):
            row[f"{q}_ratio"] = row[q] / row[f"{q}_pred"]
        rows.append(row)
    return pd.DataFrame(rows)


def region(cells):
    """``(S_all, S_first, S_fail)`` of cells with columns ``S`` and ``status``: every cell with
    ``S >= S_all`` separates (NaN if a cell of the largest ``S`` does not), none below ``S_first``
    (the smallest ``S`` of a separating cell) does, and ``S_fail`` is the largest ``S`` of a cell
    that does not (NaN if there is none)."""
    S, st = cells["S"].round(9), cells["status"]
    s_all = np.nan
    for s in sorted(S.unique(), reverse=True):
        if not (st[S == s] == SEPARATES).all():
            break
        s_all = float(s)
    sep, rest = S[st == SEPARATES], S[st != SEPARATES]
    return (s_all, float(sep.min()) if len(sep) else np.nan,
            float(rest.max()) if len(rest) else np.nan)


def incongruent_rms(table, params):
    """Per ``(n, m, k, rho)``: the incongruent clients' root mean square gradient norm / sigma
    against ``2 sqrt(rho^2 (k-1)/(2k) (1 + (d+1)/n) + kappa d/n)`` (``2 ||A_i v|| `` in mean
    square, ``||v|| = R sqrt((k-1)/(2k))``, plus the congruent noise)."""
    d = params["params"]["d"]
    inc = table[(table["part"] == "grid") & (table["k"] >= 2)]
    out = inc.groupby(["n", "m", "k", "rho"])["rms_over_sigma"].apply(
        lambda x: float(np.sqrt(np.mean(x ** 2)))).rename("rms").reset_index()
    n, m, k, rho = (out[c].to_numpy(dtype=float) for c in ("n", "m", "k", "rho"))
    out["rms_pred"] = 2 * np.sqrt(rho ** 2 * (k - 1) / (2 * k) * (1 + (d + 1) / n)
                                  + (1 - (1 + (d + 1) / n) / m) * d / n)
    out["ratio"] = out["rms"] / out["rms_pred"]
    return out


def decide(cells, params):
    """The verdict from the cells (:func:`measure`: columns ``S``, ``status``, ``band_lo``,
    ``band_hi``); ``params`` is unused (the thresholds act in :func:`measure`).

    "holds": every cell separates and one ``eps2`` lies in every band; "holds with a caveat":
    every cell above some ``S`` separates, but not all do, or no ``eps2`` is common to all bands;
    "not supported": no cell separates, or a cell of the largest ``S`` overlaps; "inconclusive"
    otherwise (nothing separates or the largest ``S`` is undetermined, with nothing refuted).
    ``numbers``: counts, ``S_all`` (every cell with ``S >= S_all`` separates), ``S_first`` (no
    cell below separates), ``S_fail`` (the largest ``S`` of a cell that does not), the common
    band ``common_lo``/``common_hi`` and ``universal``, and the rows ``low``/``high`` of the
    bands with the lowest top and the highest bottom."""
    st = cells["status"]
    sep = cells[st == SEPARATES]
    numbers = {"cells": len(cells), "separates": len(sep), "overlaps": int((st == OVERLAPS).sum()),
               "undetermined": int((st == UNDETERMINED).sum())}
    if sep.empty:
        return Decision(NOT_SUPPORTED if numbers["overlaps"] else INCONCLUSIVE, numbers)
    s_all, s_first, s_fail = region(cells)
    numbers.update(S_all=s_all, S_first=s_first, S_fail=s_fail,
                   common_lo=float(sep["band_lo"].max()), common_hi=float(sep["band_hi"].min()),
                   low=int(sep["band_hi"].idxmin()), high=int(sep["band_lo"].idxmax()))
    numbers["universal"] = bool(numbers["common_lo"] < numbers["common_hi"])
    if np.isnan(s_all):
        top = st[cells["S"].round(9) == cells["S"].round(9).max()]
        return Decision(NOT_SUPPORTED if (top == OVERLAPS).any() else INCONCLUSIVE, numbers)
    if len(sep) == len(cells) and numbers["universal"]:
        return Decision(HOLDS, numbers)
    return Decision(CAVEAT, numbers)


# ------------------------------------------------------------------------------ analyze

def _numbers(cells):
    """The record's table: one row per (k, m, n/d)."""
    rows = []
    for (k, m, n), g in cells.groupby(["k", "m", "n"], sort=True):
        sep = g.loc[g["status"] == SEPARATES, "S"]
        rest = g.loc[g["status"] != SEPARATES, "S"]
        rows.append({"k": k, "m": m, "n/d": round(float(g["n_over_d"].iloc[0]), 3),
                     "separating cells": f"{len(sep)}/{len(g)}",
                     "smallest separating S": round(float(sep.min()), 3) if len(sep) else np.nan,
                     "largest other S": round(float(rest.max()), 3) if len(rest) else np.nan,
                     "S_pred": round(float(g["S_pred"].iloc[0]), 3),
                     "undetermined": int((g["status"] == UNDETERMINED).sum())})
    return pd.DataFrame(rows)


def _scope(dec):
    nb = dec.numbers
    if not nb["separates"] or np.isnan(nb.get("S_all", np.nan)):
        return ""
    one = WORDS.text("one.serves" if nb["universal"] else "one.none")
    if nb["separates"] == nb["cells"]:
        return WORDS.text("scope.every cell", S_first=nb["S_first"], one=one)
    return WORDS.text("scope" if nb["S_all"] <= nb["S_first"] else "scope.between",
                      S_all=nb["S_all"], S_first=nb["S_first"], one=one)


def analyze(table, params, rng):
    cells = measure(table, params)
    dec = decide(cells, params)
    cong = congruent_summary(table, params)
    demo = table[table["part"] == "cfl"].dropna(axis=1, how="all")
    grid = table[table["part"] == "grid"].dropna(axis=1, how="all")
    # both thresholds act in measure: the cells are made again at each neighbour
    sens = sensitivity_lines(WORDS, params, lambda q, key: decide(measure(table, q), q).verdict)
    tables = {".csv": grid, "_cells.csv": cells, "_congruent.csv": cong,
              "_incongruent_rms.csv": incongruent_rms(table, params)}
    if len(demo):
        tables["_cfl.csv"] = demo
    return Verdict(dec.verdict, _numbers(cells),
                   _summary(cells, cong, tables["_incongruent_rms.csv"], dec, demo, params),
                   caveats=_caveats(cells, cong, params), sensitivity=sens, tables=tables,
                   scope=_scope(dec))


def _band_words(c):
    return WORDS.text("band", band_lo=c["band_lo"], band_hi=c["band_hi"], n_over_d=c["n_over_d"],
                      sigma=c["sigma"], R=c["R"], k=c["k"], m=c["m"])


def _summary(cells, cong, inc, dec, demo, params):
    p, mg, nb = params["params"], params["margins"], dec.numbers
    scale = cong["median"] / cong["scale"]
    out = [
        WORDS.text("summary", d=p["d"], replicates=int(cells["replicates"].min()),
                   median_min=cong["median_ratio"].min(), median_max=cong["median_ratio"].max(),
                   scale_min=scale.min(), scale_max=scale.max(), quantile=1 - mg["max_error"],
                   q_min=cong["q_hi_ratio"].min(), q_max=cong["q_hi_ratio"].max(),
                   rms_min=cong["rms_ratio"].min(), rms_max=cong["rms_ratio"].max(),
                   inc_min=inc["ratio"].min(), inc_max=inc["ratio"].max()),
        _m_words(cong, mg)]
    counts = dict(max_error=mg["max_error"], confidence=mg["confidence"],
                  separates=nb["separates"], cells=nb["cells"], overlaps=nb["overlaps"],
                  undetermined=nb["undetermined"])
    if nb["separates"]:
        out.append(_region_words(cells, nb, counts))
        out.append(_universal_words(cells, nb, mg, p))
    else:
        out.append(WORDS.text("summary.no cells", **counts))
    out.append(_demo_words(demo))
    return " ".join(s for s in out if s)


def _opens_at(g):
    """Where the band opens in the cells ``g`` of one (k, m), in words."""
    s_all, s_first, _ = region(g)
    if np.isnan(s_first):
        return WORDS.text("opens.never")
    if np.isnan(s_all):
        return WORDS.text("opens.not in every cell above", S_first=s_first)
    return (WORDS.text("opens.at", S_all=s_all) if s_first >= s_all else
            WORDS.text("opens.every cell from", S_first=s_first, S_all=s_all))


def _region_words(cells, nb, counts):
    big = cells[cells["S"] >= cells["S"].max() / 4]
    ratio = (big["inc_lo"] / big["inc_population"]).min()
    opens = "; ".join(WORDS.text("opens", at=_opens_at(g), k=k, m=m)
                      for (k, m), g in cells.groupby(["k", "m"]))
    where = (WORDS.text("where.none") if np.isnan(nb["S_all"]) else
             WORDS.text("where.every cell", S_all=nb["S_all"]))
    region_ = WORDS.text("region" if np.isnan(nb["S_fail"]) else "region.fail", where=where,
                         S_first=nb["S_first"], S_fail=nb["S_fail"])
    return WORDS.text("summary.cells", **counts, region=region_, opens=opens,
                      s_pred_min=cells["S_pred"].min(), s_pred_max=cells["S_pred"].max(),
                      ratio=ratio)


def _universal_words(cells, nb, mg, p):
    lo, hi = cells.loc[nb["low"]], cells.loc[nb["high"]]
    out = [WORDS.text("universal.one", common_lo=nb["common_lo"], common_hi=nb["common_hi"])
           if nb["universal"] else
           WORDS.text("universal.none", low=_band_words(lo), high=_band_words(hi)),
           WORDS.text("universal.lower edge", quantile=1 - mg["max_error"],
                      lo=cells["cong_hi"].min(), hi=cells["cong_hi"].max())]
    k, m, R = p["k"][0], p["figure_m"], p["figure_R"]
    g = cells[(cells["k"] == k) & (cells["m"] == m) & np.isclose(cells["R"], R)]
    sep = g[g["status"] == SEPARATES]
    if len(sep):
        c_lo, c_hi = sep["band_lo"].max(), sep["band_hi"].min()
        without = "; ".join(WORDS.text("without a band", n_over_d=c["n_over_d"],
                                       sigma=c["sigma"], cong_hi=c["cong_hi"], inc_lo=c["inc_lo"])
                            for _, c in g[g["status"] != SEPARATES].iterrows())
        out.append(WORDS.text(
            "universal.figure cell", R=R, k=k, m=m, separate=len(sep), cells=len(g),
            common=(WORDS.text("common.range", lo=c_lo, hi=c_hi) if c_lo < c_hi
                    else WORDS.text("common.none")), without=without))
    return " ".join(out)


def _m_words(cong, mg):
    ms = sorted(cong["m"].unique())
    if len(ms) < 2:
        return ""
    w = cong.pivot(index="n", columns="m", values="q_hi")
    r = w[ms[-1]] / w[ms[0]]
    return WORDS.text("summary.m", quantile=1 - mg["max_error"], m_hi=ms[-1], r_min=r.min(),
                      r_max=r.max(), m_lo=ms[0])


def _demo_words(demo):
    if demo.empty:
        return ""
    c = demo.iloc[0]
    head = WORDS.text("demo.head", n=int(c["n"]), m=int(c["m"]), sigma=c["sigma"], R=c["R"])
    if "correct" not in demo or not np.isfinite(c["eps2_gradient"]):
        return WORDS.text("demo.not run", head=head)
    runs = "; ".join(WORDS.text("demo.k = 1" if k == 1 else "demo.k > 1", k=k,
                                correct=int(g["correct"].sum()), runs=len(g))
                     for k, g in demo.groupby("k"))
    return WORDS.text("demo", head=head, eps2=c["eps2_gradient"], lo=c["band_lo"],
                      hi=c["band_hi"], runs=runs)


def _caveats(cells, cong, params):
    return WORDS.items("caveats", d=params["params"]["d"])


# ------------------------------------------------------------------------------ figure

def _normalized_panel(ax, cells, cong, p, k):
    """Largest norms / (sigma sqrt(d/n)) against S: incongruent lower quantile (marker; filled
    where a band exists) up to its median, congruent upper quantiles (dashed, per n/d and m)."""
    import matplotlib as mpl

    ns = sorted(p["n"])
    colours = {n: mpl.colormaps["viridis"](i / max(len(ns) - 1, 1)) for i, n in enumerate(ns)}
    shapes = dict(zip(sorted(p["m"]), "osD^v"))
    one = cells.assign(rho=(cells["R"] / cells["sigma"]).map(_canon)).drop_duplicates(
        ["m", "n", "rho"])
    for (n, m), c in one.groupby(["n", "m"]):
        c = c.sort_values("S")
        sep = (c["status"] == SEPARATES).to_numpy()
        z = (c["sigma"] * np.sqrt(p["d"] / c["n"])).to_numpy()
        x, lo, med = c["S"].to_numpy(), c["inc_lo"].to_numpy() / z, c["inc_median"].to_numpy() / z
        ax.vlines(x, lo, med, color=colours[n], lw=0.8, alpha=0.6)
        ax.scatter(x[sep], lo[sep], marker=shapes[m], color=colours[n], s=22, zorder=3)
        ax.scatter(x[~sep], lo[~sep], marker=shapes[m], facecolors="none", edgecolors=colours[n],
                   s=22, zorder=3)
        row = cong[(cong["n"] == n) & (cong["m"] == m)].iloc[0]
        ax.axhline(row["q_hi"] / np.sqrt(p["d"] / n), color=colours[n], ls="--", lw=0.8)
    c_k = np.sqrt(2.0 * (k - 1) / k)
    s = np.geomspace(max(one["S"].min(), 1.0 / c_k), one["S"].max(), 50)
    ax.plot(s, s * c_k, color="k", lw=1, label="R sqrt(2(k-1)/k) (population)")
    s_all, s_first, _ = region(cells)
    if np.isfinite(s_all):
        ax.axvspan(s_first, s_all, color="gray", alpha=0.2, lw=1,
                   label=f"band in some cells (S = {s_first:.3g}) / in all above (S = {s_all:.3g})")
    for n in ns:
        ax.plot([], [], color=colours[n], ls="--", label=f"n/d = {n / p['d']:g}: congruent upper q")
    for m, mk in shapes.items():
        ax.scatter([], [], marker=mk, color="gray", label=f"m = {m} (filled: band exists)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("S = R / (sigma sqrt(d/n))")
    ax.set_ylabel("max_i ||grad r_i(theta*)|| / (sigma sqrt(d/n))")
    ax.set_title(f"k = {k}: incongruent lower quantile (marker) to median vs congruent upper "
                 "quantile (dashed)", fontsize=8)
    ax.legend(fontsize=6, loc="upper left")


def _absolute_panel(ax, cells, p):
    """At R = figure_R, the first k and m = figure_m: congruent (median to upper quantile) and
    incongruent (lower quantile to median) against n/d for each sigma, the band shaded."""
    k, m, R = p["k"][0], p["figure_m"], p["figure_R"]
    c = cells[(cells["k"] == k) & (cells["m"] == m) & np.isclose(cells["R"], R)]
    sigmas = sorted(p["sigma"])
    for j, sigma in enumerate(sigmas):
        g = c[np.isclose(c["sigma"], sigma)].sort_values("n")
        x = g["n_over_d"].to_numpy() * 1.08 ** (j - (len(sigmas) - 1) / 2)
        col = f"C{j}"
        ax.vlines(x * 0.97, g["cong_median"], g["cong_hi"], color=col, lw=1.2, ls=":")
        ax.scatter(x * 0.97, g["cong_hi"], marker="v", color=col, s=18)
        ax.vlines(x * 1.03, g["inc_lo"], g["inc_median"], color=col, lw=3)
        ax.scatter(x * 1.03, g["inc_lo"], marker="^", color=col, s=18)
        for xi, b0, b1 in zip(x, g["band_lo"], g["band_hi"]):
            if np.isfinite(b0):
                ax.fill_between([xi * 0.94, xi * 1.06], b0, b1, color=col, alpha=0.15, lw=0)
        ax.plot([], [], color=col, lw=3, label=f"sigma = {sigma:g}: congruent median to upper q "
                                               "(dotted), incongruent lower q to median (solid), "
                                               "band shaded")
    if len(c):
        ax.axhline(float(c["inc_population"].iloc[0]), color="k", lw=0.8, ls=":",
                   label="R sqrt(2(k-1)/k)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n / d")
    ax.set_ylabel("max_i ||grad r_i(theta*)||")
    ax.set_title(f"R = {R:g}, k = {k}, m = {m}: the separating eps2 band moves with n and sigma",
                 fontsize=8)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 6)  # room for the legend above the data
    ax.legend(fontsize=6, loc="upper right")


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    p = params["params"]
    cells, cong = verdict.tables["_cells.csv"], verdict.tables["_congruent.csv"]
    fig = Figure(figsize=(5.4 * (len(p["k"]) + 1), 5.0))
    axes = fig.subplots(1, len(p["k"]) + 1)
    for ax, k in zip(axes, p["k"]):
        _normalized_panel(ax, cells[cells["k"] == k], cong, p, k)
    _absolute_panel(axes[-1], cells, p)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="CFLC5", order=210, paper="CFL", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
