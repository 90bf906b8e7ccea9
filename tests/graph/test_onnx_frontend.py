"""The ONNX frontend: models built with onnx.helper, run by the interpreter, checked against
torch's functional operators on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from workbench.graph import UnsupportedOperatorError, from_onnx, run  # noqa: E402

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _model(nodes, inputs, output, inits, opset=23):
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs]
    out = helper.make_tensor_value_info(output, TensorProto.FLOAT, None)
    tensors = [numpy_helper.from_array(a, name) for name, a in inits.items()]
    g = helper.make_graph(nodes, "g", vi, [out], tensors)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_cnn_ops_match_torch():
    w, b = _rand(4, 3, 3, 3), _rand(4)
    mean, var, gamma, beta = _rand(4), RNG.uniform(0.5, 1.5, 4).astype("float32"), _rand(4), _rand(4)
    fw, fb = _rand(5, 4), _rand(5)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["bn"], epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["mp"], ["sg"]),
        helper.make_node("Mul", ["mp", "sg"], ["silu"]),
        helper.make_node("AveragePool", ["silu"], ["ap"], kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("GlobalAveragePool", ["ap"], ["gp"]),
        helper.make_node("Flatten", ["gp"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "fw", "fb"], ["y"], transB=1),
    ]
    inits = {"w": w, "b": b, "m": mean, "v": var, "g": gamma, "be": beta, "fw": fw, "fb": fb}
    graph = from_onnx(_model(nodes, [("x", (2, 3, 8, 8))], "y", inits))
    x = _rand(2, 3, 8, 8)
    t = {k: torch.from_numpy(v) for k, v in inits.items()}
    h = F.conv2d(torch.from_numpy(x), t["w"], t["b"], padding=1)
    h = F.relu(F.batch_norm(h, t["m"], t["v"], t["g"], t["be"], eps=1e-5))
    h = F.silu(F.max_pool2d(h, 2))
    h = F.adaptive_avg_pool2d(F.avg_pool2d(h, 2, stride=1), 1).flatten(1)
    expected = F.linear(h, t["fw"], t["fb"]).numpy()
    np.testing.assert_allclose(run(graph, x)[0], expected, rtol=1e-4, atol=1e-5)


def test_transformer_ops_match_torch():
    gamma, beta, w = _rand(8), _rand(8), _rand(8, 8)
    shape = np.array([1, 4, 2, 4], "int64")
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w"], ["h"]),
        helper.make_node("Reshape", ["h", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Attention", ["q", "q", "q"], ["a"], is_causal=1),
        helper.make_node("Gelu", ["a"], ["ge"]),
        helper.make_node("Softmax", ["ge"], ["sm"], axis=-1),
        helper.make_node("Add", ["sm", "q"], ["ad"]),
        helper.make_node("Div", ["ad", "q"], ["y"]),
    ]
    inits = {"g": gamma, "b": beta, "w": w, "shape": shape}
    graph = from_onnx(_model(nodes, [("x", (1, 4, 8))], "y", inits))
    x = _rand(1, 4, 8)
    h = F.layer_norm(torch.from_numpy(x), (8,), torch.from_numpy(gamma), torch.from_numpy(beta))
    q = (h @ torch.from_numpy(w)).reshape(1, 4, 2, 4).permute(0, 2, 1, 3)
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    expected = ((torch.softmax(F.gelu(a), -1) + q) / q).numpy()
    np.testing.assert_allclose(run(graph, x)[0], expected, rtol=1e-3, atol=1e-4)


def test_unsupported_onnx_nodes_are_listed_together():
    nodes = [helper.make_node("Sin", ["x"], ["s"], name="sin0"),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Cos", ["r"], ["y"], name="cos0")]
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(_model(nodes, [("x", (3,))], "y", {}))
    assert info.value.operators == [("onnx::Sin", "node 0 ('sin0')"),
                                    ("onnx::Cos", "node 2 ('cos0')")]


def test_wb_compile_accepts_an_onnx_model():
    import workbench as wb

    w, b = _rand(6, 4), _rand(6)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
             helper.make_node("Gelu", ["h"], ["y"])]
    model = _model(nodes, [("x", (3, 4))], "y", {"w": w, "b": b})
    compiled = wb.compile(model, target="numpy")
    assert [k.pattern for k in compiled.kernels] == ["matmul+add+gelu"]
    x = _rand(3, 4)
    expected = F.gelu(torch.from_numpy(x) @ torch.from_numpy(w).T + torch.from_numpy(b))
    np.testing.assert_allclose(compiled(x), expected.numpy(), rtol=1e-4, atol=1e-5)


def test_read_only_initializers_and_inputs_reuse_the_compiled_kernel():
    """ONNX initializers arrive read-only; Numba types those apart, so a call with one
    compiled a second, slower variant of the kernel. The compiled model keeps writable
    copies, and a read-only input is copied too: one signature per kernel."""
    import workbench as wb

    w, b = _rand(6, 4), _rand(6)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])]
    model = _model(nodes, [("x", (3, 4))], "y", {"w": w, "b": b})
    graph = from_onnx(model)
    for value in graph.constants.values():
        value.flags.writeable = False  # as numpy_helper.to_array may give them
    compiled = wb.compile(graph, target="cpu", jobs=1)
    x = _rand(3, 4)
    x.flags.writeable = False
    np.testing.assert_allclose(compiled(x), np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-6)
    dispatcher = compiled.kernels[0].kernel._compiled.dispatcher
    assert len(dispatcher.signatures) == 1
    assert all(a.flags.writeable and a.flags.c_contiguous
               for a in compiled._values.values() if isinstance(a, np.ndarray))


def test_dynamo_exporter_ops_match_numpy():
    """Gather by a run-time index (negatives wrap), Cast, comparisons, And, Not, Where, IsNaN,
    Split, Pow, ReduceMean, Reciprocal (what the dynamo exporter emits for transformers)."""
    import workbench as wb

    nodes = [
        helper.make_node("Gather", ["t", "ids"], ["rows"], axis=0),           # (2, 3, 4)
        helper.make_node("Cast", ["ids"], ["idf"], to=TensorProto.FLOAT),     # (2, 3)
        helper.make_node("Unsqueeze", ["idf", "ax"], ["idu"]),                # (2, 3, 1)
        helper.make_node("Less", ["rows", "zero"], ["neg"]),
        helper.make_node("Not", ["neg"], ["pos"]),
        helper.make_node("Greater", ["rows", "half"], ["big"]),
        helper.make_node("And", ["pos", "big"], ["both"]),
        helper.make_node("Where", ["both", "rows", "idu"], ["w"]),
        helper.make_node("Split", ["w", "sizes"], ["s0", "s1"], axis=2),
        helper.make_node("IsNaN", ["s1"], ["nan"]),
        helper.make_node("Pow", ["s0", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq", "ax"], ["m"], keepdims=1),
        helper.make_node("Add", ["m", "one"], ["m1"]),
        helper.make_node("Reciprocal", ["m1"], ["r"]),
        helper.make_node("Mul", ["s1", "r"], ["y0"]),
        helper.make_node("Add", ["y0", "nan"], ["y"]),
    ]
    table = _rand(5, 4)
    inits = {"t": table, "zero": np.zeros((), "float32"), "half": np.float32(0.3),
             "ax": np.array([2]), "sizes": np.array([1, 3]), "two": np.float32(2.0),
             "one": np.float32(1.0)}
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "g", [ids], [out],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    index = np.array([[0, -1, 3], [-5, 2, 4]])
    rows = table[index]
    w = np.where((rows >= 0) & (rows > 0.3), rows, index[..., None].astype("float32"))
    s0, s1 = w[..., :1], w[..., 1:]
    expected = s1 / ((s0 ** 2).mean(axis=2, keepdims=True) + 1)
    graph = from_onnx(model)
    np.testing.assert_allclose(run(graph, index)[0], expected, rtol=1e-5)
    np.testing.assert_allclose(wb.compile(graph, target="numpy")(index), expected, rtol=1e-5)
