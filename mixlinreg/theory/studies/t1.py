"""Study T1: Theorem 1's one-step contraction by 1/2, over a sweep of the step size.

Resampled IFCA (:func:`mixlinreg.ifca`, ``resample=True``, gradient averaging, squared loss,
float64) on the linear model of Section 5.1 with ``k = 2`` clusters at distance ``Delta``
(:func:`~mixlinreg.theory.linear.simplex_centers`), from ``alpha0``-close starts
(:func:`mixlinreg.init_close`), with step ``gamma = gamma_p / p`` for every ``gamma_p`` of a grid
(``p = min_j p_j``). Cluster ``j``'s effective step is ``g_j = gamma p_j``; a correctly clustered
step contracts its error by the population factor ``|1 - 2 g_j|`` plus an exact finite-sample
excess (:func:`~mixlinreg.theory.linear.one_step_factor`).

**The region.** For each configuration and step size, the transient factor ``e_{t+1}/e_t`` of each
cluster (steps with every machine correctly clustered, ``e_t >= k_noise sigma sqrt(d/N_j)`` and
every error below ``Delta/2``; a bootstrap interval over data sets) is read against 1/2 with
:func:`~mixlinreg.theory.linear.t1_verdict` (1/2 plus the exact finite-sample allowance
:func:`~mixlinreg.theory.linear.t1_allowance`, plus a margin). A step size is in the *measured
region* when both clusters contract by at most that (the rule: :func:`decide`, pure). The
population prediction: the worst-cluster factor ``max_j |1 - 2 gamma p_j|`` is at most 1/2 for
``gamma p`` in ``[1/4, 3 p / (4 p_max)]``, an interval that is empty once ``p_max > 3 p``; its
best value over ``gamma`` (at ``gamma = 1/(p_min + p_max)``) is ``(r - 1)/(r + 1)`` with
``r = p_max / p_min``.

**The misclassification term.** Separate starts (equal clusters, few rows per machine, noisy
data, both models at distance ``(1/2 - alpha0) Delta``) misclassify machines at ``t = 0``; the
first step is split exactly as in the proof (Appendix A of the long version) into the part of
the correctly clustered machines (``T_1``) and the pull of the misclassified ones (``T_2``), and
the fraction misclassified is compared with Lemma 1's exact probability
(:func:`mixlinreg.theory.lemma1.misclassification_probability`).

Config: ``mixlinreg/configs/studies/T1.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...config import Spec
from ...geometry import PLACEMENTS, placed_start  # noqa: F401 (placed_start: re-exported)
from ...stats import Fit, bootstrap
from ..study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, combine
from ..linear import (cluster_labels, linear_data, one_step_factor, simplex_centers,
                      t1_allowance, t1_verdict)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: t1.md beside this module
WORDS = words(__file__)

K = 2
SCOPES = ("equal sizes", "p_max <= 3p", "p_max > 3p")
OK = (HOLDS, CAVEAT)

SCHEMA = {
    "params": {
        "delta": Spec("float", low=0, open="low"), "seeds": Spec("int", low=2),
        "T": Spec("int", low=2), "m": Spec("list[int]", low=4), "n_prime": Spec("list[int]", low=1),
        "d": Spec("list[int]", low=2), "sigma": Spec("list[float]", low=0),
        "p_small": Spec("list[float]", low=0, high=0.5, open="low"),
        "gamma_p": Spec("list[float]", low=0, open="low"), "gamma_p_best": Spec("bool"),
        "alpha0s": Spec("list[float]", low=0, high=0.5, open="both"),
        "n_boot": Spec("int", low=100),
        "mis_m": Spec("int", low=4), "mis_d": Spec("int", low=2), "mis_sigma": Spec("float", low=0),
        "mis_n_prime": Spec("list[int]", low=1),
        "mis_alpha0": Spec("float", low=0, high=0.5, open="both"),
        "mis_placements": Spec("list[str]"), "mis_gamma_p": Spec("list[float]", low=0, open="low"),
        "mis_runs": Spec("int", low=1), "mis_seeds": Spec("int", low=2),
    },
    "margins": {
        "margin": Spec("float", low=0), "margin_neighbours": Spec("list[float]", low=0),
        "k_noise": Spec("float", low=0, open="low"),
        "k_noise_neighbours": Spec("list[float]", low=0, open="low"),
    },
}


# ------------------------------------------------------------------------------ configurations


def _configs(p):
    keys = ("m", "n_prime", "d", "sigma", "p_small")
    lens = {key: len(p[key]) for key in keys}
    if len(set(lens.values())) != 1:
        raise ValueError(f"study T1: params.{', params.'.join(keys)} must have the same length, "
                         f"got {lens}")
    for ps in p["mis_placements"]:
        if ps not in PLACEMENTS:
            raise ValueError(f"study T1: params.mis_placements must be among {list(PLACEMENTS)}, "
                             f"got {ps!r}")
    out = {}
    for m, npr, d, sigma, ps in zip(*(p[key] for key in keys)):
        if abs(ps * m - round(ps * m)) > 1e-9:
            raise ValueError(f"study T1: params.p_small times params.m must be an integer, got "
                             f"{ps} x {m}")
        kind = "eq" if ps == 0.5 else f"uneq{round(100 * ps)}"
        name = f"{kind}_m{m}_n{npr}_d{d}_s{sigma:g}"
        if name in out:
            raise ValueError(f"study T1: configuration {name} is listed twice")
        out[name] = {"m": m, "n_prime": npr, "d": d, "sigma": sigma, "sizes": (ps, 1.0 - ps)}
    return out


def _gammas(p, sizes):
    """The ``gamma p`` of one configuration: the grid, and its best step if asked."""
    g = set(round(v, 12) for v in p["gamma_p"])
    if p["gamma_p_best"]:
        g.add(round(min(sizes) / (min(sizes) + max(sizes)), 12))
    return sorted(g)


def _scope(sizes):
    r = max(sizes) / min(sizes)
    return SCOPES[0] if r == 1 else SCOPES[1] if r <= 3 + 1e-12 else SCOPES[2]


def predicted_region(sizes):
    """``(lo, hi)`` of ``gamma p`` where ``max_j |1 - 2 gamma p_j| <= 1/2`` (empty if lo > hi).

    >>> predicted_region((0.5, 0.5))
    (0.25, 0.75)
    >>> lo, hi = predicted_region((0.2, 0.8)); hi < lo
    True
    """
    p, pmax = min(sizes), max(sizes)
    return 0.25, 0.75 * p / pmax


def population_worst(gamma_p, sizes):
    """Worst-cluster population factor ``max_j |1 - 2 gamma p_j|`` at ``gamma = gamma_p / p``."""
    p = min(sizes)
    return max(abs(1.0 - 2.0 * gamma_p * pj / p) for pj in sizes)


def units(params):
    p = params["params"]
    out = [(f"{name}_seed{s}", {"part": "sweep", "config": name, "seed": s})
           for name in _configs(p) for s in range(p["seeds"])]
    out += [(f"mis_n{n}_seed{s}", {"part": "misclass", "n_prime": n, "seed": s})
            for n in p["mis_n_prime"] for s in range(p["mis_seeds"])]
    return out


# ------------------------------------------------------------------------------ units


def compute(spec, params, rng, shared):
    if spec["part"] == "sweep":
        return _sweep_unit(spec, params["params"], rng)
    return _misclass_unit(spec, params["params"], rng)


def _sweep_unit(spec, p, rng):
    """Errors ``(gamma_p, start, cluster, t)`` of one data set: every step size on the same data."""
    from ...data import init_close
    from ...ifca import ifca

    c = _configs(p)[spec["config"]]
    m, npr, d, sigma, sizes = c["m"], c["n_prime"], c["d"], c["sigma"], c["sizes"]
    T, pmin = p["T"], min(sizes)
    theta_star = simplex_centers(K, d, p["delta"], rng)
    labels = cluster_labels(m, sizes)
    X, y = linear_data(labels, theta_star, 2 * T * npr, sigma, rng)
    starts = [(a, direction) for a in p["alpha0s"] for direction in ("random", "adversarial")]
    init0 = np.concatenate([init_close(theta_star, a, 1, rng=rng, direction=direction)
                            for a, direction in starts])
    gps = _gammas(p, sizes)
    S = len(starts)
    init = np.tile(init0, (len(gps), 1, 1))
    lr = np.repeat(np.asarray(gps) / pmin, S)
    res = ifca(X, y, init, lr, n_iter=T, resample=True, trace=True, theta_star=theta_star,
               dtype=np.float64, n_threads=1)
    err = np.einsum("trjj->rjt", res.trace.dist)                    # (R, k, T+1)
    n_mis = (res.trace.labels != labels[None, None, :]).sum(-1).T    # (R, T+1)
    R = len(gps) * S
    shape = (R, K, T + 1)
    run = np.broadcast_to(np.arange(R)[:, None, None], shape).ravel()
    return pd.DataFrame({
        "part": "sweep", "config": spec["config"], "seed": spec["seed"], "m": m, "n_prime": npr,
        "d": d, "sigma": sigma, "p": pmin,
        "gamma_p": np.asarray(gps)[run // S],
        "alpha0": np.asarray([a for a, _ in starts])[run % S],
        "direction": np.asarray([s for _, s in starts])[run % S],
        "cluster": np.broadcast_to(np.arange(K)[None, :, None], shape).ravel(),
        "p_j": np.asarray(sizes)[np.broadcast_to(np.arange(K)[None, :, None], shape).ravel()],
        "t": np.broadcast_to(np.arange(T + 1)[None, None, :], shape).ravel(),
        "err": _digits(err.ravel()),
        "n_mis": np.broadcast_to(n_mis[:, None, :], shape).ravel(),
    })


def _digits(x, digits=7):
    """``x`` rounded to ``digits`` significant digits, as float64: a third of the table's size,
    and its CSV round trip is exact (a resumed unit reads back the very numbers computed)."""
    return np.char.mod(f"%.{digits}g", np.asarray(x, dtype=float)).astype(float)


def _misclass_unit(spec, p, rng):
    """First step from placed starts, split into the correct machines' part and the wrong ones'."""
    from ...ifca import ifca
    from ..lemma1 import misclassification_probability

    m, d, sigma, npr = p["mis_m"], p["mis_d"], p["mis_sigma"], spec["n_prime"]
    sizes = (0.5, 0.5)
    theta_star = simplex_centers(K, d, p["delta"], rng)
    labels = cluster_labels(m, sizes)
    X, y = linear_data(labels, theta_star, 2 * npr, sigma, rng)
    runs = [(gp, kind) for gp in p["mis_gamma_p"] for kind in p["mis_placements"]
            for _ in range(p["mis_runs"])]
    init = np.stack([placed_start(theta_star, p["mis_alpha0"], kind, rng) for _, kind in runs])
    lr = np.array([gp / min(sizes) for gp, _ in runs])
    res = ifca(X, y, init, lr, n_iter=1, resample=True, trace=True, theta_star=theta_star,
               dtype=np.float64, n_threads=1)
    Xg, yg = X[:, npr:], y[:, npr:]            # the gradient block of t = 0
    rows = []
    for r, (gp, kind) in enumerate(runs):
        lab0 = res.trace.labels[0, r]
        for j in range(K):
            th = init[r, j]
            own = labels == j
            S = lab0 == j
            resid = np.einsum("ind,d->in", Xg, th) - yg
            grad = (2.0 / npr) * np.einsum("ind,in->id", Xg, resid)
            T1 = th - theta_star[j] - lr[r] / m * grad[S & own].sum(axis=0)
            T2 = lr[r] / m * grad[S & ~own].sum(axis=0)
            e1 = res.theta[r, j] - theta_star[j]
            if not np.allclose(T1 - T2, e1, rtol=1e-9, atol=1e-12):
                raise RuntimeError("study T1: the step is not T_1 - T_2 (kernel and algebra "
                                   "differ)")
            other = theta_star[j] - init[r, 1 - j]
            rows.append({
                "part": "misclass", "seed": spec["seed"], "m": m, "n_prime": npr, "d": d,
                "sigma": sigma, "p": min(sizes), "alpha0": p["mis_alpha0"], "gamma_p": gp,
                "placement": kind, "run": r, "cluster": j, "p_j": sizes[j],
                "e0": float(np.linalg.norm(th - theta_star[j])), "e1": float(np.linalg.norm(e1)),
                "t1_norm": float(np.linalg.norm(T1)), "t2_norm": float(np.linalg.norm(T2)),
                "n_out": int((own & ~S).sum()), "n_in": int((S & ~own).sum()),
                "n_correct": int((S & own).sum()),
                "p_exact": float(misclassification_probability(theta_star[j] - th, other, sigma,
                                                               npr))})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ analysis


def _steps(sweep, delta, k_noise):
    """One row per step ``t -> t+1`` of the sweep: log ratio, log allowance, whether it is used."""
    key = ["config", "seed", "gamma_p", "alpha0", "direction", "cluster"]
    tab = sweep.sort_values(key + ["t"]).reset_index(drop=True)
    nxt = tab.groupby(key, sort=False)["err"].shift(-1)
    emax = tab.groupby(key[:-1] + ["t"])["err"].transform("max")
    st = tab.assign(err_next=nxt, err_max=emax).dropna(subset=["err_next"]).copy()
    N = st["p_j"] * st["m"] * st["n_prime"]
    g = st["gamma_p"] * st["p_j"] / st["p"]
    with np.errstate(divide="ignore", invalid="ignore"):
        st["log_ratio"] = np.log(st["err_next"]) - np.log(st["err"])
        st["log_allow"] = np.log(t1_allowance(g.to_numpy(), st["d"].to_numpy(), N.to_numpy(),
                                              st["sigma"].to_numpy(), st["err"].to_numpy()))
    st["used"] = ((st["n_mis"] == 0) & (st["err"] >= k_noise * st["sigma"] * np.sqrt(st["d"] / N))
                  & (st["err_max"] < 0.5 * delta) & np.isfinite(st["log_ratio"]))
    return st


def _exp_fit(values, n_boot, rng):
    f = bootstrap(np.asarray(values, dtype=float), np.mean, n_boot=n_boot, rng=rng)
    return Fit(math.exp(f.est), math.exp(f.lo), math.exp(f.hi), f.n)


def _fits(sweep, params, rng, k_noise):
    """One row per (configuration, gamma p, cluster): the transient factor and its interval."""
    p = params["params"]
    st = _steps(sweep, p["delta"], k_noise)
    used = st[st["used"]]
    groups = {k: g for k, g in used.groupby(["config", "gamma_p", "cluster"], sort=False)}
    rows = []
    for (name, gp, j), g0 in sweep.groupby(["config", "gamma_p", "cluster"], sort=True):
        first = g0.iloc[0]
        pj, pmin = float(first["p_j"]), float(first["p"])
        N = pj * first["m"] * first["n_prime"]
        geff = gp * pj / pmin
        per_seed = groups.get((name, gp, j), used.iloc[:0]).groupby("seed")[
            ["log_ratio", "log_allow"]].mean()
        row = {"config": name, "p": pmin, "p_j": pj, "gamma_p": gp, "cluster": int(j),
               "gamma_p_j": geff, "population": abs(1.0 - 2.0 * geff),
               "exact_rms": one_step_factor(geff, int(first["d"]), N),
               "seeds_used": len(per_seed), "steps": int(len(groups.get((name, gp, j), [])))}
        if len(per_seed) >= 2:
            fit = _exp_fit(per_seed["log_ratio"], p["n_boot"], rng(f"{name}_g{gp:g}_c{j}"))
            row.update(factor=fit.est, lo=fit.lo, hi=fit.hi,
                       allowance=float(np.exp(per_seed["log_allow"].mean())))
        else:
            row.update(factor=np.nan, lo=np.nan, hi=np.nan, allowance=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def _config_verdict(point_verdicts):
    """A configuration: holds if both clusters hold at some step size, not supported if at every
    step size some cluster is not supported."""
    for v in (HOLDS, CAVEAT):
        if v in point_verdicts:
            return v
    return NOT_SUPPORTED if all(v == NOT_SUPPORTED for v in point_verdicts) else INCONCLUSIVE


def measure(sweep, params, rng, k_noise):
    """The measurements: the transient factors (:func:`_fits`, steps read with ``k_noise``) and
    the scope of every configuration (equal sizes, ``p_max <= 3p``, ``p_max > 3p``)."""
    return {"factors": _fits(sweep, params, rng, k_noise),
            "scope_of": {n: _scope(c["sizes"]) for n, c in _configs(params["params"]).items()}}


def decide(measurements, params):
    """Theorem 1's rule on :func:`measure`'s ``factors`` (per configuration, gamma p, cluster:
    ``factor`` (NaN: unmeasured), ``lo``, ``hi``, ``seeds_used``, ``allowance``) and ``scope_of``.

    A cluster (:func:`~mixlinreg.theory.linear.t1_verdict`): "holds" if its interval is at most
    1/2, "holds with a caveat" if at most its limit ``max(allowance, 1/2) + margin`` (margin:
    ``params["margins"]``), "not supported" if entirely above; a step size: the weaker of its
    clusters; a configuration: its best step size (:func:`_config_verdict`); a scope, and the
    claim: the weakest. ``numbers``: 1/2, the margin, each cluster's verdict and limit (rows'
    order), the verdicts of step sizes ``{(configuration, gamma p): v}``, configurations, scopes."""
    fits, scope_of = measurements["factors"], measurements["scope_of"]
    margin = params["margins"]["margin"]
    # each cluster's interval against 1/2, then against max(allowance, 1/2) + margin
    clusters = [t1_verdict(Fit(r.factor, r.lo, r.hi, r.seeds_used), r.allowance, margin=margin)
                if np.isfinite(r.factor) else INCONCLUSIVE for r in fits.itertuples()]
    # a step size: the weaker of its clusters; a configuration: its best step size
    points = (pd.Series(clusters, index=fits.index, dtype=object)
              .groupby([fits["config"], fits["gamma_p"]], sort=True).agg(combine).to_dict())
    by_cfg = {name: _config_verdict([v for (c, _), v in points.items() if c == name])
              for name in scope_of}
    # a scope, and the claim: the weakest of their configurations
    scopes = {s: combine([by_cfg[n] for n, sn in scope_of.items() if sn == s])
              for s in dict.fromkeys(scope_of.values())}
    limits = (np.maximum(fits["allowance"], 0.5) + margin).tolist()
    return Decision(combine(list(scopes.values())), {
        "claimed": 0.5, "margin": margin, "clusters": clusters, "limits": limits,
        "points": points, "configurations": by_cfg, "scopes": scopes})


def _tables(fits, decision):
    """The record's tables: factors with each cluster's verdict; step sizes with theirs."""
    f = fits.assign(verdict=decision.numbers["clusters"])
    points = f.groupby(["config", "gamma_p"], sort=True).agg(worst=("factor", "max")).reset_index()
    points.insert(2, "verdict", [decision.numbers["points"][key]
                                 for key in zip(points["config"], points["gamma_p"])])
    return f, points


def _read(fits, configs, margin):
    """:func:`decide` at ``margin`` on ``fits``: its tables, configuration and scope verdicts."""
    d = decide({"factors": fits, "scope_of": {n: _scope(c["sizes"]) for n, c in configs.items()}},
               {"margins": {"margin": margin}})
    return (*_tables(fits, d), d.numbers["configurations"], d.numbers["scopes"], d.verdict)


def _by_scope(d):
    """A decision's scopes with their verdicts, ``"equal sizes: holds; ..."``."""
    return "; ".join(WORDS.text("scope verdict", scope=s, verdict=v)
                     for s, v in d.numbers["scopes"].items())


def _scoped(d):
    """A decision's verdict, with its scopes' verdicts."""
    return WORDS.text("scoped", verdict=d.verdict, scopes=_by_scope(d))


def _region_text(gps):
    if not gps:
        return WORDS.text("measured.none")
    return (WORDS.text("measured.range", lo=min(gps), hi=max(gps), n=len(gps)) if len(gps) > 1
            else WORDS.text("measured.point", gamma_p=gps[0]))


def _config_rows(f, points, by_cfg, configs):
    rows, agree, total, mismatch = [], 0, 0, []
    for name, c in configs.items():
        sizes = c["sizes"]
        r = max(sizes) / min(sizes)
        lo, hi = predicted_region(sizes)
        pts = points[points["config"] == name]
        ok = pts.loc[pts["verdict"].isin(OK), "gamma_p"].tolist()
        for gp, v in zip(pts["gamma_p"], pts["verdict"]):
            pop = population_worst(gp, sizes)
            if abs(pop - 0.5) < 1e-9 or v == INCONCLUSIVE:
                continue  # on the boundary the finite-sample allowance decides
            total += 1
            if (pop < 0.5) == (v in OK):
                agree += 1
            else:
                mismatch.append(WORDS.text("mismatch", config=name, gamma_p=gp))
        fc = f[f["config"] == name]
        best_gp = float(pts.loc[pts["worst"].idxmin(), "gamma_p"]) if pts["worst"].notna().any() \
            else np.nan
        at = fc[fc["gamma_p"] == best_gp]
        w = at.loc[at["factor"].idxmax()] if len(at) else None
        rows.append({
            "configuration": WORDS.text("configuration", config=name, p1=sizes[0], p2=sizes[1]),
            "p_max/p": round(r, 3),
            "gamma p region, predicted": WORDS.text(
                "predicted.interval" if hi > lo + 1e-12 else
                "predicted.boundary" if abs(hi - lo) < 1e-12 else "predicted.empty", lo=lo, hi=hi),
            "gamma p region, measured": _region_text(ok),
            "best gamma p": best_gp,
            "worst-cluster factor there [95% CI]": (Fit(w.factor, w.lo, w.hi, w.seeds_used).fmt(4)
                                                    if w is not None else WORDS.text("no factor")),
            "population (r-1)/(r+1)": round((r - 1) / (r + 1), 4),
            "verdict": by_cfg[name]})
    return pd.DataFrame(rows), agree, total, mismatch


def _misclass(mis, params, rng):
    """First-step summary per (n', placement, gamma p) of the misclassified starts."""
    p = params["params"]
    rows = []
    for (npr, kind, gp), g in mis.groupby(["n_prime", "placement", "gamma_p"], sort=True):
        m, d, sigma, pj = (float(g[c].iloc[0]) for c in ("m", "d", "sigma", "p_j"))
        N = pj * m * npr
        per_seed = np.log(g["e1"] / g["e0"]).groupby(g["seed"]).mean()
        fit = _exp_fit(per_seed, p["n_boot"], rng(f"mis_n{npr}_{kind}_g{gp:g}"))
        e0 = float(g["e0"].iloc[0])
        correct = float(t1_allowance(gp, d, N, sigma, e0)) - 0.5 + abs(1.0 - 2.0 * gp)
        with_in = g[g["n_in"] > 0]
        gamma = gp / float(g["p"].iloc[0])
        c5 = (with_in["t2_norm"] / (gamma / m * with_in["n_in"] * max(1.0, d / npr))).max() \
            if len(with_in) else np.nan
        rho = p["delta"] ** 2 / sigma**2
        rows.append({
            "n_prime": int(npr), "placement": kind, "gamma_p": gp, "m": int(m), "d": int(d),
            "sigma": sigma, "alpha0": float(g["alpha0"].iloc[0]), "e0": e0,
            "mis_measured": float(g["n_out"].sum() / (pj * m * len(g))),
            "mis_exact": float(g["p_exact"].mean()),
            "factor": fit.est, "lo": fit.lo, "hi": fit.hi, "seeds": fit.n,
            "correct_step_rms": correct,
            "t1_over_e0": float(np.exp(np.log(g["t1_norm"] / g["e0"]).mean())),
            "t2_over_e0": float((g["t2_norm"] / g["e0"]).mean()),
            "frac_steps_above_half": float((g["e1"] / g["e0"] > 0.5).mean()),
            "excess_max": float((g["e1"] - 0.5 * g["e0"]).max()),
            "exp_shape": math.exp(-(g["alpha0"].iloc[0] * rho / (rho + 1)) ** 2 * npr),
            "noise_shape": sigma / pj * math.sqrt(d / (m * npr)),
            "c5_implied": c5})
    return pd.DataFrame(rows)


def _list(values):
    return ", ".join(f"{v:g}" for v in values) or WORDS.text("list.none")


def _scope_sentence(name, configs, cfg_table, by_cfg):
    names = [n for n, c in configs.items() if _scope(c["sizes"]) == name]
    rows = cfg_table[cfg_table["configuration"].str.split(" ").str[0].isin(names)]
    parts = [WORDS.text("scope configuration", configuration=r["configuration"],
                        measured=r["gamma p region, measured"],
                        predicted=r["gamma p region, predicted"], best_gamma_p=r["best gamma p"],
                        factor=r["worst-cluster factor there [95% CI]"],
                        population=r["population (r-1)/(r+1)"], verdict=by_cfg[n])
             for n, (_, r) in zip(names, rows.iterrows())]
    return "; ".join(parts)


def _universal(points, configs, scope_names):
    """Grid points in the measured region of every configuration of the given scopes."""
    sets = [set(points.loc[(points["config"] == n) & points["verdict"].isin(OK), "gamma_p"])
            for n, c in configs.items() if _scope(c["sizes"]) in scope_names]
    return sorted(set.intersection(*sets)) if sets else []


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    configs = _configs(p)
    sweep = table[table["part"] == "sweep"]
    mis = table[table["part"] == "misclass"]
    measured = measure(sweep, params, rng, mg["k_noise"])
    decision = decide(measured, params)
    f, points = _tables(measured["factors"], decision)
    cfg = _config_rows(f, points, decision.numbers["configurations"], configs)
    ms = _misclass(mis, params, rng)

    def verdict_at(q, key):  # k_noise changes the measurement; the margin only the decision
        again = (measure(sweep, params, rng, q["margins"]["k_noise"]) if key == "k_noise"
                 else measured)
        return _scoped(decide(again, q))

    sens = sensitivity_lines(WORDS, params, verdict_at)
    caveats = _caveats(p, mg, configs, ms, _rank_corr(mis))
    tables = {"_factors.csv": f, "_points.csv": points}
    if len(ms):
        tables["_misclass.csv"] = ms
    numbers = pd.DataFrame(
        [{"what": WORDS.text("numbers.region"),
          "configuration": r["configuration"], "gamma p": r["best gamma p"],
          "factor [95% CI]": r["worst-cluster factor there [95% CI]"],
          "reference": WORDS.text("numbers.region reference",
                                  population=r["population (r-1)/(r+1)"]),
          "detail": WORDS.text("numbers.region detail", predicted=r["gamma p region, predicted"],
                               measured=r["gamma p region, measured"]),
          "verdict": r["verdict"]} for _, r in cfg[0].iterrows()]
        + [{"what": WORDS.text("numbers.first step"),
            "configuration": WORDS.text("numbers.first step configuration", n_prime=r.n_prime,
                                        placement=r.placement, m=r.m, d=r.d, sigma=r.sigma,
                                        alpha0=r.alpha0),
            "gamma p": r.gamma_p, "factor [95% CI]": Fit(r.factor, r.lo, r.hi, r.seeds).fmt(4),
            "reference": WORDS.text("numbers.first step reference", correct=r.correct_step_rms),
            "detail": WORDS.text("numbers.first step detail", mis=r.mis_measured,
                                 exact=r.mis_exact, t2=r.t2_over_e0),
            "verdict": "info"} for r in ms.itertuples()])
    scope = _by_scope(decision)
    return Verdict(decision.verdict, numbers, _summary(p, mg, configs, f, points, decision, cfg,
                                                       ms),
                   caveats=caveats, sensitivity=sens, tables=tables,
                   scope=scope if len(set(decision.numbers["scopes"].values())) > 1 else "")


def _summary(p, mg, configs, f, points, decision, cfg, ms):
    cfg_table, agree, total, mismatch = cfg
    by_cfg, scopes = decision.numbers["configurations"], decision.numbers["scopes"]
    eq_names = [n for n, c in configs.items() if _scope(c["sizes"]) == SCOPES[0]]
    at1 = f[(f["gamma_p"] == 1.0) & f["config"].isin(eq_names)]
    worst1 = (WORDS.text("at one", lo=at1["factor"].min(), hi=at1["factor"].max())
              if len(at1) and at1["factor"].notna().any() else WORDS.text("at one.not measured"))
    uni = _universal(points, configs, SCOPES[:2])
    uni_eq = _universal(points, configs, SCOPES[:1])
    out = [
        WORDS.text("summary.setup", delta=p["delta"], seeds=p["seeds"],
                   gamma_p=_list(p["gamma_p"]), margin=mg["margin"],
                   best_step=" " + WORDS.text("best step") if p["gamma_p_best"] else ""),
        WORDS.text("summary.by scope", scopes=_by_scope(decision)),
    ]
    for s in SCOPES:
        if s in scopes:
            out.append(WORDS.text("summary.scope", title=WORDS.text(f"scope title.{s}"),
                                  configurations=_scope_sentence(s, configs, cfg_table, by_cfg)))
    out.append(WORDS.text("summary.agree, not at" if mismatch else "summary.agree", agree=agree,
                          total=total, mismatch=", ".join(mismatch)))
    out.append(WORDS.text("summary.one constant", equal=_list(uni_eq), unequal=_list(uni)))
    out.append(WORDS.text("summary.proof", at_one=worst1))
    if len(ms):
        hi = ms.loc[ms["mis_measured"].idxmax()]
        out.append(WORDS.text(
            "summary.misclassifying",
            gamma_p=", ".join(f"{v:g}" for v in sorted(ms["gamma_p"].unique())),
            mis_min=ms["mis_measured"].min(), mis_max=ms["mis_measured"].max(),
            exact_min=ms["mis_exact"].min(), exact_max=ms["mis_exact"].max(),
            n_prime=hi["n_prime"], placement=hi["placement"],
            factor=Fit(hi["factor"], hi["lo"], hi["hi"], int(hi["seeds"])).fmt(3),
            correct=hi["correct_step_rms"], t2=hi["t2_over_e0"],
            above_pct=100 * ms["frac_steps_above_half"].max()))
    return " ".join(out)


def _rank_corr(mis):
    """Rank correlations of the share of wrong machines in a set with ||T_2||/e_0 and e_1/e_0."""
    if len(mis) < 3 or mis["n_in"].nunique() < 2:
        return np.nan, np.nan
    from scipy.stats import spearmanr

    frac = mis["n_in"] / (mis["p_j"] * mis["m"])
    return (float(spearmanr(frac, mis["t2_norm"] / mis["e0"]).statistic),
            float(spearmanr(frac, mis["e1"] / mis["e0"]).statistic))


def _caveats(p, mg, configs, ms, corr):
    out = WORDS.items("caveats", margin=mg["margin"], k_noise=mg["k_noise"],
                      alpha0s=p["alpha0s"])
    bad = [n for n, c in configs.items() if _scope(c["sizes"]) == SCOPES[2]]
    if bad:
        out.append(WORDS.text("caveat.p_max > 3p", configurations="; ".join(
            WORDS.text("assumption 2", config=n, p=min(c["sizes"]),
                       log_m=math.log(c["m"]) / c["m"],
                       pmn_d=min(c["sizes"]) * c["m"] * c["n_prime"] / c["d"])
            for n, c in configs.items() if n in bad)))
    out.append(WORDS.text("caveat.proof"))
    if len(ms):
        rho = p["delta"] ** 2 / p["mis_sigma"] ** 2
        out.append(WORDS.text(
            "caveat.misclassification",
            n_needed=((rho + 1) / (p["mis_alpha0"] * rho)) ** 2 * math.log(p["mis_m"]), rho=rho,
            alpha0=p["mis_alpha0"], m=p["mis_m"], exp_min=ms["exp_shape"].min(),
            noise_min=ms["noise_shape"].min(), noise_max=ms["noise_shape"].max(),
            excess_max=ms["excess_max"].max(),
            fractions=", ".join(WORDS.text("misclassified fraction", mis=r.mis_measured,
                                           exact=r.mis_exact) for r in ms.itertuples()),
            corr_t2=corr[0], corr_e1=corr[1], c5_max=ms["c5_implied"].max()))
    return out


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    configs = _configs(params["params"])
    f = verdict.tables["_factors.csv"]
    fig = Figure(figsize=(16, 4.8))
    axes = fig.subplots(1, 3)
    grid = np.linspace(min(f["gamma_p"]), max(f["gamma_p"]), 200)
    for ax, scope_set, title in ((axes[0], SCOPES[:1], "equal sizes"),
                                 (axes[1], SCOPES[1:], "unequal sizes")):
        names = [n for n, c in configs.items() if _scope(c["sizes"]) in scope_set]
        for i, n in enumerate(names):
            sizes = configs[n]["sizes"]
            fc = f[(f["config"] == n) & f["factor"].notna()]
            w = fc.loc[fc.groupby("gamma_p")["factor"].idxmax()]
            ax.errorbar(w["gamma_p"] * (1 + 0.01 * i), w["factor"],
                        yerr=[w["factor"] - w["lo"], w["hi"] - w["factor"]], fmt="o", ms=3,
                        color=f"C{i}", label=f"{n} (p_max/p = {max(sizes) / min(sizes):.3g})")
            ax.plot(grid, [population_worst(g, sizes) for g in grid], "--", color=f"C{i}", lw=0.8)
            lo, hi = predicted_region(sizes)
            if hi > lo:
                ax.axvspan(lo, hi, color=f"C{i}", alpha=0.08)
        ax.axhline(0.5, color="k", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="gamma p", ylim=(0.05, 10),
               ylabel="worst-cluster factor e_{t+1}/e_t",
               title=f"{title}: measured (95% CI), population max_j |1 - 2 gamma p_j| (dashed)")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=6)
    ax = axes[2]
    mis = table[table["part"] == "misclass"]
    if len(mis):
        for i, (npr, g) in enumerate(mis.groupby("n_prime")):
            ax.scatter(g["n_in"] / (g["p_j"] * g["m"]), g["e1"] / g["e0"], s=6, alpha=0.5,
                       color=f"C{i}", label=f"n' = {npr}")
        ms = verdict.tables["_misclass.csv"]
        for i, (npr, g) in enumerate(ms.groupby("n_prime")):
            ax.axhline(g["correct_step_rms"].iloc[0], color=f"C{i}", ls=":", lw=1)
        ax.axhline(0.5, color="k", lw=1, label="1/2")
        ax.set(xlabel="fraction of wrong machines in the cluster's set at t = 0",
               ylabel="first-step factor e_1/e_0",
               title="misclassifying starts (dotted: a correctly clustered step)")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="T1", order=20, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
