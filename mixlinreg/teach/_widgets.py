"""Notebook sliders (ipywidgets) over the explorer's problem: every move re-runs the kernel.

``ipywidgets`` is optional (``pip install "mixlinreg[teach]"``); :func:`sliders` raises an
ImportError naming that extra when it is missing.
"""

from __future__ import annotations

__all__ = ["sliders"]

#: The temperature slider's values: hard IFCA, EM's temperature, then soft IFCA temperatures.
TEMPERATURES = (("hard (argmin)", "hard"), ("EM: 2 sigma^2/n", "em"), ("0.05", 0.05),
                ("0.1", 0.1), ("0.2", 0.2), ("0.5", 0.5), ("1", 1.0), ("2", 2.0), ("5", 5.0))


def _import_widgets():
    try:
        import ipywidgets
    except ImportError as exc:
        raise ImportError("mixlinreg.teach.sliders needs ipywidgets >= 8: install the 'teach' "
                          "extra (pip install \"mixlinreg[teach]\") or pip install "
                          "\"ipywidgets>=8\"") from exc
    return ipywidgets


def _check_default(name, value, lo, hi):
    from .._validation import check_float

    return check_float(name, value, low=lo, high=hi)


def sliders(separation=2.5, noise=0.5, lr=0.5, alpha0=0.25, temperature="hard", *, m=30, n=15,
            n_iter=30, panels=4, draw=True):
    """Sliders for step size, separation, noise, temperature and alpha0 over one IFCA run.

    Each move of a slider re-runs :func:`mixlinreg.teach.explorer_run` (the kernel
    :func:`mixlinreg.ifca`, or :func:`mixlinreg.baselines.soft_ifca` when the temperature is
    not "hard") with the sliders' values and redraws :func:`mixlinreg.teach.plane_figure` of the
    run, with one line of its numbers (matched distance, machines per model).

    Parameters
    ----------
    separation : float in [0.25, 4], default 2.5
    noise : float in [0.05, 2], default 0.5
    lr : float in [0.05, 3.5], default 0.5
    alpha0 : float in [0.01, 0.5], default 0.25
    temperature : "hard", "em" or one of 0.05, 0.1, 0.2, 0.5, 1, 2, 5; default "hard"
    m, n, n_iter : int
        Machines, points per machine, iterations of every run.
    panels : int, default 4
        Panels of the plane figure.
    draw : bool, default True
        Draw the figure (False: only run; for tests).

    Returns
    -------
    ipywidgets.VBox
        With attributes ``controls`` (name -> slider), ``params`` (the values of the last run),
        ``mix`` and ``path`` (the last run), ``update()`` (re-run with the sliders' values) and
        ``output`` (where the figure is drawn).

    Raises
    ------
    ImportError
        Without ipywidgets (the message names the ``teach`` extra).
    """
    W = _import_widgets()
    ranges = {"separation": (0.25, 4.0, 0.25), "noise": (0.05, 2.0, 0.05),
              "lr": (0.05, 3.5, 0.05), "alpha0": (0.01, 0.5, 0.01)}
    values = {"separation": separation, "noise": noise, "lr": lr, "alpha0": alpha0}
    controls = {}
    for name, (lo, hi, step) in ranges.items():
        v = _check_default(name, values[name], lo, hi)
        controls[name] = W.FloatSlider(value=v, min=lo, max=hi, step=step, description=name,
                                       continuous_update=False, readout_format=".2f")
    allowed = [v for _, v in TEMPERATURES]
    if temperature not in allowed:
        raise ValueError(f"temperature must be one of {allowed}, got {temperature!r}")
    controls["temperature"] = W.SelectionSlider(options=list(TEMPERATURES), value=temperature,
                                                description="temperature",
                                                continuous_update=False)
    box = W.VBox()
    box.controls = controls
    box.output = W.Output()
    box.summary = W.HTML()
    box.params = box.mix = box.path = None
    settings = dict(m=m, n=n, n_iter=n_iter)

    def update(change=None):
        _rerun(box, settings, panels, draw)

    box.update = update
    for c in controls.values():
        c.observe(update, names="value")
    box.children = [W.HBox([controls["separation"], controls["noise"], controls["lr"]]),
                    W.HBox([controls["temperature"], controls["alpha0"]]), box.summary,
                    box.output]
    update()
    return box


def _rerun(box, settings, panels, draw):
    """Run the kernel with the sliders' values, store the run on ``box`` and redraw."""
    from ._claims import machines_per_model
    from ._explorer import explorer_run

    params = {name: c.value for name, c in box.controls.items()}
    mix, path = explorer_run(**params, **settings)
    box.params, box.mix, box.path = params, mix, path
    counts = machines_per_model(path.labels[-1:], mix.k)[0].tolist()
    kind = "hard IFCA" if path.weights is None else "soft IFCA"
    box.summary.value = (f"{kind}: matched distance {path.dist[0]:.3f} -> {path.dist[-1]:.3f} in "
                         f"{len(path.dist) - 1} iterations; machines per model at the end "
                         f"{counts}{' (diverged)' if path.diverged else ''}")
    if not draw:
        return
    from IPython.display import display

    from ..plots import _theme
    from ._views import plane_figure

    with _theme():
        fig = plane_figure(mix, path, panels=panels)
    box.output.clear_output(wait=True)
    with box.output:
        display(fig)
