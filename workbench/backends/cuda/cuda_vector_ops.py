"""Wide (128-bit) loads and stores for the ``cuda`` target: ``load4`` and ``store4``.

Numba has no vector types of its own, so ``a[i:i+4]`` in a kernel is four scalar loads
(``ld.global.f32``). These two ``numba.cuda.extending.intrinsic`` functions take the
address of ``arr[index]``, bitcast it to ``<4 x T>*`` (T a 4-byte element: float32,
int32, uint32) and load or store with ``align 16``, which NVVM prints as
``ld.global.v4.f32`` / ``st.global.v4.f32`` (``ld.shared.v4.f32`` for shared arrays)::

    a0, a1, a2, a3 = load4(A, (i, j))          # A[i, j], A[i, j+1], A[i, j+2], A[i, j+3]
    store4(C, (i, j), a0 * 2, a1 * 2, a2 * 2, a3 * 2)

The caller guarantees what the hardware needs: ``&arr[index]`` 16-byte aligned (the
``cuda_vector`` pass proves the innermost index a multiple of 4 and the row length a
multiple of 4 before it generates a call; device allocations are 256-byte aligned and
shared arrays that are accessed this way are declared with ``alignment=SHARED_ALIGN``).

Under Numba's CUDA simulator an intrinsic cannot run (``NotImplementedError: ... not usable
in pure-python``), so there ``load4`` / ``store4`` are plain Python functions doing the
four scalar accesses: the generated source is the same on both, and CI checks its numbers.
"""

from __future__ import annotations


def _simulator() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def _py_load4(arr, index):
    """The simulator's ``load4``: four scalar loads along the innermost dimension."""
    *outer, last = index
    return tuple(arr[(*outer, last + lane)] for lane in range(4))


def _py_store4(arr, index, v0, v1, v2, v3):
    """The simulator's ``store4``: four scalar stores along the innermost dimension."""
    *outer, last = index
    for lane, value in enumerate((v0, v1, v2, v3)):
        arr[(*outer, last + lane)] = value


def _make_intrinsics():
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.cuda.extending import intrinsic

    four_byte = (types.float32, types.int32, types.uint32)

    def _accepts(arr, index) -> bool:
        return (
            isinstance(arr, types.Array)
            and arr.dtype in four_byte
            and isinstance(index, types.BaseTuple)
            and len(index) == arr.ndim
            and all(isinstance(t, types.Integer) for t in index)
        )

    def _vector_pointer(context, builder, arrty, indexty, arr, index):
        array = context.make_array(arrty)(context, builder, arr)
        values = cgutils.unpack_tuple(builder, index, len(indexty))
        indices = [
            context.cast(builder, value, ty, types.intp)
            for value, ty in zip(values, indexty, strict=True)
        ]
        pointer = cgutils.get_item_pointer(
            context, builder, arrty, array, indices, wraparound=False
        )
        element = context.get_data_type(arrty.dtype)
        vector = ir.VectorType(element, 4)
        return builder.bitcast(pointer, vector.as_pointer(pointer.type.addrspace)), vector

    @intrinsic
    def load4(typingctx, arr, index):
        if not _accepts(arr, index):
            return None
        sig = types.UniTuple(arr.dtype, 4)(arr, index)

        def codegen(context, builder, signature, args):
            arrty, indexty = signature.args
            pointer, _ = _vector_pointer(context, builder, arrty, indexty, *args)
            vector = builder.load(pointer, align=16)
            lanes = [
                builder.extract_element(vector, ir.Constant(ir.IntType(32), n)) for n in range(4)
            ]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    @intrinsic
    def store4(typingctx, arr, index, v0, v1, v2, v3):
        if not _accepts(arr, index):
            return None
        sig = types.void(arr, index, v0, v1, v2, v3)

        def codegen(context, builder, signature, args):
            arrty, indexty, *value_types = signature.args
            arr_value, index_value, *values = args
            pointer, vector_type = _vector_pointer(
                context, builder, arrty, indexty, arr_value, index_value
            )
            vector = ir.Constant(vector_type, ir.Undefined)
            for n, (value, ty) in enumerate(zip(values, value_types, strict=True)):
                lane = context.cast(builder, value, ty, arrty.dtype)
                vector = builder.insert_element(vector, lane, ir.Constant(ir.IntType(32), n))
            builder.store(vector, pointer, align=16)
            return context.get_dummy_value()

        return sig, codegen

    return load4, store4


def launch_bounds(threads: int, min_blocks: int = 0) -> dict:
    """``cuda.jit`` options of a kernel launched with ``threads`` per block: Numba's
    ``launch_bounds`` (PTX ``.maxntid``), so the compiler keeps the registers per thread
    within what a block of that size may use (65536 / threads: 64 at 1024 threads) and
    the launch cannot fail with "too many resources requested"; with ``min_blocks`` also
    ``.minnctapersm`` (registers within what that many blocks may share); nothing under
    the simulator, whose ``jit`` takes no such option. The printer asks for it above
    ``numba_cuda_printer.FULL_REGISTER_THREADS`` threads or where a loop of the kernel
    carries ``numba_cuda_printer.MIN_BLOCKS_ANNOTATION``."""
    if _simulator():
        return {}
    return {"launch_bounds": (int(threads), int(min_blocks)) if min_blocks else int(threads)}


if _simulator():
    load4, store4 = _py_load4, _py_store4
    SHARED_ALIGN = None  # the simulator refuses an alignment (and needs none)
else:
    load4, store4 = _make_intrinsics()
    SHARED_ALIGN = 16
