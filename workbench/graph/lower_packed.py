"""Library heads of the packed conv operators (``workbench.graph.ops_packed``): the graph's
``conv2d_packed`` is ``ops.conv2d_nchw_packed``, ``depthwise_conv2d_packed`` is
``ops.depthwise_conv2d_nchw_packed``, ``conv2d_1x1`` is ``ops.conv_rows.conv2d_1x1_nchw``,
``matmul_packed`` is ``ops.matmul_packed.matmul_packed`` (merged into
``lower_ops.LIBRARY_HEADS``)."""

from __future__ import annotations

import math

from workbench.graph.ir import Node
from workbench.graph.lower_ops import Context, Head, _bias_stage, _pairs, identity
from workbench.ir.expr import IntImm
from workbench.ops.conv_packed import conv2d_nchw_packed, depthwise_conv2d_nchw_packed
from workbench.ops.conv_rows import conv2d_1x1_nchw
from workbench.ops.matmul_packed import matmul_packed


def _conv2d_packed(node: Node, ctx: Context) -> Head:
    x, w = node.inputs[:2]
    (N, C, H, W), (KB, _, R, S, kb) = ctx.shape(x), ctx.shape(w)
    stride, padding, dilation = _pairs(node.attrs, "stride", "padding", "dilation")
    func = conv2d_nchw_packed(N, C, H, W, KB * kb, R, S, kb, stride, padding, dilation)
    return Head(func, [x, w], identity(4), _bias_stage(node, 1))


def _depthwise_packed(node: Node, ctx: Context) -> Head:
    x, w = node.inputs[:2]
    (N, C, H, W), (_, R, S, kb) = ctx.shape(x), ctx.shape(w)
    stride, padding, dilation = _pairs(node.attrs, "stride", "padding", "dilation")
    func = depthwise_conv2d_nchw_packed(N, C, H, W, R, S, kb, stride, padding, dilation)
    return Head(func, [x, w], identity(4), _bias_stage(node, 1))


def _conv2d_1x1(node: Node, ctx: Context) -> Head:
    """The 1x1 conv on the image's rows: data viewed ``(N, C, H * W)``, the output grouped
    ``(n), (k), (y, x)``; a scaled one reads ``scale`` viewed ``(N, C)``."""
    scaled = bool(node.attrs.get("scaled"))
    x, w = node.inputs[0], node.inputs[2 if scaled else 1]
    (N, C, H, W), (K, _) = ctx.shape(x), ctx.shape(w)
    func = conv2d_1x1_nchw(N, C, H * W, K, scaled=scaled)
    inputs = [x, node.inputs[1], w] if scaled else [x, w]
    bias = node.replace(inputs=(x, w) + node.inputs[3:]) if scaled else node
    return Head(func, inputs, ((0,), (1,), (2, 3)), _bias_stage(bias, 1))


def _matmul_packed(node: Node, ctx: Context) -> Head:
    """The activation's leading axes as rows (as ``matmul``'s head), the weight in panels."""
    a, w = node.inputs
    (NB, K, tj), rows = ctx.shape(w), ctx.shape(a)[:-1]
    n = len(node.type.shape)
    func = matmul_packed(math.prod(rows), NB * tj, K, tj)
    return Head(func, [a, w], (tuple(range(n - 1)), (n - 1,)))


def _pack_columns(fb, node, ins, out):
    """The panel copy (``pack_matmul`` folds it at compile time; this kernel runs only for a
    weight that is not a constant)."""
    (w,), tj = ins, node.attrs["tj"]
    fb.spatial("T_pack", out, lambda vs: w[[vs[1], vs[0] * tj + vs[2]]])


def _pack_weights(fb, node, ins, out):
    """The packing copy (``pack_conv_weights`` folds it at compile time; this kernel runs
    only for a weight that is not a constant)."""
    (w,), kb = ins, node.attrs["kb"]
    if node.attrs.get("depthwise"):
        fb.spatial("T_pack", out, lambda vs: w[[vs[0] * kb + vs[3], IntImm(0), vs[1], vs[2]]])
    else:
        fb.spatial("T_pack", out, lambda vs: w[[vs[0] * kb + vs[4], vs[1], vs[2], vs[3]]])


PACKED_HEADS = {"conv2d_packed": _conv2d_packed, "depthwise_conv2d_packed": _depthwise_packed,
                "conv2d_1x1": _conv2d_1x1, "matmul_packed": _matmul_packed}
"""op -> library head (merged into ``lower_ops.LIBRARY_HEADS``)."""
PACKED_COMPOSED_HEADS = {"pack_weights": _pack_weights, "pack_columns": _pack_columns}
"""op -> ``FuncBuilder`` kernel (merged into ``lower_ops.COMPOSED_HEADS``)."""

__all__ = ["PACKED_COMPOSED_HEADS", "PACKED_HEADS"]
