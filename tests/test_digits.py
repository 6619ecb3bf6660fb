"""Rotated 8 x 8 digits (Table 1 analogue): loss, data, IFCA with model averaging, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from mixlinreg.cli import main
from mixlinreg.digits import (
    ANALOGUE_SENTENCE,
    K_ROTATIONS,
    METHODS,
    ifca_model_averaging,
    make_rotated_digits,
    rotate,
    run_digits,
    softmax_loss_grad,
)


def test_loss_gradient_matches_finite_differences(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.standard_normal((2, 7, 5))
    y = rng.integers(0, 10, size=(2, 7))
    W = 0.5 * rng.standard_normal((2, 5, 10))
    l2 = 0.3
    loss, g = softmax_loss_grad(W, X, y, l2)
    assert loss.shape == (2,) and g.shape == W.shape
    eps = 1e-6
    num = np.zeros_like(W)
    for idx in np.ndindex(W.shape[1:]):
        for b in range(2):
            Wp, Wm = W.copy(), W.copy()
            Wp[(b,) + idx] += eps
            Wm[(b,) + idx] -= eps
            num[(b,) + idx] = (softmax_loss_grad(Wp, X, y, l2, grad=False)[b]
                               - softmax_loss_grad(Wm, X, y, l2, grad=False)[b]) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_loss_is_stable_for_huge_logits():
    X = np.array([[[1.0, 1.0]]])
    W = np.zeros((1, 2, 10))
    W[0, 0, 3] = 1e4
    loss, g = softmax_loss_grad(W, X, np.array([[3]]), 0.0)
    assert np.isfinite(loss).all() and np.isfinite(g).all()
    assert loss[0] == pytest.approx(0.0, abs=1e-12)


def test_rotations_and_clusters():
    img = np.arange(64.0).reshape(8, 8)
    np.testing.assert_array_equal(rotate(rotate(rotate(rotate(img, 1), 1), 1), 1), img)
    np.testing.assert_array_equal(rotate(img, 4), img)
    data = make_rotated_digits(8, 10, n_test=20, rng=0)
    assert data.X.shape == (8, 10, 65) and data.y.shape == (8, 10)
    assert data.X_test.shape == (K_ROTATIONS, 20, 65)
    np.testing.assert_array_equal(data.labels, np.arange(8) % 4)
    assert data.X.min() >= 0 and data.X.max() <= 1 and np.all(data.X[..., -1] == 1)
    # the same test images, rotated: cluster r's test set is cluster 0's rotated by 90 r degrees
    base = data.X_test[0, :, :64].reshape(-1, 8, 8)
    for r in range(K_ROTATIONS):
        np.testing.assert_array_equal(data.X_test[r, :, :64].reshape(-1, 8, 8), rotate(base, r))
        np.testing.assert_array_equal(data.y_test[r], data.y_test[0])
    means = data.X_test[..., :64].mean(axis=1)
    for a in range(K_ROTATIONS):
        for b in range(a + 1, K_ROTATIONS):
            assert np.abs(means[a] - means[b]).max() > 0.05  # the clusters differ
    # machine i (cluster i % 4) holds load_digits images rotated by 90 * (i % 4) degrees
    from sklearn.datasets import load_digits

    raw = load_digits()
    flat = (raw.images / 16.0).reshape(len(raw.images), 64)
    for i in range(8):
        back = rotate(data.X[i, :, :64].reshape(-1, 8, 8), -data.labels[i]).reshape(-1, 64)
        match = np.all(np.abs(back[:, None] - flat[None]) == 0, axis=-1)
        assert match.any(axis=1).all()
        assert np.all(raw.target[np.argmax(match, axis=1)] == data.y[i]) or \
            all(data.y[i, j] in raw.target[match[j]] for j in range(len(back)))
    again = make_rotated_digits(8, 10, n_test=20, rng=0)
    np.testing.assert_array_equal(again.X, data.X)


def test_tiny_run_end_to_end():
    rows, rec = run_digits(2, m=8, n=20, n_test=40, tau=2, rounds=3, n_init=2, seed=1)
    assert list(rows.columns) == ["seed", "method", "test_accuracy", "ari", "seconds"]
    assert len(rows) == 2 * len(METHODS) and set(rows["method"]) == set(METHODS)
    assert rows["test_accuracy"].between(0, 1).all()
    assert rows.loc[rows["method"].isin(["global", "local"]), "ari"].isna().all()
    assert rows.loc[rows["method"].isin(["ifca", "one-shot"]), "ari"].notna().all()
    assert list(rec.columns) == ["seed", "round", "ari", "train_loss"]
    assert len(rec) == 2 * 4 and rec["round"].max() == 3


def test_ifca_recovers_rotations():
    data = make_rotated_digits(16, 60, n_test=50, rng=3)
    res = ifca_model_averaging(data.X, data.y, 4, tau=5, rounds=25, n_init=3,
                               labels=data.labels, rng=4)
    assert res.ari_trace[-1] == 1.0
    assert res.W.shape == (4, 65, 10) and res.assign.shape == (16,)
    assert res.loss_trace[-1] < res.loss_trace[0]


def test_global_is_fedavg_with_one_model():
    data = make_rotated_digits(4, 10, n_test=10, rng=0)
    res = ifca_model_averaging(data.X, data.y, 1, tau=1, rounds=2, lr=0.5, l2=0.1, n_init=1,
                               init_scale=0.0)
    # with tau = 1 and equal n, FedAvg is gradient descent on the mean loss
    W = np.zeros((65, 10))
    for _ in range(2):
        _, g = softmax_loss_grad(W[None], data.X, data.y, 0.1)
        W = W - 0.5 * g.mean(axis=0)
    np.testing.assert_allclose(res.W[0], W, atol=1e-12)


@pytest.mark.parametrize("kwargs, err", [
    (dict(m=0, n=5), ValueError),
    (dict(m=4, n=0), ValueError),
    (dict(m=4, n=1700, n_test=300), ValueError),
    (dict(m=4, n=5, n_test=0), ValueError),
    (dict(m=4.0, n=5), TypeError),
    (dict(m=4, n=5, rng=np.random.RandomState(0)), TypeError),
])
def test_make_rotated_digits_validation(kwargs, err):
    with pytest.raises(err):
        make_rotated_digits(**kwargs)


def test_ifca_validation():
    data = make_rotated_digits(4, 5, n_test=10, rng=0)
    X, y = data.X, data.y
    with pytest.raises(ValueError, match="k"):
        ifca_model_averaging(X, y, 0)
    with pytest.raises(ValueError, match="tau"):
        ifca_model_averaging(X, y, 2, tau=0)
    with pytest.raises(ValueError, match="lr"):
        ifca_model_averaging(X, y, 2, lr=-1.0)
    with pytest.raises(ValueError, match="y must"):
        ifca_model_averaging(X, y[:, :3], 2)
    with pytest.raises(ValueError, match="y must hold"):
        ifca_model_averaging(X, y + 10, 2)
    with pytest.raises(ValueError, match="X must have shape"):
        ifca_model_averaging(X[0], y, 2)
    with pytest.raises(ValueError, match="labels"):
        ifca_model_averaging(X, y, 2, labels=[0, 1])
    with pytest.raises(ValueError, match="k"):
        run_digits(1, m=3, k=4)


def test_cli_digits(tmp_path, capsys):
    assert main(["digits", "--seeds", "2", "--m", "8", "--n", "10", "--rounds", "2", "--tau", "1",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("digits.csv", "digits.md", "digits_recovery.png", "digits_recovery.csv"):
        assert (tmp_path / name).exists()
    md = (tmp_path / "digits.md").read_text()
    assert ANALOGUE_SENTENCE in md and "not MNIST" in out
    for meth in METHODS:
        assert f"| {meth} |" in md


def test_diverging_restarts_are_flagged_not_raised():
    import mixlinreg as mlr

    data = make_rotated_digits(4, 10, n_test=10, rng=0)
    with pytest.warns(mlr.ConvergenceWarning, match="all 2 runs of IFCA diverged.*smaller lr"):
        res = ifca_model_averaging(data.X, data.y, 2, tau=1, rounds=20, lr=1e12, n_init=2,
                                   init_scale=1.0, rng=0)
    assert res.diverged
    ok = ifca_model_averaging(data.X, data.y, 2, tau=1, rounds=2, n_init=2, rng=0)
    assert not ok.diverged
