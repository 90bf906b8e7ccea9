"""``match_rms_norm``: RMS normalisation written out, as one operator.

transformers writes Llama's, Mistral's, Qwen's and T5's norm as ::

    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return self.weight * x

which the frontends import as ``pow``, ``mean``, ``add``, ``rsqrt``, ``mul`` (and ``mul`` by
the weight, unless constant folding moved the weight into the next projection's matrix):
three kernels (``pow``; ``mean+add+rsqrt``; ``mul``), the activations read three times and
the squares written once. ``match_rms_norm`` replaces the ``mul`` by ``rms_norm(x, gamma)``
(``ops.rms_norm``, lowered as ``workbench.ops.rmsnorm``: a row sum of squares and the
normalisation, one kernel; the row kernels of ``rows_cuda`` on the GPU); ``gamma`` is the
weight where a constant one multiplies the result (its only reader), else ones.

Example
-------
>>> import torch
>>> from workbench.graph import from_torch
>>> class RMSNorm(torch.nn.Module):
...     def forward(self, x):
...         return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
>>> g = match_rms_norm(from_torch(RMSNorm(), (torch.randn(2, 8),)))
>>> [(n.op, n.attrs) for n in g.nodes]
[('rms_norm', {'eps': 1e-06})]
"""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node
from workbench.graph.passes.dce import eliminate_dead_code


def _scalar(graph: Graph, name: str) -> float | None:
    """The constant ``name`` holds where it is one number (a float32 ``1e-6`` as ``1e-06``,
    not ``9.99999997e-07``), else None."""
    value = graph.constants.get(name)
    if value is None or value.size != 1:
        return None
    return float(str(value.reshape(-1)[0]))


def _squared(graph: Graph, name: str) -> str | None:
    """``x`` where ``name`` is ``x ** 2`` or ``x * x``."""
    node = graph.producer(name)
    if node is not None and node.op == "pow" and node.attrs.get("exponent") == 2.0 \
            and len(node.inputs) == 1:
        return node.inputs[0]
    if node is not None and node.op == "mul" and len(node.inputs) == 2 and \
            node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _inverse_rms(graph: Graph, name: str) -> tuple[str, float] | None:
    """``(x, eps)`` where ``name`` is ``rsqrt(mean(x ** 2, last axis, keepdim) + eps)``."""
    rsqrt = graph.producer(name)
    if rsqrt is None or rsqrt.op != "rsqrt":
        return None
    total = graph.producer(rsqrt.inputs[0])
    if total is None or total.op != "add" or len(total.inputs) != 2:
        return None
    for mean_name, eps_name in (total.inputs, total.inputs[::-1]):
        eps, mean = _scalar(graph, eps_name), graph.producer(mean_name)
        if eps is None or mean is None or mean.op != "mean" or \
                not mean.attrs.get("keepdims", False):
            continue
        x = _squared(graph, mean.inputs[0])
        rank = len(graph.type_of(mean.inputs[0]).shape)
        if x is not None and [a % rank for a in mean.attrs["axes"]] == [rank - 1]:
            return x, eps
    return None


def normalised_input(graph: Graph, node: Node) -> tuple[str, float] | None:
    """``(x, eps)`` where ``node`` is ``x * rsqrt(mean(x ** 2, -1, keepdim) + eps)`` (either
    order, floating point, the result of ``x``'s shape), else None."""
    if node.op != "mul" or len(node.inputs) != 2 or np.dtype(node.type.dtype).kind != "f":
        return None
    for x, scale in (node.inputs, node.inputs[::-1]):
        found = _inverse_rms(graph, scale)
        if found is not None and found[0] == x and graph.type_of(x).shape == node.type.shape:
            return found
    return None


def _weight(graph: Graph, node: Node, users: dict) -> tuple[Node, np.ndarray] | None:
    """``(consumer, gamma)`` where ``node``'s only reader multiplies it by a constant vector
    along the last axis (the norm's weight)."""
    readers = users.get(node.name, [])
    if len(readers) != 1 or node.name in graph.outputs:
        return None
    reader = readers[0]
    if reader.op != "mul" or len(reader.inputs) != 2 or reader.type != node.type:
        return None
    other = reader.inputs[1] if reader.inputs[0] == node.name else reader.inputs[0]
    weight, width = graph.constants.get(other), node.type.shape[-1]
    if weight is None or weight.size != width or weight.shape[-1:] != (width,):
        return None
    return reader, weight.reshape(width).astype(node.type.dtype)


def match_rms_norm(graph: Graph) -> Graph:
    """Replace each written-out RMS normalisation by ``rms_norm`` (module docstring)."""
    users = graph.consumers()
    constants = dict(graph.constants)
    replaced: dict[str, Node] = {}  # node name -> the rms_norm computed in its place
    dropped: set[str] = set()  # a weight's multiplication, now inside the rms_norm
    for node in graph.nodes:
        found = normalised_input(graph, node)
        if found is None:
            continue
        x, eps = found
        weighted = _weight(graph, node, users)
        target, gamma = weighted or (node, np.ones(node.type.shape[-1], node.type.dtype))
        if weighted is not None:
            dropped.add(node.name)
        gamma_name = f"{target.name}_gamma"
        constants[gamma_name] = gamma
        replaced[target.name] = Node(target.name, "rms_norm", (x, gamma_name), {"eps": eps},
                                     target.type, target.source)
    if not replaced:
        return graph
    nodes = tuple(replaced.get(n.name, n) for n in graph.nodes if n.name not in dropped)
    return eliminate_dead_code(graph.replace(nodes=nodes, constants=constants))


__all__ = ["match_rms_norm", "normalised_input"]
