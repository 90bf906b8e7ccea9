"""The PyTorch frontend's indexing by several tensors, boolean masks read and written, and
its public entry points (a module, an ``ExportedProgram``, its ``module()``), against
PyTorch on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from graph_models import Fn  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph import from_torch  # noqa: E402
from workbench.graph.compiler import ModelInputError  # noqa: E402
from workbench.graph.errors import IndexOutOfRangeError, UnsupportedOperatorError  # noqa: E402


def _two_index(x, i, j):
    return x[:, i, j] * 2


@pytest.fixture(scope="module")
def two_index():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 3, generator=gen)
    i = torch.randint(-5, 5, (4, 1), generator=gen)
    j = torch.randint(0, 3, (2,), generator=gen)
    return (x, i, j), wb.compile(Fn(_two_index), (x, i, j), target="numpy")


def test_two_index_tensors_broadcast_and_wrap_negatives(two_index):
    (x, i, j), compiled = two_index
    np.testing.assert_allclose(compiled(x, i, j), _two_index(x, i, j).numpy(), rtol=1e-6)
    take = [n for n in compiled.graph.nodes if n.op == "take"]
    assert take, "x[:, i, j] is a take by a flat index"


@pytest.mark.parametrize("which, bad", [(1, 5), (1, -6), (2, 3)])
def test_each_index_tensor_is_bounds_checked_naming_it(two_index, which, bad):
    (x, i, j), compiled = two_index
    args = [x, i.clone(), j.clone()]
    args[which].view(-1)[0] = bad
    name = list(compiled.graph.inputs)[which]
    with pytest.raises(IndexOutOfRangeError, match=rf"input {name!r}.*index {bad}"):
        compiled(*args)
    with pytest.raises(IndexError):
        _two_index(*args)
    np.testing.assert_allclose(compiled(x, i, j), _two_index(x, i, j).numpy(), rtol=1e-6)


def test_a_runtime_boolean_mask_read_is_refused_naming_the_node_and_the_fix():
    def fn(x):
        return x[x > 0] * 2

    with pytest.raises(UnsupportedOperatorError, match=r"(?s)aten\.index\.Tensor \(node "
                                                       r"index at .*torch\.where.*masked_fill"):
        from_torch(Fn(fn), (torch.randn(3, 4),))


def test_a_boolean_mask_written_is_a_where():
    def fn(x):
        y = x * 2
        y[x < 0] = 0.5
        y[:, x[0] > 0.3] = torch.tensor(-4.0)
        return y

    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(4))
    compiled = wb.compile(Fn(fn), (x,), target="numpy")
    assert "where" in [n.op for n in from_torch(Fn(fn), (x,)).nodes]
    np.testing.assert_allclose(compiled(x), fn(x).numpy(), rtol=1e-6)


def test_an_integer_index_put_is_refused_with_the_reason():
    def fn(x, i):
        y = x * 1
        y[i] = 1.0
        return y

    with pytest.raises(UnsupportedOperatorError, match="scatter"):
        from_torch(Fn(fn), (torch.randn(4, 3), torch.tensor([0, 2])))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(5, 3)
        self.register_buffer("offset", torch.randn(3), persistent=False)

    def forward(self, x, y):
        return torch.relu(self.lin(x)) * y + self.offset


@pytest.mark.parametrize("form", ["module", "exported", "exported_module"])
def test_entry_points_compile_and_refuse_bad_inputs_by_name(form):
    gen = torch.Generator().manual_seed(5)
    model = Net().eval()
    x, y = torch.randn(2, 5, generator=gen), torch.randn(2, 3, generator=gen)
    exported = torch.export.export(model, (x, y))
    source = {"module": model, "exported": exported, "exported_module": exported.module()}
    compiled = wb.compile(source[form], () if form == "exported" else (x, y), target="numpy")
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x, y), model(x, y).numpy(), rtol=1e-5, atol=1e-6)
    names = list(compiled.graph.inputs)
    with pytest.raises(ModelInputError, match=rf"input {names[1]!r}.*shape \(2, 3\)"):
        compiled(x, torch.randn(3, 2))
    with pytest.raises(ModelInputError, match=rf"input {names[0]!r}.*float32.*int64"):
        compiled(x.long(), y)


def _gather_nd_graph():
    """One ONNX GatherND node (``batch_dims`` 0): ``x[idx[..., 0], idx[..., 1]]`` of x
    ``[3, 5, 2]`` by idx ``[4, 1, 2]``, through the ONNX frontend."""
    from onnx import TensorProto, helper

    from workbench.graph.frontends.onnx import from_onnx

    node = helper.make_node("GatherND", ["x", "idx"], ["y"])
    g = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5, 2]),
        helper.make_tensor_value_info("idx", TensorProto.INT64, [4, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))


def test_onnx_gather_nd_matches_numpy():
    """GatherND (what exporters give for ``x[i, j]``): negatives wrap, trailing axes kept."""
    from workbench.graph import run

    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    idx = np.stack([rng.integers(-3, 3, (4, 1)), rng.integers(0, 5, (4, 1))], axis=-1)
    expected = x[idx[..., 0], idx[..., 1]]
    graph = _gather_nd_graph()
    np.testing.assert_allclose(run(graph, x, idx)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(wb.compile(graph, target="numpy")(x, idx), expected, rtol=1e-6)


@pytest.fixture(scope="module", params=["numpy", "cpu"])
def gather_nd(request):
    return wb.compile(_gather_nd_graph(), target=request.param)


@pytest.mark.parametrize("column, bad", [(0, 3), (0, -4), (1, 5), (1, -6)])
def test_onnx_gather_nd_checks_each_index_column(gather_nd, column, bad):
    """Each column of GatherND's index tensor bounds its own axis (a view of the model's
    input, checked on every call) instead of reading a clamped element."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    idx = np.stack([rng.integers(-3, 3, (4, 1)), rng.integers(-5, 5, (4, 1))], axis=-1)
    np.testing.assert_allclose(gather_nd(x, idx), x[idx[..., 0], idx[..., 1]], rtol=1e-6)
    wrong = idx.copy()
    wrong[2, 0, column] = bad
    with pytest.raises(IndexOutOfRangeError, match=rf"input 'idx'.*index {bad} .*size "
                                                   rf"{x.shape[column]}"):
        gather_nd(x, wrong)
    with pytest.raises(IndexError):
        x[wrong[..., 0], wrong[..., 1]]


def test_a_known_op_with_unsupported_arguments_is_listed_with_the_others():
    def fn(x):
        return torch.flip(torch.nn.functional.softplus(x, beta=2.0), [0])

    with pytest.raises(UnsupportedOperatorError, match=r"(?s)aten\.flip.*aten\.softplus"
                                                       r"\.default \(node softplus .*beta"):
        from_torch(Fn(fn), (torch.randn(3, 4),))


def test_a_boolean_mask_input_written_then_indexed():
    def fn(x, m, j):
        y = x * 1.5
        y[m] = -0.25
        return y[:, :, j] + 1

    gen = torch.Generator().manual_seed(7)
    x, m = torch.randn(3, 4, 5, generator=gen), torch.rand(3, 4, generator=gen) > 0.5
    j = torch.randint(-5, 5, (7,), generator=gen)
    compiled = wb.compile(Fn(fn), (x, m, j), target="numpy")
    np.testing.assert_allclose(compiled(x, m, j), fn(x, m, j).numpy(), rtol=1e-6)


def test_onnx_dynamo_export_of_a_mask_write_is_a_where(tmp_path):
    """``x[mask] = v`` through ``torch.onnx.export(dynamo=True)``: NonZero + ScatterND."""
    pytest.importorskip("onnxscript")
    import onnx

    from workbench.graph.frontends.onnx import from_onnx

    def fn(x):
        y = x * 2
        y[x < 0.2] = 0.5
        return y

    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(8))
    path = tmp_path / "mask.onnx"
    torch.onnx.export(Fn(fn), (x,), str(path), dynamo=True)
    graph = from_onnx(onnx.load(str(path)))
    assert "where" in [n.op for n in graph.nodes]
    np.testing.assert_allclose(wb.compile(graph, target="numpy")(x.numpy()), fn(x).numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("dynamo", [False, True])
def test_onnx_export_of_two_index_tensors_matches_torch(tmp_path, dynamo):
    """``x[:, i, j]`` through both exporters (the dynamo one writes GatherND)."""
    if dynamo:
        pytest.importorskip("onnxscript")
    import onnx

    from workbench.graph.frontends.onnx import from_onnx

    gen = torch.Generator().manual_seed(9)
    x = torch.randn(2, 5, 3, generator=gen)
    i, j = torch.randint(0, 5, (4, 1), generator=gen), torch.randint(0, 3, (2,), generator=gen)
    path = tmp_path / "index.onnx"
    torch.onnx.export(Fn(_two_index), (x, i, j), str(path), dynamo=dynamo)
    compiled = wb.compile(from_onnx(onnx.load(str(path))), target="numpy")
    np.testing.assert_allclose(compiled(x.numpy(), i.numpy(), j.numpy()),
                               _two_index(x, i, j).numpy(), rtol=1e-6)
