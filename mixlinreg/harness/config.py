"""Experiment configurations: TOML files with a grid, a protocol and presets.

A config file looks like the source repository's ``experiments/fig2a.toml`` (abridged)::

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
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import config as _cfg

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


GROUP_AXES = ("m", "n", "d", "k")
CELL_AXES = ("R", "sigma", "alpha0")

_PROTOCOL_DEFAULTS = dict(
    steps=None, n_iter=300, n_init=10, trials=40, dtype="float32", theta_scale="code",
    init="bernoulli", success_plus=0.0, seed=0, early_stop=False, tol=1e-6,
)


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


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    layout: str
    preset: str
    grid: dict = field(hash=False)
    protocol: dict = field(hash=False)

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

    def units(self):
        cells = tuple(self.cells())
        return [Unit(m, n, d, k, t, cells) for (m, n, d, k) in self.groups()
                for t in range(self.protocol["trials"])]

    def unit(self, unit_id):
        """The unit named ``unit_id`` (``"m100_n100_d1000_k2_t0000"``); a ``ValueError`` that
        names the experiment, its preset and the first and last of its units otherwise."""
        units = self.units()
        for u in units:
            if u.id == unit_id:
                return u
        ids = [u.id for u in units]
        raise ValueError(f"unit: must be one of the {len(ids)} units of {self.name} at preset "
                         f"{self.preset} ({ids[0]} ... {ids[-1]}), got {unit_id!r}")

    @property
    def runs_per_unit(self) -> int:
        p = self.protocol
        return len(self.cells()) * p["n_init"] * len(p["steps"])


def _fail(where, msg):
    raise ValueError(f"config {where}: {msg}")


def _as_list(where, key, value, kind):
    vals = value if isinstance(value, list) else [value]
    if not vals:
        _fail(where, f"grid.{key} must be a non-empty list")
    out = []
    for v in vals:
        if kind is int:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                _fail(where, f"grid.{key} values must be integers >= 1, got {v!r}")
            out.append(int(v))
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                _fail(where, f"grid.{key} values must be finite numbers >= 0, got {v!r}")
            out.append(float(v))
    return out


def _validate(where, grid, protocol, layout):
    for key in grid:
        if key not in GROUP_AXES + CELL_AXES:
            _fail(where, f"unknown grid axis {key!r}; allowed: {list(GROUP_AXES + CELL_AXES)}")
    for key in GROUP_AXES + ("R", "sigma"):
        if key not in grid:
            _fail(where, f"grid.{key} is missing")
    g = {k: _as_list(where, k, grid[k], int) for k in GROUP_AXES}
    g.update({k: _as_list(where, k, grid[k], float) for k in CELL_AXES if k in grid})
    for m, k in itertools.product(g["m"], g["k"]):
        if m % k:
            _fail(where, f"every m must be divisible by every k (equal clusters), got m={m}, k={k}")
    for key in protocol:
        if key not in _PROTOCOL_DEFAULTS:
            _fail(where, f"unknown protocol key {key!r}; allowed: {sorted(_PROTOCOL_DEFAULTS)}")
    p = dict(_PROTOCOL_DEFAULTS)
    p.update(protocol)
    if not isinstance(p["steps"], list) or not p["steps"] or not all(
            isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 for s in p["steps"]):
        _fail(where, f"protocol.steps must be a non-empty list of positive numbers, got {p['steps']!r}")
    p["steps"] = [float(s) for s in p["steps"]]
    for key in ("n_iter", "n_init", "trials"):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < 1:
            _fail(where, f"protocol.{key} must be an integer >= 1, got {p[key]!r}")
    if isinstance(p["seed"], bool) or not isinstance(p["seed"], int) or p["seed"] < 0:
        _fail(where, f"protocol.seed must be an integer >= 0, got {p['seed']!r}")
    if p["dtype"] not in ("float32", "float64"):
        _fail(where, f"protocol.dtype must be 'float32' or 'float64', got {p['dtype']!r}")
    if p["theta_scale"] not in ("code", "norm"):
        _fail(where, f"protocol.theta_scale must be 'code' or 'norm', got {p['theta_scale']!r}")
    if p["init"] not in ("bernoulli", "close"):
        _fail(where, f"protocol.init must be 'bernoulli' or 'close', got {p['init']!r}")
    if p["init"] == "close":
        if "alpha0" not in g or not all(0 < a <= 0.5 for a in g["alpha0"]):
            _fail(where, "init = 'close' needs grid.alpha0 with values in (0, 0.5]")
    elif "alpha0" in g:
        _fail(where, "grid.alpha0 is only used with protocol.init = 'close'")
    if not isinstance(p["success_plus"], (int, float)) or p["success_plus"] < 0:
        _fail(where, f"protocol.success_plus must be a number >= 0, got {p['success_plus']!r}")
    p["success_plus"] = float(p["success_plus"])
    if not isinstance(p["early_stop"], bool):  # TOML booleans are true/false, never "false" or 0
        raise TypeError(f"config {where}: protocol.early_stop must be a bool (true or false), "
                        f"got {p['early_stop']!r}")
    p["tol"] = float(p["tol"])
    if layout not in ("R-sigma", "m-n"):
        _fail(where, f"layout must be 'R-sigma' or 'm-n', got {layout!r}")
    return g, p


def resolve_config_path(name_or_path) -> Path:
    """``"fig2a"`` -> ``experiments/fig2a.toml`` (see :func:`mixlinreg.config.find`); a path as is."""
    return _cfg.find(name_or_path)


def _figure2_schema():
    opt = dict(required=False)
    grid = {a: _cfg.Spec("list[int]", low=1, **opt) for a in GROUP_AXES}
    grid.update({a: _cfg.Spec("list[float]", low=0, **opt) for a in CELL_AXES})
    kinds = dict(steps="list[float]", n_iter="int", n_init="int", trials="int", dtype="str",
                 theta_scale="str", init="str", success_plus="float", seed="int",
                 early_stop="bool", tol="float")
    return {"grid": grid, "protocol": {key: _cfg.Spec(kind, **opt) for key, kind in kinds.items()}}


def load_config(name_or_path, preset="paper") -> Experiment:
    """Read a Figure 2 config (``kind = "figure2"``) with ``preset`` applied ("paper" = the file's
    own values) through :func:`mixlinreg.config.load`, then check how its values fit together."""
    cfg = _cfg.load(name_or_path, preset, kind="figure2", schema=_figure2_schema())
    where = cfg.path
    with open(where, "rb") as fh:
        layout = tomllib.load(fh).get("layout", "R-sigma")
    grid = {k: v for k, v in cfg["grid"].items() if v is not None}
    protocol = {k: v for k, v in cfg["protocol"].items() if v is not None}
    g, p = _validate(where, grid, protocol, layout)
    return Experiment(name=cfg.name, description=cfg.description, layout=layout, preset=preset,
                      grid=g, protocol=p)
