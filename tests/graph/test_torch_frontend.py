"""The PyTorch frontend and the numpy interpreter, checked against torch on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from graph_models import Block, Misc, SmallCNN, randomize_bn  # noqa: E402

from workbench.graph import UnsupportedOperatorError, from_torch, run  # noqa: E402


def _check(model, inputs, method):
    graph = from_torch(model, inputs, method=method)
    expected = model(*inputs).detach().numpy()
    got = run(graph, *[x.numpy() for x in inputs])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    return graph


@pytest.mark.parametrize("method", ["export", "fx"])
def test_small_cnn_matches_torch(method):
    torch.manual_seed(0)
    graph = _check(randomize_bn(SmallCNN()), (torch.randn(2, 3, 8, 8),), method)
    ops = {node.op for node in graph.nodes}
    assert {"conv2d", "batch_norm", "relu", "silu", "max_pool2d", "avg_pool2d",
            "reshape", "matmul", "add"} <= ops
    if method == "export":  # make_fx decomposes adaptive pooling into a mean
        assert "adaptive_avg_pool2d" in ops


@pytest.mark.parametrize("method", ["export", "fx"])
def test_transformer_block_matches_torch(method):
    torch.manual_seed(1)
    graph = _check(Block().eval(), (torch.randn(2, 5, 8),), method)
    ops = {node.op for node in graph.nodes}
    assert {"layer_norm", "sdpa", "gelu", "transpose", "reshape", "matmul"} <= ops


def test_softmax_mul_matmul_transpose():
    torch.manual_seed(2)
    graph = _check(Misc(), (torch.randn(2, 3, 4), torch.randn(2, 3, 4)), "export")
    assert [n.op for n in graph.nodes] == ["mul", "softmax", "transpose", "matmul", "add"]


def test_gelu_tanh_sigmoid_and_causal_attention():
    class Model(torch.nn.Module):
        def forward(self, q, k):
            a = torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True)
            return torch.nn.functional.gelu(a, approximate="tanh") * torch.sigmoid(q)

    torch.manual_seed(3)
    _check(Model(), (torch.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4)), "export")


def test_unsupported_operators_are_listed_in_one_error_with_locations():
    class Bad(torch.nn.Module):
        def forward(self, x):
            y = torch.logcumsumexp(x, 0)  # line A
            return torch.flip(y, [0]) + torch.cumprod(x, 0)

    with pytest.raises(UnsupportedOperatorError) as info:
        from_torch(Bad(), (torch.randn(3),), method="export")
    ops = [op for op, _ in info.value.operators]
    assert ops == ["aten.logcumsumexp.default", "aten.flip.default", "aten.cumprod.default"]
    assert all("test_torch_frontend.py:" in where for _, where in info.value.operators)
    assert "3 unsupported operator use(s)" in str(info.value)
