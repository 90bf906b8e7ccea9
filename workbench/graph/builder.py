"""``GraphBuilder``: how frontends (and passes) add nodes with inferred types."""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import OPS, infer_type
from workbench.ir.names import fresh_name


class GraphBuilder:
    """Accumulates inputs, constants and nodes; ``finish(outputs)`` returns the ``Graph``.

    Example
    -------
    >>> b = GraphBuilder()
    >>> x = b.input("x", TensorType((2, 2)))
    >>> y = b.node("relu", [x])
    >>> print(b.finish([y]).nodes[0].type)
    float32[2, 2]
    """

    def __init__(self):
        self.inputs: dict[str, TensorType] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.nodes: list[Node] = []
        self.types: dict[str, TensorType] = {}
        self._taken: set[str] = set()

    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
        return fresh_name(base, self._taken)

    def input(self, hint: str, ty: TensorType) -> str:
        name = self.fresh(hint)
        self.inputs[name] = ty
        self.types[name] = ty
        return name

    def constant(self, hint: str, array: np.ndarray) -> str:
        name = self.fresh(hint)
        array = np.asarray(array)
        if not array.flags.c_contiguous:  # (ascontiguousarray would turn 0-d into 1-d)
            array = array.copy()
        self.constants[name] = array
        self.types[name] = TensorType(tuple(array.shape), str(array.dtype))
        return name

    def node(self, op: str, inputs: list[str], attrs: dict | None = None, *, hint: str = "",
             source: str = "") -> str:
        if op not in OPS:
            raise KeyError(f"unknown graph operator {op!r}")
        attrs = dict(attrs or {})
        ty = infer_type(op, [self.types[i] for i in inputs], attrs)
        name = self.fresh(hint or op)
        self.nodes.append(Node(name, op, tuple(inputs), attrs, ty, source))
        self.types[name] = ty
        return name

    def finish(self, outputs: list[str]) -> Graph:
        return Graph(dict(self.inputs), dict(self.constants), tuple(self.nodes), tuple(outputs))
