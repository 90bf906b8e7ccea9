"""Generated spaces (MetaSchedule style): rules over any PrimFunc, decisions as knobs.

``GeneratedSpace(func)`` applies these rules to a fresh ``Schedule`` of ``func``, in order:

1. **inline elementwise producers**: a block with spatial iterators only, writing an
   intermediate buffer, is ``compute_inline``-d into its consumers where legal;
2. **multi-level tiling** of every block with a reduction and data reuse (some input does not
   depend on every iterator, as in a matmul or a convolution), CPU structure ``SSRSRS``: each
   spatial loop in 4 levels and each reduction loop in 2 (``sample_perfect_tile``), ordered
   ``S0 S1 R0 S2 R1 S3``; the accumulator tile ``S3`` under ``R1`` is kept in registers by
   the backend's ``promote`` pass (the ``cache_write`` that MetaSchedule adds here);
3. **parallel outer loops**: the outermost ``S0`` loops fused and made parallel (every other
   block: its outermost spatial loop), or left serial (``sample_categorical``: a parallel
   region costs more than small work gains from it);
4. **vectorize inner loops**: the innermost spatial loop (``S3`` of the last spatial axis, or
   the inner part of a split of a non-tiled block's last loop, ``sample_perfect_tile`` n=2);
5. **unroll**: ``sample_categorical`` over {none, the innermost non-vectorized tile loop}.

Every random choice is a sampling instruction (``sch.sample_perfect_tile`` /
``sch.sample_categorical``) whose *decision* is recorded in the trace; the space's knobs are
these decisions (named ``tile:<block>:<loop>``, ``parallel:<block>``, ``unroll:<block>``),
so a configuration is a list of decisions, and mutating one decision and replaying the
rules gives a new candidate (the strategies do exactly this). A rule a block does not
admit (an illegal primitive) is skipped, leaving the schedule as it was.

Not generated yet: packing (cache_read + transform_layout), compute_at fusion of
non-elementwise producers, the ``cuda`` rules (thread binding, shared-memory staging).
"""

from __future__ import annotations

from workbench.ir.expr import Var
from workbench.ir.functor import collect
from workbench.ir.stmt import IterKind
from workbench.schedule import Schedule, ScheduleError
from workbench.tune.space import SearchSpace
from workbench.tune.space_template import perfect_tiles

MAX_INNERMOST = 64
UNROLL_CHOICES = [0, 1]  # 0: no unroll, 1: unroll the innermost non-vectorized tile loop
PARALLEL_CHOICES = [1, 0]  # 1: the outer loop parallel (the default), 0: serial (small work)


class _Decisions:
    """Knob discovery (``config=None``: record domains, take the first value) or replay."""

    def __init__(self, config: dict | None):
        self.config = config
        self.domains: dict[str, list] = {}
        self.chosen: dict[str, object] = {}

    def tile(self, sch: Schedule, loop, n: int, name: str) -> list[int]:
        extent = int(sch.get(loop).extent.value)
        values = perfect_tiles(extent, n, MAX_INNERMOST)
        self.domains[name] = values
        decision = values[_default_tile(values)] if self.config is None else self.config[name]
        self.chosen[name] = list(decision)
        if hasattr(sch, "sample_perfect_tile"):
            return sch.sample_perfect_tile(loop, n=n, max_innermost_factor=MAX_INNERMOST,
                                           decision=list(decision))
        return list(decision)

    def categorical(self, sch: Schedule, candidates: list[int], name: str) -> int:
        self.domains[name] = list(range(len(candidates)))
        index = 0 if self.config is None else self.config[name]
        self.chosen[name] = index
        if hasattr(sch, "sample_categorical"):
            probs = [1.0 / len(candidates)] * len(candidates)
            return sch.sample_categorical(candidates, probs, decision=index)
        return candidates[index]


def _default_tile(values: list[list[int]]) -> int:
    """A middling first guess: the tiling closest to equal factors."""
    import math

    def spread(tile):
        logs = [math.log2(f) for f in tile]
        return max(logs) - min(logs)

    return min(range(len(values)), key=lambda i: spread(values[i]))


def _try(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ScheduleError:
        return None


def _block_loops(sch: Schedule, block):
    """(loops, kinds): the block's loops and, per loop, "S"/"R" (None if not 1-1)."""
    loops = sch.get_loops(block)
    node = sch.get(block)
    realize_values = _iter_values(sch, block)
    kinds = []
    for loop in loops:
        var = sch.get(loop).loop_var
        kind = None
        for iv, value in zip(node.iter_vars, realize_values, strict=False):
            if isinstance(value, Var) and value.name == var.name:
                kind = "R" if iv.kind == IterKind.REDUCE else "S"
        kinds.append(kind)
    return loops, kinds


def _iter_values(sch: Schedule, block):
    from workbench.ir.stmt import BlockRealize

    name = sch.get(block).name
    for realize in collect(sch.mod.body, lambda n: isinstance(n, BlockRealize)):
        if realize.block.name == name:
            return realize.iter_values
    return ()


def _has_reuse(block_node) -> bool:
    """Some read does not depend on every iterator (a matmul's A ignores j)."""
    iters = {iv.var.name for iv in block_node.iter_vars}
    written = {w.buffer.name for w in block_node.writes}
    for region in block_node.reads:
        if region.buffer.name in written:  # the accumulator itself is not reuse
            continue
        used = set()
        for r in region.region:
            used |= {v.name for v in collect(r.min, lambda n: isinstance(n, Var))}
        if used and not iters <= used:
            return True
    return False


def _is_reduction(block_node) -> bool:
    return any(iv.kind == IterKind.REDUCE for iv in block_node.iter_vars)


def _blocks(sch: Schedule) -> list:
    from workbench.ir.analysis import find_blocks

    return [sch.get_block(b.name) for b in find_blocks(sch.mod) if b.name != "root"]


def _inline_producers(sch: Schedule) -> None:
    params = {p.name for p in sch.mod.params}
    for block in _blocks(sch):
        node = sch.get(block)
        if _is_reduction(node) or any(w.buffer.name in params for w in node.writes):
            continue
        _try(sch.compute_inline, block)


def _tile_block(sch: Schedule, block, loops, kinds, d: _Decisions) -> None:
    name = sch.get(block).name
    spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
    reduce_ = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
    levels_s, levels_r = [[], [], [], []], [[], []]
    for loop in spatial:
        tile = d.tile(sch, loop, 4, f"tile:{name}:{sch.get(loop).loop_var.name}")
        for level, part in enumerate(sch.split(loop, factors=tile)):
            levels_s[level].append(part)
    for loop in reduce_:
        tile = d.tile(sch, loop, 2, f"tile:{name}:{sch.get(loop).loop_var.name}")
        for level, part in enumerate(sch.split(loop, factors=tile)):
            levels_r[level].append(part)
    order = levels_s[0] + levels_s[1] + levels_r[0] + levels_s[2] + levels_r[1] + levels_s[3]
    sch.reorder(*order)
    outer = levels_s[0]
    fused = sch.fuse(*outer) if len(outer) > 1 else outer[0]
    if d.categorical(sch, PARALLEL_CHOICES, f"parallel:{name}"):
        _try(sch.parallel, fused)
    inner = levels_s[3][-1]
    if int(sch.get(inner).extent.value) > 1:
        _try(sch.vectorize, inner)
    unroll = d.categorical(sch, UNROLL_CHOICES, f"unroll:{name}")
    candidates = [lp for lp in levels_s[3][:-1] if int(sch.get(lp).extent.value) > 1]
    if unroll and candidates:
        _try(sch.unroll, candidates[-1])


def _simple_block(sch: Schedule, block, loops, kinds, d: _Decisions) -> None:
    name = sch.get(block).name
    spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
    if not spatial:
        return
    if (len(spatial) > 1 or kinds[-1] == "S") and d.categorical(
        sch, PARALLEL_CHOICES, f"parallel:{name}"
    ):
        _try(sch.parallel, spatial[0])
    last = loops[-1]
    if kinds[-1] == "S" and len(spatial) > 1 and int(sch.get(last).extent.value) > 1:
        tile = d.tile(sch, last, 2, f"tile:{name}:{sch.get(last).loop_var.name}")
        _, inner = sch.split(last, factors=tile)
        if tile[-1] > 1:
            _try(sch.vectorize, inner)


def apply_rules(func, config: dict | None) -> tuple[Schedule, _Decisions]:
    """Run the rules; returns the schedule and its decisions (domains met on the way, and
    the values chosen: ``config``'s, or middling defaults when ``config`` is None)."""
    d = _Decisions(config)
    sch = Schedule(func)
    _inline_producers(sch)
    for block in _blocks(sch):
        node = sch.get(block)
        loops, kinds = _block_loops(sch, block)
        if not loops or None in kinds:
            continue
        if _is_reduction(node) and _has_reuse(node):
            _tile_block(sch, block, loops, kinds, d)
        else:
            _simple_block(sch, block, loops, kinds, d)
    return sch, d


class GeneratedSpace(SearchSpace):
    """The rule-generated space of any PrimFunc (see the module docstring).

    Example
    -------
    >>> space = GeneratedSpace(ops.matmul(64, 64, 64))         # doctest: +SKIP
    >>> space.knobs                                             # doctest: +SKIP
    ['tile:C:i', 'tile:C:j', 'tile:C:k', 'parallel:C', 'unroll:C']
    """

    kind = "generated"

    def __init__(self, func, name: str = "generated"):
        super().__init__(func, name)
        _, decisions = apply_rules(func, None)
        self._domains = decisions.domains
        self._defaults = decisions.chosen

    def default_config(self) -> dict:
        """Middling tilings (factors as equal as possible), no unrolling; pins kept."""
        return {k: self.pinned.get(k, v) for k, v in self._defaults.items()}

    def _schedule(self, config: dict) -> Schedule:
        return apply_rules(self.func, config)[0]
