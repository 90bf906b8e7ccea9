"""Loop unswitching of innermost loops (a lowering pass for the cpu target, IR -> IR).

Lowering leaves guards inside the innermost loop: the init of a reduction
(``if k == 0: C[i, j] = 0``) and the predicate of an imperfect split
(``if i_0 * 4 + i_1 < 18``). When such a condition does not depend on the innermost loop's
variable, it is the same for every iteration, but LLVM keeps the branch inside the loop and
the loop stays scalar (measured: a 4x16 tile went from vectorized to scalar). Unswitching
moves the test out::

    for j_1 in range(16):            if k == 0:
        if k == 0:                       for j_1 in range(16):
            C[..] = 0           ->           C[..] = 0
        C[..] += ...                         C[..] += ...
                                     else:
                                         for j_1 in range(16):
                                             C[..] += ...

Only conditions made of loop variables and constants (no buffer loads) are moved, and at
most ``MAX_UNSWITCH`` per loop (each doubles the loop's code).
"""

from __future__ import annotations

from workbench.ir import (
    BlockRealize,
    BufferLoad,
    BufferStore,
    For,
    IfThenElse,
    SeqStmt,
    Stmt,
    Var,
    seq,
)
from workbench.ir.functor import IRMapper, collect

MAX_UNSWITCH = 2


def unswitch_innermost_loops(stmt: Stmt, *, max_unswitch: int = MAX_UNSWITCH) -> Stmt:
    """Hoist loop-invariant guards out of each innermost loop of ``stmt``."""
    return _Unswitcher(max_unswitch).visit(stmt)


def _invariant_guard(body: Stmt, loop_var: Var) -> IfThenElse | None:
    """The first guard of ``body`` invariant in ``loop_var``, looking through statement
    sequences and opaque blocks (not into nested guards)."""
    if isinstance(body, SeqStmt):
        for stmt in body.stmts:
            found = _invariant_guard(stmt, loop_var)
            if found is not None:
                return found
        return None
    if isinstance(body, BlockRealize):
        return _invariant_guard(body.block.body, loop_var)
    if isinstance(body, IfThenElse):
        uses_var = collect(body.condition, lambda n: isinstance(n, Var) and n == loop_var)
        loads = collect(body.condition, lambda n: isinstance(n, BufferLoad))
        if not uses_var and not loads:
            return body
    return None


class _Resolve(IRMapper):
    """Replace every guard equal to ``guard`` (same invariant condition) by one branch."""

    def __init__(self, guard: IfThenElse, taken: bool):
        self.guard = guard
        self.branch = guard.then_case if taken else (guard.else_case or seq())

    def visit_IfThenElse(self, node: IfThenElse) -> Stmt:
        if node == self.guard:
            return self.branch
        return self.generic_visit(node)


class _Unswitcher(IRMapper):
    def __init__(self, max_unswitch: int):
        self.max_unswitch = max_unswitch

    def visit_For(self, node: For) -> Stmt:
        node = self.generic_visit(node)
        if collect(node.body, lambda n: isinstance(n, For)):
            return node
        return self._unswitch(node, self.max_unswitch)

    def _unswitch(self, loop: For, budget: int) -> Stmt:
        guard = _invariant_guard(loop.body, loop.loop_var) if budget else None
        if guard is None:
            return loop
        then_loop = self._unswitch(
            loop.replace(body=_Resolve(guard, True).visit(loop.body)), budget - 1
        )
        else_body = _Resolve(guard, False).visit(loop.body)
        if not collect(else_body, lambda n: isinstance(n, BufferStore)):
            return IfThenElse(guard.condition, then_loop)
        else_loop = self._unswitch(loop.replace(body=else_body), budget - 1)
        return IfThenElse(guard.condition, then_loop, else_loop)
