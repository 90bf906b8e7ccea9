"""The graph drawn through ``workbench.viz.graph_figure`` (fused groups as clusters)."""

from __future__ import annotations

from workbench.graph.ir import Graph


def graph_drawing(graph: Graph, title: str | None = None, show_constants: bool = False):
    """A graphviz Digraph of ``graph``: inputs, operators (fused members in a cluster each)."""
    from workbench.viz import GraphEdge, GraphNode, graph_figure

    nodes = [GraphNode(name, "input", ty.shape, ty.dtype, kind="input")
             for name, ty in graph.inputs.items()]
    edges = []
    groups = {}
    if show_constants:
        nodes += [GraphNode(name, "constant", tuple(a.shape), str(a.dtype), kind="constant")
                  for name, a in graph.constants.items()]
    visible = {n.name for n in nodes}
    for node in graph.nodes:
        members = node.attrs["graph"].nodes if node.op == "fused" else (node,)
        member_names = {m.name for m in members}
        for member in members:
            nodes.append(GraphNode(member.name, member.op, member.type.shape, member.type.dtype))
            visible.add(member.name)
            for name in member.inputs:
                if name in visible or name in member_names:
                    edges.append(GraphEdge(name, member.name))
        if node.op == "fused":
            # "fused conv2d+relu -> relu": the pattern, then the kernel's output node
            label = f"fused {node.attrs['pattern']} -> {node.name}"
            groups[label] = [m.name for m in members]
    return graph_figure(nodes, edges, groups=groups or None, title=title)
