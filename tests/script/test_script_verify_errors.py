"""DSL errors found by the well-formedness rules: the full message with the caret (golden)."""

import pytest

import workbench as wb
from workbench.script import DSLError


def parse_error(text: str) -> DSLError:
    with pytest.raises(DSLError) as info:
        wb.from_source(text, filename="case.py")
    return info.value


def test_out_of_bounds_read_at_the_last_row():
    err = parse_error('''@T.prim_func
def shift(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in T.serial(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi + 1]
''')
    assert err.kind == "out-of-bounds"
    assert str(err) == """\
block 'B': A[vi + 1] reads index 128 of dimension 0 of 'A', out of range 0..127 (at vi=127)
 --> case.py:6:23
  |
6 |             B[vi] = A[vi + 1]
  |                       ^^^^^^"""


def test_out_of_bounds_write_names_the_dimension():
    err = parse_error('''@T.prim_func
def f(A: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj - 1] = T.float32(1)
''')
    assert err.kind == "out-of-bounds"
    assert str(err) == """\
block 'A': A[vi, vj - 1] writes index -1 of dimension 1 of 'A', out of range 0..7 (at vi=0, vj=0)
 --> case.py:6:19
  |
6 |             A[vi, vj - 1] = T.float32(1)
  |                   ^^^^^^"""


def test_guarded_shift_is_accepted(rng):
    func = wb.from_source('''@T.prim_func
def shift(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.if_then_else(vi < 7, A[vi + 1], T.float32(0))
''')
    a = rng.standard_normal(8).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    wb.build(func, target="cpu")(a, b)
    assert b.tolist() == a[1:].tolist() + [0.0]


def test_duplicate_block_name():
    err = parse_error('''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = B[vi] * T.float32(2)
''')
    assert err.kind == "duplicate-name"
    assert str(err) == """\
block 'B' is already defined (first defined on line 4); block names must be unique
 --> case.py:8:22
  |
8 |         with T.block("B"):
  |                      ^^^"""


def test_negative_parameter_shape():
    err = parse_error('''@T.prim_func
def f(A: T.Buffer((8, -2), "float32")):
    A[0, 0] = T.float32(1)
''')
    assert err.kind == "shape"
    assert str(err) == """\
buffer 'A' has a negative extent -2 in dimension 1 of its shape (8, -2)
 --> case.py:2:23
  |
2 | def f(A: T.Buffer((8, -2), "float32")):
  |                       ^^"""


def test_negative_allocation_shape():
    err = parse_error('''@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((-1, 4), "float32")
    A[0] = T.float32(1)
''')
    assert err.kind == "shape"
    assert err.message == "buffer 'S' has a negative extent -1 in dimension 0 of its shape (-1, 4)"
    assert (err.lineno, err.col) == (3, 25)


def test_zero_extent_buffer_is_accepted():
    func = wb.from_source('''@T.prim_func
def f(A: T.Buffer((0, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.float32(1)
''')
    assert func.params[0].shape == (0, 4)


def test_loop_variable_inside_a_block():
    err = parse_error('''@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[i]
''')
    assert err.kind == "scope"
    assert err.lineno == 4 and err.source_line.strip() == 'with T.block("B"):'
