"""The GPU verifier ``build(..., target="cuda")`` runs before printing (TVM's
``VerifyGPUCode`` + ``VerifyMemory``): what a schedule must satisfy to run as CUDA kernels.

Errors have the primitives' form (``ScheduleError`` subclasses, primitive ``"build"``, the
offending loop marked in the IR):

* every top-level statement is a kernel: it binds at least one loop to a thread axis
  (``UnboundKernelError``, TVM's "did you forget to bind?");
* no ``parallel`` loop (a CPU-thread annotation; ``ParallelOnGpuError``);
* per kernel: one extent per thread axis (``ThreadExtentMismatchError``), threads per
  block within the device's limit and per-axis block limits (``TooManyThreadsError``),
  static shared memory within the device's per-block limit (``SharedMemoryExceededError``);
* a buffer in ``shared`` or ``local`` scope used by one kernel only
  (``ScopeAcrossKernelsError``).

A ``shared`` stage whose copy is not bound to threads (every thread repeats the whole copy)
stays legal, as in TVM, and is reported with a ``GpuPerformanceWarning``.
"""

from __future__ import annotations

import warnings

import numpy as np

from workbench.backends.common.allocation import Allocate
from workbench.backends.common.target import DeviceFacts
from workbench.ir import Block, BufferStore, For, ForKind, PrimFunc, SeqStmt, Stmt
from workbench.ir.functor import IRVisitor, collect
from workbench.schedule.binding import thread_extents, threads_per_block
from workbench.schedule.errors import ScheduleError
from workbench.schedule.errors_binding import TooManyThreadsError
from workbench.schedule.scope import block_scope


class GpuPerformanceWarning(UserWarning):
    """A legal CUDA schedule that wastes the GPU (e.g. every thread copies a whole tile)."""


class GpuVerifyError(ScheduleError):
    """Base class of the CUDA target's verifier errors (primitive ``"build"``)."""

    @property
    def func_name(self) -> str:
        return self.func.name if self.func is not None else "the function"


class UnboundKernelError(GpuVerifyError):
    """A top-level statement with no loop bound to a thread axis."""

    fields = ("kernel",)
    name_field = ""
    message = "statement {kernel} of {func_name} binds no loop to a GPU thread axis"
    why = ("on the cuda target each top-level statement is one kernel launch; an unbound "
           "statement would run on a single thread (did you forget to bind?)")
    suggestion = 'sch.bind(outer_loop, "blockIdx.x"); sch.bind(inner_loop, "threadIdx.x")'


class ParallelOnGpuError(GpuVerifyError):
    """A ``parallel`` loop (CPU threads) in a function built for CUDA."""

    fields = ("loop",)
    named_fields = ("loop",)
    node_field = "loop"
    message = "loop {loop!r} is parallel, a CPU-only annotation"
    why = ("the cuda target runs loops on GPU threads through bind(); a parallel loop would "
           "mean CPU threads inside a GPU thread")
    suggestion = 'bind loop {loop!r} to "blockIdx.x" (or a threadIdx axis) instead'


class SharedMemoryExceededError(GpuVerifyError):
    """A kernel's static shared memory over the device's per-block limit."""

    fields = ("kernel", "used", "limit")
    name_field = ""
    message = ("kernel {kernel} uses {used} bytes of shared memory per block, more than the "
               "device's {limit}")
    why = "every shared buffer of a kernel lives for the whole block"
    suggestion = "make the shared tiles smaller (split factors) or keep one in local scope"


class ScopeAcrossKernelsError(GpuVerifyError):
    """A shared or local buffer used by two kernels (its contents die with the kernel);
    ``blocks`` says which blocks use it where (``" ('A_shared' in kernel 0, ...)"``)."""

    fields = ("buffer", "scope", "kernels", "blocks")
    message = "{scope} buffer {buffer!r} is used by kernels {kernels}{blocks}"
    why = "{scope} memory lives only while one kernel runs"
    suggestion = ('compute_at its producer under the consumer\'s loops, or set_scope '
                  '{buffer!r} to "global"')


def verify_stages_within_kernels(func: PrimFunc) -> None:
    """Every ``shared`` / ``local`` buffer of the scheduled ``func`` written and read in one
    kernel (one top-level statement of the root block), from the dependence analysis's
    writers and readers of the root scope (``BlockScope``); else ``ScopeAcrossKernelsError``
    naming the blocks, before any lowering."""
    root = func.root_block
    staged = [buf for buf in root.alloc_buffers if buf.scope in ("shared", "local")]
    if not staged:
        return
    scope = block_scope(func)
    tops = root.body.stmts if isinstance(root.body, SeqStmt) else (root.body,)
    kernel_of = {
        block.name: number
        for number, stmt in enumerate(tops)
        for block in collect(stmt, lambda n: isinstance(n, Block))
    }
    for buf in staged:
        users = scope.writers(buf.name) + scope.readers(buf.name)
        kernels = sorted({kernel_of[b] for b in users if b in kernel_of})
        if len(kernels) > 1:
            where = ", ".join(f"{b!r} in kernel {kernel_of[b]}" for b in dict.fromkeys(users))
            raise ScopeAcrossKernelsError("build", buf.name, buf.scope, kernels, f" ({where})",
                                          func)


def verify_gpu(
    func: PrimFunc, kernels: tuple[Stmt, ...], device: DeviceFacts, max_threads: int
):
    """Raise the first ``GpuVerifyError`` (or binding error) of ``kernels``.

    ``func`` is the lowered function the kernels come from (errors show it); returns the
    ``thread_extents`` of each kernel (for the launch configuration).
    """
    for loop in collect(func.root_block.body, lambda n: isinstance(n, For)):
        if loop.kind is ForKind.PARALLEL:
            raise ParallelOnGpuError("build", loop, func)
    all_extents = []
    for number, stmt in enumerate(kernels):
        extents = thread_extents(stmt, "build", func)
        if not extents:
            raise UnboundKernelError("build", number, func, stmt)
        threads = threads_per_block(extents)
        if threads > max_threads:
            first = next(loop for _, loop in extents.values())
            raise TooManyThreadsError(
                "build", "", threads, max_threads, f"kernel {number}", func, first
            )
        for dim, limit in zip("xyz", device.max_block_dims, strict=True):
            extent, loop = extents.get(f"threadIdx.{dim}", (1, None))
            if extent > limit:
                raise TooManyThreadsError(
                    "build", loop.loop_var.name, extent, limit, f"threadIdx.{dim}", func, loop
                )
        used = sum(
            int(np.prod(node.buffer.shape)) * np.dtype(node.buffer.dtype).itemsize
            for node in collect(stmt, lambda n: isinstance(n, Allocate))
            if node.buffer.scope == "shared"
        )
        if used > device.shared_memory_per_block:
            raise SharedMemoryExceededError(
                "build", number, used, device.shared_memory_per_block, func, stmt
            )
        _warn_unbound_shared_copies(stmt, number)
        all_extents.append(extents)
    return all_extents


class _SharedStores(IRVisitor):
    """Shared-buffer stores, each with whether a threadIdx loop encloses it."""

    def __init__(self):
        self.depth = 0
        self.found: list[tuple[BufferStore, bool]] = []

    def visit_For(self, node: For):
        bound = (node.thread_binding or "").startswith("threadIdx")
        self.depth += bound
        self.generic_visit(node)
        self.depth -= bound

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer.scope == "shared":
            self.found.append((node, self.depth > 0))


def _warn_unbound_shared_copies(stmt: Stmt, number: int) -> None:
    stores = _SharedStores()
    stores.visit(stmt)
    for store, under_threads in stores.found:
        if not under_threads:
            warnings.warn(
                f"kernel {number}: shared buffer {store.buffer.name!r} is written outside every "
                "threadIdx loop, so every thread of the block repeats the whole copy; fuse the "
                "copy loops and bind them to threadIdx (cooperative fetch)",
                GpuPerformanceWarning,
                stacklevel=4,
            )
            return
