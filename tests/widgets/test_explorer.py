"""``wb.explore`` driven programmatically: set a control, assert the state changed."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.measure import MachinePeaks
from workbench.schedule import ReductionLoopError
from workbench.widgets import panes

PEAKS = MachinePeaks(gflops=200.0, gbps=20.0)


@pytest.fixture
def ex():
    explorer = wb.explore(ops.matmul(64, 64, 64), peaks=PEAKS, measure=False)
    yield explorer.wait()
    explorer.close()


def loop_names(explorer) -> list[str]:
    return [value for _, value in explorer.controls.loop.options]


def test_controls_are_generated_from_the_operator(ex):
    c = ex.controls
    assert loop_names(ex) == ["i", "j", "k"]
    assert c.block.options == ("C",)
    assert [v for _, v in c.split.options] == [None, 2, 4, 8, 16, 32]
    assert c.target.options == ("cpu", "cuda")  # both targets are registered
    assert c.cuda_note.value == ""
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
    ex.select(loop="k")
    ex.wait()
    assert ex.footprint == {"C": 4, "A": 256, "B": 256}
    assert panes.footprint_warnings(ex.node.func, "i", {"L1": 1024, "L2": 4096}) == [
        "loop 'i' touches 48 KiB (all its iterations), more than L2 (4 KiB)"]
    assert "wb-footprint" in ex.views["access"].value


def test_analytic_point_moves_with_parallel_and_vectorize(ex):
    before = panes.analytic_point(ex.node.func, PEAKS)
    assert ex.parallel("i") and ex.reorder("k", "j") and ex.vectorize("j")
    after = panes.analytic_point(ex.node.func, PEAKS)
    assert after[0] == before[0] and after[1] > before[1]
    assert ex.views["roofline"].value.count("analytic-point") == 4


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
    assert (frame["compile s"] >= 0).all() and (frame["x numpy"] > 0).all()
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
