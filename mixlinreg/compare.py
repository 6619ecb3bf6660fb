"""IFCA against the baselines on a table of scenarios: ``mixlinreg compare``.

For every scenario (a mixture of linear regressions) and every data seed, each method is run on the
same data and scored against the truth:

* ``dist_matched``: mean distance between the method's models and the true parameters under the
  best one-to-one matching (:func:`mixlinreg.dist_matched`; when the number of models differs from
  ``k_true`` only ``min(k', k_true)`` pairs are matched and averaged, which flatters methods with
  fewer models than clusters, e.g. ``global``);
* ``machine_dist``: mean over machines of ``||theta[label_i] - theta*_{true_i}||``, the error of the
  model each machine actually uses (fair to every method, whatever its number of models);
* ``ari``: adjusted Rand index of the method's labels against the true ones;
* ``clusters_found``: models serving at least one machine; ``empty_clusters``: models serving none;
* ``wall_time_s``, ``n_rounds``, ``floats_sent_per_machine`` (each method's protocol, below);
* ``status``: ``ok``, ``skipped: <reason>`` or ``error: <exception>``; a method that raises or
  does not apply is recorded, never stops the comparison. ``note`` holds warnings and settings.

Methods and their settings (all derived from the scenario, some tuned with the true separation
``Delta = min_{j != l} ||theta*_j - theta*_l||``, which favours the baselines that need it):

* ``ifca``: :class:`mixlinreg.IFCA` with ``n_init`` Bernoulli initializations x the paper's step
  sizes ({1, 0.1, 0.01} when ``k_fit == 2``, {2, 1, 0.5} otherwise, as for k = 4 in Figure 2),
  ``n_iter`` iterations, the run with the lowest training loss kept. ``n_rounds`` = iterations of
  the kept run. Communication convention: per round a machine receives the ``k`` models (``k d``)
  and sends one gradient (``d``), ``(k + 1) d`` floats; the restarts run side by side in the same
  rounds, so ``floats_sent_per_machine = (k + 1) d n_rounds n_runs`` with ``n_runs = n_init x 3``.
* ``ifca_shared``: the same with weight sharing (``IFCA(shared=...)``) on the coordinates the
  scenario's true models share (scenario ``shared_90``; skipped elsewhere: no coordinates are
  known to be shared). Floats per round: the k own parts and one shared part received, one
  gradient sent.
* ``oracle``, ``global``, ``local``, ``one_shot`` (k-means with ``k_fit`` clusters): see
  :mod:`mixlinreg.baselines`.
* ``soft_ifca``: temperature ``sigma^2 + 0.01`` (the loss of the right model, plus a floor), one
  Bernoulli initialization x the same step sizes, ``soft_iter`` iterations (pure NumPy, so fewer
  than IFCA's in the quick preset), lowest final loss kept; floats ``2 k d`` per
  round per run (its docstring), times the runs.
* ``cfl``: local step ``0.5 / (1 + sqrt(d / n))^2`` (stable for one machine's Gram matrix),
  ``eps2 = 0.5 lr Delta`` (half the update of a balanced two-cluster group at its mean),
  ``eps1 = 0.01 eps2``.
* ``fpfc``: ``lam = Delta / (2 a)`` (``a = 3.7``), ``xi = lam / 20``, ``nu = lam / 2``; skipped
  when ``m (m - 1) / 2 * d`` exceeds ``fpfc_max_pair_floats`` (its memory is O(m^2 d)).

Seeds: the data of scenario ``i``, seed ``s`` come from ``SeedSequence(seed, spawn_key=(i, s))``;
method ``j`` (its index in :data:`METHOD_NAMES`) draws from ``SeedSequence(seed,
spawn_key=(i, s, j))``, a child of the data seed. BLAS runs single-threaded during the
comparison (``threadpoolctl``), so the timings are of one BLAS thread (IFCA's numba kernel keeps
its own threads). Rows are the same for the same seed whatever
the order of the work, except ``wall_time_s``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from . import baselines
from ._validation import check_choice, check_int
from .data import Trial, draw_trial, init_bernoulli, make_mixture
from .estimator import IFCA
from .config import PRESETS
from .metrics import adjusted_rand, dist_matched

__all__ = ["Scenario", "PRESETS", "METHOD_NAMES", "METHODS", "scenarios", "run_compare",
           "summarize", "markdown_table", "plot_compare", "write_outputs", "ROW_COLUMNS"]


@dataclass(frozen=True)
class Scenario:
    """One mixture of linear regressions and the number of clusters IFCA is told (``k_fit``)."""

    name: str
    m: int
    n: int
    d: int
    k_true: int
    R: float
    sigma: float
    theta_scale: str = "code"
    sizes: tuple | None = None
    k_fit: int | None = None
    notes: str = ""
    methods: tuple | None = None  # None: every method; else the others are recorded as skipped
    n_shared: int = 0  # the last n_shared coordinates are equal in every true model

    @property
    def k(self) -> int:
        return self.k_true if self.k_fit is None else self.k_fit

    def as_dict(self):
        return {"name": self.name, "m": self.m, "n": self.n, "d": self.d, "k_true": self.k_true,
                "R": self.R, "sigma": self.sigma, "theta_scale": self.theta_scale,
                "sizes": None if self.sizes is None else list(self.sizes), "k_fit": self.k,
                "notes": self.notes, **({"n_shared": self.n_shared} if self.n_shared else {})}

    @property
    def shared(self):
        """The coordinates every true model shares (the last ``n_shared``), as indices."""
        return np.arange(self.d - self.n_shared, self.d)


# methods that use k (the misspecified-k scenarios run only these, plus the oracle as a yardstick)
_K_METHODS = ("ifca", "ifca_shared", "oracle", "one_shot", "soft_ifca")


def _sizes(m, fractions):
    s = [int(round(f * m)) for f in fractions]
    s[0] += m - sum(s)
    return tuple(s)


def _build(m, n, d, m4, n_small, R, R_small, sigma, scale):
    """The issue's scenario list at one size: m (k = 2, 3), m4 (k = 4), n (main), n_small (n < d)."""
    base = dict(n=n, d=d, R=R, sigma=sigma, theta_scale=scale)
    out = [
        Scenario("fig2_k2", m=m, k_true=2, notes="Figure 2(a) setting", **base),
        Scenario("fig2_k4", m=m4, k_true=4, notes="Figure 2(b) setting", **base),
        Scenario("unequal_70_20_10", m=m, k_true=3, sizes=_sizes(m, (0.7, 0.2, 0.1)),
                 notes="cluster sizes 0.7 / 0.2 / 0.1", **base),
        Scenario("small_sep", m=m, k_true=2, n=n, d=d, R=R_small, sigma=sigma, theta_scale=scale,
                 notes=f"R = {R_small} instead of {R}"),
    ]
    for kt, mm in ((2, m), (4, m4)):
        for kf in (3, 5):
            out.append(Scenario(f"k{kt}_fit{kf}", m=mm, k_true=kt, k_fit=kf, methods=_K_METHODS,
                                notes=f"k misspecified: {kf} models fitted on {kt} true clusters",
                                **base))
    out.append(Scenario("n_lt_d", m=m, n=n_small, d=d, k_true=2, R=R, sigma=sigma,
                        theta_scale=scale, notes=f"n = {n_small} < d = {d}"))
    own = max(2, d // 10)
    out.append(Scenario("shared_90", m=m, k_true=2, n_shared=d - own,
                        notes=f"true models equal on the last {d - own} of {d} coordinates "
                              f"(weight sharing's setting)", **base))
    return out


def _shared_mixture(sc, rng):
    """The data of a scenario whose true models share their last ``n_shared`` coordinates: the
    trial of :func:`mixlinreg.make_mixture` (same draws), with the 0/1 patterns made equal on the
    shared coordinates (cluster 0's) and complementary on the own ones (so the k = 2 models differ
    in every own coordinate; the first two own ones are fixed to 1/0 and 0/1 so that no pattern is
    all zero)."""
    if sc.k_true != 2:
        raise ValueError(f"a shared-coordinate scenario needs k_true = 2, got {sc.k_true}")
    trial = draw_trial(sc.m, sc.n, sc.d, 2, sizes=None if sc.sizes is None else list(sc.sizes),
                       rng=rng)
    B = trial.B.copy()
    own = np.arange(sc.d - sc.n_shared)
    B[1, own] = 1 - B[0, own]
    B[:, own[:2]] = [[1, 0], [0, 1]]
    B[1, sc.shared] = B[0, sc.shared]
    return Trial(X=trial.X, B=B, z=trial.z, labels=trial.labels).mixture(sc.R, sc.sigma,
                                                                         sc.theta_scale)


def _schema():
    from ._validation import PARAMETERS as P  # the API's bounds for what feeds IFCA
    from .config import Spec

    return {"scenarios": {"m": Spec("int", low=2), "m4": Spec("int", low=4), "n": Spec("int", low=1),
                          "n_small": Spec("int", low=1), "d": Spec("int", low=1),
                          "R": Spec("float", low=0, open="low"),
                          "R_small": Spec("float", low=0, open="low"), "sigma": Spec("float", low=0),
                          "theta_scale": Spec("str", choices=("code", "norm")),
                          "only": Spec("list[str]", required=False, default=None)},
            "protocol": {"n_seeds": Spec("int", low=1), "n_init": Spec.of(P["n_init"]),
                         "n_iter": Spec.of(P["n_iter"]), "early_stop": Spec.of(P["early_stop"]),
                         "soft_iter": Spec("int", low=1), "fpfc_rounds": Spec("int", low=1),
                         "fpfc_max_pair_floats": Spec("float", low=1)}}




def load_preset(preset, path=None):
    """``(scenarios, protocol)`` of a preset of ``mixlinreg/configs/compare.toml`` (or ``path``)."""
    from . import config

    cfg = config.load(path or "compare", preset, kind="compare", schema=_schema())
    sc = dict(cfg["scenarios"])
    only = sc.pop("only")
    scale = sc.pop("theta_scale")
    built = _build(**sc, scale=scale)
    if only is not None:
        names = [s.name for s in built]
        bad = [o for o in only if o not in names]
        if bad:
            raise ValueError(f"config {cfg.path}: scenarios.only must name scenarios among {names}, "
                             f"got {bad}")
        built = [s for s in built if s.name in only]
    return built, dict(cfg["protocol"])


def scenarios(preset):
    """The scenario list of a preset (a list of :class:`Scenario`)."""
    check_choice("preset", preset, PRESETS)
    return load_preset(preset)[0]


def _steps(k):
    return [1.0, 0.1, 0.01] if k == 2 else [2.0, 1.0, 0.5]


class _Skip(Exception):
    """A method that does not apply to a scenario."""


# ----------------------------------------------------------------------------------- methods
# each takes (mix, sc, proto, ss) and returns (BaselineResult-like, note)

def _ifca(mix, sc, proto, ss):
    steps = _steps(sc.k)
    est = IFCA(n_clusters=sc.k, lr=steps, n_init=proto["n_init"], n_iter=proto["n_iter"],
               early_stop=proto["early_stop"], tol=1e-7, random_state=np.random.default_rng(ss))
    est.fit(mix.X, mix.y)
    n_runs = proto["n_init"] * len(steps)
    res = baselines.BaselineResult(
        theta=est.coef_, labels=est.labels_, n_rounds=est.n_iter_,
        floats_sent_per_machine=float((sc.k + 1) * sc.d * est.n_iter_ * n_runs),
        extra={"loss": est.loss_, "lr": est.lr_})
    n_div = int(est.result_.diverged.sum())
    return res, f"lr={est.lr_:g}, {n_runs} runs, {n_div} diverged"


def _ifca_shared(mix, sc, proto, ss):
    if not sc.n_shared:
        raise _Skip("the scenario has no coordinates known to be shared")
    steps = _steps(sc.k)
    est = IFCA(n_clusters=sc.k, lr=steps, n_init=proto["n_init"], n_iter=proto["n_iter"],
               early_stop=proto["early_stop"], tol=1e-7, random_state=np.random.default_rng(ss),
               shared=sc.shared)
    est.fit(mix.X, mix.y)
    n_runs = proto["n_init"] * len(steps)
    own = sc.d - sc.n_shared
    # per round a machine receives k own parts and one shared part, sends one gradient (d)
    floats = float((sc.k * own + sc.n_shared + sc.d) * est.n_iter_ * n_runs)
    res = baselines.BaselineResult(theta=est.coef_, labels=est.labels_, n_rounds=est.n_iter_,
                                   floats_sent_per_machine=floats,
                                   extra={"loss": est.loss_, "lr": est.lr_})
    n_div = int(est.result_.diverged.sum())
    return res, f"lr={est.lr_:g}, {n_runs} runs, {n_div} diverged, {sc.n_shared} shared coordinates"


def _oracle(mix, sc, proto, ss):
    return baselines.oracle(mix.X, mix.y, mix.labels), ""


def _global(mix, sc, proto, ss):
    return baselines.global_model(mix.X, mix.y), ""


def _local(mix, sc, proto, ss):
    return baselines.local_models(mix.X, mix.y), ("minimum-norm (n < d)" if sc.n < sc.d else "")


def _one_shot(mix, sc, proto, ss):
    return baselines.one_shot(mix.X, mix.y, sc.k, rng=np.random.default_rng(ss)), ""


def _soft_ifca(mix, sc, proto, ss):
    temp = sc.sigma ** 2 + 0.01
    steps = _steps(sc.k)
    init = init_bernoulli(1, sc.k, sc.d, rng=np.random.default_rng(ss))[0]
    best, total = None, 0.0
    for lr in steps:
        r = baselines.soft_ifca(mix.X, mix.y, init, lr, temperature=temp,
                                 n_iter=proto["soft_iter"])
        total += r.floats_sent_per_machine
        if r.extra["diverged"] or not np.isfinite(r.extra["loss"]):
            continue
        if best is None or r.extra["loss"] < best[0].extra["loss"]:
            best = (r, lr)
    if best is None:
        raise RuntimeError(f"every soft IFCA run diverged (steps {steps})")
    r, lr = best
    res = baselines.BaselineResult(theta=r.theta, labels=r.labels, n_rounds=r.n_rounds,
                                   floats_sent_per_machine=total, extra=r.extra)
    return res, f"temperature={temp:g}, lr={lr:g}, {len(steps)} runs"


def _separation(mix):
    sep = float(mix.separation)
    if not sep > 0:
        raise _Skip("two true parameters coincide (separation 0); thresholds undefined")
    return sep


def _cfl(mix, sc, proto, ss):
    lr = 0.5 / (1.0 + math.sqrt(sc.d / sc.n)) ** 2
    eps2 = 0.5 * lr * _separation(mix)
    res = baselines.cfl(mix.X, mix.y, lr=lr, eps1=0.01 * eps2, eps2=eps2, max_rounds=500)
    return res, (f"lr={lr:.3g}, eps2={eps2:.3g}, {len(res.extra['splits'])} splits, "
                 f"converged={res.extra['converged']}")


def _fpfc(mix, sc, proto, ss):
    pair = sc.m * (sc.m - 1) // 2 * sc.d
    if pair > proto["fpfc_max_pair_floats"]:
        raise _Skip(f"m(m-1)/2*d = {pair:.3g} > {proto['fpfc_max_pair_floats']:.3g} "
                    "(FPFC memory is O(m^2 d))")
    a = 3.7
    lam = _separation(mix) / (2 * a)
    res = baselines.fpfc(mix.X, mix.y, lam=lam, a=a, xi=lam / 20, nu=lam / 2,
                         n_rounds=proto["fpfc_rounds"], rng=np.random.default_rng(ss),
                         max_pair_floats=proto["fpfc_max_pair_floats"])
    return res, f"lam={lam:.3g}, {res.extra['n_clusters']} clusters, diverged={res.extra['diverged']}"


#: method name -> runner; the order fixes each method's seed index
METHODS = {"ifca": _ifca, "ifca_shared": _ifca_shared, "oracle": _oracle, "global": _global, "local": _local,
           "one_shot": _one_shot, "soft_ifca": _soft_ifca, "cfl": _cfl, "fpfc": _fpfc}
METHOD_NAMES = tuple(METHODS)

ROW_COLUMNS = ["scenario", "seed", "method", "k_true", "k_fit", "dist_matched", "machine_dist",
               "ari", "clusters_found", "empty_clusters", "n_models", "wall_time_s", "n_rounds",
               "floats_sent_per_machine", "status", "note"]


def _score(res, mix):
    theta = np.asarray(res.theta, dtype=np.float64)
    labels = np.asarray(res.labels, dtype=np.int64)
    used = np.bincount(labels, minlength=theta.shape[0])
    found = int(np.count_nonzero(used))
    per_machine = np.linalg.norm(theta[labels] - mix.theta_star[mix.labels], axis=1)
    return {"dist_matched": float(dist_matched(theta, mix.theta_star)),
            "machine_dist": float(np.mean(per_machine)),
            "ari": float(adjusted_rand(mix.labels, labels)),
            "clusters_found": found, "empty_clusters": int(theta.shape[0] - found),
            "n_models": int(theta.shape[0]), "n_rounds": int(res.n_rounds),
            "floats_sent_per_machine": float(res.floats_sent_per_machine)}


def _run_one(name, fn, mix, sc, proto, ss):
    row = {k: np.nan for k in ("dist_matched", "machine_dist", "ari", "clusters_found",
                               "empty_clusters", "n_models", "n_rounds",
                               "floats_sent_per_machine", "wall_time_s")}
    if sc.methods is not None and name not in sc.methods:
        row.update(status="skipped: does not use k (same data model as the correctly "
                          "specified scenario)", note="")
        return row
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res, note = fn(mix, sc, proto, ss)
        row["wall_time_s"] = time.perf_counter() - t0
        row.update(_score(res, mix))
        warns = sorted({f"{w.category.__name__}: {str(w.message)[:80]}" for w in caught})
        row.update(status="ok", note="; ".join([note] + warns).strip("; "))
    except _Skip as exc:
        row.update(status=f"skipped: {exc}", note="")
    except Exception as exc:  # noqa: BLE001 - recorded in the row, by design
        row["wall_time_s"] = time.perf_counter() - t0
        row.update(status=f"error: {type(exc).__name__}: {str(exc)[:200]}", note="")
    return row


def _warm_up():
    """Compile (or load from the numba cache) the IFCA kernel before anything is timed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2-iteration fits: empty models are expected
        mix = make_mixture(8, 12, 3, 2, 1.0, 0.1, rng=0)
        IFCA(n_clusters=2, n_init=1, n_iter=2, random_state=0).fit(mix.X, mix.y)
        mix = make_mixture(8, 2, 3, 2, 1.0, 0.1, rng=0)
        IFCA(n_clusters=2, n_init=1, n_iter=2, random_state=0).fit(mix.X, mix.y)


def run_compare(preset="smoke", *, n_seeds=None, seed=0, scenario_list=None, progress=None,
                store=None, n_jobs=1, backend="loky", scheduler=None):
    """Run every method on every scenario and data seed; returns the rows (a DataFrame).

    The work runs on the one runner (:func:`mixlinreg.runner.run`), one unit per scenario and data
    seed: ``store`` is a folder for resumable results (checksummed units, claimable by several
    processes; a rerun reads finished units back instead of recomputing them; ``None`` keeps
    nothing), ``n_jobs`` local worker processes, or ``backend="dask"`` with ``scheduler`` (an
    address or a ``dask.distributed.Client``). The rows do not depend on any of it. ``progress``:
    a callable, called once per row (fit) as units finish, or a bool (a progress bar of units).
    """
    check_choice("preset", preset, PRESETS)
    built, proto = load_preset(preset)
    if scenario_list is None:
        scenario_list = built
    if n_seeds is not None:
        proto["n_seeds"] = check_int("n_seeds", n_seeds, low=1)
    from .runner import run

    wl = workload(preset, scenario_list, proto, seed)
    def per_fit(unit, info, fits=len(METHODS)):
        for _ in range(fits):
            progress(unit)

    on_unit = per_fit if callable(progress) else None
    rows, _ = run(wl, store, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                  progress=bool(progress) and not callable(progress), on_unit=on_unit,
                  desc=f"compare/{preset}")
    if not rows:
        return pd.DataFrame(columns=ROW_COLUMNS)
    df = pd.concat(list(rows.values()), ignore_index=True)[ROW_COLUMNS]
    for col in ("status", "note"):
        df[col] = df[col].fillna("").astype(str)
    return df


def _key(name):
    return zlib.crc32(name.encode())


def workload(preset, scenario_list, proto, seed=0):
    """``compare`` as a :class:`~mixlinreg.runner.Workload`: one unit ``<scenario>_s<seed>`` per
    scenario and data seed, seeded by ``SeedSequence(seed, spawn_key=(crc32(scenario), s))`` (each
    method's stream extends that key by ``crc32(method)``). The store key holds the preset, the
    root seed, the protocol without ``n_seeds``, the scenarios and the methods, so more seeds reuse
    the finished ones; a unit must hold one row per method. A store made before the methods
    were part of the key is migrated (its units are checked for one row per method)."""
    from .runner import Numbered, Workload

    key = {"preset": preset, "seed": int(seed),
           "protocol": {k: v for k, v in proto.items() if k != "n_seeds"},
           "scenarios": [sc.as_dict() for sc in scenario_list]}
    former = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    key["methods"] = list(METHODS)  # a method added or removed is another store
    units = Numbered([f"{sc.name}_s" for sc in scenario_list], proto["n_seeds"])
    by_unit = units.mapping(scenario_list)  # unit -> (scenario, seed), made on demand
    return Workload(name="compare", preset=preset, key=key, units=units,
                    compute=partial(_compute_unit, by_unit, proto),
                    seed=int(seed), seed_key=partial(_seed_key, by_unit),
                    rows=partial(_rows_per_unit, len(METHODS)),
                    to_csv_kw=dict(float_format="%.17g"),
                    former=((f"compare-{preset}-{former[:12]}", former),))


def _rows_per_unit(n_methods, unit):
    return n_methods


def _seed_key(by_unit, unit):
    sc, s = by_unit[unit]
    return (_key(sc.name), s)


_WARMED = []


def _compute_unit(by_unit, proto, unit, data_ss):
    """Every method on one scenario and data seed (BLAS single-threaded: the runner's workers)."""
    from threadpoolctl import threadpool_limits

    if not _WARMED:
        _warm_up()
        _WARMED.append(True)
    sc, s = by_unit[unit]
    with threadpool_limits(limits=1, user_api="blas"):
        if sc.n_shared:
            mix = _shared_mixture(sc, data_ss)
        else:
            mix = make_mixture(sc.m, sc.n, sc.d, sc.k_true, sc.R, sc.sigma,
                               theta_scale=sc.theta_scale,
                               sizes=None if sc.sizes is None else list(sc.sizes), rng=data_ss)
        rows = []
        for name in METHODS:
            # streams keyed by names (scenario, method), never by position in a list
            ss = np.random.SeedSequence(data_ss.entropy, spawn_key=tuple(data_ss.spawn_key)
                                        + (_key(name),))
            row = _run_one(name, METHODS[name], mix, sc, proto, ss)
            row.update(scenario=sc.name, seed=s, method=name, k_true=sc.k_true, k_fit=sc.k)
            rows.append(row)
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


#: how the 95% intervals of the comparison tables are computed (said in every table)
INTERVAL_METHOD = ("95% bootstrap percentile interval of the mean over seeds (scipy.stats.bootstrap, "
                   "9999 resamples, fixed seed); it stays inside the range of the observed values, "
                   "so non-negative quantities never get negative bounds, but with few seeds it is "
                   "too narrow")


def _mean_interval(x):
    """Mean and 95% bootstrap percentile interval of the finite values of ``x``.

    A percentile interval of the mean lies between the smallest and largest observation, so it
    respects the range of the quantity (a t-interval of two non-negative values can go below 0).
    One value: no interval (nan); identical values: the degenerate interval [v, v].
    """
    from .stats import bootstrap

    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.nan, np.nan, np.nan
    mean = float(x.mean())
    if x.size == 1:
        return mean, np.nan, np.nan
    if np.all(x == x[0]):
        return mean, mean, mean
    fit = bootstrap(x, np.mean, n_boot=9999, confidence=0.95, rng=0)
    return mean, fit.lo, fit.hi


SUMMARY_METRICS = ("dist_matched", "machine_dist", "ari", "clusters_found", "empty_clusters",
                   "wall_time_s", "n_rounds", "floats_sent_per_machine")


def summarize(rows):
    """Per (scenario, method): mean and 95% bootstrap percentile interval over the seeds of each
    metric (see :data:`INTERVAL_METHOD`), and the
    proportion of seeds with ARI == 1 with its Wilson interval. Only ``ok`` rows count."""
    from .stats import wilson_interval

    out = []
    for (sc, method), g in rows.groupby(["scenario", "method"], sort=False):
        ok = g[g["status"] == "ok"]
        rec = {"scenario": sc, "method": method, "n_seeds": len(g), "n_ok": len(ok),
               "status": "ok" if len(ok) == len(g) else
               "; ".join(sorted(set(g.loc[g["status"] != "ok", "status"])))}
        for col in SUMMARY_METRICS:
            rec[col], rec[col + "_lo"], rec[col + "_hi"] = _mean_interval(ok[col])
        if len(ok):
            hits = int(np.sum(np.isclose(ok["ari"], 1.0)))
            lo, hi = wilson_interval(hits, len(ok))
            rec.update(p_ari1=hits / len(ok), p_ari1_lo=float(lo), p_ari1_hi=float(hi))
        else:
            rec.update(p_ari1=np.nan, p_ari1_lo=np.nan, p_ari1_hi=np.nan)
        out.append(rec)
    return pd.DataFrame(out)


def _fmt(v):
    if not np.isfinite(v):
        return "nan"
    if v == 0:
        return "0"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.1e}"


def markdown_table(summary):
    """Scenario x method: mean dist_matched [95% interval] and mean ARI; then IFCA's clusters."""
    methods = list(dict.fromkeys(summary["method"]))
    head = "| scenario | " + " | ".join(methods) + " |"
    lines = [head, "|" + "---|" * (len(methods) + 1)]
    for sc, g in summary.groupby("scenario", sort=False):
        cells = []
        for mth in methods:
            r = g[g["method"] == mth]
            if r.empty:
                cells.append("")
                continue
            r = r.iloc[0]
            if r["n_ok"] == 0:
                cells.append(r["status"].split(":")[0])
                continue
            ci = ("" if not np.isfinite(r["dist_matched_lo"]) else
                  f" [{_fmt(r['dist_matched_lo'])}, {_fmt(r['dist_matched_hi'])}]")
            cells.append(f"{_fmt(r['dist_matched'])}{ci}; ARI {r['ari']:.2f}")
        lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    lines += ["", "Clusters found / empty models (mean over seeds), wall time and traffic:", "",
              "| scenario | method | clusters found | empty | machine dist | P(ARI = 1) [Wilson] "
              "| wall s | rounds | floats / machine |",
              "|---|---|---|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        if r["n_ok"] == 0:
            continue
        lines.append(
            f"| {r['scenario']} | {r['method']} | {_fmt(r['clusters_found'])} | "
            f"{_fmt(r['empty_clusters'])} | {_fmt(r['machine_dist'])} | "
            f"{r['p_ari1']:.2f} [{r['p_ari1_lo']:.2f}, {r['p_ari1_hi']:.2f}] | "
            f"{_fmt(r['wall_time_s'])} | {_fmt(r['n_rounds'])} | "
            f"{_fmt(r['floats_sent_per_machine'])} |")
    return "\n".join(lines)


def plot_compare(rows):
    """dist_matched per method (points per seed, mean marked), one facet per scenario."""
    import seaborn as sns
    from matplotlib.figure import Figure

    ok = rows[(rows["status"] == "ok") & np.isfinite(rows["dist_matched"])].copy()
    scen = list(dict.fromkeys(rows["scenario"]))
    methods = list(METHODS) if set(rows["method"]) <= set(METHODS) else \
        list(dict.fromkeys(rows["method"]))
    ncol = min(3, len(scen))
    nrow = math.ceil(len(scen) / ncol)
    fig = Figure(figsize=(4.6 * ncol, 3.4 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    positive = ok["dist_matched"] > 0
    floor = float(ok.loc[positive, "dist_matched"].min()) if positive.any() else 1e-12
    ok["dist_plot"] = ok["dist_matched"].clip(lower=floor)
    use_log = len(ok) and ok["dist_plot"].max() / ok["dist_plot"].min() > 50
    with sns.axes_style("whitegrid"):
        for ax, sc in zip(axes, scen):
            g = ok[ok["scenario"] == sc]
            if len(g):
                sns.stripplot(data=g, x="method", y="dist_plot", order=methods, hue="method",
                              hue_order=methods, legend=False, ax=ax, size=4, alpha=0.7)
                sns.pointplot(data=g, x="method", y="dist_plot", order=methods, ax=ax,
                              color="black", markers="_", linestyles="none", errorbar=None)
            if use_log:
                ax.set_yscale("log")
            ax.set_title(sc, fontsize=10)
            ax.set_xlabel("")
            ax.set_ylabel("dist_matched")
            ax.tick_params(axis="x", labelrotation=60, labelsize=8)
        for ax in axes[len(scen):]:
            ax.set_visible(False)
    fig.suptitle("dist_matched per method and seed (black: mean; missing: skipped/failed)")
    return fig


def write_outputs(rows, out_dir, preset):
    """Write the rows, the summary, the markdown table and the figure; returns (summary, md, paths)."""
    from ._paths import atomic_write, save_png

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    md = markdown_table(summary)
    built, proto = load_preset(preset)
    paths = [out / f"compare_{preset}.csv", out / f"compare_{preset}_summary.csv",
             out / f"compare_{preset}.md", out / f"compare_{preset}.png"]
    atomic_write(paths[0], rows.to_csv(index=False, float_format="%.6g"))
    atomic_write(paths[1], summary.to_csv(index=False, float_format="%.6g"))
    scen_lines = [f"- `{s.name}`: m={s.m}, n={s.n}, d={s.d}, k_true={s.k_true}, k_fit={s.k}, "
                  f"R={s.R}, sigma={s.sigma}, theta_scale={s.theta_scale}"
                  + (f", sizes={list(s.sizes)}" if s.sizes else "") + f" ({s.notes})"
                  for s in built if s.name in set(rows["scenario"])]
    text = (f"# mixlinreg compare, preset `{preset}`\n\n"
            f"Cells: mean dist_matched [{INTERVAL_METHOD}]; mean ARI. Protocol: {proto}.\n\n"
            + md + "\n\nScenarios:\n\n" + "\n".join(scen_lines) + "\n")
    atomic_write(paths[2], text)
    save_png(plot_compare(rows), paths[3], dpi=110)
    return summary, md, paths
