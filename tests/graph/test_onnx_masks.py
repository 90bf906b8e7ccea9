"""ONNX ops of padded attention masks (what ``torch.onnx.export`` writes for BERT-family
models called with an ``attention_mask``): CumSum (RoBERTa's position ids), GatherElements,
And of a bool constant with an int64 mask (DistilBERT, BERT), Equal on integers then Not;
each checked against onnxruntime on random inputs, through ``wb.compile`` on the cpu."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import workbench as wb  # noqa: E402

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits=()):
    vi = [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs]
    out = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    g = helper.make_graph(nodes, "g", vi, out, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    compiled = wb.compile(model, tuple(feeds.values()), target="cpu", jobs=1)
    got = compiled(*feeds.values())
    got = got if isinstance(got, list | tuple) else [got]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("exclusive, reverse, axis", [(0, 0, 1), (1, 0, 1), (0, 1, 0),
                                                      (1, 1, -2)])
def test_cumsum_matches_onnxruntime(exclusive, reverse, axis):
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                              reverse=reverse),
             helper.make_node("CumSum", ["m", "axis"], ["z"], exclusive=exclusive,
                              reverse=reverse)]
    model = _model(nodes, [("x", TensorProto.FLOAT, (3, 5)), ("m", TensorProto.INT64, (3, 5))],
                   [("y", TensorProto.FLOAT), ("z", TensorProto.INT64)],
                   [("axis", np.array(axis, np.int64))])
    _check(model, {"x": RNG.standard_normal((3, 5)).astype("float32"),
                   "m": RNG.integers(0, 2, (3, 5)).astype("int64")})


def test_gather_elements_with_negative_indices_matches_onnxruntime():
    nodes = [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)]
    model = _model(nodes, [("x", TensorProto.FLOAT, (3, 6)), ("i", TensorProto.INT64, (3, 4))],
                   [("y", TensorProto.FLOAT)])
    _check(model, {"x": RNG.standard_normal((3, 6)).astype("float32"),
                   "i": RNG.integers(-6, 6, (3, 4)).astype("int64")})


def test_a_bool_constant_and_an_int64_mask_select_like_onnxruntime():
    """DistilBERT's and BERT's padded mask through the dynamo exporter: a folded bool
    constant ``And`` the int64 mask cast to bool, then ``Where``."""
    causal = np.tril(np.ones((4, 4), bool))
    nodes = [helper.make_node("Cast", ["mask"], ["mb"], to=TensorProto.BOOL),
             helper.make_node("And", ["keep", "mb"], ["both"]),
             helper.make_node("Where", ["both", "x", "low"], ["y"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, (2, 4, 4)),
                           ("mask", TensorProto.INT64, (2, 1, 4))],
                   [("y", TensorProto.FLOAT)],
                   [("keep", causal), ("low", np.array(-1e4, np.float32))])
    mask = np.ones((2, 1, 4), np.int64)
    mask[1, 0, 2:] = 0
    _check(model, {"x": RNG.standard_normal((2, 4, 4)).astype("float32"), "mask": mask})


def test_integer_equal_then_not_matches_onnxruntime():
    """RoBERTa's ``input_ids != padding_idx``: Equal on int64, Not, Cast to int64."""
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["e"]),
             helper.make_node("Not", ["e"], ["n"]),
             helper.make_node("Cast", ["n"], ["y"], to=TensorProto.INT64)]
    model = _model(nodes, [("ids", TensorProto.INT64, (2, 6))], [("y", TensorProto.INT64)],
                   [("pad", np.array(1, np.int64))])
    _check(model, {"ids": RNG.integers(0, 3, (2, 6)).astype("int64")})


def test_flatten_at_the_last_axis_matches_onnxruntime():
    """``Flatten(axis=rank)``: one column (the TorchScript exporter's padded mask)."""
    nodes = [helper.make_node("Flatten", ["x"], ["y"], axis=2),
             helper.make_node("Flatten", ["x"], ["z"], axis=-1)]
    model = _model(nodes, [("x", TensorProto.FLOAT, (2, 5))],
                   [("y", TensorProto.FLOAT), ("z", TensorProto.FLOAT)])
    _check(model, {"x": RNG.standard_normal((2, 5)).astype("float32")})
