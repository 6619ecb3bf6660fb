r"""Study WS (version 2): weight sharing with IFCA (Section 4.3 of the long version, 4.1 of the
NeurIPS version) and its empty extra clusters (Section 6.3 of both versions), in the linear model.

The model. ``m`` machines of ``n`` rows, ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma eps``,
contiguous clusters of ``m / k`` machines. The ``k`` true models are equal on the last
``d - d_own`` coordinates (the *shared* part, entries ``N(0, 1)``, one draw per trial) and differ
on the first ``d_own`` (the *own* part): there they are the vertices of a regular simplex with
edges ``sep``, turned by a random rotation (:func:`draw_problem`). The control's
``shared_sep > 0`` adds a second simplex, of edge ``shared_sep``, on the shared coordinates: the
true models of part 1 then differ where the method shares (default 0: the draws are those
without it).

Starts (:func:`make_starts`), the same for both arms of a trial (a paired comparison), tied on
the shared coordinates (:func:`mixlinreg.tie_shared`, the mean of the k models) so that they are
valid with and without sharing: ``"bernoulli"``, coordinate-wise Bernoulli(0.5), unscaled (the
IFCA authors' synthetic code, :func:`mixlinreg.inits.init_bernoulli`); ``"pooled"``, the pooled
least-squares fit over all machines plus independent ``N(0, pooled_noise^2)`` noise per model;
``"gaussian"``, ``N(0, init_scale^2)`` (version 1's start; not in the paper preset). Each kind
draws from its own stream, so the data of a trial and the starts of one kind do not depend on
which other kinds are run.

Part 1 (Section 4.3 / 4.1). On the same data and the same starts, IFCA (option I, gradient
averaging, :func:`mixlinreg.ifca`) with and without ``shared`` = the last ``d - d_own``
coordinates, ``max(starts)`` starts per trial, kind and arm (every kind's starts in one IFCA
call, :func:`all_starts`; the runs of a call are independent); each level ``s`` of ``starts`` keeps the
lowest final training loss among the first ``s`` starts (``s = 1``: no restarts). Per trial, arm
and level: recovery (ARI = 1), the error ``(1/k) sum_j ||theta_pi(j) - theta*_j||`` under the
best matching (:func:`matched_errors`) and its shared and own parts. A cell is (start kind, sep,
n, starts).

Part 2 (Section 6.3). ``k_true`` true clusters (the control's ``part2_clusters = "k_fit"``: as
many true clusters as fitted models), ``k_fit = k_true + extra`` models from one start per trial,
with and without sharing: the final number of non-empty models against ``k_true``: ``empty``
when equal, ``split`` when larger, ``merged`` when smaller (a failure, counted apart from a
split). A cell is (start kind, sep2, k_fit).

Verdict. :func:`measure` makes the cells, :func:`decide` (pure) gives every cell a status at the
thresholds of the config's ``[margins]``, each part a verdict by :func:`overall` of its cells'
statuses, and the record the weaker of the two (:func:`combine`). :func:`hard_cells` counts the
cells whose outcome the construction did not settle. Config: ``mixlinreg/configs/studies/WS.toml``.
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

#: the start kinds, in the order of their random streams
INIT_KINDS = ("gaussian", "bernoulli", "pooled")
PART2_CLUSTERS = ("k_true", "k_fit")

_POS = dict(low=0, open="low")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "d": Spec("int", low=2), "d_own": Spec("int", low=1), "m": Spec("int", low=2),
        "sigma": Spec("float", low=0), "lr": Spec("float", **_POS),
        "max_iter": Spec("int", low=1), "tol": Spec("float", **_POS),
        "inits": Spec("list[str]"), "init_scale": Spec("float", **_POS),
        "pooled_noise": Spec("float", **_POS),
        # part 1
        "k": Spec("int", low=2), "sep": Spec("list[float]", **_POS), "n": Spec("list[int]", low=1),
        "trials": Spec("int", low=2), "starts": Spec("list[int]", low=1),
        # part 2
        "k_true": Spec("int", low=1), "extra": Spec("list[int]", low=1),
        "sep2": Spec("list[float]", **_POS), "n2": Spec("int", low=1),
        "trials2": Spec("int", low=1),
        "n_boot": Spec("int", low=100),
        # the control's (defaults: the study's data)
        "shared_sep": Spec("float", low=0, required=False, default=0.0),
        "part2_clusters": Spec("str", choices=PART2_CLUSTERS, required=False, default="k_true"),
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
REFUTED = "refuted"
EMPTY, SPLIT, MERGED = "empty", "split", "merged"
#: a part-1 cell is hard when the plain arm recovers in at least this fraction of its trials
HARD_PLAIN_RECOVERY = 0.5
#: a part-2 cell is hard when its empty fraction (with sharing) is within these bounds
HARD_EMPTY_RANGE = (0.1, 0.9)
P1_KEYS = ["init", "sep", "n", "starts"]
P2_KEYS = ["init", "sep", "k_fit"]


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


def cluster_labels(m, k):
    """Contiguous clusters of ``m`` machines, sizes ``m // k`` or one more (equal when ``k``
    divides ``m``).

    >>> cluster_labels(6, 2).tolist(), cluster_labels(7, 3).tolist()
    ([0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 2, 2])
    """
    return (np.arange(m) * k) // m


def draw_problem(m, n, d, d_own, k, sep, sigma, rng, shared_sep=0.0):
    """One data set: ``X (m, n, d)``, ``y (m, n)``, ``theta_star (k, d)``, ``labels (m,)``
    (contiguous clusters). The true models share coordinates ``d_own..d-1`` (entries ``N(0, 1)``)
    and form a regular simplex of edge ``sep`` on the first ``d_own``, randomly rotated. With
    ``shared_sep > 0`` (the control) a simplex of edge ``shared_sep``, randomly rotated, is added
    on the shared coordinates (its rotation drawn after the data's other draws, so ``X`` and the
    noise are those of ``shared_sep = 0``; needs ``d - d_own >= k``)."""
    own, sh = own_coords(d, d_own)
    Q = np.linalg.qr(rng.normal(size=(d_own, d_own)))[0]
    theta = np.empty((k, d))
    theta[:, own] = sep * simplex(k, d_own) @ Q.T
    theta[:, sh] = rng.normal(size=sh.size)
    labels = cluster_labels(m, k)
    X = rng.normal(size=(m, n, d))
    noise = rng.normal(size=(m, n))
    if shared_sep > 0:
        Q2 = np.linalg.qr(rng.normal(size=(sh.size, sh.size)))[0]
        theta[:, sh] += shared_sep * simplex(k, sh.size) @ Q2.T
    y = np.einsum("ind,id->in", X, theta[labels]) + sigma * noise
    return X, y, theta, labels


def pooled_fit(X, y):
    """Least squares over all machines' rows pooled: ``(d,)``."""
    d = X.shape[-1]
    return np.linalg.lstsq(X.reshape(-1, d), y.reshape(-1), rcond=None)[0]


def make_starts(kind, runs, k, X, y, d_own, p, rng):
    """``(runs, k, d)`` starts of kind ``kind`` (see the module), tied on the shared coordinates."""
    from ...inits import init_bernoulli, tie_shared

    d = X.shape[-1]
    if kind == "bernoulli":
        raw = init_bernoulli(runs, k, d, rng=rng)
    elif kind == "pooled":
        raw = pooled_fit(X, y)[None, None, :] + p["pooled_noise"] * rng.normal(size=(runs, k, d))
    elif kind == "gaussian":
        raw = p["init_scale"] * rng.normal(size=(runs, k, d))
    else:
        raise ValueError(f"study WS: unknown start kind {kind!r}, expected one of {INIT_KINDS}")
    return tie_shared(raw, own_coords(d, d_own)[1])


def _streams(gen):
    """The data's stream and one stream per start kind (in :data:`INIT_KINDS` order)."""
    data, *starts = gen.spawn(1 + len(INIT_KINDS))
    return data, dict(zip(INIT_KINDS, starts))


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


def best_of_first(loss, diverged, s):
    """The index of the lowest final loss among the first ``s`` runs (diverged runs last)."""
    return int(np.argmin(np.where(diverged[:s], np.inf, loss[:s])))


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
    for key in ("sep", "n", "extra", "sep2", "starts", "inits"):
        if len(set(p[key])) != len(p[key]):
            raise ValueError(f"study WS: params.{key} must be distinct, got {p[key]}")
    bad = [i for i in p["inits"] if i not in INIT_KINDS]
    if bad or not p["inits"]:
        raise ValueError(f"study WS: params.inits must be some of {list(INIT_KINDS)}, got "
                         f"{p['inits']}")
    k_data = p["k_true"] + max(p["extra"]) if p["part2_clusters"] == "k_fit" else p["k_true"]
    if k_data > p["d_own"]:
        raise ValueError(f"study WS: with params.part2_clusters = 'k_fit' the {k_data} true "
                         f"clusters of part 2 need params.d_own >= {k_data}, got {p['d_own']}")
    if p["shared_sep"] > 0 and p["k"] > p["d"] - p["d_own"]:
        raise ValueError(f"study WS: with params.shared_sep > 0 the {p['k']} true models of part 1 "
                         f"need d - d_own >= {p['k']} shared coordinates")
    out = [(f"p1_sep={s:g}_n={n}", {"part": 1, "sep": s, "n": n}) for s in p["sep"] for n in p["n"]]
    return out + [(f"p2_sep={s:g}_kfit={p['k_true'] + e}",
                   {"part": 2, "sep": s, "k_fit": p["k_true"] + e})
                  for s in p["sep2"] for e in p["extra"]]


def all_starts(kinds, runs, k, X, y, d_own, p, streams):
    """The starts of every kind in ``kinds``, ``runs`` each, stacked ``(len(kinds) * runs, k, d)``
    (kind ``i``'s are rows ``i * runs`` to ``(i + 1) * runs - 1``): one IFCA call runs them all."""
    return np.concatenate([make_starts(kind, runs, k, X, y, d_own, p, streams[kind])
                           for kind in kinds])


def compute(spec, params, rng, shared):
    from ...metrics import adjusted_rand

    p = params["params"]
    d, d_own, m = p["d"], p["d_own"], p["m"]
    sh = own_coords(d, d_own)[1]
    rows = []
    if spec["part"] == 1:
        k, n, runs = p["k"], spec["n"], max(p["starts"])
        for t, gen in enumerate(rng.spawn(p["trials"])):
            gdata, gstart = _streams(gen)
            X, y, theta, labels = draw_problem(m, n, d, d_own, k, spec["sep"], p["sigma"], gdata,
                                               p["shared_sep"])
            init = all_starts(p["inits"], runs, k, X, y, d_own, p, gstart)
            for arm in ARMS:  # the same starts for both arms
                res = _run(X, y, init, p, sh if arm == "shared" else None)
                for i, kind in enumerate(p["inits"]):
                    off = i * runs
                    for s in p["starts"]:
                        b = off + best_of_first(res.loss[off:], res.diverged[off:], s)
                        tot, e_sh, e_own = matched_errors(res.theta[b], theta, d_own)
                        ari = float(adjusted_rand(labels, res.labels[b]))
                        rows.append({"part": 1, "init": kind, "sep": spec["sep"], "n": n,
                                     "starts": s, "trial": t, "arm": arm, "ari": ari,
                                     "recovered": bool(ari == 1.0), "err": tot,
                                     "err_shared": e_sh, "err_own": e_own,
                                     "nonempty": int(np.unique(res.labels[b]).size),
                                     "iters": int(res.n_iter[b]),
                                     "converged": bool(res.converged[b]),
                                     "diverged": bool(res.diverged[b])})
    else:
        kt, kf, n = p["k_true"], spec["k_fit"], p["n2"]
        k_data = kf if p["part2_clusters"] == "k_fit" else kt
        for t, gen in enumerate(rng.spawn(p["trials2"])):
            gdata, gstart = _streams(gen)
            X, y, theta, labels = draw_problem(m, n, d, d_own, k_data, spec["sep"], p["sigma"],
                                               gdata)
            init = all_starts(p["inits"], 1, kf, X, y, d_own, p, gstart)
            for arm in ARMS:
                res = _run(X, y, init, p, sh if arm == "shared" else None)
                for b, kind in enumerate(p["inits"]):
                    used = int(np.unique(res.labels[b]).size)
                    rows.append({"part": 2, "init": kind, "sep": spec["sep"], "k_true": kt,
                                 "k_data": k_data, "k_fit": kf, "n": n, "trial": t, "arm": arm,
                                 "nonempty": used,
                                 "ari": float(adjusted_rand(labels, res.labels[b])),
                                 "outcome": outcome(used, kt), "iters": int(res.n_iter[b]),
                                 "converged": bool(res.converged[b]),
                                 "diverged": bool(res.diverged[b])})
    return pd.DataFrame(rows)


def outcome(nonempty, k_true):
    """``"empty"`` (the extra models took no machine), ``"split"`` or ``"merged"``."""
    return EMPTY if nonempty == k_true else (SPLIT if nonempty > k_true else MERGED)


# ------------------------------------------------------------------------------ measure, decide

def paired_part1(table):
    """Part 1 rows, one per (init, sep, n, starts, trial), the two arms side by side
    (``_shared``, ``_plain``)."""
    t = table[table["part"] == 1]
    cols = ["ari", "recovered", "err", "err_shared", "err_own", "nonempty", "iters",
            "converged"]
    keys = P1_KEYS + ["trial"]
    a, b = (t[t["arm"] == arm].set_index(keys)[cols].add_suffix("_" + arm) for arm in ARMS)
    return pd.concat([a, b], axis=1, join="inner").reset_index()


def _ratio_fit(num, den, confidence, n_boot, rng):
    """Ratio of means ``mean(num) / mean(den)`` with a paired percentile bootstrap interval
    (``None`` with fewer than 2 pairs or a zero denominator)."""
    if len(num) < 2 or not np.mean(den) > 0:
        return None
    v = np.column_stack([num, den])
    return bootstrap(v, lambda s: s[:, 0].mean() / s[:, 1].mean(), n_boot=n_boot,
                     confidence=confidence, rng=rng)


def _cell_name(init, sep, n, starts):
    return f"{init}_{sep:g}_{int(n)}_{int(starts)}"


def measure(table, params, rng, confidence=None):
    """``{"cells": part 1 per (init, sep, n, starts), "kfit": part 2 per (init, sep, k_fit, arm),
    "confidence"}``.

    Part 1: recovery counts of the paired 2 x 2 table (``n11`` both, ``n10`` sharing only, ``n01``
    plain only, ``n00`` neither), the mean paired error difference (sharing - plain) with its
    bootstrap interval at ``confidence`` (``rng(name)`` streams), means per arm, the fraction of
    runs that end with every machine on one model, the ratio of the shared-part errors over
    trials where both arms recover (prediction ``1/sqrt(k)``) and of the own parts (prediction
    1). Part 2: the count of ``empty``, ``split`` and ``merged`` runs per cell and arm."""
    p, mg = params["params"], params["margins"]
    conf = mg["confidence"] if confidence is None else confidence
    pairs = paired_part1(table)
    rows = []
    for (init, sep, n, s), g in pairs.groupby(P1_KEYS, sort=False):
        name = _cell_name(init, sep, n, s)
        a, b = g["recovered_shared"].to_numpy(bool), g["recovered_plain"].to_numpy(bool)
        diff = (g["err_shared"] - g["err_plain"]).to_numpy()
        fit = bootstrap(diff, n_boot=p["n_boot"], confidence=conf, rng=rng(f"err_{name}"))
        both = g[a & b]
        r_sh = _ratio_fit(both["err_shared_shared"].to_numpy(), both["err_shared_plain"].to_numpy(),
                          conf, p["n_boot"], rng(f"ratio_shared_{name}"))
        r_own = _ratio_fit(both["err_own_shared"].to_numpy(), both["err_own_plain"].to_numpy(),
                           conf, p["n_boot"], rng(f"ratio_own_{name}"))
        rows.append({
            "init": init, "sep": sep, "n": int(n), "starts": int(s), "trials": len(g),
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
    for (init, sep, kf, arm), g in t2.groupby(P2_KEYS + ["arm"], sort=False):
        krows.append({"init": init, "sep": sep, "k_true": int(g["k_true"].iloc[0]),
                      "k_data": int(g["k_data"].iloc[0]), "k_fit": int(kf), "arm": arm,
                      "runs": len(g), **{o: int((g["outcome"] == o).sum())
                                         for o in (EMPTY, SPLIT, MERGED)},
                      "ari1_empty": int(((g["outcome"] == EMPTY) & (g["ari"] == 1.0)).sum())})
    return {"cells": cells, "kfit": pd.DataFrame(krows), "confidence": conf}


def overall(statuses, good, bad):
    """A part's verdict from its cells' statuses (registered with version 2, before its data):
    holds when every cell is ``good``; not supported when more than half are ``bad``; holds
    with a caveat when none is ``bad`` and more than half are ``good``; inconclusive otherwise
    (no cells: inconclusive).

    >>> overall(["better", "better"], "better", "worse"), overall(["worse", "worse", "x"], "better", "worse")
    ('holds', 'not supported')
    >>> overall(["better", "better", "x"], "better", "worse"), overall(["better", "worse"], "better", "worse")
    ('holds with a caveat', 'inconclusive')
    """
    t, g, b = len(statuses), list(statuses).count(good), list(statuses).count(bad)
    if t and g == t:
        return HOLDS
    if b > t / 2:
        return NOT_SUPPORTED
    if b == 0 and g > t / 2:
        return CAVEAT
    return INCONCLUSIVE


def decide(meas, params):
    """The verdict from :func:`measure`'s cells, at the thresholds of ``params["margins"]``.

    Part 1, per (start kind, sep, n, starts) cell: ``better`` when the error difference's
    interval (sharing - plain) is entirely below 0 and the Newcombe paired interval of the
    recovery difference (sharing - plain, at ``confidence``) has its lower bound
    ``>= -rec_margin``; ``worse`` when the error interval is entirely above 0 or the recovery
    interval entirely below 0; else ``undetermined``.
    Part 2, per (start kind, sep2, k_fit) cell with sharing: the fraction of ``empty`` runs
    ``holds`` when its Wilson lower bound is ``>= empty_hold``, is ``refuted`` when its Wilson
    upper bound is ``< empty_refute``, else ``undetermined``.
    Each part's verdict is :func:`overall` of its cells (good: better / holds; bad: worse /
    refuted); the record's verdict is the weaker (:func:`combine`)."""
    mg = params["margins"]
    conf = mg["confidence"]
    st1, rec_lo = [], []
    for _, c in meas["cells"].iterrows():
        _, lo, hi = newcombe_paired(int(c["n11"]), int(c["n10"]), int(c["n01"]), int(c["n00"]),
                                    conf)
        rec_lo.append(float(lo))
        if c["diff_lo"] > 0 or hi < 0:
            st1.append(WORSE)
        elif c["diff_hi"] < 0 and lo >= -mg["rec_margin"]:
            st1.append(BETTER)
        else:
            st1.append(UNCLEAR)
    v1 = overall(st1, BETTER, WORSE)
    st2, fr2 = [], []
    kf = meas["kfit"]
    sh = kf[kf["arm"] == "shared"] if len(kf) else kf
    for _, c in sh.iterrows():
        lo, hi = (float(np.asarray(x).ravel()[0])
                  for x in wilson_interval(int(c[EMPTY]), int(c["runs"]), conf))
        fr2.append((c[EMPTY] / c["runs"], lo, hi))
        st2.append(HOLDS if lo >= mg["empty_hold"] else
                   REFUTED if hi < mg["empty_refute"] else UNCLEAR)
    v2 = overall(st2, HOLDS, REFUTED)
    return Decision(combine([v1, v2]), {
        "part1": v1, "part2": v2, "cell_status": st1, "rec_lo": rec_lo,
        "better": st1.count(BETTER), "worse": st1.count(WORSE), "cells": len(st1),
        "kfit_status": st2, "empty_fraction": fr2, "holds2": st2.count(HOLDS),
        "refuted2": st2.count(REFUTED), "cells2": len(st2)})


def _margin_values(params):
    """``[(key, value), ...]``: every neighbouring value of every margin."""
    mg = params["margins"]
    return [(k[: -len("_neighbours")], v) for k in mg if k.endswith("_neighbours") for v in mg[k]]


def hard_cells(measure_at, dec, params):
    """``(hard1, hard2, cells)``: which cells are hard (registered with version 2, before its
    data). A part-1 cell is hard when the plain arm recovers in at least
    :data:`HARD_PLAIN_RECOVERY` of its trials (its failures alone cannot decide the comparison)
    or its status changes at some neighbouring value of a margin; a part-2 cell when the empty
    fraction with sharing lies in :data:`HARD_EMPTY_RANGE` (not an all-or-nothing outcome) or its
    status changes at some neighbouring margin value. ``measure_at(confidence)`` is
    :func:`measure` of the table at that confidence; ``cells`` is ``Verdict.cells``."""
    from ..study import with_margin

    moved1 = np.zeros(len(dec.numbers["cell_status"]), bool)
    moved2 = np.zeros(len(dec.numbers["kfit_status"]), bool)
    for key, v in _margin_values(params):
        q = with_margin(params, key, v)
        other = decide(measure_at(q["margins"]["confidence"]), q).numbers
        moved1 |= np.array(other["cell_status"]) != np.array(dec.numbers["cell_status"])
        moved2 |= np.array(other["kfit_status"]) != np.array(dec.numbers["kfit_status"])
    cells = measure_at(params["margins"]["confidence"])["cells"]
    hard1 = (cells["rec_plain"].to_numpy() >= HARD_PLAIN_RECOVERY) | moved1 if len(cells) else moved1
    fr = np.array([f for f, _, _ in dec.numbers["empty_fraction"]])
    lo, hi = HARD_EMPTY_RANGE
    hard2 = ((fr >= lo) & (fr <= hi)) | moved2 if len(fr) else moved2
    total = len(hard1) + len(hard2)
    rule = WORDS.text("cells rule", plain=HARD_PLAIN_RECOVERY, lo=lo, hi=hi)
    return hard1, hard2, {"hard": int(hard1.sum() + hard2.sum()), "total": int(total),
                          "rule": rule}


# ------------------------------------------------------------------------------ analyze

def _p2_shared(meas):
    kf = meas["kfit"]
    return kf[kf["arm"] == "shared"].reset_index(drop=True) if len(kf) else kf


def scope(dec):
    nb = dec.numbers
    return WORDS.text("scope", part1=nb["part1"], better=nb["better"], cells=nb["cells"],
                      worse=nb["worse"], part2=nb["part2"], holds2=nb["holds2"],
                      cells2=nb["cells2"], refuted2=nb["refuted2"])


def _yes(flag):
    return WORDS.text("numbers.hard" if flag else "numbers.easy")


def _numbers(meas, dec, hard1, hard2):
    rows = []
    for (_, c), s, h in zip(meas["cells"].iterrows(), dec.numbers["cell_status"], hard1):
        rows.append({"part": WORDS.text("numbers.part1"), "start": c["init"],
                     "condition": WORDS.text("numbers.condition1", sep=c["sep"], n=int(c["n"]),
                                             starts=int(c["starts"])),
                     "recovery shared / plain": WORDS.text(
                         "numbers.recovery", rec_shared=c["rec_shared"], rec_plain=c["rec_plain"],
                         one_plain=c["one_model_plain"]),
                     "error shared / plain": WORDS.text(
                         "numbers.error", err_shared=c["err_shared"], err_plain=c["err_plain"]),
                     "difference or empty fraction [CI]": WORDS.text(
                         "numbers.difference", diff=c["diff"], lo=c["diff_lo"], hi=c["diff_hi"]),
                     "status": s, "hard": _yes(h)})
    kf = meas["kfit"]
    for (_, c), (f, lo, hi), s, h in zip(_p2_shared(meas).iterrows(),
                                         dec.numbers["empty_fraction"],
                                         dec.numbers["kfit_status"], hard2):
        pl = kf[(kf["arm"] == "plain") & (kf["init"] == c["init"]) & (kf["sep"] == c["sep"])
                & (kf["k_fit"] == c["k_fit"])].iloc[0]
        rows.append({"part": WORDS.text("numbers.part2"), "start": c["init"],
                     "condition": WORDS.text("numbers.condition2", sep=c["sep"],
                                             k_fit=int(c["k_fit"]), k_data=int(c["k_data"])),
                     "recovery shared / plain": WORDS.text(
                         "numbers.outcomes", empty=int(c[EMPTY]), split=int(c[SPLIT]),
                         merged=int(c[MERGED]), runs=int(c["runs"]), p_empty=int(pl[EMPTY]),
                         p_split=int(pl[SPLIT]), p_merged=int(pl[MERGED])),
                     "error shared / plain": "",
                     "difference or empty fraction [CI]": WORDS.text(
                         "numbers.empty", fraction=f, lo=lo, hi=hi),
                     "status": s, "hard": _yes(h)})
    return pd.DataFrame(rows)


def _summary(meas, dec, params, cells_count):
    p, mg = params["params"], params["margins"]
    cells, nb = meas["cells"], dec.numbers
    out = [WORDS.text("summary.setup", d=p["d"], d_shared=p["d"] - p["d_own"], d_own=p["d_own"],
                      m=p["m"], sigma=p["sigma"], lr=p["lr"], tol=p["tol"],
                      max_iter=p["max_iter"], inits=", ".join(p["inits"]),
                      pooled_noise=p["pooled_noise"], init_scale=p["init_scale"])]
    if p["shared_sep"] > 0:
        out.append(WORDS.text("summary.shared sep", shared_sep=p["shared_sep"]))
    st = np.array(nb["cell_status"])
    groups = []
    if len(cells):
        for (init, s), g in cells.groupby(["init", "starts"], sort=False):
            idx = g.index.to_numpy()
            groups.append(WORDS.text(
                "summary.part1 group", init=init, starts=int(s), better=int((st[idx] == BETTER).sum()),
                worse=int((st[idx] == WORSE).sum()), cells=len(idx),
                diff_min=g["diff"].min(), diff_max=g["diff"].max(),
                rec_plain_min=g["rec_plain"].min(), rec_plain_max=g["rec_plain"].max()))
    out.append(WORDS.text("summary.part1", k=p["k"], trials=p["trials"],
                          starts=", ".join(str(s) for s in p["starts"]), part1=nb["part1"],
                          better=nb["better"], worse=nb["worse"], cells=nb["cells"],
                          groups="; ".join(groups)))
    ok = cells[cells["both_recovered"] >= 2] if len(cells) else cells
    if len(ok):
        out.append(WORDS.text("summary.ratios", shared_min=ok["shared_part_ratio"].min(),
                              shared_max=ok["shared_part_ratio"].max(),
                              predicted=1 / np.sqrt(p["k"]), own_min=ok["own_part_ratio"].min(),
                              own_max=ok["own_part_ratio"].max(), cells=len(ok)))
    sh2 = _p2_shared(meas)
    parts = []
    if len(sh2):
        st2 = np.array(nb["kfit_status"])
        for init, g in sh2.groupby("init", sort=False):
            idx = g.index.to_numpy()
            parts.append(WORDS.text(
                "summary.part2 group", init=init, holds=int((st2[idx] == HOLDS).sum()),
                refuted=int((st2[idx] == REFUTED).sum()), cells=len(idx),
                empty=int(g[EMPTY].sum()), split=int(g[SPLIT].sum()),
                merged=int(g[MERGED].sum()), runs=int(g["runs"].sum())))
    out.append(WORDS.text("summary.part2", k_true=p["k_true"], n2=p["n2"],
                          trials2=p["trials2"], part2=nb["part2"], holds=nb["holds2"],
                          refuted=nb["refuted2"], cells=nb["cells2"],
                          empty_hold=mg["empty_hold"], empty_refute=mg["empty_refute"],
                          confidence=mg["confidence"], groups="; ".join(parts)))
    if p["part2_clusters"] == "k_fit":
        out.append(WORDS.text("summary.k_fit truth"))
    out.append(WORDS.text("summary.hard", hard=cells_count["hard"], total=cells_count["total"]))
    return " ".join(out)


def caveats(params, meas=None):
    p = params["params"]
    out = []
    if meas is not None and len(meas["cells"]):
        parts = [WORDS.text("caveats.plain fails kind", init=init, rec_min=g["rec_plain"].min(),
                            rec_max=g["rec_plain"].max(), one_plain=g["one_model_plain"].mean(),
                            one_shared=g["one_model_shared"].mean())
                 for init, g in meas["cells"].groupby("init", sort=False)]
        out.append(WORDS.text("caveats.plain fails", kinds="; ".join(parts)))
    return out + WORDS.items("caveats", pooled_noise=p["pooled_noise"])


def analyze(table, params, rng):
    memo = {}

    def measure_at(conf):  # the confidence changes the intervals; the margins only the decision
        if conf not in memo:
            memo[conf] = measure(table, params, rng, confidence=conf)
        return memo[conf]

    meas = measure_at(params["margins"]["confidence"])
    dec = decide(meas, params)
    hard1, hard2, cells_count = hard_cells(measure_at, dec, params)

    def verdict_at(q, key):
        return decide(measure_at(q["margins"]["confidence"]), q).verdict

    cells = meas["cells"].assign(status=dec.numbers["cell_status"], hard=hard1)
    kf = _p2_shared(meas)
    kfit = meas["kfit"]
    if len(kf):
        st = kf.assign(status=dec.numbers["kfit_status"], hard=hard2)[P2_KEYS + ["status", "hard"]]
        kfit = kfit.merge(st, on=P2_KEYS, how="left")
    tables = {"_cells.csv": cells, "_kfit.csv": kfit}
    return Verdict(dec.verdict, _numbers(meas, dec, hard1, hard2),
                   _summary(meas, dec, params, cells_count),
                   caveats=caveats(params, meas),
                   sensitivity=sensitivity_lines(WORDS, params, verdict_at), tables=tables,
                   scope=scope(dec), cells=cells_count)


# ------------------------------------------------------------------------------ figure

def figure(table, verdict, params):
    from matplotlib.figure import Figure

    cells = verdict.tables["_cells.csv"]
    kfit = verdict.tables["_kfit.csv"]
    fig = Figure(figsize=(13, 5))
    ax1, ax2 = fig.subplots(1, 2)
    x = np.arange(len(cells))
    kinds = list(dict.fromkeys(cells["init"])) if len(cells) else []
    for i, kind in enumerate(kinds):
        g = cells[cells["init"] == kind]
        xs = x[cells["init"].to_numpy() == kind]
        ax1.errorbar(xs, g["diff"], yerr=[g["diff"] - g["diff_lo"], g["diff_hi"] - g["diff"]],
                     fmt="o", color=f"C{i}", ms=4, capsize=2, label=f"{kind} start")
    ax1.axhline(0, color="k", lw=0.8)
    ax1.set_xticks(x)
    ax1.set_xticklabels([f"sep {s:g}, n {int(n)}\nstarts {int(r)}" for s, n, r in
                         zip(cells["sep"], cells["n"], cells["starts"])], fontsize=5, rotation=90)
    ax1.set_yscale("symlog", linthresh=0.05)
    ax1.set_ylabel("mean matched error, sharing - plain (paired, CI)")
    ax1.set_title("Part 1: error difference per cell (below 0: sharing better)", fontsize=8)
    ax1.legend(fontsize=7)
    sh = kfit[kfit["arm"] == "shared"] if len(kfit) else kfit
    if len(sh):
        xx = np.arange(len(sh))
        bottom = np.zeros(len(sh))
        for o, col in ((EMPTY, "C2"), (SPLIT, "C1"), (MERGED, "C3")):
            frac = (sh[o] / sh["runs"]).to_numpy()
            ax2.bar(xx, frac, bottom=bottom, color=col, label=o)
            bottom += frac
        ax2.set_xticks(xx)
        ax2.set_xticklabels([f"{i}\nsep {s:g}, k_fit {int(k)}" for i, s, k in
                             zip(sh["init"], sh["sep"], sh["k_fit"])], fontsize=5, rotation=90)
    ax2.set_ylabel("fraction of runs, with sharing")
    ax2.set_title("Part 2: extra models empty (= k_true non-empty), split or merged", fontsize=8)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="WS", order=100, paper="IFCA", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
