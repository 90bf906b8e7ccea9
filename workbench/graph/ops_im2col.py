"""The graph operator of convolutions as matrix products on the GPU
(``workbench.graph.passes.conv_gemm``), with numpy semantics like ``workbench.graph.ops``:

- ``im2col`` (``layout``): NCHW data ``(N, C, H, W)`` unfolded into the matrix
  ``(C * R * S, N * P * Q)`` of a convolution's windows: row ``(c * R + r) * S + s``, column
  ``(n * P + p) * Q + q`` holds the input at ``(n, c, p * sh + r * dh - ph,
  q * sw + s * dw - pw)``, zero in the padding (``torch.nn.functional.unfold``'s values, its
  columns of every image side by side). ``layout="CNHW"``: the data is ``(C, N, H, W)``
  (a convolution's output as the matrix product leaves it, ``passes.conv_gemm``).
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import TensorType


def im2col(x, kernel=(1, 1), stride=(1, 1), padding=(0, 0), dilation=(1, 1),
           layout: str = "NCHW"):
    """``(C * R * S, N * P * Q)``: the windows of ``x`` (module docstring).

    >>> im2col(np.arange(9.0).reshape(1, 1, 3, 3), kernel=(2, 2)).tolist()
    [[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]
    """
    from workbench.graph.ops import conv_output_size

    x = np.asarray(x)
    if layout == "CNHW":
        x = x.transpose(1, 0, 2, 3)
    n, c, h, w = x.shape
    (r, s), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    p = conv_output_size(h, r, sh, ph, dh)
    q = conv_output_size(w, s, sw, pw, dw)
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    col = np.empty((c, r, s, n, p, q), x.dtype)
    for i in range(r):
        for j in range(s):
            col[:, i, j] = padded[:, :, i * dh:i * dh + sh * (p - 1) + 1:sh,
                                  j * dw:j * dw + sw * (q - 1) + 1:sw].transpose(1, 0, 2, 3)
    return col.reshape(c * r * s, n * p * q)


def im2col_type(x: TensorType, kernel=(1, 1), stride=(1, 1), padding=(0, 0),
                dilation=(1, 1), layout: str = "NCHW") -> TensorType | None:
    """``im2col``'s output type from the shapes (a resnet's stem at batch 16 unfolds into
    118 MB: not run on zeros to learn it)."""
    from workbench.graph.ops import conv_output_size

    if len(x.shape) != 4:
        return None
    n, c, h, w = x.shape
    if layout == "CNHW":
        n, c = c, n
    p = conv_output_size(h, kernel[0], stride[0], padding[0], dilation[0])
    q = conv_output_size(w, kernel[1], stride[1], padding[1], dilation[1])
    if p < 1 or q < 1:
        return None
    return TensorType((c * kernel[0] * kernel[1], n * p * q), str(np.dtype(x.dtype)))


IM2COL_OPS = {"im2col": (im2col, "layout")}
"""op name -> (numpy function, kind), merged into ``workbench.graph.ops.OPS``."""

__all__ = ["IM2COL_OPS", "im2col", "im2col_type"]
