"""An IFCA explorer: runs over a grid of step size, separation, noise, temperature and alpha0.

:func:`explorer_run` is one run of the explorer's problem (k = 3 regression lines, d = 2) for any
setting; the notebook sliders (:func:`mixlinreg.teach.sliders`) call it directly, and
:func:`explorer_data` calls it over a grid whose runs :func:`mixlinreg.teach.write_explorer`
embeds in one self-contained HTML page (``explorer.html``: inline JavaScript draws the stored
runs; nothing is computed in the page but plotting and the wording of sentences from the stored
facts).

Every run is the package's: hard IFCA is :func:`mixlinreg.teach.ifca_path` (the kernel
:func:`mixlinreg.ifca` with ``trace=True``), soft IFCA :func:`mixlinreg.teach.soft_path`
(:func:`mixlinreg.baselines.soft_ifca`). The facts a page sentence is written from are
:func:`mixlinreg.teach.path_facts` of the run, stored with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._validation import check_float, check_int

__all__ = ["ExplorerGrid", "FULL_GRID", "SMOKE_GRID", "explorer_problem", "explorer_run",
           "explorer_data", "resolve_temperature"]

#: Success rule of the page (as the basin view's): the matched distance ends within 0.6 sigma.
TOL_FACTOR = 0.6
#: Coordinates beyond this are not stored (a diverging run leaves the plot long before).
_FAR = 1e4


@dataclass(frozen=True)
class ExplorerGrid:
    """The values each slider of the HTML explorer takes, and the problem's sizes.

    Hard IFCA is run at every combination of ``lr x separation x noise x alpha0``; soft IFCA at
    every ``temperature x separation x noise x alpha0`` with the step ``lr_soft``. A temperature
    of ``"em"`` is EM's for this model, ``2 sigma^2 / n`` (it depends on the noise).
    """

    separation: tuple = (0.5, 1.0, 1.5, 2.5)
    noise: tuple = (0.1, 0.25, 0.5, 1.0)
    lr: tuple = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0)
    alpha0: tuple = (0.05, 0.15, 0.25, 0.35, 0.45)
    temperature: tuple = ("em", 0.1, 0.5, 2.0, 5.0)
    lr_soft: float = 0.5
    m: int = 30
    n: int = 15
    n_iter: int = 30
    data_seed: int = 0
    init_seed: int = 1
    default: tuple = (("separation", 2.5), ("noise", 0.5), ("lr", 0.5), ("alpha0", 0.25),
                      ("temperature", "hard"))

    @property
    def n_hard(self):
        return len(self.lr) * len(self.separation) * len(self.noise) * len(self.alpha0)

    @property
    def n_soft(self):
        return len(self.temperature) * len(self.separation) * len(self.noise) * len(self.alpha0)


FULL_GRID = ExplorerGrid()
SMOKE_GRID = ExplorerGrid(separation=(1.0, 2.5), noise=(0.5,), lr=(0.5, 3.0), alpha0=(0.25,),
                          temperature=("em", 2.0), m=9, n=8, n_iter=4,
                          default=(("separation", 2.5), ("noise", 0.5), ("lr", 0.5),
                                   ("alpha0", 0.25), ("temperature", "hard")))


def explorer_problem(separation=2.5, noise=0.5, *, m=30, n=15, rng=0):
    """The explorer's data: :data:`mixlinreg.teach.THETA_STAR` for k = 3 scaled about its centroid
    so that the separation ``Delta`` (the least distance between two truths) is ``separation``.

    The same ``rng`` draws the same regressors and the same standard normal noise for every
    separation and noise level (only the truths and the noise's scale change).

    Returns
    -------
    LineMixture
    """
    from ..geometry import min_separation
    from ._runs import THETA_STAR, line_mixture

    separation = check_float("separation", separation, low=0.0, low_open=True)
    noise = check_float("noise", noise, low=0.0)
    base = np.asarray(THETA_STAR[3], dtype=float)
    centre = base.mean(0)
    star = centre + (base - centre) * (separation / min_separation(base))
    return line_mixture(k=3, m=m, n=n, sigma=noise, theta_star=star, rng=rng)


def resolve_temperature(temperature, noise, n):
    """``None``/``0``/``"hard"``: hard IFCA (returns 0.0); ``"em"``: ``2 noise^2 / n``; else > 0."""
    if temperature is None or (isinstance(temperature, str) and temperature == "hard"):
        return 0.0
    if isinstance(temperature, str):
        if temperature != "em":
            raise ValueError("temperature must be 'hard', 'em' or a number >= 0 (0: hard IFCA), "
                             f"got {temperature!r}")
        from ._claims import em_temperature

        t = em_temperature(noise, n)
        if not t > 0:
            raise ValueError(f"temperature 'em' is 2 noise^2 / n, which needs noise > 0, got "
                             f"noise = {noise}")
        return float(t)
    return check_float("temperature", temperature, low=0.0)


def explorer_run(separation=2.5, noise=0.5, lr=0.5, alpha0=0.25, temperature="hard", *, m=30,
                 n=15, n_iter=30, data_seed=0, init_seed=1):
    """One run of the explorer's problem: ``(mix, path)``.

    Parameters
    ----------
    separation : float, default 2.5
        ``Delta`` of the three lines' ``(a, b)``, ``> 0`` (:func:`explorer_problem`).
    noise : float, default 0.5
        Noise standard deviation sigma, ``>= 0``.
    lr : float, default 0.5
        Step size, ``> 0`` (IFCA's divisor m: model j moves about ``2 lr m_j / m`` of the way).
    alpha0 : float, default 0.25
        Closeness of the start, in ``(0, 0.5]``: each model starts at ``(1/2 - alpha0) Delta`` from
        its own truth (:func:`mixlinreg.init_close`, random directions from ``init_seed``; the
        same directions for every alpha0).
    temperature : "hard", "em" or float, default "hard"
        ``"hard"`` or 0: IFCA (:func:`mixlinreg.teach.ifca_path`); a number > 0: soft IFCA at that
        temperature (:func:`mixlinreg.teach.soft_path`); ``"em"``: soft IFCA at EM's temperature
        ``2 sigma^2 / n``.
    m, n, n_iter : int
        Machines, points per machine, iterations.
    data_seed, init_seed : int

    Returns
    -------
    (LineMixture, Path)

    Examples
    --------
    >>> from mixlinreg.teach import explorer_run
    >>> mix, path = explorer_run(separation=2.5, noise=0.5, lr=0.5, n_iter=10)
    >>> path.theta.shape, bool(path.dist[-1] < path.dist[0])
    ((11, 3, 2), True)
    """
    from ..inits import init_close
    from ._runs import ifca_path, soft_path

    n = check_int("n", n, low=2)
    n_iter = check_int("n_iter", n_iter, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    alpha0 = check_float("alpha0", alpha0, low=0.0, high=0.5, low_open=True)
    mix = explorer_problem(separation, noise, m=m, n=n, rng=data_seed)
    temp = resolve_temperature(temperature, mix.sigma, n)
    init = init_close(mix.theta_star, alpha0, 1, rng=init_seed)[0]
    if temp == 0.0:
        return mix, ifca_path(mix, init, lr, n_iter)
    return mix, soft_path(mix, init, lr, n_iter, temperature=temp)


# ------------------------------------------------------------------------ the page's data


def _num(x, digits=4):
    """A float for JSON: ``digits`` significant digits; None if not finite or beyond ``_FAR``."""
    x = float(x)
    if not np.isfinite(x) or abs(x) > _FAR:
        return None
    return float(f"{x:.{digits}g}")


def _labels_code(labels):
    """Labels per iteration as digit strings; ``""`` where a row repeats the one before."""
    rows, prev = [], None
    for row in np.asarray(labels):
        s = "".join(str(int(v)) for v in row)
        rows.append("" if s == prev else s)
        prev = s
    return rows


def _run_record(mix, path):
    """What the page needs of one run: iterates (thousandths), distances, labels, facts."""
    from ._claims import path_facts

    th = path.theta.reshape(-1)
    ok = np.isfinite(th) & (np.abs(th) <= _FAR)
    f = path_facts(path, mix)
    tol = TOL_FACTOR * mix.sigma
    dist = np.asarray(path.dist, dtype=float)
    within = np.isfinite(dist) & (dist <= tol)
    stays = np.flip(np.logical_and.accumulate(np.flip(within)))
    k = mix.theta_star.shape[0]
    table = np.zeros((k, k), dtype=int)  # machines of true line c held by model j at the end
    np.add.at(table, (np.asarray(path.labels[-1]), np.asarray(mix.labels)), 1)
    fin = path.theta[-1]
    pair = min(float(np.linalg.norm(fin[i] - fin[j])) for i in range(len(fin)) for j in range(i))
    return {"th": [int(round(v * 1000)) if o else None for v, o in zip(th.tolist(), ok)],
            "d": [_num(v) for v in dist], "lab": _labels_code(path.labels),
            "dv": bool(path.diverged),
            "f": {"counts_end": f["counts_end"], "table": table.tolist(),
                  "lines_end": f["lines_end"],
                  "lines_unfound": f["lines_unfound"], "moved": f["moved"],
                  "dist_start": f["dist_start"], "dist_end": f["dist_end"],
                  "success": bool(within[-1]),
                  "settled": int(np.argmax(stays)) if within[-1] else None,
                  "closest_pair": _num(pair)}}


def _data_record(mix):
    """Per data set: truths, each machine's own fit, thresholds, the oracle's distance, limits."""
    from ..baselines import oracle
    from ..metrics import dist_matched
    from ._claims import step_thresholds
    from ._views import local_estimates

    local = local_estimates(mix)
    star = mix.theta_star
    reach = 0.5 * mix.delta
    pts = np.vstack([local, star - reach, star + reach])
    lo, hi = pts.min(0), pts.max(0)
    half = 0.55 * float((hi - lo).max())
    mid = (lo + hi) / 2
    orc = oracle(mix.X, mix.y, mix.labels).theta
    return {"star": np.round(star, 4).tolist(), "local": np.round(local, 3).tolist(),
            "truth_labels": "".join(str(int(c)) for c in mix.labels),
            "thresholds": [round(float(v), 3) for v in step_thresholds(mix.X, mix.labels)],
            "oracle_dist": _num(dist_matched(orc, star)), "delta": round(float(mix.delta), 4),
            "sigma": mix.sigma, "tol": round(TOL_FACTOR * mix.sigma, 4),
            "snr": round(float(mix.delta * np.sqrt(mix.X.shape[1]) / mix.sigma), 2)
            if mix.sigma > 0 else None,
            "t_em": _num(2 * mix.sigma ** 2 / mix.X.shape[1]),
            "lim": [round(float(mid[0] - half), 3), round(float(mid[0] + half), 3),
                    round(float(mid[1] - half), 3), round(float(mid[1] + half), 3)]}


def explorer_data(grid=FULL_GRID, progress=None):
    """Run the explorer's grid (:class:`ExplorerGrid`) and return the page's data (JSON types).

    Keys: ``grid`` (the slider values), ``setup`` (sizes, seeds, the success rule), ``data``
    (per ``"is/in"`` index pair of separation and noise: :func:`_data_record`) and ``runs`` (per
    key ``"h/is/in/ilr/ia"`` for hard IFCA, ``"s/is/in/it/ia"`` for soft IFCA: the iterates in
    thousandths, distances, labels per iteration and the run's :func:`path_facts`).
    """
    kw = dict(m=grid.m, n=grid.n, n_iter=grid.n_iter, data_seed=grid.data_seed,
              init_seed=grid.init_seed)
    data, runs = {}, {}
    t0 = time.perf_counter()
    for i_s, sep in enumerate(grid.separation):
        for i_n, noise in enumerate(grid.noise):
            data[f"{i_s}/{i_n}"] = _data_record(explorer_problem(sep, noise, m=grid.m, n=grid.n,
                                                                 rng=grid.data_seed))
            for i_a, a0 in enumerate(grid.alpha0):
                for i_l, lr in enumerate(grid.lr):
                    runs[f"h/{i_s}/{i_n}/{i_l}/{i_a}"] = _run_record(
                        *explorer_run(sep, noise, lr, a0, "hard", **kw))
                for i_t, temp in enumerate(grid.temperature):
                    runs[f"s/{i_s}/{i_n}/{i_t}/{i_a}"] = _run_record(
                        *explorer_run(sep, noise, grid.lr_soft, a0, temp, **kw))
            if progress is not None:
                progress(f"[explorer] separation {sep:g}, noise {noise:g}: {len(runs)} runs "
                         f"({time.perf_counter() - t0:.1f} s)")
    setup = {"k": 3, "m": grid.m, "n": grid.n, "n_iter": grid.n_iter,
             "data_seed": grid.data_seed, "init_seed": grid.init_seed, "tol_factor": TOL_FACTOR,
             "lr_soft": grid.lr_soft, "n_hard": grid.n_hard, "n_soft": grid.n_soft,
             "default": dict(grid.default)}
    sliders = {"separation": list(grid.separation), "noise": list(grid.noise),
               "lr": list(grid.lr), "alpha0": list(grid.alpha0),
               "temperature": ["hard"] + list(grid.temperature)}
    from matplotlib.colors import to_hex

    from ._views import palette

    out = {"grid": sliders, "setup": setup, "data": data, "runs": runs,
           "colors": [to_hex(c) for c in palette(3)]}
    out["crossed"] = _crossed_sentence(out)
    return out


def _crossed_sentence(data):
    """Which sliders are crossed with which, from the grid (shown on the page and the index)."""
    g, s = data["grid"], data["setup"]
    soft = [t for t in g["temperature"] if t != "hard"]
    return (f"Hard IFCA (temperature 'hard') is run at every combination of step size "
            f"({len(g['lr'])} values), separation ({len(g['separation'])}), noise "
            f"({len(g['noise'])}) and alpha0 ({len(g['alpha0'])}): {s['n_hard']} runs. Soft IFCA "
            f"is run at every combination of temperature ({len(soft)} values), separation, noise "
            f"and alpha0, all at step size {s['lr_soft']:g}: {s['n_soft']} runs; so when the "
            "temperature is not 'hard' the step size is fixed at "
            f"{s['lr_soft']:g}.")
