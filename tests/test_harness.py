"""The Figure 2 harness: configs, units, seeds, the resumable store, parallel backends, success rules."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg.harness import (
    ResultStore,
    load_config,
    run_experiment,
    success_table,
    trial_success,
)
from mixlinreg.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------- configs
@pytest.mark.parametrize("name, k, m, steps, plus, n_groups", [
    ("fig2a", 2, [100], [1.0, 0.1, 0.01], 0.001, 1),
    ("fig2b", 4, [400], [2.0, 1.0, 0.5], 0.001, 1),
    ("fig2c", 2, [50, 70, 100, 150, 200, 300, 400], [1.0, 0.1, 0.01], 0.0, 21),
    ("fig2d", 4, [100, 200, 300, 400, 800], [2.0, 1.0, 0.5], 0.0, 15),
])
def test_paper_presets_encode_the_authors_protocol(name, k, m, steps, plus, n_groups):
    exp = load_config(name, "paper")
    p = exp.protocol
    assert exp.grid["k"] == [k] and exp.grid["m"] == m and exp.grid["d"] == [1000]
    assert p["steps"] == steps and p["success_plus"] == plus
    assert (p["trials"], p["n_init"], p["n_iter"], p["dtype"]) == (40, 10, 300, "float32")
    assert (p["theta_scale"], p["init"], p["early_stop"]) == ("code", "bernoulli", False)
    assert len(exp.groups()) == n_groups
    if exp.layout == "R-sigma":
        assert exp.grid["R"] == [0.1, 0.25, 0.5, 0.75, 1.0]
        assert exp.grid["sigma"] == [0.0, 0.1, 0.2, 0.4]
        assert exp.grid["n"] == [100]
    else:
        assert exp.grid["sigma"] == [0.1] and exp.grid["n"] == [50, 100, 200]


def test_paper_grid_has_134400_runs():
    total = 0
    for name in ("fig2a", "fig2b", "fig2c", "fig2d"):
        exp = load_config(name, "paper")
        total += len(exp.units()) * exp.runs_per_unit
    assert total == 134_400  # the digest's count of the authors' runs


def test_presets_keep_the_grid():
    for name in ("fig2a", "fig2b", "fig2c", "fig2d"):
        paper, quick = load_config(name, "paper"), load_config(name, "quick")
        assert paper.grid == quick.grid
        assert quick.protocol["trials"] < paper.protocol["trials"]
        assert paper.hash() != quick.hash()


@pytest.mark.parametrize("text, match", [
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[3]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[0.1]\n',
     "every m must be divisible by every k"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\n[protocol]\nsteps=[0.1]\n', "grid.sigma is missing"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\nfoo=[1]\n[protocol]\nsteps=[0.1]\n',
     r"unknown key grid\.foo; allowed"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[0.1]\nspeed=1\n',
     r"unknown key protocol\.speed; allowed"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[-0.1]\n',
     r"protocol\.steps\[0\] must be a number in \(0, inf\), got -0.1"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[-0.1]\n[protocol]\nsteps=[0.1]\n',
     r"grid\.sigma\[0\] must be a number in \[0, inf\), got -0.1"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[0.1]\ntrials=0\n',
     r"protocol\.trials must be an integer in \[1, inf\), got 0"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[0.1]\ninit="close"\n',
     "init = 'close' needs grid.alpha0"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\nalpha0=[0.6]\n[protocol]\nsteps=[0.1]\ninit="close"\n',
     r"grid\.alpha0\[0\] must be a number in \(0, 0\.5\], got 0\.6"),
    ('kind = "figure2"\n[grid]\nm=[10]\nn=[5]\nd=[3]\nk=[2]\nR=[1.0]\nsigma=[0.1]\n[protocol]\nsteps=[0.1]\ndtype="float16"\n',
     r"protocol\.dtype must be one of \['float32', 'float64'\], got 'float16'"),
])
def test_config_errors(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_config(path)


def test_unknown_preset_and_name():
    with pytest.raises(ValueError, match="preset must be one of"):
        load_config("fig2a", "huge")
    with pytest.raises(FileNotFoundError, match="no packaged config named 'fig9'"):
        load_config("fig9")


# ------------------------------------------------------------------------------------ the store
def _smoke(name="fig2a"):
    return load_config(name, "smoke")


def test_smoke_end_to_end_and_resume(tmp_path):
    exp = _smoke()
    store, summ = run_experiment(exp, tmp_path, progress=False, max_units=1)
    assert summ["units_run"] == 1 and len(store.done()) == 1
    store, summ = run_experiment(exp, tmp_path, progress=False)
    assert summ["units_run"] == len(exp.units()) - 1  # the finished unit was not redone
    table = store.table()
    assert len(table) == len(exp.units()) * exp.runs_per_unit
    assert not table.duplicated(["unit", "R", "sigma", "init", "step"]).any()
    # a third call finds nothing to do and changes nothing
    store2, summ = run_experiment(exp, tmp_path, progress=False)
    assert summ["units_run"] == 0
    pd.testing.assert_frame_equal(store2.table(), table)
    # an uninterrupted run in a fresh store gives the identical table
    fresh, _ = run_experiment(exp, tmp_path / "fresh", progress=False)
    pd.testing.assert_frame_equal(fresh.table(), table)
    # every row records its seed and versions
    assert (table["seed_entropy"] == str(exp.protocol["seed"])).all()
    assert table["spawn_key"].str.match(r"^\d+-\d+-\d+-\d+-\d+$").all()
    assert table["versions"].str.contains("numba=").all()


def test_changed_config_never_mixes(tmp_path):
    exp = _smoke()
    store, _ = run_experiment(exp, tmp_path, progress=False, max_units=1)
    other = load_config(ROOT / "mixlinreg" / "configs" / "fig2a.toml", "quick")
    assert ResultStore(tmp_path, other).path != store.path
    # a tampered manifest is detected
    manifest = store.path / "manifest.json"
    manifest.write_text(manifest.read_text().replace(exp.hash(), "0" * 64))
    with pytest.raises(RuntimeError, match="belongs to another config"):
        ResultStore(tmp_path, exp)


def test_results_do_not_depend_on_workers_or_backend(tmp_path):
    exp = _smoke("fig2c")
    seq, _ = run_experiment(exp, tmp_path / "seq", progress=False)
    par, _ = run_experiment(exp, tmp_path / "par", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(seq.table(), par.table())


def test_dask_local_cluster_gives_the_same_table(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    exp = _smoke("fig2a")
    seq, _ = run_experiment(exp, tmp_path / "seq", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            das, _ = run_experiment(exp, tmp_path / "dask", backend="dask", scheduler=client,
                                    progress=False)
    pd.testing.assert_frame_equal(seq.table(), das.table())


def test_sigkill_and_resume_equals_uninterrupted(tmp_path):
    """Kill the CLI with SIGKILL after its first unit lands, rerun it, compare with a clean run."""
    cfg = tmp_path / "kill.toml"
    # enough units that the kill lands in the middle
    cfg.write_text((ROOT / "mixlinreg" / "configs" / "fig2c.toml").read_text())
    args = [sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", str(cfg),
            "--preset", "smoke", "--out", str(tmp_path / "killed"), "--figures",
            str(tmp_path / "figs"), "--no-progress", "--backend", "sequential"]
    exp = load_config(cfg, "smoke")
    units_dir = ResultStore(tmp_path / "killed", exp).units_dir
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(units_dir.glob("*.csv"))) < 1:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(list(units_dir.glob("*.csv")))
    assert 1 <= partial < len(exp.units()), "the kill should land mid-run"
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resumed = ResultStore(tmp_path / "killed", exp).table()
    clean, _ = run_experiment(exp, tmp_path / "clean", progress=False)
    pd.testing.assert_frame_equal(resumed, clean.table())


# ------------------------------------------------------------------------------- success rules
def _rows(sigma, near, matched, loss, diverged=None):
    n = len(near)
    return pd.DataFrame(dict(m=10, n=5, d=3, k=2, R=1.0, sigma=sigma, alpha0=np.nan, trial=0,
                             init=np.arange(n), step=0.1, dist_nearest=near, dist_matched=matched,
                             loss=loss, diverged=diverged if diverged is not None else [False] * n))


def test_success_rules_hand_made():
    # run 0: both models on one truth (nearest small, matched large), lowest loss
    # run 1: a proper solution with matched distance exactly 0.6 sigma (text: <=, succeeds)
    rows = _rows(0.1, near=[0.01, 0.06], matched=[0.5, 0.06], loss=[1.0, 2.0])
    t = trial_success(rows, success_plus=0.0).iloc[0]
    assert bool(t["authors"])       # 0.01 < 0.06
    assert bool(t["text"])          # 0.06 <= 0.06
    assert not bool(t["best_loss"])  # the lowest-loss run is the collapsed one
    # the authors' rule is strict: 0.06 < 0.06 fails without the +0.001
    rows = _rows(0.1, near=[0.06], matched=[0.06], loss=[1.0])
    assert not bool(trial_success(rows, 0.0).iloc[0]["authors"])
    assert bool(trial_success(rows, 0.001).iloc[0]["authors"])
    # diverged runs never succeed and are never the kept run
    rows = _rows(0.1, near=[np.nan, 0.2], matched=[np.nan, 0.2], loss=[np.nan, 0.5],
                 diverged=[True, False])
    t = trial_success(rows, 0.001).iloc[0]
    assert not t["authors"] and not t["text"] and not t["best_loss"]
    rows = _rows(0.1, near=[0.0, 0.01], matched=[0.0, 0.01], loss=[-1.0, 0.5], diverged=[True, False])
    assert bool(trial_success(rows, 0.0).iloc[0]["best_loss"])  # kept run is the usable one


def test_success_table_counts_and_wilson():
    parts = []
    for t in range(4):
        r = _rows(0.1, near=[0.01 if t < 3 else 0.5], matched=[0.01 if t < 1 else 0.5], loss=[1.0])
        r["trial"] = t
        parts.append(r)
    s = success_table(pd.concat(parts), 0.0).iloc[0]
    assert s["trials"] == 4 and s["succ_authors"] == 3 and s["succ_text"] == 1
    assert s["p_authors"] == 0.75
    lo, hi = wilson_interval(3, 4)
    assert s["lo_authors"] == lo and s["hi_authors"] == hi


def test_a_worker_opening_the_store_never_removes_a_write_in_progress(tmp_path):
    """Regression: workers used to delete every '.*.tmp' file when opening the store, including the
    temporary file of another worker's write in progress (a race seen with two loky workers).
    Now only temporary files of dead processes of this host are removed, by anyone."""
    import socket
    import subprocess

    from mixlinreg.runner.store import _HOST

    exp = _smoke()
    store = ResultStore(tmp_path, exp, clean=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = store.units_dir / f".m20_n20_d40_k2_t0000.csv.{_HOST}.{os.getpid()}.abc.tmp"
    orphan = store.units_dir / f".m20_n20_d40_k2_t0001.csv.{_HOST}.{dead.pid}.abc.tmp"
    legacy = store.units_dir / ".m20_n20_d40_k2_t0002.csv.abc.tmp"  # owner unknown: kept
    for p in (live, orphan, legacy):
        p.write_text("partial")
    ResultStore(tmp_path, exp)  # what a worker does
    assert live.exists() and orphan.exists()
    ResultStore(tmp_path, exp, clean=True)  # what the coordinator does before starting workers
    assert live.exists() and legacy.exists() and not orphan.exists()
    assert socket.gethostname()  # the host part comes from here


def test_report_only_writes_outputs_of_a_partial_store(tmp_path):
    from mixlinreg.cli import main

    exp = _smoke("fig2a")
    run_experiment(exp, tmp_path / "store", progress=False, max_units=1)
    args = ["reproduce", "fig2a", "--preset", "smoke", "--out", str(tmp_path / "store"),
            "--figures", str(tmp_path / "figs"), "--report-only"]
    assert main(args) == 0
    summary = pd.read_csv(tmp_path / "figs" / "fig2a_smoke_summary.csv")
    assert (summary["trials"] == 1).all()  # only the finished trial is summarized
    assert (tmp_path / "figs" / "fig2a_smoke.png").stat().st_size > 0
    assert len(ResultStore(tmp_path / "store", exp).done()) == 1  # nothing more was run


def test_a_store_is_opened_by_config_and_never_made_by_reading(tmp_path):
    exp = _smoke()
    with pytest.raises(FileNotFoundError, match=r"make them with `mixlinreg reproduce fig2a --preset smoke"):
        ResultStore.find(tmp_path, exp)
    assert list(tmp_path.iterdir()) == []  # reading made nothing
    run_experiment(exp, tmp_path, progress=False, max_units=1)
    assert len(ResultStore.find(tmp_path, exp).done()) == 1
    # the committed paper store of panel (a) is found by its config alone
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "figures" / "stores"
    assert len(ResultStore.find(root, load_config("fig2a", "paper")).done()) == 40


def test_experiment_unit_by_name():
    exp = load_config("fig2d", "smoke")
    for u in exp.units():  # (cells hold nan alpha0, so Units are compared by their fields)
        got = exp.unit(u.id)
        assert (got.id, got.spawn_key, repr(got.cells)) == (u.id, u.spawn_key, repr(u.cells))
    with pytest.raises(ValueError, match=r"unit: must be one of the 8 units of fig2d at preset "
                                         r"smoke \(m20_n10_d30_k4_t0000 \.\.\. "
                                         r"m40_n20_d30_k4_t0001\), got 'm1'"):
        exp.unit("m1")
