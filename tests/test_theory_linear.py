"""Studies T1 (Theorem 1) and C1 (Corollary 1): verdict rules, exact formulas, the C1 record.

The T1 study record itself (region rule, starts, smoke run) is tested in ``test_theory_t1.py``;
the C1 record (``mixlinreg/theory/studies/c1.py``) here.

Monte Carlo tolerances: a sample mean of ``n`` independent draws is compared with its exact
expectation within 4 standard errors (estimated from the same draws), a false alarm rate of about
6e-5 per comparison for the near-Gaussian means used here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import mixlinreg as mlr
from mixlinreg.baselines import oracle
from mixlinreg.theory import VERDICTS, run_study
from mixlinreg.theory import linear as L
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED
from mixlinreg.theory.studies import c1, get
from mixlinreg.theory.studies.t1 import _exp_fit
from mixlinreg.stats import Fit, linear_slope, loglog_slope


def _close_in_se(samples, expected, n_se=4.0):
    samples = np.asarray(samples, dtype=float)
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    assert abs(samples.mean() - expected) <= n_se * se, (samples.mean(), expected, se)


def _simulate_steps(rng, g, d, N, n_seeds, n_steps):
    """Correctly clustered noiseless steps e+ = (I - 2 g S) e, S from N fresh Gaussian rows.

    Returns the per-seed mean log ratio (the statistic the T1 study bootstraps over data sets).
    """
    out = np.empty(n_seeds)
    for s in range(n_seeds):
        e = rng.standard_normal(d)
        logs = []
        for _ in range(n_steps):
            X = rng.standard_normal((N, d))
            e_new = e - 2.0 * g * X.T @ (X @ e) / N
            logs.append(math.log(np.linalg.norm(e_new) / np.linalg.norm(e)))
            e = e_new
        out[s] = np.mean(logs)
    return out


# ------------------------------------------------------------------------------ verdict rules


def test_t1_verdict_cases():
    mg = 0.01  # the margin of mixlinreg/configs/studies/T1.toml
    assert L.t1_verdict(Fit(0.49, 0.48, 0.499, 10), allowance=0.51, margin=mg) == HOLDS
    assert L.t1_verdict(Fit(0.51, 0.505, 0.515, 10), allowance=0.51, margin=mg) == CAVEAT
    assert L.t1_verdict(Fit(0.8, 0.79, 0.81, 10), allowance=0.51, margin=mg) == NOT_SUPPORTED
    assert L.t1_verdict(Fit(0.52, 0.5, 0.54, 10), allowance=0.51, margin=mg) == INCONCLUSIVE
    # margin 0: just above the allowance is no longer within it
    assert L.t1_verdict(Fit(0.515, 0.512, 0.518, 10), allowance=0.51, margin=0.0) == NOT_SUPPORTED
    with pytest.raises(ValueError, match="allowance"):
        L.t1_verdict(Fit(0.5, 0.4, 0.6, 10), allowance=-1.0, margin=mg)
    with pytest.raises(TypeError, match="margin"):  # no threshold hides in the code
        L.t1_verdict(Fit(0.5, 0.4, 0.6, 10), allowance=0.51)


def test_t1_rule_on_simulated_contraction(global_random_seed):
    """The rule run on simulated correct-cluster steps: gamma p = 1/4 is within the claim,
    gamma p_j = 1 (largest cluster at p_j = 4p) and a deliberately wrong claim of 0.3 are not."""
    rng = np.random.default_rng(global_random_seed)
    d, N = 10, 1000
    logs = _simulate_steps(rng, 0.25, d, N, n_seeds=30, n_steps=5)
    fit = _exp_fit(logs, 2000, rng)
    allowance = float(L.t1_allowance(0.25, d, N))
    assert L.t1_verdict(fit, allowance, margin=0.01) in (HOLDS, CAVEAT)
    assert L.t1_verdict(fit, allowance=0.3, claimed=0.3, margin=0.01) == NOT_SUPPORTED  # wrong

    logs_big = _simulate_steps(rng, 1.0, d, N, n_seeds=30, n_steps=5)
    fit_big = _exp_fit(logs_big, 2000, rng)
    assert L.t1_verdict(fit_big, float(L.t1_allowance(1.0, d, N)), margin=0.01) == NOT_SUPPORTED


def test_exponent_verdicts_on_power_laws(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    d = np.repeat([5.0, 10.0, 20.0, 40.0, 80.0], 6)
    y = np.array([L.stationary_rms(0.25, 0.1, int(v), 960.0) for v in d])
    y = y * np.exp(rng.normal(0.0, 0.03, d.size))
    fit = loglog_slope(d, y, rng=rng)
    mg = 0.1  # the exponent margin of mixlinreg/configs/studies/C1.toml
    assert L.exponent_verdict(fit, 0.5, margin=mg) == HOLDS
    assert L.exponent_verdict(fit, 1.0, margin=mg) == NOT_SUPPORTED  # deliberately wrong exponent

    p = np.repeat([1 / 8, 1 / 6, 1 / 4, 1 / 3, 1 / 2], 6)
    noise = np.exp(rng.normal(0.0, 0.03, p.size))
    assert L.p_exponent_verdict(loglog_slope(p, p**-0.5 * noise, rng=rng), margin=mg) == CAVEAT
    assert L.p_exponent_verdict(loglog_slope(p, p**-1.0 * noise, rng=rng), margin=mg) == HOLDS
    assert L.p_exponent_verdict(loglog_slope(p, p**-1.6 * noise, rng=rng),
                                margin=mg) == NOT_SUPPORTED
    # no threshold hides in the code: the margin is a required argument
    with pytest.raises(TypeError, match="margin"):
        L.exponent_verdict(fit, 0.5)
    with pytest.raises(TypeError, match="margin"):
        L.p_exponent_verdict(fit)
    with pytest.raises(ValueError, match="margin"):
        L.exponent_verdict(fit, 0.5, margin=-0.1)


def test_linear_slope(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    x = np.linspace(2.0, 7.0, 60)
    y = 1 / math.log(2) * x - 1.0 + rng.normal(0, 0.3, x.size)
    fit = linear_slope(x, y, rng=rng)
    assert fit.lo <= 1 / math.log(2) <= fit.hi
    assert fit.hi - fit.lo < 0.3
    with pytest.raises(ValueError, match="distinct"):
        linear_slope([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])


# ------------------------------------------------------------------------------ exact formulas


def test_simplex_centers_and_labels(global_random_seed):
    th = L.simplex_centers(6, 20, 1.5, global_random_seed)
    D = np.linalg.norm(th[:, None] - th[None], axis=-1)
    np.testing.assert_allclose(D[~np.eye(6, dtype=bool)], 1.5, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(th, axis=1), 1.5 / math.sqrt(2), rtol=1e-12)
    lab = L.cluster_labels(100, (0.2, 0.8))
    assert np.bincount(lab).tolist() == [20, 80]
    with pytest.raises(ValueError, match="d must be in"):
        L.simplex_centers(5, 3, 1.0)
    with pytest.raises(ValueError, match="integers"):
        L.cluster_labels(10, (0.33, 0.67))
    with pytest.raises(ValueError, match="sum to 1"):
        L.cluster_labels(10, (0.3, 0.3))


@pytest.mark.parametrize("g", [0.25, 1.0])
def test_one_step_factor_monte_carlo(g):
    rng = np.random.default_rng(0)
    d, N, reps = 10, 40, 4000
    e = np.zeros(d)
    e[0] = 1.0
    X = rng.standard_normal((reps, N, d))
    Se = np.einsum("rnd,rn->rd", X, X[:, :, 0]) / N           # S e for e = e_0
    r2 = ((e[None] - 2 * g * Se) ** 2).sum(axis=1)
    _close_in_se(r2, L.one_step_factor(g, d, N) ** 2)


def test_stationary_rms_monte_carlo():
    """Independent chains of the correct-cluster recursion with noise, read after burn-in."""
    rng = np.random.default_rng(1)
    g, sigma, d, N, chains, steps = 0.25, 0.3, 8, 30, 3000, 40
    e = np.full((chains, d), 0.5)
    for _ in range(steps):  # the initial error decays like 0.5^t, negligible after 40 steps
        X = rng.standard_normal((chains, N, d))
        eps = sigma * rng.standard_normal((chains, N))
        resid = np.einsum("cnd,cd->cn", X, e) - eps
        e = e - 2 * g * np.einsum("cnd,cn->cd", X, resid) / N
    _close_in_se((e**2).sum(axis=1), L.stationary_rms(g, sigma, d, N) ** 2)
    with pytest.raises(ValueError, match="stationary"):
        L.stationary_rms(1.0, sigma, d, N)


def test_oracle_rms_monte_carlo():
    rng = np.random.default_rng(2)
    sigma, d, N, reps = 0.5, 5, 30, 4000
    err2 = np.empty(reps)
    for r in range(reps):
        X = rng.standard_normal((N, d))
        beta = np.linalg.lstsq(X, sigma * rng.standard_normal(N), rcond=None)[0]
        err2[r] = beta @ beta
    _close_in_se(err2, L.oracle_rms(sigma, d, N) ** 2)
    with pytest.raises(ValueError, match="N must be"):
        L.oracle_rms(sigma, d, d + 1)


def test_ratio_and_allowance_formulas():
    T, d, N = 18, 20, 960.0
    want = math.sqrt((2 * T * N - d - 1) / (3 * N - d - 1))
    assert L.ifca_oracle_ratio(T, d, N) == pytest.approx(want, rel=1e-12)
    assert L.ifca_oracle_ratio(18, 1, 1e9) == pytest.approx(math.sqrt(2 * 18 / 3), rel=1e-6)
    a = L.t1_allowance(0.25, d, N, sigma=0.1, err=0.05)
    assert float(a) == pytest.approx(0.5 * math.sqrt(1 + (d + 1) / N + 0.01 * d / (N * 0.0025)))
    # population factor above 1/2 is never granted: g = 1 gets 1/2 + its finite-sample excess
    assert float(L.t1_allowance(1.0, d, N)) == pytest.approx(
        0.5 + L.one_step_factor(1.0, d, N) - 1.0)


def test_kernel_step_matches_the_algebra(global_random_seed):
    """One resampled ifca step is theta - (gamma/m) sum_i (2/n') X_i^T (X_i theta - y_i) over the
    machines of the cluster, i.e. e+ = (I - 2 g S) e + 2 g X^T eps / N with g = gamma p_j."""
    rng = np.random.default_rng(global_random_seed)
    m, npr, d, sizes, sigma = 10, 15, 4, (0.3, 0.7), 0.2
    th = L.simplex_centers(2, d, 1.0, rng)
    lab = L.cluster_labels(m, sizes)
    X, y = L.linear_data(lab, th, 2 * npr, sigma, rng)
    init = mlr.init_close(th, 0.4, 1, rng=rng)
    gamma = 1 / (4 * min(sizes))
    res = mlr.ifca(X, y, init, gamma, n_iter=1, resample=True, trace=True, theta_star=th,
                   n_threads=1)
    assert (res.trace.labels[0, 0] == lab).all()
    Xg, yg = X[:, npr:2 * npr], y[:, npr:2 * npr]                  # gradient block of t = 0
    for j, pj in enumerate(sizes):
        sel = lab == j
        th0 = init[0, j]
        grad = sum(2 / npr * Xg[i].T @ (Xg[i] @ th0 - yg[i]) for i in np.flatnonzero(sel))
        np.testing.assert_allclose(res.theta[0, j], th0 - gamma / m * grad, atol=1e-12)
        Xc = Xg[sel].reshape(-1, d)
        Nj = Xc.shape[0]
        eps = yg[sel].reshape(-1) - Xc @ th[j]
        g = gamma * pj
        e_plus = (np.eye(d) - 2 * g * Xc.T @ Xc / Nj) @ (th0 - th[j]) + 2 * g * Xc.T @ eps / Nj
        np.testing.assert_allclose(res.theta[0, j] - th[j], e_plus, atol=1e-12)


def test_oracle_theta_matches_baseline(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    th = L.simplex_centers(3, 6, 1.0, rng)
    lab = L.cluster_labels(12, (1 / 3, 1 / 3, 1 / 3))
    X, y = L.linear_data(lab, th, 9, 0.3, rng)
    np.testing.assert_allclose(L.oracle_theta(X, y, lab, 3), oracle(X, y, lab).theta, atol=1e-9)


# ------------------------------------------------------------------------------ smoke runs


def _check_run(res, tmp_path, sid, columns):
    assert res.verdict in VERDICTS
    assert res.id == sid
    assert 1 <= len(res.numbers) <= 15
    assert (tmp_path / f"{sid}_smoke.png").exists()
    assert (tmp_path / f"{sid}_smoke.json").exists()
    table = pd.read_csv(tmp_path / f"{sid}_smoke.csv")
    assert set(columns) <= set(table.columns)
    assert len(table) > 0


def test_c1_smoke(tmp_path):
    res = run_study("C1", preset="smoke", out=tmp_path, store=tmp_path / "store")
    _check_run(res, tmp_path, "C1", ["factor", "level", "seed", "plateau", "oracle_rms",
                                     "emax_0", "emax_12", "mis_window", "stationary_pred"])
    assert res.numbers["what"].str.contains("exponent of eps in p").any()
    assert res.location == get("C1").location and "Corollary 1, Section 5.1" in res.location
    # the audit's scope statement, and one sensitivity line per margin of the config
    assert any("Equal cluster sizes only" in c and "p_max > 3p" in c for c in res.caveats)
    sens = [c for c in res.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 2 and any("exponent margin" in c for c in sens)
    units = pd.read_csv(tmp_path / "C1_smoke_units.csv")
    assert len(units) == 5 * 2 * 2  # factors x levels x seeds of the smoke preset
    again = run_study("C1", preset="smoke", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == res.verdict  # resumed, same verdict


def test_c1_units_are_named_and_checked():
    params = get("C1").config("smoke").values
    names = [n for n, _ in c1.units(params)]
    assert len(names) == len(set(names)) == 5 * 2 * 2
    assert "p_k4_seed1" in names and "sigma_0.025_seed0" in names
    bad = {"params": dict(params["params"], m_levels=[48, 49]), "margins": params["margins"]}
    with pytest.raises(ValueError, match="m divisible by k"):
        c1.units(bad)


def test_c1_iteration_count_from_the_trace():
    # first iterate whose max-over-clusters error is <= target x eps; -1 if none
    t = pd.DataFrame({"plateau_unit": [0.1, 0.1], "emax_0": [1.0, 1.0], "emax_1": [0.3, 0.5],
                      "emax_2": [0.15, 0.4], "emax_10": [0.1, 0.35]})
    assert c1._iters_to(t, 2.0).tolist() == [2, -1]
    assert c1._iters_to(t, 3.0).tolist() == [1, -1]


def test_oracle_theta_refuses_rank_deficient_clusters():
    X = np.zeros((4, 2, 5))
    with pytest.raises(ValueError, match="fewer than d = 5"):
        L.oracle_theta(X, np.zeros((4, 2)), np.array([0, 0, 1, 1]), 2)
