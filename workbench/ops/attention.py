"""Scaled dot-product attention, ``softmax(Q K^T * scale) V``, as five blocks."""

from __future__ import annotations

import math

from workbench import T
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc


def attention(batch: int = 1, heads: int = 2, seq: int = 16, dim: int = 8,
              scale: float | None = None, dtype: str = "float32", *,
              kv_seq: int | None = None, value_dim: int | None = None,
              causal: bool = False) -> PrimFunc:
    """Attention of ``Q (batch, heads, seq, dim)`` over ``K (batch, heads, kv_seq, dim)`` and
    ``V (batch, heads, kv_seq, value_dim)``; the output is ``(batch, heads, seq, value_dim)``.

    Blocks: ``scores`` (``Q K^T``, a reduction over ``dim``), the row softmax of
    ``scores * scale`` in TVM's three blocks (``T_softmax_maxelem``, ``T_softmax_expsum``,
    ``T_softmax_norm``) and ``attention`` (``probs @ V``, a reduction over ``kv_seq``).
    ``scale`` defaults to ``1 / sqrt(dim)``; ``kv_seq`` and ``value_dim`` default to ``seq``
    and ``dim``. ``causal`` masks key ``j`` from query ``i`` when ``j > i`` (PyTorch's
    ``is_causal``: the top-left aligned lower triangle); without it the mask test
    ``j <= i + kv_seq`` always holds and ``simplify_stmt`` removes it.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(attention(1, 1, 4, 2))]   # doctest: +NORMALIZE_WHITESPACE
    ['scores', 'T_softmax_maxelem', 'T_softmax_expsum', 'T_softmax_norm', 'attention']
    >>> attention(1, 2, 4, 8, kv_seq=6, value_dim=3).params[-1].shape
    (1, 2, 4, 3)
    """
    scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    neg_inf = float("-inf")
    B, H, L, D = batch, heads, seq, dim
    S = seq if kv_seq is None else kv_seq
    E = dim if value_dim is None else value_dim
    shift = 0 if causal else S  # key j is seen by query i when j <= i + shift

    @T.prim_func
    def attention(Q: T.Buffer((B, H, L, D), dtype), K: T.Buffer((B, H, S, D), dtype),
                  V: T.Buffer((B, H, S, E), dtype), out: T.Buffer((B, H, L, E), dtype)):
        scores = T.alloc_buffer((B, H, L, S), dtype)
        T_softmax_maxelem = T.alloc_buffer((B, H, L), dtype)
        T_softmax_expsum = T.alloc_buffer((B, H, L), dtype)
        T_softmax_norm = T.alloc_buffer((B, H, L, S), dtype)
        for b, h, i, j, d in T.grid(B, H, L, S, D):
            with T.block("scores"):
                vb, vh, vi, vj, vd = T.axis.remap("SSSSR", [b, h, i, j, d])
                with T.init():
                    scores[vb, vh, vi, vj] = 0.0
                scores[vb, vh, vi, vj] = scores[vb, vh, vi, vj] + Q[vb, vh, vi, vd] * K[
                    vb, vh, vj, vd]
        for b1, h1, i1, k1 in T.grid(B, H, L, S):
            with T.block("T_softmax_maxelem"):
                vb1, vh1, vi1, vk1 = T.axis.remap("SSSR", [b1, h1, i1, k1])
                with T.init():
                    T_softmax_maxelem[vb1, vh1, vi1] = neg_inf
                T_softmax_maxelem[vb1, vh1, vi1] = T.max(
                    T_softmax_maxelem[vb1, vh1, vi1],
                    T.if_then_else(vk1 <= vi1 + shift, scores[vb1, vh1, vi1, vk1] * scale,
                                   neg_inf))
        for b2, h2, i2, k2 in T.grid(B, H, L, S):
            with T.block("T_softmax_expsum"):
                vb2, vh2, vi2, vk2 = T.axis.remap("SSSR", [b2, h2, i2, k2])
                with T.init():
                    T_softmax_expsum[vb2, vh2, vi2] = 0.0
                T_softmax_expsum[vb2, vh2, vi2] = T_softmax_expsum[vb2, vh2, vi2] + T.exp(
                    T.if_then_else(vk2 <= vi2 + shift, scores[vb2, vh2, vi2, vk2] * scale,
                                   neg_inf) - T_softmax_maxelem[vb2, vh2, vi2])
        for b3, h3, i3, j3 in T.grid(B, H, L, S):
            with T.block("T_softmax_norm"):
                vb3, vh3, vi3, vj3 = T.axis.remap("SSSS", [b3, h3, i3, j3])
                T_softmax_norm[vb3, vh3, vi3, vj3] = T.exp(
                    T.if_then_else(vj3 <= vi3 + shift, scores[vb3, vh3, vi3, vj3] * scale,
                                   neg_inf) - T_softmax_maxelem[vb3, vh3, vi3]
                ) / T_softmax_expsum[vb3, vh3, vi3]
        for b4, h4, i4, d4, k4 in T.grid(B, H, L, E, S):
            with T.block("attention"):
                vb4, vh4, vi4, vd4, vk4 = T.axis.remap("SSSSR", [b4, h4, i4, d4, k4])
                with T.init():
                    out[vb4, vh4, vi4, vd4] = 0.0
                out[vb4, vh4, vi4, vd4] = out[vb4, vh4, vi4, vd4] + T_softmax_norm[
                    vb4, vh4, vi4, vk4] * V[vb4, vh4, vk4, vd4]

    return simplify_stmt(attention)
