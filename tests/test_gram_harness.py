"""The kernel path in the harness: rows record it, older stores read as the direct path, the
agreement check of the Gram path (``mixlinreg check-agreement --candidate gram``) and the
per-panel unit benchmark. The agreement rule itself: tests/test_agreement.py."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mixlinreg.bench import bench_units
from mixlinreg.harness import load_config
from mixlinreg.harness.agreement import compare_rows, unit_agreement
from mixlinreg.harness.run import COLUMNS, LEGACY_COLUMNS, run_unit
from mixlinreg.harness.store import ResultStore
from mixlinreg.harness.success import RULES

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "figures" / "stores" / "fig2a-paper-03128fff867f"


def test_rows_record_the_kernel_path_and_the_paths_agree():
    exp = load_config("fig2a", preset="smoke")
    unit = exp.units()[0]
    a, _ = run_unit(exp, unit, method="data")
    b, _ = run_unit(exp, unit, method="gram")
    assert list(a.columns) == COLUMNS
    assert set(a["method"]) == {"data"} and set(b["method"]) == {"gram"}
    diff = compare_rows(a, b, exp.protocol["success_plus"])
    assert diff["diverged_changed"] == 0
    assert all(diff[f"flags_changed_{r}"] == 0 for r in RULES)
    assert diff["max_rel_dist_nearest"] < 1e-3


def test_compare_rows_and_the_rule_see_a_changed_flag():
    exp = load_config("fig2a", preset="smoke")
    unit = exp.units()[0]
    a, _ = run_unit(exp, unit, method="data")
    b = a.copy()
    i = int(np.flatnonzero(np.isfinite(b["dist_nearest"].to_numpy()))[0])
    b.loc[i, "dist_nearest"] = 1e6  # a success (if it was one) becomes a failure
    b.loc[i, "dist_matched"] = 1e6
    diff = compare_rows(a, b, exp.protocol["success_plus"])
    assert diff["max_rel_dist_nearest"] > 1
    out = unit_agreement(exp, unit, a, b)
    assert not out["agrees"] and out["runs_beyond"] == 1 and out["not_reproducible"] == []


@pytest.mark.skipif(not COMMITTED.exists(), reason="committed panel (a) store not present")
def test_units_written_before_the_method_column_count_as_done_and_read_as_data():
    store = ResultStore.open(COMMITTED)
    assert len(store.done()) == 40
    table = store.table()
    assert list(table.columns) == COLUMNS
    assert set(table["method"]) == {"data"}
    assert LEGACY_COLUMNS == [COLUMNS[:-1]]


def test_check_agreement_command(tmp_path):
    out = tmp_path / "g.csv"
    p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "check-agreement", "fig2a", "fig2c",
                        "--candidate", "gram", "--preset", "smoke", "--trials", "1", "--csv",
                        str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith("gram vs numba's direct path with the full iterations: 5 units, 72 runs")
    assert "success flags changed 0; divergence flags changed 0" in last and "verdict: AGREE" in last
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 5 and table["agrees"].all()
    for col in ("seconds_a", "seconds_b", "flags_changed_authors", "max_rel_dist_nearest",
                "max_abs_loss", "runs_beyond", "not_reproducible", "disagree", "max_gap_counted"):
        assert col in table, col
    # a user error before any work: one line naming the option, status 2, nothing written
    out.unlink()
    p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "check-agreement", "fig2a",
                        "--candidate", "jax", "--tol", "1e-7", "--preset", "smoke", "--csv",
                        str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and p.stdout == "" and not out.exists()
    assert p.stderr.startswith("mixlinreg check-agreement: error: --tol is the early-stop tolerance")
    assert p.stderr.count("\n") == 1


def test_bench_units_times_both_paths():
    rows = bench_units(panels=("fig2a",), preset="smoke", progress=None)
    (row,) = rows
    assert row["method_data"] == "data" and row["method_gram"] == "gram"
    assert row["projected_hours_data"] > 0 and row["projected_hours_gram"] > 0
