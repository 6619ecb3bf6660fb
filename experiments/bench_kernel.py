"""Benchmark of the batched IFCA kernel (same as ``mixlinreg bench``).

Run:  python experiments/bench_kernel.py [--quick] [--csv figures/bench_kernel.csv]
"""

import sys

from mixlinreg.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
