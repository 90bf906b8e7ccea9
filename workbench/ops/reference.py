"""Numpy reference implementations of the operator library, one per operator.

Each takes the operator's input arrays in parameter order (and the operator's options as
keywords) and returns the output array. They compute in float64 and cast back to the
input dtype, so comparisons against a float32 kernel measure the kernel's rounding.

Example
-------
>>> import numpy as np
>>> a, b = np.ones((2, 3), "float32"), np.ones((3, 4), "float32")
>>> matmul(a, b)[0, 0]
np.float32(3.0)
"""

from __future__ import annotations

import math

import numpy as np


def _f64(*arrays: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _like(result: np.ndarray, template: np.ndarray) -> np.ndarray:
    return np.asarray(result).astype(template.dtype)


# --------------------------------------------------------------------------- linalg


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``."""
    x, y = _f64(a, b)
    return _like(x @ y, a)


def batch_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for each batch: ``(batch, M, K) @ (batch, K, N)``."""
    x, y = _f64(a, b)
    return _like(np.matmul(x, y), a)


def matmul_bias_relu(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``max(a @ b + bias, 0)``."""
    x, y, z = _f64(a, b, bias)
    return _like(np.maximum(x @ y + z, 0.0), a)


# --------------------------------------------------------------------------- conv


def _pad_nchw(x: np.ndarray, padding: int, value: float = 0.0) -> np.ndarray:
    widths = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    return np.pad(x, widths, constant_values=value)


def _windows(x: np.ndarray, R: int, S: int, stride: int, dilation: int, P: int, Q: int):
    """``win[..., p, q, r, s] = x[..., p*stride + r*dilation, q*stride + s*dilation]``."""
    rows = (np.arange(P) * stride)[:, None] + (np.arange(R) * dilation)[None, :]  # (P, R)
    cols = (np.arange(Q) * stride)[:, None] + (np.arange(S) * dilation)[None, :]  # (Q, S)
    return x[..., rows[:, None, :, None], cols[None, :, None, :]]  # (..., P, Q, R, S)


def _out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_nchw(data: np.ndarray, weight: np.ndarray, *, stride: int = 1, padding: int = 1,
                dilation: int = 1) -> np.ndarray:
    """NCHW x KCRS convolution with zero padding."""
    x, w = _f64(data, weight)
    _, _, H, W = x.shape
    _, _, R, S = w.shape
    P, Q = (_out_size(H, R, stride, padding, dilation), _out_size(W, S, stride, padding, dilation))
    win = _windows(_pad_nchw(x, padding), R, S, stride, dilation, P, Q)  # N C P Q R S
    return _like(np.einsum("ncpqrs,kcrs->nkpq", win, w), data)


def conv2d_nhwc(data: np.ndarray, weight: np.ndarray, *, stride: int = 1, padding: int = 1,
                dilation: int = 1) -> np.ndarray:
    """NHWC x RSCK (HWIO) convolution with zero padding."""
    nchw = np.transpose(data, (0, 3, 1, 2))
    kcrs = np.transpose(weight, (3, 2, 0, 1))
    out = conv2d_nchw(nchw, kcrs, stride=stride, padding=padding, dilation=dilation)
    return np.ascontiguousarray(np.transpose(out, (0, 2, 3, 1)))


def depthwise_conv2d_nchw(data: np.ndarray, weight: np.ndarray, *, stride: int = 1,
                          padding: int = 1, dilation: int = 1) -> np.ndarray:
    """Depthwise convolution: channel ``c`` of the data with filter ``weight[c, 0]``."""
    x, w = _f64(data, weight)
    _, _, H, W = x.shape
    _, _, R, S = w.shape
    P, Q = (_out_size(H, R, stride, padding, dilation), _out_size(W, S, stride, padding, dilation))
    win = _windows(_pad_nchw(x, padding), R, S, stride, dilation, P, Q)
    return _like(np.einsum("ncpqrs,crs->ncpq", win, w[:, 0]), data)


# --------------------------------------------------------------------------- pool


def max_pool2d(data: np.ndarray, *, kernel: int = 2, stride: int = 2,
               padding: int = 0) -> np.ndarray:
    """Max over ``kernel x kernel`` windows; padding never wins (it is ``-inf``)."""
    (x,) = _f64(data)
    _, _, H, W = x.shape
    P, Q = _out_size(H, kernel, stride, padding, 1), _out_size(W, kernel, stride, padding, 1)
    win = _windows(_pad_nchw(x, padding, -np.inf), kernel, kernel, stride, 1, P, Q)
    return _like(win.max(axis=(-2, -1)), data)


def avg_pool2d(data: np.ndarray, *, kernel: int = 2, stride: int = 2,
               padding: int = 0) -> np.ndarray:
    """Mean over ``kernel x kernel`` windows, padding zeros included in the count."""
    (x,) = _f64(data)
    _, _, H, W = x.shape
    P, Q = _out_size(H, kernel, stride, padding, 1), _out_size(W, kernel, stride, padding, 1)
    win = _windows(_pad_nchw(x, padding), kernel, kernel, stride, 1, P, Q)
    return _like(win.sum(axis=(-2, -1)) / (kernel * kernel), data)


# --------------------------------------------------------------------------- nn


def softmax(a: np.ndarray) -> np.ndarray:
    """Softmax along the last axis."""
    (x,) = _f64(a)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return _like(e / e.sum(axis=-1, keepdims=True), a)


def layernorm(a: np.ndarray, gamma: np.ndarray, beta: np.ndarray, *,
              eps: float = 1e-5) -> np.ndarray:
    """Normalise each row to mean 0 / variance 1 (biased variance), then scale and shift."""
    x, g, b = _f64(a, gamma, beta)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return _like((x - mean) / np.sqrt(var + eps) * g + b, a)


def rmsnorm(a: np.ndarray, gamma: np.ndarray, *, eps: float = 1e-6) -> np.ndarray:
    """``x / sqrt(mean(x^2) + eps) * gamma`` along the last axis."""
    x, g = _f64(a, gamma)
    return _like(x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * g, a)


# --------------------------------------------------------------------------- elementwise


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b``."""
    return _like(np.add(*_f64(a, b)), a)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b``."""
    return _like(np.multiply(*_f64(a, b)), a)


def relu(a: np.ndarray) -> np.ndarray:
    """``max(a, 0)``."""
    return _like(np.maximum(_f64(a)[0], 0.0), a)


def gelu(a: np.ndarray) -> np.ndarray:
    """Exact GELU, ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
    (x,) = _f64(a)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return _like(0.5 * x * (1.0 + erf(x / math.sqrt(2.0))), a)


def add_mul_gelu(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``gelu((a + b) * c)``."""
    x, y, z = _f64(a, b, c)
    return _like(gelu((x + y) * z), a)


def transpose(a: np.ndarray) -> np.ndarray:
    """``a.T`` (contiguous)."""
    return np.ascontiguousarray(a.T)


# --------------------------------------------------------------------------- reduce


def reduce_sum(a: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """Sum along ``axis``."""
    return _like(_f64(a)[0].sum(axis=axis), a)


def reduce_mean(a: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """Mean along ``axis``."""
    return _like(_f64(a)[0].mean(axis=axis), a)


def reduce_max(a: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """Maximum along ``axis``."""
    return np.max(a, axis=axis)


# --------------------------------------------------------------------------- attention


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
              scale: float | None = None) -> np.ndarray:
    """``softmax(q @ k^T * scale) @ v`` over the last two axes; scale ``1/sqrt(dim)``."""
    x, y, z = _f64(q, k, v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.matmul(x, np.swapaxes(y, -1, -2)) * scale
    return _like(np.matmul(softmax(scores).astype(np.float64), z), q)
