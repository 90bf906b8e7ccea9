"""The blocks of one scope, for the compute location primitives: program order, where a
block sits under a loop, and the dependence checks for blocks a moved block passes over.

Producers and consumers are not computed here: they are the shared dependence analysis's
(``workbench.schedule.scope.BlockScope``, TVM's ``GetProducers`` / ``GetConsumers``: the
``RAW`` edges of the scope, in program order). ``ScopeInfo.deps`` is that scope's
``BlockScope``; ``producers_and_consumers`` turns its names into blocks, and
``readers_before`` / ``writers_after`` give the ``WAR`` edges the primitives refuse (a block
reading what a block writes *before* it is not its consumer but would be reordered with it).
"""

from __future__ import annotations

import dataclasses

from workbench.ir import Block, BlockRealize, Buffer, BufferRegion, For, PrimFunc, SeqStmt, Stmt
from workbench.schedule.errors_compute_location import (
    BlockInInitError,
    DependenceViolationError,
    RootBlockError,
)
from workbench.schedule.scope import BlockScope, DepKind, block_scope
from workbench.schedule.tree import child_blocks, enclosing_loops, find_block, walk

__all__ = [
    "ScopeInfo",
    "producers_and_consumers",
    "readers_before",
    "writers_after",
    "check_movable",
    "check_passed_over",
    "first_output",
    "scope_block",
    "buffers",
    "shared_buffer",
    "realize_of",
    "enclosing_loops_of",
]


def scope_block(ancestors: tuple[Stmt, ...]) -> Block | None:
    """The nearest block around a statement (its scope)."""
    return next((a for a in reversed(ancestors) if isinstance(a, Block)), None)


def buffers(regions: tuple[BufferRegion, ...]) -> set[Buffer]:
    return {region.buffer for region in regions}


def shared_buffer(writes: tuple[BufferRegion, ...], reads: tuple[BufferRegion, ...]) -> str:
    """The name of a buffer in both region lists (the first written one)."""
    read = buffers(reads)
    return next((r.buffer.name for r in writes if r.buffer in read), "")


@dataclasses.dataclass
class ScopeInfo:
    """The child blocks of a scope block, in program order, with their realizes and
    ancestors, the program-order position of every statement of the function, and the
    scope's dependence analysis (``deps``, the shared ``BlockScope``)."""

    block: Block
    blocks: list[Block]
    realizes: dict[str, tuple[BlockRealize, tuple[Stmt, ...]]]
    order: dict[int, int]
    deps: BlockScope

    @staticmethod
    def of(func: PrimFunc, scope: Block) -> ScopeInfo:
        order: dict[int, int] = {}
        realizes: dict[str, tuple[BlockRealize, tuple[Stmt, ...]]] = {}
        for index, (stmt, ancestors) in enumerate(walk(func.body)):
            order[id(stmt)] = index
            if isinstance(stmt, BlockRealize) and scope_block(ancestors) is scope:
                realizes[stmt.block.name] = (stmt, ancestors)
        deps = block_scope(func, scope.name)
        return ScopeInfo(scope, child_blocks(scope), realizes, order, deps)

    def named(self, names: list[str]) -> list[Block]:
        """The child blocks called ``names``, in that order."""
        by_name = {b.name: b for b in self.blocks}
        return [by_name[n] for n in names]

    def realize_and_ancestors(self, name: str) -> tuple[BlockRealize, tuple[Stmt, ...]]:
        return self.realizes[name]

    def ancestors_of(self, name: str) -> tuple[Stmt, ...]:
        return self.realizes[name][1]

    def position(self, name: str) -> int:
        return self.order[id(self.realizes[name][0])]

    def position_of_loop(self, loop: For) -> int:
        return self.order[id(loop)]

    def is_under(self, name: str, loop: For) -> bool:
        return any(a is loop for a in self.ancestors_of(name))

    def blocks_under(self, loop: For) -> list[Block]:
        return [b for b in self.blocks if self.is_under(b.name, loop)]

    def top_index(self, loop: For, name: str) -> int:
        """Index, in ``loop``'s body, of the statement that holds block ``name``."""
        realize, ancestors = self.realizes[name]
        path = list(ancestors) + [realize]
        below = path[next(i for i, a in enumerate(path) if a is loop) + 1 :]
        if isinstance(loop.body, SeqStmt) and below[0] is loop.body:
            return next(i for i, s in enumerate(loop.body.stmts) if s is below[1])
        return 0


def producers_and_consumers(scope: ScopeInfo, block: Block) -> tuple[list[Block], list[Block]]:
    """``block``'s producers (earlier blocks writing a buffer it reads) and consumers (later
    blocks reading a buffer it writes), each in program order: the ``RAW`` edges of the
    scope's ``BlockScope`` (TVM's ``GetProducers`` / ``GetConsumers``)."""
    name = block.name
    return (scope.named(scope.deps.producers(name)), scope.named(scope.deps.consumers(name)))


def readers_before(scope: ScopeInfo, block: Block) -> list[Block]:
    """Earlier blocks that read a buffer ``block`` writes (``WAR`` edges into ``block``), in
    program order: not consumers, but a primitive moving ``block`` must not pass them."""
    edges = scope.deps.deps_by_dst(block.name)
    return scope.named([d.src for d in edges if d.kind is DepKind.WAR])


def writers_after(scope: ScopeInfo, block: Block) -> list[Block]:
    """Later blocks that write a buffer ``block`` reads (``WAR`` edges out of ``block``), in
    program order: not producers, but a primitive moving ``block`` must not pass them."""
    edges = scope.deps.deps_by_src(block.name)
    return scope.named([d.dst for d in edges if d.kind is DepKind.WAR])


def check_movable(primitive: str, func: PrimFunc, name: str) -> tuple[ScopeInfo, Block]:
    """The block ``name`` and its scope; refuses the root and blocks inside an init."""
    block, ancestors = find_block(func, name, primitive)
    if block is func.root_block:
        raise RootBlockError(primitive, func)
    for position, ancestor in enumerate(ancestors[:-1]):
        if isinstance(ancestor, Block) and ancestor.init is ancestors[position + 1]:
            raise BlockInInitError(primitive, name, ancestor.name, func, block)
    scope = ScopeInfo.of(func, scope_block(ancestors))
    return scope, block


def realize_of(scope: ScopeInfo, name: str) -> BlockRealize:
    return scope.realizes[name][0]


def enclosing_loops_of(scope: ScopeInfo, name: str) -> list[For]:
    return enclosing_loops(scope.ancestors_of(name))


def first_output(func: PrimFunc, block: Block) -> str | None:
    """The first function parameter ``block`` writes, else None."""
    params = set(func.params)
    for region in block.writes:
        if region.buffer in params:
            return region.buffer.name
    return None


def check_passed_over(
    primitive: str, func: PrimFunc, moved: Block, others: list[Block], node
) -> None:
    """``moved`` will run later (compute_at) or earlier (reverse) than ``others``: none of
    them may write what it reads, or touch what it writes."""
    reads, writes = buffers(moved.reads), buffers(moved.writes)
    for other in others:
        o_reads, o_writes = buffers(other.reads), buffers(other.writes)
        for buffer in sorted(o_writes & reads, key=lambda b: b.name):
            why = (
                f"{other.name!r} writes {buffer.name!r}, which {moved.name!r} reads, and would "
                f"be reordered with {moved.name!r}"
            )
            raise DependenceViolationError(
                primitive, moved.name, other.name, buffer.name, why, func, node
            )
        for buffer in sorted((o_writes | o_reads) & writes, key=lambda b: b.name):
            why = (
                f"{other.name!r} accesses {buffer.name!r}, which {moved.name!r} writes, and "
                f"would be reordered with {moved.name!r}"
            )
            raise DependenceViolationError(
                primitive, moved.name, other.name, buffer.name, why, func, node
            )
