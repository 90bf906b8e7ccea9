"""Convolutions with weights packed by blocks of output channels (the CPU's conv layouts).

``conv2d_nchw_packed``: NCHW data and output, weights ``(K // kb, C, R, S, kb)`` (KCRS
packed once, at compile time: ``pack_kcrs``), so that the ``kb`` output channels of one
weight position are contiguous: a schedule vectorizes over them (``kb``: the target's
vector lanes) and keeps a tile of output positions x ``kb`` channels in registers, each
input element loaded once per tile and broadcast. ``depthwise_conv2d_nchw_packed``: the
same for a depthwise convolution, weights ``(C // kb, R, S, kb)`` (``pack_depthwise``),
vectorized over channels.

The zero-bordered copy of the input (block ``pad_temp``) is where the layout changes, at
the kernel's boundary: channels last and split by stride phase,
``pad_temp[n, py, px, h, w, c] = padded[n, c, h * sh + py, w * sw + px]``, so the
convolution reads ``pad_temp[n, (ry*dh) % sh, (rx*dw) % sw, y + (ry*dh) // sh,
x + (rx*dw) // sw, c]``: consecutive output columns are ``C`` elements apart whatever the
stride. ``conv2d_nchw_packed`` copies only the phases it reads (one for a 1x1 strided conv:
resnet's downsampling convs). Measured on one AVX-512 core (a 256-channel 3x3 conv at
14x14): with the input row unit-stride (NCHW) LLVM vectorizes the tile along the output
columns instead of the channels (~0.6 GFLOP/s); with a stride-2 row in channels-last it
gathers (~0.9); in this layout ~105-110 GFLOP/s for stride 1 and 2 alike.
"""

from __future__ import annotations

import numpy as np

from workbench import T
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc
from workbench.ops.compose import chain
from workbench.ops.conv import Pair, _check_conv, conv_output_size


def pack_kcrs(weight: np.ndarray, kb: int) -> np.ndarray:
    """KCRS weights as ``(K // kb, C, R, S, kb)`` (``K`` a multiple of ``kb``).

    Example
    -------
    >>> w = np.arange(2 * 3 * 1 * 1).reshape(2, 3, 1, 1)
    >>> pack_kcrs(w, 2)[0, :, 0, 0].tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    blocks = _blocks("pack_kcrs", weight.shape[0], "output channels", kb)
    blocked = weight.reshape((blocks, kb) + weight.shape[1:])
    return np.ascontiguousarray(np.moveaxis(blocked, 1, -1))


def unpack_kcrs(packed: np.ndarray) -> np.ndarray:
    """The KCRS weights ``pack_kcrs`` packed (also ``pack_depthwise``'s, as ``(C, 1, R, S)``)."""
    if packed.ndim == 4:  # depthwise: (C // kb, R, S, kb)
        packed = packed[:, None]
    k0, kb = packed.shape[0], packed.shape[-1]
    return np.moveaxis(packed, -1, 1).reshape((k0 * kb,) + packed.shape[1:-1])


def pack_depthwise(weight: np.ndarray, kb: int) -> np.ndarray:
    """Depthwise weights ``(C, 1, R, S)`` as ``(C // kb, R, S, kb)``.

    Example
    -------
    >>> pack_depthwise(np.arange(4.0).reshape(4, 1, 1, 1), 2)[:, 0, 0].tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    return pack_kcrs(weight, kb)[:, 0]


def _blocks(op: str, channels: int, what: str, kb: int) -> int:
    """``channels // kb``, the blocks of ``kb`` channels; an error naming ``op`` when ``kb``
    does not divide ``channels``."""
    if channels % kb:
        raise ValueError(f"{op}: {channels} {what} are not a multiple of kb={kb}")
    return channels // kb


def _phases(H: int, W: int, R: int, S: int, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = _check_conv(stride, padding, dilation)
    P = conv_output_size(H, R, sh, ph, dh)
    Q = conv_output_size(W, S, sw, pw, dw)
    return (sh, sw), (ph, pw), (dh, dw), P, Q, P + (R - 1) * dh // sh, Q + (S - 1) * dw // sw


def phase_pad_stage(shape: tuple[int, int, int, int], extents: tuple[int, int, int, int],
                    stride: tuple[int, int], padding: tuple[int, int],
                    dtype: str) -> PrimFunc:
    """The ``"pad_temp"`` block of the packed convolutions alone: NCHW ``data`` (``shape``)
    copied zero-bordered into ``pad_temp[n, py, px, h, w, c] = padded[n, c, h * sh + py,
    w * sw + px]`` (channels last, split by stride phase: the module docstring), ``extents``
    ``(PH, PW, HS, WS)`` the phases kept and the rows and columns of each. Both packed
    convolutions ``chain`` it before their own block.

    Example
    -------
    >>> f = phase_pad_stage((1, 3, 8, 8), (2, 2, 5, 5), (2, 2), (1, 1), "float32")
    >>> [b.shape for b in f.params]
    [(1, 3, 8, 8), (1, 2, 2, 5, 5, 3)]
    """
    N, C, H, W = shape
    PH, PW, HS, WS = extents
    (sh, sw), (ph, pw) = stride, padding

    @T.prim_func
    def pad(data: T.Buffer((N, C, H, W), dtype),
            pad_temp: T.Buffer((N, PH, PW, HS, WS, C), dtype)):
        for i0, i1, i2, i3, i4, i5 in T.grid(N, PH, PW, HS, WS, C):
            with T.block("pad_temp"):
                v0, v1, v2, v3, v4, v5 = T.axis.remap("SSSSSS", [i0, i1, i2, i3, i4, i5])
                pad_temp[v0, v1, v2, v3, v4, v5] = T.if_then_else(
                    ph <= v3 * sh + v1 and v3 * sh + v1 < H + ph and pw <= v4 * sw + v2
                    and v4 * sw + v2 < W + pw,
                    data[v0, v5, v3 * sh + v1 - ph, v4 * sw + v2 - pw], 0.0)

    return pad


def conv2d_nchw_packed(N: int = 1, C: int = 4, H: int = 8, W: int = 8, K: int = 16,
                       R: int = 3, S: int = 3, kb: int = 8, stride: Pair = 1,
                       padding: Pair = 1, dilation: Pair = 1,
                       dtype: str = "float32") -> PrimFunc:
    """2-D convolution, NCHW data, packed weights ``(K // kb, C, R, S, kb)``; blocks
    ``pad_temp`` (channels last, by stride phase: the module docstring) and
    ``conv2d_nchw_packed`` over ``(n, k0, y, x, k1, rc, ry, rx)``, channel ``k0 * kb + k1``.

    Example
    -------
    >>> f = conv2d_nchw_packed(1, 3, 8, 8, 16, 3, 3, kb=8, stride=2, padding=1)
    >>> [b.shape for b in f.params]
    [(1, 3, 8, 8), (2, 3, 3, 3, 8), (1, 16, 4, 4)]
    """
    KB = _blocks("conv2d_nchw_packed", K, "output channels", kb)
    (sh, sw), (ph, pw), (dh, dw), P, Q, HS, WS = _phases(H, W, R, S, stride, padding,
                                                         dilation)
    # stride phases the kernel reads (a 1x1 strided conv reads one: copy only that one)
    PH = max(ry * dh % sh for ry in range(R)) + 1
    PW = max(rx * dw % sw for rx in range(S)) + 1

    @T.prim_func
    def conv2d_nchw_packed(pad_temp: T.Buffer((N, PH, PW, HS, WS, C), dtype),
                           weight: T.Buffer((KB, C, R, S, kb), dtype),
                           conv: T.Buffer((N, K, P, Q), dtype)):
        for n, k0, y, x, k1, rc, ry, rx in T.grid(N, KB, P, Q, kb, C, R, S):
            with T.block("conv2d_nchw_packed"):
                vn, vk0, vy, vx, vk1, vrc, vry, vrx = T.axis.remap(
                    "SSSSSRRR", [n, k0, y, x, k1, rc, ry, rx])
                with T.init():
                    conv[vn, vk0 * kb + vk1, vy, vx] = 0.0
                conv[vn, vk0 * kb + vk1, vy, vx] = conv[vn, vk0 * kb + vk1, vy, vx] + pad_temp[
                    vn, vry * dh % sh, vrx * dw % sw, vy + vry * dh // sh,
                    vx + vrx * dw // sw, vrc] * weight[vk0, vrc, vry, vrx, vk1]

    return simplify_stmt(chain(
        phase_pad_stage((N, C, H, W), (PH, PW, HS, WS), (sh, sw), (ph, pw), dtype),
        conv2d_nchw_packed))


def depthwise_conv2d_nchw_packed(N: int = 1, C: int = 16, H: int = 8, W: int = 8,
                                 R: int = 3, S: int = 3, kb: int = 8, stride: Pair = 1,
                                 padding: Pair = 1, dilation: Pair = 1,
                                 dtype: str = "float32") -> PrimFunc:
    """Depthwise 2-D convolution, NCHW data, packed weights ``(C // kb, R, S, kb)``; blocks
    ``pad_temp`` (as ``conv2d_nchw_packed``'s) and ``depthwise_conv2d_nchw_packed`` over
    ``(n, c0, y, x, c1, ry, rx)``, channel ``c0 * kb + c1``.

    Example
    -------
    >>> f = depthwise_conv2d_nchw_packed(1, 16, 7, 7, 3, 3, kb=8, stride=2, padding=1)
    >>> [b.shape for b in f.params]
    [(1, 16, 7, 7), (2, 3, 3, 8), (1, 16, 4, 4)]
    """
    CB = _blocks("depthwise_conv2d_nchw_packed", C, "channels", kb)
    (sh, sw), (ph, pw), (dh, dw), P, Q, HS, WS = _phases(H, W, R, S, stride, padding,
                                                         dilation)

    @T.prim_func
    def depthwise_conv2d_nchw_packed(pad_temp: T.Buffer((N, sh, sw, HS, WS, C), dtype),
                                     weight: T.Buffer((CB, R, S, kb), dtype),
                                     conv: T.Buffer((N, C, P, Q), dtype)):
        for n, c0, y, x, c1, ry, rx in T.grid(N, CB, P, Q, kb, R, S):
            with T.block("depthwise_conv2d_nchw_packed"):
                vn, vc0, vy, vx, vc1, vry, vrx = T.axis.remap(
                    "SSSSSRR", [n, c0, y, x, c1, ry, rx])
                with T.init():
                    conv[vn, vc0 * kb + vc1, vy, vx] = 0.0
                conv[vn, vc0 * kb + vc1, vy, vx] = conv[vn, vc0 * kb + vc1, vy, vx] + pad_temp[
                    vn, vry * dh % sh, vrx * dw % sw, vy + vry * dh // sh,
                    vx + vrx * dw // sw, vc0 * kb + vc1] * weight[vc0, vry, vrx, vc1]

    return simplify_stmt(chain(
        phase_pad_stage((N, C, H, W), (sh, sw, HS, WS), (sh, sw), (ph, pw), dtype),
        depthwise_conv2d_nchw_packed))


__all__ = ["conv2d_nchw_packed", "depthwise_conv2d_nchw_packed", "pack_depthwise",
           "pack_kcrs", "phase_pad_stage", "unpack_kcrs"]
