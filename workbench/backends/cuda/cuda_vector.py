"""Wide loads and stores: ``vectorize`` on the ``cuda`` target (TVM's vectorized ``float4``).

On the CPU a vectorized loop is a hint for LLVM; on the GPU each thread runs its loop
itself, so ``vectorize`` of a loop of 4 means *one 128-bit access instead of four 32-bit
ones*: ``ld.global.v4.f32`` / ``st.global.v4.f32`` (and ``.shared``), which halves the
number of memory instructions a bandwidth-bound kernel issues. The pass
``widen_vector_loops`` rewrites each vectorized loop of extent 4 whose body is one store::

    for v in T.vectorized(4):
        C[i, j * 4 + v] = A[i, j * 4 + v] * T.float32(2)

into (printed by ``CudaPrinter``; ``load4``/``store4`` are in ``cuda_vector_ops``)::

    A_w0_0, A_w0_1, A_w0_2, A_w0_3 = load4(A, (i, j * 4))
    store4(C, (i, j * 4), A_w0_0 * np.float32(2.0), A_w0_1 * ..., ...)

An access is made wide only when it is provably aligned to 16 bytes: a 4-byte element type
(float32, int32, uint32), the loop variable only in the innermost index, as ``base + v``
with ``base`` a multiple of 4 whatever the values of the other loop variables (checked on
the index's structure: sums, products by constants, ``//`` and ``%`` by multiples of 4),
and the buffer's innermost extent a multiple of 4 (so each row starts aligned). Other
accesses of the loop stay scalar, one per lane; a loop with no wide access, of another
extent, or with a body that is not one store, stays a scalar loop, with a comment in the
generated code saying why. None of this is an error: ``vectorize`` is a performance hint.

A guard that depends on the lane (a split that does not divide a row: ``if j * 4 + v <
N``) keeps the loop scalar, unless the loop is annotated ``sch.annotate(loop,
LANE_FREE_GUARD, 1)`` and the guard is ``base + v < N`` with ``base`` a multiple of 4 and
``N`` a constant multiple of 4: then the group of 4 is wholly inside or wholly outside,
and the guard becomes ``base < N`` (one branch per group, the access wide). Opt-in because
the wide guarded copy can cost registers where a kernel has both copies (the matmul's edge
blocks measured 153 registers against 128 with scalar edges).

Shared buffers accessed wide are declared with ``alignment=SHARED_ALIGN`` (16 bytes on the
GPU; ``None`` under the simulator, which refuses an alignment).
"""

from __future__ import annotations

import math
import re

from workbench.backends.common.allocation import Allocate
from workbench.backends.common.target import Target
from workbench.ir import (
    LT,
    Add,
    And,
    BlockRealize,
    BufferLoad,
    BufferStore,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Mul,
    PrimExpr,
    PrimFunc,
    Stmt,
    Sub,
    Var,
    seq,
)
from workbench.ir.arith import simplify
from workbench.ir.functor import IRMapper, collect, substitute
from workbench.ir.node import Node, ir_node

LANES = 4
WIDE_DTYPES = ("float32", "int32", "uint32")
LANE_FREE_GUARD = "cuda.lane_free_guard"


# ---------------------------------------------------------------------------------------
# Backend-only statements
# ---------------------------------------------------------------------------------------


@ir_node
class WideLoad(Stmt):
    """``lanes = load4(buffer, indices)``: 4 consecutive elements from ``buffer[indices]``."""

    buffer: object  # Buffer
    indices: tuple[PrimExpr, ...]
    lanes: tuple[Var, ...]

    __hash__ = Node.__hash__


@ir_node
class WideStore(Stmt):
    """``store4(buffer, indices, *temps)``: 4 consecutive elements at ``buffer[indices]``;
    lane ``n``'s value ``values[n]`` is first assigned to ``temps[n]`` (readable source)."""

    buffer: object  # Buffer
    indices: tuple[PrimExpr, ...]
    values: tuple[PrimExpr, ...]
    temps: tuple[Var, ...]

    __hash__ = Node.__hash__


@ir_node
class CodeComment(Stmt):
    """A comment in the generated code (why a vectorized loop stayed scalar)."""

    text: str

    __hash__ = Node.__hash__


@ir_node
class AlignedAllocate(Allocate):
    """An ``Allocate`` whose memory is 16-byte aligned (a shared buffer accessed wide)."""

    __hash__ = Node.__hash__


# ---------------------------------------------------------------------------------------
# Index analysis
# ---------------------------------------------------------------------------------------


def multiple_of(expr: PrimExpr, m: int) -> bool:
    """Whether ``expr`` is a multiple of ``m`` for every value of its variables (by structure:
    constants, sums, products by constants, ``x % d`` and ``x // d`` by constants)."""
    if m == 1:
        return True
    if isinstance(expr, IntImm):
        return expr.value % m == 0
    if isinstance(expr, (Add, Sub)):
        return multiple_of(expr.a, m) and multiple_of(expr.b, m)
    if isinstance(expr, Mul):
        for factor, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(factor, IntImm):
                return multiple_of(other, m // math.gcd(factor.value, m))
        return multiple_of(expr.a, m) or multiple_of(expr.b, m)
    if isinstance(expr, FloorMod) and isinstance(expr.b, IntImm):
        return expr.b.value % m == 0 and multiple_of(expr.a, m)
    if isinstance(expr, FloorDiv) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        return multiple_of(expr.a, m * expr.b.value)
    return False


def lane_split(expr: PrimExpr, lane: Var) -> tuple[PrimExpr, int] | None:
    """``(base, step)`` with ``expr == base + step * lane`` for ``0 <= lane < 4`` and ``base``
    free of ``lane``; None where that cannot be shown. ``(x + lane) % d`` and
    ``(x + lane) // d`` split when ``x`` is a multiple of 4 and ``d`` too (no wrap-around
    inside a group of 4)."""
    if lane not in collect(expr, lambda n: isinstance(n, Var)):
        return expr, 0
    if expr == lane:
        return IntImm(0, lane.dtype), 1
    if isinstance(expr, (Add, Sub)):
        a, b = lane_split(expr.a, lane), lane_split(expr.b, lane)
        if a is None or b is None:
            return None
        if isinstance(expr, Add):
            return a[0] + b[0], a[1] + b[1]
        return a[0] - b[0], a[1] - b[1]
    if isinstance(expr, Mul):
        for factor, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(factor, IntImm):
                inner = lane_split(other, lane)
                if inner is None:
                    return None
                return inner[0] * factor, inner[1] * factor.value
        return None
    if isinstance(expr, (FloorMod, FloorDiv)) and isinstance(expr.b, IntImm):
        inner = lane_split(expr.a, lane)
        d = expr.b.value
        if inner is None or inner[1] != 1 or d % LANES or not multiple_of(inner[0], LANES):
            return None
        if isinstance(expr, FloorMod):
            return FloorMod(inner[0], expr.b), 1
        return FloorDiv(inner[0], expr.b), 0
    return None


def wide_base(indices: tuple[PrimExpr, ...], buffer, lane: Var):
    """The base indices of a 16-byte aligned access ``buffer[indices]`` over the lanes, or
    ``(None, why)`` when it cannot be shown aligned (or is not worth it: a ``local`` array
    lives in registers, where a vector access would only force it into memory)."""
    shape, dtype = buffer.shape, buffer.dtype
    if buffer.scope == "local":
        return None, "a local array (registers)"
    if dtype not in WIDE_DTYPES:
        return None, f"element type {dtype} is not 4 bytes wide"
    if not indices:
        return None, "a 0-d buffer"
    bases = []
    for axis, index in enumerate(indices):
        split = lane_split(index, lane)
        if split is None:
            return None, f"index {axis} is not an affine function of the lane"
        base, step = split
        last = axis == len(indices) - 1
        if step != (1 if last else 0):
            return None, f"the lane is not the unit-stride innermost index (index {axis})"
        bases.append(simplify(base))
    if not multiple_of(bases[-1], LANES):
        return None, "the innermost base index is not provably a multiple of 4"
    extent = shape[-1]
    if not (isinstance(extent, int) or isinstance(extent, IntImm)):
        return None, "the innermost extent is not a constant"
    if int(extent.value if isinstance(extent, IntImm) else extent) % LANES:
        return None, "the innermost extent is not a multiple of 4 (rows not 16-byte aligned)"
    return tuple(bases), ""


# ---------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------


def lane_free_guard(cond: PrimExpr, lane: Var) -> PrimExpr | None:
    """``cond`` without the lane where a group of 4 lanes is wholly inside or outside it:
    ``base + lane < N`` (``base`` a multiple of 4, ``N`` a constant multiple of 4) ->
    ``base < N``, conjunctions term by term; None otherwise.

    >>> from workbench.ir import Var, IntImm
    >>> j, v = Var("j"), Var("v")
    >>> lane_free_guard(LT(j * 4 + v, IntImm(100)), v) == LT(j * 4, IntImm(100))
    True
    >>> lane_free_guard(LT(j * 4 + v, IntImm(99)), v) is None
    True
    """
    if lane not in collect(cond, lambda n: isinstance(n, Var)):
        return cond
    if isinstance(cond, And):
        a, b = lane_free_guard(cond.a, lane), lane_free_guard(cond.b, lane)
        return None if a is None or b is None else And(a, b)
    if not isinstance(cond, LT) or not isinstance(cond.b, IntImm) or cond.b.value % LANES:
        return None
    split = lane_split(cond.a, lane)
    if split is None or split[1] != 1 or not multiple_of(split[0], LANES):
        return None
    return LT(simplify(split[0]), cond.b)


def _lane_free(loop: For) -> bool:
    return any(key == LANE_FREE_GUARD and value for key, value in loop.annotations)


def _strip(body: Stmt, lane: Var | None = None):
    """The single store under ``body`` and a function rebuilding the wrappers around a new
    statement (opaque block realizes, lane-free ``if`` guards); None if not that shape."""
    wrappers = []
    while True:
        if isinstance(body, BlockRealize):
            wrappers.append(body)
            body = body.block.body
        elif isinstance(body, IfThenElse) and body.else_case is None:
            free = lane_free_guard(body.condition, lane) if lane is not None else None
            wrappers.append(body if free is None else body.replace(condition=free))
            body = body.then_case
        else:
            break
    if not isinstance(body, BufferStore):
        return None, None

    def rebuild(new: Stmt) -> Stmt:
        for wrapper in reversed(wrappers):
            if isinstance(wrapper, BlockRealize):
                new = wrapper.replace(block=wrapper.block.replace(body=new))
            else:
                new = wrapper.replace(then_case=new)
        return new

    guards = [w.condition for w in wrappers if isinstance(w, IfThenElse)]
    return body, (rebuild, guards)


def _python_name(text: str) -> str:
    return re.sub(r"\W", "_", text)


class _LoadLanes(IRMapper):
    """One lane of an expression: wide loads become that lane's variable, the loop variable
    the lane number, scalar loads get simplified indices."""

    def __init__(self, wide: dict, lane_var: Var, lane: int):
        self.wide = wide
        self.lane_var = lane_var
        self.lane = lane

    def visit_BufferLoad(self, node: BufferLoad):
        if node in self.wide:
            return self.wide[node][self.lane]
        indices = tuple(
            simplify(substitute(i, {self.lane_var: IntImm(self.lane, self.lane_var.dtype)}))
            for i in node.indices
        )
        return node.replace(indices=indices)

    def visit_Var(self, node: Var):
        if node == self.lane_var:
            return IntImm(self.lane, node.dtype)
        return node


class _Widen(IRMapper):
    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.count = 0
        self.shared_wide: set[str] = set()

    def _lanes(self, buffer, letter: str = "w") -> tuple[Var, ...]:
        while True:
            stem = f"{_python_name(buffer.name)}_{letter}{self.count}"
            self.count += 1
            names = [f"{stem}_{n}" for n in range(LANES)]
            if not self.taken & set(names):
                self.taken |= set(names)
                return tuple(Var(name, buffer.dtype) for name in names)

    def visit_For(self, loop: For):
        body = self.visit(loop.body)
        loop = loop if body is loop.body else loop.replace(body=body)
        if loop.kind is not ForKind.VECTORIZED:
            return loop
        widened, why = self._widen(loop)
        if widened is not None:
            return widened
        note = CodeComment(f"vectorize {loop.loop_var.name}: scalar loop ({why})")
        return seq(note, loop)

    def _widen(self, loop: For):
        extent = loop.extent.value if isinstance(loop.extent, IntImm) else None
        if extent != LANES or not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            return None, f"wide accesses need a loop of extent {LANES} from 0"
        store, wrap = _strip(loop.body, loop.loop_var if _lane_free(loop) else None)
        if store is None:
            return None, "the body is not a single store"
        rebuild, guards = wrap
        var = loop.loop_var
        if any(var in collect(g, lambda n: isinstance(n, Var)) for g in guards):
            return None, "a guard depends on the lane"
        loads: list[Stmt] = []
        wide: dict = {}
        reasons = []
        for load in collect(store.value, lambda n: isinstance(n, BufferLoad)):
            if load in wide or var not in collect(load, lambda n: isinstance(n, Var)):
                continue
            base, why = wide_base(load.indices, load.buffer, var)
            if base is None:
                reasons.append(f"{load.buffer.name}: {why}")
                continue
            lanes = self._lanes(load.buffer)
            wide[load] = lanes
            loads.append(WideLoad(load.buffer, base, lanes))
            if load.buffer.scope == "shared":
                self.shared_wide.add(load.buffer.name)
        values = tuple(_LoadLanes(wide, var, n).visit(store.value) for n in range(LANES))
        base, why = wide_base(store.indices, store.buffer, var)
        if base is None:
            reasons.append(f"{store.buffer.name}: {why}")
            if not wide:
                return None, "; ".join(reasons)
            stores = [
                BufferStore(
                    store.buffer,
                    values[n],
                    tuple(
                        simplify(substitute(i, {var: IntImm(n, var.dtype)}))
                        for i in store.indices
                    ),
                )
                for n in range(LANES)
            ]
        else:
            stores = [WideStore(store.buffer, base, values, self._lanes(store.buffer, "s"))]
            if store.buffer.scope == "shared":
                self.shared_wide.add(store.buffer.name)
        body = seq(*loads, *stores)
        if reasons:
            body = seq(CodeComment("vectorize: scalar lanes for " + "; ".join(reasons)), body)
        return rebuild(body), ""


class _AlignShared(IRMapper):
    def __init__(self, names: set[str]):
        self.names = names

    def visit_Allocate(self, node: Allocate):
        body = self.visit(node.body)
        if node.buffer.name in self.names and node.buffer.scope == "shared":
            return AlignedAllocate(node.buffer, body)
        return node if body is node.body else node.replace(body=body)


def widen_vector_loops(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """The ``cuda`` pass: vectorized loops of 4 become wide loads and stores (see the module
    docstring); shared buffers accessed wide get 16-byte aligned allocations."""
    loops = collect(func.body, lambda n: isinstance(n, For) and n.kind is ForKind.VECTORIZED)
    if not loops:
        return func
    taken = {v.name for v in collect(func.body, lambda n: isinstance(n, Var))}
    taken |= {b.name for b in func.params}
    widen = _Widen(taken)
    body = widen.visit(func.body)
    if widen.shared_wide:
        body = _AlignShared(widen.shared_wide).visit(body)
    return func.replace(body=body)


# ---------------------------------------------------------------------------------------
# Printing (used by CudaPrinter)
# ---------------------------------------------------------------------------------------

IMPORT_LINE = "from workbench.backends.cuda.cuda_vector_ops import SHARED_ALIGN, load4, store4"


def print_index_tuple(printer, indices) -> str:
    return "(" + ", ".join(printer(i) for i in indices) + ("," if len(indices) == 1 else "") + ")"


def wide_load_line(names: dict, printer, stmt: WideLoad) -> str:
    lanes = ", ".join(printer(v) for v in stmt.lanes)
    index = print_index_tuple(printer, stmt.indices)
    return f"{lanes} = load4({names[stmt.buffer.name]}, {index})"


def wide_store_lines(names: dict, printer, stmt: WideStore) -> list[str]:
    index = print_index_tuple(printer, stmt.indices)
    if all(isinstance(v, Var) for v in stmt.values):  # a copy: no temporaries
        values = ", ".join(printer(v) for v in stmt.values)
        return [f"store4({names[stmt.buffer.name]}, {index}, {values})"]
    lines = [f"{printer(t)} = {printer(v)}" for t, v in zip(stmt.temps, stmt.values, strict=True)]
    temps = ", ".join(printer(t) for t in stmt.temps)
    return lines + [f"store4({names[stmt.buffer.name]}, {index}, {temps})"]


def uses_wide_accesses(func: PrimFunc) -> bool:
    return bool(collect(func.body, lambda n: isinstance(n, (WideLoad, WideStore))))
