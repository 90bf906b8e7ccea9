"""The vectorizable float32 ``tanh`` and ``erf`` (``backends/cpu/fast_math.py``): accuracy
over the whole float32 range, NaN and infinities, vectorized loops, and the GELU/tanh/erf
kernels of a compiled model against PyTorch."""

import math

import numba
import numpy as np
import pytest

from workbench.backends.cpu import runtime as rt

_erf64 = np.vectorize(math.erf, otypes=[np.float64])


@numba.njit(fastmath=rt.FASTMATH_FLAGS, error_model="numpy")
def _tanh_loop(x, y):
    for i in range(x.shape[0]):
        y[i] = rt.fast_tanh_f32(x[i])


@numba.njit(fastmath=rt.FASTMATH_FLAGS, error_model="numpy")
def _erf_loop(x, y):
    for i in range(x.shape[0]):
        y[i] = rt.fast_erf_f32(x[i])


def _whole_range() -> np.ndarray:
    """Dense near 0 and around the branch points, log-spaced out to the largest float32."""
    magnitudes = np.concatenate([np.linspace(0, 12, 120_001), np.geomspace(1e-38, 3.4e38, 20_001),
                                 np.float32([0.625, 1.0, 20.0, 40.0]) * np.float32([1 - 1e-7],)])
    return np.concatenate([magnitudes, -magnitudes]).astype(np.float32)


@pytest.mark.parametrize(("loop", "reference"), [(_tanh_loop, np.tanh), (_erf_loop, _erf64)],
                         ids=["tanh", "erf"])
def test_relative_error_below_1e6_over_the_float32_range(loop, reference):
    x = _whole_range()
    y = np.full_like(x, 7.0)
    loop(x, y)
    want = reference(x.astype(np.float64))
    nonzero = want != 0
    assert np.all(y[~nonzero] == 0)
    assert np.max(np.abs(y[nonzero] - want[nonzero]) / np.abs(want[nonzero])) <= 1e-6
    assert np.all(np.abs(y) <= 1.0)  # never past the asymptotes


@pytest.mark.parametrize("loop", [_tanh_loop, _erf_loop], ids=["tanh", "erf"])
def test_nan_and_infinities_as_torch(loop):
    x = np.float32([np.nan, np.inf, -np.inf, -np.nan])
    y = np.zeros_like(x)
    loop(x, y)
    assert np.isnan(y[0]) and np.isnan(y[3])
    assert y[1] == 1.0 and y[2] == -1.0


@pytest.mark.parametrize("loop", [_tanh_loop, _erf_loop], ids=["tanh", "erf"])
def test_the_loop_vectorizes(loop):
    loop(np.zeros(8, np.float32), np.zeros(8, np.float32))
    asm = loop.inspect_asm(loop.signatures[0])
    assert "tanhf" not in asm and "erff" not in asm  # no libm call
    assert any(reg in asm for reg in ("ymm", "zmm"))  # packed registers (AVX2 or AVX-512)


def test_compiled_gelu_tanh_erf_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    import workbench as wb

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.stack([F.gelu(x, approximate="tanh"), F.gelu(x), torch.tanh(x),
                                torch.erf(x)])

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1000, generator=gen) * 4
    x[0, :8] = torch.tensor([0.0, 1e-4, -1e-4, 30.0, -30.0, 1e4, -1e4, 0.625])
    compiled = wb.compile(Net(), (x,))
    sources = " ".join(k.source for k in compiled.kernels)
    assert "rt.fast_tanh_f32(" in sources and "rt.fast_erf_f32(" in sources
    got = np.asarray(compiled(x))
    x64 = x.double()
    want = torch.stack([F.gelu(x64, approximate="tanh"), F.gelu(x64), torch.tanh(x64),
                        torch.erf(x64)]).numpy()
    # GELU's 1 + tanh / 1 + erf cancels for negative x (in torch's float32 as well): bound
    # the error by 1e-6 of |x| there, 1e-6 relative elsewhere
    scale = np.maximum(np.maximum(np.abs(want), np.abs(x.numpy())[None]), 1e-30)
    assert np.max(np.abs(got - want) / scale) <= 1e-6
    assert np.max(np.abs(got - Net()(x).numpy()) / scale) <= 1e-6
