"""Li et al.'s Synthetic(alpha, beta) federated data (FedProx), with devices in clusters.

The generator of Li, Sahu, Zaheer, Sanjabi, Talwalkar and Smith, "Federated Optimization in
Heterogeneous Networks" (MLSys 2020, arXiv 1812.06127), Section 5.1: on device ``k`` the label of
``x`` in R^60 is ``y = argmax softmax(W_k x + b_k)`` over 10 classes, with ``W_k`` (10 x 60) and
``b_k`` (10) drawn ``N(u_k, 1)`` entrywise, ``u_k ~ N(0, alpha)``; ``x ~ N(v_k, Sigma)``,
``Sigma`` diagonal with ``Sigma_jj = j^-1.2``, the entries of ``v_k`` ``N(B_k, 1)`` and
``B_k ~ N(0, beta)``. ``alpha`` sets how much the local models differ, ``beta`` how much the local
data differ. The number of samples per device follows a power law; in the authors' public
generator it is ``int(lognormal(4, 2)) + 50``, each device's samples split 90% / 10% into
training and test, and ``N(0, alpha)`` means standard deviation ``alpha`` (read there, stated
here as facts; no code was copied).

The FPFC abstract (Yu, Liu, Sun, Wang, AAAI 2023) uses "m = 100 devices which form L = 4
clusters" with data "following the settings in (Li et al. 2020)", without saying how the clusters
are formed. :func:`make_fedprox_synthetic` offers two documented choices:

* ``clusters="model"``: each cluster ``l`` draws its own ``u_l``, ``W_l``, ``b_l``, shared by
  its devices; every device draws its own ``B_k`` and ``v_k`` (the devices of a cluster share the
  labelling rule, not the distribution of ``x``);
* ``clusters="shared"``: a cluster's devices share ``W_l``, ``b_l`` and the distribution of
  ``x`` too (``B_l``, ``v_l`` drawn once per cluster): they are identically distributed.
* ``clusters="one"`` (a control, not the paper's): as ``"model"``, but every cluster uses cluster
  1's ``W``, ``b``: one labelling rule for all devices, data without the cluster structure (the
  labels ``l`` are kept).

Devices have unequal sizes: arrays are padded to the largest device (``X`` (m, n_max, d + 1)
with a bias column of ones last, ``y`` (m, n_max) class labels, the padding zero) and
``n_samples`` (m,) says how many rows each device uses, the layout of
:func:`mixlinreg.baselines.fpfc` and :func:`mixlinreg.baselines.cfl` with ``n_samples=``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import as_generator, check_array, check_choice, check_float, check_int

__all__ = ["FedSynthetic", "make_fedprox_synthetic", "device_accuracy", "CLUSTER_CHOICES"]

#: how the L clusters are formed (see the module docstring)
CLUSTER_CHOICES = ("model", "shared", "one")


@dataclass(frozen=True, eq=False)
class FedSynthetic:
    """One draw of :func:`make_fedprox_synthetic`.

    Attributes
    ----------
    X, y, n_samples : ndarray
        Training data: ``X`` (m, n_max, d + 1) features with a bias column (ones) last, ``y``
        (m, n_max) labels in ``{0, ..., C - 1}`` (float64, as the baselines take them), both
        padded with zeros past ``n_samples[i]`` rows; ``n_samples`` (m,) int64.
    X_test, y_test, n_test : ndarray
        The devices' test splits, padded the same way.
    labels : ndarray of int64, shape (m,)
        True cluster of every device.
    theta_star : ndarray, shape (L, d + 1, C)
        Each cluster's labelling rule as one matrix: ``W_l^T`` stacked over ``b_l``, so that
        ``y = argmax(x @ theta_star[l])`` for a row ``x`` of ``X`` (bias last).
    means : ndarray, shape (m, d)
        ``v_k``: the mean of device ``k``'s features.
    """

    X: np.ndarray
    y: np.ndarray
    n_samples: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_test: np.ndarray
    labels: np.ndarray
    theta_star: np.ndarray
    means: np.ndarray

    @property
    def m(self) -> int:
        return self.X.shape[0]


def _checked(m, L, alpha, beta, d, n_classes, clusters, test_fraction, sizes):
    """The arguments of :func:`make_fedprox_synthetic`, each refused with a ``ValueError``
    naming it when nonsensical."""
    m = check_int("m", m, low=1)
    L = check_int("L", L, low=1)
    if L > m:
        raise ValueError(f"L must be in [1, m] = [1, {m}] (every cluster needs a device), "
                         f"got L={L}")
    alpha = check_float("alpha", alpha, low=0.0)
    beta = check_float("beta", beta, low=0.0)
    d = check_int("d", d, low=1)
    n_classes = check_int("n_classes", n_classes, low=2)
    check_choice("clusters", clusters, CLUSTER_CHOICES)
    test_fraction = check_float("test_fraction", test_fraction, low=0.0, high=1.0,
                                low_open=True, high_open=True)
    size_mean, size_sd, size_min, size_cap = sizes
    size_mean = check_float("size_mean", size_mean)
    size_sd = check_float("size_sd", size_sd, low=0.0)
    size_min = check_int("size_min", size_min, low=2)
    if size_cap is not None:
        size_cap = check_int("size_cap", size_cap, low=2)
        if size_cap < size_min:
            raise ValueError(f"size_cap must be at least size_min = {size_min} (or None), got "
                             f"size_cap={size_cap}")
    return m, L, alpha, beta, d, n_classes, test_fraction, (size_mean, size_sd, size_min,
                                                            size_cap)


def _fits(m, d, largest, total, what, lower):
    """Refuse (``UnitMemoryError``, naming the parameters) a draw whose arrays cannot fit: the
    padded train and test arrays (``m x largest x (d + 1)`` float64, with their labels) and one
    device's draw, against the memory available here."""
    from ._memory import UnitMemoryError, available_bytes, format_bytes

    need = 8.0 * m * float(largest) * (d + 2) + 8.0 * m * d + 8.0 * float(total) / max(m, 1) * (d + 1)
    room = available_bytes()
    if not np.isfinite(need) or need > 2.0**62 or (room is not None and need > room):
        have = "" if room is None else f", and {format_bytes(room)} are available"
        raise UnitMemoryError(
            f"make_fedprox_synthetic: {what} need about "
            f"{format_bytes(need) if np.isfinite(need) and need < 2.0**80 else 'more memory than any machine has'} "
            f"for m = {m} devices with d = {d} features{have}: lower {lower}")


def make_fedprox_synthetic(m=100, L=4, *, alpha=1.0, beta=1.0, d=60, n_classes=10,
                           clusters="model", test_fraction=0.1, size_mean=4.0, size_sd=2.0,
                           size_min=50, size_cap=None, rng=None) -> FedSynthetic:
    r"""Synthetic(alpha, beta) of Li et al. (FedProx) with ``m`` devices in ``L`` clusters.

    Draw order, all from the one generator ``as_generator(rng)``:

    1. the clusters: ``labels = permutation(arange(m) % L)`` (sizes ``m // L`` or one more, in
       random order);
    2. per cluster ``l``: ``u_l ~ N(0, alpha^2)``, ``W_l`` (C x d) and ``b_l`` (C) entrywise
       ``N(u_l, 1)``; with ``clusters="shared"`` also ``B_l ~ N(0, beta^2)`` and ``v_l`` (d)
       entrywise ``N(B_l, 1)``;
    3. per device ``k`` (``clusters="model"``): ``B_k ~ N(0, beta^2)``, ``v_k`` entrywise
       ``N(B_k, 1)``; with ``"shared"``, ``v_k = v_{labels[k]}``;
    4. the sizes: ``n_k = min(int(exp(N(size_mean, size_sd^2))) + size_min, size_cap)`` (the
       authors' ``int(lognormal(4, 2)) + 50`` by default; ``size_cap=None``: no cap);
    5. per device: ``x = v_k + Sigma^(1/2) z`` with ``z`` standard normal (n_k x d),
       ``Sigma_jj = j^-1.2``; ``y = argmax_c (W_l x + b_l)_c`` (softmax is monotone); the first
       ``int((1 - test_fraction) n_k)`` rows (at least 1, at most ``n_k - 1``) train, the rest
       test (the authors' 90% / 10% by default).

    Parameters
    ----------
    m : int, default 100
        Devices, ``>= L``.
    L : int, default 4
        Clusters, ``>= 1``.
    alpha, beta : float, default 1.0
        Standard deviations of ``u`` and ``B`` (``>= 0``): Synthetic(alpha, beta);
        Synthetic(1, 1) by default.
    d : int, default 60
        Features (a bias column is appended: rows have ``d + 1`` entries).
    n_classes : int, default 10
        Classes ``C >= 2``.
    clusters : {"model", "shared", "one"}, default "model"
        How the clusters are formed (module docstring).
    test_fraction : float in (0, 1), default 0.1
        Share of each device's samples held out for testing.
    size_mean, size_sd : float, default 4.0 and 2.0
        Mean and standard deviation of ``log`` of the power-law part of the sizes (``size_sd >= 0``).
    size_min : int, default 50
        Added to every size, ``>= 2``.
    size_cap : int or None, default None
        Largest number of samples of a device (before the split), ``>= size_min``: the
        lognormal(4, 2) tail reaches thousands (its 99th percentile is about 5800), and the padded
        arrays grow with the largest device.
    rng : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    FedSynthetic

    Examples
    --------
    >>> data = make_fedprox_synthetic(m=8, L=2, size_cap=120, rng=0)
    >>> data.X.shape[0], data.X.shape[2], data.theta_star.shape
    (8, 61, (2, 61, 10))
    >>> bool(np.all(data.X[:, :, -1][np.arange(data.X.shape[1]) < data.n_samples[:, None]] == 1))
    True
    """
    m, L, alpha, beta, d, C, test_fraction, (size_mean, size_sd, size_min, size_cap) = _checked(
        m, L, alpha, beta, d, n_classes, clusters, test_fraction,
        (size_mean, size_sd, size_min, size_cap))
    _fits(m, d, size_min, size_min, "the smallest sizes (size_min each)", "m, d or size_min")
    gen = as_generator(rng)
    labels = gen.permutation(np.arange(m) % L).astype(np.int64)
    W = np.empty((L, C, d))
    b = np.empty((L, C))
    v_cluster = np.empty((L, d))
    for l in range(L):
        u = gen.normal(0.0, alpha)
        W[l] = gen.normal(u, 1.0, size=(C, d))
        b[l] = gen.normal(u, 1.0, size=C)
        if clusters == "shared":
            v_cluster[l] = gen.normal(gen.normal(0.0, beta), 1.0, size=d)
    if clusters == "one":  # the draws of "model", then one rule for every cluster
        W[1:], b[1:] = W[0], b[0]
    if clusters == "shared":
        means = v_cluster[labels]
    else:
        means = np.stack([gen.normal(gen.normal(0.0, beta), 1.0, size=d) for _ in range(m)])
    log_sizes = gen.normal(size_mean, size_sd, size=m)
    big = float(np.exp(min(float(log_sizes.max()), 700.0))) + size_min
    if size_cap is not None:
        big = min(big, float(size_cap))
    _fits(m, d, big, float(np.minimum(np.exp(np.minimum(log_sizes, 700.0)) + size_min,
                                      size_cap or np.inf).sum()),
          f"the sizes drawn (the largest device has {big:.3g} samples)",
          "size_mean, size_sd or m, or set size_cap")
    sizes = np.exp(log_sizes).astype(np.int64) + size_min
    if size_cap is not None:
        sizes = np.minimum(sizes, size_cap)
    n_train = np.clip(((1.0 - test_fraction) * sizes).astype(np.int64), 1, sizes - 1)
    n_test = sizes - n_train
    theta_star = np.concatenate([W.transpose(0, 2, 1), b[:, None, :]], axis=1)  # (L, d + 1, C)
    sd = np.arange(1, d + 1) ** -0.6  # Sigma_jj^(1/2) = (j^-1.2)^(1/2)
    Xtr = np.zeros((m, int(n_train.max()), d + 1))
    ytr = np.zeros((m, int(n_train.max())))
    Xte = np.zeros((m, int(n_test.max()), d + 1))
    yte = np.zeros((m, int(n_test.max())))
    for k in range(m):
        x = means[k] + gen.standard_normal((sizes[k], d)) * sd
        x = np.concatenate([x, np.ones((sizes[k], 1))], axis=1)
        y = np.argmax(x @ theta_star[labels[k]], axis=1)
        t = n_train[k]
        Xtr[k, :t], ytr[k, :t] = x[:t], y[:t]
        Xte[k, :sizes[k] - t], yte[k, :sizes[k] - t] = x[t:], y[t:]
    return FedSynthetic(X=Xtr, y=ytr, n_samples=n_train, X_test=Xte, y_test=yte, n_test=n_test,
                        labels=labels, theta_star=theta_star, means=means)


def device_accuracy(models, X, y, n_rows):
    """Share of each device's rows that its model classifies right, and the pooled share.

    Parameters
    ----------
    models : array_like, shape (m, D, C)
        One model per device (``argmax(x @ models[i])`` predicts).
    X : array_like, shape (m, n, D)
    y : array_like, shape (m, n)
        Class labels; rows past ``n_rows[i]`` are padding and ignored.
    n_rows : array_like of int, shape (m,)
        Rows used per device, in ``[1, n]``.

    Returns
    -------
    per_device : ndarray, shape (m,)
    pooled : float
        Right predictions over all rows of all devices (each row counts once).

    >>> W = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # device 0 predicts class 0, device 1 class 1
    >>> X = np.ones((2, 2, 1)); y = np.array([[0, 1], [1, 0]])
    >>> acc, pooled = device_accuracy(W, X, y, [2, 1])
    >>> acc.tolist(), round(pooled, 4)
    ([0.5, 1.0], 0.6667)
    """
    X = check_array("X", X, ndim=3, dtype=np.float64)
    m, n, D = X.shape
    models = check_array("models", models, ndim=3, dtype=np.float64)
    if models.shape[:2] != (m, D):
        raise ValueError(f"models must have shape ({m}, {D}, C), got {models.shape}")
    y = check_array("y", y, shape=(m, n), dtype=np.float64)
    n_rows = check_array("n_rows", n_rows, shape=(m,), dtype=np.float64)
    if np.any(n_rows != np.round(n_rows)) or np.any(n_rows < 1) or np.any(n_rows > n):
        raise ValueError(f"n_rows must hold integers in [1, {n}], got {n_rows.tolist()}")
    used = np.arange(n)[None, :] < n_rows[:, None]
    hit = (np.argmax(np.matmul(X, models), axis=2) == y) & used
    return hit.sum(axis=1) / n_rows, float(hit.sum() / n_rows.sum())
