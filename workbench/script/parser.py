"""The DSL parser: the Python AST of a ``@T.prim_func`` function to a ``PrimFunc``.

``T.prim_func`` (a decorator) and ``from_source`` (text, as the printer writes it) share
this parser. The function body is never executed. Statements are handled here, blocks
in ``block_parser`` and expressions in ``expr_parser``.

Choices worth knowing:

- Loop variables and block iteration variables keep the user's names. A name bound twice
  in one function (two sibling ``for i in ...`` loops) gets a suffix the second time
  (``i_1``), because IR variables are equal by name and must be unique in a function.
- ``T.reads``/``T.writes`` are optional; when absent they are inferred from the block body
  (``workbench.ir.regions.block_access_regions``).
- A block with a reduce axis that stores to a buffer must have ``with T.init():`` unless an
  earlier block already wrote that buffer (the form ``decompose_reduction`` produces).
- If the body is a single ``with T.block("root"):`` it is the root block; otherwise the root
  block is implicit and top-level ``T.alloc_buffer`` calls go into it.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap

from workbench.ir.buffer import SCOPES, Buffer
from workbench.ir.expr import IntImm, PrimExpr, Var
from workbench.ir.function import PrimFunc
from workbench.ir.names import fresh_name
from workbench.ir.operators import NODE_OF
from workbench.ir.stmt import (
    TRUE,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    Stmt,
    seq,
)
from workbench.pyparse import parse
from workbench.script.block_parser import (
    BlockParser,
    Frame,
    range_extent,
    split_offset,
    target_names,
)
from workbench.script.errors import DSLError, SourceInfo, suggest
from workbench.script.expr_parser import article, is_weak, subscript_items
from workbench.script.loop_kinds import check_parallel_loop_kinds
from workbench.script.namespace import BufferType, DSLFunction, T

__all__ = ["Parser", "from_source", "parse_python_function", "range_extent", "split_offset"]

_LOOP_KINDS = {
    "serial": ForKind.SERIAL,
    "parallel": ForKind.PARALLEL,
    "vectorized": ForKind.VECTORIZED,
    "unroll": ForKind.UNROLLED,
    "thread_binding": ForKind.THREAD_BINDING,
}
_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_HEADER_CALLS = ("reads", "writes", "where", "block_attr", "func_attr", "evaluate")


class Parser(BlockParser):
    """Parses one function definition. Create one per function."""

    def __init__(self, source: SourceInfo, env: dict):
        self.source = source
        self.env = env
        self.scopes: list[dict[str, Var]] = [{}]
        self.buffers: dict[str, Buffer] = {}
        self.used_names: set[str] = set()
        self.loop_domains: dict[Var, tuple[PrimExpr, PrimExpr]] = {}
        self.frames: list[Frame] = []
        self.written: set[Buffer] = set()
        self.attrs: tuple = ()
        self.block_nodes: dict[str, ast.AST] = {}  # block name -> its `with` statement
        self.access_nodes: list[tuple[object, ast.AST, list]] = []  # (IR access, AST, indices)

    # ---- scopes -------------------------------------------------------------------------

    def lookup_local(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.buffers.get(name)

    def buffer_names(self) -> list[str]:
        return list(self.buffers)

    def local_names(self) -> list[str]:
        names = [name for scope in self.scopes for name in scope]
        return names + list(self.buffers)

    def declare_var(self, name: str) -> Var:
        var = Var(fresh_name(name, self.used_names), "int32")
        self.scopes[-1][name] = var
        return var

    def declare_buffer(self, buffer: Buffer, node: ast.AST) -> None:
        if buffer.name in self.buffers:
            raise self.error(node, f"buffer {buffer.name!r} is already defined", "unsupported")
        self.buffers[buffer.name] = buffer

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def in_block(self) -> bool:
        """False at the top level of a function whose root block is implicit."""
        return len(self.frames) > 1 or self.frames[0].explicit

    # ---- the function -------------------------------------------------------------------

    def parse_function(self, fdef: ast.FunctionDef) -> PrimFunc:
        params = tuple(self.parse_param(arg) for arg in fdef.args.args)
        extras = fdef.args
        if extras.vararg or extras.kwarg or extras.kwonlyargs or extras.posonlyargs:
            raise self.error(fdef, "a DSL function takes buffer parameters only "
                             "(no *args, **kwargs or keyword-only arguments)", "unsupported")
        if extras.defaults:  # a default would be dropped: every buffer is passed
            raise self.error(extras.defaults[0], "a DSL parameter takes no default value "
                             "(every buffer is passed to the kernel)", "unsupported")
        for buffer, arg in zip(params, fdef.args.args, strict=True):
            self.declare_buffer(buffer, arg)
        body_nodes = []
        for node in _without_docstring(fdef.body):
            if self._is_call(node, "func_attr"):
                args = self.call_args(node.value, ("attrs",), 1, what="T.func_attr")
                self.attrs = self.literal_items(args["attrs"])
            else:
                body_nodes.append(node)
        explicit = self._explicit_root(body_nodes)
        root = Frame("root", fdef, explicit=explicit is not None)
        self.frames.append(root)
        stmts = self.parse_body(explicit if explicit is not None else body_nodes)
        self.frames.pop()
        if root.iter_vars:
            raise self.error(body_nodes[0], "the root block has no iteration variables",
                             "shape")
        root.reads = root.reads if root.reads is not None else ()
        root.writes = root.writes if root.writes is not None else ()
        block = Block("root", (), root.reads, root.writes, seq(*stmts), root.init,
                      tuple(root.allocs), root.annotations)
        func = PrimFunc(fdef.name, params, BlockRealize((), TRUE, block), self.attrs)
        self.check_well_formed(func, fdef)
        check_parallel_loop_kinds(func, fdef, self.error)  # no race in T.parallel/T.vectorized
        return func

    def _explicit_root(self, nodes: list[ast.stmt]) -> list[ast.stmt] | None:
        if len(nodes) != 1 or not isinstance(nodes[0], ast.With):
            return None
        item = nodes[0].items[0].context_expr
        if not (isinstance(item, ast.Call) and self._is_dsl(item.func, "block")):
            return None
        if not (item.args and isinstance(item.args[0], ast.Constant)
                and item.args[0].value == "root"):
            return None
        return nodes[0].body

    def parse_param(self, arg: ast.arg) -> Buffer:
        if arg.annotation is None:
            raise self.error(arg, f"parameter {arg.arg!r} needs a buffer annotation, as in "
                             f"{arg.arg}: T.Buffer((16, 16), \"float32\")", "unsupported")
        node = arg.annotation
        if isinstance(node, ast.Call) and self._is_dsl(node.func, "Buffer"):
            args = self.call_args(node, ("shape", "dtype"), 1, optional=("scope",),
                                  what="T.Buffer")
            shape = self.static_shape(args["shape"], arg.arg)
            dtype = self.dtype_arg(args["dtype"]) if "dtype" in args else "float32"
            return Buffer(arg.arg, shape, dtype)
        if isinstance(node, (ast.Name, ast.Attribute)):
            value = self.resolve(node)
            if isinstance(value, BufferType):
                for dim, extent in enumerate(value.shape):
                    self.check_extent(extent, dim, tuple(value.shape), arg.arg, node)
                return Buffer(arg.arg, tuple(value.shape), value.dtype)
        raise self.error(node, f"parameter {arg.arg!r}: expected a T.Buffer((...), dtype) "
                         "annotation", "unsupported")

    # ---- statements ---------------------------------------------------------------------

    def parse_body(self, nodes: list[ast.stmt]) -> list[Stmt]:
        stmts = []
        for node in nodes:
            stmt = self.stmt(node)
            if stmt is not None:
                stmts.append(stmt)
        return stmts

    def stmt(self, node: ast.stmt) -> Stmt | None:
        try:
            method = getattr(self, "stmt_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, _unsupported_statement(node), "unsupported")
            return method(node)
        except DSLError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure must point at the source
            raise self.internal_error(node, "statement", exc) from None

    def stmt_Pass(self, node: ast.Pass) -> None:
        return None

    def stmt_Expr(self, node: ast.Expr) -> Stmt | None:
        call = node.value
        if isinstance(call, ast.Constant) and isinstance(call.value, str):
            return None  # a docstring or comment string
        if not isinstance(call, ast.Call):
            raise self.error(node, "an expression statement does nothing here; expected a "
                             "store such as C[i] = ...", "unsupported")
        func = self.resolve(call.func)
        name = func.dsl_name if isinstance(func, DSLFunction) else None
        if name not in _HEADER_CALLS:
            raise self.error(call.func, f"call to {ast.unparse(call.func)!r} is not "
                             "supported as a statement", "unsupported")
        if name == "evaluate":
            args = self.call_args(call, ("value",), 1, what="T.evaluate")
            return Evaluate(self.strong(self.expr(args["value"]), call))
        if name == "func_attr":
            raise self.error(call, "T.func_attr(...) belongs at the top of the function body",
                             "unsupported")
        if not self.in_block():
            raise self.error(call, f"T.{name}(...) must be inside a T.block", "unsupported")
        getattr(self, "header_" + name)(call)
        return None

    def header_reads(self, call: ast.Call) -> None:
        if self.frame.reads is not None:
            raise self.error(call, "T.reads(...) given twice in one block", "unsupported")
        self.frame.reads = self.regions(call)

    def header_writes(self, call: ast.Call) -> None:
        if self.frame.writes is not None:
            raise self.error(call, "T.writes(...) given twice in one block", "unsupported")
        self.frame.writes = self.regions(call)
        self.frame.writes_node = call

    def header_where(self, call: ast.Call) -> None:
        args = self.call_args(call, ("cond",), 1, what="T.where")
        self.frame.predicate = self.condition(args["cond"])

    def header_block_attr(self, call: ast.Call) -> None:
        args = self.call_args(call, ("attrs",), 1, what="T.block_attr")
        self.frame.annotations = self.literal_items(args["attrs"])

    def stmt_If(self, node: ast.If) -> Stmt:
        cond = self.condition(node.test)
        then_case = seq(*self.parse_body(node.body))
        else_case = seq(*self.parse_body(node.orelse)) if node.orelse else None
        return IfThenElse(cond, then_case, else_case)

    def stmt_Assign(self, node: ast.Assign) -> Stmt | None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported",
                             "unsupported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.store(target, self.expr(node.value), node.value)
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)):
            func = self.resolve(call.func)
            name = func.dsl_name if isinstance(func, DSLFunction) else None
            if name in ("axis.spatial", "axis.reduce", "axis.remap"):
                return self.iter_vars(target, call, name)
            if name == "alloc_buffer":
                return self.alloc_buffer(target, call)
        raise self.error(node, "only buffer stores (C[i] = ...), T.axis.* bindings and "
                         "T.alloc_buffer(...) can be assigned in the DSL", "unsupported")

    def stmt_AugAssign(self, node: ast.AugAssign) -> Stmt:
        if not isinstance(node.target, ast.Subscript) or type(node.op) not in _AUG_OPS:
            raise self.error(node, "only C[...] += / -= / *= / /= are supported",
                             "unsupported")
        load = self.expr(node.target)
        symbol = _AUG_OPS[type(node.op)]
        value = self.expr(node.value)
        a, b = self.unify(load, value, node, f"'{symbol}='")
        return self.store(node.target, NODE_OF[symbol](a, b), node.value)

    def store(self, target: ast.Subscript, value, value_node: ast.AST) -> Stmt:
        buffer = self.buffer_of(target.value)
        items = subscript_items(target)
        self.check_index_count(buffer, items, target)
        indices = tuple(self.index(item) for item in items)
        self.check_store_indices(buffer, items, indices)
        if is_weak(value):
            value = self.strong(value, value_node, buffer.dtype)
        if value.dtype != buffer.dtype:
            raise self.error(value_node, f"dtype mismatch: storing {article(value.dtype)} value "
                             f"into {buffer.name!r} ({buffer.dtype}); use "
                             f'T.Cast("{buffer.dtype}", ...)', "dtype")
        self.frame.stored.append(buffer)
        store = BufferStore(buffer, value, indices)
        self.access_nodes.append((store, target, items))
        return store

    def alloc_buffer(self, target: ast.expr, call: ast.Call) -> None:
        if not isinstance(target, ast.Name):
            raise self.error(target, "T.alloc_buffer(...) must be assigned to one name",
                             "unsupported")
        args = self.call_args(call, ("shape", "dtype", "scope"), 1, what="T.alloc_buffer")
        shape = self.static_shape(args["shape"], target.id)
        dtype = self.dtype_arg(args["dtype"]) if "dtype" in args else "float32"
        scope = self.static_str(args["scope"], "scope") if "scope" in args else "global"
        if scope not in SCOPES:
            raise self.error(args["scope"], f"unknown scope {scope!r}{suggest(scope, SCOPES)}",
                             "unsupported")
        buffer = Buffer(target.id, shape, dtype, scope)
        self.declare_buffer(buffer, target)
        self.frame.allocs.append(buffer)
        return None

    # ---- loops --------------------------------------------------------------------------

    def stmt_For(self, node: ast.For) -> Stmt:
        if node.orelse:
            raise self.error(node, "for ... else is not supported", "unsupported")
        names = target_names(node.target)
        if names is None:
            raise self.error(node.target, "a loop target must be a name or a tuple of names",
                             "unsupported")
        call = node.iter
        if not isinstance(call, ast.Call):
            raise self.error(call, "loop over T.grid(...), T.serial(...), T.parallel(...), "
                             "T.vectorized(...), T.unroll(...) or T.thread_binding(...)",
                             "unsupported")
        func = self.resolve(call.func)
        loops = self.loop_headers(func, call, names, node)
        self.scopes.append({})
        variables = []
        for name, (start, extent, kind, thread, notes) in zip(names, loops, strict=True):
            var = self.declare_var(name)
            self.loop_domains[var] = (start, extent)
            variables.append((var, start, extent, kind, thread, notes))
        body = seq(*self.parse_body(node.body))
        self.scopes.pop()
        for var, start, extent, kind, thread, notes in reversed(variables):
            body = For(var, start, extent, kind, body, thread, notes)
        return body

    def loop_headers(self, func, call: ast.Call, names: list[str], node: ast.For) -> list:
        if isinstance(func, DSLFunction) and func.dsl_name == "grid":
            if call.keywords:
                raise self.error(call, "T.grid(...) takes extents only", "unsupported")
            if len(call.args) != len(names):
                raise self.error(node.target, f"T.grid has {len(call.args)} extent"
                                 f"{'s' if len(call.args) != 1 else ''} but the loop names "
                                 f"{len(names)} variable{'s' if len(names) != 1 else ''}",
                                 "shape")
            return [(IntImm(0), IntImm(self.static_int(arg, "a loop extent")), ForKind.SERIAL,
                     None, ()) for arg in call.args]
        if len(names) != 1:
            raise self.error(node.target, f"this loop binds one variable, not {len(names)}",
                             "shape")
        if func is builtins.range:
            kind_name = "serial"
        elif isinstance(func, DSLFunction) and func.dsl_name in _LOOP_KINDS:
            kind_name = func.dsl_name
        else:
            raise self.error(call.func, f"cannot loop over {ast.unparse(call.func)!r}; use "
                             "T.grid, T.serial, T.parallel, T.vectorized, T.unroll or "
                             "T.thread_binding", "unsupported")
        optional = ("annotations",) + (("thread",) if kind_name == "thread_binding" else ())
        positional = ("start", "stop")
        if kind_name == "thread_binding" and len(call.args) == 3:
            positional = ("start", "stop", "thread")
        elif kind_name == "thread_binding" and len(call.args) == 2 and _is_str(call.args[1]):
            positional = ("start", "thread")
        args = self.call_args(call, positional, 1, optional, what=f"T.{kind_name}")
        start, extent = self.loop_range(args["start"], args.get("stop"))
        thread = None
        if kind_name == "thread_binding":
            if "thread" not in args:
                raise self.error(call, "T.thread_binding needs thread=\"threadIdx.x\" (or "
                                 "blockIdx.x, ...)", "unsupported")
            thread = self.static_str(args["thread"], "thread")
        annotations = self.literal_items(args["annotations"]) if "annotations" in args else ()
        return [(start, extent, _LOOP_KINDS[kind_name], thread, annotations)]

    def loop_range(self, first: ast.expr, second: ast.expr | None) -> tuple[PrimExpr, PrimExpr]:
        if second is None:
            return IntImm(0), self._not_negative(self.loop_bound(first), first)
        start, stop = self.loop_bound(first), self.loop_bound(second)
        return start, self._not_negative(range_extent(start, stop), second)

    def _not_negative(self, extent: PrimExpr, node: ast.expr) -> PrimExpr:
        """A constant extent below 0 is refused (an empty loop is written with extent 0)."""
        if isinstance(extent, IntImm) and extent.value < 0:
            raise self.error(node, f"a loop extent must be >= 0, got {extent.value}", "shape")
        return extent

    def loop_bound(self, node: ast.expr) -> PrimExpr:
        value = self.expr(node)
        if isinstance(value, PrimExpr) and value.dtype in ("int32", "int64"):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return IntImm(value)
        shown = repr(value) if is_weak(value) else f"a {value.dtype} expression"
        raise self.error(node, f"a loop extent must be an int, got {shown}", "shape")

    # ---- small helpers ------------------------------------------------------------------

    def _is_dsl(self, node: ast.expr, name: str) -> bool:
        try:
            value = self.resolve(node)
        except DSLError:
            return False
        if name == "Buffer":
            return value is T.Buffer
        return isinstance(value, DSLFunction) and value.dsl_name == name

    def _is_call(self, node: ast.stmt, name: str) -> bool:
        return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and self._is_dsl(node.value.func, name))


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _unsupported_statement(node: ast.stmt) -> str:
    messages = {
        "While": "while loops are not supported in the DSL; use for ... in T.serial(n)",
        "Try": "try statements are not supported in the DSL",
        "Return": "return is not supported in the DSL; a DSL function writes its outputs",
        "FunctionDef": "nested function definitions are not supported in the DSL",
        "Import": "import statements are not supported inside a DSL function",
        "ImportFrom": "import statements are not supported inside a DSL function",
        "AnnAssign": "annotated assignments are not supported in the DSL",
        "Break": "break is not supported in the DSL",
        "Continue": "continue is not supported in the DSL",
        "Raise": "raise is not supported in the DSL",
        "Assert": "assert is not supported in the DSL",
        "Delete": "del is not supported in the DSL",
        "Global": "global is not supported in the DSL",
        "Nonlocal": "nonlocal is not supported in the DSL",
    }
    return messages.get(type(node).__name__,
                        f"{type(node).__name__} statements are not supported in the DSL")


# ---- entry points -------------------------------------------------------------------------


def parse_python_function(func, caller_locals: dict | None = None) -> PrimFunc:
    """Parse a Python function object (what ``T.prim_func`` receives)."""
    name = getattr(func, "__name__", repr(func))
    try:
        lines, start = inspect.getsourcelines(func)
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise DSLError(f"cannot read the source of {name!r} ({exc}); define it in a file or a "
                       "notebook cell, or use wb.from_source(text)", kind="unsupported") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    removed = _removed_indent(text, dedented)
    source = SourceInfo(filename, tuple(line.rstrip("\n") for line in lines), start - 1, removed)
    env = dict(func.__globals__)
    env.update(caller_locals or {})
    code = func.__code__
    for var_name, cell in zip(code.co_freevars, func.__closure__ or (), strict=False):
        try:
            env[var_name] = cell.cell_contents
        except ValueError:  # an empty cell (the variable is not assigned yet)
            pass
    env.setdefault("T", T)
    module = _parse_text(dedented, source)
    fdef = next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None:
        raise DSLError(f"{name!r} is not a plain function definition", kind="unsupported")
    return Parser(source, env).parse_function(fdef)


def from_source(text: str, filename: str = "<string>") -> PrimFunc:
    """Parse DSL source text (as ``PrimFunc.script()`` prints it) into a ``PrimFunc``.

    Parameters
    ----------
    text : str
        Python source holding one ``@T.prim_func`` function definition. Import lines are
        allowed and ignored; shapes must be literal ints (no enclosing scope).
    filename : str
        Shown in error messages.

    Raises
    ------
    DSLError
        When the text is not valid DSL, pointing at the line and column.

    Example
    -------
    >>> import workbench as wb
    >>> f = wb.from_source('''
    ... @T.prim_func
    ... def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    ...     for i in T.serial(4):
    ...         with T.block("B"):
    ...             vi = T.axis.spatial(4, i)
    ...             B[vi] = A[vi]
    ... ''')
    >>> wb.from_source(f.script()) == f
    True
    """
    try:
        source = SourceInfo(filename, tuple(text.splitlines()), 0, 0)
        module = _parse_text(text, source)
        fdefs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
        others = [n for n in module.body if not isinstance(n, (ast.FunctionDef, ast.Import,
                                                                ast.ImportFrom, ast.Expr))]
        if len(fdefs) != 1:
            raise DSLError(f"expected one function definition in the source, found "
                           f"{len(fdefs)}", kind="unsupported", filename=filename)
        if others:
            parser = Parser(source, {"T": T})
            raise parser.error(others[0], "only one @T.prim_func definition (and imports) may "
                               "appear in DSL source", "unsupported")
        return Parser(source, {"T": T}).parse_function(fdefs[0])
    except DSLError as error:
        raise error.with_traceback(None) from None


def _parse_text(text: str, source: SourceInfo) -> ast.Module:
    try:
        return parse(text)
    except SyntaxError as exc:
        lineno = exc.lineno or 0
        line = source.lines[lineno - 1] if 0 < lineno <= len(source.lines) else ""
        raise DSLError(f"invalid Python syntax: {exc.msg}", kind="syntax",
                       filename=source.filename, lineno=lineno + source.line_offset,
                       col=(exc.offset or 1) + source.col_offset, source_line=line) from None


def _removed_indent(original: str, dedented: str) -> int:
    for before, after in zip(original.splitlines(), dedented.splitlines(), strict=False):
        if before.strip():
            return len(before) - len(after)
    return 0
