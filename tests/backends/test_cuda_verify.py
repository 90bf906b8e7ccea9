"""The CUDA target's passes and GPU verifier: syncthreads placement, errors, warnings."""

import pytest

from workbench import ops, recipes
from workbench.backends import build
from workbench.backends.common.lower import lower
from workbench.backends.common.target import CUDA_FACTS, Target
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.backends.cuda.cuda_verify import (
    GpuPerformanceWarning,
    ParallelOnGpuError,
    SharedMemoryExceededError,
    UnboundKernelError,
    verify_gpu,
)
from workbench.backends.cuda.numba_cuda import generate_cuda_source, prepare, split_kernels
from workbench.ir.functor import collect
from workbench.schedule import (
    Schedule,
    ScheduleError,
    ThreadExtentMismatchError,
    TooManyThreadsError,
)

pytestmark = pytest.mark.cuda


def test_unbound_statement_is_refused():
    with pytest.raises(UnboundKernelError) as info:
        build(ops.add(8, 8), target="cuda")
    assert isinstance(info.value, ScheduleError) and info.value.primitive == "build"
    assert "did you forget to bind" in str(info.value)


def test_parallel_is_refused_with_a_clear_message():
    sch2 = Schedule(ops.add(8, 8))
    i, j = sch2.get_loops(sch2.get_child_blocks(sch2.get_block("root"))[0])
    sch2.bind(i, "blockIdx.x")
    sch2.parallel(j)
    with pytest.raises(ParallelOnGpuError, match="CPU-only annotation"):
        build(sch2, target="cuda")


def test_threads_per_block_limit_from_the_target():
    sch = recipes.get("matmul", "naive", "cuda")(ops.matmul(16, 16, 16), tile=4)
    with pytest.raises(TooManyThreadsError, match="16 threads per block, more than the device's 8"):
        build(sch, target="cuda", max_threads_per_block=8)


def test_shared_memory_limit():
    sch = recipes.get("matmul", "shared", "cuda")(ops.matmul(16, 16, 16), tile=4, k_tile=4, vector=False)
    func, _ = prepare(lower(sch.mod), Target("cuda"))
    _, kernels = split_kernels(func)
    small = CUDA_FACTS.__class__(**{**CUDA_FACTS.__dict__, "shared_memory_per_block": 64})
    with pytest.raises(SharedMemoryExceededError) as info:
        verify_gpu(lower(sch.mod), kernels, small, 1024)
    assert info.value.used == 2 * 4 * 4 * 4 and info.value.limit == 64


def test_extent_mismatch_found_by_the_verifier_too():
    from workbench.ir import ForKind
    from workbench.schedule.tree import replace_loop

    sch = recipes.get("matmul", "naive", "cuda")(ops.matmul(16, 16, 16), tile=4)
    func = replace_loop(
        sch.mod, "k", lambda n: n.replace(kind=ForKind.THREAD_BINDING, thread_binding="blockIdx.x")
    )
    with pytest.raises(ThreadExtentMismatchError):
        build(func, target="cuda")


def test_unbound_shared_copy_is_legal_with_a_warning():
    """A shared stage copied outside every threadIdx loop: every thread repeats the copy."""
    sch = Schedule(ops.matmul(8, 8, 8))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.bind(i, "blockIdx.x")
    a_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(a_shared, i)
    sch.bind(j, "threadIdx.x")
    with pytest.warns(GpuPerformanceWarning, match="every thread of the block repeats"):
        source = generate_cuda_source(lower(sch.mod))
    assert source.count("cuda.syncthreads()") == 1


def test_no_barrier_without_shared_memory():
    sch = recipes.get("matmul", "register_local", "cuda")(ops.matmul(16, 16, 16))
    func, _ = prepare(lower(sch.mod), Target("cuda"))
    assert len(collect(func.body, lambda n: isinstance(n, SyncThreads))) == 2
    naive, _ = prepare(lower(recipes.get("matmul", "naive", "cuda")(ops.matmul(8, 8, 8), 4).mod), Target("cuda"))
    assert not collect(naive.body, lambda n: isinstance(n, SyncThreads))


def test_shared_stage_across_kernels_is_refused_naming_the_blocks():
    """A shared cache stage left at the root: its copy is one kernel and the matmul another,
    and shared memory dies between them. The check reads the stage's writers and readers from
    the dependence analysis (``BlockScope``) before lowering; nothing is built."""
    from workbench.backends.cuda.cuda_verify import ScopeAcrossKernelsError

    sch = Schedule(ops.matmul(8, 8, 8))
    c = sch.get_block("C")
    a_shared = sch.cache_read(c, 1, "shared")
    (copy_i, copy_j) = sch.get_loops(a_shared)
    sch.bind(copy_i, "blockIdx.x")
    sch.bind(copy_j, "threadIdx.x")
    i, j, _ = sch.get_loops(c)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    with pytest.raises(ScopeAcrossKernelsError) as info:
        build(sch, target="cuda")
    message = str(info.value)
    assert "shared buffer 'A_shared' is used by kernels [0, 1]" in message
    assert "'A_shared' in kernel 0" in message and "'C' in kernel 1" in message
    # compute_at under the consumer's block loop makes it one kernel, and it computes
    sch2 = Schedule(ops.matmul(8, 8, 8))
    c2 = sch2.get_block("C")
    i2, j2, _ = sch2.get_loops(c2)
    sch2.bind(i2, "blockIdx.x")
    sch2.bind(j2, "threadIdx.x")
    stage = sch2.cache_read(c2, 1, "shared")
    sch2.compute_at(stage, i2)
    import numpy as np

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 8, 8)).astype("float32")
    out = np.full((8, 8), np.nan, "float32")
    build(sch2, target="cuda")(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
