"""ScheduleError subclasses raised by the memory primitives (``cache_read``, ``cache_write``,
``set_scope``) and, for the buffer arguments they share, by ``transform_layout``."""

from __future__ import annotations

from workbench.ir import SCOPES, BufferRegion
from workbench.schedule.errors import ScheduleError

__all__ = [
    "BufferIndexError",
    "UnknownScopeError",
    "ParameterScopeError",
    "CacheReadOfWrittenBufferError",
    "NotAConsumerError",
    "ConsumerOutsideScopeError",
]


def describe_regions(regions: tuple[BufferRegion, ...]) -> str:
    """``0: C, 1: A, 2: B`` (or ``none``)."""
    return ", ".join(f"{n}: {r.buffer.name}" for n, r in enumerate(regions)) or "none"


class _MemoryError(ScheduleError):
    """The shape shared by the memory errors: the block (kept by name, the marked node)."""

    named_fields = ("block", "buffer")
    node_field = "block"


class BufferIndexError(_MemoryError, IndexError):
    """A read or write buffer index that the block does not have."""

    fields = ("block", "kind", "index")
    message = "block {block!r} has no {kind} buffer {index!r}"
    why = "it {verb} {count} {plural}: {regions_text}"
    suggestion = "{advice}"

    @property
    def regions(self) -> tuple[BufferRegion, ...]:
        block = self.ir["block"]
        return block.reads if self.kind == "read" else block.writes

    @property
    def buffers(self) -> list[str]:
        return [r.buffer.name for r in self.regions]

    @property
    def count(self) -> int:
        return len(self.regions)

    @property
    def verb(self) -> str:
        return "reads" if self.kind == "read" else "writes"

    @property
    def plural(self) -> str:
        return "buffer" if self.count == 1 else "buffers"

    @property
    def regions_text(self) -> str:
        return describe_regions(self.regions)

    @property
    def advice(self) -> str:
        if self.count:
            return f"pass an index from 0 to {self.count - 1}"
        return f"block {self.block!r} {self.verb} nothing: pick another block"


class UnknownScopeError(_MemoryError, ValueError):
    """A storage scope other than ``"global"``, ``"shared"``, ``"local"``."""

    fields = ("block", "scope")
    message = "unknown storage scope {scope!r}"
    why = "the valid scopes are {scopes_text}"
    suggestion = (
        'use "local" for per-thread scratch, "shared" for a block-shared tile, "global" for '
        "main memory"
    )

    @property
    def scopes_text(self) -> str:
        return ", ".join(repr(s) for s in SCOPES)


class ParameterScopeError(_MemoryError):
    """``set_scope`` of a buffer that is a parameter of the function."""

    fields = ("block", "buffer")
    message = "buffer {buffer!r} is a parameter of {func.name}"
    why = (
        "a parameter's memory belongs to the caller (it is always global); only intermediate "
        "buffers (T.alloc_buffer) can change scope"
    )
    suggestion = (
        "cache it instead: sch.cache_write(block, index, scope) (or cache_read) makes a "
        "{buffer}_<scope> copy whose scope you choose"
    )


class CacheReadOfWrittenBufferError(_MemoryError):
    """``cache_read`` of a buffer that the block also writes (it would read a stale copy)."""

    fields = ("block", "buffer")
    message = "block {block!r} writes {buffer!r}, the buffer it would read from a cache"
    why = (
        "the copy is taken before the block runs, so the block would read old values "
        "instead of the ones it writes into {buffer!r} itself"
    )
    suggestion = "use cache_write on {buffer!r} (the block then reads and writes the cache)"


class NotAConsumerError(_MemoryError):
    """A block in ``consumer_blocks`` does not read the cached buffer."""

    fields = ("block", "buffer")
    message = "block {block!r} does not read {buffer!r}"
    why = (
        "consumer_blocks lists the blocks that should read the cache of {buffer!r}; "
        "{block!r} never reads it"
    )
    suggestion = "list only blocks that read the buffer (or leave consumer_blocks out)"


class ConsumerOutsideScopeError(_MemoryError):
    """A block in ``consumer_blocks`` reads the buffer but outside the cached block's scope
    (the block the cache is allocated in)."""

    fields = ("block", "buffer", "scope")
    message = "block {block!r} is outside block {scope!r}, where the cache of {buffer!r} lives"
    why = (
        "the cache is allocated in the scope of the cached block ({scope!r}) and filled "
        "there; a block outside it cannot read it"
    )
    suggestion = (
        "cache {buffer!r} for {block!r} with a cache_read from {block!r} itself, or leave it "
        "out of consumer_blocks"
    )
