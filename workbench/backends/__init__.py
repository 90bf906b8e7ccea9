"""Backends, one package per target: ``common/`` (the target registry, ``build``, lowering,
``Kernel``, printers), ``numpy/`` (the reference executor), ``cpu/`` (Numba njit),
``cuda/`` (Numba cuda.jit). See docs/architecture.md.

>>> import workbench as wb
>>> kernel = wb.build(func, target="cpu")     # doctest: +SKIP
>>> print(kernel.source)                       # doctest: +SKIP
"""

from workbench.backends.common.arguments import KernelArgumentAliasError, KernelArgumentError
from workbench.backends.common.bounds_checks import KernelBoundsError
from workbench.backends.common.build import build, lower_to_numba_source
from workbench.backends.common.kernel import Kernel
from workbench.backends.common.lower import lower
from workbench.backends.common.target import DeviceFacts, Target, TargetKind, register_target

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
