"""Enumerate a block's iterations with numpy: the loop values, the block's iteration
variables and the buffer elements each access touches, in execution order.

The shared engine of ``access_map`` and ``tile_footprint``. Loops vary over their whole
range unless *fixed*: ``fixed={"i_0": 2}`` pins loop ``i_0`` to the value 2 and
``tile="j_0"`` pins ``j_0`` and every loop around it to their first value (or the value in
``fixed``), so what varies is one iteration of ``j_0``'s body: one tile. Index expressions
are evaluated on whole arrays (``evaluate_index``), so a tile of a million iterations costs
milliseconds. Conditions inside a block's body (``if``/``Select``) are not evaluated: every
access in it counts (an over-approximation for padding blocks); the block's ``T.where``
predicate is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    Add,
    And,
    BufferLoad,
    Cast,
    CompareOp,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRVisitor
from workbench.ir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, SeqStmt, Stmt

MAX_ITERATIONS = 1 << 22
"""Most iterations enumerated at once; beyond, fix loops (``fixed=``/``tile=``)."""

_NUMPY_BINARY = {Add: np.add, Sub: np.subtract, Mul: np.multiply, FloorDiv: np.floor_divide,
                 FloorMod: np.mod, Min: np.minimum, Max: np.maximum}


class TooManyIterationsError(ValueError):
    """The selected iterations are too many to enumerate; fix some loops."""


def evaluate_index(expr: PrimExpr, env: dict) -> np.ndarray | int:
    """An integer (or boolean) expression evaluated on numpy arrays of variable values.

    Example
    -------
    >>> i = Var("i")
    >>> evaluate_index(i * 4 + 1, {i: np.arange(3)}).tolist()
    [1, 5, 9]
    """
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, Cast):
        return evaluate_index(expr.value, env)
    op = _NUMPY_BINARY.get(type(expr))
    if op is not None:
        return op(evaluate_index(expr.a, env), evaluate_index(expr.b, env))
    if isinstance(expr, And):
        return np.logical_and(evaluate_index(expr.a, env), evaluate_index(expr.b, env))
    if isinstance(expr, Or):
        return np.logical_or(evaluate_index(expr.a, env), evaluate_index(expr.b, env))
    if isinstance(expr, Not):
        return np.logical_not(evaluate_index(expr.a, env))
    if isinstance(expr, CompareOp):
        import operator

        ops = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}
        return ops[expr.symbol](evaluate_index(expr.a, env), evaluate_index(expr.b, env))
    if isinstance(expr, Select):
        return np.where(evaluate_index(expr.condition, env),
                        evaluate_index(expr.true_value, env),
                        evaluate_index(expr.false_value, env))
    raise TypeError(f"cannot evaluate {type(expr).__name__} in an index")


@dataclass(frozen=True)
class BlockPath:
    """A block with the loops and parent blocks around it, outermost first."""

    realize: BlockRealize
    path: tuple  # For and BlockRealize nodes, outermost first (the block's own realize last)

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def loops(self) -> list[For]:
        return [node for node in self.path if isinstance(node, For)]


def block_paths(func: PrimFunc) -> list[BlockPath]:
    """Every block but the root, in program order, with its enclosing loops and blocks."""
    out: list[BlockPath] = []

    def walk(stmt: Stmt | None, path: tuple) -> None:
        if stmt is None:
            return
        if isinstance(stmt, SeqStmt):
            for s in stmt.stmts:
                walk(s, path)
        elif isinstance(stmt, IfThenElse):
            walk(stmt.then_case, path)
            walk(stmt.else_case, path)
        elif isinstance(stmt, For):
            walk(stmt.body, path + (stmt,))
        elif isinstance(stmt, BlockRealize):
            out.append(BlockPath(stmt, path + (stmt,)))
            walk(stmt.block.init, path + (stmt,))
            walk(stmt.block.body, path + (stmt,))

    walk(func.root_block.body, ())
    return out


class _Accesses(IRVisitor):
    """The loads and stores of one buffer in a block (nested blocks excluded)."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer
        self.indices: list[tuple[PrimExpr, ...]] = []

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer == self.buffer:
            self.indices.append(node.indices)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer == self.buffer:
            self.indices.append(node.indices)
        self.generic_visit(node)

    def visit_BlockRealize(self, node):
        return None


def block_accesses(block: Block, buffer: Buffer) -> list[tuple[PrimExpr, ...]]:
    """The index tuples of every load and store of ``buffer`` in ``block`` (init first)."""
    collector = _Accesses(buffer)
    if block.init is not None:
        collector.visit(block.init)
    collector.visit(block.body)
    return collector.indices


def _constant(expr: PrimExpr, what: str) -> int:
    from workbench.ir.arith import simplify

    expr = simplify(expr)
    if not isinstance(expr, IntImm):
        raise ValueError(f"{what} is not a constant ({expr}); it cannot be enumerated")
    return expr.value


def pinned_loops(path: BlockPath, fixed: dict[str, int] | None, tile: str | None) -> dict:
    """Which loops of ``path`` are pinned, and to what value: ``{loop_var_name: value}``.

    ``tile`` pins that loop and every loop around it to its first value unless ``fixed``
    gives one; ``fixed`` pins the loops it names. A ``tile`` loop not around the block
    raises ``KeyError``.
    """
    fixed = dict(fixed or {})
    if tile is None:
        return fixed
    names = [loop.loop_var.name for loop in path.loops]
    if tile not in names:
        raise KeyError(tile)
    pinned = {}
    for loop in path.loops:
        name = loop.loop_var.name
        pinned[name] = fixed.get(name)  # None: its first value
        if name == tile:
            break
    for name, value in fixed.items():
        pinned[name] = value
    return pinned


def enumerate_block(path: BlockPath, pinned: dict, limit: int = MAX_ITERATIONS):
    """The environment (variable -> flat array over the varying iterations, in execution
    order) and the mask of iterations whose block predicates hold.

    Raises
    ------
    TooManyIterationsError
        When more than ``limit`` iterations vary.
    """
    varying = [loop for loop in path.loops if loop.loop_var.name not in pinned]
    extents = [_constant(loop.extent, f"the extent of loop {loop.loop_var.name}")
               for loop in varying]
    count = math.prod(extents)
    if count > limit:
        names = ", ".join(loop.loop_var.name for loop in varying)
        raise TooManyIterationsError(
            f"{count} iterations of block {path.block.name!r} vary (loops {names}); "
            f"fix some with fixed={{name: value}} or tile=<loop name> (limit {limit})")
    grids = np.meshgrid(*[np.arange(e, dtype=np.int64) for e in extents], indexing="ij")
    offsets = {loop: grid.reshape(-1) for loop, grid in zip(varying, grids, strict=True)}
    env: dict = {}
    mask = np.ones(count, dtype=bool)
    for node in path.path:
        if isinstance(node, For):
            start = evaluate_index(node.min, env)
            if node in offsets:
                env[node.loop_var] = start + offsets[node]
            else:
                value = pinned[node.loop_var.name]
                env[node.loop_var] = np.full(count, start if value is None else value,
                                             dtype=np.int64)
        else:
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
                env[iv.var] = np.broadcast_to(evaluate_index(value, env), (count,))
            mask &= np.broadcast_to(np.asarray(evaluate_index(node.predicate, env), bool),
                                    (count,))
    return env, mask


def touched_elements(path: BlockPath, buffer: Buffer, env: dict, mask: np.ndarray):
    """``(flat element index, iteration number)`` arrays of every access of ``buffer``
    by the iterations in ``mask`` (numbered 0, 1, ... in execution order); out-of-bounds
    indices are dropped."""
    order = np.cumsum(mask) - 1
    elements, steps = [], []
    for indices in block_accesses(path.block, buffer):
        coords = [np.broadcast_to(np.asarray(evaluate_index(ix, env), np.int64), mask.shape)
                  for ix in indices]
        inside = mask.copy()
        for coord, size in zip(coords, buffer.shape, strict=True):
            inside &= (coord >= 0) & (coord < size)
        if buffer.shape:
            flat = np.ravel_multi_index([c[inside] for c in coords], buffer.shape)
        else:
            flat = np.zeros(int(inside.sum()), dtype=np.int64)
        elements.append(flat)
        steps.append(order[inside])
    if not elements:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(elements), np.concatenate(steps)
