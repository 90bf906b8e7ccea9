"""A drawing API for dataflow graphs, ready for the graph IR (issue 11).

``graph_figure(nodes, edges, groups=...)`` takes plain descriptions, so any graph IR can
call it without this module knowing its classes: nodes with an op name, the shape and
dtype they produce and a kind (``input``, ``const``, ``op``, ``output``); edges with the
tensor type they carry; fused groups drawn as clusters (a box around their nodes).

Nodes and edges may be given as ``GraphNode``/``GraphEdge``, dicts with the same keys, or
tuples ``(name, op)`` and ``(src, dst)`` / ``(src, dst, label)``.

Example
-------
>>> g = graph_figure([GraphNode("x", "input", (1, 64), "float32"),
...                   GraphNode("dense", "matmul", (1, 32), "float32"),
...                   GraphNode("relu", "relu", (1, 32), "float32")],
...                  [("x", "dense"), ("dense", "relu")],
...                  groups={"fused_dense_relu": ["dense", "relu"]})
>>> "subgraph cluster_fused_dense_relu" in g.source
True
>>> 'n_dense -> n_relu [label="float32[1, 32]"]' in g.source
True
"""

from __future__ import annotations

import html as html_module
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

NODE_STYLES = {
    "input": {"shape": "ellipse", "style": "filled", "fillcolor": "#d7f5dd"},
    "const": {"shape": "box", "style": "filled,dashed", "fillcolor": "#eeeeee"},
    "op": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff8dc"},
    "output": {"shape": "ellipse", "style": "filled", "fillcolor": "#cfe3ff",
               "peripheries": "2"},
}
"""Graphviz attributes of a node, by kind."""

CLUSTER_STYLE = {"style": "rounded,filled", "fillcolor": "#f3f0ff", "color": "#6a3fb5"}


@dataclass(frozen=True)
class GraphNode:
    """A node of a dataflow graph: a value (input, constant) or an operation."""

    name: str
    op: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    kind: str = "op"
    attrs: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class GraphEdge:
    """A tensor flowing from ``src`` to ``dst``; ``label`` defaults to its type."""

    src: str
    dst: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    label: str | None = None


def tensor_type(shape, dtype) -> str:
    """``float32[1, 64]``; empty when both are unknown."""
    if shape is None and dtype is None:
        return ""
    dims = "" if shape is None else "[" + ", ".join(str(d) for d in shape) + "]"
    return f"{dtype or '?'}{dims}"


def _node(item) -> GraphNode:
    if isinstance(item, GraphNode):
        return item
    if isinstance(item, Mapping):
        return GraphNode(**item)
    return GraphNode(*item)


def _edge(item) -> GraphEdge:
    if isinstance(item, GraphEdge):
        return item
    if isinstance(item, Mapping):
        return GraphEdge(**item)
    src, dst, *rest = item
    return GraphEdge(src, dst, label=rest[0] if rest else None)


def _node_id(name: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _node_label(node: GraphNode) -> str:
    lines = [node.name if node.kind != "op" else f"{node.op}"]
    if node.kind == "op" and node.name != node.op:
        lines.append(node.name)
    elif node.kind != "op" and node.op not in (node.kind, node.name):
        lines.append(node.op)
    kind = tensor_type(node.shape, node.dtype)
    if kind:
        lines.append(kind)
    lines += [f"{k}={v}" for k, v in node.attrs.items()]
    return "\\n".join(lines)


def _fitted_digraph():
    """``graphviz.Digraph`` whose notebook SVG is at most ``loopnest.MAX_WIDTH_PT`` wide:
    notebook 07's fused graph (705 pt) ran past the output area's right edge."""
    import graphviz

    from workbench.viz.loopnest import fit_svg

    class FittedDigraph(graphviz.Digraph):
        def _repr_image_svg_xml(self) -> str:
            return fit_svg(super()._repr_image_svg_xml())

    return FittedDigraph


def graph_figure(nodes: Iterable, edges: Iterable, *, groups: Mapping[str, Iterable[str]]
                 | None = None, title: str | None = None, rankdir: str = "TB"):
    """A dataflow graph as a graphviz Digraph.

    Parameters
    ----------
    nodes : iterable of GraphNode (or dict / tuple)
    edges : iterable of GraphEdge (or dict / tuple)
        An edge without a label shows the tensor type: its own ``shape``/``dtype``, else
        the source node's.
    groups : mapping of group name to node names, optional
        Fused groups, each drawn as a cluster (``subgraph cluster_<name>``).
    title : str, optional
    rankdir : str

    Returns
    -------
    graphviz.Digraph
        Node ids ``n_<name>``; shown in a notebook at most ``MAX_WIDTH_PT`` wide.
    """

    nodes = [_node(n) for n in nodes]
    edges = [_edge(e) for e in edges]
    by_name = {n.name: n for n in nodes}
    for edge in edges:
        for end in (edge.src, edge.dst):
            if end not in by_name:
                raise KeyError(f"edge {edge.src} -> {edge.dst}: no node {end!r}")
    graph = _fitted_digraph()(name=title or "graph",
                             graph_attr={"rankdir": rankdir, "fontsize": "11", "ranksep": "0.55",
                                         **({"label": title, "labelloc": "t"} if title else {})},
                             node_attr={"fontname": "monospace", "fontsize": "10"},
                             edge_attr={"fontname": "monospace", "fontsize": "8",
                                        "arrowsize": "0.7", "fontcolor": "#555555",
                                        # each tensor type tied to its own edge by a line,
                                        # never read as the label of a crossing edge
                                        "decorate": "true"})
    grouped: dict[str, str] = {}
    for group, members in (groups or {}).items():
        members = list(members)
        for member in members:
            if member not in by_name:
                raise KeyError(f"group {group!r}: no node {member!r}")
            grouped[member] = group
        cluster_name = "cluster_" + re.sub(r"[^A-Za-z0-9_]", "_", group)
        with graph.subgraph(name=cluster_name) as cluster:
            cluster.attr(label=group, fontsize="9", **CLUSTER_STYLE)
            for member in members:
                node = by_name[member]
                cluster.node(_node_id(node.name), label=_node_label(node),
                             **NODE_STYLES.get(node.kind, NODE_STYLES["op"]))
    for node in nodes:
        if node.name not in grouped:
            graph.node(_node_id(node.name), label=_node_label(node),
                       **NODE_STYLES.get(node.kind, NODE_STYLES["op"]))
    for edge in edges:
        label = edge.label
        if label is None:
            src = by_name[edge.src]
            label = tensor_type(edge.shape if edge.shape is not None else src.shape,
                                edge.dtype if edge.dtype is not None else src.dtype)
        graph.edge(_node_id(edge.src), _node_id(edge.dst), **({"label": label} if label else {}))
    return graph


def graph_text(nodes: Iterable, edges: Iterable, *, groups: Mapping | None = None) -> str:
    """The graph as text: one line per node with its inputs, grouped nodes marked.

    Example
    -------
    >>> print(graph_text([("x", "input"), ("y", "relu")], [("x", "y")]))
    x = input()
    y = relu(x)
    """
    nodes = [_node(n) for n in nodes]
    edges = [_edge(e) for e in edges]
    membership = {m: g for g, members in (groups or {}).items() for m in members}
    lines = []
    for node in nodes:
        inputs = ", ".join(e.src for e in edges if e.dst == node.name)
        kind = tensor_type(node.shape, node.dtype)
        line = f"{node.name} = {node.op}({inputs})"
        if kind:
            line += f"  : {kind}"
        if node.name in membership:
            line += f"  [{membership[node.name]}]"
        lines.append(line)
    return "\n".join(lines)


class GraphView:
    """A graph for a notebook (SVG with ``dot``, else text) and for a terminal (text)."""

    def __init__(self, nodes, edges, **options):
        nodes, edges = list(nodes), list(edges)
        self.graph = graph_figure(nodes, edges, **options)
        self.text = graph_text(nodes, edges, groups=options.get("groups"))

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from workbench.viz.loopnest import dot_available

        if dot_available():
            return {"image/svg+xml": self.graph.pipe(format="svg", encoding="utf-8"),
                    "text/plain": self.text}
        return {"text/html": f"<pre>{html_module.escape(self.text)}</pre>",
                "text/plain": self.text}

    def __repr__(self) -> str:
        return self.text
