"""Targets: what ``build`` compiles for, as plug-in objects (TVM's ``Target`` / ``TargetKind``).

A ``TargetKind`` is registered once per target (``"numpy"``, ``"cpu"``, ``"cuda"``) and says
everything the layers above need, so that none of them branches on a target's name. A kind
supplies:

==================  ====================================================================
``defaults``        every option and its default (``build`` refuses other names)
``passes``          IR passes run after the common lowering (``Target.run_passes``)
``compile``         ``compile(func, lowered, target, written) -> Kernel`` (printer, compiler)
``kernel_class``    the class of the kernels it builds
``device``          ``device() -> DeviceFacts`` (queried lazily, cached per process)
``printer``         the source printer class (``None``: the kind prints no source)
``graph_schedule``  ``(func, target, parallel) -> Schedule``: default schedule of a graph
                    kernel (``wb.compile``); ``None``: the generic rules, no annotations
``graph_layout``    ``(graph, target) -> Graph``: the kind's layout pass, run by
                    ``wb.compile`` before fusion (``cpu``: conv weights packed by channel
                    blocks); ``None``: none
``tuning_rules``    ``(sch, decisions, target) -> None``: the generated search space's rules
``cost_prior``      whether the tuner's analytic prior models its candidates (CPU-like)
``warnings``        ``(func, target, loop, caches, facts) -> list[str]``: schedule advice
``artifact_format`` the name of what ``export_artifact`` / ``CompiledModel.save`` write for
                    it (``None``: not exportable)
``graph_runner``    ``(kernel) -> callable``: how a compiled model calls a kernel (default
                    the kernel itself)
``is_cached``       ``(func, target) -> bool``: whether building compiles nothing (the
                    kind keeps compiled code on disk); ``None``: no disk cache to fill
``recipes``         the target name whose recipes, rules and views it shares (default its own)
``explore_as``      the target the explorer builds for (``numpy``: ``cpu``)
``explorer_views``  ``(target) -> TargetViews``: the explorer's code, machine code and
                    capacity views, opening schedule (``workbench.widgets.target_views``)
``module``          the module that registers it (imported where a ``Target`` is unpickled)
==================  ====================================================================

A ``Target`` is a kind plus option values; ``build(sch, target="cpu")`` is
``build(sch, target=Target("cpu"))``. Public entry points resolve the target once
(``resolve_target``) and pass the object down.

Adding a target adds files (a module that calls ``register_target``), not branches: see
``tests/targets/cpu_serial.py``, a test target every entry point accepts.

Example
-------
>>> from workbench.backends.common.target import Target
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
(``workbench.backends.common.machine.host_device_facts``: the vector width LLVM compiles for)."""

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
    printer, graph_schedule, graph_layout, tuning_rules, cost_prior, warnings, artifact_format,
    graph_runner, is_cached, recipes, explore_as, explorer_views, module
        The hooks of the module docstring's table (all optional). A hook may be a callable
        or ``"package.module:function"``, imported on first use (``Target.hook``): a
        backend names hooks of the layers above it without importing them.
    """

    name: str
    defaults: Mapping[str, Any]
    passes: tuple[Callable, ...]
    compile: Callable
    kernel_class: type
    device: Callable[[], DeviceFacts]
    description: str = ""
    printer: type | None = None
    graph_schedule: Callable | str | None = None
    graph_layout: Callable | str | None = None
    tuning_rules: Callable | str | None = None
    cost_prior: bool = False
    warnings: Callable | str | None = None
    artifact_format: str | None = None
    graph_runner: Callable | str | None = None
    is_cached: Callable | str | None = None
    recipes: str | None = None
    explore_as: str | None = None
    explorer_views: Callable | str | None = None
    module: str = ""

    @property
    def recipe_target(self) -> str:
        """The target name whose recipes (and tuning rules) this kind uses."""
        return self.recipes or self.name


_REGISTRY: dict[str, TargetKind] = {}

# where each built-in target registers itself (imported on first use)
_BUILTIN_MODULES = {
    "numpy": "workbench.backends.numpy.numpy_target",
    "cpu": "workbench.backends.cpu.numba_cpu_target",
    "cuda": "workbench.backends.cuda.numba_cuda",
}


def register_target(kind: TargetKind) -> TargetKind:
    """Add (or replace) a target kind in the registry; returns it."""
    _REGISTRY[kind.name] = kind
    return kind


def unregister_target(name: str) -> None:
    """Remove a registered (non built-in) kind; a no-op when it is not registered."""
    if name in _BUILTIN_MODULES:
        raise ValueError(f"the built-in target {name!r} cannot be unregistered")
    _REGISTRY.pop(name, None)


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

    @property
    def recipe_target(self) -> str:
        """The target name whose recipes and tuning rules this target uses."""
        return self.kind.recipe_target

    @property
    def explore_target(self) -> Target:
        """The target the explorer builds for (the reference explores as ``cpu``)."""
        return Target(self.kind.explore_as) if self.kind.explore_as else self

    def hook(self, name: str) -> Callable | None:
        """The kind's hook ``name`` (``graph_schedule``, ``tuning_rules``, ``warnings``...),
        imported on first use when the registry names it ``"package.module:function"``
        (a backend names hooks of the layers above it without importing them); None when
        the kind has none."""
        value = getattr(self.kind, name)
        if isinstance(value, str):
            module, _, attr = value.partition(":")
            value = importlib.import_module(module)
            for part in attr.split("."):
                value = getattr(value, part)
        return value

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

    def __reduce__(self):
        # by name and options: the kind's module is imported again where it is unpickled
        return _target_from, (self.kind.module, self.name, dict(self.options))

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


def _target_from(module: str, name: str, options: dict) -> Target:
    if module and name not in _REGISTRY:
        importlib.import_module(module)
    return Target(name, **options)


def resolve_target(target: str | Target, where: str = "target", **options) -> Target:
    """``target`` (a name or a ``Target``) resolved once, at a public entry point.

    ``where`` names the caller in the error of an unknown name or a wrong type.

    Example
    -------
    >>> resolve_target("cpu") == resolve_target(Target("cpu"))
    True
    """
    if isinstance(target, Target):
        return target.with_options(**options) if options else target
    if not isinstance(target, str):
        raise TypeError(f"{where}: target must be a name or a Target, got {type(target).__name__}")
    try:
        return Target(target, **options)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def artifact_target(name) -> Target | None:
    """The target an artifact's manifest names, when it is a known target whose kind has an
    artifact format; None otherwise (an unknown or a non-exportable name: the caller
    reports it). Never imports anything but the built-in targets' modules."""
    if not isinstance(name, str) or name not in target_names():
        return None
    target = Target(name)
    return target if target.kind.artifact_format is not None else None


def target_name(target: str | Target) -> str:
    """The name of ``target`` (a ``Target`` or a name), for records and messages."""
    return target.name if isinstance(target, Target) else str(target)


def as_target(target: str | Target, options: Mapping[str, Any]) -> Target:
    """``target`` (a name or a ``Target``) as a ``Target`` with ``options`` applied."""
    if isinstance(target, Target):
        return target.with_options(**options) if options else target
    if not isinstance(target, str):
        raise TypeError(f"build: target must be a name or a Target, got {type(target).__name__}")
    return Target(target, **options)
