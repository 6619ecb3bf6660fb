"""Checks for the lesson's exercises (``experiments/tutorial.py``, section 9).

Each ``check_*`` takes the student's function, runs it on probes, compares it with what
:func:`mixlinreg.ifca` itself does on those probes, prints one line and returns True (correct) or
False. The reference is the kernel's behaviour, not a formula written here, so reading a check
does not give its answer away. A function that still raises :class:`NotImplementedError` (the
lesson's stubs) is reported as not attempted. The probes are chosen so that the common wrong
answers fail (``tests/test_teaching_claims.py`` runs the wrong answers listed there and the
solutions in ``experiments/tutorial_solutions.py``).

Examples
--------
>>> import numpy as np
>>> from mixlinreg.teach import exercises
>>> def stub(X, y, theta):
...     raise NotImplementedError
>>> exercises.check_assign(stub)
exercise 1: not attempted yet (the function raises NotImplementedError)
False
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_assign", "check_factor", "check_lr_max", "FACTOR_G"]

#: The values of ``g = lr p_j`` exercise 2 is checked at: two below 1/2 and two above, where the
#: sign of the one-step change matters.
FACTOR_G = (0.1, 0.2, 0.7, 0.85)


def _call(n, fn, *args):
    """``(value, None)`` or ``(None, message)`` if the student's function cannot be used."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, f"exercise {n}: not attempted yet (the function raises NotImplementedError)"
    except Exception as exc:  # the student's code: report, do not crash the lesson
        return None, f"exercise {n}: your function raised {type(exc).__name__}: {exc}"


def _number(x):
    """A float from a number or a one-element array; None otherwise."""
    try:
        return float(np.asarray(x, dtype=float).reshape(-1)[0]) if np.size(x) == 1 else None
    except (TypeError, ValueError):
        return None


def _verdict(n, ok, why):
    print(f"exercise {n}: correct" if ok else f"exercise {n}: not yet: {why}")
    return bool(ok)


def check_assign(fn):
    """Exercise 1: ``fn(X, y, theta) -> labels``, each machine's model (0-based, shape (m,)).

    Compared with the assignments :func:`mixlinreg.ifca` records (``trace=True``) at 20 random
    sets of models on a three-line mixture (in two of them two models are equal, so ties count).
    """
    import mixlinreg as mlr

    from ._runs import line_mixture

    mix = line_mixture(k=3, m=30, n=15, sigma=0.5, rng=0)
    probes = np.random.default_rng(11).normal(0.0, 1.5, (20, 3, 2))
    probes[-2:, 1] = probes[-2:, 0]  # two models equal: ties go to the lowest index
    ref = mlr.ifca(mix.X, mix.y, probes, 0.5, n_iter=1, trace=True, dtype=np.float64,
                   n_threads=1).trace.labels[0]
    for r, theta in enumerate(probes):
        got, msg = _call(1, fn, mix.X, mix.y, theta.copy())
        if msg:
            print(msg)
            return False
        got = np.asarray(got)
        if got.shape != ref[r].shape:
            return _verdict(1, False, f"expected one label per machine, shape {ref[r].shape}, "
                                      f"got shape {got.shape}")
        if not np.array_equal(got, ref[r]):
            bad = int(np.sum(got != ref[r]))
            return _verdict(1, False, f"{bad} of {len(got)} machines get another model than "
                                      f"IFCA's at probe {r} (labels are 0-based)")
    return _verdict(1, True, "")


def _measured_factors(gs, rng=12):
    """Resampled IFCA, two equal clusters, correct clusters: the error's factor per step at each
    ``g = lr p`` (geometric mean over steps, starts and clusters)."""
    import mixlinreg as mlr

    from ..data import draw_rows, init_close
    from ..geometry import simplex_centers
    from ..theory.linear import cluster_labels

    m, d, n_prime, T, n_starts = 200, 4, 30, 8, 3
    gen = np.random.default_rng(rng)
    star = simplex_centers(2, d, 1.0, gen)
    X, y = draw_rows(cluster_labels(m, (0.5, 0.5)), star, 2 * T * n_prime, sigma=1e-4, rng=gen)
    starts = init_close(star, 0.3, n_starts, rng=gen)
    gs = np.asarray(gs, dtype=float)
    out = mlr.ifca(X, y, np.tile(starts, (len(gs), 1, 1)), np.repeat(gs / 0.5, n_starts),
                   n_iter=T, resample=True, trace=True, theta_star=star, dtype=np.float64,
                   n_threads=1)
    err = np.einsum("trjj->trj", out.trace.dist).reshape(T + 1, len(gs), n_starts, 2)
    return np.exp(np.mean(np.log(err[1:] / err[:-1]), axis=(0, 2, 3)))


def check_factor(fn, tol=0.03):
    """Exercise 2: ``fn(g) -> factor``, the expected factor of a correctly clustered step.

    Measured on resampled IFCA (two equal clusters, ``E[x x^T] = I``, little noise, fresh
    points every step) at each ``g`` in :data:`FACTOR_G`; the answer must be within ``tol`` of
    the measurement at every one of them.
    """
    measured = _measured_factors(FACTOR_G)
    for g, meas in zip(FACTOR_G, measured):
        got, msg = _call(2, fn, g)
        if msg:
            print(msg)
            return False
        if _number(got) is None:
            return _verdict(2, False, f"expected a number at g = {g}, got {got!r}")
        got = _number(got)
        print(f"  g = {g}: measured factor {meas:.3f}, yours {got:.3f}")
        if not abs(got - meas) <= tol:
            return _verdict(2, False, f"at g = {g} the measured factor is {meas:.3f}, yours "
                                      f"{got:.3f} (a factor is how much of the error is left)")
    return _verdict(2, True, "")


#: Exercise 3's probes: (machines of the tested cluster out of ``m = 10``, the design's scales).
LR_PROBES = ((3, (1.5, 1.0, 0.6)), (7, (0.5, 0.4, 0.3)), (5, (1.2, 0.3, 0.3)))


def _lr_runs(m_j, scales, lrs, n_iter=400, rng=13):
    """Noiseless two-cluster problem (a rotated, stretched design); the tested cluster's model
    starts 1e-6 off its truth, the
    other cluster's truth and model are exactly 0 (so its gradient is exactly 0). Returns the
    tested model's final error over its initial one at each step size, and ``(p, H)``."""
    import mixlinreg as mlr

    m, n, d = 10, 20, len(scales)
    gen = np.random.default_rng(rng)
    rot = np.linalg.qr(gen.standard_normal((d, d)))[0]  # H not diagonal: its diagonal is no answer
    X = (gen.standard_normal((m, n, d)) * np.asarray(scales)) @ rot
    star = np.array([np.full(d, 50.0), np.zeros(d)])
    labels = (np.arange(m) >= m_j).astype(int)
    y = np.einsum("mnd,md->mn", X, star[labels])
    y[labels == 1] = 0.0
    e0 = 1e-6 * gen.standard_normal(d)
    init = np.array([star[0] + e0, star[1]])
    lrs = np.asarray(lrs, dtype=float)
    out = mlr.ifca(X, y, np.repeat(init[None], len(lrs), 0), lrs, n_iter=n_iter,
                   dtype=np.float64, n_threads=1)
    ratio = np.linalg.norm(out.theta[:, 0] - star[0], axis=1) / np.linalg.norm(e0)
    ratio[out.diverged] = np.inf
    Xj = X[:m_j]
    return ratio, (m_j / m, np.einsum("mnd,mne->de", Xj, Xj) / (m_j * n))


def check_lr_max(fn):
    """Exercise 3: ``fn(p, H) -> lr_max``, the largest step at which a correctly clustered model
    converges, for a cluster holding a fraction ``p`` of the machines whose design covariance
    (``sum_i X_i^T X_i / (m_j n)`` over its machines) is ``H``.

    On each of three noiseless problems (:data:`LR_PROBES`) IFCA runs 400 iterations at 0.98 and
    at 1.02 times the answer: the model must converge at the first and blow up at the second.
    """
    for m_j, scales in LR_PROBES:
        _, (p, H) = _lr_runs(m_j, scales, [1.0], n_iter=1)
        got, msg = _call(3, fn, p, H.copy())
        if msg:
            print(msg)
            return False
        if _number(got) is None:
            return _verdict(3, False, f"expected a number, got {got!r}")
        got = _number(got)
        if not np.isfinite(got) or got <= 0:
            return _verdict(3, False, f"a step size is a positive number, got {got}")
        ratio, _ = _lr_runs(m_j, scales, [0.98 * got, 1.02 * got])
        if not ratio[0] < 1e-2:
            return _verdict(3, False, f"at p = {p:g} the run does not converge at 0.98 x your "
                                      f"{got:.4g}: your threshold is too large")
        if not ratio[1] > 1e2:
            return _verdict(3, False, f"at p = {p:g} the run still converges at 1.02 x your "
                                      f"{got:.4g}: your threshold is too small")
    return _verdict(3, True, "")
