"""Model-shaped kernels (``FuncBuilder``) of the frontend's wider opset: concatenation,
slices, embedding lookups, constant padding, reductions (sum/max/min/var) over any axes,
``log_softmax`` and the general (grouped) convolution.

Each builder has the signature of ``lower_ops.COMPOSED_HEADS``: ``build(fb, node, ins, out)``
adds the blocks computing ``out`` from the input tensors ``ins``. Where an index could fall
outside a tensor (a concatenation's other inputs, a padded border), the load's index is
clamped into the tensor and the value chosen by a ``Select``: both branches of a ``Select``
may be evaluated, so every load must stay in bounds.
"""

from __future__ import annotations

import math

from workbench.graph.lower_ops import _row_reduction, max_and_expsum
from workbench.ir.expr import GE, LT, And, Call, Cast, IntImm, Max, Min, PrimExpr, Select
from workbench.ops.compose import const


def _clamp(index: PrimExpr, extent: int) -> PrimExpr:
    return Min(Max(index, IntImm(0)), IntImm(extent - 1))


def _concat(fb, node, ins, out):
    axis = node.attrs["axis"] % len(out.shape)

    def value(vs):
        offsets, start = [], 0
        for t in ins:
            offsets.append(start)
            start += t.shape[axis]
        result = None
        for t, offset in reversed(list(zip(ins, offsets, strict=True))):
            local = vs[axis] - IntImm(offset) if offset else vs[axis]
            load = t[list(vs[:axis]) + [_clamp(local, t.shape[axis])] + list(vs[axis + 1:])]
            result = load if result is None else Select(LT(vs[axis], IntImm(offset
                                                                                + t.shape[axis])),
                                                        load, result)
        return result

    fb.spatial("T_concat", out, value)


def _slice(fb, node, ins, out):
    axis, start, step = node.attrs["axis"], node.attrs["start"], node.attrs["step"]

    def value(vs):
        index = vs[axis] * IntImm(step) if step != 1 else vs[axis]
        index = index + IntImm(start) if start else index
        return ins[0][list(vs[:axis]) + [index] + list(vs[axis + 1:])]

    fb.spatial("T_slice", out, value)


def _rotate_half(fb, node, ins, out):
    """``ops.rotate_half``: ``out[..., d] = -x[..., d + h]`` for ``d < h``, else
    ``x[..., d - h]``."""
    (x,) = ins
    half = out.shape[-1] // 2

    def value(vs):
        *outer, last = vs
        first = x[list(outer) + [_clamp(last + IntImm(half), 2 * half)]]
        second = x[list(outer) + [_clamp(last - IntImm(half), 2 * half)]]
        return Select(LT(last, IntImm(half)), const(0.0, first.dtype) - first, second)

    fb.spatial("T_rotate_half", out, value)


def _embedding(fb, node, ins, out):
    weight, indices = ins
    fb.spatial("T_embedding", out, lambda vs: weight[[indices[list(vs[:-1])], vs[-1]]])


def _pad(fb, node, ins, out):
    (x,) = ins
    pads = node.attrs["pads"]
    fill = const(node.attrs.get("value", 0.0))

    def value(vs):
        index, inside = [], None
        for v, (before, _), extent in zip(vs, pads, x.shape, strict=True):
            if before == 0 and extent == out.shape[len(index)]:
                index.append(v)
                continue
            local = v - IntImm(before) if before else v
            index.append(_clamp(local, extent))
            cond = And(GE(local, IntImm(0)), LT(local, IntImm(extent)))
            inside = cond if inside is None else And(inside, cond)
        return x[index] if inside is None else Select(inside, x[index], fill)

    fb.spatial("T_pad", out, value)


def _reduced_index(vs, n: int, axes: set[int], keep: bool):
    """The reduction buffer's index (size-1 axes kept) for an output index ``vs``."""
    if keep:
        return [IntImm(0) if d in axes else vs[d] for d in range(n)]
    it = iter(vs)
    return [IntImm(0) if d in axes else next(it) for d in range(n)]


def _reduce(fb, node, ins, out):
    (x,) = ins
    n = len(x.shape)
    axes = {a % n for a in node.attrs["axes"]}
    keep = node.attrs.get("keepdims", True)
    kind = node.attrs.get("kind", "sum")
    count = math.prod(x.shape[a] for a in axes)
    if kind == "max":
        total, _ = _row_reduction(fb, "A_max", x, axes, const(-math.inf),
                                  lambda acc, vs: Max(acc, x[vs]))
    elif kind == "min":
        total, _ = _row_reduction(fb, "A_min", x, axes, const(math.inf),
                                  lambda acc, vs: Min(acc, x[vs]))
    else:
        total, index = _row_reduction(fb, "A_sum", x, axes, const(0.0),
                                      lambda acc, vs: acc + x[vs])
    if kind == "var":
        inv = const(1.0 / count)

        def centred(vs):
            return x[vs] - total[index(vs)] * inv

        total, _ = _row_reduction(fb, "A_var", x, axes, const(0.0),
                                  lambda acc, vs: acc + centred(vs) * centred(vs))
    scale = const(1.0 / count) if kind == "var" else None

    def value(vs):
        result = total[_reduced_index(vs, n, axes, keep)]
        return result * scale if scale is not None else result

    fb.spatial("T_reduce", out, value)


def _log_softmax(fb, node, ins, out):
    (x,) = ins
    mx, sm, index = max_and_expsum(fb, node, x, "T_")
    fb.spatial("T_log_softmax", out,
               lambda vs: x[vs] - mx[index(vs)] - Call("log", (sm[index(vs)],)))


def _conv2d(fb, node, ins, out):
    """NCHW convolution of any groups, stride, padding and dilation (bias optional)."""
    x, w = ins[:2]
    N, C, H, W = x.shape
    K, Cg, R, S = w.shape
    (sh, sw), (ph, pw), (dh, dw) = (tuple(node.attrs[a]) for a in ("stride", "padding",
                                                                   "dilation"))
    groups = node.attrs.get("groups", 1)
    kg = K // groups
    if ph or pw:
        padded = fb.alloc("pad_temp", (N, C, H + 2 * ph, W + 2 * pw))

        def pad_value(vs):
            h, w_ = vs[2] - IntImm(ph), vs[3] - IntImm(pw)
            inside = And(And(GE(h, IntImm(0)), LT(h, IntImm(H))),
                         And(GE(w_, IntImm(0)), LT(w_, IntImm(W))))
            return Select(inside, x[[vs[0], vs[1], _clamp(h, H), _clamp(w_, W)]], const(0.0))

        fb.spatial("pad_temp", padded, pad_value)
        x = padded
    acc = fb.alloc("conv", out.shape) if len(ins) > 2 else out

    def update(total, vs):
        n, k, p, q, c, r, s = vs
        channel = (k // IntImm(kg)) * IntImm(Cg) + c if groups > 1 else c
        return total + x[[n, channel, p * IntImm(sh) + r * IntImm(dh),
                          q * IntImm(sw) + s * IntImm(dw)]] * w[[k, c, r, s]]

    fb.reduce("conv", acc, list(out.shape) + [Cg, R, S], "SSSSRRR", lambda vs: vs[:4],
              const(0.0), update)
    if len(ins) > 2:
        bias = ins[2]
        fb.spatial("T_bias", out, lambda vs: acc[vs] + bias[[vs[1]]])


def _padded(fb, x, pads, fill):
    """``x`` (N, C, *spatial) padded by ``pads`` per spatial axis into a new buffer."""
    spatial = x.shape[2:]
    padded = fb.alloc("pad_temp", x.shape[:2] + tuple(s + 2 * p for s, p in zip(spatial, pads,
                                                                                strict=True)))

    def value(vs):
        inside, index = None, list(vs[:2])
        for v, p, s in zip(vs[2:], pads, spatial, strict=True):
            local = v - IntImm(p)
            cond = And(GE(local, IntImm(0)), LT(local, IntImm(s)))
            inside = cond if inside is None else And(inside, cond)
            index.append(_clamp(local, s))
        return Select(inside, x[index], fill)

    fb.spatial("pad_temp", padded, value)
    return padded


def _conv3d(fb, node, ins, out):
    """NCDHW convolution of any groups, stride, padding and dilation (bias optional)."""
    x, w = ins[:2]
    k, cg = w.shape[:2]
    kernel = w.shape[2:]
    stride, pads, dilation = (node.attrs[a] for a in ("stride", "padding", "dilation"))
    groups = node.attrs.get("groups", 1)
    kg = k // groups
    if any(pads):
        x = _padded(fb, x, pads, const(0.0))
    acc = fb.alloc("conv", out.shape) if len(ins) > 2 else out

    def update(total, vs):
        n, ko, *rest = vs
        spatial, (c, *offsets) = rest[:3], rest[3:]
        channel = (ko // IntImm(kg)) * IntImm(cg) + c if groups > 1 else c
        index = [s * IntImm(st) + o * IntImm(d)
                 for s, o, st, d in zip(spatial, offsets, stride, dilation, strict=True)]
        return total + x[[n, channel, *index]] * w[[ko, c, *offsets]]

    fb.reduce("conv", acc, list(out.shape) + [cg, *kernel], "S" * 5 + "R" * 4,
              lambda vs: vs[:5], const(0.0), update)
    if len(ins) > 2:
        bias = ins[2]
        fb.spatial("T_bias", out, lambda vs: acc[vs] + bias[[vs[1]]])


def _pool3d(fb, node, ins, out):
    (x,) = ins
    kernel, stride, pads = (node.attrs[a] for a in ("kernel", "stride", "padding"))
    is_max = node.attrs.get("kind", "max") == "max"
    if any(pads):
        x = _padded(fb, x, pads, const(-math.inf if is_max else 0.0))
    acc = fb.alloc("pool", out.shape) if not is_max else out

    def update(total, vs):
        index = list(vs[:2]) + [s * IntImm(st) + o for s, o, st in zip(vs[2:5], vs[5:], stride,
                                                                       strict=True)]
        return Max(total, x[index]) if is_max else total + x[index]

    fb.reduce("pool", acc, list(out.shape) + list(kernel), "S" * 5 + "R" * 3, lambda vs: vs[:5],
              const(-math.inf) if is_max else const(0.0), update)
    if not is_max:
        inv = const(1.0 / math.prod(kernel))
        fb.spatial("T_pool", out, lambda vs: acc[vs] * inv)


def _adaptive_avg_pool2d(fb, node, ins, out):
    """Uneven windows (the even case is the library's ``avg_pool2d``): output ``p`` of an
    axis of size ``H`` averages rows ``[p * H // P, ceil((p + 1) * H / P))``, as PyTorch's; the
    reduction runs over the widest window, masking the rows past a narrower one."""
    (x,) = ins
    sizes, outs = x.shape[2:], out.shape[2:]

    def bounds(v, size, n):
        return (v * IntImm(size)) // IntImm(n), ((v + IntImm(1)) * IntImm(size)
                                                 + IntImm(n - 1)) // IntImm(n)

    widest = [max(-(-(o + 1) * s // n) - o * s // n for o in range(n))
              for s, n in zip(sizes, outs, strict=True)]
    acc = fb.alloc("pool", out.shape)

    def update(total, vs):
        index, inside = list(vs[:2]), None
        for v, r, size, n in zip(vs[2:4], vs[4:], sizes, outs, strict=True):
            start, end = bounds(v, size, n)
            index.append(_clamp(start + r, size))
            cond = LT(start + r, end)
            inside = cond if inside is None else And(inside, cond)
        return total + Select(inside, x[index], const(0.0))

    fb.reduce("pool", acc, list(out.shape) + widest, "SSSSRR", lambda vs: vs[:4], const(0.0),
              update)

    def value(vs):
        (h0, h1), (w0, w1) = (bounds(v, s, n) for v, s, n in zip(vs[2:], sizes, outs,
                                                                 strict=True))
        return acc[vs] / Cast(fb.dtype, (h1 - h0) * (w1 - w0))

    fb.spatial("T_pool", out, value)


MORE_COMPOSED_HEADS = {
    "conv3d": _conv3d, "pool3d": _pool3d, "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "concat": _concat, "slice": _slice, "embedding": _embedding, "pad": _pad,
    "rotate_half": _rotate_half,
    "reduce": _reduce, "log_softmax": _log_softmax, "conv2d": _conv2d,
}
"""op -> its ``FuncBuilder`` kernel (merged into ``lower_ops.COMPOSED_HEADS``)."""
