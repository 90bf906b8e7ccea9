"""``match_gelu`` and ``sink_reshapes``: a GPT-2 style MLP (``reshape -> addmm -> reshape``,
written-out tanh GELU, residual add) fuses into two matmul kernels, outputs unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import assert_same_outputs

from workbench.graph import GraphBuilder, TensorType, run
from workbench.graph.passes import Pipeline
from workbench.graph.passes.epilogues import match_gelu, sink_reshapes

torch = pytest.importorskip("torch")


class GPT2MLP(torch.nn.Module):
    """Hugging Face's ``Conv1D`` (``addmm`` on the flattened tokens) with ``gelu_new``."""

    def __init__(self, width=24, hidden=40):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(width, hidden) * 0.3)
        self.b1 = torch.nn.Parameter(torch.randn(hidden) * 0.3)
        self.w2 = torch.nn.Parameter(torch.randn(hidden, width) * 0.3)
        self.b2 = torch.nn.Parameter(torch.randn(width) * 0.3)

    def forward(self, x):
        shape = x.shape
        h = torch.addmm(self.b1, x.reshape(-1, shape[-1]), self.w1).view(*shape[:-1], -1)
        h = 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * torch.pow(h, 3.0))))
        y = torch.addmm(self.b2, h.reshape(-1, h.shape[-1]), self.w2).view(shape)
        return x + y


def test_gpt2_mlp_fuses_into_two_matmul_kernels():
    from workbench.graph import from_torch

    torch.manual_seed(0)
    model, x = GPT2MLP(), torch.randn(2, 7, 24)
    graph = from_torch(model, (x,))
    gelu = match_gelu(graph)
    assert [n.op for n in gelu.nodes].count("gelu") == 1
    assert not {"tanh", "pow"} & {n.op for n in gelu.nodes}
    assert_same_outputs(graph, gelu, x.numpy())
    fused = Pipeline()(graph)
    patterns = [n.attrs.get("pattern", n.op) for n in fused.nodes if n.op != "reshape"]
    assert patterns == ["matmul+add+gelu", "matmul+add+add"]  # bias, then GELU / residual
    assert_same_outputs(graph, fused, x.numpy())
    np.testing.assert_allclose(run(fused, x.numpy())[0], model(x).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_gelu_lookalikes_are_left_alone():
    b = GraphBuilder()
    x = b.input("x", TensorType((3, 5)))
    inner = b.node("tanh", [b.node("mul", [b.node("add", [x, b.node(
        "mul", [b.node("pow", [x], {"exponent": 2.0}), b.constant("c", np.float32(0.044715))])]),
        b.constant("s", np.float32(0.7978845608))])])
    g = b.finish([b.node("mul", [b.node("mul", [x, b.constant("h", np.float32(0.5))]),
                                 b.node("add", [inner, b.constant("o", np.float32(1.0))])])])
    assert match_gelu(g) is g  # x ** 2, not x ** 3


def test_reshape_sinks_past_elementwise_with_vector_and_full_operands():
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType((6, 5)))
    r = b.input("r", TensorType((2, 3, 5)))
    m = b.node("matmul", [x, b.constant("w", rng.standard_normal((5, 5), "float32"))])
    v = b.node("reshape", [m], {"shape": [2, 3, 5]})
    y = b.node("add", [b.node("mul", [v, b.constant("g", rng.standard_normal(5, "float32"))]),
                       r])
    g = b.finish([b.node("relu", [y])])
    out = sink_reshapes(g)
    ops = [n.op for n in out.nodes]
    assert ops[-1] == "reshape" and ops.count("reshape") == 2  # the output's, r's
    assert out.outputs == g.outputs and out.type_of(out.outputs[0]) == g.type_of(g.outputs[0])
    assert_same_outputs(g, out, rng.standard_normal((6, 5)).astype("float32"),
                        rng.standard_normal((2, 3, 5)).astype("float32"))
    fused = Pipeline()(g)
    assert [n.attrs.get("pattern") for n in fused.nodes if n.op == "fused"] == \
        ["matmul+mul+add+relu"]
