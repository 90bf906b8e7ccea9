"""Tiny PyTorch models shared by the graph tests."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Fn(nn.Module):
    """A module of a function (``Fn(lambda x: x.sum(-1))``): one operator pattern as a model."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


class SmallCNN(nn.Module):
    """conv-bn-relu, pooling, conv-bn-silu, adaptive pooling, flatten, linear."""

    def __init__(self, channels: int = 4, classes: int = 5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.avg = nn.AvgPool2d(2, stride=1)
        self.head = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.avg(F.silu(self.bn2(self.conv2(x))))
        x = torch.flatten(self.head(x), 1)
        return self.fc(x)


class Block(nn.Module):
    """A pre-norm transformer block: attention (sdpa) + GELU MLP, with residuals."""

    def __init__(self, dim: int = 8, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        B, L, D = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(B, L, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(B, L, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Misc(nn.Module):
    """softmax, mul, matmul, transpose."""

    def forward(self, x, y):
        s = torch.softmax(x * y, dim=-1)
        return torch.matmul(s, y.transpose(-1, -2)) + 1.0


def randomize_bn(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random running stats and affine parameters, so batch norm is not the identity."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.randn(m.num_features, generator=gen))
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen))
    return model.eval()


class BasicBlock(nn.Module):
    """A resnet basic block: conv-bn-relu, conv-bn, residual add, relu."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class TinyResNet(nn.Module):
    """A stem conv, ``blocks`` identical basic blocks, global average pooling, a linear head."""

    def __init__(self, channels: int = 4, blocks: int = 3, classes: int = 5):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[BasicBlock(channels) for _ in range(blocks)])
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem(x)))
        return self.fc(x.mean((2, 3)))
