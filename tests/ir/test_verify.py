"""workbench.ir.verify: one test per reason, with the exact error class and message."""

import pytest

import workbench as wb
from workbench import ops
from workbench.ir import (
    LT,
    TRUE,
    Add,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Cast,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterKind,
    IterVar,
    MixedOperandTypeError,
    Mul,
    PrimFunc,
    Range,
    Select,
    Var,
    seq,
)
from workbench.ir.verify import (
    BufferShapeError,
    DuplicateNameError,
    IndexCountError,
    IRVerifyError,
    OperandDTypeError,
    OutOfBoundsError,
    UndefinedBufferError,
    VarScopeError,
    accesses,
    verify,
)

A = Buffer("A", (16,))
B = Buffer("B", (16,))


def func_of(body, params=(A, B), alloc=()) -> PrimFunc:
    root = Block("root", (), (), (), body, None, tuple(alloc))
    return PrimFunc("f", tuple(params), BlockRealize((), TRUE, root))


def copy_block(name="B", loop="i", var="vi", index=None, extent=16, dom=16, value=None,
               predicate=TRUE, store_buffer=B):
    """``for i in range(extent): block name: vi = i; B[vi] = A[index]``."""
    i, vi = Var(loop), Var(var)
    load = BufferLoad(A, (vi if index is None else index(vi),))
    store = BufferStore(store_buffer, load if value is None else value(vi, load), (vi,))
    block = Block(name, (IterVar(vi, Range(IntImm(0), IntImm(dom))),), (), (), store)
    return For(i, IntImm(0), IntImm(extent), ForKind.SERIAL,
               BlockRealize((i,), predicate, block))


def raises(cls, func) -> IRVerifyError:
    with pytest.raises(IRVerifyError) as info:
        verify(func)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    return info.value


# --------------------------------------------------------------------------- accepted


@pytest.mark.parametrize("spec", ops.LIBRARY, ids=lambda s: s.name)
def test_every_library_operator_is_well_formed(spec):
    assert verify(spec.func()) is None


def test_split_with_a_predicate_is_in_bounds():
    """A loop that overshoots the domain (split by a non-divisor) is guarded by T.where."""
    sch = wb.Schedule(ops.matmul(30, 16, 8))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 8])
    assert verify(sch.mod) is None


def test_guarded_shift_is_accepted():
    i, vi = Var("i"), Var("vi")
    store = BufferStore(B, BufferLoad(A, (vi + 1,)), (vi,))
    body = IfThenElse(LT(vi, IntImm(15)), store)
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(16))),), (), (), body)
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    assert verify(func_of(loop)) is None


def test_select_guarded_load_is_accepted():
    func = func_of(copy_block(value=lambda vi, load: Select(
        LT(vi, IntImm(15)), BufferLoad(A, (vi + 1,)), FloatImm(0.0))))
    assert verify(func) is None


def test_data_dependent_index_is_left_to_the_debug_build():
    index_buf = Buffer("I", (16,), "int32")
    func = func_of(copy_block(index=lambda vi: BufferLoad(index_buf, (vi,))),
                   params=(A, B, index_buf))
    assert verify(func) is None
    unproven = [a for a in accesses(func) if not a.proven_in_bounds()]
    assert [a.node.buffer.name for a in unproven] == ["A"]


def test_loop_shorter_than_the_domain_is_not_out_of_bounds():
    """vi's domain is 16 but the loop only runs to 14: A[vi + 1] never reaches 16."""
    assert verify(func_of(copy_block(index=lambda vi: vi + 1, extent=15))) is None


# --------------------------------------------------------------------------- rejected


def test_shift_past_the_last_row_is_out_of_bounds():
    err = raises(OutOfBoundsError, func_of(copy_block(index=lambda vi: vi + 1)))
    assert err.message == ("block 'B': A[vi + 1] reads index 16 of dimension 0 of 'A', out of "
                           "range 0..15 (at vi=15)")
    assert (err.block, err.buffer, err.dim, err.index, err.witness) == ("B", A, 0, 16, {"vi": 15})


def test_negative_index_is_out_of_bounds():
    err = raises(OutOfBoundsError, func_of(copy_block(index=lambda vi: vi - 1)))
    assert err.index == -1 and err.witness == {"vi": 0}


def test_store_out_of_bounds():
    i, vi = Var("i"), Var("vi")
    store = BufferStore(B, BufferLoad(A, (vi,)), (vi * 2,))
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(16))),), (), (), store)
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    err = raises(OutOfBoundsError, func_of(loop))
    assert err.message.startswith("block 'B': B[vi * 2] writes index 30 of dimension 0")


def test_out_of_bounds_in_loops_without_blocks():
    i = Var("i")
    store = BufferStore(B, BufferLoad(A, (i + 4,)), (i,))
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, store)
    err = raises(OutOfBoundsError, func_of(loop))
    assert err.message == ("block 'root': A[i + 4] reads index 19 of dimension 0 of 'A', out of "
                           "range 0..15 (at i=15)")


def test_duplicate_block_names():
    body = seq(copy_block("B", "i", "vi"), copy_block("B", "j", "vj"))
    err = raises(DuplicateNameError, func_of(body))
    assert err.message == "block 'B' is defined twice; block names must be unique"


def test_duplicate_loop_variable_names():
    body = seq(copy_block("B", "i", "vi"), copy_block("C", "i", "vj"))
    err = raises(DuplicateNameError, func_of(body))
    assert "variable 'i' is defined twice" in err.message


def test_duplicate_buffer_names():
    other = Buffer("A", (8,))
    err = raises(DuplicateNameError, func_of(copy_block(), alloc=(other,)))
    assert err.message == ("buffer 'A' is defined twice (allocated in block 'root'); buffer "
                           "names must be unique")


def test_negative_buffer_shape():
    bad = Buffer("S", (-4,))
    err = raises(BufferShapeError, func_of(copy_block(), alloc=(bad,)))
    assert err.message == "buffer 'S' has a negative dimension (-4,)"


def test_undefined_buffer():
    err = raises(UndefinedBufferError, func_of(copy_block(store_buffer=Buffer("Q", (16,)))))
    assert err.message == ("block 'B' uses buffer 'Q', which is neither a parameter nor "
                           "allocated by a block")


def test_index_count():
    i, vi = Var("i"), Var("vi")
    store = BufferStore(B, BufferLoad(A, (vi, vi)), (vi,))
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(16))),), (), (), store)
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    err = raises(IndexCountError, func_of(loop))
    assert err.message == "block 'B': A[vi, vi] has 2 indices for a 1-d buffer"


def test_stored_dtype_must_match_the_buffer():
    func = func_of(copy_block(value=lambda vi, load: Cast("float64", load)))
    err = raises(OperandDTypeError, func)
    assert "stores a float64 value into 'B' (float32)" in err.message


def test_float_widths_must_agree():
    func = func_of(copy_block(value=lambda vi, load: Add(load, FloatImm(1.0, "float64"))))
    err = raises(OperandDTypeError, func)
    assert "is float32" in err.message and "is float64" in err.message


def test_float_index_is_rejected():
    i, vi = Var("i"), Var("vi")
    index = Cast("float32", vi)
    store = BufferStore(B, BufferLoad(A, (vi,)), (index,))
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(16))),), (), (), store)
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    err = raises(OperandDTypeError, func_of(loop))
    assert err.message.endswith("has dtype float32; it must be an integer")


def test_loop_variable_inside_a_block():
    i, vi = Var("i"), Var("vi")
    store = BufferStore(B, BufferLoad(A, (i,)), (vi,))
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(16))),), (), (), store)
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    err = raises(VarScopeError, func_of(loop))
    assert err.message == ("loop variable 'i' is used inside block 'B', which sees only its own "
                           "iteration variables (bind it with T.axis.spatial/T.axis.remap)")


def test_block_variable_outside_its_block():
    vi = Var("vi")
    after = BufferStore(B, FloatImm(0.0), (vi,))
    err = raises(VarScopeError, func_of(seq(copy_block(), after)))
    assert err.message == ("variable 'vi' is used in block 'root' outside the loop or block "
                           "that defines it")


def test_iteration_variable_of_an_outer_block_is_visible():
    """As in TVM, a nested block may use the iteration variables of the blocks around it."""
    i, j, vo, vi = Var("i"), Var("j"), Var("vo"), Var("vi")
    store = BufferStore(B, BufferLoad(A, (vo * 4 + vi,)), (vo * 4 + vi,))
    inner = Block("inner", (IterVar(vi, Range(IntImm(0), IntImm(4))),), (), (), store)
    inner_loop = For(j, IntImm(0), IntImm(4), ForKind.SERIAL, BlockRealize((j,), TRUE, inner))
    outer = Block("outer", (IterVar(vo, Range(IntImm(0), IntImm(4))),), (), (), inner_loop)
    loop = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BlockRealize((i,), TRUE, outer))
    assert verify(func_of(loop)) is None


def test_mixed_int_float_operands_are_rejected_at_construction():
    with pytest.raises(MixedOperandTypeError) as info:
        Mul(Var("i"), FloatImm(2.0))
    assert isinstance(info.value, TypeError)
    assert str(info.value) == (
        "Mul: cannot mix int32 operand Var(name='i', dtype='int32') with float32 operand "
        "FloatImm(value=2.0, dtype='float32'); cast one of them (Cast / T.Cast)"
    )


def test_iter_var_kinds_do_not_matter_for_bounds():
    k, vk = Var("k"), Var("vk")
    store = BufferStore(B, Add(BufferLoad(B, (IntImm(0),)), BufferLoad(A, (vk + 1,))),
                        (IntImm(0),))
    block = Block("S", (IterVar(vk, Range(IntImm(0), IntImm(16)), IterKind.REDUCE),), (), (),
                  store)
    loop = For(k, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((k,), TRUE, block))
    assert raises(OutOfBoundsError, func_of(loop)).witness == {"vk": 15}


def test_build_runs_the_verifier_for_every_target():
    func = func_of(copy_block(index=lambda vi: vi + 1))
    for target in ("numpy", "cpu"):
        with pytest.raises(OutOfBoundsError):
            wb.build(func, target=target)
