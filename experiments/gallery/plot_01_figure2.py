"""
Figure 2 of the paper, from the committed summaries
===================================================

The four panels of the IFCA paper's Figure 2 (success probability of IFCA on mixtures of linear
regressions) as reproduced by ``mixlinreg reproduce all --preset quick``. The figure is drawn from
the summary tables committed in ``figures/fig2*_quick_summary.csv``: nothing is recomputed here.
Bands are Wilson 95% intervals over the trials; success is the authors' rule.
"""

import pandas as pd
from _common import root

from mixlinreg.plots import combined_figure

figures = root() / "figures"
layouts = {"fig2a": "R-sigma", "fig2b": "R-sigma", "fig2c": "m-n", "fig2d": "m-n"}
panels = [(name, pd.read_csv(figures / f"{name}_quick_summary.csv"), layout)
          for name, layout in layouts.items()]
for name, table, _ in panels:
    print(f"{name}: {len(table)} grid cells, {int(table['trials'].iloc[0])} trials per cell")
fig = combined_figure(panels)

# %%
# The ``paper`` preset of panel (a): 40 trials, 10 initializations each, the authors' exact
# protocol (``figures/fig2a_paper_summary.csv``).

from mixlinreg.plots import plot_panel  # noqa: E402

fig_a = plot_panel(pd.read_csv(figures / "fig2a_paper_summary.csv"), "R-sigma")
