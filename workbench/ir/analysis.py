"""Analyses of a PrimFunc: its blocks, work (flops), compulsory traffic (bytes), dataflow.

The counting rules, in one place:

* **Executions of a block.** A block runs once per iteration of the loops around it:
  the product of the trip counts of every enclosing ``For`` (through parent blocks too).
  When its ``BlockRealize`` has a predicate (a split that does not divide its loop), the
  predicate only cuts the iterations that fall outside the block's domain, so the count
  is ``min(loop trips, product of the block's iter var extents)``. For an unscheduled
  function the loop trips and the domain product agree; scheduling that does not change
  the work (split, fuse, reorder, ...) does not change the count.
* **flops.** Each ``BufferStore`` in a block's body (``init`` excluded) costs the number
  of arithmetic operations in its stored value: ``+ - * / // % min max``, comparisons and
  intrinsic calls count 1 each when they compute on values (float, or involving a loaded
  element); loads, casts, selects, logic and index arithmetic (on iteration variables
  and constants only, inside indices or in a padding block's bounds test) are free.
  ``flops = sum(ops per execution * executions)``; matmul is ``2*M*N*K``.
* **min_bytes.** The compulsory traffic of one call: every parameter the function reads
  is read once, every parameter it writes is written once. A parameter that is both read
  and written (``C`` in a matmul with ``T.init``) counts once when its first access is a
  write covering the whole buffer (the init overwrites it, so its old contents are never
  needed), and twice (read + write) otherwise (an in-place update ``C += ...``).
  Intermediate buffers (``alloc_buffers``) are not compulsory traffic and cost nothing.

Producers and consumers are not here: they are the dependence edges of a block scope
(``workbench.ir.dependence.BlockScope``: ``scope_of(func, block).producers(block)``, or
``Schedule.get_producers`` / ``get_consumers``), TVM's program-order rule in one place.

Example
-------
>>> from workbench import ops
>>> f = ops.matmul(64, 64, 64)
>>> flops(f), min_bytes(f), arithmetic_intensity(f)
(524288, 49152, 10.666666666666666)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.ir.arith import int_bounds, simplify
from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
    is_float,
)
from workbench.ir.function import PrimFunc
from workbench.ir.functor import collect
from workbench.ir.stmt import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    For,
    IfThenElse,
    SeqStmt,
    Stmt,
)

Regions = tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]


class BlockNotFoundError(KeyError):
    """``get_block`` was asked for a block name the function does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class BlockInfo:
    """A block with its place in the function.

    Attributes
    ----------
    block:
        The block.
    realize:
        The ``BlockRealize`` that binds it.
    loops:
        Every ``For`` around it, outermost first (through parent blocks too).
    executions:
        How many times the block runs in one call of the function (see the module doc).
    """

    block: Block
    realize: BlockRealize
    loops: tuple[For, ...]
    executions: int


# --------------------------------------------------------------------------- blocks


def block_infos(func: PrimFunc) -> list[BlockInfo]:
    """Every block except the root, in walk order, with its loops and execution count.

    Example
    -------
    >>> from workbench import ops
    >>> [(info.block.name, info.executions) for info in block_infos(ops.matmul(16, 16, 16))]
    [('C', 4096)]
    """
    infos: list[BlockInfo] = []
    _walk_blocks(func.root_block.body, loops=(), outer_executions=1, trips=1, infos=infos,
                 ranges={})
    return infos


def find_blocks(func: PrimFunc) -> list[Block]:
    """All blocks of ``func`` in walk order, the root block excluded.

    Example
    -------
    >>> from workbench import ops
    >>> [b.name for b in find_blocks(ops.softmax(4, 8))]
    ['T_softmax_maxelem', 'T_softmax_expsum', 'T_softmax_norm']
    """
    return [info.block for info in block_infos(func)]


def get_block(func: PrimFunc, name: str) -> Block:
    """The block of ``func`` called ``name``.

    Raises
    ------
    BlockNotFoundError
        When there is no such block; the message lists the blocks there are.

    Example
    -------
    >>> from workbench import ops
    >>> get_block(ops.matmul(16, 16, 16), "C").iter_vars[2].kind
    <IterKind.REDUCE: 'R'>
    """
    blocks = find_blocks(func)
    for block in blocks:
        if block.name == name:
            return block
    names = ", ".join(repr(b.name) for b in blocks) or "none"
    raise BlockNotFoundError(f"{func.name} has no block named {name!r} (its blocks: {names})")


def _trip_count(loop: For, ranges: dict[Var, tuple[int, int]]) -> int:
    """Constant trip count of ``loop``; a variable extent counts its largest value."""
    if isinstance(loop.extent, IntImm):
        return max(loop.extent.value, 0)
    _, hi = int_bounds(loop.extent, ranges)
    if hi is None:
        raise ValueError(
            f"loop {loop.loop_var.name!r} has extent {loop.extent!r} with no known upper bound"
        )
    return max(hi, 0)


def _domain_size(block: Block) -> int | None:
    sizes = [iv.dom.extent.value if isinstance(iv.dom.extent, IntImm) else None
             for iv in block.iter_vars]
    return None if None in sizes else math.prod(sizes)


def _walk_blocks(stmt: Stmt, loops: tuple[For, ...], outer_executions: int, trips: int,
                 infos: list[BlockInfo], ranges: dict) -> None:
    """Collect BlockInfos under ``stmt``; ``trips`` counts loops since the enclosing block."""
    if isinstance(stmt, For):
        count = _trip_count(stmt, ranges)
        inner_ranges = dict(ranges)
        if isinstance(stmt.min, IntImm) and count > 0:
            inner_ranges[stmt.loop_var] = (stmt.min.value, stmt.min.value + count - 1)
        _walk_blocks(stmt.body, loops + (stmt,), outer_executions, trips * count, infos,
                     inner_ranges)
    elif isinstance(stmt, BlockRealize):
        block = stmt.block
        per_outer = trips
        domain = _domain_size(block)
        if not _is_true(stmt.predicate) and domain is not None:
            per_outer = min(trips, domain)
        executions = outer_executions * per_outer
        infos.append(BlockInfo(block, stmt, loops, executions))
        for part in (block.init, block.body):
            if part is not None:
                _walk_blocks(part, loops, executions, 1, infos, ranges)
    elif isinstance(stmt, SeqStmt):
        for sub in stmt.stmts:
            _walk_blocks(sub, loops, outer_executions, trips, infos, ranges)
    elif isinstance(stmt, IfThenElse):
        for sub in (stmt.then_case, stmt.else_case):
            if sub is not None:
                _walk_blocks(sub, loops, outer_executions, trips, infos, ranges)


def _is_true(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value != 0


# --------------------------------------------------------------------------- flops


def expr_ops(expr: PrimExpr) -> int:
    """Arithmetic operations on values in ``expr``.

    ``+ - * / // % min max``, comparisons and intrinsic calls count 1 each when they
    compute on values: a float operand, or an operand that involves a loaded element.
    Arithmetic on iteration variables and constants alone (index arithmetic, such as the
    bounds test of a padding block), loads and their indices, casts, selects and logic
    (``and``/``or``/``not``) are free.

    Example
    -------
    >>> from workbench.ir import Buffer, BufferLoad, Var
    >>> A, i = Buffer("A", (8,)), Var("i")
    >>> expr_ops(BufferLoad(A, (i + 1,)) * BufferLoad(A, (i,)) + BufferLoad(A, (i * 2,)))
    2
    """
    if isinstance(expr, BufferLoad):
        return 0
    if isinstance(expr, (And, Or)):
        return expr_ops(expr.a) + expr_ops(expr.b)
    if isinstance(expr, BinaryOp):
        own = 1 if _is_value(expr.a) or _is_value(expr.b) else 0
        return own + expr_ops(expr.a) + expr_ops(expr.b)
    if isinstance(expr, Call):
        return 1 + sum(expr_ops(arg) for arg in expr.args)
    if isinstance(expr, Cast):
        return expr_ops(expr.value)
    if isinstance(expr, Not):
        return expr_ops(expr.a)
    if isinstance(expr, Select):
        return expr_ops(expr.condition) + expr_ops(expr.true_value) + expr_ops(expr.false_value)
    return 0


def _is_value(expr: PrimExpr) -> bool:
    """A float expression, or one that involves a loaded element (not index arithmetic)."""
    if is_float(expr.dtype):
        return True
    return bool(collect(expr, lambda node: isinstance(node, (BufferLoad, Call))))


def _stmt_ops(stmt: Stmt | None, ranges: dict) -> int:
    """Operations of one execution of a block body; nested blocks are counted on their own."""
    if stmt is None or isinstance(stmt, BlockRealize):
        return 0
    if isinstance(stmt, BufferStore):
        return expr_ops(stmt.value)
    if isinstance(stmt, For):
        return _trip_count(stmt, ranges) * _stmt_ops(stmt.body, ranges)
    if isinstance(stmt, SeqStmt):
        return sum(_stmt_ops(sub, ranges) for sub in stmt.stmts)
    if isinstance(stmt, IfThenElse):
        return max(_stmt_ops(stmt.then_case, ranges), _stmt_ops(stmt.else_case, ranges))
    return 0  # Evaluate: no store


def block_flops(func: PrimFunc) -> dict[str, int]:
    """Floating-point operations of one call, per block name (see ``flops``).

    Example
    -------
    >>> from workbench import ops
    >>> block_flops(ops.matmul_bias_relu(8, 8, 8))
    {'matmul': 1024, 'T_add': 64, 'T_relu': 64}
    """
    result: dict[str, int] = {}
    for info in block_infos(func):
        ops = _stmt_ops(info.block.body, {})
        result[info.block.name] = result.get(info.block.name, 0) + ops * info.executions
    return result


def flops(func: PrimFunc) -> int:
    """Floating-point operations of one call of ``func``.

    Each block contributes (operations in the values it stores) x (times it executes);
    ``init`` is not counted. Scheduling that keeps the work (split, reorder, fuse,
    parallel...) keeps the count. See the module docstring for the exact rules.

    Example
    -------
    >>> from workbench import ops
    >>> flops(ops.matmul(M=32, N=16, K=8)) == 2 * 32 * 16 * 8
    True
    """
    return sum(block_flops(func).values())


# --------------------------------------------------------------------------- bytes


def _accesses(stmt: Stmt | None, out: list[tuple[str, Buffer, Block | None]],
              block: Block | None) -> None:
    """Append ``(kind, buffer, block)`` for every access under ``stmt``, in program order.

    A block's init runs before its body; a store's value is read before it is written.
    """
    if stmt is None:
        return
    if isinstance(stmt, BlockRealize):
        _accesses(stmt.block.init, out, stmt.block)
        _accesses(stmt.block.body, out, stmt.block)
    elif isinstance(stmt, BufferStore):
        for load in _loads(stmt.value):
            out.append(("read", load.buffer, block))
        out.append(("write", stmt.buffer, block))
    elif isinstance(stmt, For):
        _accesses(stmt.body, out, block)
    elif isinstance(stmt, SeqStmt):
        for sub in stmt.stmts:
            _accesses(sub, out, block)
    elif isinstance(stmt, IfThenElse):
        for load in _loads(stmt.condition):
            out.append(("read", load.buffer, block))
        _accesses(stmt.then_case, out, block)
        _accesses(stmt.else_case, out, block)


def _loads(expr: PrimExpr) -> list[BufferLoad]:
    return collect(expr, lambda node: isinstance(node, BufferLoad))


def _writes_whole_buffer(block: Block | None, buffer: Buffer) -> bool:
    """Whether ``block`` (over its whole domain) writes every index range of ``buffer``."""
    if block is None:
        return False
    ranges = {}
    for iv in block.iter_vars:
        if not (isinstance(iv.dom.min, IntImm) and isinstance(iv.dom.extent, IntImm)):
            return False
        ranges[iv.var] = (iv.dom.min.value, iv.dom.min.value + iv.dom.extent.value - 1)
    for region in block.writes:
        if region.buffer != buffer:
            continue
        for dim, rng in zip(buffer.shape, region.region, strict=True):
            lo, _ = int_bounds(rng.min, ranges)
            _, hi = int_bounds(simplify(rng.min + rng.extent - 1), ranges)
            if lo is None or hi is None or lo > 0 or hi < dim - 1:
                return False
        return True
    return False


def param_traffic(func: PrimFunc) -> dict[str, int]:
    """Compulsory bytes moved for each parameter of ``func`` (see ``min_bytes``).

    Example
    -------
    >>> from workbench import ops
    >>> param_traffic(ops.matmul(16, 16, 16))
    {'A': 1024, 'B': 1024, 'C': 1024}
    """
    events: list[tuple[str, Buffer, Block | None]] = []
    _accesses(func.root_block.body, events, None)
    traffic = {}
    for param in func.params:
        kinds = [(kind, block) for kind, buffer, block in events if buffer == param]
        read = any(kind == "read" for kind, _ in kinds)
        written = any(kind == "write" for kind, _ in kinds)
        if not read and not written:
            traffic[param.name] = 0
        elif read and written:
            first_kind, first_block = kinds[0]
            overwritten = first_kind == "write" and _writes_whole_buffer(first_block, param)
            traffic[param.name] = param.nbytes if overwritten else 2 * param.nbytes
        else:
            traffic[param.name] = param.nbytes
    return traffic


def min_bytes(func: PrimFunc) -> int:
    """Compulsory memory traffic of one call of ``func``, in bytes.

    Inputs are read once, outputs written once; a parameter read and written counts once
    when its first access is a whole-buffer write (``T.init``), else twice. Intermediates
    are free. See the module docstring.

    Example
    -------
    >>> from workbench import ops
    >>> min_bytes(ops.matmul(M=32, N=16, K=8)) == 4 * (32 * 8 + 8 * 16 + 32 * 16)
    True
    """
    return sum(param_traffic(func).values())


def arithmetic_intensity(func: PrimFunc) -> float:
    """``flops(func) / min_bytes(func)``: operations per byte of compulsory traffic.

    Example
    -------
    >>> from workbench import ops
    >>> arithmetic_intensity(ops.matmul(64, 64, 64))   # 2*64**3 / (3 * 64*64*4)
    10.666666666666666
    """
    nbytes = min_bytes(func)
    if nbytes == 0:
        raise ValueError(f"{func.name} moves no parameter bytes: arithmetic intensity is undefined")
    return flops(func) / nbytes


# --------------------------------------------------------------------------- dataflow


def block_regions(func: PrimFunc) -> dict[str, Regions]:
    """``{block name: (reads, writes)}`` from the blocks' declared regions, in walk order.

    Example
    -------
    >>> from workbench import ops
    >>> reads, writes = block_regions(ops.matmul(16, 16, 16))["C"]
    >>> [r.buffer.name for r in reads], [w.buffer.name for w in writes]
    (['C', 'A', 'B'], ['C'])
    """
    return {block.name: (block.reads, block.writes) for block in find_blocks(func)}
