"""DSL errors: one test per reason, checking the class, the message and the caret."""

import inspect

import numpy as np
import pytest

import workbench as wb
from workbench import T
from workbench.script import DSLError
from workbench.script.parser import Parser

HEAD = '''@T.prim_func
def f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
      I: T.Buffer((8, 8), "int32"), D: T.Buffer((8, 8), "float64")):
'''


def block(line: str, remap: str = "vi, vj = T.axis.remap('SS', [i, j])") -> str:
    return ("    for i, j in T.grid(8, 8):\n"
            "        with T.block('B'):\n"
            f"            {remap}\n"
            f"            {line}\n")


def parse_error(body: str) -> DSLError:
    with pytest.raises(DSLError) as info:
        wb.from_source(HEAD + body, filename="case.py")
    return info.value


def caret_column(err: DSLError) -> int:
    """1-based column of the first caret in the rendered message."""
    last = str(err).splitlines()[-1]
    return last.index("^") - last.index("|") - 1


def check(err: DSLError, kind: str, message: str, lineno: int, snippet: str) -> None:
    assert isinstance(err, wb.DSLError) and isinstance(err, Exception)
    assert err.kind == kind
    assert err.message == message
    assert err.filename == "case.py" and err.lineno == lineno
    assert err.source_line.index(snippet) + 1 == err.col
    assert caret_column(err) == err.col
    assert f"--> case.py:{lineno}:{err.col}" in str(err)
    assert f"{lineno} | {err.source_line}" in str(err)


def test_while_is_unsupported():
    err = parse_error("    while True:\n        pass\n")
    check(err, "unsupported", "while loops are not supported in the DSL; use for ... in "
          "T.serial(n)", 4, "while")


def test_try_is_unsupported():
    err = parse_error("    try:\n        pass\n    except Exception:\n        pass\n")
    check(err, "unsupported", "try statements are not supported in the DSL", 4, "try")


def test_list_comprehension_is_unsupported():
    err = parse_error(block("B[vi, vj] = [x for x in A]"))
    check(err, "unsupported", "a list comprehension is not supported in a DSL expression", 7,
          "[x for")


def test_unknown_function():
    err = parse_error(block("B[vi, vj] = foo(A[vi, vj])"))
    check(err, "unsupported", "unknown function 'foo': DSL functions are spelled T.name "
          "(T.exp, T.max, T.Cast, ...)", 7, "foo")


def test_unknown_name_suggests_close_match():
    err = parse_error(block("B[vi, vj] = A[vi, vjj]"))
    check(err, "unknown-name", "unknown name 'vjj' (did you mean 'vj'?)", 7, "vjj")


def test_unknown_buffer_suggests_a_buffer():
    err = parse_error(block("B[vi, vj] = AA[vi, vj]"))
    check(err, "unknown-name", "unknown name 'AA' (did you mean 'A'?)", 7, "AA")


def test_wrong_number_of_indices():
    err = parse_error(block("B[vi, vj] = A[vi]"))
    check(err, "index-count", "buffer 'A' has 2 dimensions (8, 8) but is indexed with 1 index",
          7, "A[vi]")


def test_remap_letters_and_loops_disagree():
    err = parse_error(block("B[vi, vj] = A[vi, vj]", "vi, vj = T.axis.remap('SSR', [i, j])"))
    check(err, "shape", "T.axis.remap('SSR', ...) has 3 kind letters, 2 loop variables and 2 "
          "names; they must agree", 6, "T.axis.remap")


def test_loop_extent_not_int():
    err = parse_error("    for i in T.serial(2.5):\n        pass\n")
    check(err, "shape", "a loop extent must be an int, got 2.5", 4, "2.5")


def test_grid_names_and_extents_disagree():
    err = parse_error("    for i, j in T.grid(8, 8, 8):\n        pass\n")
    check(err, "shape", "T.grid has 3 extents but the loop names 2 variables", 4, "i, j")


def test_iter_var_extent_disagrees_with_loop():
    err = parse_error(block("B[vi, 0] = A[vi, 0]", "vi = T.axis.spatial(4, i)"))
    check(err, "shape", "block iter var 'vi' has extent 4 but is bound to loop 'i' of extent 8",
          6, "i)")


def test_int_load_into_float_buffer_needs_cast():
    err = parse_error(block("B[vi, vj] = I[vi, vj]"))
    check(err, "dtype", "dtype mismatch: storing an int32 value into 'B' (float32); use "
          "T.Cast(\"float32\", ...)", 7, "I[vi")


def test_float32_plus_float64():
    err = parse_error(block("B[vi, vj] = A[vi, vj] + D[vi, vj]"))
    check(err, "dtype", "dtype mismatch in '+': float32 and float64 (use T.Cast to convert one "
          "side)", 7, "A[vi, vj] +")


def test_float_literal_in_index():
    err = parse_error(block("B[vi, vj] = A[vi * 0.5, vj]"))
    check(err, "dtype", "dtype mismatch: float literal 0.5 used with an int32 expression", 7,
          "vi * 0.5")


def test_unknown_dtype():
    err = parse_error(block("B[vi, vj] = T.Cast('float33', I[vi, vj])"))
    check(err, "dtype", "unknown dtype 'float33' (did you mean 'float32'?)", 7, "'float33'")


def test_unknown_dtype_in_signature():
    with pytest.raises(DSLError) as info:
        wb.from_source('@T.prim_func\ndef f(A: T.Buffer((4,), "flaot32")):\n    pass\n')
    assert info.value.message == "unknown dtype 'flaot32' (did you mean 'float32'?)"
    assert (info.value.lineno, info.value.col) == (2, 25)


def test_unknown_intrinsic():
    err = parse_error(block("B[vi, vj] = T.expp(A[vi, vj])"))
    check(err, "intrinsic", "unknown intrinsic or T function 'T.expp' (did you mean 'T.exp'?)",
          7, "T.expp")


def test_intrinsic_arity():
    err = parse_error(block("B[vi, vj] = T.exp(A[vi, vj], 2.0)"))
    check(err, "intrinsic", "T.exp takes 1 positional argument, got 2", 7, "T.exp")
    err = parse_error(block("B[vi, vj] = T.pow(A[vi, vj])"))
    check(err, "intrinsic", "T.pow takes 2 arguments, got 1", 7, "T.pow")


def test_intrinsic_of_int_needs_cast():
    err = parse_error(block("B[vi, vj] = T.exp(I[vi, vj])"))
    check(err, "dtype", "T.exp needs a float argument, got int32 (use T.Cast)", 7, "T.exp")


def test_reduction_without_init():
    err = parse_error(block("B[vi, 0] = B[vi, 0] + A[vi, vk]", "vi, vk = T.axis.remap('SR', [i, j])"))
    check(err, "missing-init", "block 'B' reduces over vk into 'B' but has no `with T.init():` "
          "to initialise it", 5, "T.block('B')")


def test_syntax_error():
    err = parse_error("    for i in T.serial(8)\n        pass\n")
    assert err.kind == "syntax" and err.message == "invalid Python syntax: expected ':'"
    assert (err.lineno, err.col) == (4, 25)


def test_local_variable_assignment():
    err = parse_error("    x = 1\n")
    check(err, "unsupported", "only buffer stores (C[i] = ...), T.axis.* bindings and "
          "T.alloc_buffer(...) can be assigned in the DSL", 4, "x = 1")


def test_buffer_used_as_value():
    err = parse_error(block("B[vi, vj] = A"))
    check(err, "unsupported", "buffer 'A' used as a value; index it, as in A[i, i]", 7, "A")


def test_internal_failure_becomes_dsl_error(monkeypatch):
    def broken(self, node):
        raise KeyError("boom")

    monkeypatch.setattr(Parser, "stmt_If", broken)
    err = parse_error("    if 1 < 2:\n        pass\n")
    check(err, "internal", "cannot parse this statement (KeyError: 'boom')", 4, "if")
    assert err.__cause__ is None and err.__suppress_context__


def test_prim_func_error_points_at_the_real_file_and_line():
    with pytest.raises(DSLError) as info:
        @T.prim_func
        def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
            for i in T.serial(8):
                with T.block("C"):
                    vi = T.axis.spatial(8, i)
                    C[vi] = C[vi] + Q[vi]  # noqa: F821
    err = info.value
    lines, start = inspect.getsourcelines(test_prim_func_error_points_at_the_real_file_and_line)
    expected_line = start + next(n for n, line in enumerate(lines) if "+ Q[vi]" in line)
    assert err.filename == __file__
    assert err.lineno == expected_line
    assert err.source_line.strip() == "C[vi] = C[vi] + Q[vi]  # noqa: F821"
    assert err.col == err.source_line.index("Q") + 1  # the indentation removed is added back
    assert str(err).splitlines()[0] == "unknown name 'Q' (the buffers are 'A', 'C')"
    assert caret_column(err) == err.col


def test_function_without_source():
    namespace = {"T": T}
    exec('def f(A: T.Buffer((4,), "float32")):\n    pass\n', namespace)
    with pytest.raises(DSLError, match="cannot read the source of 'f'"):
        T.prim_func(namespace["f"])


# ---- axis kinds of a reduction (issue 17: accepted, and the reference agreed) -----------

REDUCE_HEAD = '''@T.prim_func
def f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
'''


def reduction(remap: str, store: str, init: str = "B[vi] = T.float32(0)") -> str:
    return ("    for i, k in T.grid(8, 8):\n"
            "        with T.block('B'):\n"
            f"            {remap}\n"
            "            with T.init():\n"
            f"                {init}\n"
            f"            {store}\n")


def reduce_error(body: str) -> DSLError:
    with pytest.raises(DSLError) as info:
        wb.from_source(REDUCE_HEAD + body, filename="case.py")
    return info.value


def test_a_reduction_axis_declared_spatial_is_refused():
    err = reduce_error(reduction("vi, vk = T.axis.remap('SS', [i, k])",
                                 "B[vi] = B[vi] + A[vi, vk]"))
    check(err, "axis-kind", "block 'B' reduces (it has a T.init()) but its spatial iter var "
          "'vk' indexes none of what it writes ('B'): every vk updates the same element, so "
          "it is a reduction axis; declare it with 'R' in T.axis.remap or T.axis.reduce",
          5, "vk")


def test_a_reduction_axis_declared_spatial_alone_is_refused():
    body = ("    for i, k in T.grid(8, 8):\n"
            "        with T.block('B'):\n"
            "            vi = T.axis.spatial(8, i)\n"
            "            vk = T.axis.spatial(8, k)\n"
            "            with T.init():\n"
            "                B[vi] = T.float32(0)\n"
            "            B[vi] += A[vi, vk]\n")
    err = reduce_error(body)
    assert err.kind == "axis-kind" and err.lineno == 6
    assert err.source_line.index("vk") + 1 == err.col == caret_column(err)


def test_a_reduce_axis_indexing_the_store_is_refused():
    err = reduce_error(reduction("vi, vk = T.axis.remap('RR', [i, k])",
                                 "B[vk] = B[vk] + A[vi, vk]", init="B[vk] = T.float32(0)"))
    check(err, "axis-kind", "reduce iter var 'vk' indexes the store to 'B' in block 'B': a "
          "reduction writes the same element for every value of its reduce axes; declare it "
          "spatial ('S' in T.axis.remap or T.axis.spatial), or index by the spatial axes "
          "only", 7, "vk")
    err = reduce_error(reduction("vi, vk = T.axis.remap('SR', [i, k])",
                                 "B[vi + vk - vk] = B[vi] + A[vi, vk]"))
    assert err.kind == "axis-kind" and err.lineno == 8
    assert err.source_line.index("vi + vk") + 1 == err.col


def test_a_correct_reduction_still_parses_and_computes():
    func = wb.from_source(REDUCE_HEAD + reduction("vi, vk = T.axis.remap('SR', [i, k])",
                                                  "B[vi] = B[vi] + A[vi, vk]"))
    a = np.random.default_rng(0).random((8, 8), dtype=np.float32)
    b = np.full(8, 7.0, np.float32)
    wb.build(func, target="numpy")(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_a_negative_loop_extent_is_refused():
    err = parse_error("    for i in T.serial(-3):\n        pass\n")
    check(err, "shape", "a loop extent must be >= 0, got -3", 4, "-3")
    err = parse_error("    for i in T.serial(5, 2):\n        pass\n")
    check(err, "shape", "a loop extent must be >= 0, got -3", 4, "2)")
    assert wb.from_source(HEAD + "    for i in T.serial(0):\n        pass\n").params  # empty: ok


def test_a_parameter_default_is_refused():
    with pytest.raises(DSLError) as info:
        wb.from_source('@T.prim_func\ndef f(A: T.Buffer((8,), "float32") = None):\n    pass\n',
                       filename="case.py")
    check(info.value, "unsupported", "a DSL parameter takes no default value (every buffer is "
          "passed to the kernel)", 2, "None")


def test_a_store_outside_the_declared_writes_is_refused():
    err = parse_error(block("T.writes(A[vi, vj])\n            B[vi, vj] = A[vi, vj]"))
    check(err, "region", "block 'B' stores into 'B' but its T.writes(...) names 'A'", 7,
          "T.writes")
    ok = wb.from_source(HEAD + block("T.writes(B[vi, vj])\n            B[vi, vj] = A[vi, vj]"))
    assert "T.writes(B[vi, vj])" in ok.script()
