"""One loader for every grid: TOML files with the presets ``smoke``, ``quick`` and ``paper``.

Every grid of mixlinreg (the Figure 2 panels, each theory study, ``compare``, ``digits`` and
``bench``) is a TOML file shipped inside the package, in :mod:`mixlinreg.configs` (a study's in
``mixlinreg/configs/studies/``). A file
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

Where files are looked for: a ``.toml`` path as given (your own configs); a plain name is one of
the package's own configs, read through :mod:`importlib.resources`, so ``fig2a`` is found however
the package was installed (a venv, ``pip --user``, ``pip --target``, an editable clone). A name is
never looked up in the current folder: a file that happens to lie there cannot silently replace a
packaged config (:func:`shadows` lists such files, and every command names the file it read and
the lookalikes it did not).

Every key at every level is checked: the top level (``kind``, ``name``, ``description``, the
kind's tables and :data:`TOP_VALUES`, ``presets``), each table, each preset (also the presets not
being run) and its tables; an unknown key is refused with the nearest known one (:func:`suggest`).
A file that is not UTF-8 TOML is refused naming the file, with tomllib's line and column.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import math
import sys
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path

from ._paths import plain_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["PRESETS", "KINDS", "Spec", "Config", "load", "find", "packaged", "shadows", "suggest"]

#: Preset names, the same for every grid: ``paper`` is the file's own values.
PRESETS = ("smoke", "quick", "paper")
#: What a config file can describe.
KINDS = ("figure2", "study", "compare", "digits", "bench")
#: Top-level values a file may hold besides ``kind``, ``name``, ``description`` and its tables.
TOP_VALUES = {"figure2": ("layout",)}
_TOP = ("kind", "name", "description")


def _folder(sub: str = ""):
    """The packaged config folder (``sub``: ``""`` or ``"studies"``) as an importlib Traversable."""
    root = resources.files("mixlinreg.configs")
    return root / sub if sub else root


def packaged(sub: str = "") -> list[str]:
    """Names of the configs shipped in the package (``sub="studies"``: the studies').

    >>> packaged()
    ['bench', 'compare', 'digits', 'fig2a', 'fig2b', 'fig2c', 'fig2d']
    """
    if sub not in ("", "studies"):
        raise ValueError(f"sub must be '' or 'studies', got {sub!r}")
    return sorted(q.name[:-len(".toml")] for q in _folder(sub).iterdir()
                  if q.name.endswith(".toml") and q.is_file())


def find(name_or_path, sub: str = ""):
    """``"fig2a"`` -> the packaged ``fig2a.toml`` (a path where the package lies in folders, as
    it does for every pip install); a ``.toml`` path as given.

    Raises
    ------
    FileNotFoundError
        A ``.toml`` path that does not exist, or a name that is not a packaged config (the
        message lists the known names).
    ValueError
        A name that is not a plain name (see :func:`mixlinreg._paths.plain_name`).
    """
    p = Path(name_or_path)
    if p.suffix == ".toml":
        if not p.exists():
            raise FileNotFoundError(f"config file {p} does not exist")
        if p.is_dir():
            raise ValueError(f"config file {p} is a folder, not a TOML file")
        return p
    if len(p.parts) > 1 or (p.suffix and p.is_file()):
        raise ValueError(f"config {p}: a config file of your own must end in .toml (a plain name "
                         f"means a packaged config: {packaged(sub)})")
    plain_name("config name", str(name_or_path))
    cand = _folder(sub) / f"{name_or_path}.toml"
    if cand.is_file():
        return Path(str(cand)) if isinstance(cand, Path) else cand
    raise FileNotFoundError(f"no packaged config named {name_or_path!r}; known: {packaged(sub)}; "
                            f"for a config of your own pass the path of its .toml file")


def shadows(name, sub: str = "") -> list[Path]:
    """Files in the current folder that a user may take for the packaged config ``name``
    (``./NAME.toml``, ``./experiments/NAME.toml``, ``./configs/NAME.toml`` and, for studies,
    ``./experiments/studies/NAME.toml``): :func:`find` never reads them for a plain name, and a
    command that read the packaged config names them so that nobody believes they were used.

    >>> shadows("fig2a") == [] or all(p.name == "fig2a.toml" for p in shadows("fig2a"))
    True
    """
    if Path(str(name)).suffix == ".toml":
        return []
    folders = [Path("."), Path("experiments"), Path("configs")]
    if sub:
        folders += [Path("experiments") / sub, Path("configs") / sub]
    return [q for q in (f / f"{name}.toml" for f in folders) if q.is_file()]


def suggest(word, options) -> str:
    """``"; did you mean 'x'?"`` for the option nearest to ``word`` (case ignored), else ``""``.

    >>> suggest("trails", ["trials", "seed"])
    "; did you mean 'trials'?"
    >>> suggest("zzz", ["trials"])
    ''
    """
    options = [str(o) for o in options]
    lower = {o.lower(): o for o in options}
    word = str(word)
    if word.lower() in lower:
        return f"; did you mean {lower[word.lower()]!r}?"
    near = difflib.get_close_matches(word.lower(), list(lower), n=1, cutoff=0.6)
    return f"; did you mean {lower[near[0]]!r}?" if near else ""


@dataclass(frozen=True)
class Spec:
    """What one config value may be.

    ``kind`` is ``"int"``, ``"float"``, ``"bool"``, ``"str"``, ``"list[int]"``, ``"list[float]"``
    or ``"list[str]"``; ``low``/``high`` bound numbers (inclusive unless ``open`` names the side);
    ``choices`` restricts strings; ``required`` values must be in the file. ``open`` is ``""``,
    ``"low"``, ``"high"`` or ``"both"``.

    >>> Spec("float", low=0, open="low").check("x", 0.5)
    0.5
    >>> Spec("float", low=0, high=1, open="both").check("x", 1.0)
    Traceback (most recent call last):
    ...
    ValueError: x must be a number in (0, 1), got 1.0
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
        if self.open not in ("", "low", "high", "both"):
            raise ValueError(f"Spec open must be one of '', 'low', 'high', 'both', got "
                             f"{self.open!r}")
        if self.kind not in self._KINDS:
            raise ValueError(f"Spec kind must be one of {list(self._KINDS)}, got {self.kind!r}")

    @classmethod
    def of(cls, constraint, **kw):
        """The Spec of an API parameter: its entry in ``mixlinreg._validation.PARAMETERS`` (an
        ``Interval``, ``Options`` or ``Flag``), so that a config and the function it feeds
        cannot allow different values; ``kw`` as for Spec (``default``, ``required``).

        >>> from mixlinreg._validation import PARAMETERS
        >>> Spec.of(PARAMETERS["n_iter"], default=300, required=False).check("n_iter", 0)
        0
        """
        return cls(**cls._fields_of(constraint), **kw)

    @classmethod
    def list_of(cls, constraint, **kw):
        """:meth:`of` for a non-empty list of such values (an ``Interval`` or ``Options``).

        >>> from mixlinreg._validation import PARAMETERS
        >>> Spec.list_of(PARAMETERS["lr"]).check("steps", [1.0, 0.1])
        [1.0, 0.1]
        """
        fields = cls._fields_of(constraint)
        if fields["kind"] == "bool":
            raise TypeError("Spec.list_of takes an Interval or Options (there is no list[bool])")
        return cls(**{**fields, "kind": f"list[{fields['kind']}]"}, **kw)

    @staticmethod
    def _fields_of(constraint):
        from ._validation import Flag, Interval, Options

        if isinstance(constraint, Interval):
            if isinstance(constraint.low, str) or isinstance(constraint.high, str):
                raise ValueError(f"Spec.of needs fixed bounds, got {constraint!r}")
            side = {(False, False): "", (True, False): "low", (False, True): "high",
                    (True, True): "both"}[(constraint.low_open, constraint.high_open)]
            return dict(kind=constraint.kind, low=constraint.low, high=constraint.high, open=side)
        if isinstance(constraint, Options):
            return dict(kind="str", choices=tuple(constraint.choices))
        if isinstance(constraint, Flag):
            return dict(kind="bool")
        raise TypeError(f"Spec.of takes an Interval, Options or Flag, got {constraint!r}")

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
        lo_bad = self.low is not None and (v < self.low or (self._open("low") and v == self.low))
        hi_bad = self.high is not None and (v > self.high or (self._open("high")
                                                              and v == self.high))
        if lo_bad or hi_bad:
            raise ValueError(f"{where} must be {'an integer' if kind == 'int' else 'a number'}"
                             f"{self._range()}, got {v!r}")
        return int(v) if kind == "int" else float(v)

    def _range(self):
        if self.low is None and self.high is None:
            return ""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return (f" in {'(' if self._open('low') or self.low is None else '['}{lo}, {hi}"
                f"{')' if self._open('high') or self.high is None else ']'}")

    def _open(self, side):
        """Whether the ``side`` (``"low"`` or ``"high"``) end of the range is excluded."""
        return self.open in (side, "both")

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
    #: the file's other top-level values (as ``layout``), outside the hash
    top: dict = field(default_factory=dict, hash=False)
    #: what the caller's ``extras`` checkers returned for the entries they own (a study's
    #: ``version`` and ``[control]``), outside :meth:`hash`; ``raw`` is the parsed file
    extras: dict = field(default_factory=dict, hash=False)
    raw: dict = field(default_factory=dict, hash=False, repr=False)

    def __getitem__(self, section):
        return self.values[section]

    def canonical(self) -> dict:
        """Everything that can change a result, as plain JSON types (no path, no description)."""
        return {"kind": self.kind, "name": self.name, "preset": self.preset, "values": self.values}

    def hash(self) -> str:
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _merge(base, over):
    """Apply a preset (its keys were checked by :func:`_check_structure`)."""
    for section, values in over.items():
        base.setdefault(section, {}).update(copy.deepcopy(values))


def _unknown(where, what, key, allowed, hint=""):
    raise ValueError(f"config {where}: unknown {what} {key}; allowed: {sorted(allowed)}"
                     + (hint or suggest(key.split(".")[-1].strip("[]"), allowed)))


def _elsewhere(key, schema):
    """``"; did you mean 'protocol.seed' (inside [protocol])?"`` when ``key`` is a key of a table."""
    for section, specs in schema.items():
        if key in specs:
            return f"; did you mean {section}.{key} (inside [{section}])?"
    return ""


def _check_structure(where, raw, schema, top):
    """Every key at every level is known: the top level, each table, each preset's tables."""
    allowed = set(_TOP) | set(top) | set(schema) | {"presets"}
    for key, value in raw.items():
        if key not in allowed and isinstance(value, dict):
            _unknown(where, "table", f"[{key}]", schema, suggest(key, schema))
        if key not in allowed:
            _unknown(where, "top-level key", key, allowed,
                     _elsewhere(key, schema) or suggest(key, allowed))
        if key in schema and not isinstance(value, dict):
            raise ValueError(f"config {where}: {key} must be a table ([{key}]), got {value!r}")
        if (key in _TOP or key in top) and not isinstance(value, str):
            raise ValueError(f"config {where}: {key} must be a string, got {value!r}")
    for section, values in raw.items():
        if section in schema:
            _check_keys(where, section, values, schema)
    presets = raw.get("presets", {})
    if not isinstance(presets, dict):
        raise ValueError(f"config {where}: presets must be a table of presets ([presets.quick."
                         f"<table>]), got {presets!r}")
    for name, over in presets.items():
        if name == "paper":
            raise ValueError(f"config {where}: [presets.paper] is not allowed: the file's own "
                             f"values are the preset 'paper' (preset names must be among "
                             f"{list(PRESETS)})")
        if name not in PRESETS:
            _unknown(where, "preset", f"presets.{name}", PRESETS[:-1],
                     suggest(name, PRESETS[:-1]) + f" (preset names must be among {list(PRESETS)})")
        if not isinstance(over, dict):
            raise ValueError(f"config {where}: presets.{name} must be a table of overrides "
                             f"([presets.{name}.<table>]), got {over!r}")
        for section, values in over.items():
            at = f"presets.{name}.{section}"
            if section in _TOP or section in top:
                raise ValueError(f"config {where}: {at}: a preset overrides values inside the "
                                 f"tables {sorted(schema)}, not top-level values like {section}")
            if section not in schema:
                _unknown(where, "table", f"[{at}]", schema)
            if not isinstance(values, dict):
                raise ValueError(f"config {where}: {at} must be a table ([{at}]), got {values!r}")
            _check_keys(where, section, values, schema, prefix=f"presets.{name}.")


def _check_keys(where, section, values, schema, prefix=""):
    specs = schema[section]
    for key in values:
        if key not in specs:
            others = {s: v for s, v in schema.items() if s != section}
            _unknown(where, "key", f"{prefix}{section}.{key}", specs,
                     suggest(key, specs) or _elsewhere(key, others))


def load(name_or_path, preset="paper", *, kind, schema, sub="", top=None, extras=None) -> Config:
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
    top : sequence of str, optional
        Top-level values the file may hold besides ``kind``, ``name`` and ``description``
        (default :data:`TOP_VALUES` of the kind, e.g. ``layout`` for ``figure2``).
    extras : dict, optional
        ``{key: check}`` for top-level entries the caller reads itself (a study's ``version`` and
        ``[control]`` table): each present key is taken out of the file before the structure
        check and ``check(where, value, preset)`` (which raises naming what is wrong) gives what
        :attr:`Config.extras` holds; an absent key gives ``check(where, None, preset)``.

    Raises
    ------
    ValueError
        Naming the file and the key: a file that is not UTF-8 TOML (with tomllib's line and
        column), a wrong kind, an unknown preset, table or key at any level (the top level, a
        table, a preset's table; with the nearest known key), a value of the wrong type or out of
        range (``TypeError`` for a bool that is not ``true``/``false``).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {list(PRESETS)}, got {preset!r}")
    path = find(name_or_path, sub)
    where = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"config {where} is not a valid TOML file: it is not UTF-8 text "
                         f"(byte {exc.start})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config {where} is not a valid TOML file: {exc}") from None
    if raw.get("kind") != kind:
        raise ValueError(f"config {where}: kind must be {kind!r}, got {raw.get('kind')!r}")
    top = TOP_VALUES.get(kind, ()) if top is None else tuple(top)
    whole = copy.deepcopy(raw)
    extra = {}
    for key, check in (extras or {}).items():
        extra[key] = check(where, raw.pop(key, None), preset)
    _check_structure(where, raw, schema, top)
    name = raw.get("name", Path(path.name).stem)
    try:  # the name becomes part of output folder names: never a path
        plain_name(f"config {where}: name", name)
    except ValueError as exc:
        raise ValueError(str(exc) + ("" if "name" in raw else
                                     " (the file's stem; set name = \"...\" in the config)")) from None
    presets = raw.get("presets", {})
    values = {k: copy.deepcopy(v) for k, v in raw.items() if k in schema}
    if preset != "paper":
        if preset not in presets:
            raise ValueError(f"config {where}: preset must be one of "
                             f"{['paper'] + sorted(presets)}, got {preset!r}")
        _merge(values, presets[preset])
    out = {}
    for section, specs in schema.items():
        got = values.get(section, {})
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
                  path=where, values=out,
                  top={k: v for k, v in raw.items()
                       if not isinstance(v, dict) and k not in ("kind", "name", "description")},
                  extras=extra, raw=whole)
