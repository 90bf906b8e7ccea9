"""Honour ``storage_align``: store aligned buffers flat, with padded strides.

``Schedule.storage_align`` leaves a ``buffer_dim_align`` annotation
(``(buffer_index, axis, factor, offset)`` tuples) on the block writing an allocated
buffer. After lowering (and compaction, so the padding applies to the allocated shape,
as in TVM), each such buffer becomes a one-dimensional buffer of
``strides[0] * shape[0]`` elements and every access ``B[i, j]`` becomes
``B[i * strides[0] + j * strides[1]]``, the strides padded by
``aligned_strides``. Both backends then allocate and index the
padded storage, and compute the same values as without the alignment.
"""

from __future__ import annotations

from workbench.ir import (
    Block,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    IntImm,
    PrimExpr,
    PrimFunc,
    Range,
    collect,
)
from workbench.ir.functor import IRMapper

ANNOTATION = "buffer_dim_align"


def aligned_buffers(func: PrimFunc) -> dict[str, dict[int, tuple[int, int]]]:
    """``{buffer name: {axis: (factor, offset)}}`` from the blocks' ``buffer_dim_align``."""
    aligns: dict[str, dict[int, tuple[int, int]]] = {}
    for block in collect(func.body, lambda n: isinstance(n, Block)):
        for buffer_index, axis, factor, offset in dict(block.annotations).get(ANNOTATION, ()):
            if buffer_index < len(block.writes):
                name = block.writes[buffer_index].buffer.name
                aligns.setdefault(name, {})[axis] = (factor, offset)
    return aligns


def apply_storage_align(func: PrimFunc) -> PrimFunc:
    """Flatten every aligned intermediate buffer of lowered ``func`` with padded strides."""
    aligns = aligned_buffers(func)
    if not aligns:
        return func
    root = func.root_block
    layouts: dict[str, tuple[Buffer, list[int]]] = {}
    for buf in root.alloc_buffers:
        if buf.name in aligns and buf.ndim > 0:
            axes = {a: fo for a, fo in aligns[buf.name].items() if a < buf.ndim}
            strides = aligned_strides(buf.shape, axes)
            flat = Buffer(buf.name, (strides[0] * buf.shape[0],), buf.dtype, buf.scope)
            layouts[buf.name] = (flat, strides)
    if not layouts:
        return func
    body = _Flatten(layouts).visit(root.body)
    allocs = tuple(layouts[b.name][0] if b.name in layouts else b for b in root.alloc_buffers)
    new_root = root.replace(body=body, alloc_buffers=allocs)
    return func.replace(body=func.body.replace(block=new_root))


def aligned_strides(shape: tuple[int, ...], aligns: dict[int, tuple[int, int]]) -> list[int]:
    """Strides of a buffer of ``shape`` with ``aligns`` ``{axis: (factor, offset)}`` applied,
    innermost first padded as TVM's FlattenBuffer does.

    Example: ``aligned_strides((4, 6), {0: (8, 1)})`` is ``[9, 1]``.
    """
    strides = [0] * len(shape)
    stride = 1
    for axis in range(len(shape) - 1, -1, -1):
        if axis in aligns:
            factor, offset = aligns[axis]
            stride += (factor + offset - stride % factor) % factor
        strides[axis] = stride
        stride *= shape[axis]
    return strides


def _flat_index(indices: tuple[PrimExpr, ...], strides: list[int]) -> PrimExpr:
    total: PrimExpr | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = index if stride == 1 else index * IntImm(stride, index.dtype)
        total = term if total is None else total + term
    return total


class _Flatten(IRMapper):
    def __init__(self, layouts: dict[str, tuple[Buffer, list[int]]]):
        self.layouts = layouts

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        if node.buffer.name not in self.layouts:
            return node
        flat, strides = self.layouts[node.buffer.name]
        return BufferLoad(flat, (_flat_index(node.indices, strides),))

    def visit_BufferStore(self, node: BufferStore):
        node = self.generic_visit(node)
        if node.buffer.name not in self.layouts:
            return node
        flat, strides = self.layouts[node.buffer.name]
        return BufferStore(flat, node.value, (_flat_index(node.indices, strides),))

    def visit_BufferRegion(self, node: BufferRegion):
        if node.buffer.name not in self.layouts:
            return node
        flat = self.layouts[node.buffer.name][0]
        return BufferRegion(flat, (Range(IntImm(0), IntImm(flat.shape[0])),))
