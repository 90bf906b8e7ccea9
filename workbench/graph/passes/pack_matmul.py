"""``pack_matmul``: a matmul by a constant weight reads it in column panels packed once, at
compile time.

The cpu target's matmul schedules compute a tile of rows x ``tj`` columns from a panel of
``B``'s ``tj`` columns contiguous along ``k``; the ``packed`` recipe
(``recipes.matmul.packed_cpu``) copies each panel out of ``B`` on every call, which for a
constant weight repeats the same copy at every call (eight rows by GPT-2's vocabulary,
``8 x 256 -> 50257``: 5.4 ms, 4.2 of them the copy), and ``register_tile`` reads a small
``B`` in place, a row of ``B`` per ``k`` (``2048 x 256 -> 256``: 2.0-3.1 ms, 1.1-1.4 from
panels). Here ``B`` becomes a ``pack_columns`` node folded into a constant
``(N // tj, K, tj)`` and the matmul a ``matmul_packed`` reading it
(``ops.matmul_packed``): ::

    matmul(A, B)  ->  matmul_packed(A, pack_columns(B, tj))      # pack_columns: a constant

``tj`` is the target's ``columns(M, N, K)`` (``graph_cpu_ops.panel_width``: three vectors,
or two where they divide ``N`` and three do not); a matmul whose ``N`` it does not divide
is left alone (``pad_matmul``, run first, pads a constant ``B`` to it). A weight several
matmuls read is packed once.

Example
-------
>>> import numpy as np
>>> from workbench.graph.builder import GraphBuilder
>>> from workbench.graph.ir import TensorType
>>> b = GraphBuilder()
>>> x = b.input("x", TensorType((8, 12)))
>>> y = b.node("matmul", [x, b.constant("w", np.ones((12, 32), "float32"))])
>>> g = pack_matmul(b.finish([y]), lambda m, n, k: 16)
>>> [(n.op, n.type.shape) for n in g.nodes], g.constants["w_panels16"].shape
([('matmul_packed', (8, 32))], (2, 12, 16))
"""

from __future__ import annotations

import math

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import VIEW_ATTRS
from workbench.graph.passes.pad_matmul import Columns  # (M, N, K) -> the panel width


def _panels(graph: Graph, node: Node, columns: Columns) -> int | None:
    """The panel width ``node`` is packed with, or None where it is not: a ``matmul`` (no
    folded view) by a constant float32 ``(K, N)`` weight whose ``N`` the width divides."""
    if node.op != "matmul" or any(key in node.attrs for key in VIEW_ATTRS):
        return None
    a, b = node.inputs
    if b not in graph.constants or len(graph.type_of(b).shape) != 2 or \
            graph.type_of(b).dtype != "float32" or len(graph.type_of(a).shape) < 2:
        return None
    K, N = graph.type_of(b).shape
    tj = columns(math.prod(graph.type_of(a).shape[:-1]), N, K)
    return tj if tj is not None and N % tj == 0 else None


def pack_matmul(graph: Graph, columns: Columns) -> Graph:
    """Every matmul by a constant weight whose columns ``columns(M, N, K)`` divides reading
    the weight in panels packed at compile time (module docstring); ``graph`` itself where
    none is."""
    from workbench.graph.passes.constant_fold import fold_constants

    nodes: list[Node] = []
    packs: dict[str, Node] = {}
    for node in graph.nodes:
        tj = _panels(graph, node, columns)
        if tj is None:
            nodes.append(node)
            continue
        weight = node.inputs[1]
        K, N = graph.type_of(weight).shape
        name = f"{weight}_panels{tj}"
        if name not in packs:
            packs[name] = Node(name, "pack_columns", (weight,), {"tj": tj},
                               TensorType((N // tj, K, tj), "float32"), node.source)
            nodes.append(packs[name])
        nodes.append(node.replace(op="matmul_packed", inputs=(node.inputs[0], name)))
    if not packs:
        return graph
    # folding drops the unpacked weights that nothing else reads
    return fold_constants(graph.replace(nodes=tuple(nodes)))


__all__ = ["pack_matmul"]
