"""ONNX ops of the dynamo exporter's transformer graphs (``torch.onnx.export(...,
dynamo=True)`` of GPT-2, BERT, Llama), mixed into ``onnx._Node``: Gather by a run-time index
(``take``), GatherND (``x[i, j]``), Cast, Split, Where, IsNaN, Pow, ReduceMean, ReduceSum,
ReduceMax, ReduceMin (no axes: every axis, a 0-d result without keepdims), Max, Min
(elementwise, NaN propagated), Reciprocal,
comparisons, And, Not (on 0/1 masks of one dtype), CumSum (``running_sum``), GatherElements
(``gather``); constant Pad (torchvision's Swin), HardSigmoid (MobileNetV3); ReduceL2
(``F.normalize``: timm's XCiT), InstanceNormalization (``nn.GroupNorm``: timm's PoolFormer).

Booleans are the graph's 0/1 masks (as in the PyTorch frontend). ``IsNaN(x)`` is
``x != x``, which holds for NaN under IEEE comparisons; the exporter puts it after
``Softmax`` to zero fully masked rows, which the zoo's causal and padding masks never
produce.
"""

from __future__ import annotations

import math

import numpy as np

COMPARISONS = {"Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le",
               "GreaterOrEqual": "ge"}


class MoreOps:
    """``op_<OpType>`` handlers (``self`` is an ``onnx._Node``)."""

    def _axis(self, name: str = "axis", default: int = 0) -> int:
        return self.attrs.get(name, default) % len(self.shape(self.ins[0]))

    def op_Gather(self):
        """``np.take`` along ``axis`` (a constant scalar index: ``select``); negative indices
        wrap, as ONNX defines them."""
        x, index = self.ins[:2]
        axis = self._axis()
        extent = self.shape(x)[axis]
        constant = self.b.constants.get(index)
        if constant is not None and constant.ndim == 0:
            return self.emit("select", [x], {"axis": axis, "index": int(constant) % extent})
        return self.emit("take", [x, index], {"axis": axis, "wrap": True})

    def op_GatherND(self):
        """``data[indices[..., 0], ..., indices[..., q-1]]`` (``batch_dims`` 0): one ``take``
        over the first ``q`` axes merged, by the flat index ``sum_k i_k * stride_k`` (each
        term a ``take`` of ``arange * stride`` by one column, so negatives wrap)."""
        data, indices = self.ins[:2]
        if self.attrs.get("batch_dims", 0):
            raise NotImplementedError(f"{self.where}: GatherND with batch_dims")
        shape, ishape = self.shape(data), self.shape(indices)
        q = ishape[-1]
        extents = shape[:q]
        flat = None
        for k in range(q):
            stride = int(np.prod(extents[k + 1:], dtype=np.int64))
            column = self.emit("select", [indices], {"axis": len(ishape) - 1, "index": k})
            table = self.b.constant("stride", np.arange(extents[k], dtype=np.float64) * stride)
            term = self.emit("take", [table, column], {"axis": 0, "wrap": True})
            flat = term if flat is None else self.emit("add", [flat, term])
        flat = self.emit("cast", [flat], {"dtype": "int64"})
        merged = self.emit("reshape", [data], {"shape": [int(np.prod(extents, dtype=np.int64))]
                                               + list(shape[q:])})
        return self.emit("take", [merged, flat], {"axis": 0, "wrap": False})

    def op_Cast(self):
        """A dtype conversion (``cast``; to ``bool``: ``x != 0``); the same dtype, or float16
        (kernels compute in float32): its input."""
        from onnx import helper

        target = str(helper.tensor_dtype_to_np_dtype(self.attrs["to"]))
        x = self.ins[0]
        source = self.b.types[x].dtype
        if target in (source, "float16", "bfloat16"):
            return x
        if target == "bool":
            return self.emit("ne", [x, self.b.constant("zero", np.zeros((), source))])
        return self.emit("cast", [x], {"dtype": target})

    def op_Split(self):
        x = self.ins[0]
        axis = self._axis()
        extent = self.shape(x)[axis]
        if len(self.ins) > 1 and self.ins[1]:
            sizes = [int(s) for s in self.const(self.ins[1])]
        elif "split" in self.attrs:
            sizes = [int(s) for s in self.attrs["split"]]
        else:
            count = int(self.attrs.get("num_outputs", len(self.node.output)))
            size = -(-extent // count)
            sizes = [min(size, extent - s) for s in range(0, extent, size)]
        parts, start = [], 0
        for size in sizes:
            parts.append(self.emit("slice", [x], {"axis": axis, "start": start,
                                                  "stop": start + size, "step": 1}))
            start += size
        return tuple(parts)

    def _mask(self, value: str, dtype: str = "float32") -> str:
        """The 0/1 mask ``value`` in ``dtype`` (the graph's booleans are 0/1 numbers; a
        ``bool`` constant folded at import, such as a causal triangle, becomes one)."""
        if self.b.types[value].dtype == dtype:
            return value
        constant = self.b.constants.get(value)
        if constant is not None:
            return self.b.constant(value, constant.astype(dtype))
        return self.emit("cast", [value], {"dtype": dtype})

    def _masks(self, a: str, b: str) -> list[str]:
        """Two 0/1 masks in one dtype: theirs when they agree (and are not ``bool``),
        else float32 (a bool constant times an int64 mask: DistilBERT's, BERT's padded
        attention mask through the dynamo exporter)."""
        da, db = self.b.types[a].dtype, self.b.types[b].dtype
        dtype = da if da == db and da != "bool" else "float32"
        return [self._mask(a, dtype), self._mask(b, dtype)]

    def op_Where(self):
        cond, x, y = self.ins[:3]
        if self.b.types[cond].dtype == "bool":
            cond = self._mask(cond)
        return self.emit("where", [x, y, cond])

    def op_Max(self):
        return self._pick_all("max")

    def op_Min(self):
        return self._pick_all("min")

    def _pick_all(self, kind: str):
        """Max / Min of one or more inputs (broadcast): ``frontends.extremes.pick``
        pairwise, a NaN propagated (as onnxruntime does; integers hold none)."""
        from workbench.graph.frontends.extremes import pick

        y = self.ins[0]
        floating = self.b.types[y].dtype.startswith("float")
        for other in self.ins[1:]:
            y = pick(self.emit, kind, y, other, floating)
        return y

    def op_IsNaN(self):
        return self.emit("ne", [self.ins[0], self.ins[0]])

    def op_Not(self):
        x = self.ins[0]
        if self.b.types[x].dtype == "bool":
            x = self._mask(x)
        return self.emit("sub", [self.b.constant("one", np.ones((), self.b.types[x].dtype)), x])

    def op_And(self):
        return self.emit("mul", self._masks(*self.ins[:2]))

    def op_CumSum(self):
        """A running sum along a constant ``axis`` (``exclusive``, ``reverse``): a matmul
        with a triangle of ones (``running_sum``; integers summed in float32 and cast
        back, as ATen ``cumsum``)."""
        from workbench.graph.frontends.running_sum import running_sum

        x, axis = self.ins[:2]
        if axis not in self.b.constants:
            raise NotImplementedError(f"{self.where}: CumSum along a run-time axis")
        shape, dtype = self.shape(x), self.b.types[x].dtype
        y = x if dtype == "float32" else self.emit("cast", [x], {"dtype": "float32"})
        y = running_sum(self.emit, self.b.constant, y, shape,
                        int(self.const(axis).reshape(())) % len(shape),
                        exclusive=bool(self.attrs.get("exclusive", 0)),
                        reverse=bool(self.attrs.get("reverse", 0)))
        return y if dtype == "float32" else self.emit("cast", [y], {"dtype": dtype})

    def op_GatherElements(self):
        """``torch.gather``: the graph's ``gather`` along ``axis`` (negative indices wrap,
        as ONNX defines them)."""
        x, index = self.ins[:2]
        return self.emit("gather", [x, index], {"axis": self._axis(), "wrap": True})

    def op_Pow(self):
        """A constant scalar exponent."""
        exponent = self.b.constants.get(self.ins[1])
        if exponent is None or exponent.size != 1:
            raise NotImplementedError(f"{self.where}: Pow with a run-time exponent")
        return self.emit("pow", [self.ins[0]], {"exponent": float(exponent.reshape(()))})

    def op_Pad(self):
        """Constant padding by constant ``pads`` (``[begin..., end...]`` over ``axes``, all
        axes by default); other modes and negative pads (crops) are refused."""
        mode = self.attrs.get("mode", b"constant")
        if mode not in ("constant", b"constant"):
            raise NotImplementedError(f"{self.where}: Pad mode {mode!r}")
        x, pads = self.ins[0], [int(p) for p in self.const(self.ins[1])]
        n = len(self.shape(x))
        value = self.ins[2] if len(self.ins) > 2 else None
        axes = ([int(a) % n for a in self.const(self.ins[3])] if len(self.ins) > 3
                and self.ins[3] else list(range(n)))
        if min(pads, default=0) < 0:
            raise NotImplementedError(f"{self.where}: Pad with negative pads {pads}")
        pairs = [[0, 0] for _ in range(n)]
        for k, axis in enumerate(axes):
            pairs[axis] = [pads[k], pads[k + len(axes)]]
        fill = float(self.const(value).reshape(())) if value else 0.0
        return self.emit("pad", [x], {"pads": pairs, "value": fill})

    def op_HardSigmoid(self):
        """``clip(alpha * x + beta, 0, 1)``: the graph's ``hardsigmoid`` at PyTorch's
        ``alpha = 1/6``, ``beta = 1/2``."""
        x = self.ins[0]
        alpha, beta = float(self.attrs.get("alpha", 0.2)), float(self.attrs.get("beta", 0.5))
        if abs(alpha - 1 / 6) < 1e-7 and beta == 0.5:
            return self.emit("hardsigmoid", [x])
        dtype = self.b.types[x].dtype
        y = self.emit("mul", [x, self.b.constant("alpha", np.asarray(alpha, dtype))])
        y = self.emit("add", [y, self.b.constant("beta", np.asarray(beta, dtype))])
        return self.emit("clamp", [y], {"min": 0.0, "max": 1.0})

    def op_Reciprocal(self):
        x = self.ins[0]
        return self.emit("div", [self.b.constant("one", np.ones((), self.b.types[x].dtype)), x])

    def _reduce_attrs(self) -> dict:
        """``axes`` (attribute, or input 1 from opset 18; none: every axis) and
        ``keepdims`` of a Reduce* node."""
        n = len(self.shape(self.ins[0]))
        if "axes" in self.attrs:
            axes = list(self.attrs["axes"])
        elif len(self.ins) > 1 and self.ins[1]:
            axes = [int(a) for a in self.const(self.ins[1])]
        else:
            axes = list(range(n))
        return {"axes": sorted(a % n for a in axes),
                "keepdims": bool(self.attrs.get("keepdims", 1))}

    def op_ReduceMean(self):
        return self.emit("mean", [self.ins[0]], self._reduce_attrs())

    def _reduce(self, kind: str) -> str:
        if self.attrs.get("noop_with_empty_axes", 0) and not self._has_axes():
            return self.ins[0]
        return self.emit("reduce", [self.ins[0]], {**self._reduce_attrs(), "kind": kind})

    def _has_axes(self) -> bool:
        return "axes" in self.attrs or (len(self.ins) > 1 and bool(self.ins[1]))

    def op_ReduceSum(self):
        return self._reduce("sum")

    def op_ReduceMax(self):
        return self._reduce("max")

    def op_ReduceMin(self):
        return self._reduce("min")

    def op_ReduceL2(self):
        """``sqrt(sum(x * x))`` (``F.normalize``)."""
        x = self.ins[0]
        total = self.emit("reduce", [self.emit("mul", [x, x])],
                          {**self._reduce_attrs(), "kind": "sum"})
        return self.emit("sqrt", [total])

    def op_InstanceNormalization(self):
        """Each (sample, channel) normalized over the spatial axes (the TorchScript exporter
        writes ``nn.GroupNorm`` as one over ``(N, groups, rest)``), then scale and bias per
        channel."""
        x, scale, bias = self.ins[:3]
        shape = list(self.shape(x))
        flat = self.emit("reshape", [x], {"shape": shape[:2] + [math.prod(shape[2:])]})
        y = self.emit("layer_norm", [flat], {"eps": float(self.attrs.get("epsilon", 1e-5)),
                                             "ndim": 1})
        y = self.emit("reshape", [y], {"shape": shape})
        channel = [shape[1]] + [1] * (len(shape) - 2)
        y = self.emit("mul", [y, self.emit("reshape", [scale], {"shape": channel})])
        return self.emit("add", [y, self.emit("reshape", [bias], {"shape": channel})])


def mask_scatters_as_where(model):
    """The model with ``x[mask] = v`` as the dynamo exporter writes it,
    ``ScatterND(data, Transpose(NonZero(mask)), Reshape(Expand(v, count)))`` with one value
    ``v`` and a mask over every axis of ``data``, rewritten as ``Where(mask, v, data)`` (a
    static shape; the NonZero's data-dependent chain is then dead and dropped)."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    ranks = {}
    for info in list(onnx.shape_inference.infer_shapes(model).graph.value_info) + list(
            graph.input):
        if info.type.tensor_type.HasField("shape"):
            ranks[info.name] = len(info.type.tensor_type.shape.dim)

    def source(name, through):
        node = producer.get(name)
        while node is not None and node.op_type in through:
            name = node.input[0]
            node = producer.get(name)
        return name, node

    rewritten = False
    for k, node in enumerate(graph.node):
        reduction = next((helper.get_attribute_value(a) for a in node.attribute
                          if a.name == "reduction"), b"none")
        if node.op_type != "ScatterND" or reduction not in ("none", b"none"):
            continue
        _, nonzero = source(node.input[1], ("Transpose",))
        value, _ = source(node.input[2], ("Reshape", "Expand"))
        if nonzero is None or nonzero.op_type != "NonZero" or value not in inits:
            continue
        mask, data = nonzero.input[0], node.input[0]
        if inits[value].size != 1 or ranks.get(mask) is None or ranks.get(mask) != ranks.get(
                data):
            continue
        graph.node[k].CopyFrom(helper.make_node("Where", [mask, value, data], list(node.output),
                                                name=node.name))
        rewritten = True
    if rewritten:
        _drop_dead(graph)
    return model


def _drop_dead(graph) -> None:
    live = {out.name for out in graph.output}
    keep = []
    for node in reversed(graph.node):
        if any(o in live for o in node.output):
            keep.append(node)
            live.update(i for i in node.input if i)
    del graph.node[:]
    graph.node.extend(reversed(keep))


def _comparison(op: str):
    def handler(self):
        return self.emit(op, self.ins[:2])
    handler.__doc__ = f"``{op}`` as a 0/1 mask."
    return handler


for _name, _op in COMPARISONS.items():
    setattr(MoreOps, f"op_{_name}", _comparison(_op))

__all__ = ["COMPARISONS", "MoreOps", "mask_scatters_as_where"]
