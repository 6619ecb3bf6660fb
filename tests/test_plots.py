"""Tests of mixlinreg.plots on small hand-made success summary tables (no experiment is run)."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from mixlinreg.plots import RULES, combined_figure, plot_panel, plot_rules, save_figure

SIGMAS = (0.1, 0.5, 1.0)
NS = (50, 100)
RS = (0.5, 1.0)


def _wilson(s, t, z=1.959964):
    p = s / t
    denom = 1 + z * z / t
    center = (p + z * z / (2 * t)) / denom
    half = z * np.sqrt(p * (1 - p) / t + z * z / (4 * t * t)) / denom
    return np.clip(center - half, 0, 1), np.clip(center + half, 0, 1)


def make_summary(layout, *, trials=10, alpha0=np.nan, line_values=None, R_values=None):
    """A success summary table for ``layout`` with made-up, monotone success counts.

    ``"R-sigma"``: m = 100, n = 100 fixed, R in {0.25, 0.5, 1, 2}, one line per sigma in SIGMAS.
    ``"m-n"``: sigma = 0.5 fixed, m in {20, 50, 100, 200}, n in NS, R in RS.
    ``trials`` may be an int or a callable ``row_index -> int``.
    """
    rows = []
    if layout == "R-sigma":
        line_values = SIGMAS if line_values is None else line_values
        cells = [dict(m=100, n=100, R=R, sigma=s) for s in line_values for R in (0.25, 0.5, 1.0, 2.0)]
        score = [c["R"] / (c["R"] + c["sigma"]) for c in cells]
    else:
        line_values = NS if line_values is None else line_values
        R_values = RS if R_values is None else R_values
        cells = [dict(m=m, n=n, R=R, sigma=0.5) for R in R_values for n in line_values
                 for m in (20, 50, 100, 200)]
        score = [min(1.0, c["m"] * c["n"] * c["R"] / 20000) for c in cells]
    for i, (cell, sc) in enumerate(zip(cells, score)):
        t = trials(i) if callable(trials) else trials
        row = dict(d=50, k=2, alpha0=alpha0, trials=t, **cell)
        for j, rule in enumerate(RULES):
            succ = int(round(t * sc * (1.0 - 0.2 * j)))
            lo, hi = _wilson(succ, t)
            row.update({f"succ_{rule}": succ, f"p_{rule}": succ / t,
                        f"lo_{rule}": float(lo), f"hi_{rule}": float(hi)})
        rows.append(row)
    df = pd.DataFrame(rows)
    return df.astype({"m": int, "n": int, "d": int, "k": int, "trials": int})


def _n_bands(ax):
    return sum(isinstance(c, PolyCollection) for c in ax.collections)


def _visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


# ----------------------------------------------------------------------------------------------
# plot_panel


def test_one_point_panel_draws_error_bars_and_names_them():
    """One (R, sigma) point: a band would have no width, so the interval is an error bar and the
    legend says so (it said "shaded" and shaded nothing)."""
    one = make_summary("R-sigma").query("R == 1.0 and sigma == 0.5")
    (ax,) = plot_panel(one, "R-sigma").axes
    assert _n_bands(ax) == 0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["sigma = 0.5", "bars: Wilson 95% interval"]
    (bars,) = [c for c in ax.collections if not isinstance(c, PolyCollection)]
    (seg,) = bars.get_segments()
    row = one.iloc[0]
    assert seg[:, 1].tolist() == pytest.approx([row["lo_authors"], row["hi_authors"]])
    # lines of one point next to lines of several: both kinds named
    mixed = pd.concat([make_summary("R-sigma").query("sigma == 0.1"), one])
    (ax,) = plot_panel(mixed, "R-sigma").axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-2:] == ["shaded: Wilson 95% interval", "bars: Wilson 95% interval"]


def test_panel_r_sigma_lines_bands_and_title():
    fig = plot_panel(make_summary("R-sigma"), "R-sigma")
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert len(ax.lines) == len(SIGMAS)
    assert _n_bands(ax) == len(SIGMAS)
    assert ax.get_ylim() == pytest.approx((-0.02, 1.02))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"sigma = {s:g}" for s in SIGMAS] + ["shaded: Wilson 95% interval"]
    title = ax.get_title()
    assert "k = 2, d = 50" in title and "m = 100" in title and "n = 100" in title
    assert "authors' rule" in title and "10 trials" in title
    assert ax.get_xlabel().startswith("R") and ax.get_ylabel() == "success probability"
    # the line of sigma = 0.1 holds p_authors of those cells, in increasing R
    summ = make_summary("R-sigma")
    want = summ[summ.sigma == 0.1].sort_values("R")
    np.testing.assert_allclose(ax.lines[0].get_xdata(), want.R)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), want.p_authors)


@pytest.mark.parametrize("rule, label", [("text", "text rule"), ("best_loss", "best-loss rule")])
def test_panel_rule_in_title_and_data(rule, label):
    summ = make_summary("R-sigma")
    fig = plot_panel(summ, "R-sigma", rule=rule)
    ax = fig.axes[0]
    assert label in ax.get_title()
    want = summ[summ.sigma == 1.0].sort_values("R")[f"p_{rule}"]
    np.testing.assert_allclose(ax.lines[2].get_ydata(), want)


def test_panel_trials_range_and_alpha0_in_title():
    summ = make_summary("R-sigma", trials=lambda i: 8 + i % 3, alpha0=0.25)
    title = plot_panel(summ, "R-sigma").axes[0].get_title()
    assert "trials 8-10" in title and "alpha0 = 0.25" in title


def test_panel_custom_title():
    fig = plot_panel(make_summary("R-sigma"), "R-sigma", title="my panel")
    assert fig.axes[0].get_title() == "my panel"


def test_panel_m_n_facets_per_R():
    fig = plot_panel(make_summary("m-n"), "m-n", rule="text")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == len(RS)
    for ax, R in zip(fig.axes, RS):
        assert len(ax.lines) == len(NS)
        assert _n_bands(ax) == len(NS)
        assert ax.get_title() == f"R = {R:g}"
        assert ax.get_ylim() == pytest.approx((-0.02, 1.02))
    # shared y axis and a single legend
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    assert [t.get_text() for t in legends[0].get_texts()] == [f"n = {n}" for n in NS] + ["shaded: Wilson 95% interval"]
    title = fig.get_suptitle()
    assert "sigma = 0.5" in title and "text rule" in title and "10 trials" in title


def test_panel_m_n_single_R_is_one_axes():
    fig = plot_panel(make_summary("m-n", R_values=(1.0,), line_values=(25, 50, 100)), "m-n")
    (ax,) = fig.axes
    assert len(ax.lines) == 3 and _n_bands(ax) == 3
    assert "R = 1" in ax.get_title()


def test_panel_m_n_into_given_ax_uses_line_styles():
    target = Figure()
    ax = target.subplots()
    fig = plot_panel(make_summary("m-n"), "m-n", ax=ax)
    assert fig is target and len(fig.axes) == 1
    assert len(ax.lines) == len(NS) * len(RS)
    assert _n_bands(ax) == len(NS) * len(RS)
    styles = {line.get_linestyle() for line in ax.lines}
    assert len(styles) == len(RS)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"n = {n}, R = {R:g}" for R in RS for n in NS] + ["shaded: Wilson 95% interval"]
    # one colour per n, whatever R
    by_n = {}
    for line, lab in zip(ax.lines, labels):
        by_n.setdefault(lab.split(",")[0], set()).add(mpl.colors.to_hex(line.get_color()))
    assert all(len(c) == 1 for c in by_n.values()) and len(by_n) == len(NS)


def test_panel_leaves_global_rcparams_alone():
    before = {k: mpl.rcParams[k] for k in ("axes.facecolor", "axes.grid", "axes.prop_cycle",
                                           "font.size")}
    plot_panel(make_summary("R-sigma"), "R-sigma")
    assert {k: mpl.rcParams[k] for k in before} == before


# ----------------------------------------------------------------------------------------------
# plot_rules and combined_figure


@pytest.mark.parametrize("layout, n_lines", [("R-sigma", len(SIGMAS)), ("m-n", len(NS) * len(RS))])
def test_plot_rules_one_axes_per_rule(layout, n_lines):
    fig = plot_rules(make_summary(layout), layout)
    assert isinstance(fig, Figure) and len(fig.axes) == len(RULES)
    for ax, label in zip(fig.axes, ("authors' rule", "text rule", "best-loss rule")):
        assert len(ax.lines) == n_lines and _n_bands(ax) == n_lines
        assert ax.get_title() == label
    assert "10 trials" in fig.get_suptitle()
    # the rules differ: their curves differ
    assert not np.allclose(fig.axes[0].lines[-1].get_ydata(), fig.axes[1].lines[-1].get_ydata())


def test_combined_figure_grid_and_hidden_axes():
    panels = [("R-sigma, m = n = 100", make_summary("R-sigma"), "R-sigma"),
              ("m-n", make_summary("m-n"), "m-n"),
              ("R-sigma (text)", make_summary("R-sigma", line_values=(0.1, 0.5)), "R-sigma")]
    fig = combined_figure(panels, rule="best_loss")
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    visible = _visible_axes(fig)
    assert len(visible) == 3
    assert [len(ax.lines) for ax in visible] == [3, len(NS) * len(RS), 2]
    assert [_n_bands(ax) for ax in visible] == [3, len(NS) * len(RS), 2]
    for ax, letter, (name, _, _) in zip(visible, "abc", panels):
        title = ax.get_title()
        assert title.startswith(f"({letter}) {name}")
        assert "best-loss rule" in title and "10 trials" in title


def test_combined_figure_four_panels():
    panels = [(str(i), make_summary("R-sigma"), "R-sigma") for i in range(4)]
    assert len(_visible_axes(combined_figure(panels))) == 4


# ----------------------------------------------------------------------------------------------
# save_figure


def test_save_figure_writes_png(tmp_path):
    fig = plot_panel(make_summary("R-sigma"), "R-sigma")
    out = save_figure(fig, tmp_path / "sub" / "dir" / "panel.png")
    assert out == tmp_path / "sub" / "dir" / "panel.png"
    data = out.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG\r\n\x1a\n")


def test_save_figure_closes_pyplot_figure(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, ax = plt.subplots()
    plot_panel(make_summary("R-sigma"), "R-sigma", ax=ax)
    num = fig.number
    save_figure(fig, str(tmp_path / "p.png"))
    assert not plt.fignum_exists(num)


# ----------------------------------------------------------------------------------------------
# input errors


@pytest.mark.parametrize("func", [
    lambda s: plot_panel(s, "R-n"),
    lambda s: plot_rules(s, "sigma"),
    lambda s: combined_figure([("a", s, "nope")]),
])
def test_invalid_layout(func):
    with pytest.raises(ValueError, match="layout"):
        func(make_summary("R-sigma"))


@pytest.mark.parametrize("func", [
    lambda s: plot_panel(s, "R-sigma", rule="paper"),
    lambda s: combined_figure([("a", s, "R-sigma")], rule="best"),
])
def test_invalid_rule(func):
    with pytest.raises(ValueError, match="rule"):
        func(make_summary("R-sigma"))


def test_invalid_summaries():
    summ = make_summary("R-sigma")
    with pytest.raises(ValueError, match="summary is missing the columns.*hi_text"):
        plot_panel(summ.drop(columns="hi_text"), "R-sigma", rule="text")
    with pytest.raises(ValueError, match="summary is empty"):
        plot_panel(summ.iloc[:0], "R-sigma")
    with pytest.raises(ValueError, match="single value of 'm'"):
        plot_panel(pd.concat([summ, summ.assign(m=200)]), "R-sigma")
    with pytest.raises(ValueError, match="single value of 'sigma'"):
        plot_panel(summ, "m-n")
    with pytest.raises(ValueError, match="several rows for the cell"):
        plot_panel(pd.concat([summ, summ.iloc[:1]]), "R-sigma")
    with pytest.raises(ValueError, match="alpha0"):
        plot_panel(pd.concat([make_summary("R-sigma", alpha0=0.1),
                              make_summary("R-sigma", alpha0=0.2)]), "R-sigma")
    with pytest.raises(ValueError, match="p_authors"):
        plot_panel(summ.assign(p_authors=1.5), "R-sigma")
    with pytest.raises(TypeError, match="summary must be a pandas DataFrame"):
        plot_panel(summ.to_dict(), "R-sigma")
    with pytest.raises(TypeError, match="ax"):
        plot_panel(summ, "R-sigma", ax="left")


def test_invalid_panels_and_paths(tmp_path):
    summ = make_summary("R-sigma")
    with pytest.raises(ValueError, match="panels"):
        combined_figure([])
    with pytest.raises(ValueError, match="panels"):
        combined_figure([("a", summ, "R-sigma")] * 5)
    with pytest.raises(ValueError, match=r"panels\[0\]"):
        combined_figure([(summ, "R-sigma")])
    with pytest.raises(ValueError, match=r"panels\[1\] summary"):
        combined_figure([("a", summ, "R-sigma"), ("b", summ.iloc[:0], "R-sigma")])
    fig = plot_panel(summ, "R-sigma")
    with pytest.raises(ValueError, match="path"):
        save_figure(fig, tmp_path / "x.pdf")
    with pytest.raises(TypeError, match="fig"):
        save_figure("fig", tmp_path / "x.png")
