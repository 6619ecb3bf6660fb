"""``mixlinreg compare``: the smoke preset end to end, scores, determinism, failure recording."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mixlinreg import compare
from mixlinreg.cli import main

SMOKE = compare.scenarios("smoke")
N_SEEDS = compare.load_preset("smoke")[1]["n_seeds"]  # the preset's own count (no --seeds below)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    rc = main(["compare", "--preset", "smoke", "--out", str(out)])
    rows = pd.read_csv(out / "compare_smoke.csv")
    return rc, out, rows


def test_smoke_end_to_end(smoke_run, capsys):
    rc, out, rows = smoke_run
    assert rc == 0
    for name in ("compare_smoke.csv", "compare_smoke_summary.csv", "compare_smoke.md",
                 "compare_smoke.png"):
        assert (out / name).stat().st_size > 0
    assert len(rows) == len(SMOKE) * N_SEEDS * len(compare.METHOD_NAMES)
    assert list(rows.columns) == compare.ROW_COLUMNS
    assert rows["status"].notna().all()
    assert rows["status"].str.match(r"^(ok|skipped: .+|error: .+)$").all()
    assert not rows["status"].str.startswith("error").any(), rows.loc[
        rows["status"].str.startswith("error"), ["scenario", "method", "status"]]
    ok = rows[rows["status"] == "ok"]
    assert np.isfinite(ok[["dist_matched", "ari", "wall_time_s", "n_rounds",
                           "floats_sent_per_machine"]].to_numpy(float)).all()
    summary = pd.read_csv(out / "compare_smoke_summary.csv")
    assert len(summary) == len(SMOKE) * len(compare.METHOD_NAMES)
    md = (out / "compare_smoke.md").read_text()
    assert "| scenario |" in md and "fig2_k2" in md


def test_well_separated_ifca_and_oracle_recover_partition(smoke_run):
    rows = smoke_run[2]
    sel = rows[(rows["scenario"] == "fig2_k2") & rows["method"].isin(["ifca", "oracle"])]
    assert len(sel) == 2 * N_SEEDS
    assert (sel["status"] == "ok").all()
    np.testing.assert_allclose(sel["ari"], 1.0)
    assert (sel["clusters_found"] == 2).all()


def test_misspecified_k_empty_clusters_consistent(smoke_run):
    rows = smoke_run[2]
    sel = rows[(rows["scenario"] == "k2_fit3") & (rows["status"] == "ok")]
    ifca = sel[sel["method"] == "ifca"]
    assert len(ifca) == N_SEEDS
    assert (ifca["n_models"] == 3).all()
    assert (ifca["clusters_found"] + ifca["empty_clusters"] == ifca["n_models"]).all()
    # methods that do not use k are recorded as skipped in the misspecified scenarios
    skipped = rows[(rows["scenario"] == "k2_fit3") & rows["method"].isin(["cfl", "global"])]
    assert skipped["status"].str.startswith("skipped").all()


def test_empty_clusters_from_labels():
    mix = compare.make_mixture(20, 30, 10, 2, 3.0, 0.1, theta_scale="norm", rng=0)
    theta = np.vstack([mix.theta_star, np.full((1, 10), 50.0)])
    res = compare.baselines.BaselineResult(theta=theta, labels=mix.labels.copy(), n_rounds=1,
                                           floats_sent_per_machine=1.0)
    s = compare._score(res, mix)
    assert (s["n_models"], s["clusters_found"], s["empty_clusters"]) == (3, 2, 1)
    assert s["ari"] == 1.0 and s["dist_matched"] == 0.0 and s["machine_dist"] == 0.0


def _strip_time(rows):
    return rows.drop(columns=["wall_time_s"]).reset_index(drop=True)


def test_deterministic():
    sc = [SMOKE[0]]
    a = compare.run_compare("smoke", n_seeds=1, seed=3, scenario_list=sc)
    b = compare.run_compare("smoke", n_seeds=1, seed=3, scenario_list=sc)
    pd.testing.assert_frame_equal(_strip_time(a), _strip_time(b))
    c = compare.run_compare("smoke", n_seeds=1, seed=4, scenario_list=sc)
    assert not np.allclose(a["dist_matched"].to_numpy(float), c["dist_matched"].to_numpy(float),
                           equal_nan=True)


def test_failing_method_is_recorded(monkeypatch):
    def boom(mix, sc, proto, ss):
        raise RuntimeError("deliberate failure")

    monkeypatch.setitem(compare.METHODS, "cfl", boom)
    rows = compare.run_compare("smoke", n_seeds=1, scenario_list=[SMOKE[0]])
    assert len(rows) == len(compare.METHOD_NAMES)
    bad = rows[rows["method"] == "cfl"].iloc[0]
    assert bad["status"] == "error: RuntimeError: deliberate failure"
    assert np.isnan(bad["dist_matched"])
    others = rows.loc[~rows["method"].isin(["cfl", "ifca_shared"]), "status"]
    assert (others == "ok").all()
    summary = compare.summarize(rows)
    assert compare.markdown_table(summary)  # a failed method does not break the report


def test_fpfc_skipped_above_guard():
    sc = compare.Scenario("big_m", m=20, n=30, d=10, k_true=2, R=3.0, sigma=0.1,
                          theta_scale="norm")
    proto = dict(compare.load_preset("smoke")[1], fpfc_max_pair_floats=100.0)
    mix = compare.make_mixture(20, 30, 10, 2, 3.0, 0.1, theta_scale="norm", rng=0)
    row = compare._run_one("fpfc", compare.METHODS["fpfc"], mix, sc, proto,
                           np.random.SeedSequence(0))
    assert row["status"].startswith("skipped: m(m-1)/2*d")


def test_unknown_preset():
    with pytest.raises(ValueError, match="preset"):
        compare.scenarios("nope")


def test_shared_scenario_data_and_weight_sharing(smoke_run):
    sc = next(s for s in SMOKE if s.name == "shared_90")
    mix = compare._shared_mixture(sc, np.random.SeedSequence(5))
    ts = mix.theta_star
    own = np.arange(sc.d - sc.n_shared)
    assert sc.n_shared == sc.d - max(2, sc.d // 10) and len(own) >= 2
    np.testing.assert_array_equal(ts[0, sc.shared], ts[1, sc.shared])  # equal where shared
    assert np.all(ts[0, own] != ts[1, own])  # different in every own coordinate
    assert np.all(np.abs(ts).sum(axis=1) > 0)
    rows = smoke_run[2]
    sel = rows[(rows["scenario"] == "shared_90") & rows["method"].isin(["ifca", "ifca_shared"])]
    assert len(sel) == 2 * N_SEEDS and (sel["status"] == "ok").all()
    np.testing.assert_allclose(sel.loc[sel["method"] == "ifca_shared", "ari"], 1.0)
    # elsewhere ifca_shared says why it did not run
    other = rows[(rows["scenario"] != "shared_90") & (rows["method"] == "ifca_shared")]
    assert (other["status"] == "skipped: the scenario has no coordinates known to be shared").all()
