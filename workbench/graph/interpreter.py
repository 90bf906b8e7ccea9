"""The numpy interpreter: the oracle every pass and every compiled model is checked against."""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph
from workbench.graph.ops import evaluate


def run(graph: Graph, *args: np.ndarray, keep: bool = False) -> list[np.ndarray] | dict:
    """Run ``graph`` on ``args`` (one array per graph input, in order).

    Returns the outputs as a list, or (``keep=True``) every value by name.

    Example
    -------
    >>> import numpy as np
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> g = Graph(inputs={"x": TensorType((3,))})
    >>> g = g.with_node(Node("y", "relu", ("x",), {}, TensorType((3,)))).with_outputs(["y"])
    >>> run(g, np.array([-1.0, 0.5, 2.0], "float32"))[0].tolist()
    [0.0, 0.5, 2.0]
    """
    if len(args) != len(graph.inputs):
        raise TypeError(f"the graph takes {len(graph.inputs)} input(s), got {len(args)}")
    values: dict[str, np.ndarray] = dict(graph.constants)
    for (name, ty), array in zip(graph.inputs.items(), args, strict=True):
        array = np.asarray(array)
        if tuple(array.shape) != ty.shape:
            raise ValueError(f"input %{name}: expected shape {ty.shape}, got {array.shape}")
        values[name] = array.astype(ty.dtype, copy=False)
    for node in graph.nodes:
        inputs = [values[name] for name in node.inputs]
        if node.op == "fused":
            values[node.name] = run(node.attrs["graph"], *inputs)[0]
        else:
            values[node.name] = evaluate(node.op, inputs, node.attrs)
    if keep:
        return values
    return [values[name] for name in graph.outputs]
