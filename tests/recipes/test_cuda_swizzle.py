"""``matmul_cuda.SWIZZLE_B`` (opt-in): the shared tile of B laid out so that a quarter-warp's
``ld.shared.v4`` reads consecutive bytes (``matmul_cuda.swizzle_b``), under the CUDA
simulator at small sizes against numpy: the SGEMM and the batched recipe, the layout
kept where it cannot apply (4 values a thread, N not a multiple of the tile)."""

import numpy as np
import pytest
from cuda_checks import checked_matmul

from workbench import ops, recipes
from workbench.backends import build
from workbench.recipes import matmul_cuda

pytestmark = pytest.mark.cuda


@pytest.fixture
def swizzled(monkeypatch):
    monkeypatch.setattr(matmul_cuda, "SWIZZLE_B", True)


def test_an_8_wide_thread_row_reads_two_groups_a_tile_apart(rng, swizzled):
    """Tile 32 (4 threads x 8): thread ``tx`` reads B's values ``[tx * 4, tx * 4 + 4)`` and
    ``[16 + tx * 4, ...)`` of the swizzled row, both with ``load4``; the global copy still
    stores 4 lanes at once."""
    kernel = checked_matmul(rng, "register_blocked", 32, 64, 16, threads=4, per_thread=8,
                            k_tile=8, unroll_k=False, split_k=1)
    src = kernel.source
    assert "B_shared = cuda.shared.array((2, 8, 1, 2, 4, 4)" in src  # [half, k, tile, group, tx, 4]
    assert "load4(B_shared, (k_0 % 2, k_1, 0, ax0_2, j_1, ax1_2_0 * 4))" in src
    assert "store4(B_shared, " in src and "B_shared[" not in src


def test_the_batched_recipe_swizzles_too(rng, swizzled):
    sch = recipes.get("batch_matmul", "register_blocked", "cuda")(
        ops.batch_matmul(2, 32, 64, 16), threads=4, per_thread=8, unroll_k=False)
    kernel = build(sch, target="cuda")
    a = rng.standard_normal((2, 32, 16), dtype=np.float32)
    b = rng.standard_normal((2, 16, 64), dtype=np.float32)
    c = np.full((2, 32, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "load4(B_shared, " in kernel.source and "cuda.shared.array((2, 1, 8, 1, 2, 4, 4)" \
        in kernel.source


@pytest.mark.parametrize("n, per_thread", [(48, 8), (64, 4)], ids=["n-not-a-tile-multiple",
                                                                   "4-a-thread"])
def test_the_plain_layout_where_the_swizzle_does_not_apply(rng, swizzled, n, per_thread):
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(32, n, 16), threads=4, per_thread=per_thread, unroll_k=False, split_k=1)
    (b_shared,) = [b for b in sch.mod.root_block.alloc_buffers if b.name == "B_shared"]
    assert len(b_shared.shape) == 2
    assert matmul_cuda.swizzle_b(sch, sch.get_block("B_shared"), 4, per_thread) is False
    checked_matmul(rng, "register_blocked", 32, n, 16, threads=4, per_thread=per_thread,
                   unroll_k=False, split_k=1)


def test_off_by_default():
    assert matmul_cuda.SWIZZLE_B is False


def test_a_compiled_linear_with_the_swizzle_equals_torch(swizzled, monkeypatch):
    """Through ``wb.compile``: a linear + GELU under the ``"wide"`` policy (the 128 tile, 8
    values a thread, K split in slices summed by a second kernel)."""
    torch = pytest.importorskip("torch")
    import workbench as wb
    from workbench.recipes import graph_cuda_ops

    monkeypatch.setattr(graph_cuda_ops, "MATMUL_POLICY", "wide")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.GELU()).eval()
    x = torch.randn(256, 32)
    compiled = wb.compile(model, (x,), target="cuda")
    assert any("B_shared = cuda.shared.array((2, 8, 1, 2, 16, 4)" in k.source
               for k in compiled.kernels)
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
