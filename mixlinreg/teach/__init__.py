"""Teaching IFCA: figures and animations of alternating minimization in low dimension.

Every picture is drawn from real runs of the package: :func:`mixlinreg.ifca` with ``trace=True``
(assignments, training loss and distances per iteration) and, for the soft variant,
:func:`mixlinreg.baselines.soft_ifca`. No second implementation of the algorithm is used.

Views (each a static multi-panel figure and an animation):

* **lines**: a mixture of regression lines ``y = a + b t`` (design with an intercept column), each
  machine's points coloured by the model it picks, the k fitted lines moving;
* **plane** (d = 2): true parameters, each machine's own least-squares fit coloured by its
  assignment, the models with trails, and the region each model wins;
* **basin**: over a 2-D slice of initializations (model 1's start), which succeed and in how
  many iterations, with Assumption 1's ball for a given ``alpha0``; k = 2 and k = 3;
* **contraction**: resampled IFCA's error against iteration (log scale) with Theorem 1's factor
  1/2 and Corollary 1's floor, and the measured factor next to the theorem's;
* **soft**: hard IFCA against soft IFCA from the same start.

Every caption is written from the facts of its run (:func:`path_facts`, :func:`step_thresholds`,
...), stored with it in ``name.json``; ``mixlinreg.teach.exercises`` holds the lesson's exercise
checks.

``mixlinreg teach [lines|plane|basin|contraction|soft|explorer|all] --out DIR`` writes them (PNG,
GIF and self-contained HTML) with an ``index.html``; :func:`write_views` is the same from Python.

Interactive: ``explorer.html`` (:func:`write_explorer`) is one offline page with sliders over runs
stored in it (:func:`explorer_data`); in a notebook :func:`sliders` (the ``teach`` extra) re-runs
the kernel (:func:`explorer_run`) at every move. Animation pages are made offline by
:func:`offline_jshtml` (buttons drawn inline, nothing loaded from the network).

Examples
--------
>>> import mixlinreg as mlr
>>> from mixlinreg import teach
>>> mix = teach.line_mixture(k=2, m=10, n=20, rng=0)
>>> path = teach.ifca_path(mix, mlr.init_close(mix.theta_star, 0.25, 1, rng=1)[0], 0.5, 10)
>>> fig = teach.lines_figure(mix, path)
>>> float(path.dist[-1]) < float(path.dist[0])
True

References
----------
Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered Federated Learning"
(long version): Algorithm 2, Assumption 1, Theorem 1 and Corollary 1.
"""

from ._runs import (
    THETA_STAR,
    BasinMap,
    Contraction,
    LineMixture,
    Path,
    basin_map,
    contraction_run,
    ifca_path,
    line_mixture,
    soft_path,
)
from ._claims import (
    em_temperature,
    factor_at_quarter_step,
    machines_per_model,
    path_facts,
    step_range_for_half,
    step_thresholds,
)
from ._views import (
    basin_animation,
    basin_figure,
    contraction_animation,
    contraction_figure,
    lines_animation,
    lines_figure,
    local_estimates,
    palette,
    plane_animation,
    plane_figure,
    soft_animation,
    soft_figure,
)
from ._write import (
    PAGES,
    VIEWS,
    build,
    check_out_dir,
    check_views,
    offline_jshtml,
    save_view,
    write_index,
    write_explorer,
    write_views,
)
from ._explorer import explorer_data, explorer_problem, explorer_run
from ._widgets import sliders

__all__ = [
    "THETA_STAR", "BasinMap", "Contraction", "LineMixture", "Path", "basin_map",
    "contraction_run", "ifca_path", "line_mixture", "soft_path",
    "basin_animation", "basin_figure", "contraction_animation", "contraction_figure",
    "lines_animation", "lines_figure", "local_estimates", "palette", "plane_animation",
    "plane_figure", "soft_animation", "soft_figure",
    "VIEWS", "build", "check_out_dir", "check_views", "save_view", "write_index", "write_views",
    "PAGES", "offline_jshtml", "explorer_data", "explorer_problem", "explorer_run",
    "write_explorer", "sliders",
    "em_temperature", "factor_at_quarter_step", "machines_per_model", "path_facts",
    "step_range_for_half", "step_thresholds",
]
