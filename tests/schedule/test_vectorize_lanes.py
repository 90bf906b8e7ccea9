"""``vectorize`` of the lane loop of a fused-and-split loop: ``(tx * 4 + v) % 32`` and
``(tx * 4 + v) // 32`` with ``v < 4`` take 4 different elements for the 4 lanes (no
wrap-around inside a group of 4), so the dependence analysis proves the lanes independent
(the TVM cooperative-fetch order: fuse, split by the threads and 4, vectorize the 4).
A lane index that does wrap is still refused."""

import numpy as np
import pytest

from workbench import T, ops
from workbench.backends import build
from workbench.schedule import LoopWriteConflictError, Schedule
from workbench.schedule.scope import loop_conflicts


def _fused_split_vectorized():
    sch = Schedule(ops.add_mul_gelu(8, 32))
    for producer in sch.get_child_blocks(sch.get_block("root"))[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    fused = sch.fuse(*sch.get_loops(out))
    bx, tx, lanes = sch.split(fused, factors=[None, 16, 4])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(lanes)
    return sch


def test_lanes_of_a_fused_split_loop_are_independent():
    sch = _fused_split_vectorized()
    assert loop_conflicts(sch.mod, "i2_j2_fused_2") == []


@pytest.mark.cuda
def test_fused_split_vectorized_copy_is_wide_and_correct(rng):
    sch = _fused_split_vectorized()
    kernel = build(sch, target="cuda")
    assert kernel.source.count("= load4(") == 3 and "store4(T_gelu, " in kernel.source
    args = [rng.standard_normal((8, 32), dtype=np.float32) for _ in range(3)]
    args.append(np.full((8, 32), np.nan, np.float32))
    want = [a.copy() for a in args]
    build(sch.func_before, target="numpy")(*want)
    kernel(*args)
    np.testing.assert_allclose(args[-1], want[-1], rtol=1e-5, atol=1e-5)


@T.prim_func
def wrapping(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
    for j, v in T.grid(4, 4):
        with T.block("B"):
            vj = T.axis.spatial(2, (j * 4 + v) % 2)
            B[vj] = A[vj] * T.float32(2)


def test_lanes_that_wrap_are_refused():
    """``(j * 4 + v) % 2``: lanes 0 and 2 write the same element."""
    sch = Schedule(wrapping)
    _, v = sch.get_loops(sch.get_block("B"))
    with pytest.raises(LoopWriteConflictError):
        sch.vectorize(v)
