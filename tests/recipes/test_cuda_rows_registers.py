"""Single-pass row kernels (issue 20 item 3) under the CUDA simulator: ``block_per_row``'s
default holds each row in registers (read from global memory once), 128-bit row accesses
where the row length is a multiple of 4 with the remainder guarded per group of 4, scalar
otherwise; values against numpy at small odd sizes."""

import re

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build, lower
from workbench.backends.cuda.cuda_vector import LANE_FREE_GUARD, lane_free_guard
from workbench.ir import LT, IntImm, Var
from workbench.schedule import Schedule

pytestmark = pytest.mark.cuda


def _rows(rng, op, m, n, **options):
    func = getattr(ops, op)(m, n)
    kernel = build(recipes.get(op, "block_per_row", "cuda")(func, **options), target="cuda")
    args = [
        rng.standard_normal([int(getattr(d, "value", d)) for d in p.shape], dtype=np.float32)
        for p in func.params
    ]
    args[0] *= 3
    want = [a.copy() for a in args]
    build(func, target="numpy")(*want)
    args[-1][:] = np.nan
    kernel(*args)
    np.testing.assert_allclose(args[-1], want[-1], rtol=1e-5, atol=1e-5)
    return kernel.source


def _register_indices(src: str) -> list[str]:
    return re.findall(r"A_local\[([^\]]*)\]", src)


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
@pytest.mark.parametrize(("m", "n", "chunks"), [(3, 37, 2), (5, 129, 5)])
def test_odd_rows_in_registers_scalar(rng, op, m, n, chunks):
    """37 and 129 are not multiples of 4: scalar accesses, a warp per row, the row's
    ``ceil(n / 32)`` elements per thread at constant indices (registers, not local memory),
    read from global memory once."""
    src = _rows(rng, op, m, n)
    assert f"A_local = cuda.local.array((1, {chunks}, 1)" in src
    assert all("threadIdx" not in i and "ax" not in i.split(",")[1] for i in _register_indices(src))
    assert src.count("A[") == chunks and "load4" not in src


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_rows_of_100_wide_with_a_guarded_remainder(rng, op):
    """100 = 96 + 4: one chunk of 128 per warp, the group of 4 of each thread loaded with
    one 128-bit load under a guard on the group (not per lane), stored the same way."""
    src = _rows(rng, op, 5, 100)
    assert "A_local = cuda.local.array((1, 1, 1, 4)" in src
    assert "= load4(A, (" in src and "store4(T_" in src
    assert "a guard depends on the lane" not in src
    if op == "layernorm":
        assert "= load4(gamma, (" in src and "= load4(beta, (" in src


def test_explicit_threads_keep_the_register_stage_when_the_row_fits(rng):
    src = _rows(rng, "softmax", 2, 200, threads=64)
    assert "A_local = cuda.local.array((1, 1, 1, 4)" in src
    src = _rows(rng, "softmax", 2, 200, threads=64, stage=None)
    assert "A_local" not in src


def test_local_stage_compacts_across_thread_loops():
    """The copy and each reduction bind their own loops to threadIdx.x: the same index, so
    each thread's part of the stage is its own registers (the x extent compacts to 1)."""
    sch = recipes.get("softmax", "block_per_row", "cuda")(ops.softmax(4, 256))
    (stage,) = [b for b in lower(sch.mod).root_block.alloc_buffers if b.name == "A_local"]
    assert stage.shape == (1, 2, 1, 4)


def test_lane_free_guard_rule():
    j, v = Var("j"), Var("v")
    assert lane_free_guard(LT(j * 4 + v, IntImm(100)), v) == LT(j * 4, IntImm(100))
    assert lane_free_guard(LT(j * 4 + v, IntImm(99)), v) is None  # a group straddles 99
    assert lane_free_guard(LT(j * 2 + v, IntImm(100)), v) is None  # base not a multiple of 4


def test_a_guarded_vector_loop_is_wide_only_when_annotated(rng):
    func = ops.add(2, 100)
    a, b = (rng.standard_normal((2, 100), dtype=np.float32) for _ in range(2))
    for annotated in (False, True):
        sch = Schedule(func)
        (block,) = sch.get_child_blocks(sch.get_block("root"))
        i, j = sch.get_loops(block)
        sch.bind(i, "blockIdx.x")
        _, tx, lane = sch.split(j, factors=[None, 32, 4])
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(lane)
        if annotated:
            sch.annotate(lane, LANE_FREE_GUARD, 1)
        kernel = build(sch, target="cuda")
        out = np.full((2, 100), np.nan, np.float32)
        kernel(a, b, out)
        np.testing.assert_array_equal(out, a + b)
        src = kernel.source
        assert ("store4(" in src) == annotated
        assert ("a guard depends on the lane" in src) != annotated
