"""mixlinreg.theory.cfl_linear: CFL's stationary point and client gradients in the linear model."""

import doctest

import numpy as np
import pytest
from numpy.testing import assert_allclose

from mixlinreg.baselines import cfl
from mixlinreg.theory import cfl_linear as cl


def test_docstring_examples():
    result = doctest.testmod(cl, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_stationary_point_is_federated_gradient_descents_limit():
    rng = np.random.default_rng(1)
    ts = np.array([[1.0, 0.0, 0.5], [-1.0, 0.5, 0.0]])
    X, y, labels = cl.draw_clients(ts, [3, 5], 60, 0.2, rng)
    assert X.shape == (8, 60, 3) and labels.tolist() == [0] * 3 + [1] * 5
    theta = cl.stationary_point(X, y)
    # the mean client gradient vanishes there (eq. (3)'s starting point)
    assert_allclose(cl.client_gradients(X, y, theta).mean(axis=0), 0.0, atol=1e-12)
    # and plain federated gradient descent (cfl with one group, no split) converges to it
    res = cfl(X, y, lr=0.1, eps1=1e-300, eps2=1e300, max_rounds=2000)
    assert_allclose(res.theta[0], theta, atol=1e-9)


def test_client_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((3, 10, 2))
    y = rng.standard_normal((3, 10))
    t = rng.standard_normal(2)
    G = cl.client_gradients(X, y, t)
    e = 1e-6
    for i in range(3):
        r = lambda v: np.mean((X[i] @ v - y[i]) ** 2)  # noqa: E731
        num = [(r(t + e * np.eye(2)[q]) - r(t - e * np.eye(2)[q])) / (2 * e) for q in range(2)]
        assert_allclose(G[i], num, rtol=1e-6, atol=1e-8)


def test_population_gradients_are_opposite_for_two_clusters():
    """Eq. (3): a1 grad R1 = -a2 grad R2 at the stationary point of a1 R1 + a2 R2."""
    rng = np.random.default_rng(3)
    ts = rng.standard_normal((2, 5))
    g = cl.population_gradients(ts, [0.3, 0.7])
    assert_allclose(0.3 * g[0], -0.7 * g[1], atol=1e-14)
    assert_allclose(cl.cosine_similarities(g)[0, 1], -1.0, atol=1e-14)


@pytest.mark.parametrize("call, match", [
    (lambda: cl.draw_clients(np.zeros((2, 3)), [1], 5, 0.1, np.random.default_rng()), "sizes"),
    (lambda: cl.draw_clients(np.zeros((2, 3)), [1, 0], 5, 0.1, np.random.default_rng()), "sizes"),
    (lambda: cl.draw_clients(np.zeros((2, 3)), [1, 1], 0, 0.1, np.random.default_rng()), "n"),
    (lambda: cl.draw_clients(np.zeros((2, 3)), [1, 1], 5, -1, np.random.default_rng()), "sigma"),
    (lambda: cl.population_gradients(np.zeros((2, 3)), [0.5, 0.0]), "weights"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
