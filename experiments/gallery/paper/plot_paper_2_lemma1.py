r"""
A theory check: Lemma 1's misclassification probability
=======================================================

Lemma 1 of Ghosh et al. (long version) says: if every model is within
:math:`(1/2 - \alpha) \Delta` of its truth, a machine with :math:`n'` points picks a wrong model
with probability at most :math:`c_1 \exp(-c_2 n' (\alpha \rho / (\rho + 1))^2)`, where
:math:`\rho = \Delta^2 / \sigma^2` and :math:`c_1, c_2` are constants the paper does not give.
For the squared loss this probability is known exactly; this example compares it with simulated
machines and with the exact Chernoff bound. ``mixlinreg check L1`` runs the full study (its
verdict is in ``paper_checks.md``).
"""

# %%
# The exact probability
# ---------------------
# Take two truths :math:`\Delta = 1` apart, the other model on the other truth, and the machine's
# own model :math:`(1/2 - \alpha) \Delta` from its truth, displaced toward the other model (a
# placement Lemma 1 allows). The machine errs when the other
# model fits its points better; for Gaussian rows that difference of two quadratic forms has an F
# distribution (:func:`mixlinreg.theory.lemma1.misclassification_probability`), and
# :func:`~mixlinreg.theory.lemma1.chernoff_exponent` gives the exponent :math:`E` of the bound
# :math:`P \le \exp(-n' E)`.

import os

import numpy as np
import seaborn as sns
from matplotlib.figure import Figure
from scipy.stats import binomtest

from mixlinreg.theory.lemma1 import (chernoff_exponent, misclassification_probability,
                                     simulate_misclassification)

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1"  # the small setting: fewer machines
alpha, sigma = 0.25, 1.0                      # own model (1/2 - alpha) Delta away, Delta = 1
a = np.array([-(0.5 - alpha), 0.0])           # theta*_j - theta_j
b = np.array([-1.0, 0.0])                     # theta*_j - theta_j' (the other truth)
n_prime = np.arange(1, 41)
exact = misclassification_probability(a, b, sigma, n_prime)
E = chernoff_exponent(a, b, sigma)
print(f"Chernoff exponent E = {E:.4f}; P at n' = 1, 10, 40: "
      f"{exact[0]:.3g}, {exact[9]:.3g}, {exact[39]:.3g}")

# %%
# Simulated machines
# ------------------
# :func:`~mixlinreg.theory.lemma1.simulate_misclassification` draws machines with ``n'`` points
# and counts how many pick the wrong model; each count gets a 99% Wilson interval.

machines = 2_000 if SMOKE else 50_000
rng = np.random.default_rng(0)
mc_n = n_prime[::4]
mc = [simulate_misclassification(a, b, sigma, int(n), machines, rng=rng) for n in mc_n]
ci = np.array([binomtest(w, machines).proportion_ci(0.99, method="wilson") for w in mc])
inside = np.mean((ci[:, 0] <= exact[::4]) & (exact[::4] <= ci[:, 1]))
print(f"exact P inside the 99% Wilson interval of the simulation at {inside:.0%} of "
      f"{len(mc_n)} values of n'")

# %%
# The picture
# -----------
# On a log scale the exact probability falls along a straight line of slope :math:`-E`, below
# the Chernoff bound at every :math:`n'` (so :math:`c_1 = 1` works here), and the simulated
# machines agree with it.

assert np.all(exact <= np.exp(-n_prime * E))

c0, c1 = sns.color_palette("colorblind", 2)
fig = Figure(figsize=(6.4, 4.4), layout="constrained")
ax = fig.subplots()
ax.semilogy(n_prime, exact, color=c0, lw=2, label="exact probability (F distribution)")
ax.semilogy(n_prime, np.exp(-n_prime * E), color="black", ls="--", label="Chernoff bound exp(-n' E)")
p_mc = np.array(mc) / machines
ax.errorbar(mc_n, np.where(p_mc > 0, p_mc, np.nan), yerr=None, fmt="o", color=c1,
            label=f"simulated, {machines} machines (99% Wilson)")
ax.vlines(mc_n, np.maximum(ci[:, 0], 1e-7), ci[:, 1], color=c1, alpha=0.6)
ax.set_xlabel("samples per machine n'")
ax.set_ylabel("P(machine picks the wrong model)")
ax.set_title(f"Lemma 1, alpha = {alpha}, rho = Delta^2 / sigma^2 = {1 / sigma**2:g}")
ax.legend()
fig
