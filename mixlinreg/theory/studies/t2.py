"""Study T2: Theorem 2's per-step contraction ``1 - p lambda / (8 L)`` for strongly convex losses.

For the l2-regularized logistic mixture and the Huber + ridge mixture with Student t noise
(settings in :data:`mixlinreg.theory.convex.LOSS_SETUPS`), equal and unequal clusters:
``lambda``, ``L`` on the ball of the theorem (:func:`~mixlinreg.theory.convex.theorem2_radius`, a
shared piece of each loss), resampled IFCA with step ``1/L`` from initializations at that radius,
and the per-step contraction in the transient (:func:`~mixlinreg.theory.convex.transient_mask`,
:func:`mixlinreg.stats.contraction_factor` with data sets as replicates) against
:func:`mixlinreg.theory.bounds.theorem2_factor` with ``p = min_j p_j``: :func:`measure` makes
the factors, :func:`decide` (pure: no data, no prose) the verdict. Config:
``mixlinreg/configs/studies/T2.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...ifca import ifca
from ...stats import Fit, contraction_factor, verdict_at_most
from .. import bounds
from ..study import INCONCLUSIVE, combine
from ..convex import (D, K, LOSS_SETUPS, constants_piece, draw_cluster_data, init_at_distance,
                      theta_star_of, transient_mask)
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

#: the study's prose: t2.md beside this module
WORDS = words(__file__)

SCHEMA = {
    "params": {
        "losses": Spec("list[str]"), "m": Spec("int", low=4), "T": Spec("int", low=2),
        "seeds": Spec("int", low=2), "runs": Spec("int", low=1),
        "p_small": Spec("list[float]", low=0, high=0.5, open="low"),
        "n_prime": Spec("list[int]", low=1), "alpha0": Spec("float", low=0, high=0.5, open="both"),
        "n_samples": Spec("int", low=100), "n_line": Spec("int", low=100),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
        # the step is step_mult / L (the theorem's 1/L at the default 1; the control's smaller
        # step contracts more slowly than the claimed 1 - p lambda/(8L))
        "step_mult": Spec("float", low=0, open="low", required=False, default=1.0),
    },
    "margins": {
        "floor_mult": Spec("float", low=1, open="low"),
        "floor_mult_neighbours": Spec("list[float]", low=1, open="low"),
        "margin": Spec("float", low=0), "margin_neighbours": Spec("list[float]", low=0),
    },
}


def _configs(p):
    if len(p["p_small"]) != len(p["n_prime"]):
        raise ValueError(f"study T2: params.p_small and params.n_prime must have the same length, "
                         f"got {len(p['p_small'])} and {len(p['n_prime'])}")
    return list(zip(p["p_small"], p["n_prime"]))


def units(params):
    p = params["params"]
    for loss in p["losses"]:
        if loss not in LOSS_SETUPS:
            raise ValueError(f"study T2: params.losses must be among {sorted(LOSS_SETUPS)}, got {loss!r}")
    return [(f"t2_{loss}_p={ps:g}_n={n}", {"loss": loss, "config": ci, "p_small": ps, "n_prime": n})
            for loss in p["losses"] for ci, (ps, n) in enumerate(_configs(p))]


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, n_prime = spec["loss"], spec["n_prime"]
    cons = shared(f"constants_{loss}", constants_piece(loss, p)).sort_values("cluster")
    centers = cons[[f"center_{q}" for q in range(D)]].to_numpy()
    lam, L, radius = (float(cons[c].iloc[0]) for c in ("lam", "L", "radius"))
    m, T, runs = p["m"], p["T"], p["runs"]
    n1 = int(round(spec["p_small"] * m))
    sizes = [n1, m - n1]
    s = LOSS_SETUPS[loss]
    ts = theta_star_of(s["R"])
    rows = []
    for seed, gen in enumerate(rng.spawn(p["seeds"])):
        X, y, labels = draw_cluster_data(loss, ts, sizes, 2 * n_prime * T, gen, sigma=s["sigma"],
                                         df=s["df"])
        init = init_at_distance(centers, radius, runs, gen)
        # one numba thread: these calls are small (results do not depend on it)
        res = ifca(X, y, init, p["step_mult"] / L, n_iter=T, theta_star=centers, loss=loss,
                   l2=s["l2"],
                   huber_delta=s["huber_delta"], resample=True, trace=True, n_threads=1)
        lab = res.trace.labels  # (T+1, runs, m)
        for j in range(K):
            e = res.trace.dist[:, :, j, j]  # (T+1, runs)
            gm = np.exp(np.log(e).mean(axis=1))
            mis = (lab[:, :, labels == j] != j).mean(axis=(1, 2))
            for t in range(T + 1):
                rows.append({"loss": loss, "config": spec["config"], "m": m, "n_prime": n_prime,
                             "p": min(sizes) / m, "p_j": sizes[j] / m, "seed": seed,
                             "cluster": j, "t": t, "err": float(gm[t]),
                             "err_min": float(e[t].min()), "err_max": float(e[t].max()),
                             "mis": float(mis[t]), "lam": lam, "L": L, "radius": radius,
                             "delta": float(cons["delta"].iloc[0])})
    return pd.DataFrame(rows)


def measure(table, floor_mult, rng):
    """The measurements: one row per (loss, configuration, cluster), the transient contraction
    factor (steps whose next error is above ``floor_mult`` x the run's floor) with its bootstrap
    interval (NaN with fewer than 2 data sets in the transient) and the bound
    ``1 - p lambda/(8L)`` it is held to."""
    rows = []
    for (loss, ci, j), g in table.groupby(["loss", "config", "cluster"], sort=False):
        G = g.pivot(index="seed", columns="t", values="err").to_numpy()
        mask, floor = transient_mask(G, mult=floor_mult)
        p, pj = float(g["p"].iloc[0]), float(g["p_j"].iloc[0])
        lam, L = float(g["lam"].iloc[0]), float(g["L"].iloc[0])
        bound = float(bounds.theorem2_factor(p, lam, L))
        n_used = int(mask.any(axis=1).sum())
        ratios = (G[:, 1:] / G[:, :-1])[mask]
        row = {"loss": loss, "p": p, "p_j": pj, "n_prime": int(g["n_prime"].iloc[0]),
               "cluster": int(j), "bound": bound, "rate_bound": p * lam / (8 * L),
               "rate_gd": pj * lam / L, "seeds_used": n_used, "steps_used": int(mask.sum()),
               "floor": float(np.median(floor)),
               "mis_transient": float(g[g["t"] <= 3]["mis"].mean()),
               "max_step_ratio": float(ratios.max()) if ratios.size else np.nan,
               "frac_steps_above_bound": float((ratios > bound).mean()) if ratios.size else np.nan}
        if n_used >= 2:
            fit = contraction_factor(G, mask, rng=rng(f"{loss}_{ci}_{j}"))
            row.update(factor=fit.est, lo=fit.lo, hi=fit.hi, rate=1 - fit.est)
            row["looseness"] = row["rate"] / row["rate_bound"]
        else:
            row.update(factor=np.nan, lo=np.nan, hi=np.nan, rate=np.nan, looseness=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def decide(fits, params):
    """Theorem 2's rule on the measured factors ``fits`` (:func:`measure`: columns ``factor``,
    ``lo``, ``hi``, ``seeds_used`` and ``bound``; ``factor`` NaN where not measured) with
    ``params["margins"]["margin"]``.

    Each configuration and cluster: "holds" if its factor's interval lies at or below
    ``bound + margin``, "not supported" if entirely above, "inconclusive" if it straddles it or
    was not measured; the claim: the weakest of them. ``numbers``: the margin, the verdict of
    each row (in order), and the closest case (the row whose interval comes nearest the bound,
    its ``hi`` and ``bound``)."""
    margin = params["margins"]["margin"]
    # each factor's interval against the bound 1 - p lambda/(8L) plus the margin
    verdicts = [verdict_at_most(Fit(r.factor, r.lo, r.hi, r.seeds_used), r.bound, margin)
                if np.isfinite(r.factor) else INCONCLUSIVE for r in fits.itertuples()]
    numbers = {"margin": margin, "verdicts": verdicts}
    measured = fits[fits["factor"].notna()]
    if len(measured):
        closest = (measured["hi"] - measured["bound"]).idxmax()
        numbers.update(closest=closest, closest_hi=float(measured.loc[closest, "hi"]),
                       closest_bound=float(measured.loc[closest, "bound"]))
    return Decision(combine(verdicts), numbers)


def _with_verdicts(fits, verdicts):
    """``fits`` with the column ``verdict`` where the record's table has it (after ``rate`` when
    its first row was measured, else last)."""
    cols = list(fits.columns)
    at = cols.index("looseness") if np.isfinite(fits["factor"].iloc[0]) else len(cols)
    out = fits.copy()
    out.insert(at, "verdict", verdicts)
    return out


def analyze(table, params, rng):
    mg = params["margins"]
    measured = measure(table, mg["floor_mult"], rng)
    decision = decide(measured, params)
    fits = _with_verdicts(measured, decision.numbers["verdicts"])
    numbers = pd.DataFrame({
        "loss": fits["loss"], "cluster": fits["cluster"], "p_j": fits["p_j"].round(3),
        "n_prime": fits["n_prime"],
        "measured factor [95% CI]": [
            Fit(r.factor, r.lo, r.hi, r.seeds_used).fmt() if np.isfinite(r.factor) else "n/a"
            for r in fits.itertuples()],
        "bound 1-p*lam/(8L)": fits["bound"].round(4),
        "1-factor": fits["rate"].round(3), "p*lam/(8L)": fits["rate_bound"].round(4),
        "p_j*lam/L": fits["rate_gd"].round(3), "looseness": fits["looseness"].round(1),
        "verdict": fits["verdict"]})

    def verdict_at(q, key):  # floor_mult changes the measurement; the margin only the decision
        again = measure(table, q["margins"]["floor_mult"], rng) if key == "floor_mult" else measured
        return decide(again, q).verdict

    return Verdict(decision.verdict, numbers, _summary(table, fits, decision),
                   caveats=WORDS.items("caveats", floor_mult=mg["floor_mult"],
                                       mis_min=fits["mis_transient"].min(),
                                       mis_max=fits["mis_transient"].max()),
                   sensitivity=sensitivity_lines(WORDS, params, verdict_at),
                   tables={"_fits.csv": fits}, cells=_hard_cells(fits))


def _hard_cells(fits):
    """The measured (configuration, cluster) rows and those whose factor's upper end is above
    1 - p_j lambda/L, the contraction of exact gradient descent (step 1/L, gradients averaged
    over all m machines) on the cluster's population loss, implied by lambda-strong convexity
    and L-smoothness; at or below it the noise and the misassignments did not test the eight
    times looser bound."""
    measured = fits[fits["factor"].notna()]
    hard = measured["hi"].to_numpy(float) > 1.0 - measured["rate_gd"].to_numpy(float)
    return {"hard": int(hard.sum()), "total": int(len(measured)), "rule": WORDS.text("cells rule")}


def _summary(table, fits, decision):
    if "closest" not in decision.numbers:
        return WORDS.text("summary.nothing measured")
    cons = table.groupby("loss", sort=False)[["lam", "L", "delta", "radius"]].first()
    constants = "; ".join(WORDS.text("constants", loss=loss, lam=c.lam, L=c.L, delta=c.delta,
                                     radius=c.radius) for loss, c in cons.iterrows())
    f = fits[fits["factor"].notna()]
    worst = f.loc[decision.numbers["closest"]]
    gd = f["rate"] / f["rate_gd"]
    return WORDS.text(
        "summary", constants=constants, loss=worst["loss"], p_j=worst["p_j"],
        n_prime=int(worst["n_prime"]),
        factor=Fit(worst["factor"], worst["lo"], worst["hi"], int(worst["seeds_used"])).fmt(),
        bound=worst["bound"], loose_min=f["looseness"].min(), loose_max=f["looseness"].max(),
        gd_min=gd.min(), gd_max=gd.max(), max_step_ratio=f["max_step_ratio"].max(),
        above_pct=100 * f["frac_steps_above_bound"].max())


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    fits = verdict.tables["_fits.csv"]
    losses = list(dict.fromkeys(table["loss"]))
    fig = Figure(figsize=(5.2 * len(losses), 8.0))
    axes = fig.subplots(2, len(losses), squeeze=False)
    for c, loss in enumerate(losses):
        ax = axes[0, c]
        tl = table[table["loss"] == loss]
        for (ci, j), g in tl.groupby(["config", "cluster"], sort=False):
            med = g.groupby("t")["err"].median()
            lab = f"j={j}: p_j={g['p_j'].iloc[0]:.2f}, n'={g['n_prime'].iloc[0]}"
            line, = ax.semilogy(med.index, med.values, marker=".", ms=3, label=lab)
            f = bounds.theorem2_factor(g["p"].iloc[0], g["lam"].iloc[0], g["L"].iloc[0])
            ax.semilogy(med.index, med.values[0] * f ** med.index.to_numpy(), ls="--",
                        color=line.get_color(), lw=0.8)
        ax.set_title(f"{loss}: median error (dashed: bound factor from e_0)", fontsize=9)
        ax.set_xlabel("iteration t")
        ax.set_ylabel("||theta_j^(t) - theta_pop_j||")
        ax.legend(fontsize=7)
        ax = axes[1, c]
        fl = fits[fits["loss"] == loss].reset_index(drop=True)
        x = np.arange(len(fl))
        ok = fl["factor"].notna()
        ax.errorbar(x[ok], fl["factor"][ok],
                    yerr=[fl["factor"][ok] - fl["lo"][ok], fl["hi"][ok] - fl["factor"][ok]],
                    fmt="o", label="measured e_{t+1}/e_t (95% CI)")
        ax.scatter(x, fl["bound"], marker="_", s=400, color="k", label="1 - p lambda/(8L)")
        ax.scatter(x, 1 - fl["rate_gd"], marker="x", color="gray", label="1 - p_j lambda/L")
        ax.set_xticks(x, [f"p_j={a:.2f}\nn'={b}" for a, b in zip(fl["p_j"], fl["n_prime"])],
                      fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("per-step contraction factor")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


STUDY = Study(
    id="T2", order=50, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
