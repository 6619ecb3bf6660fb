"""Study TAB1 (Table 1 protocol on rotated digits), version 2: registration, the t interval, the
pure ``decide`` on made-up measurements at and around its thresholds (rule (a) as first registered:
IFCA > global > local, the paper's order global > local judged with its own margin), the hard
cells at and around their bands, the sensitivity lines against ``decide`` at the neighbours,
``measure`` on a made-up table, config errors, and a complete smoke record."""

from __future__ import annotations

import copy
import doctest
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from mixlinreg.theory.study import HOLDS, INCONCLUSIVE, NOT_SUPPORTED, VERDICTS
from mixlinreg.theory.studies import get, run_study, tab1


def _params(**margins):
    params = copy.deepcopy(get("TAB1").config("paper").values)
    params["margins"].update(margins)
    return params


def _column(d_ig, d_il, identified=10, seeds=10, d_gl=None):
    return {"d_ifca_global": list(d_ig), "d_ifca_local": list(d_il),
            "d_global_local": list(d_il if d_gl is None else d_gl), "identified": identified,
            "seeds": seeds, "first": [2.0] * seeds, "acc": {}}


UP = [0.05, 0.06, 0.07, 0.05, 0.06, 0.07, 0.05, 0.06, 0.07, 0.06]  # clearly above 0
DOWN = [-x for x in UP]
MIXED = [0.05, -0.06, 0.07, -0.05, 0.06, -0.07, 0.05, -0.06, 0.07, -0.06]


def test_registered_with_both_locations():
    study = get("TAB1")
    assert study is tab1.STUDY and study.decide is tab1.decide
    assert study.order == 110 and study.paper == "IFCA"
    assert "long version" in study.location and "NeurIPS version" in study.location
    assert "Table 1" in study.location and "Figure 4" in study.location


def test_the_module_examples_run():
    result = doctest.testmod(tab1, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 1 and result.failed == 0


def test_t_interval_is_scipys():
    v = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    f = tab1.t_interval(v, 0.9)
    lo, hi = sps.t.interval(0.9, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
    assert (f.est, f.lo, f.hi, f.n) == pytest.approx((v.mean(), lo, hi, 5), rel=1e-12)
    g = tab1.t_interval([0.02] * 4, 0.95)  # no spread: the interval is the point
    assert (g.lo, g.hi) == pytest.approx((0.02, 0.02), abs=1e-15)


@pytest.mark.parametrize("d_ig, d_gl, verdict", [
    (UP, UP, HOLDS),
    (UP, DOWN, NOT_SUPPORTED),  # local beats global
    (DOWN, UP, NOT_SUPPORTED),  # global beats IFCA
    (UP, MIXED, INCONCLUSIVE),
    (MIXED, UP, INCONCLUSIVE),
])
def test_a_ordering(d_ig, d_gl, verdict):
    d = tab1.decide({"c": _column(d_ig, d_gl)}, _params())
    assert d.numbers["columns"]["c"]["a"] == verdict and d.verdict == verdict


def test_a_ordering_at_and_around_the_margin():
    d = [0.015] * 5 + [0.016] * 5  # t interval about [0.0151, 0.0159]
    ms = {"c": _column(d, UP)}
    assert tab1.decide(ms, _params(order_margin=0.0)).verdict == HOLDS
    assert tab1.decide(ms, _params(order_margin=0.01)).verdict == HOLDS
    assert tab1.decide(ms, _params(order_margin=0.0155)).verdict == INCONCLUSIVE
    assert tab1.decide(ms, _params(order_margin=0.02)).verdict == NOT_SUPPORTED
    # a wider confidence widens the interval: 3 seeds of 0.01, 0.02, 0.03
    ms = {"c": _column([0.01, 0.02, 0.03], UP[:3], identified=3, seeds=3)}
    lo90 = tab1.t_interval([0.01, 0.02, 0.03], 0.9).lo
    lo99 = tab1.t_interval([0.01, 0.02, 0.03], 0.99).lo
    assert lo99 < 0 < lo90
    assert tab1.decide(ms, _params(confidence=0.9)).numbers["columns"]["c"]["a"] == HOLDS
    assert tab1.decide(ms, _params(confidence=0.99)).numbers["columns"]["c"]["a"] == INCONCLUSIVE


@pytest.mark.parametrize("identified, seeds, verdict", [
    (10, 10, HOLDS),  # Wilson lower bound 0.722 >= 0.7
    (9, 9, HOLDS),  # 0.701
    (8, 8, INCONCLUSIVE),  # 0.676
    (9, 10, INCONCLUSIVE),
    (2, 10, INCONCLUSIVE),  # upper bound 0.51
    (1, 10, NOT_SUPPORTED),  # upper bound 0.40 < 0.5
])
def test_b_identification_at_and_around_its_thresholds(identified, seeds, verdict):
    ms = {"c": _column(UP[:seeds], UP[:seeds], identified, seeds)}
    d = tab1.decide(ms, _params())
    assert d.numbers["columns"]["c"]["b"] == verdict
    assert d.verdict == verdict


def test_b_moves_with_the_rate_thresholds():
    ms = {"c": _column(UP, UP, 9, 10)}  # Wilson [0.596, 0.982]
    assert tab1.decide(ms, _params(rate_target=0.6)).verdict == INCONCLUSIVE
    assert tab1.decide(ms, _params(rate_target=0.59)).verdict == HOLDS
    ms = {"c": _column(UP, UP, 3, 10)}  # Wilson [0.108, 0.603]
    assert tab1.decide(ms, _params(rate_floor=0.7)).verdict == NOT_SUPPORTED
    assert tab1.decide(ms, _params(rate_floor=0.5)).verdict == INCONCLUSIVE


def test_the_study_verdict_is_the_weakest_column_and_the_scope_names_each():
    ms = {"mnist_n50": _column(UP, UP), "mnist_n200": _column(UP, DOWN),
          "cifar_n14": _column(UP, UP, 9, 10)}
    d = tab1.decide(ms, _params())
    assert d.verdict == NOT_SUPPORTED
    assert [v["verdict"] for v in d.numbers["columns"].values()] == [HOLDS, NOT_SUPPORTED,
                                                                      INCONCLUSIVE]
    cols = {"mnist_n50": {"n": 50, "dataset": "mnist"}, "mnist_n200": {"n": 200, "dataset": "mnist"},
            "cifar_n14": {"n": 14, "dataset": "cifar"}}
    scope = tab1.scope_line(d, cols)
    assert scope.startswith("holds for n = 50 (MNIST-like); not supported for n = 200")
    assert "IFCA > local not supported" in scope and "identification inconclusive" in scope


def test_version_2_is_the_first_registered_rule():
    """Version 2: the config says so, and at its chosen margins (a-iii) is held to the same
    margin as (a-i) and (a-ii), so (a) is the first registered IFCA > global > local."""
    cfg = get("TAB1").config("paper")
    assert cfg.extras["version"] == 2
    mg = cfg.values["margins"]
    assert mg["baseline_margin"] == mg["order_margin"] == 0.0
    assert mg["baseline_margin_neighbours"] == mg["order_margin_neighbours"] == [0.01, 0.02]
    assert tab1.DIFF_MARGIN == {"d_ifca_global": "order_margin", "d_ifca_local": "order_margin",
                                "d_global_local": "baseline_margin"}
    text = (Path(tab1.__file__).parents[2] / "configs" / "studies" / "TAB1.toml").read_text()
    assert "6ffd3ad" in text and "it first required IFCA > global > local" in text


def test_the_papers_order_is_judged():
    """Version 2: local above global makes (a), the column and the study not supported, while
    IFCA above each baseline still holds; the scope names the part that failed."""
    ms = {"c": _column(UP, UP, d_gl=DOWN)}
    d = tab1.decide(ms, _params())
    v = d.numbers["columns"]["c"]
    assert d.verdict == NOT_SUPPORTED and v["a"] == NOT_SUPPORTED and v["b"] == HOLDS
    assert v["ifca"] == HOLDS and v["order"] == NOT_SUPPORTED
    assert v["parts"]["d_global_local"] == NOT_SUPPORTED
    scope = tab1.scope_line(d, {"c": {"n": 200, "dataset": "mnist"}})
    assert scope == "not supported for n = 200 (MNIST-like) (the paper's global > local not supported)"
    mixed = tab1.decide({"c": _column(UP, UP, d_gl=MIXED)}, _params())
    assert mixed.verdict == INCONCLUSIVE and mixed.numbers["columns"]["c"]["ifca"] == HOLDS


def test_the_baseline_margin_moves_only_the_papers_order():
    near = [0.015] * 5 + [0.016] * 5  # t interval about [0.0151, 0.0159]
    ms = {"c": _column(UP, UP, d_gl=near)}
    parts = lambda **m: tab1.decide(ms, _params(**m)).numbers["columns"]["c"]["parts"]  # noqa: E731
    assert parts(baseline_margin=0.01)["d_global_local"] == HOLDS
    assert parts(baseline_margin=0.0155)["d_global_local"] == INCONCLUSIVE
    assert parts(baseline_margin=0.02)["d_global_local"] == NOT_SUPPORTED
    assert parts(baseline_margin=0.02)["d_ifca_global"] == HOLDS
    # order_margin does not move (a-iii)
    assert parts(order_margin=0.02)["d_global_local"] == HOLDS
    ms = {"c": _column(near, UP, d_gl=UP)}
    assert tab1.decide(ms, _params(baseline_margin=0.02)).verdict == HOLDS
    assert tab1.decide(ms, _params(order_margin=0.02)).verdict == NOT_SUPPORTED


@pytest.mark.parametrize("value, hard", [
    (0.041, False),  # above the band [0 - 0.02, 0.02 + 0.02]
    (0.039, True),
    (0.0, True),
    (-0.019, True),
    (-0.021, False),  # below it
])
def test_a_difference_is_hard_within_delta_of_its_margins(value, hard):
    """No spread: every confidence's interval is the point itself."""
    for key in tab1.DIFFS:
        d = {k: UP for k in tab1.DIFFS}
        d[key] = [value] * 10
        ms = {"c": _column(d["d_ifca_global"], d["d_ifca_local"], d_gl=d["d_global_local"],
                           identified=0, seeds=30)}
        h = tab1.hard_cells(ms, _params())
        assert h["cells"][("c", key)] is hard, key
        assert h["total"] == 4 and h["hard"] == int(hard)


def test_a_difference_is_hard_by_its_widest_interval():
    v = [0.024, 0.096, 0.048, 0.072, 0.06, 0.036, 0.084, 0.048, 0.072, 0.06]
    lo95 = tab1.t_interval(v, 0.95).lo
    lo99 = tab1.t_interval(v, 0.99).lo
    assert lo99 < 0.04 < lo95  # only the 0.99 interval reaches into the band
    ms = {"c": _column(v, UP, identified=0, seeds=30)}
    assert tab1.hard_cells(ms, _params())["cells"][("c", "d_ifca_global")] is True
    assert tab1.hard_cells(ms, _params(confidence_neighbours=[0.9]))["cells"][
        ("c", "d_ifca_global")] is False


@pytest.mark.parametrize("identified, seeds, hard", [
    (10, 10, True),  # holds, but 9 of 10 is inconclusive (and 0.99 gives lo 0.60 < 0.7)
    (0, 30, False),  # not supported at every combination, and at 1 of 30
    (0, 10, True),  # upper bound 0.40 at 0.99, above rate_floor 0.3
    (30, 30, False),  # lo 0.82 at 0.99 >= 0.8, and 29 of 30 still holds
])
def test_an_identification_is_hard_where_its_margins_or_one_seed_move_it(identified, seeds,
                                                                         hard):
    ms = {"c": _column(UP[:3] * 10, UP[:3] * 10, identified, seeds)}
    assert tab1.hard_cells(ms, _params())["cells"][("c", "identified")] is hard


def test_the_cells_count_every_column():
    ms = {"a": _column(UP, UP, identified=0, seeds=30),
          "b": _column([0.0] * 10, UP, d_gl=DOWN, identified=10, seeds=10)}
    h = tab1.hard_cells(ms, _params())
    assert (h["hard"], h["total"]) == (2, 8)
    assert {k for k, v in h["cells"].items() if v} == {("b", "d_ifca_global"), ("b", "identified")}


def test_sensitivity_lines_read_decide_at_the_neighbours():
    ms = {"a": _column([0.015] * 5 + [0.016] * 5, UP, 9, 10, d_gl=[0.015] * 5 + [0.016] * 5)}
    params = _params()
    lines = tab1.sensitivity(ms, params)
    assert len(lines) == len(tab1.MARGINS) == 5 and "baseline_margin" in tab1.MARGINS
    for line, key in zip(lines, tab1.MARGINS):
        for v in params["margins"][f"{key}_neighbours"]:
            d = tab1.decide(ms, tab1._at(params, key, v))
            c = d.numbers["columns"]["a"]
            expect = (f"{v:g} -> {d.verdict} (IFCA above each baseline in "
                      f"{int(c['ifca'] == HOLDS)}/1 columns, global > local in "
                      f"{int(c['order'] == HOLDS)}/1, (b) in {int(c['b'] == HOLDS)}/1)")
            assert expect in line, (key, v, line)
    base = lines[list(tab1.MARGINS).index("baseline_margin")]
    assert "global > local in 1/1" in base.split("; ")[1]  # 0.01: holds
    assert "global > local in 0/1" in base.split("; ")[2]  # 0.02: not supported


def test_measure_pairs_seeds_and_counts_identified():
    rows = []
    for s, (i, g, l) in enumerate([(0.9, 0.8, 0.7), (0.95, 0.7, 0.75)]):
        rows += [{"kind": "method", "column": "c", "seed": s, "method": m, "acc": a}
                 for m, a in (("local", l), ("ifca", i), ("global", g))]
        ident = [0.5, 1.0, 1.0] if s == 0 else [0.5, 0.75, 0.75]
        rows += [{"kind": "round", "column": "c", "seed": s, "round": t, "identity": v}
                 for t, v in enumerate(ident)]
    ms = tab1.measure(pd.DataFrame(rows), _params())["c"]
    assert ms["d_ifca_global"] == pytest.approx([0.1, 0.25])
    assert ms["d_global_local"] == pytest.approx([0.1, -0.05])
    assert ms["d_ifca_local"] == pytest.approx([0.2, 0.2])
    assert (ms["identified"], ms["seeds"]) == (1, 2)
    assert ms["first"][0] == 1 and np.isnan(ms["first"][1])


def test_columns_follow_the_config():
    p = _params()["params"]
    cols = tab1.columns(p)
    assert list(cols) == ["mnist_n50", "mnist_n100", "mnist_n200", "cifar_n14"]
    assert [c["m"] for c in cols.values()] == [112, 56, 28, 200]  # m n = k N, N = 1400
    assert cols["cifar_n14"]["k"] == 2 and cols["cifar_n14"]["participation"] == 0.1
    assert cols["cifar_n14"]["decay"] == 0.99 and cols["mnist_n50"]["tau"] == 10
    names = [n for n, _ in tab1.units(get("TAB1").config("smoke").values)]
    assert names[:2] == ["mnist_n50_s000", "mnist_n50_s001"] and names[-1] == "cifar_n20_s001"


def _bad(section, **changes):
    params = copy.deepcopy(get("TAB1").config("smoke").values)
    params[section].update(changes)
    return params


@pytest.mark.parametrize("section, change, match", [
    ("params", dict(n_train=210), "params.n_train"),
    ("params", dict(mnist_n_test=130), "params.mnist_n_test"),
    ("params", dict(cifar_n_test=1700), "add up to at most 1797"),
    ("params", dict(mnist_n=[50, 50]), "params.mnist_n"),
    ("params", dict(mnist_rotations=[0, 45]), "params.mnist_rotations"),
    ("params", dict(cifar_n=200), "params.cifar_n"),
    ("margins", dict(rate_floor=0.9), "margins.rate_floor"),
])
def test_bad_config_refused_naming_the_parameter(section, change, match):
    with pytest.raises(ValueError, match=match):
        tab1.units(_bad(section, **change))


@pytest.mark.parametrize("old, new, match", [
    ("seeds = 10 ", "seeds = 1 ", "params.seeds"),
    ("cifar_participation = 0.1", "cifar_participation = 1.5", "params.cifar_participation"),
    ("cifar_decay = 0.99", "cifar_decay = 0.0", "params.cifar_decay"),
    ("confidence = 0.95", "confidence = 1.0", "margins.confidence"),
])
def test_bad_values_refused_by_the_loader(old, new, match, tmp_path):
    src = Path(tab1.__file__).parents[2] / "configs" / "studies" / "TAB1.toml"
    text = src.read_text()
    assert old in text
    path = tmp_path / "TAB1.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=match):
        get("TAB1").config("paper", path)


def test_smoke_record_complete(tmp_path):
    r = run_study("TAB1", preset="smoke", out=tmp_path, store=None)
    assert r.verdict in VERDICTS and r.paper == "IFCA" and r.summary and r.claim and r.scope
    for suffix in (".json", ".png", ".csv", "_table1.csv"):
        assert (tmp_path / f"TAB1_smoke{suffix}").exists(), suffix
    table = pd.read_csv(tmp_path / "TAB1_smoke.csv")
    params = get("TAB1").config("smoke").values
    cols = tab1.columns(params["params"])
    meth = table[table["kind"] == "method"]
    assert len(meth) == len(cols) * params["params"]["seeds"] * len(tab1.METHODS)
    assert meth["acc"].between(0, 1).all()
    rnd = table[table["kind"] == "round"]
    assert rnd["identity"].between(0, 1).all()
    for col, c in cols.items():  # rounds 0..rounds per seed
        assert len(rnd[rnd["column"] == col]) == params["params"]["seeds"] * (c["rounds"] + 1)
    t1 = pd.read_csv(tmp_path / "TAB1_smoke_table1.csv")
    assert len(t1) == len(cols) * (len(tab1.METHODS) + 1)
    assert t1.loc[t1["method"] == "ifca", "paper"].str.match(r"\d+\.\d\d ± ").all()
    assert set(r.numbers["verdict"]) - {""} <= set(VERDICTS)
    assert sum(r.numbers["row"].str.startswith("(")) == 5 * len(cols)  # (a-i..iii), (a), (b)
    assert r.version == 2 and r.rule_verdict in VERDICTS
    assert set(r.cells) == {"hard", "total", "rule"} and r.cells["total"] == 4 * len(cols)
    assert 0 <= r.cells["hard"] <= r.cells["total"] and "hard when" in r.cells["rule"]
    ms = tab1.measure(table, params)  # the record's cells are hard_cells of its table
    assert r.cells["hard"] == tab1.hard_cells(ms, params)["hard"]
    sens = [c for c in r.caveats if c.startswith("Sensitivity: ")]
    assert len(sens) == len(tab1.MARGINS)
    assert any("not comparable" in c for c in r.caveats)


def test_unrotated_default_changes_nothing_and_turns_every_image_upright():
    """The control's unrotated (issue 37): absent it is false (the committed record's data);
    true gives every machine the upright images of its partition, labels kept."""
    from mixlinreg.digits import make_rotated_digits

    p = get("TAB1").config("paper").values["params"]
    assert p["unrotated"] is False
    rot = [0, 90, 180, 270]
    data = make_rotated_digits(8, 50, 100, rng=np.random.default_rng(0), layout="partition",
                               rotations=rot)
    up = tab1.unrotated(data)
    plain = make_rotated_digits(8, 50, 100, rng=np.random.default_rng(0), layout="partition",
                                rotations=[0])
    assert (up.labels == data.labels).all() and (up.y == data.y).all()
    np.testing.assert_array_equal(up.X[data.labels == 0], data.X[data.labels == 0])
    for c in range(4):  # every test block is the same upright images, like the 0-degree one
        np.testing.assert_array_equal(np.sort(up.X_test[c], axis=0), np.sort(up.X_test[0], axis=0))
    assert not np.array_equal(up.X[data.labels == 1], data.X[data.labels == 1])
    assert plain.X.shape[2] == up.X.shape[2] == 65
