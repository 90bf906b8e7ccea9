"""Expressions of the DSL: Python AST expression nodes to IR ``PrimExpr``.

Numbers are *weak* until they meet a typed expression: parsing returns a plain Python
``int``/``float`` for a literal (or a Python number from the enclosing scope) and the
operator that combines it with a typed expression gives it that expression's dtype
(``C[vi, vj] * 2.0`` in float16 stays float16). Two weak numbers fold in Python
(``M * 2``), so to keep ``1 + 2`` as IR the printer writes ``T.int32(1) + 2``.

Dtype rules: both operands of an operator must have the same dtype (``float32 + float64``
is an error, use ``T.Cast``); a float literal never meets an integer expression.
"""

from __future__ import annotations

import ast
import builtins

from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    DTYPES,
    INTRINSICS,
    And,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
    as_expr,
    is_float,
    is_int,
)
from workbench.ir.operators import NODE_OF, OPERATORS
from workbench.script.errors import DSLError, SourceInfo, error_at, suggest
from workbench.script.namespace import DSLFunction, T

Value = PrimExpr | int | float
"""What expression parsing returns: an IR expression or a weak Python number."""

# the symbol of each Python operator; the node, Python's fold and the precedence come from
# the IR's operator table (workbench.ir.operators)
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}
_FLOAT_WORDS = ("inf", "-inf", "nan")
_INT_INTRINSICS = ("abs",)  # intrinsics that also accept integer arguments


def is_weak(value) -> bool:
    """True for a Python number that has no dtype yet."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ExprParser:
    """Expression half of the parser. Subclasses provide scopes and buffers."""

    source: SourceInfo
    env: dict

    # ---- hooks the statement parser provides -------------------------------------------

    def lookup_local(self, name: str) -> Var | Buffer | None:
        raise NotImplementedError

    def local_names(self) -> list[str]:
        raise NotImplementedError

    # ---- errors -------------------------------------------------------------------------

    def error(self, node: ast.AST | None, message: str, kind: str) -> DSLError:
        return error_at(self.source, node, message, kind)

    def internal_error(self, node: ast.AST, what: str, exc: Exception) -> DSLError:
        """An unexpected failure parsing ``node`` (an ``"expression"``, a ``"statement"``) as
        an error pointing at it."""
        return self.error(node, f"cannot parse this {what} ({type(exc).__name__}: {exc})",
                          "internal")

    # ---- names and static values --------------------------------------------------------

    def resolve(self, node: ast.expr):
        """The object a Name/Attribute chain denotes: a Var, a Buffer or a Python value."""
        if isinstance(node, ast.Name):
            local = self.lookup_local(node.id)
            if local is not None:
                return local
            if node.id in self.env:
                return self.env[node.id]
            if node.id in ("range",):
                return getattr(builtins, node.id)
            raise self.error(node, f"unknown name {node.id!r}"
                             f"{suggest(node.id, self.local_names() + ['T'])}", "unknown-name")
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if isinstance(base, (Var, Buffer, PrimExpr)):
                raise self.error(node, f"attribute {node.attr!r} of an IR value is not "
                                 "supported in the DSL", "unsupported")
            if not hasattr(base, node.attr):
                if base is T or base is T.axis:
                    prefix = "T." if base is T else "T.axis."
                    names = [n for n in T.names() if n.startswith("axis.")] if base is T.axis \
                        else T.names()
                    names = [n.removeprefix("axis.") for n in names] if base is T.axis else names
                    hint = suggest(node.attr, names)
                    if hint:
                        hint = hint.replace("'", f"'{prefix}", 1)
                    raise self.error(node, f"unknown intrinsic or T function "
                                     f"'{prefix}{node.attr}'{hint}", "intrinsic")
                raise self.error(node, f"{ast.unparse(node.value)!r} has no attribute "
                                 f"{node.attr!r}", "unknown-name")
            return getattr(base, node.attr)
        raise self.error(node, f"expected a name, got {_describe(node)}", "unsupported")

    def static_str(self, node: ast.expr, what: str) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            value = self.resolve(node)
            if isinstance(value, str):
                return value
            if isinstance(value, DSLFunction) and value.dsl_name in DTYPES:
                return value.dsl_name
        raise self.error(node, f"{what} must be a string", "unsupported")

    def dtype_arg(self, node: ast.expr) -> str:
        dtype = self.static_str(node, "a dtype")
        if dtype not in DTYPES:
            raise self.error(node, f"unknown dtype {dtype!r}{suggest(dtype, DTYPES)}", "dtype")
        return dtype

    def static_int(self, node: ast.expr, what: str) -> int:
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise self.error(node, f"{what} must be an int, got {node.value!r}", "shape")
        value = self.expr(node)
        if isinstance(value, IntImm) and value.dtype != "bool":
            return value.value
        if not isinstance(value, int) or isinstance(value, bool):
            shown = value if is_weak(value) else ast.unparse(node)
            raise self.error(node, f"{what} must be an int, got {shown!r}", "shape")
        return value

    def static_shape(self, node: ast.expr, name: str = "") -> tuple[int, ...]:
        """A buffer shape: a tuple of non-negative ints (``()`` for a 0-d buffer)."""
        if isinstance(node, (ast.Tuple, ast.List)):
            shape = tuple(self.static_int(elt, "a buffer dimension") for elt in node.elts)
            for dim, (extent, elt) in enumerate(zip(shape, node.elts, strict=True)):
                self.check_extent(extent, dim, shape, name, elt)
            return shape
        if isinstance(node, (ast.Name, ast.Attribute)):
            value = self.resolve(node)
            if isinstance(value, (tuple, list)):
                if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                    raise self.error(node, f"a buffer shape must hold ints, got {value!r}",
                                     "shape")
                for dim, extent in enumerate(value):
                    self.check_extent(extent, dim, tuple(value), name, node)
                return tuple(value)
        shape = (self.static_int(node, "a buffer dimension"),)
        self.check_extent(shape[0], 0, shape, name, node)
        return shape

    def check_extent(self, extent: int, dim: int, shape: tuple, name: str,
                     node: ast.AST) -> None:
        if extent < 0:
            which = f"buffer {name!r}" if name else "a buffer"
            raise self.error(node, f"{which} has a negative extent {extent} in dimension {dim} "
                             f"of its shape {shape}", "shape")

    # ---- typing helpers -----------------------------------------------------------------

    def strong(self, value: Value, node: ast.AST, dtype: str | None = None) -> PrimExpr:
        """Give a weak number a dtype (``dtype`` or the default int32/float32): ``as_expr``,
        with a float refused beside an integer and an int beside a boolean kept boolean."""
        if isinstance(value, float) and dtype is not None and is_int(dtype):
            raise self.error(node, f"dtype mismatch: float literal {value!r} used with "
                             f"{article(dtype)} expression", "dtype")
        if not isinstance(value, (PrimExpr, int, float)):
            raise self.error(node, f"expected a number or an expression, got {value!r}",
                             "unsupported")
        if dtype == "bool" and is_weak(value):
            return IntImm(value, "bool")
        return as_expr(value, dtype)

    def unify(self, a: Value, b: Value, node: ast.AST, what: str) -> tuple[PrimExpr, PrimExpr]:
        """Two operands with one dtype (weak numbers take the other side's dtype)."""
        if isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
            if a.dtype != b.dtype:
                raise self.error(node, f"dtype mismatch in {what}: {a.dtype} and {b.dtype} "
                                 "(use T.Cast to convert one side)", "dtype")
            return a, b
        if isinstance(a, PrimExpr):
            return a, self.strong(b, node, a.dtype)
        if isinstance(b, PrimExpr):
            return self.strong(a, node, b.dtype), b
        if isinstance(a, float) or isinstance(b, float):
            return self.strong(a, node, "float32"), self.strong(b, node, "float32")
        return self.strong(a, node), self.strong(b, node)

    def index(self, node: ast.expr) -> PrimExpr:
        value = self.expr(node)
        expr = self.strong(value, node)
        if not is_int(expr.dtype) or expr.dtype == "bool":
            raise self.error(node, f"a buffer index must be an integer expression, got "
                             f"{expr.dtype}", "dtype")
        return expr

    def condition(self, node: ast.expr) -> PrimExpr:
        expr = self.strong(self.expr(node), node)
        if is_float(expr.dtype):
            raise self.error(node, f"a condition must be a boolean or integer expression, "
                             f"got {expr.dtype}", "dtype")
        return expr

    # ---- expressions --------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Value:
        """Parse an expression; internal failures become a DSLError at ``node``."""
        try:
            return self._expr(node)
        except DSLError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure must point at the source
            raise self.internal_error(node, "expression", exc) from None

    def _expr(self, node: ast.expr) -> Value:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{_describe(node)} is not supported in a DSL expression",
                             "unsupported")
        return method(node)

    def expr_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, bool):
            return IntImm(int(node.value), "bool")
        if isinstance(node.value, (int, float)):
            return node.value
        raise self.error(node, f"unexpected constant {node.value!r} in an expression",
                         "unsupported")

    def expr_Name(self, node: ast.Name) -> Value:
        return self._as_value(self.resolve(node), node)

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        return self._as_value(self.resolve(node), node)

    def _as_value(self, value, node: ast.expr) -> Value:
        if isinstance(value, PrimExpr):
            return value
        if isinstance(value, Buffer):
            raise self.error(node, f"buffer {value.name!r} used as a value; index it, as in "
                             f"{value.name}[{', '.join(['i'] * value.ndim)}]", "unsupported")
        if isinstance(value, bool):
            return IntImm(int(value), "bool")
        if isinstance(value, (int, float)):
            return value
        if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            return value.item()  # a numpy scalar from the enclosing scope
        raise self.error(node, f"{ast.unparse(node)!r} is a {type(value).__name__}, not a "
                         "number or an expression", "unsupported")

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        symbol = _BINARY.get(type(node.op))
        if symbol is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported "
                             "(use T.pow for powers)", "unsupported")
        cls = NODE_OF[symbol]
        a, b = self.expr(node.left), self.expr(node.right)
        if is_weak(a) and is_weak(b):
            return OPERATORS[cls].python(a, b)
        a, b = self.unify(a, b, node, f"'{symbol}'")
        return cls(a, b)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        if isinstance(node.op, ast.Not):
            return Not(self.condition(node.operand))
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.expr(node.operand)
            if isinstance(node.op, ast.UAdd):
                return value
            if is_weak(value):
                return -value
            zero = self.strong(0, node, value.dtype)
            return Sub(zero, value)
        raise self.error(node, "bitwise '~' is not supported", "unsupported")

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        cls = And if isinstance(node.op, ast.And) else Or
        result = self.condition(node.values[0])
        for value in node.values[1:]:
            result = cls(result, self.condition(value))
        return result

    def expr_Compare(self, node: ast.Compare) -> Value:
        result = None
        left = self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            symbol = _COMPARE.get(type(op))
            if symbol is None:
                raise self.error(node, f"comparison {type(op).__name__} is not supported",
                                 "unsupported")
            right = self.expr(right_node)
            a, b = self.unify(left, right, node, f"'{symbol}'")
            compare = NODE_OF[symbol](a, b)
            result = compare if result is None else And(result, compare)
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        cond = self.condition(node.test)
        a, b = self.unify(self.expr(node.body), self.expr(node.orelse), node, "'if ... else'")
        return Select(cond, a, b)

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        buffer = self.buffer_of(node.value)
        index_nodes = subscript_items(node)
        for item in index_nodes:
            if isinstance(item, ast.Slice):
                raise self.error(item, "a slice can only appear in T.reads/T.writes",
                                 "unsupported")
        self.check_index_count(buffer, index_nodes, node)
        load = BufferLoad(buffer, tuple(self.index(item) for item in index_nodes))
        self.access_nodes.append((load, node, index_nodes))
        return load

    def buffer_names(self) -> list[str]:
        raise NotImplementedError

    def buffer_of(self, node: ast.expr) -> Buffer:
        if isinstance(node, ast.Name) and self.lookup_local(node.id) is None \
                and node.id not in self.env:
            buffers = self.buffer_names()
            hint = suggest(node.id, buffers)
            if not hint and buffers:
                hint = f" (the buffers are {', '.join(repr(b) for b in buffers)})"
            raise self.error(node, f"unknown name {node.id!r}{hint}", "unknown-name")
        value = self.resolve(node)
        if not isinstance(value, Buffer):
            raise self.error(node, f"{ast.unparse(node)!r} is not a buffer", "unsupported")
        return value

    def check_index_count(self, buffer: Buffer, items: list, node: ast.AST) -> None:
        if len(items) != buffer.ndim:
            raise self.error(node, f"buffer {buffer.name!r} has {buffer.ndim} "
                             f"dimension{'s' if buffer.ndim != 1 else ''} "
                             f"{buffer.shape} but is indexed with {len(items)} "
                             f"ind{'ices' if len(items) != 1 else 'ex'}", "index-count")

    # ---- calls --------------------------------------------------------------------------

    def expr_Call(self, node: ast.Call) -> Value:
        if isinstance(node.func, ast.Name) and self.lookup_local(node.func.id) is None \
                and node.func.id not in self.env:
            raise self.error(node.func, f"unknown function {node.func.id!r}: DSL functions are "
                             "spelled T.name (T.exp, T.max, T.Cast, ...)", "unsupported")
        func = self.resolve(node.func)
        if not isinstance(func, DSLFunction):
            raise self.error(node.func, f"call to {ast.unparse(node.func)!r} is not supported "
                             "in a DSL expression", "unsupported")
        name = func.dsl_name
        if name in DTYPES:
            return self._dtype_constant(name, node)
        if name in INTRINSICS:
            return self._intrinsic(name, node)
        handler = getattr(self, "call_" + name, None)
        if handler is None:
            raise self.error(node.func, f"T.{name}(...) is a statement, not an expression",
                             "unsupported")
        return handler(node)

    def _dtype_constant(self, dtype: str, node: ast.Call) -> PrimExpr:
        args = self.call_args(node, ("value",), 1)
        arg = args["value"]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value not in _FLOAT_WORDS or not is_float(dtype):
                raise self.error(arg, f"T.{dtype} accepts a number or one of {_FLOAT_WORDS}",
                                 "dtype")
            return FloatImm(float(arg.value), dtype)
        value = self.expr(arg)
        if isinstance(value, PrimExpr):
            return Cast(dtype, value)
        if is_int(dtype):
            if isinstance(value, float) and not value.is_integer():
                raise self.error(arg, f"T.{dtype} needs an integer value, got {value!r}",
                                 "dtype")
            return IntImm(int(value), dtype)
        return FloatImm(float(value), dtype)

    def _intrinsic(self, name: str, node: ast.Call) -> PrimExpr:
        arity = INTRINSICS[name]
        names = tuple(f"arg{n}" for n in range(arity))
        args = self.call_args(node, names, arity, optional=("dtype",), what=f"T.{name}")
        values = [self.expr(args[n]) for n in names]
        if arity == 2:
            values = list(self.unify(values[0], values[1], node, f"T.{name}"))
        default = "int32" if name in _INT_INTRINSICS else "float32"
        exprs = [self.strong(v, node, None if isinstance(v, PrimExpr) else
                             (default if isinstance(v, int) else "float32")) for v in values]
        if name not in _INT_INTRINSICS and not is_float(exprs[0].dtype):
            raise self.error(node, f"T.{name} needs a float argument, got {exprs[0].dtype} "
                             "(use T.Cast)", "dtype")
        dtype = self.dtype_arg(args["dtype"]) if "dtype" in args else exprs[0].dtype
        return Call(name, tuple(exprs), dtype)

    def call_Cast(self, node: ast.Call) -> PrimExpr:
        args = self.call_args(node, ("dtype", "value"), 2)
        dtype = self.dtype_arg(args["dtype"])
        return Cast(dtype, self.strong(self.expr(args["value"]), args["value"]))

    def _binary_call(self, node: ast.Call, cls, what: str) -> PrimExpr:
        args = self.call_args(node, ("a", "b"), 2, what=what)
        a, b = self.unify(self.expr(args["a"]), self.expr(args["b"]), node, what)
        return cls(a, b)

    def call_max(self, node: ast.Call) -> PrimExpr:
        return self._binary_call(node, Max, "T.max")

    def call_min(self, node: ast.Call) -> PrimExpr:
        return self._binary_call(node, Min, "T.min")

    def call_floordiv(self, node: ast.Call) -> PrimExpr:
        return self._binary_call(node, FloorDiv, "T.floordiv")

    def call_floormod(self, node: ast.Call) -> PrimExpr:
        return self._binary_call(node, FloorMod, "T.floormod")

    def call_if_then_else(self, node: ast.Call) -> PrimExpr:
        args = self.call_args(node, ("cond", "a", "b"), 3, what="T.if_then_else")
        cond = self.condition(args["cond"])
        a, b = self.unify(self.expr(args["a"]), self.expr(args["b"]), node, "T.if_then_else")
        return Select(cond, a, b)

    # ---- argument binding ---------------------------------------------------------------

    def call_args(self, node: ast.Call, names: tuple[str, ...], required: int,
                  optional: tuple[str, ...] = (), what: str | None = None) -> dict:
        """Bind a call's positional and keyword arguments to ``names`` (AST nodes)."""
        what = what or ast.unparse(node.func)
        allowed = names + optional
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(
                kw.arg is None for kw in node.keywords):
            raise self.error(node, f"*args/**kwargs are not supported in {what}", "unsupported")
        if len(node.args) > len(names):
            count = len(names) if required == len(names) else f"at most {len(names)}"
            raise self.error(node, f"{what} takes {count} positional argument"
                             f"{'s' if len(names) != 1 else ''}, got {len(node.args)}",
                             "intrinsic")
        bound = dict(zip(names, node.args, strict=False))
        for kw in node.keywords:
            if kw.arg not in allowed or kw.arg in bound:
                raise self.error(kw.value, f"{what} got an unexpected keyword argument "
                                 f"{kw.arg!r}", "intrinsic")
            bound[kw.arg] = kw.value
        missing = [n for n in names[:required] if n not in bound]
        if missing:
            count = required if required == len(names) else f"at least {required}"
            raise self.error(node, f"{what} takes {count} argument"
                             f"{'s' if required != 1 else ''}, got {len(node.args)}",
                             "intrinsic")
        return bound


def article(dtype: str) -> str:
    """``"an int32"``, ``"a float32"``."""
    return f"an {dtype}" if dtype[0] in "aeiou" else f"a {dtype}"


def subscript_items(node: ast.Subscript) -> list[ast.expr]:
    """The index expressions of ``A[i, j]`` (``A[()]`` has none)."""
    if isinstance(node.slice, ast.Tuple):
        return list(node.slice.elts)
    return [node.slice]


def _describe(node: ast.AST) -> str:
    names = {
        "ListComp": "a list comprehension", "DictComp": "a dict comprehension",
        "SetComp": "a set comprehension", "GeneratorExp": "a generator expression",
        "Lambda": "a lambda", "List": "a list", "Tuple": "a tuple", "Dict": "a dict",
        "Set": "a set", "JoinedStr": "an f-string", "NamedExpr": "':='", "Starred": "'*'",
        "Await": "'await'", "Yield": "'yield'", "Slice": "a slice",
    }
    return names.get(type(node).__name__, f"'{type(node).__name__}'")
