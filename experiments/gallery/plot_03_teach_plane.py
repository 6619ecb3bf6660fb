"""
Parameter plane: models, machines and the region each model wins
=================================================================

The same run in the plane of parameters ``(a, b)``: each machine's own least-squares fit coloured by
the model it picks, the models with their trails, and (shaded) where each model has the lowest
population loss.
"""

import numpy as np
from _common import SMOKE

from mixlinreg import teach

mix = teach.line_mixture(k=3, m=30, n=15, sigma=0.5, rng=0)
start = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))
path = teach.ifca_path(mix, start, lr=0.5, n_iter=4 if SMOKE else 20)
print(f"matched distance to the truth {path.dist[0]:.3f} -> {path.dist[-1]:.3f}")
fig = teach.plane_figure(mix, path)
