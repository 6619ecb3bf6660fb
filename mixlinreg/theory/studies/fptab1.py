"""Study FPTAB1: Table 1 of the FPFC abstract, on Li et al.'s Synthetic data with 4 clusters.

What is measured
----------------
Per unit (a seed and a way of forming the clusters, ``cluster_choices``): one draw of
:func:`mixlinreg.synthetic.make_fedprox_synthetic` (``m`` devices in ``L`` clusters, softmax
labels of ``x`` in R^d over ``n_classes`` classes, power-law sizes, each device's samples split
into training and test) and seven methods on the training data, all with the multinomial
(softmax cross-entropy) loss, the same ridge ``l2`` and full-batch gradient steps:
LOCAL (:func:`~mixlinreg.baselines._federated.local_train`), FedAvg
(:func:`~mixlinreg.baselines._federated.fedavg`), Per-FedAvg, first order
(:func:`~mixlinreg.baselines._federated.per_fedavg`, one adaptation step), IFCA with ``k = L``
and random restarts kept by training loss (:func:`~mixlinreg.baselines._federated.ifca_weighted`),
CFL (:func:`mixlinreg.baselines.cfl`) and FPFC with the l1 and the SCAD penalty
(:func:`mixlinreg.baselines.fpfc`). Every device is served by its model (its cluster's for IFCA,
CFL and FPFC) and the metrics are the test accuracy (pooled: right predictions over all test
samples of all devices; the mean over devices is kept too), the number of clusters found (IFCA:
the non-empty ones) and the ARI against the true clusters (:func:`mixlinreg.metrics.adjusted_rand`).

The verdict (:func:`decide`, pure, on what :func:`measure` returns)
------------------------------------------------------------------
Per cluster choice, three rules; the choice's verdict is the weakest, the study's the weakest
over the choices (``Verdict.scope`` says where they differ):

(a) FPFC finds the clusters exactly: seeds with ``Num = L`` and ``ARI = 1``, Wilson interval:
    ``lo >= rate_target`` holds, ``hi < rate_floor`` not supported.
(b) the l1 penalty clusters and estimates worse: paired over seeds (bootstrap of the mean),
    ARI(FPFC) - ARI(FPFC-l1) and Acc(FPFC) - Acc(FPFC-l1): ``lo > margin`` holds, ``hi <= margin``
    not supported (``ari_margin``, ``acc_margin``); the weaker of the two, with a caveat when the
    l1 variant does not find more clusters (Num(l1) - Num(FPFC), ``lo <= 0``).
(c) the ordering of accuracies: FPFC beats every other method (every paired difference
    ``lo > acc_margin`` holds; some ``hi < -acc_margin`` not supported); a caveat when fewer than
    ``pair_share`` of the paper's 21 ordered pairs are confirmed.

The squared-loss analogue of the table is study FPSQ (``fpsq.py``), which reuses this machinery.

Config: ``mixlinreg/configs/studies/FPTAB1.toml``.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ...baselines import cfl, fpfc
from ...baselines._federated import fedavg, ifca_weighted, local_train, per_fedavg
from ...config import Spec
from ...metrics import adjusted_rand
from ...stats import (CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Fit, bootstrap, verdict_above,
                      wilson_interval)
from ...synthetic import CLUSTER_CHOICES, device_accuracy, make_fedprox_synthetic
from ..study import Decision, Study, Verdict, combine, with_margin
from ..words import sensitivity_lines, words

#: the study's prose: fptab1.md beside this module (FPSQ reuses its shared pieces)
WORDS = words(__file__)

#: the methods of Table 1, in the paper's row order
METHODS = ("LOCAL", "FedAvg", "Per-FedAvg", "IFCA", "CFL", "FPFC-l1", "FPFC")
#: the methods that cluster (Num and ARI reported)
CLUSTERING = ("IFCA", "CFL", "FPFC-l1", "FPFC")
_POS = dict(low=0, open="low")
_UNIT = dict(low=0, high=1, open="both")
#: the methods' settings, shared by FPTAB1 and FPSQ
METHOD_SCHEMA = {
    "methods": Spec("list[str]"), "l2": Spec("float", low=0), "lr": Spec("float", **_POS),
    "rounds": Spec("int", low=1), "local_steps": Spec("int", low=1),
    "pfa_alpha": Spec("float", **_POS), "pfa_beta": Spec("float", **_POS),
    "adapt_steps": Spec("int", low=0),
    "ifca_lr": Spec("float", **_POS), "ifca_iters": Spec("int", low=1),
    "ifca_restarts": Spec("int", low=1), "ifca_init_scale": Spec("float", **_POS),
    "cfl_eps1": Spec("float", **_POS), "cfl_eps2": Spec("float", **_POS),
    "cfl_max_rounds": Spec("int", low=1),
    "lam": Spec("float", **_POS), "a": Spec("float", low=2, open="low"),
    "xi": Spec("float", **_POS), "rho": Spec("float", **_POS), "nu": Spec("float", low=0),
    "seeds": Spec("int", low=2), "n_boot": Spec("int", low=100),
}
MARGINS_SCHEMA = {
    "rate_target": Spec("float", **_UNIT), "rate_target_neighbours": Spec("list[float]", **_UNIT),
    "rate_floor": Spec("float", **_UNIT), "rate_floor_neighbours": Spec("list[float]", **_UNIT),
    "ari_margin": Spec("float", low=0, high=1),
    "ari_margin_neighbours": Spec("list[float]", low=0, high=1),
    "acc_margin": Spec("float", low=0), "acc_margin_neighbours": Spec("list[float]", low=0),
    "pair_share": Spec("float", low=0, high=1),
    "pair_share_neighbours": Spec("list[float]", low=0, high=1),
}
REFERENCE_SCHEMA = {
    "source": Spec("str"), "methods": Spec("list[str]"), "acc": Spec("list[float]"),
    "acc_sd": Spec("list[float]", low=0), "cluster_methods": Spec("list[str]"),
    "num": Spec("list[float]", low=0), "num_sd": Spec("list[float]", low=0),
    "ari": Spec("list[float]", low=-1, high=1), "ari_sd": Spec("list[float]", low=0),
}
SCHEMA = {
    "params": {"m": Spec("int", low=2), "L": Spec("int", low=2), "d": Spec("int", low=1),
               "n_classes": Spec("int", low=2), "alpha": Spec("float", low=0),
               "beta": Spec("float", low=0), "test_fraction": Spec("float", **_UNIT),
               "size_cap": Spec("int", low=2), "cluster_choices": Spec("list[str]"),
               **METHOD_SCHEMA},
    "margins": MARGINS_SCHEMA, "reference": REFERENCE_SCHEMA,
}
#: the margins with neighbours, and the words of their sensitivity lines (fptab1.md)
MARGINS = WORDS.labels("sensitivity")


# ------------------------------------------------------------------------------ units


def check_methods(study_id, params):
    """Cross-field rules shared by FPTAB1 and FPSQ: known methods, no repeats, FPFC and FPFC-l1
    present, the reference's lists aligned, the rate floor below the target."""
    p, ref, mg = params["params"], params["reference"], params["margins"]
    bad = [x for x in p["methods"] if x not in METHODS]
    if bad or len(set(p["methods"])) != len(p["methods"]):
        raise ValueError(f"study {study_id}: params.methods must be distinct names among "
                         f"{list(METHODS)}, got {p['methods']}")
    if not {"FPFC", "FPFC-l1"} <= set(p["methods"]):
        raise ValueError(f"study {study_id}: params.methods must include 'FPFC' and 'FPFC-l1' "
                         f"(claims (a) and (b)), got {p['methods']}")
    if p["xi"] >= p["lam"]:
        raise ValueError(f"study {study_id}: params.xi must be in (0, lam) = (0, {p['lam']}), "
                         f"got {p['xi']}")
    if p["rho"] * (p["a"] - 1) <= 1:
        raise ValueError(f"study {study_id}: params.rho must exceed 1 / (a - 1) = "
                         f"{1 / (p['a'] - 1):.4g}, got {p['rho']}")
    for names, allowed in (("methods", METHODS), ("cluster_methods", CLUSTERING)):
        if any(x not in allowed for x in ref[names]) or len(set(ref[names])) != len(ref[names]):
            raise ValueError(f"study {study_id}: reference.{names} must be distinct names among "
                             f"{list(allowed)}, got {ref[names]}")
    for keys, names in ((("acc", "acc_sd"), "methods"), (("num", "num_sd", "ari", "ari_sd"),
                                                         "cluster_methods")):
        for k in keys:
            if len(ref[k]) != len(ref[names]):
                raise ValueError(f"study {study_id}: reference.{k} needs one value per "
                                 f"reference.{names} ({len(ref[names])}), got {len(ref[k])}")
    if mg["rate_floor"] > mg["rate_target"]:
        raise ValueError(f"study {study_id}: margins.rate_floor must be in [0, rate_target] = "
                         f"[0, {mg['rate_target']}], got {mg['rate_floor']}")


def units(params):
    """One unit per (seed, cluster choice); the config's cross-field rules checked first."""
    p = params["params"]
    check_methods("FPTAB1", params)
    bad = [c for c in p["cluster_choices"] if c not in CLUSTER_CHOICES]
    if bad or len(set(p["cluster_choices"])) != len(p["cluster_choices"]):
        raise ValueError(f"study FPTAB1: params.cluster_choices must be distinct names among "
                         f"{list(CLUSTER_CHOICES)}, got {p['cluster_choices']}")
    if p["L"] > p["m"]:
        raise ValueError(f"study FPTAB1: params.L must be in [2, m] = [2, {p['m']}], got {p['L']}")
    return [(f"seed{s:02d}_{c}", {"seed": s, "choice": c})
            for s in range(p["seeds"]) for c in p["cluster_choices"]]


# ------------------------------------------------------------------------------ the methods


def _timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def run_methods(X, y, n_samples, p, rng, loss, n_classes=None):
    """Every method of ``p["methods"]`` on one data set: ``{method: (models, labels, extra)}``
    with ``models`` one per device (m, d) or (m, d, C), ``labels`` the clusters found (None for
    the methods that do not cluster) and ``extra`` the run's diagnostics (``seconds`` among
    them). ``rng`` draws IFCA's restarts."""
    m = X.shape[0]
    kw = dict(loss=loss, n_classes=n_classes, n_samples=n_samples, l2=p["l2"])
    S, R, lr = p["local_steps"], p["rounds"], p["lr"]
    shape = (X.shape[2],) if n_classes is None else (X.shape[2], n_classes)
    out = {}
    for method in p["methods"]:
        if method == "LOCAL":
            res, sec = _timed(local_train, X, y, lr=lr, n_steps=R * S, **kw)
            out[method] = (res.theta, None, {})
        elif method == "FedAvg":
            res, sec = _timed(fedavg, X, y, lr=lr, local_steps=S, n_rounds=R, **kw)
            out[method] = (np.repeat(res.theta, m, axis=0), None, {})
        elif method == "Per-FedAvg":
            res, sec = _timed(per_fedavg, X, y, alpha=p["pfa_alpha"], beta=p["pfa_beta"],
                              local_steps=S, n_rounds=R, adapt_steps=p["adapt_steps"], **kw)
            out[method] = (res.theta, None, {})
        elif method == "IFCA":
            init = rng.normal(0.0, p["ifca_init_scale"], size=(p["ifca_restarts"], p["L"]) + shape)
            kw_i = {k: v for k, v in kw.items() if k != "n_classes"}
            res, sec = _timed(ifca_weighted, X, y, init, p["ifca_lr"], n_iter=p["ifca_iters"],
                              **kw_i)
            out[method] = (res.theta[res.labels], res.labels,
                           {"n_clusters": res.extra["n_clusters"]})
        elif method == "CFL":
            res, sec = _timed(cfl, X, y, lr=lr, local_steps=S, eps1=p["cfl_eps1"],
                              eps2=p["cfl_eps2"], max_rounds=p["cfl_max_rounds"], **kw)
            out[method] = (res.theta[res.labels], res.labels,
                           {"n_clusters": res.theta.shape[0],
                            "converged": float(res.extra["converged"]),
                            "rounds_run": res.n_rounds})
        else:  # FPFC and FPFC-l1
            res, sec = _timed(fpfc, X, y, lam=p["lam"], a=p["a"], xi=p["xi"], rho=p["rho"],
                              nu=p["nu"], lr=lr, local_steps=S, n_rounds=R,
                              penalty="l1" if method == "FPFC-l1" else "scad", **kw)
            obj = res.extra["objective"]
            tail = max(1, len(obj) // 10)
            out[method] = (res.theta[res.labels], res.labels,
                           {"n_clusters": res.extra["n_clusters"],
                            "objective_change": float(abs(obj[-1] - obj[-1 - tail])
                                                      / max(abs(obj[-1]), 1e-300))
                            if len(obj) > tail else np.nan,
                            "primal_residual": float(res.extra["history"][-1]),
                            "omega": res.extra["omega"].reshape(m, -1)})
        out[method][2]["seconds"] = sec
    return out


def method_rows(results, true_labels, score_of):
    """One row per method: ``score_of(models)`` (a dict of scores), ``num`` and ``ari`` (NaN
    for the methods that do not cluster) and the diagnostics."""
    rows = []
    for method, (models, labels, extra) in results.items():
        row = {"method": method, **score_of(models)}
        row["num"] = float(extra.get("n_clusters", np.nan)) if labels is not None else np.nan
        row["ari"] = float(adjusted_rand(true_labels, labels)) if labels is not None else np.nan
        for key in ("seconds", "objective_change", "primal_residual", "converged",
                    "rounds_run"):
            row[key] = float(extra.get(key, np.nan))
        row["omega_within"], row["omega_between"] = _spread(extra.get("omega"), true_labels)
        rows.append(row)
    return rows


def _spread(omega, true_labels):
    """Median ``||omega_i - omega_j||`` over pairs within and between true clusters (NaN
    without ``omega``): how far apart FPFC left the devices of one cluster."""
    if omega is None:
        return np.nan, np.nan
    i, j = np.triu_indices(len(true_labels), 1)
    dist = np.linalg.norm(omega[i] - omega[j], axis=1)
    same = true_labels[i] == true_labels[j]
    return (float(np.median(dist[same])) if same.any() else np.nan,
            float(np.median(dist[~same])) if (~same).any() else np.nan)


def compute(spec, params, rng, shared):
    p = params["params"]
    data = make_fedprox_synthetic(p["m"], p["L"], alpha=p["alpha"], beta=p["beta"], d=p["d"],
                                  n_classes=p["n_classes"], clusters=spec["choice"],
                                  test_fraction=p["test_fraction"], size_cap=p["size_cap"],
                                  rng=rng)
    results = run_methods(data.X, data.y, data.n_samples, p, rng, "multinomial",
                          p["n_classes"])

    def score_of(models):
        per_device, pooled = device_accuracy(models, data.X_test, data.y_test, data.n_test)
        return {"acc": pooled, "acc_device_mean": float(per_device.mean())}

    rows = method_rows(results, data.labels, score_of)
    return pd.DataFrame([{"seed": spec["seed"], "choice": spec["choice"], **r} for r in rows])


# ------------------------------------------------------------------------------ analysis


def paired_fit(diff, rng, n_boot):
    """Bootstrap of the mean of the paired differences ``diff`` (a constant gives its value)."""
    diff = np.asarray(diff, dtype=float)
    if np.all(diff == diff[0]):
        return Fit(float(diff[0]), float(diff[0]), float(diff[0]), diff.size)
    return bootstrap(diff, n_boot=n_boot, rng=rng)


def _by_seed(table, cond, method, col):
    t = table[(table["cond"] == cond) & (table["method"] == method)].sort_values("seed")
    return t[col].to_numpy(dtype=float)


#: the sign that makes larger better: accuracy as it is, an error negated
_SIGN = {"acc": 1, "err": -1}


def measure(table, params, rng, score="acc"):
    """The deciding measurements per condition (``table["cond"]``) from the unit rows: exact
    recoveries of FPFC, the paired FPFC - FPFC-l1 differences and the paired differences of every
    pair of the paper's order (``score``; negated first when lower is better). ``rng(name)``
    gives a bootstrap's generator."""
    p, ref = params["params"], params["reference"]
    L, nb = p["L"], p["n_boot"]
    order = [x for x in ref["methods"] if x in p["methods"]]
    out = {}
    for cond in dict.fromkeys(table["cond"]):
        sc = {x: _SIGN[score] * _by_seed(table, cond, x, score) for x in order}
        num = {x: _by_seed(table, cond, x, "num") for x in ("FPFC", "FPFC-l1")}
        ari = {x: _by_seed(table, cond, x, "ari") for x in ("FPFC", "FPFC-l1")}
        exact = int(np.sum((num["FPFC"] == L) & (ari["FPFC"] >= 1 - 1e-12)))
        pairs = {}
        for i, hi_m in enumerate(order):
            for lo_m in order[i + 1:]:
                pairs[(hi_m, lo_m)] = paired_fit(sc[hi_m] - sc[lo_m],
                                                 rng(f"{cond}_{hi_m}_{lo_m}"), nb)
        out[cond] = {
            "exact": (exact, int(num["FPFC"].size)),
            "d_ari": paired_fit(ari["FPFC"] - ari["FPFC-l1"], rng(f"{cond}_d_ari"), nb),
            "d_num": paired_fit(num["FPFC-l1"] - num["FPFC"], rng(f"{cond}_d_num"), nb),
            "d_acc": paired_fit(sc["FPFC"] - sc["FPFC-l1"], rng(f"{cond}_d_acc"), nb),
            "best": {o: f for (h, o), f in pairs.items() if h == "FPFC"}
            | {h: Fit(-f.est, -f.hi, -f.lo, f.n) for (h, o), f in pairs.items() if o == "FPFC"},
            "pairs": pairs,
        }
    return out


def decide(measurements, params):
    """The verdict from :func:`measure`'s ``{condition: {...}}`` and ``params["margins"]``
    (``rate_target``, ``rate_floor``, ``ari_margin``, ``acc_margin``, ``pair_share``): rules (a),
    (b), (c) of the module docstring per condition, the condition's verdict the weakest of them,
    the study's the weakest over conditions. ``numbers``: per condition the parts and what they
    were held to."""
    mg = params["margins"]
    per = {}
    for cond, ms in measurements.items():
        k, n = ms["exact"]
        lo, hi = wilson_interval(k, n)
        a = HOLDS if lo >= mg["rate_target"] else (NOT_SUPPORTED if hi < mg["rate_floor"]
                                                   else INCONCLUSIVE)
        b = combine([verdict_above(ms["d_ari"], mg["ari_margin"]),
                     verdict_above(ms["d_acc"], mg["acc_margin"])])
        oversplit = ms["d_num"].lo > 0
        if b == HOLDS and not oversplit:
            b = CAVEAT
        best = ms["best"]
        if all(f.lo > mg["acc_margin"] for f in best.values()):
            c = HOLDS
        elif any(f.hi < -mg["acc_margin"] for f in best.values()):
            c = NOT_SUPPORTED
        else:
            c = INCONCLUSIVE
        pairs = ms["pairs"]
        confirmed = sum(f.lo > mg["acc_margin"] for f in pairs.values())
        reversed_ = sum(f.hi < -mg["acc_margin"] for f in pairs.values())
        share = confirmed / max(len(pairs), 1)
        if c == HOLDS and share < mg["pair_share"]:
            c = CAVEAT
        per[cond] = {"a": a, "b": b, "c": c, "verdict": combine([a, b, c]),
                     "exact": (k, n), "exact_lo": float(lo), "exact_hi": float(hi),
                     "oversplit": bool(oversplit), "confirmed": int(confirmed),
                     "reversed": int(reversed_), "pairs": len(pairs), "share": share,
                     "beaten_by": [o for o, f in best.items() if f.hi < -mg["acc_margin"]]}
    verdict = combine([v["verdict"] for v in per.values()])
    return Decision(verdict, {**{k: mg[k] for k in MARGINS}, "conditions": per})


_at = with_margin  # params with one margin moved (study.with_margin; the tests use this name)


def sensitivity(measurements, params):
    """The study's verdict at every margin's neighbours (one line per margin)."""
    return sensitivity_lines(WORDS, params, lambda q, key: decide(measurements, q).verdict)


def scope_line(decision):
    per = decision.numbers["conditions"]
    verdicts = {c: v["verdict"] for c, v in per.items()}
    if len(set(verdicts.values())) <= 1:
        return ""
    return "; ".join(WORDS.text("scope", verdict=v, condition=c) for c, v in verdicts.items())


def _mean_sd_ci(values, rng, n_boot, fmt):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return ""
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    f = paired_fit(v, rng, n_boot) if v.size > 1 else Fit(v[0], v[0], v[0], 1)
    return f"{fmt(f.est)} ± {fmt(sd)} [{fmt(f.lo)}, {fmt(f.hi)}]"


def table1(table, params, rng, score="acc", score_fmt=None, score_word="Acc"):
    """Our Table 1 (mean ± sd over seeds [95% bootstrap interval]) beside the paper's, one row
    per (condition, method)."""
    p, ref = params["params"], params["reference"]
    fmt = score_fmt or (lambda x: f"{100 * x:.2f}")
    rows = []
    for cond in dict.fromkeys(table["cond"]):
        for method in [x for x in METHODS if x in p["methods"]]:
            t = table[(table["cond"] == cond) & (table["method"] == method)]
            row = {"cond": cond, "method": method,
                   score_word: _mean_sd_ci(t[score], rng(f"t1_{cond}_{method}_s"), p["n_boot"],
                                           fmt),
                   "Num": _mean_sd_ci(t["num"], rng(f"t1_{cond}_{method}_n"), p["n_boot"],
                                      lambda x: f"{x:.2f}"),
                   "ARI": _mean_sd_ci(t["ari"], rng(f"t1_{cond}_{method}_a"), p["n_boot"],
                                      lambda x: f"{x:.2f}")}
            row["paper"] = paper_cell(ref, method)
            rows.append(row)
    return pd.DataFrame(rows)


def paper_cell(ref, method):
    parts = []
    if method in ref["methods"]:
        i = ref["methods"].index(method)
        parts.append(f"Acc {ref['acc'][i]:.2f}% ± {ref['acc_sd'][i]:.2f}")
    if method in ref["cluster_methods"]:
        i = ref["cluster_methods"].index(method)
        parts.append(f"Num {ref['num'][i]:.2f} ± {ref['num_sd'][i]:.2f}; ARI {ref['ari'][i]:.2f} "
                     f"± {ref['ari_sd'][i]:.2f}")
    return "; ".join(parts)


def _ref(ref, method, key):
    """The paper's ``key`` of ``method`` from the config's reference (NaN where it has none)."""
    names = ref["methods"] if key in ("acc", "acc_sd") else ref["cluster_methods"]
    return ref[key][names.index(method)] if method in names else float("nan")


def numbers_frame(t1, decision, measurements, params, score_word="Acc", diff_fmt=None):
    """The record's numbers: Table 1 beside the paper's, then the claims' rows (the paper's
    side read from ``params["reference"]``)."""
    ref = params["reference"]
    dfmt = diff_fmt or (lambda f: f"{100 * f.est:.2f} [{100 * f.lo:.2f}, {100 * f.hi:.2f}] points")
    rows = [{"condition": r["cond"], "row": r["method"],
             "measured": "; ".join(f"{k} {r[k]}" for k in (score_word, "Num", "ARI") if r[k]),
             "paper": r["paper"], "verdict": ""} for _, r in t1.iterrows()]
    order = " > ".join(ref["methods"])
    paper_a = (f"{_ref(ref, 'FPFC', 'num'):.2f} ± {_ref(ref, 'FPFC', 'num_sd'):.2f} clusters, "
               f"ARI {_ref(ref, 'FPFC', 'ari'):.2f} ± {_ref(ref, 'FPFC', 'ari_sd'):.2f}")
    paper_b = "; ".join(f"{w} {_ref(ref, 'FPFC', k):.2f} vs {_ref(ref, 'FPFC-l1', k):.2f}"
                        for w, k in (("ARI", "ari"), ("Num", "num"), ("Acc %", "acc")))
    for cond, v in decision.numbers["conditions"].items():
        ms = measurements[cond]
        k, n = v["exact"]
        beats = sum(f.lo > decision.numbers["acc_margin"] for f in ms["best"].values())
        rows += [
            {"condition": cond, "row": "(a) FPFC: Num = L and ARI = 1",
             "measured": f"{k}/{n} seeds, Wilson [{v['exact_lo']:.2f}, {v['exact_hi']:.2f}]",
             "paper": paper_a, "verdict": v["a"]},
            {"condition": cond, "row": "(b) FPFC - FPFC-l1",
             "measured": (f"ARI {ms['d_ari'].fmt(3)}; {score_word} {dfmt(ms['d_acc'])}; "
                          f"Num(l1) - Num {ms['d_num'].fmt(3)}"),
             "paper": paper_b, "verdict": v["b"]},
            {"condition": cond, "row": "(c) ordering",
             "measured": (f"FPFC beats {beats}/{len(ms['best'])}; paper's pairs confirmed "
                          f"{v['confirmed']}/{v['pairs']}, reversed {v['reversed']}"),
             "paper": order, "verdict": v["c"]}]
    return pd.DataFrame(rows)


def _conditions(table):
    return table.assign(cond=table["choice"])


def summary_text(t1, decision, measurements, what, score_word="Acc", unit_of=None):
    per = decision.numbers["conditions"]
    parts = [what]
    for cond, v in per.items():
        k, n = v["exact"]
        rows = t1[t1["cond"] == cond].set_index("method")
        ours = ", ".join(WORDS.text("summary.ours", method=m,
                                    value=rows.loc[m, score_word].split(" [")[0])
                         for m in rows.index)
        beaten = (WORDS.text("summary.beaten", methods=", ".join(v["beaten_by"]))
                  if v["beaten_by"] else "")
        means = [f.est for f in measurements[cond]["best"].values()]
        if means and max(abs(x) for x in means) == 0.0:
            beaten += WORDS.text("summary.no ordering", score_word=score_word)
        parts.append(WORDS.text(
            "summary.condition", cond=cond, score_word=score_word, ours=ours, unit=unit_of or "",
            k=k, n=n, a=v["a"], d_ari=measurements[cond]["d_ari"].fmt(2),
            oversplit=v["oversplit"], b=v["b"], confirmed=v["confirmed"], pairs=v["pairs"],
            reversed=v["reversed"], beaten=beaten, c=v["c"]))
    return " ".join(parts)


def analyze(table, params, rng):
    table = _conditions(table)
    ms = measure(table, params, rng)
    decision = decide(ms, params)
    t1 = table1(table, params, rng)
    p = params["params"]
    summary = summary_text(t1, decision, ms, WORDS.text(
        "summary.what", alpha=p["alpha"], beta=p["beta"], m=p["m"], L=p["L"], seeds=p["seeds"]))
    return Verdict(decision.verdict, numbers_frame(t1, decision, ms, params), summary,
                   caveats=caveats(table, params), sensitivity=sensitivity(ms, params),
                   tables={"_table1.csv": t1}, scope=scope_line(decision))


def caveats(table, params):
    """FPTAB1's caveats: the data's and :func:`method_caveats`."""
    p = params["params"]
    return (WORDS.items("caveats", size_cap=p["size_cap"], test_fraction=p["test_fraction"])
            + method_caveats(table, params))


def method_caveats(table, params):
    """The budget and the diagnostics of FPFC and CFL, made from the rows."""
    p = params["params"]
    fp = table[table["method"].isin(["FPFC", "FPFC-l1"])]
    cf = table[table["method"] == "CFL"]
    out = WORDS.items("caveats.methods", rounds=p["rounds"], local_steps=p["local_steps"],
                      lr=p["lr"], local_total=p["rounds"] * p["local_steps"],
                      ifca_iters=p["ifca_iters"], ifca_restarts=p["ifca_restarts"],
                      cfl_max_rounds=p["cfl_max_rounds"], lam=p["lam"], rho=p["rho"],
                      nu=p["nu"])
    if len(fp):
        chg = fp.groupby("method")["objective_change"].median()
        out.append(WORDS.text("caveats.objective", changes=", ".join(
            WORDS.text("caveats.objective change", method=k, change=v) for k, v in chg.items())))
        sp = fp[fp["method"] == "FPFC"].groupby("cond")[["omega_within", "omega_between"]]
        out.append(WORDS.text(
            "caveats.omega", a_lam=p["a"] * p["lam"], nu=p["nu"], spreads="; ".join(
                WORDS.text("caveats.omega spread", cond=c, within=r["omega_within"],
                           between=r["omega_between"]) for c, r in sp.median().iterrows())))
    if len(cf):
        done = int(cf["converged"].sum())
        out.append(WORDS.text("caveats.cfl" if done < len(cf) else "caveats.cfl all final",
                              done=done, runs=len(cf)))
    return out


# ------------------------------------------------------------------------------ figure


def figure(table, verdict, params, score="acc", score_label="pooled test accuracy",
           scale=100.0):
    from matplotlib.figure import Figure

    table = _conditions(table)
    p, ref = params["params"], params["reference"]
    conds = list(dict.fromkeys(table["cond"]))
    methods = [x for x in METHODS if x in p["methods"]]
    clus = [x for x in CLUSTERING if x in methods]
    fig = Figure(figsize=(5.0 * len(conds), 9.0))
    axes = fig.subplots(3, len(conds), squeeze=False)
    for j, cond in enumerate(conds):
        t = table[table["cond"] == cond]
        for r, (col, ms, lab) in enumerate(((score, methods, score_label),
                                            ("num", clus, "clusters found"),
                                            ("ari", clus, "ARI"))):
            ax = axes[r, j]
            g = t.groupby("method")[col]
            mean, sd = g.mean().reindex(ms), g.std().reindex(ms)
            f = scale if col == score else 1.0
            ax.bar(range(len(ms)), f * mean, yerr=f * sd.fillna(0), color="C0", alpha=0.7,
                   label="measured (mean ± sd)")
            pv = _paper_values(ref, ms, col, score)
            if pv is not None:
                ax.plot(range(len(ms)), pv, "r*", ms=10, label="paper")
            ax.set_xticks(range(len(ms)), ms, rotation=30, fontsize=8)
            ax.set_ylabel(lab)
            if r == 0:
                ax.set_title(f"{cond}", fontsize=9)
            if col == "num":
                ax.axhline(p["L"], color="k", lw=0.8, ls=":")
                ax.set_yscale("log")
            ax.legend(fontsize=7)
    fig.suptitle(f"verdict: {verdict.verdict}", fontsize=10)
    fig.tight_layout()
    return fig


def _paper_values(ref, ms, col, score):
    if col == score and score == "acc":
        return [ref["acc"][ref["methods"].index(x)] if x in ref["methods"] else np.nan
                for x in ms]
    if col in ("num", "ari"):
        return [ref[col][ref["cluster_methods"].index(x)] if x in ref["cluster_methods"]
                else np.nan for x in ms]
    return None


STUDY = Study(
    id="FPTAB1", order=300, paper="FPFC", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=decide)
