"""A bounded, thread-safe, least-recently-used in-memory cache for compiled kernels.

Each target keeps one (``numba_cpu``, ``numba_cuda``): a notebook that builds hundreds of
schedules (a tuning run) keeps only the ``maxsize`` most recently used kernels alive, where
an unbounded dict kept every one (and its machine code) until the process ended. The disk
caches are separate (see ``numba_cpu``).

Example
-------
>>> cache = LRUCache(maxsize=2)
>>> cache["a"] = 1; cache["b"] = 2; _ = cache.get("a"); cache["c"] = 3
>>> sorted(cache.keys())
['a', 'c']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

DEFAULT_MAXSIZE = 256


class LRUCache:
    """``key -> value`` with at most ``maxsize`` entries; the least recently used goes first."""

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE):
        if maxsize < 1:
            raise ValueError(f"LRUCache: maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def get(self, key: Hashable, default=None):
        with self._lock:
            if key not in self._data:
                self.misses += 1
                return default
            self.hits += 1
            self._data.move_to_end(key)
            return self._data[key]

    def __setitem__(self, key: Hashable, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
                self.evictions += 1

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def keys(self) -> list:
        with self._lock:
            return list(self._data)

    def clear(self) -> int:
        """Drop every entry; return how many there were."""
        with self._lock:
            count = len(self._data)
            self._data.clear()
            return count

    def resize(self, maxsize: int) -> None:
        """Change the bound (evicting the oldest entries if needed)."""
        with self._lock:
            self.maxsize = maxsize
            while len(self._data) > maxsize:
                self._data.popitem(last=False)
                self.evictions += 1
