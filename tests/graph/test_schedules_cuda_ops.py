"""Default cuda schedules of graph kernels (``workbench.recipes.graph_cuda_ops``): which
recipe each kind of kernel gets, and that the compiled model still equals PyTorch, under
Numba's CUDA simulator at tiny sizes (each test a few seconds)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.recipes.graph_cuda_ops import (  # noqa: E402
    RULES,
    matmul_tiling,
    recipe_schedule,
)


def _rule_of(compiled) -> dict[str, str]:
    """Kernel node -> the rule that schedules it (``baseline`` when none does)."""
    out = {}
    for kernel in compiled.kernels:
        out[kernel.node] = next((r.__name__ for r in RULES if r(kernel.func) is not None),
                                "baseline")
    return out


def _check(model, *inputs, rules: set[str]):
    torch.manual_seed(0)
    compiled = wb.compile(model.eval(), inputs, target="cuda")
    assert set(_rule_of(compiled).values()) == rules
    want = model(*inputs).detach().numpy()
    np.testing.assert_allclose(compiled(*inputs), want, rtol=1e-4, atol=1e-5)
    return compiled


def test_matmul_tiling_fills_the_grid_and_divides_the_shape():
    assert matmul_tiling(2048, 768, 256) == (16, 4, 8)   # 384 blocks of 64 x 64
    assert matmul_tiling(8192, 4096, 1024) == (16, 8, 8)  # big: 128 x 128 tiles
    assert matmul_tiling(128, 256, 64) == (8, 4, 8)       # few blocks: the smallest wide tile
    assert matmul_tiling(16, 96, 12) == (4, 4, 4)         # only 16-thread blocks divide
    assert matmul_tiling(10, 96, 32) is None              # nothing divides: the recipe's tile
    # a dividing 32-tile is narrower than the recipe's own 128 (predicated edges): the latter
    assert matmul_tiling(4000, 4000, 4000) is None
    assert matmul_tiling(4096, 4096, 4096) == (16, 8, 8)
    assert matmul_tiling(64, 64, 30) is None


def test_linear_gelu_gets_the_register_tile_with_the_epilogue_inlined():
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU())
    x = torch.randn(16, 16)
    compiled = _check(model, x, rules={"matmul_tiled"})
    (kernel,) = compiled.kernels
    script = kernel.schedule.mod.script()
    assert "C_local" in script and 'with T.block("out")' not in script  # written once
    assert "threadIdx.y" in script and "shared" in script


def test_a_single_k_step_matmul_is_not_double_buffered():
    compiled = _check(nn.Linear(8, 16), torch.randn(16, 8), rules={"matmul_tiled"})
    assert "double_buffer_scope" not in str(compiled.kernels[0].schedule.trace)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator reads unset padding
def test_an_odd_shaped_linear_gets_the_recipe_with_predicated_edges():
    _check(nn.Linear(9, 7), torch.randn(11, 9), rules={"matmul_tiled"})  # 11 rows: not gemv


def test_layernorm_gets_one_block_per_row():
    compiled = _check(nn.LayerNorm(40), torch.randn(2, 40), rules={"rows"})
    script = compiled.kernels[0].schedule.mod.script()
    assert script.count("blockIdx.x") == 1  # one launch


class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def test_attention_is_one_launch_a_tile_of_query_rows_per_block():
    q, k, v = (torch.randn(1, 2, 3, 8) for _ in range(3))
    compiled = _check(Attention(), q, k, v, rules={"attention_tiled"})
    (kernel,) = compiled.kernels
    assert kernel.schedule.mod.script().count("blockIdx.x") == 1
    assert len(kernel.kernel._compiled.kernels) == 1
    assert "K_shared" in kernel.schedule.mod.script()


def test_attention_rows_stays_the_fallback():
    from workbench import ops
    from workbench.recipes.graph_cuda_ops import attention_rows

    func = ops.attention(1, 2, 5, 8)
    sch = attention_rows(func)
    assert sch is not None and "K_shared" not in sch.mod.script()


class CausalAttention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_causal_attention_at_an_odd_length():
    q, k, v = (torch.randn(1, 1, 11, 6) for _ in range(3))
    _check(CausalAttention(), q, k, v, rules={"attention_tiled"})


class ConvBlock(nn.Module):
    """A resnet basic block at a tiny size: conv-bn-relu, conv-bn + residual, relu, and a
    1x1 stride-2 downsample."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.down = nn.Conv2d(8, 12, 1, stride=2)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return self.down(torch.relu(self.b2(self.c2(y)) + y))


def test_resnet_like_convolutions_get_the_implicit_gemm_with_epilogues_inlined(monkeypatch):
    from workbench.graph.passes import conv_gemm

    monkeypatch.setattr(conv_gemm, "CONV_AS_GEMM", False)  # the conv rule itself
    torch.manual_seed(0)
    model = ConvBlock()
    for bn in (model.b1, model.b2):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    compiled = _check(model, torch.randn(1, 3, 7, 7), rules={"conv2d_tiled"})
    for kernel in compiled.kernels:
        script = kernel.schedule.mod.script()
        assert 'with T.block("out")' not in script  # the epilogue in the write-back
        assert script.count('scope="shared"') == 2  # the padded window, the weights


class AddMul(nn.Module):
    def forward(self, x, y):
        return (x + y) * y


def test_a_depthwise_convolution_gets_its_tiled_recipe():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1, groups=3), nn.ReLU())
    compiled = _check(model, torch.randn(1, 3, 6, 6), rules={"conv2d_tiled"})
    assert "depthwise" in compiled.kernels[0].func.script()


def test_elementwise_gets_v4_and_odd_rows_fall_back_to_the_baseline():
    x, y = torch.randn(2, 128), torch.randn(2, 128)
    compiled = _check(AddMul(), x, y, rules={"elementwise_v4"})
    assert "T.vectorized(4)" in compiled.kernels[0].schedule.mod.script()
    x, y = torch.randn(2, 6), torch.randn(2, 6)
    _check(AddMul(), x, y, rules={"baseline"})


class _Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.max = nn.MaxPool2d(3, 2, 1)
        self.avg = nn.AvgPool2d(3, 2, 1)

    def forward(self, x):
        return self.max(x), torch.relu(self.avg(x)) * 2


def test_pooling_is_one_launch_its_padding_inlined_the_window_in_a_register():
    """Max and average pooling (padding 1, odd sizes, a ReLU and a scale after the average):
    ``pool_threads``, one launch each, no ``pad_temp`` scratch, the window reduced in a
    ``local`` register and the division and the epilogue in its write-back."""
    torch.manual_seed(0)
    model = _Pools().eval()
    x = torch.randn(2, 5, 15, 17)
    compiled = wb.compile(model, (x,), target="cuda")
    assert set(_rule_of(compiled).values()) == {"pool_threads"}
    for kernel in compiled.kernels:
        assert kernel.source.count("@cuda.jit") == 1 and "pad_temp" not in kernel.source
        assert "cuda.local.array((1, 1, 1, 1), numba.float32)" in kernel.source
    got, want = compiled(x), model(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)
    average = next(k for k in compiled.kernels if "avg" in k.pattern)
    assert "/ np.float32(9.0), np.float32(0.0)) * np.float32(2.0)" in average.source


def test_a_kernel_no_rule_takes_keeps_the_baseline():
    from workbench import ops

    assert recipe_schedule(ops.conv2d_nchw(1, 2, 5, 5, 3, 3)) is not None  # conv2d_tiled
    assert recipe_schedule(ops.reduce_sum(6, 10)) is None
    assert recipe_schedule(ops.softmax(4, 6)) is not None


class _Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 36)

    def forward(self, x, r):
        return self.linear(x) + r


@pytest.mark.parametrize("model, inputs", [
    (nn.Sequential(nn.Linear(64, 96), nn.GELU(approximate="tanh")), ((32, 64),)),
    (_Residual(), ((10, 64), (10, 36))),  # no tile divides 10 x 36: predicated edges
], ids=["gelu", "odd-residual"])
def test_split_k_puts_the_epilogue_in_the_kernel_that_sums_the_slices(model, inputs,
                                                                      monkeypatch):
    """Policy ``"split"``: K split in 2 (a grid of 1-2 blocks), the partial sums added by
    the second kernel, which computes the bias, GELU or residual there (the sum a register);
    off by default, where the epilogue is in the register tile's write-back."""
    from workbench.recipes import graph_cuda_ops

    torch.manual_seed(0)
    inputs = tuple(torch.randn(*s) for s in inputs)
    model.eval()
    want = model(*inputs).detach().numpy()
    default = wb.compile(model, inputs, target="cuda")
    (kernel,) = default.kernels
    assert len(kernel.kernel.launches) == 1 and "C_rf" not in kernel.schedule.mod.script()
    monkeypatch.setattr(graph_cuda_ops, "MATMUL_POLICY", "split")
    split = wb.compile(model, inputs, target="cuda")
    (kernel,) = split.kernels
    script = kernel.schedule.mod.script()
    assert len(kernel.kernel.launches) == 2
    allocs = {line.split("=")[0].strip(): line for line in script.splitlines()
              if "T.alloc_buffer" in line}
    assert allocs["C_rf"].strip().startswith("C_rf = T.alloc_buffer((2,")  # 2 slices
    assert 'scope="local"' in allocs["C"]  # the sum of the slices: a register
    sums = kernel.source.split("kernel1")[1]
    assert "cuda.local.array((1, 1)" in sums and "out[" in sums  # epilogue after the sum
    np.testing.assert_allclose(split(*inputs), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(default(*inputs), want, rtol=1e-4, atol=1e-5)


def test_the_wide_policy_splits_k_under_a_128_tile_with_predicated_edges(monkeypatch):
    """Policy ``"wide"`` (M, N >= 256): the 128 x 128 tile over 257 x 260 (predicated edge
    blocks), K 64 in 2 slices, the bias and GELU after the slices' sum, against PyTorch."""
    from workbench.recipes import graph_cuda_ops

    assert graph_cuda_ops.matmul_plan(257, 260, 64, True, "wide") == (16, 8, 8, 2)
    # a K too short to split keeps it whole (the split list was empty: ValueError from max)
    assert graph_cuda_ops.matmul_plan(300, 300, 12, True, "wide") == (16, 8, 4, 1)
    monkeypatch.setattr(graph_cuda_ops, "MATMUL_POLICY", "wide")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 260), nn.GELU(approximate="tanh")).eval()
    x = torch.randn(257, 64)
    compiled = wb.compile(model, (x,), target="cuda")
    (kernel,) = compiled.kernels
    first, second = kernel.kernel.launches
    assert first.grid == (3, 3, 2) and first.block == (16, 16, 1)
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_an_unknown_matmul_policy_is_refused():
    from workbench.recipes.graph_cuda_ops import matmul_plan

    with pytest.raises(ValueError, match="matmul policy must be one of"):
        matmul_plan(64, 64, 64, True, "fastest")


def test_a_matmul_alone_keeps_the_recipes_own_split():
    """Without an epilogue the split is ``register_blocked``'s own choice, flag or not."""
    from workbench.recipes.graph_cuda_ops import matmul_tiled

    func = wb.ops.matmul(32, 32, 256)  # 1 block of 32: K in 8 slices of 32 (whole k steps)
    for split_k in (None, False, True):
        assert "C_rf = T.alloc_buffer((8," in matmul_tiled(func, split_k=split_k).mod.script()
