"""Buffers: named, typed, shaped arrays with a memory scope."""

from __future__ import annotations

import math

import numpy as np

from workbench.ir.node import Node, ir_node

SCOPES = ("global", "shared", "local")


@ir_node
class Buffer(Node):
    """A multi-dimensional array. Shapes are Python ints (known when the function is built).

    Two buffers are the same buffer when name, shape, dtype and scope agree, so buffer
    names are unique within a function.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    scope: str = "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    __hash__ = Node.__hash__
