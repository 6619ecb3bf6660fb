"""Which kernel :func:`mixlinreg.ifca` computes with: ``"numba"`` (the default) or ``"jax"``
(:mod:`mixlinreg._jax`, for a GPU), per call (``kernel=``), for the rest of the program
(``use_kernel("jax")`` as a statement, like ``matplotlib.use``) or for a block of code
(``with use_kernel("jax"):``, a context variable).

One word, one meaning: the *kernel* is what computes IFCA's iterations (numba or JAX); the
*backend* is what runs a workload's units (``mixlinreg.runner``: loky, dask or sequential). The
former names of the kernel's choice, ``ifca(backend=...)`` and ``use_backend``, still work for
one release and say so with a ``FutureWarning``.
"""

from __future__ import annotations

import threading
import warnings
from contextvars import ContextVar

from ._validation import check_choice

__all__ = ["KERNELS", "use_kernel", "current_kernel", "resolve_kernel", "check_jax_method",
           "use_backend", "renamed"]


#: The kernels :func:`ifca` can compute with.
KERNELS = ("numba", "jax")
#: The kernel of a ``with use_kernel(...)`` block (None outside every block).
_block_kernel = ContextVar("mixlinreg_kernel", default=None)
#: The process's default: what a bare ``use_kernel(...)`` set last ("numba" until then), seen by
#: every thread (and notebook cell) outside a ``with`` block.
_process = {"kernel": "numba", "generation": 0}
_lock = threading.Lock()


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
    """The kernel :func:`ifca` uses when a call names none: the innermost ``with use_kernel(...)``
    block's, else the process default (``"numba"`` unless a bare ``use_kernel(...)`` changed it)."""
    block = _block_kernel.get()
    return _process["kernel"] if block is None else block


def resolve_kernel(kernel):
    """``kernel`` checked, ``None`` replaced by :func:`current_kernel`."""
    if kernel is None:
        return current_kernel()
    return check_choice("kernel", kernel, set(KERNELS))


class _KernelChoice:
    """What :func:`use_kernel` returns: its call has set the process default already; entered
    by ``with``, it holds for the block instead (the process default goes back to what it was,
    unless another call changed it meanwhile) and ends with the block."""

    def __init__(self, kernel, previous, generation):
        self.kernel, self._previous, self._generation = kernel, previous, generation
        self._tokens = []

    def __enter__(self):
        with _lock:
            if _process["generation"] == self._generation:  # nobody set it since this call
                _process["kernel"] = self._previous
        self._tokens.append(_block_kernel.set(self.kernel))
        return self.kernel

    def __exit__(self, *exc):
        _block_kernel.reset(self._tokens.pop())
        return False

    def __repr__(self):
        return f"use_kernel({self.kernel!r})"


def use_kernel(kernel):
    """Choose who computes :func:`ifca` (and everything built on it: the estimator, the baselines
    that call it, the Figure 2 harness, the studies) when a call names no ``kernel``:
    ``"numba"`` or ``"jax"``. Two uses:

    * as a statement, ``mlr.use_kernel("jax")`` (as ``matplotlib.use``): the process default
      from now on, in every thread and notebook cell, until another ``use_kernel(...)``;
    * as a context, ``with mlr.use_kernel("jax"):``: only inside the block (a context variable:
      this thread or asyncio task, and the worker processes of the studies, which are handed
      it; threads started inside do not inherit it, pass ``kernel=`` there); on leaving it, the
      kernel is what it was before, and the process default is untouched.

    A call's own ``kernel=`` wins over both. The JAX kernel is imported at the call, so a missing
    extra is one ``ImportError`` naming it (``pip install 'mixlinreg[jax]'``), and nothing is
    changed; an unknown name is a ``ValueError`` naming ``kernel``.

    >>> import mixlinreg as mlr
    >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    >>> init = mlr.init_close(mix.theta_star, alpha0=0.25, n_runs=3, rng=1)
    >>> with mlr.use_kernel("jax"):  # doctest: +SKIP
    ...     res = mlr.ifca(mix.X, mix.y, init, lr=0.1, n_iter=100)
    >>> res.method  # doctest: +SKIP
    'jax'
    >>> mlr.use_kernel("jax")  # doctest: +SKIP
    use_kernel('jax')
    >>> mlr.ifca(mix.X, mix.y, init, lr=0.1).method  # doctest: +SKIP
    'jax'
    """
    kernel = check_choice("kernel", kernel, set(KERNELS))
    if kernel == "jax":
        from ._jax import import_jax

        import_jax()
    with _lock:
        previous = _process["kernel"]
        _process["kernel"] = kernel
        _process["generation"] += 1
        generation = _process["generation"]
    return _KernelChoice(kernel, previous, generation)


def use_backend(backend):
    """The former name of :func:`use_kernel` (a ``FutureWarning`` says so); used the same two
    ways."""
    renamed("use_backend", "use_kernel", stacklevel=3)
    return use_kernel(backend)
