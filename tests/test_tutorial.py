"""The lesson (experiments/tutorial.py) runs end to end in its smoke mode, and opens as a notebook.

The smoke lesson runs once per module, in this process (``runpy``: the kernels numba already
loaded for the other tests are reused), and the tests read its printout. Its own ``assert``
statements (every sentence about a run is checked right after it) run with it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
from pathlib import Path

import pytest

LESSON = Path(__file__).resolve().parents[1] / "experiments" / "tutorial.py"
FIGS = LESSON.parents[1] / "figures" / "teach"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Run the smoke lesson once: (printout, folder of its figures)."""
    figs = tmp_path_factory.mktemp("lesson_figures")
    env = {"MIXLINREG_SMOKE": "1", "MIXLINREG_LESSON_FIGURES": str(figs), "MPLBACKEND": "Agg"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(LESSON), run_name="__main__")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return buf.getvalue(), figs


def _rec(view):
    return json.loads((FIGS / f"{view}.json").read_text())


def test_lesson_smoke_runs(smoke):
    text, figs = smoke
    assert "smoke sizes" in text
    for n in range(1, 9):  # the exercises are stubs for the student: reported, not crashed on
        assert f"exercise {n}: not attempted yet" in text
    assert ": correct" not in text  # no solution in the lesson
    figs = sorted(p.name for p in figs.glob("*.png"))
    assert figs == ["12_contraction.png", "1_data.png", "4_lines.png", "4_plane.png",
                    "5b_basin.png", "6_soft.png", "6_weights.png"]


def test_lesson_numbers_are_the_views_records(smoke):
    """The runs the text describes have the committed views' lengths, so their numbers are the
    records' (figures/teach/*.json) in the smoke mode too."""
    text, _ = smoke
    soft, lines = _rec("soft")["facts"], _rec("lines")["facts"]
    assert f"distance to the truth {soft['hard']['dist_end']:.3f}" in text
    assert f"hard IFCA: distance {soft['hard']['dist_end']:.3f}" in text
    for key, tt in (("soft_em", "0.033"), ("soft2", "2.000"), ("soft5", "5.000")):
        assert f"temperature {tt}: distance {soft[key]['dist_end']:.3f}" in text
    assert f"machines per model: [{lines['counts_start']}" in text
    assert "lr = 1.8 (above the threshold 1.70): diverged False, final distance 1.17" in text
    assert "contraction per iteration: measured" in text and "Theorem 1: 0.500" in text
    assert "T1  not supported" in text  # the paper_checks.md table is read, not retyped


def test_deeper_sections_print_their_runs(smoke):
    text, _ = smoke
    # section 3: the objective never rises at lr 0.5 (<= 1 / lambda_max(H)); it does at 1.8
    assert "lr = 0.5 <= 1 / lambda_max(H) = 0.981 for this draw" in text
    assert "lr = 1.6: smallest 1 / (p_j lambda_max(H_j)) along the run 1.701; the training " \
           "loss rises in 0 of 100" in text
    assert "lr = 1.8:" in text and "loss rises in 0 of 100" not in text.split("lr = 1.8:")[1][:200]
    # section 9: BIC over k = 1..5 on the three-line problem chooses 3 ...
    assert "chosen k = 3" in text and text.count(", BIC ") == 5
    # ... and picks a wrong k when the lines are closer than a machine's noise, or with one start
    close = text.split("(1) Delta = 0.1 < sigma sqrt(d/n) = 0.18")[1].split("\n(2)")[0]
    assert "for k = 1..4, picks k = " in close and "picks k = 3" not in close
    one = " ".join(text.split("(2) n_init=1, seed ")[1].split("\n")[:2])
    assert "picks k = " in one and "picks k = 3" not in one
    # section 7: what alpha0 changes, printed from its run
    assert "From alpha0 = 0.05 to 0.45 the starts move from 1.12 to 0.12 from the" in text
    # section 1: d = 2 is below Assumption 2's d >~ log m
    assert "d = 2, log m = 3.40" in text
    # section 11: all machines every round: the loss never rises; a partial round can raise it
    rounds = text.split("s = 30: rounds")[1]
    assert "the training loss rises in 0 of 1200 rounds" in rounds.split("s = 15")[0]
    assert "the training loss rises in 0 of" not in rounds.split("s = 15")[1].split("Assumption")[0]
    # section 12: Assumption 2's conditions, both sides, for the contraction run
    assert "Assumption 2, both sides (constants unknown): d = 4 vs log m = 4.1" in text
    # sections 10 and 11
    assert "option II at lr 0.1 vs option I at lr 0.1 m / m_j" in text
    assert "s = 6 of 30: mean step / full step" in text
    # section 15: one line, with or without ipywidgets and teach.sliders
    assert ("the sliders need a notebook" in text) or ('pip install "mixlinreg[teach]"' in text)


def test_lesson_smoke_flag_and_notebook_cells():
    text = LESSON.read_text()
    assert text.count("# %%") >= 20 and "# %% [markdown]" in text
    assert "--smoke" in text and "MIXLINREG_SMOKE" in text
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(LESSON)
    kinds = [c.cell_type for c in nb.cells]
    assert kinds.count("markdown") >= 30 and kinds.count("code") >= 30
    # every Markdown cell is a comment block (percent format), so the script runs as Python
    for c in nb.cells:
        if c.cell_type == "markdown":
            assert c.source.strip(), c
    # an exercise check's True/False is assigned, not left as the cell's value ("Out: False")
    checks = [ln for ln in text.splitlines() if "exercises.check_" in ln]
    assert len(checks) == 8 and all(ln.startswith("verdict = exercises.check_") for ln in checks)
    # no file of the repository is read except the guarded paper_checks.md
    assert text.count("read_text(") == 1 and "if checks.is_file():" in text


def test_sliders_cell_without_ipywidgets(monkeypatch):
    """The sliders cell prints one line, and does not fail, when ipywidgets is missing."""
    import sys

    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(LESSON)
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "teach.sliders" in c.source)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets -> ImportError
    from mixlinreg import teach

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(cell, {"teach": teach, "IN_NOTEBOOK": False})
    out = buf.getvalue().strip()
    assert out.count("\n") == 0 and 'pip install "mixlinreg[teach]"' in out
    assert "need the ipywidgets package" in out and "Error" not in out  # plain words
