"""Probe cases of issue 41's remaining items, classes 149-153: new instances of the classes that
class 148 opened (``probes/probe_cases_i41.py``), one class per item.

* 149 underflow named like overflow: data whose losses underflow in ``ifca`` (float32, a float64
  cast to float32, the Huber loss), the estimator and the iterative baselines; the closed-form
  baselines and small data above the rule still fit;
* 150 ``use_kernel`` / ``use_backend`` as a statement and as a context, an unknown kernel, JAX
  absent;
* 151 ``rng`` checked whether or not it is used;
* 152 one meaning for ``participation`` (a count in ``ifca``, a fraction in ``fpfc`` and
  ``digits``);
* 153 a bad ``NUMBA_NUM_THREADS`` is one line (subprocesses).

``cases()`` yields ``(class, name, callable)``; each callable returns a label of
``probes/probe_reliability.py`` or ``(label, detail)``::

    python probes/probe_reliability.py --only 149 150 151 152 153 -v

The cases import ``mixlinreg`` from this file's repository (subprocesses too, by ``PYTHONPATH``),
so a copy of an older commit's tree probes that commit.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASSES = {149: "underflow named like overflow", 150: "use_kernel as a statement and a context",
           151: "rng checked whether or not it is used", 152: "one meaning for participation",
           153: "bad NUMBA_NUM_THREADS in one line"}
USER = (ValueError, TypeError, ArithmeticError, ImportError)


def _mix(**kw):
    import mixlinreg as mlr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlr.make_mixture(**{**dict(m=20, n=30, d=4, k=2, R=2.0, sigma=0.1, rng=0), **kw})


def _expect_error(fn, *words):
    """``clear error`` for a user-facing exception naming every word, ``unclear`` for one that
    does not, ``crash`` for another exception, ``silent wrong`` for none."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except USER as exc:
        msg = str(exc)
        missing = [w for w in words if w.lower() not in msg.lower()]
        return ("unclear", f"not naming {missing}: {msg[:120]}") if missing else ("clear error", "")
    except Exception as exc:  # noqa: BLE001 - classified
        return "crash", f"{type(exc).__name__}: {str(exc)[:120]}"
    return "silent wrong", "no error"


# ----------------------------------------------------------------------------- 149: underflow
def _ifca_tiny(scale, dtype="float64", loss="squared", y_scale=None):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = _mix()
        y = mix.y * (scale if y_scale is None else y_scale)
        return _expect_error(lambda: mlr.ifca(mix.X * scale, y, mix.theta_star[None] * 1.0, 0.1,
                                              n_iter=5, loss=loss, dtype=np.dtype(dtype)),
                             "underflow", "max|X|", "max|y|", "rescale")
    return case


def _estimator_tiny(dtype):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = _mix()
        est = mlr.IFCA(2, n_iter=5, random_state=0, dtype=np.dtype(dtype))
        return _expect_error(lambda: est.fit(mix.X * 1e-300, mix.y * 1e-300), "underflow",
                             "max|X|", "rescale")
    return case


def _baseline_tiny(name, **kw):
    def case():
        from mixlinreg import baselines

        mix = _mix()
        args = (mix.X * 1e-300, mix.y * 1e-300)
        if name == "soft_ifca":
            args += (mix.theta_star * 1.0,)
        if name == "ifca_weighted":
            args += (mix.theta_star[None] * 1.0, 0.1)
        return _expect_error(lambda: getattr(baselines, name)(*args, **kw), name, "underflow",
                             "max|X|")
    return case


def _closed_form_tiny():
    import numpy as np

    from mixlinreg import baselines

    mix = _mix()
    a = baselines.oracle(mix.X, mix.y, mix.labels).theta
    b = baselines.oracle(mix.X * 1e-300, mix.y * 1e-300, mix.labels).theta
    return ("correct result", "") if np.allclose(a, b, rtol=1e-10) else \
        ("silent wrong", "oracle on 1e-300 data differs")


def _small_but_fine(scale, dtype):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = _mix()
        dt = np.dtype(dtype)
        try:
            res = mlr.ifca((mix.X * scale).astype(dt), (mix.y * scale).astype(dt),
                           mix.theta_star[None] * 1.0, 0.1, n_iter=0, dtype=dt)
        except USER as exc:
            return "unclear", f"refused a valid input: {type(exc).__name__}: {str(exc)[:100]}"
        ari = mlr.adjusted_rand(mix.labels, res.labels[0])
        return ("correct result", "") if ari == 1.0 else ("silent wrong", f"ARI {ari}")
    return case


# ----------------------------------------------------------------------------- 150: use_kernel
@contextlib.contextmanager
def _kernel_kept():
    """Whatever a case does to the kernel's choice, the next case starts from numba."""
    from mixlinreg import _kernel_choice

    saved = dict(getattr(_kernel_choice, "_process", {}))
    try:
        yield
    finally:
        if saved:
            _kernel_choice._process.update(saved)


def _have_jax():
    import importlib

    try:
        importlib.import_module("jax")
    except ImportError:
        return False
    return True


def _bare(name):
    def case():
        import numpy as np

        import mixlinreg as mlr

        if not _have_jax():
            return "correct result", "JAX not installed: the statement cannot be judged"
        mix = _mix(m=10, n=20, d=3)
        with _kernel_kept(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(mlr, name)("jax")
            method = mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2).method
        return ("correct result", "") if method == "jax" else \
            ("silent wrong", f"{name}('jax') as a statement: the next call ran {method!r}")
    return case


def _bare_seen_by_threads():
    import threading

    import mixlinreg as mlr
    from mixlinreg._kernel_choice import current_kernel

    if not _have_jax():
        return "correct result", "JAX not installed"
    seen = []
    with _kernel_kept():
        mlr.use_kernel("jax")
        t = threading.Thread(target=lambda: seen.append(current_kernel()))
        t.start()
        t.join()
    return ("correct result", "") if seen == ["jax"] else ("silent wrong", f"thread saw {seen}")


def _context_restores():
    import mixlinreg as mlr
    from mixlinreg._kernel_choice import current_kernel

    if not _have_jax():
        return "correct result", "JAX not installed"
    with _kernel_kept():
        before = current_kernel()
        with mlr.use_kernel("jax"):
            inside = current_kernel()
        after = current_kernel()
    ok = inside == "jax" and after == before
    return ("correct result", "") if ok else ("silent wrong", f"inside {inside}, after {after}")


def _no_jax():
    import mixlinreg as mlr
    from mixlinreg._kernel_choice import current_kernel

    saved = {k: v for k, v in sys.modules.items() if k == "jax" or k.startswith("jax.")}
    with _kernel_kept():
        sys.modules["jax"] = None  # "import jax" raises ImportError
        try:
            label = _expect_error(lambda: mlr.use_kernel("jax"), "pip install", "mixlinreg[jax]")
            if label[0] == "clear error" and current_kernel() != "numba":
                label = ("silent wrong", f"the failed call left the kernel {current_kernel()!r}")
        finally:
            sys.modules.pop("jax", None)
            sys.modules.update(saved)
    return label


def _unknown_kernel():
    import mixlinreg as mlr

    with _kernel_kept():
        return _expect_error(lambda: mlr.use_kernel("cuda"), "kernel must be one of", "cuda")


# ----------------------------------------------------------------------------- 151: rng
def _rng(bad, with_mask=False):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = _mix(m=10, n=20, d=3)
        kw = dict(participation=np.ones((2, 1, 10), dtype=bool)) if with_mask else {}
        return _expect_error(lambda: mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2,
                                              rng=bad(), **kw), "rng")
    return case


# ----------------------------------------------------------------------------- 152: participation
def _ifca_fraction(f):
    def case():
        import numpy as np

        import mixlinreg as mlr

        mix = _mix(m=10, n=20, d=3)
        return _expect_error(lambda: mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2,
                                              participation=f, rng=0),
                             "participation", "fraction", f"participation={max(1, round(f * 10))}")
    return case


def _fpfc_count(v):
    def case():
        from mixlinreg import baselines

        mix = _mix(m=10, n=20, d=3)
        return _expect_error(lambda: baselines.fpfc(mix.X, mix.y, participation=v, n_rounds=2,
                                                    rng=0), "participation", "fraction", "int")
    return case


def _fpfc_one_warned():
    import numpy as np

    from mixlinreg import baselines

    mix = _mix(m=10, n=20, d=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = baselines.fpfc(mix.X, mix.y, participation=1, n_rounds=3, rng=0)
    new = baselines.fpfc(mix.X, mix.y, participation=1.0, n_rounds=3, rng=0)
    if not np.array_equal(old.theta, new.theta):
        return "silent wrong", "participation=1 no longer every machine"
    said = any(issubclass(w.category, FutureWarning) and "participation" in str(w.message)
               for w in caught)
    return ("correct result", "") if said else \
        ("silent wrong", "participation=1 (a count of one in ifca) taken as every machine, unwarned")


def _digits_count():
    from mixlinreg import digits

    return _expect_error(lambda: digits.participation_masks(10, 3, 2), "participation", "int",
                         "fraction")


def _ifca_count_ok():
    import numpy as np

    import mixlinreg as mlr

    mix = _mix(m=10, n=20, d=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            res = mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), 0.1, n_iter=2, participation=4, rng=0)
        except (USER, FutureWarning) as exc:
            return "unclear", f"refused or warned a valid count: {str(exc)[:100]}"
    return ("correct result", "") if np.isfinite(res.theta).all() else ("silent wrong", "")


# ----------------------------------------------------------------------------- 153: threads
def _threads(value, argv, code=2):
    def case():
        env = {**os.environ, "NUMBA_NUM_THREADS": value, "PYTHONPATH": str(ROOT)}
        p = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
        err = p.stderr.strip()
        if p.returncode < 0:
            return "crash", f"killed by signal {-p.returncode}"
        if p.returncode == 0:
            return "silent wrong", f"exit 0: {err[-120:]}"
        if "Traceback" in err and argv[0] == "-m":
            return "crash", err.splitlines()[-1][:120]
        last = err.splitlines()[-1] if err else ""
        named = "NUMBA_NUM_THREADS" in last and repr(value) in last and "from 1 to" in last
        if p.returncode == code and named:
            return "clear error", ""
        return "unclear", f"exit {p.returncode}: {last[:120]}"
    return case


def _threads_ok(value):
    def case():
        env = {**os.environ, "NUMBA_NUM_THREADS": value, "PYTHONPATH": str(ROOT)}
        p = subprocess.run([sys.executable, "-c", "import mixlinreg"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
        return ("correct result", "") if p.returncode == 0 else \
            ("unclear", f"refused a valid value: {p.stderr.strip()[-120:]}")
    return case


_IFCA = ("import mixlinreg as mlr; mix = mlr.make_mixture(m=20, n=50, d=5, k=2, R=1.0, sigma=0.1, "
         "rng=0); mlr.ifca(mix.X, mix.y, mlr.init_close(mix.theta_star, 0.25, n_runs=2, rng=1), "
         "lr=0.1, n_iter=5)")


def cases():
    yield 149, "ifca float32 on data scaled by 1e-20", _ifca_tiny(1e-20, "float32")
    yield 149, "ifca dtype=float32 on float64 data scaled by 1e-300 (0 once cast)", \
        _ifca_tiny(1e-300, "float32")
    yield 149, "ifca huber loss, y scaled by 1e-170 (its squares underflow)", \
        _ifca_tiny(1.0, loss="huber", y_scale=1e-170)
    yield 149, "IFCA.fit float64 on data scaled by 1e-300", _estimator_tiny("float64")
    yield 149, "IFCA.fit float32 on data scaled by 1e-300", _estimator_tiny("float32")
    for name, kw in [("cfl", {}), ("fpfc", dict(rng=0)), ("fedavg", {}), ("local_train", {}),
                     ("per_fedavg", dict(alpha=0.1, beta=0.1)),
                     ("soft_ifca", dict(temperature=1.0, lr=0.1)), ("ifca_weighted", {})]:
        yield 149, f"{name} on data scaled by 1e-300", _baseline_tiny(name, **kw)
    yield 149, "oracle on data scaled by 1e-300 (closed form: still fits)", _closed_form_tiny
    yield 149, "ifca float64 on data scaled by 1e-100 (above the rule: clusters)", \
        _small_but_fine(1e-100, "float64")
    yield 149, "ifca float32 on data scaled by 1e-14 (above the rule: clusters)", \
        _small_but_fine(1e-14, "float32")
    yield 150, "use_kernel('jax') as a statement", _bare("use_kernel")
    yield 150, "use_backend('jax') as a statement", _bare("use_backend")
    yield 150, "use_kernel('jax') as a statement, seen by a new thread", _bare_seen_by_threads
    yield 150, "with use_kernel('jax'): restores on exit", _context_restores
    yield 150, "use_kernel('jax') without JAX", _no_jax
    yield 150, "use_kernel('cuda')", _unknown_kernel
    yield 151, "ifca(rng=1.5), nothing drawn", _rng(lambda: 1.5)
    yield 151, "ifca(rng=RandomState(0)), nothing drawn", \
        _rng(lambda: __import__("numpy").random.RandomState(0))
    yield 151, "ifca(rng=object()), nothing drawn", _rng(object)
    yield 151, "ifca(rng='x') with a participation mask", _rng(lambda: "x", with_mask=True)
    yield 152, "ifca(participation=0.5)", _ifca_fraction(0.5)
    yield 152, "ifca(participation=1.0)", _ifca_fraction(1.0)
    yield 152, "fpfc(participation=3)", _fpfc_count(3)
    yield 152, "fpfc(participation=1): every machine, said", _fpfc_one_warned
    yield 152, "digits.participation_masks(10, 3, 2)", _digits_count
    yield 152, "ifca(participation=4) still a count", _ifca_count_ok
    for value in ("0", "-1", "abc", "1.5", "100000"):
        yield 153, f"NUMBA_NUM_THREADS={value} mixlinreg --help", \
            _threads(value, ["-m", "mixlinreg.cli", "--help"])
    yield 153, "NUMBA_NUM_THREADS=0 python -c 'import mixlinreg'", \
        _threads("0", ["-c", "import mixlinreg"], code=1)
    yield 153, "NUMBA_NUM_THREADS=100000 and an ifca call", _threads("100000", ["-c", _IFCA],
                                                                    code=1)
    yield 153, "NUMBA_NUM_THREADS=1 (valid)", _threads_ok("1")
