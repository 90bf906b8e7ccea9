"""ScheduleError subclasses raised by the compute location primitives
(``compute_at``, ``reverse_compute_at``, ``compute_inline``, ``reverse_compute_inline``).

One class per reason, declared with the template of ``errors.py``: ``fields`` are the
constructor's arguments after ``primitive`` (then the function, unchanged, and the
offending node, a ``Block`` or a ``For``, marked when the IR is rendered); ``message``,
``why`` and ``suggestion`` are format strings filled from them. Nothing is rendered here,
so raising stays cheap.
"""

from __future__ import annotations

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
    "InsertionIndexError",
    "UnboundedRegionError",
    "RegionNotCoveredError",
    "AccumulationRecomputedError",
    "ParallelRecomputeError",
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

    fields = ()
    name_field = "root"
    root = "root"
    message = "the root block cannot be moved or inlined"
    why = (
        "'root' is the function's body: it holds every other block and the intermediate "
        "buffers"
    )
    suggestion = "apply {primitive} to one of the blocks inside it"


class BlockInInitError(ScheduleError):
    """The block sits inside another block's ``T.init()``."""

    fields = ("block", "owner")
    message = "block {block!r} is inside the init of block {owner!r}"
    why = (
        "an init runs only when the reduction of {owner!r} starts; a block in it has no "
        "loop nest of its own to move or inline into"
    )
    suggestion = "schedule {owner!r} instead (decompose_reduction moves its init out)"


class NotInSameScopeError(ScheduleError):
    """The loop is inside another block than the one around the block (a different scope)."""

    fields = ("block", "loop")
    message = "loop {loop!r} and block {block!r} are not in the same scope"
    why = (
        "{primitive} moves a block among the loops of the block that encloses it; {loop!r} "
        "is under a different enclosing block"
    )
    suggestion = "pick a loop from sch.get_loops() of a block in the same scope"


class LoopContainsBlockError(ScheduleError):
    """The target loop is already around the block."""

    fields = ("block", "loop")
    message = "loop {loop!r} is already around block {block!r}"
    why = "{primitive} moves a block under a loop of another block's nest"
    suggestion = "pass a loop of a {other_kind}: sch.get_loops({other_kind})"

    @property
    def other_kind(self) -> str:
        return "consumer" if self.primitive == "compute_at" else "producer"


# ---------------------------------------------------------------------------------------
# Producers and consumers
# ---------------------------------------------------------------------------------------


class NoConsumersError(ScheduleError):
    """No block reads what the block writes: there is nothing to compute it for."""

    fields = ("block",)
    message = "block {block!r} has no consumers"
    why = (
        "no block of its scope reads a buffer that {block!r} writes, so there is no "
        "consumer loop to compute it at"
    )
    suggestion = "compute_at needs a producer with a consumer (see sch.get_consumers)"


class NoProducersError(ScheduleError):
    """No block writes what the block reads."""

    fields = ("block",)
    message = "block {block!r} has no producers"
    why = (
        "no block of its scope writes a buffer that {block!r} reads (it reads function "
        "parameters only)"
    )
    suggestion = (
        "apply it to a block that consumes another block's output (see sch.get_producers)"
    )


class NotAncestorOfConsumerError(ScheduleError):
    """compute_at: a consumer of the block is not under the target loop."""

    fields = ("block", "loop", "consumer")
    message = "loop {loop!r} is not an ancestor of consumer {consumer!r}"
    why = (
        "block {block!r} must be computed before every block that reads it; consumer "
        "{consumer!r} is not under {loop!r}, so it would read values that are not computed "
        "yet"
    )
    suggestion = (
        "pick a loop around {consumer!r}: sch.get_loops(sch.get_block({consumer!r})), or a "
        "loop around all consumers"
    )


class NotAncestorOfProducerError(ScheduleError):
    """reverse_compute_at: no producer (or not every producer) of the block is under the loop."""

    fields = ("block", "loop", "producer")
    message = "loop {loop!r} is not an ancestor of producer {producer!r}"
    why = (
        "block {block!r} reads what {producer!r} writes; under {loop!r} it would run "
        "before {producer!r} has produced its input"
    )
    suggestion = "pick a loop around {producer!r}: sch.get_loops(sch.get_block({producer!r}))"


class ProducerAfterConsumerError(ScheduleError):
    """A block that reads a buffer comes before the block that writes it."""

    fields = ("block", "producer", "consumer", "buffer")
    message = "producer {producer!r} comes after its consumer {consumer!r}"
    why = (
        "{consumer!r} reads {buffer!r} before {producer!r} writes it; moving one into the "
        "other's loops would change which values are read"
    )
    suggestion = "only move a producer towards a consumer that comes after it"


class DependenceViolationError(ScheduleError):
    """Another block's access to a buffer would be reordered with the moved block's."""

    fields = ("block", "other", "buffer", "reason")
    message = (
        "moving block {block!r} would break a dependence on {buffer!r} with block {other!r}"
    )
    why = "{reason}"
    suggestion = "move {other!r} first, or pick another location"


class OutputBlockError(ScheduleError):
    """The block writes a function parameter (an output): it must stay whole."""

    fields = ("block", "buffer")
    message = "block {block!r} writes the function output {buffer!r}"
    why = "{reason}"
    suggestion = (
        "use reverse_compute_at / reverse_compute_inline on the consumer, or cache_write "
        "to compute into an intermediate buffer first"
    )

    @property
    def reason(self) -> str:
        if self.primitive == "compute_at":
            return (
                f"compute_at computes only the part of {self.buffer!r} the consumers need at "
                "the loop, but the function's caller needs all of it"
            )
        return f"inlining removes {self.buffer!r}, but it is a parameter of {self.func.name}"


class InsertionIndexError(ScheduleError):
    """compute_at / reverse_compute_at: ``index`` is not a valid position in the loop body."""

    fields = ("block", "loop", "index", "first", "last")
    message = "index {index} is not a valid position for block {block!r} in loop {loop!r}"
    why = (
        "the block must come after its producers and before its consumers in the loop "
        "body: valid positions are {first}..{last} (or -1, the last, and -2, the first)"
    )
    suggestion = "pass index=-1 (TVM's default) or a position in {first}..{last}"


# ---------------------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------------------


class UnboundedRegionError(ScheduleError):
    """compute_at: the part of the buffer the consumers read at the loop cannot be bounded."""

    fields = ("block", "loop", "buffer")
    message = "the region of {buffer!r} needed at loop {loop!r} cannot be bounded"
    why = (
        "an index of {buffer!r} inside {loop!r} is data-dependent or not a sum/product with "
        "constants of the loop variables, so the part to compute at each iteration is "
        "unknown"
    )
    suggestion = (
        "compute the block at a loop outside the irregular access, or leave it at the root"
    )


class RegionNotCoveredError(ScheduleError):
    """The location would not give the moved block everything it needs."""

    fields = ("block", "loop", "reason")
    message = "{where}, the producers do not cover the region block {block!r} needs"
    why = "{reason}"
    suggestion = "pick an outer loop (one around a whole row or tile of what is read)"

    @property
    def where(self) -> str:
        return f"at loop {self.loop!r}" if self.loop else "here"


class AccumulationRecomputedError(ScheduleError):
    """compute_at would run an update without init twice for the same elements."""

    fields = ("block", "loop", "buffer", "reason")
    message = "at loop {loop!r}, block {block!r} would add into {buffer!r} more than once"
    why = (
        "{block!r} updates {buffer!r} from its own value and has no init (after "
        "decompose_reduction, say), so it must run exactly once per element; {reason}"
    )
    suggestion = (
        "compute it at an outer loop where each element is computed once (the row loop of "
        "a row reduction), or compute_at before decompose_reduction: a block with its init "
        "starts each recomputation from scratch"
    )


class ParallelRecomputeError(ScheduleError):
    """The move would make iterations of a parallel / vectorized loop share what they write."""

    fields = ("block", "loop", "parallel_loop", "buffer")
    message = (
        "at loop {loop!r}, block {block!r} would make iterations of the parallel loop "
        "{parallel_loop!r} touch the same elements of {buffer!r}"
    )
    why = (
        "under {loop!r} every iteration of {parallel_loop!r} computes its own copy of what "
        "{block!r} writes, into one shared buffer, while the other iterations read or write "
        "it: the iterations would race"
    )
    suggestion = (
        "give each iteration its own copy first (set_scope of {block!r}'s output {buffer!r} "
        "to \"local\": a local intermediate is allocated inside the loop), compute_at a "
        "loop where the iterations of {parallel_loop!r} touch different elements, or make "
        "{parallel_loop!r} serial"
    )


class ConsumerDomainNotCoveredError(ScheduleError):
    """reverse_compute_at would leave part of the consumer's domain uncomputed."""

    fields = ("block", "loop", "missing")
    message = "at loop {loop!r}, block {block!r} would no longer compute all of its domain"
    why = (
        "its producers write only part of what it computes (it would skip {missing}): the "
        "consumer's iterations are narrowed to what the producers wrote at each iteration, "
        "and nothing else would compute the rest (e.g. the zero border of a padding block "
        "whose copy only covers the interior)"
    )
    suggestion = (
        "keep the block where it is, compute_inline it into its consumer, or pick a loop "
        "whose producers write everything the block computes"
    )


class PartialReductionError(ScheduleError):
    """reverse_compute_at: at the loop, the producer's values are partial sums."""

    fields = ("block", "loop", "producer", "reduce_loop")
    message = "at loop {loop!r} the producer {producer!r} is not finished"
    why = (
        "loop {reduce_loop!r} (at or around {loop!r}) is a reduction loop of {producer!r}: "
        "inside it the values are partial results"
    )
    suggestion = "pick a loop outside {reduce_loop!r}, or reorder {reduce_loop!r} inward"


class PredicateNotMovableError(ScheduleError):
    """The block's ``T.where`` uses loops that would not exist at the new location."""

    fields = ("block",)
    message = "the predicate (T.where) of block {block!r} cannot be moved"
    why = "it is not a bound on the block's bindings and uses loops that are removed"
    suggestion = "move the block before adding the condition"


class BeyondIterationsError(ScheduleError):
    """The consumers need more of the buffer than the block ever computed: moving it would
    make it compute points outside the iterations it runs now."""

    fields = ("block", "loop", "iter_var", "before", "after")
    message = (
        "block {block!r} runs {iter_var!r} over {before} now, but under loop {loop!r} it would "
        "run over {after}"
    )
    why = (
        "its consumers read more of the buffer than {block!r} writes (another block writes "
        "the rest, e.g. the constant border of decompose_padding): the moved block would "
        "compute points it never computed, with indices outside its own iterations"
    )
    suggestion = (
        "move the block that writes the rest too, or compute {block!r} at a loop where the "
        "consumers read only what it writes"
    )


# ---------------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------------


class InlineReductionError(ScheduleError):
    """Inlining a reduction (a block with reduce iter vars or an init)."""

    fields = ("block",)
    message = "block {block!r} is a reduction"
    why = (
        "only pure injective blocks (one value per spatial point, no reduce variable, no "
        "init) can be inlined: a reduction's value exists only after its whole loop has run"
    )
    suggestion = "use compute_at (or reverse_compute_at) to move it instead"


class NotSingleStoreError(ScheduleError):
    """The block's body is not one BufferStore."""

    fields = ("block", "found")
    message = "the body of block {block!r} is not a single store"
    why = "its body is {found}; inlining substitutes one stored expression"
    suggestion = "use compute_at to move the block instead"


class StoreIndicesNotIterVarsError(ScheduleError):
    """compute_inline: the stored indices are not the block's spatial iter vars."""

    fields = ("block", "indices")
    message = "block {block!r} stores at [{indices}], not at its iter vars"
    why = (
        "to inline, every element must be the value of exactly one iteration: the store "
        "indices must be the block's spatial iter vars, each once"
    )
    suggestion = "use compute_at instead"


class SelfReadError(ScheduleError):
    """The block reads the buffer it writes (an in-place update)."""

    fields = ("block", "buffer")
    message = "block {block!r} reads {buffer!r}, the buffer it writes"
    why = "an in-place update depends on the value before it, which inlining would lose"
    suggestion = "write the result into a new buffer first"


class SeveralProducersError(ScheduleError):
    """reverse_compute_inline: the block reads more than one produced buffer."""

    fields = ("block", "producers")
    message = "block {block!r} has several producers ({names})"
    why = (
        "reverse_compute_inline folds the block into its one producer; with several it is "
        "not clear which one"
    )
    suggestion = "inline the other producers first (compute_inline)"

    @property
    def names(self) -> str:
        return ", ".join(repr(p) for p in self.producers)


class ReductionProducerError(ScheduleError):
    """reverse_compute_inline into a reduction (TVM refuses it too)."""

    fields = ("block", "producer")
    message = "the producer {producer!r} of block {block!r} is a reduction"
    why = (
        "{producer!r}'s store runs once per reduction step on a partial result; folding "
        "{block!r} into it would apply {block!r} to every partial result"
    )
    suggestion = (
        "use reverse_compute_at to put the block under the producer's outer loops instead"
    )


class ProducerHasOtherConsumersError(ScheduleError):
    """reverse_compute_inline: other blocks read the producer's buffer too."""

    fields = ("block", "producer", "buffer", "others")
    message = "{buffer!r} has other consumers besides {block!r}: {names}"
    why = (
        "reverse_compute_inline makes {producer!r} write {block!r}'s output instead of "
        "{buffer!r}; its other consumers would lose their input"
    )
    suggestion = "inline or move the other consumers first"

    @property
    def names(self) -> str:
        return ", ".join(repr(o) for o in self.others)


class SeveralReadIndicesError(ScheduleError):
    """reverse_compute_inline: the block reads the producer's buffer at several places."""

    fields = ("block", "buffer")
    message = "block {block!r} reads {buffer!r} at several different indices"
    why = (
        "folded into the producer, the block sees one produced value at a time; a stencil "
        "needs several"
    )
    suggestion = "use reverse_compute_at instead"


class ReadNotBijectiveError(ScheduleError):
    """reverse_compute_inline: the read indices are not an affine bijection of the block's
    spatial iter vars."""

    fields = ("block", "buffer", "indices")
    message = "block {block!r} reads {buffer}[{indices}], not one element per iteration"
    why = (
        "the read indices must be an affine bijection of the block's spatial iter vars "
        "(the iter vars themselves, a fused index such as vi * 16 + vj, or its digits "
        "// and %), so that each produced element gives exactly one iteration"
    )
    suggestion = "use reverse_compute_at instead"
