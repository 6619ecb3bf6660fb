"""The new loss through every path: the numba kernel (a stale cache cannot hide it), NumPy,
JAX, the estimator and the baselines."""
import logging, warnings
import numpy as np
logging.basicConfig(level=logging.WARNING, format="   log: %(message)s")
import mixlinreg as mlr
from mixlinreg import baselines, losses
mix = mlr.make_mixture(m=20, n=60, d=4, k=2, R=1.0, sigma=0.3, rng=0)
init = mlr.init_close(mix.theta_star, 0.25, n_runs=2, rng=1)
a = mlr.ifca(mix.X, mix.y, init, 0.2, n_iter=50, loss="logcosh")
h = mlr.ifca(mix.X, mix.y, init, 0.2, n_iter=50, loss="huber")
print("   numba logcosh loss", a.loss, "(huber's:", h.loss, ")", "differ from huber:", not np.allclose(a.loss, h.loss))
z = (mix.X[0] @ a.theta[0][a.labels[0, 0]])
print("   kernel loss = NumPy's:", np.isclose(a.loss[0], np.mean([losses.LOSSES["logcosh"].value(mix.X[i] @ a.theta[0][a.labels[0, i]], mix.y[i]).mean() for i in range(20)]), rtol=1e-9))
j = mlr.ifca(mix.X, mix.y, init, 0.2, n_iter=50, loss="logcosh", kernel="jax")
print("   JAX equals numba: max |theta diff|", float(np.abs(j.theta - a.theta).max()))
est = mlr.IFCA(2, loss="logcosh", n_init=2, n_iter=50, random_state=0).fit(mix.X, mix.y)
print("   estimator fits: ARI", mlr.adjusted_rand(est.labels_, mix.labels))
c = baselines.cfl(mix.X, mix.y, lr=0.1, eps1=0.01, eps2=0.1, max_rounds=20, loss="logcosh")
print("   cfl runs: rounds", c.n_rounds)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    f = baselines.fpfc(mix.X, mix.y, lam=0.1, n_rounds=5, loss="logcosh")
print("   fpfc runs: rounds", f.n_rounds)
