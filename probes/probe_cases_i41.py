"""Probe cases of issue 41 ("Nothing silently wrong, v3"), classes numbered 141-148: each case of
the issue, and new instances of each class.

* 141 claims that cannot deadlock: forged locks (this process's own pid with another token, an
  unrelated live pid that started at another time, a 48 h old claim of an older mixlinreg), a
  folder where a lock belongs;
* 142 a damaged compiled-kernel cache (a truncated ``.nbc``, a garbage ``.nbi``) is named and
  rebuilt;
* 143 generators sized before they draw, errors naming the user's parameter;
* 144 a missing input store is not a verdict;
* 145 workers end with their parent (no orphans after ``kill -9``);
* 146 faults end with the status the docs give (a full disk: exit 1);
* 147 divergence warns in every method;
* 148 settings silently ignored and messages naming the wrong thing, in the API (underflow,
  ``use_backend`` as a statement, ``rng`` unused, ``predict`` with a 3-d ``y``, ``participation``).

``cases()`` yields ``(class, name, callable)``; each callable returns a label of
``probes/probe_reliability.py`` or ``(label, detail)``::

    python probes/probe_reliability.py --only 141 142 143 144 145 146 147 148 -v
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {141: "claims that cannot deadlock", 142: "a damaged kernel cache is rebuilt",
           143: "work sized, errors naming the user's parameter",
           144: "a missing store is not a verdict", 145: "no orphans",
           146: "fault statuses as documented", 147: "divergence warns everywhere",
           148: "no setting silently ignored (API)"}


@contextlib.contextmanager
def _tmp():
    with tempfile.TemporaryDirectory(prefix="mlr-i41-") as d:
        yield Path(d)


def _run(argv, cwd, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "mixlinreg.cli", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _one_line(p):
    err = p.stderr.strip().splitlines()
    return len(err) <= 2 and "Traceback" not in p.stderr


# ----------------------------------------------------------------------------- 141: claims
def _claim_case(forge, expect_free=True):
    def case():
        import pandas as pd

        from mixlinreg.runner.store import _HOST, UnitStore, _proc_start

        with _tmp() as d:
            info = forge(os.getpid(), os.getppid(), _proc_start)
            lock = d / "u.lock"
            lock.write_text(json.dumps({"host": _HOST, "time": 0, "token": "forged", **info}))
            if "age" in info:
                os.utime(lock, (time.time() - info["age"],) * 2)
            us = UnitStore(d)
            got = us.claim("u")
            if got:
                us.release("u")
            if got != expect_free:
                return "silent wrong", f"claim() = {got}, expected {expect_free}"
            if expect_free:
                t0 = time.perf_counter()
                df, computed = UnitStore(d).get_or_compute("u", lambda: pd.DataFrame({"x": [1]}),
                                                           poll=0.01)
                if not computed or time.perf_counter() - t0 > 30:
                    return "crash", "waited on a dead claim"
            return "correct result", ""
    return case


def _lock_folder():
    import pandas as pd

    from mixlinreg.runner.store import StoreError, UnitStore

    with _tmp() as d:
        (d / "u.lock").mkdir()
        try:
            UnitStore(d).get_or_compute("u", lambda: pd.DataFrame({"x": [1]}), poll=0.01)
        except StoreError as exc:
            return ("clear error", "") if "is a folder" in str(exc) else ("unclear", str(exc))
        return "silent wrong", "a folder where the lock belongs was ignored"


# ----------------------------------------------------------------------------- 142: numba cache
_VALUE = ("import mixlinreg.losses as L, numpy as np; "
          "print(float(L.LOSSES['huber'].value(np.array([3.0]), np.array([1.0]), delta=1.0)[0]))")


def _damaged_cache(which, how):
    def case():
        with _tmp() as d:
            env = {**os.environ, "NUMBA_CACHE_DIR": str(d)}
            env.pop("NUMBA_DISABLE_JIT", None)
            first = subprocess.run([sys.executable, "-c", _VALUE], env=env, capture_output=True,
                                   text=True, timeout=600)
            files = sorted(d.rglob(f"losses*{which}"))
            if first.returncode != 0 or not files:
                return "crash", first.stderr[-200:]
            data = files[0].read_bytes()
            files[0].write_bytes(data[:len(data) // 3] if how == "truncate" else b"\x80garbage")
            again = subprocess.run([sys.executable, "-c", _VALUE], env=env, capture_output=True,
                                   text=True, timeout=600)
            if again.returncode != 0:
                return "crash", again.stderr.strip().splitlines()[-1][:150]
            if again.stdout.strip() != first.stdout.strip():
                return "silent wrong", f"{again.stdout!r} != {first.stdout!r}"
            named = files[0].name in again.stderr and "damaged" in again.stderr
            return ("correct result", "") if named else ("unclear", "rebuilt without a word")
    return case


# ----------------------------------------------------------------------------- 143: sizing, names
def _sized(kw, names):
    def case():
        from mixlinreg.synthetic import make_fedprox_synthetic

        try:
            make_fedprox_synthetic(**kw, rng=0)
        except MemoryError as exc:
            ok = all(n in str(exc) for n in names)
            return ("clear error", "") if ok else ("unclear", str(exc)[:150])
        except Exception as exc:  # noqa: BLE001
            return "unclear", f"{type(exc).__name__}: {str(exc)[:120]}"
        return "correct result", "it fitted"
    return case


def _digits_m(argv, needle):
    def case():
        with _tmp() as d:
            p = _run(["digits", *argv, "--preset", "smoke", "--no-progress"], d)
            if p.returncode == 0:
                return "silent wrong", "accepted"
            return ("clear error", "") if needle in p.stderr and _one_line(p) else \
                ("unclear", p.stderr.strip()[-150:])
    return case


# ----------------------------------------------------------------------------- 144: missing store
def _missing_store(sid, extra=()):
    def case():
        with _tmp() as d:
            p = _run(["check", sid, "--preset", "smoke", "--out", "o", "--no-progress", *extra], d)
            record = (d / "o" / f"{sid}_smoke.json").exists()
            said = "mixlinreg reproduce" in p.stdout + p.stderr
            if p.returncode == 0 or record:
                return "silent wrong", f"exit {p.returncode}, record written: {record}"
            return ("clear error", "") if said else ("unclear", (p.stdout + p.stderr)[-150:])
    return case


# ----------------------------------------------------------------------------- 145: orphans
_PARENT = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from mixlinreg.runner import Workload, run

    def slow(unit, ss):
        time.sleep(0.5)
        return pd.DataFrame({"x": [1.0]})

    if __name__ == "__main__":
        wl = Workload(name="orphans", preset="smoke", key={"a": int(sys.argv[2])},
                      units=tuple(f"u{i}" for i in range(40)), compute=slow, seed=0, pin_blas=False)
        run(wl, sys.argv[1], n_jobs=int(sys.argv[3]), backend="loky", progress=False)
""")


def _orphans(variant, n_jobs, sig):
    def case():
        from mixlinreg.runner import owner_alive

        with _tmp() as d:
            (d / "parent.py").write_text(_PARENT)
            proc = subprocess.Popen([sys.executable, str(d / "parent.py"), str(d / "s"),
                                     str(variant), str(n_jobs)], cwd=d, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            t0 = time.time()
            while time.time() - t0 < 300 and len(list((d / "s").rglob("u*.csv"))) < 2:
                time.sleep(0.2)
            kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)],
                                  capture_output=True, text=True).stdout.split()
            os.kill(proc.pid, sig)
            proc.wait()
            at_kill = len(list((d / "s").rglob("u*.csv")))
            time.sleep(4)
            alive = [k for k in kids if owner_alive(int(k), None)]
            later = len(list((d / "s").rglob("u*.csv")))
            for k in alive:
                with contextlib.suppress(OSError):
                    os.kill(int(k), signal.SIGKILL)
            if alive or later > at_kill + n_jobs:
                return "lost", f"{len(alive)} workers alive, {later - at_kill} units written after"
            return "correct result", ""
    return case


# ----------------------------------------------------------------------------- 146: statuses
def _status(exc_factory, code):
    def case():
        from mixlinreg import _cli_faults

        class State:
            interrupted, signal, doing = False, None, ""

            def tail(self):
                return ""

        got, line = _cli_faults._ending(exc_factory(), State())
        return ("correct result", "") if got == code else ("unclear", f"exit {got}: {line[:100]}")
    return case


# ----------------------------------------------------------------------------- 147: divergence
def _diverges(name, kw):
    def case():
        import mixlinreg as mlr
        from mixlinreg import baselines

        mix = mlr.make_mixture(m=8, n=20, d=5, k=2, R=1.0, sigma=0.1, rng=5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = getattr(baselines, name)(mix.X, mix.y, **kw)
        warned = any(issubclass(w.category, mlr.ConvergenceWarning) for w in caught)
        if not res.extra.get("diverged"):
            return "correct result", "did not diverge"
        return ("clear error", "") if warned else ("unclear", "diverged without a warning")
    return case


# ----------------------------------------------------------------------------- 148: API settings
def _underflow(scale):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = mlr.make_mixture(m=20, n=30, d=4, k=2, R=2.0, sigma=0.1, rng=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = mlr.ifca(mix.X * scale, mix.y * scale, mix.theta_star[None] * 1.0, 0.1,
                               n_iter=5)
            except (ValueError, ArithmeticError) as exc:
                return ("clear error", "") if "underflow" in str(exc).lower() or "scale" in \
                    str(exc).lower() else ("unclear", str(exc)[:120])
        said = [str(w.message) for w in caught if "underflow" in str(w.message).lower()
                or "scale" in str(w.message).lower()]
        if said:
            return "clear error", ""
        return "silent wrong", f"no word of the underflow (labels {np.bincount(res.labels[0])})"
    return case


def _use_backend_statement():
    import warnings as w

    import mixlinreg as mlr

    from mixlinreg import _kernel_choice
    from mixlinreg._kernel_choice import current_kernel

    saved = dict(getattr(_kernel_choice, "_process", {}))  # a statement now sets the default:
    try:  # put it back, so that the later cases run on numba
        with w.catch_warnings():
            w.simplefilter("ignore")
            try:
                use = getattr(mlr, "use_kernel", None) or mlr.use_backend
                use("jax")
            except Exception as exc:  # noqa: BLE001
                return "clear error", f"{type(exc).__name__}"
        return ("correct result", "") if current_kernel() == "jax" else \
            ("silent wrong", "use_kernel('jax') as a statement did nothing")
    finally:
        if saved:
            _kernel_choice._process.update(saved)


def _rng_unused():
    import numpy as np

    import mixlinreg as mlr

    mix = mlr.make_mixture(m=10, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    try:
        mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2, rng="x")
    except (TypeError, ValueError) as exc:
        return ("clear error", "") if "rng" in str(exc) else ("unclear", str(exc)[:100])
    return "silent wrong", "rng='x' accepted"


def _predict_3d():
    import mixlinreg as mlr

    mix = mlr.make_mixture(m=10, n=20, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    est = mlr.IFCA(2, n_iter=5, random_state=0).fit(mix.X, mix.y)
    try:
        est.predict(mix.X, mix.y[..., None])
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        return ("unclear", msg[:120]) if "y_index" in msg else ("clear error", "")
    return "silent wrong", "a 3-d y accepted"


def cases():
    yield 141, "lock of this process's own pid, another token (restarted container as pid 1)", \
        _claim_case(lambda me, other, start: {"pid": me, "start": start(me)})
    yield 141, "lock of an unrelated live pid that started at another time", \
        _claim_case(lambda me, other, start: {"pid": other, "start": (start(other) or 0) + 999})
    yield 141, "48 h old lock of a live pid without a start time (older mixlinreg)", \
        _claim_case(lambda me, other, start: {"pid": other, "age": 48 * 3600})
    yield 141, "fresh lock of a live process (respected)", \
        _claim_case(lambda me, other, start: {"pid": other, "start": start(other)}, False)
    yield 141, "a folder named <unit>.lock", _lock_folder
    yield 142, "truncated .nbc", _damaged_cache(".nbc", "truncate")
    yield 142, "garbage .nbi", _damaged_cache(".nbi", "garbage")
    yield 142, "garbage .nbc", _damaged_cache(".nbc", "garbage")
    yield 143, "make_fedprox_synthetic(m=100, L=4, size_mean=30)", \
        _sized(dict(m=100, L=4, size_mean=30.0), ["size_mean", "m = 100"])
    yield 143, "make_fedprox_synthetic(m=100000, d=2000)", \
        _sized(dict(m=100000, d=2000), ["m = 100000", "d = 2000"])
    yield 143, "make_fedprox_synthetic(m=200, size_sd=12)", \
        _sized(dict(m=200, size_sd=12.0), ["size_sd"])
    yield 143, "make_fedprox_synthetic(m=20000, d=20000, size_min=2)", \
        _sized(dict(m=20000, d=20000, size_min=2), ["m = 20000", "d = 20000"])
    yield 143, "mixlinreg digits --m 3", _digits_m(["--m", "3"], "m must be at least k = 4")
    yield 143, "mixlinreg digits --m 2 --rotations 0,90,180", \
        _digits_m(["--m", "2", "--rotations", "0,90,180"], "m must be at least k = 3")
    yield 144, "check F2a without its store", _missing_store("F2a")
    yield 144, "check RS with --stores pointing nowhere", _missing_store("RS", ("--stores", "x"))
    yield 144, "check F2d --stores nowhere", _missing_store("F2d", ("--stores", "nowhere"))
    yield 145, "kill -9 of a loky run with 2 workers", _orphans(1, 2, signal.SIGKILL)
    yield 145, "kill -9 of a loky run with 3 workers", _orphans(2, 3, signal.SIGKILL)

    def store_write():
        from mixlinreg.runner.store import StoreWriteError

        return StoreWriteError("result store: no space left on the disk (ENOSPC)")

    def store_error():
        from mixlinreg.runner.store import StoreError

        return StoreError("manifest.json is damaged")

    yield 146, "a full disk while a unit is written: exit 1", _status(store_write, 1)
    yield 146, "a damaged manifest: exit 1", _status(store_error, 1)
    yield 146, "a bad argument: exit 2", _status(lambda: ValueError("n must be >= 1"), 2)
    for name, kw in [("cfl", dict(lr=50.0, max_rounds=40)),
                     ("fpfc", dict(lr=50.0, n_rounds=40, rng=0)),
                     ("fedavg", dict(lr=80.0, n_rounds=40)),
                     ("per_fedavg", dict(alpha=80.0, beta=80.0, n_rounds=40)),
                     ("local_train", dict(lr=5000.0, n_steps=200))]:
        yield 147, f"{name} with a step far past 2/L", _diverges(name, kw)
    yield 148, "ifca on data scaled by 1e-300 (every loss underflows)", _underflow(1e-300)
    yield 148, "ifca on data scaled by 1e-170 (squares underflow)", _underflow(1e-170)
    yield 148, "use_kernel('jax') called as a statement", _use_backend_statement
    yield 148, "ifca(..., rng='x') when nothing is drawn", _rng_unused
    yield 148, "IFCA.predict(X, y) with a 3-d y", _predict_3d
