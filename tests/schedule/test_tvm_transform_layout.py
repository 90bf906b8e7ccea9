"""TVM's transform_layout tests
(tests/python/s_tir/schedule/test_tir_schedule_transform_layout.py), re-expressed in the
DSL with smaller shapes; the pad_value cases check the numbers and the padding's contents.

Skipped cases (transform_block_layout, sampling, symbolic shapes, int64, opaque blocks,
assume_injective_transform, buffer-dependent pad values) and differences (where the padding
is written) are listed in docs/decisions.d/loopsarg.md.
"""

import numpy as np
import pytest
from schedule_checks import (
    assert_structural,
    check_numbers,
    raises_unchanged,
    random_inputs,
    verify_trace_roundtrip,
)

from workbench import T
from workbench.backends import build
from workbench.schedule import (
    InvalidArgumentError,
    PaddingNotInvertibleError,
    PaddingRequiredError,
    Schedule,
)


def packed_index_map_func(m, n):
    return m // 8, n // 8, m % 8, n % 8


@T.prim_func
def two_elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_elementwise_transformed_intermediate_buffer(
    A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")
):
    B = T.alloc_buffer((2, 2, 8, 8), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi // 8, vj // 8, vi % 8, vj % 8] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi, vj] = B[vi // 8, vj // 8, vi % 8, vj % 8] + T.float32(1)


@T.prim_func
def two_elementwise_transformed_input_buffer(
    A: T.Buffer((2, 2, 8, 8), "float32"), C: T.Buffer((16, 16), "float32")
):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi // 8, vj // 8, vi % 8, vj % 8] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_elementwise_transformed_output_buffer(
    A: T.Buffer((16, 16), "float32"), C: T.Buffer((2, 2, 8, 8), "float32")
):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi // 8, vj // 8, vi % 8, vj % 8] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_elementwise_unit_dim(A: T.Buffer((1, 16), "float32"), C: T.Buffer((1, 16), "float32")):
    B = T.alloc_buffer((1, 16), "float32")
    for i, j in T.grid(1, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(1, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i_1, j_1])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def producer_consumer_14(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((14,), "int32")
    for i in T.serial(14):
        with T.block("block"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] * 3
    for i_1 in T.serial(14):
        with T.block("other"):
            vi = T.axis.spatial(14, i_1)
            C[vi] = B[vi] + 1


def test_two_elementwise_transform_intermediate_buffer(rng):
    """test_tir_schedule_transform_layout.py::test_two_elementwise_transform_intermediate_buffer"""
    for buffer in ("B", ("write", 0)):
        sch = Schedule(two_elementwise)
        sch.transform_layout(sch.get_block("B"), buffer, packed_index_map_func)
        assert_structural(sch, two_elementwise_transformed_intermediate_buffer)
        verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_two_elementwise_transform_input_buffer(rng):
    """test_tir_schedule_transform_layout.py::test_two_elementwise_transform_input_buffer"""
    sch = Schedule(two_elementwise)
    sch.transform_layout(sch.get_block("B"), ("read", 0), packed_index_map_func)
    assert_structural(sch, two_elementwise_transformed_input_buffer)
    verify_trace_roundtrip(sch)
    a = rng.standard_normal((16, 16)).astype("float32")
    packed = a.reshape(2, 8, 2, 8).transpose(0, 2, 1, 3).copy()
    for target in ("numpy", "cpu"):
        c = np.zeros((16, 16), "float32")
        build(sch, target=target)(packed, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_two_elementwise_transform_output_buffer(rng):
    """test_tir_schedule_transform_layout.py::test_two_elementwise_transform_output_buffer"""
    sch = Schedule(two_elementwise)
    sch.transform_layout(sch.get_block("C"), "C", packed_index_map_func)
    assert_structural(sch, two_elementwise_transformed_output_buffer)
    verify_trace_roundtrip(sch)
    a = rng.standard_normal((16, 16)).astype("float32")
    c = np.zeros((2, 2, 8, 8), "float32")
    build(sch, target="cpu")(a, c)
    np.testing.assert_allclose(c.transpose(0, 2, 1, 3).reshape(16, 16), a * 2 + 1, rtol=1e-6)


def test_two_elementwise_unit_dim():
    """test_tir_schedule_transform_layout.py::test_two_elementwise_unit_dim"""
    sch = Schedule(two_elementwise_unit_dim)
    sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (i, j))
    assert_structural(sch, two_elementwise_unit_dim)
    verify_trace_roundtrip(sch)


@pytest.mark.parametrize("pad_value", [None, 42])
def test_no_padding_multiple_usage(rng, pad_value):
    """test_tir_schedule_transform_layout.py::test_no_padding and
    test_no_padding_multiple_usage: without padding, pad_value changes nothing."""

    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), C: T.Buffer((16,), "int32")):
        B = T.alloc_buffer((16,), "int32")
        for i in T.serial(16):
            with T.block("block"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * 3
        for i_1 in T.serial(16):
            with T.block("other"):
                vi = T.axis.spatial(16, i_1)
                C[vi] = B[vi]

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), C: T.Buffer((16,), "int32")):
        B = T.alloc_buffer((4, 4), "int32")
        for i in T.serial(16):
            with T.block("block"):
                vi = T.axis.spatial(16, i)
                B[vi // 4, vi % 4] = A[vi] * 3
        for i_1 in T.serial(16):
            with T.block("other"):
                vi = T.axis.spatial(16, i_1)
                C[vi] = B[vi // 4, vi % 4]

    sch = Schedule(before)
    sch.transform_layout(sch.get_block("block"), "B", lambda i: (i // 4, i % 4), pad_value)
    assert_structural(sch, expected)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_error_if_padding_forbidden():
    """test_tir_schedule_transform_layout.py::test_error_if_padding_forbidden"""
    sch = Schedule(producer_consumer_14)
    err = raises_unchanged(
        sch, PaddingRequiredError,
        sch.transform_layout,
        sch.get_block("block"),
        "B",
        lambda i: (i // 4, i % 4),
    )
    assert err.shape == (4, 4)


def test_error_on_wrong_padding_type():
    """test_tir_schedule_transform_layout.py::test_error_on_wrong_padding_type and
    test_error_on_non_matching_types: the pad value's type must match the buffer's."""
    sch = Schedule(producer_consumer_14)
    block = sch.get_block("block")
    imap = "lambda i: (i // 4, i % 4)"
    raises_unchanged(sch, InvalidArgumentError, sch.transform_layout, block, "B", imap, 0.0)
    raises_unchanged(sch, InvalidArgumentError, sch.transform_layout, block, "B", imap, True)
    sch = Schedule(two_elementwise)
    raises_unchanged(
        sch, InvalidArgumentError,
        sch.transform_layout,
        sch.get_block("B"),
        "B",
        lambda i, j: (i // 3, j, i % 3),
        0,
    )


def test_padded_transform(rng):
    """test_tir_schedule_transform_layout.py::test_padded_transform_if_then_else (TVM
    rewrites the producer with T.if_then_else; we add a block filling the padding): the
    readers see the original values."""
    sch = Schedule(producer_consumer_14)
    sch.transform_layout(sch.get_block("block"), "B", lambda i: (i // 4, i % 4), pad_value=0)
    pad = sch.get(sch.get_block("B_pad"))
    assert pad.writes[0].buffer.shape == (4, 4)
    assert "pad_value=0" in str(sch.trace)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_padded_transform_of_output(rng):
    """test_tir_schedule_transform_layout.py::test_padded_transform_without_loop, with a
    loop: the padding of an output parameter holds pad_value after the kernel ran."""
    sch = Schedule(producer_consumer_14)
    sch.transform_layout(sch.get_block("other"), "C", lambda i: (i // 4, i % 4), pad_value=-7)
    a = random_inputs(sch.func_before, rng)[0]
    for target in ("numpy", "cpu"):
        c = np.zeros((4, 4), "int32")
        build(sch, target=target)(a.copy(), c)
        assert c.reshape(16)[:14].tolist() == (a * 3 + 1).tolist()
        assert c.reshape(16)[14:].tolist() == [-7, -7]


def test_padded_transform_2d(rng):
    """Padding on two dimensions of a float buffer (14 x 10 into 4 x 4 x 2 x 5)."""

    @T.prim_func
    def before(A: T.Buffer((14, 10), "float32"), C: T.Buffer((14, 10), "float32")):
        B = T.alloc_buffer((14, 10), "float32")
        for i, j in T.grid(14, 10):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i_1, j_1 in T.grid(14, 10):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i_1, j_1])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    sch = Schedule(before)
    sch.transform_layout(
        sch.get_block("B"), "B", lambda i, j: (i // 4, j // 5, i % 4, j % 5), pad_value=0.0
    )
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_padded_transform_of_input_is_not_filled(rng):
    """test_tir_schedule_transform_layout.py::test_padded_transform_of_input_creates_assumption:
    TVM records an assumption; here nothing writes an input, so no fill block is added."""
    sch = Schedule(producer_consumer_14)
    sch.transform_layout(sch.get_block("block"), "A", lambda i: (i // 4, i % 4), pad_value=0)
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == ["B"]
    assert "A_pad" not in sch.mod.script()
    a = rng.integers(1, 7, size=14).astype("int32")
    padded = np.zeros(16, "int32")
    padded[:14] = a
    c = np.zeros(14, "int32")
    build(sch, target="numpy")(padded.reshape(4, 4), c)
    assert c.tolist() == (a * 3 + 1).tolist()


def test_padding_needs_an_invertible_map():
    """Not in TVM's file: padding of a map that is not made of i // c and i % c pairs (TVM's
    iter-map inverse handles more maps)."""
    sch = Schedule(producer_consumer_14)
    raises_unchanged(
        sch, PaddingNotInvertibleError,
        sch.transform_layout,
        sch.get_block("block"),
        "B",
        lambda i: (i * 2,),  # injective onto 27 positions, every other one padding
        0,
    )
