"""The ``cuda`` conv2d (implicit GEMM, ``tiled``) and attention (``warp_rows``) recipes under
Numba's CUDA simulator at small odd sizes, against PyTorch on random inputs; the outputs
poisoned with NaN first, so an element no thread writes fails."""

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.recipes.attention_cuda import default_rows, warp_rows
from workbench.recipes.conv2d_cuda import ConvTiling, conv_tiling, depthwise_tiled, tiled

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.cuda


def _run(func, sch, rng):
    arrays = [rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:-1]]
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel = build(sch, target="cuda")
    kernel(*arrays, out)
    return kernel, [torch.from_numpy(a).double() for a in arrays], out


@pytest.mark.parametrize(("N", "C", "H", "K", "R", "stride", "padding", "tiling"), [
    (1, 3, 11, 8, 7, 2, 3, None),                         # the stem's 7x7 stride 2, 3 channels
    (1, 6, 9, 20, 1, 2, 0, None),                         # 1x1 stride 2 (downsample), odd K
    (1, 16, 7, 16, 3, 2, 1, None),                        # 3x3 stride 2, two steps of c
    (2, 12, 6, 10, 3, 1, 1, ConvTiling(4, 2, 3, 1, 2, 4)),  # a tile by hand, guarded K edge
])
def test_tiled_conv2d_matches_torch(rng, N, C, H, K, R, stride, padding, tiling):
    func = ops.conv2d_nchw(N, C, H, H, K, R, R, stride=stride, padding=padding)
    sch = tiled(func, tiling)
    kernel, (data, weight), out = _run(func, sch, rng)
    want = F.conv2d(data, weight, stride=stride, padding=padding).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert "pad_temp = cuda.shared.array" in kernel.source  # the padded window on chip
    assert "weight_shared = cuda.shared.array" in kernel.source
    assert len(kernel.launches) == 1


def test_conv_tiling_divides_resnet_shapes_and_guards_others():
    for size in (112, 56, 28, 14, 7):
        t = conv_tiling(64, 64, size, size)
        assert size % t.y_threads == 0 and size % (t.x_threads * t.per_x) == 0
        assert t.threads <= 1024 and t.k_threads * t.per_k == 64
    small = conv_tiling(512, 512, 7, 7, N=16)  # a small image: fewer channels per thread
    assert small.per_k < conv_tiling(64, 64, 56, 56, N=16).per_k and small.threads <= 256
    assert small.k_threads * small.per_k == 64
    t = conv_tiling(5, 3, 9, 9)  # nothing divides 9: the largest tile, guarded
    assert (t.y_threads, t.x_threads * t.per_x, t.c_tile) == (8, 8, 3)
    with pytest.raises(ValueError, match="blocks"):
        tiled(ops.matmul(8, 8, 8))


RESNET18_CONVS = [  # (K, C, P) of every convolution of torchvision's resnet18 at 224x224
    (64, 3, 112), (64, 64, 56), (128, 64, 28), (128, 128, 28), (256, 128, 14),
    (256, 256, 14), (512, 256, 7), (512, 512, 7)]


@pytest.mark.parametrize("batch", [1, 16, 64])
def test_conv_tiling_blocks_launch_at_any_register_count(batch):
    """Every block of the default tiling fits a multiprocessor even at 255 registers a
    thread (65,536 / 255 = 257 threads): the H200 refused resnet18's 448-thread blocks with
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, which the simulator cannot see."""
    from workbench.recipes.conv2d_cuda import MAX_BLOCK_THREADS

    assert MAX_BLOCK_THREADS * 255 <= 65536
    for K, C, P in RESNET18_CONVS + [(1000, 3, 13), (24, 40, 15), (96, 96, 3)]:
        t = conv_tiling(K, C, P, P, N=batch)
        assert 0 < t.threads <= MAX_BLOCK_THREADS, (K, C, P, batch, t)
        assert t.k_threads * t.per_k >= min(K, 64)


@pytest.mark.parametrize(("N", "C", "H", "R", "stride", "padding", "tiling"), [
    (1, 3, 9, 3, 1, 1, None),       # 3x3, the default tile
    (2, 2, 11, 5, 2, 2, None),      # 5x5 stride 2, nothing divides 6: guarded
    (1, 2, 7, 3, 1, 0, (2, 3, 2)),  # a tile by hand, no padding
])
def test_depthwise_tiled_matches_torch(rng, N, C, H, R, stride, padding, tiling):
    func = ops.depthwise_conv2d_nchw(N, C, H, H, R, R, stride=stride, padding=padding)
    kernel, (data, weight), out = _run(func, depthwise_tiled(func, tiling), rng)
    want = F.conv2d(data, weight, stride=stride, padding=padding, groups=C).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert "pad_temp = cuda.shared.array" in kernel.source


@pytest.mark.parametrize(("B", "H", "L", "D", "S", "causal", "options"), [
    (1, 2, 9, 8, 9, False, {}),                     # a tile of 8 rows + a guarded one
    (1, 1, 13, 6, 37, False, {}),                   # more keys than lanes, odd head dim
    (2, 1, 11, 8, 11, True, {"rows": 4}),           # causal
    (1, 1, 5, 40, 5, False, {"stage_keys": False}),  # head dim above a warp, keys unstaged
    (1, 1, 9, 40, 128, False, {"tile": True}),       # a lane's 4 keys a register tile, v4
    (1, 1, 5, 6, 37, True, {"tile": True}),          # the tile with guards, causal
])
def test_warp_rows_attention_matches_torch(rng, B, H, L, D, S, causal, options):
    func = ops.attention(B, H, L, D, kv_seq=S, causal=causal)
    sch = warp_rows(func, **options)
    kernel, (q, k, v), out = _run(func, sch, rng)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    rows = options.get("rows", default_rows(L))
    assert [c.block for c in kernel.launches] == [(32, rows, 1)]
    assert ("K_shared = cuda.shared.array" in kernel.source) == options.get("stage_keys", True)
    assert "shfl_xor_sync" in kernel.source
    assert ("load4(K_shared" in kernel.source) == (S == 128)  # the tile's 128-bit key loads


def test_warp_rows_refuses_other_kernels():
    with pytest.raises(ValueError, match="five blocks"):
        recipes.get("attention", "warp_rows", "cuda")(ops.softmax(4, 8))
