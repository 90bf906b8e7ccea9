"""The cuda graph's default for attention (``graph_cuda_ops.attention_tiled``): a compiled
``sdpa`` takes the ``warp_tiles`` recipe (a register tile of query rows x keys per lane),
plain, causal at an odd length, GPT-2's fused projection and grouped-query heads read through
index maps, and equals PyTorch, under Numba's CUDA simulator at tiny sizes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import ops  # noqa: E402
from workbench.recipes.graph_cuda_ops import (  # noqa: E402
    ATTENTION_RECIPES,
    RULES,
    attention_tiled,
)

pytestmark = pytest.mark.cuda


def _check(model, *inputs):
    compiled = wb.compile(model.eval(), inputs, target="cuda")
    (kernel,) = [k for k in compiled.kernels if k.node.startswith("scaled_dot")]
    assert next(r.__name__ for r in RULES if r(kernel.func) is not None) == "attention_tiled"
    script = kernel.schedule.mod.script()
    assert 'thread="blockIdx.y"' in script and "scores_local" in script  # warp_tiles
    np.testing.assert_allclose(compiled(*inputs), model(*inputs).numpy(), rtol=1e-4, atol=1e-5)


class Sdpa(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


class Masked(nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class FusedQkv(nn.Module):
    """GPT-2's layout: one projection, sliced, viewed and transposed into the heads."""

    def forward(self, qkv):
        q, k, v = (t.view(1, 5, 2, 4).transpose(1, 2) for t in qkv.split(8, dim=2))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)


class GroupedQuery(nn.Module):
    def forward(self, q, kv):
        q = q.view(1, 3, 4, 4).transpose(1, 2)
        k = kv.view(1, 3, 2, 4).transpose(1, 2)[:, :, None].expand(1, 2, 2, 3, 4)
        k = k.reshape(1, 4, 3, 4)
        return F.scaled_dot_product_attention(q, k, k, is_causal=True)


def test_warp_tiles_is_tried_first():
    assert ATTENTION_RECIPES[0] == "warp_tiles"
    assert attention_tiled(ops.softmax(4, 4)) is None


def test_attention_takes_warp_tiles():
    torch.manual_seed(0)
    _check(Sdpa(), *(torch.randn(1, 2, 6, 8) for _ in range(3)))


def test_causal_attention_at_an_odd_length():
    torch.manual_seed(1)
    _check(Sdpa(causal=True), *(torch.randn(1, 1, 9, 4) for _ in range(3)))


def test_index_mapped_inputs():
    torch.manual_seed(2)
    _check(FusedQkv(), torch.randn(1, 5, 24))
    _check(GroupedQuery(), torch.randn(1, 3, 16), torch.randn(1, 3, 8))


def test_a_masked_attention_is_the_fused_kernel_with_its_mask():
    """The frontend lowers a masked ``sdpa`` to ``ops.attention`` with a ``mask`` parameter
    (not matmul + add + softmax + matmul): ``warp_tiles`` applies it in the softmax."""
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 2, 5, 8) for _ in range(3))
    _check(Masked(), q, k, v, torch.randn(1, 1, 5, 5))
