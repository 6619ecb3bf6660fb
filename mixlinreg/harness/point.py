"""One point of a Figure 2 panel, in a notebook: :func:`figure2_point`.

A panel's config (``fig2a`` ... ``fig2d``) fixes the protocol (step sizes, iterations,
initializations, trials, dtype, seed); this module runs that protocol at one grid point (m, n, d,
k, R, sigma), in memory, with no result store. The seed rule is the panel's (each trial's
``SeedSequence(seed, spawn_key=(m, n, d, k, trial))``, :func:`mixlinreg.harness.unit_seeds`), so
the point's runs have the data, starts and step sizes of the full panel's runs at that cell. The
point is a smaller kernel call (one cell, not the panel's C), so ``method="auto"`` may choose
another path than the panel's unit did; every path computes the same iterations up to rounding.
At the smoke preset of ``fig2a`` both take the direct path and agree bit for bit
(``tests/test_point.py`` checks them to 1e-5, the float32 protocol's rounding).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from .._validation import check_float, check_int
from .experiment import load_config
from .run import run_unit
from .success import success_table

__all__ = ["figure2_point", "Figure2Point"]


@dataclasses.dataclass(frozen=True)
class Figure2Point:
    """The outcome of :func:`figure2_point`.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row: the point's values, the number of trials, and for each success rule
        (``authors``, ``text``, ``best_loss``) the successes ``succ_<rule>``, the success
        probability ``p_<rule>`` and its Wilson 95% interval ``lo_<rule>``, ``hi_<rule>``
        (:func:`mixlinreg.harness.success_table`).
    rows : pandas.DataFrame
        One row per trial, initialization and step size (the columns of a result store,
        :data:`mixlinreg.harness.COLUMNS`).
    experiment : Experiment
        The panel's config restricted to the point (what ran).
    """

    summary: pd.DataFrame
    rows: pd.DataFrame
    experiment: object

    def plot(self, rule="authors"):
        """The point as a one-point panel (:func:`mixlinreg.plots.plot_panel`): the success
        probability with its Wilson interval drawn as an error bar."""
        from ..plots import plot_panel

        return plot_panel(self.summary, self.experiment.layout, rule=rule)


def _one(name, value, grid, axis, check):
    """The value of ``axis``: the one given (checked), or the panel's only one."""
    if value is None:
        values = grid[axis]
        if len(values) != 1:
            raise ValueError(f"{name}: the panel's grid has {len(values)} values of {axis} "
                             f"({list(values)}); pass {axis}= one of them or another value")
        return values[0]
    return check(axis, value)


def figure2_point(panel, *, R, sigma, m=None, n=None, d=None, k=None, alpha0=None,
                  preset="paper", trials=None, method="auto", kernel=None):
    """Run one (m, n, d, k, R, sigma) point of a Figure 2 panel with its protocol; no store.

    Parameters
    ----------
    panel : str or path
        ``"fig2a"`` ... ``"fig2d"`` (or a config file of the same kind): the protocol to run.
    R, sigma : float
        The separation scale (> 0) and the noise level (>= 0) of the point.
    m, n, d, k : int, optional
        Machines, rows per machine, dimension, clusters; default the panel's value where its grid
        has only one (``fig2a``: m = n = 100, d = 1000, k = 2), else required.
    alpha0 : float, optional
        The initialization's closeness, for a panel with ``init = "close"`` (required there).
    preset : {"paper", "quick", "smoke"}, default "paper"
        The panel's preset (trials, initializations, iterations).
    trials : int, optional
        Trials of the point (default the preset's); trial t is the panel's trial t.
    method, kernel
        How :func:`mixlinreg.ifca` computes (not part of the result): as there.

    Returns
    -------
    Figure2Point
        ``summary`` (one row with the success probabilities and their Wilson intervals),
        ``rows`` (every run), ``experiment``; ``.plot()`` draws it.

    Examples
    --------
    >>> from mixlinreg.harness import figure2_point
    >>> pt = figure2_point("fig2a", R=1.0, sigma=0.1, m=20, n=20, d=40, preset="quick", trials=4)
    >>> pt.summary[["R", "sigma", "trials", "p_authors"]].to_dict("records")
    [{'R': 1.0, 'sigma': 0.1, 'trials': 4, 'p_authors': 1.0}]
    """
    exp = load_config(panel, preset)
    grid, protocol = dict(exp.grid), dict(exp.protocol)
    pos_int = lambda axis, v: check_int(axis, v, low=1)  # noqa: E731
    point = {axis: _one(f"figure2_point({exp.name!r})", v, grid, axis, pos_int)
             for axis, v in (("m", m), ("n", n), ("d", d), ("k", k))}
    if point["m"] % point["k"]:
        raise ValueError(f"k must divide m (equal clusters), got m={point['m']}, k={point['k']}")
    point["R"] = check_float("R", R, low=0.0, low_open=True)
    point["sigma"] = check_float("sigma", sigma, low=0.0)
    close = protocol.get("init") == "close"
    if close:
        if alpha0 is None:
            raise ValueError(f"alpha0: {exp.name} starts close to the truth (init = 'close'); "
                             "pass alpha0= in [0, 1/2)")
        point["alpha0"] = check_float("alpha0", alpha0, low=0.0, high=0.5, high_open=True)
    elif alpha0 is not None:
        raise ValueError(f"alpha0 is only for panels with init = 'close'; {exp.name} uses "
                         f"init = {protocol.get('init')!r}, got alpha0={alpha0!r}")
    if trials is not None:
        protocol["trials"] = check_int("trials", trials, low=1)
    new_grid = {axis: [value] for axis, value in point.items()}
    one = dataclasses.replace(exp, grid=new_grid, protocol=protocol)
    rows = pd.concat([run_unit(one, unit, method=method, kernel=kernel)[0]
                      for unit in one.units()], ignore_index=True)
    summary = success_table(rows, protocol["success_plus"])
    return Figure2Point(summary=summary, rows=rows, experiment=one)
