"""Solutions to the exercises of the lesson (experiments/tutorial.py, section 9).

Try the exercises first. The lesson's checks (``mixlinreg.teach.exercises``) accept these;
``tests/test_teaching_claims.py`` runs them, and the common wrong answers, through the checks.
"""

import numpy as np


def my_assign(X, y, theta):
    """Exercise 1: per machine, the model with the lowest mean squared error (ties: lowest index,
    which is what ``np.argmin`` does)."""
    losses = np.mean((np.einsum("mnd,kd->mnk", X, theta) - y[:, :, None]) ** 2, axis=1)  # (m, k)
    return np.argmin(losses, axis=1)


def my_factor(g):
    """Exercise 2: with correct clusters, divisor m and E[x x^T] = I, cluster j's expected update
    is theta - 2 lr p_j (theta - theta*_j), so the error is multiplied by 1 - 2 g; the size of
    the error is multiplied by |1 - 2 g| (above g = 1/2 the step overshoots and flips the sign)."""
    return abs(1.0 - 2.0 * g)


def my_lr_max(p, H):
    """Exercise 3: along H's top eigenvector the error is multiplied by 1 - 2 lr p lambda_max(H);
    it shrinks iff |1 - 2 lr p lambda_max| < 1, i.e. lr < 1 / (p lambda_max(H)). (With
    H = I and equal clusters, p = 1/2, that is lr < 2.)"""
    return 1.0 / (p * np.linalg.eigvalsh(H)[-1])
