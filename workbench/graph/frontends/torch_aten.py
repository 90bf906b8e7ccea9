"""The PyTorch frontend's ATen operators: one ``_op_<name>`` method per op (``AtenOps``).

A handler gets the op's arguments with every tensor replaced by its graph value name (a
``str``) and python scalars and lists as they are, emits graph nodes through ``self._emit``
and returns the value name(s). ``supported_ops()`` lists the handled ATen names (the source
of ``docs/ops.md``); ``REFUSED`` the ones recognised and refused, with the reason.

Conventions: the graph's booleans are 0/1 masks in a floating dtype (comparisons,
``where``, ``masked_fill``); dtypes follow PyTorch's promotion (``torch_promotion``); integer
tensors at run time index (``torch_index``) or are computed in float64 and cast back.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.graph.frontends.einsum import einsum
from workbench.graph.frontends.pool_windows import ceil_mode_pads, pool_plan
from workbench.graph.frontends.running_sum import running_sum
from workbench.graph.frontends.torch_index import IndexOps
from workbench.graph.frontends.torch_layout import LayoutOps
from workbench.graph.frontends.torch_promotion import PromotionOps

IDENTITY = {"contiguous", "clone", "dropout", "alias", "detach", "lift_fresh_copy",
            "_assert_tensor_metadata", "feature_dropout", "alpha_dropout", "_assert_async",
            "lift_fresh", "_assert_scalar"}
"""Ops that return their first argument."""

REFUSED = {
    "rnn_tanh": "nn.RNN is refused (LSTM and GRU are unrolled; a plain RNN is not)",
    "rnn_relu": "nn.RNN is refused (LSTM and GRU are unrolled; a plain RNN is not)",
}
"""ATen op -> why it is refused (listed as unsupported, with this reason in docs/ops.md)."""

UNARY = {"relu", "silu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "neg", "sin", "cos", "log",
         "abs", "erf", "hardsigmoid", "hardswish", "mish"}
"""Ops that are the graph op of the same name on their first argument (the rest ignored)."""

BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "eq": "eq", "ne": "ne",
          "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "__and__": "mul",
          "logical_and": "mul", "bitwise_and": "mul"}
"""ATen op -> graph op of ``a`` and ``alpha * b``, promoted as PyTorch (``AtenOps._binary``;
the graph's booleans are 0/1 masks, so ``and`` is ``mul``)."""

REDUCTIONS = {"sum": "sum", "amax": "max", "amin": "min"}
"""ATen op -> ``kind`` of the graph's ``reduce`` over ``dims`` (``AtenOps._reduce``)."""

_SHAPE_ONLY = {"new_ones", "new_zeros", "new_full", "new_empty", "zeros_like", "ones_like",
               "full_like", "empty_like"}


def _pair(value, n: int = 2) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = list(value)
    return tuple(value) * n if len(value) == 1 else tuple(value)


def supported_ops() -> list[str]:
    """The ATen op names the converter handles (folded-only ops are not listed)."""
    names = ({n[4:] for n in dir(AtenOps) if n.startswith("_op_")} | IDENTITY | _SHAPE_ONLY
             | set(UNARY) | set(BINARY) | set(REDUCTIONS))
    return sorted(names)


class AtenOps(IndexOps, LayoutOps, PromotionOps):
    """The handlers (mixed into the converter: ``self.b`` is its ``GraphBuilder``)."""

    def handler(self, name: str):
        if name in IDENTITY:
            return self._identity
        if name in _SHAPE_ONLY:
            return lambda x, *args, **kwargs: self._shape_only(name, x, *args, **kwargs)
        if name in UNARY:
            return lambda x, *args, **kwargs: self._emit(name, [x])
        if name in BINARY:
            return lambda a, b, alpha=1, **kwargs: self._binary(BINARY[name], a, b, alpha,
                                                                **kwargs)
        if name in REDUCTIONS:
            return lambda *args, **kwargs: self._reduce(REDUCTIONS[name], *args, **kwargs)
        return getattr(self, f"_op_{name}", None)

    def _emit(self, op: str, inputs: list, attrs: dict | None = None) -> str:
        return self.b.node(op, inputs, attrs, hint=self.hint, source=self.source)

    def _tensor(self, value, like: str | None = None) -> str:
        """A value name for ``value`` (python scalars become 0-d constants of ``like``'s
        floating dtype, float32 by default)."""
        if isinstance(value, str):
            return value
        dtype = self.b.types[like].dtype if like is not None else "float32"
        if not dtype.startswith("float"):
            dtype = "float32"
        return self.b.constant("scalar", np.asarray(value, dtype=dtype))

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.b.types[name].shape

    def _const(self, name: str):
        return self.b.constants.get(name) if isinstance(name, str) else None

    # ---- plumbing --------------------------------------------------------------------------

    def _identity(self, x, *args, **kwargs):
        return x

    def _shape_only(self, name, x, *args, **kwargs):
        import torch

        like = torch.empty(self._shape(x), dtype=getattr(torch, self.b.types[x].dtype))
        result = getattr(torch.ops.aten, name)(like, *args, **kwargs)
        return self.b.constant(self.hint, result.numpy())

    def _op_getitem(self, seq, index):
        return seq[index]

    def _op_sym_size(self, x, dim):
        """The static size of an axis (a python int; export leaves it symbolic after an
        index by a boolean mask, which the frontend makes constant positions)."""
        return self._shape(x)[dim]

    # ---- contractions ----------------------------------------------------------------------

    def _op_linear(self, x, w, b=None):
        wt = self._emit("transpose", [w], {"perm": [1, 0]})
        y = self._emit("matmul", [x, wt])
        return y if b is None else self._emit("add", [y, b])

    def _op_addmm(self, bias, x, w, beta=1, alpha=1):
        """``beta * bias + alpha * (x @ w)`` (BLOOM's ALiBi scores are a ``baddbmm`` with
        ``beta=1, alpha=1/sqrt(head_dim)``); ``beta=0`` ignores ``bias``, NaN included, as
        PyTorch does."""
        product = self._emit("matmul", [x, w])
        if alpha != 1:
            product = self._emit("mul", [product, self._tensor(float(alpha), product)])
        if beta == 0:
            return product
        if beta != 1:
            bias = self._emit("mul", [bias, self._tensor(float(beta), product)])
        return self._emit("add", [product, bias])

    _op_baddbmm = _op_addmm

    def _op_matmul(self, a, b):
        return self._emit("matmul", [a, b])

    _op_mm = _op_matmul
    _op_bmm = _op_matmul

    def _op_einsum(self, equation, tensors, *, path=None):
        """Transposes, reshapes, sums and (batched) matmuls (``frontends/einsum.py``)."""
        return einsum(equation, tensors, self._shape, self._emit)

    def _op_conv2d(self, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            if padding == "valid":
                padding = 0
            else:  # "same" (stride 1): the total padding split evenly (odd kernels)
                padding = [d * (k - 1) // 2 for d, k in zip(_pair(dilation),
                                                            self._shape(w)[2:], strict=True)]
        attrs = {"stride": _pair(stride), "padding": _pair(padding),
                 "dilation": _pair(dilation), "groups": int(groups)}
        return self._emit("conv2d", [x, w] + ([b] if b is not None else []), attrs)

    def _op_conv1d(self, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        """A 2-D convolution over ``(N, C, 1, L)``."""
        n, c, length = self._shape(x)
        x4 = self._emit("reshape", [x], {"shape": [n, c, 1, length]})
        k, cg, r = self._shape(w)
        w4 = self._emit("reshape", [w], {"shape": [k, cg, 1, r]})
        if isinstance(padding, str):
            padding = 0 if padding == "valid" else _pair(dilation, 1)[0] * (r - 1) // 2
        y = self._op_conv2d(x4, w4, b, (1, _pair(stride, 1)[0]), (0, _pair(padding, 1)[0]),
                            (1, _pair(dilation, 1)[0]), groups)
        _, _, _, out = self._shape(y)
        return self._emit("reshape", [y], {"shape": [n, k, out]})

    def _op_conv3d(self, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            padding = 0 if padding == "valid" else [
                d * (k - 1) // 2 for d, k in zip(_pair(dilation, 3), self._shape(w)[2:],
                                                 strict=True)]
        attrs = {"stride": _pair(stride, 3), "padding": _pair(padding, 3),
                 "dilation": _pair(dilation, 3), "groups": int(groups)}
        return self._emit("conv3d", [x, w] + ([b] if b is not None else []), attrs)

    def _op_convolution(self, x, w, b, stride, padding, dilation, transposed, output_padding,
                        groups):
        if transposed:
            raise NotImplementedError("transposed convolution")
        if len(self._shape(x)) == 3:
            return self._op_conv1d(x, w, b, stride, padding, dilation, groups)
        if len(self._shape(x)) == 5:
            return self._op_conv3d(x, w, b, stride, padding, dilation, groups)
        return self._op_conv2d(x, w, b, stride, padding, dilation, groups)

    # ---- normalizations --------------------------------------------------------------------

    def _op_batch_norm(self, x, weight, bias, mean, var, training=False, momentum=0.1,
                       eps=1e-5, cudnn_enabled=False):
        (channels,) = self._shape(mean)
        if weight is None:
            weight = self.b.constant("ones", np.ones(channels, self.b.types[x].dtype))
        if bias is None:
            bias = self.b.constant("zeros", np.zeros(channels, self.b.types[x].dtype))
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

    def _op_layer_norm(self, x, normalized_shape, weight=None, bias=None, eps=1e-5,
                       cudnn_enable=True):
        if (weight is None) != (bias is None):
            if weight is None:
                raise NotImplementedError("layer_norm with a bias and no weight")
            y = self._emit("layer_norm", [x], {"eps": float(eps), "ndim": len(normalized_shape)})
            return self._emit("mul", [y, weight])
        inputs = [x] + [v for v in (weight, bias) if v is not None]
        return self._emit("layer_norm", inputs, {"eps": float(eps),
                                                 "ndim": len(normalized_shape)})

    def _op_native_layer_norm(self, x, normalized_shape, weight, bias, eps):
        return (self._op_layer_norm(x, normalized_shape, weight, bias, eps), None, None)

    def _op_group_norm(self, x, num_groups, weight=None, bias=None, eps=1e-5,
                       cudnn_enabled=True):
        shape = self._shape(x)
        n, c = shape[:2]
        grouped = self._emit("reshape", [x], {"shape": [n, num_groups,
                                                        math.prod(shape) // n // num_groups]})
        y = self._emit("layer_norm", [grouped], {"eps": float(eps), "ndim": 1})
        y = self._emit("reshape", [y], {"shape": list(shape)})
        channel = [c] + [1] * (len(shape) - 2)
        if weight is not None:
            y = self._emit("mul", [y, self._emit("reshape", [weight], {"shape": channel})])
        if bias is not None:
            y = self._emit("add", [y, self._emit("reshape", [bias], {"shape": channel})])
        return y

    def _op_native_group_norm(self, x, weight, bias, n, c, hw, group, eps):
        return (self._op_group_norm(x, group, weight, bias, eps), None, None)

    def _op_rms_norm(self, x, normalized_shape, weight=None, eps=None):
        n = len(self._shape(x))
        axes = list(range(n - len(normalized_shape), n))
        eps = float(np.finfo(np.float32).eps) if eps is None else float(eps)
        square = self._emit("pow", [x], {"exponent": 2.0})
        ms = self._emit("mean", [square], {"axes": axes, "keepdims": True})
        inv = self._emit("rsqrt", [self._emit("add", [ms, self._tensor(eps, x)])])
        y = self._emit("mul", [x, inv])
        return y if weight is None else self._emit("mul", [y, weight])

    # ---- elementwise -----------------------------------------------------------------------

    def _op_softplus(self, x, beta=1, threshold=20):
        if beta != 1:
            raise NotImplementedError("softplus with beta other than 1")
        return self._emit("softplus", [x])

    def _op_gelu(self, x, approximate="none"):
        return self._emit("gelu", [x], {"approximate": approximate})

    def _op_hardtanh(self, x, min_val=-1.0, max_val=1.0):
        return self._emit("clamp", [x], {"min": float(min_val), "max": float(max_val)})

    def _op_relu6(self, x):
        return self._op_hardtanh(x, 0.0, 6.0)

    def _op_clamp(self, x, min=None, max=None):  # noqa: A002 - ATen's names
        if isinstance(min, str) or isinstance(max, str):  # tensor bounds: two wheres
            self.result_dtype = None
            if min is not None:
                x = self._promoted("where", [min, x], [self._promoted("lt", [x, min])])
            if max is not None:
                x = self._promoted("where", [max, x], [self._promoted("gt", [x, max])])
            return x
        return self._emit("clamp", [x], {"min": None if min is None else float(min),
                                         "max": None if max is None else float(max)})

    def _op_clamp_min(self, x, bound):
        return self._op_clamp(x, min=bound)

    def _op_clamp_max(self, x, bound):
        return self._op_clamp(x, max=bound)

    def _op_pow(self, x, exponent):
        if isinstance(exponent, str):
            raise NotImplementedError("pow with a tensor exponent")
        return self._emit("pow", [x], {"exponent": float(exponent)})

    def _binary(self, op: str, a, b, alpha=1, **kwargs):
        """``op`` (a ``BINARY`` graph op) of ``a`` and ``alpha * b``, promoted as PyTorch."""
        if kwargs.get("rounding_mode") is not None:
            return self._rounded_div(a, b, kwargs["rounding_mode"])
        if alpha != 1:
            b = self._promoted("mul", [b, alpha])
        return self._promoted(op, [a, b])

    def _rounded_div(self, a, b, mode: str):
        """``torch.div(a, b, rounding_mode=mode)``: the quotient truncated by a cast to
        int64 and back; ``floor`` subtracts one where that rounded up (a negative
        quotient)."""
        if mode not in ("trunc", "floor"):
            raise NotImplementedError(f"div with rounding_mode={mode!r}")
        result = self._result([a, b])
        dtype = self._compute_dtype([a, b], result)
        q = self._emit("div", [self._operand(a, dtype), self._operand(b, dtype)])
        t = self._emit("cast", [self._emit("cast", [q], {"dtype": "int64"})], {"dtype": dtype})
        if mode == "floor":
            t = self._emit("sub", [t, self._emit("lt", [q, t])])
        return self._cast(t, result)

    def _op_floor_divide(self, a, b):
        return self._rounded_div(a, b, "floor")

    def _op_rsub(self, a, b, alpha=1):
        return self._binary("sub", b, a if alpha == 1 else self._promoted("mul", [a, alpha]))

    def _op_logical_not(self, x):
        return self._promoted("sub", [1.0, x])

    _op_bitwise_not = _op_logical_not

    def _op_where(self, cond, x, y):
        return self._promoted("where", [x, y], [self._as_mask(cond)])

    def _triangle(self, x, diagonal: int, lower: bool):
        rows, cols = self._shape(x)[-2:]
        keep = (np.tril if lower else np.triu)(np.ones((rows, cols), np.float32), diagonal)
        zero = np.zeros((), self._dtype(x))
        return self._emit("where", [x, self.b.constant("zero", zero),
                                    self.b.constant("triangle", keep)])

    def _op_tril(self, x, diagonal=0):
        """The lower triangle of the last two axes (a ``where`` with a constant mask)."""
        return self._triangle(x, int(diagonal), lower=True)

    def _op_triu(self, x, diagonal=0):
        """The upper triangle of the last two axes (a ``where`` with a constant mask)."""
        return self._triangle(x, int(diagonal), lower=False)

    def _op_cumsum(self, x, dim, dtype=None):
        """A running sum along ``dim``: a matmul with a constant upper-triangular matrix of
        ones (``running_sum``; integers in float32, the matmul kernels' dtype, exact while
        the sums stay under 2**24 (position ids from a padding mask), and cast back)."""
        shape = self._shape(x)
        result = self.result_dtype or self._dtype(x)
        y = running_sum(self._emit, self.b.constant, self._cast(x, "float32"), shape,
                        int(dim) % len(shape))
        return self._cast(y, result)

    def _op_diff(self, x, n=1, dim=-1, prepend=None, append=None):
        """``x[1:] - x[:-1]`` along ``dim``, ``n`` times (after ``prepend``/``append``)."""
        parts = [v for v in (prepend, x, append) if v is not None]
        y = self._op_cat(parts, dim) if len(parts) > 1 else x
        for _ in range(int(n)):
            extent = self._shape(y)[dim]
            y = self._promoted("sub", [self._op_slice(y, dim, 1, extent),
                                       self._op_slice(y, dim, 0, extent - 1)])
        return y

    def _op_masked_fill(self, x, mask, value):
        self.result_dtype = self._dtype(x)
        return self._promoted("where", [value, x], [self._as_mask(mask)])

    # ---- pooling ---------------------------------------------------------------------------

    def _op_max_pool2d(self, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
        """``ceil_mode`` pads the bottom and right with ``-inf`` first
        (``pool_windows.ceil_mode_pads``)."""
        if _pair(dilation) != (1, 1):
            raise NotImplementedError("max_pool2d with dilation")
        kernel, stride, padding = _pair(kernel), _pair(stride or kernel), _pair(padding)
        if ceil_mode:
            extra = ceil_mode_pads(self._shape(x)[2:], kernel, stride, padding)
            if any(extra):
                x = self._emit("pad", [x], {"pads": [[0, 0], [0, 0]] + [[0, e] for e in extra],
                                            "value": -math.inf})
        return self._emit("max_pool2d", [x], {"kernel": kernel, "stride": stride,
                                             "padding": padding})

    def _op_max_pool2d_with_indices(self, *args, **kwargs):
        return (self._op_max_pool2d(*args, **kwargs), None)

    def _op_avg_pool2d(self, x, kernel, stride=(), padding=0, ceil_mode=False,
                       count_include_pad=True, divisor_override=None):
        """The graph's ``avg_pool2d`` (sum / kernel area); ``ceil_mode``, ``count_include_pad``
        and ``divisor_override`` as extra padding after each axis and a constant rescale
        (``pool_windows.pool_plan``)."""
        kernel, padding = _pair(kernel), _pair(padding)
        stride = _pair(stride or kernel)
        extra, scale = pool_plan(self._shape(x)[2:], kernel, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)
        if any(extra):
            pads = [[0, 0], [0, 0]] + [[0, e] for e in extra]
            x = self._emit("pad", [x], {"pads": pads, "value": 0.0})
        y = self._emit("avg_pool2d", [x], {"kernel": kernel, "stride": stride,
                                           "padding": padding})
        if scale is None:
            return y
        return self._emit("mul", [y, self.b.constant("divisor", scale.astype(self._dtype(y)))])

    def _op_adaptive_avg_pool2d(self, x, output_size):
        return self._emit("adaptive_avg_pool2d", [x], {"output_size": _pair(output_size)})

    _op__adaptive_avg_pool2d = _op_adaptive_avg_pool2d

    def _as_2d(self, x):
        n, c, length = self._shape(x)
        return self._emit("reshape", [x], {"shape": [n, c, 1, length]})

    def _from_2d(self, y):
        n, c, _, length = self._shape(y)
        return self._emit("reshape", [y], {"shape": [n, c, length]})

    def _op_max_pool1d(self, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
        stride = stride or kernel
        return self._from_2d(self._op_max_pool2d(
            self._as_2d(x), (1, _pair(kernel, 1)[0]), (1, _pair(stride, 1)[0]),
            (0, _pair(padding, 1)[0]), (1, _pair(dilation, 1)[0]), ceil_mode))

    def _op_avg_pool1d(self, x, kernel, stride=(), padding=0, ceil_mode=False,
                       count_include_pad=True):
        stride = stride or kernel
        return self._from_2d(self._op_avg_pool2d(
            self._as_2d(x), (1, _pair(kernel, 1)[0]), (1, _pair(stride, 1)[0]),
            (0, _pair(padding, 1)[0]), ceil_mode, count_include_pad))

    def _op_adaptive_avg_pool1d(self, x, output_size):
        return self._from_2d(self._op_adaptive_avg_pool2d(self._as_2d(x),
                                                          (1, _pair(output_size, 1)[0])))

    def _op_max_pool3d(self, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
        if ceil_mode or _pair(dilation, 3) != (1, 1, 1):
            raise NotImplementedError("max_pool3d with ceil_mode or dilation")
        return self._emit("pool3d", [x], {"kernel": _pair(kernel, 3),
                                          "stride": _pair(stride or kernel, 3),
                                          "padding": _pair(padding, 3), "kind": "max"})

    def _op_max_pool3d_with_indices(self, *args, **kwargs):
        return (self._op_max_pool3d(*args, **kwargs), None)

    def _op_avg_pool3d(self, x, kernel, stride=(), padding=0, ceil_mode=False,
                       count_include_pad=True, divisor_override=None):
        if ceil_mode or not count_include_pad or divisor_override:
            raise NotImplementedError("avg_pool3d with ceil_mode / count_include_pad=False")
        return self._emit("pool3d", [x], {"kernel": _pair(kernel, 3),
                                          "stride": _pair(stride or kernel, 3),
                                          "padding": _pair(padding, 3), "kind": "avg"})

    def _op_adaptive_avg_pool3d(self, x, output_size):
        """Even windows only (the input size a multiple of the output size)."""
        sizes, out = self._shape(x)[2:], _pair(output_size, 3)
        if any(s % o for s, o in zip(sizes, out, strict=True)):
            raise NotImplementedError(f"adaptive_avg_pool3d with uneven windows ({sizes} to "
                                      f"{out})")
        kernel = tuple(s // o for s, o in zip(sizes, out, strict=True))
        return self._op_avg_pool3d(x, kernel, kernel)

    # ---- reductions ------------------------------------------------------------------------

    def _op_mean(self, x, dims=None, keepdim=False, dtype=None):
        return self._emit("mean", [x], {"axes": self._axes(x, dims), "keepdims": bool(keepdim)})

    def _reduce(self, kind: str, x, dims=None, keepdim=False, dtype=None):
        return self._emit("reduce", [x], {"axes": self._axes(x, dims),
                                          "keepdims": bool(keepdim), "kind": kind})

    def _op_linalg_vector_norm(self, x, ord=2, dims=None, keepdim=False, *, dtype=None):  # noqa: A002
        """``torch.linalg.vector_norm`` (``F.normalize``): ``sum(|x| ** ord) ** (1 / ord)``;
        ``ord`` 2 as ``sqrt(sum(x * x))``, 1, 0 (nonzero count) and +-inf as reductions."""
        attrs = {"axes": self._axes(x, dims), "keepdims": bool(keepdim)}
        ord = float(ord)  # noqa: A001
        if ord == 2:
            total = self._emit("reduce", [self._emit("mul", [x, x])], {**attrs, "kind": "sum"})
            return self._emit("sqrt", [total])
        if ord == 0:
            nonzero = self._emit("ne", [x, self._tensor(0.0, x)])
            return self._emit("reduce", [nonzero], {**attrs, "kind": "sum"})
        size = self._emit("abs", [x])
        if math.isinf(ord):
            return self._emit("reduce", [size], {**attrs, "kind": "max" if ord > 0 else "min"})
        if ord == 1:
            return self._emit("reduce", [size], {**attrs, "kind": "sum"})
        total = self._emit("reduce", [self._emit("pow", [size], {"exponent": ord})],
                           {**attrs, "kind": "sum"})
        return self._emit("pow", [total], {"exponent": 1.0 / ord})

    def _first_extreme(self, kind: str, x, dim=None, keepdim=False):
        """The first index of the ``kind`` ("max"/"min") along ``dim`` (the flattened input
        when None): ``min(where(x == extreme, index, extent))`` over the axis with a constant
        index ramp, cast to int64. Integers are compared in float64 (exact to 2**53), floats
        in their dtype. A float row holding a NaN gives its first NaN's index, as PyTorch's
        (the same ``min`` over ``x != x``; its kernel is built without fast-math's
        no-NaN assumption: ``lower.LoweredKernel.ieee``)."""
        if dim is None:
            x = self._reshape_to(x, [math.prod(self._shape(x))])
            dim = 0
        shape = self._shape(x)
        axis = int(dim) % len(shape)
        dtype = self._dtype(x)
        y = self._cast(x, dtype if dtype in ("float32", "float64") else "float64")
        compute = self._dtype(y)
        top = self._emit("reduce", [y], {"axes": [axis], "keepdims": True, "kind": kind})
        ramp = np.arange(shape[axis], dtype=compute).reshape(
            [-1 if a == axis else 1 for a in range(len(shape))])
        index = self.b.constant("index", ramp)
        extent = self.b.constant("extent", np.asarray(shape[axis], compute))

        def first_where(mask):
            picked = self._emit("where", [index, extent, mask])
            return self._emit("reduce", [picked], {"axes": [axis], "keepdims": bool(keepdim),
                                                   "kind": "min"})

        first = first_where(self._emit("eq", [y, top]))
        if dtype in ("float32", "float64"):  # integers hold no NaN
            nan = first_where(self._emit("ne", [y, y]))
            first = self._emit("where", [nan, first, self._emit("lt", [nan, extent])])
        return self._cast(first, "int64")

    def _op_max(self, x, dim=None, keepdim=False):
        """``max()`` (every axis: a 0-d value), ``max(dim)`` (the values and the first
        index, as ``argmax``) and the elementwise ``max(input, other)`` (``maximum``)."""
        return self._extremes("max", x, dim, keepdim)

    def _op_min(self, x, dim=None, keepdim=False):
        """``min()``, ``min(dim)`` and ``min(input, other)``, as ``max``."""
        return self._extremes("min", x, dim, keepdim)

    def _op_maximum(self, a, b):
        """The elementwise larger: a NaN wins (``_pick``)."""
        return self._pick("max", a, b, nan="propagate")

    def _op_minimum(self, a, b):
        """The elementwise smaller: a NaN wins."""
        return self._pick("min", a, b, nan="propagate")

    def _op_fmax(self, a, b):
        """The elementwise larger: a NaN loses."""
        return self._pick("max", a, b, nan="ignore")

    def _op_fmin(self, a, b):
        """The elementwise smaller: a NaN loses."""
        return self._pick("min", a, b, nan="ignore")

    def _pick(self, kind: str, a, b, nan: str):
        """The elementwise larger (``kind`` "max") or smaller of ``a`` and ``b``, promoted
        and broadcast as PyTorch: ``where(a >= b, a, b)``. A NaN wins in ``maximum`` /
        ``minimum`` (``nan="propagate"``) and loses in ``fmax`` / ``fmin`` (``"ignore"``);
        integers hold none (``frontends.extremes.pick``)."""
        from workbench.graph.frontends.extremes import pick

        result = self._result([a, b])
        dtype = self._compute_dtype([a, b], result)
        a, b = self._operand(a, dtype), self._operand(b, dtype)
        y = pick(self._emit, kind, a, b, dtype.startswith("float"), nan)
        return self._cast(y, result)

    def _extremes(self, kind: str, x, dim, keepdim):
        if isinstance(dim, str):  # max(input, other): a tensor, not an axis
            return self._pick(kind, x, dim, nan="propagate")
        if dim is None:
            return self._reduce(kind, x)
        return (self._reduce(kind, x, [dim], keepdim),
                self._first_extreme(kind, x, dim, keepdim))

    def _op_mse_loss(self, x, target, reduction=1):
        """``(x - target) ** 2``, its mean (``reduction`` 1, the default: a 0-d value), its
        sum (2) or itself (0)."""
        diff = self._binary("sub", x, target, 1)
        square = self._emit("mul", [diff, diff])
        if reduction == 0:
            return square
        return self._op_mean(square) if reduction == 1 else self._reduce("sum", square)

    def _op_argmax(self, x, dim=None, keepdim=False):
        """The first index of the maximum: reductions, an ``eq`` and a ``where`` (no new
        graph operator)."""
        return self._first_extreme("max", x, dim, keepdim)

    def _op_argmin(self, x, dim=None, keepdim=False):
        """The first index of the minimum, as ``argmax``."""
        return self._first_extreme("min", x, dim, keepdim)

    def _op_var(self, x, dims=None, unbiased=True, keepdim=False, *, correction=None):
        """``var.dim`` (``unbiased``) and ``var.correction`` (``correction``, keyword)."""
        axes = self._axes(x, dims)
        if correction is None:
            correction = 1 if unbiased else 0
        y = self._emit("reduce", [x], {"axes": axes, "keepdims": bool(keepdim), "kind": "var"})
        count = math.prod(self._shape(x)[a] for a in axes)
        if correction:
            y = self._emit("mul", [y, self._tensor(count / (count - correction), x)])
        return y

    def _op_std(self, x, dims=None, unbiased=True, keepdim=False, *, correction=None):
        """The square root of ``var`` (same arguments)."""
        return self._emit("sqrt", [self._op_var(x, dims, unbiased, keepdim,
                                                correction=correction)])

    def _op_softmax(self, x, dim, *rest, **kwargs):
        return self._emit("softmax", [x], {"axis": int(dim) % len(self._shape(x))})

    _op__softmax = _op_softmax

    def _op_log_softmax(self, x, dim, *rest, **kwargs):
        return self._emit("log_softmax", [x], {"axis": int(dim) % len(self._shape(x))})

    _op__log_softmax = _op_log_softmax

    # ---- recurrent layers ------------------------------------------------------------------

    def _op_lstm(self, x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                 batch_first):
        """LSTM unrolled over the static sequence length (torch_recurrent)."""
        from workbench.graph.frontends.torch_recurrent import recurrent

        return recurrent(self, "lstm", x, hx, params, has_biases, num_layers, bidirectional,
                         batch_first)

    def _op_gru(self, x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                batch_first):
        """GRU unrolled over the static sequence length (torch_recurrent)."""
        from workbench.graph.frontends.torch_recurrent import recurrent

        return recurrent(self, "gru", x, hx, params, has_biases, num_layers, bidirectional,
                         batch_first)

    # ---- resizing --------------------------------------------------------------------------

    def _resize(self, name, x, *args, **kwargs):
        """``interpolate``: separable and linear in the input, so two matmuls with constant
        interpolation matrices, each read off PyTorch's own op applied to a probe of unit
        vectors (its index rules, scale factors and ``align_corners`` exactly)."""
        import torch

        op = getattr(torch.ops.aten, name)
        n, c, h, w = self._shape(x)
        dtype = self.b.types[x].dtype
        probe = torch.eye(w).reshape(w, 1, 1, w).expand(w, 1, h, w).contiguous()
        cols = op(probe, *args, **kwargs)[:, 0, 0, :]  # (w, q): x @ cols resizes the width
        probe = torch.eye(h).reshape(h, 1, h, 1).expand(h, 1, h, w).contiguous()
        rows = op(probe, *args, **kwargs)[:, 0, :, 0]  # (h, p)
        y = self._emit("matmul", [x, self.b.constant("resize_w", cols.numpy().astype(dtype))])
        y = self._emit("transpose", [y], {"perm": [0, 1, 3, 2]})
        y = self._emit("matmul", [y, self.b.constant("resize_h", rows.numpy().astype(dtype))])
        return self._emit("transpose", [y], {"perm": [0, 1, 3, 2]})

    def _op_upsample_nearest2d(self, x, *args, **kwargs):
        """Nearest resize (2-D): two matmuls with 0/1 selection matrices."""
        return self._resize("upsample_nearest2d", x, *args, **kwargs)

    def _op_upsample_bilinear2d(self, x, *args, **kwargs):
        """Bilinear resize (2-D): two matmuls with interpolation matrices."""
        return self._resize("upsample_bilinear2d", x, *args, **kwargs)

    # ---- attention -------------------------------------------------------------------------

    def _op_scaled_dot_product_attention(self, q, k, v, attn_mask=None, dropout_p=0.0,
                                         is_causal=False, scale=None, enable_gqa=False):
        from workbench.graph.frontends.torch_attention import attention

        return attention(self, q, k, v, attn_mask, bool(is_causal), scale)

    def _op__scaled_dot_product_flash_attention_for_cpu(self, q, k, v, dropout_p=0.0,
                                                        is_causal=False, attn_mask=None,
                                                        scale=None):
        out = self._op_scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
                                                    scale)
        return (out, None)
