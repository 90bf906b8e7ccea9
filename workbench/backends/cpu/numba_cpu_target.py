"""The ``cpu`` target's registration: passes, printer, compile step, kernel class."""

from __future__ import annotations

from workbench.backends.common.allocation import place_allocations
from workbench.backends.common.machine import host_device_facts, widen_numba_vectors
from workbench.backends.common.target import Target, TargetKind, register_target
from workbench.backends.cpu.numba_cpu_kernel import CpuKernel
from workbench.backends.cpu.numba_cpu_printer import CpuPrinter, cpu_passes
from workbench.ir import PrimFunc

widen_numba_vectors()  # before any njit compile: Numba's codegen takes its features once

CPU_DEFAULTS = {
    "fastmath": True,
    "fast_exp": True,
    "boundscheck": False,
    "promote": True,
    "workspace": True,
    "debug": False,
}
"""Options of the ``cpu`` target.

fastmath
    Numba/LLVM fast-math flags. On by default: a reduction (``acc = acc + x``) vectorizes
    only when LLVM may reassociate the additions, which changes rounding slightly (compare
    with ``rtol`` ~1e-4 for float32). Turn off for bit-reproducible sequential sums.
fast_exp
    float32 ``exp`` (and ``sigmoid``) use ``runtime.fast_exp_f32``, a vectorizable
    polynomial accurate to < 1e-6 relative, instead of libm's scalar ``expf``. On by
    default: float32 kernels already accept that error, and a loop calling libm stays
    scalar. float64 always uses ``np.exp``.
boundscheck
    Numba's index bounds checks (an ``IndexError`` instead of memory corruption), off by
    default because they block vectorization; turn on to debug a schedule.
promote
    Keep the output tile of a reduction loop in a local array while the loop runs
    (``workbench.backends.cpu.promote``): LLVM then holds it in registers instead of loading
    and storing it on every iteration (a 1024 matmul with a 4x64 tile: 62 -> 210 GFLOP/s).
    On by default; turn off to see the difference.
workspace
    Global scratch buffers (a packed panel, an rfactor buffer) come from a workspace the
    kernel allocates once and passes to every call (``CpuKernel.workspace``) instead of a
    fresh ``np.empty`` per call, which saves the page faults of fresh memory (issue 9: the
    packed matmul 1024 at 2 threads, p90 9.5 ms with a fresh 4 MiB panel per call, 5.6 ms
    with one reused). On by default; the packed matmul's machine code is the same either
    way (checked on this machine: same FMA loops). Turn off for a kernel object shared by
    threads that call it at once.
debug
    The bounds-checked debug build (``workbench.backends.common.bounds_checks``): every access
    that cannot be proven inside its buffer is checked at run time and raises a
    ``KernelBoundsError`` naming the block, the access and the index values. Implies
    ``promote=False`` (a promoted tile would hide the accesses it replaces).
"""


def _cpu_ir_passes(func: PrimFunc, target: Target) -> PrimFunc:
    return cpu_passes(func, promote=target.options["promote"])


def _place_allocations(func: PrimFunc, target: Target) -> PrimFunc:
    return place_allocations(func)


def compile_cpu_kernel(func: PrimFunc, lowered: PrimFunc, target: Target, written) -> CpuKernel:
    """Compile (or fetch from the caches) and wrap in a ``CpuKernel``.

    The passes (``target.run_passes``: ``cpu_passes`` + ``place_allocations``) and the
    printer (``CpuPrinter``) run inside ``numba_cpu.compile_cpu`` on a cache miss only.
    """
    from workbench.backends.cpu.numba_cpu import compile_cpu

    options = dict(target.options)
    compiled, hit = compile_cpu(lowered, target)
    seconds = 0.0 if hit == "memory" else compiled.compile_seconds
    return CpuKernel(
        func,
        lowered,
        target.name,
        compiled.dispatcher,
        options=options,
        source=compiled.generated.source,
        written=written,
        compile_seconds=seconds,
        cache_hit=hit,
        compiled=compiled,
        target_info=target,
    )


CPU = register_target(
    TargetKind(
        "cpu",
        CPU_DEFAULTS,
        passes=(_cpu_ir_passes, _place_allocations),
        compile=compile_cpu_kernel,
        kernel_class=CpuKernel,
        device=host_device_facts,
        description="Python source compiled with numba.njit (prange for parallel loops)",
        printer=CpuPrinter,
        graph_schedule="workbench.recipes.graph_cpu:cpu_schedule",
        graph_layout="workbench.graph.passes.fold_views:cpu_layout",
        tuning_rules="workbench.tune.rules_cpu:cpu_rules",
        cost_prior=True,
        warnings="workbench.viz.advice:cpu_schedule_warnings",
        explorer_views="workbench.widgets.target_views:cpu_views",
        artifact_format="numba-cpu-module",
        graph_runner="workbench.graph.compiler:cpu_runner",
        is_cached="workbench.backends.cpu.numba_cpu:is_cached",
        module=__name__,
    )
)
