"""Padding for ``transform_layout(..., pad_value=)``: which new positions hold no element,
and the block that fills them.

A map that splits an index with ``i // c`` and ``i % c`` where ``c`` does not divide the
extent sends the buffer onto a larger shape: ``lambda i: (i // 4, i % 4)`` puts 14 elements
into (4, 4), and positions ``(3, 2)`` and ``(3, 3)`` are padding. Inverting the split
(``i = p0 * 4 + p1``) tells them apart: a position is padding when some inverted index is
past its extent (TVM computes the same inverse with its iter-map analysis).

Before (``transform_layout(func, "B", "B", lambda i: (i // 4, i % 4), pad_value=0.0)``)::

    for i in T.serial(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] * T.float32(2)

After::

    for ax0, ax1 in T.grid(4, 4):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.where(14 <= ax0 * 4 + ax1)
            B[v0, v1] = T.float32(0)
    for i in T.serial(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi // 4, vi % 4] = A[vi] * T.float32(2)
"""

from __future__ import annotations

from workbench.ir import (
    GE,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    Or,
    PrimExpr,
    PrimFunc,
    Range,
    SeqStmt,
    Stmt,
    Var,
    const_value,
    seq,
    substitute,
)
from workbench.ir.arith import simplify
from workbench.schedule.errors_layout import PaddingNotInvertibleError
from workbench.schedule.layout_index_map import IndexMap
from workbench.schedule.tree import block_names, fresh_name, used_names, walk


def _inverse(imap: IndexMap, positions: list[Var]) -> list[PrimExpr] | None:
    """Each old index as an expression of the new positions, or None where the map is not
    made of whole indices and ``i // c`` / ``i % c`` pairs; the first failing index name
    is returned instead of raising so the caller can name it."""
    inverse = []
    for param in imap.params:
        whole = div = mod = None
        for position, result in zip(positions, imap.results, strict=True):
            if result == param:
                whole = position
            elif isinstance(result, FloorDiv) and result.a == param:
                div = (position, const_value(result.b))
            elif isinstance(result, FloorMod) and result.a == param:
                mod = (position, const_value(result.b))
        if whole is not None:
            inverse.append(whole)
        elif div is not None and mod is not None and div[1] == mod[1] and isinstance(div[1], int):
            inverse.append(div[0] * IntImm(div[1]) + mod[0])
        else:
            inverse.append(param.name)
    return inverse


def padding_predicate(
    primitive: str, func: PrimFunc, block: Block, buffer: Buffer, imap: IndexMap, shape
) -> tuple[list[Var], PrimExpr]:
    """``(position vars, condition)``: the condition holds exactly at padding positions."""
    positions = [Var(f"p{d}") for d in range(len(shape))]
    inverse = _inverse(imap, positions)
    for item in inverse:
        if isinstance(item, str):
            raise PaddingNotInvertibleError(primitive, block, buffer, imap.text(), item, func)
    ranges = {p: (0, size - 1) for p, size in zip(positions, shape, strict=True)}
    condition: PrimExpr | None = None
    for index, extent in zip(inverse, buffer.shape, strict=True):
        past = simplify(GE(index, IntImm(extent)), ranges)
        if const_value(past) == 0:
            continue
        condition = past if condition is None else Or(condition, past)
    assert condition is not None, "padded shape without a padding position"
    return positions, condition


def fill_padding(
    func: PrimFunc, buffer: Buffer, is_padding: tuple[list[Var], PrimExpr], value: PrimExpr
) -> PrimFunc:
    """``func`` with a block writing ``value`` at the padding positions of ``buffer``, right
    before the first top-level statement that writes it (unchanged when nothing writes it)."""
    root = func.root_block
    stmts = list(root.body.stmts) if isinstance(root.body, SeqStmt) else [root.body]
    first = next((n for n, stmt in enumerate(stmts) if _writes(stmt, buffer)), None)
    if first is None:
        return func
    taken = used_names(func) | set(block_names(func))
    positions, condition = is_padding
    loop_vars = [Var(fresh_name(f"ax{d}", taken)) for d in range(buffer.ndim)]
    taken.update(v.name for v in loop_vars)
    iter_vars = [Var(fresh_name(f"v{d}", taken)) for d in range(buffer.ndim)]
    name = fresh_name(f"{buffer.name}_pad", taken)
    store = BufferStore(buffer, value, tuple(iter_vars))
    block = Block(
        name,
        tuple(
            IterVar(v, Range(IntImm(0), IntImm(size)), IterKind.SPATIAL)
            for v, size in zip(iter_vars, buffer.shape, strict=True)
        ),
        (),
        (BufferRegion(buffer, tuple(Range(v, IntImm(1)) for v in iter_vars)),),
        store,
    )
    predicate = substitute(condition, dict(zip(positions, loop_vars, strict=True)))
    nest: Stmt = BlockRealize(tuple(loop_vars), predicate, block)
    for var, size in reversed(list(zip(loop_vars, buffer.shape, strict=True))):
        nest = For(var, IntImm(0), IntImm(size), ForKind.SERIAL, nest)
    stmts.insert(first, nest)
    new_root = root.replace(body=seq(*stmts))
    return func.replace(body=func.body.replace(block=new_root))


def _writes(stmt: Stmt, buffer: Buffer) -> bool:
    return any(
        isinstance(node, Block) and any(w.buffer == buffer for w in node.writes)
        for node, _ in walk(stmt)
    )
