"""LOCAL, FedAvg, Per-FedAvg (first order) and IFCA for machines of unequal sizes.

The baselines of the FPFC paper's Table 1 (Yu, Liu, Sun, Wang, AAAI 2023) that the package lacked,
for every loss of :func:`mixlinreg.baselines.cfl` (squared, logistic, Huber, multinomial) and for
machines of unequal sizes (padded arrays with ``n_samples=``, as :func:`cfl` and :func:`fpfc`
take them). Machine ``i``'s objective is ``F_i(w) = sum_t omega_it ell(x_it, w; y_it) +
(l2/2) ||w||^2`` with the rows' weights ``omega_it = 1/n_i`` on its ``n_i`` rows (the padding
weighs 0): :func:`mixlinreg.baselines._common.loss_gradient` with
:func:`~mixlinreg.baselines._common.sample_weights`. Every method runs full-batch gradient steps
with every machine taking part in every round (no sampling of machines or minibatches).
"""

from __future__ import annotations

import numpy as np

from .._progress import progress_range
from .._validation import check_array, check_bool, check_choice, check_float, check_int
from ..losses import LOSSES as _SCALAR_LOSSES
from ..losses import multinomial_value
from ._common import (LOSSES, check_data, check_l2, check_scale, loss_gradient, model_start,
                      sample_weights, smoothness, warn_diverged)
from ._result import BaselineResult

__all__ = ["local_train", "fedavg", "per_fedavg", "ifca_weighted", "machine_losses"]

#: how a server averages the machines' models: by their sizes ``n_i / N`` or uniformly ``1/m``
WEIGHTINGS = ("size", "uniform")


class _Problem:
    """The checked data and loss of one call: ``X``, ``y``, the start ``theta0`` (flat), the
    models' ``shape``, the rows' ``weights`` and the machines' ``counts``, and ``grad(idx, T)``."""

    def __init__(self, X, y, loss, n_classes, l2, huber_delta, n_samples, init, method):
        self.X, self.y, n_samples = check_data(X, y, n_samples)
        check_choice("loss", loss, LOSSES)
        check_scale(self.X, self.y, loss, method)
        self.delta = check_float("huber_delta", huber_delta, low=0.0, low_open=True)
        self.l2 = check_l2(l2)
        self.loss = loss
        self.m, n, d = self.X.shape
        self.theta0, self.shape = model_start(init, n_classes, loss, self.y, d)
        self.weights, self.counts = sample_weights(n_samples, self.m, n)
        self.grad = loss_gradient(self.X, self.y, self.l2, loss, self.delta, self.shape,
                                  self.weights)
        self.idx = np.arange(self.m)
        self.p = self.theta0.size

    def step(self, lr):
        """``lr`` checked, or ``1 / L_f`` (the largest smoothness constant over machines)."""
        if lr is None:
            return 1.0 / smoothness(self.X, self.loss, self.l2, self.weights)
        return check_float("lr", lr, low=0.0, low_open=True)

    def mix(self, weighting):
        check_choice("weighting", weighting, WEIGHTINGS)
        if weighting == "size":
            return self.counts / self.counts.sum()
        return np.full(self.m, 1.0 / self.m)

    def tiled(self, w):
        return np.tile(w, (self.m, 1))

    def values(self, T):
        """``F_i`` at the rows ``T`` (m, p): machine ``i`` at ``T[i]``."""
        return machine_losses(self.X, self.y, T.reshape((self.m,) + self.shape), self.weights,
                              self.loss, self.delta, self.l2)

    def result(self, theta, labels, rounds, floats, extra, method):
        theta = np.asarray(theta).reshape((-1,) + self.shape)
        extra["diverged"] = warn_diverged(method, bool(not np.all(np.isfinite(theta))))
        return BaselineResult(theta=theta, labels=np.asarray(labels, dtype=np.int64),
                              n_rounds=int(rounds), floats_sent_per_machine=float(floats),
                              extra=extra)


def machine_losses(X, y, models, weights, loss, delta=1.0, l2=0.0):
    """``F_i(models[i]) = sum_t weights[i, t] ell(<x_it, models[i]>, y_it) + (l2/2) ||models[i]||^2``
    for every machine ``i`` (shape (m,)); ``models`` (m, d) or (m, d, C) for ``"multinomial"``."""
    models = np.asarray(models, dtype=np.float64)
    if loss == "multinomial":
        ell = multinomial_value(np.matmul(X, models), y)
    else:
        ell = _SCALAR_LOSSES[loss].value(np.matmul(X, models[:, :, None])[:, :, 0], y,
                                         delta=delta)
    out = np.sum(ell * weights, axis=1)
    if l2 != 0.0:
        out += 0.5 * l2 * np.sum(models.reshape(models.shape[0], -1) ** 2, axis=1)
    return out


def local_train(X, y, *, lr=None, n_steps=100, l2=0.0, loss="squared", n_classes=None,
                huber_delta=1.0, n_samples=None, init=None, verbose=False):
    r"""LOCAL: every machine alone, ``n_steps`` gradient steps ``w <- w - lr grad F_i(w)`` from
    ``init`` (zeros by default); no communication.

    Parameters
    ----------
    X : array_like, shape (m, n, d)
    y : array_like, shape (m, n)
    lr : float or None
        Step, ``> 0``; ``None``: ``1 / L_f`` with ``L_f`` the largest smoothness constant over
        machines (:func:`~mixlinreg.baselines._common.smoothness`).
    n_steps : int, default 100
        Gradient steps, ``>= 0``.
    l2 : float, default 0
        Ridge coefficient, ``>= 0``.
    loss : {"squared", "logistic", "huber", "multinomial"}
    n_classes : int, optional
        ``C >= 2`` for ``loss="multinomial"`` (or given by ``init``'s shape).
    huber_delta : float, default 1
    n_samples : array_like of int, shape (m,), optional
        Rows used per machine (padded arrays), as in :func:`mixlinreg.baselines.cfl`.
    init : array_like, shape (d,) or (d, C), optional
    verbose : bool, default False
        A tqdm bar (on stderr) over the steps.

    Returns
    -------
    BaselineResult
        ``theta`` (m, d) or (m, d, C), one model per machine; ``labels = arange(m)``;
        ``n_rounds = 0``; ``floats_sent_per_machine = 0``. ``extra``: ``"loss"`` (m,) the final
        ``F_i``, ``"lr"``, ``"diverged"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((2, 1, 1)); y = np.array([[1.0], [3.0]])
    >>> local_train(X, y, lr=0.25, n_steps=60).theta.round(6).ravel().tolist()
    [1.0, 3.0]
    """
    pb = _Problem(X, y, loss, n_classes, l2, huber_delta, n_samples, init, "local_train")
    lr = pb.step(lr)
    n_steps = check_int("n_steps", n_steps, low=0)
    T = pb.tiled(pb.theta0)
    with np.errstate(all="ignore"):
        for _ in progress_range(n_steps, "local_train", check_bool("verbose", verbose), "step"):
            T = T - lr * pb.grad(pb.idx, T)
        final = pb.values(T)
    return pb.result(T, np.arange(pb.m), 0, 0.0, {"loss": final, "lr": float(lr)}, "local_train")


def fedavg(X, y, *, lr=None, local_steps=5, n_rounds=100, weighting="size", l2=0.0,
           loss="squared", n_classes=None, huber_delta=1.0, n_samples=None, init=None,
           verbose=False):
    r"""FedAvg (McMahan et al. 2017): one global model ``w`` (zeros, or ``init``); each round
    every machine runs ``local_steps`` gradient steps ``w_i <- w_i - lr grad F_i(w_i)`` from
    ``w`` and the server sets ``w = sum_i p_i w_i`` with ``p_i = n_i / N`` (``weighting="size"``,
    ``N = sum_i n_i``) or ``1/m`` (``"uniform"``).

    With ``local_steps = 1`` a round is one gradient step of size ``lr`` on
    ``sum_i p_i F_i``: with size weights, the mean loss over all rows (plus the ridge).

    Parameters
    ----------
    X, y, lr, l2, loss, n_classes, huber_delta, n_samples, init
        As in :func:`local_train`.
    local_steps : int, default 5
        ``>= 1``.
    n_rounds : int, default 100
        ``>= 0``.
    weighting : {"size", "uniform"}, default "size"
    verbose : bool, default False
        A tqdm bar (on stderr) over the rounds.

    Returns
    -------
    BaselineResult
        ``theta`` (1, d) or (1, d, C); ``labels`` zeros (m,); ``n_rounds``;
        ``floats_sent_per_machine = 2 p n_rounds`` (``p = d`` or ``d C``: the model down, the
        local model up). ``extra``: ``"objective"`` ``sum_i p_i F_i(w)`` at the end, ``"lr"``,
        ``"diverged"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((2, 2, 1)); y = np.array([[1.0, 1.0], [4.0, 0.0]])
    >>> float(fedavg(X, y, lr=0.25, n_rounds=80, n_samples=[2, 1]).theta.round(6)[0, 0])
    2.0
    """
    pb = _Problem(X, y, loss, n_classes, l2, huber_delta, n_samples, init, "fedavg")
    lr = pb.step(lr)
    local_steps = check_int("local_steps", local_steps, low=1)
    n_rounds = check_int("n_rounds", n_rounds, low=0)
    p = pb.mix(weighting)
    w = pb.theta0
    with np.errstate(all="ignore"):
        for _ in progress_range(n_rounds, "fedavg", check_bool("verbose", verbose)):
            T = pb.tiled(w)
            for _ in range(local_steps):
                T = T - lr * pb.grad(pb.idx, T)
            w = p @ T
        objective = float(p @ pb.values(pb.tiled(w)))
    return pb.result(w[None], np.zeros(pb.m), n_rounds, 2.0 * pb.p * n_rounds,
                     {"objective": objective, "lr": float(lr)}, "fedavg")


def per_fedavg(X, y, *, alpha, beta, local_steps=5, n_rounds=100, adapt_steps=1,
               weighting="uniform", l2=0.0, loss="squared", n_classes=None, huber_delta=1.0,
               n_samples=None, init=None, verbose=False):
    r"""Per-FedAvg, first-order version (Fallah, Mokhtari, Ozdaglar 2020, Algorithm 1 with the
    first-order approximation): a meta-model ``w`` trained so that one gradient step adapts it.

    Each round every machine starts from ``w`` and runs ``local_steps`` meta-steps

    ``w~ = w_i - alpha grad F_i(w_i)``,   ``w_i <- w_i - beta grad F_i(w~)``

    (the first-order approximation drops the Hessian term of the MAML gradient; full batches
    replace the paper's independent minibatches ``D``, ``D'``), and the server sets
    ``w = sum_i p_i w_i`` (``weighting="uniform"``: ``p_i = 1/m``, the paper's objective
    ``(1/m) sum_i F_i(w - alpha grad F_i(w))``; ``"size"``: ``n_i / N``). Machine ``i``'s
    personalized model is ``w`` after ``adapt_steps`` steps ``w <- w - alpha grad F_i(w)`` on its
    training data.

    Parameters
    ----------
    X, y, l2, loss, n_classes, huber_delta, n_samples, init
        As in :func:`local_train`.
    alpha : float
        Adaptation step, ``> 0``.
    beta : float
        Meta step, ``> 0``.
    local_steps : int, default 5
        Meta-steps per round, ``>= 1``.
    n_rounds : int, default 100
        ``>= 0``.
    adapt_steps : int, default 1
        Adaptation steps of the evaluation, ``>= 0`` (0: the meta-model itself).
    weighting : {"uniform", "size"}, default "uniform"
    verbose : bool, default False
        A tqdm bar (on stderr) over the rounds.

    Returns
    -------
    BaselineResult
        ``theta`` (m, d) or (m, d, C) the personalized models; ``labels = arange(m)``;
        ``floats_sent_per_machine = 2 p n_rounds``. ``extra``: ``"meta"`` the meta-model ``w``,
        ``"diverged"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((2, 1, 1)); y = np.array([[0.0], [2.0]])
    >>> res = per_fedavg(X, y, alpha=0.25, beta=0.1, n_rounds=50)
    >>> float(res.extra["meta"][0].round(6)), res.theta.round(6).ravel().tolist()
    (1.0, [0.5, 1.5])
    """
    pb = _Problem(X, y, loss, n_classes, l2, huber_delta, n_samples, init, "per_fedavg")
    alpha = check_float("alpha", alpha, low=0.0, low_open=True)
    beta = check_float("beta", beta, low=0.0, low_open=True)
    local_steps = check_int("local_steps", local_steps, low=1)
    n_rounds = check_int("n_rounds", n_rounds, low=0)
    adapt_steps = check_int("adapt_steps", adapt_steps, low=0)
    p = pb.mix(weighting)
    w = pb.theta0
    with np.errstate(all="ignore"):
        for _ in progress_range(n_rounds, "per_fedavg", check_bool("verbose", verbose)):
            T = pb.tiled(w)
            for _ in range(local_steps):
                T = T - beta * pb.grad(pb.idx, T - alpha * pb.grad(pb.idx, T))
            w = p @ T
        P = pb.tiled(w)
        for _ in range(adapt_steps):
            P = P - alpha * pb.grad(pb.idx, P)
    return pb.result(P, np.arange(pb.m), n_rounds, 2.0 * pb.p * n_rounds,
                     {"meta": w.reshape(pb.shape)}, "per_fedavg")


def _assign(F):
    """Each machine's argmin over the columns of ``F`` (m, k): ties to the lowest index, a NaN
    never winning over a finite value."""
    return np.argmin(np.where(np.isnan(F), np.inf, F), axis=1)


def ifca_weighted(X, y, init, lr, *, n_iter=100, l2=0.0, loss="squared", huber_delta=1.0,
                  n_samples=None, verbose=False):
    r"""IFCA with gradient averaging (Ghosh et al. 2020, Algorithm 2, option I) for machines of
    unequal sizes, several restarts, the kept one chosen by training loss.

    Each iteration every machine picks ``a_i = argmin_j F_i(theta_j)`` (ties to the lowest index)
    and every model takes the size-weighted gradient step

    ``theta_j <- theta_j - lr sum_{i: a_i = j} (n_i / N) grad F_i(theta_j)``,   ``N = sum_i n_i``,

    a gradient step on the mean loss over the rows of the machines that chose ``j``, weighted by
    the share of all rows. With equal sizes ``n_i / N = 1/m`` and this is
    :func:`mixlinreg.ifca`'s update (``averaging="gradient"``, its ``lr / m`` sum), tested equal
    to it. The training loss is ``sum_i (n_i / N) min_j F_i(theta_j)``; of the ``R`` restarts
    the one with the lowest final finite loss is kept (ties: the first), as IFCA's experiments
    choose among random initializations.

    Parameters
    ----------
    X, y, l2, loss, huber_delta, n_samples
        As in :func:`local_train` (``loss="multinomial"`` takes ``C`` from ``init``'s shape).
    init : array_like, shape (R, k, d) or (R, k, d, C)
        Starting models of ``R`` restarts (a 2-d (k, d) array, or (k, d, C) for the
        multinomial loss, is one restart).
    lr : float
        Step, ``> 0``.
    n_iter : int, default 100
        Iterations, ``>= 0``.
    verbose : bool, default False
        A tqdm bar (on stderr) over the runs (each run's iterations in turn).

    Returns
    -------
    BaselineResult
        The kept restart: ``theta`` (k, d) or (k, d, C), ``labels`` (m,) at the final models,
        ``n_rounds = n_iter``, ``floats_sent_per_machine = (k + 1) p n_iter`` (``k`` models down,
        one gradient up). ``extra``: ``"kept"``, ``"n_clusters"`` (models chosen by some machine),
        ``"theta_runs"``, ``"labels_runs"``, ``"loss_runs"`` (every restart), ``"diverged"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((4, 1, 1)); y = np.array([[0.0], [0.2], [5.0], [5.2]])
    >>> res = ifca_weighted(X, y, np.array([[[1.0], [4.0]]]), 0.5, n_iter=200)
    >>> res.labels.tolist(), res.theta.round(6).ravel().tolist()
    ([0, 0, 1, 1], [0.1, 5.1])
    """
    X, y, n_samples = check_data(X, y, n_samples)
    d = X.shape[2]
    check_choice("loss", loss, LOSSES)
    multi = loss == "multinomial"
    inits = check_array("init", init, ndim=(3, 4) if multi else (2, 3), dtype=np.float64)
    if inits.ndim == (3 if multi else 2):
        inits = inits[None]
    if inits.shape[2] != d or inits.shape[0] < 1 or inits.shape[1] < 1:
        want = "(R, k, d, C)" if multi else "(R, k, d)"
        raise ValueError(f"init must have shape {want} with R, k >= 1 and d = {d}, got "
                         f"{inits.shape}")
    pb = _Problem(X, y, loss, None, l2, huber_delta, n_samples, inits[0, 0] if multi else None,
                  "ifca_weighted")
    lr = check_float("lr", lr, low=0.0, low_open=True)
    n_iter = check_int("n_iter", n_iter, low=0)
    q = pb.counts / pb.counts.sum()
    R, k = inits.shape[:2]
    thetas = inits.reshape(R, k, -1).copy()
    labels = np.zeros((R, pb.m), dtype=np.int64)
    losses = np.empty(R)
    with np.errstate(all="ignore"):
        for r in progress_range(R, "ifca_weighted", check_bool("verbose", verbose), "run"):
            th = thetas[r]
            for _ in range(n_iter):
                a = _assign(_all_losses(pb, th))
                G = q[:, None] * pb.grad(pb.idx, th[a])
                th = th - lr * (np.eye(k)[a].T @ G)
            F = _all_losses(pb, th)
            labels[r] = _assign(F)
            losses[r] = float(q @ F[pb.idx, labels[r]])
            thetas[r] = th
    ok = np.isfinite(losses) & np.all(np.isfinite(thetas.reshape(R, -1)), axis=1)
    kept = int(np.flatnonzero(ok)[np.argmin(losses[ok])]) if ok.any() else 0
    extra = {"kept": kept, "n_clusters": int(np.unique(labels[kept]).size),
             "theta_runs": thetas.reshape((R, k) + pb.shape), "labels_runs": labels,
             "loss_runs": losses}
    return pb.result(thetas[kept], labels[kept], n_iter, (k + 1) * pb.p * n_iter, extra,
                     "ifca_weighted")


def _all_losses(pb, th):
    """``F_i(theta_j)`` for every machine ``i`` and model ``j`` of ``th`` (k, p): (m, k)."""
    return np.stack([pb.values(pb.tiled(t)) for t in th], axis=1)
