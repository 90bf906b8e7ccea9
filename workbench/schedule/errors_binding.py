"""ScheduleError subclasses raised by ``bind`` (and by the CUDA target's GPU verifier, which
checks the same rules against the device's real limits)."""

from __future__ import annotations

from workbench.ir import For, Node, PrimFunc
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

    def __init__(self, primitive: str, loop: str, axis: object, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"unknown thread axis {axis!r}",
            detail="a loop binds to a grid axis (blockIdx.x, .y, .z) or a block axis "
            "(threadIdx.x, .y, .z)",
            suggestion='use e.g. "blockIdx.x" for the outer tile loop, "threadIdx.x" inside it',
            func=func,
            node=node,
        )
        self.axis = axis


class LoopNotSerialError(ScheduleError):
    """Binding a loop that is already parallel, vectorized or unrolled."""

    def __init__(self, primitive: str, loop: For, func: PrimFunc):
        kind = loop.kind.value
        super().__init__(
            primitive,
            loop.loop_var.name,
            f"loop {loop.loop_var.name!r} is not serial (it is {kind})",
            detail="only a serial loop can be bound to a thread axis",
            suggestion="bind another loop, or undo the step that changed this one",
            func=func,
            node=loop,
        )
        self.kind = kind


class ThreadAxisNestingError(ScheduleError):
    """A grid axis inside a thread axis, or one grid axis inside the same grid axis."""

    def __init__(
        self, primitive: str, loop: str, axis: str, outer: For, func: PrimFunc, node: Node
    ):
        outer_axis = outer.thread_binding
        if axis.startswith("blockIdx") and outer_axis.startswith("threadIdx"):
            detail = (
                f"loop {outer.loop_var.name!r} around it is bound to {outer_axis}: grid axes "
                "(blockIdx) must enclose the block's thread axes (threadIdx)"
            )
        else:
            detail = (
                f"loop {outer.loop_var.name!r} around it is already bound to {outer_axis}: a "
                "kernel has one index per grid axis"
            )
        super().__init__(
            primitive,
            loop,
            f"cannot bind loop {loop!r} to {axis} inside loop {outer.loop_var.name!r}",
            detail=detail,
            suggestion="bind an outer loop to the grid axis, or use another axis",
            func=func,
            node=node,
        )
        self.axis = axis
        self.outer = outer.loop_var.name


class ThreadExtentMismatchError(ScheduleError):
    """Two loops of one kernel bound to the same axis with different extents (TVM's rule)."""

    def __init__(
        self,
        primitive: str,
        loop: str,
        axis: str,
        extent: int,
        other: For,
        func: PrimFunc,
        node: Node,
    ):
        other_extent = other.extent
        super().__init__(
            primitive,
            loop,
            f"{axis} would have extent {extent} at loop {loop!r} but {other_extent} at loop "
            f"{other.loop_var.name!r} of the same kernel",
            detail="every loop bound to one axis of a kernel runs on the same hardware index, "
            "so its extent is the kernel's launch size along that axis",
            suggestion=f"split loop {loop!r} so that the bound part has extent {other_extent}",
            func=func,
            node=node,
        )
        self.axis = axis
        self.extent = extent
        self.other = other.loop_var.name


class TooManyThreadsError(ScheduleError):
    """A kernel's threads per block (product of its threadIdx extents) over the device limit."""

    def __init__(
        self,
        primitive: str,
        name: str,
        threads: int,
        limit: int,
        what: str,
        func: PrimFunc,
        node: Node | None,
    ):
        super().__init__(
            primitive,
            name,
            f"{what} has {threads} threads per block, more than the device's {limit}",
            detail="the threads of one block are the product of the extents bound to "
            "threadIdx.x, .y and .z",
            suggestion="split the thread loops smaller and keep the rest as serial loops",
            func=func,
            node=node,
        )
        self.threads = threads
        self.limit = limit
