"""What :func:`mixlinreg.ifca` makes of its arguments: one validated, frozen :class:`_Problem`.

Each step checks one group of arguments and raises a ``ValueError`` that names the parameter, the
allowed values and the value received; :func:`_choose_method` resolves ``method="auto"`` to the
path that will run (``"data"``, ``"stats"`` or ``"gram"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _numerics
from ._gram import gram_applicable
from .machines import machine_arrays
from ._validation import (
    PARAMETERS,
    PARTICIPATION_MEANINGS,
    as_generator,
    check_array,
    check_data_scale,
    check_param,
    check_scalars_fit,
    resolve_diverge_threshold,
)


def _cheaper_with_stats(n, d, k):
    # flop per machine, run and iteration: stats 2 d^2 k, data 2 n d (k + 1)
    return d * k < n * (k + 1)


@dataclass(frozen=True)
class _Problem:
    """One validated :func:`ifca` call: arrays cast to the working dtype, every option resolved.

    Built by :meth:`of` in named steps (data, runs, objective, schedule, participation, truth,
    path); :func:`_run` hands it to the kernel of its ``method``.
    """

    X: np.ndarray  # (m, n, d), zero-padded past each machine's n_i rows when ragged
    Y: np.ndarray  # (C, m, n)
    y_ndim: int
    yidx: np.ndarray  # (R,) response variant of each run
    theta: np.ndarray  # (R, k * nout, d), a fresh copy: the kernels update it in place
    nout: int  # outputs of a model: C for loss="multinomial" (models d x C), else 1
    lr: np.ndarray  # (R,)
    loss: str
    l2: float
    huber_delta: float
    averaging: str
    local_steps: int
    n_iter: int
    resample: bool
    n_sub: int  # rows per block when resampling, else n
    part: np.ndarray  # (n_iter, R, m) participation mask, or a (1, 1, 1) placeholder
    use_part: bool
    star: np.ndarray  # (C, k' * nout, d) true parameters, or a placeholder
    has_star: bool
    early_stop: bool
    tol: float
    thresh: float
    trace: bool
    method: str  # "data", "stats" or "gram"
    gram_memory: int
    shared: np.ndarray = None  # (d,) bool: coordinates all k models share (weight sharing)
    use_shared: bool = False
    counts: np.ndarray = None  # (m,) int64: rows of each machine, n_i
    ragged: bool = False  # some machine has fewer than n rows
    wts: np.ndarray = None  # (m,) float64: m n_i / N for weighting="size", else exactly 1.0

    @classmethod
    def of(cls, X, y, init, lr, *, n_iter, loss, l2, huber_delta, averaging, local_steps,
           resample, participation, y_index, theta_star, early_stop, tol, diverge_threshold,
           trace, method, gram_memory, dtype, rng, shared=None, n_samples=None,
           weighting="uniform"):
        # rng is checked whether or not this call draws from it (it only draws an int
        # participation), with the validator of the estimator, the baselines and the generators
        rng = as_generator(rng)
        X, Y, y_ndim, dt, given, counts, ragged = _check_data(X, y, dtype, n_samples)
        m, n, d = X.shape
        l2, huber_delta = _check_objective(loss, l2, huber_delta, dt)
        # the underflow counterpart of check_start_finite's OverflowError (on the values given,
        # before the cast: a float64 1e-300 is 0 in float32)
        check_data_scale(*(given if not ragged else (X, Y)), dt, loss)
        theta, nout, lr = _check_runs(init, lr, d, dt, loss == "multinomial")
        R, k = theta.shape[0], theta.shape[1] // nout
        # every scalar option from the one table of bounds (mixlinreg._validation.PARAMETERS)
        n_iter = check_param("n_iter", n_iter)
        check_param("averaging", averaging)
        local_steps = check_param("local_steps", local_steps)
        tol = check_param("tol", tol)
        thresh = resolve_diverge_threshold(diverge_threshold, X, Y, theta,
                                           _numerics.DIVERGE_THRESHOLD)
        check_param("method", method)
        gram_memory = check_param("gram_memory", gram_memory)
        early_stop, trace = check_param("early_stop", early_stop), check_param("trace", trace)
        if loss == "logistic" and (Y.min() < 0 or Y.max() > 1):
            raise ValueError("y must lie in [0, 1] for loss='logistic' (labels 0/1 or probabilities), "
                             f"got values in [{Y.min()!r}, {Y.max()!r}]")
        if loss == "multinomial" and not (np.all(Y == np.round(Y)) and Y.min() >= 0
                                          and Y.max() <= nout - 1):
            bad = float(Y[(Y != np.round(Y)) | (Y < 0) | (Y > nout - 1)].ravel()[0])
            raise ValueError(f"y must hold class labels, integers in [0, {nout - 1}] (init has "
                             f"C = {nout} columns per model), for loss='multinomial'; got {bad!r}")
        yidx = _check_y_index(y_index, y_ndim, Y.shape[0], R)
        resample, n_sub = _check_resample(resample, n, n_iter)
        if ragged and resample:
            raise ValueError(f"resample=True needs machines of equal sizes (its blocks of n' = "
                             f"n // (2 n_iter) rows are shared by all machines), got sizes "
                             f"{int(counts.min())} to {int(counts.max())}; use resample=False, or "
                             f"give every machine the same number of rows")
        part, use_part = _check_participation(participation, n_iter, R, m, rng)
        wts = _check_weighting(weighting, counts, ragged, averaging)
        star, has_star = _check_theta_star(theta_star, Y.shape[0], d, dt, nout)
        shared, use_shared = check_shared(shared, d)
        if use_shared:
            _check_tied(theta, shared, k, nout)
        method = _choose_method(method, loss=loss, resample=resample, averaging=averaging,
                                participation=participation, trace=trace, dt=dt,
                                gram_memory=gram_memory, R=R, m=m, n=n, d=d, k=k,
                                use_shared=use_shared, ragged=ragged)
        return cls(X=X, Y=Y, y_ndim=y_ndim, yidx=yidx, theta=theta, nout=nout, lr=lr, loss=loss,
                   l2=l2, huber_delta=huber_delta, averaging=averaging, local_steps=local_steps,
                   n_iter=n_iter, resample=resample, n_sub=n_sub, part=part, use_part=use_part,
                   star=star, has_star=has_star, early_stop=early_stop, tol=tol, thresh=thresh,
                   trace=trace, method=method, gram_memory=gram_memory, shared=shared,
                   use_shared=use_shared, counts=counts, ragged=ragged, wts=wts)


def _check_data(X, y, dtype, n_samples=None):
    """X and y in any form :mod:`mixlinreg.machines` takes (dense, lists of per-machine arrays,
    padded with ``n_samples``) as X (m, n, d) and Y (C, m, n) in the working dtype; returns X, Y,
    y.ndim, dtype, the values given (for the scale check before the cast), the machines' sizes
    (m,) and whether they differ."""
    if dtype is None:
        xd = getattr(X, "dtype", None)
        if xd is None and isinstance(X, (list, tuple)) and X:
            xd = getattr(X[0], "dtype", None)
        dtype = xd if xd in (np.dtype(np.float32), np.dtype(np.float64)) else np.float64
    dt = check_param("dtype", dtype)
    X_in, y_in = X, y
    X, y, counts, ragged = machine_arrays(X, y, n_samples, dt, y_ndim=(2, 3))
    Y = y[None] if y.ndim == 2 else y
    return X, Y, y.ndim, dt, (X_in, y_in), counts, ragged


def _check_weighting(weighting, counts, ragged, averaging):
    """Each machine's weight: ``"uniform"`` (or equal sizes) exactly 1.0; ``"size"`` ``m n_i / N``
    (every row counts once), refused with model averaging."""
    check_param("weighting", weighting)
    m = counts.shape[0]
    if weighting == "uniform" or not ragged:
        return np.ones(m)
    if averaging != "gradient":
        raise ValueError("weighting='size' needs averaging='gradient' (a size-weighted mean of "
                         "the local models is not offered), got averaging="
                         f"{averaging!r}; use weighting='uniform'")
    return m * counts.astype(np.float64) / float(counts.sum())


def to_vectors(W):
    """Matrix models (..., k, d, C) as the kernel's vectors (..., k * C, d): column c of model j is
    vector ``j * C + c``."""
    *lead, k, d, C = W.shape
    return np.ascontiguousarray(np.swapaxes(W, -1, -2).reshape(*lead, k * C, d))


def from_vectors(theta, nout):
    """The inverse of :func:`to_vectors`: (..., k * nout, d) -> (..., k, d, nout)."""
    *lead, kv, d = theta.shape
    return np.swapaxes(theta.reshape(*lead, kv // nout, nout, d), -1, -2)


def _check_runs(init, lr, d, dt, matrix):
    """Initial models as a fresh C-contiguous copy in the kernel's layout (R, k * nout, d), the
    outputs per model ``nout``, and one step size > 0 per run.

    ``init`` is (R, k, d) or (k, d); with ``matrix`` (the multinomial loss) it is (R, k, d, C) or
    (k, d, C), C >= 2 classes, and ``nout = C``."""
    base = 3 if matrix else 2
    init = check_array("init", init, ndim=(base, base + 1), dtype=dt)
    shape = "(R, k, d, C) or (k, d, C)" if matrix else "(R, k, d) or (k, d)"
    full = init[None] if init.ndim == base else init
    R, k, dd = full.shape[:3]
    nout = full.shape[3] if matrix else 1
    if dd != d:
        raise ValueError(f"init must have d = {d} to match X (shape {shape}), got shape {init.shape}")
    if R < 1 or k < 1:
        raise ValueError(f"init must hold at least one run of at least one model, got shape {init.shape}")
    if matrix and nout < 2:
        raise ValueError(f"init must have C >= 2 classes (shape {shape}) for loss='multinomial', "
                         f"got shape {init.shape}")
    theta = to_vectors(full).astype(dt, copy=True) if matrix else np.array(full, dtype=dt, order="C")
    if np.ndim(lr) == 0:
        lr_arr = np.full(R, check_param("lr", lr.item() if isinstance(lr, np.generic) else lr))
    else:
        lr_arr = check_array("lr", lr, shape=(R,), dtype=np.float64)
        PARAMETERS["lr"].check_each("lr", lr_arr, "runs")
    check_scalars_fit(dt, lr=lr_arr)
    return theta, nout, lr_arr.astype(dt)


def _check_objective(loss, l2, huber_delta, dt):
    check_param("loss", loss)
    l2 = check_param("l2", l2)
    huber_delta = check_param("huber_delta", huber_delta)
    check_scalars_fit(dt, l2=l2, huber_delta=huber_delta)
    return l2, huber_delta


def _check_y_index(y_index, y_ndim, C, R):
    """Each run's response variant: required (and checked) when y is 3-d, else all zero."""
    if y_ndim == 3:
        if y_index is None:
            raise ValueError("y_index is required when y is 3-d: one variant index in [0, C) per run")
        yidx = np.asarray(y_index)
        if yidx.shape != (R,) or yidx.dtype.kind not in "iu":
            raise ValueError(f"y_index must be an integer array of shape ({R},), got {yidx.shape} {yidx.dtype}")
        if yidx.min() < 0 or yidx.max() >= C:
            raise ValueError(f"y_index entries must be in [0, {C - 1}], got range "
                             f"[{yidx.min()}, {yidx.max()}]")
        return yidx.astype(np.int64)
    if y_index is not None:
        raise ValueError("y_index is only allowed when y is 3-d (C, m, n)")
    return np.zeros(R, dtype=np.int64)


def _check_resample(resample, n, n_iter):
    """Whether to resample, and the rows per block ``n' = n // (2 n_iter)`` (``n`` when not)."""
    resample = check_param("resample", resample)
    if not resample:
        return False, n
    if n_iter < 1:
        raise ValueError("resample=True needs n_iter >= 1")
    n_sub = n // (2 * n_iter)
    if n_sub < 1:
        raise ValueError(f"resample=True needs n >= 2 * n_iter rows per machine (n' = n // (2 n_iter) "
                         f">= 1), got n = {n}, n_iter = {n_iter}")
    return True, n_sub


def _check_participation(participation, n_iter, R, m, rng):
    """The participation mask (n_iter, R, m) (drawn from run r's own child of ``rng`` for an int)."""
    part = np.zeros((1, 1, 1), dtype=np.bool_)
    if (isinstance(participation, (float, np.floating))
            or (isinstance(participation, np.ndarray) and participation.ndim == 0
                and participation.dtype.kind == "f")):  # a fraction, as fpfc and digits take it
        f = float(participation)
        s = max(1, int(round(f * m))) if 0 < f <= 1 else None
        advice = f"; for that fraction of the m = {m} machines pass participation={s}" if s else ""
        raise ValueError(f"participation must be None, an int in [1, {m}] (the machines of each "
                         f"iteration) or a bool mask of shape ({n_iter}, {R}, {m}) in ifca, got the "
                         f"float {f!r} ({PARTICIPATION_MEANINGS}){advice}")
    participation = check_param("participation", participation, m=m)  # None, an int or an array
    if participation is None:
        return part, False
    if type(participation) is int:  # checked: in [1, m]
        s = participation
        part = np.zeros((max(n_iter, 1), R, m), dtype=np.bool_)
        for r, g in enumerate(as_generator(rng).spawn(R)):
            for t in range(n_iter):
                part[t, r, g.choice(m, size=s, replace=False)] = True
        return part, True
    part = np.asarray(participation)
    if part.dtype != np.bool_ or part.shape != (n_iter, R, m):
        raise ValueError(f"participation must be None, an int in [1, {m}] or a bool array of shape "
                         f"({n_iter}, {R}, {m}), got {part.shape} {part.dtype}")
    part = np.ascontiguousarray(part)
    if n_iter == 0:
        part = np.zeros((1, 1, 1), dtype=np.bool_)
    return part, True


def _check_theta_star(theta_star, C, d, dt, nout=1):
    """True parameters per response variant (C, k' * nout, d) for the trace's distances (given as
    (k', d) or (C, k', d); for the multinomial loss (k', d, nout) or (C, k', d, nout))."""
    if theta_star is None:
        return np.zeros((C, nout, d), dtype=dt), False
    base = 2 if nout == 1 else 3
    ts = check_array("theta_star", theta_star, ndim=(base, base + 1), dtype=dt)
    star = ts[None] if ts.ndim == base else ts
    tail = "" if nout == 1 else f", {nout}"
    if star.shape[2] != d or star.shape[0] not in (1, C) or (nout > 1 and star.shape[3] != nout):
        raise ValueError(f"theta_star must have shape (k', {d}{tail}) or ({C}, k', {d}{tail}), "
                         f"got {ts.shape}")
    if nout > 1:
        star = to_vectors(star)
    return np.ascontiguousarray(np.broadcast_to(star, (C,) + star.shape[1:])), True


def _choose_method(method, *, loss, resample, averaging, participation, trace, dt, gram_memory,
                   R, m, n, d, k, use_shared=False, ragged=False):
    """The path of the call: ``method`` checked against where it applies, ``"auto"`` resolved."""
    if method == "gram" and ragged:
        raise ValueError("method='gram' needs machines of equal sizes (its cluster Grams add up "
                         "whole machines); use method='auto', 'data' or 'stats' with machines of "
                         "unequal sizes")
    stats_ok = loss == "squared" and not resample and averaging == "gradient"
    if method == "stats" and not stats_ok:
        raise ValueError("method='stats' needs loss='squared', resample=False and averaging='gradient'")
    if method == "gram" and use_shared:
        raise ValueError("method='gram' does not take shared coordinates (its certified bounds "
                         "assume each model moves by its own machines only); use method='auto', "
                         "'data' or 'stats' with shared=")
    gram_ok = (gram_applicable(loss, resample, averaging, participation) and not use_shared
               and not ragged)
    if method == "gram" and not gram_ok:
        raise ValueError("method='gram' needs loss='squared', resample=False, averaging='gradient' "
                         "and participation=None")
    if method == "gram" and gram_memory < 8 * d * d * k:
        raise ValueError(f"method='gram' needs gram_memory >= 8 d^2 k = {8 * d * d * k} bytes "
                         f"(k = {k} Grams of d = {d}), got {gram_memory}")
    if method != "auto":
        return method
    if stats_ok and dt == np.float64 and _cheaper_with_stats(n, d, k):
        return "stats"
    if (gram_ok and not trace and gram_memory >= 8 * d * d * k
            and 2.0 * R * m * n * d * (k + 1) >= _numerics.GRAM_MIN_FLOP):
        return "gram"
    return "data"


def check_shared(shared, d):
    """The shared coordinates as a bool mask (d,) and whether any is shared.

    ``shared`` is None (no sharing), a bool array of shape (d,), or a sequence of distinct integer
    coordinates in ``[0, d)``.
    """
    none = np.zeros(max(d, 1), dtype=np.bool_)
    if shared is None:
        return none, False
    arr = np.asarray(shared)
    if arr.dtype == np.bool_:
        if arr.shape != (d,):
            raise ValueError(f"shared must be None, a bool array of shape ({d},) or distinct integer "
                             f"coordinates in [0, {d - 1}], got a bool array of shape {arr.shape}")
        mask = np.ascontiguousarray(arr)
    else:
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"shared must be None, a bool array of shape ({d},) or distinct integer "
                             f"coordinates in [0, {d - 1}], got {arr.dtype} array of shape {arr.shape}")
        idx = arr.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= d):
            bad = int(idx[(idx < 0) | (idx >= d)][0])
            raise ValueError(f"shared coordinates must lie in [0, {d - 1}], got {bad}")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"shared coordinates must be distinct, got {idx.tolist()}")
        mask = np.zeros(d, dtype=np.bool_)
        mask[idx] = True
    return mask, bool(mask.any())


def _check_tied(theta, shared, k, nout):
    """Every run's k models must hold equal values on the shared coordinates (one shared copy)."""
    if k < 2:
        return
    v = theta[:, :, shared].reshape(theta.shape[0], k, nout, -1)
    diff = np.abs(v - v[:, :1])
    if not np.all(diff == 0):
        r, j = (int(x) for x in np.argwhere(diff.reshape(theta.shape[0], k, -1).max(axis=2) != 0)[0])
        raise ValueError(
            f"init: with shared coordinates the k models of a run must hold equal values there (one "
            f"shared copy); run {r} model {j} differs from model 0 by {float(diff[r, j].max())!r}; "
            f"tie them with mixlinreg.tie_shared(init, shared)")


def check_start_finite(prob, res):
    """``OverflowError`` when a run's loss at its starting models is not finite (before any step).

    The inputs are finite (checked), so such a loss overflowed the working dtype: a property of the
    data's scale (or of ``init``'s), which no step size can fix. Such a run is frozen at iteration 0
    and flagged ``diverged`` by the kernels (with ``n_iter=0``: its evaluated loss is not finite);
    a run that diverges after some steps stays a result (see :func:`mixlinreg.ifca.kept_run`).
    """
    bad = ~np.isfinite(res.loss) if prob.n_iter == 0 else res.diverged & (res.n_iter == 0)
    if not bad.any():
        return
    runs = np.flatnonzero(bad)
    shown = runs[:8].tolist()
    more = f" (and {runs.size - 8} more)" if runs.size > 8 else ""
    top = {name: max(abs(float(a.max())), abs(float(a.min()))) for name, a in  # no temporaries
           (("X", prob.X), ("y", prob.Y), ("init", prob.theta[runs]))}
    dt = prob.X.dtype.name
    hint = ", or use dtype=float64" if dt == "float32" else ""
    raise OverflowError(
        f"the {prob.loss} loss overflows {dt} at the starting models of run(s) {shown}{more} of "
        f"{res.loss.size}, before any step: the data's scale is max|X| = {top['X']:.3g}, max|y| = "
        f"{top['y']:.3g}, and the start's max|init| = {top['init']:.3g}; rescale (standardize) X and y "
        f"or start from a smaller init{hint} (a smaller lr cannot help)")
