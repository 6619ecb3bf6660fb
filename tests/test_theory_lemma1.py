"""Tests of study L1 (Lemma 1): exact misclassification law, its exponent, the verdict logic."""

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

from mixlinreg.theory import VERDICTS, run_study
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED
from mixlinreg.theory.bounds import lemma1_exponent_form
from mixlinreg.stats import _betacf
from mixlinreg.theory.lemma1 import (chernoff_exponent, exponent_from_angles, form_verdict,
                                     log_f_cdf, mc_agreement_verdict, misclassification_probability,
                                     placement, residual_eigenvalues, simulate_misclassification,
                                     worst_placement)
from mixlinreg.theory.studies import get
from mixlinreg.theory.studies import l1

ALPHA = np.geomspace(0.005, 0.45, 7)
RHO = np.geomspace(0.01, 1000.0, 9)
A, R = np.meshgrid(ALPHA, RHO, indexing="ij")
FORM = lemma1_exponent_form(A, R)


# ----------------------------------------------------------------------------- verdict logic


def test_form_verdict_planted_form_holds():
    fv = form_verdict(ALPHA, RHO, 3.0 * FORM)
    assert fv.verdict == HOLDS
    assert fv.c2 == pytest.approx(3.0)
    assert fv.spread == pytest.approx(1.0)


def test_form_verdict_alpha_cubed_not_supported():
    # exponent ~ alpha^3: the ratio to alpha^2 falls like alpha toward alpha -> 0: no universal c2
    fv = form_verdict(ALPHA, RHO, FORM * A)
    assert fv.verdict == NOT_SUPPORTED
    assert fv.edge_verdicts["alpha->0"] == NOT_SUPPORTED
    assert fv.edges["alpha->0"].est == pytest.approx(1.0)


def test_form_verdict_rho_edges_not_supported():
    # rho^3 at small rho (ratio -> 0 as rho -> 0) and decay at large rho (ratio -> 0 as rho -> inf)
    assert form_verdict(ALPHA, RHO, FORM * R / (R + 1)).edge_verdicts["rho->0"] == NOT_SUPPORTED
    fv = form_verdict(ALPHA, RHO, FORM / np.sqrt(1 + R))
    assert fv.edge_verdicts["rho->inf"] == NOT_SUPPORTED and fv.verdict == NOT_SUPPORTED


def test_form_verdict_loose_is_caveat():
    # alpha^2 rho / (rho + 1): valid (ratio >= 1) but growing like 1/rho toward rho -> 0
    fv = form_verdict(ALPHA, RHO, A**2 * R / (R + 1))
    assert fv.verdict == CAVEAT
    assert fv.loose == ["rho->0"]
    assert fv.edges["rho->0"].est == pytest.approx(-1.0, abs=0.05)  # -1/(1+rho) locally


def test_form_verdict_bending_edge_is_inconclusive():
    # log ratio vs log alpha: slope 0 on the first segment, 0.2 on the second -> undecided
    g = np.ones(ALPHA.size)
    g[2:] = (ALPHA[2:] / ALPHA[1]) ** 0.2
    fv = form_verdict(ALPHA, RHO, FORM * g[:, None])
    assert fv.edge_verdicts["alpha->0"] == INCONCLUSIVE
    assert fv.verdict == INCONCLUSIVE


def test_form_verdict_errors():
    with pytest.raises(ValueError, match="alpha must be"):
        form_verdict([0.1, 0.2, 0.6], RHO, np.ones((3, RHO.size)))
    with pytest.raises(ValueError, match="exponent must be"):
        form_verdict(ALPHA, RHO, np.zeros((ALPHA.size, RHO.size)))
    with pytest.raises(ValueError, match="tol must be"):
        form_verdict(ALPHA, RHO, FORM, tol=-1)


def test_mc_agreement_verdict():
    # Binomial(100, 0.01) 99.9% quantile is 5
    assert mc_agreement_verdict(5, 100) == HOLDS
    assert mc_agreement_verdict(6, 100) == NOT_SUPPORTED
    assert mc_agreement_verdict(0, 0) == INCONCLUSIVE


# ----------------------------------------------------------------------------- exact law


def _random_case(rng, d=4):
    a = rng.normal(size=d) * 0.4
    b = rng.normal(size=d) + 1.5 * np.eye(d)[0]
    return a, b, float(rng.uniform(0.2, 1.5))


def test_exact_probability_against_monte_carlo(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    a, b, s = placement("orthogonal_opposite", 0.1, 2.0)
    n_prime, n_machines = 12, 40_000
    p = float(misclassification_probability(a, b, s, n_prime))
    assert 0.02 < p < 0.5
    wrong = simulate_misclassification(a, b, s, n_prime, n_machines, rng)
    # binomial standard error; 5 standard errors: false alarm probability < 1e-6 for any seed
    se = np.sqrt(p * (1 - p) / n_machines)
    assert abs(wrong / n_machines - p) < 5 * se


def test_cauchy_noise_does_not_concentrate_and_gaussian_is_the_default(global_random_seed):
    # L1's control: with Cauchy noise the comparison of the two losses does not concentrate, so
    # at n' = 256 far more machines are misclassified than the lemma's Gaussian law allows
    a, b, s = placement("collinear", 0.25, 1.0)
    p = float(misclassification_probability(a, b, s, 256))
    assert p < 1e-3
    ss = np.random.SeedSequence(global_random_seed)
    wrong = simulate_misclassification(a, b, s, 256, 4000, np.random.default_rng(ss),
                                       noise="cauchy")
    assert wrong / 4000 > 0.05
    # the default noise is the lemma's: the same draws as noise="gaussian"
    g1 = simulate_misclassification(a, b, s, 8, 3000, np.random.default_rng(ss))
    g2 = simulate_misclassification(a, b, s, 8, 3000, np.random.default_rng(ss), noise="gaussian")
    assert g1 == g2
    with pytest.raises(ValueError, match="noise must be 'gaussian' or 'cauchy', got 'student'"):
        simulate_misclassification(a, b, s, 8, 10, 0, noise="student")
    assert get("L1").config("paper").values["params"]["noise"] == "gaussian"


def test_monte_carlo_in_high_dimension_matches(global_random_seed):
    # d = 200: the simulation draws x in span(a, b); the exact law does not depend on d either
    rng = np.random.default_rng(global_random_seed)
    a, b, s = placement("random", 0.2, 1.0, d=200, rng=rng)
    p = float(misclassification_probability(a, b, s, 8))
    wrong = simulate_misclassification(a, b, s, 8, 30_000, rng)
    assert abs(wrong / 30_000 - p) < 5 * np.sqrt(p * (1 - p) / 30_000)


@pytest.mark.parametrize("n_prime", [1, 3, 6])
def test_f_cdf_against_numerical_integration(n_prime):
    a, b, s = _random_case(np.random.default_rng(3))
    lam1, lam2 = residual_eigenvalues(a, b, s)
    # Q = lam1 X + lam2 Y, X, Y ~ chi2(n') independent: P(Q < 0) = E_X[ P(Y < |lam1| X / lam2) ]
    chi = stats.chi2(n_prime)
    val, err = integrate.quad(lambda x: chi.pdf(x) * chi.cdf(-lam1 * x / lam2), 0, np.inf,
                              epsabs=1e-13, epsrel=1e-11, limit=200)
    assert float(misclassification_probability(a, b, s, n_prime)) == pytest.approx(val, rel=1e-8)


def test_eigenvalues_against_linear_algebra():
    a, b, s = _random_case(np.random.default_rng(4))
    A, B, C = a @ a + s**2, b @ b + s**2, a @ b + s**2
    ev = np.sort(np.linalg.eigvals(np.diag([-1.0, 1.0]) @ np.array([[A, C], [C, B]])).real)
    np.testing.assert_allclose(residual_eigenvalues(a, b, s), ev, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chernoff_exponent_against_mgf_minimization(seed):
    a, b, s = _random_case(np.random.default_rng(seed))
    A, B, C = a @ a + s**2, b @ b + s**2, a @ b + s**2
    lam1, lam2 = np.sort(np.linalg.eigvals(np.diag([-1.0, 1.0]) @ np.array([[A, C], [C, B]])).real)
    # log E exp(-s Q) / n' = -(1/2) log((1 + 2 s lam1)(1 + 2 s lam2)), finite for s < 1/(2|lam1|)
    res = optimize.minimize_scalar(lambda t: -0.5 * np.log((1 + 2 * t * lam1) * (1 + 2 * t * lam2)),
                                   bounds=(0.0, 1 / (2 * abs(lam1))), method="bounded",
                                   options={"xatol": 1e-12})
    assert chernoff_exponent(a, b, s) == pytest.approx(-res.fun, rel=1e-8)


def test_chernoff_bound_and_rate():
    a, b, s = _random_case(np.random.default_rng(5))
    E = chernoff_exponent(a, b, s)
    n = np.unique(np.geomspace(1, 3000 / E, 50).astype(int))
    lp = misclassification_probability(a, b, s, n, log=True)
    assert np.all(lp <= -n * E + 1e-12)  # Chernoff: P <= exp(-n' E) for every n'
    # large deviations: log P = -n'E - (1/2) log n' + O(1), so the slope far out is -E
    n1, n2 = 2000 / E, 3000 / E
    l1, l2 = misclassification_probability(a, b, s, np.round([n1, n2]), log=True)
    assert -(l2 - l1) / (np.round(n2) - np.round(n1)) == pytest.approx(E, rel=2e-3)


def test_log_f_cdf_continued_fraction_matches_betainc():
    from scipy import special

    h = np.array([30.0, 300.0, 3000.0])
    x = 0.35
    front = h * np.log(x) + h * np.log1p(-x) - special.betaln(h, h) - np.log(h)
    np.testing.assert_allclose(front + np.log(_betacf(h, h, np.full(3, x))),
                               np.log(special.betainc(h, h, x)), rtol=1e-10)
    # beyond the float range the log stays finite and agrees with scipy where scipy is finite
    q = 0.4
    n = np.array([10, 1000, 100_000])
    lp = log_f_cdf(q, n)
    assert np.all(np.isfinite(lp)) and lp[-1] < -1e4
    assert lp[1] == pytest.approx(stats.f.logcdf(q, 1000, 1000), rel=1e-10)


def test_degenerate_and_edge_cases():
    assert float(misclassification_probability([0.0], [1.0], 0.0, 3)) == 0.0
    assert chernoff_exponent([0.0], [1.0], 0.0) == np.inf
    assert chernoff_exponent([1.0], [0.5], 0.3) == 0.0  # the other model fits better: no decay
    assert float(misclassification_probability([1.0], [0.5], 0.0, 4)) == 1.0


# ----------------------------------------------------------------------------- placements


@pytest.mark.parametrize("kind", ["collinear", "orthogonal_same", "orthogonal_opposite", "random"])
def test_placements_at_the_allowed_distance(kind):
    alpha, delta = 0.2, 2.0
    a, b, s = placement(kind, alpha, 4.0, delta=delta, d=50, rng=0)
    # own model theta_j = -a (truth 0), other theta_j' = -b (truth Delta e1)
    assert np.linalg.norm(a) == pytest.approx((0.5 - alpha) * delta)
    assert np.linalg.norm(-b - delta * np.eye(50)[0]) == pytest.approx((0.5 - alpha) * delta)
    assert s == pytest.approx(delta / 2.0)


def test_collinear_alpha_cancels():
    rho = 3.0
    n = np.array([1, 5, 40, 400])
    ref = misclassification_probability(*placement("collinear", 0.01, rho), n, log=True)
    for alpha in (0.1, 0.3, 0.49):
        a, b, s = placement("collinear", alpha, rho)
        np.testing.assert_allclose(misclassification_probability(a, b, s, n, log=True), ref,
                                   rtol=1e-12)
        assert chernoff_exponent(a, b, s) == pytest.approx(0.5 * np.log1p(rho / 4), rel=1e-12)


def test_worst_placement_is_a_minimum():
    alpha, rho = 0.15, 5.0
    w = worst_placement(alpha, rho, n_grid=25)
    a, b, s = placement("angles", alpha, rho, angles=(w["phi1"], w["phi2"], w["psi"]))
    assert chernoff_exponent(a, b, s) == pytest.approx(w["E"], rel=1e-10)
    rng = np.random.default_rng(0)
    ang = rng.uniform(0, np.pi, size=(3, 20000))
    t = rng.uniform(0, 1, size=(2, 20000))
    assert np.all(exponent_from_angles(alpha, rho, *ang) >= w["E"] * (1 - 1e-9))
    assert np.all(exponent_from_angles(alpha, rho, *ang, *t) >= w["E"] * (1 - 1e-9))
    for kind in ("collinear", "orthogonal_same", "orthogonal_opposite"):
        assert chernoff_exponent(*placement(kind, alpha, rho)) >= w["E"]
    assert w["E_interior"] == pytest.approx(w["E"], rel=1e-6)


def test_input_errors():
    with pytest.raises(ValueError, match="alpha must be in"):
        placement("collinear", 0.5, 1.0)
    with pytest.raises(ValueError, match="rho must be"):
        placement("collinear", 0.1, -1.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        placement("diagonal", 0.1, 1.0)
    with pytest.raises(ValueError, match="n_prime must be integers"):
        misclassification_probability([0.0], [1.0], 1.0, 0)
    with pytest.raises(ValueError, match="same length"):
        chernoff_exponent([0.0, 1.0], [1.0], 1.0)
    with pytest.raises(ValueError, match="sigma must be"):
        chernoff_exponent([0.0], [1.0], -1.0)
    with pytest.raises(ValueError, match="n_machines must be"):
        simulate_misclassification([0.0], [1.0], 1.0, 3, 0)


# ----------------------------------------------------------------------------- smoke run


def test_l1_smoke(tmp_path):
    out, store = tmp_path / "out", tmp_path / "store"
    r = run_study("L1", preset="smoke", out=out, store=store)
    assert r.verdict in VERDICTS
    assert (out / "L1_smoke.png").exists() and (out / "L1_smoke.json").exists()
    table = pd.read_csv(out / "L1_smoke_grid.csv")
    assert {"alpha", "rho", "E_worst", "form", "ratio", "phi1", "phi2", "psi",
            "E_collinear"} <= set(table.columns)
    assert np.all(table["ratio"] > 0)
    curves = pd.read_csv(out / "L1_smoke.csv")  # every unit's rows
    assert {"part", "placement", "n_prime", "log_p", "E", "unit"} <= set(curves.columns)
    curves = curves[curves["part"] != "grid"]
    assert set(curves["placement"]) == {"collinear", "orthogonal_same", "orthogonal_opposite",
                                        "random", "worst"}
    assert (curves["part"] == "mc").any()
    mc = pd.read_csv(out / "L1_smoke_mc.csv")
    assert {"mc_wrong", "mc_machines", "p_exact", "mc_lo", "mc_hi", "inside"} <= set(mc.columns)
    assert np.all((mc["mc_lo"] <= mc["mc_p"]) & (mc["mc_p"] <= mc["mc_hi"]))
    assert 1 <= len(r.numbers) <= 20
    # a record: the location is the study's own, and every margin has its sensitivity line
    assert r.location == get("L1").location and "Lemma 1 in Appendix A" in r.location
    margins = get("L1").config("smoke").values["margins"]
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == len([k for k in margins if not k.endswith("_neighbours")])
    again = run_study("L1", preset="smoke", out=out, store=store)
    assert again.units_computed == 0 and again.verdict == r.verdict  # resumed, same verdict
    assert again.summary == r.summary


def test_l1_units_are_named_and_config_checked():
    params = get("L1").config("smoke").values
    names = [n for n, _ in l1.units(params)]
    assert len(set(names)) == len(names)
    p = params["params"]
    assert sum(n.startswith("grid_") for n in names) == p["n_alpha"]
    assert sum(n.startswith("curves_") for n in names) == len(p["config_alpha"])
    assert "curves_alpha=0.05_rho=100" in names
    bad = {**params, "params": {**p, "config_rho": p["config_rho"][:-1]}}
    with pytest.raises(ValueError, match="same length"):
        l1.units(bad)
    bad = {**params, "params": {**p, "config_alpha": [0.05, 0.05], "config_rho": [1.0, 1.0]}}
    with pytest.raises(ValueError, match="must differ"):
        l1.units(bad)
    bad = {**params, "params": {**p, "slope_nE_lo": 700.0}}
    with pytest.raises(ValueError, match="slope_nE_lo"):
        l1.units(bad)


def test_l1_curve_unit_draws_only_from_its_stream():
    params = get("L1").config("smoke").values
    p = {**params["params"], "n_random": 2, "mc_machines": 200, "mc_n_max": 4, "n_curve": 5}
    spec = {"part": "curves", "config": 0, "alpha": 0.25, "rho": 1.0}
    one = l1.compute(spec, {**params, "params": p}, np.random.default_rng(3), None)
    two = l1.compute(spec, {**params, "params": p}, np.random.default_rng(3), None)
    pd.testing.assert_frame_equal(one, two)
    other = l1.compute(spec, {**params, "params": p}, np.random.default_rng(4), None)

    def fixed(df):  # the named and the worst placements' exact curves do not use the stream
        keep = (df["part"] == "curve") & (df["placement"] != "random")
        return df[keep].dropna(axis=1, how="all").reset_index(drop=True)

    pd.testing.assert_frame_equal(fixed(one), fixed(other))
    rand_one, rand_other = (df[(df["part"] == "curve") & (df["placement"] == "random")]
                            for df in (one, other))
    assert not np.allclose(rand_one["log_p"].to_numpy(), rand_other["log_p"].to_numpy())


def test_l1_rate_fits_recover_a_planted_slope():
    n = np.arange(100, 116)
    curves = pd.DataFrame({"part": "rate", "config": 0, "alpha": 0.1, "rho": 1.0,
                           "placement": "collinear", "draw": 0, "n_prime": n, "E": 0.5,
                           "log_p": -0.5 * n + 3.0})
    f = l1.rate_fits(curves)
    assert len(f) == 1
    assert f["ratio"].iloc[0] == pytest.approx(1.0)
    assert f["ratio_lo"].iloc[0] == pytest.approx(1.0) and f["ratio_hi"].iloc[0] == pytest.approx(1.0)
