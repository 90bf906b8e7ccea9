"""The model zoo (``zoo_models``): standard architectures at tiny sizes with random weights,
imported, run and compiled, each compared with PyTorch (max relative error <= 1e-4).

torchvision's resnet18, mobilenet_v2, efficientnet_b0 and ViT, timm's vit_tiny_patch16_224
(``timm.create_model`` at a small size), transformers' GPT-2, BERT and Llama.
Every model goes through the interpreter and ``wb.compile(target="numpy")``: every lowered
kernel, run by the reference executor. Unscheduled kernels run there as whole numpy arrays
(``schedules="none"``: resnet18 in 0.4 s); the default schedules' loop nests run as Python
loops (48 s for resnet18), so the default schedules are checked on the numpy target for the
models in ``SCHEDULED`` (every transformer, the LSTM, efficientnet_b0's depthwise, squeeze-excitation
and 1x1 convolutions) and on Numba for the Conv1d net (``cpu``); ``WB_ZOO_CPU=1`` compiles
every model for the cpu with its default schedules (minutes on two cores: one Numba compile per
distinct kernel). The ONNX route checks the ONNX frontend: unscheduled kernels.
LSTM and GRU layers are unrolled over the static sequence length; a plain RNN is refused.
The ONNX route (``torch.onnx.export``, then ``wb.compile``): the TorchScript exporter for the
vision models and the Conv1d net; the dynamo exporter (``dynamo=True``, onnxscript) for GPT-2,
BERT and Llama, which the TorchScript exporter cannot export here (``forward() got multiple
values for argument 'use_cache'``; past that, ``aten::diff`` of the causal mask).
"""

from __future__ import annotations

import io
import os

import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph import UnsupportedOperatorError, from_torch, run  # noqa: E402

VISION = ("resnet18", "mobilenet_v2", "efficientnet_b0", "vit")
TEXT = ("gpt2", "gpt2_lm", "bert", "llama")
ALL_CPU = os.environ.get("WB_ZOO_CPU") == "1"
SCHEDULED = {"efficientnet_b0", "vit", "vit_timm", "gpt2", "gpt2_lm", "bert", "llama", "lstm"}
"""Zoo models whose default-scheduled kernels run on the numpy target in ``make test``."""


def _model(name):
    if name in VISION:
        if zoo_models.import_torchvision() is None:
            pytest.skip("torchvision is not installed")
        return zoo_models.vision_models()[name]
    if name in TEXT:
        if zoo_models.import_transformers() is None:
            pytest.skip("transformers is not installed")
        return zoo_models.text_models()[name]
    if name == "vit_timm":
        if zoo_models.import_timm() is None:
            pytest.skip("timm is not installed")
        return zoo_models.timm_vit()
    if name == "lstm":
        torch.manual_seed(0)
        return zoo_models.LSTMNet().eval(), (torch.randn(2, 5, 4),)
    if name == "conv1d":
        torch.manual_seed(0)
        return zoo_models.randomize_bn(zoo_models.Conv1dNet()), (torch.randn(1, 3, 16),)
    raise KeyError(name)


@pytest.mark.parametrize("name", VISION + TEXT + ("vit_timm", "conv1d", "lstm"))
def test_zoo_model_matches_torch(name):
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    arrays = [x.numpy() for x in inputs]
    graph = from_torch(model, inputs)
    zoo_models.assert_close(zoo_models.first(run(graph, *arrays)), expected)
    if ALL_CPU or name == "conv1d":
        compiled = wb.compile(graph, target="cpu")
    else:
        compiled = wb.compile(graph, target="numpy",
                              schedules="default" if name in SCHEDULED else "none")
    zoo_models.assert_close(zoo_models.first(compiled(*arrays)), expected)


def test_exported_program_and_its_module_compile():
    model, inputs = _model("conv1d")
    expected = zoo_models.reference(model, inputs)
    exported = torch.export.export(model, inputs)
    for source in (exported, exported.module()):
        compiled = wb.compile(source, inputs, target="numpy")
        zoo_models.assert_close(compiled(*inputs), expected)


def test_a_plain_rnn_is_refused_with_the_reason():
    model = torch.nn.RNN(4, 3).eval()
    with pytest.raises(UnsupportedOperatorError) as info:
        from_torch(model, (torch.randn(5, 1, 4),))
    assert [op for op, _ in info.value.operators] == ["aten.rnn_tanh.input"]
    assert "nn.RNN is refused" in str(info.value)


ONNX_MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0", "vit", "conv1d", "gpt2", "bert",
               "llama")


@pytest.mark.parametrize("name", ONNX_MODELS)
def test_zoo_model_through_onnx(name):
    pytest.importorskip("onnx")
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    import onnx

    if name in TEXT:
        pytest.importorskip("onnxscript")
        proto = torch.onnx.export(model, inputs, dynamo=True, verbose=False).model_proto
    else:
        buffer = io.BytesIO()
        torch.onnx.export(model, inputs, buffer, dynamo=False)
        proto = onnx.load_from_string(buffer.getvalue())
    compiled = wb.compile(proto, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*[x.numpy() for x in inputs])), expected)
