"""The elementwise larger / smaller of two tensors: ``torch.max(a, b)``, ``a.min(b)``,
``maximum`` / ``minimum`` (a NaN wins), ``fmax`` / ``fmin`` (a NaN loses), broadcast and
promoted as PyTorch; ONNX ``Max`` / ``Min`` of several inputs against onnxruntime. Each is
``where(a >= b, a, b)`` with a NaN test, compiled on the cpu without fast-math (which would
fold ``x != x`` away)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402

RNG = np.random.default_rng(23)


class Floats(torch.nn.Module):
    def forward(self, x, y, row):
        return (torch.max(x, y), x.min(y), torch.maximum(x, row), torch.minimum(row, y),
                torch.fmax(x, y), torch.fmin(x, y))


def _floats():
    x = RNG.standard_normal((5, 7)).astype("float32")
    y = RNG.standard_normal((5, 7)).astype("float32")
    row = RNG.standard_normal(7).astype("float32")
    x[0, 0] = y[1, 1] = np.nan
    x[2, 2] = y[2, 2] = np.nan
    row[3] = np.nan
    y[3] = x[3]  # ties
    return x, y, row


def test_float_extremes_match_torch_with_nan_ties_and_broadcast():
    x, y, row = _floats()
    compiled = wb.compile(Floats(), tuple(map(torch.from_numpy, (x, y, row))), target="cpu",
                          jobs=1)
    got = compiled(x, y, row)
    want = Floats()(*map(torch.from_numpy, (x, y, row)))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float32 and g.shape == tuple(w.shape)
        np.testing.assert_array_equal(g, w.numpy())  # exact: a pick, no arithmetic
    assert np.isnan(got[0][0, 0]) and not np.isnan(got[4][0, 0])  # maximum vs fmax


class Mixed(torch.nn.Module):
    def forward(self, i, j, f):
        return torch.maximum(i, j), torch.minimum(i, f), torch.max(j, i)


def test_integer_and_mixed_dtypes_promote_as_torch():
    i = torch.from_numpy(RNG.integers(-9, 9, (4, 6)).astype("int64"))
    j = torch.from_numpy(RNG.integers(-9, 9, (4, 6)).astype("int32"))
    f = torch.from_numpy(RNG.standard_normal((4, 6)) * 5)  # float64
    compiled = wb.compile(Mixed(), (i, j, f), target="cpu", jobs=1)
    got = compiled(i.numpy(), j.numpy(), f.numpy())
    for g, w in zip(got, Mixed()(i, j, f), strict=True):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_array_equal(g, w.numpy())


def test_onnx_max_and_min_of_three_inputs_match_onnxruntime():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Max", ["a", "b", "c"], ["hi"]),
             helper.make_node("Min", ["a", "c"], ["lo"])]
    shapes = {"a": (3, 5), "b": (1, 5), "c": (3, 1)}
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
              for n, s in shapes.items()]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("hi", "lo")]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17)])
    feeds = {n: RNG.standard_normal(s).astype("float32") for n, s in shapes.items()}
    feeds["a"][1, 2] = np.nan
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    got = wb.compile(model, tuple(feeds.values()), target="cpu", jobs=1)(*feeds.values())
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_array_equal(g, e)
    assert np.isnan(got[0][1, 2]) and np.isnan(got[1][1, 2])
