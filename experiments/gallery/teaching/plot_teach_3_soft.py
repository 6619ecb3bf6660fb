"""
Hard against soft assignments from one bad start
================================================

Two models start near line 1 and none near line 2. Hard IFCA (each machine picks one model)
stays stuck there; soft IFCA, where every machine pulls on every model with softmax weights
(:func:`mixlinreg.baselines.soft_ifca`), behaves differently depending on its temperature. Same
settings as the committed view (``mixlinreg teach soft``) and the lesson: data seed 0, step 0.5,
60 iterations.
"""

# %%
# The bad start
# -------------
# Models 1 and 2 start near line 1, model 3 near line 3: line 2 has no model near it.

import numpy as np

from mixlinreg import teach

M, N, SIGMA, LR, N_ITER = 30, 15, 0.5, 0.5, 60  # the committed view's settings

mix = teach.line_mixture(k=3, m=M, n=N, sigma=SIGMA, rng=0)
st = mix.theta_star
start = np.array([st[0] + [0.3, 0.2], st[0] + [-0.2, -0.4], st[2] + [0.5, 0.5]])

# %%
# Hard IFCA
# ---------
# Models 1 and 2 split line 1's machines; model 3 takes the machines of lines 2 *and* 3 and sits
# between the two lines.

hard = teach.ifca_path(mix, start, LR, N_ITER)
facts = {"hard": teach.path_facts(hard, mix)}
print("hard IFCA: lines each model holds at the end", facts["hard"]["lines_end"],
      f"; final matched distance {facts['hard']['dist_end']:.3f}")
assert facts["hard"]["lines_end"] == [[1], [1], [2, 3]] and facts["hard"]["between"][2]

# %%
# Soft IFCA, and what temperature EM would use
# --------------------------------------------
# Soft IFCA weighs machine :math:`i`'s pull on model :math:`j` by
# :math:`w_{ij} \propto \exp(-F_i(\theta_j) / T)`, normalized over the models. For Gaussian noise
# and equal cluster weights, EM's E-step gives the weights
# :math:`\exp(-n F_i(\theta_j) / (2 \sigma^2))`: the same softmax at the temperature
# :math:`T = 2 \sigma^2 / n` (:func:`mixlinreg.teach.em_temperature`). Temperatures 2 and 5 are far
# softer than EM's: a smoothing knob, not EM.

t_em = teach.em_temperature(SIGMA, N)
print(f"EM's temperature 2 sigma^2 / n = {t_em:.3f}")
soft = {}
for key, temperature in (("soft_em", t_em), ("soft2", 2.0), ("soft5", 5.0)):
    soft[key] = teach.soft_path(mix, start, LR, N_ITER, temperature=temperature)
    facts[key] = teach.path_facts(soft[key], mix)
    print(f"soft IFCA, temperature {temperature:.3f}: lines held at the end "
          f"{facts[key]['lines_end']}, final matched distance {facts[key]['dist_end']:.3f}")

# %%
# The picture
# -----------
# At EM's temperature the run stays stuck like hard IFCA; at temperature 2 the models separate
# and find the three lines (with some bias: every machine still pulls a little on every model);
# at temperature 5 all models end near the single global least-squares fit.

assert facts["soft_em"]["lines_end"] == facts["hard"]["lines_end"]
assert sorted(facts["soft2"]["lines_end"]) == [[1], [2], [3]]
m, n, d = mix.X.shape
global_fit = np.linalg.lstsq(mix.X.reshape(m * n, d), mix.y.reshape(m * n), rcond=None)[0]
print("soft, temperature 5: largest distance of a model from the global fit "
      f"{np.linalg.norm(soft['soft5'].theta[-1] - global_fit, axis=1).max():.3f}")
assert np.linalg.norm(soft["soft5"].theta[-1] - global_fit, axis=1).max() < 0.05

names = ["hard IFCA", "soft, temperature 2", "soft, temperature 5"]
fig = teach.soft_figure(mix, [hard, soft["soft2"], soft["soft5"]], names)
