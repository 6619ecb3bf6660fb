"""
Contraction: resampled IFCA halves its error every iteration
============================================================

Theorem 1's setting: fresh data every iteration, ``gamma p = 1/4``. The measured factor per
iteration is printed next to the theorem's 1/2; the floors are the known-cluster prediction and
Corollary 1's form (its unknown constant set to 1).
"""

from _common import SMOKE

from mixlinreg import teach

kw = dict(m=60, n_prime=10, d=4, n_iter=6, n_runs=2) if SMOKE else {}
c = teach.contraction_run(**kw)
print(c.summary())
fig = teach.contraction_figure(c)
