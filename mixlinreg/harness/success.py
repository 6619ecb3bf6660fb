"""Success probability per grid point, three ways, with Wilson 95% intervals.

For one trial (one draw of the theta*'s) of one grid cell, the runs are its initializations x step
sizes. The trial succeeds

* ``authors``: if some run has ``dist_nearest < 0.6 sigma + success_plus`` (the authors' public
  code: distance of each model to the NEAREST true parameter, strict ``<``, ``+0.001`` in the R-sigma
  panels and ``+0`` in the m-n panels). This is the rule behind the paper's published curves.
* ``text``: if some run has ``dist_matched <= 0.6 sigma`` (the paper's text: one-to-one matched
  distance, no slack). Stricter: two models on the same true parameter do not count.
* ``best_loss``: if the run with the lowest final training loss among the runs that did not
  diverge (the one a practitioner without ground truth would keep) has ``dist_matched <= 0.6 sigma``.

Diverged runs (NaN distances) never succeed, as in the authors' code, which skips them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import success_authors, success_text
from ..stats import wilson_interval

RULES = ("authors", "text", "best_loss")
CELL_KEYS = ["m", "n", "d", "k", "R", "sigma", "alpha0"]


def trial_success(rows: pd.DataFrame, success_plus: float) -> pd.DataFrame:
    """One row per (cell, trial) with a boolean column per rule."""
    df = rows.copy()
    df["alpha0"] = df["alpha0"].fillna(-1.0)  # NaN keys would be dropped by groupby
    df["ok_authors"] = success_authors(df["dist_nearest"].to_numpy(), df["sigma"].to_numpy(),
                                       plus=success_plus)
    df["ok_text"] = success_text(df["dist_matched"].to_numpy(), df["sigma"].to_numpy())
    usable = ~df["diverged"].astype(bool) & np.isfinite(df["loss"])
    # best-loss run per (cell, trial): lowest loss among usable runs, ties to the first run
    df["_loss_key"] = np.where(usable, df["loss"], np.inf)
    keys = CELL_KEYS + ["trial"]
    df["_order"] = np.arange(len(df))
    best_idx = df.sort_values(keys + ["_loss_key", "_order"]).groupby(keys, sort=False).head(1)
    best_ok = best_idx.set_index(keys)["ok_text"] & np.isfinite(best_idx.set_index(keys)["_loss_key"])
    out = df.groupby(keys).agg(authors=("ok_authors", "any"), text=("ok_text", "any")).join(
        best_ok.rename("best_loss"))
    out = out.reset_index()
    out["alpha0"] = out["alpha0"].replace(-1.0, np.nan)
    return out


def success_table(rows: pd.DataFrame, success_plus: float, confidence=0.95) -> pd.DataFrame:
    """Per grid cell: number of trials, and for each rule the success probability and interval."""
    per_trial = trial_success(rows, success_plus)
    per_trial["alpha0"] = per_trial["alpha0"].fillna(-1.0)
    g = per_trial.groupby(CELL_KEYS)
    out = g.agg(trials=("trial", "nunique"), **{f"succ_{r}": (r, "sum") for r in RULES}).reset_index()
    for r in RULES:
        lo, hi = wilson_interval(out[f"succ_{r}"], out["trials"], confidence)
        out[f"p_{r}"] = out[f"succ_{r}"] / out["trials"]
        out[f"lo_{r}"] = lo
        out[f"hi_{r}"] = hi
    out["alpha0"] = out["alpha0"].replace(-1.0, np.nan)
    return out
