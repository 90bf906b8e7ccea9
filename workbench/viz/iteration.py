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
    BufferLoad,
    Cast,
    IntImm,
    Not,
    PrimExpr,
    Select,
    Var,
)
from workbench.ir.function import PrimFunc
from workbench.ir.functor import IRVisitor
from workbench.ir.operators import COMPARISONS, OPERATORS
from workbench.ir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, SeqStmt, Stmt

MAX_ITERATIONS = 1 << 22
"""Most iterations enumerated at once; beyond, fix loops (``fixed=``/``tile=``)."""



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
    op = OPERATORS.get(type(expr))
    if op is not None and op.numpy is not None:
        # comparisons as Python's operators (a Python bool for two numbers), the rest elementwise
        compute = op.python if type(expr) in COMPARISONS else op.numpy
        return compute(evaluate_index(expr.a, env), evaluate_index(expr.b, env))
    if isinstance(expr, Not):
        return np.logical_not(evaluate_index(expr.a, env))
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
    positions: tuple = ()  # each node's place among its siblings (program order)

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def loops(self) -> list[For]:
        return [node for node in self.path if isinstance(node, For)]


def block_paths(func: PrimFunc) -> list[BlockPath]:
    """Every block but the root, in program order, with its enclosing loops and blocks."""
    out: list[BlockPath] = []

    def walk(stmt: Stmt | None, path: tuple, positions: tuple, position: int) -> None:
        if stmt is None:
            return
        if isinstance(stmt, SeqStmt):
            for index, s in enumerate(stmt.stmts):
                walk(s, path, positions, position * 1024 + index)
        elif isinstance(stmt, IfThenElse):
            walk(stmt.then_case, path, positions, position * 2)
            walk(stmt.else_case, path, positions, position * 2 + 1)
        elif isinstance(stmt, For):
            walk(stmt.body, path + (stmt,), positions + (position,), 0)
        elif isinstance(stmt, BlockRealize):
            here, at = path + (stmt,), positions + (position,)
            out.append(BlockPath(stmt, here, at))
            walk(stmt.block.init, here, at, 0)
            walk(stmt.block.body, here, at, 1)

    walk(func.root_block.body, (), (), 0)
    return out


def order_keys(path: BlockPath, env: dict, count: int) -> list[np.ndarray]:
    """Columns whose lexicographic order is the execution order of the iterations of
    ``path`` among those of every other block (sibling position, then loop value, per
    level); shorter key lists are padded with zeros (``pad_keys``)."""
    columns = []
    for node, position in zip(path.path, path.positions, strict=True):
        columns.append(np.full(count, position, dtype=np.int64))
        if isinstance(node, For):
            columns.append(np.broadcast_to(env[node.loop_var], (count,)).astype(np.int64))
    return columns


def pad_keys(keys: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Several enumerations' key columns, padded to one width and concatenated."""
    width = max((len(k) for k in keys), default=0)
    sizes = [k[0].size if k else 0 for k in keys]
    return [np.concatenate([k[level] if level < len(k) else np.zeros(size, np.int64)
                            for k, size in zip(keys, sizes, strict=True)])
            for level in range(width)]


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


def loop_dependencies(path: BlockPath, exprs) -> set[str]:
    """Names of the loops of ``path`` whose values the expressions (over the block's
    iteration variables) depend on, through the iteration values of the blocks, the blocks'
    predicates and the loops' lower bounds."""
    from workbench.ir.functor import expr_vars as variables

    needed: set = set()
    for expr in exprs:
        needed |= variables(expr)
    for node in reversed(path.path):
        if isinstance(node, For):
            if node.loop_var in needed:
                needed |= variables(node.min)
        else:
            needed |= variables(node.predicate)
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
                if iv.var in needed:
                    needed |= variables(value)
    return {loop.loop_var.name for loop in path.loops if loop.loop_var in needed}


@dataclass
class Enumeration:
    """Some iterations of a block, in execution order.

    Attributes
    ----------
    env : dict
        Variable -> array of its value at each enumerated iteration.
    mask : ndarray of bool
        Where the blocks' predicates hold.
    number : ndarray of int64
        Each iteration's number among all the varying iterations (C order over the
        varying loops, so increasing along the arrays).
    """

    env: dict
    mask: np.ndarray
    number: np.ndarray

    @property
    def size(self) -> int:
        return self.mask.size


def enumerate_block(path: BlockPath, pinned: dict, limit: int = MAX_ITERATIONS,
                    needed: set[str] | None = None) -> Enumeration:
    """Enumerate the varying iterations of a block (loops not in ``pinned``).

    Loops that vary but are not in ``needed`` (when given) stay at their first value: an
    access that does not depend on them touches the same elements at every value, first at
    the first one, so its first-touch numbers and element set are exact.

    Raises
    ------
    TooManyIterationsError
        When more than ``limit`` iterations would be enumerated.
    """
    varying = [loop for loop in path.loops if loop.loop_var.name not in pinned]
    extents = {loop: _constant(loop.extent, f"the extent of loop {loop.loop_var.name}")
               for loop in varying}
    strides, stride = {}, 1
    for loop in reversed(varying):
        strides[loop] = stride
        stride *= extents[loop]
    listed = [loop for loop in varying if needed is None or loop.loop_var.name in needed]
    count = math.prod(extents[loop] for loop in listed)
    if count > limit:
        names = ", ".join(loop.loop_var.name for loop in listed)
        raise TooManyIterationsError(
            f"{count} iterations of block {path.block.name!r} vary (loops {names}); "
            f"fix some with fixed={{name: value}} or tile=<loop name> (limit {limit})")
    grids = np.meshgrid(*[np.arange(extents[loop], dtype=np.int64) for loop in listed],
                        indexing="ij")
    offsets = {loop: grid.reshape(-1) for loop, grid in zip(listed, grids, strict=True)}
    number = np.zeros(count, dtype=np.int64)
    for loop, offset in offsets.items():
        number += offset * strides[loop]
    env: dict = {}
    mask = np.ones(count, dtype=bool)
    for node in path.path:
        if isinstance(node, For):
            start = evaluate_index(node.min, env)
            value = pinned.get(node.loop_var.name)
            if node in offsets:
                env[node.loop_var] = start + offsets[node]
            elif value is not None:
                env[node.loop_var] = np.full(count, value, dtype=np.int64)
            else:
                env[node.loop_var] = np.broadcast_to(np.asarray(start, np.int64), (count,))
        else:
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
                env[iv.var] = np.broadcast_to(evaluate_index(value, env), (count,))
            mask &= np.broadcast_to(np.asarray(evaluate_index(node.predicate, env), bool),
                                    (count,))
    return Enumeration(env, mask, number)


def access_elements(buffer: Buffer, indices: tuple[PrimExpr, ...], run: Enumeration):
    """``(flat element index, position in run)`` of one access over the iterations of
    ``run`` whose predicates hold; out-of-bounds indices are dropped."""
    coords = [np.broadcast_to(np.asarray(evaluate_index(ix, run.env), np.int64), (run.size,))
              for ix in indices]
    inside = run.mask.copy()
    for coord, size in zip(coords, buffer.shape, strict=True):
        inside &= (coord >= 0) & (coord < size)
    positions = np.flatnonzero(inside)
    if buffer.shape:
        flat = np.ravel_multi_index([c[positions] for c in coords], buffer.shape)
    else:
        flat = np.zeros(positions.size, dtype=np.int64)
    return flat, positions


def dense_ranks(columns: list[np.ndarray]) -> np.ndarray:
    """The rank of each row (0, 1, ... with equal rows sharing a rank) in lexicographic
    order of the key ``columns``."""
    if not columns or columns[0].size == 0:
        return np.zeros(columns[0].size if columns else 0, np.int64)
    order = np.lexsort(columns[::-1])
    new = np.zeros(order.size, dtype=bool)
    new[0] = True
    for column in columns:
        sorted_column = column[order]
        new[1:] |= sorted_column[1:] != sorted_column[:-1]
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.cumsum(new) - 1
    return ranks
