# Issue 20 on the GPU machine, from the repository root (or a copy of it):
#   bash bench/gpu/run_e2e.sh tests,model,tune $OUT
# Writes e2e_*.json and logs under $OUT.
set -x
parts=${1:-tests,model,tune}
out=${2:-$OUT}
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=$PWD
[ -f sitecustomize.py ] || printf 'import numpy as np\nif not hasattr(np, "row_stack"):\n    np.row_stack = np.vstack\n' > sitecustomize.py
if [[ $parts == *tests* ]]; then
  timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider -W ignore::numba.core.errors.NumbaPerformanceWarning \
    tests/graph/test_compile_cuda_device.py tests/backends/test_cuda_launch.py \
    tests/backends/test_cuda_simulator.py tests/backends/test_cuda_verify.py \
    tests/tune/test_cuda_space_candidates.py -k "not attention" 2>&1 | tee $out/e2e_tests.log | tail -15
fi
if [[ $parts == *model* ]]; then
  for b in ${BATCHES:-16}; do
    timeout ${MODEL_TIMEOUT:-200} python3 bench/gpu/bench_gpu_e2e.py --part model --batch $b --out $out 2>&1 | tee $out/e2e_model_b$b.log | tail -12
  done
fi
if [[ $parts == *tune* ]]; then
  timeout ${TUNE_TIMEOUT:-280} python3 bench/gpu/bench_gpu_e2e.py --part tune --trials ${TRIALS:-24} --budget ${BUDGET:-200} --out $out 2>&1 | tee $out/e2e_tune.log | tail -12
fi
