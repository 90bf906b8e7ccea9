"""Scaled dot-product attention, ``softmax(Q K^T * scale) V``, as five blocks."""

from __future__ import annotations

import math

from workbench import T
from workbench.ir import (
    NE,
    Block,
    Buffer,
    BufferLoad,
    BufferRegion,
    FloatImm,
    IntImm,
    IRMapper,
    Mul,
    Range,
    Select,
)
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc

MASKS = ("bool", "additive")
"""The kinds of ``attention``'s ``mask``: PyTorch's boolean ``attn_mask`` (keep where true)
and its floating one (added to the scaled scores)."""

SOFTMAX_BLOCKS = ("T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm")


def attention(batch: int = 1, heads: int = 2, seq: int = 16, dim: int = 8,
              scale: float | None = None, dtype: str = "float32", *,
              kv_seq: int | None = None, value_dim: int | None = None,
              causal: bool = False, mask: str | None = None,
              mask_shape: tuple[int, ...] | None = None,
              mask_dtype: str | None = None) -> PrimFunc:
    """Attention of ``Q (batch, heads, seq, dim)`` over ``K (batch, heads, kv_seq, dim)`` and
    ``V (batch, heads, kv_seq, value_dim)``; the output is ``(batch, heads, seq, value_dim)``.

    Blocks: ``scores`` (``Q K^T``, a reduction over ``dim``), the row softmax of
    ``scores * scale`` in TVM's three blocks (``T_softmax_maxelem``, ``T_softmax_expsum``,
    ``T_softmax_norm``) and ``attention`` (``probs @ V``, a reduction over ``kv_seq``).
    ``scale`` defaults to ``1 / sqrt(dim)``; ``kv_seq`` and ``value_dim`` default to ``seq``
    and ``dim``. ``causal`` masks key ``j`` from query ``i`` when ``j > i`` (PyTorch's
    ``is_causal``: the top-left aligned lower triangle); without it the mask test
    ``j <= i + kv_seq`` always holds and ``simplify_stmt`` removes it.

    ``mask`` (one of ``MASKS``) adds a parameter ``mask`` before ``out``, of
    ``mask_shape`` (default ``(batch, heads, seq, kv_seq)``; each axis 1, broadcast, or
    full): ``"bool"`` keeps score ``(b, h, i, j)`` where the mask is not 0 (``-inf``
    elsewhere: the graph's booleans are 0/1 floats), ``"additive"`` adds it to the scaled
    score, before the row max. Both apply in the three softmax blocks, where the scaled
    score is read (with ``causal`` too: both masks apply). ``mask_dtype`` defaults to
    ``dtype``; a ``"bool"`` mask may be a ``bool`` array (``mask_dtype="bool"``).

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(attention(1, 1, 4, 2))]   # doctest: +NORMALIZE_WHITESPACE
    ['scores', 'T_softmax_maxelem', 'T_softmax_expsum', 'T_softmax_norm', 'attention']
    >>> attention(1, 2, 4, 8, kv_seq=6, value_dim=3).params[-1].shape
    (1, 2, 4, 3)
    >>> [p.shape for p in attention(2, 2, 4, 8, mask="bool", mask_shape=(2, 1, 1, 4)).params]
    [(2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8), (2, 1, 1, 4), (2, 2, 4, 8)]
    """
    if mask is not None and mask not in MASKS:
        raise ValueError(f"attention: mask must be one of {MASKS} or None, got {mask!r}")
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

    func = simplify_stmt(attention)
    if mask is None:
        return func
    full = (B, H, L, S)
    shape = full if mask_shape is None else tuple(int(n) for n in mask_shape)
    if len(shape) != 4 or any(n not in (1, f) for n, f in zip(shape, full, strict=True)):
        raise ValueError(f"attention: mask_shape {shape} does not broadcast to (batch, heads, "
                         f"seq, kv_seq) = {full} axis by axis (each axis 1 or full)")
    mask_dtype = dtype if mask_dtype is None else mask_dtype
    if mask_dtype == "bool" and mask != "bool":
        raise ValueError("attention: an additive mask must be floating, got mask_dtype 'bool'")
    return _with_mask(func, Buffer("mask", shape, mask_dtype), mask == "bool")


class _Mask(IRMapper):
    """The scaled score ``scores[b, h, i, j] * scale`` of a softmax block, masked."""

    def __init__(self, buf: Buffer, keep: bool):
        self.buf, self.keep, self.regions = buf, keep, []

    def visit_Mul(self, node: Mul):
        load = node.a
        if not (isinstance(load, BufferLoad) and load.buffer.name == "scores"):
            return self.generic_visit(node)
        indices = tuple(IntImm(0) if n == 1 else v
                        for n, v in zip(self.buf.shape, load.indices, strict=True))
        value = BufferLoad(self.buf, indices)
        region = BufferRegion(self.buf, tuple(Range(i, IntImm(1)) for i in indices))
        if region not in self.regions:
            self.regions.append(region)
        if self.keep:
            keep = value if self.buf.dtype == "bool" else NE(value, FloatImm(0.0, self.buf.dtype))
            return Select(keep, node, FloatImm(float("-inf"), node.dtype))
        return node + value


class _MaskBlocks(IRMapper):
    def __init__(self, buf: Buffer, keep: bool):
        self.buf, self.keep = buf, keep

    def visit_Block(self, node: Block):
        node = self.generic_visit(node)
        if node.name not in SOFTMAX_BLOCKS:
            return node
        mask = _Mask(self.buf, self.keep)
        body = mask.visit(node.body)
        return node.replace(body=body, reads=tuple(node.reads) + tuple(mask.regions))


def _with_mask(func: PrimFunc, buf: Buffer, keep: bool) -> PrimFunc:
    """``func`` with the parameter ``buf`` before ``out`` applied to the scaled scores
    (``keep``: a boolean mask, else an additive one)."""
    body = _MaskBlocks(buf, keep).visit(func.body)
    params = tuple(func.params[:-1]) + (buf, func.params[-1])
    return func.replace(params=params, body=body)
