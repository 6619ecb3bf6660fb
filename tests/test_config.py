"""The one config loader (mixlinreg.config): presets, schema checks, where files are found."""

import sys
from pathlib import Path

import pytest

from mixlinreg import config
from mixlinreg.config import Spec
from mixlinreg.harness import load_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

SCHEMA = {"params": {"n": Spec("int", low=1), "rate": Spec("float", low=0, high=1, open="low"),
                     "how": Spec("str", choices=("a", "b"), required=False, default="a"),
                     "xs": Spec("list[float]", low=0)},
          "margins": {"margin": Spec("float", low=0)}}


def _write(tmp_path, text, name="toy"):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


GOOD = """
kind = "study"
name = "toy"
[params]
n = 30
rate = 0.5
xs = [0.1, 2]
[margins]
margin = 0.1
[presets.quick.params]
n = 10
[presets.smoke.params]
n = 2
xs = [1.0]
"""


def test_presets_override_the_files_values(tmp_path):
    p = _write(tmp_path, GOOD)
    paper = config.load(p, "paper", kind="study", schema=SCHEMA)
    quick = config.load(p, "quick", kind="study", schema=SCHEMA)
    smoke = config.load(p, "smoke", kind="study", schema=SCHEMA)
    assert paper["params"] == {"n": 30, "rate": 0.5, "how": "a", "xs": [0.1, 2.0]}
    assert quick["params"]["n"] == 10 and quick["params"]["xs"] == [0.1, 2.0]
    assert smoke["params"]["xs"] == [1.0]
    assert len({paper.hash(), quick.hash(), smoke.hash()}) == 3


@pytest.mark.parametrize("edit, message", [
    (("n = 30", "n = 0"), r"params\.n must be an integer in \[1, inf\), got 0"),
    (("n = 30", "n = 3.5"), r"params\.n must be a finite integer"),
    (("rate = 0.5", "rate = 0"), r"params\.rate must be a number in \(0, 1\], got 0"),
    (("xs = [0.1, 2]", "xs = [0.1, -2]"), r"params\.xs\[1\] must be a number in \[0, inf\)"),
    (("xs = [0.1, 2]", "xs = []"), r"params\.xs must be a non-empty list"),
    (("n = 30", "n = 30\nextra = 1"), r"unknown key params\.extra; allowed"),
    (("[margins]", "[margin]"), r"unknown table \[margin\]"),
    (('kind = "study"', 'kind = "compare"'), r"kind must be 'study', got 'compare'"),
    (("[presets.smoke.params]", "[presets.full.params]"), r"preset names must be among"),
    (("rate = 0.5\n", ""), r"params\.rate is missing"),
])
def test_bad_configs_name_the_file_the_key_and_the_value(tmp_path, edit, message):
    p = _write(tmp_path, GOOD.replace(*edit))
    with pytest.raises(ValueError, match=message) as err:
        config.load(p, "paper", kind="study", schema=SCHEMA)
    assert str(p) in str(err.value)


def test_unknown_preset_and_kind_are_refused(tmp_path):
    p = _write(tmp_path, GOOD.replace("[presets.smoke.params]\nn = 2\nxs = [1.0]\n", ""))
    with pytest.raises(ValueError, match=r"preset must be one of \['paper', 'quick'\], got 'smoke'"):
        config.load(p, "smoke", kind="study", schema=SCHEMA)
    with pytest.raises(ValueError, match=r"preset must be one of \['smoke', 'quick', 'paper'\]"):
        config.load(p, "full", kind="study", schema=SCHEMA)
    with pytest.raises(ValueError, match="kind must be one of"):
        config.load(p, "paper", kind="grid", schema=SCHEMA)


def test_a_name_never_becomes_a_path():
    with pytest.raises(ValueError, match="plain name"):
        config.find("../fig2a")
    with pytest.raises(FileNotFoundError, match="no packaged config named 'nope'; known: \\[.*'fig2a'"):
        config.find("nope")


def test_figure2_panels_keep_their_store_hashes():
    # the committed stores are named by these hashes: the loader must not move them
    assert load_config("fig2a", "paper").hash()[:12] == "03128fff867f"
    assert load_config("fig2c", "paper").hash()[:12] == "b6c817cb7f5d"
    for panel in ("fig2a", "fig2b", "fig2c", "fig2d"):
        for preset in config.PRESETS:
            assert load_config(panel, preset).preset == preset


CONFIGS = ROOT / "mixlinreg" / "configs"


def test_configs_live_only_inside_the_package():
    # one home: no grid left in experiments/ that could drift from the packaged one
    assert not list((ROOT / "experiments").rglob("*.toml"))
    assert config.packaged() == sorted(p.stem for p in CONFIGS.glob("*.toml"))
    assert config.packaged("studies") == sorted(p.stem for p in (CONFIGS / "studies").glob("*.toml"))
    from mixlinreg.theory import STUDIES

    assert sorted(STUDIES) == config.packaged("studies")


def test_a_name_is_never_read_from_the_current_folder(tmp_path, monkeypatch):
    # a stray ./mixlinreg/configs/fig2a.toml (or ./fig2a.toml) cannot replace the packaged config
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "fig2a.toml").write_text('kind = "figure2"\n')
    (tmp_path / "fig2a.toml").write_text('kind = "figure2"\n')
    monkeypatch.chdir(tmp_path)
    assert Path(config.find("fig2a")) == CONFIGS / "fig2a.toml"
    assert load_config("fig2a", "paper").hash()[:12] == "03128fff867f"
    with pytest.raises(ValueError, match="sub must be"):
        config.packaged("../x")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Build the package's wheel from a copy of the sources (so no build/ lands in the clone)."""
    import shutil
    import subprocess

    tmp_path = tmp_path_factory.mktemp("wheel")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "mixlinreg", src / "mixlinreg",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    out = tmp_path / "wheel"
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w",
                        str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    (whl,) = out.glob("mixlinreg-*.whl")
    return whl


def test_the_wheel_carries_every_config_inside_the_package(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    want = {str(p.relative_to(ROOT)) for p in CONFIGS.rglob("*.toml")}
    assert want and want <= names, sorted(want - names)
    assert not [n for n in names if ".data/" in n], "configs must not travel as data files"


def test_an_install_with_target_finds_the_configs_by_name(tmp_path, wheel):
    # pip install --target: no sys.prefix/share copy and no source tree to fall back on; then
    # `mixlinreg reproduce fig2a --preset smoke --out DIR` from another folder
    import os
    import subprocess

    target = tmp_path / "target"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(target), str(wheel)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = ("import mixlinreg, mixlinreg.config as c; from mixlinreg.harness import load_config; "
            "from mixlinreg.theory.studies import get; "
            "print(mixlinreg.__file__); print(c.find('fig2a')); "
            "print(load_config('fig2a', 'smoke').hash()[:12], get('T1').config('smoke').name)")
    p = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    where, found, loaded = p.stdout.split("\n")[:3]
    assert Path(where).is_relative_to(target) and Path(found).is_relative_to(target)
    assert loaded == f"{load_config('fig2a', 'smoke').hash()[:12]} T1"
    p = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "reproduce", "fig2a", "--preset",
                        "smoke", "--out", "out", "--no-progress"], cwd=elsewhere, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (elsewhere / "out" / "fig2a_smoke_summary.csv").is_file()
    assert str(target / "mixlinreg" / "configs" / "fig2a.toml") in p.stdout + p.stderr


def _load_any(path, preset):
    """Load a shipped config through the code that reads its kind."""
    with open(path, "rb") as fh:
        kind = tomllib.load(fh)["kind"]
    if kind == "figure2":
        return load_config(path, preset)
    if kind == "compare":
        from mixlinreg.compare import load_preset

        return load_preset(preset, path)
    if kind == "digits":
        from mixlinreg.digits import defaults

        return defaults(preset, path)
    if kind == "bench":
        from mixlinreg.bench import load_shapes

        return load_shapes(preset, path)
    if kind == "study":
        from mixlinreg.theory.studies import get

        return get(path.stem).config(preset, path)
    raise AssertionError(f"{path}: no reader for kind {kind!r}")


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_config_loads_in_every_preset(path):
    for preset in config.PRESETS:
        assert _load_any(path, preset) is not None


def test_spec_open_ends():
    """``open="both"`` excludes both ends (it once excluded neither), and says so."""
    from mixlinreg.config import Spec

    s = Spec("float", low=0, high=1, open="both")
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match=r"x must be a number in \(0, 1\), got"):
            s.check("x", bad)
    assert s.check("x", 0.5) == 0.5
    assert Spec("float", low=0, high=1, open="high").check("x", 0.0) == 0.0
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        Spec("float", low=0, high=1, open="high").check("x", 1.0)
    with pytest.raises(ValueError, match="Spec open must be one of"):
        Spec("float", low=0, open="low high")


def test_n_iter_has_the_apis_bound_in_the_configs_that_feed_ifca(tmp_path):
    """One table entry, ``mixlinreg._validation.PARAMETERS["n_iter"]`` (n_iter >= 0: 0 evaluates
    the starts only), bounds n_iter in ifca, IFCA and the Figure 2 and compare configs (the
    configs once refused 0 while the API took it)."""
    import numpy as np

    import mixlinreg as mlr
    from mixlinreg import compare
    from mixlinreg._validation import PARAMETERS
    from mixlinreg.harness.experiment import _schema as figure2_schema

    entry = PARAMETERS["n_iter"]
    assert (entry.kind, entry.low, entry.high) == ("int", 0, None)
    for spec in (figure2_schema()["protocol"]["n_iter"], compare._schema()["protocol"]["n_iter"]):
        assert (spec.kind, spec.low, spec.high, spec.open) == ("int", 0, None, "")
    for schema in (figure2_schema(), compare._schema()):  # the other shared keys too
        assert schema["protocol"]["n_init"].low == PARAMETERS["n_init"].low == 1
        assert schema["protocol"]["early_stop"].kind == "bool"
    steps, tol = figure2_schema()["protocol"]["steps"], figure2_schema()["protocol"]["tol"]
    assert (steps.kind, steps.low, steps.open) == ("list[float]", 0, "low")
    assert (tol.low, tol.open) == (PARAMETERS["tol"].low, "")

    fig = (CONFIGS / "fig2a.toml").read_text()
    cmp = (CONFIGS / "compare.toml").read_text()
    for text, load in ((fig, lambda p: load_config(p, "paper").protocol["n_iter"]),
                       (cmp, lambda p: compare.load_preset("paper", p)[1]["n_iter"])):
        assert "\nn_iter = 300\n" in text
        zero = _write(tmp_path, text.replace("\nn_iter = 300\n", "\nn_iter = 0\n", 1), "zero")
        assert load(zero) == 0
        bad = _write(tmp_path, text.replace("\nn_iter = 300\n", "\nn_iter = -1\n", 1), "bad")
        with pytest.raises(ValueError, match=r"protocol\.n_iter must be an integer in \[0, inf\), "
                                             r"got -1"):
            load(bad)
    mix = mlr.make_mixture(m=8, n=6, d=5, k=2, R=1.0, sigma=0.1, rng=0)
    for call in (lambda: mlr.ifca(mix.X, mix.y, np.zeros((1, 2, 5)), 0.1, n_iter=-1),
                 lambda: mlr.IFCA(n_iter=-1).fit(mix.X, mix.y)):
        with pytest.raises(ValueError, match=r"^n_iter must be in \[0, inf\), got -1$"):
            call()


def test_spec_of_reads_a_table_entry():
    from mixlinreg._validation import PARAMETERS, Interval

    assert Spec.of(PARAMETERS["lr"]) == Spec("float", low=0, open="low")
    assert Spec.of(PARAMETERS["method"]).choices == ("auto", "data", "stats", "gram")
    assert Spec.of(Interval("float", low=0, high=1, high_open=True)).open == "high"
    with pytest.raises(ValueError, match="fixed bounds"):
        Spec.of(PARAMETERS["participation"].members[1])  # bounded by m, known only at the call
    with pytest.raises(TypeError, match="Spec.of takes"):
        Spec.of(PARAMETERS["random_state"])
    assert Spec.list_of(PARAMETERS["lr"]) == Spec("list[float]", low=0, open="low")
    with pytest.raises(TypeError, match="no list\\[bool\\]"):
        Spec.list_of(PARAMETERS["early_stop"])
