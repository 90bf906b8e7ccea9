"""Compaction of local buffers to the tile one iteration of their loop touches."""

import numpy as np

import workbench as wb
from workbench import ops
from workbench.backends import lower


def _tiled_matmul_with_local_accumulator():
    sch = wb.Schedule(ops.matmul(64, 128, 32))
    block = sch.get_block("C")
    write_back = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i_0, i_1 = sch.split(i, [None, 4])
    j_0, j_1 = sch.split(j, [None, 64])
    sch.reorder(i_0, j_0, k, i_1, j_1)
    sch.reverse_compute_at(write_back, j_0)
    sch.parallel(i_0)
    sch.vectorize(j_1)
    return sch


def test_local_cache_shrinks_to_one_tile_and_indices_are_rebased():
    lowered = lower(_tiled_matmul_with_local_accumulator().mod)
    (local,) = [b for b in lowered.root_block.alloc_buffers if b.name == "C_local"]
    assert local.shape == (4, 64)
    text = lowered.script()
    assert "C_local[i_1, j_1] = C_local[i_1, j_1] + A[i_0 * 4 + i_1, k]" in text
    assert "= C_local[ax0_1, ax1_1]" in text


def test_compacted_kernel_matches_reference_on_both_targets():
    sch = _tiled_matmul_with_local_accumulator()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 128)).astype(np.float32)
    for target in ("numpy", "cpu"):
        c = np.full((64, 128), np.nan, np.float32)
        wb.build(sch, target=target)(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_global_and_top_level_intermediates_keep_their_shape():
    # softmax's row buffers are global: never compacted
    lowered = lower(ops.softmax(4, 8))
    assert {b.name: b.shape for b in lowered.root_block.alloc_buffers} == {
        "T_softmax_maxelem": (4,), "T_softmax_expsum": (4,)
    }
    # a local buffer used by several top-level nests is allocated at the top: kept whole
    sch = wb.Schedule(ops.softmax(4, 8))
    sch.set_scope(sch.get_block("T_softmax_maxelem"), 0, "local")
    lowered = lower(sch.mod)
    assert {b.name: b.shape for b in lowered.root_block.alloc_buffers}["T_softmax_maxelem"] == (4,)


def test_window_wider_than_the_buffer_keeps_the_dimension():
    # found by the property tests: the padded copy reads data_local[..., ax2 - 1] for ax2 in
    # [0, 9) under a Select, a window of 9 on a dimension of 7; shrinking it to 7 wrote past
    # the end of the stack tile and the conv produced NaNs
    func = ops.conv2d_nchw(N=1, C=3, H=7, W=7, K=4, R=3, S=3, stride=2, padding=1, dilation=1)
    sch = wb.Schedule(func)
    pad = sch.get_block("pad_temp")
    conv = sch.get_block("conv2d_nchw")
    n, k, y, *_ = sch.get_loops(conv)
    sch.compute_at(pad, y)
    local = sch.cache_read(pad, 0, "local")
    sch.compute_at(local, sch.get_loops(pad)[3])
    lowered = lower(sch.mod)
    shapes = {b.name: b.shape for b in lowered.root_block.alloc_buffers}
    assert shapes["data_local"][3] == 7  # the window of 9 does not fit: kept whole
    rng = np.random.default_rng(5)
    data = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
    weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    want = np.empty((1, 4, 4, 4), np.float32)
    wb.build(func, target="numpy")(data, weight, want)
    for target in ("numpy", "cpu"):
        got = np.full((1, 4, 4, 4), np.nan, np.float32)
        wb.build(sch, target=target)(data, weight, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
