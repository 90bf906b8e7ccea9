"""Views already made, kept per history node, so that revisiting a node is instant.

A history node never changes (actions make new nodes), so anything drawn from it (its
highlighted IR, its generated code, its loop-nest drawing, its legality table at a
selection, its machine code) can be kept under ``(node id, view name, *what else it
depends on)``: the selection, the target. The explorer's worker threads fill the cache and
the UI thread reads it; ``hits`` and ``misses`` count what was reused (tests read them).

Example
-------
>>> cache = ViewCache()
>>> cache.get((0, "IR"), lambda: "<pre>...</pre>")
'<pre>...</pre>'
>>> cache.get((0, "IR"), lambda: "never called")
'<pre>...</pre>'
>>> cache.hits, cache.misses
(1, 1)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_MISSING = object()


class ViewCache:
    """A thread-safe ``key -> view`` map that counts hits and misses (see the module)."""

    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The view under ``key``, made by ``make()`` on the first request.

        ``make`` runs outside the lock: two threads asking for the same missing key may both
        make it (the views are pure, so either copy is right).
        """
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is not _MISSING:
                self.hits += 1
                return value
        value = make()
        with self._lock:
            self.misses += 1
            self._items[key] = value
        return value

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The view under ``key`` if it was made, else ``default`` (counts nothing)."""
        with self._lock:
            return self._items.get(key, default)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
