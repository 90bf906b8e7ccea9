"""ScheduleError subclasses raised by the reduction primitives (``decompose_reduction``,
``rfactor``): one class per reason, each naming the block or loop and suggesting a fix.

Messages are plain strings built from names the caller already has; nothing is rendered
until the error is printed (``legal_primitives`` raises these by the dozen).
"""

from __future__ import annotations

from workbench.ir import Node, PrimFunc
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

    def __init__(self, primitive: str, block: str, why: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} is not a reduction",
            detail=why,
            suggestion=f"{primitive} applies to blocks with reduce axes "
            '(T.axis.reduce / "R" in T.axis.remap) that accumulate into one element',
            func=func,
            node=node,
        )
        self.block = block


class MissingInitError(ScheduleError):
    """The reduction block has no ``T.init()`` (it was decomposed already)."""

    def __init__(self, primitive: str, block: str, func: PrimFunc, node: Node):
        if primitive == "decompose_reduction":
            detail = "there is no init to move out: it was probably decomposed already"
            suggestion = "call decompose_reduction once per reduction block"
        else:
            detail = (
                "rfactor reads the reduction's identity from the init; a decomposed block has none"
            )
            suggestion = "apply rfactor before decompose_reduction"
        super().__init__(
            primitive,
            block,
            f"block {block!r} has no init",
            detail=detail,
            suggestion=suggestion,
            func=func,
            node=node,
        )
        self.block = block


# ---------------------------------------------------------------------------------------
# decompose_reduction: where the init goes
# ---------------------------------------------------------------------------------------


class InitLoopNotAncestorError(ScheduleError):
    """``decompose_reduction``'s loop is not one of the loops around the block."""

    def __init__(
        self, primitive: str, loop: str, block: str, loops: list[str], func: PrimFunc, node: Node
    ):
        around = ", ".join(repr(n) for n in loops) or "none"
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is not around block {block!r}",
            detail=f"the init block is placed before the given loop, which must be one of the "
            f"loops of block {block!r} (its loops: {around})",
            suggestion=f"pass a loop from sch.get_loops(block) of {block!r}",
            func=func,
            node=node,
        )
        self.block = block


class InitLoopInsideReductionError(ScheduleError):
    """``decompose_reduction``'s loop is inside (below) a loop of a reduce variable."""

    def __init__(
        self,
        primitive: str,
        loop: str,
        block: str,
        reduce_loop: str,
        iter_var: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is inside the reduction loop {reduce_loop!r}",
            detail=f"{reduce_loop!r} binds the reduce variable {iter_var!r} of block {block!r}; "
            "an init placed inside it would reset the accumulator on every iteration",
            suggestion=f"pass {reduce_loop!r} or a loop outside it",
            func=func,
            node=node,
        )
        self.block = block
        self.reduce_loop = reduce_loop


# ---------------------------------------------------------------------------------------
# rfactor: the loop nest
# ---------------------------------------------------------------------------------------


class NotReductionLoopError(ScheduleError):
    """The rfactor loop binds no reduce iteration variable (a spatial or unused loop)."""

    def __init__(self, primitive: str, loop: str, why: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is not a reduction loop",
            detail=why,
            suggestion="rfactor a loop that binds a reduce variable (sch.split the reduce "
            "loop first to get a k_0 / k_1 pair)",
            func=func,
            node=node,
        )


class MixedIterLoopError(ScheduleError):
    """A loop of the block binds both spatial and reduce iteration variables (e.g. a fuse
    of ``i`` and ``k``): rfactor cannot split it into a spatial and a reduction part."""

    def __init__(
        self,
        primitive: str,
        loop: str,
        block: str,
        spatial: list[str],
        reduce: list[str],
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} binds both spatial and reduce variables of block {block!r}",
            detail=f"it binds spatial {', '.join(spatial)} and reduce {', '.join(reduce)}; "
            "rfactor keeps spatial loops and turns one reduction loop into a new axis, so "
            "each loop must bind only one kind",
            suggestion="undo the fuse of spatial and reduction loops (sch.undo()), or fuse "
            "reduction loops only with each other",
            func=func,
            node=node,
        )
        self.block = block


class SharedReductionLoopError(ScheduleError):
    """A reduction loop of the block also holds other blocks."""

    def __init__(
        self, primitive: str, loop: str, block: str, others: list[str], func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} holds other blocks than {block!r}",
            detail=f"it also holds {', '.join(repr(o) for o in others)}; rfactor rewrites the "
            f"reduction loops of {block!r} and they must hold that block only",
            suggestion="move the other blocks out of the reduction loops first "
            "(compute_at / reverse_compute_at at a spatial loop)",
            func=func,
            node=node,
        )
        self.block = block


class UnboundLoopInReductionError(ScheduleError):
    """A loop that binds no iteration variable (extent > 1) lies under a reduction loop."""

    def __init__(self, primitive: str, loop: str, block: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} binds no iteration variable of block {block!r}",
            detail="it repeats the reduction's updates under a reduction loop; rfactor "
            "cannot tell which partial result its iterations belong to",
            suggestion="remove the loop or give it extent 1",
            func=func,
            node=node,
        )
        self.block = block


# ---------------------------------------------------------------------------------------
# rfactor: the reduction itself
# ---------------------------------------------------------------------------------------


class MultipleStoresError(ScheduleError):
    """The block's body (or init) is not exactly one store."""

    def __init__(self, primitive: str, block: str, found: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            block,
            f"block {block!r} is not a single-store reduction",
            detail=f"its {found}; rfactor needs one store C[...] = ... as the update and one "
            "as the init",
            suggestion="split the block into one block per output",
            func=func,
            node=node,
        )
        self.block = block


class NonAssociativeUpdateError(ScheduleError):
    """The update is not a recognised associative and commutative combination."""

    def __init__(
        self, primitive: str, block: str, found: str, why: str, func: PrimFunc, node: Node
    ):
        super().__init__(
            primitive,
            block,
            f"the update of block {block!r} is not an associative, commutative reduction",
            detail=f"found {found}: {why}; supported: {SUPPORTED_UPDATES} (either operand "
            "order, x not reading C)",
            suggestion="rewrite the update as one of the supported forms (e.g. C = C + (-x) "
            "instead of C = C - x)",
            func=func,
            node=node,
        )
        self.block = block
        self.found = found


class InitNotIdentityError(ScheduleError):
    """The init does not store the identity of the reduction's operator."""

    def __init__(
        self,
        primitive: str,
        block: str,
        reducer: str,
        found: str,
        identity: str,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            block,
            f"the init of block {block!r} is not the identity of {reducer}",
            detail=f"the init is {found}, the identity of {reducer} is {identity}; every "
            "partial result starts from the init, so any other value is counted once per "
            "partial result",
            suggestion=f"initialise with {identity} and apply the offset in a later block",
            func=func,
            node=node,
        )
        self.block = block


class FactorAxisOutOfRangeError(ScheduleError):
    """``factor_axis`` is not a valid position for the new dimension."""

    def __init__(
        self,
        primitive: str,
        loop: str,
        buffer: str,
        ndim: int,
        factor_axis: int,
        func: PrimFunc,
        node: Node,
    ):
        super().__init__(
            primitive,
            loop,
            f"factor_axis {factor_axis} is out of range for buffer {buffer!r}",
            detail=f"{buffer!r} has {ndim} dimension(s); the new axis goes at a position in "
            f"[{-(ndim + 1)}, {ndim}] (negative counts from the end)",
            suggestion=f"use a factor_axis between {-(ndim + 1)} and {ndim}",
            func=func,
            node=node,
        )
        self.factor_axis = factor_axis


class RfactorLoopNotSerialError(ScheduleError):
    """The rfactor loop is parallel, vectorized, unrolled or thread-bound (TVM's
    ``NotSerialLoopKindError``): its iterations would write one partial result each while
    already running at the same time, or an unroll/binding would be silently dropped."""

    def __init__(self, primitive: str, loop: str, kind: str, func: PrimFunc, node: Node):
        super().__init__(
            primitive,
            loop,
            f"loop {loop!r} is {kind}, not serial",
            detail=f"{primitive} needs a serial loop: it turns the loop into a spatial axis of "
            "partial results, and its kind would not carry over to either new loop nest",
            suggestion=f"apply {primitive} to the serial loop first, then parallelise or "
            "vectorize the loops of the new _rf block",
            func=func,
            node=node,
        )
        self.kind = kind
