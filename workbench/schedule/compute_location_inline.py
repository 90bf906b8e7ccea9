"""Schedule primitives ``compute_inline`` and ``reverse_compute_inline`` (the pure
functions; ``compute_location.py`` gives ``Schedule`` its methods).

``compute_inline`` substitutes a pure injective block's expression into its consumers;
``reverse_compute_inline`` folds a pure consumer into its one producer's store, inverting
the consumer's affine read (``workbench.ir.affine_inverse``) so that the producer writes
the consumer's output directly, with a ``T.where`` where the producer computes more than
the consumer reads (TVM's behaviour).
"""

from __future__ import annotations

from workbench.ir import GE, LT, Block, BufferStore, IntImm, IterKind, PrimFunc
from workbench.ir.affine_inverse import invert_indices
from workbench.ir.arith import int_bounds
from workbench.ir.region_infer import int_domain
from workbench.schedule.compute_location_nest import (
    remove_allocation,
    remove_realize,
    replace_realize,
)
from workbench.schedule.compute_location_scope import (
    buffers,
    check_movable,
    check_passed_over,
    first_output,
    producers_and_consumers,
    readers_before,
    realize_of,
    shared_buffer,
    writers_after,
)
from workbench.schedule.compute_location_substitute import (
    expr_text,
    fold_consumer,
    inline_loads,
    load_indices,
    replace_loads_at,
    store_index_vars,
)
from workbench.schedule.errors_compute_location import (
    DependenceViolationError,
    InlineReductionError,
    NoProducersError,
    NotSingleStoreError,
    OutputBlockError,
    ProducerAfterConsumerError,
    ProducerHasOtherConsumersError,
    ReadNotBijectiveError,
    ReductionProducerError,
    RegionNotCoveredError,
    SelfReadError,
    SeveralProducersError,
    SeveralReadIndicesError,
    StoreIndicesNotIterVarsError,
)
from workbench.schedule.tree import describe_stmt

__all__ = ["compute_inline", "reverse_compute_inline"]

# ---------------------------------------------------------------------------------------
# compute_inline
# ---------------------------------------------------------------------------------------


def _check_single_store(primitive: str, func: PrimFunc, block: Block) -> BufferStore:
    if block.init is not None or any(iv.kind == IterKind.REDUCE for iv in block.iter_vars):
        raise InlineReductionError(primitive, block.name, func, block)
    if not isinstance(block.body, BufferStore):
        raise NotSingleStoreError(primitive, block.name, describe_stmt(block.body), func, block)
    store = block.body
    if store.buffer in buffers(block.reads):
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
    index_vars = store_index_vars(producer, store)
    if index_vars is None:
        indices = ", ".join(expr_text(i) for i in store.indices)
        raise StoreIndicesNotIterVarsError(primitive, block, indices, func, producer)
    output = first_output(func, producer)
    if output is not None:
        raise OutputBlockError(primitive, block, output, func, producer)

    buffer = store.buffer
    consumers = producers_and_consumers(scope, producer)[1]
    for reader in readers_before(scope, producer):  # reads what it writes, before it
        raise ProducerAfterConsumerError(
            primitive, block, block, reader.name, buffer.name, func, producer
        )
    for other in scope.blocks:
        if other is not producer and buffer in buffers(other.writes):
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
        reads = buffers(producer.reads)
        for other in between + consumers:
            for read in sorted(buffers(other.writes) & reads, key=lambda b: b.name):
                why = (
                    f"{other.name!r} writes {read.name!r} after {block!r} reads it; inlined, "
                    "the expression would read the new values"
                )
                raise DependenceViolationError(
                    primitive, block, other.name, read.name, why, func, producer
                )

    new_func = remove_realize(func, realize_of(scope, block))
    new_func = inline_loads(new_func, buffer, index_vars, store.value)
    return remove_allocation(new_func, buffer)


# ---------------------------------------------------------------------------------------
# reverse_compute_inline
# ---------------------------------------------------------------------------------------


def reverse_compute_inline(func: PrimFunc, block: str) -> PrimFunc:
    """Inline a pure consumer into its single producer: the producer then writes the
    consumer's output directly, and the intermediate buffer is removed.

    The consumer's body must be one store with no reduce var or init; it must read one
    buffer that a block of its scope writes (the producer's), at one index tuple that is an
    affine bijection of its spatial iter vars: the iter vars themselves (``B[vi, vj]``),
    a fused index (``B[vi * 16 + vj]``), or the digits of one (``B[v // 16, v % 16]``,
    ``B[f // 128, f % 128]`` with ``f = vi * 2048 + vj * 64 + vk * 8 + vl``). Inverting it
    at the producer's store indices gives each consumer iter var as an expression of the
    producer's. The producer must be a complete block (no reduction: TVM refuses those
    too, the store of a reduction runs on partial results), its body one store, its buffer
    not a function output and read by no one else. Where the producer computes elements
    the consumer never reads, a ``T.where`` keeps the folded store inside the consumer's
    domain; where it does not compute every element the consumer reads, it is refused.

    Before (``reverse_compute_inline(func, "C")``)::

        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i_1, j_1 in T.grid(15, 15):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)

    After::

        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.where(i < 15 and j < 15)
                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

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
    producers = producers_and_consumers(scope, consumer)[0]
    later = writers_after(scope, consumer)  # write what it reads, after it
    if not producers + later:
        raise NoProducersError(primitive, block, func, consumer)
    if len(producers + later) > 1:
        names = [p.name for p in producers + later]
        raise SeveralProducersError(primitive, block, names, func, consumer)
    if later:
        buffer = shared_buffer(later[0].writes, consumer.reads)
        raise ProducerAfterConsumerError(
            primitive, block, later[0].name, block, buffer, func, consumer
        )
    producer = producers[0]
    if any(iv.kind == IterKind.REDUCE for iv in producer.iter_vars):
        raise ReductionProducerError(primitive, block, producer.name, func, producer)
    if not isinstance(producer.body, BufferStore):
        raise NotSingleStoreError(
            primitive, producer.name, describe_stmt(producer.body), func, producer
        )
    p_store = _without_init(primitive, func, block, producer)
    buffer = p_store.buffer
    if buffer not in buffers(consumer.reads):
        raise SeveralProducersError(primitive, block, [producer.name], func, consumer)
    if buffer in set(func.params):
        raise OutputBlockError(primitive, producer.name, buffer.name, func, producer)
    readers = readers_before(scope, producer) + producers_and_consumers(scope, producer)[1]
    others = [c.name for c in readers if c is not consumer]
    if others:
        raise ProducerHasOtherConsumersError(
            primitive, block, producer.name, buffer.name, others, func, consumer
        )
    loads = load_indices(store.value, buffer)
    if len(loads) > 1:
        raise SeveralReadIndicesError(primitive, block, buffer.name, func, consumer)
    inverse = invert_indices(loads[0], list(consumer.iter_vars), p_store.indices)
    if inverse is None:
        indices = ", ".join(expr_text(i) for i in loads[0])
        raise ReadNotBijectiveError(primitive, block, buffer.name, indices, func, consumer)
    mapping, guards = inverse
    between = [
        b
        for b in scope.blocks
        if scope.position(producer.name) < scope.position(b.name) < scope.position(block)
    ]
    check_passed_over(primitive, func, consumer, between, consumer)
    guards = guards + _domain_guards(primitive, func, producer, consumer, mapping)

    c_realize = realize_of(scope, block)
    p_realize, p_ancestors = scope.realize_and_ancestors(producer.name)
    p_realize = p_realize.replace(block=producer.replace(init=None, body=p_store))
    new_realize = fold_consumer(
        primitive, func, p_realize, p_ancestors, c_realize, mapping, guards
    )
    new_func = remove_realize(func, c_realize)
    new_func = replace_realize(new_func, producer.name, new_realize)
    return remove_allocation(new_func, buffer)


def _without_init(primitive: str, func: PrimFunc, block: str, producer: Block) -> BufferStore:
    """The producer's store with its init folded in. A block with an init but no reduce
    var runs the init and then the update once per element (TVM's
    test_inline_with_reduction), so ``B[i] = init; B[i] = g(B[i])`` is ``B[i] = g(init)``;
    an init of another shape is a reduction (``ReductionProducerError``)."""
    store = producer.body
    if producer.init is None:
        return store
    init = producer.init
    if not (
        isinstance(init, BufferStore)
        and init.buffer == store.buffer
        and init.indices == store.indices
        and not load_indices(init.value, store.buffer)
    ):
        raise ReductionProducerError(primitive, block, producer.name, func, producer)
    value = replace_loads_at(store.value, store.buffer, store.indices, init.value)
    if load_indices(value, store.buffer):  # read at other indices: a real reduction
        raise ReductionProducerError(primitive, block, producer.name, func, producer)
    return store.replace(value=value)


def _domain_guards(primitive, func, producer, consumer, mapping) -> list:
    """Conditions (in the consumer's iter vars) keeping the folded store inside the
    consumer's domain where the producer computes more; raises ``RegionNotCoveredError``
    where the producer does not compute every element the consumer reads."""
    ranges = {iv.var: d for iv in producer.iter_vars if (d := int_domain(iv)) is not None}
    guards = []
    for iv in consumer.iter_vars:
        dom = int_domain(iv)
        low, high = int_bounds(mapping[iv.var], ranges)
        if dom is None or low is None or high is None or low > dom[0] or high < dom[1]:
            why = (
                f"{producer.name!r} computes {iv.var.name} of {consumer.name!r} over "
                f"[{low}, {high}], but {consumer.name!r} needs "
                f"{list(dom) if dom else 'an unknown range'}"
            )
            raise RegionNotCoveredError(primitive, consumer.name, "", why, func, consumer)
        if low < dom[0]:
            guards.append(GE(iv.var, IntImm(dom[0], iv.var.dtype)))
        if high > dom[1]:
            guards.append(LT(iv.var, IntImm(dom[1] + 1, iv.var.dtype)))
    return guards
