"""ScheduleError subclasses raised by ``sample_perfect_tile`` and ``sample_categorical``."""

from __future__ import annotations

from workbench.ir import For, PrimFunc
from workbench.schedule.errors import ScheduleError

__all__ = [
    "TileCountError",
    "SampleNonConstantExtentError",
    "CategoricalProbabilityError",
    "CategoricalDecisionError",
]


class TileCountError(ScheduleError):
    """``sample_perfect_tile`` needs at least two tiles (TVM: "Cannot tile a loop into n")."""

    def __init__(self, primitive: str, loop: For, n: object, func: PrimFunc):
        super().__init__(
            primitive,
            loop.loop_var.name,
            f"cannot tile loop {loop.loop_var.name!r} into {n!r} factors",
            detail="a perfect tile splits a loop into n >= 2 factors whose product is its extent",
            suggestion="pass n=2 or more",
            func=func,
            node=loop,
        )
        self.n = n


class SampleNonConstantExtentError(ScheduleError):
    """The loop's extent is not a constant, so there is nothing to factor."""

    def __init__(self, primitive: str, loop: For, func: PrimFunc):
        super().__init__(
            primitive,
            loop.loop_var.name,
            f"loop {loop.loop_var.name!r} has no constant extent to tile",
            detail="perfect tiles are factorisations of a known extent",
            func=func,
            node=loop,
        )


class CategoricalProbabilityError(ScheduleError):
    """Candidates and probabilities of ``sample_categorical`` do not fit together."""

    def __init__(self, primitive: str, why: str):
        super().__init__(
            primitive,
            "",
            f"bad candidates or probabilities: {why}",
            detail="one non-negative probability per candidate, not all zero",
        )


class CategoricalDecisionError(ScheduleError):
    """A recorded ``sample_categorical`` decision that is not an index of the candidates."""

    def __init__(self, primitive: str, decision: object, count: int):
        super().__init__(
            primitive,
            "",
            f"decision {decision!r} is not a candidate index (0 to {count - 1})",
            detail="the decision of sample_categorical is the index of the chosen candidate",
            suggestion=f"pass a decision from 0 to {count - 1}",
        )
        self.decision = decision
