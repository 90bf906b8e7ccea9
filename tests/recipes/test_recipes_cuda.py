"""The ``cuda`` row recipes (softmax, layernorm: one block per row, warp-shuffle
reductions) under Numba's CUDA simulator, against numpy on random inputs; row lengths that
are not multiples of the thread count; with and without the row staged in shared memory."""

import numpy as np
import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.recipes.rows_cuda import block_per_row

pytestmark = pytest.mark.cuda


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize(("n", "threads", "stage"), [(80, 64, None), (45, 32, "shared")])
def test_softmax_block_per_row(rng, n, threads, stage):
    x = (rng.standard_normal((3, n)) * 3).astype(np.float32)
    out = np.full_like(x, np.nan)
    recipe = recipes.get("softmax", "block_per_row", "cuda")
    kernel = build(recipe(ops.softmax(3, n), threads=threads, stage=stage), target="cuda")
    kernel(x, out)
    np.testing.assert_allclose(out, numpy_softmax(x), rtol=1e-5, atol=1e-6)
    assert [(c.grid, c.block) for c in kernel.launches] == [((3, 1, 1), (threads, 1, 1))]
    assert "cuda.shfl_xor_sync" in kernel.source
    assert (f"A_shared = cuda.shared.array((1, {n})" in kernel.source) == (stage == "shared")


@pytest.mark.parametrize(("n", "threads", "stage"), [(50, 32, None), (70, 64, "shared")])
def test_layernorm_block_per_row(rng, n, threads, stage):
    x = rng.standard_normal((2, n)).astype(np.float32)
    gamma, beta = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.full_like(x, np.nan)
    recipe = recipes.get("layernorm", "block_per_row", "cuda")
    build(recipe(ops.layernorm(2, n), threads=threads, stage=stage), target="cuda")(
        x, gamma, beta, out
    )
    np.testing.assert_allclose(out, numpy_layernorm(x, gamma, beta), rtol=1e-4, atol=1e-4)


def test_same_schedule_on_the_cpu(rng):
    """The bound loops are serial on the CPU: the cuda recipe still computes softmax there."""
    x = rng.standard_normal((3, 40)).astype(np.float32)
    out = np.zeros_like(x)
    build(block_per_row(ops.softmax(3, 40), threads=16, stage="shared"), target="cpu")(x, out)
    np.testing.assert_allclose(out, numpy_softmax(x), rtol=1e-5, atol=1e-6)


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="stage must be None, 'shared' or 'registers', got 'local'"):
        block_per_row(ops.softmax(2, 8), threads=4, stage="local")


@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_rfactor_partials_combined_by_shuffles(rng, op):
    """The rfactor-into-shared route: shared partials, then a shuffle combine (no linear loop
    over the partials in every thread)."""
    n = 70
    x = rng.standard_normal((2, n)).astype(np.float32)
    args = [x]
    if op == "layernorm":
        args += [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    out = np.full_like(x, np.nan)
    sch = recipes.get(op, "rfactor_shuffle", "cuda")(getattr(ops, op)(2, n), threads=32)
    kernel = build(sch, target="cuda")
    kernel(*args, out)
    expected = numpy_softmax(x) if op == "softmax" else numpy_layernorm(*args)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert kernel.source.count("cuda.shared.array((32, 1), numba.float32)") == 2
    assert kernel.source.count("cuda.shfl_xor_sync") == 10
