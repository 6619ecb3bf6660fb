"""
Your own data: scikit-learn's diabetes data split over machines
===============================================================

Federated data rarely come as one (m, n, d) array: machines hold different numbers of rows, and
the data often sit in one long table with a column naming each row's machine. This example takes
scikit-learn's diabetes data (442 patients, 10 standardized features, a disease-progression
score), splits it over machines, and fits :class:`mixlinreg.IFCA` with an intercept: first with
one cluster, where IFCA is plain gradient descent on the pooled least-squares loss and must match
the closed form, then on machines of unequal sizes read from a long table.
"""

# %%
# Ten machines of 44 rows, one cluster, an intercept
# --------------------------------------------------
# With ``n_clusters=1`` every machine uses the one model, so IFCA minimizes
# :math:`\frac{1}{m}\sum_i F_i(\theta)`, which with equal sizes is the mean squared residual
# over all rows: its minimizer is pooled least squares with an intercept. The default 300
# iterations are far too few for these correlated features; the estimator says so with a
# ``ConvergenceWarning`` rather than returning a poor fit in silence.

import warnings

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler

import mixlinreg as mlr

features, target = load_diabetes(return_X_y=True)
features = StandardScaler().fit_transform(features)
m, n = 10, 44
X = features[: m * n].reshape(m, n, -1)
y = target[: m * n].reshape(m, n)

design = np.column_stack([features[: m * n], np.ones(m * n)])
pooled = np.linalg.lstsq(design, target[: m * n], rcond=None)[0]
pooled_loss = float(np.mean((design @ pooled - target[: m * n]) ** 2))
print(f"pooled least squares with an intercept: loss {pooled_loss:.2f}")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", mlr.ConvergenceWarning)
    short = mlr.IFCA(n_clusters=1, n_init=1, fit_intercept=True, random_state=0).fit(X, y)
print(f"n_iter=300: loss {short.loss_:.2f}, converged_ = {short.converged_}; warned: "
      f"{[type(w.message).__name__ for w in caught]}")

long = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True, random_state=0)
long.fit(X, y)
fitted = np.append(long.coef_[0], long.intercept_[0])
rel = float(np.max(np.abs(fitted - pooled)) / np.max(np.abs(pooled)))
print(f"n_iter=20000: loss {long.loss_:.2f}, converged_ = {long.converged_}, largest "
      f"difference from pooled least squares {rel:.1e} (relative)")

# %%
# The same machines as a list of arrays give the same fit, bit for bit:

listed = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True, random_state=0)
listed.fit(list(X), list(y))
print("list input equals the dense input:", bool(np.array_equal(listed.coef_, long.coef_)
                                                 and listed.intercept_[0] == long.intercept_[0]))

# %%
# Machines of unequal sizes, from a long table
# --------------------------------------------
# Now all 442 rows, dealt to ten machines of 20 to 70 rows, in a pandas DataFrame with a
# ``site`` column. :func:`mixlinreg.split_by_machine` turns it into per-machine lists (and the
# sites' names, in the lists' order). Each machine's loss is its own mean over its rows, so
# every machine counts once whatever its size.

sizes = np.array([20, 30, 35, 40, 44, 45, 50, 53, 55, 70])
site = np.repeat([f"site {i}" for i in range(sizes.size)], sizes)
frame = pd.DataFrame(features, columns=load_diabetes().feature_names)
frame["site"] = site
frame["progression"] = target
Xs, ys, sites = mlr.split_by_machine(frame, machine="site", target="progression")
print(f"{len(Xs)} machines of {min(len(a) for a in Xs)} to {max(len(a) for a in Xs)} rows")

fits = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", mlr.EmptyClusterWarning)
    for k in (1, 2, 3):
        fits[k] = mlr.IFCA(n_clusters=k, n_init=10, lr=0.2, n_iter=5000, fit_intercept=True,
                           random_state=1).fit(Xs, ys)
bics = {k: est.bic(Xs, ys) for k, est in fits.items()}
for k, est in fits.items():
    print(f"k = {k}: training loss {est.loss_:.1f}, BIC {bics[k]:.1f}, converged_ = "
          f"{est.converged_}")
best = min(bics, key=bics.get)
print(f"the BIC prefers k = {best}")

# %%
# Each site counts once above. With ``weighting="size"`` every row counts once instead, so one
# cluster with an intercept is pooled least squares over all 442 rows:

by_rows = mlr.IFCA(n_clusters=1, n_init=1, n_iter=20000, fit_intercept=True, weighting="size",
                   random_state=0).fit(Xs, ys)
everything = np.column_stack([features, np.ones(len(features))])
pooled_all = np.linalg.lstsq(everything, target, rcond=None)[0]
gap = np.max(np.abs(np.append(by_rows.coef_[0], by_rows.intercept_[0]) - pooled_all))
print(f"weighting='size': largest difference from pooled least squares on all rows "
      f"{gap / np.max(np.abs(pooled_all)):.1e} (relative), converged_ = {by_rows.converged_}")

# %%
# The sites were dealt their rows in order, so no cluster structure is built in. The chosen
# fit's models and the machines' clusters as pandas tables:

print(fits[best].to_frame().round(2).to_string())
machines = fits[best].to_frame("machines")
machines["site"] = sites
print(machines.to_string())

# %%
# How the one-cluster fit approaches pooled least squares
# -------------------------------------------------------
# The training loss of the kept run, minus the pooled optimum, at every iteration (log scale):
# fast at first, then slow along the directions where the standardized features are nearly
# collinear, which is why 300 iterations were not enough.

fig = Figure(figsize=(6, 3.5))
ax = fig.subplots()
gap = np.maximum(long.loss_history_ - pooled_loss, 1e-12)
ax.semilogy(np.arange(gap.size), gap)
ax.axvline(300, color="grey", linestyle=":", label="n_iter = 300 (the default)")
ax.set_xlabel("iteration")
ax.set_ylabel("training loss - pooled optimum")
ax.set_title("IFCA with one cluster on the diabetes data")
ax.legend()
fig.tight_layout()
fig
