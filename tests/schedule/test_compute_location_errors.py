"""Every error of the compute location primitives: raised exactly, with its message, and
the schedule left unchanged; and legal_primitives' rows for the four primitives."""

import numpy as np
from schedule_checks import raises_unchanged
from schedule_examples import add_relu, matmul, two_stages
from test_compute_location import assert_computes_same, matmul_relu

import workbench as wb
from workbench import T, ops
from workbench.ir import (
    TRUE,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    PrimFunc,
    Range,
    Var,
    seq,
)
from workbench.ir.regions import block_access_regions
from workbench.schedule import (
    AccumulationRecomputedError,
    BlockInInitError,
    ConsumerDomainNotCoveredError,
    DependenceViolationError,
    InlineReductionError,
    LoopContainsBlockError,
    NoConsumersError,
    NoProducersError,
    NotAncestorOfConsumerError,
    NotAncestorOfProducerError,
    NotInSameScopeError,
    NotSingleStoreError,
    OutputBlockError,
    PartialReductionError,
    PredicateNotMovableError,
    ProducerAfterConsumerError,
    ProducerHasOtherConsumersError,
    ReadNotBijectiveError,
    ReductionProducerError,
    RegionNotCoveredError,
    RootBlockError,
    Schedule,
    SelfReadError,
    SeveralProducersError,
    SeveralReadIndicesError,
    StoreIndicesNotIterVarsError,
    UnboundedRegionError,
)

# ---------------------------------------------------------------------------------------
# Functions that break one rule each
# ---------------------------------------------------------------------------------------


@T.prim_func
def fanout(
    A: T.Buffer((8,), "float32"), C1: T.Buffer((8,), "float32"), C2: T.Buffer((8,), "float32")
):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("C1"):
            vi1 = T.axis.spatial(8, i1)
            C1[vi1] = T_a[vi1] * T.float32(2)
    for i2 in T.serial(8):
        with T.block("C2"):
            vi2 = T.axis.spatial(8, i2)
            C2[vi2] = T_a[vi2] * T.float32(3)


@T.prim_func
def diamond(A: T.Buffer((8,), "float32"), Z: T.Buffer((8,), "float32")):
    X = T.alloc_buffer((8,), "float32")
    Y = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            X[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("Y"):
            vi1 = T.axis.spatial(8, i1)
            Y[vi1] = A[vi1] * T.float32(2)
    for i2 in T.serial(8):
        with T.block("Z"):
            vi2 = T.axis.spatial(8, i2)
            Z[vi2] = X[vi2] + Y[vi2]


@T.prim_func
def read_before_write(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = T_a[vi] * T.float32(2)
    for i1 in T.serial(8):
        with T.block("T_a"):
            vi1 = T.axis.spatial(8, i1)
            T_a[vi1] = A[vi1] + T.float32(1)


@T.prim_func
def overwritten_input(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T0 = T.alloc_buffer((8,), "float32")
    T1 = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T0"):
            vi = T.axis.spatial(8, i)
            T0[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("T1"):
            vi1 = T.axis.spatial(8, i1)
            T1[vi1] = T0[vi1] * T.float32(2)
    for i2 in T.serial(8):
        with T.block("T0_again"):
            vi2 = T.axis.spatial(8, i2)
            T0[vi2] = A[vi2] * T.float32(3)
    for i3 in T.serial(8):
        with T.block("C"):
            vi3 = T.axis.spatial(8, i3)
            C[vi3] = T1[vi3] + T0[vi3]


@T.prim_func
def dead_block(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = A[vi1] * T.float32(2)


@T.prim_func
def gather(
    A: T.Buffer((8,), "float32"), idx: T.Buffer((8,), "int32"), C: T.Buffer((8,), "float32")
):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[idx[vi1]]


@T.prim_func
def stencil(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((10,), "float32")
    for i in T.serial(10):
        with T.block("T_a"):
            vi = T.axis.spatial(10, i)
            T_a[vi] = A[vi] * T.float32(2)
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[vi1] + T_a[vi1 + 1] + T_a[vi1 + 2]


@T.prim_func
def broadcast(A: T.Buffer((8,), "float32"), C: T.Buffer((8, 4), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = A[vi] * T.float32(2)
    for i1, j1 in T.grid(8, 4):
        with T.block("C"):
            vi1, vj1 = T.axis.remap("SS", [i1, j1])
            C[vi1, vj1] = T_a[vi1] + T.float32(1)


@T.prim_func
def two_stores(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    T_b = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_ab"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = A[vi] + T.float32(1)
            T_b[vi] = A[vi] + T.float32(2)
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[vi1] * T_b[vi1]


@T.prim_func
def reversed_store(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[7 - vi] = A[vi]
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[vi1] * T.float32(2)


@T.prim_func
def in_place(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T_a[vi] = T_a[vi] + A[vi]
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[vi1] * T.float32(2)


@T.prim_func
def masked(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T_a = T.alloc_buffer((8,), "float32")
    for i, j in T.grid(8, 2):
        with T.block("T_a"):
            vi = T.axis.spatial(8, i)
            T.where(j < 1)
            T_a[vi] = A[vi] + T.float32(1)
    for i1 in T.serial(8):
        with T.block("C"):
            vi1 = T.axis.spatial(8, i1)
            C[vi1] = T_a[vi1] * T.float32(2)


@T.prim_func
def scoped(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    T_a = T.alloc_buffer((16,), "float32")
    for i in T.serial(16):
        with T.block("T_a"):
            vi = T.axis.spatial(16, i)
            T_a[vi] = A[vi] + T.float32(1)
    for i_0 in T.serial(4):
        with T.block("outer"):
            vo = T.axis.spatial(4, i_0)
            for i_1 in T.serial(4):
                with T.block("inner"):
                    vi_1 = T.axis.spatial(4, i_1)
                    B[vo * 4 + vi_1] = T_a[vo * 4 + vi_1] * T.float32(2)


def block_in_init() -> PrimFunc:
    """A reduction whose init is a block of its own (hand-built)."""
    A, B = Buffer("A", (4, 4)), Buffer("B", (4,))
    i, k, vi, vk, vz = Var("i"), Var("k"), Var("vi"), Var("vk"), Var("vz")
    zero_store = BufferStore(B, ops_zero(), (vz,))
    zero = Block(
        "zero",
        (IterVar(vz, Range.from_extent(4)),),
        (),
        block_access_regions(zero_store)[1],
        zero_store,
    )
    update = BufferStore(B, BufferLoad(B, (vi,)) + BufferLoad(A, (vi, vk)), (vi,))
    reads, writes = block_access_regions(update)
    body = Block(
        "B",
        (IterVar(vi, Range.from_extent(4)), IterVar(vk, Range.from_extent(4), IterKind.REDUCE)),
        reads,
        writes,
        update,
        init=BlockRealize((vi,), TRUE, zero),
    )
    nest = For(
        i,
        IntImm(0),
        IntImm(4),
        ForKind.SERIAL,
        For(k, IntImm(0), IntImm(4), ForKind.SERIAL, BlockRealize((i, k), TRUE, body)),
    )
    root = Block("root", (), (), (), seq(nest))
    return PrimFunc("block_in_init", (A, B), BlockRealize((), TRUE, root))


def ops_zero():
    from workbench.ir import FloatImm

    return FloatImm(0.0)


def loops_of(sch, block):
    return sch.get_loops(sch.get_block(block))


# ---------------------------------------------------------------------------------------
# Where the block is
# ---------------------------------------------------------------------------------------


def test_root_block():
    sch = Schedule(add_relu)
    root = sch.get_block("root")
    for call in (sch.compute_inline, sch.reverse_compute_inline):
        err = raises_unchanged(sch, RootBlockError, call, root)
        assert err.message == "the root block cannot be moved or inlined"
    (i1,) = loops_of(sch, "C")
    err = raises_unchanged(sch, RootBlockError, sch.compute_at, root, i1)
    assert err.primitive == "compute_at" and err.name == "root"


def test_block_inside_an_init():
    sch = Schedule(block_in_init())
    err = raises_unchanged(sch, BlockInInitError, sch.compute_inline, sch.get_block("zero"))
    assert err.message == "block 'zero' is inside the init of block 'B'"
    assert "decompose_reduction" in err.suggestion
    assert "# <-- block 'zero' is inside the init of block 'B'" in str(err)


def test_loop_in_another_scope():
    sch = Schedule(scoped)
    (i_1,) = loops_of(sch, "inner")
    err = raises_unchanged(sch, NotInSameScopeError, sch.compute_at, sch.get_block("T_a"), i_1)
    assert err.message == "loop 'i_1' and block 'T_a' are not in the same scope"
    assert err.node.loop_var.name == "i_1"


def test_loop_already_around_the_block():
    sch = Schedule(add_relu)
    (i0,) = loops_of(sch, "T_add")
    err = raises_unchanged(sch, LoopContainsBlockError, sch.compute_at, sch.get_block("T_add"), i0)
    assert err.message == "loop 'i0' is already around block 'T_add'"
    assert "# <-- loop 'i0' is already around block 'T_add'" in err.ir_text
    (i1,) = loops_of(sch, "C")
    err = raises_unchanged(
        sch, LoopContainsBlockError, sch.reverse_compute_at, sch.get_block("C"), i1
    )
    assert "producer" in err.suggestion


# ---------------------------------------------------------------------------------------
# Producers and consumers
# ---------------------------------------------------------------------------------------


def test_no_consumers():
    sch = Schedule(dead_block)
    (i1,) = loops_of(sch, "C")
    err = raises_unchanged(sch, NoConsumersError, sch.compute_at, sch.get_block("T_a"), i1)
    assert err.message == "block 'T_a' has no consumers"


def test_no_producers():
    sch = Schedule(add_relu)
    (i1,) = loops_of(sch, "C")
    block = sch.get_block("T_add")
    err = raises_unchanged(sch, NoProducersError, sch.reverse_compute_at, block, i1)
    assert err.message == "block 'T_add' has no producers"
    err = raises_unchanged(sch, NoProducersError, sch.reverse_compute_inline, block)
    assert err.primitive == "reverse_compute_inline"


def test_loop_not_around_every_consumer():
    sch = Schedule(fanout)
    (i1,) = loops_of(sch, "C1")
    err = raises_unchanged(
        sch, NotAncestorOfConsumerError, sch.compute_at, sch.get_block("T_a"), i1
    )
    assert err.message == "loop 'i1' is not an ancestor of consumer 'C2'"
    assert err.consumer == "C2" and err.node.loop_var.name == "i1"
    assert "sch.get_loops(sch.get_block('C2'))" in err.suggestion


def test_loop_not_around_the_producers():
    sch = Schedule(diamond)
    (i,) = loops_of(sch, "X")
    err = raises_unchanged(
        sch, NotAncestorOfProducerError, sch.reverse_compute_at, sch.get_block("Z"), i
    )
    assert err.message == "loop 'i' is not an ancestor of producer 'Y'"


def test_producer_after_consumer():
    sch = Schedule(read_before_write)
    (i,) = loops_of(sch, "C")
    (i1,) = loops_of(sch, "T_a")
    producer, consumer = sch.get_block("T_a"), sch.get_block("C")
    err = raises_unchanged(sch, ProducerAfterConsumerError, sch.compute_at, producer, i)
    assert err.message == "producer 'T_a' comes after its consumer 'C'"
    raises_unchanged(sch, ProducerAfterConsumerError, sch.reverse_compute_at, consumer, i1)
    raises_unchanged(sch, ProducerAfterConsumerError, sch.compute_inline, producer)
    raises_unchanged(sch, ProducerAfterConsumerError, sch.reverse_compute_inline, consumer)


def test_dependence_on_an_overwritten_input():
    sch = Schedule(overwritten_input)
    (i3,) = loops_of(sch, "C")
    block = sch.get_block("T1")
    err = raises_unchanged(sch, DependenceViolationError, sch.compute_at, block, i3)
    assert err.message == (
        "moving block 'T1' would break a dependence on 'T0' with block 'T0_again'"
    )
    assert err.other == "T0_again"
    err = raises_unchanged(sch, DependenceViolationError, sch.compute_inline, block)
    assert "would read the new values" in err.detail


def test_output_block():
    sch = Schedule(two_stages)
    i, j2 = loops_of(sch, "C")
    err = raises_unchanged(sch, OutputBlockError, sch.compute_at, sch.get_block("B"), j2)
    assert err.message == "block 'B' writes the function output 'B'"
    assert "the function's caller needs all of it" in err.detail
    sch = Schedule(add_relu)
    err = raises_unchanged(sch, OutputBlockError, sch.compute_inline, sch.get_block("C"))
    assert err.detail == "inlining removes 'C', but it is a parameter of add_relu"


# ---------------------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------------------


def test_unbounded_region():
    sch = Schedule(gather)
    (i1,) = loops_of(sch, "C")
    err = raises_unchanged(sch, UnboundedRegionError, sch.compute_at, sch.get_block("T_a"), i1)
    assert err.message == "the region of 'T_a' needed at loop 'i1' cannot be bounded"


def test_region_not_covered_by_a_stencil():
    sch = Schedule(stencil)
    (i,) = loops_of(sch, "T_a")
    err = raises_unchanged(
        sch, RegionNotCoveredError, sch.reverse_compute_at, sch.get_block("C"), i
    )
    assert err.message == ("at loop 'i', the producers do not cover the region block 'C' needs")
    assert "reads T_a (axis 0) beyond" in err.detail


def test_region_not_covered_by_a_column():
    sch = Schedule(ops.softmax(4, 8))
    i, k = loops_of(sch, "T_softmax_maxelem")
    sch.reorder(k, i)  # now k is outside: at i, only one column of a row is done
    err = raises_unchanged(
        sch, PartialReductionError, sch.reverse_compute_at, sch.get_block("T_softmax_expsum"), i
    )
    assert err.message == "at loop 'i' the producer 'T_softmax_maxelem' is not finished"


def test_partial_reduction():
    sch = Schedule(matmul_relu)
    i, j, k = loops_of(sch, "C")
    sch.reorder(k, j)
    err = raises_unchanged(
        sch, PartialReductionError, sch.reverse_compute_at, sch.get_block("relu"), j
    )
    assert "loop 'k'" in err.detail and "partial results" in err.detail


def test_predicate_not_movable():
    sch = Schedule(masked)
    (i1,) = loops_of(sch, "C")
    err = raises_unchanged(sch, PredicateNotMovableError, sch.compute_at, sch.get_block("T_a"), i1)
    assert err.message == "the predicate (T.where) of block 'T_a' cannot be moved"


# ---------------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------------


def test_inline_a_reduction():
    sch = Schedule(matmul_relu)
    err = raises_unchanged(sch, InlineReductionError, sch.compute_inline, sch.get_block("C"))
    assert err.message == "block 'C' is a reduction"
    assert "compute_at" in err.suggestion


def test_inline_several_stores():
    sch = Schedule(two_stores)
    err = raises_unchanged(sch, NotSingleStoreError, sch.compute_inline, sch.get_block("T_ab"))
    assert err.message == "the body of block 'T_ab' is not a single store"
    assert "a sequence of 2 statements" in err.detail


def test_inline_store_not_at_iter_vars():
    sch = Schedule(reversed_store)
    err = raises_unchanged(
        sch, StoreIndicesNotIterVarsError, sch.compute_inline, sch.get_block("T_a")
    )
    assert err.message == "block 'T_a' stores at [7 - vi], not at its iter vars"


def test_inline_in_place_update():
    sch = Schedule(in_place)
    err = raises_unchanged(sch, SelfReadError, sch.compute_inline, sch.get_block("T_a"))
    assert err.message == "block 'T_a' reads 'T_a', the buffer it writes"


def test_reverse_inline_several_producers():
    sch = Schedule(diamond)
    err = raises_unchanged(
        sch, SeveralProducersError, sch.reverse_compute_inline, sch.get_block("Z")
    )
    assert err.message == "block 'Z' has several producers ('X', 'Y')"


def test_reverse_inline_into_a_reduction():
    sch = Schedule(ops.matmul_bias_relu(8, 8, 8))
    err = raises_unchanged(
        sch, ReductionProducerError, sch.reverse_compute_inline, sch.get_block("T_add")
    )
    assert err.message == "the producer 'matmul' of block 'T_add' is a reduction"
    assert "partial result" in err.detail and "reverse_compute_at" in err.suggestion
    assert err.node.name == "matmul"


def test_reverse_inline_producer_with_other_consumers():
    sch = Schedule(fanout)
    err = raises_unchanged(
        sch, ProducerHasOtherConsumersError, sch.reverse_compute_inline, sch.get_block("C1")
    )
    assert err.message == "'T_a' has other consumers besides 'C1': 'C2'"


def test_reverse_inline_stencil():
    sch = Schedule(stencil)
    err = raises_unchanged(
        sch, SeveralReadIndicesError, sch.reverse_compute_inline, sch.get_block("C")
    )
    assert err.message == "block 'C' reads 'T_a' at several different indices"


def test_reverse_inline_broadcast_read():
    sch = Schedule(broadcast)
    err = raises_unchanged(
        sch, ReadNotBijectiveError, sch.reverse_compute_inline, sch.get_block("C")
    )
    assert err.message == "block 'C' reads T_a[vi1], not one element per iteration"


def test_reverse_inline_consumer_reading_less_than_produced_is_guarded(rng):
    # TVM (test_reverse_compute_inline_overcomputed_producer): the producer computes more than
    # the consumer reads, so the folded store gets a T.where instead of being refused
    @T.prim_func
    def shorter(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
        T_a = T.alloc_buffer((10,), "float32")
        for i in T.serial(10):
            with T.block("T_a"):
                vi = T.axis.spatial(10, i)
                T_a[vi] = A[vi] * T.float32(2)
        for i1 in T.serial(8):
            with T.block("C"):
                vi1 = T.axis.spatial(8, i1)
                C[vi1] = T_a[vi1] + T.float32(1)

    sch = Schedule(shorter)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "T.where(i < 8)" in sch.mod.script()
    assert "C[vi] = A[vi] * T.float32(2) + T.float32(1)" in sch.mod.script()
    assert_computes_same(sch, rng)


def test_reverse_inline_producer_not_covering_consumer():
    @T.prim_func
    def longer(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        T_a = T.alloc_buffer((10,), "float32")
        for i in T.serial(8):
            with T.block("T_a"):
                vi = T.axis.spatial(8, i)
                T_a[vi] = A[vi] * T.float32(2)
        for i1 in T.serial(10):
            with T.block("C"):
                vi1 = T.axis.spatial(10, i1)
                C[vi1] = T_a[vi1] + T.float32(1)

    sch = Schedule(longer)
    err = raises_unchanged(
        sch, RegionNotCoveredError, sch.reverse_compute_inline, sch.get_block("C")
    )
    assert "computes vi1 of 'C' over [0, 7], but 'C' needs [0, 9]" in err.detail


# ---------------------------------------------------------------------------------------
# legal_primitives
# ---------------------------------------------------------------------------------------

LOCATION = ("compute_at", "reverse_compute_at", "compute_inline", "reverse_compute_inline")


def rows(sch, block):
    table = sch.legal_primitives(sch.get_block(block))
    return {row.primitive: (row.legal, row.error) for row in table if row.primitive in LOCATION}


def test_legal_primitives_producer_and_consumer():
    sch = Schedule(add_relu)
    assert rows(sch, "T_add") == {
        "compute_at": (True, ""),
        "reverse_compute_at": (False, "NoProducersError"),
        "compute_inline": (True, ""),
        "reverse_compute_inline": (False, "NoProducersError"),
    }
    assert rows(sch, "C") == {
        "compute_at": (False, "OutputBlockError"),
        "reverse_compute_at": (True, ""),
        "compute_inline": (False, "OutputBlockError"),
        "reverse_compute_inline": (True, ""),
    }
    assert sch.mod == add_relu and len(sch.trace) == 2  # the two get_block calls


def test_legal_primitives_matmul_relu():
    sch = Schedule(matmul_relu)
    assert rows(sch, "C") == {
        "compute_at": (True, ""),
        "reverse_compute_at": (False, "NoProducersError"),
        "compute_inline": (False, "InlineReductionError"),
        "reverse_compute_inline": (False, "InlineReductionError"),
    }
    assert rows(sch, "relu")["reverse_compute_inline"] == (False, "ReductionProducerError")


def test_legal_primitives_probe_picks_the_innermost_legal_loop():
    sch = Schedule(matmul)
    assert rows(sch, "C")["compute_at"] == (False, "OutputBlockError")
    sch = Schedule(ops.softmax(4, 8))
    table = sch.legal_primitives(sch.get_block("T_softmax_maxelem"))
    # at the norm block's j loop the row max would be needed before the expsum block
    assert table["compute_at"].legal is False
    assert table["compute_at"].error == "NotAncestorOfConsumerError"


def test_reverse_compute_at_that_would_skip_the_padding_border():
    # found by the property tests: pad_temp moved under the copy of its (unpadded) input was
    # narrowed to the interior the copy writes, and the zero border was never computed
    func = ops.conv2d_nchw(N=1, C=3, H=7, W=7, K=4, R=3, S=3, stride=2, padding=1, dilation=1)
    sch = Schedule(func)
    pad = sch.get_block("pad_temp")
    copy = sch.cache_read(pad, 0, "local")
    channel_loop = sch.get_loops(copy)[1]
    err = raises_unchanged(
        sch, ConsumerDomainNotCoveredError, sch.reverse_compute_at, pad, channel_loop
    )
    assert err.message == (
        "at loop 'ax1', block 'pad_temp' would no longer compute all of its domain"
    )
    assert "it would skip v2 = 0" in err.detail
    assert "compute_inline" in err.suggestion


def test_compute_at_of_an_update_without_init_where_it_would_run_twice():
    # found by the property tests: after decompose_reduction, compute_at of the exp-sum
    # update under the column loop j2 re-added the whole row sum once per column
    sch = Schedule(ops.softmax(6, 10))
    expsum = sch.get_block("T_softmax_expsum")
    sch.decompose_reduction(expsum, sch.get_loops(expsum)[0])
    row, column = sch.get_loops(sch.get_block("T_softmax_norm"))
    err = raises_unchanged(sch, AccumulationRecomputedError, sch.compute_at, expsum, column)
    assert err.message == (
        "at loop 'j2', block 'T_softmax_expsum' would add into 'T_softmax_expsum' more than once"
    )
    assert "every iteration of loop 'j2' would update the same elements again" in err.detail
    # at the row loop each row's sum is computed once: legal, and right
    sch.compute_at(expsum, row)
    a = np.random.default_rng(2).standard_normal((6, 10)).astype(np.float32)
    got = np.empty_like(a)
    wb.build(sch, target="cpu")(a, got)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5)
