"""Every theory study's quick preset, end to end (long: ``python -m pytest -m slow``).

The default suite runs each study's smoke preset; this runs the quick preset of all of them the
way ``mixlinreg check --preset quick`` does, and checks what every record must hold.
"""

import pytest

from mixlinreg.theory import STUDIES, VERDICTS, run_study
from mixlinreg.theory.study import NOTE, NOTE_OUTCOMES
from mixlinreg.theory import studies as records


@pytest.mark.slow
@pytest.mark.parametrize("study_id", list(STUDIES))
def test_quick_preset_makes_a_complete_record(study_id, tmp_path):
    from mixlinreg.theory.study import MissingInput

    try:
        r = run_study(study_id, preset="quick", out=tmp_path, store=tmp_path / "store")
    except MissingInput as exc:  # F2x's quick stores are not made here: it says how, no record
        assert "mixlinreg reproduce" in str(exc)
        assert not (tmp_path / f"{study_id}_quick.json").exists()
        return
    assert r.verdict in (NOTE_OUTCOMES if r.kind == NOTE else VERDICTS)  # D1: a note's outcome
    assert r.claim and r.location and r.summary
    assert (tmp_path / f"{study_id}_quick.json").exists()
    assert len(r.numbers) >= 1
    if records.ported(study_id):  # study records state how the verdict moves with its margins
        assert any(c.startswith("Sensitivity: ") for c in r.caveats)
    again = run_study(study_id, preset="quick", out=tmp_path, store=tmp_path / "store")
    assert again.units_computed == 0 and again.verdict == r.verdict  # resumed, same verdict
