"""The batched register-blocked SGEMM (``workbench/recipes/bmm_cuda.py``) under the CUDA
simulator at small sizes, against numpy: odd shapes (guards, the interior/edge copies), the
batch on ``blockIdx.z``, the epilogue-free structure of the SGEMM kernel."""

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build

pytestmark = pytest.mark.cuda


def _bmm(rng, sch, batch, m, n, k):
    a = rng.standard_normal((batch, m, k), dtype=np.float32)
    b = rng.standard_normal((batch, k, n), dtype=np.float32)
    c = np.full((batch, m, n), np.nan, np.float32)
    kernel = build(sch, target="cuda")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return kernel


def test_registered_for_batch_matmul():
    assert "register_blocked" in {r.name for r in recipes.list(op="batch_matmul",
                                                                 target="cuda")}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator reads unset padding
def test_odd_shape_batch_on_grid_z(rng):
    sch = recipes.get("batch_matmul", "register_blocked", "cuda")(
        ops.batch_matmul(3, 17, 33, 9), threads=4, per_thread=4, k_tile=4)
    kernel = _bmm(rng, sch, 3, 17, 33, 9)
    assert kernel.launches[0].grid == (3, 2, 3)  # (x: N tiles, y: M tiles, z: batch)
    assert "blockIdx.z" in sch.mod.script()


def test_aligned_shape_is_the_sgemm_kernel(rng):
    sch = recipes.get("batch_matmul", "register_blocked", "cuda")(
        ops.batch_matmul(2, 16, 16, 16), threads=4, per_thread=4, unroll_k=False)
    kernel = _bmm(rng, sch, 2, 16, 16, 16)
    src = kernel.source
    assert "C_local = cuda.local.array((1, 4, 4), numba.float32)" in src  # one matrix
    assert "store4(C, " in src and "load4(A_shared, " in src and "load4(B_shared, " in src
    assert "A_shared = cuda.shared.array((2, 1, 8, 16)" in src  # [k, i], double-buffered


def test_default_tile_and_bad_input():
    recipe = recipes.get("batch_matmul", "register_blocked", "cuda")
    sch = recipe(ops.batch_matmul(2, 8, 8, 8))
    assert "T.thread_binding(8, thread=\"threadIdx.x\")" in sch.mod.script()  # 32 x 32 tile
    with pytest.raises(ValueError, match="four loops"):
        recipe(ops.matmul(8, 8, 8))
