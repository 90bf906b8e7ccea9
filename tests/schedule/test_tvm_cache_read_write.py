"""TVM's cache_read/cache_write tests
(tests/python/s_tir/schedule/test_tir_schedule_cache_read_write.py), re-expressed in the DSL
with smaller shapes and with parameters for the buffers TVM's versions allocate (so that
the numbers can be checked).

Our copy blocks are named after the cache buffer (``A_global``) with loops ``ax0...`` and
iteration variables ``v0...``; the expected functions below use those names. Skipped
cases (reindex_cache_*, cache_inplace, opaque/extern access, symbolic and int64 shapes) and
differences are listed in docs/decisions.d/loopsarg.md.
"""

from schedule_checks import (
    assert_structural,
    check_numbers,
    raises_unchanged,
    verify_trace_roundtrip,
)
from schedule_examples import elementwise

from workbench import T
from workbench.ir import Block, For
from workbench.schedule import (
    BufferIndexError,
    CacheReadOfWrittenBufferError,
    NotAConsumerError,
    Schedule,
    UnknownScopeError,
)
from workbench.schedule.tree import walk


def summary(func) -> list[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """(block, buffers read, buffers written, enclosing loops) in program order."""
    rows = []
    root = func.root_block
    for stmt, ancestors in walk(func.body):
        if isinstance(stmt, Block) and stmt is not root:
            loops = tuple(a.loop_var.name for a in ancestors if isinstance(a, For))
            reads = tuple(r.buffer.name for r in stmt.reads)
            writes = tuple(w.buffer.name for w in stmt.writes)
            rows.append((stmt.name, reads, writes, loops))
    return rows


@T.prim_func
def cache_read_elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    A_global = T.alloc_buffer((16, 16), "float32")
    B_local = T.alloc_buffer((16, 16), "float32", scope="local")
    for ax0, ax1 in T.grid(16, 16):
        with T.block("A_global"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_global[v0, v1] = A[v0, v1]
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_global[vi, vj] * T.float32(2)
    for ax0_1, ax1_1 in T.grid(16, 16):
        with T.block("B_local"):
            v0_1, v1_1 = T.axis.remap("SS", [ax0_1, ax1_1])
            B_local[v0_1, v1_1] = B[v0_1, v1_1]
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi, vj] = B_local[vi, vj] + T.float32(1)


@T.prim_func
def cache_write_elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    B_local = T.alloc_buffer((16, 16), "float32", scope="local")
    C_global = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_local[vi, vj] = A[vi, vj] * T.float32(2)
    for ax0, ax1 in T.grid(16, 16):
        with T.block("B_local"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B[v0, v1] = B_local[v0, v1]
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C_global[vi, vj] = B[vi, vj] + T.float32(1)
    for ax0_1, ax1_1 in T.grid(16, 16):
        with T.block("C_global"):
            v0_1, v1_1 = T.axis.remap("SS", [ax0_1, ax1_1])
            C[v0_1, v1_1] = C_global[v0_1, v1_1]


@T.prim_func
def func_multi_consumer(
    X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")
):
    A = T.alloc_buffer((128,), "float32")
    for i in T.serial(8):
        for j in T.serial(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j_1)
                B[vi] = A[vi] + T.float32(1)
    for i_1 in T.serial(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i_1)
            C[vi] = A[vi]


@T.prim_func
def cache_read_multi_consumer(
    X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")
):
    A = T.alloc_buffer((128,), "float32")
    A_global = T.alloc_buffer((128,), "float32")
    for i in T.serial(8):
        for j in T.serial(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for ax0 in T.serial(16):
            with T.block("A_global"):
                v0 = T.axis.spatial(128, i * 16 + ax0)
                A_global[v0] = A[v0]
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j_1)
                B[vi] = A_global[vi] + T.float32(1)
    for i_1 in T.serial(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i_1)
            C[vi] = A_global[vi]


@T.prim_func
def func_multi_producer(X: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    A = T.alloc_buffer((16,), "float32")
    for i in T.serial(16):
        with T.block("A0"):
            vi = T.axis.spatial(16, i)
            A[vi] = X[vi]
    for i_1 in T.serial(16):
        with T.block("A1"):
            vi = T.axis.spatial(16, i_1)
            A[vi] = X[vi] * T.float32(2)
    for i_2 in T.serial(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i_2)
            B[vi] = A[vi]


@T.prim_func
def func_with_block_predicate(X: T.Buffer((120,), "float32"), B: T.Buffer((120,), "float32")):
    A = T.alloc_buffer((120,), "float32")
    for i, j in T.grid(16, 8):
        with T.block("producer"):
            T.where(i * 8 + j < 120)
            ax = T.axis.spatial(120, i * 8 + j)
            A[ax] = X[ax]
    for i_1, j_1 in T.grid(16, 8):
        with T.block("consumer"):
            T.where(i_1 * 8 + j_1 < 120)
            ax = T.axis.spatial(120, i_1 * 8 + j_1)
            B[ax] = A[ax] + T.float32(1)


@T.prim_func
def func_nested_seq(
    X: T.Buffer((32, 32), "float32"),
    B: T.Buffer((32, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
):
    A = T.alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = X[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(4, 4):
        for x, y in T.grid(8, 8):
            with T.block("B0"):
                vi = T.axis.spatial(32, i_1 * 8 + x)
                vj = T.axis.spatial(32, j_1 * 8 + y)
                B[vi, vj] = T.float32(1)
        for x_1, y_1 in T.grid(8, 8):
            with T.block("B1"):
                vi = T.axis.spatial(32, i_1 * 8 + x_1)
                vj = T.axis.spatial(32, j_1 * 8 + y_1)
                B[vi, vj] = A[vi, vj] + B[vi, vj]
    for i_2, j_2 in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_2, j_2])
            C[vi, vj] = A[vi, vj] * T.float32(2)


# --- cache_read -------------------------------------------------------------------------


def test_cache_read_elementwise(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_elementwise"""
    sch = Schedule(elementwise)
    block_b, block_c = sch.get_block("B"), sch.get_block("C")
    cached_a = sch.cache_read(block_b, 0, "global")
    cached_b = sch.cache_read(block_c, 0, "local")
    assert sch.name(cached_a) == "A_global" and sch.name(cached_b) == "B_local"
    assert sch.name(block_b) == "B" and sch.name(block_c) == "C"
    assert_structural(sch, cache_read_elementwise)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_read_location(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_location: by default every
    consumer reads the cache; consumer_blocks picks them."""
    sch = Schedule(func_multi_consumer)
    sch.cache_read(sch.get_block("B"), 0, "global")
    assert_structural(sch, cache_read_multi_consumer)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)

    # only C reads the cache: the copy goes right before C, after the loop holding A and B
    sch = Schedule(func_multi_consumer)
    sch.cache_read(sch.get_block("B"), 0, "global", consumer_blocks=[sch.get_block("C")])
    assert summary(sch.mod) == [
        ("A", ("X",), ("A",), ("i", "j")),
        ("B", ("A",), ("B",), ("i", "j_1")),
        ("A_global", ("A",), ("A_global",), ("ax0",)),
        ("C", ("A_global",), ("C",), ("i_1",)),
    ]
    assert 'consumer_blocks=["C"]' in str(sch.trace)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))

    # listing both consumers is the default
    sch = Schedule(func_multi_consumer)
    sch.cache_read(sch.get_block("B"), 0, "global", consumer_blocks=["B", "C"])
    assert_structural(sch, cache_read_multi_consumer)
    verify_trace_roundtrip(sch)


def test_continuous_cache_read(rng):
    """test_tir_schedule_cache_read_write.py::test_continuous_cache_read"""
    sch = Schedule(elementwise)
    block_c = sch.get_block("C")
    sch.cache_read(block_c, 0, "shared")
    sch.cache_read(block_c, 0, "local")
    assert [row[:3] for row in summary(sch.mod)] == [
        ("B", ("A",), ("B",)),
        ("B_shared", ("B",), ("B_shared",)),
        ("B_shared_local", ("B_shared",), ("B_shared_local",)),  # TVM: B_local
        ("C", ("B_shared_local",), ("C",)),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_cache_read_with_block_predicate(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_with_block_predicate"""
    sch = Schedule(func_with_block_predicate)
    sch.cache_read(sch.get_block("consumer"), 0, "shared")
    assert summary(sch.mod) == [
        ("producer", ("X",), ("A",), ("i", "j")),
        ("A_shared", ("A",), ("A_shared",), ("ax0",)),
        ("consumer", ("A_shared",), ("B",), ("i_1", "j_1")),
    ]
    copy_loop = sch.get(sch.get_loops(sch.get_block("A_shared"))[0])
    assert copy_loop.extent.value == 120  # the guarded region, as TVM
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_read_nested_seq(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_nested_seq"""
    sch = Schedule(func_nested_seq)
    block_c = sch.get_block("C")
    sch.cache_read(block_c, 0, "global", consumer_blocks=[block_c])
    assert [row[:3] for row in summary(sch.mod)] == [
        ("A", ("X",), ("A",)),
        ("B0", (), ("B",)),
        ("B1", ("A", "B"), ("B",)),
        ("A_global", ("A",), ("A_global",)),
        ("C", ("A_global",), ("C",)),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_cache_read_multi_producer(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_read_fail_multi_producer: TVM
    refuses (not a stage pipeline); the copy goes after the last writer (difference)."""
    sch = Schedule(func_multi_producer)
    sch.cache_read(sch.get_block("B"), 0, "global")
    assert [row[0] for row in summary(sch.mod)] == ["A0", "A1", "A_global", "B"]
    check_numbers(sch, rng, targets=("numpy",))


def test_cache_read_fail_index_out_of_bound():
    """test_tir_schedule_cache_read_write.py::test_cache_read_fail_index_out_of_bound"""
    sch = Schedule(elementwise)
    raises_unchanged(sch, BufferIndexError, sch.cache_read, sch.get_block("B"), 1, "global")


def test_cache_read_fail_invalid_storage_scope():
    """test_tir_schedule_cache_read_write.py::test_cache_read_fail_invalid_storage_scope"""
    sch = Schedule(elementwise)
    raises_unchanged(sch, UnknownScopeError, sch.cache_read, sch.get_block("B"), 0, "test_scope")


def test_cache_read_consumer_blocks_errors():
    """Not in TVM's file: a listed block that does not read the buffer, or writes it."""
    sch = Schedule(func_multi_consumer)
    err = raises_unchanged(
        sch, NotAConsumerError, sch.cache_read, sch.get_block("B"), 0, "global", consumer_blocks=["A"]
    )
    assert err.buffer == "A"
    sch = Schedule(func_nested_seq)
    raises_unchanged(
        sch, CacheReadOfWrittenBufferError,
        sch.cache_read,
        sch.get_block("B1"),
        1,
        "global",
        consumer_blocks=["B1"],
    )


# --- cache_write ------------------------------------------------------------------------


def test_cache_write_elementwise(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_elementwise"""
    sch = Schedule(elementwise)
    block_b, block_c = sch.get_block("B"), sch.get_block("C")
    cached_b = sch.cache_write(block_b, 0, "local")
    cached_c = sch.cache_write(block_c, 0, "global")
    assert sch.name(cached_b) == "B_local" and sch.name(cached_c) == "C_global"
    assert_structural(sch, cache_write_elementwise)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_cache_write_location(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_location"""
    # default: every reader reads the original, right after A writes it
    sch = Schedule(func_multi_consumer)
    sch.cache_write(sch.get_block("A"), 0, "global")
    assert summary(sch.mod) == [
        ("A", ("X",), ("A_global",), ("i", "j")),
        ("A_global", ("A_global",), ("A",), ("i", "ax0")),
        ("B", ("A",), ("B",), ("i", "j_1")),
        ("C", ("A",), ("C",), ("i_1",)),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)

    # B reads the cache, C the original: the copy-back goes after the loop holding B
    sch = Schedule(func_multi_consumer)
    sch.cache_write(sch.get_block("A"), 0, "global", consumer_blocks=[sch.get_block("B")])
    assert summary(sch.mod) == [
        ("A", ("X",), ("A_global",), ("i", "j")),
        ("B", ("A_global",), ("B",), ("i", "j_1")),
        ("A_global", ("A_global",), ("A",), ("ax0",)),
        ("C", ("A",), ("C",), ("i_1",)),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))

    # C reads the cache, B the original: the copy-back stays inside the loop, before B
    sch = Schedule(func_multi_consumer)
    sch.cache_write(sch.get_block("A"), 0, "global", consumer_blocks=["C"])
    assert summary(sch.mod) == [
        ("A", ("X",), ("A_global",), ("i", "j")),
        ("A_global", ("A_global",), ("A",), ("i", "ax0")),
        ("B", ("A",), ("B",), ("i", "j_1")),
        ("C", ("A_global",), ("C",), ("i_1",)),
    ]
    check_numbers(sch, rng, targets=("numpy",))

    # both read the cache
    sch = Schedule(func_multi_consumer)
    sch.cache_write(sch.get_block("A"), 0, "global", consumer_blocks=["B", "C"])
    rows = summary(sch.mod)
    assert ("B", ("A_global",), ("B",), ("i", "j_1")) in rows
    assert ("C", ("A_global",), ("C",), ("i_1",)) in rows
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_continuous_cache_write(rng):
    """test_tir_schedule_cache_read_write.py::test_continuous_cache_write"""
    sch = Schedule(elementwise)
    block_b = sch.get_block("B")
    sch.cache_write(block_b, 0, "shared")
    sch.cache_write(block_b, 0, "local")
    assert [row[:3] for row in summary(sch.mod)] == [
        ("B", ("A",), ("B_shared_local",)),
        ("B_shared_local", ("B_shared_local",), ("B_shared",)),
        ("B_shared", ("B_shared",), ("B",)),
        ("C", ("B",), ("C",)),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_cache_write_with_block_predicate(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_with_block_predicate"""
    sch = Schedule(func_with_block_predicate)
    sch.cache_write(sch.get_block("producer"), 0, "shared")
    assert summary(sch.mod) == [
        ("producer", ("X",), ("A_shared",), ("i", "j")),
        ("A_shared", ("A_shared",), ("A",), ("ax0",)),
        ("consumer", ("A",), ("B",), ("i_1", "j_1")),
    ]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))
    sch = Schedule(func_with_block_predicate)
    sch.cache_write(sch.get_block("consumer"), 0, "shared")
    assert [row[0] for row in summary(sch.mod)] == ["producer", "consumer", "B_shared"]
    check_numbers(sch, rng)


def test_cache_write_multi_producer(rng):
    """test_tir_schedule_cache_read_write.py::test_cache_write_fail_multi_producer: TVM
    refuses; here each cached write is copied back before the next writer (difference)."""
    sch = Schedule(func_multi_producer)
    sch.cache_write(sch.get_block("A0"), 0, "global")
    assert [row[0] for row in summary(sch.mod)] == ["A0", "A_global", "A1", "B"]
    check_numbers(sch, rng, targets=("numpy",))


def test_cache_write_fail_index_out_of_bound():
    """test_tir_schedule_cache_read_write.py::test_cache_write_fail_index_out_of_bound"""
    sch = Schedule(elementwise)
    raises_unchanged(sch, BufferIndexError, sch.cache_write, sch.get_block("B"), 1, "global")


def test_cache_write_fail_invalid_storage_scope():
    """test_tir_schedule_cache_read_write.py::test_cache_write_fail_invalid_storage_scope"""
    sch = Schedule(elementwise)
    raises_unchanged(sch, UnknownScopeError, sch.cache_write, sch.get_block("B"), 0, "test_scope")


def test_cache_write_of_a_block_reading_its_output(rng):
    """The issue's case (TVM's cache_inplace pattern through cache_write): ``B1`` reads and
    writes ``B`` without an init, so the cache is filled first and copied back after."""
    sch = Schedule(func_nested_seq)
    sch.cache_write(sch.get_block("B1"), 0, "local")
    rows = summary(sch.mod)
    names = [row[0] for row in rows]
    assert names == ["A", "B0", "B_local_fill", "B1", "B_local", "C"]
    assert rows[2][1:3] == (("B",), ("B_local",))
    assert rows[3][1:3] == (("A", "B_local"), ("B_local",))
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)
