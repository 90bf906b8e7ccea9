"""The elementwise larger or smaller of two tensors as the graph computes it, for both
frontends (ATen ``maximum`` / ``minimum`` / ``fmax`` / ``fmin`` / ``max(a, b)``, ONNX
``Max`` / ``Min``): ``where(a >= b, a, b)``, no new graph operator (the nodes fuse into one
kernel).

For floats both operands' NaN tests decide a NaN, never the pick's comparison: a NaN test of
a broadcast operand may be a kernel of its own, and the pick's kernel is then built with
fast-math, whose comparisons assume no NaN.
"""

from __future__ import annotations


def pick(emit, kind: str, a: str, b: str, floating: bool, nan: str = "propagate") -> str:
    """The larger (``kind`` "max") or smaller of ``a`` and ``b`` (values of one dtype) by
    ``emit(op, inputs)``; a NaN wins (``nan="propagate"``) or loses (``"ignore"``: the other
    operand; both NaN: ``a``, a NaN)."""
    y = emit("where", [a, b, emit("ge" if kind == "max" else "le", [a, b])])
    if not floating:
        return y
    a_nan, b_nan = emit("ne", [a, a]), emit("ne", [b, b])
    if nan == "propagate":
        return emit("where", [a, emit("where", [b, y, b_nan]), a_nan])
    return emit("where", [a, emit("where", [b, y, a_nan]), b_nan])
