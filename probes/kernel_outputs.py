"""Bitwise check of a kernel change: save ifca's outputs on 14 configurations per dtype, compare later.

    python probes/kernel_outputs.py save before.npz      # on the old code
    python probes/kernel_outputs.py compare before.npz   # on the new code: lists what differs

The configurations cover the direct path (with trace), ridge, sufficient statistics, the certified-
Gram path (one and three response variants), resampling, model averaging, partial participation,
early stop, divergence, the Huber and logistic losses and n_iter = 0, in float32 and float64. A
refactor that only moves code should leave every array bitwise equal; float64 results of the
Gram path may differ at 1e-14 relative with memory alignment (BLAS kernels).
"""
import sys, numpy as np, mixlinreg as mlr
from mixlinreg import ifca

def cases():
    out = {}
    for dt in (np.float32, np.float64):
        mix = mlr.make_mixture(m=24, n=40, d=12, k=3, R=1.0, sigma=0.3, rng=1, dtype=dt)
        init = mlr.init_close(mix.theta_star, alpha0=0.4, n_runs=7, rng=2).astype(dt)
        lr = np.linspace(0.05, 0.6, 7)
        y3 = np.stack([mix.y, mix.y * 1.5, mix.y + 0.1])
        yi = np.arange(7) % 3
        kw = dict(theta_star=mix.theta_star)
        base = dict(X=mix.X, y=mix.y, init=init, lr=lr, n_iter=40)
        c = {
          "data": dict(base, method="data", trace=True, **kw),
          "data_l2": dict(base, method="data", l2=0.05),
          "stats": dict(base, method="stats") if dt == np.float64 else None,
          "gram": dict(base, method="gram", n_iter=60),
          "gram_y3": dict(base, y=y3, y_index=yi, method="gram", n_iter=60, l2=0.01),
          "data_y3": dict(base, y=y3, y_index=yi, method="data", trace=True, theta_star=np.stack([mix.theta_star]*3)),
          "resample": dict(base, resample=True, n_iter=10),
          "model": dict(base, averaging="model", local_steps=3),
          "part": dict(base, participation=10, rng=5, trace=True),
          "early": dict(base, early_stop=True, tol=1e-4),
          "diverge": dict(base, lr=np.full(7, 40.0)),
          "huber": dict(base, loss="huber", huber_delta=0.5),
          "logistic": dict(base, y=(mix.y > 0).astype(dt), loss="logistic", l2=0.01),
          "n_iter0": dict(base, n_iter=0),
        }
        for name, kwa in c.items():
            if kwa is None:
                continue
            r = ifca(**kwa)
            key = f"{np.dtype(dt).name}_{name}"
            out[key + "_theta"] = r.theta; out[key + "_labels"] = r.labels
            out[key + "_loss"] = r.loss; out[key + "_div"] = r.diverged
            out[key + "_conv"] = r.converged; out[key + "_nit"] = r.n_iter
            if r.trace is not None:
                out[key + "_trl"] = r.trace.labels; out[key + "_trloss"] = r.trace.loss
                if r.trace.dist is not None:
                    out[key + "_trd"] = r.trace.dist
    return out

if __name__ == "__main__":
    res = cases()
    if sys.argv[1] == "save":
        np.savez(sys.argv[2], **res)
    else:
        ref = np.load(sys.argv[2])
        assert set(ref.files) == set(res), (set(ref.files) ^ set(res))
        bad = [k for k in ref.files if not np.array_equal(ref[k], res[k], equal_nan=True)]
        print("keys", len(ref.files), "differ:", bad)
        sys.exit(1 if bad else 0)
