"""Li et al.'s Synthetic(alpha, beta) generator with devices in clusters
(:func:`mixlinreg.synthetic.make_fedprox_synthetic`): shapes and padding, the distributions'
moments at large sizes, the labels, reproducibility from a seed, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mixlinreg.synthetic import CLUSTER_CHOICES, device_accuracy, make_fedprox_synthetic


def _rows(data, i):
    return data.X[i, :data.n_samples[i]], data.y[i, :data.n_samples[i]]


@pytest.mark.parametrize("choice", CLUSTER_CHOICES)
def test_shapes_padding_bias_and_labels(choice):
    data = make_fedprox_synthetic(m=10, L=3, d=7, n_classes=5, clusters=choice, size_cap=150,
                                  rng=1)
    m, n_max, D = data.X.shape
    assert (m, D) == (10, 8) and data.y.shape == (10, n_max)
    assert data.theta_star.shape == (3, 8, 5) and data.means.shape == (10, 7)
    assert n_max == data.n_samples.max() and data.X_test.shape[1] == data.n_test.max()
    # sizes: >= 50 (the +50), at most the cap, the split 90/10 as int((1 - f) n)
    total = data.n_samples + data.n_test
    assert total.min() >= 50 and total.max() <= 150
    np.testing.assert_array_equal(data.n_samples, (0.9 * total).astype(int))
    # clusters of sizes m // L or one more, every label used
    assert sorted(np.bincount(data.labels).tolist()) == [3, 3, 4]
    for i in range(m):
        X, y = _rows(data, i)
        assert np.all(X[:, -1] == 1.0)  # bias column last
        np.testing.assert_array_equal(y, np.argmax(X @ data.theta_star[data.labels[i]], axis=1))
        assert np.all(data.X[i, data.n_samples[i]:] == 0) and np.all(data.y[i, data.n_samples[i]:] == 0)
    # the true models classify every test row right
    acc, pooled = device_accuracy(data.theta_star[data.labels], data.X_test, data.y_test,
                                  data.n_test)
    assert pooled == 1.0 and np.all(acc == 1.0)


def test_shared_clusters_share_the_feature_mean_model_clusters_do_not():
    sh = make_fedprox_synthetic(m=8, L=2, clusters="shared", size_cap=60, rng=3)
    for l in range(2):
        means = sh.means[sh.labels == l]
        assert np.all(means == means[0])
    mo = make_fedprox_synthetic(m=8, L=2, clusters="model", size_cap=60, rng=3)
    assert len({tuple(v) for v in mo.means}) == 8


def test_moments_at_large_sizes():
    # features: x - v_k has variance j^-1.2 in coordinate j; model entries: W_l - u_l ~ N(0, 1),
    # u ~ N(0, alpha^2); v_k - B_k ~ N(0, 1), B_k ~ N(0, beta^2)
    d = 6
    data = make_fedprox_synthetic(m=400, L=400, d=d, alpha=2.0, beta=0.5, size_mean=5.0,
                                  size_sd=0.1, size_cap=400, rng=7)
    resid = np.concatenate([data.X[i, :data.n_samples[i], :d] - data.means[i]
                            for i in range(data.m)])
    np.testing.assert_allclose(resid.var(axis=0), np.arange(1, d + 1) ** -1.2, rtol=0.03)
    np.testing.assert_allclose(resid.mean(axis=0), 0.0, atol=0.01)
    W = data.theta_star[:, :d, :]  # (L, d, C): W_l^T; each cluster's entries share u_l
    u = W.mean(axis=(1, 2))
    assert abs(np.std(u) - 2.0) < 0.2  # u_l ~ N(0, alpha^2), 400 clusters
    within = (W - u[:, None, None]).std()
    assert abs(within - 1.0) < 0.03
    B = data.means.mean(axis=1)  # v_k = B_k + N(0, 1): mean over d has variance beta^2 + 1/d
    assert abs(np.var(B) - (0.25 + 1.0 / d)) < 0.05


def test_sizes_follow_lognormal_plus_50_without_a_cap():
    data = make_fedprox_synthetic(m=4000, L=4, d=1, size_mean=1.0, size_sd=0.5, rng=11)
    total = data.n_samples + data.n_test
    # int(exp(N(1, 0.25))) + 50: the median of exp is e = 2.7, int gives 2
    assert np.median(total) == 52
    assert abs(np.mean(np.log(total - 50 + 0.5)) - 1.0) < 0.15


def test_reproducible_from_a_seed_and_from_a_generator():
    a = make_fedprox_synthetic(m=6, L=2, size_cap=80, rng=5)
    b = make_fedprox_synthetic(m=6, L=2, size_cap=80, rng=np.random.default_rng(5))
    for f in ("X", "y", "n_samples", "X_test", "y_test", "labels", "theta_star"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    c = make_fedprox_synthetic(m=6, L=2, size_cap=80, rng=6)
    assert not np.array_equal(a.theta_star, c.theta_star)


@pytest.mark.parametrize("kw, match", [
    (dict(m=3, L=4), "L must be in"),
    (dict(L=0), "L must be"),
    (dict(m=0), "m must be"),
    (dict(alpha=-0.1), "alpha"),
    (dict(beta=-1.0), "beta"),
    (dict(d=0), "d must be"),
    (dict(n_classes=1), "n_classes"),
    (dict(clusters="random"), "clusters"),
    (dict(test_fraction=1.0), "test_fraction"),
    (dict(test_fraction=0.0), "test_fraction"),
    (dict(size_sd=-1.0), "size_sd"),
    (dict(size_min=1), "size_min"),
    (dict(size_cap=10), "size_cap"),
])
def test_bad_input_names_the_parameter(kw, match):
    with pytest.raises(ValueError, match=match):
        make_fedprox_synthetic(**{"m": 8, "L": 2, **kw})


def test_device_accuracy_checks_its_input():
    X = np.ones((2, 3, 1))
    y = np.zeros((2, 3))
    with pytest.raises(ValueError, match="models"):
        device_accuracy(np.ones((3, 1, 2)), X, y, [1, 1])
    with pytest.raises(ValueError, match="n_rows"):
        device_accuracy(np.ones((2, 1, 2)), X, y, [0, 4])


@pytest.mark.parametrize("kw, names", [
    (dict(m=100, L=4, size_mean=30.0), "size_mean, size_sd or m, or set size_cap"),
    (dict(m=100000, d=2000), "m, d or size_min"),  # refused before the first draw
])
def test_a_draw_too_large_for_memory_is_refused_by_its_parameters_before_it_draws(kw, names):
    from mixlinreg._memory import UnitMemoryError

    with pytest.raises(UnitMemoryError, match="make_fedprox_synthetic") as err:
        make_fedprox_synthetic(**kw, rng=0)
    assert names in str(err.value) and f"m = {kw['m']}" in str(err.value)


def test_sizing_does_not_change_the_draws():
    a = make_fedprox_synthetic(m=20, L=4, rng=3)
    assert a.X.sum() == pytest.approx(-152916.52175837912, rel=1e-12)  # the value before sizing


def test_one_cluster_choice_is_model_with_one_rule():
    """clusters="one" (issue 37's control): the draws of "model" with cluster 1's W, b for every
    cluster; "model" itself unchanged."""
    mo = make_fedprox_synthetic(m=8, L=2, clusters="model", size_cap=60, rng=5)
    one = make_fedprox_synthetic(m=8, L=2, clusters="one", size_cap=60, rng=5)
    np.testing.assert_array_equal(one.theta_star[1], one.theta_star[0])
    np.testing.assert_array_equal(one.theta_star[0], mo.theta_star[0])
    np.testing.assert_array_equal(one.X, mo.X)
    np.testing.assert_array_equal(one.labels, mo.labels)
    assert not np.array_equal(mo.theta_star[1], mo.theta_star[0])
