"""Pooling windows as PyTorch and ONNX define them, beyond the graph's ``avg_pool2d`` /
``max_pool2d`` (symmetric padding, floor division, every average divided by the kernel's
area): ``ceil_mode`` (a last window that starts inside the input or its left padding but
hangs past its end) and an average's divisor (``count_include_pad=False``: the window's
input elements only; ``divisor_override``).

``pool_plan`` turns them into what the graph has: extra zero (``-inf`` for a max) padding
after each spatial axis, then the graph's pool with the symmetric padding, then, for an
average, a multiplication by a constant ``area / divisor`` per output position (None where
every divisor is the area). PyTorch's rule (``aten/src/ATen/native/cpu/AvgPoolKernel.cpp``):
a window's divisor counts the positions inside the padded input (``count_include_pad``) or
inside the input; ceil mode drops a last window that would start past the input and the
left padding.
"""

from __future__ import annotations

import math

import numpy as np


def output_size(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool) -> int:
    """The pooled extent of one axis (PyTorch's ``pooling_output_shape``, dilation 1)."""
    span = size + 2 * pad - kernel
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def ceil_mode_pads(sizes, kernel, stride, padding) -> tuple[int, ...]:
    """The padding past the end of each spatial axis that makes a floor-mode pooling give
    ``ceil_mode``'s output size (PyTorch's and ONNX's rule, ``output_size``: one more window
    per axis when the rows left over are not empty, unless that window would start in the
    end padding). The one home of the ceil overhang: ``pool_plan`` (average pools) and the
    frontends' max pools read it.

    >>> ceil_mode_pads((13, 13), (3, 3), (2, 2), (0, 0))
    (0, 0)
    >>> ceil_mode_pads((14, 7), (3, 3), (2, 2), (0, 0))
    (1, 0)
    """
    return tuple(max(0, (output_size(n, k, s, p, True) - 1) * s + k - (n + 2 * p))
                 for n, k, s, p in zip(sizes, kernel, stride, padding, strict=True))


def pool_plan(sizes, kernel, stride, padding, ceil_mode=False, count_include_pad=True,
              divisor_override=None, average=True):
    """``(extra, scale)``: the padding to add after each spatial axis of ``sizes`` and the
    ``float64`` array (output's spatial shape) that turns the graph's ``sum / area`` into
    the average PyTorch computes, or None (a max pool, or every divisor the area).

    >>> pool_plan((5, 5), (2, 2), (2, 2), (0, 0), ceil_mode=True)[0]
    [1, 1]
    >>> pool_plan((4,), (3,), (1,), (1,), count_include_pad=False)[1]
    array([1.5, 1. , 1. , 1.5])
    """
    outs = [output_size(n, k, s, p, ceil_mode)
            for n, k, s, p in zip(sizes, kernel, stride, padding, strict=True)]
    extra = list(ceil_mode_pads(sizes, kernel, stride, padding)) if ceil_mode \
        else [0] * len(outs)
    if not average:
        return extra, None
    per_axis = []
    for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs, strict=True):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if count_include_pad:
            per_axis.append(end - start)
        else:
            per_axis.append(np.minimum(end, n) - np.maximum(start, 0))
    divisor = per_axis[0].astype(np.float64)
    for counts in per_axis[1:]:
        divisor = np.multiply.outer(divisor, counts)
    if divisor_override:
        divisor = np.full(divisor.shape, float(divisor_override))
    area = float(math.prod(kernel))
    if np.all(divisor == area):
        return extra, None
    return extra, area / divisor


__all__ = ["ceil_mode_pads", "output_size", "pool_plan"]
