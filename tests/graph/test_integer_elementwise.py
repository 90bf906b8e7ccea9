"""Elementwise ops on integer tensors stay integer, as in PyTorch (relu, neg and clamp of an
integer tensor used to mix a float literal into an integer expression and fail in lowering)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402


class _ReluNeg(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) - x.neg() + 3 + x.clamp(min=-5) * x.clamp(-7, 9) + x.clamp(max=2)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
def test_relu_and_neg_of_integers_match_torch(target, dtype):
    generator = torch.Generator().manual_seed(7)
    x = torch.randint(-40, 40, (3, 13), dtype=dtype, generator=generator)
    compiled = wb.compile(_ReluNeg(), (x,), target=target)
    got = compiled(x)
    expected = _ReluNeg()(x).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
