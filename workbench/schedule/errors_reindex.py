"""ScheduleError subclasses raised by ``reindex`` (TVM's InvalidBufferAccessError kinds and
NotLeafBlockError, one class each)."""

from __future__ import annotations

from workbench.ir import Block, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "ReindexNoAccessError",
    "ReindexNonUniqueAccessError",
    "ReindexNotLeafBlockError",
    "ReindexNotLoopChainError",
    "ReindexReadOfWrittenBufferError",
]


class _ReindexError(ScheduleError):
    def __init__(self, block: Block, buffer: str, message: str, detail: str, suggestion: str,
                 func: PrimFunc):
        super().__init__(
            "reindex", block.name, message, detail=detail, suggestion=suggestion,
            func=func, node=block,
        )
        self.buffer = buffer


class ReindexNoAccessError(_ReindexError):
    """The block's body neither loads nor stores the buffer."""

    def __init__(self, block: Block, buffer: str, func: PrimFunc):
        super().__init__(
            block, buffer, f"block {block.name!r} does not access buffer {buffer!r}",
            "reindex rewrites the block's loads and stores of the buffer", "pick a buffer the "
            "block reads or writes", func,
        )


class ReindexNonUniqueAccessError(_ReindexError):
    """The block accesses the buffer at two different indices (``A[vi, vj] + A[vj, vi]``)."""

    def __init__(self, block: Block, buffer: str, first: str, second: str, func: PrimFunc):
        super().__init__(
            block, buffer,
            f"block {block.name!r} accesses {buffer!r} at different indices: {first} and "
            f"{second}",
            "the reindexed buffer is indexed by the block's iteration variables, so one access "
            "pattern must map to it", "cache_read the buffer instead", func,
        )


class ReindexNotLeafBlockError(_ReindexError):
    """The block has blocks inside it."""

    def __init__(self, block: Block, buffer: str, func: PrimFunc):
        super().__init__(
            block, buffer, f"block {block.name!r} is not a leaf block",
            "reindex rewrites the accesses of a block with no blocks inside",
            "reindex the inner block", func,
        )


class ReindexNotLoopChainError(_ReindexError):
    """The block is not under a chain of loops directly in the root block."""

    def __init__(self, block: Block, buffer: str, func: PrimFunc):
        super().__init__(
            block, buffer,
            f"block {block.name!r} is not in a perfect loop nest under the root block",
            "the copy block goes right before (read) or after (write) that loop nest",
            "reindex before compute_at and other primitives that nest blocks", func,
        )


class ReindexReadOfWrittenBufferError(_ReindexError):
    """A read reindex of a buffer the block also writes (the writes would go to the copy)."""

    def __init__(self, block: Block, buffer: str, func: PrimFunc):
        super().__init__(
            block, buffer, f"block {block.name!r} also writes {buffer!r}: cannot reindex a read",
            "every access of the block is redirected; its writes would land in the copy",
            f'reindex ("write", i) of {buffer!r} instead', func,
        )
