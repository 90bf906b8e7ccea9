"""Work counted, not timed: the Python calls a piece of code makes and the memory it takes.

A test that a decision "does not depend on the problem size" or "is proved, not
enumerated" once asserted seconds (``time.perf_counter() - start < 2.0``): true on a quiet
machine, false on a loaded CI runner, and blind to a slow-down under the bound. Calls and
peak traced memory are the same on every machine and run: enumerating 16M elements makes
millions of calls in Python, or allocates hundreds of MB in numpy; a proof does neither.

Example
-------
>>> used = work(sorted, [3, 1, 2])
>>> used.value, used.calls < 10, used.peak_bytes < 1 << 20
([1, 2, 3], True, True)
"""

from __future__ import annotations

import dataclasses
import sys
import tracemalloc


@dataclasses.dataclass(frozen=True)
class Work:
    calls: int  # Python and C function calls made
    peak_bytes: int  # the most memory traced at once (numpy's allocations included)
    value: object  # what the function returned


def work(fn, *args, **kwargs) -> Work:
    """Run ``fn(*args, **kwargs)`` counting its calls and its peak traced memory."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    previous = sys.getprofile()
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    sys.setprofile(count)
    try:
        value = fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
        peak = tracemalloc.get_traced_memory()[1] - base
        if not tracing:
            tracemalloc.stop()
    return Work(calls, max(0, peak), value)
