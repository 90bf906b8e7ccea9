"""Transposes moved below the ops that commute with them: one mechanism (``sink``), three
policies (``Sinking``): the attention's (``sink_transposes``), the GPU's CNHW convolution
layout (``conv_gemm``) and the NHWC convolution layout (``layout.convert_layout_nhwc``).

An op that works on each element, along the last axis only (``rotate_half``), or on each
``(h, w)`` plane alone (the pools) commutes with a transpose that keeps those axes: ::

    op(transpose(a, p), b)  ==  transpose(op(a, transpose(b, p^-1)), p)

where ``b`` is a number, a constant (transposed now), a value whose transpose is a reshape
(only axes of size 1 move: the rotary's ``cos`` and ``sin`` of shape ``(1, 1, T, D)``), the
same transpose of another value (read at its source), or, where the policy allows it, any
value of the same rank with a transpose of its own inserted (pinned: it never moves a reader
itself, else ``op(a, transpose(b))`` would move back without end). A layout adds its own
readers (``Sinking.readers``: the CNHW layout's depthwise convolution). Moves repeat, each
followed by ``simplify`` (where two transposes meet they compose, cancelling ones vanish),
until none applies.

``sink_transposes`` (both layout hooks, before ``fold_views``): Llama (Mistral, Qwen...)
transposes each query and key projection to ``(B, H, T, D)`` and then rotates it (``q * cos +
rotate_half(q) * sin``) before the attention; ``fold_views`` cannot fold that transpose (its
readers are the rotary's kernels, not ``sdpa``). Any transpose moves below all its readers;
the result is kept only where it leaves fewer transposes once ``fold_views`` has folded what
it can (Llama: none around the rotary, two kernels a layer fewer).

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

import dataclasses
from collections.abc import Callable

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import VIEW_ATTRS, kind
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.epilogues import _AXIS_OPS
from workbench.graph.passes.simplify import simplify

LAST_AXIS_OPS = ("rotate_half",)
"""Layout ops along the last axis only: they commute with a transpose that keeps it."""
PLANE_OPS = ("max_pool2d", "avg_pool2d", "adaptive_avg_pool2d")
"""Ops on each ``(h, w)`` plane alone: they commute with a transpose that keeps the last two
axes (NCHW <-> CNHW)."""

Reader = Callable[[Graph, Node, str, list, dict], "list[Node] | None"]
"""A layout's rule for a reader the mechanism does not move itself: ``(graph, reader, the
transposed value, perm, constants)`` -> the nodes replacing the reader (ending in a node of
the reader's name), or None."""


@dataclasses.dataclass(frozen=True)
class Sinking:
    """A policy of ``sink``: which transposes move, and how."""

    perm: tuple[int, ...] | None = None
    """Only transposes by this permutation move (None: any)."""
    single_reader: bool = False
    """Only a transpose read once moves (else: one that every reader can take)."""
    operand_transposes: bool = False
    """A reader's other operand that needs a real transpose gets one inserted (pinned) rather
    than refusing the move."""
    readers: Reader | None = None
    """The layout's own reader rule, tried before the mechanism's."""


def _perm(graph: Graph, name: str) -> tuple[str, list[int]] | None:
    """``(source, perm)`` where ``name`` is a transpose's value."""
    node = graph.producer(name)
    if node is None or node.op != "transpose":
        return None
    return node.inputs[0], [int(p) for p in node.attrs["perm"]]


def inverse(perm: list[int]) -> list[int]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


def _operand(graph: Graph, name: str, perm: list[int], constants: dict, added: list[Node],
             where: str, policy: Sinking, pinned: set[str]) -> str | None:
    """``name`` (an operand of an op reading ``transpose(a, perm)``) as the same op on ``a``
    reads it (module docstring), or None where it cannot be."""
    rank, operand = len(perm), graph.type_of(name)
    shape = operand.shape
    if int(np.prod(shape)) == 1:
        return name
    moved = _perm(graph, name)
    if moved is not None and moved[1] == perm:
        return moved[0]
    if len(shape) > rank:
        return None
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    back = inverse(perm)
    target = tuple(padded[i] for i in back)
    if name in constants:
        array = constants[name].reshape(padded).transpose(back)
        constants[f"{name}_{where}"] = np.ascontiguousarray(array)
        return f"{name}_{where}"
    kept = [axis for axis in back if padded[axis] != 1]
    if kept == sorted(kept):  # only axes of size 1 move: a view
        added.append(Node(f"{name}_{where}", "reshape", (name,), {"shape": list(target)},
                          TensorType(target, operand.dtype)))
    elif policy.operand_transposes and len(shape) == rank:
        added.append(Node(f"{name}_{where}", "transpose", (name,), {"perm": back},
                          TensorType(target, operand.dtype)))
        pinned.add(added[-1].name)
    else:
        return None
    return added[-1].name


def _commutes(graph: Graph, node: Node, transposed: str, perm: list[int]) -> bool:
    """Whether ``node``, reading the transpose ``transposed``, commutes with it."""
    rank = len(perm)
    if len(node.type.shape) != rank or any(key in node.attrs for key in VIEW_ATTRS):
        return False
    if node.op in PLANE_OPS:
        return len(node.inputs) == 1 and perm[-2:] == [rank - 2, rank - 1]
    if node.type.shape != graph.type_of(transposed).shape:
        return False  # the transposed value broadcast: not one element each
    if node.op in LAST_AXIS_OPS:
        return perm[-1] == rank - 1
    return kind(node.op) == "elementwise" and node.op not in _AXIS_OPS


def _moved(graph: Graph, node: Node, transposed: str, perm: list[int], constants: dict,
           policy: Sinking, pinned: set[str]) -> list[Node] | None:
    """``node`` (a reader of the transpose ``transposed``) computed before the transpose and
    transposed after (module docstring), or None where it cannot be."""
    if policy.readers is not None:
        nodes = policy.readers(graph, node, transposed, perm, constants)
        if nodes is not None:
            return nodes
    if not _commutes(graph, node, transposed, perm):
        return None
    added: list[Node] = []
    inputs = []
    for position, name in enumerate(node.inputs):
        operand = _operand(graph, name, perm, constants, added, f"{node.name}_in{position}",
                           policy, pinned)
        if operand is None:
            return None
        inputs.append(operand)
    inner_shape = tuple(node.type.shape[i] for i in inverse(perm))
    inner = node.replace(name=f"{node.name}_inner", inputs=tuple(inputs),
                         type=TensorType(inner_shape, node.type.dtype))
    return [*added, inner, Node(node.name, "transpose", (inner.name,), {"perm": perm},
                                node.type, node.source)]


def _sink_one(graph: Graph, policy: Sinking, pinned: set[str]) -> Graph | None:
    """The graph with one transpose moved below all its readers, or None where none moves."""
    users = graph.consumers()
    for node in graph.nodes:
        if node.op != "transpose" or node.name in graph.outputs or node.name in pinned:
            continue
        perm = [int(p) for p in node.attrs["perm"]]
        readers = users.get(node.name, [])
        if policy.perm is not None and perm != list(policy.perm) or not readers or \
                policy.single_reader and len(readers) != 1:
            continue
        constants, inserted = dict(graph.constants), set()
        rewritten = {}
        for reader in readers:
            nodes = _moved(graph, reader, node.name, perm, constants, policy, inserted)
            if nodes is None:
                break
            rewritten[reader.name] = nodes
        else:
            pinned |= inserted
            out = [m for n in graph.nodes for m in rewritten.get(n.name, [n])]
            return simplify(graph.replace(nodes=tuple(out), constants=constants))
    return None


def sink(graph: Graph, policy: Sinking = Sinking()) -> Graph:
    """Every transpose ``policy`` lets move, moved below its readers, one at a time until
    none moves (module docstring); dead nodes removed; ``graph`` itself where none moves."""
    pinned: set[str] = set()
    moved = graph
    for _ in range(4 * len(graph.nodes) + 4):  # every move takes a transpose one node down
        step = _sink_one(moved, policy, pinned)
        if step is None:
            break
        moved = step
    return graph if moved is graph else eliminate_dead_code(moved)


def _transposes(graph: Graph) -> int:
    from workbench.graph.passes.fold_views import fold_views

    return sum(n.op == "transpose" for n in fold_views(graph).nodes)


def sink_transposes(graph: Graph) -> Graph:
    """Move transposes below their readers (module docstring); ``graph`` itself where that
    does not leave fewer transposes after ``fold_views``."""
    moved = sink(graph)
    if moved is graph or _transposes(moved) >= _transposes(graph):
        return graph
    return moved


__all__ = ["LAST_AXIS_OPS", "PLANE_OPS", "Sinking", "inverse", "sink", "sink_transposes"]
