"""Tests that kill the mutants which survived the suite (issue 25, class 10).

``probes/mutants.py`` applies one realistic mistake at a time to the code whose mistakes
would change results silently; each test here was written for a mutant that every earlier test
let through (its ID in the test's docstring; ``probes/mutation_results.md`` has the table).
They hold the rules at their edges: an exact tie, a value exactly at a threshold, a condition
that only one branch of a rule reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from naive import naive_ifca

import mixlinreg as mlr

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::mixlinreg.ConvergenceWarning")


def _same_as_naive(res, ref):
    for key in ("n_iter", "diverged", "converged", "labels"):
        assert_array_equal(getattr(res, key), ref[key], err_msg=key)


# ------------------------------------------------------------------------------ the kernel
def test_a_nan_loss_of_model_0_never_wins():
    """K02: model 0's loss is NaN on every machine (inf - inf in its forward pass): every machine
    picks model 1, whose loss is finite, and the training loss stays finite."""
    X = np.array([[[2.0, -2.0], [1.0, 0.5]], [[2.0, -2.0], [0.5, 1.0]]])
    y = np.array([[0.0, 1.0], [1.0, 0.0]])
    init = np.array([[[1e308, 1e308], [0.0, 0.0]]])
    kw = dict(n_iter=2, diverge_threshold=1.7e308)
    res = mlr.ifca(X, y, init, 0.1, trace=True, method="data", **kw)
    assert_array_equal(res.trace.labels[0], [[1, 1]])
    assert not res.diverged[0] and np.isfinite(res.loss[0])
    _same_as_naive(res, naive_ifca(X, y, init, 0.1, **kw))


@pytest.mark.parametrize("method", ["data", "stats"])
def test_early_stop_at_a_step_exactly_tol(method):
    """K14: a run that starts at its exact least-squares solution takes steps of exactly 0, so
    with ``tol=0`` it stops at the first iteration allowed (the second)."""
    X = np.ones((1, 2, 1))
    y = np.ones((1, 2))
    init = np.ones((1, 1, 1))
    kw = dict(n_iter=5, early_stop=True, tol=0.0)
    res = mlr.ifca(X, y, init, 0.1, method=method, **kw)
    assert res.converged[0] and res.n_iter[0] == 2
    _same_as_naive(res, naive_ifca(X, y, init, 0.1, **kw))


def test_early_stop_waits_for_unchanged_assignments():
    """K15: with a huge ``tol`` every step is small enough, so the stop is decided by the
    assignments alone: here machine 0 moves to model 1 at iteration 1, so the run stops at the
    first iteration whose assignments equal the previous ones (the third), not the second."""
    X = np.ones((4, 1, 1))
    y = np.array([[2.5], [1.1], [0.2], [0.1]])
    init = np.array([[[3.3], [3.7]]])
    kw = dict(n_iter=6, early_stop=True, tol=1e6)
    res = mlr.ifca(X, y, init, 1.0, trace=True, method="data", **kw)
    assert_array_equal(res.trace.labels[:3, 0], [[0, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])
    assert res.converged[0] and res.n_iter[0] == 3
    _same_as_naive(res, naive_ifca(X, y, init, 1.0, **kw))


def test_a_parameter_exactly_at_the_threshold_has_not_diverged():
    """K18: one step takes theta from 0 to exactly 1.0 (x = y = 1, lr = 1/2) and stays there;
    ``diverge_threshold=1.0``: a run diverges when an entry EXCEEDS the threshold."""
    X = np.ones((1, 1, 1))
    y = np.ones((1, 1))
    init = np.zeros((1, 1, 1))
    kw = dict(n_iter=3, diverge_threshold=1.0)
    res = mlr.ifca(X, y, init, 0.5, method="data", **kw)
    assert res.theta[0, 0, 0] == 1.0
    assert not res.diverged[0] and res.n_iter[0] == 3
    _same_as_naive(res, naive_ifca(X, y, init, 0.5, **kw))


def test_an_infinite_training_loss_is_divergence():
    """K19: x = 1e100, so (x theta)^2 overflows to +inf (not NaN) while theta is near 1e54, far
    below the threshold: the run is flagged diverged at that iteration, before its parameters
    would exceed the threshold."""
    X = np.full((1, 1, 1), 1e100)
    y = np.zeros((1, 1))
    init = np.ones((1, 1, 1))
    kw = dict(n_iter=30, diverge_threshold=1e300)
    res = mlr.ifca(X, y, init, 1e-197, trace=True, method="data", **kw)
    ref = naive_ifca(X, y, init, 1e-197, **kw)
    assert res.diverged[0] and res.n_iter[0] == ref["n_iter"][0] < 30
    assert np.isposinf(res.trace.loss[res.n_iter[0], 0])
    assert np.abs(res.theta).max() < 1e60
    _same_as_naive(res, ref)


@pytest.mark.parametrize("method", ["data", "stats"])
def test_models_equal_in_one_coordinate_are_not_duplicates(method):
    """K22: models [1, 0] and [1, 5] share their first coordinate only; the machines whose data
    follow [1, 5] must pick model 1 (an exact-duplicate rule that compared one coordinate would
    give model 1 model 0's loss and the tie to model 0)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 6, 2))
    truth = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 5.0], [1.0, 5.0]])
    y = np.einsum("ind,id->in", X, truth)
    init = np.array([[[1.0, 0.0], [1.0, 5.0]]])
    res = mlr.ifca(X, y, init, 0.1, n_iter=1, trace=True, method=method)
    assert_array_equal(res.trace.labels[0, 0], [0, 0, 1, 1])
    _same_as_naive(res, naive_ifca(X, y, init, 0.1, n_iter=1))


# ------------------------------------------------------------------- the certified-Gram bounds
def _certified(U, Lo, *, s=0.0, dist=(0.0, 0.0), gamma=0.0, fro=1.0, norms=(1.0, 1.0), rel=0.0,
               l2=0.0, n=1):
    """``_certify`` for one run, one machine assigned to model 0, two models."""
    from mixlinreg._gram import _certify

    ok = np.zeros(1, dtype=np.bool_)
    _certify(np.array([0]), 1, np.array([norms], dtype=float), np.zeros((1, 1), dtype=np.int64),
             np.array([[U]], dtype=float), np.array([[[0.0, Lo]]]), np.array([s], dtype=float),
             np.array([dist], dtype=float), np.array([fro], dtype=float), gamma, rel, l2, n, ok)
    return bool(ok[0])


def test_certificate_rule_at_its_edges():
    """G02-G05: the certificate holds iff ``(U + s d_a + rho_a)^2 / n`` (times ``1 + rel``) is
    below ``max(Lo - s d_j - rho_j, 0)^2 / n`` (times ``1 - rel``), ridge terms added."""
    assert _certified(1.0, 3.0)                              # well apart: certified
    assert not _certified(1.0, 1.0)                          # G03: a tie is not certified
    # G02: the other model moved 2.5 from its anchor (the assigned one did not): 3 - 2.5 < 1
    assert not _certified(1.0, 3.0, s=1.0, dist=(0.0, 2.5))
    assert _certified(1.0, 3.0, s=1.0, dist=(0.0, 0.5))
    # G04: a lower bound widened below 0 is 0, never a large square: nothing is certified
    assert not _certified(0.5, 1.0, s=1.0, dist=(0.0, 3.0))
    # G05: the relative margin shrinks the lower side: 1.0001 vs 1.00002 x 0.9999
    assert not _certified(1.0, np.sqrt(1.00002), rel=1e-4)
    assert _certified(1.0, np.sqrt(1.00002), rel=1e-6)
    # the rounding allowance gamma ||X_i||_F ||theta_j|| widens both sides, and the ridge adds
    assert not _certified(1.0, 1.5, gamma=0.2, fro=1.0, norms=(1.0, 1.5))
    assert not _certified(1.0, 1.5, l2=1.0, norms=(2.0, 0.5))


def test_bounds_from_an_exact_evaluation_and_the_distance_from_the_anchor():
    """G06-G08: ``U = r_a + rho``, ``Lo_j = r_j - rho_j`` (residual norms ``sqrt(n F)``, ``rho =
    gamma ||X_i||_F ||theta_j||``); the distance from the anchor is the norm, slightly enlarged."""
    from mixlinreg._gram import _anchor_dist, _refresh_bounds

    U, Lo = np.zeros((1, 1)), np.zeros((1, 1, 2))
    _refresh_bounds(np.array([0]), 1, np.array([[1.0, 2.0]]), np.zeros((1, 1), dtype=np.int64),
                    np.array([[[1.0, 4.0]]]), 4, np.array([1.0]), 0.1, U, Lo)
    np.testing.assert_allclose(U, [[2.1]], rtol=1e-15)
    np.testing.assert_allclose(Lo, [[[1.9, 3.8]]], rtol=1e-15)
    out = np.zeros((1, 1))
    _anchor_dist(np.array([0]), 1, np.array([[[0.3, 0.4]]]), np.zeros((1, 1, 2)), out)
    assert 0.5 <= out[0, 0] <= 0.5 * (1 + 1e-11)


class _Driven(Exception):
    """Raised by the driver below once it has checked the certified path's state."""


def test_a_run_whose_partition_changes_gives_its_grams_back(monkeypatch):
    """G11: the invariant of ``_CertifiedRuns``: a run holds Grams only while its partition is the
    one they were made for. The certified path is driven by hand: a full step, the run takes
    Grams; a full step with the same partition keeps them; one after its models are swapped (every
    machine changes model) gives them back."""
    import importlib
    import sys

    from mixlinreg import _gram, _numerics

    monkeypatch.setattr(_numerics, "GRAM_FLOP_PER_BYTE", 0.0)  # Grams always pay
    seen = {}

    def driver(*args):
        cr = _gram._CertifiedRuns(*args)
        none = np.array([], dtype=np.int64)
        cr.data_step(np.array([0]), none, 0)
        cr.enter(np.array([0]), 0)
        seen["entered"] = bool(cr.in_gram[0])
        cr.data_step(np.array([0]), none, 1)  # same models' partition: keeps its Grams
        seen["kept"] = bool(cr.in_gram[0])
        before = cr.st.asg[0].copy()
        cr.theta[0] = cr.theta[0, ::-1].copy()  # swap the two models
        cr.data_step(np.array([0]), none, 2)
        seen["changed"] = bool((cr.st.asg[0] != before).all())
        seen["after"] = (bool(cr.in_gram[0]), cr.slots[0].tolist())
        raise _Driven

    ifca_module = sys.modules.get("mixlinreg.ifca") or importlib.import_module("mixlinreg.ifca")
    monkeypatch.setattr(ifca_module, "run_gram", driver)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 40, 2))
    ts = np.array([[3.0, 0.0], [0.0, 3.0]])
    y = np.einsum("ind,id->in", X, ts[np.arange(6) % 2])
    with pytest.raises(_Driven):
        mlr.ifca(X, y, ts[None] + 0.1, 0.01, n_iter=50, method="gram")
    assert seen == {"entered": True, "kept": True, "changed": True, "after": (False, [-1, -1])}


# ------------------------------------------------------------------------------ the success rules
def _runs(near, matched, loss, diverged, trial=0):
    n = len(near)
    return pd.DataFrame(dict(m=10, n=5, d=3, k=2, R=1.0, sigma=0.1, alpha0=np.nan, trial=trial,
                             init=np.arange(n), step=0.1, dist_nearest=near, dist_matched=matched,
                             loss=loss, diverged=diverged))


def test_a_diverged_run_is_never_the_kept_run_even_with_a_finite_loss():
    """S03: run 0 diverged but reports the lowest finite loss and a good distance; the kept run
    (best_loss) is the usable run 1, which fails."""
    from mixlinreg.harness.success import trial_success

    rows = _runs(near=[0.0, 0.5], matched=[0.0, 0.5], loss=[0.1, 0.5], diverged=[True, False])
    t = trial_success(rows, 0.0).iloc[0]
    assert not bool(t["best_loss"])


def test_success_intervals_are_made_at_the_confidence_asked_for():
    """S07: ``success_table(..., confidence)`` gives each rule's Wilson interval at it."""
    from mixlinreg.harness.success import success_table
    from mixlinreg.stats import wilson_interval

    rows = pd.concat([_runs([0.01 if t < 3 else 0.5], [0.5], [1.0], [False], trial=t)
                      for t in range(5)])
    s = success_table(rows, 0.0, confidence=0.8).iloc[0]
    lo, hi = wilson_interval(3, 5, 0.8)
    assert (s["lo_authors"], s["hi_authors"]) == (lo, hi)
    assert (s["lo_text"], s["hi_text"]) == wilson_interval(0, 5, 0.8)


# ------------------------------------------------------------------------------ the store's checks
def _unit_store(tmp_path, **kw):
    from mixlinreg.runner.store import UnitStore

    return UnitStore(tmp_path / "units", tag="config-a", **kw)


def test_a_unit_changed_in_place_fails_its_checksum(tmp_path):
    """T01: one digit changed, same length: only the checksum (not the byte count) sees it."""
    from mixlinreg.runner.store import DamagedUnitWarning

    store = _unit_store(tmp_path)
    store.write("u1", pd.DataFrame({"x": [1.25, 2.5], "y": [3, 4]}))
    path = store.path("u1")
    data = path.read_bytes()
    path.write_bytes(data.replace(b"2.5,", b"2.7,"))
    assert len(path.read_bytes()) == len(data)
    assert "checksum" in store.problem("u1")
    with pytest.warns(DamagedUnitWarning):
        assert not store.is_done("u1")


def test_a_record_with_another_row_count_is_not_done(tmp_path):
    """T08: a unit whose checksum record holds 2 rows where the store expects 3."""
    _unit_store(tmp_path, rows=lambda u: 2).write("u1", pd.DataFrame({"x": [1.0, 2.0]}))
    assert _unit_store(tmp_path, rows=lambda u: 2).problem("u1") is None
    assert _unit_store(tmp_path, rows=lambda u: 3).problem("u1") == "2 rows instead of 3"


def test_legacy_result_units_cut_mid_line_or_with_an_empty_column_are_not_done(tmp_path):
    """T03, T05: two Figure 2 units without a checksum record: one whose last line was cut inside
    its last field (``method``: every field still there, only the final newline missing), one
    whose ``dist_nearest`` column is empty (the other result column full). Both are damaged."""
    from mixlinreg.harness import load_config, run_experiment
    from mixlinreg.harness._tiny import write_tiny

    write_tiny(tmp_path / "tiny.toml", trials=2, seed=1)
    exp = load_config(tmp_path / "tiny.toml", "paper")
    store, _ = run_experiment(exp, tmp_path / "store", progress=False)
    cut, empty = exp.units()[0].id, exp.units()[1].id
    for rec in store.units_dir.glob("*.check.json"):
        rec.unlink()
    path = store.unit_path(cut)
    path.write_bytes(path.read_bytes()[:-3])  # "...,data\n" -> "...,da"
    path = store.unit_path(empty)
    df = pd.read_csv(path, dtype=str)
    df["dist_nearest"] = ""
    path.write_text(df.to_csv(index=False))
    why = store.units.damaged()
    assert "newline" in why.get(cut, "") and "empty" in why.get(empty, ""), why


# ------------------------------------------------------------------------------ the verdict rules
def test_at_most_and_at_least_refute_only_beyond_the_margin():
    """V02, V03: an interval past the bound but inside bound +- margin is inconclusive."""
    from mixlinreg.stats import INCONCLUSIVE, NOT_SUPPORTED, Fit, verdict_at_least, verdict_at_most

    assert verdict_at_most(Fit(0.62, 0.55, 0.7, 10), 0.5, 0.1) == INCONCLUSIVE
    assert verdict_at_most(Fit(0.72, 0.65, 0.8, 10), 0.5, 0.1) == NOT_SUPPORTED
    assert verdict_at_least(Fit(0.4, 0.35, 0.45, 10), 0.5, 0.1) == INCONCLUSIVE
    assert verdict_at_least(Fit(0.3, 0.25, 0.35, 10), 0.5, 0.1) == NOT_SUPPORTED


# ------------------------------------------------------------------------------ the studies' rules
def test_fptab1_over_splitting_needs_the_whole_interval_above_zero():
    """D13: FPFC-l1 worse in clustering and accuracy; its extra clusters' interval [0, 2] does not
    exclude 0 (its estimate 1 does): not shown to over-split, so (b) is a caveat."""
    from test_fpfc_table import _cond, _params, _part

    from mixlinreg.theory import CAVEAT

    p = _params(ari_margin=0.25, acc_margin=0.0)
    assert _part({"c": _cond(d_ari=(0.3, 0.5), d_num=(0.0, 2.0))}, p, "b") == CAVEAT
    assert _part({"c": _cond(d_ari=(0.3, 0.5), d_num=(0.1, 2.0))}, p, "b") != CAVEAT
