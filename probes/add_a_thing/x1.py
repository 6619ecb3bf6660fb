"""Study X1 (a trial of docs/development.md): a fair coin's Wilson 95% interval covers 1/2."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...config import Spec
from ...stats import Fit, verdict_at_least, wilson_interval
from ..study import Decision, Study, Verdict
from ..words import sensitivity_lines, words

WORDS = words(__file__)
SCHEMA = {"params": {"seeds": Spec("int", low=1), "flips": Spec("int", low=1)},
          "margins": {"coverage": Spec("float", low=0, high=1),
                      "coverage_neighbours": Spec("list[float]", low=0, high=1)}}


def units(params):
    return [(f"seed={s}", {"seed": s}) for s in range(params["params"]["seeds"])]


def compute(spec, params, rng, shared):
    heads = int(rng.binomial(params["params"]["flips"], 0.5))
    lo, hi = wilson_interval(heads, params["params"]["flips"])
    return pd.DataFrame({"seed": [spec["seed"]], "heads": [heads], "covers": [lo <= 0.5 <= hi]})


def decide(covered, params):
    n, k = len(covered), int(covered.sum())
    lo, hi = wilson_interval(k, n)
    return Decision(verdict_at_least(Fit(k / n, float(lo), float(hi), n),
                                     params["margins"]["coverage"]), {"covered": k, "of": n})


def analyze(table, params, rng):
    d = decide(table["covers"], params)
    return Verdict(d.verdict, pd.DataFrame([d.numbers]),
                   WORDS.text("summary", covered=d.numbers["covered"], of=d.numbers["of"]),
                   caveats=WORDS.items("caveats"),
                   sensitivity=sensitivity_lines(WORDS, params,
                                                 lambda q, key: decide(table["covers"], q).verdict))


def figure(table, verdict, params):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.subplots().hist(table["heads"])
    return fig


STUDY = Study(id="X1", order=999, words=WORDS, schema=SCHEMA, units=units, compute=compute,
              analyze=analyze, figure=figure, decide=decide)
