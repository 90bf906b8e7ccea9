"""timm's models beyond ``vit_tiny`` (``zoo2_timmz.BUILDERS``: DeiT and its distilled token,
ConvNeXt, ResNet-D/-T, timm's EfficientNet and MobileNetV3, MobileViT, LeViT, PoolFormer v1/v2,
RegNetX, ReXNet, GhostNet, EdgeNeXt, EfficientFormer v1/v2, CaiT, CoaT-Lite, XCiT), random
weights at small sizes, compared with PyTorch (max relative error <= 1e-4).

By default: the models of ``DEFAULT`` (one per architecture family that the others share)
through the interpreter and ``wb.compile(target="numpy", schedules="none")`` (whole-array
numpy kernels: the import and lowering, cheaply), ``CPU_DEFAULT`` compiled for the cpu with
its default schedules, and ``ONNX_DEFAULT`` through ONNX (the TorchScript exporter: GroupNorm as
InstanceNormalization, PoolFormer's AveragePool without the padding, hard-swish and
hard-sigmoid, XCiT's ReduceL2). ``WB_ZOO_CPU=1`` compiles every model for the cpu (Numba:
6 s to 130 s a model on two loaded cores).
"""

from __future__ import annotations

import io
import os

import pytest

torch = pytest.importorskip("torch")

import zoo2_timmz  # noqa: E402
import zoo_models  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph import from_torch, run  # noqa: E402

ALL_CPU = os.environ.get("WB_ZOO_CPU") == "1"
DEFAULT = ("deit_tiny_distilled", "convnext_atto", "resnet10t", "mobilevit_xxs", "levit_128s",
           "poolformerv2_s12", "cait_xxs24", "xcit_nano_12_p16")
CPU_DEFAULT = ("deit_tiny_distilled",)
ONNX = ("poolformerv2_s12", "mobilenetv3_small_050", "xcit_nano_12_p16")
ONNX_DEFAULT = ("mobilenetv3_small_050", "xcit_nano_12_p16")


def _model(name):
    if zoo_models.import_timm() is None:
        pytest.skip("timm is not installed")
    return zoo2_timmz.build(name)


@pytest.mark.parametrize("name", sorted(zoo2_timmz.BUILDERS))
def test_timm_model_matches_torch(name):
    cpu = ALL_CPU or name in CPU_DEFAULT
    if not (cpu or name in DEFAULT):
        pytest.skip("WB_ZOO_CPU=1 runs it (the default run checks one model per family)")
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    arrays = [x.numpy() for x in inputs]
    graph = from_torch(model, inputs)
    zoo_models.assert_close(zoo_models.first(run(graph, *arrays)), expected)
    if cpu:
        compiled = wb.compile(graph, target="cpu")
    else:
        compiled = wb.compile(graph, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*arrays)), expected)


@pytest.mark.parametrize("name", ONNX)
def test_timm_model_through_onnx(name):
    if not (ALL_CPU or name in ONNX_DEFAULT):
        pytest.skip("WB_ZOO_CPU=1 runs it (24 s; tests/graph/test_timm_ops.py checks its pools)")
    onnx = pytest.importorskip("onnx")
    model, inputs = _model(name)
    expected = zoo_models.reference(model, inputs)
    buffer = io.BytesIO()
    torch.onnx.export(model, inputs, buffer, dynamo=False)
    proto = onnx.load_from_string(buffer.getvalue())
    compiled = wb.compile(proto, target="numpy", schedules="none")
    zoo_models.assert_close(zoo_models.first(compiled(*[x.numpy() for x in inputs])), expected)
