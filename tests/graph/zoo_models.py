"""The model zoo of the graph tests: standard architectures at tiny sizes, random weights.

torchvision's models come from the library itself. The wheel of torchvision 0.28.0 (the
release for torch 2.13.0) on PyPI is a CUDA build: beside the CPU torch its C extension does
not load, and its import then fails registering fake kernels for ``torchvision::nms`` and
``torchvision::qnms``. ``import_torchvision`` defines those two operator schemas first (no
kernel: detection ops are unused here), which lets the pure-Python ``torchvision.models``
import; no installed file is changed.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def import_torchvision():
    """``torchvision.models``, or None when torchvision is not installed."""
    try:
        import torchvision
    except ImportError:
        return None
    except RuntimeError:  # the CUDA wheel beside the CPU torch: define the schemas, retry
        import sys

        for name in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[name]
        _define_torchvision_schemas()
        import torchvision
    import torchvision.models

    return torchvision.models


_TV_LIBRARY = []


def _define_torchvision_schemas() -> None:
    if _TV_LIBRARY:
        return
    library = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _TV_LIBRARY.append(library)  # the schemas live as long as the library object


def import_timm():
    """``timm``, or None when it is not installed (torchvision made importable first: timm
    imports it)."""
    import_torchvision()
    try:
        import timm
    except ImportError:
        return None
    return timm


def timm_vit():
    """timm's ``vit_tiny_patch16_224`` at 32x32, patch 8, depth 2, width 48 (3 heads), 10
    classes, random weights (``timm.create_model`` keyword arguments: no hub access)."""
    timm = import_timm()
    torch.manual_seed(0)
    net = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32,
                            patch_size=8, depth=2, embed_dim=48, num_heads=3, num_classes=10)
    return net.eval(), (torch.randn(1, 3, 32, 32),)


def import_transformers():
    """``transformers``, or None when it is not installed (torchvision made importable
    first: transformers imports it when present)."""
    import_torchvision()
    try:
        import transformers
    except ImportError:
        return None
    return transformers


def randomize_bn(model: nn.Module) -> nn.Module:
    """Random running statistics and affine parameters in every batch norm (eval mode)."""
    gen = torch.Generator().manual_seed(0)
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            module.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            if module.affine:
                module.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
                module.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)
    return model.eval()


class Conv1dNet(nn.Module):
    """A keyword-spotting style 1-D CNN: conv-bn-relu, max pooling, depthwise and grouped
    convs, adaptive average pooling, linear."""

    def __init__(self, channels: int = 8, classes: int = 5):
        super().__init__()
        self.conv1 = nn.Conv1d(3, channels, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(channels)
        self.pool = nn.MaxPool1d(2)
        self.dw = nn.Conv1d(channels, channels, 3, padding=1, groups=channels)
        self.pw = nn.Conv1d(channels, 2 * channels, 1, groups=2)
        self.head = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(2 * channels, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.hardtanh(self.pw(self.dw(x)), 0.0, 6.0)
        return self.fc(torch.flatten(self.head(x), 1))


class LSTMNet(nn.Module):
    def __init__(self, features: int = 4, hidden: int = 8):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


@functools.cache
def vision_models() -> dict:
    """name -> (model, input) for torchvision's resnet18, mobilenet_v2, efficientnet_b0 and
    ViT, at 32x32 (ViT: 2 layers, width 32); built once per process (the zoo's cases share
    them: nothing changes a model)."""
    models = import_torchvision()
    if models is None:
        return {}
    torch.manual_seed(0)
    nets = {
        "resnet18": models.resnet18(num_classes=10),
        "mobilenet_v2": models.mobilenet_v2(num_classes=10),
        "efficientnet_b0": models.efficientnet_b0(num_classes=10),
        "vit": models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                        hidden_dim=32, mlp_dim=64, num_classes=10),
    }
    torch.nn.init.normal_(nets["vit"].heads.head.weight, std=0.2)  # zero-initialised
    torch.nn.init.normal_(nets["vit"].class_token, std=0.2)
    x = torch.randn(1, 3, 32, 32)
    return {name: (randomize_bn(net), (x,)) for name, net in nets.items()}


@functools.cache
def text_models() -> dict:
    """name -> (model, input ids) for transformers' GPT-2, BERT and Llama from small configs
    (2 layers, width 32, random weights; no hub access)."""
    tf = import_transformers()
    if tf is None:
        return {}
    torch.manual_seed(0)
    small = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=32)
    gpt2 = tf.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=32)
    nets = {
        "gpt2": tf.GPT2Model(gpt2),
        "gpt2_lm": tf.GPT2LMHeadModel(gpt2),
        "bert": tf.BertModel(tf.BertConfig(**small), add_pooling_layer=False),
        "llama": tf.LlamaModel(tf.LlamaConfig(**small, num_key_value_heads=2)),
    }
    ids = torch.randint(0, 64, (1, 8))
    for net in nets.values():
        net.config.use_cache = False
    return {name: (net.eval(), (ids,)) for name, net in nets.items()}


def reference(model, inputs) -> np.ndarray:
    """The model's first output under ``torch.no_grad``, as numpy (the zoo tests' expected
    value)."""
    with torch.no_grad():
        out = model(*inputs)
    return (out if isinstance(out, torch.Tensor) else out[0]).numpy()


def first(out):
    """The first output (``last_hidden_state`` or ``logits``) of a list, a tuple or the dict
    ``wb.compile`` gives for a ``transformers`` ``ModelOutput``."""
    if isinstance(out, dict):
        return next(iter(out.values()))
    return out[0] if isinstance(out, list | tuple) else out


def assert_close(got, expected):
    """Max relative error <= 1e-4 against a finite expected value."""
    assert np.isfinite(expected).all()
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error <= 1e-4, f"max relative error {error:.2e}"
