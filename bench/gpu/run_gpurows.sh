# Single-pass row kernels and split-K SGEMM (issue 20 item 3, branch gpurows): the new CUDA
# tests on the real GPU, then bench_shapes.py (all six row cases, the three off-tile SGEMM
# shapes and 4096^3, defaults beside variants). Files go to $OUT (default bench/gpu/results).
# QUICK=1: the defaults only (the follow-up run); SKIP_TESTS=1: the bench only.
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/gpu/results}
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0 WORKBENCH_CACHE_DIR=${WORKBENCH_CACHE_DIR:-/tmp/wbc}
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
if [ -z "$QUICK$SKIP_TESTS" ]; then
timeout ${TESTS_DEADLINE:-110} python3 - <<'PY' 2>&1 | tee $OUT/gpurows_tests.log | tail -6
import numpy as np; np.row_stack = np.vstack
import pytest, sys
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-x",
                      "tests/recipes/test_cuda_rows_registers.py", "tests/recipes/test_cuda_split_k.py",
                      "tests/recipes/test_recipes_cuda.py", "tests/recipes/test_cuda_shapes.py"]))
PY
fi
timeout ${BENCH_DEADLINE:-300} python3 bench/gpu/bench_shapes.py ${QUICK:+--quick} \
    --json $OUT/gpurows_bench_shapes${QUICK:+_quick}.json 2>&1 \
    | tee $OUT/gpurows_bench_shapes${QUICK:+_quick}.log | grep -v "Warning\|^{" | tail -60
