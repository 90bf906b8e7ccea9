"""Rewrites that let a transformer's elementwise tails fuse into their matmul.

- ``match_gelu``: the tanh GELU written out in elementwise ops (Hugging Face's
  ``NewGELUActivation``, GPT-2's ``gelu_new``:
  ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3))))``) becomes one
  ``gelu(approximate="tanh")`` node. Written out, ``x`` has two consumers, so fusion (a
  chain) stopped at it and the GELU ran as two kernels after the matmul.
- ``sink_reshapes``: an elementwise node reading ``reshape(x)`` as its only consumer
  runs on ``x``'s shape instead, the reshape moving after it (its other operands
  reshaped too; a reshape is a view). A ``Linear`` on a 3-D input is exported as
  ``reshape -> matmul -> reshape``: the residual ``add`` and the activation after it read
  the reshape, not the matmul, and were kernels of their own.

Both keep the graph's values and outputs: each rewritten node keeps its name and type
(the last node of a rewrite produces it).
"""

from __future__ import annotations

import math

import numpy as np

from workbench.graph.ir import Graph, Node, TensorType
from workbench.graph.ops import kind
from workbench.graph.passes.dce import eliminate_dead_code
from workbench.ir.names import fresh_name

_AXIS_OPS = ("batch_norm", "bias_add")
"""Elementwise ops whose operands run along a named axis (not moved across a reshape)."""
_GELU_CONSTANTS = (0.5, 0.044715, math.sqrt(2.0 / math.pi), 1.0)


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.constants.get(name)
    if value is None or value.size != 1:
        return None
    return float(np.asarray(value).reshape(()))


class _Matcher:
    """Structural matches over ``graph`` (commutative ``add``/``mul``)."""

    def __init__(self, graph: Graph):
        self.graph = graph

    def op(self, name: str, op: str) -> Node | None:
        node = self.graph.producer(name)
        return node if node is not None and node.op == op else None

    def with_scalar(self, name: str, op: str, value: float) -> str | None:
        """``name`` is ``op(v, value)`` (either order): v, else None."""
        node = self.op(name, op)
        if node is None or len(node.inputs) != 2:
            return None
        for pos in (0, 1):
            c = _scalar(self.graph, node.inputs[pos])
            if c is not None and math.isclose(c, value, rel_tol=1e-6):
                return node.inputs[1 - pos]
        return None

    def tanh_gelu_input(self, name: str) -> str | None:
        """``x`` when ``name`` is the written-out tanh GELU of ``x``."""
        half, poly_scale, sqrt_2_pi, one = _GELU_CONSTANTS
        node = self.op(name, "mul")
        if node is None or len(node.inputs) != 2:
            return None
        for pos in (0, 1):
            x = self.with_scalar(node.inputs[pos], "mul", half)
            inner = self.with_scalar(node.inputs[1 - pos], "add", one)
            if x is None or inner is None or self.op(inner, "tanh") is None:
                continue
            cubic = self.with_scalar(self.op(inner, "tanh").inputs[0], "mul", sqrt_2_pi)
            add = self.op(cubic, "add") if cubic is not None else None
            if add is None or x not in add.inputs:
                continue
            other = add.inputs[1] if add.inputs[0] == x else add.inputs[0]
            power = self.with_scalar(other, "mul", poly_scale)
            pow_node = self.op(power, "pow") if power is not None else None
            if pow_node is not None and pow_node.inputs[0] == x and \
                    float(pow_node.attrs.get("exponent", 0)) == 3.0:
                return x
        return None


def match_gelu(graph: Graph) -> Graph:
    """Replace written-out tanh GELUs by ``gelu(approximate="tanh")`` (module docstring).

    Example
    -------
    >>> import torch
    >>> from workbench.graph import from_torch
    >>> class NewGELU(torch.nn.Module):
    ...     def forward(self, x):
    ...         return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 *
    ...                                                                 torch.pow(x, 3.0))))
    >>> g = match_gelu(from_torch(NewGELU(), (torch.randn(2, 8),)))
    >>> [(n.op, n.attrs) for n in g.nodes]
    [('gelu', {'approximate': 'tanh'})]
    """
    match = _Matcher(graph)
    nodes, changed = [], False
    for node in graph.nodes:
        x = match.tanh_gelu_input(node.name) if node.op == "mul" else None
        if x is not None and graph.type_of(x).shape == node.type.shape:
            node = Node(node.name, "gelu", (x,), {"approximate": "tanh"}, node.type,
                        node.source)
            changed = True
        nodes.append(node)
    if not changed:
        return graph
    return eliminate_dead_code(graph.replace(nodes=tuple(nodes)))


def _operand_as(graph: Graph, name: str, out_shape: tuple, flat_shape: tuple) -> tuple | None:
    """How operand ``name`` of an elementwise node of shape ``out_shape`` reads in
    ``flat_shape``: ``("same", name)`` (a scalar or a vector along a kept last axis),
    ``("reshape", name)`` (full shape: reshaped too), or None (cannot follow)."""
    shape = graph.type_of(name).shape
    if math.prod(shape) == 1:
        return ("same", name)
    if tuple(shape) == tuple(out_shape):
        return ("reshape", name)
    last = [d for d in shape if d != 1]
    if len(last) == 1 and shape[-1] == last[0] == out_shape[-1] == flat_shape[-1] and \
            len(shape) <= len(flat_shape):
        return ("same", name)
    return None


def sink_reshapes(graph: Graph) -> Graph:
    """Move reshapes after the elementwise nodes that read them (module docstring).

    Example
    -------
    >>> from workbench.graph.ir import Graph, Node, TensorType
    >>> g = Graph(inputs={"x": TensorType((8, 4)), "r": TensorType((2, 4, 4))}, nodes=(
    ...     Node("e", "exp", ("x",), {}, TensorType((8, 4))),
    ...     Node("v", "reshape", ("e",), {"shape": [2, 4, 4]}, TensorType((2, 4, 4))),
    ...     Node("y", "add", ("v", "r"), {}, TensorType((2, 4, 4)))), outputs=("y",))
    >>> [(n.name, n.op, n.inputs) for n in sink_reshapes(g).nodes]  # doctest: +NORMALIZE_WHITESPACE
    [('e', 'exp', ('x',)), ('y_r', 'reshape', ('r',)), ('y_flat', 'add', ('e', 'y_r')),
     ('y', 'reshape', ('y_flat',))]
    """
    operand_views: set[str] = set()  # reshapes this pass made of operands: never sunk
    changed = True
    while changed:
        changed = False
        users = graph.consumers()
        nodes: list[Node] = []
        taken = {n.name for n in graph.nodes} | set(graph.inputs) | set(graph.constants)
        for node in graph.nodes:
            rewritten = None if changed else _sink(graph, node, users, taken, operand_views)
            if rewritten is None:
                nodes.append(node)
                continue
            nodes.extend(rewritten)
            changed = True
        graph = eliminate_dead_code(graph.replace(nodes=tuple(nodes)))
    return graph


def _sink(graph: Graph, node: Node, users: dict, taken: set,
          operand_views: set) -> list[Node] | None:
    if kind(node.op) != "elementwise" or node.op in _AXIS_OPS or not node.inputs:
        return None
    for position, name in enumerate(node.inputs):
        view = graph.producer(name)
        if view is None or view.op != "reshape" or name in graph.outputs or \
                name in operand_views or len(users.get(name, [])) != 1 or \
                view.type.shape != node.type.shape:
            continue
        source = view.inputs[0]
        producer = graph.producer(source)
        if producer is None or len(users.get(source, [])) != 1:
            continue  # nothing to fuse into
        flat = graph.type_of(source).shape
        plan = []
        for other_position, other in enumerate(node.inputs):
            if other_position == position:
                plan.append(("source", source))
                continue
            how = _operand_as(graph, other, node.type.shape, flat)
            if how is None:
                break
            plan.append(how)
        else:
            return _rewrite(graph, node, plan, flat, taken, operand_views)
    return None


def _rewrite(graph: Graph, node: Node, plan: list, flat: tuple, taken: set,
             operand_views: set) -> list[Node]:
    out: list[Node] = []
    inputs = []
    for how, name in plan:
        if how == "reshape":
            reshaped = fresh_name(f"{node.name}_{name}", taken)
            operand_views.add(reshaped)
            out.append(Node(reshaped, "reshape", (name,), {"shape": list(flat)},
                            TensorType(tuple(flat), graph.type_of(name).dtype), node.source))
            name = reshaped
        inputs.append(name)
    inner = fresh_name(f"{node.name}_flat", taken)
    out.append(node.replace(name=inner, inputs=tuple(inputs),
                            type=TensorType(tuple(flat), node.type.dtype)))
    out.append(Node(node.name, "reshape", (inner,), {"shape": list(node.type.shape)},
                    node.type, node.source))
    return out
