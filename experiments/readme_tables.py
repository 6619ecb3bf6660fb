"""Copy the verdict tables of ``paper_checks.md`` into the README (one block per paper).

The README's block starts after the line that begins with ``Verdicts of the committed runs`` and
ends before the line that begins with ``What each study measures``; it is replaced by, for every
``## PAPER`` section of the report in order, ``**PAPER**`` and that section's tables with their
links pointed at ``paper_checks.md``. ``tests/test_paper_checks.py::test_readme_tables_are_the_reports``
checks the result. Run from the repository root after regenerating the report::

    mixlinreg check --report-only --preset paper --out figures/checks --write paper_checks.md
    python experiments/readme_tables.py
"""

from __future__ import annotations

import sys
from pathlib import Path

START = "Verdicts of the committed runs"
END = "What each study measures"


def sections(report: str):
    """``[(paper, [table, ...]), ...]`` in report order; a table is its lines joined."""
    out, paper = [], None
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## "):
            paper = line[3:].strip()
            out.append((paper, []))
        elif line.startswith("| ID | ") and paper is not None:
            rows = [line, lines[i + 1]]
            for row in lines[i + 2:]:
                if not row.startswith("| "):
                    break
                rows.append(row.replace("](#", "](paper_checks.md#"))
            out[-1][1].append("\n".join(rows))
    return [(p, t) for p, t in out if t]


def block(report: str) -> str:
    parts = []
    for paper, tables in sections(report):
        notes = any(t.startswith("| ID | note") for t in tables)
        parts.append(f"**{paper}**" + (" (claims, then reproducibility notes):" if notes else ":"))
        parts.extend(tables)
    return "\n\n".join(parts) + "\n\n"


def main(root: Path) -> int:
    readme_path, report = root / "README.md", (root / "paper_checks.md").read_text()
    readme = readme_path.read_text()
    i = readme.index(START)
    i = readme.index("\n", i) + 1
    j = readme.index(END, i)
    new = readme[:i] + "\n" + block(report) + readme[j:]
    if new != readme:
        readme_path.write_text(new)
        print("README.md: verdict tables replaced")
    else:
        print("README.md: verdict tables already current")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
