"""The branching history (pure Python): add, undo, jump, branch, diff, export, table."""

from __future__ import annotations

import json

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.measure import MachinePeaks, MeasureResult
from workbench.widgets.history import History, Measurement


def _split(node, loop_index: int, factor: int):
    sch = node.schedule.copy()
    loops = sch.get_loops(sch.get_block("C"))
    sch.split(loops[loop_index], factors=[None, factor])
    return sch


@pytest.fixture
def history() -> History:
    return History(wb.Schedule(ops.matmul(32, 32, 32)))


def test_add_undo_jump_and_branch(history):
    first = history.add(_split(history.current, 0, 8), "split i 8")
    second = history.add(_split(history.current, 2, 4), "split j 4")
    assert (first.parent, second.parent, history.current_id) == (0, 1, 2)
    assert history.undo().id == 1
    assert [n.id for n in history.path()] == [0, 1]
    branch = history.add(_split(history.current, 1, 2), "split i_1 2")
    assert branch.parent == 1
    assert history.children(1) == [2, 3]
    assert history.branches() == [[0, 1, 2], [0, 1, 3]]
    assert history.jump(2).id == 2
    assert len(history[2].trace) > len(history[1].trace)
    history.undo()
    history.undo()
    with pytest.raises(IndexError):
        history.undo()
    with pytest.raises(KeyError):
        history.jump(99)
    text = str(history)
    assert "* [0] start" in text and "[3] split i_1 2" in text


def test_diff_of_two_nodes(history):
    history.add(_split(history.current, 0, 8), "split i 8")
    diff = history.diff(0, 1)
    assert "+    for i_0, i_1, j, k in T.grid(4, 8, 32, 32):" in diff.ir
    assert "-    for i, j, k in T.grid(32, 32, 32):" in diff.ir
    assert diff.code.count("\n+") >= 1
    assert diff.numbers["steps"] == (0, 3)
    assert "node 0 -> node 1" in str(diff)


def test_export_python_and_json_replay(history):
    node = history.add(_split(history.current, 0, 8), "split i 8")
    python = history.export_python()
    assert python.splitlines()[0] == "sch = wb.Schedule(matmul)"
    assert "sch.split(l1, factors=[None, 8])" in python
    data = json.loads(history.export_json())
    assert data["label"] == "split i 8" and data["parent"] == 0
    replayed = wb.Trace.from_json(json.dumps(data["trace"])).apply(ops.matmul(32, 32, 32))
    assert replayed.mod.same_as(node.func)


def test_table_columns_and_numbers(history):
    history.add(_split(history.current, 0, 8), "split i 8")
    result = MeasureResult("matmul", "cpu", median_s=2e-3, iqr_s=1e-4, repeats=3,
                           times_s=(2e-3,) * 3, flops=2 * 32**3, bytes=3 * 32 * 32 * 4,
                           peaks=MachinePeaks(gflops=100.0, gbps=10.0))
    history.current.measurement = Measurement(result, compile_s=0.5, speedup=1.5,
                                              note="re-measured (spread: IQR 30% of the median)")
    frame = history.to_frame()
    assert list(frame.columns) == ["step", "parent", "primitive", "ms median", "IQR ms",
                                   "GFLOP/s", "GB/s", "x reference", "compile s", "note",
                                   "current"]
    row = frame.iloc[1]
    assert row["primitive"] == "split i 8" and row["note"].startswith("re-measured (spread")
    np.testing.assert_allclose(
        [row["ms median"], row["IQR ms"], row["GFLOP/s"], row["x reference"], row["compile s"]],
        [2.0, 0.1, 2 * 32**3 / 2e-3 / 1e9, 1.5, 0.5])
    assert frame.iloc[0]["note"] == ""
    assert np.isnan(frame.iloc[0]["ms median"])
    assert frame["current"].tolist() == [False, True]
    assert "measurement" in json.loads(history.export_json())
