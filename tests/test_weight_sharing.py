"""Weight sharing (``mixlinreg.ifca(..., shared=...)``) against the slow reference
``naive.naive_ifca(..., shared=...)`` in float64 to 1e-10, over losses, both averaging options,
resampling and participation; its edge cases (no coordinate, every coordinate), its errors, and
``tie_shared``."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from naive import naive_ifca
from numpy.testing import assert_allclose, assert_array_equal
from test_kernel import AVERAGING, LOSSES, _kw_for_naive, assert_matches_naive, grid_case

import mixlinreg as mlr
from mixlinreg import ifca, tie_shared

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


def _seed(*parts):
    return zlib.crc32(repr(("weight sharing",) + parts).encode())


def _shared_of(seed, d):
    """A random proper, non-empty subset of the d coordinates."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, d))
    return np.sort(rng.choice(d, size=size, replace=False))


def _cases():
    for loss in LOSSES:
        for resample in (False, True):
            for avg in AVERAGING:
                if avg.startswith("gradient_") and (not loss.startswith("squared") or resample):
                    continue
                for part in ("all", "mask"):
                    yield pytest.param(loss, resample, avg, part, id=f"{loss}-{'resample' if resample else 'full'}-{avg}-{part}")


@pytest.mark.parametrize("loss, resample, avg, part", list(_cases()))
def test_weight_sharing_equals_the_naive_reference(loss, resample, avg, part, make_problem,
                                                   global_random_seed):
    seed = _seed(global_random_seed, loss, resample, avg, part)
    X, y, init, lr, kw = grid_case(seed, loss, resample, avg, part, make_problem)
    shared = _shared_of(seed, X.shape[2])
    init = tie_shared(init, shared)
    res = ifca(X, y, init, lr, trace=True, shared=shared, **kw)
    ref = naive_ifca(X, y, init, lr, shared=shared, **_kw_for_naive(kw))
    assert not ref["diverged"].any()
    assert_matches_naive(res, ref)
    # the shared coordinates hold one value in the k models of every run
    th = res.theta[:, :, shared]
    assert_array_equal(th, np.broadcast_to(th[:, :1], th.shape))
    if kw.get("method") == "stats":
        assert res.method == "stats"
    # and the sharing mattered: plain IFCA ends elsewhere
    plain = ifca(X, y, init, lr, **kw)
    assert np.max(np.abs(plain.theta - res.theta)) > 1e-6


def _multinomial_problem(seed, m=8, n=12, d=4, C=3, k=2, R=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n, d))
    W = rng.standard_normal((k, d, C))
    labels = np.arange(m) % k
    logits = np.einsum("mnd,mdc->mnc", X, W[labels])
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=2).astype(float)
    init = 0.3 * rng.standard_normal((R, k, d, C))
    return X, y, init


@pytest.mark.parametrize("averaging, local_steps", [("gradient", 1), ("model", 2)])
def test_weight_sharing_of_matrix_models_shares_feature_rows(averaging, local_steps,
                                                               global_random_seed):
    X, y, init = _multinomial_problem(_seed(global_random_seed, averaging))
    shared = [0, 2]
    init = tie_shared(init, shared, matrix=True)
    kw = dict(n_iter=5, loss="multinomial", l2=0.01, averaging=averaging, local_steps=local_steps)
    res = ifca(X, y, init, 0.3, trace=True, shared=shared, **kw)
    ref = naive_ifca(X, y, init, 0.3, shared=shared, **kw)
    assert_matches_naive(res, ref)
    th = res.theta[:, :, shared, :]  # (R, k, 2, C): rows 0 and 2 of every model equal
    assert_array_equal(th, np.broadcast_to(th[:, :1], th.shape))


def test_no_shared_coordinate_is_plain_ifca_bit_for_bit(make_problem):
    X, y, init, lr, kw = grid_case(_seed("none"), "logistic", False, "gradient", "all", make_problem)
    plain = ifca(X, y, init, lr, **kw)
    for none in ([], np.zeros(X.shape[2], dtype=bool)):
        res = ifca(X, y, init, lr, shared=none, **kw)
        assert_array_equal(res.theta, plain.theta)
        assert_array_equal(res.labels, plain.labels)


@pytest.mark.parametrize("averaging", ["gradient", "model3"])
def test_every_coordinate_shared_is_one_global_model(averaging, make_problem):
    """All coordinates shared: the k models are one model trained on every machine, i.e. IFCA with
    k = 1 (gradient averaging over all machines, or FedAvg)."""
    X, y, init, lr, kw = grid_case(_seed("all", averaging), "huber", False, averaging, "mask",
                                   make_problem)
    d = X.shape[2]
    init = tie_shared(init, np.arange(d))
    res = ifca(X, y, init, lr, shared=np.ones(d, dtype=bool), **kw)
    one = ifca(X, y, init[:, :1], lr, **kw)
    for j in range(init.shape[1]):
        assert_allclose(res.theta[:, j], one.theta[:, 0], rtol=1e-12, atol=1e-12)


def test_a_model_no_machine_chooses_still_moves_its_shared_part(make_problem):
    X, y, ts, _ = make_problem(np.random.default_rng(5), 10, 20, 4, 2, "squared")
    init = np.stack([ts, ts]).copy()
    init[:, 1, 1:] = 50.0  # model 1 is far off on its own coordinates: nobody chooses it
    init[:, :, 0] = 0.3  # the shared coordinate, tied
    for averaging in ("gradient", "model"):
        res = ifca(X, y, init, 0.05, n_iter=1, averaging=averaging, shared=[0], trace=True)
        assert np.all(res.trace.labels[0] == 0)
        assert res.theta[0, 1, 0] != 0.3 and res.theta[0, 1, 0] == res.theta[0, 0, 0]
        assert_array_equal(res.theta[0, 1, 1:], 50.0)  # its own part keeps its value
        ref = naive_ifca(X, y, init, 0.05, n_iter=1, averaging=averaging, shared=[0])
        assert_allclose(res.theta, ref["theta"], rtol=1e-12)


def test_early_stop_and_threads_with_sharing(make_problem):
    X, y, init, lr, kw = grid_case(_seed("stop"), "squared", False, "gradient", "all", make_problem)
    shared = [0]
    init = tie_shared(init, shared)
    kw.update(n_iter=200, early_stop=True, tol=1e-5, method="data")
    res = ifca(X, y, init, lr, shared=shared, **kw)
    ref = naive_ifca(X, y, init, lr, shared=shared, **_kw_for_naive(kw))
    assert_matches_naive(res, ref, trace=False)
    assert res.converged.any()
    one = ifca(X, y, init, lr, shared=shared, n_threads=1, **kw)
    assert_array_equal(one.theta, res.theta)


def test_recovers_clusters_that_differ_in_few_coordinates():
    """The reason to share: clusters equal on most coordinates. Sharing them pools every
    machine's rows there, so the shared part is estimated from m machines instead of m / k."""
    rng = np.random.default_rng(11)
    m, n, d, k = 40, 30, 20, 2
    base = rng.standard_normal(d)
    ts = np.stack([base, base])
    ts[0, :2] += 1.0
    ts[1, :2] -= 1.0
    labels = np.arange(m) % k
    X = rng.standard_normal((m, n, d))
    y = np.einsum("mnd,md->mn", X, ts[labels]) + 0.5 * rng.standard_normal((m, n))
    init = tie_shared(ts + 0.3 * rng.standard_normal((4, k, d)), np.arange(2, d))
    res = ifca(X, y, init, 0.5, n_iter=200, shared=np.arange(2, d))
    plain = ifca(X, y, init, 0.5, n_iter=200)
    err_s = np.linalg.norm(res.theta - ts, axis=2).mean()
    err_p = np.linalg.norm(plain.theta - ts, axis=2).mean()
    assert np.all(mlr.adjusted_rand(res.labels[0], labels) == 1.0)
    assert err_s < err_p


@pytest.mark.parametrize("shared, match", [
    ([0, 0], "distinct"), ([5], r"\[0, 3\], got 5"), ([-1], "got -1"),
    (np.ones(3, dtype=bool), r"shape \(4,\)"), ([[0, 1]], "shape"), ([0.5], "float"),
])
def test_bad_shared_is_refused_naming_it(shared, match, make_problem):
    X, y, ts, _ = make_problem(np.random.default_rng(1), 6, 10, 4, 2, "squared")
    with pytest.raises(ValueError, match="shared") as err:
        ifca(X, y, np.zeros((2, 4)), 0.1, n_iter=2, shared=shared)
    assert err.match(match)


def test_untied_init_and_the_gram_path_are_refused(make_problem):
    X, y, ts, _ = make_problem(np.random.default_rng(2), 6, 10, 4, 2, "squared")
    with pytest.raises(ValueError, match=r"init: .*shared.*run 0 model 1.*tie_shared"):
        ifca(X, y, ts, 0.1, n_iter=2, shared=[1])
    with pytest.raises(ValueError, match="method='gram' does not take shared"):
        ifca(X, y, tie_shared(ts, [1]), 0.1, n_iter=2, shared=[1], method="gram")
    res = ifca(X, y, tie_shared(ts, [1]), 0.1, n_iter=2, shared=[1])
    assert res.method in ("data", "stats")


def test_tie_shared_averages_only_the_shared_coordinates():
    rng = np.random.default_rng(3)
    init = rng.standard_normal((3, 2, 5))
    out = tie_shared(init, [1, 4])
    assert_allclose(out[:, :, [1, 4]], np.broadcast_to(init[:, :, [1, 4]].mean(axis=1, keepdims=True),
                                                        (3, 2, 2)))
    assert_array_equal(out[:, :, [0, 2, 3]], init[:, :, [0, 2, 3]])
    assert_array_equal(tie_shared(init[0], [1, 4]), out[0])  # one run (k, d)
    W = rng.standard_normal((2, 5, 3))  # one run of matrix models (k, d, C)
    tw = tie_shared(W, [0], matrix=True)
    assert_allclose(tw[:, 0], np.broadcast_to(W[:, 0].mean(axis=0), (2, 3)))
    with pytest.raises(ValueError, match="init must have shape"):
        tie_shared(np.zeros(5), [0])


@pytest.mark.parametrize("loss, avg", [("squared", "gradient"), ("logistic", "model3"),
                                       ("huber", "gradient")])
@pytest.mark.parametrize("part", ["all", "mask"])
def test_jax_backend_shares_the_same_way(loss, avg, part, make_problem, global_random_seed):
    pytest.importorskip("jax")
    seed = _seed("jax", global_random_seed, loss, avg, part)
    X, y, init, lr, kw = grid_case(seed, loss, False, avg, part, make_problem)
    shared = _shared_of(seed, X.shape[2])
    init = tie_shared(init, shared)
    res = ifca(X, y, init, lr, trace=True, shared=shared, kernel="jax", **kw)
    ref = naive_ifca(X, y, init, lr, shared=shared, **_kw_for_naive(kw))
    assert res.method == "jax"
    assert_matches_naive(res, ref)


def test_the_estimator_ties_its_starts_and_counts_shared_parameters_once():
    rng = np.random.default_rng(4)
    m, n, d = 30, 40, 6
    ts = np.tile(rng.standard_normal(d), (2, 1))
    ts[0, 0], ts[1, 0] = 2.0, -2.0
    labels = np.arange(m) % 2
    X = rng.standard_normal((m, n, d))
    y = np.einsum("mnd,md->mn", X, ts[labels]) + 0.1 * rng.standard_normal((m, n))
    shared = np.arange(1, d)
    est = mlr.IFCA(n_clusters=2, lr=[0.3], n_init=4, n_iter=150, init="gaussian", random_state=0,
                   shared=shared).fit(X, y)
    assert_array_equal(est.coef_[0, shared], est.coef_[1, shared])
    assert mlr.adjusted_rand(est.labels_, labels) == 1.0
    plain = mlr.IFCA(n_clusters=2, lr=[0.3], n_init=4, n_iter=150, init="gaussian",
                     random_state=0).fit(X, y)
    assert est._n_parameters() == 2 * 1 + 5 + 1 + 1 and plain._n_parameters() == 2 * 6 + 1 + 1
    # same log-likelihood scale, fewer parameters: the shared fit's penalty is smaller
    ll_s, _ = est._log_likelihood(X, y)
    assert est.bic(X, y) == pytest.approx(-2 * ll_s + est._n_parameters() * np.log(m))
    with pytest.raises(ValueError, match="init: .*shared"):
        mlr.IFCA(n_clusters=2, init=rng.standard_normal((2, d)), shared=shared).fit(X, y)
