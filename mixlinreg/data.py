"""Synthetic data for IFCA: mixtures of linear regressions, two strongly convex families (logistic
and heavy-tailed linear), and rows for true parameters the caller fixes (:func:`draw_rows`, the
data of the theory studies). Every generator of the package draws its rows here.

This module holds the containers (:class:`Mixture`, :class:`Trial`), the argument checks of the
generators and the public generators themselves (:func:`draw_trial`, :func:`make_mixture`,
:func:`make_student_t_mixture`, :func:`make_logistic_mixture`). The low-level draws they are built
from (patterns, Gaussian arrays, noise, signals) and :func:`draw_rows` / :func:`draw_responses`
live in the private module :mod:`mixlinreg._draws`; the two public ones are re-exported here.

The initializations live in :mod:`mixlinreg.inits` (re-exported here), the separation ``Delta``
and centres at an exact separation in :mod:`mixlinreg.geometry`.

Conventions
-----------
* ``m`` machines, ``n`` points per machine, dimension ``d``, ``k`` clusters. ``X`` has shape
  ``(m, n, d)``, ``y`` shape ``(m, n)``, ``theta_star`` shape ``(k, d)``, ``labels`` shape ``(m,)``.
* Machines are assigned to clusters contiguously: the first ``sizes[0]`` machines form cluster 0, the
  next ``sizes[1]`` cluster 1, and so on. The default is equal sizes, machine ``i`` in cluster
  ``i // (m / k)`` (the authors' code), which needs ``m % k == 0``.
* All randomness comes from one ``numpy.random.Generator`` built with ``as_generator(rng)``. Gaussian
  draws (``X``, noise, directions) are always made in float64 and then rounded to ``dtype``, so a
  float32 data set is exactly the float64 data set of the same seed rounded to float32.
* Two scalings of the true parameters (``theta_scale``):

  - ``"code"``: ``theta*_j = R * b_j`` with ``b_j`` a Bernoulli(0.5) 0/1 pattern, NOT rescaled, as in
    the authors' public code; ``||theta*_j|| ~ R sqrt(d / 2)``.
  - ``"norm"``: ``theta*_j = R * b_j / ||b_j||``, the paper's text ("rescaled to l2 norm R").

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning, Section 5.1
(linear model), Section 5.2 (strongly convex losses), Section 6.1 (synthetic experiment).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._draws import (  # draw_responses, draw_rows, DuplicateClustersWarning re-exported
    DuplicateClustersWarning,
    _check_labels,
    _noise,
    _normal,
    _patterns,
    _signal,
    _unit,
    draw_responses,
    draw_rows,
)
from ._validation import (
    as_generator,
    check_choice,
    check_dtype,
    check_float,
    check_int,
)
from .inits import init_bernoulli, init_close, separation, tie_shared  # noqa: F401 (re-exported)

__all__ = [
    "Mixture",
    "Trial",
    "draw_trial",
    "make_mixture",
    "init_bernoulli",
    "init_close",
    "make_logistic_mixture",
    "make_student_t_mixture",
    "draw_rows",
    "draw_responses",
    "DuplicateClustersWarning",
]

THETA_SCALES = ("code", "norm")


# --------------------------------------------------------------------------------------------------
# argument checks and labels of the generators (the draws are in _draws.py)
# --------------------------------------------------------------------------------------------------


def _check_shape_args(m, n, d, k):
    """Validate the problem size; ``k`` must also be at most ``m``."""
    m = check_int("m", m, low=1)
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    k = check_int("k", k, low=1)
    if k > m:
        raise ValueError(f"k must be in [1, m] = [1, {m}] (every cluster needs a machine), got {k}")
    return m, n, d, k


def _labels(m, k, sizes):
    """Contiguous int64 cluster labels of the ``m`` machines (``sizes=None``: equal sizes)."""
    if sizes is None:
        if m % k:
            raise ValueError(
                f"m must be divisible by k when sizes is None (equal cluster sizes, machine i in "
                f"cluster i // (m / k)), got m={m}, k={k}; pass sizes=[...] for unequal clusters"
            )
        return np.arange(m, dtype=np.int64) // (m // k)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise TypeError(f"sizes must be None or a sequence of k={k} positive integers, got {sizes!r}")
    if np.ndim(sizes) != 1 or len(sizes) != k:
        raise ValueError(
            f"sizes must have length k={k}, got {len(sizes) if np.ndim(sizes) == 1 else sizes!r}"
        )
    sizes = [check_int(f"sizes[{j}]", s, low=1) for j, s in enumerate(sizes)]
    if sum(sizes) != m:
        raise ValueError(f"sizes must sum to m={m}, got {sizes} (sum {sum(sizes)})")
    return np.repeat(np.arange(k, dtype=np.int64), sizes)


def _check_R_sigma(R, sigma):
    return check_float("R", R, low=0.0), check_float("sigma", sigma, low=0.0)


def _check_scale_fits(R, sigma, d, dtype):
    """Refuse ``R``, ``sigma`` whose data would overflow ``dtype`` before anything is drawn.

    ``|<x, theta*>| <= R ||x||_1``-type worst cases are far too pessimistic; this uses 8 standard
    deviations of the Gaussian draws: ``|y| <= 8 (R sqrt(d) + sigma)`` (the exact check on the drawn
    ``y`` follows in :meth:`Trial.y`).
    """
    big = float(np.finfo(dtype).max)
    for name, v in (("R", R), ("sigma", sigma)):
        if v > big:
            raise OverflowError(f"{name} = {v!r} overflows {np.dtype(dtype).name} (largest {big:.3g})")
    bound = 8.0 * (R * math.sqrt(d) + sigma)
    if bound > big:
        raise OverflowError(f"R = {R!r}, sigma = {sigma!r} with d = {d} give responses y of size up to "
                            f"8 (R sqrt(d) + sigma) = {bound:.3g}, which overflows "
                            f"{np.dtype(dtype).name} (largest {big:.3g}); use smaller R and sigma "
                            "or dtype=float64")


# --------------------------------------------------------------------------------------------------
# containers
# --------------------------------------------------------------------------------------------------


class _MachineData:
    """What :class:`Mixture` and :class:`Trial` share: features ``X`` of shape (m, n, d), one block of
    ``n`` points per machine, and the sizes read from it."""

    def _check_X(self):
        if np.ndim(self.X) != 3:
            raise ValueError(f"X must have 3 dimensions (m, n, d), got shape {np.shape(self.X)}")
        return self.X.shape

    @property
    def m(self) -> int:
        """Number of machines."""
        return self.X.shape[0]

    @property
    def n(self) -> int:
        """Number of points per machine."""
        return self.X.shape[1]

    @property
    def d(self) -> int:
        """Dimension."""
        return self.X.shape[2]


@dataclass(frozen=True, eq=False)
class Mixture(_MachineData):
    """One data set of a mixture of regressions spread over ``m`` machines.

    Arrays are stored as given (no copy); data sets built from one :class:`Trial` share ``X``.
    Equality is identity (``eq=False``): compare fields with ``numpy.array_equal``.

    Parameters
    ----------
    X : ndarray of shape (m, n, d)
        Features; ``X[i]`` holds the ``n`` points of machine ``i``.
    y : ndarray of shape (m, n)
        Responses.
    theta_star : ndarray of shape (k, d)
        True parameters, one row per cluster.
    labels : ndarray of shape (m,)
        True cluster of each machine (stored as int64).
    R : float
        Scale of the true parameters (see ``theta_scale``).
    sigma : float
        Noise level: standard deviation of the additive noise. ``nan`` for the logistic family, whose
        randomness is in the Bernoulli labels, not in an additive noise.
    theta_scale : str
        How ``theta_star`` was scaled: ``"code"`` (``R`` times a 0/1 pattern), ``"norm"`` (rows of norm
        ``R``) or ``"gaussian"`` (logistic family: Gaussian directions rescaled to norm ``R``).

    Examples
    --------
    >>> from mixlinreg.data import make_mixture
    >>> mix = make_mixture(m=6, n=5, d=4, k=2, R=1.0, sigma=0.1, rng=0)
    >>> mix.m, mix.n, mix.d, mix.k
    (6, 5, 4, 2)
    >>> mix.labels.tolist()
    [0, 0, 0, 1, 1, 1]

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Sections 3 and 5.1.
    """

    X: np.ndarray
    y: np.ndarray
    theta_star: np.ndarray
    labels: np.ndarray
    R: float
    sigma: float
    theta_scale: str

    def __post_init__(self):
        m, n, d = self._check_X()
        if np.shape(self.y) != (m, n):
            raise ValueError(f"y must have shape ({m}, {n}), got {np.shape(self.y)}")
        if np.ndim(self.theta_star) != 2 or np.shape(self.theta_star)[1] != d:
            raise ValueError(f"theta_star must have shape (k, {d}), got {np.shape(self.theta_star)}")
        k = self.theta_star.shape[0]
        object.__setattr__(self, "labels", _check_labels("labels", self.labels, m, k))

    @property
    def k(self) -> int:
        """Number of clusters."""
        return self.theta_star.shape[0]

    @property
    def separation(self) -> float:
        """Delta: the minimum l2 distance between two rows of ``theta_star`` (inf when k == 1),
        computed with scaling (rows closer than 1e-154 are not called equal)."""
        return separation(self.theta_star)


@dataclass(frozen=True, eq=False)
class Trial(_MachineData):
    """The random part of one trial, shared by every (R, sigma) cell of that trial.

    As in the authors' code, all cells of a trial use the same features ``X``, the same 0/1 patterns
    ``B`` and the same standard noise ``z``; only the scalars change:
    ``y_i = R * X_i u_{labels_i} + sigma * z_i`` with ``u_j = B_j`` (``theta_scale="code"``) or
    ``u_j = B_j / ||B_j||`` (``"norm"``). Build it with :func:`draw_trial`.

    Parameters
    ----------
    X : ndarray of shape (m, n, d)
        Standard normal features.
    B : ndarray of shape (k, d)
        Bernoulli(0.5) 0/1 patterns, no row all zero, same dtype as ``X``.
    z : ndarray of shape (m, n)
        Standard normal noise.
    labels : ndarray of shape (m,)
        Cluster of each machine (int64).

    Notes
    -----
    ``X @ u_j`` is computed once per ``theta_scale`` and cached, so evaluating many cells costs one
    pass over ``X``. ``y(R, 0) == R * y(1, 0)`` holds exactly.

    Examples
    --------
    >>> from mixlinreg.data import draw_trial
    >>> trial = draw_trial(m=4, n=3, d=5, k=2, rng=1)
    >>> Y, theta = trial.panel([(0.1, 0.0), (0.5, 0.2)])
    >>> Y.shape, theta.shape
    ((2, 4, 3), (2, 2, 5))

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Section 6.1 (Figure 2).
    """

    X: np.ndarray
    B: np.ndarray
    z: np.ndarray
    labels: np.ndarray
    _signals: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        m, n, d = self._check_X()
        if np.ndim(self.B) != 2 or np.shape(self.B)[1] != d:
            raise ValueError(f"B must have shape (k, {d}), got {np.shape(self.B)}")
        if np.shape(self.z) != (m, n):
            raise ValueError(f"z must have shape ({m}, {n}), got {np.shape(self.z)}")
        object.__setattr__(self, "labels", _check_labels("labels", self.labels, m, self.B.shape[0]))

    @property
    def k(self) -> int:
        """Number of clusters."""
        return self.B.shape[0]

    @property
    def dtype(self) -> np.dtype:
        """Floating point type of the trial's arrays."""
        return self.X.dtype

    def _unit(self, theta_scale):
        """(k, d) directions in the trial's dtype: ``theta*(R) = R * unit``."""
        return _unit(self.B, theta_scale).astype(self.dtype)

    def _signal(self, theta_scale):
        if theta_scale not in self._signals:
            self._signals[theta_scale] = _signal(self.X, self.labels, self._unit(theta_scale))
        return self._signals[theta_scale]

    def theta_star(self, R, theta_scale="code"):
        """True parameters of the cell with scale ``R``.

        Parameters
        ----------
        R : float
            Scale, ``R >= 0``.
        theta_scale : {"code", "norm"}
            ``"code"``: ``R * B`` (entries 0 or R, the authors' code); ``"norm"``: rows of ``B``
            rescaled to l2 norm ``R`` (the paper's text).

        Returns
        -------
        ndarray of shape (k, d), in the trial's dtype.
        """
        R = check_float("R", R, low=0.0)
        check_choice("theta_scale", theta_scale, THETA_SCALES)
        _check_scale_fits(R, 0.0, 1, self.dtype)
        return self.dtype.type(R) * self._unit(theta_scale)

    def y(self, R, sigma, theta_scale="code"):
        """Responses of the cell ``(R, sigma)``: ``y_i = X_i theta*_{labels_i} + sigma z_i``.

        Computed in the trial's dtype as ``R * (X_i u_j) + sigma * z_i`` (see :class:`Trial`).

        Returns
        -------
        ndarray of shape (m, n).
        """
        R, sigma = _check_R_sigma(R, sigma)
        check_choice("theta_scale", theta_scale, THETA_SCALES)
        _check_scale_fits(R, sigma, 1, self.dtype)
        t = self.dtype.type
        with np.errstate(over="ignore", invalid="ignore"):
            y = t(R) * self._signal(theta_scale) + t(sigma) * self.z
        if not np.all(np.isfinite(y)):
            raise OverflowError(f"responses y overflow {self.dtype.name} with R = {R!r}, sigma = "
                                f"{sigma!r}; use smaller R and sigma or dtype=float64")
        return y

    def mixture(self, R, sigma, theta_scale="code") -> Mixture:
        """The data set of the cell ``(R, sigma)`` as a :class:`Mixture` (``X`` is shared, not copied)."""
        R, sigma = _check_R_sigma(R, sigma)
        return Mixture(X=self.X, y=self.y(R, sigma, theta_scale),
                       theta_star=self.theta_star(R, theta_scale), labels=self.labels,
                       R=R, sigma=sigma, theta_scale=theta_scale)

    def panel(self, cells, theta_scale="code"):
        """Stack several (R, sigma) cells for one batched kernel call.

        Parameters
        ----------
        cells : sequence of (R, sigma) pairs
            At least one cell.
        theta_scale : {"code", "norm"}

        Returns
        -------
        Y : ndarray of shape (C, m, n)
            ``Y[c] == self.y(*cells[c], theta_scale)``.
        theta_star : ndarray of shape (C, k, d)
            ``theta_star[c] == self.theta_star(cells[c][0], theta_scale)``.
        """
        check_choice("theta_scale", theta_scale, THETA_SCALES)
        if isinstance(cells, (str, bytes)) or not isinstance(cells, (Sequence, np.ndarray)) \
                or len(cells) == 0:
            raise ValueError(f"cells must be a non-empty sequence of (R, sigma) pairs, got {cells!r}")
        pairs = []
        for c, cell in enumerate(cells):
            if isinstance(cell, (str, bytes)) or np.ndim(cell) != 1 or len(cell) != 2:
                raise ValueError(f"cells[{c}] must be an (R, sigma) pair, got {cell!r}")
            R = check_float(f"cells[{c}] R", cell[0], low=0.0)
            sigma = check_float(f"cells[{c}] sigma", cell[1], low=0.0)
            pairs.append((R, sigma))
        Y = np.empty((len(pairs), self.m, self.n), dtype=self.dtype)
        theta = np.empty((len(pairs), self.k, self.d), dtype=self.dtype)
        for c, (R, sigma) in enumerate(pairs):
            Y[c] = self.y(R, sigma, theta_scale)
            theta[c] = self.theta_star(R, theta_scale)
        return Y, theta



# --------------------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------------------



def _draw(m, n, d, k, sizes, rng, dtype, df):
    """Validated draw of a :class:`Trial`; its noise ``z`` is ``_noise(gen, (m, n), df)``.

    Called by the public generators only (a duplicate-pattern warning names their caller)."""
    m, n, d, k = _check_shape_args(m, n, d, k)
    dtype = check_dtype("dtype", dtype)
    labels = _labels(m, k, sizes)
    gen = as_generator(rng)
    B = _patterns(gen, k, d, "bernoulli", stacklevel=3).astype(dtype)
    X = _normal(gen, (m, n, d), dtype)
    z = _noise(gen, (m, n), df).astype(dtype, copy=False)
    return Trial(X=X, B=B, z=z, labels=labels)


def draw_trial(m, n, d, k, *, sizes=None, rng=None, dtype=np.float64) -> Trial:
    """Draw the shared random part of one trial of the Section 6.1 experiment.

    Draw order, all from the one generator ``as_generator(rng)``: the patterns ``B`` (k x d
    Bernoulli(0.5), ``gen.integers(0, 2)``; any row that comes out all zero is redrawn, so ``B`` is
    conditioned on nonzero rows, which ``theta_scale="norm"`` needs; with ``d = 1000`` a zero row has
    probability ``2**-1000``), then ``X`` (m x n x d standard normal), then ``z`` (m x n standard
    normal). Gaussian draws are made in float64 and rounded to ``dtype``.

    Parameters
    ----------
    m, n, d, k : int
        Machines, points per machine, dimension, clusters; all ``>= 1`` and ``k <= m``.
    sizes : sequence of k positive ints summing to m, optional
        Cluster sizes; machines are assigned contiguously. Default: equal sizes (requires
        ``m % k == 0``), machine ``i`` in cluster ``i // (m / k)``.
    rng : None, int, SeedSequence or Generator
    dtype : numpy.float32 or numpy.float64

    Returns
    -------
    Trial

    Examples
    --------
    >>> from mixlinreg.data import draw_trial
    >>> trial = draw_trial(m=4, n=3, d=5, k=2, rng=0)
    >>> mix = trial.mixture(R=0.5, sigma=0.1)
    >>> mix.y.shape, mix.theta_star.shape
    ((4, 3), (2, 5))

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Section 6.1.
    """
    return _draw(m, n, d, k, sizes, rng, dtype, None)


def make_mixture(m, n, d, k, R, sigma, *, theta_scale="code", sizes=None, rng=None,
                 dtype=np.float64) -> Mixture:
    """Mixture of linear regressions: ``x ~ N(0, I_d)``, ``y = <x, theta*_j> + sigma z``.

    Equal to ``draw_trial(m, n, d, k, sizes=sizes, rng=rng, dtype=dtype).mixture(R, sigma,
    theta_scale)``: the same seed gives the same data by either route.

    Parameters
    ----------
    m, n, d, k : int
        Machines, points per machine, dimension, clusters; all ``>= 1`` and ``k <= m``.
    R : float
        Scale of the true parameters, ``R >= 0``.
    sigma : float
        Noise standard deviation, ``sigma >= 0``.
    theta_scale : {"code", "norm"}
        ``"code"``: ``theta*_j = R * b_j``, entries 0 or R (authors' code); ``"norm"``:
        ``||theta*_j|| = R`` (paper's text).
    sizes : sequence of k positive ints summing to m, optional
        Cluster sizes (contiguous machines). Default equal sizes, which requires ``m % k == 0``.
    rng : None, int, SeedSequence or Generator
    dtype : numpy.float32 or numpy.float64

    Returns
    -------
    Mixture

    Examples
    --------
    >>> from mixlinreg.data import make_mixture
    >>> mix = make_mixture(100, 100, 1000, 2, R=0.1, sigma=0.1, rng=0, dtype="float32")
    >>> mix.X.shape, mix.X.dtype
    ((100, 100, 1000), dtype('float32'))

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Sections 5.1 and 6.1.
    """
    R, sigma = _check_R_sigma(R, sigma)
    check_choice("theta_scale", theta_scale, THETA_SCALES)
    _check_scale_fits(R, sigma, check_int("d", d, low=1), check_dtype("dtype", dtype))
    return _draw(m, n, d, k, sizes, rng, dtype, None).mixture(R, sigma, theta_scale)  # = draw_trial


def make_student_t_mixture(m, n, d, k, R, sigma, df=5.0, *, theta_scale="code", sizes=None,
                           rng=None, dtype=np.float64) -> Mixture:
    """Mixture of linear regressions with heavy-tailed Student t noise of variance ``sigma**2``.

    Same as :func:`make_mixture` (same draw order: patterns, ``X``, noise) except that the noise is
    ``sigma * t * sqrt((df - 2) / df)`` with ``t`` Student t with ``df`` degrees of freedom, i.e. a
    unit-variance t scaled by ``sigma``. It needs ``df > 2`` for a finite variance; the fourth
    moment is finite only for ``df > 4``. Meant for the Huber loss (Section 5.2).

    Parameters
    ----------
    m, n, d, k, R, sigma, theta_scale, sizes, rng, dtype
        As in :func:`make_mixture`.
    df : float, default 5.0
        Degrees of freedom, finite and ``> 2``.

    Returns
    -------
    Mixture

    Examples
    --------
    >>> from mixlinreg.data import make_student_t_mixture
    >>> mix = make_student_t_mixture(4, 50, 3, 2, R=1.0, sigma=0.5, df=3.0, rng=0)
    >>> mix.y.shape
    (4, 50)

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Section 5.2
    (Assumptions 4-5: bounded variance).
    """
    R, sigma = _check_R_sigma(R, sigma)
    df = check_float("df", df, low=2.0, low_open=True)
    check_choice("theta_scale", theta_scale, THETA_SCALES)
    _check_scale_fits(R, sigma, check_int("d", d, low=1), check_dtype("dtype", dtype))
    return _draw(m, n, d, k, sizes, rng, dtype, df).mixture(R, sigma, theta_scale)


def make_logistic_mixture(m, n, d, k, R, *, sizes=None, rng=None, dtype=np.float64) -> Mixture:
    """Mixture of logistic regressions (a mixture of linear classifiers).

    ``x ~ N(0, I_d)`` and ``y ~ Bernoulli(sigmoid(<x, theta*_j>))`` in ``{0., 1.}``, with
    ``theta*_j = R * g_j / ||g_j||``, ``g_j`` standard normal in R^d. Draw order: ``g`` (k x d), then
    ``X`` (m x n x d), then the uniforms ``u`` (m x n); ``y = 1`` where ``u < sigmoid(x . theta*)``.
    The returned :class:`Mixture` has ``sigma = nan`` (no additive noise) and
    ``theta_scale = "gaussian"``.

    Parameters
    ----------
    m, n, d, k : int
        As in :func:`make_mixture`.
    R : float
        Norm of every true parameter, ``R >= 0`` (larger R: less label noise).
    sizes, rng, dtype
        As in :func:`make_mixture`.

    Returns
    -------
    Mixture

    Examples
    --------
    >>> from mixlinreg.data import make_logistic_mixture
    >>> mix = make_logistic_mixture(4, 20, 3, 2, R=2.0, rng=0)
    >>> sorted(set(mix.y.ravel().tolist()))
    [0.0, 1.0]

    References
    ----------
    Ghosh et al., An Efficient Framework for Clustered Federated Learning, Section 5.2.
    """
    m, n, d, k = _check_shape_args(m, n, d, k)
    R = check_float("R", R, low=0.0)
    dtype = check_dtype("dtype", dtype)
    labels = _labels(m, k, sizes)
    gen = as_generator(rng)
    theta = (R * _unit(_patterns(gen, k, d, "gaussian", stacklevel=2), "norm")).astype(dtype)
    X, y = draw_rows(labels, theta, n, loss="logistic", rng=gen, dtype=dtype, summation="cluster")
    return Mixture(X=X, y=y, theta_star=theta, labels=labels, R=R, sigma=math.nan,
                   theta_scale="gaussian")

