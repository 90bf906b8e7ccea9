"""The explorer's tune tab: knobs of the node, pins respected, progress, best applied."""

from __future__ import annotations

import numpy as np
import pytest
from explorer_helpers import PEAKS

import workbench as wb
from workbench import ops
from workbench.schedule import Trace
from workbench.widgets.actions import continue_trace
from workbench.widgets.explorer import PANES


def test_continue_trace_appends_a_recorded_trace_to_a_schedule():
    func = ops.matmul(32, 32, 32)
    tuned = wb.Schedule(func)
    i, j, k = tuned.get_loops(tuned.get_block("C"))
    tuned.split(j, factors=[None, 8])
    tuned.parallel(i)
    base = wb.Schedule(func)
    out = continue_trace(base, Trace.from_json(tuned.trace.to_json()))
    assert out.mod == tuned.mod and len(base.trace) == 0
    assert out.trace.lines()[-2:] == ["l4, l5 = sch.split(l2, factors=[None, 8])",
                                       "sch.parallel(l1)"]


def test_knobs_load_when_the_tab_opens_and_pins_are_read():
    ex = wb.explore(ops.matmul(64, 64, 64), peaks=PEAKS, measure=False)
    tab = ex.tuner
    assert tab.space is None and "open this tab" in tab.status.value
    ex.tabs.selected_index = PANES.index("tune")
    assert tab.node_id == 0 and "parallel:C" in tab.dropdowns
    assert "tuning the current node [0]" in tab.status.value
    tab.pin("parallel:C", 1)
    tab.pin("tile:C:k", [8, 8])
    assert tab.pins() == {"parallel:C": 1, "tile:C:k": [8, 8]}
    with pytest.raises(KeyError, match="no knob 'tile:C:z'"):
        tab.pin("tile:C:z", [1])
    with pytest.raises(ValueError, match=r"knob 'tile:C:k' has no value \[5, 13\]"):
        tab.pin("tile:C:k", [5, 13])
    assert tab.pins()["tile:C:k"] == [8, 8]  # unchanged
    ex.split("i", [None, 8])  # no generated knob on a split nest: the start node is tuned
    ex.tabs.selected_index = 0
    ex.tabs.selected_index = PANES.index("tune")
    assert tab.node_id == 0 and "tuning the start node [0]" in tab.status.value
    ex.close()


@pytest.mark.slow
def test_a_few_trials_with_pins_then_the_best_becomes_a_node(tmp_path):
    ex = wb.explore(ops.matmul(32, 32, 32), peaks=PEAKS, measure=False)
    tab = ex.tuner
    tab.db = str(tmp_path / "records.jsonl")
    tab.load()
    tab.pin("parallel:C", 0)
    tab.start(trials=2).join(300)
    assert tab.error is None, tab.error
    assert len(tab.records) == 2 and tab.progress.value == 2
    assert all(r.config["parallel:C"] == 0 for r in tab.records)  # the pin held
    assert "done: best" in tab.status.value and not tab.apply_button.disabled
    assert tab.table.value.count("<tr>") == 3
    tab.apply_best()
    ex.wait()
    node = ex.history.current
    assert node.parent == 0 and node.label == "tuned (2 trials)"
    assert node.func == tab.result.apply().mod
    kernel = wb.build(node.func, target="cpu")
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    c = np.empty((32, 32), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    ex.close()


def test_the_status_names_the_candidate_building_or_measuring_and_the_time():
    """Issue 21 item 6: between records the tab says what runs now, not "0 of 4"."""
    from workbench.tune.progress import Stage

    ex = wb.explore(ops.matmul(16, 16, 16), peaks=PEAKS, measure=False)
    tab = ex.tuner
    tab.progress.max = 4
    tab._stage(Stage(None, "starting", 0.4))
    assert "0 of 4 trials done · workers: starting (0.4 s)" in tab.status.value
    tab._stage(Stage(1, "measuring", 7.25))
    assert "trial 1: measuring (7.2 s)" in tab.status.value
    ex.close()


@pytest.mark.cuda
@pytest.mark.slow
def test_the_tab_tunes_on_the_explorers_target_cuda_under_the_simulator(tmp_path):
    """Issue 21: the tab tunes where the explorer builds (here cuda, simulated), through
    the same ``wb.tune``: the knobs are the cuda space's, the records say cuda, and the
    best one becomes a node whose kernel runs correctly on that target."""
    pytest.importorskip("numba.cuda")
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if not simulator_enabled():
        pytest.skip("runs under the simulator (NUMBA_ENABLE_CUDASIM=1)")
    func = ops.matmul(8, 8, 8)
    ex = wb.explore(func, target="cuda", peaks=PEAKS, measure=False)
    tab = ex.tuner
    tab.db = str(tmp_path / "records.jsonl")
    tab.load()
    assert tab.target.name == "cuda" and " on cuda: " in tab.status.value
    from workbench.tune.api import make_space

    assert set(tab.dropdowns) == set(make_space(None, func, "cuda").knobs)
    assert set(tab.dropdowns) != set(make_space(None, func, "cpu").knobs)
    tab.start(trials=2).join(600)
    assert tab.error is None, tab.error
    assert len(tab.records) == 2
    assert all(r.target == "cuda" for r in tab.records)
    assert all(r.ok for r in tab.records), [r.error for r in tab.records]
    assert tab.result.target == "cuda"
    tab.apply_best()
    ex.wait()
    kernel = wb.build(ex.history.current.func, target="cuda")
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    c = np.full((8, 8), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    ex.close()


def test_knobs_are_read_again_when_the_target_changes():
    ex = wb.explore(ops.matmul(16, 16, 16), peaks=PEAKS, measure=False)
    tab = ex.tuner
    tab.load()
    assert tab.target.name == "cpu" and " on cpu: " in tab.status.value
    ex.set_target("cuda")
    ex.wait()
    tab.load()
    assert tab.target.name == "cuda" and " on cuda: " in tab.status.value
    ex.close()
