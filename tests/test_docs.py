"""The documentation builds without warnings (gallery and lesson in their smoke setting), shows
what it must (the executed lesson, the rendered checks, every public method's docstring, math
with no network, mini-galleries) and quotes true numbers; the gallery runs on its own and uses
the teaching views' settings."""

from __future__ import annotations

import ast
import html
import json
import os
import re
import runpy
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GALLERY = ROOT / "experiments" / "gallery"
LESSON = ROOT / "experiments" / "tutorial.py"
TEACH = ROOT / "figures" / "teach"
SCRIPTS = sorted(GALLERY.rglob("plot_*.py"))


def _text(page):
    """A built page's visible text: tags dropped, entities decoded, spaces collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", body))
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')  # smart quotes
    return re.sub(r"\s+", " ", text)


def _record(view):
    return json.loads((TEACH / f"{view}.json").read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The docs built as the suite builds them: ``-W``, gallery and lesson in the smoke setting."""
    for mod in ("sphinx", "numpydoc", "sphinx_gallery", "myst_nb", "jupytext"):
        pytest.importorskip(mod)
    tmp = tmp_path_factory.mktemp("docs")
    env = dict(os.environ, MIXLINREG_DOCS_FAST="1", MPLBACKEND="Agg")
    out = tmp / "html"
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp / "doctrees"), str(DOCS), str(out)],
                         env=env, capture_output=True, text=True, timeout=600)
    print(f"docs build: {time.perf_counter() - t0:.1f} s")  # reported, never asserted
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-4000:])
    return out


def test_pages_exist(built):
    for page in ("index", "getting_started", "user_guide", "lesson", "teaching", "figure2",
                 "theory_checks", "paper_checks", "dask", "gpu", "api", "development"):
        assert (built / f"{page}.html").is_file(), page


def test_lesson_page_is_the_executed_lesson(built):
    jupytext = pytest.importorskip("jupytext")
    page = (built / "lesson.html").read_text()
    text = _text(page)
    nb = jupytext.read(LESSON)
    # every section of the lesson is on the page, in order
    heads = [re.sub(r"[`*]", "", ln[2:].lstrip("#").strip()).split("$")[0].strip()
             for c in nb.cells if c.cell_type == "markdown"
             for ln in c.source.splitlines() if ln.startswith("## ")]
    assert len(heads) >= 8
    at = 0
    for h in heads:
        at = text.find(h, at)
        assert at >= 0, f"section {h!r} not on the lesson page (or out of order)"
    # executed: the code cells' printed outputs and figures are there
    assert page.count('class="cell_output') >= 10
    figures = re.findall(r'<img[^>]+src="(_images/[^"]+\.png)"', page)
    assert len(figures) >= 3 and all((built / f).is_file() for f in figures)
    assert "smoke sizes" in text  # the lesson's first printout, in the docs' smoke setting
    # the runs the lesson describes state the committed views' numbers
    loss = re.search(r"loss ([\d.]+) -> ([\d.]+)", _record("lines")["summary"]).groups()
    assert f"{loss[0]} -> {loss[1]}" in text
    # a textbook page: formulas typeset (MyST dollar math), no build leftovers in the outputs
    assert page.count('class="math notranslate nohighlight"') >= 100
    assert not re.search(r"Out\[\d*\]", text)  # an exercise check's value left as the cell's
    assert "numba compiled" not in text and "with numba before its first use" not in text
    assert "no sliders here" not in text and "ModuleNotFoundError" not in text
    # the sliders' widget cannot move here: the page says so, and shows no empty output box
    assert "they move in Jupyter, not on this static page" in text
    assert "application/vnd.jupyter.widget-view+json" not in page
    assert not re.search(r'<pre><span></span>\s*</pre>', page)
    # blocks fit the page: the stylesheet that keeps tables and code inside the column
    assert 'href="_static/mixlinreg.css' in page and (built / "_static" / "mixlinreg.css").is_file()
    # the downloads are the lesson itself, as a notebook and as the script
    nbs = list(built.glob("_downloads/*/mixlinreg_lesson.ipynb"))
    pys = list(built.glob("_downloads/*/mixlinreg_lesson.py"))
    assert len(nbs) == 1 and len(pys) == 1
    assert pys[0].read_text() == LESSON.read_text()
    got = jupytext.read(nbs[0])
    assert [c.source for c in got.cells] == [c.source for c in nb.cells]
    assert all(not c.get("outputs") for c in got.cells if c.cell_type == "code")
    for target in (nbs[0], pys[0]):
        assert f'href="{target.relative_to(built).as_posix()}"' in page


def test_checks_page_has_its_tables_and_figures(built):
    checks = (ROOT / "paper_checks.md").read_text()
    page = (built / "paper_checks.html").read_text()
    rows = re.findall(r"^\| \[(\w+)\]\(#(\w+)\) \| .*? \| \*\*(.*?)\*\* \|", checks, flags=re.M)
    assert len(rows) >= 10
    for sid, anchor, verdict in rows:
        assert f'href="#{anchor}"' in page and f'id="{anchor}"' in page, sid
        assert verdict in page
    assert page.count("<table") >= 3
    images = re.findall(r"^!\[\w+\]\((figures/checks/[\w.]+\.png)\)", checks, flags=re.M)
    assert len(images) >= 10
    shown = re.findall(r'<img[^>]+src="(_images/[^"]+)"', page)
    assert len(shown) == len(images) and all((built / s).is_file() for s in shown)
    # the theory page's summary tables link into it
    summary = (built / "theory_checks.html").read_text()
    for sid, anchor, verdict in rows:
        assert f'href="paper_checks.html#{anchor}"' in summary and f">{sid}<" in summary
        assert verdict in summary


def test_ifca_api_page_has_every_method_docstring(built):
    import mixlinreg

    page = (built / "gen_modules" / "mixlinreg.IFCA.html").read_text()
    text = _text(page)
    for name in ("fit", "predict", "score", "bic", "aic"):
        assert f'id="mixlinreg.IFCA.{name}"' in page, name
        doc = getattr(mixlinreg.IFCA, name).__doc__
        words = re.sub(r":\w+:|[`*]", "", doc.strip().split(".")[0].split("(")[0]).split()[:5]
        assert len(words) >= 4 and " ".join(words) in text, (name, words)
        # the method's own part of the page (up to the next method) has its numpydoc sections
        part = page.split(f'id="mixlinreg.IFCA.{name}"', 1)[1].split('id="mixlinreg.IFCA.', 1)[0]
        fields = set(re.findall(r'<dt class="field-\w+">(\w+)<', part))
        want = {"Parameters", "Returns", "Raises"} | ({"Warns"} if name == "fit" else set())
        assert want <= fields, (name, fields)
    # the BIC's derivation: its likelihood (as math) and its parameter count
    assert r"\log L = \sum_{i=1}^m" in page and "p = k d + (k - 1) + 1" in text
    assert "the s shared ones once" in text
    assert "Examples using" in text  # its mini-gallery


def test_math_is_served_by_the_pages_themselves(built):
    assert (built / "_static" / "mathjax" / "tex-chtml.js").is_file()
    pages = list(built.rglob("*.html"))
    assert len(pages) > 50
    with_math = 0
    for p in pages:
        page = p.read_text()
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", page):
            assert not re.search(r'(?:src|href)="(?:https?:)?//', tag), (p.name, tag)
        if "mathjax/tex-chtml.js" in page:
            with_math += 1
    assert with_math >= 5  # lesson, API, gallery pages write formulas


def test_gallery_sections_and_mini_galleries(built):
    index = _text((built / "auto_examples" / "index.html").read_text())
    for sub in ("teaching", "estimator", "paper"):
        title = (GALLERY / sub / "README.txt").read_text().splitlines()[0]
        assert title in index, title
    assert len(SCRIPTS) >= 9
    for s in SCRIPTS:
        page = (built / "auto_examples" / s.parent.name / f"{s.stem}.html").read_text()
        assert "sphx-glr-single-img" in page or "sphx-glr-multi-img" in page, f"{s} made no figure"
        # narrated: text between the code cells
        assert page.count('class="sphx-glr-script-out"') + page.count("highlight-Python") >= 2
        assert len(re.findall(r"^# %%\n# \S", s.read_text(), flags=re.M)) >= 2, s
    for api, example in (("mixlinreg.ifca", "plot_teach_1_lines"),
                         ("mixlinreg.IFCA", "plot_use_1_estimator_bic"),
                         ("mixlinreg.teach.basin_map", "plot_teach_4_basin")):
        page = (built / "gen_modules" / f"{api}.html").read_text()
        assert "Examples using" in page and f"{example}.html" in page, api
    # the gallery's teaching pages state the committed views' numbers (as the lesson does)
    lines = _text((built / "auto_examples" / "teaching" / "plot_teach_1_lines.html").read_text())
    loss = re.search(r"loss ([\d.]+) -> ([\d.]+)", _record("lines")["summary"]).groups()
    assert f"{loss[0]} -> {loss[1]}" in lines
    soft = _text((built / "auto_examples" / "teaching" / "plot_teach_3_soft.html").read_text())
    lesson = _text((built / "lesson.html").read_text())
    for key in ("hard", "soft2"):
        value = f"{_record('soft')['facts'][key]['dist_end']:.3f}"
        assert value in soft and value in lesson, key


STANDALONE = {"os", "sys", "tempfile", "warnings", "numpy", "scipy", "sklearn", "matplotlib", "seaborn",
              "pandas", "mixlinreg"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_gallery_example_runs_standalone(script):
    """Only installed packages are imported and no repository file is read: the downloaded
    script runs after ``pip install mixlinreg``."""
    assert not (GALLERY / "_common.py").exists()
    tree = ast.parse(script.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{script.name}: relative import"
            names = [node.module]
        else:
            names = []
        for name in names:
            assert name.split(".")[0] in STANDALONE, f"{script.name} imports {name}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not tree.body[0].value:
            assert not re.search(r"figures/|experiments/|\.csv|paper_checks", node.value), \
                f"{script.name} names a repository file: {node.value!r}"
        if isinstance(node, ast.Name):
            assert node.id != "__file__", f"{script.name} locates itself"


TEACHING_FACTS = ("counts_start", "counts_min", "counts_max", "counts_end", "moved", "lines_end",
                  "between", "end", "dist_start", "dist_end", "lines_unfound", "leader_start", "m")


@pytest.fixture(scope="module")
def teaching_runs():
    """The teaching examples run in their full setting (as the committed views were made)."""
    import matplotlib

    matplotlib.use("Agg")
    old = os.environ.pop("MIXLINREG_SMOKE", None)
    try:
        return {p.stem: runpy.run_path(str(p)) for p in sorted((GALLERY / "teaching").glob("plot_*.py"))}
    finally:
        if old is not None:
            os.environ["MIXLINREG_SMOKE"] = old


def test_teaching_examples_use_the_views_settings(teaching_runs):
    """Same seeds, sizes and steps as ``figures/teach/*.json``: the runs' facts are the records'."""
    lines, soft = _record("lines"), _record("soft")
    for stem, view in (("plot_teach_1_lines", lines), ("plot_teach_2_plane", _record("plane"))):
        ns = teaching_runs[stem]
        for key in TEACHING_FACTS:
            assert ns["facts"][key] == view["facts"][key], (stem, key)
        assert ns["LR"] == view["facts"]["lr"]
    ns = teaching_runs["plot_teach_3_soft"]
    assert ns["t_em"] == pytest.approx(soft["facts"]["t_em"], rel=1e-12)
    for key in ("hard", "soft2", "soft5", "soft_em"):
        for fact in TEACHING_FACTS:
            assert ns["facts"][key][fact] == soft["facts"][key][fact], (key, fact)
    ns = teaching_runs["plot_teach_4_basin"]
    basin = _record("basin")["facts"]
    assert ns["GRID"] == 41
    for mx, bm in zip(ns["mixes"], ns["maps"]):
        assert bm.success.mean() == pytest.approx(basin[f"k{mx.k}"]["success"], abs=1e-12)
        assert bm.idle[~bm.success].mean() == pytest.approx(basin[f"k{mx.k}"]["fail_idle"], abs=1e-12)
    c = teaching_runs["plot_teach_5_contraction"]["c"]
    con = _record("contraction")["facts"]
    assert c.factor.est == pytest.approx(con["factor"], rel=1e-9)
    assert c.factor_exact == pytest.approx(con["factor_exact"], rel=1e-9)
    assert np.isclose(c.settings["lr"], con["lr"]) and np.isclose(c.settings["p"], con["p"])


def test_lesson_build_drops_only_the_compile_notices():
    """docs/conf.py's filter (used while the lesson runs in the build) drops the mixlinreg
    logger's two compile notices, whose wording it matches in mixlinreg/_firstuse.py, and
    nothing else (a real warning of the package still shows)."""
    import ast
    import logging

    tree = ast.parse((DOCS / "conf.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_CompileNotices")
    ns = {}
    exec(compile(ast.Module(body=[cls], type_ignores=[]), "conf.py", "exec"), ns)
    notices = ns["_CompileNotices"]()
    source = (ROOT / "mixlinreg" / "_firstuse.py").read_text()
    for prefix in notices.PREFIXES:
        assert f'"{prefix}' in source, prefix  # the notices still begin this way

    def rec(msg):
        return logging.LogRecord("mixlinreg", logging.WARNING, __file__, 1, msg, (), None)

    assert not notices.filter(rec("mixlinreg: numba compiled %s for a new argument signature"))
    assert not notices.filter(rec("mixlinreg: compiling %s with numba before its first use"))
    assert notices.filter(rec("mixlinreg: the compiled-kernel cache file %s was damaged"))
    assert notices.filter(rec("mixlinreg: caching the compiled kernels in /tmp instead"))
