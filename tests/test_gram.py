"""The certified-Gram path (``ifca(method="gram")``) against ``naive.naive_ifca`` and the direct path.

Tolerances: float64 against the reference, rtol 1e-10 as in test_kernel.py (the Gram path sums
``A_j theta - b_j`` where the reference sums per-row gradients: the same arithmetic in another
order). Integer outputs and flags must be equal. Every test that claims to exercise the
certified or Gram steps also asserts, from ``res.path_stats``, that such steps happened, so that
none of them can pass by silently falling back to full iterations.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from naive import naive_assign, naive_ifca, naive_loss_table
from test_kernel import RTOL32, assert_matches_naive

from mixlinreg import _numerics, ifca
from mixlinreg._gram import (
    _anchor_dist,
    _certify,
    _model_norms,
    _refresh_bounds,
    machine_norms,
)

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


def _problem(seed, m=12, n=20, d=5, k=2, R=4, C=None, sep=2.0, sigma=0.3, near=0.4):
    from conftest import make_mixture

    rng = np.random.default_rng(seed)
    X, y, ts, _ = make_mixture(rng, m, n, d, k, "squared", n_variants=C, sep=sep, sigma=sigma)
    centre = ts if C is None else ts[0]
    init = centre + near * rng.standard_normal((R, k, d))
    lr = rng.uniform(0.05, 0.3, size=R)
    return X, y, ts, init, lr


@pytest.fixture(params=["gram", "assigned"])
def prefer(request, monkeypatch):
    """Run each test once preferring Gram steps and once preferring assigned-only steps."""
    monkeypatch.setattr(_numerics, "GRAM_FLOP_PER_BYTE", 0.0 if request.param == "gram" else 1e12)
    return request.param


def _check_steps(res, prefer):
    st = res.path_stats
    assert res.method == "gram"
    assert st["full_iterations"] > 0
    if prefer == "gram":
        assert st["gram_iterations"] > 0 and st["grams_built"] > 0
    else:
        assert st["assigned_iterations"] > 0 and st["gram_iterations"] == 0


@pytest.mark.parametrize("l2", [0.0, 0.2])
@pytest.mark.parametrize("early_stop", [False, True])
def test_gram_equals_naive_float64(l2, early_stop, prefer, global_random_seed):
    X, y, ts, init, lr = _problem(global_random_seed)
    kw = dict(n_iter=60, l2=l2, early_stop=early_stop, tol=1e-3)
    res = ifca(X, y, init, lr, method="gram", **kw)
    ref = naive_ifca(X, y, init, lr, **kw)
    assert_matches_naive(res, ref, trace=False)
    _check_steps(res, prefer)
    if early_stop:
        assert res.converged.any()


def test_gram_y_variants_equal_naive(prefer, global_random_seed):
    X, Y, ts, init, lr = _problem(global_random_seed, C=3, R=6)
    yidx = np.array([0, 1, 2, 0, 1, 2])
    res = ifca(X, Y, init, lr, y_index=yidx, n_iter=20, method="gram")
    _check_steps(res, prefer)
    for r in range(init.shape[0]):
        ref = naive_ifca(X, Y[yidx[r]], init[r:r + 1], lr[r:r + 1], n_iter=20)
        np.testing.assert_allclose(res.theta[r], ref["theta"][0], rtol=1e-10,
                                   atol=1e-10 * np.abs(ref["theta"]).max())
        assert_array_equal(res.labels[r], ref["labels"][0])


def test_gram_trace_is_exact(global_random_seed):
    """With a trace every loss is needed every iteration: all steps are full, and equal naive."""
    X, y, ts, init, lr = _problem(global_random_seed)
    res = ifca(X, y, init, lr, n_iter=15, method="gram", trace=True, theta_star=ts)
    ref = naive_ifca(X, y, init, lr, n_iter=15, theta_star=ts)
    assert_matches_naive(res, ref)
    assert res.path_stats["full_iterations"] == 15 * init.shape[0]


def _late_switch_problem():
    """A run whose partition holds for many iterations, then changes (found by a seed search).

    Cluster 1 is small (2 of 12 machines) and starts closer to model 0, which the big cluster
    pulls away from it; the small cluster's machines switch to model 1 only late.
    """
    rng = np.random.default_rng(3)
    m, n, d = 12, 30, 4
    X = rng.standard_normal((m, n, d))
    ts = np.array([[2.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    cl = np.array([0] * 10 + [1] * 2)
    y = np.einsum("ind,id->in", X, ts[cl]) + 0.1 * rng.standard_normal((m, n))
    init = np.array([[[0.2, 0.9, 0.0, 0.0], [-1.5, 1.0, 0.0, 0.0]]])
    return X, y, ts, init, np.array([0.05])


def test_gram_partition_changes_after_a_quiet_phase(prefer):
    X, y, ts, init, lr = _late_switch_problem()
    T = 60
    ref = naive_ifca(X, y, init, lr, n_iter=T)
    labels = ref["trace_labels"][:T, 0]
    changes = np.flatnonzero((labels[1:] != labels[:-1]).any(axis=1)) + 1
    # the construction must really have a late change after a long quiet phase
    assert changes.size and changes[-1] >= 10 and np.diff(np.r_[0, changes]).max() >= 8
    res = ifca(X, y, init, lr, n_iter=T, method="gram")
    assert_matches_naive(res, ref, trace=False)
    _check_steps(res, prefer)


def test_gram_identical_models_and_divergence(global_random_seed):
    X, y, ts, init, lr = _problem(global_random_seed, R=4)
    init[0, 1] = init[0, 0]  # bitwise identical models: ties to the lowest index
    lr[1] = 40.0  # diverges
    res = ifca(X, y, init, lr, n_iter=20, method="gram")
    ref = naive_ifca(X, y, init, lr, n_iter=20)
    assert ref["diverged"][1] and not ref["diverged"][[0, 2, 3]].any()
    assert_matches_naive(res, ref, trace=False)


def test_gram_memory_for_exactly_k_grams_equals_naive(global_random_seed, monkeypatch):
    monkeypatch.setattr(_numerics, "GRAM_FLOP_PER_BYTE", 0.0)
    X, y, ts, init, lr = _problem(global_random_seed, R=6)
    d, k = X.shape[2], init.shape[1]
    res = ifca(X, y, init, lr, n_iter=25, method="gram", gram_memory=8 * d * d * k)
    assert res.path_stats["gram_slots"] == k
    ref = naive_ifca(X, y, init, lr, n_iter=25)
    assert_matches_naive(res, ref, trace=False)


def test_gram_threads_do_not_change_results(global_random_seed):
    X, y, ts, init, lr = _problem(global_random_seed, R=6)
    a = ifca(X, y, init, lr, n_iter=25, method="gram", n_threads=1)
    b = ifca(X, y, init, lr, n_iter=25, method="gram")
    assert_array_equal(a.theta, b.theta)
    assert_array_equal(a.labels, b.labels)
    assert a.path_stats["gram_iterations"] == b.path_stats["gram_iterations"]


def test_gram_float32_close_to_direct_path(prefer, global_random_seed):
    X, y, ts, init, lr = _problem(global_random_seed, m=16, n=40, d=8, R=6)
    X32, y32, init32 = (a.astype(np.float32) for a in (X, y, init))
    g = ifca(X32, y32, init32, lr, n_iter=40, method="gram")
    dp = ifca(X32, y32, init32, lr, n_iter=40, method="data")
    _check_steps(g, prefer)
    assert g.theta.dtype == np.float32
    assert_array_equal(g.labels, dp.labels)
    np.testing.assert_allclose(g.theta, dp.theta, rtol=RTOL32, atol=RTOL32 * np.abs(dp.theta).max())


def test_auto_picks_gram_only_where_it_pays(make_problem):
    X, y, ts, _ = make_problem(0, 60, 100, 100, 2, "squared")
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    init = np.zeros((30, 2, 100), dtype=np.float32)  # 2 R m n d (k + 1) = 1.08e8 flop
    assert ifca(X32, y32, init, 0.1, n_iter=2).method == "gram"
    assert ifca(X32, y32, init, 0.1, n_iter=2, trace=True).method == "data"
    assert ifca(X32, y32, init[:1], 0.1, n_iter=2).method == "data"  # too small to pay
    assert ifca(X32, y32, init, 0.1, n_iter=2, gram_memory=0).method == "data"
    assert ifca(X, y, init, 0.1, n_iter=2).method == "stats"  # float64 with n > d


@pytest.mark.parametrize("kw, match", [
    (dict(loss="huber"), "method='gram' needs"),
    (dict(resample=True), "method='gram' needs"),
    (dict(averaging="model"), "method='gram' needs"),
    (dict(participation=3), "method='gram' needs"),
    (dict(gram_memory=10), "gram_memory >= 8 d"),
    (dict(gram_memory=-1), "gram_memory"),
])
def test_gram_refuses_what_it_cannot_do(kw, match, make_problem):
    X, y, ts, _ = make_problem(0, 6, 12, 3, 2, "squared")
    with pytest.raises(ValueError, match=match):
        ifca(X, y, np.zeros((2, 3)), 0.1, n_iter=2, method="gram", **kw)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_certificates_are_sound(dtype, global_random_seed):
    """Whenever the bounds certify a run, the exact argmin at the moved models is unchanged.

    Bounds are set from the exact losses at theta, the models are moved by random steps of many
    sizes (from far inside the margin to far beyond it, and towards near ties), the bounds are
    widened by the distance from the anchor (the models at the evaluation), and the certificate is
    compared with an exact evaluation.
    """
    rng = np.random.default_rng(global_random_seed)
    m, n, d, k, R = 10, 15, 6, 3, 400
    X = rng.standard_normal((m, n, d)).astype(dtype)
    ts = rng.standard_normal((k, d))
    y = (np.einsum("ind,id->in", X, ts[np.arange(m) % k])
         + 0.3 * rng.standard_normal((m, n))).astype(dtype)
    theta = (ts + 0.3 * rng.standard_normal((R, k, d))).astype(dtype)
    l2 = 0.1
    asg = np.empty((R, m), dtype=np.int64)
    lall = np.empty((R, m, k))
    for r in range(R):
        L = naive_loss_table(theta[r], X, y, np.arange(n), "squared", 0.0, 1.0)
        lall[r] = L
        asg[r] = naive_assign(L + 0.5 * l2 * (theta[r].astype(np.float64) ** 2).sum(axis=1))[0]
    s, fro = machine_norms(X)
    u = np.finfo(dtype).eps / 2
    gamma = 2.0 * d * u / (1.0 - d * u)
    act = np.arange(R, dtype=np.int64)
    norms = np.empty((R, k))
    U = np.empty((R, m))
    Lo = np.empty((R, m, k))
    _model_norms(act, R, theta, norms)
    _refresh_bounds(act, R, norms, asg, lall, n, fro, gamma, U, Lo)
    scale = np.logspace(-4, 0.5, R)[:, None, None]  # from tiny to large moves
    moved = (theta + scale * rng.standard_normal((R, k, d))).astype(dtype)
    dist = np.empty((R, k))
    _anchor_dist(act, R, moved, theta, dist)
    np.testing.assert_allclose(
        dist, np.linalg.norm(moved.astype(np.float64) - theta.astype(np.float64), axis=2),
        rtol=1e-11)
    ok = np.zeros(R, dtype=np.bool_)
    _model_norms(act, R, moved, norms)
    _certify(act, R, norms, asg, U, Lo, s, dist, fro, gamma, _numerics.CERT_REL_MARGIN, l2, n, ok)
    # the exact evaluation at the moved models, by the kernel's own loss code (working dtype)
    ev = ifca(X, y, moved, 1.0, n_iter=0, l2=l2, method="data")
    assert ok.sum() > R // 4 and (~ok).sum() > R // 4  # both outcomes really occur
    assert_array_equal(ev.labels[ok], asg[ok])


def test_composed_grams_equal_direct_sums(global_random_seed):
    """Grams composed from cached ones (sums, complements, corrections) equal the direct sums.

    The sequence builds the whole set, three of four blocks (the fourth is then the whole set
    minus the others), unions of blocks, and a block with two machines swapped, and asserts from
    the cache's counters that composition (not a direct build) made the later ones.
    """
    from mixlinreg._gram import _GramCache

    rng = np.random.default_rng(global_random_seed)
    m, n, d = 16, 7, 5
    X = rng.standard_normal((m, n, d))
    cache = _GramCache(X, budget_bytes=10**9, max_slots=32)
    block = np.arange(m) // 4
    swapped = block == 1
    swapped[[0, 4]] = ~swapped[[0, 4]]
    masks = [np.ones(m, bool)] + [block == b for b in range(4)] + [
        (block == 0) | (block == 2), block != 3, swapped]
    for mask in masks:
        slot = cache.acquire(mask)
        want = np.einsum("mnp,mnq->pq", X[mask], X[mask])
        np.testing.assert_allclose(cache.grams[slot], want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
        assert cache.size[slot] == mask.sum()
    # direct: the whole set and blocks 0-2 (16 + 3 * 4 machines); block 3 (the whole set minus
    # blocks 0-2) and the unions composed without data; the swapped block from block 1 corrected
    # by its 2 machines
    assert cache.built == len(masks)
    assert cache.composed == len(masks) - 4
    assert cache.machines_built == 16 + 3 * 4 + 0 + 0 + 0 + 2
