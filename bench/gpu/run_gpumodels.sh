# Issue 20, the attention and conv2d cuda recipes on the GPU machine (branch gpumodels), from
# the repository root (or a copy of it):
#   bash bench/gpu/run_gpumodels.sh $OUT                      # run 1: tests, kernels, models
#   PARTS=tune bash bench/gpu/run_gpumodels.sh $OUT          # run 2: kernels2.log + tune
# Writes gm_tests.log, kernels.json (+ .log), models.json (+ .log), tune_block.jsonl under $OUT.
set -x
out=${1:-$OUT}
parts=${PARTS:-tests,kernels,models}
export PYTHONUNBUFFERED=1 NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=$PWD
export WORKBENCH_CACHE_DIR=${WORKBENCH_CACHE_DIR:-/tmp/workbench-cache}  # no platformdirs there
[ -f sitecustomize.py ] || printf 'import numpy as np\nif not hasattr(np, "row_stack"):\n    np.row_stack = np.vstack\n' > sitecustomize.py
case $parts in *tests*)
  timeout ${TEST_TIMEOUT:-100} python3 -m pytest -q -p no:cacheprovider -W ignore::numba.core.errors.NumbaPerformanceWarning \
    tests/graph/test_schedules_cuda_ops.py tests/recipes/test_cuda_conv_attention.py > $out/gm_tests.log 2>&1
  tail -3 $out/gm_tests.log;; esac
case $parts in *kernels*)
  timeout ${KERNEL_TIMEOUT:-130} python3 bench/gpu/bench_conv_attention.py --out $out --deadline ${KERNEL_DEADLINE:-95} \
    > $out/kernels.log 2>&1; tail -40 $out/kernels.log;; esac
case $parts in *models*)
  timeout ${MODEL_TIMEOUT:-260} python3 bench/gpu/bench_gpu_models.py --out $out --deadline ${DEADLINE:-230} \
    ${MODEL_ARGS:---no-compile} > $out/models.log 2>&1; tail -30 $out/models.log;; esac
case $parts in *tune*)
  # run 2: the new defaults of the slow kernels against run 1's, then the tuned-vs-default table
  timeout ${KERNEL_TIMEOUT:-90} python3 bench/gpu/bench_conv_attention.py --out $out --deadline 60 --variants default \
    --kernels "l3 3x3,l4 3x3,block d256 b16,gpt2 b8 causal" > $out/kernels2.log 2>&1; tail -12 $out/kernels2.log
  timeout ${TUNE_TIMEOUT:-170} python3 bench/gpu/bench_gpu_models.py --out $out --only tune_model --deadline 160 \
    --tune-budget ${TUNE_BUDGET:-75} --trials 4 > $out/tune.log 2>&1; tail -15 $out/tune.log;; esac
