"""The JAX kernel of :func:`mixlinreg.ifca` (``kernel="jax"``): the same runs on a CPU or a GPU.

:func:`mixlinreg.ifca` validates its arguments once (:class:`mixlinreg._problem._Problem`) and hands
the problem either to the numba kernels (``mixlinreg/_kernels.py``) or, with ``kernel="jax"``, to
:func:`run_jax` here. This module computes exactly the iterations of the numba kernel's direct path
(``method="data"``), written with ``jax.jit`` and ``lax.while_loop`` so that one program runs on
JAX's CPU backend and on a CUDA GPU:

* every model's loss on every machine every iteration: one matrix product ``X @ Theta^T`` of shape
  ``(m n, R k)``, then the losses' array forms of :mod:`mixlinreg.losses`
  (:func:`~mixlinreg.losses.value_array` and the multinomial ones); ties and the argmin as in the
  numba kernel (ties to the lowest index, a NaN loss never wins, bitwise-equal models share the
  lower model's loss);
* option I: the gradient at the assigned model only, ``X_i^T ell'`` per machine (a batched matrix
  product), then added over the machines of each model in float64; option II: ``local_steps``
  gradient steps per machine from its assigned model, averaged per model in float64;
* participation masks, resampling, the divergence threshold, the optional early stop and the
  per-iteration trace with the numba kernel's rules (see :func:`mixlinreg.ifca`).

Precision follows the numba kernel: matrix products in the working dtype (float32 at full float32
precision, ``lax.Precision.HIGHEST``, never TF32 or bf16 passes on a GPU), per-sample losses and
derivatives, the sums over machines, the updates, norms and distances in float64 (so JAX's 64-bit
mode is switched on for the duration of a call, :func:`_x64`, and off again after it).

What differs from the numba kernel is how the work is organised, never what is computed: frozen runs
(diverged or stopped early) keep being computed with the others and are masked out instead of being
dropped from the packed set (a simpler program, which pays for the frozen runs' share of the work),
and sums are added in another order by another matrix library. In float64 the results agree to
rounding (1e-10 relative in the tests). In float32 they differ by rounding at every iteration,
and a run that amplifies rounding (at the paper's unstable step sizes) can end elsewhere: see
docs/gpu.md (On a GPU: the JAX backend) for what that changes in the paper's units.
"""

from __future__ import annotations

import contextlib
import functools
from collections import namedtuple

import numpy as np

from .losses import (KERNEL_CODES, MULTINOMIAL, derivative_array, multinomial_derivative,
                     multinomial_value, value_array)

#: What the user is told when JAX is missing: the extra that installs it.
EXTRA_HINT = ("kernel='jax' needs JAX, an optional extra of mixlinreg: pip install 'mixlinreg[jax]' "
              "(CPU) or 'mixlinreg[gpu]' (NVIDIA GPU, CUDA 12)")

#: The static part of a call: everything that changes the compiled program (shapes aside).
Config = namedtuple("Config", "code nout k model_avg local_steps resample n_sub use_part early_stop "
                              "trace has_star n_iter use_shared")


def import_jax():
    """The ``jax`` module, or an ``ImportError`` naming the extra that installs it."""
    try:
        import jax
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in the tests
        raise ImportError(EXTRA_HINT) from exc
    return jax


@contextlib.contextmanager
def _x64(jax):
    """JAX's 64-bit mode for the duration of a call (restored afterwards)."""
    if hasattr(jax, "enable_x64"):
        with jax.enable_x64(True):
            yield
    else:  # older JAX
        from jax.experimental import enable_x64

        with enable_x64():
            yield


def device_info():
    """The device JAX computes on, in words (``"cpu:0 cpu"``, ``"gpu:0 NVIDIA H200"``)."""
    jax = import_jax()
    dev = jax.devices()[0]
    kind = getattr(dev, "device_kind", "")
    return f"{dev.platform}:{dev.id} {kind}".strip()


# ----------------------------------------------------------------------------------- the program
def _argmin(jnp, L):
    """Index of the smallest ``L[..., j]``: ties to the lowest index, a NaN never beats a number
    (+inf does), all NaN -> 0 (the numba kernel's ``_argmin``)."""
    nan = jnp.isnan(L)
    Lc = jnp.where(nan, jnp.inf, L)
    best = (Lc == jnp.min(Lc, axis=-1, keepdims=True)) & ~nan
    return jnp.where(jnp.any(best, axis=-1), jnp.argmax(best, axis=-1), 0).astype(jnp.int32)


def _program(jax, cfg, X, Y, yidx, theta0, lr, l2, delta, part, tol, thresh, star, shared):
    """The whole call: ``cfg.n_iter`` iterations of all runs, then the final evaluation."""
    jnp, lax = jax.numpy, jax.lax
    HI = lax.Precision.HIGHEST
    f64 = jnp.float64
    dt = X.dtype
    m, n, d = X.shape
    R = theta0.shape[0]
    k, nout, code = cfg.k, cfg.nout, cfg.code
    multi = code == MULTINOMIAL
    Yr = Y[yidx]  # (R, m, n): each run's responses
    rr = jnp.arange(R)

    def models(theta):
        return theta.reshape(R, k, nout, d)

    def losses(theta, e0, ne):
        """(m, R, k) data losses on rows [e0, e0 + ne) (float64), the packed forward pass."""
        Xe = lax.dynamic_slice_in_dim(X, e0, ne, axis=1)
        Ye = jnp.transpose(lax.dynamic_slice_in_dim(Yr, e0, ne, axis=2), (1, 2, 0))  # (m, ne, R)
        P = jnp.einsum("mtd,rvd->mtrv", Xe, theta, precision=HI).reshape(m, ne, R, k, nout)
        z = P.astype(f64)
        if multi:
            cls = Ye.astype(jnp.int32)
            per = multinomial_value(z, jnp.broadcast_to(cls[:, :, :, None], (m, ne, R, k)), xp=jnp)
        else:
            per = value_array(z[..., 0], Ye.astype(f64)[..., None], code, delta, xp=jnp)
        return jnp.sum(per, axis=1) / ne, P

    def assign(theta, e0, ne):
        """Assignments (m, R), minimum losses (m, R) and the forward pass, as ``_evaluate``."""
        Ld, P = losses(theta, e0, ne)
        th = models(theta)
        # bitwise-equal models share the lowest such model's loss (an exact tie stays a tie)
        same = jnp.all(th[:, :, None] == th[:, None, :], axis=(3, 4))  # (R, k, k)
        lower = same & jnp.tril(jnp.ones((k, k), dtype=bool), -1)[None]
        dup = jnp.where(jnp.any(lower, axis=2), jnp.argmax(lower, axis=2), jnp.arange(k)[None])
        Ld = jnp.take_along_axis(Ld, jnp.broadcast_to(dup[None], Ld.shape), axis=2)
        pen = 0.5 * l2 * jnp.sum(jnp.square(th.astype(f64)), axis=(2, 3))  # (R, k)
        L = Ld + pen[None]
        a = _argmin(jnp, L)
        lmin = jnp.take_along_axis(L, a[..., None], axis=2)[..., 0]
        return a, lmin, P

    def dists(theta):
        """(R, k, k') distances to the run's true parameters (float64, Frobenius)."""
        th = models(theta).astype(f64)
        st = star[yidx].reshape(R, -1, nout, d).astype(f64)
        return jnp.sqrt(jnp.sum(jnp.square(th[:, :, None] - st[:, None]), axis=(3, 4)))

    def derivative(Z, Yg):
        """ell' at the predictions Z (m, t, R, nout), in the working dtype."""
        z = Z.astype(f64)
        if multi:
            g = multinomial_derivative(z, Yg.astype(jnp.int32), xp=jnp)
        else:
            g = derivative_array(z[..., 0], Yg.astype(f64), code, delta, xp=jnp)[..., None]
        return g.astype(dt)

    def contribution(theta, a, P, g0, ng, w):
        """Sums over machines (R, k, nout, d) in float64 and counts (R, k): option I's gradients
        or option II's local models."""
        th = models(theta)
        Xg = lax.dynamic_slice_in_dim(X, g0, ng, axis=1)
        Yg = jnp.transpose(lax.dynamic_slice_in_dim(Yr, g0, ng, axis=2), (1, 2, 0))  # (m, ng, R)
        cnt = jnp.sum(w, axis=0)
        inv = 1.0 / ng
        Ta = th[rr[None, :], a]  # (m, R, nout, d): each machine's assigned model
        if cfg.model_avg:
            lr64 = lr.astype(f64)[None, :, None, None]
            for _ in range(cfg.local_steps):
                Q = jnp.einsum("mtd,mrcd->mtrc", Xg, Ta, precision=HI)
                G = jnp.einsum("mtd,mtrc->mrcd", Xg, derivative(Q, Yg), precision=HI)
                T64 = Ta.astype(f64)
                Ta = (T64 - lr64 * (G.astype(f64) * inv + l2 * T64)).astype(dt)
            return jnp.einsum("mrj,mrcd->rjcd", w, Ta.astype(f64), precision=HI), cnt
        if cfg.resample:
            Z = jnp.einsum("mtd,mrcd->mtrc", Xg, Ta, precision=HI)
        else:  # the evaluation's forward pass at the assigned models
            Z = jnp.take_along_axis(P, a[:, None, :, None, None], axis=3)[:, :, :, 0]
        G = jnp.einsum("mtd,mtrc->mrcd", Xg, derivative(Z, Yg), precision=HI)
        s = jnp.einsum("mrj,mrcd->rjcd", w, G.astype(f64), precision=HI) * inv
        return s + l2 * cnt[:, :, None, None] * th.astype(f64), cnt

    def body(carry):
        it, theta, frozen, diverged, converged, n_out, a_prev, tl_tr, tr_labels, tr_dist = carry
        if cfg.resample:
            e0, g0, ne = 2 * it * cfg.n_sub, 2 * it * cfg.n_sub + cfg.n_sub, cfg.n_sub
        else:
            e0, g0, ne = 0, 0, n
        a, lmin, P = assign(theta, e0, ne)
        tl = jnp.sum(lmin, axis=0) / m  # (R,)
        if cfg.trace:
            tl_tr = tl_tr.at[it].set(tl)
            tr_labels = tr_labels.at[it].set(a.T)
            if cfg.has_star:
                tr_dist = tr_dist.at[it].set(dists(theta))
        w = jax.nn.one_hot(a, k, dtype=f64)  # (m, R, k)
        if cfg.use_part:
            w = w * lax.dynamic_index_in_dim(part, it, axis=0, keepdims=False).T[:, :, None]
        s, cnt = contribution(theta, a, P, g0, ne, w)
        old = models(theta).astype(f64)
        if cfg.model_avg:
            chosen = cnt > 0
            new = jnp.where(chosen[:, :, None, None], s / jnp.maximum(cnt, 1.0)[:, :, None, None], old)
        else:
            chosen = jnp.ones((R, k), dtype=bool)
            new = old - (lr.astype(f64) / m)[:, None, None, None] * s
        if cfg.use_shared:  # weight sharing: one value from every participating machine
            tot = jnp.sum(s, axis=1)  # (R, nout, d)
            if cfg.model_avg:
                ctot = jnp.sum(cnt, axis=1)[:, None, None]
                val = jnp.where(ctot > 0, tot / jnp.maximum(ctot, 1.0), old[:, 0])
            else:
                val = old[:, 0] - (lr.astype(f64) / m)[:, None, None] * tot
            new = jnp.where(shared[None, None, None, :], val[:, None], new)
            chosen = jnp.ones((R, k), dtype=bool)  # every model's shared part moves
        new = new.astype(dt)
        new64 = new.astype(f64)
        bad = jnp.any(chosen[:, :, None, None] & (~jnp.isfinite(new64) | (jnp.abs(new64) > thresh)),
                      axis=(1, 2, 3))
        n_old = jnp.sqrt(jnp.sum(jnp.where(chosen[:, :, None, None], old * old, 0.0), axis=(2, 3)))
        step = new64 - old
        n_step = jnp.sqrt(jnp.sum(jnp.where(chosen[:, :, None, None], step * step, 0.0), axis=(2, 3)))
        rel = jnp.max(n_step / jnp.maximum(n_old, 1e-300), axis=1)

        active = ~frozen
        loss_bad = active & ~jnp.isfinite(tl)
        upd = active & ~loss_bad
        div_now = upd & bad
        conv_now = upd & ~bad & (it >= 1) & (rel <= tol) & jnp.all(a.T == a_prev, axis=1)
        if not cfg.early_stop:
            conv_now = conv_now & False
        theta = jnp.where(upd[:, None, None], new.reshape(R, k * nout, d), theta)
        n_out = jnp.where(loss_bad, it, jnp.where(div_now | conv_now, it + 1, n_out))
        diverged = diverged | loss_bad | div_now
        converged = converged | conv_now
        frozen = frozen | loss_bad | div_now | conv_now
        a_prev = jnp.where(upd[:, None], a.T, a_prev)
        return it + 1, theta, frozen, diverged, converged, n_out, a_prev, tl_tr, tr_labels, tr_dist

    def cond(carry):
        return (carry[0] < cfg.n_iter) & ~jnp.all(carry[2])

    T1 = cfg.n_iter + 1 if cfg.trace else 1
    ks = star.shape[1] // nout
    carry = (jnp.int32(0), theta0, jnp.zeros(R, dtype=bool), jnp.zeros(R, dtype=bool),
             jnp.zeros(R, dtype=bool), jnp.full(R, cfg.n_iter, dtype=jnp.int32),
             jnp.full((R, m), -1, dtype=jnp.int32), jnp.zeros((T1, R), dtype=f64),
             jnp.zeros((T1, R, m) if cfg.trace else (1, 1, 1), dtype=jnp.int32),
             jnp.zeros((T1, R, k, ks) if (cfg.trace and cfg.has_star) else (1, 1, 1, 1), dtype=f64))
    if cfg.n_iter > 0:
        carry = lax.while_loop(cond, body, carry)
    _, theta, _, diverged, converged, n_out, _, tl_tr, tr_labels, tr_dist = carry

    # the final evaluation on all rows; a frozen run's remaining trace entries repeat it
    a, lmin, _ = assign(theta, 0, n)
    loss = jnp.sum(lmin, axis=0) / m
    labels = a.T
    if cfg.trace:
        late = jnp.arange(T1)[:, None] >= n_out[None, :]  # (T1, R)
        tl_tr = jnp.where(late, loss[None], tl_tr)
        tr_labels = jnp.where(late[:, :, None], labels[None], tr_labels)
        if cfg.has_star:
            tr_dist = jnp.where(late[:, :, None, None], dists(theta)[None], tr_dist)
    return theta, labels, loss, diverged, converged, n_out, tl_tr, tr_labels, tr_dist


@functools.lru_cache(maxsize=None)
def _compiled():
    """The jitted program (one compilation per static :class:`Config` and shapes, cached by JAX)."""
    jax = import_jax()
    return jax.jit(functools.partial(_program, jax), static_argnums=0)


def run_jax(prob):
    """Run the validated problem ``prob`` (:class:`mixlinreg._problem._Problem`) with JAX.

    Returns the arrays of an :class:`mixlinreg.IFCAResult`, as NumPy arrays: ``theta`` (R, k *
    nout, d) in the working dtype, ``labels`` (R, m) int64, ``loss`` (R,) float64, flags and
    ``n_iter``, and the trace's ``labels``, ``loss`` and ``dist`` (placeholders without a trace).
    """
    jax = import_jax()
    k = prob.theta.shape[1] // prob.nout
    cfg = Config(code=KERNEL_CODES[prob.loss], nout=prob.nout, k=k, model_avg=prob.averaging == "model",
                 local_steps=prob.local_steps, resample=prob.resample, n_sub=prob.n_sub,
                 use_part=prob.use_part, early_stop=prob.early_stop, trace=prob.trace,
                 has_star=prob.has_star, n_iter=prob.n_iter, use_shared=prob.use_shared)
    try:
        with _x64(jax):
            out = _compiled()(cfg, prob.X, prob.Y, prob.yidx.astype(np.int32), prob.theta, prob.lr,
                              np.float64(prob.l2), np.float64(prob.huber_delta), prob.part,
                              np.float64(prob.tol), np.float64(prob.thresh), prob.star,
                              prob.shared)
            out = jax.device_get(out)
    except Exception as exc:  # XLA's out-of-memory error, whatever its class in this JAX version
        if "RESOURCE_EXHAUSTED" not in str(exc) and "out of memory" not in str(exc).lower():
            raise
        m, n, d = prob.X.shape
        raise MemoryError(
            f"the JAX device ({device_info()}) ran out of memory for {prob.theta.shape[0]} runs of "
            f"k = {k} models on (m, n, d) = ({m}, {n}, {d}) in {prob.X.dtype}: run fewer runs per "
            f"call (or, in the harness, fewer units at once: mixlinreg._numerics.JAX_WORKERS)") from None
    theta, labels, loss, diverged, converged, n_out, tl, tlab, tdist = out
    return dict(theta=np.array(theta, dtype=prob.X.dtype), labels=np.asarray(labels, dtype=np.int64),
                loss=np.asarray(loss, dtype=np.float64), diverged=np.asarray(diverged, dtype=bool),
                converged=np.asarray(converged, dtype=bool), n_iter=np.asarray(n_out, dtype=np.int64),
                trace_loss=np.asarray(tl, dtype=np.float64),
                trace_labels=np.asarray(tlab, dtype=np.int64),
                trace_dist=np.asarray(tdist, dtype=np.float64))
