"""Handles: small objects naming a block or a loop of one Schedule (TVM's BlockRV/LoopRV).

A handle holds an id; the Schedule that made it keeps the table id -> block name or loop
variable name. Primitives keep the table up to date, so a handle stays valid for as long
as its loop or block exists, and using it after a primitive removed that loop raises
``RemovedHandleError`` naming the primitive.

Handles print as ``LoopRV(l4: i_0)`` (its trace name, then the loop it names).
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import ClassVar


@dataclasses.dataclass(frozen=True)
class ScheduleHandle:
    """Base of ``BlockRV`` and ``LoopRV``. Equal when made by one schedule for one id."""

    id: int
    owner: int
    _schedule: object = dataclasses.field(default=None, compare=False, repr=False)

    kind: ClassVar[str] = "?"
    prefix: ClassVar[str] = "?"

    @property
    def ref(self) -> str:
        """The handle's name in traces: ``b0`` for blocks, ``l1`` for loops."""
        return f"{self.prefix}{self.id}"

    def __repr__(self) -> str:
        schedule = self._schedule() if self._schedule is not None else None
        described = schedule._describe_handle(self) if schedule is not None else ""
        return f"{type(self).__name__}({self.ref}{': ' + described if described else ''})"


@dataclasses.dataclass(frozen=True, repr=False)
class BlockRV(ScheduleHandle):
    """A handle to a block of a Schedule (from ``get_block``, ``get_child_blocks``...)."""

    kind: ClassVar[str] = "block"
    prefix: ClassVar[str] = "b"


@dataclasses.dataclass(frozen=True, repr=False)
class LoopRV(ScheduleHandle):
    """A handle to a loop of a Schedule (from ``get_loops``, ``split``, ``fuse``...)."""

    kind: ClassVar[str] = "loop"
    prefix: ClassVar[str] = "l"


HANDLE_TYPES = {"block": BlockRV, "loop": LoopRV}
PREFIX_KIND = {"b": "block", "l": "loop"}


def make_handle(kind: str, id: int, owner: int, schedule: object) -> ScheduleHandle:
    """A new handle of ``kind`` ("block" or "loop") owned by ``schedule``."""
    return HANDLE_TYPES[kind](id, owner, weakref.ref(schedule))


def parse_ref(ref: object) -> tuple[str, int] | None:
    """``"l4"`` -> ``("loop", 4)``; None when ``ref`` is not a handle reference."""
    if (
        not isinstance(ref, str)
        or len(ref) < 2
        or ref[0] not in PREFIX_KIND
        or not ref[1:].isdigit()
    ):
        return None
    return PREFIX_KIND[ref[0]], int(ref[1:])
