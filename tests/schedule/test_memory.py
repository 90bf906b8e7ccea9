"""cache_read, cache_write, set_scope: golden IR before/after, numerics on the numpy
reference and the Numba CPU backend, every error class, traces and legal_primitives."""

import os
from pathlib import Path

import numpy as np
import pytest
from schedule_checks import check_numbers, raises_unchanged
from schedule_examples import add_relu, matmul, row_sum, scale, two_stages

from workbench import T, from_source
from workbench.backends import build
from workbench.ir import Block, BlockRealize, For
from workbench.schedule import (
    BufferIndexError,
    CacheReadOfWrittenBufferError,
    InvalidArgumentError,
    ParameterScopeError,
    RemovedHandleError,
    Schedule,
    Trace,
    UnknownScopeError,
)
from workbench.schedule.tree import block_names, find_block

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


def check_golden(request, name: str, text: str) -> None:
    """``text`` must equal ``tests/golden/<name>.txt``; ``pytest --regen-golden`` (or
    ``WORKBENCH_REGEN_GOLDEN=1``) rewrites the file instead."""
    path = GOLDEN_DIR / f"{name}.txt"
    regen = request.config.getoption("--regen-golden", False) or os.environ.get(
        "WORKBENCH_REGEN_GOLDEN"
    )
    if regen:
        path.write_text(text + "\n")
        return
    assert path.exists(), f"golden file {path} is missing; run pytest --regen-golden"
    assert text + "\n" == path.read_text(), f"output differs from {path}"


def before_after(sch: Schedule) -> str:
    """The golden text: the function before, the trace, the function after; the printed
    function also parses back to itself."""
    assert from_source(sch.mod.script()) == sch.mod
    return "\n".join(
        [
            "# before",
            sch.func_before.script(),
            "",
            "# trace",
            str(sch.trace),
            "",
            "# after",
            sch.mod.script(),
        ]
    )


def assert_same(sch: Schedule, target: str, seed: int = 0) -> None:
    """The scheduled function equals the unscheduled one (numpy reference) on random data."""
    rng = np.random.default_rng(seed)
    func = sch.func_before
    arrays = [rng.standard_normal(b.shape).astype(b.dtype) + 0.5 for b in func.params]
    want = [a.copy() for a in arrays]
    build(func, target="numpy")(*want)
    got = [a.copy() for a in arrays]
    build(sch, target=target)(*got)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


TARGETS = ["numpy", "cpu"]


@T.prim_func
def accumulate(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = B[vi] + A[vi]


@T.prim_func
def nested(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i_0 in T.serial(4):
        with T.block("outer"):
            vi_o = T.axis.spatial(4, i_0)
            T.reads(A[vi_o * 4 : vi_o * 4 + 4, 0:16])
            T.writes(B[vi_o * 4 : vi_o * 4 + 4, 0:16])
            tile = T.alloc_buffer((4, 16), "float32", scope="local")
            for i_1, j in T.grid(4, 16):
                with T.block("load"):
                    vi, vj = T.axis.remap("SS", [i_1, j])
                    tile[vi, vj] = A[vi_o * 4 + vi, vj]
            for i_1, j in T.grid(4, 16):
                with T.block("store"):
                    vi, vj = T.axis.remap("SS", [i_1, j])
                    B[vi_o * 4 + vi, vj] = tile[vi, vj] * T.float32(3)


# --- golden IR ----------------------------------------------------------------------------


def matmul_cached() -> Schedule:
    sch = Schedule(matmul)
    block = sch.get_block("C")
    sch.cache_read(block, 1, "local")
    sch.cache_read(block, 2, "global")
    return sch


def test_cache_read_golden(request):
    sch = matmul_cached()
    check_golden(request, "memory_matmul_cache_read", before_after(sch))
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == ["A_local", "B_global"]
    assert [b.scope for b in sch.mod.root_block.alloc_buffers] == ["local", "global"]


def test_cache_write_golden(request):
    sch = Schedule(matmul)
    c_local = sch.cache_write(sch.get_block("C"), 0, "local")
    assert sch.name(c_local) == "C_local"
    check_golden(request, "memory_matmul_cache_write", before_after(sch))
    block = sch.get(sch.get_block("C"))
    # the init writes the cache, the update reads and writes it
    assert "C_local[vi, vj] = T.float32(0)" in sch.mod.script()
    assert [r.buffer.name for r in block.reads] == ["C_local", "A", "B"]
    assert [r.buffer.name for r in block.writes] == ["C_local"]


def test_copies_placed_inside_a_shared_loop(request):
    # B and C share loop i: the copies go between them, over one row per iteration
    sch = Schedule(two_stages)
    sch.cache_read(sch.get_block("C"), 0, "local")
    sch.cache_write(sch.get_block("B"), 0, "shared")
    check_golden(request, "memory_two_stages", before_after(sch))
    loop_i = sch.mod.root_block.body
    assert isinstance(loop_i, For) and loop_i.loop_var.name == "i"
    order = [
        s.body.body.block.name if isinstance(s.body, For) else s.body.block.name
        for s in loop_i.body.stmts
    ]
    assert order == ["B", "B_shared", "B_local", "C"]


def test_set_scope_changes_every_occurrence():
    sch = Schedule(add_relu)
    sch.set_scope(sch.get_block("T_add"), 0, "local")
    text = sch.mod.script()
    assert 'T_add = T.alloc_buffer((48,), "float32", scope="local")' in text
    buffers = {
        r.buffer
        for name in ("T_add", "C")
        for r in (lambda b: b.reads + b.writes)(sch.get(sch.get_block(name)))
    }
    assert {b.scope for b in buffers if b.name == "T_add"} == {"local"}
    before = sch.mod
    sch.set_scope(sch.get_block("T_add"), 0, "local")  # same scope: unchanged
    assert sch.mod is before


def test_copy_block_regions_use_its_own_iter_vars():
    sch = Schedule(matmul)
    a_local = sch.cache_read(sch.get_block("C"), 1, "shared")
    block = sch.get(a_local)
    (v0, v1) = (iv.var for iv in block.iter_vars)
    assert [iv.kind.value for iv in block.iter_vars] == ["S", "S"]
    (read,), (write,) = block.reads, block.writes
    assert read.buffer.name == "A" and write.buffer.name == "A_shared"
    assert [(r.min, r.extent.value) for r in read.region] == [(v0, 1), (v1, 1)]
    assert [(r.min, r.extent.value) for r in write.region] == [(v0, 1), (v1, 1)]
    assert sch.get_loops(a_local) and [sch.name(x) for x in sch.get_loops(a_local)] == [
        "ax0",
        "ax1",
    ]


def test_guarded_consumer_copies_only_the_buffer():
    # split by a non-dividing factor: the consumer's iteration domain (100) bounds the copy
    sch = Schedule(scale)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 32])
    a_local = sch.cache_read(sch.get_block("B"), 0, "local")
    assert [sch.get(x).extent.value for x in sch.get_loops(a_local)] == [100]
    realize = find_block(sch.mod, sch.name(a_local), "test")[1][-1]
    assert isinstance(realize, BlockRealize) and realize.predicate.value == 1


def test_fresh_names_when_cached_twice():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    first = sch.cache_read(block, 1, "local")
    second = sch.cache_read(block, 1, "local")  # caches A_local again
    assert (sch.name(first), sch.name(second)) == ("A_local", "A_local_local")
    names = [b.name for b in sch.mod.root_block.alloc_buffers]
    assert names == ["A_local", "A_local_local"]


def test_cache_lives_in_the_enclosing_block(rng):
    """As TVM: a cache of a block under another block is allocated in that block (its
    scope) and copied there; the enclosing block still reads A and writes B."""
    sch = Schedule(nested)
    sch.cache_read(sch.get_block("load"), 0, "shared")
    sch.cache_write(sch.get_block("store"), 0, "local")
    outer = sch.get(sch.get_block("outer"))
    assert [r.buffer.name for r in outer.reads] == ["A"]
    assert [r.buffer.name for r in outer.writes] == ["B"]
    assert [b.name for b in outer.alloc_buffers] == ["tile", "A_shared", "B_local"]
    assert sch.mod.root_block.alloc_buffers == ()
    assert block_names(sch.mod) == [
        "outer", "A_shared", "load", "store", "B_local"
    ]
    check_numbers(sch, rng)


# --- numerics -----------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_all_caches_tiled(target):
    sch = matmul_cached()
    block = sch.get_block("C")
    sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    assert_same(sch, target)


@pytest.mark.parametrize("target", TARGETS)
def test_two_stages_caches(target):
    sch = Schedule(two_stages)
    sch.cache_read(sch.get_block("C"), 0, "local")
    sch.cache_write(sch.get_block("B"), 0, "local")
    assert_same(sch, target)


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_cache_write_and_set_scope(target):
    sch = Schedule(row_sum)
    sch.cache_write(sch.get_block("B"), 0, "local")
    sch.cache_read(sch.get_block("B"), 1, "shared")
    assert_same(sch, target)
    sch = Schedule(add_relu)
    sch.set_scope(sch.get_block("T_add"), 0, "local")
    sch.cache_read(sch.get_block("C"), 0, "shared")
    sch.cache_write(sch.get_block("T_add"), 0, "global")
    assert_same(sch, target)


@pytest.mark.parametrize("target", TARGETS)
def test_nested_blocks_caches(target):
    sch = Schedule(nested)
    sch.cache_read(sch.get_block("load"), 0, "shared")
    sch.cache_write(sch.get_block("store"), 0, "local")
    assert_same(sch, target)


@pytest.mark.parametrize("target", TARGETS)
def test_cache_read_after_guarded_split(target):
    sch = Schedule(scale)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 32])
    sch.cache_read(sch.get_block("B"), 0, "local")
    sch.cache_write(sch.get_block("B"), 0, "local")
    assert_same(sch, target)


# --- errors -------------------------------------------------------------------------------


def test_buffer_index_out_of_range_lists_the_buffers():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    err = raises_unchanged(sch, BufferIndexError, sch.cache_read, block, 3, "local")
    assert err.primitive == "cache_read" and err.name == "C"
    assert err.message == "block 'C' has no read buffer 3"
    assert err.detail == "it reads 3 buffers: 0: C, 1: A, 2: B"
    assert err.suggestion == "pass an index from 0 to 2"
    assert err.buffers == ["C", "A", "B"]
    assert "# <-- block 'C' has no read buffer 3" in str(err)
    assert isinstance(err.node, Block) and err.node.name == "C"
    err = raises_unchanged(sch, BufferIndexError, sch.cache_write, block, 1, "local")
    assert err.detail == "it writes 1 buffer: 0: C"
    raises_unchanged(sch, BufferIndexError, sch.set_scope, block, -1, "local")


def test_bad_index_type():
    sch = Schedule(matmul)
    err = raises_unchanged(
        sch, InvalidArgumentError, sch.cache_read, sch.get_block("C"), "1", "local"
    )
    assert err.argument == "read_buffer_index"


@pytest.mark.parametrize("primitive", ["cache_read", "cache_write", "set_scope"])
def test_unknown_scope(primitive):
    sch = Schedule(add_relu)
    block = sch.get_block("T_add")
    err = raises_unchanged(sch, UnknownScopeError, getattr(sch, primitive), block, 0, "register")
    assert err.primitive == primitive
    assert err.message == "unknown storage scope 'register'"
    assert err.detail == "the valid scopes are 'global', 'shared', 'local'"


def test_set_scope_of_a_parameter():
    sch = Schedule(matmul)
    err = raises_unchanged(sch, ParameterScopeError, sch.set_scope, sch.get_block("C"), 0, "local")
    assert err.message == "buffer 'C' is a parameter of matmul"
    assert err.buffer == "C"
    assert "sch.cache_write" in err.suggestion


def test_cache_read_of_a_buffer_the_block_writes():
    sch = Schedule(matmul)
    err = raises_unchanged(
        sch, CacheReadOfWrittenBufferError, sch.cache_read, sch.get_block("C"), 0, "local"
    )
    assert err.message == "block 'C' writes 'C', the buffer it would read from a cache"
    assert err.suggestion.startswith("use cache_write on 'C'")


def test_cache_write_of_a_buffer_read_without_init(rng):
    """An update without init: the cache is filled from the buffer first (TVM's
    cache_inplace pattern), then copied back."""
    sch = Schedule(accumulate)
    copy = sch.cache_write(sch.get_block("B"), 0, "local")
    assert sch.name(copy) == "B_local"
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == ["B_local"]
    text = sch.mod.script()
    assert text.index('T.block("B_local_fill")') < text.index('T.block("B")')
    assert text.index('T.block("B")') < text.index('T.block("B_local")')
    a = rng.standard_normal(8).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    want = b + a
    for target in ("numpy", "cpu"):
        got = b.copy()
        build(sch, target=target)(a.copy(), got)
        np.testing.assert_allclose(got, want, rtol=1e-6)


# --- traces and legality ------------------------------------------------------------------


def test_trace_print_and_json_replay():
    sch = matmul_cached()
    sch.cache_write(sch.get_block("C"), 0, "local")
    sch2 = Schedule(add_relu)
    sch2.set_scope(sch2.get_block("T_add"), 0, "shared")
    assert str(sch.trace) == "\n".join(
        [
            'b0 = sch.get_block("C")',
            'b1 = sch.cache_read(b0, 1, "local")',
            'b2 = sch.cache_read(b0, 2, "global")',
            'b3 = sch.get_block("C")',
            'b4 = sch.cache_write(b3, 0, "local")',
        ]
    )
    assert str(sch2.trace).splitlines()[-1] == 'sch.set_scope(b0, 0, "shared")'
    for s, func in ((sch, matmul), (sch2, add_relu)):
        again = Trace.from_json(s.trace.to_json()).apply(func)
        assert again.mod == s.mod and again.trace == s.trace


def test_undo_removes_the_copy_block():
    sch = Schedule(matmul)
    a_local = sch.cache_read(sch.get_block("C"), 1, "local")
    sch.undo()
    assert sch.mod == matmul
    with pytest.raises(RemovedHandleError):
        sch.name(a_local)


def test_legal_primitives_rows():
    sch = Schedule(matmul)
    table = sch.legal_primitives(sch.get_block("C"))
    assert table["cache_read"].legal and table["cache_write"].legal
    assert not table["set_scope"].legal
    assert table["set_scope"].error == "ParameterScopeError"
    assert table["set_scope"].reason == "buffer 'C' is a parameter of matmul"
    sch = Schedule(add_relu)
    table = sch.legal_primitives(sch.get_block("T_add"))
    assert table["set_scope"].legal
    sch = Schedule(accumulate)
    table = sch.legal_primitives(sch.get_block("B"))
    assert table["cache_write"].legal
    assert table["cache_read"].legal  # the probe picks A, not B (which it writes)
    root = sch.get_block("root")
    table = sch.legal_primitives(root)
    assert table["cache_read"].error == "BufferIndexError"
    assert table["cache_read"].reason == "block 'root' has no read buffer 0"


# --- with the compute-location primitives -------------------------------------------------


def packed_tiled_matmul() -> Schedule:
    """The bench's recipe at 16x16: B packed into panels, A copied per k step, C accumulated
    in a local tile."""
    sch = Schedule(matmul)
    block = sch.get_block("C")
    b_global = sch.cache_read(block, 2, "global")
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 4, k, j % 4))
    a_local = sch.cache_read(block, 1, "local")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 4])
    sch.reorder(io, jo, k, ii, ji)
    sch.compute_at(a_local, k)
    sch.reverse_compute_at(c_local, jo)
    return sch


@pytest.mark.parametrize("target", TARGETS)
def test_caches_moved_by_compute_at(target):
    sch = packed_tiled_matmul()
    a_local = sch.get(sch.get_block("A_local"))
    assert [r.buffer.name for r in a_local.reads] == ["A"]
    assert [sch.name(x) for x in sch.get_loops(sch.get_block("A_local"))][:3] == [
        "i_0",
        "j_0",
        "k",
    ]
    assert_same(sch, target)
    again = Trace.from_json(sch.trace.to_json()).apply(matmul)
    assert again.mod == sch.mod
