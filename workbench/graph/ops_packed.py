"""Graph operators of the CPU's packed conv layout (``workbench.graph.passes.layout``'s
``pack_conv_weights``), with numpy semantics like ``workbench.graph.ops``:

- ``pack_weights`` (``layout``): KCRS weights as ``(K // kb, C, R, S, kb)``, or a depthwise
  ``(C, 1, R, S)`` as ``(C // kb, R, S, kb)`` (``depthwise=True``); constant-folded at
  compile time, so the packed weight is a graph constant;
- ``conv2d_packed`` and ``depthwise_conv2d_packed`` (``anchor``): ``conv2d`` (groups 1) and
  the depthwise ``conv2d`` on packed weights (NCHW data and output, optional bias);
- ``conv2d_1x1`` (``anchor``): a 1x1 ``conv2d`` (stride 1, no padding) on ``(K, C)``
  weights, NCHW data and output, optional bias; with ``scaled=True`` its inputs are
  ``(x, scale, w[, b])`` and it convolves ``x * scale`` (``scale`` of shape ``(N, C, 1, 1)``:
  a squeeze-excitation product folded into the conv's input read);
- ``pack_columns`` (``layout``): a ``(K, N)`` matmul weight as ``(N // tj, K, tj)`` column
  panels (``graph.passes.pack_matmul``; constant-folded at compile time);
- ``matmul_packed`` (``anchor``): ``matmul`` by a weight in those panels (any leading axes
  of the activation, as ``matmul``'s).
"""

from __future__ import annotations

import numpy as np

from workbench.ops.conv_packed import pack_depthwise, pack_kcrs, unpack_kcrs
from workbench.ops.matmul_packed import pack_columns as _pack_columns
from workbench.ops.matmul_packed import unpack_columns


def pack_weights(w, kb: int = 16, depthwise: bool = False):
    return pack_depthwise(w, kb) if depthwise else pack_kcrs(w, kb)


def conv2d_packed(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    from workbench.graph.ops import conv2d

    return conv2d(x, unpack_kcrs(np.asarray(w)), b, stride, padding, dilation)


def depthwise_conv2d_packed(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    from workbench.graph.ops import conv2d

    weight = unpack_kcrs(np.asarray(w))
    return conv2d(x, weight, b, stride, padding, dilation, groups=weight.shape[0])


def conv2d_1x1(x, *args, scaled: bool = False):
    from workbench.graph.ops import conv2d

    if scaled:
        x, args = x * args[0], args[1:]
    w, b = np.asarray(args[0]), (args[1] if len(args) > 1 else None)
    return conv2d(x, w.reshape(w.shape + (1, 1)), b)


def pack_columns(w, tj: int = 48):
    return _pack_columns(np.asarray(w), tj)


def matmul_packed(a, w):
    return np.matmul(a, unpack_columns(np.asarray(w)))


PACKED_OPS = {
    "pack_weights": (pack_weights, "layout"),
    "conv2d_packed": (conv2d_packed, "anchor"),
    "depthwise_conv2d_packed": (depthwise_conv2d_packed, "anchor"),
    "conv2d_1x1": (conv2d_1x1, "anchor"),
    "pack_columns": (pack_columns, "layout"),
    "matmul_packed": (matmul_packed, "anchor"),
}
"""op name -> (numpy function, kind), merged into ``workbench.graph.ops.OPS``."""

__all__ = ["PACKED_OPS", "conv2d_1x1", "conv2d_packed", "depthwise_conv2d_packed",
           "matmul_packed", "pack_columns", "pack_weights"]
