"""``wb.explore`` driven programmatically: set a control, assert the state changed."""

from __future__ import annotations

import numpy as np
import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops
from workbench.schedule import ReductionLoopError
from workbench.widgets import panes


def loop_names(explorer) -> list[str]:
    return [value for _, value in explorer.controls.loop.options]


def test_controls_are_generated_from_the_operator(ex):
    c = ex.controls
    assert loop_names(ex) == ["i", "j", "k"]
    assert c.block.options == ("C",)
    assert [v for _, v in c.split.options] == [None, 2, 4, 8, 16, 32]
    # the built-in targets first; targets other tests registered in this process may follow
    assert c.target.options[:2] == ("cpu", "cuda")
    assert set(c.primitives) >= {"split", "fuse", "reorder", "parallel", "vectorize", "unroll"}
    assert not c.primitives["split"].disabled
    # TVM vectorizes a spatial loop with loops inside it; binding to a GPU axis is listed too
    assert not c.primitives["vectorize"].disabled and not c.primitives["bind"].disabled
    assert not c.toggles["vectorize"].disabled and not c.toggles["parallel"].disabled
    assert c.move_out.disabled and not c.move_in.disabled


def test_split_dropdown_changes_schedule_ir_history_and_table(ex):
    ir_before = ex.views["IR"].value
    ex.controls.split.value = 8
    ex.wait()
    cur = ex.current
    assert [cur.name(lp) for lp in cur.get_loops(cur.get_block("C"))] == ["i_0", "i_1", "j", "k"]
    assert "T.grid(8, 8, 64, 64)" in ex.node.ir
    assert ex.views["IR"].value != ir_before
    assert "+" in ex.views["IR diff"].value
    assert len(ex.history) == 2 and ex.history.current.label == "split i factors=[None, 8]"
    assert ex.table["primitive"].tolist() == ["start", "split i factors=[None, 8]"]
    assert "sch.split(l1, factors=[None, 8])" in str(ex.current.trace)
    assert loop_names(ex) == ["i_0", "i_1", "j", "k"]
    assert ex.controls.split.value is None  # ready for the next choice
    assert "i_0" in ex.views["code"].value and "<svg" in ex.views["loop nest"].value


def test_illegal_choice_shows_the_error_and_changes_nothing(ex):
    ir_before, trace_before = ex.node.ir, str(ex.current.trace)
    assert ex.vectorize("k") is False  # k drives the reduction variable of block C
    assert isinstance(ex.last_error, ReductionLoopError)
    assert "wb-schedule-error" in ex.views["error"].value
    assert "ReductionLoopError" in ex.views["error"].value
    assert ex.node.ir == ir_before and str(ex.current.trace) == trace_before
    assert len(ex.history) == 1
    assert "last error: vectorize" in str(ex)
    assert ex.split("k", [None, 16]) is True
    assert ex.views["error"].value == ""


def test_toggles_reorder_buttons_and_primitive_panel(ex):
    ex.controls.loop.value = "k"
    ex.wait()
    assert ex.loop == "k" and not ex.controls.primitives["unroll"].disabled
    assert ex.controls.toggles["vectorize"].tooltip == "loop 'k' is a reduction loop"
    ex.controls.toggles["unroll"].value = True
    cur = ex.current
    assert cur.get(cur.get_loops(cur.get_block("C"))[2]).kind.value == "unroll"
    assert ex.controls.toggles["unroll"].disabled  # applied: undo removes it
    ex.controls.loop.value = "j"
    ex.controls.move_out.click()  # j above i
    assert loop_names(ex) == ["j", "i", "k"]
    ex.controls.loop.value = "j"
    ex.controls.primitives["parallel"].click()
    assert "T.parallel(64)" in ex.node.ir
    assert ex.history.current.label == "parallel j"


def test_undo_jump_branch_diff_and_export_from_controls(ex):
    ex.split("i", [None, 16])
    ex.split("j", [None, 8])
    ex.controls.undo.click()
    assert ex.history.current_id == 1
    ex.split("k", [None, 4])  # a branch from node 1
    assert ex.history.children(1) == [2, 3]
    ex.controls.jump.value = 2
    assert ex.history.current_id == 2 and "j_0" in ex.node.ir
    ex.show_diff(2, 3)
    assert "node 2 → node 3" in ex.views["node diff"].value
    ex.controls.export.click()
    assert "sch.split(l2, factors=[None, 8])" in ex.views["export"].value
    assert '"trace"' in ex.views["export"].value


def test_views_follow_the_selection_footprint_and_warnings(ex):
    ex.select(loop="j")
    ex.wait()
    assert ex.footprint == {"C": 4, "A": 256, "B": 256}  # one (i, j): a row, a column
    assert "wb-footprint" in ex.views["access"].value


def test_the_explorer_shows_exactly_the_numbers_of_the_public_functions(ex):
    """Issue 18 item 4: the access tab, its warnings and the roofline's analytic point are
    ``wb.tile_footprint``, ``wb.schedule_warnings`` and ``wb.analytic_point``."""
    from workbench import viz

    assert ex.split("j", [None, 8]) and ex.reorder("j_0", "k", "i") and ex.vectorize("j_1")
    for loop in ("j_0", "k", "i"):
        ex.select(loop=loop)
        ex.wait()
        assert ex.footprint == viz.tile_footprint(ex.node.func, loop)
        assert ex.warnings == viz.schedule_warnings(ex.node.func, "cpu", loop=loop)
        for name, size in ex.footprint.items():
            assert f"<td>{name}</td><td>{size / 1024:.1f} KiB</td>" in ex.views["access"].value
    point = wb.analytic_point(ex.node.func, PEAKS)
    (label, intensity, gflops, measured), = ex.roofline_points()
    assert (intensity, gflops, measured) == (point.intensity, point.attainable_gflops, False)
    svg = ex.views["roofline"].value
    assert f"data-intensity='{point.intensity:.4g}'" in svg
    assert f"data-gflops='{point.attainable_gflops:.4g}'" in svg


def test_the_roofline_pane_is_zoomed_ticked_and_lists_its_points():
    """Issue 21 item 8: tick values on both axes, the range around the points, a tag per
    point that does not overlap another, and a list of the points under the plot."""
    import re

    pts = [("roof", 10.7, 200.0, False)] + [(f"[{i}]", 10.7, g, True)
                                            for i, g in enumerate((2.0, 2.1, 40.0, 41.0))]
    svg = panes.roofline_svg(pts, PEAKS)
    ticks = re.findall(r"class='x-tick'.*?>([0-9.e+]+)</text>", svg)
    assert ticks == ["10"]  # one decade: the plot spans 10.7 / 3 .. 10.7 * 3
    assert {"1", "10", "100"} <= set(re.findall(r"class='y-tick'.*?>([0-9.e+]+)</text>", svg))
    labels = re.findall(r"class='point-label' x='([-0-9.]+)' y='([-0-9.]+)' "
                        r"text-anchor='(\w+)'>([^<]*)<", svg)
    boxes = []
    for x, y, anchor, text in labels:  # 6 px a character, 10 px high (font-size 10)
        width = 6 * len(text)
        x0 = float(x) - {"start": 0, "middle": width / 2, "end": width}[anchor]
        boxes.append((x0, float(y) - 10, x0 + width, float(y)))
    assert len(boxes) == 5
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1])
    assert svg.count("<li>") == 5 and "[2] measured 40 GFLOP/s at 10.7 FLOP/B" in svg


def test_opened_on_a_schedule_continues_its_trace():
    sch = wb.Schedule(ops.matmul(32, 32, 32))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    ex = wb.explore(sch, peaks=PEAKS, measure=False)
    assert ex.history.current.label == "opened at step 3"
    ex.parallel("i_0")
    lines = ex.current.trace.lines()
    assert lines[:3] == sch.trace.lines()
    assert lines[3:] == ['b6 = sch.get_block("C")', "l7, l8, l9, l10 = sch.get_loops(b6)",
                         "sch.parallel(l7)"]
    ex.wait()


def test_softmax_blocks_and_text_without_a_front_end():
    ex = wb.explore(ops.softmax(8, 32), peaks=PEAKS, measure=False)
    assert len(ex.controls.block.options) == 3
    ex.controls.block.value = ex.controls.block.options[1]
    assert ex.block == ex.controls.block.options[1]
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("Explorer: softmax, target cpu, node 0")
    with pytest.raises(ValueError, match="target 'tpu' is not available"):
        wb.explore(ops.softmax(8, 32), target="tpu")
    ex.wait()


@pytest.mark.slow
def test_measured_numbers_arrive_off_the_ui_thread_and_revisits_are_cached():
    ex = wb.explore(ops.matmul(64, 64, 64), peaks=PEAKS, budget_s=0.05, debounce_s=0.0)
    ex.wait()
    ex.split("i", [None, 8])
    assert "compiling" in ex.views["status"].value  # returned before the numbers
    ex.wait()
    frame = ex.table
    assert frame["ms median"].notna().all() and (frame["GFLOP/s"] > 0).all()
    assert (frame["compile s"] >= 0).all() and (frame["x np.matmul"] > 0).all()
    assert "measured:" in ex.views["status"].value
    assert "measured-point" in ex.views["roofline"].value
    llvm = ex.views["lowering"]["LLVM IR / PTX"]
    assert "compiled when this tab is opened" in llvm.value  # lazy: the tab is closed
    ex.show_lowering("LLVM IR / PTX")
    ex.wait()
    assert "define" in llvm.value and "define" not in ex.views["lowering"]["asm"].value
    ex.undo()
    assert "cached" in ex.views["status"].value
    # the measured kernel computes the reference
    kernel = wb.build(ex.history[1].func, target="cpu")
    a, b = (np.random.default_rng(1).random((64, 64), dtype=np.float32) for _ in range(2))
    c = np.empty((64, 64), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    ex.runner.close()


def test_what_tvm_allows_the_explorer_allows_and_the_numbers_stay_right(ex):
    """Issue 21 item 11, checked against TVM (docs/decisions.md, "checked against TVM"):
    TVM's ``fuse`` checks the loop chain, not iteration kinds, and its ``vectorize`` checks
    that the loop binds data-parallel block iterations only, not that it is innermost. So
    the explorer fuses a spatial loop with the reduction loop, and vectorizes the outermost
    (spatial) loop with a warning; both kernels compute the matmul."""
    assert ex.vectorize("i")
    assert any("not innermost" in w for w in ex.wait().warnings)
    vectorized = ex.current.mod
    ex.undo()
    assert ex.fuse("j", "k") and loop_names(ex) == ["i", "j_k_fused"]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    for func in (vectorized, ex.current.mod):
        c = np.full((64, 64), np.nan, "float32")
        wb.build(func, target="cpu")(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert not ex.vectorize("j_k_fused")  # the fused loop binds the reduction: refused
    assert isinstance(ex.last_error, ReductionLoopError)
