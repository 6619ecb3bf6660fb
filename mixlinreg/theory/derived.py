"""Every document derived from the committed study records, remade in one step.

``mixlinreg regenerate`` (:func:`regenerate`) rewrites, from the records in ``figures/checks``
alone (nothing is computed):

* ``paper_checks.md``, the whole file, exactly as ``mixlinreg check --report-only --preset paper
  --out figures/checks --write paper_checks.md`` writes it
  (:func:`mixlinreg.theory.report.report_text`);
* in the hand-written pages of :data:`PAGES`, each *derived block*: the text between
  ``<!-- derived: NAME -->`` and ``<!-- /derived -->`` (HTML comments: GitHub and the Sphinx
  pages show neither marker), made by the generator ``NAME`` of :data:`GENERATORS`. Everything
  outside the markers stays hand-written.

A block whose start marker ends its line stands on its own lines (its text is ``"\\n\\n" + generated +
"\\n\\n"``: a blank line after the start marker and before the end marker, compared byte for
byte); otherwise it is *inline*, a phrase inside a sentence, compared up to the line breaks and
spaces a person wrapped it with (and rewritten only when its words differ).

``mixlinreg regenerate --check`` writes nothing and lists each stale file and block (exit status
1); the test suite runs it. A new study is its module, its words and its config: its record, once made,
reaches every derived document through this one step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RECORDS", "PRESET", "REPORT", "PAGES", "GENERATORS", "blocks", "stale", "regenerate"]

#: the committed records, the preset the report shows and the report, relative to the root
RECORDS, PRESET, REPORT = "figures/checks", "paper", "paper_checks.md"
#: the hand-written pages and the derived blocks each holds, in order
PAGES = {
    "README.md": ("report-presets", "report-notes", "verdict-tables"),
    "docs/theory_checks.md": ("study-counts",),
}

_MARK = re.compile(r"<!--\s*(?:derived:\s*(?P<name>[^\s>]*)|(?P<end>/derived))\s*-->")


@dataclass
class Block:
    """One derived block of a page: its name, where its text is, and whether it is inline."""

    name: str
    start: int  # index of the block's text (just after the start marker)
    stop: int  # index of the end marker
    inline: bool


@dataclass
class Sources:
    """What the generators read: the records, the study IDs without one, the report's text."""

    results: dict
    missing: list
    report: str


def blocks(text: str, page: str = "page") -> list:
    """The derived blocks of ``text``, in order; a ``ValueError`` naming ``page`` when a marker is
    unpaired, nested or has an empty name.

    >>> [(b.name, b.inline) for b in blocks("a <!-- derived: x -->1<!-- /derived --> b")]
    [('x', True)]
    """
    out, open_ = [], None
    for m in _MARK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group("end"):
            if open_ is None:
                raise ValueError(f"{page}:{line}: '<!-- /derived -->' closes no derived block")
            name, start = open_
            out.append(Block(name, start, m.start(), not text.startswith("\n", start)))
            open_ = None
        elif open_ is not None:
            raise ValueError(f"{page}:{line}: derived block {m.group('name')!r} starts inside "
                             f"derived block {open_[0]!r}; close it first with '<!-- /derived -->'")
        elif not m.group("name"):
            raise ValueError(f"{page}:{line}: a derived block needs a name: <!-- derived: NAME -->")
        else:
            open_ = (m.group("name"), m.end())
    if open_ is not None:
        raise ValueError(f"{page}: derived block {open_[0]!r} has no '<!-- /derived -->'")
    return out


# ------------------------------------------------------------------------------ generators
def _report_tables(report: str) -> list:
    """``[(paper, [table, ...]), ...]`` of the report, in its order; links point at the report."""
    out, lines = [], report.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## "):
            out.append((line[3:].strip(), []))
        elif line.startswith("| ID | ") and out:
            rows = [line, lines[i + 1]]
            for row in lines[i + 2:]:
                if not row.startswith("| "):
                    break
                rows.append(row.replace("](#", f"]({REPORT}#"))
            out[-1][1].append("\n".join(rows))
    return [(p, t) for p, t in out if t]


def verdict_tables(src: Sources) -> str:
    """The report's verdict and note tables, one ``**PAPER**`` group per paper (README.md)."""
    parts = []
    for paper, tables in _report_tables(src.report):
        notes = any(t.startswith("| ID | note") for t in tables)
        parts.append(f"**{paper}**" + (" (claims, then reproducibility notes):" if notes else ":"))
        parts.extend(tables)
    return "\n\n".join(parts)


def report_presets(src: Sources) -> str:
    """``"preset `paper` for every study"``: the presets of the records the report shows."""
    by = {}
    for r in src.results.values():
        by[r.preset] = by.get(r.preset, 0) + 1
    if len(by) == 1 and not src.missing:
        return f"preset `{next(iter(by))}` for every study"
    text = "presets " + ", ".join(f"`{p}` for {n} stud{'ies' if n != 1 else 'y'}"
                                  for p, n in sorted(by.items()))
    return text + (f" ({len(src.missing)} not run yet)" if src.missing else "")


def report_notes(src: Sources) -> str:
    """``"D1 is a reproducibility note, not a claim, and is not counted among the verdicts"``."""
    from .study import NOTE

    notes = [sid for sid, r in src.results.items() if r.kind == NOTE]
    if not notes:
        return "no study is a reproducibility note"
    if len(notes) == 1:
        return (f"{notes[0]} is a reproducibility note, not a claim, and is not counted among the "
                "verdicts")
    names = ", ".join(notes[:-1]) + f" and {notes[-1]}"
    return f"{names} are reproducibility notes, not claims, and are not counted among the verdicts"


def study_counts(src: Sources) -> str:
    """``"26 studies (25 claims and 1 reproducibility note): 18 of the IFCA paper, ..."``; a study
    without a record counts by its module (as the report lists it, *not run*)."""
    from .studies import get
    from .study import NOTE, PAPERS

    papers, kinds = [r.paper for r in src.results.values()], [r.kind for r in src.results.values()]
    papers += [get(sid).paper for sid in src.missing]
    kinds += [get(sid).kind for sid in src.missing]
    notes = sum(k == NOTE for k in kinds)
    per = [f"{papers.count(p)} of the {p} paper" for p in PAPERS]
    return (f"{len(kinds)} stud{'ies' if len(kinds) != 1 else 'y'} ({len(kinds) - notes} "
            f"claim{'s' * (len(kinds) - notes != 1)} and {notes} reproducibility "
            f"note{'s' * (notes != 1)}): " + ", ".join(per[:-1]) + f" and {per[-1]}")


#: block name -> the function of :class:`Sources` that makes its text
GENERATORS = {"verdict-tables": verdict_tables, "report-presets": report_presets,
              "report-notes": report_notes, "study-counts": study_counts}


# ----------------------------------------------------------------------------- the one step
def _sources(root: Path) -> Sources:
    from .report import load_results, report_text
    from .studies import ids

    out = root / RECORDS
    if not out.is_dir():
        raise FileNotFoundError(f"no record folder {out} (run from the repository root, or give "
                                "--root)")
    if not any(out.glob("*.json")):
        raise FileNotFoundError(f"no study records (*.json) in {out}")
    results = load_results(out, preset=PRESET)
    return Sources(results, [s for s in ids() if s not in results],
                   report_text(root / REPORT, out, preset=PRESET, root=root))


def _words(text: str) -> str:
    return " ".join(text.split())


def _page(text: str, page: str, names, src: Sources):
    """``(new text, [stale block names])`` of one page."""
    found = blocks(text, page)
    got = [b.name for b in found]
    unknown = [n for n in got if n not in GENERATORS]
    if unknown:
        raise ValueError(f"{page}: unknown derived block {unknown[0]!r}; known: "
                         f"{sorted(GENERATORS)}")
    if got != list(names):
        raise ValueError(f"{page}: its derived blocks are {got}, expected {list(names)} in this "
                         "order (mixlinreg.theory.derived.PAGES)")
    parts, stale, at = [], [], 0
    for b in found:
        old, new = text[b.start:b.stop], GENERATORS[b.name](src)
        if b.inline:
            keep = _words(old) == _words(new)
        else:
            new = f"\n\n{new.strip(chr(10))}\n\n"
            keep = old == new
        if not keep:
            stale.append(b.name)
        parts += [text[at:b.start], old if keep else new]
        at = b.stop
    return "".join(parts) + text[at:], stale


def stale(root=".") -> list:
    """``[(file, block or None), ...]``: what :func:`regenerate` would rewrite (``None``: the whole
    file). Reads the records and the pages; writes nothing."""
    return regenerate(root, check=True)


def regenerate(root=".", check=False) -> list:
    """Rewrite every derived document under the repository ``root`` from its committed records.

    Returns ``[(file, block or None), ...]``, each file or block that was stale (``None``: the
    whole file, ``paper_checks.md``); with ``check``, nothing is written. Every file is checked
    to be writable before any is written, and each is written atomically.
    """
    from .._paths import atomic_write, output_file
    from .._validation import check_bool

    check = check_bool("check", check)
    root = Path(root)
    src = _sources(root)
    new, found = {REPORT: src.report}, []
    path = root / REPORT
    if not path.is_file() or path.read_text(encoding="utf-8") != src.report:
        found.append((REPORT, None))
    for page, names in PAGES.items():
        path = root / page
        if not path.is_file():
            raise FileNotFoundError(f"no page {path} (run from the repository root, or give --root)")
        text, blocks_ = _page(path.read_text(encoding="utf-8"), page, names, src)
        new[page] = text
        found += [(page, b) for b in blocks_]
    if check:
        return found
    todo = sorted({f for f, _ in found})
    for f in todo:
        output_file(root / f, "a derived document")  # every file before any is written
    for f in todo:
        atomic_write(root / f, new[f])
    return found
