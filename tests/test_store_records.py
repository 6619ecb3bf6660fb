"""Issue 25, classes 2, 5 and the store side of 3: work is sized before it starts (units named on
demand, a unit too large refused up front), a unit's record ties it to its unit and its store
(swapped or copied units are recomputed, a unit without a record is never trusted), and store
faults end in one line that says what, where and how to resume."""

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixlinreg import runner
from mixlinreg._memory import UnitMemoryError, available_bytes, format_bytes
from mixlinreg.harness import ResultStore, load_config, run_experiment
from mixlinreg.harness._sizing import largest_unit
from mixlinreg.harness._tiny import write_tiny
from mixlinreg.runner.store import (_HOST, STALE_AFTER, DamagedUnitWarning, StoreError,
                                     StoreWriteError, UnitStore)
from mixlinreg.harness.sweep import workload as fig2_workload
from mixlinreg.runner import Units, Workload
from mixlinreg.theory import Context

ROOT = Path(__file__).resolve().parents[1]
BIG = """
kind = "figure2"
name = "big"
[grid]
m = {m}
n = [100]
d = [1000]
k = [2]
R = [0.5, 1.0]
sigma = [0.1]
[protocol]
steps = [0.1]
n_iter = 5
n_init = 2
trials = {trials}
"""


def _toy(unit, ss):
    return pd.DataFrame({"unit": [unit] * 2, "x": np.random.default_rng(ss).standard_normal(2)})


def _toy_wl(**kw):
    return Workload(name="toy", preset="smoke", key={"a": 1}, units=("u0", "u1", "u2"),
                    compute=_toy, seed=3, **kw)


def _tiny(tmp_path, trials=3, seed=1, name="tiny.toml"):
    return load_config(write_tiny(tmp_path / name, trials=trials, seed=seed), "paper")


def _swap(a, b):
    tmp = a.with_name(a.name + ".x")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _damaged(caught):
    return [str(w.message) for w in caught if issubclass(w.category, DamagedUnitWarning)]


# ------------------------------------------------------------------ class 5: records tied to units
def test_a_record_names_its_unit_its_store_and_its_config(tmp_path):
    wl = _toy_wl()
    runner.run(wl, tmp_path)
    rec = json.loads((tmp_path / wl.folder / "u1.check.json").read_text())
    assert (rec["unit"], rec["store"], rec["tag"]) == ("u1", wl.folder, wl.tag)


def _swapped(f):
    _swap(f / "u0.csv", f / "u1.csv")
    _swap(f / "u0.check.json", f / "u1.check.json")
    return ["u0", "u1"]


def _copied_over(f):
    shutil.copy(f / "u0.csv", f / "u1.csv")
    shutil.copy(f / "u0.check.json", f / "u1.check.json")
    return ["u1"]


def _no_record(f):
    (f / "u1.check.json").unlink()
    return ["u1"]


def _edit_record(f, **change):
    rec = json.loads((f / "u1.check.json").read_text())
    rec.update(change)
    (f / "u1.check.json").write_text(json.dumps({k: v for k, v in rec.items() if v is not None}))
    return ["u1"]


TAMPER = {"swapped": _swapped, "copied over": _copied_over, "no record": _no_record,
          "record of another store": lambda f: _edit_record(f, store="toy-smoke-0123456789ab"),
          "record without unit (older format)": lambda f: _edit_record(f, unit=None),
          "record without tag (older format)": lambda f: _edit_record(f, tag=None)}


@pytest.mark.parametrize("how", list(TAMPER))
def test_a_unit_not_tied_to_its_place_is_recomputed_with_one_line(tmp_path, how):
    wl = _toy_wl()
    clean, _ = runner.run(wl, tmp_path)
    names = TAMPER[how](tmp_path / wl.folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again, s = runner.run(wl, tmp_path)
    said = _damaged(caught)
    for u in names:
        line = next(m for m in said if f"{u}.csv" in m)
        assert "\n" not in line and "recomputed" in line
    assert s["units_run"] == len(names)
    for u in wl.units:
        pd.testing.assert_frame_equal(clean[u], again[u])
    assert list((tmp_path / wl.folder).glob(f"{names[0]}.csv.damaged-*"))  # kept aside


def test_swapped_units_of_a_study_store_are_recomputed(tmp_path):
    calls = []

    def compute(v):
        calls.append(v)
        return pd.DataFrame({"v": [v, v + 0.5]})

    ctx = Context("L1", preset="smoke", store=tmp_path, params={"p": 1})
    first = {u: ctx.unit(u, lambda u=u: compute(float(u[1]))) for u in ("a1", "a2")}
    folder = ctx._unit_dir()
    _swap(folder / "a1.csv", folder / "a2.csv")
    _swap(folder / "a1.check.json", folder / "a2.check.json")
    with pytest.warns(DamagedUnitWarning, match="names unit 'a2', not 'a1'"):
        again = {u: ctx.unit(u, lambda u=u: compute(float(u[1]))) for u in ("a1", "a2")}
    assert len(calls) == 4
    for u in first:
        pd.testing.assert_frame_equal(first[u], again[u])


def test_figure2_units_without_record_are_proven_by_their_rows_and_swaps_are_caught(tmp_path):
    exp = _tiny(tmp_path)
    store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    clean = store.table()
    a, b = exp.units()[0].id, exp.units()[1].id
    (store.units_dir / f"{a}.check.json").unlink()  # rows name their unit and config: proven
    _swap(store.units_dir / f"{b}.csv", store.units_dir / f"{exp.units()[2].id}.csv")
    _swap(store.units_dir / f"{b}.check.json", store.units_dir / f"{exp.units()[2].id}.check.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store, s = run_experiment(exp, tmp_path / "s", progress=False)
    said = _damaged(caught)
    assert s["units_run"] == 2 and not [m for m in said if f"{a}.csv" in m]
    assert any(f"{b}.csv" in m and "names unit" in m for m in said)
    assert store.table().equals(clean)
    rec = json.loads((store.units_dir / f"{a}.check.json").read_text())
    assert (rec["unit"], rec["store"]) == (a, store.path.name)  # migrated record


def test_committed_stores_stay_proven_without_recomputing(tmp_path, monkeypatch):
    import mixlinreg.harness.sweep as sweep

    dirs = sorted((ROOT / "figures" / "stores").glob("fig2?-paper-*"))
    assert len(dirs) == 4
    for d in dirs:  # every record: the old format (no store name) is still read, nothing written
        store = ResultStore.open(d)
        units = list(store.exp.units())
        assert {store.units.problem(u.id, migrate=False) for u in units} == {None}, d.name
    copy = tmp_path / dirs[0].name
    shutil.copytree(dirs[0], copy)
    monkeypatch.setattr(sweep, "run_unit", lambda *a, **k: pytest.fail("recomputed"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedUnitWarning)
        _, s = run_experiment(ResultStore.open(copy).exp, tmp_path, progress=False)
    assert s["units_run"] == 0 and s["units_skipped"] == 40
    assert all((dirs[0] / "units" / p.name).read_bytes() == p.read_bytes()
               for p in (copy / "units").iterdir())


# ------------------------------------------------------------------ class 2: work sized first
def test_a_billion_units_are_named_on_demand(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(BIG.format(m="[2, 4]", trials=10**9).replace("[100]", "[3]", 1)
                    .replace("[1000]", "[4]"))
    exp = load_config(path, "paper")
    units = exp.units()
    assert len(units) == 2 * 10**9
    last = units[-1]
    assert last.id == "m4_n3_d4_k2_t999999999" and exp.unit(last.id).trial == 10**9 - 1
    assert units.index("m2_n3_d4_k2_t0007") == 7 and "m2_n3_d4_k2_t7" not in units
    wl = fig2_workload(exp)
    assert isinstance(wl.units, Units) and wl.units[10**9] == "m4_n3_d4_k2_t0000"
    tracemalloc.start()
    try:
        store, s = run_experiment(exp, tmp_path / "s", progress=False, max_units=2,
                                  backend="sequential")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert s["units_run"] == 2 and s["units_total"] == 2 * 10**9
    assert sorted(store.done()) == ["m2_n3_d4_k2_t0000", "m2_n3_d4_k2_t0001"]
    assert peak < 64 * 2**20  # the list alone would be hundreds of GiB


def test_numbered_units_are_made_on_demand(tmp_path):
    import pickle

    from mixlinreg.runner import Numbered

    units = Numbered(["a_s", "b_s"], 10**9)
    assert (len(units), units[10**9 + 7], units.index("b_s0007")) == (2 * 10**9, "b_s0007", 10**9 + 7)
    assert "b_s7" not in units and "c_s0001" not in units and units.split("a_s12345") == (0, 12345)
    by = pickle.loads(pickle.dumps(units.mapping(["A", "B"])))
    assert by["b_s0002"] == ("B", 2)
    with pytest.raises(KeyError):
        by["b_s2"]
    wl = Workload(name="toy", preset="smoke", key={}, units=units, compute=_toy, seed=3)
    rows, s = runner.run(wl, tmp_path, backend="sequential", max_units=2)
    assert list(rows) == ["a_s0000", "a_s0001"] and s["units_total"] == 2 * 10**9


def test_a_unit_too_large_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    from mixlinreg.cli import main

    path = tmp_path / "big.toml"
    path.write_text(BIG.format(m="[1000, 100000]", trials=2))
    exp = load_config(path, "paper")
    need, what, hint = largest_unit(exp)
    assert need > 100000 * 100 * 1000 * 4 and "m = 100000, n = 100, d = 1000" in what
    monkeypatch.setattr(runner, "available_bytes", lambda: 8 * 2**30)
    with pytest.raises(UnitMemoryError, match=r"big/paper: a unit needs about \d+ GiB \(m = 100000, "
                                              r"n = 100, d = 1000, k = 2, float32.*but 8.0 GiB are "
                                              r"available: lower m, n or d"):
        run_experiment(exp, tmp_path / "s", progress=False)
    assert not (tmp_path / "s").exists()  # nothing made
    rc = main(["reproduce", "--config", str(path), "--preset", "paper", "--out",
               str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "GiB" in err[0] and "m = 100000" in err[0]


def test_units_at_once_are_lowered_to_what_fits(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(runner, "available_bytes", lambda: 3 * 2**30)
    wl = _toy_wl(memory=lambda: (2 * 2**30, "toy", "lower a"))
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        _, s = runner.run(wl, tmp_path, n_jobs=2, backend="loky")
    assert s["n_jobs"] == 1 and s["unit_memory_bytes"] == 2 * 2**30
    assert "toy/smoke: 2 units at once would need about 4.6 GiB (2.3 GiB each) but 3.0 GiB are " \
           "available: running 1 at once" in caplog.text


def test_a_unit_too_large_for_the_jax_device_is_refused_before_anything_runs(tmp_path,
                                                                             monkeypatch):
    """The JAX harness on a GPU: the largest unit's device memory (X, the runs' responses, the
    forward and backward passes of every run in one call) against the device's free memory."""
    from mixlinreg import _memory
    from mixlinreg.harness import _sizing

    path = tmp_path / "big.toml"
    path.write_text(BIG.format(m="[1000, 100000]", trials=2))
    exp = load_config(path, "paper")
    monkeypatch.setattr(_memory, "jax_device_room", lambda: (40 * 2**30, "gpu:0 Fake 40GB"))
    need, room, device, what, hint = _sizing.largest_device_unit(exp)
    m, n, d, R = 100000, 100, 1000, 2 * 2 * 1  # 2 cells x 2 initializations x 1 step
    data, backward = m * n * d * 4 + R * m * n * 4, m * R * d * 12 + m * n * R * 4
    assert need == int(1.25 * (data + max(m * n * R * 2 * 12, backward)))
    assert room == 40 * 2**30 and "m = 100000, n = 100, d = 1000, k = 2" in what
    wl = fig2_workload(exp, kernel="jax")
    with pytest.raises(UnitMemoryError, match=r"big/paper: a unit needs about \d+ GiB on the JAX "
                                              r"device \(gpu:0 Fake 40GB; m = 100000.*but 40 GiB "
                                              r"are free there: lower m or d"):
        runner._fit_memory(wl, "threads", 1, 4)
    # the numba kernel has no device check; on JAX's CPU backend the device reports nothing
    assert fig2_workload(exp).device_memory is None
    monkeypatch.setattr(_memory, "jax_device_room", lambda: None)
    assert _sizing.largest_device_unit(exp) is None


def test_units_at_once_on_the_jax_device_are_lowered_to_what_fits(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(runner, "available_bytes", lambda: None)
    wl = _toy_wl(device_memory=lambda: (2 * 2**30, 5 * 2**30, "gpu:0 Fake", "toy", "lower a"))
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        assert runner._fit_memory(wl, "threads", 1, 4) == (1, 2, None)
    assert "toy/smoke: 4 units at once would need about 8.0 GiB on the JAX device (gpu:0 Fake) " \
           "but 5.0 GiB are free there: running 2 at once" in caplog.text
    assert runner._fit_memory(wl, "dask", 1, 4) == (1, 4, None)  # a cluster's devices: not here


def test_jax_device_room_is_none_on_the_cpu():
    from mixlinreg import _memory

    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":
        pytest.skip("a real accelerator: its room is measured by experiments/gpu_memory_check.py")
    assert _memory.jax_device_room() is None


def test_a_unit_that_runs_out_of_memory_names_itself_and_keeps_the_others(tmp_path):
    def compute(unit, ss):
        if unit == "u1":
            np.empty(2**62, dtype=np.uint8)  # numpy's _ArrayMemoryError
        return _toy(unit, ss)

    wl = Workload(name="toy", preset="smoke", key={"a": 1}, units=("u0", "u1", "u2"),
                  compute=compute, seed=3, memory=lambda: (1, "toy", "lower the toy size"))
    with pytest.raises(UnitMemoryError, match="toy/smoke: unit u1 ran out of memory .*kept: "
                                              "lower the toy size"):
        runner.run(wl, tmp_path, backend="sequential")
    assert UnitStore(tmp_path / wl.folder).ids() == ["u0"]


def test_memory_helpers():
    assert available_bytes() is None or available_bytes() > 0
    assert (format_bytes(41 * 2**30), format_bytes(1.5 * 2**30), format_bytes(3 * 2**20)) == \
        ("41 GiB", "1.5 GiB", "3 MiB")


# ------------------------------------------------------------------ class 3: faults in one line
@pytest.mark.parametrize("content", ["{", "", "[1]", "folder", "other"])
def test_a_bad_manifest_is_one_line_that_says_how_to_resume(tmp_path, content):
    exp = _tiny(tmp_path, trials=2)
    store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    man = store.path / "manifest.json"
    if content == "folder":
        man.unlink()
        man.mkdir()
    elif content == "other":
        man.write_text(json.dumps({**json.loads(man.read_text()), "hash": "0" * 64}))
    else:
        man.write_text(content)
    with pytest.raises(StoreError) as info:
        run_experiment(exp, tmp_path / "s", progress=False)
    msg = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in msg
    assert str(man) in msg and "run the same command again" in msg and "units (2) are kept" in msg
    assert len(list(store.units_dir.glob("*.check.json"))) == 2  # finished work kept


def test_a_file_where_a_folder_is_needed_is_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match=r"f is a file where a folder is needed .*move it away"):
        UnitStore(tmp_path / "f" / "units")
    exp = _tiny(tmp_path)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / f"tiny-paper-{exp.hash()[:12]}").write_text("x")
    with pytest.raises(StoreError, match="tiny-paper-.* is a file where a folder is needed"):
        run_experiment(exp, tmp_path / "s", progress=False)


def test_a_full_disk_keeps_finished_units_and_says_so(tmp_path, monkeypatch):
    import mixlinreg.runner.store as store_mod

    real, calls = store_mod.atomic_write, []

    def full(path, data):
        calls.append(path)
        if len(calls) > 2 and str(path).endswith(".csv"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(store_mod, "atomic_write", full)
    wl = _toy_wl()
    with pytest.raises(StoreWriteError) as info:
        runner.run(wl, tmp_path, backend="sequential")
    exc = info.value
    assert isinstance(exc, OSError) and isinstance(exc, ValueError) and exc.errno == errno.ENOSPC
    assert str(exc) == (f"result store: no space left on the disk (ENOSPC) while writing unit u1 "
                        f"in {tmp_path / wl.folder}; the units finished there (1) are kept: free "
                        "some space and run the same command again to resume")
    monkeypatch.setattr(store_mod, "atomic_write", real)
    _, s = runner.run(wl, tmp_path, backend="sequential")
    assert (s["units_skipped"], s["units_run"]) == (1, 2)


def _sleeper(seconds):
    proc = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc


def test_a_wait_on_another_process_says_unit_host_pid_and_how_long(tmp_path, caplog):
    us = UnitStore(tmp_path / "u")
    lock = us.lock_path("v")
    lock.write_text(json.dumps(dict(host="elsewhere", pid=77, time=0, token="y")))
    line = us.wait_line("v")
    assert "unit v is being computed by pid 77 on host elsewhere" in line
    assert "at most 24.0 h more" in line and str(lock) in line
    old = time.time() - STALE_AFTER + 600
    os.utime(lock, (old, old))
    assert "at most 10 min more" in us.wait_line("v")
    lock.write_text("{")
    assert "unreadable" in us.wait_line("v") and "at most 30 s more" in us.wait_line("v")
    lock.unlink()
    assert us.wait_line("v") is None
    # the runner says it once, then takes the unit over when its process ends
    wl = _toy_wl()
    proc = _sleeper(1.5)
    folder = tmp_path / "r" / wl.folder
    folder.mkdir(parents=True)
    from mixlinreg.runner.store import _proc_start

    (folder / "u1.lock").write_text(json.dumps(dict(host=_HOST, pid=proc.pid, time=time.time(),
                                                    token="t", start=_proc_start(proc.pid))))
    with caplog.at_level(logging.WARNING, logger="mixlinreg"):
        rows, s = runner.run(wl, tmp_path / "r", backend="sequential", poll=0.05)
    said = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert len(said) == 1 and f"unit u1 is being computed by pid {proc.pid} on host {_HOST}" \
        in said[0] and "waiting until it finishes" in said[0]
    assert sorted(rows) == ["u0", "u1", "u2"] and s["units_run"] == 3
