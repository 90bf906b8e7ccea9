"""More torchvision models (``zoo2_tvision``) against PyTorch (max relative error <= 1e-4).

Every model goes through the interpreter and ``wb.compile(target="numpy",
schedules="none")`` (the lowered kernels as whole numpy arrays: seconds); ``WB_ZOO_CPU=1``
compiles each for the cpu with its default schedules (one to two minutes per model on two
loaded cores: Numba compiles every distinct kernel). The ops these models added (max pooling
in ``ceil_mode``, adaptive average pooling over uneven windows, ``einsum``) are checked on
the cpu target here at odd shapes, and through the ONNX frontend; six models go through the
ONNX route (``torch.onnx.export(..., dynamo=False)``; vgg11_bn cannot: that exporter refuses
uneven adaptive pooling).
``DEFAULT`` lists the models of the default run.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo2_tvision  # noqa: E402
import zoo_models  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph import UnsupportedOperatorError, from_torch, run  # noqa: E402

ALL_CPU = os.environ.get("WB_ZOO_CPU") == "1"
F = torch.nn.functional


def _model(name):
    built = zoo2_tvision.model(name)
    if built is None:
        pytest.skip("torchvision is not installed")
    return built


DEFAULT = ("convnext_small", "swin_small", "maxvit_small", "resnext_small")
ONNX_DEFAULT = ("squeezenet1_1", "swin_small")
"""The models of ``make test`` (a few seconds each; squeezenet1_1's ceil-mode pooling through
ONNX); the others (tens of seconds each through ``torch.export`` alone on a loaded machine)
run with ``WB_ZOO_CPU=1``."""


@pytest.mark.parametrize("name", zoo2_tvision.NAMES)
def test_model_matches_torch(name):
    if not ALL_CPU and name not in DEFAULT:
        pytest.skip("WB_ZOO_CPU=1 runs it")
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    arrays = [x.numpy() for x in inputs]
    graph = from_torch(model, inputs)
    zoo_models.assert_close(run(graph, *arrays)[0], expected)
    if ALL_CPU:
        compiled = wb.compile(graph, target="cpu")
    else:
        compiled = wb.compile(graph, target="numpy", schedules="none")
    zoo_models.assert_close(compiled(*arrays), expected)


def _onnx(model, inputs):
    onnx = pytest.importorskip("onnx")
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.parametrize("name", ["squeezenet1_1", "googlenet", "swin_small", "maxvit_small",
                                  "mobilenet_v3_small", "shufflenet_v2_x0_5"])
def test_model_through_onnx(name):
    if not ALL_CPU and name not in ONNX_DEFAULT:
        pytest.skip("WB_ZOO_CPU=1 runs it")
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    compiled = wb.compile(_onnx(model, inputs), target="numpy", schedules="none")
    zoo_models.assert_close(compiled(*[x.numpy() for x in inputs]), expected)


class _NewOps(torch.nn.Module):
    """The ops the models above added, at odd shapes: max pooling in ``ceil_mode`` (a last
    window hanging over the end, with and without padding), adaptive average pooling over
    uneven and upsampling windows, einsum (batched, with a summed index and an outer
    product); constant padding (ONNX ``Pad``, Swin's); ONNX ``HardSwish`` and ``HardSigmoid``
    (MobileNetV3's). The TorchScript ONNX exporter refuses
    uneven adaptive pooling: ``adaptive=False`` leaves it out."""

    def __init__(self, adaptive: bool = True):
        super().__init__()
        self.adaptive = adaptive

    def forward(self, x, q, k):
        parts = [F.max_pool2d(x, 3, 2, 1, ceil_mode=True), F.max_pool2d(x, 2, ceil_mode=True),
                 F.pad(x, (1, 2, 0, 3), value=0.5), F.hardswish(x * 4), F.hardsigmoid(x * 4)]
        if self.adaptive:
            parts += [F.adaptive_avg_pool2d(x, (5, 3)),
                      F.adaptive_avg_pool2d(x[:, :, :1, :2], (3, 7))]
        pooled = torch.cat([p.flatten(1) for p in parts], 1)
        scores = torch.einsum("bhid,bhjd->bhij", q, k)
        outer = torch.einsum("i,j->ij", q[0, 0, :, 0], k[0, 1, :, 1])
        return torch.cat([pooled, scores.flatten(1), outer.flatten().expand(2, -1)], 1)


_NEW_OPS_INPUTS = ((2, 3, 13, 7), (2, 2, 5, 7), (2, 2, 11, 7))


@pytest.mark.parametrize("route", ["cpu", "onnx"])
def test_new_ops_match_torch(route):
    gen = torch.Generator().manual_seed(3)
    inputs = tuple(torch.randn(*s, generator=gen) for s in _NEW_OPS_INPUTS)
    model = _NewOps(adaptive=route == "cpu").eval()
    expected = zoo_models.reference(model, inputs)
    if route == "cpu":
        compiled = wb.compile(model, inputs, target="cpu")
    else:
        compiled = wb.compile(_onnx(model, inputs), target="numpy")
    np.testing.assert_allclose(compiled(*[x.numpy() for x in inputs]), expected,
                               rtol=1e-4, atol=1e-5)


class _Einsum(torch.nn.Module):
    def __init__(self, equation):
        super().__init__()
        self.equation = equation

    def forward(self, *xs):
        return torch.einsum(self.equation, *xs)


@pytest.mark.parametrize("equation, reason", [
    ("ii->i", "an index repeated within one operand"),
    ("ij,ij->i", "index 'j' has sizes 3 and 1"),
])
def test_einsum_refusals_name_the_reason(equation, reason):
    inputs = (torch.randn(3, 3),) if equation == "ii->i" else (torch.randn(2, 3),
                                                                torch.randn(2, 1))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_torch(_Einsum(equation).eval(), inputs)
    assert [op for op, _ in info.value.operators] == ["aten.einsum.default"]
    assert reason in str(info.value)


def test_onnx_hard_sigmoid_of_any_slope():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 7]) for n in "xy"]
    node = helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)
    proto = helper.make_model(helper.make_graph([node], "g", info[:1], info[1:]))
    onnx.checker.check_model(proto)
    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32) * 4
    compiled = wb.compile(proto, target="numpy")
    np.testing.assert_allclose(compiled(x), np.clip(0.3 * x + 0.4, 0, 1), rtol=1e-6, atol=1e-7)
