"""Targets: what ``build`` compiles for, as plug-in objects (TVM's ``Target`` / ``TargetKind``).

A ``TargetKind`` is registered once per target (``"numpy"``, ``"cpu"``, ``"cuda"``) and says
everything ``build`` needs: the default options, the IR passes to run after the common
lowering, how to compile (printer + compiler, in the target's backend module), the kernel
class, and the device facts that legality checks and the GPU verifier use. A ``Target`` is a
kind plus option values; ``build(sch, target="cpu")`` is ``build(sch, target=Target("cpu"))``.

Adding a target adds files (a backend module that calls ``register_target``), not branches.

Example
-------
>>> from workbench.backends.target import Target
>>> t = Target("cpu", fastmath=False)
>>> t.name, t.options["fastmath"], t.options["promote"]
('cpu', False, True)
>>> Target("cuda").device.max_threads_per_block
1024
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from workbench.ir import PrimFunc


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What a device can do, for legality checks, the GPU verifier and tuning.

    Attributes
    ----------
    vector_bytes : int
        Width of one vector register (CPU) or the widest load (CUDA: 16 bytes).
    cache_bytes : tuple[int, ...]
        L1, L2 (, L3) data cache sizes in bytes.
    shared_memory_per_block : int
        CUDA: bytes of shared memory one block may use (48 KiB without an opt-in).
    max_threads_per_block : int
        CUDA: the most threads one block may have.
    max_block_dims : tuple[int, int, int]
        CUDA: the most threads along x, y, z.
    warp_size : int
        CUDA: threads per warp.
    cache_line_bytes : int
        The L1 data cache line (or, on CUDA, the memory transaction) size in bytes.
    """

    vector_bytes: int = 32
    cache_bytes: tuple[int, ...] = (32 * 1024, 1024 * 1024)
    shared_memory_per_block: int = 0
    max_threads_per_block: int = 1
    max_block_dims: tuple[int, int, int] = (1, 1, 1)
    warp_size: int = 1
    cache_line_bytes: int = 64


CPU_FACTS = DeviceFacts(vector_bytes=32, cache_bytes=(48 * 1024, 2 * 1024 * 1024, 32 * 1024**2))
"""A typical AVX2 core; the ``cpu`` and ``numpy`` targets report the host's own facts
(``workbench.backends.cpu_facts.host_device_facts``: the vector width LLVM compiles for)."""

CUDA_FACTS = DeviceFacts(
    vector_bytes=16,
    cache_bytes=(256 * 1024, 50 * 1024**2),
    shared_memory_per_block=48 * 1024,
    max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64),
    warp_size=32,
)
"""Facts of the ``cuda`` target when no device can be queried (the CUDA simulator, CI)."""


@dataclasses.dataclass(frozen=True)
class TargetKind:
    """One registered target.

    Attributes
    ----------
    name : str
    defaults : Mapping[str, object]
        Every option and its default; ``build`` refuses other option names.
    passes : tuple of callables
        ``pass(func, target) -> func`` run in order after the common lowering.
    compile : callable
        ``compile(func, lowered, target, written) -> Kernel``: runs the passes (through
        ``target.run_passes``), prints, compiles and wraps the result (cache included).
    kernel_class : type
        The class of the kernels it builds (``CpuKernel``, ``CudaKernel``...).
    device : callable
        ``device() -> DeviceFacts`` (queried lazily: a CUDA device may be absent).
    description : str
    """

    name: str
    defaults: Mapping[str, Any]
    passes: tuple[Callable, ...]
    compile: Callable
    kernel_class: type
    device: Callable[[], DeviceFacts]
    description: str = ""


_REGISTRY: dict[str, TargetKind] = {}

# where each built-in target registers itself (imported on first use)
_BUILTIN_MODULES = {
    "numpy": "workbench.backends.numpy_target",
    "cpu": "workbench.backends.numba_cpu_target",
    "cuda": "workbench.backends.numba_cuda",
}


def register_target(kind: TargetKind) -> TargetKind:
    """Add (or replace) a target kind in the registry; returns it."""
    _REGISTRY[kind.name] = kind
    return kind


def target_names() -> tuple[str, ...]:
    """Names of every known target (registered or built in)."""
    return tuple(dict.fromkeys(list(_BUILTIN_MODULES) + list(_REGISTRY)))


def get_target_kind(name: str) -> TargetKind:
    """The registered kind called ``name`` (importing a built-in's module on first use)."""
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
    kind = _REGISTRY.get(name)
    if kind is None:
        known = ", ".join(repr(n) for n in target_names())
        raise ValueError(f"unknown target {name!r}; choose one of {known}")
    return kind


class Target:
    """A target kind with option values: what ``build`` compiles for.

    Parameters
    ----------
    name : str
        ``"numpy"`` (reference), ``"cpu"`` (Numba njit) or ``"cuda"`` (Numba cuda.jit).
    **options
        Target options (see each kind's ``defaults``); unknown names raise ``TypeError``.

    Example
    -------
    >>> Target("cuda")
    Target('cuda', fastmath=False, max_threads_per_block=None)
    """

    def __init__(self, name: str, **options):
        if isinstance(name, Target):
            options = {**name.options, **options}
            name = name.name
        kind = get_target_kind(name)
        unknown = sorted(set(options) - set(kind.defaults))
        if unknown:
            raise TypeError(
                f"build: unknown option(s) {', '.join(unknown)} for target {name!r}; "
                f"known: {', '.join(kind.defaults)}"
            )
        self.kind = kind
        self.options = MappingProxyType({**kind.defaults, **options})

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def device(self) -> DeviceFacts:
        """The device facts (queried from the device where there is one)."""
        return self.kind.device()

    def key(self) -> tuple:
        """A hashable key: name and sorted options (part of the kernel cache key)."""
        return (self.name, tuple(sorted(self.options.items())))

    def with_options(self, **options) -> Target:
        return Target(self.name, **{**self.options, **options})

    def run_passes(self, lowered: PrimFunc) -> PrimFunc:
        """The target's passes applied in order to the common lowering's result."""
        func = lowered
        for ir_pass in self.kind.passes:
            func = ir_pass(func, self)
        return func

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return self.name == other
        return isinstance(other, Target) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"Target({self.name!r}{', ' if options else ''}{options})"


def as_target(target: str | Target, options: Mapping[str, Any]) -> Target:
    """``target`` (a name or a ``Target``) as a ``Target`` with ``options`` applied."""
    if isinstance(target, Target):
        return target.with_options(**options) if options else target
    if not isinstance(target, str):
        raise TypeError(f"build: target must be a name or a Target, got {type(target).__name__}")
    return Target(target, **options)
