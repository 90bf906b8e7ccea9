"""ScheduleError subclasses raised by the memory primitives (``cache_read``, ``cache_write``,
``set_scope``) and, for the buffer arguments they share, by ``transform_layout``."""

from __future__ import annotations

from workbench.ir import SCOPES, Block, Buffer, BufferRegion, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "BufferIndexError",
    "UnknownScopeError",
    "ParameterScopeError",
    "CacheReadOfWrittenBufferError",
    "NotAConsumerError",
]


def describe_regions(regions: tuple[BufferRegion, ...]) -> str:
    """``0: C, 1: A, 2: B`` (or ``none``)."""
    return ", ".join(f"{n}: {r.buffer.name}" for n, r in enumerate(regions)) or "none"


class BufferIndexError(ScheduleError, IndexError):
    """A read or write buffer index that the block does not have."""

    def __init__(self, primitive: str, block: Block, kind: str, index: object, func: PrimFunc):
        regions = block.reads if kind == "read" else block.writes
        count = len(regions)
        plural = "buffer" if count == 1 else "buffers"
        verb = "reads" if kind == "read" else "writes"
        if count:
            suggestion = f"pass an index from 0 to {count - 1}"
        else:
            suggestion = f"block {block.name!r} {verb} nothing: pick another block"
        super().__init__(
            primitive,
            block.name,
            f"block {block.name!r} has no {kind} buffer {index!r}",
            detail=f"it {verb} {count} {plural}: {describe_regions(regions)}",
            suggestion=suggestion,
            func=func,
            node=block,
        )
        self.block = block.name
        self.kind = kind
        self.index = index
        self.buffers = [r.buffer.name for r in regions]


class UnknownScopeError(ScheduleError, ValueError):
    """A storage scope other than ``"global"``, ``"shared"``, ``"local"``."""

    def __init__(self, primitive: str, block: Block, scope: object, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"unknown storage scope {scope!r}",
            detail="the valid scopes are " + ", ".join(repr(s) for s in SCOPES),
            suggestion='use "local" for per-thread scratch, "shared" for a block-shared tile, '
            '"global" for main memory',
            func=func,
            node=block,
        )
        self.scope = scope


class ParameterScopeError(ScheduleError):
    """``set_scope`` of a buffer that is a parameter of the function."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"buffer {buffer.name!r} is a parameter of {func.name}",
            detail="a parameter's memory belongs to the caller (it is always global); only "
            "intermediate buffers (T.alloc_buffer) can change scope",
            suggestion=f"cache it instead: sch.cache_write(block, index, scope) (or cache_read) "
            f"makes a {buffer.name}_<scope> copy whose scope you choose",
            func=func,
            node=block,
        )
        self.buffer = buffer.name


class CacheReadOfWrittenBufferError(ScheduleError):
    """``cache_read`` of a buffer that the block also writes (it would read a stale copy)."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"block {block.name!r} writes {buffer.name!r}, the buffer it would read from a cache",
            detail="the copy is taken before the block runs, so the block would read old "
            f"values instead of the ones it writes into {buffer.name!r} itself",
            suggestion=f"use cache_write on {buffer.name!r} (the block then reads and writes "
            "the cache)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name


class NotAConsumerError(ScheduleError):
    """A block in ``consumer_blocks`` does not read the cached buffer."""

    def __init__(self, primitive: str, block: Block, buffer: Buffer, func: PrimFunc):
        super().__init__(
            primitive,
            block.name,
            f"block {block.name!r} does not read {buffer.name!r}",
            detail=f"consumer_blocks lists the blocks that should read the cache of "
            f"{buffer.name!r}; {block.name!r} never reads it",
            suggestion="list only blocks that read the buffer (or leave consumer_blocks out)",
            func=func,
            node=block,
        )
        self.buffer = buffer.name
