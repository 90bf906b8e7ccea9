"""ScheduleError subclasses raised by ``blockize`` and ``add_unit_loop``."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "UnitLoopAboveRootError",
    "SubspaceNotDivisibleError",
    "BlockizeNotSingleBlockError",
]


class UnitLoopAboveRootError(ScheduleError):
    """``add_unit_loop`` of the root block: nothing can go above it (TVM's ValueError)."""

    fields = ("block",)
    named_fields = ("block",)
    node_field = "block"
    message = "cannot add a loop on top of the root block"
    why = "the root block is the whole function body"
    suggestion = "pass a loop or an inner block"


class SubspaceNotDivisibleError(ScheduleError):
    """A binding of the block cannot be written ``outer * c + inner`` with ``inner`` in the
    loops under the target loop and ``outer`` in the loops above it (TVM's error)."""

    fields = ("loop", "block", "binding")
    named_fields = ("loop", "block")
    node_field = "loop"
    message = "the bindings of block {block!r} cannot be blockized at loop {loop!r}"
    why = (
        "binding {binding} does not divide into a part over the loops outside {loop!r} times "
        "the extent of a part over the loops inside it"
    )
    suggestion = "blockize at a loop whose split matches the block's iteration domain"


class BlockizeNotSingleBlockError(ScheduleError):
    """The loop's body is not a chain of loops around exactly one block."""

    fields = ("loop", "what")
    named_fields = ("loop",)
    node_field = "loop"
    message = "loop {loop!r} does not nest exactly one block: {what}"
    why = "blockize turns a perfect loop nest around one block into a block"
    suggestion = "blockize the innermost loop around one block"
