"""Round trips: ``from_source(script(f)) == f`` for parsed, hand-built and random IR."""

import pytest
import script_examples as ex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir_examples
import workbench as wb
from workbench.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
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
    Div,
    Evaluate,
    FloatImm,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterKind,
    IterVar,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimFunc,
    Range,
    Select,
    Sub,
    Var,
    seq,
)
from workbench.ir.regions import block_access_regions


def roundtrip(func: PrimFunc) -> PrimFunc:
    text = func.script()
    parsed = wb.from_source(text)
    assert parsed == func, f"round trip changed the function:\n{text}\n---\n{parsed.script()}"
    assert parsed.script() == text
    return parsed


@pytest.mark.parametrize("name", sorted(ex.ALL))
def test_examples_round_trip(name):
    roundtrip(ex.ALL[name])


def test_hand_built_examples_round_trip():
    roundtrip(ir_examples.matmul(8, 4, 2, "float16"))
    roundtrip(ir_examples.add_relu(32, "float64"))


def _root(body, alloc=()):
    return BlockRealize((), TRUE, Block("root", (), (), (), body, None, tuple(alloc)))


def _block(name, iter_vars, values, body, predicate=TRUE, init=None, alloc=()):
    reads, writes = block_access_regions(body, init)
    return BlockRealize(tuple(values), predicate,
                        Block(name, tuple(iter_vars), reads, writes, body, init, tuple(alloc)))


def test_scheduled_like_ir_round_trips():
    """What split/fuse/reorder/cache_read produce: expression bindings, predicates, scopes."""
    A, B = Buffer("A", (30, 8)), Buffer("B", (30, 8))
    cache = Buffer("A_local", (30, 8), "float32", "local")
    i_0, i_1, j_k = Var("i_0"), Var("i_1"), Var("j_k_fused")
    vi, vj = Var("vi"), Var("vj")
    binding_i = Add(Mul(i_0, IntImm(8)), i_1)
    iter_vars = (IterVar(vi, Range(IntImm(0), IntImm(30))), IterVar(vj, Range(IntImm(0), IntImm(8))))
    body = BufferStore(B, Mul(BufferLoad(cache, (vi, vj)), FloatImm(0.5)), (vi, vj))
    realize = _block("B", iter_vars, (binding_i, FloorMod(j_k, IntImm(8))), body,
                     predicate=LT(binding_i, IntImm(30)))
    nest = For(j_k, IntImm(0), IntImm(8), ForKind.VECTORIZED, realize)
    nest = For(i_1, IntImm(0), IntImm(8), ForKind.UNROLLED, nest, annotations=(("step", (1, 2)),))
    nest = For(i_0, IntImm(0), IntImm(4), ForKind.PARALLEL, nest)
    ci, cj = Var("ax0"), Var("ax1")
    v0, v1 = Var("v0"), Var("v1")
    copy = _block("A_local", (IterVar(v0, Range(IntImm(0), IntImm(30))),
                              IterVar(v1, Range(IntImm(0), IntImm(8)))), (ci, cj),
                  BufferStore(cache, BufferLoad(A, (v0, v1)), (v0, v1)))
    copy_nest = For(ci, IntImm(0), IntImm(30), ForKind.SERIAL,
                    For(cj, IntImm(0), IntImm(8), ForKind.SERIAL, copy))
    func = PrimFunc("scheduled", (A, B), _root(seq(copy_nest, nest), alloc=(cache,)))
    parsed = roundtrip(func)
    assert "T.where(i_0 * 8 + i_1 < 30)" in parsed.script()
    assert 'A_local = T.alloc_buffer((30, 8), "float32", scope="local")' in parsed.script()


def test_symbolic_loop_bounds_and_regions_round_trip():
    A = Buffer("A", (16,))
    i, j, vi = Var("i"), Var("j"), Var("vi")
    body = BufferStore(A, FloatImm(1.0), (vi,))
    realize = BlockRealize((j,), TRUE, Block(
        "A", (IterVar(vi, Range(IntImm(0), IntImm(16))),),
        # a block's regions use its own iteration variables (a loop variable is out of scope)
        (BufferRegion(A, (Range(Mul(vi, IntImm(4)), Add(vi, IntImm(2))),)),),
        (BufferRegion(A, (Range(Add(vi, IntImm(3)), IntImm(5)),)),), body))
    inner = For(j, Add(i, IntImm(1)), Sub(IntImm(16), i), ForKind.SERIAL, realize)
    func = PrimFunc("tri", (A,), _root(For(i, IntImm(0), IntImm(8), ForKind.SERIAL, inner)))
    roundtrip(func)


def test_constant_operations_keep_their_structure():
    A = Buffer("A", (4,), "int32")
    v = Var("v")
    value = Add(Add(IntImm(1), IntImm(2)), Sub(IntImm(0), IntImm(3)))
    body = IfThenElse(LT(IntImm(1), IntImm(2)), BufferStore(A, value, (v,)),
                      BufferStore(A, Sub(IntImm(0), v), (v,)))
    realize = _block("A", (IterVar(v, Range(IntImm(0), IntImm(4))),), (Var("i"),), body)
    func = PrimFunc("consts", (A,), _root(For(Var("i"), IntImm(0), IntImm(4), ForKind.SERIAL,
                                               realize)))
    text = roundtrip(func).script()
    assert "A[v] = T.int32(1) + 2 + (T.int32(0) - 3)" in text
    assert "A[v] = -v" in text


def test_reduce_iter_var_with_expression_binding():
    A, C = Buffer("A", (4, 8)), Buffer("C", (4,))
    i, k_0, k_1 = Var("i"), Var("k_0"), Var("k_1")
    vi, vk = Var("vi"), Var("vk")
    iter_vars = (IterVar(vi, Range(IntImm(0), IntImm(4))),
                 IterVar(vk, Range(IntImm(0), IntImm(8)), IterKind.REDUCE))
    body = BufferStore(C, Add(BufferLoad(C, (vi,)), BufferLoad(A, (vi, vk))), (vi,))
    realize = _block("C", iter_vars, (i, Add(Mul(k_0, IntImm(4)), k_1)), body,
                     init=BufferStore(C, FloatImm(0.0), (vi,)))
    nest = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, For(
        k_0, IntImm(0), IntImm(2), ForKind.SERIAL, For(k_1, IntImm(0), IntImm(4), ForKind.SERIAL,
                                                       realize)))
    text = roundtrip(PrimFunc("rsum", (A, C), _root(nest))).script()
    assert "vk = T.axis.reduce(8, k_0 * 4 + k_1)" in text
    assert "for i, k_0, k_1 in T.grid(4, 2, 4):" in text


# ---- random expressions ---------------------------------------------------------------------

I, J = Var("i"), Var("j")
FBUF = Buffer("F", (64,), "float32")
IBUF = Buffer("G", (64,), "int32")

int_leaves = st.one_of(
    st.integers(-40, 40).map(IntImm),
    st.sampled_from([I, J]),
    st.integers(0, 63).map(lambda n: BufferLoad(IBUF, (IntImm(n),))),
)
float_leaves = st.one_of(
    st.floats(allow_nan=False, allow_infinity=True, width=32).map(lambda x: FloatImm(float(x))),
    st.sampled_from([I, J]).map(lambda v: BufferLoad(FBUF, (v,))),
)
INT_BINARY = [Add, Sub, Mul, Div, FloorDiv, FloorMod, Min, Max]
FLOAT_BINARY = [Add, Sub, Mul, Div, Min, Max]
COMPARES = [LT, LE, GT, GE, EQ, NE]


def _extend(children):
    ints, floats, bools = children
    return st.one_of(
        st.tuples(st.sampled_from(INT_BINARY), ints, ints).map(lambda t: ("i", t[0](t[1], t[2]))),
        st.tuples(st.sampled_from(FLOAT_BINARY), floats, floats).map(
            lambda t: ("f", t[0](t[1], t[2]))),
        ints.map(lambda a: ("i", Sub(IntImm(0), a))),
        floats.map(lambda a: ("f", Sub(FloatImm(0.0), a))),
        floats.map(lambda a: ("i", Cast("int32", a))),
        ints.map(lambda a: ("f", Cast("float32", a))),
        st.tuples(st.sampled_from(["exp", "log", "sqrt", "tanh", "sigmoid", "abs"]), floats).map(
            lambda t: ("f", Call(t[0], (t[1],), "float32"))),
        st.tuples(floats, floats).map(lambda t: ("f", Call("pow", t, "float32"))),
        ints.map(lambda a: ("i", Call("abs", (a,), "int32"))),
        # the index stays inside F: the parser rejects provably out-of-bounds reads
        ints.map(lambda a: ("f", BufferLoad(FBUF, (FloorMod(a, IntImm(64)),)))),
        st.tuples(bools, ints, ints).map(lambda t: ("i", Select(*t))),
        st.tuples(bools, floats, floats).map(lambda t: ("f", Select(*t))),
        st.tuples(st.sampled_from(COMPARES), ints, ints).map(lambda t: ("b", t[0](t[1], t[2]))),
        st.tuples(st.sampled_from(COMPARES), floats, floats).map(
            lambda t: ("b", t[0](t[1], t[2]))),
        st.tuples(st.sampled_from([And, Or]), bools, bools).map(lambda t: ("b", t[0](t[1], t[2]))),
        bools.map(lambda a: ("b", Not(a))),
    )


def _typed(kind):
    return lambda pair: pair[1] if pair[0] == kind else None


def expressions():
    bool_leaves = st.one_of(st.booleans().map(lambda b: IntImm(int(b), "bool")),
                            st.tuples(st.sampled_from([I, J]), st.integers(-5, 5)).map(
                                lambda t: LT(t[0], IntImm(t[1]))))

    def extend(pairs):
        ints = pairs.map(_typed("i")).filter(lambda e: e is not None) | int_leaves
        floats = pairs.map(_typed("f")).filter(lambda e: e is not None) | float_leaves
        bools = pairs.map(_typed("b")).filter(lambda e: e is not None) | bool_leaves
        return _extend((ints, floats, bools))

    leaves = st.one_of(int_leaves.map(lambda e: ("i", e)), float_leaves.map(lambda e: ("f", e)),
                       bool_leaves.map(lambda e: ("b", e)))
    return st.recursive(leaves, extend, max_leaves=12)


def _function_of(kind: str, expr) -> PrimFunc:
    out_f, out_i = Buffer("OF", (64,), "float32"), Buffer("OI", (64,), "int32")
    if kind == "f":
        body = BufferStore(out_f, expr, (I,))
    elif kind == "i":
        body = BufferStore(out_i, expr, (J,))
    else:
        body = IfThenElse(expr, BufferStore(out_i, IntImm(1), (I,)),
                          BufferStore(out_f, FloatImm(2.5), (J,)))
    nest = For(I, IntImm(0), IntImm(64), ForKind.SERIAL,
               For(J, IntImm(0), IntImm(64), ForKind.SERIAL, body))
    return PrimFunc("expr", (FBUF, IBUF, out_f, out_i), _root(nest))


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expressions())
def test_random_expressions_print_and_parse_back(pair):
    kind, expr = pair
    func = _function_of(kind, expr)
    text = func.script()
    assert wb.from_source(text) == func, text


def test_call_with_its_own_dtype_and_evaluate_round_trip():
    A, B = Buffer("A", (4,), "float16"), Buffer("B", (4,), "float32")
    i = Var("i")
    value = Call("exp", (BufferLoad(A, (i,)),), "float32")
    body = seq(Evaluate(IntImm(0)), BufferStore(B, value, (i,)))
    func = PrimFunc("mixed", (A, B), _root(For(i, IntImm(0), IntImm(4), ForKind.SERIAL, body)))
    text = roundtrip(func).script()
    assert 'B[i] = T.exp(A[i], dtype="float32")' in text
    assert "T.evaluate(0)" in text
