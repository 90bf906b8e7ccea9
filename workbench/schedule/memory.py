"""Memory primitives: ``cache_read``, ``cache_write``, ``set_scope``.

A *cache* is a new buffer of a chosen storage scope (``"global"``, ``"shared"``,
``"local"``) plus a new block that copies between it and the original buffer:

* ``cache_read(block, i, scope)`` copies the ``i``-th buffer ``block`` reads into
  ``<buffer>_<scope>`` just before ``block``'s loop nest, and makes ``block`` (only that
  consumer, as in TVM) read the copy;
* ``cache_write(block, i, scope)`` makes ``block`` write (and read, and initialise) the copy
  ``<buffer>_<scope>`` and copies it back into the original buffer just after ``block``'s
  loop nest;
* ``set_scope(block, i, scope)`` changes the scope of an intermediate buffer in place.

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

from workbench.ir import (
    SCOPES,
    Block,
    Buffer,
    BufferRegion,
    IRMapper,
    PrimFunc,
)
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_memory import (
    BufferIndexError,
    CacheReadOfWrittenBufferError,
    CacheWriteOfReadBufferError,
    ParameterScopeError,
    UnknownScopeError,
)
from workbench.schedule.handles import BlockRV
from workbench.schedule.memory_placement import (
    add_cache,
    blocks_touching,
    cache_name,
    place_copy,
    redirect_enclosing,
)
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import (
    find_block,
)

# ---------------------------------------------------------------------------------------
# Helpers shared with the layout family
# ---------------------------------------------------------------------------------------


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


class _ReplaceBuffers(IRMapper):
    def __init__(self, mapping: dict[Buffer, Buffer]):
        self.mapping = mapping

    def visit_Buffer(self, node: Buffer):
        return self.mapping.get(node, node)


def replace_buffers(node, mapping: dict[Buffer, Buffer]):
    """``node`` with every occurrence of each buffer in ``mapping`` replaced (loads, stores,
    regions, allocations)."""
    mapper = _ReplaceBuffers(mapping)
    if isinstance(node, tuple):
        return mapper._map_value(node)
    return mapper.visit(node)


# ---------------------------------------------------------------------------------------
# cache_read
# ---------------------------------------------------------------------------------------


def cache_read(
    func: PrimFunc, block: str, read_buffer_index: int, storage_scope: str
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

    Returns
    -------
    (PrimFunc, str)
        The new function and the copy block's name (``"A_local"``), also the cache
        buffer's name.

    Raises
    ------
    BlockNotFoundError, InvalidArgumentError, BufferIndexError, UnknownScopeError,
    CacheReadOfWrittenBufferError

    Example
    -------
    >>> new_func, name = cache_read(matmul, "C", 1, "local")
    >>> name
    'A_local'
    """
    primitive = "cache_read"
    target, ancestors = find_block(func, block, primitive)
    region = buffer_region(primitive, func, target, "read", read_buffer_index)
    scope = check_scope(primitive, func, target, storage_scope)
    src = region.buffer
    if any(w.buffer == src for w in target.writes):
        raise CacheReadOfWrittenBufferError(primitive, target, src, func)

    name, taken = cache_name(func, src, scope)
    cache = Buffer(name, src.shape, src.dtype, scope)
    writers = blocks_touching(func, src, target, ancestors, reads=False)
    anchor, copy = place_copy(func, target, ancestors, writers, region, src, cache, name, taken)
    mapping = {src: cache}
    new_block = target.replace(
        body=replace_buffers(target.body, mapping),
        init=None if target.init is None else replace_buffers(target.init, mapping),
        reads=replace_buffers(target.reads, mapping),
    )
    new_func = add_cache(func, target, new_block, anchor, copy, cache, after=False)
    return redirect_enclosing(new_func, ancestors, src, cache, ("reads",)), name


# ---------------------------------------------------------------------------------------
# cache_write
# ---------------------------------------------------------------------------------------


def cache_write(
    func: PrimFunc, block: str, write_buffer_index: int, storage_scope: str
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

    Returns
    -------
    (PrimFunc, str)
        The new function and the copy-out block's name (``"C_local"``).

    Raises
    ------
    BlockNotFoundError, InvalidArgumentError, BufferIndexError, UnknownScopeError,
    CacheWriteOfReadBufferError

    Example
    -------
    >>> new_func, name = cache_write(matmul, "C", 0, "local")
    >>> name
    'C_local'
    """
    primitive = "cache_write"
    target, ancestors = find_block(func, block, primitive)
    region = buffer_region(primitive, func, target, "write", write_buffer_index)
    scope = check_scope(primitive, func, target, storage_scope)
    dst = region.buffer
    if target.init is None and any(r.buffer == dst for r in target.reads):
        raise CacheWriteOfReadBufferError(primitive, target, dst, func)

    name, taken = cache_name(func, dst, scope)
    cache = Buffer(name, dst.shape, dst.dtype, scope)
    others = blocks_touching(func, dst, target, ancestors, reads=True)
    anchor, copy = place_copy(func, target, ancestors, others, region, cache, dst, name, taken)
    mapping = {dst: cache}
    new_block = target.replace(
        body=replace_buffers(target.body, mapping),
        init=None if target.init is None else replace_buffers(target.init, mapping),
        reads=replace_buffers(target.reads, mapping),
        writes=replace_buffers(target.writes, mapping),
    )
    new_func = add_cache(func, target, new_block, anchor, copy, cache, after=True)
    return redirect_enclosing(new_func, ancestors, dst, cache, ("reads", "writes")), name


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

    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Copy the ``read_buffer_index``-th buffer ``block`` reads into a new buffer of
        ``storage_scope`` (``"global"``, ``"shared"``, ``"local"``); ``block`` reads the copy.

        The copy block (named like the new buffer, ``"A_local"``) goes right before
        ``block``'s loop nest; move it with ``compute_at``. See
        ``workbench.schedule.memory.cache_read`` for the IR before and after.

        Raises ``BufferIndexError``, ``UnknownScopeError``,
        ``CacheReadOfWrittenBufferError``.

        Example
        -------
        >>> a_local = sch.cache_read(sch.get_block("C"), 1, "local")
        >>> sch.name(a_local)
        'A_local'
        """
        name = self._name_of(block, "cache_read", "block", "block")
        new_func, copy = cache_read(self.mod, name, read_buffer_index, storage_scope)
        attrs = {"read_buffer_index": read_buffer_index, "storage_scope": storage_scope}
        return self._commit("cache_read", (block,), attrs, new_func, [("block", copy)])[0]

    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make ``block`` write a new buffer of ``storage_scope`` instead of its
        ``write_buffer_index``-th buffer, and copy it back right after ``block``'s loop nest.

        Works for reductions: the init writes the cache too. Move the copy-out block with
        ``reverse_compute_at``. See ``workbench.schedule.memory.cache_write``.

        Raises ``BufferIndexError``, ``UnknownScopeError``, ``CacheWriteOfReadBufferError``.

        Example
        -------
        >>> c_local = sch.cache_write(sch.get_block("C"), 0, "local")
        >>> sch.name(c_local)
        'C_local'
        """
        name = self._name_of(block, "cache_write", "block", "block")
        new_func, copy = cache_write(self.mod, name, write_buffer_index, storage_scope)
        attrs = {"write_buffer_index": write_buffer_index, "storage_scope": storage_scope}
        return self._commit("cache_write", (block,), attrs, new_func, [("block", copy)])[0]

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


register_instruction(
    InstructionKind(
        "cache_read",
        ("block",),
        (AttrSpec("read_buffer_index", _is_index, "an int", positional=True), _scope_attr()),
        outputs="block",
        applies_to=("block",),
        probe=_probe_cache_read,
    )
)
register_instruction(
    InstructionKind(
        "cache_write",
        ("block",),
        (AttrSpec("write_buffer_index", _is_index, "an int", positional=True), _scope_attr()),
        outputs="block",
        applies_to=("block",),
        probe=_probe_write,
    )
)
register_instruction(
    InstructionKind(
        "set_scope",
        ("block",),
        (AttrSpec("buffer_index", _is_index, "an int", positional=True), _scope_attr()),
        applies_to=("block",),
        probe=_probe_write,
    )
)
