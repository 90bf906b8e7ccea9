"""Convolutions as matrix products, for the GPU (``CONV_AS_GEMM``, the cuda target's
``graph_layout`` hook ``cuda_layout``).

Each ``conv2d`` (groups 1, constant weight) becomes ``im2col`` (its windows as the matrix
``(C * R * S, N * P * Q)``), a ``matmul`` of the weights viewed ``(K, C * R * S)`` with it
(plus the bias, a ``(K, 1)`` constant, as its epilogue), the product viewed
``(K, N, P, Q)`` and transposed to NCHW: the convolution runs on the SGEMM recipe and the
matmul's tile / K-split policy (``graph_cuda_ops.matmul_plan``) instead of the implicit-GEMM
conv recipe, at the cost of writing and reading the window matrix once.

Between convolutions the activations then stay in the product's ``(C, N, H, W)`` layout
(``sink_transposes.sink`` under the policy ``CNHW``): each transpose moves below the
elementwise ops that read it (a residual operand transposed too, where two transposes meet
``simplify`` removes both, a constant transposed at compile time), an ``im2col`` reading a
transposed value reads its source (``layout="CNHW"``), pools (one ``(n, c)`` plane at a
time) run on the CNHW value, a depthwise convolution on the CNHW value viewed as one image
of ``C * N`` channels (its weight repeated ``N`` times), and ``sink_reshapes`` moves the
``(K, N, P, Q)`` view below the elementwise ops so that the bias, a residual and a relu join
the matmul's epilogue. A transpose is left where a value
leaves the convolutions (a flatten, the model's output). cuDNN chooses between such
algorithms (``CUDNN_CONVOLUTION_FWD_ALGO_GEMM`` against ``IMPLICIT_PRECOMP_GEMM``) per shape.
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.lower_ops import _pairs
from workbench.graph.ops import VIEW_ATTRS
from workbench.graph.passes.cse import eliminate_common_subexpressions
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.epilogues import sink_reshapes
from workbench.graph.passes.simplify import simplify
from workbench.graph.passes.sink_transposes import Sinking, sink

SWAP = [1, 0, 2, 3]
"""NCHW <-> CNHW (its own inverse)."""

CONV_AS_GEMM = True
"""Whether the cuda target rewrites convolutions as ``im2col`` + ``matmul``. On an H100
(bench/RESULTS.md, 2026-12-05, ``bench/gpu/gpu_plan.py --only convgemm``, one run):
resnet18 at batch 16 9.75 ms with the conv recipes, 6.84 ms this way (torch eager 2.89);
at batch 1 4.74 against 0.93 ms (eager 2.04)."""

MAX_WINDOW_BYTES = 1 << 29
"""A convolution whose window matrix would take more than this (512 MiB) keeps the conv
recipe: resnet18's largest at batch 16 takes 118 MB; a 3 x 3 conv of 64 channels over
512 x 512 images at batch 16 would take 9.7 GB."""


def convs_as_gemm(graph: Graph) -> Graph:
    """Every ``conv2d`` of groups 1 with a constant weight (and a window matrix of at most
    ``MAX_WINDOW_BYTES``) rewritten as ``im2col`` + ``matmul`` (module docstring); the
    conv's value keeps its name (its consumers read the transpose)."""
    constants = dict(graph.constants)
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.op != "conv2d" or node.attrs.get("groups", 1) != 1 or \
                node.inputs[1] not in constants or any(k in node.attrs for k in VIEW_ATTRS):
            nodes.append(node)
            continue
        x, weight = node.inputs[:2]
        dtype = node.type.dtype
        N, C, _, _ = graph.type_of(x).shape
        K, _, R, S = constants[weight].shape
        _, _, P, Q = node.type.shape
        windows = _pairs({"stride": 1, "padding": 0, "dilation": 1, **node.attrs},
                         "stride", "padding", "dilation")
        attrs = {"kernel": [R, S], **{key: [int(v) for v in pair] for key, pair in
                                      zip(("stride", "padding", "dilation"), windows,
                                          strict=True)}}
        matrix = TensorType((C * R * S, N * P * Q), dtype)
        if not _pointwise(attrs) and \
                matrix.shape[0] * matrix.shape[1] * np.dtype(dtype).itemsize > MAX_WINDOW_BYTES:
            nodes.append(node)
            continue
        added = _windows(node, x, graph.type_of(x), attrs, matrix)
        col = added[-1]
        gemm_weight = f"{weight}_gemm"
        constants[gemm_weight] = constants[weight].reshape(K, C * R * S)
        product = TensorType((K, N * P * Q), dtype)
        last = Node(f"{node.name}_gemm", "matmul", (gemm_weight, col.name), {}, product,
                    node.source)
        added.append(last)
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        if bias is not None:
            if bias in constants:
                column = f"{bias}_column"
                constants[column] = constants[bias].reshape(K, 1)
            else:
                column = f"{node.name}_bias_column"
                added.append(Node(column, "reshape", (bias,), {"shape": [K, 1]},
                                  TensorType((K, 1), dtype), node.source))
            last = Node(f"{node.name}_biased", "add", (last.name, column), {}, product,
                        node.source)
            added.append(last)
        shaped = Node(f"{node.name}_knpq", "reshape", (last.name,), {"shape": [K, N, P, Q]},
                      TensorType((K, N, P, Q), dtype), node.source)
        back = Node(node.name, "transpose", (shaped.name,), {"perm": SWAP}, node.type,
                    node.source)
        nodes += added + [shaped, back]
    graph = graph.replace(nodes=tuple(nodes), constants=constants)
    # the same value transposed twice (a model input read by a pointwise convolution and by
    # a residual): one transpose (the pipeline's CSE ran before this layout pass)
    graph = eliminate_common_subexpressions(_read_cnhw(sink(graph, CNHW)))
    return simplify(sink_reshapes(graph))


def _pointwise(attrs: dict) -> bool:
    """Whether a convolution's window matrix is its input itself (as CNHW)."""
    return attrs["kernel"] == [1, 1] and attrs["stride"] == [1, 1] and \
        attrs["padding"] == [0, 0]


def _windows(node: Node, x: str, data: TensorType, attrs: dict,
             matrix: TensorType) -> list[Node]:
    """The nodes computing the window matrix of ``node`` (a conv2d of ``x`` of type
    ``data``): ``im2col``, or for a pointwise convolution (1 x 1, stride 1, no padding) ``x``
    transposed to CNHW and viewed ``(C, N * H * W)``: no copy where ``x`` is itself a
    transposed CNHW value, the output of a convolution before (the two transposes meet in
    ``simplify``), one transpose where it is not (the model's input)."""
    if not _pointwise(attrs):
        return [Node(f"{node.name}_col", "im2col", (x,), attrs, matrix, node.source)]
    cnhw = Node(f"{node.name}_in_cnhw", "transpose", (x,), {"perm": SWAP}, _swapped(data),
                node.source)
    return [cnhw, Node(f"{node.name}_col", "reshape", (cnhw.name,),
                       {"shape": list(matrix.shape)}, matrix, node.source)]


def _swap_source(graph: Graph, name: str) -> str | None:
    """The value ``name`` transposes by ``SWAP``, or None."""
    node = graph.producer(name)
    if node is None or node.op != "transpose" or list(node.attrs["perm"]) != SWAP:
        return None
    return node.inputs[0]


def _swapped(t: TensorType) -> TensorType:
    return TensorType(tuple(t.shape[i] for i in SWAP), t.dtype)


def _depthwise_planes(graph: Graph, node: Node, x: str, perm: list[int],
                      constants: dict) -> list[Node] | None:
    """``conv2d(swap(a))`` of a depthwise convolution (groups = channels = outputs, a
    constant weight and bias) as ``swap(view(conv2d(view(a))))``, or None where it does not
    apply (the ``Sinking.readers`` rule of the CNHW layout): the CNHW value ``a``
    ``(C, N, H, W)`` viewed as one image of ``C * N`` channels (channel ``c * N + n``: each
    plane where it was), the weight and bias repeated ``N`` times (constants), the product
    viewed back ``(C, N, P, Q)``. The convolution then runs on the CNHW value the matmul
    before wrote, and its output stays CNHW for the matmul after: mobilenet's and
    efficientnet's two transposes around each depthwise convolution go."""
    if node.op != "conv2d" or any(key in node.attrs for key in VIEW_ATTRS):
        return None
    source, weight, *rest = node.inputs
    if source != x or weight not in constants:
        return None
    source = graph.producer(x).inputs[0]
    N, C, H, W = graph.type_of(x).shape
    K, per_group, _, _ = constants[weight].shape
    bias = rest[0] if rest else None
    if node.attrs.get("groups", 1) != C or K != C or per_group != 1 or \
            (bias is not None and bias not in constants):
        return None
    _, _, P, Q = node.type.shape
    dtype = node.type.dtype
    planes = Node(f"{node.name}_planes_in", "reshape", (source,), {"shape": [1, C * N, H, W]},
                  TensorType((1, C * N, H, W), dtype), node.source)
    inputs = [planes.name]
    for name in (weight, bias) if bias is not None else (weight,):
        repeated = f"{name}_x{N}"
        constants[repeated] = np.repeat(constants[name], N, axis=0)
        inputs.append(repeated)
    conv = node.replace(name=f"{node.name}_planes", inputs=tuple(inputs),
                        attrs={**node.attrs, "groups": C * N},
                        type=TensorType((1, C * N, P, Q), dtype))
    shaped = Node(f"{node.name}_cnhw", "reshape", (conv.name,), {"shape": [C, N, P, Q]},
                  TensorType((C, N, P, Q), dtype), node.source)
    return [planes, conv, shaped, Node(node.name, "transpose", (shaped.name,), {"perm": SWAP},
                                       node.type, node.source)]


CNHW = Sinking(perm=tuple(SWAP), single_reader=True, operand_transposes=True,
               readers=_depthwise_planes)
"""The CNHW layout's sinking (``sink_transposes.sink``): each ``SWAP`` transpose read once
moves below the elementwise op, pool or depthwise convolution reading it; a residual operand
gets a ``SWAP`` of its own (where two meet, ``simplify`` removes both)."""


def _read_cnhw(graph: Graph) -> Graph:
    """An ``im2col`` of a ``SWAP``-transposed value reads the value itself (CNHW)."""
    nodes = []
    for node in graph.nodes:
        source = _swap_source(graph, node.inputs[0]) if node.op == "im2col" else None
        if source is not None and node.attrs.get("layout", "NCHW") == "NCHW":
            node = node.replace(inputs=(source,), attrs={**node.attrs, "layout": "CNHW"})
        nodes.append(node)
    return eliminate_dead_code(graph.replace(nodes=tuple(nodes)))


def cuda_layout(graph: Graph, target="cuda") -> Graph:
    """The cuda target's ``graph_layout`` hook: ``convs_as_gemm`` where ``CONV_AS_GEMM``,
    then ``fold_views`` (``views_layout``)."""
    from workbench.graph.passes.fold_views import views_layout

    return views_layout(convs_as_gemm(graph) if CONV_AS_GEMM else graph, target)


__all__ = ["CNHW", "CONV_AS_GEMM", "MAX_WINDOW_BYTES", "convs_as_gemm", "cuda_layout"]
