"""Study C1: Corollary 1's error floor ``(sigma/p) sqrt(d/(m n'))`` and its iteration count.

One factor at a time around a base point (``sigma = 0.1, d = 20, m = 96, n' = 20, k = 2`` in the
paper preset, ``Delta = 1``, so ``rho = 100`` at the base), ``p = 1/k`` with *equal clusters*,
step ``gamma = gamma_p / p`` (``gamma_p = 1/4``), ``alpha0``-close random starts
(:func:`mixlinreg.init_close`) and resampled IFCA (:func:`mixlinreg.ifca`, ``resample=True``,
squared loss, float64) for ``T`` iterations (``n = 2 T n'``). Each (factor, level, seed) is one
data set (a unit).

The plateau ``eps`` is the RMS error over the clusters and the last ``window`` iterates; its
log-log slopes (stratified bootstrap over seeds) are compared with the exponents
``(1, 1/2, -1/2, -1/2, -1)`` of the bound's first term
(:data:`mixlinreg.theory.bounds.COROLLARY1_EXPONENTS`; rules
:func:`~mixlinreg.theory.linear.exponent_verdict` and, for ``p``,
:func:`~mixlinreg.theory.linear.p_exponent_verdict`) and with the known-cluster least squares on
all ``n`` rows (:func:`~mixlinreg.theory.linear.oracle_theta`). The second term
``exp(-c8 (rho/(rho+1))^2 n')`` is the misclassification term: the number of misclassified
machines over the plateau window is reported (zero means that term contributes nothing). The
iterations needed to reach ``iter_target x eps`` (max over clusters) are regressed on
``ln(Delta/eps)``.

The analysis is in three steps: :func:`measure` (the slopes, with bootstrap intervals),
:func:`decide` (pure: the slopes held to the exponent margin, the verdict and its deciding numbers)
and :func:`analyze` (the description; its sensitivity lines call :func:`decide` at the neighbouring
margins, re-measuring the iteration slope at each neighbouring iteration target).

Config: ``mixlinreg/configs/studies/C1.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import Fit, bootstrap, linear_slope, loglog_slope, verdict_at_most, verdict_equal
from .. import bounds
from ..study import combine
from ..linear import (cluster_labels, exponent_verdict, linear_data, oracle_rms, oracle_theta,
                      p_exponent_verdict, simplex_centers, stationary_rms)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: c1.md beside this module
WORDS = words(__file__)

FACTORS = ("sigma", "d", "m", "n_prime", "p")
_LEVELS = {"sigma": "sigma_levels", "d": "d_levels", "m": "m_levels",
           "n_prime": "n_prime_levels", "p": "k_levels"}

SCHEMA = {
    "params": {
        "delta": Spec("float", low=0, open="low"),
        "sigma": Spec("float", low=0, open="low"), "d": Spec("int", low=1),
        "m": Spec("int", low=4), "n_prime": Spec("int", low=1), "k": Spec("int", low=2),
        "sigma_levels": Spec("list[float]", low=0, open="low"), "d_levels": Spec("list[int]", low=1),
        "m_levels": Spec("list[int]", low=4), "n_prime_levels": Spec("list[int]", low=1),
        "k_levels": Spec("list[int]", low=2),
        "seeds": Spec("int", low=2), "T": Spec("int", low=2), "window": Spec("int", low=1),
        "runs": Spec("int", low=1), "alpha0": Spec("float", low=0, high=0.5, open="both"),
        "gamma_p": Spec("float", low=0, open="low"), "n_boot": Spec("int", low=100),
    },
    "margins": {
        "exponent_margin": Spec("float", low=0),
        "exponent_margin_neighbours": Spec("list[float]", low=0),
        "iter_target": Spec("float", low=1, open="low"),
        "iter_target_neighbours": Spec("list[float]", low=1, open="low"),
    },
}


# ------------------------------------------------------------------------------ units


def _point(p, factor, level):
    """The base point with ``factor`` set to ``level`` (``p``: the number of clusters ``k``)."""
    pt = {key: p[key] for key in ("sigma", "d", "m", "n_prime", "k")}
    pt["k" if factor == "p" else factor] = level
    return pt


def _level_name(factor, level):
    return f"k{level}" if factor == "p" else f"{level:g}"


def units(params):
    p = params["params"]
    if p["window"] > p["T"]:
        raise ValueError(f"study C1: params.window must be at most params.T = {p['T']}, got "
                         f"{p['window']}")
    out = []
    for factor in FACTORS:
        levels = p[_LEVELS[factor]]
        if len(set(levels)) < 2:
            raise ValueError(f"study C1: params.{_LEVELS[factor]} needs at least 2 distinct "
                             f"levels for a slope, got {levels}")
        for level in levels:
            pt = _point(p, factor, level)
            if pt["m"] % pt["k"]:
                raise ValueError(f"study C1: equal clusters need m divisible by k, got m = "
                                 f"{pt['m']}, k = {pt['k']} (params.{_LEVELS[factor]})")
            for s in range(p["seeds"]):
                out.append((f"{factor}_{_level_name(factor, level)}_seed{s}",
                            {"factor": factor, "level": level, "seed": s}))
    return out


def compute(spec, params, rng, shared):
    """Plateau, oracle error and the max-over-clusters error trace of one data set."""
    from ...data import init_close
    from ...ifca import ifca

    p = params["params"]
    factor, level = spec["factor"], spec["level"]
    pt = _point(p, factor, level)
    k, d, m, npr, sigma = pt["k"], pt["d"], pt["m"], pt["n_prime"], pt["sigma"]
    T, window, n_runs, delta = p["T"], p["window"], p["runs"], p["delta"]
    pk = 1.0 / k
    theta_star = simplex_centers(k, d, delta, rng)
    labels = cluster_labels(m, [pk] * k)
    X, y = linear_data(labels, theta_star, 2 * T * npr, sigma, rng)
    init = init_close(theta_star, p["alpha0"], n_runs, rng=rng, direction="random")
    res = ifca(X, y, init, p["gamma_p"] / pk, n_iter=T, resample=True, trace=True,
               theta_star=theta_star, dtype=np.float64, n_threads=1)
    err = np.einsum("trjj->trj", res.trace.dist)                  # (T+1, R, k)
    n_mis = (res.trace.labels != labels[None, None, :]).sum(-1)    # (T+1, R)
    last = err[T - window + 1:]                                    # last `window` iterates
    plateau_run = np.sqrt((last**2).mean(axis=(0, 2)))             # (R,)
    eps = float(np.sqrt((last**2).mean()))
    emax = err.max(axis=2)                                          # (T+1, R)
    orc = oracle_theta(X, y, labels, k)
    orc_rms = float(np.sqrt(((orc - theta_star) ** 2).sum(axis=1).mean()))
    N = pk * m * npr
    rows = []
    for r in range(n_runs):
        row = {"factor": factor, "level": pk if factor == "p" else float(level),
               "seed": spec["seed"], "run": r, "sigma": sigma, "d": d, "m": m, "n_prime": npr,
               "k": k, "p": pk, "n_iter": T, "plateau": float(plateau_run[r]),
               "plateau_unit": eps, "final_err_max": float(emax[-1, r]),
               "mis_window": int(n_mis[T - window + 1:T, r].sum()),
               "mis_total": int(n_mis[:T, r].sum()), "diverged": bool(res.diverged[r]),
               "oracle_rms": orc_rms, "stationary_pred": stationary_rms(p["gamma_p"], sigma, d, N),
               "oracle_pred": oracle_rms(sigma, d, 2 * T * N)}
        row.update({f"emax_{t}": float(emax[t, r]) for t in range(T + 1)})
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ analysis


def _iters_to(table, target):
    """Per run: the first iterate whose max-over-clusters error is <= ``target`` x eps (-1: none)."""
    cols = sorted((c for c in table.columns if c.startswith("emax_")), key=lambda c: int(c[5:]))
    E = table[cols].to_numpy(dtype=float)
    hit = E <= target * table["plateau_unit"].to_numpy()[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1)


def _per_unit(table, target):
    """One row per data set: its plateau, oracle error, predictions and iteration count."""
    t = table.assign(iters_to=_iters_to(table, target))
    return (t.groupby(["factor", "level", "seed"], sort=False)
            .agg(plateau=("plateau_unit", "first"), oracle=("oracle_rms", "first"),
                 stat_pred=("stationary_pred", "first"), orc_pred=("oracle_pred", "first"),
                 iters=("iters_to", "mean"), hit=("iters_to", "min"),
                 sigma=("sigma", "first"), d=("d", "first"), m=("m", "first"),
                 n_prime=("n_prime", "first"), p=("p", "first"))
            .reset_index())


def _exp_fit(values, n_boot, rng) -> Fit:
    """Bootstrap (over replicates) of a mean of logs, returned on the original scale."""
    f = bootstrap(np.asarray(values, dtype=float), np.mean, n_boot=n_boot, rng=rng)
    return Fit(math.exp(f.est), math.exp(f.lo), math.exp(f.hi), f.n)


def _slope_rule(factor, fit, margin):
    pred = bounds.COROLLARY1_EXPONENTS[factor]
    if factor == "p":
        return p_exponent_verdict(fit, pred, margin=margin)
    return exponent_verdict(fit, pred, margin=margin)


def _iteration_fit(units_df, delta, n_boot, rng):
    ok = units_df["hit"] >= 0
    x = np.log(delta / units_df.loc[ok, "plateau"].to_numpy())
    return linear_slope(x, units_df.loc[ok, "iters"].to_numpy(), n_boot=n_boot,
                        rng=rng("iterations"))


def measure(table, params, rng):
    """The measured quantities (bootstrap streams ``rng(name)``): ``units`` (one row per data set,
    iteration counts at the config's ``iter_target``), ``slopes`` and ``oracle`` (the plateau's and
    the known-cluster oracle's log-log slope per factor, as :class:`~mixlinreg.stats.Fit`) and
    ``iterations`` (the iteration count's slope per unit of ``ln(Delta/eps)``)."""
    p = params["params"]
    n_boot = p["n_boot"]
    units_df = _per_unit(table, params["margins"]["iter_target"])
    slopes, oracle = {}, {}
    for factor in FACTORS:
        u = units_df[units_df["factor"] == factor]
        slopes[factor] = loglog_slope(u["level"], u["plateau"], n_boot=n_boot,
                                      rng=rng(f"slope_{factor}"))
        oracle[factor] = loglog_slope(u["level"], u["oracle"], n_boot=n_boot,
                                      rng=rng(f"oracle_{factor}"))
    return dict(units=units_df, slopes=slopes, oracle=oracle,
                iterations=_iteration_fit(units_df, p["delta"], n_boot, rng))


_IT_BOUND = 1.0 / math.log(2.0)  # iterations per unit of ln(Delta/eps) for a factor 1/2 per step


def decide(m, params) -> Decision:
    """The verdict of C1 from the measured slopes ``m["slopes"]`` (per factor) and
    ``m["iterations"]`` (Fits) and the config's ``exponent_margin``; pure. ``numbers`` holds each
    rule's interval, the value it is held to and its verdict, and two readings reported alongside
    (not combined): the natural-log reading of the iteration count and p against the oracle."""
    margin = params["margins"]["exponent_margin"]
    slopes, it = m["slopes"], m["iterations"]
    # the plateau's exponents equal the bound's (sigma 1, d 1/2, m -1/2, n' -1/2) within margin;
    # p: no worse than the bound's -1 within margin, "holds" if also equal, caveat if clearly better
    v = {f: _slope_rule(f, slopes[f], margin) for f in FACTORS}
    # the iteration count grows by at most 1/ln 2 (+ margin) per unit of ln(Delta/eps)
    v_it = verdict_at_most(it, _IT_BOUND, margin)
    numbers = {"exponent_margin": margin}
    for f in FACTORS:
        numbers.update({f"exponent {f}": slopes[f].est, f"exponent {f} lo": slopes[f].lo,
                        f"exponent {f} hi": slopes[f].hi,
                        f"bound {f}": bounds.COROLLARY1_EXPONENTS[f], f"verdict {f}": v[f]})
    numbers.update({
        "iterations slope": it.est, "iterations slope lo": it.lo, "iterations slope hi": it.hi,
        "iterations bound": _IT_BOUND, "verdict iterations": v_it,
        "verdict iterations, natural log (slope <= 1)": verdict_at_most(it, 1.0, margin),
        "oracle exponent p": bounds.ORACLE_EXPONENTS["p"],
        "verdict p against the oracle": verdict_equal(slopes["p"], bounds.ORACLE_EXPONENTS["p"],
                                                      margin)})
    return Decision(combine([*v.values(), v_it]), numbers)


def _info_rows(m, table, p, rng):
    """The rows of the numbers table that decide nothing (IFCA against the oracle and the exact
    floor, the fitted c6), and the numbers the summary quotes."""
    units_df, n_boot = m["units"], p["n_boot"]
    ratio = units_df["plateau"] / units_df["oracle"]
    ratio_pred = units_df["stat_pred"] / units_df["orc_pred"]
    rel_fit = _exp_fit(np.log(ratio / ratio_pred).to_numpy(), n_boot, rng("oracle_ratio"))
    floor_fit = _exp_fit(np.log(units_df["plateau"] / units_df["stat_pred"]).to_numpy(), n_boot,
                         rng("floor_ratio"))
    c6 = units_df["plateau"] / bounds.statistical_term(
        sigma=units_df["sigma"], p=units_df["p"], d=units_df["d"], m=units_df["m"],
        n_prime=units_df["n_prime"])
    c6_by_p = c6.groupby(units_df["p"]).mean()
    rows = [
        {"what": WORDS.text("numbers.oracle ratio"),
         "estimate": float(ratio.mean()), "lo": float(ratio.min()), "hi": float(ratio.max()),
         "bound": float(ratio_pred.mean()), "oracle_exponent": np.nan,
         "oracle_measured": WORDS.text("numbers.oracle ratio measured", fit=rel_fit.fmt()),
         "verdict": "info"},
        {"what": WORDS.text("numbers.floor ratio"), "estimate": floor_fit.est,
         "lo": floor_fit.lo, "hi": floor_fit.hi, "bound": 1.0, "oracle_exponent": np.nan,
         "oracle_measured": "", "verdict": "info"},
        {"what": WORDS.text("numbers.c6"),
         "estimate": float(c6.mean()), "lo": float(c6.min()), "hi": float(c6.max()),
         "bound": np.nan, "oracle_exponent": np.nan,
         "oracle_measured": WORDS.text("numbers.c6 by p", by_p=", ".join(
             WORDS.text("numbers.c6 at p", p=pp, c6=cv) for pp, cv in c6_by_p.items())),
         "verdict": "info"}]
    return rows, dict(ratio=float(ratio.mean()), ratio_pred=float(ratio_pred.mean()),
                      floor_fit=floor_fit, mis_window=int(table["mis_window"].sum()),
                      mis_total=int(table["mis_total"].sum()))


def _numbers(m, d, target):
    """The deciding rows of the numbers table: the five exponents and the iteration slope."""
    n, rows = d.numbers, []
    for f in FACTORS:
        fit = m["slopes"][f]
        rows.append({"what": WORDS.text("numbers.exponent", factor=f), "estimate": fit.est,
                     "lo": fit.lo,
                     "hi": fit.hi, "bound": n[f"bound {f}"],
                     "oracle_exponent": bounds.ORACLE_EXPONENTS[f],
                     "oracle_measured": m["oracle"][f].fmt(), "verdict": n[f"verdict {f}"]})
    it = m["iterations"]
    rows.append({"what": WORDS.text("numbers.iterations", target=target),
                 "estimate": it.est, "lo": it.lo, "hi": it.hi, "bound": n["iterations bound"],
                 "oracle_exponent": np.nan,
                 "oracle_measured": WORDS.text(
                     "numbers.iterations natural log",
                     verdict=n["verdict iterations, natural log (slope <= 1)"]),
                 "verdict": n["verdict iterations"]})
    return rows


def _summary(m, d, info, p, mg):
    n, target, margin, delta = d.numbers, mg["iter_target"], mg["exponent_margin"], p["delta"]
    units_df = m["units"]
    ok = units_df["hit"] >= 0
    t_meas = units_df.loc[ok, "iters"].to_numpy()
    eps2 = target * units_df.loc[ok, "plateau"].to_numpy()
    frac2 = float(np.mean(t_meas <= 2.0 + np.log2(delta / (4.0 * eps2))))
    frac_ln = float(np.mean(t_meas <= 2.0 + np.log(delta / (4.0 * eps2))))
    fs = {f: m["slopes"][f].fmt() for f in FACTORS}
    v_by = {f: n[f"verdict {f}"] for f in FACTORS}
    k_lv, mis_window = p["k_levels"], info["mis_window"]
    return WORDS.text(
        "summary", sigma=fs["sigma"], v_sigma=v_by["sigma"], d=fs["d"], v_d=v_by["d"],
        m=fs["m"], v_m=v_by["m"], n_prime=fs["n_prime"], v_n_prime=v_by["n_prime"], p=fs["p"],
        v_p=v_by["p"], p_reading=WORDS.text(f"p reading.{v_by['p']}"),
        v_p_oracle=n["verdict p against the oracle"], margin=margin, gamma_p=p["gamma_p"],
        floor_fit=info["floor_fit"].fmt(), ratio=info["ratio"], ratio_pred=info["ratio_pred"],
        T=p["T"], target=target, iterations=m["iterations"].fmt(),
        iterations_bound=n["iterations bound"], v_iterations=n["verdict iterations"],
        pct2=100 * frac2, pct_ln=100 * frac_ln,
        v_iterations_ln=n["verdict iterations, natural log (slope <= 1)"],
        mis_window=mis_window, mis_total=info["mis_total"],
        except_few="" if mis_window == 0 else " " + WORDS.text("summary.except"),
        k_min=min(k_lv), k_max=max(k_lv))


def _caveats(m, p, mg):
    margin, target, delta, k_lv = mg["exponent_margin"], mg["iter_target"], p["delta"], p["k_levels"]
    base_N = p["m"] * p["n_prime"] / p["k"]
    d_lv = np.asarray(p["d_levels"], dtype=float)
    d_bend = abs(np.polyfit(np.log(d_lv), np.log([stationary_rms(p["gamma_p"], 1.0, int(dd),
                                                                 base_N) for dd in d_lv]),
                            1)[0] - 0.5)
    caveats = WORDS.items("caveats", k_levels=", ".join(str(v) for v in k_lv),
                          gamma_p=p["gamma_p"], rho_min=delta**2 / max(p["sigma_levels"])**2,
                          margin=margin, d_bend=d_bend)
    n_missing = int((m["units"]["hit"] < 0).sum())
    if n_missing:
        caveats.append(WORDS.text("caveats.missing", missing=n_missing, target=target))
    return caveats


def sensitivity(m, table, params, rng):
    """The sensitivity lines: :func:`decide` with the exponent margin moved, and with the
    iteration slope re-measured at each neighbouring iteration target."""
    p = params["params"]

    def verdict_at(q, key):
        if key == "iter_target":
            it = _iteration_fit(_per_unit(table, q["margins"]["iter_target"]), p["delta"],
                                p["n_boot"], rng)
            return decide({**m, "iterations": it}, q).verdict
        return decide(m, q).verdict

    return sensitivity_lines(WORDS, params, verdict_at)


def analyze(table, params, rng):
    p, mg = params["params"], params["margins"]
    m = measure(table, params, rng)
    d = decide(m, params)
    info_rows, info = _info_rows(m, table, p, rng)
    numbers = pd.DataFrame(_numbers(m, d, mg["iter_target"]) + info_rows)
    return Verdict(d.verdict, numbers, _summary(m, d, info, p, mg), caveats=_caveats(m, p, mg),
                   sensitivity=sensitivity(m, table, params, rng), tables={"_units.csv": m["units"]})


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    p = params["params"]
    delta = p["delta"]
    units_df = verdict.tables["_units.csv"]
    nb = verdict.numbers.set_index("what")

    def fit_of(what):
        r = nb.loc[what]
        return Fit(float(r["estimate"]), float(r["lo"]), float(r["hi"]), 0)

    target = params["margins"]["iter_target"]
    it_fit = fit_of(f"iterations to {target:g} eps per unit ln(Delta/eps)")
    fig = Figure(figsize=(15, 8.5))
    axes = fig.subplots(2, 3).ravel()
    names = {"sigma": "sigma", "d": "d", "m": "m", "n_prime": "n'", "p": "p = 1/k"}
    for ax, factor in zip(axes, FACTORS):
        u = units_df[units_df["factor"] == factor]
        ax.loglog(u["level"], u["plateau"], "o", color="C0", ms=3, alpha=0.5)
        ax.loglog(u["level"], u["oracle"], "s", color="C2", ms=3, alpha=0.5)
        med = u.groupby("level")[["plateau", "oracle", "stat_pred"]].median()
        ax.loglog(med.index, med["plateau"], "-", color="C0", label="IFCA plateau eps")
        ax.loglog(med.index, med["oracle"], "-", color="C2", label="oracle LS (all n rows)")
        ax.loglog(med.index, med["stat_pred"], ":", color="k",
                  label=f"exact floor (g = {p['gamma_p']:g})")
        x0 = float(np.exp(np.log(med.index.to_numpy()).mean()))
        y0 = float(np.exp(np.log(med["plateau"].to_numpy()).mean()))
        xs = np.array([med.index.min(), med.index.max()])
        e = bounds.COROLLARY1_EXPONENTS[factor]
        ax.loglog(xs, y0 * (xs / x0) ** e, "--", color="C3", label=f"bound shape x^{e:g}")
        ax.set(xlabel=names[factor], ylabel="error",
               title=f"{names[factor]}: slope {fit_of(f'exponent of eps in {factor}').fmt()}")
        ax.minorticks_off()
        ax.set_xticks(med.index.to_numpy())
        ax.set_xticklabels([f"{v:.3g}" for v in med.index])
        ax.legend(fontsize=7)
    ax = axes[5]
    ok = units_df["hit"] >= 0
    x = np.log(delta / units_df.loc[ok, "plateau"])
    ax.plot(x, units_df.loc[ok, "iters"], "o", ms=3, alpha=0.5)
    xs = np.array([x.min(), x.max()])
    b = float(units_df.loc[ok, "iters"].mean() - it_fit.est * x.mean())
    ax.plot(xs, b + it_fit.est * xs, "-", color="C0", label=f"fit: slope {it_fit.fmt()}")
    ax.plot(xs, 2 + np.log2(delta / (4 * target * np.exp(-xs))), "--", color="C3",
            label=f"2 + log2(Delta/(4*{target:g}eps))")
    ax.plot(xs, 2 + np.log(delta / (4 * target * np.exp(-xs))), ":", color="C1",
            label=f"2 + ln(Delta/(4*{target:g}eps))")
    ax.set(xlabel="ln(Delta / eps)", ylabel=f"iterations to reach {target:g} eps",
           title="iteration count")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="C1", order=30, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
