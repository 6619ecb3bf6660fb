"""Study T2F: the additive term ``eps0`` of Theorem 2 (strongly convex losses) in shape.

Theorem 2 (long version): with step ``1/L`` and every model within ``(1/2 - alpha) sqrt(lambda/L)
Delta`` of its minimizer, for a fixed ``j``, with probability at least ``1 - delta``,
``||theta_j^+ - theta*_j|| <= (1 - p lambda/(8L)) ||theta_j - theta*_j|| + eps0`` with

    eps0 <~ v/(delta L sqrt(p m n')) + eta^2/(delta alpha^2 lambda^2 Delta^4 n')
            + v eta k^{3/2}/(delta^{3/2} alpha lambda L Delta^2 sqrt(m) n')

(:func:`bound_terms`, the three terms with constant 1). Study T2 checks the factor; this one
checks ``eps0``: how it moves with ``p``, ``Delta``, ``k``, ``delta``, ``n'`` and ``m``.

Setting: the two losses of :data:`mixlinreg.theory.convex.LOSS_SETUPS`, ``theta*_j = R e_j`` in
``d = 5`` (:func:`~mixlinreg.theory.convex.theta_star_of`), resampled IFCA (``resample=True``,
step ``1/L``; the kernel divides summed gradients by ``m`` as Algorithm 2 does). A cell is one
``(p, R, k, n', m)``; the cells vary one variable at a time from the base cell (``p = 1/2``,
``k = 2``, the setting's ``R``, ``n'``, ``m``); with ``k > 2`` the clusters are equal, ``p =
1/k``. ``lambda, L, eta^2, v^2``, Theorem 2's ball radius and the population minimizers
``theta_pop_j`` are a shared piece per ``(loss, R)`` (:func:`constants_piece`; by rotation
symmetry they do not depend on ``k``: ``theta_pop_j = c e_j`` for every ``k``). Distances are to
``theta_pop_j``; ``Delta`` is their separation ``c sqrt(2)``.

Measurement. The models start at ``start_frac`` times Theorem 2's radius from ``theta_pop`` (in
random directions: inside the ball, near the stationary floor), the first ``burn`` iterations are
dropped, and each later step ``t -> t+1`` of each run gives the excess ``e_{t+1} - rho e_t``,
``rho = 1 - p lambda/(8L)``, ``p = min_j p_j``; steps where some model is outside the ball are
left out (the theorem's condition fails there). ``eps0_hat(delta)`` is the ``1 - delta``
quantile of the excesses over steps, runs and seeds, per cluster ``j`` (:func:`measure`); its
interval resamples seeds (independent data sets; :func:`boot_quantiles`).

Shape rule (:func:`slopes`, :func:`decide`). For each variable, the log-log slope of
``eps0_hat`` over its levels (``delta`` only over ``delta <= delta_fit_max``), turned into the
growth exponent in the hard direction (``p``, ``Delta``, ``delta``, ``n'``, ``m`` decreasing,
``k`` increasing), is held to the bound's allowance: the largest growth exponent of any of its
three terms over the same levels (the constants ``lambda, L, eta, v, alpha`` re-evaluated at
each ``R``). The bound is an upper bound with unknown constants, so a slower growth (or a decay)
is consistent with it; a growth faster than every term's, beyond ``slope_margin``, is not.
Version 2 (misassignment exercised). In version 1 almost no step had a misassigned machine, so
the terms B and C were never tested. The Delta and k sweeps now run at ``n' = n_prime_hard``
(:func:`n_prime_hard`), and every cell also runs the known-cluster oracle (the same resampled
updates on the same blocks with the true assignments). ``share = 1 - eps0_oracle/eps0_IFCA`` at
``delta_base`` is the part of ``eps0_hat`` due to misassignment; a cell with ``share >=
share_min`` is hard (:func:`hard_cells`, the Verdict's ``cells``). The misassignment rule
(:func:`mis_slopes`) holds the growth of ``eps0_IFCA - eps0_oracle`` over a sweep's hard cells
to the largest growth of B and C plus ``slope_margin``; with fewer than 2 hard cells a check is
"not reached" and a claim that holds holds with a caveat at most (:func:`decide`).

Control: :func:`ifca_flip`, IFCA whose assignment step sends each machine to a uniformly drawn
other cluster with probability :func:`flip_prob` (growing as ``R_mult^-flip_power``, faster than
B and C allow); ``flip_ref = 0`` (the default) is IFCA's own step.
Config: ``mixlinreg/configs/studies/T2F.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...ifca import ifca
from ..convex import D, LOSS_SETUPS, draw_cluster_data, init_at_distance, theorem2_radius, \
    theta_star_of
from ..study import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision, Study, Verdict,
                     combine, with_margin)
from ..words import sensitivity_lines, words

#: the study's prose: t2f.md beside this module
WORDS = words(__file__)

#: the variables, their hard direction (+1: the bound grows as it increases) and their labels
VARIABLES = {"p": -1, "Delta": -1, "k": 1, "delta": -1, "n_prime": -1, "m": -1}
LABELS = {"p": "p", "Delta": "Delta", "k": "k", "delta": "delta", "n_prime": "n'", "m": "m"}
TERMS = ("A", "B", "C")
_OPEN01 = dict(low=0, high=1, open="both")
SCHEMA = {
    "params": {
        "losses": Spec("list[str]"), "m": Spec("int", low=4), "n_prime": Spec("int", low=1),
        "p_levels": Spec("list[float]", low=0, high=0.5, open="low"),
        "R_mults": Spec("list[float]", low=0, open="low"), "k_levels": Spec("list[int]", low=2),
        "n_prime_levels": Spec("list[int]", low=1), "m_levels": Spec("list[int]", low=4),
        "deltas": Spec("list[float]", **_OPEN01), "delta_base": Spec("float", **_OPEN01),
        "T": Spec("int", low=2), "burn": Spec("int", low=0), "tail": Spec("int", low=1),
        "seeds": Spec("int", low=2), "runs": Spec("int", low=1),
        "start_frac": Spec("float", low=0, high=1, open="high"),
        "alpha0": Spec("float", low=0, high=0.5, open="both"), "n_boot": Spec("int", low=100),
        "n_samples": Spec("int", low=1000), "n_line": Spec("int", low=1000),
        "n_points": Spec("int", low=1), "n_bisect": Spec("int", low=0),
        # v2: the Delta and k sweeps at n' = n_prime_hard, where misassignments are frequent
        # (0: at the base cell's n', as in v1)
        "n_prime_hard": Spec("int", low=0, required=False, default=0),
        # the control's broken assignment step (:func:`flip_prob`; 0: IFCA's own, the study)
        "flip_ref": Spec("float", low=0, high=1, required=False, default=0.0),
        "flip_power": Spec("float", low=0, required=False, default=0.0),
        "flip_cap": Spec("float", low=0, high=1, required=False, default=0.5),
    },
    "margins": {
        "slope_margin": Spec("float", low=0), "slope_margin_neighbours": Spec("list[float]", low=0),
        "confidence": Spec("float", **_OPEN01),
        "confidence_neighbours": Spec("list[float]", **_OPEN01),
        "delta_fit_max": Spec("float", **_OPEN01),
        "delta_fit_max_neighbours": Spec("list[float]", **_OPEN01),
        # v2: a cell of the Delta or k sweep is judged by the misassignment rule when at least
        # this share of its eps0_hat is due to misassignment (1 - eps0_oracle / eps0_IFCA)
        "share_min": Spec("float", low=0, high=1, open="both", required=False, default=0.5),
        "share_min_neighbours": Spec("list[float]", low=0, high=1, open="both", required=False,
                                     default=[]),
    },
}

#: the variables of the misassignment rule (v2) and the bound's terms it holds them to
MIS_VARIABLES = ("Delta", "k")
MIS_TERMS = ("B", "C")
NOT_REACHED = "not reached"


# ------------------------------------------------------------------------------ the bound

def bound_terms(*, v, L, lam, eta, alpha, delta, p, m, n_prime, k, Delta):
    """Theorem 2's three terms of ``eps0`` with constant 1: ``(A, B, C)``.

    >>> a, b, c = bound_terms(v=1, L=1, lam=1, eta=1, alpha=0.25, delta=0.25, p=0.25, m=16,
    ...                       n_prime=4, k=4, Delta=1)
    >>> float(a), float(b), float(c)
    (1.0, 16.0, 16.0)
    """
    A = v / (delta * L * np.sqrt(p * m * n_prime))
    B = eta ** 2 / (delta * alpha ** 2 * lam ** 2 * Delta ** 4 * n_prime)
    C = v * eta * k ** 1.5 / (delta ** 1.5 * alpha * lam * L * Delta ** 2 * np.sqrt(m) * n_prime)
    return A, B, C


def ols_slope(x, y):
    """Least-squares slope of ``log y`` on ``log x`` (NaN unless every ``y > 0`` is finite).

    >>> round(ols_slope([1, 2, 4], [3, 1.5, 0.75]), 12)
    -1.0
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not (np.all(np.isfinite(y)) and np.all(y > 0)):
        return np.nan
    u = np.log(x) - np.log(x).mean()
    return float(u @ (np.log(y) - np.log(y).mean()) / (u @ u))


# ------------------------------------------------------------------------------ cells and units

def _err(msg):
    return ValueError(f"study T2F: {msg}")


def cells(p):
    """The cells ``{name: {"p", "R_mult", "k", "n_prime", "m"}}`` and the sweeps ``{variable:
    [cell names in level order]}`` (``delta``: the base cell); checks the design."""
    for key, base in (("p_levels", 0.5), ("R_mults", 1.0), ("k_levels", 2),
                      ("n_prime_levels", p["n_prime"]), ("m_levels", p["m"])):
        if base not in p[key]:
            raise _err(f"params.{key} must include the base value {base:g}, got {p[key]}")
        if len(set(p[key])) < 2:
            raise _err(f"params.{key} needs at least 2 distinct levels, got {p[key]}")
    if max(p["k_levels"]) > D:
        raise _err(f"params.k_levels must be <= d = {D}, got {p['k_levels']}")
    if p["delta_base"] not in p["deltas"]:
        raise _err(f"params.delta_base ({p['delta_base']:g}) must be one of params.deltas")
    if p["burn"] >= p["T"] or p["tail"] > p["T"] - p["burn"]:
        raise _err(f"params.burn must be < params.T and params.tail <= T - burn, got T = "
                   f"{p['T']}, burn = {p['burn']}, tail = {p['tail']}")
    base = dict(p=0.5, R_mult=1.0, k=2, n_prime=p["n_prime"], m=p["m"])
    hard = dict(base, n_prime=n_prime_hard(p))
    grid = {"p": [dict(base, p=v) for v in p["p_levels"]],
            "Delta": [dict(hard, R_mult=v) for v in p["R_mults"]],
            "k": [dict(hard, k=v, p=1.0 / v) for v in p["k_levels"]],
            "delta": [base], "n_prime": [dict(base, n_prime=v) for v in p["n_prime_levels"]],
            "m": [dict(base, m=v) for v in p["m_levels"]]}
    out, sweeps = {}, {}
    for var, cs in grid.items():
        names = []
        for c in cs:
            name = f"p={c['p']:.4g}_R={c['R_mult']:g}_k={c['k']}_n={c['n_prime']}_m={c['m']}"
            sizes(c)  # checks p m and m / k are whole
            out.setdefault(name, c)
            names.append(name)
        sweeps[var] = names
    return out, sweeps


def n_prime_hard(p):
    """The n' of the Delta and k sweeps: ``params.n_prime_hard``, or the base n' where it is 0
    (or absent).

    >>> n_prime_hard({"n_prime": 50, "n_prime_hard": 10}), n_prime_hard({"n_prime": 50})
    (10, 50)
    """
    return int(p.get("n_prime_hard") or p["n_prime"])


def flip_prob(p, R_mult):
    """The control's broken assignment step: the probability that a machine's estimate is
    replaced by a uniformly drawn other cluster, ``min(flip_cap, flip_ref R_mult^-flip_power)``
    (0 with the defaults: IFCA's own step).

    >>> flip_prob({"flip_ref": 0.01, "flip_power": 20, "flip_cap": 0.5}, 0.5)
    0.5
    >>> round(flip_prob({"flip_ref": 0.01, "flip_power": 2, "flip_cap": 0.5}, 0.5), 12)
    0.04
    >>> flip_prob({}, 0.5)
    0.0
    """
    ref = float(p.get("flip_ref", 0.0))
    if ref <= 0:
        return 0.0
    return float(min(p.get("flip_cap", 0.5), ref * R_mult ** -float(p.get("flip_power", 0.0))))


def ifca_flip(X, y, init, lr, n_iter, *, loss, l2, huber_delta, theta_star, q, rng):
    """Resampled IFCA (gradient averaging, every machine, ``resample=True``: iteration ``t``
    estimates on block ``2t`` and steps on block ``2t + 1`` of ``n' = n // (2 n_iter)`` rows,
    ``theta_j <- theta_j - (lr/m) sum_{a_i = j} grad F_i(theta_j)``) whose assignment step is
    broken: after the argmin each machine's estimate is replaced, with probability ``q``, by a
    uniformly drawn other cluster (``rng``). With ``q = 0`` it is
    :func:`mixlinreg.ifca.ifca` (``tests/test_theorem2_floor.py``). Returns ``(dist, labels)``
    as the trace's: ``dist`` (n_iter + 1, R, k, k') and ``labels`` (n_iter + 1, R, m), index
    ``n_iter`` the final evaluation on all rows (never flipped)."""
    from ...losses import derivative_array, get as get_loss, value_array

    code = get_loss(loss).code
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    theta = np.array(init, dtype=float)
    ts = np.asarray(theta_star, dtype=float)
    m, n, _ = X.shape
    R, k, _ = theta.shape
    npr = n // (2 * n_iter)
    dist = np.empty((n_iter + 1, R, k, ts.shape[0]))
    labels = np.empty((n_iter + 1, R, m), dtype=np.int64)
    runs = np.arange(R)[:, None]
    for t in range(n_iter + 1):
        dist[t] = np.linalg.norm(theta[:, :, None, :] - ts[None, None], axis=3)
        rows = slice(None) if t == n_iter else slice(2 * t * npr, (2 * t + 1) * npr)
        Xe, ye = X[:, rows], y[:, rows]
        z = (Xe.reshape(-1, Xe.shape[2]) @ theta.reshape(R * k, -1).T).reshape(
            m, Xe.shape[1], R, k)
        F = (value_array(z, ye[:, :, None, None], code, huber_delta).mean(axis=1).transpose(1, 2, 0)
             + 0.5 * l2 * (theta ** 2).sum(axis=2)[:, :, None])  # (R, k, m)
        a = F.argmin(axis=1)  # (R, m), ties to the lowest index
        if t == n_iter:
            labels[t] = a
            break
        if q > 0:
            flip = rng.random((R, m)) < q
            a = np.where(flip, (a + rng.integers(1, k, size=(R, m))) % k, a)
        labels[t] = a
        gr = slice((2 * t + 1) * npr, (2 * t + 2) * npr)
        Xg, yg = X[:, gr], y[:, gr]
        th = theta[runs, a]  # (R, m, d): each machine's model
        zg = np.matmul(Xg, th.transpose(1, 2, 0))  # (m, n', R)
        w = derivative_array(zg, yg[:, :, None], code, huber_delta)
        g = np.matmul(Xg.transpose(0, 2, 1), w).transpose(2, 0, 1) / npr + l2 * th  # (R, m, d)
        onehot = (a[:, :, None] == np.arange(k)).astype(float)  # (R, m, k)
        theta = theta - (lr / m) * np.einsum("rmk,rmd->rkd", onehot, g)
    return dist, labels


def sizes(c):
    """Machines per cluster of a cell: ``[p m, m - p m]`` for ``k = 2``, ``m / k`` each else."""
    m, k = c["m"], c["k"]
    if k == 2:
        n1 = c["p"] * m
        if abs(n1 - round(n1)) > 1e-9 or round(n1) < 1:
            raise _err(f"p m must be a whole number >= 1 (params.p_levels, params.m, "
                       f"params.m_levels), got p = {c['p']:g}, m = {m}")
        return [int(round(n1)), m - int(round(n1))]
    if m % k:
        raise _err(f"m must be a multiple of every k (params.m, params.k_levels), got m = {m}, "
                   f"k = {k}")
    return [m // k] * k


def units(params):
    p = params["params"]
    for loss in p["losses"]:
        if loss not in LOSS_SETUPS:
            raise _err(f"params.losses must be among {sorted(LOSS_SETUPS)}, got {loss!r}")
    cs, _ = cells(p)
    if sum(d <= params["margins"]["delta_fit_max"] for d in p["deltas"]) < 2:
        raise _err(f"margins.delta_fit_max ({params['margins']['delta_fit_max']:g}) must leave "
                   f"at least 2 of params.deltas {p['deltas']} for the delta fit")
    return [(f"{loss}_{name}", {"loss": loss, "cell": name, **c})
            for loss in p["losses"] for name, c in cs.items()]


def constants_piece(loss, R, p):
    """Shared piece of ``(loss, R)``: ``compute(rng) -> DataFrame`` (one row) with ``lambda, L,
    eta^2, v^2`` on Theorem 2's ball (:func:`~mixlinreg.theory.convex.theorem2_radius` for two
    clusters ``R e_1, R e_2``), the ball's radius, ``alpha_eff``, ``Delta`` and the norm ``c`` of
    the population minimizers (``theta_pop_j = c e_j``)."""
    s = LOSS_SETUPS[loss]

    def compute(rng):
        c, phi, alpha_eff = theorem2_radius(
            loss, theta_star_of(R), alpha0=p["alpha0"], sigma=s["sigma"], df=s["df"],
            l2=s["l2"], huber_delta=s["huber_delta"], seed=int(rng.integers(2**31)),
            n_samples=p["n_samples"], n_line=p["n_line"], n_points=p["n_points"],
            n_bisect=p["n_bisect"])
        return pd.DataFrame([{"loss": loss, "R": R, "lam": c.lam, "L": c.L, "eta2": c.eta2,
                              "v2": c.v2, "delta": c.delta, "radius": c.radius,
                              "alpha_eff": alpha_eff,
                              "center_norm": float(np.linalg.norm(c.centers, axis=1).mean())}])

    return compute


def _sig(a, digits=6):
    return np.array([float(f"{x:.{digits}g}") for x in np.asarray(a, dtype=float).ravel()])


def compute(spec, params, rng, shared):
    p = params["params"]
    loss, k, n_prime, m = spec["loss"], spec["k"], spec["n_prime"], spec["m"]
    s = LOSS_SETUPS[loss]
    R = float(f"{s['R'] * spec['R_mult']:.12g}")
    cons = shared(f"constants_{loss}_R={R:g}", constants_piece(loss, R, p)).iloc[0]
    centers = cons["center_norm"] * np.eye(k, D)
    L, radius, T, burn, runs = float(cons["L"]), float(cons["radius"]), p["T"], p["burn"], p["runs"]
    sz = sizes(spec)
    ts = theta_star_of(R, k=k)
    steps, diverged, oracle_seeds = [], 0, 0
    nt = T + 1 - burn
    q = flip_prob(p, spec["R_mult"])
    kw = dict(loss=loss, l2=s["l2"], huber_delta=s["huber_delta"])
    for seed, gen in enumerate(rng.spawn(p["seeds"])):
        X, y, labels = draw_cluster_data(loss, ts, sz, 2 * n_prime * T, gen, sigma=s["sigma"],
                                         df=s["df"])
        init = init_at_distance(centers, p["start_frac"] * radius, runs, gen)
        if q > 0:  # the control: the broken assignment step
            dist, lab_all = ifca_flip(X, y, init, 1.0 / L, T, theta_star=centers, q=q, rng=gen,
                                      **kw)
        else:
            # one numba thread: these calls are small (results do not depend on it)
            res = ifca(X, y, init, 1.0 / L, n_iter=T, theta_star=centers, resample=True,
                       trace=True, n_threads=1, **kw)
            diverged += int(res.diverged.sum())
            dist, lab_all = res.trace.dist, res.trace.labels
        e = dist[burn:, :, np.arange(k), np.arange(k)]  # (nt, runs, k)
        inball = np.all(np.isfinite(e) & (e <= radius), axis=2)  # (nt, runs)
        lab = lab_all[burn:]  # (nt, runs, m)
        # the known-cluster oracle: the same resampled updates on the same blocks with the true
        # assignments (cluster j alone, step (p_j/L)(1/m_j) = (1/L)(1/m)). Where no machine of
        # the seed was misassigned in any iteration IFCA's iterates are the oracle's (to
        # rounding): reused; otherwise run.
        if bool((lab_all[:T] != labels).any()):
            oracle_seeds += 1
            eo = np.empty((T + 1, runs, k))
            for j in range(k):
                sel = labels == j
                ro = ifca(X[sel], y[sel], init[:, j:j + 1], sz[j] / m / L, n_iter=T,
                          theta_star=centers[j:j + 1], resample=True, trace=True, n_threads=1,
                          **kw)
                eo[:, :, j] = ro.trace.dist[:, :, 0, 0]
            eo = eo[burn:]
        else:
            eo = e
        inball_o = np.all(np.isfinite(eo) & (eo <= radius), axis=2)
        mis_any = (lab != labels).any(axis=2)  # (nt, runs): some machine misassigned
        for j in range(k):
            mis = (lab[:, :, labels == j] != j).mean(axis=2)  # (nt, runs)
            steps.append(pd.DataFrame({
                "part": "step", "cluster": j, "seed": seed,
                "run": np.tile(np.arange(runs), nt), "t": np.repeat(np.arange(burn, T + 1), runs),
                "err": _sig(e[:, :, j]), "mis": _sig(mis), "inball": inball.ravel(),
                "err_o": _sig(eo[:, :, j]), "inball_o": inball_o.ravel(),
                "mis_any": mis_any.ravel()}))
    meta = [{"part": "cell", "cluster": j, "p": spec["p"], "R_mult": spec["R_mult"], "R": R,
             "k": k, "n_prime": n_prime, "m": m, "size": sz[j], "p_j": sz[j] / m, "T": T,
             "burn": burn, "seeds": p["seeds"], "runs": runs, "diverged_runs": diverged,
             "oracle_seeds": oracle_seeds, "flip": q,
             **{c: float(cons[c]) for c in ("lam", "L", "eta2", "v2", "delta", "radius",
                                            "alpha_eff", "center_norm")}} for j in range(k)]
    out = pd.concat([pd.DataFrame(meta)] + steps, ignore_index=True)
    return out.assign(loss=loss, cell=spec["cell"])


# ------------------------------------------------------------------------------ measurements

def excess_by_seed(err, inball, rho):
    """Per seed, the excesses ``e_{t+1} - rho e_t`` of the steps whose start ``t`` is in the ball
    (``inball``) with both errors finite. ``err``, ``inball``: arrays (seeds, runs, nt).

    >>> e = np.array([[[1.0, 0.5, 0.6]]]); ok = np.ones_like(e, dtype=bool)
    >>> [a.tolist() for a in excess_by_seed(e, ok, 0.5)]
    [[0.0, 0.35]]
    """
    ex = err[:, :, 1:] - rho * err[:, :, :-1]
    ok = inball[:, :, :-1] & np.isfinite(ex)
    return [ex[s][ok[s]] for s in range(err.shape[0])]


def boot_quantiles(by_seed, qs, n_boot, rng, idx=None):
    """Pooled quantiles ``qs`` of the seeds' values and their bootstrap over seeds: ``est``
    (len(qs),) and ``boot`` (n_boot, len(qs)); NaN where no value is left. ``idx`` (n_boot,
    seeds): the resampled seeds (default drawn from ``rng`` as ``rng.integers(S, size=(n_boot,
    S))``), so that two quantities of the same seeds are resampled together."""
    S, qs = len(by_seed), np.asarray(qs, dtype=float)
    pooled = np.concatenate(by_seed)
    est = np.quantile(pooled, qs) if pooled.size else np.full(qs.size, np.nan)
    idx = rng.integers(S, size=(n_boot, S)) if idx is None else np.asarray(idx)
    lens = {a.size for a in by_seed}
    if len(lens) == 1 and pooled.size:
        M = np.stack(by_seed)[idx].reshape(n_boot, -1)
        return est, np.quantile(M, qs, axis=1).T
    boot = np.full((n_boot, qs.size), np.nan)
    for b in range(n_boot):
        vals = np.concatenate([by_seed[i] for i in idx[b]])
        if vals.size:
            boot[b] = np.quantile(vals, qs)
    return est, boot


def _arrays(g, S, runs, nt):
    g = g.sort_values(["seed", "run", "t"])
    if len(g) != S * runs * nt:
        raise _err(f"expected {S * runs * nt} step rows per cluster and cell, got {len(g)}")
    return (g["err"].to_numpy(float).reshape(S, runs, nt),
            g["inball"].to_numpy(bool).reshape(S, runs, nt), g["mis"].to_numpy(float))


def _oracle_arrays(g, S, runs, nt):
    """The oracle's errors and ball flags and the steps' misassignment flags (seeds, runs, nt);
    None where the table has no oracle (a table made by hand)."""
    if "err_o" not in g or g["err_o"].isna().all():
        return None
    g = g.sort_values(["seed", "run", "t"])
    return (g["err_o"].to_numpy(float).reshape(S, runs, nt),
            g["inball_o"].to_numpy(bool).reshape(S, runs, nt),
            g["mis_any"].to_numpy(bool).reshape(S, runs, nt))


def measure(table, params, rng):
    """One row per (loss, cell, cluster): the cell, its constants, ``rho``, ``eps0_hat`` at every
    ``delta`` (columns ``eps0_<delta>``), the bound's terms at ``delta_base``, the floor (mean
    error over the last ``tail`` iterations), misclassification, steps used and left out; and
    ``boot``: ``{(loss, cell, cluster): (n_boot, len(deltas))}`` for clusters 0 and 1."""
    p = params["params"]
    deltas = np.asarray(p["deltas"], dtype=float)
    meta = table[table["part"] == "cell"]
    steps = table[table["part"] == "step"]
    groups = dict(iter(steps.groupby(["loss", "cell", "cluster"], sort=False)))
    rows, boot = [], {}
    for _, c in meta.iterrows():
        key = (c["loss"], c["cell"], int(c["cluster"]))
        S, runs, T, burn = int(c["seeds"]), int(c["runs"]), int(c["T"]), int(c["burn"])
        err, inball, mis = _arrays(groups[key], S, runs, T + 1 - burn)
        pmin = 1.0 / c["k"] if c["k"] > 2 else min(c["p"], 1 - c["p"])
        rho = 1.0 - pmin * c["lam"] / (8 * c["L"])
        by_seed = excess_by_seed(err, inball, rho)
        gen = rng(f"{key[0]}_{key[1]}_{key[2]}")
        idx = gen.integers(S, size=(p["n_boot"], S))
        est, b = boot_quantiles(by_seed, 1 - deltas, p["n_boot"], gen, idx=idx)
        if key[2] < 2:
            boot[key] = b
        orc = _oracle_arrays(groups[key], S, runs, T + 1 - burn)
        if orc is None:
            est_o, mis_steps = np.full(deltas.size, np.nan), np.nan
        else:
            by_seed_o = excess_by_seed(orc[0], orc[1], rho)
            est_o, b_o = boot_quantiles(by_seed_o, 1 - deltas, p["n_boot"], gen, idx=idx)
            if key[2] < 2:
                boot[key + ("oracle",)] = b_o
            # steps t -> t + 1 (t < T) in which some machine of the cell was misassigned
            mis_steps = float(orc[2][:, :, :-1].mean())
        A, B, C = bound_terms(v=np.sqrt(c["v2"]), L=c["L"], lam=c["lam"], eta=np.sqrt(c["eta2"]),
                              alpha=c["alpha_eff"], delta=p["delta_base"], p=pmin, m=c["m"],
                              n_prime=c["n_prime"], k=c["k"], Delta=c["delta"])
        n_used = sum(a.size for a in by_seed)
        half = (err.shape[2] - 1) // 2
        row = {**{k: c[k] for k in ("loss", "cell", "cluster", "p", "R_mult", "R", "k", "n_prime",
                                     "m", "p_j", "lam", "L", "eta2", "v2", "delta", "radius",
                                     "alpha_eff", "diverged_runs")},
               "p_min": pmin, "rho": rho, "steps_used": n_used,
               "steps_left_out": err[:, :, :-1].size - n_used,
               **{f"eps0_{d:g}": float(x) for d, x in zip(deltas, est)},
               "A": A, "B": B, "C": C, "floor": float(err[:, :, -p["tail"]:].mean()),
               "drift": float(err[:, :, -half:].mean() / err[:, :, 1:1 + half].mean())
               if half else np.nan, "mis": float(mis.mean()),
               "assumption6_ratio": c["n_prime"] * p["alpha0"] ** 2 * c["lam"] ** 2
               * c["delta"] ** 4 / (c["k"] * c["eta2"]),
               **{f"eps0o_{d:g}": float(x) for d, x in zip(deltas, est_o)},
               "mis_steps": mis_steps, "flip": float(c.get("flip", 0.0)),
               "oracle_seeds": float(c.get("oracle_seeds", np.nan))}
        row["shape"] = A + B + C
        e0 = row[f"eps0_{p['delta_base']:g}"]
        e0o = row[f"eps0o_{p['delta_base']:g}"]
        # the share of eps0_hat(delta_base) due to misassignment (NaN unless eps0_hat > 0)
        row["mis_excess"] = e0 - e0o
        row["share"] = 1.0 - e0o / e0 if e0 > 0 else np.nan
        row["ratio"] = e0 / row["shape"]
        row["final_bound"] = e0 / (1 - rho)  # 8 L/(p lambda) eps0_hat
        rows.append(row)
    return pd.DataFrame(rows), boot


def _x(var, c, delta):
    return {"p": c["p"], "Delta": c["delta"], "k": c["k"], "n_prime": c["n_prime"],
            "m": c["m"], "delta": delta}[var]


def _points(cellrows, sweeps, var, deltas, delta_base, delta_fit_max):
    """``[(cell name, delta index, x)]`` of a variable's levels."""
    if var == "delta":
        return [(sweeps["delta"][0], i, d) for i, d in enumerate(deltas) if d <= delta_fit_max]
    ib = list(deltas).index(delta_base)
    return [(n, ib, _x(var, cellrows[n], delta_base)) for n in sweeps[var]]


def _slope_interval(x, y, by, conf):
    """The log-log slope of ``y`` on ``x`` and its bootstrap interval at ``conf`` from the
    resampled ``by`` (one row per resample; a row with a value <= 0 has no slope), widened to
    hold the estimate, and the share of resamples that had a slope."""
    u = np.log(x) - np.log(x).mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        bs = np.where(np.all(by > 0, axis=1),
                      (np.log(np.where(by > 0, by, 1.0)) @ u) / (u @ u), np.nan)
    est = ols_slope(x, y)
    lo, hi = _percentile(bs, conf)
    if np.isfinite(est):
        lo, hi = min(lo, est), max(hi, est)
    return est, lo, hi, float(np.isfinite(bs).mean())


def _percentile(a, confidence):
    a = a[np.isfinite(a)]
    if not a.size:
        return np.nan, np.nan
    q = (1 - confidence) / 2
    return tuple(float(v) for v in np.quantile(a, [q, 1 - q]))


def slopes(cellrows, boot, params, confidence=None, delta_fit_max=None):
    """One row per (loss, cluster 0/1, variable): the measured log-log slope of ``eps0_hat`` and
    its bootstrap interval, each term's slope, and in the hard direction the measured growth
    exponent (``growth``, ``growth_lo``, ``growth_hi``) and the bound's ``allowance`` (largest
    term growth)."""
    p, mg = params["params"], params["margins"]
    conf = mg["confidence"] if confidence is None else confidence
    dmax = mg["delta_fit_max"] if delta_fit_max is None else delta_fit_max
    deltas = list(p["deltas"])
    _, sweeps = cells(p)
    rows = []
    for (loss, j), g in cellrows[cellrows["cluster"] < 2].groupby(["loss", "cluster"], sort=False):
        byname = {r["cell"]: r for _, r in g.iterrows()}
        for var, sign in VARIABLES.items():
            pts = _points(byname, sweeps, var, deltas, p["delta_base"], dmax)
            row = {"loss": loss, "cluster": int(j), "variable": var, "levels": len(pts)}
            x = np.array([pt[2] for pt in pts], dtype=float)
            if len(pts) < 2:
                rows.append(dict(row, slope=np.nan, growth=np.nan, allowance=np.nan))
                continue
            y = np.array([byname[n][f"eps0_{deltas[i]:g}"] for n, i, _ in pts])
            by = np.column_stack([boot[(loss, n, int(j))][:, i] for n, i, _ in pts])
            est, lo, hi, positive = _slope_interval(x, y, by, conf)
            terms = {}
            for t in TERMS:
                tv = [byname[n][t] * (p["delta_base"] / d) ** (1.5 if t == "C" else 1.0)
                      if var == "delta" else byname[n][t] for n, _, d in pts]
                terms[t] = ols_slope(x, tv)
            const1 = ols_slope(x, [sum(byname[n][t] * ((p["delta_base"] / d) ** (
                1.5 if t == "C" else 1.0) if var == "delta" else 1.0) for t in TERMS)
                for n, _, d in pts])
            g_lo, g_hi = sorted((sign * lo, sign * hi))
            rows.append(dict(row, x_min=x.min(), x_max=x.max(), eps0_first=y[0], eps0_last=y[-1],
                             slope=est, slope_lo=lo, slope_hi=hi,
                             **{f"slope_{t}": terms[t] for t in TERMS}, slope_const1=const1,
                             growth=sign * est, growth_lo=g_lo, growth_hi=g_hi,
                             allowance=max(sign * terms[t] for t in TERMS)))
    return pd.DataFrame(rows)


def mis_slopes(cellrows, boot, params, confidence=None, share_min=None):
    """The misassignment rule's checks (v2): one row per (loss, cluster 0/1, variable of
    :data:`MIS_VARIABLES`). The sweep's hard cells are those whose misassignment share
    ``1 - eps0_oracle/eps0_IFCA`` at ``delta_base`` is at least ``share_min``; over them (at
    least 2, else ``reached`` is False), the log-log slope of the misassignment excess
    ``eps0_IFCA - eps0_oracle`` (its interval from the joint bootstrap over seeds), its growth in
    the hard direction and the ``allowance``: the largest growth of the bound's misassignment
    terms B and C over the same cells."""
    p, mg = params["params"], params["margins"]
    conf = mg["confidence"] if confidence is None else confidence
    smin = mg.get("share_min", 0.5) if share_min is None else share_min
    deltas = list(p["deltas"])
    ib = deltas.index(p["delta_base"])
    _, sweeps = cells(p)
    rows = []
    for (loss, j), g in cellrows[cellrows["cluster"] < 2].groupby(["loss", "cluster"], sort=False):
        byname = {r["cell"]: r for _, r in g.iterrows()}
        for var in MIS_VARIABLES:
            sign = VARIABLES[var]
            names = [n for n in sweeps[var] if np.isfinite(byname[n]["share"])
                     and byname[n]["share"] >= smin]
            row = {"loss": loss, "cluster": int(j), "variable": var, "levels": len(names),
                   "levels_total": len(sweeps[var]), "reached": len(names) >= 2,
                   "share_min": smin,
                   "shares": "/".join(f"{byname[n]['share']:.2f}" for n in sweeps[var])}
            if len(names) < 2:
                rows.append(dict(row, slope=np.nan, slope_lo=np.nan, slope_hi=np.nan,
                                 growth=np.nan, growth_lo=np.nan, growth_hi=np.nan,
                                 allowance=np.nan))
                continue
            x = np.array([_x(var, byname[n], p["delta_base"]) for n in names], dtype=float)
            y = np.array([byname[n]["mis_excess"] for n in names])
            by = np.column_stack([boot[(loss, n, int(j))][:, ib]
                                  - boot[(loss, n, int(j), "oracle")][:, ib] for n in names])
            est, lo, hi, positive = _slope_interval(x, y, by, conf)
            terms = {t: ols_slope(x, [byname[n][t] for n in names]) for t in MIS_TERMS}
            g_lo, g_hi = sorted((sign * lo, sign * hi))
            rows.append(dict(row, x_min=x.min(), x_max=x.max(), slope=est, slope_lo=lo,
                             slope_hi=hi, **{f"slope_{t}": terms[t] for t in MIS_TERMS},
                             boot_positive=positive,
                             growth=sign * est, growth_lo=g_lo, growth_hi=g_hi,
                             allowance=max(sign * terms[t] for t in MIS_TERMS)))
    return pd.DataFrame(rows)


def hard_cells(cellrows, params, share_min=None):
    """``{"hard", "total", "rule"}`` (the Verdict's ``cells``): of the (loss, cell) pairs, those
    where misassignment makes at least ``share_min`` of eps0_hat(delta_base) in both clusters 0
    and 1."""
    smin = params["margins"].get("share_min", 0.5) if share_min is None else share_min
    g = cellrows[cellrows["cluster"] < 2].groupby(["loss", "cell"], sort=False)["share"]
    hard = g.apply(lambda a: bool(np.all(np.isfinite(a)) and np.all(a >= smin)))
    return {"hard": int(hard.sum()), "total": int(len(hard)),
            "rule": f"a (loss, cell) is hard when misassignment makes at least {smin:g} of "
                    f"eps0_hat({params['params']['delta_base']:g}) in clusters 0 and 1: 1 - "
                    f"eps0_oracle/eps0_IFCA >= {smin:g} (the known-cluster oracle on the same "
                    f"data and blocks)"}


# ------------------------------------------------------------------------------ decide

def check_verdict(growth, lo, hi, allowance, margin):
    """One check: the measured growth exponent (``lo <= growth <= hi``) against ``allowance +
    margin``: "holds" if ``hi`` is at or below it, "not supported" if ``lo`` is above it, a caveat
    if only the estimate is at or below it, "inconclusive" otherwise (or when not measured).

    >>> check_verdict(0.5, 0.4, 0.6, 0.5, 0.25), check_verdict(1.5, 1.2, 1.8, 0.5, 0.25)
    ('holds', 'not supported')
    >>> check_verdict(0.7, 0.5, 0.9, 0.5, 0.25), check_verdict(0.8, 0.6, 1.0, 0.5, 0.25)
    ('holds with a caveat', 'inconclusive')
    """
    if not (np.isfinite(growth) and np.isfinite(lo) and np.isfinite(hi) and np.isfinite(allowance)):
        return INCONCLUSIVE
    thr = allowance + margin
    if hi <= thr:
        return HOLDS
    if lo > thr:
        return NOT_SUPPORTED
    return CAVEAT if growth <= thr else INCONCLUSIVE


def decide(checks, params, mis=None):
    """The verdict from the checks (:func:`slopes`: columns ``variable``, ``growth``,
    ``growth_lo``, ``growth_hi``, ``allowance``) and ``params["margins"]["slope_margin"]``: each
    check by :func:`check_verdict`, the claim the weakest of them. ``mis`` (v2,
    :func:`mis_slopes`): the misassignment rule's checks, each by :func:`check_verdict` with the
    same margin where it was reached (at least 2 hard cells) and "not reached" otherwise; they
    join the weakest, and a claim that holds with some check not reached holds with a caveat
    at most. ``numbers``: the margin, the verdict of each check (in order), the verdict per
    variable, the closest check (largest ``growth_hi - allowance``) with its excess, and with
    ``mis`` the misassignment checks' verdicts and how many were not reached."""
    margin = params["margins"]["slope_margin"]
    verdicts = [check_verdict(r.growth, r.growth_lo, r.growth_hi, r.allowance, margin)
                for r in checks.itertuples()]
    pairs = list(zip(verdicts, checks["variable"]))
    mis_v = []
    if mis is not None:
        mis_v = [check_verdict(r.growth, r.growth_lo, r.growth_hi, r.allowance, margin)
                 if r.reached else NOT_REACHED for r in mis.itertuples()]
    mis_pairs = list(zip(mis_v, mis["variable"])) if mis is not None else []

    def joined(items):
        judged = [w for w in items if w != NOT_REACHED]
        v = combine(judged) if judged else CAVEAT
        return CAVEAT if v == HOLDS and NOT_REACHED in items else v

    by_var = {v: joined([w for w, var in pairs + mis_pairs if var == v])
              for v in dict.fromkeys(checks["variable"])}
    numbers = {"margin": margin, "verdicts": verdicts, "by_variable": by_var}
    gap = checks["growth_hi"] - checks["allowance"]
    if gap.notna().any():
        numbers.update(closest=int(gap.idxmax()), closest_gap=float(gap.max()))
    if mis is not None:
        numbers.update(mis_verdicts=mis_v, not_reached=sum(w == NOT_REACHED for w in mis_v),
                       by_variable_mis={v: joined([w for w, var in mis_pairs if var == v])
                                        for v in dict.fromkeys(mis["variable"])})
    return Decision(joined(verdicts + mis_v), numbers)


# ------------------------------------------------------------------------------ analyze

_at = with_margin  # params with one margin moved (study.with_margin; the tests use this name)


def one_constant(cellrows, params):
    """Per (loss, cluster 0/1): ``c_hat`` = max over cells (and the base cell's deltas up to
    ``delta_fit_max``) of ``eps0_hat / bound shape`` (constants 1), the spread max/min of that
    ratio, and the variable whose sweep spreads it most (where the bound's shape is loosest)."""
    p = params["params"]
    dmax = params["margins"]["delta_fit_max"]
    _, sweeps = cells(p)
    rows = []
    for (loss, j), g in cellrows[cellrows["cluster"] < 2].groupby(["loss", "cluster"], sort=False):
        byname = {r["cell"]: r for _, r in g.iterrows()}
        base = byname[sweeps["delta"][0]]
        per_var = {}
        for var in VARIABLES:
            if var == "delta":
                r = [base[f"eps0_{d:g}"] / sum(bound_terms_at(base, d, p["delta_base"]))
                     for d in p["deltas"] if d <= dmax]
            else:
                r = [byname[n]["ratio"] for n in sweeps[var]]
            per_var[var] = np.asarray(r, dtype=float)
        allr = np.concatenate(list(per_var.values()))
        allr = allr[np.isfinite(allr) & (allr > 0)]
        spread = {v: float(a.max() / a.min()) if np.all(a > 0) else np.nan
                  for v, a in per_var.items()}
        loosest = max(spread, key=lambda v: -np.inf if np.isnan(spread[v]) else spread[v])
        rows.append({"loss": loss, "cluster": int(j),
                     "c_hat": float(allr.max()) if allr.size else np.nan,
                     "spread": float(allr.max() / allr.min()) if allr.size else np.nan,
                     "loosest": loosest, **{f"spread_{v}": s for v, s in spread.items()}})
    return pd.DataFrame(rows)


def bound_terms_at(row, delta, delta_base):
    """A cell's terms (columns ``A, B, C`` at ``delta_base``) moved to ``delta``."""
    f = delta_base / delta
    return row["A"] * f, row["B"] * f, row["C"] * f ** 1.5


def analyze(table, params, rng):
    cellrows, boot = measure(table, params, rng)
    checks = slopes(cellrows, boot, params)
    mis = mis_slopes(cellrows, boot, params)
    dec = decide(checks, params, mis)
    checks = checks.assign(verdict=dec.numbers["verdicts"])
    mis = mis.assign(verdict=dec.numbers["mis_verdicts"])
    const = one_constant(cellrows, params)

    def verdict_at(q, key):  # the slope margin re-reads the checks; the others re-fit them
        if key == "slope_margin":
            return decide(checks, q, mis).verdict
        if key == "share_min":
            return decide(checks, q, mis_slopes(cellrows, boot, q)).verdict
        return decide(slopes(cellrows, boot, q), q, mis_slopes(cellrows, boot, q)).verdict

    return Verdict(dec.verdict, _numbers(checks, mis),
                   _summary(cellrows, checks, mis, const, dec, params),
                   caveats=_caveats(cellrows, mis, params),
                   sensitivity=sensitivity_lines(WORDS, params, verdict_at),
                   tables={"_cells.csv": cellrows, "_slopes.csv": checks, "_mis.csv": mis,
                           "_constant.csv": const},
                   scope=_scope(dec), cells=hard_cells(cellrows, params))


def _fmt(v, lo, hi):
    return "n/a" if not np.isfinite(v) else f"{v:.3g} [{lo:.3g}, {hi:.3g}]"


def _numbers(checks, mis=None):
    out = pd.DataFrame({
        "loss": checks["loss"], "cluster": checks["cluster"],
        "variable": checks["variable"].map(LABELS), "quantity": "eps0_hat",
        "levels": checks["levels"],
        "measured slope [95% CI]": [_fmt(r.slope, r.slope_lo, r.slope_hi) if np.isfinite(r.slope)
                                    else "n/a" for r in checks.itertuples()],
        "term slopes": [f"A/B/C {r.slope_A:.2f}/{r.slope_B:.2f}/{r.slope_C:.2f}"
                        if np.isfinite(r.slope) else "n/a" for r in checks.itertuples()],
        "growth (hard way)": checks["growth"].round(3),
        "bound allows": checks["allowance"].round(3), "verdict": checks["verdict"]})
    if mis is None or not len(mis):
        return out
    mrows = pd.DataFrame({
        "loss": mis["loss"], "cluster": mis["cluster"], "variable": mis["variable"].map(LABELS),
        "quantity": "eps0_hat - eps0_oracle (hard cells)",
        "levels": [f"{r.levels}/{r.levels_total}" for r in mis.itertuples()],
        "measured slope [95% CI]": [_fmt(r.slope, r.slope_lo, r.slope_hi) if r.reached
                                    else "n/a" for r in mis.itertuples()],
        "term slopes": [f"B/C {r.slope_B:.2f}/{r.slope_C:.2f}" if r.reached else "n/a"
                        for r in mis.itertuples()],
        "growth (hard way)": mis["growth"].round(3),
        "bound allows": mis["allowance"].round(3), "verdict": mis["verdict"]})
    return pd.concat([out, mrows], ignore_index=True)


def _scope(dec):
    by = dec.numbers["by_variable"]
    return "; ".join(WORDS.text("scope", variable=LABELS[v], verdict=w) for v, w in by.items())


def _sweep_mis(cellrows, params):
    """Per sweep: the range of the fraction of steps with a misassigned machine and of the
    misassignment share over its cells (clusters 0 and 1, both losses)."""
    p = params["params"]
    _, sweeps = cells(p)
    out = []
    for var in VARIABLES:
        r = cellrows[cellrows["cell"].isin(sweeps[var]) & (cellrows["cluster"] < 2)]
        ns = sorted({int(v) for v in r["n_prime"]})
        out.append(WORDS.text("sweep_mis", variable=LABELS[var],
                              n_primes=", ".join(str(v) for v in ns),
                              f_min=r["mis_steps"].min(), f_max=r["mis_steps"].max(),
                              s_min=r["share"].min(), s_max=r["share"].max()))
    return "; ".join(out)


def _mis_items(mis):
    out = []
    for r in mis.itertuples():
        if r.reached:
            out.append(WORDS.text("mis_check", loss=r.loss, cluster=r.cluster,
                                  variable=LABELS[r.variable],
                                  growth=_fmt(r.growth, r.growth_lo, r.growth_hi),
                                  allowance=r.allowance, levels=r.levels,
                                  levels_total=r.levels_total, verdict=r.verdict))
        else:
            out.append(WORDS.text("mis_check.not_reached", loss=r.loss, cluster=r.cluster,
                                  variable=LABELS[r.variable], levels=r.levels,
                                  levels_total=r.levels_total, shares=r.shares))
    return "; ".join(out)


def _summary(cellrows, checks, mis, const, dec, params):
    p, nb = params["params"], dec.numbers
    base = cellrows[cellrows["cell"] == cells(p)[1]["delta"][0]]
    db = p["delta_base"]
    cons = "; ".join(
        WORDS.text("constants", loss=r["loss"], lam=r["lam"], L=r["L"], eta2=r["eta2"],
                   v2=r["v2"], delta=r["delta"], alpha=r["alpha_eff"])
        for _, r in base[base["cluster"] == 0].iterrows())
    e0 = "; ".join(WORDS.text("eps0", loss=r["loss"], cluster=r["cluster"], eps0=r[f"eps0_{db:g}"],
                              floor=r["floor"], rho=r["rho"]) for _, r in base.iterrows())
    out = [WORDS.text("summary.base", n_prime=p["n_prime"], m=p["m"], constants=cons,
                      delta_base=db, eps0=e0)]
    per = []
    for var in VARIABLES:
        c = checks[(checks["variable"] == var) & checks["growth"].notna()]
        if len(c):
            per.append(WORDS.text("growth", variable=LABELS[var], growth_min=c["growth"].min(),
                                  growth_max=c["growth"].max(), allow_min=c["allowance"].min(),
                                  allow_max=c["allowance"].max()))
    out.append(WORDS.text("summary.growth", margin=nb["margin"], growths="; ".join(per)))
    hc = hard_cells(cellrows, params)
    out.append(WORDS.text("summary.mis", n_hard=n_prime_hard(p), sweeps=_sweep_mis(cellrows, params),
                          hard=hc["hard"], total=hc["total"],
                          share_min=params["margins"].get("share_min", 0.5)))
    out.append(WORDS.text("summary.mis_rule", share_min=params["margins"].get("share_min", 0.5),
                          margin=nb["margin"], items=_mis_items(mis),
                          not_reached=nb.get("not_reached", 0), checks=len(mis)))
    if "closest" in nb:
        r = checks.loc[nb["closest"]]
        out.append(WORDS.text("summary.closest", loss=r["loss"], cluster=r["cluster"],
                              variable=LABELS[r["variable"]],
                              growth=_fmt(r["growth"], r["growth_lo"], r["growth_hi"]),
                              allowance=r["allowance"]))
    out.append(WORDS.text("summary.constant", c_hats="; ".join(
        WORDS.text("c_hat", loss=r["loss"], cluster=r["cluster"], c_hat=r["c_hat"],
                   spread=r["spread"], loosest=LABELS[r["loosest"]],
                   loosest_spread=r["spread_" + r["loosest"]])
        for _, r in const.iterrows())))
    fb = cellrows["floor"] / cellrows["final_bound"]
    out.append(WORDS.text("summary.floors", fb_min=fb.min(), fb_max=fb.max(), delta_base=db))
    return " ".join(out)


def _caveats(cellrows, mis, params):
    p = params["params"]
    return WORDS.items(
        "caveats", n_hard=n_prime_hard(p), n_prime=p["n_prime"],
        oracle_seeds=int(cellrows.groupby(["loss", "cell"])["oracle_seeds"].first().sum()),
        seeds_total=int(cellrows.groupby(["loss", "cell"]).ngroups * p["seeds"]),
        delta_fit_max=params["margins"]["delta_fit_max"], start_frac=p["start_frac"],
        burn=p["burn"], drift_min=cellrows["drift"].min(), drift_max=cellrows["drift"].max(),
        left=int(cellrows["steps_left_out"].sum()), alpha_min=cellrows["alpha_eff"].min(),
        alpha_max=cellrows["alpha_eff"].max(), a6_min=cellrows["assumption6_ratio"].min(),
        a6_max=cellrows["assumption6_ratio"].max(), mis_min=cellrows["mis"].min(),
        mis_max=cellrows["mis"].max())


# ------------------------------------------------------------------------------ figure

def figure(table, verdict, params):
    from matplotlib.figure import Figure

    p = params["params"]
    cellrows, checks = verdict.tables["_cells.csv"], verdict.tables["_slopes.csv"]
    _, sweeps = cells(p)
    db = p["delta_base"]
    fig = Figure(figsize=(15, 8.5))
    axes = fig.subplots(2, 3).ravel()
    for ax, var in zip(axes, VARIABLES):
        for i, ((loss, j), g) in enumerate(cellrows[cellrows["cluster"] < 2].groupby(
                ["loss", "cluster"], sort=False)):
            byname = {r["cell"]: r for _, r in g.iterrows()}
            if var == "delta":
                b = byname[sweeps["delta"][0]]
                x = np.array(p["deltas"], dtype=float)
                y = np.array([b[f"eps0_{d:g}"] for d in p["deltas"]])
                x0, y0 = db, b[f"eps0_{db:g}"]
            else:
                rs = [byname[n] for n in sweeps[var]]
                x = np.array([_x(var, r, db) for r in rs], dtype=float)
                y = np.array([r[f"eps0_{db:g}"] for r in rs])
                b = byname[sweeps["delta"][0]]
                x0, y0 = _x(var, b, db), b[f"eps0_{db:g}"]
            o = np.argsort(x)
            ok = y[o] > 0
            line, = ax.loglog(x[o][ok], y[o][ok], marker="o", ms=4, label=f"{loss} j={j}")
            if var == "delta":  # the levels above delta_fit_max are not fitted: hollow
                out = ok & (x[o] > params["margins"]["delta_fit_max"])
                ax.scatter(x[o][out], y[o][out], s=40, facecolors="white",
                           edgecolors=line.get_color(), zorder=3)
            c = checks[(checks["loss"] == loss) & (checks["cluster"] == j)
                       & (checks["variable"] == var)]
            if len(c) and np.isfinite(c["allowance"].iloc[0]) and y0 > 0:
                s = VARIABLES[var] * c["allowance"].iloc[0]
                xs = np.geomspace(x.min(), x.max(), 20)
                ax.loglog(xs, y0 * (xs / x0) ** s, ls="--", lw=0.8, color=line.get_color())
        ax.set_xlabel(LABELS[var] + (" (quantile level)" if var == "delta" else ""))
        ax.set_ylabel(f"eps0_hat({db:g})" if var != "delta" else "eps0_hat(delta)")
        ax.set_title(f"{LABELS[var]}: dashed = the bound's steepest slope through the base",
                     fontsize=8)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


STUDY = Study(
    id="T2F", order=54, words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure, decide=decide)
