"""Constant folding: a node whose inputs are all constants becomes a constant."""

from __future__ import annotations

from workbench.graph.interpreter import run
from workbench.graph.ir import Graph
from workbench.graph.ops import evaluate
from workbench.graph.passes.dce import eliminate_dead_code


def fold_constants(graph: Graph) -> Graph:
    """Evaluate (with the numpy interpreter) every node whose inputs are all constants.

    The folded value keeps the node's name, so uses need no renaming. Constants that are
    no longer used are dropped.

    Example
    -------
    >>> import numpy as np
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> g = Graph(inputs={"x": TensorType((2, 3))}, constants={"w": np.ones((3, 2), "float32")},
    ...           nodes=(Node("wt", "transpose", ("w",), {"perm": [1, 0]}, TensorType((2, 3))),
    ...                  Node("y", "add", ("x", "wt"), {}, TensorType((2, 3)))), outputs=("y",))
    >>> print(fold_constants(g))
    graph(%x: float32[2, 3]) {
      %wt = constant float32[2, 3]
      %y: float32[2, 3] = add(%x, %wt)
      return %y
    }
    """
    constants = dict(graph.constants)
    nodes = []
    for node in graph.nodes:
        if node.inputs and all(name in constants for name in node.inputs):
            arrays = [constants[name] for name in node.inputs]
            if node.op == "fused":
                constants[node.name] = run(node.attrs["graph"], *arrays)[0]
            else:
                constants[node.name] = evaluate(node.op, arrays, node.attrs)
            continue
        nodes.append(node)
    folded = graph.replace(constants=constants, nodes=tuple(nodes))
    return eliminate_dead_code(folded) if len(nodes) < len(graph.nodes) else graph
