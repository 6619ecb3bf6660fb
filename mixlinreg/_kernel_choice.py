"""Which kernel :func:`mixlinreg.ifca` computes with: ``"numba"`` (the default) or ``"jax"``
(:mod:`mixlinreg._jax`, for a GPU), per call (``kernel=``) or for a block of code
(:func:`use_kernel`, a context variable).

One word, one meaning: the *kernel* is what computes IFCA's iterations (numba or JAX); the
*backend* is what runs a workload's units (``mixlinreg.runner``: loky, dask or sequential). The
former names of the kernel's choice, ``ifca(backend=...)`` and ``use_backend``, still work for
one release and say so with a ``FutureWarning``.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar

from ._validation import check_choice

__all__ = ["KERNELS", "use_kernel", "current_kernel", "resolve_kernel", "check_jax_method",
           "use_backend", "renamed"]


#: The kernels :func:`ifca` can compute with.
KERNELS = ("numba", "jax")
_default_kernel = ContextVar("mixlinreg_kernel", default="numba")


def renamed(old, new, stacklevel=3):
    """Warn (``FutureWarning``) that ``old`` is now called ``new``."""
    warnings.warn(f"{old} is renamed {new} ('backend' means the execution backend of a workload, "
                  f"loky, dask or sequential, elsewhere in mixlinreg); {old} will be removed",
                  FutureWarning, stacklevel=stacklevel)


def check_jax_method(method, where):
    """``method`` is one the JAX kernel computes (the direct path), else a ``ValueError`` naming
    ``where`` the JAX kernel was asked for."""
    if not (isinstance(method, str) and method in ("auto", "data")):
        raise ValueError(f"method must be one of ['auto', 'data'] with {where} (it computes the "
                         f"direct path), got {method!r}")


def current_kernel():
    """The kernel :func:`ifca` uses when a call names none (``"numba"`` unless inside
    :func:`use_kernel`)."""
    return _default_kernel.get()


def resolve_kernel(kernel):
    """``kernel`` checked, ``None`` replaced by the calling context's default."""
    if kernel is None:
        return _default_kernel.get()
    return check_choice("kernel", kernel, set(KERNELS))


@contextmanager
def use_kernel(kernel):
    """Within this context, :func:`ifca` (and everything built on it: the estimator, the Figure 2
    harness, the studies) computes with ``kernel`` (``"numba"`` or ``"jax"``) unless a call names
    its own. The JAX kernel is imported here, so a missing extra is reported at once. The
    setting is a context variable: it holds in this thread (and asyncio task) and in the worker
    processes of the studies, which are handed it, but threads started inside do not inherit it
    (pass ``kernel=`` there). It is a context manager only: use it in a ``with`` statement.

    >>> import mixlinreg as mlr
    >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    >>> init = mlr.init_close(mix.theta_star, alpha0=0.25, n_runs=3, rng=1)
    >>> with mlr.use_kernel("jax"):  # doctest: +SKIP
    ...     res = mlr.ifca(mix.X, mix.y, init, lr=0.1, n_iter=100)
    >>> res.method  # doctest: +SKIP
    'jax'
    """
    kernel = check_choice("kernel", kernel, set(KERNELS))
    if kernel == "jax":
        from ._jax import import_jax

        import_jax()
    token = _default_kernel.set(kernel)
    try:
        yield kernel
    finally:
        _default_kernel.reset(token)


@contextmanager
def use_backend(backend):
    """The former name of :func:`use_kernel` (a ``FutureWarning`` says so)."""
    renamed("use_backend", "use_kernel", stacklevel=4)
    with use_kernel(backend) as kernel:
        yield kernel
