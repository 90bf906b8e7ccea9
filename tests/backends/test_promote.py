"""Accumulator promotion and first-iteration peeling (``workbench.backends.cpu.promote``)."""

import numpy as np
import pytest
import scheduled_examples as se

import ir_examples
from workbench.backends import build, lower, lower_to_numba_source
from workbench.backends.cpu.numba_cpu_printer import _names_in
from workbench.backends.cpu.promote import promote_accumulators
from workbench.ir import ForKind
from workbench.ops.linalg import matmul


def _run(func, a, b, **options):
    kernel = build(func, target="cpu", **options)
    c = np.full((a.shape[0], b.shape[1]), 7, np.float32)
    kernel(a, b, c)
    return kernel, c


def test_naive_matmul_gets_a_scalar_accumulator(rng):
    source = lower_to_numba_source(ir_examples.matmul(16, 16, 16))
    assert 'C_acc_stack = rt.stack_allocator((1,), "float32")' in source
    assert "C_acc = C_acc_stack()  # scope local, stack" in source
    assert "for k in range(u64(1), u64(16)):" in source  # init peeled off the k loop
    assert "if k == " not in source
    a, b = rng.random((16, 16), dtype=np.float32), rng.random((16, 16), dtype=np.float32)
    _, c = _run(ir_examples.matmul(16, 16, 16), a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_promote_option_off_keeps_memory_accesses():
    source = lower_to_numba_source(ir_examples.matmul(16, 16, 16), promote=False)
    assert "C_acc" not in source and "if k == u64(0):" in source


@pytest.mark.parametrize("M,N", [(16, 32), (18, 20)])
def test_tile_promoted_with_imperfect_split_guards(rng, M, N):
    func = se.tiled_matmul(M, N, 8, 4, 8, outer=ForKind.PARALLEL, inner_j=ForKind.VECTORIZED)
    lowered = lower(func)
    body, tiles = promote_accumulators(lowered.root_block.body, _names_in(lowered))
    assert [(t.name, t.shape, t.scope) for t in tiles] == [("C_acc", (4, 8), "local")]
    a, b = rng.random((M, 8), dtype=np.float32), rng.random((8, N), dtype=np.float32)
    kernel, c = _run(func, a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    copy_out = kernel.source[kernel.source.index("for i_1_out") :]
    if M % 4:  # the copy out of the tile carries the split's guard
        assert "i_1_out < u64(18)" in copy_out
    else:
        assert " if " not in copy_out


def _tiled_split_k(n, ti, tj, tk):
    from workbench.schedule import Schedule

    sch = Schedule(matmul(n, n, n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, ti])
    jo, ji = sch.split(j, factors=[None, tj])
    ko, ki = sch.split(k, factors=[None, tk])
    sch.reorder(jo, ko, io, ki, ii, ji)
    sch.parallel(jo)
    sch.vectorize(ji)
    sch.unroll(ii)
    return sch


def test_split_reduction_peels_through_the_outer_reduction_loop(rng):
    sch = _tiled_split_k(32, 4, 16, 8)
    source = lower_to_numba_source(sch)
    assert "for k_1 in range(u64(1), u64(8)):" in source
    # the rest of k_1 has no init guard left: k_0 * 8 + k_1 >= 1 there
    rest = source[source.index("for k_1 in range(u64(1)") :]
    assert "== u64(0)" not in rest
    a, b = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    _, c = _run(sch, a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_promoted_tile_stays_vectorized(rng):
    sch = _tiled_split_k(128, 4, 64, 32)
    kernel, c = _run(sch, *(rng.random((128, 128), dtype=np.float32) for _ in range(2)))
    entry = kernel.vectorization_report().loop("j_1")
    assert entry.kind == "vectorized" and entry.vectorized
    assert entry.element == "float" and entry.bits >= 256


def test_max_reduction_promoted_and_elementwise_left_alone(rng):
    func = se.row_max(8, 32)
    lowered = lower(func)
    _, tiles = promote_accumulators(lowered.root_block.body, _names_in(lowered))
    assert [(t.name, t.shape) for t in tiles] == [("R_acc", (1,))]  # R[i] invariant in k
    a = rng.standard_normal((8, 32), dtype=np.float32)
    kernel = build(func, target="cpu")
    out = np.empty(8, np.float32)
    kernel(a, out)
    np.testing.assert_allclose(out, a.max(axis=1), rtol=1e-6)
    elementwise = se.split_elementwise(30, 8)
    lowered = lower(elementwise)
    _, tiles = promote_accumulators(lowered.root_block.body, _names_in(lowered))
    assert tiles == []  # every loop's variable indexes the output
