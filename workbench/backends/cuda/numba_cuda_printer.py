"""``CudaPrinter``: readable ``@cuda.jit`` source for a function the CUDA passes prepared.

The module has one ``@cuda.jit`` kernel per top-level statement of the function and a host
function named after the PrimFunc that launches them in order, with the launch configuration
taken from the bound loops' extents::

    @cuda.jit(fastmath=False)
    def add_kernel0(A, B, C):
        i_0 = cuda.blockIdx.x
        i_1 = cuda.threadIdx.x
        C[i_0 * 32 + i_1] = A[i_0 * 32 + i_1] + B[i_0 * 32 + i_1]


    add_kernel0_launch = add_kernel0[(4, 1, 1), (32, 1, 1)]


    def add(A, B, C):
        add_kernel0_launch(A, B, C)

A loop bound to a thread axis prints as the assignment of its index (it is not a loop on
the GPU); ``shared`` buffers are ``cuda.shared.array`` at the top of their kernel, ``local``
ones ``cuda.local.array`` where ``place_allocations`` put them; global scratch buffers are
workspace parameters; ``SyncThreads`` prints ``cuda.syncthreads()``.
"""

from __future__ import annotations

import dataclasses

from workbench.backends.common.allocation import Allocate, workspace_buffers
from workbench.backends.common.codegen_python import (
    GeneratedSource,
    PythonPrinter,
    python_identifier,
)
from workbench.backends.common.expr_printer import (
    ExprPrinter,
    np_dtype_name,
    source_comment,
    source_dtype,
)
from workbench.backends.cuda import cuda_vector
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.ir import Buffer, Call, Div, For, ForKind, IntImm, PrimFunc, is_float
from workbench.ir.operators import ATOM, MUL

_AXES = ("x", "y", "z")


MIN_BLOCKS_ANNOTATION = "cuda.min_blocks_per_sm"
"""A thread-bound loop's annotation asking the compiler to fit that many blocks of the kernel
on a multiprocessor (the second value of ``launch_bounds``: ptxas caps the registers per
thread at 65536 / (blocks * threads))."""


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """Grid and block dimensions of one kernel, (x, y, z) each; ``min_blocks``: the blocks
    per multiprocessor its launch bounds ask for (0: none asked)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    min_blocks: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def bounded(self) -> bool:
        """Whether the kernel is compiled with launch bounds."""
        return self.threads_per_block > FULL_REGISTER_THREADS or self.min_blocks > 0


def launch_config(extents: dict) -> LaunchConfig:
    """From ``binding.thread_extents``' ``{axis: (extent, loop)}`` to grid and block dims
    (and the ``MIN_BLOCKS_ANNOTATION`` of the bound loops)."""
    grid = tuple(extents.get(f"blockIdx.{a}", (1, None))[0] for a in _AXES)
    block = tuple(extents.get(f"threadIdx.{a}", (1, None))[0] for a in _AXES)
    asked = [int(value) for _, loop in extents.values() if loop is not None
             for key, value in loop.annotations if key == MIN_BLOCKS_ANNOTATION]
    return LaunchConfig(grid, block, max(asked, default=0))


class CudaExprPrinter(ExprPrinter):
    """Expressions for device code: ``math`` functions (no numpy ufuncs, no runtime helpers)."""

    language = "CUDA"

    def _print_Call(self, expr: Call, index_context: bool):
        op = expr.op
        if op.startswith("cuda."):  # warp intrinsics placed by passes (cuda_reduction)
            if not all(part.isidentifier() for part in op.split(".")):
                raise ValueError(f"intrinsic {op!r} is not a dotted name: not printed")
            return f"{op}({', '.join(self.print(a, True) for a in expr.args)})", ATOM
        self.uses_math = True
        return self._intrinsic(expr)

    def _negated(self, arg, text: str) -> str:
        return f"-({text})"

    def _math(self, op: str, args: list[str], dtype: str) -> str:
        return f"{np_dtype_name(dtype)}(math.{op}({', '.join(args)}))"

    def _print_Div(self, expr: Div, index_context: bool):
        if is_float(expr.dtype):
            return self._binary(expr, "/", MUL, index_context)
        raise NotImplementedError("no CUDA code generation for truncating integer division")


FULL_REGISTER_THREADS = 256
"""Kernels of more threads per block than this are compiled with launch bounds
(``cuda_vector_ops.launch_bounds``): at 256 threads a thread may use the most registers
the compiler gives (255); above, an unbounded compile could take more registers than the
block can have (resnet18's 448-thread conv blocks failed to launch on the H200)."""


class CudaPrinter(PythonPrinter):
    """The ``cuda`` target's printer (see the module docstring)."""

    target = "cuda"
    title = "cuda (Numba cuda.jit)"

    def __init__(self, func: PrimFunc, kernels: tuple, *, fastmath: bool = False):
        """``kernels``: ``(statement, LaunchConfig)`` per kernel, in launch order."""
        self.kernels = kernels
        self.fastmath = fastmath
        super().__init__(func)
        self.numba = True
        self.workspace = workspace_buffers(func)
        self.kernel_names: list[str] = []

    def _expr_printer(self) -> ExprPrinter:
        return CudaExprPrinter(self.names)

    def run(self) -> GeneratedSource:
        params = [self.names[b.name] for b in self.func.params + self.workspace]
        taken = set(self.names.values()) | {self.func_name}
        sections: list[str] = []
        launches: list[str] = []
        configs: list[str] = []
        for number, (stmt, config) in enumerate(self.kernels):
            name = python_identifier(f"{self.func_name}_kernel{number}", taken)
            taken.add(name)
            self.kernel_names.append(name)
            self.lines = []
            self._stmt(stmt, 1)
            if not self.lines:
                self._emit(1, "pass")
            threads = config.threads_per_block
            bounds = ""
            if config.bounded:
                blocks = f", {config.min_blocks}" if config.min_blocks else ""
                bounds = f", **launch_bounds({threads}{blocks})"
            head = [
                f"# kernel {number}: grid {config.grid}, block {config.block} "
                f"({threads} threads per block)",
                f"@cuda.jit(fastmath={bool(self.fastmath)}{bounds})",
                f"def {name}({', '.join(params)}):",
            ]
            sections.append("\n".join(head + self.lines))
            configured = python_identifier(f"{name}_launch", taken)
            taken.add(configured)
            configs.append(f"{configured} = {name}[{config.grid}, {config.block}]")
            launches.append(f"    {configured}({', '.join(params)})")
        host = [
            "# launch configurations, made once (not on every call)",
            *configs,
            "",
            "",
            f"def {self.func_name}({', '.join(params)}):",
            '    """Launch the kernels in order (arguments: device arrays or host arrays)."""',
            *(launches or ["    pass"]),
        ]
        header = self._header()
        source = "\n".join(header) + "\n" + "\n\n\n".join(sections + ["\n".join(host)]) + "\n"
        return GeneratedSource(
            source, self.func_name, tuple(params), (), False, False, self.workspace
        )

    def _header(self) -> list[str]:
        lines = ['"""' + self._title() + '"""', ""]
        imports = ["import math", ""] if self.printer.uses_math else []
        imports += ["import numba", "import numpy as np", "from numba import cuda"]
        if cuda_vector.uses_wide_accesses(self.func):
            imports.append(cuda_vector.IMPORT_LINE)
        if any(config.bounded for _, config in self.kernels):
            imports.append("from workbench.backends.cuda.cuda_vector_ops import launch_bounds")
        return lines + imports + ["", ""]

    # -- statements -------------------------------------------------------------------

    def _allocation(self, buf: Buffer) -> str:
        if buf in self.workspace:
            return ""
        shape = repr(tuple(int(n) for n in buf.shape))
        element = f"numba.{'boolean' if buf.dtype == 'bool' else source_dtype(buf.dtype)}"
        if buf.scope == "shared":
            return f"{self.names[buf.name]} = cuda.shared.array({shape}, {element})"
        scope = source_comment(buf.scope)
        return f"{self.names[buf.name]} = cuda.local.array({shape}, {element})  # scope {scope}"

    def _stmt_Allocate(self, stmt: Allocate, depth: int):
        line = self._allocation(stmt.buffer)
        if line:
            self._emit(depth, line)
        self._stmt(stmt.body, depth)

    def _stmt_SyncThreads(self, stmt: SyncThreads, depth: int):
        self._emit(depth, "cuda.syncthreads()")

    # -- wide accesses (cuda_vector) ----------------------------------------------------

    def _stmt_AlignedAllocate(self, stmt: Allocate, depth: int):
        line = self._allocation(stmt.buffer)
        self._emit(depth, line[:-1] + ", alignment=SHARED_ALIGN)")
        self._stmt(stmt.body, depth)

    def _stmt_WideLoad(self, stmt, depth: int):
        self._emit(depth, cuda_vector.wide_load_line(self.names, self.printer, stmt))

    def _stmt_WideStore(self, stmt, depth: int):
        for line in cuda_vector.wide_store_lines(self.names, self.printer, stmt):
            self._emit(depth, line)

    def _stmt_CodeComment(self, stmt, depth: int):
        self._emit(depth, f"# {source_comment(stmt.text)}")

    def _stmt_For(self, stmt: For, depth: int):
        if stmt.kind is not ForKind.THREAD_BINDING:
            super()._stmt_For(stmt, depth)
            return
        var = self.names[stmt.loop_var.name]
        axis, dim = stmt.thread_binding.split(".")
        if not (axis.isidentifier() and dim.isidentifier()):
            raise ValueError(f"thread binding {stmt.thread_binding!r} is not a thread axis")
        index = f"cuda.{axis}.{dim}"
        if not (isinstance(stmt.min, IntImm) and stmt.min.value == 0):
            index = f"{self.printer(stmt.min)} + {index}"
        self._emit(depth, f"{var} = {index}")
        self._stmt(stmt.body, depth)
