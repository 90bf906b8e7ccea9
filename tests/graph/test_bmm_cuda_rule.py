"""The cuda graph rule for batched matmuls (``graph_cuda_ops.bmm_tiled``): ``torch.bmm`` and
the batched ``@`` of a hand-written attention take the batched register-blocked SGEMM
(``recipes.bmm_cuda``), epilogues inlined, and the compiled model equals PyTorch, under
Numba's CUDA simulator at tiny sizes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.recipes.graph_cuda_ops import RULES, bmm_tiled, bmm_tiling  # noqa: E402

pytestmark = pytest.mark.cuda


def _rules(compiled) -> dict[str, str]:
    return {k.node: next((r.__name__ for r in RULES if r(k.func) is not None), "baseline")
            for k in compiled.kernels}


class BmmRelu(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.bmm(a, b))


class HandAttention(nn.Module):
    """Attention written out: the two batched matmuls around a softmax."""

    def forward(self, q, k, v):
        scores = q @ k.transpose(-1, -2) * (q.shape[-1] ** -0.5)
        return torch.softmax(scores, dim=-1) @ v


def test_bmm_tiling():
    assert bmm_tiling(64, 128, 128, 64) == (16, 4, 8)  # 256 blocks of 64 x 64
    assert bmm_tiling(4, 128, 64, 128) == (8, 4, 8)  # few blocks: 32 x 32
    assert bmm_tiling(3, 17, 33, 12) == (None, None, 4)  # the recipe's tile, guarded
    assert bmm_tiled(wb.ops.matmul(16, 16, 16)) is None  # three loops: matmul_tiled's


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator reads unset padding
def test_an_odd_bmm_with_an_epilogue_gets_the_batched_tile():
    torch.manual_seed(0)
    a, b = torch.randn(3, 17, 9), torch.randn(3, 9, 33)
    compiled = wb.compile(BmmRelu().eval(), (a, b), target="cuda")
    assert set(_rules(compiled).values()) == {"bmm_tiled"}
    script = compiled.kernels[0].schedule.mod.script()
    assert "blockIdx.z" in script and 'with T.block("out")' not in script  # written once
    np.testing.assert_allclose(compiled(a, b), BmmRelu()(a, b).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_hand_written_attention_takes_bmm_and_rows():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 5, 8) for _ in range(3))
    compiled = wb.compile(HandAttention().eval(), (q, k, v), target="cuda")
    rules = list(_rules(compiled).values())
    assert rules.count("bmm_tiled") == 2 and "rows" in rules
    want = HandAttention()(q, k, v).numpy()
    np.testing.assert_allclose(compiled(q, k, v), want, rtol=1e-4, atol=1e-5)
