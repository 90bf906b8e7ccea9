"""1x1 convs on NCHW rows (issue 19, efficientnet): ``ops.conv_rows.conv2d_1x1_nchw`` with
its ``rows`` recipe against PyTorch (odd channel counts, plain and scaled), and the cpu
layout pass inside ``wb.compile``: 1x1 convs become ``conv2d_1x1`` where a tile divides
their positions, and a squeeze-excitation product is folded into the conv that reads it."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.backends import build
from workbench.ops.conv_rows import conv2d_1x1_nchw
from workbench.recipes.conv2d_1x1_cpu import rows_cpu, rows_rule, rows_tile

torch = pytest.importorskip("torch")
F = torch.nn.functional

CASES = [  # N, C, H, W, K, pt, kt (None: rows_tile), scaled
    (3, 7, 15, 14, 9, 14, 3, False),      # odd channels, 15x14, batch 3
    (3, 7, 15, 14, 9, 14, 3, True),
    (1, 13, 14, 14, 24, None, None, True),
    (2, 5, 8, 8, 6, None, None, False),
]


@pytest.mark.parametrize("case", CASES)
def test_rows_recipe_matches_torch(case):
    N, C, H, W, K, pt, kt, scaled = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    s = rng.uniform(0.1, 1.0, (N, C, 1, 1)).astype("float32")
    w = rng.standard_normal((K, C, 1, 1)).astype("float32")
    xs = x * s if scaled else x
    want = F.conv2d(torch.from_numpy(xs), torch.from_numpy(w)).numpy()
    func = conv2d_1x1_nchw(N, C, H * W, K, scaled=scaled)
    out = np.full((N, K, H * W), np.nan, "float32")
    kernel = build(rows_cpu(func, pt=pt, kt=kt), target="cpu")
    args = [x.reshape(N, C, H * W)] + ([s.reshape(N, C)] if scaled else [])
    kernel(*args, w.reshape(K, C), out)
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_rows_tile_and_refusals():
    assert rows_tile(49, 192) is None and rows_tile(1, 48) is None  # no tile divides
    pt, kt = rows_tile(196, 40)
    assert 196 % pt == 0 and 40 % kt == 0
    from workbench import ops

    assert rows_rule(ops.matmul(8, 8, 8)) is None
    with pytest.raises(ValueError, match="must divide the 49 positions"):
        rows_cpu(conv2d_1x1_nchw(1, 4, 49, 8), pt=16, kt=4)
    with pytest.raises(ValueError, match="no tile divides the 49 positions"):
        rows_cpu(conv2d_1x1_nchw(1, 4, 49, 8))


class _MBConv(torch.nn.Module):
    """efficientnet's block at a small size: 1x1 expansion + BN + SiLU, depthwise 3x3 +
    SiLU, squeeze-excitation, 1x1 projection with bias, residual add."""

    def __init__(self, C: int = 10, E: int = 3):
        super().__init__()
        self.exp = torch.nn.Conv2d(C, C * E, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(C * E)
        self.dw = torch.nn.Conv2d(C * E, C * E, 3, padding=1, groups=C * E)
        self.fc1, self.fc2 = torch.nn.Conv2d(C * E, 5, 1), torch.nn.Conv2d(5, C * E, 1)
        self.proj = torch.nn.Conv2d(C * E, C, 1)

    def forward(self, x):
        y = F.silu(self.bn(self.exp(x)))
        y = F.silu(self.dw(y))
        gate = torch.sigmoid(self.fc2(F.silu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return self.proj(y * gate) + x


@pytest.mark.parametrize("N, H", [(1, 14), (3, 15)])
def test_compiled_block_folds_the_gate_into_the_projection(N, H):
    import workbench as wb

    torch.manual_seed(0)
    model = _MBConv().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(N, 10, H, H)
    compiled = wb.compile(model, (x,), progress=False)
    with torch.no_grad():
        want = model(x).numpy()
    got = compiled(x.numpy())
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    patterns = [k.pattern for k in compiled.kernels]
    if H == 14:  # 196 positions: a rows tile divides them
        assert patterns[0] == "conv2d_1x1+silu" and patterns[-1] == "conv2d_1x1+add"
        assert "mul" not in patterns
        assert any(n.op == "conv2d_1x1" and n.attrs.get("scaled")
                   for n in _members(compiled.graph))
    else:  # 225 positions: none divides; the packed convs and the product kernel stay
        assert "conv2d_1x1" not in " ".join(patterns) and "mul" in patterns


def _members(graph):
    for node in graph.nodes:
        if node.op == "fused":
            yield from node.attrs["graph"].nodes
        else:
            yield node
