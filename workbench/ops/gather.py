"""Indexing by a run-time integer tensor: ``take`` (``np.take``: embedding, ``index_select``,
``x[idx]``) and ``gather`` (``torch.gather``: ``np.take_along_axis``).

Both are rank-generic, so they are built with ``FuncBuilder`` (one spatial block each, the
index loaded and used as a subscript). Bounds, as PyTorch has them:

- ``wrap=True`` (advanced indexing ``x[idx]``): a negative index ``i`` reads ``i + n``;
- ``wrap=False`` (``embedding``, ``index_select``, ``gather``): negative indices are out of
  range.

A kernel cannot raise, so the index is then *clamped* into ``[0, n)``: every load stays inside
the tensor whatever the index. An out-of-range index is an error found before the kernels run
where it can be known (``workbench.graph.index_bounds``: constants at import, the model's
integer inputs at each call); an index computed inside the model reads the clamped row.

Example
-------
>>> from workbench.ir.analysis import find_blocks
>>> f = take((10, 4), (2, 3), axis=0)
>>> [b.shape for b in f.params], [b.name for b in find_blocks(f)]
([(10, 4), (2, 3), (2, 3, 4)], ['T_take'])
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.ir.expr import LT, IntImm, Max, Min, PrimExpr, Select
from workbench.ir.function import PrimFunc
from workbench.ops.compose import FuncBuilder


def bounded_index(index: PrimExpr, extent: int, wrap: bool) -> PrimExpr:
    """``index`` made a safe subscript of an axis of ``extent``: negatives wrapped (``wrap``),
    then clamped into ``[0, extent)``."""
    dtype = index.dtype
    if wrap:
        index = Select(LT(index, IntImm(0, dtype)), index + IntImm(extent, dtype), index)
    return Min(Max(index, IntImm(0, dtype)), IntImm(extent - 1, dtype))


def take(x_shape: Sequence[int], index_shape: Sequence[int], axis: int = 0, *,
         wrap: bool = False, dtype: str = "float32", index_dtype: str = "int64") -> PrimFunc:
    """``out = np.take(x, index, axis)``: shape ``x[:axis] + index + x[axis + 1:]``."""
    x_shape, index_shape = tuple(x_shape), tuple(index_shape)
    axis %= len(x_shape)
    fb = FuncBuilder("take", dtype)
    x = fb.param("x", x_shape)
    index = fb.param("index", index_shape, index_dtype)
    out_shape = x_shape[:axis] + index_shape + x_shape[axis + 1:]
    out = fb.param("T_take", out_shape)
    k = len(index_shape)

    def value(vs):
        vs = list(vs)
        row = bounded_index(index[vs[axis:axis + k] or [IntImm(0)]], x_shape[axis], wrap)
        return x[vs[:axis] + [row] + vs[axis + k:]]

    fb.spatial("T_take", out, value)
    return fb.finish()


def gather(x_shape: Sequence[int], index_shape: Sequence[int], axis: int = 0, *,
           wrap: bool = False, dtype: str = "float32", index_dtype: str = "int64") -> PrimFunc:
    """``torch.gather(x, axis, index)``: ``out[v] = x[v with v[axis] = index[v]]``; the output
    has the index's shape (no larger than ``x`` along the other axes)."""
    x_shape, index_shape = tuple(x_shape), tuple(index_shape)
    axis %= len(x_shape)
    fb = FuncBuilder("gather", dtype)
    x = fb.param("x", x_shape)
    index = fb.param("index", index_shape, index_dtype)
    out = fb.param("T_gather", index_shape)

    def value(vs):
        vs = list(vs)
        row = bounded_index(index[vs], x_shape[axis], wrap)
        return x[vs[:axis] + [row] + vs[axis + 1:]]

    fb.spatial("T_gather", out, value)
    return fb.finish()


__all__ = ["bounded_index", "gather", "take"]
