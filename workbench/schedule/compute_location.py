"""Schedule primitives of the compute location family: ``compute_at``,
``reverse_compute_at``, ``compute_inline``, ``reverse_compute_inline``
(see README.md for the file's shape).

``compute_at`` moves a producer under a loop of its consumers and computes there only the
region they read at one iteration of that loop; ``reverse_compute_at`` moves a consumer
under a loop of its producers and computes there what they produced. Both infer regions
the way TVM does: the accesses of the blocks under the loop are *relaxed* over the loops
inside it (a loop variable is replaced by its range), which gives, for each iteration of
the loop, an interval per buffer dimension in terms of the loops at and around it. The
moved block gets new loops ``ax0, ax1, ...`` covering that interval, its bindings become
``interval_min + ax``, and a ``T.where`` keeps it inside its domain where the interval may
stick out. The two inlining primitives substitute a pure injective block's expression
into its consumer (``compute_inline``) or its consumer's into it
(``reverse_compute_inline``); the regions come from ``compute_location_regions``.

The pure functions take and return ``PrimFunc`` s and block/loop names; the
``ComputeLocationMethods`` mixin gives ``Schedule`` its methods.
"""

from __future__ import annotations

import itertools
import math

from workbench.ir import Block, BufferStore, IterKind, PrimFunc, Var, collect, const_value
from workbench.ir.arith import evaluate, int_bounds
from workbench.schedule import compute_location_regions as regions
from workbench.schedule.compute_location_regions import (
    ScopeInfo,
    check_movable,
    realize_of,
)
from workbench.schedule.errors import ScheduleError
from workbench.schedule.errors_compute_location import (
    AccumulationRecomputedError,
    ConsumerDomainNotCoveredError,
    DependenceViolationError,
    InlineReductionError,
    LoopContainsBlockError,
    NoConsumersError,
    NoProducersError,
    NotAncestorOfConsumerError,
    NotAncestorOfProducerError,
    NotInSameScopeError,
    NotSingleStoreError,
    OutputBlockError,
    PartialReductionError,
    ProducerAfterConsumerError,
    ProducerHasOtherConsumersError,
    ReadNotBijectiveError,
    ReductionProducerError,
    RegionNotCoveredError,
    SelfReadError,
    SeveralProducersError,
    SeveralReadIndicesError,
    StoreIndicesNotIterVarsError,
    UnboundedRegionError,
)
from workbench.schedule.handles import BlockRV, LoopRV
from workbench.schedule.trace import AttrSpec, InstructionKind, register_instruction
from workbench.schedule.tree import describe_stmt, find_loop, loop_names

# ---------------------------------------------------------------------------------------
# Shared checks
# ---------------------------------------------------------------------------------------


def _check_loop(primitive: str, func: PrimFunc, scope: ScopeInfo, block: Block, loop: str):
    """The target loop and its ancestors: in the block's scope and not around the block."""
    target, ancestors = find_loop(func, loop, primitive)
    if regions.scope_block(ancestors) is not scope.block:
        raise NotInSameScopeError(primitive, block.name, loop, func, target)
    if any(a is target for a in scope.ancestors_of(block.name)):
        raise LoopContainsBlockError(primitive, block.name, loop, func, target)
    return target, ancestors


def _first_output(func: PrimFunc, block: Block) -> str | None:
    params = {p for p in func.params}
    for region in block.writes:
        if region.buffer in params:
            return region.buffer.name
    return None


def _check_passed_over(
    primitive: str, func: PrimFunc, moved: Block, others: list[Block], node
) -> None:
    """``moved`` will run later (compute_at) or earlier (reverse) than ``others``: none of
    them may write what it reads, or touch what it writes."""
    reads, writes = regions.buffers(moved.reads), regions.buffers(moved.writes)
    for other in others:
        o_reads, o_writes = regions.buffers(other.reads), regions.buffers(other.writes)
        for buffer in sorted(o_writes & reads, key=lambda b: b.name):
            why = (
                f"{other.name!r} writes {buffer.name!r}, which {moved.name!r} reads, and would "
                f"be reordered with {moved.name!r}"
            )
            raise DependenceViolationError(
                primitive, moved.name, other.name, buffer.name, why, func, node
            )
        for buffer in sorted((o_writes | o_reads) & writes, key=lambda b: b.name):
            why = (
                f"{other.name!r} accesses {buffer.name!r}, which {moved.name!r} writes, and "
                f"would be reordered with {moved.name!r}"
            )
            raise DependenceViolationError(
                primitive, moved.name, other.name, buffer.name, why, func, node
            )


# ---------------------------------------------------------------------------------------
# compute_at
# ---------------------------------------------------------------------------------------


def compute_at(
    func: PrimFunc, block: str, loop: str, *, preserve_unit_loops: bool = False
) -> PrimFunc:
    """Move producer ``block`` under ``loop`` (a loop around all its consumers), computing
    there only the region the consumers read at one iteration of ``loop``.

    Before (``compute_at(func, "B", "i")``)::

        for i_0, j_0 in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i_0, j_0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i, j])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)

    After::

        for i in range(16):
            for ax0 in range(16):
                with T.block("B"):
                    vi = T.axis.spatial(16, i)
                    vj = T.axis.spatial(16, ax0)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j in range(16):
                with T.block("C"): ...

    The consumers' reads of the produced buffers under ``loop``, with the loops inside
    ``loop`` relaxed over their ranges, give an interval per dimension; the producer's
    iter vars that index those dimensions get that interval, the others (reduce vars
    included) their whole domain. One loop ``axN`` per iter var whose interval is longer
    than 1 (or every one, with ``preserve_unit_loops``); a ``T.where`` keeps bindings in
    their domains where the interval may exceed them. The block goes right before the first
    statement of ``loop``'s body that contains a consumer.

    Parameters
    ----------
    func : PrimFunc
    block : str
        The producer to move (not writing a function output).
    loop : str
        The loop to move it under: it must be around every consumer.
    preserve_unit_loops : bool
        Keep loops of extent 1.

    Returns
    -------
    PrimFunc

    Raises
    ------
    RootBlockError, BlockInInitError, NotInSameScopeError, LoopContainsBlockError,
    NoConsumersError, OutputBlockError, NotAncestorOfConsumerError,
    ProducerAfterConsumerError, DependenceViolationError, UnboundedRegionError,
    PredicateNotMovableError

    Example
    -------
    >>> new = compute_at(conv, "pad_temp", "y")   # one padded row window per output row
    """
    primitive = "compute_at"
    scope, producer = check_movable(primitive, func, block)
    target, loop_ancestors = _check_loop(primitive, func, scope, producer, loop)
    output = _first_output(func, producer)
    if output is not None:
        raise OutputBlockError(primitive, block, output, func, producer)
    consumers = scope.consumers(producer)
    if not consumers:
        raise NoConsumersError(primitive, block, func, producer)
    for consumer in consumers:
        if scope.position(consumer.name) < scope.position(block):
            buffer = regions.shared_buffer(producer.writes, consumer.reads)
            raise ProducerAfterConsumerError(
                primitive, block, block, consumer.name, buffer, func, producer
            )
        if not scope.is_under(consumer.name, target):
            raise NotAncestorOfConsumerError(primitive, block, loop, consumer.name, func, target)

    # where to insert: before the first statement of the loop body holding a consumer
    under = scope.blocks_under(target)
    insert_at = min(scope.top_index(target, c.name) for c in consumers)
    before = [b for b in under if scope.top_index(target, b.name) < insert_at]
    passed = [
        b
        for b in scope.blocks
        if scope.position(block) < scope.position(b.name) < scope.position_of_loop(target)
    ]
    later = [b for b in under if b not in before and b not in consumers]
    _check_passed_over(primitive, func, producer, passed + later, producer)
    for b in before:  # blocks before the insertion point may produce, not consume
        if regions.buffers(b.writes) & regions.buffers(producer.writes):
            _check_passed_over(primitive, func, producer, [b], producer)

    # what the consumers read at one iteration of the loop
    outer_loops = regions.for_ancestors(loop_ancestors) + [target]
    produced = regions.buffers(producer.writes)
    needed = {}
    for consumer in consumers:
        realize, ancestors = scope.realize_and_ancestors(consumer.name)
        for buffer, dims in regions.read_intervals(realize, ancestors, target, produced).items():
            if dims is None:
                raise UnboundedRegionError(primitive, block, loop, buffer.name, func, target)
            needed.setdefault(buffer, []).extend(dims)
    ranges = regions.loop_ranges(outer_loops)
    needed = {buffer: regions.hull_dims(dim_lists, ranges) for buffer, dim_lists in needed.items()}
    intervals = regions.solve_iter_domains(producer, producer.writes, needed, ranges)
    _check_once_per_element(primitive, func, producer, loop, intervals, ranges, target)
    return _move_block(
        primitive,
        func,
        scope,
        block,
        loop,
        insert_at,
        intervals,
        outer_loops,
        preserve_unit_loops,
    )


# ---------------------------------------------------------------------------------------
# reverse_compute_at
# ---------------------------------------------------------------------------------------


def reverse_compute_at(
    func: PrimFunc, block: str, loop: str, *, preserve_unit_loops: bool = False
) -> PrimFunc:
    """Move consumer ``block`` under ``loop`` (a loop around its producers), computing there
    what the producers produced at one iteration of ``loop``.

    Before (``reverse_compute_at(func, "relu", "i_0")``, a matmul split by 4 rows)::

        for i_0, i_1, j, k in T.grid(4, 4, 16, 16):
            with T.block("C"): ...       # C[vi, vj] += A[vi, vk] * B[vk, vj]
        for i, j_1 in T.grid(16, 16):
            with T.block("relu"):
                vi_1, vj_1 = T.axis.remap("SS", [i, j_1])
                D[vi_1, vj_1] = T.max(C[vi_1, vj_1], T.float32(0))

    After::

        for i_0 in range(4):
            for i_1, j, k in T.grid(4, 16, 16):
                with T.block("C"): ...
            for ax0, ax1 in T.grid(4, 16):
                with T.block("relu"):
                    vi_1 = T.axis.spatial(16, i_0 * 4 + ax0)
                    vj_1 = T.axis.spatial(16, ax1)
                    D[vi_1, vj_1] = T.max(C[vi_1, vj_1], T.float32(0))

    The producers' writes under ``loop`` (loops inside it relaxed) give the produced
    interval per dimension; each iter var of the consumer that reads a dimension at a single
    index gets that interval, the others their whole domain. The consumer's reads must then
    lie inside what was produced (``RegionNotCoveredError`` otherwise), and no loop at or
    around ``loop`` may be a reduction loop of a producer (``PartialReductionError``). The
    block goes right after the last statement of ``loop``'s body holding a producer.

    Parameters
    ----------
    func : PrimFunc
    block : str
        The consumer to move.
    loop : str
        A loop around its producers.
    preserve_unit_loops : bool
        Keep loops of extent 1.

    Returns
    -------
    PrimFunc

    Raises
    ------
    RootBlockError, BlockInInitError, NotInSameScopeError, LoopContainsBlockError,
    NoProducersError, NotAncestorOfProducerError, ProducerAfterConsumerError,
    DependenceViolationError, PartialReductionError, RegionNotCoveredError,
    ConsumerDomainNotCoveredError,
    PredicateNotMovableError

    Example
    -------
    >>> new = reverse_compute_at(func, "relu", "i_0")
    """
    primitive = "reverse_compute_at"
    scope, consumer = check_movable(primitive, func, block)
    target, loop_ancestors = _check_loop(primitive, func, scope, consumer, loop)
    producers = scope.producers(consumer)
    if not producers:
        raise NoProducersError(primitive, block, func, consumer)
    loop_position = scope.position_of_loop(target)
    inside = []
    for producer in producers:
        if scope.position(producer.name) > scope.position(block):
            buffer = regions.shared_buffer(producer.writes, consumer.reads)
            raise ProducerAfterConsumerError(
                primitive, block, producer.name, block, buffer, func, consumer
            )
        if scope.is_under(producer.name, target):
            inside.append(producer)
        elif scope.position(producer.name) > loop_position:
            raise NotAncestorOfProducerError(primitive, block, loop, producer.name, func, target)
    if not inside:
        raise NotAncestorOfProducerError(primitive, block, loop, producers[-1].name, func, target)

    outer_loops = regions.for_ancestors(loop_ancestors) + [target]
    for producer in inside:
        reduce_loop = regions.reduce_loop_among(
            scope.realize_and_ancestors(producer.name)[0], outer_loops
        )
        if reduce_loop is not None:
            raise PartialReductionError(
                primitive, block, loop, producer.name, reduce_loop, func, target
            )

    # where to insert: after the last statement of the loop body holding a producer
    under = scope.blocks_under(target)
    insert_at = max(scope.top_index(target, p.name) for p in inside) + 1
    early = [b for b in under if b not in inside and scope.top_index(target, b.name) < insert_at]
    passed = [
        b
        for b in scope.blocks
        if scope.position_of_loop(target) < scope.position(b.name) < scope.position(block)
        and not scope.is_under(b.name, target)
    ]
    later = [b for b in under if scope.top_index(target, b.name) >= insert_at]
    _check_passed_over(primitive, func, consumer, early + passed + later, consumer)

    # what the producers wrote at one iteration of the loop
    read = regions.buffers(consumer.reads)
    produced = {}
    for producer in inside:
        realize, ancestors = scope.realize_and_ancestors(producer.name)
        for buffer, dims in regions.write_intervals(realize, ancestors, target, read).items():
            if dims is None:
                why = f"what {producer.name!r} writes into {buffer.name!r} cannot be bounded"
                raise RegionNotCoveredError(primitive, block, loop, why, func, target)
            produced.setdefault(buffer, []).extend(dims)
    ranges = regions.loop_ranges(outer_loops)
    produced = {b: regions.hull_dims(d, ranges) for b, d in produced.items()}
    intervals = regions.solve_iter_domains(consumer, consumer.reads, produced, ranges, exact=True)
    if intervals is None:
        why = (
            f"{block!r} reads a produced buffer at indices that give it two different "
            "ranges at one iteration"
        )
        raise RegionNotCoveredError(primitive, block, loop, why, func, target)
    missing = regions.uncovered_read(consumer, intervals, produced, ranges)
    if missing is not None:
        why = (
            f"{block!r} reads {missing} beyond what its producers write at one iteration of "
            f"{loop!r}"
        )
        raise RegionNotCoveredError(primitive, block, loop, why, func, target)
    skipped = _uncovered_domain_point(consumer, intervals, ranges)
    if skipped is not None:
        raise ConsumerDomainNotCoveredError(primitive, block, loop, skipped, func, target)
    _check_once_per_element(primitive, func, consumer, loop, intervals, ranges, target)
    return _move_block(
        primitive,
        func,
        scope,
        block,
        loop,
        insert_at,
        intervals,
        outer_loops,
        preserve_unit_loops,
    )


def _move_block(
    primitive, func, scope, block, loop, insert_at, intervals, outer_loops, preserve_unit_loops
) -> PrimFunc:
    """Rebuild ``block``'s nest over ``intervals`` and insert it into ``loop``'s body."""
    realize = realize_of(scope, block)
    nest = regions.build_nest(
        primitive,
        func,
        realize,
        intervals,
        outer_loops,
        preserve_unit_loops=preserve_unit_loops,
    )
    new_func = regions.remove_realize(func, realize)
    return regions.insert_into_loop(new_func, loop, insert_at, nest)


def _check_once_per_element(
    primitive: str, func: PrimFunc, block: Block, loop: str, intervals, ranges, target
) -> None:
    """Refuse to move a block that accumulates without init where it would run twice."""
    accumulated = _accumulated_buffer(block)
    if accumulated is None:
        return
    twice = _recomputed_point(block, intervals, ranges)
    if twice is not None:
        raise AccumulationRecomputedError(
            primitive, block.name, loop, accumulated, twice, func, target
        )


def _accumulated_buffer(block: Block) -> str | None:
    """The buffer ``block`` updates from its own value without an init, else None."""
    if block.init is not None:
        return None
    written = regions.buffers(block.writes)
    for region in block.reads:
        if region.buffer in written:
            return region.buffer.name
    return None


def _outer_vars(interval, ranges) -> list[Var]:
    low, high = interval
    found = collect(low, lambda n: isinstance(n, Var)) + collect(high, lambda n: isinstance(n, Var))
    return sorted({v for v in found if v in ranges}, key=lambda v: v.name)


def _recomputed_point(block: Block, intervals, ranges) -> str | None:
    """Why some element of ``block`` would be computed by two iterations of the loops in
    ``ranges`` (its iter vars taking ``intervals``), or None when each is computed once.

    A loop no interval depends on repeats the same elements; otherwise, per iter var, the
    intervals over the loops it depends on must not overlap (checked by enumeration up to
    ``_ENUMERATION_LIMIT`` iterations; beyond that, refused to be safe).
    """
    used: set[Var] = set()
    for interval in intervals:
        used.update(_outer_vars(interval, ranges))
    for var, (low, high) in ranges.items():
        if var not in used and high > low:
            return f"every iteration of loop {var.name!r} would update the same elements again"
    for iv, interval in zip(block.iter_vars, intervals, strict=True):
        loops = _outer_vars(interval, ranges)
        combinations = math.prod(ranges[v][1] - ranges[v][0] + 1 for v in loops)
        if combinations > _ENUMERATION_LIMIT:
            return f"the loops {[v.name for v in loops]} are too many to prove each once"
        seen: set[int] = set()
        for values in itertools.product(*(range(ranges[v][0], ranges[v][1] + 1) for v in loops)):
            env = dict(zip(loops, values, strict=True))
            points = range(evaluate(interval[0], env), evaluate(interval[1], env) + 1)
            if seen.intersection(points):
                return f"two iterations would update the same {iv.var.name}"
            seen.update(points)
    return None


_ENUMERATION_LIMIT = 4096
"""Most outer-loop iterations enumerated to check that a moved consumer covers its domain."""


def _uncovered_domain_point(block: Block, intervals, ranges) -> str | None:
    """A text naming a point of ``block``'s domain that no iteration of the outer loops
    (``ranges``) computes once its iter vars take ``intervals``, or None when all are.

    The outer loop variables an interval uses are enumerated (up to ``_ENUMERATION_LIMIT``
    combinations) and the computed points marked; beyond that, the hull of the interval
    over the loops must contain the domain.
    """
    for iv, (low, high) in zip(block.iter_vars, intervals, strict=True):
        start, extent = const_value(iv.dom.min), const_value(iv.dom.extent)
        if start is None or extent is None:
            continue
        used = _outer_vars((low, high), ranges)
        combinations = math.prod(ranges[v][1] - ranges[v][0] + 1 for v in used)
        if combinations <= _ENUMERATION_LIMIT:
            covered = [False] * extent
            for values in itertools.product(*(range(ranges[v][0], ranges[v][1] + 1) for v in used)):
                env = dict(zip(used, values, strict=True))
                first = max(evaluate(low, env) - start, 0)
                last = min(evaluate(high, env) - start, extent - 1)
                for index in range(first, last + 1):
                    covered[index] = True
            if not all(covered):
                return f"{iv.var.name} = {start + covered.index(False)}"
            continue
        first, _ = int_bounds(low, ranges)
        _, last = int_bounds(high, ranges)
        if first is None or last is None or first > start or last < start + extent - 1:
            return f"some {iv.var.name} in [{start}, {start + extent - 1}]"
    return None


# ---------------------------------------------------------------------------------------
# compute_inline
# ---------------------------------------------------------------------------------------


def _check_single_store(primitive: str, func: PrimFunc, block: Block) -> BufferStore:
    if block.init is not None or any(iv.kind == IterKind.REDUCE for iv in block.iter_vars):
        raise InlineReductionError(primitive, block.name, func, block)
    if not isinstance(block.body, BufferStore):
        raise NotSingleStoreError(primitive, block.name, describe_stmt(block.body), func, block)
    store = block.body
    if store.buffer in regions.buffers(block.reads):
        raise SelfReadError(primitive, block.name, store.buffer.name, func, block)
    return store


def compute_inline(func: PrimFunc, block: str) -> PrimFunc:
    """Inline a pure injective producer into its consumers and remove it and its buffer.

    The block's body must be one store ``B[v0, v1, ...] = expr`` whose indices are its
    spatial iter vars (each once, in any order), with no reduce var or init, not reading
    ``B``, and ``B`` not a function parameter. Every load ``B[e0, e1, ...]`` in the
    consumers becomes ``expr`` with ``v0 := e0, v1 := e1, ...``.

    Before (``compute_inline(func, "T_add")``)::

        T_add = T.alloc_buffer((48,), "float32")
        for i0 in range(48):
            with T.block("T_add"):
                v0 = T.axis.spatial(48, i0)
                T_add[v0] = A[v0] + B[v0]
        for i1 in range(48):
            with T.block("C"):
                v1 = T.axis.spatial(48, i1)
                C[v1] = T.max(T_add[v1], T.float32(0))

    After::

        for i1 in range(48):
            with T.block("C"):
                v1 = T.axis.spatial(48, i1)
                C[v1] = T.max(A[v1] + B[v1], T.float32(0))

    A block without consumers is simply removed (it computed nothing anyone reads).

    Raises
    ------
    RootBlockError, BlockInInitError, InlineReductionError, NotSingleStoreError,
    SelfReadError, StoreIndicesNotIterVarsError, OutputBlockError,
    ProducerAfterConsumerError, DependenceViolationError

    Example
    -------
    >>> new = compute_inline(conv, "pad_temp")   # the conv reads data with a bounds test
    """
    primitive = "compute_inline"
    scope, producer = check_movable(primitive, func, block)
    store = _check_single_store(primitive, func, producer)
    index_vars = regions.store_index_vars(producer, store)
    if index_vars is None:
        indices = ", ".join(regions.expr_text(i) for i in store.indices)
        raise StoreIndicesNotIterVarsError(primitive, block, indices, func, producer)
    output = _first_output(func, producer)
    if output is not None:
        raise OutputBlockError(primitive, block, output, func, producer)

    buffer = store.buffer
    consumers = scope.consumers(producer)
    for consumer in consumers:
        if scope.position(consumer.name) < scope.position(block):
            raise ProducerAfterConsumerError(
                primitive, block, block, consumer.name, buffer.name, func, producer
            )
    for other in scope.blocks:
        if other is not producer and buffer in regions.buffers(other.writes):
            why = f"{other.name!r} also writes {buffer.name!r}; its values would be lost"
            raise DependenceViolationError(
                primitive, block, other.name, buffer.name, why, func, producer
            )
    if consumers:
        last = max(scope.position(c.name) for c in consumers)
        between = [
            b
            for b in scope.blocks
            if scope.position(block) < scope.position(b.name) < last and b not in consumers
        ]
        reads = regions.buffers(producer.reads)
        for other in between + consumers:
            for read in sorted(regions.buffers(other.writes) & reads, key=lambda b: b.name):
                why = (
                    f"{other.name!r} writes {read.name!r} after {block!r} reads it; inlined, "
                    "the expression would read the new values"
                )
                raise DependenceViolationError(
                    primitive, block, other.name, read.name, why, func, producer
                )

    new_func = regions.remove_realize(func, realize_of(scope, block))
    new_func = regions.inline_loads(new_func, buffer, index_vars, store.value)
    return regions.remove_allocation(new_func, buffer)


# ---------------------------------------------------------------------------------------
# reverse_compute_inline
# ---------------------------------------------------------------------------------------


def reverse_compute_inline(func: PrimFunc, block: str) -> PrimFunc:
    """Inline a pure injective consumer into its single producer: the producer then writes
    the consumer's output directly, and the intermediate buffer is removed.

    The consumer's body must be one store with no reduce var or init; it must read exactly
    one buffer that a block of its scope writes (the producer's), at one index tuple whose
    entries are its spatial iter vars, each once. The producer must be a complete block
    (no reduction: TVM refuses those too, since the store of a reduction runs on partial
    results), its body one store, its buffer not a function output and read by no one else.

    Before (``reverse_compute_inline(func, "C")``)::

        for i0 in range(48):
            with T.block("T_add"):
                v0 = T.axis.spatial(48, i0)
                T_add[v0] = A[v0] + B[v0]
        for i1 in range(48):
            with T.block("C"):
                v1 = T.axis.spatial(48, i1)
                C[v1] = T.max(T_add[v1], T.float32(0))

    After::

        for i0 in range(48):
            with T.block("T_add"):
                v0 = T.axis.spatial(48, i0)
                C[v0] = T.max(A[v0] + B[v0], T.float32(0))

    Raises
    ------
    RootBlockError, BlockInInitError, InlineReductionError, NotSingleStoreError,
    SelfReadError, NoProducersError, SeveralProducersError, ReductionProducerError,
    OutputBlockError, ProducerHasOtherConsumersError, SeveralReadIndicesError,
    ReadNotBijectiveError, ProducerAfterConsumerError, DependenceViolationError,
    RegionNotCoveredError, PredicateNotMovableError

    Example
    -------
    >>> new = reverse_compute_inline(matmul_relu, "relu")   # raises: matmul is a reduction
    """
    primitive = "reverse_compute_inline"
    scope, consumer = check_movable(primitive, func, block)
    store = _check_single_store(primitive, func, consumer)
    producers = scope.producers(consumer)
    if not producers:
        raise NoProducersError(primitive, block, func, consumer)
    if len(producers) > 1:
        raise SeveralProducersError(primitive, block, [p.name for p in producers], func, consumer)
    producer = producers[0]
    if scope.position(producer.name) > scope.position(block):
        buffer = regions.shared_buffer(producer.writes, consumer.reads)
        raise ProducerAfterConsumerError(
            primitive, block, producer.name, block, buffer, func, consumer
        )
    if producer.init is not None or any(iv.kind == IterKind.REDUCE for iv in producer.iter_vars):
        raise ReductionProducerError(primitive, block, producer.name, func, producer)
    if not isinstance(producer.body, BufferStore):
        raise NotSingleStoreError(
            primitive, producer.name, describe_stmt(producer.body), func, producer
        )
    p_store = producer.body
    buffer = p_store.buffer
    if buffer not in regions.buffers(consumer.reads):
        raise SeveralProducersError(primitive, block, [producer.name], func, consumer)
    if buffer in {p for p in func.params}:
        raise OutputBlockError(primitive, producer.name, buffer.name, func, producer)
    others = [c.name for c in scope.consumers(producer) if c is not consumer]
    if others:
        raise ProducerHasOtherConsumersError(
            primitive, block, producer.name, buffer.name, others, func, consumer
        )
    loads = regions.load_indices(store.value, buffer)
    if len(loads) > 1:
        raise SeveralReadIndicesError(primitive, block, buffer.name, func, consumer)
    read_vars = regions.index_iter_vars(consumer, loads[0])
    if read_vars is None:
        indices = ", ".join(regions.expr_text(i) for i in loads[0])
        raise ReadNotBijectiveError(primitive, block, buffer.name, indices, func, consumer)
    between = [
        b
        for b in scope.blocks
        if scope.position(producer.name) < scope.position(b.name) < scope.position(block)
    ]
    _check_passed_over(primitive, func, consumer, between, consumer)
    uncovered = regions.producer_exceeds_consumer(producer, p_store, consumer, read_vars)
    if uncovered is not None:
        raise RegionNotCoveredError(primitive, block, "", uncovered, func, consumer)

    c_realize = realize_of(scope, block)
    p_realize, p_ancestors = scope.realize_and_ancestors(producer.name)
    new_realize = regions.fold_consumer(
        primitive, func, p_realize, p_ancestors, c_realize, read_vars
    )
    new_func = regions.remove_realize(func, c_realize)
    new_func = regions.replace_realize(new_func, producer.name, new_realize)
    return regions.remove_allocation(new_func, buffer)


# ---------------------------------------------------------------------------------------
# Schedule methods: resolve handles, call the pure function, record the step
# ---------------------------------------------------------------------------------------


class ComputeLocationMethods:
    """The ``compute_at`` / ``reverse_compute_at`` / ``compute_inline`` /
    ``reverse_compute_inline`` methods of ``Schedule``.

    Mixed into ``Schedule``, which provides ``mod``, ``_name_of``, ``_resolve`` and
    ``_commit`` (see ``workbench/schedule/README.md``).
    """

    def compute_at(
        self, block: BlockRV, loop: LoopRV, *, preserve_unit_loops: bool = False
    ) -> None:
        """Move a producer under a loop of its consumers, computing only what they read there.

        Before (conv2d, ``sch.compute_at(sch.get_block("pad_temp"), y)``)::

            for i0, i1, i2, i3 in T.grid(1, 2, 8, 8):
                with T.block("pad_temp"): ...
            for n, k, y, x, rc, ry, rx in T.grid(1, 2, 6, 6, 2, 3, 3):
                with T.block("conv2d_nchw"): ...

        After (each output row ``y`` pads the 3 input rows its window reads)::

            for n, k, y in T.grid(1, 2, 6):
                for ax0, ax1, ax2 in T.grid(2, 3, 8):
                    with T.block("pad_temp"):
                        v0 = T.axis.spatial(1, n)
                        v1 = T.axis.spatial(2, ax0)
                        v2 = T.axis.spatial(8, y + ax1)
                        v3 = T.axis.spatial(8, ax2)
                        ...
                for x, rc, ry, rx in T.grid(6, 2, 3, 3):
                    with T.block("conv2d_nchw"): ...

        Raises ``NotAncestorOfConsumerError``, ``NoConsumersError``, ``OutputBlockError``,
        ``ProducerAfterConsumerError``, ``DependenceViolationError``,
        ``UnboundedRegionError`` and the others of
        ``workbench.schedule.compute_location.compute_at``.

        Example
        -------
        >>> y = sch.get_loops(sch.get_block("conv2d_nchw"))[2]
        >>> sch.compute_at(sch.get_block("pad_temp"), y)
        """
        new_func = compute_at(
            self.mod,
            self._name_of(block, "compute_at", "block", "block"),
            self._name_of(loop, "compute_at"),
            preserve_unit_loops=preserve_unit_loops,
        )
        attrs = {"preserve_unit_loops": True} if preserve_unit_loops else {}
        self._commit("compute_at", (block, loop), attrs, new_func, [])

    def reverse_compute_at(
        self, block: BlockRV, loop: LoopRV, *, preserve_unit_loops: bool = False
    ) -> None:
        """Move a consumer under a loop of its producers, computing what they produced there.

        Before (``sch.reverse_compute_at(sch.get_block("relu"), i_0)``)::

            for i_0, i_1, j, k in T.grid(4, 4, 16, 16):
                with T.block("C"): ...
            for i, j_1 in T.grid(16, 16):
                with T.block("relu"): ...

        After (the relu of each 4-row tile right after the tile is computed)::

            for i_0 in range(4):
                for i_1, j, k in T.grid(4, 16, 16):
                    with T.block("C"): ...
                for ax0, ax1 in T.grid(4, 16):
                    with T.block("relu"):
                        vi_1 = T.axis.spatial(16, i_0 * 4 + ax0)
                        vj_1 = T.axis.spatial(16, ax1)
                        ...

        Raises ``NotAncestorOfProducerError``, ``NoProducersError``,
        ``PartialReductionError``, ``RegionNotCoveredError`` and the others of
        ``workbench.schedule.compute_location.reverse_compute_at``.

        Example
        -------
        >>> sch.reverse_compute_at(sch.get_block("relu"), i_0)
        """
        new_func = reverse_compute_at(
            self.mod,
            self._name_of(block, "reverse_compute_at", "block", "block"),
            self._name_of(loop, "reverse_compute_at"),
            preserve_unit_loops=preserve_unit_loops,
        )
        attrs = {"preserve_unit_loops": True} if preserve_unit_loops else {}
        self._commit("reverse_compute_at", (block, loop), attrs, new_func, [])

    def compute_inline(self, block: BlockRV) -> None:
        """Inline a pure injective block into its consumers; the block and its buffer go.

        Before / after (``sch.compute_inline(sch.get_block("T_add"))``)::

            T_add[v0] = A[v0] + B[v0]                  (removed)
            C[v1] = T.max(T_add[v1], T.float32(0))     C[v1] = T.max(A[v1] + B[v1], T.float32(0))

        Raises ``InlineReductionError``, ``NotSingleStoreError``,
        ``StoreIndicesNotIterVarsError``, ``OutputBlockError`` and the others of
        ``workbench.schedule.compute_location.compute_inline``.

        Example
        -------
        >>> sch.compute_inline(sch.get_block("pad_temp"))
        """
        new_func = compute_inline(
            self.mod, self._name_of(block, "compute_inline", "block", "block")
        )
        self._commit("compute_inline", (block,), {}, new_func, [])

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline a pure injective consumer into its single, non-reduction producer.

        Before / after (``sch.reverse_compute_inline(sch.get_block("C"))``)::

            T_add[v0] = A[v0] + B[v0]                  C[v0] = T.max(A[v0] + B[v0], T.float32(0))
            C[v1] = T.max(T_add[v1], T.float32(0))     (removed)

        Raises ``ReductionProducerError``, ``SeveralProducersError``,
        ``ProducerHasOtherConsumersError``, ``ReadNotBijectiveError`` and the others of
        ``workbench.schedule.compute_location.reverse_compute_inline``.

        Example
        -------
        >>> sch.reverse_compute_inline(sch.get_block("T_relu"))
        """
        new_func = reverse_compute_inline(
            self.mod, self._name_of(block, "reverse_compute_inline", "block", "block")
        )
        self._commit("reverse_compute_inline", (block,), {}, new_func, [])


# ---------------------------------------------------------------------------------------
# Trace registration and legality probes
# ---------------------------------------------------------------------------------------

PRESERVE_UNIT_LOOPS = AttrSpec(
    "preserve_unit_loops", lambda v: isinstance(v, bool), "a bool", default=False
)


def _probe_location(sch, block: BlockRV, *, reverse: bool):
    """The innermost loop of the first consumer (last producer, for reverse) at which the
    primitive is legal; when none is, the innermost such loop, or any loop of the function,
    so that the primitive's own error says why."""
    primitive = "reverse_compute_at" if reverse else "compute_at"
    function = reverse_compute_at if reverse else compute_at
    name = sch.name(block)
    scope, moved = check_movable(primitive, sch.mod, name)
    others = scope.producers(moved)[::-1] if reverse else scope.consumers(moved)
    candidates = [
        loop.loop_var.name
        for other in others
        for loop in reversed(regions.enclosing_loops_of(scope, other.name))
    ]
    for loop in candidates:
        try:
            function(sch.mod, name, loop)
        except ScheduleError:
            continue
        return (block, sch._handle_for_name("loop", loop)), {}
    around = {loop.loop_var.name for loop in regions.enclosing_loops_of(scope, name)}
    elsewhere = [n for n in loop_names(sch.mod) if n not in around]
    fallback = candidates[:1] or elsewhere[:1]
    if fallback:  # the primitive's own error says why
        return (block, sch._handle_for_name("loop", fallback[0])), {}
    output = None if reverse else _first_output(sch.mod, moved)
    if output is not None:
        raise OutputBlockError(primitive, name, output, sch.mod, moved)
    error = NoProducersError if reverse else NoConsumersError
    raise error(primitive, name, sch.mod, moved)


def _probe_compute_at(sch, block: BlockRV):
    return _probe_location(sch, block, reverse=False)


def _probe_reverse_compute_at(sch, block: BlockRV):
    return _probe_location(sch, block, reverse=True)


def _probe_block(sch, block: BlockRV):
    return (block,), {}


register_instruction(
    InstructionKind(
        "compute_at",
        ("block", "loop"),
        (PRESERVE_UNIT_LOOPS,),
        applies_to=("block",),
        probe=_probe_compute_at,
    )
)
register_instruction(
    InstructionKind(
        "reverse_compute_at",
        ("block", "loop"),
        (PRESERVE_UNIT_LOOPS,),
        applies_to=("block",),
        probe=_probe_reverse_compute_at,
    )
)
register_instruction(
    InstructionKind("compute_inline", ("block",), applies_to=("block",), probe=_probe_block)
)
register_instruction(
    InstructionKind("reverse_compute_inline", ("block",), applies_to=("block",), probe=_probe_block)
)

__all__ = [
    "compute_at",
    "reverse_compute_at",
    "compute_inline",
    "reverse_compute_inline",
    "ComputeLocationMethods",
]
