"""The bounds of Ghosh et al. (long version) as functions.

The papers' constants ``c, c1, c2, ...`` are universal but unknown. Here they are required keyword
arguments with no default: a caller either fits them to measurements (and says so) or checks a
bound's *shape* with the constant-free parts (``*_form`` functions). No value in this module is
presented as the paper's.

References
----------
Ghosh, Chung, Yin, Ramchandran, An Efficient Framework for Clustered Federated Learning
(arXiv long version): Lemma 1 (Appendix A), Theorem 1 and Corollary 1 (Section 5.1), Theorem 2 and
Corollary 2 (Section 5.2).
"""

from __future__ import annotations

import numpy as np


def _pos(name, value, *, allow_zero=False, allow_inf=False):
    v = np.asarray(value, dtype=float)
    bad = (v < 0) if allow_zero else (v <= 0)
    bad_inf = np.isnan(v) if allow_inf else ~np.isfinite(v)
    if np.any(bad_inf) or np.any(bad):
        rng = ">= 0" if allow_zero else "> 0"
        what = "not NaN" if allow_inf else "finite"
        raise ValueError(f"{name} must be {what} and {rng}, got {value!r}")
    return v


def _alpha(alpha):
    a = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a <= 0) or np.any(a >= 0.5):
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    return a


def _p(p):
    v = np.asarray(p, dtype=float)
    if np.any(~np.isfinite(v)) or np.any(v <= 0) or np.any(v > 1):
        raise ValueError(f"p must be in (0, 1], got {p!r}")
    return v


def lemma1_exponent_form(alpha, rho):
    """``(alpha rho / (rho + 1))^2``: Lemma 1's exponent per sample, up to the constant ``c2``.

    >>> float(lemma1_exponent_form(0.25, 1.0))
    0.015625
    """
    a = _alpha(alpha)
    r = _pos("rho", rho, allow_inf=True)
    frac = np.where(np.isinf(r), 1.0, r / (np.where(np.isinf(r), 0.0, r) + 1.0))
    return (a * frac) ** 2


def lemma1_bound(n_prime, alpha, rho, *, c1, c2):
    """Lemma 1: ``P(machine of cluster j put in j') <= c1 exp(-c2 n' (alpha rho/(rho+1))^2)``."""
    n = _pos("n_prime", n_prime)
    c1 = _pos("c1", c1)
    c2 = _pos("c2", c2)
    return np.minimum(1.0, c1 * np.exp(-c2 * n * lemma1_exponent_form(alpha, rho)))


def statistical_term(*, sigma, p, d, m, n_prime):
    """``(sigma / p) sqrt(d / (m n'))``: the first term of Theorem 1 and Corollary 1, no constant."""
    sigma = _pos("sigma", sigma, allow_zero=True)
    p = _p(p)
    d, m, n_prime = _pos("d", d), _pos("m", m), _pos("n_prime", n_prime)
    return sigma / p * np.sqrt(d / (m * n_prime))


def corollary1_iterations(delta, eps):
    """Corollary 1: ``T = 2 + log(Delta / (4 eps))`` (natural log as printed; see the T1/C1 study)."""
    delta = _pos("delta", delta)
    eps = _pos("eps", eps)
    return 2.0 + np.log(delta / (4.0 * eps))


def minimax_rate(*, sigma, d, p, m, n_prime, delta, eps):
    """Known-cluster rate quoted after Corollary 1: ``sigma sqrt(d / (p m n' log(Delta/(4 eps))))``."""
    sigma = _pos("sigma", sigma, allow_zero=True)
    d, m, n_prime = _pos("d", d), _pos("m", m), _pos("n_prime", n_prime)
    p = _p(p)
    lg = np.log(_pos("delta", delta) / (4.0 * _pos("eps", eps)))
    if np.any(lg <= 0):
        raise ValueError("minimax_rate needs Delta > 4 eps")
    return sigma * np.sqrt(d / (p * m * n_prime * lg))


def theorem2_factor(p, lam, L):
    """Theorem 2's contraction factor ``1 - p lambda / (8 L)`` with step ``gamma = 1/L``.

    >>> float(theorem2_factor(0.5, 1.0, 2.0))
    0.96875
    """
    p = _p(p)
    lam, L = _pos("lam", lam), _pos("L", L)
    if np.any(lam > L):
        raise ValueError(f"lam must be <= L, got lam={lam!r}, L={L!r}")
    return 1.0 - p * lam / (8.0 * L)


def corollary2_iterations(*, L, p, lam, Delta, eps):
    """Corollary 2: ``T = (8 L / (p lambda)) log(2 Delta / eps)``."""
    L, lam = _pos("L", L), _pos("lam", lam)
    p = _p(p)
    return 8.0 * L / (p * lam) * np.log(2.0 * _pos("Delta", Delta) / _pos("eps", eps))


def corollary2_rate(m, n, *, a, b):
    """Corollary 2's shape in ``m`` and ``n``: ``a / sqrt(m n) + b / n`` (constants fitted, not known)."""
    m, n = _pos("m", m), _pos("n", n)
    a, b = _pos("a", a, allow_zero=True), _pos("b", b, allow_zero=True)
    return a / np.sqrt(m * n) + b / n


# Exponents of Corollary 1's first term in (sigma, d, m, n', p): the predicted log-log slopes.
COROLLARY1_EXPONENTS = {"sigma": 1.0, "d": 0.5, "m": -0.5, "n_prime": -0.5, "p": -1.0}
# The known-cluster (oracle) least-squares exponents for comparison: sigma sqrt(d / (p m n')).
ORACLE_EXPONENTS = {"sigma": 1.0, "d": 0.5, "m": -0.5, "n_prime": -0.5, "p": -0.5}
