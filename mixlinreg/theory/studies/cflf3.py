"""Study CFLF3: the CFL paper's "permuted labels" experiment (Section 4, Figure 3 of the short
version), as an analogue on scikit-learn's 8 x 8 digits with a softmax model.

What is measured
----------------
Per seed (a unit): the 1797 images of :func:`sklearn.datasets.load_digits` (pixels / 16 and a
bias feature) are split at random into a test split (``test_share``) and a training pool, which
is dealt randomly and evenly to ``clients`` clients; the clients are assigned at random to
``clusters`` clusters of equal size, and cluster ``c`` draws a random permutation ``P_c`` of the
10 labels that its clients apply to their training labels and to the test split (the paper's
eq. (7): every client's test set is the test split with its cluster's labels). CFL
(:func:`mixlinreg.baselines.cfl`, ``loss="multinomial"``, full-batch local gradient steps) runs
from zero until every group is final; its ``callback`` gives every client's test accuracy after
every round (Figure 3, left). At each split the clients' updates are recomputed from the group's
model before the split round (``local_steps`` gradient steps of size ``lr`` on the client's loss,
:func:`mixlinreg.digits.softmax_loss_grad`; deterministic, so they are the updates CFL clustered,
and rule (6) on them is checked to give CFL's split) and their pairwise cosine similarities are
recorded, within and across the true clusters (Figure 3, right); after the run the same is done
at each final group's model.

The verdict (:func:`decide`, pure, on what :func:`measure` returns)
------------------------------------------------------------------
Four rules, the claim the weakest of them:

(a) CFL splits only after FL stalls: the mean over seeds of the change of the mean client
    accuracy over the ``plateau_window`` rounds up to the first split (max - min), bootstrap
    interval: ``hi <= plateau_margin`` holds, ``lo > plateau_margin`` not supported.
(c) "more than doubled": final over federated (plateau) accuracy, ratio of the means over seeds,
    bootstrap interval: ``lo > ratio_threshold`` holds, ``hi <= ratio_threshold`` not supported.
(d) the final clustering is the true one: seeds with ARI = 1, Wilson interval:
    ``lo >= rate_target`` holds, ``hi < rate_floor`` not supported.
(e) a gap at the splits: seeds where at every split each within-cluster similarity exceeds every
    cross-cluster one, the same Wilson rule.

Otherwise inconclusive; (c) and (d) are inconclusive too when a run did not end with every
group final within ``max_rounds`` (the state "after the final clustering" was not reached). A
claim that holds gets a caveat when (b) the plateau is not the
analogue's single-model level (the paper's "around 20%" is CIFAR-10's with a CNN and cannot
transfer; the analogue predicts plateau = ceiling x final accuracy, with the *ceiling* the best
accuracy one model can reach on the 4 permutations of the true digit; the interval of the mean
ratio must lie in ``[1 - ceiling_tol, 1 + ceiling_tol]``), when not every client more than
doubled (Wilson upper bound of the share of seeds in which every client did below
``all_share``), or when the final within-cluster similarity is not "close to zero" (its interval
outside ``[-near_zero, near_zero]``).

Config: ``mixlinreg/configs/studies/CFLF3.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...baselines import cfl, cosine_similarities, split_by_similarity
from ...config import Spec
from ...digits import softmax_loss_grad
from ...metrics import adjusted_rand
from ...stats import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, bootstrap, wilson_interval
from ..study import Decision, Study, Verdict, combine
from ..words import sensitivity_lines, words

#: the study's prose: cflf3.md beside this module
WORDS = words(__file__)

N_CLASSES = 10
_POS = dict(low=1)
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "seeds": Spec("int", low=2), "clients": Spec("int", low=4),
        "clusters": Spec("int", low=2, high=N_CLASSES), "test_share": Spec("float", **_OPEN01),
        "lr": Spec("float", low=0, open="low"), "local_steps": Spec("int", **_POS),
        "l2": Spec("float", low=0), "eps1": Spec("float", low=0, open="low"),
        "eps2": Spec("float", low=0, open="low"), "max_rounds": Spec("int", **_POS),
        "plateau_window": Spec("int", **_POS), "n_boot": Spec("int", low=100),
    },
    "margins": {
        "plateau_margin": Spec("float", low=0, high=1, open="low"),
        "plateau_margin_neighbours": Spec("list[float]", low=0, high=1, open="low"),
        "ratio_threshold": Spec("float", low=1),
        "ratio_threshold_neighbours": Spec("list[float]", low=1),
        "ceiling_tol": Spec("float", **_OPEN01),
        "ceiling_tol_neighbours": Spec("list[float]", **_OPEN01),
        "rate_target": Spec("float", **_OPEN01),
        "rate_target_neighbours": Spec("list[float]", **_OPEN01),
        "rate_floor": Spec("float", **_OPEN01),
        "rate_floor_neighbours": Spec("list[float]", **_OPEN01),
        "near_zero": Spec("float", low=0, high=1, open="low"),
        "near_zero_neighbours": Spec("list[float]", low=0, high=1, open="low"),
        "all_share": Spec("float", low=0, high=1, open="low"),
        "all_share_neighbours": Spec("list[float]", low=0, high=1, open="low"),
    },
}
#: the margins that have neighbours, with the words of their sensitivity lines (cflf3.md)
MARGINS = WORDS.labels("sensitivity")
N_IMAGES = 1797  # sklearn's digits


# ------------------------------------------------------------------------------ units


def _sizes(p):
    """``(n_test, n per client)`` of the config, checked."""
    n_test = int(round(p["test_share"] * N_IMAGES))
    if not 1 <= n_test <= N_IMAGES - p["clients"]:
        raise ValueError(f"study CFLF3: params.test_share must leave at least 1 test image and 1 "
                         f"training image per client (n_test in [1, {N_IMAGES - p['clients']}]), "
                         f"got test_share={p['test_share']!r} (n_test = {n_test})")
    return n_test, (N_IMAGES - n_test) // p["clients"]


def units(params):
    """One unit per seed; cross-field rules of the config checked (clients divisible into
    clusters of at least 2, a window shorter than the run)."""
    p = params["params"]
    if p["clients"] % p["clusters"] or p["clients"] // p["clusters"] < 2:
        raise ValueError(f"study CFLF3: params.clients must be a multiple of params.clusters with "
                         f"at least 2 clients per cluster, got clients={p['clients']} and "
                         f"clusters={p['clusters']}")
    if p["plateau_window"] >= p["max_rounds"]:
        raise ValueError(f"study CFLF3: params.plateau_window must be in [1, max_rounds - 1] = "
                         f"[1, {p['max_rounds'] - 1}], got {p['plateau_window']}")
    _sizes(p)
    return [(f"seed{s:03d}", {"seed": s}) for s in range(p["seeds"])]


def make_clients(p, rng):
    """The permuted-label digits of one seed (see the module docstring).

    Returns
    -------
    dict
        ``X`` (m, n, 65), ``y`` (m, n) permuted labels, ``labels`` (m,) true clusters,
        ``X_test`` (n_test, 65), ``y_test`` (k, n_test) each cluster's permuted test labels,
        ``perms`` (k, 10), ``digits_test`` (n_test,) the true digits.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = np.concatenate([digits.data / 16.0, np.ones((len(digits.data), 1))], axis=1)
    target = digits.target.astype(np.int64)
    n_test, n = _sizes(p)
    m, k = p["clients"], p["clusters"]
    order = rng.permutation(len(X))
    test, train = order[:n_test], order[n_test:n_test + m * n].reshape(m, n)
    labels = rng.permutation(np.repeat(np.arange(k), m // k))
    perms = np.stack([rng.permutation(N_CLASSES) for _ in range(k)])
    return {"X": X[train], "y": perms[labels[:, None], target[train]], "labels": labels,
            "X_test": X[test], "y_test": perms[:, target[test]], "perms": perms,
            "digits_test": target[test]}


def single_model_ceiling(perms, digits_test):
    """The best mean test accuracy one model can reach over equal clusters with label
    permutations ``perms`` (k, C), given the true digit of each test image: it predicts, per
    digit, the label most clusters give it, right for that share of the clients.

    >>> single_model_ceiling(np.array([[0, 1], [1, 0]]), np.array([0, 1]))
    0.5
    """
    perms = np.asarray(perms)
    k, C = perms.shape
    share = np.array([np.bincount(perms[:, c], minlength=C).max() for c in range(C)]) / k
    return float(share[np.asarray(digits_test)].mean())


class _Tracker:
    """``cfl``'s callback: every client's test accuracy after every round, and each split
    group's model before its split round."""

    def __init__(self, data, init):
        self.data, self.acc, self.before = data, [], {}
        self.prev = {0: init}

    def __call__(self, rnd, groups):
        d = self.data
        acc = np.empty(len(d["labels"]))
        now = {}
        for node, machines, W in groups:
            hits = np.argmax(d["X_test"] @ W, axis=1)[None, :] == d["y_test"]  # (k, n_test)
            acc[machines] = hits.mean(axis=1)[d["labels"][machines]]
            now[node] = W
        for node in self.prev.keys() - now.keys():  # split in this round: its model before it
            self.before[node] = self.prev[node]
        self.prev = now
        self.acc.append(acc)


def client_updates(W, X, y, p):
    """Updates ``(g, d C)`` of the clients with data ``X`` (g, n, D), ``y`` (g, n) from the group
    model ``W`` (D, C): ``local_steps`` gradient steps of size ``lr`` on each client's loss."""
    T = np.broadcast_to(W, (len(X),) + W.shape).copy()
    for _ in range(p["local_steps"]):
        T -= p["lr"] * softmax_loss_grad(T, X, y, p["l2"])[1]
    return (T - W).reshape(len(X), -1)


def _pairs(S, lab):
    """Upper-triangle similarities of ``S`` and whether each pair shares a true cluster."""
    i, j = np.triu_indices(len(lab), 1)
    return S[i, j], lab[i] == lab[j]


def _split_rows(data, res, tracker, p, seed):
    """One row per split (similarities at it) and one per client pair (the figure's dots)."""
    hist = res.extra["history"]
    rows, pairs = [], []
    for idx, (rnd, node, sa, sb) in enumerate(res.extra["splits"], start=1):
        members = np.sort(np.concatenate([sa, sb]))
        lab = data["labels"][members]
        S = cosine_similarities(client_updates(tracker.before[node], data["X"][members],
                                               data["y"][members], p))
        pa, _ = split_by_similarity(S)
        reproduced = sorted(members[pa].tolist()) in (sa.tolist(), sb.tolist())
        sims, same = _pairs(S, lab)
        side = np.isin(members, sa)
        pure = all(len(set(side[lab == c])) == 1 for c in np.unique(lab))
        within, cross = sims[same], sims[~same]
        gap = (within.min() - cross.max()) if within.size and cross.size else np.nan
        rows.append({"kind": "split", "seed": seed, "split": idx, "round": rnd, "node": node,
                     "size_a": len(sa), "size_b": len(sb), "pure": int(pure),
                     "reproduced": int(reproduced), "gap": gap,
                     "within_mean": within.mean() if within.size else np.nan,
                     "cross_mean": cross.mean() if cross.size else np.nan,
                     "max_norm": hist["max_update_norm"][rnd - 1],
                     "mean_norm": hist["mean_update_norm"][rnd - 1]})
        pairs += [{"kind": "pair", "seed": seed, "split": idx, "round": rnd, "same": int(s),
                   "sim": v} for v, s in zip(sims, same)]
    return rows, pairs


def _final_pairs(data, res, p, seed):
    """Client pairs of every final group of at least 2 clients, at the group's final model."""
    out = []
    for j, W in enumerate(res.theta):
        members = np.flatnonzero(res.labels == j)
        if len(members) < 2:
            continue
        S = cosine_similarities(client_updates(W, data["X"][members], data["y"][members], p))
        sims, same = _pairs(S, data["labels"][members])
        out += [{"kind": "pair", "seed": seed, "split": 0, "round": res.n_rounds,
                 "same": int(s), "sim": v} for v, s in zip(sims, same)]
    return out


def _seed_row(data, res, acc, p, seed, final_pairs):
    """The per-seed summary: plateau (federated) and final accuracy, the stall, recovery."""
    splits = res.extra["splits"]
    first = min((s[0] for s in splits), default=None)
    mean_acc = acc.mean(axis=1)
    plateau = acc[first - 1] if first else np.full(acc.shape[1], np.nan)
    window = (float(np.ptp(mean_acc[max(0, first - 1 - p["plateau_window"]):first]))
              if first else np.nan)
    within = [r["sim"] for r in final_pairs if r["same"] == 1]
    return {"kind": "seed", "seed": seed, "n_rounds": res.n_rounds,
            "converged": int(res.extra["converged"]), "n_splits": len(splits),
            "first_split": first if first else np.nan, "window_change": window,
            "plateau_acc": float(plateau.mean()), "final_acc": float(acc[-1].mean()),
            "min_client_ratio": float(np.min(acc[-1] / plateau)) if first else np.nan,
            "ceiling": single_model_ceiling(data["perms"], data["digits_test"]),
            "ari": float(adjusted_rand(data["labels"], res.labels)),
            "n_groups": len(res.theta),
            "final_within": float(np.mean(within)) if within else np.nan,
            "final_max_norm": float(res.extra["history"]["max_update_norm"][-1])}


def compute(spec, params, rng, shared):
    p = params["params"]
    seed = spec["seed"]
    data = make_clients(p, rng)
    init = np.zeros((data["X"].shape[-1], N_CLASSES))
    tracker = _Tracker(data, init)
    res = cfl(data["X"], data["y"], loss="multinomial", init=init, lr=p["lr"], eps1=p["eps1"],
              eps2=p["eps2"], local_steps=p["local_steps"], l2=p["l2"],
              max_rounds=p["max_rounds"], callback=tracker)
    acc = np.array(tracker.acc)  # (rounds, m)
    split_rows, pairs = _split_rows(data, res, tracker, p, seed)
    final_pairs = _final_pairs(data, res, p, seed)
    k = p["clusters"]
    rounds = np.arange(1, len(acc) + 1)
    curve = pd.DataFrame({"kind": "curve", "seed": seed, "round": np.repeat(rounds, k),
                          "cluster": np.tile(np.arange(k), len(acc)),
                          "acc": np.stack([acc[:, data["labels"] == c].mean(axis=1)
                                           for c in range(k)], axis=1).ravel()})
    seed_row = _seed_row(data, res, acc, p, seed, final_pairs)
    return pd.concat([pd.DataFrame([seed_row] + _cluster_rows(data, acc, seed_row, seed)
                                   + split_rows + pairs + final_pairs), curve], ignore_index=True)


def label_share(perms, digits_test):
    """Per cluster: the mean share of clusters (itself included) that give a test image's digit
    the cluster's label; 1 / k when no two permutations agree.

    >>> label_share(np.array([[0, 1], [0, 1], [1, 0]]), np.array([0, 1])).round(3).tolist()
    [0.667, 0.667, 0.333]
    """
    perms = np.asarray(perms)
    same = perms[:, None, :] == perms[None, :, :]  # (k, k, C): clusters c, c' agree on digit t
    return same.sum(axis=1)[:, np.asarray(digits_test)].mean(axis=1) / len(perms)


def _cluster_rows(data, acc, seed_row, seed):
    """Per true cluster: its label share and its clients' mean accuracy at the first split and
    at the end."""
    first = seed_row["first_split"]
    share = label_share(data["perms"], data["digits_test"])
    rows = []
    for c, sh in enumerate(share):
        sel = data["labels"] == c
        rows.append({"kind": "cluster", "seed": seed, "cluster": c, "share": float(sh),
                     "plateau_acc": float(acc[int(first) - 1, sel].mean())
                     if np.isfinite(first) else np.nan,
                     "final_acc": float(acc[-1, sel].mean())})
    return rows


# ------------------------------------------------------------------------------ decision


def _mean_fit(values, n_boot, rng, statistic=np.mean):
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return None
    return bootstrap(values, statistic, n_boot=n_boot, rng=rng)


def measure(table, p, rng):
    """The measurements :func:`decide` reads, from the units' rows: bootstrap Fits over seeds
    (``None`` with fewer than 2 seeds to use) and counts ``(successes, trials)`` over seeds."""
    s = table[table["kind"] == "seed"]
    nb = p["n_boot"]
    split = s[s["first_split"].notna()]
    sp = table[table["kind"] == "split"]
    gap_ok = sp.groupby("seed")["gap"].apply(lambda g: bool((g > 0).all()))
    ratio = _mean_fit(split[["final_acc", "plateau_acc"]].to_numpy(), nb, rng("ratio"),
                      lambda v: v[:, 0].mean() / v[:, 1].mean())
    return {
        "seeds": len(s), "seeds_split": len(split),
        "stall": _mean_fit(split["window_change"], nb, rng("stall")),
        "ratio": ratio,
        "min_client_ratio": s["min_client_ratio"].to_numpy(dtype=float),
        "ceiling_ratio": _mean_fit(split["plateau_acc"] / (split["ceiling"] * split["final_acc"]),
                                   nb, rng("ceiling_ratio")),
        "recovered": (int((s["ari"] >= 1 - 1e-12).sum()), len(s)),
        "gap": (int(sum(bool(gap_ok.get(seed, False)) for seed in s["seed"])), len(s)),
        "final_within": _mean_fit(s["final_within"].dropna(), nb, rng("final_within")),
        # descriptive
        "plateau_acc": _mean_fit(split["plateau_acc"], nb, rng("plateau")),
        "final_acc": _mean_fit(s["final_acc"], nb, rng("final")),
        "ceiling": _mean_fit(s["ceiling"], nb, rng("ceiling")),
        "first_split": split["first_split"].to_numpy(dtype=float),
        "split_within": float(sp["within_mean"].mean()),
        "split_cross": float(sp["cross_mean"].mean()),
        "reproduced": (int((sp["reproduced"] == 1).sum()), len(sp)),
        "pure": (int((sp["pure"] == 1).sum()), len(sp)),
        "ari_mean": float(s["ari"].mean()), "converged": int((s["converged"] == 1).sum()),
        "clusters": table.loc[table["kind"] == "cluster",
                              ["seed", "cluster", "share", "plateau_acc", "final_acc"]],
    }


def _rate_rule(counts, target, floor):
    k, n = counts
    if n < 1:
        return INCONCLUSIVE, np.nan, np.nan
    lo, hi = (float(v) for v in wilson_interval(k, n))
    if lo >= target:
        return HOLDS, lo, hi
    return (NOT_SUPPORTED if hi < floor else INCONCLUSIVE), lo, hi


def _interval_rule(fit, holds, fails):
    """``holds(fit)`` -> holds, ``fails(fit)`` -> not supported, else (or no fit) inconclusive."""
    if fit is None:
        return INCONCLUSIVE
    return HOLDS if holds(fit) else NOT_SUPPORTED if fails(fit) else INCONCLUSIVE


def decide(m, params) -> Decision:
    """The verdict from the measurements ``m`` (:func:`measure`: Fits ``stall``, ``ratio``,
    ``ceiling_ratio``, ``final_within`` or ``None``; counts ``recovered`` and ``gap``;
    ``min_client_ratio``, each seed's smallest final / federated accuracy of a client, NaN
    without a split; ``seeds`` and ``converged``, the runs and those that ended with every group
    final) and ``params["margins"]``; pure. The rules are the module docstring's; a client "more
    than doubled" when its ratio exceeds ``ratio_threshold``; a run that did not finish within
    ``max_rounds`` never reached the final clustering, so (c) and (d) are then inconclusive."""
    mg = params["margins"]
    pm, rt, tol = mg["plateau_margin"], mg["ratio_threshold"], mg["ceiling_tol"]
    target, floor, nz, share = mg["rate_target"], mg["rate_floor"], mg["near_zero"], mg["all_share"]
    v_stall = _interval_rule(m["stall"], lambda f: f.hi <= pm, lambda f: f.lo > pm)
    v_double = _interval_rule(m["ratio"], lambda f: f.lo > rt, lambda f: f.hi <= rt)
    v_rec, rec_lo, rec_hi = _rate_rule(m["recovered"], target, floor)
    unfinished = int(m["seeds"]) - int(m["converged"])
    if unfinished:  # the final clustering was not reached in every run: (c), (d) undecided
        v_double = v_rec = INCONCLUSIVE
    v_gap, gap_lo, gap_hi = _rate_rule(m["gap"], target, floor)
    cr, fw = m["ceiling_ratio"], m["final_within"]
    off_ceiling = cr is None or cr.lo < 1 - tol or cr.hi > 1 + tol
    mcr = np.asarray(m["min_client_ratio"], dtype=float)
    all_doubled = (int(np.sum(np.nan_to_num(mcr, nan=-np.inf) > rt)), int(mcr.size))
    all_hi = float(wilson_interval(*all_doubled)[1]) if mcr.size else 0.0
    not_all = all_hi < share
    not_zero = fw is None or fw.lo < -nz or fw.hi > nz
    verdict = combine([v_stall, v_double, v_rec, v_gap])
    if verdict == HOLDS and (off_ceiling or not_all or not_zero):
        verdict = CAVEAT
    return Decision(verdict, {
        "plateau_margin": pm, "ratio_threshold": rt, "ceiling_tol": tol, "rate_target": target,
        "rate_floor": floor, "near_zero": nz, "all_share": share,
        "verdict stall": v_stall, "verdict doubled": v_double, "verdict recovery": v_rec,
        "verdict gap": v_gap, "unfinished runs": unfinished, "recovery lo": rec_lo,
        "recovery hi": rec_hi, "gap lo": gap_lo, "gap hi": gap_hi, "all doubled": all_doubled,
        "all doubled hi": all_hi, "off ceiling": off_ceiling, "not all doubled": not_all,
        "final within not near zero": not_zero})


def sensitivity(m, params):
    """One line per margin: :func:`decide`'s verdict at its neighbours."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(m, q).verdict)


# ------------------------------------------------------------------------------ analysis


def _fmt(fit, digits=3):
    return "n/a (fewer than 2 seeds)" if fit is None else fit.fmt(digits)


def _count(counts):
    k, n = counts
    if n < 1:
        return "0/0"
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} [{float(lo):.3g}, {float(hi):.3g}]"


def _row(part, quantity, estimate, rule, verdict=""):
    return {"part": part, "quantity": quantity, "estimate [95% CI]": estimate, "rule": rule,
            "verdict": verdict}


def _flag(caveat):
    return CAVEAT if caveat else HOLDS


def _numbers(m, p, d):
    n = d.numbers
    fs = m["first_split"]
    first = (f"median {np.median(fs):.0f} (range {fs.min():.0f}-{fs.max():.0f})" if len(fs)
             else "no split")
    rows = [
        _row("(a)", f"change of mean accuracy over the {p['plateau_window']} rounds up to the "
             "first split", _fmt(m["stall"]), f"hi <= {n['plateau_margin']:g}",
             n["verdict stall"]),
        _row("(a)", "round of the first split", first, "descriptive (paper: round 50)"),
        _row("(b)", "federated (plateau) accuracy at the first split", _fmt(m["plateau_acc"]),
             "descriptive (paper: around 20% on CIFAR-10 with a CNN; does not transfer)"),
        _row("(b)", "single-model ceiling (4 permutations of the true digit)",
             _fmt(m["ceiling"]), "descriptive"),
        _row("(b)", "plateau / (ceiling x final accuracy)", _fmt(m["ceiling_ratio"]),
             f"within [{1 - n['ceiling_tol']:g}, {1 + n['ceiling_tol']:g}], else a caveat",
             _flag(n["off ceiling"])),
        _row("(c)", "final accuracy (all groups final)", _fmt(m["final_acc"]),
             "descriptive (paper: close to 60%)"),
        _row("(c)", "final / federated accuracy (ratio of means)", _fmt(m["ratio"]),
             f"lo > {n['ratio_threshold']:g}", n["verdict doubled"]),
        _row("(c)", "seeds in which every client more than doubled", _count(n["all doubled"]),
             f"hi >= {n['all_share']:g}, else a caveat", _flag(n["not all doubled"])),
        _row("(d)", "seeds recovering the 4 clusters exactly (ARI = 1)", _count(m["recovered"]),
             f"lo >= {n['rate_target']:g}; hi < {n['rate_floor']:g} not supported",
             n["verdict recovery"]),
        _row("(e)", "seeds with a gap at every split (min within > max across)",
             _count(m["gap"]), f"lo >= {n['rate_target']:g}; hi < {n['rate_floor']:g} not "
             "supported", n["verdict gap"]),
        _row("(e)", "similarity at the splits, within / across clusters (mean)",
             f"{m['split_within']:.3g} / {m['split_cross']:.3g}", "descriptive"),
        _row("(e)", "within-cluster similarity after the final clustering",
             _fmt(m["final_within"]), f"within [-{n['near_zero']:g}, {n['near_zero']:g}], else "
             f"a caveat (full batch predicts -1/({p['clients'] // p['clusters']} - 1))",
             _flag(n["final within not near zero"])),
        _row("(e)", "splits that rule (6) on the recomputed updates reproduces",
             f"{m['reproduced'][0]}/{m['reproduced'][1]}", "check of the recomputation"),
    ]
    return pd.DataFrame(rows)


def _scope(m, d):
    """Where the verdict differs by condition: the clusters whose labels other clusters share."""
    cl = m["clusters"].dropna()
    rt = d.numbers["ratio_threshold"]
    if d.numbers["verdict doubled"] != HOLDS or not len(cl):
        return ""
    below = (cl["final_acc"] / cl["plateau_acc"]).to_numpy() <= rt
    if not below.any():
        return ""
    share = cl["share"].to_numpy()
    return WORDS.text("scope", ratio=_fmt(m["ratio"]), doubled=int((~below).sum()),
                      clusters=len(cl), below=int(below.sum()),
                      share_below=share[below].mean(), share_rest=share[~below].mean())


def _summary(m, p, d):
    n = d.numbers
    fs = m["first_split"]
    out = []
    if n["unfinished runs"]:
        out.append(WORDS.text("summary.unfinished", unfinished=n["unfinished runs"],
                              seeds=m["seeds"], max_rounds=p["max_rounds"]))
    out.append(WORDS.text("summary.first split", first=np.median(fs), stall=_fmt(m["stall"]),
                          window=p["plateau_window"], verdict_stall=n["verdict stall"],
                          plateau_margin=n["plateau_margin"])
               if len(fs) else WORDS.text("summary.no split"))
    out.append(WORDS.text(
        "summary", plateau_acc=_fmt(m["plateau_acc"]), ceiling=_fmt(m["ceiling"]),
        ceiling_ratio=_fmt(m["ceiling_ratio"]), final_acc=_fmt(m["final_acc"]),
        ratio=_fmt(m["ratio"]), verdict_doubled=n["verdict doubled"],
        ratio_threshold=n["ratio_threshold"], all_doubled=_count(n["all doubled"]),
        recovered=_count(m["recovered"]), verdict_recovery=n["verdict recovery"],
        gap=_count(m["gap"]), verdict_gap=n["verdict gap"], split_within=m["split_within"],
        split_cross=m["split_cross"], final_within=_fmt(m["final_within"]),
        predicted=_predicted_within(p), group=p["clients"] // p["clusters"]))
    return " ".join(out)


def _predicted_within(p):
    """Mean pairwise cosine of ``g`` equal-norm vectors that sum to zero: ``-1/(g - 1)``."""
    return -1.0 / (p["clients"] // p["clusters"] - 1)


def _caveats(m, p):
    n_test, n = _sizes(p)
    return WORDS.items("caveats", n=n, n_test=n_test, l2=p["l2"], local_steps=p["local_steps"],
                       lr=p["lr"], eps1=p["eps1"], eps2=p["eps2"], converged=m["converged"],
                       seeds=m["seeds"], max_rounds=p["max_rounds"],
                       reproduced=m["reproduced"][0], splits=m["reproduced"][1])


def analyze(table, params, rng):
    p = params["params"]
    m = measure(table, p, rng)
    d = decide(m, params)
    return Verdict(d.verdict, _numbers(m, p, d), _summary(m, p, d), caveats=_caveats(m, p),
                   sensitivity=sensitivity(m, params), scope=_scope(m, d))


# ------------------------------------------------------------------------------ figure


def _panel_accuracy(ax, table):
    """Figure 3 left: the first seed's accuracy per cluster against rounds, splits marked."""
    seed = int(table.loc[table["kind"] == "seed", "seed"].min())
    cur = table[(table["kind"] == "curve") & (table["seed"] == seed)]
    for c, g in cur.groupby("cluster"):
        ax.plot(g["round"], g["acc"], lw=1.2, label=f"cluster {int(c)}")
    for r in sorted(set(table.loc[(table["kind"] == "split") & (table["seed"] == seed),
                                  "round"])):
        ax.axvline(r, color="grey", ls=":", lw=1)
    ax.set_xlabel("communication round")
    ax.set_ylabel("client test accuracy (cluster mean)")
    ax.set_ylim(0, 1)
    ax.set_title(f"seed {seed}: accuracy, splits dotted", fontsize=9)
    ax.legend(fontsize=7)


def _panel_similarity(ax, table):
    """Figure 3 right: pairwise similarities at each split (by order) and after the last."""
    pr = table[table["kind"] == "pair"]
    gen = np.random.default_rng(0)  # jitter only
    n_split = int(pr["split"].max()) if len(pr) else 0
    pos = {s: s for s in range(1, n_split + 1)}
    pos[0] = n_split + 1
    for (split, same), g in pr.groupby(["split", "same"]):
        final = split == 0
        color = "grey" if final and same else "tab:blue" if same else "tab:orange"
        x = pos[int(split)] + gen.uniform(-0.25, 0.25, len(g))
        ax.scatter(x, g["sim"], s=4, alpha=0.35, color=color, lw=0)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(list(pos.values()), [f"split {s}" for s in range(1, n_split + 1)] + ["final"])
    ax.set_ylabel("cosine similarity of client updates")
    ax.set_title("within (blue) / across (orange) clusters; final within (grey)", fontsize=9)


def _panel_ratio(ax, table, params):
    """Final / federated accuracy per seed against the single-model ceiling."""
    s = table[(table["kind"] == "seed") & table["first_split"].notna()]
    ax.scatter(s["ceiling"], s["final_acc"] / s["plateau_acc"], s=14, label="seeds")
    xs = np.linspace(0.25, max(0.6, float(s["ceiling"].max()) if len(s) else 0.6), 50)
    ax.plot(xs, 1 / xs, "k--", lw=0.8, label="1 / ceiling")
    ax.axhline(params["margins"]["ratio_threshold"], color="tab:red", lw=0.8,
               label="more than doubled")
    ax.set_xlabel("single-model ceiling")
    ax.set_ylabel("final / federated accuracy")
    ax.set_title("per seed: the ratio against the analogue's 1 / ceiling", fontsize=9)
    ax.legend(fontsize=7)


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 4.2), layout="constrained")
    axes = fig.subplots(1, 3)
    _panel_accuracy(axes[0], table)
    _panel_similarity(axes[1], table)
    _panel_ratio(axes[2], table, params)
    fig.suptitle("CFL on permuted-label 8x8 digits (analogue of the CFL paper's Figure 3, not "
                 "CIFAR-10)", fontsize=10)
    return fig


STUDY = Study(
    id="CFLF3", order=240, paper="CFL", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
