"""``match_rotate_half``: the rotary embedding's ``rotate_half`` written out, as one operator.

Llama, Mistral, Qwen and GPT-NeoX rotate the query and key heads with ::

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    q_embed = (q * cos) + (rotate_half(q) * sin)

which the frontends import as two ``slice`` nodes, a ``neg`` and a ``concat``: four kernels,
each a pass over the heads. ``match_rotate_half`` replaces the ``concat`` by
``rotate_half(x)`` (``ops.rotate_half``, a layout operator that reads one element of ``x`` per
output element); the slices and the negation go (dead code). Its group then hosts the
elementwise epilogue (``passes.fusion``): ``rotate_half(q) * sin + q * cos`` is one kernel.

Example
-------
>>> import torch
>>> from workbench.graph import from_torch
>>> class Rotate(torch.nn.Module):
...     def forward(self, x):
...         x1, x2 = x[..., :4], x[..., 4:]
...         return torch.cat((-x2, x1), dim=-1)
>>> g = match_rotate_half(from_torch(Rotate(), (torch.randn(2, 8),)))
>>> [(n.op, n.inputs) for n in g.nodes]
[('rotate_half', ('x',))]
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node
from workbench.graph.passes.dce import eliminate_dead_code


def _half_of(graph: Graph, name: str) -> tuple[str, int, int] | None:
    """``(x, start, stop)`` where ``name`` is a step-1 slice of ``x`` along its last axis."""
    node = graph.producer(name)
    if node is None or node.op != "slice":
        return None
    x = node.inputs[0]
    rank = len(graph.type_of(x).shape)
    if node.attrs.get("step", 1) != 1 or node.attrs["axis"] % rank != rank - 1:
        return None
    return x, node.attrs["start"], node.attrs["stop"]


def rotated_input(graph: Graph, node: Node) -> str | None:
    """The ``x`` of which ``node`` is ``concat(-x[..., h:], x[..., :h])`` along the last
    axis (floating point, an even last axis), or None. The slices and the negation may have
    other readers (they then stay)."""
    if node.op != "concat" or len(node.inputs) != 2 or \
            np.dtype(node.type.dtype).kind != "f":
        return None
    rank = len(node.type.shape)
    if rank == 0 or node.attrs.get("axis", 0) % rank != rank - 1:
        return None
    negated = graph.producer(node.inputs[0])
    if negated is None or negated.op != "neg":
        return None
    second, first = _half_of(graph, negated.inputs[0]), _half_of(graph, node.inputs[1])
    if second is None or first is None or second[0] != first[0]:
        return None
    x, extent = first[0], graph.type_of(first[0]).shape[-1]
    half = extent // 2
    if extent % 2 or first[1:] != (0, half) or second[1:] != (half, extent):
        return None
    return x


def match_rotate_half(graph: Graph) -> Graph:
    """Replace each written-out ``rotate_half`` by the operator (module docstring)."""
    nodes, changed = [], False
    for node in graph.nodes:
        x = rotated_input(graph, node)
        if x is not None:
            node = Node(node.name, "rotate_half", (x,), {}, node.type, node.source)
            changed = True
        nodes.append(node)
    if not changed:
        return graph
    return eliminate_dead_code(graph.replace(nodes=tuple(nodes)))


__all__ = ["match_rotate_half", "rotated_input"]
