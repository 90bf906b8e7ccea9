"""Double buffering of shared stages on the ``cuda`` target (TVM's ``double_buffer_scope``).

A shared stage refilled at every iteration of a loop (the ``k_0`` loop of a tiled matmul)
costs two barriers per iteration: one after the copy (the tile must be complete before it
is read) and one at the end (it must be read by all before the next copy overwrites it).
With two buffers, the copy of tile ``k + 1`` goes into the half that tile ``k`` does not
use, so it can be *issued before the compute of tile k* and one barrier per iteration is
enough.

Ask for it as TVM does, with a block annotation on the stage::

    sch.annotate(sch.get_block("A_shared"), "double_buffer_scope", 0)

``double_buffer_pass`` (run after ``cuda_sync`` placed the barriers) finds the loop the
stage is refilled in: the innermost serial loop around the copy whose body also reads the
buffer. That loop's body must look like ``copies; barrier; compute; barrier`` with the
copies writing only double-buffered stages (every shared stage filled there must carry the
annotation: a single-buffered one would be overwritten while it is read). It becomes::

    copies(k = 0) -> S[0]                     # prologue
    barrier
    for k in range(K):
        if k + 1 < K:
            copies(k + 1) -> S[(k + 1) % 2]   # loads of the next tile ...
        compute(k) reading S[k % 2]           # ... issued before this tile's compute
        barrier

Why one barrier is enough: at iteration ``k`` the copy writes the half that was read at
iteration ``k - 1``, before the barrier that ended it; the compute reads the half written
at iteration ``k - 1`` (or in the prologue), also before that barrier.

The buffer gets a leading dimension of 2 (twice the shared memory). A pattern that does not
fit raises ``DoubleBufferError`` at build, naming the stage and why.
"""

from __future__ import annotations

from workbench.backends.allocation import Allocate
from workbench.backends.cuda_sync import SyncThreads
from workbench.backends.cuda_verify import GpuVerifyError
from workbench.backends.target import Target
from workbench.ir import (
    LT,
    BlockRealize,
    BufferLoad,
    BufferStore,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from workbench.ir.functor import IRMapper, collect, substitute

ANNOTATION = "double_buffer_scope"
REFILL_LOOP = "cuda.double_buffer_refill"
"""Annotation the pass puts on the loops it rewrote (``cuda_prefetch`` reads it)."""


class DoubleBufferError(GpuVerifyError):
    """A ``double_buffer_scope`` stage whose loop does not have the double-buffer shape."""

    def __init__(self, block: str, why: str, func: PrimFunc, node: Stmt | None = None):
        super().__init__(
            "build",
            block,
            f"cannot double-buffer stage {block!r}: {why}",
            detail="a double-buffered shared stage is refilled in a serial loop whose body is "
            "'copies of the stages; barrier; compute; barrier'",
            suggestion="compute_at the stage under the reduction's outer loop (k_0) and "
            "annotate every shared stage filled there",
        )
        # the device function holds backend-only statements (Allocate, barriers) that the
        # script printer cannot show: the message names the stage and the loop instead


def _annotated(node) -> bool:
    return isinstance(node, BlockRealize) and any(
        key == ANNOTATION for key, _ in node.block.annotations
    )


def _written(stmt: Stmt) -> set[str]:
    return {s.buffer.name for s in collect(stmt, lambda n: isinstance(n, BufferStore))}


def _read(stmt: Stmt) -> set[str]:
    return {s.buffer.name for s in collect(stmt, lambda n: isinstance(n, BufferLoad))}


def _ancestors(root: Stmt, target) -> list[Stmt] | None:
    """The statements from ``root`` down to ``target`` (excluded), or None."""
    if root is target:
        return []
    children = []
    if isinstance(root, SeqStmt):
        children = list(root.stmts)
    elif isinstance(root, (For, Allocate)):
        children = [root.body]
    elif isinstance(root, BlockRealize):
        children = [root.block.body]
    elif isinstance(root, IfThenElse):
        children = [root.then_case] + ([root.else_case] if root.else_case else [])
    for child in children:
        found = _ancestors(child, target)
        if found is not None:
            return [root] + found
    return None


class _Reindex(IRMapper):
    """Accesses to the double-buffered ``names`` get the leading index ``half``."""

    def __init__(self, buffers: dict, half):
        self.buffers = buffers  # name -> new Buffer
        self.half = half

    def visit_BufferLoad(self, node: BufferLoad):
        indices = tuple(self.visit(i) for i in node.indices)
        if node.buffer.name in self.buffers:
            return BufferLoad(self.buffers[node.buffer.name], (self.half, *indices))
        return node.replace(indices=indices) if indices != node.indices else node

    def visit_BufferStore(self, node: BufferStore):
        value = self.visit(node.value)
        indices = tuple(self.visit(i) for i in node.indices)
        if node.buffer.name in self.buffers:
            return BufferStore(self.buffers[node.buffer.name], value, (self.half, *indices))
        return node.replace(value=value, indices=indices)


class _ReplaceLoop(IRMapper):
    def __init__(self, loop: For, new: Stmt):
        self.loop, self.new = loop, new

    def visit_For(self, node: For):
        if node is self.loop:
            return self.new
        return self.generic_visit(node)


class _Reallocate(IRMapper):
    def __init__(self, buffers: dict):
        self.buffers = buffers

    def visit_Allocate(self, node: Allocate):
        body = self.visit(node.body)
        if node.buffer.name in self.buffers:
            return type(node)(self.buffers[node.buffer.name], body)
        return node if body is node.body else node.replace(body=body)


def _refill_loop(kernel: Stmt, realize: BlockRealize, buffers: set[str]) -> For | None:
    """The innermost serial loop around ``realize`` whose body reads one of ``buffers``."""
    chain = _ancestors(kernel, realize) or []
    for node in reversed(chain):
        if isinstance(node, For) and node.kind in (ForKind.SERIAL, ForKind.UNROLLED):
            if _read(node.body) & buffers:
                return node
    return None


def _double_buffer_loop(func: PrimFunc, loop: For, stages: dict, buffers: dict) -> Stmt:
    """``loop`` rewritten (see the module docstring), with its prologue before it.

    ``stages``: buffer name -> the block name of its stage; ``buffers``: buffer name -> the
    buffer with the leading dimension of 2.
    """
    first = next(iter(stages.values()))
    name = loop.loop_var.name
    body = list(loop.body.stmts) if isinstance(loop.body, SeqStmt) else [loop.body]
    syncs = [n for n, s in enumerate(body) if isinstance(s, SyncThreads)]
    if not syncs or syncs[-1] != len(body) - 1 or syncs[0] == 0:
        why = f"the body of loop {name!r} is not 'copies; barrier; compute; barrier'"
        raise DoubleBufferError(first, why, func, loop)
    copies, compute = body[: syncs[0]], body[syncs[0] + 1 : -1]
    for stmt in copies:
        written = _written(stmt)
        if not written or not written <= set(stages) or _read(stmt) & set(stages):
            others = ", ".join(sorted(written - set(stages))) or "no double-buffered stage"
            why = (
                f"a statement before the first barrier of loop {name!r} writes {others} "
                f"(annotate every shared stage filled there with {ANNOTATION!r})"
            )
            raise DoubleBufferError(first, why, func, loop)
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        raise DoubleBufferError(first, f"loop {name!r} does not start at 0", func, loop)
    extent = loop.extent
    if not isinstance(extent, IntImm):
        raise DoubleBufferError(first, f"loop {name!r} has no constant extent", func, loop)
    if extent.value < 2:
        return loop
    k = loop.loop_var
    zero, one, two = (IntImm(n, k.dtype) for n in (0, 1, 2))
    copy = seq(*copies)
    prologue = _Reindex(buffers, zero).visit(substitute(copy, {k: zero}))
    following = _Reindex(buffers, FloorMod(k + one, two)).visit(substitute(copy, {k: k + one}))
    current = _Reindex(buffers, FloorMod(k, two)).visit(seq(*compute))
    new_body = seq(IfThenElse(LT(k + one, extent), following), current, SyncThreads())
    annotations = (*loop.annotations, (REFILL_LOOP, True))
    return seq(prologue, SyncThreads(), loop.replace(body=new_body, annotations=annotations))


def double_buffer_pass(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """Rewrite the loops that refill ``double_buffer_scope`` stages (module docstring)."""
    realizes = collect(func.body, _annotated)
    if not realizes:
        return func
    allocated = {
        a.buffer.name: a.buffer
        for a in collect(func.body, lambda n: isinstance(n, Allocate))
        if a.buffer.scope == "shared"
    }
    by_loop: dict = {}
    new_buffers = {}
    for realize in realizes:
        name = realize.block.name
        written = _written(realize)
        shared = {b for b in written if b in allocated}
        if not shared:
            raise DoubleBufferError(name, "the block writes no shared buffer", func, realize)
        loop = _refill_loop(func.body, realize, shared)
        if loop is None:
            raise DoubleBufferError(
                name, "no serial loop around it also reads what it writes", func, realize
            )
        entry = by_loop.setdefault(id(loop), (loop, {}))
        for buf in shared:
            old = allocated[buf]
            new_buffers[buf] = old.replace(shape=(2, *old.shape))
            entry[1][buf] = name
    body = func.body
    for loop, stages in by_loop.values():
        buffers = {b: new_buffers[b] for b in stages}
        new = _double_buffer_loop(func, loop, stages, buffers)
        if new is loop:  # one iteration: nothing to overlap, the stage stays single
            for b in stages:
                del new_buffers[b]
            continue
        body = _ReplaceLoop(loop, new).visit(body)
    body = _Reallocate(new_buffers).visit(body)
    return func.replace(body=body)
