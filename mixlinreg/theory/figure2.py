"""Figure 2 of the paper: the tests behind its trend claims (studies F2a-F2d).

The studies F2a-F2d (:mod:`mixlinreg.theory.studies`) read the runs of a panel's store, found by
its config, summarize them by the harness's success rules and test the paper's sentences: success
rises with the separation ``R`` (panels a, b) and with ``m`` and ``n`` (panels c, d). The test is
an exact, stratified Cochran-Armitage trend test on the trial-level successes that the counts stand
for (:func:`trend_test`), read by :func:`trend_verdict`. The reproducibility note D1 (text against
code conventions of the same figure) lives in :mod:`mixlinreg.theory.d1`.

References
----------
Ghosh, Chung, Yin and Ramchandran, "An Efficient Framework for Clustered Federated Learning",
Section 6.1 and its synthetic figure: Figure 3 of the long (arXiv) version, Figure 2 of the
NeurIPS version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import comb

from ..stats import Fit, wilson_interval
from .study import CAVEAT, HOLDS, INCONCLUSIVE, NOT_SUPPORTED, Decision

__all__ = ["trend_test", "trend_decision", "trend_reason", "trend_verdict", "ALPHA",
           "STUDY_TITLES"]

#: significance level of the trend tests
ALPHA = 0.05

_PANELS = {
    # panel: (claimed axes as (axis, strata), information-only axes, k)
    "a": ([("R", ("sigma",))], [("sigma", ("R",))], 2),
    "b": ([("R", ("sigma",))], [("sigma", ("R",))], 4),
    "c": ([("m", ("R", "n")), ("n", ("R", "m"))], [], 2),
    "d": ([("m", ("R", "n")), ("n", ("R", "m"))], [], 4),
}
_RULES = ("authors", "text")
_TREND_COLUMNS = ["panel", "rule", "axis", "role", "stratum", "levels", "trials", "successes",
                  "p_low_end", "p_high_end", "T", "E_T", "sd_T", "p_increase", "p_decrease",
                  "flat"]


# ------------------------------------------------------------------------------ trend test


def _check_alpha(alpha):
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")


def _null_distribution(trials, total, scores):
    """Exact law of ``T = sum_i scores_i s_i`` given ``sum_i s_i = total``, no trend.

    Under the null (one success probability within the stratum), the successes ``s_i`` of the
    levels, given their total, are multivariate hypergeometric. Returns ``P(T = t)`` for
    ``t = 0 .. sum_i scores_i trials_i`` (integer scores).
    """
    trials = np.asarray(trials, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.int64)
    tmax = int(scores @ trials)
    W = np.zeros((total + 1, tmax + 1))
    W[0, 0] = 1.0
    for n_i, sc in zip(trials, scores):
        new = np.zeros_like(W)
        for a in range(min(int(n_i), total) + 1):
            shift = int(sc) * a
            new[a:, shift:] += comb(int(n_i), a) * W[:total + 1 - a, :tmax + 1 - shift]
        W = new / new.max()  # rescaled each level: only ratios within the row s = total matter
    probs = W[total]
    return probs / probs.sum()


def trend_test(counts, along, by=(), *, successes="succ_authors", trials="trials"):
    """Exact stratified Cochran-Armitage test: does success rise with ``along``?

    Each row of ``counts`` is one grid point: ``trials`` trials of which ``successes`` succeeded.
    Within each stratum (one value of the columns ``by``) the levels of ``along`` get the rank
    scores ``0, 1, ..., L - 1`` and the statistic is ``T = sum(score * successes)``. Its exact null
    law, given the stratum's total successes (no trend: one success probability per stratum), is a
    multivariate hypergeometric one; the pooled statistic is the sum over strata (a Mantel-type
    extension) and its law the convolution of the strata's laws. The trial-level data this
    conditions on are exactly the counts, so nothing is lost by starting from a summary table.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``along``, ``by``, ``trials`` and ``successes``; integers ``0 <= successes <=
        trials``, ``trials >= 1``; one row per (stratum, level).
    along : str
        The claimed axis (``"R"``, ``"m"``, ``"n"``, ...).
    by : sequence of str
        Strata columns.
    successes, trials : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        One row per stratum and a last row ``stratum == "pooled"``: ``levels``, ``trials``,
        ``successes``, ``p_low_end`` and ``p_high_end`` (success at the lowest and highest level),
        ``T``, its null mean ``E_T`` and sd ``sd_T``, the one-sided exact p-values
        ``p_increase = P(T >= T_obs)`` and ``p_decrease = P(T <= T_obs)``, and ``flat`` (all trials
        of the stratum failed or all succeeded: it carries no information on a trend).

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame({"R": [1, 2, 3], "trials": [10, 10, 10], "succ_authors": [1, 5, 9]})
    >>> t = trend_test(c, "R")
    >>> bool(t["p_increase"].iloc[-1] < 0.01)
    True

    References
    ----------
    Section 6.1 of the paper (Figure 2): "when R becomes larger ... higher success probability";
    Cochran (1954), Armitage (1955); exact conditional version as in Mehta and Patel.
    """
    by = [by] if isinstance(by, str) else list(by)
    need = [along, *by, successes, trials]
    miss = [c for c in need if c not in counts.columns]
    if miss:
        raise ValueError(f"counts must have the columns {need}; missing {miss}")
    df = counts[need].copy()
    s = df[successes].to_numpy()
    n = df[trials].to_numpy()
    if (np.any(n < 1) or np.any(s < 0) or np.any(s > n) or np.any(s != np.round(s))
            or np.any(n != np.round(n))):
        raise ValueError(f"counts need integers 0 <= {successes} <= {trials} and {trials} >= 1")
    if df.duplicated([along, *by]).any():
        raise ValueError(f"counts must have one row per ({', '.join([*by, along])})")
    rows, laws, t_obs = [], [], 0
    groups = df.groupby(by, sort=True) if by else [((), df)]
    for key, g in groups:
        g = g.sort_values(along)
        key = key if isinstance(key, tuple) else (key,)
        label = ",".join(f"{c}={v:g}" for c, v in zip(by, key)) or "all"
        ns = g[trials].to_numpy(dtype=np.int64)
        ss = g[successes].to_numpy(dtype=np.int64)
        scores = np.arange(len(g), dtype=np.int64)
        S = int(ss.sum())
        law = _null_distribution(ns, S, scores)
        T = int(scores @ ss)
        laws.append(law)
        t_obs += T
        rows.append(_trend_row(label, len(g), ns, ss, law, T))
    pooled = laws[0]
    for law in laws[1:]:
        pooled = np.convolve(pooled, law)
    ordered = [g.sort_values(along) for _, g in groups]
    lows = [g.iloc[0] for g in ordered]
    highs = [g.iloc[-1] for g in ordered]
    n_low = sum(int(r[trials]) for r in lows)
    n_high = sum(int(r[trials]) for r in highs)
    row = _trend_row("pooled", df[along].nunique(), df[trials].to_numpy(),
                     df[successes].to_numpy(), pooled, t_obs)
    row["p_low_end"] = sum(int(r[successes]) for r in lows) / n_low
    row["p_high_end"] = sum(int(r[successes]) for r in highs) / n_high
    row["trials_low_end"], row["trials_high_end"] = n_low, n_high
    rows.append(row)
    out = pd.DataFrame(rows)
    out.insert(0, "axis", along)
    return out


def _trend_row(label, levels, ns, ss, law, T):
    t = np.arange(law.size)
    mean = float(t @ law)
    sd = float(np.sqrt(max(float((t - mean) ** 2 @ law), 0.0)))
    S, N = int(np.sum(ss)), int(np.sum(ns))
    return dict(stratum=label, levels=int(levels), trials=N, successes=S,
                p_low_end=float(ss[0] / ns[0]), p_high_end=float(ss[-1] / ns[-1]),
                trials_low_end=int(ns[0]), trials_high_end=int(ns[-1]), T=int(T), E_T=mean,
                sd_T=sd, p_increase=float(min(1.0, law[T:].sum())),
                p_decrease=float(min(1.0, law[:T + 1].sum())), flat=bool(S in (0, N)))


def _trend_parts(tests, alpha):
    """The rows :func:`trend_decision` reads: the pooled row, the strata, the informative ones'
    count ``H`` and the strata that decrease (Bonferroni), are flat, or do not rise on their own."""
    _check_alpha(alpha)
    if "stratum" not in tests.columns or (tests["stratum"] == "pooled").sum() != 1:
        raise ValueError("tests must be a trend_test table with exactly one 'pooled' row")
    pooled = tests[tests["stratum"] == "pooled"].iloc[0]
    strata = tests[tests["stratum"] != "pooled"]
    informative = strata[~strata["flat"].astype(bool)]
    H = max(len(informative), 1)
    down = informative[informative["p_decrease"] < alpha / H]
    flat = strata[strata["flat"].astype(bool)]
    weak = informative[informative["p_increase"] >= alpha]
    return pooled, strata, informative, H, down, flat, weak


def trend_decision(tests, alpha=ALPHA) -> Decision:
    """The rule of :func:`trend_verdict` alone: its verdict and the numbers it compared, no prose.

    ``numbers``: the pooled ``p_increase`` and ``p_decrease`` (held to ``alpha``), the strata and
    informative (non-flat) strata, the Bonferroni level ``alpha / H`` the strata's ``p_decrease``
    is held to, and how many informative strata decrease at it, rise (``p_increase < alpha``) or do
    not (``p_increase >= alpha``), and how many are flat.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"stratum": ["s=0", "pooled"], "p_increase": [0.01, 0.001],
    ...                   "p_decrease": [0.99, 0.999], "flat": [False, False]})
    >>> d = trend_decision(t, 0.05)
    >>> d.verdict, d.numbers["strata not significant"]
    ('holds', 0)
    """
    pooled, strata, informative, H, down, flat, weak = _trend_parts(tests, alpha)
    n = {"pooled p_increase": float(pooled["p_increase"]),
         "pooled p_decrease": float(pooled["p_decrease"]), "alpha": alpha,
         "strata": len(strata), "informative strata": len(informative),
         "Bonferroni level": alpha / H, "strata decreasing": len(down),
         "strata rising": int((informative["p_increase"] < alpha).sum()),
         "strata flat": len(flat), "strata not significant": len(weak)}
    if n["pooled p_decrease"] < alpha or n["strata decreasing"]:
        verdict = NOT_SUPPORTED
    elif n["pooled p_increase"] < alpha:
        verdict = HOLDS if not n["strata flat"] and not n["strata not significant"] else CAVEAT
    else:
        verdict = INCONCLUSIVE
    return Decision(verdict, n)


def trend_reason(tests, alpha, verdict) -> str:
    """The sentence that explains ``verdict`` (:func:`trend_decision`'s): the deciding p-values
    and strata."""
    pooled, strata, _, H, down, flat, weak = _trend_parts(tests, alpha)
    pp = (f"pooled p(increase) = {pooled['p_increase']:.3g}, "
          f"p(decrease) = {pooled['p_decrease']:.3g}")
    if verdict == NOT_SUPPORTED:
        which = ", ".join(f"{r.stratum} (p = {r.p_decrease:.3g})" for r in down.itertuples())
        return (f"{pp}; significant decrease in "
                f"{which or 'the pooled test'} (Bonferroni over {H} strata)")
    if verdict == HOLDS:
        return f"{pp}; all {len(strata)} strata significant on their own"
    if verdict == CAVEAT:
        parts = []
        if len(flat):
            parts.append(f"{len(flat)} flat ({', '.join(flat['stratum'])})")
        if len(weak):
            parts.append(f"{len(weak)} not significant on their own "
                         f"({', '.join(weak['stratum'])})")
        return f"{pp}; of {len(strata)} strata, " + " and ".join(parts)
    return f"{pp}: no significant trend either way"


def trend_verdict(tests, alpha=ALPHA):
    """Verdict on "success rises along the axis" from one :func:`trend_test` table.

    Rules (``alpha`` one-sided; :func:`trend_decision` applies them):

    * **not supported** if the pooled test shows a significant decrease (``p_decrease < alpha``) or
      some stratum does, after a Bonferroni correction over the informative (non-flat) strata
      (``p_decrease < alpha / H``): one noisy stratum among many must not overturn the claim;
    * **holds** if the pooled increase is significant and every stratum shows a significant
      increase on its own (``p_increase < alpha``, none flat);
    * **holds with a caveat** if the pooled increase is significant but some strata are flat (all
      trials failed or all succeeded) or not significant on their own;
    * **inconclusive** otherwise (no significant trend either way, e.g. too few trials).

    Parameters
    ----------
    tests : pandas.DataFrame
        Output of :func:`trend_test` (one axis, one rule): strata rows and a ``"pooled"`` row.
    alpha : float, default 0.05

    Returns
    -------
    verdict : str
    reason : str
        One sentence naming the deciding p-values and strata (:func:`trend_reason`).

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame({"R": [1, 2, 3] * 2, "s": [0] * 3 + [1] * 3,
    ...                   "trials": [20] * 6, "succ": [2, 10, 18, 3, 11, 19]})
    >>> trend_verdict(trend_test(c, "R", "s", successes="succ"))[0]
    'holds'

    References
    ----------
    Section 6.1 of the paper, Figure 2.
    """
    verdict = trend_decision(tests, alpha).verdict
    return verdict, trend_reason(tests, alpha, verdict)


# ------------------------------------------------------------------------------ F2a-F2d


def _f2_tests(summ, panel):
    claimed, info, _ = _PANELS[panel]
    parts = []
    for role, axes in (("claim", claimed), ("information", info)):
        for along, by in axes:
            for rule in _RULES:
                if role == "information" and rule != "authors":
                    continue
                t = trend_test(summ, along, by, successes=f"succ_{rule}")
                t.insert(0, "role", role)
                t.insert(0, "rule", rule)
                t.insert(0, "panel", panel)
                parts.append(t)
    return pd.concat(parts, ignore_index=True)


def _fit_prop(s, n):
    lo, hi = wilson_interval(s, n)
    lo, hi = float(lo), float(hi)
    # the Wilson bounds of 0 / n and n / n are 0 and 1 up to rounding (5.6e-17 and the like)
    lo = 0.0 if lo < 1e-12 else lo
    hi = 1.0 if hi > 1 - 1e-12 else hi
    return Fit(float(s / n), min(lo, s / n), max(hi, s / n), int(n))


def _f2_numbers(tests, alpha):
    rows = []
    for (axis, rule, role), g in tests.groupby(["axis", "rule", "role"], sort=False):
        pooled = g[g["stratum"] == "pooled"].iloc[0]
        d = trend_decision(g, alpha)
        n = d.numbers
        lo_s = round(pooled["p_low_end"] * pooled["trials_low_end"])
        hi_s = round(pooled["p_high_end"] * pooled["trials_high_end"])
        rows.append({
            "axis": axis, "rule": rule, "role": role, "strata": n["strata"],
            "increase (p<0.05)": n["strata rising"],
            "flat": n["strata flat"], "decrease (Bonf.)": n["strata decreasing"],
            "p_increase": n["pooled p_increase"], "p_decrease": n["pooled p_decrease"],
            "success at low end": _fit_prop(lo_s, int(pooled["trials_low_end"])).fmt(2),
            "at high end": _fit_prop(hi_s, int(pooled["trials_high_end"])).fmt(2),
            "verdict": d.verdict if role == "claim" else f"({d.verdict}; no claim)",
        })
    return pd.DataFrame(rows)


def _plot_f2(summ, panel, tests, title):
    import seaborn as sns
    from matplotlib.figure import Figure

    claimed, _, _ = _PANELS[panel]
    pooled = tests[tests["stratum"] == "pooled"].set_index(["axis", "rule"])
    with sns.axes_style("whitegrid"):
        if panel in "ab":
            fig = Figure(figsize=(10, 4), layout="constrained")
            axes = fig.subplots(1, 2, sharey=True)
            sigmas = sorted(summ["sigma"].unique())
            pal = sns.color_palette("viridis", len(sigmas))
            for ax, rule in zip(axes, _RULES):
                for i, (s, col) in enumerate(zip(sigmas, pal)):
                    g = summ[summ["sigma"] == s].sort_values("R")
                    x = g["R"].to_numpy() * (1 + 0.012 * (i - len(sigmas) / 2))
                    ax.plot(x, g[f"p_{rule}"], "o-", color=col, label=f"sigma = {s:g}")
                    ax.fill_between(x, g[f"lo_{rule}"], g[f"hi_{rule}"], color=col, alpha=0.15)
                p = pooled.loc[("R", rule)]
                ax.set_title(f"{rule} rule: pooled trend p = {p['p_increase']:.2g}", fontsize=10)
                ax.set_xlabel("R (separation scale)")
            axes[0].set_ylabel("success probability (Wilson 95%)")
            axes[0].legend(fontsize=8, loc="lower right")
        else:
            Rs = sorted(summ["R"].unique())
            fig = Figure(figsize=(11, 3.8 * len(Rs)), layout="constrained")
            axes = np.atleast_2d(fig.subplots(len(Rs), 2, sharey=True))
            for r, R in enumerate(Rs):
                sub = summ[summ["R"] == R]
                for c, (along, line) in enumerate((("m", "n"), ("n", "m"))):
                    ax = axes[r, c]
                    lines = sorted(sub[line].unique())
                    pal = sns.color_palette("viridis", len(lines))
                    for i, (v, col) in enumerate(zip(lines, pal)):
                        g = sub[sub[line] == v].sort_values(along)
                        x = g[along].to_numpy() * (1 + 0.015 * (i - len(lines) / 2))
                        ax.plot(x, g["p_authors"], "o-", color=col, label=f"{line} = {v:g}")
                        ax.fill_between(x, g["lo_authors"], g["hi_authors"], color=col,
                                        alpha=0.5 / len(lines))
                    levels = sorted(sub[along].unique())
                    ax.set_xscale("log")
                    ax.set_xticks(levels)
                    ax.set_xticklabels([f"{v:g}" for v in levels])
                    ax.minorticks_off()
                    ax.set_xlabel(along)
                    ax.set_title(f"R = {R:g}: success vs {along}, one line per {line}", fontsize=9)
                    ax.legend(fontsize=7, loc="lower right", ncol=2)
                axes[r, 0].set_ylabel("success (authors' rule, Wilson 95%)")
            pm, pn = pooled.loc[("m", "authors")], pooled.loc[("n", "authors")]
            title = (f"{title}\npooled exact trend test, authors' rule: p(increase in m) = "
                     f"{pm['p_increase']:.2g}, p(increase in n) = {pn['p_increase']:.2g}")
        fig.suptitle(title, fontsize=11)
    return fig


STUDY_TITLES = {
    "a": "Figure 2(a): success rises with R (k = 2)",
    "b": "Figure 2(b): success rises with R (k = 4)",
    "c": "Figure 2(c): success rises with m and n (k = 2)",
    "d": "Figure 2(d): success rises with m and n (k = 4)",
}
