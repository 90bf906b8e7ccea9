"""Generation rules for the ``cpu`` target (MetaSchedule's llvm rules, small).

``apply_cpu(sch, d, lanes)`` runs, in order:

1. **inline** elementwise producers (``rules_common.inline_producers``);
2. **sample** every block's decisions (``Decisions``: one sampling instruction each), in
   block order, before anything moves, so the knobs are the same for every candidate;
3. **multi-level tiling** of each reduction block with data reuse, structure ``SSRSRS``:
   each spatial loop in 4 levels, each reduction loop in 2, ordered
   ``S0 S1 R0 S2 R1 S3``; the ``S0`` loops fused into one outer loop (when it is to be
   parallel and has fewer than ``JOBS_PER_CORE`` iterations per core, the ``S1`` loops
   are fused into it, outermost first, until it has enough, except with ``pack`` 2, whose
   per-tile panels would then be written by several threads: MetaSchedule's parallel
   rule fuses outer loops the same way). The innermost tile of the last spatial loop is
   the vectorized one: its domain starts at the vector lanes (where the extent has such a
   divisor up to ``MAX_INNERMOST``), and random draws favour tilings that make it a
   multiple of the lanes (``VECTOR_BIAS``) and the parallel outer loop
   (``PARALLEL_BIAS``). Around it, two categorical knobs:

   * ``write_cache:<block>`` — 0: none (the backend's ``promote`` pass still keeps an
     accumulator in registers where it can); 1: ``cache_write(.., "local")`` with the
     write-back ``reverse_compute_at`` the last ``S1`` loop (the fused outer loop if all
     were fused into it), so the ``S2 x S3`` output tile
     is accumulated locally over the whole reduction;
   * ``pack:<block>`` (only where an input is reused and indexed by the vectorized
     iterator in its last dimension, a matmul's ``B[k, j]``) — 0: no packing; 1:
     ``cache_read`` the operand into a global copy laid out in ``S3``-wide panels
     (``transform_layout``: ``(k, j) -> (j // w, k, j % w)``) before the loop nest; 2: the
     same copy ``compute_at`` the fused outer loop, one panel per outer tile (where that is
     legal; else it stays whole);

4. **compute location** (``compute_at:<block>``) of every other block writing an
   intermediate buffer: 0 at the root, 1 at its consumer's outermost loop with its
   buffer ``local`` (a softmax's row statistics computed per row), last producer first;
5. **rfactor** (``rfactor:<block>``) of a row reduction whose extent is a multiple of the
   reduction lanes (``cpu_facts.reduction_lanes``: a vector register and at least a cache
   line of partials, 16 float32, since LLVM turns an 8-lane unrolled ``max`` back into
   scalar code): 1 splits the reduction by them, ``rfactor``s the inner part into as many
   local partial results updated by vector instructions (decomposed inits);
6. **annotations**: the outermost loop of each root loop nest ``parallel``
   (``parallel:<block>``: 1 parallel, 0 serial), the innermost spatial tile (``S3`` of the
   last spatial iterator, or the inner part of a ``tile:<block>:<loop>`` split of a
   non-tiled block's last loop) ``vectorize``-d, and ``unroll:<block>`` (0: none, 1: the
   innermost non-vectorized ``S3`` loop unrolled).

A rule a block does not admit (an illegal primitive) is skipped, leaving the schedule as
it was, so every configuration gives a legal schedule.
"""

from __future__ import annotations

import dataclasses

from workbench.backends.cpu.cpu_facts import reduction_lanes
from workbench.schedule import Schedule
from workbench.tune.rules_common import (
    BlockPlan,
    Decisions,
    attempt,
    divisors,
    has_reuse,
    inline_producers,
    is_reduction,
    iter_var_of_loop,
    legal,
    nests,
    packable_read,
    panel_map,
    split_levels,
    spread,
)

MAX_INNERMOST = 64
MAX_INNER_REDUCE = None  # [1, K] (no split) must be reachable: it is the fastest on 1024
PARALLEL_CHOICES = [1, 0]  # 1: the outer loop parallel (the default), 0: serial
UNROLL_CHOICES = [0, 1]  # 0: no unroll, 1: the innermost non-vectorized tile loop
WRITE_CACHE_CHOICES = [0, 1]  # 0: none, 1: local accumulator at the S1 level
PACK_CHOICES = [0, 1, 2]  # 0: none, 1: whole operand before the nest, 2: per outer tile
COMPUTE_AT_CHOICES = [0, 1]  # 0: root, 1: at the consumer's outermost loop
RFACTOR_CHOICES = [0, 1]  # 0: serial reduction, 1: rfactor into vector lanes
VECTOR_BIAS = 4.0  # random draws favour a vectorized tile of whole vectors this much
PARALLEL_BIAS = 3.0  # and a parallel outer loop (with several cores) this much
JOBS_PER_CORE = 2  # a parallel loop fuses outer tile loops until it has this many per core


@dataclasses.dataclass
class _Plan(BlockPlan):
    """One block's decisions (sampled) and, once applied, the loops to annotate."""

    parallel: int = 0
    unroll: int = 0
    write_cache: int = 0
    pack: int = 0
    pack_read: tuple | None = None
    compute_at: int = 0
    rfactor: int = 0
    reduction_lanes: int = 0
    moved: bool = False
    outer: object = None
    vector: object = None
    unroll_loop: object = None


def _vector_prefer(lanes: int):
    """Default for the vectorized loop's tiling: the innermost a multiple of the lanes,
    then factors as equal as possible."""
    return lambda tile: (tile[-1] % lanes != 0, spread(tile))


def _vector_weight(lanes: int):
    """Sampling weight of the vectorized loop's tilings: ``VECTOR_BIAS`` times likelier
    with the innermost a multiple of the lanes (whole vectors, no scalar remainder)."""
    return lambda tile: VECTOR_BIAS if tile[-1] % lanes == 0 else 1.0


def _vector_min(extent: int, lanes: int) -> int:
    """Least innermost factor of the vectorized loop's tiling: the lanes where a divisor
    of ``extent`` from the lanes to ``MAX_INNERMOST`` exists (a vector loop shorter than
    one register wastes lanes), else the widest divisor there is (7 of a 7-wide loop)."""
    fitting = [d for d in divisors(extent) if d <= MAX_INNERMOST]
    return lanes if any(d >= lanes for d in fitting) else max(fitting)


def _parallel_weights() -> list[float] | None:
    """With several cores, random draws take the parallel outer loop ``PARALLEL_BIAS``
    times as often as the serial one."""
    return [PARALLEL_BIAS, 1.0] if host_cores() > 1 else None


def host_cores() -> int:
    """The cores this process may run on (the parallel loops' threads; ``machine_facts()``)."""
    from workbench.backends.common.machine import machine_facts

    return machine_facts().cores


def _sample_tiled(sch: Schedule, plan: _Plan, d: Decisions, lanes: int) -> None:
    node = sch.get(plan.block)
    name = plan.name
    for loop in plan.spatial:
        knob = f"tile:{name}:{sch.get(loop).loop_var.name}"
        if loop != plan.spatial[-1]:
            plan.tiles[loop] = d.tile(sch, loop, 4, knob, MAX_INNERMOST)
            continue
        extent = int(sch.get(loop).extent.value)
        plan.tiles[loop] = d.tile(sch, loop, 4, knob, MAX_INNERMOST, _vector_prefer(lanes),
                                  _vector_weight(lanes), _vector_min(extent, lanes))
    for loop in plan.reduce_:
        plan.tiles[loop] = d.tile(sch, loop, 2, f"tile:{name}:{sch.get(loop).loop_var.name}",
                                  MAX_INNER_REDUCE)
    plan.write_cache = d.categorical(sch, WRITE_CACHE_CHOICES, f"write_cache:{name}")
    vector_var = iter_var_of_loop(sch, plan.block, plan.spatial[-1])
    plan.pack_read = packable_read(node, vector_var) if vector_var else None
    if plan.pack_read is not None:
        plan.pack = d.categorical(sch, PACK_CHOICES, f"pack:{name}")
    plan.parallel = d.categorical(sch, PARALLEL_CHOICES, f"parallel:{name}",
                                  weights=_parallel_weights())
    plan.unroll = d.categorical(sch, UNROLL_CHOICES, f"unroll:{name}")


def _sample_simple(sch: Schedule, plan: _Plan, d: Decisions, lanes: int, params: set,
                   kinds: list) -> None:
    node = sch.get(plan.block)
    name = plan.name
    writes_intermediate = all(w.buffer.name not in params for w in node.writes)
    if writes_intermediate:
        plan.compute_at = d.categorical(sch, COMPUTE_AT_CHOICES, f"compute_at:{name}")
    if len(plan.reduce_) == 1 and kinds[-1] == "R":
        extent = int(sch.get(plan.reduce_[0]).extent.value)
        plan.reduction_lanes = reduction_lanes(str(node.writes[0].buffer.dtype))
        if extent % plan.reduction_lanes == 0 and extent > plan.reduction_lanes:
            plan.rfactor = d.categorical(sch, RFACTOR_CHOICES, f"rfactor:{name}")
    if plan.spatial:
        plan.parallel = d.categorical(sch, PARALLEL_CHOICES, f"parallel:{name}",
                                      weights=_parallel_weights())
    last = sch.get_loops(plan.block)[-1]
    extent = int(sch.get(last).extent.value)
    if kinds[-1] == "S" and len(plan.spatial) > 1 and extent > 1:
        plan.tiles[last] = d.tile(sch, last, 2, f"tile:{name}:{sch.get(last).loop_var.name}",
                                  MAX_INNERMOST, _vector_prefer(lanes), _vector_weight(lanes),
                                  _vector_min(extent, lanes))


def _apply_tiled(sch: Schedule, plan: _Plan, cores: int) -> None:
    """Multi-level tiling with the write cache and the packed operand (rule 3)."""
    c = plan.block
    packed = None
    if plan.pack:
        packed = sch.cache_read(c, plan.pack_read[0], "global")
    local = sch.cache_write(c, 0, "local") if plan.write_cache else None
    levels_s = split_levels(sch, plan.spatial, plan.tiles, 4)
    levels_r = split_levels(sch, plan.reduce_, plan.tiles, 2)
    sch.reorder(*levels_s[0], *levels_s[1], *levels_r[0], *levels_s[2], *levels_r[1],
                *levels_s[3])
    outer = levels_s[0]
    plan.outer = sch.fuse(*outer) if len(outer) > 1 else outer[0]
    middle = list(levels_s[1])
    if plan.parallel and plan.pack != 2:  # enough outer iterations per core: fuse S1 in
        # (not with a panel packed per outer tile: tiles sharing a panel would race on it)
        while middle and int(sch.get(plan.outer).extent.value) < JOBS_PER_CORE * cores:
            plan.outer = sch.fuse(plan.outer, middle.pop(0))
    if local is not None:
        attempt(sch.reverse_compute_at, local, middle[-1] if middle else plan.outer)
    if packed is not None:
        if plan.pack == 2:
            attempt(sch.compute_at, packed, plan.outer)
        width = plan.tiles[plan.spatial[-1]][-1]
        ndim = len(sch.get(packed).writes[0].region)
        attempt(sch.transform_layout, packed, ("write", 0),
                panel_map(ndim, plan.pack_read[1], width))
        attempt(sch.vectorize, sch.get_loops(packed)[-1])
    plan.vector = levels_s[3][-1]
    inner = [lp for lp in levels_s[3][:-1] if int(sch.get(lp).extent.value) > 1]
    plan.unroll_loop = inner[-1] if inner else None


def _consumer_loop(sch: Schedule, plan: _Plan):
    """The outermost loop of the block's first consumer, from the dependence analysis
    (``get_consumers``: the ``BlockScope``'s read-after-write edges, in program order)."""
    consumers = sch.get_consumers(plan.block)
    if not consumers:
        return None
    loops = sch.get_loops(consumers[0])
    return loops[0] if loops else None


def _apply_compute_at(sch: Schedule, plan: _Plan) -> None:
    loop = _consumer_loop(sch, plan)
    if loop is None or not legal(sch.compute_at, plan.block, loop):
        return
    plan.moved = True
    for index in range(len(sch.get(plan.block).writes)):
        attempt(sch.set_scope, plan.block, index, "local")


def _apply_rfactor(sch: Schedule, plan: _Plan, lanes: int) -> None:
    """Rule 5, as ``recipes.softmax.vectorize_row_reduction`` does it by hand."""
    blk = plan.block
    reduce_loop = sch.get_loops(blk)[-1]
    parts = attempt(sch.split, reduce_loop, factors=[None, lanes])
    if parts is None:
        return
    rf = attempt(sch.rfactor, parts[1], 0)
    if rf is None:
        return
    attempt(sch.set_scope, rf, 0, "local")
    depth = len(sch.get_loops(rf)) - 2
    attempt(sch.decompose_reduction, rf, sch.get_loops(rf)[depth])
    attempt(sch.vectorize, sch.get_loops(rf)[-1])
    attempt(sch.decompose_reduction, blk, sch.get_loops(blk)[depth])


def _apply_simple(sch: Schedule, plan: _Plan, lanes: int) -> None:
    if plan.rfactor:
        _apply_rfactor(sch, plan, plan.reduction_lanes)
    for loop, tile in plan.tiles.items():
        _, inner = sch.split(loop, factors=tile)
        if tile[-1] > 1:
            plan.vector = inner
    loops = sch.get_loops(plan.block)
    plan.outer = loops[0] if loops else None


def apply_cpu(sch: Schedule, d: Decisions, lanes: int, cores: int | None = None) -> None:
    """Run the CPU rules on ``sch`` (see the module docstring); ``cores`` default: the
    host's."""
    cores = cores or host_cores()
    inline_producers(sch)
    params = {p.name for p in sch.mod.params}
    plans = []
    for nest in nests(sch):
        node = nest.node
        tiled = is_reduction(node) and has_reuse(node) and bool(nest.spatial)
        plan = _Plan(nest.block, node.name, tiled, nest.spatial, nest.reduce)
        if tiled:
            _sample_tiled(sch, plan, d, lanes)
        else:
            _sample_simple(sch, plan, d, lanes, params, nest.kinds)
        plans.append(plan)
    for plan in plans:
        if plan.tiled:
            _apply_tiled(sch, plan, cores)
    for plan in reversed(plans):
        if not plan.tiled and plan.compute_at:
            _apply_compute_at(sch, plan)
    for plan in plans:
        if not plan.tiled:
            _apply_simple(sch, plan, lanes)
    for plan in plans:
        _annotate(sch, plan)


def _annotate(sch: Schedule, plan: _Plan) -> None:
    if plan.parallel and plan.outer is not None and not plan.moved:
        attempt(sch.parallel, plan.outer)
    if plan.vector is not None and int(sch.get(plan.vector).extent.value) > 1:
        attempt(sch.vectorize, plan.vector)
    if plan.unroll and plan.unroll_loop is not None:
        attempt(sch.unroll, plan.unroll_loop)


def cpu_rules(sch: Schedule, d: Decisions, target) -> None:
    """The ``cpu`` kind's ``tuning_rules``: ``apply_cpu`` with ``target``'s vector lanes for
    the output's dtype."""
    from workbench.backends.cpu.cpu_facts import target_vector_lanes

    apply_cpu(sch, d, target_vector_lanes(target, sch.mod.params[-1].dtype))
