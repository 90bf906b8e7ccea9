"""One-key edits when the explorer has focus (loop_tool's ``lt.ui`` is the anchor).

==================  ===========================================================
``↑`` / ``↓``       select the loop above / below (``k`` / ``j`` too)
``⇧↑`` / ``⇧↓``     move the selected loop out / in (a ``reorder``)
digits, then ``s``  split the selected loop by that factor (``s`` alone: by 4, or
                    the smallest divisor of its extent when 4 does not divide it)
``f``               fuse the selected loop with the loop inside it
``p`` / ``v``       parallelize / vectorize the selected loop
``r``               unroll the selected loop
``u``               undo (back to the parent node)
``Escape``          forget typed digits
==================  ===========================================================

The keys go to the loop list and the IR pane (``ipyevents`` listens there: a text box of
the explorer keeps its own keys). ``Keyboard.press(key, shift)`` is what a key does, so a
test or a script can press keys without a browser; every edit is the explorer's public
action (the trace shows it), and a refused one shows its error as a click would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.widgets.actions import divisors, loops_above

if TYPE_CHECKING:
    from workbench.widgets.explorer import Explorer

DEFAULT_SPLIT = 4
KEYS = {
    "ArrowUp": "select_up",
    "k": "select_up",
    "ArrowDown": "select_down",
    "j": "select_down",
    "s": "split",
    "f": "fuse",
    "p": "parallel",
    "v": "vectorize",
    "r": "unroll",
    "u": "undo",
    "Escape": "clear",
}
SHIFTED = {"ArrowUp": "move_out", "ArrowDown": "move_in"}


class Keyboard:
    """The explorer's key bindings (see the module docstring)."""

    def __init__(self, explorer: Explorer):
        self.explorer = explorer
        self.digits = ""
        self.events = []

    def attach(self, *widgets) -> None:
        """Listen to key presses on ``widgets`` (``ipyevents``)."""
        from ipyevents import Event

        for widget in widgets:
            event = Event(source=widget, watched_events=["keydown"],
                          prevent_default_action=True)
            event.on_dom_event(self.on_event)
            self.events.append(event)

    def on_event(self, event: dict) -> None:
        """An ``ipyevents`` keydown: ``{"key": "ArrowDown", "shiftKey": False, ...}``."""
        if event.get("ctrlKey") or event.get("metaKey") or event.get("altKey"):
            return
        self.press(event.get("key", ""), bool(event.get("shiftKey")))

    def press(self, key: str, shift: bool = False) -> bool | None:
        """Do what ``key`` does; returns the action's result (False: refused), None for a
        key with no action."""
        if key.isdigit():
            self.digits = (self.digits + key)[-6:]
            return None
        name = SHIFTED.get(key) if shift else KEYS.get(key)
        if name is None:
            return None
        return getattr(self, "_" + name)()

    # --- actions ---------------------------------------------------------------------

    def _loops(self) -> list:
        ex = self.explorer
        return [info for info in loops_above(ex.node.func, ex.block)]

    def _neighbour(self, step: int) -> str | None:
        names = [info.name for info in self._loops()]
        if self.explorer.loop not in names:
            return names[0] if names else None
        index = names.index(self.explorer.loop) + step
        return names[index] if 0 <= index < len(names) else None

    def _select_up(self):
        loop = self._neighbour(-1)
        if loop is not None:
            self.explorer.select(loop=loop)
        return loop is not None

    def _select_down(self):
        loop = self._neighbour(+1)
        if loop is not None:
            self.explorer.select(loop=loop)
        return loop is not None

    def _move_out(self):
        other = self._neighbour(-1)
        return other is not None and self.explorer.reorder(self.explorer.loop, other)

    def _move_in(self):
        other = self._neighbour(+1)
        return other is not None and self.explorer.reorder(other, self.explorer.loop)

    def _split(self):
        ex = self.explorer
        typed, self.digits = self.digits, ""
        if typed:
            factor = int(typed)
        else:
            info = next((i for i in self._loops() if i.name == ex.loop), None)
            options = divisors(info.extent or 0) if info is not None else []
            factor = DEFAULT_SPLIT if DEFAULT_SPLIT in options or not options else options[0]
        return ex.split(ex.loop, [None, factor])

    def _fuse(self):
        inner = self._neighbour(+1)
        return inner is not None and self.explorer.fuse(self.explorer.loop, inner)

    def _parallel(self):
        return self.explorer.parallel(self.explorer.loop)

    def _vectorize(self):
        return self.explorer.vectorize(self.explorer.loop)

    def _unroll(self):
        return self.explorer.unroll(self.explorer.loop)

    def _undo(self):
        if self.explorer.node.parent is None:
            return False
        self.explorer.undo()
        return True

    def _clear(self):
        self.digits = ""
        return True
