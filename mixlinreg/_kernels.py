"""Private numba kernels: many runs of IFCA at once on shared data.

Public code never calls these directly: :func:`mixlinreg.ifca` validates, casts, allocates and then
calls :func:`_ifca_kernel`. The exact semantics are documented there; this module only says how the
work is organized.

Layout of one iteration (all active runs together)
--------------------------------------------------
* The k models of the ``na`` active runs are packed into ``Th`` of shape ``(na * k, d)``.
* Machines are split into a fixed number of contiguous chunks (``_config.MAX_CHUNKS``, independent of
  the thread count) and the chunks are processed in parallel (``prange``). For each machine:

  - forward pass of every model of every active run, one BLAS GEMM ``X_i @ Th.T`` of shape
    ``(n, na * k)`` (or, on the sufficient-statistics path, ``Th @ (X_i^T X_i)``);
  - per-run losses of the k models, the argmin (ties to the lowest index, NaN never wins);
  - the gradient at the assigned model only: one GEMM ``r^T X_i`` of shape ``(na, d)`` where ``r``
    holds each run's loss derivatives at its assigned model (2 m n d (k + 1) flop per run and
    iteration instead of 4 m n d k); model averaging runs its local steps with the same two GEMMs;
  - the machine's contribution is added to its chunk's buffer.

  While one machine is processed its rows stay in cache, so X is read from memory once per iteration.
* The chunk buffers are then added in chunk order, so the result does not depend on the number of
  threads; BLAS must run single-threaded inside the kernel (the wrapper pins it with threadpoolctl).
* Runs that diverge or (optionally) stop early are frozen and dropped from the packed set, so they
  cost nothing afterwards.
"""

import numba as nb
import numpy as np
from numba import prange

from ._config import FASTMATH

LOSS_CODES = {"squared": 0, "logistic": 1, "huber": 2}


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
def _pack(theta, act, na, Th, pen, dup, l2):
    """Pack active runs' models into Th (na*k, d); penalties l2/2 ||theta||^2; duplicate map."""
    k = theta.shape[1]
    d = theta.shape[2]
    for a in range(na):
        r = act[a]
        for j in range(k):
            s = 0.0
            row = a * k + j
            for q in range(d):
                v = theta[r, j, q]
                Th[row, q] = v
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
def _machine(i, t_est0, ne, t_grad0, ng, X, Y, yidx, act, na, k, Th, pen, dup,
             code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
             do_update, model_avg, local_steps, use_part, part, it,
             Pflat, Rflat, Gflat, Tflat, L, asg_out, lmin_out, gsum, cnt):
    """Process one machine for all active runs: losses, assignment and (optionally) its update.

    Writes the assignment and the minimum loss of run ``act[a]`` into ``asg_out[act[a], i]`` and
    ``lmin_out[act[a], i]``; adds the machine's gradient (option I) or local model (option II) into
    ``gsum[a, j]`` (and ``cnt[a, j]``) when ``do_update`` and the machine participates.
    """
    d = Th.shape[1]
    nk = na * k
    Thv = Th[:nk]
    if use_stats:
        # Q[row] = A_i theta_row  (A_i = X_i^T X_i is symmetric)
        Q = Pflat[: nk * d].reshape((nk, d))
        np.dot(Thv, A[i], Q)
        for a in range(na):
            ci = yidx[act[a]]
            for j in range(k):
                row = a * k + j
                quad = 0.0
                lin = 0.0
                for q in range(d):
                    quad += np.float64(Th[row, q]) * np.float64(Q[row, q])
                    lin += np.float64(Bv[ci, i, q]) * np.float64(Th[row, q])
                L[a, j] = (quad - 2.0 * lin + cv[ci, i]) / n_all + pen[a, j]
    else:
        Xe = X[i, t_est0:t_est0 + ne]
        P = Pflat[: ne * nk].reshape((ne, nk))
        np.dot(Xe, Thv.T, P)
        for a in range(na):
            for j in range(k):
                L[a, j] = 0.0
        for t in range(ne):
            for a in range(na):
                yv = Y[yidx[act[a]], i, t_est0 + t]
                for j in range(k):
                    L[a, j] += _ell(P[t, a * k + j], yv, code, delta)
        for a in range(na):
            for j in range(k):
                L[a, j] = L[a, j] / ne + pen[a, j]
    for a in range(na):
        for j in range(k):
            L[a, j] = L[a, dup[a, j]]
        j = _argmin(L, a, k)
        r = act[a]
        asg_out[r, i] = j
        lmin_out[r, i] = L[a, j]
    if not do_update:
        return

    if use_stats:
        # gradient 2 (A theta - b) / n + l2 theta, no extra GEMM
        for a in range(na):
            r = act[a]
            if use_part and not part[it, r, i]:
                continue
            j = asg_out[r, i]
            row = a * k + j
            ci = yidx[r]
            for q in range(d):
                gsum[a, j, q] += 2.0 * (Q[row, q] - Bv[ci, i, q]) / n_all + l2 * Th[row, q]
        return

    Xg = X[i, t_grad0:t_grad0 + ng]
    Rm = Rflat[: ng * na].reshape((ng, na))
    G = Gflat[: na * d].reshape((na, d))
    if not model_avg:
        if t_grad0 == t_est0 and ng == ne:
            # full data: the forward pass at the assigned model is already in P
            for t in range(ng):
                for a in range(na):
                    r = act[a]
                    Rm[t, a] = _dell(P[t, a * k + asg_out[r, i]], Y[yidx[r], i, t_grad0 + t],
                                     code, delta)
        else:
            Ta = Tflat[: na * d].reshape((na, d))
            for a in range(na):
                row = a * k + asg_out[act[a], i]
                for q in range(d):
                    Ta[a, q] = Th[row, q]
            Qg = Pflat[: ng * na].reshape((ng, na))
            np.dot(Xg, Ta.T, Qg)
            for t in range(ng):
                for a in range(na):
                    r = act[a]
                    Rm[t, a] = _dell(Qg[t, a], Y[yidx[r], i, t_grad0 + t], code, delta)
        np.dot(Rm.T, Xg, G)
        for a in range(na):
            r = act[a]
            if use_part and not part[it, r, i]:
                continue
            j = asg_out[r, i]
            row = a * k + j
            for q in range(d):
                gsum[a, j, q] += G[a, q] / ng + l2 * Th[row, q]
    else:
        Ta = Tflat[: na * d].reshape((na, d))
        for a in range(na):
            row = a * k + asg_out[act[a], i]
            for q in range(d):
                Ta[a, q] = Th[row, q]
        Qg = Pflat[: ng * na].reshape((ng, na))
        for _ in range(local_steps):
            np.dot(Xg, Ta.T, Qg)
            for t in range(ng):
                for a in range(na):
                    r = act[a]
                    Rm[t, a] = _dell(Qg[t, a], Y[yidx[r], i, t_grad0 + t], code, delta)
            np.dot(Rm.T, Xg, G)
            for a in range(na):
                step = lr[act[a]]
                for q in range(d):
                    Ta[a, q] = Ta[a, q] - step * (G[a, q] / ng + l2 * Ta[a, q])
        for a in range(na):
            r = act[a]
            if use_part and not part[it, r, i]:
                continue
            j = asg_out[r, i]
            cnt[a, j] += 1
            for q in range(d):
                gsum[a, j, q] += Ta[a, q]


@nb.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _sweep(chunk_lo, t_est0, ne, t_grad0, ng, X, Y, yidx, act, na, k, Th, pen, dup,
           code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
           do_update, model_avg, local_steps, use_part, part, it,
           Pflat, Rflat, Gflat, Tflat, Lbuf, asg_out, lmin_out, gbuf, cbuf):
    """All machines, chunk-parallel; chunk c adds into gbuf[c], cbuf[c]."""
    nchunks = chunk_lo.shape[0] - 1
    for c in prange(nchunks):
        if do_update:
            gbuf[c, :na] = 0.0
            cbuf[c, :na] = 0
        for i in range(chunk_lo[c], chunk_lo[c + 1]):
            _machine(i, t_est0, ne, t_grad0, ng, X, Y, yidx, act, na, k, Th, pen, dup,
                     code, delta, l2, lr, use_stats, A, Bv, cv, n_all,
                     do_update, model_avg, local_steps, use_part, part, it,
                     Pflat[c], Rflat[c], Gflat[c], Tflat[c], Lbuf[c], asg_out, lmin_out,
                     gbuf[c], cbuf[c])


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


@nb.njit(fastmath=FASTMATH, cache=True)
def _ifca_kernel(X, Y, yidx, theta, lr, code, delta, l2,
                 use_stats, A, Bv, cv,
                 model_avg, local_steps, n_iter, resample, n_sub,
                 use_part, part, early_stop, tol, thresh,
                 chunk_lo, do_trace, theta_star, has_star,
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
    dt = theta.dtype
    rows = n_sub if resample else n
    width = max(rows * R * k, rows * R)
    if use_stats:
        width = max(width, R * k * d)
    Pflat = np.empty((nchunks, width), dtype=dt)
    Rflat = np.empty((nchunks, rows * R), dtype=dt)
    Gflat = np.empty((nchunks, R * d), dtype=dt)
    Tflat = np.empty((nchunks, R * d), dtype=dt)
    Lbuf = np.empty((nchunks, R, k), dtype=np.float64)
    gbuf = np.zeros((nchunks, R, k, d), dtype=np.float64)
    cbuf = np.zeros((nchunks, R, k), dtype=np.int64)
    Th = np.empty((R * k, d), dtype=dt)
    pen = np.empty((R, k), dtype=np.float64)
    dup = np.empty((R, k), dtype=np.int64)
    asg = np.zeros((R, m), dtype=np.int64)
    asg_prev = np.full((R, m), -1, dtype=np.int64)
    lmin = np.empty((R, m), dtype=np.float64)
    frozen = np.zeros(R, dtype=np.bool_)
    act = np.empty(R, dtype=np.int64)
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
        _pack(theta, act, na, Th, pen, dup, l2)
        if resample:
            e0 = 2 * it * n_sub
            g0 = e0 + n_sub
            ne = n_sub
        else:
            e0 = 0
            g0 = 0
            ne = n
        _sweep(chunk_lo, e0, ne, g0, ne, X, Y, yidx, act, na, k, Th, pen, dup,
               code, delta, l2, lr, use_stats, A, Bv, cv, n,
               True, model_avg, local_steps, use_part, part, it,
               Pflat, Rflat, Gflat, Tflat, Lbuf, asg, lmin, gbuf, cbuf)

        for a in range(na):
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
                continue
            rel = 0.0
            bad = False
            scale = lr[r] / m
            for j in range(k):
                c = 0
                if model_avg:
                    for ch in range(nchunks):
                        c += cbuf[ch, a, j]
                    if c == 0:
                        continue  # a model nobody chose keeps its value
                nrm_old = 0.0
                nrm_step = 0.0
                for q in range(d):
                    s = 0.0
                    for ch in range(nchunks):
                        s += gbuf[ch, a, j, q]
                    old = theta[r, j, q]
                    if model_avg:
                        theta[r, j, q] = s / c
                    else:
                        theta[r, j, q] = old - scale * s
                    nv = theta[r, j, q]
                    if not np.isfinite(nv) or abs(nv) > thresh:
                        bad = True
                    dq = np.float64(nv) - np.float64(old)
                    nrm_step += dq * dq
                    nrm_old += np.float64(old) * np.float64(old)
                rj = np.sqrt(nrm_step) / max(np.sqrt(nrm_old), 1e-300)
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

    # final evaluation of every run on all rows
    for r in range(R):
        act[r] = r
    _pack(theta, act, R, Th, pen, dup, l2)
    _sweep(chunk_lo, 0, n, 0, n, X, Y, yidx, act, R, k, Th, pen, dup,
           code, delta, l2, lr, use_stats, A, Bv, cv, n,
           False, model_avg, local_steps, use_part, part, 0,
           Pflat, Rflat, Gflat, Tflat, Lbuf, labels_out, lmin, gbuf, cbuf)
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
