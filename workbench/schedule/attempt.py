"""Try a primitive, keep the schedule if it is legal: the one helper every rule-based
scheduler uses (the graph's default schedules, the recipes' optional steps, the tuner's
generated space).

A primitive checks everything before it changes anything (``workbench.schedule`` guards
come first), so a refused step leaves the schedule as it was and the caller goes on.

>>> from workbench import ops
>>> from workbench.schedule import Schedule
>>> sch = Schedule(ops.matmul(8, 8, 8))
>>> i, j, k = sch.get_loops(sch.get_block("C"))
>>> attempt(sch.vectorize, k) is None        # a reduction loop does not vectorize
True
>>> applies(sch.vectorize, j), len(sch.trace)
(True, 3)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.schedule.errors import ScheduleError

REFUSALS: tuple[type[Exception], ...] = (ScheduleError,)
"""What a primitive raises when it refuses (the tuner's rules accept nothing else)."""

LOOKUP_REFUSALS: tuple[type[Exception], ...] = (ScheduleError, ValueError, LookupError)
"""Also a block or a loop a rule looked for and did not find (``get_block`` of a name the
kernel does not have, a loop index past the nest), and a rejected argument: the rules of
the graph's default schedules, which look at kernels they did not write."""


def attempt(step: Callable, *args: Any, refusals: tuple[type[Exception], ...] = REFUSALS,
            **kwargs: Any) -> Any:
    """``step(*args, **kwargs)``, or None when it raises one of ``refusals`` (the schedule
    is then unchanged)."""
    try:
        return step(*args, **kwargs)
    except refusals:
        return None


def applies(step: Callable, *args: Any, refusals: tuple[type[Exception], ...] = REFUSALS,
            **kwargs: Any) -> bool:
    """Apply ``step``; False (the schedule unchanged) when it raises one of ``refusals``."""
    try:
        step(*args, **kwargs)
    except refusals:
        return False
    return True


__all__ = ["LOOKUP_REFUSALS", "REFUSALS", "applies", "attempt"]
