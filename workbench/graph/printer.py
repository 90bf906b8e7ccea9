"""Text form of a graph: one line per node, ``%name: type = op(%inputs) {attrs}``."""

from __future__ import annotations

from workbench.graph.ir import Graph, Node, TensorType


def _attrs_text(node: Node) -> str:
    shown = {k: v for k, v in node.attrs.items() if k not in ("graph",)}
    if not shown:
        return ""
    return " {" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + "}"


def node_text(node: Node) -> str:
    """One node as one line (fused groups list their member ops)."""
    args = ", ".join(f"%{name}" for name in node.inputs)
    line = f"%{node.name}: {node.type} = {node.op}({args}){_attrs_text(node)}"
    if node.op == "fused":
        members = " -> ".join(member.op for member in node.attrs["graph"].nodes)
        line += f"  # {members}"
    return line


def graph_text(graph: Graph, indent: str = "  ") -> str:
    """The whole graph; fused groups show their body indented below them.

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node
    >>> g = Graph(inputs={"x": TensorType((4,))})
    >>> g = g.with_node(Node("y", "relu", ("x",), {}, TensorType((4,)))).with_outputs(["y"])
    >>> print(graph_text(g))
    graph(%x: float32[4]) {
      %y: float32[4] = relu(%x)
      return %y
    }
    """
    params = ", ".join(f"%{name}: {ty}" for name, ty in graph.inputs.items())
    lines = [f"graph({params}) {{"]
    for name, array in graph.constants.items():
        ty = TensorType(tuple(array.shape), str(array.dtype))
        lines.append(f"{indent}%{name} = constant {ty}")
    for node in graph.nodes:
        lines.append(indent + node_text(node))
        if node.op == "fused":
            body = graph_text(node.attrs["graph"], indent)
            lines.extend(indent * 2 + line for line in body.splitlines()[1:-1]
                         if not line.strip().startswith("%") or "constant" not in line)
    lines.append(f"{indent}return {', '.join('%' + o for o in graph.outputs)}")
    lines.append("}")
    return "\n".join(lines)
