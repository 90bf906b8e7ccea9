"""Whether a lowered function may compute its index arithmetic in ``uint64``.

Numba checks every signed array index for a negative value (Python's ``a[-1]``), and that
check keeps LLVM from vectorizing the loop; with unsigned indices there is no such check
(measured: a tiled matmul went from 9 to 52 GFLOP/s). The cpu code generator then runs
loops over ``range(u64(n))`` and spells every index constant ``u64(c)``, since mixing
``uint64`` with a signed integer makes Numba compute in float64.

Unsigned arithmetic is modular, so ``+``, ``-`` and ``*`` give the right index as long as
the final value is non-negative, even through a negative intermediate (``(i - 1) + 1``).
What would go wrong on a negative value is an order-sensitive operation: a comparison,
``//``, ``%``, ``min``/``max``. So unsigned mode is chosen when

* every integer operand of those operations is provably non-negative over the loop ranges
  (``workbench.ir.arith.int_bounds``);
* no index holds a negative constant (``u64(-1)`` does not exist);
* no integer *data* mixes in (a gather index loaded from a buffer, a cast to an integer
  type): those are signed and would turn the arithmetic into float64.
"""

from __future__ import annotations

from workbench.backends.common.expr_printer import is_index_expr
from workbench.ir import (
    BufferLoad,
    Call,
    Cast,
    CompareOp,
    Div,
    FloorDiv,
    FloorMod,
    For,
    IntImm,
    Max,
    Min,
    PrimFunc,
    is_int,
)
from workbench.ir.arith import int_bounds
from workbench.ir.functor import collect

_ORDER_SENSITIVE = (CompareOp, Div, FloorDiv, FloorMod, Min, Max)


def use_unsigned_indices(func: PrimFunc) -> bool:
    """Whether lowered ``func`` can use ``uint64`` index arithmetic (see the module docstring)."""
    body = func.root_block.body
    if collect(body, _is_int_data):
        return False
    if collect(body, lambda n: isinstance(n, IntImm) and is_int(n.dtype) and n.value < 0):
        return False
    if collect(body, lambda n: isinstance(n, Call) and n.op == "bounds_check"):
        return False  # a debug build: checked indices stay signed, so -1 reads as -1
    ranges = _loop_ranges(body)
    for node in collect(body, lambda n: isinstance(n, _ORDER_SENSITIVE)):
        for operand in (node.a, node.b):
            if not is_index_expr(operand):
                continue
            low = int_bounds(operand, ranges)[0]
            if low is None or low < 0:
                return False
    return True


def _is_int_data(node) -> bool:
    return isinstance(node, (BufferLoad, Cast)) and is_int(node.dtype) and node.dtype != "bool"


def _loop_ranges(body) -> dict:
    ranges = {}
    for loop in collect(body, lambda n: isinstance(n, For)):
        if isinstance(loop.min, IntImm) and isinstance(loop.extent, IntImm):
            ranges[loop.loop_var] = (loop.min.value, loop.min.value + loop.extent.value - 1)
    return ranges
