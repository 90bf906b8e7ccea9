"""The graph level: model import, graph passes, lowering to PrimFuncs, ``compile``.

``compile`` lives in ``compiler.py``, so that the submodule never shadows the function.

Example
-------
>>> import torch, numpy as np
>>> from workbench.graph import from_torch, run
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.GELU()).eval()
>>> x = torch.randn(2, 4)
>>> graph = from_torch(model, (x,))
>>> bool(np.allclose(run(graph, x.numpy())[0], model(x).detach().numpy(), atol=1e-5))
True
"""

from __future__ import annotations

from workbench.graph.builder import GraphBuilder
from workbench.graph.errors import GraphError, UnsupportedOperatorError
from workbench.graph.interpreter import run
from workbench.graph.ir import Graph, Node, TensorType


def from_torch(model, example_inputs=(), *, method: str = "auto") -> Graph:
    """Import a PyTorch module; see ``workbench.graph.frontends.torch_fx.from_torch``."""
    from workbench.graph.frontends.torch_fx import from_torch as _from_torch

    return _from_torch(model, example_inputs, method=method)


def from_onnx(model) -> Graph:
    """Import an ONNX model; see ``workbench.graph.frontends.onnx.from_onnx``."""
    from workbench.graph.frontends.onnx import from_onnx as _from_onnx

    return _from_onnx(model)


def compile(model, example_inputs=(), target: str = "cpu", schedules="default", **options):
    """``wb.compile``: see ``workbench.graph.compiler.compile``."""
    from workbench.graph.compiler import compile as _compile

    return _compile(model, example_inputs, target=target, schedules=schedules, **options)


def load(folder):
    """``wb.load``: a saved ``CompiledModel``; see ``workbench.graph.artifact.load``."""
    from workbench.graph.artifact import load as _load

    return _load(folder)


__all__ = ["compile", "load", "Graph", "GraphBuilder", "GraphError", "Node", "TensorType",
           "UnsupportedOperatorError", "from_onnx", "from_torch", "run"]
