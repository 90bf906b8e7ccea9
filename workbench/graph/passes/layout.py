"""Layout conversion NCHW -> NHWC for convolutions, with cancelling transposes removed.

Each ``conv2d`` (groups 1, constant weight) becomes ``transpose(NCHW->NHWC)``, a
``conv2d_nhwc`` with RSCK weights (transposed once, at compile time) and
``transpose(NHWC->NCHW)``. Transposes then sink below elementwise operators
(``relu(transpose(x))`` -> ``transpose(relu(x))``; a per-channel constant operand is
transposed with them), so that the NHWC->NCHW of one conv meets the NCHW->NHWC of the next
and ``simplify`` composes them into the identity and removes both.
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import kind
from workbench.graph.passes.simplify import simplify

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]


def _convert_convs(graph: Graph) -> Graph:
    constants = dict(graph.constants)
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.op != "conv2d" or node.attrs.get("groups", 1) != 1 or \
                node.inputs[1] not in constants:
            nodes.append(node)
            continue
        x_type = graph.type_of(node.inputs[0])
        n, c, h, w = x_type.shape
        x_nhwc = Node(f"{node.name}_in_nhwc", "transpose", (node.inputs[0],), {"perm": TO_NHWC},
                      TensorType((n, h, w, c), x_type.dtype), node.source)
        weight = f"{node.inputs[1]}_rsck"
        constants[weight] = np.ascontiguousarray(np.transpose(constants[node.inputs[1]],
                                                              (2, 3, 1, 0)))
        N, K, P, Q = node.type.shape
        attrs = {k: v for k, v in node.attrs.items() if k != "groups"}
        conv = Node(f"{node.name}_nhwc", "conv2d_nhwc", (x_nhwc.name, weight) + node.inputs[2:],
                    attrs, TensorType((N, P, Q, K), node.type.dtype), node.source)
        back = Node(node.name, "transpose", (conv.name,), {"perm": TO_NCHW}, node.type,
                    node.source)
        nodes += [x_nhwc, conv, back]
    return graph.replace(nodes=tuple(nodes), constants=constants)


def _channel_constant_nhwc(graph: Graph, name: str, constants: dict) -> str | None:
    """A constant operand of an NCHW elementwise op, rewritten for NHWC (None if impossible)."""
    array = constants[name]
    if array.ndim <= 1 and array.size == 1:
        return name
    if array.ndim == 4:
        new = f"{name}_nhwc"
        constants[new] = np.ascontiguousarray(np.transpose(array, TO_NHWC))
        return new
    return None


def _sink_transposes(graph: Graph) -> tuple[Graph, bool]:
    """One elementwise op below a NHWC->NCHW transpose moves above it."""
    users = graph.consumers()
    constants = dict(graph.constants)
    for index, node in enumerate(graph.nodes):
        if kind(node.op) != "elementwise" or node.op == "batch_norm":
            continue
        sources = [graph.producer(i) for i in node.inputs]
        moved = [s for s in sources if s is not None and s.op == "transpose"
                 and s.attrs["perm"] == TO_NCHW and len(users[s.name]) == 1]
        if not moved:
            continue
        new_inputs = []
        for name, src in zip(node.inputs, sources, strict=True):
            if src is not None and src in moved:
                new_inputs.append(src.inputs[0])
            elif name in constants:
                rewritten = _channel_constant_nhwc(graph, name, constants)
                if rewritten is None:
                    break
                new_inputs.append(rewritten)
            else:
                break
        else:
            n, c, h, w = node.type.shape
            inner = node.replace(name=f"{node.name}_nhwc", inputs=tuple(new_inputs),
                                 type=TensorType((n, h, w, c), node.type.dtype))
            back = Node(node.name, "transpose", (inner.name,), {"perm": TO_NCHW}, node.type,
                        node.source)
            nodes = list(graph.nodes)
            nodes[index:index + 1] = [inner, back]
            return graph.replace(nodes=tuple(nodes), constants=constants), True
    return graph, False


def convert_layout_nhwc(graph: Graph) -> Graph:
    """Convolutions to NHWC, transposes sunk through elementwise ops, cancelling pairs removed.

    Example
    -------
    >>> # conv -> relu -> conv: one transpose in, one out, none between the convs
    >>> # (see tests/graph/test_passes.py::test_layout_removes_cancelling_transposes)
    """
    graph = _convert_convs(graph)
    changed = True
    while changed:
        graph, changed = _sink_transposes(graph)
    return simplify(graph)


def count_transposes(graph: Graph) -> int:
    return sum(node.op == "transpose" for node in graph.nodes)
