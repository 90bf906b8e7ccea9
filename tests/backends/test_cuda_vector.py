"""Wide loads and stores (``vectorize`` of 4 on the ``cuda`` target), under the simulator:
the generated source calls ``load4`` / ``store4`` where the access is provably 16-byte
aligned and stays scalar (with a comment) elsewhere; the numbers match numpy either way."""

import numpy as np
import pytest

from workbench import T, ops
from workbench.backends import build
from workbench.backends.cuda.cuda_vector import (
    CodeComment,
    WideLoad,
    WideStore,
    lane_split,
    multiple_of,
)
from workbench.ir import IntImm, Var
from workbench.ir.functor import collect
from workbench.schedule import Schedule

pytestmark = pytest.mark.cuda


def _run(sch, args):
    kernel = build(sch, target="cuda")
    got = [a.copy() for a in args]
    kernel(*got)
    want = [a.copy() for a in args]
    build(sch.func_before, target="numpy")(*want)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-5)
    return kernel


def _rows_v4(func, threads):
    """Producers inlined; one block per row; columns ``j = (j_0 * threads + tx) * 4 + v``."""
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    i, j = sch.get_loops(out)
    j_0, tx, v = sch.split(j, factors=[None, threads, 4])
    sch.reorder(tx, j_0)
    sch.bind(i, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(v)
    return sch


def test_multiple_of_and_lane_split():
    i, j, v = Var("i"), Var("j"), Var("v")
    four, eight = IntImm(4), IntImm(8)
    assert multiple_of(i * 8 + j * 4, 4)
    assert not multiple_of(i * 8 + j * 2, 4)
    assert multiple_of((j * 4) % 16, 4) and not multiple_of((j * 4) % 6, 4)
    assert multiple_of((i * 32) // eight, 4)
    assert lane_split(i * 8 + j * 4 + v, v) == (i * 8 + j * 4 + IntImm(0), 1)
    base, step = lane_split((j * 4 + v) % 32, v)
    assert step == 1 and base == (j * 4 + IntImm(0)) % 32
    assert lane_split((j * 4 + v) // 32, v)[1] == 0
    assert lane_split((j * 2 + v) % 32, v) is None  # j * 2 + v may wrap inside a group
    assert lane_split(v * v, v) is None
    assert lane_split(i * four, v) == (i * four, 0)


def test_elementwise_chain_wide_loads_and_stores(rng):
    func = ops.add_mul_gelu(4, 32)
    args = [rng.standard_normal((4, 32), dtype=np.float32) for _ in range(3)]
    args.append(np.full((4, 32), np.nan, np.float32))
    kernel = _run(_rows_v4(func, threads=4), args)
    src = kernel.source
    assert "from workbench.backends.cuda.cuda_vector_ops import SHARED_ALIGN, load4, store4" in src
    assert src.count("= load4(") == 3 and src.count("store4(T_gelu, ") == 1
    assert "load4(A, (i2, j2_0 * 16 + j2_1 * 4))" in src
    assert len(collect(kernel.device_func.body, lambda n: isinstance(n, WideLoad))) == 3
    assert len(collect(kernel.device_func.body, lambda n: isinstance(n, WideStore))) == 1
    assert "for " not in src.split("j2_0 in range(2):")[1]  # the lane loop is gone


@T.prim_func
def shift(A: T.Buffer((4, 36), "float32"), B: T.Buffer((4, 32), "float32")):
    for i, j in T.grid(4, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj + 1] * T.float32(2)


def test_unaligned_load_stays_scalar_with_a_comment(rng):
    """``A[i, j + 1]`` is not 16-byte aligned: four scalar loads, the store still wide."""
    args = [rng.standard_normal((4, 36), dtype=np.float32), np.zeros((4, 32), np.float32)]
    kernel = _run(_rows_v4(shift, threads=8), args)
    src = kernel.source
    assert "load4(" not in src and "store4(B, " in src
    assert "# vectorize: scalar lanes for A: the innermost base index is not provably a multiple of 4" in src
    assert "A[i, j_0 * 32 + j_1 * 4 + 4]" in src  # lane 3 of A[i, j + 1]


@T.prim_func
def scale_odd(A: T.Buffer((4, 30), "float32"), B: T.Buffer((4, 30), "float32")):
    for i, j in T.grid(4, 30):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3)


def test_rows_not_multiple_of_four_stay_scalar(rng):
    """Rows of 30 elements: row 1 starts at byte 120, not 16-byte aligned; and the split's
    guard depends on the lane. A scalar loop, no error."""
    sch = Schedule(scale_odd)
    i, j = sch.get_loops(sch.get_block("B"))
    _, v = sch.split(j, factors=[None, 4])
    sch.bind(i, "blockIdx.x")
    sch.vectorize(v)
    sch.bind(sch.get_loops(sch.get_block("B"))[1], "threadIdx.x")
    args = [rng.standard_normal((4, 30), dtype=np.float32), np.zeros((4, 30), np.float32)]
    kernel = _run(sch, args)
    assert "load4" not in kernel.source and "store4" not in kernel.source
    notes = collect(kernel.device_func.body, lambda n: isinstance(n, CodeComment))
    assert len(notes) == 1 and "scalar loop" in notes[0].text
    assert "# vectorize j_1: scalar loop (a guard depends on the lane)" in kernel.source


def test_vectorize_of_eight_is_a_scalar_loop(rng):
    func = ops.add_mul_gelu(2, 32)
    args = [rng.standard_normal((2, 32), dtype=np.float32) for _ in range(3)]
    args.append(np.zeros((2, 32), np.float32))
    sch = Schedule(func)
    for producer in sch.get_child_blocks(sch.get_block("root"))[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    i, j = sch.get_loops(out)
    tx, v = sch.split(j, factors=[None, 8])
    sch.bind(i, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(v)
    kernel = _run(sch, args)
    assert "load4" not in kernel.source
    assert "# vectorize j2_1: scalar loop (wide accesses need a loop of extent 4 from 0)" in kernel.source
