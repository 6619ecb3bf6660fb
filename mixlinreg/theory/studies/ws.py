r"""Study WS: weight sharing with IFCA (Section 4.3 of the long version, 4.1 of the NeurIPS
version) and its empty extra clusters (Section 6.3 of both versions), in the linear model.

The model. ``m`` machines of ``n`` rows, ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma eps``,
``m / k`` machines per cluster. The ``k`` true models are equal on the last ``d - d_own``
coordinates (the *shared* part, entries ``N(0, 1)``, one draw per trial) and differ on the first
``d_own`` (the *own* part): there they are the vertices of a regular simplex with edges ``sep``
(every pair of true models at distance ``sep``), turned by a random rotation of the own
coordinates (:func:`draw_problem`). Small ``sep``: an ambiguous cluster structure whose clusters
share common properties, the paper's setting for weight sharing.

Part 1 (Section 4.3 / 4.1). On the same data and the same starts, IFCA (option I, gradient
averaging, :func:`mixlinreg.ifca`) with and without ``shared`` = the last ``d - d_own``
coordinates: ``starts`` Gaussian starts ``N(0, init_scale^2)`` per trial, tied on the shared
coordinates (:func:`mixlinreg.tie_shared`, the mean of the k models) and given to both arms, the
lowest final training loss kept per arm (random restarts, as in the paper's experiments). Per
trial and arm: recovery (ARI = 1), the error ``(1/k) sum_j ||theta_pi(j) - theta*_j||`` under the
best matching ``pi`` (:func:`matched_errors`), its shared and own parts under the same matching,
and the iterations to the early stop. Paired over trials in every (sep, n) cell.
Prediction: when the clusters are recovered, least squares on the shared coordinates uses all ``m
n`` rows instead of ``m n / k``, so their error falls by about ``sqrt(k)``; the own coordinates
keep their ``m n / k`` rows (no change).

Part 2 (Section 6.3). True ``k_true`` clusters, ``k_fit = k_true + extra`` models from one
Gaussian start per trial (tied as above), with and without sharing: the final number of non-empty
models (machines assigned to a model at the end), against ``k_true``: ``empty`` when it equals
``k_true`` (the extra models took no machine), ``split`` when larger, ``merged`` when smaller.

Verdict. :func:`measure` makes the cells (part 1: paired bootstrap interval of the mean error
difference, sharing minus plain, and the recovery counts; part 2: counts), :func:`decide` (pure)
holds them to the thresholds of the config's ``[margins]`` and combines the parts (the weaker).
Config: ``mixlinreg/configs/studies/WS.toml``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import bootstrap, newcombe_paired, wilson_interval
from ..study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict, combine
from ..words import sensitivity_lines, words

#: the study's prose: ws.md beside this module
WORDS = words(__file__)

_POS = dict(low=0, open="low")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "d": Spec("int", low=2), "d_own": Spec("int", low=1), "m": Spec("int", low=2),
        "sigma": Spec("float", low=0), "init_scale": Spec("float", **_POS),
        "lr": Spec("float", **_POS), "max_iter": Spec("int", low=1), "tol": Spec("float", **_POS),
        # part 1
        "k": Spec("int", low=2), "sep": Spec("list[float]", **_POS), "n": Spec("list[int]", low=1),
        "trials": Spec("int", low=2), "starts": Spec("int", low=1),
        # part 2
        "k_true": Spec("int", low=1), "extra": Spec("list[int]", low=1),
        "sep2": Spec("float", **_POS), "n2": Spec("int", low=1), "trials2": Spec("int", low=1),
        "n_boot": Spec("int", low=100),
    },
    "margins": {
        "rec_margin": Spec("float", low=0, high=1, open="high"),
        "rec_margin_neighbours": Spec("list[float]", low=0, high=1, open="high"),
        "empty_hold": Spec("float", **_OPEN01),
        "empty_hold_neighbours": Spec("list[float]", **_OPEN01),
        "empty_refute": Spec("float", **_OPEN01),
        "empty_refute_neighbours": Spec("list[float]", **_OPEN01),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
    },
}
ARMS = ("shared", "plain")
BETTER, WORSE, UNCLEAR = "better", "worse", "undetermined"
EMPTY, SPLIT, MERGED = "empty", "split", "merged"


# ------------------------------------------------------------------------------ the model

def simplex(k, dim):
    """``(k, dim)``: a regular simplex with unit edges, centred at 0 (needs ``dim >= k``).

    >>> V = simplex(3, 4)
    >>> round(float(np.linalg.norm(V[0] - V[1])), 12), round(float(np.linalg.norm(V[1] - V[2])), 12)
    (1.0, 1.0)
    """
    E = np.eye(k, dim)
    return (E - E.mean(axis=0)) / np.sqrt(2.0)


def own_coords(d, d_own):
    """The own coordinates (the first ``d_own``) and the shared ones (the rest), as indices."""
    return np.arange(d_own), np.arange(d_own, d)


def draw_problem(m, n, d, d_own, k, sep, sigma, rng):
    """One data set: ``X (m, n, d)``, ``y (m, n)``, ``theta_star (k, d)``, ``labels (m,)`` (equal
    contiguous clusters). The true models share coordinates ``d_own..d-1`` (entries ``N(0, 1)``)
    and form a regular simplex of edge ``sep`` on the first ``d_own``, randomly rotated."""
    own, sh = own_coords(d, d_own)
    Q = np.linalg.qr(rng.normal(size=(d_own, d_own)))[0]
    theta = np.empty((k, d))
    theta[:, own] = sep * simplex(k, d_own) @ Q.T
    theta[:, sh] = rng.normal(size=sh.size)
    labels = np.repeat(np.arange(k), m // k)
    X = rng.normal(size=(m, n, d))
    y = np.einsum("ind,id->in", X, theta[labels]) + sigma * rng.normal(size=(m, n))
    return X, y, theta, labels


def tied_starts(runs, k, d, d_own, scale, rng):
    """``runs`` Gaussian starts ``N(0, scale^2)`` of ``k`` models, tied on the shared coordinates
    (their mean over the k models): a valid start with and without sharing."""
    from ...inits import tie_shared

    return tie_shared(scale * rng.normal(size=(runs, k, d)), own_coords(d, d_own)[1])


def matched_errors(theta, theta_star, d_own):
    """``(total, shared, own)``: under the one-to-one matching ``pi`` of models to true models
    that minimises ``(1/k) sum_j ||theta_pi(j) - theta*_j||`` (the paper's distance,
    :func:`mixlinreg.metrics.dist_matched`), that mean and the means of the norms of the shared and
    own parts of the same differences (``theta (k, d)``, ``theta_star (k, d)``, same k)."""
    k = theta_star.shape[0]
    own, sh = own_coords(theta_star.shape[1], d_own)
    best = None
    for pi in itertools.permutations(range(k)):
        diff = theta[list(pi)] - theta_star
        total = float(np.linalg.norm(diff, axis=1).mean())
        if best is None or total < best[0]:
            best = (total, float(np.linalg.norm(diff[:, sh], axis=1).mean()),
                    float(np.linalg.norm(diff[:, own], axis=1).mean()))
    return best


def _run(X, y, init, p, shared):
    from ...ifca import ifca

    return ifca(X, y, init, p["lr"], n_iter=p["max_iter"], early_stop=True, tol=p["tol"],
                n_threads=1, shared=shared)


# ------------------------------------------------------------------------------ units

def units(params):
    p = params["params"]
    if p["d_own"] >= p["d"]:
        raise ValueError(f"study WS: params.d_own must be < params.d (some coordinates shared), "
                         f"got d_own = {p['d_own']} and d = {p['d']}")
    for key in ("k", "k_true"):
        if p["m"] % p[key]:
            raise ValueError(f"study WS: params.m ({p['m']}) must be a multiple of params.{key} "
                             f"({p[key]}) (equal clusters)")
        if p[key] > p["d_own"]:
            raise ValueError(f"study WS: params.d_own ({p['d_own']}) must be >= params.{key} "
                             f"({p[key]}) (the own parts form a simplex)")
    for key in ("sep", "n", "extra"):
        if len(set(p[key])) != len(p[key]):
            raise ValueError(f"study WS: params.{key} must be distinct, got {p[key]}")
    out = [(f"p1_sep={s:g}_n={n}", {"part": 1, "sep": s, "n": n}) for s in p["sep"] for n in p["n"]]
    return out + [(f"p2_kfit={p['k_true'] + e}", {"part": 2, "k_fit": p["k_true"] + e})
                  for e in p["extra"]]


def compute(spec, params, rng, shared):
    from ...metrics import adjusted_rand

    p = params["params"]
    d, d_own, m = p["d"], p["d_own"], p["m"]
    sh = own_coords(d, d_own)[1]
    rows = []
    if spec["part"] == 1:
        k, n = p["k"], spec["n"]
        for t, gen in enumerate(rng.spawn(p["trials"])):
            X, y, theta, labels = draw_problem(m, n, d, d_own, k, spec["sep"], p["sigma"], gen)
            init = tied_starts(p["starts"], k, d, d_own, p["init_scale"], gen)
            for arm in ARMS:
                res = _run(X, y, init, p, sh if arm == "shared" else None)
                loss = np.where(res.diverged, np.inf, res.loss)
                b = int(np.argmin(loss))
                tot, e_sh, e_own = matched_errors(res.theta[b], theta, d_own)
                ari = float(adjusted_rand(labels, res.labels[b]))
                rows.append({"part": 1, "sep": spec["sep"], "n": n, "trial": t, "arm": arm,
                             "ari": ari, "recovered": bool(ari == 1.0), "err": tot,
                             "nonempty": int(np.unique(res.labels[b]).size),
                             "err_shared": e_sh, "err_own": e_own,
                             "iters": int(res.n_iter[b]), "converged": bool(res.converged[b]),
                             "diverged": bool(res.diverged[b])})
    else:
        kt, kf, n = p["k_true"], spec["k_fit"], p["n2"]
        for t, gen in enumerate(rng.spawn(p["trials2"])):
            X, y, theta, labels = draw_problem(m, n, d, d_own, kt, p["sep2"], p["sigma"], gen)
            init = tied_starts(1, kf, d, d_own, p["init_scale"], gen)
            for arm in ARMS:
                res = _run(X, y, init, p, sh if arm == "shared" else None)
                used = int(np.unique(res.labels[0]).size)
                rows.append({"part": 2, "k_true": kt, "k_fit": kf, "n": n, "trial": t, "arm": arm,
                             "nonempty": used, "ari": float(adjusted_rand(labels, res.labels[0])),
                             "outcome": outcome(used, kt), "iters": int(res.n_iter[0]),
                             "converged": bool(res.converged[0]),
                             "diverged": bool(res.diverged[0])})
    return pd.DataFrame(rows)


def outcome(nonempty, k_true):
    """``"empty"`` (the extra models took no machine), ``"split"`` or ``"merged"``."""
    return EMPTY if nonempty == k_true else (SPLIT if nonempty > k_true else MERGED)


# ------------------------------------------------------------------------------ measure, decide

def paired_part1(table):
    """Part 1 rows, one per (sep, n, trial), the two arms side by side (``_shared``, ``_plain``)."""
    t = table[table["part"] == 1]
    cols = ["ari", "recovered", "err", "err_shared", "err_own", "nonempty", "iters",
            "converged"]
    a, b = (t[t["arm"] == arm].set_index(["sep", "n", "trial"])[cols].add_suffix("_" + arm)
            for arm in ARMS)
    return pd.concat([a, b], axis=1, join="inner").reset_index()


def _ratio_fit(num, den, confidence, n_boot, rng):
    """Ratio of means ``mean(num) / mean(den)`` with a paired percentile bootstrap interval
    (``None`` with fewer than 2 pairs)."""
    if len(num) < 2:
        return None
    v = np.column_stack([num, den])
    return bootstrap(v, lambda s: s[:, 0].mean() / s[:, 1].mean(), n_boot=n_boot,
                     confidence=confidence, rng=rng)


def measure(table, params, rng, confidence=None):
    """``{"cells": part 1 per (sep, n), "kfit": part 2 per (k_fit, arm)}``.

    Part 1: recovery counts of the paired 2 x 2 table (``n11`` both, ``n10`` sharing only, ``n01``
    plain only, ``n00`` neither), the mean paired error difference (sharing - plain) with its
    bootstrap interval at ``confidence`` (``rng(name)`` streams), means per arm, the ratio of the
    shared-part errors over trials where both arms recover (prediction ``1/sqrt(k)``) and of the
    own parts (prediction 1), and the iterations. Part 2: the count of ``empty``, ``split`` and
    ``merged`` runs per (k_fit, arm)."""
    p, mg = params["params"], params["margins"]
    conf = mg["confidence"] if confidence is None else confidence
    pairs = paired_part1(table)
    rows = []
    for (sep, n), g in pairs.groupby(["sep", "n"]):
        a, b = g["recovered_shared"].to_numpy(bool), g["recovered_plain"].to_numpy(bool)
        diff = (g["err_shared"] - g["err_plain"]).to_numpy()
        fit = bootstrap(diff, n_boot=p["n_boot"], confidence=conf, rng=rng(f"err_{sep:g}_{n}"))
        both = g[a & b]
        r_sh = _ratio_fit(both["err_shared_shared"].to_numpy(), both["err_shared_plain"].to_numpy(),
                          conf, p["n_boot"], rng(f"ratio_shared_{sep:g}_{n}"))
        r_own = _ratio_fit(both["err_own_shared"].to_numpy(), both["err_own_plain"].to_numpy(),
                           conf, p["n_boot"], rng(f"ratio_own_{sep:g}_{n}"))
        rows.append({
            "sep": sep, "n": n, "trials": len(g),
            "n11": int((a & b).sum()), "n10": int((a & ~b).sum()), "n01": int((~a & b).sum()),
            "n00": int((~a & ~b).sum()),
            "rec_shared": a.mean(), "rec_plain": b.mean(),
            "err_shared": g["err_shared"].mean(), "err_plain": g["err_plain"].mean(),
            "diff": fit.est, "diff_lo": fit.lo, "diff_hi": fit.hi,
            "both_recovered": len(both),
            "shared_part_ratio": np.nan if r_sh is None else r_sh.est,
            "shared_part_ratio_lo": np.nan if r_sh is None else r_sh.lo,
            "shared_part_ratio_hi": np.nan if r_sh is None else r_sh.hi,
            "own_part_ratio": np.nan if r_own is None else r_own.est,
            "own_part_ratio_lo": np.nan if r_own is None else r_own.lo,
            "own_part_ratio_hi": np.nan if r_own is None else r_own.hi,
            "predicted_shared_ratio": 1.0 / np.sqrt(p["k"]),
            "one_model_shared": (g["nonempty_shared"] == 1).mean(),
            "one_model_plain": (g["nonempty_plain"] == 1).mean(),
            "iters_shared": g["iters_shared"].mean(), "iters_plain": g["iters_plain"].mean(),
            "converged_shared": g["converged_shared"].mean(),
            "converged_plain": g["converged_plain"].mean()})
    cells = pd.DataFrame(rows)
    t2 = table[table["part"] == 2]
    krows = []
    for (kf, arm), g in t2.groupby(["k_fit", "arm"]):
        krows.append({"k_true": int(g["k_true"].iloc[0]), "k_fit": int(kf), "arm": arm,
                      "runs": len(g), **{o: int((g["outcome"] == o).sum())
                                         for o in (EMPTY, SPLIT, MERGED)},
                      "ari1_empty": int(((g["outcome"] == EMPTY) & (g["ari"] == 1.0)).sum())})
    return {"cells": cells, "kfit": pd.DataFrame(krows), "confidence": conf}


def decide(meas, params):
    """The verdict from :func:`measure`'s cells, at the thresholds of ``params["margins"]``.

    Part 1, per (sep, n) cell: ``better`` when the error difference's interval is entirely below
    0 and the Newcombe paired interval of the recovery difference (sharing - plain, at
    ``confidence``) has its lower bound ``>= -rec_margin``; ``worse`` when the error interval is
    entirely above 0 or the recovery interval entirely below 0; else ``undetermined``. Holds when
    every cell is better, not supported when any is worse, a caveat when some are better and the
    rest undetermined, inconclusive when none is better.
    Part 2, per ``k_fit`` with sharing: the fraction of ``empty`` runs ``holds`` when its Wilson
    lower bound is ``>= empty_hold``, is ``refuted`` when its Wilson upper bound is ``<
    empty_refute``, else ``undetermined``; holds when every k_fit holds, not supported when some
    is refuted and none holds, a caveat when some hold, inconclusive otherwise.
    The record's verdict is the weaker (:func:`combine`)."""
    mg = params["margins"]
    conf = mg["confidence"]
    st1 = []
    for _, c in meas["cells"].iterrows():
        _, lo, hi = newcombe_paired(int(c["n11"]), int(c["n10"]), int(c["n01"]), int(c["n00"]),
                                    conf)
        if c["diff_lo"] > 0 or hi < 0:
            st1.append(WORSE)
        elif c["diff_hi"] < 0 and lo >= -mg["rec_margin"]:
            st1.append(BETTER)
        else:
            st1.append(UNCLEAR)
    nb, nw = st1.count(BETTER), st1.count(WORSE)
    v1 = (NOT_SUPPORTED if nw else HOLDS if nb == len(st1) else CAVEAT if nb else INCONCLUSIVE)
    st2, fr2 = [], []
    sh = meas["kfit"][meas["kfit"]["arm"] == "shared"]
    for _, c in sh.iterrows():
        lo, hi = (float(np.asarray(x).ravel()[0])
                  for x in wilson_interval(int(c[EMPTY]), int(c["runs"]), conf))
        fr2.append((int(c["k_fit"]), c[EMPTY] / c["runs"], lo, hi))
        st2.append(HOLDS if lo >= mg["empty_hold"] else
                   NOT_SUPPORTED if hi < mg["empty_refute"] else INCONCLUSIVE)
    h2, r2 = st2.count(HOLDS), st2.count(NOT_SUPPORTED)
    v2 = (HOLDS if st2 and h2 == len(st2) else CAVEAT if h2 else NOT_SUPPORTED if r2
          else INCONCLUSIVE)
    return Decision(combine([v1, v2]), {"part1": v1, "part2": v2, "cell_status": st1,
                                        "better": nb, "worse": nw, "cells": len(st1),
                                        "kfit_status": st2, "empty_fraction": fr2})


# ------------------------------------------------------------------------------ analyze

def scope(dec, meas):
    nb = dec.numbers
    cells = meas["cells"]
    where = [WORDS.text("scope.cell", sep=c["sep"], n=int(c["n"])) for (_, c), s in
             zip(cells.iterrows(), nb["cell_status"]) if s == BETTER]
    fr = "; ".join(WORDS.text("scope.kfit", k_fit=k, fraction=f)
                   for k, f, _, _ in nb["empty_fraction"])
    better_at = (WORDS.text("scope.better at", where=", ".join(where))
                 if 0 < nb["better"] < nb["cells"] else "")
    return WORDS.text("scope", part1=nb["part1"], better=nb["better"], cells=nb["cells"],
                      worse=nb["worse"], better_at=better_at, part2=nb["part2"], kfit=fr)


def _numbers(meas, dec):
    rows = []
    for (_, c), s in zip(meas["cells"].iterrows(), dec.numbers["cell_status"]):
        rows.append({"part": WORDS.text("numbers.part1"),
                     "condition": WORDS.text("numbers.condition1", sep=c["sep"], n=int(c["n"])),
                     "recovery shared / plain": WORDS.text(
                         "numbers.recovery", rec_shared=c["rec_shared"], rec_plain=c["rec_plain"]),
                     "error shared / plain": WORDS.text(
                         "numbers.error", err_shared=c["err_shared"], err_plain=c["err_plain"]),
                     "difference [CI]": WORDS.text("numbers.difference", diff=c["diff"],
                                                   lo=c["diff_lo"], hi=c["diff_hi"]),
                     "shared-part ratio (pred 1/sqrt(k))":
                         "" if np.isnan(c["shared_part_ratio"]) else
                         WORDS.text("numbers.ratio", ratio=c["shared_part_ratio"],
                                    lo=c["shared_part_ratio_lo"], hi=c["shared_part_ratio_hi"]),
                     "status": s})
    for (k, f, lo, hi), s in zip(dec.numbers["empty_fraction"], dec.numbers["kfit_status"]):
        pl = meas["kfit"][(meas["kfit"]["arm"] == "plain") & (meas["kfit"]["k_fit"] == k)]
        empty = WORDS.text("numbers.empty", fraction=f, lo=lo, hi=hi)
        if len(pl):
            empty += " " + WORDS.text("numbers.empty plain",
                                      plain=float(pl[EMPTY].iloc[0] / pl["runs"].iloc[0]))
        rows.append({"part": WORDS.text("numbers.part2"),
                     "condition": WORDS.text("numbers.condition2", k_fit=k),
                     "recovery shared / plain": "",
                     "error shared / plain": "",
                     "difference [CI]": empty,
                     "shared-part ratio (pred 1/sqrt(k))": "", "status": s})
    return pd.DataFrame(rows)


def _summary(meas, dec, params):
    p, mg = params["params"], params["margins"]
    cells, kf, nb = meas["cells"], meas["kfit"], dec.numbers
    out = [WORDS.text("summary.setup", d=p["d"], d_shared=p["d"] - p["d_own"], d_own=p["d_own"],
                      m=p["m"], sigma=p["sigma"], lr=p["lr"], tol=p["tol"],
                      max_iter=p["max_iter"], init_scale=p["init_scale"])]
    out.append(WORDS.text("summary.part1", k=p["k"], trials=p["trials"], starts=p["starts"],
                          part1=nb["part1"], cells="; ".join(
                              WORDS.text("summary.part1 cell", sep=c["sep"], n=int(c["n"]),
                                         diff=c["diff"], lo=c["diff_lo"], hi=c["diff_hi"],
                                         rec_shared=c["rec_shared"], rec_plain=c["rec_plain"])
                              for _, c in cells.iterrows())))
    ok = cells[cells["both_recovered"] >= 2]
    if len(ok):
        out.append(WORDS.text("summary.ratios", shared_min=ok["shared_part_ratio"].min(),
                              shared_max=ok["shared_part_ratio"].max(),
                              predicted=1 / np.sqrt(p["k"]), own_min=ok["own_part_ratio"].min(),
                              own_max=ok["own_part_ratio"].max()))
    out.append(WORDS.text("summary.iterations", iters_shared=cells["iters_shared"].mean(),
                          iters_plain=cells["iters_plain"].mean()))
    parts = [WORDS.text("summary.part2 kfit", k_fit=int(c["k_fit"]), arm=c["arm"],
                        empty=int(c[EMPTY]), runs=int(c["runs"]), split=int(c[SPLIT]),
                        merged=int(c[MERGED]))
             for _, c in kf.iterrows()]
    out.append(WORDS.text("summary.part2", k_true=p["k_true"], sep2=p["sep2"], n2=p["n2"],
                          part2=nb["part2"], empty_hold=mg["empty_hold"],
                          confidence=mg["confidence"], kfit="; ".join(parts)))
    return " ".join(out)


def caveats(params, meas=None):
    p = params["params"]
    out = []
    if meas is not None and len(meas["cells"]):
        c, kf = meas["cells"], meas["kfit"]
        pl = kf[kf["arm"] == "plain"]
        merged = (WORDS.text("caveats.plain merged", merged=int(pl[MERGED].sum()),
                             runs=int(pl["runs"].sum())) if len(pl) else "")
        out.append(WORDS.text("caveats.plain fails", rec_min=c["rec_plain"].min(),
                              rec_max=c["rec_plain"].max(),
                              one_plain=c["one_model_plain"].mean(),
                              one_shared=c["one_model_shared"].mean(), merged=merged))
    return out + WORDS.items("caveats", init_scale=p["init_scale"])


def analyze(table, params, rng):
    meas = measure(table, params, rng)
    dec = decide(meas, params)

    def verdict_at(q, key):  # the confidence changes the intervals; the rest only the decision
        again = (measure(table, params, rng, confidence=q["margins"]["confidence"])
                 if key == "confidence" else meas)
        return decide(again, q).verdict

    tables = {"_cells.csv": meas["cells"], "_kfit.csv": meas["kfit"]}
    return Verdict(dec.verdict, _numbers(meas, dec), _summary(meas, dec, params),
                   caveats=caveats(params, meas),
                   sensitivity=sensitivity_lines(WORDS, params, verdict_at), tables=tables,
                   scope=scope(dec, meas))


# ------------------------------------------------------------------------------ figure

def figure(table, verdict, params):
    from matplotlib.figure import Figure

    cells = verdict.tables["_cells.csv"]
    t2 = table[table["part"] == 2]
    fig = Figure(figsize=(12, 4.5))
    ax1, ax2 = fig.subplots(1, 2)
    x = np.arange(len(cells))
    for off, arm, col in ((-0.15, "shared", "C0"), (0.15, "plain", "C1")):
        ax1.bar(x + off, cells[f"err_{arm}"], width=0.3, color=col,
                label=f"{'with' if arm == 'shared' else 'without'} sharing (mean matched error)")
    ax1.set_xticks(x)
    ax1.set_xticklabels([f"sep {s:g}\nn {int(n)}" for s, n in zip(cells["sep"], cells["n"])],
                        fontsize=7)
    ax1.set_yscale("log")
    lo, hi = ax1.get_ylim()
    ax1.set_ylim(lo, hi * 4)  # room for the legend above the bars
    ax1.set_ylabel("(1/k) sum_j ||theta_j - theta*_j|| (best matching)")
    ax1.set_title("Part 1: error with and without weight sharing (same data and starts)",
                  fontsize=8)
    ax1.legend(fontsize=7)
    if len(t2):
        kfs = sorted(int(v) for v in t2["k_fit"].unique())
        top = int(t2["nonempty"].max())
        bins = np.arange(1, top + 1)
        w = 0.8 / (2 * len(kfs))
        j = 0
        for kf in kfs:
            kf = int(kf)
            for arm in ARMS:
                g = t2[(t2["k_fit"] == kf) & (t2["arm"] == arm)]
                counts = [(g["nonempty"] == b).mean() for b in bins]
                ax2.bar(bins - 0.4 + w * (j + 0.5), counts, width=w,
                        label=f"k_fit = {kf}, {'with' if arm == 'shared' else 'without'} sharing",
                        hatch="" if arm == "shared" else "//", color=f"C{kfs.index(kf)}",
                        alpha=0.9 if arm == "shared" else 0.5)
                j += 1
        ax2.axvline(int(t2["k_true"].iloc[0]), color="k", ls=":", lw=1, label="k_true")
        ax2.set_xticks(bins)
    ax2.set_xlabel("non-empty models at the end")
    ax2.set_ylabel("fraction of runs")
    ax2.set_title("Part 2: non-empty models when k_fit > k_true", fontsize=8)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="WS", order=100, paper="IFCA", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
