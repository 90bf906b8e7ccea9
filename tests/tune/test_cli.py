"""``python -m workbench tune`` / ``best``."""

from __future__ import annotations

import os
import subprocess
import sys

from workbench.tune.cli import best_table, build_parser, main, make_op
from workbench.tune.database import Database, Record


def test_parser_and_op_factory():
    args = build_parser().parse_args(
        ["tune", "matmul", "--shape", "32,16,8", "--trials", "3", "--db", "x.jsonl"])
    assert args.shape == [32, 16, 8] and args.trials == 3 and args.target == "cpu"
    func = make_op("softmax", [4, 16])
    assert func.params[0].shape == (4, 16)


def test_best_lists_the_best_record_per_workload(tmp_path, capsys):
    db = Database(tmp_path / "r.jsonl")
    db.append(Record("matmul-aa", "cpu", {"t": 1}, latency_s=2e-3, times_s=[2e-3], gflops=1.0))
    db.append(Record("matmul-aa", "cpu", {"t": 2}, latency_s=1e-3, times_s=[1e-3], gflops=2.0))
    db.append(Record("matmul-aa", "cpu", {"t": 3}, error="x", error_kind="crash"))
    db.append(Record("softmax-bb", "cpu", {"t": 1}, latency_s=5e-4, times_s=[5e-4], gflops=0.5))
    rows = best_table(tmp_path / "r.jsonl")
    assert [(r["workload"], r["trials"], r["failed"], r["config"]) for r in rows] == [
        ("matmul-aa", 3, 1, {"t": 2}), ("softmax-bb", 1, 0, {"t": 1})]
    assert main(["best", "--db", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "matmul-aa" in out and "1.0000" in out and "2.00" in out


def test_python_m_workbench_tune_then_best(tmp_path):
    db = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-m", "workbench", "tune", "add", "--shape", "4,8", "--target", "numpy",
         "--trials", "2", "--db", str(db), "--strategy", "grid", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "TuneResult(add" in run.stdout and "2 records" in run.stdout
    best = subprocess.run([sys.executable, "-m", "workbench", "best", "--db", str(db)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert best.returncode == 0 and best.stdout.count("add-") == 1


def test_export_to_a_non_empty_folder_is_refused_before_tuning(tmp_path, capsys):
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "old.txt").write_text("x")
    db = tmp_path / "r.jsonl"
    code = main(["tune", "add", "--shape", "4,8", "--target", "numpy", "--trials", "1",
                 "--db", str(db), "--export", str(tmp_path / "art"), "--no-progress"])
    assert code == 2 and "--export" in capsys.readouterr().err
    assert not db.exists()  # nothing was measured
