"""The depthwise conv ``plane`` recipe (``recipes.conv2d_depthwise_cpu``, issue 19): values
against PyTorch at shapes that are no multiple of any vector width (the recipe reads no
target lanes: LLVM chooses the row's vectors), with its fused epilogue inside
``wb.compile``."""

from __future__ import annotations

import numpy as np
import pytest

from workbench import ops
from workbench.backends import build
from workbench.recipes import get
from workbench.recipes.conv2d_depthwise_cpu import plane_cpu, plane_rule

torch = pytest.importorskip("torch")
F = torch.nn.functional

CASES = [  # N, C, H, W, R, stride, padding, dilation
    (1, 30, 13, 13, 3, 1, 1, 1),
    (2, 97, 7, 7, 3, 2, 1, 1),      # channels 96 + 1, stride 2, parallel
    (1, 30, 13, 11, 5, 2, 2, 1),    # 5x5, stride 2, padding 2
    (1, 3, 112, 112, 3, 2, 1, 1),   # a mobilenet plane size, stride 2
    (1, 6, 15, 14, 3, 1, 2, 2),     # dilation 2
    (1, 5, 9, 9, 3, 1, 0, 1),       # no padding
]


@pytest.mark.parametrize("case", CASES)
def test_plane_recipe_matches_torch(case):
    N, C, H, W, R, stride, padding, dilation = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((C, 1, R, R)).astype("float32")
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding,
                    dilation=dilation, groups=C).numpy()
    func = ops.depthwise_conv2d_nchw(N, C, H, W, R, R, stride, padding, dilation)
    out = np.full(want.shape, np.nan, "float32")
    build(plane_cpu(func), target="cpu")(x, w, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_plane_recipe_is_registered_and_refuses_other_kernels():
    func = ops.depthwise_conv2d_nchw(1, 4, 8, 8, 3, 3)
    assert get("depthwise_conv2d", "plane", "cpu").schedule is plane_cpu
    serial = plane_cpu(func, parallel=False).mod.script()
    assert "T.parallel" not in serial and 'scope="local"' in serial
    assert plane_rule(ops.matmul(8, 8, 8)) is None
    with pytest.raises(ValueError, match="no ops.depthwise_conv2d_nchw block in"):
        plane_cpu(ops.matmul(8, 8, 8))


class _DepthwiseNet(torch.nn.Module):
    """depthwise 3x3 + BN + relu6; depthwise 5x5 stride 2 + bias + SiLU; residual add after
    a third depthwise conv."""

    def __init__(self, C: int = 30):
        super().__init__()
        self.dw1 = torch.nn.Conv2d(C, C, 3, padding=1, groups=C, bias=False)
        self.bn = torch.nn.BatchNorm2d(C)
        self.dw2 = torch.nn.Conv2d(C, C, 5, stride=2, padding=2, groups=C)
        self.dw3 = torch.nn.Conv2d(C, C, 3, padding=1, groups=C)

    def forward(self, x):
        y = F.relu6(self.bn(self.dw1(x)))
        y = F.silu(self.dw2(y))
        return self.dw3(y) + y


def test_compiled_depthwise_convs_fuse_their_epilogues_and_match_torch():
    import workbench as wb

    torch.manual_seed(0)
    model = _DepthwiseNet().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-1, 1)
    x = torch.randn(2, 30, 17, 17)  # 9 columns after the stride 2: wider than
    # layout.PACK_DEPTHWISE_WIDTH (narrower depthwise convs are packed)
    compiled = wb.compile(model, (x,), jobs=1)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x), want, rtol=1e-4, atol=1e-4)
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns == ["conv2d+clamp", "conv2d+silu", "conv2d+add"]
    assert all("compute_at" in k.trace_json for k in compiled.kernels)


@pytest.mark.parametrize("N, C, H, W, kernel, stride", [(2, 97, 7, 7, 7, 1), (1, 30, 13, 11, 3, 2),
                                                        (16, 5, 56, 56, 56, 1)])
def test_direct_avg_pool_matches_torch(N, C, H, W, kernel, stride):
    from workbench.recipes.pool_cpu import direct_cpu

    x = np.random.default_rng(3).standard_normal((N, C, H, W)).astype("float32")
    want = F.avg_pool2d(torch.from_numpy(x), kernel, stride).numpy()
    sch = direct_cpu(ops.avg_pool2d(N, C, H, W, kernel=kernel, stride=stride))
    assert "pad_temp" not in sch.mod.script()
    out = np.full(want.shape, np.nan, "float32")
    build(sch, target="cpu")(x, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_direct_avg_pool_refuses_padding():
    from workbench.recipes.pool_cpu import direct_cpu, direct_rule

    padded = ops.avg_pool2d(1, 4, 8, 8, kernel=3, stride=2, padding=1)
    assert direct_rule(padded) is None
    with pytest.raises(ValueError, match="is not an unpadded ops.avg_pool2d"):
        direct_cpu(padded)
