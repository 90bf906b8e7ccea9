"""The ("attention", "rows") recipe: one query row at a time, and ("attention",
"row_blocks"): four rows per register tile; checked against the numpy reference (plain,
cross, causal and masked attention) and against torch through wb.compile."""

from __future__ import annotations

import math

import numpy as np
import pytest

import workbench as wb
from workbench import ops, recipes
from workbench.ir import ForKind
from workbench.ir.functor import collect
from workbench.ir.stmt import For


def _reference(q, k, v, causal):
    scores = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        L, S = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((L, S), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("seq, kv_seq, dim, value_dim, causal", [
    (8, 8, 4, 4, False), (6, 9, 4, 5, False), (7, 7, 8, 8, True)])
def test_rows_recipe_computes_attention(seq, kv_seq, dim, value_dim, causal, rng):
    func = ops.attention(2, 3, seq, dim, kv_seq=kv_seq, value_dim=value_dim, causal=causal)
    sch = recipes.get("attention", "rows", "cpu")(func)
    q, k, v = (rng.standard_normal(b.shape).astype("float32") for b in func.params[:3])
    out = np.empty(func.params[-1].shape, "float32")
    wb.build(sch, target="cpu")(q, k, v, out)
    np.testing.assert_allclose(out, _reference(q, k, v, causal), rtol=1e-4, atol=1e-5)


def test_rows_recipe_keeps_rows_local_and_runs_heads_in_parallel():
    sch = recipes.get("attention", "rows", "cpu")(ops.attention(1, 2, 8, 4))
    loops = collect(sch.mod, lambda n: isinstance(n, For))
    assert loops[0].kind is ForKind.PARALLEL and loops[0].extent.value == 2  # b * h
    scopes = {b.name: b.scope for b in sch.mod.root_block.alloc_buffers}
    assert scopes == {"scores": "local", "T_softmax_maxelem": "local",
                      "T_softmax_expsum": "local", "T_softmax_norm": "local",
                      "out_local": "local",  # the output row accumulates in registers
                      "K_global": "local"}  # the keys of one head, transposed, private
    keys = next(b for b in sch.mod.root_block.alloc_buffers if b.name == "K_global")
    assert keys.shape == (1, 2, 4, 8)  # (b, h, dim, kv_seq)


def test_compiled_sdpa_uses_the_recipe_and_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn import functional as F

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2.0

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 4) for _ in range(3))
    compiled = wb.compile(Attention(), (q, k, v))
    kernel = next(k for k in compiled.kernels if k.pattern == "sdpa")
    assert "compute_at" in str(compiled.schedule(kernel.node).trace)
    want = Attention()(q, k, v).numpy()
    np.testing.assert_allclose(compiled(q, k, v), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch, heads, seq, kv_seq, dim, value_dim, causal", [
    (1, 3, 8, 64, 48, 48, False), (3, 2, 12, 64, 4, 5, True), (1, 1, 64, 128, 16, 7, True)])
def test_row_blocks_recipe_computes_attention(batch, heads, seq, kv_seq, dim, value_dim,
                                              causal, rng):
    func = ops.attention(batch, heads, seq, dim, kv_seq=kv_seq, value_dim=value_dim,
                         causal=causal)
    sch = recipes.get("attention", "row_blocks", "cpu")(func)
    q, k, v = (rng.standard_normal(b.shape).astype("float32") for b in func.params[:3])
    out = np.empty(func.params[-1].shape, "float32")
    wb.build(sch, target="cpu")(q, k, v, out)
    np.testing.assert_allclose(out, _reference(q, k, v, causal), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_row_blocks_recipe_applies_masks(kind, rng):
    func = ops.attention(2, 2, 8, 8, kv_seq=64, mask=kind, mask_shape=(2, 1, 8, 64))
    sch = recipes.get("attention", "row_blocks", "cpu")(func)
    arrays = [rng.standard_normal(b.shape).astype("float32") for b in func.params]
    keep = rng.random(arrays[3].shape) < 0.7
    keep[..., 0] = True  # every row keeps a key
    arrays[3] = keep.astype("float32") if kind == "bool" else \
        np.where(keep, arrays[3], -1e4).astype("float32")
    want = [a.copy() for a in arrays]
    wb.build(func, target="numpy")(*want)
    wb.build(sch, target="cpu")(*arrays)
    np.testing.assert_allclose(arrays[-1], want[-1], rtol=1e-4, atol=1e-5)


def test_row_blocks_refuses_sizes_it_does_not_tile():
    with pytest.raises(ValueError, match="multiple of rows 4"):
        recipes.get("attention", "row_blocks", "cpu")(ops.attention(1, 2, 7, 4, kv_seq=64))
    with pytest.raises(ValueError, match="tile 64"):
        recipes.get("attention", "row_blocks", "cpu")(ops.attention(1, 2, 8, 4, kv_seq=40))


def test_compiled_sdpa_takes_row_blocks_where_they_tile_and_rows_elsewhere():
    from workbench.recipes.graph_cpu_ops import attention_rows

    tiled = attention_rows(ops.attention(1, 2, 64, 8, causal=True))
    assert "unroll" in str(tiled.trace)  # the rows x tile register tile
    plain = attention_rows(ops.attention(1, 2, 7, 8, causal=True))
    assert "unroll" not in str(plain.trace) and "compute_at" in str(plain.trace)
