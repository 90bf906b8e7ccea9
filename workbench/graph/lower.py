"""Lowering: every node or fused group of an optimised graph to a ``PrimFunc``.

``reshape`` nodes are views (no kernel). Every other node becomes one kernel, built through
the operator library (``workbench.graph.lower_ops``); its parameters are its array inputs,
then its output, each *viewed* in the shape the kernel declares (``LoweredKernel.shapes``:
``ops.matmul`` sees a ``(B, M, K)`` activation as ``(B * M, K)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.lower_ops import lower_members
from workbench.graph.passes.memory_plan import VIEW_OPS
from workbench.ir.function import PrimFunc


@dataclass(frozen=True)
class LoweredKernel:
    """One kernel of the model: which node it computes, from which values, and how.

    ``shapes`` holds every parameter's shape (the output's last): the executor reshapes the
    values (contiguous arrays) to them before the call (``bind``).
    """

    node: str
    pattern: str
    inputs: tuple[str, ...]
    func: PrimFunc
    source: str
    shapes: tuple[tuple[int, ...], ...] = ()
    ieee: bool = False  # tests for NaN (``x != x``): built without fast-math's no-NaN flag

    def bind(self, arrays) -> list[np.ndarray]:
        """``arrays`` (the inputs, then the output) viewed in the kernel's parameter shapes."""
        return [a.reshape(shape) for a, shape in zip(arrays, self.shapes, strict=True)]


def _members(graph: Graph, node: Node) -> tuple[list[Node], dict, dict]:
    """(member nodes, array values it reads name -> type, scalar constants)."""
    if node.op == "fused":
        body: Graph = node.attrs["graph"]
        return list(body.nodes), dict(body.inputs), dict(body.constants)
    inputs, scalars = {}, {}
    for name in dict.fromkeys(node.inputs):
        constant = graph.constants.get(name)
        if constant is not None and constant.ndim == 0:
            scalars[name] = constant
        else:
            inputs[name] = graph.type_of(name)
    return [node], inputs, scalars


def _one_element(ty: TensorType) -> TensorType:
    """A 0-d value's type as the kernel sees it: one element of shape ``(1,)`` (tensor IR
    buffers have at least one axis). The graph keeps the true shape ``()`` (a full
    reduction's, as in PyTorch): the kernel's parameter shape ``(1,)`` is a view of it
    (``LoweredKernel.shapes``), bound by a reshape that never copies."""
    return TensorType((1,), ty.dtype) if ty.shape == () else ty


def kernel_name(pattern: str) -> str:
    """The function name of a kernel computing ``pattern``: ``k_`` and the pattern's ops
    (``conv2d+add+relu`` -> ``k_conv2d_add_relu``). Named by what it computes, not by its
    node: the kernels of a model's repeated blocks are then the same function (structural
    equality), built once (``wb.compile``) and sharing one entry of the kernel caches.

    Example
    -------
    >>> kernel_name("conv2d+add+relu")
    'k_conv2d_add_relu'
    """
    return "k_" + (re.sub(r"\W+", "_", pattern).strip("_") or "kernel")


def lower_node(graph: Graph, node: Node) -> LoweredKernel:
    """The kernel for ``node`` (a plain node or a ``fused`` group), its function named by
    its pattern (``kernel_name``); a node reading views of its inputs or writing its output
    transposed (``passes.fold_views``) gets those index maps (``lower_layout.lower_viewed``)."""
    if node.attrs.get("views") or node.attrs.get("out_perm") is not None:
        from workbench.graph.lower_layout import lower_viewed

        return lower_viewed(graph, node, lower_node)
    members, types, scalars = _members(graph, node)
    members = [m.replace(type=_one_element(m.type)) for m in members]
    types = {name: _one_element(ty) for name, ty in types.items()}
    pattern = node.attrs.get("pattern", node.op)
    lowered = lower_members("k_" + node.name, members, types, scalars,
                            _one_element(node.type))
    func = lowered.func.replace(name=kernel_name(pattern))
    return LoweredKernel(node.name, pattern, lowered.inputs, func, func.script(),
                         lowered.shapes, tests_nan(members))


def tests_nan(members: list[Node]) -> bool:
    """Whether a kernel of ``members`` compares a value with itself (``x != x``, ``x == x``:
    a NaN test; argmax's NaN rows, ONNX ``IsNaN``), which fast-math's no-NaN assumption
    would fold away."""
    return any(m.op in ("ne", "eq") and len(m.inputs) == 2 and m.inputs[0] == m.inputs[1]
               for m in members)


def lower_graph(graph: Graph, *, fold_layout: bool = False) -> list[LoweredKernel]:
    """One kernel per non-view node, in execution order; with ``fold_layout``, transposes
    and selects read only by kernels are folded into them (``workbench.graph.lower_layout``)
    and get no kernel.

    Off by default: measured on the transformer block (batch 16), folding the QKV permute and
    selects into the attention removed ~85 us of copies but made the attention read Q, K, V
    with a 192-float stride, ~230 us slower (bench/results.d/graphlower.md)."""
    kernels = [lower_node(graph, node) for node in graph.nodes if node.op not in VIEW_OPS]
    if fold_layout:
        from workbench.graph.lower_layout import fold_layout as fold

        kernels = fold(graph, kernels)
    return kernels
