"""The certified-Gram path of :func:`mixlinreg.ifca` (``method="gram"``).

Squared (or ridge) loss, full data, gradient averaging, every machine every iteration: the setting
of the paper's Section 6.1. The path computes the same iterations as the direct path
(:func:`mixlinreg._kernels._ifca_kernel`), skipping work that cannot change them. Each iteration,
each live run takes one of three steps (:func:`run_gram`):

* **full**: the direct path's iteration (every model's loss on every machine, the gradient at the
  assigned model). Its exact losses also set the run's bounds (below).
* **assigned**: the run's assignments are *certified*, so only the gradient at the assigned model
  is computed (one forward pass instead of k). Full and assigned runs share one pass over the
  data (:func:`mixlinreg._kernels._machine`: the first ``nf`` runs are evaluated).
* **gram**: certified, and the gradient comes from shared cluster Grams.

Certified assignments. With ``r_ij = ||X_i theta_j - y_i||`` and ``s_i`` the largest singular
value of ``X_i``, moving ``theta_j`` away from a point ``a_j`` by ``||theta_j - a_j||`` changes
``r_ij`` by at most ``s_i ||theta_j - a_j||``. Each exact evaluation of a run sets its *anchor*
``a`` (the models it evaluated) and, per machine, an upper bound ``U_i`` of the assigned model's
residual norm and lower bounds ``Lo_ij`` of the others' at the anchor. At a later iteration the
bounds are widened by ``s_i ||theta_j - a_j||`` (the distance from the anchor, never more than the
length of the path taken, and much less for runs that oscillate). A run's assignments are
certified when, for every machine and every other model,
``(U_i + s_i ||theta_a - a_a|| + rho)^2 / n + pen_a`` (times ``1 + CERT_REL_MARGIN``) is below
``(Lo_ij - s_i ||theta_j - a_j|| - rho)^2 / n + pen_j`` (times ``1 - CERT_REL_MARGIN``): then the
argmin of the losses the direct path would compute is the current assignment, ties and rounding
included.
``rho = 2 gamma_d ||X_i||_F ||theta_j||`` bounds the rounding of a forward pass in the working
dtype (``gamma_d = d u / (1 - d u)``, ``u`` the unit roundoff; the factor 2 covers the evaluation
that set the bound and the one it stands for). A run that is not certified takes a full step.

Shared cluster Grams. The gradient sum of cluster j is
``(2 / n) (A_j theta_j - b_j) + l2 |S_j| theta_j`` with ``A_j = sum_{i in S_j} X_i^T X_i`` and
``b_j = sum_{i in S_j} X_i^T y_i``, costing ``2 d^2`` per model instead of ``2 |S_j| n d``.
``A_j`` depends only on X and the set ``S_j``, so it is shared by every run (and every response
variant) whose cluster has that set; it is made once, in float64 (from the data, or composed from
cached Grams whose sets add up to ``S_j``, see :class:`_GramCache`), and kept in a cache of
``gram_memory`` bytes (least recently used unreferenced Grams are dropped). All runs using
one Gram are advanced by one GEMM. A certified run takes Grams when a cost model says they are
cheaper than assigned steps (:func:`run_gram`'s ``enter``), and gives them back when its partition
changes.

The update, divergence and early-stop checks and the trace are those of the direct path
(:func:`mixlinreg._kernels._finish_all`); the final labels and loss come from the same exact
evaluation (:func:`mixlinreg._kernels._final_eval`).

Invariant: in exact arithmetic every iteration equals the direct path's. In floating point the
gradient sums differ by rounding (the Gram step sums in float64 what the direct path sums per
machine in the working dtype); the assignments are those the direct path would compute from the
same models. Which step a run takes, how often bounds fail and which Grams are cached are choices
of cost only: they never change a decision that the direct path would make.
"""

from __future__ import annotations

import time
from collections import OrderedDict

import numba as nb
import numpy as np
from numba import prange

from . import _numerics
from ._progress import report
from ._numerics import FASTMATH
from ._kernels import (
    ITERATE, Assign, Packed, Rows, _final_eval, _finish_all, _pack, _padded, _run_state, _sweep,
    _sweep_buffers,
)

__all__ = ["run_gram", "gram_applicable"]


def gram_applicable(loss, resample, averaging, participation):
    """True where the Gram path computes the same iterations as the direct path."""
    return loss == "squared" and not resample and averaging == "gradient" and participation is None


# ------------------------------------------------------------------------------------- kernels
@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _xty(X, Y, out):
    """``out[c, i, :] = X_i^T y_i^(c)``, accumulated in float64."""
    C = Y.shape[0]
    m = X.shape[0]
    n = X.shape[1]
    d = X.shape[2]
    for i in prange(m):
        for c in range(C):
            for q in range(d):
                out[c, i, q] = 0.0
            for t in range(n):
                yv = np.float64(Y[c, i, t])
                for q in range(d):
                    out[c, i, q] += np.float64(X[i, t, q]) * yv


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _build_gram(X, members, part, Z, T, out):
    """``out = sum_{i in members} X_i^T X_i`` in float64.

    The members are split into ``part.shape[0]`` fixed blocks (independent of the thread count);
    each block gathers up to ``Z.shape[0]`` rows at a time as float64 and adds ``Z^T Z`` into its
    partial sum; the partial sums are added in block order.
    """
    nblk = part.shape[0]
    nm = members.shape[0]
    n = X.shape[1]
    d = X.shape[2]
    per = max(1, Z.shape[1] // n)  # machines per gather
    for b in prange(nblk):
        P = part[b]
        P[:, :] = 0.0
        lo = (b * nm) // nblk
        hi = ((b + 1) * nm) // nblk
        for g0 in range(lo, hi, per):
            g1 = min(hi, g0 + per)
            rows = (g1 - g0) * n
            Zb = Z[b, :rows]
            for gi in range(g0, g1):
                i = members[gi]
                base = (gi - g0) * n
                for t in range(n):
                    for q in range(d):
                        Zb[base + t, q] = np.float64(X[i, t, q])
            np.dot(Zb.T, Zb, T[b])
            for p in range(d):
                for q in range(d):
                    P[p, q] += T[b, p, q]
    for p in prange(d):
        for q in range(d):
            s = 0.0
            for b in range(nblk):
                s += part[b, p, q]
            out[p, q] = s


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _model_norms(act, na, theta, out):
    """``out[a, j] = ||theta[act[a], j]||`` (float64)."""
    k = theta.shape[1]
    d = theta.shape[2]
    for a in prange(na):
        r = act[a]
        for j in range(k):
            s = 0.0
            for q in range(d):
                v = np.float64(theta[r, j, q])
                s += v * v
            out[a, j] = np.sqrt(s)


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _refresh_bounds(act, na, norms, asg, lall, n, fro, gamma, U, Lo):
    """Bounds from an exact evaluation: ``U = r_a + rho``, ``Lo_j = r_j - rho`` (residual norms)."""
    m = asg.shape[1]
    k = lall.shape[2]
    for a in prange(na):
        r = act[a]
        for i in range(m):
            for j in range(k):
                rr = np.sqrt(max(n * lall[r, i, j], 0.0))
                rho = gamma * fro[i] * norms[a, j]
                Lo[r, i, j] = rr - rho
                if j == asg[r, i]:
                    U[r, i] = rr + rho


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _anchor_dist(act, na, theta, anchor, out):
    """``out[act[a], j] = ||theta[r, j] - anchor[r, j]||`` (float64), enlarged by a relative 1e-12.

    The enlargement covers the rounding of the float64 sum of squares (far below the
    certificate's margin).
    """
    k = theta.shape[1]
    d = theta.shape[2]
    for a in prange(na):
        r = act[a]
        for j in range(k):
            s = 0.0
            for q in range(d):
                v = np.float64(theta[r, j, q]) - np.float64(anchor[r, j, q])
                s += v * v
            out[r, j] = np.sqrt(s) * (1.0 + 1e-12)


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _certify(act, na, norms, asg, U, Lo, s, dist, fro, gamma, rel, l2, n, ok):
    """``ok[a]``: every assignment of run ``act[a]`` is certified (see the module docstring).

    ``U`` and ``Lo`` are the bounds at the run's anchor (its models at its last exact
    evaluation); ``dist[r, j]`` is how far model j has moved from its anchor since.
    """
    m = asg.shape[1]
    k = Lo.shape[2]
    for a in prange(na):
        r = act[a]
        good = True
        for i in range(m):
            ai = asg[r, i]
            ru = U[r, i] + s[i] * dist[r, ai] + gamma * fro[i] * norms[a, ai]
            fu = (ru * ru / n + 0.5 * l2 * norms[a, ai] * norms[a, ai]) * (1.0 + rel)
            if not fu < 1e30:  # non-finite or near overflow: evaluate exactly
                good = False
                break
            for j in range(k):
                if j == ai:
                    continue
                rl = Lo[r, i, j] - s[i] * dist[r, j] - gamma * fro[i] * norms[a, j]
                if rl < 0.0:
                    rl = 0.0
                fl = (rl * rl / n + 0.5 * l2 * norms[a, j] * norms[a, j]) * (1.0 - rel)
                if not fu < fl:
                    good = False
                    break
            if not good:
                break
        ok[a] = good


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _gram_gradients(grams, task_slot, task_c0, task_c1, col_run, col_j, col_pos, col_size,
                    theta, bvec, l2, n, W, Tb, Ob, gsum):
    """Gradient sums of the models in Gram iterations, in the layout of :func:`_finish_all`.

    Column c stands for model ``col_j[c]`` of run ``col_run[c]`` (position ``col_pos[c]`` among
    the Gram runs); columns are grouped by Gram and each task multiplies a fixed group of them by
    one Gram (``Ob[c0:c1] = Tb[c0:c1] @ A``, A symmetric). Writes
    ``gsum[0, q * W + pos * k + j] = (2 / n) (A theta - b)_q + l2 |S| theta_q``.
    """
    ncol = col_run.shape[0]
    ntask = task_slot.shape[0]
    k = theta.shape[1]
    d = theta.shape[2]
    for c in prange(ncol):
        r = col_run[c]
        j = col_j[c]
        for q in range(d):
            Tb[c, q] = np.float64(theta[r, j, q])
    for t in prange(ntask):
        c0 = task_c0[t]
        c1 = task_c1[t]
        np.dot(Tb[c0:c1], grams[task_slot[t]], Ob[c0:c1])
    sc = 2.0 / n
    for c in prange(ncol):
        r = col_run[c]
        j = col_j[c]
        col = col_pos[c] * k + j
        lc = l2 * col_size[c]
        for q in range(d):
            g = sc * (Ob[c, q] - bvec[r, j, q])
            if l2 != 0.0:
                g += lc * Tb[c, q]
            gsum[0, q * W + col] = g


# ------------------------------------------------------------------------------------- the cache
class _GramCache:
    """Cluster Grams keyed by their set of machines, within a memory budget.

    A Gram in use by a run is never dropped; an unused one is dropped least recently used first
    when a new one needs its slot. A missing Gram is *composed* where that is cheaper than building
    it from the data: the sum and difference of cached Grams whose sets add up to the new set,
    corrected by the few machines they miss or include in excess (:meth:`plan`). Cluster sets of
    one partition, and of partitions that merge or split true clusters, are mostly such sums and
    complements. Composing changes only the float64 rounding of the Gram.
    """

    def __init__(self, X, budget_bytes, max_slots):
        self.X = X
        m, n, d = X.shape
        self.d = d
        self.n_slots = int(min(budget_bytes // (8 * d * d), max_slots))
        self.grams = np.empty((self.n_slots, d, d), dtype=np.float64)
        self.size = np.zeros(self.n_slots, dtype=np.int64)
        self.refs = np.zeros(self.n_slots, dtype=np.int64)
        self.masks = np.zeros((self.n_slots, m), dtype=np.bool_)  # the set of each valid slot
        self.valid = np.zeros(self.n_slots, dtype=np.bool_)
        self.key_of = [None] * self.n_slots
        self.slot_of = {}
        self.unused = OrderedDict((s, None) for s in range(self.n_slots))  # LRU order
        nblk = _numerics.GRAM_BLOCKS
        rows = max(n, (_numerics.GRAM_GATHER_ROWS // n) * n)
        self._part = np.empty((nblk, d, d), dtype=np.float64) if self.n_slots else None
        self._Z = np.empty((nblk, rows, d), dtype=np.float64) if self.n_slots else None
        self._T = np.empty((nblk, d, d), dtype=np.float64) if self.n_slots else None
        self._tmp = np.empty((d, d), dtype=np.float64) if self.n_slots else None
        self._memo = {}  # plan costs of the current cache contents
        self.built = 0
        self.composed = 0
        self.machines_built = 0
        self.hits = 0

    def free_slots(self):
        return len(self.unused)

    def plan(self, mask):
        """How to make the Gram of ``mask``: ``(terms, add, sub)``.

        ``terms`` lists ``(sign, slot)`` of cached Grams to add (+1) or subtract (-1); the
        machines in ``add`` and ``sub`` are then added and subtracted one by one. Greedy: from
        nothing, from each of the three cached sets nearest to ``mask`` or from its smallest cached
        superset, repeatedly add the largest cached set inside what is missing or subtract the
        largest inside what is in excess; the start that leaves the fewest machines wins.
        """
        K = self.masks[self.valid]
        slots = np.flatnonzero(self.valid)
        sizes = K.sum(axis=1)
        bases = [None]
        if slots.size:
            # the three nearest cached sets, and the smallest cached superset (for complements)
            bases += [int(b) for b in np.argsort((K ^ mask).sum(axis=1), kind="stable")[:3]]
            sup = np.flatnonzero(~(mask & ~K).any(axis=1))
            if sup.size:
                bases.append(int(sup[np.argmin(sizes[sup])]))
        best = None
        for b in bases:
            cur = np.zeros_like(mask) if b is None else K[b].copy()
            terms = [] if b is None else [(1, int(slots[b]))]
            while slots.size:
                need_add = mask & ~cur
                need_sub = cur & ~mask
                inside_add = ~(K & ~need_add).any(axis=1)
                inside_sub = ~(K & ~need_sub).any(axis=1)
                gain = np.maximum(np.where(inside_add, sizes, 0), np.where(inside_sub, sizes, 0))
                g = int(np.argmax(gain))
                if gain[g] <= 0:
                    break
                if inside_add[g]:
                    cur |= K[g]
                    terms.append((1, int(slots[g])))
                else:
                    cur &= ~K[g]
                    terms.append((-1, int(slots[g])))
            add = np.flatnonzero(mask & ~cur).astype(np.int64)
            sub = np.flatnonzero(cur & ~mask).astype(np.int64)
            if best is None or add.size + sub.size < best[1].size + best[2].size:
                best = (terms, add, sub)
        return best

    def build_machines(self, mask):
        """Number of machines whose ``X_i^T X_i`` building the Gram of ``mask`` would add up."""
        key = mask.tobytes()
        if key not in self._memo:
            _, add, sub = self.plan(mask)
            self._memo[key] = add.size + sub.size
        return self._memo[key]

    def acquire(self, mask):
        """Slot of the Gram of the machines in ``mask`` (made if needed); -1 for an empty set."""
        if not mask.any():
            return -1
        key = mask.tobytes()
        slot = self.slot_of.get(key)
        if slot is None:
            slot, _ = self.unused.popitem(last=False)
            old = self.key_of[slot]
            if old is not None:
                del self.slot_of[old]
            self.valid[slot] = False
            terms, add, sub = self.plan(mask)
            out = self.grams[slot]
            if terms:
                sign, t = terms[0]
                np.multiply(self.grams[t], float(sign), out=out)
                for sign, t in terms[1:]:
                    if sign > 0:
                        out += self.grams[t]
                    else:
                        out -= self.grams[t]
                for part, sign in ((add, 1.0), (sub, -1.0)):
                    if part.size:
                        _build_gram(self.X, part, self._part, self._Z, self._T, self._tmp)
                        if sign > 0:
                            out += self._tmp
                        else:
                            out -= self._tmp
                self.composed += 1
            else:
                _build_gram(self.X, add, self._part, self._Z, self._T, out)
            self.machines_built += add.size + sub.size
            self.key_of[slot] = key
            self.slot_of[key] = slot
            self.masks[slot] = mask
            self.valid[slot] = True
            self.size[slot] = int(mask.sum())
            self.built += 1
            self._memo.clear()
        else:
            self.hits += 1
            self.unused.pop(slot, None)
        self.refs[slot] += 1
        return slot

    def release(self, slot):
        if slot < 0:
            return
        self.refs[slot] -= 1
        if self.refs[slot] == 0:
            self.unused[slot] = None  # most recently used at the end


def machine_norms(X):
    """Per machine: an upper bound of the largest singular value of ``X_i`` and ``||X_i||_F``.

    The singular value comes from the largest eigenvalue of the smaller Gram of ``X_i`` in float64,
    enlarged by a relative 1e-6 (far above the eigensolver's error).
    """
    m, n, d = X.shape
    s = np.empty(m)
    fro = np.empty(m)
    step = max(1, int(2**24 // (n * d)))
    for i0 in range(0, m, step):
        Xc = np.asarray(X[i0:i0 + step], dtype=np.float64)
        G = Xc @ Xc.transpose(0, 2, 1) if n <= d else Xc.transpose(0, 2, 1) @ Xc
        ev = np.linalg.eigvalsh(G)[:, -1]
        s[i0:i0 + step] = np.sqrt(np.maximum(ev, 0.0)) * (1.0 + 1e-6)
        fro[i0:i0 + step] = np.sqrt(np.einsum("mnd,mnd->m", Xc, Xc))
    return s, fro


# ------------------------------------------------------------------------------------- the driver
def run_gram(data, loss, upd, n_iter, stop, chunk_lo, pad, tr, theta, res, gram_memory):
    """Run ``n_iter`` iterations of every run on the certified path; fill ``res`` in place.

    Arguments are those of :func:`mixlinreg._kernels._ifca_kernel` (already validated and cast by
    :func:`mixlinreg.ifca`; squared loss, ``data.use_stats`` false, gradient averaging, no
    participation mask). Each iteration, every live run takes one of three kinds of step:

    * **full**: the direct path's iteration (every model's loss on every machine, the gradient at
      the assigned model); its exact losses reset the run's bounds. The first iteration, runs whose
      assignments are not certified, and every run when a trace is recorded take this step.
    * **assigned**: assignments certified, the gradient at the assigned model only (one forward
      pass instead of k).
    * **gram**: assignments certified, the gradient from the cluster Grams.

    Returns a dict counting the run-iterations of each kind, Grams built and reused, and the
    seconds spent per phase.
    """
    return _CertifiedRuns(data, loss, upd, n_iter, stop, chunk_lo, pad, tr, theta, res,
                          gram_memory).run()


class _CertifiedRuns:
    """The state of one :func:`run_gram` call: the runs, their bounds and the Gram cache.

    Invariant (every method keeps it): a run's bounds ``U``, ``Lo`` hold for its models at its
    ``anchor`` (the models of its last full step), and ``dist`` is how far each model has moved
    from there; a run is ``in_gram`` only while its partition is the one its Grams were made for.
    """

    def __init__(self, data, loss, upd, n_iter, stop, chunk_lo, pad, tr, theta, res, gram_memory):
        self.data, self.loss, self.upd, self.stop, self.tr, self.res = data, loss, upd, stop, tr, res
        self.n_iter, self.chunk_lo, self.pad, self.theta = n_iter, chunk_lo, pad, theta
        X, Y = data.X, data.Y
        m, n, d = X.shape
        R, k, _ = theta.shape
        self.m, self.n, self.d, self.R, self.k = m, n, d, R, k
        Rp = _padded(R, pad)
        self.buf = _sweep_buffers(chunk_lo.shape[0] - 1, n, d, Rp, k, 1, False, theta)
        self.ThF_flat = np.zeros(d * Rp * k, dtype=theta.dtype)  # the evaluated runs' models
        self.st = _run_state(theta, res)
        self.lall = np.zeros((R, m, k), dtype=np.float64)
        self.out = Assign(self.st.asg, self.st.lmin, True, self.lall)
        self.nrm = np.zeros((min(d, 8), Rp, k, 3), dtype=np.float64)
        self.ctot = np.zeros((Rp, k), dtype=np.int64)
        res.n_iter[:] = n_iter
        # bounds and the state of each run
        self.U = np.zeros((R, m))
        self.Lo = np.zeros((R, m, k))
        self.anchor = theta.copy()  # each run's models at its last exact evaluation
        self.dist = np.zeros((R, k))  # how far each model has moved from its anchor
        self.norms = np.zeros((R, k))
        self.has_bounds = np.zeros(R, dtype=np.bool_)  # set by a run's first full step
        self.in_gram = np.zeros(R, dtype=np.bool_)
        self.slots = np.full((R, k), -1, dtype=np.int64)
        self.bvec = np.zeros((R, k, d))
        self.s_op, self.fro = machine_norms(X)
        u = np.finfo(theta.dtype).eps / 2
        self.gamma = 2.0 * d * u / (1.0 - d * u)
        self.B = np.empty((Y.shape[0], m, d))
        _xty(X, Y, self.B)
        self.cache = _GramCache(X, gram_memory, max_slots=2 * R * k)  # more could never be in use
        self.gbuf = np.zeros(d * R * k)
        self.cbuf1 = np.zeros((1, Rp, k), dtype=np.int64)
        self.Tb = np.empty((R * k, d))
        self.Ob = np.empty((R * k, d))
        # flop of one run-iteration: assigned step; a Gram step reads each Gram (8 d^2 bytes) once
        # per iteration for all the runs that share it
        self.flop_assigned = 4.0 * m * n * d
        self.stats = dict(full_iterations=0, assigned_iterations=0, gram_iterations=0,
                          grams_built=0, gram_hits=0, gram_slots=self.cache.n_slots)
        self.clock = dict(setup=0.0, certify=0.0, sweep=0.0, gram=0.0, enter=0.0, final=0.0)
        self.tick = time.perf_counter()

    def lap(self, key):
        now = time.perf_counter()
        self.clock[key] += now - self.tick
        self.tick = now

    def run(self):
        """All iterations (certify, then the data step and the Gram step, then Gram entries),
        then the final exact evaluation; returns the path statistics."""
        frozen = self.st.frozen
        self.lap("setup")
        for it in range(self.n_iter):
            live = ~frozen
            if not live.any():
                break
            ok = self.certified(live)
            full = np.flatnonzero(live & ~ok)
            assigned = np.flatnonzero(live & ok & ~self.in_gram)
            gram = np.flatnonzero(live & ok & self.in_gram)
            self.lap("certify")
            if full.size or assigned.size:
                self.data_step(full, assigned, it)
                self.lap("sweep")
            if gram.size:
                self.gram_step(gram, it)
                self.lap("gram")
            # certified runs may switch to Grams
            for r in np.flatnonzero(frozen & self.in_gram):
                self.leave(r)
            cands = assigned[~frozen[assigned]]
            if cands.size and self.cache.n_slots >= self.k and it + 1 < self.n_iter:
                self.enter(cands, it)
            self.lap("enter")
            report(it + 1)  # a verbose caller's bar (mixlinreg._progress)

        _final_eval(self.chunk_lo, self.data, self.loss, self.upd, self.pad, self.n_iter,
                    self.buf, self.st, self.tr, self.res)
        self.lap("final")
        stats, cache = self.stats, self.cache
        stats["seconds"] = {key: round(v, 3) for key, v in self.clock.items()}
        stats["grams_built"] = cache.built
        stats["grams_composed"] = cache.composed
        stats["gram_machines_built"] = cache.machines_built
        stats["gram_hits"] = cache.hits
        return stats

    def certified(self, live):
        """Which live runs' assignments the bounds certify (none while a trace is recorded, and
        none before a run's first full step)."""
        ok = np.zeros(self.R, dtype=np.bool_)
        settled = np.flatnonzero(live & self.has_bounds)
        if settled.size and not self.tr.on:
            cert = np.zeros(settled.size, dtype=np.bool_)
            _model_norms(settled, settled.size, self.theta, self.norms)
            _anchor_dist(settled, settled.size, self.theta, self.anchor, self.dist)
            _certify(settled, settled.size, self.norms, self.st.asg, self.U, self.Lo, self.s_op,
                     self.dist, self.fro, self.gamma, _numerics.CERT_REL_MARGIN, self.loss.l2,
                     self.n, cert)
            ok[settled] = cert
        return ok

    def data_step(self, full, assigned, it):
        """One pass over the data for the ``full`` runs (evaluated: exact losses, new assignments,
        bounds reset at their models) and the ``assigned`` runs (certified: the gradient at the
        assignment they keep), then the update of both.

        Invariant: every run's step is the direct path's iteration from the same models.
        """
        d, k, theta, st = self.d, self.k, self.theta, self.st
        runs = np.concatenate([full, assigned])
        nf = full.size
        nap = _padded(runs.size, self.pad)
        ThT = self.buf.ThT_flat[: d * nap * k].reshape((d, nap * k))
        _pack(theta, runs, runs.size, nap, ThT, self.buf.pen, self.buf.dup, self.loss.l2, 1)
        nfp = _padded(nf, self.pad)
        ThF = self.ThF_flat[: d * nfp * k].reshape((d, nfp * k))
        ThF[:, : nf * k] = ThT[:, : nf * k]
        ThF[:, nf * k:] = 0.0
        self.anchor[full] = theta[full]
        pk = Packed(runs, runs.size, nap, nf, k, 1, ThT, ThF, self.buf.pen, self.buf.dup)
        _sweep(self.chunk_lo, ITERATE, Rows(0, self.n, 0, self.n), self.data, self.loss,
               self.upd, it, pk, self.buf, self.out)
        if nf:
            same = (st.asg[full] == st.asg_prev[full]).all(axis=1)
            self.has_bounds[full] = True
            for r in full[~same & self.in_gram[full]]:
                self.leave(r)
            _model_norms(full, nf, theta, self.norms)
            _refresh_bounds(full, nf, self.norms, st.asg, self.lall, self.n, self.fro,
                            self.gamma, self.U, self.Lo)
        self.finish(runs, nap * k, self.buf.gflat, self.buf.cbuf, it)
        self.stats["full_iterations"] += int(nf)
        self.stats["assigned_iterations"] += int(assigned.size)

    def gram_step(self, gram, it):
        """The update of the certified runs that hold Grams: the gradient sum of each of their
        clusters is ``(2 / n) (A_j theta_j - b_j) + l2 |S_j| theta_j``, one GEMM per Gram for all
        the models that use it.

        Invariant: in exact arithmetic this is the direct path's gradient sum for the same
        assignments (which the certificate proved are the direct path's).
        """
        d, k = self.d, self.k
        na = gram.size
        W = na * k
        pos = np.repeat(np.arange(na, dtype=np.int64), k)
        cr = np.repeat(gram, k)
        cj = np.tile(np.arange(k, dtype=np.int64), na)
        cs = self.slots[gram].reshape(-1)
        use = cs >= 0  # an empty cluster has no Gram and a zero gradient
        order = np.argsort(cs[use], kind="stable")
        cr, cj, pos, cs = cr[use][order], cj[use][order], pos[use][order], cs[use][order]
        starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]]) if cs.size else cs
        ends = np.r_[starts[1:], cs.size]
        step = _numerics.GRAM_COLUMNS_PER_TASK
        c0 = np.asarray([b for a0, a1 in zip(starts, ends) for b in range(a0, a1, step)],
                        dtype=np.int64)
        c1 = np.minimum(c0 + step, np.repeat(ends, -(-(ends - starts) // step))).astype(np.int64)
        gs = self.gbuf[: d * W].reshape(1, d * W)
        gs[:] = 0.0
        cache = self.cache
        _gram_gradients(cache.grams, cs[c0], c0, c1, cr, cj, pos,
                        cache.size[cs].astype(np.float64), self.theta, self.bvec, self.loss.l2,
                        self.n, W, self.Tb, self.Ob, gs)
        self.finish(gram, W, gs, self.cbuf1, it)
        self.stats["gram_iterations"] += int(na)

    def finish(self, runs, W, gsum, cb, it):
        _finish_all(it, runs, runs.size, W, gsum, cb, self.upd, self.data.yidx, self.st,
                    self.stop, self.tr, self.nrm, self.ctot)

    def leave(self, r):
        """Run r gives its Grams back (its partition changed, or it stopped)."""
        for j in range(self.k):
            self.cache.release(self.slots[r, j])
            self.slots[r, j] = -1
        self.in_gram[r] = False

    def enter(self, cands, it):
        """Give certified runs cluster Grams where that is cheaper than their assigned steps.

        A Gram step costs ``2 d^2`` flop per model plus reading the Gram, shared by every model
        that uses it (counted as ``GRAM_FLOP_PER_BYTE`` flop a byte); a missing Gram costs
        ``2 |S| n d^2`` flop to build, charged in shares to the candidates that need it. A choice
        of cost only: it never changes an iteration.
        """
        n, d, k, cache, asg = self.n, self.d, self.k, self.cache, self.st.asg
        masks = {r: [asg[r] == j for j in range(k)] for r in cands}
        demand = {}
        for r in cands:
            for mk in masks[r]:
                if mk.any():
                    q = mk.tobytes()
                    demand[q] = demand.get(q, 0) + 1
        for r in cands:
            ms = masks[r]
            keys = [mk.tobytes() for mk in ms]
            cost = 0.0
            charge = 0.0
            for q, mk in zip(keys, ms):
                if not mk.any():
                    continue
                slot = cache.slot_of.get(q)
                share = demand[q] + (cache.refs[slot] if slot is not None else 0)
                cost += 2.0 * d * d + _numerics.GRAM_FLOP_PER_BYTE * 8.0 * d * d / share
                if slot is None:
                    charge += 2.0 * n * d * d * cache.build_machines(mk) / demand[q]
            gain = self.flop_assigned - cost
            new = {q for q, mk in zip(keys, ms) if mk.any() and q not in cache.slot_of}
            idle = {q for q in keys if q in cache.slot_of and cache.refs[cache.slot_of[q]] == 0}
            if gain <= 0 or (self.n_iter - it - 1) * gain < charge or \
                    len(new) > cache.free_slots() - len(idle):
                continue
            c = self.data.yidx[r]
            # cached Grams first, so that building a missing one cannot drop one this run needs
            for j in sorted(range(k), key=lambda j: keys[j] not in cache.slot_of):
                self.slots[r, j] = cache.acquire(ms[j])
                self.bvec[r, j] = self.B[c, ms[j]].sum(axis=0) if ms[j].any() else 0.0
            self.in_gram[r] = True
