"""The printer: a ``PrimFunc`` as TVMScript-like text that ``from_source`` parses back.

``from_source(script(f)) == f`` for any function the parser or the schedule primitives
build. Layout choices (as TVM prints):

- a perfect nest of serial loops starting at 0 prints as one ``T.grid`` line;
- a block whose iteration variables are bound to whole loops prints ``T.axis.remap``;
  otherwise one ``T.axis.spatial/reduce(extent, value)`` line each;
- ``T.reads``/``T.writes`` are always printed, so learners see the regions;
- the root block is implicit (its buffers are allocated at the top of the body) unless it
  carries annotations or regions.

``mark`` (a ``For``/``Block`` of the function) ends its line with ``  # <-- label``; the
HTML form highlights that line.
"""

from __future__ import annotations

import sys

from workbench.ir.buffer import Buffer
from workbench.ir.expr import IntImm, PrimExpr, Var
from workbench.ir.expr_text import dict_literal, expr_text, index_text
from workbench.ir.function import PrimFunc
from workbench.ir.functor import collect
from workbench.ir.node import Node
from workbench.ir.regions import region_text, stop_expr
from workbench.ir.stmt import (
    TRUE,
    BlockRealize,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    Range,
    SeqStmt,
    Stmt,
)

INDENT = "    "
MARK_COLOR = "#ffe58f"
"""Background of the marked line in ``script_html``."""


def script(func: PrimFunc, mark: Node | None = None, mark_label: str = "") -> str:
    """The function as DSL text.

    Parameters
    ----------
    func : PrimFunc
        The function to print.
    mark : For or Block, optional
        A node of ``func`` whose line gets the comment ``# <-- {mark_label}``.
    mark_label : str
        The text of that comment.

    Example
    -------
    >>> from workbench import T
    >>> @T.prim_func
    ... def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    ...     for i in T.serial(4):
    ...         with T.block("B"):
    ...             vi = T.axis.spatial(4, i)
    ...             B[vi] = A[vi] + 1.0
    >>> print(script(add))
    @T.prim_func
    def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in T.serial(4):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1)
    """
    return _Printer(func, mark, mark_label).print_function()[0]


def script_html(func: PrimFunc, mark: Node | None = None, mark_label: str = "") -> str:
    """The function as syntax-highlighted HTML (inline styles), the marked line highlighted.

    Example
    -------
    >>> html = script_html(add)                                   # doctest: +SKIP
    >>> html.startswith("<div")                                   # doctest: +SKIP
    True
    """
    text, marked = _Printer(func, mark, mark_label).print_function()
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    from pygments.styles.default import DefaultStyle

    class _MarkedStyle(DefaultStyle):
        highlight_color = MARK_COLOR

    formatter = HtmlFormatter(noclasses=True, style=_MarkedStyle, nobackground=True,
                              hl_lines=[marked] if marked else [],
                              cssstyles="font-size: 12px; line-height: 1.3;")
    return highlight(text, PythonLexer(), formatter)


def show(func: PrimFunc, mark: Node | None = None, mark_label: str = "") -> None:
    """Display the function: HTML in Jupyter, colours in a terminal, plain text otherwise.

    Example
    -------
    >>> show(add)                                                 # doctest: +SKIP
    """
    from IPython import get_ipython  # a dependency (through ipywidgets)
    from IPython.display import HTML, display

    shell = get_ipython()
    if shell is not None and hasattr(shell, "kernel"):
        display(HTML(script_html(func, mark, mark_label)))
        return
    text = script(func, mark, mark_label)
    if sys.stdout.isatty():
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer

        text = highlight(text, PythonLexer(), TerminalFormatter()).rstrip("\n")
    print(text)


class _Printer:
    def __init__(self, func: PrimFunc, mark: Node | None, mark_label: str):
        self.func = func
        self.lines: list[str] = []
        self.depth = 0
        self.mark = mark
        self.mark_label = mark_label
        self.marked_line: int | None = None  # 1-based
        self.by_identity = mark is not None and bool(collect(func.body, lambda n: n is mark))
        self.loop_domains: dict[Var, tuple[PrimExpr, PrimExpr]] = {}

    # ---- output -------------------------------------------------------------------------

    def emit(self, text: str, node: Node | None = None) -> None:
        if node is not None and self.is_mark(node):
            text += f"  # <-- {self.mark_label}" if self.mark_label else "  # <--"
            self.marked_line = len(self.lines) + 1
        self.lines.append(INDENT * self.depth + text)

    def is_mark(self, node: Node) -> bool:
        if self.mark is None or self.marked_line is not None:
            return False
        if self.by_identity:
            return node is self.mark
        return node == self.mark

    # ---- function -----------------------------------------------------------------------

    def print_function(self) -> tuple[str, int | None]:
        func = self.func
        params = ", ".join(_param_text(buf) for buf in func.params)
        self.emit("@T.prim_func")
        self.emit(f"def {func.name}({params}):")
        self.depth += 1
        if func.attrs:
            self.emit(f"T.func_attr({dict_literal(func.attrs)})")
        realize = func.body
        root = realize.block if isinstance(realize, BlockRealize) else None
        if root is not None and _root_is_implicit(realize):
            for buffer in root.alloc_buffers:
                self.emit(_alloc_text(buffer))
            self.stmt(root.body)
        else:
            self.stmt(realize)
        return "\n".join(self.lines), self.marked_line

    # ---- statements ---------------------------------------------------------------------

    def stmt(self, node: Stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise TypeError(f"cannot print statement {type(node).__name__}")
        method(node)

    def body(self, node: Stmt) -> None:
        self.depth += 1
        self.stmt(node)
        self.depth -= 1

    def stmt_SeqStmt(self, node: SeqStmt) -> None:
        if not node.stmts:
            self.emit("pass")
        for stmt in node.stmts:
            self.stmt(stmt)

    def stmt_BufferStore(self, node: BufferStore) -> None:
        self.emit(f"{node.buffer.name}[{index_text(node.indices)}] = {expr_text(node.value)}")

    def stmt_Evaluate(self, node: Evaluate) -> None:
        self.emit(f"T.evaluate({expr_text(node.value)})")

    def stmt_IfThenElse(self, node: IfThenElse, keyword: str = "if") -> None:
        self.emit(f"{keyword} {expr_text(node.condition)}:")
        self.body(node.then_case)
        else_case = node.else_case
        if else_case is None:
            return
        if isinstance(else_case, IfThenElse):
            self.stmt_IfThenElse(else_case, "elif")
            return
        self.emit("else:")
        self.body(else_case)

    def stmt_For(self, node: For) -> None:
        nest = [node]
        while _is_grid_loop(nest[-1]) and _is_grid_loop(nest[-1].body) \
                and not self.is_mark(nest[-1].body):
            nest.append(nest[-1].body)
        for loop in nest:
            self.loop_domains[loop.loop_var] = (loop.min, loop.extent)
        if len(nest) > 1:
            names = ", ".join(loop.loop_var.name for loop in nest)
            extents = ", ".join(expr_text(loop.extent) for loop in nest)
            self.emit(f"for {names} in T.grid({extents}):", node)
        else:
            self.emit(f"for {node.loop_var.name} in {_loop_call(node)}:", node)
        self.body(nest[-1].body)

    def stmt_BlockRealize(self, node: BlockRealize) -> None:
        block = node.block
        self.emit(f'with T.block("{block.name}"):', block if self.is_mark(block) else node)
        self.depth += 1
        self.iter_var_lines(node)
        if node.predicate != TRUE:
            self.emit(f"T.where({expr_text(node.predicate)})")
        self.emit(f"T.reads({_regions_text(block.reads)})")
        self.emit(f"T.writes({_regions_text(block.writes)})")
        if block.annotations:
            self.emit(f"T.block_attr({dict_literal(block.annotations)})")
        for buffer in block.alloc_buffers:
            self.emit(_alloc_text(buffer))
        if block.init is not None:
            self.emit("with T.init():")
            self.body(block.init)
        self.stmt(block.body)
        self.depth -= 1

    def iter_var_lines(self, node: BlockRealize) -> None:
        iter_vars = node.block.iter_vars
        if not iter_vars:
            return
        if all(self.binds_whole_loop(iv.dom, value)
               for iv, value in zip(iter_vars, node.iter_values, strict=True)):
            names = ", ".join(iv.var.name for iv in iter_vars)
            kinds = "".join(iv.kind.value for iv in iter_vars)
            loops = ", ".join(value.name for value in node.iter_values)
            self.emit(f'{names} = T.axis.remap("{kinds}", [{loops}])')
            return
        for iv, value in zip(iter_vars, node.iter_values, strict=True):
            kind = "spatial" if iv.kind is IterKind.SPATIAL else "reduce"
            self.emit(f"{iv.var.name} = T.axis.{kind}({_domain_text(iv.dom)}, "
                      f"{expr_text(value)})")

    def binds_whole_loop(self, dom: Range, value: PrimExpr) -> bool:
        return isinstance(value, Var) and self.loop_domains.get(value) == (dom.min, dom.extent)


def _root_is_implicit(realize: BlockRealize) -> bool:
    root = realize.block
    return (root.name == "root" and not root.annotations and not root.reads
            and not root.writes and root.init is None and not root.iter_vars
            and realize.predicate == TRUE and not _starts_with_root_block(root.body))


def _starts_with_root_block(body: Stmt) -> bool:
    # a lone inner block named "root" would be read back as the root block itself
    return isinstance(body, BlockRealize) and body.block.name == "root"


def _param_text(buffer: Buffer) -> str:
    return f'{buffer.name}: T.Buffer({_shape_text(buffer.shape)}, "{buffer.dtype}")'


def _shape_text(shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _alloc_text(buffer: Buffer) -> str:
    scope = f', scope="{buffer.scope}"' if buffer.scope != "global" else ""
    return f'{buffer.name} = T.alloc_buffer({_shape_text(buffer.shape)}, "{buffer.dtype}"{scope})'


def _is_grid_loop(node: Stmt) -> bool:
    return (isinstance(node, For) and node.kind is ForKind.SERIAL and node.thread_binding is None
            and not node.annotations and node.min == IntImm(0) and isinstance(node.extent, IntImm)
            and node.extent.dtype == "int32")


def _loop_call(node: For) -> str:
    if node.min == IntImm(0):
        args = [expr_text(node.extent)]
    else:
        args = [expr_text(node.min), expr_text(stop_expr(node.min, node.extent))]
    if node.kind is ForKind.THREAD_BINDING:
        args.append(f'thread="{node.thread_binding}"')
    if node.annotations:
        args.append(f"annotations={dict_literal(node.annotations)}")
    return f"T.{node.kind.value}({', '.join(args)})"


def _domain_text(dom: Range) -> str:
    if dom.min == IntImm(0):
        return expr_text(dom.extent)
    return f"({expr_text(dom.min)}, {expr_text(stop_expr(dom.min, dom.extent))})"


def _regions_text(regions: tuple[BufferRegion, ...]) -> str:
    return ", ".join(region_text(region) for region in regions)
