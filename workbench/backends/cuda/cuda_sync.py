"""Insert ``cuda.syncthreads()`` where threads of a block share data through shared memory.

On the GPU every statement of a kernel runs on every thread of the block; a loop bound to
``threadIdx`` is not a loop but the thread's index. So when one statement writes a shared
buffer and a later statement reads it, the reader may read what *another* thread wrote, and
must wait until every thread has written: a barrier goes between them (read after write).
Likewise a statement that overwrites a shared buffer must wait until every thread has read
the old contents (write after read), which is the barrier at the end of the body of a loop
that refills a tile each iteration (TVM's ``ThreadSync`` pass, ``tir.tvm_storage_sync``).

The rule here, simpler than TVM's and conservative (it may place a barrier TVM proves
unneeded, never miss one):

* statements are compared in program order at each ``SeqStmt``; a statement ``s`` needs a
  barrier before it when it reads a shared buffer written, or writes one read or written,
  by a *different* statement since the last barrier, unless both accesses use the same
  index and that index is
  private to one thread (each launched ``threadIdx`` axis appears as a whole dimension:
  ``partial[tx, 0]``), so that no other thread can reach the element;
* for a serial loop, the accesses after the body's last barrier are compared the same way
  with the accesses before its first barrier (the next iteration): a conflict puts a
  barrier at the end of the body;
* a barrier is never placed under an ``if`` (threads that skip it would deadlock the
  block): the conflict moves out to the sequence around the ``if``.
"""

from __future__ import annotations

import dataclasses

from workbench.backends.common.allocation import Allocate
from workbench.ir import (
    BlockRealize,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    SeqStmt,
    Stmt,
    Var,
    seq,
)
from workbench.ir.functor import collect
from workbench.ir.node import Node, ir_node


@ir_node
class SyncThreads(Stmt):
    """A barrier for the threads of one block (``cuda.syncthreads()``)."""

    scope: str = "shared"

    __hash__ = Node.__hash__


@dataclasses.dataclass
class _Accesses:
    """Shared-buffer accesses as sets of ``(buffer name, private index or None, statement id)``."""

    reads: set = dataclasses.field(default_factory=set)
    writes: set = dataclasses.field(default_factory=set)

    def update(self, other: _Accesses) -> None:
        self.reads |= other.reads
        self.writes |= other.writes

    def empty(self) -> bool:
        return not self.reads and not self.writes


def _conflict(before: _Accesses, after: _Accesses) -> bool:
    """Whether ``after`` must wait for ``before``: RAW, WAR or WAW that may cross threads."""

    def clash(first: set, second: set) -> bool:
        return any(
            b1 == b2 and s1 != s2 and not (k1 is not None and k1 == k2)
            for b1, k1, s1 in first
            for b2, k2, s2 in second
        )

    return (
        clash(before.writes, after.reads)
        or clash(before.reads, after.writes)
        or clash(before.writes, after.writes)
    )


class _ThreadPrivacy:
    """Decides whether an index tuple is private to one thread: for every launched
    ``threadIdx`` axis of extent > 1, some dimension's index is exactly a variable bound
    to that axis, so two different threads never reach the same element through it."""

    def __init__(self, kernel: Stmt):
        loops = collect(
            kernel,
            lambda n: isinstance(n, For) and (n.thread_binding or "").startswith("threadIdx"),
        )
        self.axis_of = {loop.loop_var: loop.thread_binding for loop in loops}
        self.axes = {
            loop.thread_binding
            for loop in loops
            if not (isinstance(loop.extent, IntImm) and loop.extent.value == 1)
        }

    def key(self, indices: tuple) -> tuple | None:
        covered = {self.axis_of[i] for i in indices if isinstance(i, Var) and i in self.axis_of}
        return indices if self.axes and self.axes <= covered else None


def _accesses(stmt: Stmt, shared: set[str], privacy: _ThreadPrivacy) -> _Accesses:
    found = _Accesses()
    for store in collect(stmt, lambda n: isinstance(n, BufferStore)):
        tag = id(store)
        if store.buffer.name in shared:
            found.writes.add((store.buffer.name, privacy.key(store.indices), tag))
        for load in collect(store, lambda n: isinstance(n, BufferLoad)):
            if load.buffer.name in shared:
                found.reads.add((load.buffer.name, privacy.key(load.indices), tag))
    for cond in collect(stmt, lambda n: isinstance(n, IfThenElse)):
        for load in collect(cond.condition, lambda n: isinstance(n, BufferLoad)):
            if load.buffer.name in shared:
                found.reads.add((load.buffer.name, privacy.key(load.indices), id(cond)))
    return found


def insert_syncthreads(kernel: Stmt, shared: set[str]) -> Stmt:
    """``kernel`` (one kernel's statement) with barriers for its ``shared`` buffers."""
    if not shared:
        return kernel
    return _Planner(shared, _ThreadPrivacy(kernel)).stmt(kernel)


@dataclasses.dataclass
class _Summary:
    first: _Accesses  # accesses before the first barrier
    last: _Accesses  # accesses after the last barrier
    synced: bool  # contains a barrier


class _Planner:
    def __init__(self, shared: set[str], privacy: _ThreadPrivacy):
        self.shared = shared
        self.privacy = privacy

    def stmt(self, stmt: Stmt) -> Stmt:
        new, _ = self._visit(stmt, under_if=False)
        return new

    def _visit(self, stmt: Stmt, under_if: bool) -> tuple[Stmt, _Summary]:
        if isinstance(stmt, SeqStmt):
            return self._sequence(list(stmt.stmts), under_if)
        if isinstance(stmt, For):
            return self._loop(stmt, under_if)
        if isinstance(stmt, Allocate):
            body, summary = self._visit(stmt.body, under_if)
            return stmt.replace(body=body), summary
        if isinstance(stmt, BlockRealize):
            body, summary = self._visit(stmt.block.body, under_if)
            return stmt.replace(block=stmt.block.replace(body=body)), summary
        if isinstance(stmt, IfThenElse):
            then_case, s1 = self._visit(stmt.then_case, True)
            else_case, s2 = (None, None)
            if stmt.else_case is not None:
                else_case, s2 = self._visit(stmt.else_case, True)
            new = stmt.replace(then_case=then_case, else_case=else_case)
            return new, self._leaf(new)
        return stmt, self._leaf(stmt)

    def _leaf(self, stmt: Stmt) -> _Summary:
        found = _accesses(stmt, self.shared, self.privacy)
        return _Summary(found, found, False)

    def _sequence(self, stmts: list[Stmt], under_if: bool) -> tuple[Stmt, _Summary]:
        out: list[Stmt] = []
        first = _Accesses()
        pending = _Accesses()  # accesses since the last barrier of this sequence
        synced = False
        for stmt in stmts:
            new, summary = self._visit(stmt, under_if)
            if not under_if and _conflict(pending, summary.first):
                out.append(SyncThreads())
                synced = True
                pending = _Accesses()
            if not synced:
                first.update(summary.first if summary.synced else summary.last)
            if summary.synced:
                synced = True
                pending = _Accesses()
                pending.update(summary.last)
            else:
                pending.update(summary.last)
            out.append(new)
        return seq(*out), _Summary(first, pending, synced)

    def _loop(self, loop: For, under_if: bool) -> tuple[Stmt, _Summary]:
        body, summary = self._visit(loop.body, under_if)
        bound = loop.kind is ForKind.THREAD_BINDING
        if not bound and not under_if and _conflict(summary.last, summary.first):
            body = seq(body, SyncThreads())
            summary = _Summary(summary.first, _Accesses(), True)
        return loop.replace(body=body), summary
