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


__all__ = ["FOLDABLE", "fold_layout", "index_map", "redirect_param"]
