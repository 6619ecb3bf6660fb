"""Issue 11 ("nothing silently wrong"), part B: one test per class of failure, not per instance.

Classes: 1 flags are bools; 6 the environment never crashes a command; 7 scale and overflow say
what they are; 8 counts and messages (CLI options, 0-d arrays, one-line errors); 9 choosing k
(BIC/AIC); 10 first use and progress; 11 stale and wrong text. ``probes/probe_reliability.py``
tries many more inputs of the same classes and prints a table.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixlinreg as mlr
from mixlinreg import _env
from mixlinreg._validation import check_array, check_bool, resolve_diverge_threshold
from mixlinreg.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(m=8, n=6, d=3, k=2)


def _small():
    return mlr.make_mixture(**SMALL, R=1.0, sigma=0.1, rng=0)


# ------------------------------------------------------------------------------ 1. flags are bools
def _flag_calls():
    """(label, call(value)) for every boolean parameter of the public API and the configs."""
    from mixlinreg.digits import run_digits, softmax_loss_grad
    from mixlinreg.harness import load_config, run_experiment
    from mixlinreg.theory import run_study
    from mixlinreg.theory.study import Context
    from mixlinreg.config import Spec
    from mixlinreg.theory.studies import get as get_study
    from mixlinreg.theory.study import run as study_run
    from mixlinreg.theory.constants import loss_constants, population_minimizers
    from mixlinreg.theory.lemma1 import misclassification_probability, worst_placement
    from mixlinreg.theory.d1 import rebuild_d1
    from mixlinreg.geometry import simplex_centers
    from mixlinreg.runner import run as runner_run
    from mixlinreg.theory.derived import regenerate
    from mixlinreg.theory.records import reanalyse

    mix = _small()
    init = np.zeros((1, 2, 3))
    W = np.zeros((3, 2))
    Xd = np.ones((4, 3))
    yd = np.zeros(4, dtype=int)
    ts = np.eye(2, 3)
    return {
        ("ifca", "resample"): lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1, resample=v),
        ("ifca", "early_stop"): lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1, early_stop=v),
        ("ifca", "trace"): lambda v: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=1, trace=v),
        ("IFCA.__init__", "early_stop"): lambda v: mlr.IFCA(2, n_init=1, n_iter=1,
                                                          early_stop=v).fit(mix.X, mix.y),
        ("IFCA.__init__", "fit_intercept"): lambda v: mlr.IFCA(2, n_init=1, n_iter=1,
                                                             fit_intercept=v).fit(mix.X, mix.y),
        ("IFCA.__init__", "verbose"): lambda v: mlr.IFCA(2, n_init=1, n_iter=1,
                                                       verbose=v).fit(mix.X, mix.y),
        ("cfl", "verbose"): lambda v: mlr.baselines.cfl(mix.X, mix.y, max_rounds=1, verbose=v),
        ("fpfc", "verbose"): lambda v: mlr.baselines.fpfc(mix.X, mix.y, n_rounds=1, verbose=v),
        ("fedavg", "verbose"): lambda v: mlr.baselines.fedavg(mix.X, mix.y, n_rounds=1, verbose=v),
        ("local_train", "verbose"): lambda v: mlr.baselines.local_train(mix.X, mix.y, n_steps=1,
                                                                        verbose=v),
        ("fpfc", "record_objective"): lambda v: mlr.baselines.fpfc(mix.X, mix.y, n_rounds=1,
                                                                  record_objective=v),
        ("softmax_loss_grad", "grad"): lambda v: softmax_loss_grad(W, Xd, yd, 0.0, grad=v),
        ("run_digits", "progress"): lambda v: run_digits(1, m=4, n=5, k=2, rounds=1, progress=v),
        ("run_experiment", "progress"): lambda v: run_experiment(load_config("fig2a", "smoke"),
                                                                 "/nonexistent-never-made",
                                                                 progress=v),
        ("run_study", "progress"): lambda v: run_study("L1", preset="smoke", store=None,
                                                       out="/nonexistent-never-made", progress=v),
        ("run_study", "control_only"): lambda v: run_study("L1", preset="smoke", store=None,
                                                           out="/nonexistent-never-made",
                                                           control_only=v),
        ("Context.__init__", "progress"): lambda v: Context("L1", preset="smoke", progress=v),
        ("run", "progress"): lambda v: study_run(get_study("T2"), preset="smoke", store=None,
                                                 out="/nonexistent-never-made", progress=v),
        ("Spec.__init__", "required"): lambda v: Spec("int", required=v),
        ("population_minimizers", "symmetric"): lambda v: population_minimizers(
            "squared", ts, sigma=0.1, symmetric=v),
        ("loss_constants", "symmetric"): lambda v: loss_constants("squared", ts, radius=0.1,
                                                                  sigma=0.1, symmetric=v),
        ("misclassification_probability", "log"): lambda v: misclassification_probability(
            np.ones(2), np.zeros(2), 0.1, 5, log=v),
        ("worst_placement", "interior"): lambda v: worst_placement(0.25, 1.0, interior=v),
        ("rebuild_d1", "write"): lambda v: rebuild_d1("/nonexistent-never-made", write=v),
        ("simplex_centers", "haar"): lambda v: simplex_centers(2, 3, 1.0, rng=0, haar=v),
        ("tie_shared", "matrix"): lambda v: mlr.tie_shared(np.zeros((2, 3)), [0], matrix=v),
        ("Workload.__init__", "pin_blas"): lambda v: _toy_workload(pin_blas=v),
        ("Workload.store", "clean"): lambda v: _toy_workload().store("/nonexistent-never-made",
                                                                    clean=v),
        ("run", "collect"): lambda v: runner_run(_toy_workload(), collect=v),
        ("regenerate", "check"): lambda v: regenerate("/nonexistent-never-made", check=v),
        ("reanalyse", "write"): lambda v: reanalyse("C2", preset="paper",
                                                   out="/nonexistent-never-made", write=v),
    }


def _toy_unit(unit, ss):
    return pd.DataFrame({"x": [1.0]})


def _toy_workload(**kw):
    from mixlinreg.runner import Workload

    return Workload(name="toy", preset="smoke", key={}, units=("u0",), compute=_toy_unit, **kw)


#: bool parameters not covered here, with the reason (kept short on purpose)
_FLAG_EXCEPTIONS = {
    ("ResultStore.__init__", "clean"): "internal to the harness (issue 11a's store)",
    ("ResultStore.done", "warn"): "internal to the harness (issue 11a's store)",
    ("UnitStore.done", "warn"): "internal to the harness (issue 11a's store)",
    ("UnitStore.is_done", "warn"): "internal to the harness (issue 11a's store)",
    ("UnitStore.problem", "migrate"): "internal to the harness (issue 11a's store)",
}


def test_every_bool_parameter_of_the_api_is_covered():
    """Introspection: every public function/method with a bool default is in ``_flag_calls``."""
    found = set()
    for info in pkgutil.walk_packages(mlr.__path__, "mixlinreg."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                funcs = [(name, obj)]
            elif inspect.isclass(obj):
                funcs = [(f"{name}.{n}", f) for n, f in vars(obj).items()
                         if inspect.isfunction(f) and (not n.startswith("_") or n == "__init__")]
            else:
                continue
            for qual, f in funcs:
                for p in inspect.signature(f).parameters.values():
                    if isinstance(p.default, bool):
                        found.add((qual, p.name))
    missing = found - set(_flag_calls()) - set(_FLAG_EXCEPTIONS)
    assert not missing, f"bool parameters without a check_bool test: {sorted(missing)}"


@pytest.mark.parametrize("bad", ["no", "false", "False", 0, 1, None, 0.0, [True], np.array([True])])
def test_flags_refuse_non_bools(bad):
    for (where, name), call in _flag_calls().items():
        with pytest.raises(TypeError, match=rf"{name} must be a bool .*got") as err:
            call(bad)
        assert repr(bad)[:4] in str(err.value) or "array" in str(err.value), (where, str(err.value))


def test_flags_accept_numpy_bools_and_0d_bool_arrays():
    mix = _small()
    init = np.zeros((1, 2, 3))
    a = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, trace=np.bool_(True), early_stop=np.array(False))
    b = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=3, trace=True, early_stop=False)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.trace is not None
    assert check_bool("x", np.bool_(False)) is False


def test_bools_are_not_numbers_either():
    mix = _small()
    init = np.zeros((1, 2, 3))
    for name, call in [("n_iter", lambda: mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=True)),
                       ("lr", lambda: mlr.ifca(mix.X, mix.y, init, True)),
                       ("participation", lambda: mlr.ifca(mix.X, mix.y, init, 0.1,
                                                          participation=True)),
                       ("n_init", lambda: mlr.IFCA(2, n_init=True).fit(mix.X, mix.y)),
                       ("sigma", lambda: mlr.make_mixture(8, 6, 3, 2, 1.0, False))]:
        with pytest.raises((TypeError, ValueError), match=name):
            call()


@pytest.mark.parametrize("value", ['"false"', '"no"', "0", "1"])
def test_config_early_stop_must_be_a_toml_bool(tmp_path, value):
    text = (ROOT / "mixlinreg" / "configs" / "fig2a.toml").read_text()
    text = text.replace("early_stop = false", f"early_stop = {value}", 1)
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(TypeError, match="protocol.early_stop must be a bool"):
        mlr.harness.load_config(path, "smoke")


# --------------------------------------------------------------- 6. the environment never crashes
def test_usable_cores_reads_every_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(_env, "_cgroup_cpus", lambda: None)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert _env.usable_cores() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert _env.usable_cores() == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")  # ignored, never a crash
    assert _env.usable_cores() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "0")
    assert _env.usable_cores() == 4
    monkeypatch.setattr(_env, "_cgroup_cpus", lambda: 3)
    assert _env.usable_cores() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    assert _env.usable_cores() == 1
    # numba's pool caps the threads a worker asks for; never below 1
    assert 1 <= _env.numba_threads(n_jobs=64) <= mlr.ifca.__globals__["numba"].config.NUMBA_NUM_THREADS


@pytest.mark.parametrize("v2, expected", [("max 100000\n", None), ("150000 100000\n", 2),
                                          ("50000 100000\n", 1), ("garbage", None), (None, None)])
def test_cgroup_quota(tmp_path, v2, expected):
    path = tmp_path / "cpu.max"
    if v2 is not None:
        path.write_text(v2)
    v1 = (tmp_path / "missing_quota", tmp_path / "missing_period")
    assert _env._cgroup_cpus(path, v1) == expected


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "q").write_text("250000")
    (tmp_path / "p").write_text("100000")
    assert _env._cgroup_cpus(tmp_path / "none", (tmp_path / "q", tmp_path / "p")) == 3
    (tmp_path / "q").write_text("-1")
    assert _env._cgroup_cpus(tmp_path / "none", (tmp_path / "q", tmp_path / "p")) is None


@pytest.mark.parametrize("env", [{"NUMBA_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "1"},
                                 {"OMP_NUM_THREADS": "junk", "NUMBA_NUM_THREADS": "1"}])
def test_reproduce_runs_under_thread_limits(tmp_path, env):
    """Instance: ``NUMBA_NUM_THREADS=1 mixlinreg reproduce fig2a --preset smoke`` crashed."""
    full = dict(os.environ, **env)
    proc = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "reproduce", "fig2a", "--preset",
                           "smoke", "--out", str(tmp_path / "r"), "--figures", str(tmp_path / "f"),
                           "--no-progress"], env=full, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 units run" in proc.stdout


def test_workers_never_exceed_usable_cores_or_units(tmp_path, monkeypatch):
    from mixlinreg.harness import load_config, run_experiment

    monkeypatch.setattr(_env, "usable_cores", lambda: 1)  # what the runner reads
    _, summary = run_experiment(load_config("fig2a", "smoke"), tmp_path, n_jobs=8, progress=False)
    assert summary["n_jobs"] == 1 and summary["units_run"] == 2


# ---------------------------------------------------------------------- 7. scale and overflow
def test_finite_values_that_overflow_the_dtype_say_so():
    with pytest.raises(OverflowError, match="X has a finite value .* overflows float32"):
        check_array("X", np.array([1.0, 1e39]), dtype=np.float32)
    # NaN/inf stay "must be finite"; in-range float64 -> float32 is fine
    with pytest.raises(ValueError, match="finite"):
        check_array("X", np.array([1.0, np.inf]), dtype=np.float32)
    assert check_array("X", np.array([3e38]), dtype=np.float32).dtype == np.float32
    mix = _small()
    X = mix.X.copy()
    X[0, 0, 0] = 1e39
    with pytest.raises(OverflowError, match="X .*overflows float32"):
        mlr.ifca(X, mix.y, np.zeros((2, 3)), 0.1, dtype=np.float32)
    y = mix.y.copy()
    y[1, 1] = -1e300
    with pytest.raises(OverflowError, match="y .*overflows float32"):
        mlr.IFCA(2, n_init=1, dtype=np.float32).fit(mix.X, y)
    with pytest.raises(OverflowError, match="init .*overflows float32"):
        mlr.ifca(mix.X, mix.y, np.full((2, 3), 1e40), 0.1, dtype=np.float32)


@pytest.mark.parametrize("kwargs", [dict(R=1e38, sigma=0.1, dtype=np.float32),
                                    dict(R=0.5, sigma=1e38, dtype=np.float32),
                                    dict(R=1e306, sigma=0.0, dtype=np.float64),
                                    dict(R=1e39, sigma=0.0, dtype=np.float32)])
def test_make_mixture_refuses_data_that_would_overflow(kwargs):
    with pytest.raises(OverflowError, match="overflow"):
        mlr.make_mixture(4, 3, 1000, 2, rng=0, **kwargs)


@pytest.mark.parametrize("dtype, R, sigma", [(np.float32, 1e38, 0.0), (np.float32, 0.0, 1e38),
                                             (np.float32, 1e38, 1e38), (np.float64, 1.7e308, 0.0),
                                             (np.float64, 1e308, 1e308)])
def test_trial_responses_that_overflow_say_so(dtype, R, sigma):
    trial = mlr.data.draw_trial(4, 30, 5, 2, rng=0, dtype=dtype)
    with pytest.raises(OverflowError, match=f"overflow.* {np.dtype(dtype).name}|"
                                            f"overflows {np.dtype(dtype).name}"):
        trial.y(R, sigma)


def test_large_but_representable_data_still_work():
    mix = mlr.make_mixture(4, 3, 5, 2, R=1e30, sigma=0.0, rng=0, dtype=np.float64)
    assert np.isfinite(mix.y).all()


def test_divergence_threshold_scales_with_the_data():
    mix = mlr.make_mixture(40, 60, 5, 2, R=1.0, sigma=0.1, rng=3)
    # the paper's problems keep the old threshold exactly (stored results are unchanged)
    init = mlr.init_bernoulli(3, 2, 5, rng=0)
    assert resolve_diverge_threshold("auto", mix.X, mix.y[None], init, 1e10) == 1e10
    big = mix.y * 1e12
    with warnings.catch_warnings():
        warnings.simplefilter("error", mlr.ConvergenceWarning)
        est = mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(mix.X, big)
    ref = mlr.IFCA(2, lr=0.1, n_init=5, n_iter=200, random_state=1).fit(mix.X, mix.y)
    assert not est.result_.diverged.any()
    assert mlr.adjusted_rand(mix.labels, est.labels_) == 1.0
    np.testing.assert_allclose(est.coef_ / 1e12, ref.coef_, rtol=1e-6, atol=1e-9)
    # a fixed threshold reproduces the old behaviour: flagged, and the warning names the threshold
    with pytest.warns(mlr.ConvergenceWarning, match="diverge_threshold=10000000000.0"):
        mlr.IFCA(2, lr=0.1, n_init=2, n_iter=200, random_state=1, diverge_threshold=1e10).fit(mix.X, big)
    with pytest.raises(ValueError, match="diverge_threshold must be 'auto' or a positive number"):
        mlr.ifca(mix.X, mix.y, init, 0.1, diverge_threshold="large")
    with pytest.raises(ValueError, match="diverge_threshold"):
        mlr.ifca(mix.X, mix.y, init, 0.1, diverge_threshold=-1.0)


def test_random_inits_far_above_the_data_scale_warn():
    mix = mlr.make_mixture(40, 60, 5, 2, R=1.0, sigma=0.1, rng=3)
    with pytest.warns(mlr.DataScaleWarning, match="standardize y"):
        mlr.IFCA(2, n_init=2, n_iter=20, random_state=1).fit(mix.X, mix.y * 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mlr.DataScaleWarning)
        mlr.IFCA(2, n_init=2, n_iter=20, random_state=1).fit(mix.X, mix.y)  # the paper's scale: silent
        # an init scaled to the data is the user's choice: no warning, and the fit is exact
        init = mlr.init_bernoulli(5, 2, 5, rng=1)
        small = mlr.IFCA(2, init=init * 1e-12, n_iter=200).fit(mix.X, mix.y * 1e-12)
    ref = mlr.IFCA(2, init=init, n_iter=200).fit(mix.X, mix.y)
    np.testing.assert_allclose(small.coef_ * 1e12, ref.coef_, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------- 8. counts and messages
def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


def _count_options():
    from mixlinreg import cli

    out = []
    for cmd, sp in _subparsers().items():
        for act in sp._actions:
            if act.type in (cli.positive_int, cli.nonneg_int, cli.positive_float, cli.nonneg_float):
                out.append((cmd, act.option_strings[0], act.type))
    return out


def test_every_count_option_is_typed():
    """Every int/float option of the CLI goes through a range-checking type (no bare int/float)."""
    for cmd, sp in _subparsers().items():
        for act in sp._actions:
            assert act.type not in (int, float), (cmd, act.option_strings)
    names = {(c, o) for c, o, _ in _count_options()}
    for needed in [("check-agreement", "--trials"), ("check-agreement", "--units"),
                   ("compare", "--seeds"), ("demo", "--n-init"),
                   ("reproduce", "--n-jobs"), ("digits", "--rounds"), ("bench", "--threads")]:
        assert needed in names


def test_zero_and_negative_counts_are_errors_naming_the_option(capsys):
    from mixlinreg import cli

    for cmd, opt, kind in _count_options():
        bads = ["-1", "nan", "x"] + (["0"] if kind in (cli.positive_int, cli.positive_float) else [])
        if kind in (cli.positive_int, cli.nonneg_int):
            bads.append("1.5")
        for bad in bads:
            with pytest.raises(SystemExit) as exc:
                main([cmd, opt, bad])
            assert exc.value.code == 2
            err = capsys.readouterr().err
            assert f"argument {opt}" in err and repr(bad) in err, (cmd, opt, bad, err)


def test_user_errors_are_one_line_with_status_2(capsys, tmp_path):
    # a validation error deep inside (m not divisible by k) -> one line naming the command
    code = main(["demo", "--m", "7", "--k", "2", "--d", "3", "--n", "5", "--n-iter", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("mixlinreg demo: error: m must be")
    code = main(["reproduce", "--config", str(tmp_path / "missing.toml"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "mixlinreg reproduce: error: config file" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "figure2"\nname = "x"\n[grid]\nm = [10]\n')
    code = main(["reproduce", "--config", str(bad), "--preset", "paper", "--out", str(tmp_path)])
    assert code == 2 and "grid.n is missing" in capsys.readouterr().err
    bad.write_text('name = "x"\n[grid]\nm = [10]\n')  # no kind: refused by the loader, by name
    code = main(["reproduce", "--config", str(bad), "--preset", "paper", "--out", str(tmp_path)])
    assert code == 2 and "kind must be 'figure2', got None" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--preset", "huge"])
    assert exc.value.code == 2 and "invalid choice: 'huge'" in capsys.readouterr().err
    assert main(["check", "Z9", "--report-only"]) == 2


def test_zero_counts_in_the_api():
    from mixlinreg.compare import run_compare
    from mixlinreg.harness import load_config
    from mixlinreg.harness.agreement import check_agreement

    with pytest.raises(ValueError, match="n_seeds must be in"):
        run_compare("smoke", n_seeds=0)
    with pytest.raises(ValueError, match="preset must be one of"):
        run_compare("tiny")
    with pytest.raises(ValueError, match="units must be in"):
        check_agreement([load_config("fig2a", "smoke")], "early-stop", units=0)
    with pytest.raises(ValueError, match="trials must be in"):
        check_agreement([load_config("fig2a", "smoke")], "gram", trials=0)


@pytest.mark.filterwarnings("ignore::mixlinreg.EmptyClusterWarning")  # 5-iteration fits
def test_0d_arrays_are_scalars():
    mix = _small()
    init = np.zeros((2, 2, 3))
    a = mlr.ifca(mix.X, mix.y, init, np.array(0.1), n_iter=np.array(5), l2=np.array(0.0),
                 tol=np.array(1e-6))
    b = mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=5)
    np.testing.assert_array_equal(a.theta, b.theta)
    m2 = mlr.make_mixture(np.array(8), np.array(6), np.array(3), np.array(2), R=np.array(1.0),
                          sigma=np.array(0.1), rng=0)
    np.testing.assert_array_equal(m2.y, mix.y)
    est = mlr.IFCA(np.array(2), lr=np.array(0.1), n_init=np.array(2), n_iter=5, random_state=0)
    assert est.fit(mix.X, mix.y).coef_.shape == (2, 3)
    with pytest.raises(TypeError, match="n_iter must be an integer"):
        mlr.ifca(mix.X, mix.y, init, 0.1, n_iter=np.array(5.0))


@pytest.mark.filterwarnings("ignore::mixlinreg.EmptyClusterWarning")
def test_predict_with_the_wrong_d_names_X_not_init():
    mix = _small()
    est = mlr.IFCA(2, n_init=2, n_iter=5, random_state=0).fit(mix.X, mix.y)
    for X, y in [(mix.X[:, :, :2], mix.y), (mix.X[0, :, :2], mix.y[0]), (mix.X[0], mix.y)]:
        for method in (est.predict, est.score):
            with pytest.raises(ValueError, match=r"X must have shape \(m, n, 3\)") as err:
                method(X, y)
            assert "init" not in str(err.value)


# ----------------------------------------------------------------------------- 9. choosing k
@pytest.mark.parametrize("k_true, seed", [(2, 0), (3, 0), (3, 1)])
def test_bic_picks_the_true_k_on_separated_problems(k_true, seed):
    mix = mlr.make_mixture(m=60, n=50, d=5, k=k_true, R=1.0, sigma=0.1, rng=seed)
    bic, aic, loss = {}, {}, {}
    for k in range(1, 6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mlr.ConvergenceWarning)
            est = mlr.IFCA(n_clusters=k, lr=[0.1, 0.3], n_init=20, random_state=1).fit(mix.X, mix.y)
        bic[k], aic[k], loss[k] = est.bic(mix.X, mix.y), est.aic(mix.X, mix.y), est.loss_
    assert min(bic, key=bic.get) == k_true, bic
    # the training loss cannot choose: it never rises with k (up to float noise)
    assert all(loss[k + 1] <= loss[k] * (1 + 1e-9) for k in range(1, 5))
    # AIC penalizes less: never below the true k here, and it beats every smaller k
    assert min(aic, key=aic.get) >= k_true
    assert all(aic[k] > aic[k_true] for k in range(1, k_true))


def test_bic_where_it_fails_small_separation_with_unscaled_restarts():
    """The limit the docstring and README state: R = 0.1 (separation 0.2, sigma = 0.1) with
    Bernoulli 0/1 initializations, IFCA's fits at k >= 2 merge the clusters and BIC picks k = 1."""
    mix = mlr.make_mixture(m=60, n=50, d=5, k=2, R=0.1, sigma=0.1, rng=0)
    bic = {}
    for k in (1, 2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mlr.ConvergenceWarning)
            est = mlr.IFCA(n_clusters=k, n_init=20, random_state=1).fit(mix.X, mix.y)
        bic[k] = est.bic(mix.X, mix.y)
    assert min(bic, key=bic.get) == 1
    # with the true models as the initialization the criterion does see two clusters
    est = mlr.IFCA(2, init=mix.theta_star, n_iter=300).fit(mix.X, mix.y)
    assert est.bic(mix.X, mix.y) < bic[1]


def test_bic_formula_by_hand():
    """k = 1, noise-free fit of a single regression: BIC = -2 log L + (d + 1) log m exactly."""
    gen = np.random.default_rng(0)
    m, n, d = 10, 8, 3
    X = gen.standard_normal((m, n, d))
    theta = np.array([1.0, -2.0, 0.5])
    y = X @ theta + 0.1 * gen.standard_normal((m, n))
    est = mlr.IFCA(1, init=theta[None], n_iter=0).fit(X, y)
    var = np.mean((y - X @ theta) ** 2)
    ll = -0.5 * m * n * (np.log(2 * np.pi * var) + 1)
    assert est.bic(X, y) == pytest.approx(-2 * ll + (d + 1) * np.log(m), rel=1e-12)
    assert est.aic(X, y) == pytest.approx(-2 * ll + 2 * (d + 1), rel=1e-12)
    with pytest.raises(ValueError, match="bic/aic are defined for loss='squared'"):
        mlr.IFCA(1, loss="huber", init=theta[None], n_iter=0).fit(X, y).bic(X, y)


def test_empty_models_warn():
    mix = _small()
    init = np.stack([np.zeros(3), np.full(3, 1e3)])  # no machine ever picks the far model
    with pytest.warns(mlr.EmptyClusterWarning, match=r"1 of n_clusters=2 fitted models have no "
                                                      r"machine \(models \[1\]"):
        mlr.IFCA(2, init=init, n_iter=5).fit(mix.X, mix.y)
    assert issubclass(mlr.EmptyClusterWarning, mlr.ConvergenceWarning)


# ---------------------------------------------------------------- 10. first use and progress
def test_first_compile_is_announced_once(tmp_path, caplog):
    """A cold numba cache: the first call logs that it compiled and how long; later calls do not."""
    (tmp_path / "tinykern.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def add(a, b):
            return a + b
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("tinykern")
        from mixlinreg._firstuse import announce_compile

        add = announce_compile(mod.add, "the test kernel")
        with caplog.at_level(logging.WARNING, logger="mixlinreg"):
            assert add(1.0, 2.0) == 3.0
            assert add(2.0, 2.0) == 4.0
        msgs = [r.getMessage() for r in caplog.records if r.name == "mixlinreg"]
        assert len(msgs) == 1 and re.search(r"compiled the test kernel .* in \d+\.\d s", msgs[0])
        # a new process loads it from the cache: nothing is said
        code = ("import sys, logging; sys.path.insert(0, sys.argv[1]); import tinykern; "
                "from mixlinreg._firstuse import announce_compile; "
                "f = announce_compile(tinykern.add, 'k'); print(f(1.0, 2.0))")
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0 and "compiled" not in proc.stderr, proc.stderr
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tinykern", None)


def test_first_compile_of_a_kernel_path_is_announced_once(tmp_path, caplog):
    """A Python driver over several kernels (the certified-Gram path's shape): one line before
    the compile (no kernel of the path has cached code) and one after it, once."""
    (tmp_path / "tinypath.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def twice(a):
            return 2.0 * a

        @numba.njit(cache=True)
        def plus(a, b):
            return a + b

        def driver(a):
            return plus(twice(a), 1.0)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("tinypath")
        from mixlinreg._firstuse import announce_compile_path, dispatchers_of

        assert {d.py_func.__name__ for d in dispatchers_of(mod)} == {"twice", "plus"}
        driver = announce_compile_path(mod.driver, dispatchers_of(mod), "the test path")
        with caplog.at_level(logging.WARNING, logger="mixlinreg"):
            assert driver(1.0) == 3.0
            assert driver(2.0) == 5.0
        msgs = [r.getMessage() for r in caplog.records if r.name == "mixlinreg"]
        assert len(msgs) == 2, msgs
        assert msgs[0].startswith("mixlinreg: compiling the test path with numba before its first "
                                  "use (no machine code is cached"), msgs[0]
        assert re.search(r"compiled the test path \(2 kernels\) .* took \d+\.\d s", msgs[1])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tinypath", None)


def test_help_is_complete_and_plain(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    subs = _subparsers()
    for cmd in subs:
        assert cmd in top
    for cmd, sp in subs.items():
        text = sp.format_help()
        assert "``" not in text and ":func:" not in text and ":class:" not in text, cmd
        for act in sp._actions:
            if act.dest != "help":
                assert act.help and act.help.strip(), (cmd, act.dest)
        for act in sp._actions:
            if act.dest == "preset":
                assert act.choices, f"{cmd} --preset must be validated as a choice"
    assert "``" not in top


def test_compare_check_and_digits_show_progress():
    for cmd in ("compare", "check", "digits", "reproduce"):
        assert any(a.dest == "no_progress" for a in _subparsers()[cmd]._actions), cmd


def test_check_shows_a_progress_bar(tmp_path, capsys):
    assert main(["check", "L1", "--preset", "smoke", "--out", str(tmp_path / "o"), "--no-store"]) == 0
    assert "check/smoke" in capsys.readouterr().err


# ------------------------------------------------------------------------- 11. stale text
def test_readme_and_help_text_are_current():
    readme = (ROOT / "README.md").read_text()
    assert "not here yet" not in readme
    readme = (ROOT / "docs" / "theory_checks.md").read_text()  # where the measured times live
    from mixlinreg.theory.study import PAPERS
    from mixlinreg.theory.studies import get, ids

    for paper in PAPERS:  # a measured time per paper, with its date and the studies it timed
        m = re.search(rf"mixlinreg check --paper {paper} --preset quick +# (\d+) min (\d+) s "
                      r"measured on 2 cores \((\d{4}-\d\d-\d\d), with the (\d+) studies it had "
                      r"then", readme)
        assert m, f"docs/theory_checks.md must state the measured duration of check --paper {paper} --preset quick"
        # the current count is the derived block's (mixlinreg regenerate); a new study does not
        # unmake the measurement, which names how many studies it timed
        assert 1 <= int(m.group(4)) <= sum(get(s).paper == paper for s in ids()), paper
    check_help = " ".join(_subparsers()["check"].format_help().split())
    assert "docs/theory_checks.md gives measured times" in check_help


def test_no_text_points_outside_the_repository():
    pattern = re.compile(r"\.\./shared|/work/|shared/spec|\.\./\.\./")
    for path in list((ROOT / "mixlinreg").rglob("*.py")) + list((ROOT / "mixlinreg").rglob("*.toml")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            assert not pattern.search(line), f"{path.relative_to(ROOT)}:{i}: {line.strip()}"


def test_figures_show_the_shapes_run_a_legend_for_bands_and_R_as_a_scale(tmp_path, capsys):
    assert main(["reproduce", "fig2a", "--preset", "smoke", "--out", str(tmp_path / "r"),
                 "--figures", str(tmp_path / "f"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(m, n, d) = (20, 20, 40)" in out and "(100, 100, 1000)" not in out
    import pandas as pd

    from mixlinreg.plots import plot_panel

    summary = pd.read_csv(tmp_path / "f" / "fig2a_smoke_summary.csv")
    fig = plot_panel(summary, "R-sigma")
    ax = fig.axes[0]
    title = ax.get_title() or fig._suptitle.get_text()
    assert "d = 40" in title and "m = 20" in title and "1000" not in title
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("Wilson" in lab for lab in labels)
    assert "separation of" not in ax.get_xlabel() and "scale" in ax.get_xlabel()


def test_compare_intervals_respect_the_range():
    from mixlinreg.compare import INTERVAL_METHOD, _mean_interval

    gen = np.random.default_rng(0)
    for size in (2, 3, 5, 20):
        for _ in range(20):
            x = gen.exponential(size=size) * gen.choice([1e-6, 1.0, 1e3])
            mean, lo, hi = _mean_interval(x)
            eps = 1e-12 * x.max()  # a resample's mean of equal values may round by an ulp
            assert x.min() - eps <= lo <= mean <= hi <= x.max() + eps
    # the old t-interval of these two non-negative values went below zero
    mean, lo, hi = _mean_interval([0.0, 1e-3])
    assert lo >= 0 and hi <= 1e-3
    assert _mean_interval([0.2, 0.2])[1:] == (0.2, 0.2)
    assert np.isnan(_mean_interval([1.0])[1])
    assert "bootstrap percentile" in INTERVAL_METHOD


@pytest.mark.parametrize("name, least", [("mixlinreg.ifca", 6), ("mixlinreg.estimator", 25),
                                         ("mixlinreg.machines", 6),
                                         ("mixlinreg.harness.point", 3)])
def test_ifca_docstring_examples_run(name, least):
    """The examples of ifca.py and estimator.py (among them the bic example: k = 1..5 on a
    3-cluster problem picks 3), of the machines' helpers and of figure2_point."""
    import doctest

    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= least and result.failed == 0
