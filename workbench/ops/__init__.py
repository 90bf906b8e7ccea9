"""The operator library, written in the DSL.

Each operator is a factory: call it with shapes (and options such as ``stride``) and a
dtype to get a ``PrimFunc``. ``workbench.ops.reference`` holds a numpy reference for each,
and ``LIBRARY`` lists every operator with small default shapes, for tests and tours.

Example
-------
>>> import numpy as np
>>> from workbench import ops
>>> f = ops.matmul(8, 4, 2)
>>> f.params[0].shape, f.params[-1].shape
((8, 2), (8, 4))
>>> spec = ops.get("softmax")
>>> inputs = spec.random_inputs(np.random.default_rng(0))
>>> out = spec.run_reference(*inputs)
>>> np.allclose(out.sum(axis=-1), 1.0)
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from workbench.ir.function import PrimFunc
from workbench.ops import reference
from workbench.ops.attention import attention
from workbench.ops.conv import conv2d_nchw, conv2d_nhwc, conv_output_size, depthwise_conv2d_nchw
from workbench.ops.elementwise import add, add_mul_gelu, gelu, multiply, relu, transpose
from workbench.ops.gather import gather, take
from workbench.ops.linalg import batch_matmul, matmul, matmul_bias_relu
from workbench.ops.nn import layernorm, rmsnorm, softmax
from workbench.ops.pool import avg_pool2d, max_pool2d
from workbench.ops.reduce import reduce_max, reduce_mean, reduce_sum


@dataclass(frozen=True)
class OpSpec:
    """One operator of the library.

    Attributes
    ----------
    name:
        The operator's name (also its factory's name).
    factory:
        ``factory(**shapes) -> PrimFunc``.
    shapes:
        Small default keyword arguments for the factory (shapes and options).
    reference:
        The numpy reference: ``reference(*inputs, **options) -> output``.
    options:
        The names in ``shapes`` that the reference also needs (``stride``, ``axis``...).
    """

    name: str
    factory: Callable[..., PrimFunc]
    shapes: dict = field(default_factory=dict)
    reference: Callable[..., np.ndarray] | None = None
    options: tuple[str, ...] = ()

    def func(self, **overrides) -> PrimFunc:
        """The PrimFunc for the default shapes (with ``overrides`` applied)."""
        return self.factory(**{**self.shapes, **overrides})

    def random_inputs(self, rng: np.random.Generator, func: PrimFunc | None = None,
                      ) -> list[np.ndarray]:
        """Random inputs in ``[-1, 1)`` for every parameter but the last (the output)."""
        func = self.func() if func is None else func
        return [rng.uniform(-1.0, 1.0, size=buf.shape).astype(buf.dtype)
                for buf in func.params[:-1]]

    def run_reference(self, *inputs: np.ndarray) -> np.ndarray:
        """The reference output for ``inputs`` under this spec's options."""
        options = {name: self.shapes[name] for name in self.options if name in self.shapes}
        return self.reference(*inputs, **options)


_CONV = {"stride": 2, "padding": 1, "dilation": 1}
_CONV_OPTIONS = ("stride", "padding", "dilation")
_POOL_OPTIONS = ("kernel", "stride", "padding")

LIBRARY: tuple[OpSpec, ...] = (
    OpSpec("matmul", matmul, {"M": 16, "N": 12, "K": 8}, reference.matmul),
    OpSpec("batch_matmul", batch_matmul, {"batch": 2, "M": 8, "N": 6, "K": 4},
           reference.batch_matmul),
    OpSpec("matmul_bias_relu", matmul_bias_relu, {"M": 8, "N": 12, "K": 6},
           reference.matmul_bias_relu),
    OpSpec("conv2d_nchw", conv2d_nchw,
           {"N": 1, "C": 3, "H": 7, "W": 7, "K": 4, "R": 3, "S": 3, **_CONV},
           reference.conv2d_nchw, _CONV_OPTIONS),
    OpSpec("conv2d_nhwc", conv2d_nhwc,
           {"N": 1, "H": 6, "W": 6, "C": 3, "K": 4, "R": 3, "S": 3, "stride": 1, "padding": 2,
            "dilation": 2},
           reference.conv2d_nhwc, _CONV_OPTIONS),
    OpSpec("depthwise_conv2d_nchw", depthwise_conv2d_nchw,
           {"N": 1, "C": 4, "H": 6, "W": 6, "R": 3, "S": 3, "stride": 1, "padding": 1,
            "dilation": 1},
           reference.depthwise_conv2d_nchw, _CONV_OPTIONS),
    OpSpec("max_pool2d", max_pool2d,
           {"N": 1, "C": 3, "H": 7, "W": 7, "kernel": 3, "stride": 2, "padding": 1},
           reference.max_pool2d, _POOL_OPTIONS),
    OpSpec("avg_pool2d", avg_pool2d,
           {"N": 1, "C": 3, "H": 8, "W": 8, "kernel": 2, "stride": 2, "padding": 0},
           reference.avg_pool2d, _POOL_OPTIONS),
    OpSpec("softmax", softmax, {"M": 6, "N": 10}, reference.softmax),
    OpSpec("layernorm", layernorm, {"M": 6, "N": 10, "eps": 1e-5}, reference.layernorm,
           ("eps",)),
    OpSpec("rmsnorm", rmsnorm, {"M": 6, "N": 10, "eps": 1e-6}, reference.rmsnorm, ("eps",)),
    OpSpec("add", add, {"M": 6, "N": 10}, reference.add),
    OpSpec("multiply", multiply, {"M": 6, "N": 10}, reference.multiply),
    OpSpec("relu", relu, {"M": 6, "N": 10}, reference.relu),
    OpSpec("gelu", gelu, {"M": 6, "N": 10}, reference.gelu),
    OpSpec("add_mul_gelu", add_mul_gelu, {"M": 6, "N": 10}, reference.add_mul_gelu),
    OpSpec("transpose", transpose, {"M": 6, "N": 10}, reference.transpose),
    OpSpec("reduce_sum", reduce_sum, {"M": 6, "N": 10, "axis": 1}, reference.reduce_sum,
           ("axis",)),
    OpSpec("reduce_mean", reduce_mean, {"M": 6, "N": 10, "axis": 0}, reference.reduce_mean,
           ("axis",)),
    OpSpec("reduce_max", reduce_max, {"M": 6, "N": 10, "axis": 1}, reference.reduce_max,
           ("axis",)),
    OpSpec("attention", attention, {"batch": 1, "heads": 2, "seq": 6, "dim": 4},
           reference.attention),
)
"""Every operator, with small default shapes (each func runs in milliseconds on the numpy
target) and its reference."""


def get(name: str) -> OpSpec:
    """The ``LIBRARY`` entry called ``name``.

    Example
    -------
    >>> get("matmul").shapes
    {'M': 16, 'N': 12, 'K': 8}
    """
    for spec in LIBRARY:
        if spec.name == name:
            return spec
    names = ", ".join(spec.name for spec in LIBRARY)
    raise KeyError(f"no operator named {name!r} in the library (it has: {names})")


__all__ = [
    "LIBRARY", "OpSpec", "get", "reference", "conv_output_size",
    "matmul", "batch_matmul", "matmul_bias_relu",
    "conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d_nchw",
    "max_pool2d", "avg_pool2d",
    "softmax", "layernorm", "rmsnorm",
    "add", "multiply", "relu", "gelu", "add_mul_gelu", "transpose",
    "reduce_sum", "reduce_mean", "reduce_max",
    "attention", "take", "gather",
]
