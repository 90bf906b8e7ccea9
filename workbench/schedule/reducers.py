"""Commutative reducers recognised from the IR, for ``rfactor``.

A reduction block's update must be ``C[s] = op(C[s], x)`` (or ``op(x, C[s])``) with ``op``
one of ``+``, ``*``, ``max``, ``min`` and ``x`` not reading ``C``; its init must store the
operator's identity (0, 1, the lowest value, the highest value). These are the reducers
TVM registers by default. Subtraction and division are not associative, and an update
such as ``C = C * 2 + x`` is not of the form ``op(C, x)``. ``check_reduction`` applies
these rules to a block and raises the reduction family's errors.

Example
-------
>>> reducer, rhs = match_update(block.body)      # C[vi] = C[vi] + A[vi, vk]
>>> reducer.name, expr_text(rhs)
('sum', 'A[vi, vk]')
>>> is_identity(reducer, FloatImm(0.0), "float32")
True
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from workbench.ir import (
    Add,
    Block,
    BufferLoad,
    BufferStore,
    Cast,
    IterKind,
    Max,
    Min,
    Mul,
    PrimExpr,
    PrimFunc,
    collect,
    const_value,
    is_float,
)
from workbench.schedule.errors_reduction import (
    InitNotIdentityError,
    MissingInitError,
    MultipleStoresError,
    NonAssociativeUpdateError,
    NotReductionBlockError,
)
from workbench.schedule.tree import describe_stmt, uses_var


@dataclasses.dataclass(frozen=True)
class Reducer:
    """An associative, commutative operator with an identity.

    Attributes
    ----------
    name : str
        ``"sum"``, ``"product"``, ``"max"``, ``"min"``.
    op : type
        The IR node class combining two values (``Add``...).
    symbol : str
        The operator as written (``"+"``, ``"max"``).
    form : str
        How the update reads, for messages (``"C = C + x"``).
    """

    name: str
    op: type
    symbol: str
    form: str

    def combine(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """``op(a, b)`` as IR."""
        return self.op(a, b)

    def identities(self, dtype: str) -> list[float]:
        """Values accepted as the identity for ``dtype`` (max/min accept the infinities and
        the dtype's extreme finite values)."""
        if self.name == "sum":
            return [0]
        if self.name == "product":
            return [1]
        if is_float(dtype):
            info = np.finfo(dtype)
            low, high = [-math.inf, float(info.min)], [math.inf, float(info.max)]
        else:
            info = np.iinfo(dtype)
            low, high = [int(info.min)], [int(info.max)]
        return low if self.name == "max" else high

    def identity_text(self, dtype: str) -> str:
        """The identity as a user would write it."""
        if self.name in ("sum", "product"):
            return str(self.identities(dtype)[0])
        if is_float(dtype):
            return f'T.{dtype}("-inf")' if self.name == "max" else f'T.{dtype}("inf")'
        return str(self.identities(dtype)[0])


REDUCERS = (
    Reducer("sum", Add, "+", "C = C + x"),
    Reducer("product", Mul, "*", "C = C * x"),
    Reducer("max", Max, "max", "C = T.max(C, x)"),
    Reducer("min", Min, "min", "C = T.min(C, x)"),
)
_BY_OP = {reducer.op: reducer for reducer in REDUCERS}


class UpdateMismatch(Exception):
    """The update is not ``C = op(C, x)``; ``args[0]`` says what it is instead."""


def _reads(expr: PrimExpr, store: BufferStore) -> bool:
    return bool(collect(expr, lambda n: isinstance(n, BufferLoad) and n.buffer == store.buffer))


def match_update(store: BufferStore) -> tuple[Reducer, PrimExpr]:
    """``(reducer, x)`` for an update ``C[s] = op(C[s], x)``; else ``UpdateMismatch`` with
    the reason.

    Example
    -------
    >>> match_update(store)          # T_max[vi] = T.max(T_max[vi], A[vi, vk])
    (Reducer(name='max', ...), BufferLoad(A, (vi, vk)))
    """
    value = store.value
    own = BufferLoad(store.buffer, store.indices)
    reducer = _BY_OP.get(type(value))
    if reducer is None:
        if not _reads(value, store):
            raise UpdateMismatch(f"the update does not read {store.buffer.name}")
        op = getattr(type(value), "symbol", type(value).__name__)
        raise UpdateMismatch(f"the outermost operation is {op!r}, not one of +, *, max, min")
    if value.a == own and not _reads(value.b, store):
        return reducer, value.b
    if value.b == own and not _reads(value.a, store):
        return reducer, value.a
    if value.a != own and value.b != own:
        raise UpdateMismatch(
            f"neither operand of the outermost {reducer.symbol} is "
            f"{store.buffer.name} at the stored element itself"
        )
    raise UpdateMismatch(f"the other operand also reads {store.buffer.name}")


def constant_of(expr: PrimExpr) -> float | int | None:
    """The Python value of a constant (looking through casts), else None."""
    while isinstance(expr, Cast):
        expr = expr.value
    return const_value(expr)


def is_identity(reducer: Reducer, value: PrimExpr, dtype: str) -> bool:
    """Whether ``value`` is a constant equal to ``reducer``'s identity for ``dtype``."""
    constant = constant_of(value)
    if constant is None:
        return False
    return any(constant == identity for identity in reducer.identities(dtype))


def check_reduction(
    func: PrimFunc, primitive: str, block: Block
) -> tuple[BufferStore, Reducer, PrimExpr, BufferStore]:
    """``(update, reducer, x, init)`` of a reduction block ``C = op(C, x)`` with an identity
    init; else ``MissingInitError``, ``MultipleStoresError``, ``NotReductionBlockError``,
    ``NonAssociativeUpdateError`` or ``InitNotIdentityError``."""
    if block.init is None:
        raise MissingInitError(primitive, block.name, func, block)
    for part, stmt in (("body", block.body), ("init", block.init)):
        if not isinstance(stmt, BufferStore):
            found = f"{part} is {describe_stmt(stmt)}"
            raise MultipleStoresError(primitive, block.name, found, func, block)
    update, init = block.body, block.init
    reduce_names = [iv.var.name for iv in block.iter_vars if iv.kind is IterKind.REDUCE]
    for var in reduce_names:
        if any(uses_var(index, var) for index in update.indices):
            why = f"the element it writes depends on the reduce variable {var}"
            raise NotReductionBlockError(primitive, block.name, why, func, block)
    try:
        reducer, rhs = match_update(update)
    except UpdateMismatch as mismatch:
        from workbench.ir.expr_text import expr_text, index_text

        found = f"{update.buffer.name}[{index_text(update.indices)}] = {expr_text(update.value)}"
        raise NonAssociativeUpdateError(
            primitive, block.name, found, str(mismatch), func, block
        ) from None
    dtype = update.buffer.dtype
    if init.buffer != update.buffer or init.indices != update.indices:
        found = f"a store to {init.buffer.name}, not to the element the update writes"
        raise InitNotIdentityError(
            primitive, block.name, reducer.name, found, reducer.identity_text(dtype), func, block
        )
    if not is_identity(reducer, init.value, dtype):
        from workbench.ir.expr_text import expr_text

        raise InitNotIdentityError(
            primitive,
            block.name,
            reducer.name,
            expr_text(init.value),
            reducer.identity_text(dtype),
            func,
            block,
        )
    return update, reducer, rhs, init
