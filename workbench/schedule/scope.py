"""The dependence analysis as the schedule layer asks it: ``workbench.ir.dependence`` (one
``BlockScope`` per block scope, loop conflicts; below the DSL parser, which uses it too),
with blocks and loops looked up by name the schedule's way: an unknown name raises
``BlockNotFoundError`` / ``LoopNotFoundError`` naming the primitive, with the IR shown.

Example (the fuller one is ``workbench.ir.dependence.scope``'s)
-------
>>> block_scope(add_relu).producers("C")           # the root scope
['T_add']
"""

from __future__ import annotations

from workbench.ir import BlockRealize, For, PrimFunc, dependence
from workbench.ir.dependence import (
    PARALLEL_KINDS,
    BlockScope,
    Conflict,
    Dependency,
    DepKind,
    describe_conflict,
)
from workbench.schedule.scope_errors import StageRaceError
from workbench.schedule.tree import block_names, find_block, find_loop, walk

__all__ = [
    "PARALLEL_KINDS",
    "BlockScope",
    "Conflict",
    "DepKind",
    "Dependency",
    "block_scope",
    "check_new_stages",
    "describe_conflict",
    "loop_conflicts",
    "reduction_binding",
    "scope_of",
]


def block_scope(func: PrimFunc, scope: str = "root") -> BlockScope:
    """The ``BlockScope`` of block ``scope`` (``"root"``: the function's top level).

    Raises ``BlockNotFoundError`` for an unknown name. Cached by structural hash.
    """
    find_block(func, scope, "block_scope")
    return dependence.block_scope(func, scope)


def scope_of(func: PrimFunc, block: str, primitive: str = "block_scope") -> BlockScope:
    """The ``BlockScope`` that has ``block`` as a child (the root's for top-level blocks);
    ``BlockNotFoundError`` (naming ``primitive``) for an unknown block."""
    find_block(func, block, primitive)
    return dependence.scope_of(func, block)


def loop_conflicts(func: PrimFunc, loop: str) -> list[Conflict]:
    """Pairs of accesses that two different iterations of ``loop`` may make to one element,
    at least one writing it (empty: the iterations are independent).

    Raises ``LoopNotFoundError`` for an unknown loop. Cached by structural hash.
    """
    find_loop(func, loop, "loop_conflicts")
    return dependence.loop_conflicts(func, loop)


def reduction_binding(func: PrimFunc, loop: str) -> tuple[str, str] | None:
    """``(block, iter_var)`` of a reduction iteration variable bound by ``loop``, else None
    (TVM: parallel / vectorized loops may only drive data-parallel block iterators)."""
    find_loop(func, loop, "loop_conflicts")
    return dependence.reduction_binding(func, loop)


def check_new_stages(primitive: str, old: PrimFunc, new: PrimFunc) -> None:
    """``StageRaceError`` where a block of ``new`` that ``old`` did not have (a cache
    stage's copy or fill) sits inside a parallel or vectorized loop whose iterations then
    touch one element: the loop was checked when it was marked, the new block was not.
    The DSL parser would refuse the printed script (its loop-kind check runs the same
    analysis); TVM's cache primitives do not check, and leave such a race."""
    before = set(block_names(old))
    loops: dict[str, For] = {}
    for node, ancestors in walk(new.root_block.body, ()):
        if isinstance(node, BlockRealize) and node.block.name not in before:
            for loop in ancestors:
                if isinstance(loop, For) and loop.kind in PARALLEL_KINDS:
                    loops.setdefault(loop.loop_var.name, loop)
    for name, loop in loops.items():
        conflicts = dependence.loop_conflicts(new, name)
        if conflicts:
            raise StageRaceError(primitive, conflicts[0], new, loop)
