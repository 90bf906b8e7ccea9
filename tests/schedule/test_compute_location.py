"""compute_at, reverse_compute_at, compute_inline, reverse_compute_inline: golden IR before
and after, numeric checks on the numpy and CPU backends against the unscheduled function,
trace printing and JSON replay, and flops kept."""


import numpy as np
import pytest
from schedule_checks import make_golden
from schedule_examples import add_relu

from workbench import T, ops
from workbench.backends import build
from workbench.ir.analysis import flops
from workbench.schedule import Schedule, Trace


@pytest.fixture
def golden(request):
    """``golden(name, text)``: ``text`` must equal ``tests/golden/compute_location_<name>.txt``
    (``pytest --regen-golden`` rewrites it instead)."""
    return make_golden(request, "compute_location")


def before_after(sch: Schedule) -> str:
    return f"# before\n{sch.func_before.script()}\n# after\n{sch.mod.script()}"


def inputs_for(func, rng, op: str | None = None) -> list[np.ndarray]:
    """Random inputs (the library's own for an op) plus a random output array."""
    if op is not None:
        arrays = ops.get(op).random_inputs(rng, func)
    else:
        arrays = [rng.uniform(-1, 1, b.shape).astype(b.dtype) for b in func.params[:-1]]
    out = func.params[-1]
    return arrays + [rng.uniform(-1, 1, out.shape).astype(out.dtype)]


def assert_computes_same(sch: Schedule, rng, op: str | None = None) -> None:
    """numpy and cpu builds of the schedule agree with the numpy build of the original;
    the trace replays from JSON to the same function; flops are kept."""
    func = sch.func_before
    arrays = inputs_for(func, rng, op)
    want = [a.copy() for a in arrays]
    build(func, target="numpy")(*want)
    for target in ("numpy", "cpu"):
        got = [a.copy() for a in arrays]
        build(sch, target=target)(*got)
        np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-5, err_msg=target)
    replayed = Trace.from_json(sch.trace.to_json()).apply(func)
    assert replayed.mod == sch.mod and replayed.trace == sch.trace


# ---------------------------------------------------------------------------------------
# Example functions
# ---------------------------------------------------------------------------------------


@T.prim_func
def copy_matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    A_copy = T.alloc_buffer((16, 16), "float32")
    for i0, k0 in T.grid(16, 16):
        with T.block("A_copy"):
            v0, v1 = T.axis.remap("SS", [i0, k0])
            A_copy[v0, v1] = A[v0, v1]
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A_copy[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_relu(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    D: T.Buffer((16, 16), "float32"),
):
    C = T.alloc_buffer((16, 16), "float32")
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i1, j1 in T.grid(16, 16):
        with T.block("relu"):
            vi1, vj1 = T.axis.remap("SS", [i1, j1])
            D[vi1, vj1] = T.max(C[vi1, vj1], T.float32(0))


def conv(stride: int):
    return ops.conv2d_nchw(1, 2, 7, 7, 2, 3, 3, stride=stride, padding=1)


# ---------------------------------------------------------------------------------------
# compute_at
# ---------------------------------------------------------------------------------------


def test_compute_at_two_block_chain(golden, rng):
    sch = Schedule(add_relu)
    (i1,) = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("T_add"), i1)
    golden("add_relu_compute_at", before_after(sch))
    assert str(sch.trace).splitlines() == [
        'b0 = sch.get_block("C")',
        "l1, = sch.get_loops(b0)",
        'b2 = sch.get_block("T_add")',
        "sch.compute_at(b2, l1)",
    ]
    assert_computes_same(sch, rng)


def test_compute_at_keeps_unit_loops(golden, rng):
    sch = Schedule(add_relu)
    outer, inner = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=[None, 8])
    sch.compute_at(sch.get_block("T_add"), inner, preserve_unit_loops=True)
    golden("add_relu_compute_at_unit_loops", sch.mod.script())
    assert str(sch.trace).splitlines()[-1] == ("sch.compute_at(b4, l3, preserve_unit_loops=True)")
    assert_computes_same(sch, rng)


def test_compute_at_conv_pad_into_row_loop(golden, rng):
    func = conv(stride=1)
    sch = Schedule(func)
    n, k, y, x, rc, ry, rx = sch.get_loops(sch.get_block("conv2d_nchw"))
    sch.compute_at(sch.get_block("pad_temp"), y)
    golden("conv_pad_compute_at", before_after(sch))
    # one window of 3 padded rows per output row
    assert "v2 = T.axis.spatial(9, y + ax1)" in sch.mod.script()
    assert flops(sch.mod) == flops(func)  # the pad block is a copy: no flops recomputed
    assert_computes_same(sch, rng, "conv2d_nchw")


def test_compute_at_conv_pad_strided_window(golden, rng):
    func = conv(stride=2)  # reads pad_temp[.., vy * 2 + vry, ..]
    sch = Schedule(func)
    y = sch.get_loops(sch.get_block("conv2d_nchw"))[2]
    sch.compute_at(sch.get_block("pad_temp"), y)
    golden("conv_pad_compute_at_stride2", sch.mod.script())
    assert "v2 = T.axis.spatial(9, y * 2 + ax1)" in sch.mod.script()
    assert_computes_same(sch, rng, "conv2d_nchw")


def test_compute_at_softmax_row_loop(golden, rng):
    func = ops.softmax(4, 8)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_softmax_norm"))
    sch.compute_at(sch.get_block("T_softmax_expsum"), i)
    sch.compute_at(sch.get_block("T_softmax_maxelem"), i)
    golden("softmax_compute_at", before_after(sch))
    assert flops(sch.mod) == flops(func)
    assert_computes_same(sch, rng, "softmax")


def test_compute_at_copy_under_tile_loop(golden, rng):
    sch = Schedule(copy_matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 4])
    sch.reorder(io, jo, k, ii, ji)
    sch.compute_at(sch.get_block("A_copy"), jo)
    golden("copy_tile_compute_at", sch.mod.script())
    assert "for ax0, ax1 in T.grid(4, 16):" in sch.mod.script()  # a 4 x 16 tile of A
    assert flops(sch.mod) == flops(copy_matmul)
    assert_computes_same(sch, rng)


def test_compute_at_guards_a_partial_tile(golden, rng):
    sch = Schedule(copy_matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 3])  # 16 = 5 * 3 + 1: the last tile is partial
    sch.compute_at(sch.get_block("A_copy"), io)
    text = sch.mod.script()
    golden("copy_partial_tile_compute_at", text)
    assert "T.where(i_0 * 3 + ax0 < 16)" in text
    assert_computes_same(sch, rng)


# ---------------------------------------------------------------------------------------
# reverse_compute_at
# ---------------------------------------------------------------------------------------


def test_reverse_compute_at_two_block_chain(golden, rng):
    sch = Schedule(add_relu)
    (i0,) = sch.get_loops(sch.get_block("T_add"))
    sch.reverse_compute_at(sch.get_block("C"), i0)
    golden("add_relu_reverse_compute_at", before_after(sch))
    assert str(sch.trace).splitlines()[-1] == "sch.reverse_compute_at(b2, l1)"
    assert_computes_same(sch, rng)


def test_reverse_compute_at_relu_under_matmul_tile(golden, rng):
    sch = Schedule(matmul_relu)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.reverse_compute_at(sch.get_block("relu"), jo)
    golden("matmul_relu_reverse_compute_at", before_after(sch))
    assert "for ax0, ax1 in T.grid(4, 8):" in sch.mod.script()
    assert flops(sch.mod) == flops(matmul_relu)
    assert_computes_same(sch, rng)


def test_reverse_compute_at_after_inlining_bias(golden, rng):
    func = ops.matmul_bias_relu(8, 8, 8)
    sch = Schedule(func)
    sch.reverse_compute_inline(sch.get_block("T_relu"))
    io, ii = sch.split(sch.get_loops(sch.get_block("matmul"))[0], factors=[None, 4])
    sch.reverse_compute_at(sch.get_block("T_add"), io)
    golden("matmul_bias_relu_reverse_compute_at", sch.mod.script())
    assert flops(sch.mod) == flops(func)
    assert_computes_same(sch, rng, "matmul_bias_relu")


# ---------------------------------------------------------------------------------------
# compute_inline / reverse_compute_inline
# ---------------------------------------------------------------------------------------


def test_compute_inline_two_block_chain(golden, rng):
    sch = Schedule(add_relu)
    sch.compute_inline(sch.get_block("T_add"))
    golden("add_relu_compute_inline", before_after(sch))
    assert sch.mod.root_block.alloc_buffers == ()
    assert str(sch.trace).splitlines()[-1] == "sch.compute_inline(b0)"
    assert flops(sch.mod) == flops(add_relu)
    assert_computes_same(sch, rng)


def test_compute_inline_conv_pad(golden, rng):
    func = conv(stride=2)
    sch = Schedule(func)
    sch.compute_inline(sch.get_block("pad_temp"))
    golden("conv_pad_compute_inline", before_after(sch))
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == []
    assert flops(sch.mod) == flops(func)
    assert_computes_same(sch, rng, "conv2d_nchw")


def test_compute_inline_elementwise_chain(golden, rng):
    func = ops.add_mul_gelu(4, 6)
    sch = Schedule(func)
    sch.compute_inline(sch.get_block("T_add"))
    sch.compute_inline(sch.get_block("T_multiply"))
    golden("chain_compute_inline", sch.mod.script())
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == []
    assert_computes_same(sch, rng, "add_mul_gelu")


def test_reverse_compute_inline_two_block_chain(golden, rng):
    sch = Schedule(add_relu)
    sch.reverse_compute_inline(sch.get_block("C"))
    golden("add_relu_reverse_compute_inline", before_after(sch))
    assert str(sch.trace).splitlines()[-1] == "sch.reverse_compute_inline(b0)"
    assert flops(sch.mod) == flops(add_relu)
    assert_computes_same(sch, rng)


def test_reverse_compute_inline_elementwise_chain(golden, rng):
    func = ops.add_mul_gelu(4, 6)
    sch = Schedule(func)
    sch.reverse_compute_inline(sch.get_block("T_multiply"))
    sch.reverse_compute_inline(sch.get_block("T_gelu"))
    golden("chain_reverse_compute_inline", sch.mod.script())
    assert [b.name for b in sch.mod.root_block.alloc_buffers] == []
    # gelu reads its input twice: inlined, (A + B) * C is computed twice per element
    assert flops(sch.mod) == flops(func) + 2 * 4 * 6
    assert_computes_same(sch, rng, "add_mul_gelu")


def test_reverse_compute_inline_transposed_read(rng):
    @T.prim_func
    def transpose_scale(A: T.Buffer((4, 6), "float32"), B: T.Buffer((6, 4), "float32")):
        T_t = T.alloc_buffer((6, 4), "float32")
        for i, j in T.grid(6, 4):
            with T.block("T_t"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_t[vi, vj] = A[vj, vi]
        for i1, j1 in T.grid(4, 6):
            with T.block("B"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                B[vj1, vi1] = T_t[vj1, vi1] * T.float32(2)

    sch = Schedule(transpose_scale)
    sch.reverse_compute_inline(sch.get_block("B"))
    block = sch.get(sch.get_block("T_t"))
    assert block.body.buffer.name == "B"
    assert_computes_same(sch, rng)


def test_mixed_sequence_on_softmax(rng):
    """compute_inline is refused on reductions; compute_at then split of the moved loops."""
    func = ops.softmax(4, 8)
    sch = Schedule(func)
    i, j = sch.get_loops(sch.get_block("T_softmax_norm"))
    io, ii = sch.split(i, factors=[None, 2])
    sch.compute_at(sch.get_block("T_softmax_expsum"), io)
    sch.compute_at(sch.get_block("T_softmax_maxelem"), io)
    loops = sch.get_loops(sch.get_block("T_softmax_expsum"))
    assert [sch.get(l).extent.value for l in loops] == [2, 2, 8]
    sch.split(loops[-1], factors=[None, 4])
    assert flops(sch.mod) == flops(func)
    assert_computes_same(sch, rng, "softmax")


def test_compute_at_in_a_nested_scope(rng):
    """The scope is the block around the producer (here "outer"), not the root."""

    @T.prim_func
    def nested(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
        for i_0 in T.serial(4):
            with T.block("outer"):
                vo = T.axis.spatial(4, i_0)
                local = T.alloc_buffer((4, 16), "float32", scope="local")
                for i_1, j in T.grid(4, 16):
                    with T.block("load"):
                        vi, vj = T.axis.remap("SS", [i_1, j])
                        local[vi, vj] = A[vo * 4 + vi, vj]
                for i_2, j_2 in T.grid(4, 16):
                    with T.block("store"):
                        vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
                        B[vo * 4 + vi_2, vj_2] = local[vi_2, vj_2] * T.float32(3)

    sch = Schedule(nested)
    i_2, j_2 = sch.get_loops(sch.get_block("store"))
    sch.compute_at(sch.get_block("load"), i_2)
    assert [sch.name(loop) for loop in sch.get_loops(sch.get_block("load"))] == ["i_2", "ax0"]
    assert_computes_same(sch, rng)


# ---------------------------------------------------------------------------------------
# Every legal location computes the same
# ---------------------------------------------------------------------------------------


def _every_location(func):
    from workbench.schedule import ScheduleError
    from workbench.schedule.tree import block_names, loop_names

    for block in block_names(func):
        for primitive in ("compute_at", "reverse_compute_at"):
            for loop in loop_names(func):
                sch = Schedule(func)
                try:
                    getattr(sch, primitive)(
                        sch.get_block(block), sch._handle_for_name("loop", loop)
                    )
                except ScheduleError:
                    continue
                yield sch


@pytest.mark.parametrize(
    "func",
    [ops.softmax(4, 8), conv(stride=2), ops.add_mul_gelu(4, 6), ops.layernorm(4, 8)],
    ids=["softmax", "conv", "chain", "layernorm"],
)
def test_every_legal_location_computes_the_same(func, rng):
    arrays = inputs_for(func, rng)
    want = [a.copy() for a in arrays]
    build(func, target="numpy")(*want)
    count = 0
    for sch in _every_location(func):
        got = [a.copy() for a in arrays]
        build(sch, target="numpy")(*got)
        np.testing.assert_allclose(got[-1], want[-1], rtol=1e-5, atol=1e-5, err_msg=str(sch.trace))
        count += 1
    assert count >= 2
