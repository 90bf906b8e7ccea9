"""The JSONL records database: round trip, flush per record, corrupt lines skipped."""

from __future__ import annotations

import json

import pytest

from workbench import ops
from workbench.tune.database import Database, Record, RecordWarning, config_key, workload_key


def _record(i, latency=1e-3, **kw):
    return Record("w", "cpu", {"a": i, "t": [i, 2]}, trace='{"steps": []}', latency_s=latency,
                  times_s=[latency, latency * 1.1], seed=3, **kw)


def test_round_trip_keeps_every_field(tmp_path):
    db = Database(tmp_path / "r.jsonl")
    rec = _record(1, machine={"cpu": "x"}, software={"numpy": "2"}, error=None)
    db.append(rec)
    (back,) = db.records()
    assert back.config == {"a": 1, "t": [1, 2]}
    assert back.times_s == [1e-3, 1.1e-3] and back.latency_s == 1e-3
    assert back.seed == 3 and back.machine == {"cpu": "x"} and back.software == {"numpy": "2"}
    assert back.timestamp  # filled on write
    line = (tmp_path / "r.jsonl").read_text().splitlines()[0]
    assert json.loads(line)["format"] == "workbench.tune.record"


def test_each_append_is_on_disk_at_once(tmp_path):
    path = tmp_path / "r.jsonl"
    db = Database(path)
    for i in range(3):
        db.append(_record(i))
        assert len(path.read_text().splitlines()) == i + 1


def test_corrupt_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    db = Database(path)
    db.append(_record(1, latency=2e-3))
    with open(path, "a") as handle:
        handle.write('{"format": "workbench.tune.record", "version": 1, "workl\n')  # killed mid-line
        handle.write("not json at all\n")
        handle.write('{"format": "other"}\n')
    db.append(_record(2, latency=1e-3))
    with pytest.warns(RecordWarning, match="skipped 3 corrupt"):
        records = db.records()
    assert [r.config["a"] for r in records] == [1, 2]
    assert [n for n, _ in db.corrupt] == [2, 3, 4]
    with pytest.warns(RecordWarning):
        assert db.best().config["a"] == 2


def test_best_ignores_failures_and_other_workloads(tmp_path):
    db = Database(tmp_path / "r.jsonl")
    db.append(_record(1, latency=5e-3))
    db.append(Record("w", "cpu", {"a": 9}, error="boom", error_kind="crash"))
    db.append(Record("other", "cpu", {"a": 7}, latency_s=1e-9, times_s=[1e-9]))
    assert db.best("w", "cpu").config["a"] == 1
    assert db.measured_keys("w", "cpu") == {config_key({"a": 1, "t": [1, 2]}),
                                             config_key({"a": 9})}
    assert db.workloads() == [("w", "cpu"), ("other", "cpu")]


def test_workload_key_depends_on_shape_and_target():
    a, b = ops.matmul(8, 8, 8), ops.matmul(8, 8, 16)
    assert workload_key(a, "cpu") == workload_key(ops.matmul(8, 8, 8), "cpu")
    assert workload_key(a, "cpu") != workload_key(b, "cpu")
    assert workload_key(a, "cpu") != workload_key(a, "numpy")
    assert workload_key(a, "cpu").startswith("matmul-")


def test_append_after_a_half_written_line_starts_a_new_line(tmp_path):
    path = tmp_path / "r.jsonl"
    db = Database(path)
    db.append(_record(1))
    with open(path, "a") as handle:
        handle.write('{"format": "workbench.tune.record", "ver')  # killed mid-write
    db.append(_record(2))
    with pytest.warns(RecordWarning, match="skipped 1 corrupt"):
        assert [r.config["a"] for r in db.records()] == [1, 2]
