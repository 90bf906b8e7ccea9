"""Index maps for ``transform_layout``: build one from a lambda or its text, check it.

An ``IndexMap`` is ``lambda *params: results`` as IR. A user's lambda is called once on
index variables (``Var``), so the IR's operators build the new index expressions; the
result may only use ``+ - * // %`` (``//`` and ``%`` by positive constants) of the
arguments and integer constants (``IndexMapOperationError`` otherwise).

The new shape is ``int_bounds(result) + 1`` per new dimension, so every element lands
inside it. The map must be a bijection of the old shape onto the new one
(``IndexMapNotBijectiveError``): the sizes must agree (with ``pad_value``, the new shape
may be larger) and no two elements may land on one position. Injectivity is *proved*
symbolically, never by enumerating points (``layout_injective.proves_injective``: the
map's affine inverse, or mixed-radix digits of the old indices), so the answer does not
depend on the buffer's size: a map beyond both proofs is refused at any size, saying it
cannot be proven a bijection. For a small buffer the message also shows two indices that
land on one position when there are some (found by a bounded search: reporting only,
never deciding).

The canonical text (``"lambda k, j: (j // 16, k, j % 16)"``) is printed from the IR and
read back by ``IndexMap.from_text``, a small parser accepting only that grammar (never
``eval``), so traces store and replay maps as JSON strings.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from workbench.ir import (
    Add,
    Block,
    Buffer,
    BufferLoad,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    PrimFunc,
    Sub,
    Var,
    as_expr,
    collect,
    is_int,
    substitute,
)
from workbench.ir.arith import int_bounds
from workbench.ir.operators import OPERATORS
from workbench.pyparse import parse
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_layout import (
    IndexMapArityError,
    IndexMapNotBijectiveError,
    IndexMapOperationError,
)
from workbench.schedule.layout_injective import proves_injective

_ALLOWED = (Var, IntImm, Add, Sub, Mul, FloorDiv, FloorMod)
_ENUMERATION_CHUNK = 1 << 22
EXAMPLE_SEARCH_LIMIT = 1 << 16
"""Most elements a buffer may have for a refusal's message to search for an example clash
(the search only explains a refusal; it never decides one)."""

# ---------------------------------------------------------------------------------------
# Index maps
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class IndexMap:
    """``lambda *params: results``, as IR: ``params`` are Vars, ``results`` expressions of them.

    Example
    -------
    >>> m = IndexMap.from_text("lambda k, j: (j // 16, k, j % 16)")
    >>> m.text()
    'lambda k, j: (j // 16, k, j % 16)'
    """

    params: tuple[Var, ...]
    results: tuple[PrimExpr, ...]

    def text(self) -> str:
        """The canonical text, printed from the IR (what the trace stores)."""
        from workbench.ir.expr_text import expr_text

        params = ", ".join(p.name for p in self.params)
        items = [expr_text(r) for r in self.results]
        body = f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
        return f"lambda {params}: {body}"

    def __str__(self) -> str:
        return self.text()

    def apply(self, indices: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        """The new indices for old ``indices`` (not simplified)."""
        mapping = dict(zip(self.params, indices, strict=True))
        return tuple(substitute(r, mapping) for r in self.results)

    @staticmethod
    def from_text(text: str) -> IndexMap:
        """Parse the canonical text (``lambda a, b: (expr, ...)`` over ``+ - * // %``,
        integers and the arguments); raises ``ValueError`` for anything else."""
        try:
            tree = parse(text.strip(), mode="eval").body
        except SyntaxError as err:
            raise ValueError(f"not a lambda: {err.msg}") from None
        if not isinstance(tree, ast.Lambda):
            raise ValueError("the text must be a lambda")
        args = tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise ValueError("the lambda must take plain positional arguments only")
        params = tuple(Var(a.arg) for a in args.args)
        if len({p.name for p in params}) != len(params):
            raise ValueError("duplicate argument names")
        scope = {p.name: p for p in params}
        body = tree.body.elts if isinstance(tree.body, ast.Tuple) else [tree.body]
        return IndexMap(params, tuple(_parse_index(node, scope) for node in body))


_AST_OPS = {ast.Add: Add, ast.Sub: Sub, ast.Mult: Mul, ast.FloorDiv: FloorDiv, ast.Mod: FloorMod}


def _parse_index(node: ast.expr, scope: dict[str, Var]) -> PrimExpr:
    """One index expression of the canonical grammar (a safe, tiny evaluator)."""
    if isinstance(node, ast.Name):
        if node.id not in scope:
            raise ValueError(f"unknown name {node.id!r}")
        return scope[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return IntImm(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _parse_index(node.operand, scope)
        if isinstance(operand, IntImm):
            return IntImm(-operand.value)
        return Sub(IntImm(0), operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_OPS:
        return _AST_OPS[type(node.op)](
            _parse_index(node.left, scope), _parse_index(node.right, scope)
        )
    if (  # T.int32(3), how the printer writes a constant on the left of a constant
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "T.int32"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and type(node.args[0].value) is int
    ):
        return IntImm(node.args[0].value)
    raise ValueError(f"unsupported index expression {ast.unparse(node)!r}")


def _arity(fn: Callable) -> int | None:
    """Number of positional parameters, None when it takes a variable number."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    count = 0
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            return None
        if param.kind == param.KEYWORD_ONLY and param.default is param.empty:
            return None
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def _param_names(fn: Callable, count: int) -> list[str]:
    names = list(inspect.signature(fn).parameters)[:count]
    return names if len(set(names)) == count else [f"i{d}" for d in range(count)]


def _bad_operation(expr: object, params: tuple[Var, ...]) -> str | None:
    """What in ``expr`` an index map may not use (None when it is fine)."""
    if not isinstance(expr, PrimExpr):
        return f"a {type(expr).__name__} ({expr!r}) as an index"
    for node in collect(expr, lambda n: isinstance(n, PrimExpr)):
        if isinstance(node, FloatImm):
            return f"the float constant {node.value}"
        if isinstance(node, Div):
            return "true division '/' (use '//')"
        if isinstance(node, BufferLoad):
            return f"a load from buffer {node.buffer.name!r}"
        if not isinstance(node, _ALLOWED):
            return f"the operation {type(node).__name__}"
        if not is_int(node.dtype) or node.dtype == "bool":
            return f"a {node.dtype} value"
        if isinstance(node, Var) and node not in params:
            return f"the variable {node.name!r}, which is not an argument of the map"
        if isinstance(node, (FloorDiv, FloorMod)) and not (
            isinstance(node.b, IntImm) and node.b.value > 0
        ):
            return "'//' or '%' by something other than a positive constant"
    return None


def make_index_map(
    primitive: str, func: PrimFunc, block: Block, buffer: Buffer, index_map: object
) -> IndexMap:
    """An ``IndexMap`` from a lambda (or its canonical text), checked against ``buffer``:
    arity and operations (not bijectivity, see ``check_bijective``)."""
    if isinstance(index_map, IndexMap):
        imap = index_map
    elif isinstance(index_map, str):
        try:
            imap = IndexMap.from_text(index_map)
        except ValueError as err:
            raise InvalidArgumentError(
                primitive, "index_map", f"a lambda or its text ({err})", index_map
            ) from None
    elif callable(index_map):
        count = _arity(index_map)
        if count != buffer.ndim:
            got = (
                "a variable number of arguments"
                if count is None
                else (f"{count} argument{'s' if count != 1 else ''}")
            )
            raise IndexMapArityError(primitive, block, buffer, got, func)
        params = tuple(Var(n) for n in _param_names(index_map, count))
        try:
            result = index_map(*params)
        except Exception as err:  # the user's lambda failed on index variables
            what = f"something index expressions do not support ({type(err).__name__}: {err})"
            raise IndexMapOperationError(primitive, block, buffer, what, "(lambda)", func) from None
        items = result if isinstance(result, (tuple, list)) else (result,)
        results = []
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool):
                item = as_expr(item)
            results.append(item)
        imap = IndexMap(params, tuple(results))
        bad = _bad_operation_all(imap)
        if bad is not None:
            raise IndexMapOperationError(primitive, block, buffer, bad, _safe_text(imap), func)
        return imap
    else:
        raise InvalidArgumentError(
            primitive, "index_map", "a lambda over the buffer's indices", index_map
        )
    if len(imap.params) != buffer.ndim:
        got = f"{len(imap.params)} argument{'s' if len(imap.params) != 1 else ''}"
        raise IndexMapArityError(primitive, block, buffer, got, func)
    bad = _bad_operation_all(imap)
    if bad is not None:
        raise IndexMapOperationError(primitive, block, buffer, bad, _safe_text(imap), func)
    return imap


def _bad_operation_all(imap: IndexMap) -> str | None:
    if not imap.results:
        return "no index at all (it returns an empty tuple)"
    for result in imap.results:
        bad = _bad_operation(result, imap.params)
        if bad is not None:
            return bad
    return None


def _safe_text(imap: IndexMap) -> str:
    if all(isinstance(result, PrimExpr) for result in imap.results):
        return imap.text()
    return "(lambda)"  # the lambda returned something that is not an expression


def _evaluate(expr: PrimExpr, env: dict[Var, np.ndarray]) -> np.ndarray:
    """``expr`` over numpy int64 arrays (only the index-map operations)."""
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, IntImm):
        return np.int64(expr.value)
    # + - * // % (numpy's // and % floor, as the IR's FloorDiv and FloorMod)
    return OPERATORS[type(expr)].numpy(_evaluate(expr.a, env), _evaluate(expr.b, env))


def new_shape(
    primitive: str, func: PrimFunc, block: Block, buffer: Buffer, imap: IndexMap
) -> tuple[int, ...]:
    """The shape the map sends ``buffer`` onto (``int_bounds`` of each new index);
    ``IndexMapNotBijectiveError`` when an index can be negative."""
    ranges = {p: (0, size - 1) for p, size in zip(imap.params, buffer.shape, strict=True)}
    shape = []
    for d, result in enumerate(imap.results):
        lo, hi = int_bounds(result, ranges)
        if lo is None or hi is None or lo < 0:
            why = (
                f"new index {d} ({_safe_expr_text(result)}) can be negative or unbounded "
                f"(bounds {lo}..{hi}); new indices must start at 0"
            )
            raise IndexMapNotBijectiveError(primitive, block, buffer, imap.text(), why, func)
        shape.append(hi + 1)
    return tuple(shape)


def _safe_expr_text(expr: PrimExpr) -> str:
    from workbench.ir.expr_text import expr_text

    return expr_text(expr)


def _positions(imap: IndexMap, buffer: Buffer, shape: tuple[int, ...]):
    """Yield ``(old indices, new linear positions)`` for every element of ``buffer``, in
    chunks of ``_ENUMERATION_CHUNK`` elements (numpy arrays)."""
    strides = np.cumprod((1,) + tuple(reversed(shape[1:])))[::-1]
    size = int(np.prod(buffer.shape))
    for start in range(0, size, _ENUMERATION_CHUNK):
        flat = np.arange(start, min(size, start + _ENUMERATION_CHUNK), dtype=np.int64)
        old = np.unravel_index(flat, buffer.shape)
        env = dict(zip(imap.params, old, strict=True))
        linear = np.zeros(flat.shape, dtype=np.int64)
        for result, stride in zip(imap.results, strides, strict=True):
            linear += np.broadcast_to(_evaluate(result, env), flat.shape) * int(stride)
        yield old, linear


def check_bijective(
    primitive: str,
    func: PrimFunc,
    block: Block,
    buffer: Buffer,
    imap: IndexMap,
    shape: tuple[int, ...],
    *,
    allow_padding: bool = False,
) -> None:
    """Every index of ``buffer`` must land on a distinct point of ``shape`` (the new shape:
    every image is inside it), and the sizes must agree (``shape`` may be larger with
    ``allow_padding``); else ``IndexMapNotBijectiveError``. Proved by ``proves_injective``
    whatever the size; a map it cannot prove is refused (see the module docstring)."""
    old_size, new_size = int(np.prod(buffer.shape)), int(np.prod(shape))
    if old_size != new_size and not (allow_padding and old_size < new_size):
        why = (
            f"it maps {old_size} elements onto the new shape {shape} of {new_size} "
            f"positions; a layout must have exactly one position per element"
        )
        raise IndexMapNotBijectiveError(primitive, block, buffer, imap.text(), why, func)
    if old_size == 0 or proves_injective(imap, buffer.shape):
        return
    why = (
        "it cannot be proven a bijection (at any size): it is neither an invertible affine "
        "map (new indices that are digits x // a % b of affine expressions of the old ones) "
        "nor a mixed-radix combination of digits i // a % b of single old indices"
    )
    if old_size <= EXAMPLE_SEARCH_LIMIT:
        clash = _first_clash(imap, buffer, shape, new_size)
        if clash is not None:
            why = _clash_text(imap, buffer, shape, clash)
    raise IndexMapNotBijectiveError(primitive, block, buffer, imap.text(), why, func)


def _first_clash(imap: IndexMap, buffer: Buffer, shape: tuple[int, ...], new_size: int):
    """The first linear position of ``shape`` two indices land on, or None (reporting only,
    for small buffers)."""
    seen = np.zeros(new_size, dtype=bool)
    for _, linear in _positions(imap, buffer, shape):
        hits = np.bincount(linear, minlength=new_size)  # in range: int_bounds is sound
        clash = np.flatnonzero((hits > 1) | (seen & (hits > 0)))
        if clash.size:
            return int(clash[0])
        seen |= hits > 0
    return None


def _clash_text(imap: IndexMap, buffer: Buffer, shape: tuple[int, ...], target: int) -> str:
    """``"(0, 1) and (1, 1) both map to (0,)"``: the first two indices landing on
    ``target`` (a linear position in ``shape``)."""
    sources: list[tuple[int, ...]] = []
    for old, linear in _positions(imap, buffer, shape):
        for n in np.flatnonzero(linear == target)[:2]:
            sources.append(tuple(int(o[n]) for o in old))
        if len(sources) >= 2:
            break
    new_index = tuple(int(i) for i in np.unravel_index(target, shape))
    return f"{sources[0]} and {sources[1]} both map to {new_index}"


