"""Add the log-cosh loss, ell(z, y) = log cosh(z - y), to losses.py as docs/development.md says:
its code in CODES, its scalar branches in ell, dell, d2ell, its branches in value_array,
derivative_array and second_array, and a Loss entry in LOSSES; and its closed-form test."""
import sys
p, t = sys.argv[1], sys.argv[2]
s = open(p).read()
def sub(old, new, count=1):
    global s
    assert s.count(old) >= 1, old
    s = s.replace(old, new, count)
sub('CODES = {"squared": 0, "logistic": 1, "huber": 2}', 'CODES = {"squared": 0, "logistic": 1, "huber": 2, "logcosh": 4}')
# scalars: the Huber branch is the last `else`; log-cosh goes before it
sub('''    else:
        r = y - z
        a = abs(r)
        if a <= delta:''', '''    elif code == 4:
        a = abs(z - y)
        return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)
    else:
        r = y - z
        a = abs(r)
        if a <= delta:''')
sub('''    else:
        r = y - z
        if r > delta:''', '''    elif code == 4:
        return np.tanh(z - y)
    else:
        r = y - z
        if r > delta:''')
sub('''    else:
        return 1.0 if abs(np.float64(y) - z) <= delta else 0.0''', '''    elif code == 4:
        th = np.tanh(z - np.float64(y))
        return 1.0 - th * th
    else:
        return 1.0 if abs(np.float64(y) - z) <= delta else 0.0''')
sub('''    r = y - z
    a = xp.abs(r)
    return xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))''', '''    if code == CODES["logcosh"]:
        a = xp.abs(z - y)
        return a + xp.log1p(xp.exp(-2.0 * a)) - np.log(2.0)
    r = y - z
    a = xp.abs(r)
    return xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))''')
sub('''    r = y - z
    return xp.where(r > delta, -delta, xp.where(r < -delta, delta, -r))''', '''    if code == CODES["logcosh"]:
        return xp.tanh(z - y)
    r = y - z
    return xp.where(r > delta, -delta, xp.where(r < -delta, delta, -r))''')
sub('''    return (xp.abs(y - z) <= delta).astype(z.dtype)''', '''    if code == CODES["logcosh"]:
        th = xp.tanh(z - y)
        return 1.0 - th * th
    return (xp.abs(y - z) <= delta).astype(z.dtype)''')
sub('''          "huber": Loss("huber", 2, (0.0, 1.0), param="delta")}''', '''          "huber": Loss("huber", 2, (0.0, 1.0), param="delta"),
          "logcosh": Loss("logcosh", 4, (0.0, 1.0))}''')
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
