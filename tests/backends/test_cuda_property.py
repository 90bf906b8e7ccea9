"""Property test, CUDA mode: random legal GPU schedules (recipes with random shapes and
tile sizes, dividing or not) under the CUDA simulator match the numpy reference.

CI runs a few derandomized examples (the simulator runs one Python thread per GPU thread);
``WORKBENCH_PROPERTY_EXAMPLES=200`` runs more.
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
    max_examples=LONG_EXAMPLES or 6,
    deadline=None,
    derandomize=not LONG_EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _run(sch, args):
    got = [a.copy() for a in args]
    build(sch, target="cuda")(*got)
    expected = [a.copy() for a in args]
    build(sch.func_before, target="numpy")(*expected)
    np.testing.assert_allclose(got[-1], expected[-1], rtol=1e-4, atol=1e-4)


@CUDA_SETTINGS
@given(
    m=st.integers(3, 10),
    n=st.integers(3, 10),
    k=st.integers(2, 8),
    recipe=st.sampled_from(["naive", "shared", "register"]),
    tile=st.integers(2, 4),
    k_tile=st.integers(2, 4),
    per_thread=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_random_matmul_schedules(m, n, k, recipe, tile, k_tile, per_thread, seed):
    func = ops.matmul(m, n, k)
    try:
        if recipe == "naive":
            sch = recipes.get("matmul", "naive", "cuda")(func, tile=tile)
        elif recipe == "shared":
            sch = recipes.get("matmul", "shared", "cuda")(func, tile=tile, k_tile=k_tile, vector=False)
        else:
            sch = recipes.get("matmul", "register_local", "cuda")(func, tile, per_thread, k_tile)
    except ScheduleError:
        assume(False)  # an illegal step for this shape: not a candidate
    rng = np.random.default_rng(seed)
    args = [
        rng.standard_normal((m, k), dtype=np.float32),
        rng.standard_normal((k, n), dtype=np.float32),
        np.zeros((m, n), np.float32),
    ]
    _run(sch, args)


@CUDA_SETTINGS
@given(
    m=st.integers(1, 6),
    n=st.integers(2, 40),
    threads=st.integers(1, 16),
    recipe=st.sampled_from(["fused", "rows", "unfused"]),
    seed=st.integers(0, 2**16),
)
def test_random_elementwise_bindings(m, n, threads, recipe, seed):
    func = ops.add_mul_gelu(m, n)
    make = {
        "fused": recipes.get("add_mul_gelu", "fused", "cuda"),
        "rows": recipes.get("add_mul_gelu", "rows", "cuda"),
        "unfused": recipes.get("add_mul_gelu", "unfused", "cuda"),
    }[recipe]
    sch = make(func, threads=threads)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal((m, n), dtype=np.float32) for _ in range(3)]
    args.append(np.zeros((m, n), np.float32))
    _run(sch, args)
