"""The model zoo compiled for ``target="cuda"`` (issue 20) under Numba's CUDA simulator, each
model at the smallest size that still runs every one of its operators (batch 1, 6 tokens,
width 16, 4-8 channels, 8x8 images), compared with PyTorch (max relative error <= 1e-4).

The simulator runs a Python thread per CUDA thread, and the cuda recipes' schedules take
seconds each to build: ``make test`` runs the CNNs (a resnet-style net of torchvision's
``BasicBlock``, a mobilenet-style one of ``InvertedResidual``), the Conv1d net, the LSTM
and BERT, and an efficientnet-style net of torchvision's ``MBConv`` (squeeze-excitation,
SiLU, a strided depthwise); ``WB_ZOO_CUDA=1`` adds the mobilenet-style net, GPT-2, Llama
(grouped-query attention through transformers' ``repeat_kv``) and torchvision's ViT. Every model's attention goes to the
fused ``warp_rows`` kernel (its keys staged in shared memory: ``K_shared``), reading the
projections through the index maps of ``fold_views`` (no transpose, slice or repeat copies
around GPT-2's and BERT's attention, none for Llama's grouped key/value heads).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import zoo_models  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402

pytestmark = pytest.mark.cuda

ALL = os.environ.get("WB_ZOO_CUDA") == "1"
HEAVY = ("mobilenet", "gpt2", "llama", "vit")
"""Models behind ``WB_ZOO_CUDA=1`` (10-110 s each under the simulator on a loaded machine)."""


def _text(name):
    tf = zoo_models.import_transformers()
    if tf is None:
        pytest.skip("transformers is not installed")
    small = dict(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=16)
    if name == "gpt2":
        net = tf.GPT2Model(tf.GPT2Config(vocab_size=32, n_embd=16, n_layer=1, n_head=2,
                                         n_positions=16, bos_token_id=0, eos_token_id=0))
    elif name == "bert":
        net = tf.BertModel(tf.BertConfig(**small), add_pooling_layer=False)
    else:
        net = tf.LlamaModel(tf.LlamaConfig(**small, num_key_value_heads=1))
    net.config.use_cache = False
    return net.eval(), (torch.randint(0, 32, (1, 6)),)


def _vision(name):
    models = zoo_models.import_torchvision()
    if models is None:
        pytest.skip("torchvision is not installed")
    x = torch.randn(1, 3, 8, 8)
    if name == "vit":
        net = models.VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2,
                                       hidden_dim=16, mlp_dim=32, num_classes=5)
        nn.init.normal_(net.heads.head.weight, std=0.2)  # zero-initialised
        nn.init.normal_(net.class_token, std=0.2)
        return net.eval(), (torch.randn(1, 3, 16, 16),)
    if name == "resnet":
        from torchvision.models.resnet import BasicBlock

        down = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm2d(8))
        net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
                            nn.ReLU(), nn.MaxPool2d(3, 2, 1), BasicBlock(4, 4),
                            BasicBlock(4, 8, stride=2, downsample=down),
                            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    elif name == "efficientnet":  # MBConv: expansion, depthwise, squeeze-excitation, SiLU
        from functools import partial

        from torchvision.models.efficientnet import MBConv, MBConvConfig

        norm = partial(nn.BatchNorm2d, eps=1e-3)
        blocks = [MBConv(MBConvConfig(2, 3, stride, 8, 8, 1, 1.0, 1.0), 0.0, norm)
                  for stride in (2, 1)]  # channels 8: MBConvConfig rounds to multiples of 8
        net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.SiLU(),
                            *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    else:  # mobilenet: depthwise 3x3, expansion, relu6, a residual
        from torchvision.models.mobilenetv2 import InvertedResidual

        net = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False),
                            nn.BatchNorm2d(4), nn.ReLU6(), InvertedResidual(4, 4, 1, 2),
                            InvertedResidual(4, 8, 2, 2), nn.AdaptiveAvgPool2d(1),
                            nn.Flatten(), nn.Linear(8, 5))
    return zoo_models.randomize_bn(net), (x,)


def _model(name):
    torch.manual_seed(0)
    if name in ("gpt2", "bert", "llama"):
        return _text(name)
    if name in ("vit", "resnet", "mobilenet", "efficientnet"):
        return _vision(name)
    if name == "conv1d":
        return zoo_models.randomize_bn(zoo_models.Conv1dNet(channels=4)), (torch.randn(1, 3, 8),)
    assert name == "lstm"
    return zoo_models.LSTMNet(features=4, hidden=4).eval(), (torch.randn(1, 3, 4),)


@pytest.mark.parametrize("name", ["resnet", "efficientnet", "conv1d", "lstm", "bert", *HEAVY])
def test_zoo_model_on_cuda_matches_torch(name):
    if name in HEAVY and not ALL:
        pytest.skip("WB_ZOO_CUDA=1 runs the larger models under the simulator")
    model, inputs = _model(name)
    with torch.no_grad():
        expected = zoo_models.first(model(*inputs)).numpy()
    compiled = wb.compile(model, inputs, target="cuda")
    got = zoo_models.first(compiled(*[x.numpy() for x in inputs]))
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error <= 1e-4, f"{name}: max relative error {error:.2e}"
    scripts = [k.schedule.mod.script() for k in compiled.kernels]
    assert all("threadIdx" in s for s in scripts)
    attention = [s for s in scripts if "T_softmax_expsum" in s and "scores" in s]
    assert all("K_shared" in s for s in attention)  # the fused warp_rows kernel
    if name in ("bert", "gpt2", "llama", "vit"):
        assert attention
    patterns = [k.pattern for k in compiled.kernels]
    if name in ("bert", "gpt2"):  # fold_views: Q, K, V read in place, the output transposed
        assert not {"transpose", "slice"} & set(patterns), patterns
    if name == "llama":  # repeat_kv: the key/value head read at h // group, no copy
        assert "broadcast_to" not in patterns, patterns
