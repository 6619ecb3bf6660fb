"""Tests of the loss constants (Assumptions 3-5) and of the studies T2 and C2 (Section 5.2).

Both studies are records (``mixlinreg/theory/studies/t2.py``, ``c2.py``); their smoke presets run
here through :func:`mixlinreg.theory.run_study`.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import mixlinreg as mlr
from mixlinreg.theory import CAVEAT, HOLDS, NOT_SUPPORTED, VERDICTS, run_study
from mixlinreg.theory.studies import c2, get
from mixlinreg.theory.bounds import theorem2_factor
from mixlinreg.theory.constants import (loss_constants, loss_parts, population_minimizers,
                                        sample_cluster, squared_analytic)
from mixlinreg.theory.convex import (c2_verdicts, draw_cluster_data, init_at_distance,
                                     log_allowance, nnls_rate, t2_verdict, theta_star_of,
                                     transient_mask)
from mixlinreg.stats import Fit, contraction_factor, loglog_slope

# ------------------------------------------------------------------------------ constants


def test_squared_analytic_hand_values():
    # theta* = 0, l2 = 0: e_max = radius = 1, sigma = 1, d = 3
    c = squared_analytic(np.zeros((1, 3)), sigma=1.0, radius=1.0)
    assert c["lam"] == c["L"] == 2.0
    assert c["eta2"] == pytest.approx(2 * (1 + 1) ** 2)
    assert c["v2"] == pytest.approx(4 * (4 * 1 + 3 * 1))
    # ridge: the minimizer shrinks to 2 theta*/(2 + l2) and e_max grows by l2 |theta*|/(2 + l2)
    c = squared_analytic(np.array([[2.0, 0.0]]), sigma=0.0, radius=0.5, l2=2.0)
    np.testing.assert_allclose(c["centers"], [[1.0, 0.0]])
    assert c["e_max"] == pytest.approx(1.5)
    assert c["lam"] == c["L"] == 4.0


def test_squared_monte_carlo_matches_analytic(global_random_seed):
    # The Monte Carlo path (line search, Hessians, variances) against the closed forms. With
    # n_samples = 200000: the sample covariance's extreme eigenvalues deviate by ~2 sqrt(d/N)
    # = 0.8%, the sample variance of a scaled chi^2_1 by sqrt(56/N)/2 = 0.8%, v^2 (a sum over d
    # coordinates) by less; 5% is > 5 standard deviations. The line minimizer (2e5 draws) errs
    # by ~1e-3.
    ts = np.array([[1.0, 0.0, 0.0], [0.0, -0.5, 0.5]])
    kw = dict(radius=0.4, sigma=0.7, l2=0.3)
    a = loss_constants("squared", ts, **kw)
    b = loss_constants("squared", ts, method="monte_carlo", n_samples=200_000, n_line=200_000,
                       n_points=8, rng=global_random_seed, **kw)
    assert a.method == "analytic" and b.method == "monte_carlo"
    for name in ("lam", "L", "eta2", "v2"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=0.05), name
    np.testing.assert_allclose(b.centers, a.centers, atol=1e-2)
    assert b.delta == pytest.approx(a.delta, abs=2e-2)


def test_logistic_hessian_matches_quadrature(global_random_seed):
    # Independent computation: for x ~ N(0, I) and theta = c u, E[s'(x.theta) x x^T] has eigenvalue
    # E[s'(c g)] (d - 1 times, across u) and E[s'(c g) g^2] (along u), g ~ N(0, 1): Gauss-Hermite.
    ts = np.array([[2.0, 0.0, 0.0, 0.0]])
    l2 = 0.1
    c = loss_constants("logistic", ts, radius=0.0, l2=l2, n_samples=200_000, n_line=400_000,
                       n_points=1, rng=global_random_seed)
    cnorm = float(np.linalg.norm(c.centers[0]))
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    sp = expit(cnorm * x) * (1 - expit(cnorm * x))
    ev = np.array([w @ sp, w @ (sp * x * x)]) + l2
    # MC relative error of the Hessian entries ~ a few 1e-3 at N = 2e5
    assert c.lam == pytest.approx(ev.min(), rel=0.02)
    assert c.L == pytest.approx(ev.max(), rel=0.02)
    # the minimizer solves c (E[s'(c g)] + l2) = R E[s'(R g)] (Stein's lemma on the line)
    spR = expit(2.0 * x) * (1 - expit(2.0 * x))
    lhs = cnorm * (w @ sp + l2)
    assert lhs == pytest.approx(2.0 * (w @ spR), rel=5e-3)


def test_minimizer_routes_agree():
    # Line search (symmetry) and full-dimensional damped Newton on independent samples.
    ts = np.array([[0.0, 1.5, 0.0]])
    kw = dict(sigma=1.0, df=5.0, l2=0.2, huber_delta=1.0)
    a, ma = population_minimizers("huber", ts, n_line=1_000_000, rng=0, **kw)
    b, mb = population_minimizers("huber", ts, symmetric=False, n_samples=200_000, rng=1, **kw)
    assert ma == mb == "monte_carlo"
    assert a[0, 0] == a[0, 2] == 0.0
    # full-dimensional MC error ~ sqrt(d / N) / curvature ~ 5e-3; 3e-2 is a wide margin
    np.testing.assert_allclose(a, b, atol=3e-2)
    assert 0 < a[0, 1] < 1.5  # the ridge shrinks the minimizer


def test_loss_parts_derivatives():
    # finite differences of ell in z
    rng = np.random.default_rng(0)
    z, y = rng.normal(size=50), rng.normal(size=50)
    for loss, yy in (("squared", y), ("logistic", (y > 0).astype(float)), ("huber", y)):
        h = 1e-6
        ell, d1, _ = loss_parts(loss, z, yy, 0.7)
        fd = (loss_parts(loss, z + h, yy, 0.7)[0] - loss_parts(loss, z - h, yy, 0.7)[0]) / (2 * h)
        np.testing.assert_allclose(d1, fd, atol=1e-5)


def test_sample_cluster_conventions():
    gen = np.random.default_rng(3)
    X, y, _ = sample_cluster("huber", np.zeros(2), 200_000, sigma=2.0, df=5.0, rng=gen)
    assert np.var(y) == pytest.approx(4.0, rel=0.05)  # unit-variance t scaled by sigma
    X, y, ym = sample_cluster("logistic", np.array([1.0, 0.0]), 100_000, rng=gen)
    assert set(np.unique(y)) <= {0.0, 1.0}
    np.testing.assert_allclose(ym, expit(X[:, 0]))


def test_constants_input_errors():
    ts = np.eye(2)
    with pytest.raises(ValueError, match="loss"):
        loss_constants("hinge", ts, radius=1.0)
    with pytest.raises(ValueError, match="sigma is required"):
        loss_constants("huber", ts, radius=1.0)
    with pytest.raises(ValueError, match="sigma must be None"):
        loss_constants("logistic", ts, radius=1.0, sigma=1.0)
    with pytest.raises(ValueError, match="radius"):
        loss_constants("squared", ts, radius=-1.0, sigma=1.0)
    with pytest.raises(ValueError, match="analytic"):
        loss_constants("logistic", ts, radius=1.0, method="analytic")
    with pytest.raises(ValueError, match="df"):
        loss_constants("huber", ts, radius=1.0, sigma=1.0, df=2.0)


# ------------------------------------------------------------------------------ verdict logic


def test_t2_verdict_rules():
    assert t2_verdict(Fit(0.6, 0.55, 0.65, 8), 0.5, 0.1, 0.25) == HOLDS
    # a contraction slower than the bound (factor 0.99 against 1 - 0.5*0.1/(8*0.25) = 0.975)
    assert t2_verdict(Fit(0.99, 0.985, 0.995, 8), 0.5, 0.1, 0.25) == NOT_SUPPORTED


def test_contraction_pipeline_recovers_factor():
    # Synthetic error trajectories e_t = e_0 f^t + floor: the transient mask and the contraction
    # fit recover f, and the Theorem 2 rule decides by it. Noise is multiplicative 1%.
    rng = np.random.default_rng(0)
    t = np.arange(31)
    bound = float(theorem2_factor(0.5, 0.1, 0.25))  # 0.975
    for f, expect in ((0.6, HOLDS), (0.995, NOT_SUPPORTED)):
        e = (0.5 * f ** t + 1e-4)[None] * np.exp(rng.normal(0, 0.01, (10, t.size)))
        if f > 0.9:  # a slow contraction never reaches its floor within 30 steps: floor is 0
            e = 0.5 * f ** t[None] * np.exp(rng.normal(0, 0.01, (10, t.size)))
            mask = np.ones((10, t.size - 1), dtype=bool)
        else:
            mask, _ = transient_mask(e)
            assert mask.any(axis=1).all()
        fit = contraction_factor(e, mask, rng=0)
        assert fit.est == pytest.approx(f, rel=0.02)
        assert t2_verdict(fit, 0.5, 0.1, 0.25) == expect, (f, bound)


def test_c2_rules_on_synthetic_power_laws():
    rng = np.random.default_rng(1)
    n = np.repeat([5.0, 10, 20, 40, 80], 8)
    m = np.repeat([20.0, 50, 100, 200, 400], 8)
    noise = lambda: np.exp(rng.normal(0, 0.05, n.size))  # noqa: E731
    good_n = loglog_slope(n, 2 / np.sqrt(100 * n) + 0.5 / n * noise(), rng=0)
    good_m = loglog_slope(m, 2 / np.sqrt(m * 10) * noise(), rng=0)
    assert c2_verdicts(good_n, [good_m], 0.15) == [HOLDS, HOLDS]
    # deliberately wrong: error growing with n' (slope +0.2) and with m (slope +0.5)
    bad_n = loglog_slope(n, n**0.2 * noise(), rng=0)
    bad_m = loglog_slope(m, m**0.5 * noise(), rng=0)
    assert c2_verdicts(bad_n, [bad_m], 0.15) == [NOT_SUPPORTED, NOT_SUPPORTED]
    # a slope of -1/2 + 0.3 is clearly above -1/2 + allowance 0.15
    assert c2_verdicts(Fit(-0.2, -0.25, -0.15, 40), [], 0.15) == [NOT_SUPPORTED]


def test_nnls_rate_and_allowance():
    m = np.array([20.0, 100, 100, 100, 400])
    n = np.array([10.0, 5, 20, 80, 10])
    a, b = nnls_rate(m, n, 1.5 / np.sqrt(m * n) + 0.3 / n)
    assert (a, b) == (pytest.approx(1.5), pytest.approx(0.3))
    a, b = nnls_rate(m, n, 1.5 / np.sqrt(m * n))
    assert b == pytest.approx(0.0, abs=1e-12) and a == pytest.approx(1.5)
    # local log-log slope of log(m n') in n' is 1 / log(m n'): check by finite differences
    mn = 200.0
    h = 1e-6
    fd = (np.log(np.log(mn * np.exp(h))) - np.log(np.log(mn))) / h
    assert log_allowance([20], [10]) == pytest.approx(fd, rel=1e-4)
    with pytest.raises(ValueError, match="m, n_prime, err"):
        nnls_rate([1.0], [1.0], [1.0])


def test_transient_mask_is_a_prefix():
    e = np.array([[1.0, 0.5, 0.05, 0.5, 0.01, 0.01, 0.01, 0.01, 0.01]])
    mask, floor = transient_mask(e, mult=5.0, tail=5)
    assert floor[0] == pytest.approx(0.01)
    assert mask[0].tolist() == [True, False, False, False, False, False, False, False]
    with pytest.raises(ValueError, match="mult"):
        transient_mask(e, mult=1.0)


def test_oracle_equals_ifca_with_correct_labels():
    # C2 reuses IFCA's errors as the oracle's when no machine was misclassified: check the update
    # equivalence (step 1/L with divisor m = step p_j/L with divisor m_j) on a separated problem.
    gen = np.random.default_rng(5)
    ts = theta_star_of(3.0)
    sizes, T, L = [6, 14], 6, 0.3
    X, y, labels = draw_cluster_data("logistic", ts, sizes, 2 * 40 * T, gen)
    init = init_at_distance(ts * 0.6, 0.3, 1, gen)
    res = mlr.ifca(X, y, init, 1 / L, n_iter=T, loss="logistic", l2=0.05, resample=True,
                   trace=True)
    assert (res.trace.labels[:T] == labels).all()
    for j in range(2):
        sel = labels == j
        o = mlr.ifca(X[sel], y[sel], init[:, j:j + 1], sizes[j] / 20 / L, n_iter=T,
                     loss="logistic", l2=0.05, resample=True)
        np.testing.assert_allclose(o.theta[0, 0], res.theta[0, j], atol=1e-12)


def test_init_at_distance_exact():
    c = np.array([[1.0, 0.0], [0.0, 2.0]])
    init = init_at_distance(c, 0.25, 5, np.random.default_rng(0))
    np.testing.assert_allclose(np.linalg.norm(init - c[None], axis=2), 0.25)


# ------------------------------------------------------------------------------ smoke runs


@pytest.mark.parametrize("study, columns", [
    ("T2", {"loss", "config", "p", "p_j", "n_prime", "seed", "cluster", "t", "err", "mis",
            "lam", "L", "radius"}),
    ("C2", {"loss", "m", "n_prime", "T", "seed", "err_ifca", "err_oracle", "mis_late",
            "oracle_run", "plateau_ratio"}),
])
def test_smoke_run(study, columns, tmp_path):
    r = run_study(study, preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS
    assert (tmp_path / f"{study}_smoke.png").exists()
    assert (tmp_path / f"{study}_smoke.json").exists()
    table = pd.read_csv(tmp_path / f"{study}_smoke.csv")
    assert columns <= set(table.columns)
    assert len(r.numbers) <= 15
    assert r.summary and r.claim and "Section 5.2" in r.location
    if study == "C2":
        assert r.location == get("C2").location
        assert "The rule is weak" in r.summary  # the audit: why the rule can hardly fail
        sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
        assert len(sens) == 2 and any("log allowance multiple" in c for c in sens)
        fits = pd.read_csv(tmp_path / "C2_smoke_fits.csv")
        assert {"n_slope", "m_slope_n10", "a", "b"} <= set(fits["quantity"])


def test_c2_units_and_overall_rule():
    params = get("C2").config("smoke").values
    names = [n for n, _ in c2.units(params)]
    # the n' sweep at m0 = 20 and the m sweep at n' = 10, both losses, no cell twice
    assert names == [f"c2_{loss}_m={m}_n={n}" for loss in ("logistic", "huber")
                     for m, n in [(10, 10), (20, 5), (20, 10)]]
    bad = {"params": dict(params["params"], losses=["squared"]), "margins": params["margins"]}
    with pytest.raises(ValueError, match="params.losses"):
        c2.units(bad)
    good = Fit(-0.6, -0.7, -0.55, 30)
    f = {"n_slope": good, "m_slopes": {10: Fit(-0.1, -0.2, 0.02, 30)}, "log_allowance": 0.15,
         "b": Fit(0.5, 0.2, 0.8, 6), "excess_large": Fit(0.0005, 0.0, 0.001, 16),
         "pred_excess_large": 0.5 / 160}
    assert c2._rules(f, 1.0) == [HOLDS, HOLDS]
    assert c2._rules(f, 0.0) == [HOLDS, "inconclusive"]  # no allowance: 0.02 > 0
    # the excess at the largest n' (<= 0.001) is below half of b/n' = 0.003125: 1/n' term loose
    assert c2._overall({"x": f}, 1.0, 0.5) == CAVEAT
    assert c2._overall({"x": f}, 1.0, 0.25) == HOLDS
