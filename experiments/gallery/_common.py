"""Shared by the gallery scripts: the repository root and the smoke switch."""

import os
from pathlib import Path

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1"


def root():
    """The repository root (the gallery lives in ``experiments/gallery``)."""
    here = Path(globals().get("__file__", Path.cwd() / "x")).resolve().parent
    for p in (here, *here.parents):
        if (p / "pyproject.toml").is_file() and (p / "figures").is_dir():
            return p
    raise FileNotFoundError("cannot find the mixlinreg repository root from " + str(here))
