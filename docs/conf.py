"""Sphinx configuration of the mixlinreg documentation.

Build: ``pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html``.
``MIXLINREG_DOCS_FAST=1`` runs the gallery scripts and the lesson in their smoke setting (the test
suite does).

Pages made here when the docs are built (never edited by hand, never committed):

* ``lesson.ipynb``: ``experiments/tutorial.py`` (Jupyter percent format) read by jupytext, with a
  download note after its title, executed here at every build (:func:`_execute`: an in-process
  IPython shell, as in a notebook, with no kernel to start or talk to) so that the page, which
  MyST-NB renders, shows its outputs and figures. The downloads
  (``_generated/mixlinreg_lesson.ipynb`` and ``.py``) are the lesson itself, unchanged.
* ``_generated/verdicts.rst`` and ``notes.rst``: the summary tables of ``paper_checks.md``.

Math is rendered by MathJax served from the built pages themselves (``sphinx-mathjax-offline``):
no page loads anything from the network.
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
    os.environ["MIXLINREG_SMOKE"] = "1"  # read by the gallery scripts and the lesson

import mixlinreg  # noqa: E402

project = "mixlinreg"
author = "mixlinreg developers"
copyright = "2026, mixlinreg developers"
release = version = mixlinreg.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax copied into _static: math renders with no network
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_nb",  # Markdown pages (myst-parser) and the executed lesson
]

# MathJax from the built pages (sphinx-mathjax-offline copies it to _static/mathjax)
mathjax_path = "mathjax/tex-chtml.js"

autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# -- the gallery: sections are the sub-folders of experiments/gallery (each with a README.txt);
# every API page lists the examples that use it (backreferences + the autosummary templates)
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "experiments" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib", "_scraper.figure_scraper"),
    "only_warn_on_example_error": False,
    "write_computation_times": False,
    # always execute: never show output of an older version of a script (or of the fast setting)
    "run_stale_examples": True,
    "doc_module": ("mixlinreg",),
    "backreferences_dir": "gen_modules/backreferences",
    "inspect_global_variables": False,
}

# -- MyST (Markdown pages) and MyST-NB (the lesson, executed at every build)
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4  # paper_checks.md links to its own headings (#l1, #t1, ...)
# executed by _execute below, not by a kernel: nbclient's kernel round trips were seen to stall
# for good (both sides idle) in about one build in three on this project's machines
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js = {}  # never load widget JavaScript from the network

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "_screenshots",
                    # sphinx-gallery's downloadable notebooks are downloads, not pages
                    "auto_examples/*.ipynb", "auto_examples/**/*.ipynb"]
html_theme = "alabaster"
# 1240 px fits a 1280 px window; the body column (no 800 px cap) then holds a 100-character
# code line at the code font of _static/mixlinreg.css
html_theme_options = {"description": "IFCA on mixtures of linear regressions", "page_width": "1240px",
                      "body_max_width": "none"}
# _static/mixlinreg.css: wide tables scroll in their own box; code and output blocks wrap
html_static_path = ["_static"]
html_css_files = ["mixlinreg.css"]
html_title = "mixlinreg"

LESSON = ROOT / "experiments" / "tutorial.py"
GENERATED = DOCS / "_generated"


def _write_if_changed(path, text):
    """Write ``text`` to ``path`` unless it already holds it (keeps Sphinx's caches valid)."""
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _lesson_page():
    """``lesson.ipynb`` (the page) and the two downloads from ``experiments/tutorial.py``."""
    import jupytext
    import nbformat

    GENERATED.mkdir(exist_ok=True)
    nb = jupytext.read(LESSON)
    # the downloads: the lesson itself, as a notebook and as the script
    _write_if_changed(GENERATED / "mixlinreg_lesson.ipynb", nbformat.writes(nb) + "\n")
    _write_if_changed(GENERATED / "mixlinreg_lesson.py", LESSON.read_text(encoding="utf-8"))
    note = ("```{note}\nThis page is `experiments/tutorial.py`, executed when these pages were built"
            + (" in its small setting (`MIXLINREG_SMOKE=1`)" if FAST else "") + ". Download it "
            "{download}`as a notebook <_generated/mixlinreg_lesson.ipynb>` or "
            "{download}`as a script <_generated/mixlinreg_lesson.py>`: both run on their own after "
            "`pip install mixlinreg` (a notebook needs `jupyter` too); `MIXLINREG_SMOKE=1` runs the "
            "small setting.\n```")
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.startswith("# "):
        title, _, rest = first.source.partition("\n")
        first.source = f"{title}\n\n{note}\n{rest}"
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell("# The lesson\n\n" + note))
    _execute(nb, cwd=DOCS)
    _write_if_changed(DOCS / "lesson.ipynb", nbformat.writes(nb) + "\n")


WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ("The sliders are a live ipywidgets widget: they move in Jupyter, not on this static "
               "page. The figure of this cell is what they draw first, at their default values.\n")


class _CompileNotices:
    """A logging filter that drops the mixlinreg logger's numba compile notices (and only them)."""

    PREFIXES = ("mixlinreg: compiling ", "mixlinreg: numba compiled ")

    def filter(self, record):
        return not str(record.msg).startswith(self.PREFIXES)


def _execute(nb, cwd):
    """Run the code cells of ``nb`` in order in an IPython shell of this process, as a notebook
    would (``display`` shows figures inline), and store each cell's printed text and displays as
    its outputs. A cell that raises stops the build with the cell and the error."""
    import ipykernel  # noqa: F401  (the lesson shows figures where ipykernel is loaded)
    import matplotlib
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # inline figures need no event loop
            pass

    config = Config()
    config.HistoryManager.enabled = False
    shell = Shell.instance(config=config, user_ns={"__name__": "__main__"})  # get_ipython()
    # the page shows the lesson, not this build machine's numba cache: drop the mixlinreg logger's
    # compile notices ("compiling ... before its first use", "numba compiled ..."), nothing else
    import logging

    logger = logging.getLogger("mixlinreg")
    notices = _CompileNotices()
    logger.addFilter(notices)
    backend = matplotlib.get_backend()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        shell.enable_matplotlib("inline")
        for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            with capture_output() as cap:
                res = shell.run_cell(cell.source, silent=False, store_history=False)
            if not res.success:
                raise RuntimeError(f"the lesson's code cell {n + 1} failed: "
                                   f"{res.error_in_exec or res.error_before_exec!r}\n{cell.source}"
                                   f"\n{cap.stdout[-2000:]}")
            # whitespace-only text (a widget's clear_output) would be an empty box on the page
            cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text)
                            for name, text in (("stdout", cap.stdout), ("stderr", cap.stderr))
                            if text.strip()]
            for o in cap.outputs:
                if WIDGET in o.data:  # a live widget cannot move on a static page: say so
                    cell.outputs.append(nbformat.v4.new_output(
                        "stream", name="stdout", text=WIDGET_NOTE))
                else:
                    cell.outputs.append(nbformat.v4.new_output(
                        "display_data", data=o.data, metadata=o.metadata))
            cell.execution_count = n + 1
    finally:
        logger.removeFilter(notices)
        os.chdir(here)
        shell.cleanup()
        Shell.clear_instance()
        matplotlib.use(backend)


_lesson_page()


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
        return f"`{m.group(1)} <paper_checks.html#{m.group(2)}>`__"
    return text.replace("\\|", "|") or " "


def _verdict_tables():
    """Write ``_generated/verdicts.rst`` (the claims' tables, one per paper) and
    ``_generated/notes.rst`` (the notes' tables) from paper_checks.md (never retyped)."""
    tables = _report_tables()
    if not any(head[1] == "claim" for _, head, _ in tables):
        raise RuntimeError("paper_checks.md has no verdict table")
    gen = GENERATED
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
        _write_if_changed(gen / f"{name}.rst", new)


_verdict_tables()
exclude_patterns.append("_generated")
