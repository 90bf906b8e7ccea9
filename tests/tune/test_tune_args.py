"""``wb.tune`` and ``load_best`` refuse bad arguments before anything is measured or written,
naming the argument, what was expected and what was given."""

from __future__ import annotations

import datetime

import pytest

import workbench as wb
from workbench import ops
from workbench.cli import main


@pytest.fixture(scope="module")
def func():
    return ops.matmul(4, 4, 4)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"trials": 0}, ValueError, r"tune: trials must be at least 1, got 0"),
    ({"trials": -3}, ValueError, r"trials must be at least 1, got -3"),
    ({"trials": "4"}, TypeError, r"tune: trials must be an integer, got str '4'"),
    ({"trials": 2.5}, TypeError, r"trials must be an integer, got float 2.5"),
    ({"batch_size": 0}, ValueError, r"batch_size must be at least 1"),
    ({"repeats": 0}, ValueError, r"repeats must be at least 1"),
    ({"time_budget_s": "10min"}, TypeError, r"time_budget_s is in seconds, a number .* got "
                                            r"str '10min'"),
    ({"time_budget_s": datetime.timedelta(seconds=5)}, TypeError, r"got timedelta"),
    ({"time_budget_s": -1}, ValueError, r"time_budget_s must be a positive finite number of "
                                        r"seconds, got -1"),
    ({"time_budget_s": float("inf")}, ValueError, r"got inf"),
    ({"min_repeat_s": -0.1}, ValueError, r"min_repeat_s must be a non-negative"),
    ({"target": "nope"}, ValueError, r"tune: unknown target 'nope'; choose one of .*'cpu'"),
])
def test_tune_refuses_bad_arguments_before_writing_anything(func, tmp_path, kwargs, error,
                                                            match):
    db = tmp_path / "r.jsonl"
    args = {"trials": 1, "db": str(db), "progress": False, **kwargs}
    with pytest.raises(error, match=match):
        wb.tune(func, **args)
    assert not db.exists()


def test_tune_refuses_a_db_it_cannot_write_and_a_func_that_is_not_one(func, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"tune: db '.*r.jsonl': its folder '.*no' does "
                                                r"not exist"):
        wb.tune(func, trials=1, db=str(tmp_path / "no" / "r.jsonl"), progress=False)
    with pytest.raises(IsADirectoryError, match=r"is a folder, not a records file"):
        wb.tune(func, trials=1, db=str(tmp_path), progress=False)
    with pytest.raises(TypeError, match=r"tune: func must be a PrimFunc .* got str"):
        wb.tune("matmul", trials=1, db=str(tmp_path / "r.jsonl"), progress=False)
    with pytest.raises(ValueError, match=r"'generated' or 'matmul', not 'nope'"):
        wb.tune(func, trials=1, db=str(tmp_path / "r.jsonl"), space="nope", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_load_best_names_a_missing_file_and_a_folder(func, tmp_path):
    with pytest.raises(LookupError, match=r"load_best: '.*none.jsonl' is no such file"):
        wb.load_best(str(tmp_path / "none.jsonl"), func)
    with pytest.raises(LookupError, match=r"is a folder, not a tuning records file"):
        wb.load_best(tmp_path, func)


@pytest.mark.parametrize("argv, match", [
    (["tune", "matmul", "--space", "nope"], r"argument --space: invalid choice: 'nope'"),
    (["tune", "matmul", "--trials", "abc"], r"argument --trials: takes an integer, not 'abc'"),
    (["tune", "matmul", "--target", "nope"], r"argument --target: unknown target 'nope'"),
    (["tune", "matmul", "--bogus"], r"unrecognized arguments: --bogus"),
    (["best"], r"the following arguments are required: --db"),
    (["tune-model"], r"the following arguments are required: model"),
])
def test_the_cli_refuses_bad_flags_with_one_line_and_code_2(argv, match, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    import re

    assert re.search(match, err), err


def test_the_cli_refuses_a_file_that_is_not_an_onnx_model(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_text("garbage")
    with pytest.raises(SystemExit) as info:
        main(["tune-model", str(bad), "--db", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument model: model file" in err and "is not an ONNX model (DecodeError" in err
    assert not (tmp_path / "r.jsonl").exists()


def test_the_cli_names_an_unsupported_operator_in_one_line(tmp_path, capsys):
    from onnx import TensorProto, helper, save

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
    path = tmp_path / "det.onnx"
    save(helper.make_model(helper.make_graph([helper.make_node("Det", ["x"], ["y"])], "g", [x],
                                             [y])), str(path))
    code = main(["tune-model", str(path), "--db", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("python -m workbench tune-model: error: 1 unsupported operator use")
    assert "onnx::Det at node 0" in err and not (tmp_path / "r.jsonl").exists()


def test_a_cpu_space_is_refused_for_cuda_before_any_work(func, tmp_path):
    from workbench.tune.spaces import SpaceTargetError, spaces_for

    db = tmp_path / "r.jsonl"
    with pytest.raises(SpaceTargetError, match=r"^tune: space 'matmul' exists for the cpu "
                                               r"targets only \(kinds cpu, numpy\), not for "
                                               r"target 'cuda'; the spaces of 'cuda': "
                                               r"'generated' "):
        wb.tune(func, target="cuda", space="matmul", trials=1, db=str(db), progress=False)
    assert not db.exists()
    assert "matmul" not in spaces_for("cuda") and "matmul" in spaces_for("cpu")


def test_the_cli_refuses_a_cpu_space_for_cuda_in_one_line(tmp_path, capsys):
    db = tmp_path / "r.jsonl"
    with pytest.raises(SystemExit) as info:
        main(["tune", "matmul", "--target", "cuda", "--space", "matmul", "--db", str(db)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --space: tune: space 'matmul' exists for the cpu targets only" in err
    assert "the spaces of 'cuda': 'generated'" in err and not db.exists()
