"""``mixlinreg check --reanalyse`` (:mod:`mixlinreg.theory.records`): a committed record analysed
again from its tables rewrites only its words, and refuses when the outcome would change."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mixlinreg.theory.records import RuleChanged, reanalyse

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "figures" / "checks"
RECORDS = sorted(p for p in CHECKS.glob("*_paper.json") if not p.name.startswith("D1_"))


@pytest.mark.parametrize("path", RECORDS, ids=[p.name.split("_")[0] for p in RECORDS])
def test_every_committed_record_is_current(path):
    """Each record's words (summary, caveats, scope, hard cells, the control's summary) are what
    the current code makes of its tables: a reworded template must be carried to the records
    (`mixlinreg check ID --preset paper --out figures/checks --reanalyse`)."""
    sid = path.name.split("_")[0]
    _, changed = reanalyse(sid, preset="paper", out=CHECKS, write=False)
    assert changed == [], f"{sid}: stale {changed}; run `mixlinreg check {sid} --preset paper " \
                          f"--out figures/checks --reanalyse`"


def _copy(tmp_path, sid="C2"):
    for f in CHECKS.glob(f"{sid}_paper*"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / f"{sid}_paper.json"


def _edit(path, **fields):
    d = json.loads(path.read_text())
    d.update(fields)
    path.write_text(json.dumps(d, indent=1))
    return d


def test_a_stale_summary_is_rewritten_and_nothing_else(tmp_path):
    path = _copy(tmp_path)
    original = json.loads(path.read_text())
    control = dict(original["control"], summary="stale words")
    _edit(path, summary="stale words", control=control)
    rec, changed = reanalyse("C2", preset="paper", out=tmp_path)
    assert changed == ["summary", "control"]
    assert json.loads(path.read_text()) == original
    assert rec.summary == original["summary"] != "stale words"
    # a second pass finds nothing to do
    assert reanalyse("C2", preset="paper", out=tmp_path)[1] == []


def test_a_different_verdict_is_a_new_version_not_a_rewrite(tmp_path):
    path = _copy(tmp_path)
    before = _edit(path, rule_verdict="not supported")
    with pytest.raises(RuleChanged, match="new version"):
        reanalyse("C2", preset="paper", out=tmp_path)
    assert json.loads(path.read_text()) == before  # nothing written


def test_different_numbers_are_refused(tmp_path):
    path = _copy(tmp_path)
    d = json.loads(path.read_text())
    d["numbers"]["data"][0][1] = 123.456 if isinstance(d["numbers"]["data"][0][1], float) else "x"
    path.write_text(json.dumps(d, indent=1))
    with pytest.raises(RuleChanged, match="other numbers"):
        reanalyse("C2", preset="paper", out=tmp_path)


def test_a_control_giving_another_verdict_is_refused(tmp_path):
    path = _copy(tmp_path)
    d = json.loads(path.read_text())
    _edit(path, control=dict(d["control"], verdict="holds"))
    with pytest.raises(RuleChanged, match="control"):
        reanalyse("C2", preset="paper", out=tmp_path)


def test_a_changed_config_is_refused(tmp_path):
    path = _copy(tmp_path)
    _edit(path, registration="0123456789abcdef")
    with pytest.raises(RuleChanged, match="config changed"):
        reanalyse("C2", preset="paper", out=tmp_path)


def test_a_missing_record_names_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="mixlinreg check C2 --preset paper"):
        reanalyse("C2", preset="paper", out=tmp_path)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mixlinreg.cli", "check", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_the_command(tmp_path):
    path = _copy(tmp_path)
    _edit(path, summary="stale words")
    r = _cli("C2", "--preset", "paper", "--out", str(tmp_path), "--reanalyse")
    assert r.returncode == 0, r.stderr
    assert "[C2] rewrote summary" in r.stdout
    _edit(path, rule_verdict="not supported")
    r = _cli("C2", "--preset", "paper", "--out", str(tmp_path), "--reanalyse")
    assert r.returncode == 1 and "[C2] not rewritten" in r.stdout and "new version" in r.stdout
    r = _cli("C2", "--preset", "paper", "--out", str(tmp_path), "--reanalyse", "--seed", "3")
    assert r.returncode == 2 and "--reanalyse" in r.stderr and "--seed" in r.stderr
