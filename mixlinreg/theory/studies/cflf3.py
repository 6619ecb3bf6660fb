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
at each final group's model. The reference run (version 2): plain FL (FedAvg over all clients, the
same local steps) continued from the federated model at the first split for ``continue_rounds``
more rounds without splitting; its mean client test accuracy at the end against the one at the
split is the gain FL still had (a paired comparison in each seed).

The verdict (:func:`decide`, pure, on what :func:`measure` returns)
------------------------------------------------------------------
Four rules, the claim the weakest of them:

(a) CFL splits only after FL stalls (version 2): the mean over seeds of the reference run's gain
    (mean client test accuracy after ``continue_rounds`` more rounds of plain FL minus the one at
    the first split), bootstrap interval, against the threshold :func:`stall_threshold`
    ``= stall_se * 0.5 / sqrt(n_test)`` (``stall_se`` binomial standard errors of a test accuracy
    on the ``n_test`` test images, at their largest, p = 1/2): ``hi <=`` it holds, ``lo >`` it not
    supported. CFL's trigger (the mean update norm below ``eps1``) does not use the accuracy and
    does not bound what further rounds gain. Version 1's rule, the change over the
    ``plateau_window`` rounds before the split, is reported as descriptive: the trigger implies it.
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
ratio must lie in ``[1 - tol, 1 + tol]`` with ``tol`` from :func:`ceiling_tolerance`), when not
every client more than doubled (Wilson upper bound of the share of seeds in which every client
did below ``all_share``), or when the final within-cluster similarity is not "close to zero" (its
interval outside the band of :func:`near_zero_band`).

The verdict's cells (``Verdict.cells``, :func:`count_cells`): the 7 checks it judges (rules (a),
(c), (d), (e) and the caveat checks (b), every client doubled, near zero); a check is hard when
its threshold lies strictly inside the range that its quantity can take by construction.

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
        "plateau_window": Spec("int", **_POS), "continue_rounds": Spec("int", **_POS),
        "n_boot": Spec("int", low=100),
    },
    "margins": {
        "stall_se": Spec("float", low=0, open="low"),
        "stall_se_neighbours": Spec("list[float]", low=0, open="low"),
        "ratio_threshold": Spec("float", low=1),
        "ratio_threshold_neighbours": Spec("list[float]", low=1),
        "ceiling_frac": Spec("float", **_OPEN01),
        "ceiling_frac_neighbours": Spec("list[float]", **_OPEN01),
        "rate_target": Spec("float", **_OPEN01),
        "rate_target_neighbours": Spec("list[float]", **_OPEN01),
        "rate_floor": Spec("float", **_OPEN01),
        "rate_floor_neighbours": Spec("list[float]", **_OPEN01),
        "near_zero_z": Spec("float", low=0, open="low"),
        "near_zero_z_neighbours": Spec("list[float]", low=0, open="low"),
        "all_share": Spec("float", low=0, high=1, open="low"),
        "all_share_neighbours": Spec("list[float]", low=0, high=1, open="low"),
    },
}
#: the margins that have neighbours, with the words of their sensitivity lines (cflf3.md)
MARGINS = WORDS.labels("sensitivity")
N_IMAGES = 1797  # sklearn's digits
N_FEATURES = 65  # 64 pixels and a bias


# ------------------------------------------------------------------------------ units


def _sizes(p):
    """``(n_test, n per client)`` of the config, checked."""
    n_test = int(round(p["test_share"] * N_IMAGES))
    if not 1 <= n_test <= N_IMAGES - p["clients"]:
        raise ValueError(f"study CFLF3: params.test_share must leave at least 1 test image and 1 "
                         f"training image per client (n_test in [1, {N_IMAGES - p['clients']}]), "
                         f"got test_share={p['test_share']!r} (n_test = {n_test})")
    return n_test, (N_IMAGES - n_test) // p["clients"]


def stall_threshold(stall_se, n_test):
    """Rule (a)'s threshold on FL's remaining gain: ``stall_se`` binomial standard errors of one
    test accuracy on ``n_test`` images at their largest (p = 1/2), ``stall_se * 0.5 / sqrt(n_test)``.

    >>> stall_threshold(1.0, 400)
    0.025
    """
    return float(stall_se) * 0.5 / np.sqrt(n_test)


def ceiling_tolerance(ceiling_frac, clusters, ceiling):
    """Caveat (b)'s tolerance on plateau / (ceiling x final): ``ceiling_frac`` of the way from the
    prediction 1 to the alternative level ``1 / (clusters x ceiling)`` (one model right for one
    permutation only, plateau = final / clusters); ``ceiling_frac = 1/2`` is the midpoint, where
    the plateau is as near the one level as the other. NaN without a ceiling.

    >>> ceiling_tolerance(0.5, 4, 0.5)
    0.25
    """
    if ceiling is None or not np.isfinite(ceiling) or ceiling <= 0:
        return float("nan")
    return float(ceiling_frac) * (1.0 - 1.0 / (clusters * ceiling))


def near_zero_band(z, group, dim):
    """Caveat (e)'s band ``(lo, hi)`` for the mean within-cluster similarity after the final
    clustering, from the design: unrelated (independent, isotropic) updates in ``dim`` dimensions
    have pairwise cosines ``0 +- 1/sqrt(dim)``; unrelated full-batch updates of a converged group
    of ``group`` clients sum to zero, so their mean pairwise cosine is ``-1/(group - 1)`` (equal
    norms; never below it). Band: ``[-1/(group - 1) - z/sqrt(dim), z/sqrt(dim)]``.

    >>> near_zero_band(2.0, 5, 400)
    (-0.35, 0.1)
    """
    s = float(z) / np.sqrt(dim)
    return -1.0 / (group - 1) - s, s


def update_dim(n_features=N_FEATURES, n_classes=N_CLASSES):
    """Dimension of the space the clients' softmax updates lie in: the columns of a softmax
    gradient (and of a model grown from zero by them) sum to zero, ``n_features (n_classes - 1)``.
    """
    return n_features * (n_classes - 1)


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
        self.data, self.acc, self.before, self.born = data, [], {}, {}
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
        for node in now.keys() - self.prev.keys():  # born in this round: the split's model
            self.born[node] = now[node]
        self.prev = now
        self.acc.append(acc)


def client_updates(W, X, y, p):
    """Updates ``(g, d C)`` of the clients with data ``X`` (g, n, D), ``y`` (g, n) from the group
    model ``W`` (D, C): ``local_steps`` gradient steps of size ``lr`` on each client's loss."""
    T = np.broadcast_to(W, (len(X),) + W.shape).copy()
    for _ in range(p["local_steps"]):
        T -= p["lr"] * softmax_loss_grad(T, X, y, p["l2"])[1]
    return (T - W).reshape(len(X), -1)


def model_accuracy(W, data):
    """Mean client test accuracy of one model ``W`` for every client (each on its cluster's
    permuted test labels)."""
    hits = np.argmax(data["X_test"] @ W, axis=1)[None, :] == data["y_test"]  # (k, n_test)
    return float(hits.mean(axis=1)[data["labels"]].mean())


def continue_fl(W, data, p, rounds):
    """Plain FL (FedAvg over all clients, the same local steps as CFL's) from ``W`` for
    ``rounds`` rounds without splitting: the final model."""
    W = np.array(W, dtype=np.float64)
    for _ in range(rounds):
        W = W + client_updates(W, data["X"], data["y"], p).mean(axis=0).reshape(W.shape)
    return W


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


def _seed_row(data, res, acc, p, seed, final_pairs, ref_acc):
    """The per-seed summary: plateau (federated) and final accuracy, the stall (the reference
    run's accuracy ``ref_acc``, NaN without a split, and the window before the split), recovery."""
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
            "ref_acc": ref_acc, "ref_gain": ref_acc - float(plateau.mean()) if first else np.nan,
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
    first = min((s[0] for s in res.extra["splits"]), default=None)
    # the reference run: plain FL from the federated model at the first split (the model both
    # sides start from, i.e. after the split round's server step), continued without splitting
    ref_acc = (model_accuracy(continue_fl(tracker.born[1], data, p, p["continue_rounds"]), data)
               if first else np.nan)
    seed_row = _seed_row(data, res, acc, p, seed, final_pairs, ref_acc)
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
    n_test, _ = _sizes(p)
    return {
        "seeds": len(s), "seeds_split": len(split),
        # design values the thresholds are computed from
        "n_test": n_test, "k": p["clusters"], "group": p["clients"] // p["clusters"],
        "dim": update_dim(),
        "stall": _mean_fit(split["ref_gain"], nb, rng("stall")),
        "window": _mean_fit(split["window_change"], nb, rng("window")),
        "ref_acc": _mean_fit(split["ref_acc"], nb, rng("ref_acc")),
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
    """The verdict from the measurements ``m`` (:func:`measure`: Fits ``stall`` (the reference
    run's gain), ``ratio``, ``ceiling_ratio``, ``ceiling``, ``final_within`` or ``None``; counts
    ``recovered`` and ``gap``; the design values ``n_test``, ``k`` (clusters), ``group`` (clients
    per cluster) and ``dim`` (:func:`update_dim`) that the thresholds are computed from;
    ``min_client_ratio``, each seed's smallest final / federated accuracy of a client, NaN
    without a split; ``seeds`` and ``converged``, the runs and those that ended with every group
    final) and ``params["margins"]``; pure. The rules are the module docstring's; a client "more
    than doubled" when its ratio exceeds ``ratio_threshold``; a run that did not finish within
    ``max_rounds`` never reached the final clustering, so (c) and (d) are then inconclusive."""
    mg = params["margins"]
    rt, target, floor, share = (mg["ratio_threshold"], mg["rate_target"], mg["rate_floor"],
                                mg["all_share"])
    pm = stall_threshold(mg["stall_se"], m["n_test"])
    ceiling = m.get("ceiling")
    tol = ceiling_tolerance(mg["ceiling_frac"], m["k"], None if ceiling is None else ceiling.est)
    nz_lo, nz_hi = near_zero_band(mg["near_zero_z"], m["group"], m["dim"])
    v_stall = _interval_rule(m["stall"], lambda f: f.hi <= pm, lambda f: f.lo > pm)
    v_double = _interval_rule(m["ratio"], lambda f: f.lo > rt, lambda f: f.hi <= rt)
    v_rec, rec_lo, rec_hi = _rate_rule(m["recovered"], target, floor)
    unfinished = int(m["seeds"]) - int(m["converged"])
    if unfinished:  # the final clustering was not reached in every run: (c), (d) undecided
        v_double = v_rec = INCONCLUSIVE
    v_gap, gap_lo, gap_hi = _rate_rule(m["gap"], target, floor)
    cr, fw = m["ceiling_ratio"], m["final_within"]
    off_ceiling = cr is None or not np.isfinite(tol) or cr.lo < 1 - tol or cr.hi > 1 + tol
    mcr = np.asarray(m["min_client_ratio"], dtype=float)
    all_doubled = (int(np.sum(np.nan_to_num(mcr, nan=-np.inf) > rt)), int(mcr.size))
    all_hi = float(wilson_interval(*all_doubled)[1]) if mcr.size else 0.0
    not_all = all_hi < share
    not_zero = fw is None or fw.lo < nz_lo or fw.hi > nz_hi
    verdict = combine([v_stall, v_double, v_rec, v_gap])
    if verdict == HOLDS and (off_ceiling or not_all or not_zero):
        verdict = CAVEAT
    return Decision(verdict, {
        "stall_se": mg["stall_se"], "ceiling_frac": mg["ceiling_frac"],
        "near_zero_z": mg["near_zero_z"],
        "stall threshold": pm, "ratio_threshold": rt, "ceiling tol": tol,
        "rate_target": target, "rate_floor": floor, "near zero band": (nz_lo, nz_hi),
        "all_share": share,
        "verdict stall": v_stall, "verdict doubled": v_double, "verdict recovery": v_rec,
        "verdict gap": v_gap, "unfinished runs": unfinished, "recovery lo": rec_lo,
        "recovery hi": rec_hi, "gap lo": gap_lo, "gap hi": gap_hi, "all doubled": all_doubled,
        "all doubled hi": all_hi, "off ceiling": off_ceiling, "not all doubled": not_all,
        "final within not near zero": not_zero})


def count_cells(numbers):
    """``Verdict.cells`` from :func:`decide`'s numbers: the 7 checks the verdict judges, and the
    hard ones, those whose threshold lies strictly inside the range its quantity can take by
    construction (so that either outcome was possible): the gain of a test accuracy in [-1, 1],
    a ratio of accuracies in [0, inf), rates and shares in [0, 1], the ratio plateau / (ceiling x
    final) in [0, inf), a mean of cosines in [-1, 1]."""
    n = numbers
    nz_lo, nz_hi = n["near zero band"]
    tol = n["ceiling tol"]
    inside = {
        "(a) stall": -1 < n["stall threshold"] < 1,
        "(c) doubled": 0 < n["ratio_threshold"] < np.inf,
        "(d) recovery": 0 < n["rate_target"] < 1,
        "(e) gap": 0 < n["rate_target"] < 1,
        "(b) ceiling": bool(np.isfinite(tol)) and 0 < 1 - tol,
        "every client doubled": 0 < n["all_share"] <= 1,
        "near zero": nz_lo > -1 or nz_hi < 1,
    }
    return {"hard": int(sum(inside.values())), "total": len(inside), "rule": WORDS.text("cells")}


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
    nz_lo, nz_hi = n["near zero band"]
    rows = [
        _row("(a)", f"gain of mean client accuracy when plain FL continues {p['continue_rounds']} "
             "rounds past the first split (reference run, no split)", _fmt(m["stall"]),
             f"hi <= {n['stall threshold']:.3g} (= {n['stall_se']:g} x 0.5 / sqrt({m['n_test']}))",
             n["verdict stall"]),
        _row("(a)", f"change of mean accuracy over the {p['plateau_window']} rounds up to the "
             "first split", _fmt(m["window"]), "descriptive (the eps1 trigger implies it)"),
        _row("(a)", f"reference run's accuracy after {p['continue_rounds']} more rounds",
             _fmt(m["ref_acc"]), "descriptive"),
        _row("(a)", "round of the first split", first, "descriptive (paper: round 50)"),
        _row("(b)", "federated (plateau) accuracy at the first split", _fmt(m["plateau_acc"]),
             "descriptive (paper: around 20% on CIFAR-10 with a CNN; does not transfer)"),
        _row("(b)", "single-model ceiling (4 permutations of the true digit)",
             _fmt(m["ceiling"]), "descriptive"),
        _row("(b)", "plateau / (ceiling x final accuracy)", _fmt(m["ceiling_ratio"]),
             f"within [{1 - n['ceiling tol']:.3g}, {1 + n['ceiling tol']:.3g}] (1 +- "
             f"{n['ceiling_frac']:g} (1 - 1/({m['k']} x ceiling))), else a caveat",
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
             _fmt(m["final_within"]), f"within [{nz_lo:.3g}, {nz_hi:.3g}] (-1/({m['group']} - 1)"
             f" - z/sqrt({m['dim']}), z/sqrt({m['dim']}); z = {n['near_zero_z']:g}), else a caveat",
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
                          continue_rounds=p["continue_rounds"], ref_acc=_fmt(m["ref_acc"]),
                          window=p["plateau_window"], window_change=_fmt(m["window"]),
                          verdict_stall=n["verdict stall"], threshold=n["stall threshold"],
                          stall_se=n["stall_se"], n_test=m["n_test"])
               if len(fs) else WORDS.text("summary.no split"))
    out.append(WORDS.text(
        "summary", plateau_acc=_fmt(m["plateau_acc"]), ceiling=_fmt(m["ceiling"]),
        ceiling_ratio=_fmt(m["ceiling_ratio"]), final_acc=_fmt(m["final_acc"]),
        ratio=_fmt(m["ratio"]), verdict_doubled=n["verdict doubled"],
        ratio_threshold=n["ratio_threshold"], all_doubled=_count(n["all doubled"]),
        recovered=_count(m["recovered"]), verdict_recovery=n["verdict recovery"],
        gap=_count(m["gap"]), verdict_gap=n["verdict gap"], split_within=m["split_within"],
        split_cross=m["split_cross"], final_within=_fmt(m["final_within"]),
        predicted=_predicted_within(p), group=p["clients"] // p["clusters"],
        near_lo=n["near zero band"][0], near_hi=n["near zero band"][1],
        verdict_near="outside it: a caveat" if n["final within not near zero"] else "inside it",
        tol=n["ceiling tol"],
        verdict_ceiling="outside: a caveat" if n["off ceiling"] else "inside"))
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
                   sensitivity=sensitivity(m, params), scope=_scope(m, d),
                   cells=count_cells(d.numbers))


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
