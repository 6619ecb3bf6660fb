"""Studies as records (mixlinreg.theory.study): one driver, named seeds, resumable units."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mixlinreg.config import Spec  # noqa: E402
from mixlinreg.stats import bootstrap  # noqa: E402
from mixlinreg.theory import HOLDS, INCONCLUSIVE, NOT_SUPPORTED  # noqa: E402
from mixlinreg.theory.study import Study, Verdict, run, sensitivity_line, unit_rng  # noqa: E402

CONFIG = """
kind = "study"
name = "TOY"
[params]
n_seeds = 6
n = 400
mean = 0.5
[margins]
margin = 0.1
[presets.quick.params]
n_seeds = 3
[presets.smoke.params]
n_seeds = 2
n = 50
"""

SCHEMA = {"params": {"n_seeds": Spec("int", low=1), "n": Spec("int", low=2),
                     "mean": Spec("float")},
          "margins": {"margin": Spec("float", low=0)}}


def _units(params):
    return [(f"seed{s}", {"seed": s}) for s in range(params["params"]["n_seeds"])]


def _offset(rng):
    return pd.DataFrame({"offset": [rng.uniform(-1e-3, 1e-3)]})


def _compute(spec, params, rng, shared):
    # every unit shares one stored offset, drawn once from its own named stream
    off = shared("offset", _offset)["offset"].iloc[0]
    x = rng.normal(params["params"]["mean"] + off, 1.0, size=params["params"]["n"])
    return pd.DataFrame({"seed": spec["seed"], "x": x, "offset": off})


def _verdict_at(fit, margin):
    if fit.lo >= 0.5 - margin and fit.hi <= 0.5 + margin:
        return HOLDS
    if fit.hi < 0.5 - margin or fit.lo > 0.5 + margin:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def _analyze(table, params, rng):
    means = table.groupby("seed")["x"].mean().to_numpy()
    fit = bootstrap(means, rng=rng("mean"))
    margin = params["margins"]["margin"]
    v = _verdict_at(fit, margin)
    line = sensitivity_line("margin", margin, lambda mg: _verdict_at(fit, mg), [0.05, 0.2])
    numbers = pd.DataFrame([{"estimate": fit.est, "lo": fit.lo, "hi": fit.hi, "verdict": v}])
    return Verdict(v, numbers, f"mean {fit.fmt()}", sensitivity=[line],
                   tables={"_means.csv": pd.DataFrame({"mean": means})})


def _figure(table, verdict, params):
    fig, ax = plt.subplots()
    ax.hist(table["x"], bins=20)
    return fig


TOY = Study(id="TOY", title="toy", claim="the mean is 1/2", location="nowhere", schema=SCHEMA,
            units=_units, compute=_compute, analyze=_analyze,
            figure=_figure)


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "TOY.toml"
    p.write_text(CONFIG)
    return p


def test_a_study_runs_resumes_and_writes_its_outputs(tmp_path, cfg):
    out, store = tmp_path / "out", tmp_path / "store"
    r1 = run(TOY, preset="smoke", out=out, store=store, seed=3, config_path=cfg)
    # two units and the shared piece, computed once (the second unit reads it back)
    assert r1.id == "TOY" and r1.units_computed == 3 and r1.units_resumed == 1
    t = pd.read_csv(r1.table)
    assert t["offset"].nunique() == 1
    assert t["offset"].iloc[0] == _offset(unit_rng(3, "TOY", "shared_offset"))["offset"].iloc[0]
    assert (out / "TOY_smoke.csv").exists() and (out / "TOY_smoke_means.csv").exists()
    assert (out / "TOY_smoke.png").exists()
    assert any(c.startswith("Sensitivity: margin (chosen 0.1): 0.05 -> ") for c in r1.caveats)
    r2 = run(TOY, preset="smoke", out=out, store=store, seed=3, config_path=cfg)
    assert r2.units_computed == 0 and r2.units_resumed == 2  # the units hold the shared piece
    pd.testing.assert_frame_equal(r1.numbers, r2.numbers)


def test_unit_streams_are_keyed_by_name_not_position(tmp_path, cfg):
    a = run(TOY, preset="smoke", out=tmp_path / "a", store=None, seed=3, config_path=cfg)
    b = run(TOY, preset="quick", out=tmp_path / "b", store=None, seed=3, config_path=cfg)
    ta = pd.read_csv(a.table)
    tb = pd.read_csv(b.table)
    # quick has one more seed and a larger n: seed0's first 50 draws are the same stream
    x_a = ta[ta["unit"] == "seed0"]["x"].to_numpy()
    x_b = tb[tb["unit"] == "seed0"]["x"].to_numpy()[:50]
    np.testing.assert_array_equal(x_a, x_b)
    g1 = unit_rng(3, "TOY", "seed1").normal()
    assert g1 != unit_rng(3, "TOY", "seed0").normal() and g1 == unit_rng(3, "TOY", "seed1").normal()


def test_results_do_not_depend_on_the_number_of_workers(tmp_path, cfg):
    one = run(TOY, preset="quick", out=tmp_path / "1", store=tmp_path / "s1", seed=1,
              config_path=cfg)
    two = run(TOY, preset="quick", out=tmp_path / "2", store=tmp_path / "s2", seed=1, n_jobs=2,
              config_path=cfg)
    pd.testing.assert_frame_equal(pd.read_csv(one.table), pd.read_csv(two.table))
    # the runner counts the units its workers computed, wherever they ran
    assert (two.units_computed, two.units_resumed) == (one.units_computed, one.units_resumed)
    # 3 units and the shared unit they all use: computed once, read back by the other two
    assert (one.units_computed, one.units_resumed) == (4, 2)


def test_a_study_needs_params_and_margins_tables():
    with pytest.raises(ValueError, match=r"schema needs a \[margins\] table"):
        Study(id="X", title="", claim="", location="", schema={"params": {}}, units=_units,
              compute=_compute, analyze=_analyze, figure=_figure)
    with pytest.raises(ValueError, match="plain name"):
        Study(id="../X", title="", claim="", location="", schema=SCHEMA, units=_units,
              compute=_compute, analyze=_analyze, figure=_figure)


def test_a_note_records_its_outcome_and_may_make_its_own_table(tmp_path, cfg):
    """A reproducibility note (kind "note", as D1): a note's outcome, not a claim's verdict; its
    ".csv" table, made from the units' rows, is the study's table."""
    import dataclasses

    from mixlinreg.theory.study import NOTE, SAME
    from mixlinreg.theory.study import MissingInput

    def analyze(table, params, rng):
        means = table.groupby("seed", as_index=False)["x"].mean()
        return Verdict(SAME, means, "same", tables={".csv": means})

    note = dataclasses.replace(TOY, analyze=analyze, kind=NOTE)
    r = run(note, preset="smoke", out=tmp_path / "out", store=None, config_path=cfg)
    assert (r.kind, r.verdict) == (NOTE, SAME)
    pd.testing.assert_frame_equal(pd.read_csv(r.table), r.numbers)  # the note's own table

    def units(params):
        raise MissingInput("no runs: make them with `mixlinreg reproduce ...`")

    before = sorted((tmp_path / "out").iterdir())
    with pytest.raises(MissingInput, match="mixlinreg reproduce"):  # nothing measured: no verdict
        run(dataclasses.replace(note, units=units), preset="smoke", out=tmp_path / "out",
            store=None, config_path=cfg)
    assert sorted((tmp_path / "out").iterdir()) == before  # and nothing written
    with pytest.raises(ValueError, match="kind must be one of"):
        dataclasses.replace(TOY, kind="remark")


def test_without_a_store_a_shared_piece_is_computed_once_per_run_configuration(tmp_path, cfg):
    import dataclasses

    calls = []

    def offset(rng):
        calls.append(1)
        return _offset(rng)

    def compute(spec, params, rng, shared):
        off = shared("offset", offset)["offset"].iloc[0]
        return pd.DataFrame({"seed": spec["seed"], "x": rng.normal(0.5 + off, 1.0, 50),
                             "offset": off})

    toy = dataclasses.replace(TOY, compute=compute)
    a = run(toy, preset="smoke", out=tmp_path / "a", store=None, seed=11, config_path=cfg)
    assert len(calls) == 1  # two units, one computation
    run(toy, preset="smoke", out=tmp_path / "b", store=None, seed=12, config_path=cfg)
    assert len(calls) == 2  # another seed is another configuration: computed anew


def test_check_with_a_missing_store_is_no_verdict_and_exit_1(tmp_path, monkeypatch, capsys):
    from mixlinreg.cli import main

    monkeypatch.chdir(tmp_path)
    code = main(["check", "F2a", "--preset", "smoke", "--out", "o", "--no-progress",
                 "--stores", "nowhere"])
    out = capsys.readouterr().out
    assert code == 1 and not (tmp_path / "o" / "F2a_smoke.json").exists()
    assert "not checked, no record written" in out and "mixlinreg reproduce fig2a" in out
    assert "not checked, their input stores missing: F2a" in out
