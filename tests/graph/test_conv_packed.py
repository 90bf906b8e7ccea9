"""Packed conv weights (issue 19): the packing, the packed conv operators with their cpu
recipe against PyTorch at shapes that are no multiple of any tile, and the cpu target's
layout pass inside ``wb.compile``."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.backends import build
from workbench.backends.cpu.cpu_facts import target_vector_lanes
from workbench.graph.passes.layout import channel_block, pack_conv_weights
from workbench.ops.conv_packed import (
    conv2d_nchw_packed,
    depthwise_conv2d_nchw_packed,
    pack_depthwise,
    pack_kcrs,
    unpack_kcrs,
)
from workbench.recipes.conv2d_packed_cpu import packed_cpu, tile_columns

torch = pytest.importorskip("torch")
F = torch.nn.functional


def test_pack_round_trip_and_channel_blocks():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((24, 3, 3, 3)).astype("float32")
    packed = pack_kcrs(w, 8)
    assert packed.shape == (3, 3, 3, 3, 8) and packed.flags.c_contiguous
    assert packed[1, 2, 0, 1, 5] == w[13, 2, 0, 1]
    np.testing.assert_array_equal(unpack_kcrs(packed), w)
    dw = rng.standard_normal((40, 1, 5, 5)).astype("float32")
    assert pack_depthwise(dw, 8).shape == (5, 5, 5, 8)
    np.testing.assert_array_equal(unpack_kcrs(pack_depthwise(dw, 8)), dw)
    with pytest.raises(ValueError, match="not a multiple of kb=16"):
        pack_kcrs(w, 16)
    assert [channel_block(k, 16) for k in (64, 40, 1000, 6, 3)] == [16, 8, 8, None, None]
    assert channel_block(64, 8) == 8  # from the target's lanes, not a constant
    assert tile_columns(15) == 5 and tile_columns(19) == 8


CASES = [  # N, C, H, W, K, R, stride, padding, dilation, kb, depthwise
    (1, 3, 13, 15, 24, 3, 2, 1, 1, 8, False),    # 3 input channels, stride 2, odd sizes
    (2, 5, 7, 7, 16, 1, 1, 0, 1, 8, False),      # 1x1, batch 2
    (1, 24, 15, 13, 40, 3, 1, 2, 2, 8, False),   # dilation 2
    (1, 4, 19, 9, 8, 7, 2, 3, 1, 4, False),      # stem-like 7x7 stride 2, guarded tile (19)
    (1, 24, 15, 13, 24, 5, 2, 2, 1, 8, True),    # depthwise 5x5 stride 2
    (2, 40, 7, 7, 40, 3, 1, 1, 1, 8, True),      # depthwise 3x3
]


@pytest.mark.parametrize("case", CASES)
def test_packed_convs_match_torch(case):
    N, C, H, W, K, R, stride, padding, dilation, kb, depthwise = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((K, 1 if depthwise else C, R, R)).astype("float32")
    if depthwise:
        func = depthwise_conv2d_nchw_packed(N, C, H, W, R, R, kb, stride, padding, dilation)
        packed = pack_depthwise(w, kb)
    else:
        func = conv2d_nchw_packed(N, C, H, W, K, R, R, kb, stride, padding, dilation)
        packed = pack_kcrs(w, kb)
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding,
                    dilation=dilation, groups=C if depthwise else 1).numpy()
    out = np.full(want.shape, np.nan, "float32")
    build(packed_cpu(func), target="cpu")(x, packed, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


class _Net(torch.nn.Module):
    """conv+BN+relu (3 -> 24, stride 2), depthwise+relu6, 1x1 to 40, a grouped conv (left
    to the generic kernel), 3x3 + residual add + silu, a 1000-class head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 24, 3, stride=2, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(24)
        self.dw = torch.nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.pw = torch.nn.Conv2d(24, 40, 1)
        self.grouped = torch.nn.Conv2d(40, 40, 3, padding=1, groups=2)
        self.conv = torch.nn.Conv2d(40, 40, 3, padding=1)
        self.head = torch.nn.Linear(40, 1000)

    def forward(self, x):
        y = torch.relu(self.bn(self.stem(x)))
        y = F.relu6(self.dw(y))
        y = self.pw(y)
        y = F.silu(self.conv(self.grouped(y)) + y)
        return self.head(y.mean((2, 3)))


def test_compiled_model_packs_weights_once_and_matches_torch():
    from graph_models import randomize_bn

    import workbench as wb

    torch.manual_seed(0)
    model = randomize_bn(_Net())
    x = torch.randn(2, 3, 15, 13)
    compiled = wb.compile(model, (x,), jobs=1)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x), want, rtol=1e-4, atol=1e-4)
    patterns = [k.pattern for k in compiled.kernels]
    # a depthwise conv 7 columns wide is packed (layout.PACK_DEPTHWISE_WIDTH; wider ones keep
    # NCHW: tests/recipes/test_conv2d_depthwise_cpu.py); the 1x1 conv over 8x7 = 56
    # positions (a rows tile of 28 divides them) reads NCHW rows (tests/graph/test_conv_rows.py)
    assert patterns[:3] == ["conv2d_packed+relu", "depthwise_conv2d_packed+clamp",
                            "conv2d_1x1"]
    assert "conv2d" in patterns and "conv2d_packed+add+silu" in patterns
    lanes = target_vector_lanes("cpu", "float32")
    packed = [v for k, v in compiled.graph.constants.items() if "_packed" in k]
    assert len(packed) == 3 and all(v.shape[-1] in (lanes, lanes // 2) for v in packed)
    assert all("pack_weights" not in n.op for n in compiled.graph.nodes)


def test_layout_pass_is_the_cpu_targets_and_can_be_left_out(cnn):
    model, x, graph = cnn
    from workbench.graph.passes.pipeline import Pipeline

    graph = Pipeline().without("fuse")(graph)
    packed = pack_conv_weights(graph, "cpu")
    ops = [n.op for n in packed.nodes]
    assert "conv2d" not in ops and "conv2d_packed" in ops
    assert pack_conv_weights(packed, "cpu") is packed  # nothing left to pack
    from workbench.backends.common.target import Target

    # the cpu target's layout hook packs (then folds views, branch attn); numpy's does not pack
    cpu_hook, numpy_hook = (Target(t).hook("graph_layout") for t in ("cpu", "numpy"))
    assert "conv2d_packed" in [n.op for n in cpu_hook(graph, "cpu").nodes]
    assert numpy_hook is None or \
        "conv2d_packed" not in [n.op for n in numpy_hook(graph, "numpy").nodes]
