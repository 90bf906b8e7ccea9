"""Generation rules for the ``cuda`` target (MetaSchedule's GPU rules, small).

``apply_cuda(sch, d, max_threads)`` runs, in order:

1. **inline** elementwise producers (``rules_common.inline_producers``);
2. **sample** every block's decisions in block order (one sampling instruction each);
3. **multi-level tiling with thread binding** of each reduction block with data reuse,
   structure ``SSRRS``: each spatial loop in 3 levels (``S0`` per CUDA block, ``S1`` per
   thread, ``S2`` the thread's register tile, at most 8 wide), each reduction loop in 2
   (``R0`` the staging step, ``R1`` within a stage), ordered ``S0 S1 R0 R1 S2``; the
   ``S0`` loops fused and bound to ``blockIdx.x``, the ``S1`` loops fused and bound to
   ``threadIdx.x`` (a candidate with more threads than a block holds is refused with
   ``ThreadExtentError``: a failed trial); then

   * the accumulator: ``cache_write(.., "local")`` with the write-back
     ``reverse_compute_at`` the thread loop (each thread keeps its ``S2`` tile local);
   * ``shared:<block>`` — 1 (the default): every reused input whose indices are plain
     iterators (a matmul's ``A`` and ``B``, a convolution's weights) ``cache_read`` into
     ``shared`` memory and ``compute_at`` the last ``R0`` loop (the build inserts the
     barriers); 0: read from global memory;
   * ``unroll:<block>`` — 1 (the default): the ``S2`` loops unrolled (the register tile);
     0: left as loops;

4. **thread binding** of every other block: its spatial loops fused, split by
   ``tile:<block>:threads`` (``sample_perfect_tile``, the inner factor at most the block's
   thread limit, default the divisor nearest 256; the fuse happens while sampling, as the
   tile is a decision on the fused loop), outer ``blockIdx.x`` and inner
   ``threadIdx.x``; a reduction runs in each thread over its loops.

Each top-level loop nest becomes one kernel; intermediate buffers are global workspace.
Not generated (yet): cooperative fetch of shared tiles, vectorized loads, rfactor into
warp reductions, double buffering.
"""

from __future__ import annotations

import dataclasses
import math

from workbench.ir.expr import Var
from workbench.schedule import Schedule
from workbench.tune.rules_common import (
    Decisions,
    attempt,
    block_loops,
    blocks,
    has_reuse,
    inline_producers,
    is_reduction,
    reuse_reads,
)

MAX_REGISTER_TILE = 8
MAX_STAGE = 32
SHARED_CHOICES = [1, 0]  # 1: stage reused inputs in shared memory (default), 0: global
UNROLL_CHOICES = [1, 0]  # 1: unroll the register tile (default), 0: loops


@dataclasses.dataclass
class _Plan:
    block: object
    name: str
    tiled: bool
    spatial: list
    reduce_: list
    tiles: dict = dataclasses.field(default_factory=dict)
    shared: int = 0
    unroll: int = 0


def _near(target: int):
    """Prefer a factor near ``target`` (log scale)."""
    return lambda value: abs(math.log2(value) - math.log2(target))


def _prefer_spatial(tile: list[int]) -> float:
    """About 16 threads and a 4-wide register tile per spatial loop."""
    return _near(16)(tile[1]) + _near(4)(tile[2])


def _prefer_stage(tile: list[int]) -> float:
    return _near(8)(tile[1])


def _sample(sch: Schedule, plan: _Plan, d: Decisions, max_threads: int) -> None:
    name = plan.name
    if plan.tiled:
        for loop in plan.spatial:
            plan.tiles[loop] = d.tile(sch, loop, 3, f"tile:{name}:{sch.get(loop).loop_var.name}",
                                      MAX_REGISTER_TILE, _prefer_spatial)
        for loop in plan.reduce_:
            plan.tiles[loop] = d.tile(sch, loop, 2, f"tile:{name}:{sch.get(loop).loop_var.name}",
                                      MAX_STAGE, _prefer_stage)
        plan.shared = d.categorical(sch, SHARED_CHOICES, f"shared:{name}")
        plan.unroll = d.categorical(sch, UNROLL_CHOICES, f"unroll:{name}")
        return
    fused = sch.fuse(*plan.spatial) if len(plan.spatial) > 1 else plan.spatial[0]
    plan.spatial = [fused]
    plan.tiles[fused] = d.tile(sch, fused, 2, f"tile:{name}:threads", max_threads,
                               lambda t: _near(256)(t[1]))


def _plain_reads(node, indices: list[int]) -> list[int]:
    """The reads among ``indices`` indexed by plain iterators only (safe to stage)."""
    return [i for i in indices
            if all(isinstance(r.min, Var) for r in node.reads[i].region)]


def _apply_tiled(sch: Schedule, plan: _Plan) -> None:
    c = plan.block
    levels_s, levels_r = [[], [], []], [[], []]
    for loop in plan.spatial:
        for level, part in enumerate(sch.split(loop, factors=plan.tiles[loop])):
            levels_s[level].append(part)
    for loop in plan.reduce_:
        for level, part in enumerate(sch.split(loop, factors=plan.tiles[loop])):
            levels_r[level].append(part)
    sch.reorder(*levels_s[0], *levels_s[1], *levels_r[0], *levels_r[1], *levels_s[2])
    bx = sch.fuse(*levels_s[0]) if len(levels_s[0]) > 1 else levels_s[0][0]
    tx = sch.fuse(*levels_s[1]) if len(levels_s[1]) > 1 else levels_s[1][0]
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(local, tx)
    if plan.shared and levels_r[0]:
        node = sch.get(c)
        for index in _plain_reads(node, reuse_reads(node)):
            staged = attempt(sch.cache_read, c, index, "shared")
            if staged is not None:
                attempt(sch.compute_at, staged, levels_r[0][-1])
    if plan.unroll:
        for loop in levels_s[2]:
            if int(sch.get(loop).extent.value) > 1:
                attempt(sch.unroll, loop)


def _apply_simple(sch: Schedule, plan: _Plan) -> None:
    fused = plan.spatial[0]
    bx, tx = sch.split(fused, factors=plan.tiles[fused])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def apply_cuda(sch: Schedule, d: Decisions, max_threads: int = 1024) -> None:
    """Run the CUDA rules on ``sch`` (see the module docstring)."""
    inline_producers(sch)
    plans = []
    for block in blocks(sch):
        node = sch.get(block)
        loops, kinds = block_loops(sch, block)
        if not loops or None in kinds:
            continue
        spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
        reduce_ = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
        if not spatial or kinds[: len(spatial)] != ["S"] * len(spatial):
            continue  # no spatial loop to bind, or spatial loops under a reduction
        tiled = is_reduction(node) and has_reuse(node)
        plan = _Plan(block, node.name, tiled, spatial, reduce_)
        _sample(sch, plan, d, max_threads)
        plans.append(plan)
    for plan in plans:
        if plan.tiled:
            _apply_tiled(sch, plan)
        else:
            _apply_simple(sch, plan)
