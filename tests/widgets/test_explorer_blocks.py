"""Every Schedule primitive is reachable from the explorer's controls, block primitives with
arguments chosen from the state (issue 21 item 2); the layout and the selection stay put
(item 9)."""

from __future__ import annotations

import numpy as np
import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops
from workbench.schedule.trace import INSTRUCTIONS


def explorer(func):
    return wb.explore(func, peaks=PEAKS, measure=False)


def placed(widget) -> list:
    """Every widget under ``widget`` in the layout."""
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += placed(child)
    return out


def test_every_primitive_has_a_placed_control():
    ex = explorer(ops.matmul(16, 16, 16))
    shown = placed(ex.widget)
    applicable = {n for n, k in INSTRUCTIONS.items() if k.applies_to}
    buttons = {**ex.controls.primitives, **ex.controls.block_primitives}
    assert applicable <= set(buttons)
    assert all(button in shown for button in buttons.values())
    for choice in ("at_loop", "read_buffer", "write_buffer", "scope", "index_map"):
        assert getattr(ex.controls, choice) in shown
    ex.close()


def test_softmax_blocks_move_under_the_normalisation_loop_from_the_buttons():
    ex = explorer(ops.softmax(8, 32))
    c = ex.controls
    c.block.value = "T_softmax_expsum"
    ex.wait()
    assert c.at_loop.value == "i2"  # the next block's outermost loop
    assert [n for n, _ in c.read_buffer.options] == ["0: T_softmax_expsum", "1: A",
                                                     "2: T_softmax_maxelem"]
    assert not c.block_primitives["compute_at"].disabled
    c.block_primitives["compute_at"].click()
    assert ex.last_error is None and ex.node.label == "compute_at T_softmax_expsum i2"
    c.block.value = "T_softmax_maxelem"
    ex.wait()
    c.at_loop.value = "i2"
    c.block_primitives["compute_at"].click()
    trace = ex.current.trace.lines()
    assert sum("sch.compute_at(" in line for line in trace) == 2
    kernel = wb.build(ex.current, target="cpu")
    x = np.random.default_rng(0).uniform(-1, 1, (8, 32)).astype("float32")
    out = np.empty_like(x)
    kernel(x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    ex.close()


def test_cache_read_write_set_scope_and_decompose_take_the_chosen_arguments():
    ex = explorer(ops.matmul(16, 16, 16))
    c = ex.controls
    c.read_buffer.value = 1  # B
    c.scope.value = "local"
    c.block_primitives["cache_read"].click()
    assert ex.last_error is None
    assert 'sch.cache_read(b' in ex.current.trace.lines()[-1]
    assert ex.current.trace.lines()[-1].endswith(', 1, "local")')
    c.block.value = "C"
    c.block_primitives["cache_write"].click()
    assert ex.last_error is None and '0, "local")' in ex.current.trace.lines()[-1]
    c.block.value = "C"
    c.at_loop.value = "i"
    c.block_primitives["decompose_reduction"].click()
    assert ex.last_error is None and "decompose_reduction" in ex.current.trace.lines()[-1]
    a, b = (np.random.default_rng(i).uniform(-1, 1, (16, 16)).astype("float32") for i in (1, 2))
    out = np.empty((16, 16), "float32")
    wb.build(ex.current, target="cpu")(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-5)
    ex.close()


def test_transform_layout_needs_an_index_map_and_takes_the_typed_one():
    ex = explorer(ops.matmul(8, 8, 8))
    c = ex.controls
    assert c.apply_block("transform_layout") is False  # no map typed: said, nothing done
    assert "needs an index map" in ex.views["error"].value and len(ex.history) == 1
    c.index_map.value = "lambda i, j: (j, i)"
    assert c.apply_block("transform_layout") is True
    assert "transform_layout" in ex.current.trace.lines()[-1]
    ex.close()


def test_compute_inline_of_the_padding_and_conv_opens_on_the_convolution():
    ex = explorer(ops.conv2d_nchw(1, 2, 6, 6, 2, 3, 3))
    assert ex.block == "conv2d_nchw" and ex.controls.block.value == "conv2d_nchw"
    ex.controls.block.value = "pad_temp"
    ex.wait()
    assert not ex.controls.block_primitives["compute_inline"].disabled
    ex.controls.block_primitives["compute_inline"].click()
    assert ex.last_error is None and ex.controls.block.options == ("conv2d_nchw",)
    ex.close()


def test_the_selection_stays_after_a_fuse_or_split():
    ex = explorer(ops.matmul(16, 16, 16))
    ex.select(loop="j")
    assert ex.fuse("i", "j")
    assert ex.loop == "i_j_fused" and ex.controls.loop.value == "i_j_fused"
    ex.select(loop="k")
    assert ex.split("k", [None, 4])
    assert ex.loop == "k_0"
    ex.close()


def test_messages_live_in_a_fixed_height_box_above_the_controls():
    from workbench.widgets.layout import MESSAGE_HEIGHT

    ex = explorer(ops.matmul(16, 16, 16))
    box = next(w for w in placed(ex.widget) if "wb-messages" in getattr(w, "_dom_classes", ()))
    assert box.layout.height == MESSAGE_HEIGHT and box.layout.overflow == "auto"
    assert ex.views["error"] in box.children and ex.views["warnings"] in box.children
    assert ex.vectorize("k") is False  # an error appears inside the box
    assert "ReductionLoopError" in ex.views["error"].value
    ex.close()


def test_selecting_a_loop_of_another_block_selects_that_block_and_unknown_names_raise():
    ex = explorer(ops.softmax(8, 32))
    ex.select(loop="i2")
    assert ex.block == "T_softmax_norm" and ex.controls.block.value == "T_softmax_norm"
    with pytest.raises(ValueError, match="select: no loop 'j_1' at node 0; loops: i, k"):
        ex.select(loop="j_1")
    with pytest.raises(ValueError, match="select: no block 'X'"):
        ex.select(block="X")
    assert ex.loop == "i2"
    ex.close()
