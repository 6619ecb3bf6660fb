"""One-shot clustering: k-means on the local models, then least squares per estimated cluster."""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from .._validation import as_generator, check_int
from ._common import check_data_rescaled, check_l2, check_loss, cluster_fit, stats_floats
from ._local_models import _local_fit
from ._result import BaselineResult

__all__ = ["one_shot"]


def one_shot(X, y, k, *, l2=0.0, n_init=10, loss="squared", rng=None):
    r"""One-shot clustering (Algorithm 1 of the long version).

    1. Every machine computes its local ERM, exactly as :func:`local_models` (minimum-norm least
       squares when ``l2 == 0``, so ``n < d`` is allowed; ridge when ``l2 > 0``) and sends it.
    2. The center clusters the ``m`` local models with scikit-learn
       ``KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=s)``, ``s`` an integer
       drawn from ``rng``.
    3. Inside each estimated cluster a model is fitted on the pooled data: the same per-cluster
       least squares as :func:`oracle`, with the estimated labels. The clusters are never revised.

    A cluster k-means leaves empty (possible only when fewer than ``k`` local models are
    distinct) keeps its k-means center as its model.

    Parameters
    ----------
    X : array_like, shape (m, n, d)
    y : array_like, shape (m, n)
    k : int
        Number of clusters, ``1 <= k <= m``.
    l2 : float, default 0
        Ridge coefficient of the local and the per-cluster fits, ``>= 0``.
    n_init : int, default 10
        k-means restarts (the best inertia is kept), ``>= 1``.
    loss : {"squared"}
        Only the squared loss.
    rng : None, int, SeedSequence or Generator
        Source of the k-means seed.

    Returns
    -------
    BaselineResult
        ``theta`` (k, d); ``labels`` k-means's labels; ``n_rounds = 2`` (local models up, then the
        cluster models down); ``floats_sent_per_machine = 2 d`` (``d`` up: the local model;
        ``d`` down: its cluster's model; the per-cluster fit is charged as in
        :class:`BaselineResult`). ``extra``: ``"local_models"`` (m, d), ``"centers"`` (k, d) the
        k-means centers, ``"inertia"``, ``"random_state"`` (the seed given to KMeans),
        ``"cluster_sizes"`` (k,), ``"floats_sufficient_stats"``.

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.baselines import one_shot
    >>> mix = mlr.make_mixture(m=10, n=30, d=3, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=1)
    >>> res = one_shot(mix.X, mix.y, 2, rng=0)
    >>> res.theta.shape, mlr.adjusted_rand(mix.labels, res.labels)
    ((2, 3), 1.0)

    References
    ----------
    Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
    IEEE Trans. Inf. Theory 2022 (long version), Section 4.1, Algorithm 1 (one-shot clustering).
    """
    X, y = check_data_rescaled(X, y)
    check_loss(loss)
    l2 = check_l2(l2)
    m, _, d = X.shape
    k = check_int("k", k, low=1, high=m)
    n_init = check_int("n_init", n_init, low=1)
    seed = int(as_generator(rng).integers(2**32))

    local, _ = _local_fit(X, y, l2)
    km = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed).fit(local)
    labels = km.labels_.astype(np.int64)
    theta, sizes = cluster_fit(X, y, labels, k, l2)
    empty = sizes == 0
    theta[empty] = km.cluster_centers_[empty]
    return BaselineResult(
        theta=theta, labels=labels, n_rounds=2, floats_sent_per_machine=float(2 * d),
        extra={"local_models": local, "centers": km.cluster_centers_.copy(),
               "inertia": float(km.inertia_), "random_state": seed, "cluster_sizes": sizes,
               "floats_sufficient_stats": stats_floats(d)})
