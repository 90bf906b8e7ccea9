"""More torchvision models for the zoo (issue 19, "the models a user would try next"):
built from ``torchvision.models`` as a user would, random weights, random batch-norm
statistics (``zoo_models.randomize_bn``), eval mode, 10 classes.

Full-size constructors where they run fast at 32x32 (squeezenet1_1, shufflenet_v2_x0_5,
mnasnet0_5, regnet_y_400mf, googlenet, mobilenet_v3_small, densenet121); the library's own
classes at a reduced size where the full model is slow to compile (a DenseNet of growth 8,
a two-stage ConvNeXt, a two-stage Swin, a two-stage MaxViT at 32x32 with 2x2 partitions,
ResNeXt and wide-ResNet bottlenecks with one block per stage). vgg11_bn keeps its features
and adaptive pooling (1x1 to 7x7 at 32x32) but gets a 64-wide classifier: the library's
4096-wide one holds 120M parameters.
"""

from __future__ import annotations

import functools

import torch
import zoo_models


def _builders(models) -> dict:
    from torchvision.models import convnext, densenet, maxvit, resnet, swin_transformer

    cn = convnext.CNBlockConfig

    def vgg():
        net = models.vgg11_bn(num_classes=10)
        net.classifier = torch.nn.Sequential(torch.nn.Linear(512 * 7 * 7, 64),
                                             torch.nn.ReLU(True), torch.nn.Dropout(),
                                             torch.nn.Linear(64, 10))
        return net

    return {
        "densenet_small": lambda: densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2),
                                                    num_init_features=16, num_classes=10),
        "densenet121": lambda: models.densenet121(num_classes=10),
        "squeezenet1_1": lambda: models.squeezenet1_1(num_classes=10),
        "shufflenet_v2_x0_5": lambda: models.shufflenet_v2_x0_5(num_classes=10),
        "mnasnet0_5": lambda: models.mnasnet0_5(num_classes=10),
        "regnet_y_400mf": lambda: models.regnet_y_400mf(num_classes=10),
        "googlenet": lambda: models.googlenet(num_classes=10, aux_logits=False,
                                              init_weights=True),
        "vgg11_bn": vgg,
        "convnext_small": lambda: convnext.ConvNeXt([cn(16, 32, 1), cn(32, None, 1)],
                                                    stochastic_depth_prob=0.1, num_classes=10),
        "swin_small": lambda: swin_transformer.SwinTransformer(
            patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[2, 2],
            window_size=[4, 4], num_classes=10),
        "mobilenet_v3_small": lambda: models.mobilenet_v3_small(num_classes=10),
        "maxvit_small": lambda: maxvit.MaxVit((32, 32), stem_channels=16, partition_size=2,
                                              block_channels=[16, 32], block_layers=[1, 1],
                                              head_dim=8, stochastic_depth_prob=0.1,
                                              num_classes=10),
        "resnext_small": lambda: resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], groups=32,
                                               width_per_group=4, num_classes=10),
        "wide_resnet_small": lambda: resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1],
                                                   width_per_group=128, num_classes=10),
    }


NAMES = ("densenet_small", "densenet121", "squeezenet1_1", "shufflenet_v2_x0_5", "mnasnet0_5",
         "regnet_y_400mf", "googlenet", "vgg11_bn", "convnext_small", "swin_small",
         "mobilenet_v3_small", "maxvit_small", "resnext_small", "wide_resnet_small")


@functools.cache
def model(name: str):
    """(model, (input,)) for ``name`` of ``NAMES`` (built once per process), or None when
    torchvision is not installed."""
    models = zoo_models.import_torchvision()
    if models is None:
        return None
    torch.manual_seed(0)
    net = _builders(models)[name]()
    _randomize_scales(net)
    torch.manual_seed(1)
    return zoo_models.randomize_bn(net.eval()), (torch.randn(1, 3, 32, 32),)


def _randomize_scales(net: torch.nn.Module) -> None:
    """Random layer norms and ConvNeXt layer scales: initialised to ones, zeros and 1e-6
    (a block would add almost nothing to its residual, hiding its errors)."""
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.LayerNorm) and module.elementwise_affine:
                module.weight.copy_(torch.rand(module.weight.shape, generator=gen) + 0.5)
                module.bias.copy_(torch.randn(module.bias.shape, generator=gen) * 0.1)
        for name, param in net.named_parameters():
            if name.endswith("layer_scale"):
                param.copy_(torch.rand(param.shape, generator=gen) + 0.5)
