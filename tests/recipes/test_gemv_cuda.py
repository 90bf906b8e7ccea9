"""``matmul/gemv/cuda`` (``recipes.gemv_cuda``): a matmul with a few rows of C, a thread per
column, its rows in registers, K in slices on ``blockIdx.y``; and the graph rule that gives
it a linear layer at batch 1 (``graph_cuda_ops.matmul_gemv``). Under the simulator against
numpy and PyTorch, at sizes that are not multiples of the block."""

import numpy as np
import pytest
from cuda_checks import checked_matmul

from workbench import ops, recipes
from workbench.recipes.gemv_cuda import GEMV_ROWS, gemv_split

pytestmark = pytest.mark.cuda


def _gemv(rng, m, n, k, **options):
    return checked_matmul(rng, "gemv", m, n, k, **options)


@pytest.mark.parametrize("m, n, k", [(1, 1000, 512), (3, 130, 48), (GEMV_ROWS, 77, 40),
                                     (1, 5, 7)])
def test_gemv_equals_numpy_at_odd_sizes(rng, m, n, k):
    kernel = _gemv(rng, m, n, k)
    split = gemv_split(n, k)
    grids = [launch.grid for launch in kernel.launches]
    assert grids[0] == (-(-n // 128), split, 1)  # a block per 128 columns, a row per slice
    assert len(grids) == (2 if split > 1 else 1)  # the slices summed by a second kernel


def test_the_split_fills_the_grid_and_keeps_slices_whole():
    assert gemv_split(1000, 512) == 32     # 8 column blocks: 32 slices of 16 (256 blocks)
    assert gemv_split(1000, 100) == 4      # slices of at least 16 that divide K
    assert gemv_split(50000, 768) == 1     # 391 column blocks fill the GPU alone
    assert gemv_split(10, 7) == 1          # nothing divides: whole K


def test_an_explicit_split_and_threads(rng):
    kernel = _gemv(rng, 2, 70, 48, split_k=3, threads=32)
    assert [launch.grid for launch in kernel.launches][0] == (3, 3, 1)
    assert kernel.launches[0].block == (32, 1, 1)


def test_bad_options_are_refused_before_any_work():
    with pytest.raises(ValueError, match="split_k must be a positive int dividing K=45, got 4"):
        recipes.get("matmul", "gemv", "cuda")(ops.matmul(1, 8, 45), split_k=4)
    with pytest.raises(ValueError, match="threads must be an int in 1..1024, got 0"):
        recipes.get("matmul", "gemv", "cuda")(ops.matmul(1, 8, 45), threads=0)


def test_a_classifier_head_at_batch_1_gets_gemv_with_its_bias_and_relu():
    torch = pytest.importorskip("torch")
    import workbench as wb
    from workbench.recipes.graph_cuda_ops import RULES

    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(96, 300), torch.nn.ReLU()).eval()
    for batch, rule in ((1, "matmul_gemv"), (GEMV_ROWS, "matmul_gemv"),
                        (GEMV_ROWS + 1, "matmul_tiled")):
        x = torch.randn(batch, 96)
        compiled = wb.compile(head, (x,), target="cuda", progress=False)
        (kernel,) = compiled.kernels
        assert next(r.__name__ for r in RULES if r(kernel.func) is not None) == rule
        np.testing.assert_allclose(compiled(x), head(x).detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
