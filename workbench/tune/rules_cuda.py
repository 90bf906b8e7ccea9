"""Generation rules for the ``cuda`` target (MetaSchedule's GPU rules, small).

``apply_cuda(sch, d, max_threads)`` runs, in order:

1. **inline** elementwise producers (``rules_common.inline_producers``);
2. **sample** every block's decisions in block order (one sampling instruction each);
3. **multi-level tiling with thread binding** of each reduction block with data reuse,
   structure ``SSRRS``: each spatial loop in 3 levels (``S0`` the CUDA block's tile,
   ``S1`` its threads, ``S2`` the thread's register tile, at most 8 wide), each reduction
   loop in 2 (``R0`` the staging step, ``R1`` the step within a stage: the k-step is the
   ``R1`` factor), ordered ``S0 S1 R0 R1 S2``; the ``S0`` loops fused and bound to
   ``blockIdx.x``, the ``S1`` loops fused and bound to ``threadIdx.x`` (a candidate with
   more threads than a block holds is refused with ``ThreadExtentError``: a failed
   trial); the accumulator ``cache_write(.., "local")`` with the write-back
   ``reverse_compute_at`` the thread loop (each thread keeps its ``S2`` tile local) and its
   init hoisted out of the reduction loops (``decompose_reduction``); then one categorical
   decision each (value 0, the first choice, is the default):

   * ``shared:<block>`` — stage (1) or not (0): every reused input whose indices are
     plain iterators (a matmul's ``A`` and ``B``, a convolution's weights)
     ``cache_read`` into ``shared`` memory at the last ``R0`` loop (the build inserts the
     barriers). The stage covers the CUDA block's tile; its copy loops are fused and
     spread over the block's threads (*cooperative fetch*: split by the thread count,
     bound to ``threadIdx.x``, a serial loop outside when the tile is larger);
   * ``vector:<block>`` — 128-bit accesses (1) or scalar (0): the innermost copy loop of
     each stage split by 4 and vectorized where its extent is a multiple of 4 (the build
     emits ``ld.global.v4`` where the address is provably aligned), and likewise the
     write-back of the register tile;
   * ``double_buffer:<block>`` — (1) every stage annotated ``double_buffer_scope`` (two
     halves, the next tile's copy issued before this tile's compute, one barrier per
     step; the build adds the register prefetch); only with staging and a staging loop
     of at least 2 iterations, else skipped;
   * ``fragment:<block>`` — (1) register fragments: each stage laid out with its
     reduction-indexed dimensions first (``A_shared[k, i]``: a thread's values of one
     ``k`` are contiguous) and ``cache_read`` into ``local`` at the innermost ``R1``
     loop, 4 at a time (``ld.shared.v4``) where the fragment's extent allows; only with
     staging;
   * ``unroll:<block>`` — (1) the ``S2`` loops unrolled (the register tile);
   * ``unroll_k:<block>`` — (1) the innermost ``R1`` loop unrolled in the generated source
     (``pragma_unroll_explicit``: NVVM keeps a large body rolled); skipped when its
     extent is 1.

   A choice that does not apply to a candidate (a stage that cannot be vectorized, double
   buffering without a stage) is skipped: the schedule stays legal and the candidate
   computes the same result.
4. **thread binding** of every other block: its spatial loops fused, split by
   ``tile:<block>:threads`` (``sample_perfect_tile``, the inner factor at most the block's
   thread limit, default the divisor nearest 256; the fuse happens while sampling, as the
   tile is a decision on the fused loop), outer ``blockIdx.x`` and inner
   ``threadIdx.x``; a reduction runs in each thread over its loops.

5. **every block bound**: a block the rules skipped (no spatial loop first, a loop bound
   to no iterator) is bound the graph's way (``recipes.graph_cuda.bind_block``), and a stage
   whose ``compute_at`` is illegal is undone rather than left at the root (a root-level
   statement is a kernel of its own, bound to no thread: ``UnboundKernelError``).

**Constraints between knobs** (``Decisions.require``, checked on the decisions alone by
``GeneratedSpace.valid``; the strategies and random draws propose only valid configs):
a tiled block's threads (the product of its ``S1`` factors) fit the block limit, its
shared stages (sized as the cooperative fetch allocates them, doubled when double
buffered) fit the shared memory per block, and its register tile with its fragments
(about ``S2`` product + sum + 56 registers per thread) fits 255 registers per thread and
the SM's 65536 for the whole block (else the launch fails, ``OUT_OF_RESOURCES``, as two
candidates did on the H200). So every sampled candidate passes the GPU verifier.

Each top-level loop nest becomes one kernel; intermediate buffers are global workspace.
This is the structure of the hand recipe ``matmul/register_blocked/cuda`` (which binds
2-D threads; here the thread loops are fused into ``threadIdx.x``). Not generated (yet):
rfactor into warp reductions.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from workbench.ir.expr import Var
from workbench.ir.stmt import IterKind
from workbench.recipes.graph_cuda import bind_block
from workbench.schedule import Schedule
from workbench.tune.rules_common import (
    BlockPlan,
    Decisions,
    attempt,
    blocks,
    has_reuse,
    inline_producers,
    is_reduction,
    legal,
    nests,
    reuse_reads,
    split_levels,
)

MAX_REGISTER_TILE = 8
MAX_STAGE = 32
LANES = 4  # a 128-bit access holds 4 float32
ON_OFF = [1, 0]  # the categorical knobs: 1 (default) on, 0 off
KNOBS = ("shared", "vector", "double_buffer", "fragment", "unroll", "unroll_k")


@dataclasses.dataclass
class _Plan(BlockPlan):
    choices: dict = dataclasses.field(default_factory=dict)  # knob -> 1 / 0


def _near(target: int):
    """Prefer a factor near ``target`` (log scale)."""
    return lambda value: abs(math.log2(value) - math.log2(target))


def _prefer_spatial(threads: int):
    """About ``threads`` threads (never more: the default must fit in a block) and an
    8-wide register tile per spatial loop (the hand recipe's 128 x 128 block tile of
    16 x 16 threads x 8 x 8 registers, where the extents allow)."""

    def score(tile: list[int]) -> float:
        over = 100.0 if tile[1] > threads else 0.0
        return over + _near(threads)(tile[1]) + _near(8)(tile[2])

    return score


def _threads_per_loop(n_spatial: int, max_threads: int) -> int:
    """16 threads per spatial loop, fewer when ``16 ** n_spatial`` exceeds the block:
    the largest power of 2 whose ``n_spatial``-th power fits in ``max_threads``."""
    per_loop = 16
    while per_loop > 1 and per_loop**n_spatial > max_threads:
        per_loop //= 2
    return per_loop


def _prefer_stage(tile: list[int]) -> float:
    return _near(8)(tile[1])


def _sample(sch: Schedule, plan: _Plan, d: Decisions, max_threads: int,
            limits: Limits) -> None:
    name = plan.name
    if plan.tiled:
        prefer = _prefer_spatial(_threads_per_loop(len(plan.spatial), max_threads))
        for loop in plan.spatial:
            plan.tiles[loop] = d.tile(
                sch,
                loop,
                3,
                f"tile:{name}:{sch.get(loop).loop_var.name}",
                MAX_REGISTER_TILE,
                prefer,
            )
        for loop in plan.reduce_:
            plan.tiles[loop] = d.tile(
                sch, loop, 2, f"tile:{name}:{sch.get(loop).loop_var.name}", MAX_STAGE, _prefer_stage
            )
        for knob in KNOBS:
            plan.choices[knob] = d.categorical(sch, ON_OFF, f"{knob}:{name}")
        d.require(_fits(sch, plan, max_threads, limits))
        return
    fused = sch.fuse(*plan.spatial) if len(plan.spatial) > 1 else plan.spatial[0]
    plan.spatial = [fused]
    plan.tiles[fused] = d.tile(
        sch, fused, 2, f"tile:{name}:threads", max_threads, lambda t: _near(256)(t[1])
    )


# --- staging helpers -------------------------------------------------------------------


def _extent(sch: Schedule, loop) -> int:
    return int(sch.get(loop).extent.value)


def _plain_reads(node, indices: list[int]) -> list[int]:
    """The reads among ``indices`` indexed by plain iterators only (safe to stage)."""
    return [i for i in indices if all(isinstance(r.min, Var) for r in node.reads[i].region)]


def _loops_below(sch: Schedule, block, at) -> list:
    """The loops of ``block`` inside loop ``at`` (a stage's own copy loops)."""
    loops = sch.get_loops(block)
    names = [sch.get(lp).loop_var.name for lp in loops]
    return loops[names.index(sch.get(at).loop_var.name) + 1 :]


def _vectorize_innermost(sch: Schedule, loops: list) -> list:
    """Split the innermost of ``loops`` by 4 and vectorize the lanes, when its extent is a
    multiple of 4; returns the loops left to spread (the lanes excluded)."""
    if not loops or _extent(sch, loops[-1]) % LANES:
        return loops
    parts = attempt(sch.split, loops[-1], factors=[None, LANES])
    if parts is None:
        return loops
    if not legal(sch.vectorize, parts[1]):
        return [*loops[:-1], *parts]
    return [*loops[:-1], parts[0]]


def _cooperative_fetch(sch: Schedule, stage, at, threads: int, vector: bool) -> None:
    """Spread the copy loops of ``stage`` (inside loop ``at``) over the block's ``threads``:
    fused, split ``[None, threads]``, the inner part bound to ``threadIdx.x``; with
    ``vector`` the innermost copy loop first gives a 4-wide vectorized loop."""
    loops = _loops_below(sch, stage, at)
    if vector:
        loops = _vectorize_innermost(sch, loops)
    if not loops:
        return
    fused = loops[0] if len(loops) == 1 else attempt(sch.fuse, *loops)
    if fused is None:
        return
    parts = attempt(sch.split, fused, factors=[None, threads])
    if parts is not None:
        attempt(sch.bind, parts[1], "threadIdx.x")


def _reduction_first(node, index: int) -> str | None:
    """Index-map text putting the dimensions of read ``index`` that a reduction iterator
    indexes first (``lambda d0, d1: (d1, d0)`` for a matmul's ``A[i, k]``), or None when
    the last dimension is already spatial (``B[k, j]``) or all are reductions."""
    kinds = {iv.var.name: iv.kind for iv in node.iter_vars}
    region = node.reads[index].region
    reduce_dims = [n for n, r in enumerate(region) if kinds.get(r.min.name) == IterKind.REDUCE]
    if not reduce_dims or reduce_dims[-1] != len(region) - 1 or len(reduce_dims) == len(region):
        return None
    order = reduce_dims + [n for n in range(len(region)) if n not in reduce_dims]
    names = [f"d{n}" for n in range(len(region))]
    return f"lambda {', '.join(names)}: ({', '.join(names[n] for n in order)})"


def _stage(sch: Schedule, plan: _Plan, c, index: int, at, threads: int):
    """Stage read ``index`` of block ``c`` in shared memory at loop ``at`` (the last
    ``R0`` loop), with the fragment's layout and the cooperative fetch. Returns
    ``(stage, located)``: the stage (None if illegal) and whether it sits at ``at`` (a
    stage left at the root is correct, but neither cooperative nor double-bufferable)."""
    node = sch.get(c)
    layout = _reduction_first(node, index) if plan.choices["fragment"] else None
    staged = attempt(sch.cache_read, c, index, "shared")
    if staged is None:
        return None, False
    if not legal(sch.compute_at, staged, at):
        sch.undo()  # a stage left at the root would be a kernel of its own, unbound
        return None, False
    if layout is not None:
        attempt(sch.transform_layout, staged, ("write", 0), layout)
    _cooperative_fetch(sch, staged, at, threads, bool(plan.choices["vector"]))
    return staged, True


def _fragment(sch: Schedule, c, index: int, inner_r) -> None:
    """Read ``index`` of ``c`` (now a shared stage) into registers at loop ``inner_r``,
    4-wide where the fragment's innermost extent allows."""
    fragment = attempt(sch.cache_read, c, index, "local")
    if fragment is None:
        return
    if not legal(sch.compute_at, fragment, inner_r):
        sch.undo()  # a local copy at the root would be an unbound kernel of its own
        return
    _vectorize_innermost(sch, _loops_below(sch, fragment, inner_r))


def _apply_tiled(sch: Schedule, plan: _Plan) -> None:
    c, choices = plan.block, plan.choices
    levels_s = split_levels(sch, plan.spatial, plan.tiles, 3)
    levels_r = split_levels(sch, plan.reduce_, plan.tiles, 2)
    sch.reorder(*levels_s[0], *levels_s[1], *levels_r[0], *levels_r[1], *levels_s[2])
    bx = sch.fuse(*levels_s[0]) if len(levels_s[0]) > 1 else levels_s[0][0]
    tx = sch.fuse(*levels_s[1]) if len(levels_s[1]) > 1 else levels_s[1][0]
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    threads = _extent(sch, tx)
    local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(local, tx)
    if choices["vector"]:
        _vectorize_innermost(sch, _loops_below(sch, local, tx))
    stages, located = [], True
    if choices["shared"] and levels_r[0]:
        node = sch.get(c)
        for index in _plain_reads(node, reuse_reads(node)):
            staged, at_step = _stage(sch, plan, c, index, levels_r[0][-1], threads)
            if staged is not None:
                stages.append((index, staged))
                located = located and at_step
    refills = stages and located and _extent(sch, levels_r[0][-1]) >= 2
    if choices["double_buffer"] and refills:
        for _, staged in stages:
            sch.annotate(staged, "double_buffer_scope", 0)
    if choices["fragment"] and levels_r[1]:
        for index, _ in stages:
            _fragment(sch, c, index, levels_r[1][-1])
    if choices["unroll"]:
        for loop in levels_s[2]:
            if _extent(sch, loop) > 1:
                attempt(sch.unroll, loop)
    if choices["unroll_k"] and levels_r[1] and _extent(sch, levels_r[1][-1]) > 1:
        if legal(sch.unroll, levels_r[1][-1]):
            sch.annotate(levels_r[1][-1], "pragma_unroll_explicit", 1)
    if levels_r[0]:
        attempt(sch.decompose_reduction, c, levels_r[0][0])


def _apply_simple(sch: Schedule, plan: _Plan) -> None:
    fused = plan.spatial[0]
    bx, tx = sch.split(fused, factors=plan.tiles[fused])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def apply_cuda(sch: Schedule, d: Decisions, max_threads: int = 1024,
               limits: Limits | None = None) -> None:
    """Run the CUDA rules on ``sch`` (see the module docstring)."""
    limits = limits or Limits()
    inline_producers(sch)
    plans = []
    for nest in nests(sch):
        spatial, node = nest.spatial, nest.node
        if not spatial or nest.kinds[: len(spatial)] != ["S"] * len(spatial):
            continue  # no spatial loop to bind, or spatial loops under a reduction
        tiled = is_reduction(node) and has_reuse(node)
        plan = _Plan(nest.block, node.name, tiled, spatial, nest.reduce)
        _sample(sch, plan, d, max_threads, limits)
        plans.append(plan)
    for plan in plans:
        if plan.tiled:
            _apply_tiled(sch, plan)
        else:
            _apply_simple(sch, plan)
    _bind_the_rest(sch)


# --- what every candidate satisfies ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Limits:
    """The device limits a candidate must fit (``DeviceFacts`` plus a register file):
    static shared memory per block and 32-bit registers per SM (a block whose threads
    need more registers than the SM has fails to launch, ``LAUNCH_OUT_OF_RESOURCES``)."""

    shared_memory_per_block: int = 48 * 1024
    registers_per_block: int = 65536
    registers_per_thread: int = 255


REGISTER_OVERHEAD = 56
"""Registers a tiled thread needs beside its accumulators and fragments (indices,
pointers, the prefetch): the H200 build of the 8 x 8 tile used 121-123 in all."""


def _stage_elements(dims: list[int], threads: int, lanes: int) -> int:
    """Elements a cooperative-fetch stage of ``dims`` allocates: the fused copy loop is
    split by ``threads`` (and ``lanes`` when vectorized) with a guard, and the region
    analysis sizes the leading dimension from the unguarded range."""
    elements = math.prod(dims)
    rest = elements // dims[0]
    covered = -(-elements // (threads * lanes)) * threads * lanes
    return max(elements, -(-covered // rest) * rest)


def _stage_dims(node, index: int, extent_of: dict, fragment: bool) -> list[int]:
    """The extents of read ``index``'s stage (one block's tile), in its stage layout."""
    kinds = {iv.var.name: iv.kind for iv in node.iter_vars}
    region = node.reads[index].region
    dims = [extent_of.get(r.min.name, 1) for r in region]
    if fragment and _reduction_first(node, index) is not None:
        first = [n for n, r in enumerate(region) if kinds.get(r.min.name) == IterKind.REDUCE]
        dims = [dims[n] for n in first] + [dims[n] for n in range(len(dims)) if n not in first]
    return dims


def _fits(sch: Schedule, plan: _Plan, max_threads: int, limits: Limits):
    """The constraint of tiled block ``plan``: its threads fit a block, its shared stages
    the block's shared memory, its register tile the register file (checked on the
    decisions alone, without scheduling: the strategies filter thousands of configs)."""
    from workbench.tune.rules_common import iter_var_of_loop

    name, block = plan.name, plan.block
    node = sch.get(block)
    knob = {lp: f"tile:{name}:{sch.get(lp).loop_var.name}" for lp in plan.spatial + plan.reduce_}
    spatial = [(iter_var_of_loop(sch, block, lp), knob[lp]) for lp in plan.spatial]
    reduce_ = [(iter_var_of_loop(sch, block, lp), knob[lp]) for lp in plan.reduce_]
    reads = _plain_reads(node, reuse_reads(node))
    itemsize = {i: np.dtype(node.reads[i].buffer.dtype).itemsize for i in reads}

    def check(config: dict) -> str | None:
        threads = math.prod(config[k][1] for _, k in spatial)
        if threads > max_threads:
            return f"{name}: {threads} threads per block, more than {max_threads}"
        register_tile = [config[k][2] for _, k in spatial]
        registers = math.prod(register_tile) + sum(register_tile) + REGISTER_OVERHEAD
        if registers > limits.registers_per_thread:
            return f"{name}: about {registers} registers per thread"
        if registers * threads > limits.registers_per_block:
            return (f"{name}: {threads} threads x about {registers} registers, more than the "
                    f"{limits.registers_per_block} of an SM")
        if not config[f"shared:{name}"] == 0 or not reduce_:  # 0 is "on"
            return None
        extent_of = {v: config[k][1] * config[k][2] for v, k in spatial}
        extent_of.update({v: config[k][1] for v, k in reduce_})
        fragment = config[f"fragment:{name}"] == 0
        lanes = LANES if config[f"vector:{name}"] == 0 else 1
        halves = 2 if config[f"double_buffer:{name}"] == 0 and config[reduce_[-1][1]][0] >= 2 \
            else 1
        used = 0
        for index in reads:
            dims = _stage_dims(node, index, extent_of, fragment)
            vector = lanes if dims[-1] % LANES == 0 else 1
            elements = max(_stage_elements(dims, threads, 1),
                           _stage_elements(dims, threads, vector))
            used += elements * itemsize[index] * halves
        if used > limits.shared_memory_per_block:
            return (f"{name}: {used} bytes of shared stages, more than "
                    f"{limits.shared_memory_per_block}")
        return None

    return check


def _bind_the_rest(sch: Schedule) -> None:
    """Bind every block still outside any thread loop the graph's way (its spatial loops
    fused and split over ``blockIdx.x`` / ``threadIdx.x``): a block the rules skip (no
    spatial loop first, a loop bound to no iterator) must still be a kernel, not a
    statement on one thread (``UnboundKernelError``)."""
    for block in blocks(sch):
        loops = sch.get_loops(block)
        if any(sch.get(lp).thread_binding for lp in loops):
            continue
        attempt(bind_block, sch, sch.get(block).name)


def cuda_rules(sch: Schedule, d: Decisions, target) -> None:
    """The ``cuda`` kind's ``tuning_rules``: ``apply_cuda`` within ``target``'s device's
    thread and shared-memory limits."""
    facts = target.device
    limits = Limits(shared_memory_per_block=facts.shared_memory_per_block)
    apply_cuda(sch, d, facts.max_threads_per_block, limits)
