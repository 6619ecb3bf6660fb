"""Private numba kernels: many runs of IFCA at once on shared data.

Public code never calls these directly: :func:`mixlinreg.ifca` validates, casts, allocates and then
calls :func:`_ifca_kernel`. The exact semantics are documented there; this module only says how the
work is organized.

Layout of one iteration (all active runs together)
--------------------------------------------------
* The k models of the ``na`` active runs are packed as the columns of ``ThT`` (d, nap * k), column
  ``a * k + j`` holding model j of active run a; ``nap >= na`` pads to a whole SIMD width when that
  wastes little (padding columns are zero and ignored).
* Machines are split into a fixed number of contiguous chunks (``_config.MAX_CHUNKS``, independent of
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

import numba as nb
import numpy as np
from numba import prange

from ._config import FASTMATH

LOSS_CODES = {"squared": 0, "logistic": 1, "huber": 2}

#: What :func:`_sweep` does on each machine (see :func:`_machine`).
EVALUATE, ITERATE = 0, 1


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def _ell(z, y, code, delta):
    """Per-sample loss as a function of the prediction z = <x, theta> (float64 arithmetic)."""
    z = np.float64(z)
    y = np.float64(y)
    if code == 0:
        r = z - y
        return r * r
    elif code == 1:
        # log(1 + exp(z)) - y z, evaluated without overflow
        if z > 0.0:
            return z + np.log1p(np.exp(-z)) - y * z
        return np.log1p(np.exp(z)) - y * z
    else:
        r = y - z
        a = abs(r)
        if a <= delta:
            return 0.5 * r * r
        return delta * (a - 0.5 * delta)


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def _dell(z, y, code, delta):
    """Derivative of the per-sample loss with respect to the prediction z."""
    z = np.float64(z)
    y = np.float64(y)
    if code == 0:
        return 2.0 * (z - y)
    elif code == 1:
        if z >= 0.0:
            return 1.0 / (1.0 + np.exp(-z)) - y
        e = np.exp(z)
        return e / (1.0 + e) - y
    else:
        r = y - z
        if r > delta:
            return -delta
        if r < -delta:
            return delta
        return -r


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
def _pack(theta, act, na, nap, ThT, pen, dup, l2):
    """Pack the active runs' models as columns of ThT (d, nap*k); penalties; duplicate map."""
    k = theta.shape[1]
    d = theta.shape[2]
    ThT[:, :] = 0.0
    for a in range(na):
        r = act[a]
        for j in range(k):
            s = 0.0
            col = a * k + j
            for q in range(d):
                v = theta[r, j, q]
                ThT[q, col] = v
                s += np.float64(v) * np.float64(v)
            pen[a, j] = 0.5 * l2 * s
            # exact ties: a model bitwise equal to a lower-indexed one reuses that model's loss
            dup[a, j] = j
            for jj in range(j):
                same = True
                for q in range(d):
                    if theta[r, jj, q] != theta[r, j, q]:
                        same = False
                        break
                if same:
                    dup[a, j] = jj
                    break


@nb.njit(fastmath=FASTMATH, cache=True)
def _target_columns(i, act, na, k, asg, use_part, part, it):
    """Column ``a*k + j`` that machine i adds into for each active run, or -1 if it sits out."""
    cols = np.empty(na, dtype=np.int64)
    for a in range(na):
        r = act[a]
        if use_part and not part[it, r, i]:
            cols[a] = -1
        else:
            cols[a] = a * k + asg[r, i]
    return cols


@nb.njit(fastmath=FASTMATH, cache=True)
def _machine(i, e0, ne, g0, ng, X, Y, yidx, act, na, nap, nf, k, ThT, ThF, pen, dup,
             code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
             mode, model_avg, local_steps, use_part, part, it,
             Pflat, Rflat, Gflat, Tflat, L, asg_out, lmin_out, keep_all, lall_out, gsum, cnt):
    """Process one machine for all active runs: losses, assignment and (optionally) its update.

    The first ``nf`` active runs are *evaluated*: every model's loss on the machine (one GEMM with
    ``ThF``, which holds their models packed as the first ``nf * k`` columns of ``ThT``, padded),
    then the argmin. The others keep the assignment already in ``asg_out`` (the certified path
    of :mod:`mixlinreg._gram`; the direct path always has ``nf == na`` and ``ThF is ThT``).

    ``mode`` 0 (``EVALUATE``): writes the assignment and minimum loss of run ``act[a]`` into
    ``asg_out[act[a], i]`` and ``lmin_out[act[a], i]`` and, with ``keep_all``, the data part of
    every model's loss (without the ridge penalty) into ``lall_out[act[a], i, :]``.
    ``mode`` 1 (``ITERATE``): that, then, if the machine participates, adds its gradient (option I)
    or its local model (option II) at the assigned model of every active run into column
    ``a*k + j`` of ``gsum`` (d, nap*k) and counts it in ``cnt[a, j]``.
    """
    d = ThT.shape[0]
    WF = ThF.shape[1]
    if nf > 0:
        if use_stats:
            # Q = A_i ThT (A_i = X_i^T X_i); F = (theta.Q - 2 b.theta + c) / n + penalty
            Q = Pflat[: d * WF].reshape((d, WF))
            np.dot(A[i], ThF, Q)
            for a in range(nf):
                for j in range(k):
                    L[a, j] = 0.0
            for q in range(d):
                for a in range(nf):
                    bq = np.float64(Bv[yidx[act[a]], i, q])
                    for j in range(k):
                        col = a * k + j
                        th = np.float64(ThF[q, col])
                        L[a, j] += th * (np.float64(Q[q, col]) - 2.0 * bq)
            for a in range(nf):
                cc = cv[yidx[act[a]], i]
                for j in range(k):
                    L[a, j] = (L[a, j] + cc) / n_all
        else:
            Xe = X[i, e0:e0 + ne]
            P = Pflat[: ne * WF].reshape((ne, WF))
            np.dot(Xe, ThF, P)
            for a in range(nf):
                for j in range(k):
                    L[a, j] = 0.0
            for t in range(ne):
                for a in range(nf):
                    yv = Y[yidx[act[a]], i, e0 + t]
                    for j in range(k):
                        L[a, j] += _ell(P[t, a * k + j], yv, code, delta)
            for a in range(nf):
                for j in range(k):
                    L[a, j] = L[a, j] / ne
        # L holds the data part of each loss; bitwise equal models share the lower model's value
        for a in range(nf):
            for j in range(k):
                L[a, j] = L[a, dup[a, j]]
                if keep_all:
                    lall_out[act[a], i, j] = L[a, j]
                L[a, j] += pen[a, j]
            j = _argmin(L, a, k)
            r = act[a]
            asg_out[r, i] = j
            lmin_out[r, i] = L[a, j]
    if mode == EVALUATE:
        return
    # the evaluated runs' forward passes in P are reused unless the gradient's rows differ or
    # local steps follow
    nr = 0 if (model_avg or g0 != e0 or ng != ne) else nf
    _machine_update(i, g0, ng, nr, WF, X, Y, yidx, act, na, nap, k, ThT, code, delta, l2, lr,
                    use_stats, Bv, n_all, model_avg, local_steps, use_part, part, it, asg_out,
                    Pflat, Rflat, Gflat, Tflat, gsum, cnt)


@nb.njit(fastmath=FASTMATH, cache=True)
def _machine_update(i, g0, ng, nr, WF, X, Y, yidx, act, na, nap, k, ThT, code, delta, l2, lr,
                    use_stats, Bv, n_all, model_avg, local_steps, use_part, part, it, asg_out,
                    Pflat, Rflat, Gflat, Tflat, gsum, cnt):
    """Machine i's contribution at its assigned models, added into ``gsum`` (and ``cnt``).

    Option I: the gradient on rows ``[g0, g0 + ng)``; option II: the model after ``local_steps``
    local steps. For the first ``nr`` active runs, ``Pflat`` holds the forward pass of all their
    models on the same rows (``(ng, WF)``, column ``a*k + j``), which is reused; the other runs'
    forward passes at their assigned models are computed here (one GEMM). On the
    sufficient-statistics path ``Pflat`` holds ``Q = A_i ThT`` for every run (``nr == na``).
    """
    d = ThT.shape[0]
    W = nap * k
    if use_stats:
        Q = Pflat[: d * W].reshape((d, W))
        # gradient 2 (A theta - b) / n + l2 theta: no extra GEMM
        cols = _target_columns(i, act, na, k, asg_out, use_part, part, it)
        for q in range(d):
            for a in range(na):
                col = cols[a]
                if col >= 0:
                    g = 2.0 * (Q[q, col] - Bv[yidx[act[a]], i, q]) / n_all
                    if l2 != 0.0:
                        g += l2 * ThT[q, col]
                    gsum[q, col] += g
        return

    Xg = X[i, g0:g0 + ng]
    Rm = Rflat[: ng * nap].reshape((ng, nap))
    GT = Gflat[: d * nap].reshape((d, nap))
    # runs nr.. need a forward pass at their assigned models: columns a - nr of TaT, padded to
    # a whole SIMD width (nap) when no run's pass is reused; Qg lies after P in Pflat
    wq = nap if nr == 0 else na - nr
    TaT = Tflat[: d * wq].reshape((d, wq))
    Qg = Pflat[ng * WF: ng * WF + ng * wq].reshape((ng, wq))
    if nr < na:
        TaT[:, :] = 0.0
        for a in range(nr, na):
            col = a * k + asg_out[act[a], i]
            for q in range(d):
                TaT[q, a - nr] = ThT[q, col]
    Rm[:, :] = 0.0
    if not model_avg:
        if nr < na:
            np.dot(Xg, TaT, Qg)
        P = Pflat[: ng * WF].reshape((ng, WF))
        for t in range(ng):
            for a in range(nr):
                r = act[a]
                Rm[t, a] = _dell(P[t, a * k + asg_out[r, i]], Y[yidx[r], i, g0 + t], code, delta)
            for a in range(nr, na):
                r = act[a]
                Rm[t, a] = _dell(Qg[t, a - nr], Y[yidx[r], i, g0 + t], code, delta)
        np.dot(Xg.T, Rm, GT)
        inv = 1.0 / ng
        cols = _target_columns(i, act, na, k, asg_out, use_part, part, it)
        for q in range(d):  # row by row: every array below is read contiguously
            for a in range(na):
                col = cols[a]
                if col >= 0:
                    g = GT[q, a] * inv
                    if l2 != 0.0:
                        g += l2 * ThT[q, col]
                    gsum[q, col] += g
    else:
        for _ in range(local_steps):
            np.dot(Xg, TaT, Qg)
            for t in range(ng):
                for a in range(na):
                    r = act[a]
                    Rm[t, a] = _dell(Qg[t, a], Y[yidx[r], i, g0 + t], code, delta)
            np.dot(Xg.T, Rm, GT)
            inv = 1.0 / ng
            for q in range(d):
                for a in range(na):
                    TaT[q, a] = TaT[q, a] - lr[act[a]] * (GT[q, a] * inv + l2 * TaT[q, a])
        cols = _target_columns(i, act, na, k, asg_out, use_part, part, it)
        for a in range(na):
            if cols[a] >= 0:
                cnt[a, cols[a] - a * k] += 1
        for q in range(d):
            for a in range(na):
                col = cols[a]
                if col >= 0:
                    gsum[q, col] += TaT[q, a]


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _sweep(chunk_lo, e0, ne, g0, ng, X, Y, yidx, act, na, nap, nf, k, ThT, ThF, pen, dup,
           code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
           mode, model_avg, local_steps, use_part, part, it,
           Pflat, Rflat, Gflat, Tflat, Lbuf, asg_out, lmin_out, keep_all, lall_out, gflat, cbuf):
    """All machines, chunk-parallel; chunk c adds into gflat[c] (viewed as (d, nap*k)) and cbuf[c]."""
    nchunks = chunk_lo.shape[0] - 1
    d = ThT.shape[0]
    W = nap * k
    for c in prange(nchunks):
        gsum = gflat[c, : d * W].reshape((d, W))
        if mode != EVALUATE:
            gsum[:, :] = 0.0
            cbuf[c, :, :] = 0
        for i in range(chunk_lo[c], chunk_lo[c + 1]):
            _machine(i, e0, ne, g0, ng, X, Y, yidx, act, na, nap, nf, k, ThT, ThF, pen, dup,
                     code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
                     mode, model_avg, local_steps, use_part, part, it,
                     Pflat[c], Rflat[c], Gflat[c], Tflat[c], Lbuf[c], asg_out, lmin_out,
                     keep_all, lall_out, gsum, cbuf[c])


@nb.njit(fastmath=FASTMATH, cache=True)
def _dist_into(theta, r, theta_star, ci, out):
    """out[j, l] = ||theta[r, j] - theta_star[ci, l]||."""
    k = theta.shape[1]
    ks = theta_star.shape[1]
    d = theta.shape[2]
    for j in range(k):
        for l in range(ks):
            s = 0.0
            for q in range(d):
                v = np.float64(theta[r, j, q]) - np.float64(theta_star[ci, l, q])
                s += v * v
            out[j, l] = np.sqrt(s)


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _finish_all(na, it, W, act, theta, lr, gflat, cbuf, lmin, asg, asg_prev, model_avg,
                early_stop, tol, thresh, do_trace, has_star, theta_star, yidx,
                tr_labels, tr_loss, tr_dist, diverged, converged, frozen, n_iter_out, nrm, ctot):
    """After the sweep: training loss, trace, update, divergence and early-stop checks of all runs.

    Three parallel phases: per run (loss, trace, loss-divergence), per fixed block of coordinates
    (the update, reading the chunk sums row by row, in chunk order), per run (divergence of the
    new parameters and early stop, from the blocks' partial norms added in block order). Fixed
    chunks and blocks make the result independent of the number of threads.
    """
    m = asg.shape[1]
    k = theta.shape[1]
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
                _dist_into(theta, r, theta_star, yidx[r], tr_dist[it, r])
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
                for j in range(k):
                    c = ctot[a, j]
                    if model_avg and c == 0:
                        continue  # a model nobody chose keeps its value
                    col = base + a * k + j
                    s = 0.0
                    for ch in range(nchunks):
                        s += gflat[ch, col]
                    old = theta[r, j, q]
                    if model_avg:
                        theta[r, j, q] = s / c
                    else:
                        theta[r, j, q] = old - scale * s
                    nv = theta[r, j, q]
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


@nb.njit(cache=True)
def _sweep_buffers(nchunks, n, d, Rp, k, use_stats, theta):
    """Scratch buffers of :func:`_sweep` for up to ``Rp`` packed runs (per-chunk, working dtype)."""
    dt = theta.dtype
    width = max(n * Rp * (k + 1), d * Rp)  # P, then the fresh forward passes (_machine_update)
    if use_stats:
        width = max(width, d * Rp * k)
    Pflat = np.empty((nchunks, width), dtype=dt)
    Rflat = np.empty((nchunks, n * Rp), dtype=dt)
    Gflat = np.empty((nchunks, d * Rp), dtype=dt)
    Tflat = np.empty((nchunks, d * Rp), dtype=dt)
    Lbuf = np.empty((nchunks, Rp, k), dtype=np.float64)
    gflat = np.zeros((nchunks, d * Rp * k), dtype=np.float64)
    cbuf = np.zeros((nchunks, Rp, k), dtype=np.int64)
    ThT_flat = np.zeros(d * Rp * k, dtype=dt)
    pen = np.empty((Rp, k), dtype=np.float64)
    dup = np.empty((Rp, k), dtype=np.int64)
    return Pflat, Rflat, Gflat, Tflat, Lbuf, gflat, cbuf, ThT_flat, pen, dup


@nb.njit(fastmath=FASTMATH, cache=True)
def _ifca_kernel(X, Y, yidx, theta, lr, code, delta, l2,
                 use_stats, A, Bv, cv,
                 model_avg, local_steps, n_iter, resample, n_sub,
                 use_part, part, early_stop, tol, thresh,
                 chunk_lo, pad, do_trace, theta_star, has_star,
                 labels_out, loss_out, diverged, converged, n_iter_out,
                 tr_labels, tr_loss, tr_dist):
    """Run ``n_iter`` IFCA iterations for all runs; fill the preallocated outputs in place.

    ``theta`` (R, k, d) is updated in place and holds the final models on return.
    """
    m = X.shape[0]
    n = X.shape[1]
    d = X.shape[2]
    R = theta.shape[0]
    k = theta.shape[1]
    nchunks = chunk_lo.shape[0] - 1
    Rp = _padded(R, pad)
    rows = n_sub if resample else n
    (Pflat, Rflat, Gflat, Tflat, Lbuf, gflat, cbuf,
     ThT_flat, pen, dup) = _sweep_buffers(nchunks, n, d, Rp, k, use_stats, theta)
    asg = np.zeros((R, m), dtype=np.int64)
    asg_prev = np.full((R, m), -1, dtype=np.int64)
    lmin = np.empty((R, m), dtype=np.float64)
    frozen = np.zeros(R, dtype=np.bool_)
    act = np.empty(R, dtype=np.int64)
    nrm = np.zeros((min(d, 8), Rp, k, 3), dtype=np.float64)
    ctot = np.zeros((Rp, k), dtype=np.int64)
    lall0 = np.zeros((1, 1, 1), dtype=np.float64)
    for r in range(R):
        n_iter_out[r] = n_iter

    for it in range(n_iter):
        na = 0
        for r in range(R):
            if not frozen[r]:
                act[na] = r
                na += 1
        if na == 0:
            break
        nap = _padded(na, pad)
        ThT = ThT_flat[: d * nap * k].reshape((d, nap * k))
        _pack(theta, act, na, nap, ThT, pen, dup, l2)
        if resample:
            e0 = 2 * it * n_sub
            g0 = e0 + n_sub
        else:
            e0 = 0
            g0 = 0
        _sweep(chunk_lo, e0, rows, g0, rows, X, Y, yidx, act, na, nap, na, k, ThT, ThT, pen, dup,
               code, delta, l2, lr, use_stats, A, Bv, cv, n,
               ITERATE, model_avg, local_steps, use_part, part, it,
               Pflat, Rflat, Gflat, Tflat, Lbuf, asg, lmin, False, lall0, gflat, cbuf)
        _finish_all(na, it, nap * k, act, theta, lr, gflat, cbuf, lmin, asg, asg_prev, model_avg,
                    early_stop, tol, thresh, do_trace, has_star, theta_star, yidx,
                    tr_labels, tr_loss, tr_dist, diverged, converged, frozen, n_iter_out, nrm, ctot)

    _final_eval(X, Y, yidx, theta, lr, code, delta, l2, use_stats, A, Bv, cv, chunk_lo, pad,
                n_iter, do_trace, theta_star, has_star, labels_out, loss_out, n_iter_out,
                tr_labels, tr_loss, tr_dist, Pflat, Rflat, Gflat, Tflat, Lbuf, gflat, cbuf,
                ThT_flat, pen, dup, lmin)


@nb.njit(fastmath=FASTMATH, cache=True)
def _final_eval(X, Y, yidx, theta, lr, code, delta, l2, use_stats, A, Bv, cv, chunk_lo, pad,
                n_iter, do_trace, theta_star, has_star, labels_out, loss_out, n_iter_out,
                tr_labels, tr_loss, tr_dist, Pflat, Rflat, Gflat, Tflat, Lbuf, gflat, cbuf,
                ThT_flat, pen, dup, lmin):
    """Final evaluation of every run on all rows: labels, training loss, the trace's tail.

    Invariant: whatever path produced ``theta``, the reported labels and loss come from this one
    exact evaluation, and a frozen run's remaining trace entries repeat it.
    """
    m = X.shape[0]
    n = X.shape[1]
    d = X.shape[2]
    R = theta.shape[0]
    k = theta.shape[1]
    Rp = _padded(R, pad)
    act = np.arange(R)
    part = np.zeros((1, 1, 1), dtype=np.bool_)
    lall0 = np.zeros((1, 1, 1), dtype=np.float64)
    ThT = ThT_flat[: d * Rp * k].reshape((d, Rp * k))
    _pack(theta, act, R, Rp, ThT, pen, dup, l2)
    _sweep(chunk_lo, 0, n, 0, n, X, Y, yidx, act, R, Rp, R, k, ThT, ThT, pen, dup,
           code, delta, l2, lr, use_stats, A, Bv, cv, n,
           EVALUATE, False, 1, False, part, 0,
           Pflat, Rflat, Gflat, Tflat, Lbuf, labels_out, lmin, False, lall0, gflat, cbuf)
    for r in range(R):
        tl = 0.0
        for i in range(m):
            tl += lmin[r, i]
        loss_out[r] = tl / m
        if do_trace:
            for t in range(n_iter_out[r], n_iter + 1):
                for i in range(m):
                    tr_labels[t, r, i] = labels_out[r, i]
                tr_loss[t, r] = loss_out[r]
                if has_star:
                    _dist_into(theta, r, theta_star, yidx[r], tr_dist[t, r])
