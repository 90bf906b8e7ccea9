set -x
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0
timeout 100 python3 - <<'PY' 2>&1 | tee $OUT/tests2.log | tail -6
import numpy as np; np.row_stack = np.vstack
import pytest, sys
sys.exit(pytest.main(["-q", "-n", "0", "-p", "no:cacheprovider", "-W", "ignore::numba.core.errors.NumbaPerformanceWarning", "tests/backends/test_cuda_simulator.py", "tests/backends/test_cuda_verify.py"]))
PY
timeout 150 python3 bench/gpu/bench_cuda.py --only "elementwise,elementwise fused,launch overhead" --json $OUT/bench_cuda2.json 2>&1 | tee $OUT/bench2.log
