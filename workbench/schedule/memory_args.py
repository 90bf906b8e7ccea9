"""The arguments the memory primitives share with the layout family: which buffer a block's
``i``-th read or write is (``buffer_region``), a valid storage scope (``check_scope``), and
which blocks are to read a cache (``resolve_consumers``, the ``consumer_blocks`` argument
of ``cache_read`` / ``cache_write``). Each check raises its ``ScheduleError`` before any
work is done."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.ir import SCOPES, Block, Buffer, BufferRegion, PrimFunc
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_memory import (
    BufferIndexError,
    CacheReadOfWrittenBufferError,
    ConsumerOutsideScopeError,
    NotAConsumerError,
    UnknownScopeError,
)
from workbench.schedule.memory_placement import buffer_users, scope_block
from workbench.schedule.tree import block_names, find_block


def buffer_region(
    primitive: str, func: PrimFunc, block: Block, kind: str, index: object
) -> BufferRegion:
    """The ``index``-th read (``kind="read"``) or write region of ``block``; raises
    ``InvalidArgumentError`` for a non-int index and ``BufferIndexError`` out of range."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise InvalidArgumentError(primitive, f"{kind}_buffer_index", "an int", index)
    regions = block.reads if kind == "read" else block.writes
    if not 0 <= index < len(regions):
        raise BufferIndexError(primitive, block, kind, index, func)
    return regions[index]


def check_scope(primitive: str, func: PrimFunc, block: Block, scope: object) -> str:
    """``scope`` if it is one of ``SCOPES``, else ``UnknownScopeError``."""
    if not isinstance(scope, str) or scope not in SCOPES:
        raise UnknownScopeError(primitive, block, scope, func)
    return scope


def resolve_consumers(
    primitive: str,
    func: PrimFunc,
    block: Block,
    buffer: Buffer,
    consumer_blocks: Sequence[str] | None,
    *,
    default_all: bool,
) -> list[str]:
    """The names of the blocks that are to read the cache, in program order.

    Only blocks in ``block``'s scope count (its siblings under the nearest enclosing
    block: the cache lives there). ``consumer_blocks=None`` means every block of the scope
    reading ``buffer`` without writing it (``default_all``: TVM's cache_read) or none (TVM's
    cache_write). Listed blocks must be in the scope (``ConsumerOutsideScopeError``) and
    read ``buffer`` (``NotAConsumerError``); for cache_read they must not write it
    (``CacheReadOfWrittenBufferError``).
    """
    users = buffer_users(func, buffer, block.name)
    _, ancestors = find_block(func, block.name, primitive)
    scope = scope_block(ancestors)
    readers = [u.name for u in users if u.reads]
    writers = {u.name for u in users if u.writes}
    if consumer_blocks is None:
        if not default_all:
            return []
        return [name for name in readers if name not in writers]
    if isinstance(consumer_blocks, (str, bytes)) or not isinstance(consumer_blocks, Sequence):
        expected = "a list of blocks"
        raise InvalidArgumentError(primitive, "consumer_blocks", expected, consumer_blocks)
    names = []
    for name in consumer_blocks:
        if not isinstance(name, str):
            raise InvalidArgumentError(primitive, "consumer_blocks", "a list of blocks", name)
        found, found_anc = find_block(func, name, primitive)
        itself = name == block.name and primitive == "cache_read"
        if not itself and name not in readers:
            outside = not any(a is scope for a in found_anc)
            if outside and any(r.buffer == buffer for r in found.reads):
                raise ConsumerOutsideScopeError(primitive, found, buffer, scope.name, func)
            raise NotAConsumerError(primitive, found, buffer, func)
        if primitive == "cache_read" and name in writers:
            raise CacheReadOfWrittenBufferError(primitive, found, buffer, func)
        if name not in names:
            names.append(name)
    order = block_names(func)
    return sorted(names, key=order.index)
