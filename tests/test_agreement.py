"""The one agreement rule (``mixlinreg check-agreement``) on made-up rows, its sampling and errors.

The reference rows are numba's direct path on a smoke unit of panel (a) (24 runs, none diverged,
no trial a success); a candidate is those rows with one thing changed. A run that "the direct path
does not reproduce itself" is made by changing the *reference* instead: its re-runs then give the
unchanged value, which the candidate also has.
"""

import numpy as np
import pytest

from mixlinreg.harness import load_config
from mixlinreg.harness.agreement import (CANDIDATES, check_agreement, distance_gap,
                                         sample_group_units, sample_spread_units, unit_agreement)
from mixlinreg.harness.earlystop import with_early_stop
from mixlinreg.harness.run import run_unit


@pytest.fixture(scope="module")
def case():
    exp = with_early_stop(load_config("fig2a", preset="smoke"), None)
    unit = exp.units()[0]
    ref, _ = run_unit(exp, unit, method="data", kernel="numba")
    assert not ref["diverged"].any() and ref["dist_nearest"].min() > 1e-2  # what the tests assume
    return exp, unit, ref


def _run(case, reference=None, rows=None, **kw):
    exp, unit, ref = case
    return unit_agreement(exp, unit, ref if reference is None else reference,
                          ref.copy() if rows is None else rows, **kw)


def _scaled(ref, i, factor, cols=("dist_nearest", "dist_matched")):
    out = ref.copy()
    for col in cols:
        out.loc[i, col] *= factor
    return out


def test_identical_rows_agree(case):
    out = _run(case)
    assert out["agrees"] and out["runs_beyond"] == 0 and out["runs"] == []
    assert out["max_gap_counted"] == 0.0


def test_a_reproducible_run_beyond_the_tolerance_fails(case):
    _, _, ref = case
    i = 7
    out = _run(case, rows=_scaled(ref, i, 1.002))  # 2e-3 relative: beyond 1e-3
    assert out["runs_beyond"] == 1 and not out["agrees"]
    assert out["not_reproducible"] == [] and i in out["disagree"] + out["ulp_sensitive"]
    (run,) = out["runs"]
    assert run["run"] == i and run["direct_spread"] < 1e-5  # the direct path gives the same again
    assert out["max_gap_counted"] == pytest.approx(2e-3, rel=1e-6)
    # within the tolerance: the same change at 5e-4 agrees (the test is not always false)
    assert _run(case, rows=_scaled(ref, i, 1.0005))["agrees"]


def test_a_run_the_direct_path_does_not_reproduce_is_listed_not_failed(case):
    _, _, ref = case
    i = 13
    # the reference's value is off what the direct path gives when re-run; the candidate has the
    # re-run's value: the run differs beyond the tolerance but is not reproducible
    made_up = _scaled(ref, i, 1.01)
    out = _run(case, reference=made_up, rows=ref.copy())
    assert out["agrees"] and out["runs_beyond"] == 1
    assert out["not_reproducible"] == [i] and out["disagree"] == [] and out["ulp_sensitive"] == []
    (run,) = out["runs"]
    assert run["status"] == "not reproducible" and run["run"] == i
    assert run["direct_dist_nearest"] == [pytest.approx(ref.loc[i, "dist_nearest"], rel=1e-6)]
    assert run["direct_spread"] == pytest.approx(1 - 1 / 1.01, rel=1e-4)
    assert out["max_gap_counted"] == 0.0  # the listed run does not count
    # the same plus a reproducible run beyond the tolerance: that one still fails
    out = _run(case, reference=made_up, rows=_scaled(ref, 2, 1.01))
    assert not out["agrees"] and out["not_reproducible"] == [i]
    assert 2 in out["disagree"] + out["ulp_sensitive"]


def test_a_changed_success_flag_fails(case):
    _, _, ref = case
    won = ref.copy()
    won.loc[0, ["dist_nearest", "dist_matched"]] = 0.0  # a failing trial made to succeed
    out = _run(case, rows=won)
    assert out["flags_changed_authors"] == 1 and out["flags_changed_text"] == 1
    assert not out["agrees"]
    # even when the direct path does not reproduce the run itself
    out = _run(case, reference=won, rows=ref.copy())
    assert out["not_reproducible"] == [0] and out["flags_changed_authors"] == 1 and not out["agrees"]


def test_a_changed_divergence_flag_fails(case):
    _, _, ref = case
    flipped = ref.copy()
    flipped.loc[5, "diverged"] = True
    out = _run(case, rows=flipped)
    assert out["diverged_changed"] == 1 and out["diverged_runs"] == [5] and not out["agrees"]
    # even when the direct path does not reproduce the reference's flag itself (listed, and failed)
    out = _run(case, reference=flipped, rows=ref.copy())
    assert out["not_reproducible"] == [5] and out["diverged_runs"] == [5]
    assert not out["agrees"] and not out["agrees_to_rounding"]


def test_small_distances_are_compared_in_absolute_terms(case):
    _, _, ref = case
    small = ref.copy()
    small.loc[3, ["dist_nearest", "dist_matched"]] = 1e-4
    moved = small.copy()
    moved.loc[3, ["dist_nearest", "dist_matched"]] = 5e-4  # 5x, but 4e-4 absolute: agrees
    out = unit_agreement(case[0], case[1], small, moved, max_reruns=0)
    assert out["runs_beyond"] == 0
    moved.loc[3, ["dist_nearest", "dist_matched"]] = 1.2e-3  # 1.1e-3 absolute: beyond
    out = unit_agreement(case[0], case[1], small, moved, max_reruns=0)
    assert out["runs_beyond"] == 1


def test_more_runs_beyond_than_max_reruns_fails(case):
    _, _, ref = case
    out = _run(case, reference=_scaled(ref, 4, 1.01), rows=ref.copy(), max_reruns=0)
    assert not out["reruns_checked"] and not out["agrees"]
    assert out["runs"][0]["status"] == "not re-run"


def test_distance_gap():
    ref = np.array([2.0, 2.0, 1e-4, np.nan, np.nan, np.inf, 1.0, 1.0])
    other = np.array([2.002, 2.0, 6e-4, np.nan, 1.0, np.inf, np.inf, np.nan])
    gap = distance_gap(ref, other, floor=1e-3)
    np.testing.assert_allclose(gap[:3], [1e-3, 0.0, 5e-4], rtol=1e-9)
    assert gap[3] == 0.0 and gap[5] == 0.0  # both NaN, the same infinity
    assert gap[4] == np.inf and gap[6] == np.inf and gap[7] == np.inf


def test_sampling():
    exp = load_config("fig2c", preset="smoke")
    units = sample_group_units(exp, 1, np.random.default_rng(0))
    assert sorted((u.m, u.n, u.d, u.k) for u in units) == sorted(exp.groups())
    spread = sample_spread_units(exp, 2, np.random.default_rng(0))
    sizes = sorted(g[0] * g[1] for g in exp.groups())
    assert [u.m * u.n for u in spread] == [sizes[0], sizes[-1]]


def test_check_agreement_runs_each_candidate_and_samples_every_group():
    exp = load_config("fig2c", preset="smoke")
    table, runs, verdict = check_agreement([exp], "gram", trials=1, progress=None)
    assert verdict and len(table) == len(exp.groups()) and runs.empty
    assert set(table["method_a"]) == {"data"} and set(table["method_b"]) == {"gram"}
    assert (table["flags_changed_authors"] == 0).all() and table["agrees"].all()
    table, _, verdict = check_agreement([load_config("fig2b", preset="smoke")], "early-stop",
                                        units=1, tol=1e-5, progress=None)
    assert verdict and len(table) == 1 and table["tol"].iloc[0] == 1e-5
    assert table["iterations_b"].iloc[0] <= table["iterations_a"].iloc[0]


def test_check_agreement_errors_name_the_parameter():
    exps = [load_config("fig2a", preset="smoke")]
    with pytest.raises(ValueError, match="candidate must be one of gram, early-stop, jax, got 'cuda'"):
        check_agreement(exps, "cuda")
    with pytest.raises(ValueError, match="tol .* applies only to candidate 'early-stop', got tol=1e-07"):
        check_agreement(exps, "gram", tol=1e-7)
    with pytest.raises(ValueError, match="units must be in"):
        check_agreement(exps, "early-stop", units=0)
    with pytest.raises(ValueError, match="trials must be in"):
        check_agreement(exps, "gram", trials=0)
    with pytest.raises(ValueError, match=r"tol must be a finite number in \[0, inf\), got -1.0"):
        check_agreement(exps, "early-stop", tol=-1.0)
    with pytest.raises(ValueError, match="trials or units, not both"):
        check_agreement(exps, "gram", trials=1, units=1)
    assert CANDIDATES == ("gram", "early-stop", "jax")


def _cli_with_made_up_rows(monkeypatch, capsys, tmp_path, change):
    """``check-agreement fig2a --candidate gram`` on the smoke preset, with ``change(method,
    rows)`` applied to the rows that ``run_unit`` returns (the reference is method "data")."""
    import mixlinreg.harness.agreement as agreement
    from mixlinreg.cli import main

    real = agreement.run_unit

    def patched(exp, unit, **kw):
        rows, info = real(exp, unit, **kw)
        return change(kw["method"], rows.copy()), info

    monkeypatch.setattr(agreement, "run_unit", patched)
    csv = tmp_path / "a.csv"
    code = main(["check-agreement", "fig2a", "--candidate", "gram", "--preset", "smoke",
                 "--trials", "1", "--csv", str(csv)])
    import pandas as pd

    return code, capsys.readouterr().out, pd.read_csv(csv)


def test_cli_lists_a_run_the_direct_path_does_not_reproduce_and_exits_0(monkeypatch, capsys,
                                                                         tmp_path):
    def change(method, rows):
        if method == "data":  # the reference's run 13 is off what the direct path gives re-run
            rows.loc[13, ["dist_nearest", "dist_matched"]] *= 1.01
        return rows

    code, out, table = _cli_with_made_up_rows(monkeypatch, capsys, tmp_path, change)
    assert code == 0, out
    assert "runs whose distances or divergence differ 1: 1 not reproducible" in out
    assert "verdict: AGREE" in out
    listed = [line for line in out.splitlines() if line.startswith("  fig2a ")]
    assert len(listed) == 1 and " run 13: not reproducible by the direct path (listed" in listed[0]
    assert "its own spread 0.0099" in listed[0]
    assert table["not_reproducible"].tolist() == [1] and table["not_reproducible_list"].tolist() == [13]
    assert table["agrees"].tolist() == [True]


def test_cli_fails_a_reproducible_run_beyond_the_tolerance_and_exits_1(monkeypatch, capsys,
                                                                       tmp_path):
    def change(method, rows):
        if method == "gram":
            rows.loc[13, ["dist_nearest", "dist_matched"]] *= 1.01
        return rows

    code, out, table = _cli_with_made_up_rows(monkeypatch, capsys, tmp_path, change)
    assert code == 1, out
    assert "verdict: DISAGREE (1 of 1 units)" in out
    listed = [line for line in out.splitlines() if line.startswith("  fig2a ")]
    assert len(listed) == 1 and " run 13: reproducible by the direct path" in listed[0]
    assert "(fails)" in listed[0]
    assert table["agrees"].tolist() == [False] and table["not_reproducible"].tolist() == [0]
