"""``ScheduleError`` subclasses of the dependence analysis (``scope.py``): loop-kind
primitives refused because iterations of the loop are not independent."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = ["LoopCarriedDependenceError", "LoopWriteConflictError", "NestedVectorizeError",
           "StageRaceError"]


class _ConflictError(ScheduleError):
    """Shared template: the loop, the blocks, the buffer and the two accesses, all read from
    the ``Conflict`` the dependence analysis found."""

    fields = ("conflict",)
    name_field = "loop"
    why = (
        "block {block!r} writes {first_text} in one iteration and block {other_block!r} {verb} "
        "{second_text} in another, and they can be the same element: the iterations cannot "
        "run {running}"
    )
    suggestion = (
        "{primitive} another loop, one that indexes {buffer!r} differently in every iteration"
    )

    @property
    def loop(self) -> str:
        return self.conflict.loop

    @property
    def block(self) -> str:
        return self.conflict.first.block

    @property
    def other_block(self) -> str:
        return self.conflict.second.block

    @property
    def buffer(self) -> str:
        return self.conflict.buffer

    @property
    def accesses(self) -> tuple[str, str]:
        return (self.conflict.first.text, self.conflict.second.text)

    @property
    def first_text(self) -> str:
        return self.conflict.first.text

    @property
    def second_text(self) -> str:
        return self.conflict.second.text

    @property
    def verb(self) -> str:
        return "writes" if self.conflict.second.kind == "write" else "reads"

    @property
    def running(self) -> str:
        return "at the same time" if self.primitive == "parallel" else "as one vector"


class LoopWriteConflictError(_ConflictError):
    """Two iterations of the loop write one element (``B[vk] = B[vk] + A[vi, vk]`` over ``i``)."""

    message = "iterations of loop {loop!r} write the same element of {buffer!r}"


class LoopCarriedDependenceError(_ConflictError):
    """One iteration reads what another writes (``A[i + 1] = A[i + 1] + A[i]``)."""

    message = "loop {loop!r} carries a dependence through {buffer!r}"


class StageRaceError(_ConflictError):
    """A new cache stage inside a parallel or vectorized loop whose iterations it would make
    touch one element (its copy covers more than one iteration's part: a ``T.where`` the
    copy's region cannot follow, a window wider than the loop's step)."""

    message = "the new stage would make two iterations of loop {loop!r} touch one element of " \
        "{buffer!r}"
    suggestion = (
        "place the stage outside loop {loop!r} (cache at an outer scope, then compute_at), "
        "or {primitive} before marking the loop parallel"
    )

    @property
    def running(self) -> str:
        return "in parallel"


class NestedVectorizeError(ScheduleError):
    """Vectorize of a loop inside, or around, a loop that is already vectorized."""

    fields = ("loop", "other")
    message = "loop {loop!r} would nest with the vectorized loop {other!r}"
    why = "vectorized loops do not nest: the vector lanes come from one loop"
    suggestion = "vectorize either {loop!r} or {other!r}"
