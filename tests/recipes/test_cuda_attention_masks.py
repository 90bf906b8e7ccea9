"""Masks in the fused CUDA attention (issue 20): ``ops.attention(mask=...)`` under the
``warp_rows`` recipe (the graph's default on cuda) and an ``sdpa`` graph node with a mask
input compiled for cuda, under the simulator against PyTorch's
``scaled_dot_product_attention`` on random inputs: boolean masks (``-inf`` where false),
additive masks (added before the row max), with and without ``causal``, broadcast masks
(BERT's padding mask is ``(batch, 1, 1, kv_seq)``), sequences off the warp's 32 lanes."""

import numpy as np
import pytest

import workbench as wb
from workbench import ops, recipes
from workbench.backends import build
from workbench.graph import GraphBuilder, TensorType

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.cuda


def _mask(rng, shape, kind):
    if kind == "additive":
        return rng.standard_normal(shape).astype(np.float32)
    keep = (rng.random(shape) < 0.6).astype(np.float32)
    keep[..., 0] = 1.0  # no row fully masked (PyTorch gives NaN there, as the kernel does)
    return keep


def _torch_sdpa(q, k, v, mask, kind, causal):
    q, k, v = (torch.from_numpy(a).double() for a in (q, k, v))
    m = torch.from_numpy(mask)
    m = m != 0 if kind == "bool" else m.double()
    if causal:
        tril = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        m = m & tril if kind == "bool" else m.masked_fill(~tril, float("-inf"))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m).numpy()


@pytest.mark.parametrize(("B", "H", "L", "S", "D", "mask_shape", "kind", "causal"), [
    (2, 2, 7, 7, 4, (2, 1, 1, 7), "bool", False),     # a padding mask, 7 keys
    (1, 2, 5, 9, 4, (1, 2, 5, 9), "additive", False),  # a full additive mask, kv_seq != seq
    (1, 2, 7, 7, 4, (1, 1, 7, 7), "additive", True),   # both: causal and additive
    (1, 1, 6, 6, 2, (1, 1, 1, 6), "bool", True),       # causal and a boolean padding mask
])
def test_warp_rows_applies_the_mask(rng, B, H, L, S, D, mask_shape, kind, causal):
    func = ops.attention(B, H, L, D, kv_seq=S, causal=causal, mask=kind, mask_shape=mask_shape)
    assert [p.name for p in func.params] == ["Q", "K", "V", "mask", "out"]
    kernel = build(recipes.get("attention", "warp_rows", "cuda")(func), target="cuda")
    q, k, v = (rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:3])
    mask = _mask(rng, mask_shape, kind)
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel(q, k, v, mask, out)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask, kind, causal), rtol=1e-4,
                               atol=1e-5)
    assert "K_shared" in kernel.source and len(kernel.launches) == 1  # fused, keys staged


def test_a_long_row_off_the_tile(rng):
    """100 keys and queries (4 lanes' worth of keys, 100 = 12 tiles of 8 rows + 4)."""
    func = ops.attention(1, 1, 100, 4, mask="additive", mask_shape=(1, 1, 1, 100))
    kernel = build(recipes.get("attention", "warp_rows", "cuda")(func), target="cuda")
    q, k, v = (rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:3])
    mask = _mask(rng, (1, 1, 1, 100), "additive")
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel(q, k, v, mask, out)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask, "additive", False), rtol=1e-4,
                               atol=1e-5)


def test_bad_masks_are_refused_before_any_work():
    with pytest.raises(ValueError, match="mask must be one of"):
        ops.attention(1, 1, 4, 2, mask="float")
    with pytest.raises(ValueError, match=r"mask_shape \(1, 1, 3, 4\) does not broadcast"):
        ops.attention(1, 1, 4, 2, mask="bool", mask_shape=(1, 1, 3, 4))
    with pytest.raises(ValueError, match="an additive mask must be floating"):
        ops.attention(1, 1, 4, 2, mask="additive", mask_dtype="bool")


@pytest.mark.parametrize(("q_shape", "S", "mask_shape", "kind", "causal"), [
    ((1, 2, 7, 4), 7, (1, 1, 1, 7), "bool", False),
    ((1, 2, 7, 4), 7, (1, 1, 7, 7), "bool array", False),  # a torch.bool / numpy bool input
    ((2, 2, 5, 4), 7, (2, 1, 5, 7), "additive", True),
    ((2, 5, 4), 5, (5, 5), "additive", False),  # 3-D: the heads and batch as one axis
])
def test_masked_sdpa_node_compiles_to_the_fused_kernel(rng, q_shape, S, mask_shape, kind,
                                                        causal):
    b = GraphBuilder()
    kv_shape = q_shape[:-2] + (S, q_shape[-1])
    boolean = kind == "bool array"
    kind = "bool" if boolean else kind
    names = [b.input(n, TensorType(s, "bool" if n == "mask" and boolean else "float32"))
             for n, s in (("q", q_shape), ("k", kv_shape), ("v", kv_shape),
                          ("mask", mask_shape))]
    out = b.node("sdpa", names, {"scale": None, "causal": causal, "mask_kind": kind})
    graph = b.finish([out])
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in (q_shape, kv_shape, kv_shape))
    mask = _mask(rng, mask_shape, kind)
    mask = mask != 0 if boolean else mask
    compiled = wb.compile(graph, target="cuda")
    [kernel] = compiled.kernels
    assert "K_shared" in kernel.schedule.mod.script()  # warp_rows, not the fallback
    got = compiled(q, k, v, mask)
    np.testing.assert_allclose(got, _torch_sdpa(q, k, v, mask, kind, causal), rtol=1e-4,
                               atol=1e-5)


def test_grouped_query_attention_on_cuda_matches_torch():
    """``enable_gqa`` (4 query heads over 2 key/value heads), causal, 7 tokens: the
    frontend repeats the key/value heads (decomposed attention, not yet the fused kernel)."""

    class GQA(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    enable_gqa=True)

    torch.manual_seed(0)
    inputs = (torch.randn(1, 4, 7, 8), torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8))
    compiled = wb.compile(GQA(), inputs, target="cuda")
    got = compiled(*[x.numpy() for x in inputs])
    np.testing.assert_allclose(got, GQA()(*inputs).numpy(), rtol=1e-4, atol=1e-5)
