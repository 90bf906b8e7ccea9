"""The graph IR: a DAG of operator nodes over named tensor values.

A ``Graph`` holds its inputs (name -> ``TensorType``), its constants (name -> numpy array),
its nodes in topological order and the names of its outputs. Every node produces one value,
named like the node. Values are referred to by name, so a pass rewrites a graph by building
new node lists; graphs are treated as immutable values (passes return new graphs).

Example
-------
>>> import numpy as np
>>> g = Graph(inputs={"x": TensorType((2, 3))}, constants={"w": np.ones((3, 4), "float32")})
>>> g = g.with_node(Node("y", "matmul", ("x", "w"), {}, TensorType((2, 4))))
>>> g = g.with_outputs(["y"])
>>> print(g)
graph(%x: float32[2, 3]) {
  %w = constant float32[3, 4]
  %y: float32[2, 4] = matmul(%x, %w)
  return %y
}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TensorType:
    """Shape and dtype of a tensor value."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True, eq=False)
class Node:
    """One operator application producing the value ``name``.

    Attributes
    ----------
    name : str
        The produced value's name (unique in the graph).
    op : str
        The operator (see ``workbench.graph.ops.OPS``), or ``"fused"`` for a fused group
        (``attrs["graph"]`` is then the group's own ``Graph``).
    inputs : tuple of str
        Names of the input values (graph inputs, constants or other nodes).
    attrs : dict
        Operator attributes (``stride``, ``axis``...), plain JSON-able values.
    type : TensorType
        The produced value's type.
    source : str
        Where the node came from in the user's model (``file:line``), for error messages.
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict)
    type: TensorType = TensorType(())
    source: str = ""

    def replace(self, **changes) -> Node:
        return dataclasses.replace(self, **changes)

    def key(self) -> tuple:
        """What makes two nodes compute the same value (for CSE)."""
        return (self.op, self.inputs, _freeze(self.attrs))


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Graph):
        return id(value)
    return value


@dataclass(frozen=True, eq=False)
class Graph:
    """A dataflow graph; see the module docstring."""

    inputs: dict[str, TensorType] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()
    outputs: tuple[str, ...] = ()

    # ---- queries -------------------------------------------------------------------------

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node named {name!r}")

    def producer(self, name: str) -> Node | None:
        """The node producing ``name`` (None for inputs and constants)."""
        return self._producers().get(name)

    def _producers(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}

    def type_of(self, name: str) -> TensorType:
        if name in self.inputs:
            return self.inputs[name]
        if name in self.constants:
            array = self.constants[name]
            return TensorType(tuple(array.shape), str(array.dtype))
        return self._producers()[name].type

    def consumers(self) -> dict[str, list[Node]]:
        """value name -> the nodes reading it (in node order)."""
        users: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.inputs):
                users.setdefault(name, []).append(node)
        return users

    def is_constant(self, name: str) -> bool:
        return name in self.constants

    # ---- edits (each returns a new graph) ------------------------------------------------

    def replace(self, **changes) -> Graph:
        return dataclasses.replace(self, **changes)

    def with_node(self, node: Node) -> Graph:
        return self.replace(nodes=self.nodes + (node,))

    def with_outputs(self, outputs) -> Graph:
        return self.replace(outputs=tuple(outputs))

    def renamed_uses(self, mapping: dict[str, str]) -> Graph:
        """Every use of a value in ``mapping`` (inputs of nodes, outputs) renamed."""
        if not mapping:
            return self

        def resolve(name: str) -> str:
            while name in mapping:
                name = mapping[name]
            return name

        nodes = tuple(
            node.replace(inputs=tuple(resolve(i) for i in node.inputs)) for node in self.nodes
        )
        return self.replace(nodes=nodes, outputs=tuple(resolve(o) for o in self.outputs))

    # ---- printing ------------------------------------------------------------------------

    def __str__(self) -> str:
        from workbench.graph.printer import graph_text

        return graph_text(self)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


__all__ = ["Graph", "Node", "TensorType"]
