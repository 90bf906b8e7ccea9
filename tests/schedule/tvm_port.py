"""Helpers for the tests ported from TVM (tests/schedule/test_tvm_*.py).

TVM's tests compare the scheduled function with an expected one
(``assert_structural_equal``) and replay the trace (``verify_trace_roundtrip``); the ports
do both, and also run the scheduled function against the unscheduled one on random inputs.
"""

from __future__ import annotations

import difflib

import numpy as np
import pytest

from workbench.backends import build
from workbench.ir import PrimFunc
from workbench.schedule import Schedule, ScheduleError, Trace


def assert_structural(got: Schedule | PrimFunc, expected: PrimFunc) -> None:
    """``got`` equals ``expected`` (names included; the function's own name aside)."""
    func = got.mod if isinstance(got, Schedule) else got
    func = func.replace(name=expected.name)
    if not func.same_as(expected):
        got_text, want_text = func.script(), expected.script()
        diff = "\n".join(
            difflib.unified_diff(want_text.splitlines(), got_text.splitlines(), "expected", "got")
        )
        raise AssertionError(f"scheduled function differs from the expected one:\n{diff}")


def verify_trace_roundtrip(sch: Schedule) -> None:
    """The trace survives JSON and replays to the same function (TVM's helper of this name)."""
    replayed = Trace.from_json(sch.trace.to_json()).apply(sch.func_before)
    assert replayed.mod.same_as(sch.mod)
    assert str(replayed.trace) == str(sch.trace)


def random_inputs(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for buffer in func.params:
        if buffer.dtype.startswith("float"):
            arrays.append((rng.standard_normal(buffer.shape) + 0.5).astype(buffer.dtype))
        else:
            arrays.append(rng.integers(1, 7, size=buffer.shape).astype(buffer.dtype))
    return arrays


def check_numbers(
    sch: Schedule,
    rng: np.random.Generator,
    targets: tuple[str, ...] = ("numpy", "cpu"),
    inputs=random_inputs,
) -> None:
    """The scheduled function computes what the unscheduled one does, on every target
    (``inputs(func, rng)`` draws the arguments)."""
    inputs = inputs(sch.func_before, rng)
    want = [a.copy() for a in inputs]
    build(sch.func_before, target="numpy")(*want)
    for target in targets:
        got = [a.copy() for a in inputs]
        build(sch, target=target)(*got)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=target)


def raises_unchanged(error: type, call, *args, **kwargs) -> ScheduleError:
    """``call`` raises exactly ``error`` and leaves its schedule as it was."""
    sch = call.__self__
    mod, trace = sch.mod, sch.trace
    with pytest.raises(ScheduleError) as info:
        call(*args, **kwargs)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert sch.mod == mod and len(sch.trace) == len(trace)
    str(info.value)  # renders
    return info.value
