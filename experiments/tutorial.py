# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Alternating minimization for a mixture of linear regressions: a lesson with IFCA
#
# This lesson teaches the Iterative Federated Clustering Algorithm (IFCA) of Ghosh, Chung, Yin and
# Ramchandran on the problem it was analysed on: a **mixture of linear regressions**. Every
# number and picture below is computed when the lesson runs, by `mixlinreg` itself.
#
# * Open it as a notebook: `jupytext --to notebook experiments/tutorial.py` (or open the `.py`
#   file directly in JupyterLab with jupytext installed).
# * Run it as a script: `python experiments/tutorial.py` (seconds once numba has compiled the
#   kernel), or `python experiments/tutorial.py --smoke` / `MIXLINREG_SMOKE=1` (fewer iterations
#   and starts; the test suite runs this). Set `MIXLINREG_LESSON_FIGURES=DIR` to keep the figures.
#
# Contents: 1. the model from scratch; 2. one IFCA step by hand; 3. a whole run; 4. what goes wrong
# (collapse, a bad start, too little separation, too large a step); 5. alpha0 on the basin map;
# 6. why restarts help; 7. resampling and the contraction of Theorem 1; 8. reading
# `paper_checks.md`; 9. exercises: functions you fill in, with checks; the solutions are in
# `experiments/tutorial_solutions.py` (try first).
#
# Every sentence below that describes a run is either printed from that run or checked by an
# `assert` right after it, so the text cannot drift from the numbers.

# %%
import os
import sys
import time
from pathlib import Path

import matplotlib

IN_NOTEBOOK = "ipykernel" in sys.modules
if not IN_NOTEBOOK:
    matplotlib.use("Agg")  # a script: draw off-screen
import matplotlib.pyplot as plt
import numpy as np

import mixlinreg as mlr
from mixlinreg import teach

SMOKE = os.environ.get("MIXLINREG_SMOKE", "") == "1" or "--smoke" in sys.argv
T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1] if "__file__" in globals() else Path.cwd().parent
# sizes: machines and points per machine (tiny either way), then iterations, basin grid, starts
M, N = 30, 15
T_ITER, GRID, N_STARTS = (8, 7, 40) if SMOKE else (25, 41, 400)
# runs whose numbers the text states: the same length in both modes, and the same as the
# committed views (`mixlinreg teach`: lines 20 iterations, soft 60, basin 30) and the gallery
T_LINES, T_SOFT, T_BASIN, T_STEP = 20, 60, 30, 100
print(f"mixlinreg {mlr.__version__}; {'smoke' if SMOKE else 'full'} sizes: m = {M}, n = {N}")


FIG_DIR = os.environ.get("MIXLINREG_LESSON_FIGURES")  # set it to keep the figures as PNGs
if FIG_DIR:
    Path(FIG_DIR).mkdir(parents=True, exist_ok=True)


def show(fig, name):
    """Display a figure in a notebook; save it under $MIXLINREG_LESSON_FIGURES if set."""
    if IN_NOTEBOOK:
        from IPython.display import display

        display(fig)
    if FIG_DIR:
        fig.savefig(Path(FIG_DIR) / f"{name}.png", dpi=60 if SMOKE else 100)
    plt.close(fig)


# %% [markdown]
# ## 1. A mixture of linear regressions, from scratch
#
# There are `m` machines (think: phones, hospitals). Machine `i` belongs to one of `k` clusters,
# which nobody tells us, and holds `n` points `(t, y)` with `y = a_j + b_j t + noise`, the line
# `(a_j, b_j)` of its cluster. With the design row `x = (1, t)` (an intercept column) this is
# `y = <x, theta*_j> + sigma eps`, the linear model of the paper's Section 5.1 with `d = 2`.

# %%
rng = np.random.default_rng(0)
k, sigma = 3, 0.5
theta_star = np.array([[-1.5, 1.0], [1.5, 0.5], [0.0, -1.5]])      # (a_j, b_j)
cluster = (np.arange(M) * k) // M                                     # machine i's true cluster
t = rng.standard_normal((M, N))
X = np.stack([np.ones_like(t), t], axis=-1)                           # (m, n, 2): rows (1, t)
y = np.einsum("mnd,md->mn", X, theta_star[cluster]) + sigma * rng.standard_normal((M, N))
print("X", X.shape, "y", y.shape, "theta*", theta_star.shape)

# the package draws the same model the same way
mix = teach.line_mixture(k=3, m=M, n=N, sigma=sigma, rng=0)
assert np.allclose(mix.X, X) and np.allclose(mix.y, y) and np.array_equal(mix.labels, cluster)

fig, ax = plt.subplots(figsize=(5, 4))
cols = teach.palette(k)
for j in range(k):
    sel = cluster == j
    ax.scatter(t[sel], y[sel], s=10, color=cols[j], marker="os^"[j], label=f"cluster {j + 1}")
ax.set_xlabel("regressor t")
ax.set_ylabel("response y")
ax.legend(title="true cluster (hidden)")
ax.set_title("colour here: the TRUE cluster (IFCA never sees it)", fontsize="medium")
show(fig, "1_data")

# %% [markdown]
# ## 2. One IFCA step by hand, next to `mixlinreg.ifca`
#
# IFCA alternates two steps, like k-means, but clusters **machines** by the **loss of models**:
#
# 1. every machine evaluates its loss `F_i(theta_j) = (1/n) sum (y - <x, theta_j>)^2` under each of
#    the k current models and picks the best one (ties: the lowest index);
# 2. each model takes a gradient step on the machines that picked it; the server divides by `m`,
#    all machines (Algorithm 2 of the paper):
#    `theta_j <- theta_j - (lr / m) sum_{i picked j} (2/n) X_i^T (X_i theta_j - y_i)`.

# %%
theta0 = np.random.default_rng(8).normal(0.0, 1.0, (k, 2))   # a random start
lr = 0.5

F = np.mean((np.einsum("mnd,kd->mnk", X, theta0) - y[:, :, None]) ** 2, axis=1)   # (m, k)
pick = np.argmin(F, axis=1)                                                         # step 1
theta1 = theta0.copy()
for j in range(k):                                                                  # step 2
    grad = sum(2.0 / N * X[i].T @ (X[i] @ theta0[j] - y[i]) for i in np.flatnonzero(pick == j))
    theta1[j] = theta0[j] - lr / M * grad

res = mlr.ifca(X, y, theta0, lr, n_iter=1, trace=True, dtype=np.float64)
print("by hand:\n", theta1.round(6), "\nmixlinreg.ifca:\n", res.theta[0].round(6))
np.testing.assert_allclose(res.theta[0], theta1, rtol=1e-10, atol=1e-12)
np.testing.assert_array_equal(res.trace.labels[0, 0], pick)
print("machines per model after step 1:", np.bincount(pick, minlength=k))

# %% [markdown]
# ## 3. A whole run
#
# `teach.ifca_path` runs `mixlinreg.ifca` and keeps every iterate. **From here on a colour is a
# model** (the model a machine picks), no longer the true cluster of section 1. From this start
# model 2 (orange squares) wins 24 of the 30 machines at the first assignment; as the models
# move, machines switch to the model that now fits them better, and model 2 ends with 10.

# %%
path = teach.ifca_path(mix, theta0, lr, T_LINES)
per_model = teach.machines_per_model(path.labels, k)
print("machines per model:", per_model[:4].tolist(), "...",
      per_model[-1].tolist())
assert np.argmax(per_model[0]) == 1 and per_model[0, 1] == 24 and per_model[-1, 1] == 10
print(f"training loss {path.loss[0]:.3f} -> {path.loss[-1]:.3f}; distance to the truth "
      f"{path.dist[0]:.3f} -> {path.dist[-1]:.3f}")
show(teach.lines_figure(mix, path), "3_lines")
show(teach.plane_figure(mix, path), "3_plane")

# %% [markdown]
# ## 4. What goes wrong
#
# ### 4a. Collapse: two models start on the same line
# A model moves only by the gradients of the machines that pick it (a model no machine picks
# does not move at all). Start two models near line 1 and none near line 2: models 1 and 2 split
# line 1's machines between them, and model 3 takes the machines of lines 2 **and** 3 and settles
# between the two lines, so neither of them gets a model of its own.

# %%
bad = np.array([theta_star[0] + [0.3, 0.2], theta_star[0] + [-0.2, -0.4],
                theta_star[2] + [0.5, 0.5]])
stuck = teach.ifca_path(mix, bad, lr, T_SOFT)
facts = teach.path_facts(stuck, mix)
for j in range(k):
    print(f"model {j + 1}: machines at the start {facts['counts_start'][j]}, fewest "
          f"{facts['counts_min'][j]}, at the end {facts['counts_end'][j]}; holds lines "
          f"{facts['lines_end'][j]} at the end; moved {facts['moved'][j]:.2f}")
print(f"distance to the truth {stuck.dist[-1]:.3f}")
assert facts["lines_end"][:2] == [[1], [1]] and facts["lines_end"][2] == [2, 3]
assert facts["between"][2] and facts["lines_unfound"] == [2, 3] and stuck.dist[-1] > 0.5

# %% [markdown]
# Soft assignments (`mixlinreg.baselines.soft_ifca`) weigh machine i's pull on model j by
# `exp(-F_i(theta_j) / temperature)`, normalized over the models, so every model feels every
# machine. Is that EM? For Gaussian noise and equal cluster weights, EM's E-step gives machine i
# the weights `exp(-n F_i(theta_j) / (2 sigma^2))`: the same softmax at temperature
# `2 sigma^2 / n` (0.033 here). At that temperature the run stays stuck like hard IFCA; the
# temperatures 2 and 5 below are far softer than EM, a smoothing knob: at 2 the models separate
# and find the three lines, at 5 they all end on the single global fit.

# %%
t_em = teach.em_temperature(sigma, N)
soft = [teach.soft_path(mix, bad, lr, T_SOFT, temperature=tt) for tt in (t_em, 2.0, 5.0)]
for tt, p in zip((t_em, 2.0, 5.0), soft):
    print(f"soft IFCA, temperature {tt:.3f}: distance {p.dist[-1]:.3f}, models hold lines "
          f"{teach.path_facts(p, mix)['lines_end']}")
assert soft[0].dist[-1] > 1.0 and soft[1].dist[-1] < 0.3 and soft[2].dist[-1] > 1.0
assert sorted(teach.path_facts(soft[1], mix)["lines_end"]) == [[1], [2], [3]]
soft = soft[1:]
show(teach.soft_figure(mix, [stuck] + soft, ["hard IFCA", "soft, temperature 2",
                                             "soft, temperature 5"]), "4a_soft")

# %% [markdown]
# ### 4b. A bad start
# The basin map runs one IFCA per starting point of model 1 (the other models held where
# `init_close` puts them) and colours the starts that succeed (final matched distance within
# `0.6 sigma`) by the iterations they needed. Far starts fail: model 1 wins no machine, or steals
# a cluster from another model.

# %%
mix2 = teach.line_mixture(k=2, m=M - M % 2, n=N, sigma=sigma, rng=2)
mix3 = teach.line_mixture(k=3, m=M, n=N, sigma=sigma, rng=3)
maps = [teach.basin_map(mx, lr, T_BASIN, alpha0=0.25, grid=GRID, rng=10 + mx.k)
        for mx in (mix2, mix3)]
for mx, bm in zip((mix2, mix3), maps):
    print(f"k = {mx.k}: {bm.success.mean():.0%} of the starts on the map succeed")
show(teach.basin_figure([mix2, mix3], maps), "4b_basin")

# %% [markdown]
# ### 4c. Too little separation
# When the lines are close compared with the noise, a machine's `n` points cannot tell them
# apart: machines are misassigned, and the models are biased toward each other. Shrink the
# distance between the two lines and compare with the **oracle** that knows the clusters.

# %%
for scale in (1.0, 0.3, 0.1):
    close = teach.line_mixture(k=2, m=M - M % 2, n=N, sigma=sigma,
                               theta_star=scale * np.array(teach.THETA_STAR[2]), rng=4)
    start = mlr.init_close(close.theta_star, 0.25, 1, rng=5)[0]
    p = teach.ifca_path(close, start, lr, 2 * T_ITER)
    orc = mlr.baselines.oracle(close.X, close.y, close.labels).theta
    print(f"Delta = {close.delta:.2f} (Delta/sigma = {close.delta / sigma:.1f}): misclustered "
          f"{1 - mlr.cluster_accuracy(close.labels, p.labels[-1]):.0%}, IFCA error "
          f"{p.dist[-1]:.3f}, oracle error {mlr.dist_matched(orc, close.theta_star):.3f}")

# %% [markdown]
# ### 4d. Too large a step
# With the divisor `m` and correct clusters, model j's update is
# `theta - 2 lr p_j H_j (theta - hat theta_j)`, where `p_j = m_j / m`, `H_j` is the design
# covariance of cluster j's machines (`sum X_i^T X_i / (m_j n)`) and `hat theta_j` their pooled
# least-squares fit. In the population `H_j = I` and the error is multiplied by `|1 - 2 lr p_j|`:
# for two equal clusters, convergence iff `lr < 2`. A real sample has `H_j != I`: along its top
# eigenvector the factor is `|1 - 2 lr p_j lambda_max(H_j)|`, so this draw converges only for
# `lr < 1 / (p_j lambda_max(H_j))` for both clusters: 1.70 for this draw, not 2. At lr = 1.8,
# between the two, the run neither converges nor is flagged: a model overshoots more each step
# until machines change sides, and the distance stays near 1. The kernel freezes and flags a run
# only once its parameters pass `diverge_threshold` (1e10), as at lr = 2.5.

# %%
thresholds = teach.step_thresholds(mix2.X, mix2.labels)
print("this draw's threshold per cluster, 1 / (p_j lambda_max(H_j)):", thresholds.round(3))
steps = np.array([0.5, 1.0, 1.6, 1.8, 2.5])
start = mlr.init_close(mix2.theta_star, 0.25, 1, rng=6)[0]
r = mlr.ifca(mix2.X, mix2.y, np.repeat(start[None], len(steps), 0), steps, n_iter=T_STEP,
             dtype=np.float64)
final = mlr.dist_matched(r.theta, mix2.theta_star)
for s_, dv, dd in zip(steps, r.diverged, final):
    print(f"lr = {s_:.1f} ({'below' if s_ < thresholds.min() else 'above'} the threshold "
          f"{thresholds.min():.2f}): diverged {bool(dv)}, final distance {dd:.3g}")
assert 1.6 < thresholds.min() < 1.8 < 2.0  # the sentence above, for this draw
assert (final[:3] < 0.1).all() and final[3] > 0.5 and not r.diverged[3] and r.diverged[4]

# %% [markdown]
# ## 5. What alpha0 means on the basin map
#
# Assumption 1 (long version) asks every model to start within `(1/2 - alpha0) Delta` of its
# truth. Each dashed circle on the basin map is that ball for `alpha0 = 0.25`. Theorem 1's
# guarantee needs more than the ball: it is about **resampled** IFCA (fresh points every
# iteration), with step `gamma = c1/p` (a constant `c1` the paper does not give), enough points
# per machine, and it holds with high probability (section 7, and `paper_checks.md`, T1). The runs
# here are plain IFCA (all data every iteration, step 0.5): outside those hypotheses, so the theorem
# guarantees nothing for them; the ball is only a reference. What the runs show: on this easy
# problem the region that succeeds is far larger than the ball. `mlr.init_close` draws starts
# exactly on the ball's boundary; the fraction that succeed, for a few `alpha0`:

# %%
for alpha0 in (0.05, 0.25, 0.45):
    starts = mlr.init_close(mix3.theta_star, alpha0, 10 if SMOKE else 100, rng=7)
    rr = mlr.ifca(mix3.X, mix3.y, starts, lr, n_iter=2 * T_ITER, dtype=np.float64)
    ok = mlr.dist_matched(rr.theta, mix3.theta_star) <= 0.6 * sigma
    print(f"alpha0 = {alpha0}: {ok.mean():.0%} of {len(ok)} starts on the ball succeed (k = 3)")

# %% [markdown]
# ## 6. Why restarts help
#
# A random start succeeds with some probability `q`. Run `R` starts and keep the one with the
# **lowest training loss** (no ground truth needed): if a success always has a lower loss than a
# failure, the chance that the kept run is good is `1 - (1 - q)^R`. `N_STARTS` random starts go
# into one kernel call; groups of R of them emulate R restarts.

# %%
rs = np.random.default_rng(9).normal(0.0, 1.5, (N_STARTS, k, 2))
rr = mlr.ifca(mix3.X, mix3.y, rs, lr, n_iter=2 * T_ITER, dtype=np.float64)
good = mlr.dist_matched(rr.theta, mix3.theta_star) <= 0.6 * sigma
q = good.mean()
print(f"one random start succeeds with q = {q:.2f}")
for R in (1, 2, 5, 10):
    groups = np.arange(N_STARTS // R * R).reshape(-1, R)
    kept = groups[np.arange(len(groups)), np.argmin(rr.loss[groups], axis=1)]
    print(f"R = {R:2d}: kept run good in {good[kept].mean():.0%} of {len(groups)} groups; "
          f"1 - (1 - q)^R = {1 - (1 - q) ** R:.0%}")

# %% [markdown]
# ## 7. Resampling and the contraction of Theorem 1
#
# The theorems analyse a variant: every iteration uses **fresh** points (the data are split into
# `2T` blocks; one estimates the clusters, the other gives the gradient), and the step is
# `gamma = c1/p`, `p` the smallest cluster's fraction and `c1` a constant the paper leaves open.
# Theorem 1 then says each step multiplies the error by 1/2, plus a statistical term and a
# misclustering term (Corollary 1: down to a noise floor, its constant unknown). Below: **two
# equal clusters** (`p = 1/2`) and `gamma = 1/(4p)`, the choice of `c1` that makes the population
# factor `|1 - 2 gamma p|` exactly 1/2; there the factor 1/2 holds (`paper_checks.md`, T1: "equal
# sizes: holds"). With unequal sizes it is a different story (after section 8).
# `teach.contraction_run` measures the factor.

# %%
c = teach.contraction_run(**({"m": 60, "n_prime": 10, "d": 4, "n_iter": 6, "n_runs": 2}
                             if SMOKE else {}))
print(c.summary())
show(teach.contraction_figure(c), "7_contraction")

# %% [markdown]
# ## 8. Reading `paper_checks.md`
#
# `mixlinreg check` measures every claim of the paper at scale and writes `paper_checks.md`:
# per claim the sentence, the command, the numbers with intervals and a verdict (**holds**,
# **holds with a caveat**, **not supported**, **inconclusive**); then the reproducibility note D1
# (text vs the authors' code: not a claim of the paper, so its outcome is **same results**,
# **results differ** or **undetermined**, never a verdict). Its summary tables:

# %%
checks = ROOT / "paper_checks.md"
if checks.is_file():
    rows = [ln for ln in checks.read_text().splitlines() if ln.startswith("| [")]
    for ln in rows:
        cells = [x.strip() for x in ln.strip("|").split("|")]
        print(f"{cells[0].split(']')[0][1:]:>4}  {cells[2].strip('*'):<22} {cells[1]}")
        if cells[0].startswith("[T1]"):
            print(f"{'':>6}by condition: {cells[3]}")
else:
    print("paper_checks.md is not next to this lesson; see the repository's copy")

# %% [markdown]
# Read T1 next to section 7: with **equal** clusters the measured factor is 1/2, as above. With
# unequal ones (`p` the small cluster's fraction, `p_max` the large one's), the step
# `gamma = 1/(4p)` gives the small cluster 1/2 and the large one `|1 - 2 gamma p_max| =
# |1 - p_max / (2p)|`: 0.17 at 0.3/0.7, it contracts fine. The trouble is that the small cluster
# needs `gamma >= 1/(4p)` and the large one `gamma <= 3/(4 p_max)` to get a factor of at most
# 1/2: once `p_max > 3p` no single step does both, so T1 is "not supported" as stated (and its
# `c1` cannot be one constant for all sizes). Exercise 2 below is the formula behind this.

# %%
for p_small in (0.3, 0.25, 0.2):
    p_large = 1 - p_small
    rng_ = teach.step_range_for_half(p_small, p_large)
    print(f"p = {p_small}, p_max = {p_large}: at gamma = 1/(4p) the factors are "
          f"{teach.factor_at_quarter_step(p_small, p_large)[0]:.2f} (small) and "
          f"{teach.factor_at_quarter_step(p_small, p_large)[1]:.2f} (large); steps giving both "
          f"<= 1/2: {'none' if rng_ is None else f'[{rng_[0]:.3f}, {rng_[1]:.3f}]'}")
assert abs(teach.factor_at_quarter_step(0.3, 0.7)[1] - 1 / 6) < 1e-12
assert teach.step_range_for_half(0.2, 0.8) is None

# %% [markdown]
# ## 9. Exercises (with checks you can run)
#
# Each exercise is a function for you to fill in: replace `raise NotImplementedError` with your
# code and run the cell. The check below it runs your function against what `mixlinreg.ifca`
# actually does on a few probes (`mixlinreg.teach.exercises`), says "correct" or what is off,
# and rejects the usual slips. Solutions: `experiments/tutorial_solutions.py` (try first).
#
# **Exercise 1.** Write the assignment step: for every machine, the index (0-based) of the model
# with the lowest mean squared error on that machine's points. `X` is (m, n, d), `y` (m, n),
# `theta` (k, d); return an int array of shape (m,). Ties go to the lowest index.

# %%
from mixlinreg.teach import exercises


def my_assign(X, y, theta):
    raise NotImplementedError  # your code here


exercises.check_assign(my_assign)

# %% [markdown]
# **Exercise 2.** With correct clusters, the divisor `m` and `E[x x^T] = I`, by what factor
# does one step multiply the size of cluster j's error `||theta_j - theta*_j||`, in expectation
# over the data, as a function of `g = lr * p_j`? The check measures it on resampled IFCA at
# `g` = 0.1, 0.2, 0.7 and 0.85. (Hint: write the expected update as in section 4d.)

# %%
def my_factor(g):
    raise NotImplementedError  # your code here


exercises.check_factor(my_factor)

# %% [markdown]
# **Exercise 3.** For a cluster holding a fraction `p` of the machines, whose machines' design
# covariance is `H` (a d x d matrix, as in section 4d), what is the largest step size at which
# its correctly clustered model still converges? The check runs IFCA on three problems just below
# (0.98x) and just above (1.02x) your answer: it must converge below and blow up above.

# %%
def my_lr_max(p, H):
    raise NotImplementedError  # your code here


exercises.check_lr_max(my_lr_max)

# %%
print(f"lesson finished in {time.perf_counter() - T0:.1f} s")
