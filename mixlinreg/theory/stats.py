"""Estimates with bootstrap intervals, and the verdict rules that read them.

Every rule can come out ``"not supported"``: a verdict compares an interval with the value a claim
predicts, with a stated margin, and says "holds" only when the whole interval is inside the margin,
"not supported" when the whole interval is outside, and "inconclusive" otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import as_generator
from ._study import HOLDS, INCONCLUSIVE, NOT_SUPPORTED


@dataclass(frozen=True)
class Fit:
    """A point estimate with a confidence interval ``[lo, hi]`` from ``n`` replicates."""

    est: float
    lo: float
    hi: float
    n: int

    def __post_init__(self):
        for name in ("est", "lo", "hi"):
            v = getattr(self, name)
            if not np.isfinite(v):
                raise ValueError(f"Fit.{name} must be finite, got {v!r}")
        if not self.lo <= self.hi:
            raise ValueError(f"Fit needs lo <= hi, got lo={self.lo!r}, hi={self.hi!r}")

    def fmt(self, digits=3) -> str:
        """``"0.512 [0.498, 0.530]"``."""
        f = f"{{:.{digits}g}}"
        return f"{f.format(self.est)} [{f.format(self.lo)}, {f.format(self.hi)}]"


def _check_conf(confidence):
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _check_boot(n_boot):
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise ValueError(f"n_boot must be an integer >= 100, got {n_boot!r}")


def _percentile(boot, est, confidence, n):
    boot = np.asarray(boot, dtype=float)
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        raise ValueError("every bootstrap replicate was non-finite")
    a = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    return Fit(float(est), float(min(lo, est)), float(max(hi, est)), int(n))


def bootstrap(values, statistic=np.mean, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Percentile bootstrap of ``statistic`` over the first axis of ``values`` (the replicates).

    Parameters
    ----------
    values : array (n, ...)
        Independent replicates along axis 0, ``n >= 2``, all finite.
    statistic : callable
        ``statistic(sample, axis=0)`` style is not required: it receives one resampled array.
    n_boot : int, default 2000
    confidence : float, default 0.95
    rng : None, int, SeedSequence or Generator

    Examples
    --------
    >>> fit = bootstrap([1.0, 2.0, 3.0, 4.0], rng=0)
    >>> fit.est, fit.lo <= 2.5 <= fit.hi
    (2.5, True)
    """
    x = np.asarray(values, dtype=float)
    if x.ndim == 0 or x.shape[0] < 2:
        raise ValueError(f"values must have at least 2 replicates along axis 0, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    _check_boot(n_boot)
    _check_conf(confidence)
    gen = as_generator(rng)
    n = x.shape[0]
    idx = gen.integers(0, n, size=(n_boot, n))
    boot = [statistic(x[i]) for i in idx]
    return _percentile(boot, statistic(x), confidence, n)


def _ols_slope(u, v):
    u = u - u.mean()
    den = float(u @ u)
    if den <= 0:
        return np.nan
    return float(u @ (v - v.mean())) / den


def _slope(x, y, transform_x, *, n_boot, confidence, rng) -> Fit:
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if np.any(y <= 0):
        raise ValueError(f"y must be > 0 to take logs, got min {y.min()!r}")
    levels = np.unique(x)
    if levels.size < 2:
        raise ValueError(f"x must take at least 2 distinct values, got {levels.size}")
    _check_boot(n_boot)
    _check_conf(confidence)
    u = transform_x(x)
    v = np.log(y)
    est = _ols_slope(u, v)
    # stratified bootstrap: resample the replicates within each x level
    gen = as_generator(rng)
    groups = [np.flatnonzero(x == lv) for lv in levels]
    boot = np.empty(n_boot)
    for b in range(n_boot):
        idx = np.concatenate([g[gen.integers(0, g.size, size=g.size)] for g in groups])
        boot[b] = _ols_slope(u[idx], v[idx])
    return _percentile(boot, est, confidence, x.size)


def loglog_slope(x, y, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Slope of ``log y`` against ``log x`` (least squares) with a stratified bootstrap interval.

    Replicates share an ``x`` value; the bootstrap resamples them within each ``x`` level, so the
    interval reflects the scatter between replicates, not the lack of fit of a power law.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.repeat([1.0, 2.0, 4.0, 8.0], 5)
    >>> y = 3 * x ** -0.5 * np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    >>> round(loglog_slope(x, y, rng=0).est, 2)
    -0.5
    """
    x = np.asarray(x, dtype=float)
    if np.any(x <= 0):
        raise ValueError(f"x must be > 0 to take logs, got min {x.min()!r}")
    return _slope(x, y, np.log, n_boot=n_boot, confidence=confidence, rng=rng)


def semilog_slope(x, y, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Slope of ``log y`` against ``x``: the rate of an exponential ``y ~ exp(slope * x)``."""
    return _slope(x, y, lambda a: a, n_boot=n_boot, confidence=confidence, rng=rng)


def contraction_factor(errors, mask=None, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Per-step contraction ``e_{t+1} / e_t``: geometric mean over steps, interval over runs.

    Parameters
    ----------
    errors : array (runs, T + 1)
        Error of each run at each iteration, finite and > 0 where used.
    mask : bool array (runs, T), optional
        Steps ``t -> t+1`` to use (for example the transient, where ``e_t`` is well above the
        floor). Default: all. Runs with no used step are dropped; at least 2 must remain.

    Returns
    -------
    Fit
        ``est`` is ``exp(mean over runs of the mean log ratio of the run)``; the interval
        bootstraps runs.

    Examples
    --------
    >>> import numpy as np
    >>> e = 0.5 ** np.arange(6)[None, :] * np.array([[1.0], [2.0], [3.0]])
    >>> round(contraction_factor(e, rng=0).est, 6)
    0.5
    """
    e = np.asarray(errors, dtype=float)
    if e.ndim != 2 or e.shape[1] < 2:
        raise ValueError(f"errors must have shape (runs, T + 1) with T >= 1, got {e.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = np.log(e[:, 1:]) - np.log(e[:, :-1])
    if mask is None:
        mask = np.ones(logr.shape, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != logr.shape:
        raise ValueError(f"mask must have shape {logr.shape}, got {mask.shape}")
    mask = mask & np.isfinite(logr)
    keep = mask.any(axis=1)
    if keep.sum() < 2:
        raise ValueError(f"need at least 2 runs with a usable step, got {int(keep.sum())}")
    per_run = np.array([logr[r][mask[r]].mean() for r in np.flatnonzero(keep)])
    fit = bootstrap(per_run, np.mean, n_boot=n_boot, confidence=confidence, rng=rng)
    return Fit(float(np.exp(fit.est)), float(np.exp(fit.lo)), float(np.exp(fit.hi)), fit.n)


# ------------------------------------------------------------------------------ verdict rules


def _check_fit(fit):
    if not isinstance(fit, Fit):
        raise TypeError(f"fit must be a Fit, got {type(fit).__name__}")


def _check_margin(margin):
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")


def verdict_equal(fit: Fit, predicted: float, margin: float) -> str:
    """Does the measured quantity equal ``predicted`` within ``margin``?

    "holds" if ``[lo, hi]`` lies inside ``[predicted - margin, predicted + margin]``; "not
    supported" if it lies entirely outside; "inconclusive" otherwise (the interval straddles an
    edge, for example because it is too wide).

    >>> verdict_equal(Fit(0.49, 0.47, 0.52, 10), 0.5, 0.05)
    'holds'
    >>> verdict_equal(Fit(1.0, 0.95, 1.05, 10), 0.5, 0.05)
    'not supported'
    """
    _check_fit(fit)
    _check_margin(margin)
    if fit.lo >= predicted - margin and fit.hi <= predicted + margin:
        return HOLDS
    if fit.hi < predicted - margin or fit.lo > predicted + margin:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def verdict_at_most(fit: Fit, bound: float, margin: float = 0.0) -> str:
    """Is the measured quantity at most ``bound`` (+ ``margin``)?

    "holds" if ``hi <= bound + margin``, "not supported" if ``lo > bound + margin``, else
    "inconclusive".

    >>> verdict_at_most(Fit(0.4, 0.35, 0.45, 10), 0.5)
    'holds'
    >>> verdict_at_most(Fit(0.7, 0.65, 0.75, 10), 0.5)
    'not supported'
    """
    _check_fit(fit)
    _check_margin(margin)
    if fit.hi <= bound + margin:
        return HOLDS
    if fit.lo > bound + margin:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def verdict_at_least(fit: Fit, bound: float, margin: float = 0.0) -> str:
    """Is the measured quantity at least ``bound`` (- ``margin``)? Mirror of :func:`verdict_at_most`.

    >>> verdict_at_least(Fit(0.95, 0.9, 1.0, 10), 0.8)
    'holds'
    """
    _check_fit(fit)
    _check_margin(margin)
    if fit.lo >= bound - margin:
        return HOLDS
    if fit.hi < bound - margin:
        return NOT_SUPPORTED
    return INCONCLUSIVE
