"""The checks every schedule test shares: build and compare with the reference, replay the
trace, refuse and change nothing, compare with an expected function.

* ``check_numbers(sch, rng)``: the numpy and cpu builds of ``sch`` compute what the
  unscheduled function computes (the numpy reference) on random inputs;
* ``assert_computes_reference(scheduled, original)``: the same, also with the numpy
  reference iterating in shuffled and reversed order (a parallel loop that races shows up);
* ``assert_computes_same(sch, rng)``: ``check_numbers`` plus the trace round trip;
* ``verify_trace_roundtrip(sch)``: TVM's helper of that name (JSON round trip, replay on the
  original function, same function and same printed trace);
* ``assert_structural(got, expected)``: TVM's ``assert_structural_equal``, with a diff;
* ``raises_unchanged(sch, error, call, *args)``: exactly ``error``, and the schedule as it was;
* ``make_golden(request, prefix)``: golden text files under ``tests/golden``.

Inputs are random and never zero: floats of magnitude in [0.5, 1.5) with random signs,
small positive integers for integer buffers.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pytest

from workbench.backends import build
from workbench.ir import PrimFunc
from workbench.schedule import Schedule, ScheduleError, Trace

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"
TOLERANCE = 1e-4


# --- inputs and the numeric comparison ----------------------------------------------------


def random_inputs(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray]:
    """One random array per parameter (outputs too: their initial values are garbage)."""
    arrays = []
    for buffer in func.params:
        if np.dtype(buffer.dtype).kind in "iu":
            arrays.append(rng.integers(1, 5, size=buffer.shape).astype(buffer.dtype))
            continue
        magnitude = rng.uniform(0.5, 1.5, size=buffer.shape)
        sign = rng.choice([-1.0, 1.0], size=buffer.shape)
        arrays.append(np.asarray(magnitude * sign).astype(buffer.dtype))
    return arrays


def compare_with_reference(
    scheduled: Schedule | PrimFunc,
    original: PrimFunc,
    rng: np.random.Generator,
    runs: list[tuple[str, dict]],
) -> None:
    """Each ``(target, build options)`` build of ``scheduled`` computes, on the same random
    inputs, what the numpy build of ``original`` computes."""
    inputs = random_inputs(original, rng)
    want = [a.copy() for a in inputs]
    build(original, target="numpy")(*want)
    for target, options in runs:
        got = [a.copy() for a in inputs]
        build(scheduled, target=target, **options)(*got)
        for w, g, p in zip(want, got, original.params, strict=True):
            np.testing.assert_allclose(
                g, w, rtol=TOLERANCE, atol=TOLERANCE, err_msg=f"{p.name} on {target} {options}"
            )


def check_numbers(
    sch: Schedule, rng: np.random.Generator, targets: tuple[str, ...] = ("numpy", "cpu")
) -> None:
    """The scheduled function computes what the unscheduled one does, on every target."""
    compare_with_reference(sch, sch.func_before, rng, [(t, {}) for t in targets])


def assert_computes_reference(
    scheduled: Schedule | PrimFunc, original: PrimFunc, seed: int = 0
) -> None:
    """``scheduled`` computes what ``original`` computes: numpy in program, shuffled and
    reversed iteration order of parallel loops, and cpu."""
    runs = [
        ("numpy", {}),
        ("numpy", {"iteration_order": "shuffled", "order_seed": seed}),
        ("numpy", {"iteration_order": "reversed"}),
        ("cpu", {}),
    ]
    compare_with_reference(scheduled, original, np.random.default_rng(seed), runs)


def assert_computes_same(sch: Schedule, rng, targets=("numpy", "cpu")) -> None:
    """``check_numbers`` on ``targets`` and ``verify_trace_roundtrip``."""
    check_numbers(sch, rng, tuple(targets))
    verify_trace_roundtrip(sch)


# --- traces, structure, refusals ------------------------------------------------------------


def verify_trace_roundtrip(sch: Schedule, original: PrimFunc | None = None) -> Schedule:
    """The trace survives JSON and replays on ``original`` (default: the schedule's own
    starting function) to the same function and the same printed trace; returns the replay."""
    start = sch.func_before if original is None else original
    again = Trace.from_json(sch.trace.to_json()).apply(start)
    assert again.mod.same_as(sch.mod)
    assert str(again.trace) == str(sch.trace)
    return again


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


def raises_unchanged(sch: Schedule, error: type, call, *args, **kwargs) -> ScheduleError:
    """``call(*args, **kwargs)`` must raise exactly ``error`` and change nothing (state,
    function, trace); the error must render."""
    state, mod, trace = sch._state, sch.mod, sch.trace
    with pytest.raises(ScheduleError) as info:
        call(*args, **kwargs)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value}"
    assert sch._state is state
    assert sch.mod == mod and sch.trace == trace and len(sch.trace) == len(trace)
    str(info.value)  # renders
    return info.value


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
