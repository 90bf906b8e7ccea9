"""ATen indexing by run-time integer tensors (mixed into ``torch_aten.AtenOps``).

``embedding``, ``index_select`` and ``index.Tensor`` (``x[idx]``, ``x[:, idx]``) become the
graph's ``take`` (``np.take``), ``gather`` its ``gather``; both are lowered through
``workbench.ops.gather``. Bounds as PyTorch: advanced indexing wraps negative indices
(``wrap``); ``embedding``, ``index_select`` and ``gather`` do not. An index out of range
raises ``IndexOutOfRangeError`` where it can be known (``workbench.graph.index_bounds``).
An op whose inputs are all constants is folded by PyTorch before it gets here.

Several index tensors (``x[i, j]``, ``x[:, i, j]``, broadcast against each other) become
ONE ``take`` over the indexed axes merged into one (a ``reshape``, after a ``transpose``
when they are not adjacent: PyTorch then puts the indexed dimensions first) by the flat
index ``sum_k wrap(i_k) * stride_k``. Each term is itself a ``take`` of the constant
``arange(extent_k) * stride_k`` by ``i_k``, so every index tensor is bounds-checked (and
its negatives wrapped) exactly as a single one is.

Boolean masks: a constant mask is the constant positions of its true entries; a run-time
mask *read* (``x[mask]``) has a data-dependent shape and is refused (``Refused``, the
reason suggests ``torch.where``/``masked_fill``); a mask *written* (``x[mask] = v``,
``index_put``) has a static shape and becomes a ``where``.
"""

from __future__ import annotations

import math

import numpy as np


class Refused(Exception):  # noqa: N818 - a signal to the converter, not an error of the user
    """Raised by a handler for a use of a known op that cannot be compiled: the converter
    lists it among the unsupported operators with this reason."""


_MASK_READ = ("indexing by a run-time boolean mask (x[mask]) gives a tensor whose shape "
              "depends on the data, which a compiled graph cannot have; keep the shape: "
              "torch.where(mask, x, other) or x.masked_fill(~mask, value)")


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

    def _is_mask(self, index) -> bool:
        return index in self.booleans or self.b.types[index].dtype == "bool"

    def _index_axes(self, indices) -> list[tuple[int, str]]:
        """``(axis, integer index tensor)`` for every index; a constant boolean mask over
        ``d`` axes gives ``d`` of them (its true entries' positions); a run-time mask is
        ``Refused``."""
        used, axis = [], 0
        for index in indices:
            if index is None:
                axis += 1
                continue
            constant = self._const(index)
            if constant is not None and constant.dtype == np.bool_:
                for k, positions in enumerate(np.nonzero(constant)):
                    used.append((axis + k, self.b.constant("positions",
                                                           positions.astype(np.int64))))
                axis += max(constant.ndim, 1)
                continue
            if self._is_mask(index):
                raise Refused(_MASK_READ)
            used.append((axis, index))
            axis += 1
        return used

    def _op_index(self, x, indices):
        """``x[idx]``, ``x[i, j]``, ``x[:, i, j]`` by run-time integer tensors (broadcast
        together, negatives wrapped): one ``take`` by a flat index; a constant boolean
        mask is the constant positions of its true entries; a run-time mask is refused."""
        used = self._index_axes(indices)
        if len(used) == 1:
            axis, index = used[0]
            return self._take(x, index, axis, wrap=True)
        return self._take_many(x, used)

    def _take_many(self, x, used: list[tuple[int, str]]) -> str:
        shape = self._shape(x)
        axes = [a for a, _ in used]
        if len(set(axes)) != len(axes):
            raise Refused("an axis indexed twice")
        extents = [shape[a] for a in axes]
        strides = [math.prod(extents[k + 1:]) for k in range(len(axes))]
        flat = None
        for (_, index), extent, stride in zip(used, extents, strides, strict=True):
            table = self.b.constant("stride", np.arange(extent, dtype=np.float64) * stride)
            term = self._take(table, index, 0, wrap=True)
            flat = term if flat is None else self._emit("add", [flat, term])
        flat = self._emit("cast", [flat], {"dtype": "int64"})
        rest = [a for a in range(len(shape)) if a not in axes]
        size = math.prod(extents)
        if axes == list(range(axes[0], axes[-1] + 1)):  # adjacent: the result keeps them there
            merged = list(shape[:axes[0]]) + [size] + list(shape[axes[-1] + 1:])
            return self._take(self._reshape_to(x, merged), flat, axes[0], wrap=False)
        x = self._emit("transpose", [x], {"perm": axes + rest})
        merged = [size] + [shape[a] for a in rest]
        return self._take(self._reshape_to(x, merged), flat, 0, wrap=False)

    def _op_index_put(self, x, indices, values, accumulate=False):
        """``x[mask] = v`` (``+=`` with ``accumulate``) by a boolean mask over leading
        axes: a ``where`` (static shape); integer index tensors (a scatter) are refused."""
        masks = [(axis, i) for axis, i in enumerate(indices) if i is not None]
        if len(masks) != 1 or not (self._is_mask(masks[0][1])
                                   or (self._const(masks[0][1]) is not None
                                       and self._const(masks[0][1]).dtype == np.bool_)):
            raise Refused("index_put (x[idx] = v) by integer index tensors is a scatter, "
                          "not supported; a boolean mask (x[mask] = v) is")
        axis, mask = masks[0]
        shape = self._shape(x)
        mshape = self._shape(mask)
        if tuple(shape[axis:axis + len(mshape)]) != tuple(mshape):
            raise Refused(f"index_put with a mask of shape {mshape} over axes of "
                          f"{tuple(shape)} from {axis}")
        tail = shape[axis + len(mshape):]
        if math.prod(self._shape(values)) != 1 and len(self._shape(values)) > len(tail):
            raise Refused("x[mask] = values with one value per true entry (a data-dependent "
                          "count); give a value broadcast over the selected entries")
        if math.prod(self._shape(values)) == 1:
            values = self._reshape_to(values, [])
        mask = self._as_mask(mask)
        mask = self._reshape_to(mask, [1] * axis + list(mshape) + [1] * len(tail))
        self.result_dtype = self._dtype(x)
        if accumulate:
            zero = np.zeros((), self._dtype(x))
            added = self._promoted("where", [values, self.b.constant("zero", zero)], [mask])
            return self._promoted("add", [x, added])
        return self._promoted("where", [values, x], [mask])

    def _as_mask(self, mask: str) -> str:
        """A 0/1 mask the graph's ``where`` reads (a boolean constant or input converted)."""
        constant = self._const(mask)
        if constant is not None:
            return self.b.constant("mask", constant.astype(np.float32))
        if self._dtype(mask) == "bool":
            return self._emit("cast", [mask], {"dtype": "float32"})
        return mask


__all__ = ["IndexOps", "Refused"]
