"""IFCA: the batched function :func:`ifca`, its result types and its warnings.

The scikit-learn style estimator :class:`~mixlinreg.IFCA` built on it lives in
:mod:`mixlinreg.estimator`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numba
import numpy as np
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from threadpoolctl import threadpool_limits

from . import _numerics
from ._kernel_choice import (KERNELS, check_jax_method, current_kernel, renamed, resolve_kernel,
                             use_backend, use_kernel)
from . import _gram as _gram_module
from . import _chunked
from ._firstuse import announce_compile_path, dispatchers_of
from ._gram import run_gram
from ._kernels import LOSS_CODES, Data, Loss, Result, Stop, Trace, Update
from ._problem import _Problem, check_start_finite, from_vectors
from ._validation import check_param

# each says once when it compiled (a numba cache miss)
run_direct = announce_compile_path(_chunked.run_direct, dispatchers_of(_chunked), "the IFCA kernel")
run_gram = announce_compile_path(run_gram, dispatchers_of(_gram_module), "the certified-Gram path")

__all__ = ["ifca", "IFCAResult", "IFCATrace", "ConvergenceWarning", "EmptyClusterWarning",
           "DataScaleWarning", "use_kernel", "current_kernel", "KERNELS", "use_backend"]


class ConvergenceWarning(_SklearnConvergenceWarning):
    """Issued when every restart diverged, or the kept run did not meet ``tol``.

    A subclass of scikit-learn's :class:`sklearn.exceptions.ConvergenceWarning`, so a filter
    written for scikit-learn's estimators (``warnings.simplefilter("ignore",
    sklearn.exceptions.ConvergenceWarning)``) applies to :class:`IFCA` too."""


def kept_run(res, advice):
    """Index of the run a caller keeps from an :class:`IFCAResult` of several restarts: the lowest
    final loss among runs that did not diverge and whose loss is finite (ties: the lowest index).

    When no run qualifies, run 0 is kept and a :class:`ConvergenceWarning` says so, ending with
    ``advice`` (what the user can change; a callable is called only then). A diverging run is a
    result, not an exception: the caller reports ``res.diverged[kept]``.
    """
    ok = ~res.diverged & np.isfinite(res.loss)
    if ok.any():
        return int(np.flatnonzero(ok)[np.argmin(res.loss[ok])])
    advice = advice() if callable(advice) else advice
    warnings.warn(f"all {res.loss.size} runs of IFCA diverged (parameters not finite or beyond the "
                  f"divergence threshold) or ended with a loss that is not finite; {advice}",
                  ConvergenceWarning, stacklevel=3)
    return 0


class DataScaleWarning(UserWarning):
    """Issued by :meth:`IFCA.fit` when the random initial models are far larger than any model that
    fits the data (``y`` on a tiny scale): gradient steps then start from far away."""


class EmptyClusterWarning(ConvergenceWarning):
    """Issued by :meth:`IFCA.fit` when some fitted models have no machine assigned to them."""


@dataclass(frozen=True)
class IFCATrace:
    """Per-iteration record of a batched IFCA call (``trace=True``).

    Index ``t`` along the first axis is the state at the start of iteration ``t`` (the models
    ``theta^(t)``); index ``n_iter`` is the final evaluation on all rows. Once a run is frozen
    (diverged or stopped early) its remaining entries repeat its final evaluation.

    Attributes
    ----------
    labels : ndarray of shape (n_iter + 1, R, m)
        Cluster estimates of every machine.
    loss : ndarray of shape (n_iter + 1, R)
        Training loss ``(1/m) sum_i min_j F_i(theta_j)``.
    dist : ndarray of shape (n_iter + 1, R, k, k) or None
        ``dist[t, r, j, l] = ||theta_j^(t) - theta*_l||`` when ``theta_star`` was given.
    """

    labels: np.ndarray
    loss: np.ndarray
    dist: np.ndarray | None

    def dist_matched(self):
        """Matched distance (one-to-one, see :func:`mixlinreg.metrics.dist_matched`), (n_iter+1, R)."""
        from .metrics import dist_matched_from_matrix

        self._need_dist()
        return dist_matched_from_matrix(self.dist)

    def dist_nearest(self):
        """Authors' distance (nearest true parameter), shape (n_iter + 1, R)."""
        from .metrics import dist_nearest_from_matrix

        self._need_dist()
        return dist_nearest_from_matrix(self.dist)

    def _need_dist(self):
        if self.dist is None:
            raise ValueError("this trace has no distances: pass theta_star to ifca(..., trace=True)")


@dataclass(frozen=True)
class IFCAResult:
    """Outcome of :func:`ifca` for ``R`` runs.

    Attributes
    ----------
    theta : ndarray (R, k, d)
        Final models ((R, k, d, C) for ``loss="multinomial"``).
    labels : ndarray (R, m)
        Cluster estimate of every machine at the final models (all rows).
    loss : ndarray (R,)
        Final training loss ``(1/m) sum_i min_j F_i(theta_j)`` on all rows.
    diverged : ndarray (R,) of bool
        Runs frozen because their parameters or loss stopped being finite or exceeded the threshold.
    converged : ndarray (R,) of bool
        Runs frozen by the optional early stop.
    n_iter : ndarray (R,) of int
        Iterations each run performed.
    method : str
        The path that computed the iterations: ``"data"``, ``"stats"`` (sufficient statistics) or
        ``"gram"`` (certified assignments and shared cluster Grams).
    trace : IFCATrace or None
    path_stats : dict or None
        For ``method="gram"``: run-iterations of each kind of step (full, assigned-only, Gram),
        Grams made (``grams_built``; ``grams_composed`` of them from cached Grams,
        ``gram_machines_built`` machine Grams added up for them) and reused (``gram_hits``), and
        the seconds spent per phase.
    """

    theta: np.ndarray
    labels: np.ndarray
    loss: np.ndarray
    diverged: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    method: str
    trace: IFCATrace | None = None
    path_stats: dict | None = None

    def to_frame(self, kind="runs"):
        """The result as a pandas DataFrame, in long form.

        Parameters
        ----------
        kind : {"runs", "labels", "models", "trace"}, default "runs"
            ``"runs"``: one row per run (``run``, ``loss``, ``diverged``, ``converged``,
            ``n_iter``). ``"labels"``: one row per run and machine (``run``, ``machine``,
            ``cluster``). ``"models"``: one row per run and model (``run``, ``cluster``, then
            ``theta_0 ... theta_{d-1}``; for the multinomial loss ``theta_<q>_<c>``, feature q
            and class c). ``"trace"`` (a call with ``trace=True``): one row per iteration and
            run (``iteration``, ``run``, ``loss``; ``dist_matched`` when ``theta_star`` was
            given).

        Examples
        --------
        >>> import mixlinreg as mlr
        >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
        >>> res = mlr.ifca(mix.X, mix.y, mlr.init_close(mix.theta_star, 0.25, n_runs=3, rng=1),
        ...                lr=0.1, n_iter=100)
        >>> res.to_frame().columns.tolist()
        ['run', 'loss', 'diverged', 'converged', 'n_iter']
        >>> res.to_frame("labels").shape
        (60, 3)
        """
        import pandas as pd

        kinds = ("runs", "labels", "models", "trace")
        if not isinstance(kind, str) or kind not in kinds:
            raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
        R = self.loss.shape[0]
        if kind == "runs":
            return pd.DataFrame({"run": np.arange(R), "loss": self.loss,
                                 "diverged": self.diverged, "converged": self.converged,
                                 "n_iter": self.n_iter})
        if kind == "labels":
            m = self.labels.shape[1]
            return pd.DataFrame({"run": np.repeat(np.arange(R), m),
                                 "machine": np.tile(np.arange(m), R),
                                 "cluster": self.labels.reshape(-1)})
        if kind == "models":
            k = self.theta.shape[1]
            flat = self.theta.reshape(R * k, -1)
            names = ([f"theta_{q}" for q in range(self.theta.shape[2])] if self.theta.ndim == 3
                     else [f"theta_{q}_{c}" for q in range(self.theta.shape[2])
                           for c in range(self.theta.shape[3])])
            frame = pd.DataFrame(flat, columns=names)
            frame.insert(0, "cluster", np.tile(np.arange(k), R))
            frame.insert(0, "run", np.repeat(np.arange(R), k))
            return frame
        if self.trace is None:
            raise ValueError("to_frame('trace') needs a result with a trace: call ifca(..., "
                             "trace=True)")
        T1 = self.trace.loss.shape[0]
        out = {"iteration": np.repeat(np.arange(T1), R), "run": np.tile(np.arange(R), T1),
               "loss": self.trace.loss.reshape(-1)}
        if self.trace.dist is not None:
            out["dist_matched"] = self.trace.dist_matched().reshape(-1)
        return pd.DataFrame(out)


def ifca(X, y, init, lr, *, n_iter=300, loss="squared", l2=0.0, huber_delta=1.0,
         averaging="gradient", local_steps=1, resample=False, participation=None,
         y_index=None, theta_star=None, early_stop=False, tol=1e-6,
         diverge_threshold="auto", trace=False, method="auto",
         gram_memory=_numerics.GRAM_MEMORY, dtype=None, n_threads=None, rng=None, kernel=None,
         shared=None, backend=None, n_samples=None, weighting="uniform"):
    r"""Run many IFCA runs at once on shared data.

    Each run ``r`` starts from ``init[r]`` (k models) with step size ``lr[r]``. One iteration:
    every machine ``i`` picks ``a_i = argmin_j F_i(theta_j)`` (ties to the lowest index, a NaN loss
    never wins over a finite one), then

    * ``averaging="gradient"`` (option I):
      ``theta_j <- theta_j - (lr / m) * sum_{i participating, a_i = j} grad F_i(theta_j)``
      (the divisor is ``m``, as in Algorithm 2 of the paper, so cluster j's effective step is
      ``lr * p_j``);
    * ``averaging="model"`` (option II): each participating machine runs ``local_steps`` gradient
      steps of size ``lr`` from ``theta_{a_i}``; each model becomes the mean of the local models of
      the machines that chose it (a model nobody chose keeps its value).

    ``F_i(theta; Z) = (1/|Z|) sum_{t in Z} ell(<x_t, theta>, y_t) + (l2 / 2) ||theta||^2`` with
    ``ell`` = ``(z - y)^2`` (``"squared"``), ``log(1 + e^z) - y z`` (``"logistic"``, y in [0, 1])
    or the Huber function of ``y - z`` with threshold ``huber_delta`` (``"huber"``). With
    ``loss="multinomial"`` a model is a d x C matrix ``W``, ``y_t`` a class in ``{0, ..., C-1}``
    and ``ell(W^T x_t, y_t) = logsumexp(W^T x_t) - (W^T x_t)_{y_t}`` (softmax cross-entropy), the
    penalty ``(l2 / 2) ||W||_F^2``; distances and the early stop's steps are Frobenius norms.

    Parameters
    ----------
    X : array (m, n, d), or a list of m arrays (n_i, d)
        Features of m machines with n rows each; machines of unequal sizes as a list of their
        arrays (or padded to n rows with ``n_samples``; see :mod:`mixlinreg.machines`). Then
        machine i's loss ``F_i`` is the mean over its own n_i rows and every machine counts once
        in the training loss ``(1/m) sum_i min_j F_i``; ``resample=True``, ``method="gram"`` and
        ``kernel="jax"`` need equal sizes. With equal sizes a list gives the dense result bit for
        bit.
    y : array (m, n) or (C, m, n), or a list of m arrays (n_i,)
        Responses; a 3-d array holds C variants sharing ``X`` (for example every (R, sigma) cell of a
        Figure 2 trial), selected per run by ``y_index``. For ``loss="multinomial"``: class labels,
        integers in ``[0, C)`` (as numbers of the working dtype).
    init : array (R, k, d) or (k, d)
        Initial models of R runs (a 2-d array is one run); for ``loss="multinomial"`` (R, k, d, C)
        or (k, d, C), C >= 2 classes.
    lr : float or array (R,)
        Step size of each run, > 0.
    n_iter : int, default 300
        Iterations (T). ``n_iter=0`` only evaluates ``init``. Ctrl-C stops a long call with
        ``KeyboardInterrupt`` within about a second (except on the JAX backend, one device call).
    loss : {"squared", "logistic", "huber", "multinomial"}
    l2 : float, default 0
        Ridge coefficient (penalty ``l2/2 ||theta||^2``); ``loss="squared", l2>0`` is ridge regression.
    huber_delta : float, default 1
    averaging : {"gradient", "model"}
    local_steps : int, default 1
        Local gradient steps per iteration for ``averaging="model"`` (tau).
    resample : bool, default False
        The variant the theorems analyse: each machine's rows are split into ``2 n_iter`` disjoint
        consecutive blocks of ``n' = n // (2 n_iter)`` rows; iteration t estimates clusters on block
        ``2t`` and takes the gradient on block ``2t + 1``. The experiments of the paper do not resample.
    participation : None, int or bool array (n_iter, R, m)
        None: every machine every iteration. int s: s distinct machines per iteration and run, drawn
        from run r's own generator (``rng`` spawned into R children). A boolean mask is used as given.
        A count, not a fraction: a float (0.5, even 1.0) is a ``ValueError`` that gives the count
        it would be. :func:`mixlinreg.baselines.fpfc` and :mod:`mixlinreg.digits` take the
        fraction of the machines per round instead (a float in (0, 1]), so no value means two
        things.
    y_index : int array (R,), required when ``y`` is 3-d
    theta_star : array (k', d) or (C, k', d), optional
        True parameters, only used for the trace's distances (for ``loss="multinomial"``
        (k', d, C) or (V, k', d, C)).
    early_stop : bool, default False
        Freeze a run once its assignments did not change from the previous iteration and its largest
        relative step ``max_j ||theta_j^+ - theta_j|| / ||theta_j||`` is at most ``tol``. Off by
        default: off is the exact fixed-iteration protocol.
    tol : float, default 1e-6
    diverge_threshold : float or "auto", default "auto"
        A run whose parameters or training loss stop being finite, or whose largest parameter entry
        exceeds this, is frozen and flagged ``diverged``; the others go on. ``"auto"`` scales with
        the data: ``1e10 * max(1, rms(y) / (rms(X) sqrt(d)), max |init|)``, i.e. 1e10 on the
        paper's problems and proportionally larger when ``y`` is large (``y * 1e12``), so large
        data are not mistaken for a diverging run.
    trace : bool, default False
        Record per-iteration assignments, training loss and (with ``theta_star``) distances.
    method : {"auto", "data", "stats", "gram"}
        How the iterations are computed; every path computes the same iterations (in exact
        arithmetic) and the same final evaluation. ``"data"``: every machine's rows each iteration
        (the reference path). ``"stats"`` computes each iteration from per-machine sufficient
        statistics ``X_i^T X_i, X_i^T y_i, y_i^T y_i`` (squared loss, ``resample=False``, gradient
        averaging), costing ``2 d^2 k`` instead of ``2 n d (k + 1)`` flop per machine and run.
        ``"gram"`` (squared loss, ``resample=False``, gradient averaging, ``participation=None``):
        a run whose assignments are certified by bounds (which prove the argmin without touching
        the data) takes its gradient at the assigned models only, or from cluster Grams
        ``sum_{i in S_j} X_i^T X_i`` shared by all runs with the same cluster; any other run takes
        the direct path's full iteration, which also resets its bounds (see ``mixlinreg/_gram.py``). ``"auto"`` uses ``"stats"`` when that is
        cheaper and ``dtype`` is float64 (in float32 the expanded quadratic loses accuracy to
        cancellation), else ``"gram"`` where it applies, no trace is asked for (a trace needs every
        loss every iteration), k Grams fit in ``gram_memory`` and one iteration is large enough to
        pay for the bookkeeping, else ``"data"``.
    gram_memory : int, default 512 MiB
        Bytes for cached cluster Grams (``8 d^2`` each) on the ``"gram"`` path.
    dtype : numpy.float32 or numpy.float64, optional
        Working precision; default X's dtype if it is float32 or float64, else float64.
    n_threads : int, optional
        numba threads (default: ``numba.get_num_threads()``, all of numba's pool unless
        ``numba.set_num_threads`` lowered it, as the harness's workers do). Results do not depend
        on it.
    rng : None, int, SeedSequence or Generator
        Only used to draw ``participation`` when it is an int, but checked in every call (a
        ``TypeError`` naming ``rng`` for anything else, as the estimator and the baselines do).
    kernel : {None, "numba", "jax"}, default None
        Who computes: ``"numba"``, the kernels of this package on the CPU's cores, or ``"jax"``,
        the same iterations written with JAX (``mixlinreg/_jax.py``), on JAX's default device: a
        CUDA GPU when ``pip install 'mixlinreg[gpu]'`` installed one, else the CPU (``pip install
        'mixlinreg[jax]'``). The JAX kernel runs the direct path (``method`` must be ``"auto"`` or
        ``"data"``; ``result.method`` is ``"jax"``), ignores ``n_threads``, and computes matrix
        products at full float32 precision (no TF32); in float64 it equals the numba kernel to
        rounding (``tests/test_jax_backend.py``). ``None``: the default of the calling context,
        ``"numba"`` unless :func:`mixlinreg.use_kernel` says otherwise. Both kernels share this
        function's validation, so bad input gets the same error from either.
    backend : {None, "numba", "jax"}, default None
        The former name of ``kernel`` (a ``FutureWarning`` says so; giving both is an error).
    n_samples : None or int array (m,), optional
        Machines of unequal sizes given padded: machine i holds the first ``n_samples[i]`` rows
        of ``X[i]`` and ``y[i]`` (integers in [1, n]); the padding is never read and may hold
        anything (NaN too). Not with lists (their lengths are the sizes).
        :func:`mixlinreg.stack_machines` makes this form from lists.
    weighting : {"uniform", "size"}, default "uniform"
        How machines of unequal sizes count. ``"uniform"``: every machine once, the objective
        ``(1/m) sum_i F_i`` of the paper. ``"size"``: every row once, ``sum_i (n_i / N) F_i``
        with ``N = sum_i n_i`` (pooled empirical risk): machine i's gradient and its share of
        the training loss are weighted ``m n_i / N``; each machine is still assigned by its own
        mean loss ``F_i``. With equal sizes the two are the same (bit for bit). Gradient
        averaging only (``averaging="model"`` refuses ``"size"`` with unequal sizes).

    shared : None, bool array (d,) or sequence of ints, optional
        Weight sharing (Section 4.3 of the long version, 4.1 of the NeurIPS version): the
        coordinates (for ``loss="multinomial"``, the feature rows of each d x C model) that all k
        models share. They hold one value, trained on every participating machine at the model
        it chose: option I moves them by ``- (lr / m) sum_i g_i`` over all participating machines
        (plain gradient averaging), option II sets them to the mean of all participating
        machines' local models (FedAvg); the other coordinates are IFCA's, exactly as without
        sharing. ``init`` must hold equal values on them in the k models of every run
        (:func:`mixlinreg.tie_shared` averages them); ``method="gram"`` does not apply. None or
        no coordinate: plain IFCA.

    Returns
    -------
    IFCAResult
        ``theta`` in the working dtype; losses (and trace distances) are accumulated and reported
        in float64 whatever the working dtype.

    Raises
    ------
    OverflowError
        When a run's loss at its starting models overflows the working dtype (the message names
        the scales of X, y and init); a run that diverges after some steps is a result instead.
    FloatingPointError
        The counterpart for data so small that the loss and its gradient underflow the working
        dtype: ``max|X| * max(max|X|, max|y|)`` (the scale of the products ``x x^T theta``,
        ``x y`` every gradient is made of), or for the squared and Huber losses ``max|y|^2``,
        below the dtype's smallest normal number (float64 2.2e-308, float32 1.2e-38). Every
        machine's losses would tie (all on model 0) and no finite step size would move the
        models; the message names max|X|, max|y| and says to rescale the data.

    Examples
    --------
    >>> import numpy as np, mixlinreg as mlr
    >>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    >>> init = mlr.init_close(mix.theta_star, alpha0=0.25, n_runs=3, rng=1)
    >>> res = mlr.ifca(mix.X, mix.y, init, lr=0.1, n_iter=100)
    >>> res.theta.shape, res.labels.shape
    ((3, 2, 5), (3, 20))
    >>> bool((res.labels == mix.labels).all())
    True

    References
    ----------
    Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
    NeurIPS 2020 / IEEE Trans. Inf. Theory 2022: Algorithm 2 (IFCA) and Section 5 (resampling).
    """
    if backend is not None:
        if kernel is not None:
            raise ValueError(f"give kernel= only (backend= is its former name), got kernel="
                             f"{kernel!r} and backend={backend!r}")
        renamed("ifca(backend=...)", "ifca(kernel=...)")
        kernel = backend
    kernel = resolve_kernel(kernel)
    if kernel == "jax":
        check_jax_method(method, "kernel='jax'")
        method = "data"  # the JAX kernel computes the direct path
    prob = _Problem.of(X, y, init, lr, n_iter=n_iter, loss=loss, l2=l2, huber_delta=huber_delta,
                       averaging=averaging, local_steps=local_steps, resample=resample,
                       participation=participation, y_index=y_index, theta_star=theta_star,
                       early_stop=early_stop, tol=tol, diverge_threshold=diverge_threshold,
                       trace=trace, method=method, gram_memory=gram_memory, dtype=dtype, rng=rng,
                       shared=shared, n_samples=n_samples, weighting=weighting)
    if kernel == "jax" and prob.ragged:
        raise ValueError("kernel='jax' needs machines of equal sizes (its iterations take means "
                         "over whole machines); use kernel='numba' for machines of unequal sizes")
    n_threads = check_param("n_threads", n_threads,
                            NUMBA_NUM_THREADS=numba.config.NUMBA_NUM_THREADS)
    threads = numba.get_num_threads() if n_threads is None else n_threads
    res = _run_jax(prob) if kernel == "jax" else _run(prob, threads)
    check_start_finite(prob, res)  # an OverflowError naming the scales, not a "divergence"
    return res


def _run_jax(prob):
    """The JAX backend on a validated problem, packed as an :class:`IFCAResult`."""
    from ._jax import run_jax

    out = run_jax(prob)
    trace = None
    if prob.trace:
        trace = IFCATrace(labels=out["trace_labels"], loss=out["trace_loss"],
                          dist=out["trace_dist"] if prob.has_star else None)
    theta = out["theta"]
    if prob.nout > 1:
        theta = np.ascontiguousarray(from_vectors(theta, prob.nout))
    return IFCAResult(theta=theta, labels=out["labels"], loss=out["loss"], diverged=out["diverged"],
                      converged=out["converged"], n_iter=out["n_iter"], method="jax", trace=trace)


def _run(prob, threads):
    """Allocate the outputs, group the kernel's arguments and run the path ``prob.method``."""
    X, Y, theta = prob.X, prob.Y, prob.theta
    m, n, d = X.shape
    R, k = theta.shape[0], theta.shape[1] // prob.nout
    dt = X.dtype
    if prob.method == "stats":  # an overflow here shows as a non-finite loss (an OverflowError)
        with np.errstate(over="ignore", invalid="ignore"):
            A = np.ascontiguousarray(np.matmul(X.transpose(0, 2, 1), X))
            Bv = np.ascontiguousarray(np.einsum("mnd,cmn->cmd", X, Y, optimize=True))
            cv = np.ascontiguousarray(np.einsum("cmn,cmn->cm", Y, Y).astype(np.float64))
    else:
        A = np.zeros((1, 1, 1), dtype=dt)
        Bv = np.zeros((1, 1, 1), dtype=dt)
        cv = np.zeros((1, 1), dtype=np.float64)
    data = Data(X, Y, prob.yidx, prob.method == "stats", A, Bv, cv, prob.counts, prob.ragged,
                prob.wts)
    loss = Loss(LOSS_CODES[prob.loss], prob.huber_delta, prob.l2, prob.nout)
    upd = Update(prob.lr, prob.averaging == "model", prob.local_steps, prob.use_part, prob.part,
                 prob.use_shared, prob.shared)
    stop = Stop(prob.early_stop, prob.tol, prob.thresh)
    nchunks = min(m, _numerics.MAX_CHUNKS)
    chunk_lo = (np.arange(nchunks + 1, dtype=np.int64) * m) // nchunks
    pad = _numerics.SIMD_COLUMNS[dt]

    res = Result(np.zeros((R, m), dtype=np.int64), np.zeros(R, dtype=np.float64),
                 np.zeros(R, dtype=np.bool_), np.zeros(R, dtype=np.bool_),
                 np.zeros(R, dtype=np.int64))
    on, has_star = prob.trace, prob.has_star
    T1 = prob.n_iter + 1 if on else 1
    tr = Trace(on, np.zeros((T1, R if on else 1, m if on else 1), dtype=np.int64),
               np.zeros((T1, R if on else 1), dtype=np.float64),
               np.zeros((T1, R, k, prob.star.shape[1] // prob.nout) if (on and has_star)
                        else (1, 1, 1, 1),
                        dtype=np.float64),
               has_star, prob.star)

    old_threads = numba.get_num_threads()
    numba.set_num_threads(threads)
    path_stats = None
    try:
        with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
            if prob.method == "gram":
                path_stats = run_gram(data, loss, upd, prob.n_iter, stop, chunk_lo, pad, tr,
                                      theta, res, prob.gram_memory)
            else:  # in chunks of iterations, so that Ctrl-C stops it (mixlinreg/_chunked.py)
                run_direct(data, loss, upd, prob.n_iter, prob.resample, prob.n_sub, stop,
                           chunk_lo, pad, tr, theta, res)
    finally:
        numba.set_num_threads(old_threads)

    trace = None
    if on:
        trace = IFCATrace(labels=tr.labels, loss=tr.loss, dist=tr.dist if has_star else None)
    if prob.nout > 1:
        theta = np.ascontiguousarray(from_vectors(theta, prob.nout))
    return IFCAResult(theta=theta, labels=res.labels, loss=res.loss, diverged=res.diverged,
                      converged=res.converged, n_iter=res.n_iter, method=prob.method,
                      trace=trace, path_stats=path_stats)


def __getattr__(name):  # the former names of the kernel's choice, for one release
    if name in ("BACKENDS", "current_backend"):
        new = {"BACKENDS": "KERNELS", "current_backend": "current_kernel"}[name]
        renamed(f"mixlinreg.ifca.{name}", f"mixlinreg.ifca.{new}")
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
