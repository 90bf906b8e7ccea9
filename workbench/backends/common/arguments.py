"""Checking the arrays passed to a kernel, once, at the call boundary.

Arrays are never copied or cast: a wrong dtype, shape, layout or count raises
``KernelArgumentError`` naming the argument. Two arguments that share memory (the same
array, or overlapping views of one) raise ``KernelArgumentAliasError`` when the kernel
writes one of them and reads or writes the other: the generated code assumes distinct
buffers, so the result would depend on the loop order. A buffer the kernel both reads and
writes itself (an in-place update) is fine.
"""

from __future__ import annotations

import numpy as np

from workbench.ir import PrimFunc


class KernelArgumentError(ValueError):
    """An array passed to a kernel does not match the function's parameter.

    Example
    -------
    ``argument 'B' of matmul: expected float32 array of shape (16, 16), got float64 array
    of shape (16, 16)``
    """


class KernelArgumentAliasError(KernelArgumentError):
    """Two arguments share memory and the kernel writes one of them.

    Example
    -------
    ``arguments 'A' and 'C' of add share memory: the kernel reads 'A' and writes 'C'
    (pass a copy, e.g. A.copy())``
    """


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {tuple(value.shape)}"
    return f"{type(value).__name__} (not a numpy array)"


def check_arguments(
    func: PrimFunc,
    args: tuple,
    written: frozenset[str] = frozenset(),
    read: frozenset[str] | None = None,
) -> None:
    """Raise ``KernelArgumentError`` unless ``args`` match ``func.params`` exactly.

    Each argument must be a C-contiguous ``numpy.ndarray`` with the parameter's dtype and
    shape; parameters in ``written`` must also be writeable, and must not share memory with
    another argument the kernel reads (``read``; every parameter when None) or writes.
    """
    params = func.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise KernelArgumentError(
            f"{func.name} expects {len(params)} arrays ({names}), got {len(args)}"
        )
    for param, value in zip(params, args, strict=True):
        expected = f"{param.dtype} array of shape {tuple(param.shape)}"
        where = f"argument {param.name!r} of {func.name}"
        if not isinstance(value, np.ndarray):
            raise KernelArgumentError(f"{where}: expected {expected}, got {_describe(value)}")
        if value.dtype != np.dtype(param.dtype) or tuple(value.shape) != tuple(param.shape):
            raise KernelArgumentError(f"{where}: expected {expected}, got {_describe(value)}")
        if not value.flags.c_contiguous:
            raise KernelArgumentError(
                f"{where}: expected a C-contiguous array, got a non-contiguous {_describe(value)} "
                "(pass np.ascontiguousarray(x))"
            )
        if param.name in written and not value.flags.writeable:
            raise KernelArgumentError(f"{where}: the kernel writes it but the array is read-only")
    _check_aliasing(func, args, written, read)


def _check_aliasing(func: PrimFunc, args: tuple, written, read) -> None:
    params = func.params
    for i, (param, value) in enumerate(zip(params, args, strict=True)):
        if param.name not in written:
            continue
        for j, (other, other_value) in enumerate(zip(params, args, strict=True)):
            if j == i or (j < i and other.name in written):
                continue  # itself, or a written pair already checked the other way round
            used = other.name in written or read is None or other.name in read
            # C-contiguous arrays: overlapping memory bounds means shared elements
            if not used or not np.may_share_memory(value, other_value):
                continue
            how = "writes" if other.name in written else "reads"
            raise KernelArgumentAliasError(
                f"arguments {other.name!r} and {param.name!r} of {func.name} share memory: "
                f"the kernel {how} {other.name!r} and writes {param.name!r} (pass a copy, "
                f"e.g. {other.name}.copy())"
            )
