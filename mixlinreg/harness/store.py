"""Figure 2's result store: :class:`ResultStore`, the harness's store of one experiment,
``<out>/<experiment>-<preset>-<hash[:12]>/`` with ``manifest.json`` and ``units/``; it expects the
columns :data:`~mixlinreg.harness.run.COLUMNS`, ``runs_per_unit`` rows per unit and the
experiment's hash in every row. Its units are a :class:`mixlinreg.runner.store.UnitStore` (the
runner's store: atomic writes, records, claims, resume; its module says how); a damaged or foreign
``manifest.json`` or a file where a folder is needed ends in one :class:`StoreError` line that says
what, where and how to resume, and keeps the finished units.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from .._paths import atomic_write, inside, plain_name
from ..runner.store import (STALE_AFTER, StoreError, UnitStore, _write_error, clean_temporary_files,
                            make_folder)
from .run import COLUMNS, LEGACY_COLUMNS

logger = logging.getLogger("mixlinreg")


def _read_manifest(manifest):
    """``(manifest dict or None when absent, why it cannot be used or None)``."""
    try:
        have = json.loads(Path(manifest).read_text())
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, "is a folder, not a file"
    except ValueError:
        return None, "is damaged (not JSON)"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if not isinstance(have, dict):
        return None, "is damaged (not a JSON object)"
    return have, None


def _manifest_error(manifest, why, units_dir) -> StoreError:
    kept = sum(1 for _ in Path(units_dir).glob(f"*{UnitStore.RECORD}")) if Path(units_dir).is_dir() \
        else 0
    return StoreError(f"{manifest} {why}: move it away and run the same command again (the units "
                      f"finished in {units_dir} ({kept}) are kept, each proven by its own record), "
                      "or choose another --out")


class ResultStore:
    """Finished units of one experiment (one config, one preset).

    ``clean=True`` removes temporary files left by dead processes of this host (only the
    coordinating process needs it; a live process's write in progress is never touched).
    """

    @classmethod
    def find(cls, out_dir, exp):
        """The existing store of ``exp`` under ``out_dir``, for reading; never creates one.

        Raises ``FileNotFoundError`` naming the command that makes the results when there are
        none (the way a study asks for Figure 2 rows: by config, not by a path).
        """
        folder = Path(out_dir) / f"{plain_name('experiment name', exp.name)}-" \
                                 f"{plain_name('preset', exp.preset)}-{exp.hash()[:12]}"
        if not (folder / "manifest.json").exists():
            raise FileNotFoundError(
                f"no results of {exp.name} (preset {exp.preset}, config hash {exp.hash()[:12]}) under "
                f"{out_dir}: make them with `mixlinreg reproduce {exp.name} --preset {exp.preset} "
                f"--out {out_dir}`")
        return cls(out_dir, exp)

    def __init__(self, out_dir, exp, *, clean=False, stale_after=STALE_AFTER):
        self.exp = exp
        name = plain_name("experiment name", exp.name)
        preset = plain_name("preset", exp.preset)
        self.path = inside(out_dir, Path(out_dir) / f"{name}-{preset}-{exp.hash()[:12]}")
        self.units_dir = make_folder(self.path / "units")
        manifest = self.path / "manifest.json"
        want = {"hash": exp.hash(), "config": exp.canonical(), "description": exp.description,
                "layout": exp.layout}
        have, why = _read_manifest(manifest)
        if why is None and have is not None and have.get("hash") != want["hash"]:
            why = (f"belongs to another config (hash {have.get('hash')}, expected "
                   f"{want['hash']}); refusing to mix results")
        if why is not None:
            raise _manifest_error(manifest, why, self.units_dir)
        if have is None:
            try:
                atomic_write(manifest, json.dumps(want, indent=2, sort_keys=True))
            except OSError as exc:
                raise _write_error("manifest.json", self.path, exc, None) from None
        short = exp.hash()[:16]

        def check(unit_id, df):
            if df.empty:
                return "it has no rows"
            if set(df["config_hash"].astype(str)) != {short}:
                return f"its rows carry config_hash {sorted(set(df['config_hash'].astype(str)))}, " \
                       f"expected {short}"
            if set(df["unit"].astype(str)) != {unit_id}:
                return f"its rows belong to unit {sorted(set(df['unit'].astype(str)))}"
            if df[["dist_nearest", "n_iter"]].isna().all().any():
                return "a result column is empty"
            return None

        self.units = UnitStore(self.units_dir, name=self.path.name, tag=exp.hash(), columns=COLUMNS,
                               legacy_columns=LEGACY_COLUMNS, rows=lambda _id: exp.runs_per_unit, check=check,
                               read_kw=dict(dtype={"spawn_key": str, "seed_entropy": str,
                                                   "config_hash": str, "unit": str}),
                               stale_after=stale_after)
        if clean:
            clean_temporary_files(self.units_dir)
            clean_temporary_files(self.path)

    @classmethod
    def open(cls, path, **kw) -> "ResultStore":
        """The store in the folder ``path`` (its experiment read back from ``manifest.json``)."""
        from .experiment import Experiment

        path = Path(path)
        man, why = _read_manifest(path / "manifest.json")
        if man is None and why is None:
            raise FileNotFoundError(f"{path} holds no manifest.json: not a result store")
        exp = None
        if why is None:
            try:
                c = man["config"]
                exp = Experiment(name=c["name"], description=man.get("description", ""),
                                 layout=man.get("layout", "R-sigma"), preset=c["preset"],
                                 grid=c["grid"], protocol=c["protocol"])
            except (KeyError, TypeError):
                why = "is damaged (its config is incomplete)"
        if why is None and exp.hash() != man.get("hash"):
            why = f"is damaged (its config does not hash to its recorded hash {man.get('hash')})"
        if why is not None:
            raise _manifest_error(path / "manifest.json", why, path / "units")
        store = cls(path.parent, exp, **kw)
        if store.path.resolve() != path.resolve():
            raise StoreError(f"{path}: the folder name does not match its manifest "
                             f"(expected {store.path.name})")
        return store

    def unit_path(self, unit_id) -> Path:
        return self.units.path(unit_id)

    def done(self, *, warn=True) -> set:
        """Units whose file is proven (a damaged one warns with its path and is not counted)."""
        return self.units.done(warn=warn)

    def write(self, unit_id, rows: pd.DataFrame):
        # float_format keeps every bit of a float64 (round-trip exact)
        self.units.write(unit_id, rows, float_format="%.17g")

    def table(self) -> pd.DataFrame:
        """All proven rows, in the experiment's unit order (independent of completion order)."""
        units = self.exp.units()  # named on demand: never the whole list

        def position(unit_id):
            try:
                return units.index(unit_id)
            except ValueError:
                return len(units)

        ids = sorted(self.done(), key=lambda u: (position(u), u))
        if not ids:
            return pd.DataFrame(columns=COLUMNS)
        table = pd.concat([self.units.read(u) for u in ids], ignore_index=True)
        # units written before rows recorded their kernel path were all computed directly
        table["method"] = table["method"].fillna("data") if "method" in table else "data"
        return table[COLUMNS]
