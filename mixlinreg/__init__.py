"""mixlinreg: IFCA on mixtures of linear regressions and strongly convex losses.

>>> import mixlinreg as mlr
>>> mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, rng=0)
>>> res = mlr.ifca(mix.X, mix.y, mlr.init_close(mix.theta_star, 0.25, n_runs=2, rng=1), lr=0.1)
>>> float(mlr.dist_matched(res.theta[0], mix.theta_star)) < 0.06
True
"""

try:
    # before numba is imported: a NUMBA_NUM_THREADS it cannot start with is one clear line
    from ._env import check_numba_threads_env as _check_threads

    _check_threads()
    del _check_threads
    # before any kernel module: numba must cache the kernels in a folder this user can write
    from ._cache import setup as _setup_numba_cache

    _setup_numba_cache()
    del _setup_numba_cache

    from . import baselines, metrics
    from .data import (
        DuplicateClustersWarning,
        Mixture,
        Trial,
        draw_trial,
        init_bernoulli,
        init_close,
        tie_shared,
        make_logistic_mixture,
        make_mixture,
        make_student_t_mixture,
    )
    from .estimator import IFCA
    from .machines import split_by_machine, stack_machines
    from .ifca import (
        ConvergenceWarning,
        DataScaleWarning,
        EmptyClusterWarning,
        IFCAResult,
        IFCATrace,
        ifca,
        use_backend,
        use_kernel,
    )
    from .metrics import (
        adjusted_rand,
        cluster_accuracy,
        dist_matched,
        dist_nearest,
        misclassification_rate,
        pairwise_dist,
    )
except KeyboardInterrupt:  # Ctrl-C while the package loads (numba, the kernels: a second or two)
    from ._env import interrupted_while_loading

    interrupted_while_loading()  # in the mixlinreg command: one line, exit 130; elsewhere re-raised
    raise

__version__ = "0.1.0"

__all__ = [
    "IFCA", "ConvergenceWarning", "EmptyClusterWarning", "DataScaleWarning", "IFCAResult",
    "IFCATrace", "ifca", "use_kernel", "use_backend", "DuplicateClustersWarning",
    "Mixture", "Trial", "draw_trial", "make_mixture", "make_logistic_mixture",
    "make_student_t_mixture", "init_bernoulli", "init_close", "tie_shared",
    "baselines", "metrics", "adjusted_rand", "cluster_accuracy", "dist_matched", "dist_nearest",
    "misclassification_rate", "pairwise_dist", "stack_machines", "split_by_machine",
]
