"""Numeric settings of mixlinreg, kept in one place.

Everything that could change a result (fastmath flags, divergence threshold, test tolerances) is
defined here, so that a reader can see at a glance which shortcuts the kernels take.
"""

import numpy as np

#: LLVM fast-math flags for the numba kernels. Reassociation and contraction (FMA) are allowed; the
#: NaN/inf shortcuts ("nnan", "ninf") are NOT, because the kernels must detect non-finite values to
#: flag diverging runs and must never let a NaN loss win an argmin.
FASTMATH = {"nsz", "arcp", "contract", "reassoc"}

#: Floating point types the kernels are compiled for.
SUPPORTED_DTYPES = (np.float32, np.float64)

#: Default divergence threshold: a run is frozen and flagged ``diverged`` once any coordinate of its
#: parameters exceeds this in absolute value, or once its parameters or loss stop being finite.
#: 1e10 is far above any parameter of the paper's problems (entries of theta* are at most R <= 1;
#: initializations are 0/1) and far below float32 overflow of the squared loss (|x.theta|^2 with
#: d = 1000 overflows near |theta| ~ 1e17).
DIVERGE_THRESHOLD = 1e10

#: Number of fixed machine chunks over which the kernels parallelize. Gradient sums are formed per
#: chunk and then added in chunk order, so results do not depend on the number of threads.
MAX_CHUNKS = 8

#: Packed run slots are padded to a multiple of this many columns (one AVX-512 register) when that
#: wastes at most 1/8 of the work: BLAS is much faster on such widths. Padding slots hold zero models.
SIMD_COLUMNS = {np.dtype(np.float32): 16, np.dtype(np.float64): 8}

#: The certified-Gram path (``ifca(method="gram")``, see ``mixlinreg/_gram.py``).
#: Relative margin added to both sides of every certified comparison of two losses, on top of the
#: rigorous bound of a forward pass's rounding (so a near-tie is always evaluated exactly).
CERT_REL_MARGIN = 1e-4
#: Cost model for giving a certified run cluster Grams (a performance choice only): reading one byte
#: of a Gram counts as this many flop (this machine: ~10 GB/s per core against ~100 GFLOP/s).
GRAM_FLOP_PER_BYTE = 10.0
#: Default memory for cached cluster Grams (d x d float64 each): 512 MiB holds 64 Grams at d = 1000.
GRAM_MEMORY = 512 * 2**20
#: Fixed blocks of machines over which a Gram is built (independent of the thread count), rows
#: gathered per GEMM, and runs' models multiplied by one Gram per task.
GRAM_BLOCKS = 4
GRAM_GATHER_ROWS = 1024
GRAM_COLUMNS_PER_TASK = 16
#: ``method="auto"`` uses the Gram path only when one iteration of all runs is at least this many
#: flop on the direct path: below it, the per-iteration bookkeeping costs more than it saves.
GRAM_MIN_FLOP = 1e8

#: With the JAX backend on a GPU (``mixlinreg reproduce --kernel jax``) the harness runs up to this
#: many units at once in threads (bounded by the usable cores), so that one unit's host work
#: (drawing its data, validating, tabulating) overlaps the others' device work; each holds its
#: data (up to m n d floats) in host and device memory.
JAX_WORKERS = 4

#: Relative tolerances used by the test suite when comparing the kernel with its slow reference
#: implementations (``tests/naive.py`` of the source repository; not installed with the package).
#: float64: both compute the same sums in a different order (BLAS blocking, reassociation); 1e-10
#: relative leaves ~6 orders of magnitude of headroom over the observed 1e-15..1e-13 differences.
TEST_RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 2e-4}
