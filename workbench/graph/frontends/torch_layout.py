"""ATen's layout operators (mixed into ``torch_aten.AtenOps``): views, reshapes,
transposes, slices, splits, concatenation and constant padding.

A reshape to the same shape, a slice of the whole axis and an expand to the same shape
return their input (no graph node). Dims are normalized as PyTorch does (negative counts
from the end).
"""

from __future__ import annotations

import math

import numpy as np


class LayoutOps:
    """The layout handlers (``self._emit``, ``self._shape``: ``AtenOps``)."""

    def _axes(self, x, dims) -> list[int]:
        n = len(self._shape(x))
        if dims is None or dims == []:
            return list(range(n))
        return [d % n for d in ([dims] if isinstance(dims, int) else dims)]

    def _reshape_to(self, x, shape) -> str:
        size = math.prod(self._shape(x))
        shape = [int(s) for s in shape]
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = size // known
        if tuple(shape) == self._shape(x):
            return x
        return self._emit("reshape", [x], {"shape": shape})

    def _op_view(self, x, shape):
        return self._reshape_to(x, shape)

    _op_reshape = _op_view
    _op__unsafe_view = _op_view

    def _op_flatten(self, x, start=0, end=-1):
        shape = list(self._shape(x))
        if not shape:
            return self._reshape_to(x, [1])
        start, end = start % len(shape), end % len(shape)
        new = shape[:start] + [math.prod(shape[start:end + 1])] + shape[end + 1:]
        return self._reshape_to(x, new)

    def _op_unsqueeze(self, x, dim):
        shape = list(self._shape(x))
        shape.insert(dim % (len(shape) + 1), 1)
        return self._reshape_to(x, shape)

    def _op_squeeze(self, x, dims=None):
        shape = self._shape(x)
        axes = set(self._axes(x, dims)) if shape else set()
        return self._reshape_to(x, [s for d, s in enumerate(shape) if not (d in axes
                                                                            and s == 1)])

    def _op_expand(self, x, shape, implicit=False):
        old = self._shape(x)
        shape = [o if s == -1 else int(s) for s, o in
                 zip(shape, (None,) * (len(shape) - len(old)) + tuple(old), strict=True)]
        if tuple(shape) == tuple(old):
            return x
        return self._emit("broadcast_to", [x], {"shape": shape})

    def _op_broadcast_tensors(self, tensors):
        """Each tensor ``expand``-ed to the common broadcast shape (``F.mse_loss``)."""
        shape = np.broadcast_shapes(*(tuple(self._shape(t)) for t in tensors))
        return [self._op_expand(t, list(shape)) for t in tensors]

    def _op_expand_as(self, x, other):
        return self._op_expand(x, self._shape(other))

    def _op_repeat(self, x, repeats):
        shape = (1,) * (len(repeats) - len(self._shape(x))) + tuple(self._shape(x))
        x = self._reshape_to(x, shape)
        inter, final = [], []
        for s, r in zip(shape, repeats, strict=True):
            inter += [r, s]
            final.append(r * s)
        x = self._reshape_to(x, [v for s in shape for v in (1, s)])
        return self._reshape_to(self._emit("broadcast_to", [x], {"shape": inter}), final)

    def _op_select(self, x, dim, index):
        n = len(self._shape(x))
        size = self._shape(x)[dim % n]
        return self._emit("select", [x], {"axis": dim % n, "index": int(index) % size})

    def _op_unbind(self, x, dim=0):
        return [self._op_select(x, dim, i) for i in range(self._shape(x)[dim])]

    def _op_transpose(self, x, d0, d1):
        perm = list(range(len(self._shape(x))))
        d0, d1 = d0 % len(perm), d1 % len(perm)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self._emit("transpose", [x], {"perm": perm})

    def _op_t(self, x):
        return self._op_transpose(x, 0, 1) if len(self._shape(x)) == 2 else x

    def _op_permute(self, x, dims):
        n = len(self._shape(x))
        return self._emit("transpose", [x], {"perm": [d % n for d in dims]})

    def _op_slice(self, x, dim=0, start=None, end=None, step=1):
        shape = self._shape(x)
        axis = dim % len(shape)
        start, stop, step = slice(start, end, step).indices(shape[axis])
        if (start, stop, step) == (0, shape[axis], 1):
            return x
        return self._emit("slice", [x], {"axis": axis, "start": start, "stop": stop,
                                         "step": step})

    def _op_narrow(self, x, dim, start, length):
        return self._op_slice(x, dim, start, start + length)

    def _op_split(self, x, size, dim=0):
        extent = self._shape(x)[dim]
        sizes = [min(size, extent - s) for s in range(0, extent, size)]
        return self._op_split_with_sizes(x, sizes, dim)

    def _op_split_with_sizes(self, x, sizes, dim=0):
        parts, start = [], 0
        for size in sizes:
            parts.append(self._op_slice(x, dim, start, start + size))
            start += size
        return parts

    def _op_chunk(self, x, chunks, dim=0):
        return self._op_split(x, -(-self._shape(x)[dim] // chunks), dim)

    def _op_cat(self, tensors, dim=0):
        tensors = [t for t in tensors if math.prod(self._shape(t)) > 0]
        if len(tensors) == 1:
            return tensors[0]
        return self._emit("concat", tensors, {"axis": dim % len(self._shape(tensors[0]))})

    def _op_stack(self, tensors, dim=0):
        n = len(self._shape(tensors[0])) + 1
        return self._op_cat([self._op_unsqueeze(t, dim % n) for t in tensors], dim % n)

    def _op_constant_pad_nd(self, x, pad, value=0.0):
        n = len(self._shape(x))
        pads = [[0, 0] for _ in range(n)]
        for i in range(0, len(pad), 2):
            pads[n - 1 - i // 2] = [int(pad[i]), int(pad[i + 1])]
        if any(p < 0 for pair in pads for p in pair):
            raise NotImplementedError("negative padding")
        return self._emit("pad", [x], {"pads": pads, "value": float(value)})

    def _op_pad(self, x, pad, mode="constant", value=None):
        if mode != "constant":
            raise NotImplementedError(f"pad mode {mode!r}")
        return self._op_constant_pad_nd(x, pad, 0.0 if value is None else value)
