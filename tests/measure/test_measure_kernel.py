"""measure() on real kernels from wb.build (numpy reference and Numba CPU backends)."""

import numpy as np
import pytest

import ir_examples
from workbench import backends
from workbench.ir import analysis
from workbench.measure import MachinePeaks, MeasureResult, measure

PEAKS = MachinePeaks(gflops=100.0, gbps=10.0)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_measure_built_matmul(target, rng):
    func = ir_examples.matmul(16, 16, 16)
    kernel = backends.build(func, target=target)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)

    res = measure(kernel, a, b, c, budget_s=0.05, max_repeats=20, peaks=PEAKS)

    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)
    assert isinstance(res, MeasureResult)
    assert (res.name, res.target) == ("matmul", target)
    assert 5 <= res.repeats <= 20
    assert res.flops == analysis.flops(func) and res.bytes == analysis.min_bytes(func)
    assert res.gflops == pytest.approx(res.flops / res.median_s / 1e9)
    assert res.median_s > 0 and res.iqr_s >= 0
