"""ScheduleError subclasses raised by ``decompose_padding``."""

from __future__ import annotations

from workbench.ir import Block, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "NotPaddingBlockError",
    "TrivialPaddingError",
    "PaddingLoopNotAncestorError",
]


class NotPaddingBlockError(ScheduleError):
    """The block is not ``buf[...] = T.if_then_else(cond, value, constant)`` without init."""

    def __init__(self, primitive: str, block: Block, why: str, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"block {block.name!r} is not a padding block: {why}",
            detail="decompose_padding needs one store of T.if_then_else(in_bounds, value, c) "
            "with a constant c and no init",
            suggestion="apply it to the block that pads (e.g. pad_temp of a pooling or conv)",
            func=func,
            node=block,
        )


class TrivialPaddingError(ScheduleError):
    """The padding condition holds everywhere: there is no padding to split off (TVM:
    ``can_decompose_padding`` is False)."""

    def __init__(self, primitive: str, block: Block, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"the padding condition of block {block.name!r} is always true",
            detail="every point takes the value branch; no point is padding",
            suggestion="leave the block as it is",
            func=func,
            node=block,
        )


class PaddingLoopNotAncestorError(ScheduleError):
    """The loop is not one of the loops around the block."""

    def __init__(self, primitive: str, block: Block, loop: str, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"loop {loop!r} is not an ancestor of block {block.name!r}",
            detail="the constant-filling nest is a copy of the loops from that loop down to "
            "the block",
            suggestion="pass one of sch.get_loops(block)",
            func=func,
            node=block,
        )
        self.loop = loop
