"""bind: printed IR, each legality error (schedule unchanged), trace print + JSON replay,
legal_primitives, and numbers against the reference on the CPU (bound loops are serial)."""

import textwrap

import numpy as np
import pytest
from schedule_checks import raises_unchanged
from schedule_examples import matmul, row_sum, scale2d

from workbench import T
from workbench.backends import build
from workbench.schedule import (
    InvalidThreadAxisError,
    LoopNotSerialError,
    NonConstantExtentError,
    ReductionLoopError,
    Schedule,
    ThreadAxisNestingError,
    ThreadExtentMismatchError,
    TooManyThreadsError,
    Trace,
)
from workbench.schedule.binding import bind
from workbench.script import from_source


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def bound_scale2d():
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    return sch


def test_bind_prints_thread_binding_and_round_trips():
    sch = bound_scale2d()
    assert sch.mod.script() == golden(
        """
        @T.prim_func
        def scale2d(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
            for i in T.thread_binding(16, thread="blockIdx.x"):
                for j in T.thread_binding(8, thread="threadIdx.x"):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(A[vi, vj])
                        T.writes(B[vi, vj])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
        """
    )
    assert from_source(sch.mod.script()) == sch.mod


def test_trace_prints_and_replays_from_json():
    sch = bound_scale2d()
    assert str(sch.trace).splitlines()[-2:] == [
        'sch.bind(l1, "blockIdx.x")',
        'sch.bind(l2, "threadIdx.x")',
    ]
    replayed = Trace.from_json(sch.trace.to_json()).apply(scale2d)
    assert replayed.mod == sch.mod


def test_bound_schedule_computes_the_reference_on_cpu(rng):
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.x")
    a, b = (rng.standard_normal(p.shape).astype(p.dtype) for p in matmul.params[:2])
    c = np.zeros(matmul.params[2].shape, "float32")
    build(sch, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_rebinding_replaces_the_axis():
    """As TVM: binding a bound loop again replaces its thread axis."""
    sch = Schedule(scale2d)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(i, "threadIdx.x")
    assert sch.get(i).thread_binding == "threadIdx.x"


def test_unknown_axis():
    sch = Schedule(scale2d)
    i, _ = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, InvalidThreadAxisError, sch.bind, i, "warp.x")
    assert err.name == "i" and "unknown thread axis 'warp.x'" in str(err)


def test_reduction_loop_on_a_grid_axis():
    """Blocks cannot combine values within a kernel: a reduction loop on blockIdx is refused."""
    sch = Schedule(row_sum)
    _, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, ReductionLoopError, sch.bind, k, "blockIdx.x")
    assert err.block == "B"


def test_reduction_loop_on_threads_is_a_cross_thread_reduction():
    """As TVM: a reduction block's reduce loop may go on threadIdx (an allreduce on cuda);
    on the CPU it stays a serial loop and computes the reference."""
    sch = Schedule(row_sum)
    i, k = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")
    a = np.random.default_rng(0).standard_normal((8, 12), dtype=np.float32)
    b = np.full(8, np.nan, np.float32)
    build(sch, target="cpu")(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


@T.prim_func
def not_a_reducer(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] * T.float32(2) + A[vi, vk]


def test_reduction_loop_of_a_non_reducer_block_stays_refused():
    """``B = B * 2 + x`` is not a commutative reduction: the threads cannot combine it."""
    sch = Schedule(not_a_reducer)
    _, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, ReductionLoopError, sch.bind, k, "threadIdx.x")
    assert err.block == "B"


def test_not_serial():
    sch = Schedule(scale2d)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    err = raises_unchanged(sch, LoopNotSerialError, sch.bind, i, "blockIdx.x")
    assert "it is parallel" in err.message


def test_grid_axis_inside_thread_axis():
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "threadIdx.x")
    err = raises_unchanged(sch, ThreadAxisNestingError, sch.bind, j, "blockIdx.x")
    assert err.outer == "i"


def test_grid_axis_inside_itself():
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.bind(j, "blockIdx.x")
    raises_unchanged(sch, ThreadAxisNestingError, sch.bind, i, "blockIdx.x")


def test_extents_of_one_axis_must_agree_in_a_kernel():
    sch = Schedule(matmul)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    sch.bind(ii, "threadIdx.x")
    c_local = sch.cache_write(sch.get_block("C"), 0, "local")
    sch.reverse_compute_at(c_local, io)
    ax0, ax1 = sch.get_loops(c_local)[-2:]
    err = raises_unchanged(sch, ThreadExtentMismatchError, sch.bind, ax1, "threadIdx.x")
    assert err.axis == "threadIdx.x" and err.other == sch.name(ii)
    sch.bind(ax0, "threadIdx.x")  # extent 4 agrees


def test_too_many_threads():
    sch = Schedule(matmul)
    i, j, _ = sch.get_loops(sch.get_block("C"))
    sch.bind(i, "threadIdx.y")
    raises_unchanged(sch, TooManyThreadsError, lambda: sch._commit(
        "bind", (j,), {"thread_axis": "threadIdx.x"},
        bind(sch.mod, sch.name(j), "threadIdx.x", max_threads_per_block=64), []))


def test_non_constant_extent_is_refused(monkeypatch):
    from workbench.schedule import binding

    monkeypatch.setattr(binding, "const_value", lambda e: None)
    sch = Schedule(scale2d)
    i, _ = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NonConstantExtentError, sch.bind, i, "blockIdx.x")


def test_legal_primitives_probes_bind():
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    table = {row.primitive: row for row in sch.legal_primitives(i)}
    assert table["bind"].legal
    sch.bind(i, "threadIdx.x")
    table = {row.primitive: row for row in sch.legal_primitives(j)}
    assert table["bind"].legal  # the probe picks threadIdx.y under threadIdx.x
    sch2 = Schedule(row_sum)
    _, k = sch2.get_loops(sch2.get_block("B"))
    table = {row.primitive: row for row in sch2.legal_primitives(k)}
    assert not table["bind"].legal and "reduction loop" in table["bind"].reason


@pytest.mark.parametrize("axis", ["blockIdx.y", "threadIdx.z"])
def test_every_axis_name_is_accepted(axis):
    sch = Schedule(scale2d)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, axis)
    assert sch.get(i).thread_binding == axis
