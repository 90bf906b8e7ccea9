"""The ``register_tiled`` cuda conv2d (``recipes.conv2d_cuda``, the graph's default for
``conv2d_nchw``) under Numba's CUDA simulator at small odd sizes, against PyTorch on random
inputs (outputs poisoned with NaN first: an element no thread writes fails); its tiling
within the launch limits for every resnet-style convolution."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from workbench import ops
from workbench.backends import build
from workbench.backends.common.lower import lower
from workbench.backends.cuda.numba_cuda import generate_cuda_source
from workbench.recipes.conv2d_cuda import (
    MAX_BLOCK_THREADS,
    SHARED_BYTES,
    ConvTiling,
    _shared_floats,
    conv_window,
    register_tiled,
    register_tiling,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.cuda


def _run(func, sch, rng):
    arrays = [rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:-1]]
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel = build(sch, target="cuda")
    kernel(*arrays, out)
    return kernel, [torch.from_numpy(a).double() for a in arrays], out


@pytest.mark.parametrize(("N", "C", "H", "W", "K", "R", "stride", "padding", "options"), [
    (1, 5, 13, 11, 7, 3, 2, 1, {}),                      # odd everything, stride 2
    (1, 6, 9, 9, 8, 1, 2, 0, {"double_buffer": False}),  # 1x1 stride 2, single buffers
    (1, 3, 11, 11, 8, 7, 2, 3, {}),                      # the stem's 7x7 stride 2
    (2, 8, 6, 6, 8, 3, 1, 1, {"double_buffer": True, "unroll_ry": True}),
    (1, 4, 5, 7, 12, 3, 1, 1, {"tiling": ConvTiling(2, 4, 2, 2, 2, 2)}),  # guarded edges
    (3, 4, 5, 5, 8, 3, 1, 1, {"tiling": ConvTiling(2, 4, 5, 1, 5, 4, 2)}),  # 2 images a block
])
def test_register_tiled_conv2d_matches_torch(rng, N, C, H, W, K, R, stride, padding, options):
    func = ops.conv2d_nchw(N, C, H, W, K, R, R, stride=stride, padding=padding)
    sch = register_tiled(func, **options)
    kernel, (data, weight), out = _run(func, sch, rng)
    want = F.conv2d(data, weight, stride=stride, padding=padding).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert "weight_shared = cuda.shared.array" in kernel.source
    assert "pad_temp_local = cuda.local.array" in kernel.source  # the input row in registers
    assert len(kernel.launches) == 1


def test_register_tiled_with_dilation_and_its_window():
    func = ops.conv2d_nchw(1, 3, 9, 8, 4, 3, 2, stride=(1, 2), padding=1, dilation=(2, 1))
    assert conv_window(func) == (1, 2, 2, 1)
    rng = np.random.default_rng(0)
    _, (data, weight), out = _run(func, register_tiled(func), rng)
    want = F.conv2d(data, weight, stride=(1, 2), padding=1, dilation=(2, 1)).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_register_tiled_weights_come_in_128_bit_loads_at_8_channels_a_thread():
    sch = register_tiled(ops.conv2d_nchw(16, 64, 56, 56, 64, 3, 3))  # scheduled, not run
    script = sch.mod.script()
    assert "T.vectorized(4)" in script  # the thread's weights of a tap: ld.shared.v4
    source = generate_cuda_source(lower(sch.mod))
    assert "conv_local = cuda.local.array((1, 8, 1, 8)" in source  # an 8 x 8 register tile
    with pytest.raises(ValueError, match="blocks"):
        register_tiled(ops.matmul(8, 8, 8))
    with pytest.raises(ValueError, match="MAX_BLOCK_THREADS"):
        register_tiled(ops.conv2d_nchw(4, 4, 8, 8, 8), tiling=ConvTiling(8, 1, 8, 8, 1, 4, 2))


RESNET_CONVS = [  # (K, C, P, R, stride) of resnet18 / resnet50 at 224^2 (output size P)
    (64, 3, 112, 7, 2), (64, 64, 56, 3, 1), (128, 64, 28, 3, 2), (128, 64, 28, 1, 2),
    (128, 128, 28, 3, 1), (256, 128, 14, 3, 2), (256, 128, 14, 1, 2), (256, 256, 14, 3, 1),
    (512, 256, 7, 3, 2), (512, 256, 7, 1, 2), (512, 512, 7, 3, 1),
    (64, 64, 56, 1, 1), (256, 64, 56, 1, 1), (64, 256, 56, 1, 1), (128, 256, 56, 1, 1),
    (512, 128, 28, 1, 1), (1024, 256, 14, 1, 1), (2048, 512, 7, 1, 1), (512, 2048, 7, 1, 1),
    (512, 1024, 14, 1, 2), (1000, 3, 13, 3, 1), (24, 40, 15, 3, 1)]


@pytest.mark.parametrize("batch", [1, 16, 64])
def test_register_tiling_stays_within_the_launch_limits(batch):
    """Blocks of at most ``MAX_BLOCK_THREADS`` (the H200 refused 448-thread conv blocks),
    at most 64 accumulators a thread (ptxas gave the 8 x 8 tile 129 registers at resnet18's
    56^2 layer: no spills), shared tiles within ``SHARED_BYTES``."""
    assert MAX_BLOCK_THREADS * 255 <= 65536
    for K, C, P, R, stride in RESNET_CONVS:
        t = register_tiling(K, C, P, P, N=batch)
        assert 0 < t.threads <= MAX_BLOCK_THREADS, (K, C, P, batch, t)
        assert t.per_k * t.per_x <= 64 and t.k_threads * t.per_k <= 64
        assert 4 * _shared_floats(replace(t, c_tile=1), R, R,
                                  (stride, 1, stride, 1)) <= SHARED_BYTES


def test_register_tiling_keeps_the_grid_busy_on_small_images():
    big = register_tiling(64, 64, 56, 56, N=16)
    assert (big.per_k, big.per_x) == (8, 8)
    small = register_tiling(512, 512, 7, 7, N=16)  # 7x7 at batch 16: fewer channels a thread
    assert small.per_k < big.per_k


def test_shared_tiles_fit_when_built_at_every_resnet18_conv():
    """The build's own count of shared memory (``prepare``: the allocations as lowered,
    the weights' padded rows, both buffers) within the device's 48 KiB: 16 channels a
    block pad their rows to 36 floats, which an estimate of 16 + 4 missed once."""
    from workbench.backends.common.target import Target
    from workbench.backends.cuda.numba_cuda import prepare

    for (K, C, P, R, stride), batch in itertools.product(RESNET_CONVS[:11], (1, 16)):
        H = P * stride
        func = ops.conv2d_nchw(batch, C, H, H, K, R, R, stride=stride, padding=R // 2)
        prepare(lower(register_tiled(func).mod), Target("cuda"))  # raises when over


def test_small_tiles_are_double_buffered_by_default_large_ones_not():
    script = register_tiled(ops.conv2d_nchw(16, 512, 7, 7, 512, 3, 3)).mod.script()
    assert script.count('"double_buffer_scope": 0') == 2  # the window and the weights
    assert "double_buffer_scope" not in register_tiled(
        ops.conv2d_nchw(16, 64, 56, 56, 64, 3, 3)).mod.script()  # 8 x 8: 255 registers


class _TinyCNN(torch.nn.Module):
    """conv + bias + relu, then a 3x3 conv + the residual + relu, then a 1x1 stride 2."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.down = torch.nn.Conv2d(8, 12, 1, stride=2)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        return self.down(torch.relu(self.c2(y) + y))


def test_compiled_cnn_gets_register_tiled_convolutions_with_epilogues(monkeypatch):
    import workbench as wb
    from workbench.graph.passes import conv_gemm
    from workbench.recipes.graph_cuda_ops import RULES

    torch.manual_seed(0)
    model = _TinyCNN().eval()
    x = torch.randn(1, 3, 7, 5)
    monkeypatch.setattr(conv_gemm, "CONV_AS_GEMM", False)  # the conv recipes themselves
    compiled = wb.compile(model, (x,), target="cuda")
    rules = {next(r.__name__ for r in RULES if r(k.func) is not None) for k in compiled.kernels}
    assert rules == {"conv2d_tiled"}
    for kernel in compiled.kernels:
        script = kernel.schedule.mod.script()
        assert "pad_temp_local" in script  # register_tiled, not the older tiled
        assert 'with T.block("out")' not in script  # the epilogue in the write-back
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_small_images_fold_the_batch_into_the_block_by_default(rng):
    """``fold_images``: 7 x 7 outputs (one thread a row) take several images a block; an
    odd batch of 5 leaves a guarded last block of images."""
    func = ops.conv2d_nchw(5, 4, 7, 7, 8, 3, 3, padding=1)
    tiling = register_tiling(8, 4, 7, 7, 5)
    assert tiling.n_threads == 4 and tiling.threads <= MAX_BLOCK_THREADS
    kernel, (data, weight), out = _run(func, register_tiled(func), rng)
    np.testing.assert_allclose(out, F.conv2d(data, weight, padding=1).numpy(),
                               rtol=1e-4, atol=1e-4)
