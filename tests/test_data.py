"""Tests of mixlinreg.data: generators, trials, initializations and their input checks."""

import math
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from mixlinreg.data import (
    Mixture,
    Trial,
    draw_responses,
    draw_rows,
    draw_trial,
    init_bernoulli,
    init_close,
    make_logistic_mixture,
    make_mixture,
    make_student_t_mixture,
)

DTYPES = [np.float32, np.float64]


def brute_separation(theta):
    theta = np.asarray(theta, dtype=np.float64)
    k = theta.shape[0]
    return min((np.linalg.norm(theta[a] - theta[b]) for a in range(k) for b in range(a + 1, k)),
               default=math.inf)


# ------------------------------------------------------------------ shapes, dtypes, labels


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_mixture_shapes_and_dtypes(dtype):
    mix = make_mixture(6, 5, 4, 3, R=0.5, sigma=0.1, rng=0, dtype=dtype)
    assert isinstance(mix, Mixture)
    assert (mix.m, mix.n, mix.d, mix.k) == (6, 5, 4, 3)
    assert mix.X.shape == (6, 5, 4) and mix.y.shape == (6, 5) and mix.theta_star.shape == (3, 4)
    assert mix.X.dtype == mix.y.dtype == mix.theta_star.dtype == np.dtype(dtype)
    assert mix.labels.dtype == np.int64 and mix.labels.shape == (6,)
    assert (mix.R, mix.sigma, mix.theta_scale) == (0.5, 0.1, "code")


@pytest.mark.parametrize("dtype", DTYPES)
def test_draw_trial_shapes_and_dtypes(dtype):
    trial = draw_trial(4, 3, 5, 2, rng=1, dtype=dtype)
    assert isinstance(trial, Trial)
    assert (trial.m, trial.n, trial.d, trial.k) == (4, 3, 5, 2)
    assert trial.X.shape == (4, 3, 5) and trial.B.shape == (2, 5) and trial.z.shape == (4, 3)
    assert trial.X.dtype == trial.B.dtype == trial.z.dtype == np.dtype(dtype)
    assert trial.y(0.3, 0.2).dtype == np.dtype(dtype)
    assert trial.theta_star(0.3, "norm").dtype == np.dtype(dtype)


def test_float32_trial_is_float64_trial_rounded():
    # Gaussian draws are made in float64 and rounded, so both dtypes see the same data.
    t64 = draw_trial(5, 7, 6, 1, rng=3, dtype=np.float64)
    t32 = draw_trial(5, 7, 6, 1, rng=3, dtype=np.float32)
    for name in ("X", "B", "z"):
        assert_array_equal(getattr(t32, name), getattr(t64, name).astype(np.float32))


def test_default_labels_equal_contiguous():
    mix = make_mixture(12, 2, 3, 4, R=1.0, sigma=0.0, rng=0)
    assert_array_equal(mix.labels, np.arange(12) // 3)


def test_custom_sizes_contiguous():
    trial = draw_trial(7, 2, 3, 3, sizes=[1, 4, 2], rng=0)
    assert_array_equal(trial.labels, [0, 1, 1, 1, 1, 2, 2])
    mix = make_mixture(5, 2, 3, 2, 1.0, 0.0, sizes=(np.int64(4), 1), rng=0)
    assert_array_equal(mix.labels, [0, 0, 0, 0, 1])


def test_m_not_divisible_by_k():
    with pytest.raises(ValueError, match=r"^m must be divisible by k.*m=7, k=2"):
        make_mixture(7, 2, 3, 2, 1.0, 0.0, rng=0)
    # explicit sizes lift the requirement
    assert make_mixture(7, 2, 3, 2, 1.0, 0.0, sizes=[3, 4], rng=0).m == 7


# ------------------------------------------------------------------ theta* scalings


@pytest.mark.parametrize("R", [0.0, 0.1, 0.75])
def test_theta_scale_code_entries_zero_or_R(R):
    mix = make_mixture(4, 2, 50, 4, R=R, sigma=0.1, rng=2)
    assert set(np.unique(mix.theta_star)) <= {0.0, R}
    assert_array_equal(mix.theta_star, R * draw_trial(4, 2, 50, 4, rng=2).B)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-14), (np.float32, 1e-6)])
def test_theta_scale_norm_rows_have_norm_R(dtype, rtol):
    R = 0.37
    mix = make_mixture(4, 2, 50, 4, R=R, sigma=0.1, theta_scale="norm", rng=2, dtype=dtype)
    assert mix.theta_scale == "norm"
    # one rounding of R * b / ||b|| per entry: a few ulps of the dtype
    assert_allclose(np.linalg.norm(mix.theta_star.astype(np.float64), axis=1), R, rtol=rtol)


def test_zero_patterns_are_redrawn():
    # with d = 1 a Bernoulli row is zero with probability 1/2; draw_trial conditions on nonzero rows
    for seed in range(20):
        trial = draw_trial(3, 2, 1, 1, rng=seed)
        assert_array_equal(trial.B, np.ones((1, 1)))
        assert_allclose(np.linalg.norm(trial.theta_star(2.0, "norm"), axis=1), 2.0, rtol=0)


def test_separation():
    mix = make_mixture(4, 2, 30, 4, R=0.5, sigma=0.1, rng=5)
    assert mix.separation == pytest.approx(brute_separation(mix.theta_star), rel=1e-14)
    assert make_mixture(2, 2, 3, 1, R=1.0, sigma=0.1, rng=0).separation == math.inf


def test_mixture_y_is_model():
    mix = make_mixture(6, 8, 5, 3, R=0.8, sigma=0.3, rng=4)
    trial = draw_trial(6, 8, 5, 3, rng=4)
    expected = np.einsum("mnd,md->mn", mix.X, mix.theta_star[mix.labels]) + 0.3 * trial.z
    # float64, different summation order (BLAS vs einsum): a few ulps of |y| ~ 1
    assert_allclose(mix.y, expected, rtol=1e-12, atol=1e-13)


# ------------------------------------------------------------------ trial sharing and panels


@pytest.mark.parametrize("theta_scale", ["code", "norm"])
def test_trial_cells_share_everything(theta_scale):
    trial = draw_trial(6, 4, 7, 2, rng=11)
    a = trial.mixture(0.1, 0.2, theta_scale)
    b = trial.mixture(0.75, 0.4, theta_scale)
    assert a.X is b.X is trial.X
    assert_array_equal(a.labels, b.labels)
    # y(R, 0) = R * (X u): exactly proportional to R
    base = trial.y(1.0, 0.0, theta_scale)
    for R in (0.1, 0.25, 0.75):
        assert_array_equal(trial.y(R, 0.0, theta_scale), R * base)
    # the noise part is sigma * z (one rounding of the sum: absolute tolerance ~ ulp(|y|))
    for R, sigma in [(0.1, 0.2), (0.5, 0.4)]:
        diff = trial.y(R, sigma, theta_scale) - trial.y(R, 0.0, theta_scale)
        assert_allclose(diff, sigma * trial.z, rtol=0, atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
def test_panel_stacks_cells(dtype):
    trial = draw_trial(4, 3, 6, 2, rng=7, dtype=dtype)
    cells = [(0.1, 0.0), (0.5, 0.2), (1.0, 0.4)]
    for theta_scale in ("code", "norm"):
        Y, theta = trial.panel(cells, theta_scale)
        assert Y.shape == (3, 4, 3) and theta.shape == (3, 2, 6)
        assert Y.dtype == theta.dtype == np.dtype(dtype)
        for c, (R, sigma) in enumerate(cells):
            assert_array_equal(Y[c], trial.y(R, sigma, theta_scale))
            assert_array_equal(theta[c], trial.theta_star(R, theta_scale))


# ------------------------------------------------------------------ reproducibility


def test_make_mixture_reproducible_and_equal_to_trial_route():
    kw = dict(m=6, n=4, d=5, k=2, R=0.5, sigma=0.2)
    a = make_mixture(**kw, rng=123)
    b = make_mixture(**kw, rng=123)
    c = draw_trial(6, 4, 5, 2, rng=123).mixture(0.5, 0.2)
    d = make_mixture(**kw, rng=np.random.default_rng(123))
    e = make_mixture(**kw, rng=np.random.SeedSequence(123))
    for other in (b, c, d, e):
        for name in ("X", "y", "theta_star", "labels"):
            assert_array_equal(getattr(a, name), getattr(other, name))
    assert not np.array_equal(a.X, make_mixture(**kw, rng=124).X)


def test_draw_order_is_B_then_X_then_z():
    gen = np.random.default_rng(9)
    B = gen.integers(0, 2, size=(2, 50)).astype(np.float64)  # no zero row for this seed and d
    X = gen.standard_normal((4, 3, 50))
    z = gen.standard_normal((4, 3))
    trial = draw_trial(4, 3, 50, 2, rng=9)
    assert_array_equal(trial.B, B)
    assert_array_equal(trial.X, X)
    assert_array_equal(trial.z, z)


# ------------------------------------------------------------------ initializations


@pytest.mark.parametrize("dtype", DTYPES)
def test_init_bernoulli(dtype):
    init = init_bernoulli(10, 2, 1000, rng=0, dtype=dtype)
    assert init.shape == (10, 2, 1000) and init.dtype == np.dtype(dtype)
    assert set(np.unique(init)) == {0.0, 1.0}
    # mean of 20000 fair coins: standard error 0.5 / sqrt(20000) ~ 0.0035; allow 5 of them
    assert abs(init.mean() - 0.5) < 5 * 0.5 / math.sqrt(init.size)
    assert_array_equal(init, init_bernoulli(10, 2, 1000, rng=0, dtype=dtype))


@pytest.mark.parametrize("direction", ["random", "adversarial"])
@pytest.mark.parametrize("alpha0", [0.01, 0.25, 0.5])
def test_init_close_distance_exact(direction, alpha0):
    theta = make_mixture(4, 2, 40, 4, R=0.5, sigma=0.0, rng=3).theta_star
    delta = brute_separation(theta)
    init = init_close(theta, alpha0, n_runs=5, rng=1, direction=direction)
    assert init.shape == (5, 4, 40) and init.dtype == np.float64
    dist = np.linalg.norm(init - theta, axis=2)
    # float64: ||u|| = 1 up to ~1e-16 and theta + r u - theta loses at most ulp(|theta|) ~ 1e-16
    # per entry against r ~ 1; 1e-12 leaves ample headroom while catching any wrong scaling.
    assert_allclose(dist, (0.5 - alpha0) * delta, rtol=1e-12, atol=1e-15)


def test_init_close_adversarial_points_to_nearest_center():
    theta = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 2.5]])
    init = init_close(theta, 0.1, n_runs=3, direction="adversarial")
    nearest = [1, 0, 3, 2]
    for j, jn in enumerate(nearest):
        step = init[:, j] - theta[j]
        toward = theta[jn] - theta[j]
        cos = step @ toward / (np.linalg.norm(step, axis=1) * np.linalg.norm(toward))
        assert_allclose(cos, 1.0, rtol=1e-14)  # parallel and same sense
    assert_array_equal(init[0], init[2])  # deterministic, same for every run


def test_init_close_random_directions_independent():
    theta = np.eye(3) * 2.0
    a = init_close(theta, 0.2, n_runs=4, rng=0)
    assert not np.allclose(a[0], a[1])
    assert_array_equal(a, init_close(theta, 0.2, n_runs=4, rng=0))
    # alpha0 = 0.5 starts at the truth
    assert_array_equal(init_close(theta, 0.5, n_runs=2, rng=0), np.broadcast_to(theta, (2, 3, 3)))


def test_init_close_dtype_default():
    theta_int = np.array([[0, 0], [2, 0]])
    assert init_close(theta_int, 0.25, 1).dtype == np.float64
    assert init_close(theta_int.astype(np.float32), 0.25, 1).dtype == np.float32
    assert init_close(theta_int, 0.25, 1, dtype=np.float32).dtype == np.float32


# ------------------------------------------------------------------ strongly convex families


def test_logistic_mixture():
    R = 2.0
    mix = make_logistic_mixture(4, 20000, 3, 2, R=R, rng=8)
    assert mix.y.shape == (4, 20000) and mix.y.dtype == np.float64
    assert set(np.unique(mix.y)) == {0.0, 1.0}
    assert math.isnan(mix.sigma) and mix.theta_scale == "gaussian"
    assert_allclose(np.linalg.norm(mix.theta_star, axis=1), R, rtol=1e-14)
    logit = np.einsum("mnd,md->mn", mix.X, mix.theta_star[mix.labels])
    p = expit(logit)
    # Given X, y - p are independent with variance p (1 - p). Overall mean, and the mean over the
    # points with positive logit (about 0.7 here; 0.5 if y ignored x, 0.3 if the sign were flipped),
    # must both match the model within 5 standard errors.
    for mask in (np.ones_like(p, dtype=bool), logit > 0):
        yy, pp = mix.y[mask], p[mask]
        se = math.sqrt(np.sum(pp * (1 - pp))) / yy.size
        assert abs(yy.mean() - pp.mean()) < 5 * se
    assert p[logit > 0].mean() > 0.65


def test_logistic_reproducible_float32():
    a = make_logistic_mixture(4, 10, 3, 2, R=1.0, rng=5, dtype=np.float32)
    b = make_logistic_mixture(4, 10, 3, 2, R=1.0, rng=5, dtype=np.float32)
    assert a.X.dtype == a.y.dtype == a.theta_star.dtype == np.float32
    assert_array_equal(a.y, b.y)


@pytest.mark.parametrize("df", [3.0, 5.0, 10.0])
def test_student_t_noise_variance(df):
    sigma = 0.7
    mix = make_student_t_mixture(4, 50000, 2, 2, R=1.0, sigma=sigma, df=df, rng=21)
    eps = mix.y - np.einsum("mnd,md->mn", mix.X, mix.theta_star[mix.labels])
    N = eps.size
    if df > 4:
        # unit-variance t has kurtosis 3 + 6 / (df - 4); var of the sample variance is
        # sigma^4 (kurtosis - 1) / N. Allow 5 standard errors.
        se = sigma**2 * math.sqrt((2 + 6 / (df - 4)) / N)
        assert abs(eps.var() - sigma**2) < 5 * se
    else:
        # infinite fourth moment: no CLT for the variance; check the robust scale instead.
        # median |t_df| times sqrt((df-2)/df), from scipy's t quantile. With N = 2e5 the sample
        # median's relative standard error is ~0.3%; 2% is over 5 of them.
        from scipy.stats import t as student_t

        mad = sigma * student_t.ppf(0.75, df) * math.sqrt((df - 2) / df)
        assert abs(np.median(np.abs(eps)) / mad - 1) < 0.02
    # same seed, same X as the Gaussian route (draw order B, X, noise)
    assert_array_equal(mix.X, make_mixture(4, 50000, 2, 2, 1.0, sigma, rng=21).X)


def test_student_t_is_heavier_tailed_than_gaussian():
    t = make_student_t_mixture(2, 50000, 1, 1, R=0.0, sigma=1.0, df=3.0, rng=0).y
    g = make_mixture(2, 50000, 1, 1, R=0.0, sigma=1.0, rng=0).y
    assert np.mean(np.abs(t) > 4) > 10 * np.mean(np.abs(g) > 4)


# ------------------------------------------------------------------ rows for given parameters


def test_draw_rows_draw_order_and_model(global_random_seed):
    """X first, then the noise; y = <x, theta*_label> + sigma eps (the studies' data)."""
    labels = np.array([1, 0, 1, 1])
    theta = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    X, y = draw_rows(labels, theta, 6, sigma=0.4, rng=global_random_seed)
    gen = np.random.default_rng(global_random_seed)
    X0 = gen.standard_normal((4, 6, 3))
    eps = gen.standard_normal((4, 6))
    assert_array_equal(X, X0)
    assert_array_equal(y, np.einsum("ind,id->in", X0, theta[labels]) + 0.4 * eps)


@pytest.mark.parametrize("loss, sigma, df", [("squared", 0.3, None), ("huber", 0.3, 4.0),
                                             ("logistic", None, None)])
def test_draw_rows_summations_agree(loss, sigma, df):
    """The two summation orders draw the same numbers and agree up to rounding."""
    labels = np.repeat([0, 1, 2], [2, 3, 1])
    theta = np.random.default_rng(1).standard_normal((3, 40))
    a = draw_rows(labels, theta, 5, loss=loss, sigma=sigma, df=df, rng=2)
    b = draw_rows(labels, theta, 5, loss=loss, sigma=sigma, df=df, rng=2, summation="cluster")
    assert_array_equal(a[0], b[0])
    # 40 products summed in two orders: a few ulps of |y| ~ sqrt(40)
    atol = 0 if loss == "logistic" else 1e-13
    assert_allclose(a[1], b[1], rtol=0, atol=atol)


def test_draw_rows_float32_is_float64_rounded():
    labels = np.array([0, 1])
    theta = np.array([[1.0, 0.0], [0.0, 1.0]])
    X64, _ = draw_rows(labels, theta, 5, sigma=0.1, rng=3)
    X32, y32 = draw_rows(labels, theta, 5, sigma=0.1, rng=3, dtype=np.float32)
    assert X32.dtype == y32.dtype == np.float32
    assert_array_equal(X32, X64.astype(np.float32))


def test_draw_responses_conventions():
    z = np.linspace(-3.0, 3.0, 7)
    u = np.random.default_rng(5).random(7)
    assert_array_equal(draw_responses(z, "logistic", rng=5), (u < expit(z)).astype(np.float64))
    t = np.random.default_rng(5).standard_t(5.0, size=7) * math.sqrt(3.0 / 5.0)
    assert_array_equal(draw_responses(z, "huber", sigma=2.0, df=5.0, rng=5), z + 2.0 * t)
    y = draw_responses(np.zeros(200_000), "squared", sigma=2.0, df=5.0, rng=6)
    assert np.var(y) == pytest.approx(4.0, rel=0.05)  # unit-variance t scaled by sigma
    assert_array_equal(draw_responses(z, sigma=0.0, rng=0), z)


def test_logistic_mixture_is_draw_rows_after_its_parameters():
    mix = make_logistic_mixture(6, 4, 3, 2, R=2.0, rng=8)
    gen = np.random.default_rng(8)
    gen.standard_normal((2, 3))  # the Gaussian directions of theta*
    X, y = draw_rows(mix.labels, mix.theta_star, 4, loss="logistic", rng=gen, summation="cluster")
    assert_array_equal(mix.X, X)
    assert_array_equal(mix.y, y)


# ------------------------------------------------------------------ input validation

OK = dict(m=4, n=3, d=2, k=2)


def _bad(name, exc, call):
    return pytest.param(name, exc, call, id=f"{name}-{exc.__name__}")


BAD_INPUTS = [
    _bad("m", ValueError, lambda: make_mixture(0, 3, 2, 1, 1.0, 0.1)),
    _bad("m", TypeError, lambda: make_mixture(4.0, 3, 2, 2, 1.0, 0.1)),
    _bad("n", ValueError, lambda: make_mixture(4, 0, 2, 2, 1.0, 0.1)),
    _bad("d", ValueError, lambda: make_mixture(4, 3, -1, 2, 1.0, 0.1)),
    _bad("k", ValueError, lambda: make_mixture(4, 3, 2, 0, 1.0, 0.1)),
    _bad("k", ValueError, lambda: make_mixture(4, 3, 2, 5, 1.0, 0.1)),
    _bad("k", TypeError, lambda: draw_trial(4, 3, 2, True)),
    _bad("R", ValueError, lambda: make_mixture(**OK, R=-0.1, sigma=0.1)),
    _bad("R", ValueError, lambda: make_mixture(**OK, R=math.inf, sigma=0.1)),
    _bad("R", TypeError, lambda: make_mixture(**OK, R="1", sigma=0.1)),
    _bad("sigma", ValueError, lambda: make_mixture(**OK, R=1.0, sigma=-1.0)),
    _bad("sigma", ValueError, lambda: make_mixture(**OK, R=1.0, sigma=math.nan)),
    _bad("theta_scale", ValueError, lambda: make_mixture(**OK, R=1.0, sigma=0.1, theta_scale="l2")),
    _bad("dtype", ValueError, lambda: make_mixture(**OK, R=1.0, sigma=0.1, dtype=np.int32)),
    _bad("dtype", ValueError, lambda: draw_trial(**OK, dtype=np.float16)),
    _bad("dtype", TypeError, lambda: draw_trial(**OK, dtype="nonsense")),
    _bad("rng", TypeError, lambda: draw_trial(**OK, rng="seed")),
    _bad("rng", TypeError, lambda: draw_trial(**OK, rng=np.random.RandomState(0))),
    _bad("sizes", ValueError, lambda: draw_trial(**OK, sizes=[4])),
    _bad("sizes", ValueError, lambda: draw_trial(**OK, sizes=[1, 2])),
    _bad("sizes", TypeError, lambda: draw_trial(**OK, sizes=3)),
    _bad("sizes[0]", ValueError, lambda: draw_trial(**OK, sizes=[0, 4])),
    _bad("sizes[1]", TypeError, lambda: draw_trial(**OK, sizes=[2, 2.0])),
    _bad("R", ValueError, lambda: draw_trial(**OK, rng=0).y(-1.0, 0.1)),
    _bad("sigma", ValueError, lambda: draw_trial(**OK, rng=0).y(1.0, math.inf)),
    _bad("theta_scale", ValueError, lambda: draw_trial(**OK, rng=0).theta_star(1.0, "unit")),
    _bad("R", ValueError, lambda: draw_trial(**OK, rng=0).mixture(math.nan, 0.1)),
    _bad("cells", ValueError, lambda: draw_trial(**OK, rng=0).panel([])),
    _bad("cells[1]", ValueError, lambda: draw_trial(**OK, rng=0).panel([(1.0, 0.1), (1.0,)])),
    _bad("cells[0] R", ValueError, lambda: draw_trial(**OK, rng=0).panel([(-1.0, 0.1)])),
    _bad("cells[0] sigma", ValueError, lambda: draw_trial(**OK, rng=0).panel([(1.0, -0.1)])),
    _bad("theta_scale", ValueError, lambda: draw_trial(**OK, rng=0).panel([(1.0, 0.1)], "x")),
    _bad("n_runs", ValueError, lambda: init_bernoulli(0, 2, 3)),
    _bad("k", ValueError, lambda: init_bernoulli(1, 0, 3)),
    _bad("d", ValueError, lambda: init_bernoulli(1, 2, 0)),
    _bad("dtype", ValueError, lambda: init_bernoulli(1, 2, 3, dtype=np.int64)),
    _bad("rng", TypeError, lambda: init_bernoulli(1, 2, 3, rng=1.5)),
    _bad("theta_star", ValueError, lambda: init_close(np.zeros(3), 0.25, 1)),
    _bad("theta_star", ValueError, lambda: init_close(np.ones((1, 3)), 0.25, 1)),
    _bad("theta_star", ValueError, lambda: init_close(np.ones((2, 3)), 0.25, 1)),
    _bad("theta_star", ValueError, lambda: init_close([[0.0, math.nan], [1.0, 1.0]], 0.25, 1)),
    _bad("theta_star", TypeError, lambda: init_close([["a", "b"], ["c", "d"]], 0.25, 1)),
    _bad("alpha0", ValueError, lambda: init_close(np.eye(2), 0.0, 1)),
    _bad("alpha0", ValueError, lambda: init_close(np.eye(2), 0.6, 1)),
    _bad("alpha0", ValueError, lambda: init_close(np.eye(2), math.nan, 1)),
    _bad("n_runs", ValueError, lambda: init_close(np.eye(2), 0.25, 0)),
    _bad("direction", ValueError, lambda: init_close(np.eye(2), 0.25, 1, direction="worst")),
    _bad("dtype", ValueError, lambda: init_close(np.eye(2), 0.25, 1, dtype=np.int8)),
    _bad("R", ValueError, lambda: make_logistic_mixture(**OK, R=-1.0)),
    _bad("m", ValueError, lambda: make_logistic_mixture(5, 3, 2, 2, R=1.0)),
    _bad("k", ValueError, lambda: make_logistic_mixture(4, 3, 2, 9, R=1.0)),
    _bad("dtype", ValueError, lambda: make_logistic_mixture(**OK, R=1.0, dtype=np.complex128)),
    _bad("df", ValueError, lambda: make_student_t_mixture(**OK, R=1.0, sigma=0.1, df=2.0)),
    _bad("df", ValueError, lambda: make_student_t_mixture(**OK, R=1.0, sigma=0.1, df=1.0)),
    _bad("df", ValueError, lambda: make_student_t_mixture(**OK, R=1.0, sigma=0.1, df=math.inf)),
    _bad("sigma", ValueError, lambda: make_student_t_mixture(**OK, R=1.0, sigma=-0.1)),
    _bad("theta_scale", ValueError,
         lambda: make_student_t_mixture(**OK, R=1.0, sigma=0.1, theta_scale="max")),
    _bad("y", ValueError, lambda: Mixture(np.zeros((2, 3, 4)), np.zeros((2, 2)), np.zeros((1, 4)),
                                          np.zeros(2, dtype=int), 1.0, 0.1, "code")),
    _bad("labels", ValueError, lambda: Mixture(np.zeros((2, 3, 4)), np.zeros((2, 3)),
                                               np.zeros((1, 4)), np.array([0, 1]), 1.0, 0.1,
                                               "code")),
    _bad("z", ValueError, lambda: Trial(np.zeros((2, 3, 4)), np.ones((1, 4)), np.zeros((3, 2)),
                                        np.zeros(2, dtype=int))),
    _bad("labels", ValueError, lambda: draw_rows(np.array([0, 2]), np.eye(2), 3, sigma=0.1)),
    _bad("labels", ValueError, lambda: draw_rows(np.array([0.0, 1.0]), np.eye(2), 3, sigma=0.1)),
    _bad("labels", ValueError, lambda: draw_rows(np.zeros(0, dtype=int), np.eye(2), 3, sigma=0.1)),
    _bad("theta_star", ValueError, lambda: draw_rows(np.array([0]), np.ones(2), 3, sigma=0.1)),
    _bad("theta_star", ValueError,
         lambda: draw_rows(np.array([0]), [[math.nan, 1.0]], 3, sigma=0.1)),
    _bad("n", ValueError, lambda: draw_rows(np.array([0]), np.eye(2), 0, sigma=0.1)),
    _bad("loss", ValueError, lambda: draw_rows(np.array([0]), np.eye(2), 3, loss="hinge")),
    _bad("sigma", ValueError, lambda: draw_rows(np.array([0]), np.eye(2), 3)),
    _bad("sigma", ValueError, lambda: draw_rows(np.array([0]), np.eye(2), 3, sigma=-1.0)),
    _bad("sigma", ValueError,
         lambda: draw_rows(np.array([0]), np.eye(2), 3, loss="logistic", sigma=1.0)),
    _bad("df", ValueError,
         lambda: draw_rows(np.array([0]), np.eye(2), 3, loss="logistic", df=5.0)),
    _bad("df", ValueError, lambda: draw_rows(np.array([0]), np.eye(2), 3, sigma=1.0, df=2.0)),
    _bad("dtype", ValueError,
         lambda: draw_rows(np.array([0]), np.eye(2), 3, sigma=1.0, dtype=np.int32)),
    _bad("summation", ValueError,
         lambda: draw_rows(np.array([0]), np.eye(2), 3, sigma=1.0, summation="pairwise")),
    _bad("rng", TypeError, lambda: draw_rows(np.array([0]), np.eye(2), 3, sigma=1.0, rng=1.5)),
    _bad("sigma", ValueError, lambda: draw_responses(np.zeros(3), "huber")),
]


@pytest.mark.parametrize("name, exc, call", BAD_INPUTS)
def test_bad_inputs_raise_naming_the_parameter(name, exc, call):
    # every message starts with the parameter's name
    with pytest.raises(exc, match=rf"^{re.escape(name)}(?!\w)") as info:
        call()
    msg = str(info.value)
    assert len(msg) > len(name) + 10  # says more than the name: the rule and what it got


def test_error_messages_state_range_and_value():
    with pytest.raises(ValueError, match=r"^R must be a finite number in \[0\.0, inf\), got -0\.5"):
        make_mixture(**OK, R=-0.5, sigma=0.1)
    with pytest.raises(ValueError, match=r"^alpha0 must be a finite number in \(0\.0, 0\.5\], got 0\.7"):
        init_close(np.eye(2), 0.7, 1)
    with pytest.raises(ValueError, match=r"^df must be a finite number in \(2\.0, inf\), got 2\.0"):
        make_student_t_mixture(**OK, R=1.0, sigma=0.1, df=2)
    with pytest.raises(ValueError, match=r"^k must be in \[1, m\] = \[1, 4\].*got 5"):
        draw_trial(4, 3, 2, 5)
