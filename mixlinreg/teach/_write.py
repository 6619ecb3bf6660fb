"""Write the teaching views (PNG, GIF, self-contained HTML) and an ``index.html`` showing them."""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path as FsPath

import numpy as np

from .._paths import atomic_write
from ._claims import counts_phrase, join_words

VIEWS = ("lines", "plane", "basin", "contraction", "soft")
#: Pages that are not a figure view: the slider explorer (``explorer.html``); "all" includes them.
PAGES = ("explorer",)

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
    """Expand ``"all"`` (``VIEWS`` and ``PAGES``) and validate view names (one-line ValueError
    naming the bad one)."""
    if isinstance(names, str):
        names = [names]
    names = list(names)
    known = list(VIEWS) + list(PAGES)
    if not names:
        raise ValueError(f"views must name at least one of {known} or 'all'")
    out = []
    for v in names:
        if v == "all":
            out.extend(known)
        elif v in known:
            out.append(v)
        else:
            raise ValueError(f"unknown view {v!r}: choose from {known} or 'all'")
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
    """Compute one view: returns ``(figure, animation, caption, summary, facts)``.

    ``facts`` (plain JSON types, :mod:`mixlinreg.teach._claims`) are the numbers the caption is
    written from; :func:`write_views` stores them in ``name.json`` next to the caption.
    """
    builders = {"lines": _build_lines_plane, "plane": _build_lines_plane, "basin": _build_basin,
                "contraction": _build_contraction, "soft": _build_soft}
    if view not in builders:
        raise ValueError(f"unknown view {view!r}: choose from {list(VIEWS)}")
    return builders[view](view, settings)


def _build_lines_plane(view, s):
    from . import _views as V
    from ..metrics import cluster_accuracy
    from ._claims import path_facts

    mix, path = _lines_problem(s)
    f = path_facts(path, mix)
    f["accuracy_end"] = float(cluster_accuracy(mix.labels, path.labels[-1]))
    f["lr"] = path.lr
    ok, lead = f["accuracy_end"], f["leader_start"] - 1
    if view == "lines":
        cap = (f"IFCA on m = {mix.X.shape[0]} machines with n = {mix.X.shape[1]} points each, "
               f"drawn from k = 3 regression lines y = a + b t (dashed; noise sigma = "
               f"{mix.sigma:g}). Every iteration each machine picks the line with the lowest "
               "squared error on its own points (its points take that line's colour: colour is "
               "the model a machine picks, not its true line), then each line takes a gradient "
               f"step on the machines that picked it (step {path.lr:g}, divisor m). From a "
               "random start (drawn from N(0, I), seed 8, picked because one model first grabs "
               f"most machines and then gives them up): model {lead + 1} wins "
               f"{f['counts_start'][lead]} of the {f['m']} machines at the first assignment and "
               f"{f['counts_end'][lead]} at the end; training loss {path.loss[0]:.3f} -> "
               f"{path.loss[-1]:.3f}, {ok:.0%} of machines in their true cluster at the end.")
        return (V.lines_figure(mix, path), V.lines_animation(mix, path, s.max_frames), cap,
                f"lines: loss {path.loss[0]:.3f} -> {path.loss[-1]:.3f} in {len(path.loss) - 1}"
                f" iterations, {ok:.0%} of machines correctly clustered", f)
    cap = ("The same run in the plane of parameters (a, b). Small markers: each machine's own "
           "least-squares fit, coloured by the model it picks; large markers: the models "
           "(hollow: where they start; filled: where they are), with their trails; black stars: "
           "the truths; shading: where each model has the lowest population loss, i.e. which "
           "model a machine whose parameter lies there would pick (the pooled design metric; a "
           "machine's own sample can differ near the borders). Each iteration model j moves "
           "by 2 lr (m_j/m) H_j times its offset from the least-squares fit pooled over the m_j "
           "machines that pick it (H_j: their design covariance, close to I here), so it "
           f"covers about a fraction 2 lr m_j/m of the way (lr = {path.lr:g}) and a model that "
           "wins no machine does not move. Matched distance "
           f"{path.dist[0]:.3f} -> {path.dist[-1]:.3f}.")
    return (V.plane_figure(mix, path), V.plane_animation(mix, path, s.max_frames), cap,
            f"plane: matched distance {path.dist[0]:.3f} -> {path.dist[-1]:.3f}", f)


def _failure_kinds(bm):
    fail = ~bm.success
    nf = int(fail.sum())
    return {"success": float(bm.success.mean()), "n_fail": nf,
            "fail_idle": float(bm.idle[fail].mean()) if nf else 0.0,
            "fail_merged": float(bm.merged[fail].mean()) if nf else 0.0,
            "fail_neither": float((~bm.idle & ~bm.merged)[fail].mean()) if nf else 0.0}


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
    facts = {f"k{mx.k}": dict(_failure_kinds(bm), inside_ball=inside[i])
             for i, (mx, bm) in enumerate(zip(mixes, maps))}
    kinds = "; ".join(
        f"k = {mx.k}: of the failed starts, {facts[f'k{mx.k}']['fail_idle']:.0%} leave model 1 "
        f"without a machine in every iteration (so it never moves) and "
        f"{facts[f'k{mx.k}']['fail_merged']:.0%} end with one model holding the machines of "
        "two lines" for mx in mixes)
    cap = ("Which starts work. Model 1 starts anywhere on the map; the other models start "
           "where init_close puts them for alpha0 = 0.25 (on the boundary of their Assumption 1 "
           "balls; markers: their starts). Colour: iterations until the matched distance stays "
           f"within 0.6 sigma; grey: the run fails ({kinds}). Dashed circle: Assumption 1's "
           "ball of radius (1/2 - alpha0) Delta around model 1's truth (equal axes, so balls "
           f"are round); inside it {inside[0]} (k = 2) and {inside[1]} (k = 3) of the grid's "
           f"starts succeed, overall {maps[0].success.mean():.0%} and "
           f"{maps[1].success.mean():.0%}. These are plain IFCA runs (all data every "
           "iteration, step 0.5), outside Theorem 1's hypotheses (resampling, step c1/p): the "
           "ball is a reference here, not a guarantee.")
    return (V.basin_figure(mixes, maps), V.basin_animation(mixes, maps, s.max_frames), cap,
            f"basin: success overall {maps[0].success.mean():.0%} (k = 2), "
            f"{maps[1].success.mean():.0%} (k = 3); inside the alpha0 = 0.25 ball "
            f"{inside[0]} and {inside[1]}", facts)


def _build_contraction(view, s):
    from . import _runs as R
    from . import _views as V
    from ._claims import factor_at_quarter_step

    c = R.contraction_run(**dict(s.contraction))
    big = factor_at_quarter_step(0.3, 0.7)[1]
    facts = {"factor": c.factor.est, "lo": c.factor.lo, "hi": c.factor.hi,
             "factor_exact": c.factor_exact, "p": c.settings["p"], "lr": c.settings["lr"],
             "factor_large_at_0.3_0.7": big}
    cap = ("Theorem 1 analyses resampled IFCA (fresh points every iteration) with step "
           "gamma = c1/p, p the smallest cluster's fraction and c1 a constant the paper does not "
           f"give. This run has two equal clusters (p = {c.settings['p']:g}) and gamma = 1/(4p), "
           "the choice that makes the population factor |1 - 2 gamma p| exactly 1/2: with equal "
           "sizes the error of each model halves every iteration (dashed line) until it meets a "
           f"floor set by the noise. Measured here: factor {c.factor.est:.3f} per iteration "
           f"[95% interval {c.factor.lo:.3f}, {c.factor.hi:.3f}] against "
           f"{c.factor_theorem:g} (the exact finite-sample factor for these sizes is "
           f"{c.factor_exact:.3f}). With unequal sizes the same step gives the large cluster "
           f"|1 - p_max/(2p)| ({big:.2f} at 0.3/0.7), and once p_max > 3p no single step gets "
           "both clusters to 1/2: paper_checks.md rates T1 not supported as stated (equal sizes: "
           "holds). Dotted: the floor predicted for correctly clustered steps; dash-dot: "
           "Corollary 1's floor (sigma/p) sqrt(d/(m n')) with its unknown constant set to 1 (its "
           "shape, not a value from the paper).")
    return (V.contraction_figure(c), V.contraction_animation(c, s.max_frames), cap,
            c.summary(), facts)


def _soft_sentences(f):
    """The hard run's story, from its facts: who shares a line, who holds two."""
    out = []
    for line in range(1, len(f["counts_end"]) + 1):
        sharing = [j for j, ls in enumerate(f["lines_end"]) if ls == [line]]
        if len(sharing) >= 2:
            parts = [f"model {j + 1} {counts_phrase(f, j)} and moves {f['moved'][j]:.2f}"
                     for j in sharing]
            out.append(f"models {join_words([j + 1 for j in sharing])} share line {line}'s "
                       f"machines ({'; '.join(parts)})")
    for j, ls in enumerate(f["lines_end"]):
        if len(ls) >= 2:
            where = "sits between them" if f["between"][j] else "ends"
            a, b = f["end"][j]
            out.append(f"model {j + 1} takes the machines of lines {join_words(ls)} and {where} "
                       f"at ({a:.2f}, {b:.2f})")
    unfound = f["lines_unfound"]
    if unfound:
        one = len(unfound) == 1
        out.append(f"line{'' if one else 's'} {join_words(unfound)} never get{'s' if one else ''} "
                   f"a model of {'its' if one else 'their'} own")
    return out


def _soft_extra(mix, paths):
    """Reference points for the soft runs' sentences: the oracle's distance (clusters known) and
    how far each model of the hottest run ends from the single global least-squares fit."""
    from ..baselines import oracle
    from ..metrics import dist_matched

    orc = oracle(mix.X, mix.y, mix.labels).theta
    m, n, d = mix.X.shape
    glob = np.linalg.lstsq(mix.X.reshape(m * n, d), mix.y.reshape(m * n), rcond=None)[0]
    return {"oracle_dist": round(float(dist_matched(orc, mix.theta_star)), 4),
            "soft5_from_global": round(float(np.linalg.norm(paths[2].theta[-1] - glob,
                                                            axis=1).max()), 4)}


def _build_soft(view, s):
    from . import _runs as R
    from . import _views as V
    from ._claims import em_temperature, path_facts

    mix = R.line_mixture(k=3, m=s.m, n=s.n, sigma=s.sigma, rng=0)
    init = _collapse_start(mix)
    t_em = em_temperature(mix.sigma, mix.X.shape[1])
    paths = [R.ifca_path(mix, init, 0.5, s.soft_iter),
             R.soft_path(mix, init, 0.5, s.soft_iter, temperature=2.0),
             R.soft_path(mix, init, 0.5, s.soft_iter, temperature=5.0)]
    em = R.soft_path(mix, init, 0.5, s.soft_iter, temperature=t_em)
    names = ["hard IFCA (argmin)", "soft IFCA, temperature 2", "soft IFCA, temperature 5"]
    facts = {"hard": path_facts(paths[0], mix), "soft2": path_facts(paths[1], mix),
             "soft5": path_facts(paths[2], mix), "soft_em": path_facts(em, mix),
             "t_em": t_em, **_soft_extra(mix, paths)}
    d = [p.dist[-1] for p in paths]
    story = "; ".join(_soft_sentences(facts["hard"]))
    own = [ls for ls in facts["soft2"]["lines_end"] if len(ls) == 1]
    sep = (f"the models separate, each holding the machines of one line ({len(own)} of "
           f"{mix.k} lines found;" if len({tuple(x) for x in own}) == len(own) == mix.k else
           f"the models end holding the lines {facts['soft2']['lines_end']} (")
    cap = ("Hard against soft assignments from one bad start: two models near line 1, none "
           f"near line 2 (open markers: the start). Hard IFCA gives each machine to one model: "
           f"{story} (final matched distance {d[0]:.3f}). Soft IFCA weighs machine i's pull on "
           "model j by exp(-F_i(theta_j)/temperature), normalized over the models, so every "
           f"model feels every machine: at temperature 2 {sep} final {d[1]:.3f}, against "
           f"{facts['oracle_dist']:.3f} for the oracle that knows the clusters: the soft weights "
           f"bias the models); at temperature 5 all of them end within "
           f"{facts['soft5_from_global']:.2g} of the single global least-squares fit (final "
           f"{d[2]:.3f}). Neither is EM: for Gaussian "
           f"noise with equal cluster weights EM's E-step is this softmax at temperature "
           f"2 sigma^2/n = {t_em:.3f}, and at that temperature the run stays stuck like hard "
           f"IFCA (final {facts['soft_em']['dist_end']:.3f}); temperatures 2 and 5, "
           f"{2 / t_em:.0f} and {5 / t_em:.0f} times EM's, are a smoothing knob.")
    return (V.soft_figure(mix, paths, names), V.soft_animation(mix, paths, names,
                                                               s.max_frames), cap,
            "soft: final matched distance " + ", ".join(f"{n} {v:.3f}"
                                                        for n, v in zip(names, d)), facts)


def _pct(values):
    return f"{np.mean(values):.0%}" if np.size(values) else "none (no grid point there)"


def _in_ball(bm, mix):
    A, B = np.meshgrid(bm.a, bm.b)
    return np.hypot(A - mix.theta_star[0, 0], B - mix.theta_star[0, 1]) <= bm.radius


#: Inline SVG (16 x 16, ``currentColor``) for the Font Awesome icons of matplotlib's
#: ``to_jshtml`` buttons, which otherwise load a stylesheet from a CDN (blank buttons offline).
_ICONS = {
    "minus": "<rect x='2' y='7' width='12' height='2'/>",
    "plus": "<rect x='2' y='7' width='12' height='2'/><rect x='7' y='2' width='2' height='12'/>",
    "play": "<polygon points='4,2 14,8 4,14'/>",
    "pause": "<rect x='3' y='2' width='4' height='12'/><rect x='9' y='2' width='4' height='12'/>",
    "step-forward": "<polygon points='3,2 11,8 3,14'/><rect x='11' y='2' width='2' height='12'/>",
    "step-backward": "<rect x='3' y='2' width='2' height='12'/><polygon points='13,2 5,8 13,14'/>",
    "fast-forward": "<polygon points='1,2 7,8 1,14'/><polygon points='7,2 13,8 7,14'/>"
                    "<rect x='13' y='2' width='2' height='12'/>",
    "fast-backward": "<rect x='1' y='2' width='2' height='12'/><polygon points='9,2 3,8 9,14'/>"
                     "<polygon points='15,2 9,8 15,14'/>",
}
_REMOTE = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//"""
                     r"""|url\(\s*["']?\s*(?:https?:)?//|@import""", re.IGNORECASE)


def _icon(match):
    names = [c[3:] for c in match.group(1).split() if c.startswith("fa-")]
    flip = "flip-horizontal" in names
    names = [c for c in names if c != "flip-horizontal"]
    body = _ICONS.get(names[0]) if names else None
    if body is None:  # an icon this table does not know: its name, as text
        return f"<span class='anim-icon'>{html.escape(' '.join(names) or 'button')}</span>"
    if flip:
        body = f"<g transform='matrix(-1 0 0 1 16 0)'>{body}</g>"
    return (f"<svg class='anim-icon' viewBox='0 0 16 16' width='14' height='14' "
            f"fill='currentColor' aria-hidden='true'>{body}</svg>")


def offline_jshtml(page):
    """Make ``anim.to_jshtml()`` output self-contained: drop its remote stylesheet (Font Awesome
    from a CDN) and draw the buttons' icons as inline SVG.

    Raises
    ------
    RuntimeError
        If a remote resource (``src``/``href``/``url()`` to ``http(s)://`` or ``//``, or
        ``@import``) is left after the rewrite.
    """
    page = re.sub(r"<link\b[^>]*?href\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>", "", page,
                  flags=re.IGNORECASE | re.DOTALL)
    page = re.sub(r"<i\s+class\s*=\s*[\"']((?:fa\b)[^\"']*)[\"']\s*>\s*</i>", _icon, page)
    left = _REMOTE.search(page)
    if left:
        raise RuntimeError("the animation page still loads a remote resource near "
                           f"{page[max(0, left.start() - 60):left.end() + 60]!r}")
    style = ("<style>.anim-buttons button{min-width:2.2em;min-height:1.9em}"
             ".anim-icon{vertical-align:middle}</style>")
    return style + page


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
        body = offline_jshtml(anim.to_jshtml(fps=fps, default_mode="once"))
        atomic_write(page, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>"
                      f"mixlinreg teach: {name}</title></head><body>\n{body}\n</body></html>\n")
        paths.append(page)
    return paths


def _write_record(out, name, caption, summary, files, facts=None):
    """``name.json``: the caption, the one-line summary, the facts the caption is written from
    and the files of one view (for the index and the tests)."""
    rec = {"view": name, "caption": caption, "summary": summary, "facts": facts,
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
    parts.extend(_explorer_link(out))
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


def _explorer_link(out):
    """The index's paragraph linking the slider explorer, if ``out`` has it."""
    rec_path = out / "explorer.json"
    if not (rec_path.is_file() and (out / "explorer.html").is_file()):
        return []
    rec = json.loads(rec_path.read_text())
    return ["<section id='explorer'><h2>explorer</h2><p><a href='explorer.html'><b>Explore the "
            "runs with sliders</b></a> (step size, separation, noise, temperature, alpha0): a "
            "self-contained page, no server and no network needed. "
            f"{html.escape(rec['crossed'])}</p></section>"]


def write_views(views="all", out="figures/teach", *, smoke=False, html_animation=True,
                progress=print):
    """Compute the views and write them, with ``index.html``, under ``out``.

    Parameters
    ----------
    views : str or sequence of str
        Names from ``VIEWS`` and ``PAGES`` (``"explorer"``: :func:`write_explorer`) or ``"all"``
        (both).
    out : str or os.PathLike
        Output folder; created if missing and checked writable before anything is computed.
    smoke : bool, default False
        Tiny problems and few frames (seconds; for tests).
    html_animation : bool, default True
        Also write each animation as self-contained HTML (``to_jshtml`` made offline by
        :func:`offline_jshtml`). The explorer is written either way.
    progress : callable or None
        Called with one line per view.

    Returns
    -------
    dict
        ``{view: {"files", "summary", "caption", "facts"}}`` plus ``"index"``. Each view
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
        if v in PAGES:
            result[v] = _write_page(v, out, smoke, progress)
            continue
        with _theme():
            fig, anim, caption, summary, facts = build(v, settings)
            files = save_view(v, fig, anim, out, html_animation=html_animation,
                              scale=0.5 if smoke else 1.0)
        _write_record(out, v, caption, summary, files, facts)
        result[v] = {"files": files, "summary": summary, "caption": caption, "facts": facts}
        if progress is not None:
            progress(f"[{v}] {summary} ({time.perf_counter() - t0:.1f} s)")
    result["index"] = write_index(out)
    return result


def write_explorer(out="figures/teach", *, smoke=False, progress=print):
    """Compute the explorer's runs and write ``explorer.html`` (self-contained) under ``out``.

    Also writes ``explorer.json`` (the record :func:`mixlinreg.teach.write_index` reads: a summary
    and the file, and which sliders are crossed). ``smoke=True`` runs the explorer's
    ``SMOKE_GRID`` (a few runs, seconds; for tests).

    Returns
    -------
    pathlib.Path
        The page.
    """
    from ._explorer import FULL_GRID, SMOKE_GRID, explorer_data
    from ._explorer_page import explorer_html

    out = check_out_dir(out)
    grid = SMOKE_GRID if smoke else FULL_GRID
    data = explorer_data(grid, progress=progress)
    page = out / "explorer.html"
    atomic_write(page, explorer_html(data))
    summary = (f"explorer: {len(data['runs'])} runs ({grid.n_hard} hard IFCA, {grid.n_soft} soft "
               f"IFCA), {page.stat().st_size / 1e6:.2f} MB")
    rec = {"view": "explorer", "summary": summary, "files": [page.name],
           "crossed": data["crossed"]}
    atomic_write(out / "explorer.json", json.dumps(rec, indent=1) + "\n")
    return FsPath(page)


def _write_page(name, out, smoke, progress):
    """Write one of ``PAGES`` (the explorer) and report it as :func:`write_views` does a view."""
    t0 = time.perf_counter()
    page = write_explorer(out, smoke=smoke, progress=None)
    rec = json.loads((FsPath(out) / f"{name}.json").read_text())
    if progress is not None:
        progress(f"[{name}] {rec['summary']} ({time.perf_counter() - t0:.1f} s)")
    return {"files": [page], "summary": rec["summary"], "caption": rec["crossed"], "facts": None}
