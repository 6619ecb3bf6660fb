"""Figures of success probability from a success summary table (the paper's Figure 2).

A *success summary table* is a :class:`pandas.DataFrame` with one row per grid cell and the columns

* ``m``, ``n``, ``d``, ``k`` (ints), ``R``, ``sigma`` (floats), ``alpha0`` (float, NaN unless the
  ``close`` initialization is used) and ``trials`` (int);
* for each rule ``r`` in ``("authors", "text", "best_loss")``: ``succ_r`` (number of successful
  trials), ``p_r`` (success probability) and ``lo_r``, ``hi_r`` (Wilson 95% interval bounds).

Two layouts are drawn:

* ``"R-sigma"`` (Ghosh et al. 2020, Figure 2 a, b): success probability against the scale ``R`` of
  the true parameters (not their separation: with the code's ``theta*_j = R * Bernoulli(0.5)^d``
  two models are about ``R sqrt(d / 2)`` apart), one line per noise level ``sigma``, with ``m``
  and ``n`` fixed;
* ``"m-n"`` (Figure 2 c, d): success probability against the number of machines ``m``, one line per
  number of samples per machine ``n``, one facet per ``R``, with ``sigma`` fixed.

Every line carries a shaded band between the Wilson bounds (a legend entry says so). The figures are built with the
object-oriented API on the non-interactive Agg canvas (``matplotlib.pyplot`` and the global backend
are left alone), and the seaborn ``whitegrid`` theme is applied only while a figure is drawn: the
global ``matplotlib.rcParams`` are the same after a call as before it.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
NeurIPS 2020, Section 6.1 and Figure 2.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, FigureBase

from ._validation import check_choice

__all__ = ["plot_panel", "plot_rules", "combined_figure", "save_figure", "RULES", "LAYOUTS"]

#: The success rules of a summary table, in the order :func:`plot_rules` draws them.
RULES = ("authors", "text", "best_loss")
#: The two panel layouts of the paper's Figure 2.
LAYOUTS = ("R-sigma", "m-n")

_RULE_LABELS = {"authors": "authors' rule", "text": "text rule", "best_loss": "best-loss rule"}
_CELL_COLUMNS = ("m", "n", "d", "k", "R", "sigma", "alpha0", "trials")
#: Per layout: (x column, line column, facet column or None, columns that must hold one value).
_LAYOUT_AXES = {
    "R-sigma": ("R", "sigma", None, ("k", "d", "m", "n")),
    "m-n": ("m", "n", "R", ("k", "d", "sigma")),
}
_AXIS_LABELS = {
    "R": "R (scale of theta*; separation ~ R sqrt(d/2))",
    "m": "m (number of machines)",
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
_BAND_ALPHA = 0.18
#: Lighter bands when the R values of an "m-n" panel share one Axes.
_BAND_ALPHA_OVERLAID = 0.10
_YLIM = (-0.02, 1.02)
_PANEL_LETTERS = "abcd"


# --------------------------------------------------------------------------------------------------
# validation and table preparation


def _fmt(value) -> str:
    """Short text of a grid value: ``100``, ``0.5``, ``1e-05``."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:g}"


def _check_summary(summary, layout, rule, name="summary") -> pd.DataFrame:
    """Validate a summary table for one layout and rule; return a sorted copy."""
    if not isinstance(summary, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(summary).__name__}")
    if len(summary) == 0:
        raise ValueError(f"{name} is empty (no grid cell to plot)")
    needed = list(_CELL_COLUMNS) + [f"{p}_{rule}" for p in ("succ", "p", "lo", "hi")]
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        raise ValueError(f"{name} is missing the columns {missing} (needed for rule {rule!r})")
    df = summary.loc[:, needed].copy()
    for col in needed:
        if not pd.api.types.is_numeric_dtype(df[col]) or pd.api.types.is_bool_dtype(df[col]):
            raise ValueError(f"{name} column {col!r} must be numeric, got dtype {df[col].dtype}")
    x_col, line_col, facet_col, fixed = _LAYOUT_AXES[layout]
    for col in ("m", "n", "d", "k", "R", "sigma", "trials"):
        if not np.all(np.isfinite(df[col].to_numpy(dtype=float))):
            raise ValueError(f"{name} column {col!r} must be finite (no NaN or inf)")
    if np.any(df["trials"].to_numpy(dtype=float) < 1):
        raise ValueError(f"{name} column 'trials' must be >= 1 in every row")
    for col in [f"{p}_{rule}" for p in ("p", "lo", "hi")]:
        vals = df[col].to_numpy(dtype=float)
        vals = vals[np.isfinite(vals)]
        if np.any((vals < 0.0) | (vals > 1.0)):
            raise ValueError(f"{name} column {col!r} must lie in [0, 1]")
    for col in fixed:
        values = np.unique(df[col].to_numpy(dtype=float))
        if values.size > 1:
            shown = ", ".join(_fmt(v) for v in values)
            raise ValueError(
                f"{name} must hold a single value of {col!r} for layout {layout!r}, got "
                f"{{{shown}}}; select one (e.g. summary[summary[{col!r}] == value]) first"
            )
    alpha0 = df["alpha0"].to_numpy(dtype=float)
    distinct_alpha = np.unique(alpha0[np.isfinite(alpha0)])
    if distinct_alpha.size > 1 or (distinct_alpha.size == 1 and np.isnan(alpha0).any()):
        raise ValueError(
            f"{name} must hold a single value of 'alpha0' (or NaN throughout), got several; "
            "select one first"
        )
    keys = [x_col, line_col] + ([facet_col] if facet_col else [])
    dup = df.duplicated(subset=keys, keep=False)
    if dup.any():
        first = df.loc[dup, keys].iloc[0]
        where = ", ".join(f"{c} = {_fmt(first[c])}" for c in keys)
        raise ValueError(f"{name} has several rows for the cell ({where}) in layout {layout!r}")
    return df.sort_values(keys).reset_index(drop=True)


def _check_layout_rule(layout, rule):
    check_choice("layout", layout, LAYOUTS)
    check_choice("rule", rule, RULES)


def _check_title(title, name="title"):
    if title is not None and not isinstance(title, str):
        raise TypeError(f"{name} must be None or a string, got {type(title).__name__}")


def _trials_text(df) -> str:
    lo, hi = int(df["trials"].min()), int(df["trials"].max())
    if lo == hi:
        return f"{lo} trial" if lo == 1 else f"{lo} trials"
    return f"trials {lo}-{hi}"


def _setting_text(df, layout) -> str:
    """``k = 2, d = 1000, m = 100, n = 100`` (plus R when single in m-n, alpha0 when set)."""
    fixed = _LAYOUT_AXES[layout][3]
    parts = [f"{c} = {_fmt(df[c].iloc[0])}" for c in fixed]
    if layout == "m-n" and df["R"].nunique() == 1:
        parts.append(f"R = {_fmt(df['R'].iloc[0])}")
    alpha0 = df["alpha0"].iloc[0]
    if np.isfinite(alpha0):
        parts.append(f"alpha0 = {_fmt(alpha0)}")
    return ", ".join(parts)


def _default_title(df, layout, rule) -> str:
    return f"{_setting_text(df, layout)}\n{_RULE_LABELS[rule]}, {_trials_text(df)}"


# --------------------------------------------------------------------------------------------------
# drawing


@contextlib.contextmanager
def _theme():
    """The seaborn whitegrid theme, undone on exit (``rcParams`` are restored)."""
    with mpl.rc_context():
        sns.set_theme(style="whitegrid")
        yield


def _new_figure(figsize) -> Figure:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _finish(fig):
    """Create ticks, tick labels and grid lines while the theme is active.

    Matplotlib creates ticks lazily, reading ``rcParams`` then; without this they would take the
    global (unthemed) settings when the figure is first drawn outside :func:`_theme`.
    """
    fig.draw_without_rendering()


def _root_figure(ax) -> Figure:
    fig = ax.figure
    while isinstance(fig, FigureBase) and not isinstance(fig, Figure):
        fig = fig.figure  # a SubFigure: go up to the root Figure
    return fig


def _line_label(col, value) -> str:
    return f"{col} = {_fmt(value)}"


def _draw_lines(ax, df, x_col, line_col, rule, all_values, *, linestyle="-", extra_label="",
                band_alpha=_BAND_ALPHA):
    """One line with markers and a Wilson band per value of ``line_col`` present in ``df``.

    Colours and markers are indexed by the position of the value in ``all_values`` (the sorted line
    values of the whole panel), so a value looks the same in every facet or line style.
    """
    colors = sns.color_palette("colorblind", len(all_values))
    for value, sub in df.groupby(line_col, sort=True):
        i = int(np.searchsorted(all_values, value))
        sub = sub.sort_values(x_col)
        x = sub[x_col].to_numpy(dtype=float)
        lo, hi = sub[f"lo_{rule}"].to_numpy(dtype=float), sub[f"hi_{rule}"].to_numpy(dtype=float)
        if np.unique(x).size > 1:
            ax.fill_between(x, lo, hi, color=colors[i], alpha=band_alpha, linewidth=0)
            _intervals(ax).add("band")
        else:  # one point: a band would have no width, so the interval is an error bar
            p = sub[f"p_{rule}"].to_numpy(dtype=float)
            ax.errorbar(x, p, yerr=np.vstack([p - lo, hi - p]), fmt="none", ecolor=colors[i],
                        elinewidth=1.2, capsize=4)
            _intervals(ax).add("bar")
        ax.plot(x, sub[f"p_{rule}"].to_numpy(dtype=float), color=colors[i], linestyle=linestyle,
                marker=_MARKERS[i % len(_MARKERS)], markersize=5, linewidth=1.8,
                label=_line_label(line_col, value) + extra_label)


def _style_axes(ax, df, x_col, *, ylabel=True):
    ax.set_ylim(*_YLIM)
    ax.set_xlabel(_AXIS_LABELS[x_col])
    ax.set_ylabel("success probability" if ylabel else "")
    xs = np.unique(df[x_col].to_numpy(dtype=float))
    if 1 < xs.size <= 8:
        ax.set_xticks(xs, [_fmt(v) for v in xs])


def _intervals(ax):
    """The kinds of Wilson interval drawn on ``ax`` so far: "band" (a line of several points) and
    "bar" (a single point), for the legend to name what is there."""
    if not hasattr(ax, "_mixlinreg_intervals"):
        ax._mixlinreg_intervals = set()
    return ax._mixlinreg_intervals


def _legend(ax, handles=None, labels=None, kinds=None):
    """Legend outside the Axes, on its right, so that it never hides data; it names the Wilson
    intervals as drawn (``kinds``, default those of ``ax``): shaded bands, error bars, or both."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    kinds = _intervals(ax) if kinds is None else kinds
    if handles:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles, labels = list(handles), list(labels)
        if "band" in kinds:
            handles.append(Patch(facecolor="0.5", alpha=0.35, linewidth=0))
            labels.append("shaded: Wilson 95% interval")
        if "bar" in kinds:
            handles.append(Line2D([], [], color="0.4", marker="|", linestyle="none",
                                  markersize=12))
            labels.append("bars: Wilson 95% interval")
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, fontsize="small", frameon=False, handlelength=3.0)


def _draw_single_ax(ax, df, layout, rule, *, legend=True, ylabel=True):
    """Draw a whole panel into one Axes (the R values of "m-n" told apart by line style)."""
    x_col, line_col, facet_col, _ = _LAYOUT_AXES[layout]
    all_values = np.sort(df[line_col].unique())
    if facet_col is None or df[facet_col].nunique() == 1:
        _draw_lines(ax, df, x_col, line_col, rule, all_values)
    else:
        for j, (fvalue, sub) in enumerate(df.groupby(facet_col, sort=True)):
            _draw_lines(ax, sub, x_col, line_col, rule, all_values,
                        linestyle=_LINESTYLES[j % len(_LINESTYLES)],
                        extra_label=f", {_line_label(facet_col, fvalue)}",
                        band_alpha=_BAND_ALPHA_OVERLAID)
    _style_axes(ax, df, x_col, ylabel=ylabel)
    if legend:
        _legend(ax)


def _draw_facets(fig, df, layout, rule):
    """One subplot per facet value (R in "m-n"), shared y axis, one legend on the right."""
    x_col, line_col, facet_col, _ = _LAYOUT_AXES[layout]
    facets = np.sort(df[facet_col].unique())
    all_values = np.sort(df[line_col].unique())
    axes = fig.subplots(1, len(facets), sharey=True, squeeze=False)[0]
    handles = {}
    for j, (ax, fvalue) in enumerate(zip(axes, facets)):
        sub = df[df[facet_col] == fvalue]
        _draw_lines(ax, sub, x_col, line_col, rule, all_values)
        _style_axes(ax, sub, x_col, ylabel=(j == 0))
        ax.set_title(_line_label(facet_col, fvalue))
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    labels = [_line_label(line_col, v) for v in all_values]
    kinds = set().union(*(_intervals(ax) for ax in axes))
    _legend(axes[-1], [handles[lab] for lab in labels], labels, kinds)
    return axes


# --------------------------------------------------------------------------------------------------
# public functions


def plot_panel(summary, layout, rule="authors", ax=None, title=None):
    """Draw one panel of the paper's Figure 2: success probability with Wilson bands.

    Parameters
    ----------
    summary : pandas.DataFrame
        Success summary table (one row per grid cell, see the module docstring). The columns that
        the layout keeps fixed must hold a single value: ``k``, ``d``, ``m``, ``n`` for
        ``"R-sigma"``; ``k``, ``d``, ``sigma`` for ``"m-n"``; and ``alpha0`` in both.
    layout : {"R-sigma", "m-n"}
        ``"R-sigma"``: x = ``R``, one line per ``sigma`` (Figure 2 a, b). ``"m-n"``: x = ``m``, one
        line per ``n`` and one facet (subplot, shared y axis) per ``R`` (Figure 2 c, d).
    rule : {"authors", "text", "best_loss"}, default "authors"
        Which success rule's columns (``p_rule``, ``lo_rule``, ``hi_rule``) to draw.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes instead of a new figure. With layout ``"m-n"`` and several ``R``
        values, all of them go into this Axes, told apart by line style (solid, dashed, ...),
        with one legend entry per ``(n, R)``.
    title : str, optional
        Title of the panel (of the figure when there are several facets). Default:
        ``"k = .., d = .."`` with the fixed values of the layout, then the rule and the number of
        trials (``"authors' rule, 40 trials"``, or ``"trials 8-10"`` when cells differ).

    Returns
    -------
    matplotlib.figure.Figure
        The new figure, or the figure holding ``ax``.

    Raises
    ------
    ValueError
        If ``layout`` or ``rule`` is not one of the allowed values, or ``summary`` lacks a column,
        is empty, holds several values of a fixed column or several rows for one cell.
    TypeError
        If ``summary`` is not a DataFrame, ``ax`` not an Axes or ``title`` not a string.

    Examples
    --------
    >>> fig = plot_panel(summary, "R-sigma", rule="text")  # doctest: +SKIP
    >>> save_figure(fig, "figures/fig2a.png")  # doctest: +SKIP
    """
    _check_layout_rule(layout, rule)
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be None or a matplotlib Axes, got {type(ax).__name__}")
    _check_title(title)
    df = _check_summary(summary, layout, rule)
    if title is None:
        title = _default_title(df, layout, rule)
    facet_col = _LAYOUT_AXES[layout][2]

    with _theme():
        if ax is not None:
            _draw_single_ax(ax, df, layout, rule)
            ax.set_title(title)
            fig = _root_figure(ax)
            _finish(fig)
            return fig

        if facet_col is None or df[facet_col].nunique() == 1:
            fig = _new_figure((7.0, 4.3))
            ax = fig.subplots()
            _draw_single_ax(ax, df, layout, rule)
            ax.set_title(title)
        else:
            fig = _new_figure((3.6 * df[facet_col].nunique() + 1.6, 4.3))
            _draw_facets(fig, df, layout, rule)
            fig.suptitle(title)
        _finish(fig)
    return fig


def plot_rules(summary, layout):
    """Draw the same panel once per success rule, side by side, to show where the rules differ.

    Parameters
    ----------
    summary : pandas.DataFrame
        Success summary table with the columns of all three rules (see :func:`plot_panel`).
    layout : {"R-sigma", "m-n"}
        Panel layout, as in :func:`plot_panel`. In the ``"m-n"`` layout the ``R`` values of a rule
        share its subplot, told apart by line style.

    Returns
    -------
    matplotlib.figure.Figure
        One subplot per rule (``authors``, ``text``, ``best_loss``), sharing the y axis, each titled
        with its rule; the figure title gives the setting and the number of trials.

    Raises
    ------
    ValueError
        As :func:`plot_panel`.
    """
    check_choice("layout", layout, LAYOUTS)
    frames = [_check_summary(summary, layout, r) for r in RULES]
    with _theme():
        fig = _new_figure((14.5, 4.3))
        axes = fig.subplots(1, len(RULES), sharey=True)
        for j, (ax, rule, df) in enumerate(zip(axes, RULES, frames)):
            _draw_single_ax(ax, df, layout, rule, legend=(j == len(RULES) - 1), ylabel=(j == 0))
            ax.set_title(_RULE_LABELS[rule])
        fig.suptitle(f"{_setting_text(frames[0], layout)}, {_trials_text(frames[0])}")
        _finish(fig)
    return fig


def combined_figure(panels, rule="authors"):
    """Draw up to four panels (the four panels of Figure 2) in a 2 x 2 grid.

    Parameters
    ----------
    panels : sequence of (str, pandas.DataFrame, str)
        Up to four ``(name, summary, layout)`` tuples, drawn left to right, top to bottom. Each
        Axes is titled ``"(a) name"``, ``"(b) name"``, ... followed by the panel's setting, rule and
        number of trials. ``"m-n"`` panels with several ``R`` values draw them by line style.
    rule : {"authors", "text", "best_loss"}, default "authors"
        Success rule drawn in every panel.

    Returns
    -------
    matplotlib.figure.Figure
        A figure with four Axes; those without a panel are hidden.

    Raises
    ------
    ValueError
        If ``panels`` is empty or has more than four entries, an entry is not a
        ``(name, summary, layout)`` triple, or a summary / layout / ``rule`` is invalid.
    """
    check_choice("rule", rule, RULES)
    if isinstance(panels, (str, bytes)) or not hasattr(panels, "__len__"):
        raise ValueError(f"panels must be a list of (name, summary, layout) tuples, "
                         f"got {type(panels).__name__}")
    if not 1 <= len(panels) <= 4:
        raise ValueError(f"panels must hold 1 to 4 (name, summary, layout) tuples, got {len(panels)}")
    checked = []
    for i, entry in enumerate(panels):
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise ValueError(f"panels[{i}] must be a (name, summary, layout) tuple, got {entry!r}"
                             if not isinstance(entry, pd.DataFrame) else
                             f"panels[{i}] must be a (name, summary, layout) tuple, got a DataFrame")
        name, summary, layout = entry
        if not isinstance(name, str):
            raise ValueError(f"panels[{i}] name must be a string, got {type(name).__name__}")
        if not isinstance(layout, str) or layout not in LAYOUTS:
            raise ValueError(f"panels[{i}] layout must be one of {sorted(LAYOUTS)}, got {layout!r}")
        df = _check_summary(summary, layout, rule, name=f"panels[{i}] summary")
        checked.append((name, df, layout))

    with _theme():
        fig = _new_figure((14.0, 9.6))
        axes = fig.subplots(2, 2).ravel()
        for i, ax in enumerate(axes):
            if i >= len(checked):
                ax.set_visible(False)
                continue
            name, df, layout = checked[i]
            _draw_single_ax(ax, df, layout, rule)
            head = f"({_PANEL_LETTERS[i]}) {name}".rstrip()
            ax.set_title(f"{head}\n{_default_title(df, layout, rule)}", fontsize="medium")
        _finish(fig)
    return fig


def save_figure(fig, path):
    """Save a figure as PNG (dpi 120, tight bounding box) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Figure to save, e.g. from :func:`plot_panel`.
    path : str or os.PathLike
        Destination ending in ``.png``; missing parent directories are created.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    ValueError
        If ``path`` does not end in ``.png``.
    TypeError
        If ``fig`` is not a Figure or ``path`` not a path.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"path must end in '.png' (the figure is saved as PNG), got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    from ._paths import save_png

    save_png(fig, path, dpi=120, bbox_inches="tight")  # atomic: a reader never sees half a PNG
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:  # a figure made with pyplot: release it from pyplot's registry
        pyplot.close(fig)
    return path

