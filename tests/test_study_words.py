"""A study's words are data (issue 36): the Markdown beside its module, read by
:mod:`mixlinreg.theory.words`, and its sensitivity lines made from the config's neighbours."""

from __future__ import annotations

import re

import pytest

from mixlinreg.theory import studies
from mixlinreg.theory.study import sensitivity_line
from mixlinreg.theory.words import Words, _parse, sensitivity_lines, words

TEXT = """<!-- a comment line is ignored -->
lines before the first section are ignored

## title
A short
title

## summary
The factor is {factor:.3f} against {bound:.4f};
{{braces}} stay.

## summary.none
Nothing measured.

## caveats
- One caveat, {n} runs,
  continued on an indented line.

- Another.

## sensitivity
- margin: margin above the bound
- floor: the {what} floor
"""


def _words(text=TEXT):
    return Words("x.md", _parse(text, "x.md"))


def test_paragraphs_join_their_lines_and_lists_their_items():
    w = _words()
    assert w.text("title") == "A short title"
    assert w.text("summary", factor=0.12345, bound=0.5) == \
        "The factor is 0.123 against 0.5000; {braces} stay."
    assert w.text("summary.none") == "Nothing measured."
    assert w.items("caveats", n=3) == ["One caveat, 3 runs, continued on an indented line.",
                                       "Another."]
    assert w.labels(what="lower") == {"margin": "margin above the bound",
                                      "floor": "the lower floor"}
    assert w.names("summary") == {"factor", "bound"}
    # a value may be called name (the section is positional only)
    assert _words("## s\nthe {name}\n").text("s", name="cell") == "the cell"


def test_a_missing_value_or_section_is_named():
    w = _words()
    with pytest.raises(KeyError, match=r"x.md, section '## summary': the text names \{bound\}"):
        w.text("summary", factor=1.0)
    with pytest.raises(KeyError, match=r"no section '## claim' \(it has: title, summary"):
        w.text("claim")
    with pytest.raises(TypeError, match="is a list, not a paragraph"):
        w.text("caveats", n=1)
    with pytest.raises(TypeError, match="is a paragraph, not a list"):
        w.items("title")


@pytest.mark.parametrize("text, message", [
    ("## a\nx\n\ny\n", "a paragraph section has no blank lines"),
    ("## a\n- x\ny\n", "a list's line must start with '- ' or be indented"),
    ("## a\nx\n## a\ny\n", "section '## a' appears twice"),
])
def test_malformed_text_is_refused_with_its_section(text, message):
    with pytest.raises(ValueError, match=message):
        _parse(text, "x.md")


def test_sensitivity_lines_cover_every_margin_with_neighbours():
    w = _words()
    params = {"params": {}, "margins": {"margin": 0.1, "margin_neighbours": [0.05, 0.2],
                                        "floor": 2.0, "floor_neighbours": [1.0]}}

    def verdict_at(q, key):
        return "holds" if q["margins"][key] <= {"margin": 0.1, "floor": 2.0}[key] else "inconclusive"

    lines = sensitivity_lines(w, params, verdict_at, what="lower")
    assert lines == [
        sensitivity_line("margin above the bound", 0.1, lambda v: verdict_at(
            {"margins": {"margin": v}}, "margin"), [0.05, 0.2]),
        "the lower floor (chosen 2): 1 -> holds; 2 -> holds"]
    assert lines[0] == ("margin above the bound (chosen 0.1): 0.05 -> holds; 0.1 -> holds; "
                        "0.2 -> inconclusive")
    # a margin with neighbours the text does not name, or a label for no such margin: refused
    more = {**params, "margins": {**params["margins"], "tol": 1.0, "tol_neighbours": [2.0]}}
    with pytest.raises(ValueError, match=r"missing \['tol'\]"):
        sensitivity_lines(w, more, verdict_at, what="lower")
    assert len(sensitivity_lines(w, more, verdict_at, made_by_study=("tol",), what="lower")) == 2
    fewer = {"params": {}, "margins": {"margin": 0.1, "margin_neighbours": [0.2]}}
    with pytest.raises(ValueError, match=r"not margins with neighbours \['floor'\]"):
        sensitivity_lines(w, fewer, verdict_at, what="lower")


def test_every_words_file_belongs_to_a_study_and_parses():
    import mixlinreg.theory.studies as pkg
    from pathlib import Path

    folder = Path(pkg.__file__).parent
    md = sorted(folder.glob("*.md"))
    assert md, "no study words found"
    ported = []
    for path in md:
        assert path.with_suffix(".py").exists(), f"{path.name} has no study module beside it"
        w = words(path.with_suffix(".py"))
        ported.append(path.stem)
        assert w.sections, path.name
    # a study whose module has words takes its title, claim and location from them, filled in
    # (a claim may hold braces of its own, k^{3/2}: only an unfilled {name} is a mistake)
    unfilled = re.compile(r"\{[A-Za-z_]\w*(?:[:!][^{}]*)?\}")
    for sid in studies.ids():
        study = studies.get(sid)
        if study.words is not None:
            for key in ("title", "claim", "location"):
                value = getattr(study, key)
                assert value and not unfilled.search(value), (sid, key, value)
