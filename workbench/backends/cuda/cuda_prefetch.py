"""Register prefetch for double-buffered loops (runs after ``widen_vector_loops``).

After ``double_buffer_pass`` a refill loop reads::

    for k in range(K):
        if k + 1 < K:
            a0, a1, a2, a3 = load4(A, (..k + 1..))          # global -> registers
            store4(A_shared, ((k + 1) % 2, ...), a0, ..)    # registers -> shared
        compute(k)
        cuda.syncthreads()

A thread stops at the shared store until its global load has arrived (hundreds of cycles)
and only then computes. Here the loads move to the top of the body, unconditional (tile
``min(k + 1, K - 1)``: the last iteration reloads the last tile, a valid address), and the
stores after the compute, still under the ``if``: the load latency is hidden behind the
tile's compute (TVM's software pipelining does the same with a register stage).

Applied only where the copy holds nothing but thread-index assignments, extent-1 loops,
guards without ``else`` (the threads past a tile of fewer vectors than threads, a
predicated edge: kept around both halves, so a lane register is stored only where the
same guard loaded it), wide loads and stores of lane registers (so each lane register is
loaded once per iteration); any other copy is left as ``double_buffer_pass`` wrote it.

A refill loop annotated ``STORE_ON_LAST`` (``matmul_cuda.PREFETCH_STORE_ON_LAST``) gets its
stores without the ``if`` (behind it the compiler may sink the loads back after the compute:
the 128 tile's SASS did), and its copies of up to ``MAX_COPY_UNROLL`` groups a thread are
unrolled first, each group's lane registers renamed, so every group is prefetched. Only
where the stores address the buffer's half by the stage alone (``(k + 1) % 2``, the rest
of the index free of ``k``): a buffer holding the whole of K (its copy's threads cover more
rows than the tile, region inference widened it) is indexed by ``k`` itself, and its last
store would land past the end; such a copy keeps its ``if``.
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.backends.cuda.cuda_double_buffer import REFILL_LOOP
from workbench.backends.cuda.cuda_sync import SyncThreads
from workbench.backends.cuda.cuda_vector import CodeComment, WideLoad, WideStore
from workbench.ir import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Min,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    seq,
)
from workbench.ir.functor import IRMapper, collect, substitute
from workbench.ir.walk import uses_var

STORE_ON_LAST = "cuda.prefetch_store_on_last"
"""A refill loop's annotation: the stores of the prefetched registers run at every
iteration, the last one too (it writes the half of the buffer no iteration reads again),
rather than under ``if k + 1 < K``. Behind the ``if`` the compiler sinks the loads into the
guarded block, next to the stores, after the compute (SASS of the 4096^3 SGEMM, sm_90:
both ``LDG.128`` after the 512 ``FFMA`` of the tile): the prefetch is undone. Unguarded,
ptxas keeps them inside the compute, at the cost of registers (123 -> 149 there: one block
of 256 threads per multiprocessor instead of two, unless launch bounds ask for two).
``matmul_cuda.PREFETCH_STORE_ON_LAST`` asks for it (on by default since it was timed on the
H100, 2026-12-07)."""


MAX_COPY_UNROLL = 8
"""Under ``STORE_ON_LAST``, a copy whose threads each move up to this many groups of 4 (a
serial loop around the wide load and store: the 64 x 64 tile of 8 x 8 threads moves 2
groups of A and of B per k step) is unrolled here, each group's lane registers renamed, so
every group is prefetched. Not without it: behind ``if k + 1 < K`` ptxas sinks the loads
back after the compute (SASS, 8 x 8 threads at 1024 x 768 x 768: loads at 98% of the
FFMAs, 151 registers; with ``STORE_ON_LAST`` at 51-60%, 156 registers)."""


class _UnrollCopy(IRMapper):
    """Serial loops of at most ``MAX_COPY_UNROLL`` iterations around wide loads, one copy of
    the body per iteration, the lane registers of copy ``n`` renamed ``<lane>_u<n>``."""

    def visit_For(self, loop: For):
        body = self.visit(loop.body)
        loop = loop if body is loop.body else loop.replace(body=body)
        extent = loop.extent.value if isinstance(loop.extent, IntImm) else None
        if (loop.kind is ForKind.THREAD_BINDING or extent is None or extent < 2
                or extent > MAX_COPY_UNROLL or not isinstance(loop.min, IntImm)):
            return loop
        loads = collect(loop.body, lambda n: isinstance(n, WideLoad))
        if not loads:
            return loop
        lanes = [v for load in loads for v in load.lanes]
        temps = [v for store in collect(loop.body, lambda n: isinstance(n, WideStore))
                 for v in store.temps]
        var = loop.loop_var
        copies = []
        for n in range(extent):
            renamed = {v: Var(f"{v.name}_u{n}", v.dtype) for v in (*lanes, *temps)}
            renamed[var] = IntImm(loop.min.value + n, var.dtype)
            copies.append(substitute(loop.body, renamed))
        return seq(*copies)


def _by_stage_alone(stores: Stmt, k: Var) -> bool:
    """Whether every store of ``stores`` reads ``k`` only in its first index (the half of
    the double buffer): stored at the last iteration too, it stays inside the buffer."""
    writes = collect(stores, lambda n: isinstance(n, (WideStore, BufferStore)))
    return all(not uses_var(index, k.name) for w in writes for index in w.indices[1:])


def _prefetchable(copy: Stmt) -> bool:
    for node in collect(copy, lambda n: isinstance(n, Stmt)):
        if isinstance(node, For):
            one = isinstance(node.extent, IntImm) and node.extent.value == 1
            if node.kind is not ForKind.THREAD_BINDING and not one:
                return False
        elif isinstance(node, BufferStore):
            if not isinstance(node.value, Var):
                return False
        elif isinstance(node, WideStore):
            if not all(isinstance(v, Var) for v in node.values):
                return False
        elif isinstance(node, IfThenElse):
            if node.else_case is not None:
                return False
        elif not isinstance(node, (SeqStmt, Block, BlockRealize, WideLoad, CodeComment)):
            return False
    return bool(collect(copy, lambda n: isinstance(n, WideLoad)))


class _Keep(IRMapper):
    """The copy with only its loads (``loads=True``) or only its stores."""

    def __init__(self, loads: bool):
        self.loads = loads

    def visit_WideLoad(self, node):
        return node if self.loads else SeqStmt(())

    def visit_WideStore(self, node):
        return SeqStmt(()) if self.loads else node

    def visit_BufferStore(self, node):
        return SeqStmt(()) if self.loads else node

    def visit_CodeComment(self, node):
        return SeqStmt(()) if self.loads else node


class _Prefetch(IRMapper):
    def visit_For(self, loop: For):
        body = self.visit(loop.body)
        loop = loop if body is loop.body else loop.replace(body=body)
        if not any(key == REFILL_LOOP for key, _ in loop.annotations):
            return loop
        stmts = loop.body.stmts if isinstance(loop.body, SeqStmt) else ()
        if len(stmts) < 3 or not isinstance(stmts[0], IfThenElse):
            return loop
        if not isinstance(stmts[-1], SyncThreads):
            return loop
        guard = stmts[0]
        on_last = any(key == STORE_ON_LAST and value for key, value in loop.annotations)
        if on_last and guard.else_case is None:  # behind the ``if``, ptxas sinks them anyway
            guard = guard.replace(then_case=_UnrollCopy().visit(guard.then_case))
        if guard.else_case is not None or not _prefetchable(guard.then_case):
            return loop
        k = loop.loop_var
        last = IntImm(loop.extent.value - 2, k.dtype)
        loads = substitute(_Keep(loads=True).visit(guard.then_case), {k: Min(k, last)})
        stores = _Keep(loads=False).visit(guard.then_case)
        if not (on_last and _by_stage_alone(stores, k)):
            stores = guard.replace(then_case=stores)
        return loop.replace(body=seq(loads, *stmts[1:-1], stores, stmts[-1]))


def prefetch_pass(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """Move the global loads of double-buffered copies before the compute (module doc)."""
    loops = collect(func.body, lambda n: isinstance(n, For) and n.annotations)
    if not any(key == REFILL_LOOP for loop in loops for key, _ in loop.annotations):
        return func
    return func.replace(body=_Prefetch().visit(func.body))
