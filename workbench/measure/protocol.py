"""``measure``: the timing protocol (see the package docstring of ``workbench.measure``)."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable

import numpy as np

from workbench.measure.peaks import MachinePeaks, machine_peaks
from workbench.measure.result import MeasureResult
from workbench.measure.rotation import (
    argument_bytes,
    llc_bytes,
    make_argument_sets,
    rotation_count,
)


def _check_options(kernel, min_repeats, max_repeats, budget_s, warmup) -> None:
    if not callable(kernel):
        raise TypeError(f"measure: kernel must be callable, got {type(kernel).__name__}")
    for name, value, kinds in (("min_repeats", min_repeats, numbers.Integral),
                               ("max_repeats", max_repeats, numbers.Integral),
                               ("budget_s", budget_s, numbers.Real),
                               ("warmup", warmup, numbers.Integral)):
        if isinstance(value, bool) or not isinstance(value, kinds):
            unit = "seconds as a number (like 0.5)" if name == "budget_s" else "an integer"
            raise TypeError(f"measure: {name} must be {unit}, got {type(value).__name__} "
                            f"{value!r}"[:200])
    if not np.isfinite(budget_s):
        raise ValueError(f"measure: budget_s must be finite, got {budget_s}")
    if min_repeats < 1:
        raise ValueError(f"measure: min_repeats must be >= 1, got {min_repeats}")
    if max_repeats < min_repeats:
        raise ValueError(
            f"measure: max_repeats ({max_repeats}) must be >= min_repeats ({min_repeats})"
        )
    if budget_s < 0:
        raise ValueError(f"measure: budget_s must be >= 0, got {budget_s}")
    if warmup < 0:
        raise ValueError(f"measure: warmup must be >= 0, got {warmup}")


def kernel_name(kernel: Callable) -> str:
    """The PrimFunc's name for a built kernel, else the callable's own name."""
    func = getattr(kernel, "func", None)
    if func is not None and getattr(func, "name", None):
        return func.name
    return getattr(kernel, "__name__", type(kernel).__name__)


def kernel_work(kernel: Callable) -> tuple[int | None, int | None]:
    """(FLOPs, minimum bytes) of one call, from the IR analysis of ``kernel.func``;
    ``(None, None)`` for a callable with no IR."""
    func = getattr(kernel, "func", None)
    if func is None:
        return None, None
    from workbench.ir.analysis import flops, min_bytes

    return flops(func), min_bytes(func)


def _timer(kernel: Callable) -> Callable[[tuple], float]:
    """A function timing one call of ``kernel`` on an argument tuple, in seconds.

    A kernel may time itself with a ``time_call(*args) -> seconds`` method (a CUDA kernel
    uses CUDA events); otherwise the wall clock ``time.perf_counter_ns`` brackets the call.
    """
    own_timer = getattr(kernel, "time_call", None)
    if callable(own_timer):
        return lambda args: float(own_timer(*args))

    def wall_clock(args: tuple) -> float:
        start = time.perf_counter_ns()
        kernel(*args)
        return (time.perf_counter_ns() - start) * 1e-9

    return wall_clock


def measure(
    kernel: Callable,
    *args,
    min_repeats: int = 5,
    max_repeats: int = 200,
    budget_s: float = 1.0,
    warmup: int = 2,
    rotate: bool = True,
    flops: int | None = None,
    bytes: int | None = None,  # noqa: A002 - the natural name, as in MeasureResult.bytes
    name: str | None = None,
    peaks: MachinePeaks | None = None,
    argument_sets: list[tuple] | None = None,
) -> MeasureResult:
    """Time ``kernel(*args)`` and place it on the machine's roofline.

    Parameters
    ----------
    kernel : Kernel or callable
        A kernel from ``wb.build`` (FLOPs and bytes come from the IR analysis of
        ``kernel.func``) or any Python callable (pass ``flops=``/``bytes=`` to get GFLOP/s
        and GB/s, e.g. for ``np.matmul``).
    *args
        The arguments of one call, numpy arrays in parameter order. Outputs are written in
        place; the caller's arrays hold the result of one of the calls.
    min_repeats, max_repeats : int
        Timed calls: at least ``min_repeats``, then more until ``budget_s`` seconds of timing
        have passed, at most ``max_repeats``.
    budget_s : float
        Time budget of the timed calls (warm-up not included).
    warmup : int
        Untimed calls before timing (the first pays for compiling and first touches).
    rotate : bool
        Cycle through copies of the arguments whose total size exceeds twice the last-level
        cache, so every call starts with cold caches as in a real workload. ``False`` times
        every call on the same arrays (warm caches).
    flops, bytes : int, optional
        Work of one call, overriding the IR analysis.
    name : str, optional
        Label of the result (default: the PrimFunc's or the callable's name).
    peaks : MachinePeaks, optional
        Roofs to compare with (default: ``machine_peaks()``, measured once per machine).
    argument_sets : list of tuples, optional
        Argument sets made once by ``make_argument_sets`` and cycled through instead of
        copying ``args`` for this call (a caller that measures many kernels of one
        signature, like the explorer, saves the copies); ``args`` and ``rotate`` are then
        not used.

    Returns
    -------
    MeasureResult

    Example
    -------
    >>> import numpy as np, workbench as wb
    >>> a, b = (np.random.rand(256, 256).astype("float32") for _ in range(2))
    >>> c = np.empty((256, 256), "float32")
    >>> res = wb.measure(np.matmul, a, b, c, flops=2 * 256**3, bytes=3 * 256 * 256 * 4)
    >>> res.median_s > 0 and res.repeats >= 5
    True
    """
    _check_options(kernel, min_repeats, max_repeats, budget_s, warmup)
    if flops is None or bytes is None:
        ir_flops, ir_bytes = kernel_work(kernel)
        flops = ir_flops if flops is None else flops
        bytes = ir_bytes if bytes is None else bytes
    if peaks is None:
        peaks = machine_peaks()

    if argument_sets is not None:
        arg_sets, count = list(argument_sets), len(argument_sets)
    else:
        count = 1
        if rotate:
            count = rotation_count(argument_bytes(args), llc_bytes())
            count = min(count, warmup + max_repeats)
        arg_sets = make_argument_sets(args, count)
    time_one = _timer(kernel)

    for call in range(warmup):
        time_one(arg_sets[call % count])

    times: list[float] = []
    deadline = time.perf_counter_ns() + int(budget_s * 1e9)
    call = warmup
    while len(times) < max_repeats:
        if len(times) >= min_repeats and time.perf_counter_ns() >= deadline:
            break
        times.append(time_one(arg_sets[call % count]))
        call += 1

    q25, median, q75 = np.percentile(times, [25, 50, 75])
    return MeasureResult(
        name=name or kernel_name(kernel),
        target=getattr(kernel, "target", "python"),
        median_s=float(median),
        iqr_s=float(q75 - q25),
        repeats=len(times),
        times_s=tuple(times),
        flops=flops,
        bytes=bytes,
        peaks=peaks,
        warmup=warmup,
        rotation_sets=count,
    )
