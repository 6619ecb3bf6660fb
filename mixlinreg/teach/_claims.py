"""What a teaching run did, as numbers: the facts every caption and lesson sentence is made from.

A sentence that describes a run (who wins which machines, who moves, where a model ends, which
step sizes converge) is written from these facts, and the facts are stored with the view
(``name.json``, key ``"facts"``), so a test can recompute them and compare. Nothing here runs
IFCA; it reads :class:`~mixlinreg.teach.Path` objects and problems.
"""

from __future__ import annotations

import numpy as np

__all__ = ["machines_per_model", "path_facts", "step_thresholds", "em_temperature",
           "factor_at_quarter_step", "step_range_for_half", "join_words", "counts_phrase"]


def machines_per_model(labels, k):
    """Machines each model wins at every iterate: ``(T + 1, k)`` ints from ``(T + 1, m)`` labels."""
    labels = np.asarray(labels)
    return np.stack([np.bincount(row, minlength=k) for row in labels])


def _between(point, a, b, frac=0.25):
    """True if ``point`` is within ``frac * |a - b|`` of the segment from ``a`` to ``b``."""
    ab = b - a
    s = float(np.clip(np.dot(point - a, ab) / np.dot(ab, ab), 0.0, 1.0))
    return bool(np.linalg.norm(point - (a + s * ab)) <= frac * np.linalg.norm(ab))


def path_facts(path, mix):
    """The facts of one run (hard or soft) on a problem with known clusters, as plain JSON types.

    Returns
    -------
    dict
        ``counts_start``, ``counts_min``, ``counts_max``, ``counts_end`` (machines per model);
        ``moved`` (distance from each model's start to its end); ``lines_end`` (per model, the
        true lines, 1-based, whose machines it holds at the end); ``between`` (per model holding
        two or more lines: whether it ends within a quarter of their distance of the segment
        joining the first two); ``end`` (final models); ``dist_start``, ``dist_end`` (matched
        distance); ``lines_unfound`` (true lines, 1-based, no model holds alone at the end);
        ``leader_start`` (1-based model winning the most machines at the start).
    """
    k = path.theta.shape[1]
    counts = machines_per_model(path.labels, k)
    truth = np.asarray(mix.theta_star)
    end = path.theta[-1]
    lines_end, between = [], []
    for j in range(k):
        held = sorted({int(c) + 1 for c in np.asarray(mix.labels)[path.labels[-1] == j]})
        lines_end.append(held)
        between.append(_between(end[j], truth[held[0] - 1], truth[held[1] - 1])
                       if len(held) >= 2 else None)
    alone = {ls[0] for ls in lines_end if len(ls) == 1}
    return {
        "counts_start": counts[0].tolist(), "counts_min": counts.min(0).tolist(),
        "counts_max": counts.max(0).tolist(), "counts_end": counts[-1].tolist(),
        "moved": [round(float(v), 4) for v in np.linalg.norm(end - path.theta[0], axis=1)],
        "lines_end": lines_end, "between": between,
        "end": np.round(end, 4).tolist(),
        "dist_start": round(float(path.dist[0]), 4), "dist_end": round(float(path.dist[-1]), 4),
        "lines_unfound": [c for c in range(1, truth.shape[0] + 1) if c not in alone],
        "leader_start": int(np.argmax(counts[0])) + 1,
        "m": int(counts[0].sum()),
    }


def step_thresholds(X, labels, k=None):
    """Largest step of each correctly clustered model: ``1 / (p_j lambda_max(H_j))``.

    With IFCA's divisor ``m``, a correctly clustered model ``j`` updates as
    ``theta_j <- theta_j - 2 lr p_j H_j (theta_j - hat theta_j)`` with ``p_j = m_j / m`` and
    ``H_j = sum_{i in j} X_i^T X_i / (m_j n)``: the error along ``H_j``'s top eigenvector is
    multiplied by ``|1 - 2 lr p_j lambda_max(H_j)|``, which stays below 1 iff
    ``lr < 1 / (p_j lambda_max(H_j))`` (``2 / lambda_max`` for ``p_j = 1/2``; ``1/p_j`` for the
    population design ``E[x x^T] = I``).

    A model with no machine does not move, so no step is too large for it: its entry is ``inf``.

    Returns
    -------
    ndarray (k,)
    """
    X = np.asarray(X, dtype=float)
    labels = np.asarray(labels)
    k = int(labels.max()) + 1 if k is None else k
    m, n, _ = X.shape
    out = np.empty(k)
    for j in range(k):
        Xj = X[labels == j]
        if Xj.shape[0] == 0:
            out[j] = np.inf
            continue
        H = np.einsum("mnd,mne->de", Xj, Xj) / (Xj.shape[0] * n)
        out[j] = 1.0 / ((Xj.shape[0] / m) * np.linalg.eigvalsh(H)[-1])
    return out


def em_temperature(sigma, n):
    """The temperature at which soft IFCA's weights are EM's posterior for this model.

    Machine ``i``'s ``n`` points under model ``j`` with Gaussian noise ``sigma`` have likelihood
    ``prop. exp(-n F_i(theta_j) / (2 sigma^2))`` (``F_i`` the mean squared error), so with equal
    cluster weights EM's E-step is soft IFCA's softmax of ``-F_i / temperature`` at
    ``temperature = 2 sigma^2 / n``.
    """
    return 2.0 * float(sigma) ** 2 / int(n)


def factor_at_quarter_step(p_small, p_large):
    """Population factors ``|1 - 2 gamma p_j|`` of both clusters at ``gamma = 1/(4 p_small)``:
    ``(1/2, |1 - p_large / (2 p_small)|)``."""
    return 0.5, abs(1.0 - p_large / (2.0 * p_small))


def step_range_for_half(p_small, p_large):
    """Steps ``gamma`` at which both clusters' population factor is ``<= 1/2``:
    ``[1/(4 p_small), 3/(4 p_large)]``, or None when empty (``p_large > 3 p_small``)."""
    lo, hi = 1.0 / (4.0 * p_small), 3.0 / (4.0 * p_large)
    return (lo, hi) if lo <= hi else None


def join_words(items):
    """``[1] -> "1"``, ``[1, 2] -> "1 and 2"``, ``[1, 2, 3] -> "1, 2 and 3"``."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def counts_phrase(f, j):
    """How many machines model ``j`` (0-based) wins: at the start, along the way, at the end."""
    a, lo, hi, z = (f[key][j] for key in ("counts_start", "counts_min", "counts_max",
                                          "counts_end"))
    if lo == hi:
        return f"wins {a} machine{'s' * (a != 1)} in every iteration"
    return (f"wins {a} machine{'s' * (a != 1)} at the start, between {lo} and {hi} along the "
            f"way and {z} at the end")
