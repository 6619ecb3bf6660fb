"""The pure decisions of studies T1, T2 and C2 (``decide``: measurements -> verdict and numbers),
on made-up measurements exactly at, just inside and just outside each threshold and margin, and
the sensitivity lines of their ``analyze`` read against ``decide`` at the neighbouring values.

No kernel runs: the measurements are made up here (for ``analyze``, its measurement step is
replaced by one returning made-up measurements), so each test takes milliseconds. The thresholds
are binary fractions (0.5, 0.625, 0.875, ...) so that "exactly at" is exact in floating point.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mixlinreg.stats import Fit
from mixlinreg.theory.study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision
from mixlinreg.theory.studies import c2, get, t1, t2

EPS = 2.0**-30  # "just inside" / "just outside" a threshold


def _rng(key):
    return np.random.default_rng(0)


def _sens(lines, what):
    (line,) = [s for s in lines if s.startswith(what + " (chosen ")]
    return line


def _assert_line(line, chosen, neighbours, verdict_at):
    """``line`` reads ``v -> verdict_at(v)`` at every neighbour and the chosen value, in order."""
    values = sorted(set(neighbours) | {chosen})
    expected = "; ".join(f"{v:g} -> {verdict_at(v)}" for v in values)
    assert line.endswith(f"(chosen {chosen:g}): {expected}"), (line, expected)


def test_every_study_registers_its_decide():
    for study, module in (("T1", t1), ("T2", t2), ("C2", c2)):
        assert get(study).decide is module.decide


# ------------------------------------------------------------------------------ T1

T1_ALLOW, T1_MARGIN = 0.5625, 0.0625  # a cluster's limit: max(allowance, 1/2) + margin = 0.625


def _t1_rows(clusters, config="eq", gamma_p=0.5):
    """Rows of ``factors`` for one configuration and step size: ``(lo, hi, allowance)`` each."""
    return [{"config": config, "gamma_p": gamma_p, "cluster": j,
             "factor": np.nan if lo is None else (lo + hi) / 2,
             "lo": np.nan if lo is None else lo, "hi": np.nan if hi is None else hi,
             "seeds_used": 10 if lo is not None else 1, "allowance": allow}
            for j, (lo, hi, allow) in enumerate(clusters)]


def _t1(rows, scope_of=None, margin=T1_MARGIN):
    fits = pd.DataFrame(rows)
    scope_of = scope_of or {c: t1.SCOPES[0] for c in dict.fromkeys(fits["config"])}
    return t1.decide({"factors": fits, "scope_of": scope_of}, {"margins": {"margin": margin}})


def _t1_one(lo, hi, allowance=T1_ALLOW, margin=T1_MARGIN):
    """The verdict of one cluster (the other contracts to 0.1 and holds)."""
    d = _t1(_t1_rows([(lo, hi, allowance), (0.05, 0.1, allowance)]), margin=margin)
    assert d.numbers["clusters"][1] == HOLDS
    assert d.verdict == d.numbers["clusters"][0]
    return d.verdict


@pytest.mark.parametrize("lo, hi, expected", [
    (0.4, 0.5 - EPS, HOLDS),            # inside the claim 1/2
    (0.4, 0.5, HOLDS),                  # at 1/2
    (0.4, 0.5 + EPS, CAVEAT),           # just above 1/2, inside the limit 0.625
    (0.4, 0.625 - EPS, CAVEAT),
    (0.4, 0.625, CAVEAT),               # at the limit
    (0.4, 0.625 + EPS, INCONCLUSIVE),   # straddles the limit
    (0.625, 0.7, INCONCLUSIVE),         # lower end at the limit: not entirely above
    (0.625 + EPS, 0.7, NOT_SUPPORTED),  # entirely above the limit
    (None, None, INCONCLUSIVE),         # not measured
])
def test_t1_cluster_at_and_around_its_thresholds(lo, hi, expected):
    assert _t1_one(lo, hi) == expected


def test_t1_limit_is_the_larger_of_allowance_and_half_plus_margin():
    # allowance below 1/2: the limit is 1/2 + margin = 0.5625
    assert _t1_one(0.4, 0.5625, allowance=0.25) == CAVEAT
    assert _t1_one(0.4, 0.5625 + EPS, allowance=0.25) == INCONCLUSIVE
    assert _t1_one(0.5625 + EPS, 0.6, allowance=0.25) == NOT_SUPPORTED
    # no margin, allowance 1/2: nothing between 1/2 and the limit, so no caveat
    assert _t1_one(0.4, 0.5 + EPS, allowance=0.5, margin=0.0) == INCONCLUSIVE
    assert _t1_one(0.5 + EPS, 0.6, allowance=0.5, margin=0.0) == NOT_SUPPORTED
    # the margin moves the limit: hi = 0.625 is inside at margin 0.0625, outside just below it
    assert _t1_one(0.6, 0.625, margin=T1_MARGIN) == CAVEAT
    assert _t1_one(0.6, 0.625, margin=T1_MARGIN - 2**-20) == INCONCLUSIVE
    d = _t1(_t1_rows([(0.4, 0.45, 0.5625), (0.4, 0.45, 0.25), (None, None, np.nan)]))
    assert d.numbers["claimed"] == 0.5 and d.numbers["margin"] == T1_MARGIN
    assert d.numbers["limits"][:2] == [0.625, 0.5625] and math.isnan(d.numbers["limits"][2])


def test_t1_step_size_configuration_scope_and_claim():
    good, caveat, bad = (0.3, 0.4, T1_ALLOW), (0.4, 0.6, T1_ALLOW), (0.7, 0.8, T1_ALLOW)
    # a step size is the weaker of its clusters; a configuration its best step size
    rows = (_t1_rows([good, caveat], "a", 0.25) + _t1_rows([good, bad], "a", 0.5)
            + _t1_rows([bad, good], "b", 0.25) + _t1_rows([bad, bad], "b", 0.5)
            + _t1_rows([good, good], "c", 0.25) + _t1_rows([bad, (None, None, np.nan)], "c", 0.5)
            + _t1_rows([(None, None, np.nan), good], "e", 0.25) + _t1_rows([bad, bad], "e", 0.5))
    scope_of = {"a": t1.SCOPES[0], "c": t1.SCOPES[0], "b": t1.SCOPES[2], "e": t1.SCOPES[1]}
    d = _t1(rows, scope_of)
    assert isinstance(d, Decision)
    assert d.numbers["points"] == {("a", 0.25): CAVEAT, ("a", 0.5): NOT_SUPPORTED,
                                   ("b", 0.25): NOT_SUPPORTED, ("b", 0.5): NOT_SUPPORTED,
                                   ("c", 0.25): HOLDS, ("c", 0.5): NOT_SUPPORTED,
                                   ("e", 0.25): INCONCLUSIVE, ("e", 0.5): NOT_SUPPORTED}
    assert d.numbers["configurations"] == {"a": CAVEAT, "c": HOLDS, "b": NOT_SUPPORTED,
                                           "e": INCONCLUSIVE}
    # a scope is the weakest of its configurations, in the order of scope_of
    assert list(d.numbers["scopes"].items()) == [(t1.SCOPES[0], CAVEAT),
                                                 (t1.SCOPES[2], NOT_SUPPORTED),
                                                 (t1.SCOPES[1], INCONCLUSIVE)]
    assert d.verdict == NOT_SUPPORTED
    # without the failing scope the claim is the weaker of caveat and inconclusive
    keep = [r for r in rows if r["config"] != "b"]
    assert _t1(keep, {k: v for k, v in scope_of.items() if k != "b"}).verdict == INCONCLUSIVE
    assert _t1([r for r in keep if r["config"] in ("a", "c")],
               {"a": t1.SCOPES[0], "c": t1.SCOPES[0]}).verdict == CAVEAT
    assert _t1([r for r in keep if r["config"] == "c"], {"c": t1.SCOPES[0]}).verdict == HOLDS


def test_t1_read_is_decide():
    """The tables of the record carry decide's verdicts (``_read`` is decide at a margin)."""
    p = get("T1").config("smoke").values["params"]
    configs = t1._configs(p)
    rows = [r for name in configs for gp in (0.25, 0.5)
            for r in _t1_rows([(0.3, 0.4, T1_ALLOW), (0.4, 0.55 + gp / 10, T1_ALLOW)], name, gp)]
    fits = pd.DataFrame(rows)
    f, points, by_cfg, scopes, verdict = t1._read(fits, configs, T1_MARGIN)
    d = t1.decide({"factors": fits, "scope_of": {n: t1._scope(c["sizes"])
                                                 for n, c in configs.items()}},
                  {"margins": {"margin": T1_MARGIN}})
    assert f["verdict"].tolist() == d.numbers["clusters"]
    assert dict(zip(zip(points["config"], points["gamma_p"]), points["verdict"])) == \
        d.numbers["points"]
    assert (by_cfg, scopes, verdict) == (d.numbers["configurations"], d.numbers["scopes"],
                                         d.verdict)
    # 0.55 + 0.025 is inside the limit 0.625, 0.55 + 0.05 too: caveat at both step sizes
    assert set(d.numbers["points"].values()) == {CAVEAT} and verdict == CAVEAT


def _t1_fake_factors(configs, k_noise):
    """Made-up factors: one cluster near 1/2 (its verdict moves with the margin); at k_noise 5
    it is far above, at 20 it is not measured."""
    near = {5.0: (0.6, 0.7), 10.0: (0.503, 0.507), 20.0: (None, None)}[k_noise]
    rows = [r for name in configs for gp in (0.25, 0.5)
            for r in _t1_rows([(0.3, 0.4, 0.5), (*near, 0.5 if near[0] else np.nan)], name, gp)]
    return pd.DataFrame(rows)


def test_t1_sensitivity_lines_are_decide_at_the_neighbours(monkeypatch):
    params = get("T1").config("smoke").values
    params = {"params": params["params"],
              "margins": {"margin": 0.01, "margin_neighbours": [0.0, 0.005, 0.02],
                          "k_noise": 10.0, "k_noise_neighbours": [5.0, 20.0]}}
    configs = t1._configs(params["params"])
    scope_of = {n: t1._scope(c["sizes"]) for n, c in configs.items()}

    def fake_measure(sweep, prm, rng, k_noise):
        return {"factors": _t1_fake_factors(configs, k_noise), "scope_of": scope_of}

    monkeypatch.setattr(t1, "measure", fake_measure)
    table = pd.DataFrame(columns=["part", "n_prime", "placement", "gamma_p"])
    v = t1.analyze(table, params, _rng)

    def at(factors, margin):
        d = t1.decide({"factors": factors, "scope_of": scope_of},
                      {"margins": {"margin": margin}})
        return d.verdict + " (" + "; ".join(f"{s}: {x}" for s, x in d.numbers["scopes"].items()) \
            + ")"

    base = _t1_fake_factors(configs, 10.0)
    assert v.verdict == t1.decide({"factors": base, "scope_of": scope_of}, params).verdict
    margin_at = {v_: at(base, v_) for v_ in (0.0, 0.005, 0.01, 0.02)}
    # the margin decides: lo 0.503 > 1/2 + 0, straddles 1/2 + 0.005, hi 0.507 <= 1/2 + 0.01
    assert [m.split(" (")[0] for m in margin_at.values()] == [NOT_SUPPORTED, INCONCLUSIVE,
                                                              CAVEAT, CAVEAT]
    _assert_line(_sens(v.sensitivity, "margin above 1/2 + allowance"), 0.01,
                 [0.0, 0.005, 0.02], margin_at.get)
    k_at = {k: at(_t1_fake_factors(configs, k), 0.01) for k in (5.0, 10.0, 20.0)}
    assert [k.split(" (")[0] for k in k_at.values()] == [NOT_SUPPORTED, CAVEAT, INCONCLUSIVE]
    _assert_line(_sens(v.sensitivity, "transient threshold k_noise"), 10.0, [5.0, 20.0],
                 k_at.get)


# ------------------------------------------------------------------------------ T2

T2_BOUND, T2_MARGIN = 0.75, 0.125  # limit 0.875


def _t2_row(lo, hi, bound=T2_BOUND, loss="logistic", cluster=0):
    measured = lo is not None
    factor = (lo + hi) / 2 if measured else np.nan
    return {"loss": loss, "p": 0.25, "p_j": 0.25, "n_prime": 100, "cluster": cluster,
            "bound": bound, "rate_bound": 1 - bound, "rate_gd": 0.1,
            "seeds_used": 8 if measured else 1, "steps_used": 20, "floor": 1e-3,
            "mis_transient": 0.0, "max_step_ratio": 0.9, "frac_steps_above_bound": 0.0,
            "factor": factor, "lo": lo if measured else np.nan, "hi": hi if measured else np.nan,
            "rate": 1 - factor, "looseness": (1 - factor) / (1 - bound)}


def _t2(rows, margin=T2_MARGIN):
    return t2.decide(pd.DataFrame(rows), {"margins": {"margin": margin}})


@pytest.mark.parametrize("lo, hi, expected", [
    (0.5, 0.875 - EPS, HOLDS),          # inside bound + margin
    (0.5, 0.875, HOLDS),                # at it
    (0.5, 0.875 + EPS, INCONCLUSIVE),   # straddles it
    (0.875, 0.9, INCONCLUSIVE),         # lower end at it: not entirely above
    (0.875 + EPS, 0.9, NOT_SUPPORTED),  # entirely above
    (None, None, INCONCLUSIVE),         # fewer than 2 data sets in the transient
])
def test_t2_factor_against_bound_plus_margin(lo, hi, expected):
    d = _t2([_t2_row(lo, hi), _t2_row(0.1, 0.2, cluster=1)])
    assert d.numbers["verdicts"] == [expected, HOLDS]
    assert d.verdict == expected
    assert d.numbers["margin"] == T2_MARGIN


def test_t2_margin_and_bound_move_the_limit():
    row = _t2_row(0.7, 0.76)  # above the bound 0.75, inside 0.75 + 0.125
    assert _t2([row], margin=0.0).verdict == INCONCLUSIVE
    assert _t2([row], margin=0.01).verdict == HOLDS  # limit 0.76
    assert _t2([row], margin=0.01 - 2**-20).verdict == INCONCLUSIVE
    assert _t2([_t2_row(0.76, 0.8)], margin=0.0).verdict == NOT_SUPPORTED
    assert _t2([_t2_row(0.76, 0.8, bound=0.8)], margin=0.0).verdict == HOLDS


def test_t2_claim_is_the_weakest_row_and_names_the_closest():
    rows = [_t2_row(0.5, 0.6), _t2_row(0.8, 0.87, cluster=1), _t2_row(0.1, 0.2, loss="huber")]
    d = _t2(rows)
    assert d.verdict == HOLDS and d.numbers["closest"] == 1
    assert d.numbers["closest_hi"] == 0.87 and d.numbers["closest_bound"] == T2_BOUND
    rows[2] = _t2_row(0.85, 0.88, loss="huber")
    d = _t2(rows)
    assert d.verdict == INCONCLUSIVE and d.numbers["closest"] == 2
    rows[0] = _t2_row(0.9, 0.95)
    assert _t2(rows).verdict == NOT_SUPPORTED
    d = _t2([_t2_row(None, None)])
    assert d.verdict == INCONCLUSIVE and "closest" not in d.numbers


def test_t2_sensitivity_lines_are_decide_at_the_neighbours(monkeypatch):
    # floor_mult 3: far above the bound; 5: just above the bound (the margin decides);
    # 10: not measured
    made_up = {3.0: _t2_row(0.9, 0.95), 5.0: _t2_row(0.7, 0.755), 10.0: _t2_row(None, None)}

    def fake_measure(table, floor_mult, rng):
        return pd.DataFrame([made_up[floor_mult], _t2_row(0.1, 0.2, cluster=1)])

    monkeypatch.setattr(t2, "measure", fake_measure)
    params = {"params": get("T2").config("smoke").values["params"],
              "margins": {"floor_mult": 5.0, "floor_mult_neighbours": [3.0, 10.0],
                          "margin": 0.0, "margin_neighbours": [0.01]}}
    table = pd.DataFrame({"loss": ["logistic"], "lam": [0.1], "L": [0.25], "delta": [2.0],
                          "radius": [0.5]})
    v = t2.analyze(table, params, _rng)

    def at(floor_mult, margin):
        return t2.decide(fake_measure(None, floor_mult, None), {"margins": {"margin": margin}})

    assert v.verdict == at(5.0, 0.0).verdict == INCONCLUSIVE
    assert v.tables["_fits.csv"]["verdict"].tolist() == at(5.0, 0.0).numbers["verdicts"]
    f_at = {f: at(f, 0.0).verdict for f in (3.0, 5.0, 10.0)}
    assert list(f_at.values()) == [NOT_SUPPORTED, INCONCLUSIVE, INCONCLUSIVE]
    _assert_line(_sens(v.sensitivity, "transient threshold floor_mult"), 5.0, [3.0, 10.0],
                 f_at.get)
    m_at = {m: at(5.0, m).verdict for m in (0.0, 0.01)}
    assert list(m_at.values()) == [INCONCLUSIVE, HOLDS]
    _assert_line(_sens(v.sensitivity, "margin above the bound"), 0.0, [0.01], m_at.get)


def test_t2_verdict_column_where_the_record_has_it():
    measured_first = t2._with_verdicts(pd.DataFrame([_t2_row(0.5, 0.6), _t2_row(None, None)]),
                                       [HOLDS, INCONCLUSIVE])
    cols = list(measured_first.columns)
    assert cols[cols.index("rate") + 1] == "verdict" and cols[-1] == "looseness"
    out = t2._with_verdicts(pd.DataFrame([_t2_row(None, None), _t2_row(0.5, 0.6)]),
                            [INCONCLUSIVE, HOLDS])
    assert list(out.columns)[-1] == "verdict"
    assert out["verdict"].tolist() == [INCONCLUSIVE, HOLDS]


# ------------------------------------------------------------------------------ C2

C2_LOG = 0.25  # log allowance of the design; allowance = allowance_mult x 0.25


def _c2_loss(n_slope, m_slopes, b=0.5, excess_hi=0.002, pred=0.004):
    return {"n_slope": n_slope, "m_slopes": dict(enumerate(m_slopes, start=10)),
            "log_allowance": C2_LOG, "b": Fit(b, 0.0, max(b, 1.0), 6),
            "excess_large": Fit(excess_hi / 2, 0.0, excess_hi, 16), "pred_excess_large": pred}


def _c2(fits, amult=0.5, lfrac=0.5):
    return c2.decide(fits, {"margins": {"allowance_mult": amult, "loose_frac": lfrac}})


def _fit(lo, hi):
    return Fit((lo + hi) / 2, lo, hi, 30)


GOOD_N, GOOD_M = _fit(-0.8, -0.6), _fit(-0.3, -0.1)


@pytest.mark.parametrize("lo, hi, expected", [
    # allowance 0.5 x 0.25 = 0.125: the n'-slope's limit is -0.375
    (-0.5, -0.375 - EPS, HOLDS),
    (-0.5, -0.375, HOLDS),
    (-0.5, -0.375 + EPS, INCONCLUSIVE),
    (-0.375, -0.2, INCONCLUSIVE),
    (-0.375 + EPS, -0.2, NOT_SUPPORTED),
])
def test_c2_n_slope_at_and_around_its_limit(lo, hi, expected):
    d = _c2({"x": _c2_loss(_fit(lo, hi), [GOOD_M], excess_hi=0.004)})
    assert d.numbers["rules"]["x"] == [expected, HOLDS]
    assert d.verdict == expected
    assert d.numbers["losses"]["x"]["n_slope_limit"] == -0.375


@pytest.mark.parametrize("lo, hi, expected", [
    # the m-slope's limit is 0 + 0.125
    (-0.1, 0.125 - EPS, HOLDS),
    (-0.1, 0.125, HOLDS),
    (-0.1, 0.125 + EPS, INCONCLUSIVE),
    (0.125, 0.3, INCONCLUSIVE),
    (0.125 + EPS, 0.3, NOT_SUPPORTED),
])
def test_c2_m_slopes_at_and_around_their_limit(lo, hi, expected):
    d = _c2({"x": _c2_loss(GOOD_N, [GOOD_M, _fit(lo, hi)], excess_hi=0.004)})
    assert d.numbers["rules"]["x"] == [HOLDS, HOLDS, expected]
    assert d.verdict == expected
    assert d.numbers["losses"]["x"]["m_slope_limit"] == 0.125


def test_c2_allowance_multiple_scales_the_limits():
    loss = _c2_loss(_fit(-0.6, -0.4375), [_fit(-0.1, 0.0625)], excess_hi=0.004)
    assert _c2({"x": loss}, amult=0.0).numbers["rules"]["x"] == [INCONCLUSIVE, INCONCLUSIVE]
    # allowance 0.25 x 0.25: limits -0.4375 and 0.0625, exactly the slopes' upper ends
    assert _c2({"x": loss}, amult=0.25).numbers["rules"]["x"] == [HOLDS, HOLDS]
    assert _c2({"x": loss}, amult=0.25 - 2**-20).numbers["rules"]["x"] == [INCONCLUSIVE,
                                                                           INCONCLUSIVE]
    d = _c2({"x": loss}, amult=2.0)
    assert d.numbers["losses"]["x"]["allowance"] == 0.5 and d.verdict == HOLDS


@pytest.mark.parametrize("excess_hi, b, expected", [
    (0.002 - EPS, 0.5, CAVEAT),  # just below loose_frac x b/n' = 0.5 x 0.004: the 1/n' term loose
    (0.002, 0.5, HOLDS),         # at it: not looser than measured
    (0.002 + EPS, 0.5, HOLDS),
    (0.1, 0.0, CAVEAT),          # no 1/n' term fitted
])
def test_c2_loose_term_caveat_at_and_around_its_fraction(excess_hi, b, expected):
    d = _c2({"x": _c2_loss(GOOD_N, [GOOD_M], b=b, excess_hi=excess_hi)})
    assert d.verdict == expected
    assert d.numbers["loose"]["x"] == (expected == CAVEAT)
    assert d.numbers["losses"]["x"]["loose_below"] == 0.002


def test_c2_claim_is_the_weakest_and_the_caveat_only_on_holds():
    fine = _c2_loss(GOOD_N, [GOOD_M], excess_hi=0.004)
    loose = _c2_loss(GOOD_N, [GOOD_M], excess_hi=0.001)
    unsure = _c2_loss(_fit(-0.5, -0.3), [GOOD_M], excess_hi=0.001)
    bad = _c2_loss(GOOD_N, [_fit(0.2, 0.4)], excess_hi=0.004)
    assert _c2({"a": fine, "b": fine}).verdict == HOLDS
    assert _c2({"a": fine, "b": loose}).verdict == CAVEAT  # one loss loose is enough
    assert _c2({"a": fine, "b": unsure}).verdict == INCONCLUSIVE  # no caveat on a weaker verdict
    assert _c2({"a": loose, "b": bad, "c": unsure}).verdict == NOT_SUPPORTED
    d = _c2({"a": fine, "b": loose})
    assert d.numbers["allowance_mult"] == 0.5 and d.numbers["loose_frac"] == 0.5
    assert d.numbers["loose"] == {"a": False, "b": True}


def test_c2_former_helpers_are_decide():
    f = _c2_loss(GOOD_N, [_fit(-0.1, 0.1)], excess_hi=0.001)
    assert c2._rules(f, 0.5) == _c2({"x": f}).numbers["rules"]["x"] == [HOLDS, HOLDS]
    assert c2._rules(f, 0.0) == [HOLDS, INCONCLUSIVE]
    assert c2._overall({"x": f}, 0.5, 0.5) == _c2({"x": f}).verdict == CAVEAT
    assert c2._overall({"x": f}, 0.5, 0.25) == HOLDS


def _c2_fake_fits(p):
    """Made-up measurements with every key analyze describes: the n'-slope (upper end -0.41)
    passes once allowance_mult x 0.25 >= 0.09; the excess at the largest n' (upper end 0.001) is
    below loose_frac x 0.004 for loose_frac > 0.25 (the 1/n' term loose: a caveat)."""
    f = _c2_loss(_fit(-0.55, -0.41), [_fit(-0.3, -0.1)], excess_hi=0.001, pred=0.004)
    f["m_slopes"] = {nf: _fit(-0.3, -0.1) for nf in p["n_fixed"]}
    f["m_slopes_oracle"] = dict(f["m_slopes"])
    f.update(n_slope_oracle=_fit(-0.6, -0.5), a=_fit(0.5, 1.5), ratio_small=_fit(1.0, 1.2),
             ratio_large=_fit(1.0, 1.01), excess_small=_fit(0.0, 0.01), n_small=5, n_large=10,
             crossover=3.0, excess_dominates=[], plateau=1.0)
    return {"logistic": f}


def test_c2_sensitivity_lines_are_decide_at_the_neighbours(monkeypatch):
    p = get("C2").config("smoke").values["params"]
    params = {"params": p, "margins": {"allowance_mult": 1.0,
                                       "allowance_mult_neighbours": [0.0, 0.5, 2.0],
                                       "loose_frac": 0.5, "loose_frac_neighbours": [0.125, 1.0]}}
    monkeypatch.setattr(c2, "_fit", lambda table, p_, rng: _c2_fake_fits(p_))
    table = pd.DataFrame({"loss": ["logistic"] * 2, "L": [0.25] * 2, "lam": [0.1] * 2,
                          "delta": [2.0] * 2, "err_ifca": [0.1, 0.2]})
    v = c2.analyze(table, params, _rng)
    fits = _c2_fake_fits(p)
    assert v.verdict == c2.decide(fits, params).verdict == CAVEAT
    a_at = {a: _c2(fits, a, 0.5).verdict for a in (0.0, 0.5, 1.0, 2.0)}
    assert list(a_at.values()) == [INCONCLUSIVE, CAVEAT, CAVEAT, CAVEAT]
    _assert_line(_sens(v.sensitivity, "log allowance multiple"), 1.0, [0.0, 0.5, 2.0], a_at.get)
    l_at = {lf: _c2(fits, 1.0, lf).verdict for lf in (0.125, 0.5, 1.0)}
    assert list(l_at.values()) == [HOLDS, CAVEAT, CAVEAT]
    _assert_line(_sens(v.sensitivity, "1/n' looseness fraction"), 0.5, [0.125, 1.0], l_at.get)
    # the numbers table shows decide's rule verdicts
    assert v.numbers.loc[v.numbers["rule"].str.startswith("<="), "verdict"].tolist() == \
        c2.decide(fits, params).numbers["rules"]["logistic"]
