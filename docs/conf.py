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


def _report_table(header):
    """The rows of the paper_checks.md table whose header row is ``header``."""
    lines = (ROOT / "paper_checks.md").read_text(encoding="utf-8").splitlines()
    if header not in lines:
        return []
    rows = []
    for line in lines[lines.index(header) + 2:]:
        m = re.match(r"\| \[(\w+)\]\(#\w+\) \| (.*?) \| \*\*(.*?)\*\* \| (\w+) \| (.*?) \|$", line)
        if not m:
            break
        rows.append(m.groups())
    return rows


def _verdict_table(header, columns, name, required):
    """Write ``_generated/<name>.rst`` from a paper_checks.md summary table (never retyped):
    the claims' verdicts, or the reproducibility notes' outcomes."""
    rows = _report_table(header)
    if required and not rows:
        raise RuntimeError(f"paper_checks.md has no table {header!r}")
    out = [".. list-table::", "   :header-rows: 1", "   :widths: 8 52 20 10 10", ""]
    out += ["   * - " + columns[0]] + [f"     - {c}" for c in columns[1:]]
    for sid, claim, verdict, preset, secs in rows:
        out += [f"   * - `{sid} <paper_checks.md#{sid.lower()}>`__", f"     - {claim}",
                f"     - **{verdict}**", f"     - {preset}", f"     - {secs}"]
    if not rows:
        out = ["(none in this report)"]
    gen = DOCS / "_generated"
    gen.mkdir(exist_ok=True)
    target = gen / f"{name}.rst"
    new = "\n".join(out) + "\n"
    if not target.is_file() or target.read_text(encoding="utf-8") != new:
        target.write_text(new, encoding="utf-8")


_verdict_table("| ID | claim | verdict | preset | seconds |",
               ["ID", "claim", "verdict", "preset", "seconds"], "verdicts", required=True)
_verdict_table("| ID | note | outcome | preset | seconds |",
               ["ID", "note", "outcome", "preset", "seconds"], "notes", required=False)
exclude_patterns.append("_generated")
