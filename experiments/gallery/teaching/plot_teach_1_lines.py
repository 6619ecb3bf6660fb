"""
Lines view: IFCA on a mixture of regression lines
=================================================

Thirty machines each hold fifteen points drawn from one of three lines ``y = a + b t``; nobody
tells the algorithm which line a machine belongs to. IFCA (the Iterative Federated Clustering
Algorithm) alternates two steps, like k-means, but it clusters *machines* by the *loss of
models*. This example runs it from a random start and draws every iteration.

The settings are those of the committed view (``mixlinreg teach lines``) and of the lesson: data
seed 0, start seed 8, step 0.5, 20 iterations.
"""

# %%
# The problem
# -----------
# :func:`mixlinreg.teach.line_mixture` draws ``m`` machines with ``n`` points each. Machine ``i``
# belongs to cluster ``floor(i k / m)`` and its points follow that cluster's line plus Gaussian
# noise of standard deviation ``sigma``. With the design row :math:`x = (1, t)` a model is the
# pair :math:`\theta = (a, b)` and the model is linear: :math:`y = \langle x, \theta^*_j \rangle
# + \sigma \varepsilon`.

import numpy as np

import mixlinreg as mlr
from mixlinreg import teach

M, N, SIGMA = 30, 15, 0.5  # machines, points per machine, noise: the committed view's
LR, N_ITER = 0.5, 20       # step size and iterations: the committed view's

mix = teach.line_mixture(k=3, m=M, n=N, sigma=SIGMA, rng=0)
print("true lines (a, b):", mix.theta_star.tolist())
print("machines per true line:", np.bincount(mix.labels).tolist())

# %%
# One run of IFCA
# ---------------
# Every iteration each machine :math:`i` evaluates its loss
# :math:`F_i(\theta_j) = \frac{1}{n} \sum_r (y_{ir} - \langle x_{ir}, \theta_j \rangle)^2` under
# each of the three current models and picks the lowest (the assignment step); then each model
# takes a gradient step on the machines that picked it, the server dividing by ``m``:
#
# .. math::
#
#    \theta_j \leftarrow \theta_j - \frac{\gamma}{m} \sum_{i \text{ picked } j} \nabla F_i(\theta_j).
#
# :func:`mixlinreg.ifca` runs the whole loop in one compiled kernel call.

start = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))  # a random start, N(0, I)
res = mlr.ifca(mix.X, mix.y, start, LR, n_iter=N_ITER, dtype=np.float64)
print("final models (a, b):", np.round(res.theta[0], 3).tolist())
print(f"matched distance to the truth: {mlr.dist_matched(res.theta[0], mix.theta_star):.3f}")

# %%
# Every iterate, and what happened
# --------------------------------
# The kernel keeps no model iterates, so :func:`mixlinreg.teach.ifca_path` chains one-iteration
# calls (the same computation) and keeps each one. :func:`mixlinreg.teach.path_facts` reads the
# run: how many machines each model wins over time, and which true lines it holds at the end.

path = teach.ifca_path(mix, start, LR, N_ITER)
np.testing.assert_allclose(path.theta[-1], res.theta[0], rtol=1e-9, atol=1e-12)
facts = teach.path_facts(path, mix)
print("machines per model at the first assignment:", facts["counts_start"])
print("machines per model at the end:             ", facts["counts_end"])
print("true lines each model holds at the end:    ", facts["lines_end"])
print(f"training loss {path.loss[0]:.3f} -> {path.loss[-1]:.3f}; matched distance "
      f"{facts['dist_start']:.3f} -> {facts['dist_end']:.3f}")
# what the picture below shows: one model first wins most machines, then gives them up
leader = facts["leader_start"] - 1
assert facts["counts_start"][leader] > M // 2 > facts["counts_end"][leader]

# %%
# The picture
# -----------
# Each machine's points take the colour of the model it picks (a colour is a *model* here, not
# a true line); the dashed lines are the truths. One model wins most machines at the first
# assignment and gives them up as the other models move toward their lines.

fig = teach.lines_figure(mix, path)
