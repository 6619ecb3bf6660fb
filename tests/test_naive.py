"""Make the slow reference (tests/naive.py) trustworthy on its own, with hand-computed numbers and
facts that follow directly from the specification."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from naive import (naive_argmin, naive_dloss, naive_F, naive_grad, naive_ifca, naive_loss,
                   naive_loss_table)

# Hand-computed numbers are exact decimals or simple closed forms: float64 rounding only.
RTOL_EXACT = 1e-14


# ---------------------------------------------------------------------------------------------
# per-sample losses
# ---------------------------------------------------------------------------------------------
def test_loss_values_by_hand():
    z = np.array([3.0, 0.0, 2.0])
    y = np.array([1.0, 1.0, 0.0])
    assert_allclose(naive_loss(z, y, "squared"), [4.0, 1.0, 4.0], rtol=RTOL_EXACT)
    assert_allclose(naive_loss(z, y, "logistic"),
                    [math.log1p(math.exp(3.0)) - 3.0, math.log(2.0), math.log1p(math.exp(2.0))],
                    rtol=RTOL_EXACT)
    # huber with delta = 1: r = y - z
    z = np.array([0.0, 0.0, 0.0, 0.0])
    y = np.array([0.5, 3.0, -3.0, 1.0])
    assert_allclose(naive_loss(z, y, "huber", 1.0), [0.125, 2.5, 2.5, 0.5], rtol=RTOL_EXACT)
    assert_allclose(naive_loss(z, y, "huber", 2.0), [0.125, 4.0, 4.0, 0.5], rtol=RTOL_EXACT)


def test_logistic_loss_is_stable_for_large_z():
    # log(1 + exp(z)) - y z with z = 1000: exp overflows but the loss is 1000 (y = 0) or 0 (y = 1)
    assert_allclose(naive_loss(np.array([1000.0]), np.array([0.0]), "logistic"), [1000.0])
    assert_allclose(naive_loss(np.array([1000.0]), np.array([1.0]), "logistic"), [0.0], atol=0)
    assert_allclose(naive_dloss(np.array([-1000.0, 1000.0]), np.array([0.0, 0.0]), "logistic"),
                    [0.0, 1.0])


def test_dloss_values_by_hand():
    z = np.array([3.0, 0.0])
    y = np.array([1.0, 1.0])
    assert_allclose(naive_dloss(z, y, "squared"), [4.0, -2.0], rtol=RTOL_EXACT)
    assert_allclose(naive_dloss(z, y, "logistic"),
                    [1 / (1 + math.exp(-3.0)) - 1.0, -0.5], rtol=RTOL_EXACT)
    z = np.zeros(4)
    y = np.array([0.5, 3.0, -3.0, -0.25])
    assert_allclose(naive_dloss(z, y, "huber", 1.0), [-0.5, -1.0, 1.0, 0.25], rtol=RTOL_EXACT)


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
def test_dloss_matches_finite_differences(loss):
    rng = np.random.default_rng(0)
    z = rng.normal(scale=2.0, size=50)
    y = rng.integers(0, 2, size=50).astype(float) if loss == "logistic" else rng.normal(size=50)
    h = 1e-6
    fd = (naive_loss(z + h, y, loss, 0.7) - naive_loss(z - h, y, loss, 0.7)) / (2 * h)
    # central differences: O(h^2) truncation + O(eps / h) rounding ~ 1e-9
    assert_allclose(naive_dloss(z, y, loss, 0.7), fd, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# machine loss F and its gradient
# ---------------------------------------------------------------------------------------------
def test_F_and_grad_d1_by_hand():
    X = np.array([[1.0], [2.0]])
    # squared, theta = 0, y = [1, 3]: F = (1 + 9)/2 = 5; grad = (1/2)(2(0-1)1 + 2(0-3)2) = -7
    y = np.array([1.0, 3.0])
    assert_allclose(naive_F(np.array([0.0]), X, y, "squared"), 5.0, rtol=RTOL_EXACT)
    assert_allclose(naive_grad(np.array([0.0]), X, y, "squared"), [-7.0], rtol=RTOL_EXACT)
    # squared with l2 = 0.5 at theta = 1: F = (0 + 1)/2 + 0.25 = 0.75, grad = (0 - 4)/2 + 0.5 = -1.5
    assert_allclose(naive_F(np.array([1.0]), X, y, "squared", l2=0.5), 0.75, rtol=RTOL_EXACT)
    assert_allclose(naive_grad(np.array([1.0]), X, y, "squared", l2=0.5), [-1.5], rtol=RTOL_EXACT)
    # logistic, theta = 0, y = [1, 0]: F = log 2; ell' = [-0.5, 0.5]; grad = (-0.5 + 1)/2 = 0.25
    y = np.array([1.0, 0.0])
    assert_allclose(naive_F(np.array([0.0]), X, y, "logistic"), math.log(2), rtol=RTOL_EXACT)
    assert_allclose(naive_grad(np.array([0.0]), X, y, "logistic"), [0.25], rtol=RTOL_EXACT)
    # huber delta = 1, theta = 0, y = [0.5, 3]: F = (0.125 + 2.5)/2; ell' = [-0.5, -1];
    # grad = (-0.5 - 2)/2 = -1.25
    y = np.array([0.5, 3.0])
    assert_allclose(naive_F(np.array([0.0]), X, y, "huber", delta=1.0), 1.3125, rtol=RTOL_EXACT)
    assert_allclose(naive_grad(np.array([0.0]), X, y, "huber", delta=1.0), [-1.25],
                    rtol=RTOL_EXACT)


def test_F_and_grad_d2_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, 2.0, 0.0])
    theta = np.array([1.0, 1.0])
    # z = [1, 1, 2], z - y = [0, -1, 2]: F = 5/3, grad = (2/3)(-[0, 1] + 2[1, 1]) = [4/3, 2/3]
    assert_allclose(naive_F(theta, X, y, "squared"), 5 / 3, rtol=RTOL_EXACT)
    assert_allclose(naive_grad(theta, X, y, "squared"), [4 / 3, 2 / 3], rtol=RTOL_EXACT)


def test_one_gradient_step_of_each_loss_by_hand():
    # one machine, n = 2, d = 1, k = 1, theta0 = 0, lr = 0.1: theta1 = -0.1 * grad
    X = np.array([[[1.0], [2.0]]])
    cases = {"squared": ([1.0, 3.0], 0.7), "logistic": ([1.0, 0.0], -0.025),
             "huber": ([0.5, 3.0], 0.125)}
    for loss, (y, expect) in cases.items():
        res = naive_ifca(X, np.array([y]), np.zeros((1, 1)), 0.1, n_iter=1, loss=loss)
        assert_allclose(res["theta"], [[[expect]]], rtol=RTOL_EXACT, err_msg=loss)
        assert res["n_iter"][0] == 1 and not res["diverged"][0]


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_grad_matches_finite_differences_of_F(loss, l2, make_problem):
    X, y, _, _ = make_problem(1, 2, 15, 4, 1, loss)
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta = rng.normal(size=4)
        g = naive_grad(theta, X[0], y[0], loss, l2, 0.7)
        h = 1e-6
        fd = np.array([(naive_F(theta + h * e, X[0], y[0], loss, l2, 0.7)
                        - naive_F(theta - h * e, X[0], y[0], loss, l2, 0.7)) / (2 * h)
                       for e in np.eye(4)])
        # truncation O(h^2) plus rounding O(eps |F| / h) ~ 1e-9
        assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_F_float32_stays_float32():
    X = np.ones((3, 2), dtype=np.float32)
    y = np.ones(3, dtype=np.float32)
    theta = np.ones(2, dtype=np.float32)
    for loss in ("squared", "logistic", "huber"):
        assert naive_F(theta, X, y, loss, 0.1).dtype == np.float32
        assert naive_grad(theta, X, y, loss, 0.1).dtype == np.float32


# ---------------------------------------------------------------------------------------------
# argmin rule
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("losses, expect", [
    ([1.0, 1.0, 0.5, 0.5], 2),          # ties: lowest index
    ([2.0, 2.0], 0),
    ([np.nan, 2.0, 1.0], 2),            # NaN never wins over a finite value
    ([np.nan, 1.0, 1.0], 1),
    ([1.0, np.nan, 0.5], 2),
    ([3.0, np.nan, 3.0], 0),
    ([np.nan, np.nan, np.nan], 0),      # all NaN -> 0
    ([2.0, 1.0, np.nan, 1.0], 1),
    ([np.inf, np.nan], 0),
    ([np.nan, np.inf], 1),
    ([np.inf, np.inf, 5.0], 2),
])
def test_argmin_ties_and_nan(losses, expect):
    assert naive_argmin(np.array(losses)) == expect


def test_identical_models_get_identical_losses():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 5, 3))
    y = rng.normal(size=(4, 5))
    theta = rng.normal(size=(3, 3))
    theta[2] = theta[0]
    L = naive_loss_table(theta, X, y, slice(0, 5), "squared", 0.0, 1.0)
    assert_array_equal(L[:, 2], L[:, 0])


# ---------------------------------------------------------------------------------------------
# the whole algorithm
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
def test_k1_is_plain_gradient_descent(loss, make_problem, global_random_seed):
    X, y, _, _ = make_problem(global_random_seed, 5, 10, 3, 2, loss)
    m = X.shape[0]
    lr, T, l2 = 0.1, 5, 0.05
    theta = np.random.default_rng(global_random_seed).normal(size=3)
    res = naive_ifca(X, y, theta[None], lr, n_iter=T, loss=loss, l2=l2, huber_delta=0.7)
    res_model = naive_ifca(X, y, theta[None], lr, n_iter=T, loss=loss, l2=l2, huber_delta=0.7,
                           averaging="model", local_steps=1)
    for _ in range(T):
        g = sum(naive_grad(theta, X[i], y[i], loss, l2, 0.7) for i in range(m)) / m
        theta = theta - lr * g
    # same operations in a different grouping: float64 rounding only
    assert_allclose(res["theta"][0, 0], theta, rtol=1e-12)
    assert_allclose(res_model["theta"][0, 0], theta, rtol=1e-12)
    assert_array_equal(res["labels"], 0)
    assert_array_equal(res["trace_labels"], 0)


def test_resample_uses_the_row_blocks():
    # n = 9, n_iter = 2 -> n' = 9 // 4 = 2: E_0 = rows 0-1, G_0 = 2-3, E_1 = 4-5, G_1 = 6-7;
    # row 8 is never used during the iterations.
    rng = np.random.default_rng(5)
    m, n, d = 3, 9, 2
    X = rng.normal(size=(m, n, d))
    y = rng.normal(size=(m, n))
    theta0 = rng.normal(size=(1, d))
    lr = 0.1
    res = naive_ifca(X, y, theta0, lr, n_iter=2, resample=True)
    theta = theta0[0].copy()
    losses = []
    for E, G in [(slice(0, 2), slice(2, 4)), (slice(4, 6), slice(6, 8))]:
        losses.append(np.mean([naive_F(theta, X[i, E], y[i, E], "squared") for i in range(m)]))
        theta = theta - lr / m * sum(naive_grad(theta, X[i, G], y[i, G], "squared")
                                     for i in range(m))
    assert_allclose(res["theta"][0, 0], theta, rtol=1e-13)
    assert_allclose(res["trace_loss"][:2, 0], losses, rtol=1e-13)
    # final evaluation uses ALL rows
    final = np.mean([naive_F(theta, X[i], y[i], "squared") for i in range(m)])
    assert_allclose(res["loss"][0], final, rtol=1e-13)
    assert_allclose(res["trace_loss"][2, 0], final, rtol=1e-13)
    # rows outside the blocks do not matter for theta
    y2 = y.copy()
    y2[:, 8] = 1e6
    res2 = naive_ifca(X, y2, theta0, lr, n_iter=2, resample=True)
    assert_array_equal(res2["theta"], res["theta"])
    with pytest.raises(ValueError):
        naive_ifca(X, y, theta0, lr, n_iter=5, resample=True)


def _separated_problem(rng, k, d=3, n=12):
    """One machine per cluster, clusters far apart, init close to the truth so that machine j
    picks model j."""
    rng = np.random.default_rng(rng)
    theta_star = 10.0 * np.eye(k, d)
    X = rng.normal(size=(k, n, d))
    y = np.einsum("ind,id->in", X, theta_star) + 0.1 * rng.normal(size=(k, n))
    init = theta_star + 0.3 * rng.normal(size=(k, d))
    return X, y, init, theta_star


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_model_averaging_one_machine_per_cluster_is_a_gradient_step(loss, global_random_seed):
    k = 3
    X, y, init, _ = _separated_problem(global_random_seed, k)
    lr = 0.05
    res = naive_ifca(X, y, init, lr, n_iter=1, loss=loss, averaging="model", local_steps=1)
    assert_array_equal(res["trace_labels"][0, 0], np.arange(k))
    expect = np.array([init[j] - lr * naive_grad(init[j], X[j], y[j], loss) for j in range(k)])
    assert_allclose(res["theta"][0], expect, rtol=1e-13)
    # and gradient averaging with step lr * m gives the same
    res_g = naive_ifca(X, y, init, lr * k, n_iter=1, loss=loss, averaging="gradient")
    assert_allclose(res_g["theta"][0], expect, rtol=1e-13)


def test_local_steps_are_sequential_gradient_steps():
    k = 2
    X, y, init, _ = _separated_problem(0, k)
    lr = 0.05
    res = naive_ifca(X, y, init, lr, n_iter=1, averaging="model", local_steps=3)
    for j in range(k):
        th = init[j].copy()
        for _ in range(3):
            th = th - lr * naive_grad(th, X[j], y[j], "squared")
        assert_allclose(res["theta"][0, j], th, rtol=1e-13)


@pytest.mark.parametrize("averaging", ["gradient", "model"])
def test_unchosen_model_keeps_its_value(averaging, make_problem, global_random_seed):
    X, y, _, _ = make_problem(global_random_seed, 6, 10, 3, 2, "squared")
    rng = np.random.default_rng(global_random_seed)
    init = np.stack([rng.normal(size=3), rng.normal(size=3), np.full(3, 1e3)])
    res = naive_ifca(X, y, init, 0.05, n_iter=4, averaging=averaging)
    assert not np.any(res["trace_labels"] == 2)
    assert_array_equal(res["theta"][0, 2], init[2])


def test_identical_models_tie_to_lowest_index(make_problem):
    X, y, _, _ = make_problem(0, 6, 10, 3, 2, "squared")
    init = np.zeros((3, 3))
    init[1] = 0.5
    init[2] = 0.5  # models 1 and 2 identical and (for most machines) better than model 0
    res = naive_ifca(X, y, init, 0.05, n_iter=1)
    a0 = res["trace_labels"][0, 0]
    assert not np.any(a0 == 2)
    # model 2 was chosen by nobody: unchanged
    assert_array_equal(res["theta"][0, 2], init[2])


def test_no_participation_keeps_theta_but_still_assigns_everyone(make_problem):
    X, y, _, _ = make_problem(0, 6, 10, 3, 2, "squared")
    init = np.random.default_rng(0).normal(size=(2, 2, 3))
    P = np.zeros((3, 2, 6), dtype=bool)
    for averaging in ("gradient", "model"):
        res = naive_ifca(X, y, init, 0.1, n_iter=3, averaging=averaging, participation_mask=P)
        assert_array_equal(res["theta"], init)
        assert res["trace_loss"].shape == (4, 2) and np.all(np.isfinite(res["trace_loss"]))
    # only machine 0 participates in run 0: gradient averaging divides by m anyway
    P = np.zeros((1, 1, 6), dtype=bool)
    P[0, 0, 0] = True
    res = naive_ifca(X, y, init[0], 0.1, n_iter=1, participation_mask=P)
    j = res["trace_labels"][0, 0, 0]
    expect = init[0].copy()
    expect[j] -= 0.1 / 6 * naive_grad(init[0, j], X[0], y[0], "squared")
    assert_allclose(res["theta"][0], expect, rtol=1e-14)


def test_divergence_threshold_freezes_and_fills_trace(make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    init = np.random.default_rng(0).normal(size=(2, 2, 3))
    lr = np.array([1e3, 0.05])
    T = 10
    res = naive_ifca(X, y, init, lr, n_iter=T, theta_star=ts)
    assert res["diverged"].tolist() == [True, False]
    n0 = res["n_iter"][0]
    assert 1 <= n0 < T and res["n_iter"][1] == T
    assert np.max(np.abs(res["theta"][0])) > 1e10
    # frozen entries repeat the final evaluation
    for t in range(n0, T + 1):
        assert_array_equal(res["trace_labels"][t, 0], res["labels"][0])
        assert res["trace_loss"][t, 0] == res["loss"][0]
        assert_array_equal(res["trace_dist"][t, 0], res["trace_dist"][T, 0])
    # the run that diverged stopped exactly where the threshold was crossed
    res_short = naive_ifca(X, y, init[0], lr[0], n_iter=n0 - 1) if n0 > 1 else None
    if res_short is not None:
        assert np.max(np.abs(res_short["theta"])) <= 1e10
    # the other run equals its solo run
    solo = naive_ifca(X, y, init[1], lr[1], n_iter=T, theta_star=ts)
    assert_array_equal(solo["theta"][0], res["theta"][1])
    assert_array_equal(solo["trace_loss"][:, 0], res["trace_loss"][:, 1])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_non_finite_loss_freezes_at_current_theta():
    # threshold 1e300: theta stays finite while the squared loss overflows -> step 2 divergence
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 6, 2))
    y = rng.normal(size=(3, 6))
    res = naive_ifca(X, y, np.ones((1, 2)), 1e8, n_iter=40, diverge_threshold=1e300)
    assert res["diverged"][0]
    n_done = res["n_iter"][0]
    assert np.all(np.isfinite(res["theta"])) and np.max(np.abs(res["theta"])) <= 1e300
    assert not np.isfinite(res["loss"][0])
    # theta is theta^(n_done): the state a run of n_done iterations reaches
    short = naive_ifca(X, y, np.ones((1, 2)), 1e8, n_iter=n_done, diverge_threshold=1e300)
    assert_array_equal(short["theta"], res["theta"])
    assert not short["diverged"][0]


def test_early_stop_matches_full_run(make_problem):
    X, y, ts, _ = make_problem(2, 8, 20, 3, 2, "squared", sep=3.0)
    init = ts + 0.3
    full = naive_ifca(X, y, init, 0.3, n_iter=150)
    es = naive_ifca(X, y, init, 0.3, n_iter=150, early_stop=True, tol=1e-8)
    assert es["converged"][0] and not full["converged"][0]
    n_done = es["n_iter"][0]
    assert 2 <= n_done < 150
    # the early-stopped theta is exactly theta^(n_done) of the full run
    part = naive_ifca(X, y, init, 0.3, n_iter=n_done)
    assert_array_equal(part["theta"], es["theta"])
    assert_array_equal(es["labels"], full["labels"])
    assert_allclose(es["theta"], full["theta"], rtol=0, atol=1e-6 * np.abs(full["theta"]).max())


def test_y_variants_equal_separate_runs(make_problem):
    X, y, ts, _ = make_problem(4, 6, 10, 3, 2, "squared", n_variants=3)
    init = np.random.default_rng(4).normal(size=(4, 2, 3))
    y_index = np.array([2, 0, 0, 1])
    res = naive_ifca(X, y, init, 0.1, n_iter=3, y_index=y_index, theta_star=ts)
    for r, c in enumerate(y_index):
        solo = naive_ifca(X, y[c], init[r], 0.1, n_iter=3, theta_star=ts[c])
        assert_array_equal(solo["theta"][0], res["theta"][r])
        assert_array_equal(solo["trace_dist"][:, 0], res["trace_dist"][:, r])


def test_float32_reference(make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    init = np.random.default_rng(0).normal(size=(2, 2, 3))
    r64 = naive_ifca(X, y, init, 0.1, n_iter=5, theta_star=ts)
    r32 = naive_ifca(X.astype(np.float32), y.astype(np.float32), init.astype(np.float32), 0.1,
                     n_iter=5, theta_star=ts, dtype=np.float32)
    for key in ("theta", "loss", "trace_loss", "trace_dist"):
        assert r32[key].dtype == np.float32, key
        # float32 inputs and arithmetic: relative error ~ a few eps32 per operation
        assert_allclose(r32[key], r64[key], rtol=1e-4, atol=1e-5)
    assert_array_equal(r32["trace_labels"], r64["trace_labels"])


def test_trace_dist_and_loss_at_start(make_problem):
    X, y, ts, _ = make_problem(0, 4, 8, 2, 2, "logistic")
    init = np.random.default_rng(1).normal(size=(2, 2))
    res = naive_ifca(X, y, init, 0.1, n_iter=2, loss="logistic", l2=0.1, theta_star=ts)
    for j in range(2):
        for l in range(2):
            assert_allclose(res["trace_dist"][0, 0, j, l], np.linalg.norm(init[j] - ts[l]),
                            rtol=1e-14)
    L0 = np.array([[naive_F(init[j], X[i], y[i], "logistic", 0.1) for j in range(2)]
                   for i in range(4)])
    assert_allclose(res["trace_loss"][0, 0], L0.min(axis=1).mean(), rtol=1e-14)
    assert_array_equal(res["trace_labels"][0, 0], L0.argmin(axis=1))


# ---------------------------------------------------------------------------------------------
# the reference computes its losses on its own (issue 25)
# ---------------------------------------------------------------------------------------------
def test_the_reference_imports_nothing_of_the_package_and_has_its_losses():
    """A loss bug in mixlinreg.losses must not reach the reference the kernel is compared with:
    tests/naive.py writes every loss from its formula and imports nothing of the package."""
    import ast
    from pathlib import Path

    import naive
    from mixlinreg.losses import LOSSES as PACKAGE_LOSSES

    tree = ast.parse(Path(naive.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(str(m).split(".")[0] == "mixlinreg" for m in imported), imported
    assert set(naive.LOSSES) == set(PACKAGE_LOSSES) | {"multinomial"}
    with pytest.raises(ValueError, match="unknown loss"):
        naive_loss(np.zeros(2), np.zeros(2), "hinge")


def test_multinomial_loss_by_hand():
    # logits [0, ln 3], class 1: logsumexp = ln 4, loss ln(4/3); softmax [1/4, 3/4] - e_1
    z = np.array([0.0, math.log(3.0)])
    assert_allclose(naive_loss(z, 1.0, "multinomial"), math.log(4 / 3), rtol=RTOL_EXACT)
    assert_allclose(naive_dloss(z, 1.0, "multinomial"), [0.25, -0.25], rtol=RTOL_EXACT)
    # large logits do not overflow
    assert_allclose(naive_loss(np.array([1000.0, 0.0]), 0.0, "multinomial"), 0.0, atol=1e-300)


@pytest.mark.parametrize("loss", ["squared", "logistic", "huber"])
def test_losses_against_the_package_on_a_grid(loss):
    """The two independent implementations agree (float64 rounding only) where both are finite."""
    from mixlinreg.losses import get

    z, y = np.meshgrid(np.linspace(-30, 30, 61), np.linspace(-3, 3, 13))
    if loss == "logistic":
        y = (y > 0).astype(float)
    pkg = get(loss)
    assert_allclose(naive_loss(z, y, loss, 0.7), pkg.value(z, y, 0.7), rtol=1e-13, atol=1e-13)
    assert_allclose(naive_dloss(z, y, loss, 0.7), pkg.derivative(z, y, 0.7), rtol=1e-13,
                    atol=1e-15)
