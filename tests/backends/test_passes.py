"""The cpu code generator's IR passes: unswitching and the unsigned-index decision."""

import scheduled_examples as se

import ir_examples
from workbench.backends import lower, lower_to_numba_source
from workbench.backends.common.unsigned import use_unsigned_indices
from workbench.backends.cpu.unswitch import unswitch_innermost_loops
from workbench.ir import (
    EQ,
    TRUE,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    FloorDiv,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterVar,
    PrimFunc,
    Range,
    Sub,
    Var,
)
from workbench.ir.functor import collect


def test_unswitch_moves_the_init_guard_out_of_the_innermost_loop():
    func = lower(se.tiled_matmul(16, 32, 8, 4, 8))
    body = unswitch_innermost_loops(func.root_block.body)
    i_1 = collect(body, lambda n: isinstance(n, For) and n.loop_var.name == "i_1")[0]
    guard = i_1.body
    assert isinstance(guard, IfThenElse) and guard.condition == EQ(Var("k"), IntImm(0))
    then_loop, else_loop = guard.then_case, guard.else_case
    assert then_loop.loop_var.name == else_loop.loop_var.name == "j_1"
    assert len(collect(then_loop, lambda n: isinstance(n, BufferStore))) == 2  # init + update
    assert len(collect(else_loop, lambda n: isinstance(n, BufferStore))) == 1  # update only
    assert not collect(then_loop, lambda n: isinstance(n, IfThenElse))


def test_guard_depending_on_the_loop_stays_inside():
    func = lower(ir_examples.matmul(4, 4, 4))  # if k == 0 inside the k loop
    assert unswitch_innermost_loops(func.root_block.body) == func.root_block.body


def test_unsigned_indices_decision():
    assert use_unsigned_indices(lower(ir_examples.matmul(4, 4, 4)))
    # 15 - j2 is non-negative over the loop range: still unsigned
    assert use_unsigned_indices(lower(se.local_intermediate()[0]))
    # an int cast and an int buffer load: integer data mixes in, stay signed
    assert not use_unsigned_indices(lower(se.intrinsics(8)))
    assert "u64" not in lower_to_numba_source(se.intrinsics(8))


def test_possibly_negative_floordiv_operand_stays_signed():
    """B[v] = A[(v - 3) // 2 + 2]: (v - 3) // 2 floors a negative value for v < 3."""
    A, B = Buffer("A", (8,)), Buffer("B", (8,))
    v, i = Var("v"), Var("i")
    index = FloorDiv(Sub(v, IntImm(3)), IntImm(2)) + 2
    block = Block(
        "B",
        (IterVar(v, Range(IntImm(0), IntImm(8))),),
        (),
        (),
        BufferStore(B, BufferLoad(A, (index,)), (v,)),
    )
    loop = For(i, IntImm(0), IntImm(8), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    func = PrimFunc("shifted", (A, B), BlockRealize((), TRUE, Block("root", (), (), (), loop)))
    assert not use_unsigned_indices(lower(func, simplify=False))
    # the simplifier rewrites the index to (v + 1) // 2, which is never negative
    assert use_unsigned_indices(lower(func))
