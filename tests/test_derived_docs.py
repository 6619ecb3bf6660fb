"""Every document derived from the committed study records is current (``mixlinreg regenerate``).

Fast: nothing is computed. ``regenerate --check`` reads the records in ``figures/checks`` and the
pages; the tests that change a number work on a temporary copy, so the repository is never written.
"""

import re
import shutil
from pathlib import Path

import pytest

from mixlinreg.theory import derived
from mixlinreg.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_every_derived_document_is_current(capsys):
    stale = derived.stale(ROOT)
    assert stale == [], ("stale derived documents (remake them with `mixlinreg regenerate` and "
                         "commit them with the records): "
                         + "; ".join(f + (f", block '{b}'" if b else "") for f, b in stale))
    assert main(["regenerate", "--check", "--root", str(ROOT)]) == 0
    assert "every derived document is current" in capsys.readouterr().out


def test_every_page_has_its_blocks():
    for page, names in derived.PAGES.items():
        found = derived.blocks((ROOT / page).read_text(), page)
        assert [b.name for b in found] == list(names), page
    assert set(n for names in derived.PAGES.values() for n in names) == set(derived.GENERATORS)


def _copy(tmp_path):
    """The records, the report and the pages of :data:`mixlinreg.theory.derived.PAGES` in ``tmp_path``."""
    (tmp_path / derived.RECORDS).mkdir(parents=True)
    for rec in (ROOT / derived.RECORDS).glob("*.json"):
        shutil.copy(rec, tmp_path / derived.RECORDS / rec.name)
    versions = ROOT / derived.RECORDS / "versions"  # earlier versions: the audit shows them
    if versions.is_dir():
        shutil.copytree(versions, tmp_path / derived.RECORDS / "versions")
    for name in [derived.REPORT, *derived.PAGES]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _change(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _bump(path, pattern):
    """Add 1 to the number that ``pattern``'s group 1 first matches in ``path``: a changed count
    that does not depend on how many studies there are today."""
    text = path.read_text()
    found = re.search(pattern, text)  # the first one
    assert found, pattern
    a, b = found.span(1)
    path.write_text(text[:a] + str(int(text[a:b]) + 1) + text[b:])


def test_check_names_each_stale_block_and_writes_nothing(tmp_path, capsys):
    root = _copy(tmp_path)
    readme, counts = root / "README.md", root / "docs" / "theory_checks.md"
    row = next(ln for ln in readme.read_text().splitlines() if ln.startswith("| [T1](paper_checks"))
    _change(readme, row, row.replace("| paper |", "| quick |"))  # one cell of the verdict tables
    _bump(counts, r"and (\d+) of the FPFC paper")  # one count
    _bump(root / derived.REPORT, r" claims of the paper: (\d+) hold,")  # one tally
    before = {p: p.read_bytes() for p in (readme, counts, root / derived.REPORT)}
    assert derived.stale(root) == [(derived.REPORT, None), ("README.md", "verdict-tables"),
                                   ("docs/theory_checks.md", "study-counts")]
    assert main(["regenerate", "--check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "stale: README.md (derived block 'verdict-tables')" in out
    assert "stale: docs/theory_checks.md (derived block 'study-counts')" in out
    assert "stale: paper_checks.md\n" in out and "3 stale" in out
    assert {p: p.read_bytes() for p in before} == before  # --check writes nothing
    # the one step puts back exactly the committed text
    assert main(["regenerate", "--root", str(root)]) == 0
    assert readme.read_bytes() == (ROOT / "README.md").read_bytes()
    assert (root / derived.REPORT).read_bytes() == (ROOT / derived.REPORT).read_bytes()
    assert "and 3 of the FPFC paper" in counts.read_text()
    assert derived.stale(root) == []


def test_an_inline_block_may_be_wrapped_differently(tmp_path):
    root = _copy(tmp_path)
    page = root / "docs" / "theory_checks.md"
    text = page.read_text()
    block = text.split("<!-- derived: study-counts -->")[1].split("<!-- /derived -->")[0]
    words = block.split()
    rewrapped = "\n  ".join(" ".join(words[i:i + 3]) for i in range(0, len(words), 3))
    assert rewrapped != block
    _change(page, block, rewrapped)  # the same words, wrapped otherwise
    before = page.read_bytes()
    assert derived.stale(root) == []
    derived.regenerate(root)
    assert page.read_bytes() == before  # current: left as the person wrapped it


def test_the_markers_are_html_comments_the_page_does_not_show():
    """Rendered as CommonMark (what GitHub and MyST parse), each marker is an HTML comment passed
    through, not text, and the README's verdict tables stay tables."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    for page, names in derived.PAGES.items():
        html = md.render((ROOT / page).read_text())
        for name in names:
            assert f"<!-- derived: {name} -->" in html, (page, name)
        assert html.count("<!-- /derived -->") == len(names), page
        assert "&lt;!-- derived" not in html and "&lt;!-- /derived" not in html, page
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- derived: verdict-tables -->")[1].split("<!-- /derived -->")[0]
    tables = (ROOT / derived.REPORT).read_text().count("\n| ID | ")
    assert md.render(block).count("<table>") == tables >= 3


@pytest.mark.parametrize("text, message", [
    ("a <!-- derived: x -->1 b", "derived block 'x' has no '<!-- /derived -->'"),
    ("a 1<!-- /derived --> b", "page:1: '<!-- /derived -->' closes no derived block"),
    ("<!-- derived: x -->\n<!-- derived: y -->\n<!-- /derived -->",
     "page:2: derived block 'y' starts inside derived block 'x'"),
    ("<!-- derived: -->1<!-- /derived -->", "a derived block needs a name"),
])
def test_malformed_markers_are_one_clear_error(text, message):
    with pytest.raises(ValueError) as exc:
        derived.blocks(text, "page")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_errors_name_what_is_wrong(tmp_path, capsys):
    assert main(["regenerate", "--check", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no record folder {tmp_path / derived.RECORDS}" in err, err
    root = _copy(tmp_path / "repo")
    _change(root / "README.md", "<!-- derived: report-notes -->", "<!-- derived: report-note -->")
    assert main(["regenerate", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "README.md: unknown derived block 'report-note'" in err and err.count("\n") == 1, err
    # a file that cannot be written is found before any other is written
    root = _copy(tmp_path / "repo2")
    row = next(ln for ln in (root / "README.md").read_text().splitlines() if ln.startswith("| [T1]"))
    _change(root / "README.md", row, row.replace("| paper |", "| quick |"))
    before = (root / "README.md").read_bytes()
    (root / derived.REPORT).unlink()
    (root / derived.REPORT).mkdir()
    assert main(["regenerate", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{root / derived.REPORT} is a folder" in err and err.count("\n") == 1, err
    assert (root / "README.md").read_bytes() == before


def test_the_phrases_follow_the_records():
    """The generators on made-up records: several notes, mixed presets, a study without a record."""
    import pandas as pd

    from mixlinreg.theory.study import StudyResult

    def rec(sid, kind="claim", preset="paper", paper="IFCA"):
        verdict = "holds" if kind == "claim" else "same results"
        return StudyResult(sid, "t", "c", "l", verdict, "s", pd.DataFrame(), kind=kind,
                           preset=preset, paper=paper)

    src = derived.Sources({"L1": rec("L1"), "D1": rec("D1", "note", "quick"),
                           "X": rec("X", "note", paper="CFL")}, ["T1"], "")
    assert derived.report_notes(src) == ("D1 and X are reproducibility notes, not claims, and are "
                                         "not counted among the verdicts")
    assert derived.report_presets(src) == ("presets `paper` for 2 studies, `quick` for 1 study "
                                           "(1 not run yet)")
    assert derived.study_counts(src) == ("4 studies (2 claims and 2 reproducibility notes): 3 of "
                                         "the IFCA paper, 1 of the CFL paper and 0 of the FPFC paper")
    one = derived.Sources({"L1": rec("L1")}, [], "")
    assert derived.report_presets(one) == "preset `paper` for every study"
    assert derived.report_notes(one) == "no study is a reproducibility note"
