"""The SGEMM's variants of ``recipes.matmul_cuda`` under the CUDA simulator at small sizes
against numpy: ``SWIZZLE_B`` (opt-in: the shared tile of B laid out so that a quarter-warp's
``ld.shared.v4`` reads consecutive bytes, ``swizzle_b``; the SGEMM and the batched recipe;
the layout kept where it cannot apply), ``TILE_64_AS_8X8`` (the default since 2026-12-07:
the 64 x 64 tile as 8 x 8 threads of 8 x 8 values, its copies prefetched under
``PREFETCH_STORE_ON_LAST``) and ``SPLIT_K_WHOLE_STEPS`` (the default since 2026-12-07)."""

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


@pytest.mark.parametrize("m, n", [(64, 128), (100, 72)], ids=["aligned", "edges"])
def test_the_64_tile_as_8x8_threads_prefetches_both_groups(rng, monkeypatch, m, n):
    """``TILE_64_AS_8X8`` with ``PREFETCH_STORE_ON_LAST``: a 64 x 64 tile asked as 16 x 16
    threads runs as 8 x 8 threads of 8 x 8 values; each thread's two groups of A and of B
    are loaded at the top of ``k_0`` into their own registers (``_u0``, ``_u1``)."""
    monkeypatch.setattr(matmul_cuda, "TILE_64_AS_8X8", True)
    monkeypatch.setattr(matmul_cuda, "PREFETCH_STORE_ON_LAST", True)
    kernel = checked_matmul(rng, "register_blocked", m, n, 24, threads=16, per_thread=4,
                            unroll_k=False, split_k=1)
    assert kernel.launches[0].block == (8, 8, 1)
    head = kernel.source.split("for k_0 in range(3):")[1].split("for k_1 in range(8):")[0]
    for name in ("A_w3_0_u0", "A_w3_0_u1", "B_w4_0_u0", "B_w4_0_u1"):
        assert f"{name}," in head
    assert "_shared[" not in head and "store4(B_shared" not in head


def test_the_64_tile_runs_as_8x8_threads_by_default_16x16_when_off(rng, monkeypatch):
    """Since run 8 on the H100 (resnet18 b16 2.75 ms against 3.08 with the 16 x 16 block) a
    64 x 64 tile asked as 16 x 16 threads of 4 x 4 runs as 8 x 8 threads of 8 x 8 values;
    the flag off gives the 16 x 16 block back. Both compute the matmul (checked_matmul)."""
    assert matmul_cuda.TILE_64_AS_8X8 is True
    kernel = checked_matmul(rng, "register_blocked", 64, 64, 16, threads=16, per_thread=4,
                            unroll_k=False, split_k=1)
    assert kernel.launches[0].block == (8, 8, 1)
    monkeypatch.setattr(matmul_cuda, "TILE_64_AS_8X8", False)
    kernel = checked_matmul(rng, "register_blocked", 64, 64, 16, threads=16, per_thread=4,
                            unroll_k=False, split_k=1)
    assert kernel.launches[0].block == (16, 16, 1)


def test_split_k_on_whole_k_steps(rng, monkeypatch):
    """``SPLIT_K_WHOLE_STEPS``: where K is whole steps of 8, the split keeps its slices whole
    steps too (1000 x 3000 x 2000: 5 slices of 400, not 4 of 500); a K that is not (129)
    keeps the old choice; the result is unchanged (K 200: 5 slices of 40, not 4 of 50)."""
    assert matmul_cuda.SPLIT_K_WHOLE_STEPS is True  # the default since run 9 (0.70x cuBLAS)
    monkeypatch.setattr(matmul_cuda, "SPLIT_K_WHOLE_STEPS", False)
    assert matmul_cuda.split_k_factor(1000, 3000, 2000, 128) == 4
    assert matmul_cuda.split_k_factor(32, 32, 200, 32) == 4
    monkeypatch.setattr(matmul_cuda, "SPLIT_K_WHOLE_STEPS", True)
    assert matmul_cuda.split_k_factor(1000, 3000, 2000, 128) == 5
    assert matmul_cuda.split_k_factor(511, 257, 129, 32) == 3
    assert matmul_cuda.split_k_factor(32, 32, 200, 32) == 5
    kernel = checked_matmul(rng, "register_blocked", 32, 32, 200, threads=8, per_thread=4,
                            unroll_k=False)
    assert kernel.launches[0].grid == (1, 1, 5)
    assert "if k_1_0 * 8 + k_1_1 < " not in kernel.source  # split 4: "... < 50" on each step
