"""
Hard against soft IFCA from one bad start
=========================================

Two models start near line 1 and none near line 2. Hard IFCA stays stuck; soft IFCA (softmax
weights, :func:`mixlinreg.baselines.soft_ifca`) separates the models at a moderate temperature and
pulls them all to the global fit at a high one.
"""

import numpy as np
from _common import SMOKE

from mixlinreg import teach

mix = teach.line_mixture(k=3, m=30, n=15, sigma=0.5, rng=0)
st = mix.theta_star
start = np.array([st[0] + [0.3, 0.2], st[0] + [-0.2, -0.4], st[2] + [0.5, 0.5]])
T = 5 if SMOKE else 60
paths = [teach.ifca_path(mix, start, 0.5, T),
         teach.soft_path(mix, start, 0.5, T, temperature=2.0),
         teach.soft_path(mix, start, 0.5, T, temperature=5.0)]
names = ["hard IFCA", "soft, temperature 2", "soft, temperature 5"]
for name, p in zip(names, paths):
    print(f"{name}: final matched distance {p.dist[-1]:.3f}")
fig = teach.soft_figure(mix, paths, names)
