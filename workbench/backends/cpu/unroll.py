"""Text unrolling of small ``unroll`` loops (a lowering pass, IR -> IR).

An ``unroll`` loop with a constant trip count is replaced by copies of its body, one per
iteration, with the loop variable substituted by the constant, when the result stays small:
at most ``max_trip`` iterations, at most ``max_stores`` buffer stores in all, and no loop
inside. Other unroll loops stay loops with a constant trip count, which LLVM unrolls
itself: text unrolling big bodies makes Numba's compile time grow with the code size
(8-20 s measured for big kernels) for little gain, and text-unrolling a loop around a
vectorized loop splits it into separate vector loops that LLVM no longer keeps in
registers across an enclosing reduction (measured, 1024 matmul with an 8x32 tile: 37
GFLOP/s text-unrolled, 85 as a constant-trip loop).
"""

from __future__ import annotations

from workbench.ir import BufferStore, For, ForKind, IntImm, Stmt, seq, substitute
from workbench.ir.functor import IRMapper, collect

MAX_TRIP = 16
MAX_STORES = 32


def unroll_small_loops(
    stmt: Stmt, *, max_trip: int = MAX_TRIP, max_stores: int = MAX_STORES
) -> Stmt:
    """Replace each small constant-trip ``unroll`` loop of ``stmt`` by copies of its body.

    Example
    -------
    ``for i_1 in T.unroll(2): C[i_1] = A[i_1]`` becomes ``C[0] = A[0]; C[1] = A[1]``.
    """
    return _Unroller(max_trip, max_stores).visit(stmt)


class _Unroller(IRMapper):
    def __init__(self, max_trip: int, max_stores: int):
        self.max_trip = max_trip
        self.max_stores = max_stores

    def visit_For(self, node: For) -> Stmt:
        node = self.generic_visit(node)  # inner loops first
        if node.kind is not ForKind.UNROLLED:
            return node
        if not isinstance(node.min, IntImm) or not isinstance(node.extent, IntImm):
            return node
        if collect(node.body, lambda n: isinstance(n, For)):
            return node
        trip = node.extent.value
        stores = len(collect(node.body, lambda n: isinstance(n, BufferStore)))
        if trip > self.max_trip or trip * stores > self.max_stores:
            return node
        copies = [
            substitute(node.body, {node.loop_var: IntImm(node.min.value + n, node.loop_var.dtype)})
            for n in range(trip)
        ]
        from workbench.backends.common.lower import simplify_stmt

        return simplify_stmt(seq(*copies))
