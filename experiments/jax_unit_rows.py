"""One Figure 2 unit on the JAX backend, saved for a look elsewhere: its rows, final models and loss trace.

    python experiments/jax_unit_rows.py PANEL PRESET UNIT [UNIT ...] --out DIR

For each unit writes ``DIR/<panel>_<unit>_rows.csv`` (the harness's rows, ``method`` "jax") and
``DIR/<panel>_<unit>_state.npz`` with the final models ``theta`` (R, k, d) in the working dtype and
the per-iteration training loss ``trace_loss`` (n_iter + 1, R) of a second call with
``trace=True``, so that runs that differ from the numba rows (``experiments/gpu_check.py``) can be
examined on a machine without the GPU: ``python experiments/jax_unit_rows.py --compare DIR``
checks every ``*_rows.csv`` there (or every unit of a result store folder DIR, such as one that
``mixlinreg reproduce --kernel jax`` wrote) against the committed rows with
:func:`mixlinreg.harness.agreement.unit_agreement`, the rule of ``mixlinreg check-agreement``
(success and divergence flags identical; distances within 1e-3 for every run that numba's direct
path reproduces under another packing; the others listed, not failed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixlinreg import ifca  # noqa: E402
from mixlinreg.harness import ResultStore, load_config  # noqa: E402
from mixlinreg.harness.agreement import unit_agreement  # noqa: E402
from mixlinreg.harness.run import unit_job, unit_rows  # noqa: E402


def compare(folder, stores):
    """Each ``*_rows.csv`` of ``folder``, or each finished unit of the result store ``folder``,
    against the committed rows (:func:`unit_agreement`); a total line last."""
    import pandas as pd

    folder = Path(folder)
    if (folder / "manifest.json").exists():
        store = ResultStore.open(folder)
        order = {u.id: i for i, u in enumerate(store.exp.units())}
        items = [(u, lambda u=u: store.units.read(u)) for u in sorted(store.done(), key=order.get)]
    else:
        items = [(p.name, lambda p=p: pd.read_csv(p)) for p in sorted(folder.glob("*_rows.csv"))]
    total = dict(units=0, agree=0, agree_rounding=0, beyond=0, not_repro=0, ulp=0, disagree=0,
                 flags=0, diverged=0)
    for name, read in items:
        rows = read()
        exp = load_config(str(rows["experiment"].iloc[0]), preset=str(rows["preset"].iloc[0]))
        unit = exp.unit(str(rows["unit"].iloc[0]))
        ref = ResultStore.find(stores, exp).units.read(unit.id)
        out = unit_agreement(exp, unit, ref, rows)
        flags = [out[f"flags_changed_{r}"] for r in ("authors", "text", "best_loss")]
        print(f"{name}: flags changed {flags}, divergence flags changed {out['diverged_changed']} "
              f"{out['diverged_runs']}, "
              f"runs beyond {out['runs_beyond']}: not reproducible by numba "
              f"{out['not_reproducible']}, one-ulp sensitive {out['ulp_sensitive']}, disagree "
              f"{out['disagree']}; agrees {out['agrees']}, to rounding {out['agrees_to_rounding']}",
              flush=True)
        total["units"] += 1
        total["agree"] += out["agrees"]
        total["agree_rounding"] += out["agrees_to_rounding"]
        total["ulp"] += len(out["ulp_sensitive"])
        total["beyond"] += out["runs_beyond"]
        total["not_repro"] += len(out["not_reproducible"])
        total["disagree"] += len(out["disagree"])
        total["flags"] += sum(flags)
        total["diverged"] += out["diverged_changed"]
    print(f"total: {total['agree']} of {total['units']} units agree ({total['agree_rounding']} to "
          f"rounding); success flags changed {total['flags']}; divergence flags changed "
          f"{total['diverged']}; {total['beyond']} runs beyond the "
          f"tolerance: {total['not_repro']} not reproducible by numba under another packing, "
          f"{total['ulp']} one-ulp sensitive, {total['disagree']} disagree")
    return 0


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--compare"]:
        ap = argparse.ArgumentParser(description="compare saved rows with the committed stores")
        ap.add_argument("--compare", required=True, metavar="DIR")
        ap.add_argument("--stores", default=str(ROOT / "figures" / "stores"))
        a = ap.parse_args(argv)
        return compare(a.compare, a.stores)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("panel")
    ap.add_argument("preset")
    ap.add_argument("units", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    exp = load_config(args.panel, preset=args.preset)
    p = exp.protocol
    for uid in args.units:
        unit = exp.unit(uid)
        job = unit_job(exp, unit)
        kw = dict(n_iter=p["n_iter"], y_index=job.y_index, early_stop=p["early_stop"], tol=p["tol"],
                  dtype=job.X.dtype, backend="jax")
        res = ifca(job.X, job.Y, job.init, job.lr, **kw)
        unit_rows(exp, unit, job, res).to_csv(out / f"{exp.name}_{uid}_rows.csv", index=False,
                                              float_format="%.17g")
        traced = ifca(job.X, job.Y, job.init, job.lr, trace=True, **kw)
        same = bool(np.array_equal(traced.theta, res.theta, equal_nan=True))
        np.savez_compressed(out / f"{exp.name}_{uid}_state.npz", theta=res.theta,
                            trace_loss=traced.trace.loss, n_iter=res.n_iter,
                            diverged=res.diverged, traced_equal=same)
        print(f"{exp.name} {uid}: {len(job.lr)} runs, {int(res.diverged.sum())} diverged; the traced "
              f"call gave bitwise the same models: {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
