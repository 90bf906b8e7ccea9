"""Well-formedness of a PrimFunc: ``verify(func)`` raises an ``IRVerifyError`` or returns.

What is checked (one error class per reason, each naming the offending node):

* **names** (``DuplicateNameError``): block names, variable names (loop and block
  iteration variables) and buffer names are unique in the function. Schedules find blocks
  and loops by name and ``Var``/``Buffer`` equality is by name, so two definitions that
  share a name would silently be the same thing;
* **buffers** (``UndefinedBufferError``, ``IndexCountError``): every accessed buffer is a
  parameter or allocated by a block, and is indexed with one index per dimension;
* **dtypes** (``OperandDTypeError``): operands of a binary operation agree (no int/float
  mixing, one float width), ``Select`` branches agree, stored values have the buffer's
  dtype, indices, loop bounds and bindings are integers and conditions are not floats;
* **scoping** (``VarScopeError``): a variable is used only where it is defined; the body
  of a block with iteration variables never sees a loop variable from outside it (as TVM's
  ``BlockVarAccessVerifier``): it uses its own iteration variables and those of the blocks
  around it. Opaque blocks (no iteration variables) see the loops around them;
* **bounds** (``OutOfBoundsError``): an access that provably leaves its buffer. The proof
  is a witness: a corner of the loop domains (every enclosing condition and block predicate
  holding there, every binding inside its domain) where the index is outside the buffer.
  An access that can neither be proven in bounds nor out of bounds is left to the
  bounds-checked debug build (``wb.build(..., debug=True)``).

Example
-------
>>> from workbench.script import from_source
>>> func = from_source('''
... @T.prim_func
... def shift(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
...     for i in range(8):
...         with T.block("B"):
...             vi = T.axis.spatial(8, i)
...             B[vi] = A[vi + 1]
... ''')                                                        # doctest: +SKIP
>>> verify(func)                                                # doctest: +SKIP
Traceback (most recent call last):
OutOfBoundsError: block 'B': A[vi + 1] reads index 8 of dimension 0 (extent 8) at vi=7
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from workbench.ir.arith import evaluate, int_bounds
from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    CompareOp,
    IntImm,
    Not,
    PrimExpr,
    Select,
    Var,
    is_float,
    is_int,
)
from workbench.ir.function import PrimFunc
from workbench.ir.functor import collect
from workbench.ir.node import Node
from workbench.ir.stmt import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    SeqStmt,
    Stmt,
)

__all__ = [
    "BufferShapeError", "DuplicateNameError", "IRVerifyError", "IndexCountError",
    "OperandDTypeError", "OutOfBoundsError", "UndefinedBufferError", "VarScopeError",
    "Access", "access_text", "accesses", "find_witness", "index_in_bounds", "verify",
]

MAX_WITNESS_VARS = 8
"""The corner search for an out-of-bounds witness tries at most 2**8 points per access."""


# --------------------------------------------------------------------------- errors


class IRVerifyError(Exception):
    """A PrimFunc is not well formed. ``node`` is the offending IR node, ``block`` the name
    of the block it is in (``None`` outside blocks)."""

    def __init__(self, message: str, *, node: Node | None = None, block: str | None = None):
        self.message = message
        self.node = node
        self.block = block
        super().__init__(message)


class DuplicateNameError(IRVerifyError):
    """Two blocks, two variables or two different buffers share a name."""


class UndefinedBufferError(IRVerifyError):
    """A buffer is accessed that is neither a parameter nor allocated by a block."""


class BufferShapeError(IRVerifyError):
    """A buffer has a negative dimension."""


class IndexCountError(IRVerifyError):
    """A buffer is accessed with the wrong number of indices."""


class OperandDTypeError(IRVerifyError):
    """Operand dtypes disagree (int with float, float32 with float64, a float index...)."""


class VarScopeError(IRVerifyError):
    """A variable is used outside the loop or block that defines it."""


class OutOfBoundsError(IRVerifyError):
    """An access provably leaves its buffer. ``witness`` maps variable names to the values
    where it does; ``dim``/``index`` say which dimension and which index value."""

    def __init__(self, message: str, *, node: Node, block: str | None, buffer: Buffer,
                 dim: int, index: int, witness: dict[str, int]):
        super().__init__(message, node=node, block=block)
        self.buffer = buffer
        self.dim = dim
        self.index = index
        self.witness = witness


# --------------------------------------------------------------------------- helpers


def access_text(node: BufferLoad | BufferStore) -> str:
    """``A[vi + 1]``: the DSL text of an access (the store's target for a store)."""
    from workbench.ir.expr_text import expr_text

    if not node.indices:
        return f"{node.buffer.name}[()]"
    return f"{node.buffer.name}[{', '.join(expr_text(i) for i in node.indices)}]"


def index_in_bounds(index: PrimExpr, extent: int, ranges: dict) -> bool:
    """Whether ``0 <= index < extent`` is proven for every value of ``ranges`` (inclusive)."""
    lo, hi = int_bounds(index, ranges)
    return lo is not None and hi is not None and lo >= 0 and hi < extent


@dataclass
class _Point:
    """One definition on the path from the function's root to an access."""

    var: Var
    kind: str  # "loop" or "iter"
    lo: PrimExpr | None = None  # loop: min; iter: binding
    extent: PrimExpr | None = None  # loop: extent; iter: domain extent
    dom_min: PrimExpr | None = None


@dataclass(frozen=True)
class Access:
    """A buffer access with what is known where it happens (see ``accesses``)."""

    node: BufferLoad | BufferStore
    block: str | None
    ranges: dict
    points: tuple
    conditions: tuple

    def proven_in_bounds(self) -> bool:
        shape = self.node.buffer.shape
        return all(index_in_bounds(index, extent, self.ranges)
                   for index, extent in zip(self.node.indices, shape, strict=True))


@dataclass
class _Context:
    ranges: dict = field(default_factory=dict)
    points: tuple = ()
    conditions: tuple = ()
    visible: frozenset = frozenset()
    block: str | None = None
    outer: dict = field(default_factory=dict)  # var -> where it was defined (for messages)


def _const(expr: PrimExpr) -> int | None:
    return expr.value if isinstance(expr, IntImm) else None


def _refine(ranges: dict, cond: PrimExpr) -> dict:
    """Tighten ``ranges`` with the ``var < c``-style conjuncts of ``cond``."""
    if isinstance(cond, And):
        return _refine(_refine(ranges, cond.a), cond.b)
    if not isinstance(cond, (LT, LE, GT, GE)):
        return ranges
    a, b = cond.a, cond.b
    if isinstance(a, Var) and _const(b) is not None:
        var, c, op = a, b.value, type(cond)
    elif isinstance(b, Var) and _const(a) is not None:
        var, c = b, a.value
        op = {LT: GT, LE: GE, GT: LT, GE: LE}[type(cond)]
    else:
        return ranges
    if var not in ranges:
        return ranges
    lo, hi = ranges[var]
    if op is LT:
        hi = c - 1 if hi is None else min(hi, c - 1)
    elif op is LE:
        hi = c if hi is None else min(hi, c)
    elif op is GT:
        lo = c + 1 if lo is None else max(lo, c + 1)
    else:
        lo = c if lo is None else max(lo, c)
    return {**ranges, var: (lo, hi)}


def _intersect(a: tuple, b: tuple) -> tuple:
    lo = b[0] if a[0] is None else a[0] if b[0] is None else max(a[0], b[0])
    hi = b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1])
    return lo, hi


# --------------------------------------------------------------------------- the walk


def accesses(func: PrimFunc) -> Iterator[Access]:
    """Every buffer access of ``func`` (stores and loads, init included), with the ranges
    of the variables in scope there and the path of definitions and conditions around it.
    Loads inside a ``Select`` branch carry the select's condition."""
    yield from _Walker(func, check=False).run()


def verify(func: PrimFunc) -> None:
    """Raise an ``IRVerifyError`` subclass if ``func`` is not well formed (see the module
    docstring for the rules); return None otherwise.

    Example
    -------
    >>> from tests.ir_examples import matmul
    >>> verify(matmul(4, 4, 4)) is None
    True
    """
    for access in _Walker(func, check=True).run():
        if not access.proven_in_bounds():
            _raise_if_witness(access)


class _Walker:
    def __init__(self, func: PrimFunc, *, check: bool):
        self.func = func
        self.check = check
        self.block_names: set[str] = set()
        self.var_names: dict[str, str] = {}
        self.buffers: dict[str, Buffer] = {}
        self.found: list[Access] = []

    def run(self) -> list[Access]:
        for buf in self.func.params:
            self._declare_buffer(buf, None)
        for block in collect(self.func.body, lambda n: isinstance(n, Block)):
            for buf in block.alloc_buffers:
                self._declare_buffer(buf, block.name)
        self._stmt(self.func.body, _Context())
        return self.found

    # -- definitions -------------------------------------------------------------------

    def _declare_buffer(self, buf: Buffer, block: str | None) -> None:
        if not self.check:
            self.buffers[buf.name] = buf
            return
        old = self.buffers.get(buf.name)
        if old is not None:
            where = "a parameter" if block is None else f"allocated in block {block!r}"
            raise DuplicateNameError(f"buffer {buf.name!r} is defined twice ({where}); "
                                     "buffer names must be unique", node=buf, block=block)
        if any(n < 0 for n in buf.shape):
            raise BufferShapeError(f"buffer {buf.name!r} has a negative dimension "
                                  f"{tuple(buf.shape)}", node=buf, block=block)
        self.buffers[buf.name] = buf

    def _declare_var(self, var: Var, what: str, ctx: _Context) -> None:
        if not self.check:
            return
        if var.name in self.var_names:
            raise DuplicateNameError(
                f"variable {var.name!r} is defined twice ({self.var_names[var.name]} and "
                f"{what}); loop and block variable names must be unique",
                node=var, block=ctx.block)
        self.var_names[var.name] = what
        if not is_int(var.dtype):
            raise OperandDTypeError(f"{what} {var.name!r} has dtype {var.dtype}; it must be "
                                    "an integer", node=var, block=ctx.block)

    # -- statements --------------------------------------------------------------------

    def _stmt(self, stmt: Stmt, ctx: _Context) -> None:
        if isinstance(stmt, SeqStmt):
            for sub in stmt.stmts:
                self._stmt(sub, ctx)
        elif isinstance(stmt, For):
            self._for(stmt, ctx)
        elif isinstance(stmt, BlockRealize):
            self._realize(stmt, ctx)
        elif isinstance(stmt, BufferStore):
            self._store(stmt, ctx)
        elif isinstance(stmt, IfThenElse):
            self._expr(stmt.condition, ctx, condition=True)
            inside = _Context(_refine(ctx.ranges, stmt.condition), ctx.points,
                              ctx.conditions + (stmt.condition,), ctx.visible, ctx.block,
                              ctx.outer)
            self._stmt(stmt.then_case, inside)
            if stmt.else_case is not None:
                negated = Not(stmt.condition)
                other = _Context(ctx.ranges, ctx.points, ctx.conditions + (negated,),
                                 ctx.visible, ctx.block, ctx.outer)
                self._stmt(stmt.else_case, other)
        elif isinstance(stmt, Evaluate):
            self._expr(stmt.value, ctx)

    def _for(self, loop: For, ctx: _Context) -> None:
        nested = ctx.block not in (None, "root")
        what = f"loop variable (in block {ctx.block!r})" if nested else "loop variable"
        for bound in (loop.min, loop.extent):
            self._expr(bound, ctx)
            self._integer(bound, f"the bound {_text(bound)} of loop {loop.loop_var.name!r}",
                          ctx)
        self._declare_var(loop.loop_var, what, ctx)
        lo = int_bounds(loop.min, ctx.ranges)[0]
        hi = int_bounds(loop.min + loop.extent - 1, ctx.ranges)[1]
        inner = _Context({**ctx.ranges, loop.loop_var: (lo, hi)},
                         ctx.points + (_Point(loop.loop_var, "loop", loop.min, loop.extent),),
                         ctx.conditions, ctx.visible | {loop.loop_var}, ctx.block,
                         {**ctx.outer, loop.loop_var: "loop"})
        self._stmt(loop.body, inner)

    def _realize(self, realize: BlockRealize, ctx: _Context) -> None:
        block = realize.block
        if self.check:
            if block.name in self.block_names:
                raise DuplicateNameError(f"block {block.name!r} is defined twice; block names "
                                         "must be unique", node=block, block=block.name)
            self.block_names.add(block.name)
            if len(realize.iter_values) != len(block.iter_vars):
                raise IndexCountError(
                    f"block {block.name!r} has {len(block.iter_vars)} iteration variables "
                    f"but {len(realize.iter_values)} bindings", node=realize, block=block.name)
        self._expr(realize.predicate, ctx, condition=True)
        outer_ranges = _refine(ctx.ranges, realize.predicate)
        conditions = ctx.conditions
        if not (isinstance(realize.predicate, IntImm) and realize.predicate.value):
            conditions = conditions + (realize.predicate,)
        if not block.iter_vars:  # opaque: sees the loops around it
            inner = _Context(outer_ranges, ctx.points, conditions, ctx.visible, block.name,
                             ctx.outer)
        else:
            # as TVM: outer blocks' iteration variables stay visible, loop variables do not
            visible = {v for v in ctx.visible if ctx.outer.get(v) != "loop"}
            ranges, points, outer = dict(outer_ranges), ctx.points, {}
            for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
                self._expr(value, ctx)
                self._integer(value, f"the binding {_text(value)} of {iv.var.name!r}", ctx)
                self._declare_var(iv.var, f"iteration variable of block {block.name!r}", ctx)
                lo, ext = _const(iv.dom.min), _const(iv.dom.extent)
                dom = (lo, lo + ext - 1) if lo is not None and ext is not None else (None, None)
                ranges[iv.var] = _intersect(dom, int_bounds(value, outer_ranges))
                points += (_Point(iv.var, "iter", value, iv.dom.extent, iv.dom.min),)
                visible.add(iv.var)
                outer[iv.var] = f"block {block.name!r}"
            inner = _Context(ranges, points, conditions, frozenset(visible), block.name,
                             {**ctx.outer, **outer})
        for region in block.reads + block.writes:
            self._region(region, inner)
        if block.init is not None:
            self._stmt(block.init, inner)
        self._stmt(block.body, inner)

    def _region(self, region: BufferRegion, ctx: _Context) -> None:
        self._buffer(region.buffer, region, ctx)
        if self.check and len(region.region) != region.buffer.ndim:
            raise IndexCountError(f"block {ctx.block!r}: region of {region.buffer.name!r} has "
                                  f"{len(region.region)} ranges for a {region.buffer.ndim}-d "
                                  "buffer", node=region, block=ctx.block)
        for rng in region.region:
            self._expr(rng.min, ctx)
            self._expr(rng.extent, ctx)

    def _store(self, store: BufferStore, ctx: _Context) -> None:
        self._access(store, ctx)
        self._expr(store.value, ctx)
        if self.check and store.value.dtype != store.buffer.dtype:
            raise OperandDTypeError(
                f"block {ctx.block!r}: {access_text(store)} = {_text(store.value)} stores a "
                f"{store.value.dtype} value into {store.buffer.name!r} ({store.buffer.dtype})",
                node=store, block=ctx.block)

    def _access(self, node: BufferLoad | BufferStore, ctx: _Context) -> None:
        self._buffer(node.buffer, node, ctx)
        if self.check and len(node.indices) != node.buffer.ndim:
            raise IndexCountError(f"block {ctx.block!r}: {access_text(node)} has "
                                  f"{len(node.indices)} indices for a {node.buffer.ndim}-d "
                                  "buffer", node=node, block=ctx.block)
        for index in node.indices:
            self._expr(index, ctx)
            self._integer(index, f"the index {_text(index)} of {access_text(node)}", ctx)
        self.found.append(Access(node, ctx.block, ctx.ranges, ctx.points, ctx.conditions))

    def _buffer(self, buf: Buffer, node: Node, ctx: _Context) -> None:
        if not self.check:
            return
        known = self.buffers.get(buf.name)
        if known is None:
            raise UndefinedBufferError(f"block {ctx.block!r} uses buffer {buf.name!r}, which is "
                                       "neither a parameter nor allocated by a block",
                                       node=node, block=ctx.block)
        if known != buf:
            raise DuplicateNameError(f"block {ctx.block!r} uses a buffer {buf.name!r} of shape "
                                     f"{tuple(buf.shape)} {buf.dtype} that differs from the "
                                     f"declared {tuple(known.shape)} {known.dtype}",
                                     node=node, block=ctx.block)

    # -- expressions -------------------------------------------------------------------

    def _integer(self, expr: PrimExpr, what: str, ctx: _Context) -> None:
        if self.check and (not is_int(expr.dtype) or expr.dtype == "bool") \
                and not isinstance(expr, CompareOp):
            raise OperandDTypeError(f"{what} has dtype {expr.dtype}; it must be an integer",
                                    node=expr, block=ctx.block)

    def _expr(self, expr: PrimExpr, ctx: _Context, condition: bool = False) -> None:
        if condition and self.check and is_float(expr.dtype):
            raise OperandDTypeError(f"the condition {_text(expr)} is a {expr.dtype}; use a "
                                    "comparison", node=expr, block=ctx.block)
        if isinstance(expr, Var):
            self._var(expr, ctx)
        elif isinstance(expr, BufferLoad):
            self._access(expr, ctx)
        elif isinstance(expr, Select):
            self._expr(expr.condition, ctx, condition=True)
            self._same_dtype(expr, expr.true_value, expr.false_value, ctx)
            self._expr(expr.true_value, _with_condition(ctx, expr.condition))
            self._expr(expr.false_value, _with_condition(ctx, Not(expr.condition)))
        elif isinstance(expr, BinaryOp):
            self._same_dtype(expr, expr.a, expr.b, ctx)
            self._expr(expr.a, ctx)
            self._expr(expr.b, ctx)
        elif isinstance(expr, Not):
            self._expr(expr.a, ctx)
        elif isinstance(expr, Cast):
            self._expr(expr.value, ctx)
        elif isinstance(expr, Call):
            for arg in expr.args:
                self._expr(arg, ctx)

    def _same_dtype(self, node: PrimExpr, a: PrimExpr, b: PrimExpr, ctx: _Context) -> None:
        if not self.check:
            return
        mixed = is_float(a.dtype) != is_float(b.dtype)
        if mixed or (is_float(a.dtype) and a.dtype != b.dtype):
            raise OperandDTypeError(
                f"block {ctx.block!r}: the operands of {_text(node)} disagree: {_text(a)} is "
                f"{a.dtype}, {_text(b)} is {b.dtype} (use T.Cast)", node=node, block=ctx.block)

    def _var(self, var: Var, ctx: _Context) -> None:
        if not self.check or var in ctx.visible:
            return
        where = ctx.outer.get(var)
        if where is None:
            raise VarScopeError(f"variable {var.name!r} is used in block {ctx.block!r} outside "
                                "the loop or block that defines it", node=var, block=ctx.block)
        what = "loop variable" if where == "loop" else f"iteration variable of {where}"
        raise VarScopeError(
            f"{what} {var.name!r} is used inside block {ctx.block!r}, which sees only its "
            "own iteration variables (bind it with T.axis.spatial/T.axis.remap)",
            node=var, block=ctx.block)


def _with_condition(ctx: _Context, cond: PrimExpr) -> _Context:
    return _Context(_refine(ctx.ranges, cond), ctx.points, ctx.conditions + (cond,),
                    ctx.visible, ctx.block, ctx.outer)


def _text(expr: PrimExpr) -> str:
    from workbench.ir.expr_text import expr_text

    try:
        return expr_text(expr)
    except Exception:  # noqa: BLE001 - a message must never fail to print
        return repr(expr)


# --------------------------------------------------------------------------- witnesses


def find_witness(access: Access) -> tuple[int, int, dict] | None:
    """``(dim, index, {var name: value})`` of a point where ``access`` runs and leaves its
    buffer, searched over the corners of the loop domains; None when none is found."""
    node = access.node
    wanted = set()
    for expr in tuple(node.indices) + access.conditions:
        wanted |= set(_vars(expr))
    if any(collect(cond, lambda n: isinstance(n, BufferLoad)) for cond in access.conditions):
        return None  # data-dependent guard: cannot tell statically
    for point in reversed(access.points):  # bindings pull in the loops they use
        if point.var in wanted and point.kind == "iter":
            wanted |= set(_vars(point.lo))
        if point.var in wanted and point.kind == "loop":
            wanted |= set(_vars(point.lo)) | set(_vars(point.extent))
    loops = [p for p in access.points if p.kind == "loop" and p.var in wanted]
    if len(loops) > MAX_WITNESS_VARS:
        return None
    for corner in itertools.product((0, 1), repeat=len(loops)):
        choice = dict(zip((p.var for p in loops), corner, strict=True))
        env = _corner_env(access.points, choice)
        if env is None:
            continue
        try:
            if not all(evaluate(cond, env) for cond in access.conditions):
                continue
            values = [evaluate(index, env) for index in node.indices]
        except (KeyError, TypeError, ZeroDivisionError):
            return None
        for dim, (value, extent) in enumerate(zip(values, node.buffer.shape, strict=True)):
            if not 0 <= value < extent:
                shown = set().union(*(_vars(i) for i in node.indices)) or wanted
                names = {v.name: env[v] for v in env if v in shown}
                return dim, int(value), names
    return None


def _vars(expr: PrimExpr) -> list[Var]:
    return collect(expr, lambda n: isinstance(n, Var))


def _corner_env(points, choice: dict) -> dict | None:
    env: dict = {}
    try:
        for point in points:
            if point.kind == "loop":
                lo = evaluate(point.lo, env)
                extent = evaluate(point.extent, env)
                if extent <= 0:
                    return None
                env[point.var] = lo + extent - 1 if choice.get(point.var) else lo
            else:
                value = evaluate(point.lo, env)
                lo, extent = evaluate(point.dom_min, env), evaluate(point.extent, env)
                if not lo <= value < lo + extent:
                    return None  # the binding leaves the domain here: not a real execution
                env[point.var] = value
    except (KeyError, TypeError, ZeroDivisionError):
        return None
    return env


def _raise_if_witness(access: Access) -> None:
    found = find_witness(access)
    if found is None:
        return
    dim, index, witness = found
    node = access.node
    verb = "writes" if isinstance(node, BufferStore) else "reads"
    at = ", ".join(f"{name}={value}" for name, value in witness.items())
    extent = node.buffer.shape[dim]
    where = f"block {access.block!r}: " if access.block else ""
    raise OutOfBoundsError(
        f"{where}{access_text(node)} {verb} index {index} of dimension {dim} of "
        f"{node.buffer.name!r}, out of range 0..{extent - 1}" + (f" (at {at})" if at else ""),
        node=node, block=access.block, buffer=node.buffer, dim=dim, index=index,
        witness=witness)
