"""BatchNorm folding: ``batch_norm(conv2d(x, w, b))`` with constant statistics becomes one
convolution with rescaled weights and a shifted bias."""

from __future__ import annotations

import numpy as np

from workbench.graph.ir import Graph, Node
from workbench.graph.passes.dce import eliminate_dead_code


def _foldable(graph: Graph, bn: Node, users: dict) -> Node | None:
    if bn.op != "batch_norm" or not all(graph.is_constant(i) for i in bn.inputs[1:]):
        return None
    conv = graph.producer(bn.inputs[0])
    if conv is None or conv.op != "conv2d" or conv.name in graph.outputs:
        return None
    if len(users.get(conv.name, [])) != 1 or not graph.is_constant(conv.inputs[1]):
        return None
    if len(conv.inputs) > 2 and not graph.is_constant(conv.inputs[2]):
        return None
    return conv


def fold_batchnorm(graph: Graph) -> Graph:
    """Fold every inference batch norm that directly follows a conv2d into the conv.

    ``scale = gamma / sqrt(var + eps)``; ``w' = w * scale[k]``; ``b' = (b - mean) * scale + beta``.
    The new conv takes the batch norm's name; the old conv disappears.
    """
    users = graph.consumers()
    constants = dict(graph.constants)
    replaced: dict[str, Node] = {}
    dropped: set[str] = set()
    for bn in graph.nodes:
        conv = _foldable(graph, bn, users)
        if conv is None:
            continue
        mean, var, gamma, beta = (constants[i].astype(np.float64) for i in bn.inputs[1:])
        weight = constants[conv.inputs[1]]
        bias = constants[conv.inputs[2]] if len(conv.inputs) > 2 else np.zeros(weight.shape[0])
        scale = gamma / np.sqrt(var + bn.attrs["eps"])
        w_name, b_name = f"{bn.name}_weight", f"{bn.name}_bias"
        constants[w_name] = (weight * scale[:, None, None, None]).astype(weight.dtype)
        constants[b_name] = ((bias - mean) * scale + beta).astype(weight.dtype)
        replaced[bn.name] = conv.replace(name=bn.name, inputs=(conv.inputs[0], w_name, b_name),
                                         source=conv.source)
        dropped.add(conv.name)
    if not replaced:
        return graph
    nodes = tuple(replaced.get(n.name, n) for n in graph.nodes if n.name not in dropped)
    return eliminate_dead_code(graph.replace(nodes=nodes, constants=constants))
