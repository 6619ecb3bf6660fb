"""
Parameter plane: models, machines and the region each model wins
=================================================================

The run of the lines view seen in the plane of parameters :math:`(a, b)`: each machine's own
least-squares fit coloured by the model it picks, the models with their trails, and (shaded)
where each model has the lowest population loss. Same settings as the committed view
(``mixlinreg teach plane``) and the lesson: data seed 0, start seed 8, step 0.5, 20 iterations.
"""

# %%
# The run
# -------
# The same problem and start as the lines view.

import numpy as np

from mixlinreg import teach

M, N, SIGMA, LR, N_ITER = 30, 15, 0.5, 0.5, 20  # the committed view's settings

mix = teach.line_mixture(k=3, m=M, n=N, sigma=SIGMA, rng=0)
start = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))
path = teach.ifca_path(mix, start, LR, N_ITER)
facts = teach.path_facts(path, mix)
print(f"matched distance to the truth {facts['dist_start']:.3f} -> {facts['dist_end']:.3f}")

# %%
# How far a model moves in one step
# ---------------------------------
# With the divisor ``m``, model :math:`j` won by :math:`m_j` machines moves by
# :math:`2 \gamma (m_j/m) H_j (\hat\theta_j - \theta_j)`, where :math:`\hat\theta_j` is the
# least-squares fit pooled over its machines and :math:`H_j` their design covariance (close to
# the identity here, since :math:`t \sim N(0, 1)`). So it covers about a fraction
# :math:`2 \gamma m_j / m` of the way to that fit, and a model that wins no machine does not move.

counts = teach.machines_per_model(path.labels, mix.k)
for j in range(mix.k):
    print(f"model {j + 1}: wins {counts[0, j]:2d} machines at the first assignment, so its first "
          f"step covers about {2 * LR * counts[0, j] / M:.2f} of the way; it moves "
          f"{facts['moved'][j]:.2f} in all")

# %%
# The picture
# -----------
# Small markers: each machine's own fit (where the machine "is"), coloured by the model it
# picks; large markers: the models, hollow where they start, with their trails; stars: the truths.

fig = teach.plane_figure(mix, path)
