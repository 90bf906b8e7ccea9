"""ScheduleError subclasses raised by the reduction primitives (``decompose_reduction``,
``rfactor``): one class per reason, each naming the block or loop and suggesting a fix.

Messages are plain strings built from names the caller already has; nothing is rendered
until the error is printed (``legal_primitives`` raises these by the dozen).
"""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__: list[str] = [
    "NotReductionBlockError",
    "MissingInitError",
    "InitLoopNotAncestorError",
    "InitLoopInsideReductionError",
    "NotReductionLoopError",
    "MixedIterLoopError",
    "SharedReductionLoopError",
    "UnboundLoopInReductionError",
    "MultipleStoresError",
    "NonAssociativeUpdateError",
    "InitNotIdentityError",
    "FactorAxisOutOfRangeError",
    "RfactorLoopNotSerialError",
]

SUPPORTED_UPDATES = "C = C + x, C = C * x, C = T.max(C, x), C = T.min(C, x)"
"""The update forms ``rfactor`` recognises (either operand order; ``x`` must not read C)."""


# ---------------------------------------------------------------------------------------
# Both primitives: the block
# ---------------------------------------------------------------------------------------


class NotReductionBlockError(ScheduleError):
    """The block is not a reduction: it has no reduce iteration variable, or the element it
    writes depends on one."""

    fields = ("block", "reason")
    message = "block {block!r} is not a reduction"
    why = "{reason}"
    suggestion = (
        '{primitive} applies to blocks with reduce axes (T.axis.reduce / "R" in T.axis.remap) '
        "that accumulate into one element"
    )


class MissingInitError(ScheduleError):
    """The reduction block has no ``T.init()`` (it was decomposed already)."""

    fields = ("block",)
    message = "block {block!r} has no init"
    why = "{reason}"
    suggestion = "{advice}"

    @property
    def reason(self) -> str:
        if self.primitive == "decompose_reduction":
            return "there is no init to move out: it was probably decomposed already"
        return "rfactor reads the reduction's identity from the init; a decomposed block has none"

    @property
    def advice(self) -> str:
        if self.primitive == "decompose_reduction":
            return "call decompose_reduction once per reduction block"
        return "apply rfactor before decompose_reduction"


# ---------------------------------------------------------------------------------------
# decompose_reduction: where the init goes
# ---------------------------------------------------------------------------------------


class InitLoopNotAncestorError(ScheduleError):
    """``decompose_reduction``'s loop is not one of the loops around the block."""

    fields = ("loop", "block", "loops")
    message = "loop {loop!r} is not around block {block!r}"
    why = (
        "the init block is placed before the given loop, which must be one of the loops of "
        "block {block!r} (its loops: {around})"
    )
    suggestion = "pass a loop from sch.get_loops(block) of {block!r}"

    @property
    def around(self) -> str:
        return ", ".join(repr(n) for n in self.loops) or "none"


class InitLoopInsideReductionError(ScheduleError):
    """``decompose_reduction``'s loop is inside (below) a loop of a reduce variable."""

    fields = ("loop", "block", "reduce_loop", "iter_var")
    message = "loop {loop!r} is inside the reduction loop {reduce_loop!r}"
    why = (
        "{reduce_loop!r} binds the reduce variable {iter_var!r} of block {block!r}; an init "
        "placed inside it would reset the accumulator on every iteration"
    )
    suggestion = "pass {reduce_loop!r} or a loop outside it"


class InitLoopRecomputedError(ScheduleError):
    """A loop between ``decompose_reduction``'s loop and the block binds none of the block's
    iteration variables: the block is recomputed on every iteration of it (``compute_at``)."""

    fields = ("loop", "block", "free_loop")
    message = "block {block!r} is recomputed in loop {free_loop!r}, below {loop!r}"
    why = (
        "{free_loop!r} binds none of {block!r}'s iteration variables, so every iteration "
        "recomputes the whole reduction; an init placed before {loop!r} would run once while "
        "the updates run on every iteration of {free_loop!r}, accumulating them all"
    )
    suggestion = "pass {free_loop!r} or a loop below it"


class InitLoopRepeatsElementsError(InitLoopRecomputedError):
    """A loop between ``decompose_reduction``'s loop and the block binds only spatial
    iteration variables, but several of its iterations write one element (``compute_at``
    under a fused loop: ``vi = f // 10``): each of them reruns that element's reduction."""

    fields = ("loop", "block", "free_loop", "write")
    message = ("block {block!r} reruns its reduction of one element in several iterations "
               "of {free_loop!r}")
    why = (
        "iterations of {free_loop!r} write the same element ({write}), each running the "
        "whole reduction from its init; an init placed before {loop!r} would run once per "
        "element while the updates of every such iteration accumulate"
    )
    suggestion = ("pass a loop below {free_loop!r}, or compute the block at a loop whose "
                  "iterations write distinct elements")


# ---------------------------------------------------------------------------------------
# rfactor: the loop nest
# ---------------------------------------------------------------------------------------


class NotReductionLoopError(ScheduleError):
    """The rfactor loop binds no reduce iteration variable (a spatial or unused loop)."""

    fields = ("loop", "reason")
    message = "loop {loop!r} is not a reduction loop"
    why = "{reason}"
    suggestion = (
        "rfactor a loop that binds a reduce variable (sch.split the reduce loop first to get "
        "a k_0 / k_1 pair)"
    )


class MixedIterLoopError(ScheduleError):
    """A loop of the block binds both spatial and reduce iteration variables (e.g. a fuse
    of ``i`` and ``k``): rfactor cannot split it into a spatial and a reduction part."""

    fields = ("loop", "block", "spatial", "reduce")
    message = "loop {loop!r} binds both spatial and reduce variables of block {block!r}"
    why = (
        "it binds spatial {spatial_text} and reduce {reduce_text}; rfactor keeps spatial "
        "loops and turns one reduction loop into a new axis, so each loop must bind only one "
        "kind"
    )
    suggestion = (
        "undo the fuse of spatial and reduction loops (sch.undo()), or fuse reduction loops "
        "only with each other"
    )

    @property
    def spatial_text(self) -> str:
        return ", ".join(self.spatial)

    @property
    def reduce_text(self) -> str:
        return ", ".join(self.reduce)


class SharedReductionLoopError(ScheduleError):
    """A reduction loop of the block also holds other blocks."""

    fields = ("loop", "block", "others")
    message = "loop {loop!r} holds other blocks than {block!r}"
    why = (
        "it also holds {others_text}; rfactor rewrites the reduction loops of {block!r} and "
        "they must hold that block only"
    )
    suggestion = (
        "move the other blocks out of the reduction loops first (compute_at / "
        "reverse_compute_at at a spatial loop)"
    )

    @property
    def others_text(self) -> str:
        return ", ".join(repr(o) for o in self.others)


class UnboundLoopInReductionError(ScheduleError):
    """A loop that binds no iteration variable (extent > 1) lies under a reduction loop."""

    fields = ("loop", "block")
    message = "loop {loop!r} binds no iteration variable of block {block!r}"
    why = (
        "it repeats the reduction's updates under a reduction loop; rfactor cannot tell "
        "which partial result its iterations belong to"
    )
    suggestion = "remove the loop or give it extent 1"


# ---------------------------------------------------------------------------------------
# rfactor: the reduction itself
# ---------------------------------------------------------------------------------------


class MultipleStoresError(ScheduleError):
    """The block's body (or init) is not exactly one store."""

    fields = ("block", "found")
    message = "block {block!r} is not a single-store reduction"
    why = "its {found}; rfactor needs one store C[...] = ... as the update and one as the init"
    suggestion = "split the block into one block per output"


class NonAssociativeUpdateError(ScheduleError):
    """The update is not a recognised associative and commutative combination."""

    fields = ("block", "found", "reason")
    message = "the update of block {block!r} is not an associative, commutative reduction"
    why = "found {found}: {reason}; supported: {supported} (either operand order, x not reading C)"
    suggestion = (
        "rewrite the update as one of the supported forms (e.g. C = C + (-x) instead of "
        "C = C - x)"
    )
    supported = SUPPORTED_UPDATES


class InitNotIdentityError(ScheduleError):
    """The init does not store the identity of the reduction's operator."""

    fields = ("block", "reducer", "found", "identity")
    message = "the init of block {block!r} is not the identity of {reducer}"
    why = (
        "the init is {found}, the identity of {reducer} is {identity}; every partial result "
        "starts from the init, so any other value is counted once per partial result"
    )
    suggestion = "initialise with {identity} and apply the offset in a later block"


class FactorAxisOutOfRangeError(ScheduleError):
    """``factor_axis`` is not a valid position for the new dimension."""

    fields = ("loop", "buffer", "ndim", "factor_axis")
    name_field = "loop"
    message = "factor_axis {factor_axis} is out of range for buffer {buffer!r}"
    why = (
        "{buffer!r} has {ndim} dimension(s); the new axis goes at a position in "
        "[{lowest}, {ndim}] (negative counts from the end)"
    )
    suggestion = "use a factor_axis between {lowest} and {ndim}"

    @property
    def lowest(self) -> int:
        return -(self.ndim + 1)


class RfactorLoopNotSerialError(ScheduleError):
    """The rfactor loop is parallel, vectorized, unrolled or thread-bound (TVM's
    ``NotSerialLoopKindError``): its iterations would write one partial result each while
    already running at the same time, or an unroll/binding would be silently dropped."""

    fields = ("loop", "kind")
    message = "loop {loop!r} is {kind}, not serial"
    why = (
        "{primitive} needs a serial loop: it turns the loop into a spatial axis of partial "
        "results, and its kind would not carry over to either new loop nest"
    )
    suggestion = (
        "apply {primitive} to the serial loop first, then parallelise or vectorize the loops "
        "of the new _rf block"
    )
