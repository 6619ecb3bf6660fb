"""The FPFC authors' synthetic data (:func:`mixlinreg.synthetic.make_fpfc_synthetic`): shapes and
padding, the clusters' layout, the label rule reproduced from the returned models, the sizes'
formula, the random 80/20 split, reproducibility from a seed, and bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from mixlinreg.synthetic import FedSynthetic, device_accuracy, make_fpfc_synthetic


def _rows(X, y, n, i):
    return X[i, :n[i]], y[i, :n[i]]


def test_shapes_padding_bias_and_layout():
    data = make_fpfc_synthetic(m=12, L=4, d=7, n_classes=5, size_cap=400, rng=1)
    assert isinstance(data, FedSynthetic)
    m, n_max, D = data.X.shape
    assert (m, D) == (12, 8) and data.y.shape == (12, n_max)
    assert data.theta_star.shape == (4, 8, 5) and data.means.shape == (12, 7)
    assert n_max == data.n_samples.max() and data.X_test.shape[1] == data.n_test.max()
    assert data.X_test.shape[2] == 8 and data.y_test.shape == data.X_test.shape[:2]
    # contiguous blocks: device i in cluster i // (m / L), the authors' i // 25 at m = 100
    np.testing.assert_array_equal(data.labels, np.arange(12) // 3)
    assert data.labels.dtype == np.int64
    np.testing.assert_array_equal(data.means, 0.5)
    for X, y, n in ((data.X, data.y, data.n_samples), (data.X_test, data.y_test, data.n_test)):
        for i in range(m):
            Xi, yi = _rows(X, y, n, i)
            assert np.all(Xi[:, -1] == 1.0)  # bias column last
            assert np.all((Xi[:, :-1] >= 0.0) & (Xi[:, :-1] < 1.0))  # U[0, 1)
            assert set(np.unique(yi)) <= set(range(5))
            assert np.all(X[i, n[i]:] == 0) and np.all(y[i, n[i]:] == 0)


def test_the_authors_layout_at_m_100():
    data = make_fpfc_synthetic(size_cap=60 * 5, d=3, rng=0)
    np.testing.assert_array_equal(data.labels, np.arange(100) // 25)
    assert data.X.shape[2] == 4 and data.theta_star.shape == (4, 4, 10)


def test_noiseless_labels_are_the_argmax_of_the_returned_rule():
    data = make_fpfc_synthetic(m=8, L=2, d=6, n_classes=4, logit_noise=0.0, size_cap=300, rng=2)
    for X, y, n in ((data.X, data.y, data.n_samples), (data.X_test, data.y_test, data.n_test)):
        for i in range(data.m):
            Xi, yi = _rows(X, y, n, i)
            np.testing.assert_array_equal(yi, np.argmax(Xi @ data.theta_star[data.labels[i]],
                                                        axis=1))
    acc, pooled = device_accuracy(data.theta_star[data.labels], data.X_test, data.y_test,
                                  data.n_test)
    assert pooled == 1.0


def test_logit_noise_has_the_stated_scale():
    """With noise sd s on each logit, a row's label leaves the noiseless argmax with a
    probability computed here by Monte Carlo from the returned rule; the count of such rows must
    be that sum within 5 standard deviations, at s = 0.5 (and s = 0.25 would be told apart)."""
    sd = 0.5
    data = make_fpfc_synthetic(m=4, L=2, d=5, n_classes=4, logit_noise=sd, size_mean=0.0,
                               size_sd=0.0, size_min=600, size_factor=1, rng=3)
    mc = np.random.default_rng(99)
    observed, expected, var, expected_quarter = 0, 0.0, 0.0, 0.0
    for i in range(data.m):
        Xi, yi = _rows(data.X, data.y, data.n_samples, i)
        z = Xi @ data.theta_star[data.labels[i]]
        clean = np.argmax(z, axis=1)
        observed += int(np.sum(yi != clean))
        for s, acc in ((sd, "p"), (sd / 2, "q")):
            flips = np.argmax(z[:, None, :] + s * mc.standard_normal((z.shape[0], 2000, 4)),
                              axis=2) != clean[:, None]
            p = flips.mean(axis=1)
            if acc == "p":
                expected += p.sum()
                var += np.sum(p * (1 - p))
            else:
                expected_quarter += p.sum()
    assert 20 < expected  # the check has power: flips happen at this size
    assert abs(observed - expected) < 5 * np.sqrt(var) + 2
    assert abs(observed - expected_quarter) > 5 * np.sqrt(var) + 2  # a halved sd is caught


def test_sizes_follow_the_authors_formula():
    # (int(exp(N(mean, sd^2))) + size_min) * size_factor, no cap by default
    data = make_fpfc_synthetic(m=4000, L=4, d=1, n_classes=2, size_mean=1.0, size_sd=0.5,
                               size_min=3, size_factor=5, rng=11)
    total = data.n_samples + data.n_test
    assert np.all(total % 5 == 0) and total.min() >= 15
    part = total // 5 - 3  # int(exp(N(1, 0.25))): median of exp is e = 2.7, int gives 2
    assert np.median(part) == 2
    assert abs(np.mean(np.log(part + 0.5)) - 1.0) < 0.15
    # the generator's own draws: the sizes are the 5th to (4 + m)th normal draws after the models
    gen = np.random.default_rng(11)
    for _ in range(4):
        gen.normal(0.0, 1.0)
        gen.normal(0.0, 1.0, size=(2, 1))
        gen.normal(0.0, 1.0, size=2)
    want = (np.exp(gen.normal(1.0, 0.5, size=4000)).astype(np.int64) + 3) * 5
    np.testing.assert_array_equal(total, want)


def test_size_cap_bounds_the_sizes():
    data = make_fpfc_synthetic(m=50, L=2, d=2, size_cap=260, rng=4)
    total = data.n_samples + data.n_test
    assert total.max() <= 260 and total.min() >= 250


def test_the_split_is_80_20_and_random():
    data = make_fpfc_synthetic(m=20, L=4, d=2, n_classes=3, size_cap=2000, rng=5)
    total = data.n_samples + data.n_test
    np.testing.assert_array_equal(data.n_test * 5, total)  # multiples of 5: exactly 20%
    np.testing.assert_array_equal(data.n_samples * 5, 4 * total)
    odd = make_fpfc_synthetic(m=6, L=2, d=2, size_mean=0.0, size_sd=0.0, size_min=13,
                              size_factor=1, test_fraction=0.3, rng=5)
    np.testing.assert_array_equal(odd.n_test, 4)  # round(0.3 * 14) = 4 of 14 rows
    # random, not by position: device 0's train and test rows are its 14 feature rows, re-drawn
    # here from the seed in the generator's order, in another order
    gen = np.random.default_rng(5)
    L, C, d = 2, 10, 2
    for _ in range(L):
        gen.normal(0.0, 1.0)
        gen.normal(0.0, 1.0, size=(C, d))
        gen.normal(0.0, 1.0, size=C)
    gen.normal(0.0, 0.0, size=6)
    x0 = gen.random((14, d))  # device 0's features in draw order
    train0 = odd.X[0, :odd.n_samples[0], :d]
    test0 = odd.X_test[0, :odd.n_test[0], :d]
    both = np.concatenate([test0, train0])
    np.testing.assert_array_equal(np.sort(both, axis=0), np.sort(x0, axis=0))
    assert not np.array_equal(both, x0) and not np.array_equal(train0, x0[:10])


def test_reproducible_from_a_seed_and_from_a_generator():
    kw = dict(m=6, L=2, d=4, size_cap=300)
    a = make_fpfc_synthetic(**kw, rng=5)
    b = make_fpfc_synthetic(**kw, rng=np.random.default_rng(5))
    c = make_fpfc_synthetic(**kw, rng=np.random.SeedSequence(5))
    for f in ("X", "y", "n_samples", "X_test", "y_test", "n_test", "labels", "theta_star"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        np.testing.assert_array_equal(getattr(a, f), getattr(c, f))
    d = make_fpfc_synthetic(**kw, rng=6)
    assert not np.array_equal(a.theta_star, d.theta_star)


def test_cluster_models_have_entries_around_a_common_mean():
    # mu_l ~ N(0, alpha^2); W_l, b_l entries N(mu_l, 1)
    data = make_fpfc_synthetic(m=400, L=400, d=30, alpha=2.0, size_cap=10, size_min=2,
                               size_factor=1, size_mean=0.0, size_sd=0.0, rng=7)
    mu = data.theta_star.mean(axis=(1, 2))
    assert abs(np.std(mu) - 2.0) < 0.2
    assert abs((data.theta_star - mu[:, None, None]).std() - 1.0) < 0.03


@pytest.mark.parametrize("kw, match", [
    (dict(m=3, L=4), "L must be in"),
    (dict(L=0), "L must be"),
    (dict(m=0), "m must be"),
    (dict(alpha=-0.1), "alpha"),
    (dict(d=0), "d must be"),
    (dict(n_classes=1), "n_classes"),
    (dict(logit_noise=-0.5), "logit_noise"),
    (dict(test_fraction=1.0), "test_fraction"),
    (dict(test_fraction=0.0), "test_fraction"),
    (dict(size_sd=-1.0), "size_sd"),
    (dict(size_min=0), "size_min"),
    (dict(size_factor=0), "size_factor"),
    (dict(size_min=1, size_factor=1), "size_min \\* size_factor"),
    (dict(size_cap=100), "size_cap"),
    (dict(size_mean=float("nan")), "size_mean"),
])
def test_bad_input_names_the_parameter(kw, match):
    with pytest.raises(ValueError, match=match):
        make_fpfc_synthetic(**{"m": 8, "L": 2, **kw})


def test_bad_types_name_the_parameter():
    with pytest.raises(TypeError, match="size_factor"):
        make_fpfc_synthetic(m=8, L=2, size_factor=2.5)


@pytest.mark.parametrize("kw, names", [
    (dict(m=100, L=4, size_mean=30.0), "size_mean, size_sd, size_factor or m, or set size_cap"),
    (dict(m=100000, d=20000), "m, d, size_min or size_factor"),  # refused before the first draw
])
def test_a_draw_too_large_for_memory_is_refused_by_its_parameters_before_it_draws(kw, names):
    from mixlinreg._memory import UnitMemoryError

    with pytest.raises(UnitMemoryError, match="make_fpfc_synthetic") as err:
        make_fpfc_synthetic(**kw, rng=0)
    assert names in str(err.value) and f"m = {kw['m']}" in str(err.value)


def test_lists_layout_is_the_padded_draw_unpadded():
    """layout='lists' (issue 38): the same draws as the padded layout, each device's own rows;
    device_accuracy and fpfc take them unpadded."""
    from mixlinreg.baselines import fpfc
    from mixlinreg.synthetic import device_accuracy, make_fpfc_synthetic

    kw = dict(m=6, L=2, d=4, n_classes=3, size_cap=300, rng=3)
    pad = make_fpfc_synthetic(**kw)
    lst = make_fpfc_synthetic(layout="lists", **kw)
    assert lst.m == pad.m == 6 and isinstance(lst.X, list)
    for i in range(6):
        n_i, t_i = int(pad.n_samples[i]), int(pad.n_test[i])
        assert np.array_equal(lst.X[i], pad.X[i, :n_i]) and np.array_equal(lst.y[i], pad.y[i, :n_i])
        assert np.array_equal(lst.X_test[i], pad.X_test[i, :t_i])
        assert np.array_equal(lst.y_test[i], pad.y_test[i, :t_i])
    assert np.array_equal(lst.theta_star, pad.theta_star)
    models = np.repeat(lst.theta_star[:1], 6, axis=0)
    a = device_accuracy(models, lst.X_test, lst.y_test)
    b = device_accuracy(models, pad.X_test, pad.y_test, pad.n_test)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    with pytest.raises(ValueError, match="drop n_rows"):
        device_accuracy(models, lst.X_test, lst.y_test, pad.n_test)
    with pytest.raises(ValueError, match="layout must be one of"):
        make_fpfc_synthetic(layout="ragged", **kw)
    res = fpfc(lst.X, lst.y, loss="multinomial", n_classes=3, n_rounds=5, rng=0)
    assert res.extra["omega"].shape == (6, 5, 3)
