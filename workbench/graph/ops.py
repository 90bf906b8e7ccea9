"""The graph's operators: numpy semantics (the interpreter's oracle) and a kind per operator.

Every operator is a function ``f(*arrays, **attrs) -> array`` computed in float64 and cast back
to the first input's dtype. Types are inferred by running the function on small zero arrays
(``infer_type``), so a frontend never repeats shape rules.

Kinds (used by fusion):

- ``elementwise``: one output element from the same-position elements of its inputs (with
  numpy broadcasting), e.g. ``add``, ``relu``, ``batch_norm`` (inference form).
- ``anchor``: a contraction (``conv2d``, ``matmul``) that can absorb an elementwise epilogue.
- ``reduction``: a reduction along axes (``softmax``, ``layer_norm``, pools, ``mean``) that
  can absorb an elementwise epilogue.
- ``layout``: data movement (``reshape``, ``transpose``).
- ``attention``: ``sdpa``, an opaque group.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import numpy as np

from workbench.graph.ir import TensorType


def _f64(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# ------------------------------------------------------------------------ elementwise


# the ops that are one numpy (or ``operator``) function each are that function
add, sub, mul, div, neg = operator.add, operator.sub, operator.mul, operator.truediv, operator.neg
tanh, exp, sqrt, sin, cos, log, abs_ = np.tanh, np.exp, np.sqrt, np.sin, np.cos, np.log, np.abs


def relu(x):
    return np.maximum(x, 0.0)


def gelu(x, approximate: str = "none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def erf(x):
    return _erf(x)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's names
    """``hardtanh``/``relu6``/``clamp``: either bound may be None."""
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def pow_(x, exponent: float = 2.0):
    """``x ** exponent`` for a scalar exponent."""
    return np.power(x, exponent)


def hardsigmoid(x):
    return np.clip(x / 6.0 + 0.5, 0.0, 1.0)


def hardswish(x):
    return x * hardsigmoid(x)


def softplus(x):
    return np.logaddexp(0.0, x)


def mish(x):
    return x * np.tanh(softplus(x))


def where(x, y, cond):
    """``cond ? x : y``; ``cond`` is a 0/1 mask (the graph's booleans are 0/1 floats)."""
    return np.where(cond != 0, x, y)


def _compare(fn):
    def compare(a, b):
        return fn(a, b).astype(np.float64)
    compare.__name__ = fn.__name__
    compare.__doc__ = f"``{fn.__name__}(a, b)`` as a 0/1 mask (in the first input's dtype)."
    return compare


eq, ne, lt, le, gt, ge = (_compare(f) for f in (np.equal, np.not_equal, np.less,
                                                 np.less_equal, np.greater, np.greater_equal))


def batch_norm(x, mean, var, gamma, beta, eps: float = 1e-5):
    """Inference batch norm over axis 1 (NCHW)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma / np.sqrt(var + eps)
    return (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)


# ------------------------------------------------------------------------ anchors


def matmul(a, b):
    return np.matmul(a, b)


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution along one spatial axis."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups: int = 1):
    N, C, H, W = x.shape
    K, Cg, R, S = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    P = conv_output_size(H, R, sh, ph, dh)
    Q = conv_output_size(W, S, sw, pw, dw)
    rows = (np.arange(P) * sh)[:, None] + (np.arange(R) * dh)[None, :]
    cols = (np.arange(Q) * sw)[:, None] + (np.arange(S) * dw)[None, :]
    win = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # N C P Q R S
    out = np.empty((N, K, P, Q))
    kg = K // groups
    for g in range(groups):
        part = win[:, g * Cg:(g + 1) * Cg]
        out[:, g * kg:(g + 1) * kg] = np.einsum("ncpqrs,kcrs->nkpq", part, w[g * kg:(g + 1) * kg])
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def conv2d_nhwc(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    """NHWC data, RSCK weights (the layout pass's target form)."""
    nchw = np.transpose(x, (0, 3, 1, 2))
    kcrs = np.transpose(w, (3, 2, 0, 1))
    out = conv2d(nchw, kcrs, b, stride, padding, dilation)
    return np.transpose(out, (0, 2, 3, 1))


def conv3d(x, w, b=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
           groups: int = 1):
    """NCDHW convolution (any groups): a sum over the kernel offsets of strided slices."""
    n, c = x.shape[:2]
    k, cg = w.shape[:2]
    kernel = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    size = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
            for i in range(3)]
    out = np.zeros((n, k, *size))
    kg = k // groups
    for offset in np.ndindex(*kernel):
        index = tuple(slice(o * d, o * d + (s - 1) * st + 1, st)
                      for o, d, s, st in zip(offset, dilation, size, stride, strict=True))
        window = xp[(slice(None), slice(None)) + index]
        for g in range(groups):
            part = window[:, g * cg:(g + 1) * cg]
            weight = w[g * kg:(g + 1) * kg][(slice(None), slice(None)) + offset]
            out[:, g * kg:(g + 1) * kg] += np.einsum("ncdhw,kc->nkdhw", part, weight)
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1, 1)
    return out


def pool3d(x, kernel=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0), kind: str = "max"):
    """3-D max / average pooling (average divides by the full window)."""
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding], constant_values=fill)
    size = [(xp.shape[2 + i] - kernel[i]) // stride[i] + 1 for i in range(3)]
    windows = []
    for offset in np.ndindex(*kernel):
        index = tuple(slice(o, o + (s - 1) * st + 1, st)
                      for o, s, st in zip(offset, size, stride, strict=True))
        windows.append(xp[(slice(None), slice(None)) + index])
    stacked = np.stack(windows)
    return stacked.max(axis=0) if kind == "max" else stacked.mean(axis=0)


# ------------------------------------------------------------------------ reductions


def _pool_windows(x, kernel, stride, padding, fill):
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    P = (x.shape[2] + 2 * ph - kh) // sh + 1
    Q = (x.shape[3] + 2 * pw - kw) // sw + 1
    rows = (np.arange(P) * sh)[:, None] + np.arange(kh)[None, :]
    cols = (np.arange(Q) * sw)[:, None] + np.arange(kw)[None, :]
    return xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # N C P Q kh kw


def max_pool2d(x, kernel=(2, 2), stride=(2, 2), padding=(0, 0)):
    return _pool_windows(x, kernel, stride, padding, -np.inf).max(axis=(4, 5))


def avg_pool2d(x, kernel=(2, 2), stride=(2, 2), padding=(0, 0)):
    """Divides by the full window (PyTorch's ``count_include_pad=True``)."""
    return _pool_windows(x, kernel, stride, padding, 0.0).mean(axis=(4, 5))


def adaptive_avg_pool2d(x, output_size=(1, 1)):
    N, C, H, W = x.shape
    P, Q = output_size
    out = np.empty((N, C, P, Q))
    for p in range(P):
        h0, h1 = (p * H) // P, -((-(p + 1) * H) // P)
        for q in range(Q):
            w0, w1 = (q * W) // Q, -((-(q + 1) * W) // Q)
            out[:, :, p, q] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def mean(x, axes=(-1,), keepdims: bool = True):
    return x.mean(axis=tuple(axes), keepdims=keepdims)


def softmax(x, axis: int = -1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5, ndim: int = 1):
    axes = tuple(range(x.ndim - ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mu) / np.sqrt(var + eps)
    if gamma is not None:
        out = out * gamma
    if beta is not None:
        out = out + beta
    return out


def rms_norm(x, gamma, eps: float = 1e-6):
    """RMS normalisation over the last axis (Llama's, T5's, Mistral's): ``x * rsqrt(mean(x *
    x) + eps) * gamma`` (``passes.rms_norm`` finds it written out)."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * gamma


def sdpa(q, k, v, mask=None, scale: float | None = None, causal: bool = False,
         mask_kind: str = "additive"):
    """Scaled dot-product attention over the last two axes. An optional fourth input
    ``mask`` (broadcast against the scores): ``mask_kind="bool"`` keeps the scores where it
    is not 0 (``-inf`` elsewhere; the graph's booleans are 0/1 floats), ``"additive"`` adds
    it to the scaled scores."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = (np.where(mask != 0, scores, -np.inf) if mask_kind == "bool"
                  else scores + mask)
    if causal:
        L, S = scores.shape[-2:]
        keep = np.tril(np.ones((L, S), dtype=bool))
        scores = np.where(keep, scores, -np.inf)
    return np.matmul(softmax(scores, -1), v)


def reduce(x, axes=(-1,), keepdims: bool = True, kind: str = "sum"):
    """``sum``/``max``/``min``/``var`` (population, PyTorch's ``correction=0``) over axes."""
    axes = tuple(axes)
    if kind == "var":
        return x.var(axis=axes, keepdims=keepdims)
    return {"sum": np.sum, "max": np.max, "min": np.min}[kind](x, axis=axes, keepdims=keepdims)


def log_softmax(x, axis: int = -1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ------------------------------------------------------------------------ layout


def reshape(x, shape=()):
    return np.reshape(x, tuple(shape))


def transpose(x, perm=()):
    return np.transpose(x, tuple(perm))


def select(x, axis=0, index=0):
    """``x[..., index, ...]`` along ``axis`` (the axis is dropped)."""
    return np.take(x, index, axis=axis)


def broadcast_to(x, shape=()):
    return np.broadcast_to(x, tuple(shape))


def concat(*xs, axis: int = 0):
    return np.concatenate(xs, axis=axis)


def slice_(x, axis: int = 0, start: int = 0, stop: int = 0, step: int = 1):
    """``x[..., start:stop:step, ...]`` along ``axis`` (bounds already clipped)."""
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def rotate_half(x):
    """The rotary embedding's ``rotate_half`` (Llama, Mistral, Qwen, GPT-NeoX):
    ``concat(-x[..., h:], x[..., :h])`` along the last axis, ``h`` half of it
    (``passes.rotary`` finds it written out as two slices, a negation and a concatenation)."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def embedding(weight, indices):
    """Rows of ``weight`` at the (integer) ``indices``: ``weight[indices]``."""
    return weight[indices.astype(np.int64)]


def _checked_index(index, extent: int, wrap: bool, axis: int) -> np.ndarray:
    """``index`` as int64, negatives wrapped when ``wrap``; an out-of-range entry raises
    ``IndexOutOfRangeError`` (as PyTorch raises)."""
    from workbench.graph.errors import IndexOutOfRangeError

    index = np.asarray(index).astype(np.int64)
    low = -extent if wrap else 0
    bad = index[(index < low) | (index >= extent)]
    if bad.size:
        raise IndexOutOfRangeError(
            f"index {int(bad.flat[0])} is out of range for axis {axis} of size {extent}"
            + ("" if wrap else " (negative indices are out of range too)"))
    return np.where(index < 0, index + extent, index)


def take(x, index, axis: int = 0, wrap: bool = False):
    """``np.take(x, index, axis)``: embedding, ``index_select``, ``x[idx]`` (``wrap``:
    negative indices count from the end, as in advanced indexing)."""
    return np.take(x, _checked_index(index, x.shape[axis], wrap, axis), axis=axis)


def gather(x, index, axis: int = 0, wrap: bool = False):
    """``torch.gather(x, axis, index)``: the output has the index's shape."""
    index = _checked_index(index, x.shape[axis], wrap, axis)
    part = x[tuple(slice(0, n) if d != axis else slice(None)
                   for d, n in enumerate(index.shape))]
    return np.take_along_axis(part, index, axis=axis)


def cast(x, dtype: str = "float32"):
    """``x`` converted to ``dtype`` (type promotion: PyTorch's ``result_type``); a cast to
    an integer type truncates toward zero, as PyTorch's does."""
    return np.trunc(x) if np.dtype(dtype).kind in "iub" else x


def pad(x, pads=(), value: float = 0.0):
    """Constant padding; ``pads`` is ``[(before, after)]`` per axis (non-negative)."""
    return np.pad(x, [tuple(p) for p in pads], constant_values=value)


OPS: dict[str, tuple[Callable, str]] = {
    "add": (add, "elementwise"), "sub": (sub, "elementwise"), "mul": (mul, "elementwise"),
    "div": (div, "elementwise"), "relu": (relu, "elementwise"), "gelu": (gelu, "elementwise"),
    "sigmoid": (sigmoid, "elementwise"), "silu": (silu, "elementwise"),
    "tanh": (tanh, "elementwise"), "exp": (exp, "elementwise"), "sqrt": (sqrt, "elementwise"),
    "erf": (erf, "elementwise"), "neg": (neg, "elementwise"),
    "rsqrt": (rsqrt, "elementwise"), "sin": (sin, "elementwise"), "cos": (cos, "elementwise"),
    "log": (log, "elementwise"), "abs": (abs_, "elementwise"), "clamp": (clamp, "elementwise"),
    "pow": (pow_, "elementwise"), "hardsigmoid": (hardsigmoid, "elementwise"),
    "hardswish": (hardswish, "elementwise"), "softplus": (softplus, "elementwise"),
    "mish": (mish, "elementwise"), "where": (where, "elementwise"),
    "eq": (eq, "elementwise"), "ne": (ne, "elementwise"), "lt": (lt, "elementwise"),
    "le": (le, "elementwise"), "gt": (gt, "elementwise"), "ge": (ge, "elementwise"),
    "batch_norm": (batch_norm, "elementwise"),
    "matmul": (matmul, "anchor"), "conv2d": (conv2d, "anchor"),
    "conv2d_nhwc": (conv2d_nhwc, "anchor"), "conv3d": (conv3d, "anchor"),
    "pool3d": (pool3d, "reduction"),
    "max_pool2d": (max_pool2d, "reduction"), "avg_pool2d": (avg_pool2d, "reduction"),
    "adaptive_avg_pool2d": (adaptive_avg_pool2d, "reduction"), "mean": (mean, "reduction"),
    "softmax": (softmax, "reduction"), "layer_norm": (layer_norm, "reduction"),
    "rms_norm": (rms_norm, "reduction"),
    "reduce": (reduce, "reduction"), "log_softmax": (log_softmax, "reduction"),
    "sdpa": (sdpa, "attention"),
    "concat": (concat, "layout"), "slice": (slice_, "layout"),
    "rotate_half": (rotate_half, "layout"),
    "embedding": (embedding, "layout"), "pad": (pad, "layout"),
    "take": (take, "layout"), "gather": (gather, "layout"), "cast": (cast, "elementwise"),
    "reshape": (reshape, "layout"), "transpose": (transpose, "layout"),
    "select": (select, "layout"), "broadcast_to": (broadcast_to, "layout"),
}
"""op name -> (numpy function, kind)."""


def kind(op: str) -> str:
    """The fusion kind of ``op`` (``"fused"`` for a fused group)."""
    if op == "fused":
        return "fused"
    return OPS[op][1]


VIEW_ATTRS = ("views", "out_perm")
"""Attributes any node may carry (``workbench.graph.passes.fold_views``): ``views``, a list of
``[position, [[op, attrs], ...]]``: input ``position`` is the value the node names passed
through those layout ops (``reshape``, ``transpose``, ``slice``, ``select``,
``broadcast_to``) in order; ``out_perm``: the node's value is its operator's result
transposed by that permutation."""


def apply_views(arrays: list[np.ndarray], views) -> list[np.ndarray]:
    """``arrays`` with every ``views`` entry's layout ops applied to its input."""
    arrays = list(arrays)
    for position, steps in views or ():
        for op, attrs in steps:
            arrays[position] = OPS[op][0](arrays[position], **attrs)
    return arrays


def _contiguous(array: np.ndarray) -> np.ndarray:
    """``array`` C-contiguous, a 0-d array staying 0-d (``np.ascontiguousarray`` would make
    it 1-d: a full reduction's type is ``()`` as in PyTorch, not ``(1,)``)."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def evaluate(op: str, arrays: list[np.ndarray], attrs: dict) -> np.ndarray:
    """``op`` applied to ``arrays`` (float64 math, result in the first input's dtype);
    ``VIEW_ATTRS`` are applied around it."""
    if any(key in attrs for key in VIEW_ATTRS):
        rest = {k: v for k, v in attrs.items() if k not in VIEW_ATTRS}
        result = evaluate(op, apply_views(arrays, attrs.get("views")), rest)
        perm = attrs.get("out_perm")
        return result if perm is None else _contiguous(np.transpose(result, perm))
    function = OPS[op][0]
    dtype = arrays[0].dtype if arrays else np.float32
    if op == "cast":
        dtype = np.dtype(attrs.get("dtype", "float32"))
    result = function(*_f64(*arrays), **attrs)
    return _contiguous(np.asarray(result).astype(dtype))


def _conv2d_type(x: TensorType, w: TensorType, b: TensorType | None = None, stride=(1, 1),
                 padding=(0, 0), dilation=(1, 1), groups: int = 1) -> TensorType | None:
    """``conv2d``'s output type from the shapes alone, or None where running it decides
    (shapes that do not fit: the evaluation raises or answers as it always did)."""
    if len(x.shape) != 4 or len(w.shape) != 4:
        return None
    (n, c, h, width), (k, cg, r, s) = x.shape, w.shape
    if groups < 1 or c != cg * groups or k % groups or (b is not None and b.shape != (k,)):
        return None
    p = conv_output_size(h, r, stride[0], padding[0], dilation[0])
    q = conv_output_size(width, s, stride[1], padding[1], dilation[1])
    if p < 1 or q < 1:
        return None
    return TensorType((int(n), int(k), p, q), str(np.dtype(x.dtype)))


TYPE_RULES: dict[str, Callable[..., TensorType | None]] = {"conv2d": _conv2d_type}
"""Output types of operators too costly to run on zeros at a model's sizes (a resnet's convs:
3 s of a 12 s compile); each is checked against running the operator (tests/graph)."""


def infer_type(op: str, types: list[TensorType], attrs: dict) -> TensorType:
    """The output type of ``op`` on inputs of ``types`` (``TYPE_RULES``, or by running it on
    zeros)."""
    if op in TYPE_RULES and not any(key in attrs for key in VIEW_ATTRS):
        inferred = TYPE_RULES[op](*types, **attrs)
        if inferred is not None:
            return inferred
    arrays = [np.zeros(t.shape, t.dtype) for t in types]
    if op == "batch_norm":
        arrays[2] = arrays[2] + 1.0  # variance of one, so no division by zero
    with np.errstate(all="ignore"):
        out = evaluate(op, arrays, attrs)
    return TensorType(tuple(int(s) for s in out.shape), str(out.dtype))


# the CPU's packed conv layout (workbench.graph.passes.layout.pack_conv_weights)
from workbench.graph.ops_packed import PACKED_OPS  # noqa: E402

OPS.update(PACKED_OPS)

# convolutions as matrix products on the GPU (workbench.graph.passes.conv_gemm)
from workbench.graph.ops_im2col import IM2COL_OPS, im2col_type  # noqa: E402

OPS.update(IM2COL_OPS)
TYPE_RULES["im2col"] = im2col_type
