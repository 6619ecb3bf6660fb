"""Figures and animations of the teaching views, drawn from :mod:`mixlinreg.teach._runs` results.

Each view has a static multi-panel figure (``*_figure``, for print) and an animation
(``*_animation``, a :class:`matplotlib.animation.FuncAnimation` over iterations). Colours are
seaborn's ``"colorblind"`` palette (model j always has colour j), markers differ by model too, so
no information is carried by colour alone.
"""

from __future__ import annotations

import numpy as np
import seaborn as sns
from matplotlib.animation import FuncAnimation
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch

MARKERS = ("o", "s", "^", "D", "v", "P")
TRUE_KW = dict(marker="*", s=200, color="black", edgecolor="white", linewidths=0.8, zorder=6)


def palette(k):
    """Model ``j``'s colour: seaborn's colour-blind palette."""
    return sns.color_palette("colorblind", max(k, 3))[:k]


def _figure(figsize):
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _frames(n_iter, max_frames):
    """Iterations shown by an animation: all of them, or ``max_frames`` spread over the run."""
    if n_iter + 1 <= max_frames:
        return list(range(n_iter + 1))
    return sorted(set(np.unique(np.geomspace(1, n_iter + 1, max_frames).astype(int) - 1).tolist()))


def _snapshots(n_iter, panels):
    """Iterations of a static figure's panels: 0, then spread (about geometrically) to the end."""
    out = [0] + [int(round(x)) for x in np.geomspace(1, n_iter, panels - 1)]
    return sorted(set(out))


# ---------------------------------------------------------------------------------- lines view


def _lines_artists(ax, mix, path):
    k = mix.k
    cols = palette(k)
    t_all = mix.t
    lo, hi = np.quantile(t_all, [0.0, 1.0])
    grid = np.linspace(lo, hi, 2)
    for j in range(k):
        ax.plot(grid, mix.theta_star[j, 0] + mix.theta_star[j, 1] * grid, ls="--", lw=1.2,
                color="0.35", zorder=1)
    scat = [ax.scatter([], [], s=12, color=cols[j], marker=MARKERS[j], alpha=0.75, lw=0,
                       zorder=2) for j in range(k)]
    fits = [ax.plot([], [], lw=2.6, color=cols[j], zorder=4)[0] for j in range(k)]
    ax.set_xlim(lo - 0.1, hi + 0.1)
    yy = mix.y
    ax.set_ylim(np.quantile(yy, 0.0) - 0.5, np.quantile(yy, 1.0) + 0.5)
    ax.set_xlabel("regressor t")
    ax.set_ylabel("response y")
    title = ax.set_title("", fontsize="medium")

    def update(it):
        lab = path.labels[it]
        for j in range(k):
            sel = lab == j
            pts = np.column_stack([t_all[sel].ravel(), mix.y[sel].ravel()])
            scat[j].set_offsets(pts if pts.size else np.empty((0, 2)))
            a, b = path.theta[it, j]
            fits[j].set_data(grid, a + b * grid)
        title.set_text(f"iteration {it}: loss {path.loss[it]:.3f}")
        return scat + fits + [title]

    return update


def _lines_legend(fig_or_ax, k, **kw):
    cols = palette(k)
    handles = [Line2D([], [], color=cols[j], lw=2.6, marker=MARKERS[j], ms=5,
                      label=f"model {j + 1}: line, points of its machines")
               for j in range(k)]
    handles.append(Line2D([], [], color="0.35", ls="--", lw=1.2, label="true lines"))
    return fig_or_ax.legend(handles=handles, fontsize="small", **kw)


def lines_figure(mix, path, panels=4):
    """Static lines view: the points coloured by cluster and the k fitted lines at a few iterations.

    Parameters
    ----------
    mix : LineMixture
    path : Path
        From :func:`mixlinreg.teach.ifca_path` on ``mix``.
    panels : int, default 4

    Returns
    -------
    matplotlib.figure.Figure
    """
    its = _snapshots(len(path.loss) - 1, panels)
    fig = _figure((3.0 * len(its), 3.4))
    axs = fig.subplots(1, len(its), sharey=True)
    for ax, it in zip(np.atleast_1d(axs), its):
        _lines_artists(ax, mix, path)(it)
    _lines_legend(fig, mix.k, loc="outside lower center", ncol=min(mix.k + 1, 4))
    fig.suptitle("IFCA on a mixture of regression lines y = a + b t: each machine's points take "
                 "the colour of the model it picks", fontsize="medium")
    return fig


def lines_animation(mix, path, max_frames=30, interval=500):
    """Animated lines view (one frame per iteration, at most ``max_frames``).

    Parameters
    ----------
    mix : LineMixture
    path : Path
        From :func:`mixlinreg.teach.ifca_path` on ``mix``.
    max_frames : int, default 30
        Longer runs show ``max_frames`` iterations spread geometrically (early iterations change
        most), always including the first and the last.
    interval : int, default 500
        Milliseconds between frames (HTML); GIFs are saved at 2 frames per second.

    Returns
    -------
    matplotlib.animation.FuncAnimation
        Save it with ``anim.save("x.gif", writer=PillowWriter(fps=2))`` or ``anim.to_jshtml()``.
    """
    fig = _figure((5.6, 4.6))
    ax = fig.subplots()
    update = _lines_artists(ax, mix, path)
    _lines_legend(fig, mix.k, loc="outside lower center", ncol=1)
    return FuncAnimation(fig, update, frames=_frames(len(path.loss) - 1, max_frames),
                         interval=interval, blit=False)


# ------------------------------------------------------------------------------ parameter plane


def local_estimates(mix):
    """Each machine's own least-squares ``(a, b)`` (:func:`mixlinreg.baselines.local_models`)."""
    from ..baselines import local_models

    return local_models(mix.X, mix.y).theta


def _plane_limits(mix, path, local):
    pts = np.vstack([local, mix.theta_star, path.theta.reshape(-1, 2)])
    lo, hi = pts.min(0), pts.max(0)
    pad = 0.12 * (hi - lo).max()
    return (lo[0] - pad, hi[0] + pad), (lo[1] - pad, hi[1] + pad)


def _plane_artists(ax, mix, path, local, S, xlim, ylim):
    k = mix.k
    cols = palette(k)
    ga = np.linspace(*xlim, 160)
    gb = np.linspace(*ylim, 160)
    GA, GB = np.meshgrid(ga, gb)
    U = np.stack([GA, GB], -1)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(cols)
    region = [None]
    ax.scatter(mix.theta_star[:, 0], mix.theta_star[:, 1], **TRUE_KW)
    scat = [ax.scatter([], [], s=22, color=cols[j], marker=MARKERS[j], edgecolor="0.2",
                       linewidths=0.3, zorder=7) for j in range(k)]
    trails = [ax.plot([], [], color=cols[j], lw=1.6, alpha=0.9, zorder=4)[0] for j in range(k)]
    heads = [ax.plot([], [], marker=MARKERS[j], ms=13, color=cols[j], mec="black", mew=1.5,
                     ls="none", zorder=5)[0] for j in range(k)]
    for j in range(k):  # where each model starts: hollow
        ax.plot(*path.theta[0, j], marker=MARKERS[j], ms=11, mfc="white", mec=cols[j], mew=2,
                ls="none", zorder=4.5)
    ax.set_xlabel("intercept a")
    ax.set_ylabel("slope b")
    title = ax.set_title("", fontsize="medium")

    def update(it):
        th = path.theta[it]
        diff = U[:, :, None, :] - th[None, None]
        q = np.einsum("xyjd,de,xyje->xyj", diff, S, diff)
        win = np.argmin(q, axis=-1)
        if region[0] is not None:
            region[0].remove()
        region[0] = ax.pcolormesh(GA, GB, win, cmap=cmap, vmin=-0.5, vmax=k - 0.5, alpha=0.18,
                                  shading="auto", zorder=0, rasterized=True)
        lab = path.labels[it]
        for j in range(k):
            sel = lab == j
            scat[j].set_offsets(local[sel] if sel.any() else np.empty((0, 2)))
            trails[j].set_data(path.theta[: it + 1, j, 0], path.theta[: it + 1, j, 1])
            heads[j].set_data([th[j, 0]], [th[j, 1]])
        title.set_text(f"iteration {it}: distance {path.dist[it]:.3f}")
        return scat + trails + heads + [title]

    return update


def _plane_legend(fig, k, **kw):
    cols = palette(k)
    handles = [Line2D([], [], marker="*", ms=13, color="black", ls="none", label="true (a, b)")]
    for j in range(k):
        handles.append(Line2D([], [], marker=MARKERS[j], ms=10, color=cols[j], mec="black",
                              lw=1.6, label=f"model {j + 1} now, trail"))
    for j in range(k):
        handles.append(Line2D([], [], marker=MARKERS[j], ms=5, color=cols[j], ls="none",
                              label=f"own fits of model {j + 1}'s machines"))
    handles.append(Line2D([], [], marker="o", ms=9, mfc="white", mec="0.3", mew=2, ls="none",
                          label="hollow: a model's start"))
    handles.append(Patch(color="0.6", alpha=0.35, label="shade: where a model wins"))
    return fig.legend(handles=handles, fontsize="small", **kw)


def _pooled_metric(mix):
    """``S = mean_i X_i^T X_i / n``: the population loss of a machine with parameter u under model
    theta is ``(u - theta)^T S (u - theta) + sigma^2`` (up to sampling), so the model with the
    least such distance wins it."""
    m, n, d = mix.X.shape
    X2 = mix.X.reshape(m * n, d)
    return X2.T @ X2 / (m * n)


def plane_figure(mix, path, panels=4):
    """Static parameter-plane view (d = 2) at a few iterations.

    Parameters
    ----------
    mix : LineMixture
    path : Path
        From :func:`mixlinreg.teach.ifca_path` on ``mix``.
    panels : int, default 4

    Returns
    -------
    matplotlib.figure.Figure
    """
    local = local_estimates(mix)
    S = _pooled_metric(mix)
    xlim, ylim = _plane_limits(mix, path, local)
    its = _snapshots(len(path.loss) - 1, panels)
    fig = _figure((3.1 * len(its), 3.7))
    axs = fig.subplots(1, len(its), sharex=True, sharey=True)
    for ax, it in zip(np.atleast_1d(axs), its):
        _plane_artists(ax, mix, path, local, S, xlim, ylim)(it)
    _plane_legend(fig, mix.k, loc="outside lower center", ncol=min(2 * mix.k + 3, 5))
    fig.suptitle("The parameter plane: each model (large marker) steps toward the least-squares "
                 "fit of the machines that pick it,\nabout a fraction 2 lr m_j / m of the way "
                 "(m_j machines pick it, m in all)", fontsize="medium")
    return fig


def plane_animation(mix, path, max_frames=30, interval=500):
    """Animated parameter-plane view; parameters as :func:`lines_animation`."""
    local = local_estimates(mix)
    S = _pooled_metric(mix)
    xlim, ylim = _plane_limits(mix, path, local)
    fig = _figure((5.6, 6.0))
    ax = fig.subplots()
    update = _plane_artists(ax, mix, path, local, S, xlim, ylim)
    _plane_legend(fig, mix.k, loc="outside lower center", ncol=2)
    return FuncAnimation(fig, update, frames=_frames(len(path.loss) - 1, max_frames),
                         interval=interval, blit=False)


# ------------------------------------------------------------------------------------ basin map


def _basin_panel(ax, mix, bmap, it=None, cax=None):
    """Draw a basin map; ``it=None``: iterations to success; else success reached by ``it``."""
    from matplotlib.colors import ListedColormap

    k = mix.k
    cols = palette(k)
    ext = (bmap.a[0], bmap.a[-1], bmap.b[0], bmap.b[-1])
    da, db = bmap.a[1] - bmap.a[0], bmap.b[1] - bmap.b[0]
    ext = (ext[0] - da / 2, ext[1] + da / 2, ext[2] - db / 2, ext[3] + db / 2)
    fail = np.where(bmap.success, np.nan, 1.0)
    ax.imshow(fail, origin="lower", extent=ext, cmap=ListedColormap(["0.82"]), aspect="equal",
              interpolation="nearest")
    im = None
    if it is None:
        im = ax.imshow(bmap.iterations, origin="lower", extent=ext, cmap="viridis_r",
                       aspect="equal", interpolation="nearest",
                       vmin=0, vmax=max(1.0, np.nanmax(bmap.iterations))
                       if np.isfinite(bmap.iterations).any() else 1.0)
        if cax is not None:
            ax.figure.colorbar(im, ax=ax, label="iterations to success")
    else:
        done = np.where(bmap.reached[it], 1.0, np.nan)
        ax.imshow(done, origin="lower", extent=ext, cmap=ListedColormap([cols[0]]),
                  aspect="equal", interpolation="nearest", alpha=0.85)
    ax.add_patch(Circle(tuple(mix.theta_star[0]), bmap.radius, fill=False, lw=2.0, ls="--",
                        color="black", zorder=5))
    ax.scatter(mix.theta_star[:, 0], mix.theta_star[:, 1], **TRUE_KW)
    for j in range(1, k):
        ax.plot(*bmap.others[j - 1], marker=MARKERS[j], ms=11, color=cols[j], mec="black", mew=1.3,
                ls="none", zorder=7)
        ax.add_patch(Circle(tuple(mix.theta_star[j]), bmap.radius, fill=False, lw=1.3, ls=":",
                            color="black", zorder=5))
    ax.set_xlim(ext[0], ext[1])
    ax.set_ylim(ext[2], ext[3])
    ax.set_aspect("equal")  # one unit of a = one unit of b: Assumption 1's balls are round
    ax.set_xlabel("model 1's starting intercept a")
    ax.set_ylabel("model 1's starting slope b")
    return im


def _basin_legend(fig, ks, alpha0, animated=False, **kw):
    cols = palette(max(ks))
    handles = [Line2D([], [], marker="*", ms=13, color="black", ls="none", label="true (a, b)"),
               Line2D([], [], color="black", ls="--", lw=2,
                      label=f"Assumption 1 ball of model 1, alpha0 = {alpha0:g}"),
               Line2D([], [], color="black", ls=":", lw=1.3, label="the other models' balls")]
    for j in range(1, max(ks)):
        handles.append(Line2D([], [], marker=MARKERS[j], ms=9, color=cols[j], mec="black",
                              ls="none", label=f"model {j + 1}'s start (held fixed)"))
    if animated:
        handles.append(Patch(color=cols[0], label="succeeded by this iteration"))
        handles.append(Patch(color="0.82", label="never succeeds"))
    else:
        handles.append(Patch(color="0.82", label="fails (final matched distance > 0.6 sigma)"))
    return fig.legend(handles=handles, fontsize="small", **kw)


def basin_figure(mixes, bmaps):
    """Static basin maps side by side (typically k = 2 and k = 3).

    Parameters
    ----------
    mixes : sequence of LineMixture
    bmaps : sequence of BasinMap

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = _figure((5.0 * len(bmaps), 4.9))
    axs = np.atleast_1d(fig.subplots(1, len(bmaps)))
    for ax, mix, bm in zip(axs, mixes, bmaps):
        _basin_panel(ax, mix, bm, cax=True)
        ax.set_title(f"k = {mix.k}: {bm.success.mean():.0%} of starts succeed "
                     f"(step {bm.lr:g}, {bm.n_iter} iterations)", fontsize="medium")
    _basin_legend(fig, [mx.k for mx in mixes], bmaps[0].alpha0, loc="outside lower center",
                  ncol=2)
    fig.suptitle("Basin of IFCA: model 1 starts anywhere on the map, the other models where "
                 "init_close puts them", fontsize="medium")
    return fig


def basin_animation(mixes, bmaps, max_frames=20, interval=500):
    """Animated basin maps: the starts that have succeeded by each iteration.

    Parameters
    ----------
    mixes : sequence of LineMixture
    bmaps : sequence of BasinMap
        From :func:`mixlinreg.teach.basin_map`, one per mixture.
    max_frames, interval : int
        As in :func:`lines_animation`.

    Returns
    -------
    matplotlib.animation.FuncAnimation
    """
    n_iter = bmaps[0].n_iter
    fig = _figure((4.4 * len(bmaps), 5.0))
    axs = np.atleast_1d(fig.subplots(1, len(bmaps)))
    _basin_legend(fig, [mx.k for mx in mixes], bmaps[0].alpha0, animated=True,
                  loc="outside lower center", ncol=2)

    def update(it):
        for ax, mix, bm in zip(axs, mixes, bmaps):
            ax.clear()
            _basin_panel(ax, mix, bm, it=min(it, bm.n_iter))
            ax.set_title(f"k = {mix.k}, iteration {it}: {bm.reached[min(it, bm.n_iter)].mean():.0%}"
                         " within 0.6 sigma", fontsize="medium")
        return []

    return FuncAnimation(fig, update, frames=_frames(n_iter, max_frames), interval=interval,
                         blit=False)


# ------------------------------------------------------------------------------ contraction view


def _contraction_axes(ax, c, upto=None):
    T = c.err.shape[0] - 1
    upto = T if upto is None else upto
    cols = palette(2)
    t = np.arange(T + 1)
    for r in range(c.err.shape[1]):
        for j in range(c.err.shape[2]):
            ax.plot(t[: upto + 1], c.err[: upto + 1, r, j], color=cols[j], marker=MARKERS[j], ms=3,
                    lw=1.2, alpha=0.8)
    e0 = float(np.median(c.err[0]))
    ax.plot(t, e0 * 0.5 ** t, color="black", ls="--", lw=1.5)
    ax.axhline(c.floor_exact, color=palette(3)[2], ls=":", lw=2)
    ax.axhline(c.floor_form, color="0.4", ls="-.", lw=1.5)
    ax.set_yscale("log")
    ax.set_xlim(-0.3, T + 0.3)
    lo = min(c.floor_exact, np.nanmin(c.err[c.err > 0])) / 3
    ax.set_ylim(lo, 2 * np.nanmax(c.err))
    ax.set_xlabel("iteration t")
    ax.set_ylabel("error ||theta_j - theta*_j|| (log scale)")


def _contraction_legend(fig, c, **kw):
    cols = palette(2)
    handles = [Line2D([], [], color=cols[j], marker=MARKERS[j], ms=4,
                      label=f"cluster {j + 1} (a line per start)") for j in range(2)]
    handles += [Line2D([], [], color="black", ls="--", label="Theorem 1: factor 1/2"),
                Line2D([], [], color=palette(3)[2], ls=":", lw=2,
                       label="floor with known clusters"),
                Line2D([], [], color="0.4", ls="-.",
                       label="Corollary 1: (sigma/p) sqrt(d/(m n'))")]
    return fig.legend(handles=handles, fontsize="small", **kw)


def contraction_figure(c):
    """Static contraction view with the measured factor printed next to the theorem's.

    Left: error per iteration (log scale) with Theorem 1's factor 1/2, the known-cluster floor and
    Corollary 1's floor form; right: the per-step ratios the factor is fitted on.

    Parameters
    ----------
    c : Contraction
        From :func:`mixlinreg.teach.contraction_run`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = c.settings
    fig = _figure((11.5, 5.4))
    ax, ax_r = fig.subplots(1, 2, width_ratios=(1.3, 1))
    _contraction_axes(ax, c)
    _ratio_axes(ax_r, c)
    f = c.factor
    ax.text(0.98, 0.97, f"measured factor per iteration: {f.est:.3f} [{f.lo:.3f}, {f.hi:.3f}]\n"
                        f"Theorem 1: {c.factor_theorem:.3f}   (exact here: {c.factor_exact:.3f})",
            transform=ax.transAxes, ha="right", va="top", fontsize="small",
            bbox=dict(boxstyle="round", fc="white", ec="0.6"))
    ax.set_title(f"Resampled IFCA, gamma p = 1/4: k = 2, m = {s['m']}, n' = {s['n_prime']},\n"
                 f"d = {s['d']}, sigma = {s['sigma']:g} (Corollary 1's constant set to 1)",
                 fontsize="medium")
    _contraction_legend(fig, c, loc="outside lower center", ncol=2)
    return fig


def _ratio_axes(ax, c):
    """Per-step ratios e_{t+1} / e_t: filled where the fit used them (transient), hollow after."""
    cols = palette(3)
    T = c.err.shape[0] - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = c.err[1:] / c.err[:-1]
    used = c.transient[:-1] & c.transient[1:] if c.transient is not None else np.ones_like(ratio,
                                                                                          bool)
    jitter = np.linspace(-0.15, 0.15, c.err.shape[1])
    for j in range(c.err.shape[2]):
        for r in range(c.err.shape[1]):
            t = np.arange(T) + 0.5 + jitter[r]
            u = used[:, r, j]
            ax.plot(t[u], ratio[u, r, j], ls="none", marker=MARKERS[j], ms=5, color=cols[j])
            ax.plot(t[~u], ratio[~u, r, j], ls="none", marker=MARKERS[j], ms=5, mfc="none",
                    color=cols[j])
    ax.axhline(c.factor_theorem, color="black", ls="--", lw=1.5)
    fit_col = palette(4)[3]
    ax.axhline(c.factor.est, color=fit_col, lw=2)
    ax.set_ylim(0, max(1.6, float(np.nanmax(np.where(np.isfinite(ratio), ratio, 0))) * 1.05))
    ax.set_xlim(0, T)
    ax.set_xlabel("step t -> t + 1")
    ax.set_ylabel("error ratio e_{t+1} / e_t")
    ax.set_title("one point per start and cluster;\nhollow: at the floor, not fitted",
                 fontsize="medium")
    ax.legend(handles=[
        Line2D([], [], color="black", ls="--", label="Theorem 1: 1/2"),
        Line2D([], [], color=fit_col, lw=2, label=f"measured (fit): {c.factor.est:.3f}")],
        fontsize="small", loc="upper left")


def contraction_animation(c, max_frames=30, interval=500):
    """Animated contraction view: the error curves drawn one iteration at a time.

    Parameters
    ----------
    c : Contraction
    max_frames, interval : int
        As in :func:`lines_animation`.

    Returns
    -------
    matplotlib.animation.FuncAnimation
    """
    fig = _figure((6.4, 5.6))
    ax = fig.subplots()
    _contraction_legend(fig, c, loc="outside lower center", ncol=1)
    f = c.factor

    def update(it):
        ax.clear()
        _contraction_axes(ax, c, upto=it)
        ax.set_title(f"iteration {it}\nmeasured factor {f.est:.3f}, Theorem 1: 0.5",
                     fontsize="medium")
        return []

    return FuncAnimation(fig, update, frames=_frames(c.err.shape[0] - 1, max_frames),
                         interval=interval, blit=False)


# ---------------------------------------------------------------------------------- hard vs soft


def _soft_axes(ax_plane, ax_err, mix, paths, names, it, local):
    k = mix.k
    cols = palette(k)
    styles = ("-", "--", ":")
    for ax in (ax_plane,):
        ax.scatter(local[:, 0], local[:, 1], s=10, color="0.6", zorder=1)
        ax.scatter(mix.theta_star[:, 0], mix.theta_star[:, 1], **TRUE_KW)
        for j in range(k):  # the common start: hollow
            ax.plot(*paths[0].theta[0, j], marker=MARKERS[j], ms=10, mfc="white", mec=cols[j],
                    mew=2, ls="none", zorder=5)
        for p, ls, edge, ms in zip(paths[:2], styles, ("black", "white"), (10, 7)):
            for j in range(k):
                ax.plot(p.theta[: it + 1, j, 0], p.theta[: it + 1, j, 1], color=cols[j], ls=ls,
                        lw=1.8, zorder=3)
                ax.plot(p.theta[it, j, 0], p.theta[it, j, 1], marker=MARKERS[j], ms=ms,
                        color=cols[j], mec=edge, mew=1.2, ls="none", zorder=4)
        ax.set_xlabel("intercept a")
        ax.set_ylabel("slope b")
    T = len(paths[0].dist) - 1
    for p, name, ls in zip(paths, names, styles):
        ax_err.plot(np.arange(it + 1), p.dist[: it + 1], color="black", ls=ls, lw=1.8)
    ax_err.set_yscale("log")
    ax_err.set_xlim(0, T)
    allv = np.concatenate([p.dist for p in paths])
    ax_err.set_ylim(np.nanmin(allv) / 2, np.nanmax(allv) * 2)
    ax_err.set_xlabel("iteration t")
    ax_err.set_ylabel("matched distance to the truth")


def _soft_legend(fig, k, names, **kw):
    cols = palette(k)
    styles = ("-", "--", ":")
    handles = [Line2D([], [], color="black", ls=ls, lw=1.8, label=name)
               for name, ls in zip(names, styles)]
    handles += [Line2D([], [], marker=MARKERS[j], ms=8, color=cols[j], mec="black", ls="none",
                       label=f"model {j + 1}") for j in range(k)]
    handles += [Line2D([], [], marker="o", ms=9, mfc="white", mec="0.3", mew=2, ls="none",
                       label="hollow: the start (all runs)"),
                Line2D([], [], marker="o", ms=9, color="0.3", mec="black", ls="none",
                       label=f"filled, black edge: {names[0]} now"),
                Line2D([], [], marker="o", ms=7, color="0.3", mec="white", ls="none",
                       label=f"filled, white edge: {names[1]} now"),
                Line2D([], [], marker="*", ms=12, color="black", ls="none", label="true (a, b)"),
                Line2D([], [], marker="o", ms=4, color="0.6", ls="none",
                       label="machines' own least-squares fits")]
    return fig.legend(handles=handles, fontsize="small", **kw)


def soft_figure(mix, paths, names):
    """Hard IFCA against soft IFCA from the same start: trails in the plane and the error.

    Parameters
    ----------
    mix : LineMixture
    paths : sequence of Path (2 or 3)
    names : sequence of str, one per path (legend)

    Returns
    -------
    matplotlib.figure.Figure
    """
    local = local_estimates(mix)
    fig = _figure((11.0, 4.8))
    ax_plane, ax_err = fig.subplots(1, 2)
    _soft_axes(ax_plane, ax_err, mix, paths, names, len(paths[0].dist) - 1, local)
    ax_plane.set_title(f"paths in the plane (a, b)\nsolid: {names[0]}; dashed: {names[1]}",
                       fontsize="small")
    ax_err.set_title("error per iteration", fontsize="medium")
    _soft_legend(fig, mix.k, names, loc="outside right center")
    return fig


def soft_animation(mix, paths, names, max_frames=30, interval=400):
    """Animated hard vs soft view; parameters as :func:`soft_figure` and :func:`lines_animation`."""
    local = local_estimates(mix)
    fig = _figure((11.0, 4.8))
    ax_plane, ax_err = fig.subplots(1, 2)
    _soft_legend(fig, mix.k, names, loc="outside right center")
    xl = (min(local[:, 0].min(), mix.theta_star[:, 0].min()) - 0.3,
          max(local[:, 0].max(), mix.theta_star[:, 0].max()) + 0.3)
    yl = (min(local[:, 1].min(), mix.theta_star[:, 1].min()) - 0.3,
          max(local[:, 1].max(), mix.theta_star[:, 1].max()) + 0.3)

    def update(it):
        ax_plane.clear()
        ax_err.clear()
        _soft_axes(ax_plane, ax_err, mix, paths, names, it, local)
        ax_plane.set_xlim(*xl)
        ax_plane.set_ylim(*yl)
        ax_plane.set_title(f"iteration {it}", fontsize="medium")
        return []

    T = len(paths[0].dist) - 1
    # evenly spaced: soft IFCA's interesting part comes late (it escapes after tens of iterations)
    frames = sorted(set(np.linspace(0, T, min(max_frames, T + 1)).round().astype(int).tolist()))
    return FuncAnimation(fig, update, frames=frames, interval=interval, blit=False)
