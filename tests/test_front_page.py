"""The README is a front page: what mixlinreg is, the Quickstart, the 2 x 2 figure, the verdicts
and links into the docs, where everything else lives. Every link of the README and of the docs'
Markdown pages resolves (files and headings), and the README's caption is its run's record."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _sections(text):
    return [ln[3:].strip() for ln in text.splitlines() if ln.startswith("## ")]


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250, "the README is a front page; details go into docs/"
    assert _sections(text) == ["Quickstart", "The paper's synthetic figure",
                               "What the theory checks found", "Documentation", "Where things are",
                               "References", "License"]
    assert "![Figure 2, paper preset" in text and "(figures/fig2_paper.png)" in text
    docs = text.split("## Documentation")[1].split("\n## ")[0]
    for page in ("getting_started.rst", "user_guide.md", "figure2.md", "theory_checks.md",
                 "teaching.md", "dask.rst", "gpu.md", "development.md"):
        assert f"(docs/{page})" in docs, page


def _slug(heading):
    """GitHub's (and MyST's) anchor of a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _anchors(path):
    text = path.read_text()
    if path.suffix != ".md":
        return None  # only Markdown headings are checked
    included = re.findall(r"```\{include\} (\S+)", text)
    for inc in included:
        text += "\n" + (path.parent / inc).read_text()
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links(path):
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # not inside code blocks
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", [README] + sorted(DOCS.glob("*.md")),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    for target in _links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.exists(), f"{page.name}: link to missing {target}"
        assert ROOT in dest.parents or dest == ROOT, f"{page.name}: link outside the repository"
        if anchor:
            anchors = _anchors(dest)
            assert anchors is None or anchor in anchors, f"{page.name}: no heading #{anchor} in {file}"


def test_links_are_found():
    """The link pattern sees the README's and the docs' links (else the test above checks nothing)."""
    readme = _links(README)
    assert sum(t.startswith("paper_checks.md#") for t in readme) >= 25
    assert {"docs/figure2.md", "docs/gpu.md", "figures/fig2_paper.png"} <= set(readme)
    assert sum(len(_links(p)) for p in DOCS.glob("*.md")) >= 15


def test_readme_caption_is_the_lines_record():
    """The sentence under the README's first picture is the committed lines run's record."""
    facts = json.loads((ROOT / "figures" / "teach" / "lines.json").read_text())["facts"]
    text = " ".join(README.read_text().split())
    m = re.search(r"from a random start model (\d+) wins (\d+) of the (\d+) machines at the first "
                  r"assignment and (\d+) at the end, when every machine is in its true cluster", text)
    assert m, "the README's lines caption"
    leader, start, total, end = map(int, m.groups())
    assert leader == facts["leader_start"] and total == facts["m"]
    assert start == facts["counts_start"][leader - 1] == max(facts["counts_start"])
    assert end == facts["counts_end"][leader - 1] and facts["accuracy_end"] == 1.0
