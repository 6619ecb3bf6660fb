"""
Figure 2 of the paper, computed at a small size
===============================================

The synthetic experiment of Ghosh et al. (Section 6.1; Figure 2 of the NeurIPS version, Figure 3
of the long version): the probability that IFCA with random restarts finds the clusters of a
mixture of linear regressions. This example runs panels (a) (against the scale ``R`` of the true
parameters, one line per noise level ``sigma``) and (c) (against the number of machines ``m``,
one line per number of points ``n``) with the package's own pipeline, in their ``smoke`` preset:
a few seconds on a far smaller problem than the paper's. ``mixlinreg reproduce all --preset
paper`` runs the paper's sizes (hours on two cores).
"""

# %%
# The presets
# -----------
# Each panel is a packaged configuration (:func:`mixlinreg.harness.load_config`): its grid, the
# protocol of the authors' code (random 0/1 starts, the step sizes 1, 0.1 and 0.01, restarts) and
# presets that shrink it.

import tempfile

from mixlinreg.harness import load_config, run_experiment, success_table
from mixlinreg.plots import combined_figure

experiments = [load_config(name, preset="smoke") for name in ("fig2a", "fig2c")]
for exp in experiments:
    grid = {key: values for key, values in exp.grid.items() if len(values) > 1}
    print(f"{exp.name} ({exp.layout}): grid {grid}, {exp.protocol['trials']} trials per cell, "
          f"{exp.protocol['n_init']} starts x {len(exp.protocol['steps'])} step sizes per trial")

# %%
# Running a panel
# ---------------
# :func:`mixlinreg.harness.run_experiment` runs every unit of the grid (here in a folder that is
# thrown away afterwards; a real run keeps it and can resume), and
# :func:`mixlinreg.harness.success_table` turns the runs into a success probability per cell with
# its Wilson 95% interval. A trial succeeds, by the rule of the authors' code, when some run ends
# with the **mean** over its models of each model's distance to its nearest true parameter below
# ``0.6 sigma`` (plus a small slack): a mean, so one model may be farther than ``0.6 sigma`` as
# long as the others are closer, and two models on the same true parameter both count as close.

panels = []
for exp in experiments:
    with tempfile.TemporaryDirectory() as folder:
        store, summary = run_experiment(exp, folder, backend="sequential", progress=False)
        table = success_table(store.table(), exp.protocol["success_plus"])
    print(exp.name)
    print(table[["m", "n", "d", "R", "sigma", "trials", "p_authors"]].to_string(index=False))
    panels.append((exp.name, table, exp.layout))

# %%
# The panels
# ----------
# With two trials per cell, on problems this small, the intervals are wide: the smoke preset
# shows how the figure is made, not the paper's curves (those are in ``figures/fig2_paper.png``
# of the repository and on the page about reproducing Figure 2).

fig = combined_figure(panels)
