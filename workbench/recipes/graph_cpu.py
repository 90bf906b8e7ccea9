"""Default schedules by rule, per target, for the kernels of a lowered graph (``wb.compile``).

``default_schedule(func, target)`` asks the target's kind (its ``graph_schedule`` hook,
``workbench.backends.common.target``):

- ``cuda``: thread binding rules (``workbench.recipes.graph_cuda.cuda_schedule``);
- ``cpu``: a kernel whose head is a library operator with a recipe (packed matmul,
  fused softmax, fused layernorm, attention by rows) gets that recipe
  (``workbench.recipes.graph_cpu_ops``); every other kernel gets the generic rules below
  (``cpu_schedule``);
- a kind without the hook (``numpy``): the generic rules without annotations.

Generic rules (each step is tried; a primitive that does not apply raises ``ScheduleError``
and the schedule stays as it was):

- contractions and window reductions (blocks ``C``, ``matmul``, ``conv2d_*``, ``pool_*``,
  ``scores``, ``attention``): the last spatial loop moves inside the reduction loops
  (``reorder``), so the innermost loop walks contiguous output and operand rows (LLVM
  vectorizes it) instead of a strided dot product;
- the elementwise ``out`` block of a group moves under the head block's last spatial loop
  before its reductions (``reverse_compute_at``), or is inlined into a purely spatial head
  (``reverse_compute_inline``): the epilogue runs on each output row while it is in cache;
- contractions: the init moves out of the reduction loops (``decompose_reduction``), so the
  inner loop has no ``k == 0`` test and vectorizes;
- cpu: every top-level nest doing at least ``PARALLEL_WORK`` iterations gets its leading
  loops fused until the extent reaches 16, then ``parallel``; smaller nests stay serial
  (starting Numba's thread pool costs more than they do). The innermost loop of every
  purely spatial block is vectorized.

``wb.compile(schedules=...)`` may instead name a tuning-records path
(``workbench.graph.compiler.records_schedule``).
"""

from __future__ import annotations

import math

from workbench.backends.common.target import resolve_target
from workbench.ir.analysis import find_blocks
from workbench.ir.stmt import IterKind
from workbench.schedule import Schedule
from workbench.schedule.attempt import LOOKUP_REFUSALS, attempt

MIN_PARALLEL = 16
PARALLEL_WORK = 1 << 18
CONTRACTIONS = ("C", "matmul", "conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d_nchw",
                "pool_max", "pool_sum", "scores", "attention")


def _try(step, *args, **kwargs):
    return attempt(step, *args, refusals=LOOKUP_REFUSALS, **kwargs)


def _extent(sch: Schedule, loop) -> int:
    value = getattr(sch.get(loop).extent, "value", None)
    return int(value) if isinstance(value, int) else MIN_PARALLEL


def _leading_spatial(block) -> int:
    count = 0
    for iv in block.iter_vars:
        if iv.kind != IterKind.SPATIAL:
            break
        count += 1
    return count


def default_schedule(func, target="cpu", *, parallel: bool = True) -> Schedule:
    """The rule-based schedule of one kernel for ``target`` (see the module docstring).

    Example
    -------
    >>> from workbench import ops
    >>> sch = default_schedule(ops.matmul(128, 128, 128), "cpu")
    >>> "cache_write" in str(sch.trace)    # the register-tile recipe
    True
    """
    target = resolve_target(target, "default_schedule")
    rules = target.hook("graph_schedule")
    if rules is None:
        return generic_schedule(func, annotate=False)
    return rules(func, target, parallel)


def cpu_schedule(func, target=None, parallel: bool = True) -> Schedule:
    """The ``cpu`` kind's ``graph_schedule``: the operator's recipe where one applies
    (``workbench.recipes.graph_cpu_ops``), else the generic rules with annotations."""
    from workbench.recipes.graph_cpu_ops import recipe_schedule

    sch = recipe_schedule(func, parallel)
    if sch is not None:
        return sch
    return generic_schedule(func, annotate=True, parallel=parallel)


def generic_schedule(func, *, annotate: bool = True, parallel: bool = True) -> Schedule:
    """The generic rules of the module docstring (no recipe); ``annotate=False`` leaves out
    the vectorize and parallel annotations (the reference target's)."""
    sch = Schedule(func)
    blocks = find_blocks(func)
    names = [b.name for b in blocks]
    for block in blocks:
        spatial = _leading_spatial(block)
        loops = _try(sch.get_loops, sch.get_block(block.name))
        if block.name in CONTRACTIONS and loops and 0 < spatial < len(loops):
            _try(sch.reorder, *loops[spatial:], loops[spatial - 1])
    if "out" in names and len(names) > 1:
        head = blocks[-2]
        spatial = _leading_spatial(head)
        if head.name in CONTRACTIONS and spatial < len(head.iter_vars):
            spatial -= 1  # the last spatial loop now sits inside the reductions
        loops = _try(sch.get_loops, sch.get_block(head.name))
        if spatial == len(head.iter_vars):
            _try(sch.reverse_compute_inline, sch.get_block("out"))
        elif loops and 0 < spatial < len(loops):
            _try(sch.reverse_compute_at, sch.get_block("out"), loops[spatial - 1])
    for block in blocks:
        if block.name in CONTRACTIONS and block.init is not None:
            spatial = _leading_spatial(block)
            loops = _try(sch.get_loops, sch.get_block(block.name))
            if loops and 0 < spatial < len(loops):
                _try(sch.decompose_reduction, sch.get_block(block.name), loops[spatial - 1])
    if not annotate:
        return sch
    _vectorize_spatial(sch)
    if not parallel:
        return sch
    done = set()
    for name in names:  # (a block inlined above, such as "out", is gone: skipped)
        loops = _try(lambda name=name: sch.get_loops(sch.get_block(name)))
        if not loops or loops[0] in done:
            continue
        extents = [_extent(sch, loop) for loop in loops]
        if math.prod(extents) < PARALLEL_WORK:
            continue
        extent, outer, index = extents[0], loops[0], 1
        while extent < MIN_PARALLEL and index < len(loops) - 1:
            fused = _try(sch.fuse, outer, loops[index])
            if fused is None:
                break
            outer, extent = fused, extent * extents[index]
            index += 1
        _try(sch.parallel, outer)
        done.add(outer)
    return sch


def _vectorize_spatial(sch: Schedule) -> None:
    """Vectorize the innermost loop of every purely spatial block (extent >= 4)."""
    for block in find_blocks(sch.mod):
        if any(iv.kind != IterKind.SPATIAL for iv in block.iter_vars):
            continue
        loops = _try(sch.get_loops, sch.get_block(block.name))
        if loops and _extent(sch, loops[-1]) >= 4:
            _try(sch.vectorize, loops[-1])

