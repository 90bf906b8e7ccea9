"""Backends: lowering, the numpy reference executor, the Numba CPU backend, ``Kernel``.

>>> import workbench as wb
>>> kernel = wb.build(func, target="cpu")     # doctest: +SKIP
>>> print(kernel.source)                       # doctest: +SKIP
"""

from workbench.backends.arguments import KernelArgumentAliasError, KernelArgumentError
from workbench.backends.bounds_checks import KernelBoundsError
from workbench.backends.build import build, lower_to_numba_source
from workbench.backends.kernel import Kernel
from workbench.backends.lower import lower
from workbench.backends.target import DeviceFacts, Target, TargetKind, register_target

__all__ = [
    "build",
    "Kernel",
    "KernelArgumentAliasError",
    "KernelArgumentError",
    "KernelBoundsError",
    "lower",
    "lower_to_numba_source",
    "Target",
    "TargetKind",
    "DeviceFacts",
    "register_target",
]
