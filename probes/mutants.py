"""Hand-written mutants of the code whose mistakes change results silently (issue 25, class 10).

Each mutant is ONE realistic change (a flipped comparison, a dropped margin or factor, an
off-by-one, a wrong divisor) to the kernel, the certified-Gram bounds, early stop, divergence,
the losses, the success rules, the store's integrity checks, the statistics and each study's
decision rule. The script applies one mutant at a time to a throw-away copy of the repository (a
``git worktree`` at the checkout's HEAD, with the checkout's ``tests/`` copied over it so that
uncommitted tests count), runs the mutant's focused test selection there, and records whether
some test failed (*killed*) or every test passed (*survived*). The checkout itself is never
changed. Run from the repository root::

    python probes/mutants.py                      # every mutant; writes the table below
    python probes/mutants.py --only K01 G03       # some of them
    python probes/mutants.py --list               # the mutants, nothing run
    python probes/mutants.py --check              # every snippet found once in HEAD
    python probes/mutants.py --merge before.json after.json   # one table of two runs

Options: ``--worktree /tmp/mut-wt`` (made with ``git worktree add --detach`` when absent and
left in place, remove it with ``git worktree remove --force``), ``--out
probes/mutation_results.md`` (the table), ``--label after`` (its title),
``--before-tests`` (run only each mutant's ``tests``, not the ``added`` tests that were written
to kill the survivors: the "before" score), ``--no-baseline`` (skip the run of every selection
on the unmutated copy, which must pass).

Every selection runs with ``NUMBA_DISABLE_JIT=1``: the kernels run as plain Python (the package
supports it, see ``tests/test_nojit.py``), so a mutated kernel needs no compilation and the
mutated lines are executed as written. A mutant that makes its tests run past ``--timeout``
seconds counts as killed (a hang is caught by the suite's own timeouts). ``EQUIVALENT`` lists
the mutants argued equivalent (no test can tell them apart), each with its one-line argument;
they are run too, and must survive.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KER, GRAM, LOSS = "mixlinreg/_kernels.py", "mixlinreg/_gram.py", "mixlinreg/losses.py"
MET, SUC = "mixlinreg/metrics.py", "mixlinreg/harness/success.py"
STORE = "mixlinreg/harness/store.py"  # Figure 2's ResultStore
UNIT_STORE = "mixlinreg/runner/store.py"  # the runner's UnitStore (claims, records)
STATS, ST = "mixlinreg/stats.py", "mixlinreg/theory/studies/"
KT = "tests/test_mutation_kills.py"
K41 = "tests/test_mutation_kills_i41.py"
JAX, FPFC, CFL = "mixlinreg/_jax.py", "mixlinreg/baselines/_fpfc.py", "mixlinreg/baselines/_cfl.py"
SYN, RUN = "mixlinreg/synthetic.py", "mixlinreg/runner/__init__.py"
CTRL = "mixlinreg/theory/controls.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    old: str  #: exact snippet, found exactly once in ``file``
    new: str  #: its replacement
    tests: tuple  #: pytest arguments: the tests written for this code before issue 25
    why: str  #: one line: what result the mistake would change
    added: tuple = field(default=())  #: tests added to kill it (issue 25)


M = Mutant
_K = ("tests/test_kernel.py",)
_KW = ("tests/test_kernel.py", "tests/test_weight_sharing.py")
_G = ("tests/test_gram.py",)
_S = ("tests/test_metrics.py", "tests/test_harness.py", "-k", "success or rule")
_T = ("tests/test_store_integrity.py", "tests/test_harness.py", "-k",
      "damaged or damage or another_config or cut or legacy or changed_config or proven "
      "or mixes or manifest")
_V = ("tests/test_stats.py", "tests/test_theory_framework.py")
_J = ("tests/test_jax_backend.py", "-k", "naive or ties or divergence or early_stop")
_R = ("tests/test_store_integrity.py", "-k", "claim or stale or lock or pid")
_E = ("tests/test_losses.py",)

MUTANTS = [
    # ------------------------------------------------------------------ the kernel (direct path)
    M("K01", KER, "if v < bv or (np.isnan(bv) and not np.isnan(v)):",
      "if v <= bv or (np.isnan(bv) and not np.isnan(v)):", _K,
      "argmin ties go to the highest index instead of the lowest"),
    M("K02", KER, "if v < bv or (np.isnan(bv) and not np.isnan(v)):", "if v < bv:", _K,
      "a NaN loss of model 0 keeps winning over finite losses"),
    M("K03", KER, "pen[a, j] = 0.5 * l2 * s", "pen[a, j] = l2 * s", _K,
      "the ridge term of the loss is l2 ||theta||^2 instead of (l2/2) ||theta||^2"),
    M("K04", KER, "L[a, j] += th * (np.float64(Q[q, col]) - 2.0 * bq)",
      "L[a, j] += th * (np.float64(Q[q, col]) - bq)", _K,
      "the sufficient-statistics loss loses the factor 2 of the cross term"),
    M("K05", KER, "                L[a, j] = L[a, j] / ne\n",
      "                L[a, j] = L[a, j] / data.X.shape[1]\n", _K,
      "with resampling, the losses divide by n instead of the rows used (n')"),
    M("K06", KER, "    inv = 1.0 / ng\n    cols = _target_columns",
      "    inv = 1.0 / data.X.shape[1]\n    cols = _target_columns", _K,
      "with resampling, the gradient divides by n instead of the rows used"),
    M("K07", KER, "g += loss.l2 * pk.ThT[q, col + c]", "g += loss.l2 * pk.ThT[q, col]",
      _K + ("tests/test_multinomial.py",),
      "the multinomial ridge gradient uses column 0 of the model for every class"),
    M("K08", KER, "scale = lr[r] / m", "scale = lr[r] / na", _K,
      "option I divides the gradient sum by the number of active runs instead of m"),
    M("K09", KER, "res.loss[r] = tl / m", "res.loss[r] = tl / max(m - 1, 1)", _K,
      "the reported loss is not the mean over the m machines"),
    M("K10", KER, "theta[r, v, q] = s / c", "theta[r, v, q] = s / m", _K,
      "option II averages the local models over all m machines, not the cluster's"),
    M("K11", KER, "c += cbuf[ch, a, j]", "c = cbuf[ch, a, j]", _K,
      "option II counts the machines of the last chunk only"),
    M("K12", KER, "for _ in range(upd.local_steps):", "for _ in range(1):", _K,
      "option II takes one local step whatever local_steps says"),
    M("K13", KER, "(GT[q, c] * inv + loss.l2 * TaT[q, c])", "(GT[q, c] * inv)", _K,
      "option II's local steps drop the ridge gradient"),
    M("K14", KER, "elif early_stop and it >= 1 and rel <= tol:",
      "elif early_stop and it >= 1 and rel < tol:", _K,
      "early stop at a relative step equal to tol (tol = 0: a fixed point) never happens"),
    M("K15", KER, "if asg[r, i] != asg_prev[r, i]:", "if asg[r, i] != asg[r, i]:", _K,
      "early stop no longer needs unchanged assignments"),
    M("K16", KER, "rj = np.sqrt(n_step) / max(np.sqrt(n_old), 1e-300)",
      "rj = np.sqrt(n_step) / max(n_old, 1e-300)", _K,
      "the relative step divides by ||theta||^2 instead of ||theta||"),
    M("K17", KER, "            if rj > rel:\n                rel = rj\n",
      "            rel = rj\n", _K,
      "early stop reads the last model's relative step, not the largest"),
    M("K18", KER, "if not np.isfinite(nv) or abs(nv) > thresh:\n                            nrm",
      "if not np.isfinite(nv) or abs(nv) >= thresh:\n                            nrm", _K,
      "a parameter exactly at the divergence threshold counts as diverged"),
    M("K19", KER, "if not np.isfinite(tl):", "if np.isnan(tl):", _K,
      "an infinite training loss is not flagged as divergence"),
    M("K20", KER, "            diverged[r] = True\n            frozen[r] = True\n"
                  "            n_iter_out[r] = it + 1\n",
      "            diverged[r] = True\n            frozen[r] = True\n"
      "            n_iter_out[r] = it\n", _K,
      "a run diverging in its parameters reports one iteration too few"),
    M("K21", KER, "if upd.use_part and not upd.part[it, r, i]:",
      "if upd.use_part and not upd.part[0, r, i]:", _K,
      "the participation mask of iteration 0 is used at every iteration"),
    M("K22", KER, "if theta[r, jj * nout + c, q] != theta[r, j * nout + c, q]:",
      "if theta[r, jj * nout + c, 0] != theta[r, j * nout + c, 0]:", _K,
      "models equal in their first coordinate only are treated as exact duplicates"),
    M("K23", KER, "for t in range(res.n_iter[r], n_iter + 1):",
      "for t in range(res.n_iter[r] + 1, n_iter + 1):", _K,
      "a stopped run's trace misses the final evaluation at its last iteration"),
    M("K24", KER, "            cnt += ctot[a, j]\n", "            cnt = ctot[a, j]\n", _KW,
      "weight sharing (option II) divides by the last model's machine count"),
    M("K25", KER, "            nrm[b, a, j, 0] += np.float64(old) * np.float64(old)\n"
                  "            nrm[b, a, j, 1] += dq * dq\n",
      "            nrm[b, a, j, 0] += np.float64(old) * np.float64(old)\n", _KW,
      "a shared coordinate's step is left out of the early-stop test"),
    M("K26", KER, "theta[r, c, q] = old - scale * s\n",
      "theta[r, c, q] = old - scale * s / k\n", _KW,
      "weight sharing (option I) averages the shared gradient over the k models"),
    # ------------------------------------------------------------------ the losses
    M("L01", LOSS, "    return delta * (a - 0.5 * delta)\n",
      "    return delta * (a - delta)\n", _K,
      "the Huber loss's linear part is shifted by delta/2"),
    M("L02", LOSS, "    return e / (1.0 + e) - y\n",
      "    return 1.0 / (1.0 + e) - y\n", _K,
      "the logistic derivative for z < 0 is sigmoid(-z) - y"),
    M("L03", LOSS, "\"\"\"``2 (z - y)``.\"\"\"\n    return 2.0 * (z - y)\n",
      "\"\"\"``2 (z - y)``.\"\"\"\n    return (z - y)\n", _K,
      "the squared loss's derivative loses its factor 2"),
    M("L04", LOSS, "return mx + np.log(s) - np.float64(P[t, c0 + int(y)])",
      "return np.log(s) - np.float64(P[t, c0 + int(y)])",
      ("tests/test_multinomial.py", "-k", "naive or float32 or variants or ties"),
      "the multinomial loss forgets to add back the shift max(z)"),
    M("L05", LOSS, "g = np.exp(np.float64(P[t, c0 + c]) - mx) / s",
      "g = np.exp(np.float64(P[t, c0 + c])) / s",
      ("tests/test_multinomial.py", "-k", "naive or float32 or variants or ties"),
      "the softmax numerator is not shifted like its denominator"),
    M("L06", LOSS, "    if r > delta:\n        return -delta\n",
      "    if r >= delta:\n        return -delta\n", _K,
      "the Huber derivative's boundary case goes to the clipped branch"),
    # ------------------------------------------------------------------ the certified-Gram path
    M("G01", GRAM, "ru = U[r, i] + s[i] * dist[r, ai] + gamma * fro[i] * norms[a, ai]",
      "ru = U[r, i] + gamma * fro[i] * norms[a, ai]", _G,
      "the assigned model's bound is not widened by how far it moved"),
    M("G02", GRAM, "rl = Lo[r, i, j] - s[i] * dist[r, j] - gamma",
      "rl = Lo[r, i, j] - s[i] * dist[r, ai] - gamma", _G,
      "the other models' bounds are widened by the assigned model's move"),
    M("G03", GRAM, "if not fu < fl:", "if fu > fl:", _G,
      "a tie between the bounds certifies the assignment"),
    M("G04", GRAM, "                if rl < 0.0:\n                    rl = 0.0\n", "", _G,
      "a negative lower residual bound is squared into a large positive one"),
    M("G05", GRAM, "* (1.0 - rel)", "* (1.0 + rel)", _G,
      "the relative safety margin is added to the lower bound instead of taken off"),
    M("G06", GRAM, "Lo[r, i, j] = rr - rho", "Lo[r, i, j] = rr + rho", _G,
      "the lower bounds are raised by the rounding allowance instead of lowered"),
    M("G07", GRAM, "U[r, i] = rr + rho", "U[r, i] = rr - rho", _G,
      "the upper bound is lowered by the rounding allowance instead of raised"),
    M("G08", GRAM, "out[r, j] = np.sqrt(s) * (1.0 + 1e-12)", "out[r, j] = s", _G,
      "the distance from the anchor is its square (too small below 1)"),
    M("G09", GRAM, "sc = 2.0 / n", "sc = 1.0 / n", _G,
      "the Gram gradient loses the factor 2 of the squared loss"),
    M("G10", GRAM, "lc = l2 * col_size[c]", "lc = l2", _G,
      "the Gram gradient's ridge term counts one machine instead of the cluster's"),
    M("G11", GRAM, "for r in full[~same & self.in_gram[full]]:",
      "for r in full[same & self.in_gram[full]]:", _G,
      "a run whose partition changed keeps the Grams of its former clusters"),
    M("G12", GRAM, "self.bvec[r, j] = self.B[c, ms[j]].sum(axis=0)",
      "self.bvec[r, j] = self.B[0, ms[j]].sum(axis=0)", _G,
      "the Gram gradient uses response variant 0 for every run"),
    # ------------------------------------------------------------------ the success rules
    M("S01", MET, "vals < 0.6 * sig + plus", "vals <= 0.6 * sig + plus", _S,
      "the authors' rule becomes non-strict"),
    M("S02", MET, "vals <= 0.6 * sig)", "vals < 0.6 * sig)", _S,
      "the text's rule becomes strict"),
    M("S03", SUC, 'usable = ~df["diverged"].astype(bool) & np.isfinite(df["loss"])',
      'usable = np.isfinite(df["loss"])', _S,
      "a diverged run with a finite loss can be the best-loss run"),
    M("S04", SUC, ".groupby(keys, sort=False).head(1)", ".groupby(keys, sort=False).tail(1)", _S,
      "best_loss keeps the run of the largest loss"),
    M("S05", SUC, 'df["ok_text"] = success_text(df["dist_matched"]',
      'df["ok_text"] = success_text(df["dist_nearest"]', _S,
      "the text's rule reads the nearest distance instead of the matched one"),
    M("S06", SUC, 'trials=("trial", "nunique")', 'trials=("trial", "count")', _S,
      "trials counted as rows instead of distinct trials"),
    M("S07", SUC, 'lo, hi = wilson_interval(out[f"succ_{r}"], out["trials"], confidence)',
      'lo, hi = wilson_interval(out[f"succ_{r}"], out["trials"])', _S,
      "the success intervals ignore the confidence asked for"),
    # ------------------------------------------------------------------ the store's checks
    M("T01", UNIT_STORE, 'if rec.get("sha256") != _sha256(data) or rec.get("bytes") != len(data):',
      'if rec.get("bytes") != len(data):', _T,
      "a unit changed in place (same length) passes its checksum record"),
    M("T02", UNIT_STORE, 'if self.tag is not None and rec.get("tag") is not None and rec.get("tag")',
      'if self.tag is None and rec.get("tag") is not None and rec.get("tag")', _T,
      "a unit of another config is counted as done"),
    M("T03", UNIT_STORE, 'if not data.endswith(b"\\n"):', "if False:", _T,
      "a unit cut off mid-line (no record) is accepted"),
    M("T04", STORE, 'if set(df["unit"].astype(str)) != {unit_id}:',
      'if not set(df["unit"].astype(str)):', _T,
      "a unit file holding another unit's rows (no record) is accepted"),
    M("T05", STORE, '.isna().all().any():', '.isna().all().all():', _T,
      "a unit with one empty result column (no record) is accepted"),
    M("T06", STORE, 'and have is not None and have.get("hash") != want["hash"]:',
      'and have is not None and have.get("hash") is None:', _T,
      "a store folder of another config is reused"),
    M("T07", UNIT_STORE, "if len(df) != want:", "if len(df) > want:", _T,
      "a unit with too few rows (no record) is accepted"),
    M("T08", UNIT_STORE, 'if self.rows is not None and rec.get("rows") != int(self.rows(unit_id)):',
      "if False:", _T,
      "a unit whose record holds the wrong row count is accepted"),
    # ------------------------------------------------------------------ the statistics
    M("V01", STATS, "    if fit.hi <= bound + margin:\n",
      "    if fit.est <= bound + margin:\n", _V,
      "verdict_at_most holds on the estimate instead of the whole interval"),
    M("V02", STATS, "    if fit.lo > bound + margin:\n", "    if fit.lo > bound:\n", _V,
      "verdict_at_most refutes without the margin"),
    M("V03", STATS, "    if fit.hi < bound - margin:\n", "    if fit.hi < bound:\n", _V,
      "verdict_at_least refutes without the margin"),
    M("V04", STATS, "if fit.hi < predicted - margin or fit.lo > predicted + margin:",
      "if fit.hi < predicted - margin:", _V,
      "verdict_equal never refutes a value above the prediction"),
    M("V05", STATS, 'proportion_ci(confidence_level=confidence, method="wilson")',
      'proportion_ci(confidence_level=0.95, method="wilson")', _V,
      "Wilson intervals ignore the confidence asked for"),
    M("V06", STATS,
      "corr = np.where(ad_bc > nf / 2, ad_bc - nf / 2, np.where(ad_bc < 0, ad_bc, 0.0))",
      "corr = ad_bc", _V,
      "Newcombe's interval without the continuity-corrected phi (method 8, not 10)"),
    # ------------------------------------------------------------------ each study's decision rule
    M("D01", "mixlinreg/theory/initialization.py", 'cases["worse"] = cases["lo"] > margin',
      'cases["worse"] = cases["diff"] > margin',
      ("tests/test_decide_l1_c1_a0.py", "tests/test_theory_initialization.py", "-k",
       "a0 or compare"),
      "A0 refutes on the point difference instead of its interval"),
    M("D02", ST + "a6.py", 'below = claim[claim["hi"] < target]',
      'below = claim[claim["lo"] < target]', ("tests/test_assumption6.py", "-k", "decide"),
      "A6 refutes a cell whose interval only straddles the target"),
    M("D03", ST + "c1.py", "v_it = verdict_at_most(it, _IT_BOUND, margin)",
      "v_it = verdict_at_most(it, _IT_BOUND)", ("tests/test_decide_l1_c1_a0.py", "-k", "c1"),
      "C1's iteration rule drops its margin"),
    M("D04", ST + "c2.py", 'f["excess_large"].hi < loose_below',
      'f["excess_large"].lo < loose_below',
      ("tests/test_decide_t1_t2_c2.py", "-k", "c2"),
      "C2's looseness caveat reads the interval's lower end"),
    M("D05", ST + "c2t.py", "violated = lo > tol", "violated = hi > tol",
      ("tests/test_corollary2_iterations.py", "-k", "decide"),
      "C2T calls a test violated when its interval only reaches above tol"),
    M("D06", ST + "cflc5.py", 'if len(sep) == len(cells) and numbers["universal"]:',
      "if len(sep) == len(cells):", ("tests/test_cfl_c5.py", "-k", "decide"),
      "CFLC5 holds without one eps2 common to every band"),
    M("D07", ST + "cfle4.py", 'r.n), -mg["min_slope"])', 'r.n), mg["min_slope"])',
      ("tests/test_cfl_e4.py", "-k", "decide"), "CFLE4's slope limit loses its sign"),
    M("D08", ST + "cflf12.py", 'ok = (imin >= mg["floor"]) & (icos <= -1.0 + mg["cos_eps"])',
      'ok = (imin >= mg["floor"])', ("tests/test_cfl_f12.py", "-k", "decide or rule"),
      "CFLF12's incongruent success ignores the cosine condition"),
    M("D09", ST + "cflf3.py", 'v_double = _interval_rule(m["ratio"], lambda f: f.lo > rt',
      'v_double = _interval_rule(m["ratio"], lambda f: f.est > rt',
      ("tests/test_cfl_f3.py", "-k", "decide or rule"),
      "CFLF3's doubling holds on the estimate instead of the interval"),
    M("D10", ST + "cflr6.py", 'n_fail, n_hold = int((ev["hi"] < thr).sum())',
      'n_fail, n_hold = int((ev["lo"] < thr).sum())', ("tests/test_cfl_r6.py", "-k", "decide"),
      "CFLR6 refutes on a cell that only straddles the threshold"),
    M("D11", "mixlinreg/theory/d1.py", 'if n["widest |bound|"] <= margin:',
      'if n["widest |bound|"] < margin:', ("tests/test_decide_rs_f2_d1.py", "-k", "d1"),
      "D1's 'same results' excludes an interval reaching exactly the margin"),
    M("D12", "mixlinreg/theory/figure2.py",
      'down = informative[informative["p_decrease"] < alpha / H]',
      'down = informative[informative["p_decrease"] < alpha]',
      ("tests/test_decide_rs_f2_d1.py", "-k", "f2"),
      "F2's strata decrease tests lose their Bonferroni correction"),
    M("D13", ST + "fptab1.py", 'oversplit = ms["d_num"].lo > 0', 'oversplit = ms["d_num"].est > 0',
      ("tests/test_fpfc_table.py", "-k", "decide or rule or threshold"),
      "FPTAB1's over-split test reads the estimate instead of the interval"),
    M("D14", ST + "fpth1.py", 'if participation == 1.0 or g["worst"].lo > g_limit:',
      'if g["worst"].lo > g_limit:', ("tests/test_fpfc_theorem1.py", "-k", "decide or rule"),
      "FPTH1's G rule no longer refutes a deterministic run above the limit"),
    M("D15", ST + "l1.py", 'm["named_min"] * (1 + mg["worst_tol"])', 'm["named_min"]',
      ("tests/test_decide_l1_c1_a0.py", "-k", "l1"),
      "L1's worst-placement check drops its tolerance"),
    M("D16", ST + "l3.py", 'cells["cheb_opt"].to_numpy(dtype=float) * (1.0 + mg["cheb_tol"])',
      'cells["cheb_opt"].to_numpy(dtype=float)', ("tests/test_lemma3.py", "-k", "decide"),
      "L3's Chebyshev check drops its tolerance"),
    M("D17", "mixlinreg/theory/restarts.py", '(c["pN_hi"] < target)', '(c["pN"] < target)',
      ("tests/test_decide_rs_f2_d1.py", "-k", "rs"),
      "RS contradicts on the point estimate instead of the Wilson upper bound"),
    M("D18", "mixlinreg/theory/linear.py", "if verdict_at_most(fit, claimed) == HOLDS:",
      "if verdict_at_most(fit, claimed, margin) == HOLDS:",
      ("tests/test_decide_t1_t2_c2.py", "-k", "t1"), "T1's 'holds' (at most 1/2) gets the margin"),
    M("D19", ST + "t2.py", "Fit(r.factor, r.lo, r.hi, r.seeds_used), r.bound, margin)",
      "Fit(r.factor, r.lo, r.hi, r.seeds_used), r.bound)",
      ("tests/test_decide_t1_t2_c2.py", "-k", "t2"), "T2's factor rule drops its margin"),
    M("D20", ST + "t2f.py", "    if lo > thr:\n        return NOT_SUPPORTED\n",
      "    if growth > thr:\n        return NOT_SUPPORTED\n",
      ("tests/test_theorem2_floor.py", "-k", "decide or verdict"),
      "T2F refutes on the growth estimate instead of the interval"),
    M("D21", ST + "tab1.py", 'b = HOLDS if lo >= mg["rate_target"]',
      'b = HOLDS if hi >= mg["rate_target"]',
      ("tests/test_tab1.py", "-k", "identification or b_"),
      "TAB1's identification holds on the interval's upper end"),
    M("D22", ST + "ws.py", 'if c["diff_lo"] > 0 or hi < 0:', 'if c["diff_lo"] > 0:',
      ("tests/test_weight_sharing_study.py", "-k", "decide"),
      "WS no longer calls sharing worse when Newcombe's interval is below 0"),
    # ----------------------------------------- the newer code (issue 41, item 5): ids J F C Y R P E
    # "added": tests/test_mutation_kills_i41.py, written for the behaviours the review found unpinned
    M("J01", JAX, "Lc = jnp.where(nan, jnp.inf, L)", "Lc = L", _J,
      "the JAX kernel lets a NaN loss poison the minimum (every machine on model 0)",
      added=(K41 + "::test_the_jax_argmin_breaks_nan_and_inf_ties_as_numba_does",)),
    M("J02", JAX, "best = (Lc == jnp.min(Lc, axis=-1, keepdims=True)) & ~nan",
      "best = (Lc == jnp.min(Lc, axis=-1, keepdims=True))", _J,
      "the JAX kernel lets a NaN loss tie with +inf and win as the lower index",
      added=(K41 + "::test_the_jax_argmin_breaks_nan_and_inf_ties_as_numba_does",)),
    M("J03", JAX, "jnp.argmax(best, axis=-1), 0)",
      "best.shape[-1] - 1 - jnp.argmax(best[..., ::-1], axis=-1), 0)", _J,
      "the JAX kernel's ties go to the highest index (numba's to the lowest)",
      added=(K41 + "::test_the_jax_argmin_breaks_nan_and_inf_ties_as_numba_does",)),
    M("J04", JAX, "(jnp.abs(new64) > thresh)", "(jnp.abs(new64) >= thresh)", _J,
      "the JAX kernel flags a model exactly at the threshold as diverged (numba does not)",
      added=(K41 + "::test_a_model_exactly_at_the_divergence_threshold_has_not_diverged",)),
    M("F01", FPFC, "link = np.linalg.norm(theta_pairs, axis=1) <= nu",
      "link = np.linalg.norm(theta_pairs, axis=1) < nu", ("tests/test_fpfc.py",),
      "FPFC leaves exactly fused devices (pair distance equal to nu) unlinked",
      added=(K41 + "::test_fpfc_links_devices_whose_pair_distance_equals_nu",)),
    M("F02", FPFC, "order = np.argsort(np.argsort(first))", "order = np.argsort(first)",
      ("tests/test_fpfc.py",),
      "FPFC's cluster labels are not numbered in order of their first machine"),
    M("C01", CFL, "new_active.append((next_id + 1, sb, theta.copy()))",
      "new_active.append((next_id + 1, sb, theta - mean))", ("tests/test_cfl.py",),
      "the second side of a CFL split starts from the model before the round's FedAvg step",
      added=(K41 + "::test_both_sides_of_a_cfl_split_start_from_the_groups_updated_model",)),
    M("C02", CFL, "            new_active.append((next_id, sa, theta.copy()))\n"
      "            new_active.append((next_id + 1, sb, theta.copy()))\n",
      "            new_active.append((next_id, sa, theta - mean))\n"
      "            new_active.append((next_id + 1, sb, theta - mean))\n", ("tests/test_cfl.py",),
      "both sides of a CFL split drop the split round's FedAvg step",
      added=(K41 + "::test_both_sides_of_a_cfl_split_start_from_the_groups_updated_model",)),
    M("C03", CFL, "mean = D.mean(axis=0) if np.all(sizes == sizes[0]) else (sizes / sizes.sum()) @ D",
      "mean = D.mean(axis=0)", ("tests/test_cfl.py",),
      "CFL's FedAvg ignores the machines' sample counts (weights |D_i| / |D_c|)"),
    M("C04", CFL, "elif dmax >= eps2 and len(members) >= min_group:",
      "elif dmax >= eps2 and len(members) > min_group:", ("tests/test_cfl.py",),
      "a CFL group of exactly min_group machines never splits",
      added=(K41 + "::test_a_cfl_group_of_exactly_min_group_machines_splits",)),
    M("Y01", SYN, "log_sizes = gen.normal(size_mean, size_sd, size=m)",
      "log_sizes = gen.normal(size_mean, size_sd ** 2, size=m)", ("tests/test_synthetic.py",),
      "make_fedprox_synthetic's sizes take size_sd as the variance of log n",
      added=(K41 + "::test_fedprox_sizes_have_the_lognormal_spread_asked_for",)),
    M("Y02", SYN, "sizes = np.exp(log_sizes).astype(np.int64) + size_min",
      "sizes = np.round(np.exp(log_sizes)).astype(np.int64) + size_min", ("tests/test_synthetic.py",),
      "make_fedprox_synthetic rounds the lognormal part where the authors truncate (int)"),
    M("R01", UNIT_STORE, "            if not _pid_alive(pid):\n                return True\n",
      "            if not _pid_alive(pid):\n                return False\n", _R,
      "a claim of a dead process on this host is waited on (until stale_after)",
      added=(K41 + "::test_a_dead_claim_is_taken_over_and_a_live_one_next_to_it_is_not",)),
    M("R02", UNIT_STORE, "return now is not None and now != start",
      "return now is None or now != start", _R,
      "a claim of a live process whose start time cannot be read is broken",
      added=(K41 + "::test_a_live_claim_whose_start_time_cannot_be_read_is_respected",)),
    M("R03", RUN, 'if state in ("Z", "X"):', 'if state == "X":', ("tests/test_runner_orphans.py",),
      "a worker whose parent is a zombie keeps running and writing units",
      added=(K41 + "::test_a_zombie_or_a_later_process_with_the_pid_is_not_the_owner",)),
    M("R04", RUN, "return start is None or now is None or now == start",
      "return start is None or now is None or now >= start", ("tests/test_runner_orphans.py",),
      "a worker takes a later process with its parent's pid for its parent",
      added=(K41 + "::test_a_zombie_or_a_later_process_with_the_pid_is_not_the_owner",)),
    M("P01", CTRL, 'if control.get("verdict") == NOT_SUPPORTED:',
      'if control.get("verdict") != HOLDS:', ("tests/test_controls.py",),
      "a claim whose control was inconclusive keeps 'holds'"),
    M("P02", CTRL, 'if kind != "claim" or rule_verdict != HOLDS:', "if rule_verdict != HOLDS:",
      ("tests/test_controls.py",), "a reproducibility note is lowered for lack of a control",
      added=(K41 + "::test_a_note_keeps_its_verdict_without_a_control",)),
    M("P03", CTRL, '_git(root, "merge-base", "--is-ancestor", commit, c)',
      '_git(root, "merge-base", "--is-ancestor", c, commit)', ("tests/test_controls.py",),
      "the history check accepts a record committed before its thresholds"),
    M("P04", CTRL, 'mine = [t for t in touched if t.startswith(f"{out}/{sid}_")',
      'mine = [t for t in touched if t.startswith(f"{out}/{sid}.")', ("tests/test_controls.py",),
      "the history check accepts thresholds committed together with their record"),
    M("E01", LOSS, 'HUBER_LOSS = Loss("huber", 2, (0.0, 1.0), param="delta",',
      'HUBER_LOSS = Loss("huber", 2, (0.0, 2.0), param="delta",', _E,
      "the Huber loss's curvature bound (its L, so 1/L steps) is doubled",
      added=(K41 + "::test_each_losss_curvature_range_is_attained",)),
    M("E02", LOSS, "return _BY_CODE[check_code(code)].arrays[2](z, y, delta, xp)",
      "return _BY_CODE[check_code(code)].arrays[1](z, y, delta, xp)", _E,
      "the array form of the second derivative (JAX, the constants) is the first derivative"),
    M("E03", LOSS, "    elif code == 2:\n        return huber_derivative(z, y, delta)\n",
      "    elif code == 2:\n        return huber_value(z, y, delta)\n", _E + _K,
      "the kernel's dispatcher runs the Huber loss's value as its derivative"),
]

#: the tests added (issue 25) to kill the mutants that survived the first run ("before"); L01 and
#: L02 are killed by the kernel-against-reference grid itself since tests/naive.py computes its
#: losses on its own
ADDED = {
    "K02": (KT + "::test_a_nan_loss_of_model_0_never_wins",),
    "K14": (KT + "::test_early_stop_at_a_step_exactly_tol",),
    "K15": (KT + "::test_early_stop_waits_for_unchanged_assignments",),
    "K18": (KT + "::test_a_parameter_exactly_at_the_threshold_has_not_diverged",),
    "K19": (KT + "::test_an_infinite_training_loss_is_divergence",),
    "K22": (KT + "::test_models_equal_in_one_coordinate_are_not_duplicates",),
    **{g: (KT + "::test_certificate_rule_at_its_edges",) for g in ("G02", "G03", "G04", "G05")},
    **{g: (KT + "::test_bounds_from_an_exact_evaluation_and_the_distance_from_the_anchor",)
       for g in ("G06", "G07")},
    "G11": (KT + "::test_a_run_whose_partition_changes_gives_its_grams_back",),
    "S03": (KT + "::test_a_diverged_run_is_never_the_kept_run_even_with_a_finite_loss",),
    "S07": (KT + "::test_success_intervals_are_made_at_the_confidence_asked_for",),
    "T01": (KT + "::test_a_unit_changed_in_place_fails_its_checksum",),
    **{t: (KT + "::test_legacy_result_units_cut_mid_line_or_with_an_empty_column_are_not_done",)
       for t in ("T03", "T05")},
    "T08": (KT + "::test_a_record_with_another_row_count_is_not_done",),
    **{v: (KT + "::test_at_most_and_at_least_refute_only_beyond_the_margin",)
       for v in ("V02", "V03")},
    "D13": (KT + "::test_fptab1_over_splitting_needs_the_whole_interval_above_zero",),
}
MUTANTS = [replace(m, added=ADDED.get(m.id, m.added)) for m in MUTANTS]

#: mutants no test can tell apart from the original, each with its argument
EQUIVALENT = {
    "L06": "at r == delta both branches return -delta (the value -r equals -delta)",
    "F02": "scipy's connected_components numbers the components in the order it first meets a "
           "node, scanning nodes 0, 1, ...: `first` is increasing, so argsort(first) and its "
           "inverse are both the identity",
    "S06": "trial_success has one row per (cell, trial), so the rows of a cell are its distinct "
           "trials: count == nunique",
}


# ---------------------------------------------------------------------------------- the runner
def _find(mut: Mutant, root: Path | None) -> str:
    """The text of ``mut.file`` in ``root`` (None: the checkout's HEAD), where ``mut.old`` must
    occur exactly once."""
    text = (root / mut.file).read_text() if root is not None else \
        _git("show", f"HEAD:{mut.file}").stdout
    n = text.count(mut.old)
    if n != 1:
        raise ValueError(f"{mut.id}: the snippet occurs {n} times in {mut.file}: {mut.old!r}")
    return text


def _git(*args, cwd=ROOT, check=True):
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True)


def prepare(wt: Path) -> None:
    """The worktree at the checkout's HEAD, unmutated, with the checkout's tests copied in."""
    head = _git("rev-parse", "HEAD").stdout.strip()
    if not (wt / ".git").exists():
        _git("worktree", "add", "--detach", str(wt), head)
    _git("checkout", "--detach", "--force", head, cwd=wt)
    _git("checkout", "--", ".", cwd=wt)
    shutil.copytree(ROOT / "tests", wt / "tests", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _env(wt: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(wt), NUMBA_DISABLE_JIT="1",
               NUMBA_CACHE_DIR=str(wt.parent / (wt.name + "-numba")), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("MIXLINREG_TESTS_GLOBAL_RANDOM_SEED", None)
    return env


def _selection(mut: Mutant, wt: Path, with_added: bool) -> list:
    """pytest arguments: ``tests`` plus (``with_added``) the ``added`` tests that exist in wt.

    ``-k`` filters only the ``tests`` part: the added tests are named node IDs (run as a second
    selection when ``-k`` is used, see :func:`run_one`)."""
    added = [a for a in mut.added if (wt / a.split("::")[0]).exists()] if with_added else []
    return list(mut.tests), added


def _pytest(args, wt, timeout):
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow",
           "-n", "0", "-W", "ignore", *args]  # one process: -x stops at the first kill
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=wt, env=_env(wt), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t0, ""
    out = p.stdout + p.stderr
    if p.returncode == 5:  # nothing collected: a selection that selects nothing is a bug here
        return "empty", time.perf_counter() - t0, out
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, flags=re.M)
    return ("pass" if p.returncode == 0 else "fail"), time.perf_counter() - t0, \
        (failed[0] if failed else out.strip().splitlines()[-1] if out.strip() else "")


def run_one(mut: Mutant, wt: Path, with_added: bool, timeout: float) -> dict:
    text = _find(mut, wt)
    path = wt / mut.file
    path.write_text(text.replace(mut.old, mut.new, 1))
    try:
        base, added = _selection(mut, wt, with_added)
        status, secs, by = _pytest(base, wt, timeout)
        if status == "pass" and added:
            status, s2, by = _pytest(added, wt, timeout)
            secs += s2
    finally:
        _git("checkout", "--", mut.file, cwd=wt)
    killed = status in ("fail", "timeout")
    if status == "empty":
        raise RuntimeError(f"{mut.id}: its selection collects no test: {by}")
    return dict(id=mut.id, status="killed" if killed else "survived",
                by=("timeout" if status == "timeout" else by) if killed else "",
                seconds=round(secs, 1))


def baseline(muts, wt: Path, with_added: bool, timeout: float) -> None:
    """Every distinct selection passes on the unmutated copy (else a kill would mean nothing)."""
    seen = set()
    for mut in muts:
        for args in _selection(mut, wt, with_added):
            key = tuple(args)
            if not args or key in seen:
                continue
            seen.add(key)
            status, secs, by = _pytest(args, wt, timeout)
            detail = by if status != "pass" else ""
            print(f"baseline {' '.join(args)[:90]}: {status} ({secs:.0f} s) {detail}", flush=True)
            if status != "pass":
                raise SystemExit(f"the unmutated copy fails {args}: {by}")


def table(results, label, seconds) -> str:
    by_id = {m.id: m for m in MUTANTS}
    killed = sum(r["status"] == "killed" for r in results)
    eq = [r for r in results if r["id"] in EQUIVALENT]
    eq_surv = sum(r["status"] == "survived" for r in eq)
    non_eq = len(results) - len(eq)
    killed_non_eq = sum(r["status"] == "killed" for r in results if r["id"] not in EQUIVALENT)
    lines = [f"## Mutation score, {label}", "",
             f"{killed} of {len(results)} mutants killed; of the {non_eq} not argued equivalent, "
             f"{killed_non_eq} killed ({100 * killed_non_eq / max(non_eq, 1):.0f}%); "
             f"{len(eq)} argued equivalent ({eq_surv} survive, as they must). "
             f"Run time {seconds / 60:.1f} min (`python probes/mutants.py`).", "",
             "| mutant | file | change | result | killed by | s |", "|---|---|---|---|---|---|"]
    for r in results:
        m = by_id[r["id"]]
        res = r["status"] + (" (equivalent)" if m.id in EQUIVALENT else "")
        by = r["by"].replace("|", "\\|")
        why = m.why.replace("|", "\\|")
        lines.append(f"| {m.id} | {m.file.replace('mixlinreg/', '')} | {why} | {res} | "
                     f"{by or '-'} | {r['seconds']} |")
    if eq:
        lines += ["", "Equivalent mutants:", ""]
        lines += [f"- {i}: {why}" for i, why in EQUIVALENT.items()]
    return "\n".join(lines) + "\n"


def _score(results):
    non_eq = [r for r in results if r["id"] not in EQUIVALENT]
    k = sum(r["status"] == "killed" for r in non_eq)
    return (f"{sum(r['status'] == 'killed' for r in results)} of {len(results)} killed; "
            f"{k} of the {len(non_eq)} not argued equivalent ({100 * k / max(len(non_eq), 1):.0f}%)")


def merged(before, after) -> str:
    """One table of two runs' results (``--json`` files): the score before and after, and per
    mutant its tests, both outcomes and the test that killed it."""
    by_id = {m.id: m for m in MUTANTS}
    b = {r["id"]: r for r in before}
    lines = ["| mutant | file | the mistake | tests written for it | before | after: killed by |",
             "|---|---|---|---|---|---|"]
    for r in after:
        m = by_id[r["id"]]
        was = b.get(m.id, {}).get("status", "-")
        now = (r["by"] or r["status"]).replace("|", "\\|")
        if m.id in EQUIVALENT:
            now = f"{r['status']} (equivalent: {EQUIVALENT[m.id]})"
        elif was == "survived":
            now = f"**{now}**"
        why = m.why.replace("|", "\\|")
        lines.append(f"| {m.id} | {m.file.replace('mixlinreg/', '')} | {why} | "
                     f"`{' '.join(m.tests)}` | {was} | {now} |")
    return (f"Before: {_score(before)}. After: {_score(after)}.\n\n" + "\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--worktree", default="/tmp/mut-wt")
    ap.add_argument("--out", default=None, help="write the table here (default: print it)")
    ap.add_argument("--json", default=None, help="write the raw results here")
    ap.add_argument("--label", default="now")
    ap.add_argument("--before-tests", action="store_true",
                    help="run only each mutant's original tests, not the added ones")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--merge", nargs=2, metavar=("BEFORE.json", "AFTER.json"),
                    help="print one table of two runs' --json results; nothing is run")
    a = ap.parse_args(argv)
    if a.merge:
        before, after = (json.loads(Path(f).read_text()) for f in a.merge)
        print(merged(before, after))
        return 0
    ids = [m.id for m in MUTANTS]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate mutant IDs")
    muts = [m for m in MUTANTS if a.only is None or m.id in a.only]
    if a.list:
        for m in muts:
            print(f"{m.id} {m.file}: {m.why}\n    tests: {' '.join(m.tests)}"
                  + (f"\n    added: {' '.join(m.added)}" if m.added else ""))
        return 0
    for m in muts:
        _find(m, None)  # every snippet is in HEAD, which the worktree checks out
    if a.check:
        print(f"{len(muts)} mutants, every snippet found once in HEAD")
        return 0
    wt = Path(a.worktree)
    prepare(wt)
    for m in muts:
        _find(m, wt)
    with_added = not a.before_tests
    t0 = time.perf_counter()
    if not a.no_baseline:
        baseline(muts, wt, with_added, a.timeout)
    results = []
    for m in muts:
        r = run_one(m, wt, with_added, a.timeout)
        results.append(r)
        print(f"{m.id}: {r['status']:8s} {r['seconds']:6.1f} s  {r['by']}", flush=True)
    text = table(results, a.label, time.perf_counter() - t0)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    bad = [r["id"] for r in results if (r["status"] == "survived") != (r["id"] in EQUIVALENT)]
    if bad:
        print(f"not as expected (survivors not argued equivalent, or equivalent ones killed): "
              f"{' '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
