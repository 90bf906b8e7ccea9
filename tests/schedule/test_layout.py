"""transform_layout: golden IR (packing B into panels, NCHW -> NHWC), numerics with the
transformed parameter layouts on the numpy reference and the CPU backend, every error
class, the index map's text form in traces and JSON replay, legal_primitives rows."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedule_checks import raises_unchanged
from schedule_examples import matmul, scale
from test_memory import TARGETS, assert_same, before_after, check_golden
from work import work

from workbench import T
from workbench.backends import build
from workbench.ir import FloatImm
from workbench.ops.conv import conv2d_nchw
from workbench.schedule import (
    BufferIndexError,
    BufferNotFoundError,
    IndexMapArityError,
    IndexMapNotBijectiveError,
    IndexMapOperationError,
    InvalidArgumentError,
    Schedule,
    Trace,
    TraceError,
)
from workbench.schedule.layout import IndexMap
from workbench.schedule.layout_index_map import proves_injective


def pack_panels(b: np.ndarray, width: int) -> np.ndarray:
    """``packed[j // width, k, j % width] = b[k, j]``."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k, n // width, width).transpose(1, 0, 2))


@T.prim_func
def four(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] + T.float32(1)


# --- golden IR ----------------------------------------------------------------------------


def test_pack_parameter_into_panels(request):
    sch = Schedule(matmul)
    sch.transform_layout(sch.get_block("C"), ("read", 2), lambda k, j: (j // 4, k, j % 4))
    check_golden(request, "layout_matmul_pack_param", before_after(sch))
    assert sch.mod.param("B").shape == (4, 16, 4)  # the signature changed
    assert "B[vj // 4, vk, vj % 4]" in sch.mod.script()


def test_pack_a_global_cache_into_panels(request):
    sch = Schedule(matmul)
    b_global = sch.cache_read(sch.get_block("C"), 2, "global")
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 4, k, j % 4))
    check_golden(request, "layout_matmul_pack_cache", before_after(sch))
    assert sch.mod.params == matmul.params  # only the intermediate changed
    assert sch.mod.root_block.alloc_buffers[0].shape == (4, 16, 4)


def conv():
    return conv2d_nchw(1, 4, 6, 6, 4, 3, 3, padding=1)


def test_nchw_to_nhwc_input(request):
    sch = Schedule(conv())
    sch.transform_layout(sch.get_block("pad_temp"), "data", lambda n, c, h, w: (n, h, w, c))
    check_golden(request, "layout_conv2d_nhwc", before_after(sch))
    assert sch.mod.param("data").shape == (1, 6, 6, 4)


def test_regions_of_a_window_are_mapped():
    # a window region (several elements per dimension) becomes the mapped box
    sch = Schedule(conv())
    sch.transform_layout(sch.get_block("conv2d_nchw"), "pad_temp", lambda n, c, h, w: (n, h, w, c))
    block = sch.get(sch.get_block("conv2d_nchw"))
    (region,) = [r for r in block.reads if r.buffer.name == "pad_temp"]
    assert region.buffer.shape == (1, 8, 8, 4)
    from workbench.ir.expr_text import expr_text

    assert [expr_text(r.min) for r in region.region] == ["vn", "vy + vry", "vx + vrx", "vrc"]


# --- numerics -----------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_packed_parameter_numerics(target, rng):
    sch = Schedule(matmul)
    block = sch.get_block("C")
    sch.transform_layout(block, ("read", 2), lambda k, j: (j // 4, k, j % 4))
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, factors=[None, 4])
    sch.reorder(i, jo, k, ji)
    a, b = (rng.standard_normal((16, 16)).astype("float32") for _ in range(2))
    want = np.zeros((16, 16), "float32")
    build(matmul, target="numpy")(a, b, want)
    got = np.zeros((16, 16), "float32")
    build(sch, target=target)(a, pack_panels(b, 4), got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_packed_cache_numerics(target):
    sch = Schedule(matmul)
    block = sch.get_block("C")
    b_global = sch.cache_read(block, 2, "global")
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 4, k, j % 4))
    c_local = sch.cache_write(block, 0, "local")
    sch.transform_layout(c_local, ("read", 0), lambda i, j: (j, i))  # transposed accumulator
    assert_same(sch, target)


@pytest.mark.parametrize("target", TARGETS)
def test_nhwc_numerics(target, rng):
    func = conv()
    sch = Schedule(func)
    sch.transform_layout(sch.get_block("pad_temp"), "data", lambda n, c, h, w: (n, h, w, c))
    sch.transform_layout(sch.get_block("pad_temp"), "pad_temp", lambda n, c, h, w: (n, h, w, c))
    data = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    weight = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    want = np.zeros((1, 4, 6, 6), "float32")
    build(func, target="numpy")(data, weight, want)
    got = np.zeros((1, 4, 6, 6), "float32")
    build(sch, target=target)(np.ascontiguousarray(data.transpose(0, 2, 3, 1)), weight, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# --- errors -------------------------------------------------------------------------------


def test_wrong_number_of_arguments():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    err = raises_unchanged(
        sch, IndexMapArityError, sch.transform_layout, block, ("read", 1), lambda i: (i,)
    )
    assert err.message == "the index map takes 1 argument, buffer 'A' has 2 dimensions (16, 16)"
    assert err.suggestion == "write lambda i0, i1: (...)"
    assert "# <-- the index map takes 1 argument" in str(err)
    err = raises_unchanged(
        sch, IndexMapArityError, sch.transform_layout, block, ("read", 1), lambda *ix: ix
    )
    assert err.message.startswith("the index map takes a variable number of arguments")
    raises_unchanged(
        sch, IndexMapArityError, sch.transform_layout, block, "A", "lambda i, j, k: (i, j, k)"
    )


@pytest.mark.parametrize(
    ("index_map", "what"),
    [
        (lambda i, j: (i / 2, j), "true division '/' (use '//')"),
        (lambda i, j: (FloatImm(0.5), j), "the float constant 0.5"),
        (
            lambda i, j: (i * 0.5, j),  # the IR refuses int * float when the node is built
            "something index expressions do not support (MixedOperandTypeError: Mul: cannot mix "
            "int32 operand Var(name='i', dtype='int32') with float32 operand "
            "FloatImm(value=0.5, dtype='float32'); cast one of them (Cast / T.Cast))",
        ),
        (lambda i, j: (i // j, j), "'//' or '%' by something other than a positive constant"),
        (lambda i, j: ("i", j), "a str ('i') as an index"),
        (
            lambda i, j: (i**2, j),
            "something index expressions do not support (TypeError: "
            "unsupported operand type(s) for ** or pow(): 'Var' and 'int')",
        ),
    ],
)
def test_non_integer_operations(index_map, what):
    sch = Schedule(matmul)
    err = raises_unchanged(
        sch,
        IndexMapOperationError,
        sch.transform_layout,
        sch.get_block("C"),
        ("read", 1),
        index_map,
    )
    assert err.message == f"the index map for 'A' uses {what}"


def test_not_bijective_shape_mismatch():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    err = raises_unchanged(
        sch, IndexMapNotBijectiveError, sch.transform_layout, block, ("read", 1), lambda i, j: (i,)
    )
    assert err.message == "the index map is not a bijection of buffer 'A' (16, 16)"
    assert err.detail == (
        "index map lambda i, j: (i,): it maps 256 elements onto the new shape (16,) of 16 "
        "positions; a layout must have exactly one position per element"
    )
    sch = Schedule(scale)
    err = raises_unchanged(
        sch,
        IndexMapNotBijectiveError,
        sch.transform_layout,
        sch.get_block("B"),
        "A",
        lambda i: (i // 2,),
    )
    assert "onto the new shape (50,) of 50 positions" in err.why


def test_not_bijective_collision_names_two_indices():
    sch = Schedule(four)
    err = raises_unchanged(
        sch,
        IndexMapNotBijectiveError,
        sch.transform_layout,
        sch.get_block("B"),
        "A",
        lambda i: (i % 2 * 2 + i // 3,),
    )
    assert err.why == "(0,) and (2,) both map to (0,)"


def test_negative_new_index():
    sch = Schedule(four)
    err = raises_unchanged(
        sch,
        IndexMapNotBijectiveError,
        sch.transform_layout,
        sch.get_block("B"),
        "A",
        lambda i: (i - 1,),
    )
    assert err.why == (
        "new index 0 (i - 1) can be negative or unbounded (bounds -1..2); "
        "new indices must start at 0"
    )


def test_bijective_maps_are_accepted():
    sch = Schedule(four)
    sch.transform_layout(sch.get_block("B"), "A", lambda i: (3 - i,))  # reversal
    sch.transform_layout(sch.get_block("B"), "B", lambda i: (i % 2, i // 2))
    assert sch.mod.param("B").shape == (2, 2)
    assert "B[vi % 2, vi // 2] = A[3 - vi]" in sch.mod.script()


def test_unknown_buffer_and_bad_buffer_arguments():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    err = raises_unchanged(
        sch, BufferNotFoundError, sch.transform_layout, block, "Bx", lambda i, j: (j, i)
    )
    assert err.message == "no buffer named 'Bx' in matmul"
    assert err.detail == "buffers in the function: A, B, C"
    assert err.suggestion == "did you mean 'B'?"
    err = raises_unchanged(
        sch, BufferIndexError, sch.transform_layout, block, ("write", 1), lambda i, j: (j, i)
    )
    assert err.detail == "it writes 1 buffer: 0: C"
    raises_unchanged(
        sch, InvalidArgumentError, sch.transform_layout, block, ("load", 0), lambda i, j: (j, i)
    )
    raises_unchanged(sch, InvalidArgumentError, sch.transform_layout, block, "A", 42)


def test_index_map_text_is_parsed_safely():
    text = "lambda k, j: (j // 16, k, j % 16)"
    assert IndexMap.from_text(text).text() == text
    assert IndexMap.from_text("lambda i: (3 - i,)").text() == "lambda i: (3 - i,)"
    assert IndexMap.from_text("lambda i: (-i + 3,)").text() == "lambda i: (-i + 3,)"
    for bad in [
        "__import__('os').system('true')",
        "lambda i: (__import__('os'),)",
        "lambda i: (i.real,)",
        "lambda i, j=1: (i,)",
        "lambda i: (q,)",
        "lambda i: (i ** 2,)",
    ]:
        with pytest.raises(ValueError):
            IndexMap.from_text(bad)


# --- traces and legality ------------------------------------------------------------------


def test_trace_prints_the_index_map_and_replays_from_json():
    sch = Schedule(matmul)
    b_global = sch.cache_read(sch.get_block("C"), 2, "global")
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 4, k, j % 4))
    sch.transform_layout(sch.get_block("C"), "A", lambda i, k: (k, i))
    assert str(sch.trace).splitlines()[2:] == [
        'sch.transform_layout(b1, ["write", 0], "lambda k, j: (j // 4, k, j % 4)")',
        'b2 = sch.get_block("C")',
        'sch.transform_layout(b2, "A", "lambda i, k: (k, i)")',
    ]
    again = Trace.from_json(sch.trace.to_json()).apply(matmul)
    assert again.mod == sch.mod and again.trace == sch.trace


def test_trace_with_a_bad_index_map_is_refused():
    sch = Schedule(matmul)
    sch.transform_layout(sch.get_block("C"), "A", lambda i, k: (k, i))
    text = sch.trace.to_json().replace("lambda i, k: (k, i)", "lambda i, k: (open(k), i)")
    with pytest.raises(TraceError, match="attribute 'index_map' must be an index map text"):
        Trace.from_json(text)


def test_legal_primitives_row():
    sch = Schedule(matmul)
    assert sch.legal_primitives(sch.get_block("C"))["transform_layout"].legal
    root = sch.get_block("root")
    row = sch.legal_primitives(root)["transform_layout"]
    assert not row.legal and row.error == "BufferIndexError"


# --- property: random bijective maps keep the results ---------------------------------------


@st.composite
def bijective_maps(draw):
    """Text of a random bijection of a (16, 16) buffer: each index optionally split by a
    divisor (either digit first), the pieces permuted."""
    pieces = []
    for name in ("k", "j"):
        factor = draw(st.sampled_from([1, 2, 4, 8]))
        if factor == 1:
            pieces.append(name)
        elif draw(st.booleans()):
            pieces += [f"{name} // {factor}", f"{name} % {factor}"]
        else:
            pieces += [f"{name} % {factor}", f"{name} // {factor}"]
    order = draw(st.permutations(pieces))
    items = ", ".join(order)
    return f"lambda k, j: ({items}{',' if len(order) == 1 else ''})"


@settings(max_examples=15, deadline=None)
@given(text=bijective_maps())
def test_random_bijective_maps_of_a_cache_compute_the_reference(text):
    sch = Schedule(matmul)
    b_global = sch.cache_read(sch.get_block("C"), 2, "global")
    sch.transform_layout(b_global, ("write", 0), text)
    shape = sch.mod.root_block.alloc_buffers[0].shape
    assert int(np.prod(shape)) == 256
    assert str(sch.trace).splitlines()[-1].endswith(f'"{text}")')
    assert_same(sch, "numpy")
    assert proves_injective(IndexMap.from_text(text), (16, 16))  # proved, not enumerated


@pytest.mark.parametrize("target", TARGETS)
def test_pack_after_compute_at(target):
    # TVM's order: cache_read, compute_at, then transform_layout of the moved cache
    sch = Schedule(matmul)
    block = sch.get_block("C")
    b_global = sch.cache_read(block, 2, "global")
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, factors=[None, 4])
    sch.reorder(jo, i, k, ji)
    sch.compute_at(b_global, jo)
    sch.transform_layout(b_global, ("write", 0), lambda k, j: (j // 4, k, j % 4))
    assert [sch.get(x).extent.value for x in sch.get_loops(b_global)] == [4, 16, 4]
    assert "B_global[vj // 4, vk, vj % 4]" in sch.mod.script()
    assert_same(sch, target)


# --- bijectivity is proved, not enumerated: the answer does not depend on the size ----------


@T.prim_func
def huge(A: T.Buffer((16384, 16384), "float32"), B: T.Buffer((16384, 16384), "float32")):
    for i, j in T.grid(16384, 16384):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@pytest.mark.parametrize(
    "text, shape, proved",
    [
        ("lambda k, j: (j // 16, k, j % 16)", (8, 64), True),
        ("lambda n, c, h, w: (n, h, w, c)", (2, 3, 4, 5), True),
        ("lambda i, j: (i // 4, j // 5, i % 4, j % 5)", (8, 10), True),
        ("lambda i: (3 - i,)", (4,), True),
        ("lambda i: (i * 2,)", (14,), True),  # injective; padding fills the gaps
        ("lambda i, j: (i * 8 + j,)", (4, 8), True),
        ("lambda i, j: (0, j, i)", (4, 8), True),
        ("lambda i, j: (i * 7 + j,)", (4, 8), False),  # (0, 7) and (1, 0) collide
        ("lambda i: (i // 2,)", (8,), False),
        ("lambda i, j: (i, i)", (4, 4), False),
        ("lambda i: (i % 2 * 2 + i // 3,)", (4,), False),  # not proved (not injective either)
    ],
)
def test_proves_injective(text, shape, proved):
    imap = IndexMap.from_text(text)
    assert proves_injective(imap, shape) is proved


def test_proof_holds_at_any_size():
    packing = IndexMap.from_text("lambda k, j: (j // 16, k, j % 16)")
    assert proves_injective(packing, (1 << 20, 1 << 24))
    assert proves_injective(IndexMap.from_text("lambda i, j: (i * 8 + j,)"), (1 << 30, 8))
    assert not proves_injective(IndexMap.from_text("lambda i, j: (i * 8 + j,)"), (2, 9))


def test_bijectivity_of_a_huge_buffer_is_proved_not_enumerated():
    """268M elements: enumerating them would take millions of calls or gigabytes; the proof
    takes neither (work counted, not timed: ``tests/work.py``)."""
    sch = Schedule(huge)
    used = work(sch.transform_layout, sch.get_block("B"), "A",
                lambda i, j: (j // 16, i, j % 16))
    assert sch.mod.param("A").shape == (1024, 16384, 16)
    assert used.calls < 100_000 and used.peak_bytes < 16 << 20
    used = work(sch.transform_layout, sch.get_block("B"), "B",
                lambda i, j: (i // 2, j * 2 + i % 2))
    assert sch.mod.param("B").shape == (8192, 32768)  # digits of i and j: proved
    assert used.calls < 100_000 and used.peak_bytes < 16 << 20
    used = work(
        raises_unchanged,
        sch,
        IndexMapNotBijectiveError,
        sch.transform_layout,
        sch.get_block("B"),
        "B",
        lambda i, j: (i, j * 3 % 32768),
    )
    assert "cannot be proven a bijection (at any size)" in used.value.why
    assert used.calls < 100_000 and used.peak_bytes < 16 << 20


def test_digit_permutations_are_proved_not_enumerated():
    """Swapping the digits of one index (``i % 2 * 2 + i // 2 % 2``) is proved by the
    mixed-radix digit rule: accepted on 4 elements as on 2^24."""
    sch = Schedule(four)
    imap = IndexMap.from_text("lambda i: (i % 2 * 2 + i // 2 % 2,)")
    assert proves_injective(imap, (4,))
    sch.transform_layout(sch.get_block("B"), "A", imap)
    assert sch.mod.param("A").shape == (4,)
    assert "A[vi % 2 * 2 + vi // 2]" in sch.mod.script()  # vi // 2 % 2 == vi // 2 here
    sch = Schedule(four)  # the same map on an intermediate buffer computes the reference
    cached = sch.cache_read(sch.get_block("B"), 0, "global")
    sch.transform_layout(cached, ("write", 0), imap)
    assert_same(sch, "numpy")


def test_a_bijection_beyond_the_proofs_is_refused_at_every_size():
    """``i * 3 % 16`` is a bijection of 16 elements, but neither proof covers it: refused
    on a small buffer too (legality does not depend on the size), with the reason."""
    small = IndexMap.from_text("lambda i: (i * 3 % 16,)")
    assert not proves_injective(small, (16,))
    assert not proves_injective(IndexMap.from_text("lambda i: (i * 3 % 65536,)"), (65536,))

    @T.prim_func
    def sixteen(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * T.float32(2)

    sch = Schedule(sixteen)
    err = raises_unchanged(
        sch, IndexMapNotBijectiveError, sch.transform_layout, sch.get_block("B"), "A", small
    )
    assert "cannot be proven a bijection (at any size)" in err.why


@pytest.mark.parametrize(
    "text, new_shape",
    [
        ("lambda i, j: (j // 16, i, j % 16)", (256, 4096, 16)),
        ("lambda i, j: (i, j % 64 * 64 + j // 64)", (4096, 4096)),  # digit swap
        ("lambda i, j: (i // 64, j // 64, i % 64, j % 64)", (64, 64, 64, 64)),
        ("lambda i, j: (i % 16 // 4, i // 16, i % 4, j)", (4, 256, 4, 4096)),
    ],
)
def test_transform_layout_legality_is_symbolic_on_a_big_shape(text, new_shape):
    """4096 x 4096 (16M elements): decided by the proofs in well under a second (no
    enumeration); ``test_digit_maps_compute_the_reference`` runs the same kinds of map."""

    @T.prim_func
    def big(A: T.Buffer((4096, 4096), "float32"), B: T.Buffer((4096, 4096), "float32")):
        for i, j in T.grid(4096, 4096):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    sch = Schedule(big)
    used = work(sch.transform_layout, sch.get_block("B"), "A", text)
    assert used.calls < 100_000 and used.peak_bytes < 16 << 20  # not enumerated
    assert sch.mod.param("A").shape == new_shape
    # a non-bijective neighbour of each map is refused with as little work
    used = work(
        raises_unchanged,
        sch, IndexMapNotBijectiveError, sch.transform_layout, sch.get_block("B"), "B",
        lambda i, j: (i // 2, j),
    )
    assert used.calls < 100_000 and used.peak_bytes < 16 << 20


@pytest.mark.parametrize(
    "text, shape",
    [
        ("lambda i, j: (i, j % 4 * 4 + j // 4)", (64, 16)),
        ("lambda i, j: (i % 16 // 4, i // 16, i % 4, j)", (4, 4, 4, 16)),
        ("lambda i, j: (i // 8, j // 4, i % 8, j % 4)", (8, 4, 8, 4)),
    ],
)
def test_digit_maps_compute_the_reference(text, shape):
    """Maps proved by the digit rule give the reference result (numpy and cpu)."""

    @T.prim_func
    def small(A: T.Buffer((64, 16), "float32"), B: T.Buffer((64, 16), "float32")):
        for i, j in T.grid(64, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    sch = Schedule(small)
    cached = sch.cache_read(sch.get_block("B"), 0, "global")
    sch.transform_layout(cached, ("write", 0), text)
    assert sch.mod.root_block.alloc_buffers[0].shape == shape
    for target in ("numpy", "cpu"):
        assert_same(sch, target)
