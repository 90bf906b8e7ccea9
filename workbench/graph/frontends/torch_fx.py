"""PyTorch frontend: ``torch.export`` (ATen graph), with ``make_fx`` (torch.fx tracing of the
ATen ops) as the fallback where export cannot trace.

Both give an fx graph of ATen operators; ``_Converter`` maps each to graph operators. Every
operator the converter does not know is collected with its source location, and the model
gets ONE ``UnsupportedOperatorError`` listing all of them.

Example
-------
>>> import torch
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
>>> graph = from_torch(model, (torch.randn(2, 4),))
>>> [node.op for node in graph.nodes]
['transpose', 'matmul', 'add', 'relu']
"""

from __future__ import annotations

import math
import re

import numpy as np

from workbench.graph.builder import GraphBuilder
from workbench.graph.errors import UnsupportedOperatorError
from workbench.graph.ir import Graph, TensorType

_IDENTITY = {"contiguous", "clone", "dropout", "alias", "detach", "lift_fresh_copy",
             "_assert_tensor_metadata", "feature_dropout"}


def from_torch(model, example_inputs: tuple, *, method: str = "auto") -> Graph:
    """Import a ``torch.nn.Module`` (in eval mode) as a ``Graph``.

    Parameters
    ----------
    model : torch.nn.Module
    example_inputs : tuple of torch.Tensor
        Fix the shapes of the graph's inputs.
    method : {"auto", "export", "fx"}
        ``"auto"`` tries ``torch.export`` and falls back to ``make_fx`` tracing.
    """
    import torch

    model = model.eval()
    example_inputs = tuple(example_inputs)
    if method in ("auto", "export"):
        try:
            exported = torch.export.export(model, example_inputs)
        except Exception:
            if method == "export":
                raise
        else:
            return _from_exported(exported)
    return _from_make_fx(model, example_inputs)


def _from_exported(exported) -> Graph:
    sig = exported.graph_signature
    tensors = {}
    for placeholder, fqn in {**sig.inputs_to_parameters, **sig.inputs_to_buffers}.items():
        tensors[placeholder] = exported.state_dict[fqn]
    for placeholder, fqn in getattr(sig, "inputs_to_lifted_tensor_constants", {}).items():
        tensors[placeholder] = exported.constants[fqn]
    return _Converter(tensors, list(sig.user_inputs)).convert(exported.graph_module.graph)


def _from_make_fx(model, example_inputs) -> Graph:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        try:
            traced = make_fx(lambda *xs: model(*xs), record_stack_traces=True)(*example_inputs)
        except TypeError:  # an older make_fx without record_stack_traces
            traced = make_fx(lambda *xs: model(*xs))(*example_inputs)
    tensors = {}
    for node in traced.graph.nodes:
        if node.op == "get_attr":
            tensors[node.name] = getattr(traced, node.target)
    users = [n.name for n in traced.graph.nodes if n.op == "placeholder"]
    return _Converter(tensors, users).convert(traced.graph)


def source_location(fx_node) -> str:
    """``file:line`` of the user's code that created ``fx_node`` (last frame of its stack)."""
    trace = fx_node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    if user:
        path, line = user[-1]
        return f"{path}:{line}"
    return f"<fx node {fx_node.name}>"


def _op_name(target) -> str:
    """``aten.add.Tensor`` -> ``add``; builtins such as ``operator.getitem`` -> ``getitem``."""
    text = str(target)
    if text.startswith("aten."):
        return text.split(".")[1]
    return getattr(target, "__name__", text)


def _pair(value) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    value = list(value)
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])


class _Converter:
    def __init__(self, tensors: dict, user_inputs: list[str]):
        self.tensors = tensors
        self.user_inputs = user_inputs
        self.b = GraphBuilder()
        self.values: dict[str, object] = {}
        self.unsupported: list[tuple[str, str]] = []

    # ---- driving -------------------------------------------------------------------------

    def convert(self, fx_graph) -> Graph:
        outputs: list[str] = []
        for fx_node in fx_graph.nodes:
            if fx_node.op in ("placeholder", "get_attr"):
                self._leaf(fx_node)
            elif fx_node.op == "call_function":
                self._call(fx_node)
            elif fx_node.op == "output":
                outputs = self._outputs(fx_node.args[0])
        if self.unsupported:
            raise UnsupportedOperatorError(self.unsupported)
        return self.b.finish(outputs)

    def _outputs(self, result) -> list[str]:
        items = result if isinstance(result, list | tuple) else [result]
        return [self.values.get(item.name, _MISSING) for item in items if item is not None]

    def _leaf(self, fx_node) -> None:
        if fx_node.name in self.tensors:
            array = self.tensors[fx_node.name].detach().cpu().numpy()
            self.values[fx_node.name] = self.b.constant(fx_node.name, array)
            return
        if fx_node.name not in self.user_inputs:
            return
        val = fx_node.meta.get("val")
        shape = tuple(int(s) for s in val.shape)
        dtype = str(val.dtype).replace("torch.", "")
        self.values[fx_node.name] = self.b.input(fx_node.name, TensorType(shape, dtype))

    def _call(self, fx_node) -> None:
        name = _op_name(fx_node.target)
        handler = getattr(self, f"_op_{name}", None)
        if name in _IDENTITY:
            handler = self._identity
        location = source_location(fx_node)
        if handler is None:
            self.unsupported.append((str(fx_node.target), location))
            return
        args = [self._arg(a) for a in fx_node.args]
        kwargs = {k: self._arg(v) for k, v in fx_node.kwargs.items()}
        if any(a is _MISSING for a in args):
            return  # an input came from an unsupported operator: already reported
        self.source = location
        self.hint = fx_node.name
        self.values[fx_node.name] = handler(*args, **kwargs)

    def _arg(self, value):
        from torch.fx import Node as FxNode

        if isinstance(value, FxNode):
            return self.values.get(value.name, _MISSING)
        if isinstance(value, list | tuple):
            return type(value)(self._arg(v) for v in value)
        return value

    def _emit(self, op: str, inputs: list, attrs: dict | None = None) -> str:
        return self.b.node(op, inputs, attrs, hint=self.hint, source=self.source)

    def _tensor(self, value) -> str:
        """A value name for ``value`` (python scalars become 0-d float32 constants)."""
        if isinstance(value, str):
            return value
        return self.b.constant("scalar", np.asarray(value, dtype=np.float32))

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.b.types[name].shape

    # ---- operators (one method per ATen name) ----------------------------------------------

    def _identity(self, x, *args, **kwargs):
        return x

    def _op_getitem(self, seq, index):
        return seq[index]

    def _op_linear(self, x, w, b=None):
        wt = self._emit("transpose", [w], {"perm": [1, 0]})
        y = self._emit("matmul", [x, wt])
        return y if b is None else self._emit("add", [y, b])

    def _op_addmm(self, bias, x, w, beta=1, alpha=1):
        return self._emit("add", [self._emit("matmul", [x, w]), bias])

    def _op_matmul(self, a, b):
        return self._emit("matmul", [a, b])

    _op_mm = _op_matmul
    _op_bmm = _op_matmul

    def _op_conv2d(self, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            raise NotImplementedError("string padding")
        attrs = {"stride": _pair(stride), "padding": _pair(padding),
                 "dilation": _pair(dilation), "groups": int(groups)}
        return self._emit("conv2d", [x, w] + ([b] if b is not None else []), attrs)

    def _op_convolution(self, x, w, b, stride, padding, dilation, transposed, output_padding,
                        groups):
        return self._op_conv2d(x, w, b, stride, padding, dilation, groups)

    def _op_batch_norm(self, x, weight, bias, mean, var, training=False, momentum=0.1,
                       eps=1e-5, cudnn_enabled=False):
        return self._emit("batch_norm", [x, mean, var, weight, bias], {"eps": float(eps)})

    def _op_native_batch_norm(self, x, weight, bias, mean, var, training, momentum, eps):
        if training:
            raise NotImplementedError("batch_norm in training mode")
        return (self._op_batch_norm(x, weight, bias, mean, var, eps=eps), None, None)

    def _op_empty(self, *args, **kwargs):
        return None  # scratch tensors of decomposed ops (batch norm's saved statistics)

    def _op__native_batch_norm_legit_no_training(self, x, weight, bias, mean, var, momentum,
                                                  eps):
        return (self._op_batch_norm(x, weight, bias, mean, var, eps=eps), None, None)

    def _unary(op):  # noqa: N805 - a method factory used in the class body
        def handler(self, x, *args, **kwargs):
            return self._emit(op, [x])
        return handler

    _op_relu = _unary("relu")
    _op_silu = _unary("silu")
    _op_sigmoid = _unary("sigmoid")
    _op_tanh = _unary("tanh")
    _op_exp = _unary("exp")
    _op_sqrt = _unary("sqrt")
    _op_neg = _unary("neg")

    def _op_gelu(self, x, approximate="none"):
        return self._emit("gelu", [x], {"approximate": approximate})

    def _binary(op):  # noqa: N805
        def handler(self, a, b, alpha=1, **kwargs):
            if alpha != 1:
                b = self._emit("mul", [self._tensor(b), self._tensor(float(alpha))])
            return self._emit(op, [self._tensor(a), self._tensor(b)])
        return handler

    _op_add = _binary("add")
    _op_sub = _binary("sub")
    _op_mul = _binary("mul")
    _op_div = _binary("div")

    def _op_max_pool2d(self, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
        if ceil_mode or _pair(dilation) != (1, 1):
            raise NotImplementedError("max_pool2d with ceil_mode or dilation")
        stride = stride or kernel
        return self._emit("max_pool2d", [x], {"kernel": _pair(kernel), "stride": _pair(stride),
                                             "padding": _pair(padding)})

    def _op_max_pool2d_with_indices(self, *args, **kwargs):
        return (self._op_max_pool2d(*args, **kwargs), None)

    def _op_avg_pool2d(self, x, kernel, stride=(), padding=0, ceil_mode=False,
                       count_include_pad=True, divisor_override=None):
        if ceil_mode or not count_include_pad or divisor_override:
            raise NotImplementedError("avg_pool2d with ceil_mode / count_include_pad=False")
        stride = stride or kernel
        return self._emit("avg_pool2d", [x], {"kernel": _pair(kernel), "stride": _pair(stride),
                                             "padding": _pair(padding)})

    def _op_adaptive_avg_pool2d(self, x, output_size):
        return self._emit("adaptive_avg_pool2d", [x], {"output_size": _pair(output_size)})

    _op__adaptive_avg_pool2d = _op_adaptive_avg_pool2d

    def _op_mean(self, x, dims=None, keepdim=False, dtype=None):
        dims = list(range(len(self._shape(x)))) if dims is None else list(dims)
        return self._emit("mean", [x], {"axes": dims, "keepdims": bool(keepdim)})

    def _reshape_to(self, x, shape) -> str:
        size = math.prod(self._shape(x))
        shape = [int(s) for s in shape]
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = size // known
        return self._emit("reshape", [x], {"shape": shape})

    def _op_view(self, x, shape):
        return self._reshape_to(x, shape)

    _op_reshape = _op_view
    _op__unsafe_view = _op_view

    def _op_flatten(self, x, start=0, end=-1):
        shape = list(self._shape(x))
        start, end = start % len(shape), end % len(shape)
        new = shape[:start] + [math.prod(shape[start:end + 1])] + shape[end + 1:]
        return self._reshape_to(x, new)

    def _op_unsqueeze(self, x, dim):
        shape = list(self._shape(x))
        shape.insert(dim % (len(shape) + 1), 1)
        return self._reshape_to(x, shape)

    def _op_expand(self, x, shape, implicit=False):
        old = self._shape(x)
        shape = [o if s == -1 else int(s) for s, o in
                 zip(shape, (None,) * (len(shape) - len(old)) + tuple(old), strict=True)]
        if tuple(shape) == tuple(old):
            return x
        return self._emit("broadcast_to", [x], {"shape": shape})

    def _op_select(self, x, dim, index):
        n = len(self._shape(x))
        return self._emit("select", [x], {"axis": dim % n, "index": int(index)})

    def _op_unbind(self, x, dim=0):
        return [self._op_select(x, dim, i) for i in range(self._shape(x)[dim])]

    def _op_transpose(self, x, d0, d1):
        perm = list(range(len(self._shape(x))))
        d0, d1 = d0 % len(perm), d1 % len(perm)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self._emit("transpose", [x], {"perm": perm})

    def _op_t(self, x):
        return self._op_transpose(x, 0, 1)

    def _op_permute(self, x, dims):
        n = len(self._shape(x))
        return self._emit("transpose", [x], {"perm": [d % n for d in dims]})

    def _op_softmax(self, x, dim, *rest, **kwargs):
        return self._emit("softmax", [x], {"axis": int(dim) % len(self._shape(x))})

    _op__softmax = _op_softmax

    def _op_layer_norm(self, x, normalized_shape, weight=None, bias=None, eps=1e-5,
                       cudnn_enable=True):
        inputs = [x] + [v for v in (weight, bias) if v is not None]
        if (weight is None) != (bias is None):
            raise NotImplementedError("layer_norm with only one of weight/bias")
        return self._emit("layer_norm", inputs, {"eps": float(eps),
                                                 "ndim": len(normalized_shape)})

    def _op_native_layer_norm(self, x, normalized_shape, weight, bias, eps):
        return (self._op_layer_norm(x, normalized_shape, weight, bias, eps), None, None)

    def _op_scaled_dot_product_attention(self, q, k, v, attn_mask=None, dropout_p=0.0,
                                         is_causal=False, scale=None, enable_gqa=False):
        if attn_mask is not None:
            raise NotImplementedError("sdpa with attn_mask")
        attrs = {"scale": None if scale is None else float(scale), "causal": bool(is_causal)}
        return self._emit("sdpa", [q, k, v], attrs)

    def _op__scaled_dot_product_flash_attention_for_cpu(self, q, k, v, dropout_p=0.0,
                                                        is_causal=False, attn_mask=None,
                                                        scale=None):
        out = self._op_scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
                                                    scale)
        return (out, None)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
