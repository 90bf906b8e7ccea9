"""``python -m workbench tune`` / ``best``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.cli import best_table, build_parser, main, make_op
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


# ---- bad input: one line naming the flag, exit code 2, nothing measured (issue 17) ------

BAD_ARGS = [
    (["--shape", "4,8,2"], "--shape", "add takes 2 sizes (M,N), got 3"),
    (["--shape", "4"], "--shape", "add takes 2 sizes (M,N), got 1"),
    (["--shape", "0,8"], "--shape", "sizes must be positive, got 0"),
    (["--shape", "4,-8"], "--shape", "sizes must be positive, got -8"),
    (["--shape", "4,x"], "--shape", "takes integers"),
    (["--trials", "0"], "--trials", "must be positive, got 0"),
    (["--trials", "-3"], "--trials", "must be positive, got -3"),
    (["--batch-size", "0"], "--batch-size", "must be positive, got 0"),
    (["--time-budget", "nan"], "--time-budget", "must be positive"),
    (["--target", "tpu"], "--target", "unknown target 'tpu' (choose from numpy, cpu, cuda"),
]


@pytest.mark.parametrize("extra, flag, why", BAD_ARGS, ids=[" ".join(a[0]) for a in BAD_ARGS])
def test_bad_arguments_are_refused_before_anything_is_measured(tmp_path, capsys, extra, flag,
                                                                why):
    db = tmp_path / "r.jsonl"
    argv = ["tune", "add", "--shape", "4,8", "--target", "numpy", "--trials", "1", "--db",
            str(db), "--no-progress"]
    with pytest.raises(SystemExit) as info:
        main(argv + extra)  # a later flag wins in argparse
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    assert err.startswith("python -m workbench tune: error: argument ") and flag in err
    assert why in err
    assert not db.exists()  # nothing was measured


def test_an_unknown_operator_and_an_unwritable_db_are_refused(tmp_path, capsys):
    def refused(argv):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        return err

    assert "argument op: no operator 'matmull'" in refused(["tune", "matmull"])
    missing = tmp_path / "no" / "such" / "r.jsonl"
    assert "argument --db: folder" in refused(["tune", "add", "--db", str(missing)])
    assert not missing.parent.exists()
    assert "is a folder" in refused(["tune", "add", "--db", str(tmp_path)])
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "not writable" in refused(["tune", "add", "--db", str(locked / "r.jsonl")])
    assert "argument --db: no records file" in refused(["best", "--db", str(missing)])
    assert "argument --top: must be positive" in refused(
        ["tune-model", "m.onnx", "--top", "0"])


def test_an_unwritable_db_is_refused_even_as_root(tmp_path, capsys, monkeypatch):
    """Root may write anywhere; the check is os.access, so a refusal is simulated."""
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(SystemExit) as info:
        main(["tune", "add", "--db", str(tmp_path / "r.jsonl")])
    assert info.value.code == 2
    assert "argument --db: folder" in capsys.readouterr().err


def test_python_m_workbench_refuses_a_bad_shape_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-m", "workbench", "tune", "matmul", "--shape", "64,64",
         "--db", str(tmp_path / "r.jsonl")], env=env, capture_output=True, text=True,
        timeout=120)
    assert run.returncode == 2
    assert run.stderr == ("python -m workbench tune: error: argument --shape: matmul takes 3 "
                          "sizes (M,N,K), got 2 (see --help)\n")
    assert not (tmp_path / "r.jsonl").exists()
