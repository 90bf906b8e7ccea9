"""Helpers the generated kernels call (imported there as ``rt``).

``fast_exp_f32`` is a float32 ``exp`` that LLVM can vectorize: Numba's ``np.exp`` on a
scalar calls libm's ``expf`` one element at a time, which keeps a whole loop scalar.

Algorithm (Cephes ``expf``): range reduction ``x = n * ln 2 + r`` with ``|r| <= ln2 / 2``
(``ln 2`` split in a high and a low part so ``r`` is exact), a degree-6 polynomial for
``exp(r)``, and the scale ``2**n`` built directly from its IEEE-754 bits. Accuracy: within
a few ulp (relative error < 1e-6) of ``np.exp`` for ``-87 <= x <= 88.7``. Outside that
range it returns 0 (below: the true value is a denormal smaller than 1.2e-38) or ``inf``
(above). NaN inputs give an unspecified result (kernels compile with ``fastmath``).

Example
-------
>>> import numpy as np
>>> x = np.float32(1.5)
>>> bool(abs(fast_exp_f32(x) - np.exp(x)) / np.exp(x) < 1e-6)
True
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.extending import intrinsic

_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_LOW = np.float32(-87.0)
_HIGH = np.float32(88.7)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_P0 = np.float32(1.9875691500e-4)
_P1 = np.float32(1.3981999507e-3)
_P2 = np.float32(8.3334519073e-3)
_P3 = np.float32(4.1665795894e-2)
_P4 = np.float32(1.6666665459e-1)
_P5 = np.float32(5.0000001201e-1)
_MAX_EXPONENT = np.float32(127.0)
_ZERO = np.float32(0.0)
_INF = np.float32(np.inf)


@intrinsic
def _int_bits_as_float32(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32 (an LLVM ``bitcast``)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = args[0]
        if value.type.width != 32:
            value = builder.trunc(value, llvm_ir.IntType(32))
        return builder.bitcast(value, llvm_ir.FloatType())

    return types.float32(bits), codegen


@numba.njit(inline="always", fastmath=True, cache=True)
def fast_exp_f32(x):
    """float32 ``exp(x)``, vectorizable (see the module docstring for accuracy)."""
    clamped = min(max(x, _LOW), _HIGH)
    n = min(np.floor(clamped * _LOG2E + _HALF), _MAX_EXPONENT)
    r = clamped - n * _LN2_HI - n * _LN2_LO
    r2 = r * r
    poly = (((((_P0 * r + _P1) * r + _P2) * r + _P3) * r + _P4) * r + _P5) * r2 + r + _ONE
    # 2**n from its float bits (n <= 127 keeps it finite; r then reaches 0.68 at the top)
    scale = _int_bits_as_float32((np.int32(n) + np.int32(127)) << np.int32(23))
    result = poly * scale
    if x < _LOW:
        return _ZERO
    if x > _HIGH:
        return _INF
    return result


@numba.njit(inline="always", cache=True)
def truncdiv(a, b):
    """Integer division rounding toward zero (the IR's ``Div`` on integers, as in C)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
