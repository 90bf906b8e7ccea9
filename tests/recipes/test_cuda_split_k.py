"""Split-K in ``matmul/register_blocked/cuda`` (issue 20 item 3): K cut into slices on
``blockIdx.z`` (``rfactor``) writing partial C, a second kernel summing them; chosen from
the shape when C is too small to fill the GPU. Under the simulator against numpy."""

import pytest
from cuda_checks import checked_matmul

from workbench import ops, recipes
from workbench.recipes.matmul_cuda import split_k_factor

pytestmark = pytest.mark.cuda


def _matmul(rng, m, n, k, **options):
    return checked_matmul(rng, "register_blocked", m, n, k, **options)


def test_explicit_split_at_odd_sizes(rng):
    """17 x 33 x 45 in 3 slices of 15: partial C on blockIdx.z, then one thread per element."""
    kernel = _matmul(rng, 17, 33, 45, split_k=3)
    (partial, total) = [(c.grid, c.block) for c in kernel.launches]
    assert partial == ((2, 1, 3), (8, 8, 1)) and total == ((3, 1, 1), (256, 1, 1))


def test_default_splits_a_small_c_with_a_long_k(rng):
    kernel = _matmul(rng, 9, 11, 64)  # one 32 x 32 block: 2 slices of 32 (not 4 of 16)
    assert len(kernel.launches) == 2 and kernel.launches[0].grid[2] == 2


def test_split_must_divide_k():
    with pytest.raises(ValueError, match="split_k must be a positive int dividing K=45, got 4"):
        recipes.get("matmul", "register_blocked", "cuda")(ops.matmul(8, 8, 45), split_k=4)


def test_split_k_rule():
    assert split_k_factor(4000, 4000, 4000, 128) == 1  # 1024 blocks: full
    assert split_k_factor(1000, 3000, 2000, 128) == 5  # 192 blocks: 960, slices of 400 = 50 k steps
    assert split_k_factor(511, 257, 129, 32) == 3  # 144 blocks; 129 = 3 x 43
    assert split_k_factor(511, 257, 127, 32) == 1  # prime K: no slice without a remainder
    assert split_k_factor(64, 64, 40, 32) == 1  # slices under 32 of K
