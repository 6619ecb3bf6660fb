"""The README's Quickstart and CI must run the same test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quickstart_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def test_quickstart_has_two_commands():
    cmds = _quickstart_commands()
    assert len(cmds) == 2, cmds
    assert "mixlinreg" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    ci_lines = [ln for ln in ci_lines if ln and not ln.startswith("#")]
    assert ci_lines[-1] == _quickstart_commands()[1]


def test_every_test_file_the_documents_name_exists():
    """A document that says "tests/test_x.py checks it" names a file that exists (the audit's
    text once named tests/test_registration.py, which never existed)."""
    docs = [ROOT / "README.md", ROOT / "paper_checks.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "mixlinreg" / "theory").glob("*.py"))]
    named = {m for p in docs for m in re.findall(r"tests/test_[A-Za-z0-9_]+\.py", p.read_text())}
    assert named, "no document names a test file: the pattern is wrong"
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert missing == [], missing
