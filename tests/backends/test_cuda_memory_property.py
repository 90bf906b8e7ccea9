"""Property test, CUDA mode, for the memory schedules: the cuda recipes of
``workbench/recipes/matmul_cuda.py`` and ``elementwise_cuda.py`` with random shapes (tile
multiples or not: guards, scalar fallbacks) and random options (wide accesses, double
buffering, register prefetch, explicit unroll) under the simulator match numpy.

CI runs a few derandomized examples; ``WORKBENCH_PROPERTY_EXAMPLES=200`` runs more.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from workbench import ops, recipes
from workbench.backends import build
from workbench.schedule import ScheduleError

pytestmark = pytest.mark.cuda

LONG_EXAMPLES = int(os.environ.get("WORKBENCH_PROPERTY_EXAMPLES", "0"))
CUDA_SETTINGS = settings(
    max_examples=LONG_EXAMPLES or 5,
    deadline=None,
    derandomize=not LONG_EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@CUDA_SETTINGS
@given(
    m=st.integers(4, 20),
    n=st.integers(4, 20),
    k=st.integers(2, 20),
    recipe=st.sampled_from(["shared", "register_blocked"]),
    threads=st.sampled_from([2, 4]),
    per_thread=st.sampled_from([4, 8]),
    k_tile=st.sampled_from([4, 8]),
    double_buffer=st.booleans(),
    unroll_k=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_matmul_memory_schedules(
    m, n, k, recipe, threads, per_thread, k_tile, double_buffer, unroll_k, seed
):
    func = ops.matmul(m, n, k)
    try:
        if recipe == "shared":
            sch = recipes.get("matmul", "shared", "cuda")(func, tile=threads * 2, k_tile=k_tile)
        else:
            sch = recipes.get("matmul", "register_blocked", "cuda")(
                func, threads=threads, per_thread=per_thread, k_tile=k_tile,
                double_buffer=double_buffer, unroll_k=unroll_k,
            )
        kernel = build(sch, target="cuda")
    except ScheduleError:
        assume(False)  # an illegal step for this shape: not a candidate
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@CUDA_SETTINGS
@given(
    m=st.integers(1, 4),
    n=st.integers(1, 48),
    threads=st.integers(1, 8),
    recipe=st.sampled_from(["v4", "grid_stride"]),
    seed=st.integers(0, 2**16),
)
def test_random_elementwise_v4(m, n, threads, recipe, seed):
    func = ops.add_mul_gelu(m, n)
    options = {"threads": threads}
    if recipe == "grid_stride":
        options["blocks_per_row"] = 2
    try:
        kernel = build(recipes.get("add_mul_gelu", recipe, "cuda")(func, **options), "cuda")
    except ScheduleError:
        assume(False)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal((m, n), dtype=np.float32) for _ in range(3)]
    args.append(np.full((m, n), np.nan, np.float32))
    want = [x.copy() for x in args]
    build(func, target="numpy")(*want)
    kernel(*args)
    np.testing.assert_allclose(args[-1], want[-1], rtol=1e-5, atol=1e-5)
