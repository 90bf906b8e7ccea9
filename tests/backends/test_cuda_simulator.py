"""The ``cuda`` target under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set by
tests/conftest.py): every recipe against the numpy reference on random inputs, tiny shapes
(the simulator runs each GPU thread as a Python thread)."""

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.ir.functor import collect

pytestmark = pytest.mark.cuda


def _reference(func, args):
    out = [a.copy() for a in args]
    build(func, target="numpy")(*out)
    return out


def _check(sch, args, *, rtol=1e-5, atol=1e-5):
    """Build ``sch`` for cuda, run it on copies of ``args``, compare every written array."""
    kernel = build(sch, target="cuda")
    got = [a.copy() for a in args]
    kernel(*got)
    expected = _reference(sch.func_before, args)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return kernel


def _matmul_args(rng, m, n, k):
    return [
        rng.standard_normal((m, k), dtype=np.float32),
        rng.standard_normal((k, n), dtype=np.float32),
        np.full((m, n), np.nan, np.float32),
    ]


def test_matmul_naive(rng):
    kernel = _check(recipes.get("matmul", "naive", "cuda")(ops.matmul(16, 16, 16), tile=4), _matmul_args(rng, 16, 16, 16))
    assert [(c.grid, c.block) for c in kernel.launches] == [((4, 4, 1), (4, 4, 1))]
    assert "i_1 = cuda.threadIdx.y" in kernel.source
    assert "matmul_kernel0_launch = matmul_kernel0[(4, 4, 1), (4, 4, 1)]" in kernel.source
    assert "    matmul_kernel0_launch(A, B, C)" in kernel.source
    assert "syncthreads" not in kernel.source


def test_matmul_shared_tiled_has_two_barriers(rng):
    kernel = _check(
        recipes.get("matmul", "shared", "cuda")(ops.matmul(16, 16, 16), tile=4, k_tile=4, vector=False),
        _matmul_args(rng, 16, 16, 16),
    )
    src = kernel.source
    assert "A_shared = cuda.shared.array((4, 4), numba.float32)" in src
    assert "B_shared = cuda.shared.array((4, 4), numba.float32)" in src
    assert src.count("cuda.syncthreads()") == 2
    # one barrier before the compute loop (RAW), one at the end of k_0's body (WAR)
    syncs = collect(kernel.device_func.body, lambda n: isinstance(n, SyncThreads))
    assert len(syncs) == 2


def test_matmul_register_blocked(rng):
    kernel = _check(
        recipes.get("matmul", "register_local", "cuda")(ops.matmul(16, 16, 16), threads=4, per_thread=2, k_tile=4),
        _matmul_args(rng, 16, 16, 16),
    )
    assert "C_local = cuda.local.array((2, 2), numba.float32)" in kernel.source
    assert "A_shared = cuda.shared.array((8, 4), numba.float32)" in kernel.source


def test_matmul_imperfect_extents_are_guarded(rng):
    """12 is not a multiple of the tile 8: split's predicate guards the extra threads."""
    kernel = _check(recipes.get("matmul", "naive", "cuda")(ops.matmul(12, 12, 8), tile=8), _matmul_args(rng, 12, 12, 8))
    assert kernel.launches[0].grid == (2, 2, 1)
    assert "if i_0 * 8 + i_1 < 12 and j_0 * 8 + j_1 < 12:" in kernel.source


def test_elementwise_chain_fused_and_unfused(rng):
    func = ops.add_mul_gelu(8, 16)
    args = [rng.standard_normal((8, 16), dtype=np.float32) for _ in range(3)]
    args.append(np.zeros((8, 16), np.float32))
    fused = _check(recipes.get("add_mul_gelu", "fused", "cuda")(func, threads=32), args)
    assert len(fused.launches) == 1
    unfused = _check(recipes.get("add_mul_gelu", "unfused", "cuda")(func, threads=32), args)
    assert len(unfused.launches) == 3
    # the intermediates are a device workspace, allocated once and reused
    first = unfused.workspace
    unfused(*[a.copy() for a in args])
    assert unfused.workspace is first and len(first) == 2


def test_elementwise_chain_one_block_per_row(rng):
    func = ops.add_mul_gelu(4, 32)
    args = [rng.standard_normal((4, 32), dtype=np.float32) for _ in range(3)]
    args.append(np.zeros((4, 32), np.float32))
    kernel = _check(recipes.get("add_mul_gelu", "rows", "cuda")(func, threads=8), args)
    assert kernel.launches[0].grid == (4, 1, 1) and "//" not in kernel.source


@pytest.mark.skipif(
    __import__("os").environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="needs a real GPU"
)
def test_inspection_on_a_real_gpu(rng):
    kernel = build(recipes.get("matmul", "shared", "cuda")(ops.matmul(16, 16, 16), tile=4, k_tile=4, vector=False), target="cuda")
    kernel(*_matmul_args(rng, 16, 16, 16))
    assert ".entry" in kernel.ptx and "bar.sync" in kernel.ptx
    (usage,) = kernel.resource_usage()
    assert usage["shared_bytes_per_block"] == 2 * 4 * 4 * 4 and usage["threads_per_block"] == 16


def test_softmax_one_block_per_row(rng):
    func = ops.softmax(4, 64)
    args = [rng.standard_normal((4, 64), dtype=np.float32), np.zeros((4, 64), np.float32)]
    kernel = _check(recipes.get("softmax", "block_local", "cuda")(func, threads=32), args,
                    rtol=1e-5, atol=1e-6)
    assert kernel.launches[0].grid == (4, 1, 1) and kernel.launches[0].block == (32, 1, 1)
    assert "math.exp" in kernel.source


def test_layernorm_one_block_per_row(rng):
    func = ops.layernorm(4, 64)
    args = [
        rng.standard_normal((4, 64), dtype=np.float32),
        rng.standard_normal(64, dtype=np.float32),
        rng.standard_normal(64, dtype=np.float32),
        np.zeros((4, 64), np.float32),
    ]
    _check(recipes.get("layernorm", "block_local", "cuda")(func, threads=16), args, rtol=1e-4,
           atol=1e-5)


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_row_reductions_shared_across_threads(rng, op):
    """rfactor into shared partials, one barrier per reduction, statistics in local."""
    func = getattr(ops, op)(2, 64)
    args = [rng.standard_normal((2, 64), dtype=np.float32)]
    if op == "layernorm":
        args += [rng.standard_normal(64, dtype=np.float32) for _ in range(2)]
    args.append(np.zeros((2, 64), np.float32))
    kernel = _check(recipes.get(op, "rfactor", "cuda")(func, threads=16), args, rtol=1e-4,
                    atol=1e-5)
    assert kernel.source.count("cuda.syncthreads()") == 2
    assert kernel.source.count("cuda.shared.array((16, 1), numba.float32)") == 2


def test_conv2d(rng):
    func = ops.conv2d_nchw(1, 2, 6, 6, 2, 3, 3)
    args = [
        rng.standard_normal((1, 2, 6, 6), dtype=np.float32),
        rng.standard_normal((2, 2, 3, 3), dtype=np.float32),
        np.zeros((1, 2, 6, 6), np.float32),
    ]
    _check(recipes.get("conv2d_nchw", "direct", "cuda")(func, threads=32), args, rtol=1e-4, atol=1e-5)


def test_one_schedule_two_targets(rng):
    """The same bound schedule builds for cpu (bound loops are serial) and cuda."""
    sch = recipes.get("matmul", "shared", "cuda")(ops.matmul(16, 16, 16), tile=4, k_tile=4, vector=False)
    args = _matmul_args(rng, 16, 16, 16)
    cpu, gpu = [a.copy() for a in args], [a.copy() for a in args]
    build(sch, target="cpu")(*cpu)
    build(sch, target="cuda")(*gpu)
    np.testing.assert_allclose(cpu[2], gpu[2], rtol=1e-5, atol=1e-5)


def test_cuda_kernels_are_cached_in_memory():
    sch = recipes.get("matmul", "naive", "cuda")(ops.matmul(8, 8, 8), tile=4)
    first = build(sch, target="cuda")
    again = build(sch, target="cuda")
    assert again.cache_hit == "memory" and again.compile_seconds == 0.0
    assert again.source == first.source


def test_device_arrays_are_launched_directly(rng):
    from numba import cuda

    sch = recipes.get("matmul", "naive", "cuda")(ops.matmul(8, 8, 8), tile=4)
    kernel = build(sch, target="cuda")
    a, b, c = _matmul_args(rng, 8, 8, 8)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c)
    kernel(da, db, dc)
    np.testing.assert_allclose(dc.copy_to_host(), a @ b, rtol=1e-5, atol=1e-5)


def test_wrong_device_array_is_refused(rng):
    from numba import cuda

    from workbench.backends import KernelArgumentError

    kernel = build(recipes.get("matmul", "naive", "cuda")(ops.matmul(8, 8, 8), tile=4), target="cuda")
    a, b, c = (cuda.to_device(x) for x in _matmul_args(rng, 8, 8, 8))
    with pytest.raises(KernelArgumentError, match="argument 'B' of matmul: expected float32"):
        kernel(a, cuda.to_device(np.zeros((8, 8))), c)


@pytest.mark.skipif(
    __import__("os").environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="simulator behaviour"
)
def test_inspection_needs_a_real_gpu():
    kernel = build(recipes.get("matmul", "naive", "cuda")(ops.matmul(8, 8, 8), tile=4), target="cuda")
    with pytest.raises(RuntimeError, match="need a real GPU"):
        _ = kernel.ptx
