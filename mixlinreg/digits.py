"""Rotated digits: an analogue of Table 1 of the IFCA paper on scikit-learn's 8 x 8 digits.

This is an *analogue* of the paper's rotated-MNIST experiment (Ghosh et al. 2020, Section 6.2,
Table 1), **not MNIST**: the images are the 1797 8 x 8 handwritten digits shipped with
scikit-learn (:func:`sklearn.datasets.load_digits`, pixel values 0-16 scaled to [0, 1]), and the
model is a multinomial logistic regression with an l2 term (strongly convex) instead of the
paper's neural network.

Setting
-------
* The images are split once (per seed) into a test pool of ``n_test`` images and a train pool
  holding the rest.
* Machine ``i`` belongs to cluster ``i % 4`` (round-robin, not contiguous blocks) and holds ``n``
  images drawn without replacement from the train pool, independently of the other machines (two
  machines may share an image), each rotated by ``90 * cluster`` degrees (``np.rot90`` of the
  8 x 8 image).
* Cluster ``r`` has a test set: the ``n_test`` test-pool images rotated by ``90 * r`` degrees.

Model: ``W`` of shape ``(d + 1, C)`` = ``(65, 10)``, the last row a bias (features get a trailing
1). Loss of a machine: mean cross-entropy over its images + ``(l2 / 2) ||W||^2`` (the bias row is
penalized too, so the loss is ``l2``-strongly convex).

Methods
-------
IFCA and global run on the package's kernel, :func:`mixlinreg.ifca` with ``loss="multinomial"``
(models ``(D, C)``, the loss above); the local and one-shot baselines' gradient descent is batched
NumPy on the same loss (:func:`softmax_loss_grad`, built on :mod:`mixlinreg.losses`):

* ``ifca``: IFCA, Algorithm 2 of the paper with option II (``averaging="model"``): each round
  every machine picks the model of lowest training loss (ties: lowest index), runs ``tau`` local
  gradient steps from it, and the center replaces each model by the average of the local models
  of the machines that chose it (a model no machine chose keeps its value). ``n_init`` random
  restarts from a small Gaussian initialization, run together as the runs of one call; the
  restart with the lowest final training loss (among those that did not diverge) is kept.
* ``global``: one model trained by FedAvg with the same ``tau`` local steps and ``rounds`` (IFCA
  with ``k = 1``).
* ``local``: each machine alone, ``rounds * tau`` gradient steps on its own ``n`` images (one
  machine, one model, option I: plain gradient descent).
* ``one-shot``: the local models, flattened, clustered by :class:`sklearn.cluster.KMeans` with
  ``k = 4``; one model per found cluster trained by gradient descent on the pooled images of its
  machines (``rounds * tau`` steps).

Evaluation: a test image of rotation ``r`` is classified by the model the method would use for a
machine of cluster ``r`` (IFCA and one-shot: the model / cluster chosen by most machines of true
cluster ``r``, ties to the lowest index; global: the one model); local: accuracy of each machine
on its own cluster's test set, averaged over the machines. ``ari`` is the adjusted Rand index of
the machines' clustering against the true rotations (IFCA, one-shot; NaN for global and local).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from ._validation import as_generator, check_bool, check_float, check_int
from .ifca import ifca, kept_run
from .losses import multinomial_derivative, multinomial_value
from .metrics import adjusted_rand

__all__ = [
    "K_ROTATIONS",
    "RotatedDigits",
    "DigitsIFCAResult",
    "make_rotated_digits",
    "softmax_loss_grad",
    "ifca_model_averaging",
    "train_local",
    "run_digits",
    "summarize_digits",
    "digits_markdown",
    "plot_recovery",
    "write_digits_outputs",
]

#: Number of rotations (0, 90, 180, 270 degrees), hence of true clusters.
K_ROTATIONS = 4
N_CLASSES = 10
ANALOGUE_SENTENCE = "an analogue of the paper's Table 1 on scikit-learn's 8x8 digits, not MNIST"
METHODS = ("ifca", "global", "local", "one-shot")

def defaults(preset="paper", path=None) -> dict:
    """The parameters of a preset of ``mixlinreg/configs/digits.toml`` (``seeds``, ``m``, ``n``, ...)."""
    from . import config
    from .config import Spec

    pos = dict(low=1)
    schema = {"params": {"seeds": Spec("int", **pos), "m": Spec("int", **pos),
                         "n": Spec("int", **pos), "n_test": Spec("int", **pos),
                         "k": Spec("int", **pos), "tau": Spec("int", **pos),
                         "rounds": Spec("int", **pos), "lr": Spec("float", low=0, open="low"),
                         "l2": Spec("float", low=0), "n_init": Spec("int", **pos),
                         "init_scale": Spec("float", low=0, open="low")}}
    return dict(config.load(path or "digits", preset, kind="digits", schema=schema)["params"])


@dataclass(frozen=True)
class RotatedDigits:
    """Machines holding rotated digits.

    Attributes
    ----------
    X : ndarray, shape (m, n, 65)
        Features of each machine: 64 pixels in [0, 1] and a trailing 1 (bias).
    y : ndarray of int, shape (m, n)
        Digit labels 0-9.
    labels : ndarray of int, shape (m,)
        True cluster (rotation index, ``i % 4``) of each machine.
    X_test : ndarray, shape (4, n_test, 65)
        Test features of each rotation (the same test-pool images rotated by 90 * r degrees).
    y_test : ndarray of int, shape (4, n_test)
    """

    X: np.ndarray
    y: np.ndarray
    labels: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def _with_bias(images):
    flat = images.reshape(*images.shape[:-2], 64)
    return np.concatenate([flat, np.ones(flat.shape[:-1] + (1,))], axis=-1)


def rotate(images, r):
    """Rotate 8 x 8 images (shape ``(..., 8, 8)``) by ``90 * r`` degrees counter-clockwise."""
    return np.rot90(images, k=r, axes=(-2, -1))


def make_rotated_digits(m, n, n_test=300, rng=None):
    """Rotated-digits machines; see the module docstring for the protocol.

    Parameters
    ----------
    m : int >= 1
        Machines; machine ``i`` is in cluster ``i % 4``.
    n : int >= 1
        Training images per machine, at most the train-pool size ``1797 - n_test``.
    n_test : int >= 1
        Images in the test pool (each cluster's test set is this pool rotated), at most 1796.
    rng : None, int, SeedSequence or Generator
        Fixes the train/test split and every machine's draw.

    Returns
    -------
    RotatedDigits
    """
    from sklearn.datasets import load_digits

    m = check_int("m", m, low=1)
    n_test = check_int("n_test", n_test, low=1, high=1796)
    n = check_int("n", n, low=1, high=1797 - n_test)
    gen = as_generator(rng)
    digits = load_digits()
    images = digits.images / 16.0
    target = digits.target.astype(np.int64)
    perm = gen.permutation(len(images))
    test_idx, pool_idx = perm[:n_test], perm[n_test:]
    labels = np.arange(m) % K_ROTATIONS
    idx = np.stack([gen.choice(pool_idx, size=n, replace=False) for _ in range(m)])
    imgs = images[idx]  # (m, n, 8, 8)
    for r in range(1, K_ROTATIONS):
        imgs[labels == r] = rotate(imgs[labels == r], r)
    X = _with_bias(imgs)
    X_test = _with_bias(np.stack([rotate(images[test_idx], r) for r in range(K_ROTATIONS)]))
    y_test = np.broadcast_to(target[test_idx], (K_ROTATIONS, n_test)).copy()
    return RotatedDigits(X=X, y=target[idx], labels=labels, X_test=X_test, y_test=y_test)


def softmax_loss_grad(W, X, y, l2, *, grad=True):
    """Mean cross-entropy + ``(l2/2) ||W||^2`` and its gradient, batched, from the package's
    multinomial loss (:func:`mixlinreg.losses.multinomial_value`, the kernel's formula on arrays).

    Parameters
    ----------
    W : ndarray, shape (..., D, C)
    X : ndarray, shape (..., n, D), broadcasting with ``W``'s leading dimensions
    y : ndarray of int, shape (..., n)
    l2 : float >= 0

    Returns
    -------
    loss : ndarray, shape (...)
    grad : ndarray, shape (..., D, C), only when ``grad=True``
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
    assign : ndarray of int, shape (m,)
        Model of lowest training loss for each machine under the final models.
    loss : float
        Final training loss: mean over machines of the loss of the chosen model.
    ari_trace : ndarray, shape (rounds + 1,)
        ARI of the assignments against ``labels`` at the start of each round and after the last.
    loss_trace : ndarray, shape (rounds + 1,)
        Training loss at the same points.
    restart : int
        Index of the kept restart.
    diverged : bool
        The kept restart diverged: it is kept only when no restart ended without diverging and
        with a finite loss (:func:`mixlinreg.ifca.kept_run`; a ``ConvergenceWarning`` says so).
    """

    W: np.ndarray
    assign: np.ndarray
    loss: float
    ari_trace: np.ndarray
    loss_trace: np.ndarray
    restart: int
    diverged: bool


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
                         init_scale=0.01, labels=None, rng=None):
    """IFCA with model averaging (Algorithm 2, option II) for the multinomial logistic model.

    All ``n_init`` restarts are the runs of one :func:`mixlinreg.ifca` call (``loss="multinomial",
    averaging="model", local_steps=tau, n_iter=rounds``). See the module docstring.

    Parameters
    ----------
    X : ndarray, shape (m, n, D)
    y : ndarray of int, shape (m, n), labels in 0..9
    k : int >= 1
        Number of models.
    tau : int >= 1
        Local gradient steps per round.
    rounds : int >= 1
    lr : float > 0
        Local step size.
    l2 : float >= 0
    n_init : int >= 1
        Random restarts (``W ~ N(0, init_scale^2)``); the one of lowest final training loss is kept.
    init_scale : float >= 0
    labels : array of int, shape (m,), optional
        True clusters; when given, the ARI of each round's assignments is recorded (else NaN).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    DigitsIFCAResult
    """
    X, y = _check_machines(X, y)
    m, n, D = X.shape
    k = check_int("k", k, low=1)
    tau = check_int("tau", tau, low=1)
    rounds = check_int("rounds", rounds, low=1)
    n_init = check_int("n_init", n_init, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    l2 = check_float("l2", l2, low=0.0)
    init_scale = check_float("init_scale", init_scale, low=0.0)
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (m,):
            raise ValueError(f"labels must have shape ({m},), got {labels.shape}")
    gen = as_generator(rng)
    init = init_scale * gen.standard_normal((n_init, k, D, N_CLASSES))
    res = ifca(X, y.astype(np.float64), init, lr, n_iter=rounds, loss="multinomial", l2=l2,
               averaging="model", local_steps=tau, trace=True)
    best = kept_run(res, f"use a smaller lr (got {lr})")
    ari = np.full(rounds + 1, np.nan)
    if labels is not None:
        ari = np.array([adjusted_rand(labels, a) for a in res.trace.labels[:, best]])
    return DigitsIFCAResult(W=res.theta[best], assign=res.labels[best], loss=float(res.loss[best]),
                            ari_trace=ari, loss_trace=res.trace.loss[:, best], restart=best,
                            diverged=bool(res.diverged[best]))


def train_local(X, y, *, steps, lr=0.5, l2=1e-3):
    """Gradient descent from zero on each machine's own data, all machines at once.

    ``X`` (..., n, D), ``y`` (..., n) -> ``W`` (..., D, C). Plain gradient descent, not IFCA: it is
    batched over machines with :func:`softmax_loss_grad` (the package's multinomial loss): one
    :func:`mixlinreg.ifca` call per machine measured about 20x slower at these sizes (2.7 s against
    0.13 s for 24 machines of 30 images and 100 steps), its per-call and per-iteration overhead
    dominating such small problems.
    """
    W = np.zeros(X.shape[:-2] + (X.shape[-1], N_CLASSES))
    for _ in range(steps):
        _, g = softmax_loss_grad(W, X, y, l2)
        W -= lr * g
    return W


def _accuracy(W, X, y):
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(y, np.argmax(X @ W, axis=-1)))


def _majority(assign, labels, r):
    return int(np.argmax(np.bincount(assign[labels == r])))


def _cluster_accuracy(models, assign, data):
    """Accuracy when rotation r is served by the model most machines of cluster r chose."""
    accs = [_accuracy(models[_majority(assign, data.labels, r)], data.X_test[r], data.y_test[r])
            for r in range(K_ROTATIONS) if np.any(data.labels == r)]
    return float(np.mean(accs))


def _one_seed(data, ss, *, k, tau, rounds, lr, l2, n_init, init_scale):
    from sklearn.cluster import KMeans

    s_ifca, s_glob, s_km = ss.spawn(3)
    rows = []
    t0 = time.perf_counter()
    res = ifca_model_averaging(data.X, data.y, k, tau=tau, rounds=rounds, lr=lr, l2=l2,
                               n_init=n_init, init_scale=init_scale, labels=data.labels,
                               rng=s_ifca)
    rows.append(("ifca", _cluster_accuracy(res.W, res.assign, data),
                 adjusted_rand(data.labels, res.assign), time.perf_counter() - t0))
    t0 = time.perf_counter()
    glob = ifca_model_averaging(data.X, data.y, 1, tau=tau, rounds=rounds, lr=lr, l2=l2,
                                n_init=1, init_scale=0.0, rng=s_glob)
    acc = float(np.mean([_accuracy(glob.W[0], data.X_test[r], data.y_test[r])
                         for r in range(K_ROTATIONS) if np.any(data.labels == r)]))
    rows.append(("global", acc, np.nan, time.perf_counter() - t0))
    t0 = time.perf_counter()
    W_loc = train_local(data.X, data.y, steps=rounds * tau, lr=lr, l2=l2)
    acc = float(np.mean([_accuracy(W_loc[i], data.X_test[r], data.y_test[r])
                         for i, r in enumerate(data.labels)]))
    t_local = time.perf_counter() - t0
    rows.append(("local", acc, np.nan, t_local))
    t0 = time.perf_counter()
    km_seed = int(s_km.generate_state(1)[0])
    km = KMeans(n_clusters=k, n_init=10, random_state=km_seed).fit(W_loc.reshape(len(W_loc), -1))
    km_labels = km.labels_.astype(np.int64)
    models = np.zeros((k, data.X.shape[-1], N_CLASSES))
    for j in range(k):
        sel = km_labels == j
        if np.any(sel):
            Xj = data.X[sel].reshape(-1, data.X.shape[-1])
            models[j] = train_local(Xj, data.y[sel].ravel(), steps=rounds * tau, lr=lr, l2=l2)
    rows.append(("one-shot", _cluster_accuracy(models, km_labels, data),
                 adjusted_rand(data.labels, km_labels), t_local + time.perf_counter() - t0))
    return rows, res


def run_digits(seeds=None, *, m=None, n=None, n_test=None, k=None, tau=None, rounds=None, lr=None,
               l2=None, n_init=None, init_scale=None, seed=0, store=None, progress=False,
               preset="paper"):
    """Table 1 analogue on rotated 8 x 8 digits, all methods over ``seeds`` data seeds.

    Parameters left at ``None`` take the values of ``preset`` in ``mixlinreg/configs/digits.toml``
    (:func:`defaults`). The seeds run on the one runner (:func:`mixlinreg.runner.run`, one unit per
    seed, :func:`workload`): ``store`` is a folder for resumable results (one checksummed unit per
    seed, written as soon as it is finished; a rerun reads them back; a store of the layout before
    the runner is migrated, not recomputed); ``None`` keeps nothing.
    ``progress=True`` shows a tqdm bar over the seeds.

    Returns
    -------
    rows : pandas.DataFrame
        Columns ``seed, method, test_accuracy, ari, seconds`` (one row per seed and method).
    recovery : pandas.DataFrame
        Columns ``seed, round, ari, train_loss``: IFCA's kept restart at the start of each round
        (round ``rounds`` = after the last).
    """
    import pandas as pd

    cfg = defaults(preset)
    if seeds is None:
        seeds = cfg["seeds"]
    cfg.pop("seeds")
    for name, v in dict(m=m, n=n, n_test=n_test, k=k, tau=tau, rounds=rounds, lr=lr, l2=l2,
                        n_init=n_init, init_scale=init_scale).items():
        if v is not None:
            cfg[name] = v
    seeds = check_int("seeds", seeds, low=1)
    progress = check_bool("progress", progress)
    check_int("k", cfg["k"], low=1, high=check_int("m", cfg["m"], low=1))
    from .runner import run

    wl = workload(cfg, seeds, seed, preset)
    if store is not None:
        _migrate_former_store(wl, store, cfg, seed)
    frames, _ = run(wl, store, progress=progress, desc="digits")
    rows, recovery = _split(pd.concat([frames[u] for u in wl.units], ignore_index=True))
    rows.attrs["config"] = cfg
    return rows, recovery


_ROWS = ["seed", "method", "test_accuracy", "ari", "seconds"]
_RECOVERY = ["seed", "round", "ari", "train_loss"]


def workload(cfg, seeds, seed=0, preset="paper"):
    """``digits`` as a :class:`~mixlinreg.runner.Workload`: one unit ``seed<s>`` per data seed
    ``s``, seeded by ``SeedSequence(seed, spawn_key=(s,))`` (= ``SeedSequence(seed).spawn(seeds)[s]``);
    a unit's frame holds the methods' rows (``part = "rows"``) and IFCA's recovery trace
    (``part = "recovery"``). The store key holds the root seed and the parameters."""
    from .runner import Workload

    return Workload(name="digits", preset=preset, key={"seed": int(seed), "config": cfg},
                    units=tuple(f"seed{s:04d}" for s in range(seeds)),
                    compute=partial(_digits_unit, dict(cfg)), seed=int(seed),
                    seed_key=_seed_key, to_csv_kw=dict(float_format="%.17g"))


def _seed_key(unit):
    return (int(unit[len("seed"):]),)


def _digits_unit(cfg, unit, ss):
    import pandas as pd

    s = _seed_key(unit)[0]
    s_data, s_run = ss.spawn(2)
    data = make_rotated_digits(cfg["m"], cfg["n"], cfg["n_test"], rng=s_data)
    out, res = _one_seed(data, s_run, **{key: cfg[key] for key in
                                         ("k", "tau", "rounds", "lr", "l2", "n_init", "init_scale")})
    rows = pd.DataFrame([dict(part="rows", seed=s, method=meth, test_accuracy=acc, ari=a,
                              seconds=sec) for meth, acc, a, sec in out])
    rec = pd.DataFrame([dict(part="recovery", seed=s, round=t, ari=res.ari_trace[t],
                             train_loss=res.loss_trace[t]) for t in range(len(res.ari_trace))])
    return pd.concat([rows, rec], ignore_index=True)[["part"] + _ROWS + ["round", "train_loss"]]


def _split(frame):
    """``(rows, recovery)`` of the units' frames (the types the tables have always had)."""
    rows = frame[frame["part"] == "rows"][_ROWS].reset_index(drop=True)
    rec = frame[frame["part"] == "recovery"][_RECOVERY].reset_index(drop=True)
    rows["seed"] = rows["seed"].astype("int64")
    rows["method"] = rows["method"].astype(str)
    rec["seed"] = rec["seed"].astype("int64")
    rec["round"] = rec["round"].astype("int64")
    return rows, rec


def _migrate_former_store(wl, store, cfg, seed):
    """Units of the store layout before the one runner (``digits-<hash>``, two files per seed:
    ``seed<s>_rows`` and ``seed<s>_recovery``) become the runner's units, without recomputing;
    the former folder is then renamed ``<name>.migrated``."""
    import hashlib
    import json
    from pathlib import Path

    import pandas as pd

    from ._paths import inside
    from .harness.store import UnitStore

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


def digits_markdown(rows, cfg=None):
    """The markdown report: the table of mean +- std test accuracy over seeds, and the protocol."""
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
    md = digits_markdown(rows)
    atomic_write(paths[2], md)
    save_png(plot_recovery(recovery), paths[3], dpi=110)
    return md, paths
