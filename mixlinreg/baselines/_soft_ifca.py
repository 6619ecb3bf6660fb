"""Soft IFCA: softmax cluster weights instead of the argmin ("em" option of the authors' code)."""

from __future__ import annotations

import numpy as np

from .. import _numerics
from .._progress import progress_range
from .._validation import check_array, check_bool, check_float, check_int
from ..losses import LOSSES
from ._common import check_data_rescaled, check_l2, check_loss, check_scale, warn_diverged
from ._result import BaselineResult

__all__ = ["soft_ifca"]


_SQUARED = LOSSES["squared"]


def _losses(X2, y, theta, l2):
    """Loss derivatives ``ell'(x . theta_j, y)`` (m, n, k) and per-machine losses F_i(theta_j) (m, k)."""
    m, n = y.shape
    z = (X2 @ theta.T).reshape(m, n, -1)
    err = _SQUARED.derivative(z, y[:, :, None])
    F = np.mean(_SQUARED.value(z, y[:, :, None]), axis=1)
    if l2 != 0.0:
        F += 0.5 * l2 * np.sum(theta * theta, axis=1)
    return err, F


def _soft_weights(F, temperature):
    """Row-wise softmax of ``-F / temperature``, computed stably.

    The row minimum is subtracted first, so the exponents are ``<= 0`` (no overflow) and the best
    model's exponent is exactly 0 (the row sum is >= 1, no 0/0). NaN losses count as +inf
    (weight 0); a row with no finite loss gets uniform weights.
    """
    F = np.where(np.isnan(F), np.inf, F)
    fmin = F.min(axis=1, keepdims=True)
    none_finite = ~np.isfinite(fmin)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        z = -(F - np.where(none_finite, 0.0, fmin)) / temperature
        z = np.where(none_finite, 0.0, z)
        w = np.exp(z)  # underflow to 0 is the intended one-hot limit
    return w / w.sum(axis=1, keepdims=True)


def soft_ifca(X, y, init, lr, *, temperature, n_iter=300, l2=0.0, loss="squared",
              verbose=False):
    r"""IFCA with soft (softmax) cluster assignments, gradient averaging; one run, squared loss.

    Each iteration, machine ``i`` weighs the ``k`` models by
    ``w_ij = exp(-F_i(theta_j) / temperature) / sum_l exp(-F_i(theta_l) / temperature)``, with
    ``F_i(theta) = (1/n) ||X_i theta - y_i||^2 + (l2/2) ||theta||^2`` its mean squared error, and
    the center updates every model

    ``theta_j <- theta_j - (lr / m) * sum_i w_ij grad F_i(theta_j)``.

    * ``temperature -> 0``: the weights become one-hot at ``argmin_j F_i(theta_j)`` and the update
      is exactly IFCA's (:func:`mixlinreg.ifca`, ``averaging="gradient"``, divisor ``m``). Only
      exact ties differ: the softmax splits the weight, IFCA gives it to the lowest index.
    * ``temperature -> inf``: every weight is ``1/k``; each model runs gradient descent on the
      global loss ``(1/m) sum_i F_i`` with step ``lr / k``, independently of the others, so all of
      them drift to the global model.

    The softmax is computed stably (row minimum of the losses subtracted first). A run whose
    losses stop being finite or whose largest parameter entry exceeds ``1e10`` stops there and is
    flagged ``extra["diverged"]``.

    Parameters
    ----------
    X : array_like, shape (m, n, d)
    y : array_like, shape (m, n)
    init : array_like, shape (k, d)
        Initial models (a single run).
    lr : float
        Step size, ``> 0``.
    temperature : float
        Softmax temperature, ``> 0`` (keyword only, no default).
    n_iter : int, default 300
        Iterations, ``>= 0``.
    l2 : float, default 0
        Ridge coefficient, ``>= 0``, in ``F_i`` as in :func:`mixlinreg.ifca`.
    loss : {"squared"}
        Only the squared loss.
    verbose : bool, default False
        A tqdm bar (on stderr) over the iterations.

    Returns
    -------
    BaselineResult
        ``theta`` (k, d) the final models (float64); ``labels`` (m,) ``argmax_j w_ij`` at the final
        models (ties to the lowest index); ``n_rounds`` the iterations performed;
        ``floats_sent_per_machine = 2 k d n_rounds`` (per iteration the ``k`` models down and the
        ``k`` weighted gradients ``w_ij grad F_i(theta_j)`` up; hard IFCA sends one gradient up).
        ``extra``: ``"weights"`` (m, k) at the final models; ``"loss"``
        ``(1/m) sum_i min_j F_i(theta_j)`` at the final models (the loss :func:`mixlinreg.ifca`
        reports); ``"diverged"`` (bool).

    Examples
    --------
    >>> import numpy as np, mixlinreg as mlr
    >>> from mixlinreg.baselines import soft_ifca
    >>> mix = mlr.make_mixture(m=10, n=30, d=3, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=1)
    >>> init = mlr.init_close(mix.theta_star, alpha0=0.3, n_runs=1, rng=0)[0]
    >>> res = soft_ifca(mix.X, mix.y, init, lr=0.5, temperature=1e-3, n_iter=100)
    >>> res.labels.tolist() == mix.labels.tolist(), res.n_rounds
    (True, 100)
    >>> bool(np.allclose(res.extra["weights"].sum(axis=1), 1.0))
    True

    References
    ----------
    Soft ("em") cluster scores: the public code of Ghosh, Chung, Yin, Ramchandran,
    "An Efficient Framework for Clustered Federated Learning" (github jichan3751/ifca); the hard
    version is Algorithm 2 of the long version (IEEE Trans. Inf. Theory 2022).
    """
    X, y = check_data_rescaled(X, y)
    check_loss(loss)
    check_scale(X, y, loss, "soft_ifca")
    l2 = check_l2(l2)
    m, n, d = X.shape
    theta = check_array("init", init, ndim=2, dtype=np.float64)
    if theta.shape[0] < 1 or theta.shape[1] != d:
        raise ValueError(f"init must have shape (k, {d}) with k >= 1 (d to match X), "
                         f"got {theta.shape}")
    k = theta.shape[0]
    lr = check_float("lr", lr, low=0.0, low_open=True)
    temperature = check_float("temperature", temperature, low=0.0, low_open=True)
    n_iter = check_int("n_iter", n_iter, low=0)

    X2 = X.reshape(m * n, d)
    diverged = False
    done = 0
    # divergence is detected explicitly below, so no floating point warning needs to escape
    with np.errstate(all="ignore"):
        for _ in progress_range(n_iter, "soft_ifca", check_bool("verbose", verbose), "it"):
            err, F = _losses(X2, y, theta, l2)
            if not np.all(np.isfinite(F)):
                diverged = True
                break
            w = _soft_weights(F, temperature)
            # sum_i w_ij grad F_i(theta_j), grad F_i = (2/n) X_i^T (X_i theta - y_i) + l2 theta
            G = (1.0 / n) * (X2.T @ (err * w[:, None, :]).reshape(m * n, k)).T
            if l2 != 0.0:
                G += l2 * w.sum(axis=0)[:, None] * theta
            theta = theta - (lr / m) * G
            done += 1
            if not np.all(np.isfinite(theta)) or np.abs(theta).max() > _numerics.DIVERGE_THRESHOLD:
                diverged = True
                break
        _, F = _losses(X2, y, theta, l2)
        w = _soft_weights(F, temperature)
        loss_value = float(np.mean(F.min(axis=1)))
    labels = np.argmax(w, axis=1).astype(np.int64)
    warn_diverged("soft_ifca", diverged)
    return BaselineResult(theta=theta, labels=labels, n_rounds=done,
                          floats_sent_per_machine=float(2 * k * d * done),
                          extra={"weights": w, "loss": loss_value, "diverged": diverged})
