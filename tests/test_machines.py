"""Machines of unequal sizes (mixlinreg.machines): lists of per-machine arrays, padded arrays with
n_samples, long tables; the estimator's intercept and to_frame.

Equal sizes given as lists are the dense arrays' result bit for bit; unequal sizes agree with the
slow reference (tests/naive.py), in which each machine's loss is the mean over its own rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixlinreg as mlr
from naive import naive_ifca

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.EmptyClusterWarning")


@pytest.fixture(scope="module")
def mix():
    return mlr.make_mixture(m=12, n=40, d=4, k=2, R=1.0, sigma=0.1, rng=5)


def _ragged(mix, seed=0, low=5):
    sizes = np.random.default_rng(seed).integers(low, mix.n + 1, size=mix.m)
    sizes[0] = mix.n  # the longest machine sets the padded n
    return ([mix.X[i, :s].copy() for i, s in enumerate(sizes)],
            [mix.y[i, :s].copy() for i, s in enumerate(sizes)], sizes)


def _fields(res):
    return (res.theta, res.labels, res.loss, res.diverged, res.converged, res.n_iter)


# ------------------------------------------------------------------------------ equal sizes
@pytest.mark.parametrize("opts", [
    dict(method="data"), dict(method="stats"), dict(method="data", dtype=np.float32),
    dict(loss="huber", l2=0.01), dict(averaging="model", local_steps=2),
    dict(participation=5, rng=3), dict(early_stop=True, tol=1e-4), dict(trace=True),
])
def test_lists_of_equal_sizes_are_the_dense_result_bit_for_bit(mix, opts):
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=3, rng=1)
    a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=25, **opts)
    b = mlr.ifca(list(mix.X), list(mix.y), init, 0.1, n_iter=25, **opts)
    for x, z in zip(_fields(a), _fields(b)):
        assert np.array_equal(x, z)
    assert a.method == b.method
    if opts.get("trace"):
        assert np.array_equal(a.trace.loss, b.trace.loss)


def test_lists_of_x_with_y_as_one_table(mix):
    """X a list with y an (m, n) array or DataFrame: its rows are the machines' responses."""
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=1, rng=1)
    a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=5)
    for y in (mix.y, pd.DataFrame(mix.y)):
        b = mlr.ifca(list(mix.X), y, init, 0.1, n_iter=5)
        assert np.array_equal(a.theta, b.theta)


def test_gram_path_input_of_equal_sizes_as_lists(mix):
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=2, rng=1)
    a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=20, method="gram")
    b = mlr.ifca(list(mix.X), list(mix.y), init, 0.1, n_iter=20, method="gram")
    assert np.array_equal(a.theta, b.theta) and b.method == "gram"


# ------------------------------------------------------------------------------ unequal sizes
@pytest.mark.parametrize("loss, opts", [
    ("squared", dict(method="data")), ("squared", dict(method="stats")),
    ("squared", dict(l2=0.05)), ("huber", dict(huber_delta=0.3)),
    ("squared", dict(averaging="model", local_steps=3)),
    ("squared", dict(shared=[1])),
])
def test_ragged_machines_agree_with_the_reference(mix, loss, opts):
    X, y, sizes = _ragged(mix)
    init = mlr.init_close(mix.theta_star, 0.4, n_runs=2, rng=2)
    if "shared" in opts:
        init = mlr.tie_shared(init, opts["shared"])
    res = mlr.ifca(X, y, init, 0.1, n_iter=15, loss=loss, trace=True, **opts)
    ref_opts = {k: v for k, v in opts.items() if k != "method"}
    ref = naive_ifca(X, y, init, 0.1, n_iter=15, loss=loss, **ref_opts)
    np.testing.assert_allclose(res.theta, ref["theta"], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(res.labels, ref["labels"])
    np.testing.assert_allclose(res.loss, ref["loss"], rtol=1e-10)
    np.testing.assert_allclose(res.trace.loss, ref["trace_loss"], rtol=1e-10)
    # each machine's loss is its own mean: the final loss by hand
    th = res.theta[0]
    F = np.array([[np.mean((y[i] - X[i] @ th[j]) ** 2) for j in range(2)] for i in range(mix.m)])
    if loss == "squared" and "l2" not in opts:
        assert res.loss[0] == pytest.approx(F.min(axis=1).mean(), rel=1e-12)


def test_ragged_logistic_and_participation_mask(mix):
    lg = mlr.make_logistic_mixture(m=10, n=30, d=3, k=2, R=2.0, rng=4)
    sizes = np.arange(10) * 2 + 12
    X = [lg.X[i, :s] for i, s in enumerate(sizes)]
    y = [lg.y[i, :s] for i, s in enumerate(sizes)]
    init = mlr.init_close(lg.theta_star, 0.3, n_runs=2, rng=1)
    mask = np.random.default_rng(0).random((10, 2, 10)) < 0.6
    res = mlr.ifca(X, y, init, 0.5, n_iter=10, loss="logistic", participation=mask)
    ref = naive_ifca(X, y, init, 0.5, n_iter=10, loss="logistic", participation_mask=mask)
    np.testing.assert_allclose(res.theta, ref["theta"], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(res.labels, ref["labels"])


def test_padded_arrays_with_n_samples_equal_the_lists(mix):
    X, y, sizes = _ragged(mix, seed=1)
    Xp, yp, n = mlr.stack_machines(X, y)
    assert Xp.shape == (mix.m, mix.n, mix.d) and n.tolist() == sizes.tolist()
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=2, rng=1)
    a = mlr.ifca(X, y, init, 0.1, n_iter=20)
    # the padding is never read: NaN there changes nothing
    Xn, yn = Xp.copy(), yp.copy()
    for i, s in enumerate(sizes):
        Xn[i, s:] = np.nan
        yn[i, s:] = np.nan
    for stats in ("data", "stats"):
        b = mlr.ifca(Xn, yn, init, 0.1, n_iter=20, n_samples=sizes, method=stats)
        np.testing.assert_allclose(b.theta, a.theta, rtol=1e-12, atol=1e-14)
        assert np.array_equal(b.labels, a.labels)
    c = mlr.ifca(Xp, yp, init, 0.1, n_iter=20, n_samples=sizes)
    for x, z in zip(_fields(a), _fields(c)):
        assert np.array_equal(x, z)


def test_ragged_machines_are_clustered(mix):
    X, y, _ = _ragged(mix, seed=2, low=10)
    init = mlr.init_close(mix.theta_star, 0.25, n_runs=2, rng=1)
    res = mlr.ifca(X, y, init, 0.1, n_iter=200)
    assert (res.labels == mix.labels).all()
    assert mlr.dist_matched(res.theta[0], mix.theta_star) < 0.1


# ------------------------------------------------------------------------------ errors
def test_errors_say_what_to_pass(mix):
    X, y, sizes = _ragged(mix)
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=1, rng=1)
    with pytest.raises(ValueError, match=r"resample=True needs machines of equal sizes.*sizes 5"):
        mlr.ifca(X, y, init, 0.1, n_iter=2, resample=True)
    with pytest.raises(ValueError, match="method='gram' needs machines of equal sizes"):
        mlr.ifca(X, y, init, 0.1, n_iter=2, method="gram")
    with pytest.raises(ValueError, match="drop n_samples"):
        mlr.ifca(X, y, init, 0.1, n_samples=sizes)
    with pytest.raises(ValueError, match=r"X must have 3 dimensions.*got shape \(40, 4\).*list of m "
                                         r"arrays of shape \(n_i, d\).*split_by_machine"):
        mlr.ifca(mix.X[0], mix.y[0], init, 0.1)
    with pytest.raises(ValueError, match=r"X must have 3 dimensions.*split_by_machine"):
        mlr.IFCA().fit(mix.X.reshape(-1, mix.d), mix.y.reshape(-1))
    bad = list(X)
    bad[3] = bad[3][:, :2]
    with pytest.raises(ValueError, match=r"same d features: X\[0\] has 4, X\[3\] has 2"):
        mlr.ifca(bad, y, init, 0.1)
    short = list(y)
    short[2] = short[2][:-1]
    with pytest.raises(ValueError, match=r"y\[2\] must have one response per row of X\[2\]"):
        mlr.ifca(X, short, init, 0.1)
    with pytest.raises(ValueError, match="same number of machines"):
        mlr.ifca(X, y[:-1], init, 0.1)
    with pytest.raises(ValueError, match=r"X\[1\] must have 2 dimensions"):
        mlr.ifca([X[0], X[1][0]], [y[0], y[1]], init, 0.1)
    nan = list(X)
    nan[4] = nan[4].copy()
    nan[4][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"X\[4\] must contain only finite values"):
        mlr.ifca(nan, y, init, 0.1)
    with pytest.raises(ValueError, match=r"n_samples must hold m = 12 integers in \[1, 40\].*41"):
        mlr.ifca(mix.X, mix.y, init, 0.1, n_samples=np.full(12, 41))
    Xp, yp, n = mlr.stack_machines(X, y)
    Xp[1, -1, 0] = np.nan  # machine 1 uses every row, so this NaN is data
    n = n.copy()
    n[1] = mix.n
    with pytest.raises(ValueError, match=r"only finite values .* first n_samples\[i\] rows"):
        mlr.ifca(Xp, yp, init, 0.1, n_samples=n)


# ------------------------------------------------------------------------------ long tables
def test_split_by_machine_reads_a_dataframe(mix):
    X, y, sizes = _ragged(mix)
    rows = [dict(site=f"s{i}", **{f"x{q}": X[i][t, q] for q in range(mix.d)}, target=y[i][t])
            for i in range(mix.m) for t in range(sizes[i])]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # rows in any order
    Xs, ys, sites = mlr.split_by_machine(frame, machine="site", target="target")
    order = [int(s[1:]) for s in sites]
    assert sorted(order) == list(range(mix.m))
    for Xi, yi, i in zip(Xs, ys, order):
        # rows keep the table's order: the same multiset of rows as machine i
        idx = np.lexsort(Xi.T[::-1])
        ref = np.lexsort(X[i].T[::-1])
        np.testing.assert_array_equal(Xi[idx], X[i][ref])
        np.testing.assert_array_equal(yi[idx], y[i][ref])
    with pytest.raises(KeyError, match="machine='machine' is not a column"):
        mlr.split_by_machine(frame, machine="machine", target="target")
    with pytest.raises(KeyError, match=r"features \['x9'\] are not columns"):
        mlr.split_by_machine(frame, machine="site", target="target", features=["x0", "x9"])
    with pytest.raises(ValueError, match="column 'site' must be numeric"):
        mlr.split_by_machine(frame, machine="x0", target="target")
    holes = frame.copy()
    holes.iloc[[3, 7], holes.columns.get_loc("site")] = None
    with pytest.raises(ValueError, match=r"machine column 'site' has 2 missing values \(rows"):
        mlr.split_by_machine(holes, machine="site", target="target")
    sub, _, _ = mlr.split_by_machine(frame, machine="site", target="target", features=["x2", "x0"])
    assert sub[0].shape[1] == 2


# ------------------------------------------------------------------------------ the estimator
def test_estimator_lists_equal_dense_and_take_ragged_machines(mix):
    kw = dict(n_clusters=2, n_init=3, n_iter=60, random_state=0)
    a = mlr.IFCA(**kw).fit(mix.X, mix.y)
    b = mlr.IFCA(**kw).fit(list(mix.X), list(mix.y))
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.labels_, b.labels_)
    X, y, sizes = _ragged(mix, seed=3, low=10)
    c = mlr.IFCA(**kw).fit(X, y)
    assert c.n_samples_.tolist() == sizes.tolist()
    assert np.array_equal(c.predict(X, y), c.labels_)
    assert c.score(X, y) == pytest.approx(-c.loss_, rel=1e-12)
    assert np.isfinite(c.bic(X, y))
    frame = c.to_frame("machines")
    assert frame["n_rows"].tolist() == sizes.tolist()
    assert frame["cluster"].tolist() == c.labels_.tolist()


def test_intercept_with_one_cluster_is_pooled_least_squares():
    rng = np.random.default_rng(0)
    m, d = 8, 3
    sizes = rng.integers(15, 40, size=m)
    X = [rng.standard_normal((s, d)) for s in sizes]
    y = [Xi @ np.array([1.0, -2.0, 0.5]) + 3.0 + 0.1 * rng.standard_normal(Xi.shape[0]) for Xi in X]
    est = mlr.IFCA(n_clusters=1, n_init=1, lr=0.2, n_iter=3000, fit_intercept=True,
                   random_state=0).fit(X, y)
    assert est.converged_
    # the machine-mean objective (1/m) sum_i F_i: least squares with each row weighted 1/n_i
    A = np.vstack([np.column_stack([Xi, np.ones(len(Xi))]) / np.sqrt(len(Xi)) for Xi in X])
    b = np.concatenate([yi / np.sqrt(len(yi)) for yi in y])
    sol = np.linalg.lstsq(A, b, rcond=None)[0]
    np.testing.assert_allclose(est.coef_[0], sol[:d], rtol=1e-6)
    assert est.intercept_[0] == pytest.approx(sol[d], rel=1e-6)
    models = est.to_frame()
    assert models.columns.tolist() == ["cluster", "n_machines", "intercept", "coef_0", "coef_1",
                                       "coef_2"]
    assert models["intercept"].iloc[0] == est.intercept_[0]
    # without the intercept the same data cannot be fitted: a far larger loss
    plain = mlr.IFCA(n_clusters=1, n_init=1, lr=0.2, n_iter=3000, random_state=0).fit(X, y)
    assert plain.loss_ > 10 * est.loss_ and np.all(plain.intercept_ == 0)


def test_intercept_clusters_and_predicts():
    mix = mlr.make_mixture(m=16, n=30, d=3, k=2, R=1.0, sigma=0.05, rng=1)
    offsets = np.where(mix.labels == 0, 2.0, -2.0)
    y = mix.y + offsets[:, None]
    est = mlr.IFCA(n_clusters=2, n_init=10, n_iter=400, fit_intercept=True,
                   random_state=0).fit(mix.X, y)
    assert mlr.adjusted_rand(mix.labels, est.labels_) == 1.0
    assert sorted(np.round(est.intercept_, 1).tolist()) == [-2.0, 2.0]
    assert np.array_equal(est.predict(mix.X, y), est.labels_)
    assert est.score(mix.X, y) == pytest.approx(-est.loss_, rel=1e-10)
    # an init of the features' models (intercepts start at 0) or with the intercept column
    est2 = mlr.IFCA(n_clusters=2, init=np.zeros((2, 3)), n_iter=5, fit_intercept=True).fit(mix.X, y)
    assert est2.coef_.shape == (2, 3) and est2.intercept_.shape == (2,)
    with pytest.raises(ValueError, match=r"init must have shape \(2, 3\).*\(2, 4\).*fit_intercept"):
        mlr.IFCA(n_clusters=2, init=np.zeros((2, 5)), fit_intercept=True).fit(mix.X, y)


def test_to_frame_of_a_result(mix):
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=3, rng=1)
    res = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=10, trace=True, theta_star=mix.theta_star)
    runs = res.to_frame()
    assert runs["loss"].tolist() == res.loss.tolist()
    labels = res.to_frame("labels")
    assert labels.shape == (3 * mix.m, 3)
    assert labels.query("run == 2")["cluster"].tolist() == res.labels[2].tolist()
    models = res.to_frame("models")
    assert models.shape == (6, 2 + mix.d)
    np.testing.assert_array_equal(models.query("run == 1 and cluster == 0").iloc[0, 2:].to_numpy(),
                                  res.theta[1, 0])
    trace = res.to_frame("trace")
    assert trace.shape[0] == 11 * 3
    assert trace.query("iteration == 10 and run == 0")["dist_matched"].iloc[0] == pytest.approx(
        float(res.trace.dist_matched()[10, 0]))
    with pytest.raises(ValueError, match="kind must be one of"):
        res.to_frame("model")
    no_trace = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=2)
    with pytest.raises(ValueError, match="trace=True"):
        no_trace.to_frame("trace")
    est = mlr.IFCA(n_init=2, lr=[0.05, 0.1], n_iter=20, random_state=0).fit(mix.X, mix.y)
    r = est.to_frame("runs")
    assert r["lr"].tolist() == [0.05, 0.1, 0.05, 0.1] and r["kept"].sum() == 1
    assert est.to_frame("history")["loss"].iloc[-1] == est.loss_history_[-1]


# ------------------------------------------------------------------------------ the baselines
def _weighted_ls(X, y, machines):
    """argmin (1/|S|) sum_{i in S} (1/n_i) ||y_i - X_i theta||^2, by rows scaled 1/sqrt(n_i)."""
    A = np.vstack([X[i] / np.sqrt(len(X[i])) for i in machines])
    b = np.concatenate([y[i] / np.sqrt(len(y[i])) for i in machines])
    return np.linalg.lstsq(A, b, rcond=None)[0]


def test_closed_form_baselines_take_ragged_machines(mix):
    from mixlinreg import baselines as bl

    X, y, sizes = _ragged(mix, seed=4, low=8)
    loc = bl.local_models(X, y)
    for i in range(mix.m):
        np.testing.assert_allclose(loc.theta[i], np.linalg.lstsq(X[i], y[i], rcond=None)[0],
                                   rtol=1e-9, atol=1e-12)
    glob = bl.global_model(X, y)
    np.testing.assert_allclose(glob.theta[0], _weighted_ls(X, y, range(mix.m)), rtol=1e-9)
    orc = bl.oracle(X, y, mix.labels)
    for j in range(2):
        np.testing.assert_allclose(orc.theta[j], _weighted_ls(X, y, np.flatnonzero(mix.labels == j)),
                                   rtol=1e-9)
    assert mlr.adjusted_rand(mix.labels, bl.one_shot(X, y, 2, rng=0).labels) == 1.0
    # equal sizes as lists: the dense result bit for bit
    assert np.array_equal(bl.global_model(list(mix.X), list(mix.y)).theta,
                          bl.global_model(mix.X, mix.y).theta)


def test_iterative_baselines_take_lists_as_padded_arrays(mix):
    from mixlinreg import baselines as bl

    X, y, sizes = _ragged(mix, seed=5, low=8)
    Xp, yp, n = mlr.stack_machines(X, y)
    a = bl.cfl(X, y, max_rounds=30)  # unpadded (RaggedRows): equal to rounding
    b = bl.cfl(Xp, yp, max_rounds=30, n_samples=n)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9, atol=1e-12)
    assert np.array_equal(a.labels, b.labels)
    f1 = bl.fpfc(X, y, n_rounds=20, rng=0)  # unpadded (RaggedRows): equal to rounding
    f2 = bl.fpfc(Xp, yp, n_rounds=20, n_samples=n, rng=0)
    np.testing.assert_allclose(f1.theta, f2.theta, rtol=1e-9, atol=1e-12)
    g1 = bl.fedavg(X, y, n_rounds=10)
    g2 = bl.fedavg(Xp, yp, n_rounds=10, n_samples=n)
    assert np.array_equal(g1.theta, g2.theta)
    dense = bl.cfl(mix.X, mix.y, max_rounds=30)
    listed = bl.cfl(list(mix.X), list(mix.y), max_rounds=30)
    assert np.array_equal(dense.theta, listed.theta)


def test_fpfc_keeps_ragged_machines_unpadded_and_agrees_with_the_padded_form():
    from mixlinreg import baselines as bl
    from mixlinreg.synthetic import make_fpfc_synthetic

    data = make_fpfc_synthetic(m=8, L=2, d=5, n_classes=3, size_cap=400, rng=0)
    X = [data.X[i, :s] for i, s in enumerate(data.n_samples)]
    y = [data.y[i, :s] for i, s in enumerate(data.n_samples)]
    assert len(set(data.n_samples.tolist())) > 1
    kw = dict(loss="multinomial", n_classes=3, n_rounds=15, lam=0.3, xi=0.01, rng=0)
    padded = bl.fpfc(data.X, data.y, n_samples=data.n_samples, **kw)
    ragged = bl.fpfc(X, y, **kw)
    np.testing.assert_allclose(ragged.extra["omega"], padded.extra["omega"], rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(ragged.extra["objective"], padded.extra["objective"], rtol=1e-10)
    assert ragged.extra["lr"] == pytest.approx(padded.extra["lr"], rel=1e-12)
    assert np.array_equal(ragged.labels, padded.labels)
    quiet = bl.fpfc(X, y, record_objective=False, **kw)
    assert quiet.extra["objective"] is None
    assert np.array_equal(quiet.extra["omega"], ragged.extra["omega"])  # nothing else changes
    sq = mlr.make_mixture(m=6, n=30, d=3, k=2, R=2.0, sigma=0.1, rng=1)
    sizes = [30, 12, 20, 25, 8, 30]
    Xs = [sq.X[i, :s] for i, s in enumerate(sizes)]
    ys = [sq.y[i, :s] for i, s in enumerate(sizes)]
    a = bl.fpfc(Xs, ys, n_rounds=20, rng=0)
    Xp, yp, n = mlr.stack_machines(Xs, ys)
    b = bl.fpfc(Xp, yp, n_samples=n, n_rounds=20, rng=0)
    np.testing.assert_allclose(a.extra["omega"], b.extra["omega"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9, atol=1e-12)


def test_the_diabetes_experiment_of_the_issue():
    """Issue 39's experiment with the new API: scikit-learn's diabetes data, 10 machines of 44
    rows (standardized features); k = 1 with an intercept warns after the default 300
    iterations and equals pooled least squares with an intercept to 1e-6 relative once it
    converged; list input equals the dense input; machines of 20 to 70 rows fit."""
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    features, target = load_diabetes(return_X_y=True)
    features = StandardScaler().fit_transform(features)
    X, y = features[:440].reshape(10, 44, -1), target[:440].reshape(10, 44)
    design = np.column_stack([features[:440], np.ones(440)])
    pooled = np.linalg.lstsq(design, target[:440], rcond=None)[0]
    with pytest.warns(mlr.ConvergenceWarning, match="did not meet tol"):
        short = mlr.IFCA(n_clusters=1, n_init=1, fit_intercept=True, random_state=0).fit(X, y)
    assert not short.converged_
    long = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True, random_state=0)
    long.fit(X, y)
    fitted = np.append(long.coef_[0], long.intercept_[0])
    assert long.converged_
    assert np.max(np.abs(fitted - pooled)) <= 1e-6 * np.max(np.abs(pooled))
    listed = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True,
                      random_state=0).fit(list(X), list(y))
    assert np.array_equal(listed.coef_, long.coef_)
    sizes = np.array([20, 30, 35, 40, 44, 45, 50, 53, 55, 70])
    edges = np.concatenate([[0], np.cumsum(sizes)])
    Xs = [features[a:b] for a, b in zip(edges[:-1], edges[1:])]
    ys = [target[a:b] for a, b in zip(edges[:-1], edges[1:])]
    est = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True,
                   random_state=0).fit(Xs, ys)
    assert est.converged_ and est.to_frame("machines")["n_rows"].tolist() == sizes.tolist()
    sol = _weighted_ls([np.column_stack([a, np.ones(len(a))]) for a in Xs], ys, range(10))
    np.testing.assert_allclose(np.append(est.coef_[0], est.intercept_[0]), sol, rtol=1e-6)


def test_size_weighting_counts_every_row_once():
    """weighting='size': sum_i (n_i/N) F_i. One step by hand; k = 1 with an intercept converges
    to pooled least squares over all rows; equal sizes give the uniform result bit for bit."""
    rng = np.random.default_rng(3)
    sizes = [10, 25, 40, 15, 60]
    X = [rng.standard_normal((s, 3)) for s in sizes]
    y = [Xi @ np.array([1.0, -1.0, 2.0]) + 0.5 * i + 0.1 * rng.standard_normal(len(Xi))
         for i, Xi in enumerate(X)]
    theta0 = rng.standard_normal((1, 1, 3))
    one = mlr.ifca(X, y, theta0, 0.1, n_iter=1, weighting="size")
    N = sum(sizes)
    grad = sum(2.0 * Xi.T @ (Xi @ theta0[0, 0] - yi) / N for Xi, yi in zip(X, y))
    np.testing.assert_allclose(one.theta[0, 0], theta0[0, 0] - 0.1 * grad, rtol=1e-12)
    th = one.theta[0, 0]
    pooled_loss = sum(float(np.sum((yi - Xi @ th) ** 2)) for Xi, yi in zip(X, y)) / N
    assert one.loss[0] == pytest.approx(pooled_loss, rel=1e-12)
    for meth in ("data", "stats"):
        again = mlr.ifca(X, y, theta0, 0.1, n_iter=1, weighting="size", method=meth)
        np.testing.assert_allclose(again.theta, one.theta, rtol=1e-12)
    est = mlr.IFCA(n_clusters=1, n_init=1, n_iter=5000, fit_intercept=True, weighting="size",
                   random_state=0).fit(X, y)
    A = np.vstack([np.column_stack([Xi, np.ones(len(Xi))]) for Xi in X])
    sol = np.linalg.lstsq(A, np.concatenate(y), rcond=None)[0]
    np.testing.assert_allclose(np.append(est.coef_[0], est.intercept_[0]), sol, rtol=1e-6)
    mix = mlr.make_mixture(m=12, n=20, d=4, k=2, R=1.0, sigma=0.1, rng=5)
    init = mlr.init_close(mix.theta_star, 0.3, n_runs=2, rng=1)
    a = mlr.ifca(list(mix.X), list(mix.y), init, 0.1, n_iter=10, weighting="size")
    b = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=10)
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.loss, b.loss)
    with pytest.raises(ValueError, match="weighting='size' needs averaging='gradient'"):
        mlr.ifca(X, y, theta0, 0.1, averaging="model", weighting="size")
    with pytest.raises(ValueError, match="weighting must be one of"):
        mlr.ifca(X, y, theta0, 0.1, weighting="rows")
