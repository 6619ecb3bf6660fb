"""Validation and least-squares helpers shared by the baselines (private)."""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_choice, check_data_scale, check_float, check_int
from ..machines import machine_arrays
from ..losses import CODES, KERNEL_CODES, curvature_bound, derivative_array, multinomial_derivative

#: The only loss the closed-form baselines support.
_LOSSES = ("squared",)


def warn_diverged(method, diverged, hint="lower lr"):
    """Warn (mixlinreg's ``ConvergenceWarning``, as :func:`mixlinreg.ifca` does) when a baseline's
    run diverged (its models stopped being finite or grew past the divergence threshold): the
    result is still returned, flagged ``extra["diverged"]``."""
    if diverged:
        import warnings

        from ..ifca import ConvergenceWarning

        warnings.warn(f"{method} diverged: its models stopped being finite or grew past the "
                      f"divergence threshold (the result is flagged extra['diverged']); {hint}",
                      ConvergenceWarning, stacklevel=3)
    return diverged


def check_data(X, y, n_samples=None):
    """The machines' data in any form :mod:`mixlinreg.machines` takes (dense ``X`` (m, n, d) and
    ``y`` (m, n), lists of per-machine arrays, or padded arrays with ``n_samples``) as finite
    C-contiguous float64 arrays, zero-padded, and ``n_samples``: the machines' sizes (m,) when
    they differ, else None (every machine uses its n rows, the dense path bit for bit)."""
    X, y, counts, ragged = machine_arrays(X, y, n_samples, np.float64)
    return X, y, (counts if ragged else None)


class RaggedRows:
    """Machines of unequal sizes kept without padding: machine i's rows are
    ``X[start[i]:start[i + 1]]`` of the concatenated rows ``X`` (N, d) and responses ``y`` (N,).

    Padding every machine to the largest one costs ``m * max n_i * d`` floats, which for sizes
    drawn from a heavy-tailed law (the FPFC authors' synthetic data) is many times the data
    itself; the per-machine loops below touch each row once. Used by :func:`fpfc` for lists of
    per-machine arrays of unequal sizes (equal sizes take the dense arrays' path).
    """

    def __init__(self, Xs, ys):
        self.counts = np.array([len(a) for a in Xs], dtype=np.float64)
        self.start = np.concatenate([[0], np.cumsum([len(a) for a in Xs])]).astype(np.int64)
        self.X = np.ascontiguousarray(np.concatenate(Xs))
        self.y = np.ascontiguousarray(np.concatenate(ys))
        self.m, self.d = len(Xs), self.X.shape[1]

    def rows(self, i):
        a, b = self.start[i], self.start[i + 1]
        return self.X[a:b], self.y[a:b]

    def gradient(self, l2, loss, delta, shape):
        """``grad(idx, T)`` as :func:`loss_gradient` makes it: ``(1/n_i) X_i^T ell'(X_i t_i,
        y_i) + l2 t_i`` for each machine of ``idx``, one machine at a time."""
        code = CODES.get(loss)

        def grad(idx, T):
            G = np.empty((len(idx),) + shape)
            for j, i in enumerate(idx):
                Xi, yi = self.rows(i)
                t = T[j].reshape(shape)
                if loss == "multinomial":
                    D = multinomial_derivative(Xi @ t, yi)
                else:
                    D = derivative_array(Xi @ t, yi, code, delta)
                G[j] = Xi.T @ D / self.counts[i]
            G = G.reshape(len(idx), -1)
            if l2 != 0.0:
                G += l2 * T
            return G

        return grad

    def smoothness(self, loss, l2):
        """:func:`smoothness` of the machines: ``sup ell'' max_i lambda_max(X_i^T X_i) / n_i + l2``."""
        top = max(float(np.linalg.norm(self.rows(i)[0], 2)) ** 2 / self.counts[i]
                  for i in range(self.m))
        return curvature_bound(loss) * top + l2

    def loss_values(self, omega, loss, delta, shape):
        """``(1/n_i) sum_t ell`` of every machine at its model (rows of ``omega``)."""
        from ..losses import LOSSES as REGISTRY, multinomial_value

        out = np.empty(self.m)
        for i in range(self.m):
            Xi, yi = self.rows(i)
            z = Xi @ omega[i].reshape(shape)
            vals = (multinomial_value(z, yi) if loss == "multinomial"
                    else REGISTRY[loss].value(z, yi, delta=delta))
            out[i] = float(np.sum(vals)) / self.counts[i]
        return out


def ragged_rows(X, y, n_samples):
    """:class:`RaggedRows` for ``X``, ``y`` given as lists of per-machine arrays of unequal sizes
    (each checked as :func:`mixlinreg.stack_machines` checks it), else None (dense or padded
    arrays, and lists of equal sizes, take the padded path)."""
    from ..machines import machine_lists, refuse_n_samples_with_lists

    if not isinstance(X, (list, tuple)):
        return None
    refuse_n_samples_with_lists(n_samples)
    Xs, ys = machine_lists(X, y if isinstance(y, (list, tuple)) else list(y), np.float64)
    if len({len(a) for a in Xs}) == 1:
        return None
    return RaggedRows(Xs, ys)


def check_data_rescaled(X, y):
    """:func:`check_data` for the closed-form least-squares baselines, which average over all
    ``n`` rows of every machine: machines of unequal sizes come back with machine i's rows (and
    responses) multiplied by ``sqrt(n / n_i)`` (the padding stays zero), so that its mean squared
    residual over the ``n`` padded rows is the mean over its own ``n_i`` rows. Each machine's loss
    is then its own mean, as in :func:`mixlinreg.ifca`; equal sizes are returned unchanged."""
    X, y, n_samples = check_data(X, y)
    if n_samples is not None:
        c = np.sqrt(X.shape[1] / n_samples)
        X = X * c[:, None, None]
        y = y * c[:, None]
    return X, y


def check_scale(X, y, loss, method):
    """The iterative baselines' counterpart of :func:`mixlinreg.ifca`'s underflow check: a
    ``FloatingPointError`` naming ``method``, max|X| and max|y| when the data are so small that
    the loss and its gradient underflow float64 (:func:`mixlinreg._validation.check_data_scale`).
    The closed-form baselines (``oracle``, ``global_model``, ``local_models``, ``one_shot``) do
    not call it: LAPACK's least squares rescale, and they fit such data exactly."""
    check_data_scale(X, y, np.float64, loss, where=method)


def check_loss(loss):
    """Only ``"squared"``: the baselines solve least squares in closed form."""
    return check_choice("loss", loss, _LOSSES)


#: the losses of the iterative baselines (:func:`cfl`, :func:`fpfc`): every loss the kernel runs
LOSSES = tuple(KERNEL_CODES)


def model_start(init, n_classes, loss, y, d):
    """The starting model as a flat vector, the models' shape (``(d,)`` or ``(d, C)``), with the
    labels ``y`` checked against the loss."""
    if loss == "multinomial":
        if init is None and n_classes is None:
            raise ValueError("loss='multinomial' needs n_classes (an integer >= 2) or an init of "
                             "shape (d, C), got neither")
        C = None if n_classes is None else check_int("n_classes", n_classes, low=2)
        if init is not None:
            W = check_array("init", init, dtype=np.float64)
            if W.ndim != 2 or W.shape[0] != d or W.shape[1] < 2 or (C is not None
                                                                     and W.shape[1] != C):
                want = f"({d}, {C})" if C is not None else f"({d}, C) with C >= 2"
                raise ValueError(f"init must have shape {want} for loss='multinomial', got "
                                 f"{W.shape}")
            C = W.shape[1]
        shape = (d, C)
        bad = (y != np.round(y)) | (y < 0) | (y > C - 1)
        if bad.any():
            raise ValueError(f"y must hold class labels, integers in [0, {C - 1}], for "
                             f"loss='multinomial' with C = {C} classes; got {float(y[bad][0])!r}")
    else:
        if n_classes is not None:
            raise ValueError(f"n_classes is only for loss='multinomial', got n_classes="
                             f"{n_classes!r} with loss={loss!r}")
        shape = (d,)
        if loss == "logistic" and (y.min() < 0 or y.max() > 1):
            raise ValueError("y must lie in [0, 1] for loss='logistic' (labels 0/1 or "
                             f"probabilities), got values in [{float(y.min())!r}, {float(y.max())!r}]")
    theta0 = (np.zeros(shape) if init is None
              else check_array("init", init, shape=shape, dtype=np.float64))
    return theta0.reshape(-1).copy(), shape


def sample_weights(n_samples, m, n):
    """Each row's weight in its machine's mean: ``(m, n)`` with ``1 / n_i`` on the first ``n_i``
    rows of machine ``i`` and 0 on the rest (padding), and the counts ``n_i`` (m,) as float.

    ``n_samples=None``: every machine uses its ``n`` rows. Otherwise ``m`` integers in
    ``[1, n]`` (a ``ValueError`` naming ``n_samples`` otherwise): machines with fewer rows than
    others are given as arrays padded to ``n`` rows, the padding ignored.

    >>> w, counts = sample_weights([1, 2], 2, 2)
    >>> w.tolist(), counts.tolist()
    ([[1.0, 0.0], [0.5, 0.5]], [1.0, 2.0])
    """
    if n_samples is None:
        return np.full((m, n), 1.0 / n), np.full(m, float(n))
    counts = check_array("n_samples", n_samples, shape=(m,), dtype=np.float64)
    if np.any(counts != np.round(counts)) or np.any(counts < 1) or np.any(counts > n):
        bad = counts[(counts != np.round(counts)) | (counts < 1) | (counts > n)][0]
        raise ValueError(f"n_samples must hold integers in [1, {n}] (rows used per machine, at "
                         f"most the padded n), got {bad!r}")
    w = (np.arange(n)[None, :] < counts[:, None]) / counts[:, None]
    return w, counts


def loss_gradient(X, y, l2, loss, delta, shape, weights=None):
    """``grad(idx, T)`` for a loss of :mod:`mixlinreg.losses`: ``(1/n) X_i^T ell'(X_i t, y_i) +
    l2 t`` per machine, models ``T`` as flat rows (a d x C matrix for the multinomial loss).
    ``weights`` (m, n) from :func:`sample_weights` replace the ``1/n`` (machines of unequal
    sizes, padded)."""
    n = X.shape[1]
    code = CODES.get(loss)
    w = np.full((X.shape[0], n), 1.0 / n) if weights is None else weights

    def grad(idx, T):
        Xi, Ti = X[idx], T.reshape((len(idx),) + shape)
        # batched matrix products (BLAS), not einsum: 10-20 times faster at these sizes
        if loss == "multinomial":
            D = multinomial_derivative(Xi @ Ti, y[idx])
            G = np.swapaxes(Xi, 1, 2) @ (D * w[idx][:, :, None])
        else:
            D = derivative_array((Xi @ Ti[:, :, None])[..., 0], y[idx], code, delta)
            G = (np.swapaxes(Xi, 1, 2) @ (D * w[idx])[:, :, None])[..., 0]
        G = G.reshape(len(idx), -1)
        if l2 != 0.0:
            G += l2 * T
        return G

    return grad


def smoothness(X, loss, l2, weights=None):
    """``L_f``: a smoothness constant of every ``f_i`` (``sup ell'' lambda_max(X_i^T W_i X_i)
    + l2`` with ``W_i`` the rows' weights, ``1/n`` by default; the largest over machines)."""
    n = X.shape[1]
    w = np.full((X.shape[0], n), 1.0 / n) if weights is None else weights
    return curvature_bound(loss) * max(float(np.linalg.norm(X[i] * np.sqrt(w[i])[:, None], 2)) ** 2
                                 for i in range(X.shape[0])) + l2


def check_l2(l2):
    return check_float("l2", l2, low=0.0)


def stats_floats(d):
    """Floats one machine uploads for exact pooled least squares: upper triangle of X^T X, X^T y."""
    return float(d * (d + 1) // 2 + d)


def pooled_fit(Xc, yc, l2):
    """Least squares on the rows ``Xc`` (N, d), ``yc`` (N,).

    ``l2 == 0``: minimum-norm least squares (``numpy.linalg.lstsq``), unique even when N < d or the
    rows are rank deficient. ``l2 > 0``: the minimizer of
    ``(1/N) ||yc - Xc theta||^2 + (l2/2) ||theta||^2``, i.e. the solution of
    ``(Xc^T Xc / N + (l2/2) I) theta = Xc^T yc / N``.
    """
    if l2 == 0.0:
        return np.linalg.lstsq(Xc, yc, rcond=None)[0]
    N, d = Xc.shape
    A = Xc.T @ Xc / N
    A[np.diag_indices(d)] += 0.5 * l2
    return np.linalg.solve(A, Xc.T @ yc / N)


def cluster_fit(X, y, labels, k, l2):
    """Pooled least squares of each cluster ``0..k-1``; a cluster without machines gets NaN.

    Returns ``theta`` (k, d) and the number of machines of each cluster (k,).
    """
    d = X.shape[2]
    theta = np.full((k, d), np.nan)
    sizes = np.bincount(labels, minlength=k)
    for j in range(k):
        if sizes[j]:
            mask = labels == j
            theta[j] = pooled_fit(X[mask].reshape(-1, d), y[mask].reshape(-1), l2)
    return theta, sizes
