"""The JAX kernel (``ifca(..., kernel="jax")``) against the numba kernel and the naive reference.

Run on JAX's CPU backend here (and on a GPU by ``experiments/gpu_check.sh``). Tolerances are the
kernel tests' (``tests/test_kernel.py``): float64 rtol 1e-10 against both the reference and the numba
kernel, float32 ``TEST_RTOL`` against the float64 reference on the same rounded inputs; integer
outputs (labels, n_iter) and flags must be equal.
"""

import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from naive import naive_ifca
from test_kernel import (AVERAGING, LOSSES, RTOL32, RTOL64, _close, _grid_problem, _kw_for_naive,
                         _seed, assert_matches_naive, grid_case)
from test_multinomial import _matches as _matches_multinomial
from test_multinomial import _problem as _multinomial_problem

jax = pytest.importorskip("jax")

import mixlinreg as mlr  # noqa: E402
from mixlinreg import ifca  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning")


def assert_same(a, b, rtol=RTOL64):
    """Two :class:`IFCAResult` of the same call on two backends: every output."""
    for name in ("n_iter", "diverged", "converged", "labels"):
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    _close(a.theta, b.theta, rtol, "theta")
    _close(a.loss, b.loss, rtol, "loss")
    assert (a.trace is None) == (b.trace is None)
    if a.trace is not None:
        assert_array_equal(a.trace.labels, b.trace.labels, err_msg="trace.labels")
        _close(a.trace.loss, b.trace.loss, rtol, "trace.loss")
        assert (a.trace.dist is None) == (b.trace.dist is None)
        if a.trace.dist is not None:
            _close(a.trace.dist, b.trace.dist, rtol, "trace.dist")


def _both(*args, **kw):
    """The same call on both backends (the numba kernel's direct path)."""
    return ifca(*args, kernel="jax", **kw), ifca(*args, kernel="numba", method="data", **kw)


# ------------------------------------------------------------------ the kernel's test configurations
def _jax_grid():
    for loss in LOSSES:
        for resample in (False, True):
            for avg in ("gradient", "model1", "model3"):
                for part in ("all", "mask"):
                    yield pytest.param(loss, resample, avg, part,
                                       id=f"{loss}-{'resample' if resample else 'full'}-{avg}-{part}")


@pytest.mark.parametrize("loss, resample, avg, part", list(_jax_grid()))
def test_jax_equals_naive_and_numba_float64(loss, resample, avg, part, make_problem,
                                            global_random_seed):
    # the problems of tests/test_kernel.py::test_kernel_equals_naive_float64 (same seeds)
    seed = _seed(global_random_seed, loss, resample, avg, part)
    X, y, init, lr, kw = grid_case(seed, loss, resample, avg, part, make_problem)
    res, numba_res = _both(X, y, init, lr, trace=True, **kw)
    assert res.method == "jax" and res.theta.dtype == np.float64
    assert_matches_naive(res, naive_ifca(X, y, init, lr, **_kw_for_naive(kw)))
    assert_same(res, numba_res)


@pytest.mark.parametrize("resample", [False, True])
@pytest.mark.parametrize("avg", ["gradient", "model3"])
def test_jax_multinomial_float64(resample, avg, global_random_seed):
    X, y, W, init, lr = _multinomial_problem(_seed(global_random_seed, "jax-mn", resample, avg))
    T = 3 if resample else 6
    kw = dict(n_iter=T, loss="multinomial", l2=0.05, resample=resample, theta_star=W,
              averaging="model" if avg.startswith("model") else "gradient",
              local_steps=3 if avg == "model3" else 1)
    if resample:
        X, y = np.concatenate([X] * 2, axis=1), np.concatenate([y] * 2, axis=1)
    res, numba_res = _both(X, y, init, lr, trace=True, **kw)
    assert res.theta.shape == init.shape
    _matches_multinomial(res, naive_ifca(X, y, init, lr, **kw))
    assert_same(res, numba_res)


@pytest.mark.parametrize("loss", list(LOSSES))
@pytest.mark.parametrize("avg", ["gradient", "model3"])
def test_jax_float32_close_to_float64(loss, avg, make_problem, global_random_seed):
    seed = _seed(global_random_seed, "f32", loss, avg, False)
    X, y, ts, init, lr, T = _grid_problem(seed, loss, False, avg, make_problem)
    X32, y32, init32 = (a.astype(np.float32) for a in (X, y, init))
    kw = dict(n_iter=T, theta_star=ts, **LOSSES[loss], **AVERAGING[avg])
    res, numba_res = _both(X32, y32, init32, lr, trace=True, **kw)
    assert res.theta.dtype == np.float32
    ref = naive_ifca(X32.astype(np.float64), y32.astype(np.float64), init32.astype(np.float64),
                     lr.astype(np.float32).astype(np.float64),
                     **_kw_for_naive(dict(kw, theta_star=ts.astype(np.float32))))
    assert_matches_naive(res, ref, rtol=RTOL32)
    assert_same(res, numba_res, rtol=RTOL32)


# --------------------------------------------------------------- ties, divergence, stops, variants
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", [dict(), dict(averaging="model"), dict(loss="huber", resample=True)],
                         ids=["gradient", "model", "huber-resample"])
def test_jax_identical_models_tie_to_lowest_index(dtype, kw, make_problem):
    X, y, ts, _ = make_problem(11, 8, 24, 4, 2, kw.get("loss", "squared"))
    init = np.random.default_rng(11).standard_normal((3, 3, 4))
    init[0, 1] = init[0, 0]
    init[1, 2] = init[1, 0] = init[1, 1]
    init[2, 2] = init[2, 1]
    X, y, init = (a.astype(dtype) for a in (X, y, init))
    res, numba_res = _both(X, y, init, 0.05, n_iter=3, trace=True, **kw)
    assert not np.any(res.trace.labels[0, 0] == 1)
    assert_array_equal(res.trace.labels[0, 1], 0)
    assert not np.any(res.trace.labels[:, 1] == 2)
    assert_array_equal(res.theta[1, 2], init[1, 2])
    assert_same(res, numba_res, rtol=RTOL64 if dtype == np.float64 else RTOL32)


def test_jax_divergence_and_non_finite_loss(make_problem):
    X, y, ts, _ = make_problem(5, 8, 20, 4, 2, "squared")
    init = np.random.default_rng(5).standard_normal((3, 2, 4))
    lr = np.array([0.1, 1e3, 0.2])
    res, numba_res = _both(X, y, init, lr, n_iter=8, trace=True, theta_star=ts)
    assert res.diverged.tolist() == [False, True, False] and 1 <= res.n_iter[1] < 8
    assert_same(res, numba_res)
    assert_matches_naive(res, naive_ifca(X, y, init, lr, n_iter=8, theta_star=ts))
    # a loss that overflows while theta stays finite freezes the run at its current models
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3, 6, 2)), rng.normal(size=(3, 6))
    with np.errstate(all="ignore"):
        res, numba_res = _both(X, y, np.ones((2, 1, 2)), np.array([1e8, 0.01]), n_iter=40,
                               diverge_threshold=1e300, trace=True)
    assert res.diverged.tolist() == [True, False] and not np.isfinite(res.loss[0])
    assert_same(res, numba_res)


@pytest.mark.parametrize("kw", [dict(), dict(averaging="model"), dict(loss="logistic", l2=0.1)],
                         ids=["gradient", "model", "logistic"])
def test_jax_early_stop(kw, make_problem):
    loss = kw.get("loss", "squared")
    X, y, ts, _ = make_problem(2, 8, 20, 3, 2, loss, sep=3.0)
    init = np.stack([ts + 0.3, ts - 0.2])
    lr = {"model": 0.05}.get(kw.get("averaging"), 2.0 if loss == "logistic" else 0.3)
    res, numba_res = _both(X, y, init, lr, n_iter=400, trace=True, early_stop=True, tol=1e-8, **kw)
    assert res.converged.all() and np.all(res.n_iter < 400)
    assert_same(res, numba_res)


def test_jax_participation_and_variants(make_problem):
    # an int participation draws the same masks (validation is shared); y variants by y_index
    X, y, ts, _ = make_problem(7, 10, 15, 3, 2, "squared", n_variants=3)
    init = np.random.default_rng(7).standard_normal((4, 2, 3))
    kw = dict(n_iter=6, y_index=np.array([0, 2, 1, 2]), theta_star=ts, trace=True)
    assert_same(*_both(X, y, init, 0.2, participation=4, rng=3, **kw))
    assert_same(*_both(X, y, init, 0.2, **kw))


def test_jax_n_iter_zero_and_estimator(make_problem):
    X, y, ts, _ = make_problem(1, 12, 30, 3, 2, "squared")
    init = np.random.default_rng(1).standard_normal((2, 2, 3))
    assert_same(*_both(X, y, init, 0.1, n_iter=0, trace=True, theta_star=ts))
    est = {}
    for backend in ("jax", "numba"):
        with mlr.use_kernel(backend):
            est[backend] = mlr.IFCA(n_clusters=2, lr=[0.1, 0.3], n_init=3, n_iter=50, method="data"
                                    if backend == "numba" else "auto", random_state=0).fit(X, y)
    assert est["jax"].result_.method == "jax" and est["numba"].result_.method == "data"
    assert_same(est["jax"].result_, est["numba"].result_)
    assert_array_equal(est["jax"].predict(X, y), est["numba"].predict(X, y))


# ---------------------------------------------------------------------------- errors and settings
BAD = [
    (dict(lr=-1.0), "lr must be"),
    (dict(n_iter=-1), "n_iter must be"),
    (dict(loss="cubic"), "loss must be one of"),
    (dict(averaging="median"), "averaging must be one of"),
    (dict(init=np.full((2, 2, 3), np.nan)), "init"),
    (dict(y=np.zeros((5, 4))), "y must have shape"),
    (dict(resample=True, n_iter=50), "resample=True needs"),
    (dict(participation=99), "participation"),
    (dict(dtype=np.int32), "dtype must be"),
]


@pytest.mark.parametrize("change, words", BAD, ids=[w for _, w in BAD])
def test_jax_bad_input_gets_the_numba_paths_error(change, words, make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    kw = {**dict(X=X, y=y, init=np.zeros((2, 2, 3)), lr=0.1), **change}
    pos = [kw.pop(name) for name in ("X", "y", "init", "lr")]
    errors = {}
    for kernel in ("numba", "jax"):
        with pytest.raises((ValueError, TypeError)) as info:
            ifca(*pos, kernel=kernel, **kw)
        errors[kernel] = (type(info.value), str(info.value))
    assert errors["jax"] == errors["numba"]
    assert words in errors["jax"][1]


def test_jax_refuses_other_paths_and_unknown_backends(make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    for method in ("stats", "gram"):
        with pytest.raises(ValueError, match=r"method must be one of \['auto', 'data'\] with kernel='jax'"):
            ifca(X, y, np.zeros((2, 3)), 0.1, kernel="jax", method=method)
    with pytest.raises(ValueError, match=r"kernel must be one of \['jax', 'numba'\], got 'torch'"):
        ifca(X, y, np.zeros((2, 3)), 0.1, kernel="torch")
    with pytest.raises(ValueError, match="kernel must be one of"):
        with mlr.use_kernel("cuda"):
            pass


def test_the_former_names_of_the_kernel_still_work_and_say_so(make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    init = np.zeros((2, 3))
    new = ifca(X, y, init, 0.1, n_iter=3, kernel="numba")
    with pytest.warns(FutureWarning, match=r"ifca\(backend=...\) is renamed ifca\(kernel=...\)"):
        old = ifca(X, y, init, 0.1, n_iter=3, backend="numba")
    np.testing.assert_array_equal(old.theta, new.theta)
    with pytest.raises(ValueError, match="give kernel= only"):
        ifca(X, y, init, 0.1, kernel="numba", backend="jax")
    with pytest.warns(FutureWarning, match="use_backend is renamed use_kernel"):
        with mlr.use_backend("jax"):
            assert ifca(X, y, init, 0.1, n_iter=2).method == "jax"
    ifca_module = sys.modules["mixlinreg.ifca"]  # the module (mixlinreg.ifca is the function)
    with pytest.warns(FutureWarning, match="mixlinreg.ifca.BACKENDS is renamed"):
        assert ifca_module.BACKENDS == ("numba", "jax") == ifca_module.KERNELS


def test_missing_jax_names_the_extra(monkeypatch, make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    monkeypatch.setitem(sys.modules, "jax", None)  # "import jax" now raises ImportError
    for call in (lambda: ifca(X, y, np.zeros((2, 3)), 0.1, kernel="jax"),
                 lambda: mlr.use_kernel("jax").__enter__()):
        with pytest.raises(ImportError, match=r"pip install 'mixlinreg\[jax\]'.*'mixlinreg\[gpu\]'"):
            call()


def test_jax_leaves_64_bit_mode_and_the_default_backend_as_they_were(make_problem):
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    before = bool(jax.config.jax_enable_x64)
    with mlr.use_kernel("jax"):
        assert ifca(X, y, np.zeros((2, 3)), 0.1, n_iter=2).method == "jax"
        assert ifca(X, y, np.zeros((2, 3)), 0.1, n_iter=2, kernel="numba").method != "jax"
    assert bool(jax.config.jax_enable_x64) == before
    assert ifca(X, y, np.zeros((2, 3)), 0.1, n_iter=2).method != "jax"


# ------------------------------------------------------------------ the harness, the CLI, the studies
def test_harness_reproduce_with_kernel_jax_agrees_with_numba(tmp_path):
    from mixlinreg.cli import main
    from mixlinreg.harness import ResultStore, load_config
    from mixlinreg.harness.agreement import unit_agreement
    from mixlinreg.harness.run import run_unit

    assert main(["reproduce", "fig2b", "--preset", "smoke", "--out", str(tmp_path), "--kernel", "jax",
                 "--no-progress"]) == 0
    exp = load_config("fig2b", preset="smoke")
    store = ResultStore.find(tmp_path, exp)
    assert store.done() == {u.id for u in exp.units()}
    for unit in exp.units():
        rows = store.units.read(unit.id)
        assert set(rows["method"]) == {"jax"} and rows["versions"].str.contains(";jax=").all()
        ref, _ = run_unit(exp, unit, kernel="numba", method="data")  # the rule's reference
        verdict = unit_agreement(exp, unit, ref, rows)
        assert verdict["agrees"] and verdict["runs_beyond"] == 0, verdict


def test_check_agreement_candidate_jax():
    from mixlinreg.cli import main

    assert main(["check-agreement", "fig2a", "--candidate", "jax", "--preset", "smoke",
                 "--trials", "1"]) == 0


def test_harness_unit_agreement_catches_changed_flags_and_distances():
    from mixlinreg.harness import load_config
    from mixlinreg.harness.agreement import unit_agreement
    from mixlinreg.harness.run import run_unit

    exp = load_config("fig2a", preset="smoke")
    unit = exp.units()[0]
    ref, _ = run_unit(exp, unit, kernel="numba", method="data")
    assert unit_agreement(exp, unit, ref, ref.copy())["agrees"]
    # a distance moved by 1% on a run the numba kernel reproduces alone: a disagreement
    moved = ref.copy()
    i = int(np.flatnonzero(moved["dist_nearest"].to_numpy() > 1e-2)[0])
    for col in ("dist_nearest", "dist_matched"):
        moved.loc[i, col] *= 1.01
    out = unit_agreement(exp, unit, ref, moved)
    assert out["runs_beyond"] == 1 and out["disagree"] == [i] and not out["agrees"]
    # a divergence flag changed on a run the numba kernel reproduces alone: a disagreement
    flipped = ref.copy()
    flipped.loc[0, "diverged"] = not bool(flipped.loc[0, "diverged"])
    out = unit_agreement(exp, unit, ref, flipped)
    assert out["runs_beyond"] == 1 and out["disagree"] == [0] and not out["agrees"]
    # a failing trial made to succeed (one run's distances set to 0): the success flags change
    assert ref["dist_nearest"].min() > 1e-2
    won = ref.copy()
    won.loc[0, ["dist_nearest", "dist_matched"]] = 0.0
    out = unit_agreement(exp, unit, ref, won)
    assert out["flags_changed_authors"] == 1 and out["flags_changed_text"] == 1 and not out["agrees"]


def test_harness_kernel_jax_refuses_parallel_local_workers(tmp_path):
    from mixlinreg.harness import load_config, run_experiment

    with pytest.raises(ValueError, match="n_jobs must be 1 with kernel='jax'.*got 2"):
        run_experiment(load_config("fig2a", preset="smoke"), tmp_path, n_jobs=2, kernel="jax",
                       progress=False)
    assert not any(tmp_path.rglob("*.csv"))


def test_harness_cli_kernel_jax_without_jax_is_one_line(monkeypatch, tmp_path, capsys):
    from mixlinreg.cli import main

    monkeypatch.setitem(sys.modules, "jax", None)
    for argv in (["reproduce", "fig2a", "--preset", "smoke"], ["check", "T2", "--preset", "smoke"]):
        assert main(argv + ["--out", str(tmp_path / "o"), "--kernel", "jax", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--kernel jax" in err[0] and "mixlinreg[jax]" in err[0]
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("*.csv"))


def test_harness_check_with_kernel_jax_gives_the_numba_numbers(tmp_path):
    # a study that calls ifca (T2: float64, logistic and Huber losses) on both kernels
    import pandas as pd

    from mixlinreg.cli import main

    for kernel in ("numba", "jax"):
        assert main(["check", "T2", "--preset", "smoke", "--out", str(tmp_path / kernel),
                     "--store", str(tmp_path / kernel / "store"), "--kernel", kernel,
                     "--no-progress"]) == 0
    a = pd.read_csv(tmp_path / "numba" / "T2_smoke.csv")
    b = pd.read_csv(tmp_path / "jax" / "T2_smoke.csv")
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    num = a.select_dtypes("number").columns
    np.testing.assert_allclose(b[num].to_numpy(float), a[num].to_numpy(float), rtol=1e-8, atol=1e-12)
    assert (a.drop(columns=num) == b.drop(columns=num)).all().all()


def test_harness_units_in_threads_give_the_same_store(tmp_path, monkeypatch):
    # on a GPU the JAX harness runs several units at once in threads; forced here on the CPU
    from mixlinreg.harness import ResultStore, load_config, run_experiment
    from mixlinreg.harness import sweep

    exp = load_config("fig2c", preset="smoke")
    monkeypatch.setattr(sweep, "_jax_workers", lambda: 3)
    run_experiment(exp, tmp_path / "threads", kernel="jax", progress=False)
    monkeypatch.setattr(sweep, "_jax_workers", lambda: 1)
    run_experiment(exp, tmp_path / "one", kernel="jax", progress=False)
    a = ResultStore.find(tmp_path / "threads", exp).table()
    b = ResultStore.find(tmp_path / "one", exp).table()
    assert len(a) == exp.runs_per_unit * len(exp.units())
    cols = ["unit", "init", "step", "R", "dist_nearest", "dist_matched", "loss", "diverged", "n_iter"]
    assert a[cols].equals(b[cols])


def test_jax_calls_from_threads_keep_their_precision(make_problem):
    # 64-bit mode is switched on per call and per thread (the harness's threads on a GPU)
    from concurrent.futures import ThreadPoolExecutor

    X, y, ts, _ = make_problem(4, 8, 20, 4, 2, "squared")
    init = np.random.default_rng(4).standard_normal((3, 2, 4))
    want = ifca(X, y, init, 0.2, n_iter=20, method="data")
    calls = [(np.float64,), (np.float32,)] * 4
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: ifca(X.astype(c[0]), y, init, 0.2, n_iter=20,
                                           kernel="jax"), calls))
    for (dt,), res in zip(calls, got):
        assert res.theta.dtype == dt and res.loss.dtype == np.float64
        _close(res.theta, want.theta, RTOL64 if dt == np.float64 else RTOL32, "theta")
        assert_array_equal(res.labels, want.labels)


def test_jax_out_of_device_memory_is_one_clear_error(monkeypatch, make_problem, tmp_path, capsys):
    from mixlinreg import _jax
    from mixlinreg.cli import main

    def exhausted():
        def run(*args):
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9 GiB")
        return run

    monkeypatch.setattr(_jax, "_compiled", exhausted)
    X, y, ts, _ = make_problem(0, 6, 10, 3, 2, "squared")
    with pytest.raises(MemoryError, match=r"ran out of memory for 1 runs of k = 2 models on \(m, n, d\) "
                                          r"= \(6, 10, 3\).*JAX_WORKERS"):
        ifca(X, y, np.zeros((2, 3)), 0.1, kernel="jax")
    assert main(["reproduce", "fig2a", "--preset", "smoke", "--out", str(tmp_path), "--kernel", "jax",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ran out of memory" in err[0]
    # and the other paths refuse a method the JAX backend does not have before any work
    assert main(["reproduce", "fig2a", "--preset", "smoke", "--out", str(tmp_path / "g"),
                 "--kernel", "jax", "--method", "gram", "--no-progress"]) == 2
    assert "--method gram and --kernel jax conflict" in capsys.readouterr().err
