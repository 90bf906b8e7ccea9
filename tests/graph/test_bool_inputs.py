"""A model's boolean inputs (attention masks, masked_fill masks) mean "keep" / "fill" as in
PyTorch, never 0/1 added to a float: the frontend casts them once at the graph's boundary to
the graph's 0/1 booleans, and ``scaled_dot_product_attention`` with a run-time mask becomes
one fused ``sdpa`` node reading it (found: a bool ``attn_mask`` input was added as 0/1)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import workbench as wb  # noqa: E402


class Attention(torch.nn.Module):
    def __init__(self, gqa: bool = False):
        super().__init__()
        self.gqa = gqa

    def forward(self, q, k, v, mask):
        if self.gqa:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def qkv(kv_heads: int = 3, length: int = 7, source: int = 9, dim: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, length, dim, generator=g),
            torch.randn(2, kv_heads, source, dim, generator=g),
            torch.randn(2, kv_heads, source, dim, generator=g))


def bool_mask(shape, seed: int = 1):
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) > 0.4
    mask[..., 0] = True  # every row keeps a key (a row of -inf is NaN in torch too)
    return mask


def run(model, inputs, target):
    compiled = wb.compile(model, inputs, target=target)
    out = compiled(*inputs)
    return compiled, np.asarray(out.detach() if hasattr(out, "detach") else out)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
@pytest.mark.parametrize("shape", [(2, 1, 7, 9), (2, 1, 1, 9), (7, 9)])
def test_a_bool_attention_mask_input_keeps_where_true(target, shape):
    q, k, v = qkv()
    mask = bool_mask(shape)
    expected = Attention()(q, k, v, mask).numpy()
    compiled, out = run(Attention(), (q, k, v, mask), target)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    ops = [node.op for node in compiled.graph.nodes]
    assert "sdpa" in ops and "softmax" not in ops, ops  # one fused attention reads the mask
    # a different mask at run time: the mask is an input, not a constant
    other = bool_mask(shape, seed=5)
    out = compiled(q, k, v, other)
    np.testing.assert_allclose(np.asarray(out), Attention()(q, k, v, other).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_an_additive_float_mask_input_is_added():
    q, k, v = qkv()
    mask = torch.randn(2, 1, 7, 9, generator=torch.Generator().manual_seed(3))
    _, out = run(Attention(), (q, k, v, mask), "cpu")
    np.testing.assert_allclose(out, Attention()(q, k, v, mask).numpy(), rtol=1e-5, atol=1e-5)


def test_grouped_query_attention_with_a_bool_mask_input():
    q, k, v = qkv(kv_heads=1)
    mask = bool_mask((2, 1, 7, 9))
    _, out = run(Attention(gqa=True), (q, k, v, mask), "cpu")
    np.testing.assert_allclose(out, Attention(gqa=True)(q, k, v, mask).numpy(),
                               rtol=1e-5, atol=1e-5)


class MaskOps(torch.nn.Module):
    def forward(self, x, y, mask):
        return x.masked_fill(mask, -2.5) + torch.where(mask, x, y) * 2 + (x * mask) - (~mask) * y


def test_masked_fill_where_and_arithmetic_on_a_bool_input():
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(3, 10, generator=g), torch.randn(3, 10, generator=g)
    mask = bool_mask((3, 10), seed=6)
    for target in ("numpy", "cpu"):
        _, out = run(MaskOps(), (x, y, mask), target)
        np.testing.assert_allclose(out, MaskOps()(x, y, mask).numpy(), rtol=1e-6, atol=1e-6)


def test_a_bool_mask_input_on_cuda():  # the simulator in make test (tests/conftest.py)
    q, k, v = qkv(length=4, source=5, dim=4)
    mask = bool_mask((2, 1, 4, 5))
    compiled = wb.compile(Attention(), (q, k, v, mask), target="cuda")
    out = np.asarray(compiled(q, k, v, mask))
    np.testing.assert_allclose(out, Attention()(q, k, v, mask).numpy(), rtol=1e-5, atol=1e-5)
