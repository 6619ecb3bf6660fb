"""Study T1 as a record (mixlinreg/theory/studies/t1.py): the region rule, the placed starts, the
first-step split of the proof, and a smoke run of the whole study."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mixlinreg.theory import VERDICTS, run_study
from mixlinreg.theory import linear as L
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED
from mixlinreg.theory.lemma1 import misclassification_probability, placement
from mixlinreg.theory.studies import get
from mixlinreg.theory.studies import t1


def test_predicted_region_and_best_factor():
    # equal sizes: |1 - 2 g| <= 1/2 for g in [1/4, 3/4]
    assert t1.predicted_region((0.5, 0.5)) == (0.25, 0.75)
    for sizes in [(0.3, 0.7), (0.25, 0.75), (0.22, 0.78), (0.2, 0.8)]:
        r = max(sizes) / min(sizes)
        lo, hi = t1.predicted_region(sizes)
        assert (hi >= lo - 1e-12) == (r <= 3 + 1e-12)
        # at the region's ends the worst cluster's population factor is exactly 1/2
        if hi >= lo:
            assert t1.population_worst(lo, sizes) == pytest.approx(0.5)
            assert t1.population_worst(hi, sizes) == pytest.approx(0.5)
        # the best worst-cluster factor, at gamma = 1/(p_min + p_max), is (r - 1)/(r + 1)
        best = min(sizes) / (min(sizes) + max(sizes))
        assert t1.population_worst(best, sizes) == pytest.approx((r - 1) / (r + 1))
        grid = np.linspace(0.01, 2.0, 4001)
        assert min(t1.population_worst(g, sizes) for g in grid) >= (r - 1) / (r + 1) - 1e-12


def test_config_verdict_rule():
    assert t1._config_verdict([NOT_SUPPORTED, CAVEAT, HOLDS]) == HOLDS
    assert t1._config_verdict([NOT_SUPPORTED, CAVEAT, INCONCLUSIVE]) == CAVEAT
    assert t1._config_verdict([NOT_SUPPORTED, NOT_SUPPORTED]) == NOT_SUPPORTED
    assert t1._config_verdict([NOT_SUPPORTED, INCONCLUSIVE]) == INCONCLUSIVE


def test_read_scopes_from_fits():
    """Point, configuration and scope verdicts from a hand-made fit table."""
    p = get("T1").config("smoke").values["params"]
    configs = t1._configs(p)
    rows = []
    for name, c in configs.items():
        for gp in (0.125, 0.5):
            for j, pj in enumerate(c["sizes"]):
                pop = abs(1 - 2 * gp * pj / min(c["sizes"]))  # the measured = the population
                rows.append({"config": name, "gamma_p": gp, "cluster": j, "factor": pop,
                             "lo": pop - 0.01, "hi": pop + 0.01, "seeds_used": 5,
                             "allowance": 0.5 + 0.005})
    fits = pd.DataFrame(rows)
    f, points, by_cfg, scopes, overall = t1._read(fits, configs, 0.01)
    assert set(points["verdict"]) <= set(VERDICTS)
    eq = [n for n in configs if n.startswith("eq")]
    assert all(by_cfg[n] == HOLDS for n in eq)  # gamma p = 1/2: factor 0
    assert scopes["equal sizes"] == HOLDS
    assert scopes["p_max > 3p"] == NOT_SUPPORTED  # 0.2/0.8 at 1/8 and 1/2: 0.75 and 1
    assert overall == NOT_SUPPORTED


@pytest.mark.parametrize("kind", ["collinear", "orthogonal_opposite", "orthogonal_same"])
def test_placed_start_matches_lemma1_placement(kind, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    th = L.simplex_centers(2, 6, 1.0, rng)
    alpha, sigma, n = 0.05, 0.5, 5
    start = t1.placed_start(th, alpha, kind, rng)
    np.testing.assert_allclose(np.linalg.norm(start - th, axis=1), 0.5 - alpha, rtol=1e-12)
    a_ref, b_ref, s_ref = placement(kind, alpha, 1 / sigma**2, delta=1.0, d=6)
    for j in range(2):  # the same misclassification probability seen from either cluster
        p = misclassification_probability(th[j] - start[j], th[j] - start[1 - j], sigma, n)
        ref = misclassification_probability(a_ref, b_ref, s_ref, n)
        assert float(p) == pytest.approx(float(ref), rel=1e-9)
    with pytest.raises(ValueError, match="kind"):
        t1.placed_start(th, alpha, "sideways", rng)


def test_misclass_unit_splits_the_step_as_the_proof():
    """The unit checks e_1 = T_1 - T_2 itself; here: counts add up, fractions are in range."""
    params = get("T1").config("smoke").values
    df = t1.compute({"part": "misclass", "n_prime": 2, "seed": 0}, params,
                    np.random.default_rng(0), None)
    p = params["params"]
    assert len(df) == 2 * p["mis_runs"] * len(p["mis_placements"]) * len(p["mis_gamma_p"])
    assert ((df["n_correct"] + df["n_out"]) == df["p_j"] * df["m"]).all()
    assert (df["e1"] <= df["t1_norm"] + df["t2_norm"] + 1e-12).all()  # triangle inequality
    assert ((df["p_exact"] > 0) & (df["p_exact"] < 0.5)).all()
    assert ((df["n_in"] == 0) == (df["t2_norm"] == 0)).all()


def test_sweep_unit_runs_every_step_size_on_the_same_data():
    params = get("T1").config("smoke").values
    p = params["params"]
    name = next(iter(t1._configs(p)))
    df = t1.compute({"part": "sweep", "config": name, "seed": 0}, params,
                    np.random.default_rng(0), None)
    gps = t1._gammas(p, t1._configs(p)[name]["sizes"])
    assert sorted(df["gamma_p"].unique()) == gps
    e0 = df[df["t"] == 0].groupby(["alpha0", "direction", "cluster"])["err"].nunique()
    assert (e0 == 1).all()  # the same start for every step size
    np.testing.assert_allclose(df.loc[df["t"] == 0, "err"], 0.5 - df.loc[df["t"] == 0, "alpha0"])


def test_configs_are_checked():
    p = dict(get("T1").config("smoke").values["params"])
    with pytest.raises(ValueError, match="same length"):
        t1._configs({**p, "m": p["m"] + [100]})
    with pytest.raises(ValueError, match="integer"):
        t1._configs({**p, "m": [33, 50, 50]})
    with pytest.raises(ValueError, match="mis_placements"):
        t1._configs({**p, "mis_placements": ["sideways"]})


def test_t1_smoke(tmp_path):
    res = run_study("T1", preset="smoke", out=tmp_path, store=None)
    assert res.verdict in VERDICTS and res.id == "T1"
    assert (tmp_path / "T1_smoke.png").exists() and (tmp_path / "T1_smoke.json").exists()
    table = pd.read_csv(tmp_path / "T1_smoke.csv")
    assert {"part", "config", "seed", "gamma_p", "alpha0", "direction", "cluster", "p_j", "t",
            "err", "n_mis", "placement", "e0", "e1", "t1_norm", "t2_norm", "n_in", "n_out",
            "p_exact"} <= set(table.columns)
    assert set(table["part"]) == {"sweep", "misclass"}
    assert "long version" in res.location and "NeurIPS version" in res.location
    assert "Appendix A" in res.location and "Theorem 1" in res.location
    sens = [c for c in res.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == 2 and any("margin" in c for c in sens) and any("k_noise" in c for c in sens)
    assert 1 <= len(res.numbers) <= 15
    factors = pd.read_csv(tmp_path / "T1_smoke_factors.csv")
    big = factors[(factors["p_j"] == 0.8) & (factors["gamma_p"] >= 0.25)]
    assert len(big) and (big["verdict"] == NOT_SUPPORTED).all()  # gamma p_j >= 1: no contraction
    eq = factors[factors["config"].str.startswith("eq") & (factors["gamma_p"] == 0.5)]
    assert (eq["verdict"] == HOLDS).all()  # inside the equal-size region: factor well below 1/2
    rows = res.numbers[res.numbers["verdict"] != "info"]
    by = dict(zip(rows["configuration"].str.split(" ").str[0], rows["verdict"]))
    assert by["uneq20_m50_n20_d20_s0.01"] == NOT_SUPPORTED  # p_max = 4p: the region is empty
    assert by["eq_m50_n20_d20_s0.01"] == HOLDS
    assert res.verdict == NOT_SUPPORTED and "p_max > 3p: not supported" in res.summary
    mis = pd.read_csv(tmp_path / "T1_smoke_misclass.csv")
    assert (mis["mis_measured"] > 0).all()  # the starts do misclassify machines at t = 0
    assert math.isfinite(mis["c5_implied"].max())
