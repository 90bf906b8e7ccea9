"""The cuda recipes (workbench/recipes/matmul_cuda.py, elementwise_cuda.py) under the CUDA
simulator at small sizes, against numpy; the source shows what each recipe is about."""

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.ir.functor import collect

pytestmark = pytest.mark.cuda


def _matmul(rng, sch, m, n, k):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel = build(sch, target="cuda")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return kernel


def test_registered():
    names = {r.name for r in recipes.list(op="matmul", target="cuda")}
    assert {"naive", "shared", "register_blocked"} <= names
    assert recipes.get("add_mul_gelu", "v4", "cuda").doc.startswith("One thread, 4 consecutive")


def test_matmul_naive(rng):
    sch = recipes.get("matmul", "naive", "cuda")(ops.matmul(16, 16, 8), tile=8)
    kernel = _matmul(rng, sch, 16, 16, 8)
    assert kernel.launches[0].block == (8, 8, 1) and "syncthreads" not in kernel.source


def test_matmul_shared_cooperative_v4(rng):
    sch = recipes.get("matmul", "shared", "cuda")(ops.matmul(16, 16, 16), tile=8, k_tile=8)
    kernel = _matmul(rng, sch, 16, 16, 16)
    src = kernel.source
    # each of the 64 threads copies one group of 4 of each 8x8 tile (cooperative fetch)
    assert src.count("= load4(A, ") == 1 and src.count("store4(A_shared, ") == 1
    assert src.count("cuda.syncthreads()") == 2


def test_matmul_register_blocked_double_buffered(rng):
    """The 128x128 recipe's structure at 32x32 per block (4x4 threads x 8x8 each)."""
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(64, 64, 16), threads=4, per_thread=8, k_tile=8, unroll_k=False
    )
    kernel = _matmul(rng, sch, 64, 64, 16)
    src = kernel.source
    assert "A_shared = cuda.shared.array((2, 8, 32), numba.float32, alignment=SHARED_ALIGN)" in src
    assert "C_local = cuda.local.array((8, 8), numba.float32)" in src
    assert "load4(A_shared, (k_0 % 2, k_1, " in src and "load4(B_shared, (k_0 % 2, k_1, " in src
    # the next tile prefetched into registers, its stores unguarded (PREFETCH_STORE_ON_LAST)
    assert "store4(C, " in src and "min(k_0, 0) * 8" in src and "if k_0 + 1 < 2:" not in src
    assert len(collect(kernel.device_func.body, lambda n: isinstance(n, SyncThreads))) == 2
    assert "# block C_init" in src.split("for k_0")[0]  # init hoisted out of the k loops


def test_matmul_register_blocked_single_buffered(rng):
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(32, 32, 16), threads=4, per_thread=8, k_tile=8, double_buffer=False
    )
    kernel = _matmul(rng, sch, 32, 32, 16)
    assert "A_shared = cuda.shared.array((8, 32), " in kernel.source


@pytest.mark.parametrize("name", ["v4", "grid_stride"])
def test_elementwise_chain(rng, name):
    func = ops.add_mul_gelu(4, 64)
    args = [rng.standard_normal((4, 64), dtype=np.float32) for _ in range(3)]
    args.append(np.full((4, 64), np.nan, np.float32))
    options = {"threads": 8} if name == "v4" else {"threads": 4, "blocks_per_row": 2}
    kernel = build(recipes.get("add_mul_gelu", name, "cuda")(func, **options), target="cuda")
    want = [a.copy() for a in args]
    build(func, target="numpy")(*want)
    kernel(*args)
    np.testing.assert_allclose(args[-1], want[-1], rtol=1e-5, atol=1e-5)
    assert kernel.source.count("= load4(") == 3 and kernel.source.count("store4(T_gelu, ") == 1
    assert "//" not in kernel.source and "%" not in kernel.source


def test_multiply_v4(rng):
    func = ops.multiply(2, 32)
    a, b = (rng.standard_normal((2, 32), dtype=np.float32) for _ in range(2))
    c = np.full((2, 32), np.nan, np.float32)
    build(recipes.get("multiply", "v4", "cuda")(func, threads=8), target="cuda")(a, b, c)
    np.testing.assert_allclose(c, a * b, rtol=1e-6)


def test_the_cuda_recipes_build_for_cpu_too(rng):
    """One schedule, two targets: bound loops run serially on the cpu target; the cuda-only
    annotations (double_buffer_scope, pragma_unroll_explicit) change nothing there."""
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(64, 64, 32), threads=4, per_thread=8, k_tile=8
    )
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((32, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    build(sch, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
