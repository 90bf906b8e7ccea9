# Issue 20, whole models on the GPU machine, from the repository root (or a copy of it):
#   bash bench/gpu/run_models.sh $OUT
# The default-schedule tests on the real GPU, then bench_gpu_models.py under a deadline;
# writes models_tests.log, models.log, models.json and tune_block.jsonl under $OUT.
set -x
out=${1:-$OUT}
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=$PWD
export WORKBENCH_CACHE_DIR=${WORKBENCH_CACHE_DIR:-/tmp/workbench-cache}  # no platformdirs there
[ -f sitecustomize.py ] || printf 'import numpy as np\nif not hasattr(np, "row_stack"):\n    np.row_stack = np.vstack\n' > sitecustomize.py
[ -n "$SKIP_TESTS" ] || timeout ${TEST_TIMEOUT:-55} python3 -m pytest -q -p no:cacheprovider -x -W ignore::numba.core.errors.NumbaPerformanceWarning \
  tests/graph/test_schedules_cuda_ops.py 2>&1 | tee $out/models_tests.log | tail -5
timeout ${MODEL_TIMEOUT:-350} python3 bench/gpu/bench_gpu_models.py --out $out --deadline ${DEADLINE:-335} 2>&1 | tee $out/models.log | tail -45
