"""Sphinx configuration of the mixlinreg documentation.

Build: ``pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html``.
``MIXLINREG_DOCS_FAST=1`` runs the gallery scripts in their smoke setting (the test suite does).
"""

import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))  # _scraper

FAST = os.environ.get("MIXLINREG_DOCS_FAST", "") == "1"
if FAST:
    os.environ["MIXLINREG_SMOKE"] = "1"  # read by the gallery scripts

import mixlinreg  # noqa: E402

project = "mixlinreg"
author = "mixlinreg developers"
copyright = "2026, mixlinreg developers"
release = version = mixlinreg.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "experiments" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py|^_common\.py",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib", "_scraper.figure_scraper"),
    "only_warn_on_example_error": False,
    "write_computation_times": False,
    # always execute: never show output of an older version of a script (or of the fast setting)
    "run_stale_examples": True,
}

templates_path = []
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_theme = "alabaster"
html_theme_options = {"description": "IFCA on mixtures of linear regressions", "page_width": "1100px"}
html_static_path = []
html_extra_path = [str(ROOT / "paper_checks.md")]
html_title = "mixlinreg"


def _report_tables():
    """Every summary table of paper_checks.md as ``(paper, header cells, rows of cells)``: one
    verdict table per paper, and a notes table where a paper has reproducibility notes."""
    lines = (ROOT / "paper_checks.md").read_text(encoding="utf-8").splitlines()
    tables, paper = [], None
    for i, line in enumerate(lines):
        if line.startswith("## "):
            paper = line[3:].strip()
        if line.startswith("| ID | "):
            head = [c.strip() for c in line.strip("|").split(" | ")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("| "):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split(" | ")])
            tables.append((paper, head, rows))
    return tables


def _cell(text):
    """A paper_checks.md cell as reStructuredText: its links into the report, its bold."""
    m = re.fullmatch(r"\[(\w+)\]\(#(\w+)\)", text)
    if m:
        return f"`{m.group(1)} <paper_checks.md#{m.group(2)}>`__"
    return text.replace("\\|", "|") or " "


def _verdict_tables():
    """Write ``_generated/verdicts.rst`` (the claims' tables, one per paper) and
    ``_generated/notes.rst`` (the notes' tables) from paper_checks.md (never retyped)."""
    tables = _report_tables()
    if not any(head[1] == "claim" for _, head, _ in tables):
        raise RuntimeError("paper_checks.md has no verdict table")
    gen = DOCS / "_generated"
    gen.mkdir(exist_ok=True)
    for name, kind in (("verdicts", "claim"), ("notes", "note")):
        out = []
        for paper, head, rows in tables:
            if head[1] != kind or not rows:
                continue
            widths = " ".join(["8", "40", "18"] + (["24"] if len(head) == 6 else []) + ["5", "5"])
            out += [f"**{paper}**", "", ".. list-table::", "   :header-rows: 1",
                    f"   :widths: {widths}", ""]
            for cells in [head] + rows:
                out += [f"   * - {_cell(cells[0])}"] + [f"     - {_cell(c)}" for c in cells[1:]]
            out.append("")
        new = "\n".join(out or ["(none in this report)"]) + "\n"
        target = gen / f"{name}.rst"
        if not target.is_file() or target.read_text(encoding="utf-8") != new:
            target.write_text(new, encoding="utf-8")


_verdict_tables()
exclude_patterns.append("_generated")
