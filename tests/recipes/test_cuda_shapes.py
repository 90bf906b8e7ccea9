"""Every shape (issue 20 item 3) under the CUDA simulator: the cuda recipes' defaults at
sizes that are not multiples of their tiles, against numpy; the interior/edge partition keeps
128-bit accesses in the interior copy of the kernel (source checks)."""

import numpy as np
import pytest
from cuda_checks import checked_matmul

from workbench import ops, recipes
from workbench.backends import build
from workbench.backends.cuda.cuda_partition import partition_kernel
from workbench.recipes.matmul_cuda import block_tile
from workbench.recipes.rows_cuda import row_threads

pytestmark = pytest.mark.cuda


def _matmul(rng, m, n, k, **options):
    return checked_matmul(rng, "register_blocked", m, n, k, **options).source


def test_interior_blocks_keep_wide_loads_edges_are_guarded(rng):
    """37 x 44 x 16 in 16 x 16 tiles (4 x 4 threads x 4 x 4): 3 x 3 blocks, 2 x 2 interior."""
    src = _matmul(rng, 37, 44, 16, threads=4, per_thread=4)
    interior, edge = src.split("\n    else:\n", 1)  # the edge copy has else: of its own
    assert "if i_0 * 16 + 15 < 37 and j_0 * 16 + 15 < 44:" in interior
    for wide in ("= load4(A, ", "= load4(B, ", "store4(B_shared, ", "store4(C, "):
        assert wide in interior
    assert "< 37" not in interior.split("< 44:")[1] and "a guard depends on the lane" not in interior
    # the edge copy guards its global accesses only: the register tile's fragment loads,
    # FMAs and init run unguarded (positions outside C are computed, never stored)
    assert "< 37 and j_0 * 16 + j_1 * 4 + ax1_1_0 * 4 + ax1_1_1 < 44:" in edge  # store of C
    assert "j_2 < 44" not in edge and "j_2_init < 44" not in edge
    assert edge.count("if i_0 * 16 + ax0_3_ax1_2_0_fused_0 * 8") == 2  # loads of A rows


def test_odd_sizes_and_a_k_remainder(rng):
    """17 x 29 x 7 (8 x 8 tiles, k_tile 8): every extent off its tile, rows not 16-byte
    aligned (no wide global access is claimed: the vectorizer says why)."""
    src = _matmul(rng, 17, 29, 7, threads=2, per_thread=4)
    assert "else:" in src and "k_0 * 8 + k_1" not in src  # one k step, unrolled
    assert "= load4(A, " not in src


@pytest.mark.parametrize("shape", [(13, 31, 33), (33, 13, 31)])
def test_default_tiling_at_odd_sizes(rng, shape):
    """The defaults (tile from the shape: 32 x 32 for small C) with no options."""
    assert block_tile(shape[0], shape[1]) == (8, 4)
    _matmul(rng, *shape)


def test_aligned_shapes_are_not_partitioned(rng):
    src = _matmul(rng, 32, 32, 16, threads=4, per_thread=4)
    assert "else:" not in src and src.count("store4(C, ") == 1


def test_partition_off_keeps_one_guarded_copy(rng):
    src = _matmul(rng, 20, 20, 8, threads=4, per_thread=4, partition_edges=False)
    assert "else:" not in src and "a guard depends on the lane" in src


def test_block_tile_prefers_large_tiles_when_the_grid_is_full():
    assert block_tile(4096, 4096) == (16, 8)
    assert block_tile(640, 1024) == (16, 4)  # 5 x 8 = 40 blocks of 128: too few
    assert block_tile(8, 8) == (8, 4)


def test_partition_kernel_without_block_guards_is_unchanged():
    from workbench.ir import For, ForKind, IntImm, Var, seq

    i = Var("i")
    kernel = For(i, IntImm(0), IntImm(4), ForKind.THREAD_BINDING, seq(), "blockIdx.x")
    assert partition_kernel(kernel) is kernel


def _rows(rng, op, m, n, **options):
    func = getattr(ops, op)(m, n)
    kernel = build(recipes.get(op, "block_per_row", "cuda")(func, **options), target="cuda")
    args = [
        rng.standard_normal([int(getattr(d, "value", d)) for d in p.shape], dtype=np.float32)
        for p in func.params
    ]
    want = [a.copy() for a in args]
    build(func, target="numpy")(*want)
    args[-1][:] = np.nan
    kernel(*args)
    np.testing.assert_allclose(args[-1], want[-1], rtol=1e-5, atol=1e-5)
    return kernel


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_short_rows_several_per_block(rng, op):
    """13 rows of 45: a warp per row, 4 rows per block, the last block guarded."""
    kernel = _rows(rng, op, 13, 45)
    assert kernel.launches[0].block == (32, 4, 1) and kernel.launches[0].grid == (4, 1, 1)


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_rows_of_300_a_warp_each_in_registers(rng, op):
    """300 = 2 chunks of 128 + a remainder of 44: the last group of 4 guarded as a whole."""
    kernel = _rows(rng, op, 3, 300)
    assert kernel.launches[0].block == (32, 3, 1) and kernel.launches[0].grid == (1, 1, 1)
    assert "A_local = cuda.local.array((1, 3, 1, 4)" in kernel.source
    assert "if 2 * 128 + ax0_3_1 * 4 < 300:" in kernel.source


def test_staged_rows_one_copy_per_row(rng):
    """With several rows per block, each threadIdx.y row copies only its own row."""
    kernel = _rows(rng, "softmax", 5, 33, stage="shared")
    assert "A_shared = cuda.shared.array((4, 33)" in kernel.source
    assert "= cuda.threadIdx.y" in kernel.source.split("# block A_shared")[0].split("T_softmax")[-1]


def test_row_threads_rule():
    """Rows that fit 32 elements per thread in at most 1024 threads are held in registers."""
    assert row_threads(100) == (32, 4, "registers")
    assert row_threads(768) == (32, 4, "registers")
    assert row_threads(3000) == (128, 1, "registers")
    assert row_threads(8192) == (256, 1, "registers")
    assert row_threads(30000) == (1024, 1, "registers")
    assert row_threads(32769) == (512, 1, None)  # over the register bound and 48 KiB
    assert row_threads(8193) == (512, 1, "registers")  # not 16-byte aligned: scalar, 17 each


def test_edge_guards_kept_where_a_shared_tile_is_clipped(rng):
    """33 x 29 in 32 x 32 tiles: B_shared is only 29 wide (the compact region of one block
    column), so the edge copy keeps the guards of the fragment loads that would run past
    it (the simulator bounds-checks every access)."""
    src = _matmul(rng, 33, 29, 16, threads=4, per_thread=8)
    assert "B_shared = cuda.shared.array((2, 8, 29)" in src
    assert "j_0 * 32 + j_1 * 8 + ax0_2_0_1 * 4 + ax0_2_1_1 < 29" in src.split("\n    else:\n", 1)[1]


@pytest.mark.parametrize("k", [7, 8])
def test_double_buffer_with_a_single_k_step(rng, k):
    """K <= k_tile: one refill iteration, nothing to overlap; the stages stay single (the
    pass used to give them the leading 2 without reindexing the accesses)."""
    src = _matmul(rng, 16, 16, k, threads=2, per_thread=4)
    assert "A_shared = cuda.shared.array((8, 8)" in src or f"A_shared = cuda.shared.array(({k}, 8)" in src
