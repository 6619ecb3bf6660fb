"""Behaviours of the newer code that no test pinned down (issue 41, item 5): each test here kills
mutants of ``probes/mutants.py`` (ids J.., F.., C.., Y.., R.., P..) that survived the tests written
with the code. Every assertion states a result a user would see change."""

from __future__ import annotations

import json
import os
import subprocess
import warnings

import numpy as np
import pytest

import mixlinreg as mlr


# ----------------------------------------------------------- the JAX kernel's tie-break (J01-J03)
@pytest.mark.parametrize("row, want", [
    ([np.nan, np.inf], 1),  # +inf beats NaN: a NaN never wins over a number
    ([np.inf, np.nan], 0),
    ([np.nan, np.nan, np.nan], 0),  # all NaN: the lowest index
    ([np.nan, 2.0, 2.0], 1),  # ties to the lowest index among numbers
    ([3.0, np.inf, 3.0], 0),
    ([np.inf, np.inf, 1.0], 2),
])
def test_the_jax_argmin_breaks_nan_and_inf_ties_as_numba_does(row, want):
    jnp = pytest.importorskip("jax.numpy")
    from mixlinreg._jax import _argmin as jax_argmin
    from mixlinreg._kernels import _argmin as numba_argmin

    L = np.array([row], dtype=np.float64)
    assert numba_argmin(L, 0, L.shape[1]) == want
    assert int(jax_argmin(jnp, jnp.asarray(L))[0]) == want


# ------------------------------------------- divergence exactly at the threshold (J04 and K..)
@pytest.mark.parametrize("kernel", ["numba", "jax"])
def test_a_model_exactly_at_the_divergence_threshold_has_not_diverged(kernel):
    """The rule is ``|theta| > threshold``: a model equal to the threshold goes on, one float
    below it stops the run (flagged diverged after its first step)."""
    if kernel == "jax":
        pytest.importorskip("jax")
    mix = mlr.make_mixture(m=6, n=10, d=6, k=2, R=1.0, sigma=0.1, rng=0)
    init = np.zeros((1, 2, 6))
    init[0, :, 0] = 4.0  # both models alike: model 0 takes every machine and is checked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # lr 1e-300: a step that leaves the models exactly where they are in float64
        at = mlr.ifca(mix.X, mix.y, init, 1e-300, n_iter=2, diverge_threshold=4.0, kernel=kernel)
        below = mlr.ifca(mix.X, mix.y, init, 1e-300, n_iter=2, kernel=kernel,
                         diverge_threshold=float(np.nextafter(4.0, 0.0)))
    assert not at.diverged[0] and at.n_iter[0] == 2
    assert below.diverged[0] and below.n_iter[0] == 1


# --------------------------------------------------- FPFC links exactly fused devices (F01-F02)
def test_fpfc_links_devices_whose_pair_distance_equals_nu():
    from mixlinreg.baselines._fpfc import _clusters

    I, J = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 3])
    pairs = np.array([[3.0, 4.0],  # distance exactly 5 = nu: linked
                      [30.0, 40.0], [30.0, 40.0],
                      [3.0, np.nextafter(4.0, 5.0)]])  # one float above nu: not linked
    assert _clusters(4, I, J, pairs, 5.0).tolist() == [0, 0, 1, 2]
    assert _clusters(4, I, J, pairs, float(np.nextafter(5.0, 0.0))).tolist() == [0, 1, 2, 3]


# -------------------------------------------- both sides of a CFL split start alike (C01-C02)
def test_both_sides_of_a_cfl_split_start_from_the_groups_updated_model():
    """Algorithm 2: after the round whose updates are split, both new groups carry the group's
    model after that round's FedAvg step, theta + mean(delta): the same model on both sides."""
    rng = np.random.default_rng(4)
    m, n, d = 8, 30, 3
    truth = np.array([[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    X = rng.standard_normal((m, n, d))
    y = np.einsum("ind,id->in", X, truth[np.arange(m) % 2]) + 0.01 * rng.standard_normal((m, n))
    lr = 0.1
    snaps = []
    from mixlinreg.baselines import cfl

    res = cfl(X, y, lr=lr, eps1=0.01, eps2=0.1, max_rounds=60,
                  callback=lambda r, groups: snaps.append((r, groups)))
    assert res.extra["splits"] and res.extra["splits"][0][0] > 1, "the toy must split later"
    r_split, node, sa, sb = res.extra["splits"][0]
    (parent,) = [g for g in snaps[r_split - 2][1] if g[0] == node]  # before the split round
    P = parent[2].ravel()
    # one local step of squared-loss gradient descent from P on every machine of the group
    grads = [2.0 / n * X[i].T @ (X[i] @ P - y[i]) for i in parent[1]]
    want = P - lr * np.mean(grads, axis=0)
    after = {g[0]: g for g in snaps[r_split - 1][1]}
    kids = [g for g in after.values() if set(g[1].tolist()) in (set(sa.tolist()), set(sb.tolist()))]
    assert len(kids) == 2
    for kid in kids:
        np.testing.assert_allclose(kid[2].ravel(), want, rtol=0, atol=1e-12)


# ---------------------------------------- make_fedprox_synthetic's spread of sizes (Y01-Y02)
def test_fedprox_sizes_have_the_lognormal_spread_asked_for():
    from mixlinreg.synthetic import make_fedprox_synthetic

    data = make_fedprox_synthetic(m=3000, L=4, d=1, n_classes=2, size_mean=4.0, size_sd=0.3,
                                  size_min=50, rng=12)
    log_part = np.log(data.n_samples + data.n_test - 50 + 0.5)  # + 0.5: int() truncates
    # exp(N(4, 0.3^2)) is about 55 here, so the truncation moves log by under 1%
    assert abs(np.mean(log_part) - 4.0) < 0.03
    assert abs(np.std(log_part) - 0.3) < 0.02  # the sd, not the variance (0.09) nor 2 sd


# -------------------------- a dead claim taken over while another unit's claim lives (R01-R02)
def test_a_dead_claim_is_taken_over_and_a_live_one_next_to_it_is_not(tmp_path):
    from mixlinreg.runner.store import _BOOT, _HOST, UnitStore, _proc_start

    live = subprocess.Popen(["sleep", "60"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        start = _proc_start(live.pid)
        for unit, pid, st in (("alive", live.pid, start), ("gone", dead.pid, None)):
            (tmp_path / f"{unit}.lock").write_text(json.dumps(dict(
                host=_HOST, pid=pid, time=0, token=f"t-{unit}", start=st, boot=_BOOT)))
        us = UnitStore(tmp_path)
        assert not us.claim("alive")  # its owner runs: respected
        assert us.claim("gone")  # its owner is dead: taken over
        assert json.loads((tmp_path / "alive.lock").read_text())["token"] == "t-alive"
        assert json.loads((tmp_path / "gone.lock").read_text())["pid"] == os.getpid()
        assert not us.claim("alive")  # still respected after the take-over
        us.release("gone")
        assert not (tmp_path / "gone.lock").exists() and (tmp_path / "alive.lock").exists()
    finally:
        live.kill()
        live.wait()


def test_a_cfl_group_of_exactly_min_group_machines_splits():
    rng = np.random.default_rng(4)
    m, n, d = 4, 30, 3
    truth = np.array([[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])
    X = rng.standard_normal((m, n, d))
    y = np.einsum("ind,id->in", X, truth[np.arange(m) % 2]) + 0.01 * rng.standard_normal((m, n))
    from mixlinreg.baselines import cfl

    res = cfl(X, y, lr=0.1, eps1=0.01, eps2=0.1, max_rounds=60, min_group=m)
    assert [(s[2].tolist(), s[3].tolist()) for s in res.extra["splits"]] == [([0, 2], [1, 3])]
    no = cfl(X, y, lr=0.1, eps1=0.01, eps2=0.1, max_rounds=60, min_group=m + 1)
    assert no.extra["splits"] == []


# ------------------------------------------------ a worker's owner, alive or gone (R02-R04)
def test_a_live_claim_whose_start_time_cannot_be_read_is_respected(tmp_path, monkeypatch):
    from mixlinreg.runner import store as store_mod
    from mixlinreg.runner.store import _BOOT, _HOST, UnitStore, _proc_start

    other = os.getppid()
    start = _proc_start(other)
    (tmp_path / "u.lock").write_text(json.dumps(dict(host=_HOST, pid=other, time=0, token="t",
                                                     start=start if start else 1, boot=_BOOT)))
    monkeypatch.setattr(store_mod, "_proc_start", lambda pid: None)  # no /proc for that pid
    assert not UnitStore(tmp_path).claim("u")  # alive by its pid: not broken


def test_a_zombie_or_a_later_process_with_the_pid_is_not_the_owner():
    from mixlinreg.runner import owner_alive
    from mixlinreg.runner.store import _proc_start

    child = subprocess.Popen(["true"])
    start = _proc_start(child.pid)
    for _ in range(200):  # until it has exited (a zombie: not waited for yet)
        stat = open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        if stat == "Z":
            break
        import time

        time.sleep(0.01)
    try:
        assert stat == "Z"
        assert not owner_alive(child.pid, start)
    finally:
        child.wait()
    parent = os.getppid()
    now = _proc_start(parent)
    if now is None:
        pytest.skip("no /proc start times here")
    assert owner_alive(parent, now)
    # the owner recorded started earlier than the process now holding its pid: a reused pid
    assert not owner_alive(parent, now - 5)
    assert not owner_alive(parent, now + 5)


# ---------------------------------------------------- a note is not judged by a control (P02)
def test_a_note_keeps_its_verdict_without_a_control():
    from mixlinreg.theory.controls import NO_CONTROL, judge

    assert judge("holds", {}, kind="note") == ("holds", None)
    assert judge("holds", {}, kind="claim") == ("holds with a caveat", NO_CONTROL)


# ---------------------------------------------- each loss's curvature range is tight (E01)
@pytest.mark.parametrize("name", ["squared", "logistic", "huber"])
def test_each_losss_curvature_range_is_attained(name):
    """The registry's (inf, sup) of ell'' are the values the second derivative takes (the
    smoothness constant L = sup ell'' lambda_max is not inflated, nor the step 1/L shrunk)."""
    from mixlinreg.losses import curvature_bound, get

    loss = get(name)
    z = np.linspace(-50, 50, 2001)  # holds z = 0 (logistic's peak 1/4) and the Huber kinks' inside
    s = loss.second(z, np.zeros_like(z))
    assert s.max() == pytest.approx(loss.curvature[1], rel=1e-12)
    assert s.min() == pytest.approx(loss.curvature[0], abs=1e-12)
    assert curvature_bound(name) == loss.curvature[1]
