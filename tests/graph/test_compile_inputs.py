"""wb.compile'd models refuse inputs they would misread, keep the user's model as it was,
return outputs nested as PyTorch does, and refuse a missing records file."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.graph.compiler import ModelInputError  # noqa: E402


class TwoInputs(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x) + y


@pytest.fixture(scope="module")
def two_inputs():
    model = TwoInputs()
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    return model, (x, y), wb.compile(model, (x, y))


def test_a_same_size_input_of_another_shape_is_refused(two_inputs):
    _, (x, y), compiled = two_inputs
    name = list(compiled.graph.inputs)[0]
    with pytest.raises(ModelInputError, match=rf"input {name!r}.*shape \(2, 3\).*got float32 "
                                              r"array of shape \(3, 2\)"):
        compiled(x.reshape(3, 2), y)


@pytest.mark.parametrize("dtype", ["float64", "int64", "float16"])
def test_an_input_of_another_dtype_is_refused_not_cast(two_inputs, dtype):
    _, (x, y), compiled = two_inputs
    name = list(compiled.graph.inputs)[1]
    with pytest.raises(ModelInputError, match=rf"input {name!r}.*expected float32.*got {dtype}"):
        compiled(x.numpy(), y.numpy().astype(dtype))


def test_wrong_count_and_non_arrays_are_refused(two_inputs):
    _, (x, y), compiled = two_inputs
    with pytest.raises(ModelInputError, match="takes 2 input"):
        compiled(x)
    with pytest.raises(ModelInputError, match="got list"):
        compiled(x, y.tolist())
    assert issubclass(ModelInputError, ValueError) and wb.ModelInputError is ModelInputError


def test_valid_inputs_torch_numpy_and_non_contiguous(two_inputs):
    model, (x, y), compiled = two_inputs
    want = model(x, y).numpy()
    np.testing.assert_allclose(compiled(x, y), want, rtol=1e-6)
    np.testing.assert_allclose(compiled(x.numpy(), y.numpy()), want, rtol=1e-6)
    xt = np.ascontiguousarray(x.numpy().T).T  # same shape, not C-contiguous: copied, fine
    np.testing.assert_allclose(compiled(xt, y.numpy()), want, rtol=1e-6)


class Dropped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.5)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.drop(self.linear(x)))


def test_compile_leaves_the_models_training_flags_as_they_were():
    torch.manual_seed(0)
    model = Dropped()
    model.norm.eval()  # mixed flags: the module trains, its norm does not
    flags = {name: m.training for name, m in model.named_modules()}
    x = torch.randn(3, 4)
    compiled = wb.compile(model, (x,))
    assert {name: m.training for name, m in model.named_modules()} == flags
    model.eval()  # compiled in inference mode (as torch.onnx.export does by default)
    np.testing.assert_allclose(compiled(x), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_from_torch_leaves_the_models_training_flags_as_they_were():
    from workbench.graph.frontends.torch_fx import from_torch

    model = Dropped()
    model.norm.eval()
    flags = {name: m.training for name, m in model.named_modules()}
    graph = from_torch(model, (torch.randn(3, 4),))
    assert {name: m.training for name, m in model.named_modules()} == flags
    assert "dropout" not in {node.op for node in graph.nodes}  # traced in inference mode


class Nested(torch.nn.Module):
    def forward(self, x):
        return {"b": x * 2, "a": (x + 1, [torch.relu(x), x - 3])}


def test_dict_and_nested_outputs_keep_their_structure(tmp_path):
    model, x = Nested(), torch.randn(2, 3)
    compiled = wb.compile(model, (x,))
    want = model(x)
    for out in (compiled(x), _saved_and_loaded(compiled, tmp_path)(x)):
        assert isinstance(out, dict) and list(out) == ["b", "a"]
        assert isinstance(out["a"], tuple) and isinstance(out["a"][1], list)
        np.testing.assert_allclose(out["b"], want["b"].numpy(), rtol=1e-6)
        np.testing.assert_allclose(out["a"][0], want["a"][0].numpy(), rtol=1e-6)
        np.testing.assert_allclose(out["a"][1][0], want["a"][1][0].numpy(), rtol=1e-6)
        np.testing.assert_allclose(out["a"][1][1], want["a"][1][1].numpy(), rtol=1e-6)


class Pair(torch.nn.Module):
    def forward(self, x):
        return x + 1, x * 3


def test_a_tuple_output_stays_a_tuple():
    model, x = Pair(), torch.randn(4)
    out = wb.compile(model, (x,))(x)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[1], (x * 3).numpy(), rtol=1e-6)


def _saved_and_loaded(compiled, tmp_path):
    compiled.save(tmp_path / "artifact")
    return wb.load(tmp_path / "artifact")


def test_a_missing_records_file_is_an_error(tmp_path):
    missing = tmp_path / "no-such-records.jsonl"
    with pytest.raises(FileNotFoundError, match="no-such-records.jsonl"):
        wb.compile(TwoInputs(), (torch.randn(2), torch.randn(2)), schedules=str(missing))
    with pytest.raises(FileNotFoundError, match="no-such-records.jsonl"):
        wb.compile(TwoInputs(), (torch.randn(2), torch.randn(2)), schedules=missing)
