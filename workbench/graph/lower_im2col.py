"""The kernel of the graph's ``im2col`` (``workbench.graph.ops_im2col``): one block
``T_im2col`` over the ``(C * R * S, N * P * Q)`` matrix (from NCHW data, or CNHW with
``layout="CNHW"``), each element's channel, tap, image
and pixel taken apart from its row and column; the padding's zeros by a ``Select`` on a
load clamped into the image (``lower_more``'s convention: both branches may be evaluated).
Merged into ``lower_ops.COMPOSED_HEADS``."""

from __future__ import annotations

from workbench.graph.lower_more import _clamp
from workbench.graph.ops import conv_output_size
from workbench.ir.expr import GE, LT, And, IntImm, Select
from workbench.ops.compose import const
from workbench.ops.conv import IM2COL_DIMS


def _im2col(fb, node, ins, out):
    (x,) = ins
    cnhw = node.attrs.get("layout", "NCHW") == "CNHW"
    C, N, H, W = x.shape if cnhw else (x.shape[1], x.shape[0], *x.shape[2:])
    (R, S), (sh, sw), (ph, pw), (dh, dw) = (tuple(node.attrs.get(key, default)) for key, default in
                                            (("kernel", (1, 1)), ("stride", (1, 1)),
                                             ("padding", (0, 0)), ("dilation", (1, 1))))
    P = conv_output_size(H, R, sh, ph, dh)
    Q = conv_output_size(W, S, sw, pw, dw)
    PQ = P * Q

    def value(vs):
        row, col = vs
        c, r, s = row // IntImm(R * S), (row // IntImm(S)) % IntImm(R), row % IntImm(S)
        n, p, q = col // IntImm(PQ), (col // IntImm(Q)) % IntImm(P), col % IntImm(Q)
        y = p * IntImm(sh) + r * IntImm(dh) - IntImm(ph)
        z = q * IntImm(sw) + s * IntImm(dw) - IntImm(pw)
        load = x[[c, n, _clamp(y, H), _clamp(z, W)] if cnhw else
                 [n, c, _clamp(y, H), _clamp(z, W)]]
        if not (ph or pw):
            return load
        inside = And(And(GE(y, IntImm(0)), LT(y, IntImm(H))),
                     And(GE(z, IntImm(0)), LT(z, IntImm(W))))
        return Select(inside, load, const(0.0))

    fb.spatial("T_im2col", out, value, annotations=((IM2COL_DIMS, (C, R, S, N, P, Q)),))


IM2COL_COMPOSED_HEADS = {"im2col": _im2col}
"""op -> ``FuncBuilder`` kernel (merged into ``lower_ops.COMPOSED_HEADS``)."""

__all__ = ["IM2COL_COMPOSED_HEADS"]
