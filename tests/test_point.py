"""One Figure 2 point in a notebook (issue 39): mixlinreg.harness.figure2_point runs a panel's
protocol at one grid point; its runs are the full panel's runs at that cell."""

from __future__ import annotations

import numpy as np
import pytest

from mixlinreg.harness import figure2_point, load_config, run_unit

SMOKE = dict(m=20, n=20, d=40, preset="smoke")


def test_the_point_is_the_panels_cell():
    pt = figure2_point("fig2a", R=1.0, sigma=0.1, **SMOKE)
    exp = load_config("fig2a", "smoke")
    full = [run_unit(exp, u)[0] for u in exp.units()]
    cell = [r[(r["R"] == 1.0) & (r["sigma"] == 0.1)].reset_index(drop=True) for r in full]
    ours = [pt.rows[pt.rows["trial"] == t].reset_index(drop=True) for t in range(len(full))]
    for a, b in zip(cell, ours):
        assert len(a) == len(b) == exp.protocol["n_init"] * len(exp.protocol["steps"])
        for col in ("trial", "init", "step", "diverged"):
            assert a[col].tolist() == b[col].tolist(), col
        # the same data, starts and step sizes; one cell instead of four per kernel call
        np.testing.assert_allclose(b["dist_nearest"], a["dist_nearest"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b["loss"], a["loss"], rtol=1e-5, atol=1e-7)
    (row,) = pt.summary.to_dict("records")
    assert row["trials"] == exp.protocol["trials"] and (row["R"], row["sigma"]) == (1.0, 0.1)
    succ = sum(bool(((r["dist_nearest"] < 0.6 * 0.1 + exp.protocol["success_plus"])).any())
               for r in ours)
    assert row["succ_authors"] == succ and row["p_authors"] == succ / row["trials"]
    assert row["lo_authors"] <= row["p_authors"] <= row["hi_authors"]
    (ax,) = pt.plot().axes
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "bars: Wilson 95% interval"


def test_point_arguments_are_checked():
    with pytest.raises(ValueError, match=r"grid has 2 values of m .*pass m="):
        figure2_point("fig2c", R=0.25, sigma=0.1, preset="smoke")
    with pytest.raises(ValueError, match="R must be"):
        figure2_point("fig2a", R=0.0, sigma=0.1, **SMOKE)
    with pytest.raises(ValueError, match="k must divide m"):
        figure2_point("fig2a", R=1.0, sigma=0.1, k=3, **SMOKE)
    with pytest.raises(ValueError, match="alpha0 is only for panels with init = 'close'"):
        figure2_point("fig2a", R=1.0, sigma=0.1, alpha0=0.2, **SMOKE)
    with pytest.raises(ValueError, match="trials must be"):
        figure2_point("fig2a", R=1.0, sigma=0.1, trials=0, **SMOKE)


def test_smoke_figures_say_what_the_preset_is(tmp_path):
    """The smoke preset's figures carry a line computed from its summary (they were a flat line
    with no word that this is expected)."""
    from types import SimpleNamespace

    import matplotlib.image

    from mixlinreg.harness.report import smoke_note, write_panel_outputs

    pt = figure2_point("fig2a", R=1.0, sigma=0.1, **SMOKE)
    exp = load_config("fig2a", "smoke")
    note = smoke_note(exp, pt.summary)
    p = float(pt.summary["p_authors"].iloc[0])
    assert note.startswith("smoke preset (m = 20, n = 20, d = 40, 2 trials, 30 iterations)")
    assert f"success probability {p:g} here, in steps of 1/2" in note
    assert smoke_note(load_config("fig2a", "quick"), pt.summary) is None
    store = SimpleNamespace(exp=exp, table=lambda: pt.rows)
    summary, paths = write_panel_outputs(store, tmp_path)
    assert [q.name for q in paths] == ["fig2a_smoke_summary.csv", "fig2a_smoke.png",
                                       "fig2a_smoke_rules.png"]
    assert matplotlib.image.imread(paths[1]).shape[0] > 100
