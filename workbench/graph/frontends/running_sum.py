"""A running sum along one axis as the graph computes it, for both frontends (ATen
``cumsum``, ONNX ``CumSum``): a matmul with a constant triangular matrix of ones, the axis
moved last around it (no new graph operator; the matmul kernels do the work).

Integers are summed in float32 (the matmul kernels' dtype) by the callers, exact while the
sums stay under 2**24 (position ids from a padding mask).
"""

from __future__ import annotations

import numpy as np


def running_sum_matrix(n: int, *, exclusive: bool = False, reverse: bool = False,
                       dtype: str = "float32") -> np.ndarray:
    """``M`` with ``(x @ M)[j]`` the sum of ``x[i]`` over ``i <= j`` (``exclusive``:
    ``i < j``; ``reverse``: ``i >= j``, ``i > j``).

    >>> running_sum_matrix(3, exclusive=True).astype(int).tolist()
    [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    """
    ones = np.ones((n, n), dtype)
    if reverse:
        return np.tril(ones, -1 if exclusive else 0)
    return np.triu(ones, 1 if exclusive else 0)


def running_sum(emit, constant, x: str, shape, axis: int, *, exclusive: bool = False,
                reverse: bool = False) -> str:
    """The running sum of the float32 value ``x`` (of ``shape``) along ``axis``;
    ``emit(op, inputs, attrs)`` adds a node, ``constant(hint, array)`` a constant."""
    n = len(shape)
    perm = [a for a in range(n) if a != axis] + [axis]
    if axis != n - 1:
        x = emit("transpose", [x], {"perm": perm})
    ones = running_sum_matrix(shape[axis], exclusive=exclusive, reverse=reverse)
    y = emit("matmul", [x, constant("running_sum", ones)], None)
    if axis != n - 1:
        y = emit("transpose", [y], {"perm": [int(a) for a in np.argsort(perm)]})
    return y


__all__ = ["running_sum", "running_sum_matrix"]
