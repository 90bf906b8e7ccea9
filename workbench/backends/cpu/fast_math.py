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

``fast_erf_f32``: for ``|x| < 1`` Cephes ``erff``'s odd polynomial ``x T(x^2)`` (degree 6
in ``x^2``, relative error ~1e-9 in exact arithmetic); above, Abramowitz & Stegun 7.1.26
(``1 - t P(t) exp(-x^2)``, ``t = 1 / (1 + p|x|)``, absolute error 1.5e-7, relative below
1.5e-7 for ``|x| >= 1``), odd-extended. Relative error below 1e-6 against the float64 ``erf``
everywhere (A&S alone loses relative accuracy near 0: 1e-4 at ``x = 1e-3``);
``erf(+-inf) = +-1``.

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
_E0, _E1, _E2, _E3, _E4, _E5, _E6 = (_F(c) for c in (
    7.853861353153693e-5, -8.010193625184903e-4, 5.188327685732524e-3,
    -2.685381193529856e-2, 1.128358514861418e-1, -3.761262582423300e-1,
    1.128379165726710e0))
_AS_P = _F(0.3275911)
_AS1, _AS2, _AS3, _AS4, _AS5 = (_F(c) for c in (0.254829592, -0.284496736, 1.421413741,
                                                 -1.453152027, 1.061405429))
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
    z = abs(x)
    s = x * x
    small = x * ((((((_E0 * s + _E1) * s + _E2) * s + _E3) * s + _E4) * s + _E5) * s + _E6)
    t = _ONE / (_ONE + _AS_P * z)
    poly = ((((_AS5 * t + _AS4) * t + _AS3) * t + _AS2) * t + _AS1) * t
    big = _ONE - poly * fast_exp_f32(-min(s, _TANH_CLAMP * _TWO))
    big = big if x >= _ZERO else -big
    result = small if z < _ONE else big
    return x if is_nan_f32(x) else result
