"""Property test, CUDA mode: random cross-thread reduction schedules (row length, thread
count, rows per block on threadIdx.y, sum or max) under the simulator match numpy.

CI runs a few derandomized examples; ``WORKBENCH_PROPERTY_EXAMPLES=200`` runs more."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cuda_reduction import row_reduction

from workbench import ops
from workbench.backends import build

pytestmark = pytest.mark.cuda

LONG_EXAMPLES = int(os.environ.get("WORKBENCH_PROPERTY_EXAMPLES", "0"))


@settings(
    max_examples=LONG_EXAMPLES or 5,
    deadline=None,
    derandomize=not LONG_EXAMPLES,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    n=st.integers(1, 70),
    threads=st.sampled_from([2, 4, 8, 12, 16, 32, 64]),
    rows_per_block=st.sampled_from([1, 2]),
    op=st.sampled_from(["reduce_sum", "reduce_max"]),
    seed=st.integers(0, 2**16),
)
def test_random_cross_thread_reductions(n, threads, rows_per_block, op, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, n), dtype=np.float32)
    out = np.full(4, np.nan, np.float32)
    sch = row_reduction(getattr(ops, op)(4, n), threads, rows_per_block)
    build(sch, target="cuda")(a, out)
    expected = a.sum(axis=1) if op == "reduce_sum" else a.max(axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
