"""Study FPTH1: FPFC's Theorem 1, the O(1/K) decay of its stationarity measures, inside the
theorem's region of rho and outside it.

**The Lagrangian.** Algorithm 1 (:func:`mixlinreg.baselines.fpfc`) is the method of the
augmented Lagrangian, with the pair terms scaled by ``1/m`` as in the objective ``F``,

``L_rho(w, theta, v) = sum_i f_i(w_i) + (1/m) sum_{i<j} [g(||theta_ij||) + <v_ij, r_ij>
+ (rho/2) ||r_ij||^2]``,  ``r_ij = w_i - w_j - theta_ij``,

with ``g`` the smoothed SCAD ``P~_a``: the theta step minimizes it in ``theta`` exactly, the dual
step is ascent ``v <- v + (rho m) grad_v L_rho``, and since ``rho (w_i - zeta_i) = (1/m)
sum_{j != i} [v_ij + rho r_ij]`` the local gradient ``grad f_i + rho (w - zeta_i)`` is
``grad_{w_i} L_rho`` at the round's start: the first local step is gradient descent on ``L_rho``,
the later ones on ``L_rho + (rho / 2m) ||w_i - w_i^k||^2`` (``zeta_i`` holds the round's
``w_i^k / m``). The tests check all of it to rounding.

**The theorem's L_0** is not written out. Read here (``reading = "lagrangian"``) as ``L_rho`` at
``rho = 0`` with the unsmoothed SCAD ``P_a``: the ordinary Lagrangian of ``F``. Then
``grad_w L_0 = grad f_i + (1/m) sum_j v_ij``, ``grad_v L_0 = r_ij / m`` (``||.||^2`` over pairs
``i < j``) and ``G_ij = theta_ij - prox_{P_a}(theta_ij + v_ij)`` (the prox of ``theta -> m L_0``
per pair, unit step; ``||G||^2`` over ordered pairs ``i != j``). Why: the theta step makes
``v_ij = grad P~(theta_ij)`` after every update, so ``G_ij = 0`` where ``||theta_ij|| > xi`` and
``||G_ij|| <= lam xi / (lam + xi)`` inside, equality at ``||theta_ij|| = lam xi / (lam + xi)``:
summed over the ``m (m - 1)`` ordered pairs this is the theorem's ``m^2 lam^2 xi^2/(lam + xi)^2``,
and ``m xi lam / 4`` in its constant is the gap between ``P~`` and ``P_a`` summed over pairs. The
other reading (``"augmented"``, ``L_0 = L_rho``: ``grad_w`` adds ``(rho/m) sum_j r_ij`` and ``G``
steps from ``theta + v + rho r``) is measured too. Both readings give the same ``grad_v``.

**Measured**: a mixture of linear regressions (squared loss: convex, ``L_- = 0``; ``L_f`` from
``smoothness``), for each rho of the config (declared inside or outside the region; the region's
constants ``c``, the smallest ``T``, the largest ``alpha``, the lower bound on rho from
:func:`region`, checked per data set) and each participation (1: every machine; below 1: random
subsets, Assumption 3), step ``alpha = 1/(L_f + 2 rho)``: every round's
``||grad_w L_0||^2``, ``||grad_v L_0||^2`` and ``||G||^2 / bound`` (the callback); the running
means ``(1/K) sum_{k<K}`` at a log grid of ``K``; their log-log slope over the last
``slope_window``-fold range of ``K`` per run, bootstrapped over seeds (data and draws); the rounds
until the clustering (``||theta_ij|| <= nu``) is right for good and until
``||grad_w L_0||^2 <= tol``.

**Verdict** (:func:`decide`), on the settings inside the region only (outside, the theorem says
nothing: described, no verdict): per measure, the slope interval at or below ``-1 + slope_margin``
holds, entirely above it is not supported, else inconclusive; ``G`` holds if every run stays at or
below ``(1 + g_tol) x bound`` at every round, is not supported if a full-participation run exceeds
it (no randomness: a counterexample) or the mean over seeds at some grid round has its interval
above it, else inconclusive. The verdict is the weakest over the inside settings under the chosen
reading, a caveat when it holds there but not under the other. ``C_1`` (with ``F*`` and ``L_h``)
is not checked: only the shape. Config: ``mixlinreg/configs/studies/FPTH1.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ...baselines import fpfc
from ...baselines._common import loss_gradient, smoothness
from ...config import Spec
from ...data import make_mixture
from ...stats import Fit, bootstrap, verdict_at_most
from ..study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict, combine,
                     with_margin)
from ..words import sensitivity_lines, words

#: the study's prose: fpth1.md beside this module
WORDS = words(__file__)

READINGS = ("lagrangian", "augmented")

SCHEMA = {
    "params": {
        "m": Spec("int", low=4), "k": Spec("int", low=2), "n": Spec("int", low=2),
        "d": Spec("int", low=1), "R": Spec("float", low=0, open="low"),
        "sigma": Spec("float", low=0),
        "lam": Spec("float", low=0, open="low"), "a": Spec("float", low=2, open="low"),
        "xi": Spec("float", low=0, open="low"), "nu": Spec("float", low=0),
        "local_steps": Spec("int", low=1), "rhos": Spec("list[float]", low=0, open="low"),
        "regions": Spec("list[str]", choices=("inside", "outside")),
        "participations": Spec("list[float]", low=0, high=1, open="low"),
        "rounds": Spec("int", low=8), "grid_points": Spec("int", low=8),
        "slope_window": Spec("float", low=1, open="low"), "tol": Spec("float", low=0, open="low"),
        "seeds": Spec("int", low=2), "n_boot": Spec("int", low=100),
        "reading": Spec("str", choices=READINGS),
        # the control's broken variant (issue 37): FPFC run with step_mult x the theorem's alpha
        # (the region is still judged at the theorem's alpha); 1 is Algorithm 1 as the theorem has it
        "step_mult": Spec("float", low=0, open="low", required=False, default=1.0),
    },
    "margins": {
        "slope_margin": Spec("float", low=0), "slope_margin_neighbours": Spec("list[float]", low=0),
        "g_tol": Spec("float", low=0), "g_tol_neighbours": Spec("list[float]", low=0),
    },
}


# ------------------------------------------------------------------------------ the algebra


def scad_prox(t, lam, a, step=1.0):
    """Minimizer ``s >= 0`` of ``P_a(s, lam) + (s - t)^2 / (2 step)`` for ``t >= 0`` (the SCAD
    thresholding rule of Fan and Li, unsmoothed; needs ``step < a - 1``), elementwise.

    >>> np.round(scad_prox([0.2, 0.8, 1.5, 5.0], 0.5, 3.7), 6).tolist()
    [0.0, 0.3, 1.294118, 5.0]
    """
    t = np.asarray(t, dtype=np.float64)
    mid = ((a - 1.0) * t - a * lam * step) / ((a - 1.0) - step)
    return np.where(t <= step * lam, 0.0,
                    np.where(t <= lam * (1.0 + step), t - step * lam,
                             np.where(t <= a * lam, mid, t)))


def incidence(pairs, m):
    """``D`` (P, m) with ``D @ w = w_i - w_j`` for the pairs ``(i, j)`` (rows of ``pairs``)."""
    P = len(pairs)
    rows = np.concatenate([np.arange(P), np.arange(P)])
    vals = np.concatenate([np.ones(P), -np.ones(P)])
    return sparse.csr_matrix((vals, (rows, np.concatenate([pairs[:, 0], pairs[:, 1]]))),
                             shape=(P, m))


def g_mapping(theta, z, lam, a):
    """``G_ij = theta_ij - prox_{P_a}(z_ij)`` (unit step, radial SCAD rule), rows of pairs."""
    t = np.linalg.norm(z, axis=1)
    s = scad_prox(t, lam, a)
    return theta - np.divide(s, t, out=np.zeros_like(t), where=t > 0.0)[:, None] * z


def grad_omega(grad_f, state, D, rho, DT=None):
    """``grad_w L_rho`` (m, d): ``grad f_i(w_i) + (1/m) sum_{j != i} [v_ij + rho r_ij]`` with
    ``r_ij = w_i - w_j - theta_ij`` (``theta_ji = -theta_ij``, ``v_ji = -v_ij``); ``rho = 0``:
    ``grad_w L_0`` of the ordinary Lagrangian. ``grad_f`` (m, d) every ``grad f_i(w_i)``."""
    DT = D.T.tocsr() if DT is None else DT
    m = state["omega"].shape[0]
    out = grad_f + (DT @ state["v"]) / m
    if rho:
        out = out + rho * (DT @ (D @ state["omega"] - state["theta"])) / m
    return out


def stationarity(grad_f, state, D, rho, lam, a, DT=None):
    """Theorem 1's measures at one round's iterates, under both readings of ``L_0``.

    ``grad_f`` (m, d): every ``grad f_i(w_i)``; ``state``: the callback's ``omega``, ``theta``,
    ``v``; ``D`` from :func:`incidence` (``DT``: its transpose, precomputed). Returns
    ``{"omega_lagrangian", "omega_augmented", "v", "G_lagrangian", "G_augmented"}``: squared
    norms, ``||grad_v||^2 = (1/m^2) sum_{i<j} ||r_ij||^2``, ``||G||^2`` over ordered pairs (twice
    the sum over ``i < j``).
    """
    w, theta, v = state["omega"], state["theta"], state["v"]
    m = w.shape[0]
    DT = D.T.tocsr() if DT is None else DT
    r = D @ w - theta
    g_lag = grad_omega(grad_f, state, D, 0.0, DT)
    g_aug = g_lag + rho * (DT @ r) / m
    G_lag = g_mapping(theta, theta + v, lam, a)
    G_aug = g_mapping(theta, theta + v + rho * r, lam, a)
    return {"omega_lagrangian": float(np.sum(g_lag * g_lag)),
            "omega_augmented": float(np.sum(g_aug * g_aug)),
            "v": float(np.sum(r * r)) / m ** 2,
            "G_lagrangian": 2.0 * float(np.sum(G_lag * G_lag)),
            "G_augmented": 2.0 * float(np.sum(G_aug * G_aug))}


def g_bound(m, lam, xi):
    """Theorem 1's bound on ``E ||G||^2``: ``m^2 lam^2 xi^2 / (lam + xi)^2``."""
    return m * m * lam * lam * xi * xi / (lam + xi) ** 2


def region(L_f, rho, alpha, T, lam, xi, a, L_minus=0.0):
    """Theorem 1's conditions at ``(rho, alpha, T)``: ``mu = rho - L_-``,
    ``c = 1 - alpha 2 mu (L_f + rho) / (L_f + rho + mu)``, ``T > -2 log 2 / log c``,
    ``alpha <= 1 / (L_f + 2 rho - L_-)`` and ``rho > max(L_f / (1 - 2 c^(T/2)), 2 lam / xi,
    2 / (a - 1), L_-)``.

    Returns a dict: ``c``, ``T_min`` (smallest integer ``T`` allowed), ``alpha_max``,
    ``rho_terms`` (the four terms by name), ``rho_lower`` (their max), ``violated`` (the conditions
    that fail, as text) and ``inside`` (none fails).

    >>> r = region(2.0, 10.0, 1 / 22, 5, 0.5, 0.01, 3.7)
    >>> round(r["c"], 6), r["T_min"], r["rho_lower"], r["violated"]
    (0.504132, 3, 100.0, ['rho > 2 lam/xi'])
    """
    mu = rho - L_minus
    c = 1.0 - alpha * 2.0 * mu * (L_f + rho) / (L_f + rho + mu)
    if not 0.0 < c < 1.0:
        raise ValueError(f"c = 1 - alpha 2 mu (L_f + rho)/(L_f + rho + mu) must be in (0, 1) for "
                         f"Theorem 1's conditions, got c={c!r} (alpha={alpha!r}, rho={rho!r})")
    t_bound = -2.0 * math.log(2.0) / math.log(c)
    alpha_max = 1.0 / (L_f + 2.0 * rho - L_minus)
    q = 1.0 - 2.0 * c ** (T / 2.0)
    terms = {"L_f/(1-2c^(T/2))": L_f / q if q > 0 else math.inf, "2 lam/xi": 2.0 * lam / xi,
             "2/(a-1)": 2.0 / (a - 1.0), "L_-": L_minus}
    violated = [] if mu > 0 else ["mu = rho - L_- > 0"]
    if not T > t_bound:
        violated.append("T > -2 log 2/log c")
    if not 0.0 < alpha <= alpha_max * (1.0 + 1e-12):
        violated.append("alpha <= 1/(L_f + 2 rho - L_-)")
    violated += [f"rho > {name}" for name, val in terms.items() if not rho > val]
    return {"c": c, "T_min": int(math.floor(t_bound)) + 1, "alpha_max": alpha_max,
            "rho_terms": terms, "rho_lower": max(terms.values()), "violated": violated,
            "inside": not violated}


# ------------------------------------------------------------------------------ units


def _settings(p):
    return [(rho, reg, part) for rho, reg in zip(p["rhos"], p["regions"])
            for part in p["participations"]]


def units(params):
    p = params["params"]
    if len(p["rhos"]) != len(p["regions"]):
        raise ValueError(f"study FPTH1: params.rhos and params.regions must have the same length, "
                         f"got {len(p['rhos'])} and {len(p['regions'])}")
    if "inside" not in p["regions"]:
        raise ValueError(f"study FPTH1: params.regions must declare at least one rho 'inside' the "
                         f"region (the verdict reads those), got {p['regions']}")
    if p["m"] % p["k"]:
        raise ValueError(f"study FPTH1: params.m must be a multiple of params.k (equal clusters), "
                         f"got m={p['m']}, k={p['k']}")
    if not p["xi"] < p["lam"]:
        raise ValueError(f"study FPTH1: params.xi must be in (0, lam) = (0, {p['lam']:g}), got "
                         f"{p['xi']!r}")
    if p["grid_points"] > p["rounds"] or p["slope_window"] > p["rounds"] / 2:
        raise ValueError(f"study FPTH1: params.grid_points must be <= rounds and "
                         f"params.slope_window <= rounds / 2 = {p['rounds'] / 2:g}, got "
                         f"grid_points={p['grid_points']}, slope_window={p['slope_window']!r}")
    need = max(2.0 * p["lam"] / p["xi"], 2.0 / (p["a"] - 1.0))
    for i, (rho, reg) in enumerate(zip(p["rhos"], p["regions"])):
        if rho * (p["a"] - 1.0) <= 1.0:
            raise ValueError(f"study FPTH1: params.rhos[{i}] must exceed 1/(a - 1) = "
                             f"{1 / (p['a'] - 1):.4g} (FPFC's theta step), got {rho!r}")
        # with alpha = 1/(L_f + 2 rho) and L_- = 0, c >= 1/2, so T > 2 is necessary
        if reg == "inside" and not (rho > need and p["local_steps"] >= 3):
            raise ValueError(f"study FPTH1: params.rhos[{i}] = {rho!r} is declared inside the "
                             f"region (params.regions) but rho must exceed max(2 lam/xi, 2/(a-1)) "
                             f"= {need:g} and params.local_steps must be >= 3, got local_steps="
                             f"{p['local_steps']}")
    return [(f"seed{s}", {"seed": s}) for s in range(p["seeds"])]


# ------------------------------------------------------------------------------ compute


def _canonical(labels):
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse]


def _partition(theta, pairs, nu, m):
    """The clustering of :func:`~mixlinreg.baselines.fpfc`: components of ``||theta_ij|| <= nu``."""
    link = np.linalg.norm(theta, axis=1) <= nu
    adj = sparse.coo_matrix((np.ones(int(link.sum())), (pairs[link, 0], pairs[link, 1])),
                            shape=(m, m))
    return _canonical(connected_components(adj, directed=False)[1])


def _clustered(theta, pairs, nu, truth, same):
    """Whether the clustering is ``truth`` (canonical labels; ``same``: pairs in one true
    cluster): no link across clusters and, when not every pair within is linked, the components
    (the fast test first)."""
    link = np.linalg.norm(theta, axis=1) <= nu
    if np.any(link & ~same):
        return False
    if np.all(link[same]):
        return True
    return np.array_equal(_partition(theta, pairs, nu, truth.size), truth)


def _first_for_good(flags):
    """1-based first round from which ``flags`` stays true to the end (NaN: never)."""
    bad = np.flatnonzero(~flags)
    if not bad.size:
        return 1.0
    return math.nan if bad[-1] == flags.size - 1 else float(bad[-1] + 2)


def _run_setting(mix, rho, region_said, part, p, rng):
    """One FPFC run with the measures of every round; its rows on the log grid of ``K``."""
    X, y = mix.X, mix.y
    m, d = X.shape[0], X.shape[2]
    L_f = smoothness(X, "squared", 0.0)
    alpha = 1.0 / (L_f + 2.0 * rho)  # the largest alpha of the theorem (L_- = 0)
    reg = region(L_f, rho, alpha, p["local_steps"], p["lam"], p["xi"], p["a"])
    if reg["inside"] != (region_said == "inside"):
        got = "inside" if reg["inside"] else "outside: " + ", ".join(reg["violated"])
        raise ValueError(f"study FPTH1: params.regions says rho = {rho:g} is {region_said} the "
                         f"region, but on this data (L_f = {L_f:.4g}) its conditions give {got}")
    grad, every = loss_gradient(X, y, 0.0, "squared", 1.0, (d,)), np.arange(m)
    truth, bound = _canonical(mix.labels), g_bound(m, p["lam"], p["xi"])
    rec = {key: np.full(p["rounds"], np.nan) for key in (
        "omega_lagrangian", "omega_augmented", "v", "G_lagrangian", "G_augmented")}
    right = np.zeros(p["rounds"], dtype=bool)
    cache = {}

    def callback(k, state):
        pairs = state["pairs"]
        if "D" not in cache:
            cache["D"] = incidence(pairs, m)
            cache["DT"] = cache["D"].T.tocsr()
            cache["same"] = truth[pairs[:, 0]] == truth[pairs[:, 1]]
        vals = stationarity(grad(every, state["omega"]), state, cache["D"], rho, p["lam"], p["a"],
                            cache["DT"])
        for key, val in vals.items():
            rec[key][k - 1] = val
        right[k - 1] = _clustered(state["theta"], pairs, p["nu"], truth, cache["same"])

    res = fpfc(X, y, lam=p["lam"], a=p["a"], xi=p["xi"], rho=rho, lr=p["step_mult"] * alpha,
               local_steps=p["local_steps"], n_rounds=p["rounds"], nu=p["nu"],
               participation=part, rng=rng, callback=callback)
    done = res.n_rounds
    g = {r: rec[f"G_{r}"][:done] / bound for r in READINGS}
    over = np.flatnonzero(g["augmented"] > 1.0)
    below = rec["omega_lagrangian"][:done] <= p["tol"]
    summary = {
        "L_f": L_f, "alpha": alpha, "c": reg["c"], "T_min": reg["T_min"],
        "alpha_max": reg["alpha_max"], "rho_lower": reg["rho_lower"],
        "violated": "; ".join(reg["violated"]), "inside": reg["inside"], "g_bound": bound,
        "g_lagrangian_max": float(g["lagrangian"].max()), "g_augmented_max":
        float(g["augmented"].max()), "g_augmented_rounds_over": int(over.size),
        "g_augmented_last_over": int(over[-1] + 1) if over.size else 0,
        "rounds_to_cluster": _first_for_good(right[:done]),
        "rounds_to_tol": float(np.argmax(below) + 1) if below.any() else math.nan,
        "n_clusters": int(res.extra["n_clusters"]), "diverged": bool(res.extra["diverged"]),
        "rounds_done": done}
    rows = []
    for K in np.unique(np.round(np.geomspace(1, p["rounds"], p["grid_points"])).astype(int)):
        if K > done:
            break
        row = {"rho": rho, "participation": part, "region": region_said, "K": int(K)}
        for key in ("omega_lagrangian", "omega_augmented", "v"):
            row[f"mean_{key}"] = float(rec[key][:K].mean())
            row[key] = float(rec[key][K - 1])
        row.update({f"g_{r}": float(g[r][K - 1]) for r in READINGS})
        rows.append({**row, **summary})
    return rows


def compute(spec, params, rng, shared):
    p = params["params"]
    data_rng, draw_rng = rng.spawn(2)
    mix = make_mixture(p["m"], p["n"], p["d"], p["k"], p["R"], p["sigma"], theta_scale="norm",
                       rng=data_rng)
    settings = _settings(p)
    rows = []
    for (rho, reg, part), gen in zip(settings, draw_rng.spawn(len(settings))):
        for row in _run_setting(mix, rho, reg, part, p, gen):
            rows.append({"setting": f"rho={rho:g}_p={part:g}", "seed": spec["seed"], **row})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ analysis


def _run_slope(run, K_max, window):
    """Per run: log-log slope of the running means over ``K >= K_max / window`` and the growth
    ``K M_K`` from the window's first ``K`` to its last."""
    w = run[run["K"] >= K_max / window].sort_values("K")
    lk = np.log(w["K"].to_numpy(dtype=float))
    out = {}
    for meas, col in (("omega_lagrangian", "mean_omega_lagrangian"),
                      ("omega_augmented", "mean_omega_augmented"), ("v", "mean_v")):
        M = w[col].to_numpy(dtype=float)
        out[meas] = float(np.polyfit(lk, np.log(M), 1)[0])
        out[f"growth_{meas}"] = float(M[-1] * w["K"].iloc[-1] / (M[0] * w["K"].iloc[0]))
    return out


def _g_fit(ts, col, n_boot, gen):
    """The seed-mean of ``col`` (``||G||^2 / bound``) at the grid round where it is largest,
    bootstrapped over seeds, and that round."""
    wide = ts.pivot_table(index="seed", columns="K", values=col)
    K_star = int(wide.mean().idxmax())
    vals = wide[K_star].dropna().to_numpy()
    if vals.size < 2:
        return Fit(float(vals[0]), float(vals[0]), float(vals[0]), 1), K_star
    return bootstrap(vals, n_boot=n_boot, rng=gen), K_star


def _slope_fits(ts, p, rng, name):
    """The slopes' Fits over the runs that did not diverge (a placeholder when fewer than 2:
    :func:`decide` reads a diverged setting as not supported) and the median growths."""
    K_max = int(ts["rounds_done"].min())
    ok = ts[~ts["diverged"].astype(bool)]
    per_run = pd.DataFrame([_run_slope(run, K_max, p["slope_window"])
                            for _, run in ok.groupby("seed")])
    fits, growth = {}, {}
    for meas in ("omega_lagrangian", "omega_augmented", "v"):
        if len(per_run) < 2:
            fits[meas], growth[meas] = Fit(0.0, 0.0, 0.0, len(per_run)), math.nan
            continue
        fits[meas] = bootstrap(per_run[meas].to_numpy(), n_boot=p["n_boot"],
                               rng=rng(f"slope_{meas}_{name}"))
        growth[meas] = float(per_run[f"growth_{meas}"].median())
    return fits, growth


def measure(table, p, rng):
    """Per setting: the slopes' Fits (``omega_lagrangian``, ``omega_augmented``, ``v``, bootstrap
    of the mean over seeds), ``G`` per reading (``max`` over runs and rounds, ``worst`` Fit,
    ``K_worst``) and descriptive numbers, for :func:`decide`."""
    out = {}
    for name, ts in table.groupby("setting", sort=False):
        first = ts.groupby("seed").first()
        slopes, growth = _slope_fits(ts, p, rng, name)
        s = {"region": str(first["region"].iloc[0]), "rho": float(first["rho"].iloc[0]),
             "participation": float(first["participation"].iloc[0]),
             "diverged": int(first["diverged"].astype(bool).sum()), "seeds": len(first),
             "slopes": slopes, "growth": growth, "g": {}, "first": first}
        for r in READINGS:
            worst, K_star = _g_fit(ts, f"g_{r}", p["n_boot"], rng(f"g_{r}_{name}"))
            s["g"][r] = {"max": float(first[f"g_{r}_max"].max()), "worst": worst,
                         "K_worst": K_star}
        out[name] = s
    return out


def _g_rule(g, participation, g_limit):
    if g["max"] <= g_limit:
        return HOLDS
    if participation == 1.0 or g["worst"].lo > g_limit:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def decide(measurements, params):
    """Theorem 1's rules on :func:`measure`'s numbers with ``params["margins"]``' ``slope_margin``
    and ``g_tol`` and ``params["params"]["reading"]``.

    Per setting and reading: ``omega`` and ``v``: :func:`~mixlinreg.stats.verdict_at_most` of
    the running means' slope against ``-1 + slope_margin`` (a diverged run: not supported);
    ``G``: holds if every run and round stays at or below ``1 + g_tol`` times the bound; not
    supported if not and the run is deterministic (participation 1) or the seed-mean's interval
    at its worst grid round lies above; else inconclusive. The verdict: the weakest over the
    settings inside the region under the chosen reading, lowered to a caveat when it holds but the
    other reading's does not. Outside settings get the same rules as description only.
    """
    mg, primary = params["margins"], params["params"]["reading"]
    slope_limit, g_limit = -1.0 + mg["slope_margin"], 1.0 + mg["g_tol"]
    rules = {}
    for name, s in measurements.items():
        rules[name] = {}
        for r in READINGS:
            by = {meas: (NOT_SUPPORTED if s["diverged"] else
                         verdict_at_most(s["slopes"][key], slope_limit))
                  for meas, key in (("omega", f"omega_{r}"), ("v", "v"))}
            by["G"] = _g_rule(s["g"][r], s["participation"], g_limit)
            rules[name][r] = by
    inside = [n for n, s in measurements.items() if s["region"] == "inside"]
    if not inside:
        raise ValueError("decide needs at least one setting inside the region, got none")
    by_reading = {r: combine([v for n in inside for v in rules[n][r].values()]) for r in READINGS}
    other = next(r for r in READINGS if r != primary)
    verdict = by_reading[primary]
    if verdict == HOLDS and by_reading[other] != HOLDS:
        verdict = CAVEAT
    return Decision(verdict, {"reading": primary, "by_reading": by_reading, "rules": rules,
                              "inside": inside, "slope_limit": slope_limit, "g_limit": g_limit,
                              "slope_margin": mg["slope_margin"], "g_tol": mg["g_tol"]})


def _at(params, **margins):
    """``params`` with these margins set (kept for tests/test_fpfc_theorem1.py, which reads the
    sensitivity lines back through it)."""
    for key, value in margins.items():
        params = with_margin(params, key, value)
    return params


def _reading_text(r):
    return WORDS.text(f"reading.{r}")


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    meas = measure(table, p, rng)
    dec = decide(meas, params)
    sens = sensitivity_lines(WORDS, params, lambda q, key: decide(meas, q).verdict) + [
        f"{WORDS.text('sensitivity.reading')} (chosen {p['reading']}): " + "; ".join(
            f"{r} -> {decide(meas, {'params': {**p, 'reading': r}, 'margins': mg}).verdict}"
            for r in READINGS),
    ]
    region_rows = table.groupby(["setting", "seed"], sort=False).first().reset_index()[
        ["setting", "seed", "rho", "participation", "region", "L_f", "alpha", "alpha_max", "c",
         "T_min", "rho_lower", "violated", "g_bound", "g_lagrangian_max", "g_augmented_max",
         "g_augmented_rounds_over", "g_augmented_last_over", "rounds_to_cluster",
         "rounds_to_tol", "n_clusters", "diverged"]]
    return Verdict(dec.verdict, _numbers(meas, dec), _summary(meas, dec, p),
                   caveats=_caveats(meas, dec, p), sensitivity=sens, scope=_scope(meas, dec),
                   tables={"_runs.csv": region_rows})


def _median(first, col):
    return float(np.median(first[col].to_numpy(dtype=float)))


def _median_rounds(first, col):
    """Median rounds over seeds, a run that never got there counting as infinitely many."""
    v = first[col].to_numpy(dtype=float)
    return float(np.median(np.where(np.isfinite(v), v, np.inf)))


def _rounds(first, col):
    med = _median_rounds(first, col)
    return f"{med:g}" if np.isfinite(med) else f"> {int(first['rounds_done'].min())}"


def _violated(first):
    v = first["violated"].iloc[0]  # "" (inside) reads back from a stored CSV as NaN
    return v if isinstance(v, str) and v else "none"


def _numbers(meas, dec):
    r0 = dec.numbers["reading"]
    rows = []
    for name, s in meas.items():
        f, rules = s["first"], dec.numbers["rules"][name][r0]
        if s["region"] == "inside":
            verdict = combine(list(rules.values()))
            where = "inside"
        else:
            verdict = WORDS.text("numbers.outside verdict", verdict=combine(list(rules.values())))
            where = WORDS.text("numbers.outside region", violated=_violated(f))
        ga = s["g"]["augmented"]
        rows.append({
            "setting": name, "region": where,
            "slope of mean ||grad_w L_0||^2": s["slopes"][f"omega_{r0}"].fmt(),
            "slope of mean ||grad_v L_0||^2": s["slopes"]["v"].fmt(),
            "K x mean growth (w, v)": f"{s['growth'][f'omega_{r0}']:.3f}, {s['growth']['v']:.3f}",
            "max ||G||^2/bound (Lagrangian)": f"{s['g']['lagrangian']['max']:.3g}",
            "max ||G||^2/bound (augmented)": WORDS.text(
                "numbers.augmented max", max=ga["max"], last=int(f["g_augmented_last_over"].max())),
            "rounds to cluster (median)": _rounds(f, "rounds_to_cluster"),
            "rounds to ||grad_w||^2 <= tol (median)": _rounds(f, "rounds_to_tol"),
            "verdict": verdict})
    return pd.DataFrame(rows)


def _constants_text(meas, p):
    parts, seen = [], set()
    for s in meas.values():
        if s["rho"] in seen:
            continue
        seen.add(s["rho"])
        f = s["first"]
        parts.append(WORDS.text("constants", rho=s["rho"], alpha=_median(f, "alpha"),
                                c=_median(f, "c"), T_min=int(f["T_min"].max()),
                                rho_lower=_median(f, "rho_lower"), violated=_violated(f)))
    lf = np.concatenate([s["first"]["L_f"].to_numpy() for s in meas.values()])
    return WORDS.text("region", lf_min=lf.min(), lf_max=lf.max(), local_steps=p["local_steps"],
                      lam=p["lam"], xi=p["xi"], a=p["a"], two_lam_xi=2 * p["lam"] / p["xi"],
                      constants="; ".join(parts))


def _setting_text(name, s, r0):
    f = s["first"]
    return WORDS.text("setting", setting=name, slope_w=s["slopes"][f"omega_{r0}"].fmt(3),
                      slope_v=s["slopes"]["v"].fmt(3), g_lag=s["g"]["lagrangian"]["max"],
                      g_aug=s["g"]["augmented"]["max"], to_cluster=_rounds(f, "rounds_to_cluster"),
                      to_tol=_rounds(f, "rounds_to_tol"))


def _summary(meas, dec, p):
    r0, nums = dec.numbers["reading"], dec.numbers
    ins = [n for n in meas if meas[n]["region"] == "inside"]
    out = [n for n in meas if meas[n]["region"] == "outside"]
    by = nums["by_reading"]
    return WORDS.text(
        "summary", reading=_reading_text(r0), rounds=p["rounds"], m=p["m"], k=p["k"],
        seeds=p["seeds"], region=_constants_text(meas, p), slope_window=p["slope_window"],
        slope_limit=nums["slope_limit"], g_limit=nums["g_limit"],
        inside="; ".join(_setting_text(n, meas[n], r0) for n in ins),
        outside="; ".join(_setting_text(n, meas[n], r0) for n in out),
        reach=_reach_text(meas, ins, p["rounds"]), chosen=r0, verdict=by[r0],
        other_verdict=by[next(r for r in READINGS if r != r0)])


def _reach_text(meas, ins, rounds):
    """Rounds to cluster inside the region against the smallest rho at the same participation."""
    parts = []
    for n in ins:
        s = meas[n]
        same = [b for b in meas if meas[b]["participation"] == s["participation"]]
        base = min(same, key=lambda b: meas[b]["rho"])
        here, there = (_median_rounds(meas[b]["first"], "rounds_to_cluster") for b in (n, base))
        if not np.isfinite(there):
            continue
        if np.isfinite(here):
            parts.append(WORDS.text("reach.clustered", setting=n, here=here, ratio=here / there,
                                    there=there, base=base))
        else:
            parts.append(WORDS.text("reach.not clustered", setting=n, rounds=rounds, base=base,
                                    there=there))
    return WORDS.text("reach", parts="; ".join(parts)) if parts else ""


def _scope(meas, dec):
    by, r0 = dec.numbers["by_reading"], dec.numbers["reading"]
    other = next(r for r in READINGS if r != r0)
    if by[r0] == by[other]:
        return ""
    fails = sorted({WORDS.text("scope.fail", measure=m_, setting=n) for n in dec.numbers["inside"]
                    for m_, v in dec.numbers["rules"][n][other].items() if v != HOLDS})
    return WORDS.text("scope", verdict=by[r0], reading=_reading_text(r0), other_verdict=by[other],
                      other_reading=_reading_text(other), fails=", ".join(fails))


def _caveats(meas, dec, p):
    lag_max = max(s["g"]["lagrangian"]["max"] for s in meas.values())
    aug_txt = ", ".join(WORDS.text("caveats.augmented ratio", setting=n,
                                   ratio=s["g"]["augmented"]["max"],
                                   K=s["g"]["augmented"]["K_worst"]) for n, s in meas.items())
    firsts = [s["first"]["rounds_to_tol"].to_numpy(dtype=float) for s in meas.values()]
    n_tol = int(sum(np.isfinite(f).sum() for f in firsts))
    return WORDS.items("caveats", reading=_reading_text(dec.numbers["reading"]), lag_max=lag_max,
                       aug_ratios=aug_txt, tol=p["tol"], rounds=p["rounds"], n_tol=n_tol,
                       n_runs=sum(f.size for f in firsts))


# ------------------------------------------------------------------------------ figure


def _curves(ax, table, col, ylabel, title):
    colours = {}
    for name, ts in table.groupby("setting", sort=False):
        med = ts.groupby("K")[col].median()
        rho = float(ts["rho"].iloc[0])
        part = float(ts["participation"].iloc[0])
        colour = colours.setdefault(rho, f"C{len(colours)}")
        ax.loglog(med.index, np.maximum(med.to_numpy(), 1e-12), "-" if part == 1.0 else "--",
                  color=colour, lw=1.2,
                  label=f"{name} ({ts['region'].iloc[0]})")
    ax.set_xlabel("K (rounds)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    r0 = params["params"]["reading"]
    fig = Figure(figsize=(11, 8.5))
    axes = fig.subplots(2, 2)
    for ax, col, lab in ((axes[0, 0], f"mean_omega_{r0}", "(1/K) sum ||grad_w L_0||^2"),
                         (axes[0, 1], "mean_v", "(1/K) sum ||grad_v L_0||^2")):
        _curves(ax, table, col, lab, f"running mean, median over seeds (L_0: {r0})")
        K = np.array([1.0, float(table["K"].max())])
        top = float(table.loc[table["K"] == table["K"].max(), col].median())
        ax.loglog(K, top * K[-1] / K, "k:", lw=1, label="1/K reference")
        ax.legend(fontsize=6)
    for ax, r in ((axes[1, 0], "lagrangian"), (axes[1, 1], "augmented")):
        _curves(ax, table, f"g_{r}", "||G||^2 / bound (floored at 1e-12)",
                f"||G^k||^2 against k, L_0 {r}")
        ax.axhline(1.0, color="k", lw=1, label="bound m^2 lam^2 xi^2/(lam+xi)^2")
        ax.set_xlabel("k (round)")
        ax.legend(fontsize=6)
    fig.suptitle(f"FPTH1 (FPFC Theorem 1): {verdict.verdict}", fontsize=10)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="FPTH1", order=320, paper="FPFC", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
