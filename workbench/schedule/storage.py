"""``storage_align``: pad the strides of an allocated buffer (TVM's ``storage_align``).

The primitive only records the request, as TVM does, in the annotation
``buffer_dim_align`` of the block that writes the buffer: a tuple of
``(buffer_index, axis, factor, offset)`` tuples. The backends honour it when they
allocate the buffer (``workbench.backends.common.storage_align``): the stride of ``axis`` is
padded up to ``k * factor + offset`` and the buffer is stored flat with those strides.
The result does not change; only the addresses do (to avoid bank conflicts on GPUs, or
cache-set conflicts on CPUs).
"""

from __future__ import annotations

from workbench.ir import Block, Buffer, PrimFunc
from workbench.schedule.errors import InvalidArgumentError
from workbench.schedule.errors_storage import (
    NonAllocatedBufferError,
    StorageAlignAxisOutOfRangeError,
    StorageAlignInvalidAnnotationError,
    StorageAlignInvalidFactorError,
)
from workbench.schedule.handles import BlockRV
from workbench.schedule.memory import buffer_region
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import find_block, replace_block, walk

ANNOTATION = "buffer_dim_align"
"""The block annotation storage_align writes (TVM's ``s_tir::attr::buffer_dim_align``)."""


# ---------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_annotation(
    primitive: str, func: PrimFunc, block: Block
) -> list[tuple[int, int, int, int]]:
    """The block's ``buffer_dim_align`` entries; raises ``StorageAlignInvalidAnnotationError``."""
    value = dict(block.annotations).get(ANNOTATION, ())
    entries = value if isinstance(value, tuple) else None
    if entries is None or not all(
        isinstance(e, tuple) and len(e) == 4 and all(_is_int(x) for x in e) for e in entries
    ):
        raise StorageAlignInvalidAnnotationError(primitive, block, value, func)
    return [tuple(e) for e in entries]


def _is_allocated(func: PrimFunc, buffer: Buffer) -> bool:
    return any(
        isinstance(stmt, Block) and buffer in stmt.alloc_buffers for stmt, _ in walk(func.body)
    )


def storage_align(
    func: PrimFunc, block: str, buffer_index: int, axis: int, factor: int, offset: int
) -> PrimFunc:
    """Ask for the stride of ``axis`` of the block's ``buffer_index``-th written buffer to be
    ``k * factor + offset`` (the smallest such stride no smaller than the dense one).

    Before (``storage_align(func, "B", 0, axis=0, factor=128, offset=1)``)::

        B = T.alloc_buffer((128, 128))
        with T.block("B"):
            B[vi, vj] = A[vi, vj] * T.float32(2)

    After (the annotation; the backends allocate ``B`` with strides ``(129, 1)``)::

        with T.block("B"):
            T.block_attr({"buffer_dim_align": ((0, 0, 128, 1),)})
            B[vi, vj] = A[vi, vj] * T.float32(2)

    A second call for the same buffer and axis replaces the first (TVM).

    Raises
    ------
    BufferIndexError, InvalidArgumentError
        No such written buffer; an argument that is not an int.
    StorageAlignInvalidFactorError
        ``factor`` is not positive.
    StorageAlignAxisOutOfRangeError
        ``axis`` is not in ``[-ndim, ndim)``.
    NonAllocatedBufferError
        The buffer is a parameter of the function.
    StorageAlignInvalidAnnotationError
        The block already carries a malformed ``buffer_dim_align``.
    """
    primitive = "storage_align"
    node, _ = find_block(func, block, primitive)
    buffer = buffer_region(primitive, func, node, "write", buffer_index).buffer
    for name, value in (("axis", axis), ("factor", factor), ("offset", offset)):
        if not _is_int(value):
            raise InvalidArgumentError(primitive, name, "an int", value)
    if factor <= 0:
        raise StorageAlignInvalidFactorError(primitive, node, factor, func)
    if not -buffer.ndim <= axis < buffer.ndim:
        raise StorageAlignAxisOutOfRangeError(primitive, node, buffer, axis, func)
    axis = axis % buffer.ndim
    if not _is_allocated(func, buffer):
        raise NonAllocatedBufferError(primitive, node, buffer, func)
    entries = read_annotation(primitive, func, node)
    new_entry = (buffer_index, axis, factor, offset)
    for n, entry in enumerate(entries):
        if entry[:2] == new_entry[:2]:
            entries[n] = new_entry
            break
    else:
        entries.append(new_entry)
    annotations = tuple(kv for kv in node.annotations if kv[0] != ANNOTATION)
    annotations += ((ANNOTATION, tuple(entries)),)
    return replace_block(func, block, lambda b: b.replace(annotations=annotations))


# ---------------------------------------------------------------------------------------
# Schedule methods
# ---------------------------------------------------------------------------------------


class StorageMethods:
    """The ``storage_align`` method of ``Schedule``."""

    def storage_align(
        self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        """Pad the stride of ``axis`` of a written buffer to ``k * factor + offset``.

        See ``workbench.schedule.storage.storage_align`` for the IR before and after.

        Example
        -------
        >>> sch.storage_align(sch.get_block("A_shared"), 0, axis=-2, factor=32, offset=1)
        """
        name = self._name_of(block, "storage_align", "block", "block")
        new_func = storage_align(self.mod, name, buffer_index, axis, factor, offset)
        attrs = {"buffer_index": buffer_index, "axis": axis, "factor": factor, "offset": offset}
        self._commit("storage_align", (block,), attrs, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------


def _probe_storage_align(sch, block: BlockRV):
    return (block, 0, 0, 16, 1), {}


register_instruction(
    InstructionKind(
        "storage_align",
        ("block",),
        tuple(
            AttrSpec(name, _is_int, "an int", positional=True)
            for name in ("buffer_index", "axis", "factor", "offset")
        ),
        applies_to=("block",),
        probe=_probe_storage_align,
    )
)
