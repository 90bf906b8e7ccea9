"""Vectorizable float32 ``tanh`` and ``erf`` for the generated kernels (``rt.fast_tanh_f32``,
``rt.fast_erf_f32``).

Numba turns ``np.tanh`` and ``math.erf`` on a scalar into one libm call per element, which
keeps the whole loop scalar: the tanh GELU epilogue of a GPT-2 MLP ran at ~35 ns per element.
These forms are arithmetic, selects and the vectorizable ``fast_exp_f32``, so LLVM
vectorizes the loop that calls them (both branches are computed, the result selected).

``fast_tanh_f32`` (Cephes ``tanhf``): for ``|x| < 0.625`` the odd polynomial
``x + x^3 P(x^2)`` (degree 4 in ``x^2``); above, ``sign(x) (1 - 2 / (exp(2|x|) + 1))`` with
``2|x|`` clamped at 40 (``tanh`` is 1 in float32 long before). Relative error below 1e-6
against the float64 ``tanh`` over the whole float32 range; ``tanh(+-inf) = +-1``.

``fast_erf_f32``: ``x P(x^2) / Q(x^2)`` on ``x`` clamped to ``[-4, 4]`` (``erf`` is 1 in
float32 beyond), ``P`` of degree 6 and ``Q`` of degree 4 in ``x^2`` (the rational form of
XLA's and Eigen's float32 ``erf``). Relative error below 1e-6 against the float64 ``erf``
everywhere (3.3e-7 at worst, near ``|x| = 3.9``); ``erf(+-inf) = +-1``. One division and 12
coefficients: a polynomial-plus-exponential form (Cephes ``erff`` below 1, A&S 7.1.26 above,
used before) needed ~35 live constants, and inlined as a matmul's GELU epilogue they pushed
the register tile's accumulators onto the stack (BERT's ``matmul+gelu`` ran at half speed).

NaN in gives NaN out in both, tested by the bits of the value (a float ``x != x`` test is
folded away under the kernels' ``nnan`` fast-math flag).

Example
-------
>>> import numpy as np
>>> bool(abs(fast_tanh_f32(np.float32(0.3)) - np.tanh(0.3)) < 1e-7)
True
>>> bool(abs(fast_erf_f32(np.float32(-2.0)) + 0.9953222650189527) < 1e-6)
True
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.extending import intrinsic

from workbench.backends.cpu.runtime import FASTMATH_FLAGS, fast_exp_f32

_F = np.float32
_ZERO, _ONE, _TWO = _F(0.0), _F(1.0), _F(2.0)
_TANH_SMALL = _F(0.625)
_TANH_CLAMP = _F(40.0)
_T0, _T1, _T2, _T3, _T4 = (_F(c) for c in (-5.70498872745e-3, 2.06390887954e-2,
                                              -5.37397155531e-2, 1.33314422036e-1,
                                              -3.33332819422e-1))
_ERF_CLAMP = _F(4.0)
_ERF_TINY, _TWO_OVER_SQRT_PI = _F(1e-4), _F(2.0 / np.sqrt(np.pi))
_EP1, _EP3, _EP5, _EP7, _EP9, _EP11, _EP13 = (_F(c) for c in (
    -1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04,
    -5.69250639462346e-05, -2.10102402082508e-06, 2.77068142495902e-08,
    -2.72614225801306e-10))
_EQ0, _EQ2, _EQ4, _EQ6, _EQ8 = (_F(c) for c in (
    -1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03,
    -2.13374055278905e-04, -1.45660718464996e-05))
_ABS_MASK = np.int32(0x7FFFFFFF)
_INF_BITS = np.int32(0x7F800000)


@intrinsic
def _float32_bits(typingctx, value):
    """The IEEE-754 bits of a float32 as an int32 (an LLVM ``bitcast``)."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(32))

    return types.int32(value), codegen


@numba.njit(inline="always", cache=True)
def is_nan_f32(x):
    """``x`` is a NaN, from its bits (survives ``nnan`` fast-math)."""
    return (_float32_bits(x) & _ABS_MASK) > _INF_BITS


@numba.njit(inline="always", fastmath=FASTMATH_FLAGS, cache=True)
def fast_tanh_f32(x):
    """float32 ``tanh(x)``, vectorizable (see the module docstring for accuracy)."""
    x = np.float32(x)
    z = abs(x)
    s = x * x
    small = ((((_T0 * s + _T1) * s + _T2) * s + _T3) * s + _T4) * s * x + x
    e = fast_exp_f32(min(z + z, _TANH_CLAMP))
    big = _ONE - _TWO / (e + _ONE)
    big = big if x >= _ZERO else -big
    result = small if z < _TANH_SMALL else big
    return x if is_nan_f32(x) else result


@numba.njit(inline="always", fastmath=FASTMATH_FLAGS, cache=True)
def fast_erf_f32(x):
    """float32 ``erf(x)``, vectorizable (see the module docstring for accuracy)."""
    x = np.float32(x)
    c = min(max(x, -_ERF_CLAMP), _ERF_CLAMP)
    s = c * c
    p = (((((_EP13 * s + _EP11) * s + _EP9) * s + _EP7) * s + _EP5) * s + _EP3) * s + _EP1
    q = (((_EQ8 * s + _EQ6) * s + _EQ4) * s + _EQ2) * s + _EQ0
    # below 1e-4 erf(x) = 2x/sqrt(pi) to 4e-9: a subnormal x * p (the fast-math flags let
    # LLVM reorder c * (p / q) into (c * p) / q) would lose its low bits
    result = x * _TWO_OVER_SQRT_PI if abs(x) < _ERF_TINY else c * (p / q)
    result = min(max(result, -_ONE), _ONE)  # 1 + 1 ulp at the clamp, never past
    return x if is_nan_f32(x) else result
