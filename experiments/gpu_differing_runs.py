"""Which runs differ between a JAX store and the committed numba rows? Their step sizes and success.

    python experiments/gpu_differing_runs.py STORE_DIR COMPARE_TXT

Reads the per-unit lists that ``python experiments/jax_unit_rows.py --compare STORE_DIR`` printed
(``COMPARE_TXT``) and prints, for each class of :func:`mixlinreg.harness.agreement.unit_agreement`
(not reproducible by numba, one-ulp sensitive, disagree), how many runs it holds at each step size, how many of them succeed under the authors'
rule in the numba rows and in the JAX rows, and the largest final loss change among them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixlinreg.harness import ResultStore  # noqa: E402
from mixlinreg.metrics import success_authors  # noqa: E402

CLASSES = ("not reproducible by numba", "one-ulp sensitive", "disagree")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    store = ResultStore.open(argv[0])
    ref = ResultStore.find(ROOT / "figures" / "stores", store.exp)
    plus = store.exp.protocol["success_plus"]
    found = {c: [] for c in CLASSES}
    for line in Path(argv[1]).read_text().splitlines():
        unit = line.split(":")[0]
        if not unit.startswith("m"):
            continue
        for c in CLASSES:
            m = re.search(re.escape(c) + r" \[([0-9, ]*)\]", line)
            found[c] += [(unit, int(i)) for i in m.group(1).split(",") if i.strip()] if m else []
    for c in CLASSES:
        steps, ok_ref, ok_jax = {}, 0, 0
        for unit, i in found[c]:
            a, b = ref.units.read(unit).iloc[i], store.units.read(unit).iloc[i]
            s = float(a["step"])
            steps[s] = steps.get(s, 0) + 1
            ok_ref += bool(success_authors(np.array([a["dist_nearest"]]), np.array([a["sigma"]]),
                                           plus=plus)[0])
            ok_jax += bool(success_authors(np.array([b["dist_nearest"]]), np.array([b["sigma"]]),
                                           plus=plus)[0])
        print(f"{store.exp.name} {c}: {len(found[c])} runs; by step size "
              f"{dict(sorted(steps.items()))}; successful (authors' rule) in the numba rows "
              f"{ok_ref}, in the JAX rows {ok_jax}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
