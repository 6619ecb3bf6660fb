"""The scikit-learn style estimator :class:`IFCA`.

Restarts of the batched :func:`mixlinreg.ifca` in one call, the kept run, predictions for
machines and the BIC / AIC for choosing k.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ._validation import (PARAMETERS, Either, Options, check_array, check_data_scale,
                          data_parameter_scale,
                          step_scale_note)
from . import ifca as _ifca_module
from ._problem import check_shared
from .machines import machine_arrays
from ._progress import iterations_bar
from .inits import init_bernoulli, tie_shared
from .ifca import ConvergenceWarning, DataScaleWarning, EmptyClusterWarning, ifca, kept_run

__all__ = ["IFCA"]


# the Parameters, Returns and Raises sections that bic and aic share (one text, two docstrings)
_CRITERION_SECTIONS = """Parameters
        ----------
        X : array-like of shape (m, n, d)
            Features of the machines, d = ``n_features_in_`` (they need not be the training
            machines); cast to float64, finite.
        y : array-like of shape (m, n)
            Their responses; finite.

        Returns
        -------
        float
            The {name}; only differences between fits on the same ``X``, ``y`` are meaningful.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            For ``loss`` other than ``"squared"``; ``X`` not of shape (m, n, ``n_features_in_``)
            or ``y`` not of shape (m, n); NaN or inf in either.
"""


def _criterion_doc(name):
    """Put the shared sections into a criterion's docstring at its ``<criterion sections>`` line."""

    def put(method):
        if method.__doc__:  # None under python -OO
            method.__doc__ = method.__doc__.replace("<criterion sections>",
                                                    _CRITERION_SECTIONS.format(name=name).rstrip("\n"))
        return method

    return put


class IFCA(BaseEstimator):
    """IFCA as a scikit-learn style estimator, with restarts.

    ``fit`` runs ``n_init`` initializations for every step size in ``lr`` (all in one batched
    :func:`ifca` call) and keeps the run with the lowest final training loss among those that did
    not diverge: the choice a practitioner without ground truth would make.

    Parameters
    ----------
    n_clusters : int, default 2
        Number of cluster models k.
    lr : float or sequence of float, default 0.1
        Step size, or several step sizes to sweep (each is tried with every initialization).
    n_init : int, default 10
        Initializations per step size.
    n_iter : int, default 300
        Iterations of every run, >= 0 (0: the starts are only evaluated and the best is kept).
    init : {"bernoulli", "gaussian"} or array (k, d) or (n_init, k, d)
        ``"bernoulli"``: independent coordinate-wise Bernoulli(0.5) entries (the paper's Section 6.1);
        ``"gaussian"``: standard normal entries; an array is used as given.
    loss, l2, huber_delta, averaging, local_steps, early_stop, tol, diverge_threshold, method, dtype, n_threads
        As in :func:`ifca` (``diverge_threshold="auto"`` scales with the data).
    fit_intercept : bool, default False
        Fit an intercept per model: a column of ones is added to every machine's rows, and its
        coefficient is ``intercept_``. ``l2`` penalizes the intercept too (it applies to every
        coordinate the kernel fits), unlike scikit-learn's ``Ridge``. An ``init`` array may then be
        (k, d) (intercepts start at 0) or (k, d + 1) (the last column the intercepts).
    weighting : {"uniform", "size"}, default "uniform"
        How machines of unequal sizes count (see :func:`ifca`): each once (the paper's
        objective) or each row once (``"size"``: pooled least squares for ``n_clusters=1``).
    verbose : bool, default False
        A tqdm progress bar (on stderr) over the iterations of the fit's one batched call (all
        restarts and step sizes move together); it moves after each chunk of iterations
        (about 0.2 s). Off: nothing is printed (a compile notice aside).
    random_state : None, int, SeedSequence or Generator, default None
        Source of the random initializations (numpy's ``default_rng`` reads it: an int or a
        SeedSequence gives the same starts at every ``fit``; a Generator is drawn from and
        advances, as scikit-learn's RandomState instances do). A legacy ``RandomState`` is refused.
    rng : None, int, SeedSequence or Generator
        Deprecated alias of ``random_state`` (the same values give the same results, bit for bit);
        ``fit`` warns with a FutureWarning. It will be removed in the next release. Passing both
        is an error.
    shared : None, bool array (d,) or sequence of ints, default None
        Weight sharing (see :func:`ifca`): coordinates all k models share, trained on every
        machine. The random initializations are tied there (:func:`mixlinreg.tie_shared`: the mean
        of the k models); an ``init`` array must already be tied. :meth:`bic` counts the shared
        coordinates once.

    Attributes
    ----------
    coef_ : ndarray (k, d)
        Models of the kept run.
    labels_ : ndarray (m,)
        Cluster of every training machine under ``coef_``.
    loss_ : float
        Final training loss of the kept run.
    loss_history_ : ndarray (n_iter + 1,)
        Training loss of the kept run at every iteration.
    n_iter_ : int
        Iterations the kept run performed.
    lr_ : float
        Step size of the kept run.
    converged_ : bool
        Whether the kept run converged: with ``early_stop=True``, whether it was stopped by the
        rule; otherwise whether one more iteration from ``coef_`` would change no assignment and
        move every model by at most ``tol`` relative (the same rule, checked once at the end;
        ``coef_`` is not changed by it). ``False`` gives a :class:`~mixlinreg.ConvergenceWarning`.
    result_ : IFCAResult
        All runs, for inspection (``result_.loss``, ``result_.diverged``, ...).
    run_lr_ : ndarray (R,)
        Step size of each run of ``result_``; ``kept_run_`` (int) is the index of the kept one.
    intercept_ : ndarray (k,)
        Intercept of each model (zeros unless ``fit_intercept``): the model of cluster j
        predicts ``x . coef_[j] + intercept_[j]``.
    n_samples_ : ndarray (m,) of int
        Rows of each training machine (machines of unequal sizes: see :mod:`mixlinreg.machines`).

    Notes
    -----
    scikit-learn compatibility. ``IFCA`` is a :class:`sklearn.base.BaseEstimator`:
    ``get_params`` / ``set_params``, :func:`sklearn.base.clone` (every parameter round-trips),
    its repr and pickling work as for scikit-learn's estimators; ``__init__`` only stores the
    parameters, and :meth:`fit` checks them all, before computing anything, against the
    package's one table of bounds (``mixlinreg._validation.PARAMETERS``, which :func:`ifca` and
    the configs read too). The seed is ``random_state``, as in scikit-learn, but read by numpy's
    ``default_rng`` (an int, a SeedSequence or a Generator; a legacy ``RandomState`` is refused).
    The machines are the samples: ``X`` (m, n, d) and ``y`` (m, n) are indexed along their first
    axis, so :func:`sklearn.model_selection.cross_val_score` and ``GridSearchCV`` split machines
    and score held-out machines with :meth:`score` (use them for ``lr`` or ``l2``; ``score``
    cannot choose ``n_clusters``, :meth:`bic` can).

    Where it cannot follow scikit-learn: ``fit`` takes a 3-d ``X`` and a 2-d ``y`` (one row of
    responses per machine), never the 2-d ``X`` (n_samples, n_features) and 1-d ``y`` that
    scikit-learn's estimator checks generate, and :meth:`predict` and :meth:`score` need ``y``
    (a machine is assigned by the losses of its labelled data). So of
    :func:`sklearn.utils.estimator_checks.check_estimator` only the checks that do not fit on
    such data apply, and they pass (construction, parameters, cloning, repr, tags, refusing a 1-d
    ``X``, sparse input and a ``y`` of None); the others, and the one that calls ``predict(X)``, are listed with their
    reasons in ``tests/test_estimator_sklearn.py``, which tests what they test (fit returns
    ``self``, leaves the parameters alone, is idempotent, refuses NaN, pickles, takes
    Fortran-ordered data) on machine data instead. Complex data get a ``TypeError``, as
    everywhere in this package, where scikit-learn expects a ``ValueError``. The estimator is
    neither a classifier, a regressor nor a clusterer in scikit-learn's sense (no mixin); its
    tags say that ``fit`` needs ``y`` and takes 3-d input.

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> mix = mlr.make_mixture(m=40, n=100, d=10, k=2, R=1.0, sigma=0.1, rng=0)
    >>> est = mlr.IFCA(n_clusters=2, lr=[0.1, 0.3], n_init=5, n_iter=200, random_state=1)
    >>> est = est.fit(mix.X, mix.y)
    >>> est.coef_.shape
    (2, 10)
    >>> mlr.metrics.adjusted_rand(mix.labels, est.labels_)
    1.0
    >>> est.predict(mix.X[:3], mix.y[:3]).tolist() == est.labels_[:3].tolist()
    True

    References
    ----------
    Ghosh et al., "An Efficient Framework for Clustered Federated Learning", Algorithm 2 and
    Section 6.1 (random initialization with restarts).

    Choosing k: the training loss always falls as ``n_clusters`` grows, so it cannot choose k;
    fit each candidate k and keep the one with the lowest :meth:`bic` (see there for the criterion
    and where it fails).
    """

    def __init__(self, n_clusters=2, *, lr=0.1, n_init=10, n_iter=300, init="bernoulli",
                 loss="squared", l2=0.0, huber_delta=1.0, averaging="gradient", local_steps=1,
                 early_stop=False, tol=1e-6, method="auto", dtype=np.float64, n_threads=None,
                 random_state=None, diverge_threshold="auto", shared=None, fit_intercept=False,
                 verbose=False, weighting="uniform", rng="deprecated"):
        self.n_clusters = n_clusters
        self.lr = lr
        self.n_init = n_init
        self.n_iter = n_iter
        self.init = init
        self.loss = loss
        self.l2 = l2
        self.huber_delta = huber_delta
        self.averaging = averaging
        self.local_steps = local_steps
        self.early_stop = early_stop
        self.tol = tol
        self.method = method
        self.dtype = dtype
        self.n_threads = n_threads
        self.random_state = random_state
        self.diverge_threshold = diverge_threshold
        self.shared = shared
        self.fit_intercept = fit_intercept
        self.verbose = verbose
        self.weighting = weighting
        self.rng = rng

    #: What each parameter may be: the entries of the package's one table of bounds
    #: (``mixlinreg._validation.PARAMETERS``, shared with :func:`ifca` and the config schemas),
    #: checked at the start of :meth:`fit` before anything is computed. ``rng`` is the deprecated
    #: alias of ``random_state`` ("deprecated": not given).
    _constraints = {**{name: PARAMETERS[name] for name in (
        "n_clusters", "lr", "n_init", "n_iter", "init", "loss", "l2", "huber_delta", "averaging",
        "local_steps", "early_stop", "tol", "method", "dtype", "n_threads", "random_state",
        "diverge_threshold", "shared", "fit_intercept", "verbose", "weighting")},
        # the estimator's models are vectors: no "multinomial" (fit says so first)
        "loss": Options(tuple(c for c in PARAMETERS["loss"].choices if c != "multinomial")),
        "rng": Either(Options(("deprecated",)), PARAMETERS["rng"])}

    def _checked_params(self):
        """Every parameter checked against :attr:`_constraints` (in the order of ``__init__``),
        the step sizes as a float array and the source of randomness resolved (``rng``, the
        deprecated alias, warns); nothing is computed before this passes."""
        if isinstance(self.loss, str) and self.loss == "multinomial":
            raise ValueError("loss='multinomial' is not supported by the IFCA estimator (its "
                             "models are vectors); call mixlinreg.ifca with init of shape "
                             "(R, k, d, C)")
        known = {"NUMBA_NUM_THREADS": numba.config.NUMBA_NUM_THREADS}
        p = {}
        for name, constraint in self._constraints.items():
            value = getattr(self, name)
            if name == "lr":  # a step size, or a non-empty flat sequence of them
                lrs = np.atleast_1d(np.asarray(value, dtype=object))
                if lrs.ndim != 1 or lrs.size == 0:
                    raise ValueError(f"lr must be {constraint.describe()} or a non-empty flat "
                                     f"sequence of them, got {value!r}")
                p[name] = np.array([constraint.check(name, v) for v in lrs])
            else:
                p[name] = constraint.check(name, value, **known)
        if not (isinstance(self.rng, str) and self.rng == "deprecated"):
            if self.random_state is not None:
                raise ValueError(f"pass random_state only: rng is its deprecated alias, got both "
                                 f"rng={self.rng!r} and random_state={self.random_state!r}")
            warnings.warn("IFCA(rng=...) is deprecated and will be removed in the next release: "
                          "pass random_state=... instead (it takes the same values and gives the "
                          "same results)", FutureWarning, stacklevel=3)
            p["random_state"] = p["rng"]
        return p

    def __sklearn_tags__(self):
        """scikit-learn's tags (read by scikit-learn >= 1.6): ``fit`` needs ``y``, ``X`` is 3-d.

        ``two_d_array`` stays True: :meth:`predict` and :meth:`score` take one machine's 2-d
        ``X``, and with it False scikit-learn's ``check_estimator`` would skip every check,
        the ones that apply included."""
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.three_d_array = True
        return tags

    def _kernel_kwargs(self):
        return dict(loss=self.loss, l2=self.l2, huber_delta=self.huber_delta, dtype=self.dtype,
                    n_threads=self.n_threads, weighting=self.weighting)

    def fit(self, X, y):
        """Fit: every start at every step size in ``lr`` in one :func:`ifca` call; keep the lowest loss.

        The starts are ``n_init`` random initializations for a string ``init`` (tied on the
        ``shared`` coordinates when ``shared`` is given), or the k models (or n_init sets of k
        models) of an ``init`` array (then ``n_init`` is checked but not used). Every start is run
        with every step size in ``lr``, all as the runs of one :func:`ifca` call with
        ``trace=True``: run ``r`` starts from start ``r // len(lr)`` with step size
        ``lr[r % len(lr)]``. The kept run is the one with the lowest
        final training loss among the runs that did not diverge and whose loss is finite (ties:
        the lowest run index); when no run qualifies, run 0
        is kept and a :class:`~mixlinreg.ConvergenceWarning` says so.

        Parameters
        ----------
        X : array-like of shape (m, n, d), or a list of m arrays of shape (n_i, d)
            Features of the m training machines, n rows each; cast to ``dtype``, finite.
            Machines of unequal sizes as a list of their arrays (:mod:`mixlinreg.machines`;
            :func:`mixlinreg.split_by_machine` reads a long table): each machine's loss is then
            the mean over its own rows, and every machine counts once.
        y : array-like of shape (m, n), or a list of m arrays of shape (n_i,)
            Responses of the machines (for ``loss="logistic"``: values in [0, 1]); finite. The
            3-d ``y`` (C, m, n) that :func:`ifca` takes with ``y_index`` is refused here.

        Returns
        -------
        IFCA
            The fitted estimator (``self``): ``coef_``, ``labels_``, ``loss_``, ``loss_history_``,
            ``n_iter_`` and ``lr_`` describe the kept run, ``result_`` holds all runs, and
            ``n_features_in_`` is d.

        Raises
        ------
        ValueError
            Before anything is computed, for a parameter outside its range (every parameter is
            checked first, against the one table of bounds that :func:`ifca` and the configs
            use): ``loss="multinomial"`` (the estimator's models are vectors: call :func:`ifca`
            with ``init`` of shape (R, k, d, C)) or another ``loss`` that is not a loss of a
            scalar prediction in :data:`mixlinreg.losses.LOSSES`; ``n_clusters``, ``n_init`` or ``local_steps`` below 1,
            ``n_iter`` below 0; an empty or nested ``lr``, or a step size that is not finite and
            > 0; ``l2`` or ``tol`` below 0, ``huber_delta`` or a numeric ``diverge_threshold``
            not > 0; a string ``init``, ``averaging``, ``method`` or ``diverge_threshold`` that
            is not one of its options; ``n_threads`` outside [1, numba's pool]; a ``dtype``
            other than float32 or float64; both ``random_state`` and its deprecated alias
            ``rng``. Then, on the data: ``y`` None; an ``init`` array not of shape (k, d) or (n_init, k, d);
            ``X`` not 3-d, ``y`` not of shape (m, n), or NaN or inf in either; a ``shared`` that
            is not a bool mask (d,) or distinct coordinates in [0, d) (:func:`ifca`, or
            :func:`mixlinreg.tie_shared` with a string ``init``).
        TypeError
            For a non-integer ``n_clusters``, ``n_init``, ``n_iter``, ``local_steps`` or
            ``n_threads``, a non-bool ``early_stop``, a non-number step size, ``l2`` or ``tol``,
            a ``dtype`` that is not a dtype, non-numeric or sparse ``X`` or ``y``, or a
            ``random_state`` (or ``rng``) that is not None, an int, a SeedSequence or a
            Generator.
        OverflowError
            When entries of ``X`` or ``y`` overflow ``dtype``, or a run's loss at its starting
            models overflows it (:func:`ifca`; a run that diverges later is a result instead).
        FloatingPointError
            When the data are so small that the loss and its gradient underflow ``dtype``
            (``max|X| * max(max|X|, max|y|)``, or for the squared and Huber losses ``max|y|^2``,
            below its smallest normal number; the message names max|X|, max|y|): rescale the
            data. As in :func:`ifca`.

        Warns
        -----
        DataScaleWarning
            With a string ``init``, when the data's parameter scale
            ``rms(y) / (rms(X) sqrt(d))`` is below 0.01: the random initial models (entries of
            size about 1) start far from any model that fits the data.
        ConvergenceWarning
            When every run diverged or ended with a loss that is not finite (run 0 is kept; the
            message suggests a smaller ``lr`` and gives the features' scale), or
            when the kept run did not converge (``converged_`` is False), whatever the options:
            with ``early_stop=True`` it was not stopped within ``n_iter`` iterations; without it,
            one more iteration would change an assignment or move a model by more than ``tol``
            relative.
        EmptyClusterWarning
            When some of the ``n_clusters`` models of the kept run have no training machine (and
            some run did not diverge). A subclass of :class:`~mixlinreg.ConvergenceWarning`, so
            a filter on that warning covers it too.
        FutureWarning
            When the deprecated ``rng`` is given (use ``random_state``; same values, same
            results).

        See Also
        --------
        mixlinreg.ifca : The batched function that runs all the restarts.
        mixlinreg.IFCA.bic : Choosing ``n_clusters``.

        Notes
        -----
        The kept run is chosen by the training loss alone, the choice a practitioner without
        ground truth can make. Because ``fit`` asks :func:`ifca` for a trace (``loss_history_``),
        ``method="auto"`` never picks the certified-Gram path here.

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
        >>> est = mlr.IFCA(n_clusters=2, lr=[0.1, 0.3], n_init=4, random_state=1).fit(mix.X, mix.y)
        >>> est.result_.loss.shape  # 4 starts x 2 step sizes
        (8,)
        >>> est.coef_.shape, est.labels_.shape, est.loss_history_.shape
        ((2, 5), (20,), (301,))
        >>> mlr.adjusted_rand(mix.labels, est.labels_)
        1.0
        """
        p = self._checked_params()
        k, n_init, dt, lrs, gen = (p["n_clusters"], p["n_init"], p["dtype"], p["lr"],
                                   p["random_state"])
        if y is None:
            raise ValueError("IFCA requires y to be passed, but the target y is None: y holds the "
                             "responses of the machines, shape (m, n)")
        X_given = X
        X, y_checked, counts, ragged = machine_arrays(X, y, None, dt)
        # the scale of the data as given (before the cast to dtype): a FloatingPointError where
        # the losses underflow (IFCA would return its start, blaming the data for empty models)
        check_data_scale(*((X_given, y) if not (ragged or isinstance(X_given, (list, tuple)))
                           else (X, y_checked)), dt, self.loss, where="IFCA.fit")
        d = X.shape[2]
        X = self._with_intercept(X, counts)
        theta0 = self._starts(X, y_checked, d, n_init, k, dt, gen)
        shared = self._shared_fit(d)
        if shared is not None and isinstance(self.init, str):
            theta0 = tie_shared(theta0, shared).astype(dt)
        n_starts = theta0.shape[0]
        # run r uses initialization r // len(lrs) and step size lrs[r % len(lrs)]
        runs0 = np.repeat(theta0, lrs.size, axis=0)
        lr_runs = np.tile(lrs, n_starts)
        nsamp = counts if ragged else None
        desc = (f"IFCA k={k}: {n_starts} starts x {lrs.size} step size"
                f"{'s' if lrs.size > 1 else ''}")
        with iterations_bar(self.n_iter, desc, enabled=p["verbose"]):
            res = ifca(X, y_checked, runs0, lr_runs, n_iter=self.n_iter, averaging=self.averaging,
                       local_steps=self.local_steps, early_stop=self.early_stop, tol=self.tol,
                       method=self.method, trace=True, diverge_threshold=self.diverge_threshold,
                       shared=shared, n_samples=nsamp, **self._kernel_kwargs())
        best = kept_run(res, lambda: f"diverge_threshold={self.diverge_threshold!r}; try a smaller "
                                     f"lr (got {lrs.tolist()}): {step_scale_note(X)}")
        kept_ok = not res.diverged[best] and np.isfinite(res.loss[best])  # some run did not diverge
        self.converged_ = bool(kept_ok and (res.converged[best] if self.early_stop else
                                            self._one_more_step_still(X, y_checked, nsamp, shared,
                                                                      res, best, lr_runs[best])))
        if kept_ok and not self.converged_:
            warnings.warn(f"the kept run did not meet tol={self.tol} within n_iter={self.n_iter} "
                          "iterations (one more iteration would change an assignment or move a "
                          "model by more than tol relative); increase n_iter or check lr",
                          ConvergenceWarning, stacklevel=2)
        self.coef_ = res.theta[best][:, :d].copy()
        self.intercept_ = (res.theta[best][:, d].copy() if self.fit_intercept
                           else np.zeros(k, dtype=res.theta.dtype))
        self.n_samples_ = counts.copy()
        self.labels_ = res.labels[best].copy()
        self.loss_ = float(res.loss[best])
        self.loss_history_ = res.trace.loss[:, best].copy()
        self.n_iter_ = int(res.n_iter[best])
        self.lr_ = float(lr_runs[best])
        self.result_ = res
        self.run_lr_, self.kept_run_ = lr_runs.copy(), int(best)
        self.n_features_in_ = d
        empty = np.setdiff1d(np.arange(k), self.labels_)
        if kept_ok and empty.size:
            warnings.warn(f"{empty.size} of n_clusters={k} fitted models have no machine (models "
                          f"{empty.tolist()} are empty): the data may hold fewer clusters, or the "
                          "restarts missed them; compare candidate n_clusters with bic(X, y)",
                          EmptyClusterWarning, stacklevel=2)
        return self

    def _one_more_step_still(self, X, y, n_samples, shared, res, best, lr):
        """Whether the kept run meets the early stop's rule without ``early_stop``: one more
        iteration from its final models (the same options, one run) changes no machine's
        assignment and moves every model by at most ``tol`` relative to its norm
        (``max_j ||theta_j^+ - theta_j|| / ||theta_j||``, the norm floored at the smallest
        positive float). The kept models are not changed by it."""
        theta = res.theta[best]
        step = ifca(X, y, theta[None], np.array([lr]), n_iter=1, averaging=self.averaging,
                    local_steps=self.local_steps, method=self.method,
                    diverge_threshold=self.diverge_threshold, shared=shared,
                    n_samples=n_samples, **self._kernel_kwargs())
        if step.diverged[0] or not np.array_equal(step.labels[0], res.labels[best]):
            return False
        k = theta.shape[0]
        old = np.asarray(theta, dtype=np.float64).reshape(k, -1)
        new = np.asarray(step.theta[0], dtype=np.float64).reshape(k, -1)
        norm = np.maximum(np.linalg.norm(old, axis=1), np.finfo(np.float64).tiny)
        return bool(np.max(np.linalg.norm(new - old, axis=1) / norm) <= self.tol)

    def to_frame(self, kind="models"):
        """The fitted estimator as a pandas DataFrame.

        Parameters
        ----------
        kind : {"models", "machines", "history", "runs"}, default "models"
            ``"models"``: one row per cluster model (``cluster``, ``n_machines`` assigned to it,
            ``intercept`` with ``fit_intercept``, then ``coef_0 ... coef_{d-1}``).
            ``"machines"``: one row per training machine (``machine``, ``cluster``, ``n_rows``,
            its number of rows). ``"history"``: the kept run's training loss per iteration
            (``iteration``, ``loss``). ``"runs"``: every run of the fit (as
            :meth:`IFCAResult.to_frame`, with each run's ``lr`` and whether it is the ``kept``
            one).

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=3, k=2, R=1.0, sigma=0.1, rng=0)
        >>> est = mlr.IFCA(n_clusters=2, n_init=4, random_state=1).fit(mix.X, mix.y)
        >>> est.to_frame().columns.tolist()
        ['cluster', 'n_machines', 'coef_0', 'coef_1', 'coef_2']
        >>> est.to_frame("machines").shape
        (20, 3)
        """
        import pandas as pd

        self._check_fitted()
        kinds = ("models", "machines", "history", "runs")
        if not isinstance(kind, str) or kind not in kinds:
            raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
        k, d = self.coef_.shape
        if kind == "models":
            frame = pd.DataFrame(self.coef_, columns=[f"coef_{q}" for q in range(d)])
            if self.fit_intercept:
                frame.insert(0, "intercept", self.intercept_)
            frame.insert(0, "n_machines", np.bincount(self.labels_, minlength=k))
            frame.insert(0, "cluster", np.arange(k))
            return frame
        if kind == "machines":
            return pd.DataFrame({"machine": np.arange(self.labels_.size), "cluster": self.labels_,
                                 "n_rows": self.n_samples_})
        if kind == "history":
            return pd.DataFrame({"iteration": np.arange(self.loss_history_.size),
                                 "loss": self.loss_history_})
        frame = self.result_.to_frame("runs")
        frame["lr"] = self.run_lr_
        frame["kept"] = frame["run"] == self.kept_run_
        return frame

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError("this IFCA instance is not fitted yet; call fit(X, y) first")

    def _starts(self, X, y, d, n_init, k, dt, gen):
        """The starts (n_starts, k, dfit): ``n_init`` random ones for a string ``init`` (a
        :class:`DataScaleWarning` when they are far larger than the data's models), or the
        ``init`` array (with ``fit_intercept``, a (k, d) one gets intercepts 0)."""
        dfit = X.shape[2]  # d, or d + 1 with the intercept's column of ones
        if isinstance(self.init, str):  # "bernoulli" or "gaussian" (checked)
            if self.init == "bernoulli":
                theta0 = init_bernoulli(n_init, k, dfit, rng=gen, dtype=dt)
            else:
                theta0 = gen.standard_normal((n_init, k, dfit)).astype(dt)
            scale = data_parameter_scale(X, y)
            if scale < 1e-2:  # entries of the random inits are ~0.5-1, 50x more
                warnings.warn(f"the data's parameters are on the scale {scale:.3g} (rms(y) / (rms(X) "
                              f"sqrt(d))) while init={self.init!r} draws entries of size ~1: "
                              "standardize y, or pass init scaled to the data", DataScaleWarning,
                              stacklevel=3)
        else:
            theta0 = check_array("init", self.init, ndim=(2, 3), dtype=dt)
            theta0 = theta0[None] if theta0.ndim == 2 else theta0
            shapes = ((k, d),) + (((k, dfit),) if dfit != d else ())
            if theta0.shape[1:] not in shapes:
                extra = (f" (the models of the features, intercepts starting at 0) or ({k}, "
                         f"{dfit}) (the last column the intercepts) with fit_intercept=True"
                         if dfit != d else "")
                raise ValueError(f"init must have shape ({k}, {d}) or (n_init, {k}, {d}){extra}, "
                                 f"got {theta0.shape}")
            if theta0.shape[2] != dfit:
                theta0 = np.concatenate([theta0, np.zeros(theta0.shape[:2] + (1,), dtype=dt)],
                                        axis=2)
        return theta0

    def _shared_fit(self, d):
        """``shared`` as the mask of the models :func:`ifca` fits: with ``fit_intercept`` the
        intercept (a last coordinate) is never shared."""
        if self.shared is None:
            return None
        mask = check_shared(self.shared, d)[0]
        return np.append(mask, False) if self.fit_intercept else mask

    def _with_intercept(self, X, counts):
        """``X`` with a column of ones on each machine's own rows when ``fit_intercept`` (the
        padding stays zero, so it is still never read), else ``X``."""
        if not self.fit_intercept:
            return X
        ones = (np.arange(X.shape[1])[None, :] < counts[:, None]).astype(X.dtype)
        return np.ascontiguousarray(np.concatenate([X, ones[:, :, None]], axis=2))

    def _models(self):
        """The fitted models as :func:`ifca` runs them: ``coef_``, with ``intercept_`` as a last
        column when ``fit_intercept``."""
        if not self.fit_intercept:
            return self.coef_
        return np.concatenate([self.coef_, self.intercept_[:, None]], axis=1)

    def _machines(self, X, y, dtype):
        """The machines to evaluate in any form :meth:`fit` takes (and one machine's (n, d), (n,)),
        checked against ``n_features_in_``: padded X (with the intercept's column), y, sizes,
        whether ragged."""
        self._check_fitted()
        dfeat = self.n_features_in_
        if not isinstance(X, (list, tuple)) and np.ndim(X) == 2 and np.ndim(y) == 1:
            X, y = np.asarray(X)[None], np.asarray(y)[None]  # a single machine
        if not isinstance(X, (list, tuple)) and (np.ndim(X) != 3 or np.shape(X)[-1] != dfeat):
            raise ValueError(f"X must have shape (m, n, {dfeat}) (or (n, {dfeat}) for one machine "
                             f"with a 1-d y, or a list of m arrays (n_i, {dfeat})): the model was "
                             f"fitted with d = {dfeat} features, got shape {np.shape(X)}")
        X, y, counts, ragged = machine_arrays(X, y, None, dtype)
        if X.shape[2] != dfeat:
            raise ValueError(f"X must have d = {dfeat} features per row (the model was fitted "
                             f"with d = {dfeat}), got {X.shape[2]}")
        return self._with_intercept(X, counts), y, counts, ragged

    def _evaluate(self, X, y):
        Xf, yf, counts, ragged = self._machines(X, y, self.dtype)
        return ifca(Xf, yf, self._models(), 1.0, n_iter=0, n_samples=counts if ragged else None,
                    **self._kernel_kwargs())

    def predict(self, X, y):
        """Cluster of each machine: ``argmin_j F_i(coef_j)`` on its data ``X`` (m, n, d), ``y`` (m, n).

        IFCA assigns a machine by the loss of each model on its labelled data, so ``y`` is needed.
        ``F_i(theta) = (1/n) sum_t ell(<x_t, theta>, y_t) + (l2 / 2) ||theta||^2`` is the loss the
        estimator was fitted with (``loss``, ``l2``, ``huber_delta``), on all n rows of machine i,
        with the data cast to ``dtype``; ties go to the lowest index and a NaN loss never wins
        over a finite one. The machines need not be the training machines, and n may differ from
        training.

        Parameters
        ----------
        X : array-like of shape (m, n, d) or (n, d)
            Features of the machines to assign, d = ``n_features_in_``; a 2-d ``X`` with a 1-d
            ``y`` is one machine.
        y : array-like of shape (m, n) or (n,)
            Their responses.

        Returns
        -------
        ndarray of shape (m,) and dtype int64
            Index into ``coef_`` of each machine's model; shape (1,) for a single machine.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            When ``X`` does not have d = ``n_features_in_`` features or is not 3-d (2-d only
            with a 1-d ``y``), ``y`` does not have shape (m, n) to match ``X``, or either holds
            NaN or inf.

        See Also
        --------
        score : The mean over machines of the loss these assignments attain.

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
        >>> est = mlr.IFCA(n_clusters=2, n_init=4, random_state=1).fit(mix.X, mix.y)
        >>> bool((est.predict(mix.X, mix.y) == est.labels_).all())
        True
        >>> est.predict(mix.X[0], mix.y[0]).shape  # one machine: X (n, d), y (n,)
        (1,)
        """
        return self._evaluate(X, y).labels[0]

    def score(self, X, y):
        """Return minus the mean lowest loss ``(1/m) sum_i min_j F_i(coef_j)`` (higher is better).

        The mean over the m machines of each machine's lowest loss ``F_i`` among the k fitted
        models (the loss of the assignment :meth:`predict` makes; ``F_i`` as there, the penalty
        ``(l2 / 2) ||theta||^2`` included), negated so that higher is better as scikit-learn's
        model selection expects. On the training data it is ``-loss_`` up to rounding. It is not
        the coefficient of determination that scikit-learn's regressors score, and it cannot
        choose ``n_clusters`` (like the training loss, it tends to improve as k grows): use
        :meth:`bic` for that.

        Parameters
        ----------
        X : array-like of shape (m, n, d) or (n, d)
            Features of the machines, d = ``n_features_in_``; a 2-d ``X`` with a 1-d ``y`` is
            one machine.
        y : array-like of shape (m, n) or (n,)
            Their responses.

        Returns
        -------
        float
            ``-(1/m) sum_i min_j F_i(coef_j)``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            For ``X`` or ``y`` of the wrong shape or with NaN or inf, as in :meth:`predict`.

        See Also
        --------
        predict : The assignments whose loss this averages.

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
        >>> est = mlr.IFCA(n_clusters=2, n_init=4, random_state=1).fit(mix.X, mix.y)
        >>> bool(abs(est.score(mix.X, mix.y) + est.loss_) <= 1e-12)
        True
        """
        return -float(self._evaluate(X, y).loss[0])

    # ------------------------------------------------------------------ choosing k
    def _log_likelihood(self, X, y):
        """Mixture log-likelihood of machines' data at ``coef_`` (see :meth:`bic`); returns (ll, m)."""
        self._check_fitted()
        if self.loss != "squared":
            raise ValueError(f"bic/aic are defined for loss='squared' (Gaussian noise), got "
                             f"loss={self.loss!r}")
        X, y, counts, _ = self._machines(X, y, np.float64)
        m = X.shape[0]
        theta = np.asarray(self._models(), dtype=np.float64)
        k = theta.shape[0]
        # rss[i, j] = ||y_i - X_i theta_j||^2 over machine i's own rows (the padding is zero in
        # X and y, so its residuals are zero)
        rss = np.square(y[:, :, None] - np.einsum("mnd,kd->mnk", X, theta)).sum(axis=1)
        a = np.argmin(rss, axis=1)
        total = float(rss[np.arange(m), a].sum())
        # noise variance: the hard-assignment MLE, floored at float64 resolution of y's scale so
        # that noiseless data (sigma = 0) give a large finite likelihood instead of +inf
        rows = float(counts.sum())
        var = max(total / rows, np.finfo(np.float64).eps * max(float(np.sum(y * y)) / rows, 1e-300))
        weights = np.bincount(a, minlength=k) / m
        with np.errstate(divide="ignore"):
            logw = np.log(weights)
        comp = (logw[None, :] - 0.5 * counts[:, None] * np.log(2 * np.pi * var)
                - rss / (2 * var))
        return float(logsumexp(comp, axis=1).sum()), m

    def _n_parameters(self):
        k, d = self.coef_.shape
        s = 0
        if self.shared is not None:
            s = int(check_shared(self.shared, d)[0].sum())
        return k * (d - s) + s + (k if self.fit_intercept else 0) + (k - 1) + 1

    @_criterion_doc("BIC")
    def bic(self, X, y):
        r"""Bayesian information criterion of the fitted mixture on ``X`` (m, n, d), ``y`` (m, n).

        Lower is better: fit ``IFCA`` for each candidate ``n_clusters`` and keep the k with the
        smallest BIC (training loss cannot choose k: it always falls as k grows).

        The model is the mixture of linear regressions IFCA assumes, with machines as the
        independent observations: machine i draws a cluster j with probability ``pi_j`` and then
        ``y_i = X_i theta_j + eps_i``, ``eps_i ~ N(0, sigma^2 I_n)``. Its log-likelihood is

        .. math::

            \log L = \sum_{i=1}^m \log \sum_{j=1}^k \pi_j \,(2 \pi \sigma^2)^{-n/2}
                      \exp\!\big(-\|y_i - X_i \theta_j\|^2 / (2 \sigma^2)\big)

        evaluated at the fitted models ``theta_j = coef_[j]``, ``pi_j`` = the fraction of machines
        IFCA assigned to model j and ``sigma^2`` = the mean squared residual of every row under its
        machine's assigned model (floored at float64 resolution of ``mean(y^2)`` for noiseless
        data). Then ``BIC = -2 log L + p log m`` (Schwarz 1978) with ``p = k d + (k - 1) + 1``
        free parameters: the k models, the k - 1 free mixing weights and the noise variance
        (with ``shared`` coordinates, ``p = k (d - s) + s + (k - 1) + 1``: the s shared ones
        once). The machine assignments are not counted as parameters: they are latent variables summed out of
        the mixture likelihood above (this is the mixture BIC used for mixtures of regressions, see
        Hurn, Justel & Robert 2003; Khalili & Chen 2007 study order selection for them), not the
        classification likelihood. Empty models (no machine) still count in ``p``.

        Honest limits: the parameters plugged in are IFCA's (the minimizers of the hard-assignment
        loss), not the maximum of the mixture likelihood; when clusters are separated the two
        agree closely, otherwise the likelihood is slightly underestimated. The criterion picks the
        true k when the clusters are separated well beyond the noise of a machine's estimate
        (roughly ``||theta_j - theta_l|| >> sigma sqrt(d / n)``) and IFCA found the global optimum
        for every candidate k (use enough restarts). When the fits merge clusters it picks a
        smaller k: with separation below the noise of a machine's estimate the clusters cannot be
        told apart, and with random 0/1 initializations far from small-scale models (R = 0.1,
        sigma = 0.1, d = 5 in ``tests/test_reliability.py``) IFCA merges clusters the criterion
        would see from a good start; with too few restarts a poor fit at the true k can lose to
        another k. Only ``loss="squared"`` (Gaussian noise) is supported.

        <criterion sections>

        See Also
        --------
        aic : The same likelihood with the lighter penalty ``2 p``.

        Examples
        --------
        >>> import mixlinreg as mlr, warnings
        >>> mix = mlr.make_mixture(m=60, n=50, d=5, k=3, R=1.0, sigma=0.1, rng=0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     bics = {k: mlr.IFCA(n_clusters=k, n_init=20, random_state=1).fit(mix.X, mix.y)
        ...                 .bic(mix.X, mix.y) for k in range(1, 6)}
        >>> min(bics, key=bics.get)
        3

        References
        ----------
        G. Schwarz, "Estimating the dimension of a model", Annals of Statistics 6(2), 1978.

        M. Hurn, A. Justel, C. P. Robert, "Estimating mixtures of regressions", Journal of
        Computational and Graphical Statistics 12(1), 2003.

        A. Khalili, J. Chen, "Variable selection in finite mixture of regression models", Journal
        of the American Statistical Association 102(479), 2007.
        """
        ll, m = self._log_likelihood(X, y)
        return -2.0 * ll + self._n_parameters() * np.log(m)

    @_criterion_doc("AIC")
    def aic(self, X, y):
        """Akaike information criterion ``-2 log L + 2 p`` (Akaike 1974) on ``X``, ``y``.

        The log-likelihood ``log L`` and the parameter count ``p`` are those of :meth:`bic`. Lower
        is better; AIC penalizes extra clusters less than BIC and tends to choose a larger k.

        <criterion sections>

        See Also
        --------
        bic : The same likelihood with the penalty ``p log m``, and the criterion's derivation
            and limits.

        References
        ----------
        H. Akaike, "A new look at the statistical model identification", IEEE Transactions on
        Automatic Control 19(6), 1974.

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
        >>> one, two = (mlr.IFCA(n_clusters=k, n_init=4, random_state=1).fit(mix.X, mix.y)
        ...             for k in (1, 2))
        >>> bool(two.aic(mix.X, mix.y) < one.aic(mix.X, mix.y))
        True
        """
        ll, _ = self._log_likelihood(X, y)
        return -2.0 * ll + 2.0 * self._n_parameters()


# the estimator's former home still names it: ``from mixlinreg.ifca import IFCA`` and pickles made
# before the move keep working (importing mixlinreg.ifca runs the package, which imports this module)
_ifca_module.IFCA = IFCA
