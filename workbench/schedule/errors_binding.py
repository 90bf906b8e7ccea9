"""ScheduleError subclasses raised by ``bind`` (and by the CUDA target's GPU verifier, which
checks the same rules against the device's real limits)."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "InvalidThreadAxisError",
    "LoopNotSerialError",
    "ThreadAxisNestingError",
    "ThreadExtentMismatchError",
    "TooManyThreadsError",
]

THREAD_AXES = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
)


class InvalidThreadAxisError(ScheduleError, ValueError):
    """A thread axis name that is not ``blockIdx.x|y|z`` or ``threadIdx.x|y|z``."""

    fields = ("loop", "axis")
    message = "unknown thread axis {axis!r}"
    why = "a loop binds to a grid axis (blockIdx.x, .y, .z) or a block axis (threadIdx.x, .y, .z)"
    suggestion = 'use e.g. "blockIdx.x" for the outer tile loop, "threadIdx.x" inside it'


class LoopNotSerialError(ScheduleError):
    """Binding a loop that is already parallel, vectorized or unrolled."""

    fields = ("loop",)
    named_fields = ("loop",)
    node_field = "loop"
    message = "loop {loop!r} is not serial (it is {kind})"
    why = "only a serial loop can be bound to a thread axis"
    suggestion = "bind another loop, or undo the step that changed this one"

    @property
    def kind(self) -> str:
        return self.ir["loop"].kind.value


class ThreadAxisNestingError(ScheduleError):
    """A grid axis inside a thread axis, or one grid axis inside the same grid axis."""

    fields = ("loop", "axis", "outer")
    named_fields = ("outer",)
    message = "cannot bind loop {loop!r} to {axis} inside loop {outer!r}"
    why = "{reason}"
    suggestion = "bind an outer loop to the grid axis, or use another axis"

    @property
    def reason(self) -> str:
        outer_axis = self.ir["outer"].thread_binding
        if self.axis.startswith("blockIdx") and outer_axis.startswith("threadIdx"):
            return (
                f"loop {self.outer!r} around it is bound to {outer_axis}: grid axes "
                "(blockIdx) must enclose the block's thread axes (threadIdx)"
            )
        return (
            f"loop {self.outer!r} around it is already bound to {outer_axis}: a kernel has "
            "one index per grid axis"
        )


class ThreadExtentMismatchError(ScheduleError):
    """Two loops of one kernel bound to the same axis with different extents (TVM's rule)."""

    fields = ("loop", "axis", "extent", "other")
    named_fields = ("other",)
    message = (
        "{axis} would have extent {extent} at loop {loop!r} but {other_extent} at loop "
        "{other!r} of the same kernel"
    )
    why = (
        "every loop bound to one axis of a kernel runs on the same hardware index, so its "
        "extent is the kernel's launch size along that axis"
    )
    suggestion = "split loop {loop!r} so that the bound part has extent {other_extent}"

    @property
    def other_extent(self):
        return self.ir["other"].extent


class TooManyThreadsError(ScheduleError):
    """A kernel's threads per block (product of its threadIdx extents) over the device limit."""

    fields = ("name", "threads", "limit", "what")
    message = "{what} has {threads} threads per block, more than the device's {limit}"
    why = (
        "the threads of one block are the product of the extents bound to threadIdx.x, .y "
        "and .z"
    )
    suggestion = "split the thread loops smaller and keep the rest as serial loops"
