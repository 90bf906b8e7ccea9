"""Panes made only when their tab is open: the machine code and the access maps.

Compiling a node's kernel for its LLVM IR, assembly or PTX costs about half a second, and
enumerating a tile's accesses tens of milliseconds per buffer; most changes are never looked
at that way. Each such pane shows a placeholder while its tab is closed; opening the tab (or
changing the node or the selection while it is open) makes it on one worker thread, keeps it
in the explorer's ``ViewCache`` under the node and what else it depends on, and fills the
widgets if the explorer still shows that node.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ipywidgets

    from workbench.widgets.explorer import Explorer


@dataclass(frozen=True)
class LazyPane:
    """One pane made on demand.

    ``key()`` names what it shows (node id first), ``is_open()`` says whether its tab is
    visible, ``make(key)`` returns one HTML string per widget of ``targets()``.
    """

    name: str
    key: Callable[[], tuple]
    is_open: Callable[[], bool]
    make: Callable[[tuple], tuple[str, ...]]
    targets: Callable[[], list[ipywidgets.HTML]]
    placeholder: str
    pending: str


class OnDemand:
    """The explorer's lazy panes and the worker thread that makes them."""

    def __init__(self, explorer: Explorer, panes: list[LazyPane]):
        self.explorer = explorer
        self.panes = {pane.name: pane for pane in panes}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-on-demand")

    def show(self, name: str) -> None:
        """Fill pane ``name`` from the cache, or make it when its tab is open."""
        pane = self.panes[name]
        key = pane.key()
        views = self.explorer.cache.peek(key)
        if views is None and not pane.is_open():
            self._fill(pane, (pane.placeholder,) * len(pane.targets()))
            return
        if views is None:
            self._fill(pane, (pane.pending,) * len(pane.targets()))
            future = self.executor.submit(self._make, pane, key)
            self.explorer._views_pending.append(future)
            return
        self._fill(pane, views)

    def show_open(self) -> None:
        """Make every pane whose tab is open (a tab was just selected)."""
        for name, pane in self.panes.items():
            if pane.is_open():
                self.show(name)

    def _make(self, pane: LazyPane, key: tuple) -> None:
        try:
            views = self.explorer.cache.get(key, lambda: pane.make(key))
        except Exception as exc:  # noqa: BLE001 - shown in the pane, never lost
            text = f"<span style='color:#b00'>{html.escape(repr(exc))}</span>"
            views = (text,) * len(pane.targets())
        if pane.key() == key:  # still what the explorer shows
            self._fill(pane, views)

    @staticmethod
    def _fill(pane: LazyPane, views: tuple[str, ...]) -> None:
        for widget, value in zip(pane.targets(), views, strict=True):
            widget.value = value

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
