"""The measurement script behind issue 9's last decisions (``experiments/left_to_skip.py``,
BENCHMARKS.md "What is left to skip") on small problems: it replays and counts what it says."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mixlinreg import _numerics, ifca
from mixlinreg._gram import _GramCache
from mixlinreg.harness import load_config
from mixlinreg.harness import run as harness_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_distinct_grams_records_the_sets_made_and_restores_the_cache(monkeypatch):
    from test_gram import _problem

    script = _script("left_to_skip")
    monkeypatch.setattr(_numerics, "GRAM_FLOP_PER_BYTE", 0.0)  # prefer Gram steps
    X, y, _, init, lr = _problem(3)
    original = _GramCache.acquire
    with script.distinct_grams() as made:
        res = ifca(X, y, init, lr, n_iter=60, method="gram")
    assert _GramCache.acquire is original
    built = res.path_stats["grams_built"]
    assert built > 0 and 0 < len(made) <= built
    for key in made:  # each a non-empty set of the m machines
        mask = np.frombuffer(key, dtype=np.bool_)
        assert mask.shape == (X.shape[0],) and mask.any()


def test_unit_runs_are_the_harness_runs(monkeypatch):
    """The replay starts from exactly the runs ``run_unit`` hands the kernel."""
    script = _script("left_to_skip")
    exp = load_config("fig2d", "smoke")
    unit = exp.units()[0]
    seen = {}

    def capture(X, Y, init, lr, **kw):
        seen.update(X=X, Y=Y, init=init, lr=lr, y_index=kw["y_index"], n_iter=kw["n_iter"])
        raise RuntimeError("captured")

    monkeypatch.setattr(harness_run, "ifca", capture)
    with pytest.raises(RuntimeError, match="captured"):
        harness_run.run_unit(exp, unit)
    X, Y, theta, lr, cell, n_iter = script.unit_runs(exp, unit)
    np.testing.assert_array_equal(X, seen["X"])
    np.testing.assert_array_equal(Y, seen["Y"])
    np.testing.assert_array_equal(theta, seen["init"])
    np.testing.assert_array_equal(lr, seen["lr"])
    np.testing.assert_array_equal(cell, seen["y_index"])
    assert n_iter == seen["n_iter"]


def test_machine_certificates_count_like_the_kernel():
    """Sound certificates under all three rules, the stated flop, and today's rule counting full
    steps close to the kernel's own count on the same unit (the replay is NumPy, not the kernel:
    float32 runs that do not converge may part, so the counts need not be equal)."""
    script = _script("left_to_skip")
    exp = load_config("fig2d", "smoke")
    unit = exp.units()[0]
    X, Y, theta, lr, cell, n_iter = script.unit_runs(exp, unit)
    R, k, _ = theta.shape
    m, n, d = X.shape
    t = script.measure(X, Y, theta.copy(), lr, cell, n_iter)
    assert t["wrong_run"] == t["wrong_mach"] == t["wrong_c"] == 0
    assert R <= t["full_run"] <= t["live"] <= R * n_iter  # the first iteration evaluates all
    assert t["evals_mach"] >= R * m and t["evals_c"] >= R * m
    assert t["flop_run"] == pytest.approx(t["full_run"] * 2.0 * m * n * d * (k + 1))
    _, info = harness_run.run_unit(exp, unit, method="gram")
    kernel_full = info["path_stats"]["full_iterations"]
    assert abs(t["full_run"] - kernel_full) <= 0.25 * kernel_full


def test_the_script_refuses_a_unit_or_mode_that_is_not_there():
    script = _script("left_to_skip")
    for mode in script.MODES:
        with pytest.raises(SystemExit, match="unit: must be one of the 8 units of fig2d"):
            script.main(mode, "fig2d", "smoke", ["m20_n10_d30_k4_t0000", "m1_n1_d1_k4_t0000"])
    with pytest.raises(SystemExit, match="mode: must be one of"):
        script.main("closed form", "fig2d", "smoke", ["m20_n10_d30_k4_t0000"])


@pytest.mark.parametrize("mode", ["closed-form", "certificates"])
def test_each_mode_reports_a_smoke_unit(mode, capsys):
    _script("left_to_skip").main(mode, "fig2d", "smoke", ["m20_n10_d30_k4_t0000"])
    out = capsys.readouterr().out
    assert out.startswith("fig2d m20_n10_d30_k4_t0000: 12 runs")
    if mode == "closed-form":
        assert "run-iterations: full " in out and "upper bound of the saving" in out
    else:
        assert "certificates that disagree with the exact argmin: per run 0, per machine 0, " \
               "anchored 0" in out
