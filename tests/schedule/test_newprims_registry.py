"""The newer primitives are registered for traces: their JSON validates, their probes pick
arguments that apply (or raise a ScheduleError), and undo replays their steps."""

import pytest
from schedule_checks import verify_trace_roundtrip

from workbench import T
from workbench.schedule import INSTRUCTIONS, Schedule, ScheduleError, Trace

NEW = ("add_unit_loop", "blockize", "decompose_padding", "reindex", "storage_align",
       "sample_perfect_tile", "sample_categorical")


@T.prim_func
def padded(x: T.Buffer((12,), "float32"), y: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.if_then_else(vi >= 2 and vi < 14, x[vi - 2], T.float32(0))
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            y[vi] = B[vi] * T.float32(3)


def test_registered():
    assert set(NEW) <= set(INSTRUCTIONS)


@pytest.mark.parametrize("name", [n for n in NEW if INSTRUCTIONS[n].probe is not None])
def test_probe_then_apply(name):
    sch = Schedule(padded, seed=0)
    block = sch.get_block("B")
    handle = sch.get_loops(block)[0] if name in ("blockize", "sample_perfect_tile") else block
    args, kwargs = INSTRUCTIONS[name].probe(sch, handle)
    try:
        getattr(sch, name)(*args, **kwargs)
    except ScheduleError:
        return
    assert sch.trace[-1].primitive == name
    verify_trace_roundtrip(sch)


def test_undo_replays_new_steps():
    sch = Schedule(padded, seed=0)
    block = sch.get_block("B")
    (i,) = sch.get_loops(block)
    tile = sch.sample_perfect_tile(i, n=2)
    sch.decompose_padding(block, i)
    sch.storage_align(block, 0, 0, 4, 1)
    mod = sch.mod
    sch.add_unit_loop(block)
    sch.undo()
    assert sch.mod == mod
    assert sch.trace[2].attrs["decision"] == tile
    assert Trace.from_json(sch.trace.to_json()) == sch.trace
