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
    assert db.best().config["a"] == 2  # warned once per Database (issue 17), not again
    with pytest.warns(RecordWarning):  # a new Database reports them again
        assert Database(path).best().config["a"] == 2


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


# ---- invalid records: never the best, warned once (issue 17) ----------------------------

INVALID = {
    "latency zero": {"latency_s": 0.0},
    "latency negative": {"latency_s": -1e-3},
    "latency nan": {"latency_s": float("nan")},
    "latency inf": {"latency_s": float("inf")},
    "latency string": {"latency_s": "0.0001"},
    "latency bool": {"latency_s": True},
    "times with a string": {"times_s": [1e-3, "fast"]},
    "times not a list": {"times_s": 1e-3},
    "gflops string": {"gflops": "9000"},
    "gflops negative": {"gflops": -1.0},
    "build_s nan": {"build_s": float("nan")},
    "trial string": {"trial": "3"},
    "seed float": {"seed": 1.5},
    "workload number": {"workload": 7},
    "error number": {"error": 1},
    "machine list": {"machine": ["x"]},
    "trace not json": {"trace": "{not json"},
    "trace not a trace": {"trace": '{"steps": [{"primitive": "no_such_step"}]}'},
    "trace a number": {"trace": 3},
}


@pytest.mark.parametrize("field", list(INVALID), ids=list(INVALID))
def test_an_invalid_record_is_skipped_warned_once_and_never_the_best(tmp_path, field):
    path = tmp_path / "r.jsonl"
    db = Database(path)
    db.append(_record(1, latency=2e-3))
    bad = json.loads(_record(2, latency=1e-9).to_json())  # would be the best
    bad.update(INVALID[field])
    with open(path, "a") as handle:
        handle.write(json.dumps(bad) + "\n")
    db.append(_record(3, latency=3e-3))
    with pytest.warns(RecordWarning, match="line 2: ") as caught:
        best = db.best()
    assert len(caught) == 1
    assert best.config["a"] == 1 and best.latency_s == 2e-3
    assert [r.config["a"] for r in db.records()] == [1, 3]
    assert [n for n, _ in db.corrupt] == [2]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same line is not reported twice
        assert db.best().config["a"] == 1
        assert db.measured_keys("w", "cpu") == {config_key({"a": i, "t": [i, 2]}) for i in (1, 3)}


def test_a_failed_record_without_latency_is_valid(tmp_path):
    db = Database(tmp_path / "r.jsonl")
    db.append(Record("w", "cpu", {"a": 1}, error="boom", error_kind="crash"))
    (back,) = db.records()
    assert not back.ok and db.corrupt == []


# ---- two processes tuning into one database (issue 17) ----------------------------------

def _claim_in_process(path, configs, out):
    from workbench.tune.database import Database

    db = Database(path)
    got = db.claim("w", "cpu", configs)
    out.put([c["a"] for c in got])


def test_a_live_processs_claims_are_not_handed_out_again(tmp_path):
    import multiprocessing

    path = tmp_path / "r.jsonl"
    db = Database(path)
    db.append(_record(0))
    mine = db.claim("w", "cpu", [{"a": i, "t": [i, 2]} for i in range(4)])
    assert [c["a"] for c in mine] == [1, 2, 3]  # 0 is already recorded
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    other = context.Process(target=_claim_in_process,
                            args=(path, [{"a": i, "t": [i, 2]} for i in range(6)], out))
    other.start()
    other.join(120)
    assert out.get(timeout=10) == [4, 5]  # this process (alive) holds 1, 2, 3
    # the other process is gone: its claims lapse; releasing drops this one's
    db.release()
    assert db.claim("w", "cpu", [{"a": 4, "t": [4, 2]}]) == [{"a": 4, "t": [4, 2]}]
    db.release()
    assert not db.claims_path.exists()


TUNE_SCRIPT = """
import sys
import workbench as wb
from workbench import ops
result = wb.tune(ops.matmul(8, 8, 8), target="numpy", trials=int(sys.argv[2]), db=sys.argv[1],
                 space="generated", strategy="random", seed=0, batch_size=2, progress=False)
print(len(result.records))
"""


def test_two_processes_tuning_into_one_database_do_not_duplicate_trials(tmp_path):
    """The same seed and strategy in both: without the lock and claims they propose the same
    configs and both measure them."""
    import os
    import subprocess
    import sys

    db = tmp_path / "r.jsonl"
    script = tmp_path / "tune.py"
    script.write_text(TUNE_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *sys.path])}
    procs = [subprocess.Popen([sys.executable, str(script), str(db), "6"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    records = Database(db).records()
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)) == 12, keys  # no config measured twice
    assert not Database(db).claims_path.exists()  # both released their claims
