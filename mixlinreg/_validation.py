"""Input checking shared by the public functions.

Every error names the parameter, the allowed range or type, and the value received.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from .losses import KERNEL_CODES


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


#: What ``participation`` means where: its type says it, and no value means two things.
PARTICIPATION_MEANINGS = ("in ifca participation counts the machines of each iteration (an int "
                          "in [1, m], or a bool mask); in fpfc and digits it is the fraction of "
                          "the machines drawn each round (a float in (0, 1])")


def check_participation_fraction(value, where, name="participation"):
    """``participation`` where it is a fraction of the machines (:func:`mixlinreg.baselines.fpfc`,
    :mod:`mixlinreg.digits`): a float in (0, 1]. An int was accepted as the fraction it equals
    (1: every machine) and still is, with a ``FutureWarning`` (ifca's ``participation=1`` is one
    machine): pass ``1.0``; an int will be an error in a future release. Any other int is a
    ``ValueError`` that says it is not a count here."""
    v = _scalar(value)
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        if v == 1:
            warnings.warn(f"{where}: {name}=1 is an int, read as the fraction 1.0 (every machine, "
                          f"as before); {PARTICIPATION_MEANINGS}. Pass 1.0: an int {name} will be "
                          f"an error here in a future release", FutureWarning, stacklevel=3)
        else:
            raise ValueError(f"{name} must be a fraction of the machines, a float in (0, 1], in "
                             f"{where}, got the int {v!r} ({PARTICIPATION_MEANINGS}); for s "
                             f"machines of m pass {name}=s / m")
    return check_float(name, value, low=0.0, low_open=True, high=1.0)


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
    if type(value).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} must be a dense array: sparse input ({type(value).__name__}) is "
                        "not supported; convert it with .toarray()")
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


def _largest(a):
    """``max |a|`` as a float, without a full-size temporary (0.0 for an empty array)."""
    a = np.asarray(a)
    if not a.size:
        return 0.0
    return max(abs(float(a.max())), abs(float(a.min())))


#: losses that are squares of the residual near a fit (squared; Huber within its threshold)
_SQUARE_LOSSES = ("squared", "huber")


def check_data_scale(X, y, dtype, loss="squared", where="ifca"):
    """``FloatingPointError`` when the data are so small that the loss and its gradient underflow
    ``dtype``: the underflow counterpart of the ``OverflowError`` naming max|X|, max|y|.

    Every gradient is made of products ``x_t x_t^T theta`` and ``x_t y_t`` (the squared loss
    also of ``y_t^2``): with ``q = max|X| * max(max|X|, max|y|)`` below the dtype's smallest
    normal number (float64 2.2e-308, float32 1.2e-38) these products underflow (to 0, or to
    subnormal numbers of a few significant digits) and so do the losses and their differences:
    every machine's losses tie and it picks model 0, and the step size that would move the
    models (about ``1 / max|X|^2``) is past the largest float. For the squared and the Huber
    loss, ``max|y|^2`` below it is refused too: the loss of any model that fits such ``y``
    underflows. Features that are all 0 are not an underflow and are not refused. ``X``, ``y``
    are checked before they are cast to ``dtype`` (a float64 1e-300 is 0 in float32).
    Returns ``(max|X|, max|y|)``."""
    dt = np.dtype(dtype)
    tiny = float(np.finfo(dt).tiny)
    sx, sy = _largest(X), _largest(y)
    if sx == 0.0:
        return sx, sy
    q = sx * max(sx, sy)
    squares = loss in _SQUARE_LOSSES and 0.0 < sy and sy * sy < tiny
    if q >= tiny and not squares:
        return sx, sy
    what = (f"max|X| * max(max|X|, max|y|) = {q:.3g}" if q < tiny else
            f"max|y|^2 = {sy * sy:.3g} (the {loss} loss of any model that fits y)")
    hint = "" if dt == np.float64 else ", or use dtype=float64"
    raise FloatingPointError(
        f"{where}: the data's scale underflows {dt.name}: max|X| = {sx:.3g}, max|y| = {sy:.3g}, "
        f"so {what} is below {dt.name}'s smallest normal number {tiny:.3g}: the {loss} loss and "
        f"its gradient underflow (every machine's losses tie, and no finite step size moves the "
        f"models); rescale the data (standardize X and y, e.g. divide them by max|X|){hint}")


def _range(low, high, low_closed, high_closed):
    left = "[" if low_closed and low is not None else "("
    right = "]" if high_closed and high is not None else ")"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


# ------------------------------------------------------------------ the declared parameter table
# A small vocabulary of constraints (the idea of scikit-learn's ``_parameter_constraints``, written
# for this package: its messages, its 0-d-array-as-scalar rule, bounds that name a data quantity).
# Each constraint checks a value with the check_* function above (so the messages name the
# parameter, the allowed range and the value) and describes itself for errors, the docs test and
# the config schema (:meth:`mixlinreg.config.Spec.of`).


def _bound_text(b, default):
    return default if b is None else (b if isinstance(b, str) else repr(b))


@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` ``"int"`` or ``"float"`` in ``[low, high]`` (``None``: unbounded;
    ``low_open`` / ``high_open`` exclude that end, for floats). A bound may be the name of a
    quantity known only at the call (``high="m"``, the number of machines); the caller passes its
    value: ``check(name, value, m=8)``. Integers are bools-excluded ``numbers.Integral``, floats
    finite ``numbers.Real``; a 0-d array counts as its scalar."""

    kind: str
    low: object = None
    high: object = None
    low_open: bool = False
    high_open: bool = False

    def __post_init__(self):
        if self.kind not in ("int", "float"):
            raise ValueError(f"Interval kind must be 'int' or 'float', got {self.kind!r}")
        if self.kind == "int" and (self.low_open or self.high_open):
            raise ValueError("an int Interval is closed: give the bounds it includes")

    def _bounds(self, known):
        try:
            return tuple(known[b] if isinstance(b, str) else b for b in (self.low, self.high))
        except KeyError as exc:
            raise TypeError(f"this Interval's bound {exc.args[0]!r} must be passed to "
                            "check") from None

    def accepts_type(self, value):
        value = _scalar(value)
        base = numbers.Integral if self.kind == "int" else numbers.Real
        return isinstance(value, base) and not isinstance(value, (bool, np.bool_))

    def check(self, name, value, **known):
        low, high = self._bounds(known)
        if self.kind == "int":
            return check_int(name, value, low=low, high=high)
        return check_float(name, value, low=low, high=high, low_open=self.low_open,
                           high_open=self.high_open)

    def check_each(self, name, values, what, **known):
        """Every entry of the numeric array ``values`` inside the interval (and finite); the first
        that is not is named, with its index among ``what`` (e.g. ``"runs"``)."""
        low, high = self._bounds(known)
        v = np.asarray(values, dtype=np.float64)
        bad = ~np.isfinite(v)
        if low is not None:
            bad |= v <= low if self.low_open else v < low
        if high is not None:
            bad |= v >= high if self.high_open else v > high
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(f"{name} must be {self.describe(**known)} for every one of its "
                             f"{what}, got {float(v.reshape(-1)[i])!r} at index {i}")
        return values

    def describe(self, **known):
        low, high = (known.get(b, b) if isinstance(b, str) else b for b in (self.low, self.high))
        if self.kind == "float" and low == 0 and self.low_open and high is None:
            return "a positive number"
        left = "(" if self.low_open or low is None else "["
        right = ")" if self.high_open or high is None else "]"
        word = "an integer" if self.kind == "int" else "a finite number"
        return f"{word} in {left}{_bound_text(low, '-inf')}, {_bound_text(high, 'inf')}{right}"


@dataclass(frozen=True)
class Options:
    """One of the strings ``choices``."""

    choices: tuple

    def accepts_type(self, value):
        return isinstance(value, str) and value in self.choices

    def check(self, name, value, **known):
        return check_choice(name, value, self.choices)

    def describe(self, **known):
        if len(self.choices) == 1:
            return repr(self.choices[0])
        return f"one of {sorted(self.choices)}"


@dataclass(frozen=True)
class Flag:
    """``True`` or ``False`` (numpy bools and 0-d bool arrays included; see :func:`check_bool`)."""

    def accepts_type(self, value):
        return isinstance(_scalar(value), (bool, np.bool_))

    def check(self, name, value, **known):
        return check_bool(name, value)

    def describe(self, **known):
        return "a bool (True or False)"


@dataclass(frozen=True)
class DType:
    """A working precision: ``numpy.float32`` or ``numpy.float64`` (anything ``numpy.dtype`` reads
    as one of them; returned as a ``numpy.dtype``)."""

    def accepts_type(self, value):
        return True

    def check(self, name, value, **known):
        return check_dtype(name, value)

    def describe(self, **known):
        return "numpy.float32 or numpy.float64"


@dataclass(frozen=True)
class Seed:
    """A source of randomness: None, an int seed, a ``SeedSequence`` or a ``Generator``
    (:func:`as_generator`); ``check`` returns the Generator, drawing nothing from it."""

    def accepts_type(self, value):
        return True

    def check(self, name, value, **known):
        return as_generator(value, name)

    def describe(self, **known):
        return "None, an int seed, a SeedSequence or a numpy.random.Generator"


@dataclass(frozen=True)
class Array:
    """An array whose shape depends on the data (``shape``, in words): :meth:`check` lets any
    non-string value through, and the function named in ``checked_by`` checks it against the data
    once they are read (the shapes are not known before)."""

    shape: str
    checked_by: str

    def accepts_type(self, value):
        return value is not None and not isinstance(value, str)

    def check(self, name, value, **known):
        if not self.accepts_type(value):
            raise TypeError(f"{name} must be {self.describe()}, got {_show(value)}")
        return value

    def describe(self, **known):
        return f"an array of shape {self.shape}"


class Either:
    """The value meets one of ``members`` (``None`` as a member: the value may be None). The first
    member that takes the value's type checks it (so an out-of-range number gets that member's
    message); a value no member takes is refused with every alternative named."""

    def __init__(self, *members):
        self.members = members

    def __repr__(self):
        return f"Either{self.members!r}"

    def accepts_type(self, value):
        return any(value is None if c is None else c.accepts_type(value) for c in self.members)

    def check(self, name, value, **known):
        if value is None and None in self.members:
            return None
        for c in self.members:
            if c is not None and c.accepts_type(value):
                return c.check(name, value, **known)
        wrong_string = isinstance(value, str) and any(isinstance(c, Options) for c in self.members)
        raise (ValueError if wrong_string else TypeError)(
            f"{name} must be {self.describe(**known)}, got {_show(value)}")

    def describe(self, **known):
        return " or ".join("None" if c is None else c.describe(**known) for c in self.members)


#: The one table of the public parameters of :func:`mixlinreg.ifca` and :class:`mixlinreg.IFCA`:
#: each one's type and bounds, stated once. ``ifca`` (``mixlinreg._problem._Problem.of``), the
#: estimator's ``fit`` (through ``IFCA._parameter_constraints``) and the config schemas that feed
#: them (``Spec.of``: the Figure 2 and compare protocols) all read their checks from here, so a
#: bound cannot differ between a config, the function and the estimator. ``lr`` bounds each step
#: size (``ifca``: a number or one per run; ``IFCA``: a number or a sequence). Arrays whose shape
#: depends on the data are listed with that shape and checked where the data are known. ``X``,
#: ``y`` (data, not parameters) and ``kernel`` (``mixlinreg._kernel_choice.resolve_kernel``, with
#: ``KERNELS``) are not listed.
PARAMETERS = {
    # what the estimator adds around ifca
    "n_clusters": Interval("int", low=1),
    "n_init": Interval("int", low=1),
    "random_state": Seed(),
    # ifca's, which the estimator passes on
    # init: the strings are the estimator's random starts; ifca takes the arrays, (R, k, d) or
    # (k, d) ((R, k, d, C) or (k, d, C) for loss="multinomial"; for IFCA, R is n_init)
    "init": Either(Options(("bernoulli", "gaussian")),
                   Array("(k, d) or (R, k, d)", "_problem._check_runs and IFCA.fit")),
    "lr": Interval("float", low=0, low_open=True),
    # n_iter = 0 evaluates the starts only (their labels and loss): a real call (predict and score
    # are one), and in a config the zero point of the iterations (the starts' own success)
    "n_iter": Interval("int", low=0),
    "loss": Options(tuple(KERNEL_CODES)),  # the one loss registry's names
    "l2": Interval("float", low=0),
    "huber_delta": Interval("float", low=0, low_open=True),
    "averaging": Options(("gradient", "model")),
    "local_steps": Interval("int", low=1),
    "resample": Flag(),
    "participation": Either(None, Interval("int", low=1, high="m"),
                            Array("(n_iter, R, m) of bool", "_problem._check_participation")),
    "y_index": Either(None, Array("(R,) of int in [0, C)", "_problem._check_y_index")),
    "theta_star": Either(None, Array("(k', d) or (C, k', d)", "_problem._check_theta_star")),
    "early_stop": Flag(),
    "fit_intercept": Flag(),
    "verbose": Flag(),
    "tol": Interval("float", low=0),
    "diverge_threshold": Either(Options(("auto",)), Interval("float", low=0, low_open=True)),
    "trace": Flag(),
    "method": Options(("auto", "data", "stats", "gram")),
    "gram_memory": Interval("int", low=0),
    "dtype": DType(),
    "n_threads": Either(None, Interval("int", low=1, high="NUMBA_NUM_THREADS")),
    "rng": Seed(),
    "shared": Either(None, Array("(d,) of bool, or distinct int coordinates in [0, d)",
                                 "_problem.check_shared")),
    # how machines of unequal sizes count: each once (the paper), or each row once
    "weighting": Options(("uniform", "size")),
    # machines of unequal sizes given padded (mixlinreg.machines): rows used per machine
    "n_samples": Either(None, Array("(m,) of int in [1, n]", "machines.machine_arrays")),
}


def check_param(name, value, **known):
    """``value`` checked against ``PARAMETERS[name]`` (``known``: the bounds it names)."""
    return PARAMETERS[name].check(name, value, **known)


def as_generator(rng, name="rng"):
    """``numpy.random.default_rng`` with a clear error (SPEC 7 style ``rng`` argument; ``name``
    is the parameter the message names, e.g. the estimator's ``random_state``)."""
    if isinstance(rng, np.random.RandomState):
        raise TypeError(f"{name} must be None, an int seed, a SeedSequence or a "
                        "numpy.random.Generator; legacy RandomState is not accepted")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be None, an int seed, a SeedSequence or a "
                        f"numpy.random.Generator, got {_show(rng)}") from exc


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
    value = check_param("diverge_threshold", value)  # "auto" or a finite float > 0
    if isinstance(value, str):
        scale = max(1.0, float(np.max(np.abs(init))) if init.size else 1.0)
        fit = data_parameter_scale(X, Y)
        if np.isfinite(fit):
            scale = max(scale, fit)
        return float(base * scale)
    return value


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
