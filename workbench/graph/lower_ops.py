"""One kernel per graph node or fused group, built through the operator library.

A group is a *head* (its first operator) and an *epilogue* (the elementwise members after
it). The head is the library's operator (``ops.matmul``, ``ops.conv2d_nchw``,
``ops.softmax``, ``ops.layernorm``, ``ops.attention``...) called with the node's shapes; the
epilogue becomes ONE block appended after it (``ops.compose.append_epilogue``):
``out[v] = relu(C[v] + bias[v1])``. Kernels whose loop nest depends on the model (an
elementwise chain, a transpose by a permutation, a softmax along an inner axis, a matmul
with broadcast batch axes) are built with ``ops.compose.FuncBuilder``.

The library's operators have fixed ranks (``ops.matmul`` is 2-D, ``ops.softmax`` works on
rows), so a node's N-D tensors are *viewed* in the operator's shape: a head gives
``groups``, the node's output axes merged into each of the operator's output axes
(``(B, M, N) @ (N, K)`` is ``ops.matmul(B * M, K, N)``, groups ``((0, 1), (2,))``). Every
kernel parameter records the shape it views its value in (``LoweredKernel.shapes``);
the executor reshapes the (contiguous) arrays to it, which never copies. An epilogue
operand that cannot be viewed in the grouped shape (it broadcasts along part of a merged
group) makes the lowering take the head's model-shaped ``FuncBuilder`` form instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from workbench import ops
from workbench.graph.ir import Node, TensorType
from workbench.graph.lower_elementwise import elementwise_value, param_dtype, unify_floats
from workbench.graph.ops import kind
from workbench.ir.expr import (
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Max,
    PrimExpr,
)
from workbench.ir.function import PrimFunc
from workbench.ops.compose import FuncBuilder, Tensor, append_epilogue, const

Groups = tuple[tuple[int, ...], ...]


# ---------------------------------------------------------------------------- shapes


def grouped_operand(shape, full: tuple[int, ...], groups: Groups) -> tuple[int, ...] | None:
    """An operand of ``shape``, broadcast against the output shape ``full``, viewed in the
    output's ``groups``: per group, 1 where the operand's dims are all ones, the group's size
    where they are all full; None when a group is neither.

    Example
    -------
    >>> grouped_operand((5,), (2, 3, 5), ((0, 1), (2,)))
    (1, 5)
    >>> grouped_operand((3, 1), (2, 3, 5), ((0, 1), (2,))) is None
    True
    """
    aligned = (1,) * (len(full) - len(shape)) + tuple(shape)
    result = []
    for group in groups:
        dims = [aligned[a] for a in group]
        if all(d == 1 for d in dims):
            result.append(1)
        elif dims == [full[a] for a in group]:
            result.append(math.prod(dims))
        else:
            return None
    return tuple(result)


def identity(rank: int) -> Groups:
    return tuple((a,) for a in range(rank))


def bcast(t: Tensor, vs) -> BufferLoad:
    """``t`` broadcast (numpy rules) against the index ``vs``."""
    aligned = list(vs[len(vs) - len(t.shape):]) if t.shape else []
    return t[[IntImm(0) if s == 1 else v for s, v in zip(t.shape, aligned, strict=True)]]


# ---------------------------------------------------------------------------- operands


@dataclass
class Head:
    """A head's PrimFunc, the values bound to its inputs, and its output grouping."""

    func: PrimFunc
    inputs: list[str]
    groups: Groups
    stages: list[Node] = field(default_factory=list)  # epilogue stages the head adds (bias)


@dataclass
class Context:
    """What a kernel reads: value name -> type, and the scalar constants."""

    types: dict[str, TensorType]
    scalars: dict[str, np.ndarray]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.types[name].shape


def operand_shape(member: Node, position: int, shape: tuple[int, ...],
                  rank: int) -> tuple[int, ...]:
    """The shape ``member``'s input ``position`` broadcasts from, against a rank-``rank``
    output (a batch norm's statistics and a bias run along the channel axis)."""
    if member.op == "batch_norm" and position > 0:
        return (1, shape[0]) + (1,) * (rank - 2)
    if member.op == "bias_add" and position > 0:
        axis = member.attrs["axis"] % rank
        return (1,) * axis + (shape[0],) + (1,) * (rank - axis - 1)
    return shape


class Epilogue:
    """An elementwise chain over the output (in ``groups``), its operands made parameters."""

    def __init__(self, members: list[Node], start: str | None, ctx: Context, out: TensorType,
                 groups: Groups):
        self.members, self.start, self.ctx, self.groups = members, start, ctx, groups
        self.full = out.shape
        self.params: list[tuple[str, tuple[int, ...]]] = []  # (value, viewed shape)
        self._slot: dict[tuple[str, tuple], int] = {}
        for member in members:
            for pos, name in enumerate(member.inputs):
                if name == self._previous(member) or name in ctx.scalars:
                    continue
                shape = operand_shape(member, pos, ctx.shape(name), len(self.full))
                viewed = grouped_operand(shape, self.full, groups)
                if viewed is None:
                    raise _NotGroupable(name)
                key = (name, viewed)
                if key not in self._slot:
                    self._slot[key] = len(self.params)
                    self.params.append((name, viewed))

    def _previous(self, member: Node) -> str | None:
        index = self.members.index(member)
        return self.start if index == 0 else self.members[index - 1].name

    def value(self, start: PrimExpr | None, vs, tensors: list[Tensor]) -> PrimExpr:
        value = start
        for member in self.members:
            previous = self._previous(member)
            args = []
            for pos, name in enumerate(member.inputs):
                if name == previous and value is not None:
                    args.append(value)
                elif name in self.ctx.scalars:
                    scalar = self.ctx.scalars[name]
                    args.append(const(float(scalar), param_dtype(str(scalar.dtype))))
                else:
                    shape = operand_shape(member, pos, self.ctx.shape(name), len(self.full))
                    viewed = grouped_operand(shape, self.full, self.groups)
                    args.append(bcast(tensors[self._slot[(name, viewed)]], vs))
            value = elementwise_value(member, args)
        return unify_floats(value)


class _NotGroupable(Exception):
    """An epilogue operand cannot be viewed in the head's grouped output shape."""


# ---------------------------------------------------------------------------- heads (library)


def _pairs(attrs, *names):
    return [tuple(attrs[n]) if isinstance(attrs[n], list | tuple) else (attrs[n],) * 2
            for n in names]


def _lib_matmul(node: Node, ctx: Context) -> Head | None:
    a, b = node.inputs
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) < 2 or len(sb) < 2:
        return None
    out = node.type.shape
    n = len(out)
    if len(sb) == 2:
        M = math.prod(sa[:-1])
        func = ops.matmul(M, sb[1], sa[-1])
        return Head(func, [a, b], (tuple(range(n - 1)), (n - 1,)))
    if sa[:-2] == sb[:-2]:
        batch = math.prod(sa[:-2])
        func = ops.batch_matmul(batch, sa[-2], sb[-1], sa[-1])
        return Head(func, [a, b], (tuple(range(n - 2)), (n - 2,), (n - 1,)))
    return None


def _bias_stage(node: Node, axis: int) -> list[Node]:
    if len(node.inputs) < 3:
        return []
    return [Node(node.name, "bias_add", (node.name, node.inputs[2]), {"axis": axis},
                 node.type)]


def _lib_conv2d(node: Node, ctx: Context) -> Head | None:
    x, w = node.inputs[:2]
    (N, C, H, W), (K, Cg, R, S) = ctx.shape(x), ctx.shape(w)
    stride, padding, dilation = _pairs(node.attrs, "stride", "padding", "dilation")
    groups = node.attrs.get("groups", 1)
    stages = _bias_stage(node, 1)
    if groups == 1:
        func = ops.conv2d_nchw(N, C, H, W, K, R, S, stride, padding, dilation)
    elif groups == C == K and Cg == 1:
        func = ops.depthwise_conv2d_nchw(N, C, H, W, R, S, stride, padding, dilation)
    else:
        return None  # grouped: the model-shaped convolution (lower_more)
    return Head(func, [x, w], identity(4), stages)


def _lib_conv2d_nhwc(node: Node, ctx: Context) -> Head | None:
    x, w = node.inputs[:2]
    (N, H, W, C), (R, S, _, K) = ctx.shape(x), ctx.shape(w)
    stride, padding, dilation = _pairs(node.attrs, "stride", "padding", "dilation")
    func = ops.conv2d_nhwc(N, H, W, C, K, R, S, stride, padding, dilation)
    return Head(func, [x, w], identity(4), _bias_stage(node, 3))


def _lib_pool(node: Node, ctx: Context) -> Head | None:
    (x,) = node.inputs
    N, C, H, W = ctx.shape(x)
    if node.op == "adaptive_avg_pool2d":
        P, Q = node.attrs["output_size"]
        if H % P or W % Q:
            return None  # uneven windows: lower_more's kernel
        kernel = (H // P, W // Q)
        return Head(ops.avg_pool2d(N, C, H, W, kernel, kernel, 0), [x], identity(4))
    kernel, stride, padding = _pairs(node.attrs, "kernel", "stride", "padding")
    factory = ops.max_pool2d if node.op == "max_pool2d" else ops.avg_pool2d
    return Head(factory(N, C, H, W, kernel, stride, padding), [x], identity(4))


def _lib_softmax(node: Node, ctx: Context) -> Head | None:
    shape = ctx.shape(node.inputs[0])
    n = len(shape)
    if node.attrs["axis"] % n != n - 1:
        return None
    func = ops.softmax(math.prod(shape[:-1]), shape[-1])
    return Head(func, [node.inputs[0]], (tuple(range(n - 1)), (n - 1,)))


def _lib_layer_norm(node: Node, ctx: Context) -> Head | None:
    if len(node.inputs) != 3:
        return None
    shape = ctx.shape(node.inputs[0])
    nd, n = node.attrs["ndim"], len(shape)
    func = ops.layernorm(math.prod(shape[:n - nd]), math.prod(shape[n - nd:]),
                         node.attrs["eps"])
    return Head(func, list(node.inputs), (tuple(range(n - nd)), tuple(range(n - nd, n))))


def _lib_rms_norm(node: Node, ctx: Context) -> Head | None:
    """``ops.rmsnorm`` over the rows of the last axis (blocks ``sq_sum``, ``T_rms_norm``)."""
    shape = ctx.shape(node.inputs[0])
    n = len(shape)
    func = ops.rmsnorm(math.prod(shape[:-1]), shape[-1], node.attrs["eps"])
    return Head(func, list(node.inputs), (tuple(range(n - 1)), (n - 1,)))


def _lib_mean(node: Node, ctx: Context) -> Head | None:
    shape = ctx.shape(node.inputs[0])
    n = len(shape)
    axes = sorted({a % n for a in node.attrs["axes"]})
    out_axes = tuple(range(len(node.type.shape)))
    if axes == list(range(n - len(axes), n)):  # trailing axes: a row reduction
        split, axis = n - len(axes), 1
    elif axes == list(range(len(axes))):  # leading axes: a column reduction
        split, axis = len(axes), 0
    else:
        return None
    func = ops.reduce_mean(math.prod(shape[:split]), math.prod(shape[split:]), axis=axis)
    return Head(func, [node.inputs[0]], (out_axes,))


def _lib_sdpa(node: Node, ctx: Context) -> Head | None:
    """``ops.attention``; a fourth input (the mask) becomes its ``mask`` parameter, viewed
    in the attention's four axes (None where it does not broadcast axis group by group)."""
    q, k, v = node.inputs[:3]
    sq, sk, sv = ctx.shape(q), ctx.shape(k), ctx.shape(v)
    if not (sq[:-2] == sk[:-2] == sv[:-2]):
        return None
    n = len(sq)
    L, D, S, E = sq[-2], sq[-1], sk[-2], sv[-1]
    batch, heads = (sq[0], sq[1]) if n == 4 else (1, math.prod(sq[:-2]))
    groups = identity(4) if n == 4 else ((), tuple(range(n - 2)), (n - 2,), (n - 1,))
    mask, mask_shape, mask_dtype = None, None, None
    if len(node.inputs) > 3:
        mask = "bool" if node.attrs.get("mask_kind") == "bool" else "additive"
        mask_dtype = "bool" if ctx.types[node.inputs[3]].dtype == "bool" else "float32"
        if mask_dtype == "bool" and mask != "bool":
            return None
        mask_shape = grouped_operand(ctx.shape(node.inputs[3]), tuple(sq[:-1]) + (S,), groups)
        if mask_shape is None:
            return None
    func = ops.attention(batch, heads, L, D, node.attrs.get("scale"), kv_seq=S,
                         value_dim=E, causal=bool(node.attrs.get("causal", False)),
                         mask=mask, mask_shape=mask_shape, mask_dtype=mask_dtype)
    return Head(func, list(node.inputs), groups)


def _lib_take(node: Node, ctx: Context) -> Head | None:
    """``take``/``gather`` (``workbench.ops.gather``), ``embedding`` as a take along axis 0."""
    x, index = node.inputs
    factory = ops.gather if node.op == "gather" else ops.take
    func = factory(ctx.shape(x), ctx.shape(index), node.attrs.get("axis", 0),
                   wrap=bool(node.attrs.get("wrap", False)),
                   dtype=param_dtype(ctx.types[x].dtype),
                   index_dtype=ctx.types[index].dtype)
    return Head(func, [x, index], identity(len(node.type.shape)))


LIBRARY_HEADS: dict[str, Callable[[Node, Context], Head | None]] = {
    "take": _lib_take, "gather": _lib_take, "embedding": _lib_take,
    "matmul": _lib_matmul, "conv2d": _lib_conv2d, "conv2d_nhwc": _lib_conv2d_nhwc,
    "max_pool2d": _lib_pool, "avg_pool2d": _lib_pool, "adaptive_avg_pool2d": _lib_pool,
    "softmax": _lib_softmax, "layer_norm": _lib_layer_norm, "rms_norm": _lib_rms_norm,
    "mean": _lib_mean,
    "sdpa": _lib_sdpa,
}
"""op -> the library operator viewing the node (None: the node does not fit it)."""


# ---------------------------------------------------------------------------- heads (composed)


def _composed_head(node: Node, ctx: Context) -> Head:
    """The head built with ``FuncBuilder`` in the node's own shapes (identity groups)."""
    build = COMPOSED_HEADS.get(node.op)
    if build is None:
        raise NotImplementedError(f"{node.name}: no lowering for operator {node.op} in this "
                                  "shape")
    fb = FuncBuilder("k_" + node.name)
    inputs = [fb.param(f"in{i}", ctx.shape(name), param_dtype(ctx.types[name].dtype))
              for i, name in enumerate(node.inputs)]
    out = fb.param("T_" + node.op, node.type.shape, param_dtype(node.type.dtype))
    build(fb, node, inputs, out)
    return Head(fb.finish(), list(node.inputs), identity(len(node.type.shape)))


def _matmul_composed(fb: FuncBuilder, node: Node, ins: list[Tensor], out: Tensor) -> None:
    a, b = ins
    K, n = a.shape[-1], len(out.shape)

    def operand(t: Tensor, vs, rows, cols):
        batch = list(vs[:n - 2])
        aligned = batch[len(batch) - (len(t.shape) - 2):] if len(t.shape) > 2 else []
        index = [IntImm(0) if s == 1 else v for s, v in zip(t.shape[:-2], aligned, strict=True)]
        return t[index + [rows, cols]]

    fb.reduce("matmul", out, list(out.shape) + [K], "S" * n + "R", lambda vs: vs[:n],
              const(0.0), lambda acc, vs: acc + operand(a, vs, vs[n - 2], vs[n])
              * operand(b, vs, vs[n], vs[n - 1]))


def _row_reduction(fb: FuncBuilder, name: str, x: Tensor, axes: set[int], init, update):
    """A buffer over ``x``'s non-``axes`` dims (kept with size 1), reduced over ``axes``
    (in float64 when ``x`` is: an integer ``argmax``'s values)."""
    shape = [1 if d in axes else s for d, s in enumerate(x.shape)]
    wide = x.buffer.dtype == "float64"
    buf = fb.alloc(name, shape, "float64" if wide else None)
    if wide and isinstance(init, FloatImm):
        init = const(init.value, "float64")
    kinds = "".join("R" if d in axes else "S" for d in range(len(x.shape)))

    def index(vs):
        return [IntImm(0) if d in axes else v for d, v in enumerate(vs)]

    if "S" not in kinds:  # a full reduction: one spatial iteration (a GPU binds it)
        fb.reduce(name, buf, [1, *x.shape], "S" + kinds, lambda vs: index(vs[1:]), init,
                  lambda acc, vs: update(acc, vs[1:]))
        return buf, index
    fb.reduce(name, buf, x.shape, kinds, index, init, lambda acc, vs: update(acc, vs))
    return buf, index


def max_and_expsum(fb, node, x, prefix: str):
    """The two row reductions of a (log-)softmax over ``node.attrs["axis"]``: the row maximum
    ``{prefix}maxelem`` and ``{prefix}expsum`` = sum of exp(x - max). Returns
    ``(max, expsum, index)``, ``index(vs)`` mapping a point of ``x`` to its row."""
    axes = {node.attrs["axis"] % len(x.shape)}
    mx, index = _row_reduction(fb, f"{prefix}maxelem", x, axes, const(-math.inf),
                               lambda acc, vs: Max(acc, x[vs]))
    sm, _ = _row_reduction(fb, f"{prefix}expsum", x, axes, const(0.0),
                           lambda acc, vs: acc + Call("exp", (x[vs] - mx[index(vs)],)))
    return mx, sm, index


def _softmax_composed(fb, node, ins, out):
    (x,) = ins
    mx, sm, index = max_and_expsum(fb, node, x, "T_softmax_")
    fb.spatial("T_softmax_norm", out,
               lambda vs: Call("exp", (x[vs] - mx[index(vs)],)) / sm[index(vs)])


def _layer_norm_composed(fb, node, ins, out):
    x = ins[0]
    nd, n = node.attrs["ndim"], len(x.shape)
    axes = set(range(n - nd, n))
    inv = const(1.0 / math.prod(x.shape[a] for a in axes))
    ms, index = _row_reduction(fb, "mean_sum", x, axes, const(0.0),
                               lambda acc, vs: acc + x[vs])

    def centred(vs):
        return x[vs] - ms[index(vs)] * inv

    vs_, _ = _row_reduction(fb, "var_sum", x, axes, const(0.0),
                            lambda acc, vs: acc + centred(vs) * centred(vs))

    def value(vs):
        result = centred(vs) * Call("rsqrt", (vs_[index(vs)] * inv + const(node.attrs["eps"]),))
        for t in ins[1:2]:
            result = result * t[vs[n - nd:]]
        for t in ins[2:3]:
            result = result + t[vs[n - nd:]]
        return result

    fb.spatial("T_layer_norm", out, value)


def _mean_composed(fb, node, ins, out):
    (x,) = ins
    n = len(x.shape)
    axes = {a % n for a in node.attrs["axes"]}
    keep = node.attrs.get("keepdims", True)
    total, index = _row_reduction(fb, "A_red", x, axes, const(0.0), lambda acc, vs: acc + x[vs])
    inv = const(1.0 / math.prod(x.shape[a] for a in axes))

    def value(vs):
        if keep:
            return total[vs] * inv
        it = iter(vs)
        return total[[IntImm(0) if d in axes else next(it) for d in range(n)]] * inv

    fb.spatial("T_divide", out, value)


def _transpose(fb, node, ins, out):
    perm = node.attrs["perm"]

    def value(vs):
        src = [None] * len(perm)
        for i, p in enumerate(perm):
            src[p] = vs[i]
        return ins[0][src]

    fb.spatial("T_transpose", out, value)


def _select(fb, node, ins, out):
    axis, index = node.attrs["axis"], node.attrs["index"]
    fb.spatial("T_select", out, lambda vs: ins[0][list(vs[:axis]) + [IntImm(index)]
                                                  + list(vs[axis:])])


def _broadcast_to(fb, node, ins, out):
    fb.spatial("T_broadcast_to", out, lambda vs: bcast(ins[0], vs))


# the heads of the frontend's wider opset (they use the helpers above)
from workbench.graph.lower_im2col import IM2COL_COMPOSED_HEADS  # noqa: E402
from workbench.graph.lower_more import MORE_COMPOSED_HEADS  # noqa: E402
from workbench.graph.lower_packed import PACKED_COMPOSED_HEADS, PACKED_HEADS  # noqa: E402

LIBRARY_HEADS.update(PACKED_HEADS)

COMPOSED_HEADS = {
    "matmul": _matmul_composed, "softmax": _softmax_composed,
    "layer_norm": _layer_norm_composed, "mean": _mean_composed, "transpose": _transpose,
    "select": _select, "broadcast_to": _broadcast_to,
    **MORE_COMPOSED_HEADS, **PACKED_COMPOSED_HEADS, **IM2COL_COMPOSED_HEADS,
}


# ---------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class KernelLowering:
    """A kernel's PrimFunc and, per parameter, the value bound to it and its viewed shape."""

    func: PrimFunc
    inputs: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]  # every parameter's shape, the output's last


def _elementwise_kernel(name: str, members: list[Node], ctx: Context,
                        out: TensorType) -> KernelLowering:
    """A chain of elementwise operators: one block (``FuncBuilder``)."""
    epilogue = Epilogue(members, None, ctx, out, identity(len(out.shape)))
    fb = FuncBuilder(name)
    tensors = [fb.param(f"in{i}", shape, param_dtype(ctx.types[value].dtype))
               for i, (value, shape) in enumerate(epilogue.params)]
    result = fb.param("out", out.shape, param_dtype(out.dtype))

    def value(vs):
        expr = epilogue.value(None, vs, tensors)
        return expr if expr.dtype == result.buffer.dtype else Cast(result.buffer.dtype, expr)

    fb.spatial("out", result, value)
    return KernelLowering(fb.finish(), tuple(v for v, _ in epilogue.params),
                          tuple(s for _, s in epilogue.params) + (out.shape,))


def _with_epilogue(name: str, head: Head, head_node: Node, rest: list[Node], ctx: Context,
                   out: TensorType) -> KernelLowering:
    members = head.stages + rest
    epilogue = Epilogue(members, head_node.name, ctx, out, head.groups)
    func = head.func
    if members:
        operands = [(f"e{i}", shape) for i, (_, shape) in enumerate(epilogue.params)]
        dtypes = [param_dtype(ctx.types[v].dtype) for v, _ in epilogue.params]
        func = append_epilogue(func, operands, epilogue.value, block="out", out="out",
                               dtypes=dtypes, out_dtype=param_dtype(out.dtype))
    func = func.replace(name=name)
    inputs = tuple(head.inputs) + tuple(v for v, _ in epilogue.params)
    return KernelLowering(func, inputs, tuple(p.shape for p in func.params))


def lower_members(name: str, members: list[Node], types: dict[str, TensorType],
                  scalars: dict[str, np.ndarray], out: TensorType) -> KernelLowering:
    """The kernel computing the chain ``members`` (a head and its elementwise epilogue)."""
    ctx = Context(types, scalars)
    head_node, rest = members[0], members[1:]
    if kind(head_node.op) == "elementwise":
        return _elementwise_kernel(name, members, ctx, out)
    library = LIBRARY_HEADS.get(head_node.op)
    head = library(head_node, ctx) if library is not None else None
    if head is not None:
        try:
            return _with_epilogue(name, head, head_node, rest, ctx, out)
        except _NotGroupable:
            pass  # an operand broadcasts along a merged axis: use the model-shaped form
    if head_node.op in LIBRARY_HEADS and head_node.op not in COMPOSED_HEADS:
        raise NotImplementedError(f"{head_node.name}: {head_node.op} with these shapes has no "
                                  "lowering (the library operator does not fit them)")
    head = _composed_head(head_node, ctx)
    head.stages = []
    return _with_epilogue(name, head, head_node, rest, ctx, out)


__all__ = ["KernelLowering", "LIBRARY_HEADS", "COMPOSED_HEADS", "lower_members",
           "elementwise_value", "grouped_operand"]
