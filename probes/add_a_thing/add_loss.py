"""Add the log-cosh loss, ell(z, y) = log cosh(z - y), to losses.py as docs/development.md says:
its section (three numba scalars, their three array forms, its Loss entry), the entry in
SCALAR_LOSSES and one line in each of the dispatchers ell, dell, d2ell; and its closed-form test."""
import sys
p, t = sys.argv[1], sys.argv[2]
s = open(p).read()
def sub(old, new, count=1):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new, count)
# its section, before the registry
sub('''# ---------------------------------------------------------------------------------- the registry
''', '''# ---------------------------------------------------------------------------------- logcosh
@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logcosh_value(z, y, delta):
    """``log cosh(z - y)``, evaluated without overflow."""
    a = abs(z - y)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logcosh_derivative(z, y, delta):
    """``tanh(z - y)``."""
    return np.tanh(z - y)


@nb.njit(fastmath=FASTMATH, cache=True, inline="always")
def logcosh_second(z, y, delta):
    """``1 - tanh(z - y)^2``."""
    th = np.tanh(z - y)
    return 1.0 - th * th


def logcosh_value_array(z, y, delta, xp):
    a = xp.abs(z - y)
    return a + xp.log1p(xp.exp(-2.0 * a)) - np.log(2.0)


def logcosh_derivative_array(z, y, delta, xp):
    return xp.tanh(z - y)


def logcosh_second_array(z, y, delta, xp):
    th = xp.tanh(z - y)
    return 1.0 - th * th


LOGCOSH_LOSS = Loss("logcosh", 4, (0.0, 1.0),
                    scalars=(logcosh_value, logcosh_derivative, logcosh_second),
                    arrays=(logcosh_value_array, logcosh_derivative_array, logcosh_second_array))


# ---------------------------------------------------------------------------------- the registry
''')
# its entry in the one list
sub('SCALAR_LOSSES = (SQUARED_LOSS, LOGISTIC_LOSS, HUBER_LOSS)',
    'SCALAR_LOSSES = (SQUARED_LOSS, LOGISTIC_LOSS, HUBER_LOSS, LOGCOSH_LOSS)')
# one line in each dispatcher
for kind in ("value", "derivative", "second"):
    sub(f'''        return huber_{kind}(z, y, delta)
''', f'''        return huber_{kind}(z, y, delta)
    elif code == 4:
        return logcosh_{kind}(z, y, delta)
''')
open(p, "w").write(s)
tt = open(t).read() + '''


def test_logcosh_closed_form():
    from mixlinreg.losses import LOSSES
    z, y = np.array([0.0, 1.0, -3.0, 40.0]), np.array([0.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(LOSSES["logcosh"].value(z, y), np.log(np.cosh(z - y)), rtol=1e-12)
    np.testing.assert_allclose(LOSSES["logcosh"].derivative(z, y), np.tanh(z - y), rtol=1e-12)
    np.testing.assert_allclose(LOSSES["logcosh"].second(z, y), 1 / np.cosh(z - y) ** 2, rtol=1e-9, atol=1e-30)
'''
open(t, "w").write(tt)
