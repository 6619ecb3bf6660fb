"""The one runner (mixlinreg.runner): the seed rule, the store-key recipe, resume and migration,
and every workload (Figure 2, studies, compare) giving the same rows wherever it runs."""

import json
import zlib

import numpy as np
import pandas as pd
import pytest

from mixlinreg import runner
from mixlinreg.runner import Workload, store_key


def _toy(unit, ss):
    rng = np.random.default_rng(ss)
    return pd.DataFrame({"unit": [unit] * 3, "x": rng.standard_normal(3)})


def _toy_workload(**kw):
    return Workload(name="toy", preset="smoke", key={"a": 1}, units=("u0", "u1", "u2"),
                    compute=_toy, seed=5, **kw)


def test_the_seed_rule_is_keyed_by_names():
    wl = _toy_workload()
    ss = wl.seed_sequence("u1")
    assert ss.entropy == 5 and ss.spawn_key == (zlib.crc32(b"toy"), zlib.crc32(b"u1"))
    rows, _ = runner.run(wl)
    # a unit's rows do not depend on which other units exist or their order
    alone, _ = runner.run(Workload(name="toy", preset="smoke", key={"a": 1}, units=("u1",),
                                   compute=_toy, seed=5))
    pd.testing.assert_frame_equal(rows["u1"], alone["u1"])
    assert not rows["u0"]["x"].equals(rows["u1"]["x"])


def test_one_store_key_recipe_for_every_workload():
    import hashlib

    from mixlinreg.harness import load_config

    exp = load_config("fig2a", "paper")
    folder, tag = store_key(exp.name, exp.preset, exp.canonical())
    assert (folder, tag) == (f"fig2a-paper-{exp.hash()[:12]}", exp.hash())
    # the studies' folders before the runner: sha256 of the same compact sorted JSON, numpy
    # scalars as Python numbers
    key = {"id": "T1", "preset": "smoke", "seed": 0, "params": {"n": np.int64(3), "b": np.bool_(1)}}
    before = {"id": "T1", "preset": "smoke", "seed": 0, "params": {"n": 3, "b": True}}
    h = hashlib.sha256(json.dumps(before, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert store_key("T1", "smoke", key)[0] == f"T1-smoke-{h[:12]}"
    with pytest.raises(TypeError, match="plain values"):
        store_key("x", "smoke", {"f": object()})


def test_resume_reads_back_without_recomputing(tmp_path):
    calls = []

    def counting(unit, ss):
        calls.append(unit)
        return _toy(unit, ss)

    wl = Workload(name="toy", preset="smoke", key={"a": 1}, units=("u0", "u1", "u2"),
                  compute=counting, seed=5)
    first, s1 = runner.run(wl, tmp_path, backend="sequential", max_units=2)
    assert sorted(first) == ["u0", "u1"] and s1["units_run"] == 2
    seen = []
    again, s2 = runner.run(wl, tmp_path, backend="sequential",
                           on_unit=lambda u, info: seen.append((u, info.get("skipped"))))
    assert calls == ["u0", "u1", "u2"] and s2["units_skipped"] == 2 and s2["units_run"] == 1
    assert seen == [("u0", "done"), ("u1", "done"), ("u2", None)]
    fresh, _ = runner.run(wl, None)
    for u in wl.units:
        pd.testing.assert_frame_equal(again[u], fresh[u])
    records = [json.loads(p.read_text()) for p in (tmp_path / wl.folder).glob("*.check.json")]
    assert len(records) == 3 and {r["tag"] for r in records} == {wl.tag}


def test_a_store_under_a_former_key_is_migrated_not_recomputed(tmp_path):
    from mixlinreg.runner.store import UnitStore

    old = UnitStore(tmp_path / "toy-smoke-000000000000", tag="old-tag")
    wl = _toy_workload(former=(("toy-smoke-000000000000", "old-tag"),))
    for u in wl.units:
        old.write(u, _toy(u, wl.seed_sequence(u)))

    def fail(unit, ss):
        raise AssertionError("recomputed")

    moved = Workload(name="toy", preset="smoke", key={"a": 1}, units=wl.units, compute=fail,
                     seed=5, former=wl.former)
    rows, s = runner.run(moved, tmp_path)
    assert s["units_skipped"] == 3 and s["units_run"] == 0
    assert not (tmp_path / "toy-smoke-000000000000").exists() and (tmp_path / wl.folder).is_dir()


def test_bad_workloads_and_options_are_refused():
    with pytest.raises(ValueError, match=r"unit names must start with a letter or digit.*'\.\./x'"):
        Workload(name="toy", preset="smoke", key={}, units=("../x",), compute=_toy)
    with pytest.raises(ValueError, match="unit names must be unique"):
        Workload(name="toy", preset="smoke", key={}, units=("a", "a"), compute=_toy)
    with pytest.raises(ValueError, match="plain name"):
        Workload(name="a/b", preset="smoke", key={}, units=("a",), compute=_toy)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        Workload(name="toy", preset="smoke", key={}, units=("a",), compute=_toy, seed=-1)
    with pytest.raises(TypeError, match="pin_blas must be"):
        Workload(name="toy", preset="smoke", key={}, units=("a",), compute=_toy, pin_blas=1)
    with pytest.raises(ValueError, match=r"backend must be one of \['loky', 'dask', 'sequential'\]"):
        runner.run(_toy_workload(), backend="spark")
    with pytest.raises(ValueError, match="n_jobs must be an integer >= 1, got 0"):
        runner.run(_toy_workload(), n_jobs=0)
    bad = Workload(name="toy", preset="smoke", key={}, units=("a",), compute=lambda u, ss: 3)
    with pytest.raises(TypeError, match="must return a pandas DataFrame, got int"):
        runner.run(bad)


def test_worker_processes_give_the_same_rows(tmp_path):
    seq, _ = runner.run(_toy_workload(), tmp_path / "a", backend="sequential")
    par, s = runner.run(_toy_workload(), tmp_path / "b", n_jobs=2)
    assert s["n_jobs"] in (1, 2)
    for u in seq:
        pd.testing.assert_frame_equal(seq[u], par[u])


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_compare_on_a_dask_local_cluster(tmp_path, dask_client):
    from mixlinreg import compare

    sc = [s for s in compare.scenarios("smoke") if s.name == "fig2_k2"]
    seq = compare.run_compare("smoke", n_seeds=2, scenario_list=sc)
    das = compare.run_compare("smoke", n_seeds=2, scenario_list=sc, store=tmp_path,
                              backend="dask", scheduler=dask_client)
    cols = [c for c in seq.columns if c != "wall_time_s"]
    # rows read back from a store have CSV's types (an all-1.0 ARI column reads as int): values
    # are compared, bit for bit (written with %.17g)
    pd.testing.assert_frame_equal(seq[cols], das[cols], check_dtype=False, rtol=0, atol=0)


def test_check_on_a_dask_local_cluster(tmp_path, dask_client):
    from mixlinreg.theory import run_study

    seq = run_study("T2", preset="smoke", out=tmp_path / "seq", store=None)
    das = run_study("T2", preset="smoke", out=tmp_path / "dask", store=tmp_path / "store",
                    backend="dask", scheduler=dask_client)
    assert (das.verdict, das.summary) == (seq.verdict, seq.summary)
    pd.testing.assert_frame_equal(das.numbers, seq.numbers)
    assert das.units_computed > 0 and das.units_resumed == 0


def test_cli_refuses_a_scheduler_without_dask(tmp_path, capsys):
    from mixlinreg.cli import main

    for cmd in (["compare", "--preset", "smoke"], ["check", "T2", "--preset", "smoke"],
                ["reproduce", "fig2a", "--preset", "smoke"]):
        assert main(cmd + ["--out", str(tmp_path / cmd[0]), "--scheduler", "tcp://x:1"]) == 2
        err = capsys.readouterr().err
        assert "--scheduler is only used with --backend dask, got --backend loky" in err, err
        assert not (tmp_path / cmd[0]).exists()  # refused before anything was made


def test_digits_store_of_the_former_layout_is_migrated_not_recomputed(tmp_path, monkeypatch):
    import hashlib

    import mixlinreg.digits as digits
    from mixlinreg.runner.store import UnitStore

    kw = dict(m=8, n=10, tau=1, rounds=3)
    rows, rec = digits.run_digits(2, store=tmp_path / "fresh", **kw)
    # the layout before the runner: digits-<hash>, two units per seed
    cfg = rows.attrs["config"]
    h = hashlib.sha256(json.dumps({"seed": 0, "config": cfg}, sort_keys=True,
                                  default=str).encode()).hexdigest()
    old = UnitStore(tmp_path / "old" / f"digits-{h[:12]}", tag=h)
    for s in range(2):
        old.write(f"seed{s:04d}_rows", rows[rows["seed"] == s], float_format="%.17g")
        old.write(f"seed{s:04d}_recovery", rec[rec["seed"] == s], float_format="%.17g")
    monkeypatch.setattr(digits, "_one_seed", lambda *a, **k: pytest.fail("recomputed"))
    rows2, rec2 = digits.run_digits(2, store=tmp_path / "old", **kw)
    pd.testing.assert_frame_equal(rows, rows2)
    pd.testing.assert_frame_equal(rec, rec2)
    assert (tmp_path / "old" / f"digits-{h[:12]}.migrated").is_dir()


def test_a_stored_unit_with_the_wrong_row_count_is_recomputed(tmp_path):
    from mixlinreg.runner.store import DamagedUnitWarning, UnitStore

    wl = _toy_workload(rows=lambda unit: 3)
    short = UnitStore(tmp_path / wl.folder, tag=wl.tag)
    short.write("u0", _toy("u0", wl.seed_sequence("u0")).head(2))  # e.g. made before a method was added
    with pytest.warns(DamagedUnitWarning, match="2 rows instead of 3"):
        rows, s = runner.run(wl, tmp_path)
    assert s["units_run"] == 3 and len(rows["u0"]) == 3
    assert list((tmp_path / wl.folder).glob("u0.csv.damaged-*"))  # set aside, never deleted


def test_compare_keys_its_store_by_the_methods(monkeypatch):
    from mixlinreg import compare

    sc = compare.scenarios("smoke")[:1]
    _, proto = compare.load_preset("smoke")
    before = compare.workload("smoke", sc, proto).folder
    monkeypatch.setitem(compare.METHODS, "extra", compare.METHODS["ifca"])
    assert compare.workload("smoke", sc, proto).folder != before
