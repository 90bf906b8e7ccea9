"""The ``cpu`` target's IR passes and printer: ``cpu_passes`` (promote, unroll, unswitch)
and ``CpuPrinter``, a module with one ``@numba.njit`` function (``prange`` for parallel
loops, unsigned index arithmetic where safe, the vectorizable ``exp``, small local buffers on
the stack, global scratch buffers as *workspace* parameters).

The printer base, ``PythonPrinter``, and the helpers every printer shares live in
``workbench.backends.common.codegen_python``; the ``cpu`` kind names both in its registry
entry (``workbench.backends.cpu.numba_cpu_target``).
"""

from __future__ import annotations

import numpy as np

from workbench.backends.common.allocation import workspace_buffers
from workbench.backends.common.codegen_python import (
    PythonPrinter,
    allocated_buffers,
    allocation_line,
    import_lines,
    python_identifier,
)
from workbench.backends.common.expr_printer import ExprPrinter, source_comment, source_dtype
from workbench.backends.common.unsigned import use_unsigned_indices
from workbench.backends.cpu.promote import promote_accumulators
from workbench.backends.cpu.unroll import unroll_small_loops
from workbench.backends.cpu.unswitch import unswitch_innermost_loops
from workbench.ir import Buffer, For, ForKind, PrimFunc, Var
from workbench.ir.functor import collect

STACK_MAX_BYTES = 16 * 1024
"""``local``/``shared`` buffers up to this size live on the stack in ``cpu`` kernels
(``runtime.stack_allocator``), larger ones come from ``np.empty``. A register tile or a
promoted accumulator is a few KiB; worker threads' stacks are much larger than this."""


def cpu_passes(lowered: PrimFunc, *, promote: bool = True) -> PrimFunc:
    """The ``cpu`` target's IR passes, in order (before ``place_allocations``).

    Reduction outputs are promoted to local tiles (``promote``, see
    ``workbench.backends.cpu.promote``), small ``unroll`` loops are text-unrolled and
    loop-invariant guards are moved out of innermost loops.
    """
    root = lowered.root_block
    body = root.body
    allocations = root.alloc_buffers
    if promote:
        body, tiles = promote_accumulators(body, _names_in(lowered))
        allocations = allocations + tuple(tiles)
    body = unswitch_innermost_loops(unroll_small_loops(body))
    new_root = root.replace(body=body, alloc_buffers=allocations)
    return lowered.replace(body=lowered.body.replace(block=new_root))


def _names_in(func: PrimFunc) -> set[str]:
    """Every buffer and variable name of ``func`` (new names must avoid them)."""
    names = {b.name for b in func.params} | {b.name for b in func.root_block.alloc_buffers}
    names |= {v.name for v in collect(func.body, lambda n: isinstance(n, Var))}
    return names


class CpuPrinter(PythonPrinter):
    """The ``cpu`` target's printer: one ``@numba.njit`` function.

    With ``workspace=True`` global scratch buffers are workspace parameters after the
    function's own (else ``np.empty`` per call); small ``local``/``shared`` buffers live on
    the stack (see ``STACK_MAX_BYTES``).
    """

    target = "cpu"
    title = "cpu (Numba njit)"

    def __init__(
        self,
        func: PrimFunc,
        fastmath: bool = True,
        fast_exp: bool = True,
        boundscheck: bool = False,
        cache: bool = True,
        workspace: bool = True,
    ):
        self.options = dict(fastmath=fastmath, boundscheck=boundscheck, cache=cache)
        self.fast_exp = fast_exp
        self.unsigned_candidate = use_unsigned_indices(func)
        super().__init__(func)
        self.numba = True
        self.unsigned = self.unsigned_candidate
        self.workspace = workspace_buffers(func) if workspace else ()
        self.stack = self._stack_allocators()

    @classmethod
    def from_target(cls, func: PrimFunc, target, *, cache: bool = True) -> CpuPrinter:
        """The printer of ``func`` (the target's passes already run) with ``target``'s
        options; ``cache`` is the printed ``@numba.njit(cache=...)``."""
        o = target.options
        return cls(func, o["fastmath"], o["fast_exp"], o["boundscheck"], cache, o["workspace"])

    def _expr_printer(self) -> ExprPrinter:
        return ExprPrinter(
            self.names, unsigned_indices=self.unsigned_candidate, fast_exp=self.fast_exp
        )

    def _stack_allocators(self) -> dict[str, str]:
        """Buffer name -> name of its module-level stack allocator, for the small
        non-global intermediates of a ``cpu`` kernel (see ``STACK_MAX_BYTES``)."""
        taken = set(self.names.values()) | {self.func_name}
        allocators = {}
        for buf in allocated_buffers(self.func):
            if buf.scope == "global" or not all(isinstance(n, int) for n in buf.shape):
                continue
            elements = 1
            for n in buf.shape:
                elements *= n
            if 0 < elements * np.dtype(buf.dtype).itemsize <= STACK_MAX_BYTES:
                allocators[buf.name] = python_identifier(f"{self.names[buf.name]}_stack", taken)
                taken.add(allocators[buf.name])
        return allocators

    def _title(self) -> str:
        title = super()._title()
        if not self.unsigned:
            return title
        return "\n".join([
            title,
            "",
            "Loop variables and index constants are unsigned (u64) so that Numba omits",
            "negative-index checks and LLVM can vectorize the loops.",
        ])

    def _header(self) -> list[str]:
        title = self._title().split("\n")
        if len(title) == 1:
            lines = ['"""' + title[0] + '"""', ""]
        else:
            lines = ['"""' + title[0], *title[1:], '"""', ""]
        groups = [
            ["import math"] if self.printer.uses_math else [],
            ["import numba", "import numpy as np"]
            + (["from numpy import uint64 as u64"] if self.unsigned else []),
            ["from workbench.backends.cpu import runtime as rt"]
            if self.printer.uses_runtime or self.stack or self.options["fastmath"]
            else [],
        ]
        lines += import_lines(groups)
        if self.stack:
            lines.append("# small local buffers live on the stack (LLVM keeps them in registers)")
            for buf in allocated_buffers(self.func):
                if buf.name in self.stack:
                    shape = repr(tuple(int(n) for n in buf.shape))
                    dtype = source_dtype(buf.dtype)
                    lines.append(
                        f'{self.stack[buf.name]} = rt.stack_allocator({shape}, "{dtype}")'
                    )
            lines.append("")
        lines.append("")
        return lines

    def _decorator(self) -> list[str]:
        o = self.options
        fastmath = "rt.FASTMATH_FLAGS" if o["fastmath"] else "False"
        return [
            # bool(): option values are data (an artifact's manifest), never printed raw
            f"@numba.njit(cache={bool(o['cache'])}, parallel={bool(self.parallel)}, "
            f'fastmath={fastmath}, boundscheck={bool(o["boundscheck"])}, error_model="numpy")'
        ]

    def _allocation(self, buf: Buffer) -> str:
        if buf in self.workspace:
            return ""  # a workspace parameter
        if buf.name in self.stack:
            scope = source_comment(buf.scope)
            return f"{self.names[buf.name]} = {self.stack[buf.name]}()  # scope {scope}, stack"
        return allocation_line(self.names[buf.name], "np.empty", buf)

    def _loop_function(self, stmt: For) -> str:
        if stmt.kind is ForKind.PARALLEL:
            self.parallel = True
            return "numba.prange"
        return "range"
