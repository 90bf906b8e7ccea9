"""A gather hosts its elementwise epilogue (``passes.fusion``): GPT-2's and BERT's token
embeddings plus their position embeddings compile to one ``take+add`` kernel on the CPU and
on ``cuda`` (the simulator in CI), its result equal to PyTorch's, at a width (20) and a
sequence length (7) that are multiples of no tile."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import workbench as wb


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(37, 20)
        self.position = nn.Parameter(torch.randn(1, 7, 20))

    def forward(self, ids):
        return torch.relu(self.tokens(ids) + self.position) * 2.0


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_token_and_position_embeddings_are_one_kernel(target):
    torch.manual_seed(5)
    model = Embeddings().eval()
    ids = torch.randint(0, 37, (3, 7))
    compiled = wb.compile(model, (ids,), target=target, progress=False)
    assert [k.pattern for k in compiled.kernels] == ["take+add+relu+mul"]
    with torch.no_grad():
        want = model(ids).numpy()
    got = np.asarray(compiled(ids))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.abs(want).max() > 0.5  # random rows, not zeros
