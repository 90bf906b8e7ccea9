"""``sink_transposes``: a transpose moved below the elementwise ops and ``rotate_half`` that
read it, down to where ``fold_views`` folds it into the attention's loads.

Llama (Mistral, Qwen...) transposes each query and key projection to ``(B, H, T, D)`` and
then rotates it (``q * cos + rotate_half(q) * sin``) before the attention: the transpose is a
kernel copying the whole tensor, and ``fold_views`` cannot fold it (its readers are the
rotary's kernels, not ``sdpa``). Elementwise ops and ``rotate_half`` (which works along the
last axis) commute with a transpose that keeps the last axis: ::

    op(transpose(a, p), b)  ==  transpose(op(a, transpose(b, p^-1)), p)

where ``b`` is a number, a constant (transposed now), a value whose transpose is a reshape
(only axes of size 1 move: the rotary's ``cos`` and ``sin`` of shape ``(1, 1, T, D)``) or the
same transpose of another value (read at its source). A transpose moves when every reader
of it can take it; the moves repeat until none applies. The result is kept only where it
leaves fewer transposes once ``fold_views`` has folded what it can (Llama: none around the
rotary, two kernels a layer fewer); otherwise the graph is returned as it was.

Example
-------
>>> from workbench.graph.builder import GraphBuilder
>>> from workbench.graph.ir import TensorType
>>> from workbench.graph.passes.fold_views import fold_views
>>> b = GraphBuilder()
>>> x, y = b.input("x", TensorType((1, 5, 2, 4))), b.input("y", TensorType((1, 5, 2, 4)))
>>> cos, sin = b.input("cos", TensorType((1, 1, 5, 4))), b.input("sin", TensorType((5, 4)))
>>> q = b.node("transpose", [x], dict(perm=[0, 2, 1, 3]))      # (1, 2, 5, 4)
>>> k = b.node("transpose", [y], dict(perm=[0, 2, 1, 3]))
>>> rotated = b.node("add", [b.node("mul", [q, cos]),
...                          b.node("mul", [b.node("rotate_half", [q]), sin])])
>>> g = sink_transposes(b.finish([b.node("sdpa", [rotated, k, k])]))
>>> [n.op for n in fold_views(g).nodes]  # cos and sin read through reshapes (views)
['reshape', 'mul', 'rotate_half', 'reshape', 'mul', 'add', 'sdpa']
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import kind
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.epilogues import _AXIS_OPS

_LAST_AXIS_OPS = ("rotate_half",)
"""Layout ops along the last axis only: they commute with a transpose that keeps it."""


def _perm(graph: Graph, name: str) -> tuple[str, list[int]] | None:
    """``(source, perm)`` where ``name`` is a transpose's value."""
    node = graph.producer(name)
    if node is None or node.op != "transpose":
        return None
    return node.inputs[0], [int(p) for p in node.attrs["perm"]]


def _inverse(perm: list[int]) -> list[int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def _operand(graph: Graph, name: str, perm: list[int], constants: dict,
             added: list[Node], where: str) -> str | None:
    """``name`` (an operand of an op reading ``transpose(a, perm)``) as the same op on ``a``
    reads it (module docstring), or None where it cannot be."""
    rank, shape = len(perm), graph.type_of(name).shape
    if int(np.prod(shape)) == 1:
        return name
    moved = _perm(graph, name)
    if moved is not None and moved[1] == perm:
        return moved[0]
    if len(shape) > rank:
        return None
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    inverse = _inverse(perm)
    target = tuple(padded[i] for i in inverse)
    if name in constants:
        array = constants[name].reshape(padded).transpose(inverse)
        constants[f"{name}_{where}"] = np.ascontiguousarray(array)
        return f"{name}_{where}"
    kept = [axis for axis in inverse if padded[axis] != 1]
    if kept != sorted(kept):
        return None  # a real transpose of the operand: a kernel of its own
    added.append(Node(f"{name}_{where}", "reshape", (name,), {"shape": list(target)},
                      TensorType(target, graph.type_of(name).dtype)))
    return added[-1].name


def _moved(graph: Graph, node: Node, transposed: str, perm: list[int],
           constants: dict) -> list[Node] | None:
    """``node`` (a reader of the transpose ``transposed``) computed before the transpose and
    transposed after (module docstring), or None where it cannot be."""
    rank = len(perm)
    if len(node.type.shape) != rank or node.type.shape != graph.type_of(transposed).shape:
        return None
    if node.op in _LAST_AXIS_OPS:
        if perm[-1] != rank - 1:
            return None
    elif kind(node.op) != "elementwise" or node.op in _AXIS_OPS or "views" in node.attrs:
        return None
    added: list[Node] = []
    inputs = []
    for position, name in enumerate(node.inputs):
        operand = _operand(graph, name, perm, constants, added, f"{node.name}_in{position}")
        if operand is None:
            return None
        inputs.append(operand)
    inner_shape = tuple(node.type.shape[i] for i in _inverse(perm))
    inner = node.replace(name=f"{node.name}_inner", inputs=tuple(inputs),
                         type=TensorType(inner_shape, node.type.dtype))
    return [*added, inner, Node(node.name, "transpose", (inner.name,), {"perm": perm},
                                node.type, node.source)]


def _sink_one(graph: Graph) -> Graph | None:
    """The graph with one transpose moved below all its readers, or None where none moves."""
    users = graph.consumers()
    for node in graph.nodes:
        if node.op != "transpose" or node.name in graph.outputs:
            continue
        perm = [int(p) for p in node.attrs["perm"]]
        constants = dict(graph.constants)
        rewritten = {}
        for reader in users.get(node.name, []):
            nodes = _moved(graph, reader, node.name, perm, constants)
            if nodes is None:
                break
            rewritten[reader.name] = nodes
        else:
            if not rewritten:
                continue
            out = [m for n in graph.nodes for m in rewritten.get(n.name, [n])]
            return eliminate_dead_code(graph.replace(nodes=tuple(out), constants=constants))
    return None


def _transposes(graph: Graph) -> int:
    from workbench.graph.passes.fold_views import fold_views

    return sum(n.op == "transpose" for n in fold_views(graph).nodes)


def sink_transposes(graph: Graph) -> Graph:
    """Move transposes below their elementwise and ``rotate_half`` readers (module
    docstring); ``graph`` itself where that does not leave fewer transposes after
    ``fold_views``."""
    moved, steps = graph, 0
    while steps < 4 * len(graph.nodes) + 4:  # every move takes a transpose one node down
        step = _sink_one(moved)
        if step is None:
            break
        moved, steps = step, steps + 1
    if moved is graph or _transposes(moved) >= _transposes(graph):
        return graph
    return moved


__all__ = ["sink_transposes"]
