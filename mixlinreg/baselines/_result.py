"""The common return type of the baselines."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BaselineResult"]


@dataclass(frozen=True, eq=False)
class BaselineResult:
    """Outcome of one baseline run.

    Equality is identity (``eq=False``), as for :class:`mixlinreg.Mixture`: compare the fields with
    ``numpy.array_equal`` or ``numpy.testing.assert_allclose``.

    Attributes
    ----------
    theta : ndarray of float64, shape (k', d)
        The models: one per cluster (``oracle``, ``one_shot``, ``soft_ifca``), a single one
        (``global_model``, k' = 1) or one per machine (``local_models``, k' = m).
    labels : ndarray of int64, shape (m,)
        The model used by every machine: ``theta[labels[i]]`` serves machine ``i``.
    n_rounds : int
        Communication rounds between the machines and the center.
    floats_sent_per_machine : float
        Numbers exchanged per machine, upload and download together, under the protocol stated in
        each method's docstring. A pooled least-squares fit is charged only the download of the
        model (``d``): it stands for "any federated algorithm run inside the cluster". Computing
        it exactly in one round needs every machine's sufficient statistics ``X_i^T X_i`` (upper
        triangle) and ``X_i^T y_i``, ``d (d + 1) / 2 + d`` more floats up; the methods that fit
        pooled least squares report that number as ``extra["floats_sufficient_stats"]``.
    extra : dict
        Method-specific diagnostics (documented by each method).
    """

    theta: np.ndarray
    labels: np.ndarray
    n_rounds: int
    floats_sent_per_machine: float
    extra: dict = field(default_factory=dict)
