"""``ScheduleError`` subclasses of the dependence analysis (``scope.py``): loop-kind
primitives refused because iterations of the loop are not independent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.schedule.errors import ScheduleError

if TYPE_CHECKING:
    from workbench.ir import Node, PrimFunc
    from workbench.schedule.scope import Conflict

__all__ = ["LoopCarriedDependenceError", "LoopWriteConflictError", "NestedVectorizeError"]


class _ConflictError(ScheduleError):
    """Shared constructor: the loop, the blocks, the buffer and the two accesses."""

    what = ""

    def __init__(self, primitive: str, conflict: Conflict, func: PrimFunc, node: Node):
        first, second = conflict.first, conflict.second
        verb = "writes" if second.kind == "write" else "reads"
        running = "at the same time" if primitive == "parallel" else "as one vector"
        super().__init__(
            primitive,
            conflict.loop,
            self.what.format(loop=conflict.loop, buffer=conflict.buffer),
            detail=f"block {first.block!r} writes {first.text} in one iteration and block "
            f"{second.block!r} {verb} {second.text} in another, and they can be the same "
            f"element: the iterations cannot run {running}",
            suggestion=f"{primitive} another loop, one that indexes {conflict.buffer!r} "
            "differently in every iteration",
            func=func,
            node=node,
        )
        self.loop = conflict.loop
        self.block = first.block
        self.other_block = second.block
        self.buffer = conflict.buffer
        self.accesses = (first.text, second.text)


class LoopWriteConflictError(_ConflictError):
    """Two iterations of the loop write one element (``B[vk] = B[vk] + A[vi, vk]`` over ``i``)."""

    what = "iterations of loop {loop!r} write the same element of {buffer!r}"


class LoopCarriedDependenceError(_ConflictError):
    """One iteration reads what another writes (``A[i + 1] = A[i + 1] + A[i]``)."""

    what = "loop {loop!r} carries a dependence through {buffer!r}"


class NestedVectorizeError(ScheduleError):
    """Vectorize of a loop inside, or around, a loop that is already vectorized."""

    def __init__(self, primitive: str, loop: str, other: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} would nest with the vectorized loop {other!r}",
            detail="vectorized loops do not nest: the vector lanes come from one loop",
            suggestion=f"vectorize either {loop!r} or {other!r}",
            func=func,
            node=node,
        )
