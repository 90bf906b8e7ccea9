"""ONNX frontend: an ``onnx.ModelProto`` (or a path to one) to a ``Graph``.

Covers Gemm, MatMul, Conv (1-D and 2-D), Clip, BatchNormalization, Relu, Gelu, Sigmoid
(SiLU is Sigmoid then Mul), Tanh, Exp, Sqrt, Erf, Neg, Add, Sub, Mul, Div, MaxPool,
AveragePool, GlobalAveragePool, Flatten, Reshape, Transpose, Softmax, LayerNormalization,
Attention (opset 23), Identity, Dropout, Constant, Shape (static), Concat, Unsqueeze, Squeeze,
Expand, Slice, and (``onnx_more``) Gather, Cast, Split, Where, IsNaN, Pow, ReduceMean,
Reciprocal, the comparisons, And, Not: what the dynamo exporter emits for GPT-2, BERT, Llama.
A node whose inputs are all constants, of any type, is evaluated at import by onnx's reference
evaluator (shape plumbing). Unsupported nodes are listed in one ``UnsupportedOperatorError``
(location: the node's name and index).
"""

from __future__ import annotations

import math

import numpy as np

from workbench.graph.builder import GraphBuilder
from workbench.graph.errors import UnsupportedOperatorError
from workbench.graph.frontends.einsum import einsum
from workbench.graph.frontends.onnx_more import MoreOps, mask_scatters_as_where
from workbench.graph.frontends.pool_windows import pool_plan
from workbench.graph.ir import Graph, TensorType

_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Sqrt": "sqrt",
          "Erf": "erf", "Neg": "neg", "HardSwish": "hardswish"}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}


def from_onnx(model) -> Graph:
    """Import an ONNX model.

    Example
    -------
    >>> from onnx import TensorProto, helper
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    >>> m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
    ...                                        "g", [x], [y]))
    >>> [n.op for n in from_onnx(m).nodes]
    ['relu']
    """
    import onnx
    from onnx import numpy_helper

    if isinstance(model, str):
        model = onnx.load(model)
    if any(node.op_type == "ScatterND" for node in model.graph.node):
        copy = type(model)()
        copy.CopyFrom(model)
        model = mask_scatters_as_where(copy)
    graph = model.graph
    b = GraphBuilder()
    values: dict[str, str] = {}
    for init in graph.initializer:
        values[init.name] = b.constant(init.name, numpy_helper.to_array(init))
    for inp in graph.input:
        if inp.name in values:
            continue
        dims = tuple(d.dim_value for d in inp.type.tensor_type.shape.dim)
        dtype = str(onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type))
        values[inp.name] = b.input(inp.name, TensorType(dims, dtype))
    unsupported: list[tuple[str, str]] = []
    for index, node in enumerate(graph.node):
        where = f"node {index} ({node.name or node.output[0]!r})"
        known = hasattr(_Node, f"op_{node.op_type}") or node.op_type in {**_UNARY, **_BINARY}
        if node.input and all(not i or (i in values and values[i] in b.constants)
                              for i in node.input):
            arrays = [b.constants[values[i]] if i else None for i in node.input]
            for name, array in zip(node.output, _fold(node, arrays), strict=False):
                values[name] = b.constant(name, np.asarray(array))
            continue
        if not known:
            unsupported.append((f"onnx::{node.op_type}", where))
            continue
        if any(i and i not in values for i in node.input):
            continue  # fed by an unsupported node: already reported
        handler = getattr(_Node(b, values, node, where), f"op_{node.op_type}")
        result = handler()
        results = result if isinstance(result, tuple) else (result,)
        for name, value in zip(node.output, results, strict=False):
            values[name] = value
    if unsupported:
        raise UnsupportedOperatorError(unsupported)
    return b.finish([values[out.name] for out in graph.output])


def _fold(node, arrays: list) -> list:
    """The outputs of ``node`` on constant inputs (onnx's reference evaluator): shape
    plumbing (Shape, ConstantOfShape, Range, Equal, Where on constants) becomes constants."""
    from onnx.reference import ReferenceEvaluator

    names = [i for i in node.input if i]
    feeds = {name: a for name, a in zip(node.input, arrays, strict=True) if name}
    return ReferenceEvaluator(node).run(None, {n: feeds[n] for n in names})


class _Node(MoreOps):
    """The conversion of one ONNX node (``op_<OpType>`` methods)."""

    def __init__(self, b: GraphBuilder, values: dict, node, where: str):
        from onnx import helper

        self.b, self.values, self.node, self.where = b, values, node, where
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.ins = [values[i] if i else None for i in node.input]

    def emit(self, op: str, inputs: list[str], attrs: dict | None = None) -> str:
        return self.b.node(op, inputs, attrs, hint=self.node.output[0], source=self.where)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.b.types[name].shape

    def const(self, name: str) -> np.ndarray:
        return self.b.constants[name]

    def __getattr__(self, name: str):
        op_type = name[3:] if name.startswith("op_") else ""
        if op_type in _UNARY:
            return lambda: self.emit(_UNARY[op_type], [self.ins[0]])
        if op_type in _BINARY:
            return lambda: self.emit(_BINARY[op_type], self.ins[:2])
        raise AttributeError(name)

    def op_Identity(self):
        return self.ins[0]

    op_Dropout = op_Identity

    def op_Constant(self):
        from onnx import numpy_helper

        return self.b.constant(self.node.output[0], numpy_helper.to_array(self.attrs["value"]))

    def op_Gelu(self):
        return self.emit("gelu", [self.ins[0]], {"approximate": self.attrs.get("approximate",
                                                                               b"none").decode()
                                                 if isinstance(self.attrs.get("approximate"), bytes)
                                                 else self.attrs.get("approximate", "none")})

    def op_MatMul(self):
        return self.emit("matmul", self.ins[:2])

    def op_Einsum(self):
        equation = self.attrs["equation"]
        equation = equation.decode() if isinstance(equation, bytes) else equation
        return einsum(equation, self.ins, self.shape, self.emit)

    def op_Gemm(self):
        a, w = self.ins[0], self.ins[1]
        if self.attrs.get("transA", 0):
            a = self.emit("transpose", [a], {"perm": [1, 0]})
        if self.attrs.get("transB", 0):
            w = self.emit("transpose", [w], {"perm": [1, 0]})
        y = self.emit("matmul", [a, w])
        alpha, beta = self.attrs.get("alpha", 1.0), self.attrs.get("beta", 1.0)
        if alpha != 1.0:
            y = self.emit("mul", [y, self.b.constant("alpha", np.float32(alpha))])
        if len(self.ins) > 2 and self.ins[2]:
            c = self.ins[2]
            if beta != 1.0:
                c = self.emit("mul", [c, self.b.constant("beta", np.float32(beta))])
            y = self.emit("add", [y, c])
        return y

    def _pads(self) -> tuple[int, int]:
        pads = list(self.attrs.get("pads", [0, 0, 0, 0]))
        if len(pads) == 2:  # 1-D: viewed as (1, L)
            pads = [0, pads[0], 0, pads[1]]
        if pads[:2] != pads[2:]:
            raise NotImplementedError(f"{self.where}: asymmetric pads {pads}")
        return (pads[0], pads[1])

    def _pair(self, name: str, default: int) -> tuple[int, int]:
        value = list(self.attrs.get(name, [default, default]))
        return (1, value[0]) if len(value) == 1 else tuple(value)

    def _one_d(self, x: str) -> bool:
        return len(self.shape(x)) == 3

    def _to_2d(self, x: str) -> str:
        n, c, length = self.shape(x)
        return self.emit("reshape", [x], {"shape": [n, c, 1, length]})

    def _from_2d(self, y: str) -> str:
        n, c, _, length = self.shape(y)
        return self.emit("reshape", [y], {"shape": [n, c, length]})

    def op_Conv(self):
        """1-D and 2-D convolutions (1-D ones over ``(N, C, 1, L)``)."""
        attrs = {"stride": self._pair("strides", 1), "padding": self._pads(),
                 "dilation": self._pair("dilations", 1),
                 "groups": int(self.attrs.get("group", 1))}
        ins = [i for i in self.ins if i]
        if not self._one_d(ins[0]):
            return self.emit("conv2d", ins, attrs)
        k, cg, r = self.shape(ins[1])
        w = self.emit("reshape", [ins[1]], {"shape": [k, cg, 1, r]})
        return self._from_2d(self.emit("conv2d", [self._to_2d(ins[0]), w] + ins[2:], attrs))

    def op_Clip(self):
        bounds = [float(self.const(i)) if i else None for i in self.ins[1:3]]
        bounds += [None] * (2 - len(bounds))
        low = self.attrs.get("min", bounds[0])
        high = self.attrs.get("max", bounds[1])
        return self.emit("clamp", [self.ins[0]], {"min": low, "max": high})

    def op_BatchNormalization(self):
        x, scale, bias, mean, var = self.ins[:5]
        return self.emit("batch_norm", [x, mean, var, scale, bias],
                         {"eps": float(self.attrs.get("epsilon", 1e-5))})

    def _pool(self, op: str):
        """MaxPool / AveragePool: ``ceil_mode`` and ``count_include_pad`` (ONNX's
        default 0: a border window averages its input elements only) as extra padding and a
        constant rescale (``pool_windows.pool_plan``)."""
        kernel = list(self.attrs["kernel_shape"])
        ceil_mode = bool(self.attrs.get("ceil_mode", 0))
        average = op == "avg_pool2d"
        stride = list(self.attrs.get("strides", kernel))
        x = self.ins[0]
        one_d = self._one_d(x)
        if one_d:
            x, kernel, stride = self._to_2d(x), [1, kernel[0]], [1, stride[0]]
        padding = self._pads()
        extra, scale = pool_plan(self.shape(x)[2:], kernel, stride, padding, ceil_mode,
                                 bool(self.attrs.get("count_include_pad", 0)), average=average)
        if any(extra):  # ceil_mode: pad the end first (zeros for an average, -inf for a max)
            x = self.emit("pad", [x], {"pads": [[0, 0], [0, 0]] + [[0, e] for e in extra],
                                       "value": 0.0 if average else -math.inf})
        y = self.emit(op, [x], {"kernel": tuple(kernel), "stride": tuple(stride),
                                "padding": padding})
        if scale is not None:
            y = self.emit("mul", [y, self.b.constant("divisor", scale.astype(np.float32))])
        return self._from_2d(y) if one_d else y

    def op_MaxPool(self):
        return self._pool("max_pool2d")

    def op_AveragePool(self):
        return self._pool("avg_pool2d")

    def op_GlobalAveragePool(self):
        x = self.ins[0]
        if self._one_d(x):
            return self._from_2d(self.emit("adaptive_avg_pool2d", [self._to_2d(x)],
                                           {"output_size": (1, 1)}))
        return self.emit("adaptive_avg_pool2d", [x], {"output_size": (1, 1)})

    def op_Flatten(self):
        """``(prod(shape[:axis]), prod(shape[axis:]))``; ``axis`` in ``[-rank, rank]``
        (``axis == rank``: one column, the TorchScript exporter's mask of BERT-family
        models)."""
        shape = self.shape(self.ins[0])
        axis = int(self.attrs.get("axis", 1))
        axis = axis + len(shape) if axis < 0 else axis
        new = [math.prod(shape[:axis]), math.prod(shape[axis:])]
        return self.emit("reshape", [self.ins[0]], {"shape": new})

    def op_Reshape(self):
        old = self.shape(self.ins[0])
        shape = [int(s) for s in self.const(self.ins[1])]
        shape = [old[i] if s == 0 else s for i, s in enumerate(shape)]
        if -1 in shape:
            shape[shape.index(-1)] = math.prod(old) // math.prod(s for s in shape if s != -1)
        return self.emit("reshape", [self.ins[0]], {"shape": shape})

    def op_Shape(self):
        """The static shape (a constant)."""
        shape = self.shape(self.ins[0])
        start, end = self.attrs.get("start", 0), self.attrs.get("end", len(shape))
        return self.b.constant(self.node.output[0], np.array(shape[start:end], "int64"))

    def op_Concat(self):
        n = len(self.shape(self.ins[0]))
        return self.emit("concat", [i for i in self.ins if i],
                         {"axis": self.attrs["axis"] % n})

    def _axes(self) -> list[int]:
        if "axes" in self.attrs:
            return list(self.attrs["axes"])
        return [int(a) for a in self.const(self.ins[1])] if len(self.ins) > 1 else []

    def op_Unsqueeze(self):
        shape = list(self.shape(self.ins[0]))
        for axis in sorted(a % (len(shape) + len(self._axes())) for a in self._axes()):
            shape.insert(axis, 1)
        return self.emit("reshape", [self.ins[0]], {"shape": shape})

    def op_Squeeze(self):
        shape = self.shape(self.ins[0])
        axes = {a % len(shape) for a in self._axes()} or {d for d, s in enumerate(shape)
                                                           if s == 1}
        new = [s for d, s in enumerate(shape) if d not in axes]
        return self.emit("reshape", [self.ins[0]], {"shape": new})

    def op_Expand(self):
        old = self.shape(self.ins[0])
        target = [int(s) for s in self.const(self.ins[1])]
        shape = list(np.broadcast_shapes(tuple(old), tuple(target)))
        if tuple(shape) == tuple(old):
            return self.ins[0]
        return self.emit("broadcast_to", [self.ins[0]], {"shape": shape})

    def op_Slice(self):
        shape = self.shape(self.ins[0])
        starts, ends = (self.const(i) for i in self.ins[1:3])
        axes = (self.const(self.ins[3]) if len(self.ins) > 3 and self.ins[3]
                else range(len(starts)))
        steps = (self.const(self.ins[4]) if len(self.ins) > 4 and self.ins[4]
                 else [1] * len(starts))
        x = self.ins[0]
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            axis = int(axis) % len(shape)
            lo, hi, st = slice(int(start), int(min(end, 2**62)), int(step)).indices(shape[axis])
            if (lo, hi, st) != (0, shape[axis], 1):
                x = self.emit("slice", [x], {"axis": axis, "start": lo, "stop": hi, "step": st})
        return x

    def op_Transpose(self):
        n = len(self.shape(self.ins[0]))
        perm = list(self.attrs.get("perm", range(n - 1, -1, -1)))
        return self.emit("transpose", [self.ins[0]], {"perm": perm})

    def op_Softmax(self):
        n = len(self.shape(self.ins[0]))
        return self.emit("softmax", [self.ins[0]], {"axis": self.attrs.get("axis", -1) % n})

    def op_LayerNormalization(self):
        n = len(self.shape(self.ins[0]))
        axis = self.attrs.get("axis", -1) % n
        inputs = [i for i in self.ins[:3] if i]
        if len(inputs) == 2:  # no bias: add a zero one
            width = self.shape(inputs[1])
            inputs.append(self.b.constant("ln_bias", np.zeros(width, "float32")))
        return self.emit("layer_norm", inputs, {"eps": float(self.attrs.get("epsilon", 1e-5)),
                                                "ndim": n - axis})

    def op_Attention(self):
        if len(self.ins) > 3 and any(self.ins[3:]):
            raise NotImplementedError(f"{self.where}: Attention with a mask or past state")
        scale = self.attrs.get("scale")
        return self.emit("sdpa", self.ins[:3], {"scale": None if scale is None else float(scale),
                                                "causal": bool(self.attrs.get("is_causal", 0))})
