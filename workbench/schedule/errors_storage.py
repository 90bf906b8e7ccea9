"""ScheduleError subclasses raised by ``storage_align`` (TVM's block_annotate.cc errors)."""

from __future__ import annotations

from workbench.ir import Block, Buffer, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "StorageAlignAxisOutOfRangeError",
    "StorageAlignInvalidFactorError",
    "NonAllocatedBufferError",
    "StorageAlignInvalidAnnotationError",
]


class StorageAlignAxisOutOfRangeError(ScheduleError):
    """The axis is not a dimension of the buffer (negative axes count from the end)."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, axis: object, func: PrimFunc):
        ndim = buffer.ndim
        super().__init__(
            primitive,
            block.name,
            f"axis {axis!r} is out of range for buffer {buffer.name!r} of {ndim} dimensions",
            detail=f"the axis must be in [{-ndim}, {ndim})",
            suggestion=f"pass an axis from {-ndim} to {ndim - 1}",
            func=func,
            node=block,
        )
        self.axis = axis


class StorageAlignInvalidFactorError(ScheduleError):
    """The alignment factor is not a positive integer."""

    def __init__(self, primitive: str, block: Block, factor: object, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"the factor of storage_align must be a positive int, got {factor!r}",
            detail="the stride of the axis is padded to a multiple of factor (plus offset)",
            func=func,
            node=block,
        )
        self.factor = factor


class NonAllocatedBufferError(ScheduleError):
    """The buffer is a parameter of the function: its layout belongs to the caller."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"buffer {buffer.name!r} is not allocated by a block",
            detail="it is a parameter of the function; the caller owns its strides",
            suggestion="align a cache of it instead (cache_read / cache_write, then storage_align)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name


class StorageAlignInvalidAnnotationError(ScheduleError):
    """The block's ``buffer_dim_align`` annotation is not a tuple of 4-int tuples."""

    def __init__(self, primitive: str, block: Block, value: object, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"block {block.name!r} has a malformed buffer_dim_align annotation: {value!r}",
            detail="the annotation is a tuple of (buffer_index, axis, factor, offset) tuples",
            suggestion="remove the annotation and use storage_align",
            func=func,
            node=block,
        )
