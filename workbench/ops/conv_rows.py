"""1x1 convolutions in NCHW as matmuls over the image's rows (the CPU's ``rows`` form).

A 1x1 convolution with stride 1 and no padding is, per image, the matmul
``conv[n, k, p] = sum_c weight[k, c] * data[n, c, p]`` over the flattened spatial positions
``p = y * W + x``, which are contiguous in NCHW for both the input and the output. A
schedule vectorizes over ``p`` (``recipes.conv2d_1x1_cpu``): each weight is broadcast, each
input row segment loaded as vectors, and the output (with its fused epilogue: bias, SiLU, a
residual add) written as whole vectors. No channels-last copy of the input, no transposed
write of the output (``conv2d_nchw_packed`` does both).

``scaled=True`` multiplies the input by a per-(image, channel) factor as it is read:
``data[n, c, p] * scale[n, c]``, the squeeze-excitation product that otherwise is a kernel of
its own (``graph.passes.layout.fuse_input_scales``).
"""

from __future__ import annotations

from workbench import T
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc

HEAD = "conv2d_1x1_nchw"


def conv2d_1x1_nchw(N: int = 1, C: int = 4, HW: int = 64, K: int = 8, scaled: bool = False,
                    dtype: str = "float32") -> PrimFunc:
    """``conv[n, k, p] = sum_c data[n, c, p] (* scale[n, c]) * weight[k, c]``: a 1x1 conv
    (stride 1, no padding) on NCHW data viewed ``(N, C, H * W)``, weights ``(K, C)``;
    block ``conv2d_1x1_nchw`` over ``(n, k, p, rc)``. ``scaled``: a ``scale`` parameter
    ``(N, C)`` after ``data``.

    Example
    -------
    >>> f = conv2d_1x1_nchw(2, 3, 49, 8, scaled=True)
    >>> [b.shape for b in f.params]
    [(2, 3, 49), (2, 3), (8, 3), (2, 8, 49)]
    """
    if scaled:
        @T.prim_func
        def conv2d_1x1_scaled(data: T.Buffer((N, C, HW), dtype), scale: T.Buffer((N, C), dtype),
                              weight: T.Buffer((K, C), dtype),
                              conv: T.Buffer((N, K, HW), dtype)):
            for n, k, p, rc in T.grid(N, K, HW, C):
                with T.block("conv2d_1x1_nchw"):
                    vn, vk, vp, vrc = T.axis.remap("SSSR", [n, k, p, rc])
                    with T.init():
                        conv[vn, vk, vp] = 0.0
                    conv[vn, vk, vp] = conv[vn, vk, vp] + data[vn, vrc, vp] * (
                        weight[vk, vrc] * scale[vn, vrc])

        return simplify_stmt(conv2d_1x1_scaled)

    @T.prim_func
    def conv2d_1x1(data: T.Buffer((N, C, HW), dtype), weight: T.Buffer((K, C), dtype),
                   conv: T.Buffer((N, K, HW), dtype)):
        for n, k, p, rc in T.grid(N, K, HW, C):
            with T.block("conv2d_1x1_nchw"):
                vn, vk, vp, vrc = T.axis.remap("SSSR", [n, k, p, rc])
                with T.init():
                    conv[vn, vk, vp] = 0.0
                conv[vn, vk, vp] = conv[vn, vk, vp] + data[vn, vrc, vp] * weight[vk, vrc]

    return simplify_stmt(conv2d_1x1)


__all__ = ["HEAD", "conv2d_1x1_nchw"]
