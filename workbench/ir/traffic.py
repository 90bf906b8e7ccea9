"""How many bytes a function moves: two views, for lowering steps such as softmax fusion.

``min_bytes`` (in ``analysis``) is the floor every schedule shares: each input read once and
each output written once. These two views tell schedules apart:

``pass_traffic(func)``
    The memory-hierarchy view. Each top-level statement of the function body is one *pass*
    over memory; a pass is charged the full size of every global buffer it reads and every
    global buffer it writes (``local``/``shared`` buffers are charged nothing: they live in
    registers or L1). When buffers are much larger than the cache (a 4096x4096 softmax is
    64 MiB), a pass really streams them from DRAM, so this is what fusion saves: three passes
    over ``A`` become one.

``access_bytes(func)``
    The instruction view: bytes of every load and store the kernel executes (each block's
    loads and stores, times the number of times the block runs; the ``init`` runs once per
    spatial point). Fusion does not change it; the online softmax does, since it reads each
    row twice instead of three times.

Example
-------
>>> from workbench import ops
>>> f = ops.softmax(4, 8)
>>> [p.bytes for p in pass_traffic(f)]      # max pass, exp-sum pass, normalise pass
[160, 176, 288]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from workbench.ir.analysis import block_infos
from workbench.ir.buffer import Buffer
from workbench.ir.expr import BufferLoad
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRVisitor
from workbench.ir.stmt import Block, BufferStore, IterKind, SeqStmt, Stmt


@dataclass(frozen=True)
class PassTraffic:
    """One pass over memory: the global buffers it reads and writes, and their bytes."""

    index: int
    blocks: tuple[str, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    bytes: int


class _BufferUse(IRVisitor):
    def __init__(self):
        self.reads: dict[str, Buffer] = {}
        self.writes: dict[str, Buffer] = {}
        self.blocks: list[str] = []

    def visit_BufferLoad(self, node: BufferLoad):
        self.reads.setdefault(node.buffer.name, node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        self.writes.setdefault(node.buffer.name, node.buffer)
        self.generic_visit(node)

    def visit_Block(self, node: Block):
        self.blocks.append(node.name)
        self.generic_visit(node)


def _passes(func: PrimFunc) -> tuple[Stmt, ...]:
    body = func.root_block.body
    return body.stmts if isinstance(body, SeqStmt) else (body,)


def pass_traffic(func: PrimFunc) -> list[PassTraffic]:
    """Bytes each top-level pass moves to and from global memory (see the module doc)."""
    passes = []
    for index, stmt in enumerate(_passes(func)):
        use = _BufferUse()
        use.visit(stmt)
        reads = {n: b for n, b in use.reads.items() if b.scope == "global"}
        writes = {n: b for n, b in use.writes.items() if b.scope == "global"}
        total = sum(b.nbytes for b in reads.values()) + sum(b.nbytes for b in writes.values())
        passes.append(PassTraffic(index, tuple(use.blocks), tuple(reads), tuple(writes), total))
    return passes


def total_pass_bytes(func: PrimFunc) -> int:
    """Sum of ``pass_traffic``: the bytes moved when no buffer stays in cache between passes."""
    return sum(p.bytes for p in pass_traffic(func))


class _AccessCount(IRVisitor):
    """Bytes of the loads and stores in one statement, nested blocks excluded."""

    def __init__(self):
        self.bytes = 0

    def visit_BufferLoad(self, node: BufferLoad):
        self.bytes += node.buffer.itemsize
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        self.bytes += node.buffer.itemsize
        self.generic_visit(node)

    def visit_BlockRealize(self, node):
        return None  # counted as its own block


def _stmt_access_bytes(stmt: Stmt | None) -> int:
    if stmt is None:
        return 0
    counter = _AccessCount()
    counter.visit(stmt)
    return counter.bytes


def executed_total(func: PrimFunc, per_run: Callable[[Stmt], int]) -> int:
    """``per_run(body)`` times the executions of each block, plus ``per_run(init)`` once per
    spatial point (the init runs once per reduction), summed over the blocks of ``func``."""
    total = 0
    for info in block_infos(func):
        block = info.block
        total += per_run(block.body) * info.executions
        if block.init is not None:
            reduce_extent = math.prod(
                iv.dom.extent.value for iv in block.iter_vars if iv.kind is IterKind.REDUCE
            )
            total += per_run(block.init) * (info.executions // max(reduce_extent, 1))
    return total


def access_bytes(func: PrimFunc) -> int:
    """Bytes of all loads and stores executed in one call (see the module doc)."""
    return executed_total(func, _stmt_access_bytes)
