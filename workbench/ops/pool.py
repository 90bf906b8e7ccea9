"""2-D pooling over NCHW data: max and average.

Kernel, stride and padding are an int (both axes) or a (height, width) pair. As in the
convolutions, padding is a ``"pad_temp"`` block (filled with ``-inf`` for max
pooling, with zeros for average pooling). Average pooling divides by the full window
area, padding included (PyTorch's ``count_include_pad=True``).
"""

from __future__ import annotations

from workbench import T
from workbench.ir.arith import simplify_stmt
from workbench.ir.function import PrimFunc
from workbench.ops.compose import chain
from workbench.ops.conv import Pair, pad_stage, pair, window_sizes


def _check_pool(kernel: Pair, stride: Pair, padding: Pair) -> tuple[tuple[int, int], ...]:
    """The (height, width) pairs of ``kernel``, ``stride``, ``padding``, checked."""
    (kh, kw), (sh, sw), (ph, pw) = pair(kernel), pair(stride), pair(padding)
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0:
        raise ValueError(f"pooling needs kernel >= 1, stride >= 1 and padding >= 0; got "
                         f"kernel={kernel}, stride={stride}, padding={padding}")
    if 2 * ph > kh or 2 * pw > kw:
        raise ValueError(f"padding {padding} is more than half the kernel {kernel}: some windows "
                         "would hold only padding")
    return (kh, kw), (sh, sw), (ph, pw)


def max_pool2d(N: int = 1, C: int = 4, H: int = 8, W: int = 8, kernel: Pair = 2, stride: Pair = 2,
               padding: Pair = 0, dtype: str = "float32") -> PrimFunc:
    """Max pooling with a square ``kernel``; blocks ``pad_temp`` and ``pool_max``.

    Example
    -------
    >>> max_pool2d(1, 3, 8, 8, kernel=3, stride=2, padding=1).params[-1].shape
    (1, 3, 4, 4)
    """
    (kh, kw), (sh, sw), (ph, pw) = _check_pool(kernel, stride, padding)
    P, Q, HP, WP = window_sizes(H, W, (kh, kw), (sh, sw), (ph, pw))
    neg_inf = float("-inf")

    @T.prim_func
    def max_pool2d(pad_temp: T.Buffer((N, C, HP, WP), dtype),
                   pool: T.Buffer((N, C, P, Q), dtype)):
        for n, c, y, x, ry, rx in T.grid(N, C, P, Q, kh, kw):
            with T.block("pool_max"):
                vn, vc, vy, vx, vry, vrx = T.axis.remap("SSSSRR", [n, c, y, x, ry, rx])
                with T.init():
                    pool[vn, vc, vy, vx] = neg_inf
                pool[vn, vc, vy, vx] = T.max(
                    pool[vn, vc, vy, vx], pad_temp[vn, vc, vy * sh + vry, vx * sw + vrx])

    return simplify_stmt(chain(pad_stage((N, C, H, W), (0, 0, ph, pw), neg_inf, dtype),
                               max_pool2d))


def avg_pool2d(N: int = 1, C: int = 4, H: int = 8, W: int = 8, kernel: Pair = 2, stride: Pair = 2,
               padding: Pair = 0, dtype: str = "float32") -> PrimFunc:
    """Average pooling (window sum / kernel area); blocks ``pad_temp``, ``pool_sum``, ``pool_avg``.

    Example
    -------
    >>> [b.name for b in avg_pool2d().root_block.alloc_buffers]
    ['pad_temp', 'pool_sum']
    """
    (kh, kw), (sh, sw), (ph, pw) = _check_pool(kernel, stride, padding)
    P, Q, HP, WP = window_sizes(H, W, (kh, kw), (sh, sw), (ph, pw))
    area = float(kh * kw)

    @T.prim_func
    def avg_pool2d(pad_temp: T.Buffer((N, C, HP, WP), dtype),
                   pool: T.Buffer((N, C, P, Q), dtype)):
        pool_sum = T.alloc_buffer((N, C, P, Q), dtype)
        for n, c, y, x, ry, rx in T.grid(N, C, P, Q, kh, kw):
            with T.block("pool_sum"):
                vn, vc, vy, vx, vry, vrx = T.axis.remap("SSSSRR", [n, c, y, x, ry, rx])
                with T.init():
                    pool_sum[vn, vc, vy, vx] = 0.0
                pool_sum[vn, vc, vy, vx] = pool_sum[vn, vc, vy, vx] + pad_temp[
                    vn, vc, vy * sh + vry, vx * sw + vrx]
        for n1, c1, y1, x1 in T.grid(N, C, P, Q):
            with T.block("pool_avg"):
                vn1, vc1, vy1, vx1 = T.axis.remap("SSSS", [n1, c1, y1, x1])
                pool[vn1, vc1, vy1, vx1] = pool_sum[vn1, vc1, vy1, vx1] / area

    return simplify_stmt(chain(pad_stage((N, C, H, W), (0, 0, ph, pw), 0.0, dtype),
                               avg_pool2d))
