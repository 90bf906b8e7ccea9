"""ScheduleError subclasses raised by ``sample_perfect_tile`` and ``sample_categorical``."""

from __future__ import annotations

from workbench.schedule.errors import ScheduleError

__all__ = [
    "TileCountError",
    "SampleNonConstantExtentError",
    "CategoricalProbabilityError",
    "CategoricalDecisionError",
]


class TileCountError(ScheduleError):
    """``sample_perfect_tile`` needs at least two tiles (TVM: "Cannot tile a loop into n")."""

    fields = ("loop", "n")
    named_fields = ("loop",)
    node_field = "loop"
    message = "cannot tile loop {loop!r} into {n!r} factors"
    why = "a perfect tile splits a loop into n >= 2 factors whose product is its extent"
    suggestion = "pass n=2 or more"


class SampleNonConstantExtentError(ScheduleError):
    """The loop's extent is not a constant, so there is nothing to factor."""

    fields = ("loop",)
    named_fields = ("loop",)
    node_field = "loop"
    message = "loop {loop!r} has no constant extent to tile"
    why = "perfect tiles are factorisations of a known extent"


class CategoricalProbabilityError(ScheduleError):
    """Candidates and probabilities of ``sample_categorical`` do not fit together."""

    fields = ("reason",)
    name_field = ""
    message = "bad candidates or probabilities: {reason}"
    why = "one non-negative probability per candidate, not all zero"


class CategoricalDecisionError(ScheduleError):
    """A recorded ``sample_categorical`` decision that is not an index of the candidates."""

    fields = ("decision", "count")
    name_field = ""
    message = "decision {decision!r} is not a candidate index (0 to {last})"
    why = "the decision of sample_categorical is the index of the chosen candidate"
    suggestion = "pass a decision from 0 to {last}"

    @property
    def last(self) -> int:
        return self.count - 1
