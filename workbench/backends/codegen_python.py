"""Generate readable Python source from a lowered PrimFunc: the printers.

A printer only prints: the target's passes (``cpu_passes``; the CUDA ones live in
``numba_cuda``) have already rewritten the IR, and ``place_allocations`` has put an explicit
``Allocate`` statement wherever a buffer lives. One printer base, one subclass per target:

* ``PythonPrinter`` (``"python"``): plain Python loops over numpy arrays, run by the
  ``numpy`` reference executor for blocks its whole-array path cannot handle;
* ``CpuPrinter`` (``"cpu"``): a module with one ``@numba.njit`` function (``prange`` for
  parallel loops, unsigned index arithmetic where safe, the vectorizable ``exp``, small
  local buffers on the stack, global scratch buffers as *workspace* parameters);
* ``CudaPrinter`` (``workbench.backends.numba_cuda_printer``): ``@cuda.jit`` kernels.

The function is named after the PrimFunc and takes the buffers in parameter order, named
after them. Each statement that came from a block is preceded by ``# block <name>``.
"""

from __future__ import annotations

import dataclasses
import keyword

import numpy as np

from workbench.backends.allocation import Allocate, place_allocations, workspace_buffers
from workbench.backends.expr_printer import (
    ExprPrinter,
    np_dtype_name,
    source_comment,
    source_dtype,
)
from workbench.backends.lower import is_opaque_block
from workbench.backends.promote import promote_accumulators
from workbench.backends.unroll import unroll_small_loops
from workbench.backends.unsigned import use_unsigned_indices
from workbench.backends.unswitch import unswitch_innermost_loops
from workbench.ir import (
    BlockRealize,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
)
from workbench.ir.functor import collect

STACK_MAX_BYTES = 16 * 1024
"""``local``/``shared`` buffers up to this size live on the stack in ``cpu`` kernels
(``runtime.stack_allocator``), larger ones come from ``np.empty``. A register tile or a
promoted accumulator is a few KiB; worker threads' stacks are much larger than this."""

_LOOP_COMMENTS = {
    ForKind.SERIAL: "",
    ForKind.PARALLEL: "  # parallel",
    ForKind.VECTORIZED: "  # vectorized: unit-stride innermost loop for LLVM",
    ForKind.UNROLLED: "  # unroll: constant trip count, unrolled by LLVM",
    ForKind.THREAD_BINDING: "  # bound to {binding}: serial on cpu",
}

_RESERVED = {"np", "numba", "math", "rt", "u64", "prange", "range", "min", "max", "abs", "bool"}


@dataclasses.dataclass(frozen=True)
class LoopInfo:
    """Where a loop of the IR landed in the generated source (1-based, inclusive lines)."""

    var: str
    kind: ForKind
    first_line: int
    last_line: int
    innermost: bool
    extent: int | None


@dataclasses.dataclass(frozen=True)
class GeneratedSource:
    """The generated module text and what the builder needs to know about it."""

    source: str
    func_name: str
    param_names: tuple[str, ...]
    loops: tuple[LoopInfo, ...]
    parallel: bool
    unsigned_indices: bool
    workspace: tuple[Buffer, ...] = ()
    """Global scratch buffers passed after the parameters (allocated once by the kernel)."""


def python_identifier(name: str, taken: set[str]) -> str:
    """``name`` made a valid Python identifier that is not a keyword or in ``taken``."""
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "_"
    if text[0].isdigit():
        text = "_" + text
    while keyword.iskeyword(text) or text in _RESERVED or text in taken:
        text += "_"
    return text


def cpu_passes(lowered: PrimFunc, *, promote: bool = True) -> PrimFunc:
    """The ``cpu`` target's IR passes, in order (before ``place_allocations``).

    Reduction outputs are promoted to local tiles (``promote``, see
    ``workbench.backends.promote``), small ``unroll`` loops are text-unrolled and
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


def generate_source(
    lowered: PrimFunc,
    *,
    target: str = "cpu",
    fastmath: bool = True,
    fast_exp: bool = True,
    boundscheck: bool = False,
    promote: bool = True,
    cache: bool = True,
    debug: bool = False,
    workspace: bool = True,
) -> GeneratedSource:
    """Python source for the lowered function ``lowered`` (see ``workbench.backends.lower``).

    ``debug`` is accepted for the build options' sake: the bounds checks of a debug build
    are already in ``lowered`` (``workbench.backends.bounds_checks``).

    ``target`` is ``"cpu"`` (Numba) or ``"python"`` (plain Python, for the reference).
    For ``cpu`` the target passes run first (``cpu_passes``); for both, allocations are
    placed (``place_allocations``), then the target's printer prints.
    """
    steps = _SOURCE_STEPS.get(target)
    if steps is None:
        raise ValueError(f"generate_source: unknown target {target!r} (expected 'cpu' or 'python')")
    passes, print_source = steps
    func = place_allocations(passes(lowered, promote))
    return print_source(func, fastmath, fast_exp, boundscheck, cache, workspace)


_SOURCE_STEPS = {
    "cpu": (lambda func, promote: cpu_passes(func, promote=promote),
            lambda func, *flags: CpuPrinter(func, *flags).run()),
    "python": (lambda func, promote: func, lambda func, *flags: PythonPrinter(func).run()),
}
"""``generate_source``'s passes and printer per source kind (the ``cpu`` target's own
compile step runs ``Target.run_passes`` and its kind's printer instead)."""


def _names_in(func: PrimFunc) -> set[str]:
    """Every buffer and variable name of ``func`` (new names must avoid them)."""
    names = {b.name for b in func.params} | {b.name for b in func.root_block.alloc_buffers}
    names |= {v.name for v in collect(func.body, lambda n: isinstance(n, Var))}
    return names


def allocated_buffers(func: PrimFunc) -> list[Buffer]:
    """Every buffer an ``Allocate`` of ``func`` allocates, in program order."""
    found = collect(func.root_block.body, lambda n: isinstance(n, Allocate))
    return list(dict.fromkeys(node.buffer for node in found))


class PythonPrinter:
    """Prints a lowered, allocation-placed function as plain Python (the base printer).

    Subclasses change the header, the decorator, the loop statement and the allocations;
    the statements and expressions print the same everywhere.
    """

    target = "python"
    title = "python (numpy reference, loop path)"

    def __init__(self, func: PrimFunc):
        self.func = func
        self.numba = False
        self.unsigned = False
        self.workspace: tuple[Buffer, ...] = ()
        self.names = self._assign_names()
        self.printer = self._expr_printer()
        self.lines: list[str] = []
        self.loops: list[LoopInfo] = []
        self.parallel = False

    def _expr_printer(self) -> ExprPrinter:
        return ExprPrinter(self.names)

    def _assign_names(self) -> dict[str, str]:
        taken: set[str] = set()
        names: dict[str, str] = {}
        self.func_name = python_identifier(self.func.name, taken)
        taken.add(self.func_name)
        buffers = list(self.func.params) + allocated_buffers(self.func)
        for buf in buffers:
            names[buf.name] = python_identifier(buf.name, taken)
            taken.add(names[buf.name])
        for loop in collect(self.func.root_block.body, lambda n: isinstance(n, For)):
            name = loop.loop_var.name
            if name not in names:
                names[name] = python_identifier(name, taken)
                taken.add(names[name])
        return names

    # -- module ---------------------------------------------------------------------

    def run(self) -> GeneratedSource:
        params = [self.names[b.name] for b in self.func.params + self.workspace]
        body_lines = self._function_body()
        header = self._header()
        signature = f"def {self.func_name}({', '.join(params)}):"
        decorator = self._decorator()
        all_lines = header + decorator + [signature]
        offset = len(all_lines)
        loops = tuple(
            dataclasses.replace(
                loop, first_line=loop.first_line + offset, last_line=loop.last_line + offset
            )
            for loop in self.loops
        )
        source = "\n".join(all_lines + body_lines) + "\n"
        return GeneratedSource(
            source,
            self.func_name,
            tuple(params),
            loops,
            self.parallel,
            self.unsigned,
            self.workspace,
        )

    def _title(self) -> str:
        name = source_comment(repr(self.func.name))
        return f"PrimFunc {name} generated by workbench for target {self.title}."

    def _header(self) -> list[str]:
        lines = ['"""' + self._title() + '"""', ""]
        groups = [
            ["import math"] if self.printer.uses_math else [],
            ["import numpy as np"],
            ["from workbench.backends import runtime as rt"] if self.printer.uses_runtime else [],
        ]
        return lines + _import_lines(groups)

    def _decorator(self) -> list[str]:
        return []

    # -- statements -------------------------------------------------------------------

    def _function_body(self) -> list[str]:
        self._stmt(self.func.root_block.body, 1)
        if not self.lines:
            self._emit(1, "pass")
        return self.lines

    def _emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def _stmt_Allocate(self, stmt: Allocate, depth: int):
        line = self._allocation(stmt.buffer)
        if line:
            self._emit(depth, line)
        self._stmt(stmt.body, depth)

    def _allocation(self, buf: Buffer) -> str:
        return _allocation_line(self.names[buf.name], "np.zeros", buf)

    def _stmt(self, stmt: Stmt, depth: int):
        method = getattr(self, "_stmt_" + type(stmt).__name__, None)
        if method is None:
            raise NotImplementedError(f"no Python code generation for {type(stmt).__name__}")
        method(stmt, depth)

    def _body(self, stmt: Stmt, depth: int):
        before = len(self.lines)
        self._stmt(stmt, depth)
        if len(self.lines) == before or all(
            line.strip().startswith("#") for line in self.lines[before:]
        ):
            self._emit(depth, "pass")

    def _stmt_SeqStmt(self, stmt: SeqStmt, depth: int):
        for sub in stmt.stmts:
            self._stmt(sub, depth)

    def _stmt_BlockRealize(self, stmt: BlockRealize, depth: int):
        if not is_opaque_block(stmt):
            raise ValueError(f"block {stmt.block.name!r} is not lowered: call lower(func) first")
        self._emit(depth, f"# block {source_comment(stmt.block.name)}")
        self._stmt(stmt.block.body, depth)

    def _stmt_BufferStore(self, stmt: BufferStore, depth: int):
        target = f"{self.names[stmt.buffer.name]}[{self.printer.indices(stmt.indices)}]"
        self._emit(depth, f"{target} = {self.printer(stmt.value)}")

    def _stmt_IfThenElse(self, stmt: IfThenElse, depth: int):
        self._emit(depth, f"if {self.printer(stmt.condition)}:")
        self._body(stmt.then_case, depth + 1)
        if stmt.else_case is not None:
            self._emit(depth, "else:")
            self._body(stmt.else_case, depth + 1)

    def _stmt_Evaluate(self, stmt: Evaluate, depth: int):
        self._emit(depth, f"pass  # evaluate {self.printer(stmt.value)}")

    def _stmt_For(self, stmt: For, depth: int):
        var = self.names[stmt.loop_var.name]
        first = len(self.lines) + 1
        self._emit(depth, f"for {var} in {self._loop_function(stmt)}({self._range(stmt)}):"
                   + _LOOP_COMMENTS[stmt.kind].format(
                       binding=source_comment(stmt.thread_binding)))
        self._body(stmt.body, depth + 1)
        innermost = not collect(stmt.body, lambda n: isinstance(n, For))
        extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else None
        self.loops.append(LoopInfo(var, stmt.kind, first, len(self.lines), innermost, extent))

    def _loop_function(self, stmt: For) -> str:
        return "range"

    def _range(self, stmt: For) -> str:
        if isinstance(stmt.min, IntImm) and stmt.min.value == 0:
            return self.printer(stmt.extent)
        if isinstance(stmt.min, IntImm) and isinstance(stmt.extent, IntImm):
            end = IntImm(stmt.min.value + stmt.extent.value, stmt.extent.dtype)
            return f"{self.printer(stmt.min)}, {self.printer(end)}"
        return f"{self.printer(stmt.min)}, {self.printer(stmt.min + stmt.extent)}"


def _allocation_line(name: str, maker: str, buf: Buffer) -> str:
    shape = repr(tuple(int(n) for n in buf.shape))
    scope = f"  # scope {source_comment(buf.scope)}" if buf.scope != "global" else ""
    return f"{name} = {maker}({shape}, dtype={np_dtype_name(buf.dtype)}){scope}"


def _import_lines(groups: list[list[str]]) -> list[str]:
    lines: list[str] = []
    for group in groups:
        if group:
            lines += group + [""]
    return lines


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
            ["from workbench.backends import runtime as rt"]
            if self.printer.uses_runtime or self.stack or self.options["fastmath"]
            else [],
        ]
        lines += _import_lines(groups)
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
        return _allocation_line(self.names[buf.name], "np.empty", buf)

    def _loop_function(self, stmt: For) -> str:
        if stmt.kind is ForKind.PARALLEL:
            self.parallel = True
            return "numba.prange"
        return "range"
