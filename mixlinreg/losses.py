"""The per-sample losses of mixlinreg, in one place.

Each loss is a function ``ell(z, y)`` of the prediction ``z = <x, theta>`` and the response ``y``:

========== ============================================ ============================ ==============
name       ``ell(z, y)``                                ``ell'(z, y)``               ``ell''`` range
========== ============================================ ============================ ==============
squared    ``(z - y)^2``                                ``2 (z - y)``                ``[2, 2]``
logistic   ``log(1 + e^z) - y z`` (``y`` in [0, 1])     ``sigmoid(z) - y``           ``(0, 1/4]``
huber      ``r^2 / 2`` if ``|r| <= delta`` else         ``-clip(r, -delta, delta)``  ``[0, 1]``
           ``delta (|r| - delta / 2)``, ``r = y - z``
========== ============================================ ============================ ==============

The kernel also runs the multinomial logistic loss (softmax cross-entropy, :data:`MULTINOMIAL`),
whose prediction is a vector of C logits: :func:`ce` and :func:`dce_into` in the kernel,
:func:`multinomial_value` and :func:`multinomial_derivative` on arrays. It is not in
:data:`LOSSES`, whose entries are losses of a scalar prediction with the constants of the convex
theory.

This module is the one registry of losses. Each loss of a scalar prediction is written once, in
its own section below: three named numba scalars ``<name>_value``, ``<name>_derivative`` and
``<name>_second`` of ``(z, y, delta)`` (float64 arithmetic; what the kernel runs on every sample),
the same formulas on whole arrays ``<name>_value_array``, ... of ``(z, y, delta, xp)`` (the
branches as ``where``, for NumPy and for ``jax.numpy``; tested equal to the scalars), and one
:class:`Loss` entry that names them with its kernel code, its parameter (the Huber threshold
``delta``) and the range of ``ell''``. :data:`CODES` and :data:`LOSSES` are built from the one
tuple of entries :data:`SCALAR_LOSSES`. The kernel calls a loss by its runtime code through the
dispatchers :func:`ell`, :func:`dell` and :func:`d2ell`, one line per loss each (a kernel
compiled once for every loss, instead of once per loss as a function argument would make it);
:func:`value_array`, :func:`derivative_array` and :func:`second_array` dispatch through the entry.
So a new loss is its section, its entry in :data:`SCALAR_LOSSES` and one line in each of the
three dispatchers (``tests/test_losses.py`` names the dispatcher a line is missing from).

The kernel, the JAX backend, the naive reference, the baselines, the data generators and
:mod:`mixlinreg.theory` all read the losses from here; an unknown name or code raises. The
constants of the convex theory (strong convexity ``lambda``, smoothness ``L``, gradient and loss
variances ``eta^2``, ``v^2``) are properties of the *population* loss, so they depend on the data
distribution as well: :func:`mixlinreg.theory.constants.loss_constants` computes them from these
functions.

>>> import numpy as np
>>> LOSSES["huber"].value(np.array([0.0, 3.0]), np.array([0.5, 0.0]), delta=1.0)
array([0.125, 2.5  ])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np

from ._numerics import FASTMATH

__all__ = ["Loss", "LOSSES", "CODES", "ell", "dell", "d2ell", "get", "MULTINOMIAL",
           "KERNEL_CODES", "multinomial_value", "multinomial_derivative", "ce", "dce_into",
           "value_array", "derivative_array", "second_array", "check_code", "curvature_bound",
           "MULTINOMIAL_CURVATURE", "SCALAR_LOSSES", "VECTOR_LOSSES", "VectorLoss", "MULTINOMIAL_LOSS"]


@dataclass(frozen=True)
class Loss:
    """One loss of a scalar prediction: its name, kernel code, the range of ``ell''``, its
    parameter and the functions of its section.

    Attributes
    ----------
    name : str
    code : int
        The kernel's code (:data:`CODES`); :func:`ell`, :func:`dell` and :func:`d2ell` call
        :attr:`scalars` for it.
    curvature : tuple of float
        ``(inf ell'', sup ell'')`` over all ``z`` and ``y``.
    scalars : tuple
        The numba scalars ``(value, derivative, second)``, each of ``(z, y, delta)`` (float64).
    arrays : tuple
        The same formulas on whole arrays ``(value, derivative, second)``, each of
        ``(z, y, delta, xp)`` with ``xp`` NumPy or ``jax.numpy``.
    param : str or None
        The name of the loss's parameter (``"delta"``, the Huber threshold), or None.
    """

    name: str
    code: int
    curvature: tuple
    scalars: tuple = field(repr=False)
    arrays: tuple = field(repr=False)
    param: str | None = None

    def _eval(self, z, y, delta, order):
        z, y = np.broadcast_arrays(np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64))
        out = np.empty(z.size)
        _apply(np.ascontiguousarray(z).ravel(), np.ascontiguousarray(y).ravel(), self.code,
               float(delta), order, out)
        return out.reshape(z.shape)

    def value(self, z, y, delta=1.0):
        """``ell(z, y)`` elementwise (float64 arrays; ``delta``: the Huber threshold), through
        the kernel's dispatcher :func:`ell`."""
        return self._eval(z, y, delta, 0)

    def derivative(self, z, y, delta=1.0):
        """``ell'(z, y)`` in ``z``, elementwise (:func:`dell`)."""
        return self._eval(z, y, delta, 1)

    def second(self, z, y, delta=1.0):
        """``ell''(z, y)`` in ``z``, elementwise (:func:`d2ell`; a.e. for the Huber loss)."""
        return self._eval(z, y, delta, 2)

    def parts(self, z, y, delta=1.0):
        """``(ell, ell', ell'')`` on float64 arrays, with the array forms (:func:`value_array`,
        :func:`derivative_array`, :func:`second_array`): what the convex theory's population
        constants are computed from."""
        z, y = np.broadcast_arrays(np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64))
        return tuple(f(z, y, delta, np) for f in self.arrays)


# ---------------------------------------------------------------------------------- squared
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def squared_value(z, y, delta):
    """``(z - y)^2``."""
    r = z - y
    return r * r


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def squared_derivative(z, y, delta):
    """``2 (z - y)``."""
    return 2.0 * (z - y)


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def squared_second(z, y, delta):
    """``2``."""
    return 2.0


def squared_value_array(z, y, delta, xp):
    r = z - y
    return r * r


def squared_derivative_array(z, y, delta, xp):
    return 2.0 * (z - y)


def squared_second_array(z, y, delta, xp):
    return xp.full_like(z, 2.0)


SQUARED_LOSS = Loss("squared", 0, (2.0, 2.0),
                    scalars=(squared_value, squared_derivative, squared_second),
                    arrays=(squared_value_array, squared_derivative_array, squared_second_array))


# ---------------------------------------------------------------------------------- logistic
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logistic_value(z, y, delta):
    """``log(1 + exp(z)) - y z``, evaluated without overflow."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z)) - y * z
    return np.log1p(np.exp(z)) - y * z


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logistic_derivative(z, y, delta):
    """``sigmoid(z) - y``."""
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z)) - y
    e = np.exp(z)
    return e / (1.0 + e) - y


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logistic_second(z, y, delta):
    """``sigmoid(z) (1 - sigmoid(z))``."""
    if z >= 0.0:
        s = 1.0 / (1.0 + np.exp(-z))
    else:
        e = np.exp(z)
        s = e / (1.0 + e)
    return s * (1.0 - s)


def logistic_value_array(z, y, delta, xp):
    pos = z + xp.log1p(xp.exp(-xp.abs(z))) - y * z  # the branch z > 0, without overflow
    neg = xp.log1p(xp.exp(xp.minimum(z, 0.0))) - y * z
    return xp.where(z > 0.0, pos, neg)


def logistic_derivative_array(z, y, delta, xp):
    e = xp.exp(xp.minimum(z, 0.0))
    pos = 1.0 / (1.0 + xp.exp(-xp.maximum(z, 0.0))) - y
    return xp.where(z >= 0.0, pos, e / (1.0 + e) - y)


def logistic_second_array(z, y, delta, xp):
    e = xp.exp(xp.minimum(z, 0.0))
    s = xp.where(z >= 0.0, 1.0 / (1.0 + xp.exp(-xp.maximum(z, 0.0))), e / (1.0 + e))
    return s * (1.0 - s)


LOGISTIC_LOSS = Loss("logistic", 1, (0.0, 0.25),
                     scalars=(logistic_value, logistic_derivative, logistic_second),
                     arrays=(logistic_value_array, logistic_derivative_array,
                             logistic_second_array))


# ---------------------------------------------------------------------------------- huber
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def huber_value(z, y, delta):
    """``r^2 / 2`` if ``|r| <= delta`` else ``delta (|r| - delta / 2)``, ``r = y - z``."""
    r = y - z
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r
    return delta * (a - 0.5 * delta)


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def huber_derivative(z, y, delta):
    """``-clip(y - z, -delta, delta)``."""
    r = y - z
    if r > delta:
        return -delta
    if r < -delta:
        return delta
    return -r


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def huber_second(z, y, delta):
    """The a.e. second derivative: 1 inside the threshold, else 0."""
    return 1.0 if abs(y - z) <= delta else 0.0


def huber_value_array(z, y, delta, xp):
    r = y - z
    a = xp.abs(r)
    return xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def huber_derivative_array(z, y, delta, xp):
    r = y - z
    return xp.where(r > delta, -delta, xp.where(r < -delta, delta, -r))


def huber_second_array(z, y, delta, xp):
    return (xp.abs(y - z) <= delta).astype(z.dtype)


HUBER_LOSS = Loss("huber", 2, (0.0, 1.0), param="delta",
                  scalars=(huber_value, huber_derivative, huber_second),
                  arrays=(huber_value_array, huber_derivative_array, huber_second_array))


# ---------------------------------------------------------------------------------- the registry
#: Every loss of a scalar prediction: the one list of entries.
SCALAR_LOSSES = (SQUARED_LOSS, LOGISTIC_LOSS, HUBER_LOSS)
#: The losses of a scalar prediction by name.
LOSSES = {e.name: e for e in SCALAR_LOSSES}
#: Kernel code of each per-sample loss of a scalar prediction.
CODES = {e.name: e.code for e in SCALAR_LOSSES}
_BY_CODE = {e.code: e for e in SCALAR_LOSSES}


# The kernel's dispatchers: the loss of a runtime code, one line per entry of SCALAR_LOSSES (the
# kernel is compiled once for all the losses); NaN for a code without a line.
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def ell(z, y, code, delta):
    """Per-sample loss as a function of the prediction z = <x, theta> (float64 arithmetic)."""
    z = np.float64(z)
    y = np.float64(y)
    if code == 0:
        return squared_value(z, y, delta)
    elif code == 1:
        return logistic_value(z, y, delta)
    elif code == 2:
        return huber_value(z, y, delta)
    return np.nan


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def dell(z, y, code, delta):
    """Derivative of the per-sample loss with respect to the prediction z."""
    z = np.float64(z)
    y = np.float64(y)
    if code == 0:
        return squared_derivative(z, y, delta)
    elif code == 1:
        return logistic_derivative(z, y, delta)
    elif code == 2:
        return huber_derivative(z, y, delta)
    return np.nan


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def d2ell(z, y, code, delta):
    """Second derivative in z (for the Huber loss the a.e. derivative: 1 inside the threshold)."""
    z = np.float64(z)
    y = np.float64(y)
    if code == 0:
        return squared_second(z, y, delta)
    elif code == 1:
        return logistic_second(z, y, delta)
    elif code == 2:
        return huber_second(z, y, delta)
    return np.nan


@nb.njit(fastmath=FASTMATH, cache=True)
def _apply(z, y, code, delta, order, out):
    for t in range(z.shape[0]):
        if order == 0:
            out[t] = ell(z[t], y[t], code, delta)
        elif order == 1:
            out[t] = dell(z[t], y[t], code, delta)
        else:
            out[t] = d2ell(z[t], y[t], code, delta)


def check_code(code) -> int:
    """``code`` if it is the kernel code of a loss of a scalar prediction (:data:`CODES`), else a
    ``ValueError`` naming the codes."""
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)) \
            or int(code) not in CODES.values():
        raise ValueError(f"loss code must be one of {CODES} (a loss of a scalar prediction), "
                         f"got {code!r}")
    return int(code)


def value_array(z, y, code, delta, xp=np):
    """:func:`ell` on whole arrays: the array form of the entry of ``code``, for array libraries
    such as ``jax.numpy`` (the JAX backend) that cannot call the numba scalar; the same formulas,
    and tested equal to :func:`ell` (``tests/test_losses.py``). An unknown ``code`` raises."""
    return _BY_CODE[check_code(code)].arrays[0](z, y, delta, xp)


def derivative_array(z, y, code, delta, xp=np):
    """:func:`dell` on whole arrays, as :func:`value_array`."""
    return _BY_CODE[check_code(code)].arrays[1](z, y, delta, xp)


def second_array(z, y, code, delta, xp=np):
    """:func:`d2ell` on whole arrays, as :func:`value_array` (Huber: the a.e. derivative, the
    indicator ``|y - z| <= delta``)."""
    return _BY_CODE[check_code(code)].arrays[2](z, y, delta, xp)


def get(name) -> Loss:
    """The :class:`Loss` called ``name``; a clear error for an unknown name."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name]


# ---------------------------------------------------------------------------------- multinomial
# The multinomial logistic loss (softmax cross-entropy), a loss of a vector prediction of C logits
# ``z = W^T x`` (the model ``W`` is d x C): ``ell(z, y) = logsumexp(z) - z_y`` for the class ``y``
# in ``{0, ..., C - 1}``, with gradient ``softmax(z) - e_y`` in ``z``. The kernel calls its row
# functions ce and dce_into by its code (mixlinreg/_kernels.py); its array forms take xp too.
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def _shifted(P, t, c0, nout):
    """The largest of the logits ``P[t, c0:c0 + nout]`` (NaN if one is NaN) and the sum of
    ``exp(logit - largest)``: the shift that keeps the exponentials from overflowing."""
    mx = np.float64(P[t, c0])
    for c in range(1, nout):
        v = np.float64(P[t, c0 + c])
        if v > mx or np.isnan(v):
            mx = v
    s = 0.0
    for c in range(nout):
        s += np.exp(np.float64(P[t, c0 + c]) - mx)
    return mx, s


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def ce(P, t, c0, nout, y):
    """Multinomial logistic loss of the logits ``P[t, c0:c0 + nout]`` for class ``y`` (float64):
    ``logsumexp(z) - z_y``, shifted by ``max(z)`` so that large logits cannot overflow; a NaN logit
    gives NaN."""
    mx, s = _shifted(P, t, c0, nout)
    return mx + np.log(s) - np.float64(P[t, c0 + int(y)])


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def dce_into(P, t, c0, nout, y, out, o0):
    """The gradient of :func:`ce` in the logits, ``softmax(z) - e_y``, into ``out[t, o0:o0 + nout]``."""
    mx, s = _shifted(P, t, c0, nout)
    yc = int(y)
    for c in range(nout):
        g = np.exp(np.float64(P[t, c0 + c]) - mx) / s
        if c == yc:
            g -= 1.0
        out[t, o0 + c] = g


def multinomial_value(Z, y, xp=np):
    """:func:`ce` for arrays: ``Z`` (..., C) logits and ``y`` (...) classes (the same shifted
    formula as the kernel's). With NumPy (``xp=np``) in float64; with ``xp=jax.numpy`` (the JAX
    backend) on JAX arrays as given."""
    if xp is np:
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y).astype(np.int64)
    mx = xp.max(Z, axis=-1, keepdims=True)
    lse = mx[..., 0] + xp.log(xp.sum(xp.exp(Z - mx), axis=-1))
    return lse - xp.take_along_axis(Z, y[..., None], axis=-1)[..., 0]


def multinomial_derivative(Z, y, xp=np):
    """:func:`dce_into` for arrays: ``softmax(Z) - onehot(y)``, shape of ``Z`` (float64 with
    NumPy; ``xp=jax.numpy`` as in :func:`multinomial_value`)."""
    if xp is np:
        Z = np.asarray(Z, dtype=np.float64)
        y = np.asarray(y).astype(np.int64)
    e = xp.exp(Z - xp.max(Z, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True) - (y[..., None] == xp.arange(Z.shape[-1])).astype(Z.dtype)


@dataclass(frozen=True)
class VectorLoss:
    """One loss of a vector prediction (a row's ``nout`` logits): its name, kernel code, the
    range of its curvature in the logits and its functions.

    Attributes
    ----------
    name : str
    code : int
        The kernel's code (:data:`KERNEL_CODES`).
    curvature : tuple of float
        ``(inf, sup)`` of the eigenvalues of its Hessian in the logits.
    rows : tuple
        The numba row functions ``(value, gradient_into)`` the kernel calls (:func:`ce`,
        :func:`dce_into`).
    arrays : tuple
        ``(value, derivative)`` on arrays of logits, each of ``(Z, y, xp=np)``.
    """

    name: str
    code: int
    curvature: tuple
    rows: tuple = field(repr=False)
    arrays: tuple = field(repr=False)


#: The multinomial loss's entry: the eigenvalues of the softmax Hessian ``diag(p) - p p^T`` lie in
#: ``[0, 1/2]``.
MULTINOMIAL_LOSS = VectorLoss("multinomial", 3, (0.0, 0.5), rows=(ce, dce_into),
                              arrays=(multinomial_value, multinomial_derivative))
#: Kernel code of the multinomial logistic loss (softmax cross-entropy), whose prediction is a
#: vector of C logits ``z = W^T x`` (the model ``W`` is d x C): ``ell(z, y) = logsumexp(z) - z_y``
#: for the class ``y`` in ``{0, ..., C - 1}``, with gradient ``softmax(z) - e_y`` in ``z``.
MULTINOMIAL = MULTINOMIAL_LOSS.code
#: ``(inf, sup)`` of the multinomial loss's curvature in its logits: the eigenvalues of the softmax
#: Hessian ``diag(p) - p p^T`` lie in ``[0, 1/2]``
MULTINOMIAL_CURVATURE = MULTINOMIAL_LOSS.curvature

#: Every loss of a vector prediction (each with its branches in mixlinreg/_kernels.py).
VECTOR_LOSSES = (MULTINOMIAL_LOSS,)
_KERNEL_LOSSES = {e.name: e for e in (*SCALAR_LOSSES, *VECTOR_LOSSES)}
#: Every loss the kernel runs.
KERNEL_CODES = {name: e.code for name, e in _KERNEL_LOSSES.items()}


def curvature_bound(name) -> float:
    """``sup ell''`` of the loss called ``name`` (any of :data:`KERNEL_CODES`): the factor of a
    smoothness constant ``L = sup ell'' lambda_max(X^T X / n)``."""
    if name not in _KERNEL_LOSSES:
        raise ValueError(f"loss must be one of {sorted(_KERNEL_LOSSES)}, got {name!r}")
    return _KERNEL_LOSSES[name].curvature[1]
