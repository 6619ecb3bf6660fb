"""Distances between estimated and true parameters, clustering scores and the success rules.

Every function accepts a single problem or a leading batch of runs (for example the ``R`` random
initializations of one trial, or a ``(T, R)`` trace of iterations and runs). A single problem gives
a Python ``float`` (or ``bool``); a batch gives a NumPy array with the batch shape.

Two parameter distances are provided because the paper and its code disagree:

* :func:`dist_matched` is the distance of the paper's text (Ghosh et al. 2020, Section 6.1),
  ``(1/k) sum_j ||theta_hat_pi(j) - theta*_j||`` minimized over one-to-one matchings ``pi``;
* :func:`dist_nearest` is what the authors' public code thresholds: the mean over the estimated
  models of the distance to the *nearest* true parameter, with no one-to-one constraint, so two
  models sitting on the same true parameter both count as close.

Non-finite parameters (a diverged run) never raise: every distance that involves them is NaN, and
so is every summary computed from a matrix holding a NaN or an infinity. The success rules turn NaN
into ``False``.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
NeurIPS 2020, Section 6.1 (synthetic experiment, the distance and the 0.6 sigma success rule) and
Lemma 1 (misclassification probability).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score

from ._validation import check_array, check_choice, check_float

__all__ = [
    "pairwise_dist",
    "dist_matched",
    "dist_matched_from_matrix",
    "dist_nearest",
    "dist_nearest_from_matrix",
    "cluster_accuracy",
    "adjusted_rand",
    "misclassification_rate",
    "success_authors",
    "success_text",
]

#: ``method="auto"`` of :func:`dist_matched_from_matrix` enumerates all matchings when
#: ``max(k1, k2)`` is at most this (5! = 120 matchings) and calls ``linear_sum_assignment``
#: otherwise. Measured on 10^4 random matrices: enumeration is 5-20x faster for k <= 4, about 2x
#: for k = 5, and 4x slower than the assignment loop for k = 6 (720 matchings).
_PERMUTATION_AUTO_MAX_K = 5
#: ``method="permutations"`` is refused above this (8! = 40320 matchings per matrix).
_PERMUTATION_MAX_K = 8
#: Upper bound on the number of (matrix, matching) partial sums held in memory at once.
_PERMUTATION_CHUNK = 1 << 22

_MATCH_METHODS = ("auto", "permutations", "assignment")


# --------------------------------------------------------------------------------------------------
# validation helpers


def _check_stack(name, value, rows, cols):
    """``value`` as a float64 array of shape (..., rows, cols), both at least 1 (``rows`` and
    ``cols`` are the axes' names in the message); non-finite entries allowed."""
    arr = check_array(name, value, dtype=np.float64, finite=False)
    shape = f"(..., {rows}, {cols})"
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape {shape} (at least 2 dimensions), got shape {arr.shape}")
    if arr.shape[-2] < 1 or arr.shape[-1] < 1:
        raise ValueError(f"{name} must have shape {shape} with {rows} >= 1 and {cols} >= 1, "
                         f"got shape {arr.shape}")
    return arr


def _check_params(name, value):
    """``value`` as a float64 array of shape (..., k, d), k, d >= 1; non-finite entries allowed."""
    return _check_stack(name, value, "k", "d")


def _check_matrix(name, value):
    """``value`` as a float64 array of shape (..., k1, k2) with k1, k2 >= 1."""
    return _check_stack(name, value, "k1", "k2")


def _check_labels(name, value):
    """``value`` as an int64 array of shape (..., m) with m >= 1."""
    arr = np.asarray(value)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(f"{name} must have shape (..., m) with m >= 1 machines, "
                         f"got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.bool_)):
        raise TypeError(f"{name} must be an array of integer labels, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _broadcast_batch(names, shapes):
    """Broadcast the batch shapes ``shapes`` of the parameters ``names``, with a clear error."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        joined = ", ".join(names[:-1]) + " and " + names[-1]
        listed = ", ".join(f"{n} {s}" for n, s in zip(names, shapes))
        raise ValueError(f"the leading batch dimensions of {joined} must broadcast, "
                         f"got {listed}") from None


def _check_same_m(pred, true):
    if pred.shape[-1] != true.shape[-1]:
        raise ValueError(f"labels_pred must have the same number of machines m as labels_true "
                         f"(last axis {true.shape[-1]}), got shape {pred.shape}")


def _labels_pair(labels_true, labels_pred):
    """Validated label arrays broadcast to (B, m), and the batch shape."""
    true = _check_labels("labels_true", labels_true)
    pred = _check_labels("labels_pred", labels_pred)
    _check_same_m(pred, true)
    batch = _broadcast_batch(("labels_true", "labels_pred"), (true.shape[:-1], pred.shape[:-1]))
    m = true.shape[-1]
    true = np.broadcast_to(true, batch + (m,)).reshape(-1, m)
    pred = np.broadcast_to(pred, batch + (m,)).reshape(-1, m)
    return true, pred, batch


def _finish(values, batch, dtype=np.float64):
    """A Python scalar for an empty batch shape, else an array of shape ``batch``."""
    values = np.asarray(values, dtype=dtype).reshape(batch)
    if batch == ():
        return values.item()
    return values


def _finite_matrices(D):
    """Boolean (...,) telling which (k1, k2) matrices of ``D`` are entirely finite."""
    return np.isfinite(D).all(axis=(-2, -1))


# --------------------------------------------------------------------------------------------------
# parameter distances


def pairwise_dist(theta, theta_star):
    """Euclidean distances between every estimated model and every true parameter.

    Parameters
    ----------
    theta : array_like, shape (..., k1, d)
        Estimated models, optionally with leading batch dimensions (runs, iterations, ...).
    theta_star : array_like, shape (k2, d) or (..., k2, d)
        True parameters; leading batch dimensions must broadcast with those of ``theta``.

    Returns
    -------
    D : ndarray of float64, shape (..., k1, k2)
        ``D[..., i, j] = ||theta[..., i, :] - theta_star[..., j, :]||_2``. A distance involving a
        model or a true parameter with any NaN or infinite entry is NaN (a diverged run never
        raises). Differences are formed explicitly (not through the expansion
        ``|a|^2 + |b|^2 - 2 a.b``), so distances near zero are accurate.

    Examples
    --------
    >>> pairwise_dist([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0]])
    array([[0.],
           [5.]])
    """
    theta = _check_params("theta", theta)
    theta_star = _check_params("theta_star", theta_star)
    if theta.shape[-1] != theta_star.shape[-1]:
        raise ValueError(f"theta_star must have the same dimension d as theta (last axis "
                         f"{theta.shape[-1]}), got shape {theta_star.shape}")
    _broadcast_batch(("theta", "theta_star"), (theta.shape[:-2], theta_star.shape[:-2]))
    diff = theta[..., :, None, :] - theta_star[..., None, :, :]
    with np.errstate(invalid="ignore", over="ignore"):
        D = np.sqrt(np.einsum("...i,...i->...", diff, diff))
    bad_model = ~np.isfinite(theta).all(axis=-1)
    bad_truth = ~np.isfinite(theta_star).all(axis=-1)
    bad = bad_model[..., :, None] | bad_truth[..., None, :]
    if bad.any():
        D = np.where(bad, np.nan, D)
    return D


def _matched_assignment(D):
    """Matched distance of each (k1, k2) matrix of a (B, k1, k2) stack, by linear_sum_assignment."""
    kmin = min(D.shape[-2:])
    out = np.full(D.shape[0], np.nan)
    for b in np.flatnonzero(_finite_matrices(D)):
        rows, cols = linear_sum_assignment(D[b])
        out[b] = D[b][rows, cols].sum() / kmin
    return out


def _matched_permutations(D):
    """Matched distance of each matrix of a (B, k1, k2) stack, by enumerating all matchings."""
    if D.shape[-2] > D.shape[-1]:
        D = np.swapaxes(D, -2, -1)  # rows: the smaller side, each matched to a distinct column
    ks, kb = D.shape[-2:]
    perms = np.array(list(itertools.permutations(range(kb), ks)), dtype=np.intp)  # (P, ks)
    finite = _finite_matrices(D)
    out = np.full(D.shape[0], np.nan)
    idx = np.flatnonzero(finite)
    step = max(1, _PERMUTATION_CHUNK // len(perms))
    for start in range(0, len(idx), step):
        sub = D[idx[start:start + step]]
        sums = sub[:, 0, perms[:, 0]].copy()
        for i in range(1, ks):
            sums += sub[:, i, perms[:, i]]
        out[idx[start:start + step]] = sums.min(axis=1) / ks
    return out


def dist_matched_from_matrix(D, *, method="auto"):
    """Matched distance from precomputed distance matrices.

    For each matrix, the smallest mean of ``min(k1, k2)`` entries taken in distinct rows and
    distinct columns: ``min_pi (1/k) sum_j D[pi(j), j]`` over one-to-one matchings ``pi``, the
    distance of the text of Ghosh et al. 2020, Section 6.1. When ``k1 != k2`` (misspecified number
    of clusters) exactly ``min(k1, k2)`` pairs are matched and the mean is over the matched pairs
    only: surplus models, or true parameters left without a model, do not contribute.

    Parameters
    ----------
    D : array_like, shape (..., k1, k2)
        Distance matrices, rows indexing estimated models and columns true parameters (as returned
        by :func:`pairwise_dist`), with any leading batch dimensions (e.g. a kernel trace of shape
        ``(T, R, k, k)``).
    method : {"auto", "permutations", "assignment"}, default "auto"
        "permutations" evaluates every matching at once with NumPy (vectorized over the batch;
        allowed for ``max(k1, k2) <= 8``); "assignment" calls
        :func:`scipy.optimize.linear_sum_assignment` on each matrix; "auto" uses permutations for
        ``max(k1, k2) <= 5`` and assignment otherwise. Both give the same value up to rounding.

    Returns
    -------
    dist : float or ndarray of float64, shape (...,)
        A float for a single matrix. NaN for every matrix with a NaN or infinite entry.

    Examples
    --------
    >>> dist_matched_from_matrix([[3.0, 0.0], [0.0, 1.0]])  # swapping the models is free
    0.0
    >>> dist_matched_from_matrix([[0.0, 1.0], [0.0, 1.0]])  # one model must take the far truth
    0.5
    """
    D = _check_matrix("D", D)
    method = check_choice("method", method, _MATCH_METHODS)
    batch, (k1, k2) = D.shape[:-2], D.shape[-2:]
    kmax = max(k1, k2)
    if method == "permutations" and kmax > _PERMUTATION_MAX_K:
        raise ValueError(f"method='permutations' needs max(k1, k2) <= {_PERMUTATION_MAX_K}, "
                         f"got D of shape {D.shape}; use method='assignment'")
    if method == "auto":
        method = "permutations" if kmax <= _PERMUTATION_AUTO_MAX_K else "assignment"
    flat = D.reshape((-1, k1, k2))
    out = _matched_permutations(flat) if method == "permutations" else _matched_assignment(flat)
    return _finish(out, batch)


def dist_matched(theta, theta_star, *, method="auto"):
    """Paper-text distance: mean distance under the best one-to-one matching of models to truths.

    ``dist = min_pi (1/k) sum_j ||theta_hat_pi(j) - theta*_j||`` over one-to-one matchings ``pi``
    (Ghosh et al. 2020, Section 6.1), computed with :func:`pairwise_dist` and
    :func:`dist_matched_from_matrix`. Two models sitting on the same true parameter are *not* both
    close: one of them has to be matched to another true parameter.

    Parameters
    ----------
    theta : array_like, shape (..., k1, d)
        Estimated models, with optional leading batch dimensions.
    theta_star : array_like, shape (k2, d) or (..., k2, d)
        True parameters, broadcast against the batch of ``theta``.
    method : {"auto", "permutations", "assignment"}, default "auto"
        How the best matching is found; see :func:`dist_matched_from_matrix`.

    Returns
    -------
    dist : float or ndarray of float64, shape (...,)
        A float for a single problem. When ``k1 != k2`` only ``min(k1, k2)`` pairs are matched and
        averaged. NaN when any parameter of the problem is NaN or infinite.

    Examples
    --------
    >>> theta_star = [[0.0, 0.0], [2.0, 0.0]]
    >>> dist_matched([[2.0, 0.0], [0.0, 0.0]], theta_star)  # swapped models
    0.0
    >>> dist_matched([[0.0, 0.0], [0.0, 0.0]], theta_star)  # both on the first truth
    1.0
    """
    return dist_matched_from_matrix(pairwise_dist(theta, theta_star), method=method)


def dist_nearest_from_matrix(D):
    """Nearest-truth distance from precomputed distance matrices.

    For each matrix, the mean over the rows (estimated models) of the row minimum (distance to the
    nearest true parameter). No one-to-one constraint: this is the criterion of the authors' public
    code for Ghosh et al. 2020, Section 6.1, not the distance of the paper's text.

    Parameters
    ----------
    D : array_like, shape (..., k1, k2)
        Distance matrices, rows indexing estimated models and columns true parameters.

    Returns
    -------
    dist : float or ndarray of float64, shape (...,)
        A float for a single matrix. NaN for every matrix with a NaN or infinite entry.

    Examples
    --------
    >>> dist_nearest_from_matrix([[0.0, 1.0], [0.0, 1.0]])  # both models on the first truth
    0.0
    """
    D = _check_matrix("D", D)
    with np.errstate(invalid="ignore"):
        out = D.min(axis=-1).mean(axis=-1)
    out = np.where(_finite_matrices(D), out, np.nan)
    return _finish(out, D.shape[:-2])


def dist_nearest(theta, theta_star):
    """Authors'-code distance: mean over the models of the distance to the nearest true parameter.

    ``dist = (1/k1) sum_i min_j ||theta_hat_i - theta*_j||``. This is what the public code of
    Ghosh et al. 2020 thresholds in the experiment of Section 6.1; unlike :func:`dist_matched`,
    two models on the same true parameter both count as close, so ``dist_nearest <= dist_matched``
    whenever ``k1 <= k2``.

    Parameters
    ----------
    theta : array_like, shape (..., k1, d)
        Estimated models, with optional leading batch dimensions.
    theta_star : array_like, shape (k2, d) or (..., k2, d)
        True parameters, broadcast against the batch of ``theta``.

    Returns
    -------
    dist : float or ndarray of float64, shape (...,)
        A float for a single problem; NaN when any parameter of the problem is NaN or infinite.

    Examples
    --------
    >>> dist_nearest([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [2.0, 0.0]])
    0.0
    """
    return dist_nearest_from_matrix(pairwise_dist(theta, theta_star))


# --------------------------------------------------------------------------------------------------
# clustering scores


def _accuracy_one(true, pred):
    """Best one-to-one relabeling accuracy of one labeling (1-D integer arrays)."""
    t_values, t = np.unique(true, return_inverse=True)
    p_values, p = np.unique(pred, return_inverse=True)
    table = np.bincount(t * len(p_values) + p, minlength=len(t_values) * len(p_values))
    table = table.reshape(len(t_values), len(p_values))
    rows, cols = linear_sum_assignment(table, maximize=True)
    return table[rows, cols].sum() / true.shape[0]


def cluster_accuracy(labels_true, labels_pred):
    """Fraction of machines correctly clustered under the best one-to-one relabeling.

    The contingency table of true and predicted labels is built and the one-to-one matching of
    predicted clusters to true clusters that maximizes the number of agreeing machines is found with
    :func:`scipy.optimize.linear_sum_assignment`. Labels need not be ``0..k-1``, and the numbers of
    true and predicted clusters may differ (surplus clusters of either side match nothing and all of
    their machines count as wrong).

    Parameters
    ----------
    labels_true : array_like of int, shape (m,) or (..., m)
        True cluster of each machine.
    labels_pred : array_like of int, shape (m,) or (..., m)
        Predicted cluster of each machine; leading batch dimensions (e.g. ``(R, m)`` for ``R`` runs)
        broadcast with those of ``labels_true``.

    Returns
    -------
    accuracy : float or ndarray of float64, shape (...,)
        In ``[0, 1]``; a float for a single labeling.

    Examples
    --------
    >>> cluster_accuracy([0, 0, 1, 1], [5, 5, 2, 5])
    0.75
    """
    true, pred, batch = _labels_pair(labels_true, labels_pred)
    out = [_accuracy_one(t, p) for t, p in zip(true, pred)]
    return _finish(out, batch)


def adjusted_rand(labels_true, labels_pred):
    """Adjusted Rand index (:func:`sklearn.metrics.adjusted_rand_score`), batched.

    Parameters
    ----------
    labels_true : array_like of int, shape (m,) or (..., m)
        True cluster of each machine.
    labels_pred : array_like of int, shape (m,) or (..., m)
        Predicted cluster of each machine; leading batch dimensions broadcast with those of
        ``labels_true``.

    Returns
    -------
    ari : float or ndarray of float64, shape (...,)
        1 for identical partitions (up to relabeling), about 0 for independent ones.

    Examples
    --------
    >>> adjusted_rand([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    true, pred, batch = _labels_pair(labels_true, labels_pred)
    out = [adjusted_rand_score(t, p) for t, p in zip(true, pred)]
    return _finish(out, batch)


def misclassification_rate(labels_true, labels_pred, theta=None, theta_star=None):
    """Fraction of machines not assigned to the model that corresponds to their true cluster.

    With ``theta`` and ``theta_star`` given, models are matched to true parameters by the one-to-one
    matching minimizing the total distance (:func:`scipy.optimize.linear_sum_assignment` on
    :func:`pairwise_dist`). A machine of true cluster ``j`` counts as misclassified when its
    predicted label is not the index of the model matched to ``theta_star[j]``; this is the event
    whose probability Lemma 1 of Ghosh et al. 2020 bounds. If ``k1 < k2``, machines of the true
    clusters left without a model are all misclassified; surplus models (``k1 > k2``) are matched to
    nothing, so a machine assigned to one of them is misclassified. When both models are equally
    close to the truth the matching found by ``linear_sum_assignment`` is used.

    Without parameters, the matching is the best relabeling of the labels themselves and the rate
    is ``1 - cluster_accuracy(labels_true, labels_pred)``.

    Parameters
    ----------
    labels_true : array_like of int, shape (m,) or (..., m)
        True cluster of each machine; with parameters, values in ``[0, k2)`` index ``theta_star``.
    labels_pred : array_like of int, shape (m,) or (..., m)
        Predicted cluster of each machine; with parameters, values in ``[0, k1)`` index ``theta``.
    theta : array_like, shape (..., k1, d), optional
        Estimated models. Give both ``theta`` and ``theta_star`` or neither.
    theta_star : array_like, shape (k2, d) or (..., k2, d), optional
        True parameters.

    Returns
    -------
    rate : float or ndarray of float64, shape (...,)
        In ``[0, 1]``; a float for a single problem. The batch shape is the broadcast of the leading
        dimensions of all the arguments. NaN for a problem whose parameters contain NaN or infinity
        (the matching is then undefined).

    Examples
    --------
    >>> theta_star = [[0.0], [1.0]]
    >>> theta = [[1.0], [0.0]]  # the models are swapped ...
    >>> misclassification_rate([0, 0, 1, 1], [1, 1, 0, 1], theta, theta_star)  # ... not an error
    0.25
    """
    if (theta is None) != (theta_star is None):
        missing = "theta" if theta is None else "theta_star"
        raise ValueError(f"theta and theta_star must be given together or both omitted, "
                         f"got {missing}=None")
    if theta is None:
        acc = cluster_accuracy(labels_true, labels_pred)
        return 1.0 - acc

    true = _check_labels("labels_true", labels_true)
    pred = _check_labels("labels_pred", labels_pred)
    _check_same_m(pred, true)
    D = pairwise_dist(theta, theta_star)  # validates theta and theta_star
    k1, k2 = D.shape[-2:]
    if true.min() < 0 or true.max() >= k2:
        raise ValueError(f"labels_true must index theta_star, with values in [0, {k2 - 1}], "
                         f"got values in [{true.min()}, {true.max()}]")
    if pred.min() < 0 or pred.max() >= k1:
        raise ValueError(f"labels_pred must index theta, with values in [0, {k1 - 1}], "
                         f"got values in [{pred.min()}, {pred.max()}]")
    batch = _broadcast_batch(("labels_true", "labels_pred", "theta/theta_star"),
                             (true.shape[:-1], pred.shape[:-1], D.shape[:-2]))
    m = true.shape[-1]
    true = np.broadcast_to(true, batch + (m,)).reshape(-1, m)
    pred = np.broadcast_to(pred, batch + (m,)).reshape(-1, m)
    D = np.broadcast_to(D, batch + (k1, k2)).reshape(-1, k1, k2)
    finite = _finite_matrices(D)
    out = np.full(len(D), np.nan)
    for b in np.flatnonzero(finite):
        rows, cols = linear_sum_assignment(D[b])
        model_of_truth = np.full(k2, -1, dtype=np.int64)  # -1: no model matched to that truth
        model_of_truth[cols] = rows
        out[b] = np.mean(pred[b] != model_of_truth[true[b]])
    return _finish(out, batch)


# --------------------------------------------------------------------------------------------------
# success rules of Section 6.1


def _check_dist_values(name, values):
    # check_array returns 0-d input as shape (1,) (ascontiguousarray); restore the scalar shape
    vals = check_array(name, values, dtype=np.float64, finite=False).reshape(np.shape(values))
    with np.errstate(invalid="ignore"):
        negative = vals < 0
    if negative.any():
        raise ValueError(f"{name} must be distances (>= 0 or NaN), got a minimum of "
                         f"{np.nanmin(vals)!r}")
    return vals


def _check_sigma(sigma, vals):
    if np.ndim(sigma) == 0:
        return check_float("sigma", sigma, low=0.0)
    sig = check_array("sigma", sigma, dtype=np.float64)
    if (sig < 0).any():
        raise ValueError(f"sigma must be >= 0, got a minimum of {sig.min()!r}")
    try:
        np.broadcast_shapes(sig.shape, vals.shape)
    except ValueError:
        raise ValueError(f"sigma must be a scalar or broadcast with the distances of shape "
                         f"{vals.shape}, got shape {sig.shape}") from None
    return sig


def _bool_result(result):
    result = np.asarray(result)
    return bool(result) if result.ndim == 0 else result


def success_authors(dist_nearest_values, sigma, plus=0.001):
    """Success rule of the authors' code for Section 6.1: ``dist < 0.6 * sigma + plus``.

    The comparison is strict. The authors use ``plus=0.001`` in the panels that vary ``R`` and
    ``sigma`` (Figure 2 a, b of Ghosh et al. 2020) and ``plus=0`` in those that vary ``m`` and ``n``
    (Figure 2 c, d). Values are converted to float64 and the threshold ``0.6 * sigma + plus`` is
    computed in float64. NaN (a diverged or skipped run) is never a success.

    Parameters
    ----------
    dist_nearest_values : array_like or float
        Distances, normally from :func:`dist_nearest`; NaN allowed, negative values refused.
    sigma : float or array_like
        Noise standard deviation(s), ``>= 0``, broadcast against the distances.
    plus : float, default 0.001
        Additive slack, ``>= 0``.

    Returns
    -------
    success : bool or ndarray of bool
        A bool for a scalar input.

    Examples
    --------
    >>> success_authors(0.06, sigma=0.1)  # 0.06 < 0.061
    True
    >>> success_authors(0.06, sigma=0.1, plus=0.0)  # 0.06 < 0.06 is false
    False
    """
    vals = _check_dist_values("dist_nearest_values", dist_nearest_values)
    sig = _check_sigma(sigma, vals)
    plus = check_float("plus", plus, low=0.0)
    with np.errstate(invalid="ignore"):
        return _bool_result(vals < 0.6 * sig + plus)


def success_text(dist_matched_values, sigma):
    """Success rule of the paper's text, Section 6.1: ``dist <= 0.6 * sigma``.

    The comparison is non-strict and has no slack (Ghosh et al. 2020, Section 6.1). Values are
    converted to float64 and the threshold ``0.6 * sigma`` is computed in float64. NaN is never a
    success.

    Parameters
    ----------
    dist_matched_values : array_like or float
        Distances, normally from :func:`dist_matched`; NaN allowed, negative values refused.
    sigma : float or array_like
        Noise standard deviation(s), ``>= 0``, broadcast against the distances.

    Returns
    -------
    success : bool or ndarray of bool
        A bool for a scalar input.

    Examples
    --------
    >>> success_text(0.06, sigma=0.1)  # 0.06 <= 0.06
    True
    >>> success_text([0.05, float("nan")], sigma=0.1)
    array([ True, False])
    """
    vals = _check_dist_values("dist_matched_values", dist_matched_values)
    sig = _check_sigma(sigma, vals)
    with np.errstate(invalid="ignore"):
        return _bool_result(vals <= 0.6 * sig)
