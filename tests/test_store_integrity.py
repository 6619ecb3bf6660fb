"""Result stores prove their units (issue 11, class 2) and can be shared by several processes
(class 3): a damaged unit is never counted as done; concurrent runs never crash, never corrupt the
store and compute each unit once."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from mixlinreg.harness import ResultStore, load_config, run_experiment, success_table
from mixlinreg.harness._tiny import write_tiny
from mixlinreg.runner.store import _HOST, DamagedUnitWarning, UnitStore
from mixlinreg.theory import Context

ROOT = Path(__file__).resolve().parents[1]


def tiny(tmp_path, trials=4, seed=1, name="tiny.toml"):
    path = tmp_path / name
    write_tiny(path, trials=trials, seed=seed)
    return load_config(path, "paper")


@pytest.fixture(scope="module")
def clean_table(tmp_path_factory):
    d = tmp_path_factory.mktemp("clean")
    store, _ = run_experiment(tiny(d), d / "store", progress=False)
    return store.table()


# ------------------------------------------------------------------------------ class 2: damage
def _cut_half(p):
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _cut_last_line(p):
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join(lines[:-1]))


def _empty(p):
    p.write_bytes(b"")


def _garbage(p):
    p.write_bytes(os.urandom(400))


def _text_garbage(p):
    p.write_text("hello\nworld\n")


def _wrong_columns(p):
    text = p.read_text()
    header, rest = text.split("\n", 1)
    p.write_text(header.replace("dist_nearest", "dist_near") + "\n" + rest)


def _extra_row(p):
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join(lines + [lines[-1]]))


def _wrong_unit(p):  # another unit's file under this unit's name
    other = sorted(q for q in p.parent.glob("*.csv") if q != p)[0]
    shutil.copy(other, p)


def _changed_value(p):  # same shape, one number changed: only the checksum can see it
    df = pd.read_csv(p, dtype=str)
    df.loc[0, "dist_nearest"] = "0.123"
    p.write_text(df.to_csv(index=False))


DAMAGE = dict(cut_half=_cut_half, cut_last_line=_cut_last_line, empty=_empty, garbage=_garbage,
              text_garbage=_text_garbage, wrong_columns=_wrong_columns, extra_row=_extra_row,
              wrong_unit=_wrong_unit, changed_value=_changed_value)


@pytest.mark.parametrize("with_record", [True, False], ids=["record", "legacy"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_unit_is_recomputed_with_a_warning_naming_it(tmp_path, clean_table, damage,
                                                               with_record):
    if damage == "changed_value" and not with_record:
        pytest.skip("a legacy unit without checksum can only be checked by shape and config")
    exp = tiny(tmp_path)
    store, _ = run_experiment(exp, tmp_path / "store", progress=False)
    unit = exp.units()[1].id
    path = store.unit_path(unit)
    if not with_record:  # as written by mixlinreg before checksums
        for rec in store.units_dir.glob("*.check.json"):
            rec.unlink()
    DAMAGE[damage](path)
    with pytest.warns(DamagedUnitWarning, match=path.name):
        assert unit not in store.done()
    with pytest.warns(DamagedUnitWarning, match=path.name):
        store2, summary = run_experiment(exp, tmp_path / "store", progress=False)
    assert summary["units_run"] == 1  # only the damaged unit
    pd.testing.assert_frame_equal(store2.table(), clean_table)
    assert len(list(store.units_dir.glob(f"{path.name}.damaged-*"))) == 1  # kept aside, not lost
    # every unit now has a record again, and nothing more warns
    assert len(list(store.units_dir.glob("*.check.json"))) == len(exp.units())
    with warnings_as_errors():
        assert len(store2.done()) == len(exp.units())


def test_the_issue_instance_a_unit_cut_in_half_never_yields_trials_1(tmp_path):
    exp = tiny(tmp_path, trials=3)
    store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    _cut_half(store.unit_path(exp.units()[0].id))
    with pytest.warns(DamagedUnitWarning):
        store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    summary = success_table(store.table(), exp.protocol["success_plus"])
    assert (summary["trials"] == 3).all()


def test_a_unit_of_another_config_is_not_counted(tmp_path):
    exp, other = tiny(tmp_path, seed=1), tiny(tmp_path, seed=2, name="other.toml")
    a, _ = run_experiment(exp, tmp_path / "a", progress=False)
    b, _ = run_experiment(other, tmp_path / "b", progress=False)
    unit = exp.units()[0].id
    for suffix in (".csv", ".check.json"):  # file and record copied together
        shutil.copy(b.units_dir / f"{unit}{suffix}", a.units_dir / f"{unit}{suffix}")
    with pytest.warns(DamagedUnitWarning, match="another config"):
        assert unit not in a.done()
    (a.units_dir / f"{unit}.check.json").unlink()  # legacy: the rows' config_hash tells
    with pytest.warns(DamagedUnitWarning, match="config_hash"):
        assert unit not in a.done()


def test_a_damaged_record_or_manifest_is_reported(tmp_path):
    exp = tiny(tmp_path, trials=2)
    store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    unit = exp.units()[0].id
    (store.units_dir / f"{unit}.check.json").write_text("{not json")
    with pytest.warns(DamagedUnitWarning, match="checksum record"):
        assert unit not in store.done()
    (store.path / "manifest.json").write_text("garbage")
    with pytest.raises(RuntimeError, match="manifest.json is damaged"):
        ResultStore(tmp_path / "s", exp)


def test_legacy_units_are_migrated_once(tmp_path, clean_table):
    exp = tiny(tmp_path)
    store, _ = run_experiment(exp, tmp_path / "s", progress=False)
    for rec in store.units_dir.glob("*.check.json"):
        rec.unlink()
    with warnings_as_errors():
        assert len(store.done()) == len(exp.units())
    recs = sorted(store.units_dir.glob("*.check.json"))
    assert len(recs) == len(exp.units())
    rec = json.loads(recs[0].read_text())
    assert rec["rows"] == exp.runs_per_unit and rec["tag"] == exp.hash() and len(rec["sha256"]) == 64
    _, summary = run_experiment(exp, tmp_path / "s", progress=False)
    assert summary["units_run"] == 0


def test_the_committed_panel_a_store_is_proven_without_recomputing():
    path = next((ROOT / "figures" / "stores").glob("fig2a-paper-*"))
    store = ResultStore.open(path)
    assert store.units.damaged() == {}
    with warnings_as_errors():
        done = store.done()
    assert len(done) == len(store.exp.units()) == 40
    assert len(list(store.units_dir.glob("*.check.json"))) == 40  # committed records


def test_a_study_unit_store_proves_its_units(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["a", "b", "c"]})

    def ctx():
        return Context("L1", preset="smoke", store=tmp_path, params={"a": 1})

    first = ctx().unit("u0", compute)
    (path,) = tmp_path.rglob("u0.csv")
    _cut_last_line(path)
    with pytest.warns(DamagedUnitWarning, match="u0.csv"):
        again = ctx().unit("u0", compute)
    assert len(calls) == 2
    pd.testing.assert_frame_equal(first, again)
    # a unit without a record cannot be tied to its unit and store (issue 25): recomputed, with a
    # warning naming it, never trusted because it parses
    path.with_name("u0.check.json").unlink()
    c = ctx()
    with pytest.warns(DamagedUnitWarning, match="u0.csv.*no checksum record"):
        c.unit("u0", compute)
    assert (len(calls), c.units_computed) == (3, 1)
    path.with_name("u0.check.json").unlink()
    path.write_text("a,b\n1,2,3\n4\n")  # ragged lines
    with pytest.warns(DamagedUnitWarning, match="u0.csv"):
        ctx().unit("u0", compute)
    assert len(calls) == 4


class warnings_as_errors:
    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("error", DamagedUnitWarning)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


# ------------------------------------------------------------------------ class 3: concurrency
def test_claims_and_stale_locks(tmp_path):
    us = UnitStore(tmp_path)
    assert us.claim("u") and not UnitStore(tmp_path).claim("u")  # held by this live process
    us.release("u")
    assert not (tmp_path / "u.lock").exists()
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = tmp_path / "v.lock"
    lock.write_text(json.dumps(dict(host=_HOST, pid=dead.pid, time=0, token="x")))
    assert us.claim("v")  # dead owner on this host: broken
    us.release("v")
    lock.write_text(json.dumps(dict(host="elsewhere", pid=1, time=0, token="y")))
    assert not us.claim("v")  # another host, young: respected
    os.utime(lock, (time.time() - 2 * us.stale_after,) * 2)
    assert us.claim("v")  # another host, older than stale_after: broken
    # release never removes another process's lock
    lock.write_text(json.dumps(dict(host=_HOST, pid=os.getppid(), time=0, token="z")))
    us.release("v")
    assert lock.exists()
    assert not us.claim("v")


def _forge(lock, **kw):
    lock.write_text(json.dumps({"host": _HOST, "time": 0, "token": "forged", **kw}))


def test_a_claim_naming_this_process_but_not_held_by_it_is_dead(tmp_path):
    # a restarted container runs as pid 1 again and finds its former self's claim: never wait on it
    from mixlinreg.runner.store import _proc_start

    us = UnitStore(tmp_path)
    _forge(tmp_path / "u.lock", pid=os.getpid(), start=_proc_start(os.getpid()))
    df, computed = us.get_or_compute("u", lambda: pd.DataFrame({"x": [1.0]}), poll=0.01)
    assert computed and df["x"].tolist() == [1.0]
    # a claim this process holds through another store object is alive
    assert us.claim("w") and not UnitStore(tmp_path).claim("w")
    us.release("w")


def test_a_live_pid_that_started_at_another_time_is_another_process(tmp_path):
    from mixlinreg.runner.store import _proc_start

    us = UnitStore(tmp_path)
    other = os.getppid()  # alive, not this process
    start = _proc_start(other)
    if start is None:
        pytest.skip("no /proc here: start times cannot be read")
    _forge(tmp_path / "v.lock", pid=other, start=start + 12345)
    assert us.claim("v")  # the pid is reused by an unrelated process: the claim is dead
    us.release("v")
    _forge(tmp_path / "v.lock", pid=other, start=start)
    assert not us.claim("v")  # the same process: alive, respected
    assert "this host" in us.wait_line("v")
    _forge(tmp_path / "v.lock", pid=other, start=start, boot="another-boot")
    from mixlinreg.runner import store as store_mod

    if store_mod._BOOT:
        assert us.claim("v")  # made before this machine booted
        us.release("v")


def test_an_old_claim_without_a_start_time_is_not_waited_on_forever(tmp_path):
    us = UnitStore(tmp_path)
    lock = tmp_path / "v.lock"
    _forge(lock, pid=os.getppid())  # an older mixlinreg's claim: pid only, and that pid is alive
    assert not us.claim("v")
    assert "at most" in us.wait_line("v") and str(lock) in us.wait_line("v")
    os.utime(lock, (time.time() - 2 * 24 * 3600,) * 2)  # 48 h old: the pid is someone else now
    assert us.claim("v")
    us.release("v")


def test_a_long_wait_says_what_to_do(tmp_path, monkeypatch, caplog):
    import threading

    from mixlinreg.runner import store as store_mod

    monkeypatch.setattr(store_mod, "LONG_WAIT", 0.05)
    us = UnitStore(tmp_path)
    holder = UnitStore(tmp_path)
    assert holder.claim("u")

    def finish():
        time.sleep(0.4)
        holder.write("u", pd.DataFrame({"x": [2.0]}))
        holder.release("u")

    t = threading.Thread(target=finish)
    t.start()
    with caplog.at_level("WARNING", logger="mixlinreg"):
        df, computed = us.get_or_compute("u", lambda: pd.DataFrame({"x": [9.0]}), poll=0.02)
    t.join()
    assert not computed and df["x"].tolist() == [2.0]
    lines = [r.getMessage() for r in caplog.records]
    assert any("still waiting for unit u" in x and "remove" in x and "u.lock" in x
               for x in lines), lines


_WORKER = textwrap.dedent("""
    import os, sys, time
    import pandas as pd
    from mixlinreg.runner.store import UnitStore
    folder, log = sys.argv[1], sys.argv[2]
    store = UnitStore(folder)
    out = []
    for i in range(6):
        def compute(i=i):
            with open(log, "a") as fh:
                fh.write(f"{i} {os.getpid()}\\n")
            time.sleep(0.2)
            return pd.DataFrame({"unit": [i] * 3, "x": [i / 7, i / 9, i / 11]})
        df, _ = store.get_or_compute(f"u{i}", compute, poll=0.05)
        out.append(df)
    print(pd.concat(out).to_csv(index=False))
""")


def test_processes_sharing_a_unit_store_compute_each_unit_once(tmp_path):
    log = tmp_path / "log.txt"
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path / "units"), str(log)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in outs]
    computed = [line.split()[0] for line in log.read_text().splitlines()]
    assert sorted(computed) == [str(i) for i in range(6)]  # each unit exactly once
    assert len({o for o, _ in outs}) == 1  # every process got the same rows
    assert not list((tmp_path / "units").glob("*.lock"))
    assert not list((tmp_path / "units").glob(".*.tmp"))


def test_several_reproduce_processes_on_one_store(tmp_path, clean_table):
    """Four CLI processes resume one store at once (the issue's instance): none crashes, the store
    ends complete and equal to a clean run, and no unit is computed twice."""
    cfg = tmp_path / "tiny.toml"
    write_tiny(cfg, trials=4, seed=1)
    exp = load_config(cfg, "paper")
    run_experiment(exp, tmp_path / "store", progress=False, max_units=1)  # a store to resume
    args = [sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", str(cfg), "--preset",
            "paper", "--out", str(tmp_path / "store"), "--no-progress", "--backend", "sequential"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=tmp_path) for _ in range(4)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert not any("Traceback" in o for o in outs), outs
    runs = [int(o.split(" units run")[0].rsplit(" ", 1)[-1]) for o in outs]
    assert sum(runs) == len(exp.units()) - 1, outs  # each remaining unit computed once
    store = ResultStore(tmp_path / "store", exp)
    with warnings_as_errors():
        pd.testing.assert_frame_equal(store.table(), clean_table)
    assert not list(store.units_dir.glob("*.lock")) and not list(store.units_dir.glob(".*.tmp"))


def test_two_check_processes_on_one_store(tmp_path):
    """Two 'mixlinreg check' processes on one output folder and store: both finish, the store holds
    each unit once, proven, and the result equals a single run's."""
    def args(out):
        return [sys.executable, "-m", "mixlinreg.cli", "check", "T1", "--preset", "smoke", "--out",
                str(out), "--no-progress"]

    procs = [subprocess.Popen(args(tmp_path / "shared"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert not any("Traceback" in o for o in outs), outs
    subprocess.run(args(tmp_path / "alone"), check=True, capture_output=True)
    shared = json.loads((tmp_path / "shared" / "T1_smoke.json").read_text())
    alone = json.loads((tmp_path / "alone" / "T1_smoke.json").read_text())
    assert shared["verdict"] == alone["verdict"] and shared["numbers"] == alone["numbers"]
    assert alone["units_computed"] > 0
    assert shared["units_computed"] + shared["units_resumed"] == alone["units_computed"]
    # one store per config (the study's and its control's): the same folders as a single run's,
    # each unit once, proven, no lock or temporary file left
    folders = sorted((tmp_path / "shared").glob("T1-smoke-*"))
    assert [f.name for f in folders] == sorted(f.name for f in (tmp_path / "alone").glob("T1-smoke-*"))
    assert folders
    for folder in folders:
        units, single = UnitStore(folder), UnitStore(tmp_path / "alone" / folder.name)
        with warnings_as_errors():
            assert units.done() == set(units.ids()) == single.done() == set(single.ids())
        assert not list(folder.glob("*.lock")) and not list(folder.glob(".*.tmp"))


def test_a_folder_where_a_lock_belongs_is_named(tmp_path):
    from mixlinreg.runner.store import StoreError

    us = UnitStore(tmp_path)
    (tmp_path / "u.lock").mkdir()
    with pytest.raises(StoreError, match=r"u\.lock is a folder, where unit u's lock file belongs"):
        us.get_or_compute("u", lambda: pd.DataFrame({"x": [1.0]}), poll=0.01)
    assert (tmp_path / "u.lock").is_dir()  # nothing renamed or removed
