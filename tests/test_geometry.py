"""Tests of mixlinreg.geometry: the separation Delta and centres at an exact separation."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from mixlinreg.geometry import min_separation, simplex_centers


def brute_separation(theta):
    """Every pair, one at a time (the definition)."""
    theta = np.asarray(theta, dtype=np.float64)
    k = theta.shape[0]
    return min((math.dist(theta[a], theta[b]) for a in range(k) for b in range(a + 1, k)),
               default=math.inf)


# ------------------------------------------------------------------------------ min_separation


def test_min_separation_hand_values():
    assert min_separation([[0.0, 0.0], [3.0, 4.0], [0.0, 10.0]]) == 5.0
    assert min_separation([[1.0, 2.0, 3.0]]) == math.inf  # one centre: no pair
    assert min_separation([[1.0, 2.0], [5.0, 5.0], [1.0, 2.0]]) == 0.0  # a repeated centre
    assert min_separation(np.array([[0, 0], [0, 2]], dtype=np.int64)) == 2.0
    assert isinstance(min_separation(np.eye(3, dtype=np.float32)), float)


def test_min_separation_matches_brute_force(global_random_seed):
    gen = np.random.default_rng(global_random_seed)
    for k, d in [(2, 1), (3, 5), (6, 40), (4, 1000)]:
        theta = gen.standard_normal((k, d)) * gen.uniform(0.1, 10.0)
        # both sum d squares, in different orders: a few ulps apart at most
        assert min_separation(theta) == pytest.approx(brute_separation(theta), rel=1e-13)


def test_min_separation_float32_is_computed_in_float64():
    theta = np.array([[0.0, 0.0], [0.1, 0.2]], dtype=np.float32)
    assert min_separation(theta) == brute_separation(theta.astype(np.float64))


@pytest.mark.parametrize("theta, error, match", [
    (np.zeros(3), ValueError, r"^theta must have 2 dimensions, got shape \(3,\)"),
    (np.zeros((2, 2, 2)), ValueError, r"^theta must have 2 dimensions"),
    (np.zeros((0, 3)), ValueError, r"^theta must have shape \(k, d\) with k >= 1 .*got \(0, 3\)"),
    (np.zeros((2, 0)), ValueError, r"with k >= 1 and d >= 1, got \(2, 0\)"),
    ([[0.0, np.nan], [1.0, 1.0]], ValueError, r"^theta must contain only finite values"),
    ([[0.0, np.inf], [1.0, 1.0]], ValueError, r"^theta must contain only finite values"),
    ([["a", "b"]], TypeError, r"^theta must be a numeric array"),
    (np.eye(2) * 1j, TypeError, r"^theta must be real"),
])
def test_min_separation_input_errors(theta, error, match):
    with pytest.raises(error, match=match):
        min_separation(theta)


# ------------------------------------------------------------------------------ simplex_centers


@pytest.mark.parametrize("haar", [True, False])
@pytest.mark.parametrize("k, d", [(2, 2), (3, 7), (6, 20), (4, 1000)])
def test_simplex_centers_equidistant(k, d, haar, global_random_seed):
    delta = 1.7
    theta = simplex_centers(k, d, delta, global_random_seed, haar=haar)
    assert theta.shape == (k, d) and theta.dtype == np.float64
    D = np.linalg.norm(theta[:, None] - theta[None], axis=-1)
    # orthonormal QR columns: exact in real arithmetic, rounding of order d * eps
    assert_allclose(D[~np.eye(k, dtype=bool)], delta, rtol=1e-12)
    assert_allclose(np.linalg.norm(theta, axis=1), delta / math.sqrt(2), rtol=1e-12)
    assert min_separation(theta) == pytest.approx(delta, rel=1e-12)


def test_simplex_centers_haar_flag_only_flips_signs(global_random_seed):
    g1, g2 = (np.random.default_rng(global_random_seed) for _ in range(2))
    fixed = simplex_centers(5, 9, 1.0, g1)
    raw = simplex_centers(5, 9, 1.0, g2, haar=False)
    # the same draw: both generators are left in the same state
    assert_array_equal(g1.random(4), g2.random(4))
    # and the same centres up to the sign of each one, fixed by sign(diag(R)) of the same QR
    G = np.random.default_rng(global_random_seed).standard_normal((9, 5))
    q, r = np.linalg.qr(G)
    assert_array_equal(raw, (1.0 / math.sqrt(2.0)) * q.T)
    assert_array_equal(fixed, (1.0 / math.sqrt(2.0)) * (q * np.sign(np.diag(r))).T)


def test_simplex_centers_haar_directions_are_unbiased():
    """With the sign fix the centres are Haar: E theta_1 = 0. LAPACK's raw Q is not (its first
    column has a systematic sign), which is why ``haar=True`` is the default."""
    gen = np.random.default_rng(0)
    first = np.array([simplex_centers(2, 3, math.sqrt(2.0), gen)[0] for _ in range(4000)])
    # each coordinate is uniform-on-the-sphere: mean 0, variance 1/3; 4000 draws: se 0.009
    assert np.all(np.abs(first.mean(axis=0)) < 0.05)


def test_simplex_centers_rng_conventions():
    a = simplex_centers(3, 5, 1.0, rng=4)
    assert_array_equal(a, simplex_centers(3, 5, 1.0, np.random.default_rng(4)))
    assert_array_equal(a, simplex_centers(3, 5, 1.0, np.random.SeedSequence(4)))
    with pytest.raises(TypeError, match="RandomState"):
        simplex_centers(3, 5, 1.0, np.random.RandomState(0))


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((1, 5, 1.0), {}, ValueError, r"^k must be"),
    ((4, 3, 1.0), {}, ValueError, r"^d must be in"),
    ((2, 3, 0.0), {}, ValueError, r"^delta must be"),
    ((2, 3, -1.0), {}, ValueError, r"^delta must be"),
    ((2, 3, math.inf), {}, ValueError, r"^delta must be"),
    ((2.5, 3, 1.0), {}, TypeError, r"^k must be"),
    ((2, 3, 1.0), {"haar": "yes"}, TypeError, r"^haar must be"),
])
def test_simplex_centers_input_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        simplex_centers(*args, **kwargs)
