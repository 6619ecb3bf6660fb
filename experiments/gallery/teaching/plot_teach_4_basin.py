"""
Basin map: which starts succeed, and Assumption 1's ball
========================================================

IFCA's result depends on where the models start. This map runs one IFCA per starting point of
model 1, on a grid, with the other models held where :func:`mixlinreg.init_close` puts them, and
colours the starts that succeed by the iterations they needed. Same settings as the committed
view (``mixlinreg teach basin``) and the lesson: data seeds 2 and 3, seeds 12 and 13 for where
the other models start, step 0.5, 30 iterations, ``alpha0 = 0.25``; a 41 x 41 grid (7 x 7 in the
small setting).
"""

# %%
# Two problems, one grid of starts each
# -------------------------------------
# :func:`mixlinreg.teach.basin_map` runs every start of the grid in one kernel call. A start
# *succeeds* when the final matched distance to the truth is within ``0.6 sigma``: the **mean**
# over the models of each model's distance to its truth under the best one-to-one matching, so
# one model may be farther than ``0.6 sigma`` as long as the others are closer.

import os

from mixlinreg import teach

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1"  # the small setting
M, N, SIGMA, LR, N_ITER, ALPHA0 = 30, 15, 0.5, 0.5, 30, 0.25  # the committed view's settings
GRID = 7 if SMOKE else 41  # the committed view's grid is 41 x 41

mixes = [teach.line_mixture(k=k, m=M, n=N, sigma=SIGMA, rng=k) for k in (2, 3)]
maps = [teach.basin_map(mx, LR, N_ITER, alpha0=ALPHA0, grid=GRID, rng=10 + mx.k) for mx in mixes]
for mx, bm in zip(mixes, maps):
    print(f"k = {mx.k}: {bm.success.mean():.0%} of the {bm.success.size} starts succeed")

# %%
# Why starts fail
# ---------------
# Every start that fails here ends with one model holding the machines of two lines (so some
# line has no model of its own). Often the cause is that model 1 wins no machine in any
# iteration: a model moves only by the gradients of the machines that pick it, so it never moves.

for mx, bm in zip(mixes, maps):
    failed = ~bm.success
    print(f"k = {mx.k}: of {failed.sum()} failed starts, {bm.merged[failed].mean():.0%} end with "
          f"one model on two lines; {bm.idle[failed].mean():.0%} leave model 1 without a machine "
          "in every iteration")
    assert failed.any() and bm.merged[failed].all()

# %%
# Assumption 1's ball
# -------------------
# The paper's Assumption 1 asks every model to start within :math:`(1/2 - \alpha_0) \Delta` of
# its truth, :math:`\Delta` the smallest distance between two truths; the dashed circle is that
# ball around model 1's truth (equal axes, so it is round). These are plain IFCA runs (all the
# data every iteration, step 0.5), outside Theorem 1's hypotheses (fresh data every iteration, a
# step :math:`c_1 / p` with an unknown constant :math:`c_1`): the ball is a reference here, not a
# guarantee. On this easy problem the region that succeeds is far larger than the ball.

fig = teach.basin_figure(mixes, maps)
