"""Shared fixtures of the mixlinreg test suite.

``global_random_seed`` (in the style of scikit-learn): tests that take it must pass for ANY seed.
By default they run with seed 42; set the environment variable
``MIXLINREG_TESTS_GLOBAL_RANDOM_SEED`` to an integer (``7``), a range (``0-9``) or ``all`` (0-99)
to run them over other seeds.

``make_problem`` builds small random mixtures of linear regressions / classifications.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

_SEED_ENV = "MIXLINREG_TESTS_GLOBAL_RANDOM_SEED"


def _global_seeds():
    value = os.environ.get(_SEED_ENV, "42").strip()
    if value == "all":
        return list(range(100))
    if "-" in value:
        lo, hi = (int(v) for v in value.split("-"))
        return list(range(lo, hi + 1))
    return [int(value)]


def pytest_generate_tests(metafunc):
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _global_seeds())


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def make_mixture(rng, m, n, d, k, loss="squared", *, n_variants=None, sep=1.0, sigma=0.3):
    """A small random mixture: machine i belongs to cluster i % k.

    Returns (X (m, n, d), y, theta_star, clusters (m,)) where y is (m, n) and theta_star (k, d), or
    y (C, m, n) and theta_star (C, k, d) when ``n_variants=C`` (C response variants sharing X).
    squared: y = x.theta* + N(0, sigma^2); huber: heavy-tailed noise (Student t, 2 dof), so that
    some residuals are beyond the Huber delta; logistic: y ~ Bernoulli(sigmoid(x.theta*)).
    """
    rng = np.random.default_rng(rng)
    X = rng.standard_normal((m, n, d))
    clusters = np.arange(m) % k
    C = 1 if n_variants is None else n_variants
    theta_star = sep * rng.standard_normal((C, k, d))
    y = np.empty((C, m, n))
    for c in range(C):
        z = np.einsum("ind,id->in", X, theta_star[c, clusters])
        if loss == "squared":
            y[c] = z + sigma * rng.standard_normal((m, n))
        elif loss == "huber":
            y[c] = z + sigma * rng.standard_t(2.0, size=(m, n))
        elif loss == "logistic":
            y[c] = (rng.random((m, n)) < _sigmoid(2.0 * z)).astype(float)
        else:
            raise ValueError(loss)
    if n_variants is None:
        return X, y[0], theta_star[0], clusters
    return X, y, theta_star, clusters


@pytest.fixture
def make_problem():
    """Factory fixture: ``make_problem(rng, m, n, d, k, loss, ...)``, see ``make_mixture``."""
    return make_mixture


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the default addopts): one worker per usable core, at most 4 (numba's threads
    and the tests' own worker processes share the cores; more workers only add memory)."""
    from mixlinreg._env import usable_cores

    return max(1, min(4, usable_cores()))
