"""Generate readable Python source from a lowered PrimFunc: the printer base and its helpers.

A printer only prints: the target's passes (``Target.run_passes``: the ``cpu`` kind's
``cpu_passes``, the CUDA ones in ``numba_cuda``) have already rewritten the IR, and
``place_allocations`` has put an explicit ``Allocate`` statement wherever a buffer lives.
One printer base here, one subclass per target in the target's package:

* ``PythonPrinter`` (``"python"``): plain Python loops over numpy arrays, run by the
  ``numpy`` reference executor for blocks its whole-array path cannot handle;
* ``CpuPrinter`` (``workbench.backends.cpu.numba_cpu_printer``): one ``@numba.njit``
  function;
* ``CudaPrinter`` (``workbench.backends.cuda.numba_cuda_printer``): ``@cuda.jit`` kernels.

The function is named after the PrimFunc and takes the buffers in parameter order, named
after them. Each statement that came from a block is preceded by ``# block <name>``.
"""

from __future__ import annotations

import dataclasses
import keyword

from workbench.backends.common.allocation import Allocate, place_allocations
from workbench.backends.common.expr_printer import (
    ExprPrinter,
    np_dtype_name,
    source_comment,
)
from workbench.backends.common.lower import is_opaque_block
from workbench.backends.common.target import resolve_target
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
)
from workbench.ir.functor import collect

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


def generate_source(
    lowered: PrimFunc, *, target: str = "cpu", cache: bool = True, **options
) -> GeneratedSource:
    """Python source for the lowered function ``lowered`` (see ``workbench.backends.common.lower``).

    ``target`` is ``"python"`` (plain Python, for the reference: allocations placed, then
    ``PythonPrinter``) or a target kind whose printer takes the target's options
    (``printer.from_target``; the ``cpu`` kind's ``CpuPrinter``): the kind's passes run
    (``Target.run_passes``, ``place_allocations`` among them), then its printer prints.
    ``options`` are the target's options (``fastmath``, ``promote``...); ``cache`` is the
    printed ``@numba.njit(cache=...)``. ``debug`` is accepted for the build options' sake:
    the bounds checks of a debug build are already in ``lowered``
    (``workbench.backends.common.bounds_checks``).
    """
    if target == "python":
        return PythonPrinter(place_allocations(lowered)).run()
    target = resolve_target(target, "generate_source", **options)
    from_target = getattr(target.kind.printer, "from_target", None)
    if from_target is None:
        raise ValueError(f"generate_source: target {target.name!r} has no printer of its "
                         "options (expected 'python' or a kind such as 'cpu')")
    return from_target(target.run_passes(lowered), target, cache=cache).run()


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
            ["from workbench.backends.cpu import runtime as rt"]
            if self.printer.uses_runtime else [],
        ]
        return lines + import_lines(groups)

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
        return allocation_line(self.names[buf.name], "np.zeros", buf)

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


def allocation_line(name: str, maker: str, buf: Buffer) -> str:
    shape = repr(tuple(int(n) for n in buf.shape))
    scope = f"  # scope {source_comment(buf.scope)}" if buf.scope != "global" else ""
    return f"{name} = {maker}({shape}, dtype={np_dtype_name(buf.dtype)}){scope}"


def import_lines(groups: list[list[str]]) -> list[str]:
    lines: list[str] = []
    for group in groups:
        if group:
            lines += group + [""]
    return lines
