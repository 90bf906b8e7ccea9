"""Tests of workbench.ir.arith: golden simplifications, bounds, proofs, and a property test."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Buffer,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    Select,
    Sub,
    Var,
)
from workbench.ir.arith import evaluate, int_bounds, is_const_int, prove, simplify, simplify_stmt

x, y, z = Var("x"), Var("y"), Var("z")
i, j = Var("i"), Var("j")
i_0, i_1 = Var("i_0"), Var("i_1")
fused = Var("fused")
SPLIT = {i_0: (0, 3), i_1: (0, 31)}  # i split by 32 into i_0 (4) and i_1 (32)
TRUE, FALSE = IntImm(1, "bool"), IntImm(0, "bool")
fx, fy = Var("fx", "float32"), Var("fy", "float32")


def c(v, dtype="int32"):
    return IntImm(v, dtype)


def f(v, dtype="float32"):
    return FloatImm(v, dtype)


# --------------------------------------------------------------------------- golden rules

GOLDEN = [
    # constant folding of every binary op
    (Add(c(2), c(3)), {}, c(5)),
    (Sub(c(2), c(3)), {}, c(-1)),
    (Mul(c(4), c(3)), {}, c(12)),
    (FloorDiv(c(-7), c(2)), {}, c(-4)),
    (FloorMod(c(-7), c(2)), {}, c(1)),
    (Div(c(-7), c(2)), {}, c(-3)),  # integer Div truncates
    (Min(c(3), c(5)), {}, c(3)),
    (Max(c(3), c(5)), {}, c(5)),
    (LT(c(3), c(5)), {}, TRUE),
    (GE(c(3), c(5)), {}, FALSE),
    (EQ(c(3), c(3)), {}, TRUE),
    (NE(c(3), c(3)), {}, FALSE),
    (And(TRUE, FALSE), {}, FALSE),
    (Or(TRUE, FALSE), {}, TRUE),
    (Not(TRUE), {}, FALSE),
    # identities
    (x + 0, {}, x),
    (0 + x, {}, x),
    (x - 0, {}, x),
    (x * 1, {}, x),
    (1 * x, {}, x),
    (x * 0, {}, c(0)),
    (x - x, {}, c(0)),
    (x // 1, {}, x),
    (x % 1, {}, c(0)),
    (Div(x, c(1)), {}, x),
    (Min(x, x), {}, x),
    (Max(y, y), {}, y),
    # nested constants and canonical order (constants on the right)
    ((x + 1) + 2, {}, x + 3),
    ((x * 2) * 3, {}, x * 6),
    (2 * x, {}, x * 2),
    (3 + x, {}, x + 3),
    ((x + 5) - 5, {}, x),
    ((x - 2) + 1, {}, x - 1),
    (x + y - x, {}, y),
    ((x + 1) * 4, {}, x * 4 + 4),
    ((x * 4 + y) * 8 + z, {}, x * 32 + y * 8 + z),
    (1 - x, {}, Sub(c(1), x)),
    (LT(c(3), x), {}, GT(x, c(3))),
    # split / fuse index patterns, given loop ranges
    ((i_0 * 32 + i_1) // 32, SPLIT, i_0),
    ((i_0 * 32 + i_1) % 32, SPLIT, i_1),
    ((i_0 * 32 + i_1) // 32, {}, i_0 + i_1 // 32),  # no ranges: only the exact part
    ((i_0 * 32 + i_1) % 32, {}, i_1 % 32),
    (i // 64, {i: (0, 63)}, c(0)),
    (i % 64, {i: (0, 63)}, i),
    (i // 64, {i: (0, 64)}, i // 64),  # not provable: unchanged
    ((i + 64) // 64, {i: (0, 63)}, c(1)),
    ((i + 64) % 64, {i: (0, 63)}, i),
    (fused // 16 * 16 + fused % 16, {}, fused),
    (fused % 16 + fused // 16 * 16, {}, fused),
    ((fused // 16 * 16 + fused % 16) * 2, {}, fused * 2),
    (x - x // 8 * 8, {}, x % 8),
    ((i_0 * 4 + i_1 // 8) * 8 + i_1 % 8, {}, i_0 * 32 + i_1),
    (x // 4 // 8, {}, x // 32),
    (x % 32 // 4, {}, x // 4 % 8),
    (fused // 128 * 128 + fused // 16 % 8 * 16 + fused % 16, {}, fused),  # fuse of three loops
    (fused // 16 % 8 * 16 + fused % 16, {}, fused % 128),
    # the low digit needs its value modulo the radix only, and may be a simplified quotient
    ((x * 32 + y) // 16 * 16 + y % 16, {}, x * 32 + y),
    ((x * 32 + y) // 12 * 12 + (x * 8 + y // 4) % 3 * 4 + y % 4, {}, x * 32 + y),
    ((x * 32 + y) // 12 * 12 + (x * 8 + y // 4) % 3 * 4, {}, x * 32 + y // 4 * 4),
    ((x * 12 + y) // 16 * 16 + y % 16, {}, (x * 12 + y) // 16 * 16 + y % 16),  # 12 != 0 mod 16
    ((x * 12 + y) // 16 * 16 + y % 8, {}, (x * 12 + y) // 16 * 16 + y % 8),  # not adjacent
    (fused // 512 * 4 + fused // 128 % 4, {}, fused // 128),
    (x // 8 * 8 - x, {}, Mul(FloorMod(x, c(8)), c(-1))),
    (x // 4 - x // 32 * 8, {}, x // 4 % 8),
    (x % 32 % 8, {}, x % 8),
    ((x * 6) // 3, {}, x * 2),
    ((x * 4) // 8, {}, x // 2),
    ((x * 4) % 8, {}, x % 2 * 4),
    ((x + 33) % 32, {}, (x + 1) % 32),
    ((x * 64 + y * 32 + i) // 32, {i: (0, 31)}, x * 2 + y),
    (Div(i_0 * 32 + i_1, c(32)), SPLIT, i_0),  # truncating == floor when non-negative
    # comparisons decided by the ranges
    (LT(i_0 * 32 + i_1, c(128)), SPLIT, TRUE),
    (LT(i_0 * 32 + i_1, c(127)), SPLIT, LT(i_0 * 32 + i_1, c(127))),
    (GE(i_0 * 32 + i_1, c(128)), SPLIT, FALSE),
    (LE(i_1, c(31)), SPLIT, TRUE),
    (GT(i_1, c(31)), SPLIT, FALSE),
    (EQ(i_0 - i_0, c(0)), {}, TRUE),
    (NE(i_1, c(40)), SPLIT, TRUE),
    (EQ(i_1, c(40)), SPLIT, FALSE),
    (LT(x, x + 1), {}, TRUE),
    # min / max under ranges
    (Min(i_1, c(32)), SPLIT, i_1),
    (Max(i_1, c(0)), SPLIT, i_1),
    (Min(c(100), i_1), SPLIT, i_1),
    (Min(x, x + 1), {}, x),
    (Max(x, x + 1), {}, x + 1),
    (Min(i_1, c(16)), SPLIT, Min(i_1, c(16))),
    (Min(c(16), x), {}, Min(x, c(16))),
    # logic and select
    (And(LT(i_1, c(32)), LT(x, y)), SPLIT, LT(x, y)),
    (Or(LT(i_1, c(32)), LT(x, y)), SPLIT, TRUE),
    (And(GE(i_1, c(32)), LT(x, y)), SPLIT, FALSE),
    (Not(Not(LT(x, y))), {}, LT(x, y)),
    (Not(LT(x, y)), {}, GE(x, y)),
    (Select(LT(i_1, c(32)), x, y), SPLIT, x),
    (Select(LT(x, y), z + 0, z), {}, z),
    # casts
    (Cast("int64", c(3)), {}, c(3, "int64")),
    (Cast("float32", c(3)), {}, f(3.0)),
    (Cast("int32", f(2.7)), {}, c(2)),
    (Cast("int32", x), {}, x),
    # indices inside loads are simplified
    (BufferLoad(Buffer("A", (128,)), ((i_0 * 32 + i_1) // 32 * 32 + (i_0 * 32 + i_1) % 32,)), SPLIT,
     BufferLoad(Buffer("A", (128,)), (i_0 * 32 + i_1,))),
]


@pytest.mark.parametrize("expr, ranges, expected", GOLDEN)
def test_simplify_golden(expr, ranges, expected):
    assert simplify(expr, ranges) == expected


@pytest.mark.parametrize("expr, ranges, expected", GOLDEN)
def test_simplify_is_idempotent(expr, ranges, expected):
    once = simplify(expr, ranges)
    assert simplify(once, ranges) == once


# --------------------------------------------------------------------------- floats


def test_float_constants_fold_in_their_dtype():
    assert simplify(f(0.1) + f(0.2)) == f(float(np.float32(0.1) + np.float32(0.2)))
    assert simplify(f(1.0, "float64") * f(3.0, "float64")) == f(3.0, "float64")
    assert simplify(Min(f(1.0), f(-2.0))) == f(-2.0)
    assert simplify(LT(f(1.0), f(2.0))) == TRUE


@pytest.mark.parametrize("expr", [
    fx + f(0.0),            # -0.0 + 0.0 is 0.0: not an identity
    fx * f(1.0),
    fx * f(0.0),            # nan * 0 is nan
    fx - fx,                # inf - inf is nan
    (fx + f(1.0)) + f(2.0),  # no reassociation: rounding differs
    Min(fx, fx),
    Div(fx, f(1.0)),
])
def test_float_semantics_are_not_changed(expr):
    assert simplify(expr) == expr


def test_float_constant_moves_right_of_commutative_ops_only():
    assert simplify(f(2.0) + fx) == fx + f(2.0)
    assert simplify(f(2.0) * fx) == fx * f(2.0)
    assert simplify(f(2.0) - fx) == f(2.0) - fx
    assert simplify(Div(f(2.0), fx)) == Div(f(2.0), fx)


def test_mixed_dtypes_are_left_alone():
    wide = Var("w", "int64")
    expr = Add(wide, Add(x, c(1)))
    assert simplify(expr) == expr
    assert simplify(Add(Cast("int64", x), c(0, "int64"))) == Cast("int64", x)


def test_division_by_zero_is_not_folded():
    assert simplify(FloorDiv(c(1), c(0))) == FloorDiv(c(1), c(0))
    assert simplify(FloorMod(x, c(0))) == FloorMod(x, c(0))


# --------------------------------------------------------------------------- bounds and proofs


@pytest.mark.parametrize("expr, ranges, expected", [
    (i_0 * 32 + i_1, SPLIT, (0, 127)),
    (i_0 - i_1, SPLIT, (-31, 3)),
    (i_0 * -2, SPLIT, (-6, 0)),
    (i_1 // 8, SPLIT, (0, 3)),
    (i_1 % 8, SPLIT, (0, 7)),
    (x % 8, {}, (0, 7)),
    (x + 1, {}, (None, None)),
    (x + 1, {x: (0, None)}, (1, None)),
    (x - x, {}, (0, 0)),
    (Min(i_1, c(10)), SPLIT, (0, 10)),
    (Max(i_1, c(10)), SPLIT, (10, 31)),
    (Select(LT(x, y), i_0, i_1), SPLIT, (0, 31)),
    (i_0 * i_1, SPLIT, (0, 93)),
    (Div(i_0 - 4, c(2)), SPLIT, (-2, 0)),
    (LT(x, y), {}, (0, 1)),
    (c(7), {}, (7, 7)),
])
def test_int_bounds(expr, ranges, expected):
    assert int_bounds(expr, ranges) == expected


def test_prove():
    assert prove(LT(i_0 * 32 + i_1, c(128)), SPLIT)
    assert not prove(LT(i_0 * 32 + i_1, c(100)), SPLIT)  # not proven is not "false"
    assert not prove(GE(i_0 * 32 + i_1, c(128)), SPLIT)
    assert prove(And(GE(i_1, c(0)), LT(i_1, c(32))), SPLIT)
    assert not prove(LT(x, c(0)))


def test_is_const_int():
    assert is_const_int(c(0))
    assert is_const_int(c(0), 0)
    assert not is_const_int(c(0), 1)
    assert not is_const_int(f(0.0))
    assert not is_const_int(x)


def test_simplify_stmt_uses_loop_ranges():
    from workbench.ir import BufferStore, For, ForKind

    A = Buffer("A", (128,))
    index = (i_0 * 32 + i_1) // 32 * 32 + (i_0 * 32 + i_1) % 32
    store = BufferStore(A, f(1.0), (FloorDiv(i_0 * 32 + i_1, c(32)) * 32 + FloorMod(i_1, c(32)),))
    nest = For(i_0, c(0), c(4), ForKind.SERIAL, For(i_1, c(0), c(32), ForKind.SERIAL, store))
    simplified = simplify_stmt(nest)
    assert simplified.body.body.indices == (i_0 * 32 + i_1,)
    # the same store outside the loops knows nothing about i_1
    assert simplify_stmt(BufferStore(A, f(1.0), (index,))).indices == (i_0 * 32 + i_1,)
    assert simplify_stmt(BufferStore(A, f(1.0), (i_1 % 32,))).indices == (i_1 % 32,)


def test_evaluate():
    A = Buffer("A", (4,), "int32")
    env = {x: 7, "y": -3, A: np.array([5, 6, 7, 8], dtype="int32")}
    assert evaluate(FloorDiv(x, y), env) == -3
    assert evaluate(FloorMod(x, y), env) == -2
    assert evaluate(Div(x, y), env) == -2
    assert evaluate(Select(LT(x, y), x, y), env) == -3
    assert evaluate(BufferLoad(A, (x - 4,)), env) == 8
    assert evaluate(Cast("float32", x), env) == 7.0
    assert math.isclose(evaluate(Call("exp", (f(1.0),)), {}), math.e, rel_tol=1e-6)


# --------------------------------------------------------------------------- property test

VARS = [(Var("a"), (0, 3)), (Var("b"), (0, 31)), (Var("c"), (-5, 5)), (Var("d"), (0, 63))]


def _int_exprs():
    leaves = st.one_of(
        st.sampled_from([v for v, _ in VARS]),
        st.integers(-40, 40).map(c),
    )

    def extend(children):
        divisor = st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64]).map(c)
        small = st.integers(-8, 8).map(c)
        compare = st.sampled_from([LT, LE, GT, GE, EQ, NE])
        return st.one_of(
            st.builds(Add, children, children),
            st.builds(Sub, children, children),
            st.builds(Mul, children, small),
            st.builds(Mul, small, children),
            st.builds(Mul, children, children),
            st.builds(FloorDiv, children, divisor),
            st.builds(FloorMod, children, divisor),
            st.builds(Div, children, divisor),
            st.builds(Min, children, children),
            st.builds(Max, children, children),
            st.builds(lambda op, a, b, t, e: Select(op(a, b), t, e), compare, children, children, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=12)


def _digit_exprs():
    """Sums of "digits" of one variable (x // a % b), the shapes split and fuse create."""
    d = Var("d")
    radix = st.sampled_from([1, 2, 4, 8, 16])
    digit = st.builds(lambda a, b, k: FloorMod(FloorDiv(d, c(a)), c(b)) * k, radix, radix,
                      st.integers(-16, 16))
    div = st.builds(lambda a, k: FloorDiv(d, c(a)) * k, radix, st.integers(-16, 16))
    return st.lists(st.one_of(digit, div, st.just(d)), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(parts=_digit_exprs(), value=st.integers(-70, 70))
def test_digit_sums_keep_their_value(parts, value):
    expr = parts[0]
    for part in parts[1:]:
        expr = expr + part
    simplified = simplify(expr)
    env = {Var("d"): value}
    assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified)


@settings(max_examples=400, deadline=None)
@given(expr=_int_exprs(), data=st.data())
def test_simplify_preserves_integer_value(expr, data):
    ranges = dict(VARS)
    simplified = simplify(expr, ranges)
    for _ in range(5):
        env = {v: data.draw(st.integers(lo, hi)) for v, (lo, hi) in VARS}
        assert evaluate(simplified, env) == evaluate(expr, env), (expr, simplified, env)
    lo, hi = int_bounds(expr, ranges)
    value = evaluate(expr, env)
    assert lo is None or lo <= value
    assert hi is None or value <= hi


@settings(max_examples=200, deadline=None)
@given(radices=st.lists(st.sampled_from([2, 3, 4, 8]), min_size=1, max_size=4),
       order=st.randoms(use_true_random=False), scale=st.integers(1, 3))
def test_mixed_radix_digits_recombine(radices, order, scale):
    """fuse(split(...)) indices: the sum of every digit of ``f``, times its stride, is ``f``."""
    f = Var("f")
    terms, stride = [], 1
    for radix in radices:
        digit = f // stride % radix if stride > 1 else f % radix
        terms.append(digit * (stride * scale))
        stride *= radix
    terms.append(f // stride * (stride * scale))  # the outermost digit has no "% radix"
    order.shuffle(terms)
    expr = terms[0]
    for term in terms[1:]:
        expr = expr + term
    assert simplify(expr) == (f if scale == 1 else f * scale)


@settings(max_examples=200, deadline=None)
@given(expr=_int_exprs(), data=st.data())
def test_comparisons_are_only_decided_when_true_everywhere(expr, data):
    ranges = dict(VARS)
    cond = LT(expr, c(data.draw(st.integers(-50, 50))))
    result = simplify(cond, ranges)
    env = {v: data.draw(st.integers(lo, hi)) for v, (lo, hi) in VARS}
    if is_const_int(result):
        assert evaluate(cond, env) == result.value


def test_docstring_examples():
    import doctest

    import workbench.ir.arith as arith

    assert doctest.testmod(arith).failed == 0
