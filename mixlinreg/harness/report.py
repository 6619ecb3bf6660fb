"""From a finished (or partial) store to summary CSVs and figures."""

from __future__ import annotations

from pathlib import Path

from .._paths import atomic_write
from .success import RULES, success_table


def write_panel_outputs(store, figures_dir="figures"):
    """Summary CSV and figures of one experiment; returns (summary DataFrame, list of written paths)."""
    from ..plots import plot_panel, plot_rules, save_figure

    exp = store.exp
    table = store.table()
    if table.empty:
        return None, []
    summary = success_table(table, exp.protocol["success_plus"])
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{exp.name}_{exp.preset}"
    csv = figures_dir / f"{stem}_summary.csv"
    atomic_write(csv, summary.to_csv(index=False, float_format="%.6g"))
    paths = [csv]
    note = smoke_note(exp, summary)
    for fig, name in ((plot_panel(summary, exp.layout, rule="authors"), f"{stem}.png"),
                      (plot_rules(summary, exp.layout), f"{stem}_rules.png")):
        if note:
            fig.supxlabel(note, fontsize="x-small", color="0.35")
        paths.append(save_figure(fig, figures_dir / name))
    return summary, paths


def smoke_note(exp, summary):
    """For the smoke preset, the words under its figures: what the preset is for, and the range
    of success probabilities it measured (read from ``summary``); None for other presets."""
    if exp.preset != "smoke":
        return None
    sizes = ", ".join(f"{a} = {'/'.join(str(v) for v in exp.grid[a])}" for a in ("m", "n", "d"))
    lo, hi = float(summary["p_authors"].min()), float(summary["p_authors"].max())
    span = f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"
    return (f"smoke preset ({sizes}, {exp.protocol['trials']} trials, {exp.protocol['n_iter']} "
            f"iterations): a check that the pipeline runs, not the paper's curves; success "
            f"probability {span} here, in steps of 1/{exp.protocol['trials']}")


def format_success(summary, layout):
    """A compact text table of the success probabilities (all three rules)."""
    cols = ["m", "n", "k", "R", "sigma", "trials"] + [f"p_{r}" for r in RULES]
    lines = ["  ".join(f"{c:>10}" for c in cols)]
    for _, row in summary.iterrows():
        vals = []
        for c in cols:
            v = row[c]
            vals.append(f"{v:>10.3g}" if isinstance(v, float) else f"{v:>10}")
        lines.append("  ".join(vals))
    return "\n".join(lines)
