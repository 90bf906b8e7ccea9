"""Double-buffered shared stages (``annotate(block, "double_buffer_scope", 0)``) under the
CUDA simulator: two halves per stage, the next tile's copy before this tile's compute,
one barrier per iteration, and the numbers of numpy."""

import sys
from pathlib import Path

import numpy as np
import pytest

from workbench import ops
from workbench.backends import build
from workbench.backends.cuda.cuda_double_buffer import DoubleBufferError
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.ir import For, IfThenElse
from workbench.ir.functor import collect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "schedule"))
from test_tvm_compute_at_cuda import _after, cooperative_fetch  # noqa: E402

pytestmark = pytest.mark.cuda


def _matmul_schedule(both: bool = True):
    sch = _after(4)  # TVM's cuda_matmul_5: shared stages at k_0, local ones at k_1
    cooperative_fetch(sch, "A_shared")
    cooperative_fetch(sch, "B_shared")
    sch.annotate(sch.get_block("A_shared"), "double_buffer_scope", 0)
    if both:
        sch.annotate(sch.get_block("B_shared"), "double_buffer_scope", 0)
    return sch


def test_double_buffered_matmul_on_the_simulator(rng):
    kernel = build(_matmul_schedule(), target="cuda")
    src = kernel.source
    assert "A_shared = cuda.shared.array((2, 8, 32), numba.float32, alignment=SHARED_ALIGN)" in src
    assert "if k_0 + 1 < 8:" in src
    assert "store4(A_shared, ((k_0 + 1) % 2, " in src and "min(k_0, 6) * 8" in src
    assert "A_shared[k_0 % 2, k_1 + ax0, ty * 4 + ax1]" in src
    # one barrier after the prologue, one per iteration (was: two per iteration)
    assert src.count("cuda.syncthreads()") == 2
    (k_0,) = collect(kernel.device_func.body, lambda n: isinstance(n, For) and n.loop_var.name == "k_0")
    body = k_0.body.stmts
    # register prefetch: loads first, the guarded shared stores right before the barrier
    assert isinstance(body[-2], IfThenElse) and isinstance(body[-1], SyncThreads)
    assert len(collect(k_0, lambda n: isinstance(n, SyncThreads))) == 1
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-4, atol=1e-4)


def test_every_stage_filled_in_the_loop_must_be_double_buffered():
    sch = _matmul_schedule(both=False)
    with pytest.raises(DoubleBufferError, match="writes B_shared"):
        build(sch, target="cuda")


def test_the_cpu_target_ignores_the_annotation(rng):
    sch = _matmul_schedule()
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    build(sch, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-4, atol=1e-4)


def test_a_stage_with_no_refill_loop_is_refused(rng):
    """A shared stage of an elementwise kernel, computed once per block: nothing to overlap."""
    from workbench.schedule import Schedule

    sch = Schedule(ops.add_mul_gelu(4, 32))
    for producer in sch.get_child_blocks(sch.get_block("root"))[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    i, j = sch.get_loops(out)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    stage = sch.cache_read(out, 0, "shared")
    sch.compute_at(stage, i)
    sch.annotate(stage, "double_buffer_scope", 0)
    with pytest.raises(DoubleBufferError, match="no serial loop around it"):
        build(sch, target="cuda")


def test_register_prefetch_moves_the_loads_before_the_compute(rng, monkeypatch):
    """One group of 4 per thread per tile: the next tile's ``load4`` go to registers at the
    top of ``k_0`` (tile ``min(k_0 + 1, 2)``), the shared stores after the compute (under
    ``if k_0 + 1 < 3`` with ``PREFETCH_STORE_ON_LAST`` off)."""
    from workbench import recipes
    from workbench.recipes import matmul_cuda

    monkeypatch.setattr(matmul_cuda, "PREFETCH_STORE_ON_LAST", False)

    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(64, 64, 24), threads=8, per_thread=4, k_tile=8, unroll_k=False
    )
    kernel = build(sch, target="cuda")
    body = kernel.source.split("for k_0 in range(3):")[1]
    head, tail = body.split("for k_1 in range(8):")
    assert "load4(A, (" in head and "min(k_0, 1) * 8" in head and "A_shared[" not in head
    assert "if k_0 + 1 < 3:" in tail and "store4(B_shared, ((k_0 + 1) % 2" in tail
    a = rng.standard_normal((64, 24), dtype=np.float32)
    b = rng.standard_normal((24, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, n", [(64, 64), (52, 68)], ids=["guarded-lanes", "edges"])
def test_register_prefetch_keeps_the_guard_of_a_tile_with_fewer_vectors_than_threads(
        rng, monkeypatch, m, n):
    """The 64 tile as 16 x 16 threads, 4 x 4 each (``TILE_64_AS_8X8`` off): a tile of A or B
    is 128 vectors of 4 for 256 threads, so its copy runs under ``if ... < 128``; the loads
    still move to the top of ``k_0`` and the stores after the compute, each half under that
    guard (52 x 68: one block past both edges, A's copy guarded by its 104 vectors)."""
    from workbench import recipes
    from workbench.recipes import matmul_cuda

    monkeypatch.setattr(matmul_cuda, "TILE_64_AS_8X8", False)
    monkeypatch.setattr(matmul_cuda, "PREFETCH_STORE_ON_LAST", False)

    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(m, n, 24), threads=16, per_thread=4, k_tile=8, unroll_k=False, split_k=1
    )
    kernel = build(sch, target="cuda")
    body = kernel.source.split("for k_0 in range(3):")[1]
    head, tail = body.split("for k_1 in range(8):")
    assert "load4(A, (" in head and "min(k_0, 1) * 8" in head and "A_shared[" not in head
    assert head.count("if ") == 2 and head.count("< 128:") == (2 if m == 64 else 1)
    assert "if k_0 + 1 < 3:" in tail and "store4(B_shared, ((k_0 + 1) % 2" in tail
    a = rng.standard_normal((m, 24), dtype=np.float32)
    b = rng.standard_normal((24, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_explicit_unroll_of_k_1(rng):
    """``pragma_unroll_explicit`` on k_1: eight copies of its body in the source."""
    from workbench import recipes

    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(32, 32, 16), threads=4, per_thread=8, k_tile=8, unroll_k=True
    )
    kernel = build(sch, target="cuda")
    assert "for k_1 in" not in kernel.source
    assert kernel.source.count("load4(A_shared, (k_0 % 2, 7, ") == 1
    a = rng.standard_normal((32, 16), dtype=np.float32)
    b = rng.standard_normal((16, 32), dtype=np.float32)
    c = np.full((32, 32), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_stores_on_the_last_iteration_leave_no_guard_and_the_same_result(rng, monkeypatch):
    """``matmul_cuda.PREFETCH_STORE_ON_LAST``: ``k_0`` carries ``cuda_prefetch.STORE_ON_LAST``
    and the prefetched registers are stored at every iteration (the last writes the half no
    one reads again), so no ``if`` keeps the compiler from leaving the loads at the top;
    the result is unchanged."""
    from workbench import recipes
    from workbench.backends.cuda.cuda_prefetch import STORE_ON_LAST
    from workbench.recipes import matmul_cuda

    monkeypatch.setattr(matmul_cuda, "PREFETCH_STORE_ON_LAST", True)
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(64, 64, 24), threads=8, per_thread=4, k_tile=8, unroll_k=False
    )
    assert f'"{STORE_ON_LAST}": 1' in sch.mod.script()
    kernel = build(sch, target="cuda")
    body = kernel.source.split("for k_0 in range(3):")[1]
    head, tail = body.split("for k_1 in range(8):")
    assert "min(k_0, 1) * 8" in head and "if k_0 + 1 < 3:" not in tail
    assert "store4(B_shared, ((k_0 + 1) % 2" in tail
    a = rng.standard_normal((64, 24), dtype=np.float32)
    b = rng.standard_normal((24, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_blocks_per_multiprocessor_reach_the_launch_bounds(monkeypatch):
    """``matmul_cuda.BLOCKS_PER_SM`` (2 by default): the SGEMM's block loop of 8 x 8
    register tiles carries ``cuda.min_blocks_per_sm``, its launch config and ``cuda.jit``
    options ask for it (``launch_bounds(256, 2)``); 0 leaves the 256-thread kernel
    unbounded, and 4 x 4 tiles and unpartitioned kernels are never bounded."""
    from workbench import recipes
    from workbench.backends.cuda.numba_cuda_printer import MIN_BLOCKS_ANNOTATION
    from workbench.recipes import matmul_cuda

    assert matmul_cuda.BLOCKS_PER_SM == 2
    recipe = recipes.get("matmul", "register_blocked", "cuda")
    small = build(recipe(ops.matmul(64, 64, 16), threads=8, per_thread=4), target="cuda")
    assert small.launches[0].min_blocks == 0 and "launch_bounds" not in small.source
    guarded = build(recipe(ops.matmul(128, 128, 16), threads=16, per_thread=8,
                           partition_edges=False), target="cuda")
    assert guarded.launches[0].min_blocks == 0 and "launch_bounds" not in guarded.source
    monkeypatch.setattr(matmul_cuda, "BLOCKS_PER_SM", 0)
    plain = build(recipe(ops.matmul(128, 128, 16), threads=16, per_thread=8), target="cuda")
    assert plain.launches[0].min_blocks == 0 and "launch_bounds" not in plain.source
    monkeypatch.setattr(matmul_cuda, "BLOCKS_PER_SM", 2)
    sch = recipe(ops.matmul(128, 128, 16), threads=16, per_thread=8)
    assert f'"{MIN_BLOCKS_ANNOTATION}": 2' in sch.mod.script()
    kernel = build(sch, target="cuda")
    assert kernel.launches[0].min_blocks == 2
    assert "@cuda.jit(fastmath=False, **launch_bounds(256, 2))" in kernel.source


def test_a_store_indexed_by_k_keeps_its_guard_on_the_last_iteration(rng, monkeypatch):
    """``PREFETCH_STORE_ON_LAST`` drops the ``if k_0 + 1 < K`` of the prefetched stores only
    where they address the buffer by its half alone. At K = 16 the 16 x 16 threads' copy of
    B (16 rows for a tile of 8) widens ``B_shared`` to the whole of K, indexed by ``k_0``:
    its last store would write rows 16-23 of a 16-row buffer (an IndexError under the
    simulator, found when the flag became the default). The stage's stores keep their
    guard (A's and B's: one ``if`` around the refill) and the result is the reference's."""
    from workbench import recipes
    from workbench.recipes import matmul_cuda

    monkeypatch.setattr(matmul_cuda, "TILE_64_AS_8X8", False)
    assert matmul_cuda.PREFETCH_STORE_ON_LAST is True
    sch = recipes.get("matmul", "register_blocked", "cuda")(
        ops.matmul(64, 64, 16), threads=16, per_thread=4, unroll_k=False, split_k=1
    )
    kernel = build(sch, target="cuda")
    assert "B_shared = cuda.shared.array((2, 16, 64)" in kernel.source
    tail = kernel.source.split("for k_0 in range(2):")[1].split("for k_1 in range(8):")[1]
    guarded = tail.split("if k_0 + 1 < 2:")
    assert len(guarded) == 2 and "store4(B_shared, ((k_0 + 1) % 2, k_0 * 8" in guarded[1]
    assert "A_shared[(k_0 + 1) % 2" in guarded[1] and "_shared[" not in guarded[0]
    a = rng.standard_normal((64, 16), dtype=np.float32)
    b = rng.standard_normal((16, 64), dtype=np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
