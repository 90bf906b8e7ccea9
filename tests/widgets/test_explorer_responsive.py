"""The explorer stays responsive: legality on a worker thread, views kept per node, machine
code compiled only for an open tab, the CUDA target's source and warnings."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops
from workbench.schedule import NotPerfectlyNestedError
from workbench.widgets.controls import CHECKING


def hold(executor) -> threading.Event:
    """Keep ``executor``'s one worker busy until the returned event is set."""
    gate = threading.Event()
    executor.submit(gate.wait, 30)
    return gate


def test_legality_table_is_computed_off_the_ui_thread_and_arrives(ex):
    gate = hold(ex._legality_executor)
    assert ex.split("i", [None, 8])  # returns while the table is still being computed
    c = ex.controls
    assert ex.legal is None and c.checking.value == CHECKING
    assert all(b.disabled and b.tooltip == CHECKING for b in c.primitives.values())
    assert "T.grid(8, 8, 64, 64)" in ex.node.ir and "i_0" in ex.views["IR"].value
    gate.set()
    ex.wait()
    assert c.checking.value == ""
    rows = {row.primitive: row for row in ex.legal}
    assert rows["parallel"].legal and not c.primitives["parallel"].disabled
    assert c.primitives["parallel"].tooltip == "parallel: legal here"
    ex.select(loop="k")
    ex.wait()
    assert not {row.primitive: row for row in ex.legal}["vectorize"].legal
    assert c.toggles["vectorize"].disabled
    assert c.toggles["vectorize"].tooltip == "loop 'k' is a reduction loop"


def test_a_stale_table_is_not_shown_for_a_newer_selection(ex):
    gate = hold(ex._legality_executor)
    ex.select(loop="k")  # queued: the table of k
    ex.select(loop="j")  # queued: the table of j, shown
    gate.set()
    ex.wait()
    assert ex.loop == "j" and ex.controls.loop.value == "j"
    assert {row.primitive: row for row in ex.legal}["vectorize"].legal
    assert not ex.controls.toggles["vectorize"].disabled


def test_revisiting_a_node_is_served_from_the_cache(ex):
    ex.split("i", [None, 8])
    ex.wait()
    ir_split = ex.views["IR"].value
    ex.undo()
    ex.wait()
    ir_start = ex.views["IR"].value
    ex.jump(1)
    ex.wait()
    misses = ex.cache.misses
    gate = hold(ex._legality_executor)  # a revisit needs no worker: the table is cached
    hits = ex.cache.hits
    ex.jump(0)
    assert ex.controls.checking.value == "" and ex.legal is not None
    assert ex.views["IR"].value == ir_start
    gate.set()
    ex.wait()
    ex.jump(1)
    ex.wait()
    assert ex.views["IR"].value == ir_split
    assert ex.cache.misses == misses  # nothing drawn again
    # IR, IR diff, legality, code, loop nest, access, DSL source, analytic points: all hits
    assert ex.cache.hits - hits >= 2 * 7
    assert (1, "loop nest") in ex.cache and ("legality", 1, "i_0", "C") in ex.cache


def test_machine_code_is_compiled_only_when_its_tab_is_opened(ex):
    ex.parallel("i")
    ex.wait()
    key = (1, "machine code", wb.Target("cpu"))  # the explorer keys views by Target
    asm = ex.views["lowering"]["asm"]
    assert key not in ex.cache and "compiled when this tab is opened" in asm.value
    ex.show_lowering("scheduled IR")
    ex.wait()
    assert key not in ex.cache
    ex.show_lowering("asm")
    ex.wait()
    assert key in ex.cache and "compiled when" not in asm.value
    assert "define" in ex.views["lowering"]["LLVM IR / PTX"].value
    ex.undo()  # an open tab follows the node: node 0 is compiled too
    ex.wait()
    assert (0, "machine code", wb.Target("cpu")) in ex.cache
    # the kernel shown is the one of node 1, and it computes the reference
    kernel = wb.build(ex.history[1].func, target="cpu")
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    c = np.empty((64, 64), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_cuda_target_shows_the_cuda_source_its_errors_and_gpu_warnings(ex):
    ex.controls.target.value = "cuda"  # the target dropdown
    ex.wait()
    assert ex.target == "cuda" and ex.runner.target == "cuda"
    assert "UnboundKernelError" in ex.views["code"].value  # rendered, not lost
    assert ex.bind("i", "blockIdx.x") and ex.bind("j", "threadIdx.x")
    ex.select(loop="j")
    ex.wait()
    code = ex.views["code"].value
    assert "cuda.jit" in code and "cuda.threadIdx.x" in code
    assert ex.views["lowering"]["generated source"].value == code
    assert ex.warnings == []  # 64 threads per block, a multiple of the warp
    ex.show_lowering("LLVM IR / PTX")
    ex.wait()
    assert "no PTX under the CUDA simulator" in ex.views["lowering"]["LLVM IR / PTX"].value
    ex.set_target("cpu")  # from code: the dropdown follows
    ex.wait()
    assert ex.controls.target.value == "cpu"
    assert "cuda.jit" not in ex.views["code"].value and "define" in (
        ex.views["lowering"]["LLVM IR / PTX"].value)


def test_cuda_opens_on_a_bound_default_schedule_without_an_error():
    """Issue 21 item 11: no red UnboundKernelError before any edit; node 1 is the target's
    graph rule (undo shows the start), and the status says the simulator is used."""
    ex = wb.explore(ops.matmul(64, 48, 64), target="cuda", peaks=PEAKS)
    ex.wait()
    assert ex.history.current_id == 1 and ex.node.label == "default binding (cuda graph rule)"
    assert "Error" not in ex.views["code"].value and "cuda.jit" in ex.views["code"].value
    assert ex.views["error"].value == ""
    assert "CUDA simulator" in ex.views["status"].value
    assert 'sch.bind(l5, "blockIdx.x")' in str(ex.current.trace)
    ex.undo()
    assert ex.history.current_id == 0
    ex.close()


def test_gpu_warnings_follow_the_controls():
    ex = wb.explore(ops.matmul(64, 48, 64), target="cuda", peaks=PEAKS, measure=False)
    ex.undo()  # from the start node, not the default binding
    assert ex.bind("i", "blockIdx.x") and ex.bind("j", "threadIdx.x")
    ex.select(loop="j")
    ex.wait()
    assert ex.warnings == [
        "48 threads per block is not a multiple of the warp size 32: the last warp runs "
        "partly idle"]
    assert "48 threads per block" in ex.views["warnings"].value
    ex.close()


@pytest.mark.slow
def test_first_call_time_is_shown_before_the_median():
    ex = wb.explore(ops.matmul(64, 64, 64), peaks=PEAKS, budget_s=0.05, debounce_s=0.0)
    ex.wait()
    seen = []
    ex._first_call = lambda node_id, s, show=ex._first_call: (seen.append((node_id, s)),
                                                              show(node_id, s))
    assert ex.split("i", [None, 8])
    ex.wait()
    assert [n for n, _ in seen] == [1] and seen[0][1] > 0
    assert "measured:" in ex.views["status"].value and ex.node.measurement.result.repeats >= 3
    sets = ex.runner.argument_sets()
    assert sets is ex.runner.argument_sets() and len(sets) >= 1  # made once, reused
    kept = sum(a.nbytes for args in sets[1:] for a in args)
    assert kept <= ex.runner.argument_memory  # the copies kept while the explorer lives
    for args in sets:  # every set holds the same inputs
        np.testing.assert_array_equal(args[0], sets[0][0])
    ex.close()


def test_loop_order_by_dragging_tags(ex):
    order = ex.controls.order
    assert list(order.value) == ["i", "j", "k"] and not order.allow_duplicates
    order.value = ["k", "i", "j"]  # k dragged to the front
    ex.wait()
    assert [v for _, v in ex.controls.loop.options] == ["k", "i", "j"]
    assert ex.history.current.label == "reorder k i j"
    assert ex.current.trace.lines()[-1] == "sch.reorder(l3, l1, l2)"
    assert "for k, i, j in T.grid(64, 64, 64)" in ex.node.ir
    order.value = ["k", "j", "i"]  # only the moved span is passed
    assert ex.history.current.label == "reorder j i"
    assert list(order.value) == ["k", "j", "i"]
    order.value = ["k", "j"]  # a removed tag is not a reorder: restored, nothing applied
    assert list(order.value) == ["k", "j", "i"] and len(ex.history) == 3
    assert "cannot be added or removed" in ex.controls.order_note.value


def test_a_refused_drag_shows_the_error_and_restores_the_order():
    sch = wb.Schedule(ops.softmax(8, 32))
    i2, _ = sch.get_loops(sch.get_block("T_softmax_norm"))
    sch.compute_at(sch.get_block("T_softmax_expsum"), i2)  # i2 now holds two loops
    ex = wb.explore(sch, peaks=PEAKS, measure=False)
    ex.select(block="T_softmax_norm")
    ex.wait()
    assert list(ex.controls.order.value) == ["i2", "j2"]
    ir, steps = ex.node.ir, len(ex.current.trace)
    ex.controls.order.value = ["j2", "i2"]
    assert isinstance(ex.last_error, NotPerfectlyNestedError)
    assert "wb-schedule-error" in ex.views["error"].value
    assert list(ex.controls.order.value) == ["i2", "j2"]
    assert ex.node.ir == ir and len(ex.current.trace) == steps and len(ex.history) == 1
    ex.close()


def test_cuda_under_the_simulator_is_not_timed():
    ex = wb.explore(ops.matmul(64, 64, 64), target="cuda", peaks=PEAKS, debounce_s=0.0)
    ex.undo()  # from the start node, not the default binding
    assert ex.bind("i", "blockIdx.x") and ex.bind("j", "threadIdx.x")
    ex.wait()
    assert "not measured: under the CUDA simulator" in ex.views["status"].value
    assert ex.node.measurement is None and not ex.runner.cache
    assert "cuda.jit" in ex.views["code"].value
    ex.close()


def test_access_maps_are_drawn_only_when_their_tab_is_open(ex):
    from workbench.widgets.explorer import PANES

    ex.split("i", [None, 16])
    ex.select(loop="i_0")
    ex.wait()
    key = (1, "access map", "C", "i_0")
    assert key not in ex.cache and "drawn when this tab is opened" in ex.views["access map"].value
    ex.tabs.selected_index = PANES.index("access")
    ex.wait()
    html = ex.views["access map"].value
    assert key in ex.cache and html.count("wb-access-image") == 3
    # one iteration of i_0: 16 rows of A and C (16 x 64), all of B
    assert "data-buffer='A' data-touched='1024'" in html
    assert "data-buffer='B' data-touched='4096'" in html
    ex.select(loop="k")  # the tab is open: the new selection is drawn at once
    ex.wait()
    assert "data-buffer='A' data-touched='1'" in ex.views["access map"].value
    misses = ex.cache.misses
    ex.select(loop="i_0")
    ex.wait()
    assert ex.views["access map"].value == html and ex.cache.misses == misses


def test_the_selected_loop_is_marked_in_the_ir():
    from workbench.viz.html import HIGHLIGHT_COLOR

    sch = wb.Schedule(ops.softmax(8, 32))
    i2, _ = sch.get_loops(sch.get_block("T_softmax_norm"))
    sch.compute_at(sch.get_block("T_softmax_expsum"), i2)  # i2 and j2 on their own lines
    ex = wb.explore(sch, peaks=PEAKS, measure=False)

    def marked() -> list[str]:
        return [line for line in ex.views["IR"].value.splitlines() if HIGHLIGHT_COLOR in line]

    ex.select(block="T_softmax_norm", loop="j2")
    assert len(marked()) == 1 and "j2" in marked()[0] and "i2" not in marked()[0]
    ex.select(loop="i2")
    assert len(marked()) == 1 and "i2" in marked()[0] and "j2" not in marked()[0]
    ex.wait()
    ex.close()


def test_the_selected_loop_is_marked_in_the_generated_code(ex):
    from workbench.viz.html import HIGHLIGHT_COLOR

    ex.split("i", [None, 8])
    ex.select(loop="j")
    ex.wait()
    marked = [ln for ln in ex.views["code"].value.splitlines() if HIGHLIGHT_COLOR in ln]
    assert marked and all(">j<" in ln or " j " in ln for ln in marked)
    assert all("range" in ln for ln in marked)  # the `for j in range(...)` lines
    ex.set_target("cuda")
    assert ex.bind("i_0", "blockIdx.x") and ex.bind("i_1", "threadIdx.x")
    ex.select(loop="i_1")
    ex.wait()
    marked = [ln for ln in ex.views["code"].value.splitlines() if HIGHLIGHT_COLOR in ln]
    assert len(marked) == 1 and "threadIdx" in marked[0]


def test_legality_and_compile_wait_for_the_drawing(ex, monkeypatch):
    import time

    from workbench.widgets import explorer_views as explorer_module

    monkeypatch.setattr(explorer_module, "DRAWING_FIRST_S", 30.0)
    gate = hold(ex._views_executor)  # the drawing cannot start
    assert ex.split("i", [None, 8])
    time.sleep(0.5)
    assert ex.legal is None and ex.controls.checking.value == CHECKING  # waiting for it
    gate.set()
    ex.wait()
    assert ex.legal is not None and "<svg" in ex.views["loop nest"].value
    assert ex.timings["drawing_s"] < ex.timings["views_s"]
