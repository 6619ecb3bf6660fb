"""
IFCA against the baselines: the compare table
=============================================

``mixlinreg compare --preset quick`` runs IFCA, the oracle, global, local, one-shot, soft IFCA, CFL
and FPFC on several scenarios. This draws its committed summary
(``figures/compare_quick_summary.csv``): mean matched distance to the truth per scenario and
method, log colour scale (blank: the method did not run there).
"""

import numpy as np
import pandas as pd
import seaborn as sns
from _common import root
from matplotlib.figure import Figure

summary = pd.read_csv(root() / "figures" / "compare_quick_summary.csv")
table = summary.pivot(index="scenario", columns="method", values="dist_matched")
table = table[[c for c in summary["method"].drop_duplicates() if c in table.columns]]
print(table.round(3).to_string())

fig = Figure(figsize=(9, 4.2), layout="constrained")
ax = fig.subplots()
sns.heatmap(np.log10(table.clip(lower=1e-6)), annot=table.map(lambda v: f"{v:.2g}"), fmt="",
            cmap="viridis", ax=ax, cbar_kws={"label": "log10 mean matched distance"})
ax.set_xlabel("method")
ax.set_ylabel("scenario")
ax.set_title("Mean matched distance to the truth (lower is better), quick preset")
fig
