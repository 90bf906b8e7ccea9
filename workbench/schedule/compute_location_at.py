"""Schedule primitives ``compute_at`` and ``reverse_compute_at`` (the pure functions;
``compute_location.py`` gives ``Schedule`` its methods).

``compute_at`` moves a producer under a loop of its consumers and computes there only the
region they read at one iteration of that loop; ``reverse_compute_at`` moves a consumer
under a loop of its producers and computes there what they produced. Both infer regions
the way TVM does (``workbench.ir.region_infer``): the accesses of the blocks under the
loop are *relaxed* over the loops inside it, which gives, for each iteration of the loop,
an interval per buffer dimension in terms of the loops at and around it. The moved block
gets new loops ``ax0, ax1, ...`` covering that interval, its bindings become
``interval_min + ax``, and a ``T.where`` keeps it inside its domain where the interval
may stick out (``compute_location_nest``).

``index`` picks the position among the loop body's statements, as in TVM: ``-1`` the last
possible one (right before the first consumer of the moved block, or the end of the
body), ``-2`` the first (right after its last producer), or an explicit position in
between.
"""

from __future__ import annotations

from workbench.ir import Block, For, IterKind, PrimFunc, SeqStmt, const_value
from workbench.ir import region_cover as cover
from workbench.ir import region_infer as regions
from workbench.ir.arith import int_bounds, simplify
from workbench.schedule.compute_location_nest import build_nest, insert_into_loop, remove_realize
from workbench.schedule.compute_location_scope import (
    ScopeInfo,
    buffers,
    check_movable,
    check_passed_over,
    first_output,
    producers_and_consumers,
    readers_before,
    realize_of,
    scope_block,
    shared_buffer,
    writers_after,
)
from workbench.schedule.errors_compute_location import (
    AccumulationRecomputedError,
    BeyondIterationsError,
    ConsumerDomainNotCoveredError,
    InsertionIndexError,
    LoopContainsBlockError,
    NoConsumersError,
    NoProducersError,
    NotAncestorOfConsumerError,
    NotAncestorOfProducerError,
    NotInSameScopeError,
    OutputBlockError,
    ParallelRecomputeError,
    PartialReductionError,
    ProducerAfterConsumerError,
    RegionNotCoveredError,
    UnboundedRegionError,
)
from workbench.schedule.scope import PARALLEL_KINDS, loop_conflicts
from workbench.schedule.tree import find_loop

__all__ = ["compute_at", "reverse_compute_at"]


# ---------------------------------------------------------------------------------------
# Shared checks
# ---------------------------------------------------------------------------------------


def _check_loop(primitive: str, func: PrimFunc, scope: ScopeInfo, block: Block, loop: str):
    """The target loop and its ancestors: in the block's scope and not around the block."""
    target, ancestors = find_loop(func, loop, primitive)
    if scope_block(ancestors) is not scope.block:
        raise NotInSameScopeError(primitive, block.name, loop, func, target)
    if any(a is target for a in scope.ancestors_of(block.name)):
        raise LoopContainsBlockError(primitive, block.name, loop, func, target)
    return target, ancestors


def _body_length(loop: For) -> int:
    return len(loop.body.stmts) if isinstance(loop.body, SeqStmt) else 1


def _insertion_point(
    primitive: str, func: PrimFunc, block: str, loop: For, index: int, last_producer: int,
    first_consumer: int,
) -> int:
    """TVM's ``FindInsertionPoint``: the valid positions are ``(last_producer,
    first_consumer]``; ``-1`` is the last, ``-2`` the first."""
    if index == -1:
        return first_consumer
    if index == -2:
        return min(last_producer + 1, first_consumer)
    if index >= 0 and last_producer + 1 <= index <= first_consumer:
        return index
    raise InsertionIndexError(
        primitive, block, loop.loop_var.name, index, last_producer + 1, first_consumer, func,
        loop,
    )


def _move_block(
    primitive, func, scope, block, loop, insert_at, intervals, outer_loops, preserve_unit_loops
) -> PrimFunc:
    """Rebuild ``block``'s nest over ``intervals`` and insert it into ``loop``'s body."""
    realize = realize_of(scope, block)
    nest = build_nest(
        primitive, func, realize, intervals, outer_loops, preserve_unit_loops=preserve_unit_loops
    )
    new_func = remove_realize(func, realize)
    moved = insert_into_loop(new_func, loop, insert_at, nest)
    _check_parallel_loops_independent(primitive, func, moved, block, loop)
    return moved


def _check_parallel_loops_independent(
    primitive: str, func: PrimFunc, moved: PrimFunc, block: str, loop: str
) -> None:
    """Refuse a move that makes the iterations of a parallel / vectorized loop around the new
    position touch one element of what ``block`` writes or reads (TVM allocates the
    intermediate inside the loop instead; the cpu target shares a global one)."""
    target, ancestors = find_loop(moved, loop, primitive)
    for around in (*ancestors, target):
        if not isinstance(around, For) or around.kind not in PARALLEL_KINDS:
            continue
        name = around.loop_var.name
        for conflict in loop_conflicts(moved, name):
            if block in (conflict.first.block, conflict.second.block):
                raise ParallelRecomputeError(
                    primitive, block, loop, name, conflict.buffer, func,
                    find_loop(func, loop, primitive)[0],
                )


def _accumulated_buffer(block: Block) -> str | None:
    """The buffer ``block`` updates from its own value without an init, else None."""
    if block.init is not None:
        return None
    written = buffers(block.writes)
    for region in block.reads:
        if region.buffer in written:
            return region.buffer.name
    return None


def _check_once_per_element(
    primitive: str, func: PrimFunc, block: Block, loop: str, intervals, ranges, target
) -> None:
    """Refuse to move a block that accumulates without init where it would run twice."""
    accumulated = _accumulated_buffer(block)
    if accumulated is None:
        return
    twice = cover.recomputed_point(block, intervals, ranges)
    if twice is not None:
        raise AccumulationRecomputedError(
            primitive, block.name, loop, accumulated, twice, func, target
        )


def _check_within_iterations(
    primitive: str, func: PrimFunc, scope, block: Block, loop: str, intervals, ranges, target
) -> None:
    """Refuse a move that widens a spatial iteration variable beyond the values it takes now
    (a ``decompose_padding`` interior block: consumers also read the border it never wrote)."""
    realize, ancestors = scope.realize_and_ancestors(block.name)
    old_ranges = regions.loop_ranges(regions.for_ancestors(ancestors))
    for iv, binding, interval in zip(block.iter_vars, realize.iter_values, intervals,
                                     strict=True):
        if iv.kind is not IterKind.SPATIAL:
            continue
        old_lo, old_hi = int_bounds(binding, old_ranges)
        start, extent = interval
        new_lo, start_hi = int_bounds(start, ranges)
        width = const_value(simplify(extent, ranges))
        # a symbolic extent (a clipped tile) only has its lower end checked
        new_hi = start_hi + width - 1 if isinstance(width, int) and start_hi is not None else old_hi
        domain = regions.int_domain(iv)
        if None in (old_lo, old_hi, new_lo, new_hi) or domain is None:
            continue
        # points outside the iteration variable's domain are guarded away (T.where)
        new_lo, new_hi = max(new_lo, domain[0]), min(new_hi, domain[1])
        if new_lo < old_lo or new_hi > old_hi:
            raise BeyondIterationsError(
                primitive, block.name, loop, iv.var.name, f"[{old_lo}, {old_hi}]",
                f"[{new_lo}, {new_hi}]", func, target,
            )


# ---------------------------------------------------------------------------------------
# compute_at
# ---------------------------------------------------------------------------------------


def compute_at(
    func: PrimFunc,
    block: str,
    loop: str,
    *,
    preserve_unit_loops: bool = False,
    index: int = -1,
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
    ``loop`` relaxed over their ranges, give an interval per dimension (intersected with
    the buffer's shape); the producer's iter vars that index those dimensions (``v + c``,
    ``c - v``, digits ``v // a``, ``v % b``) get that interval, the others (reduce vars
    included) their whole domain. One loop ``axN`` per iter var whose interval is longer
    than 1 (or every one, with ``preserve_unit_loops``); a ``T.where`` keeps bindings in
    their domains where the interval may exceed them. For a ``shared`` buffer the
    ``threadIdx`` loops at and around ``loop`` are relaxed too (TVM's
    ``CanRelaxStorageUnderThread``): the stage covers what the whole thread block reads,
    ready for a cooperative fetch (``region_infer.storage_relaxed_loops``).

    Parameters
    ----------
    func : PrimFunc
    block : str
        The producer to move (not writing a function output).
    loop : str
        The loop to move it under: it must be around every consumer.
    preserve_unit_loops : bool
        Keep loops of extent 1.
    index : int
        Position among ``loop``'s body statements (TVM's): -1 right before the first
        consumer, -2 right after the last producer of ``block`` in the body, or an
        explicit position between the two.

    Returns
    -------
    PrimFunc

    Raises
    ------
    RootBlockError, BlockInInitError, NotInSameScopeError, LoopContainsBlockError,
    NoConsumersError, OutputBlockError, NotAncestorOfConsumerError,
    ProducerAfterConsumerError, DependenceViolationError, UnboundedRegionError,
    InsertionIndexError, AccumulationRecomputedError, PredicateNotMovableError

    Example
    -------
    >>> new = compute_at(conv, "pad_temp", "y")   # one padded row window per output row
    """
    primitive = "compute_at"
    scope, producer = check_movable(primitive, func, block)
    target, loop_ancestors = _check_loop(primitive, func, scope, producer, loop)
    output = first_output(func, producer)
    if output is not None:
        raise OutputBlockError(primitive, block, output, func, producer)
    inputs, consumers = producers_and_consumers(scope, producer)
    for reader in readers_before(scope, producer):  # reads what it writes, before it
        buffer = shared_buffer(producer.writes, reader.reads)
        raise ProducerAfterConsumerError(
            primitive, block, block, reader.name, buffer, func, producer
        )
    if not consumers:
        raise NoConsumersError(primitive, block, func, producer)
    for consumer in consumers:
        if not scope.is_under(consumer.name, target):
            raise NotAncestorOfConsumerError(primitive, block, loop, consumer.name, func, target)

    # where to insert: between the block's last producer and first consumer in the body
    under = scope.blocks_under(target)
    first_consumer = min(scope.top_index(target, c.name) for c in consumers)
    last_producer = max(
        (scope.top_index(target, p.name) for p in inputs if scope.is_under(p.name, target)),
        default=-1,
    )
    insert_at = _insertion_point(
        primitive, func, block, target, index, last_producer, first_consumer
    )
    before = [b for b in under if scope.top_index(target, b.name) < insert_at]
    passed = [
        b
        for b in scope.blocks
        if scope.position(block) < scope.position(b.name) < scope.position_of_loop(target)
    ]
    later = [b for b in under if b not in before and b not in consumers]
    check_passed_over(primitive, func, producer, passed + later, producer)
    for b in before:  # blocks before the insertion point may produce, not consume
        if buffers(b.writes) & buffers(producer.writes):
            check_passed_over(primitive, func, producer, [b], producer)

    # what the consumers read at one iteration of the loop
    outer_loops = regions.for_ancestors(loop_ancestors) + [target]
    ranges = regions.loop_ranges(outer_loops)
    needed = _region_hull(
        scope, consumers, target, buffers(producer.writes), regions.read_intervals, ranges,
        lambda _, buffer: UnboundedRegionError(primitive, block, loop, buffer.name, func, target),
    )
    intervals = regions.solve_iter_domains(producer, producer.writes, needed, ranges)
    _check_once_per_element(primitive, func, producer, loop, intervals, ranges, target)
    _check_within_iterations(primitive, func, scope, producer, loop, intervals, ranges, target)
    return _move_block(
        primitive, func, scope, block, loop, insert_at, intervals, outer_loops, preserve_unit_loops
    )


# ---------------------------------------------------------------------------------------
# reverse_compute_at
# ---------------------------------------------------------------------------------------


def reverse_compute_at(
    func: PrimFunc,
    block: str,
    loop: str,
    *,
    preserve_unit_loops: bool = False,
    index: int = -1,
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
    index (``v + c``, ``c - v``, digits ``v // a``, ``v % b``) gets that interval, the
    others their whole domain. A reduce var of the consumer may be narrowed too (a
    factorized reduction finishing partial results tile by tile, as TVM does), when the
    tiles are disjoint and start at the reduction's beginning. The consumer's reads must
    lie inside what was produced (``RegionNotCoveredError``), its domain must be covered
    (``ConsumerDomainNotCoveredError``), and no loop at or around ``loop`` may be a
    reduction loop of a producer (``PartialReductionError``).

    Parameters
    ----------
    func : PrimFunc
    block : str
        The consumer to move.
    loop : str
        A loop around its producers.
    preserve_unit_loops : bool
        Keep loops of extent 1.
    index : int
        Position among ``loop``'s body statements (TVM's): -1 the last possible (before
        the first consumer of ``block`` in the body, else the end), -2 right after the last
        producer, or an explicit position between the two.

    Returns
    -------
    PrimFunc

    Raises
    ------
    RootBlockError, BlockInInitError, NotInSameScopeError, LoopContainsBlockError,
    NoProducersError, NotAncestorOfProducerError, ProducerAfterConsumerError,
    DependenceViolationError, PartialReductionError, RegionNotCoveredError,
    ConsumerDomainNotCoveredError, InsertionIndexError, AccumulationRecomputedError,
    PredicateNotMovableError

    Example
    -------
    >>> new = reverse_compute_at(func, "relu", "i_0")
    """
    primitive = "reverse_compute_at"
    scope, consumer = check_movable(primitive, func, block)
    target, loop_ancestors = _check_loop(primitive, func, scope, consumer, loop)
    producers, outputs = producers_and_consumers(scope, consumer)
    for writer in writers_after(scope, consumer):  # writes what it reads, after it
        buffer = shared_buffer(writer.writes, consumer.reads)
        raise ProducerAfterConsumerError(
            primitive, block, writer.name, block, buffer, func, consumer
        )
    if not producers:
        raise NoProducersError(primitive, block, func, consumer)
    loop_position = scope.position_of_loop(target)
    inside = []
    for producer in producers:
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

    # where to insert: between the last producer and the first consumer in the body
    under = scope.blocks_under(target)
    last_producer = max(scope.top_index(target, p.name) for p in inside)
    first_consumer = min(
        (scope.top_index(target, c.name) for c in outputs if scope.is_under(c.name, target)),
        default=_body_length(target),
    )
    insert_at = _insertion_point(
        primitive, func, block, target, index, last_producer, first_consumer
    )
    others = [b for b in under if b not in inside]
    passed = [
        b
        for b in scope.blocks
        if scope.position_of_loop(target) < scope.position(b.name) < scope.position(block)
        and not scope.is_under(b.name, target)
    ]
    check_passed_over(primitive, func, consumer, others + passed, consumer)

    # what the producers wrote at one iteration of the loop
    def unbounded(producer, buffer):
        why = f"what {producer.name!r} writes into {buffer.name!r} cannot be bounded"
        return RegionNotCoveredError(primitive, block, loop, why, func, target)

    ranges = regions.loop_ranges(outer_loops)
    produced = _region_hull(scope, inside, target, buffers(consumer.reads),
                            regions.write_intervals, ranges, unbounded)
    intervals = _consumer_intervals(consumer, produced, ranges)
    if intervals is None:
        why = (
            f"{block!r} reads a produced buffer at indices that give it two different "
            "ranges at one iteration"
        )
        raise RegionNotCoveredError(primitive, block, loop, why, func, target)
    missing = cover.uncovered_read(consumer, intervals, produced, ranges)
    if missing is not None:
        why = (
            f"{block!r} reads {missing} beyond what its producers write at one iteration of "
            f"{loop!r}"
        )
        raise RegionNotCoveredError(primitive, block, loop, why, func, target)
    skipped = cover.uncovered_domain_point(consumer, intervals, ranges)
    if skipped is not None:
        raise ConsumerDomainNotCoveredError(primitive, block, loop, skipped, func, target)
    _check_once_per_element(primitive, func, consumer, loop, intervals, ranges, target)
    return _move_block(
        primitive, func, scope, block, loop, insert_at, intervals, outer_loops, preserve_unit_loops
    )


def _region_hull(scope, blocks: list[Block], target: For, wanted, intervals_of, ranges,
                 unbounded) -> dict:
    """Per buffer of ``wanted``, the hull of what ``blocks`` access in it at one iteration
    of ``target`` (``intervals_of``: ``regions.read_intervals``, what compute_at's consumers
    read, or ``write_intervals``, what reverse_compute_at's producers wrote), clipped to the
    buffer's shape; ``unbounded(block, buffer)`` is the error raised for a region with no
    bound."""
    found: dict = {}
    for other in blocks:
        realize, ancestors = scope.realize_and_ancestors(other.name)
        for buffer, dims in intervals_of(realize, ancestors, target, wanted).items():
            if dims is None:
                raise unbounded(other, buffer)
            found.setdefault(buffer, []).extend(dims)
    return {b: regions.hull_dims(dims, ranges, b.shape) for b, dims in found.items()}


def _consumer_intervals(consumer: Block, produced, ranges):
    """The consumer's iter var intervals at one iteration: its reduce vars narrowed to what
    was produced only where that is a safe partial reduction (see ``_narrowed_reduce_ok``),
    else left whole (then ``uncovered_read`` refuses a partial read)."""
    narrowed = regions.solve_iter_domains(
        consumer, consumer.reads, produced, ranges, exact=True, narrow_reduce=True
    )
    if narrowed is not None and _narrowed_reduce_ok(consumer, narrowed, ranges):
        return narrowed
    return regions.solve_iter_domains(consumer, consumer.reads, produced, ranges, exact=True)


def _narrowed_reduce_ok(consumer: Block, intervals, ranges) -> bool:
    """A reduction split over the outer loops is correct when its init runs first: the
    reduce intervals use loops no spatial interval uses, with non-negative steps, and each
    (spatial, reduce) point is computed once."""
    spatial_loops: set = set()
    reduce_loops: set = set()
    for iv, interval in zip(consumer.iter_vars, intervals, strict=True):
        used = {v for v in regions.expr_vars(interval[0]) if v in ranges}
        if iv.kind == IterKind.REDUCE:
            affine = cover.linear_coefficients(interval[0], ranges)
            if affine is None or any(c < 0 for c in affine.values()):
                return False
            reduce_loops |= used
        else:
            spatial_loops |= used
    if not reduce_loops:
        return True
    if reduce_loops & spatial_loops:
        return False
    return cover.recomputed_point(consumer, intervals, ranges) is None
