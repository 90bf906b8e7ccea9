"""Measurement: latency, throughput and the roofline, on this machine.

The timing protocol of ``measure(kernel, *args)``:

1. **Work.** FLOPs and the minimum bytes moved come from the IR analysis of ``kernel.func``
   (``workbench.ir.analysis.flops`` / ``min_bytes``), or from ``flops=`` / ``bytes=`` for a
   plain callable such as ``np.matmul``.
2. **Rotated inputs.** Copies of the argument set (same input values, own output arrays) are
   allocated until their total size exceeds twice the last-level cache (read from
   ``/sys/devices/system/cpu/cpu0/cache/index*/size``, 32 MiB where that is missing), capped at
   1 GiB of copies, 256 sets, and one set per call. Calls cycle through the sets, so a kernel
   does not find its inputs still in cache from the call before. ``rotate=False`` turns this
   off (warm-cache timing).
3. **Warm-up.** ``warmup`` untimed calls (2 by default): the first call of a Numba kernel may
   compile, and first touches of memory fault in pages.
4. **Timed calls.** Each call is bracketed by ``time.perf_counter_ns`` (a kernel with a
   ``time_call`` method, such as a CUDA kernel timed with CUDA events, times itself). Calls
   repeat until ``budget_s`` seconds (1 s) have passed, with at least ``min_repeats`` (5) and
   at most ``max_repeats`` (200) calls.
5. **Statistics.** The median latency and the interquartile range (75th - 25th percentile);
   medians resist the outliers that a shared machine produces. All times are kept in
   ``MeasureResult.times_s``.
6. **Roofline.** GFLOP/s = FLOPs / median, GB/s = bytes / median, intensity = FLOPs / bytes,
   compared with ``machine_peaks()``: a STREAM triad for bandwidth and the larger of BLAS
   matmul and a Numba FMA loop for compute, measured once per machine and cached
   (see ``workbench.measure.peaks``).

Example
-------
>>> import workbench as wb
>>> kernel = wb.build(sch, target="cpu")            # doctest: +SKIP
>>> res = wb.measure(kernel, a, b, c)               # doctest: +SKIP
>>> res.to_frame()                                  # doctest: +SKIP
"""

import inspect
import sys
import types

from workbench.measure.peaks import MachinePeaks, machine_peaks
from workbench.measure.protocol import measure
from workbench.measure.result import MeasureResult, format_seconds
from workbench.measure.rotation import llc_bytes

__all__ = [
    "MachinePeaks",
    "MeasureResult",
    "format_seconds",
    "llc_bytes",
    "machine_peaks",
    "measure",
]


class _CallableModule(types.ModuleType):
    """This package, callable as the function ``measure``.

    ``workbench`` exports the function ``measure`` lazily, but importing this package (by
    ``import workbench.measure`` or any module in it) makes Python set the attribute
    ``workbench.measure`` to the package, hiding the function. Calling the package calls the
    function, so ``wb.measure(kernel, *args)`` works whatever was imported first.
    """

    def __call__(self, *args, **kwargs) -> MeasureResult:
        return measure(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

# ``help(wb.measure)`` shows this package (Python binds ``workbench.measure`` to it): lead
# with the function a person calls, then the protocol above.
_PROTOCOL = __doc__
__doc__ = (
    "wb.measure(kernel, *args, **options) -> MeasureResult\n\n"
    + inspect.cleandoc(measure.__doc__ or "")
    + "\n\n"
    + (_PROTOCOL or "")
)
