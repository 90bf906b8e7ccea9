"""Checks shared by the scope / for-kind tests: numeric agreement with the reference (in
program order, in shuffled parallel order, and on the cpu target) and trace round trips."""

from __future__ import annotations

import numpy as np

import workbench as wb
from workbench.ir import PrimFunc
from workbench.schedule import Schedule, Trace


def random_args(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray]:
    """Random inputs in [0.5, 1.5) (never zeros), outputs as garbage."""
    return [rng.uniform(0.5, 1.5, size=b.shape).astype(b.dtype) for b in func.params]


def assert_computes_reference(scheduled, original: PrimFunc, seed: int = 0) -> None:
    """``scheduled`` (a Schedule or a PrimFunc) computes what ``original`` computes on the
    numpy reference, for the numpy target (program and shuffled parallel order) and cpu."""
    rng = np.random.default_rng(seed)
    args = random_args(original, rng)
    want = [a.copy() for a in args]
    wb.build(original, target="numpy")(*want)
    runs = [("numpy", {}), ("numpy", {"iteration_order": "shuffled", "order_seed": seed}),
            ("numpy", {"iteration_order": "reversed"}), ("cpu", {})]
    for target, options in runs:
        got = [a.copy() for a in args]
        wb.build(scheduled, target=target, **options)(*got)
        for w, g, p in zip(want, got, original.params, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{p.name} on {target} {options}")


def assert_trace_roundtrip(sch: Schedule, original: PrimFunc) -> None:
    """TVM's ``verify_trace_roundtrip``: the JSON trace replays to the same function."""
    again = Trace.from_json(sch.trace.to_json()).apply(original)
    assert again.mod == sch.mod
