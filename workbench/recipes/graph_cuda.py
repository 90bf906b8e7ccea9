"""CUDA schedules by rule: thread binding for every loop nest of a graph kernel.

On the ``cuda`` target every top-level loop nest is one kernel launch and must bind a loop
to a thread axis (``cuda_verify``). The rule, per block (each block of a lowered kernel is
its own nest; nothing is moved with ``compute_at``, so intermediates are global scratch):

1. the spatial loops move outside the reduction loops (``reorder``; a no-op for the
   library's operators, which list them first);
2. the spatial loops are fused into one (``fuse``) and split by ``THREADS`` (a guard
   ``T.where`` covers a remainder);
3. the outer part is bound to ``blockIdx.x``, the inner to ``threadIdx.x``: one thread per
   output element, each running its reduction loops serially.

The elementwise epilogue ``out`` of a group is first inlined into a purely spatial head
(``reverse_compute_inline``), saving a launch; after a reduction it stays a launch of its
own. This is the simple, always-legal baseline (no shared memory, no register tiles): the
graph's default (``graph_schedule``) first tries the operators' ``cuda`` recipes through
``workbench.recipes.graph_cuda_ops`` and falls back to this rule.

Example
-------
>>> from workbench import ops
>>> sch = cuda_schedule(ops.softmax(4, 8))
>>> "threadIdx.x" in sch.mod.script()
True
"""

from __future__ import annotations

import math

from workbench.ir.analysis import find_blocks
from workbench.ir.stmt import IterKind
from workbench.schedule import Schedule, ScheduleError

THREADS = 64
"""Threads per block (a multiple of the warp size; small, so simulator tests stay quick)."""


GRAPH_THREADS = 256
"""Threads per block of the baseline in a compiled graph (``graph_schedule``)."""


def _extent(sch: Schedule, loop) -> int:
    return int(sch.get(loop).extent.value)


def bind_block(sch: Schedule, name: str, threads: int = THREADS) -> None:
    """Steps 1-3 of the module docstring for block ``name``."""
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    info = next(b for b in find_blocks(sch.mod) if b.name == name)
    kinds = [iv.kind for iv in info.iter_vars]
    if len(kinds) == len(loops):
        spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == IterKind.SPATIAL]
        reduce = [lp for lp, k in zip(loops, kinds, strict=True) if k != IterKind.SPATIAL]
        if reduce and spatial and loops[:len(spatial)] != spatial:
            sch.reorder(*spatial, *reduce)
    else:
        spatial = loops[:1]
    if not spatial:
        spatial = loops[:1]
    fused = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
    total = _extent(sch, fused)
    inner = min(threads, total)
    outer, thread = sch.split(fused, factors=[math.ceil(total / inner), inner])
    sch.bind(outer, "blockIdx.x")
    sch.bind(thread, "threadIdx.x")


def cuda_schedule(func, threads: int = THREADS) -> Schedule:
    """Every block of ``func`` bound to threads (see the module docstring).

    Raises ``ScheduleError`` when a block cannot be bound (the kernel then has no CUDA
    schedule by rule; give one with ``compiled.reschedule``).
    """
    sch = Schedule(func)
    names = [b.name for b in find_blocks(func)]
    if "out" in names and len(names) > 1:
        head = find_blocks(func)[-2]
        if all(iv.kind == IterKind.SPATIAL for iv in head.iter_vars):
            try:
                sch.reverse_compute_inline(sch.get_block("out"))
            except ScheduleError:
                pass
    for name in [b.name for b in find_blocks(sch.mod)]:
        bind_block(sch, name, threads)
    return sch


def graph_schedule(func, target=None, parallel: bool = True) -> Schedule:
    """The ``cuda`` kind's ``graph_schedule`` hook: the operator's ``cuda`` recipe where a
    rule of ``workbench.recipes.graph_cuda_ops`` takes the kernel (tiled matmul, row
    kernels, attention rows, ``v4`` elementwise), else ``cuda_schedule`` (``parallel`` is a
    CPU notion: every CUDA kernel is parallel)."""
    from workbench.recipes.graph_cuda_ops import recipe_schedule

    sch = recipe_schedule(func)
    return sch if sch is not None else cuda_schedule(func, GRAPH_THREADS)


__all__ = ["GRAPH_THREADS", "THREADS", "bind_block", "cuda_schedule", "graph_schedule"]
