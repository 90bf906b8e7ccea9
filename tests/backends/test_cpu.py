"""The Numba CPU backend, every output checked against the numpy reference.

Numba compiles cost 0.1-1 s each: sizes are small and each function compiles once.
"""

import numpy as np
import pytest
import scheduled_examples as se

import ir_examples
from workbench.backends import build, lower_to_numba_source
from workbench.ir import ForKind


def _compare(func, inputs, out_specs, rtol=1e-4, **options):
    """Run ``func`` on the cpu and numpy targets from the same inputs; return the cpu kernel."""
    kernel = build(func, target="cpu", **options)
    results = []
    for k in (kernel, build(func, target="numpy")):
        outputs = [np.full(shape, 7, dtype) for shape, dtype in out_specs]
        k(*inputs, *outputs)
        results.append(outputs)
    for cpu, ref in zip(*results, strict=True):
        np.testing.assert_allclose(cpu, ref, rtol=rtol, atol=1e-6)
    return kernel, results[0]


def test_matmul_source_golden(golden_backend):
    golden_backend("matmul_cpu.py", lower_to_numba_source(ir_examples.matmul(16, 16, 16)))


def test_matmul_and_kernel_attributes(rng):
    a, b = rng.random((16, 16), dtype=np.float32), rng.random((16, 16), dtype=np.float32)
    kernel, (c,) = _compare(ir_examples.matmul(16, 16, 16), [a, b], [((16, 16), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert kernel.target == "cpu" and kernel.func == ir_examples.matmul(16, 16, 16)
    assert "def matmul(A, B, C):" in kernel.source and "# block C" in kernel.source
    assert "define" in kernel.llvm and "ret" in kernel.asm
    assert kernel.compile_seconds >= 0.0
    again = build(ir_examples.matmul(16, 16, 16), target="cpu")
    assert again.cache_hit == "memory" and again.compile_seconds == 0.0
    assert again._compiled.dispatcher is kernel._compiled.dispatcher


@pytest.mark.parametrize("M,N", [(16, 32), (18, 20)])
def test_tiled_matmul_parallel_unrolled_vectorized(rng, M, N):
    func = se.tiled_matmul(
        M, N, 8, 4, 8, outer=ForKind.PARALLEL, inner_i=ForKind.UNROLLED, inner_j=ForKind.VECTORIZED
    )
    a, b = rng.random((M, 8), dtype=np.float32), rng.random((8, N), dtype=np.float32)
    kernel, (c,) = _compare(func, [a, b], [((M, N), np.float32)])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert "numba.prange(" in kernel.source and "parallel=True" in kernel.source


def test_local_intermediate_in_parallel_loop(rng):
    func, expected = se.local_intermediate(8, 16)
    a = rng.standard_normal((8, 16), dtype=np.float32)
    kernel, (c,) = _compare(func, [a], [((8, 16), np.float32)])
    np.testing.assert_allclose(c, expected(a), rtol=1e-6)
    prange_line = kernel.source.index("numba.prange")
    # a small local buffer is a stack array, allocated in the parallel body (one per thread)
    assert 'T_local_stack = rt.stack_allocator((16,), "float32")' in kernel.source
    assert kernel.source.index("T_local = T_local_stack()  # scope local, stack") > prange_line


def test_branches(rng):
    func, expected = se.branches(32)
    a = rng.standard_normal(32, dtype=np.float32)
    kernel, (b, d) = _compare(func, [a], [((32,), np.float32)] * 2)
    assert "parallel=False" in kernel.source
    np.testing.assert_array_equal(b, expected(a)[0])


def test_intrinsics_and_casts(rng):
    a = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    specs = [((64,), np.float32)] * len(se.INTRINSIC_OUTPUTS) + [
        ((64,), np.int32),
        ((64,), np.float32),
    ]
    kernel, _ = _compare(se.intrinsics(64), [a], specs, rtol=2e-6)
    assert "rt.fast_exp_f32(" in kernel.source


def test_row_max_and_imperfect_unrolled_split(rng):
    a = rng.standard_normal((8, 32), dtype=np.float32)
    _compare(se.row_max(8, 32), [a], [((8,), np.float32)])
    x = rng.standard_normal(30, dtype=np.float32)
    kernel, (y,) = _compare(se.split_elementwise(30, 8), [x], [((30,), np.float32)])
    np.testing.assert_allclose(y, x * 3 + 1, rtol=1e-6)
    assert "for i_1" not in kernel.source  # 8 iterations x 1 store: text-unrolled


def test_fast_exp_accuracy():
    import numba

    from workbench.backends.cpu.runtime import fast_exp_f32

    @numba.njit(fastmath=True)
    def apply(x, y):
        for i in range(x.shape[0]):
            y[i] = fast_exp_f32(x[i])

    x = np.linspace(-87.0, 88.7, 200_001).astype(np.float32)
    y = np.empty_like(x)
    apply(x, y)
    reference = np.exp(x.astype(np.float64))
    assert np.max(np.abs(y - reference) / reference) < 1e-6
    apply(np.array([-100.0, 100.0], np.float32), y[:2])
    assert y[0] == 0.0 and np.isinf(y[1])


def test_options_change_the_source():
    func = se.intrinsics(8)
    plain = lower_to_numba_source(func, fastmath=False, fast_exp=False, boundscheck=True)
    assert "fastmath=False" in plain and "boundscheck=True" in plain
    assert "np.exp(A[i0])" in plain and "rt." not in plain


def test_256_matmul_vectorized_inner_loop(rng):
    func = se.tiled_matmul(256, 256, 256, 4, 64, outer=ForKind.PARALLEL, inner_j=ForKind.VECTORIZED)
    kernel = build(func, target="cpu")
    a, b = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    c = np.empty((256, 256), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    entry = kernel.vectorization_report().loop("j_1")
    assert entry.kind == "vectorized" and entry.vectorized
    assert entry.lanes >= 8 and entry.element == "float" and entry.bits >= 256
