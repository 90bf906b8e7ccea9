"""Bad input at the graph level refused at the entry point, before any work, naming the
argument, what was expected and what was given (docs/decisions.md, "Bad input at the graph
level"): ``wb.compile``'s arguments, a compiled model's inputs, ``save`` / ``wb.load``."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph.errors import ModelFileError, ModelInputError  # noqa: E402
from workbench.integrity import ArtifactIntegrityError  # noqa: E402
from workbench.tune.database import Database, Record, RecordWarning  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Two(torch.nn.Module):
    def forward(self, a, b):
        return a * b


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    return MLP().eval(), torch.randn(2, 8)


@pytest.fixture(scope="module", params=["cpu", "numpy"])
def compiled(request, mlp):
    model, x = mlp
    return wb.compile(model, (x,), target=request.param, jobs=1)


# ---- a compiled model's inputs ------------------------------------------------------------

@pytest.mark.parametrize("bad, got", [
    (lambda x: x.double(), "got float64 array of shape (2, 8)"),
    (lambda x: x.long(), "got int64 array of shape (2, 8)"),
    (lambda x: x > 0, "got bool array of shape (2, 8)"),
    (lambda x: torch.randn(3, 8), "got float32 array of shape (3, 8)"),
    (lambda x: torch.randn(2, 9), "got float32 array of shape (2, 9)"),
    (lambda x: torch.tensor(1.0), "got float32 array of shape ()"),
    (lambda x: x.tolist(), "got list"),
    (lambda x: None, "got NoneType"),
])
def test_a_compiled_model_names_the_input_and_what_it_expected(compiled, mlp, bad, got):
    _, x = mlp
    name = list(compiled.graph.inputs)[0]
    with pytest.raises(ModelInputError) as info:
        compiled(bad(x))
    message = str(info.value)
    assert f"input {name!r}" in message and "expected float32 array of shape (2, 8)" in message
    assert got in message


def test_a_compiled_model_takes_transposed_grad_and_nan_inputs(compiled, mlp):
    model, x = mlp
    want = model(x).detach().numpy()
    for ok in (x.T.contiguous().T, x.clone().requires_grad_(),
               np.asfortranarray(x.numpy())):
        np.testing.assert_allclose(compiled(ok), want, rtol=1e-5, atol=1e-6)
    nan = x.clone()
    nan[0, 3] = float("nan")
    out = compiled(nan)
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()  # propagates, row 1 untouched
    with pytest.raises(ModelInputError, match=r"takes 1 input\(s\).*got 2"):
        compiled(x, x)


def test_an_out_of_range_token_id_is_a_named_index_error():
    from workbench.graph.errors import IndexOutOfRangeError

    model = torch.nn.Embedding(10, 4).eval()
    ids = torch.tensor([[1, 2, 3]])
    compiled = wb.compile(model, (ids,), jobs=1)
    for bad in (10, -1):
        with pytest.raises(IndexOutOfRangeError, match=rf"index {bad} is out of range for "
                                                       r"axis 0 \(size 10\)"):
            compiled(torch.tensor([[1, bad, 3]]))
    with pytest.raises(IndexError):  # what PyTorch does
        model(torch.tensor([[1, 10, 3]]))


# ---- wb.compile's arguments ---------------------------------------------------------------

@pytest.mark.parametrize("model", [lambda a: a, 3, None])
def test_compile_refuses_what_is_not_a_model(model):
    with pytest.raises(TypeError, match=r"wb.compile\(model=...\): expected a torch.nn.Module.*"
                                        r"onnx.ModelProto.*got "):
        wb.compile(model, (torch.randn(2),))


@pytest.mark.parametrize("inputs, match", [
    ((torch.randn(2, 3),), r"Two.forward\(a, b\) does not take 1 input.*missing.*'b'"),
    ((), r"does not take 0 input"),
])
def test_compile_refuses_inputs_forward_does_not_take(inputs, match):
    with pytest.raises(ModelInputError, match=match):
        wb.compile(Two(), inputs)


@pytest.mark.parametrize("bad, got", [
    (torch.randn(2, 9), r"RuntimeError: mat1 and mat2 shapes cannot be multiplied.*"
                        r"float32\[2, 9\]"),
    (torch.randn(2, 8, dtype=torch.float64), r"float64\[2, 8\]"),
    ([[1.0] * 8] * 2, r"must be Tensor, not list"),
])
def test_compile_refuses_inputs_the_model_fails_on_before_tracing(mlp, bad, got, capfd):
    model, _ = mlp
    flags = {name: m.training for name, m in model.named_modules()}
    with pytest.raises(ModelInputError, match=r"wb.compile\(example_inputs=...\): the model "
                                              r"fails on them in eager PyTorch .*" + got):
        wb.compile(model, (bad,))
    assert "Traceback" not in capfd.readouterr().err  # torch.export never ran (its log)
    assert {name: m.training for name, m in model.named_modules()} == flags


def test_compile_takes_a_lone_tensor_and_numpy_example_inputs(mlp):
    model, x = mlp
    want = model(x).detach().numpy()
    for inputs in (x, x.numpy(), (x.numpy(),), [x]):
        np.testing.assert_allclose(wb.compile(model, inputs, target="numpy")(x), want,
                                   rtol=1e-5, atol=1e-6)


def test_compile_names_the_registered_targets(mlp):
    model, x = mlp
    with pytest.raises(ValueError, match=r"unknown target 'nope'.*'cpu'.*'numpy'|"
                                         r"unknown target 'nope'.*'numpy'.*'cpu'"):
        wb.compile(model, (x,), target="nope")


@pytest.mark.parametrize("jobs, error, match", [
    (0, ValueError, r"jobs=0\): expected a positive number"),
    (-2, ValueError, r"jobs=-2\)"),
    ("4", TypeError, r"jobs=...\): expected a positive integer or None, got str"),
    (True, TypeError, r"got bool"),
])
def test_compile_refuses_bad_jobs(mlp, jobs, error, match):
    model, x = mlp
    with pytest.raises(error, match=match):
        wb.compile(model, (x,), jobs=jobs)


def test_compile_refuses_bad_schedules_values(mlp, tmp_path):
    model, x = mlp
    with pytest.raises(FileNotFoundError, match=r"schedules='defualt'.*did you mean 'default'"):
        wb.compile(model, (x,), schedules="defualt")
    with pytest.raises(TypeError, match=r"schedules=...\): expected 'default', 'none' or .* "
                                        r"got int"):
        wb.compile(model, (x,), schedules=3)
    with pytest.raises(IsADirectoryError, match="is a folder, not a tuning records file"):
        wb.compile(model, (x,), schedules=tmp_path)
    other = tmp_path / "model.onnx"
    other.write_bytes(b"\x08\x07garbage\nnot json\n")
    with pytest.raises(ValueError, match=r"holds no tuning record \(2 line\(s\), none a "
                                         r"record; line 1: "):
        wb.compile(model, (x,), schedules=other)


def test_records_of_another_target_warn_once_and_compile_with_defaults(mlp, tmp_path):
    model, x = mlp
    path = tmp_path / "r.jsonl"
    Database(path).append(Record("matmul-0123456789abcdef", "cuda", {"t": 1},
                                 latency_s=1e-3, times_s=[1e-3]))
    with path.open("a") as handle:
        handle.write("{half a line\n")  # a corrupt line: warned, skipped, never fatal
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = wb.compile(model, (x,), schedules=path, target="numpy")
    unmatched = [w for w in caught if issubclass(w.category, RecordWarning)
                 and "no record of any of this model's" in str(w.message)]
    assert len(unmatched) == 1 and "on 'numpy'" in str(unmatched[0].message)
    assert "holds 1 workload(s) on cuda" in str(unmatched[0].message)
    assert any("line 2" in str(w.message) for w in caught
               if issubclass(w.category, RecordWarning))
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_model_path_that_is_not_an_onnx_model_is_named(tmp_path):
    with pytest.raises(ModelFileError, match=r"model file '.*missing.onnx' does not exist"):
        wb.compile(str(tmp_path / "missing.onnx"))
    with pytest.raises(ModelFileError, match=r"is a folder"):
        wb.compile(tmp_path)
    bad = tmp_path / "bad.onnx"
    bad.write_text("garbage")
    with pytest.raises(ModelFileError, match=r"model file '.*bad.onnx' is not an ONNX model "
                                             r"\(DecodeError"):
        wb.compile(bad)
    assert issubclass(ModelFileError, ValueError)


# ---- save / wb.load -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def saved(mlp, tmp_path_factory):
    model, x = mlp
    folder = tmp_path_factory.mktemp("badinput") / "artifact"
    wb.compile(model, (x,), jobs=1).save(folder)
    return folder


def test_load_names_a_missing_folder_a_file_and_a_non_path(saved, tmp_path):
    with pytest.raises(ArtifactIntegrityError, match=r"nope: \.: does not exist"):
        wb.load(tmp_path / "nope")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ArtifactIntegrityError, match=r"is a file, not an artifact folder"):
        wb.load(tmp_path / "f.txt")
    for bad in (3, None):
        with pytest.raises(TypeError, match=r"wb.load: expected an artifact folder path"):
            wb.load(bad)


def test_load_names_the_tampered_file(saved, tmp_path):
    renamed = tmp_path / "renamed"
    shutil.copytree(saved, renamed)
    (renamed / "weights" / "0.npy").rename(renamed / "weights" / "9.npy")
    with pytest.raises(ArtifactIntegrityError, match=r"weights/9.npy: is not listed in the "
                                                     r"manifest \(and weights/0.npy, listed, "
                                                     r"is missing: renamed\?\)"):
        wb.load(renamed)
    other = tmp_path / "other"
    shutil.copytree(saved, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["files"]["kernels/evil.py"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactIntegrityError, match=r"manifest.json: its content changed"):
        wb.load(other)


def test_save_refuses_a_file_and_a_non_path_and_writes_nothing(mlp, tmp_path):
    model, x = mlp
    compiled = wb.compile(model, (x,), jobs=1)
    target = tmp_path / "f.txt"
    target.write_text("keep")
    with pytest.raises(FileExistsError, match=r"f.txt is a file: save writes a new artifact"):
        compiled.save(target)
    assert target.read_text() == "keep"
    with pytest.raises(TypeError, match=r"CompiledModel.save: expected an artifact folder "
                                        r"path .* got int"):
        compiled.save(3)


def test_latency_report_and_tune_model_check_their_counts_first(mlp, tmp_path):
    from workbench.graph.tune_model import tune_model

    model, x = mlp
    compiled = wb.compile(model, (x,), target="numpy")
    for bad in (0, -1, "5"):
        with pytest.raises(ValueError, match=rf"latency_report: repeat must be a positive "
                                             rf"integer, got {bad!r}"):
            compiled.latency_report(x, repeat=bad)
    db = str(tmp_path / "r.jsonl")
    for kwargs, error, match in (({"top": 0}, ValueError, r"tune_model: top must be at least 1"),
                                 ({"trials": "8"}, TypeError, r"tune_model: trials must be an "
                                                              r"integer, got str"),
                                 ({"time_budget_s": "1h"}, TypeError, r"in seconds"),
                                 ({"db": str(tmp_path / "no" / "r.jsonl")}, FileNotFoundError,
                                  r"tune_model: db .* its folder .* does not exist")):
        with pytest.raises(error, match=match):
            tune_model(model, (x,), **{"db": db, **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_wb_verify_is_the_function():
    from workbench.ir.verify import verify

    assert wb.verify is verify and callable(wb.verify)
    assert wb.measure.__name__ == "workbench.measure" and callable(wb.measure)


def _relu_onnx():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                               [x], [y]))


def test_example_inputs_of_an_onnx_model_must_fit_it():
    proto = _relu_onnx()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(wb.compile(proto, (x,), target="numpy")(x), np.maximum(x, 0))
    with pytest.raises(ModelInputError, match=r"input 'x' of the model: expected float32 array "
                                              r"of shape \(2, 3\), got float64 array of shape"):
        wb.compile(proto, (x.astype("float64"),), target="numpy")
    with pytest.raises(ModelInputError, match=r"takes 1 input\(s\) \(x\), got 2"):
        wb.compile(proto, (x, x), target="numpy")


def test_a_pipeline_that_is_not_one_is_refused(mlp):
    model, x = mlp
    with pytest.raises(TypeError, match=r"wb.compile\(pipeline=...\): expected a .*Pipeline "
                                        r"or None, got str"):
        wb.compile(model, (x,), pipeline="fast")


def test_an_artifact_of_the_other_kind_names_its_loader(saved, tmp_path):
    from workbench import ops
    from workbench.schedule import Schedule

    func = ops.add(4, 8)
    kernel_folder = wb.export_artifact(Schedule(func), tmp_path / "kernel", func=func)
    with pytest.raises(ValueError, match=r"is not a workbench-graph-artifact/2 artifact \(format "
                                         r"'workbench.tune.artifact/2'\); load it with "
                                         r"wb.load_artifact"):
        wb.load(kernel_folder)
    with pytest.raises(ValueError, match=r"load it with wb.load \(a compiled model\)"):
        wb.load_artifact(saved)
