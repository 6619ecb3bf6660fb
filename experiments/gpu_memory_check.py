"""The JAX harness's device-memory estimate against the peak a GPU measures (issue 25, class 2).

Run on a machine with JAX on a GPU, from the repository root::

    python experiments/gpu_memory_check.py --out gpu_memory_out

For each Figure 2 panel's largest group (paper preset, trial 0) and a few variants of fig2b (fewer
initializations, so fewer runs per call), one unit runs through the harness
(``run_experiment(kernel="jax")``) in a fresh process, which then reads the device's
``peak_bytes_in_use``; the table compares it with
:func:`mixlinreg.harness._sizing.device_terms`. Last, a config whose unit cannot fit on the card is
given to the CLI, which must refuse it in one line before any unit runs. Writes
``gpu_memory.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TOML = """kind = "figure2"
name = "{name}"
[grid]
m = [{m}]
n = [{n}]
d = [{d}]
k = [{k}]
R = {R}
sigma = {sigma}
[protocol]
steps = {steps}
n_iter = {n_iter}
n_init = {n_init}
trials = 1
dtype = "{dtype}"
theta_scale = "code"
init = "bernoulli"
success_plus = 0.001
seed = 20202
early_stop = false
"""

CHILD = r"""
import json, sys, time
import jax
from mixlinreg.harness import load_config, run_experiment
from mixlinreg.harness._sizing import _DEVICE_MARGIN, device_terms
exp = load_config(sys.argv[1], "paper")
dev = jax.devices()[0]
before = dev.memory_stats()["bytes_in_use"]
t0 = time.perf_counter()
run_experiment(exp, sys.argv[2], kernel="jax", progress=False)
wall = time.perf_counter() - t0
st = dev.memory_stats()
g = {a: max(exp.grid[a]) for a in ("m", "n", "d", "k")}
print(json.dumps(dict(peak=st["peak_bytes_in_use"], before=before, limit=st["bytes_limit"],
                      wall=wall, margin=_DEVICE_MARGIN,
                      terms=device_terms(exp, g["m"], g["n"], g["d"], g["k"]))))
"""


def _panel(name, n_init=None, n_iter=None):
    """The panel's paper values, restricted to its largest (m, n) group."""
    import tomllib

    raw = tomllib.loads((ROOT / "mixlinreg" / "configs" / f"{name}.toml").read_text())
    g, p = raw["grid"], raw["protocol"]
    return dict(name=name, m=max(g["m"]), n=max(g["n"]), d=max(g["d"]), k=max(g["k"]),
                R=g.get("R", [0.5]), sigma=g.get("sigma", [0.1]), steps=p["steps"],
                n_iter=n_iter or p["n_iter"], n_init=n_init or p["n_init"], dtype=p["dtype"])


def measure(tmp, label, values):
    path = Path(tmp) / f"{label}.toml"
    path.write_text(TOML.format(**values))
    res = subprocess.run([sys.executable, "-c", CHILD, str(path), str(Path(tmp) / label)],
                         capture_output=True, text=True, cwd=ROOT, timeout=400)
    if res.returncode != 0:
        return dict(label=label, error=res.stderr.strip().splitlines()[-1:])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    t = out["terms"]
    est = out["margin"] * (t["data"] + max(t["forward"], t["backward"]))  # as largest_device_unit
    cells = len(values["R"]) * len(values["sigma"])
    runs = cells * values["n_init"] * len(values["steps"])
    return dict(label=label, m=values["m"], n=values["n"], d=values["d"], k=values["k"], runs=runs,
                peak_gib=out["peak"] / 2**30, estimate_gib=est / 2**30,
                estimate_over_peak=est / out["peak"], terms_gib={t: v / 2**30 for t, v in
                                                                 out["terms"].items()},
                wall_s=out["wall"], limit_gib=out["limit"] / 2**30)


def refusal(tmp):
    """A unit far larger than the card: the CLI must refuse it in one line, before any unit."""
    values = _panel("fig2b")
    values.update(name="toolarge", m=200000)
    path = Path(tmp) / "toolarge.toml"
    path.write_text(TOML.format(**values))
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mixlinreg.cli", "reproduce", "--config", str(path),
                          "--preset", "paper", "--kernel", "jax", "--out", str(Path(tmp) / "big"),
                          "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    lines = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
    return dict(rc=res.returncode, stderr_lines=lines[-3:], n_lines=len(lines),
                wall_s=time.perf_counter() - t0,
                store_made=(Path(tmp) / "big").exists() and any((Path(tmp) / "big").rglob("*.csv*")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="gpu_memory_out")
    ap.add_argument("--n-iter", type=int, default=20, help="iterations per run (memory does not "
                    "depend on it; the paper's 300 only takes longer) [20]")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = [("fig2a", {}), ("fig2b", {}), ("fig2b_ninit5", {"n_init": 5}),
             ("fig2b_ninit2", {"n_init": 2}), ("fig2c", {}), ("fig2d", {})]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, kw in cases:
            row = measure(tmp, label, _panel(label.split("_")[0], n_iter=args.n_iter, **kw))
            rows.append(row)
            print(json.dumps(row), flush=True)
        ref = refusal(tmp)
    print(json.dumps(ref), flush=True)
    (out / "gpu_memory.json").write_text(json.dumps(dict(rows=rows, refusal=ref), indent=1))
    print("\n| unit | runs per call | peak GiB | estimate GiB | estimate / peak |\n|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['label']} | error: {r['error']} | | | |")
        else:
            print(f"| {r['label']} m{r['m']}_n{r['n']}_d{r['d']}_k{r['k']} | {r['runs']} | "
                  f"{r['peak_gib']:.2f} | {r['estimate_gib']:.2f} | {r['estimate_over_peak']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
