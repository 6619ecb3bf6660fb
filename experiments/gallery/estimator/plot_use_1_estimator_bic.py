"""
The IFCA estimator: restarts, predictions and choosing k with the BIC
=====================================================================

:class:`mixlinreg.IFCA` wraps :func:`mixlinreg.ifca` as a scikit-learn style estimator. ``fit``
runs ``n_init`` random starts for every step size in one batched kernel call and keeps the run
with the lowest training loss (what a practitioner without ground truth can do). This example
fits it, assigns new machines with ``predict`` and chooses the number of clusters with ``bic``.
"""

# %%
# Data and a fit
# --------------
# :func:`mixlinreg.make_mixture` draws ``m`` machines in ``k`` clusters with ``n`` points each in
# dimension ``d``, as in the paper's Section 6.1. We fit on 48 of the 60 machines and keep 12
# aside.

import os
import warnings

import numpy as np
from matplotlib.figure import Figure

import mixlinreg as mlr

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1"  # the small setting: fewer restarts
N_INIT = 10 if SMOKE else 20

mix = mlr.make_mixture(m=60, n=50, d=5, k=3, R=1.0, sigma=0.1, rng=0)
order = np.random.default_rng(0).permutation(60)
train, held_out = order[:48], order[48:]
est = mlr.IFCA(n_clusters=3, lr=[0.1, 0.3], n_init=N_INIT, random_state=1)
est.fit(mix.X[train], mix.y[train])
print(f"kept run: step {est.lr_}, {est.n_iter_} iterations, training loss {est.loss_:.4f}")
print(f"{est.result_.theta.shape[0]} runs in one kernel call, "
      f"{int(est.result_.diverged.sum())} diverged")
print("adjusted Rand index of the training clusters:",
      round(mlr.adjusted_rand(mix.labels[train], est.labels_), 3))

# %%
# Predicting the cluster of new machines
# --------------------------------------
# IFCA assigns a machine by the loss of each model on the machine's *labelled* data, so
# ``predict`` needs ``y`` as well as ``X``.

pred = est.predict(mix.X[held_out], mix.y[held_out])
print("adjusted Rand index on the 12 held-out machines:",
      round(mlr.adjusted_rand(mix.labels[held_out], pred), 3))

# %%
# Choosing k
# ----------
# The training loss cannot choose k: at its optimum, k + 1 models never fit worse than k (one of
# them can copy another), so the loss only falls or flattens as ``n_clusters`` grows. The BIC can:
# with machines as independent observations, each drawing a cluster :math:`j` with weight
# :math:`\pi_j` and then :math:`y_i = X_i \theta_j + \varepsilon_i`,
# :math:`\varepsilon_i \sim N(0, \sigma^2 I_n)`,
#
# .. math::
#
#    \mathrm{BIC} = -2 \sum_{i=1}^m \log \sum_{j=1}^k \pi_j \, N(y_i; X_i \theta_j, \sigma^2 I_n)
#    + p \log m, \qquad p = k d + (k - 1) + 1,
#
# evaluated at IFCA's models (see :meth:`mixlinreg.IFCA.bic` for the details and its limits).
# AIC replaces :math:`p \log m` by :math:`2 p`.

ks = range(1, 6)
bic, aic, loss = [], [], []
for k in ks:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an extra model left empty warns: expected for k > 3
        fit = mlr.IFCA(n_clusters=k, lr=[0.1, 0.3], n_init=N_INIT, random_state=1).fit(mix.X, mix.y)
    bic.append(fit.bic(mix.X, mix.y))
    aic.append(fit.aic(mix.X, mix.y))
    loss.append(fit.loss_)
    print(f"k = {k}: training loss {fit.loss_:.4f}, BIC {bic[-1]:10.1f}, AIC {aic[-1]:10.1f}")
best = list(ks)[int(np.argmin(bic))]
print(f"BIC chooses k = {best} (the data have 3 clusters)")
assert best == 3

fig = Figure(figsize=(8, 3.4), layout="constrained")
ax1, ax2 = fig.subplots(1, 2)
ax1.plot(list(ks), loss, "o-")
ax1.set_yscale("log")
ax1.set_xlabel("n_clusters k")
ax1.set_ylabel("training loss (log scale)")
ax1.set_title("the loss falls, then flattens")
ax2.plot(list(ks), bic, "o-", label="BIC")
ax2.plot(list(ks), aic, "s--", label="AIC")
ax2.axvline(best, color="grey", lw=0.8)
ax2.set_xlabel("n_clusters k")
ax2.set_title(f"BIC is lowest at k = {best}")
ax2.legend()
fig
