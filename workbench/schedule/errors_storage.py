"""ScheduleError subclasses raised by ``storage_align`` (TVM's block_annotate.cc errors)."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "StorageAlignAxisOutOfRangeError",
    "StorageAlignInvalidFactorError",
    "NonAllocatedBufferError",
    "StorageAlignInvalidAnnotationError",
]


class _BlockError(ScheduleError):
    """The block (kept by name) is the marked node; a buffer is kept by name too."""

    named_fields = ("block", "buffer")
    node_field = "block"


class StorageAlignAxisOutOfRangeError(_BlockError):
    """The axis is not a dimension of the buffer (negative axes count from the end)."""

    fields = ("block", "buffer", "axis")
    name_field = "block"
    message = "axis {axis!r} is out of range for buffer {buffer!r} of {ndim} dimensions"
    why = "the axis must be in [{lowest}, {ndim})"
    suggestion = "pass an axis from {lowest} to {highest}"

    @property
    def ndim(self) -> int:
        return self.ir["buffer"].ndim

    @property
    def lowest(self) -> int:
        return -self.ndim

    @property
    def highest(self) -> int:
        return self.ndim - 1


class StorageAlignInvalidFactorError(_BlockError):
    """The alignment factor is not a positive integer."""

    fields = ("block", "factor")
    message = "the factor of storage_align must be a positive int, got {factor!r}"
    why = "the stride of the axis is padded to a multiple of factor (plus offset)"


class NonAllocatedBufferError(_BlockError):
    """The buffer is a parameter of the function: its layout belongs to the caller."""

    fields = ("block", "buffer")
    message = "buffer {buffer!r} is not allocated by a block"
    why = "it is a parameter of the function; the caller owns its strides"
    suggestion = "align a cache of it instead (cache_read / cache_write, then storage_align)"


class StorageAlignInvalidAnnotationError(_BlockError):
    """The block's ``buffer_dim_align`` annotation is not a tuple of 4-int tuples."""

    fields = ("block", "value")
    message = "block {block!r} has a malformed buffer_dim_align annotation: {value!r}"
    why = "the annotation is a tuple of (buffer_index, axis, factor, offset) tuples"
    suggestion = "remove the annotation and use storage_align"
