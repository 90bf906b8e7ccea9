"""TVM's block-scope dependence tests, and the dependence parts of its state tests,
re-expressed in the DSL against ``workbench.schedule.scope``.

Sources: apache/tvm ``tests/python/s_tir/schedule/test_tir_schedule_block_scope.py`` and
``test_tir_schedule_state_cached_flags.py`` (the functions whose flags are about dependences:
``stage_pipeline`` and loop-carried dependences; ``affine_binding`` / ``region_cover`` are not
ported, see ``docs/decisions.d/scope.md``). Each test names its TVM test. Where a test's
function can be parallelised, the parallel schedule is also run against the reference.
"""

from schedule_checks import assert_computes_reference

from workbench import T
from workbench.schedule import Schedule
from workbench.schedule.scope import DepKind, block_scope, loop_conflicts


def deps(scope, block, by="src"):
    found = scope.deps_by_src(block) if by == "src" else scope.deps_by_dst(block)
    return sorted((d.src, d.dst, d.kind.value, d.buffers, d.loops) for d in found)


@T.prim_func
def elementwise(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def matmul(
    A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
):
    for i, j in T.grid(32, 32):
        with T.block("init"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.float32(0)
        for k in range(32):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def war_dependency(
    A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
    C: T.Buffer((128, 128), "float32"),
):
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def loop_carried_dependency(
    A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
    C: T.Buffer((128,), "float32"),
):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] * T.float32(2)
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = T.if_then_else(vi >= 1, B[vi - 1] + T.float32(1), T.float32(0))


@T.prim_func
def concatenate_multi_producer(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(64):
        with T.block("A_0"):
            vi = T.axis.spatial(64, i)
            A[vi] = T.Cast("float32", vi + 1)
    for i in range(64):
        with T.block("A_1"):
            vi = T.axis.spatial(64, i + 64)
            A[vi] = T.Cast("float32", vi + 2)
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def lca_at_loop(
    A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
    C: T.Buffer((128,), "float32"),
):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] * T.float32(2)
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def elementwise_affine_producer(
    A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")
):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j, k, l in T.grid(16, 2, 32, 16):
        with T.block("B"):
            vi = T.axis.spatial(128, i * 8 + j * 4 + k // 8)
            vj = T.axis.spatial(128, k % 8 * 16 + l)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def elementwise_subblock(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4])
            T.writes(B[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4])
            for ii, jj in T.grid(4, 4):
                with T.block("B_sub"):
                    vi_i, vj_i = T.axis.remap("SS", [ii, jj])
                    B[vi * 4 + vi_i, vj * 4 + vj_i] = A[vi * 4 + vi_i, vj * 4 + vj_i] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_elementwise_dependency():
    """test_tir_schedule_block_scope.py::test_elementwise_dependency"""
    scope = block_scope(elementwise)
    want = [("B", "C", "RAW", ("B",), ())]
    assert deps(scope, "B", "src") == want
    assert deps(scope, "C", "dst") == want
    assert scope.producers("C") == ["B"] and scope.consumers("B") == ["C"]


def test_matmul_dependency():
    """test_tir_schedule_block_scope.py::test_matmul_dependency"""
    scope = block_scope(matmul)
    want = [("init", "update", "RAW", ("C",), ()), ("init", "update", "WAW", ("C",), ())]
    assert deps(scope, "init", "src") == want
    assert deps(scope, "update", "dst") == want
    assert scope.carried_loops("update") == ("k",)  # C[vi, vj] is updated for every k
    assert scope.carried_loops("init") == ()


def test_war_dependency():
    """test_tir_schedule_block_scope.py::test_war_dependency"""
    scope = block_scope(war_dependency)
    want = [("C", "B", "WAR", ("B",), ())]
    assert deps(scope, "C", "src") == want
    assert deps(scope, "B", "dst") == want
    assert scope.producers("B") == [] and scope.consumers("C") == []


def test_loop_carried_dependency():
    """test_tir_schedule_state_cached_flags.py::test_loop_carried_dependency: ``C`` reads
    ``B[vi - 1]``, written by the previous iteration of ``i``."""
    scope = block_scope(loop_carried_dependency)
    assert deps(scope, "C", "dst") == [("B", "C", "RAW", ("B",), ("i",))]
    (conflict,) = loop_conflicts(loop_carried_dependency, "i")
    assert (conflict.kind, conflict.first.text, conflict.second.text) == (
        DepKind.RAW, "B[vi]", "B[vi_1 - 1]")  # the parser renames the second vi


def test_lca_at_loop():
    """test_tir_schedule_state_cached_flags.py::test_lca_at_loop: the same shape without the
    shift is not carried, so ``i`` may run in parallel."""
    scope = block_scope(lca_at_loop)
    assert deps(scope, "C", "dst") == [("B", "C", "RAW", ("B",), ())]
    sch = Schedule(lca_at_loop)
    sch.parallel(sch.get_loops(sch.get_block("B"))[0])
    assert_computes_reference(sch, lca_at_loop)


def test_concatenate_multi_producer():
    """test_tir_schedule_state_cached_flags.py::test_concatenate_multi_producer_covered"""
    scope = block_scope(concatenate_multi_producer)
    assert scope.producers("B") == ["A_0", "A_1"]
    assert scope.writers("A") == ["A_0", "A_1"]
    # TVM's edges are per buffer: two writers of A are ordered (WAW) even if disjoint
    assert deps(scope, "A_1", "dst") == [("A_0", "A_1", "WAW", ("A",), ())]
    sch = Schedule(concatenate_multi_producer)
    for block in ("A_0", "A_1", "B"):
        sch.parallel(sch.get_loops(sch.get_block(block))[0])
    assert_computes_reference(sch, concatenate_multi_producer)


def test_elementwise_affine_producer():
    """test_tir_schedule_state_cached_flags.py::test_elementwise_affine_producer: the
    producer's bindings mix ``//`` and ``%`` of ``k``; every loop's iterations write distinct
    elements (no carried dependence), so each may be parallel."""
    scope = block_scope(elementwise_affine_producer)
    assert scope.carried_loops("B") == ()
    assert deps(scope, "C", "dst") == [("B", "C", "RAW", ("B",), ())]
    for loop in ("i", "j", "k", "l"):
        assert loop_conflicts(elementwise_affine_producer, loop) == []
    sch = Schedule(elementwise_affine_producer)
    _, _, k, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(k)
    assert_computes_reference(sch, elementwise_affine_producer)


def test_subblock():
    """test_tir_schedule_state_cached_flags.py::test_subblock: a block with a nested block;
    its declared 4x4 windows do not overlap between iterations of ``i``."""
    scope = block_scope(elementwise_subblock)
    assert scope.blocks == ("B", "C")
    assert block_scope(elementwise_subblock, "B").blocks == ("B_sub",)
    assert deps(scope, "C", "dst") == [("B", "C", "RAW", ("B",), ())]
    assert loop_conflicts(elementwise_subblock, "i") == []
    sch = Schedule(elementwise_subblock)
    sch.parallel(sch.get_loops(sch.get_block("B"))[0])
    assert_computes_reference(sch, elementwise_subblock)
