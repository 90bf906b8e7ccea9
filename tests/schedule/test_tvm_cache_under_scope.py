"""TVM's cache_read/cache_write cases with a block scope
(tests/python/s_tir/schedule/test_tir_schedule_cache_read_write.py: ``access_under_scope``,
``test_cache_read_under_scope``, ``test_cache_write_under_scope``), re-expressed in the DSL
with smaller shapes and a parameter ``X`` feeding ``A`` (so that the numbers can be checked).

A buffer produced inside a block's scope and read both inside it (``B``) and outside it
(``C``): a cache made from a block under ``scope`` is allocated in ``scope`` and only the
blocks under ``scope`` read or write it; the blocks outside keep the original buffer (a
local copy filled per tile is never read by another tile). Our cache buffers keep the full
shape (TVM compacts them to the tile, 4x4 here): see docs/decisions.md.
"""

import pytest
from schedule_checks import (
    assert_structural,
    check_numbers,
    compare_with_reference,
    raises_unchanged,
    verify_trace_roundtrip,
)

from workbench import T, from_source
from workbench.backends import build
from workbench.schedule import (
    ConsumerOutsideScopeError,
    NotAConsumerError,
    Schedule,
)
from workbench.schedule.tree import block_names, find_block


@T.prim_func
def access_under_scope(
    X: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    A = T.alloc_buffer((16, 16), "float32")
    for i0, j0 in T.grid(4, 4):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            for x, y in T.grid(4, 4):
                with T.block("A"):
                    vi = T.axis.spatial(16, i * 4 + x)
                    vj = T.axis.spatial(16, j * 4 + y)
                    A[vi, vj] = X[vi, vj] + T.float32(1)
            for x, y in T.grid(4, 4):
                with T.block("B"):
                    vi = T.axis.spatial(16, i * 4 + x)
                    vj = T.axis.spatial(16, j * 4 + y)
                    B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def cache_read_under_scope(
    X: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    A = T.alloc_buffer((16, 16), "float32")
    A_global = T.alloc_buffer((16, 16), "float32")
    for i0, j0 in T.grid(4, 4):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            T.reads(X[0:16, 0:16], A[0:16, 0:16])
            T.writes(A[0:16, 0:16], B[0:16, 0:16])
            A_local = T.alloc_buffer((16, 16), "float32", scope="local")
            for x, y in T.grid(4, 4):
                with T.block("A"):
                    vi = T.axis.spatial(16, i * 4 + x)
                    vj = T.axis.spatial(16, j * 4 + y)
                    A[vi, vj] = X[vi, vj] + T.float32(1)
            for ax0, ax1 in T.grid(4, 4):
                with T.block("A_local"):
                    v0 = T.axis.spatial(16, i * 4 + ax0)
                    v1 = T.axis.spatial(16, j * 4 + ax1)
                    A_local[v0, v1] = A[v0, v1]
            for x_1, y_1 in T.grid(4, 4):
                with T.block("B"):
                    vi_1 = T.axis.spatial(16, i * 4 + x_1)
                    vj_1 = T.axis.spatial(16, j * 4 + y_1)
                    B[vi_1, vj_1] = A_local[vi_1, vj_1] + T.float32(1)
    for ax0_1, ax1_1 in T.grid(16, 16):
        with T.block("A_global"):
            v0_1, v1_1 = T.axis.remap("SS", [ax0_1, ax1_1])
            A_global[v0_1, v1_1] = A[v0_1, v1_1]
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_2, vj_2 = T.axis.remap("SS", [i_1, j_1])
            C[vi_2, vj_2] = A_global[vi_2, vj_2] * T.float32(2)


@T.prim_func
def cache_write_under_scope(
    X: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    A = T.alloc_buffer((16, 16), "float32")
    A_global = T.alloc_buffer((16, 16), "float32")
    for i0, j0 in T.grid(4, 4):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            T.reads(X[0:16, 0:16], A_global[0:16, 0:16])
            T.writes(A_global[0:16, 0:16], B[0:16, 0:16])
            A_local = T.alloc_buffer((16, 16), "float32", scope="local")
            B_global = T.alloc_buffer((16, 16), "float32")
            for x, y in T.grid(4, 4):
                with T.block("A"):
                    vi = T.axis.spatial(16, i * 4 + x)
                    vj = T.axis.spatial(16, j * 4 + y)
                    A_local[vi, vj] = X[vi, vj] + T.float32(1)
            for ax0, ax1 in T.grid(4, 4):
                with T.block("A_local"):
                    v0 = T.axis.spatial(16, i * 4 + ax0)
                    v1 = T.axis.spatial(16, j * 4 + ax1)
                    A_global[v0, v1] = A_local[v0, v1]
            for x_1, y_1 in T.grid(4, 4):
                with T.block("B"):
                    vi_1 = T.axis.spatial(16, i * 4 + x_1)
                    vj_1 = T.axis.spatial(16, j * 4 + y_1)
                    B_global[vi_1, vj_1] = A_global[vi_1, vj_1] + T.float32(1)
            for ax0_1, ax1_1 in T.grid(4, 4):
                with T.block("B_global"):
                    v0_1 = T.axis.spatial(16, i * 4 + ax0_1)
                    v1_1 = T.axis.spatial(16, j * 4 + ax1_1)
                    B[v0_1, v1_1] = B_global[v0_1, v1_1]
    for ax0_2, ax1_2 in T.grid(16, 16):
        with T.block("A_global"):
            v0_2, v1_2 = T.axis.remap("SS", [ax0_2, ax1_2])
            A[v0_2, v1_2] = A_global[v0_2, v1_2]
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_2, vj_2 = T.axis.remap("SS", [i_1, j_1])
            C[vi_2, vj_2] = A[vi_2, vj_2] * T.float32(2)


@T.prim_func
def accumulate_under_scope(X: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i0 in T.serial(4):
        with T.block("scope"):
            i = T.axis.spatial(4, i0)
            for x, y in T.grid(4, 16):
                with T.block("acc"):
                    vi = T.axis.spatial(16, i * 4 + x)
                    vj = T.axis.spatial(16, y)
                    B[vi, vj] = B[vi, vj] + X[vi, vj]


def readers_of(func, buffer: str) -> list[str]:
    """The non-root blocks declaring a read of ``buffer``, in program order."""
    return [
        name
        for name in block_names(func)
        if any(r.buffer.name == buffer for r in _block(func, name).reads)
    ]


def _block(func, name):
    return find_block(func, name, "test")[0]


# --- cache_read -------------------------------------------------------------------------


def test_cache_read_under_scope(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_under_scope: the local copy is
    allocated in ``scope`` and read by ``B`` only; the global copy of ``C`` goes after the
    nest of ``scope`` (the producer) and is read by ``C`` only."""
    sch = Schedule(access_under_scope)
    sch.cache_read(sch.get_block("B"), 0, "local")
    assert readers_of(sch.mod, "A_local") == ["B"]
    assert readers_of(sch.mod, "A") == ["scope", "A_local", "C"]
    assert [b.name for b in _block(sch.mod, "scope").alloc_buffers] == ["A_local"]
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == ["A"]
    check_numbers(sch, rng)
    sch.cache_read(sch.get_block("C"), 0, "global")
    assert_structural(sch, cache_read_under_scope)
    assert from_source(sch.mod.script()).same_as(sch.mod)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_read_under_scope_consumer_blocks(rng):
    """``consumer_blocks`` lists blocks of the scope; a reader outside it is refused with
    the reason, and listing ``B`` alone is the default."""
    sch = Schedule(access_under_scope)
    err = raises_unchanged(
        sch, ConsumerOutsideScopeError,
        sch.cache_read, sch.get_block("B"), 0, "local", consumer_blocks=["B", "C"],
    )
    assert (err.block, err.buffer, err.scope) == ("C", "A", "scope")
    assert "outside block 'scope'" in str(err)
    raises_unchanged(
        sch, NotAConsumerError,
        sch.cache_read, sch.get_block("B"), 0, "local", consumer_blocks=["A"],
    )
    sch.cache_read(sch.get_block("B"), 0, "local", consumer_blocks=[sch.get_block("B")])
    default = Schedule(access_under_scope)
    default.cache_read(default.get_block("B"), 0, "local")
    assert sch.mod.same_as(default.mod)
    verify_trace_roundtrip(sch)


def test_cache_read_from_outside_first(rng):
    """The other order: C's global copy first (after the producer's nest), then B's local
    copy inside the scope; each reader reads its own copy."""
    sch = Schedule(access_under_scope)
    sch.cache_read(sch.get_block("C"), 0, "global")
    sch.cache_read(sch.get_block("B"), 0, "local")
    assert block_names(sch.mod) == ["scope", "A", "A_local", "B", "A_global", "C"]
    assert readers_of(sch.mod, "A_global") == ["C"]
    assert readers_of(sch.mod, "A_local") == ["B"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


# --- cache_write ------------------------------------------------------------------------


def test_cache_write_under_scope(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_under_scope: the caches of
    ``A`` and ``B`` live in ``scope`` and are copied back there; the cache of the scope
    block's own write of ``A`` lives at the root, copied back before ``C``."""
    sch = Schedule(access_under_scope)
    sch.cache_write(sch.get_block("A"), 0, "local")
    sch.cache_write(sch.get_block("B"), 0, "global")
    assert [b.name for b in _block(sch.mod, "scope").alloc_buffers] == ["A_local", "B_global"]
    check_numbers(sch, rng)
    sch.cache_write(sch.get_block("scope"), 0, "global")
    assert_structural(sch, cache_write_under_scope)
    assert from_source(sch.mod.script()).same_as(sch.mod)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_under_scope_consumer_outside():
    """A reader of ``A`` outside the scope cannot read ``A``'s cache made inside it."""
    sch = Schedule(access_under_scope)
    err = raises_unchanged(
        sch, ConsumerOutsideScopeError,
        sch.cache_write, sch.get_block("A"), 0, "local", consumer_blocks=["C"],
    )
    assert err.scope == "scope"


def test_cache_write_under_scope_consumer_inside(rng):
    """``B`` reads the cache directly; the copy-back stays in the scope, right after
    ``A`` (nothing else in the scope reads ``A``), and ``C`` reads ``A``."""
    sch = Schedule(access_under_scope)
    sch.cache_write(sch.get_block("A"), 0, "local", consumer_blocks=["B"])
    assert block_names(sch.mod) == ["scope", "A", "A_local", "B", "C"]
    assert readers_of(sch.mod, "A_local") == ["A_local", "B"]
    assert readers_of(sch.mod, "A") == ["scope", "C"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_of_a_scope_that_updates_its_output(rng):
    """A scope block whose inner block updates ``B`` without an init reads values it did
    not write: its cache is filled from ``B`` first (``B_local_fill``). The scope of
    ``access_under_scope`` reads ``A`` only where it wrote it: no fill there."""
    sch = Schedule(accumulate_under_scope)
    sch.cache_write(sch.get_block("scope"), 0, "local")
    assert block_names(sch.mod) == ["B_local_fill", "scope", "acc", "B_local"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)
    sch = Schedule(access_under_scope)
    sch.cache_write(sch.get_block("scope"), 0, "global")
    assert "A_global_fill" not in block_names(sch.mod)
    check_numbers(sch, rng)


@pytest.mark.cuda
def test_cache_read_under_scope_on_the_gpu(rng):
    """The issue's GPU case (CUDA simulator in CI): with the scope's loops bound to blocks
    and threads, the local copy is a per-thread array of one tile, read by ``B`` only;
    ``C`` reads the global copy, made by its own kernel after the producer's."""
    sch = Schedule(access_under_scope)
    sch.cache_read(sch.get_block("B"), 0, "local")
    sch.cache_read(sch.get_block("C"), 0, "global")
    for block in ("scope", "A_global", "C"):
        outer, inner = sch.get_loops(sch.get_block(block))
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")
    source = build(sch, target="cuda").source
    kernels = source.split("@cuda.jit")[1:]
    assert len(kernels) == 3
    assert "A_local = cuda.local.array((4, 4), numba.float32)" in kernels[0]
    assert all("A_local" not in k for k in kernels[1:])
    assert "C[i_1, j_1] = A_global[i_1, j_1]" in kernels[2]
    compare_with_reference(sch, access_under_scope, rng, [("cuda", {})])


# --- nested blocks with predicates --------------------------------------------------------


@T.prim_func
def nested_block_predicate(A: T.Buffer((12, 24), "float32"), C: T.Buffer((10, 20), "float32")):
    for i, j in T.grid(12, 24):
        with T.block("compute"):
            vi, vj = T.axis.remap("SS", [i, j])
            with T.block("inner"):
                T.where(vi < 10 and vj < 20)
                C[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def sibling_predicates(A: T.Buffer((12, 24), "float32"), C: T.Buffer((12, 24), "float32")):
    for i, j in T.grid(12, 24):
        with T.block("compute"):
            vi, vj = T.axis.remap("SS", [i, j])
            with T.block("left"):
                T.where(vi < 8)
                C[vi, vj] = A[vi, vj] * T.float32(2)
            with T.block("top"):
                T.where(vj < 16)
                C[vi, vj] = A[vi, vj] * T.float32(3)


@T.prim_func
def guarded_rows(A: T.Buffer((12, 24), "float32"), C: T.Buffer((12, 24), "float32")):
    for i, j in T.grid(12, 24):
        with T.block("C"):
            T.where(i < 8)
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def elementwise_rows(A: T.Buffer((12, 24), "float32"), C: T.Buffer((12, 24), "float32")):
    for i, j in T.grid(12, 24):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


def test_cache_write_with_nested_block_predicate(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_with_nested_block_predicate:
    the inner block's guard only keeps the index inside ``C`` (10x20): every element of the
    copy-back was written, no fill (as TVM)."""
    sch = Schedule(nested_block_predicate)
    sch.cache_write(sch.get_block("compute"), 0, "local")
    assert block_names(sch.mod) == ["compute", "inner", "C_local"]
    assert [sch.get(lp).extent.value for lp in sch.get_loops(sch.get_block("C_local"))] == [
        10, 20
    ]
    assert readers_of(sch.mod, "A") == ["compute", "inner"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_read_with_nested_block_predicate(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_with_nested_block_predicate:
    the outer and the inner block read the copy. TVM copies the 10x20 the guard lets
    through; the copy here covers the declared region (12x24, all of ``A``)."""
    sch = Schedule(nested_block_predicate)
    sch.cache_read(sch.get_block("compute"), 0, "local")
    assert block_names(sch.mod) == ["A_local", "compute", "inner"]
    assert readers_of(sch.mod, "A_local") == ["compute", "inner"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_sibling_nested_block_predicates_use_union(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_sibling_nested_block_
    predicates_use_union: the cache covers the union of both writes (12x24). Neither block
    writes ``C[8:, 16:]``: the cache is filled from ``C`` first, so the copy-back keeps
    those elements (TVM copies them back unwritten)."""
    sch = Schedule(sibling_predicates)
    sch.cache_write(sch.get_block("compute"), 0, "local")
    assert [b.shape for b in sch.mod.root_block.alloc_buffers] == [(12, 24)]
    assert block_names(sch.mod) == ["C_local_fill", "compute", "left", "top", "C_local"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_read_sibling_nested_block_predicates_use_union(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_sibling_nested_block_
    predicates_use_union: the copy covers the union of both reads (all of ``A``)."""
    sch = Schedule(sibling_predicates)
    sch.cache_read(sch.get_block("compute"), 0, "local")
    assert [b.shape for b in sch.mod.root_block.alloc_buffers] == [(12, 24)]
    assert [sch.get(lp).extent.value for lp in sch.get_loops(sch.get_block("A_local"))] == [
        12, 24
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_of_a_guard_that_skips_rows(rng):
    """Not in TVM's file: ``T.where(i < 8)`` skips rows 8-11 of the block's domain; the
    copy-back covers the declared region, so the cache is filled first and rows 8-11 of
    ``C`` keep their values (TVM would copy them back unwritten)."""
    sch = Schedule(guarded_rows)
    sch.cache_write(sch.get_block("C"), 0, "local")
    assert block_names(sch.mod) == ["C_local_fill", "C", "C_local"]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_after_a_non_dividing_split(rng):
    """The guard a non-dividing split adds (``i_0 * 5 + i_1 < 12``) only skips iterations
    outside the block's domain: every element is written, no fill."""
    sch = Schedule(elementwise_rows)
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 5])
    sch.cache_write(sch.get_block("C"), 0, "local")
    assert block_names(sch.mod) == ["C", "C_local"]
    check_numbers(sch, rng)
