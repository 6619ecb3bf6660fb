"""The documentation builds without warnings (gallery in its smoke setting) and quotes true numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_docs_build_fast(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    env = dict(os.environ, MIXLINREG_DOCS_FAST="1", MPLBACKEND="Agg")
    out = tmp_path / "html"
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                         env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-4000:])
    for page in ("index", "getting_started", "lesson", "figure2", "theory_checks", "dask", "gpu", "api"):
        assert (out / f"{page}.html").is_file(), page
    scripts = sorted(p.stem for p in (ROOT / "experiments" / "gallery").glob("plot_*.py"))
    assert len(scripts) >= 8
    for s in scripts:
        html = (out / "auto_examples" / f"{s}.html").read_text()
        assert "sphx-glr-single-img" in html, f"{s} made no figure"
    assert (out / "gen_modules" / "mixlinreg.teach.basin_map.html").is_file()
    # the verdict table is read from paper_checks.md, every verdict appears on the page
    checks = (ROOT / "paper_checks.md").read_text()
    page = (out / "theory_checks.html").read_text()
    rows = re.findall(r"^\| \[(\w+)\]\(#\w+\) \| .*? \| \*\*(.*?)\*\* \|", checks, flags=re.M)
    assert len(rows) >= 10
    for sid, verdict in rows:
        assert f">{sid}<" in page and verdict in page
    assert (out / "paper_checks.md").is_file()
    assert wall < 120, wall  # the budget for the docs test


def test_figure2_times_are_the_readmes():
    """Every measured time quoted in docs/figure2.rst is a number recorded in the README."""
    text = (DOCS / "figure2.rst").read_text()
    section = text.split("Times measured")[1].split("The panels")[0]
    quoted = re.findall(r"\*\*(.+?)\*\*", section)
    assert len(quoted) >= 8
    readme = (ROOT / "README.md").read_text()
    for q in quoted:
        assert q in readme, q


def test_gpu_numbers_are_the_readmes():
    """Every measured number quoted in docs/gpu.rst is written in the README's GPU section."""
    text = (DOCS / "gpu.rst").read_text()
    quoted = [q for q in re.findall(r"\*\*(.+?)\*\*", text) if re.search(r"\d", q)]
    assert len(quoted) >= 8
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## On a GPU: the JAX backend")[1].split("\n## ")[0]
    for q in quoted:
        assert q in section, q
