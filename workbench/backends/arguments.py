"""Checking the arrays passed to a kernel, once, at the call boundary.

Arrays are never copied or cast: a wrong dtype, shape, layout or count raises
``KernelArgumentError`` naming the argument.
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


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {tuple(value.shape)}"
    return f"{type(value).__name__} (not a numpy array)"


def check_arguments(func: PrimFunc, args: tuple, written: frozenset[str] = frozenset()) -> None:
    """Raise ``KernelArgumentError`` unless ``args`` match ``func.params`` exactly.

    Each argument must be a C-contiguous ``numpy.ndarray`` with the parameter's dtype and
    shape; parameters in ``written`` must also be writeable.
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
