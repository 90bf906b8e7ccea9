"""Depthwise convolutions on the CNHW activations of the GPU's convolution layout
(``passes.conv_gemm._depthwise_planes``): the ``(C, N, H, W)`` value the matmul before wrote
read as one image of ``C * N`` channels (the weight and bias repeated ``N`` times), so that
mobilenet's and efficientnet's two transposes around each depthwise convolution go; values
against PyTorch through the graph interpreter (torchvision's models) and through
``wb.compile(target="cuda")`` on the simulator (an inverted-residual net at odd sizes)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.compiler import import_graph  # noqa: E402
from workbench.graph.interpreter import run  # noqa: E402
from workbench.graph.passes.conv_gemm import cuda_layout  # noqa: E402
from workbench.graph.passes.pipeline import Pipeline  # noqa: E402


def _all_nodes(graph):
    """The graph's nodes, a fused group's members in place of the group."""
    for node in graph.nodes:
        if node.op == "fused":
            yield from _all_nodes(node.attrs["graph"])
        else:
            yield node


def _cuda_graph(model, x):
    return Pipeline()(import_graph(model, (x,)), layout=cuda_layout)


@pytest.mark.parametrize("name", ["mobilenet_v2", "efficientnet_b0"])
def test_torchvision_models_keep_cnhw_through_their_depthwise_convolutions(name):
    models = zoo_models.import_torchvision()
    if models is None:
        pytest.skip("torchvision is not installed")
    model, _ = zoo_models.vision_models()[name]
    torch.manual_seed(1)
    x = torch.randn(3, 3, 32, 32)  # batch 3: the weights repeated 3 times
    graph = _cuda_graph(model, x)
    nodes = list(_all_nodes(graph))
    assert [n.op for n in nodes].count("transpose") == 1  # where the features leave
    depthwise = [n for n in nodes if n.op == "conv2d"]
    assert depthwise and all(n.type.shape[0] == 1 and n.attrs["groups"] == n.type.shape[1]
                             for n in depthwise)
    with torch.no_grad():
        want = model(x).numpy()
    got = run(graph, x.numpy())[0]
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def _inverted_residual_net(multiplier: int = 1):
    """A stem, then 1 x 1 expand, a 3 x 3 depthwise (``multiplier`` outputs per channel),
    1 x 1 project, a residual; a strided depthwise, a 1 x 1 head, the mean of each map."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            hidden = 6 * multiplier
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.expand = nn.Conv2d(4, 6, 1)
            self.depthwise = nn.Conv2d(6, hidden, 3, padding=1, groups=6)
            self.project = nn.Conv2d(hidden, 4, 1)
            self.down = nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4, bias=False)
            self.head = nn.Conv2d(4, 5, 1)

        def forward(self, x):
            x = self.stem(x)
            y = nn.functional.relu6(self.depthwise(nn.functional.relu6(self.expand(x))))
            y = x + self.project(y)
            return self.head(torch.relu(self.down(y))).mean((2, 3))

    torch.manual_seed(0)
    return Net().eval()


@pytest.mark.cuda
def test_an_inverted_residual_net_on_cuda_transposes_only_where_its_maps_leave():
    model, x = _inverted_residual_net(), torch.randn(2, 3, 9, 7)
    compiled = wb.compile(model, (x,), target="cuda")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-5)
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("transpose") == 1, patterns  # where the maps leave: the mean
    convs = [k for k in compiled.kernels if k.pattern.startswith("conv2d")]
    assert sorted(tuple(k.shapes[0]) for k in convs) == [(1, 4 * 2, 9, 7), (1, 6 * 2, 9, 7)]
    assert "conv2d" not in patterns[0]  # the stem is a matmul of its windows


def test_a_channel_multiplier_keeps_the_nchw_convolution():
    model, x = _inverted_residual_net(multiplier=2), torch.randn(2, 3, 9, 7)
    graph = _cuda_graph(model, x)
    nodes = list(_all_nodes(graph))
    (multiplied,) = [n for n in nodes if n.op == "conv2d" and n.attrs["groups"] == 6]
    assert multiplied.type.shape == (2, 12, 9, 7)  # NCHW, batch 2: not rewritten
    assert [n.op for n in nodes].count("transpose") == 3  # into it, out of it, the mean
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(run(graph, x.numpy())[0], want, rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
def test_an_input_read_by_a_pointwise_convolution_and_a_residual_is_transposed_once():
    """The layout pass transposes the model's input for the 1 x 1 convolution and for the
    residual add: the same value, one kernel (CSE after the layout pass)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.expand = nn.Conv2d(4, 6, 1)
            self.depthwise = nn.Conv2d(6, 6, 3, padding=1, groups=6)
            self.project = nn.Conv2d(6, 4, 1)

        def forward(self, x):
            return x + self.project(torch.relu(self.depthwise(torch.relu(self.expand(x)))))

    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(2, 4, 9, 7)
    compiled = wb.compile(model, (x,), target="cuda")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(compiled(x.numpy()), want, rtol=1e-4, atol=1e-5)
    patterns = [k.pattern for k in compiled.kernels]
    assert patterns.count("transpose") == 2, patterns  # into CNHW once, back once
