"""Baselines for clustered federated learning on mixtures of linear regressions.

All share the data API of :func:`mixlinreg.ifca` (``X`` (m, n, d), ``y`` (m, n)) and return a
:class:`BaselineResult`.

* :func:`oracle`: the true partition is known; least squares per cluster.
* :func:`global_model`: one least-squares model for every machine.
* :func:`local_models`: each machine alone (minimum-norm least squares or ridge).
* :func:`one_shot`: local models, k-means on them, least squares per estimated cluster.
* :func:`soft_ifca`: IFCA with softmax cluster weights instead of the argmin.
* :func:`cfl`: Clustered Federated Learning (Sattler et al.), recursive bipartitioning.
* :func:`fpfc`: fusion penalized federated clustering (Yu et al.), SCAD pair penalty, no k.
* :func:`local_train`, :func:`fedavg`, :func:`per_fedavg` (first-order Per-FedAvg),
  :func:`ifca_weighted` (IFCA for machines of unequal sizes): gradient methods for any loss of
  :mod:`mixlinreg.losses`, machines of unequal sizes as padded arrays with ``n_samples``.

>>> import mixlinreg as mlr
>>> from mixlinreg import baselines
>>> mix = mlr.make_mixture(m=10, n=30, d=3, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=1)
>>> ora = baselines.oracle(mix.X, mix.y, mix.labels)
>>> one = baselines.one_shot(mix.X, mix.y, 2, rng=0)
>>> gap = mlr.dist_matched(one.theta, mix.theta_star) - mlr.dist_matched(ora.theta, mix.theta_star)
>>> abs(gap) < 1e-12  # one-shot found the true partition, so it fits the oracle's models
True

References
----------
Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning",
NeurIPS 2020 / IEEE Trans. Inf. Theory 2022.
"""

from ._cfl import cfl, cosine_similarities, split_by_similarity
from ._federated import fedavg, ifca_weighted, local_train, machine_losses, per_fedavg
from ._fpfc import fpfc
from ._global_model import global_model
from ._local_models import local_models
from ._one_shot import one_shot
from ._oracle import oracle
from ._result import BaselineResult
from ._soft_ifca import soft_ifca

__all__ = ["BaselineResult", "oracle", "global_model", "local_models", "one_shot", "soft_ifca",
           "cfl", "fpfc", "split_by_similarity", "cosine_similarities", "local_train", "fedavg",
           "per_fedavg", "ifca_weighted", "machine_losses"]
