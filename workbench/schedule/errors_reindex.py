"""ScheduleError subclasses raised by ``reindex`` (TVM's InvalidBufferAccessError kinds and
NotLeafBlockError, one class each)."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "ReindexAccumulatorWithoutInitError",
    "ReindexNoAccessError",
    "ReindexNonUniqueAccessError",
    "ReindexNotLeafBlockError",
    "ReindexNotLoopChainError",
    "ReindexReadOfWrittenBufferError",
]


class _ReindexError(ScheduleError):
    """The shape of the reindex errors: the block (the marked node), the buffer's name."""

    named_fields = ("block", "buffer")
    node_field = "block"


class ReindexNoAccessError(_ReindexError):
    """The block's body neither loads nor stores the buffer."""

    fields = ("block", "buffer")
    message = "block {block!r} does not access buffer {buffer!r}"
    why = "reindex rewrites the block's loads and stores of the buffer"
    suggestion = "pick a buffer the block reads or writes"


class ReindexNonUniqueAccessError(_ReindexError):
    """The block accesses the buffer at two different indices (``A[vi, vj] + A[vj, vi]``)."""

    fields = ("block", "buffer", "first", "second")
    message = "block {block!r} accesses {buffer!r} at different indices: {first} and {second}"
    why = (
        "the reindexed buffer is indexed by the block's iteration variables, so one access "
        "pattern must map to it"
    )
    suggestion = "cache_read the buffer instead"


class ReindexNotLeafBlockError(_ReindexError):
    """The block has blocks inside it."""

    fields = ("block", "buffer")
    message = "block {block!r} is not a leaf block"
    why = "reindex rewrites the accesses of a block with no blocks inside"
    suggestion = "reindex the inner block"


class ReindexNotLoopChainError(_ReindexError):
    """The block is not under a chain of loops directly in the root block."""

    fields = ("block", "buffer")
    message = "block {block!r} is not in a perfect loop nest under the root block"
    why = "the copy block goes right before (read) or after (write) that loop nest"
    suggestion = "reindex before compute_at and other primitives that nest blocks"


class ReindexReadOfWrittenBufferError(_ReindexError):
    """A read reindex of a buffer the block also writes (the writes would go to the copy)."""

    fields = ("block", "buffer")
    message = "block {block!r} also writes {buffer!r}: cannot reindex a read"
    why = "every access of the block is redirected; its writes would land in the copy"
    suggestion = 'reindex ("write", i) of {buffer!r} instead'


class ReindexAccumulatorWithoutInitError(_ReindexError):
    """A write reindex of a buffer the block accumulates into with no ``T.init`` of its own
    (the update block ``decompose_reduction`` leaves): the copy would start uninitialised."""

    fields = ("block", "buffer")
    message = "block {block!r} accumulates into {buffer!r} but has no init: cannot reindex it"
    why = ("the block reads the value {buffer!r} held before it ran (the init block "
           "decompose_reduction made writes {buffer!r}); redirected to a fresh copy, the sums "
           "would start from garbage")
    suggestion = "reindex before decompose_reduction (the init then moves with the block)"

