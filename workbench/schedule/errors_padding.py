"""ScheduleError subclasses raised by ``decompose_padding``."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "NotPaddingBlockError",
    "TrivialPaddingError",
    "PaddingLoopNotAncestorError",
]


class _PaddingError(ScheduleError):
    """The block (kept by name) is the marked node."""

    named_fields = ("block",)
    node_field = "block"


class NotPaddingBlockError(_PaddingError):
    """The block is not ``buf[...] = T.if_then_else(cond, value, constant)`` without init."""

    fields = ("block", "reason")
    message = "block {block!r} is not a padding block: {reason}"
    why = (
        "decompose_padding needs one store of T.if_then_else(in_bounds, value, c) with a "
        "constant c and no init"
    )
    suggestion = "apply it to the block that pads (e.g. pad_temp of a pooling or conv)"


class TrivialPaddingError(_PaddingError):
    """The padding condition holds everywhere: there is no padding to split off (TVM:
    ``can_decompose_padding`` is False)."""

    fields = ("block",)
    message = "the padding condition of block {block!r} is always true"
    why = "every point takes the value branch; no point is padding"
    suggestion = "leave the block as it is"


class PaddingLoopNotAncestorError(_PaddingError):
    """The loop is not one of the loops around the block."""

    fields = ("block", "loop")
    message = "loop {loop!r} is not an ancestor of block {block!r}"
    why = "the constant-filling nest is a copy of the loops from that loop down to the block"
    suggestion = "pass one of sch.get_loops(block)"
