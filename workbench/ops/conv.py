"""Convolutions: conv2d in NCHW and NHWC layouts, depthwise conv2d (NCHW).

Padding is a separate block, ``"pad_temp"``, that copies the input into a zero-bordered
intermediate (as TVM's topi does), so the convolution block itself never tests bounds; it is
written once (``pad_stage``, also the poolings') and chained before the convolution block.
Stride and dilation appear in the convolution's index expressions; stride, padding and
dilation are an int (both axes) or a (height, width) pair. The factories run
``simplify_stmt`` on the result, so stride 1 / dilation 1 / padding 0 leave no ``* 1``,
``- 0`` or always-true bound tests behind.
"""

from __future__ import annotations

from workbench import T
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc
from workbench.ops.compose import chain

Pair = int | tuple[int, int]
"""An option given once for both spatial axes, or as (height, width)."""

IM2COL_DIMS = "im2col_dims"
"""The block annotation of the graph's ``im2col`` kernel (block ``T_im2col``, lowered by
``graph.lower_im2col``): ``(C, R, S, N, P, Q)``, its rows ``C * R * S`` and columns
``N * P * Q`` taken apart (``recipes.graph_cuda_ops.im2col_planes`` splits the loops by them,
so the index math simplifies to the loop variables)."""


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int = 0,
                     dilation: int = 1) -> int:
    """Output extent of a convolution or pooling window along one axis.

    Example
    -------
    >>> conv_output_size(8, 3, stride=1, padding=1), conv_output_size(8, 3, stride=2)
    (8, 3)
    """
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    if out <= 0:
        raise ValueError(f"a window of {kernel} (dilation {dilation}) does not fit an input of "
                         f"{size} with padding {padding}")
    return out


def pair(value: int | tuple[int, int]) -> tuple[int, int]:
    """``(value, value)`` for an int, the pair itself for a pair (height, width).

    Example
    -------
    >>> pair(3), pair((2, 1))
    ((3, 3), (2, 1))
    """
    if isinstance(value, int):
        return value, value
    first, second = value
    return int(first), int(second)


def window_sizes(H: int, W: int, kernel: tuple[int, int], stride: tuple[int, int],
                 padding: tuple[int, int], dilation: tuple[int, int] = (1, 1)):
    """``(P, Q, HP, WP)``: the output extents of a window sliding over an ``H x W`` input
    and the extents of the padded input (every pair is (height, width)).

    Example
    -------
    >>> window_sizes(8, 8, (3, 3), (2, 2), (1, 1))
    (4, 4, 10, 10)
    """
    P = conv_output_size(H, kernel[0], stride[0], padding[0], dilation[0])
    Q = conv_output_size(W, kernel[1], stride[1], padding[1], dilation[1])
    return P, Q, H + 2 * padding[0], W + 2 * padding[1]


def _check_conv(stride, padding, dilation) -> tuple[tuple[int, int], ...]:
    """The (height, width) pairs of ``stride``, ``padding``, ``dilation``, checked."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    if min(sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ValueError(f"conv2d needs stride >= 1, dilation >= 1 and padding >= 0; got "
                         f"stride={stride}, padding={padding}, dilation={dilation}")
    return (sh, sw), (ph, pw), (dh, dw)


def pad_stage(shape: tuple[int, ...], pads: tuple[int, ...], fill: float,
              dtype: str) -> PrimFunc:
    """The ``"pad_temp"`` block alone: a 4-D ``data`` copied into ``pad_temp``, larger by
    ``pads[d]`` on both sides of dimension ``d``, the border ``fill``. The convolutions and
    poolings ``chain`` it before their own block (and simplify: a dimension without padding
    leaves no test behind).

    Example
    -------
    >>> [b.shape for b in pad_stage((1, 3, 8, 8), (0, 0, 1, 2), 0.0, "float32").params]
    [(1, 3, 8, 8), (1, 3, 10, 12)]
    """
    D0, D1, D2, D3 = shape
    p0, p1, p2, p3 = pads
    P0, P1, P2, P3 = (d + 2 * p for d, p in zip(shape, pads, strict=True))

    @T.prim_func
    def pad(data: T.Buffer((D0, D1, D2, D3), dtype),
            pad_temp: T.Buffer((P0, P1, P2, P3), dtype)):
        for i0, i1, i2, i3 in T.grid(P0, P1, P2, P3):
            with T.block("pad_temp"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                pad_temp[v0, v1, v2, v3] = T.if_then_else(
                    p0 <= v0 and v0 < D0 + p0 and p1 <= v1 and v1 < D1 + p1
                    and p2 <= v2 and v2 < D2 + p2 and p3 <= v3 and v3 < D3 + p3,
                    data[v0 - p0, v1 - p1, v2 - p2, v3 - p3], fill)

    return pad


def conv2d_nchw(N: int = 1, C: int = 4, H: int = 8, W: int = 8, K: int = 4, R: int = 3,
                S: int = 3, stride: Pair = 1, padding: Pair = 1, dilation: Pair = 1,
                dtype: str = "float32") -> PrimFunc:
    """2-D convolution, NCHW data and KCRS (OIHW) weights; blocks ``pad_temp``, ``conv2d_nchw``.

    ``conv[n, k, y, x] = sum_{c, ry, rx} pad[n, c, y*stride + ry*dilation,
    x*stride + rx*dilation] * weight[k, c, ry, rx]``.

    Example
    -------
    >>> f = conv2d_nchw(1, 3, 8, 8, 4, 3, 3, stride=2, padding=1)
    >>> f.params[-1].shape
    (1, 4, 4, 4)
    """
    (sh, sw), (ph, pw), (dh, dw) = _check_conv(stride, padding, dilation)
    P, Q, HP, WP = window_sizes(H, W, (R, S), (sh, sw), (ph, pw), (dh, dw))

    @T.prim_func
    def conv2d_nchw(pad_temp: T.Buffer((N, C, HP, WP), dtype),
                    weight: T.Buffer((K, C, R, S), dtype), conv: T.Buffer((N, K, P, Q), dtype)):
        for n, k, y, x, rc, ry, rx in T.grid(N, K, P, Q, C, R, S):
            with T.block("conv2d_nchw"):
                vn, vk, vy, vx, vrc, vry, vrx = T.axis.remap("SSSSRRR", [n, k, y, x, rc, ry, rx])
                with T.init():
                    conv[vn, vk, vy, vx] = 0.0
                conv[vn, vk, vy, vx] = conv[vn, vk, vy, vx] + pad_temp[
                    vn, vrc, vy * sh + vry * dh, vx * sw + vrx * dw
                ] * weight[vk, vrc, vry, vrx]

    return simplify_stmt(chain(pad_stage((N, C, H, W), (0, 0, ph, pw), 0.0, dtype),
                               conv2d_nchw))


def conv2d_nhwc(N: int = 1, H: int = 8, W: int = 8, C: int = 4, K: int = 4, R: int = 3,
                S: int = 3, stride: Pair = 1, padding: Pair = 1, dilation: Pair = 1,
                dtype: str = "float32") -> PrimFunc:
    """2-D convolution, NHWC data and RSCK (HWIO) weights; blocks ``pad_temp``, ``conv2d_nhwc``.

    Example
    -------
    >>> [b.shape for b in conv2d_nhwc(1, 8, 8, 3, 4, 3, 3).params]
    [(1, 8, 8, 3), (3, 3, 3, 4), (1, 8, 8, 4)]
    """
    (sh, sw), (ph, pw), (dh, dw) = _check_conv(stride, padding, dilation)
    P, Q, HP, WP = window_sizes(H, W, (R, S), (sh, sw), (ph, pw), (dh, dw))

    @T.prim_func
    def conv2d_nhwc(pad_temp: T.Buffer((N, HP, WP, C), dtype),
                    weight: T.Buffer((R, S, C, K), dtype), conv: T.Buffer((N, P, Q, K), dtype)):
        for n, y, x, k, ry, rx, rc in T.grid(N, P, Q, K, R, S, C):
            with T.block("conv2d_nhwc"):
                vn, vy, vx, vk, vry, vrx, vrc = T.axis.remap("SSSSRRR", [n, y, x, k, ry, rx, rc])
                with T.init():
                    conv[vn, vy, vx, vk] = 0.0
                conv[vn, vy, vx, vk] = conv[vn, vy, vx, vk] + pad_temp[
                    vn, vy * sh + vry * dh, vx * sw + vrx * dw, vrc
                ] * weight[vry, vrx, vrc, vk]

    return simplify_stmt(chain(pad_stage((N, H, W, C), (0, ph, pw, 0), 0.0, dtype),
                               conv2d_nhwc))


def depthwise_conv2d_nchw(N: int = 1, C: int = 4, H: int = 8, W: int = 8, R: int = 3,
                          S: int = 3, stride: Pair = 1, padding: Pair = 1, dilation: Pair = 1,
                          dtype: str = "float32") -> PrimFunc:
    """Depthwise 2-D convolution (channel multiplier 1): weights ``(C, 1, R, S)``.

    Blocks ``pad_temp`` and ``depthwise_conv2d_nchw``; each output channel reads only its
    own input channel.

    Example
    -------
    >>> [b.shape for b in depthwise_conv2d_nchw(1, 4, 8, 8, 3, 3).params]
    [(1, 4, 8, 8), (4, 1, 3, 3), (1, 4, 8, 8)]
    """
    (sh, sw), (ph, pw), (dh, dw) = _check_conv(stride, padding, dilation)
    P, Q, HP, WP = window_sizes(H, W, (R, S), (sh, sw), (ph, pw), (dh, dw))

    @T.prim_func
    def depthwise_conv2d_nchw(pad_temp: T.Buffer((N, C, HP, WP), dtype),
                              weight: T.Buffer((C, 1, R, S), dtype),
                              conv: T.Buffer((N, C, P, Q), dtype)):
        for n, c, y, x, ry, rx in T.grid(N, C, P, Q, R, S):
            with T.block("depthwise_conv2d_nchw"):
                vn, vc, vy, vx, vry, vrx = T.axis.remap("SSSSRR", [n, c, y, x, ry, rx])
                with T.init():
                    conv[vn, vc, vy, vx] = 0.0
                conv[vn, vc, vy, vx] = conv[vn, vc, vy, vx] + pad_temp[
                    vn, vc, vy * sh + vry * dh, vx * sw + vrx * dw
                ] * weight[vc, 0, vry, vrx]

    return simplify_stmt(chain(pad_stage((N, C, H, W), (0, 0, ph, pw), 0.0, dtype),
                               depthwise_conv2d_nchw))
