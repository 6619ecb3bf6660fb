"""The tiny Figure 2 grid of the store's tests and probes (a few milliseconds per unit).

One definition, used by ``tests/test_store_integrity.py`` and ``probes/probe_cases_store.py``;
not part of the public API.
"""

from __future__ import annotations

import json
from pathlib import Path

TINY = """
kind = "figure2"
name = {name}
layout = "R-sigma"
[grid]
m = [8]
n = [10]
d = [6]
k = [2]
R = [0.5, 1.0]
sigma = [0.1]
[protocol]
steps = [0.1]
n_iter = 15
n_init = 2
trials = {trials}
seed = {seed}
success_plus = 0.001
"""


def tiny_text(*, name="tiny", trials=4, seed=1) -> str:
    """The config's text: a grid of 2 (R, sigma) points, ``trials`` trials, base ``seed``."""
    return TINY.format(name=json.dumps(name), trials=int(trials), seed=int(seed))


def write_tiny(path, *, name="tiny", trials=4, seed=1, extra="") -> Path:
    """Write the config (plus ``extra`` TOML lines) to ``path`` and return the path."""
    path = Path(path)
    path.write_text(tiny_text(name=name, trials=trials, seed=seed) + extra)
    return path
