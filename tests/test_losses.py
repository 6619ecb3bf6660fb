"""mixlinreg.losses: the one definition of each loss, checked against closed forms and differences."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

from mixlinreg.losses import CODES, LOSSES, get

Z = np.array([-800.0, -30.0, -2.0, -0.3, 0.0, 0.4, 1.7, 35.0, 800.0])


def _ys(name):
    return np.linspace(0.0, 1.0, Z.size) if name == "logistic" else np.linspace(-2.0, 3.0, Z.size)


def test_closed_forms():
    y = _ys("logistic")
    assert_allclose(LOSSES["squared"].value(Z[2:7], y[2:7]), (Z[2:7] - y[2:7]) ** 2, rtol=1e-15)
    # log(1 + e^z) - y z, finite at |z| = 800 where the naive formula overflows
    assert_allclose(LOSSES["logistic"].value(Z, y), np.logaddexp(0.0, Z) - y * Z, rtol=1e-13)
    r = _ys("huber") - Z
    want = np.where(np.abs(r) <= 1.5, r * r / 2, 1.5 * (np.abs(r) - 0.75))
    assert_allclose(LOSSES["huber"].value(Z, _ys("huber"), delta=1.5), want, rtol=1e-15)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_derivatives_match_central_differences(name):
    z = np.linspace(-4.0, 4.0, 41) + 0.0123  # off the Huber kinks
    y = np.full_like(z, 0.3)
    loss, h = get(name), 1e-6
    d1 = (loss.value(z + h, y) - loss.value(z - h, y)) / (2 * h)
    assert_allclose(loss.derivative(z, y), d1, rtol=1e-6, atol=1e-7)
    d2 = (loss.derivative(z + h, y) - loss.derivative(z - h, y)) / (2 * h)
    assert_allclose(loss.second(z, y), d2, rtol=1e-5, atol=1e-6)
    lo, hi = loss.curvature
    s = loss.second(np.linspace(-50, 50, 2001), np.full(2001, 0.3))
    assert lo - 1e-15 <= s.min() and s.max() <= hi + 1e-15


def test_arrays_broadcast_and_stay_finite():
    out = LOSSES["logistic"].derivative(Z[:, None], np.array([0.0, 1.0]))
    assert out.shape == (Z.size, 2) and np.isfinite(out).all()
    assert_allclose(out[0], [0.0, -1.0], atol=1e-300)  # sigmoid(-800) - y
    assert_allclose(out[-1], [1.0, 0.0])


def test_codes_and_unknown_names():
    assert {n: get(n).code for n in LOSSES} == CODES
    names = re.escape(repr(sorted(LOSSES)))  # every loss of the registry, whatever they are
    with pytest.raises(ValueError, match=rf"loss must be one of {names}, got 'hinge'"):
        get("hinge")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_array_forms_equal_the_kernels_scalars(name):
    # value_array / derivative_array (what the JAX backend calls) against the numba scalars; the
    # absolute 1e-15 covers values that cancel to near zero (sigmoid(35) - 1), where the numba
    # scalar's fast-math reciprocal and NumPy's division differ in the last bit of the 1.0
    from mixlinreg.losses import derivative_array, second_array, value_array

    z = np.concatenate([Z, [np.nan, np.inf, -np.inf, 1e-300, -1e-300]])[:, None]
    y = np.array([0.0, 0.3, 1.0])[None, :] if name == "logistic" else np.array([-2.5, 0.0, 1.2])[None, :]
    loss = get(name)
    for delta in (0.5, 1.5):
        zz, yy = np.broadcast_arrays(z, y)
        with np.errstate(all="ignore"):
            assert_allclose(value_array(zz, yy, loss.code, delta), loss.value(zz, yy, delta),
                            rtol=1e-14, atol=1e-15, equal_nan=True)
            assert_allclose(derivative_array(zz, yy, loss.code, delta),
                            loss.derivative(zz, yy, delta), rtol=1e-14, atol=1e-15, equal_nan=True)
            assert_allclose(second_array(zz, yy, loss.code, delta), loss.second(zz, yy, delta),
                            rtol=1e-14, atol=1e-15, equal_nan=True)
            parts = loss.parts(zz, yy, delta)
            assert_allclose(parts[0], loss.value(zz, yy, delta), rtol=1e-14, atol=1e-15,
                            equal_nan=True)


def test_one_registry_unknown_codes_raise_and_the_theory_reads_it():
    # the theory's loss_parts is the registry's (no second definition); every array form refuses a
    # code that is not a loss of a scalar prediction, where a last `else` would have meant Huber
    from mixlinreg.losses import MULTINOMIAL, check_code, derivative_array, second_array, value_array
    from mixlinreg.theory import constants

    assert constants.LOSSES == tuple(LOSSES)
    assert get("huber").param == "delta" and get("squared").param is None
    z, y = np.linspace(-3, 3, 7), np.linspace(1, -1, 7)
    for name in LOSSES:
        for a, b in zip(constants.loss_parts(name, z, y, 0.7), get(name).parts(z, y, 0.7)):
            np.testing.assert_array_equal(a, b)
    for bad in (3, MULTINOMIAL, -1, 2.0, True, "huber", None):
        for fn in (value_array, derivative_array, second_array):
            with pytest.raises(ValueError, match=r"loss code must be one of .*got "):
                fn(z, y, bad, 1.0)
    assert check_code(np.int64(2)) == 2
    with pytest.raises(ValueError, match="loss must be one of"):
        constants.loss_parts("hinge", z, y)


def test_multinomial_array_forms_match_scipy():
    from mixlinreg.losses import multinomial_derivative, multinomial_value

    rng = np.random.default_rng(0)
    Zm = 20.0 * rng.standard_normal((7, 4))
    y = rng.integers(0, 4, size=7)
    from scipy.special import logsumexp, softmax

    assert_allclose(multinomial_value(Zm, y), logsumexp(Zm, axis=1) - Zm[np.arange(7), y],
                    rtol=1e-13, atol=1e-14)
    assert_allclose(multinomial_derivative(Zm, y), softmax(Zm, axis=1) - np.eye(4)[y], atol=1e-15)


DISPATCHERS = ("ell", "dell", "d2ell")  # the kernel's, in the order of Loss.scalars


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_entry_is_reachable_through_each_numba_dispatcher(name):
    # the kernel calls a loss by its runtime code through ell, dell and d2ell, one line per loss
    # each: every code must give its entry's own scalar (a missing line gives NaN, a wrong one
    # another loss's value), tried where the losses differ from one another
    from mixlinreg import losses

    loss = get(name)
    z = np.array([-3.0, -0.7, 0.2, 0.9, 2.5])
    y = np.array([0.0, 1.0, 0.3, 0.0, 1.0]) if name == "logistic" else np.array([1.3, -2.0, 0.1, 3.0, 2.5])
    for order, (dispatcher, scalar) in enumerate(zip(DISPATCHERS, loss.scalars)):
        got = loss._eval(z, y, 0.5, order)  # through losses._apply, which calls the dispatcher
        want = np.array([scalar(float(a), float(b), 0.5) for a, b in zip(z, y)])
        assert_allclose(got, want, rtol=1e-14, atol=1e-15, err_msg=(
            f"the loss {name!r} (code {loss.code}) is not reached through losses.{dispatcher}: "
            f"add `elif code == {loss.code}: return {scalar.__name__}(z, y, delta)` to "
            f"{dispatcher} in mixlinreg/losses.py"))
    for dispatcher in DISPATCHERS:  # a code without a line is NaN, never the last loss's value
        assert np.isnan(getattr(losses, dispatcher)(0.5, 0.25, 99, 1.0)), dispatcher


def test_the_registry_is_built_from_its_one_list_of_entries():
    from mixlinreg import losses

    assert tuple(LOSSES.values()) == losses.SCALAR_LOSSES
    assert CODES == {e.name: e.code for e in losses.SCALAR_LOSSES}
    assert len(set(losses.KERNEL_CODES.values())) == len(losses.KERNEL_CODES)  # no code twice
    assert losses.KERNEL_CODES == {**CODES, "multinomial": losses.MULTINOMIAL}
    for e in losses.SCALAR_LOSSES:
        assert len(e.scalars) == len(e.arrays) == 3, e.name
        assert losses.curvature_bound(e.name) == e.curvature[1]
    assert losses.curvature_bound("multinomial") == losses.MULTINOMIAL_CURVATURE[1] == 0.5
    with pytest.raises(ValueError, match="loss must be one of .*multinomial.*got 'hinge'"):
        losses.curvature_bound("hinge")
