#!/usr/bin/env bash
# The JAX backend measured on a GPU machine, in under 10 minutes on an H100-class card:
#   1. the backend's tests (tests/test_jax_backend.py) with JAX on the GPU: float64 equal to the
#      numba kernel and the naive reference to 1e-10, float32 within the kernel tests' tolerance;
#   2. experiments/gpu_check.py: one paper unit per Figure 2 panel on the GPU against the numba
#      kernel on this machine's cores and the committed numba rows, the card's float32 rate, peak
#      GPU memory, and the whole paper grid projected;
#   3. panel (a) of the paper preset whole through the harness (mixlinreg reproduce --kernel jax),
#      timed, its success table compared byte for byte with the committed one.
# Usage: experiments/gpu_check.sh [OUT [OPTIONS of gpu_check.py]]   (OUT: logs, CSV and JSON;
#        default gpu_check_out; e.g. experiments/gpu_check.sh /tmp/g --quick tries it on a CPU)
# Needs: Python with numpy, scipy, numba, pandas, scikit-learn, joblib, threadpoolctl, tqdm, pytest
# and JAX with CUDA (pip install -e ".[gpu,test]"); run from a clone that has figures/stores.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu_check_out}
shift || true
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
start=$(date +%s)
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv || true
  "$PY" -c "import jax, numba, numpy; print('jax', jax.__version__, jax.devices(), '| numba', numba.__version__, '| numpy', numpy.__version__)"
} 2>&1 | tee "$OUT/env.txt"
echo "== tests/test_jax_backend.py on $("$PY" -c 'import jax; print(jax.devices()[0].platform)')"
timeout 240 "$PY" -m pytest tests/test_jax_backend.py -q -x -p no:cacheprovider -k "not harness" > "$OUT/pytest_jax.txt" 2>&1
tests_rc=$?
tail -n 5 "$OUT/pytest_jax.txt"
echo "== experiments/gpu_check.py ($(( $(date +%s) - start )) s so far)"
timeout 330 "$PY" experiments/gpu_check.py --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu_check.log"
check_rc=${PIPESTATUS[0]}
echo "== fig2a whole through the harness ($(( $(date +%s) - start )) s so far)"
S=$(mktemp -d)
timeout 120 "$PY" -m mixlinreg.cli reproduce fig2a --preset paper --kernel jax --out "$S" \
    --no-progress 2>&1 | grep -v "^ *[0-9]" | tee "$OUT/harness_fig2a.txt"
if cmp -s "$S/fig2a_paper_summary.csv" figures/fig2a_paper_summary.csv; then
    echo "fig2a success table: byte-identical to figures/fig2a_paper_summary.csv" | tee -a "$OUT/harness_fig2a.txt"
else
    echo "fig2a success table: DIFFERS from figures/fig2a_paper_summary.csv (or missing)" | tee -a "$OUT/harness_fig2a.txt"
    check_rc=1
fi
echo "== done in $(( $(date +%s) - start )) s: tests exit $tests_rc, gpu_check exit $check_rc"
exit $(( tests_rc != 0 || check_rc != 0 ))
