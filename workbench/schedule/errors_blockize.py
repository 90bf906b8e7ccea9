"""ScheduleError subclasses raised by ``blockize`` and ``add_unit_loop``."""

from __future__ import annotations

from workbench.ir import Block, For, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "UnitLoopAboveRootError",
    "SubspaceNotDivisibleError",
    "BlockizeNotSingleBlockError",
]


class UnitLoopAboveRootError(ScheduleError):
    """``add_unit_loop`` of the root block: nothing can go above it (TVM's ValueError)."""

    def __init__(self, primitive: str, block: Block, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            "cannot add a loop on top of the root block",
            detail="the root block is the whole function body",
            suggestion="pass a loop or an inner block",
            func=func,
            node=block,
        )


class SubspaceNotDivisibleError(ScheduleError):
    """A binding of the block cannot be written ``outer * c + inner`` with ``inner`` in the
    loops under the target loop and ``outer`` in the loops above it (TVM's error)."""

    def __init__(self, primitive: str, loop: For, block: Block, binding: str, func: PrimFunc):
        super().__init__(
            primitive,
            loop.loop_var.name,
            f"the bindings of block {block.name!r} cannot be blockized at loop "
            f"{loop.loop_var.name!r}",
            detail=f"binding {binding} does not divide into a part over the loops outside "
            f"{loop.loop_var.name!r} times the extent of a part over the loops inside it",
            suggestion="blockize at a loop whose split matches the block's iteration domain",
            func=func,
            node=loop,
        )
        self.block = block.name


class BlockizeNotSingleBlockError(ScheduleError):
    """The loop's body is not a chain of loops around exactly one block."""

    def __init__(self, primitive: str, loop: For, what: str, func: PrimFunc):
        super().__init__(
            primitive,
            loop.loop_var.name,
            f"loop {loop.loop_var.name!r} does not nest exactly one block: {what}",
            detail="blockize turns a perfect loop nest around one block into a block",
            suggestion="blockize the innermost loop around one block",
            func=func,
            node=loop,
        )
