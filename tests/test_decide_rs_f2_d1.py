"""The pure decisions of RS, F2a-F2d and D1 (issue 22, item 4): ``decide`` on made-up measurements
at, just inside and just outside each threshold and margin, and ``analyze``'s sensitivity lines
against ``decide`` at the neighbouring values. No kernel runs, no stores: made-up numbers only."""

from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest

from mixlinreg.theory.figure2 import _f2_tests
from mixlinreg.theory.studies import _f2 as f2_study, d1 as d1_study, get, rs
from mixlinreg.theory.study import (CAVEAT, DIFFER, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, SAME,
                                    UNDETERMINED, Decision, unit_rng)

EPS = 1e-9


def _sensitivity(line):
    """``"what (chosen 0.05): 0.01 -> holds; 0.05 -> ..."`` -> ``(what, {0.01: "holds", ...})``."""
    m = re.fullmatch(r"(.*) \(chosen [^)]*\): (.*)", line)
    assert m, line
    values = {}
    for part in m.group(2).split("; "):
        value, verdict = part.split(" -> ")
        values[float(value)] = verdict
    return m.group(1), values


def _margins(params, **margins):
    out = copy.deepcopy(params)
    out["margins"].update(margins)
    return out


@pytest.mark.parametrize("study, decide", [("RS", rs.decide), ("F2a", f2_study.decide),
                                           ("F2d", f2_study.decide), ("D1", d1_study.decide)])
def test_each_study_registers_its_decide(study, decide):
    assert get(study).decide is decide


# ------------------------------------------------------------------------------ F2


def _trend_rows(axis, strata, pooled, rule="authors", role="claim"):
    """Rows of a trend-test table: ``strata`` as ``(p_increase, p_decrease, flat)``."""
    rows = [dict(axis=axis, rule=rule, role=role, stratum=f"s={i}", p_increase=pi, p_decrease=pd_,
                 flat=flat) for i, (pi, pd_, flat) in enumerate(strata)]
    rows.append(dict(axis=axis, rule=rule, role=role, stratum="pooled", p_increase=pooled[0],
                     p_decrease=pooled[1], flat=False))
    return rows


RISE = (0.001, 0.999, False)  # a stratum that rises on its own


def _f2(panel="a", alpha=0.05, **axes):
    """F2's decision on made-up trend tests: ``axes`` maps an axis to ``(strata, pooled)``."""
    rows = [r for axis, (strata, pooled) in axes.items() for r in _trend_rows(axis, strata, pooled)]
    params = {"params": {"panel": f"fig2{panel}"}, "margins": {"alpha": alpha}}
    return f2_study.decide(pd.DataFrame(rows), params)


@pytest.mark.parametrize("p, verdict", [(0.05 - EPS, HOLDS), (0.05, INCONCLUSIVE),
                                        (0.05 + EPS, INCONCLUSIVE)])
def test_f2_pooled_increase_is_held_to_alpha(p, verdict):
    d = _f2(R=([RISE, RISE], (p, 0.9)))
    assert d.verdict == verdict
    assert d.numbers["R: pooled p_increase"] == p and d.numbers["alpha"] == 0.05


@pytest.mark.parametrize("p, verdict", [(0.05 - EPS, NOT_SUPPORTED), (0.05, HOLDS),
                                        (0.05 + EPS, HOLDS)])
def test_f2_pooled_decrease_is_held_to_alpha(p, verdict):
    assert _f2(R=([RISE, RISE], (1e-4, p))).verdict == verdict


@pytest.mark.parametrize("shift, verdict", [(-EPS, NOT_SUPPORTED), (0.0, HOLDS), (EPS, HOLDS)])
def test_f2_a_stratum_decrease_is_held_to_alpha_over_the_informative_strata(shift, verdict):
    bonf = 0.05 / 2  # two informative strata; the flat one does not count, whatever its p-values
    strata = [RISE, (0.001, bonf + shift, False), (1.0, 1e-12, True)]
    d = _f2(R=(strata, (1e-4, 0.9)))
    # the flat stratum makes it a caveat where it is not a decrease
    assert d.verdict == (NOT_SUPPORTED if verdict == NOT_SUPPORTED else CAVEAT)
    assert d.numbers["R: Bonferroni level"] == bonf
    assert d.numbers["R: informative strata"] == 2 and d.numbers["R: strata flat"] == 1
    # without the flat stratum the same comparison decides between not supported and holds
    assert _f2(R=(strata[:2], (1e-4, 0.9))).verdict == verdict


@pytest.mark.parametrize("p, verdict", [(0.05 - EPS, HOLDS), (0.05, CAVEAT), (0.05 + EPS, CAVEAT)])
def test_f2_each_stratum_increase_is_held_to_alpha(p, verdict):
    d = _f2(R=([RISE, (p, 0.9, False)], (1e-4, 0.9)))
    assert d.verdict == verdict
    assert d.numbers["R: strata not significant"] == (0 if verdict == HOLDS else 1)
    assert d.numbers["R: strata rising"] == (2 if verdict == HOLDS else 1)


def test_f2_a_flat_stratum_is_a_caveat_and_alpha_comes_from_the_config():
    assert _f2(R=([RISE, (1.0, 1.0, True)], (1e-4, 0.9))).verdict == CAVEAT
    tests = ([RISE, (0.03, 0.9, False)], (0.03, 0.9))
    assert _f2(alpha=0.05, R=tests).verdict == HOLDS
    assert _f2(alpha=0.03, R=tests).verdict == INCONCLUSIVE  # p = alpha: not below it
    assert _f2(alpha=0.01, R=tests).verdict == INCONCLUSIVE


def test_f2_only_the_authors_rule_of_the_claimed_axes_decides():
    rows = _trend_rows("R", [RISE], (1e-4, 0.9))
    rows += _trend_rows("R", [(0.9, 1e-9, False)], (0.9, 1e-9), rule="text")
    rows += _trend_rows("sigma", [(0.9, 1e-9, False)], (0.9, 1e-9), role="information")
    params = {"params": {"panel": "fig2b"}, "margins": {"alpha": 0.05}}
    d = f2_study.decide(pd.DataFrame(rows), params)
    assert d.verdict == HOLDS
    assert not any(k.startswith("sigma") for k in d.numbers)


@pytest.mark.parametrize("m, n, verdict", [
    (HOLDS, HOLDS, HOLDS), (HOLDS, CAVEAT, CAVEAT), (CAVEAT, INCONCLUSIVE, INCONCLUSIVE),
    (NOT_SUPPORTED, HOLDS, NOT_SUPPORTED), (INCONCLUSIVE, NOT_SUPPORTED, NOT_SUPPORTED)])
def test_f2_panels_c_and_d_take_the_weakest_of_m_and_n(m, n, verdict):
    made = {HOLDS: ([RISE], (1e-4, 0.9)), CAVEAT: ([RISE, (0.2, 0.8, False)], (1e-4, 0.9)),
            INCONCLUSIVE: ([RISE], (0.2, 0.8)), NOT_SUPPORTED: ([RISE], (0.9, 1e-3))}
    for panel in "cd":
        d = _f2(panel, m=made[m], n=made[n])
        assert (d.numbers["m: verdict"], d.numbers["n: verdict"]) == (m, n)
        assert d.verdict == verdict


def _f2_table(panel="a"):
    """A made-up panel-(a) store summary and its trend tests, as F2's unit writes them."""
    rows = []
    for sigma, succ in ((0.1, [8, 9, 11, 12]), (0.2, [9, 10, 10, 13])):
        for R, s in zip([0.25, 0.5, 0.75, 1.0], succ):
            rows.append(dict(R=R, sigma=sigma, trials=20, succ_authors=s, succ_text=max(s - 2, 0)))
    summ = pd.DataFrame(rows)
    tests = _f2_tests(summ, panel)
    return pd.concat([tests, summ.assign(role="summary", panel=panel)], ignore_index=True), tests


def test_f2_sensitivity_lines_are_decide_at_the_neighbouring_alphas():
    table, tests = _f2_table()
    params = get("F2a").config("paper").values
    params = _margins(params, alpha=0.05, alpha_neighbours=[0.01, 0.2])
    v = f2_study.analyze(table, params, lambda key: unit_rng(0, "F2a", "analyze_" + key))
    assert v.verdict == f2_study.decide(tests, params).verdict == CAVEAT
    (line,) = v.sensitivity
    what, at = _sensitivity(line)
    assert what == "significance level alpha" and sorted(at) == [0.01, 0.05, 0.2]
    for alpha, verdict in at.items():
        assert verdict == f2_study.decide(tests, _margins(params, alpha=alpha)).verdict
    # the neighbours straddle the pooled p-value: the line is not constant
    assert [at[a] for a in (0.01, 0.05, 0.2)] == [INCONCLUSIVE, CAVEAT, HOLDS]


# ------------------------------------------------------------------------------ RS

RS_PARAMS = {"margins": {"target": 0.9, "p1_substantial": 0.25, "min_trials": 10}}


def _cell(**kw):
    """One made-up cell of rs_cell_stats: holds at the default thresholds, contradicts nothing."""
    cell = dict(panel="a", R=1.0, sigma=0.1, trials=10, n_init=10, p1=0.1, pN=0.95, pN_hi=0.99,
                r_need_hi=5.0)
    cell.update(kw)
    return cell


def _rs(*cells, **margins):
    return rs.decide(pd.DataFrame(list(cells)), _margins(RS_PARAMS, **margins))


@pytest.mark.parametrize("trials, verdict", [(10, HOLDS), (9, INCONCLUSIVE), (11, HOLDS)])
def test_rs_a_cell_is_evidence_from_min_trials_on(trials, verdict):
    d = _rs(_cell(trials=trials))
    assert d.verdict == verdict
    assert d.numbers["evidence cells"] == (0 if trials < 10 else 1)
    assert d.numbers["min_trials"] == 10


@pytest.mark.parametrize("pN, verdict", [(0.9, HOLDS), (0.9 - EPS, INCONCLUSIVE),
                                         (0.9 + EPS, HOLDS)])
def test_rs_a_cell_holds_from_the_target_on(pN, verdict):
    d = _rs(_cell(pN=pN))
    assert d.verdict == verdict
    assert d.numbers["evidence cells that hold"] == (1 if verdict == HOLDS else 0)


@pytest.mark.parametrize("need, verdict", [(10.0, HOLDS), (11.0, INCONCLUSIVE), (9.0, HOLDS)])
def test_rs_a_cell_holds_when_the_restarts_needed_stay_within_n_init(need, verdict):
    assert _rs(_cell(r_need_hi=need)).verdict == verdict


@pytest.mark.parametrize("p1, verdict", [(0.25, NOT_SUPPORTED), (0.25 - EPS, INCONCLUSIVE),
                                         (0.25 + EPS, NOT_SUPPORTED)])
def test_rs_a_substantial_single_init_success_with_restarts_below_target_contradicts(p1, verdict):
    d = _rs(_cell(p1=p1, pN=0.5, pN_hi=0.8))
    assert d.verdict == verdict
    assert d.numbers["cells that contradict"] == (1 if verdict == NOT_SUPPORTED else 0)


@pytest.mark.parametrize("hi, verdict", [(0.9, INCONCLUSIVE), (0.9 - EPS, NOT_SUPPORTED),
                                         (0.9 + EPS, INCONCLUSIVE)])
def test_rs_a_contradiction_needs_the_wilson_upper_bound_below_target(hi, verdict):
    assert _rs(_cell(p1=0.5, pN=0.85, pN_hi=hi)).verdict == verdict


def test_rs_the_thresholds_come_from_the_config():
    cell = _cell(trials=12, p1=0.3, pN=0.85, pN_hi=0.95)
    assert _rs(cell).verdict == INCONCLUSIVE  # below the target, not a contradiction
    assert _rs(cell, target=0.85).verdict == HOLDS
    assert _rs(cell, target=0.96).verdict == NOT_SUPPORTED
    assert _rs(cell, target=0.96, p1_substantial=0.31).verdict == INCONCLUSIVE
    assert _rs(cell, target=0.85, min_trials=13).verdict == INCONCLUSIVE


def test_rs_context_cells_never_decide():
    bad = _cell(R=0.5, trials=9, p1=0.9, pN=0.1, pN_hi=0.2)  # would contradict, but context
    assert _rs(_cell(), bad).verdict == HOLDS
    assert _rs(_cell(), dict(bad, trials=10)).verdict == NOT_SUPPORTED


def test_rs_it_holds_with_a_caveat_from_some_r_on_in_every_panel_and_sigma():
    low = _cell(R=0.25, pN=0.5, pN_hi=0.7)  # fails; p1 = 0.1 is not substantial
    assert _rs(low, _cell()).verdict == CAVEAT
    d = _rs(low, _cell(), _cell(panel="b", R=0.25), _cell(panel="b"))
    assert d.verdict == CAVEAT and d.numbers["(panel, sigma) with no R*"] == 0
    # the largest R fails in one (panel, sigma): no R* there
    d = _rs(_cell(R=0.25), dict(low, R=1.0))
    assert d.verdict == INCONCLUSIVE and d.numbers["(panel, sigma) with no R*"] == 1
    d = _rs(low, _cell(), _cell(sigma=0.4, R=0.25), dict(low, sigma=0.4))
    assert d.verdict == INCONCLUSIVE and d.numbers["(panel, sigma)"] == 2


def _rs_table():
    """Made-up per-initialization rows of panels a and b (12 trials, 10 inits per cell)."""
    rows = []
    # successes per trial: R = 0.25 half the trials 4 of 10 (single-init 0.2, all-restart 0.5)
    plan = {0.25: [4, 0] * 6, 0.5: [2] * 12, 1.0: [10] * 12}
    for panel in "ab":
        for R, succ in plan.items():
            for trial, s in enumerate(succ):
                for init in range(10):
                    rows.append(dict(panel=panel, R=R, sigma=0.1, trial=trial, init=init,
                                     ok=init < s, ok_text=init < s))
    return pd.DataFrame(rows)


def test_rs_sensitivity_lines_are_decide_at_the_neighbouring_thresholds():
    table = _rs_table()
    params = get("RS").config("paper").values
    params = copy.deepcopy(params)
    params["params"]["n_boot"] = 200
    params = _margins(params, p1_substantial_neighbours=[0.15, 0.35])

    def rng(key):
        return unit_rng(0, "RS", "analyze_" + key)

    v = rs.analyze(table, params, rng)
    cells = rs._stats(table, params, rng, 0.9, 0.95)[0]
    assert v.verdict == rs.decide(cells, params).verdict == CAVEAT
    keys = {"restart success target": "target",
            "substantial single-init success": "p1_substantial",
            "trials for an evidence cell": "min_trials",
            "confidence of the intervals": "confidence"}
    seen = {}
    for line in v.sensitivity:
        what, at = _sensitivity(line)
        key = keys[what]
        for value, verdict in at.items():
            p = _margins(params, **{key: int(value) if key == "min_trials" else value})
            mg = p["margins"]
            cc = rs._stats(table, p, rng, mg["target"], mg["confidence"])[0]
            assert verdict == rs.decide(cc, p).verdict, (what, value)
        seen[key] = at
    assert set(seen) == set(keys.values())
    # lines that move: a lower p1 threshold makes R = 0.25 a contradiction; 20 trials, no evidence
    assert seen["p1_substantial"] == {0.15: NOT_SUPPORTED, 0.25: CAVEAT, 0.35: CAVEAT}
    assert seen["min_trials"] == {5: CAVEAT, 10: CAVEAT, 20: INCONCLUSIVE}


# ------------------------------------------------------------------------------ D1

D1_PARAMS = {"margins": {"margin": 0.2}}


def _move(lo, hi, family="distance", panel="a", sigma=0.1):
    return dict(family=family, panel=panel, sigma=sigma, lo=lo, hi=hi)


def _d1(*moves, margin=0.2):
    return d1_study.decide(pd.DataFrame(list(moves)), _margins(D1_PARAMS, margin=margin))


@pytest.mark.parametrize("hi, outcome", [(0.2, SAME), (0.2 - EPS, SAME), (0.2 + EPS, UNDETERMINED)])
def test_d1_same_results_needs_every_interval_within_the_margin(hi, outcome):
    d = _d1(_move(-0.1, 0.1), _move(-0.05, hi))
    assert d.verdict == outcome
    assert d.numbers["distance (a): widest |bound|"] == hi and d.numbers["margin"] == 0.2
    # the lower bound is held to -margin the same way
    assert _d1(_move(-hi, 0.1)).verdict == outcome


@pytest.mark.parametrize("lo, outcome", [(0.0, SAME), (-EPS, SAME), (EPS, DIFFER)])
def test_d1_results_differ_when_an_interval_excludes_zero(lo, outcome):
    d = _d1(_move(-0.1, 0.1), _move(lo, 0.15))
    assert d.verdict == outcome
    assert d.numbers["distance (a): intervals excluding 0"] == (1 if outcome == DIFFER else 0)
    assert _d1(_move(-0.15, -lo)).verdict == outcome  # and from below


def test_d1_the_margin_comes_from_the_config():
    moves = (_move(-0.25, 0.1),)
    assert _d1(*moves, margin=0.25).verdict == SAME
    assert _d1(*moves, margin=0.2).verdict == UNDETERMINED
    assert _d1(_move(0.3, 0.9), margin=1.0).verdict == DIFFER  # a move is a move at any margin


def test_d1_decides_on_sigma_above_zero_only():
    zero_moved = _move(0.3, 0.9, sigma=0.0)
    assert _d1(_move(-0.1, 0.1), zero_moved).verdict == SAME
    assert _d1(zero_moved).verdict == UNDETERMINED  # no sigma > 0 point
    no_sigma = pd.DataFrame([dict(family="rule", panel="c", lo=0.3, hi=0.9)])
    assert d1_study.decide(no_sigma, D1_PARAMS).verdict == UNDETERMINED


@pytest.mark.parametrize("second, outcome", [((-0.1, 0.1), SAME), ((-0.5, 0.5), UNDETERMINED),
                                             ((0.3, 0.9), DIFFER)])
def test_d1_the_note_takes_the_strongest_comparison(second, outcome):
    d = _d1(_move(-0.1, 0.1), _move(*second, family="theta_scale"),
            _move(-0.5, 0.5, family="rule", sigma=0.0))
    assert d.verdict == outcome
    assert d.numbers["distance (a): outcome"] == SAME
    assert d.numbers["theta_scale (a): outcome"] == outcome
    assert not any(k.startswith("rule") for k in d.numbers)


def _d1_table(trials=12):
    """Made-up units of D1: paired runs under both scalings (they agree in every trial at
    sigma > 0 and differ at R = 1, sigma = 0) and their separations; no store to re-score."""
    cell = dict(m=20, n=20, d=40, k=2)
    rows = []
    for scale in ("code", "norm"):
        for trial in range(trials):
            unit = f"scale_{scale}_t{trial:04d}"
            for R in (0.5, 1.0):
                for sigma in (0.0, 0.1):
                    ok = trial % 3 != 0
                    if sigma == 0 and R == 1.0:
                        ok = scale == "code"
                    rows.append(dict(cell, R=R, sigma=sigma, trial=trial, theta_scale=scale,
                                     authors=ok, text=ok, unit=unit))
    for trial in range(trials):
        for R in (0.5, 1.0):
            for scale, delta in (("code", 4.5 * R), ("norm", R)):
                rows.append(dict(trial=trial, R=R, d=40, theta_scale=scale, delta=delta,
                                 rms_exact=delta, unit="separation"))
    return pd.DataFrame(rows)


def test_d1_sensitivity_lines_are_decide_at_the_neighbouring_margins_and_levels(tmp_path):
    table = _d1_table()
    params = copy.deepcopy(get("D1").config("smoke").values)
    params["params"]["figure2_store"] = str(tmp_path / "no-store")
    params = _margins(params, margin=0.2, margin_neighbours=[0.1, 0.3], alpha=0.05,
                      alpha_neighbours=[0.01, 0.1])

    def rng(key):
        return unit_rng(0, "D1", "analyze_" + key)

    v = d1_study.analyze(table, params, rng)
    moves = v.tables[".csv"]
    readback = d1_study._as_read_back(moves)
    assert v.verdict == d1_study.decide(readback, params).verdict
    parts = d1_study._parts(table)
    exp = d1_study._experiments(params, rng("seed"))["code"]
    per_scale = v.tables["_trials.csv"]
    margin_line, alpha_line = v.sensitivity
    what, at = _sensitivity(margin_line)
    assert what == "margin of a paired move"
    for margin, outcome in at.items():
        assert outcome == d1_study.decide(readback, _margins(params, margin=margin)).verdict
    # the margins straddle the widest bound (about 0.204 at alpha = 0.05)
    assert at == {0.1: UNDETERMINED, 0.2: UNDETERMINED, 0.3: SAME}
    what, at = _sensitivity(alpha_line)
    assert what == "family-wise level alpha of a comparison"
    for alpha, outcome in at.items():
        mv = d1_study._moves(parts, per_scale, exp, params["params"], alpha)
        p = _margins(params, alpha=alpha)
        assert outcome == d1_study.decide(d1_study._as_read_back(mv), p).verdict
    assert at == {0.01: UNDETERMINED, 0.05: UNDETERMINED, 0.1: SAME}  # wider level, narrower
    assert isinstance(d1_study.decide(readback, params), Decision)


def test_d1_decision_numbers_are_finite_on_made_up_moves():
    d = _d1(_move(-0.1, 0.1), _move(-0.12, 0.05, family="rule", panel="b"))
    assert d.verdict == SAME
    assert np.isclose(d.numbers["rule (b): widest |bound|"], 0.12)
    assert d.numbers["rule (b): grid points"] == 1
