"""The dependence analysis (``workbench.schedule.scope``) and what uses it: parallel /
vectorize legality, the DSL's loop-kind check, the scope-based queries, and the numpy
reference's shuffled iteration order (race detection)."""


import numpy as np
import pytest
from reduction_examples import with_axis_kinds
from schedule_checks import assert_computes_reference
from schedule_examples import add_relu, matmul
from work import work

import workbench as wb
from workbench import T
from workbench.ir import ForKind
from workbench.schedule import (
    LoopCarriedDependenceError,
    LoopWriteConflictError,
    NestedVectorizeError,
    Schedule,
)
from workbench.schedule.scope import block_scope, loop_conflicts, scope_of
from workbench.schedule.tree import replace_loop


def column_sum(n: int):
    """The issue's race: ``i`` drives only a spatial iterator, yet every ``i`` writes B[vk]."""

    @T.prim_func
    def column_sum(A: T.Buffer((n, n), "float32"), B: T.Buffer((n,), "float32")):
        for i, k in T.grid(n, n):
            with T.block("B"):
                vi, vk = T.axis.remap("RS", [i, k])  # swapped to "SR" below
                with T.init():
                    B[vk] = T.float32(0)
                B[vk] = B[vk] + A[vi, vk]

    # the DSL refuses a reduce axis indexing a store (issue 17): the IR is made directly
    return with_axis_kinds(column_sum, "B", "SR")


@T.prim_func
def prefix(A: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("A"):
            vi = T.axis.spatial(15, i)
            A[vi + 1] = A[vi + 1] + A[vi]


def test_parallel_of_loop_writing_one_element_is_refused():
    sch = Schedule(column_sum(16))
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(LoopWriteConflictError) as info:
        sch.parallel(i)
    err = info.value
    assert (err.loop, err.block, err.other_block, err.buffer) == ("i", "B", "B", "B")
    assert err.accesses == ("B[vk]", "B[vk]")
    assert "block 'B' writes B[vk] in one iteration" in err.detail
    assert len(sch.trace) == 2  # get_block, get_loops: nothing recorded


def test_vectorize_of_carried_dependence_is_refused():
    sch = Schedule(prefix)
    (i,) = sch.get_loops(sch.get_block("A"))
    with pytest.raises(LoopCarriedDependenceError) as info:
        sch.vectorize(i)
    assert info.value.accesses == ("A[vi + 1]", "A[vi:vi + 2]")
    assert block_scope(prefix).carried_loops("A") == ("i",)


def test_legality_does_not_depend_on_problem_size():
    """The same answers at 8 and at 2**20, with the same (small) work: counted in Python
    calls, not seconds (a loaded CI machine is slow; enumerating 2**20 would be millions)."""
    calls = []
    for n in (8, 1 << 20):
        func = column_sum(n)
        used = work(lambda f=func: ([c.buffer for c in loop_conflicts(f, "i")],
                                    block_scope(f).carried_loops("B")))
        conflicts, carried = used.value
        assert conflicts[:1] == ["B"]
        assert carried == ("i",)  # k writes distinct B[vk]
        calls.append(used.calls)
        assert used.peak_bytes < 16 << 20  # no array of the 2**20 elements either
    assert calls[1] <= 2 * calls[0] + 1000


def test_tiled_fused_and_split_loops_are_independent(rng):
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 3])  # non-dividing: T.where
    sch.reorder(io, jo, k, ii, ji)
    fused = sch.fuse(io, jo)
    sch.parallel(fused)
    sch.vectorize(ji)
    assert loop_conflicts(sch.mod, sch.name(fused)) == []
    assert loop_conflicts(sch.mod, sch.name(k))  # the reduction loop is carried
    assert_computes_reference(sch, matmul)


def test_vectorize_does_not_nest():
    sch = Schedule(matmul)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, j)
    _, ji = sch.split(j, factors=[None, 4])
    sch.vectorize(ji)
    with pytest.raises(NestedVectorizeError):
        sch.vectorize(i)


def test_cache_copy_under_parallel_loop_is_private(rng):
    """A local copy written before it is read in each iteration is allocated per iteration by
    the backends: reusing its elements across iterations is no race (TVM accepts it too)."""
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    b_local = sch.cache_read(block, 2, "local")
    sch.compute_at(b_local, i)
    sch.parallel(i)
    assert_computes_reference(sch, matmul)


def test_scope_edges_queries_and_cache():
    scope = block_scope(add_relu)
    assert scope.blocks == ("T_add", "C")
    assert scope.producers("C") == ["T_add"] and scope.consumers("T_add") == ["C"]
    assert [(d.src, d.dst, d.kind.value) for d in scope.deps] == [("T_add", "C", "RAW")]
    assert block_scope(add_relu) is scope  # cached by structural hash
    assert scope_of(add_relu, "C") is scope
    sch = Schedule(add_relu)
    assert [sch.name(b) for b in sch.get_producers(sch.get_block("C"))] == ["T_add"]
    assert [sch.name(b) for b in sch.get_consumers(sch.get_block("T_add"))] == ["C"]
    assert "RAW: T_add -> C (T_add)" in str(scope)


def test_dsl_rejects_parallel_reduction_loop():
    source = '''
@T.prim_func
def f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        for k in T.parallel(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
'''
    with pytest.raises(wb.DSLError) as info:
        wb.from_source(source)
    err = info.value
    assert err.kind == "loop-kind" and err.lineno == 5
    assert err.source_line.strip() == "for k in T.parallel(8):"
    assert err.col == 13  # the caret under k
    assert err.message.startswith("loop 'k' is T.parallel but binds the reduction variable 'vk'")


def test_dsl_rejects_vectorized_carried_dependence():
    source = '''
@T.prim_func
def g(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(15):
        with T.block("A"):
            vi = T.axis.spatial(15, i)
            A[vi + 1] = A[vi + 1] + A[vi]
'''
    with pytest.raises(wb.DSLError) as info:
        wb.from_source(source)
    assert info.value.lineno == 4 and "loop 'i' is T.vectorized but two of its iterations" in (
        info.value.message)


def test_dsl_accepts_independent_parallel_loops():
    source = '''
@T.prim_func
def h(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.parallel(8):
        for k in range(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
'''
    func = wb.from_source(source)
    a = np.random.default_rng(0).uniform(0.5, 1.5, (8, 8)).astype("float32")
    b = np.zeros(8, "float32")
    wb.build(func, target="cpu")(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_shuffled_reference_order_exposes_a_race():
    """A racy function built by hand (the checks refuse it) gives different results when its
    parallel loop runs in another order; a legal one does not."""
    racy = replace_loop(prefix, "i", lambda loop: loop.replace(kind=ForKind.PARALLEL))
    a = np.random.default_rng(1).uniform(0.5, 1.5, 16).astype("float32")
    results = {}
    for order in ("program", "reversed", "shuffled"):
        x = a.copy()
        wb.build(racy, target="numpy", iteration_order=order, order_seed=3)(x)
        results[order] = x
    np.testing.assert_allclose(results["program"], np.cumsum(a), rtol=1e-5)
    assert not np.allclose(results["reversed"], results["program"])
    assert not np.allclose(results["shuffled"], results["program"])
    with pytest.raises(ValueError):
        wb.build(racy, target="numpy", iteration_order="sideways")


def test_where_predicate_bounds_an_inner_fused_split_loop():
    """Found by the long property run: ``parallel(i_0)`` then a non-dividing split of the fused
    inner loops adds ``T.where(f0 * 3 + f1 < 20)``; with it, ``(f0 * 3 + f1) // 10`` is 0 or 1,
    so the iterations of ``i_0`` still write distinct rows and the printed script parses."""
    from workbench import ops

    spec = next(s for s in ops.LIBRARY if s.name == "softmax")
    sch = Schedule(spec.func())
    i, k = sch.get_loops(sch.get_block("T_softmax_maxelem"))
    i_0, i_1 = sch.split(i, factors=[None, 2])
    sch.parallel(i_0)
    sch.split(sch.fuse(i_1, k), factors=[None, 3])
    assert loop_conflicts(sch.mod, "i_0") == []
    assert wb.from_source(sch.mod.script()) == sch.mod
    assert_computes_reference(sch, spec.func())


def test_where_predicate_bounds_a_linear_inner_sum():
    """Found by the long property run: a split of an extent-1 loop under ``parallel(i_0)``
    gives ``vi = i_0 + i_1_0 * 2 + i_1_1`` with ``T.where(i_1_0 * 2 + i_1_1 < 1)``."""
    sch = Schedule(matmul)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    i_0, i_1 = sch.split(i, factors=[None, 1])
    sch.parallel(i_0)
    sch.split(i_1, factors=[None, 2])
    assert loop_conflicts(sch.mod, "i_0") == []
    assert wb.from_source(sch.mod.script()) == sch.mod
    assert_computes_reference(sch, matmul)


def test_compute_location_family_reads_producers_and_consumers_from_the_block_scope():
    """The compute location primitives ask the shared ``BlockScope`` (RAW edges, program
    order); WAR edges are what they refuse as "producer after consumer"."""
    from test_compute_location_errors import diamond, fanout, overwritten_input, read_before_write

    from workbench.schedule.compute_location_scope import (
        check_movable,
        producers_and_consumers,
        readers_before,
        writers_after,
    )

    for func in (add_relu, matmul, diamond, fanout, overwritten_input, read_before_write):
        for name in block_scope(func).blocks:
            info, block = check_movable("test", func, name)
            producers, consumers = producers_and_consumers(info, block)
            scope = scope_of(func, name)
            assert [b.name for b in producers] == scope.producers(name)
            assert [b.name for b in consumers] == scope.consumers(name)
    # C reads T_a before T_a writes it: neither is the other's producer or consumer
    info, c = check_movable("test", read_before_write, "C")
    assert producers_and_consumers(info, c) == ([], [])
    assert [b.name for b in writers_after(info, c)] == ["T_a"]
    info, t_a = check_movable("test", read_before_write, "T_a")
    assert [b.name for b in readers_before(info, t_a)] == ["C"]
    # C reads the second T0 (T0_again), T1 the first: program order decides
    info, c = check_movable("test", overwritten_input, "C")
    assert [b.name for b in producers_and_consumers(info, c)[0]] == ["T0", "T1", "T0_again"]
    info, t0 = check_movable("test", overwritten_input, "T0")
    assert [b.name for b in producers_and_consumers(info, t0)[1]] == ["T1", "C"]


def test_cache_primitives_read_producers_and_consumers_from_the_block_scope(monkeypatch):
    """cache_read / cache_write find the blocks to redirect and to stay ordered with through
    the shared ``BlockScope`` (its readers / writers), not a walk of their own."""
    from test_tvm_cache_read_write import func_multi_consumer, func_multi_producer, func_nested_seq

    from workbench.schedule import memory, memory_placement
    from workbench.schedule.tree import find_block

    for func in (add_relu, matmul, func_multi_consumer, func_multi_producer, func_nested_seq):
        for name in block_scope(func).blocks:
            block, _ = find_block(func, name, "test")
            scope = scope_of(func, name)
            for region in block.reads:
                buf = region.buffer
                got = memory.resolve_consumers("cache_read", func, block, buf, None,
                                               default_all=True)
                want = [b for b in scope.readers(buf.name)
                        if b != name and b not in scope.writers(buf.name)]
                assert got == want, (func.name, name, buf.name)
    # B and C both consume A's output in func_multi_consumer: the default redirects both
    users = memory_placement.buffer_users(func_multi_consumer, func_multi_consumer.root_block
                                          .alloc_buffers[0], "A")
    assert [(u.name, u.reads, u.writes) for u in users] == [("B", True, False),
                                                             ("C", True, False)]
    # cache_read asks the scope analysis (no walk of its own)
    calls = []
    real = memory_placement.scope_of

    def counting(func, block, primitive="block_scope"):
        calls.append(block)
        return real(func, block, primitive)

    monkeypatch.setattr(memory_placement, "scope_of", counting)
    sch = Schedule(func_multi_consumer)
    sch.cache_read(sch.get_block("B"), 0, "global")
    assert calls and set(calls) <= {"A", "B", "C"}
