"""One-key edits (issue 21 item 12): arrows select, shift-arrows reorder, digits then ``s``
split, ``f p v r u``; each key is the public action, a refused one changes nothing."""

from __future__ import annotations

from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops


def loops(ex) -> list[str]:
    return [value for _, value in ex.controls.loop.options]


def test_keys_select_split_reorder_annotate_and_undo():
    ex = wb.explore(ops.matmul(32, 32, 32), peaks=PEAKS, measure=False)
    keys = ex.keyboard
    assert ex.loop == "i"
    keys.press("ArrowDown")
    assert ex.loop == "j" and ex.controls.loop.value == "j"
    keys.press("ArrowUp")
    keys.press("ArrowUp")  # already the outermost: nothing
    assert ex.loop == "i"
    keys.press("8")
    keys.press("s")
    assert loops(ex) == ["i_0", "i_1", "j", "k"] and ex.loop == "i_0"
    assert "factors=[None, 8]" in ex.node.label
    keys.press("ArrowDown")
    keys.press("ArrowDown")  # j
    keys.press("ArrowUp", shift=True)  # j moves out of i_1
    assert loops(ex) == ["i_0", "j", "i_1", "k"] and ex.loop == "j"
    keys.press("ArrowUp")
    keys.press("p")  # i_0
    assert "T.parallel" in ex.node.ir
    keys.press("ArrowDown")
    keys.press("ArrowDown")
    keys.press("ArrowDown")  # k
    assert keys.press("v") is False and ex.last_error is not None  # a reduction loop
    assert len(ex.history) == 4
    keys.press("u")
    assert ex.history.current_id == 2
    keys.press("s")  # no digits: by 4
    assert "factors=[None, 4]" in ex.node.label
    ex.close()


def test_ipyevents_keydown_events_reach_the_bindings():
    ex = wb.explore(ops.matmul(16, 16, 16), peaks=PEAKS, measure=False)
    assert [e.source for e in ex.keyboard.events] == [ex.controls.loop, ex.views["IR"]]
    assert all(e.watched_events == ["keydown"] for e in ex.keyboard.events)
    ex.keyboard.on_event({"type": "keydown", "key": "ArrowDown", "shiftKey": False})
    assert ex.loop == "j"
    ex.keyboard.on_event({"type": "keydown", "key": "s", "ctrlKey": True})  # a browser key
    assert len(ex.history) == 1
    ex.keyboard.on_event({"type": "keydown", "key": "ArrowUp"})
    ex.keyboard.on_event({"type": "keydown", "key": "f"})
    assert loops(ex) == ["i_j_fused", "k"] and ex.loop == "i_j_fused"
    ex.close()
