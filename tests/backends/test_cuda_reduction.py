"""Cross-thread reductions on the ``cuda`` target (workbench/backends/cuda/cuda_reduction.py),
under Numba's CUDA simulator: a reduction loop bound to threadIdx.x becomes per-thread
partials + a warp-shuffle allreduce (+ shared memory across warps). Numbers against numpy on
random inputs; row lengths that are not multiples of the thread count (guards)."""

import numpy as np
import pytest
from numba import cuda  # the simulator swaps a module-level ``cuda`` (tests/conftest.py sets it)

from workbench import ops
from workbench.backends import build
from workbench.backends.cuda.cuda_reduction import CrossThreadReductionError
from workbench.schedule import Schedule

pytestmark = pytest.mark.cuda


def row_reduction(func, threads: int, rows_per_block: int = 1) -> Schedule:
    """One reduction block: rows on blockIdx.x (and threadIdx.y), the row on threadIdx.x."""
    sch = Schedule(func)
    blk = sch.get_child_blocks(sch.get_block("root"))[0]
    i, k = sch.get_loops(blk)
    _, k_1 = sch.split(k, factors=[None, threads])
    if rows_per_block > 1:
        i_0, i_1 = sch.split(i, factors=[None, rows_per_block])
        sch.bind(i_0, "blockIdx.x")
        sch.bind(i_1, "threadIdx.y")
    else:
        sch.bind(i, "blockIdx.x")
    sch.bind(k_1, "threadIdx.x")
    return sch


def fused_rows(func, threads: int) -> Schedule:
    """Softmax / layernorm: every reduction computed at the output's row (blockIdx.x), each
    reduce loop split and bound to threadIdx.x, the statistics in local scope."""
    sch = Schedule(func)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    *reductions, out = names
    i, j = sch.get_loops(sch.get_block(out))
    _, j_1 = sch.split(j, factors=[None, threads])
    sch.bind(i, "blockIdx.x")
    sch.bind(j_1, "threadIdx.x")
    for name in reversed(reductions):
        sch.compute_at(sch.get_block(name), i)
    for name in reductions:
        blk = sch.get_block(name)
        _, k_1 = sch.split(sch.get_loops(blk)[-1], factors=[None, threads])
        sch.bind(k_1, "threadIdx.x")
        sch.set_scope(blk, 0, "local")
    return sch


def run(sch, args):
    kernel = build(sch, target="cuda")
    got = [a.copy() for a in args]
    kernel(*got)
    expected = [a.copy() for a in args]
    build(sch.func_before, target="numpy")(*expected)
    return kernel, got, expected


@pytest.mark.parametrize(
    ("n", "threads", "shape"),
    [
        (80, 32, "one warp"),
        (150, 64, "two warps + shared"),
        (20, 16, "half a warp"),
        (50, 24, "not a power of two"),
    ],
)
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max"])
def test_row_reductions(rng, op, n, threads, shape):
    a = rng.standard_normal((3, n), dtype=np.float32)
    out = np.full(3, np.nan, np.float32)
    kernel, (_, got), _ = run(row_reduction(getattr(ops, op)(3, n), threads), [a, out])
    expected = a.sum(axis=1) if op == "reduce_sum" else a.max(axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    src = kernel.source
    assert kernel.launches[0].block == (threads, 1, 1)
    if shape == "one warp":
        assert src.count("cuda.shfl_xor_sync(4294967295") == 5 and "syncthreads" not in src
    if shape == "two warps + shared":
        assert "A_red_warps = cuda.shared.array((1, 2), numba.float32)" in src
        assert src.count("cuda.shfl_xor_sync") == 10 and src.count("cuda.syncthreads()") == 1
    if shape == "half a warp":  # 16 threads: a partial warp, mask of the 16 lanes
        assert src.count("cuda.shfl_xor_sync(65535") == 4
    if shape == "not a power of two":
        assert "shfl" not in src and "A_red_partials = cuda.shared.array((1, 24)" in src


def test_rows_on_threadidx_y_are_independent_groups(rng):
    """Two rows per block on threadIdx.y: each row's 32 threads reduce among themselves."""
    a = rng.standard_normal((4, 70), dtype=np.float32)
    out = np.full(4, np.nan, np.float32)
    sch = row_reduction(ops.reduce_sum(4, 70), 64, rows_per_block=2)
    kernel, (_, got), _ = run(sch, [a, out])
    np.testing.assert_allclose(got, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    assert kernel.launches[0].block == (64, 2, 1)
    assert "cuda.shared.array((2, 2), numba.float32)" in kernel.source


def test_softmax_one_block_per_row_three_fused_reductions(rng):
    a = rng.standard_normal((2, 80), dtype=np.float32)
    kernel, got, expected = run(fused_rows(ops.softmax(2, 80), 64), [a, np.zeros_like(a)])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got[1], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert len(kernel.launches) == 1 and kernel.launches[0].grid == (2, 1, 1)
    assert kernel.source.count("cuda.syncthreads()") == 2  # one per multi-warp allreduce


def test_layernorm_one_block_per_row(rng):
    n = 50
    args = [
        rng.standard_normal((2, n), dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
        rng.standard_normal(n, dtype=np.float32),
        np.zeros((2, n), np.float32),
    ]
    _, got, expected = run(fused_rows(ops.layernorm(2, n), 32), args)
    np.testing.assert_allclose(got[3], expected[3], rtol=1e-4, atol=1e-5)
    x = args[0]
    norm = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got[3], norm * args[1] + args[2], rtol=1e-4, atol=1e-4)


def test_reduction_on_threadidx_y_is_refused_at_build():
    sch = Schedule(ops.reduce_sum(4, 8))
    i, k = sch.get_loops(sch.get_child_blocks(sch.get_block("root"))[0])
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.y")
    with pytest.raises(CrossThreadReductionError, match="bound to threadIdx.y"):
        build(sch, target="cuda")


def test_simulator_shuffles_follow_the_hardware(rng):
    """The simulator fallback (cuda_shuffle): xor, down (own value past the end), broadcast."""
    from workbench.backends.cuda.cuda_shuffle import install_simulator_shuffles

    install_simulator_shuffles()

    @cuda.jit
    def shuffles(values, out):
        t = cuda.threadIdx.x
        v = values[t]
        out[0, t] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        out[1, t] = cuda.shfl_down_sync(0xFFFFFFFF, v, 4)
        out[2, t] = cuda.shfl_sync(0xFFFFFFFF, v, 3)

    values = rng.standard_normal(64, dtype=np.float32)
    out = np.zeros((3, 64), np.float32)
    shuffles[1, 64](values, out)
    lanes = np.arange(64)
    np.testing.assert_array_equal(out[0], values[lanes ^ 1])
    down = np.where(lanes % 32 + 4 < 32, lanes + 4, lanes)
    np.testing.assert_array_equal(out[1], values[down])
    np.testing.assert_array_equal(out[2], values[lanes - lanes % 32 + 3])


def test_spatial_loop_inside_the_reduce_loops_is_refused_at_build():
    """``for k (threadIdx.x): for i: block``: the thread loop would combine values of
    different rows; the lowering needs the reduce loops as a perfect nest around the block."""
    sch = Schedule(ops.reduce_sum(4, 8))
    i, k = sch.get_loops(sch.get_child_blocks(sch.get_block("root"))[0])
    sch.reorder(k, i)
    sch.bind(k, "threadIdx.x")
    with pytest.raises(CrossThreadReductionError, match="loop 'i' \\(not a reduce loop\\)"):
        build(sch, target="cuda")


def test_cpu_and_numpy_targets_run_the_bound_reduction_serially(rng):
    a = rng.standard_normal((3, 50), dtype=np.float32)
    sch = row_reduction(ops.reduce_max(3, 50), 32)
    for target in ("cpu", "numpy"):
        out = np.full(3, np.nan, np.float32)
        build(sch, target=target)(a, out)
        np.testing.assert_allclose(out, a.max(axis=1), rtol=1e-6)
