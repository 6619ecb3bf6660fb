"""One loader for every grid: TOML files with the presets ``smoke``, ``quick`` and ``paper``.

Every grid of mixlinreg (the Figure 2 panels, each theory study, ``compare``, ``digits`` and
``bench``) is a TOML file in ``experiments/`` (a study's in ``experiments/studies/``). A file
declares its ``kind`` and ``name``, holds its values in tables, and may override any of them per
preset::

    kind = "study"
    name = "T1"

    [params]
    n_seeds = 30
    alpha0s = [0.05, 0.15, 0.25, 0.4]

    [presets.quick.params]     # the file's own values are the preset "paper"
    n_seeds = 10

:func:`load` finds the file, applies the preset and checks every value against the kind's schema
(:class:`Spec` entries, declared as data next to the code that reads them), with an error that
names the file, the key, the allowed values and the value received.

Where files are looked for: a path as given; else ``<name>.toml`` in ``./experiments`` (your own
configs first), in the installed copy (``<sys.prefix>/share/mixlinreg/experiments``, from the
wheel) and in the source tree's ``experiments/`` (an editable install).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ._paths import plain_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["PRESETS", "KINDS", "Spec", "Config", "load", "find", "config_dirs"]

#: Preset names, the same for every grid: ``paper`` is the file's own values.
PRESETS = ("smoke", "quick", "paper")
#: What a config file can describe.
KINDS = ("figure2", "study", "compare", "digits", "bench")


def config_dirs(sub: str = "") -> list[Path]:
    """Folders searched for configs, in order (``sub``: e.g. ``"studies"``)."""
    dirs = [Path.cwd() / "experiments",
            Path(sys.prefix) / "share" / "mixlinreg" / "experiments",
            Path(__file__).resolve().parents[1] / "experiments"]
    out = []
    for d in dirs:
        d = d / sub if sub else d
        if d not in out:
            out.append(d)
    return out


def find(name_or_path, sub: str = "") -> Path:
    """``"fig2a"`` -> the first ``fig2a.toml`` of :func:`config_dirs`; a ``.toml`` path as given."""
    p = Path(name_or_path)
    if p.suffix == ".toml":
        if not p.exists():
            raise FileNotFoundError(f"config file {p} does not exist")
        return p
    plain_name("config name", str(name_or_path))
    for folder in config_dirs(sub):
        cand = folder / f"{name_or_path}.toml"
        if cand.exists():
            return cand
    known = sorted({q.stem for f in config_dirs(sub) if f.exists() for q in f.glob("*.toml")})
    raise FileNotFoundError(f"no config named {name_or_path!r} in {[str(f) for f in config_dirs(sub)]}; "
                            f"known: {known}; pass a .toml path instead")


@dataclass(frozen=True)
class Spec:
    """What one config value may be.

    ``kind`` is ``"int"``, ``"float"``, ``"bool"``, ``"str"``, ``"list[int]"``, ``"list[float]"``
    or ``"list[str]"``; ``low``/``high`` bound numbers (inclusive unless ``open`` names the side);
    ``choices`` restricts strings; ``required`` values must be in the file.

    >>> Spec("float", low=0, open="low").check("x", 0.5)
    0.5
    """

    kind: str
    low: float | None = None
    high: float | None = None
    open: str = ""
    choices: tuple = ()
    required: bool = True
    default: object = None

    _KINDS = ("int", "float", "bool", "str", "list[int]", "list[float]", "list[str]")

    def __post_init__(self):
        from ._validation import check_bool

        check_bool("required", self.required)
        if self.kind not in self._KINDS:
            raise ValueError(f"Spec kind must be one of {list(self._KINDS)}, got {self.kind!r}")

    def _one(self, where, v, kind):
        if kind == "bool":
            if not isinstance(v, bool):  # TOML booleans are true/false, never "false" or 0
                raise TypeError(f"{where} must be a bool (true or false), got {v!r}")
            return v
        if kind == "str":
            if not isinstance(v, str) or (self.choices and v not in self.choices):
                allowed = f"one of {list(self.choices)}" if self.choices else "a string"
                raise ValueError(f"{where} must be {allowed}, got {v!r}")
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                kind == "int" and not isinstance(v, int)) or not math.isfinite(v):
            raise ValueError(f"{where} must be a finite {'integer' if kind == 'int' else 'number'}"
                             f"{self._range()}, got {v!r}")
        lo_bad = self.low is not None and (v < self.low or ("low" in self.open and v == self.low))
        hi_bad = self.high is not None and (v > self.high or ("high" in self.open and v == self.high))
        if lo_bad or hi_bad:
            raise ValueError(f"{where} must be {'an integer' if kind == 'int' else 'a number'}"
                             f"{self._range()}, got {v!r}")
        return int(v) if kind == "int" else float(v)

    def _range(self):
        if self.low is None and self.high is None:
            return ""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return (f" in {'(' if 'low' in self.open else '['}{lo}, {hi}"
                f"{')' if 'high' in self.open or self.high is None else ']'}")

    def check(self, where, value):
        if self.kind.startswith("list["):
            inner = self.kind[5:-1]
            if not isinstance(value, list) or not value:
                raise ValueError(f"{where} must be a non-empty list, got {value!r}")
            return [self._one(f"{where}[{i}]", v, inner) for i, v in enumerate(value)]
        return self._one(where, value, self.kind)


@dataclass(frozen=True)
class Config:
    """A loaded, checked config: ``values[section][key]`` after the preset was applied."""

    kind: str
    name: str
    description: str
    preset: str
    path: str
    values: dict = field(hash=False)

    def __getitem__(self, section):
        return self.values[section]

    def canonical(self) -> dict:
        """Everything that can change a result, as plain JSON types (no path, no description)."""
        return {"kind": self.kind, "name": self.name, "preset": self.preset, "values": self.values}

    def hash(self) -> str:
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _merge(base, over, where):
    for key, value in over.items():
        if isinstance(value, dict):
            if not isinstance(base.get(key), dict):
                raise ValueError(f"{where}: the preset overrides [{key}], which the file does not have")
            _merge(base[key], value, f"{where}.{key}")
        else:
            base[key] = value


def load(name_or_path, preset="paper", *, kind, schema, sub="") -> Config:
    """Read a config of ``kind``, apply ``preset`` and check it against ``schema``.

    Parameters
    ----------
    name_or_path : str or path
        A name (see :func:`find`) or a ``.toml`` path.
    preset : {"smoke", "quick", "paper"}
    kind : str
        One of :data:`KINDS`; the file's ``kind`` must match.
    schema : dict
        ``{section: {key: Spec}}``; a section's missing optional keys take the spec's default.
    sub : str
        Subfolder of the config folders (``"studies"`` for studies).

    Raises
    ------
    ValueError
        Naming the file and the key: a wrong kind, an unknown preset, section or key, a value of
        the wrong type or out of range (``TypeError`` for a bool that is not ``true``/``false``).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {list(PRESETS)}, got {preset!r}")
    path = find(name_or_path, sub)
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    where = str(path)
    if raw.get("kind") != kind:
        raise ValueError(f"config {where}: kind must be {kind!r}, got {raw.get('kind')!r}")
    name = raw.get("name", path.stem)
    try:  # the name becomes part of output folder names: never a path
        plain_name(f"config {where}: name", name)
    except ValueError as exc:
        raise ValueError(str(exc) + ("" if "name" in raw else
                                     " (the file's stem; set name = \"...\" in the config)")) from None
    presets = raw.get("presets", {})
    values = {k: copy.deepcopy(v) for k, v in raw.items() if isinstance(v, dict) and k != "presets"}
    if preset != "paper":
        if preset not in presets:
            raise ValueError(f"config {where}: preset must be one of "
                             f"{['paper'] + sorted(presets)}, got {preset!r}")
        _merge(values, presets[preset], f"config {where}: presets.{preset}")
    for key in presets:
        if key not in PRESETS:
            raise ValueError(f"config {where}: preset names must be among {list(PRESETS)}, got {key!r}")
    out = {}
    for section in values:
        if section not in schema:
            raise ValueError(f"config {where}: unknown table [{section}]; allowed: {sorted(schema)}")
    for section, specs in schema.items():
        got = values.get(section, {})
        for key in got:
            if key not in specs:
                raise ValueError(f"config {where}: unknown key {section}.{key}; allowed: {sorted(specs)}")
        sec = {}
        for key, spec in specs.items():
            if key in got:
                sec[key] = spec.check(f"config {where}: {section}.{key}", got[key])
            elif spec.required:
                raise ValueError(f"config {where}: {section}.{key} is missing")
            else:
                sec[key] = copy.deepcopy(spec.default)
        out[section] = sec
    return Config(kind=kind, name=name, description=raw.get("description", ""), preset=preset,
                  path=where, values=out)
