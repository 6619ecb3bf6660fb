"""Study C2: Corollary 2's final error ``O~(1/sqrt(m n) + 1/n)`` in ``m`` and ``n``.

For the l2-regularized logistic mixture and the Huber + ridge mixture with Student t noise
(settings in :data:`mixlinreg.theory.convex.LOSS_SETUPS`, equal clusters): resampled IFCA
(:func:`mixlinreg.ifca`, ``resample=True``) with step ``1/L``, started at Theorem 2's radius
(:func:`~mixlinreg.theory.convex.theorem2_radius`, a shared piece of each loss), ``T``
iterations (``n = 2 n' T``), and the known-cluster oracle (the same resampled gradient iterations
run per true cluster, ``k = 1`` on that cluster's machines, step ``p_j / L``, so that its update
equals IFCA's with correct labels). The final error ``max_j ||theta_j^(T) - theta_pop_j||`` is
measured against ``n'`` at fixed ``m`` and against ``m`` at fixed ``n'``, several data sets per
cell (a cell is a unit). The verdict (:func:`decide`, a pure function of what :func:`_fit`
measures) is :func:`~mixlinreg.theory.convex.c2_verdicts` on the log-log slopes (bootstrap over
seeds; allowance for the ``log(m n')`` factors from :func:`~mixlinreg.theory.convex.log_allowance`);
the two terms are sized by a non-negative least squares fit
(:func:`~mixlinreg.theory.convex.nnls_rate`).

Config: ``mixlinreg/configs/studies/C2.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...config import Spec
from ...ifca import ifca
from ...stats import Fit, bootstrap, loglog_slope
from .. import bounds
from ..study import CAVEAT, HOLDS, combine
from ..convex import (D, K, LOSS_SETUPS, c2_verdicts, constants_piece, draw_cluster_data,
                      init_at_distance, log_allowance, nnls_rate, theta_star_of)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: c2.md beside this module
WORDS = words(__file__)

SCHEMA = {
    "params": {
        "losses": Spec("list[str]"), "T": Spec("int", low=10), "seeds": Spec("int", low=2),
        "m0": Spec("int", low=2), "n_levels": Spec("list[int]", low=1),
        "n_fixed": Spec("list[int]", low=1), "m_levels": Spec("list[int]", low=2),
        "n_boot": Spec("int", low=100),
        "alpha0": Spec("float", low=0, high=0.5, open="both"),
        "n_samples": Spec("int", low=100), "n_line": Spec("int", low=100),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
        # the step is step_mult / L (the corollary's 1/L at the default 1; the oracle's is scaled
        # alike): the control's small step leaves the T iterations far from converged
        "step_mult": Spec("float", low=0, open="low", required=False, default=1.0),
    },
    "margins": {
        "allowance_mult": Spec("float", low=0),
        "allowance_mult_neighbours": Spec("list[float]", low=0),
        "loose_frac": Spec("float", low=0, open="low"),
        "loose_frac_neighbours": Spec("list[float]", low=0, open="low"),
    },
}


# ------------------------------------------------------------------------------ units


def _cells(p):
    cells = [(p["m0"], n) for n in p["n_levels"]]
    cells += [(m, n) for n in p["n_fixed"] for m in p["m_levels"]]
    return sorted(set(cells))


def units(params):
    p = params["params"]
    for loss in p["losses"]:
        if loss not in LOSS_SETUPS:
            raise ValueError(f"study C2: params.losses must be among {sorted(LOSS_SETUPS)}, got "
                             f"{loss!r}")
    for key in ("n_levels", "m_levels"):
        if len(set(p[key])) < 2:
            raise ValueError(f"study C2: params.{key} needs at least 2 distinct levels for a "
                             f"slope, got {p[key]}")
    return [(f"c2_{loss}_m={m}_n={n_prime}", {"loss": loss, "m": m, "n_prime": n_prime})
            for loss in p["losses"] for m, n_prime in _cells(p)]


def _ifca_kw(loss):
    s = LOSS_SETUPS[loss]
    # one numba thread: these calls are small, and under CPU contention a parallel kernel waits on
    # descheduled threads (several times slower); results do not depend on it
    return dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"], resample=True, trace=True,
                n_threads=1)


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, m, n_prime = spec["loss"], spec["m"], spec["n_prime"]
    cons = shared(f"constants_{loss}", constants_piece(loss, p)).sort_values("cluster")
    centers = cons[[f"center_{q}" for q in range(D)]].to_numpy()
    L, lam, radius, delta = (float(cons[c].iloc[0]) for c in ("L", "lam", "radius", "delta"))
    T = p["T"]
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    sizes = [m // 2, m - m // 2]
    rows = []
    for seed, gen in enumerate(rng.spawn(p["seeds"])):
        X, y, labels = draw_cluster_data(loss, ts, sizes, 2 * n_prime * T, gen, sigma=s["sigma"],
                                         df=s["df"])
        init = init_at_distance(centers, radius, 1, gen)
        res = ifca(X, y, init, p["step_mult"] / L, n_iter=T, theta_star=centers, **_ifca_kw(loss))
        dj = np.stack([res.trace.dist[:, 0, j, j] for j in range(K)], axis=1)  # (T+1, k)
        lab = res.trace.labels[:T, 0]  # (T, m)
        mis_late = float((lab[T // 2:] != labels).mean())
        # With every machine correctly assigned at every iteration IFCA's update is the oracle's
        # (same blocks, step (1/L)(1/m) = (p_j/L)(1/m_j)): reuse it (checked in the tests to
        # agree to rounding); otherwise run the oracle.
        oracle_run = bool((lab != labels).any())
        if oracle_run:
            eo = []
            for j in range(K):
                sel = labels == j
                ro = ifca(X[sel], y[sel], init[:, j:j + 1], p["step_mult"] * sizes[j] / m / L,
                         n_iter=T,
                          theta_star=centers[j:j + 1], **_ifca_kw(loss))
                eo.append(float(ro.trace.dist[T, 0, 0, 0]))
        else:
            eo = [float(v) for v in dj[T]]
        plateau = float(dj[T - 4:].mean() / dj[T - 9:T - 4].mean())
        rows.append({"loss": loss, "m": m, "n_prime": n_prime, "T": T, "seed": seed,
                     "err_ifca": float(dj[T].max()), "err_oracle": max(eo),
                     "err_ifca_mean": float(dj[T].mean()), "err_oracle_mean": float(np.mean(eo)),
                     "mis_late": mis_late, "oracle_run": oracle_run, "plateau_ratio": plateau,
                     "L": L, "lam": lam, "delta": delta})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ analysis


def _nnls_boot(cells, n_boot, gen):
    """NNLS (a, b) on cell means of ``err_ifca`` and a bootstrap over seeds within cells."""
    groups = [g["err_ifca"].to_numpy() for _, g in cells]
    keys = [k for k, _ in cells]
    m = np.array([k[0] for k in keys], dtype=float)
    n = np.array([k[1] for k in keys], dtype=float)
    a, b = nnls_rate(m, n, np.array([g.mean() for g in groups]))
    boot = np.empty((n_boot, 2))
    for i in range(n_boot):
        means = np.array([g[gen.integers(0, g.size, g.size)].mean() for g in groups])
        boot[i] = nnls_rate(m, n, means)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    return Fit(a, min(lo[0], a), max(hi[0], a), len(keys)), Fit(b, min(lo[1], b),
                                                                 max(hi[1], b), len(keys))


def _fit(table, p, rng):
    """Per loss: the slopes, the log allowance of the design, the NNLS terms and the ratios."""
    out = {}
    nb = p["n_boot"]
    for loss in dict.fromkeys(table["loss"]):
        tl = table[table["loss"] == loss]
        ns = tl[(tl["m"] == p["m0"]) & tl["n_prime"].isin(p["n_levels"])]
        r = {"n_slope": loglog_slope(ns["n_prime"], ns["err_ifca"], n_boot=nb * 2,
                                     rng=rng(f"n_slope_{loss}")),
             "n_slope_oracle": loglog_slope(ns["n_prime"], ns["err_oracle"], n_boot=nb * 2,
                                            rng=rng(f"n_slope_oracle_{loss}")),
             "m_slopes": {}, "m_slopes_oracle": {}}
        mn = [(p["m0"], n) for n in p["n_levels"]]
        for nf in p["n_fixed"]:
            ms = tl[(tl["n_prime"] == nf) & tl["m"].isin(p["m_levels"])]
            r["m_slopes"][nf] = loglog_slope(ms["m"], ms["err_ifca"], n_boot=nb * 2,
                                             rng=rng(f"m_slope_{loss}_n{nf}"))
            r["m_slopes_oracle"][nf] = loglog_slope(ms["m"], ms["err_oracle"], n_boot=nb * 2,
                                                    rng=rng(f"m_slope_oracle_{loss}_n{nf}"))
            mn += [(m, nf) for m in p["m_levels"]]
        r["log_allowance"] = log_allowance([a for a, _ in mn], [b for _, b in mn])
        cells = list(tl.groupby(["m", "n_prime"]))
        r["a"], r["b"] = _nnls_boot(cells, nb, rng(f"nnls_{loss}"))
        # IFCA over the oracle at the n' sweep's ends (ratio of means, bootstrap over seeds)
        for tag, nv in (("small", min(p["n_levels"])), ("large", max(p["n_levels"]))):
            c = ns[ns["n_prime"] == nv]
            r[f"ratio_{tag}"] = bootstrap(c[["err_ifca", "err_oracle"]].to_numpy(),
                                          lambda v: v[:, 0].mean() / v[:, 1].mean(),
                                          n_boot=nb, rng=rng(f"ratio_{loss}_n{nv}"))
            r[f"excess_{tag}"] = bootstrap((c["err_ifca"] - c["err_oracle"]).to_numpy(),
                                           n_boot=nb, rng=rng(f"excess_{loss}_n{nv}"))
            r[f"n_{tag}"] = nv
        a, b = r["a"].est, r["b"].est
        r["crossover"] = (b / a) ** 2 * p["m0"] if a > 0 else math.inf
        # the fitted b/n' term predicts this excess at the largest n'
        r["pred_excess_large"] = b / r["n_large"]
        r["plateau"] = float(tl["plateau_ratio"].median())
        # measured split: cells where the IFCA - oracle excess (misclassification) is larger than
        # the oracle's error (statistical)
        cm = tl.groupby(["m", "n_prime"])[["err_ifca", "err_oracle"]].mean()
        big = cm[(cm["err_ifca"] - cm["err_oracle"]) > cm["err_oracle"]]
        r["excess_dominates"] = [(int(a), int(b)) for a, b in big.index]
        out[loss] = r
    return out


def decide(fits, params):
    """Corollary 2's rules on the measured slopes ``fits`` (:func:`_fit`: per loss, the Fits
    ``n_slope``, ``m_slopes`` ``{n': Fit}``, ``b`` and ``excess_large``, and the numbers
    ``log_allowance`` and ``pred_excess_large``) with ``params["margins"]``' ``allowance_mult``
    and ``loose_frac``.

    Per loss, with ``allowance = allowance_mult x log_allowance``: the n'-slope's interval against
    ``-1/2 + allowance`` and each m-slope's against ``0 + allowance``
    (:func:`~mixlinreg.theory.convex.c2_verdicts`: "holds" at or below, "not supported" entirely
    above); the claim is the weakest of them. A claim that holds gets a caveat when for some loss
    the bound's 1/n' term is looser than measured: no 1/n' term is fitted (``b = 0``), or the
    IFCA - oracle excess at the largest n' stays below ``loose_frac`` x the fitted ``b/n'``
    (its interval's upper end). ``numbers``: the two margins and, per loss, the deciding values
    and the limits they were held to."""
    amult, lfrac = params["margins"]["allowance_mult"], params["margins"]["loose_frac"]
    rules, loose, per_loss = {}, {}, {}
    for loss, f in fits.items():
        allowance = amult * f["log_allowance"]
        # the slopes' intervals: n'-slope against -1/2 + allowance, each m-slope against 0 + it
        rules[loss] = c2_verdicts(f["n_slope"], list(f["m_slopes"].values()), allowance)
        # the 1/n' term looser than measured: none fitted, or the excess below a fraction of it
        loose_below = lfrac * f["pred_excess_large"]
        loose[loss] = bool(f["b"].est == 0 or f["excess_large"].hi < loose_below)
        per_loss[loss] = {"allowance": allowance, "n_slope_hi": f["n_slope"].hi,
                          "n_slope_limit": -0.5 + allowance,
                          "m_slope_hi": {nf: v.hi for nf, v in f["m_slopes"].items()},
                          "m_slope_limit": allowance, "b": f["b"].est,
                          "excess_large_hi": f["excess_large"].hi, "loose_below": loose_below}
    verdict = combine([v for r in rules.values() for v in r])
    if verdict == HOLDS and any(loose.values()):
        verdict = CAVEAT
    return Decision(verdict, {"allowance_mult": amult, "loose_frac": lfrac, "rules": rules,
                              "loose": loose, "losses": per_loss})


def _margins(allowance_mult, loose_frac):
    return {"margins": {"allowance_mult": allowance_mult, "loose_frac": loose_frac}}


def _rules(f, allowance_mult):
    """:func:`decide`'s slope verdicts of one loss ``f`` (n' first) at ``allowance_mult``."""
    return decide({"": f}, _margins(allowance_mult, 1.0)).numbers["rules"][""]


def _overall(fits, allowance_mult, loose_frac):
    """:func:`decide`'s verdict at ``allowance_mult`` and ``loose_frac``."""
    return decide(fits, _margins(allowance_mult, loose_frac)).verdict


def _fits_table(fits):
    rows = []
    for loss, f in fits.items():
        named = [("n_slope", f["n_slope"]), ("n_slope_oracle", f["n_slope_oracle"])]
        named += [(f"m_slope_n{nf}", v) for nf, v in f["m_slopes"].items()]
        named += [(f"m_slope_oracle_n{nf}", v) for nf, v in f["m_slopes_oracle"].items()]
        named += [(k, f[k]) for k in ("a", "b", "ratio_small", "ratio_large", "excess_small",
                                      "excess_large")]
        for q, v in named:
            rows.append({"loss": loss, "quantity": q, "estimate": v.est, "lo": v.lo, "hi": v.hi,
                         "n": v.n})
        for q in ("log_allowance", "crossover", "pred_excess_large", "plateau"):
            rows.append({"loss": loss, "quantity": q, "estimate": f[q], "lo": np.nan,
                         "hi": np.nan, "n": np.nan})
    return pd.DataFrame(rows)


def analyze(table, params, rng):
    p = params["params"]
    fits = _fit(table, p, rng)
    decision = decide(fits, params)
    sens = sensitivity_lines(WORDS, params, lambda q, key: decide(fits, q).verdict)
    return Verdict(decision.verdict, _numbers(fits, p, decision), _summary(fits, p, decision),
                   caveats=_caveats(table, fits, p), sensitivity=sens,
                   tables={"_fits.csv": _fits_table(fits)},
                   cells={"hard": len(fits), "total": len(fits) * (1 + len(p["n_fixed"])),
                          "rule": WORDS.text("cells rule")})


def _numbers(fits, p, decision):
    rows = []
    for loss, f in fits.items():
        allow = decision.numbers["losses"][loss]["allowance"]
        names = [f"n'-slope (m={p['m0']})"] + [f"m-slope (n'={nf})" for nf in p["n_fixed"]]
        bounds_txt = [f"<= -0.5 + {allow:.3f}"] + [f"<= 0 + {allow:.3f}"] * len(p["n_fixed"])
        fitsl = [f["n_slope"]] + list(f["m_slopes"].values())
        for name, bt, ft, v in zip(names, bounds_txt, fitsl, decision.numbers["rules"][loss]):
            rows.append({"loss": loss, "quantity": name + " IFCA", "estimate [95% CI]": ft.fmt(),
                         "rule": bt, "verdict": v})
        rows.append({"loss": loss, "quantity": f"n'-slope (m={p['m0']}) oracle",
                     "estimate [95% CI]": f["n_slope_oracle"].fmt(), "rule": "reference",
                     "verdict": ""})
        rows.append({"loss": loss, "quantity": "NNLS a, b of a/sqrt(mn') + b/n'",
                     "estimate [95% CI]": f"a = {f['a'].fmt()}, b = {f['b'].fmt()}",
                     "rule": "descriptive", "verdict": ""})
        rows.append({"loss": loss,
                     "quantity": f"IFCA/oracle at n'={f['n_small']}, n'={f['n_large']}",
                     "estimate [95% CI]": f"{f['ratio_small'].fmt()}; {f['ratio_large'].fmt()}",
                     "rule": "descriptive", "verdict": ""})
    return pd.DataFrame(rows)


def _summary(fits, p, decision):
    amult, lfrac = decision.numbers["allowance_mult"], decision.numbers["loose_frac"]
    loose = [loss for loss, is_loose in decision.numbers["loose"].items() if is_loose]
    parts_txt = []
    for loss, f in fits.items():
        ms = ", ".join(WORDS.text("m-slope", slope=f["m_slopes"][nf].fmt(2), n_fixed=nf)
                       for nf in p["n_fixed"])
        cross = (WORDS.text("crossover", crossover=f["crossover"], m0=p["m0"])
                 if np.isfinite(f["crossover"]) and f["b"].est > 0
                 else WORDS.text("crossover.none"))
        dom = (", ".join(WORDS.text("cell", m=a, n_prime=b) for a, b in f["excess_dominates"])
               or WORDS.text("cell.none"))
        parts_txt.append(WORDS.text(
            "loss", loss=loss, n_slope=f["n_slope"].fmt(2),
            n_slope_oracle=f["n_slope_oracle"].fmt(2), m_slopes=ms, a=f["a"].est, b=f["b"].est,
            crossover=cross, cells=dom,
            ratio_small=f["ratio_small"].est, n_small=f["n_small"],
            ratio_large=f["ratio_large"].est, n_large=f["n_large"]))
    allow_txt = ", ".join(WORDS.text("allowance", loss=l,
                                     allowance=decision.numbers["losses"][l]["allowance"])
                          for l in fits)
    mult_txt = "" if amult == 1 else WORDS.text("allowance multiple", mult=amult) + " "
    loose_txt = (" " + WORDS.text("summary.loose", losses=", ".join(loose), loose_frac=lfrac)
                 if loose else "")
    return WORDS.text("summary", mult=mult_txt, allowances=allow_txt, losses=". ".join(parts_txt),
                      loose=loose_txt)


def _caveats(table, fits, p):
    T = p["T"]
    losses = list(fits)
    cons = table.groupby("loss", sort=False)[["L", "lam", "delta"]].first()
    t_cor = {l: float(bounds.corollary2_iterations(L=cons.loc[l, "L"], p=0.5,
                                                    lam=cons.loc[l, "lam"],
                                                    Delta=cons.loc[l, "delta"],
                                                    eps=float(table[table["loss"] == l]
                                                              ["err_ifca"].median())))
             for l in losses}
    tcor_txt = ", ".join(WORDS.text("caveats.iterations", loss=l, T=t_cor[l]) for l in losses)
    plat_txt = ", ".join(WORDS.text("caveats.plateau", loss=l, ratio=fits[l]["plateau"])
                         for l in losses)
    return WORDS.items("caveats", T=T, iterations=tcor_txt, plateaus=plat_txt)


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params):
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    p = params["params"]
    ft = verdict.tables["_fits.csv"].set_index(["loss", "quantity"])

    def fit_of(loss, q):
        r = ft.loc[(loss, q)]
        return Fit(float(r["estimate"]), float(r["lo"]), float(r["hi"]), 0)

    losses = list(dict.fromkeys(table["loss"]))
    fig = Figure(figsize=(10.5, 4.0 * len(losses)))
    axes = fig.subplots(len(losses), 2, squeeze=False)
    for r, loss in enumerate(losses):
        tl = table[table["loss"] == loss]
        ax = axes[r, 0]
        ns = tl[(tl["m"] == p["m0"]) & tl["n_prime"].isin(p["n_levels"])]
        agg = ns.groupby("n_prime")[["err_ifca", "err_oracle"]].agg(["mean", "std", "count"])
        x = agg.index.to_numpy(dtype=float)
        for col, lab, mk in (("err_ifca", "IFCA", "o"), ("err_oracle", "oracle", "s")):
            se = agg[(col, "std")] / np.sqrt(agg[(col, "count")])
            ax.errorbar(x, agg[(col, "mean")], yerr=1.96 * se, fmt=mk + "-", ms=4, label=lab)
        xx = np.geomspace(x.min(), x.max(), 50)
        ax.loglog(xx, bounds.corollary2_rate(p["m0"], xx, a=fit_of(loss, "a").est,
                                             b=fit_of(loss, "b").est), "k--",
                  lw=0.8, label="NNLS a/sqrt(mn') + b/n'")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(p["n_levels"], [str(v) for v in p["n_levels"]])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("n'")
        ax.set_ylabel("final max_j error")
        ax.set_title(f"{loss}, m = {p['m0']}: slope {fit_of(loss, 'n_slope').fmt(2)}", fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[r, 1]
        for nf in p["n_fixed"]:
            ms = tl[(tl["n_prime"] == nf) & tl["m"].isin(p["m_levels"])]
            agg = ms.groupby("m")[["err_ifca", "err_oracle"]].mean()
            line, = ax.loglog(agg.index, agg["err_ifca"], "o-", ms=4,
                              label=f"IFCA n'={nf}: slope {fit_of(loss, f'm_slope_n{nf}').fmt(2)}")
            ax.loglog(agg.index, agg["err_oracle"], "s:", ms=3, color=line.get_color(),
                      label=f"oracle n'={nf}")
        ax.set_xticks(p["m_levels"], [str(v) for v in p["m_levels"]])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("m")
        ax.set_ylabel("final max_j error")
        ax.set_title(f"{loss}: error against m at fixed n'", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="C2", order=60, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
