"""Shared fixtures: the tiny models imported once per session (torch.export is slow)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cnn():
    """(model, torch input, graph) of models.SmallCNN."""
    torch = pytest.importorskip("torch")
    from graph_models import SmallCNN, randomize_bn

    from workbench.graph import from_torch

    torch.manual_seed(0)
    model = randomize_bn(SmallCNN())
    x = torch.randn(2, 3, 8, 8)
    return model, x, from_torch(model, (x,), method="export")


@pytest.fixture(scope="session")
def block():
    """(model, torch input, graph) of models.Block."""
    torch = pytest.importorskip("torch")
    from graph_models import Block

    from workbench.graph import from_torch

    torch.manual_seed(1)
    model = Block().eval()
    x = torch.randn(2, 5, 8)
    return model, x, from_torch(model, (x,), method="export")


@pytest.fixture(scope="session")
def compiled_cnn(cnn):
    """(model, torch input, CompiledModel) of the tiny CNN on the cpu target."""
    import workbench as wb

    model, x, _ = cnn
    return model, x, wb.compile(model, (x,), target="cpu")
