"""Full reductions (``x.sum()``, ``x.mean()``, a norm, a scalar loss) give 0-d outputs, as in
PyTorch: through ``wb.compile`` on cpu, a saved and loaded artifact, the ONNX frontend and
the cuda compiled model (under Numba's CUDA simulator). The kernels see such a value as one
element of shape ``(1,)`` (``workbench.graph.lower._one_element``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402


class Reductions(torch.nn.Module):
    def forward(self, x, y):
        centred = x - x.mean()
        return (x.sum(), (x * y).mean(), x.amax(), torch.linalg.vector_norm(x) * 2.0 + 1.0,
                centred, centred.abs().amin(), x.max(), torch.nn.functional.mse_loss(x, y), x.std())


def _inputs():
    rng = np.random.default_rng(7)
    return tuple(torch.from_numpy(rng.standard_normal((3, 5)).astype("float32"))
                 for _ in range(2))


def _check(outputs, expected):
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected, strict=True):
        assert np.shape(out) == tuple(ref.shape)
        np.testing.assert_allclose(np.asarray(out), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def compiled():
    x, y = _inputs()
    return wb.compile(Reductions(), (x, y), target="cpu", jobs=1)


def test_full_reductions_are_0d_on_cpu(compiled):
    x, y = _inputs()
    outputs = compiled(x, y)
    assert [np.shape(o) for o in outputs] == [(), (), (), (), (3, 5), (), (), (), ()]
    _check(outputs, Reductions()(x, y))


def test_a_lone_full_reduction_is_one_0d_array():
    class Sum(torch.nn.Module):
        def forward(self, x):
            return x.sum()

    x, _ = _inputs()
    out = wb.compile(Sum(), (x,), target="cpu", jobs=1)(x)
    assert isinstance(out, np.ndarray) and out.shape == ()
    np.testing.assert_allclose(out, x.sum().numpy(), rtol=1e-5)


def test_full_reductions_stay_0d_through_save_and_load(compiled, tmp_path):
    x, y = _inputs()
    compiled.save(tmp_path / "model")
    _check(wb.load(tmp_path / "model")(x, y), Reductions()(x, y))


def test_onnx_full_reductions_are_0d():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("ReduceMax", ["x"], ["a"], keepdims=0)]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "sma"]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3, 5])], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x, _ = _inputs()
    out = wb.compile(model, (x.numpy(),), target="cpu", jobs=1)(x.numpy())
    _check(out, (x.sum(), x.mean(), x.amax()))


@pytest.mark.cuda
def test_full_reductions_are_0d_on_cuda():
    x, y = _inputs()
    out = wb.compile(Reductions(), (x, y), target="cuda")(x.numpy(), y.numpy())
    _check(out, Reductions()(x, y))
