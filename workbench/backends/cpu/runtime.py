"""Helpers the generated kernels call (imported there as ``rt``).

``stack_allocator(shape, dtype)`` makes the allocation function of a small ``local``
buffer whose memory is on the stack (see its docstring).

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

import functools
import math

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

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

FASTMATH_FLAGS = {"afn", "arcp", "contract", "nnan", "nsz", "reassoc"}  # numba wants a set
"""LLVM fast-math flags of ``fastmath=True`` kernels: every flag but ``ninf``.

Kernels use infinities on purpose (a running max starts at ``-inf``, ``exp`` of a large
negative number is 0). With ``ninf`` LLVM may assume no value is infinite, and a softmax
whose max starts at ``-inf`` crashed inside ``fast_exp_f32`` (a float-to-int conversion of
an infinity is poison). ``reassoc`` is what lets reductions vectorize.
"""


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


@numba.njit(inline="always", fastmath=FASTMATH_FLAGS, cache=True)
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


STACK_ALIGNMENT = 64
"""Byte alignment of stack buffers: one cache line, the width of an AVX-512 register."""


@functools.cache
def stack_allocator(shape: tuple[int, ...], dtype: str):
    """An intrinsic returning a C-contiguous ``shape`` array of ``dtype`` on the stack.

    A kernel calls it where a ``np.empty`` of a ``local`` buffer would be::

        C_local_stack = rt.stack_allocator((4, 64), "float32")   # module level

        @numba.njit(...)
        def matmul(A, B, C):
            ...
            C_local = C_local_stack()    # no heap allocation, no reference count

    Why: LLVM keeps an accumulator tile in registers only when it can prove that no other
    pointer reaches it. Memory from ``np.empty`` comes out of Numba's allocator through a
    pointer loaded from a struct, so LLVM must assume the tile may alias ``A`` or ``B`` and
    it either versions the loop on run-time overlap checks or loads and stores the tile on
    every iteration (which it does depends on loop sizes: a 4x64 tile with ``k`` split by
    256 ran scalar at ~40 GFLOP/s). A stack slot (an ``alloca`` in the function's entry
    block) aliases nothing, and LLVM's SROA turns its constant-index parts into registers.

    The memory lives as long as the function (or, inside a ``prange`` body, as long as the
    thread's call of the parallel body), and is reused by every iteration of the loop
    that allocates it, like the registers it stands for. Its contents start undefined (as
    ``np.empty``'s). Never return such an array from a kernel (generated kernels do not).
    The allocation function is cached per ``(shape, dtype)``.

    Example
    -------
    >>> import numba
    >>> tile4 = stack_allocator((4,), "float32")
    >>> @numba.njit
    ... def total(x):
    ...     t = tile4()
    ...     for j in range(4):
    ...         t[j] = x * j
    ...     return t.sum()
    >>> float(total(2.0))
    12.0
    """
    dims = tuple(int(n) for n in shape)
    if not dims or any(n <= 0 for n in dims):
        raise ValueError(f"stack_allocator: shape must be positive integers, got {shape!r}")
    element = numba.from_dtype(np.dtype(dtype))
    array_type = types.Array(element, len(dims), "C")
    count = math.prod(dims)

    def codegen(context, builder, signature, args):
        llvm_element = context.get_data_type(element)
        storage = cgutils.alloca_once(
            builder, llvm_ir.ArrayType(llvm_element, count), name="stack_tile"
        )
        storage.align = STACK_ALIGNMENT
        itemsize = context.get_abi_sizeof(llvm_element)
        strides, step = [], itemsize
        for n in reversed(dims):
            strides.insert(0, step)
            step *= n
        intp = context.get_value_type(types.intp)
        array = make_array(array_type)(context, builder)
        populate_array(
            array,
            data=builder.bitcast(storage, llvm_element.as_pointer()),
            shape=[llvm_ir.Constant(intp, n) for n in dims],
            strides=[llvm_ir.Constant(intp, s) for s in strides],
            itemsize=llvm_ir.Constant(intp, itemsize),
            meminfo=None,  # not reference counted: nothing to free
        )
        return array._getvalue()

    def allocate(typingctx):
        return array_type(), codegen

    allocate.__name__ = f"stack_{'x'.join(map(str, dims))}_{np.dtype(dtype).name}"
    return intrinsic(allocate)


@numba.njit(cache=True)
def checked_index(index, extent, check_id, values):
    """``index`` if ``0 <= index < extent``, else ``IndexError(check_id, index, values)``.

    The debug build (``workbench.backends.common.bounds_checks``) wraps every index it cannot
    prove in bounds in this call; ``Kernel`` turns the error into a ``KernelBoundsError``.
    """
    if index < 0 or index >= extent:
        raise IndexError(check_id, index, values)
    return index


from workbench.backends.cpu.fast_math import fast_erf_f32, fast_tanh_f32  # noqa: E402, F401
