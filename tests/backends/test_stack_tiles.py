"""Local accumulators from ``cache_write`` + ``reverse_compute_at`` on the CPU target:
not copied a second time by promotion, allocated on the stack, kept in registers."""

import numba
import numpy as np
import pytest
from machines import host_vector_lanes

from workbench import recipes
from workbench.backends import build, lower_to_numba_source
from workbench.backends.cpu import numba_cpu_printer
from workbench.backends.cpu.asm_loops import fma_loops
from workbench.backends.cpu.runtime import stack_allocator
from workbench.ops.linalg import matmul
from workbench.schedule import Schedule


def packed_matmul(n: int, ti: int, tj: int, tk: int) -> Schedule:
    """B packed per ``j_0`` panel, a ``ti x tj`` local accumulator written back per tile
    (``recipes.matmul.packed_cpu``, the panel copy not vectorized)."""
    return recipes.get("matmul", "packed", "cpu")(matmul(n, n, n), ti=ti, tj=tj, tk=tk,
                                                  vectorize_pack=False)


def test_local_accumulator_is_used_in_place_and_init_peeled(rng):
    sch = packed_matmul(64, 4, 16, 8)
    kernel = build(sch, target="cpu")
    source = kernel.source
    assert "C_local_acc" not in source  # no second copy of the tile
    assert 'C_local_stack = rt.stack_allocator((4, 16), "float32")' in source
    assert "C_local = C_local_stack()  # scope local, stack" in source
    assert source.index("C_local = C_local_stack()") > source.index("for i_0 in range(")
    assert "for k_1 in range(u64(1), u64(8)):" in source  # the init's first k peeled off
    assert "if k_0" not in source and "== u64(0)" not in source
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)  # 4 panels over the threads, 16 tiles each: one stack tile per thread
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4)


def test_global_output_still_gets_a_copied_accumulator(rng):
    """Promotion of a global output is unchanged: the tile is copied in and out."""
    sch = Schedule(matmul(32, 32, 32))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, k, i1)
    source = lower_to_numba_source(sch)
    assert 'C_acc_stack = rt.stack_allocator((4,), "float32")' in source
    assert "C_acc[i_1_in] = C[i_0 * u64(4) + i_1_in, j]" in source
    a, b = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    c = np.full((32, 32), np.nan, np.float32)
    build(sch, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4)


def test_large_local_buffers_stay_on_the_heap(monkeypatch):
    monkeypatch.setattr(numba_cpu_printer, "STACK_MAX_BYTES", 64)  # the 4x16 tile is 256 B
    source = lower_to_numba_source(packed_matmul(64, 4, 16, 8))
    assert "C_local = np.empty((4, 16), dtype=np.float32)  # scope local" in source
    assert "stack_allocator" not in source


def test_stack_allocator_arrays():
    tile = stack_allocator((2, 3), "float64")
    assert stack_allocator((2, 3), "float64") is tile  # cached per shape and dtype

    @numba.njit
    def fill(x):
        t = tile()
        for i in range(2):
            for j in range(3):
                t[i, j] = x * (3 * i + j)
        return t.sum(), t.shape[0], t.shape[1], t.strides[0]

    assert fill(2.0) == (30.0, 2, 3, 24)
    with pytest.raises(ValueError, match=r"stack_allocator: shape must be positive"):
        stack_allocator((4, 0), "float32")


@pytest.mark.parametrize("tk", [128, 256])
def test_packed_kernel_keeps_the_tile_in_registers(tk):
    """The 1024 matmul's inner k loops: FMAs and operand loads, no store (compiled, not run).

    With the tile on the heap, k split by 256 compiled to a scalar loop with a load and a
    store of the accumulator per FMA."""
    lanes = host_vector_lanes("float32")  # the machine code's, not a test machine description's
    if lanes < 16 and tk == 128:
        pytest.xfail("AVX2: LLVM unrolls the k=128 loop and spills the tile (known, see "
                     "docs/decisions.md, 'Packed matmul on AVX2')")
    # 4 rows x 4 vectors = 16 accumulators fit AVX-512's 32 registers; AVX2 has 16, so its
    # tile is 4 rows x 2 vectors (8 accumulators), leaving room for the operands.
    vectors = 4 if lanes >= 16 else 2
    kernel = build(packed_matmul(1024, 4, vectors * lanes, tk), target="cpu")
    loops = fma_loops(kernel.asm)
    in_registers = [x for x in loops if x.stores == 0 and x.fma >= 4 * vectors]
    assert in_registers, "\n".join(map(str, loops))
    for loop in in_registers:
        assert loop.loads <= loop.fma  # vectors panel loads + 4 broadcasts per tile of FMAs


def test_fma_loops_counts_stores():
    asm = "\n".join([
        ".LBB0_2:",
        "\tvmovss\t-60(%r9,%rdi,4), %xmm1",
        "\tvfmadd213ss\t-60(%rcx,%rdi,4), %xmm0, %xmm1",
        "\tvmovss\t%xmm1, -60(%rcx,%rdi,4)",
        "\tmovq\t%rax, 8(%rsp)",
        "\taddq\t$16, %rdi",
        "\tjne\t.LBB0_2",
        ".LBB0_3:",
        "\tjmp\t.LBB0_3",
    ])
    (loop,) = fma_loops(asm)
    assert (loop.label, loop.fma, loop.fma_zmm, loop.loads, loop.stores) == (
        ".LBB0_2", 1, 0, 2, 2
    )
    assert str(loop) == ".LBB0_2: 1 FMAs (0 on zmm), 2 loads, 2 stores in 6 instructions"
