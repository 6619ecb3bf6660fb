"""Rotated digits: an analogue of Table 1 of the IFCA paper on scikit-learn's 8 x 8 digits.

This is an *analogue* of the paper's rotated-MNIST experiment (Ghosh et al. 2020, Section 6.2,
Table 1), **not MNIST**: the images are the 1797 8 x 8 handwritten digits shipped with
scikit-learn (:func:`sklearn.datasets.load_digits`, pixel values 0-16 scaled to [0, 1]), and the
model is a multinomial logistic regression with an l2 term (strongly convex) instead of the
paper's neural network.

Setting
-------
* The images are split once (per seed) into a test pool of ``n_test`` images and a train pool.
* Machine ``i`` belongs to cluster ``i % 4`` (round-robin) and holds ``n`` images drawn without
  replacement from the train pool, independently of the other machines (two machines may share
  an image), each rotated by ``90 * cluster`` degrees (``np.rot90`` of the 8 x 8 image).
* Cluster ``r`` has a test set: the ``n_test`` test-pool images rotated by ``90 * r`` degrees.

Model: ``W`` of shape ``(65, 10)``, the last row a bias (features get a trailing 1). Loss of a
machine: mean cross-entropy over its images + ``(l2 / 2) ||W||^2`` (bias included: ``l2``-strongly
convex).

Methods
-------
IFCA and global run on the package's kernel, :func:`mixlinreg.ifca` with ``loss="multinomial"``
(models ``(D, C)``, the loss above); the local and one-shot baselines' gradient descent is batched
NumPy on the same loss (:func:`softmax_loss_grad`, built on :mod:`mixlinreg.losses`):

* ``ifca``: Algorithm 2 of the paper with option II (``averaging="model"``): each round every
  machine picks the model of lowest training loss (ties: lowest index), runs ``tau`` local
  gradient steps from it, and each model becomes the average of the local models of the machines
  that chose it (or keeps its value). ``n_init`` random restarts from a small Gaussian init, the
  runs of one call; the one of lowest final training loss (not diverged) is kept.
* ``global``: FedAvg with the same ``tau`` and ``rounds`` (IFCA with ``k = 1``).
* ``local``: each machine alone, ``rounds * tau`` gradient steps on its own ``n`` images.
* ``one-shot``: the local models clustered by :class:`sklearn.cluster.KMeans` (``k = 4``); one
  model per found cluster, ``rounds * tau`` gradient steps on the pooled images of its machines.

Evaluation: a test image of rotation ``r`` is classified by the model the method would use for a
machine of cluster ``r`` (IFCA and one-shot: the model / cluster chosen by most machines of true
cluster ``r``, ties to the lowest index; global: the one model); local: accuracy of each machine
on its own cluster's test set, averaged over the machines. ``ari`` is the adjusted Rand index of
the machines' clustering against the true rotations (IFCA, one-shot; NaN for global and local).

The paper's Table 1 protocol, as options whose defaults give the setting above: ``rotations``
(degrees, ``k`` of them); ``layout="partition"`` (each rotated train image used once: ``m / k``
machines per rotation, each rotation's copy of a pool of ``N = m n / k`` images randomly
partitioned into them; each rotation's shuffled test pool cut into ``n_test / n`` test machines);
``test_rule="lowest-loss"`` (every test machine takes the model of lowest mean cross-entropy on its
images, :func:`lowest_loss_accuracy`); ``participation`` (:func:`participation_masks`) and
``decay`` (step ``lr decay^t`` in round ``t``; local: per ``tau`` steps) for IFCA and global. The
cluster-identity accuracy per round (:func:`identity_accuracy`) is the recovery's ``identity``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from ._numerics import DIVERGE_THRESHOLD
from ._validation import (as_generator, check_bool, check_choice, check_float, check_int,
                          check_participation_fraction, resolve_diverge_threshold)
from .ifca import IFCAResult, IFCATrace, ifca, kept_run
from .losses import multinomial_derivative, multinomial_value
from .metrics import adjusted_rand

__all__ = ["K_ROTATIONS", "RotatedDigits", "DigitsIFCAResult", "make_rotated_digits",
           "softmax_loss_grad", "ifca_model_averaging", "participation_masks", "identity_accuracy",
           "lowest_loss_accuracy", "run_methods", "train_local", "run_digits", "summarize_digits",
           "digits_markdown", "plot_recovery", "write_digits_outputs"]

K_ROTATIONS = 4  #: rotations of the default setting (0, 90, 180, 270 degrees): true clusters
N_CLASSES = 10
ANALOGUE_SENTENCE = "an analogue of the paper's Table 1 on scikit-learn's 8x8 digits, not MNIST"
METHODS = ("ifca", "global", "local", "one-shot")
LAYOUTS = ("independent", "partition")
TEST_RULES = ("majority", "lowest-loss")
#: the protocol options and their defaults (the setting of the module docstring's first part)
PROTOCOL = {"layout": "independent", "test_rule": "majority", "participation": 1.0, "decay": 1.0,
            "rotations": [0, 90, 180, 270]}
N_IMAGES = 1797  # sklearn's digits

def defaults(preset="paper", path=None) -> dict:
    """The parameters of a preset of ``mixlinreg/configs/digits.toml`` (``seeds``, ``m``, ``n``, ...)."""
    from . import config
    from .config import Spec

    pos, opt = dict(low=1), dict(required=False)  # the protocol options: PROTOCOL's defaults
    schema = {"params": {**{key: Spec("int", **pos) for key in ("seeds", "m", "n", "n_test", "k",
                                                                "tau", "rounds", "n_init")},
                         "lr": Spec("float", low=0, open="low"), "l2": Spec("float", low=0),
                         "init_scale": Spec("float", low=0, open="low"),
                         "layout": Spec("str", choices=LAYOUTS, default=LAYOUTS[0], **opt),
                         "test_rule": Spec("str", choices=TEST_RULES, default=TEST_RULES[0], **opt),
                         **{key: Spec("float", low=0, high=1, open="low", default=1.0, **opt)
                            for key in ("participation", "decay")},
                         "rotations": Spec("list[int]", low=0, high=270, default=[0, 90, 180, 270],
                                           **opt)}}
    return dict(config.load(path or "digits", preset, kind="digits", schema=schema)["params"])


@dataclass(frozen=True)
class RotatedDigits:
    """Machines holding rotated digits.

    Attributes
    ----------
    X : ndarray, shape (m, n, 65), each machine's 64 pixels in [0, 1] and a trailing 1 (bias)
    y : ndarray of int, shape (m, n), digit labels 0-9
    labels : ndarray of int, shape (m,), each machine's true cluster (rotation index, ``i % k``)
    X_test : ndarray, shape (k, n_test, 65)
        Test features of each rotation (the test-pool images rotated; shuffled per rotation with
        ``layout="partition"``, whose test machines are the blocks of ``n``).
    y_test : ndarray of int, shape (k, n_test)
    rotations : tuple of int, the degrees of each cluster's rotation (``k = len(rotations)``)
    """

    X: np.ndarray
    y: np.ndarray
    labels: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    rotations: tuple = (0, 90, 180, 270)


def _with_bias(images):
    flat = images.reshape(*images.shape[:-2], 64)
    return np.concatenate([flat, np.ones(flat.shape[:-1] + (1,))], axis=-1)


def rotate(images, r):
    """Rotate 8 x 8 images (shape ``(..., 8, 8)``) by ``90 * r`` degrees counter-clockwise."""
    return np.rot90(images, k=r, axes=(-2, -1))


def _quarters(rotations):
    r = [check_int("rotations", v, low=0, high=270) for v in rotations]
    if not r or len(set(r)) != len(r) or any(v % 90 for v in r):
        raise ValueError(f"rotations must be distinct degrees among 0, 90, 180, 270, got {rotations}")
    return tuple(r)


def _check_partition(m, n, n_test, k):
    if m % k or m // k * n > N_IMAGES - n_test or n_test % n:
        raise ValueError(f"layout='partition' needs m a multiple of the {k} rotations, m n / {k} "
                         f"<= {N_IMAGES} - n_test training images and n_test a multiple of n, got "
                         f"m={m}, n={n}, n_test={n_test}")
    return k


def make_rotated_digits(m, n, n_test=300, rng=None, *, layout="independent",
                        rotations=(0, 90, 180, 270)):
    """Rotated-digits machines; see the module docstring (``layout``, ``rotations``: its end).

    ``m >= 1`` machines (machine ``i`` in cluster ``i % k``, ``k = len(rotations)``) of ``n >= 1``
    training images (at most the train pool, ``1797 - n_test``); ``n_test >= 1`` images in the test
    pool (each cluster's test set is this pool rotated), at most 1796; ``rng`` (None, int,
    SeedSequence or Generator) fixes the split and every draw. Returns a :class:`RotatedDigits`.
    """
    from sklearn.datasets import load_digits

    m = check_int("m", m, low=1)
    n_test = check_int("n_test", n_test, low=1, high=N_IMAGES - 1)
    n = check_int("n", n, low=1, high=N_IMAGES - n_test)
    rot, layout = _quarters(rotations), check_choice("layout", layout, LAYOUTS)
    k = _check_partition(m, n, n_test, len(rot)) if layout == "partition" else len(rot)
    gen = as_generator(rng)
    digits = load_digits()
    images = digits.images / 16.0
    target = digits.target.astype(np.int64)
    perm = gen.permutation(len(images))
    test_idx, pool_idx = perm[:n_test], perm[n_test:]
    labels = np.arange(m) % k
    if layout == "partition":  # each rotation's copy of the pool, partitioned into its machines
        idx = np.empty((m, n), dtype=np.int64)
        for c in range(k):
            idx[labels == c] = gen.permutation(pool_idx[:m // k * n]).reshape(-1, n)
        tests = np.stack([gen.permutation(test_idx) for _ in range(k)])
    else:
        idx = np.stack([gen.choice(pool_idx, size=n, replace=False) for _ in range(m)])
        tests = np.broadcast_to(test_idx, (k, n_test))
    imgs = images[idx]  # (m, n, 8, 8)
    for c, deg in enumerate(rot):
        if deg:
            imgs[labels == c] = rotate(imgs[labels == c], deg // 90)
    X = _with_bias(imgs)
    X_test = _with_bias(np.stack([rotate(images[t], deg // 90) for t, deg in zip(tests, rot)]))
    return RotatedDigits(X=X, y=target[idx], labels=labels, X_test=X_test,
                         y_test=target[tests].copy(), rotations=rot)


def softmax_loss_grad(W, X, y, l2, *, grad=True):
    """Mean cross-entropy + ``(l2/2) ||W||^2`` and its gradient, batched, from the package's
    multinomial loss (:func:`mixlinreg.losses.multinomial_value`, the kernel's formula on arrays).

    ``W`` (..., D, C), ``X`` (..., n, D) broadcasting with ``W``'s leading dimensions, ``y`` (..., n)
    of int, ``l2 >= 0``. Returns ``loss`` (...) and, when ``grad=True``, the gradient (..., D, C).
    """
    grad = check_bool("grad", grad)
    Z = X @ W  # (..., n, C)
    y = np.broadcast_to(y, Z.shape[:-1])
    n = X.shape[-2]
    loss = multinomial_value(Z, y).mean(axis=-1) + 0.5 * l2 * np.sum(W * W, axis=(-2, -1))
    if not grad:
        return loss
    g = np.swapaxes(X, -1, -2) @ multinomial_derivative(Z, y) / n + l2 * W
    return loss, g


@dataclass(frozen=True)
class DigitsIFCAResult:
    """Result of :func:`ifca_model_averaging` (the kept restart).

    Attributes
    ----------
    W : ndarray, shape (k, D, C)
    assign : ndarray of int, shape (m,), each machine's model of lowest training loss at the end
    loss : float, the final training loss (mean over machines of the chosen model's loss)
    ari_trace, identity_trace : ndarray, shape (rounds + 1,)
        ARI and cluster-identity accuracy (:func:`identity_accuracy`) of the assignments against
        ``labels`` at the start of each round and after the last (NaN without ``labels``).
    loss_trace : ndarray, shape (rounds + 1,), the training loss at the same points
    restart : int, the index of the kept restart
    diverged : bool
        The kept restart diverged: kept only when every restart diverged or ended with a loss that
        is not finite (:func:`mixlinreg.ifca.kept_run`; a ``ConvergenceWarning`` says so).
    """

    W: np.ndarray
    assign: np.ndarray
    loss: float
    ari_trace: np.ndarray
    loss_trace: np.ndarray
    restart: int
    diverged: bool
    identity_trace: np.ndarray | None = None


def participation_masks(m, fraction, rounds, runs=1, rng=None):
    """``(rounds, runs, m)`` booleans: in each round and run ``max(1, round(fraction m))`` of the
    ``m`` machines, drawn without replacement (uniform ranks) from ``rng``."""
    s = max(1, int(round(check_participation_fraction(fraction, "participation_masks") * m)))
    top = np.argsort(as_generator(rng).random((rounds, runs, m)), axis=-1)[..., :s]
    mask = np.zeros((rounds, runs, m), dtype=bool)
    np.put_along_axis(mask, top, True, axis=-1)
    return mask


def identity_accuracy(assign, labels):
    """Fraction of machines whose model is their cluster's under the best one-to-one matching of
    models to clusters (:func:`scipy.optimize.linear_sum_assignment` on the counts)."""
    from scipy.optimize import linear_sum_assignment

    assign, labels = np.asarray(assign), np.asarray(labels)
    counts = np.zeros((assign.max() + 1, labels.max() + 1))
    np.add.at(counts, (assign, labels), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / len(labels))


def _check_blocks(n_test, n):
    if n_test % check_int("n", n, low=1):
        raise ValueError(f"n_test must be a multiple of n (test machines of n images), got "
                         f"n_test={n_test}, n={n}")


def lowest_loss_accuracy(models, X_test, y_test, n):
    """The paper's test rule: every test machine (the blocks of ``n`` images of ``X_test[r]``,
    shape (k, n_test, D)) takes the model of ``models`` (K, D, C) of lowest mean cross-entropy on
    its images (ties: the lowest index; a NaN loss never wins). Returns the accuracy averaged over
    the test machines and the chosen model of each, shape (k, n_test / n)."""
    k, n_test, D = X_test.shape
    _check_blocks(n_test, n)
    Xm, ym = X_test.reshape(-1, n, D), y_test.reshape(-1, n)
    Z = np.einsum("tnd,jdc->tjnc", Xm, models)  # (test machines, K, n, C)
    loss = multinomial_value(Z, np.broadcast_to(ym[:, None], Z.shape[:-1])).mean(axis=-1)
    choice = np.argmin(np.where(np.isnan(loss), np.inf, loss), axis=1)
    pred = np.argmax(Z[np.arange(len(Xm)), choice], axis=-1)
    return float(np.mean(pred == ym)), choice.reshape(k, -1)


def _check_machines(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (m, n, D), got {X.shape}")
    if y.shape != X.shape[:2] or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be an integer array of shape {X.shape[:2]}, got {y.dtype} "
                         f"array of shape {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must contain only finite values")
    if y.size and (y.min() < 0 or y.max() >= N_CLASSES):
        raise ValueError(f"y must hold labels in [0, {N_CLASSES - 1}]")
    return X, y.astype(np.int64)


def ifca_model_averaging(X, y, k, *, tau=5, rounds=100, lr=0.5, l2=1e-3, n_init=5,
                         init_scale=0.01, labels=None, rng=None, participation=1.0, decay=1.0,
                         chunk=None):
    """IFCA with model averaging (Algorithm 2, option II) for the multinomial logistic model.

    All ``n_init`` restarts are the runs of one :func:`mixlinreg.ifca` call (``loss="multinomial",
    averaging="model", local_steps=tau, n_iter=rounds``). See the module docstring. With
    ``participation < 1`` (machines per round, :func:`participation_masks` from ``rng`` after the
    initial models), ``decay < 1`` (step ``lr decay^t`` in round ``t``) or ``chunk`` given, the
    rounds run as kernel calls of ``chunk`` rounds each (default: 1 when ``decay < 1``, else all),
    each from the models the last left (a diverged restart stops there).

    Parameters
    ----------
    X : ndarray, shape (m, n, D)
    y : ndarray of int, shape (m, n), labels in 0..9
    k, tau, rounds : int >= 1
        Number of models, local gradient steps per round, rounds.
    lr : float > 0, the local step size; l2 : float >= 0
    n_init : int >= 1
        Random restarts (``W ~ N(0, init_scale^2)``); the one of lowest final training loss is kept.
    init_scale : float >= 0
    labels : array of int, shape (m,), optional
        True clusters; when given, the ARI and the cluster-identity accuracy of each round's
        assignments are recorded (else NaN).
    rng : None, int, SeedSequence or Generator
    participation, decay : float in (0, 1]; chunk : int >= 1 or None
        ``participation`` is the fraction of the machines per round (:func:`mixlinreg.ifca`'s
        counts them; an int here is refused, except ``1``, read as ``1.0`` with a
        ``FutureWarning``).

    Returns a :class:`DigitsIFCAResult`.
    """
    X, y = _check_machines(X, y)
    m, n, D = X.shape
    k, tau, rounds, n_init = (check_int(name, v, low=1) for name, v in (
        ("k", k), ("tau", tau), ("rounds", rounds), ("n_init", n_init)))
    lr = check_float("lr", lr, low=0.0, low_open=True)
    l2 = check_float("l2", l2, low=0.0)
    init_scale = check_float("init_scale", init_scale, low=0.0)
    if labels is not None and np.shape(labels) != (m,):
        raise ValueError(f"labels must have shape ({m},), got {np.shape(labels)}")
    participation = check_participation_fraction(participation, "digits")
    decay = check_float("decay", decay, low=0, low_open=True, high=1)
    gen = as_generator(rng)
    init = init_scale * gen.standard_normal((n_init, k, D, N_CLASSES))
    kw = dict(loss="multinomial", l2=l2, averaging="model", local_steps=tau, trace=True)
    if participation == 1.0 and decay == 1.0 and chunk is None:
        res = ifca(X, y.astype(np.float64), init, lr, n_iter=rounds, **kw)
    else:
        masks = None if participation == 1.0 else participation_masks(m, participation, rounds,
                                                                      n_init, gen)
        res = _ifca_chunks(X, y.astype(np.float64), init, lr, decay, rounds, masks, chunk, kw)
    best = kept_run(res, f"use a smaller lr (got {lr})")
    ari, ident = np.full(rounds + 1, np.nan), np.full(rounds + 1, np.nan)
    if labels is not None:
        ari = np.array([adjusted_rand(labels, a) for a in res.trace.labels[:, best]])
        ident = np.array([identity_accuracy(a, labels) for a in res.trace.labels[:, best]])
    return DigitsIFCAResult(W=res.theta[best], assign=res.labels[best], loss=float(res.loss[best]),
                            ari_trace=ari, loss_trace=res.trace.loss[:, best], restart=best,
                            diverged=bool(res.diverged[best]), identity_trace=ident)


def _ifca_chunks(X, y, init, lr, decay, rounds, masks, chunk, kw):
    """:func:`mixlinreg.ifca` over ``rounds`` in calls of ``chunk`` rounds with the step of the
    chunk's first round and the masks' rows, as one :class:`~mixlinreg.ifca.IFCAResult`."""
    chunk = check_int("chunk", (1 if decay < 1 else rounds) if chunk is None else chunk, low=1,
                      high=1 if decay < 1 else None)  # decay < 1: the step changes every round
    R, m = len(init), X.shape[0]
    thresh = resolve_diverge_threshold("auto", X, y, init, DIVERGE_THRESHOLD)  # fixed for all calls
    theta, div = init.copy(), np.zeros(R, dtype=bool)
    labels, loss = np.zeros((rounds + 1, R, m), dtype=np.int64), np.zeros((rounds + 1, R))
    alive, t = np.arange(R), 0
    while t < rounds and alive.size:
        c = min(chunk, rounds - t)
        part = None if masks is None else np.ascontiguousarray(masks[t:t + c][:, alive])
        res = ifca(X, y, theta[alive], lr * decay ** t, n_iter=c, participation=part,
                   diverge_threshold=thresh, **kw)
        theta[alive] = res.theta
        labels[t:t + c + 1, alive], loss[t:t + c + 1, alive] = res.trace.labels, res.trace.loss
        dead = alive[res.diverged]  # frozen: their last evaluation repeats, as in one call
        labels[t + c + 1:, dead], loss[t + c + 1:, dead] = labels[t + c, dead], loss[t + c, dead]
        div[dead], alive, t = True, alive[~res.diverged], t + c
    return IFCAResult(theta=theta, labels=labels[-1], loss=loss[-1], diverged=div,
                      converged=np.zeros(R, dtype=bool), n_iter=np.full(R, rounds),
                      method="chunks", trace=IFCATrace(labels=labels, loss=loss, dist=None))


def train_local(X, y, *, steps, lr=0.5, l2=1e-3, decay=1.0, every=1):
    """Gradient descent from zero on each machine's own data, all machines at once (step
    ``lr decay^(s // every)`` at step ``s``).

    ``X`` (..., n, D), ``y`` (..., n) -> ``W`` (..., D, C). Plain gradient descent batched over
    machines with :func:`softmax_loss_grad`: one :func:`mixlinreg.ifca` call per machine measured
    about 20x slower at these sizes (2.7 s against 0.13 s for 24 machines of 30 images, 100 steps).
    """
    W = np.zeros(X.shape[:-2] + (X.shape[-1], N_CLASSES))
    for s in range(steps):
        _, g = softmax_loss_grad(W, X, y, l2)
        W -= lr * decay ** (s // every) * g
    return W


def _accuracy(W, X, y):
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(y, np.argmax(X @ W, axis=-1)))


def _majority(assign, labels, r):
    return int(np.argmax(np.bincount(assign[labels == r])))


def _cluster_accuracy(models, assign, data, rule="majority"):
    """Accuracy when rotation r is served by the model most machines of cluster r chose
    (``rule="lowest-loss"``: :func:`lowest_loss_accuracy`, test machines of ``n`` images)."""
    if rule == "lowest-loss":
        return lowest_loss_accuracy(models, data.X_test, data.y_test, data.X.shape[1])[0]
    accs = [_accuracy(models[_majority(assign, data.labels, r)], data.X_test[r], data.y_test[r])
            for r in range(len(data.X_test)) if np.any(data.labels == r)]
    return float(np.mean(accs))


def _one_seed(data, ss, **kw):
    return run_methods(data, ss, **kw)


def run_methods(data, ss, *, k, tau, rounds, lr, l2, n_init, init_scale, methods=METHODS,
                test_rule="majority", participation=1.0, decay=1.0):
    """``([(method, test accuracy, ARI, seconds), ...], IFCA's DigitsIFCAResult or None)`` on
    ``data`` for ``methods`` (in METHODS order; one-shot needs local), ``ss`` a SeedSequence."""
    from sklearn.cluster import KMeans

    s_ifca, s_glob, s_km = ss.spawn(3)
    rule = check_choice("test_rule", test_rule, TEST_RULES)
    kw = dict(tau=tau, rounds=rounds, lr=lr, l2=l2, participation=participation, decay=decay)
    rows, res, t0 = [], None, time.perf_counter()
    if "ifca" in methods:
        res = ifca_model_averaging(data.X, data.y, k, n_init=n_init, init_scale=init_scale,
                                   labels=data.labels, rng=s_ifca, **kw)
        rows.append(("ifca", _cluster_accuracy(res.W, res.assign, data, rule),
                     adjusted_rand(data.labels, res.assign), time.perf_counter() - t0))
    t0 = time.perf_counter()
    if "global" in methods:
        glob = ifca_model_averaging(data.X, data.y, 1, n_init=1, init_scale=0.0, rng=s_glob, **kw)
        rows.append(("global", _cluster_accuracy(glob.W, glob.assign, data, rule), np.nan,
                     time.perf_counter() - t0))
    if "local" not in methods:
        return rows, res
    t0 = time.perf_counter()
    W_loc = train_local(data.X, data.y, steps=rounds * tau, lr=lr, l2=l2, decay=decay, every=tau)
    acc = float(np.mean([_accuracy(W_loc[i], data.X_test[r], data.y_test[r])
                         for i, r in enumerate(data.labels)]))
    rows.append(("local", acc, np.nan, time.perf_counter() - t0))
    if "one-shot" not in methods:
        return rows, res
    t_local, t0 = rows[-1][-1], time.perf_counter()
    km_seed = int(s_km.generate_state(1)[0])
    km = KMeans(n_clusters=k, n_init=10, random_state=km_seed).fit(W_loc.reshape(len(W_loc), -1))
    km_labels = km.labels_.astype(np.int64)
    models = np.zeros((k, data.X.shape[-1], N_CLASSES))
    for j in range(k):
        sel = km_labels == j
        if np.any(sel):
            Xj = data.X[sel].reshape(-1, data.X.shape[-1])
            models[j] = train_local(Xj, data.y[sel].ravel(), steps=rounds * tau, lr=lr, l2=l2)
    rows.append(("one-shot", _cluster_accuracy(models, km_labels, data, rule),
                 adjusted_rand(data.labels, km_labels), t_local + time.perf_counter() - t0))
    return rows, res


def run_digits(seeds=None, *, m=None, n=None, n_test=None, k=None, tau=None, rounds=None, lr=None,
               l2=None, n_init=None, init_scale=None, seed=0, store=None, progress=False,
               preset="paper", layout=None, test_rule=None, participation=None, decay=None,
               rotations=None):
    """Table 1 analogue on rotated 8 x 8 digits, all methods over ``seeds`` data seeds.

    Parameters left at ``None`` take the values of ``preset`` in ``mixlinreg/configs/digits.toml``
    (:func:`defaults`); ``layout``, ``test_rule``, ``participation``, ``decay`` and ``rotations``
    are the Table 1 protocol options (module docstring; ``k`` is ``len(rotations)`` when only
    ``rotations`` is given). The seeds run on the one runner (:func:`mixlinreg.runner.run`, one unit
    per seed, :func:`workload`): ``store`` is a folder for resumable results (one checksummed unit
    per seed, written when finished, read back by a rerun; a store of the layout before the runner
    is migrated, not recomputed); ``None`` keeps nothing. ``progress=True`` shows a tqdm bar.

    Returns
    -------
    rows : pandas.DataFrame
        Columns ``seed, method, test_accuracy, ari, seconds`` (one row per seed and method).
    recovery : pandas.DataFrame
        Columns ``seed, round, ari, train_loss``: IFCA's kept restart at the start of each round
        (round ``rounds`` = after the last), and ``identity`` (cluster-identity accuracy) when a
        protocol option differs from its default (``rows.attrs["config"]`` then holds it).
    """
    import pandas as pd

    cfg = defaults(preset)
    if seeds is None:
        seeds = cfg["seeds"]
    cfg.pop("seeds")
    for name, v in dict(m=m, n=n, n_test=n_test, k=k, tau=tau, rounds=rounds, lr=lr, l2=l2,
                        n_init=n_init, init_scale=init_scale, layout=layout, test_rule=test_rule,
                        participation=participation, decay=decay, rotations=rotations).items():
        if v is not None:
            cfg[name] = list(_quarters(v)) if name == "rotations" else v
    if rotations is not None and k is None:
        cfg["k"] = len(cfg["rotations"])
    cfg = {key: v for key, v in cfg.items() if PROTOCOL.get(key, v) != v or key not in PROTOCOL}
    seeds = check_int("seeds", seeds, low=1)
    progress = check_bool("progress", progress)
    m_ = check_int("m", cfg["m"], low=1)
    k_ = check_int("k", cfg["k"], low=1)
    if k_ > m_:  # say where k came from: the user may have typed only m
        given = ("k" if k is not None else "rotations" if rotations is not None
                 else f"the {preset} preset's k")
        raise ValueError(f"m must be at least k = {k_} ({given}: one machine per cluster at "
                         f"least), got m = {m_}; give m >= {k_}, or fewer clusters (k, or "
                         f"rotations)")
    _check_protocol(cfg)
    from .runner import run

    wl = workload(cfg, seeds, seed, preset)
    if store is not None:
        _migrate_former_store(wl, store, cfg, seed)
    frames, _ = run(wl, store, progress=progress, desc="digits")
    rows, recovery = _split(pd.concat([frames[u] for u in wl.units], ignore_index=True), cfg)
    rows.attrs["config"] = cfg
    return rows, recovery


def _check_protocol(cfg):
    """The protocol options of ``cfg`` (defaults where absent) checked before any work."""
    p = {**PROTOCOL, **cfg}
    _ = [check_float(key, p[key], low=0, low_open=True, high=1) for key in ("participation", "decay")]
    k = len(_quarters(p["rotations"]))
    if check_choice("layout", p["layout"], LAYOUTS) == "partition":
        _check_partition(cfg["m"], cfg["n"], cfg["n_test"], k)
    if check_choice("test_rule", p["test_rule"], TEST_RULES) == "lowest-loss":
        _check_blocks(cfg["n_test"], cfg["n"])


_ROWS = ["seed", "method", "test_accuracy", "ari", "seconds"]
_RECOVERY = ["seed", "round", "ari", "train_loss"]


def workload(cfg, seeds, seed=0, preset="paper"):
    """``digits`` as a :class:`~mixlinreg.runner.Workload`: one unit ``seed<s>`` per data seed
    ``s``, seeded by ``SeedSequence(seed, spawn_key=(s,))`` (= ``SeedSequence(seed).spawn(seeds)[s]``);
    a unit's frame holds the methods' rows (``part = "rows"``) and IFCA's recovery trace
    (``part = "recovery"``). The store key holds the root seed and the parameters."""
    from .runner import Numbered, Workload

    return Workload(name="digits", preset=preset, key={"seed": int(seed), "config": cfg},
                    units=Numbered(["seed"], seeds),
                    compute=partial(_digits_unit, dict(cfg)), seed=int(seed),
                    seed_key=_seed_key, to_csv_kw=dict(float_format="%.17g"))


def _seed_key(unit):
    return (int(unit[len("seed"):]),)


def _digits_unit(cfg, unit, ss):
    import pandas as pd

    s = _seed_key(unit)[0]
    s_data, s_run = ss.spawn(2)
    p = {**PROTOCOL, **cfg}
    data = make_rotated_digits(cfg["m"], cfg["n"], cfg["n_test"], rng=s_data, layout=p["layout"],
                               rotations=p["rotations"])
    out, res = _one_seed(data, s_run, **{key: p[key] for key in (
        "k", "tau", "rounds", "lr", "l2", "n_init", "init_scale", "test_rule", "participation",
        "decay")})
    rows = pd.DataFrame([dict(part="rows", seed=s, method=meth, test_accuracy=acc, ari=a,
                              seconds=sec) for meth, acc, a, sec in out])
    rec = pd.DataFrame([dict(part="recovery", seed=s, round=t, ari=res.ari_trace[t],
                             train_loss=res.loss_trace[t], identity=res.identity_trace[t])
                        for t in range(len(res.ari_trace))])
    return pd.concat([rows, rec], ignore_index=True)[["part"] + _ROWS + ["round", "train_loss",
                                                                        "identity"]]


def _split(frame, cfg=None):
    """``(rows, recovery)`` of the units' frames, typed (``identity`` if ``cfg`` has options)."""
    extra = ["identity"] if set(PROTOCOL) & set(cfg or ()) else []
    rows = frame[frame["part"] == "rows"][_ROWS].reset_index(drop=True)
    rec = frame[frame["part"] == "recovery"].reindex(columns=_RECOVERY + extra).reset_index(drop=True)
    rows = rows.astype({"seed": "int64", "method": str})
    return rows, rec.astype({"seed": "int64", "round": "int64"})


def _migrate_former_store(wl, store, cfg, seed):
    """Units of the store layout before the one runner (``digits-<hash>``, two files per seed:
    ``seed<s>_rows`` and ``seed<s>_recovery``) become the runner's units, without recomputing;
    the former folder is then renamed ``<name>.migrated``."""
    import hashlib
    import json
    from pathlib import Path

    import pandas as pd

    from ._paths import inside
    from .runner.store import UnitStore

    h = hashlib.sha256(json.dumps({"seed": int(seed), "config": cfg}, sort_keys=True,
                                  default=str).encode()).hexdigest()
    old_dir = Path(store) / f"digits-{h[:12]}"
    if not old_dir.is_dir():
        return
    old = UnitStore(old_dir, tag=h)
    new = wl.store(store)
    for unit in wl.units:
        parts = [f"{unit}_rows", f"{unit}_recovery"]
        if new.is_done(unit, warn=False) or not all(old.is_done(p) for p in parts):
            continue
        rows = old.read(parts[0]).assign(part="rows")
        rec = old.read(parts[1]).assign(part="recovery")
        frame = pd.concat([rows, rec], ignore_index=True)[["part"] + _ROWS + ["round", "train_loss"]]
        if new.claim(unit):
            try:
                new.write(unit, frame, **wl.to_csv_kw)
            finally:
                new.release(unit)
    inside(store, old_dir).rename(old_dir.with_name(old_dir.name + ".migrated"))


def summarize_digits(rows):
    """Per method (METHODS order): mean and std (ddof 1) of test accuracy, mean ARI and seconds."""
    g = rows.groupby("method", sort=False)
    out = g.agg(seeds=("seed", "nunique"), acc_mean=("test_accuracy", "mean"),
                acc_std=("test_accuracy", "std"), ari_mean=("ari", "mean"),
                seconds=("seconds", "mean")).reset_index()
    order = {mm: i for i, mm in enumerate(METHODS)}
    return out.sort_values("method", key=lambda s: s.map(order)).reset_index(drop=True)


def digits_markdown(rows, cfg=None, recovery=None):
    """The markdown report: the table of mean +- std test accuracy over seeds, and the protocol
    (with the protocol options that differ from their defaults, and IFCA's cluster identity)."""
    cfg = cfg if cfg is not None else rows.attrs.get("config", defaults())
    summ = summarize_digits(rows)
    lines = ["# Rotated digits (Table 1 analogue)", "",
             f"This is {ANALOGUE_SENTENCE}: the 1797 8 x 8 images of "
             "`sklearn.datasets.load_digits` rotated by 0/90/180/270 degrees into k = 4 clusters "
             "of machines, multinomial logistic regression with an l2 term instead of the paper's "
             "neural network; the numbers are not comparable with the paper's.", "",
             f"Setting: m = {cfg['m']} machines (machine i in cluster i % 4), n = {cfg['n']} "
             f"training images each (drawn independently per machine from a train pool, so "
             "two machines may share an image), "
             f"{cfg['n_test']} test images per rotation; l2 = {cfg['l2']}, step {cfg['lr']}, "
             f"tau = {cfg['tau']} local steps, {cfg['rounds']} rounds; IFCA with k = {cfg['k']} "
             f"and {cfg['n_init']} restarts (N(0, {cfg['init_scale']}^2) init, lowest training "
             "loss kept); global = FedAvg with the same tau and rounds; local = "
             f"{cfg['rounds'] * cfg['tau']} gradient steps per machine; one-shot = KMeans (k = 4) "
             "on the flattened local models, then one pooled model per found cluster.", "",
             f"Test accuracy, mean +- std over {rows['seed'].nunique()} seeds; ARI of the "
             "machines' clustering against the true rotations (final round).", "",
             "| method | test accuracy (%) | ARI | seconds / seed |",
             "|---|---|---|---|"]
    for _, r in summ.iterrows():
        ari = "-" if not np.isfinite(r["ari_mean"]) else f"{r['ari_mean']:.3f}"
        std = r["acc_std"] if np.isfinite(r["acc_std"]) else 0.0
        lines.append(f"| {r['method']} | {100 * r['acc_mean']:.2f} +- {100 * std:.2f} | {ari} | "
                     f"{r['seconds']:.2f} |")
    changed = {key: cfg[key] for key in PROTOCOL if key in cfg}
    if changed:
        lines[6:6] = ["Table 1 protocol options, replacing the setting above where they differ "
                      "(`mixlinreg/digits.py`): " + ", ".join(f"{key} = {v}" for key, v in
                                                             changed.items()) + ".", ""]
    if recovery is not None and "identity" in recovery:
        first = recovery[recovery["identity"] == 1].groupby("seed")["round"].min()
        lines += ["", f"IFCA's cluster-identity accuracy reached 1 in {len(first)} of "
                  f"{recovery['seed'].nunique()} seeds" + (f", first at round {first.median():g} "
                                                           "(median)." if len(first) else ".")]
    return "\n".join(lines) + "\n"


def plot_recovery(recovery):
    """IFCA cluster recovery (ARI) over the rounds: one thin line per seed, the mean in black."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    for s, g in recovery.groupby("seed"):
        ax.plot(g["round"], g["ari"], lw=0.8, alpha=0.6, label=f"seed {s}")
    mean = recovery.groupby("round")["ari"].mean()
    ax.plot(mean.index, mean.values, color="black", lw=2, label="mean")
    ax.set_xlabel("round")
    ax.set_ylabel("ARI vs true rotations")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("IFCA (model averaging) on rotated 8x8 digits\n(analogue of Table 1, not MNIST)",
                 fontsize=9)
    return fig


def write_digits_outputs(rows, recovery, out_dir="figures"):
    """Write ``digits.csv``, ``digits_recovery.csv``, ``digits.md`` and ``digits_recovery.png``."""
    from pathlib import Path

    from ._paths import atomic_write, save_png

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "digits.csv", out / "digits_recovery.csv", out / "digits.md",
             out / "digits_recovery.png"]
    atomic_write(paths[0], rows.to_csv(index=False, float_format="%.6g"))
    atomic_write(paths[1], recovery.to_csv(index=False, float_format="%.6g"))
    atomic_write(paths[2], md := digits_markdown(rows, recovery=recovery))
    save_png(plot_recovery(recovery), paths[3], dpi=110)
    return md, paths
