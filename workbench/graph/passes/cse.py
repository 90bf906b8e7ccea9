"""Common-subexpression elimination: two nodes with the same op, inputs and attributes
compute the same value; the later one is replaced by the earlier one."""

from __future__ import annotations

from workbench.graph.ir import Graph


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Merge duplicate nodes (after renaming their inputs, so chains of duplicates merge too).

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> t = TensorType((2,))
    >>> g = Graph(inputs={"x": t}, nodes=(Node("a", "exp", ("x",), {}, t),
    ...     Node("b", "exp", ("x",), {}, t), Node("c", "add", ("a", "b"), {}, t)), outputs=("c",))
    >>> print(eliminate_common_subexpressions(g).nodes[-1].inputs)
    ('a', 'a')
    """
    seen: dict[tuple, str] = {}
    renamed: dict[str, str] = {}
    nodes = []
    for node in graph.nodes:
        node = node.replace(inputs=tuple(renamed.get(i, i) for i in node.inputs))
        key = node.key()
        if key in seen and node.name not in graph.outputs:
            renamed[node.name] = seen[key]
            continue
        seen.setdefault(key, node.name)
        nodes.append(node)
    if not renamed:
        return graph
    outputs = tuple(renamed.get(o, o) for o in graph.outputs)
    return graph.replace(nodes=tuple(nodes), outputs=outputs)
