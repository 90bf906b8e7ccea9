set -x
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
python3 -c "import numba, numba_cuda; print(numba.__version__, numba_cuda.__version__)" 2>&1
timeout 110 python3 - <<'PY' 2>&1 | tee $OUT/tests.log | tail -25
import numpy as np; np.row_stack = np.vstack
import pytest, sys
sys.exit(pytest.main(["-q", "-n", "0", "-p", "no:cacheprovider", "tests/backends/test_cuda_simulator.py", "tests/backends/test_cuda_verify.py"]))
PY
timeout 270 python3 bench/gpu/bench_cuda.py --json $OUT/bench_cuda.json 2>&1 | tee $OUT/bench.log
