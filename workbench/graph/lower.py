"""Lowering: every node or fused group of an optimised graph to a ``PrimFunc``.

``reshape`` nodes are views (no kernel). Every other node becomes one kernel whose
parameters are its array inputs, then its output (see ``workbench.graph.lower_text``).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.graph.ir import Graph, Node
from workbench.graph.lower_text import kernel_text
from workbench.graph.passes.memory_plan import VIEW_OPS
from workbench.ir.function import PrimFunc


@dataclass(frozen=True)
class LoweredKernel:
    """One kernel of the model: which node it computes, from which values, and how."""

    node: str
    pattern: str
    inputs: tuple[str, ...]
    func: PrimFunc
    source: str


def _members(node: Node) -> tuple[list[Node], dict, dict]:
    """(member nodes, array inputs name -> type, scalar constants) of a node or fused group."""
    if node.op == "fused":
        body: Graph = node.attrs["graph"]
        return list(body.nodes), dict(body.inputs), dict(body.constants)
    return [node], {}, {}


def lower_node(graph: Graph, node: Node) -> LoweredKernel:
    """The kernel for ``node`` (a plain node or a ``fused`` group)."""
    from workbench.script import from_source

    members, inputs, scalars = _members(node)
    if node.op != "fused":
        for name in dict.fromkeys(node.inputs):
            constant = graph.constants.get(name)
            if constant is not None and constant.ndim == 0:
                scalars[name] = constant
            else:
                inputs[name] = graph.type_of(name)
    name = "k_" + node.name
    source, order = kernel_text(name, members, inputs, scalars, node.type)
    pattern = node.attrs.get("pattern", node.op)
    return LoweredKernel(node.name, pattern, tuple(order), from_source(source), source)


def lower_graph(graph: Graph) -> list[LoweredKernel]:
    """One kernel per non-view node, in execution order."""
    return [lower_node(graph, node) for node in graph.nodes if node.op not in VIEW_OPS]
