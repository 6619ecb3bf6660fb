"""On-disk result store: one CSV per finished unit, written atomically; resumable.

Layout: ``<out>/<experiment>-<preset>-<hash[:12]>/``

* ``manifest.json``: the experiment's canonical config and its full hash;
* ``units/<unit id>.csv``: the rows of one finished unit.

A unit file is written to a temporary name in the same folder, flushed to disk and renamed into
place (``os.replace`` is atomic), so after any interruption (even SIGKILL) a unit is either
complete or absent. Re-running skips units whose file exists, so no work is redone and no row is
duplicated. A changed config has another hash and so another folder: old rows are never mixed in.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from .run import COLUMNS


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def _atomic_write_text(path: Path, text: str):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, _FILE_MODE)  # mkstemp creates 0600; a result file is an ordinary file
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ResultStore:
    """Finished units of one experiment (one config, one preset).

    ``clean=True`` removes temporary files of interrupted writes; pass it only where no worker can
    be writing (the coordinating process, before it starts the workers).
    """

    def __init__(self, out_dir, exp, *, clean=False):
        self.exp = exp
        self.path = Path(out_dir) / f"{exp.name}-{exp.preset}-{exp.hash()[:12]}"
        self.units_dir = self.path / "units"
        self.units_dir.mkdir(parents=True, exist_ok=True)
        manifest = self.path / "manifest.json"
        want = {"hash": exp.hash(), "config": exp.canonical(), "description": exp.description,
                "layout": exp.layout}
        if manifest.exists():
            have = json.loads(manifest.read_text())
            if have.get("hash") != want["hash"]:
                raise RuntimeError(f"{manifest} belongs to another config (hash {have.get('hash')}, "
                                   f"expected {want['hash']}); refusing to mix results")
        else:
            _atomic_write_text(manifest, json.dumps(want, indent=2, sort_keys=True))
        if clean:
            # temporary files left by an interrupted write; only the coordinating process may do
            # this, before any worker starts (a worker's write in progress also looks like this)
            for stale in self.units_dir.glob(".*.tmp"):
                stale.unlink(missing_ok=True)

    def unit_path(self, unit_id) -> Path:
        return self.units_dir / f"{unit_id}.csv"

    def done(self) -> set:
        return {p.stem for p in self.units_dir.glob("*.csv")}

    def write(self, unit_id, rows: pd.DataFrame):
        # float_format keeps every bit of a float64 (round-trip exact)
        _atomic_write_text(self.unit_path(unit_id), rows.to_csv(index=False, float_format="%.17g"))

    def table(self) -> pd.DataFrame:
        """All finished rows, in the experiment's unit order (independent of completion order)."""
        order = {u.id: i for i, u in enumerate(self.exp.units())}
        files = sorted(self.units_dir.glob("*.csv"), key=lambda p: order.get(p.stem, len(order)))
        if not files:
            return pd.DataFrame(columns=COLUMNS)
        return pd.concat([pd.read_csv(f, dtype={"spawn_key": str, "seed_entropy": str})
                          for f in files], ignore_index=True)
