"""The parser: DSL source to IR, checked node by node."""

import pytest
import script_examples as ex

import ir_examples
import workbench as wb
from workbench import T
from workbench.ir import (
    EQ,
    GT,
    LT,
    TRUE,
    Add,
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterKind,
    Max,
    Mul,
    Not,
    Or,
    PrimFunc,
    Range,
    Select,
    SeqStmt,
    Sub,
    Var,
)


def test_matmul_equals_hand_built_ir():
    assert ex.matmul == ir_examples.matmul(16, 16, 16)
    assert ex.matmul.same_as(ir_examples.matmul(16, 16, 16))


def test_add_relu_equals_hand_built_ir():
    assert ex.add_relu == ir_examples.add_relu(64)


def test_matmul_node_by_node():
    f = ex.matmul
    assert isinstance(f, PrimFunc) and f.name == "matmul"
    A, B, C = f.params
    assert (A, B, C) == (Buffer("A", (16, 16)), Buffer("B", (16, 16)), Buffer("C", (16, 16)))
    assert f.body.block.name == "root" and f.body.iter_values == () and f.body.predicate == TRUE
    loop_i = f.root_block.body
    assert isinstance(loop_i, For) and loop_i.loop_var == Var("i") and loop_i.kind is ForKind.SERIAL
    assert (loop_i.min, loop_i.extent) == (IntImm(0), IntImm(16))
    loop_k = loop_i.body.body
    assert loop_k.loop_var == Var("k")
    realize = loop_k.body
    assert isinstance(realize, BlockRealize)
    assert realize.iter_values == (Var("i"), Var("j"), Var("k"))
    block = realize.block
    assert [iv.var.name for iv in block.iter_vars] == ["vi", "vj", "vk"]
    assert [iv.kind for iv in block.iter_vars] == [IterKind.SPATIAL, IterKind.SPATIAL, IterKind.REDUCE]
    assert block.iter_vars[2].dom == Range(IntImm(0), IntImm(16))
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    assert block.init == BufferStore(C, FloatImm(0.0, "float32"), (vi, vj))
    assert block.body == BufferStore(
        C, Add(BufferLoad(C, (vi, vj)), Mul(BufferLoad(A, (vi, vk)), BufferLoad(B, (vk, vj)))), (vi, vj))
    assert [r.buffer.name for r in block.reads] == ["C", "A", "B"]
    assert block.writes == (BufferRegion(C, (Range(vi, IntImm(1)), Range(vj, IntImm(1)))),)


def test_shapes_from_closure_and_factory_arguments():
    def make(n, dtype):
        @T.prim_func
        def scale(A: T.Buffer((n * 2,), dtype), B: T.Buffer((n * 2,), dtype)):
            for i in T.serial(n * 2):
                with T.block("B"):
                    vi = T.axis.spatial(n * 2, i)
                    B[vi] = A[vi] * 2.0
        return scale

    f = make(8, "float16")
    assert f.params[0] == Buffer("A", (16,), "float16")
    store = f.root_block.body.body.block.body
    # the float literal takes the buffer's dtype
    assert store.value == Mul(BufferLoad(f.params[0], (Var("vi"),)), FloatImm(2.0, "float16"))


def test_module_globals_give_shapes():
    assert ex.conv2d.params[0].shape == (1, 4, 10, 10)
    assert ex.matmul.params[2].shape == (ex.M, ex.N)


def test_augmented_store_and_window_indices():
    block = ex.conv2d.root_block.body
    while isinstance(block, For):
        block = block.body
    body = block.block.body
    Y = ex.conv2d.params[2]
    assert isinstance(body.value, Add) and body.value.a == BufferLoad(Y, body.indices)
    x_load = body.value.b.a
    assert x_load.indices[2] == Add(Var("vh"), Var("vrh"))


def test_int_literal_in_index_is_int32_and_float_literal_dtypes():
    f = ex.stencil
    store = f.root_block.body.body.block.body
    assert store.value.b == FloatImm(3.0, "float64")
    assert store.value.a.a.a.indices == (Sub(Var("vi"), IntImm(1, "int32")),)


def test_alloc_buffer_in_root_and_in_block():
    assert [b.name for b in ex.softmax.root_block.alloc_buffers] == ["row_max", "row_sum"]
    outer = ex.nested_blocks.root_block.body.body.block
    assert outer.alloc_buffers == (Buffer("local", (4, 16), "float32", "local"),)
    assert ex.nested_blocks.root_block.alloc_buffers == ()


def test_repeated_names_get_unique_suffixes():
    loops = ex.softmax.root_block.body.stmts
    assert [loop.loop_var.name for loop in loops] == ["i", "i_1", "i_2"]
    block = loops[1].body.body.block
    assert [iv.var.name for iv in block.iter_vars] == ["vi_1", "vk_1"]


def test_loop_kinds_thread_binding_annotations():
    outer = ex.loop_kinds.root_block.body.stmts[0]
    assert outer.kind is ForKind.PARALLEL
    assert outer.body.kind is ForKind.UNROLLED
    assert outer.body.annotations == (("pragma_unroll_explicit", 1),)
    assert outer.body.body.kind is ForKind.VECTORIZED
    bx = ex.loop_kinds.root_block.body.stmts[1]
    assert (bx.kind, bx.thread_binding) == (ForKind.THREAD_BINDING, "blockIdx.x")
    jj = bx.body.body
    assert (jj.min, jj.extent) == (IntImm(2), IntImm(4))
    realize = jj.body
    assert realize.block.iter_vars[1].dom == Range(IntImm(2), IntImm(4))
    assert realize.iter_values[0] == Add(Mul(Var("bx"), IntImm(16)), Var("tx"))


def test_where_reads_writes_attrs_if_select_casts():
    realize = ex.guarded.root_block.body.stmts[0].body.body
    assert realize.predicate == LT(Add(Mul(Var("i_0"), IntImm(8)), Var("i_1")), IntImm(30))
    block = realize.block
    A = ex.guarded.params[0]
    assert block.reads == (BufferRegion(A, (Range(Var("vi"), IntImm(1)),)),)
    assert block.annotations == (("meta_schedule.tiling", "SSR"), ("level", 2))
    branch = block.body
    assert isinstance(branch, IfThenElse) and isinstance(branch.else_case, IfThenElse)
    assert branch.condition == And(EQ(FloorMod(Var("vi"), IntImm(2)), IntImm(0)),
                                   Not(LT(Var("vi"), IntImm(4))))
    assert branch.else_case.condition == Or(GT(Var("vi"), IntImm(20)), EQ(Var("vi"), IntImm(5)))
    first = branch.then_case.value
    assert first.a == Cast("float32", Mul(BufferLoad(A, (Var("vi"),)), FloatImm(2.0, "float16")))
    assert first.b == Call("sqrt", (FloatImm(2.0, "float32"),), "float32")
    select = branch.else_case.then_case.value
    assert isinstance(select, Select) and select.false_value == FloatImm(-1.5, "float32")
    neg = select.true_value.args[0]
    assert neg == Sub(FloatImm(0.0, "float32"), Cast("float32", BufferLoad(A, (Var("vi"),))))
    pow_call = branch.else_case.else_case.value.b
    assert pow_call == Call("pow", (FloatImm(2.0), FloatImm(0.5)), "float32")


def test_min_floordiv_floormod_int_literal():
    value = ex.guarded.root_block.body.stmts[1].body.block.body.value
    v = Var("vi_1")
    assert value.b == IntImm(1, "int32")
    assert value.a.b == Mul(FloorDiv(v, IntImm(4)), FloorMod(v, IntImm(3)))
    assert value.a.a == Call("abs", (Sub(v, IntImm(15)),), "int32")


def test_max_with_float_literal_matches_hand_built():
    store = ex.add_relu.root_block.body.stmts[1].body.block.body
    assert store.value == Max(BufferLoad(Buffer("T_add", (64,)), (Var("v1"),)), FloatImm(0.0))


def test_nested_blocks_regions_given_explicitly():
    outer = ex.nested_blocks.root_block.body.body.block
    vo = Var("vi_o")
    start = Mul(vo, IntImm(4))
    assert outer.reads[0].region == (Range(start, IntImm(4)), Range(IntImm(0), IntImm(16)))
    inner = outer.body.stmts[0].body.body.block
    assert inner.name == "load"


def test_stencil_window_region():
    block = ex.stencil.root_block.body.body.block
    assert block.reads[0].region == (Range(Sub(Var("vi"), IntImm(1)), IntImm(3)),)


def test_from_source_with_imports_and_explicit_root():
    text = '''
from workbench import T

@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "f"})
    with T.block("root"):
        T.reads()
        T.writes()
        T.block_attr({"note": "x"})
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(1)
'''
    f = wb.from_source(text)
    assert f.attrs == (("global_symbol", "f"),)
    assert f.root_block.annotations == (("note", "x"),)
    assert isinstance(f.root_block.body, For)
    assert wb.from_source(f.script()) == f


def test_empty_body_and_evaluate():
    f = wb.from_source('''
@T.prim_func
def f(A: T.Buffer((), "int64")):
    with T.block("x"):
        T.evaluate(0)
        A[()] = 7
    for i in T.serial(2):
        pass
''')
    block = f.root_block.body.stmts[0].block
    assert block.body.stmts[1] == BufferStore(Buffer("A", (), "int64"), IntImm(7, "int64"), ())
    assert f.root_block.body.stmts[1].body == SeqStmt(())


def test_decompose_reduction_form_needs_no_init():
    # the update block of decompose_reduction: an earlier block initialises C
    f = wb.from_source('''
@T.prim_func
def f(A: T.Buffer((4, 4), "float32"), C: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        with T.block("C_init"):
            vi = T.axis.spatial(4, i)
            C[vi] = T.float32(0)
        for k in T.serial(4):
            with T.block("C_update"):
                vi, vk = T.axis.remap("SR", [i, k])
                C[vi] = C[vi] + A[vi, vk]
''')
    assert f.root_block.body.body.stmts[1].body.block.init is None


def test_dsl_functions_outside_prim_func_raise():
    with pytest.raises(wb.DSLError, match="only be used inside a @T.prim_func"):
        T.grid(4, 4)
    assert T.Buffer((4, 8), "float16").shape == (4, 8)


def test_block_type():
    assert isinstance(ex.matmul.root_block.body.body.body.body.block, Block)


def test_remap_reads_loop_variables_before_binding_names():
    f = wb.from_source('''
@T.prim_func
def f(A: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("A"):
            j, i = T.axis.remap("SS", [i, j])
            A[j, i] = T.float32(1)
''')
    realize = f.root_block.body.body.body
    assert realize.iter_values == (Var("i"), Var("j"))
    assert [iv.var.name for iv in realize.block.iter_vars] == ["j_1", "i_1"]
    assert realize.block.iter_vars[0].dom == Range(IntImm(0), IntImm(4))
    assert wb.from_source(f.script()) == f


def test_buffer_type_object_as_annotation_and_numpy_scalars():
    import numpy as np

    Vec = T.Buffer((8,), "float32")
    scale = np.float32(0.25)

    @T.prim_func
    def f(A: Vec, B: Vec):
        for i in T.serial(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * scale

    assert f.params == (Buffer("A", (8,)), Buffer("B", (8,)))
    assert f.root_block.body.body.block.body.value.b == FloatImm(0.25, "float32")
