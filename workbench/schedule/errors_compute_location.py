"""ScheduleError subclasses raised by the compute location primitives
(``compute_at``, ``reverse_compute_at``, ``compute_inline``, ``reverse_compute_inline``).

One class per reason. Each constructor takes the names its message needs, the function
(unchanged) and the offending node (a ``Block`` or a ``For``, marked when the IR is
rendered); nothing is rendered here, so raising stays cheap.
"""

from __future__ import annotations

from workbench.ir import Node, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__: list[str] = [
    "RootBlockError",
    "BlockInInitError",
    "NotInSameScopeError",
    "LoopContainsBlockError",
    "NoConsumersError",
    "NoProducersError",
    "NotAncestorOfConsumerError",
    "NotAncestorOfProducerError",
    "ProducerAfterConsumerError",
    "DependenceViolationError",
    "OutputBlockError",
    "UnboundedRegionError",
    "RegionNotCoveredError",
    "AccumulationRecomputedError",
    "ConsumerDomainNotCoveredError",
    "PartialReductionError",
    "PredicateNotMovableError",
    "InlineReductionError",
    "NotSingleStoreError",
    "StoreIndicesNotIterVarsError",
    "SelfReadError",
    "SeveralProducersError",
    "ReductionProducerError",
    "ProducerHasOtherConsumersError",
    "SeveralReadIndicesError",
    "ReadNotBijectiveError",
]


# ---------------------------------------------------------------------------------------
# Where the block is
# ---------------------------------------------------------------------------------------


class RootBlockError(ScheduleError):
    """The root block cannot be moved or inlined."""

    def __init__(self, primitive: str, func: PrimFunc):
        super().__init__(
            primitive,
            "root",
            "the root block cannot be moved or inlined",
            detail="'root' is the function's body: it holds every other block and the "
            "intermediate buffers",
            suggestion=f"apply {primitive} to one of the blocks inside it",
            func=func,
        )


class BlockInInitError(ScheduleError):
    """The block sits inside another block's ``T.init()``."""

    def __init__(self, primitive: str, block: str, owner: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} is inside the init of block {owner!r}",
            detail=f"an init runs only when the reduction of {owner!r} starts; a block in it "
            "has no loop nest of its own to move or inline into",
            suggestion=f"schedule {owner!r} instead (decompose_reduction moves its init out)",
            func=func,
            node=node,
        )


class NotInSameScopeError(ScheduleError):
    """The loop is inside another block than the one around the block (a different scope)."""

    def __init__(self, primitive: str, block: str, loop: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"loop {loop!r} and block {block!r} are not in the same scope",
            detail=f"{primitive} moves a block among the loops of the block that encloses it; "
            f"{loop!r} is under a different enclosing block",
            suggestion="pick a loop from sch.get_loops() of a block in the same scope",
            func=func,
            node=node,
        )


class LoopContainsBlockError(ScheduleError):
    """The target loop is already around the block."""

    def __init__(self, primitive: str, block: str, loop: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"loop {loop!r} is already around block {block!r}",
            detail=f"{primitive} moves a block under a loop of another block's nest",
            suggestion=(
                "pass a loop of a consumer: sch.get_loops(consumer)"
                if primitive == "compute_at"
                else "pass a loop of a producer: sch.get_loops(producer)"
            ),
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Producers and consumers
# ---------------------------------------------------------------------------------------


class NoConsumersError(ScheduleError):
    """No block reads what the block writes: there is nothing to compute it for."""

    def __init__(self, primitive: str, block: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} has no consumers",
            detail=f"no block of its scope reads a buffer that {block!r} writes, so there is "
            "no consumer loop to compute it at",
            suggestion="compute_at needs a producer with a consumer (see sch.get_consumers)",
            func=func,
            node=node,
        )


class NoProducersError(ScheduleError):
    """No block writes what the block reads."""

    def __init__(self, primitive: str, block: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} has no producers",
            detail=f"no block of its scope writes a buffer that {block!r} reads (it reads "
            "function parameters only)",
            suggestion="apply it to a block that consumes another block's output "
            "(see sch.get_producers)",
            func=func,
            node=node,
        )


class NotAncestorOfConsumerError(ScheduleError):
    """compute_at: a consumer of the block is not under the target loop."""

    def __init__(
        self, primitive: str, block: str, loop: str, consumer: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"loop {loop!r} is not an ancestor of consumer {consumer!r}",
            detail=f"block {block!r} must be computed before every block that reads it; "
            f"consumer {consumer!r} is not under {loop!r}, so it would read values "
            f"that are not computed yet",
            suggestion=f"pick a loop around {consumer!r}: sch.get_loops(sch.get_block("
            f"{consumer!r})), or a loop around all consumers",
            func=func,
            node=node,
        )
        self.consumer = consumer


class NotAncestorOfProducerError(ScheduleError):
    """reverse_compute_at: no producer (or not every producer) of the block is under the loop."""

    def __init__(
        self, primitive: str, block: str, loop: str, producer: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"loop {loop!r} is not an ancestor of producer {producer!r}",
            detail=f"block {block!r} reads what {producer!r} writes; under {loop!r} it would "
            f"run before {producer!r} has produced its input",
            suggestion=f"pick a loop around {producer!r}: sch.get_loops(sch.get_block("
            f"{producer!r}))",
            func=func,
            node=node,
        )
        self.producer = producer


class ProducerAfterConsumerError(ScheduleError):
    """A block that reads a buffer comes before the block that writes it."""

    def __init__(
        self,
        primitive: str,
        name: str,
        producer: str,
        consumer: str,
        buffer: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            name,
            f"producer {producer!r} comes after its consumer {consumer!r}",
            detail=f"{consumer!r} reads {buffer!r} before {producer!r} writes it; moving one "
            "into the other's loops would change which values are read",
            suggestion="only move a producer towards a consumer that comes after it",
            func=func,
            node=node,
        )


class DependenceViolationError(ScheduleError):
    """Another block's access to a buffer would be reordered with the moved block's."""

    def __init__(
        self,
        primitive: str,
        block: str,
        other: str,
        buffer: str,
        why: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            block,
            f"moving block {block!r} would break a dependence on {buffer!r} with block {other!r}",
            detail=why,
            suggestion=f"move {other!r} first, or pick another location",
            func=func,
            node=node,
        )
        self.other = other


class OutputBlockError(ScheduleError):
    """The block writes a function parameter (an output): it must stay whole."""

    def __init__(self, primitive: str, block: str, buffer: str, func: PrimFunc, node: Node):
        if primitive == "compute_at":
            why = (
                f"compute_at computes only the part of {buffer!r} the consumers need at the "
                "loop, but the function's caller needs all of it"
            )
        else:
            why = f"inlining removes {buffer!r}, but it is a parameter of {func.name}"
        super().__init__(
            primitive,
            block,
            f"block {block!r} writes the function output {buffer!r}",
            detail=why,
            suggestion="use reverse_compute_at / reverse_compute_inline on the consumer, or "
            "cache_write to compute into an intermediate buffer first",
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------------------


class UnboundedRegionError(ScheduleError):
    """compute_at: the part of the buffer the consumers read at the loop cannot be bounded."""

    def __init__(
        self, primitive: str, block: str, loop: str, buffer: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"the region of {buffer!r} needed at loop {loop!r} cannot be bounded",
            detail=f"an index of {buffer!r} inside {loop!r} is data-dependent or not a "
            "sum/product with constants of the loop variables, so the part to compute at "
            "each iteration is unknown",
            suggestion="compute the block at a loop outside the irregular access, or leave it "
            "at the root",
            func=func,
            node=node,
        )


class RegionNotCoveredError(ScheduleError):
    """The location would not give the moved block everything it needs."""

    def __init__(self, primitive: str, block: str, loop: str, why: str, func: PrimFunc, node: Node):
        where = f"at loop {loop!r}" if loop else "here"
        super().__init__(
            primitive,
            block,
            f"{where}, the producers do not cover the region block {block!r} needs",
            detail=why,
            suggestion="pick an outer loop (one around a whole row or tile of what is read)",
            func=func,
            node=node,
        )


class AccumulationRecomputedError(ScheduleError):
    """compute_at would run an update without init twice for the same elements."""

    def __init__(
        self,
        primitive: str,
        block: str,
        loop: str,
        buffer: str,
        why: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            block,
            f"at loop {loop!r}, block {block!r} would add into {buffer!r} more than once",
            detail=f"{block!r} updates {buffer!r} from its own value and has no init (after "
            f"decompose_reduction, say), so it must run exactly once per element; {why}",
            suggestion="compute it at an outer loop where each element is computed once (the "
            "row loop of a row reduction), or compute_at before decompose_reduction: a "
            "block with its init starts each recomputation from scratch",
            func=func,
            node=node,
        )


class ConsumerDomainNotCoveredError(ScheduleError):
    """reverse_compute_at would leave part of the consumer's domain uncomputed."""

    def __init__(
        self, primitive: str, block: str, loop: str, missing: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"at loop {loop!r}, block {block!r} would no longer compute all of its domain",
            detail=f"its producers write only part of what it computes (it would skip {missing}): "
            "the consumer's iterations are narrowed to what the producers wrote at each "
            "iteration, and nothing else would compute the rest (e.g. the zero border of a "
            "padding block whose copy only covers the interior)",
            suggestion="keep the block where it is, compute_inline it into its consumer, or "
            "pick a loop whose producers write everything the block computes",
            func=func,
            node=node,
        )


class PartialReductionError(ScheduleError):
    """reverse_compute_at: at the loop, the producer's values are partial sums."""

    def __init__(
        self,
        primitive: str,
        block: str,
        loop: str,
        producer: str,
        reduce_loop: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            block,
            f"at loop {loop!r} the producer {producer!r} is not finished",
            detail=f"loop {reduce_loop!r} (at or around {loop!r}) is a reduction loop of "
            f"{producer!r}: inside it the values are partial results",
            suggestion=f"pick a loop outside {reduce_loop!r}, or reorder {reduce_loop!r} inward",
            func=func,
            node=node,
        )


class PredicateNotMovableError(ScheduleError):
    """The block's ``T.where`` uses loops that would not exist at the new location."""

    def __init__(self, primitive: str, block: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"the predicate (T.where) of block {block!r} cannot be moved",
            detail="it is not a bound on the block's bindings and uses loops that are removed",
            suggestion="move the block before adding the condition",
            func=func,
            node=node,
        )


# ---------------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------------


class InlineReductionError(ScheduleError):
    """Inlining a reduction (a block with reduce iter vars or an init)."""

    def __init__(self, primitive: str, block: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} is a reduction",
            detail="only pure injective blocks (one value per spatial point, no reduce "
            "variable, no init) can be inlined: a reduction's value exists only after its "
            "whole loop has run",
            suggestion="use compute_at (or reverse_compute_at) to move it instead",
            func=func,
            node=node,
        )


class NotSingleStoreError(ScheduleError):
    """The block's body is not one BufferStore."""

    def __init__(self, primitive: str, block: str, found: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"the body of block {block!r} is not a single store",
            detail=f"its body is {found}; inlining substitutes one stored expression",
            suggestion="use compute_at to move the block instead",
            func=func,
            node=node,
        )


class StoreIndicesNotIterVarsError(ScheduleError):
    """compute_inline: the stored indices are not the block's spatial iter vars."""

    def __init__(self, primitive: str, block: str, indices: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} stores at [{indices}], not at its iter vars",
            detail="to inline, every element must be the value of exactly one iteration: the "
            "store indices must be the block's spatial iter vars, each once",
            suggestion="use compute_at instead",
            func=func,
            node=node,
        )


class SelfReadError(ScheduleError):
    """The block reads the buffer it writes (an in-place update)."""

    def __init__(self, primitive: str, block: str, buffer: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} reads {buffer!r}, the buffer it writes",
            detail="an in-place update depends on the value before it, which inlining would lose",
            suggestion="write the result into a new buffer first",
            func=func,
            node=node,
        )


class SeveralProducersError(ScheduleError):
    """reverse_compute_inline: the block reads more than one produced buffer."""

    def __init__(
        self, primitive: str, block: str, producers: list[str], func: PrimFunc, node: Node
    ):
        names = ", ".join(repr(p) for p in producers)
        super().__init__(
            primitive,
            block,
            f"block {block!r} has several producers ({names})",
            detail="reverse_compute_inline folds the block into its one producer; with several "
            "it is not clear which one",
            suggestion="inline the other producers first (compute_inline)",
            func=func,
            node=node,
        )


class ReductionProducerError(ScheduleError):
    """reverse_compute_inline into a reduction (TVM refuses it too)."""

    def __init__(self, primitive: str, block: str, producer: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"the producer {producer!r} of block {block!r} is a reduction",
            detail=f"{producer!r}'s store runs once per reduction step on a partial result; "
            f"folding {block!r} into it would apply {block!r} to every partial result",
            suggestion="use reverse_compute_at to put the block under the producer's outer "
            "loops instead",
            func=func,
            node=node,
        )


class ProducerHasOtherConsumersError(ScheduleError):
    """reverse_compute_inline: other blocks read the producer's buffer too."""

    def __init__(
        self,
        primitive: str,
        block: str,
        producer: str,
        buffer: str,
        others: list[str],
        func: PrimFunc,
        node: Node,
    ):
        names = ", ".join(repr(o) for o in others)
        super().__init__(
            primitive,
            block,
            f"{buffer!r} has other consumers besides {block!r}: {names}",
            detail=f"reverse_compute_inline makes {producer!r} write {block!r}'s output instead "
            f"of {buffer!r}; its other consumers would lose their input",
            suggestion="inline or move the other consumers first",
            func=func,
            node=node,
        )


class SeveralReadIndicesError(ScheduleError):
    """reverse_compute_inline: the block reads the producer's buffer at several places."""

    def __init__(self, primitive: str, block: str, buffer: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} reads {buffer!r} at several different indices",
            detail="folded into the producer, the block sees one produced value at a time; "
            "a stencil needs several",
            suggestion="use reverse_compute_at instead",
            func=func,
            node=node,
        )


class ReadNotBijectiveError(ScheduleError):
    """reverse_compute_inline: the read indices are not the block's spatial iter vars."""

    def __init__(
        self, primitive: str, block: str, buffer: str, indices: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"block {block!r} reads {buffer}[{indices}], not one element per iteration",
            detail="each read index must be a different spatial iter var of the block and "
            "every spatial iter var must appear, so that each produced element gives "
            "exactly one iteration",
            suggestion="use reverse_compute_at instead",
            func=func,
            node=node,
        )
