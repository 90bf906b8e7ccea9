"""ATen indexing by run-time integer tensors (mixed into ``torch_aten.AtenOps``).

``embedding``, ``index_select`` and ``index.Tensor`` (``x[idx]``, ``x[:, idx]``) become the
graph's ``take`` (``np.take``), ``gather`` its ``gather``; both are lowered through
``workbench.ops.gather``. Bounds as PyTorch: advanced indexing wraps negative indices
(``wrap``); ``embedding``, ``index_select`` and ``gather`` do not. An index out of range
raises ``IndexOutOfRangeError`` where it can be known (``workbench.graph.index_bounds``).
An op whose inputs are all constants is folded by PyTorch before it gets here.
"""

from __future__ import annotations

import numpy as np


class IndexOps:
    """The handlers (``self`` is the converter: ``_emit``, ``_shape``, ``b``)."""

    def _take(self, x, index, axis: int, wrap: bool):
        """``np.take(x, index, axis)``; a 0-d index (a plain ``select``) drops the axis."""
        axis %= len(self._shape(x))
        constant = self._const(index)
        if constant is not None and constant.ndim == 0:
            extent = self._shape(x)[axis]
            i = int(constant)
            if not (-extent if wrap else 0) <= i < extent:
                from workbench.graph.errors import IndexOutOfRangeError

                raise IndexOutOfRangeError(f"{self.source}: index {i} is out of range for "
                                           f"axis {axis} of size {extent}")
            return self._emit("select", [x], {"axis": axis, "index": i % extent})
        if not self._shape(index):
            one = self._emit("reshape", [index], {"shape": [1]})
            y = self._emit("take", [x, one], {"axis": axis, "wrap": wrap})
            shape = list(self._shape(x))
            del shape[axis]
            return self._emit("reshape", [y], {"shape": shape})
        return self._emit("take", [x, index], {"axis": axis, "wrap": wrap})

    def _op_embedding(self, weight, indices, padding_idx=-1, scale_grad=False, sparse=False):
        """Rows of the table at run-time indices (``take`` along axis 0)."""
        return self._take(weight, indices, 0, wrap=False)

    def _op_index_select(self, x, dim, index):
        """``take`` along ``dim`` (a run-time or constant index)."""
        return self._take(x, index, dim, wrap=False)

    def _op_gather(self, x, dim, index, sparse_grad=False):
        """``torch.gather`` by a run-time index (the graph's ``gather``)."""
        return self._emit("gather", [x, index], {"axis": int(dim) % len(self._shape(x)),
                                                  "wrap": False})

    def _op_index(self, x, indices):
        """``x[idx]`` with one index tensor (any axis, negatives wrapped): ``take``; a
        constant boolean mask becomes the constant positions of its true entries."""
        used = [(axis, i) for axis, i in enumerate(indices) if i is not None]
        if len(used) != 1:
            raise NotImplementedError(f"{self.source}: index.Tensor with {len(used)} index "
                                      "tensors (one run-time index tensor is supported)")
        axis, index = used[0]
        constant = self._const(index)
        if constant is not None and constant.dtype == np.bool_:
            if constant.ndim != 1:
                raise NotImplementedError(f"{self.source}: indexing by a {constant.ndim}-d "
                                          "boolean mask")
            index = self.b.constant("positions", np.flatnonzero(constant).astype(np.int64))
        elif index in self.booleans:
            raise NotImplementedError(f"{self.source}: indexing by a run-time boolean mask "
                                      "(the output's shape depends on the data)")
        return self._take(x, index, axis, wrap=True)


__all__ = ["IndexOps"]
