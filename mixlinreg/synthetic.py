"""Li et al.'s Synthetic(alpha, beta) federated data (FedProx), with devices in clusters, and the
FPFC authors' synthetic data.

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

:func:`make_fpfc_synthetic` draws the different data of the FPFC authors' public code
(features ``U[0, 1)^60`` shared by all devices, logit noise, five times the sizes, a random
80% / 20% split; see its docstring for the source and the differences).

Devices have unequal sizes: arrays are padded to the largest device (``X`` (m, n_max, d + 1)
with a bias column of ones last, ``y`` (m, n_max) class labels, the padding zero) and
``n_samples`` (m,) says how many rows each device uses, the layout of
:func:`mixlinreg.baselines.fpfc` and :func:`mixlinreg.baselines.cfl` with ``n_samples=``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import as_generator, check_array, check_choice, check_float, check_int

__all__ = ["FedSynthetic", "make_fedprox_synthetic", "make_fpfc_synthetic", "device_accuracy",
           "CLUSTER_CHOICES"]

#: how the L clusters are formed (see the module docstring)
CLUSTER_CHOICES = ("model", "shared", "one")


@dataclass(frozen=True, eq=False)
class FedSynthetic:
    """One draw of :func:`make_fedprox_synthetic` or :func:`make_fpfc_synthetic`.

    Attributes
    ----------
    X, y, n_samples : ndarray
        Training data: ``X`` (m, n_max, d + 1) features with a bias column (ones) last, ``y``
        (m, n_max) labels in ``{0, ..., C - 1}`` (float64, as the baselines take them), both
        padded with zeros past ``n_samples[i]`` rows; ``n_samples`` (m,) int64. With
        ``make_fpfc_synthetic(layout="lists")``, ``X``, ``y`` (and ``X_test``, ``y_test``) are
        lists of the devices' own arrays, unpadded.
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
        return len(self.X)


def _checked_layout(m, L, alpha, d, n_classes):
    """The devices, clusters, spread of the cluster models, features and classes both generators
    take, each refused with a ``ValueError`` naming it when nonsensical."""
    m = check_int("m", m, low=1)
    L = check_int("L", L, low=1)
    if L > m:
        raise ValueError(f"L must be in [1, m] = [1, {m}] (every cluster needs a device), "
                         f"got L={L}")
    alpha = check_float("alpha", alpha, low=0.0)
    d = check_int("d", d, low=1)
    n_classes = check_int("n_classes", n_classes, low=2)
    return m, L, alpha, d, n_classes


def _checked(m, L, alpha, beta, d, n_classes, clusters, test_fraction, sizes):
    """The arguments of :func:`make_fedprox_synthetic`, each refused with a ``ValueError``
    naming it when nonsensical."""
    m, L, alpha, d, n_classes = _checked_layout(m, L, alpha, d, n_classes)
    beta = check_float("beta", beta, low=0.0)
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


def _fits(m, d, largest, total, what, lower, who="make_fedprox_synthetic"):
    """Refuse (``UnitMemoryError``, naming the parameters) a draw whose arrays cannot fit: the
    padded train and test arrays (``m x largest x (d + 1)`` float64, with their labels) and one
    device's draw, against the memory available here (``who``: the generator the message
    names)."""
    from ._memory import UnitMemoryError, available_bytes, format_bytes

    need = 8.0 * m * float(largest) * (d + 2) + 8.0 * m * d + 8.0 * float(total) / max(m, 1) * (d + 1)
    room = available_bytes()
    if not np.isfinite(need) or need > 2.0**62 or (room is not None and need > room):
        have = "" if room is None else f", and {format_bytes(room)} are available"
        raise UnitMemoryError(
            f"{who}: {what} need about "
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


def _checked_fpfc(m, L, alpha, d, n_classes, logit_noise, test_fraction, sizes):
    """The arguments of :func:`make_fpfc_synthetic`, each refused with a ``ValueError`` naming
    it when nonsensical."""
    m, L, alpha, d, n_classes = _checked_layout(m, L, alpha, d, n_classes)
    logit_noise = check_float("logit_noise", logit_noise, low=0.0)
    test_fraction = check_float("test_fraction", test_fraction, low=0.0, high=1.0,
                                low_open=True, high_open=True)
    size_mean, size_sd, size_min, size_factor, size_cap = sizes
    size_mean = check_float("size_mean", size_mean)
    size_sd = check_float("size_sd", size_sd, low=0.0)
    size_min = check_int("size_min", size_min, low=1)
    size_factor = check_int("size_factor", size_factor, low=1)
    if size_min * size_factor < 2:
        raise ValueError(f"size_min * size_factor must be at least 2 (a device needs a train and "
                         f"a test row), got size_min={size_min}, size_factor={size_factor}")
    if size_cap is not None:
        size_cap = check_int("size_cap", size_cap, low=2)
        if size_cap < size_min * size_factor:
            raise ValueError(f"size_cap must be at least size_min * size_factor = "
                             f"{size_min * size_factor} (or None), got size_cap={size_cap}")
    return (m, L, alpha, d, n_classes, logit_noise, test_fraction,
            (size_mean, size_sd, size_min, size_factor, size_cap))


def make_fpfc_synthetic(m=100, L=4, *, alpha=1.0, d=60, n_classes=10, logit_noise=0.5,
                        test_fraction=0.2, size_mean=4.0, size_sd=2.0, size_min=50, size_factor=5,
                        size_cap=None, layout="padded", rng=None) -> FedSynthetic:
    r"""The synthetic data of the FPFC authors' public code: ``m`` devices in ``L`` clusters.

    The FPFC paper (Yu, Liu, Sun, Wang, AAAI 2023, "Implementation") says its synthetic data
    "follow the settings in (Li et al. 2020)"; the authors' public code (github
    xueyu-ubc/FPFC, folder ``Synthetic/``, HEAD c8ff103) draws different data, and this
    function draws those (facts read there, with the file:line of each below; no code was
    copied):

    * features ``x ~ U[0, 1)^d`` on every device, one distribution for all
      (``data/generate_synthetic_dataset.py:39-40``);
    * per cluster ``p``: ``mu_p ~ N(0, 1)``, ``W_p`` (C x d) and ``b_p`` (C) entrywise
      ``N(mu_p, 1)`` (gen:50-51);
    * ``y = argmax(W_p x + b_p + e)``, ``e ~ N(0, 0.5^2)`` on the logits (gen:60, 63-64);
    * 100 devices, device ``i`` in cluster ``i // 25`` (gen:35; ``main.py:70-71``);
    * ``(int(lognormal(4, 2)) + 50) * 5`` samples per device, no cap, and a random 80% / 20%
      train / test split of each device (gen:31, 70).

    How this differs from :func:`make_fedprox_synthetic` (Li et al.'s Synthetic(alpha, beta),
    which keeps its name): there every device draws its features from its own
    ``N(v_k, Sigma)``, ``Sigma_jj = j^-1.2`` (here all devices share ``U[0, 1)^d``, so the
    clusters differ only in their labelling rules); the labels there are the noiseless argmax
    (here logit noise makes no rule perfect: the true models' accuracy is below 1); sizes
    there are ``int(lognormal(4, 2)) + 50`` split 90% / 10% by position (here five times that,
    split 80% / 20% at random); clusters there are a random permutation of ``arange(m) % L``
    (here contiguous blocks).

    Draw order, all from the one generator ``as_generator(rng)``:

    1. the clusters (no draw): ``labels[i] = (i * L) // m``, i.e. ``i // (m / L)`` when ``L``
       divides ``m`` (the authors' ``i // 25``);
    2. per cluster ``l``: ``mu_l ~ N(0, alpha^2)``, then ``W_l`` (C x d), then ``b_l`` (C),
       entrywise ``N(mu_l, 1)``;
    3. the sizes: ``n_k = min((int(exp(N(size_mean, size_sd^2))) + size_min) * size_factor,
       size_cap)`` (``size_cap=None``: no cap); the arrays these sizes need are sized here,
       before any feature is drawn, and a draw that cannot fit in the memory available is
       refused with a ``UnitMemoryError`` naming the parameters to lower;
    4. per device ``k``: ``x`` (n_k x d) uniform on ``[0, 1)``, the noise ``e`` (n_k x C)
       ``N(0, logit_noise^2)`` independent per sample and class, ``y = argmax_c (W_l x + b_l +
       e)_c``; then a permutation of the ``n_k`` rows: its first ``n_test = round(test_fraction
       n_k)`` (at least 1, at most ``n_k - 1``) rows test, the rest train (the split is exactly
       80% / 20% when ``n_k`` is a multiple of 5, as every uncapped size is by default).

    The lognormal(4, 2) tail is heavy: its median is ``e^4 = 55`` but its 99th percentile about
    ``5800``, so at the default ``m = 100`` the largest device has from about ``10^4`` to
    several ``10^5`` samples and the padded arrays, which grow with the largest device, are
    large: ``rng=0, ..., 4`` give a training ``X`` of 0.5, 1.2, 12.7, 0.8 and 0.3 GB (the
    largest device's 10316, 24828, 261116, 15592 and 6208 training rows) for 1.2e5 to 5.0e5
    samples in all. ``size_cap`` bounds them
    (it is not the authors').

    Parameters
    ----------
    m : int, default 100
        Devices, ``>= L``.
    L : int, default 4
        Clusters, ``>= 1``.
    alpha : float, default 1.0
        Standard deviation of the clusters' means ``mu_l`` (``>= 0``; the authors' 1, the role
        of FedProx's ``alpha``).
    d : int, default 60
        Features (a bias column of ones is appended: rows have ``d + 1`` entries).
    n_classes : int, default 10
        Classes ``C >= 2``.
    logit_noise : float, default 0.5
        Standard deviation of the noise added to every logit before the argmax (``>= 0``; 0
        gives noiseless labels).
    test_fraction : float in (0, 1), default 0.2
        Share of each device's samples held out for testing, drawn at random.
    size_mean, size_sd : float, default 4.0 and 2.0
        Mean and standard deviation of ``log`` of the lognormal part of the sizes
        (``size_sd >= 0``).
    size_min : int, default 50
        Added to the lognormal part, ``>= 1``.
    size_factor : int, default 5
        The sum is multiplied by it, ``>= 1`` (``size_min * size_factor >= 2``).
    size_cap : int or None, default None
        Largest number of samples of a device (before the split), ``>= size_min * size_factor``;
        ``None`` (the authors'): no cap.
    layout : {"padded", "lists"}, default "padded"
        ``"padded"``: ``X``, ``y`` (and the test splits) as arrays padded with zeros to the
        largest device, with ``n_samples``; ``"lists"``: as lists of the m devices' own arrays,
        the same values (the same draws), which every fitting function takes unpadded
        (:mod:`mixlinreg.machines`). The sizes are heavy-tailed: at the defaults and ``rng=2``
        the padded training arrays take 12.7 GB, the devices' own rows 0.2 GB.
    rng : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    FedSynthetic
        As :func:`make_fedprox_synthetic` returns: padded ``X`` (bias last), ``y``,
        ``n_samples`` and their test splits, ``labels`` the true clusters, ``theta_star``
        (L, d + 1, C) the clusters' rules ``W_l^T`` over ``b_l`` (the noiseless labels are
        ``argmax(x @ theta_star[l])``), and ``means`` (m, d) the features' mean, 0.5 for every
        device and feature.

    Examples
    --------
    >>> data = make_fpfc_synthetic(m=8, L=2, size_cap=400, rng=0)
    >>> data.X.shape[0], data.X.shape[2], data.theta_star.shape, data.labels.tolist()
    (8, 61, (2, 61, 10), [0, 0, 0, 0, 1, 1, 1, 1])
    >>> bool(np.all((data.n_samples + data.n_test) % 5 == 0))
    True
    """
    m, L, alpha, d, C, logit_noise, test_fraction, sizes = _checked_fpfc(
        m, L, alpha, d, n_classes, logit_noise, test_fraction,
        (size_mean, size_sd, size_min, size_factor, size_cap))
    size_mean, size_sd, size_min, size_factor, size_cap = sizes
    check_choice("layout", layout, ("padded", "lists"))
    who = "make_fpfc_synthetic"
    smallest = size_min * size_factor
    _fits(m, d, smallest, smallest * m, "the smallest sizes (size_min * size_factor each)",
          "m, d, size_min or size_factor", who)
    gen = as_generator(rng)
    labels = (np.arange(m) * L) // m
    W = np.empty((L, C, d))
    b = np.empty((L, C))
    for l in range(L):
        mu = gen.normal(0.0, alpha)
        W[l] = gen.normal(mu, 1.0, size=(C, d))
        b[l] = gen.normal(mu, 1.0, size=C)
    log_sizes = gen.normal(size_mean, size_sd, size=m)
    lognormal = np.exp(np.minimum(log_sizes, 700.0))  # inf-free; 700 is far past any memory
    want = (lognormal + size_min) * size_factor
    if size_cap is not None:
        want = np.minimum(want, float(size_cap))
    _fits(m, d, float(want.max()) if layout == "padded" else float(want.sum()) / m,
          float(want.sum()),
          f"the sizes drawn (the largest device has {float(want.max()):.3g} samples)",
          "size_mean, size_sd, size_factor or m, or set size_cap"
          + (", or use layout='lists'" if layout == "padded" else ""), who)
    sizes = (lognormal.astype(np.int64) + size_min) * size_factor
    if size_cap is not None:
        sizes = np.minimum(sizes, size_cap)
    n_test = np.clip(np.round(test_fraction * sizes).astype(np.int64), 1, sizes - 1)
    n_train = sizes - n_test
    theta_star = np.concatenate([W.transpose(0, 2, 1), b[:, None, :]], axis=1)  # (L, d + 1, C)
    if layout == "padded":
        Xtr = np.zeros((m, int(n_train.max()), d + 1))
        ytr = np.zeros((m, int(n_train.max())))
        Xte = np.zeros((m, int(n_test.max()), d + 1))
        yte = np.zeros((m, int(n_test.max())))
    else:
        Xtr, ytr, Xte, yte = [None] * m, [None] * m, [None] * m, [None] * m
    for k in range(m):
        n_k = int(sizes[k])
        x = np.concatenate([gen.random((n_k, d)), np.ones((n_k, 1))], axis=1)
        noise = gen.normal(0.0, logit_noise, size=(n_k, C))
        y = np.argmax(x @ theta_star[labels[k]] + noise, axis=1)
        order = gen.permutation(n_k)
        test, train = order[:n_test[k]], order[n_test[k]:]
        if layout == "padded":
            Xtr[k, :train.size], ytr[k, :train.size] = x[train], y[train]
            Xte[k, :test.size], yte[k, :test.size] = x[test], y[test]
        else:
            Xtr[k], ytr[k] = x[train], y[train].astype(np.float64)
            Xte[k], yte[k] = x[test], y[test].astype(np.float64)
    return FedSynthetic(X=Xtr, y=ytr, n_samples=n_train, X_test=Xte, y_test=yte, n_test=n_test,
                        labels=labels.astype(np.int64), theta_star=theta_star,
                        means=np.full((m, d), 0.5))


def device_accuracy(models, X, y, n_rows=None):
    """Share of each device's rows that its model classifies right, and the pooled share.

    Parameters
    ----------
    models : array_like, shape (m, D, C)
        One model per device (``argmax(x @ models[i])`` predicts).
    X : array_like, shape (m, n, D), or a list of m arrays (n_i, D)
    y : array_like, shape (m, n), or a list of m arrays (n_i,)
        Class labels; rows past ``n_rows[i]`` are padding and ignored.
    n_rows : array_like of int, shape (m,)
        Rows used per device, in ``[1, n]``, for padded arrays; not with lists (their lengths
        are the devices' sizes).

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
    if isinstance(X, (list, tuple)):
        return _device_accuracy_lists(models, X, y, n_rows)
    if n_rows is None:
        raise ValueError("n_rows is required for padded arrays (the rows each device uses)")
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


def _device_accuracy_lists(models, X, y, n_rows):
    """:func:`device_accuracy` for lists of the devices' own arrays (one device at a time)."""
    from .machines import machine_lists

    if n_rows is not None:
        raise ValueError("n_rows is for padded arrays; with lists each device's size is its "
                         "array's length: drop n_rows")
    Xs, ys = machine_lists(X, y, np.float64)
    models = check_array("models", models, ndim=3, dtype=np.float64)
    if models.shape[:2] != (len(Xs), Xs[0].shape[1]):
        raise ValueError(f"models must have shape ({len(Xs)}, {Xs[0].shape[1]}, C), got "
                         f"{models.shape}")
    hits = np.array([np.sum(np.argmax(Xi @ models[i], axis=1) == yi)
                     for i, (Xi, yi) in enumerate(zip(Xs, ys))], dtype=np.float64)
    sizes = np.array([len(yi) for yi in ys], dtype=np.float64)
    return hits / sizes, float(hits.sum() / sizes.sum())
