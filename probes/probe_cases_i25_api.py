"""Probe cases of issue 25, classes 4, 7 (numeric part) and 8: Ctrl-C in the API, overflow and
underflow that name their cause, generators that cannot deliver distinct clusters.

``cases()`` yields ``(class, name, callable)``; each callable returns one of the outcome labels of
``probes/probe_reliability.py`` (or ``(label, detail)``). Issue 25's class c is 100 + c::

    python probes/probe_reliability.py --only 104 107 108 -v

Class 104 runs a long :func:`mixlinreg.ifca` call in a child process, sends it SIGINT and wants a
``KeyboardInterrupt`` within 2 s (and the process's state intact afterwards); a child still running
3 s after the signal is killed and counted as a crash (a hang). The in-process cases check that a
call cut into chunks of a few iterations returns what one uninterrupted kernel call returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import mixlinreg as mlr

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {104: "Ctrl-C in the API", 107: "errors name the real cause (numeric)",
           108: "generators that cannot deliver say so"}
USER = (ValueError, TypeError, OverflowError)


# ------------------------------------------------------------------------------------- judging
def _err(fn, types, *patterns):
    """A ``types`` exception whose message matches every regex in ``patterns``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except types as exc:
        msg = str(exc)
        if all(re.search(p, msg) for p in patterns):
            return "clear error", f"{type(exc).__name__}: {msg[:120]}"
        return "unclear", f"{type(exc).__name__} not naming {patterns}: {msg[:120]}"
    except USER as exc:
        return "unclear", f"{type(exc).__name__} (wanted {types}): {str(exc)[:120]}"
    except Exception as exc:  # noqa: BLE001 - classified
        return "crash", f"{type(exc).__name__}: {str(exc)[:120]}"
    return "silent wrong", "no error"


def _ok(fn, check=lambda out: True, warn=None, warn_text=(), nowarn=None):
    """No exception, ``check(out)`` true; ``warn``: a warning of that class whose message matches
    every regex in ``warn_text`` is owed; ``nowarn``: no warning of that class may appear."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn()
    except USER as exc:
        return "unclear", f"refused a valid input: {type(exc).__name__}: {str(exc)[:120]}"
    except Exception as exc:  # noqa: BLE001 - classified
        return "crash", f"{type(exc).__name__}: {str(exc)[:120]}"
    if warn is not None:
        hits = [w for w in caught if issubclass(w.category, warn)]
        if not hits:
            return "silent wrong", f"no {warn.__name__ if isinstance(warn, type) else warn}"
        msg = str(hits[0].message)
        if not all(re.search(p, msg) for p in warn_text):
            return "unclear", f"warning not naming {warn_text}: {msg[:120]}"
    if nowarn is not None:
        bad = [w for w in caught if issubclass(w.category, nowarn)]
        if bad:
            return "silent wrong", f"unexpected {bad[0].category.__name__}: {str(bad[0].message)[:100]}"
    try:
        good = bool(check(out))
    except Exception as exc:  # noqa: BLE001
        return "silent wrong", f"check failed: {type(exc).__name__}: {exc}"
    return ("correct result", "") if good else ("silent wrong", f"check failed on {out!r:.110}")


# ------------------------------------------------------------------------ 104: Ctrl-C in the API
CHILD = r"""
import json, os, sys, threading, time
import numpy as np
import numba
import mixlinreg as mlr
# a watchdog: if the probe dies before it sends SIGINT, this child must not run on for hours
watchdog = threading.Timer(300, os._exit, (3,))
watchdog.daemon = True
watchdog.start()

opt = json.loads(sys.argv[1])
dt = np.dtype(opt.pop("dtype", "float64"))
n_iter = opt.pop("n_iter", 20000)
m, n, d = opt.pop("m", 50), opt.pop("n", 200), opt.pop("d", 40)
R = opt.pop("runs", 4)
mix = mlr.make_mixture(m, n, d, 2, 1.0, 0.5, rng=0, dtype=dt)
y = mix.y
gen = np.random.default_rng(1)
init = gen.standard_normal((R, 2, d)).astype(dt)
estimator = opt.pop("estimator", False)
if opt.pop("mask", False):  # a drawn participation mask (an int draws it in Python)
    opt["participation"] = np.random.default_rng(2).random((n_iter, R, m)) < 0.5
if opt.pop("star", False):
    opt["theta_star"] = mix.theta_star
if opt.get("loss") == "multinomial":
    y = np.digitize(mix.y, [-0.5, 0.5]).astype(dt)
    init = gen.standard_normal((R, 2, d, 3)).astype(dt)
if "shared" in opt:
    init = mlr.tie_shared(init, opt["shared"]).astype(dt)
def at(it):
    if isinstance(opt.get("participation"), np.ndarray):
        return dict(opt, participation=opt["participation"][:it])
    return opt
if estimator:
    call = lambda it: mlr.IFCA(2, n_init=2, n_iter=it, dtype=dt, random_state=1, **opt).fit(mix.X, y).coef_
else:
    call = lambda it: mlr.ifca(mix.X, y, init, 0.05, n_iter=it, rng=1, **at(it)).theta
short_iter = 4 if not opt.get("resample") else 2
call(short_iter)                      # load (or compile) the kernels
threads = numba.get_num_threads()
ref = call(short_iter)
print("START", flush=True)
t0 = time.perf_counter()
try:
    call(n_iter)
    print("FINISHED %.2f" % (time.perf_counter() - t0), flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED %.6f" % time.monotonic(), flush=True)  # one clock for both processes
    again = call(short_iter)
    print("STATE", bool(np.array_equal(again, ref) and numba.get_num_threads() == threads),
          flush=True)
"""


def _interrupt_case(opt, wait=0.7, allowed=2.0, hang=3.0):
    """Run a long call in a child, SIGINT it ``wait`` s after it starts; judge the outcome."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(opt)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        t_start = time.perf_counter()
        line = proc.stdout.readline()
        while line and not line.startswith("START"):
            line = proc.stdout.readline()
            if time.perf_counter() - t_start > 180:
                break
        if not line.startswith("START"):
            proc.kill()
            _, err = proc.communicate()
            return "crash", f"child did not start: {err.strip().splitlines()[-1:]}"
        time.sleep(wait)
        t_sig = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out = ""
        while not re.search("INTERRUPTED|FINISHED", out):  # the call's outcome, within `hang` s
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, t_sig + hang - time.monotonic()))
            if not ready:
                proc.kill()
                proc.communicate()
                return "crash", f"still running {hang:.0f} s after Ctrl-C (SIGINT): the call cannot be interrupted"
            line = proc.stdout.readline()
            if not line:
                break
            out += line
        more, err = proc.communicate(timeout=300)  # the state check after the interrupt
        out += more
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if "FINISHED" in out:
        return "unclear", f"the long call finished instead of stopping ({out.strip()[:80]})"
    if "INTERRUPTED" not in out:
        return "crash", f"exit {proc.returncode}: {(err.strip().splitlines() or [''])[-1][:110]}"
    latency = float(out.split("INTERRUPTED")[1].split()[0]) - t_sig
    if "STATE True" not in out:
        return "silent wrong", f"after KeyboardInterrupt the process's state changed: {out.strip()[-80:]}"
    if latency > allowed:
        return "unclear", f"KeyboardInterrupt after {latency:.2f} s (> {allowed} s)"
    return "correct result", f"KeyboardInterrupt {latency:.2f} s after SIGINT"


INTERRUPT_OPTIONS = {
    "direct path float64": dict(method="data"),
    "direct path float32": dict(method="data", dtype="float32"),
    "sufficient statistics": dict(method="stats", n_iter=200000),
    "certified Gram path": dict(method="gram", n_iter=400000),
    "resampling": dict(resample=True, m=50, n=8000, d=20, runs=200, n_iter=4000),
    "participation mask with early stop": dict(mask=True, early_stop=True, tol=1e-14),
    "trace with theta_star": dict(trace=True, runs=2, star=True),
    "model averaging, 2 local steps": dict(averaging="model", local_steps=2),
    "weight sharing shared=[0, 1]": dict(shared=[0, 1]),
    "multinomial loss": dict(loss="multinomial"),
    "Huber loss with l2": dict(loss="huber", l2=0.01),
    "IFCA estimator fit (float32)": dict(estimator=True, dtype="float32"),
}


def _chunk_equal_case(kw, iters=3, dtype=np.float64):
    """``ifca`` cut into chunks of ``iters`` iterations returns the unchunked kernel's result
    (``_chunked.CHUNK_ITERATIONS = 0``: one kernel call)."""
    kw = dict(kw)
    n_iter = kw.pop("n_iter", 21)

    def run():
        try:
            from mixlinreg import _chunked
        except ImportError:  # before issue 25: one kernel call, nothing to compare
            _chunked = type("NoChunks", (), {"CHUNK_ITERATIONS": None})
        mix = mlr.make_mixture(12, 40, 4, 2, 1.0, 0.3, rng=5, dtype=dtype)
        y = mix.y
        gen = np.random.default_rng(2)
        init = gen.standard_normal((3, 2, 4)).astype(dtype)
        if kw.get("loss") == "multinomial":
            y = np.digitize(mix.y, [-0.5, 0.5]).astype(dtype)
            init = gen.standard_normal((3, 2, 4, 3)).astype(dtype)
        if "shared" in kw:
            init = mlr.tie_shared(init, kw["shared"]).astype(dtype)
        lr = np.array([0.05, 0.2, 50.0])  # the last run diverges
        out = []
        for size in (iters, 0):
            old = _chunked.CHUNK_ITERATIONS
            _chunked.CHUNK_ITERATIONS = size
            try:
                out.append(mlr.ifca(mix.X, y, init, lr, n_iter=n_iter, rng=3, **kw))
            finally:
                _chunked.CHUNK_ITERATIONS = old
        return out

    def same(pair):
        a, b = pair
        fields = ("theta", "labels", "loss", "diverged", "converged", "n_iter")
        ok = all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in fields)
        if a.trace is not None:
            ok &= all(np.array_equal(getattr(a.trace, f), getattr(b.trace, f), equal_nan=True)
                      for f in ("labels", "loss", "dist") if getattr(a.trace, f) is not None)
        return ok

    return lambda: _ok(run, same)


def _cases_interrupt():
    for name, opt in INTERRUPT_OPTIONS.items():
        yield 104, f"SIGINT during a long ifca: {name}", (lambda o=opt: _interrupt_case(dict(o)))
    grid = {
        "direct path": dict(method="data"),
        "direct float32": dict(method="data", dtype=np.float32),
        "stats path": dict(method="stats"),
        "resampling": dict(resample=True, n_iter=20),
        "participation=5 + trace": dict(participation=5, trace=True),
        "early stop tol=1e-3": dict(early_stop=True, tol=1e-3),
        "shared=[1] model averaging": dict(shared=[1], averaging="model", local_steps=2),
        "multinomial + trace": dict(loss="multinomial", trace=True),
    }
    for name, kw in grid.items():
        kw = dict(kw)
        dt = kw.pop("dtype", np.float64)
        yield 104, f"chunks of 3 iterations == one kernel call: {name}", _chunk_equal_case(kw, dtype=dt)


# ----------------------------------------------------------------- 107: overflow and underflow
def _mix(**kw):
    args = dict(m=8, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=1)
    args.update(kw)
    return mlr.make_mixture(**args)


def _overflow(fn, *patterns):
    """An ``OverflowError`` naming the data's scale (and ``patterns``)."""
    return lambda: _err(fn, OverflowError, "scale", *patterns)


def _cases_numeric():
    mix = _mix()
    X, y = mix.X, mix.y
    z2 = np.zeros((2, 2, 3))
    one = np.ones((2, 2, 3))
    yield 107, "ifca float64 on X * 1e160 (squared loss overflows at the start)", \
        _overflow(lambda: mlr.ifca(X * 1e160, y, one, 0.1, n_iter=5), "X")
    yield 107, "ifca float64 on y * 1e160", _overflow(lambda: mlr.ifca(X, y * 1e160, z2, 0.1, n_iter=5), "y")
    yield 107, "ifca float64 init 1e160 on plain data", \
        _overflow(lambda: mlr.ifca(X, y, one * 1e160, 0.1, n_iter=5), "init")
    yield 107, "ifca float32 on X * 1e30, init 1e10 (the forward pass overflows float32)", \
        _overflow(lambda: mlr.ifca(X * 1e30, y, one * 1e10, 0.1, n_iter=5, dtype=np.float32), "float32")
    start = mlr.init_close(mix.theta_star, 0.3, 2, rng=0)
    plain = mlr.ifca(X, y, start, 0.1, n_iter=50, dtype=np.float32)
    yield 107, "ifca float32 on y * 1e20 with init * 1e20: large, no overflow, fits", \
        lambda: _ok(lambda: mlr.ifca(X, y * 1e20, start * 1e20, 0.1, n_iter=50, dtype=np.float32),
                    lambda r: not r.diverged.any() and np.allclose(r.theta / 1e20, plain.theta, rtol=1e-5))
    yield 107, "ifca huber on X * 1e305, init 1e5", \
        _overflow(lambda: mlr.ifca(X * 1e305, y, one * 1e5, 0.1, n_iter=5, loss="huber"), "X")
    yield 107, "ifca multinomial on X * 1e300, init 1e10", \
        _overflow(lambda: mlr.ifca(X * 1e300, (y > 0).astype(float), np.ones((2, 2, 3, 2)) * 1e10,
                                   0.1, n_iter=5, loss="multinomial"), "X")
    yield 107, "ifca method='stats' on y * 1e160", \
        _overflow(lambda: mlr.ifca(X, y * 1e160, z2, 0.1, n_iter=5, method="stats"), "y")
    yield 107, "ifca method='gram' on y * 1e160", \
        _overflow(lambda: mlr.ifca(X, y * 1e160, z2, 0.1, n_iter=5, method="gram"), "y")
    yield 107, "ifca n_iter=0 (evaluation only) on y * 1e160", \
        _overflow(lambda: mlr.ifca(X, y * 1e160, z2, 0.1, n_iter=0), "y")
    yield 107, "ifca trace=True on y * 1e160", \
        _overflow(lambda: mlr.ifca(X, y * 1e160, z2, 0.1, n_iter=5, trace=True), "y")
    mixed = np.stack([np.zeros((2, 3)), np.full((2, 3), 1e160)])
    yield 107, "ifca one run of two starts at 1e160 (names the run)", \
        _overflow(lambda: mlr.ifca(X, y, mixed, 0.1, n_iter=5), "init", r"\b1\b")
    yield 107, "IFCA.fit on y * 1e160", \
        _overflow(lambda: mlr.IFCA(2, n_init=2, n_iter=20, random_state=1).fit(X, y * 1e160), "y")
    yield 107, "IFCA.fit on X * 1e160", \
        _overflow(lambda: mlr.IFCA(2, n_init=2, n_iter=20, random_state=1).fit(X * 1e160, y), "X")
    fitted = mlr.IFCA(2, n_init=3, n_iter=50, random_state=1).fit(X, y)
    yield 107, "IFCA.score on y * 1e160 (fitted on plain data)", \
        _overflow(lambda: fitted.score(X, y * 1e160), "y")
    yield 107, "IFCA.predict on X * 1e160", _overflow(lambda: fitted.predict(X * 1e160, y), "X")

    def diverges_naming_scale(Xs, lr, loss="squared", yy=y):
        return lambda: _ok(lambda: mlr.IFCA(2, n_init=2, n_iter=30, lr=lr, random_state=1, loss=loss)
                           .fit(Xs, yy), lambda e: e.result_.diverged.all(),
                           warn=mlr.ConvergenceWarning, warn_text=("lr", r"rms\(X\)"))

    yield 107, "IFCA lr=1e6 on plain data: a divergence (ConvergenceWarning), not an overflow", \
        diverges_naming_scale(X, 1e6)
    yield 107, "IFCA float32 on X * 1e20: the first gradient overflows; the warning names rms(X)", \
        lambda: _ok(lambda: mlr.IFCA(2, n_init=2, n_iter=30, random_state=1, dtype=np.float32).fit(X * 1e20, y),
                    lambda e: e.result_.diverged.all(), warn=mlr.ConvergenceWarning,
                    warn_text=("lr", r"rms\(X\) = \S+e\+(19|20)"))
    yield 107, "IFCA on X * 1e100, lr=0.1: diverges after a step; the warning names rms(X)", \
        diverges_naming_scale(X * 1e100, 0.1)
    yield 107, "IFCA logistic on X * 1e200: diverges after a step; the warning names rms(X)", \
        diverges_naming_scale(X * 1e200, 0.1, "logistic", (y > 0).astype(float))
    big = _mix(m=40, n=60, d=5, rng=3)
    ref = mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y)
    yield 107, "IFCA fit on y * 1e12 still fits (large but no overflow)", \
        lambda: _ok(lambda: mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y * 1e12),
                    lambda e: not e.result_.diverged.any()
                    and np.allclose(e.coef_ / 1e12, ref.coef_, rtol=1e-5, atol=1e-8))

    # init_close / separation: distances computed with scaling
    def close_ok(theta, alpha0=0.25, direction="random", dtype=None):
        theta = np.asarray(theta)

        def half_norm(v):  # ||v|| / 2 without under- or overflow
            v = v / 2
            top = float(np.max(np.abs(v)))
            return top * float(np.linalg.norm(v / top))

        def check(init):
            th = theta.astype(np.float64)
            delta_half = min(half_norm(th[j] / 2 - th[l] / 2) * 2 for j in range(len(th))
                             for l in range(j + 1, len(th)))
            want = (0.5 - alpha0) * delta_half
            got = init.astype(np.float64) - th
            r = np.array([[half_norm(g) for g in run] for run in got])
            return np.isfinite(init).all() and np.allclose(r, want, rtol=1e-6, atol=0)
        return lambda: _ok(lambda: mlr.init_close(theta, alpha0, n_runs=3, rng=0,
                                                  direction=direction, dtype=dtype), check)

    yield 107, "init_close rows 1e-200 apart (squared distance underflows)", \
        close_ok([[1e-200, 0.0], [0.0, 1e-200]])
    yield 107, "init_close adversarial, rows 1e-200 apart", \
        close_ok([[1e-200, 0.0], [0.0, 1e-200]], direction="adversarial")
    def placed_or_refused(theta):
        placed = close_ok(theta)
        refused = lambda: _err(lambda: mlr.init_close(theta, 0.25, n_runs=3, rng=0), ValueError,  # noqa: E731
                               "theta_star", "resolution")
        return lambda: placed() if placed()[0] == "correct result" else refused()

    yield 107, "init_close rows [1, 0] and [1, 1e-170] (closer than float64 resolves at 1)", \
        placed_or_refused([[1.0, 0.0], [1.0, 1e-170]])
    yield 107, "init_close rows [0, 0] and [0, 1e-170] (the same gap, centred)", \
        close_ok([[0.0, 0.0], [0.0, 1e-170]])
    yield 107, "init_close subnormal rows 0 and 5e-320 (d=1)", close_ok([[0.0], [5e-320]])
    yield 107, "init_close rows 1e200 apart (squared distance overflows)", \
        close_ok([[1e200, 0.0], [0.0, 1e200]])
    yield 107, "init_close adversarial rows +-1e308 (the distance itself overflows)", \
        close_ok([[1e308], [-1e308]], direction="adversarial")
    yield 107, "init_close float32 rows 1e-30 apart", \
        close_ok(np.array([[1e-30, 0.0], [0.0, 1e-30]], dtype=np.float32))
    yield 107, "init_close equal rows still refused (names theta_star)", \
        lambda: _err(lambda: mlr.init_close([[1e-200, 0.0], [1e-200, 0.0]], 0.25, 2, rng=0),
                     ValueError, "theta_star", "distinct")
    tiny = mlr.Mixture(X=np.zeros((2, 1, 2)), y=np.zeros((2, 1)),
                       theta_star=np.array([[1e-200, 0.0], [0.0, 1e-200]]),
                       labels=np.array([0, 1]), R=1e-200, sigma=0.0, theta_scale="code")
    yield 107, "Mixture.separation of rows 1e-200 apart", \
        lambda: _ok(lambda: tiny.separation, lambda s: np.isclose(s, np.sqrt(2) * 1e-200, rtol=1e-12, atol=0))


# --------------------------------------------------------------- 108: generators say so
def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


#: digests of data sets whose patterns are distinct, made by the code before issue 25 (commit
#: 1412b3b): such seeds must keep giving the same numbers
DIGESTS = {
    "make_mixture(12, 5, 2, 3, 1.0, 0.1, rng=0)": "9fc5f01363296c95",
    "make_mixture(8, 5, 3, 2, 1.0, 0.1, rng=1)": "d3aa0716dd969fdd",
    "make_mixture(8, 5, 3, 2, 1.0, 0.1, theta_scale='norm', rng=2)": "778d474c5160bd6c",
    "make_student_t_mixture(8, 5, 3, 2, 1.0, 0.1, rng=1)": "fa5971f9883b8c0b",
    "make_logistic_mixture(8, 5, 1, 2, 2.0, rng=0)": "bc38b2a7dfbbb85f",
    "draw_trial(10, 5, 1000, 2, rng=123, dtype=np.float32)": "65cb146aa9ba2e69",
    "draw_trial(12, 4, 3, 3, rng=1)": "6e786a2f4acd62e3",
}


def _draw_digest(expr):
    out = eval(expr, {"np": np, **{k: getattr(mlr.data, k) for k in (  # noqa: S307 - fixed text
        "make_mixture", "make_student_t_mixture", "make_logistic_mixture", "draw_trial")}})
    if isinstance(out, mlr.Trial):
        return _digest(out.X, out.B, out.z, out.labels)
    return _digest(out.X, out.y, out.theta_star, out.labels)


def _dup_warning():
    return getattr(mlr.data, "DuplicateClustersWarning", None) or UserWarning


def _cases_generators():
    D = mlr.data

    def refuse(fn):
        return lambda: _err(fn, ValueError, r"\bd\b", r"\bk\b")

    yield 108, "make_mixture d=1 k=2 (one nonzero 0/1 pattern)", \
        refuse(lambda: D.make_mixture(4, 5, 1, 2, 1.0, 0.1, rng=0))
    yield 108, "make_mixture d=2 k=4 (3 patterns)", refuse(lambda: D.make_mixture(8, 5, 2, 4, 1.0, 0.1, rng=0))
    yield 108, "make_mixture d=3 k=8 (7 patterns)", refuse(lambda: D.make_mixture(8, 5, 3, 8, 1.0, 0.1, rng=0))
    yield 108, "make_mixture d=1 k=2 theta_scale='norm' sizes=[1, 3]", \
        refuse(lambda: D.make_mixture(4, 5, 1, 2, 1.0, 0.1, theta_scale="norm", sizes=[1, 3], rng=0))
    yield 108, "draw_trial d=1 k=2", refuse(lambda: D.draw_trial(4, 5, 1, 2, rng=0))
    yield 108, "make_student_t_mixture d=1 k=3", \
        refuse(lambda: D.make_student_t_mixture(6, 5, 1, 3, 1.0, 0.1, rng=0))
    yield 108, "make_logistic_mixture d=1 k=3 (two directions +-1)", \
        refuse(lambda: D.make_logistic_mixture(6, 5, 1, 3, 2.0, rng=0))

    def warns(fn):
        return lambda: _ok(fn, lambda mix: True, warn=_dup_warning(),
                           warn_text=(r"\b0\b", r"\b1\b", "probability"))

    yield 108, "make_mixture d=2 k=2 seed 4 draws two equal patterns", \
        warns(lambda: D.make_mixture(4, 5, 2, 2, 1.0, 0.1, rng=4))
    yield 108, "make_mixture d=3 k=2 seed 0 draws two equal patterns", \
        warns(lambda: D.make_mixture(4, 5, 3, 2, 1.0, 0.1, rng=0))
    yield 108, "make_mixture theta_scale='norm' d=2 k=2 seed 7", \
        warns(lambda: D.make_mixture(4, 5, 2, 2, 1.0, 0.1, theta_scale="norm", rng=7))
    yield 108, "draw_trial d=2 k=3 seed 1", warns(lambda: D.draw_trial(6, 5, 2, 3, rng=1))
    yield 108, "make_student_t_mixture d=3 k=2 seed 4", \
        warns(lambda: D.make_student_t_mixture(4, 5, 3, 2, 1.0, 0.1, rng=4))
    yield 108, "make_logistic_mixture d=1 k=2 seed 1 (both +R)", \
        warns(lambda: D.make_logistic_mixture(4, 5, 1, 2, 2.0, rng=1))
    yield 108, "make_mixture d=3 k=4 seed 0 with sizes", \
        warns(lambda: D.make_mixture(8, 5, 3, 4, 1.0, 0.1, sizes=[1, 2, 2, 3], rng=0))
    for expr, digest in DIGESTS.items():
        yield 108, f"distinct patterns: same numbers as before, no warning: {expr}", \
            (lambda e=expr, g=digest: _ok(lambda: _draw_digest(e), lambda h, g=g: h == g,
                                          nowarn=_dup_warning()))
    yield 108, "make_mixture d=1 k=1 (one cluster) works", \
        lambda: _ok(lambda: D.make_mixture(3, 5, 1, 1, 1.0, 0.1, rng=0), lambda mix: mix.k == 1,
                    nowarn=_dup_warning())


def cases():
    yield from _cases_numeric()
    yield from _cases_generators()
    yield from _cases_interrupt()


if __name__ == "__main__":
    for cls, name, fn in cases():
        res = fn()
        label, detail = (res, "") if isinstance(res, str) else res
        print(f"[{label:>14}] {cls} | {name} | {detail}", flush=True)
