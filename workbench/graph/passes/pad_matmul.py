"""``pad_matmul``: a matmul by a constant whose columns no register tile divides, computed on
the weight padded to a multiple of the tile, its output sliced back.

The cpu target's matmul rule (``recipes.graph_cpu_ops.matmul_tiled``) needs ``N`` a multiple
of its tile (``matmul_columns``: 16 or 64 float32). A classifier's 1000 classes, GPT-2's
50257 tokens or an MLP's 3000 units fell to the generic schedule, several times slower
(``128 x 1000 x 1000``: 11 ms where the tiled 1024 takes a fraction of it). The weight
``B`` is a constant, so the cpu layout pads it once, at compile time: ::

    slice(op(matmul(A, pad(B)), pad(c)), N)  ==  op(matmul(A, B), c)

The padded columns repeat B's last column (``np.pad(mode="edge")``), and so do the padded
constants of the elementwise ops that follow (a bias): the padded columns compute the values
of column ``N - 1`` again (no division by zero, no overflow the model did not have), and the
slice drops them. The elementwise readers move into the padded shape while each reads the
value alone (one reader, no other non-constant operand spanning the columns), so the bias,
the activation and the matmul stay one kernel; the slice (a copy of the ``M x N`` output,
``1 / K`` of the matmul's work) comes after them. TVM's ``pad_einsum`` pads the same way,
per call; a constant weight is padded once here.

Example
-------
>>> from workbench.graph.builder import GraphBuilder
>>> from workbench.graph.ir import TensorType
>>> b = GraphBuilder()
>>> x = b.input("x", TensorType((7, 12)))
>>> y = b.node("matmul", [x, b.constant("w", np.ones((12, 20), "float32"))])
>>> y = b.node("relu", [b.node("add", [y, b.constant("bias", np.ones(20, "float32"))])])
>>> g = pad_matmul(b.finish([y]), lambda m, n, k: 16)
>>> [(n.op, n.type.shape) for n in g.nodes]
[('matmul', (7, 32)), ('add', (7, 32)), ('relu', (7, 32)), ('slice', (7, 20))]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import VIEW_ATTRS, kind
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.graph.passes.epilogues import _AXIS_OPS

Columns = Callable[[int, int, int], "int | None"]
"""``(M, N, K)`` -> the multiple of ``N`` the target's matmul schedule takes (None: none)."""


def _padded_operand(graph: Graph, name: str, n: int, padded: int, constants: dict,
                    staged: dict, where: str) -> str | None:
    """``name`` as an elementwise op on the padded value reads it, or None: a number or a
    value constant along the columns as it is, a constant spanning them padded (edge, into
    ``staged``)."""
    shape = graph.type_of(name).shape
    if not shape or shape[-1] == 1:
        return name
    if shape[-1] != n or name not in constants:
        return None
    array = constants[name].reshape(shape)
    pad = [(0, 0)] * (len(shape) - 1) + [(0, padded - n)]
    staged[f"{name}_{where}"] = np.ascontiguousarray(np.pad(array, pad, mode="edge"))
    return f"{name}_{where}"


def _sole_reader(graph: Graph, users: dict, name: str) -> Node | None:
    readers = users.get(name, [])
    if len(readers) != 1 or name in graph.outputs:
        return None
    return readers[0]


def _pad_one(graph: Graph, node: Node, columns: Columns, users: dict,
             constants: dict) -> dict[str, list[Node]] | None:
    """Node name -> its replacement, for the matmul ``node`` and the elementwise readers that
    move into its padded shape; None where ``node`` is left as it is."""
    if node.op != "matmul" or any(key in node.attrs for key in VIEW_ATTRS):
        return None
    a, b = node.inputs
    if b not in constants or len(graph.type_of(b).shape) != 2:
        return None
    K, n = graph.type_of(b).shape
    M = math.prod(graph.type_of(a).shape[:-1])
    multiple = columns(M, n, K)
    if multiple is None or n % multiple == 0:
        return None
    padded = -(-n // multiple) * multiple
    weight = f"{b}_{node.name}_padded"
    constants[weight] = np.ascontiguousarray(np.pad(constants[b], [(0, 0), (0, padded - n)],
                                                    mode="edge"))

    def widened(t: TensorType) -> TensorType:
        return TensorType(t.shape[:-1] + (padded,), t.dtype)

    last = node.replace(name=f"{node.name}_padded", inputs=(a, weight),
                        type=widened(node.type))
    out, chain = {node.name: [last]}, node.name
    while (reader := _sole_reader(graph, users, chain)) is not None:
        moved = _moved_reader(graph, reader, chain, last.name, n, padded, constants)
        if moved is None:
            break
        last = moved.replace(type=widened(reader.type))
        out[reader.name], chain = [last], reader.name
    rank = len(graph.type_of(chain).shape)
    out[chain].append(Node(chain, "slice", (last.name,), {
        "axis": rank - 1, "start": 0, "stop": n, "step": 1}, graph.type_of(chain)))
    return out


def _moved_reader(graph: Graph, reader: Node, chain: str, source: str, n: int, padded: int,
                  constants: dict) -> Node | None:
    """The elementwise ``reader`` of ``chain`` reading its padded form ``source`` instead
    (its type still the unpadded one), or None where it cannot."""
    if kind(reader.op) != "elementwise" or reader.op in _AXIS_OPS or \
            any(key in reader.attrs for key in VIEW_ATTRS) or \
            reader.type.shape != graph.type_of(chain).shape:
        return None
    inputs, staged = [], {}
    for position, name in enumerate(reader.inputs):
        operand = source if name == chain else _padded_operand(
            graph, name, n, padded, constants, staged, f"{reader.name}_in{position}_padded")
        if operand is None:
            return None
        inputs.append(operand)
    constants.update(staged)
    return reader.replace(name=f"{reader.name}_padded", inputs=tuple(inputs))


def pad_matmul(graph: Graph, columns: Columns) -> Graph:
    """Every matmul by a constant 2-D ``B`` whose ``N`` is no multiple of ``columns(M, N,
    K)`` computed on ``B`` padded to one, with the elementwise readers it carries, and
    sliced back (module docstring); ``graph`` itself where none is."""
    users, constants = graph.consumers(), dict(graph.constants)
    rewritten: dict[str, list[Node]] = {}
    for node in graph.nodes:
        if node.name not in rewritten:
            rewritten.update(_pad_one(graph, node, columns, users, constants) or {})
    if not rewritten:
        return graph
    nodes = [m for n in graph.nodes for m in rewritten.get(n.name, [n])]
    # the unpadded weights go (a vocabulary's is 150 MB)
    return eliminate_dead_code(graph.replace(nodes=tuple(nodes), constants=constants))


__all__ = ["pad_matmul"]
