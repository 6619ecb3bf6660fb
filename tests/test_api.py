"""Validation errors of the public entry points, the estimator and the CLI."""

import numpy as np
import pytest

import mixlinreg as mlr
from mixlinreg.cli import main


@pytest.fixture(scope="module")
def small():
    mix = mlr.make_mixture(m=8, n=12, d=3, k=2, R=2.0, sigma=0.1, rng=0)
    init = mix.theta_star[None] + 0.1 * np.random.default_rng(1).standard_normal((2, 2, 3))
    return mix, init


def test_top_level_names():
    for name in ["make_mixture", "init_bernoulli", "init_close", "ifca", "IFCA", "dist_matched",
                 "dist_nearest", "cluster_accuracy", "adjusted_rand", "misclassification_rate"]:
        assert hasattr(mlr, name), name


BAD = [
    (dict(X=np.zeros((8, 12))), ValueError, "X must have 3 dimensions"),
    (dict(y=np.zeros((8, 11))), ValueError, "y must have shape"),
    (dict(init=np.zeros((2, 2, 4))), ValueError, "init must have d = 3"),
    (dict(lr=0.0), ValueError, r"lr must be a finite number in \(0"),
    (dict(lr=-1.0), ValueError, "lr must be"),
    (dict(lr=np.array([0.1, 0.2, 0.3])), ValueError, r"lr must have shape \(2\)"),
    (dict(lr="fast"), TypeError, "lr must be a real number"),
    (dict(n_iter=-1), ValueError, r"n_iter must be in \[0, inf\), got -1"),
    (dict(n_iter=2.5), TypeError, "n_iter must be an integer"),
    (dict(loss="hinge"), ValueError, "loss must be one of"),
    (dict(l2=-0.1), ValueError, "l2 must be"),
    (dict(huber_delta=0.0), ValueError, "huber_delta must be"),
    (dict(averaging="median"), ValueError, "averaging must be one of"),
    (dict(local_steps=0), ValueError, "local_steps must be in"),
    (dict(resample=True, n_iter=7), ValueError, "resample=True needs n >= 2 \\* n_iter"),
    (dict(participation=0), ValueError, r"participation must be in \[1, 8\]"),
    (dict(participation=np.ones((3, 2, 7), dtype=bool)), ValueError, "participation must be"),
    (dict(participation=np.ones((3, 2, 8), dtype=int)), ValueError, "participation must be"),
    (dict(tol=-1.0), ValueError, "tol must be"),
    (dict(diverge_threshold=0.0), ValueError, "diverge_threshold must be"),
    (dict(method="magic"), ValueError, "method must be one of"),
    (dict(method="stats", loss="huber"), ValueError, "method='stats' needs"),
    (dict(dtype=np.int32), ValueError, "dtype must be numpy.float32 or numpy.float64"),
    (dict(theta_star=np.zeros((2, 4))), ValueError, "theta_star must have shape"),
    (dict(y_index=np.zeros(2, dtype=int)), ValueError, "y_index is only allowed"),
    (dict(n_threads=0), ValueError, "n_threads must be in"),
    (dict(X=np.full((8, 12, 3), np.nan)), ValueError, "X must contain only finite values"),
    (dict(init=np.full((2, 2, 3), np.inf)), ValueError, "init must contain only finite values"),
    (dict(loss="logistic"), ValueError, r"y must lie in \[0, 1\]"),
]


@pytest.mark.parametrize("change, exc, match", BAD)
def test_ifca_validation(small, change, exc, match):
    mix, init = small
    kw = dict(X=mix.X, y=mix.y, init=init, lr=0.1, n_iter=3)
    kw.update(change)
    with pytest.raises(exc, match=match):
        mlr.ifca(kw.pop("X"), kw.pop("y"), kw.pop("init"), kw.pop("lr"), **kw)


def test_y_variants_need_index(small):
    mix, init = small
    Y = np.stack([mix.y, 2 * mix.y])
    with pytest.raises(ValueError, match="y_index is required"):
        mlr.ifca(mix.X, Y, init, 0.1, n_iter=2)
    with pytest.raises(ValueError, match=r"y_index entries must be in \[0, 1\]"):
        mlr.ifca(mix.X, Y, init, 0.1, n_iter=2, y_index=np.array([0, 2]))


def test_n_iter_zero_evaluates_init(small):
    mix, init = small
    res = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=0)
    np.testing.assert_array_equal(res.theta, init)
    # the loss of the evaluation is the mean over machines of the best model's mean squared error
    mse = ((np.einsum("mnd,rkd->rmkn", mix.X, init) - mix.y[None, :, None, :]) ** 2).mean(-1)
    np.testing.assert_allclose(res.loss, mse.min(-1).mean(-1), rtol=1e-12)  # float64 sums
    np.testing.assert_array_equal(res.labels, mse.argmin(-1))


def test_single_run_init_2d(small):
    mix, init = small
    res = mlr.ifca(mix.X, mix.y, init[0], 0.1, n_iter=3)
    assert res.theta.shape == (1, 2, 3)


def test_estimator_recovers_clusters():
    mix = mlr.make_mixture(m=40, n=60, d=8, k=2, R=1.0, sigma=0.1, rng=3)
    est = mlr.IFCA(n_clusters=2, lr=[0.05, 0.2], n_init=6, n_iter=150,
                   random_state=4).fit(mix.X, mix.y)
    assert est.coef_.shape == (2, 8)
    assert mlr.adjusted_rand(mix.labels, est.labels_) == 1.0
    assert mlr.dist_matched(est.coef_, mix.theta_star) < 0.6 * 0.1
    assert est.loss_history_.shape == (151,)
    # the kept run is the lowest final training loss among non-diverged runs
    res = est.result_
    ok = ~res.diverged
    assert est.loss_ == res.loss[ok].min()
    assert est.lr_ in (0.05, 0.2)
    np.testing.assert_array_equal(est.predict(mix.X, mix.y), est.labels_)
    assert est.score(mix.X, mix.y) == pytest.approx(-est.loss_, rel=1e-12)
    # one machine as 2-d arrays
    assert est.predict(mix.X[0], mix.y[0]).shape == (1,)


def test_estimator_is_reproducible():
    mix = mlr.make_mixture(m=20, n=30, d=5, k=2, R=1.0, sigma=0.1, rng=5)
    a = mlr.IFCA(n_clusters=2, n_init=3, n_iter=20, random_state=6).fit(mix.X, mix.y)
    b = mlr.IFCA(n_clusters=2, n_init=3, n_iter=20, random_state=6).fit(mix.X, mix.y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_estimator_all_diverged_warns():
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    # scikit-learn's filters apply: IFCA's warning is a subclass of scikit-learn's
    assert issubclass(mlr.ConvergenceWarning, SklearnConvergenceWarning)
    mix = mlr.make_mixture(m=10, n=20, d=4, k=2, R=1.0, sigma=0.1, rng=7)
    with pytest.warns(SklearnConvergenceWarning, match="all 2 runs of IFCA diverged"):
        mlr.IFCA(n_clusters=2, lr=1e6, n_init=2, n_iter=50, random_state=8).fit(mix.X, mix.y)
    with pytest.warns(mlr.ConvergenceWarning, match="all 2 runs of IFCA diverged"):
        est = mlr.IFCA(n_clusters=2, lr=1e6, n_init=2, n_iter=50, random_state=8).fit(mix.X, mix.y)
    assert est.result_.diverged.all()


def test_kept_run_rule():
    """The run a caller keeps: lowest finite loss among runs that did not diverge, lowest index on
    ties, run 0 with a warning when every run diverged. Shared by IFCA.fit and the digits IFCA."""
    from types import SimpleNamespace

    from mixlinreg.ifca import kept_run

    def res(loss, diverged):
        return SimpleNamespace(loss=np.array(loss, dtype=float), diverged=np.array(diverged))

    assert kept_run(res([3.0, 1.0, 1.0, 2.0], [False] * 4), "x") == 1
    assert kept_run(res([0.5, np.nan, 2.0], [True, False, False]), "x") == 2
    with pytest.warns(mlr.ConvergenceWarning, match="all 3 runs of IFCA diverged.*advice here"):
        assert kept_run(res([1.0, np.nan, np.inf], [True, False, True]), "advice here") == 0


def test_estimator_validation_and_unfitted():
    mix = mlr.make_mixture(m=10, n=20, d=4, k=2, R=1.0, sigma=0.1, rng=7)
    with pytest.raises(ValueError, match=r"n_clusters must be in \[1, inf\), got 0"):
        mlr.IFCA(n_clusters=0).fit(mix.X, mix.y)
    with pytest.raises(ValueError, match="init must be one of"):
        mlr.IFCA(init="zeros").fit(mix.X, mix.y)
    with pytest.raises(ValueError, match=r"init must have shape \(2, 4\)"):
        mlr.IFCA(init=np.zeros((3, 4))).fit(mix.X, mix.y)
    with pytest.raises(ValueError, match="lr must be"):
        mlr.IFCA(lr=[0.1, -1.0]).fit(mix.X, mix.y)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted yet"):
        mlr.IFCA().predict(mix.X, mix.y)


def test_cli_demo_small(capsys):
    assert main(["demo", "--m", "20", "--n", "30", "--d", "10", "--R", "1.0", "--n-init", "2",
                 "--n-iter", "50"]) == 0
    out = capsys.readouterr().out
    assert "trial success" in out and "dist_nearest" in out


def test_numpy_baseline_matches_kernel():
    """The benchmark's plain NumPy IFCA is an independent second implementation of the update."""
    from mixlinreg.bench import numpy_ifca

    mix = mlr.make_mixture(m=12, n=20, d=6, k=3, R=1.0, sigma=0.1, rng=9)
    init = mlr.init_bernoulli(1, 3, 6, rng=10)
    res = mlr.ifca(mix.X, mix.y, init, 0.05, n_iter=25)
    # float64, same update, different summation order: agreement to 1e-10 relative
    np.testing.assert_allclose(res.theta[0], numpy_ifca(mix.X, mix.y, init[0], 0.05, 25), rtol=1e-10)


def test_estimator_old_module_path_still_names_it():
    """IFCA moved from mixlinreg/ifca.py to mixlinreg/estimator.py: the old import and a pickle
    that names the old module still give the estimator, fitted state included."""
    import pickle

    from mixlinreg.ifca import IFCA as old

    assert old is mlr.IFCA
    mix = mlr.make_mixture(m=10, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    est = mlr.IFCA(n_clusters=2, n_init=2, n_iter=20, random_state=1).fit(mix.X, mix.y)
    blob = pickle.dumps(est, protocol=0)
    assert b"mixlinreg.estimator\nIFCA" in blob
    back = pickle.loads(blob.replace(b"mixlinreg.estimator\nIFCA", b"mixlinreg.ifca\nIFCA"))
    assert type(back) is mlr.IFCA and np.array_equal(back.coef_, est.coef_)
