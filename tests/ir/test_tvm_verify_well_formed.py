"""TVM's well-formedness tests, ported to ``workbench.ir.verify``.

Source: apache/tvm ``tests/python/tirx-analysis/test_tir_analysis_verify_well_formed.py``
(older trees: ``tests/python/tir-analysis/``). Cases that need IR we do not have (``T.bind``
let-bindings, IRModules of several functions, environment threads, ``T.match_buffer``,
``DeclBuffer``) are listed in docs/decisions.d/verify.md.
"""

import pytest

import workbench as wb
from workbench.ir import (
    TRUE,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IntImm,
    IterVar,
    PrimFunc,
    Range,
    Var,
    seq,
)
from workbench.ir.verify import DuplicateNameError, UndefinedBufferError, VarScopeError, verify
from workbench.script import DSLError


def _func(body, params, alloc=()) -> PrimFunc:
    root = Block("root", (), (), (), body, None, tuple(alloc))
    return PrimFunc("func", tuple(params), BlockRealize((), TRUE, root))


def test_pass_simple():
    """test_tir_analysis_verify_well_formed.py::test_pass_simple (an opaque block may use the
    loop variables around it)."""
    func = wb.from_source('''
@T.prim_func
def element_wise(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            C[i, j] = B[i, j] * T.float32(2)
''')
    assert verify(func) is None


def test_fail_use_out_loop_var():
    """test_tir_analysis_verify_well_formed.py::test_fail_use_out_loop_var: in the DSL the
    verifier's error is a DSLError at the block; on hand-built IR it is a VarScopeError."""
    text = '''
@T.prim_func
def element_wise(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[i, vj] * T.float32(2)
'''
    with pytest.raises(DSLError) as info:
        wb.from_source(text)
    assert info.value.kind == "scope"
    assert info.value.message.startswith("loop variable 'i' is used inside block 'B'")
    A, B = Buffer("A", (128,)), Buffer("B", (128,))
    i, vi = Var("i"), Var("vi")
    block = Block("B", (IterVar(vi, Range(IntImm(0), IntImm(128))),), (), (),
                  BufferStore(B, BufferLoad(A, (i,)), (vi,)))
    loop = For(i, IntImm(0), IntImm(128), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    with pytest.raises(VarScopeError):
        verify(_func(loop, (A, B)))


def test_error_for_out_of_scope_usage():
    """test_tir_analysis_verify_well_formed.py::test_error_for_out_of_scope_usage, with a loop
    variable in place of the ``Bind`` (the IR has no let-binding): used after its loop."""
    A = Buffer("A", (4,), "int32")
    j = Var("j")
    inside = For(j, IntImm(0), IntImm(1), ForKind.SERIAL, BufferStore(A, j, (j,)))
    after = BufferStore(A, j, (IntImm(0),))
    with pytest.raises(VarScopeError) as info:
        verify(_func(seq(inside, after), (A,)))
    assert info.value.message == ("variable 'j' is used in block 'root' outside the loop or "
                                  "block that defines it")


def test_error_for_nested_rebind_usage():
    """test_tir_analysis_verify_well_formed.py::test_error_for_nested_rebind_usage: a
    variable defined again inside its own scope (two nested loops over one Var)."""
    A = Buffer("A", (4,), "int32")
    i = Var("i")
    inner = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BufferStore(A, i, (i,)))
    outer = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, inner)
    with pytest.raises(DuplicateNameError) as info:
        verify(_func(outer, (A,)))
    assert info.value.message.startswith("variable 'i' is defined twice")


def test_error_for_repeated_binding():
    """test_tir_analysis_verify_well_formed.py::test_error_for_repeated_binding (and
    test_sequential_redefinition_with_location): one variable defined by two sibling loops.
    TVM reports the first definition's location; we name what defined it."""
    A = Buffer("A", (4,), "int32")
    i = Var("i")
    first = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BufferStore(A, i, (i,)))
    second = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, BufferStore(A, i + 1, (i,)))
    with pytest.raises(DuplicateNameError) as info:
        verify(_func(seq(first, second), (A,)))
    assert info.value.message == ("variable 'i' is defined twice (loop variable and loop "
                                  "variable); loop and block variable names must be unique")


def test_buffer_param_is_well_formed():
    """test_tir_analysis_verify_well_formed.py::test_buffer_param_is_well_formed"""
    func = wb.from_source('''
@T.prim_func
def func(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in T.serial(128):
        B[i] = A[i] * T.float32(2)
''')
    assert verify(func) is None


def test_decl_buffer_is_well_formed():
    """test_tir_analysis_verify_well_formed.py::test_decl_buffer_is_well_formed
    (``T.alloc_buffer`` at the top level of the function)."""
    func = wb.from_source('''
@T.prim_func
def func(A: T.Buffer((128,), "float32")):
    B = T.alloc_buffer((128,), "float32")
    for i in T.serial(128):
        B[i] = A[i] * T.float32(2)
''')
    assert verify(func) is None


def test_alloc_buffer_in_block_is_well_formed():
    """test_tir_analysis_verify_well_formed.py::test_alloc_buffer_in_block_is_well_formed"""
    func = wb.from_source('''
@T.prim_func
def func(A: T.Buffer((128,), "float32")):
    with T.block("root"):
        B = T.alloc_buffer((128,), "float32")
        for i in T.serial(128):
            with T.block("write_B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.float32(2)
''')
    assert verify(func) is None


def test_error_undeclared_buffer_in_schedulable_tir():
    """test_tir_analysis_verify_well_formed.py::test_error_undeclared_buffer_in_schedulable_tir"""
    A, B = Buffer("A", (16,)), Buffer("B", (16,))
    i, bi = Var("i"), Var("bi")
    block = Block("write_B", (IterVar(bi, Range(IntImm(0), IntImm(16))),), (), (),
                  BufferStore(B, BufferLoad(A, (bi,)), (bi,)))
    loop = For(i, IntImm(0), IntImm(16), ForKind.SERIAL, BlockRealize((i,), TRUE, block))
    with pytest.raises(UndefinedBufferError) as info:
        verify(_func(loop, (A,)))
    assert "uses buffer 'B', which is neither a parameter nor allocated" in info.value.message


def test_evaluate_of_a_defined_variable_is_fine():
    """The positive half of test_error_for_out_of_scope_usage: used inside its loop."""
    i = Var("i")
    loop = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, Evaluate(i))
    assert verify(_func(loop, ())) is None
