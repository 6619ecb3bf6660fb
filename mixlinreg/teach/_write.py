"""Write the teaching views (PNG, GIF, self-contained HTML) and an ``index.html`` showing them."""

from __future__ import annotations

import html
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path as FsPath

import numpy as np

from .._paths import atomic_write

VIEWS = ("lines", "plane", "basin", "contraction", "soft")

GIF_DPI = 80
PNG_DPI = 100


@dataclass(frozen=True)
class Settings:
    """Problem sizes of the views (``full`` for the committed figures, ``smoke`` for tests)."""

    m: int = 30
    n: int = 15
    sigma: float = 0.5
    n_iter: int = 20
    basin_grid: int = 41
    basin_iter: int = 30
    soft_iter: int = 60
    contraction: tuple = (("m", 200), ("n_prime", 25), ("d", 10), ("n_iter", 12), ("n_runs", 4))
    max_frames: int = 24


FULL = Settings()
SMOKE = Settings(m=9, n=8, n_iter=3, basin_grid=6, basin_iter=4, soft_iter=3,
                 contraction=(("m", 40), ("n_prime", 10), ("d", 4), ("n_iter", 5), ("n_runs", 2)),
                 max_frames=2)


def check_views(names):
    """Expand ``"all"`` and validate view names (one-line ValueError naming the bad one)."""
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise ValueError(f"views must name at least one of {list(VIEWS)} or 'all'")
    out = []
    for v in names:
        if v == "all":
            out.extend(VIEWS)
        elif v in VIEWS:
            out.append(v)
        else:
            raise ValueError(f"unknown view {v!r}: choose from {list(VIEWS)} or 'all'")
    return list(dict.fromkeys(out))


def check_out_dir(out):
    """Create ``out`` if needed and make sure a file can be written there, before any work.

    Raises
    ------
    ValueError
        If ``out`` exists and is not a folder, cannot be created, or is not writable.
    """
    if not isinstance(out, (str, os.PathLike)) or str(out) == "":
        raise ValueError(f"out must be a folder path, got {out!r}")
    out = FsPath(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a folder, but {str(out)!r} is a file")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"out folder {str(out)!r} is not writable: {exc.strerror or exc}") from None
    return out


def _lines_problem(s, rng=0):
    from ._runs import ifca_path, line_mixture

    mix = line_mixture(k=3, m=s.m, n=s.n, sigma=s.sigma, rng=rng)
    # a random start (seed 8 of N(0, I) starts: chosen because machines visibly switch models)
    init = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))
    return mix, ifca_path(mix, init, 0.5, s.n_iter)


def _collapse_start(mix):
    """Two models near line 1, one between lines 2 and 3: line 2 has no model near it."""
    st = mix.theta_star
    return np.array([st[0] + [0.3, 0.2], st[0] + [-0.2, -0.4], st[2] + [0.5, 0.5]])


def build(view, settings=FULL):
    """Compute one view: returns ``(figure, animation, caption, summary)``."""
    builders = {"lines": _build_lines_plane, "plane": _build_lines_plane, "basin": _build_basin,
                "contraction": _build_contraction, "soft": _build_soft}
    if view not in builders:
        raise ValueError(f"unknown view {view!r}: choose from {list(VIEWS)}")
    return builders[view](view, settings)


def _build_lines_plane(view, s):
    from . import _views as V

    mix, path = _lines_problem(s)
    from ..metrics import cluster_accuracy

    ok = float(cluster_accuracy(mix.labels, path.labels[-1]))
    if view == "lines":
        cap = (f"IFCA on m = {mix.X.shape[0]} machines with n = {mix.X.shape[1]} points each, "
               f"drawn from k = 3 regression lines y = a + b t (dashed; noise sigma = "
               f"{mix.sigma:g}). Every iteration each machine picks the line with the lowest "
               "squared error on its own points (its points take that line's colour), then "
               f"each line takes a gradient step on the machines that picked it (step "
               f"{path.lr:g}, divisor m). From a random start (drawn from N(0, I); this seed was "
               "picked because one model first grabs most machines and then loses them) the "
               f"lines reach their truths; training loss {path.loss[0]:.3f} -> "
               f"{path.loss[-1]:.3f}, {ok:.0%} of machines in their true cluster at the end.")
        return (V.lines_figure(mix, path), V.lines_animation(mix, path, s.max_frames), cap,
                f"lines: loss {path.loss[0]:.3f} -> {path.loss[-1]:.3f} in {len(path.loss) - 1}"
                f" iterations, {ok:.0%} of machines correctly clustered")
    cap = ("The same run in the plane of parameters (a, b). Small markers: each machine's own "
           "least-squares fit, coloured by the model it picks; large markers: the models, with "
           "their trails; black stars: the truths; shading: where each model has the lowest "
           "population loss, i.e. which model a machine whose parameter lies there would pick "
           "(the pooled design metric; a machine's own sample can differ near the borders). A "
           "model moves toward the average of the machines it wins, so a model that wins no "
           f"machine does not move. Matched distance {path.dist[0]:.3f} -> {path.dist[-1]:.3f}.")
    return (V.plane_figure(mix, path), V.plane_animation(mix, path, s.max_frames), cap,
            f"plane: matched distance {path.dist[0]:.3f} -> {path.dist[-1]:.3f}")


def _build_basin(view, s):
    from . import _runs as R
    from . import _views as V

    mixes, maps = [], []
    for k in (2, 3):
        mix = R.line_mixture(k=k, m=s.m - s.m % 6 or 6, n=s.n, sigma=s.sigma, rng=k)
        mixes.append(mix)
        maps.append(R.basin_map(mix, 0.5, s.basin_iter, alpha0=0.25, grid=s.basin_grid,
                                rng=10 + k))
    inside = [_pct(bm.success[_in_ball(bm, mx)]) for bm, mx in zip(maps, mixes)]
    cap = ("Which starts work. Model 1 starts anywhere on the map; the other models start "
           "where init_close puts them for alpha0 = 0.25 (on the boundary of their Assumption 1 "
           "balls). Colour: iterations until the matched distance stays within 0.6 sigma; "
           "grey: the run fails (models collapse onto one line, or one model wins no machine "
           "and never moves). Dashed circle: Assumption 1's ball of radius (1/2 - alpha0) "
           f"Delta around model 1's truth; inside it {inside[0]} (k = 2) and "
           f"{inside[1]} (k = 3) of the grid's starts succeed, overall "
           f"{maps[0].success.mean():.0%} and {maps[1].success.mean():.0%}.")
    return (V.basin_figure(mixes, maps), V.basin_animation(mixes, maps, s.max_frames), cap,
            f"basin: success overall {maps[0].success.mean():.0%} (k = 2), "
            f"{maps[1].success.mean():.0%} (k = 3); inside the alpha0 = 0.25 ball "
            f"{inside[0]} and {inside[1]}")


def _build_contraction(view, s):
    from . import _runs as R
    from . import _views as V

    c = R.contraction_run(**dict(s.contraction))
    cap = ("Theorem 1 analyses resampled IFCA: fresh points every iteration, step gamma = "
           "1/(4p) so that gamma p = 1/4. The error of each model then halves every "
           "iteration (dashed line) until it meets a floor set by the noise. Measured here: "
           f"factor {c.factor.est:.3f} per iteration [95% interval {c.factor.lo:.3f}, "
           f"{c.factor.hi:.3f}] against the theorem's {c.factor_theorem:g} (the exact "
           f"finite-sample factor for these sizes is {c.factor_exact:.3f}). Dotted: the floor "
           "predicted for correctly clustered steps; dash-dot: Corollary 1's floor "
           "(sigma/p) sqrt(d/(m n')) with its unknown constant set to 1 (its shape, not a value "
           "from the paper). paper_checks.md (T1, C1) measures both at scale.")
    return (V.contraction_figure(c), V.contraction_animation(c, s.max_frames), cap,
            c.summary())


def _build_soft(view, s):
    from . import _runs as R
    from . import _views as V

    from ..baselines import soft_ifca  # noqa: F401  (soft IFCA comes from the baselines)

    mix = R.line_mixture(k=3, m=s.m, n=s.n, sigma=s.sigma, rng=0)
    init = _collapse_start(mix)
    paths = [R.ifca_path(mix, init, 0.5, s.soft_iter),
             R.soft_path(mix, init, 0.5, s.soft_iter, temperature=2.0),
             R.soft_path(mix, init, 0.5, s.soft_iter, temperature=5.0)]
    names = ["hard IFCA (argmin)", "soft IFCA, temperature 2", "soft IFCA, temperature 5"]
    d = [p.dist[-1] for p in paths]
    cap = ("Hard against soft assignments from one bad start: two models near line 1, none "
           "near line 2. Hard IFCA gives each machine to one model; the second model near line "
           "1 wins no machine, never moves, and the run stays stuck (final matched distance "
           f"{d[0]:.3f}). Soft IFCA (softmax weights exp(-F/temperature), the authors' 'em' "
           f"option) lets every model feel every machine: at temperature 2 the models separate "
           f"and find the three lines (final {d[1]:.3f}, slightly biased by the soft weights); "
           f"at temperature 5 all models are pulled to the single global fit ({d[2]:.3f}).")
    return (V.soft_figure(mix, paths, names), V.soft_animation(mix, paths, names,
                                                               s.max_frames), cap,
            "soft: final matched distance " + ", ".join(f"{n} {v:.3f}"
                                                        for n, v in zip(names, d)))


def _pct(values):
    return f"{np.mean(values):.0%}" if np.size(values) else "none (no grid point there)"


def _in_ball(bm, mix):
    A, B = np.meshgrid(bm.a, bm.b)
    return np.hypot(A - mix.theta_star[0, 0], B - mix.theta_star[0, 1]) <= bm.radius


def save_view(name, fig, anim, out, *, html_animation=True, fps=2, scale=1.0):
    """Save ``name.png``, ``name.gif`` and (optionally) ``name.html`` under ``out``.

    ``scale`` multiplies the resolutions (``PNG_DPI``, ``GIF_DPI``); the smoke setting uses 0.5.
    """
    from matplotlib.animation import PillowWriter

    out = FsPath(out)
    paths = []
    png = out / f"{name}.png"
    fig.savefig(png, dpi=PNG_DPI * scale)
    paths.append(png)
    gif = out / f"{name}.gif"
    tmp = out / f".{name}.tmp.gif"
    anim.save(tmp, writer=PillowWriter(fps=fps), dpi=GIF_DPI * scale)
    os.replace(tmp, gif)
    paths.append(gif)
    if html_animation:
        page = out / f"{name}.html"
        anim._fig.set_dpi(GIF_DPI * scale)
        body = anim.to_jshtml(fps=fps, default_mode="once")
        atomic_write(page, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>"
                      f"mixlinreg teach: {name}</title></head><body>\n{body}\n</body></html>\n")
        paths.append(page)
    return paths


def _write_record(out, name, caption, summary, files):
    """``name.json``: the caption, the one-line summary and the files of one view (for the index)."""
    rec = {"view": name, "caption": caption, "summary": summary,
           "files": [FsPath(f).name for f in files]}
    atomic_write(FsPath(out) / f"{name}.json", json.dumps(rec, indent=1) + "\n")


def write_index(out):
    """``index.html``: every view present in ``out`` (its ``.json`` record), in ``VIEWS`` order,
    with its animation (GIF), static figure and caption; views written by earlier calls stay."""
    out = FsPath(out)
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             "<title>mixlinreg: teaching IFCA</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
             "img{max-width:100%;margin:0.5em 0}section{margin-bottom:2.5em}</style>",
             "</head><body>", "<h1>Iterative Federated Clustering, in pictures</h1>",
             "<p>Every picture is drawn from real runs of <code>mixlinreg.ifca</code> "
             "(soft IFCA: <code>mixlinreg.baselines.soft_ifca</code>); made by "
             "<code>mixlinreg teach</code>.</p>"]
    for name in VIEWS:
        rec_path = out / f"{name}.json"
        if not rec_path.is_file():
            continue
        rec = json.loads(rec_path.read_text())
        present = {FsPath(f).suffix: f for f in rec["files"] if (out / f).is_file()}
        parts.append(f"<section id='{name}'><h2>{html.escape(name)}</h2>")
        parts.append(f"<p>{html.escape(rec['caption'])}</p>")
        if ".gif" in present:
            parts.append(f"<img src='{present['.gif']}' alt='{name} animation'>")
        if ".png" in present:
            parts.append(f"<img src='{present['.png']}' alt='{name} figure'>")
        if ".html" in present:
            parts.append(f"<p><a href='{present['.html']}'>step through the animation</a></p>")
        parts.append("</section>")
    parts.append("</body></html>\n")
    path = out / "index.html"
    atomic_write(path, "\n".join(parts))
    return path


def write_views(views="all", out="figures/teach", *, smoke=False, html_animation=True,
                progress=print):
    """Compute the views and write them, with ``index.html``, under ``out``.

    Parameters
    ----------
    views : str or sequence of str
        Names from ``VIEWS`` or ``"all"``.
    out : str or os.PathLike
        Output folder; created if missing and checked writable before anything is computed.
    smoke : bool, default False
        Tiny problems and few frames (seconds; for tests).
    html_animation : bool, default True
        Also write each animation as self-contained HTML (``to_jshtml``).
    progress : callable or None
        Called with one line per view.

    Returns
    -------
    dict
        ``{view: {"files": [...], "summary": str, "caption": str}}`` plus ``"index"``. Each view
        also gets ``name.json`` (caption and summary); ``index.html`` shows every view recorded
        in ``out``, so views can be (re)made one at a time.
    """
    from ..plots import _theme

    views = check_views(views)
    out = check_out_dir(out)
    settings = SMOKE if smoke else FULL
    result = {}
    for v in views:
        t0 = time.perf_counter()
        with _theme():
            fig, anim, caption, summary = build(v, settings)
            files = save_view(v, fig, anim, out, html_animation=html_animation,
                              scale=0.5 if smoke else 1.0)
        _write_record(out, v, caption, summary, files)
        result[v] = {"files": files, "summary": summary, "caption": caption}
        if progress is not None:
            progress(f"[{v}] {summary} ({time.perf_counter() - t0:.1f} s)")
    result["index"] = write_index(out)
    return result
