"""What every target's generation rules share: decisions, block analysis, inlining.

A rule never draws a random number itself: each choice is a sampling instruction
(``sch.sample_perfect_tile`` / ``sch.sample_categorical``) recorded in the trace with its
*decision*. ``Decisions`` hands the rules their values: on discovery (``config=None``)
it records each knob's domain and takes a middling default; on replay it takes the
configuration's value. The rules sample every knob unconditionally and in a fixed order
(the order the blocks and their loops appear), so the sampling steps of any candidate's
trace line up one to one with the space's knobs (``GeneratedSpace.config_of(trace)``).

Helpers here answer questions about blocks (``block_loops``: which loops are spatial or
reduction; ``has_reuse``: does some input ignore a spatial iterator, as a matmul's ``A``
ignores ``j``) and implement the rule both targets start with, ``inline_producers``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from workbench.ir.expr import Var
from workbench.ir.functor import collect
from workbench.ir.stmt import BlockRealize, IterKind
from workbench.schedule import Schedule
from workbench.schedule.attempt import applies, attempt  # noqa: F401 - the rules' helpers
from workbench.schedule.sampling import prime_factors


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending (from its prime factors: fast for ``2**24``)."""
    out = [1]
    for p in sorted(set(prime_factors(n))):
        power = prime_factors(n).count(p)
        out = [d * p**e for d in out for e in range(power + 1)]
    return sorted(out)


def tiles(extent: int, n: int, max_innermost: int | None = None,
          min_innermost: int = 1) -> list[list[int]]:
    """Every ``n``-factor perfect tiling of ``extent`` (outermost first), innermost
    ascending, the innermost at least ``min_innermost`` and at most ``max_innermost``.

    Example
    -------
    >>> tiles(4, 2)
    [[4, 1], [2, 2], [1, 4]]
    >>> tiles(4, 2, min_innermost=2)
    [[2, 2], [1, 4]]
    """
    if n == 1:
        return [[extent]]
    out = []
    for inner in divisors(extent):
        if max_innermost and inner > max_innermost:
            break
        if inner < min_innermost:
            continue
        for rest in tiles(extent // inner, n - 1):
            out.append(rest + [inner])
    return out


def spread(tile: list[int]) -> float:
    """How unequal a tiling's factors are (log2 of the largest over the smallest)."""
    logs = [math.log2(f) for f in tile]
    return max(logs) - min(logs)


class Decisions:
    """Knob discovery (``config=None``: record domains, take the default) or replay.

    ``domains`` and ``chosen`` are filled in sampling order; ``order`` is that order.
    """

    def __init__(self, config: dict | None):
        self.config = config
        self.domains: dict[str, list] = {}
        self.chosen: dict[str, object] = {}
        self.weights: dict[str, list[float]] = {}
        self.constraints: list[Callable[[dict], str | None]] = []

    @property
    def order(self) -> list[str]:
        return list(self.domains)

    def tile(self, sch: Schedule, loop, n: int, name: str, max_innermost: int | None = 64,
             prefer: Callable[[list[int]], float] = spread,
             weight: Callable[[list[int]], float] | None = None,
             min_innermost: int = 1) -> list[int]:
        """A perfect tile of ``loop`` in ``n`` factors: ``sample_perfect_tile`` with the
        decision (the default: the tiling ``prefer`` scores lowest). ``weight`` gives each
        tiling's relative probability when the space draws a random candidate (default:
        all equal); ``min_innermost`` bounds the innermost factor from below."""
        extent = int(sch.get(loop).extent.value)
        values = tiles(extent, n, max_innermost, min_innermost)
        self.domains[name] = values
        if weight is not None:
            self.weights[name] = [float(weight(v)) for v in values]
        if self.config is None:
            decision = min(values, key=prefer)
        else:
            decision = self.config[name]
        limit = max_innermost if max_innermost else -1  # TVM's "no limit"
        tile = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=limit,
                                       decision=list(decision))
        self.chosen[name] = list(tile)
        return tile

    def require(self, check: Callable[[dict], str | None]) -> None:
        """Record a constraint between knobs: ``check(config)`` returns None when
        ``config`` satisfies it, else why not (the space never samples such a config)."""
        self.constraints.append(check)

    def violation(self, config: dict) -> str | None:
        """The first recorded constraint ``config`` breaks (None: it satisfies all)."""
        for check in self.constraints:
            reason = check(config)
            if reason is not None:
                return reason
        return None

    def categorical(self, sch: Schedule, candidates: list[int], name: str,
                    default: int = 0, weights: list[float] | None = None) -> int:
        """One of ``candidates`` (their index is the knob's value): ``sample_categorical``
        with probabilities ``weights`` normalised (default: all equal), which random
        draws of the space follow."""
        self.domains[name] = list(range(len(candidates)))
        index = default if self.config is None else self.config[name]
        self.chosen[name] = index
        weights = weights or [1.0] * len(candidates)
        probs = [w / sum(weights) for w in weights]
        if len(set(probs)) > 1:
            self.weights[name] = list(weights)
        return sch.sample_categorical(list(candidates), probs, decision=index)


@dataclasses.dataclass
class BlockPlan:
    """One block's place in a rule-generated schedule: its handle, name, whether it is
    tiled, its spatial and reduction loops, and the tile decisions sampled for them (each
    target's rules add their own decisions in a subclass)."""

    block: object
    name: str
    tiled: bool
    spatial: list
    reduce_: list
    tiles: dict = dataclasses.field(default_factory=dict)


legal = applies
"""Apply a primitive; False (the schedule unchanged) when it is illegal here
(``workbench.schedule.attempt.applies``)."""


def blocks(sch: Schedule) -> list:
    """Handles of every block but the root, in program order."""
    from workbench.ir.analysis import find_blocks

    return [sch.get_block(b.name) for b in find_blocks(sch.mod) if b.name != "root"]


def iter_values(sch: Schedule, block) -> tuple:
    name = sch.get(block).name
    for realize in collect(sch.mod.body, lambda n: isinstance(n, BlockRealize)):
        if realize.block.name == name:
            return realize.iter_values
    return ()


def block_loops(sch: Schedule, block) -> tuple[list, list]:
    """(loops, kinds): the block's loops and per loop "S" / "R" (None: not bound 1-1)."""
    loops = sch.get_loops(block)
    node = sch.get(block)
    values = iter_values(sch, block)
    kinds = []
    for loop in loops:
        var = sch.get(loop).loop_var
        kind = None
        for iv, value in zip(node.iter_vars, values, strict=False):
            if isinstance(value, Var) and value.name == var.name:
                kind = "R" if iv.kind == IterKind.REDUCE else "S"
        kinds.append(kind)
    return loops, kinds


@dataclasses.dataclass
class Nest:
    """A block whose loops all bind one iterator each, split by kind (``kinds``: "S"/"R")."""

    block: object
    node: object
    kinds: list[str]
    spatial: list
    reduce: list


def nests(sch: Schedule) -> list[Nest]:
    """The blocks (program order) whose every loop binds one of their iterators 1-1."""
    found = []
    for block in blocks(sch):
        loops, kinds = block_loops(sch, block)
        if not loops or None in kinds:
            continue
        spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
        reduce_ = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
        found.append(Nest(block, sch.get(block), kinds, spatial, reduce_))
    return found


def split_levels(sch: Schedule, loops: list, tiles: dict, levels: int) -> list[list]:
    """Split each loop by ``tiles[loop]`` (``levels`` factors) and group the parts by level:
    ``result[0]`` holds every loop's outermost part, ``result[-1]`` every innermost."""
    grouped: list[list] = [[] for _ in range(levels)]
    for loop in loops:
        for level, part in enumerate(sch.split(loop, factors=tiles[loop])):
            grouped[level].append(part)
    return grouped


def iter_var_of_loop(sch: Schedule, block, loop) -> str | None:
    """The name of the block iterator bound to ``loop`` (None if not bound 1-1)."""
    node = sch.get(block)
    var = sch.get(loop).loop_var.name
    for iv, value in zip(node.iter_vars, iter_values(sch, block), strict=False):
        if isinstance(value, Var) and value.name == var:
            return iv.var.name
    return None


def _vars_of(expr) -> set[str]:
    return {v.name for v in collect(expr, lambda n: isinstance(n, Var))}


def is_reduction(node) -> bool:
    return any(iv.kind == IterKind.REDUCE for iv in node.iter_vars)


def reuse_reads(node) -> list[int]:
    """Indices (into ``node.reads``) of inputs that ignore some spatial iterator: each
    element is read again for every value of that iterator (data reuse)."""
    spatial = {iv.var.name for iv in node.iter_vars if iv.kind != IterKind.REDUCE}
    written = {w.buffer.name for w in node.writes}
    out = []
    for index, region in enumerate(node.reads):
        if region.buffer.name in written:  # the accumulator itself
            continue
        used = set().union(*(_vars_of(r.min) for r in region.region))
        if used and not spatial <= used:
            out.append(index)
    return out


def has_reuse(node) -> bool:
    """A reduction worth multi-level tiling: some input ignores a spatial iterator (a
    matmul's ``A`` ignores ``j``, ``B`` ignores ``i``). A softmax's row sum does not
    qualify: its row statistic ignores only the reduction iterator."""
    return bool(reuse_reads(node))


def packable_read(node, vector_var: str) -> tuple[int, int] | None:
    """(read index, dimension) of the reused operand worth packing into panels: an input
    that ignores some spatial iterator and whose dimension ``dim`` is indexed by the
    vectorized iterator ``vector_var`` alone (a matmul's ``B[k, j]``, dimension 1)."""
    for index in reuse_reads(node):
        region = node.reads[index].region
        if len(region) < 2:
            continue
        for dim, r in enumerate(region):
            if isinstance(r.min, Var) and r.min.name == vector_var and dim == len(region) - 1:
                return index, dim
    return None


def panel_map(ndim: int, dim: int, width: int) -> str:
    """Index-map text packing dimension ``dim`` into ``width``-wide panels, panel index
    first: ``lambda d0, d1: (d1 // 16, d0, d1 % 16)`` for ``(2, 1, 16)``."""
    names = [f"d{i}" for i in range(ndim)]
    rest = [n for i, n in enumerate(names) if i != dim]
    result = [f"{names[dim]} // {width}", *rest, f"{names[dim]} % {width}"]
    return f"lambda {', '.join(names)}: ({', '.join(result)})"


def inline_producers(sch: Schedule) -> None:
    """Inline every elementwise block writing an intermediate buffer into its consumers
    (where legal: a producer a consumer reads in a reduction stays)."""
    params = {p.name for p in sch.mod.params}
    for block in blocks(sch):
        node = sch.get(block)
        if is_reduction(node) or any(w.buffer.name in params for w in node.writes):
            continue
        attempt(sch.compute_inline, block)
