"""What is left to skip in a Figure 2 unit, measured (issue 9; BENCHMARKS.md, "What is left to skip").

    python experiments/left_to_skip.py closed-form fig2d paper m400_n50_d1000_k4_t0000 [more units ...]
    python experiments/left_to_skip.py certificates fig2d paper m300_n100_d1000_k4_t0000 [...]

``closed-form``: how much could a closed-form finish (issue 9, item 3) save?

A closed-form finish replaces the remaining Gram steps of a run whose partition is certified for
the rest of the horizon by ``theta(T) = theta_hat + V (I - c Lambda)^(T - t) V^T (theta(t) -
theta_hat)``, with ``A_j = V Lambda V^T`` the eigendecomposition of each cluster Gram it uses. So it
can save at most the time the unit spends in Gram steps (``path_stats["seconds"]["gram"]`` of the
certified-Gram path), and it costs at least one symmetric eigendecomposition of a ``d x d`` float64
matrix per distinct cluster Gram (the distinct cluster sets of the Grams the unit made, built or
composed). The mode runs the unit on the Gram path (``method="gram"``, as the store computes it),
times ``numpy.linalg.eigh`` of one of the unit's own kind of Gram (``X^T X`` over a quarter of the
machines, float64) in the same process with the same threads, and prints, per unit:

* the unit's seconds and the seconds of each phase of the path (certify, data sweep, Gram steps,
  Gram entries, final evaluation);
* the run-iterations of each kind (full, assigned, Gram);
* the Grams made, and the upper bound of the saving, ``gram_s - grams * eigh_s`` (negative: the
  eigendecompositions alone cost more than all the Gram steps they would replace), as a fraction of
  the unit.

The bound is generous to the closed form: it assumes every Gram step could be finished in closed
form (no certificate for the rest of the horizon fails) and counts nothing for forming
``theta_hat`` or for the certificate itself.

``certificates``: would per-machine certificates shrink the exact evaluations?

The certified-Gram path (``mixlinreg/_gram.py``) certifies a run's assignments as a whole: if the
bounds fail on one machine, the run takes a full step (all k models on every machine) and all its
bounds are reset at its current models. The ``closed-form`` mode measures that these full steps
(the "sweep" phase) are most of a paper unit's time. Issue 9's first item asks for
bounds per (run, machine, model), refreshed by an exact evaluation whenever they cannot certify the
argmin: a run then evaluates all k models only on the machines whose bounds fail, and the assigned
model on the others.

The mode measures what that would save on a unit's real runs, without changing the kernel. It
replays every run of the unit (cells x initializations x step sizes, 300 iterations) with a plain
batched NumPy implementation of the same update in the working dtype (the update of
``mixlinreg.bench.numpy_ifca``, all runs at once; float32 runs that do not converge may follow
other trajectories than the kernel's, so this is an estimate for them), and keeps three sets of
bounds beside it:

* **per run** (today's rule): bounds of each machine at the run's anchor (its models at its last
  full step), widened by ``s_i`` times each model's distance from the anchor; a run is certified
  when every machine is, else all its bounds are refreshed;
* **per machine**: bounds of each (run, machine), widened by ``s_i`` times the length of the path
  each model has taken since that machine's last exact evaluation; only the machines whose bounds
  fail are evaluated and refreshed;
* **per machine, anchored**: today's bounds at the run's anchor, but a machine whose bounds fail
  is evaluated alone and its fresh bounds are moved back to the anchor (loosened by ``s_i`` times
  each model's distance from it); when more than half of a run's machines fail, the run is
  re-anchored (every machine evaluated, as today).

All three use the kernel's margins (the rounding term ``2 gamma_d ||X_i||_F ||theta_j||`` and the
relative ``CERT_REL_MARGIN``). It prints, per unit, the live run-iterations, how many are not fully certified
under each rule, the (run, machine) evaluations of the per-machine rule, and the flop of the data
passes of the runs that are not fully certified: per run, ``2 m n d (k + 1)`` (all k models and the
gradient); per machine, ``2 n d (u k + (m - u) + m)`` for a run with ``u`` uncertified machines (all
k models there, the assigned one elsewhere, the gradient everywhere). Certified runs take Gram steps
under every rule and are not counted.
"""

import contextlib
import sys
import time

import numpy as np

import mixlinreg._gram as G
from mixlinreg._numerics import CERT_REL_MARGIN
from mixlinreg._gram import machine_norms
from mixlinreg.data import draw_trial
from mixlinreg.harness import load_config
from mixlinreg.harness.run import run_unit, unit_seeds
from mixlinreg.inits import init_bernoulli


def eigh_seconds(exp, unit, repeats=3):
    """Best-of-``repeats`` seconds of ``numpy.linalg.eigh`` of a float64 Gram of the unit's data
    (``sum X_i^T X_i`` over the first quarter of its machines)."""
    data_ss, _ = unit_seeds(exp, unit)
    trial = draw_trial(unit.m, unit.n, unit.d, unit.k, rng=np.random.default_rng(data_ss),
                       dtype=np.dtype(exp.protocol["dtype"]))
    Xq = trial.X[: max(1, unit.m // 4)].reshape(-1, unit.d).astype(np.float64)
    A = Xq.T @ Xq
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.linalg.eigh(A)
        best = min(best, time.perf_counter() - t0)
    return best


@contextlib.contextmanager
def distinct_grams():
    """Within the block, record the cluster sets of the Grams the cache makes (a set dropped from
    the cache and made again counts once: a closed form would keep its eigendecomposition)."""
    made = set()
    acquire = G._GramCache.acquire

    def recording(self, mask):
        key = np.asarray(mask).tobytes()
        if np.asarray(mask).any() and key not in self.slot_of:
            made.add(key)
        return acquire(self, mask)

    G._GramCache.acquire = recording
    try:
        yield made
    finally:
        G._GramCache.acquire = acquire


def unit_runs(exp, unit):
    """The unit's data and runs as :func:`mixlinreg.harness.run.run_unit` makes them (Bernoulli
    initializations): X, Y per cell, initial models, step sizes, each run's cell."""
    p = exp.protocol
    if p["init"] != "bernoulli":
        raise SystemExit(f"init: this script replays Bernoulli initializations, {exp.name} at "
                         f"preset {exp.preset} uses {p['init']!r}")
    dtype = np.dtype(p["dtype"])
    data_ss, init_ss = unit_seeds(exp, unit)
    trial = draw_trial(unit.m, unit.n, unit.d, unit.k, rng=np.random.default_rng(data_ss),
                       dtype=dtype)
    cells = unit.cells
    Y, _ = trial.panel([(R, s) for R, s, _ in cells], theta_scale=p["theta_scale"])
    steps = np.asarray(p["steps"], dtype=float)
    n_init, C = p["n_init"], len(cells)
    inits = init_bernoulli(n_init, unit.k, unit.d, rng=np.random.default_rng(init_ss), dtype=dtype)
    theta = np.repeat(np.tile(inits, (C, 1, 1)), steps.size, axis=0).astype(dtype)
    lr = np.tile(steps, C * n_init).astype(dtype)
    cell = np.repeat(np.arange(C), n_init * steps.size)
    return trial.X, np.asarray(Y, dtype=dtype), theta, lr, cell, int(p["n_iter"])


def measure(X, Y, theta, lr, cell, n_iter, chunk=30):
    m, n, d = X.shape
    R, k, _ = theta.shape
    s_op, fro = machine_norms(X)
    u = np.finfo(X.dtype).eps / 2
    gamma = 2.0 * d * u / (1.0 - d * u)
    rel = CERT_REL_MARGIN
    X2 = X.reshape(m * n, d)
    Xt = np.ascontiguousarray(X.transpose(0, 2, 1))  # (m, d, n)
    live = np.ones(R, dtype=bool)
    # per-run bounds (today's rule)
    U_r, Lo_r = np.zeros((R, m)), np.zeros((R, m, k))
    anchor = theta.astype(np.float64)
    has_r = np.zeros(R, dtype=bool)
    # per-machine bounds
    U_m, Lo_m = np.zeros((R, m)), np.zeros((R, m, k))
    P = np.zeros((R, k))  # path length of each model
    Pref = np.zeros((R, m, k))  # P at each machine's last exact evaluation
    has_m = np.zeros((R, m), dtype=bool)
    # per machine, anchored: bounds at the run's anchor; a failing machine is evaluated and its
    # bounds moved back to the anchor (loosened by each model's distance from it); the run is
    # re-anchored (every machine evaluated) when more than half of its machines fail
    U_c, Lo_c = np.zeros((R, m)), np.zeros((R, m, k))
    anchor_c = theta.astype(np.float64)
    has_c = np.zeros(R, dtype=bool)
    asg = np.zeros((R, m), dtype=np.int64)
    tally = dict(live=0, full_run=0, full_mach_runs=0, evals_mach=0, flop_run=0.0, flop_mach=0.0,
                 wrong_run=0, wrong_mach=0, full_c_runs=0, evals_c=0, flop_c=0.0, wrong_c=0)
    rows_m = np.arange(m)

    def widened(U, Lo, grow, norms, a):
        """Certified per (run, machine): the widened bounds and the kernel's margins."""
        na = norms[:, None, :] * fro[None, :, None]  # (r, m, k)
        ga = np.take_along_axis(grow, a[:, :, None], 2)[:, :, 0]
        nra = np.take_along_axis(na, a[:, :, None], 2)[:, :, 0]
        ru = U + s_op[None, :] * ga + gamma * nra
        fu = ru * ru / n * (1.0 + rel)
        rl = np.maximum(Lo - s_op[None, :, None] * grow - gamma * na, 0.0)
        fl = rl * rl / n * (1.0 - rel)
        other = np.ones_like(fl, dtype=bool)
        np.put_along_axis(other, a[:, :, None], False, 2)
        ok = np.where(other, fu[:, :, None] < fl, True).all(axis=2)
        return ok & np.isfinite(fu) & (fu < 1e30)

    for it in range(n_iter):
        runs = np.flatnonzero(live)
        if not runs.size:
            break
        for c0 in range(0, runs.size, chunk):
            rr = runs[c0:c0 + chunk]
            th = theta[rr]  # (r, k, d)
            E = (X2 @ th.reshape(-1, d).T).reshape(m, n, rr.size, k)
            E -= np.moveaxis(Y[cell[rr]], 0, 2)[:, :, :, None]  # y of each run's cell
            res_norm = np.sqrt(np.einsum("mnrk,mnrk->rmk", E, E, dtype=np.float64))
            losses = res_norm ** 2 / n
            bad = ~np.isfinite(losses).all(axis=(1, 2)) | (losses.max(axis=(1, 2)) > 1e30)
            a_new = np.argmin(np.where(np.isfinite(losses), losses, np.inf), axis=2)
            norms = np.linalg.norm(th.astype(np.float64), axis=2)  # (r, k)
            # --- certificates, for the iteration's assignments (the previous ones)
            if it > 0:
                a_old = asg[rr]
                grow_r = np.linalg.norm(th.astype(np.float64) - anchor[rr], axis=2)[:, None, :]
                ok_r = widened(U_r[rr], Lo_r[rr], np.broadcast_to(grow_r, (rr.size, m, k)),
                               norms, a_old).all(axis=1) & has_r[rr]
                grow_m = P[rr][:, None, :] - Pref[rr]
                ok_m = widened(U_m[rr], Lo_m[rr], grow_m, norms, a_old) & has_m[rr]
                dist_c = np.linalg.norm(th.astype(np.float64) - anchor_c[rr], axis=2)  # (r, k)
                ok_c = widened(U_c[rr], Lo_c[rr],
                               np.broadcast_to(dist_c[:, None, :], (rr.size, m, k)), norms,
                               a_old) & has_c[rr][:, None]
            else:
                ok_r = np.zeros(rr.size, dtype=bool)
                ok_m = np.zeros((rr.size, m), dtype=bool)
                ok_c = np.zeros((rr.size, m), dtype=bool)
                dist_c = np.zeros((rr.size, k))
            if it > 0:  # a certificate that disagrees with the exact argmin (must stay 0)
                moved = a_new != asg[rr]
                tally["wrong_run"] += int((ok_r & moved.any(axis=1)).sum())
                tally["wrong_mach"] += int((ok_m & moved).sum())
                tally["wrong_c"] += int((ok_c & moved).sum())
            tally["live"] += rr.size
            full_r = ~ok_r
            tally["full_run"] += int(full_r.sum())
            tally["flop_run"] += float(full_r.sum()) * 2.0 * m * n * d * (k + 1)
            u_cnt = (~ok_m).sum(axis=1)
            part = u_cnt > 0
            tally["full_mach_runs"] += int(part.sum())
            tally["evals_mach"] += int(u_cnt.sum())
            tally["flop_mach"] += float((2.0 * n * d * (u_cnt * k + (m - u_cnt) + m))[part].sum())
            uc = (~ok_c).sum(axis=1)
            whole = uc > m // 2  # re-anchored: every machine evaluated
            uc_eval = np.where(whole, m, uc)
            tally["full_c_runs"] += int((uc > 0).sum())
            tally["evals_c"] += int(uc_eval.sum())
            tally["flop_c"] += float((2.0 * n * d * (uc_eval * k + (m - uc_eval) + m))[uc > 0].sum())
            # --- refresh: per run, all machines of the runs not certified
            g = rr[full_r]
            U_r[g] = np.take_along_axis(res_norm[full_r], a_new[full_r][:, :, None], 2)[:, :, 0]
            Lo_r[g] = res_norm[full_r]
            anchor[g] = th[full_r]
            has_r[g] = True
            # per machine: the uncertified machines (certified ones keep their assignment, which
            # the exact argmin equals wherever a certificate is sound)
            ri, mi = np.nonzero(~ok_m)
            U_m[rr[ri], mi] = res_norm[ri, mi, a_new[ri, mi]]
            Lo_m[rr[ri], mi] = res_norm[ri, mi]
            Pref[rr[ri], mi] = P[rr[ri]]
            has_m[rr[ri], mi] = True
            # anchored per machine: re-anchor, or move the fresh bounds back to the anchor
            w = rr[whole]
            U_c[w] = np.take_along_axis(res_norm[whole], a_new[whole][:, :, None], 2)[:, :, 0]
            Lo_c[w] = res_norm[whole]
            anchor_c[w] = th[whole]
            has_c[w] = True
            ri, mi = np.nonzero(~ok_c & ~whole[:, None])
            dk = dist_c[ri]  # (e, k): each model's distance from the anchor now
            U_c[rr[ri], mi] = res_norm[ri, mi, a_new[ri, mi]] + s_op[mi] * dk[np.arange(ri.size),
                                                                                a_new[ri, mi]]
            Lo_c[rr[ri], mi] = res_norm[ri, mi] - s_op[mi][:, None] * dk
            # --- the update (numpy_ifca's), on the exact assignments
            asg[rr] = a_new
            resid = E[rows_m[:, None], :, np.arange(rr.size)[None, :], a_new.T]  # (m, r, n)
            G = np.matmul(Xt, resid.transpose(0, 2, 1)) * (2.0 / n)  # (m, d, r)
            onehot = (a_new[:, :, None] == np.arange(k)[None, None, :]).astype(X.dtype)
            step = np.einsum("mdr,rmk->rkd", G, onehot) * (lr[rr] / m)[:, None, None]
            new = th - step.astype(X.dtype)
            P[rr] += np.linalg.norm((new - th).astype(np.float64), axis=2)
            theta[rr] = new
            live[rr[bad]] = False
    return tally


def closed_form(exp, unit):
    """Item 3: run the unit on the Gram path and print the bound of a closed-form finish."""
    with distinct_grams() as made:
        _, info = run_unit(exp, unit, method="gram")
    st = info["path_stats"]
    sec = st["seconds"]
    e = eigh_seconds(exp, unit)
    grams = len(made)
    total = float(info["seconds"])
    bound = sec["gram"] - grams * e
    it = {key: int(st[f"{key}_iterations"]) for key in ("full", "assigned", "gram")}
    n_it = sum(it.values())
    print(f"{exp.name} {unit.id}: {info['runs']} runs, {total:.1f} s on the Gram path "
          f"(method {info['method']})")
    print("  seconds by phase: " + ", ".join(f"{key} {v:.1f}" for key, v in sec.items()))
    print("  run-iterations: " + ", ".join(f"{key} {v} ({100 * v / max(1, n_it):.1f}%)"
                                           for key, v in it.items()))
    print(f"  Grams made: {st['grams_built']} ({st['grams_composed']} composed), {grams} "
          f"distinct cluster sets; eigh of one d x d float64 Gram: {e:.3f} s")
    print(f"  closed-form finish, upper bound of the saving: {sec['gram']:.1f} - {grams} x "
          f"{e:.3f} = {bound:.1f} s ({100 * bound / total:.1f}% of the unit)")


def certificates(exp, unit):
    """Item 1: replay the unit's runs under three certificate rules and print the counts."""
    t0 = time.perf_counter()
    X, Y, theta, lr, cell, n_iter = unit_runs(exp, unit)
    t = measure(X, Y, theta, lr, cell, n_iter)
    m = X.shape[0]
    print(f"{exp.name} {unit.id}: {theta.shape[0]} runs, {t['live']} live run-iterations "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"  per run (today): {t['full_run']} not certified "
          f"({100 * t['full_run'] / t['live']:.1f}%), {t['flop_run'] / 1e12:.2f} Tflop of data "
          f"passes")
    print(f"  per machine: {t['full_mach_runs']} runs with an uncertified machine "
          f"({100 * t['full_mach_runs'] / t['live']:.1f}%), {t['evals_mach']} machine "
          f"evaluations ({100 * t['evals_mach'] / (t['live'] * m):.1f}% of machine-"
          f"iterations), {t['flop_mach'] / 1e12:.2f} Tflop")
    print(f"  per machine / per run, data-pass flop: {t['flop_mach'] / t['flop_run']:.2f}")
    print(f"  per machine, anchored: {t['full_c_runs']} runs with an uncertified machine "
          f"({100 * t['full_c_runs'] / t['live']:.1f}%), {t['evals_c']} machine evaluations, "
          f"{t['flop_c'] / 1e12:.2f} Tflop; / per run: {t['flop_c'] / t['flop_run']:.2f}")
    print(f"  certificates that disagree with the exact argmin: per run {t['wrong_run']}, "
          f"per machine {t['wrong_mach']}, anchored {t['wrong_c']}")


MODES = {"closed-form": closed_form, "certificates": certificates}


def main(mode, panel, preset, unit_ids):
    if mode not in MODES:
        raise SystemExit(f"mode: must be one of {sorted(MODES)}, got {mode!r}")
    exp = load_config(panel, preset)
    try:
        units = [exp.unit(uid) for uid in unit_ids]  # every name checked before computing
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    for unit in units:
        MODES[mode](exp, unit)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
