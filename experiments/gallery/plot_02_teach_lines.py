"""
Lines view: IFCA on a mixture of regression lines
=================================================

Thirty machines hold points from three lines ``y = a + b t``. Each iteration every machine picks
the line with the lowest squared error on its points (its colour), then each line takes a gradient
step on its machines. Drawn from :func:`mixlinreg.ifca`'s trace by :mod:`mixlinreg.teach`.
"""

import numpy as np
from _common import SMOKE

from mixlinreg import teach

mix = teach.line_mixture(k=3, m=30, n=15, sigma=0.5, rng=0)
start = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))  # a random start
path = teach.ifca_path(mix, start, lr=0.5, n_iter=4 if SMOKE else 20)
print(f"training loss {path.loss[0]:.3f} -> {path.loss[-1]:.3f}")
fig = teach.lines_figure(mix, path)
