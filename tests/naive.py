"""Slow, obviously-correct reference versions of the IFCA kernel (``mixlinreg.ifca``).

Everything here is written straight from the specification (notes/ifca_spec.md) with plain Python
loops over runs, iterations, machines and models.  Only the inner products over the rows of ONE
machine and ONE model use NumPy (``X_rows @ theta``); nothing is batched across machines, models
or runs, and nothing is clever.  The kernel tests compare ``mixlinreg.ifca`` against
``naive_ifca``.

All arithmetic happens in one floating dtype (float64 by default, or the dtype asked for): inputs
are cast to it, and every scalar (step size, l2, huber delta) is cast to it as well, so that NumPy
never silently promotes a float32 computation to float64. The per-sample losses and their
derivatives are written here from their formulas, independently of ``mixlinreg.losses`` (nothing
of the package is imported), so that a mistake in the package's losses fails the comparison.
"""

from __future__ import annotations

import numpy as np
import scipy.special

#: The losses of a scalar prediction, and the multinomial loss, whose model is a d x C matrix
#: (``theta[j]`` of shape (d, C) below) and whose prediction is the vector of C logits.
#: (tests/test_naive.py checks that these are the package's losses, by name.)
LOSSES = ("squared", "logistic", "huber", "multinomial")


# ---------------------------------------------------------------------------------------------
# per-sample loss and its derivative in z = x . theta, written here from their formulas (the
# specification, and the table of mixlinreg.losses) and NOT imported from the package: a mistake
# in the package's losses must not reach the reference the kernel is compared with. Evaluated in
# float64 (as the kernel does) with NumPy / SciPy's own functions, then rounded to the working
# dtype:
#   squared      ell = (z - y)^2                              ell' = 2 (z - y)
#   logistic     ell = log(1 + e^z) - y z                     ell' = sigmoid(z) - y
#   huber        r = y - z; ell = r^2 / 2 if |r| <= delta     ell' = -clip(r, -delta, delta)
#                else delta (|r| - delta / 2)
#   multinomial  ell = logsumexp(z) - z_y  (z: C logits)      ell' = softmax(z) - e_y
# ---------------------------------------------------------------------------------------------
def _f64(z, y):
    return np.broadcast_arrays(np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64))


def _check_loss(loss):
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}")


def naive_loss(z, y, loss, delta=1.0):
    """Elementwise ell(z, y), in the dtype of ``z`` (for the multinomial loss ``z`` is the vector
    of logits and ``y`` the class)."""
    _check_loss(loss)
    dt = np.asarray(z).dtype
    if loss == "multinomial":
        z = np.asarray(z, dtype=np.float64)
        return np.asarray(scipy.special.logsumexp(z) - z[int(y)]).astype(dt)
    z, y = _f64(z, y)
    delta = np.float64(delta)
    if loss == "squared":
        out = (z - y) ** 2
    elif loss == "logistic":
        out = np.logaddexp(0.0, z) - y * z  # log(1 + e^z) without overflow
    else:
        r = y - z
        with np.errstate(invalid="ignore"):
            out = np.where(np.abs(r) <= delta, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta))
    return np.asarray(out).astype(dt)


def naive_dloss(z, y, loss, delta=1.0):
    """Elementwise d ell / dz, in the dtype of ``z`` (multinomial: the vector softmax(z) - e_y)."""
    _check_loss(loss)
    dt = np.asarray(z).dtype
    if loss == "multinomial":
        z = np.asarray(z, dtype=np.float64)
        return (scipy.special.softmax(z) - np.eye(z.shape[-1])[int(y)]).astype(dt)
    z, y = _f64(z, y)
    if loss == "squared":
        out = 2.0 * (z - y)
    elif loss == "logistic":
        out = scipy.special.expit(z) - y
    else:
        out = -np.clip(y - z, -np.float64(delta), np.float64(delta))
    return np.asarray(out).astype(dt)


def _sq(theta):
    """||theta||^2 (Frobenius for a matrix model)."""
    return np.dot(theta.ravel(), theta.ravel())


# ---------------------------------------------------------------------------------------------
# empirical loss of one machine on a set of rows, and its gradient
# ---------------------------------------------------------------------------------------------
def naive_F(theta, X_rows, y_rows, loss, l2=0.0, delta=1.0):
    """F_i(theta; Z) = (1/|Z|) sum_{t in Z} ell(x_t . theta, y_t) + (l2/2) ||theta||^2."""
    theta = np.asarray(theta)
    dt = theta.dtype
    X_rows = np.asarray(X_rows, dtype=dt)
    y_rows = np.asarray(y_rows, dtype=dt)
    n_rows = X_rows.shape[0]
    total = dt.type(0)
    for t in range(n_rows):
        z = np.dot(X_rows[t], theta)
        total = total + naive_loss(z, y_rows[t], loss, delta)[()]
    l2 = dt.type(l2)
    if l2 == 0:  # no ridge term at all (so that an overflowing ||theta||^2 cannot turn 0 * inf into NaN)
        return dt.type(total / n_rows)
    return dt.type(total / n_rows + l2 / 2 * _sq(theta))


def naive_grad(theta, X_rows, y_rows, loss, l2=0.0, delta=1.0):
    """grad F_i(theta; Z) = (1/|Z|) sum_t ell'(x_t . theta, y_t) x_t + l2 theta."""
    theta = np.asarray(theta)
    dt = theta.dtype
    X_rows = np.asarray(X_rows, dtype=dt)
    y_rows = np.asarray(y_rows, dtype=dt)
    n_rows = X_rows.shape[0]
    acc = np.zeros_like(theta)
    for t in range(n_rows):
        z = np.dot(X_rows[t], theta)
        g = naive_dloss(z, y_rows[t], loss, delta)
        acc = acc + (np.outer(X_rows[t], g) if theta.ndim == 2 else g[()] * X_rows[t])
    if l2 == 0:
        return acc / n_rows
    return acc / n_rows + dt.type(l2) * theta


# ---------------------------------------------------------------------------------------------
# argmin with the spec's tie / NaN rule
# ---------------------------------------------------------------------------------------------
def naive_argmin(losses):
    """Index of the smallest loss: ties to the LOWEST index; a NaN never wins over a non-NaN value;
    all NaN -> 0.  (+inf is an ordinary value here: it beats NaN and ties with +inf.)"""
    losses = np.asarray(losses)
    best = 0
    for j in range(1, losses.shape[0]):
        if np.isnan(losses[j]):
            continue
        if np.isnan(losses[best]) or losses[j] < losses[best]:
            best = j
    return best


def naive_loss_table(theta, X, y, rows, loss, l2, delta):
    """L[i, j] = F_i(theta_j; rows) for every machine i and model j.

    Models that are bitwise identical get exactly the loss of the lowest-indexed copy (spec, step 1).
    """
    m = len(X)
    k = theta.shape[0]
    L = np.empty((m, k), dtype=theta.dtype)
    for i in range(m):
        for j in range(k):
            copy_of = j
            for jj in range(j):
                if theta[jj].tobytes() == theta[j].tobytes():
                    copy_of = jj
                    break
            if copy_of < j:
                L[i, j] = L[i, copy_of]
            else:
                L[i, j] = naive_F(theta[j], X[i][rows], y[i][rows], loss, l2, delta)
    return L


def naive_assign(L):
    """Assignments a_i = argmin_j L[i, j] and the loss (1/m) sum_i min_j L[i, j]."""
    m = L.shape[0]
    a = np.zeros(m, dtype=np.int64)
    total = L.dtype.type(0)
    for i in range(m):
        a[i] = naive_argmin(L[i])
        total = total + L[i, a[i]]
    return a, L.dtype.type(total / m)


def naive_dist(theta, theta_star):
    """dist[j, l] = ||theta_j - theta*_l||."""
    k = theta.shape[0]
    ks = theta_star.shape[0]
    out = np.empty((k, ks), dtype=theta.dtype)
    for j in range(k):
        for l in range(ks):
            out[j, l] = np.sqrt(_sq(theta[j] - theta_star[l]))
    return out


# ---------------------------------------------------------------------------------------------
# the whole algorithm
# ---------------------------------------------------------------------------------------------
def naive_ifca(X, y, init, lr, *, n_iter=300, loss="squared", l2=0.0, huber_delta=1.0,
               averaging="gradient", local_steps=1, resample=False, participation_mask=None,
               y_index=None, theta_star=None, early_stop=False, tol=1e-6,
               diverge_threshold=1e10, dtype=np.float64, shared=None):
    """Reference IFCA, one run, one iteration, one machine, one model at a time.

    ``X`` a list of m arrays (n_i, d) and ``y`` a list of m arrays (n_i,): machines of unequal
    sizes, each machine's loss the mean over its own rows (no resampling).

    ``shared`` (a list of coordinates, feature rows of matrix models): weight sharing. After the
    per-model update, those coordinates of every model are replaced by one value computed from
    ALL participating machines: option I ``w - lr/m sum_i grad F_i(theta_{a_i})[shared]``, option
    II the mean of all participating machines' local models there (unchanged if none took part).

    Returns a dict with theta (R, k, d) ((R, k, d, C) for the multinomial loss), labels (R, m),
    loss (R,), diverged (R,), converged (R,), n_iter (R,), trace_labels (n_iter+1, R, m),
    trace_loss (n_iter+1, R) and trace_dist (n_iter+1, R, k, k) or None.
    """
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}")
    if averaging not in ("gradient", "model"):
        raise ValueError(f"unknown averaging {averaging!r}")
    dt = np.dtype(dtype)
    ragged = isinstance(X, list)  # machines of unequal sizes: X[i] (n_i, d), y[i] (n_i,)
    if ragged:
        if resample:
            raise ValueError("the reference resamples machines of equal sizes only")
        X = [np.asarray(Xi, dtype=dt) for Xi in X]
        m, n, d = len(X), None, X[0].shape[1]
        y = [[np.asarray(yi, dtype=dt) for yi in y]]  # one response variant
    else:
        X = np.asarray(X, dtype=dt)
        m, n, d = X.shape
        y = np.asarray(y, dtype=dt)
    init = np.asarray(init, dtype=dt)
    model_ndim = 2 if loss == "multinomial" else 1  # a model is (d, C) or (d,)
    if init.ndim == model_ndim + 1:
        init = init[None]
    R, k = init.shape[:2]
    if ragged or y.ndim == 2:
        y_var = y if ragged else y[None]
        y_idx = np.zeros(R, dtype=np.int64)
    else:
        y_var = y
        y_idx = np.asarray(y_index, dtype=np.int64)
    ts_var = None
    if theta_star is not None:
        ts = np.asarray(theta_star, dtype=dt)
        ts_var = ts[None] if ts.ndim == model_ndim + 1 else ts
    lr_all = np.broadcast_to(np.asarray(lr, dtype=dt), (R,))
    l2 = dt.type(l2)
    delta = dt.type(huber_delta)
    threshold = dt.type(diverge_threshold)
    tiny = np.finfo(dt).tiny
    if resample:
        n_sub = n // (2 * n_iter)
        if n_sub < 1:
            raise ValueError("resample=True needs n >= 2 * n_iter")
    if participation_mask is None:
        P = np.ones((n_iter, R, m), dtype=bool)
    else:
        P = np.asarray(participation_mask, dtype=bool)
        assert P.shape == (n_iter, R, m)

    out_theta = np.empty(init.shape, dtype=dt)
    out_labels = np.empty((R, m), dtype=np.int64)
    out_loss = np.empty(R, dtype=dt)
    out_div = np.zeros(R, dtype=bool)
    out_conv = np.zeros(R, dtype=bool)
    out_n = np.zeros(R, dtype=np.int64)
    tr_labels = np.zeros((n_iter + 1, R, m), dtype=np.int64)
    tr_loss = np.zeros((n_iter + 1, R), dtype=dt)
    tr_dist = None if ts_var is None else np.zeros((n_iter + 1, R, k, ts_var.shape[1]), dtype=dt)

    all_rows = slice(None)  # every row of the machine (its own n_i when ragged)
    for r in range(R):
        yr = y_var[y_idx[r]]
        tsr = None if ts_var is None else ts_var[y_idx[r]]
        lr_r = lr_all[r]
        theta = init[r].copy()
        n_done = n_iter
        prev_a = None
        for t in range(n_iter):
            if resample:
                E = slice(2 * t * n_sub, (2 * t + 1) * n_sub)
                G = slice((2 * t + 1) * n_sub, (2 * t + 2) * n_sub)
            else:
                E = G = all_rows
            # 1-2. assignments (all machines) and training loss
            L = naive_loss_table(theta, X, yr, E, loss, l2, delta)
            a, loss_t = naive_assign(L)
            if not np.isfinite(loss_t):
                out_div[r] = True
                n_done = t
                break
            tr_labels[t, r] = a
            tr_loss[t, r] = loss_t
            if tsr is not None:
                tr_dist[t, r] = naive_dist(theta, tsr)
            # 3. update from the participating machines
            new = theta.copy()
            for j in range(k):
                if averaging == "gradient":
                    acc = np.zeros_like(theta[j])
                    for i in range(m):
                        if P[t, r, i] and a[i] == j:
                            acc = acc + naive_grad(theta[j], X[i][G], yr[i][G], loss, l2, delta)
                    new[j] = theta[j] - lr_r / m * acc
                else:
                    acc = np.zeros_like(theta[j])
                    count = 0
                    for i in range(m):
                        if P[t, r, i] and a[i] == j:
                            th = theta[j].copy()
                            for _ in range(local_steps):
                                th = th - lr_r * naive_grad(th, X[i][G], yr[i][G], loss, l2, delta)
                            acc = acc + th
                            count += 1
                    if count > 0:
                        new[j] = acc / count
            # 3b. weight sharing: the shared coordinates from every participating machine
            if shared is not None and len(shared) > 0:
                sh = list(shared)
                acc = np.zeros_like(theta[0][sh])
                count = 0
                for i in range(m):
                    if not P[t, r, i]:
                        continue
                    mine = theta[a[i]]
                    if averaging == "gradient":
                        acc = acc + naive_grad(mine, X[i][G], yr[i][G], loss, l2, delta)[sh]
                    else:
                        th = mine.copy()
                        for _ in range(local_steps):
                            th = th - lr_r * naive_grad(th, X[i][G], yr[i][G], loss, l2, delta)
                        acc = acc + th[sh]
                    count += 1
                if averaging == "gradient":
                    value = theta[0][sh] - lr_r / m * acc
                else:
                    value = acc / count if count > 0 else theta[0][sh]
                for j in range(k):
                    new[j][sh] = value
            # 4. divergence
            if not np.all(np.isfinite(new)) or np.max(np.abs(new)) > threshold:
                theta = new
                out_div[r] = True
                n_done = t + 1
                break
            # 5. early stop
            if early_stop and t >= 1 and np.array_equal(a, prev_a):
                ratio = dt.type(0)
                for j in range(k):
                    step = np.sqrt(_sq(new[j] - theta[j]))
                    size = max(np.sqrt(_sq(theta[j])), tiny)
                    ratio = max(ratio, step / size)
                if ratio <= tol:
                    theta = new
                    out_conv[r] = True
                    n_done = t + 1
                    break
            theta = new
            prev_a = a
        # final evaluation on all rows
        L = naive_loss_table(theta, X, yr, all_rows, loss, l2, delta)
        a, loss_f = naive_assign(L)
        out_theta[r] = theta
        out_labels[r] = a
        out_loss[r] = loss_f
        out_n[r] = n_done
        for t in range(n_done, n_iter + 1):
            tr_labels[t, r] = a
            tr_loss[t, r] = loss_f
            if tsr is not None:
                tr_dist[t, r] = naive_dist(theta, tsr)

    return {
        "theta": out_theta,
        "labels": out_labels,
        "loss": out_loss,
        "diverged": out_div,
        "converged": out_conv,
        "n_iter": out_n,
        "trace_labels": tr_labels,
        "trace_loss": tr_loss,
        "trace_dist": tr_dist,
    }
