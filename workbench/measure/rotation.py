"""Input rotation: enough copies of a kernel's arguments that caches do not flatter it.

A kernel timed again and again on the same 3 MB of arrays runs from the last-level cache after
the first call, which no real workload gets. ``make_argument_sets`` allocates copies of the
argument set until their total size exceeds twice the last-level cache (LLC), and the timing
loop cycles through them, so each call finds its data evicted by the calls before it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from workbench.backends.common import machine

FALLBACK_LLC_BYTES = 32 * 1024 * 1024
DEFAULT_MEMORY_LIMIT = 1 << 30  # bytes of copies, at most
DEFAULT_MAX_SETS = 256

def parse_cache_size(text: str) -> int:
    """Bytes in a sysfs cache size such as ``"32768K"`` or ``"1M"``.

    Example
    -------
    >>> parse_cache_size("32768K")
    33554432
    """
    size = machine.parse_cache_size(text)
    if size is None:
        raise ValueError(f"not a cache size: {text!r}")
    return size


def llc_bytes(cache_dir: str | Path | None = None) -> int:
    """Size in bytes of the last-level cache seen by CPU 0: the largest data or unified
    cache of the highest level (``machine_facts()``, or the sysfs folder ``cache_dir``).
    Falls back to 32 MiB where sysfs has no cache entry (macOS, containers that hide it).

    Example
    -------
    >>> llc_bytes() >= 1 << 20
    True
    """
    if cache_dir is None:
        return machine.machine_facts().last_level_cache
    caches = machine.read_caches(cache_dir)
    return caches[-1][1] if caches else FALLBACK_LLC_BYTES


def rotation_count(
    set_bytes: int,
    llc: int,
    *,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    max_sets: int = DEFAULT_MAX_SETS,
) -> int:
    """How many argument sets to cycle through: enough to exceed ``2 * llc`` bytes in all,
    but no more than ``max_sets`` and no more than fit in ``memory_limit``; at least one.

    Example
    -------
    >>> rotation_count(set_bytes=8 << 20, llc=32 << 20)   # 8 MiB sets, 32 MiB LLC
    9
    """
    if set_bytes <= 0:
        return 1
    wanted = math.floor(2 * llc / set_bytes) + 1
    affordable = max(1, memory_limit // set_bytes)
    return max(1, min(wanted, affordable, max_sets))


def argument_bytes(args: Sequence[object]) -> int:
    """Total bytes of the numpy arrays among ``args``."""
    return sum(arg.nbytes for arg in args if isinstance(arg, np.ndarray))


def make_argument_sets(args: Sequence[object], count: int) -> list[tuple[object, ...]]:
    """``count`` argument tuples: the caller's own ``args`` first, then copies.

    Every numpy array is copied (same values, shape, dtype and memory layout), which gives
    each set its own output arrays too; other arguments (scalars) are shared. Copying also
    touches every page, so no timed call pays for first-touch page faults.

    Example
    -------
    >>> a = np.arange(4.0)
    >>> sets = make_argument_sets((a, 2.0), 3)
    >>> len(sets), sets[0][0] is a, sets[1][0] is a, np.array_equal(sets[2][0], a)
    (3, True, False, True)
    """
    first = tuple(args)
    copies = [
        tuple(np.copy(arg, order="K") if isinstance(arg, np.ndarray) else arg for arg in first)
        for _ in range(count - 1)
    ]
    return [first, *copies]
