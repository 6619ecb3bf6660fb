"""Which kernel backend :func:`mixlinreg.ifca` computes with: ``"numba"`` (the default) or
``"jax"`` (:mod:`mixlinreg._jax`, for a GPU), per call (``backend=``) or for a block of code
(:func:`use_backend`, a context variable)."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from ._validation import check_choice

__all__ = ["BACKENDS", "use_backend", "current_backend", "resolve_backend", "check_jax_method"]


#: The kernel backends :func:`ifca` can use.
BACKENDS = ("numba", "jax")
_default_backend = ContextVar("mixlinreg_backend", default="numba")


def check_jax_method(method, where):
    """``method`` is one the JAX backend computes (the direct path), else a ``ValueError`` naming
    ``where`` the JAX backend was asked for."""
    if not (isinstance(method, str) and method in ("auto", "data")):
        raise ValueError(f"method must be one of ['auto', 'data'] with {where} (it computes the "
                         f"direct path), got {method!r}")


def current_backend():
    """The backend :func:`ifca` uses when a call names none (``"numba"`` unless inside
    :func:`use_backend`)."""
    return _default_backend.get()


def resolve_backend(backend):
    """``backend`` checked, ``None`` replaced by the calling context's default."""
    if backend is None:
        return _default_backend.get()
    return check_choice("backend", backend, set(BACKENDS))


@contextmanager
def use_backend(backend):
    """Within this context, :func:`ifca` (and everything built on it: the estimator, the Figure 2
    harness, the studies) computes with ``backend`` (``"numba"`` or ``"jax"``) unless a call names
    its own. The JAX backend is imported here, so a missing extra is reported at once. The
    setting is a context variable: it holds in this thread (and asyncio task) and in the worker
    processes of the studies, which are handed it, but threads started inside do not inherit it
    (pass ``backend=`` there).

    >>> import mixlinreg as mlr
    >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    >>> init = mlr.init_close(mix.theta_star, alpha0=0.25, n_runs=3, rng=1)
    >>> with mlr.use_backend("jax"):  # doctest: +SKIP
    ...     res = mlr.ifca(mix.X, mix.y, init, lr=0.1, n_iter=100)
    >>> res.method  # doctest: +SKIP
    'jax'
    """
    backend = check_choice("backend", backend, set(BACKENDS))
    if backend == "jax":
        from ._jax import import_jax

        import_jax()
    token = _default_backend.set(backend)
    try:
        yield backend
    finally:
        _default_backend.reset(token)
