"""Study CFLF12: the two toy figures of CFL (Sattler, Müller, Samek, short workshop version).

**Figure 2, the two-client toys.** Two clients, two parameters ``theta in R^2``, the federated
objective ``F = a_1 R_1 + a_2 R_2`` (eq. (2)) descended by federated gradient descent (FedAvg with
one local gradient step: ``theta <- theta - lr (a_1 grad R_1 + a_2 grad R_2)``, which is
:func:`mixlinreg.baselines.cfl`'s update for one group; written here as a two-line loop since the
toy risks are not among its losses). Each client's risk is a squared loss that is *flat near its
minimum* (a dead zone):

    ``R_i(theta) = 1/2 max(q_i(theta) - delta, 0)^2``,  ``q_i(theta) = ||theta - c_i||_{A_i}``,

with ``A_i`` symmetric positive definite (eigenvalues ``fig2_eigs``, rotated by ``fig2_angles``
degrees), i.e. least squares on a client whose inputs have covariance ``A_i``, with every model
inside the ellipse ``q_i <= delta`` around ``c_i`` counted as perfect (``delta = 0`` is plain least
squares). Each client's minimizer set is that ellipse (a region, as the paper's grey area).
The centres are ``(-gap/2, 0)`` and ``(gap/2, 0)``: with ``incongruent_gap`` the two ellipses are
disjoint (no model minimizes both risks: incongruent), with ``congruent_gap`` they overlap in a
region of positive area (congruent); :func:`toy_overlap` checks which before anything runs.
``F`` is convex (a convex nondecreasing function of a norm), so in the congruent case every
stationary point has ``F = 0``, i.e. lies in the overlap; in the incongruent case ``grad F = 0``
forces ``a_1 grad R_1 = -a_2 grad R_2`` (eq. (3)): cosine -1 and positive norms. Starts are drawn
at random angles on a circle of radius ``start_radius`` around the origin (one replicate each,
from the unit's generator); the clients' gradient norms and their cosine (eq. (4)) are recorded
along each path (rounds ``0..10`` and a geometric grid up to ``fig2_rounds``).

**Figure 1, the federated XOR (and the disagreeing conditionals of its right panel).** Clients
with a bias feature, ``x = (x_1, x_2, 1)``, Gaussian blobs of standard deviation ``sd`` around
``(+-mu, +-mu)``, labels in ``{0, 1}``:

* ``"xor"``: cluster 1's clients hold points in the upper half plane, label 1 around
  ``(mu, mu)`` and 0 around ``(-mu, mu)`` (``y = [x_1 > 0]``); cluster 2's the lower half plane,
  label 1 around ``(-mu, -mu)`` and 0 around ``(mu, -mu)`` (``y = [x_1 < 0]``). Each cluster is
  linearly separable; their union is the XOR ``y = [x_1 x_2 > 0]``, which no linear model fits.
* ``"flip"``: both clusters draw ``x`` around all four centres; cluster 1 labels ``y = [x_1 > 0]``,
  cluster 2 the flipped labels: the conditionals disagree, and *no* model fits both (any
  classifier's accuracies on the two sum to one).
* ``"same"`` (the control's, not the paper's): both clusters draw cluster 1's data of ``"xor"``
  (upper half plane, ``y = [x_1 > 0]``): data without the cluster structure, where one linear
  model fits every client and the claim is false.

Each replicate draws ``clients_per_cluster`` clients per cluster with ``n`` training and ``n_test``
test points each and runs :func:`mixlinreg.baselines.cfl` with the logistic loss twice: federated
learning alone (``min_group`` above the number of clients, so it never splits) and CFL (splits by
criterion (5) and rule (6)). Measured: the test accuracy of the federated model and of CFL's
per-group models (each client scored with its group's model, averaged over clients), whether
CFL's final groups equal the true clusters, at the federated stationary point the clients'
gradient norms and their within- and cross-cluster cosine similarities, and for reference the
accuracy of the fixed linear rule ``x_1 + x_2 > mu`` (it cuts off one blob).

**Verdict** (:func:`decide`, a pure function of the measurements, thresholds in ``[margins]``):

* Figure 2, congruent: the share of starts whose final largest client gradient norm is at most
  ``tol`` is held to ``rate_target`` (Wilson interval: holds when its lower end is at or above,
  not supported when its upper end is below, inconclusive otherwise);
* Figure 2, incongruent: the same for the share of starts whose final smallest client gradient
  norm is at least ``floor`` and whose final cosine is at most ``-1 + cos_eps``;
* Figure 1, per case: the share of replicates whose CFL groups equal the true clusters, held to
  ``split_target`` (Wilson), and the mean accuracy gain of CFL over federated learning
  (bootstrap interval) held to ``gain_margin`` (:func:`~mixlinreg.stats.verdict_at_least`).

The verdict is the weakest of the parts; the sensitivity lines recompute it at the neighbouring
values of every threshold. Config: ``mixlinreg/configs/studies/CFLF12.toml``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...baselines import cfl, cosine_similarities
from ...config import Spec
from ...losses import CODES, derivative_array
from ...stats import HOLDS, INCONCLUSIVE, NOT_SUPPORTED, bootstrap, verdict_at_least, wilson_interval
from ..study import Decision, Study, Verdict, combine
from ..words import sensitivity_lines, words

#: the study's prose: cflf12.md beside this module
WORDS = words(__file__)

FIG2_CASES = ("incongruent", "congruent")
XOR_CASES = ("xor", "flip", "same")
_POS = dict(low=0, open="low")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "fig2_reps": Spec("int", low=2), "fig2_rounds": Spec("int", low=10),
        "fig2_record": Spec("int", low=2),
        "fig2_eigs": Spec("list[float]", **_POS), "fig2_angles": Spec("list[float]"),
        "fig2_delta": Spec("float", low=0), "incongruent_gap": Spec("float", **_POS),
        "congruent_gap": Spec("float", low=0), "fig2_weight": Spec("float", **_OPEN01),
        "fig2_lr": Spec("float", **_POS), "start_radius": Spec("float", **_POS),
        "xor_cases": Spec("list[str]", choices=XOR_CASES), "xor_reps": Spec("int", low=2),
        "xor_block": Spec("int", low=1), "clients_per_cluster": Spec("int", low=1),
        "n": Spec("int", low=2), "n_test": Spec("int", low=1), "mu": Spec("float", **_POS),
        "sd": Spec("float", low=0), "l2": Spec("float", low=0), "lr": Spec("float", **_POS),
        "eps1": Spec("float", **_POS), "eps2": Spec("float", **_POS),
        "max_rounds": Spec("int", low=1), "n_points": Spec("int", low=1),
        "n_boot": Spec("int", low=100),
    },
    "margins": {
        "tol": Spec("float", **_POS), "tol_neighbours": Spec("list[float]", **_POS),
        "floor": Spec("float", **_POS), "floor_neighbours": Spec("list[float]", **_POS),
        "cos_eps": Spec("float", low=0, high=2, open="low"),
        "cos_eps_neighbours": Spec("list[float]", low=0, high=2, open="low"),
        "rate_target": Spec("float", **_OPEN01),
        "rate_target_neighbours": Spec("list[float]", **_OPEN01),
        "split_target": Spec("float", **_OPEN01),
        "split_target_neighbours": Spec("list[float]", **_OPEN01),
        "gain_margin": Spec("float", low=0, high=1),
        "gain_margin_neighbours": Spec("list[float]", low=0, high=1),
    },
}


# ------------------------------------------------------------------------------ Figure 2 toys


def spd(eigs, angle_deg):
    """The 2 x 2 matrix with eigenvalues ``eigs`` whose first eigenvector is at ``angle_deg``.

    >>> spd([1.0, 0.25], 0.0).tolist()
    [[1.0, 0.0], [0.0, 0.25]]
    """
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return rot @ np.diag(np.asarray(eigs, dtype=float)) @ rot.T


def toy(p, case):
    """The two clients of a Figure 2 toy: ``(centres (2, 2), A (2, 2, 2), delta, weights (2,))``."""
    gap = p["incongruent_gap"] if case == "incongruent" else p["congruent_gap"]
    centres = np.array([[-gap / 2, 0.0], [gap / 2, 0.0]])
    A = np.stack([spd(p["fig2_eigs"], ang) for ang in p["fig2_angles"]])
    a1 = p["fig2_weight"]
    return centres, A, float(p["fig2_delta"]), np.array([a1, 1.0 - a1])


def dead_zone(theta, centre, A, delta):
    """Risk and gradient of ``R(theta) = 1/2 max(||theta - c||_A - delta, 0)^2`` at the rows of
    ``theta`` (shape (r, 2)): ``grad R = (1 - delta / q) A (theta - c)`` where ``q > delta``, else 0.

    >>> r, g = dead_zone(np.array([[3.0, 0.0]]), np.zeros(2), np.eye(2), 1.0)
    >>> float(r[0]), g.tolist()
    (2.0, [[2.0, 0.0]])
    """
    u = np.atleast_2d(theta) - centre
    Au = u @ A
    q = np.sqrt(np.maximum(np.einsum("ri,ri->r", u, Au), 0.0))
    excess = np.maximum(q - delta, 0.0)
    factor = np.divide(excess, q, out=np.zeros_like(q), where=q > 0)
    return 0.5 * excess**2, factor[:, None] * Au


def toy_overlap(centres, A, delta, grid=401):
    """``min_theta max(q_1, q_2) / delta`` on a ``grid`` x ``grid`` grid over both ellipses (``q_i``
    of :func:`dead_zone`): below 1 the clients' minimizer sets overlap in a region of positive area
    (congruent), above 1 they are disjoint (incongruent). ``inf`` for ``delta = 0`` (the minimizer
    sets are points: no region).

    >>> A = np.stack([np.eye(2), np.eye(2)])
    >>> round(toy_overlap(np.array([[-1.0, 0], [1.0, 0]]), A, 0.5), 3)
    2.0
    """
    if delta <= 0:
        return math.inf
    half = np.stack([delta * np.sqrt(np.diag(np.linalg.inv(a))) for a in A])
    lo, hi = (centres - half).min(axis=0), (centres + half).max(axis=0)
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], grid), np.linspace(lo[1], hi[1], grid))
    pts = np.column_stack([g0.ravel(), g1.ravel()])
    q = [np.sqrt(np.einsum("ri,ij,rj->r", pts - c, a, pts - c)) for c, a in zip(centres, A)]
    return float(np.maximum(q[0], q[1]).min() / delta)


def record_rounds(T, n_record):
    """Rounds kept along a path: ``0..10`` and ``n_record`` geometric steps up to ``T``."""
    geo = np.geomspace(1, T, n_record).round().astype(int)
    return np.unique(np.concatenate([np.arange(min(T, 10) + 1), geo, [T]]))


def fl_paths(starts, centres, A, delta, weights, lr, T, keep):
    """Federated gradient descent on ``F = sum_i a_i R_i`` from each row of ``starts``; rows at the
    rounds ``keep``: ``rep, round, theta0, theta1, g1, g2`` (client gradient norms), ``cos``
    (NaN where a gradient is zero), ``F``."""
    theta = np.array(starts, dtype=float)
    keep = set(int(k) for k in keep)
    out = []
    for t in range(T + 1):
        (r1, g1), (r2, g2) = (dead_zone(theta, centres[i], A[i], delta) for i in range(2))
        if t in keep:
            n1, n2 = np.linalg.norm(g1, axis=1), np.linalg.norm(g2, axis=1)
            denom = n1 * n2
            cos = np.divide(np.einsum("ri,ri->r", g1, g2), denom, out=np.full_like(denom, np.nan),
                            where=denom > 0)
            out.append(pd.DataFrame({"rep": np.arange(len(theta)), "round": t,
                                     "theta0": theta[:, 0], "theta1": theta[:, 1], "g1": n1,
                                     "g2": n2, "cos": cos,
                                     "F": weights[0] * r1 + weights[1] * r2}))
        theta = theta - lr * (weights[0] * g1 + weights[1] * g2)
    return pd.concat(out, ignore_index=True)


def _fig2_unit(case, p, rng):
    centres, A, delta, w = toy(p, case)
    ang = rng.uniform(0.0, 2 * math.pi, p["fig2_reps"])
    starts = p["start_radius"] * np.column_stack([np.cos(ang), np.sin(ang)])
    keep = record_rounds(p["fig2_rounds"], p["fig2_record"])
    rows = fl_paths(starts, centres, A, delta, w, p["fig2_lr"], p["fig2_rounds"], keep)
    return rows.assign(part="fig2", case=case, row="path")


# ------------------------------------------------------------------------------ Figure 1: XOR


def xor_data(case, per_cluster, n, mu, sd, rng):
    """Clients of the federated XOR (``case="xor"``), of the flipped labels (``"flip"``) or of one
    distribution for both clusters (``"same"``), see the module docstring: ``X (m, n, 3)`` with a
    bias column, ``y (m, n)`` in {0, 1}, ``cluster (m,)`` (the first ``per_cluster`` clients are
    cluster 0)."""
    m = 2 * per_cluster
    cluster = np.repeat(np.arange(2), per_cluster)
    y = rng.integers(0, 2, (m, n)).astype(float)
    if case == "same":  # cluster 0's data of "xor" for every client
        side = np.where(y == 1, 1.0, -1.0)
        x2 = np.ones((m, n))
        X = np.stack([mu * side, mu * x2, np.ones((m, n))], axis=-1)
        X[..., :2] += sd * rng.standard_normal((m, n, 2))
        return X, y, cluster
    side = np.where(y == 1, 1.0, -1.0) * np.where(cluster[:, None] == 0, 1.0, -1.0)
    if case == "xor":  # cluster 0 above the x_1 axis, cluster 1 below
        x2 = np.broadcast_to(np.where(cluster[:, None] == 0, 1.0, -1.0), (m, n))
    else:  # the same inputs for both clusters, labels flipped in cluster 1
        x2 = rng.choice([-1.0, 1.0], (m, n))
    X = np.stack([mu * side, mu * x2, np.ones((m, n))], axis=-1)
    X[..., :2] += sd * rng.standard_normal((m, n, 2))
    return X, y, cluster


def logistic_gradients(X, y, theta, l2):
    """``grad r_i(theta) = (1/n) X_i^T (sigmoid(X_i theta) - y_i) + l2 theta`` of every client,
    shape (m, d): the gradient of :func:`mixlinreg.baselines.cfl`'s logistic loss (the per-sample
    derivative from :mod:`mixlinreg.losses`)."""
    n = X.shape[1]
    res = derivative_array(np.einsum("ind,d->in", X, theta), y, CODES["logistic"], 1.0)
    return np.einsum("ind,in->id", X, res) / n + l2 * theta


def same_partition(a, b):
    """Whether the labelings ``a`` and ``b`` make the same groups (up to renaming).

    >>> same_partition([0, 0, 1], [1, 1, 0]), same_partition([0, 0, 1], [0, 1, 2])
    (True, False)
    """
    a, b = np.asarray(a), np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def _accuracy(X, y, theta):
    return float(((np.einsum("nd,d->n", X, theta) > 0) == (y == 1)).mean())


def xor_replicate(case, p, rng):
    """One replicate of a Figure 1 case: a dict of its measurements, the models (for the figure)
    and the data ``(X, y, cluster)``."""
    args = (p["clients_per_cluster"], p["mu"], p["sd"])
    X, y, cluster = xor_data(case, args[0], p["n"], *args[1:], rng)
    Xt, yt, _ = xor_data(case, args[0], p["n_test"], *args[1:], rng)
    m = X.shape[0]
    kw = dict(loss="logistic", l2=p["l2"], lr=p["lr"], eps1=p["eps1"], eps2=p["eps2"],
              max_rounds=p["max_rounds"])
    fl = cfl(X, y, min_group=m + 1, **kw)
    res = cfl(X, y, **kw)
    th_fl = fl.theta[0]
    G = logistic_gradients(X, y, th_fl, p["l2"])
    norms = np.linalg.norm(G, axis=1)
    S = cosine_similarities(G)
    same = cluster[:, None] == cluster[None, :]
    off = ~np.eye(m, dtype=bool)
    splits = res.extra["splits"]
    first = bool(splits) and same_partition(np.isin(np.arange(m), splits[0][3]), cluster)
    row = {"acc_fl": float(np.mean([_accuracy(Xt[i], yt[i], th_fl) for i in range(m)])),
           "acc_cfl": float(np.mean([_accuracy(Xt[i], yt[i], res.theta[res.labels[i]])
                                     for i in range(m)])),
           # a fixed linear rule that cuts off the (mu, mu) blob: 3 of the 4 XOR blobs right
           "acc_one_blob": float(np.mean([_accuracy(Xt[i], yt[i], np.array([1.0, 1.0, -p["mu"]]))
                                          for i in range(m)])),
           "split_correct": bool(same_partition(res.labels, cluster)), "first_split_correct": first,
           "n_groups": int(res.theta.shape[0]), "rounds_fl": int(fl.n_rounds),
           "rounds_cfl": int(res.n_rounds),
           "converged": bool(fl.extra["converged"] and res.extra["converged"]),
           "gnorm_min_fl": float(norms.min()), "gnorm_max_fl": float(norms.max()),
           "cos_cross": float(S[~same].mean()), "cos_within": float(S[same & off].mean())}
    models = {"fl": th_fl}
    for j in range(min(2, res.theta.shape[0])):
        models[f"cfl{j}"] = res.theta[j]
    for key, th in models.items():
        row.update({f"{key}_w1": th[0], f"{key}_w2": th[1], f"{key}_b": th[2]})
    return row, (X, y, cluster)


def _xor_unit(case, block, p, rng):
    start = block * p["xor_block"]
    reps = range(start, min(start + p["xor_block"], p["xor_reps"]))
    rows, frames = [], []
    for rep, gen in zip(reps, rng.spawn(len(reps))):
        row, (X, y, cluster) = xor_replicate(case, p, gen)
        rows.append(dict(row, rep=rep))
        if rep == 0:  # example points for the figure
            cl = np.repeat(cluster, X.shape[1])
            pts = X.reshape(-1, 3)
            pick = gen.choice(len(pts), min(p["n_points"], len(pts)), replace=False)
            frames.append(pd.DataFrame({"row": "point", "rep": 0, "x1": pts[pick, 0],
                                        "x2": pts[pick, 1], "y": y.reshape(-1)[pick],
                                        "cluster": cl[pick]}))
    out = pd.concat([pd.DataFrame(rows).assign(row="rep")] + frames, ignore_index=True)
    return out.assign(part="xor", case=case)


# ------------------------------------------------------------------------------ units


def _check_params(p):
    """Cross-field rules of the config, each a ``ValueError`` naming the parameter."""
    for key in ("fig2_eigs", "fig2_angles"):
        if len(p[key]) != 2:
            raise ValueError(f"study CFLF12: params.{key} must have 2 entries (the two clients' "
                             f"eigenvalues / angles), got {p[key]}")
    bound = 2.0 / max(p["fig2_eigs"])
    if p["fig2_lr"] >= bound:
        raise ValueError(f"study CFLF12: params.fig2_lr must be in (0, 2 / max(fig2_eigs)) = "
                         f"(0, {bound:g}) for a stable descent, got {p['fig2_lr']!r}")
    for case in FIG2_CASES:
        ov = toy_overlap(*toy(p, case)[:3])
        ok = ov > 1.1 if case == "incongruent" else ov < 0.9
        if not ok:
            want = "disjoint (ratio > 1.1)" if case == "incongruent" else "overlapping (ratio < 0.9)"
            raise ValueError(f"study CFLF12: params.{case}_gap must make the two minimizer "
                             f"ellipses clearly {want}, see toy_overlap; got {case}_gap = "
                             f"{p[case + '_gap']!r} (fig2_delta = {p['fig2_delta']!r}) with ratio "
                             f"{ov:.3g}")
    if len(set(p["xor_cases"])) != len(p["xor_cases"]):
        raise ValueError(f"study CFLF12: params.xor_cases must not repeat a case, got "
                         f"{p['xor_cases']}")
    if p["eps1"] >= p["eps2"]:
        raise ValueError(f"study CFLF12: params.eps1 must be below eps2 ({p['eps2']!r}), got "
                         f"{p['eps1']!r}")
    # logistic smoothness bound: L <= (1/4) E||x||^2 + l2 = (1/4)(2 (mu^2 + sd^2) + 1) + l2
    L = 0.25 * (2 * (p["mu"] ** 2 + p["sd"] ** 2) + 1) + p["l2"]
    if p["lr"] >= 2.0 / L:
        raise ValueError(f"study CFLF12: params.lr must be in (0, 2 / L) = (0, {2.0 / L:.3g}) "
                         f"with L = (2 (mu^2 + sd^2) + 1) / 4 + l2 the loss's smoothness, got "
                         f"{p['lr']!r}")


def units(params):
    p = params["params"]
    _check_params(p)
    out = [(f"fig2_{case}", {"part": "fig2", "case": case}) for case in FIG2_CASES]
    n_blocks = -(-p["xor_reps"] // p["xor_block"])
    out += [(f"{case}_b{b}", {"part": "xor", "case": case, "block": b})
            for case in p["xor_cases"] for b in range(n_blocks)]
    return out


def compute(spec, params, rng, shared):
    p = params["params"]
    if spec["part"] == "fig2":
        return _fig2_unit(spec["case"], p, rng)
    return _xor_unit(spec["case"], spec["block"], p, rng)


# ------------------------------------------------------------------------------ analysis


def measure(table, p, rng):
    """What :func:`decide` reads and the report shows: the final Figure 2 norms and cosines (one
    per start), and per Figure 1 case the replicates' split outcomes and bootstrap means."""
    fig2 = table[(table["part"] == "fig2") & (table["round"] == p["fig2_rounds"])]
    fin = {c: fig2[fig2["case"] == c].sort_values("rep") for c in FIG2_CASES}
    meas = {"congruent_max": np.maximum(fin["congruent"]["g1"], fin["congruent"]["g2"]).to_numpy(),
            "incongruent_min": np.minimum(fin["incongruent"]["g1"],
                                          fin["incongruent"]["g2"]).to_numpy(),
            "incongruent_cos": fin["incongruent"]["cos"].to_numpy(dtype=float), "cases": {}}
    nb = p["n_boot"]
    for key in ("congruent_max", "incongruent_min", "incongruent_cos"):
        meas[key + "_mean"] = bootstrap(np.nan_to_num(meas[key], nan=0.0), n_boot=nb,
                                        rng=rng(key))
    reps = table[(table["part"] == "xor") & (table["row"] == "rep")]
    for case in p["xor_cases"]:
        r = reps[reps["case"] == case].sort_values("rep")
        c = {"split": r["split_correct"].astype(bool).to_numpy(),
             "first_split": r["first_split_correct"].astype(bool).to_numpy(),
             "converged": r["converged"].astype(bool).to_numpy()}
        for key in ("acc_fl", "acc_cfl", "gnorm_min_fl", "cos_cross", "cos_within"):
            c[key] = bootstrap(r[key].to_numpy(dtype=float), n_boot=nb, rng=rng(f"{case}_{key}"))
        c["gain"] = bootstrap((r["acc_cfl"] - r["acc_fl"]).to_numpy(dtype=float), n_boot=nb,
                              rng=rng(f"{case}_gain"))
        meas["cases"][case] = c
    return meas


def rate_verdict(k, n, target):
    """Wilson interval of ``k / n`` against ``target``: holds when its lower end is ``>= target``,
    not supported when its upper end is ``< target``, inconclusive otherwise."""
    lo, hi = wilson_interval(int(k), int(n))
    verdict = HOLDS if lo >= target else NOT_SUPPORTED if hi < target else INCONCLUSIVE
    return verdict, float(lo), float(hi)


def decide(meas, params):
    """The verdict from the measurements ``meas`` (:func:`measure`: arrays ``congruent_max``,
    ``incongruent_min``, ``incongruent_cos`` of final values, one per start, and per Figure 1 case
    ``cases[case]["split"]`` (bools) and ``["gain"]`` (a Fit)) at ``params["margins"]``.

    Parts: Figure 2 congruent (share of starts with final max norm ``<= tol``) and incongruent
    (share with final min norm ``>= floor`` and cosine ``<= -1 + cos_eps``), each against
    ``rate_target``; per Figure 1 case the share of correct splits against ``split_target`` and the
    mean accuracy gain's interval against ``gain_margin``. ``numbers["parts"]``: per part the
    verdict, the count, the trials and the interval; the verdict is the weakest part's."""
    mg = params["margins"]
    parts = {}
    cmax = np.asarray(meas["congruent_max"], dtype=float)
    k = int(np.sum(cmax <= mg["tol"]))
    v, lo, hi = rate_verdict(k, cmax.size, mg["rate_target"])
    parts["Fig. 2 congruent"] = {"verdict": v, "k": k, "n": int(cmax.size), "lo": lo, "hi": hi}
    imin = np.asarray(meas["incongruent_min"], dtype=float)
    icos = np.asarray(meas["incongruent_cos"], dtype=float)
    ok = (imin >= mg["floor"]) & (icos <= -1.0 + mg["cos_eps"])  # NaN cosine fails
    v, lo, hi = rate_verdict(int(ok.sum()), imin.size, mg["rate_target"])
    parts["Fig. 2 incongruent"] = {"verdict": v, "k": int(ok.sum()), "n": int(imin.size),
                                   "lo": lo, "hi": hi}
    for case, c in meas["cases"].items():
        s = np.asarray(c["split"], dtype=bool)
        v, lo, hi = rate_verdict(int(s.sum()), s.size, mg["split_target"])
        parts[f"Fig. 1 {case}: split"] = {"verdict": v, "k": int(s.sum()), "n": int(s.size),
                                          "lo": lo, "hi": hi}
        g = c["gain"]
        parts[f"Fig. 1 {case}: gain"] = {"verdict": verdict_at_least(g, mg["gain_margin"]),
                                         "est": g.est, "lo": g.lo, "hi": g.hi}
    numbers = {k: mg[k] for k in ("tol", "floor", "cos_eps", "rate_target", "split_target",
                                  "gain_margin")}
    numbers["parts"] = parts
    return Decision(combine([q["verdict"] for q in parts.values()]), numbers)


def sensitivity(meas, params):
    """The verdict at the neighbouring values of every threshold (:func:`decide` there)."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(meas, q).verdict)


def _rate_txt(q):
    return f"{q['k']}/{q['n']} [{q['lo']:.3f}, {q['hi']:.3f}]"


def _numbers(meas, decision):
    nb, parts = decision.numbers, decision.numbers["parts"]
    rows = [
        ("Fig. 2 incongruent: final min-client gradient norm (mean)",
         meas["incongruent_min_mean"].fmt(), f">= {nb['floor']:g} per start", ""),
        ("Fig. 2 incongruent: final cosine (mean)", meas["incongruent_cos_mean"].fmt(6),
         f"<= -1 + {nb['cos_eps']:g} per start", ""),
        ("Fig. 2 incongruent: starts meeting both", _rate_txt(parts["Fig. 2 incongruent"]),
         f"Wilson lower >= {nb['rate_target']:g}", parts["Fig. 2 incongruent"]["verdict"]),
        ("Fig. 2 congruent: final max-client gradient norm (mean)",
         meas["congruent_max_mean"].fmt(), f"<= {nb['tol']:g} per start", ""),
        ("Fig. 2 congruent: starts meeting it", _rate_txt(parts["Fig. 2 congruent"]),
         f"Wilson lower >= {nb['rate_target']:g}", parts["Fig. 2 congruent"]["verdict"]),
    ]
    for case, c in meas["cases"].items():
        sp, gn = parts[f"Fig. 1 {case}: split"], parts[f"Fig. 1 {case}: gain"]
        rows += [
            (f"Fig. 1 {case}: FL accuracy; CFL accuracy (means)",
             f"{c['acc_fl'].fmt()}; {c['acc_cfl'].fmt()}", "descriptive", ""),
            (f"Fig. 1 {case}: CFL - FL accuracy (mean)", c["gain"].fmt(),
             f"lower >= {nb['gain_margin']:g}", gn["verdict"]),
            (f"Fig. 1 {case}: CFL groups = true clusters", _rate_txt(sp),
             f"Wilson lower >= {nb['split_target']:g}", sp["verdict"]),
            (f"Fig. 1 {case}: at the FL point, min-client gradient norm; cross-, within-cluster "
             "cosine (means)", f"{c['gnorm_min_fl'].fmt()}; {c['cos_cross'].fmt()}; "
             f"{c['cos_within'].fmt()}", "descriptive", ""),
        ]
    return pd.DataFrame(rows, columns=["quantity", "estimate [95% CI]", "rule", "verdict"])


def _summary(meas, decision, p):
    nb, parts = decision.numbers, decision.numbers["parts"]
    ci, cc = parts["Fig. 2 incongruent"], parts["Fig. 2 congruent"]
    lo_inc, hi_con = float(np.min(meas["incongruent_min"])), float(np.max(meas["congruent_max"]))
    separation = WORDS.text("separation.apart" if lo_inc > hi_con else "separation.not apart",
                            hi_con=hi_con)
    text = [WORDS.text(
        "summary", rounds=p["fig2_rounds"], starts=cc["n"],
        inc_norm=meas["incongruent_min_mean"].fmt(), inc_cos=meas["incongruent_cos_mean"].fmt(6),
        inc_rate=_rate_txt(ci), floor=nb["floor"], cos_eps=nb["cos_eps"],
        inc_verdict=ci["verdict"], con_norm=meas["congruent_max_mean"].fmt(),
        con_rate=_rate_txt(cc), tol=nb["tol"], con_verdict=cc["verdict"], lo_inc=lo_inc,
        separation=separation)]
    for case, c in meas["cases"].items():
        sp, gn = parts[f"Fig. 1 {case}: split"], parts[f"Fig. 1 {case}: gain"]
        text.append(WORDS.text(
            "summary.figure 1", case=case, acc_fl=c["acc_fl"].fmt(),
            gnorm_min=c["gnorm_min_fl"].fmt(), cos_cross=c["cos_cross"].fmt(),
            acc_cfl=c["acc_cfl"].fmt(), gain=c["gain"].fmt(), gain_verdict=gn["verdict"],
            split_rate=_rate_txt(sp), split_verdict=sp["verdict"]))
    return " ".join(text)


def _scope(decision):
    by = {}
    for name, q in decision.numbers["parts"].items():
        by.setdefault(q["verdict"], []).append(name)
    if len(by) < 2:
        return ""
    return "; ".join(WORDS.text("scope", verdict=v, parts=", ".join(names))
                     for v, names in by.items())


def _caveats(meas, table, p):
    out = WORDS.items("caveats", **p, clients=2 * p["clients_per_cluster"])
    con = table[(table["part"] == "fig2") & (table["case"] == "congruent")]
    defined = con.groupby("round")["cos"].agg(["count", "median", "size"])
    late = defined[defined["count"] >= defined["size"] / 2]
    if len(late):
        r_last = int(late.index.max())
        out.append(WORDS.text("caveat.congruent cosine", median=late.loc[r_last, "median"],
                              round=r_last))
    reps = table[(table["part"] == "xor") & (table["row"] == "rep")]
    for case, c in meas["cases"].items():
        r = reps[reps["case"] == case]
        norm = np.sqrt(r["fl_w1"] ** 2 + r["fl_w2"] ** 2 + r["fl_b"] ** 2)
        if case != "same":  # the control's case: one model fits all, no federated-model caveat
            out.append(WORDS.text("caveat.federated model", case=case, fl_norm=norm.median(),
                                  cfl_norm=_cfl_norm(r), acc_min=r["acc_fl"].min(),
                                  acc_max=r["acc_fl"].max(), one_blob=r["acc_one_blob"].mean(),
                                  why=WORDS.text("why.xor" if case == "xor" else "why.flip")))
        n_conv, n = int(c["converged"].sum()), c["converged"].size
        if n_conv < n:
            out.append(WORDS.text("caveat.max_rounds", case=case, stopped=n - n_conv, n=n,
                                  max_rounds=p["max_rounds"]))
        first = int(c["first_split"].sum())
        out.append(WORDS.text("caveat.first split", case=case, first=first, n=n))
    return out


def _cfl_norm(r):
    """Median norm of CFL's first group's model over the replicates ``r``."""
    return float(np.sqrt(r["cfl0_w1"] ** 2 + r["cfl0_w2"] ** 2 + r["cfl0_b"] ** 2).median())


def analyze(table, params, rng):
    p = params["params"]
    meas = measure(table, p, rng)
    decision = decide(meas, params)
    return Verdict(decision.verdict, _numbers(meas, decision), _summary(meas, decision, p),
                   caveats=_caveats(meas, table, p), sensitivity=sensitivity(meas, params),
                   scope=_scope(decision), cells=_hard_cells(decision))


def _hard_cells(decision):
    """The judged parts and those the construction does not decide: Figure 2's two parts are
    identities of the toys (two clients at the federated stationary point have opposite
    gradients, cosine -1; a congruent convex pair shares its minimizer, norm 0), Figure 1's
    split and gain parts depend on what CFL does."""
    parts = decision.numbers["parts"]
    return {"hard": sum(1 for name in parts if name.startswith("Fig. 1")), "total": len(parts),
            "rule": WORDS.text("cells rule")}


# ------------------------------------------------------------------------------ figure

_COLOURS = ("tab:blue", "tab:orange")


def _draw_toy(ax, p, case, paths):
    centres, A, delta, _ = toy(p, case)
    r = p["start_radius"] * 1.15
    g0, g1 = np.meshgrid(np.linspace(-r, r, 241), np.linspace(-r, r, 241))
    pts = np.column_stack([g0.ravel(), g1.ravel()])
    risks = [dead_zone(pts, centres[i], A[i], delta)[0].reshape(g0.shape) for i in range(2)]
    for i, R in enumerate(risks):
        ax.contour(g0, g1, R, levels=np.geomspace(0.02, R.max(), 8), colors=_COLOURS[i],
                   linewidths=0.6, alpha=0.7)
        ax.contour(g0, g1, R, levels=[1e-9], colors=_COLOURS[i], linewidths=1.4)
    both = ((risks[0] == 0) & (risks[1] == 0)).astype(float)
    if both.any():
        ax.contourf(g0, g1, both, levels=[0.5, 1.5], colors=["0.6"], alpha=0.6)
    for _, path in paths.groupby("rep"):
        ax.plot(path["theta0"], path["theta1"], "k-", lw=0.7)
        ax.plot(path["theta0"].iloc[-1], path["theta1"].iloc[-1], "ko", ms=3)
    ax.set_aspect("equal")
    ax.set_title(f"{case}: FL paths (grey: both risks minimal)" if both.any()
                 else f"{case}: FL paths on R_1 (blue), R_2 (orange)", fontsize=9)


def _draw_norms(ax_norm, ax_cos, fig2, floor):
    for case, style in zip(FIG2_CASES, ("-", "--")):
        t = fig2[fig2["case"] == case]
        stat = (np.minimum if case == "incongruent" else np.maximum)(t["g1"], t["g2"])
        med = t.assign(v=stat).groupby("round")["v"].median()
        ax_norm.semilogy(med.index, np.maximum(med.to_numpy(), floor), style,
                         label=f"{case}: median {'min' if case == 'incongruent' else 'max'} norm")
        cos = t.groupby("round")["cos"].median()
        ax_cos.plot(cos.index, cos.to_numpy(), style, label=f"{case}: median cosine")
    ax_norm.set_xlabel("round")
    ax_norm.set_ylabel(f"client gradient norm (zeros drawn at {floor:g})")
    ax_norm.legend(fontsize=7)
    ax_cos.set_xlabel("round")
    ax_cos.set_ylabel("cosine of the two clients' gradients (undefined at a zero gradient)")
    ax_cos.set_ylim(-1.05, 1.05)
    ax_cos.legend(fontsize=7)


def _draw_xor(ax, case, t):
    pts = t[t["row"] == "point"]
    rep0 = t[(t["row"] == "rep") & (t["rep"] == 0)].iloc[0]
    for j in range(2):
        for lab, mk in ((1, "o"), (0, "x")):
            q = pts[(pts["cluster"] == j) & (pts["y"] == lab)]
            ax.scatter(q["x1"], q["x2"], s=8, marker=mk, color=_COLOURS[j], lw=0.8,
                       label=f"cluster {j + 1}, y = {lab}")
    pad = 0.1 * (pts[["x1", "x2"]].max() - pts[["x1", "x2"]].min())
    lim = np.array([pts["x1"].min() - pad["x1"], pts["x1"].max() + pad["x1"]])
    ax.set_xlim(*lim)
    ax.set_ylim(pts["x2"].min() - pad["x2"], pts["x2"].max() + pad["x2"])
    models = [("fl", dict(color="k", ls="--"), "FL")] + [
        (f"cfl{j}", dict(color=_COLOURS[j], ls="-"), f"CFL group {j + 1}") for j in range(2)]
    xs = np.linspace(lim[0], lim[1], 50)
    for key, style, lab in models:
        w1, w2, b = (float(rep0.get(f"{key}_{s}", np.nan)) for s in ("w1", "w2", "b"))
        if not np.isfinite(w1):
            continue
        if abs(w2) > 1e-9 * max(abs(w1), 1e-300):
            ax.plot(xs, -(w1 * xs + b) / w2, lw=1, label=lab, **style)
        elif abs(w1) > 0:
            ax.axvline(-b / w1, lw=1, label=lab, **style)
    ax.set_title(f"Figure 1 {case}: replicate 0, FL acc {rep0['acc_fl']:.2f}, CFL acc "
                 f"{rep0['acc_cfl']:.2f}", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    p = params["params"]
    fig = Figure(figsize=(15, 9))
    axes = fig.subplots(2, 3)
    fig2 = table[table["part"] == "fig2"]
    for ax, case in zip(axes[0, :2], FIG2_CASES):
        t = fig2[(fig2["case"] == case) & (fig2["rep"] < 8)]
        _draw_toy(ax, p, case, t.sort_values(["rep", "round"]))
    _draw_norms(axes[0, 2], axes[1, 0], fig2, 1e-17)
    for ax, case in zip(axes[1, 1:], p["xor_cases"]):
        _draw_xor(ax, case, table[(table["part"] == "xor") & (table["case"] == case)])
    for ax in axes[1, 1 + len(p["xor_cases"]):]:
        ax.set_axis_off()
    fig.suptitle(f"CFLF12: {verdict.verdict}", fontsize=10)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="CFLF12", order=230, paper="CFL", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
