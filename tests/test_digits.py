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


# ------------------------------------------------------------ the paper's Table 1 protocol


def _index_of_images():
    """Every load_digits image (pixels / 16) -> its index (the 1797 images are distinct)."""
    from sklearn.datasets import load_digits

    raw = load_digits()
    return {img.tobytes(): i for i, img in enumerate(raw.images / 16.0)}, raw.target


@pytest.mark.parametrize("rotations", [(0, 90, 180, 270), (0, 180)])
def test_partition_uses_each_rotated_image_exactly_once(rotations):
    k = len(rotations)
    m, n, n_test = 4 * k, 15, 45
    data = make_rotated_digits(m, n, n_test=n_test, rng=5, layout="partition", rotations=rotations)
    index, target = _index_of_images()
    assert data.X.shape == (m, n, 65) and data.X_test.shape == (k, n_test, 65)
    np.testing.assert_array_equal(data.labels, np.arange(m) % k)
    assert data.rotations == tuple(rotations)

    def originals(X, deg):  # undo the rotation, find each image's index in load_digits
        back = rotate(X[..., :64].reshape(-1, 8, 8), -deg // 90)
        return np.array([index[np.ascontiguousarray(b).tobytes()] for b in back])

    pools = []
    for c, deg in enumerate(rotations):
        idx = originals(data.X[data.labels == c], deg)
        assert len(set(idx)) == len(idx) == m // k * n  # each image once in its rotation
        np.testing.assert_array_equal(target[idx], data.y[data.labels == c].ravel())
        pools.append(set(idx))
        test = originals(data.X_test[c], deg)
        assert len(set(test)) == n_test
        np.testing.assert_array_equal(target[test], data.y_test[c])
        assert not set(test) & set(idx)  # test and train pools are disjoint
        if c:
            assert set(test) == set(originals(data.X_test[0], 0))  # the same test pool ...
            assert not np.array_equal(test, originals(data.X_test[0], 0))  # ... shuffled
    assert all(p == pools[0] for p in pools)  # every rotation holds the same pool: m n = k N
    again = make_rotated_digits(m, n, n_test=n_test, rng=5, layout="partition",
                                rotations=rotations)
    np.testing.assert_array_equal(again.X, data.X)


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=6, n=10, layout="partition"), "multiple of the 4 rotations"),
    (dict(m=8, n=10, n_test=45, layout="partition"), "n_test a multiple of n"),
    (dict(m=800, n=10, layout="partition"), "training images"),
    (dict(m=8, n=10, layout="blocks"), "layout must be one of"),
    (dict(m=8, n=10, rotations=(0, 45)), "rotations must be distinct degrees"),
    (dict(m=8, n=10, rotations=(90, 90)), "rotations must be distinct degrees"),
])
def test_protocol_data_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_rotated_digits(**kwargs)


def test_lowest_loss_rule_against_a_direct_computation(global_random_seed):
    from scipy.special import logsumexp

    from mixlinreg.digits import lowest_loss_accuracy

    rng = np.random.default_rng(global_random_seed)
    k, n_test, n, D, K = 3, 12, 4, 6, 3
    X_test = rng.standard_normal((k, n_test, D))
    y_test = rng.integers(0, 10, size=(k, n_test))
    models = rng.standard_normal((K, D, 10))
    acc, choice = lowest_loss_accuracy(models, X_test, y_test, n)
    hits, chosen = [], []
    for r in range(k):
        for b in range(n_test // n):
            Xb, yb = X_test[r, b * n:(b + 1) * n], y_test[r, b * n:(b + 1) * n]
            losses = []
            for W in models:
                Z = Xb @ W
                losses.append(np.mean(logsumexp(Z, axis=1) - Z[np.arange(n), yb]))
            j = int(np.argmin(losses))
            chosen.append(j)
            hits += list(np.argmax(Xb @ models[j], axis=1) == yb)
    np.testing.assert_array_equal(choice.ravel(), chosen)
    assert acc == pytest.approx(np.mean(hits), abs=1e-15)
    with pytest.raises(ValueError, match="n_test must be a multiple of n"):
        lowest_loss_accuracy(models, X_test, y_test, 5)


def test_lowest_loss_rule_serves_each_test_machine_its_rotation_model():
    from mixlinreg.digits import lowest_loss_accuracy, train_local

    data = make_rotated_digits(8, 40, n_test=40, rng=1, layout="partition")
    models = np.stack([train_local(data.X[data.labels == r].reshape(-1, 65),
                                   data.y[data.labels == r].ravel(), steps=50) for r in range(4)])
    acc, choice = lowest_loss_accuracy(models[::-1], data.X_test, data.y_test, 40)
    np.testing.assert_array_equal(choice[:, 0], [3, 2, 1, 0])  # the reversed order, found back
    assert acc > 0.7


def test_identity_accuracy_matches_models_to_clusters():
    from mixlinreg.digits import identity_accuracy

    labels = np.arange(12) % 4
    assert identity_accuracy(np.array([2, 0, 3, 1])[labels], labels) == 1.0  # any relabelling
    wrong = np.array([2, 0, 3, 1])[labels]
    wrong[5] = 3
    assert identity_accuracy(wrong, labels) == pytest.approx(11 / 12)
    assert identity_accuracy(np.zeros(12, dtype=int), labels) == pytest.approx(3 / 12)
    assert identity_accuracy(np.where(labels == 0, 4, labels), labels) == 1.0  # 5 models, 4 used
    split = labels.copy()
    split[0] = 4  # a fifth model takes one machine of cluster 0: matched to nothing, it is wrong
    assert identity_accuracy(split, labels) == pytest.approx(11 / 12)


def test_participation_masks_have_the_requested_size_and_follow_the_seed():
    from mixlinreg.digits import participation_masks

    masks = participation_masks(28, 0.1, 50, 3, rng=7)
    assert masks.shape == (50, 3, 28) and masks.dtype == bool
    assert (masks.sum(axis=-1) == 3).all()  # round(2.8) machines each round and run
    np.testing.assert_array_equal(masks, participation_masks(28, 0.1, 50, 3, rng=7))
    assert not np.array_equal(masks, participation_masks(28, 0.1, 50, 3, rng=8))
    assert 0.05 < masks.mean(axis=(0, 1)).min() and masks.mean(axis=(0, 1)).max() < 0.2
    assert participation_masks(5, 0.01, 2, rng=0).sum(axis=-1).tolist() == [[1], [1]]
    assert participation_masks(5, 1.0, 2, rng=0).all()
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="participation"):
            participation_masks(5, bad, 2, rng=0)


def test_chunked_run_equals_one_kernel_call():
    data = make_rotated_digits(8, 20, n_test=20, rng=2)
    kw = dict(tau=2, rounds=7, n_init=3, labels=data.labels, rng=4)
    one = ifca_model_averaging(data.X, data.y, 4, **kw)
    for chunk in (1, 3, 7):
        many = ifca_model_averaging(data.X, data.y, 4, chunk=chunk, **kw)
        # the same iterations from the same models: equal up to rounding (float64)
        np.testing.assert_allclose(many.W, one.W, rtol=0, atol=1e-10)
        np.testing.assert_allclose(many.loss_trace, one.loss_trace, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(many.assign, one.assign)
        np.testing.assert_array_equal(many.ari_trace, one.ari_trace)
        np.testing.assert_array_equal(many.identity_trace, one.identity_trace)
        assert many.restart == one.restart


def test_decay_and_participation_are_the_rounds_of_the_kernel():
    """Decay 0.5 with half the machines: the run equals one kernel call per round with step
    lr 0.5^t and the masks drawn from the run's generator after the initial models."""
    import mixlinreg as mlr
    from mixlinreg.digits import N_CLASSES, participation_masks

    data = make_rotated_digits(8, 10, n_test=20, rng=0)
    res = ifca_model_averaging(data.X, data.y, 2, tau=2, rounds=3, lr=0.4, n_init=1,
                               participation=0.5, decay=0.5, rng=9)
    gen = np.random.default_rng(9)
    W = 0.01 * gen.standard_normal((1, 2, 65, N_CLASSES))
    masks = participation_masks(8, 0.5, 3, 1, gen)
    for t in range(3):
        W = mlr.ifca(data.X, data.y.astype(float), W, 0.4 * 0.5 ** t, n_iter=1,
                     loss="multinomial", l2=1e-3, averaging="model", local_steps=2,
                     participation=masks[t:t + 1]).theta
    np.testing.assert_allclose(res.W, W[0], rtol=0, atol=1e-12)
    again = ifca_model_averaging(data.X, data.y, 2, tau=2, rounds=3, lr=0.4, n_init=1,
                                 participation=0.5, decay=0.5, rng=9)
    np.testing.assert_array_equal(again.W, res.W)
    with pytest.raises(ValueError, match="chunk"):
        ifca_model_averaging(data.X, data.y, 2, rounds=3, decay=0.5, chunk=2)
    for name in ("participation", "decay"):
        with pytest.raises(ValueError, match=name):
            ifca_model_averaging(data.X, data.y, 2, rounds=3, **{name: 1.5})


def test_local_decay_steps_per_round():
    from mixlinreg.digits import train_local

    data = make_rotated_digits(4, 10, n_test=10, rng=0)
    W = np.zeros((65, 10))
    for s in range(6):
        W = W - 0.5 * 0.9 ** (s // 3) * softmax_loss_grad(W, data.X[0], data.y[0], 1e-3)[1]
    np.testing.assert_allclose(train_local(data.X[0], data.y[0], steps=6, decay=0.9, every=3), W,
                               rtol=0, atol=1e-13)


def test_protocol_run_and_its_outputs(tmp_path):
    rows, rec = run_digits(1, m=8, n=10, n_test=20, tau=1, rounds=3, n_init=2, layout="partition",
                           test_rule="lowest-loss", participation=0.5, decay=0.9,
                           rotations=[0, 180])
    cfg = rows.attrs["config"]
    assert cfg["k"] == 2 and cfg["rotations"] == [0, 180] and cfg["layout"] == "partition"
    assert list(rec.columns) == ["seed", "round", "ari", "train_loss", "identity"]
    assert rec["identity"].between(0.5, 1).all()  # 2 clusters: at least half matched
    # the defaults: no protocol key in the config (the store key of before), no identity column
    rows, rec = run_digits(1, m=8, n=10, n_test=20, tau=1, rounds=2, n_init=1)
    assert not {"layout", "test_rule", "participation", "decay", "rotations"} & set(
        rows.attrs["config"])
    assert list(rec.columns) == ["seed", "round", "ari", "train_loss"]


@pytest.mark.parametrize("args, match", [
    (["--participation", "1.5"], "argument --participation: must be a number in"),
    (["--decay", "0"], "argument --decay: must be a finite number > 0"),
    (["--rotations", "0,45"], "argument --rotations: must be distinct degrees"),
    (["--layout", "blocks"], "argument --layout: invalid choice"),
    (["--test-rule", "best"], "argument --test-rule: invalid choice"),
])
def test_cli_protocol_options_refused_naming_the_option(args, match, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["digits", *args, "--out", str(tmp_path / "x")])
    assert exc.value.code == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_protocol_options(tmp_path, capsys):
    assert main(["digits", "--seeds", "1", "--m", "8", "--n", "10", "--n-test", "20", "--rounds",
                 "2", "--tau", "1", "--layout", "partition", "--test-rule", "lowest-loss",
                 "--participation", "0.5", "--decay", "0.9", "--rotations", "0,90,180,270",
                 "--no-store", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "digits.md").read_text()
    assert "layout = partition" in md and "test_rule = lowest-loss" in md
    assert "cluster-identity accuracy reached 1 in" in md
    assert "identity" in (tmp_path / "digits_recovery.csv").read_text().splitlines()[0]
    assert main(["digits", "--seeds", "1", "--m", "8", "--n", "10", "--test-rule", "lowest-loss",
                 "--n-test", "25", "--no-store", "--out", str(tmp_path)]) == 2
    assert "n_test must be a multiple of n" in capsys.readouterr().err


def test_too_few_machines_for_the_clusters_names_where_k_came_from():
    from mixlinreg.digits import run_digits

    with pytest.raises(ValueError, match=r"m must be at least k = 4 \(the smoke preset's k"):
        run_digits(m=3, preset="smoke")
    with pytest.raises(ValueError, match=r"m must be at least k = 3 \(rotations"):
        run_digits(m=2, rotations=[0, 90, 180], preset="smoke")
    with pytest.raises(ValueError, match=r"m must be at least k = 2 \(k:"):
        run_digits(m=1, k=2, preset="smoke")
