"""Experiment harness: configs, the unit of work, the resumable store, parallel sweeps, success rules."""

from .experiment import Experiment, Unit, load_config, resolve_config_path
from .run import COLUMNS, run_unit, unit_seeds
from ..runner.store import DamagedUnitWarning, UnitStore
from .store import ResultStore
from .success import RULES, success_table, trial_success
from .sweep import format_summary, run_experiment
from .point import Figure2Point, figure2_point

__all__ = [
    "Experiment", "Unit", "load_config", "resolve_config_path", "COLUMNS", "run_unit", "unit_seeds",
    "ResultStore", "UnitStore", "DamagedUnitWarning", "RULES", "success_table", "trial_success",
    "format_summary",
    "run_experiment", "figure2_point", "Figure2Point",
]
