"""Solutions to the exercises of the lesson (experiments/tutorial.py, section 14).

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


def my_objective(X, y, theta):
    """Exercise 4: IFCA's objective, the sum over machines of each machine's loss at the model it
    picks (the assignment that minimizes it: min over models, machine by machine)."""
    losses = np.mean((np.einsum("mnd,kd->mnk", X, theta) - y[:, :, None]) ** 2, axis=1)  # (m, k)
    return float(losses.min(axis=1).sum())


def my_em_temperature(sigma, n):
    """Exercise 5: machine i's n points under model j have likelihood
    (2 pi sigma^2)^(-n/2) exp(-n F_i(theta_j) / (2 sigma^2)); with equal priors EM's weights are
    the softmax of -F_i(theta_j) / (2 sigma^2 / n)."""
    return 2.0 * sigma ** 2 / n


def my_n_parameters(k, d):
    """Exercise 6: k models of d coefficients, k - 1 free mixing weights, one noise variance."""
    return k * d + (k - 1) + 1


def my_model_step(lr, m, m_j):
    """Exercise 7: gradient averaging moves model j by (lr / m) sum_{i in S_j} grad F_i; model
    averaging with one local step of size lr' by (lr' / m_j) sum_{i in S_j} grad F_i."""
    return lr * m_j / m


def my_participation(s, m):
    """Exercise 8: each machine takes part with probability s / m, the step is linear in the
    participating machines' gradients, and the server still divides by m."""
    return s / m
