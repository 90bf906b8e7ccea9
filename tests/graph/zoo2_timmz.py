"""timm models a user would try after ``vit_tiny``: each built by ``timm.create_model`` with
random weights (``pretrained=False``: no hub access), 10 classes, at the smallest input size
and depth that still exercise its architecture; batch norms get random running statistics
(``zoo_models.randomize_bn``); layer scales are set to a random value around 0.5 where timm
initialises them near zero (1e-5, 1e-6: the block would otherwise be nearly the identity and
a wrong branch would pass unnoticed)."""

from __future__ import annotations

import torch
import zoo_models

BUILDERS = {
    # name: (timm model name, create_model keyword arguments, input side)
    "deit_tiny": ("deit_tiny_patch16_224",
                  dict(img_size=32, patch_size=8, depth=2, embed_dim=48, num_heads=3), 32),
    "deit_tiny_distilled": ("deit_tiny_distilled_patch16_224",
                            dict(img_size=32, patch_size=8, depth=2, embed_dim=48, num_heads=3),
                            32),
    "convnext_atto": ("convnext_atto", dict(depths=(1, 1, 2, 1), dims=(16, 24, 32, 40)), 32),
    "resnet18d": ("resnet18d", {}, 32),
    "resnet10t": ("resnet10t", {}, 32),
    "efficientnet_b0": ("efficientnet_b0", {}, 32),
    "mobilenetv3_small_050": ("mobilenetv3_small_050", {}, 32),
    "mobilevit_xxs": ("mobilevit_xxs", {}, 64),
    "levit_128s": ("levit_128s", dict(img_size=64), 64),
    "poolformer_s12": ("poolformer_s12", {}, 32),
    "poolformerv2_s12": ("poolformerv2_s12", {}, 32),
    "regnetx_002": ("regnetx_002", {}, 32),
    "rexnet_100": ("rexnet_100", {}, 32),
    "ghostnet_050": ("ghostnet_050", {}, 32),
    "edgenext_xx_small": ("edgenext_xx_small", dict(depths=(1, 1, 2, 1)), 64),
    # the attention bias of its last stage is fixed at 7x7: 224x224 input, narrow stages
    "efficientformer_l1": ("efficientformer_l1", dict(depths=(1, 1, 1, 2),
                                                      embed_dims=(16, 24, 32, 48)), 224),
    "efficientformerv2_s0": ("efficientformerv2_s0", dict(img_size=64), 64),
    "cait_xxs24": ("cait_xxs24_224", dict(img_size=32, patch_size=8, depth=2, depth_token_only=1,
                                          embed_dim=48, num_heads=4), 32),
    "coat_lite_tiny": ("coat_lite_tiny", dict(img_size=32, embed_dims=[16, 24, 32, 40],
                                              serial_depths=[1, 1, 1, 1]), 32),
    "xcit_nano_12_p16": ("xcit_nano_12_p16_224", dict(img_size=32, depth=2), 32),
}


def build(name: str):
    """(model, (input,)) for a zoo name of ``BUILDERS``, random weights from seed 0."""
    timm = zoo_models.import_timm()
    model_name, kwargs, side = BUILDERS[name]
    torch.manual_seed(0)
    net = timm.create_model(model_name, pretrained=False, num_classes=10, **kwargs)
    _randomize_scales(net)
    zoo_models.randomize_bn(net)
    gen = torch.Generator().manual_seed(1)
    return net.eval(), (torch.randn(1, 3, side, side, generator=gen),)


_SCALE_NAMES = ("gamma", "gamma_1", "gamma_2", "layer_scale", "ls1", "ls2", "scale")


def _randomize_scales(net: torch.nn.Module) -> None:
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, param in net.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            owner = name.rsplit(".", 2)[-2] if name.count(".") else ""
            if leaf in _SCALE_NAMES or owner in _SCALE_NAMES:
                if param.abs().max() < 1e-3:
                    param.copy_(torch.rand(param.shape, generator=gen) * 0.5 + 0.25)
