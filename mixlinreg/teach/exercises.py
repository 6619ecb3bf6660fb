"""Checks for the lesson's exercises (``experiments/tutorial.py``, section 14).

Each ``check_*`` takes the student's function, runs it on probes, compares it with what the
package itself does on those probes (:func:`mixlinreg.ifca`; for exercise 5 the weights of
:func:`mixlinreg.baselines.soft_ifca` against EM's posterior computed from scipy's normal
density; for exercise 6 :meth:`mixlinreg.IFCA.bic`), prints one line and returns True (correct)
or False. The reference is that behaviour, not a formula written here, so reading a check does
not give its answer away. A function that still raises :class:`NotImplementedError` (the
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

__all__ = ["check_assign", "check_factor", "check_lr_max", "check_objective",
           "check_em_temperature", "check_n_parameters", "check_model_step",
           "check_participation", "FACTOR_G"]

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
    _, msg = _call(2, fn, FACTOR_G[0])
    if msg:  # before the measurement: a stub costs nothing
        print(msg)
        return False
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


# ------------------------------------------------------------------ exercises of the deeper lesson


def _float_answer(n, fn, *args):
    """The student's number at ``args``; ``(value, None)`` or ``(None, message)``."""
    got, msg = _call(n, fn, *args)
    if msg:
        return None, msg
    val = _number(got)
    if val is None or not np.isfinite(val):
        return None, f"exercise {n}: not yet: expected a finite number, got {got!r}"
    return val, None


def check_objective(fn):
    """Exercise 4: ``fn(X, y, theta) -> L``, IFCA's objective ``sum_i min_j F_i(theta_j)``
    (``F_i`` machine i's mean squared error), a number.

    Compared with ``m`` times the training loss :func:`mixlinreg.ifca` reports at 12 random sets
    of models on two problems (``n_iter=0`` evaluates the models without a step).
    """
    import mixlinreg as mlr

    from ._runs import line_mixture

    for mix, seed in ((line_mixture(k=3, m=30, n=15, sigma=0.5, rng=0), 14),
                      (line_mixture(k=2, m=12, n=7, sigma=1.0, rng=5), 15)):
        probes = np.random.default_rng(seed).normal(0.0, 1.5, (6, mix.k, 2))
        ref = mlr.ifca(mix.X, mix.y, probes, 0.5, n_iter=0, dtype=np.float64,
                       n_threads=1).loss * mix.X.shape[0]
        for r, theta in enumerate(probes):
            got, msg = _float_answer(4, fn, mix.X, mix.y, theta.copy())
            if msg:
                print(msg)
                return False
            if not abs(got - ref[r]) <= 1e-8 * max(1.0, abs(ref[r])):
                return _verdict(4, False, f"at probe {r} (m = {mix.X.shape[0]}) IFCA's objective "
                                          f"is {ref[r]:.6g}, yours {got:.6g} (a sum over machines "
                                          "of each machine's loss at the model it picks)")
    return _verdict(4, True, "")


#: Exercise 5's probes: (sigma, n) of a two-line problem whose lines are close, so that EM's
#: weights are far from 0 and 1 and a wrong temperature shows.
EM_PROBES = ((0.5, 15), (1.0, 4), (2.0, 9), (0.3, 2))


def _em_posterior(mix, theta, sigma):
    """EM's E-step for the model: each machine's posterior over the k lines, equal priors, from
    the Gaussian likelihood of its n points (scipy's normal log-density)."""
    from scipy.special import softmax
    from scipy.stats import norm

    mean = np.einsum("mnd,kd->mnk", mix.X, theta)
    loglik = norm.logpdf(mix.y[:, :, None], loc=mean, scale=sigma).sum(axis=1)  # (m, k)
    return softmax(loglik, axis=1)


def check_em_temperature(fn):
    """Exercise 5: ``fn(sigma, n) -> temperature`` at which soft IFCA's weights
    (:func:`mixlinreg.baselines.soft_ifca`) are EM's posterior for Gaussian noise ``sigma`` and
    ``n`` points per machine (equal cluster weights).

    On each probe of :data:`EM_PROBES` the weights soft IFCA computes at your temperature are
    compared with the posterior computed from the normal density of the machines' points.
    """
    from ..baselines import soft_ifca
    from ._runs import line_mixture

    for sigma, n in EM_PROBES:
        got, msg = _float_answer(5, fn, sigma, n)
        if msg:
            print(msg)
            return False
        if got <= 0:
            return _verdict(5, False, f"a temperature is positive, got {got} at sigma = {sigma}, "
                                      f"n = {n}")
        star = 1.2 * sigma / np.sqrt(n) * np.array([[0.5, 0.5], [-0.5, -0.5]])
        mix = line_mixture(k=2, m=16, n=n, sigma=sigma, theta_star=star, rng=16)
        ref = _em_posterior(mix, mix.theta_star, sigma)
        w = soft_ifca(mix.X, mix.y, mix.theta_star, 0.5, temperature=got,
                      n_iter=0).extra["weights"]
        gap = float(np.abs(w - ref).max())
        if not gap <= 1e-6:
            return _verdict(5, False, f"at sigma = {sigma}, n = {n} soft IFCA's weights at your "
                                      f"temperature {got:.4g} differ from EM's posterior by up "
                                      f"to {gap:.3g} (they must agree to 1e-6: the temperature "
                                      "is exact, a rounded number is not)")
    return _verdict(5, True, "")


#: Exercise 6's probes: (k, d).
NPARAM_PROBES = ((1, 2), (2, 2), (3, 2), (2, 5), (4, 3), (5, 1))


def _bic_penalty_count(k, d, m=30, n=6):
    """The parameter count :meth:`mixlinreg.IFCA.bic` uses, read off the estimator itself:
    BIC - AIC = p (log m - 2) on the same fit."""
    import warnings

    import mixlinreg as mlr

    gen = np.random.default_rng(17)
    X, y = gen.standard_normal((m, n, d)), gen.standard_normal((m, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty models are fine here: only the count matters
        est = mlr.IFCA(n_clusters=k, lr=0.1, n_init=1, n_iter=1, random_state=18,
                       n_threads=1).fit(X, y)
    return (est.bic(X, y) - est.aic(X, y)) / (np.log(m) - 2.0)


#: Exercise 6's hints: common wrong counts (as functions of k, d) and the mistake each makes. A
#: wrong answer that equals one of them on every probe of :data:`NPARAM_PROBES` gets its hint.
NPARAM_MISTAKES = (
    (lambda k, d: k * d, "k d counts the models only: the mixing weights and the noise variance "
                         "are estimated too"),
    (lambda k, d: k * d + k - 1, "the noise variance sigma^2 is estimated too"),
    (lambda k, d: k * d + 1, "the mixing weights are estimated too"),
    (lambda k, d: k * d + k + 1, "the k mixing weights sum to 1: only k - 1 of them are free"),
    (lambda k, d: k * d + 2 * k - 1, "one noise variance is shared by all models, not one per "
                                     "model"),
    (lambda k, d: k, "each of the k models has d coefficients"),
    (lambda k, d: d, "there are k models of d coefficients each"),
)


def _nparam_hint(fn, got, ref):
    """The hint for a wrong count: the mistake of :data:`NPARAM_MISTAKES` the answer equals on
    every probe, or, if none, which way it is off."""
    vals = []
    for k, d in NPARAM_PROBES:
        v, msg = _float_answer(6, fn, k, d)
        if msg:
            break
        vals.append(v)
    else:
        for formula, hint in NPARAM_MISTAKES:
            if all(abs(v - formula(k, d)) < 1e-6 for v, (k, d) in zip(vals, NPARAM_PROBES)):
                return hint
    return ("too many: the machines' assignments are not parameters (they are summed out of the "
            "likelihood), and the k mixing weights have k - 1 free" if got > ref
            else "too few: something estimated is not counted")


def check_n_parameters(fn):
    """Exercise 6: ``fn(k, d) -> p``, the free parameters BIC charges for a mixture of k linear
    regressions in d features (what :meth:`mixlinreg.IFCA.bic` counts, without ``shared``).

    The reference is read off the estimator: on one fit, ``bic - aic = p (log m - 2)``, at every
    (k, d) of :data:`NPARAM_PROBES`; a wrong answer gets the hint of the mistake it matches
    (:data:`NPARAM_MISTAKES`). A count is a number: a formula equal to the right one for every
    k and d (``k (d + 1)`` is ``k d + (k - 1) + 1``) is the right count.
    """
    for k, d in NPARAM_PROBES:
        got, msg = _float_answer(6, fn, k, d)
        if msg:
            print(msg)
            return False
        ref = _bic_penalty_count(k, d)
        if not abs(got - ref) < 1e-6:
            hint = _nparam_hint(fn, got, ref)
            return _verdict(6, False, f"at k = {k}, d = {d} BIC counts {ref:.0f} parameters, "
                                      f"yours {got:g} ({hint})")
    return _verdict(6, True, "")


#: Exercise 7's probes: (machines of cluster 0 out of ``m = 10``, gradient-averaging step).
MODEL_STEP_PROBES = ((3, 0.5), (7, 0.5), (5, 1.2))


def check_model_step(fn):
    """Exercise 7: ``fn(lr, m, m_j) -> lr_model``, the step of model averaging
    (``averaging="model"``, one local step) that moves model j exactly as gradient averaging
    with step ``lr`` does, for a model chosen by ``m_j`` of the ``m`` machines.

    On each probe one iteration of :func:`mixlinreg.ifca` with each option, from the same start
    (models at the truth plus an offset), must give the same model 0.
    """
    import mixlinreg as mlr

    gen = np.random.default_rng(19)
    for m_j, lr in MODEL_STEP_PROBES:
        m, n = 10, 8
        X = gen.standard_normal((m, n, 2))
        star = np.array([[4.0, 0.0], [-4.0, 0.0]])
        labels = (np.arange(m) >= m_j).astype(int)
        y = np.einsum("mnd,md->mn", X, star[labels]) + 0.1 * gen.standard_normal((m, n))
        init = star + np.array([[0.3, -0.4], [0.2, 0.1]])
        got, msg = _float_answer(7, fn, lr, m, m_j)
        if msg:
            print(msg)
            return False
        if got <= 0:
            return _verdict(7, False, f"a step size is positive, got {got}")
        kw = dict(n_iter=1, dtype=np.float64, n_threads=1)
        grad = mlr.ifca(X, y, init, lr, **kw)
        if not np.array_equal(grad.labels[0], labels):  # the probe itself is sound
            raise RuntimeError("exercise 7's probe misassigns a machine")
        model = mlr.ifca(X, y, init, got, averaging="model", local_steps=1, **kw)
        gap = float(np.linalg.norm(model.theta[0, 0] - grad.theta[0, 0]))
        if not gap <= 1e-9:
            return _verdict(7, False, f"with m_j = {m_j} of m = {m} and lr = {lr}, model averaging "
                                      f"at your step {got:.4g} puts model 1 {gap:.3g} away from "
                                      "where gradient averaging puts it")
    return _verdict(7, True, "")


#: Exercise 8's probes: (machines per round ``s``, machines ``m``), small enough that every one
#: of the ``C(m, s)`` rounds is run.
PARTICIPATION_PROBES = ((2, 6), (3, 7), (5, 8), (1, 5), (6, 7))


def _mean_step_ratio(s, m, n=8):
    """Exact: the mean over every round of ``s`` of the ``m`` machines (all ``C(m, s)`` subsets,
    each equally likely, as ``participation=s`` draws them) of one IFCA step, projected on the
    full-participation step, over its squared length."""
    from itertools import combinations

    import mixlinreg as mlr

    gen = np.random.default_rng(20)
    X = gen.standard_normal((m, n, 2))
    star = np.array([[3.0, 0.0], [-3.0, 0.0]])
    labels = np.arange(m) % 2
    y = np.einsum("mnd,md->mn", X, star[labels]) + 0.1 * gen.standard_normal((m, n))
    init = star + np.array([[0.5, -0.5], [0.4, 0.3]])
    kw = dict(n_iter=1, dtype=np.float64, n_threads=1)
    full = mlr.ifca(X, y, init, 0.5, **kw).theta[0] - init
    rounds = list(combinations(range(m), s))
    mask = np.zeros((1, len(rounds), m), dtype=np.bool_)
    for r, chosen in enumerate(rounds):
        mask[0, r, list(chosen)] = True
    part = mlr.ifca(X, y, np.repeat(init[None], len(rounds), 0), 0.5, participation=mask,
                    **kw).theta - init
    return float(np.sum(part.mean(0) * full) / np.sum(full * full))


def check_participation(fn, rtol=1e-9):
    """Exercise 8: ``fn(s, m) -> r``: with ``s`` of the ``m`` machines taking part in a round
    (``participation=s``), the expected step of a model is ``r`` times the step with every
    machine taking part (models held fixed). At each (s, m) of :data:`PARTICIPATION_PROBES` the
    expectation is computed exactly, as the mean over all ``C(m, s)`` rounds; the answer must
    match it to ``rtol`` (relative): the answer is exact.
    """
    for s, m in PARTICIPATION_PROBES:
        got, msg = _float_answer(8, fn, s, m)
        if msg:
            print(msg)
            return False
        exact = _mean_step_ratio(s, m)
        if not abs(got - exact) <= rtol * abs(exact):
            return _verdict(8, False, f"at s = {s} of m = {m} the mean step over all rounds is "
                                      f"{exact:.6g} of the full one, yours {got:.6g} (exact to "
                                      f"{rtol:g} relative; the server still divides by m)")
    return _verdict(8, True, "")
