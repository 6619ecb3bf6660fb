"""Study FPSQ: the squared-loss analogue of the FPFC abstract's Table 1 (study FPTAB1).

What is measured
----------------
Per seed (a unit): a mixture of linear regressions (:func:`mixlinreg.make_mixture`, ``m``
machines in ``L`` clusters of equal size, ``n`` rows each, ``x ~ N(0, I_d)``,
``y = <x, theta*_j> + sigma z``, ``||theta*_j|| = R``) and the seven methods of FPTAB1
(:func:`mixlinreg.theory.studies.fptab1.run_methods`) with the squared loss
``(1/n) ||X_i w - y_i||^2 + (l2/2) ||w||^2``. Accuracy is replaced by the **parameter error**:
the mean over machines of ``||w_i - theta*_{c(i)}||``, ``w_i`` the model that serves machine
``i`` (lower is better); the number of clusters found and the ARI as in FPTAB1.

The verdict
-----------
FPTAB1's rules (:func:`mixlinreg.theory.studies.fptab1.decide`) on the analogue, with the error
in place of the accuracy (an ordering "A above B" is "A's error below B's"). This is not the
paper's setting: the paper reports no squared-loss experiment, so the verdict says whether the
table's claims carry over to the mixture of linear regressions that mixlinreg is built for.

Config: ``mixlinreg/configs/studies/FPSQ.toml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...data import make_mixture
from ..study import Study, Verdict
from ..words import words
from . import fptab1

#: the study's prose: fpsq.md beside this module (the shared sentences are FPTAB1's)
WORDS = words(__file__)

SCHEMA = {
    "params": {"m": Spec("int", low=2), "L": Spec("int", low=2), "d": Spec("int", low=1),
               "n": Spec("int", low=1), "R": Spec("float", low=0, open="low"),
               "sigma": Spec("float", low=0), **fptab1.METHOD_SCHEMA},
    "margins": fptab1.MARGINS_SCHEMA, "reference": fptab1.REFERENCE_SCHEMA,
}


def units(params):
    """One unit per seed; the config's cross-field rules checked first (equal clusters)."""
    p = params["params"]
    fptab1.check_methods("FPSQ", params)
    if p["m"] % p["L"] or p["L"] > p["m"]:
        raise ValueError(f"study FPSQ: params.m must be a multiple of params.L (equal clusters), "
                         f"got m={p['m']} and L={p['L']}")
    return [(f"seed{s:02d}", {"seed": s}) for s in range(p["seeds"])]


def compute(spec, params, rng, shared):
    p = params["params"]
    mix = make_mixture(p["m"], p["n"], p["d"], p["L"], R=p["R"], sigma=p["sigma"],
                       theta_scale="norm", rng=rng)
    results = fptab1.run_methods(mix.X, mix.y, None, p, rng, "squared")
    target = mix.theta_star[mix.labels]

    def score_of(models):
        return {"err": float(np.mean(np.linalg.norm(models - target, axis=1)))}

    rows = fptab1.method_rows(results, mix.labels, score_of)
    return pd.DataFrame([{"seed": spec["seed"], "choice": "squared", **r} for r in rows])


def analyze(table, params, rng):
    table = table.assign(cond=table["choice"])
    ms = fptab1.measure(table, params, rng, score="err")
    decision = fptab1.decide(ms, params)
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    t1 = fptab1.table1(table, params, rng, score="err", score_fmt=fmt, score_word="Err")
    p = params["params"]
    what = WORDS.text("setting", m=p["m"], L=p["L"], n=p["n"], d=p["d"], R=p["R"],
                      sigma=p["sigma"], seeds=p["seeds"])
    summary = fptab1.summary_text(t1, decision, ms, what, score_word="Err")
    numbers = fptab1.numbers_frame(t1, decision, ms, params, score_word="Err",
                                   diff_fmt=lambda f: WORDS.text("numbers.difference",
                                                                 fit=f.fmt(3)))
    caveats = fptab1.method_caveats(table, params) + WORDS.items("caveats")
    return Verdict(decision.verdict, numbers, summary, caveats=caveats,
                   sensitivity=fptab1.sensitivity(ms, params), tables={"_table1.csv": t1},
                   scope=fptab1.scope_line(decision))


def figure(table, verdict, params):
    return fptab1.figure(table, verdict, params, score="err",
                         score_label="parameter error (lower is better)", scale=1.0)


STUDY = Study(
    id="FPSQ", order=310, paper="FPFC", words=WORDS,
    schema=SCHEMA, units=units, compute=compute, analyze=analyze, figure=figure,
    decide=fptab1.decide)
