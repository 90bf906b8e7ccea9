"""The ``cuda`` target: ``@cuda.jit`` kernels from a schedule with bound loops.

Build steps after the common lowering (``lower``):

1. ``place_allocations``: an ``Allocate`` where each buffer lives;
2. ``hoist_kernel_allocations``: each top-level statement becomes one kernel; its ``shared``
   buffers move to the top of the kernel (static shared memory lives for the whole block),
   ``local`` buffers stay where they live (per thread), global scratch buffers stay at the
   top of the function, outside every kernel: the kernel's workspace, allocated on the
   device once and reused across calls;
3. ``insert_syncthreads`` per kernel (``cuda_sync``);
4. the GPU verifier (``cuda_verify``), then the launch configuration from the bound extents
   and the printer (``numba_cuda_printer``).

Compiled modules are cached in memory (bounded LRU keyed by the lowered function and the
options) and written to the kernel cache directory like the CPU's (see ``numba_cpu``).
Numba compiles each kernel on its first launch (it needs the argument types).

CI has no GPU: the tests run this target under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), which executes the same source with Python threads.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
import time
from pathlib import Path

import numpy as np

from workbench.backends.common.allocation import Allocate, place_allocations
from workbench.backends.common.arguments import KernelArgumentError, check_arguments
from workbench.backends.common.kernel import Kernel
from workbench.backends.common.kernel_cache import LRUCache, import_generated
from workbench.backends.common.target import (
    CUDA_FACTS,
    DeviceFacts,
    Target,
    TargetKind,
    register_target,
)
from workbench.backends.cuda.cuda_device import is_device_array, to_device, to_host
from workbench.backends.cuda.cuda_launch import LeanLauncher
from workbench.backends.cuda.cuda_memory import MEMORY_PASSES
from workbench.backends.cuda.cuda_reduction import lower_cross_thread_reductions
from workbench.backends.cuda.cuda_sync import insert_syncthreads
from workbench.backends.cuda.cuda_verify import (
    ScopeAcrossKernelsError,
    verify_gpu,
    verify_stages_within_kernels,
)
from workbench.backends.cuda.numba_cuda_printer import CudaPrinter, LaunchConfig, launch_config
from workbench.ir import BufferLoad, BufferStore, PrimFunc, SeqStmt, Stmt, seq
from workbench.ir.functor import IRMapper, collect

CUDA_DEFAULTS = {"fastmath": False, "max_threads_per_block": None}
"""Options of the ``cuda`` target.

fastmath
    Numba's CUDA fast-math (flush denormals, approximate division and square root).
max_threads_per_block
    Override the device's limit (None: the device's, 1024 under the simulator).
"""

def _forget(key, compiled) -> None:
    """An evicted module leaves ``sys.modules`` (see ``numba_cpu._forget``)."""
    name = getattr(compiled.host, "__module__", None)
    module = sys.modules.get(name) if name else None
    if module is not None and getattr(module, "__file__", None) and \
            any(value is compiled.host for value in vars(module).values()):
        del sys.modules[name]


_MEMORY_CACHE = LRUCache(on_evict=_forget)
_LOCK = threading.Lock()


def simulator_enabled() -> bool:
    """Whether Numba runs CUDA code in its simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def device_facts() -> DeviceFacts:
    """Facts of the current CUDA device, or ``CUDA_FACTS`` under the simulator / without one
    (the device is queried once per process)."""
    if simulator_enabled():
        return CUDA_FACTS
    return _queried_device_facts()


@functools.cache
def _queried_device_facts() -> DeviceFacts:
    try:
        from numba import cuda

        dev = cuda.get_current_device()
        return dataclasses.replace(
            CUDA_FACTS,
            shared_memory_per_block=int(dev.MAX_SHARED_MEMORY_PER_BLOCK),
            max_threads_per_block=int(dev.MAX_THREADS_PER_BLOCK),
            max_block_dims=(
                int(dev.MAX_BLOCK_DIM_X),
                int(dev.MAX_BLOCK_DIM_Y),
                int(dev.MAX_BLOCK_DIM_Z),
            ),
            warp_size=int(dev.WARP_SIZE),
        )
    except Exception:  # no driver, no device: the defaults (48 KiB, 1024 threads)
        return CUDA_FACTS


# ---------------------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------------------


def _place(func: PrimFunc, target: Target) -> PrimFunc:
    return place_allocations(func)


def split_kernels(func: PrimFunc) -> tuple[list[Allocate], tuple[Stmt, ...]]:
    """The top-level global ``Allocate`` nodes of ``func`` (the workspace) and the kernel
    statements under them."""
    tops: list[Allocate] = []
    stmt = func.root_block.body
    while isinstance(stmt, Allocate) and stmt.buffer.scope == "global":
        tops.append(stmt)
        stmt = stmt.body
    kernels = stmt.stmts if isinstance(stmt, SeqStmt) else (stmt,)
    return tops, tuple(kernels)


class _DropAllocations(IRMapper):
    """Remove the ``Allocate`` nodes of ``scopes``, remembering their buffers."""

    def __init__(self, scopes: tuple[str, ...]):
        self.scopes = scopes
        self.buffers = []

    def visit_Allocate(self, node: Allocate):
        if node.buffer.scope in self.scopes:
            self.buffers.append(node.buffer)
            return self.visit(node.body)
        body = self.visit(node.body)
        return node if body is node.body else node.replace(body=body)


def _uses(stmt: Stmt, name: str) -> bool:
    return bool(
        collect(
            stmt,
            lambda n: isinstance(n, (BufferLoad, BufferStore)) and n.buffer.name == name,
        )
    )


def hoist_kernel_allocations(func: PrimFunc, target: Target) -> PrimFunc:
    """Shared buffers at the top of their kernel; global scratch at the top of the function.

    A non-global buffer ``place_allocations`` put at the top of the function (used outside
    every loop) goes to the one kernel using it; two kernels using it is an error
    (``ScopeAcrossKernelsError``).
    """
    tops, kernels = split_kernels(func)
    workspace = [a for a in tops if a.buffer.scope == "global"]
    orphans = [a.buffer for a in tops if a.buffer.scope != "global"]
    new_kernels = []
    for stmt in kernels:
        dropper = _DropAllocations(("shared",))
        body = dropper.visit(stmt)
        mine = list(dropper.buffers)
        for buf in orphans:
            if _uses(stmt, buf.name):
                mine.append(buf)
        for buf in reversed(mine):
            body = Allocate(buf, body)
        new_kernels.append(body)
    for buf in orphans:
        users = [n for n, stmt in enumerate(kernels) if _uses(stmt, buf.name)]
        if len(users) > 1:
            raise ScopeAcrossKernelsError("build", buf.name, buf.scope, users, "", func)
    body = seq(*new_kernels)
    for alloc in reversed(workspace):
        body = Allocate(alloc.buffer, body)
    root = func.root_block.replace(body=body)
    return func.replace(body=func.body.replace(block=root))


def syncthreads_pass(func: PrimFunc, target: Target) -> PrimFunc:
    """``insert_syncthreads`` on every kernel, for the shared buffers it allocates."""
    tops, kernels = split_kernels(func)
    new_kernels = []
    for stmt in kernels:
        shared = {
            node.buffer.name
            for node in collect(stmt, lambda n: isinstance(n, Allocate))
            if node.buffer.scope == "shared"
        }
        new_kernels.append(insert_syncthreads(stmt, shared))
    body = seq(*new_kernels)
    for alloc in reversed(tops):
        body = Allocate(alloc.buffer, body)
    root = func.root_block.replace(body=body)
    return func.replace(body=func.body.replace(block=root))


CUDA_PASSES = (lower_cross_thread_reductions, _place, hoist_kernel_allocations, syncthreads_pass,
               *MEMORY_PASSES)


# ---------------------------------------------------------------------------------------
# Compile
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class CompiledCuda:
    """A generated CUDA module: host launcher, kernels and their launch configurations."""

    source: str
    host: object
    kernels: tuple  # the cuda.jit dispatchers, in launch order
    launches: tuple[LaunchConfig, ...]
    workspace: tuple  # Buffers
    device_func: PrimFunc
    compile_seconds: float
    path: Path | None = None  # the generated module's file in the kernel cache
    generated: object = None  # the printer's output (``func_name``: the host function)


def prepare(lowered: PrimFunc, target: Target) -> tuple[PrimFunc, tuple[LaunchConfig, ...]]:
    """The target passes and the verifier: the device function and its launch configs."""
    func = target.run_passes(lowered)
    _, kernels = split_kernels(func)
    device = target.device
    limit = target.options["max_threads_per_block"] or device.max_threads_per_block
    extents = verify_gpu(lowered, kernels, device, limit)
    return func, tuple(launch_config(e) for e in extents)


def generate_cuda_source(lowered: PrimFunc, target: Target | None = None) -> str:
    """The ``@cuda.jit`` source the ``cuda`` target generates for lowered ``lowered``."""
    target = target or Target("cuda")
    func, launches = prepare(lowered, target)
    _, kernels = split_kernels(func)
    printer = CudaPrinter(
        func, tuple(zip(kernels, launches, strict=True)), fastmath=target.options["fastmath"]
    )
    return printer.run().source


def compile_cuda(lowered: PrimFunc, target: Target) -> tuple[CompiledCuda, str | None]:
    """Generate and import the module (or fetch it from the memory cache)."""
    key = (lowered, target.key())
    with _LOCK:
        cached = _MEMORY_CACHE.get(key)
        if cached is not None:
            return cached, "memory"
    start = time.perf_counter()
    func, launches = prepare(lowered, target)
    _, kernels = split_kernels(func)
    printer = CudaPrinter(
        func, tuple(zip(kernels, launches, strict=True)), fastmath=target.options["fastmath"]
    )
    generated = printer.run()
    module = import_generated(generated.source, generated.func_name + "_cuda")
    compiled = CompiledCuda(
        generated.source,
        getattr(module, generated.func_name),
        tuple(getattr(module, name) for name in printer.kernel_names),
        launches,
        generated.workspace,
        func,
        time.perf_counter() - start,
        Path(module.__file__),
        generated,
    )
    with _LOCK:
        _MEMORY_CACHE[key] = compiled
    return compiled, None


def clear_memory_cache() -> int:
    """Forget every CUDA module built in this process; return how many were dropped."""
    return _MEMORY_CACHE.clear()


# ---------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------


_on_device = is_device_array


class CudaKernel(Kernel):
    """A PrimFunc compiled to CUDA kernels with Numba.

    Call it with numpy arrays (copied to the device and the outputs copied back: simple,
    slow) or with device arrays (``numba.cuda`` device arrays, CuPy arrays, torch CUDA
    tensors: anything with ``__cuda_array_interface__``; launched directly, asynchronously).

    Attributes
    ----------
    launches : tuple of LaunchConfig
        Grid and block dimensions of each kernel, in launch order.
    device_func : PrimFunc
        The function after the CUDA passes (``Allocate`` and ``SyncThreads`` included).
    """

    device_resident = True  # compiled models and the tuner keep arrays on the device

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        compiled: CompiledCuda = self._compiled
        self.launches = compiled.launches
        self.device_func = compiled.device_func
        self._device_workspace = None
        self._lean = LeanLauncher(self)  # cuda_launch: checks once per shape signature
        self._expected = tuple(
            (p.name, tuple(int(n) for n in p.shape), np.dtype(p.dtype)) for p in self.func.params
        )

    @property
    def workspace(self) -> tuple:
        """The device scratch arrays (allocated on the first call, reused after)."""
        if self._device_workspace is None:
            from numba import cuda

            self._device_workspace = tuple(
                cuda.device_array(tuple(int(n) for n in buf.shape), dtype=buf.dtype)
                for buf in self._compiled.workspace
            )
        return self._device_workspace

    def __call__(self, *arrays) -> None:
        if self._lean.try_launch(arrays):  # a signature seen before: pointers only
            return
        if arrays and _on_device(arrays[0]) and all(_on_device(a) for a in arrays):
            self._check_device_arguments(arrays)
            self._runner(*arrays, *(self._device_workspace or self.workspace))
            self._lean.remember(arrays)
            return
        check_arguments(self.func, arrays, self._written, self._read)
        device = [to_device(a) for a in arrays]
        self._runner(*device, *self.workspace)
        for param, host, dev in zip(self.func.params, arrays, device, strict=True):
            if param.name in self._written:
                to_host(dev, host)

    def _check_device_arguments(self, arrays) -> None:
        """Shape and dtype of device arrays, against the parameters (kept cheap: this runs
        on every call of the cached path)."""
        expected = self._expected
        if len(arrays) != len(expected):
            raise KernelArgumentError(
                f"{self.func.name} expects {len(expected)} arrays, got {len(arrays)}"
            )
        for (name, shape, dtype), value in zip(expected, arrays, strict=True):
            if value.shape != shape or value.dtype != dtype:
                got_dtype = np.dtype(str(value.dtype).replace("torch.", ""))
                if tuple(value.shape) == shape and got_dtype == dtype:
                    continue  # a torch tensor: torch.Size and torch.dtype compare unequal
                raise KernelArgumentError(
                    f"argument {name!r} of {self.func.name}: expected {dtype} array of shape "
                    f"{shape}, got {got_dtype} array of shape {tuple(value.shape)}"
                )

    # -- inspection (a real GPU, after the first call compiled the kernels) ---------------

    def _specializations(self):
        """One compiled overload per kernel (Numba compiles on the first launch)."""
        if simulator_enabled():
            raise RuntimeError(
                "kernel.ptx and the resource usage need a real GPU: under the CUDA simulator "
                "nothing is compiled (read kernel.source instead)"
            )
        found = []
        for dispatcher in self._compiled.kernels:
            overloads = getattr(dispatcher, "overloads", {})
            if not overloads:
                raise RuntimeError("call the kernel once first: Numba compiles on first launch")
            found.append(next(iter(overloads.values())))
        return found

    @property
    def ptx(self) -> str:
        """The PTX of every kernel, in launch order."""
        texts = []
        for overload in self._specializations():
            try:
                asm = overload.inspect_asm()
            except TypeError:  # numba-cuda 0.30: inspect_asm(cc) (seen on the H200)
                from numba import cuda

                asm = overload.inspect_asm(cuda.get_current_device().compute_capability)
            texts.append("\n".join(asm.values()) if isinstance(asm, dict) else str(asm))
        return "\n".join(texts)

    def resource_usage(self) -> list[dict]:
        """Per kernel: registers per thread, shared memory per block, threads, occupancy."""
        rows = []
        for overload, launch in zip(self._specializations(), self.launches, strict=True):
            regs = int(_attribute(overload, "regs_per_thread", "get_regs_per_thread"))
            shared = int(_attribute(overload, "shared_mem_per_block", "get_shared_mem_per_block"))
            threads = launch.threads_per_block
            rows.append(
                {
                    "registers_per_thread": regs,
                    "shared_bytes_per_block": shared,
                    "threads_per_block": threads,
                    "occupancy": round(occupancy(regs, shared, threads), 3),
                }
            )
        return rows


def _attribute(obj, name: str, method: str):
    value = getattr(obj, name, None)
    if value is None:
        value = getattr(obj, method)()
    return value() if callable(value) else value


def occupancy(
    regs: int,
    shared: int,
    threads: int,
    *,
    sm_threads: int = 2048,
    sm_regs: int = 65536,
    sm_shared: int = 228 * 1024,
    sm_blocks: int = 32,
) -> float:
    """Fraction of an SM's thread slots a kernel can keep resident (Hopper limits)."""
    warps = -(-threads // 32)
    by_threads = sm_threads // max(threads, 1)
    by_regs = sm_regs // max(regs * warps * 32, 1)
    by_shared = sm_shared // shared if shared else sm_blocks
    blocks = min(by_threads, by_regs, by_shared, sm_blocks)
    return blocks * warps * 32 / sm_threads


def compile_cuda_kernel(func: PrimFunc, lowered: PrimFunc, target: Target, written) -> CudaKernel:
    verify_stages_within_kernels(func)
    compiled, hit = compile_cuda(lowered, target)
    return CudaKernel(
        func,
        lowered,
        target.name,
        compiled.host,
        options=dict(target.options),
        source=compiled.source,
        written=written,
        compile_seconds=0.0 if hit else compiled.compile_seconds,
        cache_hit=hit,
        compiled=compiled,
        target_info=target,
    )


CUDA = register_target(
    TargetKind(
        "cuda",
        CUDA_DEFAULTS,
        passes=CUDA_PASSES,
        compile=compile_cuda_kernel,
        kernel_class=CudaKernel,
        device=device_facts,
        description="@cuda.jit kernels (Numba CUDA; the simulator in CI)",
        printer=CudaPrinter,
        graph_schedule="workbench.recipes.graph_cuda:graph_schedule",
        graph_layout="workbench.graph.passes.conv_gemm:cuda_layout",
        tuning_rules="workbench.tune.rules_cuda:cuda_rules",
        warnings="workbench.viz.advice:cuda_schedule_warnings",
        explorer_views="workbench.widgets.target_views:cuda_views",
        artifact_format="numba-cuda-module",
        module=__name__,
    )
)
