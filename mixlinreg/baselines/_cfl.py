"""Clustered Federated Learning (CFL) of Sattler, Mueller and Samek: recursive bipartitioning."""

from __future__ import annotations

import numpy as np

from .. import _numerics
from .._progress import iterations_bar
from .._validation import check_bool, check_choice, check_float, check_int
from ._common import (LOSSES, check_data, check_l2, check_scale, loss_gradient, model_start,
                      ragged_rows, sample_weights, warn_diverged)
from ._result import BaselineResult

__all__ = ["cfl", "split_by_similarity", "cosine_similarities"]


def split_by_similarity(S):
    r"""The bipartition of CFL's rule (6): minimize the largest similarity across the two sides.

    Solves ``argmin_{c1 u c2 = c} max_{i in c1, j in c2} S[i, j]`` exactly: build a maximum
    spanning tree of the similarity graph (Prim) and cut its weakest edge. The cut's largest
    cross similarity is that edge's weight ``w`` (a heavier cross pair would give a heavier
    spanning tree), and every other bipartition is crossed by some tree edge, of weight ``>= w``.
    This is single-linkage hierarchical clustering on the distance ``-S`` stopped at two clusters;
    complete linkage does not solve (6) in general. Ties go to the first weakest edge in Prim's
    order (started from item 0).

    Parameters
    ----------
    S : ndarray, shape (g, g), g >= 2
        Symmetric similarity matrix (the diagonal is ignored), finite.

    Returns
    -------
    side_a, side_b : ndarray of int64
        Sorted positions (rows of ``S``) of the two sides, both non-empty; ``side_a`` holds 0.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[1, .9, -.5, -.6], [.9, 1, -.4, .1], [-.5, -.4, 1, .8], [-.6, .1, .8, 1]])
    >>> [s.tolist() for s in split_by_similarity(S)]
    [[0, 1], [2, 3]]
    """
    S = np.asarray(S, dtype=np.float64)
    g = S.shape[0]
    in_tree = np.zeros(g, dtype=bool)
    in_tree[0] = True
    best = S[0].copy()  # heaviest edge from the tree to each outside item
    parent = np.zeros(g, dtype=np.int64)
    order = [0]
    weight = np.empty(g)
    for _ in range(g - 1):
        v = int(np.argmax(np.where(in_tree, -np.inf, best)))
        in_tree[v] = True
        order.append(v)
        weight[v] = best[v]
        closer = ~in_tree & (S[v] > best)
        best[closer] = S[v][closer]
        parent[closer] = v
    pos = 1 + int(np.argmin(weight[order[1:]]))  # weakest tree edge: (parent[cut], cut)
    cut = order[pos]
    below = np.zeros(g, dtype=bool)  # the subtree under the cut edge (parents come first in order)
    below[cut] = True
    for v in order[pos + 1:]:
        below[v] = below[parent[v]]
    return np.flatnonzero(~below).astype(np.int64), np.flatnonzero(below).astype(np.int64)


def cosine_similarities(D):
    """Pairwise cosine similarities of the rows of ``D`` (the ``alpha_ij`` of the paper's eq. (4));
    a zero row has similarity 0 with every row (itself included).

    >>> cosine_similarities(np.array([[1.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])).tolist()
    [[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    D = np.asarray(D, dtype=np.float64)
    D = D.reshape(D.shape[0], -1)
    norms = np.linalg.norm(D, axis=1)
    U = D / np.where(norms > 0, norms, 1.0)[:, None]
    return U @ U.T


def cfl(X, y, *, init=None, lr=0.1, eps1=1e-3, eps2=0.05, max_rounds=500, local_steps=1, l2=0.0,
        loss="squared", min_group=2, huber_delta=1.0, n_classes=None, callback=None,
        n_samples=None, verbose=False):
    r"""Clustered Federated Learning (CFL): FedAvg per group, split incongruent groups in two.

    Machine ``i`` has the loss ``F_i(theta) = (1/n) sum_t ell(<x_it, theta>, y_it) +
    (l2/2) ||theta||^2`` with a per-sample loss of :mod:`mixlinreg.losses` (``"squared"``:
    ``F_i = (1/n) ||X_i theta - y_i||^2 + (l2/2) ||theta||^2``; ``"logistic"``, ``"huber"``); with
    ``loss="multinomial"`` (softmax cross-entropy) a model is a d x C matrix ``W`` and
    ``F_i(W) = (1/n) sum_t [logsumexp(W^T x_it) - (W^T x_it)_{y_it}] + (l2/2) ||W||_F^2``, the
    loss of :func:`mixlinreg.ifca` with ``loss="multinomial"``; updates are compared (cosine
    similarity, norms) as vectors of all ``d C`` entries.
    One group (all machines) starts from ``init`` (zeros by default). Every communication round,
    each active group ``c`` with model ``theta_c`` sends it down; each of its machines runs
    ``local_steps`` gradient steps of size ``lr`` on ``F_i`` from ``theta_c`` and sends back its
    update ``dtheta_i`` (local model minus ``theta_c``); the center moves
    ``theta_c <- theta_c + mean_{i in c} dtheta_i`` (FedAvg; all machines hold ``n`` points, so
    the paper's weights ``|D_i| / |D_c|`` are equal). Then, as in Algorithms 1 and 2 of the paper:

    * ``||mean_i dtheta_i|| >= eps1``: the group has not converged; it trains on.
    * converged and ``max_i ||dtheta_i|| >= eps2`` (criterion (5) violated: incongruent) and at
      least ``min_group`` machines: the group is split in two by the paper's rule (6), "the server
      separates the clients into two clusters in such a way that the maximum similarity between
      clients from different clusters is minimized",
      ``c1, c2 = argmin_{c1 u c2 = c} max_{i in c1, j in c2} alpha_ij``, with ``alpha`` the cosine
      similarities of this round's updates. It is solved exactly (cut the weakest edge of the
      maximum spanning tree of ``alpha``, i.e. single linkage on ``-alpha`` cut into two clusters;
      see :func:`split_by_similarity`). Both sides start the next round from the group's model.
    * converged otherwise (congruent, or too small to split): the group is final and stops.

    Active groups train in parallel; the run stops when every group is final or after
    ``max_rounds`` rounds. Groups are always arrays of global machine indices.

    The paper states (5) with the clients' gradients; for ``local_steps = 1`` the update is
    ``-lr`` times the gradient, so this uses ``max ||dtheta_i|| = lr max ||grad F_i||``.

    Parameters
    ----------
    X : array_like, shape (m, n, d), or a list of m arrays (n_i, d)
        Machines of unequal sizes as a list are kept unpadded (as :func:`fpfc` keeps them).
    y : array_like, shape (m, n)
    init : array_like, shape (d,) (``(d, C)`` for ``loss="multinomial"``), optional
        Starting model of the single initial group; default zeros.
    lr : float, default 0.1
        Local step size, ``> 0``. Plain gradient descent on ``F_i`` is stable for
        ``lr < 1 / lambda_max(X_i^T X_i / n)`` (about ``1 / (1 + sqrt(d / n))^2`` for Gaussian
        rows; 0.1 is safe when ``n >= d``).
    eps1 : float, default 1e-3
        Convergence threshold on the norm of the group's mean update, ``> 0``.
    eps2 : float, default 0.05
        Incongruence threshold on the largest update norm, ``> 0``. Both thresholds are
        problem dependent (the paper tunes them): ``eps2`` must lie between the congruent noise
        floor, roughly ``lr * 2 sigma sqrt(d / n)`` times a factor ~2 for the maximum over machines,
        and the incongruent signal, roughly ``lr * ||theta*_j - theta*_l||`` for two balanced
        clusters; ``eps1`` should be well below ``eps2``. With ``lr = 0.1`` the defaults fit
        :func:`mixlinreg.make_mixture` problems with ``theta_scale="norm"``, ``R`` of order 1 or
        more, ``sigma`` around 0.1 and ``n`` several times ``d``.
    max_rounds : int, default 500
        Largest number of communication rounds, ``>= 0``.
    local_steps : int, default 1
        Local gradient steps per round, ``>= 1``.
    l2 : float, default 0
        Ridge coefficient, ``>= 0``.
    loss : {"squared", "logistic", "huber", "multinomial"}
        The per-sample loss (:mod:`mixlinreg.losses`). ``"logistic"`` needs ``y`` in [0, 1];
        ``"multinomial"`` needs class labels ``y`` in ``{0, ..., C - 1}`` and ``C`` from
        ``n_classes`` or from ``init``'s shape.
    min_group : int, default 2
        Groups with fewer machines never split, ``>= 2``.
    huber_delta : float, default 1.0
        Threshold of the Huber loss, ``> 0`` (used only with ``loss="huber"``).
    n_classes : int, optional
        ``C >= 2``, the classes of ``loss="multinomial"`` (when ``init`` is not given; with
        ``init`` it must equal ``init.shape[1]``). Not allowed with the other losses.
    n_samples : array_like of int, shape (m,), optional
        Machines of unequal sizes: machine ``i`` uses its first ``n_samples[i]`` rows (``X``,
        ``y`` padded to ``n`` rows; the padding must be finite and is ignored): ``F_i`` is the
        mean over those rows and FedAvg weights the updates by ``|D_i| / |D_c|`` as in the
        paper's Algorithm 1. Default: all ``n`` rows, equal weights.
    verbose : bool, default False
        A tqdm bar (on stderr) over the rounds, up to ``max_rounds`` (it ends there when every
        group stopped earlier).
    callback : callable, optional
        Called after every completed round as ``callback(round, groups)``, ``round`` 1-based and
        ``groups`` a list of ``(node, machines, model)``, one per group after the server step
        (active and final ones, ordered by smallest machine index; ``model`` a read-only copy of
        shape ``(d,)`` or ``(d, C)``): to follow accuracy or similarities round by round without
        changing the run.

    Returns
    -------
    BaselineResult
        ``theta`` (k', d) (``(k', d, C)`` for ``loss="multinomial"``): one model per final
        group, the groups ordered by their smallest machine index; ``labels`` (m,) the group of
        each machine; ``n_rounds`` the rounds run; ``floats_sent_per_machine = 2 p n_rounds``
        with ``p = d`` (``d C``) numbers per model (model down, update up every round; a machine
        whose group has finished sends nothing more, so this bounds its cost, see
        ``extra["active_rounds"]``). ``extra``:

        * ``"splits"``: list of ``(round, node, side_a, side_b)``, one per split, ``round`` the
          1-based round whose updates were clustered, ``node`` the split group's id in the split
          tree (0 = all machines; a split of a node creates the next two ids, ``side_a`` then
          ``side_b``), ``side_a``/``side_b`` sorted int64 global machine indices (``side_a`` holds
          the group's smallest index).
        * ``"nodes"``: (k',) tree id of each final group (row of ``theta``).
        * ``"history"``: dict of (n_rounds,) float arrays, ``"max_update_norm"`` (largest
          ``||dtheta_i||`` over the active machines) and ``"mean_update_norm"`` (largest
          ``||mean_{i in c} dtheta_i||`` over the active groups), and (n_rounds,) int array
          ``"n_active_groups"``.
        * ``"active_rounds"``: (m,) rounds each machine took part in.
        * ``"converged"``: every group is final; ``"diverged"``: the models stopped being finite
          or exceeded ``1e10`` (the run stops there).

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.baselines import cfl
    >>> mix = mlr.make_mixture(m=12, n=40, d=3, k=3, R=3.0, sigma=0.1, theta_scale="norm", rng=2)
    >>> res = cfl(mix.X, mix.y)
    >>> res.theta.shape, len(res.extra["splits"]), res.extra["converged"]
    ((3, 3), 2, True)
    >>> mlr.metrics.adjusted_rand(mix.labels, res.labels)
    1.0

    References
    ----------
    Sattler, Mueller, Samek, "Clustered Federated Learning" (NeurIPS 2019 FL workshop;
    IEEE TNNLS 2021), criteria (5), (6) and Algorithms 1, 2.
    """
    rows = ragged_rows(X, y, n_samples)  # lists of unequal sizes stay unpadded
    if rows is None:
        X, y, n_samples = check_data(X, y, n_samples)
    check_choice("loss", loss, LOSSES)
    check_scale(*((X, y) if rows is None else (rows.X, rows.y)), loss, "cfl")
    l2 = check_l2(l2)
    huber_delta = check_float("huber_delta", huber_delta, low=0.0, low_open=True)
    m, d = (X.shape[0], X.shape[2]) if rows is None else (rows.m, rows.d)
    theta0, shape = model_start(init, n_classes, loss, y if rows is None else rows.y, d)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    eps1 = check_float("eps1", eps1, low=0.0, low_open=True)
    eps2 = check_float("eps2", eps2, low=0.0, low_open=True)
    max_rounds = check_int("max_rounds", max_rounds, low=0)
    local_steps = check_int("local_steps", local_steps, low=1)
    min_group = check_int("min_group", min_group, low=2)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")

    if rows is not None:
        counts, grad = rows.counts, rows.gradient(l2, loss, huber_delta, shape)
    else:
        weights, counts = sample_weights(n_samples, m, X.shape[1])
        grad = (_squared_gradient(X, y, l2) if loss == "squared" and n_samples is None
                else loss_gradient(X, y, l2, loss, huber_delta, shape, weights))
    d = theta0.size  # numbers per model (d C for the multinomial loss): models travel flat
    # active groups: (tree id, global machine indices, model)
    active = [(0, np.arange(m, dtype=np.int64), theta0.copy())]
    final, splits = [], []
    next_id = 1
    max_norm, mean_norm, n_groups = [], [], []
    active_rounds = np.zeros(m, dtype=np.int64)
    rounds = 0
    diverged = False
    bar = iterations_bar(max_rounds, "cfl", enabled=check_bool("verbose", verbose), unit="round")
    with np.errstate(all="ignore"), bar as update:  # divergence is detected explicitly
        while active and rounds < max_rounds:
            update(rounds)
            rounds += 1
            idx_all = np.concatenate([g[1] for g in active])
            T0 = np.concatenate([np.broadcast_to(g[2], (len(g[1]), d)) for g in active])
            T = T0.copy()
            for _ in range(local_steps):
                T -= lr * grad(idx_all, T)
            delta = T - T0
            unorm = np.linalg.norm(delta, axis=1)
            if not np.all(np.isfinite(unorm)):
                rounds -= 1  # only completed rounds count
                diverged = True
                break
            active_rounds[idx_all] += 1
            max_norm.append(float(unorm.max()))
            n_groups.append(len(active))
            active, next_id, worst_mean = _server_step(active, delta, unorm, rounds, next_id,
                                                       (eps1, eps2, min_group), splits, final,
                                                       counts)
            mean_norm.append(worst_mean)
            if callback is not None:
                callback(rounds, _snapshot(active, final, shape))
            big = max((np.abs(g[2]).max() for g in active), default=0.0)
            if not np.isfinite(big) or big > _numerics.DIVERGE_THRESHOLD:
                diverged = True
                break
    history = {"max_update_norm": np.array(max_norm, dtype=np.float64),
               "mean_update_norm": np.array(mean_norm, dtype=np.float64),
               "n_active_groups": np.array(n_groups, dtype=np.int64)}
    return _result(final, active, m, shape, rounds, splits, history, active_rounds, diverged)


def _snapshot(active, final, shape):
    """Every group as ``(node, machines, model)`` (read-only copies), by smallest machine index."""
    out = []
    for node, members, theta in sorted(final + active, key=lambda g: int(g[1].min())):
        model, machines = theta.reshape(shape).copy(), members.copy()
        model.flags.writeable = machines.flags.writeable = False
        out.append((node, machines, model))
    return out


def _squared_gradient(X, y, l2):
    """``grad(idx, T)``: the gradients of the machines ``idx`` at their models ``T`` (rows), via
    per-machine Gram matrices when cheaper: ``grad F_i = 2 (A_i t - b_i) + l2 t``."""
    m, n, d = X.shape
    use_gram = d <= n
    if use_gram:
        A = np.einsum("ind,ine->ide", X, X) / n
        b = np.einsum("ind,in->id", X, y) / n

    def grad(idx, T):
        if use_gram:
            G = 2.0 * (np.einsum("ide,ie->id", A[idx], T) - b[idx])
        else:
            Xi = X[idx]
            res = np.einsum("ind,id->in", Xi, T) - y[idx]
            G = (2.0 / n) * np.einsum("ind,in->id", Xi, res)
        if l2 != 0.0:
            G += l2 * T
        return G

    return grad


def _server_step(active, delta, unorm, rounds, next_id, thresholds, splits, final, counts):
    """Algorithms 1-2's server step for every active group, from this round's updates ``delta``
    (rows in the groups' order): FedAvg (weights ``|D_i| / |D_c|`` from the machines' sample
    ``counts``), then train on, split by rule (6), or finish. Appends to ``splits`` and ``final``;
    returns ``(new active groups, next tree id, largest mean update)``."""
    eps1, eps2, min_group = thresholds
    new_active = []
    worst_mean = 0.0
    start = 0
    for node, members, theta in active:
        stop = start + len(members)
        D = delta[start:stop]
        dmax = float(unorm[start:stop].max())
        start = stop
        sizes = counts[members]
        mean = D.mean(axis=0) if np.all(sizes == sizes[0]) else (sizes / sizes.sum()) @ D
        mnorm = float(np.linalg.norm(mean))
        worst_mean = max(worst_mean, mnorm)
        theta = theta + mean
        if mnorm >= eps1:
            new_active.append((node, members, theta))
        elif dmax >= eps2 and len(members) >= min_group:
            pa, pb = split_by_similarity(cosine_similarities(D))
            sa, sb = members[pa], members[pb]
            if sb.min() < sa.min():
                sa, sb = sb, sa
            sa, sb = np.sort(sa), np.sort(sb)
            splits.append((rounds, node, sa, sb))
            new_active.append((next_id, sa, theta.copy()))
            new_active.append((next_id + 1, sb, theta.copy()))
            next_id += 2
        else:
            final.append((node, members, theta))
    return new_active, next_id, worst_mean


def _result(final, active, m, shape, rounds, splits, history, active_rounds, diverged):
    """The :class:`BaselineResult` of a CFL run: the final and still active groups, ordered by
    their smallest machine index; models of ``shape`` each."""
    groups = sorted(final + active, key=lambda g: int(g[1].min()))
    d = int(np.prod(shape))
    theta = np.array([g[2] for g in groups], dtype=np.float64).reshape((len(groups),) + shape)
    labels = np.empty(m, dtype=np.int64)
    for j, g in enumerate(groups):
        labels[g[1]] = j
    warn_diverged("cfl", diverged)
    extra = {"splits": splits, "nodes": np.array([g[0] for g in groups], dtype=np.int64),
             "history": history, "active_rounds": active_rounds,
             "converged": (not active) and not diverged, "diverged": diverged}
    return BaselineResult(theta=theta, labels=labels, n_rounds=rounds,
                          floats_sent_per_machine=float(2 * d * rounds), extra=extra)
