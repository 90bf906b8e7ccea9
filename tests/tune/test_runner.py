"""The isolated runner: crashing, hanging and wrong candidates fail alone; kill and resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune import Database, RecordWarning, TemplateSpace, tune
from workbench.tune.runner import prune_kernel_cache, random_arguments

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from tune_faults import fault_template  # noqa: E402


def test_crash_hang_and_wrong_result_are_recorded_and_the_run_goes_on(tmp_path):
    func = ops.matmul(8, 8, 8)
    space = TemplateSpace(fault_template, func).pin(tile_j=[2, 4])
    runner = wb.tune.LocalRunner(n_build=2, measure_timeout_s=5.0)
    with runner:
        result = tune(func, target="numpy", trials=4, db=tmp_path / "r.jsonl", space=space,
                      strategy="grid", runner=runner, progress=False, repeats=2,
                      kernel_hook="tune_faults:faulty")
    by_fault = {r.config["fault"]: r for r in result.records}
    assert by_fault["none"].ok and len(by_fault["none"].times_s) == 2
    assert by_fault["segfault"].error_kind == "crash"
    assert "SIGSEGV" in by_fault["segfault"].error
    assert by_fault["hang"].error_kind == "timeout"
    assert by_fault["wrong"].error_kind == "wrong_result"
    assert "differs from the reference" in by_fault["wrong"].error
    assert runner.restarts == 2  # the crashed and the hung measuring worker were replaced
    # every outcome is on disk, failures included
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(x["error_kind"] or "ok" for x in lines) == [
        "crash", "ok", "timeout", "wrong_result"]
    assert result.best.config["fault"] == "none"


def test_illegal_config_is_a_failed_record_not_an_exception(tmp_path):
    def template(cfg, func):
        sch = wb.Schedule(func)
        i, j, k = sch.get_loops(sch.get_block("C"))
        cfg.define_knob("bad", [False, True])
        if cfg["bad"]:
            sch.reorder(k, k)  # a ScheduleError
        return sch

    result = tune(ops.matmul(4, 4, 4), target="numpy", trials=2, db=tmp_path / "r.jsonl",
                  space=template, strategy="grid", progress=False, repeats=1)
    bad = [r for r in result.records if r.config["bad"]][0]
    assert bad.error_kind == "schedule" and "Error" in bad.error and bad.trace is None
    assert result.best.config == {"bad": False}


_KILLED_RUN = """
import sys
sys.path.insert(0, {here!r})
from workbench import ops
from workbench.tune import tune
from tune_faults import fault_template
from workbench.tune import TemplateSpace
func = ops.matmul(8, 8, 8)
space = TemplateSpace(fault_template, func).pin(fault="none")
tune(func, target="numpy", trials=4, db={db!r}, space=space, strategy="grid",
     progress=False, repeats=1, kernel_hook="tune_faults:slow", batch_size=1)
"""


def test_kill_and_resume_loses_nothing_and_measures_nothing_twice(tmp_path):
    db_path = tmp_path / "r.jsonl"
    script = _KILLED_RUN.format(here=str(HERE), db=str(db_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        if db_path.exists() and len(db_path.read_text().splitlines()) >= 1:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, 9)  # the run and its workers, at once
    proc.wait()
    before = db_path.read_text().splitlines()
    complete = [line for line in before if line.endswith("}")]
    assert 1 <= len(complete) < 4
    with open(db_path, "a") as handle:  # as if killed while writing a line
        handle.write('{"format": "workbench.tune.record", "vers')
    func = ops.matmul(8, 8, 8)
    space = TemplateSpace(fault_template, func).pin(fault="none")
    with pytest.warns(RecordWarning):
        result = tune(func, target="numpy", trials=4, db=db_path, space=space,
                      strategy="grid", progress=False, repeats=1)
    after = db_path.read_text().splitlines()
    assert after[: len(before)] == before  # earlier records untouched
    with pytest.warns(RecordWarning):
        records = Database(db_path).records()
    keys = [r.key for r in records]
    assert len(keys) == 4 and len(set(keys)) == 4  # every config once
    assert len(result.records) == 4 and all(r.ok for r in records)


def test_tuned_cpu_schedule_computes_the_reference(tmp_path):
    func = ops.matmul(16, 16, 16)
    result = tune(func, target="cpu", trials=2, db=tmp_path / "r.jsonl", space="matmul",
                  strategy="random", seed=3, progress=False, repeats=1)
    assert result.best is not None and result.best.gflops > 0
    for sch in (result.apply(), wb.tune.load_best(tmp_path / "r.jsonl", func, "cpu")):
        a, b, c = random_arguments(func, seed=11)
        wb.build(sch, target="cpu")(a, b, c)
        np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4)
    frame = result.to_frame()
    assert list(frame["trial"]) == [0, 1] and frame["latency_ms"].notna().all()


def test_prune_kernel_cache_keeps_the_newest(tmp_path):
    (tmp_path / "__pycache__").mkdir()
    for i in range(5):
        (tmp_path / f"workbench_kernel_f_{i}.py").write_text("x = 1\n")
        (tmp_path / "__pycache__" / f"workbench_kernel_f_{i}.f-1.py311.nbi").write_text("")
        os.utime(tmp_path / f"workbench_kernel_f_{i}.py", (i, i))
    assert prune_kernel_cache(tmp_path, 2) == 3
    assert sorted(p.name for p in tmp_path.glob("*.py")) == [
        "workbench_kernel_f_3.py", "workbench_kernel_f_4.py"]
    assert len(list((tmp_path / "__pycache__").iterdir())) == 2


def test_records_of_another_space_do_not_count_or_confuse_the_strategy(tmp_path):
    from workbench.tune.database import Record, workload_key

    func = ops.matmul(4, 4, 4)
    db = Database(tmp_path / "r.jsonl")
    db.append(Record(workload_key(func, "numpy"), "numpy", {"other_knob": 1},
                     latency_s=1e-9, times_s=[1e-9]))

    def template(cfg, func):
        sch = wb.Schedule(func)
        cfg.define_knob("x", [0, 1])
        return sch

    result = tune(func, target="numpy", trials=2, db=db, space=template,
                  strategy="evolutionary", progress=False, repeats=1)
    assert sorted(r.config["x"] for r in result.records) == [0, 1]
    assert len(db.records()) == 3
