"""Verdicts that can fail: a study's control, its registration, and the rule that joins them.

A study's config may declare a **control** (``[control]`` in ``configs/studies/<ID>.toml``): a
setting in which the study's claim is false (a violated condition, a broken variant of the method,
data without the structure), run with the study through the same ``units``, ``compute`` and
``analyze``, by the same rule and margins. Its parameters are the study's, with the overrides of
``[control.params]`` (and, for one preset, ``[control.presets.<preset>.params]``) applied on top of
the preset's values::

    [control]
    what = "models started at 1.5 Delta from their truth, outside the theorem's ball"
    [control.params]
    alpha0 = -1.0

Where no control can exist (an identity, a construction), the config says why instead::

    [control]
    none = "an identity of the algorithm: ..."

How the two verdicts join (:func:`judge`): a claim's verdict may be **holds** only when its
control came out **not supported** (the rule was seen to fail where the claim is false). A rule
verdict *holds* whose control came out otherwise, or whose study declares no control, is reported
as **holds with a caveat**, and the caveat says that the rule was not shown to fail. A study whose
config says ``none`` keeps its verdict, and the report marks it as not evidence (``evidence`` is
``False``). Other verdicts are unchanged. Reproducibility notes (kind ``"note"``) are not judged
this way.

**Registration** (:func:`registration`): a short hash of the config as parsed (every value of the
file that is not a comment or the description: the study's grid, its thresholds and margins, its
control and its ``version``), for one preset. Each record stores it, and the commit of the
repository that first held a config with that hash (:func:`registered_in`): a record's thresholds
are registered when that commit exists, holds no record of the study, and precedes the record's
own commit (``tests/test_controls.py`` walks the history and checks it). A threshold changed
after data is a new ``version`` of the study (its top-level ``version = 2``): the record of the
earlier version is kept (``<out>/versions/``) and the report shows both.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import tomllib
from pathlib import Path

from ..stats import CAVEAT, HOLDS, NOT_SUPPORTED

__all__ = ["CONTROL_KEYS", "check_version", "control_checker", "control_values", "registration",
           "registered_in", "judge", "NO_CONTROL", "NOT_EVIDENCE", "git_root",
           "registration_problems", "config_versions"]

#: the keys of a ``[control]`` table
CONTROL_KEYS = ("what", "none", "params", "presets")
#: the caveat of a *holds* whose study declares no control
NO_CONTROL = ("The rule was not shown to fail: this study declares no control (a setting where "
              "the claim is false, run by the same rule), so its 'holds' is at most a caveat.")
NOT_EVIDENCE = "no control can exist"


def check_version(where, value, preset):
    """A study config's top-level ``version``: an integer >= 1 (absent: 1)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config {where}: version must be an integer >= 1, got {value!r}")
    return value


def _override(where, at, over, specs):
    if not isinstance(over, dict):
        raise ValueError(f"config {where}: {at} must be a table ([{at}]), got {over!r}")
    out = {}
    for key, value in over.items():
        if key not in specs:
            from ..config import suggest

            raise ValueError(f"config {where}: unknown key {at}.{key}; allowed: "
                             f"{sorted(specs)}" + suggest(key, specs))
        out[key] = specs[key].check(f"config {where}: {at}.{key}", value)
    return out


def control_checker(schema):
    """The ``extras`` checker of a study's ``[control]`` table (see the module's text): returns
    ``{}`` (no control declared), ``{"none": why}`` or ``{"what": ..., "params": {...}}`` with
    the overrides for ``preset`` checked against the study's ``[params]`` schema."""
    specs = schema["params"]

    def check(where, value, preset):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError(f"config {where}: control must be a table ([control]), got {value!r}")
        bad = [k for k in value if k not in CONTROL_KEYS]
        if bad:
            raise ValueError(f"config {where}: unknown key control.{bad[0]}; allowed: "
                             f"{list(CONTROL_KEYS)}")
        if ("none" in value) == ("what" in value):
            raise ValueError(f"config {where}: [control] needs exactly one of 'what' (the setting "
                             f"where the claim is false) and 'none' (why no control can exist), "
                             f"got {sorted(value)}")
        for key in ("what", "none"):
            if key in value and (not isinstance(value[key], str) or not value[key].strip()):
                raise ValueError(f"config {where}: control.{key} must be a non-empty string, got "
                                 f"{value[key]!r}")
        if "none" in value:
            if set(value) - {"none"}:
                raise ValueError(f"config {where}: control.none takes no other keys, got "
                                 f"{sorted(value)}")
            return {"none": value["none"].strip()}
        params = _override(where, "control.params", value.get("params", {}), specs)
        presets = value.get("presets", {})
        if not isinstance(presets, dict):
            raise ValueError(f"config {where}: control.presets must be a table, got {presets!r}")
        from ..config import PRESETS

        for name, over in presets.items():
            if name not in PRESETS or name == "paper":
                raise ValueError(f"config {where}: control.presets.{name}: preset must be one of "
                                 f"{[p for p in PRESETS if p != 'paper']} (the paper preset's "
                                 f"values are control.params)")
            if not isinstance(over, dict) or set(over) - {"params"}:
                raise ValueError(f"config {where}: control.presets.{name} holds only a "
                                 f"[control.presets.{name}.params] table, got {over!r}")
            checked = _override(where, f"control.presets.{name}.params", over.get("params", {}),
                                specs)
            if name == preset:
                params.update(checked)
        if not params:
            raise ValueError(f"config {where}: [control] declares no override ([control.params]): "
                             f"a control must change a setting of the study")
        return {"what": value["what"].strip(), "params": params}

    return check


def control_values(values, control):
    """The study's checked values with the control's overrides (a new dict)."""
    out = copy.deepcopy(values)
    out["params"].update(copy.deepcopy(control["params"]))
    return out


def registration(raw, preset) -> str:
    """The registration hash of a parsed study config (``tomllib``'s dict, or its TOML text) for
    ``preset``: everything but the description and the other presets, so a comment or a
    description never changes it and any value does. 16 hex digits.

    >>> a = registration('kind = "study"\\n[margins]\\ntol = 0.1\\n', "paper")
    >>> a == registration('# a comment\\nkind = "study"\\n[margins]\\ntol = 0.1\\n', "paper")
    True
    >>> a == registration('kind = "study"\\n[margins]\\ntol = 0.2\\n', "paper")
    False
    """
    if isinstance(raw, str):
        raw = tomllib.loads(raw)
    base = {k: v for k, v in raw.items() if k not in ("description", "presets")}
    over = raw.get("presets", {}).get(preset, {}) if preset != "paper" else {}
    blob = json.dumps({"preset": preset, "base": base, "over": over}, sort_keys=True,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def git_root(path):
    """The root of the git work tree holding ``path``, or None (no git, or not in one)."""
    try:
        out = subprocess.run(["git", "-C", str(Path(path).parent), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _git(root, *args):
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or f"git {' '.join(args)} failed")
    return out.stdout


def config_versions(root, relpath, preset):
    """``[(commit, registration), ...]`` of every committed version of the config ``relpath``
    (oldest first) for ``preset``; a version that is not valid TOML has registration ``""``."""
    commits = _git(root, "log", "--format=%H", "--reverse", "--", relpath).split()
    out = []
    for c in commits:
        try:
            text = _git(root, "show", f"{c}:{relpath}")
            out.append((c, registration(text, preset)))
        except (RuntimeError, tomllib.TOMLDecodeError, AttributeError):
            out.append((c, ""))
    return out


def registered_in(config_path, reg, preset) -> str:
    """The first commit of the repository holding ``config_path`` whose version of that file has
    registration ``reg`` for ``preset``; ``""`` when there is none (the config's values are not
    committed, or the package is not in a git checkout)."""
    root = git_root(config_path)
    if root is None:
        return ""
    try:
        rel = Path(config_path).resolve().relative_to(root.resolve()).as_posix()
        for commit, r in config_versions(root, rel, preset):
            if r == reg:
                return commit
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError):
        return ""
    return ""


def judge(rule_verdict, control, kind="claim"):
    """The reported verdict of a claim from its rule's verdict and its control, and the caveat
    that says why it was lowered (or None).

    ``control`` is the record's ``control`` field: ``{}`` (none declared), ``{"none": why}`` or
    a run control with its ``verdict``.

    >>> judge("holds", {"what": "x", "verdict": "not supported"})
    ('holds', None)
    >>> judge("holds", {"what": "x", "verdict": "holds"})[0]
    'holds with a caveat'
    >>> judge("not supported", {})
    ('not supported', None)
    """
    if kind != "claim" or rule_verdict != HOLDS:
        return rule_verdict, None
    if not control:
        return CAVEAT, NO_CONTROL
    if "none" in control:
        return rule_verdict, None
    if control.get("verdict") == NOT_SUPPORTED:
        return rule_verdict, None
    return CAVEAT, (f"The rule was not shown to fail: its control ({control['what']}) came out "
                    f"'{control.get('verdict', 'not run')}', not 'not supported', so the rule's "
                    f"'holds' is reported as a caveat.")


def _record_registrations(root, relpath):
    """``[(commit, registration), ...]`` of every committed version of a record (oldest first)."""
    out = []
    for c in _git(root, "log", "--format=%H", "--reverse", "--", relpath).split():
        try:
            d = json.loads(_git(root, "show", f"{c}:{relpath}"))
        except (RuntimeError, ValueError):
            continue
        out.append((c, d.get("registration", "")))
    return out


def registration_problems(root, out="figures/checks", configs="mixlinreg/configs/studies"):
    """What the history says against the records' registrations, one line each (empty: none).

    For every record under ``root/out`` (and ``out/versions``) that carries a registration, and
    for its control's: the commit it names (``registered_in``) must exist in the history of
    ``HEAD``, hold a config of the study with that registration, touch no file of the study's
    under ``out`` (the thresholds committed alone), and come strictly before the first commit of
    the record with that registration (a record not yet committed comes after it by
    construction). A record with a registration but no commit was judged by thresholds not
    committed when it ran. Records made before registrations were recorded have none and are
    not judged here (the report's audit table says so).
    """
    root = Path(root)
    problems = []
    records = sorted((root / out).glob("*_*.json")) + sorted((root / out / "versions").glob("*.json"))
    for path in records:
        try:
            d = json.loads(path.read_text())
        except ValueError as exc:
            problems.append(f"{path.relative_to(root)}: not JSON ({exc})")
            continue
        if not isinstance(d, dict) or "id" not in d or "preset" not in d:
            continue
        sid, preset = d["id"], d["preset"]
        rel = path.relative_to(root).as_posix()
        cfg = f"{configs}/{sid}.toml"
        for what, part in (("record", d), ("its control", d.get("control") or {})):
            reg = part.get("registration", "")
            if not reg:
                continue
            commit = part.get("registered_in", "")
            where = f"{rel} ({what}, registration {reg})"
            if not commit:
                problems.append(f"{where}: judged by a config that was not committed when it ran")
                continue
            try:
                _git(root, "merge-base", "--is-ancestor", commit, "HEAD")
            except RuntimeError:
                problems.append(f"{where}: its registering commit {commit[:12]} is not in the "
                                f"history of HEAD")
                continue
            try:
                text = _git(root, "show", f"{commit}:{cfg}")
                got = registration(text, preset)
            except (RuntimeError, tomllib.TOMLDecodeError):
                got = None
            if got != reg:
                problems.append(f"{where}: the config {cfg} at {commit[:12]} has registration "
                                f"{got}, not {reg}")
                continue
            touched = _git(root, "show", "--name-only", "--format=", commit).split()
            mine = [t for t in touched if t.startswith(f"{out}/{sid}_")
                    or t.startswith(f"{out}/versions/{sid}_")]
            if mine:
                problems.append(f"{where}: its registering commit {commit[:12]} also holds "
                                f"records of {sid} ({', '.join(mine[:3])}): thresholds must be "
                                f"committed alone, before the data")
                continue
            for c, r in _record_registrations(root, rel):
                if r == reg:
                    if c == commit:
                        problems.append(f"{where}: committed in its registering commit")
                    else:
                        try:
                            _git(root, "merge-base", "--is-ancestor", commit, c)
                        except RuntimeError:
                            problems.append(f"{where}: first committed in {c[:12]}, which does "
                                            f"not come after its registering commit "
                                            f"{commit[:12]}")
                    break
    return problems
