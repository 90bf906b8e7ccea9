"""Memory primitives: ``cache_read``, ``cache_write``, ``set_scope``.

A *cache* is a new buffer of a chosen storage scope (``"global"``, ``"shared"``,
``"local"``) plus a new block that copies between it and the original buffer:

* ``cache_read(block, i, scope)`` copies the ``i``-th buffer ``block`` reads into
  ``<buffer>_<scope>`` just before the first reader's loop nest, and makes every reader
  (TVM's default; ``consumer_blocks`` picks them) read the copy;
* ``cache_write(block, i, scope)`` makes ``block`` write (and read, and initialise) the copy
  ``<buffer>_<scope>`` and copies it back into the original buffer just after ``block``'s
  loop nest;
* ``set_scope(block, i, scope)`` changes the scope of an intermediate buffer in place.

As in TVM, both work in the *scope* of ``block`` (its nearest enclosing block; the root
for a top-level block): the cache is allocated there and only blocks under it read or
write the cache. A block outside the scope keeps the original buffer.

The copy block is named like its buffer (``"A_local"``), has one spatial iteration
variable per dimension (``v0, v1, ...``, bound to new loops ``ax0, ax1, ...``) and declares
point regions in terms of them, so compute_at's region inference can move it under a tile
loop. Where the copy goes and which elements it copies (the whole buffer for a matmul
operand; one row per iteration when it has to sit inside a loop shared with a producer or
consumer) is ``workbench.schedule.memory_placement``'s job.

Differences from TVM: with no producer in the function (a parameter), TVM puts a
cache_read copy first in the function; here it goes right before the consumer's loop
nest, which is where compute_at takes it from anyway. A cache buffer keeps the original
buffer's full shape (TVM compacts it at lowering; this workbench's backends do not yet).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.ir import Block, Buffer, BufferRegion, PrimFunc
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_memory import (
    CacheReadOfWrittenBufferError,
    ParameterScopeError,
)
from workbench.schedule.handles import BlockRV
from workbench.schedule.memory_args import buffer_region, check_scope, resolve_consumers
from workbench.schedule.memory_placement import (
    add_cache,
    blocks_touching,
    cache_name,
    place_copy,
    reads_unwritten,
    redirect_consumers,
    replace_buffers,
    scope_block,
    writes_partially,
)
from workbench.schedule.scope import check_new_stages
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import block_names, find_block, fresh_name

__all__ = [
    "buffer_region",  # re-exported: the layout family imports them from here
    "check_scope",
    "resolve_consumers",
    "replace_buffers",
    "cache_read",
    "cache_write",
    "set_scope",
    "MemoryMethods",
]

# ---------------------------------------------------------------------------------------
# cache_read
# ---------------------------------------------------------------------------------------


def _cached_region(primitive: str, func: PrimFunc, block: str, kind: str, index: int,
                   storage_scope: str):
    """The guards both caches start with: ``block`` found, its ``index``-th ``kind``
    ("read"/"write") region, the scope checked; ``(block, ancestors, region, scope)``."""
    target, ancestors = find_block(func, block, primitive)
    region = buffer_region(primitive, func, target, kind, index)
    scope = check_scope(primitive, func, target, storage_scope)
    return target, ancestors, region, scope



def cache_read(
    func: PrimFunc,
    block: str,
    read_buffer_index: int,
    storage_scope: str,
    consumer_blocks: Sequence[str] | None = None,
) -> tuple[PrimFunc, str]:
    """Copy a buffer ``block`` reads into a new buffer of ``storage_scope``; ``block`` reads
    the copy.

    Before (``cache_read(func, "C", 1, "local")``, ``C`` reads ``C, A, B``)::

        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                ...
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    After::

        A_local = T.alloc_buffer((16, 16), "float32", scope="local")
        for ax0, ax1 in T.grid(16, 16):
            with T.block("A_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[v0, v1])
                T.writes(A_local[v0, v1])
                A_local[v0, v1] = A[v0, v1]
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                ...
                C[vi, vj] = C[vi, vj] + A_local[vi, vk] * B[vk, vj]

    Parameters
    ----------
    func : PrimFunc
    block : str
        The consumer block.
    read_buffer_index : int
        Index into the block's ``T.reads`` list.
    storage_scope : str
        ``"global"``, ``"shared"`` or ``"local"``.
    consumer_blocks : list of str, optional
        The blocks that read the copy (TVM): None means every block of ``block``'s scope
        reading the buffer without writing it; a list means exactly those (``block`` only
        if listed; all in the scope). The copy covers what all of them read.

    Returns
    -------
    (PrimFunc, str)
        The new function and the copy block's name (``"A_local"``), also the cache
        buffer's name.

    Raises
    ------
    BlockNotFoundError, InvalidArgumentError, BufferIndexError, UnknownScopeError,
    CacheReadOfWrittenBufferError, NotAConsumerError, ConsumerOutsideScopeError

    Under a scope (``block`` inside a block ``scope``; TVM's ``access_under_scope``), the
    cache is allocated in ``scope`` and only the readers under it read it: for a buffer
    ``A`` produced and read in ``scope`` and read by ``C`` after it,
    ``cache_read(func, "B", 0, "local")`` gives::

        for i0, j0 in T.grid(4, 4):
            with T.block("scope"):
                ...
                A_local = T.alloc_buffer((16, 16), "float32", scope="local")
                for x, y in T.grid(4, 4):
                    with T.block("A"): ...           # writes A[i * 4 + x, j * 4 + y]
                for ax0, ax1 in T.grid(4, 4):
                    with T.block("A_local"): ...     # A_local[..] = A[..], this tile only
                for x, y in T.grid(4, 4):
                    with T.block("B"): ...           # reads A_local
        for i, j in T.grid(16, 16):
            with T.block("C"): ...                   # still reads A

    Example
    -------
    >>> new_func, name = cache_read(matmul, "C", 1, "local")
    >>> name
    'A_local'
    """
    primitive = "cache_read"
    target, ancestors, region, scope = _cached_region(
        primitive, func, block, "read", read_buffer_index, storage_scope)
    src = region.buffer
    if any(w.buffer == src for w in target.writes):
        raise CacheReadOfWrittenBufferError(primitive, target, src, func)
    if consumer_blocks is None:
        redirected = [target.name] + resolve_consumers(
            primitive, func, target, src, None, default_all=True
        )
    else:
        redirected = resolve_consumers(
            primitive, func, target, src, consumer_blocks, default_all=True
        )
    if not redirected:
        raise InvalidArgumentError(primitive, "consumer_blocks", "a non-empty list", [])

    # the copy goes before the first of the readers it serves, after every writer
    readers = []
    for reader in redirected:
        node, node_anc = find_block(func, reader, primitive)
        node_region = region if node is target else next(r for r in node.reads if r.buffer == src)
        readers.append((node, node_anc, node_region))
    order = block_names(func)
    readers.sort(key=lambda item: order.index(item[0].name))
    first, first_anc, first_region = readers[0]

    name, taken = cache_name(func, src, scope)
    cache = Buffer(name, src.shape, src.dtype, scope)
    writers = blocks_touching(func, src, first, reads=False)
    anchor, copy = place_copy(
        func, first, first_anc, writers, first_region, src, cache, name, taken, also=readers[1:]
    )
    home = scope_block(ancestors)
    new_func = add_cache(func, first, first, anchor, copy, cache, home, after=False)
    new_func = redirect_consumers(new_func, redirected, src, cache)
    check_new_stages(primitive, func, new_func)
    return new_func, name


# ---------------------------------------------------------------------------------------
# cache_write
# ---------------------------------------------------------------------------------------


def cache_write(
    func: PrimFunc,
    block: str,
    write_buffer_index: int,
    storage_scope: str,
    consumer_blocks: Sequence[str] | None = None,
) -> tuple[PrimFunc, str]:
    """Make ``block`` write a new buffer of ``storage_scope``, copied back afterwards.

    The block's init, its reads of the buffer and its regions all move to the cache.

    Before (``cache_write(func, "C", 0, "local")``)::

        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                ...
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    After::

        C_local = T.alloc_buffer((16, 16), "float32", scope="local")
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                ...
                with T.init():
                    C_local[vi, vj] = T.float32(0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(16, 16):
            with T.block("C_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(C_local[v0, v1])
                T.writes(C[v0, v1])
                C[v0, v1] = C_local[v0, v1]

    Parameters
    ----------
    func : PrimFunc
    block : str
        The producer block.
    write_buffer_index : int
        Index into the block's ``T.writes`` list.
    storage_scope : str
        ``"global"``, ``"shared"`` or ``"local"``.
    consumer_blocks : list of str, optional
        Readers that should read the cache directly (TVM; default none): the copy-back
        then only has to come before the other readers.

    Returns
    -------
    (PrimFunc, str)
        The new function and the copy-out block's name (``"C_local"``).

    Raises
    ------
    BlockNotFoundError, InvalidArgumentError, BufferIndexError, UnknownScopeError,
    NotAConsumerError, ConsumerOutsideScopeError

    A block that reads the buffer before writing it without an init (an update), or whose
    ``T.where`` (or an inner block's) skips iterations of its domain, gets its cache filled
    from the buffer first, by a block ``<cache>_fill`` placed after the other writers: the
    copy-back then never writes values the block did not compute. Under a scope the cache
    is allocated in the scope and copied back there.

    Example
    -------
    >>> new_func, name = cache_write(matmul, "C", 0, "local")
    >>> name
    'C_local'
    """
    primitive = "cache_write"
    target, ancestors, region, scope = _cached_region(
        primitive, func, block, "write", write_buffer_index, storage_scope)
    dst = region.buffer
    consumers = resolve_consumers(
        primitive, func, target, dst, consumer_blocks, default_all=False
    )
    read_of_dst = next((r for r in target.reads if r.buffer == dst), None)
    needs_fill = reads_unwritten(func, target, dst) or writes_partially(
        target, ancestors[-1], dst
    )

    name, taken = cache_name(func, dst, scope)
    cache = Buffer(name, dst.shape, dst.dtype, scope)
    others = [
        (b, anc)
        for b, anc in blocks_touching(func, dst, target, reads=True)
        if b.name not in consumers
    ]
    anchor, copy = place_copy(func, target, ancestors, others, region, cache, dst, name, taken)
    mapping = {dst: cache}
    new_block = target.replace(
        body=replace_buffers(target.body, mapping),
        init=None if target.init is None else replace_buffers(target.init, mapping),
        reads=replace_buffers(target.reads, mapping),
        writes=replace_buffers(target.writes, mapping),
    )
    home = scope_block(ancestors)
    new_func = add_cache(func, target, new_block, anchor, copy, cache, home, after=True)
    new_func = redirect_consumers(new_func, consumers, dst, cache)
    if needs_fill:
        fill_region = region if read_of_dst is None else read_of_dst
        new_func = _fill_cache(new_func, block, fill_region, dst, cache, name, taken)
    check_new_stages(primitive, func, new_func)
    return new_func, name


def _fill_cache(
    func: PrimFunc,
    block: str,
    region: BufferRegion,
    dst: Buffer,
    cache: Buffer,
    copy_name: str,
    taken: set[str],
) -> PrimFunc:
    """Copy ``dst`` into ``cache`` right before ``block`` (after the other writers of
    ``dst``): the block updates values it did not write (an update without init)."""
    target, ancestors = find_block(func, block, "cache_write")
    writers = [
        (b, anc)
        for b, anc in blocks_touching(func, dst, target, reads=False)
        if b.name != copy_name
    ]
    fill_name = fresh_name(f"{copy_name}_fill", taken)
    taken.add(fill_name)
    anchor, copy = place_copy(
        func, target, ancestors, writers, region, dst, cache, fill_name, taken
    )
    home = scope_block(ancestors)
    return add_cache(func, target, target, anchor, copy, cache, home, after=False, allocate=False)


# ---------------------------------------------------------------------------------------
# set_scope
# ---------------------------------------------------------------------------------------


def set_scope(func: PrimFunc, block: str, buffer_index: int, storage_scope: str) -> PrimFunc:
    """Change the storage scope of the ``buffer_index``-th buffer ``block`` writes.

    Before (``set_scope(func, "T_add", 0, "shared")``)::

        T_add = T.alloc_buffer((48,), "float32")

    After (every access now names the shared buffer)::

        T_add = T.alloc_buffer((48,), "float32", scope="shared")

    Parameters
    ----------
    func : PrimFunc
    block : str
        A block writing the buffer.
    buffer_index : int
        Index into the block's ``T.writes`` list.
    storage_scope : str
        ``"global"``, ``"shared"`` or ``"local"``.

    Raises
    ------
    BlockNotFoundError, InvalidArgumentError, BufferIndexError, UnknownScopeError,
    ParameterScopeError (the buffer is a parameter of the function)

    Example
    -------
    >>> new_func = set_scope(add_relu, "T_add", 0, "local")
    """
    primitive = "set_scope"
    target, _ = find_block(func, block, primitive)
    buffer = buffer_region(primitive, func, target, "write", buffer_index).buffer
    scope = check_scope(primitive, func, target, storage_scope)
    if buffer in func.params:
        raise ParameterScopeError(primitive, target, buffer, func)
    if buffer.scope == scope:
        return func
    return replace_buffers(func, {buffer: buffer.replace(scope=scope)})


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class MemoryMethods:
    """The ``cache_read``/``cache_write``/``set_scope`` methods of ``Schedule``."""

    def _consumer_names(self, primitive: str, consumer_blocks) -> list[str] | None:
        """Handles (or names) of ``consumer_blocks`` as block names (None stays None)."""
        if consumer_blocks is None:
            return None
        if isinstance(consumer_blocks, (str, bytes)) or not isinstance(consumer_blocks, Sequence):
            expected = "a list of blocks"
            raise InvalidArgumentError(primitive, "consumer_blocks", expected, consumer_blocks)
        return [
            c if isinstance(c, str) else self._name_of(c, primitive, "block", "consumer_blocks")
            for c in consumer_blocks
        ]

    def _cache(self, transform, block: BlockRV, index: tuple[str, int], storage_scope: str,
               consumer_blocks) -> BlockRV:
        """``cache_read``/``cache_write`` (``transform``) with the buffer at ``index`` (the
        attribute's name and value), recorded as a step that returns the copy block."""
        primitive = transform.__name__
        name = self._name_of(block, primitive, "block", "block")
        consumers = self._consumer_names(primitive, consumer_blocks)
        new_func, copy = transform(self.mod, name, index[1], storage_scope, consumers)
        attrs = {index[0]: index[1], "storage_scope": storage_scope}
        if consumers is not None:
            attrs["consumer_blocks"] = consumers
        return self._commit(primitive, (block,), attrs, new_func, [("block", copy)])[0]

    def cache_read(
        self,
        block: BlockRV,
        read_buffer_index: int,
        storage_scope: str,
        consumer_blocks: Sequence[BlockRV | str] | None = None,
    ) -> BlockRV:
        """Copy the ``read_buffer_index``-th buffer ``block`` reads into a new buffer of
        ``storage_scope`` (``"global"``, ``"shared"``, ``"local"``); the consumers read the copy.

        As in TVM, ``consumer_blocks=None`` redirects every block of ``block``'s scope (the
        block around it) that reads the buffer (and does not write it); a list redirects
        the listed blocks only. The cache is allocated in that scope. The copy
        block (named like the new buffer, ``"A_local"``) goes right before the first of them,
        after every writer of the buffer, and covers what all of them read; move it with
        ``compute_at``. See ``workbench.schedule.memory.cache_read`` for the IR before and
        after.

        Raises ``BufferIndexError``, ``UnknownScopeError``,
        ``CacheReadOfWrittenBufferError``, ``NotAConsumerError``,
        ``ConsumerOutsideScopeError``.

        Example
        -------
        >>> a_local = sch.cache_read(sch.get_block("C"), 1, "local")
        >>> sch.name(a_local)
        'A_local'
        """
        return self._cache(cache_read, block, ("read_buffer_index", read_buffer_index),
                           storage_scope, consumer_blocks)

    def cache_write(
        self,
        block: BlockRV,
        write_buffer_index: int,
        storage_scope: str,
        consumer_blocks: Sequence[BlockRV | str] | None = None,
    ) -> BlockRV:
        """Make ``block`` write a new buffer of ``storage_scope`` instead of its
        ``write_buffer_index``-th buffer, and copy it back after ``block`` (before the first
        block that still reads or writes the original).

        Works for reductions (the init writes the cache too) and for an update without init
        (the cache is first filled from the buffer, block ``<cache>_fill``). As in TVM,
        ``consumer_blocks`` lists readers that should read the cache directly (default:
        none, they read the original after the copy-back). Move the copy-out block with
        ``reverse_compute_at``. See ``workbench.schedule.memory.cache_write``.

        Raises ``BufferIndexError``, ``UnknownScopeError``, ``NotAConsumerError``,
        ``ConsumerOutsideScopeError``.

        Example
        -------
        >>> c_local = sch.cache_write(sch.get_block("C"), 0, "local")
        >>> sch.name(c_local)
        'C_local'
        """
        return self._cache(cache_write, block, ("write_buffer_index", write_buffer_index),
                           storage_scope, consumer_blocks)

    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Set the storage scope of the ``buffer_index``-th buffer ``block`` writes (an
        intermediate buffer, not a parameter).

        Raises ``ParameterScopeError``, ``BufferIndexError``, ``UnknownScopeError``.

        Example
        -------
        >>> sch.set_scope(sch.get_block("T_add"), 0, "local")
        """
        name = self._name_of(block, "set_scope", "block", "block")
        new_func = set_scope(self.mod, name, buffer_index, storage_scope)
        attrs = {"buffer_index": buffer_index, "storage_scope": storage_scope}
        self._commit("set_scope", (block,), attrs, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _scope_attr() -> AttrSpec:
    return AttrSpec(
        "storage_scope", lambda v: isinstance(v, str), "a scope string", positional=True
    )


def _block_node(sch, block: BlockRV) -> Block:
    return find_block(sch.mod, sch.name(block), "legal_primitives")[0]


def _probe_cache_read(sch, block: BlockRV):
    """The first buffer the block reads and does not write, into "local"."""
    node = _block_node(sch, block)
    written = {w.buffer for w in node.writes}
    index = next((n for n, r in enumerate(node.reads) if r.buffer not in written), 0)
    return (block, index, "local"), {}


def _probe_write(sch, block: BlockRV):
    return (block, 0, "local"), {}


def _is_name_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


CONSUMER_BLOCKS = AttrSpec(
    "consumer_blocks", _is_name_list, "a list of block names", default=None
)


def _register_cache(primitive: str, index_attr: str, probe) -> None:
    register_instruction(
        InstructionKind(
            primitive,
            ("block",),
            (AttrSpec(index_attr, _is_index, "an int", positional=True), _scope_attr(),
             CONSUMER_BLOCKS),
            outputs="block",
            applies_to=("block",),
            probe=probe,
        )
    )


_register_cache("cache_read", "read_buffer_index", _probe_cache_read)
_register_cache("cache_write", "write_buffer_index", _probe_write)
register_instruction(
    InstructionKind(
        "set_scope",
        ("block",),
        (AttrSpec("buffer_index", _is_index, "an int", positional=True), _scope_attr()),
        applies_to=("block",),
        probe=_probe_write,
    )
)
