"""``paper_checks.md``: generated from the studies' JSON records, never edited by hand."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from ..config import PRESETS
from .study import (CLAIM, DIFFER, FORMER_PRESETS, NOTE, PAPERS, SAME, UNDETERMINED, VERDICTS,
                     StudyResult, canonical_preset)

_ORDER = tuple(reversed(PRESETS))  # the largest preset's records first


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if v == 0 or 1e-3 <= abs(v) < 1e5:
            return f"{v:.4g}"
        return f"{v:.3e}"
    return str(v).replace("|", "\\|")


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of ``df`` (floats to 4 significant digits).

    >>> print(markdown_table(pd.DataFrame({"a": [1.0], "b": ["x"]})))
    | a | b |
    |---|---|
    | 1 | x |
    """
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt_cell(v) for v in row) + " |")
    return "\n".join(lines)


def load_results(out="figures/checks", preset="paper", ids=None) -> dict:
    """Latest record of each study in ``out``: the ``preset`` one if present, else the largest.

    Returns ``{ID: StudyResult}`` in the order of :data:`mixlinreg.theory.STUDIES`.
    """
    from .studies import ids as study_ids

    STUDIES = study_ids()

    preset = canonical_preset(preset)
    order = (preset,) + tuple(p for p in _ORDER if p != preset)
    out = Path(out)
    found = {}
    for sid in (ids or STUDIES):
        for p in order:
            path = out / f"{sid}_{p}.json"
            if path.exists():
                found[sid] = StudyResult.from_json(path.read_text())
                break
    return found


def _rel(path: str, base: Path) -> str:
    if not path:
        return ""
    try:
        return os.path.relpath(Path(path).resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:
        return str(path)


def report_command(path="paper_checks.md", out="figures/checks", preset="paper") -> str:
    """The command that writes the report ``path`` from the records in ``out`` and nothing else.

    Run from the report's folder; ``out`` is shown relative to it.

    >>> report_command("paper_checks.md", "figures/checks", "paper")
    'mixlinreg check --report-only --preset paper --out figures/checks --write paper_checks.md'
    """
    path = Path(path)
    preset = canonical_preset(preset)
    return (f"mixlinreg check --report-only --preset {preset} --out "
            f"{_rel(str(out), path.parent) or '.'} --write {path.name}")


_VERSIONS = {
    "IFCA": ("Each location below names both versions where they differ; the synthetic figure is "
             "**Figure 3 of the long version (Figure 2 in the NeurIPS version)**, and the IDs "
             "F2a-F2d, the titles that say \"Figure 2\" and the command names fig2a ... fig2d "
             "use the NeurIPS number."),
    "CFL": ("The copy checked is the short workshop version; locations use its numbering, and a "
            "later version's statement is cited as that version's."),
}


def render(results: dict, base: Path, missing=(), *, out="figures/checks", preset="paper",
           name="paper_checks.md", earlier=None) -> str:
    """The text of ``paper_checks.md`` for ``{ID: StudyResult}``; links relative to ``base``.

    One section per paper (:data:`~mixlinreg.theory.study.PAPERS`, in that order), each with its
    count line, its verdict table (a ``by condition`` column where a record's verdict differs by
    condition) and its studies. A pure function of the records and of the arguments (``out``,
    ``preset`` and ``name`` make the command named in the header, see :func:`report_command`): no
    clock, no host, so a report remade from the same records is the same file.
    """
    presets = sorted({r.preset for r in results.values()})
    records = _rel(str(out), base) or "."
    command = report_command(Path(base) / name, out, preset)
    lines = [
        "# Paper checks: the claims of three papers on clustered federated learning, measured",
        "",
        f"<!-- Generated from the study records by `{command}`. Do not edit by hand: edit the "
        "studies in mixlinreg/theory/, rerun them (`mixlinreg check`) and remake the report. -->",
        "",
        f"Made by `mixlinreg check` from the records in `{records}/` "
        f"(presets used: {', '.join(presets) or 'none'}); the report is a function of the records "
        f"alone (no date or clock in it: the records' history is the git history of "
        f"`{records}/`), and the test suite checks that this file is exactly what the command "
        "above writes from them.",
        "",
        "Verdicts: **holds** (the measurement is inside the claim with its interval), **holds with a "
        "caveat** (it holds, with a qualification stated below it), **not supported** (the "
        "measurement contradicts the claim beyond its interval), **inconclusive** (the interval is "
        "too wide, or the run too small, to decide). Bounds with unknown universal constants are "
        "checked by their shape (decay, exponents, contraction), never by plugging in invented "
        "constants. Where a verdict differs by condition, its row says so (*by condition*).",
        "",
    ]
    results = {sid: _judged(r) for sid, r in results.items()}
    by_paper = _by_paper(results, missing)
    lines += [_papers_line(by_paper), ""]
    lines += audit_lines(results, earlier or {})
    for paper, (recs, miss) in by_paper.items():
        lines += _paper_section(paper, recs, miss, base)
    return "\n".join(lines).rstrip() + "\n"


def _judged(r):
    """A record as the report shows it: one made before controls (no ``rule_verdict``) is joined
    to its (absent) control by the same rule as a new one (:func:`~.controls.judge`), so that a
    *holds* never stands without a control that failed."""
    from dataclasses import replace

    from .controls import judge

    if r.kind != CLAIM or r.rule_verdict:
        return r
    verdict, why = judge(r.verdict, r.control, r.kind)
    caveats = ([f"Control: {why}"] if why else []) + list(r.caveats)
    return replace(r, rule_verdict=r.verdict, verdict=verdict, caveats=caveats)


def _control_cell(r):
    c = r.control
    if "none" in c:
        return f"none can exist: {c['none']}", "(not evidence)"
    if not c:
        return "none declared", "not run"
    return c["what"], c.get("verdict", "not run")


def _registered(d):
    """``"yes (abc1234)"`` when the record (or control) names the commit that registered its
    config, else why not."""
    if d.get("registered_in"):
        return f"yes ({d['registered_in'][:7]})"
    if d.get("registration"):
        return "no: its config was not committed when it ran"
    return "not shown (made before registrations were recorded)"


def _control_section(r) -> list:
    c = r.control
    if "none" in c:
        return [f"*Control*: none can exist ({c['none']}); this verdict is not evidence that the "
                "rule can fail.", ""]
    if not c:
        return ["*Control*: none declared yet, so the rule was not shown to fail.", ""]
    out = [f"*Control* ({c['what']}; the same rule, {c.get('seconds', 0):.0f} s): "
           f"**{c.get('verdict', 'not run')}**; the rule alone at the study's setting: "
           f"**{r.rule_verdict}**.", "", c.get("summary", "").strip(), ""]
    num = c.get("numbers")
    if num and num.get("data"):
        out += [markdown_table(pd.DataFrame(num["data"], columns=num["columns"])), ""]
    return out


def audit_lines(results, earlier) -> list:
    """The audit table at the top of ``paper_checks.md``: for each claim, its verdict, the rule's
    verdict alone, its control and how the control came out, whether its thresholds (and its
    control's) were registered before the record, and its hard cells; counts made from the
    records."""
    claims = {sid: r for sid, r in results.items() if r.kind == CLAIM}
    if not claims:
        return []
    outcomes = [_control_cell(r)[1] for r in claims.values()]
    failed = sum(o == "not supported" for o in outcomes)
    none = sum(o == "(not evidence)" for o in outcomes)
    absent = sum(o == "not run" for o in outcomes)
    registered = sum(bool(r.registered_in) for r in claims.values())
    c_registered = sum(bool(r.control.get("registered_in")) for r in claims.values())
    counted = [r.cells for r in claims.values() if r.cells]
    out = [
        "## Audit: could each verdict have failed?",
        "",
        "A verdict is evidence only if its rule could have come out otherwise. Each study declares "
        "a *control* in its config: a setting where its claim is false (a violated condition, a "
        "broken variant of the method, data without the structure), run by the same rule. A claim "
        "may read **holds** only when its control came out **not supported**; a rule that says "
        "*holds* with a control that did not fail, or with none declared, is reported as **holds "
        "with a caveat**. Where no control can exist (an identity, a construction) the row says "
        "so, and its verdict is not evidence. *Registered* means the commit named held the "
        "config's values (grid, thresholds, margins, control) before the record was made "
        "(`tests/test_controls.py` checks each against the history). *Hard cells*: of the "
        "cells the verdict judged, those whose outcome was not already certain from the "
        "construction, where the study counts them.",
        "",
        f"{len(claims)} claims: {failed} with a control that came out not supported, "
        f"{len(claims) - failed - none - absent} with a control that did not fail, {none} where "
        f"no control can exist, {absent} with no control run. Thresholds registered before the "
        f"record: {registered} of {len(claims)} studies, {c_registered} of "
        f"{len(claims) - none - absent} controls. Hard cells counted in {len(counted)} studies.",
        "",
        "| ID | verdict | the rule alone | control: the setting where the claim is false | "
        "control's outcome | study registered | control registered | hard cells | earlier "
        "versions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sid, r in claims.items():
        what, outcome = _control_cell(r)
        creg = _registered(r.control) if r.control and "none" not in r.control else "-"
        cells = (f"{r.cells['hard']} of {r.cells['total']}" if r.cells else "not counted")
        old = "; ".join(_earlier_cell(e) for e in earlier.get(sid, ())) or "-"
        out.append(f"| {sid} | **{r.verdict}** | {r.rule_verdict} | "
                   f"{_fmt_cell(what)} | {outcome} | {_registered(asdict_of(r))} | {creg} | "
                   f"{cells} | {old} |")
    return out + [""]


def _earlier_cell(e):
    """An earlier version's verdict as the audit shows it, with its rule's own where the join
    with its control (or its lack of one) changed it."""
    j = _judged(e)
    ctl = e.control.get("verdict") or "no control"
    return (f"v{e.version}: {j.verdict}" if j.verdict == j.rule_verdict
            else f"v{e.version}: {j.verdict} (its rule: {j.rule_verdict}; {ctl})")


def asdict_of(r):
    return {"registered_in": r.registered_in, "registration": r.registration}


def load_earlier(out="figures/checks", preset="paper", ids=None) -> dict:
    """``{ID: [StudyResult, ...]}``: the records of earlier versions kept in ``<out>/versions/``
    (oldest first)."""
    from .studies import ids as study_ids

    found = {}
    folder = Path(out) / "versions"
    for sid in (ids or study_ids()):
        recs = [StudyResult.from_json(p.read_text())
                for p in sorted(folder.glob(f"{sid}_{canonical_preset(preset)}_v*.json"))]
        if recs:
            found[sid] = sorted(recs, key=lambda e: e.version)
    return found


def _paper_of(sid, r=None):
    from .studies import get, ported

    if r is not None:
        return r.paper
    return get(sid).paper if ported(sid) else "IFCA"


def _by_paper(results, missing):
    """``{paper: (records, missing IDs)}`` for every paper of :data:`PAPERS`, in its order."""
    out = {p: ({}, []) for p in PAPERS}
    for sid, r in results.items():
        out[_paper_of(sid, r)][0][sid] = r
    for sid in missing:
        out[_paper_of(sid)][1].append(sid)
    return out


def _papers_line(by_paper) -> str:
    """``"Papers: IFCA (12 studies), CFL (5 studies), FPFC (none checked yet)."``"""
    parts = []
    for paper, (recs, miss) in by_paper.items():
        n = len(recs) + len(miss)
        link = f"[{paper}](#{paper.lower()})" if n else paper
        parts.append(f"{link} ({n} stud{'ies' if n != 1 else 'y'})" if n
                     else f"{paper} (none checked yet)")
    return "Papers: " + ", ".join(parts) + "."


def _paper_section(paper, recs, miss, base) -> list:
    from .studies import title

    out = [f"## {paper}", "", f"Paper: {PAPERS[paper]}. " + _VERSIONS.get(paper, ""), ""]
    if not recs and not miss:
        return out + ["No claim of this paper is checked yet.", ""]
    claims = {sid: r for sid, r in recs.items() if r.kind == CLAIM}
    notes = {sid: r for sid, r in recs.items() if r.kind == NOTE}
    conditions = any(r.scope for r in claims.values())
    out += [_count_line(claims, notes), ""]
    out += _table_head("claim", "verdict", conditions)
    out += [_row(sid, r, conditions) for sid, r in claims.items()]
    for sid in miss:
        out.append(f"| {sid} | {title(sid)} | not run | " + ("| " if conditions else "") + "| |")
    out.append("")
    if notes:
        out += [
            f"Reproducibility notes are not claims of the paper: each compares how the paper "
            "describes an experiment with how the authors' code runs it, and its outcome is "
            f"**{SAME}** (every paired interval inside the stated margin), **{DIFFER}** (some "
            f"interval excludes no change) or **{UNDETERMINED}** (neither: too few trials to tell). "
            "They are not counted among the verdicts above.",
            "",
        ]
        out += _table_head("note", "outcome", False)
        out += [_row(sid, r, False) for sid, r in notes.items()]
        out.append("")
    for sid, r in claims.items():
        out += _section(sid, r, base, "###")
    if notes:
        out += [f"### Reproducibility notes ({paper})", "",
                "Not claims of the paper; their outcomes are not verdicts (see above).", ""]
        for sid, r in notes.items():
            out += _section(sid, r, base, "####")
    return out


def _table_head(what, verdict, conditions) -> list:
    cols = ["ID", what, verdict] + (["by condition"] if conditions else []) + ["preset", "seconds"]
    return ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]


def _count_line(claims, notes) -> str:
    """``"11 claims of the paper: 3 hold, ...; 1 reproducibility note ..."``."""
    words = {"holds": "hold", "holds with a caveat": "hold with a caveat"}
    counts = [sum(r.verdict == v for r in claims.values()) for v in VERDICTS]
    line = (f"{len(claims)} claim{'s' * (len(claims) != 1)} of the paper: "
            + ", ".join(f"{c} {words.get(v, v)}" for c, v in zip(counts, VERDICTS)) + ".")
    if notes:
        line += (f" {len(notes)} reproducibility note{'s' * (len(notes) != 1)}, not a claim of the "
                 "paper and not counted among the verdicts: "
                 + ", ".join(f"{sid} ({r.verdict})" for sid, r in notes.items()) + ".")
    return line


def _row(sid, r, conditions=False) -> str:
    from .studies import title

    secs = f"{r.seconds:.0f}" + (" (resumed)" if r.units_resumed else "")
    scope = f" {_fmt_cell(r.scope)} |" if conditions else ""
    return (f"| [{sid}](#{sid.lower()}) | {title(sid)} | **{r.verdict}** |{scope} {r.preset} | "
            f"{secs} |")


def _section(sid, r, base, level) -> list:
    claim, verdict = ("Claim", "Verdict") if r.kind == CLAIM else ("Question", "Outcome")
    out = [
        f"{level} {sid}",
        "",
        f"**{r.title}**",
        "",
        f"*{claim}* ({r.location}): {r.claim}",
        "",
        f"*{verdict}*: **{r.verdict}**" + (f" (by condition: {r.scope})" if r.scope else ""),
        "",
        f"*Command*: `{r.command}` (preset `{r.preset}`, seed {r.seed}, {r.seconds:.0f} s"
        + (f"; {r.units_resumed} of {r.units_computed + r.units_resumed} units resumed from "
           "the store, their time not included" if r.units_resumed else "") + ")",
        "",
        r.summary.strip(),
        "",
    ]
    if len(r.numbers):
        out += [markdown_table(r.numbers), ""]
    if r.kind == CLAIM:
        out += _control_section(r)
    if r.figure:
        out += [f"![{sid}]({_rel(r.figure, base)})", ""]
    if r.table:
        out += [f"Tidy table: [`{_rel(r.table, base)}`]({_rel(r.table, base)})", ""]
    if r.caveats:
        out.append("*Caveats*:")
        out.append("")
        out += [f"- {c}" for c in r.caveats]
        out.append("")
    return out


def refresh_locations(out="figures/checks") -> list:
    """Rewrite the ``location`` of every record in ``out`` to the study's current one.

    A location is where the paper states the claim (:func:`mixlinreg.theory.location`), not a
    measurement: when it is corrected, the records keep their numbers and take the new location.
    Only that field changes (the rest of each JSON file is written back as it was read). Returns
    the paths rewritten.
    """
    import json

    from .studies import ids as study_ids
    from .studies import location

    STUDIES = study_ids()
    from .._paths import atomic_write

    changed = []
    for path in sorted(Path(out).glob("*.json")):
        sid = path.stem.rsplit("_", 1)[0]
        if sid not in STUDIES:
            continue
        d = json.loads(path.read_text())
        if d.get("location") != location(sid):
            d["location"] = location(sid)
            atomic_write(path, json.dumps(d, indent=1))
            changed.append(path)
    return changed


def migrate_records(out="figures/checks") -> list:
    """Rename the records made under a former preset name (``full``) to the new one (``paper``).

    For every study ID, each file ``<ID>_full<suffix>`` in ``out`` (record, tables, figure) becomes
    ``<ID>_paper<suffix>``, and in the JSON record the fields that name the preset follow: ``preset``,
    the paths in ``table`` and ``figure``, and ``--preset full`` in ``command``. Nothing else in a
    record changes (its numbers, verdict and text are the same measurement). A target that exists
    already stops the migration before anything is renamed. Returns ``[(old, new), ...]``; running it
    again finds nothing to do.
    """
    import json

    from .studies import ids as study_ids

    STUDIES = study_ids()
    from .._paths import atomic_write

    out = Path(out)
    moves = []
    for old_name, new_name in FORMER_PRESETS.items():
        for sid in STUDIES:
            for path in sorted(out.glob(f"{sid}_{old_name}*")):
                suffix = path.name[len(f"{sid}_{old_name}"):]
                if suffix and suffix[0] not in "._":
                    continue  # another study's file (an ID that extends this one)
                moves.append((path, out / f"{sid}_{new_name}{suffix}", old_name, new_name))
    clash = [str(new) for _, new, _, _ in moves if new.exists()]
    if clash:
        raise FileExistsError(f"migrate_records: {', '.join(clash)} exist already; move them away "
                              "or remove the former records")
    for path, new, old_name, new_name in moves:
        if path.suffix == ".json":
            d = json.loads(path.read_text())
            if d.get("preset") == old_name:
                d["preset"] = new_name
            for key in ("table", "figure"):
                if d.get(key):
                    p = Path(d[key])
                    d[key] = str(p.with_name(p.name.replace(f"_{old_name}", f"_{new_name}", 1)))
            if d.get("command"):
                d["command"] = d["command"].replace(f"--preset {old_name}", f"--preset {new_name}")
            atomic_write(new, json.dumps(d, indent=1))
            path.unlink()
        else:
            path.rename(new)
    return [(old, new) for old, new, _, _ in moves]


def report_text(path="paper_checks.md", out="figures/checks", preset="paper", ids=None,
                root=None) -> str:
    """The text :func:`write_report` writes to ``path`` (nothing is written).

    ``root``: the folder the records' own paths (their tables and figures) are relative to, the
    repository root where they were made; ``None``: the current folder.
    """
    from .studies import ids as study_ids

    STUDIES = study_ids()
    path = Path(path)
    preset = canonical_preset(preset)
    results = load_results(out, preset=preset, ids=ids)
    missing = [s for s in (ids or STUDIES) if s not in results]
    former = [p.name for s in missing for old in FORMER_PRESETS
              for p in [Path(out) / f"{s}_{old}.json"] if p.exists()]
    if former:
        raise ValueError(f"records under a former preset name in {out}: {', '.join(former)}; "
                         f"rename them first with `mixlinreg check --migrate-records --out {out}` "
                         "(mixlinreg.theory.report.migrate_records)")
    if root is not None:
        from dataclasses import replace

        def at_root(p):
            return str(Path(root) / p) if p and not Path(p).is_absolute() else p

        results = {sid: replace(r, figure=at_root(r.figure), table=at_root(r.table))
                   for sid, r in results.items()}
    return render(results, path.parent if str(path.parent) else Path("."), missing, out=out,
                  preset=preset, name=path.name, earlier=load_earlier(out, preset, ids))


def write_report(path="paper_checks.md", out="figures/checks", preset="paper", ids=None) -> Path:
    """Write ``paper_checks.md`` from the records under ``out`` (see :func:`load_results`)."""
    from .._paths import atomic_write

    path = Path(path)
    text = report_text(path, out, preset=preset, ids=ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    return path
