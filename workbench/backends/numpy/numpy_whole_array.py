"""Whole-array evaluation of a block with numpy: the fast path of the reference executor.

A top-level statement qualifies when it is a *perfect nest*: loops down to one block whose
iteration variables are each bound directly to one of those loops, over the same range,
with a true predicate, a single ``BufferStore`` as body and at most a single store as init.
That is what the unscheduled operator library looks like. Such a block is evaluated for all
its iteration points at once, each iteration variable an ``np.arange`` along its own axis,
expressions by numpy broadcasting and loads by fancy indexing:

* a block without reduce variables stores ``value`` at every point; it may read the buffer
  it writes only at the point it writes;
* a reduction ``X[s] = X[s] + f(...)`` (or ``max``/``min``/``*``) applies the init, then
  reduces ``f`` over the reduce axes with ``np.sum`` (``np.max``, ``np.min``, ``np.prod``)
  and combines the result with ``X[s]``.

In both cases the store indices must hit every element at most once (checked before
anything is written); otherwise ``analyze`` says no and the statement runs as loops.
``np.sum`` adds pairwise, so results differ from sequential accumulation by rounding only.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from workbench.backends.common.lower import is_true
from workbench.ir import (
    Add,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    FloatImm,
    For,
    IntImm,
    IterKind,
    Max,
    Min,
    Mul,
    PrimExpr,
    Stmt,
    Var,
    is_float,
)
from workbench.ir.functor import collect
from workbench.ir.operators import OPERATORS

CHUNK_ELEMENTS = 1 << 24
"""Most iteration points evaluated at once (bounds the temporary arrays' memory)."""

_REDUCERS = {Add: np.sum, Mul: np.prod, Max: np.max, Min: np.min}
_COMBINE = {Add: np.add, Mul: np.multiply, Max: np.maximum, Min: np.minimum}


class NotWholeArray(Exception):
    """The statement cannot be evaluated as whole arrays; run it as loops."""


@dataclasses.dataclass(frozen=True)
class WholeArrayBlock:
    """A block found to be whole-array evaluable (see the module docstring)."""

    realize: BlockRealize
    reduce_op: type | None  # Add/Mul/Max/Min for a reduction, None for a spatial block
    update: PrimExpr | None  # the f(...) of a reduction


def analyze(stmt: Stmt) -> WholeArrayBlock:
    """Check that ``stmt`` is a perfect nest around a simple block, else raise ``NotWholeArray``."""
    loops: list[For] = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, BlockRealize) or not is_true(stmt.predicate):
        raise NotWholeArray("not a perfect loop nest around one block")
    block = stmt.block
    if block.alloc_buffers or not isinstance(block.body, BufferStore):
        raise NotWholeArray("block body is not a single store")
    if block.init is not None and not isinstance(block.init, BufferStore):
        raise NotWholeArray("block init is not a single store")
    loop_by_var = {loop.loop_var: loop for loop in loops}
    bound = [value for value in stmt.iter_values if isinstance(value, Var)]
    if (
        len(bound) != len(stmt.iter_values)
        or len(set(bound)) != len(bound)
        or set(bound) != set(loop_by_var)
    ):
        raise NotWholeArray("iteration variables are not bound one-to-one to the loops")
    for iter_var, value in zip(block.iter_vars, stmt.iter_values, strict=True):
        loop = loop_by_var[value]
        if not (
            loop.min == iter_var.dom.min
            and loop.extent == iter_var.dom.extent
            and isinstance(loop.min, IntImm)
            and isinstance(loop.extent, IntImm)
        ):
            raise NotWholeArray(
                f"loop {loop.loop_var.name} does not span {iter_var.var.name}'s domain"
            )
    store = block.body
    reduce_vars = {iv.var for iv in block.iter_vars if iv.kind is IterKind.REDUCE}
    if not reduce_vars:
        _check_reads(store.value, store)
        if block.init is not None:
            raise NotWholeArray("init in a block without reduce variables")
        return WholeArrayBlock(stmt, None, None)
    reduce_op, update = _reduction(store)
    if _uses(store.indices, reduce_vars):
        raise NotWholeArray("the reduction's output index depends on a reduce variable")
    if _loads_of(update, store.buffer):
        raise NotWholeArray("the reduced expression reads the output buffer")
    init = block.init
    if init is not None:
        if init.buffer != store.buffer or init.indices != store.indices:
            raise NotWholeArray("init writes elsewhere than the update")
        if _uses((init.value,), reduce_vars) or _loads_of(init.value, store.buffer):
            raise NotWholeArray("init value depends on reduce variables or the output")
    return WholeArrayBlock(stmt, reduce_op, update)


def _reduction(store: BufferStore) -> tuple[type, PrimExpr]:
    value = store.value
    own = BufferLoad(store.buffer, store.indices)
    if type(value) in _REDUCERS:
        if value.a == own:
            return type(value), value.b
        if value.b == own:
            return type(value), value.a
    raise NotWholeArray("the update is not X[s] = X[s] (+ | * | max | min) f(...)")


def _uses(exprs, variables) -> bool:
    return any(collect(e, lambda n: isinstance(n, Var) and n in variables) for e in exprs)


def _loads_of(expr: PrimExpr, buffer: Buffer) -> list:
    return collect(expr, lambda n: isinstance(n, BufferLoad) and n.buffer == buffer)


def _check_reads(value: PrimExpr, store: BufferStore):
    for load in _loads_of(value, store.buffer):
        if load.indices != store.indices:
            raise NotWholeArray("the block reads the buffer it writes at another point")


# -- evaluation ---------------------------------------------------------------------------


def run(plan: WholeArrayBlock, arrays: dict[str, np.ndarray]) -> None:
    """Evaluate ``plan`` in place on ``arrays`` (buffer name -> array)."""
    block = plan.realize.block
    axes = len(block.iter_vars)
    ranges = [(iv.dom.min.value, iv.dom.extent.value) for iv in block.iter_vars]
    spatial = [a for a, iv in enumerate(block.iter_vars) if iv.kind is not IterKind.REDUCE]
    reduce_axes = tuple(a for a in range(axes) if a not in spatial)
    chunks = list(_chunks(ranges, spatial))
    store = block.body
    target = arrays[store.buffer.name]
    _check_injective(block, store, ranges, chunks, target)
    with np.errstate(all="ignore"):
        for chunk in chunks:
            env = {
                iv.var: _axis(start, length, a, axes)
                for a, (iv, (start, length)) in enumerate(zip(block.iter_vars, chunk, strict=True))
            }
            evaluator = _Evaluator(env, arrays)
            if plan.reduce_op is None:
                shape = tuple(length for _, length in chunk)
                index = evaluator.indices(store.indices, shape, store.buffer)
                _put(target, index, np.broadcast_to(evaluator(store.value), shape))
                continue
            shape = tuple(1 if a in reduce_axes else length for a, (_, length) in enumerate(chunk))
            full_shape = tuple(length for _, length in chunk)
            index = evaluator.indices(store.indices, shape, store.buffer)
            if block.init is not None:
                _put(target, index, np.broadcast_to(evaluator(block.init.value), shape))
            update = np.broadcast_to(evaluator(plan.update), full_shape)
            reduced = _REDUCERS[plan.reduce_op](update, axis=reduce_axes, keepdims=True)
            _put(target, index, _COMBINE[plan.reduce_op](target[index], reduced))


def _put(target: np.ndarray, index: tuple, values: np.ndarray) -> None:
    """``target[index] = values``; a 0-d target (``index == ()``) takes the one value."""
    if not index:
        target[()] = np.asarray(values).reshape(())
    else:
        target[index] = values


def _axis(start: int, length: int, axis: int, axes: int) -> np.ndarray:
    shape = [1] * axes
    shape[axis] = length
    return np.arange(start, start + length, dtype=np.int64).reshape(shape)


def _chunks(ranges, spatial):
    """Split the iteration domain along the first spatial axis into bounded pieces."""
    total = math.prod(length for _, length in ranges)
    if total <= CHUNK_ELEMENTS or not spatial:
        yield ranges
        return
    axis = spatial[0]
    start, length = ranges[axis]
    per_row = max(1, total // length)
    step = max(1, CHUNK_ELEMENTS // per_row)
    for offset in range(0, length, step):
        piece = list(ranges)
        piece[axis] = (start + offset, min(step, length - offset))
        yield piece


def _check_injective(block, store, ranges, chunks, target):
    """Raise NotWholeArray (before any write) if the store hits an element twice."""
    spatial_only = []
    for chunk in chunks:
        spatial_only.append(
            [
                (s, n) if iv.kind is not IterKind.REDUCE else (iv.dom.min.value, 1)
                for iv, (s, n) in zip(block.iter_vars, chunk, strict=True)
            ]
        )
    seen = np.zeros(target.size, dtype=bool)
    axes = len(block.iter_vars)
    for chunk in spatial_only:
        env = {
            iv.var: _axis(s, n, a, axes)
            for a, (iv, (s, n)) in enumerate(zip(block.iter_vars, chunk, strict=True))
        }
        shape = tuple(n for _, n in chunk)
        index = _Evaluator(env, {}).indices(store.indices, shape, store.buffer)
        if not index and math.prod(shape) > 1:
            raise NotWholeArray(f"block {block.name!r} writes 0-d {store.buffer.name} repeatedly")
        flat = np.ravel_multi_index(index, target.shape).ravel() if index else np.zeros(1, np.int64)
        if len(np.unique(flat)) != flat.size or seen[flat].any():
            raise NotWholeArray(
                f"block {block.name!r} writes some element of {store.buffer.name} twice"
            )
        seen[flat] = True


class _Evaluator:
    """Evaluate an expression over the iteration domain with numpy broadcasting."""

    def __init__(self, env: dict[Var, np.ndarray], arrays: dict[str, np.ndarray]):
        self.env = env
        self.arrays = arrays
        self.guarded = 0  # inside a Select branch: out-of-range loads are clipped, not errors

    def __call__(self, expr: PrimExpr):
        method = getattr(self, "_" + type(expr).__name__, None)
        if method is None:
            op = OPERATORS.get(type(expr))
            if op is None or op.numpy is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute "
                                     f"'_{type(expr).__name__}'")
            return op.numpy(self(expr.a), self(expr.b))  # the binary operators, elementwise
        return method(expr)

    def indices(self, exprs, shape, buffer: Buffer) -> tuple:
        """Index arrays of ``exprs`` broadcast to ``shape``, checked against ``buffer``."""
        result = []
        for dim, expr in enumerate(exprs):
            value = np.broadcast_to(np.asarray(self(expr), dtype=np.int64), shape)
            extent = buffer.shape[dim]
            if value.size and (value.min() < 0 or value.max() >= extent):
                raise IndexError(
                    f"index {dim} of {buffer.name} leaves [0, {extent}): values from "
                    f"{value.min()} to {value.max()}"
                )
            result.append(value)
        return tuple(result)

    def _Var(self, expr: Var):
        return self.env[expr]

    def _IntImm(self, expr: IntImm):
        return np.bool_(expr.value) if expr.dtype == "bool" else expr.value

    def _FloatImm(self, expr: FloatImm):
        return np.dtype(expr.dtype).type(expr.value)

    def _Cast(self, expr: Cast):
        return np.asarray(self(expr.value)).astype(expr.dtype)

    def _Not(self, e):
        return np.logical_not(self(e.a))

    def _Div(self, e):
        a, b = self(e.a), self(e.b)
        if is_float(e.dtype):
            return np.true_divide(a, b)
        quotient = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) >= 0) == (np.asarray(b) >= 0), quotient, -quotient)

    def _Select(self, e):
        condition = self(e.condition)
        self.guarded += 1
        try:
            return np.where(condition, self(e.true_value), self(e.false_value))
        finally:
            self.guarded -= 1

    def _BufferLoad(self, e: BufferLoad):
        array = self.arrays[e.buffer.name]
        index = []
        for dim, expr in enumerate(e.indices):
            value = np.asarray(self(expr), dtype=np.int64)
            extent = e.buffer.shape[dim]
            if self.guarded:
                value = np.clip(value, 0, extent - 1)  # the Select discards these lanes
            elif value.size and (value.min() < 0 or value.max() >= extent):
                raise IndexError(
                    f"load {e.buffer.name}[...] index {dim} leaves [0, {extent}): values from "
                    f"{value.min()} to {value.max()}"
                )
            index.append(value)
        return array[tuple(index)]

    def _Call(self, e: Call):
        args = [self(arg) for arg in e.args]
        dtype = np.dtype(e.dtype)
        one = dtype.type(1)
        op = e.op
        if op in ("exp", "log", "sqrt", "tanh", "abs", "sin", "cos"):
            result = getattr(np, op)(args[0])
        elif op == "rsqrt":
            result = one / np.sqrt(args[0])
        elif op == "sigmoid":
            result = one / (one + np.exp(-np.asarray(args[0])))
        elif op == "erf":
            result = np.vectorize(math.erf, otypes=[np.float64])(args[0])
        elif op == "pow":
            result = np.power(args[0], args[1])
        else:
            raise NotImplementedError(f"no numpy evaluation for intrinsic {op!r}")
        return np.asarray(result).astype(dtype, copy=False)
