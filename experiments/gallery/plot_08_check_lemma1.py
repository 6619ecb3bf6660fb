"""
A theory check: Lemma 1's misclassification probability
=======================================================

Lemma 1 bounds the probability that a machine picks the wrong model by ``c1 exp(-c2 n' ...)``.
For the squared loss it is known exactly (:func:`mixlinreg.theory.lemma1.misclassification_probability`,
an F distribution); here it is compared with simulated machines and with the exact Chernoff bound
``exp(-n' E)``. ``mixlinreg check L1`` runs the full study (see ``paper_checks.md``).
"""

import numpy as np
import seaborn as sns
from _common import SMOKE
from matplotlib.figure import Figure
from scipy.stats import binomtest

from mixlinreg.theory.lemma1 import (chernoff_exponent, misclassification_probability,
                                     simulate_misclassification)

alpha, sigma = 0.25, 1.0                      # own model (1/2 - alpha) Delta away, Delta = 1
a = np.array([-(0.5 - alpha), 0.0])           # theta*_j - theta_j
b = np.array([-1.0, 0.0])                     # theta*_j - theta_j' (the other truth)
n_prime = np.arange(1, 41)
exact = misclassification_probability(a, b, sigma, n_prime)
E = chernoff_exponent(a, b, sigma)
machines = 2_000 if SMOKE else 50_000
rng = np.random.default_rng(0)
mc_n = n_prime[::4]
mc = [simulate_misclassification(a, b, sigma, int(n), machines, rng=rng) for n in mc_n]
ci = np.array([binomtest(w, machines).proportion_ci(0.99, method="wilson") for w in mc])
inside = np.mean((ci[:, 0] <= exact[::4]) & (exact[::4] <= ci[:, 1]))
print(f"Chernoff exponent E = {E:.4f}; exact P inside the 99% Wilson interval of the simulation "
      f"at {inside:.0%} of {len(mc_n)} values of n'")

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
