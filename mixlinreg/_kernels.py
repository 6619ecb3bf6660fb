"""Private numba kernels: many runs of IFCA at once on shared data.

Public code never calls these directly: :func:`mixlinreg.ifca` validates, casts, allocates and then
calls :func:`_ifca_kernel`. The exact semantics are documented there; this module only says how the
work is organized.

Layout of one iteration (all active runs together)
--------------------------------------------------
* The k models of the ``na`` active runs are packed as the columns of ``ThT`` (d, nap * k), column
  ``a * k + j`` holding model j of active run a; ``nap >= na`` pads to a whole SIMD width when that
  wastes little (padding columns are zero and ignored). A model of the multinomial loss is a
  d x C matrix: its ``nout = C`` columns sit side by side (``(a * k + j) * nout + c``), so every
  "column" below is ``nout`` columns for it.
* Machines are split into a fixed number of contiguous chunks (``_numerics.MAX_CHUNKS``, independent of
  the thread count) and the chunks are processed in parallel (``prange``). For each machine:

  - forward pass of every model of every active run, one BLAS GEMM ``X_i @ ThT`` of shape
    ``(n, nap * k)`` (or, on the sufficient-statistics path, ``(X_i^T X_i) @ ThT``);
  - per-run losses of the k models, the argmin (ties to the lowest index, NaN never wins);
  - the gradient at the assigned model only: one GEMM ``X_i^T @ r`` of shape ``(d, nap)`` where
    column a of ``r`` holds run a's loss derivatives at its assigned model (2 m n d (k + 1) flop per
    run and iteration instead of 4 m n d k); model averaging runs its local steps with the same two
    GEMMs;
  - the machine's contribution is added, row by row, to its chunk's sums (d, nap * k).

  While one machine is processed its rows stay in cache, so X is read from memory once per iteration.
* The chunk sums are then added in chunk order (in parallel over fixed blocks of coordinates), so the
  result does not depend on the number of threads; BLAS must run single-threaded inside the kernel
  (the wrapper pins it with threadpoolctl).
* Runs that diverge or (optionally) stop early are frozen and dropped from the packed set, so they
  cost nothing afterwards.
"""

from collections import namedtuple

import numba as nb
import numpy as np
from numba import prange

from ._numerics import FASTMATH
from .losses import KERNEL_CODES as LOSS_CODES  # noqa: F401  (the wrappers read it here)
from .losses import MULTINOMIAL
from .losses import ce as _ce
from .losses import dce_into as _dce_into
from .losses import dell as _dell
from .losses import ell as _ell

#: What :func:`_sweep` does on each machine (see :func:`_machine`).
EVALUATE, ITERATE = 0, 1

# The kernels' arguments travel in a few named groups (numba compiles named tuples to plain structs).

#: What the machines hold: features ``X`` (m, n, d), response variants ``Y`` (C, m, n), each run's
#: variant ``yidx`` (R,), and, when ``use_stats``, the sufficient statistics ``A`` (m, d, d) =
#: ``X_i^T X_i``, ``Bv`` (C, m, d) = ``X_i^T y_i`` and ``cv`` (C, m) = ``y_i^T y_i``. ``counts``
#: (m,) holds each machine's number of rows ``n_i``; with ``ragged`` (machines of unequal sizes,
#: padded with zero rows to ``n = max n_i``) machine i reads only its first ``n_i`` rows and every
#: mean over its rows divides by ``n_i`` (the wrapper refuses ``resample`` then). Without it every
#: ``counts[i]`` is ``n`` and the iterations are those of the dense arrays, bit for bit. Machine
#: i's gradient and its share of the training loss are multiplied by ``wts[i]``: ``m n_i / N``
#: for ``weighting="size"`` (every row counts once; the wrapper refuses it with model averaging),
#: else exactly 1.0, which changes no bit.
Data = namedtuple("Data", "X Y yidx use_stats A Bv cv counts ragged wts")
#: The objective: per-sample loss ``code`` (:data:`LOSS_CODES`), Huber threshold ``delta``, ridge
#: coefficient ``l2``, and ``nout``, the outputs of a model: 1 for the losses of a scalar
#: prediction; C for the multinomial loss, whose model j of run r is the d x C matrix held as the
#: ``nout`` vectors ``theta[r, j * nout + c]`` (column c of the matrix), one logit each.
Loss = namedtuple("Loss", "code delta l2 nout")
#: How a machine contributes: step sizes ``lr`` (R,), option II (``model_avg``) with
#: ``local_steps``, the participation mask ``part`` (n_iter, R, m) when ``use_part``, and, when
#: ``use_shared``, the coordinates ``shared`` (d,) bool that all k models share (weight sharing:
#: one copy updated from every participating machine, see :func:`_finish_all`).
Update = namedtuple("Update", "lr model_avg local_steps use_part part use_shared shared")
#: The rows of one iteration: losses on ``[e0, e0 + ne)``, the gradient on ``[g0, g0 + ng)``.
Rows = namedtuple("Rows", "e0 ne g0 ng")
#: The runs of one sweep: ``act[:na]`` (run indices) with their k models of ``nout`` outputs
#: packed as the columns of ``ThT`` (d, nap * k * nout), output c of model j of active run a in
#: column ``(a * k + j) * nout + c`` (see :func:`_pack`: ridge penalties ``pen``, exact-duplicate
#: map ``dup``); the first ``nf`` runs are evaluated, their models also packed in ``ThF`` (the
#: direct path: ``nf == na`` and ``ThF is ThT``).
Packed = namedtuple("Packed", "act na nap nf k nout ThT ThF pen dup")
#: Where a sweep writes assignments: ``asg`` (R, m), minimum losses ``lmin`` (R, m) and, with
#: ``keep_all``, every model's data loss ``lall`` (R, m, k).
Assign = namedtuple("Assign", "asg lmin keep_all lall")
#: Scratch of all sweeps, one row per machine chunk (see :func:`_sweep_buffers`); ``gflat`` and
#: ``cbuf`` receive each chunk's sums and counts.
Buffers = namedtuple("Buffers", "Pflat Rflat Gflat Tflat Lbuf gflat cbuf ThT_flat pen dup")
#: The runs' state, updated in place by :func:`_finish_all`.
State = namedtuple("State", "theta asg asg_prev lmin frozen diverged converged n_iter_out")
#: When runs stop: ``early_stop`` with ``tol``, divergence above ``thresh``.
Stop = namedtuple("Stop", "early_stop tol thresh")
#: The per-iteration record (``on``): labels, loss and, with ``has_star``, distances to ``star``.
Trace = namedtuple("Trace", "on labels loss dist has_star star")


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def _argmin(L, a, k):
    """Index of the smallest L[a, :k]; ties to the lowest index; NaN never beats a finite value."""
    best = 0
    bv = L[a, 0]
    for j in range(1, k):
        v = L[a, j]
        if v < bv or (np.isnan(bv) and not np.isnan(v)):
            best = j
            bv = v
    return best


@nb.njit(fastmath=FASTMATH, cache=True)
def _padded(na, pad):
    """Number of packed run slots: na rounded up to a multiple of ``pad`` when that wastes <= 1/8.

    BLAS kernels run much faster on column counts that fill whole SIMD registers (16 float32 or 8
    float64); the extra slots hold zero models whose results are ignored.
    """
    nap = ((na + pad - 1) // pad) * pad
    if (nap - na) * 8 > na:
        return na
    return nap


@nb.njit(fastmath=FASTMATH, cache=True)
def _pack(theta, act, na, nap, ThT, pen, dup, l2, nout):
    """Pack the active runs' models as columns of ThT (d, nap*k*nout); penalties; duplicate map.

    ``theta`` (R, k * nout, d) holds model j's outputs as the vectors ``j * nout ... j * nout +
    nout - 1``, so vector v of run a goes to column ``a * k * nout + v``."""
    kv = theta.shape[1]
    k = kv // nout
    d = theta.shape[2]
    ThT[:, :] = 0.0
    for a in range(na):
        r = act[a]
        for j in range(k):
            s = 0.0
            for v in range(j * nout, (j + 1) * nout):
                col = a * kv + v
                for q in range(d):
                    x = theta[r, v, q]
                    ThT[q, col] = x
                    s += np.float64(x) * np.float64(x)
            pen[a, j] = 0.5 * l2 * s
            # exact ties: a model bitwise equal to a lower-indexed one reuses that model's loss
            dup[a, j] = j
            for jj in range(j):
                same = True
                for c in range(nout):
                    for q in range(d):
                        if theta[r, jj * nout + c, q] != theta[r, j * nout + c, q]:
                            same = False
                            break
                    if not same:
                        break
                if same:
                    dup[a, j] = jj
                    break


#: The outputs of a call, filled in place: final ``labels`` (R, m), ``loss`` (R,), flags
#: ``diverged`` and ``converged`` (R,), iterations performed ``n_iter`` (R,).
Result = namedtuple("Result", "labels loss diverged converged n_iter")


@nb.njit(fastmath=FASTMATH, cache=True)
def _target_columns(i, pk, asg, upd, it):
    """First column ``(a*k + j) * nout`` that machine i adds into for each active run (its assigned
    model j's ``nout`` columns follow), or -1 if it sits out."""
    cols = np.empty(pk.na, dtype=np.int64)
    for a in range(pk.na):
        r = pk.act[a]
        if upd.use_part and not upd.part[it, r, i]:
            cols[a] = -1
        else:
            cols[a] = (a * pk.k + asg[r, i]) * pk.nout
    return cols


# ------------------------------------------------------------------------- one machine, one sweep
@nb.njit(fastmath=FASTMATH, cache=True)
def _evaluate(i, rows, data, loss, pk, Pflat, L, out):
    """Every model's loss on machine i for the first ``pk.nf`` runs, and their assignments.

    The losses are computed on rows ``[e0, e0 + ne)`` with one GEMM ``X_i @ ThF`` (kept in
    ``Pflat`` as ``(ne, WF)``, column ``a*k + j``, for the gradient to reuse), or from the
    sufficient statistics. Invariant: ``out.asg[r, i]`` is the lowest index among the models of
    smallest loss (data part plus ridge penalty), a NaN loss never wins (:func:`_argmin`), and
    bitwise-equal models get the lower model's loss, so an exact tie stays a tie.
    """
    nf, k, act, ThF = pk.nf, pk.k, pk.act, pk.ThF
    d = ThF.shape[0]
    WF = ThF.shape[1]
    if data.use_stats:
        # Q = A_i ThF (A_i = X_i^T X_i); F = (theta.Q - 2 b.theta + c) / n_i + penalty
        n_all = data.counts[i]
        Q = Pflat[: d * WF].reshape((d, WF))
        np.dot(data.A[i], ThF, Q)
        for a in range(nf):
            for j in range(k):
                L[a, j] = 0.0
        for q in range(d):
            for a in range(nf):
                bq = np.float64(data.Bv[data.yidx[act[a]], i, q])
                for j in range(k):
                    col = a * k + j
                    th = np.float64(ThF[q, col])
                    L[a, j] += th * (np.float64(Q[q, col]) - 2.0 * bq)
        for a in range(nf):
            cc = data.cv[data.yidx[act[a]], i]
            for j in range(k):
                L[a, j] = (L[a, j] + cc) / n_all
    else:
        e0, ne = rows.e0, rows.ne
        Xe = data.X[i, e0:e0 + ne]
        P = Pflat[: ne * WF].reshape((ne, WF))
        np.dot(Xe, ThF, P)
        for a in range(nf):
            for j in range(k):
                L[a, j] = 0.0
        nout = pk.nout
        for t in range(ne):
            for a in range(nf):
                yv = data.Y[data.yidx[act[a]], i, e0 + t]
                if loss.code == MULTINOMIAL:
                    for j in range(k):
                        L[a, j] += _ce(P, t, (a * k + j) * nout, nout, yv)
                else:
                    for j in range(k):
                        L[a, j] += _ell(P[t, a * k + j], yv, loss.code, loss.delta)
        for a in range(nf):
            for j in range(k):
                L[a, j] = L[a, j] / ne
    # L holds the data part of each loss; bitwise equal models share the lower model's value
    for a in range(nf):
        for j in range(k):
            L[a, j] = L[a, pk.dup[a, j]]
            if out.keep_all:
                out.lall[act[a], i, j] = L[a, j]
            L[a, j] += pk.pen[a, j]
        j = _argmin(L, a, k)
        r = act[a]
        out.asg[r, i] = j
        out.lmin[r, i] = L[a, j] * data.wts[i]


@nb.njit(fastmath=FASTMATH, cache=True)
def _stats_gradient(i, data, loss, pk, upd, it, asg, Pflat, gsum):
    """Option I from sufficient statistics: ``2 (A_i theta - b_i) / n + l2 theta`` at each run's
    assigned model, added into ``gsum``; ``Pflat`` holds ``Q = A_i ThT`` from :func:`_evaluate`."""
    d = pk.ThT.shape[0]
    W = pk.nap * pk.k
    n_all = data.counts[i]
    Q = Pflat[: d * W].reshape((d, W))
    cols = _target_columns(i, pk, asg, upd, it)
    wi = data.wts[i]  # 1.0 unless weighting="size"
    for q in range(d):
        for a in range(pk.na):
            col = cols[a]
            if col >= 0:
                g = 2.0 * (Q[q, col] - data.Bv[data.yidx[pk.act[a]], i, q]) / n_all
                if loss.l2 != 0.0:
                    g += loss.l2 * pk.ThT[q, col]
                gsum[q, col] += g * wi


@nb.njit(fastmath=FASTMATH, cache=True)
def _gradient(i, rows, nr, WF, data, loss, pk, upd, it, asg, Pflat, Rm, GT, TaT, Qg, gsum):
    """Option I: machine i's gradient on rows ``[g0, g0 + ng)`` at each run's assigned model,
    added into its ``nout`` columns of ``gsum`` (from ``(a*k + asg) * nout``).

    The first ``nr`` runs reuse their forward pass from :func:`_evaluate` (``Pflat`` as
    ``(ng, WF)``); the others' passes at the assigned models come from one GEMM ``X_i @ TaT`` into
    ``Qg``. Invariant: the gradient is ``(1/ng) X_i^T ell'(X_i theta_a, y_i) + l2 theta_a`` with
    the same rows and models whichever runs reuse a pass (for the multinomial loss ``ell'`` is the
    row's ``softmax - e_y`` over the model's ``nout`` logits).
    """
    d = pk.ThT.shape[0]
    nout = pk.nout
    g0, ng = rows.g0, rows.ng
    Xg = data.X[i, g0:g0 + ng]
    if nr < pk.na:
        np.dot(Xg, TaT, Qg)
    P = Pflat[: ng * WF].reshape((ng, WF))
    for t in range(ng):
        for a in range(nr):
            r = pk.act[a]
            yv = data.Y[data.yidx[r], i, g0 + t]
            if loss.code == MULTINOMIAL:
                _dce_into(P, t, (a * pk.k + asg[r, i]) * nout, nout, yv, Rm, a * nout)
            else:
                Rm[t, a] = _dell(P[t, a * pk.k + asg[r, i]], yv, loss.code, loss.delta)
        for a in range(nr, pk.na):
            r = pk.act[a]
            yv = data.Y[data.yidx[r], i, g0 + t]
            if loss.code == MULTINOMIAL:
                _dce_into(Qg, t, (a - nr) * nout, nout, yv, Rm, a * nout)
            else:
                Rm[t, a] = _dell(Qg[t, a - nr], yv, loss.code, loss.delta)
    np.dot(Xg.T, Rm, GT)
    inv = 1.0 / ng
    wi = data.wts[i]  # 1.0 unless weighting="size"
    cols = _target_columns(i, pk, asg, upd, it)
    for q in range(d):  # row by row: every array below is read contiguously
        for a in range(pk.na):
            col = cols[a]
            if col >= 0:
                for c in range(nout):
                    g = GT[q, a * nout + c] * inv
                    if loss.l2 != 0.0:
                        g += loss.l2 * pk.ThT[q, col + c]
                    gsum[q, col + c] += g * wi


@nb.njit(fastmath=FASTMATH, cache=True)
def _local_model(i, rows, data, loss, pk, upd, it, asg, Rm, GT, TaT, Qg, gsum, cnt):
    """Option II: ``local_steps`` gradient steps of size ``lr`` on rows ``[g0, g0 + ng)`` from each
    run's assigned model (packed in ``TaT``, ``nout`` columns per run); the local model is added
    into its ``nout`` columns of ``gsum`` (from ``(a*k + asg) * nout``) and counted in
    ``cnt[a, asg]``. Invariant: every step uses the same rows."""
    d = pk.ThT.shape[0]
    nout = pk.nout
    g0, ng = rows.g0, rows.ng
    Xg = data.X[i, g0:g0 + ng]
    for _ in range(upd.local_steps):
        np.dot(Xg, TaT, Qg)
        for t in range(ng):
            for a in range(pk.na):
                r = pk.act[a]
                yv = data.Y[data.yidx[r], i, g0 + t]
                if loss.code == MULTINOMIAL:
                    _dce_into(Qg, t, a * nout, nout, yv, Rm, a * nout)
                else:
                    Rm[t, a] = _dell(Qg[t, a], yv, loss.code, loss.delta)
        np.dot(Xg.T, Rm, GT)
        inv = 1.0 / ng
        for q in range(d):
            for a in range(pk.na):
                for c in range(a * nout, (a + 1) * nout):
                    TaT[q, c] = TaT[q, c] - upd.lr[pk.act[a]] * (GT[q, c] * inv + loss.l2 * TaT[q, c])
    cols = _target_columns(i, pk, asg, upd, it)
    for a in range(pk.na):
        if cols[a] >= 0:
            cnt[a, cols[a] // nout - a * pk.k] += 1
    for q in range(d):
        for a in range(pk.na):
            col = cols[a]
            if col >= 0:
                for c in range(nout):
                    gsum[q, col + c] += TaT[q, a * nout + c]


@nb.njit(fastmath=FASTMATH, cache=True)
def _machine(i, mode, rows, data, loss, upd, it, pk, Pflat, Rflat, Gflat, Tflat, L, out, gsum,
             cnt):
    """Machine i for every run of the sweep: :func:`_evaluate` (the first ``pk.nf`` runs; the
    others keep the assignment already in ``out.asg``, the certified path of :mod:`mixlinreg._gram`),
    then, with ``mode == ITERATE``, the machine's contribution at the assigned models
    (:func:`_stats_gradient`, :func:`_gradient` or :func:`_local_model`). Machines of unequal
    sizes (``data.ragged``) use their own rows ``[0, n_i)`` in every sweep."""
    if data.ragged:
        ni = data.counts[i]
        rows = Rows(0, ni, 0, ni)
    if pk.nf > 0:
        _evaluate(i, rows, data, loss, pk, Pflat, L, out)
    if mode == EVALUATE:
        return
    if data.use_stats:
        _stats_gradient(i, data, loss, pk, upd, it, out.asg, Pflat, gsum)
        return
    d = pk.ThT.shape[0]
    ng = rows.ng
    WF = pk.ThF.shape[1]
    na, nap, k, nout = pk.na, pk.nap, pk.k, pk.nout
    # the evaluated runs' forward passes are reused unless the gradient's rows differ or local
    # steps follow
    nr = 0 if (upd.model_avg or rows.g0 != rows.e0 or ng != rows.ne) else pk.nf
    Rm = Rflat[: ng * nap * nout].reshape((ng, nap * nout))
    GT = Gflat[: d * nap * nout].reshape((d, nap * nout))
    # runs nr.. need a forward pass at their assigned models: columns (a - nr) * nout ... of TaT,
    # padded to a whole SIMD width (nap runs) when no run's pass is reused; Qg lies after P in Pflat
    wq = (nap if nr == 0 else na - nr) * nout
    TaT = Tflat[: d * wq].reshape((d, wq))
    Qg = Pflat[ng * WF: ng * WF + ng * wq].reshape((ng, wq))
    if nr < na:
        TaT[:, :] = 0.0
        for a in range(nr, na):
            col = (a * k + out.asg[pk.act[a], i]) * nout
            for c in range(nout):
                for q in range(d):
                    TaT[q, (a - nr) * nout + c] = pk.ThT[q, col + c]
    Rm[:, :] = 0.0
    if upd.model_avg:
        _local_model(i, rows, data, loss, pk, upd, it, out.asg, Rm, GT, TaT, Qg, gsum, cnt)
    else:
        _gradient(i, rows, nr, WF, data, loss, pk, upd, it, out.asg, Pflat, Rm, GT, TaT, Qg, gsum)


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _sweep(chunk_lo, mode, rows, data, loss, upd, it, pk, buf, out):
    """All machines, chunk-parallel: :func:`_machine` for each; chunk c adds into ``buf.gflat[c]``
    (viewed as (d, nap*k*nout)) and ``buf.cbuf[c]``, which ``ITERATE`` zeroes first."""
    nchunks = chunk_lo.shape[0] - 1
    d = pk.ThT.shape[0]
    W = pk.nap * pk.k * pk.nout
    # the arrays as locals: a prange body must not write through a tuple's field (see _finish_all)
    Pflat, Rflat, Gflat, Tflat, Lbuf = buf.Pflat, buf.Rflat, buf.Gflat, buf.Tflat, buf.Lbuf
    gflat, cbuf = buf.gflat, buf.cbuf
    for c in prange(nchunks):
        gsum = gflat[c, : d * W].reshape((d, W))
        if mode != EVALUATE:
            gsum[:, :] = 0.0
            cbuf[c, :, :] = 0
        for i in range(chunk_lo[c], chunk_lo[c + 1]):
            _machine(i, mode, rows, data, loss, upd, it, pk, Pflat[c], Rflat[c], Gflat[c],
                     Tflat[c], Lbuf[c], out, gsum, cbuf[c])


@nb.njit(fastmath=FASTMATH, cache=True)
def _dist_into(theta, r, theta_star, ci, out, nout):
    """out[j, l] = ||theta_j - theta*_l|| for run r (models of ``nout`` vectors each: the
    Frobenius norm of the difference of the d x nout matrices)."""
    k = theta.shape[1] // nout
    ks = theta_star.shape[1] // nout
    d = theta.shape[2]
    for j in range(k):
        for l in range(ks):
            s = 0.0
            for c in range(nout):
                for q in range(d):
                    v = (np.float64(theta[r, j * nout + c, q])
                         - np.float64(theta_star[ci, l * nout + c, q]))
                    s += v * v
            out[j, l] = np.sqrt(s)


# ------------------------------------------------------------------------------- after a sweep
@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _finish_all(it, act, na, W, gflat, cbuf, upd, yidx, st, stop, tr, nrm, ctot):
    """After the sweep: training loss, trace, update, divergence and early-stop checks of the runs
    ``act[:na]``, from the chunk sums ``gflat`` (nchunks, d * W) and counts ``cbuf``.

    Three parallel phases: per run (loss, trace, loss-divergence), per fixed block of coordinates
    (the update, reading the chunk sums row by row, in chunk order), per run (divergence of the
    new parameters and early stop, from the blocks' partial norms added in block order). Fixed
    chunks and blocks make the result independent of the number of threads. The k models are
    the columns of ``ctot`` (Rp, k); each has ``nout = theta.shape[1] // k`` vectors, and its
    relative step is that of the whole model (Frobenius norms).

    Weight sharing (``upd.use_shared``): a coordinate ``q`` with ``upd.shared[q]`` holds one value
    for all k models (the wrapper checks that they start equal). Option I moves it by the sum of
    every participating machine's gradient at its chosen model, ``- (lr / m) sum_i g_i[q]``
    (gradient averaging over all machines); option II sets it to the mean of every participating
    machine's local model (FedAvg over all machines; unchanged when no machine participates). The
    other coordinates are IFCA's, as without sharing.
    """
    # every field is read into a local first: inside prange, numba's parfor lowering must see the
    # arrays themselves (writes through a tuple's field in a prange body were lost)
    theta, asg, asg_prev, lmin, frozen = st.theta, st.asg, st.asg_prev, st.lmin, st.frozen
    diverged, converged, n_iter_out = st.diverged, st.converged, st.n_iter_out
    model_avg, lr = upd.model_avg, upd.lr
    use_shared, shared = upd.use_shared, upd.shared
    early_stop, tol, thresh = stop.early_stop, stop.tol, stop.thresh
    do_trace, tr_labels, tr_loss, tr_dist = tr.on, tr.labels, tr.loss, tr.dist
    has_star, theta_star = tr.has_star, tr.star
    m = asg.shape[1]
    k = ctot.shape[1]
    nout = theta.shape[1] // k
    d = theta.shape[2]
    nchunks = gflat.shape[0]
    nblk = nrm.shape[0]
    for a in prange(na):
        r = act[a]
        tl = 0.0
        for i in range(m):
            tl += lmin[r, i]
        tl /= m
        if do_trace:
            for i in range(m):
                tr_labels[it, r, i] = asg[r, i]
            tr_loss[it, r] = tl
            if has_star:
                _dist_into(theta, r, theta_star, yidx[r], tr_dist[it, r], nout)
        if not np.isfinite(tl):
            diverged[r] = True
            frozen[r] = True
            n_iter_out[r] = it
        for j in range(k):
            c = 0
            if model_avg:
                for ch in range(nchunks):
                    c += cbuf[ch, a, j]
            ctot[a, j] = c

    for b in prange(nblk):
        q0 = (b * d) // nblk
        q1 = ((b + 1) * d) // nblk
        for a in range(na):
            for j in range(k):
                nrm[b, a, j, 0] = 0.0
                nrm[b, a, j, 1] = 0.0
                nrm[b, a, j, 2] = 0.0
        for q in range(q0, q1):
            base = q * W
            for a in range(na):
                r = act[a]
                if frozen[r]:
                    continue
                scale = lr[r] / m
                if use_shared and shared[q]:
                    _update_shared(theta, r, q, a, k, nout, base, gflat, ctot, model_avg, scale,
                                   thresh, nrm, b)
                    continue
                for j in range(k):
                    c = ctot[a, j]
                    if model_avg and c == 0:
                        if use_shared:  # its shared coordinates moved: the step is relative to
                            for v in range(j * nout, (j + 1) * nout):  # the whole model
                                o = np.float64(theta[r, v, q])
                                nrm[b, a, j, 0] += o * o
                        continue  # a model nobody chose keeps its value
                    for v in range(j * nout, (j + 1) * nout):
                        col = base + a * k * nout + v
                        s = 0.0
                        for ch in range(nchunks):
                            s += gflat[ch, col]
                        old = theta[r, v, q]
                        if model_avg:
                            theta[r, v, q] = s / c
                        else:
                            theta[r, v, q] = old - scale * s
                        nv = theta[r, v, q]
                        if not np.isfinite(nv) or abs(nv) > thresh:
                            nrm[b, a, j, 2] = 1.0
                        dq = np.float64(nv) - np.float64(old)
                        nrm[b, a, j, 0] += np.float64(old) * np.float64(old)
                        nrm[b, a, j, 1] += dq * dq

    for a in prange(na):
        r = act[a]
        if frozen[r]:
            continue
        rel = 0.0
        bad = False
        for j in range(k):
            n_old = 0.0
            n_step = 0.0
            for b in range(nblk):
                n_old += nrm[b, a, j, 0]
                n_step += nrm[b, a, j, 1]
                if nrm[b, a, j, 2] != 0.0:
                    bad = True
            rj = np.sqrt(n_step) / max(np.sqrt(n_old), 1e-300)
            if rj > rel:
                rel = rj
        if bad:
            diverged[r] = True
            frozen[r] = True
            n_iter_out[r] = it + 1
        elif early_stop and it >= 1 and rel <= tol:
            same = True
            for i in range(m):
                if asg[r, i] != asg_prev[r, i]:
                    same = False
                    break
            if same:
                converged[r] = True
                frozen[r] = True
                n_iter_out[r] = it + 1
        for i in range(m):
            asg_prev[r, i] = asg[r, i]


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def _update_shared(theta, r, q, a, k, nout, base, gflat, ctot, model_avg, scale, thresh, nrm, b):
    """Shared coordinate ``q`` of run ``r``: one value from all k models' sums (every participating
    machine) written into every model and counted in each one's checks (:func:`_finish_all`)."""
    nchunks = gflat.shape[0]
    for c in range(nout):
        s = 0.0
        cnt = 0
        for j in range(k):
            col = base + (a * k + j) * nout + c
            for ch in range(nchunks):
                s += gflat[ch, col]
            cnt += ctot[a, j]
        old = theta[r, c, q]  # every model holds this value
        if model_avg:
            if cnt > 0:
                theta[r, c, q] = s / cnt
        else:
            theta[r, c, q] = old - scale * s
        nv = theta[r, c, q]
        bad = not np.isfinite(nv) or abs(nv) > thresh
        dq = np.float64(nv) - np.float64(old)
        for j in range(k):
            v = j * nout + c
            theta[r, v, q] = nv
            if bad:
                nrm[b, a, j, 2] = 1.0
            nrm[b, a, j, 0] += np.float64(old) * np.float64(old)
            nrm[b, a, j, 1] += dq * dq


# ---------------------------------------------------------------------------------- the drivers
@nb.njit(cache=True)
def _sweep_buffers(nchunks, n, d, Rp, k, nout, use_stats, theta):
    """:class:`Buffers` of :func:`_sweep` for up to ``Rp`` packed runs of k models with ``nout``
    outputs each (per chunk, working dtype)."""
    dt = theta.dtype
    w = Rp * nout  # columns of one model per run
    width = max(n * w * (k + 1), d * w)  # P, then the fresh forward passes (_machine)
    if use_stats:
        width = max(width, d * w * k)
    return Buffers(np.empty((nchunks, width), dtype=dt),
                   np.empty((nchunks, n * w), dtype=dt),
                   np.empty((nchunks, d * w), dtype=dt),
                   np.empty((nchunks, d * w), dtype=dt),
                   np.empty((nchunks, Rp, k), dtype=np.float64),
                   np.zeros((nchunks, d * w * k), dtype=np.float64),
                   np.zeros((nchunks, Rp, k), dtype=np.int64),
                   np.zeros(d * w * k, dtype=dt),
                   np.empty((Rp, k), dtype=np.float64),
                   np.empty((Rp, k), dtype=np.int64))


@nb.njit(cache=True)
def _run_state(theta, res):
    """The :class:`State` of a call: assignments, losses and flags of all R runs (none frozen)."""
    R = theta.shape[0]
    m = res.labels.shape[1]
    return State(theta, np.zeros((R, m), dtype=np.int64), np.full((R, m), -1, dtype=np.int64),
                 np.empty((R, m), dtype=np.float64), np.zeros(R, dtype=np.bool_), res.diverged,
                 res.converged, res.n_iter)


@nb.njit(fastmath=FASTMATH, cache=True)
def _iterations(it0, it1, data, loss, upd, resample, n_sub, stop, chunk_lo, pad, tr, buf, st, act,
                nrm, ctot):
    """Iterations ``it0 .. it1 - 1`` of the direct path, on the state ``st`` and scratch ``buf``,
    ``act``, ``nrm``, ``ctot``: the one loop, run whole by :func:`_ifca_kernel` and in chunks
    that keep the state between them by :func:`mixlinreg._chunked.run_direct`.

    Returns the first iteration not run: ``it1``, or the iteration at which no run was left
    active (the kernel's ``break``)."""
    m, n, d = data.X.shape
    theta = st.theta
    R = theta.shape[0]
    nout = loss.nout
    k = theta.shape[1] // nout
    rows_it = n_sub if resample else n
    out = Assign(st.asg, st.lmin, False, np.zeros((1, 1, 1), dtype=np.float64))
    for it in range(it0, it1):
        na = 0
        for r in range(R):
            if not st.frozen[r]:
                act[na] = r
                na += 1
        if na == 0:
            return it
        nap = _padded(na, pad)
        ThT = buf.ThT_flat[: d * nap * k * nout].reshape((d, nap * k * nout))
        _pack(theta, act, na, nap, ThT, buf.pen, buf.dup, loss.l2, nout)
        pk = Packed(act, na, nap, na, k, nout, ThT, ThT, buf.pen, buf.dup)
        if resample:
            rows = Rows(2 * it * n_sub, rows_it, 2 * it * n_sub + n_sub, rows_it)
        else:
            rows = Rows(0, rows_it, 0, rows_it)
        _sweep(chunk_lo, ITERATE, rows, data, loss, upd, it, pk, buf, out)
        _finish_all(it, act, na, nap * k * nout, buf.gflat, buf.cbuf, upd, data.yidx, st, stop, tr,
                    nrm, ctot)
    return it1



@nb.njit(fastmath=FASTMATH, cache=True)
def _ifca_kernel(data, loss, upd, n_iter, resample, n_sub, stop, chunk_lo, pad, tr, theta, res):
    """The direct path: ``n_iter`` IFCA iterations of all runs, every model's loss on every machine
    every iteration; fills ``res`` (:class:`Result`) and the trace in place.

    ``theta`` (R, k * nout, d) is updated in place and holds the final models on return.
    Invariant: each iteration is Algorithm 2 of the paper, exactly as :func:`mixlinreg.ifca`
    documents it (the float64 reference is ``tests/naive.py``); a frozen run is never touched again.
    """
    m, n, d = data.X.shape
    R = theta.shape[0]
    nout = loss.nout
    k = theta.shape[1] // nout
    nchunks = chunk_lo.shape[0] - 1
    Rp = _padded(R, pad)
    buf = _sweep_buffers(nchunks, n, d, Rp, k, nout, data.use_stats, theta)
    st = _run_state(theta, res)
    act = np.empty(R, dtype=np.int64)
    nrm = np.zeros((min(d, 8), Rp, k, 3), dtype=np.float64)
    ctot = np.zeros((Rp, k), dtype=np.int64)
    for r in range(R):
        res.n_iter[r] = n_iter

    _iterations(0, n_iter, data, loss, upd, resample, n_sub, stop, chunk_lo, pad, tr, buf, st, act,
                nrm, ctot)
    _final_eval(chunk_lo, data, loss, upd, pad, n_iter, buf, st, tr, res)


@nb.njit(fastmath=FASTMATH, cache=True)
def _final_eval(chunk_lo, data, loss, upd, pad, n_iter, buf, st, tr, res):
    """Final evaluation of every run on all rows: ``res.labels``, ``res.loss``, the trace's tail.

    Invariant: whatever path produced ``st.theta``, the reported labels and loss come from this
    one exact evaluation, and a frozen run's remaining trace entries repeat it.
    """
    m, n, d = data.X.shape
    theta = st.theta
    R = theta.shape[0]
    nout = loss.nout
    k = theta.shape[1] // nout
    Rp = _padded(R, pad)
    act = np.arange(R)
    ThT = buf.ThT_flat[: d * Rp * k * nout].reshape((d, Rp * k * nout))
    _pack(theta, act, R, Rp, ThT, buf.pen, buf.dup, loss.l2, nout)
    pk = Packed(act, R, Rp, R, k, nout, ThT, ThT, buf.pen, buf.dup)
    out = Assign(res.labels, st.lmin, False, np.zeros((1, 1, 1), dtype=np.float64))
    _sweep(chunk_lo, EVALUATE, Rows(0, n, 0, n), data, loss, upd, 0, pk, buf, out)
    for r in range(R):
        tl = 0.0
        for i in range(m):
            tl += st.lmin[r, i]
        res.loss[r] = tl / m
        if tr.on:
            for t in range(res.n_iter[r], n_iter + 1):
                for i in range(m):
                    tr.labels[t, r, i] = res.labels[r, i]
                tr.loss[t, r] = res.loss[r]
                if tr.has_star:
                    _dist_into(theta, r, tr.star, data.yidx[r], tr.dist[t, r], nout)
