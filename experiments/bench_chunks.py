"""What running :func:`mixlinreg.ifca` in chunks of iterations costs (issue 25, class 4).

``ifca`` runs its direct path in chunks (``mixlinreg/_chunked.py``) so that Ctrl-C stops it; this
times the same calls chunked (the default: chunk length from the measured time per iteration) and
unchunked (``_chunked.CHUNK_ITERATIONS = 0``: one kernel call, as before), interleaved in rounds
whose order alternates, and prints the ratio of the best wall and CPU times (best of the rounds), the chunks a call made and the cost
of dispatching one chunk::

    python experiments/bench_chunks.py            # a few minutes on 2 busy cores
    python experiments/bench_chunks.py --quick    # a few seconds (smaller problems)

Results are compared bit for bit (they must be equal).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mixlinreg as mlr  # noqa: E402
from mixlinreg import _chunked  # noqa: E402

PROBLEMS = {  # name: (make_mixture args, runs, n_iter, dtype, extra ifca options, repeats)
    "Figure 2 size, float32 (m=100, n=100, d=1000, 10 runs)": ((100, 100, 1000, 2, 0.1, 0.1), 10, 30,
                                                               np.float32, dict(method="data"), 1),
    "mid size, float64, trace (m=100, n=200, d=50, 20 runs)": ((100, 200, 50, 2, 1.0, 0.5), 20, 150,
                                                              np.float64,
                                                              dict(trace=True, method="data"), 1),
    "small call (m=20, n=50, d=5, 3 runs)": ((20, 50, 5, 2, 1.0, 0.1), 3, 300, np.float64,
                                             dict(method="data"), 50),
}
QUICK = {
    "mid size, float64": ((40, 100, 20, 2, 1.0, 0.5), 8, 200, np.float64, dict(method="data"), 3),
    "small call (m=20, n=50, d=5)": ((20, 50, 5, 2, 1.0, 0.1), 3, 300, np.float64,
                                     dict(method="data"), 50),
}


class _Counter:
    """Counts chunk dispatches by wrapping ``_chunked._iterations``."""

    def __init__(self):
        self.calls = 0
        self.inner = _chunked._iterations

    def __call__(self, *args):
        self.calls += 1
        return self.inner(*args)


def _time(fn, repeats):
    """Wall and CPU seconds per call (the CPU time of the process: with one numba thread, the
    time the call computed, whatever else the machine runs)."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        out = fn()
    return (time.perf_counter() - t0) / repeats, (time.process_time() - c0) / repeats, out


def bench(name, spec, rounds, threads):
    args, runs, n_iter, dtype, opts, repeats = spec
    opts = dict(opts, n_threads=threads)
    mix = mlr.make_mixture(*args, rng=0, dtype=dtype)
    init = np.random.default_rng(1).standard_normal((runs, args[3], args[2])).astype(dtype)
    call = lambda: mlr.ifca(mix.X, mix.y, init, 0.05, n_iter=n_iter, **opts)  # noqa: E731
    best = {"chunked": np.inf, "unchunked": np.inf}
    cpu = {"chunked": np.inf, "unchunked": np.inf}
    outs = {}
    for mode in ("unchunked", "chunked"):  # load the kernels once
        _chunked.CHUNK_ITERATIONS = 0 if mode == "unchunked" else None
        call()
    counter = _Counter()
    for r in range(rounds):  # interleaved, the order alternating: a busy machine's noise is shared
        for mode in (("unchunked", "chunked") if r % 2 == 0 else ("chunked", "unchunked")):
            _chunked.CHUNK_ITERATIONS = 0 if mode == "unchunked" else None
            _chunked._iterations = counter
            counter.calls = 0
            try:
                t, c, outs[mode] = _time(call, repeats)
            finally:
                _chunked._iterations = counter.inner
            best[mode] = min(best[mode], t)
            cpu[mode] = min(cpu[mode], c)
            if mode == "chunked":
                chunks = counter.calls / repeats
    _chunked.CHUNK_ITERATIONS = None
    a, b = outs["chunked"], outs["unchunked"]
    same = all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
               for f in ("theta", "labels", "loss", "diverged", "n_iter"))
    ratio = best["chunked"] / best["unchunked"]
    print(f"| {name} | {n_iter} | {best['unchunked']:.4f} | {best['chunked']:.4f} | {ratio:.3f} | "
          f"{cpu['unchunked']:.4f} | {cpu['chunked']:.4f} | {cpu['chunked'] / cpu['unchunked']:.3f} | "
          f"{chunks:.0f} | {'yes' if same else 'NO'} |", flush=True)
    return ratio, same


def dispatch_cost():
    """Seconds to dispatch one empty chunk (``it0 == it1``) of a small problem."""
    from mixlinreg._chunked import _iterations
    from mixlinreg.ifca import _Problem

    mix = mlr.make_mixture(20, 50, 5, 2, 1.0, 0.1, rng=0)
    prob = _Problem.of(mix.X, mix.y, np.zeros((3, 2, 5)), 0.1, n_iter=10, loss="squared", l2=0.0,
                       huber_delta=1.0, averaging="gradient", local_steps=1, resample=False,
                       participation=None, y_index=None, theta_star=None, early_stop=False,
                       tol=1e-6, diverge_threshold="auto", trace=False, method="data",
                       gram_memory=2**20, dtype=None, rng=None)
    captured = {}

    def grab(*a):
        captured["args"] = a
        return _iterations(*a)

    _chunked._iterations = grab
    try:
        from mixlinreg.ifca import _run

        _run(prob, 1)
    finally:
        _chunked._iterations = _iterations
    args = list(captured["args"])
    args[1] = args[0]  # an empty chunk
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        _iterations(*args)
    return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small problems only")
    ap.add_argument("--rounds", type=int, default=8, help="interleaved rounds per problem (best of)")
    ap.add_argument("--threads", type=int, default=None,
                    help="numba threads (default all; 1 keeps a busy machine's thread waits out)")
    args = ap.parse_args(argv)
    print(f"chunk target {_chunked.CHUNK_SECONDS} s; dispatch of one chunk: "
          f"{dispatch_cost() * 1e6:.0f} us; numba threads: {args.threads or 'all'}\n")
    print("| problem | n_iter | unchunked s | chunked s | ratio | CPU unchunked s | CPU chunked s | "
          "CPU ratio | chunks | equal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for name, spec in (QUICK if args.quick else PROBLEMS).items():
        _, same = bench(name, spec, args.rounds, args.threads)
        ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
