"""Controls and registrations (mixlinreg.theory.controls): the setting where a claim is false, run
by the same rule; the rule that joins the two verdicts; the registration hash and the history
check; records of earlier versions kept."""

import json
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mixlinreg.config import Spec  # noqa: E402
from mixlinreg.theory import controls  # noqa: E402
from mixlinreg.theory.controls import judge, registration, registration_problems  # noqa: E402
from mixlinreg.theory.study import Study, StudyResult, Verdict, run  # noqa: E402

SCHEMA = {"params": {"mu": Spec("float"), "n": Spec("int", low=2), "seeds": Spec("int", low=1)},
          "margins": {"margin": Spec("float", low=0)}}


def _units(params):
    return [(f"seed{i}", i) for i in range(params["params"]["seeds"])]


def _compute(spec, params, rng, shared):
    p = params["params"]
    return pd.DataFrame({"mean": [rng.normal(p["mu"], 1.0, p["n"]).mean()]})


def _analyze(table, params, rng):
    lo = table["mean"].min()
    ok = lo > params["margins"]["margin"]
    return Verdict("holds" if ok else "not supported", pd.DataFrame({"min mean": [lo]}),
                   f"the smallest mean is {lo:.3f}",
                   cells={"hard": int((table["mean"].abs() < 0.5).sum()), "total": len(table),
                          "rule": "|mean| < 0.5"})


def _figure(table, verdict, params):
    fig, ax = plt.subplots()
    ax.plot(table["mean"])
    return fig


TOY = Study(id="TOY", title="toy", claim="the mean is positive", location="nowhere",
            schema=SCHEMA, units=_units, compute=_compute, analyze=_analyze, figure=_figure)

BASE = """kind = "study"
name = "TOY"
description = "a toy"
{version}
[params]
mu = 1.0
n = 400
seeds = 3

[margins]
margin = 0.0
{control}
[presets.smoke.params]
n = 100
"""


def _config(tmp_path, control="", version=""):
    path = tmp_path / "TOY.toml"
    path.write_text(BASE.format(control=control, version=version))
    return path


def _run(tmp_path, path, **kw):
    return run(TOY, preset="paper", out=tmp_path / "out", store=None, config_path=path, **kw)


# ---------------------------------------------------------------- the rule that joins them
@pytest.mark.parametrize("rule, control, expected", [
    ("holds", {"what": "x", "verdict": "not supported"}, "holds"),
    ("holds", {"what": "x", "verdict": "holds"}, "holds with a caveat"),
    ("holds", {"what": "x", "verdict": "inconclusive"}, "holds with a caveat"),
    ("holds", {"what": "x", "verdict": "holds with a caveat"}, "holds with a caveat"),
    ("holds", {}, "holds with a caveat"),
    ("holds", {"none": "an identity"}, "holds"),
    ("holds with a caveat", {"what": "x", "verdict": "holds"}, "holds with a caveat"),
    ("not supported", {"what": "x", "verdict": "holds"}, "not supported"),
    ("inconclusive", {}, "inconclusive"),
])
def test_judge(rule, control, expected):
    verdict, why = judge(rule, control)
    assert verdict == expected
    assert (why is None) == (verdict == rule)


def test_judge_leaves_notes_alone():
    assert judge("same results", {}, kind="note") == ("same results", None)


# ---------------------------------------------------------------- the study run with its control
def test_a_control_that_fails_lets_the_claim_hold(tmp_path):
    path = _config(tmp_path, '[control]\nwhat = "mean -1: the claim is false"\n'
                             '[control.params]\nmu = -1.0\n')
    r = _run(tmp_path, path)
    assert r.rule_verdict == "holds" and r.verdict == "holds"
    assert r.control["verdict"] == "not supported" and r.control["params"] == {"mu": -1.0}
    assert r.control["what"] == "mean -1: the claim is false"
    assert float(r.control["numbers"]["data"][0][0]) < 0
    assert (tmp_path / "out" / "TOY_paper_control.csv").exists()
    assert r.caveats[0].startswith("Control: the rule was seen to fail")
    assert r.cells["total"] == 3 and r.registration == registration(path.read_text(), "paper")
    assert r.registered_in == ""  # not in a git checkout
    back = StudyResult.from_json(r.to_json())
    assert back.control == json.loads(json.dumps(r.control)) and back.rule_verdict == "holds"


def test_a_control_that_does_not_fail_makes_a_caveat(tmp_path):
    # a "control" that leaves the claim true: the rule cannot be seen to fail
    path = _config(tmp_path, '[control]\nwhat = "a weaker signal"\n[control.params]\nmu = 0.8\n')
    r = _run(tmp_path, path)
    assert r.rule_verdict == "holds" and r.control["verdict"] == "holds"
    assert r.verdict == "holds with a caveat"
    assert "was not shown to fail" in r.caveats[0] and "a weaker signal" in r.caveats[0]


def test_no_control_declared_makes_a_caveat_and_none_marks_it(tmp_path):
    r = _run(tmp_path, _config(tmp_path))
    assert r.verdict == "holds with a caveat" and r.control == {}
    assert "declares no control" in r.caveats[0]
    r = _run(tmp_path, _config(tmp_path, '[control]\nnone = "an identity of the method"\n'))
    assert r.verdict == "holds" and r.control == {"none": "an identity of the method"}
    assert "not evidence" in r.caveats[0]


def test_control_only_keeps_the_measurements(tmp_path):
    first = _run(tmp_path, _config(tmp_path))
    path = _config(tmp_path, '[control]\nwhat = "mean -1"\n[control.params]\nmu = -1.0\n')
    legacy = StudyResult.from_json(first.to_json())
    legacy.registration = ""  # as a record made before registrations
    joined = _run(tmp_path, path, control_only=legacy)
    pd.testing.assert_frame_equal(joined.numbers, first.numbers, check_exact=False, rtol=1e-14)
    assert joined.summary == first.summary
    assert joined.verdict == "holds" and joined.control["verdict"] == "not supported"
    assert sum(c.startswith("Control:") for c in joined.caveats) == 1
    # a record whose registration differs from the config's: the whole study must be rerun
    with pytest.raises(ValueError, match="config changed since its record"):
        _run(tmp_path, path, control_only=first)


def test_records_before_controls_are_written_as_they_were(tmp_path):
    r = _run(tmp_path, _config(tmp_path))
    d = json.loads(r.to_json())
    for key in ("rule_verdict", "control", "registration", "registered_in", "cells"):
        d.pop(key, None)
    text = json.dumps(d, indent=1)
    assert StudyResult.from_json(text).to_json() == text


# ---------------------------------------------------------------- the [control] table
@pytest.mark.parametrize("control, match", [
    ('[control]\nwhat = "x"\n', "declares no override"),
    ('[control]\nwhat = "x"\nnone = "y"\n[control.params]\nmu = 1.0\n', "exactly one of"),
    ('[control]\n[control.params]\nmu = 1.0\n', "exactly one of"),
    ('[control]\nwhat = "x"\n[control.params]\nmuu = 1.0\n', r"unknown key control.params.muu"),
    ('[control]\nwhat = "x"\n[control.params]\nn = 1\n', r"control.params.n"),
    ('[control]\nwhat = "x"\nseed = 3\n[control.params]\nmu = 1.0\n', "unknown key control.seed"),
    ('[control]\nwhat = ""\n[control.params]\nmu = 1.0\n', "non-empty string"),
    ('[control]\nnone = "y"\n[control.params]\nmu = 1.0\n', "takes no other keys"),
    ('[control]\nwhat = "x"\n[control.params]\nmu = 1.0\n[control.presets.paper.params]\nmu = 2.0\n',
     "control.presets.paper"),
])
def test_bad_control_tables_are_refused_by_name(tmp_path, control, match):
    with pytest.raises(ValueError, match=match):
        TOY.config("paper", _config(tmp_path, control))


def test_a_control_that_is_not_a_table_is_refused(tmp_path):
    with pytest.raises(ValueError, match="control must be a table"):
        TOY.config("paper", _config(tmp_path, version="control = 3"))


def test_control_preset_overrides_apply_to_their_preset(tmp_path):
    path = _config(tmp_path, '[control]\nwhat = "x"\n[control.params]\nmu = -1.0\n'
                             '[control.presets.smoke.params]\nmu = -2.0\n')
    assert TOY.config("paper", path).extras["control"]["params"] == {"mu": -1.0}
    assert TOY.config("smoke", path).extras["control"]["params"] == {"mu": -2.0}


@pytest.mark.parametrize("version, ok", [("version = 2", True), ("version = 0", False),
                                         ("version = true", False), ('version = "2"', False)])
def test_version(tmp_path, version, ok):
    path = _config(tmp_path, version=version)
    if ok:
        assert TOY.config("paper", path).extras["version"] == 2
    else:
        with pytest.raises(ValueError, match="version must be an integer >= 1"):
            TOY.config("paper", path)


# ---------------------------------------------------------------- registration
def test_registration_sees_values_not_comments():
    text = BASE.format(control="", version="")
    reg = registration(text, "paper")
    assert registration("# a note\n" + text.replace('"a toy"', '"another"'), "paper") == reg
    assert registration(text.replace("margin = 0.0", "margin = 0.1"), "paper") != reg
    assert registration(text, "smoke") != reg
    # the paper preset does not see another preset's values
    assert registration(text.replace("n = 100", "n = 50"), "paper") == reg
    assert registration(text.replace("n = 100", "n = 50"), "smoke") != registration(text, "smoke")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin",
                        "HOME": str(repo)})
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "cfg").mkdir(parents=True)
    (repo / "out").mkdir()
    _git(repo, "init", "-q")
    return repo


def _record(repo, reg, commit, name="TOY_paper.json"):
    (repo / "out" / name).write_text(json.dumps({"id": "TOY", "preset": "paper",
                                                 "registration": reg, "registered_in": commit}))


def test_history_check_passes_when_thresholds_come_first(tmp_path):
    repo = _repo(tmp_path)
    text = BASE.format(control="", version="")
    (repo / "cfg" / "TOY.toml").write_text(text)
    c1 = _git(repo, "add", "-A") and _git(repo, "commit", "-qm", "thresholds")
    _record(repo, registration(text, "paper"), c1)
    assert registration_problems(repo, "out", "cfg") == []  # not yet committed: after by construction
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "record")
    assert registration_problems(repo, "out", "cfg") == []


def test_history_check_fails_for_thresholds_committed_with_their_record(tmp_path):
    repo = _repo(tmp_path)
    text = BASE.format(control="", version="")
    (repo / "cfg" / "TOY.toml").write_text(text)
    _record(repo, registration(text, "paper"), "")
    _git(repo, "add", "-A")
    c1 = _git(repo, "commit", "-qm", "thresholds and record together")
    assert any("not committed when it ran" in p for p in registration_problems(repo, "out", "cfg"))
    _record(repo, registration(text, "paper"), c1)  # a record that claims the shared commit
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "record names it")
    problems = registration_problems(repo, "out", "cfg")
    assert len(problems) == 1 and "also holds records of TOY" in problems[0]


def test_history_check_fails_for_a_changed_threshold(tmp_path):
    repo = _repo(tmp_path)
    text = BASE.format(control="", version="")
    (repo / "cfg" / "TOY.toml").write_text(text)
    _git(repo, "add", "-A")
    c1 = _git(repo, "commit", "-qm", "thresholds")
    changed = text.replace("margin = 0.0", "margin = 0.2")
    _record(repo, registration(changed, "paper"), c1)  # judged by values never committed
    problems = registration_problems(repo, "out", "cfg")
    assert len(problems) == 1 and "has registration" in problems[0]
    _record(repo, registration(text, "paper"), "0" * 40)  # a commit that does not exist
    assert "not in the history of HEAD" in registration_problems(repo, "out", "cfg")[0]


def test_the_repository_history_supports_every_registration():
    from pathlib import Path

    root = controls.git_root(Path(__file__))
    if root is None:
        pytest.skip("not a git checkout: the history cannot be read")
    shallow = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True).stdout.strip()
    if shallow == "true":
        pytest.skip("a shallow clone: the history that registrations name is not all here")
    assert registration_problems(root) == []


def test_unit_rng_streams_are_paired():
    # the control's units keep their names, so their generators are the study's
    from mixlinreg.theory.study import unit_rng

    a = unit_rng(0, "TOY", "seed1").normal()
    assert a == unit_rng(0, "TOY", "seed1").normal() and np.isfinite(a)


def test_the_report_judges_a_record_made_before_controls(tmp_path):
    from mixlinreg.theory.report import write_report

    out = tmp_path / "checks"
    out.mkdir()
    base = dict(title="t", claim="c", location="l", summary="s.", numbers=pd.DataFrame({"a": [1]}),
                preset="paper", command="mixlinreg check L1")
    legacy = StudyResult(id="L1", verdict="holds", **base)  # no rule_verdict, no control
    (out / "L1_paper.json").write_text(legacy.to_json())
    ok = StudyResult(id="T1", verdict="holds", rule_verdict="holds", registration="ab",
                     registered_in="c" * 40, **base,
                     control={"what": "a broken variant", "verdict": "not supported",
                              "summary": "it failed.", "registration": "ab",
                              "registered_in": "c" * 40})
    (out / "T1_paper.json").write_text(ok.to_json())
    text = write_report(tmp_path / "pc.md", out, preset="paper", ids=["L1", "T1"]).read_text()
    audit = text.split("## Audit: could each verdict have failed?")[1].split("\n## ")[0]
    l1 = next(x for x in audit.splitlines() if x.startswith("| L1 |"))
    t1 = next(x for x in audit.splitlines() if x.startswith("| T1 |"))
    assert "**holds with a caveat** | holds | none declared | not run | not shown" in l1
    assert "**holds** | holds | a broken variant | not supported | yes (ccccccc)" in t1
    assert "2 claims: 1 with a control that came out not supported" in audit
    assert "declares no control" in text.split("### L1")[1]
    assert "*Control* (a broken variant" in text.split("### T1")[1]


def test_a_record_made_by_another_kernel_names_it(tmp_path, monkeypatch):
    from mixlinreg import _kernel_choice

    monkeypatch.setattr(_kernel_choice, "current_kernel", lambda: "jax")
    r = _run(tmp_path, _config(tmp_path))
    assert r.command.endswith("--kernel jax") or " --kernel jax" in r.command
    monkeypatch.setattr(_kernel_choice, "current_kernel", lambda: "numba")
    assert "--kernel" not in _run(tmp_path, _config(tmp_path)).command


@pytest.mark.parametrize("command", ["check", "reproduce"])
def test_kernel_jax_with_worker_processes_is_refused_by_every_command(command, tmp_path,
                                                                       monkeypatch, capsys):
    from mixlinreg import cli

    monkeypatch.chdir(tmp_path)
    target = ["T1"] if command == "check" else ["fig2a"]
    code = cli.main([command, *target, "--preset", "smoke", "--kernel", "jax", "--n-jobs", "2"])
    assert code == 2
    assert "--n-jobs 2 and --kernel jax conflict" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any work
