"""The package's statistics in one place: intervals, bootstrap fits and the verdict rules.

* Binomial proportions: :func:`wilson_interval` (``scipy.stats.binomtest(...).proportion_ci``).
* Paired proportions: Newcombe's interval for a difference (his method 10), from the four counts
  of the 2 x 2 table (:func:`newcombe_paired`) or from two paired 0/1 arrays
  (:func:`paired_difference`, which also gives McNemar's exact test); one implementation.
* Percentile bootstrap (``scipy.stats.bootstrap(..., method="percentile")``): of a statistic of
  replicates (:func:`bootstrap`), of least-squares slopes (:func:`linear_slope` resamples the
  pairs; :func:`loglog_slope` and :func:`semilog_slope` resample replicates within each ``x``
  level) and of a per-step contraction factor (:func:`contraction_factor`). Each returns a
  :class:`Fit`.
* Verdict rules (:func:`verdict_equal`, :func:`verdict_at_most`, :func:`verdict_at_least`): a
  verdict compares an interval with the value a claim predicts, with a stated margin, and says
  "holds" only when the whole interval is inside the margin, "not supported" when the whole
  interval is outside, and "inconclusive" otherwise.

Randomness: every resampling function takes ``rng`` (None, an int, a ``SeedSequence`` or a
``numpy.random.Generator``; SPEC 7) and hands the Generator to scipy.

>>> lo, hi = wilson_interval(5, 10)
>>> round(float(lo), 4), round(float(hi), 4)
(0.2366, 0.7634)
"""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as _sps

from ._validation import as_generator

__all__ = ["HOLDS", "CAVEAT", "NOT_SUPPORTED", "INCONCLUSIVE", "Fit", "wilson_interval",
           "newcombe_paired", "paired_difference", "bootstrap", "linear_slope", "loglog_slope",
           "semilog_slope", "contraction_factor", "verdict_equal", "verdict_at_most",
           "verdict_at_least", "verdict_above", "log_f_cdf"]

#: the verdicts a study can reach (``CAVEAT`` is given by study-specific rules, not here)
HOLDS = "holds"
CAVEAT = "holds with a caveat"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"


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


# ------------------------------------------------------------------------------ validation


def _check_confidence(confidence):
    if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, numbers.Real) \
            or not 0 < float(confidence) < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def _check_n_boot(n_boot):
    if isinstance(n_boot, (bool, np.bool_)) or not isinstance(n_boot, numbers.Integral) \
            or n_boot < 100:
        raise ValueError(f"n_boot must be an integer >= 100, got {n_boot!r}")
    return int(n_boot)


def _integer_counts(name, value, low):
    """``value`` as an int64 array of whole numbers ``>= low`` (bools refused)."""
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be integer counts >= {low}, got {value!r}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if np.any(bad):
            raise ValueError(f"{name} must be integer counts >= {low}, got "
                             f"{arr[bad].ravel()[0].item()!r}")
    if np.any(arr < low):
        raise ValueError(f"{name} must be integer counts >= {low}, got "
                         f"{arr[arr < low].min().item()!r}")
    return arr.astype(np.int64)


# ------------------------------------------------------------------------------ proportions


@functools.lru_cache(maxsize=65536)
def _wilson_one(k: int, n: int, confidence: float):
    ci = _sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def wilson_interval(successes, trials, confidence=0.95):
    """Wilson score interval for a binomial proportion, elementwise over arrays.

    Each ``(successes, trials)`` pair is computed by ``scipy.stats.binomtest(successes,
    trials).proportion_ci(confidence, method="wilson")``, which is exactly ``[0, .]`` at 0
    successes and ``[., 1]`` at ``trials`` successes.

    Parameters
    ----------
    successes, trials : int or array_like of int
        Counts with ``trials >= 1`` and ``0 <= successes <= trials``; broadcast together.
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    low, high : numpy.float64 or ndarray
        Scalars for scalar input, arrays of the broadcast shape otherwise.

    Examples
    --------
    >>> lo, hi = wilson_interval([0, 10], [10, 10])
    >>> float(lo[0]), float(hi[1])
    (0.0, 1.0)

    References
    ----------
    Wilson, E. B. (1927), Probable inference, the law of succession, and statistical inference,
    JASA 22, 209-212; Newcombe, R. G. (1998), Statistics in Medicine 17, 857-872 (method 3).
    """
    confidence = _check_confidence(confidence)
    t = _integer_counts("trials", trials, 1)
    s = _integer_counts("successes", successes, 0)
    s, t = np.broadcast_arrays(s, t)
    over = s > t
    if np.any(over):
        i = np.flatnonzero(over.ravel())[0]
        raise ValueError(f"successes must be in [0, trials], got successes="
                         f"{int(s.ravel()[i])} with trials={int(t.ravel()[i])}")
    pairs, inverse = np.unique(np.stack([s.ravel(), t.ravel()], axis=1), axis=0,
                               return_inverse=True)
    bounds = np.array([_wilson_one(int(k), int(n), confidence) for k, n in pairs],
                      dtype=float).reshape(-1, 2)
    inverse = inverse.ravel()
    lo = bounds[inverse, 0].reshape(s.shape)
    hi = bounds[inverse, 1].reshape(s.shape)
    if lo.ndim == 0:
        return lo[()], hi[()]
    return lo, hi


def newcombe_paired(n11, n10, n01, n00, confidence=0.95):
    """Newcombe's interval for a difference of paired proportions (his method 10).

    For ``n`` pairs of binary outcomes with ``n11`` (both succeed), ``n10`` (only the first),
    ``n01`` (only the second) and ``n00`` (neither), the difference ``D = p1 - p2 =
    (n10 - n01) / n`` has the interval ``[D - delta, D + eps]`` with
    ``delta = sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)`` and
    ``eps = sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)``, where ``[l1, u1]`` and
    ``[l2, u2]`` are the Wilson intervals of the margins ``p1 = (n11 + n10) / n`` and
    ``p2 = (n11 + n01) / n``. ``phi`` is the phi coefficient of the table with Newcombe's
    continuity correction: ``C / sqrt(product of the four margins)`` with ``C = n11 n00 - n10 n01
    - n / 2`` when ``n11 n00 - n10 n01 > n / 2``, ``C = 0`` when it is in ``[0, n / 2]`` and
    ``C = n11 n00 - n10 n01`` when it is negative; ``phi = 0`` when a margin is empty. (The
    uncorrected phi gives Newcombe's method 8, a different and narrower interval.)

    Parameters
    ----------
    n11, n10, n01, n00 : int or array_like of int
        Counts, ``>= 0``, with ``n = n11 + n10 + n01 + n00 >= 1``; broadcast together.
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    diff, lo, hi : float or ndarray
        ``p1 - p2`` and its interval, clipped to ``[-1, 1]``; floats for scalar input.

    See Also
    --------
    paired_difference : the same interval from two paired 0/1 arrays.

    Examples
    --------
    >>> d, lo, hi = newcombe_paired(20, 12, 2, 16)  # Newcombe's worked example, (a, b, c, d)
    >>> round(d, 4), round(lo, 4), round(hi, 4)
    (0.2, 0.0562, 0.3292)

    References
    ----------
    Newcombe, R. G. (1998), Improved confidence intervals for the difference between binomial
    proportions based on paired data, Statistics in Medicine 17, 2635-2650 (method 10).
    """
    names = ("n11", "n10", "n01", "n00")
    counts = [_integer_counts(name, v, 0) for name, v in zip(names, (n11, n10, n01, n00))]
    confidence = _check_confidence(confidence)
    a, b, c, d = np.broadcast_arrays(*counts)
    n = a + b + c + d
    if np.any(n < 1):
        raise ValueError("newcombe_paired needs n = n11 + n10 + n01 + n00 >= 1, got "
                         f"{int(n[n < 1].ravel()[0])}")
    s1, s2 = a + b, a + c
    l1, u1 = wilson_interval(s1, n, confidence)
    l2, u2 = wilson_interval(s2, n, confidence)
    af, bf, cf, df, nf = (np.asarray(v, dtype=float) for v in (a, b, c, d, n))
    p1, p2 = (af + bf) / nf, (af + cf) / nf
    margins = (af + bf) * (cf + df) * (af + cf) * (bf + df)
    ad_bc = af * df - bf * cf
    corr = np.where(ad_bc > nf / 2, ad_bc - nf / 2, np.where(ad_bc < 0, ad_bc, 0.0))
    phi = np.where(margins > 0, corr / np.sqrt(np.where(margins > 0, margins, 1.0)), 0.0)
    diff = p1 - p2
    dl = np.sqrt(np.maximum((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2,
                            0.0))
    du = np.sqrt(np.maximum((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2,
                            0.0))
    lo = np.clip(diff - dl, -1.0, 1.0)
    hi = np.clip(diff + du, -1.0, 1.0)
    if diff.ndim == 0:
        return float(diff), float(lo), float(hi)
    return diff, lo, hi


def _binary(name, value):
    arr = np.asarray(value)
    if arr.dtype != bool:
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)) \
                or not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{name} must hold 0/1 or bool outcomes, got {value!r}")
    return arr.astype(bool).ravel()


def paired_difference(first, second, confidence=0.95):
    """Difference of two success probabilities measured on the same trials, with its interval.

    ``first`` and ``second`` are the outcomes of the same trials under two conditions. The
    estimate is ``mean(first) - mean(second) = (b - c) / N`` with ``b`` (``c``) the trials where
    only the first (second) succeeded; the interval is :func:`newcombe_paired` on the trials'
    2 x 2 table. The exact McNemar p-value (two-sided binomial test of ``b`` against ``b + c``,
    ``scipy.stats.binomtest``) is given too.

    Parameters
    ----------
    first, second : array_like of bool or 0/1, shape (N,)
        Paired outcomes, ``N >= 1``.
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    dict
        ``n, b, c, p_first, p_second, diff, lo, hi, p_mcnemar``.

    Examples
    --------
    >>> r = paired_difference([1, 1, 1, 1, 0], [0, 0, 0, 1, 0])
    >>> r["diff"], r["b"], r["c"], bool(r["lo"] < r["diff"] < r["hi"])
    (0.6, 3, 0, True)

    References
    ----------
    Newcombe (1998), Statistics in Medicine 17, 2635-2650, method 10; McNemar (1947),
    Psychometrika 12, 153-157.
    """
    x = _binary("first", first)
    y = _binary("second", second)
    if x.shape != y.shape or x.size < 1:
        raise ValueError(f"first and second must be paired (same length >= 1), got {x.size} and "
                         f"{y.size}")
    a, b, c = int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y))
    N = x.size
    diff, lo, hi = newcombe_paired(a, b, c, N - a - b - c, confidence)
    p_mc = 1.0 if b + c == 0 else float(_sps.binomtest(b, b + c, 0.5).pvalue)
    return dict(n=N, b=b, c=c, p_first=(a + b) / N, p_second=(a + c) / N, diff=(b - c) / N,
                lo=lo, hi=hi, p_mcnemar=p_mc)


# ------------------------------------------------------------------------------ bootstrap


def _percentile_fit(data, statistic, est, n, *, n_boot, confidence, rng, paired=False,
                    vectorized=None) -> Fit:
    """``scipy.stats.bootstrap`` percentile interval around ``est``, as a :class:`Fit`.

    Replicates where the statistic is undefined (NaN, e.g. the slope of a resample whose ``x``
    values are all equal) are left out of the percentiles; the interval always contains ``est``.
    """
    with warnings.catch_warnings():
        # scipy warns (about BCa) when a percentile is NaN; NaN replicates are handled below
        warnings.simplefilter("ignore", _sps.DegenerateDataWarning)
        with np.errstate(invalid="ignore", divide="ignore"):
            res = _sps.bootstrap(data, statistic, n_resamples=n_boot, method="percentile",
                                 confidence_level=confidence, paired=paired,
                                 vectorized=vectorized, axis=-1, rng=as_generator(rng))
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    ok = np.isfinite(dist)
    if ok.all():
        lo, hi = res.confidence_interval
    elif ok.any():
        a = (1 - confidence) / 2
        lo, hi = np.quantile(dist[ok], [a, 1 - a])
    else:
        raise ValueError("every bootstrap replicate was non-finite")
    est = float(est)
    return Fit(est, float(min(lo, est)), float(max(hi, est)), int(n))


def _takes_axis(statistic):
    try:
        return "axis" in inspect.signature(statistic).parameters
    except (TypeError, ValueError):  # some builtins and ufuncs have no signature
        return False


def bootstrap(values, statistic=np.mean, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Percentile bootstrap of ``statistic`` over the first axis of ``values`` (the replicates).

    Parameters
    ----------
    values : array (n, ...)
        Independent replicates along axis 0, ``n >= 2``, all finite.
    statistic : callable, default numpy.mean
        Receives one resampled array of the shape of ``values``. A statistic of 1-d ``values``
        that takes an ``axis`` keyword (``np.mean``, ``np.median``) is evaluated on all
        resamples at once.
    n_boot : int, default 2000
        Number of resamples, ``>= 100``.
    confidence : float in (0, 1), default 0.95
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    Fit
        ``est = statistic(values)`` and the percentile interval (``scipy.stats.bootstrap``,
        ``method="percentile"``), widened if needed to contain ``est``.

    Examples
    --------
    >>> fit = bootstrap([1.0, 2.0, 3.0, 4.0], rng=0)
    >>> fit.est, fit.lo <= 2.5 <= fit.hi
    (2.5, True)
    """
    x = np.asarray(values, dtype=float)
    if x.ndim == 0 or x.shape[0] < 2:
        raise ValueError(f"values must have at least 2 replicates along axis 0, got shape "
                         f"{x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    n_boot = _check_n_boot(n_boot)
    confidence = _check_confidence(confidence)
    est = statistic(x)
    if x.ndim == 1 and _takes_axis(statistic):
        return _percentile_fit((x,), statistic, est, x.shape[0], n_boot=n_boot,
                               confidence=confidence, rng=rng, vectorized=True)
    # rows are the replicates: resample row indices and hand the statistic the rows
    return _percentile_fit((np.arange(x.shape[0]),), lambda i: statistic(x[i]), est, x.shape[0],
                           n_boot=n_boot, confidence=confidence, rng=rng, vectorized=False)


def _ols_slope(u, v, axis=-1):
    """Least-squares slope of ``v`` on ``u`` along ``axis``; NaN where ``u`` is constant."""
    uc = u - u.mean(axis=axis, keepdims=True)
    num = np.sum(uc * (v - v.mean(axis=axis, keepdims=True)), axis=axis)
    den = np.sum(uc * uc, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.ptp(u, axis=axis) > 0, num / np.where(den > 0, den, 1.0), np.nan)


def linear_slope(x, y, *, n_boot=2000, confidence=0.95, rng=None) -> Fit:
    """Least-squares slope of ``y`` on ``x`` with a pairs-bootstrap percentile interval.

    The ``(x, y)`` pairs are resampled together (``scipy.stats.bootstrap(..., paired=True)``);
    resamples whose ``x`` values are all equal have no slope and are left out.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Finite, ``n >= 3``, ``x`` with at least 2 distinct values.
    n_boot : int, default 2000
    confidence : float in (0, 1), default 0.95
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    Fit

    Examples
    --------
    >>> round(linear_slope([0, 1, 2, 3], [1, 3, 5, 7], rng=0).est, 6)
    2.0
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"x and y must have the same length >= 3, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if np.ptp(x) <= 0:
        raise ValueError("x must take at least 2 distinct values")
    n_boot = _check_n_boot(n_boot)
    confidence = _check_confidence(confidence)
    return _percentile_fit((x, y), _ols_slope, _ols_slope(x, y), x.size, n_boot=n_boot,
                           confidence=confidence, rng=rng, paired=True, vectorized=True)


def _slope(x, y, transform_x, *, n_boot, confidence, rng) -> Fit:
    """Slope of ``log y`` on ``transform_x(x)`` with a bootstrap stratified by ``x`` level."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if np.any(y <= 0):
        raise ValueError(f"y must be > 0 to take logs, got min {y.min()!r}")
    levels, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    if levels.size < 2:
        raise ValueError(f"x must take at least 2 distinct values, got {levels.size}")
    n_boot = _check_n_boot(n_boot)
    confidence = _check_confidence(confidence)
    v = np.log(y)
    est = float(_ols_slope(transform_x(x), v))
    # Within-level resampling keeps every level's size, so the slope is a fixed weighted sum of
    # the levels' mean log y: slope = sum_g w_g mean_g(v), w_g = n_g (u_g - u_bar) / S_uu. Each
    # level is one sample of scipy's multi-sample bootstrap (resampled independently, its own
    # size); a level with one replicate cannot vary and enters as a constant.
    u = transform_x(levels)
    u_c = u - np.sum(counts * u) / x.size
    w = counts * u_c / np.sum(counts * u_c * u_c)
    groups = [v[inverse == g] for g in range(levels.size)]
    varying = [g for g in range(levels.size) if counts[g] >= 2]
    const = float(sum(w[g] * groups[g][0] for g in range(levels.size) if counts[g] < 2))
    if not varying:
        return Fit(est, est, est, x.size)
    wv = w[varying]

    def statistic(*samples, axis=-1):
        return const + sum(wg * s.mean(axis=axis) for wg, s in zip(wv, samples))

    return _percentile_fit(tuple(groups[g] for g in varying), statistic, est, x.size,
                           n_boot=n_boot, confidence=confidence, rng=rng, vectorized=True)


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
    """Slope of ``log y`` against ``x``: the rate of an exponential ``y ~ exp(slope * x)``.

    The interval is the stratified bootstrap of :func:`loglog_slope`.

    >>> import numpy as np
    >>> x = np.repeat([100.0, 200.0, 400.0], 3)
    >>> round(semilog_slope(x, np.exp(-0.02 * x), rng=0).est, 6)
    -0.02
    """
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
        bootstraps runs (:func:`bootstrap` of the runs' mean log ratios, then ``exp``).

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
    """Is the measured quantity at least ``bound`` (- ``margin``)?

    The mirror of :func:`verdict_at_most`.

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


def verdict_above(fit: Fit, threshold: float) -> str:
    """Is the measured quantity strictly above ``threshold`` (a difference above a margin)?

    "holds" if ``lo > threshold``, "not supported" if ``hi <= threshold``, else "inconclusive"
    (the interval straddles it). The strict ``>``: a difference must exceed its margin, not reach it.

    >>> verdict_above(Fit(0.3, 0.1, 0.5, 10), 0.0), verdict_above(Fit(0.0, -0.2, 0.0, 10), 0.0)
    ('holds', 'not supported')
    """
    if fit.lo > threshold:
        return HOLDS
    if fit.hi <= threshold:
        return NOT_SUPPORTED
    return INCONCLUSIVE


# ------------------------------------------------------------------ the F distribution's far tail
_FPMIN = 1e-300


def positive_integers(param, value):
    """``value`` (a number or array of them) as float64 if every entry is an integer >= 1, else a
    ``ValueError`` naming ``param``."""
    n = np.asarray(value)
    nf = n.astype(float)
    if (n.size == 0 or not np.all(np.isfinite(nf)) or np.any(nf < 1)
            or np.any(nf != np.round(nf))):
        raise ValueError(f"{param} must be integers >= 1, got {value!r}")
    return nf


def _betacf(a, b, x, *, maxit=20000, eps=1e-14):
    """Continued fraction of the incomplete beta function (modified Lentz), vectorized."""
    a, b, x = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(x, float))
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _FPMIN, _FPMIN, d)
    d = 1.0 / d
    h = d.copy()
    done = np.zeros(x.shape, dtype=bool)
    for m in range(1, maxit + 1):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < _FPMIN, _FPMIN, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < _FPMIN, _FPMIN, c)
        d = 1.0 / d
        h = np.where(done, h, h * d * c)
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < _FPMIN, _FPMIN, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < _FPMIN, _FPMIN, c)
        d = 1.0 / d
        de = d * c
        h = np.where(done, h, h * de)
        done |= np.abs(de - 1.0) < eps
        if done.all():
            return h
    raise RuntimeError(f"incomplete-beta continued fraction did not converge in {maxit} steps")


def log_f_cdf(q, dof):
    """``log F(dof, dof).cdf(q)``, accurate far below the smallest float (log domain).

    Uses ``scipy.special.betainc`` where the value is above ``1e-280`` and otherwise the
    continued fraction of the regularized incomplete beta function ``I_x(dof/2, dof/2)``,
    ``x = q / (1 + q)``, with its prefactor in logs.

    Parameters
    ----------
    q : float >= 0
    dof : array of int >= 1

    Returns
    -------
    ndarray of float (``-inf`` where ``q = 0``)

    References
    ----------
    Lemma 1 (Appendix A.1 of the long version): the exact law of the misclassification event.
    """
    q = float(q)
    if not (q >= 0):
        raise ValueError(f"q must be >= 0, got {q!r}")
    n0 = positive_integers("dof", dof)
    n = np.atleast_1d(n0)
    if q == 0:
        return np.full(n0.shape, -np.inf)
    if np.isinf(q):
        return np.zeros(n0.shape)
    h = 0.5 * n
    x = q / (1.0 + q)
    p = special.betainc(h, h, x)
    with np.errstate(divide="ignore"):
        out = np.log(p)
    tiny = p < 1e-280
    if np.any(tiny):
        if x >= 0.5:  # cannot happen: then P >= 1/2
            raise RuntimeError("log_f_cdf: underflow with q >= 1")
        ht = h[tiny]
        front = ht * np.log(x) + ht * np.log1p(-x) - special.betaln(ht, ht) - np.log(ht)
        out[tiny] = front + np.log(_betacf(ht, ht, np.full(ht.shape, x)))
    return out.reshape(n0.shape)
