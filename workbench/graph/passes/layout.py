"""Layout conversion NCHW -> NHWC for convolutions, with cancelling transposes removed.

Each ``conv2d`` (groups 1, constant weight) becomes ``transpose(NCHW->NHWC)``, a
``conv2d_nhwc`` with RSCK weights (transposed once, at compile time) and
``transpose(NHWC->NCHW)``. Transposes then sink below elementwise operators
(``relu(transpose(x))`` -> ``transpose(relu(x))``; a per-channel constant operand is
transposed with them: ``sink_transposes.sink`` under the policy ``NHWC``), so that the
NHWC->NCHW of one conv meets the NCHW->NHWC of the next and ``simplify`` composes them into
the identity and removes both.
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.passes.simplify import simplify
from workbench.graph.passes.sink_transposes import Sinking, sink

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


NHWC = Sinking(perm=tuple(TO_NCHW), single_reader=True)
"""The NHWC layout's sinking (``sink_transposes.sink``): each NHWC->NCHW transpose read once
moves below the elementwise op reading it (a per-channel constant transposed with it)."""


def convert_layout_nhwc(graph: Graph) -> Graph:
    """Convolutions to NHWC, transposes sunk through elementwise ops, cancelling pairs removed.

    Example
    -------
    >>> # conv -> relu -> conv: one transpose in, one out, none between the convs
    >>> # (see tests/graph/test_passes.py::test_layout_removes_cancelling_transposes)
    """
    return simplify(sink(_convert_convs(graph), NHWC))


def count_transposes(graph: Graph) -> int:
    return sum(node.op == "transpose" for node in graph.nodes)


# ---------------------------------------------------------------------------- packed weights

MIN_BLOCK = 4
"""Smallest channel block: ``kb`` halves from the target's vector lanes until it divides the
output channels; a convolution whose channels no block from ``MIN_BLOCK`` up divides keeps
its KCRS weights (and the generic ``conv2d`` kernel)."""


PACK_DEPTHWISE = False
"""Whether depthwise convs get packed weights too (``depthwise_conv2d_packed``). Off: they
keep NCHW and their ``(C, 1, R, S)`` weights, scheduled one channel plane at a time
(``recipes.conv2d_depthwise_cpu``), which reads the activation once; the packed form
vectorizes over channels and so needs a channels-last copy of it first (measured slower:
docs/decisions.md, "dwconv")."""
PACK_DEPTHWISE_WIDTH = 7
"""Output columns at or below which a depthwise conv is packed all the same: a row that
short leaves the plane recipe's vector loop to LLVM's scalar remainder, and the channel
vectors win (one thread: 672ch 14x14 5x5 stride 2, 0.46 ms packed vs 1.33 plane; 1152ch
7x7 5x5, 0.31 vs 0.56; at 14 columns the two tie or the plane wins)."""


def channel_block(channels: int, lanes: int) -> int | None:
    """The weight block for ``channels`` output channels: ``lanes`` halved until it divides
    them (None below ``MIN_BLOCK``).

    Example
    -------
    >>> channel_block(64, 16), channel_block(24, 16), channel_block(1000, 16), channel_block(6, 16)
    (16, 8, 8, None)
    """
    kb = lanes
    while kb >= MIN_BLOCK:
        if channels % kb == 0:
            return kb
        kb //= 2
    return None


def _packed_form(graph: Graph, node: Node, constants) -> tuple[str, bool] | None:
    """``(op, depthwise)`` of the packed form of ``node``, or None where it has none."""
    if node.op != "conv2d" or node.inputs[1] not in constants:
        return None
    (_, C, _, _), (K, Cg, _, _) = graph.type_of(node.inputs[0]).shape, \
        constants[node.inputs[1]].shape
    groups = node.attrs.get("groups", 1)
    if groups == 1:
        return "conv2d_packed", False
    narrow = node.type.shape[3] <= PACK_DEPTHWISE_WIDTH
    if groups == C == K and Cg == 1 and (PACK_DEPTHWISE or narrow):
        return "depthwise_conv2d_packed", True
    return None


def pack_conv_weights(graph: Graph, target="cpu") -> Graph:
    """Every ``conv2d`` with constant weights (groups 1; depthwise where ``PACK_DEPTHWISE``
    or its output is at most ``PACK_DEPTHWISE_WIDTH`` wide)
    becomes a ``conv2d_packed`` / ``depthwise_conv2d_packed`` reading its weights packed by
    blocks of ``kb`` output channels (``channel_block`` of the target's vector lanes): a
    ``pack_weights`` node, constant-folded here, so the packed weight is a graph constant and
    packing happens once, at compile time. The CPU target's ``graph_layout`` hook (run by
    ``wb.compile`` before fusion).

    Example
    -------
    >>> # conv2d(x, w[64, 3, 7, 7]) -> conv2d_packed(x, w_packed16[4, 3, 7, 7, 16])
    >>> # (see tests/graph/test_conv_packed.py)
    """
    from workbench.backends.cpu.cpu_facts import target_vector_lanes
    from workbench.graph.ir import TensorType
    from workbench.graph.passes.constant_fold import fold_constants

    lanes = target_vector_lanes(target, "float32")
    graph = _rows_convs(graph, target)
    constants = graph.constants
    nodes: list[Node] = []
    packs: dict[str, Node] = {}
    for node in graph.nodes:
        form = _packed_form(graph, node, constants)
        weight = constants[node.inputs[1]] if form else None
        kb = channel_block(weight.shape[0], lanes) if form else None
        if kb is None or str(weight.dtype) != "float32":
            nodes.append(node)
            continue
        op, depthwise = form
        K, C, R, S = weight.shape
        name = f"{node.inputs[1]}_packed{kb}"
        if name not in packs:
            shape = (K // kb, R, S, kb) if depthwise else (K // kb, C, R, S, kb)
            packs[name] = Node(name, "pack_weights", (node.inputs[1],),
                               {"kb": kb, "depthwise": depthwise},
                               TensorType(shape, "float32"), node.source)
            nodes.append(packs[name])
        attrs = {k: v for k, v in node.attrs.items() if k != "groups"}
        nodes.append(node.replace(op=op, inputs=(node.inputs[0], name) + node.inputs[2:],
                                  attrs=attrs))
    if packs:
        graph = fold_constants(graph.replace(nodes=tuple(nodes)))
    return fuse_input_scales(graph)


# ---------------------------------------------------------------------------- 1x1 convs on rows


def _rows_form(graph: Graph, node: Node, target) -> bool:
    """Whether ``node`` is a 1x1 ``conv2d`` (groups 1, stride 1, no padding, constant
    float32 weights) whose spatial positions a ``rows`` tile divides."""
    from workbench.recipes.conv2d_1x1_cpu import rows_tile

    if node.op != "conv2d" or node.inputs[1] not in graph.constants or \
            node.attrs.get("groups", 1) != 1:
        return False
    weight = graph.constants[node.inputs[1]]
    if weight.ndim != 4 or weight.shape[2:] != (1, 1) or str(weight.dtype) != "float32":
        return False
    stride, padding = node.attrs.get("stride", 1), node.attrs.get("padding", 0)
    if any(v != 1 for v in np.atleast_1d(stride)) or any(v != 0 for v in np.atleast_1d(padding)):
        return False
    _, _, H, W = graph.type_of(node.inputs[0]).shape
    return rows_tile(H * W, weight.shape[0], target) is not None


def _rows_convs(graph: Graph, target) -> Graph:
    """Every 1x1 conv of ``_rows_form`` as a ``conv2d_1x1`` on ``(K, C)`` weights (the
    KCRS weights reshaped once, at compile time): it reads and writes NCHW rows as they
    are (``ops.conv_rows``), no channels-last copy."""
    constants = dict(graph.constants)
    nodes: list[Node] = []
    for node in graph.nodes:
        if not _rows_form(graph, node, target):
            nodes.append(node)
            continue
        weight = node.inputs[1]
        name = f"{weight}_kc"
        constants[name] = np.ascontiguousarray(constants[weight].reshape(
            constants[weight].shape[:2]))
        nodes.append(node.replace(op="conv2d_1x1", inputs=(node.inputs[0], name)
                                  + node.inputs[2:], attrs={}))
    if len(constants) == len(graph.constants):
        return graph
    from workbench.graph.passes.dce import eliminate_dead_code

    return eliminate_dead_code(graph.replace(nodes=tuple(nodes), constants=constants))


def fuse_input_scales(graph: Graph) -> Graph:
    """``conv2d_1x1(mul(x, s))`` -> ``conv2d_1x1(x, s, scaled=True)`` where ``s`` is
    ``(N, C, 1, 1)`` (a squeeze-excitation's gate), ``x`` the full ``(N, C, H, W)``
    activation and the product read by that conv alone: the conv scales its input as it
    reads it, and the product (a kernel and a pass over the activation) is gone.

    Example
    -------
    >>> # mul(dw, sigmoid(fc2)) -> conv2d_1x1 ==> conv2d_1x1(dw, sigmoid(fc2), w, scaled)
    >>> # (see tests/graph/test_conv_rows.py)
    """
    users = graph.consumers()
    producers = {node.name: node for node in graph.nodes}
    fused: dict[str, Node] = {}
    dropped: set[str] = set()
    for node in graph.nodes:
        if node.op != "conv2d_1x1" or node.attrs.get("scaled"):
            continue
        mul = producers.get(node.inputs[0])
        if mul is None or mul.op != "mul" or mul.attrs or mul.name in graph.outputs or \
                len(users.get(mul.name, [])) != 1 or len(set(mul.inputs)) != 2:
            continue
        full = mul.type.shape
        gate = [i for i in mul.inputs if graph.type_of(i).shape == full[:2] + (1, 1)
                and i not in graph.constants]
        data = [i for i in mul.inputs if graph.type_of(i).shape == full]
        if len(full) != 4 or len(gate) != 1 or len(data) != 1 or gate == data or \
                graph.type_of(gate[0]).dtype != "float32":
            continue
        fused[node.name] = node.replace(inputs=(data[0], gate[0]) + node.inputs[1:],
                                        attrs={"scaled": True})
        dropped.add(mul.name)
    if not fused:
        return graph
    nodes = tuple(fused.get(n.name, n) for n in graph.nodes if n.name not in dropped)
    return graph.replace(nodes=nodes)
