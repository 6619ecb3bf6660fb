"""Tests of mixlinreg.metrics: hand-made cases with known answers, batch vs loop, the two matching
paths against each other, NaN handling, the success rules at their boundary and every input error."""

from __future__ import annotations

import doctest
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics import adjusted_rand_score

from mixlinreg import metrics
from mixlinreg.metrics import (
    adjusted_rand,
    cluster_accuracy,
    dist_matched,
    dist_matched_from_matrix,
    dist_nearest,
    dist_nearest_from_matrix,
    misclassification_rate,
    pairwise_dist,
    success_authors,
    success_text,
)

# The two matching paths add the same k float64 numbers in a different order (and over the
# transposed matrix when k1 > k2): they agree to a few ulps, so 1e-12 relative leaves ample room.
RTOL_PATHS = 1e-12


def brute_matched(D):
    """Slow reference: the smallest mean over all injective matchings of the smaller side."""
    D = np.asarray(D, dtype=float)
    if D.shape[0] > D.shape[1]:
        D = D.T
    ks, kb = D.shape
    best = min(sum(D[i, p[i]] for i in range(ks)) for p in itertools.permutations(range(kb), ks))
    return best / ks


def brute_accuracy(true, pred):
    """Slow reference: best accuracy over all injective relabelings (small label sets only)."""
    tv, pv = sorted(set(true)), sorted(set(pred))
    best = 0
    if len(pv) <= len(tv):
        for img in itertools.permutations(tv, len(pv)):
            mapping = dict(zip(pv, img))
            best = max(best, sum(mapping[p] == t for t, p in zip(true, pred)))
    else:
        for img in itertools.permutations(pv, len(tv)):
            mapping = dict(zip(tv, img))
            best = max(best, sum(mapping[t] == p for t, p in zip(true, pred)))
    return best / len(true)


THETA_STAR = np.array([[0.0, 0.0], [2.0, 0.0]])


# --------------------------------------------------------------------------------------------------
# pairwise_dist


def test_pairwise_dist_hand_values():
    D = pairwise_dist([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    assert_allclose(D, [[0.0, 3.0, 4.0], [5.0, 4.0, 3.0]], rtol=0, atol=1e-15)
    assert D.dtype == np.float64


def test_pairwise_dist_batch_broadcast(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    theta = rng.standard_normal((3, 5, 4, 7)).astype(np.float32)
    star = rng.standard_normal((3, 7))
    D = pairwise_dist(theta, star)
    assert D.shape == (3, 5, 4, 3)
    for a, b in np.ndindex(3, 5):
        ref = np.linalg.norm(theta[a, b].astype(float)[:, None, :] - star[None], axis=-1)
        # float32 inputs are cast exactly to float64; only summation order differs
        assert_allclose(D[a, b], ref, rtol=1e-12)
    # a batch of truths, one per leading index
    stars = rng.standard_normal((3, 1, 2, 7))
    D = pairwise_dist(theta, stars)
    assert D.shape == (3, 5, 4, 2)
    assert_allclose(D[2, 4], pairwise_dist(theta[2, 4], stars[2, 0]), rtol=1e-12)


def test_pairwise_dist_nonfinite_gives_nan_rows_only():
    theta = np.array([[np.nan, 0.0], [1.0, 0.0], [np.inf, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D = pairwise_dist(theta, [[0.0, 0.0], [0.0, -np.inf]])
    assert np.isnan(D[0]).all() and np.isnan(D[2]).all()
    assert D[1, 0] == 1.0 and np.isnan(D[1, 1])


# --------------------------------------------------------------------------------------------------
# dist_matched / dist_nearest: hand-made cases


def test_swapped_models_are_at_distance_zero():
    theta = THETA_STAR[::-1]
    assert dist_matched(theta, THETA_STAR) == 0.0
    assert dist_nearest(theta, THETA_STAR) == 0.0


def test_two_models_on_one_truth():
    # both models on theta*_0 = (0, 0): nearest-truth distance 0; the matching must send one of
    # them to theta*_1 = (2, 0): (0 + 2) / 2 = 1
    theta = np.zeros((2, 2))
    assert dist_nearest(theta, THETA_STAR) == 0.0
    assert dist_matched(theta, THETA_STAR) == 1.0
    # slightly off: (0.5, 0) twice -> nearest (0.5 + 0.5) / 2, matched (0.5 + 1.5) / 2
    theta = np.array([[0.5, 0.0], [0.5, 0.0]])
    assert dist_nearest(theta, THETA_STAR) == 0.5
    assert dist_matched(theta, THETA_STAR) == 1.0


def test_hand_value_three_models():
    star = np.array([[0.0], [10.0], [20.0]])
    theta = np.array([[11.0], [1.0], [17.0]])  # best matching: 1->0, 0->1, 2->2
    assert dist_matched(theta, star) == pytest.approx((1 + 1 + 3) / 3, rel=1e-15)
    assert dist_nearest(theta, star) == pytest.approx((1 + 1 + 3) / 3, rel=1e-15)
    theta = np.array([[1.0], [2.0], [19.0]])  # nearest: 1, 2, 1; matched: 1->0, 2->10, 19->20
    assert dist_nearest(theta, star) == pytest.approx(4 / 3, rel=1e-15)
    assert dist_matched(theta, star) == pytest.approx((1 + 8 + 1) / 3, rel=1e-15)


def test_misspecified_k_matches_min_pairs():
    star = np.array([[0.0], [10.0]])
    # k1 = 3 > k2 = 2: the far model (50) stays unmatched; mean over the 2 matched pairs
    assert dist_matched([[1.0], [9.0], [50.0]], star) == 1.0
    # k1 = 1 < k2 = 2: one pair, the truth at 10 is ignored
    assert dist_matched([[1.0]], star) == 1.0
    # nearest: the surplus model counts (mean over the 3 models)
    assert dist_nearest([[1.0], [9.0], [50.0]], star) == pytest.approx((1 + 1 + 40) / 3)


def test_return_types():
    assert isinstance(dist_matched(THETA_STAR, THETA_STAR), float)
    assert isinstance(dist_nearest(THETA_STAR, THETA_STAR), float)
    out = dist_matched(np.stack([THETA_STAR] * 3), THETA_STAR)
    assert isinstance(out, np.ndarray) and out.shape == (3,)


# --------------------------------------------------------------------------------------------------
# batch vs loop, from_matrix vs direct


def test_batch_equals_loop(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    theta = rng.standard_normal((4, 6, 3, 5))
    star = rng.standard_normal((3, 5))
    matched = dist_matched(theta, star)
    nearest = dist_nearest(theta, star)
    assert matched.shape == nearest.shape == (4, 6)
    for a, b in np.ndindex(4, 6):
        assert matched[a, b] == dist_matched(theta[a, b], star)
        assert nearest[a, b] == dist_nearest(theta[a, b], star)
    assert np.all(nearest <= matched + 1e-12)  # the matching can only increase the distance


def test_from_matrix_equals_direct(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    theta = rng.standard_normal((10, 4, 6))
    star = rng.standard_normal((4, 6))
    D = pairwise_dist(theta, star)
    assert_array_equal(dist_matched_from_matrix(D), dist_matched(theta, star))
    assert_array_equal(dist_nearest_from_matrix(D), dist_nearest(theta, star))
    for r in range(10):
        assert dist_matched(theta[r], star) == pytest.approx(brute_matched(D[r]), rel=RTOL_PATHS)


def test_trace_shaped_input():
    # a kernel trace (T, R, k, k) of 10^4 small matrices goes through the vectorized path
    D = np.random.default_rng(0).random((500, 20, 4, 4))
    out = dist_matched_from_matrix(D)
    assert out.shape == (500, 20)
    assert_allclose(out[::50, ::7], dist_matched_from_matrix(D[::50, ::7], method="assignment"),
                    rtol=RTOL_PATHS)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda k1: st.integers(1, 6).flatmap(
            lambda k2: hnp.arrays(
                np.float64,
                st.tuples(st.integers(0, 5), st.just(k1), st.just(k2)),
                elements=st.floats(0.0, 100.0, allow_nan=False, allow_infinity=False),
            )
        )
    )
)
def test_permutation_path_equals_assignment_path(D):
    perm = dist_matched_from_matrix(D, method="permutations")
    lsa = dist_matched_from_matrix(D, method="assignment")
    auto = dist_matched_from_matrix(D)
    assert_allclose(perm, lsa, rtol=RTOL_PATHS, atol=1e-13)
    # auto enumerates matchings for max(k1, k2) <= 5 and calls linear_sum_assignment above
    assert_array_equal(auto, perm if max(D.shape[1:]) <= 5 else lsa)
    for b in range(len(D)):
        assert_allclose(lsa[b], brute_matched(D[b]), rtol=RTOL_PATHS, atol=1e-13)


def test_large_k_uses_assignment(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    D = rng.random((3, 6, 8))
    auto = dist_matched_from_matrix(D)
    assert_array_equal(auto, dist_matched_from_matrix(D, method="assignment"))
    assert_allclose(auto, dist_matched_from_matrix(D, method="permutations"), rtol=RTOL_PATHS)


# --------------------------------------------------------------------------------------------------
# NaN handling


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_parameters_give_nan_not_exceptions(bad):
    theta = np.stack([THETA_STAR[::-1], THETA_STAR.copy(), THETA_STAR.copy()])
    theta[1, 0, 1] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("permutations", "assignment"):
            out = dist_matched(theta, THETA_STAR, method=method)
            assert out[0] == 0.0 and np.isnan(out[1]) and out[2] == 0.0
        out = dist_nearest(theta, THETA_STAR)
        assert out[0] == 0.0 and np.isnan(out[1]) and out[2] == 0.0
        assert np.isnan(dist_matched(theta[1], THETA_STAR))
        assert np.isnan(dist_nearest(theta[1], THETA_STAR))
        star = THETA_STAR.copy()
        star[1, 0] = bad
        assert np.isnan(dist_matched(THETA_STAR, star))
        assert np.isnan(dist_nearest(THETA_STAR, star))


def test_from_matrix_any_nonfinite_entry_gives_nan():
    D = np.zeros((2, 3, 3))
    D[1, 2, 0] = np.inf  # an entry that the optimal matching would not even use
    for method in ("permutations", "assignment"):
        assert_array_equal(np.isnan(dist_matched_from_matrix(D, method=method)), [False, True])
    assert_array_equal(np.isnan(dist_nearest_from_matrix(D)), [False, True])


# --------------------------------------------------------------------------------------------------
# cluster_accuracy, adjusted_rand


def test_cluster_accuracy_hand_values():
    assert cluster_accuracy([0, 0, 1, 1], [5, 5, 2, 5]) == 0.75
    assert cluster_accuracy([0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0]) == 1.0
    # predicted has more clusters than the truth: the best matching 7->0, 8->1 leaves 9 unmatched
    assert cluster_accuracy([0, 0, 0, 1, 1, 1], [7, 7, 9, 8, 8, 8]) == pytest.approx(5 / 6)
    # predicted has fewer clusters: everything in one cluster matches one true cluster only
    assert cluster_accuracy([0, 0, 1, 1, 2, 2], [3, 3, 3, 3, 3, 3]) == pytest.approx(2 / 6)


def test_cluster_accuracy_invariant_to_relabeling(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    true = rng.integers(0, 4, size=30)
    pred = rng.integers(0, 5, size=30)
    base = cluster_accuracy(true, pred)
    assert base == pytest.approx(brute_accuracy(list(true), list(pred)))
    relabel_pred = np.array([-3, 17, 2, 99, 5])[rng.permutation(5)]
    relabel_true = np.array([40, -1, 8, 6])[rng.permutation(4)]
    assert cluster_accuracy(relabel_true[true], relabel_pred[pred]) == base
    assert cluster_accuracy(pred, true) == base  # symmetric


def test_cluster_accuracy_and_ari_batch(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    true = np.repeat(np.arange(3), 8)
    pred = rng.integers(0, 3, size=(5, 24))
    acc = cluster_accuracy(true, pred)
    ari = adjusted_rand(true, pred)
    assert acc.shape == ari.shape == (5,)
    for r in range(5):
        assert acc[r] == cluster_accuracy(true, pred[r])
        assert ari[r] == adjusted_rand_score(true, pred[r])
    assert isinstance(adjusted_rand(true, pred[0]), float)
    assert adjusted_rand([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0


# --------------------------------------------------------------------------------------------------
# misclassification_rate


def test_misclassification_model_swap_is_not_an_error():
    star = np.array([[0.0], [1.0]])
    theta = np.array([[1.0], [0.0]])  # model 0 estimates theta*_1 and model 1 estimates theta*_0
    true = np.array([0, 0, 1, 1])
    assert misclassification_rate(true, [1, 1, 0, 0], theta, star) == 0.0
    assert misclassification_rate(true, [1, 1, 0, 1], theta, star) == 0.25
    # the same labels judged against unswapped models are all wrong
    assert misclassification_rate(true, [1, 1, 0, 0], star, star) == 1.0
    # without parameters: 1 - best relabeling accuracy
    assert misclassification_rate(true, [1, 1, 0, 1]) == 0.25


def test_misclassification_differs_from_relabeling_when_parameters_given():
    # labels that are a perfect partition but attached to the wrong models count as wrong
    star = np.array([[0.0], [10.0], [20.0]])
    theta = np.array([[0.5], [9.0], [21.0]])
    true = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([1, 1, 0, 0, 2, 2])
    assert misclassification_rate(true, pred) == 0.0
    assert misclassification_rate(true, pred, theta, star) == pytest.approx(4 / 6)


def test_misclassification_misspecified_k():
    star = np.array([[0.0], [10.0]])
    true = np.array([0, 0, 1, 1])
    # one model matched to theta*_0: machines of cluster 1 are all wrong
    assert misclassification_rate(true, [0, 0, 0, 0], [[0.5]], star) == 0.5
    # a surplus model (index 2) is matched to nothing: machines assigned to it are wrong
    assert misclassification_rate(true, [0, 2, 1, 1], [[0.0], [10.0], [50.0]], star) == 0.25


def test_misclassification_batch_and_nan(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    star = rng.standard_normal((3, 4))
    theta = star[None] + 0.1 * rng.standard_normal((6, 3, 4))
    theta = np.stack([th[rng.permutation(3)] for th in theta])
    theta[4, 1, 2] = np.nan
    true = np.repeat(np.arange(3), 5)
    pred = rng.integers(0, 3, size=(6, 15))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = misclassification_rate(true, pred, theta, star)
    assert out.shape == (6,)
    assert np.isnan(out[4]) and np.isfinite(np.delete(out, 4)).all()
    for r in (0, 1, 2, 3, 5):
        assert out[r] == misclassification_rate(true, pred[r], theta[r], star)
        # reference: theta is a small perturbation of a permutation of star, so the matching sends
        # each truth to its nearest model
        model_of_truth = np.argmin(pairwise_dist(theta[r], star), axis=0)
        assert out[r] == np.mean(pred[r] != model_of_truth[true])
    batch = misclassification_rate(true, pred)
    assert_allclose(batch, 1.0 - cluster_accuracy(true, pred), rtol=0, atol=0)


# --------------------------------------------------------------------------------------------------
# success rules


def test_success_rules_at_the_boundary():
    sigma = 0.1
    at = 0.6 * sigma
    assert success_text(at, sigma) is True  # paper text: <=
    assert success_authors(at, sigma, plus=0.0) is False  # authors' code: strict <
    assert success_authors(at, sigma) is True  # + 0.001 slack (R-sigma panels)
    assert success_authors(at + 0.001, sigma) is False
    assert success_text(np.nextafter(at, 1.0), sigma) is False
    assert success_authors(np.nextafter(at, 0.0), sigma, plus=0.0) is True
    # sigma = 0 (noiseless panel): only an exact zero passes the text rule, none the strict one
    assert success_text(0.0, 0.0) is True and success_authors(0.0, 0.0, plus=0.0) is False


def test_success_rules_arrays_and_nan():
    vals = np.array([0.0, 0.05, 0.06, 0.0605, np.nan, np.inf])
    assert_array_equal(success_text(vals, 0.1), [True, True, True, False, False, False])
    assert_array_equal(success_authors(vals, 0.1), [True, True, True, True, False, False])
    assert_array_equal(success_authors(vals, 0.1, plus=0.0),
                       [True, True, False, False, False, False])
    # float32 distances are compared in float64: float32(0.06) is slightly below 0.06
    assert success_authors(np.float32(0.06), 0.1, plus=0.0) is True
    # sigma per row of a table
    assert_array_equal(success_text([0.06, 0.06], [0.1, 0.05]), [True, False])


# --------------------------------------------------------------------------------------------------
# input errors


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: pairwise_dist([1.0, 2.0], THETA_STAR), ValueError, r"^theta must have shape"),
        (lambda: pairwise_dist(np.zeros((0, 2)), THETA_STAR), ValueError, r"^theta must have shape"),
        (lambda: pairwise_dist(THETA_STAR, np.zeros((2, 3))), ValueError,
         r"^theta_star must have the same dimension"),
        (lambda: pairwise_dist(np.zeros((3, 2, 2)), np.zeros((4, 2, 2))), ValueError,
         r"theta and theta_star must broadcast"),
        (lambda: pairwise_dist([["a", "b"]], THETA_STAR), TypeError, r"^theta must be a numeric"),
        (lambda: pairwise_dist(THETA_STAR, THETA_STAR * 1j), TypeError, r"^theta_star must be real"),
        (lambda: dist_matched([0.0], THETA_STAR), ValueError, r"^theta must have shape"),
        (lambda: dist_nearest(THETA_STAR, [0.0]), ValueError, r"^theta_star must have shape"),
        (lambda: dist_matched_from_matrix([1.0]), ValueError, r"^D must have shape"),
        (lambda: dist_matched_from_matrix(np.zeros((2, 0))), ValueError, r"^D must have shape"),
        (lambda: dist_nearest_from_matrix(5.0), ValueError, r"^D must have shape"),
        (lambda: dist_matched_from_matrix(np.zeros((2, 2)), method="hungarian"), ValueError,
         r"^method must be one of"),
        (lambda: dist_matched_from_matrix(np.zeros((9, 9)), method="permutations"), ValueError,
         r"^method='permutations' needs max\(k1, k2\) <= 8"),
        (lambda: cluster_accuracy([0.0, 1.0], [0, 1]), TypeError, r"^labels_true must be an array"),
        (lambda: cluster_accuracy([0, 1], 1), ValueError, r"^labels_pred must have shape"),
        (lambda: cluster_accuracy([0, 1], []), ValueError, r"^labels_pred must have shape"),
        (lambda: cluster_accuracy([0, 1], [0, 1, 1]), ValueError,
         r"^labels_pred must have the same number of machines"),
        (lambda: adjusted_rand(np.zeros((2, 3), int), np.zeros((3, 3), int)), ValueError,
         r"labels_true and labels_pred must broadcast"),
        (lambda: adjusted_rand([0, 1], ["a", "b"]), TypeError, r"^labels_pred must be an array"),
        (lambda: misclassification_rate([0, 1], [0, 1], theta=THETA_STAR), ValueError,
         r"theta_star=None"),
        (lambda: misclassification_rate([0, 1], [0, 1], theta_star=THETA_STAR), ValueError,
         r"theta=None"),
        (lambda: misclassification_rate([0, 2], [0, 1], THETA_STAR, THETA_STAR), ValueError,
         r"^labels_true must index theta_star, with values in \[0, 1\], got values in \[0, 2\]"),
        (lambda: misclassification_rate([0, 1], [-1, 1], THETA_STAR, THETA_STAR), ValueError,
         r"^labels_pred must index theta, with values in \[0, 1\]"),
        (lambda: misclassification_rate([0, 1], [0, 1], [1.0, 2.0], THETA_STAR), ValueError,
         r"^theta must have shape"),
        (lambda: misclassification_rate(np.zeros((3, 2), int), np.zeros((2, 2), int),
                                        THETA_STAR, THETA_STAR), ValueError,
         r"labels_true, labels_pred and theta/theta_star must broadcast"),
        (lambda: success_authors(-0.1, 0.1), ValueError, r"^dist_nearest_values must be distances"),
        (lambda: success_text([0.1, -1.0], 0.1), ValueError,
         r"^dist_matched_values must be distances"),
        (lambda: success_text("x", 0.1), TypeError, r"^dist_matched_values must be a numeric"),
        (lambda: success_text(0.1, -0.1), ValueError, r"^sigma must be a finite number in \[0.0"),
        (lambda: success_authors(0.1, np.nan), ValueError, r"^sigma must be a finite number"),
        (lambda: success_authors(0.1, "0.1"), TypeError, r"^sigma must be a real number"),
        (lambda: success_text([0.1, 0.2], [0.1, -0.1]), ValueError, r"^sigma must be >= 0"),
        (lambda: success_text([0.1, 0.2], [0.1, 0.1, 0.1]), ValueError,
         r"^sigma must be a scalar or broadcast"),
        (lambda: success_authors(0.1, 0.1, plus=-0.001), ValueError, r"^plus must be a finite"),
        (lambda: success_authors(0.1, 0.1, plus=None), TypeError, r"^plus must be a real number"),
    ],
)
def test_input_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_docstring_examples_run():
    result = doctest.testmod(metrics, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
