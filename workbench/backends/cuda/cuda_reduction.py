"""Cross-thread reductions: a reduction loop bound to ``threadIdx.x`` becomes an allreduce
(TVM's ``LowerCrossThreadReduction`` + ``tvm_thread_allreduce``).

``sch.bind(k_1, "threadIdx.x")`` on a reduction loop (legal for reduction blocks, see
``workbench.schedule.binding_reduction``) means: the block's threads share the reduction.
A plain translation would race (every thread updates ``C[i]``). This pass, the first of
the ``cuda`` target's passes, rewrites each such reduction nest::

    for k_0 in range(3):                        # in-thread (serial) reduce loop
        k_1 = threadIdx.x                       # cross-thread reduce loop, extent X
        if k_0 * 32 + k_1 < 80:                 # the split's guard
            if k_0 * 32 + k_1 == 0: C[i] = -inf # init
            C[i] = max(C[i], A[i, k_0 * 32 + k_1])

into

    C_thread[0] = -inf                                  # local: this thread's partial
    for k_0 in range(3):
        k_1 = threadIdx.x
        if k_0 * 32 + k_1 < 80:
            C_thread[0] = max(C_thread[0], A[i, k_0 * 32 + k_1])
    <allreduce of C_thread[0] over the X threads>       # every thread gets the result
    C[i] = C_thread[0]                                  # every thread stores it

The allreduce, by the extent ``X`` of ``threadIdx.x`` (``G`` groups along y and z):

* ``X`` a power of two up to 32 (groups inside one warp): a butterfly of
  ``cuda.shfl_xor_sync`` with lane masks ``X/2 ... 1``;
* ``X`` a multiple of 32: a butterfly within each warp, lane 0 of each warp writes the warp's
  value to a ``shared`` buffer ``(G, X // 32)``, barrier, then every warp reads the
  ``X // 32`` warp values (identity elsewhere) and runs a second butterfly: the result is in
  every thread (the broadcast consumers need);
* any other ``X``: every thread writes its partial to ``shared`` ``(G, X)``, barrier, and
  every thread combines the ``X`` values in order (correct, slower; use 32, 64, 128...).

The barriers come from ``insert_syncthreads`` (the staging buffer is an ordinary shared
buffer); the shuffles never sit under a per-thread condition (all lanes of the mask take
part). Under Numba's simulator the shuffles come from ``cuda_shuffle``.

Refused at build with ``CrossThreadReductionError``: a reduction bound to ``threadIdx.y`` or
``.z``, a nest with a spatial loop between its reduce loops or a second statement in it, a
cross-thread reduction under an ``if`` or inside a loop bound to ``threadIdx.x``.
"""

from __future__ import annotations

from workbench.backends.cuda.cuda_shuffle import install_simulator_shuffles
from workbench.backends.cuda.cuda_verify import GpuVerifyError
from workbench.ir import (
    EQ,
    LT,
    Add,
    And,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Mul,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    seq,
)
from workbench.ir.functor import collect
from workbench.ir.names import fresh_name
from workbench.schedule.binding import thread_extents
from workbench.schedule.reducers import Reducer, UpdateMismatch, match_update

FULL_MASK = 0xFFFFFFFF
WARP = 32
ZERO = IntImm(0)


class CrossThreadReductionError(GpuVerifyError):
    """A reduction bound to GPU threads in a form the allreduce lowering does not take."""

    def __init__(self, block: str, why: str, func: PrimFunc, node: Stmt, suggestion: str = ""):
        super().__init__(
            "build",
            block,
            f"cannot lower the cross-thread reduction of block {block!r}: {why}",
            detail="a reduction loop bound to threadIdx.x is lowered to per-thread partials "
            "and a warp-shuffle allreduce (see workbench/backends/cuda/cuda_reduction.py)",
            suggestion=suggestion
            or "bind the reduction loop to threadIdx.x, keep the reduce loops a perfect nest "
            "around the block, and keep other loops outside them",
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Recognising a lowered reduction block
# ---------------------------------------------------------------------------------------


class _Reduction:
    """A lowered reduction block: ``[if pred:] (if cond: C[s] = init); C[s] = op(C[s], x)``."""

    def __init__(self, realize, pred, cond, init, update, reducer, value):
        self.realize = realize
        self.pred = pred
        self.cond = cond
        self.init = init
        self.update = update
        self.reducer: Reducer = reducer
        self.value = value
        self.reduce_vars = {v.name for v in collect(cond, lambda n: isinstance(n, Var))}


def _reduction_form(stmt: Stmt) -> _Reduction | None:
    if not isinstance(stmt, BlockRealize) or stmt.block.iter_vars:
        return None
    body, pred = stmt.block.body, None
    if isinstance(body, IfThenElse) and body.else_case is None:
        pred, body = body.condition, body.then_case
    if not (isinstance(body, SeqStmt) and len(body.stmts) == 2):
        return None
    guard, update = body.stmts
    if not (isinstance(guard, IfThenElse) and guard.else_case is None):
        return None
    init = guard.then_case
    if not (isinstance(init, BufferStore) and isinstance(update, BufferStore)):
        return None
    if init.buffer != update.buffer or init.indices != update.indices:
        return None
    try:
        reducer, value = match_update(update)
    except UpdateMismatch:
        return None
    return _Reduction(stmt, pred, guard.condition, init, update, reducer, value)


def _thread_reduce_loops(red: _Reduction, loops) -> list[For]:
    return [
        loop
        for loop in loops
        if loop.kind is ForKind.THREAD_BINDING
        and loop.thread_binding.startswith("threadIdx")
        and loop.loop_var.name in red.reduce_vars
    ]


def _conjuncts(expr: PrimExpr | None) -> list[PrimExpr]:
    if expr is None:
        return []
    if isinstance(expr, And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def _all(exprs: list[PrimExpr]) -> PrimExpr | None:
    result = None
    for expr in exprs:
        result = expr if result is None else And(result, expr)
    return result


# ---------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------


def lower_cross_thread_reductions(func: PrimFunc, target=None) -> PrimFunc:
    """Rewrite every reduction bound to ``threadIdx.x`` into an allreduce (module docstring).

    A ``cuda`` target pass: runs on the common lowering's result, before the allocations are
    placed; the new ``local`` and ``shared`` buffers join the root block's allocations.
    """
    root = func.root_block
    body = root.body
    kernels = body.stmts if isinstance(body, SeqStmt) else (body,)
    taken = {v.name for v in collect(body, lambda n: isinstance(n, Var))}
    taken |= {
        n.buffer.name for n in collect(body, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    }
    taken |= {p.name for p in func.params} | {b.name for b in root.alloc_buffers}
    new_kernels, buffers = [], []
    for kernel in kernels:
        lowering = _KernelLowering(func, kernel, taken)
        new_kernels.append(lowering.run())
        buffers += lowering.buffers
    if not buffers:
        return func
    install_simulator_shuffles()
    allocations = root.alloc_buffers + tuple(buffers)
    new_root = root.replace(body=seq(*new_kernels), alloc_buffers=allocations)
    return func.replace(body=func.body.replace(block=new_root))


class _KernelLowering:
    def __init__(self, func: PrimFunc, kernel: Stmt, taken: set[str]):
        self.func = func
        self.kernel = kernel
        self.taken = taken
        self.buffers: list[Buffer] = []
        extents = thread_extents(kernel, "build", func) if kernel is not None else {}
        self.extent = {axis: extents.get(f"threadIdx.{axis}", (1, None))[0] for axis in "xyz"}

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken)

    def run(self) -> Stmt:
        new = self._visit(self.kernel, (), False)
        self._check_nothing_left(new)
        if isinstance(new, SeqStmt) and not isinstance(self.kernel, SeqStmt):
            new = self._bound_loop("x", new)  # a kernel stays one statement
        return new

    # -- walking --------------------------------------------------------------------------

    def _visit(self, stmt: Stmt, loops: tuple[For, ...], under_if: bool) -> Stmt:
        if isinstance(stmt, SeqStmt):
            parts = [self._visit(s, loops, under_if) for s in stmt.stmts]
            if all(a is b for a, b in zip(parts, stmt.stmts, strict=True)):
                return stmt
            return seq(*parts)
        if isinstance(stmt, For):
            lowered = self._try_lower(stmt, loops, under_if)
            if lowered is not None:
                return lowered
            body = self._visit(stmt.body, loops + (stmt,), under_if)
            return stmt if body is stmt.body else stmt.replace(body=body)
        if isinstance(stmt, IfThenElse):
            then_case = self._visit(stmt.then_case, loops, True)
            else_case = stmt.else_case
            if else_case is not None:
                else_case = self._visit(else_case, loops, True)
            if then_case is stmt.then_case and else_case is stmt.else_case:
                return stmt
            return stmt.replace(then_case=then_case, else_case=else_case)
        if isinstance(stmt, BlockRealize):
            body = self._visit(stmt.block.body, loops, under_if)
            if body is stmt.block.body:
                return stmt
            return stmt.replace(block=stmt.block.replace(body=body))
        return stmt

    def _try_lower(self, loop: For, loops: tuple[For, ...], under_if: bool) -> Stmt | None:
        chain, inner = [loop], loop.body
        while isinstance(inner, For):
            chain.append(inner)
            inner = inner.body
        red = _reduction_form(inner)
        if red is None or loop.loop_var.name not in red.reduce_vars:
            return None
        if not _thread_reduce_loops(red, chain):
            return None
        name = red.realize.block.name
        node = red.realize
        for other in chain:
            if other.loop_var.name not in red.reduce_vars:
                why = f"loop {other.loop_var.name!r} (not a reduce loop) is inside its reduce loops"
                raise CrossThreadReductionError(name, why, self.func, other)
        for other in _thread_reduce_loops(red, chain):
            if other.thread_binding != "threadIdx.x":
                why = f"its reduce loop {other.loop_var.name!r} is bound to {other.thread_binding}"
                raise CrossThreadReductionError(
                    name, why, self.func, other, "bind the reduce loop to threadIdx.x"
                )
        if under_if:
            why = "it sits under an if (the shuffles and barriers need every thread)"
            raise CrossThreadReductionError(name, why, self.func, node)
        for outer in loops:
            if outer.thread_binding == "threadIdx.x":
                why = f"it is inside loop {outer.loop_var.name!r}, bound to threadIdx.x as well"
                raise CrossThreadReductionError(name, why, self.func, outer)
        return self._lower(red, chain)

    def _check_nothing_left(self, stmt: Stmt) -> None:
        def walk(node: Stmt, loops: tuple[For, ...]):
            if isinstance(node, For):
                walk(node.body, loops + (node,))
            elif isinstance(node, SeqStmt):
                for sub in node.stmts:
                    walk(sub, loops)
            elif isinstance(node, IfThenElse):
                walk(node.then_case, loops)
                if node.else_case is not None:
                    walk(node.else_case, loops)
            elif isinstance(node, BlockRealize):
                red = _reduction_form(node)
                if red is not None and _thread_reduce_loops(red, loops):
                    why = "its reduce loops are not a perfect nest around it"
                    raise CrossThreadReductionError(node.block.name, why, self.func, node)
                walk(node.block.body, loops)

        walk(stmt, ())

    # -- rewriting ------------------------------------------------------------------------

    def _lower(self, red: _Reduction, chain: list[For]) -> Stmt:
        dtype = red.update.buffer.dtype
        block = red.realize.block.name
        acc = Buffer(self.fresh(f"{red.update.buffer.name}_thread"), (1,), dtype, "local")
        self.buffers.append(acc)
        value = BufferLoad(acc, (ZERO,))
        accumulate: Stmt = BufferStore(acc, red.reducer.combine(value, red.value), (ZERO,))
        if red.pred is not None:
            accumulate = IfThenElse(red.pred, accumulate)
        body = red.realize.replace(block=red.realize.block.replace(body=accumulate))
        for loop in reversed(chain):
            body = loop.replace(body=body)
        chain_vars = {loop.loop_var.name for loop in chain}
        outer_pred = _all(
            [
                c
                for c in _conjuncts(red.pred)
                if not {v.name for v in collect(c, lambda n: isinstance(n, Var))} & chain_vars
            ]
        )
        final: Stmt = BufferStore(red.update.buffer, value, red.update.indices)
        if outer_pred is not None:
            final = IfThenElse(outer_pred, final)
        return seq(
            BufferStore(acc, red.init.value, (ZERO,)),
            body,
            self._allreduce(acc, red.reducer, red.init.value, block),
            final,
        )

    def _bound_loop(self, axis: str, body: Stmt, var: Var | None = None) -> For:
        var = Var(self.fresh(f"t{axis}")) if var is None else var
        return For(
            var, ZERO, IntImm(self.extent[axis]), ForKind.THREAD_BINDING, body, f"threadIdx.{axis}"
        )

    def _allreduce(self, acc: Buffer, reducer: Reducer, identity: PrimExpr, block: str) -> Stmt:
        x, y, z = self.extent["x"], self.extent["y"], self.extent["z"]
        groups, threads = y * z, x * y * z
        tx = Var(self.fresh("tx"))
        ty = Var(self.fresh("ty")) if y > 1 else None
        tz = Var(self.fresh("tz")) if z > 1 else None
        group: PrimExpr = ZERO
        if ty is not None:
            group = ty
        if tz is not None:
            group = Add(group, Mul(IntImm(y), tz)) if ty is not None else tz
        value = BufferLoad(acc, (ZERO,))

        def butterfly(width: int, mask: int) -> list[Stmt]:
            steps, offset = [], width // 2
            while offset >= 1:
                call = Call(
                    "cuda.shfl_xor_sync", (IntImm(mask, "int64"), value, IntImm(offset)), acc.dtype
                )
                steps.append(BufferStore(acc, reducer.combine(value, call), (ZERO,)))
                offset //= 2
            return steps

        power_of_two = x & (x - 1) == 0
        if power_of_two and x <= WARP and (threads % WARP == 0 or threads <= WARP):
            mask = FULL_MASK if threads % WARP == 0 else (1 << threads) - 1
            return seq(*butterfly(x, mask))  # lanes only: no thread index needed
        elif x % WARP == 0:
            warps = x // WARP
            staging = Buffer(self.fresh(f"{block}_warps"), (groups, warps), acc.dtype, "shared")
            self.buffers.append(staging)
            lane = FloorMod(tx, IntImm(WARP))
            stmts = butterfly(WARP, FULL_MASK)
            stmts.append(
                IfThenElse(
                    EQ(lane, ZERO),
                    BufferStore(staging, value, (group, FloorDiv(tx, IntImm(WARP)))),
                )
            )
            stmts.append(BufferStore(acc, identity, (ZERO,)))
            stmts.append(
                IfThenElse(
                    LT(lane, IntImm(warps)),
                    BufferStore(acc, BufferLoad(staging, (group, lane)), (ZERO,)),
                )
            )
            stmts += butterfly(WARP, FULL_MASK)
        else:
            staging = Buffer(self.fresh(f"{block}_partials"), (groups, x), acc.dtype, "shared")
            self.buffers.append(staging)
            w = Var(self.fresh("w"))
            combine = BufferStore(
                acc, reducer.combine(value, BufferLoad(staging, (group, w))), (ZERO,)
            )
            stmts = [
                BufferStore(staging, value, (group, tx)),
                BufferStore(acc, BufferLoad(staging, (group, ZERO)), (ZERO,)),
                For(w, IntImm(1), IntImm(x - 1), ForKind.SERIAL, combine),
            ]
        body = self._bound_loop("x", seq(*stmts), tx)
        if ty is not None:
            body = self._bound_loop("y", body, ty)
        if tz is not None:
            body = self._bound_loop("z", body, tz)
        return body
