"""The hand-written findings of docs/theory_checks.md ("What the measurements say") are checked
against the records they describe: each bullet names its studies, and every decimal number in it
appears in one of those studies' records (the current one or a kept earlier version)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "figures" / "checks"


def _bullets():
    text = (ROOT / "docs" / "theory_checks.md").read_text()
    section = text.split("What the measurements say", 1)[1].split("\n## ", 1)[0]
    return re.split(r"\n- ", section)[1:]


def _records_text(sid):
    files = [CHECKS / f"{sid}_paper.json", *sorted((CHECKS / "versions").glob(f"{sid}_paper_v*.json"))]
    return "".join(f.read_text() for f in files if f.exists())


def test_every_finding_names_its_studies_and_its_numbers_are_theirs():
    ids = sorted(p.name.split("_")[0] for p in CHECKS.glob("*_paper.json"))
    bullets = _bullets()
    assert len(bullets) >= 5, "the findings section was not found"
    for b in bullets:
        cited = [i for i in ids if re.search(rf"\b{re.escape(i)}\b", b)]
        assert cited, f"a finding names no study: {b[:80]!r}"
        blob = "".join(_records_text(i) for i in cited)
        numbers = re.findall(r"(?<![\w.])-?\d+\.\d+", b)
        missing = [n for n in numbers if n.lstrip("-") not in blob]
        assert missing == [], f"{cited}: {missing} are in no record of theirs ({b[:60]!r})"
