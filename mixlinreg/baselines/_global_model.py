"""Global model: one least-squares model for every machine."""

from __future__ import annotations

import numpy as np

from ._common import check_data_rescaled, check_l2, check_loss, cluster_fit, stats_floats
from ._result import BaselineResult

__all__ = ["global_model"]


def global_model(X, y, *, l2=0.0, loss="squared"):
    r"""One model for all machines: least squares on the pooled data of every machine.

    The limit of federated averaging without clusters. ``l2 == 0``: minimum-norm least squares
    (``numpy.linalg.lstsq``); ``l2 > 0``: ridge, minimizing
    ``(1/N) sum (y - x.theta)^2 + (l2/2) ||theta||^2`` over all ``N = m n`` rows.

    Parameters
    ----------
    X : array_like, shape (m, n, d)
    y : array_like, shape (m, n)
    l2 : float, default 0
        Ridge coefficient, ``>= 0``.
    loss : {"squared"}
        Only the squared loss.

    Returns
    -------
    BaselineResult
        ``theta`` (1, d); ``labels`` all 0; ``n_rounds = 1``; ``floats_sent_per_machine = d``
        (the model downloaded); ``extra["floats_sufficient_stats"]`` as for
        :func:`~mixlinreg.baselines.oracle`.

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.baselines import global_model
    >>> mix = mlr.make_mixture(m=8, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    >>> res = global_model(mix.X, mix.y)
    >>> res.theta.shape, res.labels.tolist()
    ((1, 3), [0, 0, 0, 0, 0, 0, 0, 0])

    References
    ----------
    Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
    IEEE Trans. Inf. Theory 2022 (long version), Section 6 (the "global model" baseline).
    """
    X, y = check_data_rescaled(X, y)
    check_loss(loss)
    l2 = check_l2(l2)
    m, _, d = X.shape
    labels = np.zeros(m, dtype=np.int64)
    theta, _ = cluster_fit(X, y, labels, 1, l2)
    return BaselineResult(theta=theta, labels=labels, n_rounds=1,
                          floats_sent_per_machine=float(d),
                          extra={"floats_sufficient_stats": stats_floats(d)})
