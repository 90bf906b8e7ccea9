"""``fold_views`` on the ``cuda`` target (issue 20): the fused attention kernel (``warp_rows``,
keys staged in shared memory) reads Q, K and V where the projections wrote them and writes
its output transposed, so a transformer's ``slice``/``transpose``/``broadcast_to`` copies get
no kernel; grouped-query attention reads each key/value head through ``h // group``.

Under Numba's CUDA simulator against PyTorch on random inputs, at small sizes that are not
multiples of the warp (7 tokens, head dims 8 and 16, 3 and 6 heads over 2 key/value heads),
causal and not.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import workbench as wb  # noqa: E402
from workbench.backends.common.target import Target  # noqa: E402

pytestmark = pytest.mark.cuda

COPIES = ("transpose", "slice", "select", "broadcast_to")
"""Kernels that only move data between the projections and the attention."""


class Heads(torch.nn.Module):
    """GPT-2's attention on a given fused projection ``qkv``: split, heads transposed, sdpa,
    transposed back (only the attention kernel is left once the views fold)."""

    def __init__(self, heads: int, causal: bool):
        super().__init__()
        self.heads, self.causal = heads, causal

    def forward(self, qkv):
        B, T, C3 = qkv.shape
        C = C3 // 3
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in qkv.split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return y.transpose(1, 2).reshape(B, T, C)


class Block(torch.nn.Module):
    """A GPT-2 block: pre-norm, fused QKV projection, causal attention, MLP with GELU."""

    def __init__(self, width: int = 32, heads: int = 2):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.fc, self.out = torch.nn.Linear(width, 2 * width), torch.nn.Linear(2 * width, width)
        self.attn = Heads(heads, causal=True)

    def forward(self, x):
        x = x + self.proj(self.attn(self.qkv(self.ln1(x))))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GroupedQuery(torch.nn.Module):
    """Llama's attention on given projections: ``heads`` query heads over ``kv_heads``
    key/value heads (transformers' ``repeat_kv``: expand + reshape), causal."""

    def __init__(self, heads: int = 6, kv_heads: int = 2, dim: int = 8):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv_heads, dim

    def forward(self, q, k, v):
        B, T, _ = q.shape
        q = q.view(B, T, self.heads, self.d).transpose(1, 2)
        k, v = (t.view(B, T, self.kv, self.d).transpose(1, 2) for t in (k, v))
        group = self.heads // self.kv
        k, v = (t[:, :, None].expand(B, self.kv, group, T, self.d)
                .reshape(B, self.heads, T, self.d) for t in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, -1)


def _compile_and_check(model, inputs):
    compiled = wb.compile(model.eval(), inputs, target="cuda", progress=False, jobs=1)
    with torch.no_grad():
        want = model(*inputs).numpy()
    got = np.asarray(compiled(*[x.numpy() for x in inputs]))
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, np.max(np.abs(want)))
    return compiled


def _attention(compiled):
    kernels = [k for k in compiled.kernels if k.pattern.startswith("sdpa")]
    assert len(kernels) == 1
    return kernels[0]


def test_the_cuda_target_folds_views():
    assert Target("cuda").hook("graph_layout") is not None


@pytest.mark.parametrize("batch, seq, heads, dim, causal", [(2, 7, 2, 16, True),
                                                           (1, 5, 3, 8, False)])
def test_attention_reads_the_fused_projection_in_place(batch, seq, heads, dim, causal):
    torch.manual_seed(seq)
    qkv = torch.randn(batch, seq, 3 * heads * dim)
    compiled = _compile_and_check(Heads(heads, causal), (qkv,))
    assert [k.pattern for k in compiled.kernels] == ["sdpa"]
    kernel = _attention(compiled)
    assert kernel.inputs == ("qkv",) * 3  # Q, K, V: the projection's output, no copy
    assert kernel.shapes[-1] == (batch, seq, heads, dim)  # written transposed
    assert "K_shared" in kernel.source and len(kernel.kernel.launches) == 1


def test_a_gpt2_block_has_no_copy_kernels():
    torch.manual_seed(1)
    compiled = _compile_and_check(Block(), (torch.randn(1, 7, 32),))
    patterns = [k.pattern for k in compiled.kernels]
    assert not any(op in p.split("+") for p in patterns for op in COPIES), patterns
    assert "K_shared" in _attention(compiled).source
    # kept: norms, four matmuls with their epilogues, the attention: nothing in between
    unfolded = wb.compile(Block().eval(), (torch.randn(1, 7, 32),), target="cuda",
                          layout=False, progress=False, jobs=1)
    assert len(compiled.kernels) < len(unfolded.kernels)
    assert any(op in p.split("+") for p in (k.pattern for k in unfolded.kernels)
               for op in COPIES)


@pytest.mark.parametrize("seq", [7, 1])
def test_grouped_query_attention_is_one_kernel(seq):
    """6 query heads over 2 key/value heads: the kernel reads the key/value projections
    (``(B, T, 2, 8)``) at head ``h // 3``, no repeated copy; keys staged per block."""
    torch.manual_seed(seq)
    B, heads, kv, dim = 2, 6, 2, 8
    inputs = (torch.randn(B, seq, heads * dim), torch.randn(B, seq, kv * dim),
              torch.randn(B, seq, kv * dim))
    compiled = _compile_and_check(GroupedQuery(heads, kv, dim), inputs)
    assert [k.pattern for k in compiled.kernels] == ["sdpa"]
    kernel = _attention(compiled)
    assert kernel.shapes[1] == kernel.shapes[2] == (B, seq, kv, dim)
    assert "// 3" in kernel.func.script()  # the key/value head of query head h
    assert len(kernel.kernel.launches) == 1  # warp_rows: scores and softmax on chip
    assert ("K_shared" in kernel.source) == (seq > 1)  # one key: nothing to stage


@pytest.mark.parametrize("causal", [True, False])
def test_warp_rows_takes_a_single_key(rng, causal):
    """A decoding step (one query, one key per head) is still the fused kernel."""
    from workbench import ops, recipes
    from workbench.backends import build
    from workbench.ops.reference import attention

    func = ops.attention(2, 3, 1, 8, causal=causal)
    kernel = build(recipes.get("attention", "warp_rows", "cuda")(func), target="cuda")
    q, k, v = (rng.standard_normal(p.shape).astype(np.float32) for p in func.params[:3])
    out = np.full(func.params[-1].shape, np.nan, np.float32)
    kernel(q, k, v, out)
    np.testing.assert_allclose(out, attention(q, k, v), rtol=1e-5, atol=1e-6)  # 1 key: causal or not
    assert len(kernel.launches) == 1
