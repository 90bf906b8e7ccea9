"""ScheduleError subclasses raised by ``transform_layout``.

A bad ``("read" | "write", index)`` buffer argument raises ``BufferIndexError`` (from
``errors_memory``, shared with the cache primitives).
"""

from __future__ import annotations

import difflib

from workbench.ir import Block, Buffer, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "BufferNotFoundError",
    "IndexMapArityError",
    "IndexMapOperationError",
    "IndexMapNotBijectiveError",
    "PaddingRequiredError",
    "PaddingNotInvertibleError",
]


class BufferNotFoundError(ScheduleError):
    """No parameter or allocated buffer of that name exists in the function."""

    def __init__(self, primitive: str, block: Block, name: str, known: list[str], func: PrimFunc):
        close = difflib.get_close_matches(name, known, n=3)
        super().__init__(
            primitive,
            block.name,
            f"no buffer named {name!r} in {func.name}",
            detail="buffers in the function: " + (", ".join(known) or "none"),
            suggestion=f"did you mean {' or '.join(repr(c) for c in close)}?"
            if close
            else 'name a buffer, or pass ("read", i) / ("write", i) of the block',
            func=func,
            node=block,
        )
        self.buffer = name


class IndexMapArityError(ScheduleError):
    """The index map does not take one argument per dimension of the buffer."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, got: str, func: PrimFunc):
        names = ", ".join(f"i{d}" for d in range(buffer.ndim))
        super().__init__(
            primitive,
            block.name,
            f"the index map takes {got}, buffer {buffer.name!r} has {buffer.ndim} "
            f"dimension{'s' if buffer.ndim != 1 else ''} {buffer.shape}",
            detail="an index map receives one index per dimension of the buffer and returns "
            "the new indices",
            suggestion=f"write lambda {names}: (...)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name


class IndexMapOperationError(ScheduleError):
    """The index map's result is not built from integer ``+ - * // %`` of its arguments
    (constants divisors), e.g. a float, ``/``, ``**`` or a buffer load."""

    def __init__(
        self,
        primitive: str,
        block: Block,
        buffer: Buffer,
        what: str,
        map_text: str,
        func: PrimFunc,
    ):
        super().__init__(
            primitive,
            block.name,
            f"the index map for {buffer.name!r} uses {what}",
            detail=f"index map {map_text}: new indices must be integer expressions of the "
            "old ones built with +, -, *, and // or % by positive constants",
            suggestion="use // and % for blocking (lambda i, j: (j // 16, i, j % 16)) and "
            "tuples of the arguments for permutations (lambda n, c, h, w: (n, h, w, c))",
            func=func,
            node=block,
        )
        self.buffer = buffer.name


class IndexMapNotBijectiveError(ScheduleError):
    """The index map does not map the buffer's shape one-to-one onto the new shape."""

    def __init__(
        self,
        primitive: str,
        block: Block,
        buffer: Buffer,
        map_text: str,
        why: str,
        func: PrimFunc,
    ):
        super().__init__(
            primitive,
            block.name,
            f"the index map is not a bijection of buffer {buffer.name!r} {buffer.shape}",
            detail=f"index map {map_text}: {why}",
            suggestion="every element must get its own new position and every new position "
            "must hold one element: keep every argument in the result (split one with "
            "i // f and i % f, f dividing its extent)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name
        self.why = why


class PaddingRequiredError(ScheduleError):
    """The index map sends the buffer onto a larger shape (padding) and no ``pad_value``
    was given (TVM's ``TransformationPaddingError``)."""

    def __init__(
        self,
        primitive: str,
        block: Block,
        buffer: Buffer,
        map_text: str,
        shape: tuple[int, ...],
        func: PrimFunc,
    ):
        super().__init__(
            primitive,
            block.name,
            f"the index map pads buffer {buffer.name!r} {buffer.shape} to {shape}",
            detail=f"index map {map_text} leaves positions of the new shape that hold no "
            "element; without a pad_value their contents would be undefined",
            suggestion="pass pad_value= (e.g. 0.0) to fill them, or use factors that divide "
            "the extents",
            func=func,
            node=block,
        )
        self.buffer = buffer.name
        self.shape = shape


class PaddingNotInvertibleError(ScheduleError):
    """``pad_value`` with an index map whose padding cannot be described: each buffer index
    must appear as ``i``, or as ``i // c`` and ``i % c`` (a split), in the new indices."""

    def __init__(
        self, primitive: str, block: Block, buffer: Buffer, map_text: str, param: str, func
    ):
        super().__init__(
            primitive,
            block.name,
            f"cannot tell which positions of the new layout of {buffer.name!r} are padding",
            detail=f"index map {map_text}: index {param!r} does not appear as {param}, or as "
            f"{param} // c together with {param} % c, in the new indices",
            suggestion="split each index with i // c and i % c (or keep it whole)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name
