"""Algebraic simplification: identities that remove a node.

- ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` (constant operand of zeros / ones that does not
  broadcast ``x`` to a larger shape) -> ``x``
- ``reshape`` to the same shape, ``transpose`` by the identity permutation -> ``x``
- ``reshape(reshape(x))`` -> ``reshape(x)``; ``transpose(transpose(x, p), q)`` ->
  ``transpose(x, p[q])`` (and so cancelling transposes vanish)
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node
from workbench.graph.passes.dce import eliminate_dead_code

_NEUTRAL = {"add": (0.0, (0, 1)), "sub": (0.0, (1,)), "mul": (1.0, (0, 1)), "div": (1.0, (1,))}


def _forward(graph: Graph, node: Node) -> str | None:
    """The value ``node`` equals, when it is an identity; else None."""
    if node.op in _NEUTRAL:
        neutral, positions = _NEUTRAL[node.op]
        for pos in positions:
            other = node.inputs[1 - pos]
            const = graph.constants.get(node.inputs[pos])
            if const is not None and np.all(const == neutral) and \
                    graph.type_of(other).shape == node.type.shape:
                return other
    if node.op == "reshape" and graph.type_of(node.inputs[0]).shape == node.type.shape:
        return node.inputs[0]
    if node.op == "transpose" and list(node.attrs["perm"]) == sorted(node.attrs["perm"]):
        return node.inputs[0]
    return None


def _combine(graph: Graph, node: Node) -> Node | None:
    """``node`` applied directly to its producer's input, when two layout ops compose."""
    inner = graph.producer(node.inputs[0]) if node.inputs else None
    if inner is None or inner.op != node.op or node.op not in ("reshape", "transpose"):
        return None
    if node.op == "reshape":
        return node.replace(inputs=inner.inputs)
    p, q = inner.attrs["perm"], node.attrs["perm"]
    return node.replace(inputs=inner.inputs, attrs={"perm": [p[i] for i in q]})


def simplify(graph: Graph) -> Graph:
    """Apply the identities until none applies.

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> g = Graph(inputs={"x": TensorType((2, 3))}, nodes=(
    ...     Node("a", "transpose", ("x",), {"perm": [1, 0]}, TensorType((3, 2))),
    ...     Node("b", "transpose", ("a",), {"perm": [1, 0]}, TensorType((2, 3))),
    ...     Node("c", "relu", ("b",), {}, TensorType((2, 3)))), outputs=("c",))
    >>> print(simplify(g).nodes)  # doctest: +ELLIPSIS
    (Node(name='c', op='relu', inputs=('x',), ...),)
    """
    changed = True
    while changed:
        changed = False
        renamed: dict[str, str] = {}
        nodes = []
        for node in graph.nodes:
            node = node.replace(inputs=tuple(renamed.get(i, i) for i in node.inputs))
            current = graph.replace(nodes=tuple(nodes))
            combined = _combine(current, node)
            if combined is not None:
                node, changed = combined, True
            target = _forward(current, node)
            if target is not None and node.name not in graph.outputs:
                renamed[node.name] = target
                changed = True
                continue
            nodes.append(node)
        outputs = tuple(renamed.get(o, o) for o in graph.outputs)
        graph = eliminate_dead_code(graph.replace(nodes=tuple(nodes), outputs=outputs))
    return graph
