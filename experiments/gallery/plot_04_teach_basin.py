"""
Basin map: which starts succeed, and Assumption 1's ball
========================================================

Model 1 starts anywhere on the map (one IFCA run per grid point, all in one kernel call), the other
models where :func:`mixlinreg.init_close` puts them for ``alpha0 = 0.25``. Colour: iterations until
the matched distance stays within ``0.6 sigma``; grey: failure. Dashed: the ball of Assumption 1.
"""

from _common import SMOKE

from mixlinreg import teach

grid, n_iter = (7, 6) if SMOKE else (41, 30)
mixes = [teach.line_mixture(k=k, m=30, n=15, sigma=0.5, rng=k) for k in (2, 3)]
maps = [teach.basin_map(mx, 0.5, n_iter, alpha0=0.25, grid=grid, rng=10 + mx.k) for mx in mixes]
for mx, bm in zip(mixes, maps):
    print(f"k = {mx.k}: {bm.success.mean():.0%} of the starts succeed")
fig = teach.basin_figure(mixes, maps)
