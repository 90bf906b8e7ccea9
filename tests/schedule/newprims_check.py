"""Shared checks for the ported TVM tests of the newer primitives (blockize, reindex,
decompose_padding, storage_align, add_unit_loop, sampling)."""

from pathlib import Path

import numpy as np
import pytest
from tvm_port import check_numbers

from workbench.schedule import Schedule, ScheduleError, Trace

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


def make_golden(request, prefix: str):
    """``check(name, text)``: ``text`` must equal ``tests/golden/<prefix>_<name>.txt``
    (``pytest --regen-golden`` rewrites it instead)."""
    regen = request.config.getoption("--regen-golden", default=False)

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / f"{prefix}_{name}.txt"
        if regen:
            path.write_text(text + "\n")
            return
        if not path.exists():
            pytest.fail(f"golden file {path} is missing; run pytest --regen-golden")
        assert text == path.read_text()[:-1], f"output differs from {path}"

    return check


def random_arrays(func, rng) -> list[np.ndarray]:
    """Random non-zero inputs (small integers for integer buffers) and a random output."""
    arrays = []
    for buf in func.params:
        if np.dtype(buf.dtype).kind in "iu":
            arrays.append(rng.integers(1, 5, buf.shape).astype(buf.dtype))
        else:
            arrays.append((rng.uniform(-1, 1, buf.shape) + 2).astype(buf.dtype))
    return arrays


def assert_computes_same(sch: Schedule, rng, targets=("numpy", "cpu")) -> None:
    """numpy and cpu builds of the schedule equal the numpy build of the unscheduled
    function on random inputs; the trace replays (from JSON) to the same function."""
    check_numbers(sch, rng, tuple(targets), inputs=random_arrays)
    assert_replays(sch)


def assert_replays(sch: Schedule) -> Schedule:
    """TVM's verify_trace_roundtrip: print, JSON round trip, replay on the original."""
    again = Trace.from_json(sch.trace.to_json()).apply(sch.func_before)
    assert again.mod == sch.mod
    assert str(again.trace) == str(sch.trace)
    return again


def raises_unchanged(sch: Schedule, error: type, call, *args, **kwargs) -> ScheduleError:
    """``call(*args, **kwargs)`` must raise exactly ``error`` and change nothing."""
    state, mod, trace = sch._state, sch.mod, sch.trace
    with pytest.raises(ScheduleError) as info:
        call(*args, **kwargs)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert sch._state is state
    assert sch.mod == mod and sch.trace == trace
    str(info.value)  # renders
    return info.value
