"""The runs the teaching views draw: small problems and IFCA paths, all computed by the package.

Every model iterate, assignment, loss and distance shown by :mod:`mixlinreg.teach` comes from
:func:`mixlinreg.ifca` (or :func:`mixlinreg.baselines.soft_ifca` for the soft variant); nothing here
re-implements an update. The per-iteration assignments, losses and distances are the kernel's trace
(``trace=True``); the kernel does not record the model iterates, so :func:`ifca_path` obtains
``theta^(t)`` by chaining one-iteration calls, which is the same computation (full data, every
machine, no resampling) and is checked against the single ``n_iter`` call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import as_generator, check_array, check_float, check_int
from ..data import draw_responses
from ..geometry import min_separation, simplex_centers

__all__ = ["LineMixture", "Path", "BasinMap", "Contraction", "line_mixture", "ifca_path",
           "soft_path", "basin_map", "contraction_run", "THETA_STAR"]

#: True ``(intercept a, slope b)`` of the lines problems: clear to look at, Delta = 2.83 (k = 2)
#: and 2.5 (k = 3).
THETA_STAR = {2: ((-1.0, 1.0), (1.0, -1.0)),
              3: ((-1.5, 1.0), (1.5, 0.5), (0.0, -1.5))}


@dataclass(frozen=True)
class LineMixture:
    """A mixture of regression lines ``y = a_j + b_j t + sigma eps`` on ``m`` machines.

    Attributes
    ----------
    X : ndarray (m, n, 2)
        Design with an intercept column: ``X[i, r] = (1, t_ir)``, ``t ~ N(0, 1)`` (so
        ``E[x x^T] = I`` and the population loss is ``||theta - theta*_j||^2 + sigma^2``).
    y : ndarray (m, n)
    theta_star : ndarray (k, 2)
        True ``(a_j, b_j)``.
    labels : ndarray (m,)
        True cluster of every machine (machine ``i`` in cluster ``floor(i k / m)``).
    sigma : float
    """

    X: np.ndarray
    y: np.ndarray
    theta_star: np.ndarray
    labels: np.ndarray
    sigma: float

    @property
    def t(self):
        """The regressor ``t`` of every point, shape (m, n)."""
        return self.X[:, :, 1]

    @property
    def k(self) -> int:
        return self.theta_star.shape[0]

    @property
    def delta(self) -> float:
        """Separation ``Delta = min_{j != l} ||theta*_j - theta*_l||``."""
        return min_separation(self.theta_star)


def line_mixture(k=3, m=30, n=20, sigma=0.3, *, theta_star=None, rng=0):
    """Draw a :class:`LineMixture` (d = 2: intercept and slope).

    Parameters
    ----------
    k : int, default 3
        Number of lines, ``>= 2``; ``theta_star`` defaults to :data:`THETA_STAR` for k = 2, 3.
    m, n : int
        Machines (``>= k``) and points per machine (``>= 2``).
    sigma : float, default 0.3
        Noise standard deviation, ``>= 0``.
    theta_star : array (k, 2), optional
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    LineMixture

    Examples
    --------
    >>> from mixlinreg.teach import line_mixture
    >>> mix = line_mixture(k=2, m=10, n=5, rng=0)
    >>> mix.X.shape, mix.y.shape, float(mix.X[0, 0, 0])
    ((10, 5, 2), (10, 5), 1.0)
    """
    k = check_int("k", k, low=2)
    m = check_int("m", m, low=k)
    n = check_int("n", n, low=2)
    sigma = check_float("sigma", sigma, low=0.0)
    if theta_star is None:
        if k not in THETA_STAR:
            raise ValueError(f"theta_star is required for k = {k} (defaults exist for k in "
                             f"{sorted(THETA_STAR)})")
        theta_star = THETA_STAR[k]
    theta_star = check_array("theta_star", theta_star, shape=(k, 2), dtype=np.float64)
    gen = as_generator(rng)
    labels = (np.arange(m) * k) // m
    t = gen.standard_normal((m, n))
    X = np.stack([np.ones_like(t), t], axis=-1)
    y = draw_responses(np.einsum("mnd,md->mn", X, theta_star[labels]), sigma=sigma, rng=gen)
    return LineMixture(X=X, y=y, theta_star=theta_star, labels=labels, sigma=float(sigma))


@dataclass(frozen=True)
class Path:
    """One run's path: model iterates and, at each of them, the assignments and the loss.

    Attributes
    ----------
    theta : ndarray (T + 1, k, d)
        ``theta^(t)``, ``t = 0..T``.
    labels : ndarray (T + 1, m)
        Cluster of every machine at ``theta^(t)`` (argmin of its loss; soft IFCA: largest weight).
    loss : ndarray (T + 1,)
        Training loss ``(1/m) sum_i min_j F_i(theta_j^(t))``.
    dist : ndarray (T + 1,)
        Matched distance to the truth (:func:`mixlinreg.dist_matched`).
    weights : ndarray (T + 1, m, k) or None
        Soft IFCA's weights (None for hard IFCA).
    diverged : bool
    lr : float
    """

    theta: np.ndarray
    labels: np.ndarray
    loss: np.ndarray
    dist: np.ndarray
    weights: np.ndarray | None
    diverged: bool
    lr: float


def _check_init(mix, init):
    return check_array("init", init, shape=(mix.theta_star.shape[0], mix.X.shape[2]),
                       dtype=np.float64)


def ifca_path(mix, init, lr, n_iter):
    """Run IFCA (gradient averaging, full data) and return its whole :class:`Path`.

    Assignments, losses and distances are the kernel's trace of one ``n_iter`` call; the iterates
    come from chaining ``n_iter`` one-iteration calls of :func:`mixlinreg.ifca`, and the last of
    them is checked against the single call's final models.

    Parameters
    ----------
    mix : LineMixture or Mixture
        Anything with ``X``, ``y``, ``theta_star``.
    init : array (k, d)
    lr : float
    n_iter : int

    Returns
    -------
    Path

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.teach import line_mixture, ifca_path
    >>> mix = line_mixture(k=2, m=10, n=20, rng=0)
    >>> init = mlr.init_close(mix.theta_star, 0.2, 1, rng=1)[0]
    >>> p = ifca_path(mix, init, lr=0.5, n_iter=5)
    >>> p.theta.shape, p.labels.shape
    ((6, 2, 2), (6, 10))
    """
    from ..ifca import ifca

    init = _check_init(mix, init)
    n_iter = check_int("n_iter", n_iter, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    kw = dict(dtype=np.float64, n_threads=1)
    res = ifca(mix.X, mix.y, init[None], lr, n_iter=n_iter, trace=True,
               theta_star=mix.theta_star, **kw)
    thetas = [init]
    cur = init
    frozen = False
    for _ in range(n_iter):
        if not frozen:
            step = ifca(mix.X, mix.y, cur[None], lr, n_iter=1, **kw)
            frozen = bool(step.diverged[0])
            cur = step.theta[0]
        thetas.append(cur)
    theta = np.stack(thetas)
    if not np.allclose(theta[-1], res.theta[0], rtol=1e-9, atol=1e-12, equal_nan=True):
        raise RuntimeError("chained one-iteration IFCA calls disagree with the single call; "
                           "the iterates cannot be trusted")
    return Path(theta=theta, labels=res.trace.labels[:, 0], loss=res.trace.loss[:, 0],
                dist=res.trace.dist_matched()[:, 0], weights=None,
                diverged=bool(res.diverged[0]), lr=lr)


def soft_path(mix, init, lr, n_iter, *, temperature):
    """Soft IFCA's :class:`Path` (chained one-iteration calls of
    :func:`mixlinreg.baselines.soft_ifca`), with its weights at every iterate.

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.teach import line_mixture, soft_path
    >>> mix = line_mixture(k=2, m=10, n=20, rng=0)
    >>> init = mlr.init_close(mix.theta_star, 0.2, 1, rng=1)[0]
    >>> p = soft_path(mix, init, lr=0.5, n_iter=3, temperature=0.5)
    >>> p.weights.shape
    (4, 10, 2)
    """
    from ..baselines import soft_ifca
    from ..metrics import dist_matched

    init = _check_init(mix, init)
    n_iter = check_int("n_iter", n_iter, low=1)
    first = soft_ifca(mix.X, mix.y, init, lr, temperature=temperature, n_iter=0)
    outs = [first]
    thetas = [init]
    for _ in range(n_iter):
        if outs[-1].extra["diverged"]:
            outs.append(outs[-1])
        else:
            outs.append(soft_ifca(mix.X, mix.y, thetas[-1], lr, temperature=temperature, n_iter=1))
        thetas.append(outs[-1].theta)
    theta = np.stack(thetas)
    return Path(theta=theta, labels=np.stack([o.labels for o in outs]),
                loss=np.array([o.extra["loss"] for o in outs]),
                dist=np.asarray(dist_matched(theta, mix.theta_star), dtype=float),
                weights=np.stack([o.extra["weights"] for o in outs]),
                diverged=bool(outs[-1].extra["diverged"]), lr=float(lr))


@dataclass(frozen=True)
class BasinMap:
    """Which initializations of model 1 succeed, the other models' starts held fixed.

    Attributes
    ----------
    a, b : ndarray (G,)
        Grid of model 1's starting intercept and slope.
    others : ndarray (k - 1, 2)
        Starting points of models 2..k.
    success : ndarray (G_b, G_a) of bool
        Final matched distance ``<= tol`` (and not diverged); row = b, column = a.
    iterations : ndarray (G_b, G_a)
        First iteration from which the matched distance stays ``<= tol``; NaN where it failed.
    reached : ndarray (T + 1, G_b, G_a) of bool
        Matched distance ``<= tol`` at iteration t (for the animation).
    alpha0 : float
        Assumption 1's closeness; the ball around ``theta*_1`` has radius ``(1/2 - alpha0) Delta``.
    radius, tol, lr : float
    n_iter : int
    idle : ndarray (G_b, G_a) of bool or None
        Model 1 wins no machine at any iteration (it receives no gradient, so it never moves).
    merged : ndarray (G_b, G_a) of bool or None
        At the end one model holds the machines of two or more true clusters.
    """

    a: np.ndarray
    b: np.ndarray
    others: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    reached: np.ndarray
    alpha0: float
    radius: float
    tol: float
    lr: float
    n_iter: int
    idle: np.ndarray | None = None
    merged: np.ndarray | None = None


def basin_map(mix, lr, n_iter, *, alpha0=0.25, grid=41, half_width=None, others=None, tol=None,
              rng=0):
    """Success of IFCA over a 2-D slice of initializations: model 1's start on a grid.

    All ``grid**2`` runs go into one call of :func:`mixlinreg.ifca` with ``trace=True``; a run
    succeeds when its final matched distance is ``<= tol`` (default ``0.6 sigma``, the paper's
    text rule) and it did not diverge.

    Parameters
    ----------
    mix : LineMixture
    lr : float
    n_iter : int
    alpha0 : float, default 0.25
        Closeness of Assumption 1, in (0, 0.5]. Unless ``others`` is given, models 2..k start where
        :func:`mixlinreg.init_close` puts them for this ``alpha0`` (random directions, ``rng``):
        on the boundary of their own Assumption 1 balls.
    grid : int, default 41
        Grid points per axis, ``>= 2``.
    half_width : float, optional
        Half width of the square around ``theta*_1``; default ``1.5 * max ||theta*_j - theta*_1||``
        (at least ``Delta``).
    others : array (k - 1, 2), optional
    tol : float, optional
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    BasinMap
    """
    from ..data import init_close
    from ..ifca import ifca

    star = mix.theta_star
    k = star.shape[0]
    grid = check_int("grid", grid, low=2)
    n_iter = check_int("n_iter", n_iter, low=1)
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True)
    tol = 0.6 * mix.sigma if tol is None else check_float("tol", tol, low=0.0, low_open=True)
    if not tol > 0:
        raise ValueError("tol must be > 0: pass tol explicitly when sigma = 0")
    if others is None:
        others = init_close(star, alpha0, 1, rng=rng)[0, 1:]
    others = check_array("others", others, shape=(k - 1, 2), dtype=np.float64)
    spread = float(np.max(np.linalg.norm(star - star[0], axis=1)))
    if half_width is None:
        half_width = 1.5 * max(spread, mix.delta)
    half_width = check_float("half_width", half_width, low=0.0, low_open=True)
    a = star[0, 0] + np.linspace(-half_width, half_width, grid)
    b = star[0, 1] + np.linspace(-half_width, half_width, grid)
    A, B = np.meshgrid(a, b)
    init = np.empty((grid * grid, k, 2))
    init[:, 0, 0] = A.ravel()
    init[:, 0, 1] = B.ravel()
    init[:, 1:] = others
    res = ifca(mix.X, mix.y, init, lr, n_iter=n_iter, trace=True, theta_star=star,
               dtype=np.float64, n_threads=1)
    dm = res.trace.dist_matched()                              # (T + 1, R)
    reached = (dm <= tol) & ~res.diverged[None, :]
    stays = np.flip(np.logical_and.accumulate(np.flip(reached, 0), axis=0), 0)
    success = reached[-1]
    first = np.argmax(stays, axis=0).astype(float)
    first[~success] = np.nan
    shape = (grid, grid)
    lab = res.trace.labels                                     # (T + 1, R, m)
    idle = ~(lab == 0).any(axis=(0, 2))
    held = np.einsum("rmj,mc->rjc", (lab[-1][:, :, None] == np.arange(k)).astype(float),
                     (np.asarray(mix.labels)[:, None] == np.arange(k)).astype(float)) > 0
    merged = (held.sum(-1) >= 2).any(-1)
    return BasinMap(a=a, b=b, others=others, success=success.reshape(shape),
                    iterations=first.reshape(shape),
                    reached=reached.reshape((n_iter + 1,) + shape), alpha0=alpha0,
                    radius=(0.5 - alpha0) * mix.delta, tol=tol, lr=float(lr), n_iter=n_iter,
                    idle=idle.reshape(shape), merged=merged.reshape(shape))


@dataclass(frozen=True)
class Contraction:
    """Resampled IFCA's error per iteration against Theorem 1 and Corollary 1.

    Attributes
    ----------
    err : ndarray (T + 1, R, k)
        ``||theta_j^(t) - theta*_j||`` from the kernel's trace.
    factor : Fit
        Measured contraction per iteration, ``exp`` of the least-squares slope of ``log err``
        against ``t`` over the transient (``err >= 10 *`` the predicted floor), with a bootstrap
        95% interval.
    factor_theorem : float
        Theorem 1's factor, 1/2 (at ``gamma p = 1/4``).
    factor_exact : float
        :func:`mixlinreg.theory.linear.one_step_factor` for these sizes (the finite-sample RMS
        factor of a correctly clustered step).
    floor_form : float
        Corollary 1's statistical term ``(sigma/p) sqrt(d/(m n'))`` with its unknown constant set
        to 1 (a shape, not the paper's value).
    floor_exact : float
        :func:`mixlinreg.theory.linear.stationary_rms`: the RMS floor of the correctly clustered
        iteration.
    settings : dict
    transient : ndarray (T + 1, R, k) of bool
        The points the factor was fitted on.
    """

    err: np.ndarray
    factor: object
    factor_theorem: float
    factor_exact: float
    floor_form: float
    floor_exact: float
    settings: dict
    transient: np.ndarray | None = None

    def summary(self) -> str:
        """One line: the measured factor next to the theorem's."""
        f = self.factor
        return (f"contraction per iteration: measured {f.est:.3f} [{f.lo:.3f}, {f.hi:.3f}] "
                f"(slope of log10 error {np.log10(f.est):.3f}); Theorem 1: "
                f"{self.factor_theorem:.3f} (slope {np.log10(self.factor_theorem):.3f}); exact for "
                f"these sizes: {self.factor_exact:.3f}")


def contraction_run(*, m=200, n_prime=25, d=10, sigma=0.01, n_iter=12, n_runs=4, alpha0=0.25,
                    rng=0):
    """Resampled IFCA (k = 2, equal clusters, ``gamma = 1/(4p)``) from Assumption 1 starts.

    Theorem 1's setting with **equal** cluster sizes (``p = 1/2``): fresh rows every iteration
    (``resample=True``), all machines, and the step ``gamma = 1/(4p)``, one choice of the
    theorem's ``gamma = c1/p`` (the paper leaves ``c1`` unspecified) that makes the population
    factor ``|1 - 2 gamma p|`` exactly 1/2; centres at distance ``Delta = 1``
    (:func:`mixlinreg.geometry.simplex_centers`). With unequal sizes no single step gives both
    clusters 1/2 once ``p_max > 3 p`` (``paper_checks.md``, T1).

    Returns
    -------
    Contraction

    Examples
    --------
    >>> from mixlinreg.teach import contraction_run
    >>> c = contraction_run(m=40, n_prime=10, d=4, n_iter=6, n_runs=2)
    >>> c.err.shape, c.factor_theorem
    ((7, 2, 2), 0.5)
    """
    from ..data import draw_rows, init_close
    from ..ifca import ifca
    from ..stats import Fit, linear_slope
    from ..theory.linear import cluster_labels, one_step_factor, stationary_rms

    k, p = 2, 0.5
    m = check_int("m", m, low=4)
    n_prime = check_int("n_prime", n_prime, low=1)
    d = check_int("d", d, low=2)
    n_iter = check_int("n_iter", n_iter, low=2)
    n_runs = check_int("n_runs", n_runs, low=1)
    sigma = check_float("sigma", sigma, low=0.0, low_open=True)
    gen = as_generator(rng)
    star = simplex_centers(k, d, 1.0, gen)
    labels = cluster_labels(m, (p, 1 - p))
    X, y = draw_rows(labels, star, 2 * n_iter * n_prime, sigma=sigma, rng=gen)
    init = init_close(star, alpha0, n_runs, rng=gen)
    res = ifca(X, y, init, 1.0 / (4.0 * p), n_iter=n_iter, resample=True, trace=True,
               theta_star=star, dtype=np.float64, n_threads=1)
    err = np.einsum("trjj->trj", res.trace.dist)
    N = p * m * n_prime
    floor_exact = stationary_rms(0.25, sigma, d, N)
    floor_form = float(sigma / p * np.sqrt(d / (m * n_prime)))
    T = np.arange(n_iter + 1)[:, None, None] * np.ones_like(err)
    # transient: this step and the next both well above the floor
    ok = np.zeros_like(err, dtype=bool)
    ok[:-1] = (err[:-1] >= 10 * floor_exact) & (err[1:] >= 10 * floor_exact)
    ok[1:] |= ok[:-1]
    if ok.sum() >= 3 and np.ptp(T[ok]) > 0:
        fit = linear_slope(T[ok], np.log(err[ok]), rng=gen)
        factor = Fit(float(np.exp(fit.est)), float(np.exp(fit.lo)), float(np.exp(fit.hi)), fit.n)
    else:
        raise ValueError("no transient to measure: the starts are already at the floor; lower "
                         f"sigma or alpha0 (got sigma = {sigma}, alpha0 = {alpha0})")
    return Contraction(err=err, factor=factor, factor_theorem=0.5,
                       factor_exact=one_step_factor(0.25, d, N), floor_form=floor_form,
                       floor_exact=floor_exact,
                       settings=dict(m=m, n_prime=n_prime, d=d, sigma=sigma, k=k, p=p,
                                     n_iter=n_iter, n_runs=n_runs, alpha0=alpha0,
                                     lr=1.0 / (4.0 * p)),
                       transient=ok)
