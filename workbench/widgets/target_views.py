"""What the explorer shows for each target kind: its views, supplied through the registry.

A target kind's ``explorer_views`` hook (``workbench.backends.common.target``) returns a
``TargetViews``: the generated source of the "code" tab, the machine code tabs, the
capacities a tile is compared with, why a target is not measured here (the CUDA
simulator), and the schedule the explorer opens on when it is given a bare function. The
explorer never branches on a target's name: a new target adds a function like
``cpu_views`` and names it in its registry entry; a kind without the hook gets
``generic_views`` (its built kernel's source, no machine code).

Example
-------
>>> from workbench.backends.common.target import Target
>>> views_for(Target("cuda")).capacities()
{'shared': 49152}
>>> views_for(Target("numpy")) == views_for(Target("cpu"))   # the reference explores as cpu
True
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from dataclasses import dataclass

from workbench.ir import PrimFunc


@dataclass(frozen=True)
class TargetViews:
    """The explorer's views of one target kind.

    Attributes
    ----------
    source : callable
        ``source(func) -> str``: the generated source of the "code" tab (raises the build's
        error, shown rendered).
    machine_code : callable
        ``machine_code(func) -> (html, html)``: the "LLVM IR / PTX" and "asm" tabs.
    capacities : callable
        ``capacities() -> dict``: what a tile's footprint is drawn against (cache levels or
        ``shared``), in bytes.
    not_measured : callable
        ``not_measured() -> str or None``: why kernels are not timed here (``None``: they are).
    opening : callable or None
        ``opening(func) -> (label, Schedule) or None``: a first schedule the explorer adds
        after the start node when opened on a bare function (a CUDA kernel must bind a
        loop to a GPU axis before it builds at all).
    """

    source: Callable[[PrimFunc], str]
    machine_code: Callable[[PrimFunc], tuple[str, str]]
    capacities: Callable[[], dict]
    not_measured: Callable[[], str | None] = lambda: None
    opening: Callable | None = None


def plain_html(text: str, language: str = "text") -> str:
    """Preformatted text (LLVM IR, assembly, PTX) in a monospace font, without highlighting."""
    return (f"<pre class='wb-{language}' style='font-size:11px;font-family:monospace'>"
            f"{html.escape(text)}</pre>")


def head(text: str, lines: int = 400) -> str:
    """The first ``lines`` lines of ``text``, with a note of how many more there are."""
    parts = text.splitlines()
    more = f"\n... ({len(parts) - lines} more lines)" if len(parts) > lines else ""
    return "\n".join(parts[:lines]) + more


def views_for(target) -> TargetViews:
    """The views of ``target`` (a ``Target``, or a name) as the explorer builds for it
    (``Target.explore_target``): its kind's ``explorer_views`` hook, else
    ``generic_views``; made once per target."""
    from workbench.backends.common.target import resolve_target

    return _views(resolve_target(target, "explore").explore_target)


@functools.cache
def _views(target) -> TargetViews:
    hook = target.hook("explorer_views")
    return hook(target) if hook is not None else generic_views(target)


def generic_views(target) -> TargetViews:
    """Views any target has: the built kernel's source, its caches, no machine code."""

    def source(func: PrimFunc) -> str:
        from workbench.backends import build

        return build(func, target=target).source or "# this target prints no source"

    def machine_code(func: PrimFunc) -> tuple[str, str]:
        note = f"<i>no machine code view for target {html.escape(target.name)}</i>"
        return note, note

    def capacities() -> dict:
        return dict(zip(("L1d", "L2", "L3"), target.device.cache_bytes, strict=False))

    return TargetViews(source, machine_code, capacities)


# --- cpu -------------------------------------------------------------------------------------


def cpu_views(target) -> TargetViews:
    """The ``cpu`` kind's views: Numba source, LLVM IR and assembly, this machine's caches."""

    def source(func: PrimFunc) -> str:
        from workbench.backends import lower_to_numba_source

        return lower_to_numba_source(func, target)  # the kind's passes: a cpu-made kind's own

    def machine_code(func: PrimFunc) -> tuple[str, str]:
        from workbench.backends import build

        kernel = build(func, target=target)  # served from the kernel cache when measured
        return plain_html(head(kernel.llvm), "llvm"), plain_html(head(kernel.asm), "asm")

    def capacities() -> dict:
        from workbench import viz

        return viz.cache_sizes()

    return TargetViews(source, machine_code, capacities)


# --- cuda ------------------------------------------------------------------------------------

SIMULATED = (
    "not measured: under the CUDA simulator the kernels run as Python (the CUDA source, "
    "drawing and warnings are shown)"
)


def cuda_views(target) -> TargetViews:
    """The ``cuda`` kind's views: the ``@cuda.jit`` source, PTX on a real GPU (a note under
    the simulator), a block's shared memory, and a bound opening schedule."""
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    def source(func: PrimFunc) -> str:
        from workbench.backends import lower
        from workbench.backends.cuda.numba_cuda import generate_cuda_source

        return generate_cuda_source(lower(func), target)

    def machine_code(func: PrimFunc) -> tuple[str, str]:
        from workbench.backends import build

        if simulator_enabled():
            note = (
                "<i class='wb-no-ptx'>no PTX under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1): "
                "nothing is compiled; the CUDA source is in the 'generated source' tab</i>"
            )
            return note, note
        from workbench.widgets.runner import random_inputs

        kernel = build(func, target=target)
        kernel(*random_inputs(func))  # Numba compiles on the first launch
        sass = "<i>SASS is not shown: read the PTX, or run cuobjdump on the cubin</i>"
        return plain_html(head(kernel.ptx), "ptx"), sass

    def capacities() -> dict:
        return {"shared": target.device.shared_memory_per_block}

    def not_measured() -> str | None:
        return SIMULATED if simulator_enabled() else None

    def opening(func: PrimFunc):
        """The graph's baseline binding rule (one thread per output element): a kernel that
        builds, and the simplest start (a compiled graph's default, ``graph_schedule``,
        applies the operators' recipes first, which would skip the lesson)."""
        from workbench.recipes.graph_cuda import cuda_schedule
        from workbench.schedule import ScheduleError

        try:
            return f"default binding ({target.name} graph rule)", cuda_schedule(func)
        except ScheduleError:
            return None

    return TargetViews(source, machine_code, capacities, not_measured, opening)
