"""ScheduleError subclasses raised by ``transform_layout``.

A bad ``("read" | "write", index)`` buffer argument raises ``BufferIndexError`` (from
``errors_memory``, shared with the cache primitives).
"""

from __future__ import annotations

from workbench.schedule.errors import KnownNames, ScheduleError

__all__ = [
    "BufferNotFoundError",
    "IndexMapArityError",
    "IndexMapOperationError",
    "IndexMapNotBijectiveError",
    "PaddingRequiredError",
    "PaddingNotInvertibleError",
]


class BufferNotFoundError(KnownNames, ScheduleError):
    """No parameter or allocated buffer of that name exists in the function."""

    fields = ("block", "buffer", "known")
    named_fields = ("block",)
    node_field = "block"
    looked_up = "buffer"
    otherwise = 'name a buffer, or pass ("read", i) / ("write", i) of the block'
    message = "no buffer named {buffer!r} in {func.name}"
    why = "buffers in the function: {known_text}"
    suggestion = "{did_you_mean}"


class _LayoutError(ScheduleError):
    """The shape shared by the index-map errors: the block, then the buffer (kept by name)."""

    named_fields = ("block", "buffer")
    node_field = "block"

    @property
    def shape_text(self) -> str:
        return str(self.ir["buffer"].shape)


class IndexMapArityError(_LayoutError):
    """The index map does not take one argument per dimension of the buffer."""

    fields = ("block", "buffer", "got")
    message = (
        "the index map takes {got}, buffer {buffer!r} has {ndim} dimension{plural} {shape_text}"
    )
    why = "an index map receives one index per dimension of the buffer and returns the new indices"
    suggestion = "write lambda {names}: (...)"

    @property
    def ndim(self) -> int:
        return self.ir["buffer"].ndim

    @property
    def plural(self) -> str:
        return "s" if self.ndim != 1 else ""

    @property
    def names(self) -> str:
        return ", ".join(f"i{d}" for d in range(self.ndim))


class IndexMapOperationError(_LayoutError):
    """The index map's result is not built from integer ``+ - * // %`` of its arguments
    (constants divisors), e.g. a float, ``/``, ``**`` or a buffer load."""

    fields = ("block", "buffer", "what", "map_text")
    message = "the index map for {buffer!r} uses {what}"
    why = (
        "index map {map_text}: new indices must be integer expressions of the old ones built "
        "with +, -, *, and // or % by positive constants"
    )
    suggestion = (
        "use // and % for blocking (lambda i, j: (j // 16, i, j % 16)) and tuples of the "
        "arguments for permutations (lambda n, c, h, w: (n, h, w, c))"
    )


class IndexMapNotBijectiveError(_LayoutError):
    """The index map does not map the buffer's shape one-to-one onto the new shape
    (``err.why``: the reason, e.g. two indices landing on one position)."""

    fields = ("block", "buffer", "map_text", "why")
    message = "the index map is not a bijection of buffer {buffer!r} {shape_text}"
    why = "index map {map_text}: {why}"  # the class's template; ``err.why`` is the field
    suggestion = (
        "every element must get its own new position and every new position must hold one "
        "element: keep every argument in the result (split one with i // f and i % f, f "
        "dividing its extent)"
    )


class PaddingRequiredError(_LayoutError):
    """The index map sends the buffer onto a larger shape (padding) and no ``pad_value``
    was given (TVM's ``TransformationPaddingError``)."""

    fields = ("block", "buffer", "map_text", "shape")
    message = "the index map pads buffer {buffer!r} {shape_text} to {shape}"
    why = (
        "index map {map_text} leaves positions of the new shape that hold no element; "
        "without a pad_value their contents would be undefined"
    )
    suggestion = (
        "pass pad_value= (e.g. 0.0) to fill them, or use factors that divide the extents"
    )


class PaddingNotInvertibleError(_LayoutError):
    """``pad_value`` with an index map whose padding cannot be described: each buffer index
    must appear as ``i``, or as ``i // c`` and ``i % c`` (a split), in the new indices."""

    fields = ("block", "buffer", "map_text", "param")
    message = "cannot tell which positions of the new layout of {buffer!r} are padding"
    why = (
        "index map {map_text}: index {param!r} does not appear as {param}, or as {param} // c "
        "together with {param} % c, in the new indices"
    )
    suggestion = "split each index with i // c and i % c (or keep it whole)"
