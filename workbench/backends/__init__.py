"""Backends: lowering, the numpy reference executor, the Numba CPU backend, ``Kernel``.

>>> import workbench as wb
>>> kernel = wb.build(func, target="cpu")     # doctest: +SKIP
>>> print(kernel.source)                       # doctest: +SKIP
"""

from workbench.backends.arguments import KernelArgumentError
from workbench.backends.build import build, lower_to_numba_source
from workbench.backends.kernel import Kernel
from workbench.backends.lower import lower
from workbench.backends.target import DeviceFacts, Target, TargetKind, register_target

__all__ = [
    "build",
    "Kernel",
    "KernelArgumentError",
    "lower",
    "lower_to_numba_source",
    "Target",
    "TargetKind",
    "DeviceFacts",
    "register_target",
]
