"""The committed ``paper_checks.md`` is exactly what its own command writes from the committed records.

Fast: nothing is computed, the report is remade from the JSON records in ``figures/checks`` (copied to
a temporary tree, so the repository is never written) and compared byte for byte.
"""

import re
import shlex
import shutil
from pathlib import Path

import pytest

from mixlinreg.cli import main

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "paper_checks.md"


def _command():
    """The command the committed report names in its header, as CLI arguments."""
    m = re.search(r"by `mixlinreg (check --report-only [^`]*)`", REPORT.read_text())
    assert m, "paper_checks.md does not name the command that remakes it"
    return shlex.split(m.group(1))


def test_committed_report_is_exactly_its_records(tmp_path, monkeypatch):
    args = _command()
    out = Path(args[args.index("--out") + 1])
    name = args[args.index("--write") + 1]
    assert not out.is_absolute() and "/" not in name
    (tmp_path / out).mkdir(parents=True)
    records = sorted((ROOT / out).glob("*.json"))
    assert records, f"no records in {out}"
    for rec in records:
        shutil.copy(rec, tmp_path / out / rec.name)
    if (ROOT / out / "versions").is_dir():  # earlier versions' records: the audit shows them
        shutil.copytree(ROOT / out / "versions", tmp_path / out / "versions")
    monkeypatch.chdir(tmp_path)  # the records name their tables and figures relative to the root
    assert main(args) == 0
    remade = (tmp_path / name).read_text()
    committed = REPORT.read_text()
    assert remade == committed, (
        "paper_checks.md differs from what its records give; remake it with `mixlinreg "
        + " ".join(args) + "` and commit it with the records")


def test_report_has_no_clock(tmp_path, monkeypatch):
    """Two renders of the same records are the same text, and the header carries no date."""
    import mixlinreg.theory.report as report

    results = report.load_results(ROOT / "figures" / "checks", preset="paper")
    monkeypatch.chdir(ROOT)
    first = report.render(results, Path("."))
    assert report.render(results, Path(".")) == first
    header = first.split("\n## ", 1)[0]
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\bUTC\b", header)


def test_every_location_names_both_versions():
    """Each IFCA study's location cites the long and the NeurIPS version; the synthetic figure by
    both numbers (Figure 3 of the long version, Figure 2 of the NeurIPS version). CFL's cite the
    short version they check."""
    from mixlinreg.theory import STUDIES, location
    from mixlinreg.theory.studies import get

    for sid in STUDIES:
        loc = location(sid)
        if get(sid).paper == "CFL":  # one version checked: the short one, by its numbering
            assert "short" in loc, (sid, loc)
            continue
        if get(sid).paper != "IFCA":
            continue
        assert "long version" in loc and "NeurIPS" in loc, (sid, loc)
        if re.search(r"Figure [23]", loc):
            assert re.search(r"Figure 3\S* of the long version", loc), (sid, loc)
            assert re.search(r"Figure 2\S* of the NeurIPS version", loc), (sid, loc)
    for sid in ("F2a", "F2b", "F2c", "F2d", "RS", "D1"):
        assert "Figure 3" in location(sid) and "Figure 2" in location(sid), sid


def test_committed_records_cite_the_current_locations():
    """The records' locations are the studies' (refreshed by report.refresh_locations)."""
    import json

    from mixlinreg.theory import STUDIES, location

    for path in sorted((ROOT / "figures" / "checks").glob("*.json")):
        sid = path.stem.rsplit("_", 1)[0]
        if sid in STUDIES:
            assert json.loads(path.read_text())["location"] == location(sid), path.name


def test_refresh_locations_changes_only_the_location(tmp_path):
    import json

    from mixlinreg.theory import location
    from mixlinreg.theory.report import refresh_locations

    src = ROOT / "figures" / "checks" / "C1_paper.json"
    d = json.loads(src.read_text())
    d["location"] = "Corollary 1, somewhere"
    (tmp_path / "C1_paper.json").write_text(json.dumps(d, indent=1))
    (tmp_path / "notes.json").write_text("{}")  # not a record: left alone
    assert refresh_locations(tmp_path) == [tmp_path / "C1_paper.json"]
    back = json.loads((tmp_path / "C1_paper.json").read_text())
    assert back["location"] == location("C1")
    assert {k: v for k, v in back.items() if k != "location"} == {
        k: v for k, v in d.items() if k != "location"}
    assert refresh_locations(tmp_path) == []  # idempotent


def _report_tables():
    """Every verdict and note table of the report (one per paper and kind), links to the report."""
    lines = REPORT.read_text().splitlines()
    tables = []
    for i, line in enumerate(lines):
        if line.startswith("| ID | "):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("| "):
                    break
                rows.append(row.replace("](#", "](paper_checks.md#"))
            tables.append("\n".join([line, lines[i + 1]] + rows) + "\n\n")
    return tables


def test_readme_tables_are_the_reports():
    """The README's verdict and note tables are the report's, row for row (links to the report),
    one per paper."""
    readme = (ROOT / "README.md").read_text()
    tables = _report_tables()
    assert len(tables) >= 2
    for table in tables:
        assert table in readme, table.splitlines()[0]


def test_report_has_a_section_and_table_per_paper():
    from mixlinreg.theory.study import PAPERS

    text = REPORT.read_text()
    for paper in PAPERS:
        assert f"\n## {paper}\n" in text, paper
    # T1's verdict differs by condition: its row says so
    t1 = next(line for line in text.splitlines() if line.startswith("| [T1](#t1)"))
    assert "equal sizes: holds" in t1 and "p_max > 3p: not supported" in t1, t1


def _as_former(src, dst, sid):
    """Copy ``sid``'s committed paper records into ``dst`` as they were named before the rename."""
    import json

    for path in sorted(src.glob(f"{sid}_paper*")):
        new = dst / path.name.replace("_paper", "_full", 1)
        if path.suffix == ".json":
            d = json.loads(path.read_text())
            d["preset"] = "full"
            for key in ("table", "figure"):
                d[key] = d[key].replace(f"{sid}_paper", f"{sid}_full")
            d["command"] = d["command"].replace("--preset paper", "--preset full")
            new.write_text(json.dumps(d, indent=1))
        else:
            new.write_bytes(path.read_bytes())


def test_migrate_records_renames_the_former_preset_and_changes_nothing_else(tmp_path):
    """Records made under 'full' become the 'paper' records they are, byte for byte."""
    from mixlinreg.cli import main
    from mixlinreg.theory.report import migrate_records, write_report

    src = ROOT / "figures" / "checks"
    for sid in ("T1", "C1"):
        _as_former(src, tmp_path, sid)
    (tmp_path / "T1x_full.json").write_text("{}")  # not a study's record: left alone
    with pytest.raises(ValueError, match="--migrate-records"):  # the report says what to do
        write_report(tmp_path / "r.md", tmp_path, ids=["T1"])
    names = sorted(p.name for p in tmp_path.glob("[TC]1_full*"))
    assert main(["check", "--migrate-records", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("[TC]1_paper*")) == [
        n.replace("_full", "_paper") for n in names]
    assert not list(tmp_path.glob("[TC]1_full*")) and (tmp_path / "T1x_full.json").exists()
    for sid in ("T1", "C1"):
        got = (tmp_path / f"{sid}_paper.json").read_text()
        assert got == (src / f"{sid}_paper.json").read_text(), sid
    assert migrate_records(tmp_path) == []  # nothing left to do
    # a clash stops the migration before anything moves
    _as_former(src, tmp_path, "T1")
    with pytest.raises(FileExistsError, match="T1_paper"):
        migrate_records(tmp_path)
    assert (tmp_path / "T1_full.json").exists()
