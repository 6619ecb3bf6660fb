"""fpfc's start (``init=``) and its participant count (``n_participants=``), issue 38 item 2:
the default is bit for bit the result before these options, ``"common_normal"`` is one N(0, 1)
draw copied to every machine and drawn first from the call's ``rng`` (the FPFC authors' start),
an array start is used as given, and ``n_participants`` draws that many distinct machines per
round, the same draws as the fraction ``n_participants / m``."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import mixlinreg as mlr
from mixlinreg.baselines import fpfc


def _mix(m=12, d=3, seed=1):
    return mlr.make_mixture(m=m, n=30, d=d, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=seed)


def _multinomial():
    g = np.random.default_rng(0)
    X = g.random((6, 20, 4))
    y = g.integers(0, 3, (6, 20)).astype(float)
    return X, y, dict(loss="multinomial", n_classes=3, lam=0.3, xi=0.01, lr=0.1)


def _same(r1, r2):
    assert_array_equal(r1.extra["omega"], r2.extra["omega"])
    assert_array_equal(r1.extra["objective"], r2.extra["objective"])
    assert_array_equal(r1.extra["history"], r2.extra["history"])
    assert_array_equal(r1.labels, r2.labels)
    assert_array_equal(r1.theta, r2.theta)


def test_default_start_is_the_result_before_init_existed():
    # the numbers printed by fpfc at commit a9a5d79 (before init= and n_participants=), the same
    # calls (run from `git archive a9a5d79 mixlinreg` on this machine)
    mix = _mix()
    r = fpfc(mix.X, mix.y, n_rounds=40, participation=0.5, rng=3)
    omega = r.extra["omega"]
    assert float(omega.sum()) == pytest.approx(43.251787293137646, rel=1e-13, abs=0)
    assert float((omega ** 2).sum()) == pytest.approx(108.25322030312915, rel=1e-13, abs=0)
    assert r.extra["objective"][-1] == pytest.approx(1.8936029428425138, rel=1e-13, abs=0)
    assert r.labels.tolist() == [0] * 6 + [1] * 6
    X, y, kw = _multinomial()
    r = fpfc(X, y, n_rounds=15, rng=1, participation=0.5, **kw)
    assert float((r.extra["omega"] ** 2).sum()) == pytest.approx(0.7629095645331845, rel=1e-13,
                                                                  abs=0)
    assert r.extra["objective"][-1] == pytest.approx(6.350987084713499, rel=1e-13, abs=0)


def test_zeros_named_or_given_is_the_default_bit_for_bit():
    mix = _mix()
    base = fpfc(mix.X, mix.y, n_rounds=30, participation=0.5, rng=3)
    for init in ("zeros", np.zeros(3), np.zeros((12, 3))):
        _same(base, fpfc(mix.X, mix.y, n_rounds=30, participation=0.5, rng=3, init=init))


def test_common_normal_is_one_standard_normal_draw_copied_to_every_machine():
    mix = _mix(m=12, d=40)
    r = fpfc(mix.X, mix.y, n_rounds=0, init="common_normal", rng=5)
    omega = r.extra["omega"]
    assert_array_equal(omega, np.repeat(np.random.default_rng(5).standard_normal(40)[None], 12, 0))
    assert r.extra["n_clusters"] == 1  # one start, theta = 0: every pair linked
    X, y, kw = _multinomial()
    r = fpfc(X, y, n_rounds=0, init="common_normal", rng=2, **kw)
    want = np.random.default_rng(2).standard_normal(4 * 3).reshape(4, 3)
    assert r.extra["omega"].shape == (6, 4, 3)
    for i in range(6):
        assert_array_equal(r.extra["omega"][i], want)


def test_common_normal_is_drawn_first_from_the_calls_rng():
    """A run from "common_normal" is the run from that draw given as an array, with the
    participants drawn from the rest of the same stream."""
    mix = _mix()
    a = fpfc(mix.X, mix.y, n_rounds=25, participation=0.5, init="common_normal", rng=9)
    gen = np.random.default_rng(9)
    z = gen.standard_normal(3)
    b = fpfc(mix.X, mix.y, n_rounds=25, participation=0.5, init=z, rng=gen)
    _same(a, b)
    zero = fpfc(mix.X, mix.y, n_rounds=25, participation=0.5, rng=9)
    assert not np.array_equal(a.extra["omega"], zero.extra["omega"])


def test_an_array_start_is_used_as_given_and_not_changed():
    mix = _mix()
    start = np.random.default_rng(0).normal(size=(12, 3))
    keep = start.copy()
    r0 = fpfc(mix.X, mix.y, n_rounds=0, init=start)
    assert_array_equal(r0.extra["omega"], start)
    # Algorithm 1's initialization as printed: theta = 0, so at zero rounds all pairs are linked
    assert r0.extra["n_clusters"] == 1
    seen = []
    r = fpfc(mix.X, mix.y, n_rounds=3, init=start, callback=lambda k, s: seen.append(s["omega"]))
    assert_array_equal(start, keep)  # the caller's array is not written
    # round 1 starts at the given start: under full participation one round of local steps
    # from omega^0 = start, zeta^0 = start is rebuilt here
    lr = r.extra["lr"]
    w = start.copy()
    for _ in range(5):
        g = np.stack([2.0 / 30 * mix.X[i].T @ (mix.X[i] @ w[i] - mix.y[i]) for i in range(12)])
        w = w - lr * (g + 1.0 * (w - start))
    np.testing.assert_allclose(seen[0], w, rtol=1e-12, atol=1e-12)
    common = fpfc(mix.X, mix.y, n_rounds=0, init=start[0])
    assert_array_equal(common.extra["omega"], np.repeat(start[:1], 12, 0))


@pytest.mark.parametrize("init, match", [
    ("random", "init must be one of"),
    (None, "init must be one of"),
    (np.zeros(4), r"init must .*shape \(3,\).*\(12, 3\).*got an array of shape \(4,\)"),
    (np.zeros((11, 3)), "init must"),
    (np.zeros((12, 3, 1)), "init must"),
    (np.array([0.0, np.nan, 0.0]), "init"),
])
def test_bad_init_is_refused_by_name(init, match):
    mix = _mix()
    with pytest.raises(ValueError, match=match):
        fpfc(mix.X, mix.y, n_rounds=1, init=init)


def test_bad_multinomial_init_shape_is_refused():
    X, y, kw = _multinomial()
    with pytest.raises(ValueError, match=r"init must .*\(4, 3\)"):
        fpfc(X, y, n_rounds=1, init=np.zeros(4), **kw)
    r = fpfc(X, y, n_rounds=0, init=np.ones((6, 4, 3)), **kw)
    assert_array_equal(r.extra["omega"], 1.0)


def test_n_participants_is_the_fraction_n_over_m_and_draws_distinct_machines():
    mix = _mix(m=100, d=2, seed=2)
    changed = []
    prev = [np.zeros((100, 2))]

    def count(k, s):
        changed.append(int(np.sum(np.any(s["omega"] != prev[0], axis=1))))
        prev[0] = s["omega"]

    a = fpfc(mix.X, mix.y, n_rounds=12, n_participants=30, rng=4, callback=count)
    b = fpfc(mix.X, mix.y, n_rounds=12, participation=0.3, rng=4)
    _same(a, b)
    assert changed == [30] * 12  # 30 distinct machines move every round (without replacement)
    assert a.extra["floats_sent_mean"] == pytest.approx(2 * 2 * 30 * 12 / 100)
    full = fpfc(mix.X, mix.y, n_rounds=5, n_participants=100, rng=4)
    _same(full, fpfc(mix.X, mix.y, n_rounds=5, rng=4))


@pytest.mark.parametrize("kw, err, match", [
    (dict(n_participants=0), ValueError, "n_participants must be in"),
    (dict(n_participants=13), ValueError, "n_participants must be in"),
    (dict(n_participants=2.5), TypeError, "n_participants"),
    (dict(n_participants=6, participation=0.5), ValueError, "not both"),
])
def test_bad_n_participants_is_refused_by_name(kw, err, match):
    mix = _mix()
    with pytest.raises(err, match=match):
        fpfc(mix.X, mix.y, n_rounds=1, **kw)
