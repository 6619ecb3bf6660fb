"""Experiment configurations: TOML files with a grid, a protocol and presets.

A config file looks like the packaged ``mixlinreg/configs/fig2a.toml`` (abridged)::

    kind = "figure2"
    name = "fig2a"
    description = "..."
    layout = "R-sigma"          # figure layout: "R-sigma" (x = R, one line per sigma) or "m-n"

    [grid]                      # every combination is a grid cell
    m = [100]
    n = [100]
    d = [1000]
    k = [2]
    R = [0.1, 0.25, 0.5, 0.75, 1.0]
    sigma = [0.0, 0.1, 0.2, 0.4]

    [protocol]
    steps = [1.0, 0.1, 0.01]    # step sizes swept in every trial
    n_iter = 300
    n_init = 10                 # initializations per trial
    trials = 40
    dtype = "float32"
    theta_scale = "code"        # theta*_j = R * Bernoulli(0.5)^d ("norm": rescaled to norm R)
    init = "bernoulli"          # or "close" (then grid has alpha0)
    success_plus = 0.001        # authors' rule: dist_nearest < 0.6 sigma + success_plus
    seed = 2020

    [presets.quick.protocol]    # any protocol or grid value may be overridden per preset
    trials = 10

Cells that differ only in R, sigma (and alpha0) share one trial's data (X, the Bernoulli patterns and
the standard-normal noise, as in the authors' code) and run in one batched kernel call: the unit of
work is one trial of one (m, n, d, k) group.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


from .. import config as _cfg


GROUP_AXES = ("m", "n", "d", "k")
CELL_AXES = ("R", "sigma", "alpha0")


def _schema():
    """The one schema of a Figure 2 config, with every default: ``[grid]`` (the group axes and R,
    sigma required; alpha0 only with ``init = "close"``) and ``[protocol]`` (only ``steps``
    required). :func:`mixlinreg.config.load` checks each value against it; :func:`load_config`
    adds only the checks that involve several values."""
    from .._validation import PARAMETERS as P  # the API's bounds: a config allows what ifca does

    S = _cfg.Spec
    grid = {a: S("list[int]", low=1) for a in GROUP_AXES}
    grid.update(R=S("list[float]", low=0), sigma=S("list[float]", low=0),
                alpha0=S("list[float]", low=0, high=0.5, open="low", required=False))
    opt = dict(required=False)
    protocol = dict(
        steps=S.list_of(P["lr"]),
        n_iter=S.of(P["n_iter"], default=300, **opt), n_init=S.of(P["n_init"], default=10, **opt),
        trials=S("int", low=1, default=40, **opt),
        dtype=S("str", choices=("float32", "float64"), default="float32", **opt),
        theta_scale=S("str", choices=("code", "norm"), default="code", **opt),
        init=S("str", choices=("bernoulli", "close"), default="bernoulli", **opt),
        success_plus=S("float", low=0, default=0.0, **opt), seed=S("int", low=0, default=0, **opt),
        early_stop=S.of(P["early_stop"], default=False, **opt),
        tol=S.of(P["tol"], default=1e-6, **opt))
    return {"grid": grid, "protocol": protocol}


@dataclass(frozen=True)
class Unit:
    """One trial of one (m, n, d, k) group: the cells in it share the trial's data."""

    m: int
    n: int
    d: int
    k: int
    trial: int
    cells: tuple  # ((R, sigma, alpha0), ...); alpha0 is nan unless init == "close"

    @property
    def id(self) -> str:
        return f"m{self.m}_n{self.n}_d{self.d}_k{self.k}_t{self.trial:04d}"

    @property
    def spawn_key(self) -> tuple:
        """SeedSequence spawn key: the group's values and the trial, stable under grid edits."""
        return (self.m, self.n, self.d, self.k, self.trial)


_UNIT_ID = re.compile(r"^m(\d+)_n(\d+)_d(\d+)_k(\d+)_t(\d+)$")


class UnitList(Sequence):
    """The units of an experiment, made on demand (``exp.units()``): groups in the order of
    :meth:`Experiment.groups` (the last axis fastest), trials within each group. Holds no list: a
    grid of a billion units is described in O(1) memory, and a unit is found by its id in O(1)
    (:meth:`index`)."""

    def __init__(self, exp):
        self._exp = exp
        self._axes = [list(exp.grid[a]) for a in GROUP_AXES]
        self._trials = int(exp.protocol["trials"])
        self._n = math.prod(len(a) for a in self._axes) * self._trials
        self._cells = None

    def __len__(self):
        return self._n

    def _coords(self, i):
        i = int(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"unit index {i} out of range ({self._n} units)")
        g, t = divmod(i, self._trials)
        vals = []
        for axis in reversed(self._axes):
            g, j = divmod(g, len(axis))
            vals.append(int(axis[j]))
        return tuple(reversed(vals)) + (t,)

    def id_at(self, i) -> str:
        """The id of unit ``i`` (no cells are built)."""
        m, n, d, k, t = self._coords(i)
        return f"m{m}_n{n}_d{d}_k{k}_t{t:04d}"

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if self._cells is None:
            self._cells = tuple(self._exp.cells())
        return Unit(*self._coords(i), self._cells)

    def __iter__(self):
        return (self[i] for i in range(self._n))

    def find(self, unit_id):
        """The index of the unit named ``unit_id`` (a str or a :class:`Unit`), or ``None``."""
        unit_id = unit_id.id if isinstance(unit_id, Unit) else unit_id
        match = _UNIT_ID.match(unit_id) if isinstance(unit_id, str) else None
        if match is None:
            return None
        *vals, t = (int(v) for v in match.groups())
        if t >= self._trials:
            return None
        g = 0
        for axis, v in zip(self._axes, vals):
            if v not in axis:
                return None
            g = g * len(axis) + axis.index(v)
        i = g * self._trials + t
        return i if self.id_at(i) == unit_id else None

    def index(self, unit_id, *_):
        i = self.find(unit_id)
        if i is None:
            raise ValueError(f"{unit_id!r} is not one of the {self._n} units")
        return i

    def __contains__(self, unit_id):
        return self.find(unit_id) is not None


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    layout: str
    preset: str
    grid: dict = field(hash=False)
    protocol: dict = field(hash=False)
    #: the file it was read from (provenance only: not part of :meth:`canonical` or the hash)
    path: str = field(default="", compare=False, hash=False)

    # ------------------------------------------------------------------ derived
    def canonical(self) -> dict:
        """Everything that can change a result, as plain JSON types."""
        return {"name": self.name, "preset": self.preset, "grid": self.grid,
                "protocol": self.protocol}

    def hash(self) -> str:
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def cells(self):
        alphas = self.grid.get("alpha0", [float("nan")])
        return [(float(R), float(s), float(a)) for R, s, a in
                itertools.product(self.grid["R"], self.grid["sigma"], alphas)]

    def groups(self):
        return [tuple(int(v) for v in g) for g in
                itertools.product(*(self.grid[a] for a in GROUP_AXES))]

    def units(self) -> UnitList:
        """Every unit, groups then trials: a :class:`UnitList` (made on demand, never a list)."""
        return UnitList(self)

    def unit(self, unit_id):
        """The unit named ``unit_id`` (``"m100_n100_d1000_k2_t0000"``); a ``ValueError`` that
        names the experiment, its preset and the first and last of its units otherwise."""
        units = self.units()
        i = units.find(unit_id)
        if i is not None:
            return units[i]
        raise ValueError(f"unit: must be one of the {len(units)} units of {self.name} at preset "
                         f"{self.preset} ({units.id_at(0)} ... {units.id_at(-1)}), got {unit_id!r}")

    @property
    def runs_per_unit(self) -> int:
        p = self.protocol
        return math.prod(len(self.grid[a]) for a in CELL_AXES if a in self.grid) \
            * p["n_init"] * len(p["steps"])


def _fail(where, msg):
    raise ValueError(f"config {where}: {msg}")


def _check_together(where, g, p, layout):
    """What the schema cannot say about one value alone."""
    for m, k in itertools.product(g["m"], g["k"]):
        if m % k:
            _fail(where, f"every m must be divisible by every k (equal clusters), got m={m}, k={k}")
    if p["init"] == "close" and "alpha0" not in g:
        _fail(where, "init = 'close' needs grid.alpha0 with values in (0, 0.5]")
    if p["init"] != "close" and "alpha0" in g:
        _fail(where, "grid.alpha0 is only used with protocol.init = 'close'")
    if layout not in ("R-sigma", "m-n"):
        _fail(where, f"layout must be 'R-sigma' or 'm-n', got {layout!r}")


def resolve_config_path(name_or_path) -> Path:
    """``"fig2a"`` -> the packaged ``fig2a.toml`` (see :func:`mixlinreg.config.find`); a path as is."""
    return _cfg.find(name_or_path)


def load_config(name_or_path, preset="paper") -> Experiment:
    """Read a Figure 2 config (``kind = "figure2"``) with ``preset`` applied ("paper" = the file's
    own values) through :func:`mixlinreg.config.load`, then check how its values fit together."""
    cfg = _cfg.load(name_or_path, preset, kind="figure2", schema=_schema())
    layout = cfg.top.get("layout", "R-sigma")
    g = {k: v for k, v in cfg["grid"].items() if v is not None}
    p = dict(cfg["protocol"])
    _check_together(cfg.path, g, p, layout)
    return Experiment(name=cfg.name, description=cfg.description, layout=layout, preset=preset,
                      grid=g, protocol=p, path=cfg.path)
