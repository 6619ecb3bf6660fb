"""Input checking shared by the public functions.

Every error names the parameter, the allowed range or type, and the value received.
"""

from __future__ import annotations

import numbers

import numpy as np


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    return repr(value)


def _scalar(value):
    """A 0-d numpy array is a scalar: ``np.array(0.1)`` -> ``np.float64(0.1)``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def check_bool(name, value):
    """Return ``value`` as a Python bool; only ``True``/``False`` (numpy bools included) pass.

    Strings such as ``"no"`` or ``"false"`` and numbers such as ``0``/``1`` are refused: they are
    truthy or falsy in Python in ways that silently switch an option on or off.
    """
    value = _scalar(value)
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (True or False), got {_show(value)} "
                        f"of type {type(value).__name__}")
    return bool(value)


def check_int(name, value, *, low=None, high=None):
    """Return ``value`` as a Python int, checking ``low <= value <= high``."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_show(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be in {_range(low, high, True, True)}, got {value}")
    return value


def check_float(name, value, *, low=None, high=None, low_open=False, high_open=False):
    """Return ``value`` as a finite Python float inside the given range."""
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_show(value)}")
    value = float(value)
    bad = not np.isfinite(value)
    if low is not None:
        bad |= value <= low if low_open else value < low
    if high is not None:
        bad |= value >= high if high_open else value > high
    if bad:
        rng = _range(low, high, not low_open, not high_open)
        raise ValueError(f"{name} must be a finite number in {rng}, got {value!r}")
    return value


def check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_dtype(name, dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be numpy.float32 or numpy.float64, got {dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be numpy.float32 or numpy.float64, got {dt}")
    return dt


def check_array(name, value, *, ndim=None, shape=None, dtype=None, finite=True):
    """Return ``value`` as a C-contiguous float array of the requested dtype.

    ``ndim`` may be an int or a tuple of allowed ints; ``shape`` a tuple whose ``None`` entries
    are free.
    """
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimensions, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if dtype is not None:
        if finite:
            check_fits_dtype(name, arr, dtype)
        arr = arr.astype(dtype, copy=False)
    if finite and arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    # np.ascontiguousarray would turn a 0-d array into shape (1,)
    return np.array(arr, copy=True) if arr.ndim == 0 else np.ascontiguousarray(arr)


#: Elements per chunk of the whole-array checks (bounded temporaries on large data).
_CHUNK = 1 << 22


def check_fits_dtype(name, arr, dtype):
    """Raise ``OverflowError`` when finite entries of ``arr`` overflow ``dtype`` (e.g. 1e39 in float32).

    Values that are already NaN or inf are left to the finiteness check, which says so.
    """
    dt = np.dtype(dtype)
    if dt.kind != "f" or arr.dtype.kind not in "fiu" or not arr.size:
        return
    if arr.dtype.kind == "f" and arr.dtype.itemsize <= dt.itemsize:
        return  # a float fits every float type at least as wide
    big = float(np.finfo(dt).max)
    top = 0.0
    flat = arr.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        for i0 in range(0, flat.size, _CHUNK):  # in chunks: no full-size temporaries
            vals = np.abs(flat[i0:i0 + _CHUNK])
            if vals.dtype.kind == "f":
                vals = vals[np.isfinite(vals)]
            if vals.size:
                top = max(top, float(vals.max()))
    if top > big:
        raise OverflowError(f"{name} has a finite value of magnitude {top:.3g} that overflows "
                            f"{dt.name} (largest {big:.3g}); rescale the data or use float64")


def _range(low, high, low_closed, high_closed):
    left = "[" if low_closed and low is not None else "("
    right = "]" if high_closed and high is not None else ")"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def as_generator(rng):
    """``numpy.random.default_rng`` with a clear error (SPEC 7 style ``rng`` argument)."""
    if isinstance(rng, np.random.RandomState):
        raise TypeError("rng must be None, an int seed, a SeedSequence or a numpy.random.Generator; "
                        "legacy RandomState is not accepted")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"rng must be None, an int seed, a SeedSequence or a numpy.random.Generator, "
                        f"got {_show(rng)}") from exc


def _rms(a):
    """Root mean square of ``a``, accumulated in float64 chunk by chunk (no full-size copy)."""
    flat = np.asarray(a).reshape(-1)
    if not flat.size:
        return float("nan")
    total = 0.0
    with np.errstate(all="ignore"):
        for i0 in range(0, flat.size, _CHUNK):
            c = flat[i0:i0 + _CHUNK].astype(np.float64)
            total += float(c @ c)
    return float(np.sqrt(total / flat.size))


def data_parameter_scale(X, Y):
    """``rms(y) / (rms(X) sqrt(d))``: the size of a parameter entry that fits the data.

    For ``y = <x, theta> + noise`` with i.i.d. features, ``rms(y) ~ rms(x) sqrt(d) |theta entry|``.
    NaN when ``X`` is all zero.
    """
    rx = _rms(X)
    ry = _rms(Y)
    with np.errstate(all="ignore"):
        return ry / (rx * np.sqrt(X.shape[-1])) if rx > 0 else float("nan")


def resolve_diverge_threshold(value, X, Y, init, base):
    """The divergence threshold of :func:`mixlinreg.ifca`: a positive number, or ``"auto"``.

    ``"auto"`` is ``base`` (``_numerics.DIVERGE_THRESHOLD``, 1e10) times the scale of a plausible
    parameter entry, ``s = max(1, rms(y) / (rms(X) sqrt(d)), max |init|)``: for ``y = X theta`` with
    i.i.d. features, ``rms(y) ~ rms(X) sqrt(d) |theta entry|``, so ``s`` is the size of an entry of
    a model that fits the data. On the paper's problems ``s = 1`` (the threshold is 1e10, as
    before); on ``y * 1e12`` it grows with ``y``, so a correct fit is never flagged as diverged
    because the data are large.
    """
    if isinstance(value, str) and value == "auto":
        scale = max(1.0, float(np.max(np.abs(init))) if init.size else 1.0)
        fit = data_parameter_scale(X, Y)
        if np.isfinite(fit):
            scale = max(scale, fit)
        return float(base * scale)
    if isinstance(value, str):
        raise ValueError(f"diverge_threshold must be 'auto' or a positive number, got {value!r}")
    return check_float("diverge_threshold", value, low=0, low_open=True)


def check_scalars_fit(dtype, **values):
    """``OverflowError`` for any of the named finite values that overflows ``dtype`` (e.g. lr=1e39
    in float32 would silently become inf and the run would be flagged as diverged)."""
    for name, value in values.items():
        check_fits_dtype(name, np.asarray(value, dtype=np.float64), dtype)


def step_scale_note(X):
    """One clause for a divergence warning: the features' scale and the step sizes it allows.

    A gradient step of size ``lr`` on ``(1/n) ||X theta - y||^2`` is stable for ``lr`` below about
    ``1 / lambda_max(X^T X / n) ~ 1 / rms(X)^2`` (features of that scale); other losses differ by
    a constant factor.
    """
    rx = _rms(X)
    if not (np.isfinite(rx) and rx > 0):
        return f"the features have rms(X) = {rx:.3g}"
    with np.errstate(over="ignore"):
        limit = 1.0 / (rx * rx)
    return (f"the features' scale is rms(X) = {rx:.3g}, and gradient steps are stable only for lr "
            f"up to about 1 / rms(X)^2 = {limit:.3g} (standardize X to move it near 1)")
