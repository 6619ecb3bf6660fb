"""
IFCA next to the baselines, as the clusters come apart
======================================================

How well is each machine served? For every machine, the distance between the model it ends up
using and its true parameter, averaged over machines, for IFCA and five baselines of
:mod:`mixlinreg.baselines`, as the separation of the clusters grows. ``mixlinreg compare`` runs
the full comparison (more scenarios, seeds and methods, with intervals).
"""

# %%
# The methods
# -----------
# * **oracle**: knows every machine's cluster and fits one least-squares model per cluster (the
#   best one can hope for);
# * **global**: one model for all machines (ignores the clusters);
# * **local**: every machine fits its own model on its ``n`` points (no sharing);
# * **one-shot**: local fits, clustered once by k-means, then one fit per cluster;
# * **soft IFCA**: every machine pulls on every model with softmax weights;
# * **IFCA**: :class:`mixlinreg.IFCA` with random restarts.

import os
import warnings

import numpy as np
from matplotlib.figure import Figure

import mixlinreg as mlr
from mixlinreg import baselines

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1"  # the small setting: fewer separations
SEPARATIONS = (0.05, 1.0) if SMOKE else (0.05, 0.1, 0.3, 1.0)
K, SIGMA = 3, 0.5


def machine_distance(theta, labels, mix):
    """Mean over machines of || model used by machine i - its true parameter ||."""
    theta, labels = np.asarray(theta, dtype=float), np.asarray(labels)
    return float(np.mean(np.linalg.norm(theta[labels] - mix.theta_star[mix.labels], axis=1)))


rows, seps = {}, []
for R in SEPARATIONS:
    mix = mlr.make_mixture(m=60, n=20, d=10, k=K, R=R, sigma=SIGMA, rng=0)
    seps.append(mix.separation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an empty model warns; it is part of the picture here
        est = mlr.IFCA(n_clusters=K, lr=[0.1, 0.3], n_init=10, random_state=1).fit(mix.X, mix.y)
    init = mlr.init_bernoulli(1, K, mix.X.shape[2], rng=2)[0]
    results = {
        "oracle": baselines.oracle(mix.X, mix.y, mix.labels),
        "global": baselines.global_model(mix.X, mix.y),
        "local": baselines.local_models(mix.X, mix.y),
        "one-shot": baselines.one_shot(mix.X, mix.y, K, rng=3),
        "soft IFCA": baselines.soft_ifca(mix.X, mix.y, init, 0.3, temperature=SIGMA ** 2 + 0.01),
    }
    rows[R] = {name: machine_distance(r.theta, r.labels, mix) for name, r in results.items()}
    rows[R]["IFCA"] = machine_distance(est.coef_, est.labels_, mix)
    print(f"R = {R:<5} separation {mix.separation:.2f}: " +
          ", ".join(f"{name} {v:.3f}" for name, v in rows[R].items()))

# %%
# The picture
# -----------
# When the clusters are close (small separation), one global model is about as good as the
# oracle: the clusters cost little to ignore. As they come apart, the global model's error grows
# with the separation, while IFCA (and one-shot) join the oracle once they find the clusters;
# local models pay the noise of fitting ``d`` parameters on ``n`` points, the same at every
# separation. Soft IFCA here runs from one start at one temperature (``sigma^2 + 0.01``, as
# ``mixlinreg compare`` does), without restarts.

by = {name: np.array([rows[R][name] for R in SEPARATIONS]) for name in rows[SEPARATIONS[0]]}
assert by["global"][0] < 1.1 * by["oracle"][0] and np.all(np.diff(by["global"]) > 0)
assert abs(by["IFCA"][-1] - by["oracle"][-1]) < 0.01 and np.ptp(by["local"]) < 1e-9

fig = Figure(figsize=(6.4, 4.2), layout="constrained")
ax = fig.subplots()
for (name, values), marker in zip(by.items(), "os^vDx"):
    ax.plot(seps, values, marker=marker, label=name)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("separation of the clusters (smallest distance between true parameters)")
ax.set_ylabel("mean distance of a machine's model to its truth")
ax.legend()
fig
