# The cudamem figures (wide loads, cooperative fetch, double buffering): the new CUDA tests on
# the real GPU, then bench_cudamem.py. Run from anywhere on the GPU machine; files go to $OUT
# (default: bench/gpu/results/).
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/gpu/results}
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 60 python3 - <<'PY' 2>&1 | tee $OUT/cudamem_tests.log | tail -8
import numpy as np; np.row_stack = np.vstack
import pytest, sys
sys.exit(pytest.main(["-q", "-n", "0", "-p", "no:cacheprovider", "tests/backends/test_cuda_vector.py",
                      "tests/backends/test_cuda_double_buffer.py", "tests/recipes/test_cuda_recipes.py"]))
PY
timeout 200 python3 bench/gpu/bench_cudamem.py --json $OUT/cudamem.json 2>&1 | tee $OUT/cudamem_bench.log | grep -v Warning
