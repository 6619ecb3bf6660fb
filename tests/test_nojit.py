"""The kernel's Python source, run without compilation (NUMBA_DISABLE_JIT=1), equals the compiled kernel.

This keeps the kernel bodies readable as plain Python (and coverable), and catches any difference
between numba's and NumPy's semantics for the operations the kernel uses.
"""

import json
import os
import subprocess
import sys

import numpy as np

import mixlinreg as mlr

SCRIPT = r"""
import json, sys
import numpy as np, mixlinreg as mlr
out = {}
for name, kw in json.loads(sys.argv[1]).items():
    mix = mlr.make_mixture(m=10, n=16, d=4, k=2, R=2.0, sigma=0.2, rng=0)
    init = mix.theta_star[None] + 0.4 * np.random.default_rng(1).standard_normal((3, 2, 4))
    part = kw.pop("part", None)
    if part:
        kw["participation"] = np.random.default_rng(2).random((4, 3, 10)) < 0.6
    res = mlr.ifca(mix.X, mix.y, init, [0.05, 0.1, 0.2], n_iter=4, trace=True,
                   theta_star=mix.theta_star, **kw)
    out[name] = [res.theta.tolist(), res.labels.tolist(), res.loss.tolist(),
                 res.trace.loss.tolist(), res.trace.dist.tolist()]
print(json.dumps(out))
"""

CASES = {
    "squared": {},
    "stats": {"method": "stats"},
    "huber_resample": {"loss": "huber", "resample": True},
    "model_avg_part": {"averaging": "model", "local_steps": 2, "part": True},
}


def _run(disable_jit):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_pure_python_kernel_equals_compiled():
    jit, nojit = _run(False), _run(True)
    for name in CASES:
        for a, b in zip(jit[name], nojit[name]):
            # float64; the compiled code may reassociate sums (fastmath) and BLAS may block them
            # differently from NumPy's calls: agreement to 1e-12 relative
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12, atol=1e-14,
                                       err_msg=name)
