"""Probe mixlinreg with bad and edge inputs and classify every outcome (issue 11).

Run from the repository root::

    python probes/probe_reliability.py            # all cases, a table at the end
    python probes/probe_reliability.py -v         # also one line per case

Each case is an input (API call, estimator, TOML config, CLI command or environment) with the
outcome a careful user is owed: an error that names the parameter, or a correct result. The
outcome actually seen is classified automatically:

* ``clear error``: the expected exception type (or CLI exit status 2 with a one-line message)
  whose message names the parameter or option;
* ``correct result``: no error, and the result passes the case's own check;
* ``unclear``: an error of an acceptable type whose message does not name the parameter, or a
  clear-looking error refusing an input that should have worked;
* ``silent wrong``: no error where one was owed, or a result that fails its check;
* ``crash``: an unexpected exception type (KeyError, IndexError, a numba error ...), a CLI
  traceback or a timeout;
* ``lost``: a command that exited 0 but did not leave the results it reported.

``probes/probe_cases_i25_*.py`` hold the cases of issue 25 (classes 101-110: issue 25's class
c is 100 + c), in the same ``(class, name, callable)`` form; ``--only 101 104`` runs some of them.
``probes/probe_cases_i41*.py`` hold issue 41's, the same way: ``probe_cases_i41.py`` classes
141-148, ``probe_cases_i41b.py`` classes 149-153 (its remaining items: underflow, ``use_kernel``
as a statement, ``rng`` unused, ``participation``, ``NUMBA_NUM_THREADS``).

Classes 1, 6-11 are issue 11 part B (flags, environment, overflow, counts and messages, choosing k,
first use and progress, stale text). If ``probes/probe_cases_store.py`` (issue 11 part A:
store integrity, concurrent processes, names and paths, output folders) is importable, its
``cases_store_paths()`` is added: it returns ``(class, name, callable)`` triples whose callable
returns one of the outcome labels above (or ``(label, detail)``); an exception escaping it counts
as a crash.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent  # probes/: the case modules beside this one
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import mixlinreg as mlr  # noqa: E402

LABELS = ("clear error", "correct result", "unclear", "silent wrong", "crash", "lost")
#: exception types that may carry a clear user-facing message
USER_TYPES = (ValueError, TypeError, OverflowError, FileNotFoundError, mlr.ConvergenceWarning)
CLASS_NAMES = {
    1: "1 flags are bools", 6: "6 environment", 7: "7 scale and overflow",
    8: "8 counts and messages", 9: "9 choosing k", 10: "10 first use and progress",
    11: "11 stale and wrong text",
}
TMP = Path(tempfile.mkdtemp(prefix="mixlinreg-probe-"))


# ------------------------------------------------------------------------------------ case kinds
class Err:
    """Expect an exception of ``types`` whose message matches every regex in ``names``."""

    def __init__(self, types, *names):
        self.types = types if isinstance(types, tuple) else (types,)
        self.names = names

    def judge(self, fn):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn()
        except self.types as exc:
            msg = str(exc)
            if all(re.search(n, msg) for n in self.names):
                return "clear error", f"{type(exc).__name__}: {msg[:110]}"
            return "unclear", f"{type(exc).__name__} not naming {self.names}: {msg[:110]}"
        except USER_TYPES as exc:
            return "unclear", f"{type(exc).__name__} (wanted {self.types}): {str(exc)[:110]}"
        except Exception as exc:  # noqa: BLE001 - classified
            return "crash", f"{type(exc).__name__}: {str(exc)[:110]}"
        return "silent wrong", "no error"


class Ok:
    """Expect no exception and ``check(result)`` true."""

    def __init__(self, check=lambda r: True, warn=None):
        self.check = check
        self.warn = warn  # a warning category that must be raised, or None

    def judge(self, fn):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = fn()
        except USER_TYPES as exc:
            return "unclear", f"refused a valid input: {type(exc).__name__}: {str(exc)[:110]}"
        except Exception as exc:  # noqa: BLE001 - classified
            return "crash", f"{type(exc).__name__}: {str(exc)[:110]}"
        if self.warn is not None and not any(issubclass(w.category, self.warn) for w in caught):
            return "silent wrong", f"no {self.warn.__name__}"
        try:
            good = bool(self.check(out))
        except Exception as exc:  # noqa: BLE001
            return "silent wrong", f"check failed: {type(exc).__name__}: {exc}"
        return ("correct result", "") if good else ("silent wrong", f"check failed on {out!r:.110}")


def _main_inprocess(argv):
    """Run ``mixlinreg.cli.main`` in this process; return (status, stdout, stderr)."""
    from mixlinreg.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except Exception:  # noqa: BLE001 - what a user would see: a traceback
            import traceback

            code = 1
            err.write(traceback.format_exc())
    return code, out.getvalue(), err.getvalue()


def _run_cli(argv, env=None, timeout=240, inprocess=False, preexec=None):
    if inprocess:
        return _main_inprocess(argv)
    full = dict(os.environ, **(env or {}))
    # the commands run on this checkout's package, whatever is installed
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", *argv], env=full, cwd=TMP,
                           capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return None, "", "timeout"
    return p.returncode, p.stdout, p.stderr


class CliErr:
    """Expect exit status 2 and one line on stderr naming ``names`` (no traceback)."""

    def __init__(self, *names, inprocess=True):
        self.names = names
        self.inprocess = inprocess

    def judge(self, argv, env=None):
        code, out, err = _run_cli(argv, env, inprocess=self.inprocess)
        if code is None:
            return "crash", "timeout"
        if "Traceback" in err:
            return "crash", err.strip().splitlines()[-1][:110]
        if code == 0:
            return "silent wrong", "exit status 0"
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if code == 2 and all(re.search(n, last) for n in self.names):
            return "clear error", last[:120]
        return "unclear", f"status {code}: {last[:110]}"


class CliOk:
    """Expect exit status 0, ``check(stdout, stderr)`` and every file in ``files`` to exist."""

    def __init__(self, check=lambda out, err: True, files=(), inprocess=False, preexec=None):
        self.check, self.files, self.inprocess, self.preexec = check, files, inprocess, preexec

    def judge(self, argv, env=None):
        code, out, err = _run_cli(argv, env, inprocess=self.inprocess, preexec=self.preexec)
        if code is None:
            return "crash", "timeout"
        if code != 0:
            kind = "crash" if "Traceback" in err else "unclear"
            return kind, f"status {code}: {(err.strip().splitlines() or [''])[-1][:110]}"
        missing = [str(f) for f in self.files if not Path(f).exists()]
        if missing:
            return "lost", f"exit 0 but missing {missing}"
        return ("correct result", "") if self.check(out, err) else ("silent wrong", out[-110:])


# ------------------------------------------------------------------------------------ the cases
def _mix(**kw):
    args = dict(m=8, n=6, d=3, k=2, R=1.0, sigma=0.1, rng=0)
    args.update(kw)
    return mlr.make_mixture(**args)


def cases_flags():
    """Class 1: every bool parameter refuses non-bools by name; numpy bools work."""
    from mixlinreg.digits import run_digits, softmax_loss_grad
    from mixlinreg.harness import load_config, run_experiment
    from mixlinreg.theory import run_study
    from mixlinreg.theory.study import Context
    from mixlinreg.theory.constants import loss_constants, population_minimizers
    from mixlinreg.theory.lemma1 import misclassification_probability, worst_placement

    mix = _mix()
    init = np.zeros((1, 2, 3))
    W, Xd, yd, ts = np.zeros((3, 2)), np.ones((4, 3)), np.zeros(4, dtype=int), np.eye(2, 3)
    calls = {
        "ifca resample": ("resample", lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1,
                                                         resample=v)),
        "ifca early_stop": ("early_stop", lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1,
                                                             early_stop=v)),
        "ifca trace": ("trace", lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1, trace=v)),
        "IFCA early_stop": ("early_stop", lambda v: mlr.IFCA(2, n_init=1, n_iter=1,
                                                             early_stop=v).fit(mix.X, mix.y)),
        "softmax_loss_grad grad": ("grad", lambda v: softmax_loss_grad(W, Xd, yd, 0.0, grad=v)),
        "run_digits progress": ("progress", lambda v: run_digits(1, m=4, n=5, k=2, rounds=1,
                                                                 progress=v)),
        "run_experiment progress": ("progress", lambda v: run_experiment(
            load_config("fig2a", "smoke"), TMP / "never", progress=v)),
        "run_study progress": ("progress", lambda v: run_study("L1", preset="smoke", store=None,
                                                               out=TMP / "never", progress=v)),
        "Context progress": ("progress", lambda v: Context("L1", preset="smoke", progress=v)),
        "population_minimizers symmetric": ("symmetric", lambda v: population_minimizers(
            "squared", ts, sigma=0.1, symmetric=v)),
        "loss_constants symmetric": ("symmetric", lambda v: loss_constants(
            "squared", ts, radius=0.1, sigma=0.1, symmetric=v)),
        "misclassification_probability log": ("log", lambda v: misclassification_probability(
            np.ones(2), np.zeros(2), 0.1, 5, log=v)),
        "worst_placement interior": ("interior", lambda v: worst_placement(0.25, 1.0, interior=v)),
    }
    bads = ["no", "false", 0, 1, None, np.array([True])]
    for label, (param, call) in calls.items():
        for bad in bads:
            yield 1, f"{label}={bad!r}", (lambda c=call, b=bad: c(b)), Err(TypeError, param, "bool")
    # the same class the other way round: a bool where a number or an array is owed
    for label, name, call in (
            ("ifca n_iter=True", "n_iter", lambda: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=True)),
            ("ifca lr=True", "lr", lambda: mlr.ifca(mix.X, mix.y, init, True)),
            ("ifca participation=True", "participation",
             lambda: mlr.ifca(mix.X, mix.y, init, 0.1, participation=True)),
            ("ifca local_steps=False", "local_steps",
             lambda: mlr.ifca(mix.X, mix.y, init, 0.1, local_steps=False)),
            ("IFCA n_init=True", "n_init", lambda: mlr.IFCA(2, n_init=True).fit(mix.X, mix.y)),
            ("make_mixture m=True", "m", lambda: mlr.make_mixture(True, 6, 3, 1, 1.0, 0.1)),
            ("make_mixture sigma=False", "sigma", lambda: mlr.make_mixture(8, 6, 3, 2, 1.0, False)),
            ("init_bernoulli n_runs=True", "n_runs", lambda: mlr.init_bernoulli(True, 2, 3))):
        yield 1, label, call, Err((TypeError, ValueError), name)
    # accepted: numpy bools and 0-d bool arrays give the same result as Python bools
    ref = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, trace=True)
    for v in (np.bool_(True), np.array(True)):
        yield 1, f"ifca trace={v!r}", lambda v=v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3,
                                                           trace=v), \
            Ok(lambda r: r.trace is not None and np.array_equal(r.theta, ref.theta))
    yield 1, "IFCA early_stop=np.False_", lambda: mlr.IFCA(2, n_init=1, n_iter=3, random_state=0,
                                                           early_stop=np.False_).fit(mix.X, mix.y), \
        Ok(lambda e: e.coef_.shape == (2, 3))
    # TOML configs
    base = (ROOT / "mixlinreg" / "configs" / "fig2a.toml").read_text()
    for value in ('"false"', '"no"', "0", "1"):
        path = TMP / f"early_{abs(hash(value))}.toml"
        path.write_text(base.replace("early_stop = false", f"early_stop = {value}", 1))
        yield 1, f"config early_stop = {value}", (lambda p=path: mlr.harness.load_config(p, "smoke")), \
            Err(TypeError, "early_stop", "bool")
    path = TMP / "early_str_cli.toml"
    path.write_text(base.replace("early_stop = false", 'early_stop = "false"', 1))
    yield 1, "CLI reproduce --config with early_stop = \"false\"", \
        ("cli", ["reproduce", "--config", str(path), "--preset", "smoke", "--out", str(TMP / "o1"),
                 "--figures", str(TMP / "f1")]), CliErr("early_stop")


def cases_environment():
    """Class 6: thread and core limits of the environment never crash a command."""
    from mixlinreg import _env

    def smoke(tag, extra=()):
        out, fig = TMP / f"env_{tag}", TMP / f"envfig_{tag}"
        return (["reproduce", "fig2a", "--preset", "smoke", "--out", str(out), "--figures", str(fig),
                 "--no-progress", *extra], [fig / "fig2a_smoke_summary.csv", fig / "fig2a_smoke.png"])

    envs = {
        "NUMBA_NUM_THREADS=1": {"NUMBA_NUM_THREADS": "1"},
        "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
        "OMP_NUM_THREADS=junk": {"OMP_NUM_THREADS": "junk"},
        "OMP_NUM_THREADS=0": {"OMP_NUM_THREADS": "0"},
        "NUMBA_NUM_THREADS=1 --n-jobs 2": {"NUMBA_NUM_THREADS": "1"},
    }
    for i, (label, env) in enumerate(envs.items()):
        argv, files = smoke(i, ["--n-jobs", "2"] if "--n-jobs" in label else [])
        yield 6, f"reproduce smoke with {label}", ("cli", argv, env), \
            CliOk(lambda out, err: "2 units run" in out, files)
    if hasattr(os, "sched_setaffinity"):
        argv, files = smoke("aff")
        yield 6, "reproduce smoke pinned to one CPU (affinity)", ("cli", argv, None), \
            CliOk(lambda out, err: "1 jobs x 1 threads" in out, files,
                  preexec=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    yield 6, "subprocess: bench --threads 0 with NUMBA_NUM_THREADS=1", \
        ("cli", ["bench", "--threads", "0"], {"NUMBA_NUM_THREADS": "1"}), \
        CliErr("--threads", inprocess=False)

    def with_env(env, fn):
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return fn()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    for val in ("1", "3", "", "abc", "-2", "1e3"):
        yield 6, f"usable_cores() with OMP_NUM_THREADS={val!r}", \
            (lambda v=val: with_env({"OMP_NUM_THREADS": v}, _env.usable_cores)), \
            Ok(lambda c, v=val: isinstance(c, int) and c >= 1
               and (c == 1 if v == "1" else True))
    for n_jobs in (1, 2, 64):
        yield 6, f"numba_threads(n_jobs={n_jobs})", (lambda j=n_jobs: _env.numba_threads(j)), \
            Ok(lambda t: 1 <= t <= _env.cpu_limits()["NUMBA_NUM_THREADS"])
    for text, want in (("max 100000", None), ("200000 100000", 2), ("1 100000", 1), ("x y", None)):
        p = TMP / f"cpu.max.{abs(hash(text))}"
        p.write_text(text)
        yield 6, f"cgroup cpu.max {text!r}", \
            (lambda p=p: _env._cgroup_cpus(p, (TMP / "none", TMP / "none"))), Ok(lambda r, w=want: r == w)
    mix = _mix()
    yield 6, "ifca n_threads above numba's pool", \
        lambda: mlr.ifca(mix.X, mix.y, np.zeros((2, 3)), 0.1, n_threads=10_000), \
        Err(ValueError, "n_threads")


def cases_overflow():
    """Class 7: values that overflow the working dtype say so; big data are not 'divergence'."""
    from mixlinreg._validation import check_array

    mix = _mix()
    f32 = np.float32
    for name, arr in (("X", mix.X * 1e39), ("X", mix.X + 1e39)):
        yield 7, f"ifca float32 with {name} entries ~1e39", \
            (lambda a=arr: mlr.ifca(a, mix.y, np.zeros((2, 3)), 0.1, dtype=f32)), \
            Err(OverflowError, name, "float32")
    yield 7, "ifca float32 with y ~1e300", \
        lambda: mlr.ifca(mix.X, mix.y * 1e300, np.zeros((2, 3)), 0.1, dtype=f32), \
        Err(OverflowError, "y", "float32")
    yield 7, "ifca float32 with init 1e40", \
        lambda: mlr.ifca(mix.X, mix.y, np.full((2, 3), 1e40), 0.1, dtype=f32), \
        Err(OverflowError, "init", "float32")
    for name, kw in (("lr", dict(lr=1e39)), ("lr", dict(lr=np.array([1e39]))),
                     ("l2", dict(lr=0.1, l2=1e39)),
                     ("huber_delta", dict(lr=0.1, loss="huber", huber_delta=1e39))):
        yield 7, f"ifca float32 with {name}={list(kw.values())[-1]!r}", \
            (lambda kw=kw: mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 3)), dtype=f32, **kw)), \
            Err(OverflowError, name, "float32")
    yield 7, "IFCA float32 fit on y with 1e39", \
        lambda: mlr.IFCA(2, n_init=1, dtype=f32).fit(mix.X, np.where(mix.y > 0, 1e39, 0.0)), \
        Err(OverflowError, "y", "float32")
    yield 7, "check_array 1e39 -> float32", \
        lambda: check_array("theta", np.array([1e39]), dtype=f32), Err(OverflowError, "theta", "float32")
    yield 7, "NaN is still 'finite' error", \
        lambda: mlr.ifca(np.where(mix.X > 1, np.nan, mix.X), mix.y, np.zeros((2, 3)), 0.1), \
        Err(ValueError, "X", "finite")
    for kw in (dict(R=1e38, sigma=0.1, dtype=f32), dict(R=0.5, sigma=1e38, dtype=f32),
               dict(R=1e306, sigma=0.0, dtype=np.float64), dict(R=1e39, sigma=0.0, dtype=f32),
               dict(R=1e37, sigma=0.0, dtype=f32)):
        yield 7, f"make_mixture d=1000 {kw}", \
            (lambda kw=kw: mlr.make_mixture(4, 3, 1000, 2, rng=0, **kw)), Err(OverflowError, "overflow")
    yield 7, "make_student_t_mixture R=1e38 float32", \
        lambda: mlr.data.make_student_t_mixture(4, 3, 100, 2, 1e38, 0.1, rng=0, dtype=f32), \
        Err(OverflowError, "overflow")
    yield 7, "Trial.y R=1e38 float32", \
        lambda: mlr.data.draw_trial(4, 3, 5, 2, rng=0, dtype=f32).y(1e38, 0.0), \
        Err(OverflowError, "overflow", "float32")
    yield 7, "make_mixture R=1e30 float64 (representable)", \
        lambda: mlr.make_mixture(4, 3, 5, 2, 1e30, 0.0, rng=0), Ok(lambda m: np.isfinite(m.y).all())
    yield 7, "make_mixture R=1e35 float32 d=1000 (representable)", \
        lambda: mlr.make_mixture(4, 3, 1000, 2, 1e35, 0.0, rng=0, dtype=f32), \
        Ok(lambda m: np.isfinite(m.y).all() and m.y.dtype == f32)
    big = _mix(m=40, n=60, d=5, rng=3)
    ref = mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y)
    for scale in (1e12, 1e6):
        yield 7, f"IFCA fit on y * {scale:g}", \
            (lambda s=scale: mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y * s)), \
            Ok(lambda e, s=scale: not e.result_.diverged.any()
               and mlr.adjusted_rand(big.labels, e.labels_) == 1.0
               and np.allclose(e.coef_ / s, ref.coef_, rtol=1e-5, atol=1e-8))
    yield 7, "IFCA y * 1e12 with a fixed diverge_threshold=1e10 warns naming it", \
        lambda: mlr.IFCA(2, lr=0.1, n_init=2, n_iter=200, random_state=1,
                         diverge_threshold=1e10).fit(big.X, big.y * 1e12), \
        Ok(lambda e: e.result_.diverged.all(), warn=mlr.ConvergenceWarning)
    for scale in (1e-2, 1e-12):
        yield 7, f"IFCA fit on y * {scale:g}: random inits far above the data's scale -> warning", \
            (lambda s=scale: mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y * s)), \
            Ok(lambda e: True, warn=mlr.DataScaleWarning)
    yield 7, "IFCA fit on y * 0.1: unscaled inits merge the clusters, and an empty model warns", \
        lambda: mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(big.X, big.y * 0.1), \
        Ok(warn=mlr.EmptyClusterWarning)  # the outcome owed: not silent
    yield 7, "IFCA fit on y * 1e-12 with init scaled to the data", \
        lambda: mlr.IFCA(2, lr=0.1, n_iter=200, random_state=1,
                         init=mlr.init_bernoulli(5, 2, 5, rng=1) * 1e-12).fit(big.X, big.y * 1e-12), \
        Ok(lambda e: mlr.adjusted_rand(big.labels, e.labels_) == 1.0
           and np.allclose(e.coef_ * 1e12, ref.coef_, rtol=1e-5, atol=1e-8))
    yield 7, "IFCA lr=1e6 really diverges: ConvergenceWarning", \
        lambda: mlr.IFCA(2, lr=1e6, n_init=2, n_iter=50, random_state=1).fit(big.X, big.y), \
        Ok(lambda e: e.result_.diverged.all(), warn=mlr.ConvergenceWarning)
    for bad in ("large", -1.0, 0.0, np.nan, np.inf, [1.0]):
        yield 7, f"ifca diverge_threshold={bad!r}", \
            (lambda b=bad: mlr.ifca(mix.X, mix.y, np.zeros((2, 3)), 0.1, diverge_threshold=b)), \
            Err((ValueError, TypeError), "diverge_threshold")


def cases_counts():
    """Class 8: zero/negative counts in every CLI option, 0-d arrays, messages naming the input."""
    from mixlinreg import cli
    from mixlinreg.compare import run_compare
    from mixlinreg.harness import load_config
    from mixlinreg.harness.agreement import check_agreement

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for cmd, sp in sub.choices.items():
        for act in sp._actions:
            if act.type in (cli.positive_int, cli.positive_float):
                bads = ["0", "-1"]
            elif act.type in (cli.nonneg_int, cli.nonneg_float):
                bads = ["-1"]
            else:
                continue
            bads.append("nan" if act.type in (cli.positive_float, cli.nonneg_float) else "2.5")
            opt = act.option_strings[0]
            for bad in bads:
                yield 8, f"{cmd} {opt} {bad}", ("cli", [cmd, opt, bad]), \
                    CliErr(re.escape(f"argument {opt}"), re.escape(repr(bad)))
    yield 8, "demo: m not divisible by k (deep validation error)", \
        ("cli", ["demo", "--m", "7", "--k", "2", "--d", "3", "--n", "5", "--n-iter", "2"]), \
        CliErr("mixlinreg demo: error: m must be divisible by k")
    yield 8, "reproduce --config missing.toml", \
        ("cli", ["reproduce", "--config", str(TMP / "missing.toml"), "--out", str(TMP / "m")]), \
        CliErr("config file")
    yield 8, "check unknown study ID", ("cli", ["check", "Z9", "--report-only"]), CliErr("Z9")
    yield 8, "check-agreement unknown panel", \
        ("cli", ["check-agreement", "fig9", "--candidate", "gram"]), CliErr("fig9")
    yield 8, "check-agreement unknown candidate", \
        ("cli", ["check-agreement", "--candidate", "cuda"]), CliErr("--candidate", "'cuda'")
    yield 8, "check-agreement --tol with --candidate gram", \
        ("cli", ["check-agreement", "fig2a", "--candidate", "gram", "--tol", "1e-7"]), \
        CliErr("mixlinreg check-agreement: error: --tol", "early-stop")
    yield 8, "subprocess: check-agreement --units 0", \
        ("cli", ["check-agreement", "--candidate", "early-stop", "--units", "0"], None, False), \
        CliErr("--units", inprocess=False)
    yield 8, "subprocess: compare --seeds 0", ("cli", ["compare", "--seeds", "0"], None, False), \
        CliErr("--seeds", inprocess=False)
    yield 8, "subprocess: demo --n-init 0", ("cli", ["demo", "--n-init", "0"], None, False), \
        CliErr("--n-init", inprocess=False)
    # API
    yield 8, "run_compare(n_seeds=0)", lambda: run_compare("smoke", n_seeds=0), Err(ValueError, "n_seeds")
    yield 8, "run_compare(n_seeds=-2)", lambda: run_compare("smoke", n_seeds=-2), Err(ValueError, "n_seeds")
    yield 8, "run_compare('tiny')", lambda: run_compare("tiny"), Err(ValueError, "preset")
    yield 8, "check_agreement(units=0)", \
        lambda: check_agreement([load_config("fig2a", "smoke")], "early-stop", units=0), \
        Err(ValueError, "units")
    yield 8, "check_agreement(candidate='cuda')", \
        lambda: check_agreement([load_config("fig2a", "smoke")], "cuda"), Err(ValueError, "candidate")
    mix = _mix()
    init = np.zeros((2, 2, 3))
    ref = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=5)
    for label, kw in (("lr=np.array(0.1)", dict(lr=np.array(0.1))),
                      ("n_iter=np.array(5)", dict(lr=0.1, n_iter=np.array(5))),
                      ("l2=np.array(0.0)", dict(lr=0.1, l2=np.array(0.0))),
                      ("tol=np.array(1e-6)", dict(lr=0.1, tol=np.array(1e-6))),
                      ("lr=np.float32(0.1)", dict(lr=np.float32(0.1)))):
        kw.setdefault("n_iter", 5)
        yield 8, f"ifca {label}", (lambda kw=kw: mlr.ifca(mix.X, mix.y, init, **kw)), \
            Ok(lambda r, lab=label: np.allclose(r.theta, ref.theta, rtol=1e-6) if "float32" in lab
               else np.array_equal(r.theta, ref.theta))
    yield 8, "make_mixture with 0-d array arguments", \
        lambda: mlr.make_mixture(np.array(8), np.array(6), np.array(3), np.array(2), np.array(1.0),
                                 np.array(0.1), rng=0), Ok(lambda m: np.array_equal(m.y, mix.y))
    yield 8, "IFCA n_clusters=np.array(2)", \
        lambda: mlr.IFCA(np.array(2), n_init=np.array(2), n_iter=5, random_state=0).fit(mix.X, mix.y), \
        Ok(lambda e: e.coef_.shape == (2, 3))
    yield 8, "ifca n_iter=np.array(5.0) (not an integer)", \
        lambda: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=np.array(5.0)), Err(TypeError, "n_iter")
    yield 8, "ifca lr=np.array([0.1]) for 2 runs", \
        lambda: mlr.ifca(mix.X, mix.y, init, np.array([0.1])), Err(ValueError, "lr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = mlr.IFCA(2, n_init=2, n_iter=5, random_state=0).fit(mix.X, mix.y)
    for label, (X, y) in {"predict d=2": (mix.X[:, :, :2], mix.y),
                          "predict one machine d=2": (mix.X[0, :, :2], mix.y[0]),
                          "predict 2-d X with 2-d y": (mix.X[0], mix.y),
                          "predict 4-d X": (mix.X[None], mix.y)}.items():
        yield 8, label, (lambda X=X, y=y: est.predict(X, y)), Err(ValueError, r"^X must", r"d = 3")
        yield 8, label.replace("predict", "score"), (lambda X=X, y=y: est.score(X, y)), \
            Err(ValueError, r"^X must", r"d = 3")
    yield 8, "predict y rows mismatch", lambda: est.predict(mix.X, mix.y[:, :2]), Err(ValueError, "y")
    for name, kw in (("m", dict(m=0)), ("n", dict(n=-1)), ("d", dict(d=0)), ("k", dict(k=0)),
                     ("sigma", dict(sigma=-0.1)), ("R", dict(R=np.nan))):
        yield 8, f"make_mixture {kw}", (lambda kw=kw: _mix(**kw)), Err((ValueError, TypeError), name)
    for name, kw in (("n_clusters", dict(n_clusters=0)), ("n_init", dict(n_init=0)),
                     ("lr", dict(lr=[])), ("lr", dict(lr=-1.0)), ("n_iter", dict(n_iter=-1))):
        yield 8, f"IFCA {kw}", (lambda kw=kw: mlr.IFCA(**kw).fit(mix.X, mix.y)), \
            Err((ValueError, TypeError), name)


def cases_choosing_k():
    """Class 9: BIC picks the true k on separated problems; empty models warn."""
    def best_k(k_true, seed, crit):
        mix = mlr.make_mixture(m=60, n=50, d=5, k=k_true, R=1.0, sigma=0.1, rng=seed)
        vals = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in range(1, 6):
                est = mlr.IFCA(k, lr=[0.1, 0.3], n_init=20, random_state=1).fit(mix.X, mix.y)
                vals[k] = getattr(est, crit)(mix.X, mix.y)
        return min(vals, key=vals.get)

    for k_true, seed in ((2, 0), (2, 1), (3, 0), (3, 1)):
        yield 9, f"BIC over k=1..5, true k={k_true}, seed {seed}", \
            (lambda k=k_true, s=seed: best_k(k, s, "bic")), Ok(lambda k, kt=k_true: k == kt)
    yield 9, "AIC over k=1..5, true k=2 (never below)", lambda: best_k(2, 0, "aic"), Ok(lambda k: k >= 2)
    mix = _mix()
    far = np.stack([np.zeros(3), np.full(3, 1e3)])
    yield 9, "IFCA with a model no machine picks warns", \
        lambda: mlr.IFCA(2, init=far, n_iter=5).fit(mix.X, mix.y), \
        Ok(lambda e: True, warn=mlr.EmptyClusterWarning)
    yield 9, "bic before fit", lambda: mlr.IFCA(2).bic(mix.X, mix.y), Err(Exception, "fit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = mlr.IFCA(2, n_init=2, n_iter=20, random_state=0).fit(mix.X, mix.y)
        hub = mlr.IFCA(2, n_init=2, n_iter=20, random_state=0, loss="huber").fit(mix.X, mix.y)
    yield 9, "bic with loss='huber'", lambda: hub.bic(mix.X, mix.y), Err(ValueError, "loss")
    yield 9, "bic with X of the wrong d", lambda: est.bic(mix.X[:, :, :2], mix.y), \
        Err(ValueError, "X")
    yield 9, "bic on noiseless data is finite", \
        lambda: est.bic(mix.X, (mix.X @ est.coef_[0])), Ok(lambda b: np.isfinite(b))


def cases_first_use():
    """Class 10: compile notice, help text, presets as choices, progress options."""
    from mixlinreg import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    top = parser.format_help()
    for cmd, sp in sub.choices.items():
        yield 10, f"{cmd} --help: listed, plain text, every option has help", (lambda sp=sp, c=cmd: (
            c in top, sp.format_help(), [a for a in sp._actions if a.dest != "help" and not a.help])), \
            Ok(lambda r: r[0] and "``" not in r[1] and ":func:" not in r[1] and not r[2])
    for cmd in ("reproduce", "check", "compare", "check-agreement"):
        yield 10, f"{cmd} --preset huge", ("cli", [cmd, "--preset", "huge"]), \
            CliErr("--preset", "invalid choice")
    for cmd in ("reproduce", "check", "compare", "digits"):
        yield 10, f"{cmd} has --no-progress (tqdm bar)", \
            (lambda c=cmd: [a.dest for a in sub.choices[c]._actions]), Ok(lambda d: "no_progress" in d)
    yield 10, "check shows a progress bar", \
        ("cli", ["check", "L1", "--preset", "smoke", "--out", str(TMP / "chk"), "--no-store"]), \
        CliOk(lambda out, err: "check/smoke" in err, [TMP / "chk" / "L1_smoke.json"], inprocess=True)

    def compile_notice():
        folder = TMP / "kern"
        folder.mkdir(exist_ok=True)
        (folder / "probekern.py").write_text(textwrap.dedent("""
            import numba

            @numba.njit(cache=True)
            def add(a, b):
                return a + b
        """))
        sys.path.insert(0, str(folder))
        try:
            import importlib

            from mixlinreg._firstuse import announce_compile

            mod = importlib.import_module("probekern")
            f = announce_compile(mod.add, "probe kernel")
            records = []
            handler = logging.Handler()
            handler.emit = records.append
            logger = logging.getLogger("mixlinreg")
            logger.addHandler(handler)
            level = logger.level
            logger.setLevel(logging.NOTSET)
            try:
                f(1.0, 2.0)
                f(3.0, 4.0)
            finally:
                logger.removeHandler(handler)
                logger.setLevel(level)
            return [r.getMessage() for r in records]
        finally:
            sys.path.remove(str(folder))

    yield 10, "first kernel call on a cold cache says it compiled, once", compile_notice, \
        Ok(lambda msgs: len(msgs) == 1 and re.search(r"compiled probe kernel .* in \d", msgs[0]))


def cases_text():
    """Class 11: README, help, comments, figure titles, legends, axis labels, intervals."""
    from mixlinreg.cli import build_parser
    from mixlinreg.compare import _mean_interval

    readme = (ROOT / "README.md").read_text()
    yield 11, "README status line has no 'not here yet'", lambda: readme, Ok(lambda r: "not here yet" not in r)

    def check_help():
        parser = build_parser()
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        text = " ".join(sub.choices["check"].format_help().split())
        # the help quotes no duration of its own (it would go stale): it points to the measured
        # times of docs/theory_checks.md, which tests/test_reliability.py checks
        return "docs/theory_checks.md gives measured times" in text and not re.search(r"\d+ minutes", text)

    yield 11, "check --help quotes no duration that could go stale", check_help, Ok(bool)
    pattern = re.compile(r"\.\./shared|/work/|shared/spec")
    files = list((ROOT / "mixlinreg").rglob("*.py")) + list((ROOT / "mixlinreg").rglob("*.toml"))
    yield 11, "no comment points outside the repository", \
        lambda: [str(p) for p in files if pattern.search(p.read_text())], Ok(lambda bad: not bad)
    argv = ["reproduce", "fig2a", "--preset", "smoke", "--out", str(TMP / "t_r"), "--figures",
            str(TMP / "t_f"), "--no-progress"]
    yield 11, "reproduce smoke prints the shapes it runs", ("cli", argv), \
        CliOk(lambda out, err: "(20, 20, 40)" in out and "(100, 100, 1000)" not in out,
              [TMP / "t_f" / "fig2a_smoke.png"], inprocess=True)

    def figure():
        import pandas as pd

        from mixlinreg.plots import plot_panel

        fig = plot_panel(pd.read_csv(ROOT / "figures" / "fig2a_quick_summary.csv"), "R-sigma")
        ax = fig.axes[0]
        return ax.get_title(), [t.get_text() for t in ax.get_legend().get_texts()], ax.get_xlabel()

    yield 11, "figure title shows the table's shapes", figure, Ok(lambda r: "d = 1000" in r[0])
    yield 11, "Wilson bands have a legend entry", figure, Ok(lambda r: any("Wilson" in t for t in r[1]))
    yield 11, "x axis calls R a scale, not the separation", figure, \
        Ok(lambda r: "separation of" not in r[2] and "scale" in r[2])
    gen = np.random.default_rng(0)
    for i in range(6):
        x = gen.exponential(size=2 + i) * [1e-4, 1.0, 1e4][i % 3]
        yield 11, f"compare interval of {x.size} non-negative values stays >= 0", \
            (lambda x=x: _mean_interval(x)), \
            Ok(lambda r, x=x: r[1] >= 0 and x.min() * (1 - 1e-12) <= r[1] <= r[0] <= r[2]
               <= x.max() * (1 + 1e-12))
    yield 11, "compare interval of [0, 1e-3] (t-interval went below 0)", \
        lambda: _mean_interval([0.0, 1e-3]), Ok(lambda r: r[1] >= 0)


# ------------------------------------------------------------------------------------ driver
def _store_cases():
    try:
        sys.path.insert(0, str(HERE))
        import probe_cases_store  # issue 11 part A
    except ImportError:
        return []
    finally:
        sys.path.remove(str(HERE))
    names = getattr(probe_cases_store, "CLASSES", {})
    return [(f"{cls} {names[cls]}" if cls in names else str(cls), name, fn, "external")
            for cls, name, fn in probe_cases_store.cases_store_paths()]


def _issue25_cases(only=None):
    """The cases of issue 25's classes: every ``probes/probe_cases_i25_*.py`` module's
    ``cases()`` ``(class, name, callable)`` triples, classes named by its ``CLASSES`` (numbered
    from 101: issue 25's class c is 100 + c)."""
    import importlib

    out = []
    sys.path.insert(0, str(HERE))
    try:
        for path in sorted(HERE.glob("probe_cases_i25_*.py")) + sorted(HERE.glob("probe_cases_i41*.py")):
            mod = importlib.import_module(path.stem)
            names = getattr(mod, "CLASSES", {})
            for cls, name, fn in mod.cases():
                if only and cls not in only:
                    continue
                out.append((f"{cls} {names[cls]}" if cls in names else str(cls), name, fn,
                            "external"))
    finally:
        sys.path.remove(str(HERE))
    return out


def _judge(kind, target):
    if kind == "external":
        try:
            res = target()
        except Exception as exc:  # noqa: BLE001
            return "crash", f"{type(exc).__name__}: {str(exc)[:110]}"
        label, detail = (res, "") if isinstance(res, str) else res
        if label not in LABELS:
            return "crash", f"case returned {res!r}"
        return label, detail
    if isinstance(target, tuple) and target and target[0] == "cli":
        argv = target[1]
        env = target[2] if len(target) > 2 else None
        return kind.judge(argv, env)
    return kind.judge(target)


def _process_state():
    """What one case could leave behind in this process for the next ones."""
    import signal

    return {"environment": dict(os.environ), "SIGINT handler": signal.getsignal(signal.SIGINT),
            "working folder": os.getcwd()}


def _isolated(name, judge):
    """Run ``judge()``; undo (and name) any change it left in the probe process's environment,
    SIGINT handler or working folder, so that no case decides another's outcome (a SIGINT left
    ignored here would be inherited by every later child process)."""
    import signal

    before = _process_state()
    try:
        return judge()
    finally:
        after = _process_state()
        for what in before:
            if before[what] != after[what]:
                print(f"[harness] case {name!r} changed the probe's {what}; restored", flush=True)
        if before["environment"] != after["environment"]:
            os.environ.clear()
            os.environ.update(before["environment"])
        if before["SIGINT handler"] != after["SIGINT handler"]:
            signal.signal(signal.SIGINT, before["SIGINT handler"])
        if before["working folder"] != after["working folder"]:
            os.chdir(before["working folder"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("--only", type=int, nargs="*", help="only these class numbers")
    args = ap.parse_args(argv)
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background by a shell (``nohup ... &``): SIGINT is ignored here and in
        # every child, so the Ctrl-C cases could not be judged; a terminal user's Ctrl-C works
        print("[harness] SIGINT was ignored in this process (started in the background): "
              "restored, so that child processes answer Ctrl-C as at a terminal", flush=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    logging.getLogger("mixlinreg").setLevel(logging.ERROR)  # compile notices are not results
    t0 = time.perf_counter()
    gens = [cases_flags, cases_environment, cases_overflow, cases_counts, cases_choosing_k,
            cases_first_use, cases_text]
    results = []
    for gen in gens:
        cls0 = {cases_flags: 1, cases_environment: 6, cases_overflow: 7, cases_counts: 8,
                cases_choosing_k: 9, cases_first_use: 10, cases_text: 11}[gen]
        if args.only and cls0 not in args.only:
            continue
        it = gen()
        while True:
            try:
                cls, name, target, kind = next(it)
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001 - a case that cannot even be set up
                results.append((CLASS_NAMES[cls0], f"{gen.__name__} set-up", "crash",
                                f"{type(exc).__name__}: {str(exc)[:110]}"))
                print(f"[{'crash':>14}] {CLASS_NAMES[cls0]} | {gen.__name__} set-up | "
                      f"{type(exc).__name__}: {str(exc)[:110]}", flush=True)
                break
            label, detail = _isolated(name, lambda: _judge(kind, target))
            results.append((CLASS_NAMES.get(cls, str(cls)), name, label, detail))
            if args.verbose or label not in ("clear error", "correct result"):
                print(f"[{label:>14}] {CLASS_NAMES.get(cls, cls)} | {name} | {detail}", flush=True)
    logging.getLogger("mixlinreg").setLevel(logging.NOTSET)
    store_cases = [] if args.only else _store_cases()
    store_cases += _issue25_cases(args.only)
    for cls, name, fn, kind in store_cases:
        label, detail = _isolated(name, lambda: _judge(kind, fn))
        results.append((str(cls), name, label, detail))
        if args.verbose or label not in ("clear error", "correct result"):
            print(f"[{label:>14}] {cls} | {name} | {detail}", flush=True)

    classes = sorted(dict.fromkeys(r[0] for r in results), key=lambda c: int(c.split()[0]))
    head = "| class | cases tried | " + " | ".join(LABELS) + " |"
    lines = [head, "|" + "---|" * (len(LABELS) + 2)]
    for c in classes + ["all"]:
        rows = results if c == "all" else [r for r in results if r[0] == c]
        counts = [sum(r[2] == lab for r in rows) for lab in LABELS]
        lines.append(f"| {c} | {len(rows)} | " + " | ".join(str(v) for v in counts) + " |")
    print()
    print("\n".join(lines))
    print(f"\n{len(results)} cases in {time.perf_counter() - t0:.0f} s (scratch folder {TMP}); "
          + f"{len(store_cases)} cases from probes/probe_cases_store.py and "
            "probes/probe_cases_i25_*.py (issue 25's classes, numbered 101-110)")
    bad = sum(r[2] in ("silent wrong", "crash", "lost") for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
