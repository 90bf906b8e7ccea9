"""Layout producers folded into the kernels that read them (TVM's ``compute_inline`` of an
injective producer, done on the lowered kernels).

A ``transpose`` or ``select`` node is pure data movement: ``y[i, j] = x[j, i]``. When every
reader of its value is a kernel that sees the value in the value's own shape, each reader
can load ``x[j, i]`` where it loaded ``y[i, j]``, and the layout node needs no kernel and
no pass over memory. In a transformer block this removes the ``permute`` and the three
``select`` kernels between the QKV projection and the attention: the attention kernel
reads Q, K and V straight out of the projection's output.

Nodes are folded consumers first (a ``select`` of a ``permute`` folds the ``select``, then
the ``permute``), so chains fold completely.
"""

from __future__ import annotations

import dataclasses
import math

from workbench.graph.ir import Graph, Node
from workbench.ir.buffer import Buffer
from workbench.ir.expr import BufferLoad, IntImm, PrimExpr
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRMapper
from workbench.ir.regions import block_access_regions

FOLDABLE = ("transpose", "select")


def index_map(node: Node):
    """``f(indices into node's output) -> indices into its input``."""
    if node.op == "transpose":
        perm = node.attrs["perm"]

        def transpose(index: list[PrimExpr]) -> list[PrimExpr]:
            source: list[PrimExpr] = [IntImm(0)] * len(perm)
            for i, p in enumerate(perm):
                source[p] = index[i]
            return source
        return transpose
    axis, chosen = node.attrs["axis"], node.attrs["index"]
    return lambda index: list(index[:axis]) + [IntImm(chosen)] + list(index[axis:])


class _Redirect(IRMapper):
    """Loads of ``old`` become loads of ``new`` at ``mapping(indices)``; blocks touched get
    their read regions inferred again."""

    def __init__(self, old: Buffer, new: Buffer, mapping):
        self.old, self.new, self.mapping = old, new, mapping

    def visit_BufferLoad(self, node):
        node = self.generic_visit(node)
        if node.buffer != self.old:
            return node
        return BufferLoad(self.new, tuple(self.mapping(list(node.indices))))

    def visit_BufferStore(self, node):
        node = self.generic_visit(node)
        if node.buffer != self.old:
            return node
        return node.replace(buffer=self.new, indices=tuple(self.mapping(list(node.indices))))

    def visit_Block(self, node):
        new = self.generic_visit(node)
        if new is node or node.name == "root":
            return new
        reads, writes = block_access_regions(new.body, new.init, new.alloc_buffers)
        return new.replace(reads=reads, writes=writes)


def redirect_param(func: PrimFunc, index: int, shape: tuple[int, ...], mapping) -> PrimFunc:
    """``func`` whose parameter ``index`` now holds the producer's input (of ``shape``),
    read at ``mapping(indices)``."""
    old = func.params[index]
    new = Buffer(old.name, tuple(shape), old.dtype, old.scope)
    body = _Redirect(old, new, mapping).visit(func.body)
    params = func.params[:index] + (new,) + func.params[index + 1:]
    return func.replace(params=params, body=body)


def step_shape(op: str, attrs: dict, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of layout op ``op`` applied to a value of ``shape``."""
    shape = tuple(shape)
    if op == "transpose":
        return tuple(shape[p] for p in attrs["perm"])
    if op == "slice":
        axis = attrs.get("axis", 0) % len(shape)
        start, stop, step = attrs.get("start", 0), attrs.get("stop", 0), attrs.get("step", 1)
        return shape[:axis] + (len(range(start, stop, step)),) + shape[axis + 1:]
    if op == "select":
        axis = attrs.get("axis", 0) % len(shape)
        return shape[:axis] + shape[axis + 1:]
    target = [int(d) for d in attrs["shape"]]
    if op == "reshape" and -1 in target:
        known = math.prod(d for d in target if d != -1)
        target[target.index(-1)] = math.prod(shape) // known
    return tuple(target)


def _reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]):
    """Axis groups ``(source axes, reshaped axes)`` of equal sizes, in order."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        a, b, pa, pb = [], [], 1, 1
        if i < len(src):
            a, pa, i = [i], src[i], i + 1
        if j < len(dst):
            b, pb, j = [j], dst[j], j + 1
        while pa != pb:
            if pa < pb:
                a.append(i)
                pa, i = pa * src[i], i + 1
            else:
                b.append(j)
                pb, j = pb * dst[j], j + 1
        groups.append((a, b))
    return groups


def step_map(op: str, attrs: dict, in_shape: tuple[int, ...]):
    """``f(indices into op's output) -> indices into its input`` for layout op ``op``
    applied to a value of ``in_shape`` (``reshape`` splits and merges axes group by group:
    a split is linear, a merge divides)."""
    out_shape = step_shape(op, attrs, in_shape)
    n = len(in_shape)
    if op == "transpose":
        return index_map(Node("t", "transpose", ("x",), {"perm": list(attrs["perm"])}))
    if op == "select":
        return index_map(Node("s", "select", ("x",), {"axis": attrs.get("axis", 0) % n,
                                                       "index": attrs.get("index", 0)}))
    if op == "slice":
        axis, start, step = attrs.get("axis", 0) % n, attrs.get("start", 0), \
            attrs.get("step", 1)
        return lambda index: (list(index[:axis]) + [index[axis] * step + start]
                              + list(index[axis + 1:]))
    if op == "broadcast_to":
        lead = len(out_shape) - n
        return lambda index: [IntImm(0) if in_shape[a] == 1 and out_shape[a + lead] != 1
                              else index[a + lead] for a in range(n)]
    groups = _reshape_groups(tuple(in_shape), out_shape)

    def reshape(index):
        source: list[PrimExpr] = [IntImm(0)] * n
        for src_axes, dst_axes in groups:
            linear: PrimExpr = IntImm(0)
            for a in dst_axes:
                linear = linear * out_shape[a] + index[a]
            stride = math.prod(in_shape[a] for a in src_axes)
            for a in src_axes:
                stride //= in_shape[a]
                source[a] = linear // stride % in_shape[a] if len(src_axes) > 1 else linear
        return source
    return reshape


def lower_viewed(graph: Graph, node: Node, lower):
    """``lower(graph, node)`` for a node carrying ``views``/``out_perm``
    (``workbench.graph.passes.fold_views``): the node is lowered on its logical inputs and
    output, then each viewed parameter is redirected to its source through the chain's
    composed index map and the output's stores to their transposed position."""
    from workbench.graph.ir import TensorType
    from workbench.graph.ops import VIEW_ATTRS
    from workbench.ir.arith import simplify_stmt

    views = {int(p): steps for p, steps in node.attrs.get("views", ())}
    perm = node.attrs.get("out_perm")
    maps, extra, inputs = {}, {}, list(node.inputs)
    for position, steps in views.items():
        source = node.inputs[position]
        shape, chain = graph.type_of(source).shape, []
        for op, attrs in steps:
            chain.append(step_map(op, attrs, shape))
            shape = step_shape(op, attrs, shape)
        inputs[position] = f"{source}__view{position}"
        extra[inputs[position]] = TensorType(shape, graph.type_of(source).dtype)
        maps[inputs[position]] = (source, shape, chain)
    out_type = node.type
    if perm is not None:
        logical = [0] * len(perm)
        for k, p in enumerate(perm):
            logical[p] = node.type.shape[k]
        out_type = TensorType(tuple(logical), node.type.dtype)
    plain = node.replace(inputs=tuple(inputs), type=out_type,
                         attrs={k: v for k, v in node.attrs.items() if k not in VIEW_ATTRS})
    kernel = lower(graph.replace(inputs={**graph.inputs, **extra}), plain)
    func, names, shapes = kernel.func, list(kernel.inputs), list(kernel.shapes)
    for q, name in enumerate(kernel.inputs):
        if name not in maps:
            continue
        source, shape, chain = maps[name]
        if tuple(shapes[q]) != tuple(shape):
            raise NotImplementedError(f"{node.name}: input {q} is viewed in {shapes[q]}, "
                                      f"not in its own shape {shape}: views cannot fold")

        def composed(index, chain=chain):
            for mapping in reversed(chain):
                index = mapping(index)
            return index
        func = redirect_param(func, q, graph.type_of(source).shape, composed)
        names[q], shapes[q] = source, graph.type_of(source).shape
    if perm is not None:
        if tuple(shapes[-1]) != out_type.shape:
            raise NotImplementedError(f"{node.name}: the output is viewed in {shapes[-1]}: "
                                      "out_perm cannot fold")
        func = redirect_param(func, len(func.params) - 1, node.type.shape,
                              lambda index: [index[p] for p in perm])
        shapes[-1] = node.type.shape
    func = simplify_stmt(func)
    return dataclasses.replace(kernel, node=node.name, func=func, inputs=tuple(names),
                               shapes=tuple(shapes), source=func.script())


def fold_layout(graph: Graph, kernels: list) -> list:
    """``kernels`` (``LoweredKernel``, in graph order) with every foldable layout node folded
    into its readers and its own kernel dropped."""
    by_node = {k.node: k for k in kernels}
    users = {name: list({n.name: n for n in nodes}.values())
             for name, nodes in graph.consumers().items()}
    for node in reversed(graph.nodes):
        if node.op not in FOLDABLE or node.name in graph.outputs or node.name not in by_node:
            continue
        readers = users.get(node.name, [])
        if not readers or any(r.name not in by_node for r in readers):
            continue  # read by a view, or by a node already folded away
        if not all(_sees_whole(by_node[r.name], node) for r in readers):
            continue
        source = node.inputs[0]
        shape = graph.type_of(source).shape
        mapping = index_map(node)
        for reader in readers:
            kernel = by_node[reader.name]
            func, inputs, shapes = kernel.func, list(kernel.inputs), list(kernel.shapes)
            for p, value in enumerate(kernel.inputs):
                if value == node.name:
                    func = redirect_param(func, p, shape, mapping)
                    inputs[p], shapes[p] = source, tuple(shape)
            by_node[reader.name] = dataclasses.replace(
                kernel, func=func, inputs=tuple(inputs), shapes=tuple(shapes),
                source=func.script())
        del by_node[node.name]
        others = [u for u in users.get(source, []) if u is not node]
        users[source] = list({n.name: n for n in others + readers}.values())
    return [by_node[k.node] for k in kernels if k.node in by_node]


def _sees_whole(kernel, node: Node) -> bool:
    """Every parameter of ``kernel`` bound to ``node``'s value views it in its own shape."""
    return all(shape == node.type.shape
               for value, shape in zip(kernel.inputs, kernel.shapes, strict=False)
               if value == node.name)


__all__ = ["FOLDABLE", "fold_layout", "index_map", "lower_viewed", "redirect_param",
           "step_map", "step_shape"]
