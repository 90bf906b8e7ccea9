"""Dead-code elimination: drop nodes and constants no output depends on."""

from __future__ import annotations

from workbench.graph.ir import Graph


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keep only the nodes (and constants) that the outputs need; inputs always stay.

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> t = TensorType((2,))
    >>> g = Graph(inputs={"x": t}, nodes=(Node("a", "relu", ("x",), {}, t),
    ...                                   Node("b", "exp", ("x",), {}, t)), outputs=("a",))
    >>> [n.name for n in eliminate_dead_code(g).nodes]
    ['a']
    """
    needed = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if node.name in needed:
            kept.append(node)
            needed.update(node.inputs)
    constants = {k: v for k, v in graph.constants.items() if k in needed}
    return graph.replace(nodes=tuple(reversed(kept)), constants=constants)
